// SPDX-License-Identifier: GPL-2.0-or-later
/* Memory regions; see mr.h. */
#include <endian.h>
#include <inttypes.h>
#include <glib.h>

#include "device.h"
#include "guest_mem.h"
#include "engine.h"
#include "mr.h"
#include "vm.h"

uint64_t pvo_mr_npages(uint64_t iova, uint64_t length)
{
	uint64_t first = iova >> PVO_PAGE_SHIFT;
	uint64_t last = (iova + length - 1) >> PVO_PAGE_SHIFT;

	return length ? last - first + 1 : 0;
}

bool pvo_mr_access_valid(uint32_t access)
{
	if (access & ~PVO_ACCESS_ALL)
		return false;
	if ((access & (PVO_ACCESS_REMOTE_WRITE | PVO_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & PVO_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

/* [iova, iova + length) of REG_MR / REREG_MR: not empty, not wrapping,
 * within max-mr-size and one page directory; *npages its pages. */
static bool range_valid(struct pvo_vm *vm, uint64_t iova, uint64_t length,
			uint64_t *npages)
{
	if (length == 0 || iova + length < iova ||
	    length > pvo_device_max_mr_size(vm->cfg))
		return false;
	*npages = pvo_mr_npages(iova, length);
	return *npages <= PVO_PDIR_MAX_PAGES;
}

/* A new MR (REG_MR, ALLOC_MR) gets its handle and key, or is freed. */
static enum pvo_status publish(struct pvo_vm *vm, struct pvo_mr *mr,
			       struct pvo_resp_reg_mr *r)
{
	mr->handle = pvo_table_add(&vm->mrs, mr, mr->ctx);
	if (!mr->handle) {
		if (pvo_vm_eng_has(vm, mr_free))
			vm->eng->mr_free(vm, mr);
		g_free(mr->blocks);
		g_free(mr->run);
		g_free(mr);
		pvo_vm_warn(vm, "MR quota reached (max-mr = %u)",
			    vm->cfg->quota.max_mr);
		return PVO_STATUS_ENOSPC;
	}
	/* The tag makes a key of a re-used slot differ from the old one. */
	mr->key = pvo_handle_index(mr->handle) << 8 | ++vm->mr_tag;
	mr->pd->refcnt++;
	r->mr = htole32(mr->handle);
	r->key = htole32(mr->key);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_reg_mr(struct pvo_vm *vm, uint32_t ctx, const void *req,
			       void *resp)
{
	const struct pvo_cmd_reg_mr *c = req;
	uint32_t access = le32toh(c->access);
	uint64_t iova = le64toh(c->iova), length = le64toh(c->length);
	uint64_t npages, *pages;
	enum pvo_status st;
	struct pvo_pd *pd;
	struct pvo_mr *mr;

	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	if (!pd)
		return PVO_STATUS_ENOENT;
	if (!pvo_mr_access_valid(access) ||
	    !range_valid(vm, iova, length, &npages))
		return PVO_STATUS_EINVAL;
	if (vm->mrs.count >= vm->mrs.limit) {
		pvo_vm_warn(vm, "MR quota reached (max-mr = %u)",
			    vm->cfg->quota.max_mr);
		return PVO_STATUS_ENOSPC;
	}
	st = pvo_pdir_read(vm, &c->pages, npages, &pages);
	if (st)
		return st;
	mr = g_new0(struct pvo_mr, 1);
	mr->ctx = ctx;
	mr->pd = pd;
	mr->access = access;
	mr->iova = iova;
	mr->length = length;
	mr->valid = true;
	if (ctx != PVO_CTX_KERNEL && pvo_vm_eng_has(vm, mr_reg)) {
		/* the engine's device's key: remote peers reach the MR by it */
		st = vm->eng->mr_reg(vm, mr, pages, npages);
		if (st) {
			g_free(pages);
			g_free(mr);
			return st;
		}
	}
	pvo_mr_set_pages(mr, pages, npages);
	st = publish(vm, mr, resp);
	if (!st && mr->engine_part) {
		struct pvo_resp_reg_mr *r = resp;

		vm->eng->mr_take_key(vm, mr);
		r->key = htole32(mr->key);
	}
	return st;
}

enum pvo_status pvo_cmd_alloc_mr(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp)
{
	const struct pvo_cmd_alloc_mr *c = req;
	uint32_t max_pages = le32toh(c->max_pages);
	struct pvo_pd *pd;
	struct pvo_mr *mr;

	/* Its pages will be guest-physical: the guest kernel's business. */
	if (ctx != PVO_CTX_KERNEL)
		return PVO_STATUS_EPERM;
	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	if (!pd)
		return PVO_STATUS_ENOENT;
	if (!max_pages || max_pages > PVO_MAX_FAST_REG_PAGES)
		return PVO_STATUS_EINVAL;
	mr = g_new0(struct pvo_mr, 1);
	mr->ctx = ctx;
	mr->pd = pd;
	mr->fast_reg = true;
	mr->max_pages = max_pages;
	return publish(vm, mr, resp);
}

/* The fast-reg MR whose index a key names, if it is in pd. */
static struct pvo_mr *fast_reg_mr(struct pvo_vm *vm, const struct pvo_pd *pd,
				  uint32_t key)
{
	struct pvo_mr *mr = pvo_table_at(&vm->mrs, key >> 8);

	return mr && mr->fast_reg && mr->pd == pd ? mr : NULL;
}

enum pvo_wc_status pvo_mr_fast_reg(struct pvo_vm *vm, const struct pvo_pd *pd,
				   uint32_t key, uint64_t iova, uint64_t length,
				   uint32_t access, uint64_t pages_gpa,
				   uint32_t npages)
{
	struct pvo_mr *mr = fast_reg_mr(vm, pd, key);
	uint64_t *pages;
	uint32_t i;

	/* IB: a fast-reg MR must be invalid to be registered */
	if (!mr || mr->valid || !pvo_mr_access_valid(access) || !length ||
	    iova + length < iova || !npages || npages > mr->max_pages ||
	    pvo_mr_npages(iova, length) != npages)
		return PVO_WC_LOC_QP_OP_ERR;
	pages = g_new(uint64_t, npages);
	if (!pvo_gmem_read(vm, pages_gpa, pages, npages * sizeof(*pages)))
		goto bad;
	for (i = 0; i < npages; i++) {
		pages[i] = le64toh(pages[i]);
		if ((pages[i] & (PVO_PAGE_SIZE - 1)) ||
		    !pvo_gmem_is_ram(vm, pages[i], PVO_PAGE_SIZE))
			goto bad;
	}
	g_free(mr->blocks);
	g_free(mr->run);
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	pvo_mr_set_pages(mr, pages, npages);
	mr->key = (mr->key & ~0xffu) | (key & 0xff);
	mr->valid = true;
	vm->mr_gen++; /* its blocks moved */
	return PVO_WC_SUCCESS;
bad:
	g_free(pages);
	return PVO_WC_LOC_QP_OP_ERR;
}

enum pvo_wc_status pvo_mr_invalidate(struct pvo_vm *vm,
				     const struct pvo_pd *pd, uint32_t key)
{
	struct pvo_mr *mr = fast_reg_mr(vm, pd, key);

	if (!mr || mr->key != key || !mr->valid)
		return PVO_WC_LOC_ACCESS_ERR;
	mr->valid = false;
	vm->mr_gen++; /* cursors holding it look it up again, and fail */
	return PVO_WC_SUCCESS;
}

enum pvo_status pvo_cmd_rereg_mr(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp)
{
	const struct pvo_cmd_rereg_mr *c = req;
	struct pvo_resp_reg_mr *r = resp;
	uint32_t flags = le32toh(c->flags);
	uint32_t access = le32toh(c->access);
	uint64_t iova = le64toh(c->iova), length = le64toh(c->length);
	uint64_t *pages = NULL, npages = 0;
	struct pvo_pd *pd = NULL;
	enum pvo_status st;
	struct pvo_mr *mr;

	if (!flags ||
	    (flags & ~(PVO_REREG_TRANS | PVO_REREG_PD | PVO_REREG_ACCESS)))
		return PVO_STATUS_EINVAL;
	mr = pvo_table_get(&vm->mrs, le32toh(c->mr), ctx);
	if (!mr)
		return PVO_STATUS_ENOENT;
	if (mr->fast_reg)
		return PVO_STATUS_EINVAL;
	if (mr->mw_binds)
		return PVO_STATUS_EBUSY; /* windows name its range and PD */
	if (flags & PVO_REREG_PD) {
		pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
		if (!pd)
			return PVO_STATUS_ENOENT;
	}
	if (!(flags & PVO_REREG_ACCESS))
		access = mr->access;
	if (!pvo_mr_access_valid(access))
		return PVO_STATUS_EINVAL;
	if (flags & PVO_REREG_TRANS) {
		if (!range_valid(vm, iova, length, &npages))
			return PVO_STATUS_EINVAL;
		st = pvo_pdir_read(vm, &c->pages, npages, &pages);
		if (st)
			return st;
	}
	if (mr->engine_part) {
		/* a new MR of the engine's; the old key dies with the old one */
		st = vm->eng->mr_rereg(vm, mr, pd ? pd : mr->pd, access,
				       pages ? iova : mr->iova,
				       pages ? length : mr->length, pages,
				       (uint32_t)npages);
		if (st) {
			g_free(pages);
			return st;
		}
	}
	/* Everything checked: nothing below fails. */
	if (pages) {
		g_free(mr->blocks);
		g_free(mr->run);
		mr->iova = iova;
		mr->length = length;
		pvo_mr_set_pages(mr, pages, npages);
	}
	if (pd) {
		mr->pd->refcnt--;
		mr->pd = pd;
		pd->refcnt++;
	}
	mr->access = access;
	if (mr->engine_part) {
		vm->eng->mr_take_key(vm, mr);
	} else {
		/* a new low byte: the old key must not reach the MR */
		if (++vm->mr_tag == (mr->key & 0xff))
			++vm->mr_tag;
		mr->key = (mr->key & ~0xffu) | vm->mr_tag;
	}
	vm->mr_gen++; /* cursors holding it look it up again, and fail */
	r->mr = htole32(mr->handle);
	r->key = htole32(mr->key);
	return PVO_STATUS_OK;
}

void pvo_mr_free(struct pvo_vm *vm, struct pvo_mr *mr)
{
	if (pvo_vm_eng_has(vm, mr_free))
		vm->eng->mr_free(vm, mr);
	pvo_table_remove(&vm->mrs, mr->handle, mr->ctx);
	vm->mr_gen++; /* cursors holding MR pointers look them up again */
	mr->pd->refcnt--;
	g_free(mr->blocks);
	g_free(mr->run);
	g_free(mr);
}

bool pvo_mr_covers(const struct pvo_mr *mr, uint64_t addr, uint64_t len)
{
	return pvo_range_covers(mr->iova, mr->length, addr, len);
}

struct pvo_mr *pvo_mr_get(struct pvo_vm *vm, uint32_t key,
			  const struct pvo_pd *pd, uint32_t access,
			  uint64_t addr, uint64_t len)
{
	struct pvo_mr *mr = NULL;

	/* keys of the engine's MRs are its device's (a key of a software
	 * MR that equals one is shadowed; both are the VM's) */
	if (pvo_vm_eng_has(vm, mr_by_key))
		mr = vm->eng->mr_by_key(vm, key);
	if (!mr)
		mr = pvo_table_at(&vm->mrs, key >> 8);
	if (!mr || mr->key != key || !mr->valid || mr->pd != pd ||
	    (mr->access & access) != access || !pvo_mr_covers(mr, addr, len))
		return NULL;
	return mr;
}

/*
 * The largest block shift that describes the pages: a block must be
 * contiguous in GPA, so every place where the list jumps (page i does not
 * follow page i - 1) has to start a block. Where no jump is, one block
 * takes the whole MR up to the cap.
 */
static unsigned int block_shift(uint64_t v0, const uint64_t *pages,
				uint32_t npages)
{
	unsigned int shift = PVO_MR_MAX_BLOCK_SHIFT;
	uint32_t i;

	for (i = 1; i < npages; i++) {
		uint64_t v = v0 + ((uint64_t)i << PVO_PAGE_SHIFT);

		if (pages[i] != pages[i - 1] + PVO_PAGE_SIZE)
			shift = MIN(shift, (unsigned int)__builtin_ctzll(v));
	}
	return shift;
}

void pvo_mr_set_pages(struct pvo_mr *mr, uint64_t *pages, uint32_t npages)
{
	uint64_t v0 = mr->iova & ~(uint64_t)(PVO_PAGE_SIZE - 1);
	uint64_t vlast = v0 + ((uint64_t)(npages - 1) << PVO_PAGE_SHIFT);
	unsigned int shift = block_shift(v0, pages, npages);
	uint64_t bsize = 1ull << shift;
	uint32_t j, n;

	mr->block_shift = shift;
	mr->base = v0 & ~(bsize - 1);
	n = (uint32_t)((vlast - mr->base) >> shift) + 1;
	/* In place: block j's first page is at or after block j's index. A
	 * first block that starts before the MR's first page gets the GPA
	 * that page would have (modulo 2^64; only MR bytes are looked up). */
	for (j = 0; j < n; j++) {
		uint64_t vb = mr->base + ((uint64_t)j << shift);
		uint64_t v = MAX(vb, v0);

		pages[j] = pages[(v - v0) >> PVO_PAGE_SHIFT] - (v - vb);
	}
	mr->blocks = g_renew(uint64_t, pages, n);
	mr->nblocks = n;
	mr->run = g_new(uint32_t, n);
	j = n;
	while (j-- > 0)
		mr->run[j] = j + 1 < n && mr->blocks[j + 1] ==
						  mr->blocks[j] + bsize
				 ? mr->run[j + 1] + 1
				 : 1;
}

uint64_t pvo_mr_gpa(const struct pvo_mr *mr, uint64_t addr, uint64_t *avail)
{
	uint64_t off = addr - mr->base;
	uint64_t in = off & ((1ull << mr->block_shift) - 1);

	*avail = (1ull << mr->block_shift) - in;
	return mr->blocks[off >> mr->block_shift] + in;
}

uint64_t pvo_mr_gpa_run(const struct pvo_mr *mr, uint64_t addr,
			uint64_t want, uint64_t *avail)
{
	uint64_t j = (addr - mr->base) >> mr->block_shift;
	uint64_t gpa = pvo_mr_gpa(mr, addr, avail);

	/* and the whole blocks that follow it in guest-physical order */
	if (*avail < want)
		*avail += (uint64_t)(mr->run[j] - 1) << mr->block_shift;
	return gpa;
}
