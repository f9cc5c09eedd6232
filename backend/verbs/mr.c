// SPDX-License-Identifier: GPL-2.0-or-later
/* Memory regions; see mr.h. */
#include <endian.h>
#include <inttypes.h>
#include <string.h>
#include <glib.h>

#include "ctrl.h"
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
		pvo_page_runs_free(&mr->pages);
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

/* Counts the runs of a list, page by page. */
struct run_count {
	uint64_t next; /* GPA that would continue the last run */
	uint32_t runs;
};

/*
 * A list built over several calls of one command: the directory is walked
 * twice, a part per call, first to count its runs, then to fill an array
 * of that many, allocated (and charged) once in between. Growing the
 * array as it fills would copy megabytes in one call.
 */
struct pvo_mr_build {
	uint16_t opcode;
	uint32_t ctx;
	uint8_t req[sizeof(struct pvo_cmd_rereg_mr)];
	size_t len;
	bool filling;
	uint32_t next; /* directory entries walked in this pass */
	struct run_count count;
	struct pvo_page_runs pages;
	/* REG_MR: the MR built, while its engine registers it over several
	 * turns, and its pages as the engine takes them */
	struct pvo_mr *mr;
	uint64_t *array;
};

_Static_assert(sizeof(struct pvo_cmd_reg_mr) <= sizeof(struct pvo_cmd_rereg_mr),
	       "struct pvo_mr_build holds either request");

static struct pvo_mr *engine_pending(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, size_t len);
static void engine_hold(struct pvo_vm *vm, uint32_t ctx, const void *req,
			size_t len, struct pvo_mr *mr, uint64_t *pages);

/*
 * The engine's MR over the pages (engine.h takes a page array). One that
 * goes on over several turns (PVO_STATUS_AGAIN) is held in the VM's
 * build with its pages until it answers or the command is dropped.
 */
static enum pvo_status engine_reg(struct pvo_vm *vm, struct pvo_mr *mr,
				  uint32_t ctx, const void *req, size_t len)
{
	struct pvo_mr_build *b = vm->mr_build;
	uint64_t *pages;
	enum pvo_status st;

	if (b && b->mr == mr) {
		pages = b->array;
	} else {
		b = NULL;
		pages = pvo_page_runs_expand(&mr->pages);
		if (!pages)
			return PVO_STATUS_ENOMEM;
	}
	st = vm->eng->mr_reg(vm, mr, pages, mr->pages.npages);
	if (st == PVO_STATUS_AGAIN) {
		if (!b)
			engine_hold(vm, ctx, req, len, mr, pages);
		return st;
	}
	if (b) {
		b->mr = NULL; /* the caller has it now */
		pvo_mr_build_drop(vm);
	} else {
		g_free(pages);
	}
	return st;
}

