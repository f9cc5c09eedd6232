/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory regions: a guest virtual range [iova, iova + length) backed by a
 * list of guest pages, named by a key (lkey == rkey == slot << 8 | tag).
 * Every access is checked against the range, the access flags and the PD.
 */
#ifndef PVO_MR_H
#define PVO_MR_H

#include <stdbool.h>
#include <stdint.h>

#include "page_runs.h"
#include "pvo-device.h"

struct pvo_vm;
struct pvo_pd;

struct pvo_mr {
	uint32_t handle;
	uint32_t key;
	uint32_t ctx;
	struct pvo_pd *pd;
	uint32_t access; /* PVO_ACCESS_* */
	uint64_t iova;
	uint64_t length;
	bool valid;	    /* keys name it (fast-reg: between REG and INV) */
	bool fast_reg;	    /* ALLOC_MR: pages come from REG_MR WQEs */
	uint32_t max_pages; /* fast-reg: page list capacity */
	uint32_t mw_binds;  /* windows bound to it (mw.h) */
	/*
	 * The guest's page list from base on, as runs of pages contiguous
	 * in GPA (page_runs.h), charged to the VM's host memory budget.
	 */
	uint64_t base; /* iova rounded down to a page */
	struct pvo_page_runs pages;
	/* the VM engine's (engine.h), or NULL; the MR's key is then the
	 * engine's */
	void *engine_part;
};

#define PVO_ACCESS_ALL                                                         \
	(PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |                    \
	 PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC |                   \
	 PVO_ACCESS_MW_BIND)

enum pvo_status pvo_cmd_reg_mr(struct pvo_vm *vm, uint32_t ctx, const void *req,
			       void *resp);
enum pvo_status pvo_cmd_rereg_mr(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp);
enum pvo_status pvo_cmd_alloc_mr(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp);
void pvo_mr_free(struct pvo_vm *vm, struct pvo_mr *mr);

/*
 * Work requests on fast-reg MRs (the requester runs them in SQ order; the
 * responder for SEND_WITH_INV). They return the completion status: an MR
 * of another PD, not a fast-reg MR, a key that does not match, a valid MR
 * re-registered or a bad page list fail with PVO_WC_LOC_QP_OP_ERR (reg)
 * or PVO_WC_LOC_ACCESS_ERR (invalidate).
 */
enum pvo_wc_status pvo_mr_fast_reg(struct pvo_vm *vm, const struct pvo_pd *pd,
				   uint32_t key, uint64_t iova, uint64_t length,
				   uint32_t access, uint64_t pages_gpa,
				   uint32_t npages);
enum pvo_wc_status pvo_mr_invalidate(struct pvo_vm *vm,
				     const struct pvo_pd *pd, uint32_t key);

/* Pages covering [iova, iova + length), as REG_MR expects them. */
uint64_t pvo_mr_npages(uint64_t iova, uint64_t length);

/* Access checks of REG_MR: known bits, remote write/atomic need local
 * write (IB rule). */
bool pvo_mr_access_valid(uint32_t access);

/*
 * The MR a key names in this VM if it belongs to pd, grants every bit of
 * access and covers [addr, addr + len) (overflow-safe); NULL otherwise.
 */
struct pvo_mr *pvo_mr_get(struct pvo_vm *vm, uint32_t key,
			  const struct pvo_pd *pd, uint32_t access,
			  uint64_t addr, uint64_t len);

/* Whether [addr, addr + len) lies in [base, base + length) (len may be 0;
 * no sum that could wrap). */
static inline bool pvo_range_covers(uint64_t base, uint64_t length,
				    uint64_t addr, uint64_t len)
{
	return addr >= base && len <= length && addr - base <= length - len;
}

/* Whether [addr, addr + len) lies in the MR (len may be 0). */
bool pvo_mr_covers(const struct pvo_mr *mr, uint64_t addr, uint64_t len);

/*
 * Builds the page list of a REG_MR / REREG_MR range from the page
 * directory (runs charged to the VM's budget: ENOSPC beyond it), or of
 * a fast-reg or migrated MR from an array of npages GPAs (page aligned,
 * little-endian when le). The list goes to an MR with pvo_mr_set_pages.
 */
enum pvo_status pvo_mr_pages_from_pdir(struct pvo_vm *vm,
				       const struct pvo_pdir *pdir,
				       uint32_t npages,
				       struct pvo_page_runs *out);
/*
 * The same for a REG_MR / REREG_MR whose request is req (len bytes, the
 * command's body as the guest sent it, opcode and ctx its header's): a
 * directory of more than PVO_MR_PAGES_PER_CALL pages is walked that many
 * entries per call, kept in vm->mr_build between calls, and the call
 * returns PVO_STATUS_AGAIN until the last part. The control queue calls
 * again with the same request on a later turn; a different request
 * starts over.
 */
/* A part's cost is mostly the page faults of the 16 KiB of runs it may
 * add (a virtualised host's faults cost 5-20 us each), then ~10 ns a
 * page: tens of microseconds at -O2. */
#define PVO_MR_PAGES_PER_CALL 2048
enum pvo_status pvo_mr_pages_sliced(struct pvo_vm *vm, uint16_t opcode,
				    uint32_t ctx, const void *req, size_t len,
				    const struct pvo_pdir *pdir,
				    uint32_t npages,
				    struct pvo_page_runs *out);
/* Drops a list built part-way (a reset, a session gone, an error). */
void pvo_mr_build_drop(struct pvo_vm *vm);

enum pvo_status pvo_mr_pages_from_array(struct pvo_vm *vm,
					const uint64_t *pages, uint32_t npages,
					bool le, struct pvo_page_runs *out);

/* Gives the MR at mr->iova the page list (taking it over; the MR's old
 * one, if any, is freed). */
void pvo_mr_set_pages(struct pvo_mr *mr, struct pvo_page_runs *pages);

/*
 * GPA of MR address addr (covered) and in *avail the bytes that follow
 * it contiguously in guest-physical order (to the end of its run, which
 * may reach past the MR by the rest of the last page: callers clamp to
 * what they checked). Inline: every access of the data path asks.
 */
static inline uint64_t pvo_mr_gpa(const struct pvo_mr *mr, uint64_t addr,
				  uint64_t *avail)
{
	uint64_t off = addr - mr->base, gpa;
	uint64_t in = off & (PVO_PAGE_SIZE - 1);
	uint32_t left;

	pvo_page_runs_find(&mr->pages, (uint32_t)(off >> PVO_PAGE_SHIFT), &gpa,
			   &left);
	*avail = ((uint64_t)left << PVO_PAGE_SHIFT) - in;
	return gpa + in;
}

#endif
