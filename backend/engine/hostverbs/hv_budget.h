/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the host-verbs engine makes the host hold for a VM, bounded
 * before it is taken (docs/hostverbs.md, "Bounds"):
 *
 * - host mappings: an MR's alias (mr_alias.h) is one mapping per run of
 *   guest-contiguous pages, and a process may have vm.max_map_count
 *   mappings in all (guest RAM, libraries, thread stacks too). All VMs'
 *   aliases together stay within half of it (the share); each VM may
 *   have [vm] max-host-mappings, or, while the VMs' quotas add up to
 *   more than the share, its part of the share in proportion to its
 *   quota, so no VM can take another's.
 * - pinned bytes: the host device pins every page of a host MR, once per
 *   MR that names it, and keeps per-page state for it in the kernel: at
 *   most [vm] max-pinned bytes of MRs per VM.
 * - host MRs: one per guest MR of a user context, so [vm] max-mr.
 *
 * Charged at REG_MR / REREG_MR before any mapping or registration,
 * uncharged when the host MR goes (DEREG_MR, REREG_MR's old MR, the
 * guest's reset, the VM leaving). Over a bound, the guest's command fails
 * with ENOSPC, as for its other quotas.
 *
 * The counts are the loop's today; the share is process-wide and taken
 * under a lock, ready for VMs on several threads.
 */
#ifndef PVO_HV_BUDGET_H
#define PVO_HV_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"
#include "vm.h"

struct pvo_hv_use {
	uint64_t pinned;   /* bytes of its host MRs */
	uint32_t mappings; /* their aliases' runs */
	uint32_t mrs;	   /* host MRs */
	bool joined;
};

/* The VM's use starts (VM engine init) / ends (fini: what is left is
 * given back to the share). */
void pvo_hv_budget_join(struct pvo_vm *vm, struct pvo_hv_use *u);
void pvo_hv_budget_leave(struct pvo_vm *vm, struct pvo_hv_use *u);

/* The mappings the VM may still make: within its bound and the share. */
uint32_t pvo_hv_budget_mappings_left(const struct pvo_vm *vm,
				     const struct pvo_hv_use *u);
/* The VM's bound of mappings: max-host-mappings, or its part of the
 * share while the VMs' quotas exceed it. */
uint32_t pvo_hv_budget_mappings_max(const struct pvo_vm *vm);

/*
 * Takes one host MR of that many mappings and pinned bytes:
 * PVO_STATUS_OK, or PVO_STATUS_ENOSPC with a log line naming the bound
 * (nothing charged).
 */
enum pvo_status pvo_hv_budget_charge(struct pvo_vm *vm, struct pvo_hv_use *u,
				     uint32_t mappings, uint64_t pinned);
/* Gives back what one host MR took. */
void pvo_hv_budget_uncharge(struct pvo_hv_use *u, uint32_t mappings,
			    uint64_t pinned);

/*
 * vm.max_map_count, read from /proc at start-up (pvo_hv_open) or on first
 * use; limit 0 reads it again, else it is taken as given (tests). Logs
 * the share; a VM joining logs once when the quotas come to exceed it.
 */
void pvo_hv_budget_init(uint64_t limit);
/* The mappings all VMs' aliases may have together, and have now. */
uint64_t pvo_hv_budget_share(void);
uint64_t pvo_hv_budget_mapped(void);

#endif