enum pvo_status pvo_cmd_reg_mr(struct pvo_vm *vm, uint32_t ctx, const void *req,
			       void *resp)
{
	const struct pvo_cmd_reg_mr *c = req;
	uint32_t access = le32toh(c->access);
	uint64_t iova = le64toh(c->iova), length = le64toh(c->length);
	struct pvo_page_runs pages;
	enum pvo_status st;
	struct pvo_pd *pd;
	struct pvo_mr *mr;
	uint64_t npages;

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
	/* the MR its engine goes on registering, or a new one */
	mr = engine_pending(vm, ctx, c, sizeof(*c));
	if (!mr) {
		st = pvo_mr_pages_sliced(vm, PVO_CMD_REG_MR, ctx, c, sizeof(*c),
					 &c->pages, (uint32_t)npages, &pages);
		if (st)
			return st;
		mr = g_new0(struct pvo_mr, 1);
		mr->ctx = ctx;
		mr->pd = pd;
		mr->access = access;
		mr->iova = iova;
		mr->length = length;
		mr->valid = true;
		pvo_mr_set_pages(mr, &pages);
	}
	if (ctx != PVO_CTX_KERNEL && pvo_vm_eng_has(vm, mr_reg)) {
		/* the engine's device's key: remote peers reach the MR by it */
		st = engine_reg(vm, mr, ctx, c, sizeof(*c));
		if (st == PVO_STATUS_AGAIN)
			return st;
		if (st) {
			pvo_page_runs_free(&mr->pages);
			g_free(mr);
			return st;
		}
	}
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
	uint64_t pages[PVO_MAX_FAST_REG_PAGES];
	struct pvo_page_runs runs;
	uint32_t i;

	/* IB: a fast-reg MR must be invalid to be registered */
	if (!mr || mr->valid || !pvo_mr_access_valid(access) || !length ||
	    iova + length < iova || !npages || npages > mr->max_pages ||
	    pvo_mr_npages(iova, length) != npages)
		return PVO_WC_LOC_QP_OP_ERR;
	G_STATIC_ASSERT(PVO_MAX_FAST_REG_PAGES <= 512); /* 4 KiB of stack */
	if (!pvo_gmem_read(vm, pages_gpa, pages, npages * sizeof(*pages)))
		return PVO_WC_LOC_QP_OP_ERR;
	for (i = 0; i < npages; i++) {
		uint64_t g = le64toh(pages[i]);

		if ((g & (PVO_PAGE_SIZE - 1)) ||
		    !pvo_gmem_is_ram(vm, g, PVO_PAGE_SIZE))
			return PVO_WC_LOC_QP_OP_ERR;
	}
	if (pvo_mr_pages_from_array(vm, pages, npages, true, &runs))
		return PVO_WC_LOC_QP_OP_ERR;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	pvo_mr_set_pages(mr, &runs);
	mr->key = (mr->key & ~0xffu) | (key & 0xff);
	mr->valid = true;
	vm->mr_gen++; /* its pages moved */
	return PVO_WC_SUCCESS;
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
	struct pvo_page_runs pages = {0};
	struct pvo_pd *pd = NULL;
	uint64_t *array = NULL, npages = 0;
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
		st = pvo_mr_pages_sliced(vm, PVO_CMD_REREG_MR, ctx, c,
					 sizeof(*c), &c->pages,
					 (uint32_t)npages, &pages);
		if (st)
			return st;
	}
	if (mr->engine_part) {
		/* a new MR of the engine's; the old key dies with the old one */
		if (pages.nruns) {
			array = pvo_page_runs_expand(&pages);
			if (!array) {
				pvo_page_runs_free(&pages);
				return PVO_STATUS_ENOMEM;
			}
		}
		st = vm->eng->mr_rereg(vm, mr, pd ? pd : mr->pd, access,
				       array ? iova : mr->iova,
				       array ? length : mr->length, array,
				       (uint32_t)npages);
		g_free(array);
		if (st) {
			pvo_page_runs_free(&pages);
			return st;
		}
	}
	/* Everything checked: nothing below fails. */
	if (pages.nruns) {
		mr->iova = iova;
		mr->length = length;
		pvo_mr_set_pages(mr, &pages);
	}
	if (pd) {
		mr->pd->refcnt--;
		mr->pd = pd;
		pd->refcnt++;
	}
	mr->access = access;
	/* The key stays, as on rdma_rxe and mlx5: applications go on with
	 * the keys they handed out (an engine's MR has its new one). */
	if (mr->engine_part)
		vm->eng->mr_take_key(vm, mr);
	vm->mr_gen++; /* cursors holding it look it up again */
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
	pvo_page_runs_free(&mr->pages);
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

/* Builds a list charged to the VM's budget, whose refusal it logs. */
struct builder {
	struct pvo_vm *vm;
	struct pvo_page_runs *out;
};

static enum pvo_status add_page(void *opaque, uint64_t gpa)
{
	struct builder *b = opaque;

	return pvo_page_runs_add(b->out, gpa);
}

static enum pvo_status built(struct builder *b, enum pvo_status st)
{
	struct pvo_vm *vm = b->vm;

	if (st) {
		pvo_page_runs_free(b->out);
		if (st == PVO_STATUS_ENOSPC)
			pvo_vm_warn(vm,
				    "MR page lists over max-host-mem (%" PRIu64
				    " of %" PRIu64 " bytes used)",
				    vm->host_mem.used, vm->host_mem.limit);
		return st;
	}
	pvo_page_runs_trim(b->out);
	return PVO_STATUS_OK;
}

static enum pvo_status count_page(void *opaque, uint64_t gpa)
{
	struct run_count *c = opaque;

	c->runs += !c->runs || gpa != c->next;
	c->next = gpa + PVO_PAGE_SIZE;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_mr_pages_from_pdir(struct pvo_vm *vm,
				       const struct pvo_pdir *pdir,
				       uint32_t npages,
				       struct pvo_page_runs *out)
{
	struct builder b = {vm, out};
	struct run_count c = {0};
	enum pvo_status st;

