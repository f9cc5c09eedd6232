// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Memory of host-verbs VMs: one host PD per guest PD, so the host device
 * keeps a QP to the MRs of its own PD as the guest expects; one host MR
 * per guest MR over the MR's guest pages aliased back to back
 * (mr_alias.h), registered at the guest's iova so that the addresses
 * and keys the guest hands its peers are the host MR's. The host device
 * checks bounds and rights on every access.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <glib.h>

#include "hv.h"
#include "log.h"
#include "mr.h"
#include "vm.h"

struct ibv_pd *pvo_hv_pd(struct pvo_vm *vm, struct pvo_pd *pd)
{
	struct pvo_hv_device *d = pvo_hv_dev(vm->cfg->tenant);

	if (pd->engine_part)
		return pd->engine_part;
	pd->engine_part = ibv_alloc_pd(d->ctx);
	if (!pd->engine_part)
		pvo_vm_warn(vm, "hostverbs: %s: ibv_alloc_pd: %s", d->name,
			    g_strerror(errno));
	return pd->engine_part;
}

void pvo_hv_pd_free(struct pvo_pd *pd)
{
	if (!pd->engine_part)
		return;
	ibv_dealloc_pd(pd->engine_part);
	pd->engine_part = NULL;
}

static int ibv_access_of(uint32_t access)
{
	/* PVO_ACCESS_* are the IBV_ACCESS_* bits (pvo-device.h) */
	return (int)(access &
		     (PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
		      PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC));
}

static enum pvo_status status_of_errno(int err)
{
	switch (err) {
	case ENOMEM:
	case ENOSPC:
		return PVO_STATUS_ENOSPC;
	case EFAULT:
		return PVO_STATUS_EFAULT;
	case EOPNOTSUPP:
		return PVO_STATUS_EOPNOTSUPP;
	default:
		return PVO_STATUS_EINVAL;
	}
}

/*
 * What the alias of the MR's pages will take, checked against the VM's
 * bounds and charged (hv_budget.h) before anything is mapped: the runs
 * are counted up to the mappings the VM has left, so the walk, and later
 * the mremap calls of this command, stop at the bound.
 */
static enum pvo_status charge(struct pvo_vm *vm, struct pvo_mr *mr,
			      const uint64_t *pages, uint32_t npages,
			      uint32_t *runs)
{
	struct pvo_hv_use *u = &to_hv_vm(vm)->use;
	uint64_t bytes = (uint64_t)npages * PVO_PAGE_SIZE;
	const struct pvo_quota *q = &vm->cfg->quota;
	uint32_t left = pvo_hv_budget_mappings_left(vm, u);
	char *why = NULL;
	int err;

	/* the cheap bound first: no walk for an MR that cannot fit */
	if (bytes > q->max_pinned - MIN(q->max_pinned, u->pinned))
		return pvo_hv_budget_charge(vm, u, 1, bytes);
	err = pvo_mr_alias_count(vm, pages, npages, left, runs, &why);
	if (err == -ENOSPC)
		return pvo_hv_budget_charge(vm, u, *runs, bytes);
	if (err) {
		pvo_vm_warn(vm,
			    "hostverbs: MR of %" PRIu32 " pages at iova "
			    "0x%" PRIx64 ": %s",
			    npages, mr->iova, why);
		g_free(why);
		return status_of_errno(-err);
	}
	return pvo_hv_budget_charge(vm, u, *runs, bytes);
}

static void uncharge(struct pvo_vm *vm, const struct pvo_hv_mr *h)
{
	pvo_hv_budget_uncharge(&to_hv_vm(vm)->use, h->alias.runs, h->alias.len);
}

static enum pvo_status alias(struct pvo_vm *vm, struct pvo_mr *mr,
			     const uint64_t *pages, uint32_t npages,
			     struct pvo_hv_mr *h)
{
	uint32_t runs = 0;
	enum pvo_status st = charge(vm, mr, pages, npages, &runs);
	char *why = NULL;
	int err;

	if (st)
		return st;
	err = pvo_mr_alias_map(vm, pages, npages, &h->alias, &why);
	if (!err && h->alias.runs == runs)
		return PVO_STATUS_OK;
	/* the same walk as the count's: a difference is a bug */
	if (!err) {
		why = g_strdup_printf("%u runs mapped, %u counted",
				      h->alias.runs, runs);
		err = -EINVAL;
		pvo_mr_alias_unmap(&h->alias);
	}
	pvo_hv_budget_uncharge(&to_hv_vm(vm)->use, runs,
			       (uint64_t)npages * PVO_PAGE_SIZE);
	pvo_vm_warn(
	    vm, "hostverbs: MR of %" PRIu32 " pages at iova 0x%" PRIx64 ": %s",
	    npages, mr->iova, why);
	g_free(why);
	return status_of_errno(-err);
}

