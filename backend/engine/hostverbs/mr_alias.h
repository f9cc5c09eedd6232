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
 * Maps the npages 4 KiB guest pages at gpas[] (page aligned, guest RAM)
 * back to back. 0, or -errno with *why saying which page and why (free
 * it with g_free); nothing stays mapped on failure.
 */
int pvo_mr_alias_map(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		     struct pvo_mr_alias *a, char **why);
void pvo_mr_alias_unmap(struct pvo_mr_alias *a);

#endif