	/* Count, then fill arrays of that size: no growth copying 12 MiB
	 * of a list that jumps at every page. The guest may rewrite the
	 * directory in between: the second walk checks every entry again
	 * and grows the arrays if it must. */
	pvo_page_runs_init(out, &vm->host_mem);
	st = pvo_pdir_walk(vm, pdir, npages, count_page, &c);
	if (!st)
		st = pvo_page_runs_reserve(out, c.runs);
	if (!st)
		st = pvo_pdir_walk(vm, pdir, npages, add_page, &b);
	return built(&b, st);
}

void pvo_mr_build_drop(struct pvo_vm *vm)
{
	struct pvo_mr_build *b = vm->mr_build;

	if (!b)
		return;
	if (b->mr) {
		/* the engine ends its registration in progress */
		vm->eng->mr_free(vm, b->mr);
		pvo_page_runs_free(&b->mr->pages);
		g_free(b->mr);
	}
	g_free(b->array);
	pvo_page_runs_free(&b->pages);
	g_free(b);
	vm->mr_build = NULL;
}

/* The build of this very request, or a new one (another is dropped). */
static struct pvo_mr_build *build_of(struct pvo_vm *vm, uint16_t opcode,
				     uint32_t ctx, const void *req, size_t len)
{
	struct pvo_mr_build *b = vm->mr_build;

	if (b && b->opcode == opcode && b->ctx == ctx && b->len == len &&
	    memcmp(b->req, req, len) == 0)
		return b;
	pvo_mr_build_drop(vm);
	b = g_new0(struct pvo_mr_build, 1);
	b->opcode = opcode;
	b->ctx = ctx;
	b->len = MIN(len, sizeof(b->req));
	memcpy(b->req, req, b->len);
	pvo_page_runs_init(&b->pages, &vm->host_mem);
	vm->mr_build = b;
	return b;
}

/* The MR of this very REG_MR that its engine goes on registering. */
static struct pvo_mr *engine_pending(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, size_t len)
{
	struct pvo_mr_build *b = vm->mr_build;

	if (b && b->mr && b->opcode == PVO_CMD_REG_MR && b->ctx == ctx &&
	    b->len == len && memcmp(b->req, req, len) == 0)
		return b->mr;
	return NULL;
}

static void engine_hold(struct pvo_vm *vm, uint32_t ctx, const void *req,
			size_t len, struct pvo_mr *mr, uint64_t *pages)
{
	struct pvo_mr_build *b = build_of(vm, PVO_CMD_REG_MR, ctx, req, len);

	b->mr = mr;
	b->array = pages;
}

/* The second pass fills the runs the first counted, no more: a guest
 * that rewrote its directory in between gets EINVAL. */
static enum pvo_status fill_page(void *opaque, uint64_t gpa)
{
	struct pvo_page_runs *r = opaque;

	if (r->nruns == r->cap && !pvo_page_runs_joins(r, gpa))
		return PVO_STATUS_EINVAL;
	return pvo_page_runs_add(r, gpa);
}

enum pvo_status pvo_mr_pages_sliced(struct pvo_vm *vm, uint16_t opcode,
				    uint32_t ctx, const void *req, size_t len,
				    const struct pvo_pdir *pdir,
				    uint32_t npages,
				    struct pvo_page_runs *out)
{
	struct pvo_mr_build *b;
	struct builder bl;
	enum pvo_status st;
	uint32_t n;

	if (npages <= PVO_MR_PAGES_PER_CALL || len > sizeof(b->req)) {
		pvo_mr_build_drop(vm);
		return pvo_mr_pages_from_pdir(vm, pdir, npages, out);
	}
	b = build_of(vm, opcode, ctx, req, len);
	bl = (struct builder){vm, &b->pages};
	/* the same request names the same npages: next <= npages */
	n = MIN(npages - b->next, (uint32_t)PVO_MR_PAGES_PER_CALL);
	if (!b->filling) {
		st = pvo_pdir_walk_part(vm, pdir, npages, b->next, n,
					count_page, &b->count);
		b->next += n;
		if (!st && b->next == npages) {
			st = pvo_page_runs_reserve(&b->pages, b->count.runs);
			b->filling = true;
			b->next = 0;
		}
	} else {
		st = pvo_pdir_walk_part(vm, pdir, npages, b->next, n,
					fill_page, &b->pages);
		b->next += n;
	}
	if (st) {
		built(&bl, st); /* frees the list, says why */
		pvo_mr_build_drop(vm);
		return st;
	}
	if (!b->filling || b->next < npages)
		return PVO_STATUS_AGAIN;
	built(&bl, PVO_STATUS_OK);
	*out = b->pages;
	pvo_page_runs_init(&b->pages, NULL);
	pvo_mr_build_drop(vm);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_mr_pages_from_array(struct pvo_vm *vm,
					const uint64_t *pages, uint32_t npages,
					bool le, struct pvo_page_runs *out)
{
	struct builder b = {vm, out};
	enum pvo_status st = PVO_STATUS_OK;
	uint32_t i;

	pvo_page_runs_init(out, &vm->host_mem);
	for (i = 0; i < npages && !st; i++)
		st = add_page(&b, le ? le64toh(pages[i]) : pages[i]);
	return built(&b, st);
}

void pvo_mr_set_pages(struct pvo_mr *mr, struct pvo_page_runs *pages)
{
	pvo_page_runs_free(&mr->pages);
	mr->base = mr->iova & ~(uint64_t)(PVO_PAGE_SIZE - 1);
	mr->pages = *pages;
	pvo_page_runs_init(pages, pages->budget);
}

