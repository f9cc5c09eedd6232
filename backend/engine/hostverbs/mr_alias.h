/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest MR as one host virtual range: the guest pages of the MR, in
 * the MR's order, mapped a second time back to back, so that a host RDMA
 * device can register the range (ibv_reg_mr) and move data straight
 * between the wire and guest memory, with no copy and with its bounds
 * exactly the MR's (docs/hostverbs.md, "Memory").
 *
 * Guest RAM is a shared mapping of the VMM's memory files; mremap() with
 * an old size of 0 maps the same pages again at an address of our
 * choosing, so no file descriptor needs to outlive the memory table. The
 * alias holds the pages it maps: it stays valid after the memory table
 * changes, and must be unmapped with the MR.
 *
 * Writes a device makes through the alias bypass pvo_gmem_write and so
 * the dirty log (guest_mem.h): a VM whose MRs are aliased cannot be
 * live-migrated by dirty logging alone.
 */
#ifndef PVO_MR_ALIAS_H
#define PVO_MR_ALIAS_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

struct pvo_mr_alias {
	void *base;
	size_t len;
	uint32_t runs; /* mappings made: runs of host-contiguous pages */
};

/*
 * The mappings an alias of the npages 4 KiB guest pages at gpas[] needs:
 * its runs, each a stretch of pages that follow each other in the MR and
 * in one guest RAM region. Every page is checked as by pvo_mr_alias_map,
 * nothing is mapped. 0 with *runs; -ENOSPC as soon as there are more
 * than max_runs (*runs then max_runs + 1: the walk stops there), or
 * -errno with *why (g_free) as pvo_mr_alias_map says.
 */
int pvo_mr_alias_count(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		       uint32_t max_runs, uint32_t *runs, char **why);
/*
 * Maps the npages 4 KiB guest pages at gpas[] (page aligned, guest RAM)
 * back to back, one mremap per run. 0, or -errno with *why saying which
 * page and why (free it with g_free); nothing stays mapped on failure.
 */
int pvo_mr_alias_map(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		     struct pvo_mr_alias *a, char **why);

/*
 * The same over several calls, a bounded part per call, for MRs whose
 * whole walk or mappings would hold the loop (hv_mr.c): a walk starts
 * zeroed and goes on where the last part stopped.
 */
struct pvo_mr_alias_walk {
	uint32_t next; /* the page the next part starts at */
	uint32_t runs; /* runs counted (or mapped) so far */
};

/*
 * Counts the runs of at most max_pages pages from w->next: 0 when the
 * walk reached npages (w->runs: all of them), -EAGAIN when it goes on,
 * else as pvo_mr_alias_count (-ENOSPC past max_runs in all).
 */
int pvo_mr_alias_count_part(struct pvo_vm *vm, const uint64_t *gpas,
			    uint32_t npages, uint32_t max_runs,
			    uint32_t max_pages, struct pvo_mr_alias_walk *w,
			    char **why);
/* Reserves the range of an alias of npages pages, nothing mapped yet. */
int pvo_mr_alias_reserve(uint32_t npages, struct pvo_mr_alias *a, char **why);
/*
 * Maps at most max_runs runs (one mremap each) from w->next into a
 * reserved alias: 0 when all npages are, -EAGAIN when it goes on,
 * -EINVAL past max_total runs in all (the guest changed its memory
 * since they were counted), else -errno with *why. What is mapped stays
 * until pvo_mr_alias_unmap.
 */
int pvo_mr_alias_map_part(struct pvo_vm *vm, const uint64_t *gpas,
			  uint32_t npages, struct pvo_mr_alias *a,
			  uint32_t max_runs, uint32_t max_total,
			  struct pvo_mr_alias_walk *w, char **why);
void pvo_mr_alias_unmap(struct pvo_mr_alias *a);

#endif