enum pvo_status pvo_hv_reg_mr(struct pvo_vm *vm, struct pvo_mr *mr,
			      const uint64_t *pages, uint32_t npages)
{
	struct pvo_hv_mr *h = g_new0(struct pvo_hv_mr, 1);
	struct ibv_pd *pd = pvo_hv_pd(vm, mr->pd);
	enum pvo_status st;
	int err;

	if (!pd) {
		g_free(h);
		return PVO_STATUS_ENOSPC;
	}
	st = alias(vm, mr, pages, npages, h);
	if (st) {
		g_free(h);
		return st;
	}
	h->mr = ibv_reg_mr_iova(
	    pd, (uint8_t *)h->alias.base + (mr->iova & (PVO_PAGE_SIZE - 1)),
	    mr->length, mr->iova, ibv_access_of(mr->access));
	/* one key for both (rdma_rxe gives rkey 0 without remote access) */
	if (!h->mr || (h->mr->rkey != h->mr->lkey && h->mr->rkey) ||
	    g_hash_table_contains(to_hv_vm(vm)->keys, GUINT_TO_POINTER(h->mr->lkey))) {
		err = h->mr ? EINVAL : errno;
		pvo_vm_warn(vm,
			    "hostverbs: %s: ibv_reg_mr_iova of %" PRIu64
			    " bytes at iova 0x%" PRIx64 ": %s",
			    ibv_get_device_name(pd->context->device),
			    mr->length, mr->iova,
			    h->mr ? "the device gave lkey != rkey or a key "
				    "in use"
				  : g_strerror(err));
		if (h->mr)
			ibv_dereg_mr(h->mr);
		uncharge(vm, h);
		pvo_mr_alias_unmap(&h->alias);
		g_free(h);
		return status_of_errno(err);
	}
	mr->engine_part = h;
	return PVO_STATUS_OK;
}

void pvo_hv_dereg_mr(struct pvo_vm *vm, struct pvo_mr *mr)
{
	struct pvo_hv_mr *h = to_hv_mr(mr);

	if (!h)
		return;
	if (g_hash_table_lookup(to_hv_vm(vm)->keys, GUINT_TO_POINTER(mr->key)) == mr)
		g_hash_table_remove(to_hv_vm(vm)->keys, GUINT_TO_POINTER(mr->key));
	if (ibv_dereg_mr(h->mr))
		pvo_log(pvo_vm_name(vm), "hostverbs: ibv_dereg_mr key 0x%x: %s",
			mr->key, g_strerror(errno));
	/* the device no longer reaches the pages: unmapping is safe */
	uncharge(vm, h);
	pvo_mr_alias_unmap(&h->alias);
	g_free(h);
	mr->engine_part = NULL;
}

/* The GPAs of the MR's 4 KiB pages, as REG_MR gave them. */
static uint64_t *mr_pages(const struct pvo_mr *mr, uint32_t *npages)
{
	uint64_t n = pvo_mr_npages(mr->iova, mr->length), i, avail;
	uint64_t *p = g_new(uint64_t, n);

	for (i = 0; i < n; i++) {
		uint64_t addr =
		    i ? (mr->iova & ~(uint64_t)(PVO_PAGE_SIZE - 1)) +
			    i * PVO_PAGE_SIZE
		      : mr->iova;

		p[i] = pvo_mr_gpa(mr, addr, &avail) &
		       ~(uint64_t)(PVO_PAGE_SIZE - 1);
	}
	*npages = (uint32_t)n;
	return p;
}

enum pvo_status pvo_hv_rereg_mr(struct pvo_vm *vm, struct pvo_mr *mr,
				struct pvo_pd *pd, uint32_t access,
				uint64_t iova, uint64_t length,
				const uint64_t *pages, uint32_t npages)
{
	struct pvo_mr next = *mr;
	uint64_t *own = NULL;
	enum pvo_status st;

	if (!pages)
		pages = own = mr_pages(mr, &npages);
	next.pd = pd;
	next.access = access;
	next.iova = iova;
	next.length = length;
	next.engine_part = NULL;
	/* the new host MR first: on failure the old one stays */
	st = pvo_hv_reg_mr(vm, &next, pages, npages);
	g_free(own);
	if (st)
		return st;
	pvo_hv_dereg_mr(vm, mr);
	mr->engine_part = next.engine_part;
	return PVO_STATUS_OK;
}

struct pvo_mr *pvo_hv_mr_by_key(struct pvo_vm *vm, uint32_t key)
{
	GHashTable *keys = to_hv_vm(vm)->keys;

	/* every key lookup of the data path comes here: no hashing while
	 * the VM has no host MR */
	if (!g_hash_table_size(keys))
		return NULL;
	return g_hash_table_lookup(keys, GUINT_TO_POINTER(key));
}

void pvo_hv_take_key(struct pvo_vm *vm, struct pvo_mr *mr)
{
	mr->key = to_hv_mr(mr)->mr->lkey;
	g_hash_table_insert(to_hv_vm(vm)->keys, GUINT_TO_POINTER(mr->key), mr);
}
