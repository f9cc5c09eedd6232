// SPDX-License-Identifier: GPL-2.0-or-later
/* Memory regions; see mr.h. */
#include <endian.h>
#include <inttypes.h>
#include <glib.h>

#include "device.h"
#include "guest_mem.h"
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

enum pvo_status pvo_cmd_reg_mr(struct pvo_vm *vm, uint32_t ctx, const void *req,
			       void *resp)
{
	const struct pvo_cmd_reg_mr *c = req;
	struct pvo_resp_reg_mr *r = resp;
	uint32_t access = le32toh(c->access);
	uint64_t iova = le64toh(c->iova), length = le64toh(c->length);
	uint64_t npages;
	enum pvo_status st;
	struct pvo_pd *pd;
	struct pvo_mr *mr;

	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	if (!pd)
		return PVO_STATUS_ENOENT;
	if (!pvo_mr_access_valid(access) || length == 0 ||
	    iova + length < iova || length > pvo_device_max_mr_size(vm->cfg))
		return PVO_STATUS_EINVAL;
	npages = pvo_mr_npages(iova, length);
	if (npages > PVO_PDIR_MAX_PAGES)
		return PVO_STATUS_EINVAL;
	if (vm->mrs.count >= vm->mrs.limit) {
		pvo_vm_warn(vm, "MR quota reached (max-mr = %u)",
			    vm->cfg->quota.max_mr);
		return PVO_STATUS_ENOSPC;
	}
	mr = g_new0(struct pvo_mr, 1);
	st = pvo_pdir_read(vm, &c->pages, npages, &mr->pages);
	if (st) {
		g_free(mr);
		return st;
	}
	mr->npages = npages;
	pvo_mr_index_runs(mr);
	mr->ctx = ctx;
	mr->pd = pd;
	mr->access = access;
	mr->iova = iova;
	mr->length = length;
	mr->handle = pvo_table_add(&vm->mrs, mr, ctx);
	if (!mr->handle) {
		g_free(mr->pages);
		g_free(mr->run);
		g_free(mr);
		return PVO_STATUS_ENOSPC;
	}
	/* The tag makes a key of a re-used slot differ from the old one. */
	mr->key = pvo_handle_index(mr->handle) << 8 | ++vm->mr_tag;
	pd->refcnt++;
	r->mr = htole32(mr->handle);
	r->key = htole32(mr->key);
	return PVO_STATUS_OK;
}

void pvo_mr_free(struct pvo_vm *vm, struct pvo_mr *mr)
{
	pvo_table_remove(&vm->mrs, mr->handle, mr->ctx);
	vm->mr_gen++; /* cursors holding MR pointers look them up again */
	mr->pd->refcnt--;
	g_free(mr->pages);
	g_free(mr->run);
	g_free(mr);
}

enum pvo_status pvo_cmd_dereg_mr(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp)
{
	const struct pvo_cmd_handle *c = req;
	struct pvo_mr *mr;

	if (c->reserved)
		return PVO_STATUS_EINVAL;
	mr = pvo_table_get(&vm->mrs, le32toh(c->handle), ctx);
	if (!mr)
		return PVO_STATUS_ENOENT;
	pvo_mr_free(vm, mr);
	return PVO_STATUS_OK;
}

bool pvo_mr_covers(const struct pvo_mr *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->iova && len <= mr->length &&
	       addr - mr->iova <= mr->length - len;
}

struct pvo_mr *pvo_mr_get(struct pvo_vm *vm, uint32_t key,
			  const struct pvo_pd *pd, uint32_t access,
			  uint64_t addr, uint64_t len)
{
	struct pvo_mr *mr = pvo_table_at(&vm->mrs, key >> 8);

	if (!mr || mr->key != key || mr->pd != pd ||
	    (mr->access & access) != access || !pvo_mr_covers(mr, addr, len))
		return NULL;
	return mr;
}

uint64_t pvo_mr_gpa(const struct pvo_mr *mr, uint64_t addr, uint64_t *avail)
{
	uint64_t off = (addr - mr->iova) + (mr->iova & (PVO_PAGE_SIZE - 1));
	uint64_t in_page = off & (PVO_PAGE_SIZE - 1);

	*avail = PVO_PAGE_SIZE - in_page;
	return mr->pages[off >> PVO_PAGE_SHIFT] + in_page;
}

void pvo_mr_index_runs(struct pvo_mr *mr)
{
	uint32_t i = mr->npages;

	mr->run = g_new(uint32_t, MAX(mr->npages, 1));
	mr->run[0] = 1;
	while (i-- > 0)
		mr->run[i] = i + 1 < mr->npages &&
				     mr->pages[i + 1] == mr->pages[i] + PVO_PAGE_SIZE
				 ? mr->run[i + 1] + 1
				 : 1;
}

uint64_t pvo_mr_gpa_run(const struct pvo_mr *mr, uint64_t addr,
			uint64_t want, uint64_t *avail)
{
	uint64_t off = (addr - mr->iova) + (mr->iova & (PVO_PAGE_SIZE - 1));
	uint64_t i = off >> PVO_PAGE_SHIFT;
	uint64_t gpa = pvo_mr_gpa(mr, addr, avail);

	/* and the whole pages that follow it in guest-physical order */
	if (*avail < want)
		*avail += (uint64_t)(mr->run[i] - 1) * PVO_PAGE_SIZE;
	return gpa;
}
