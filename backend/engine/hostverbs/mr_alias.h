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
void pvo_mr_alias_unmap(struct pvo_mr_alias *a);

#endif
