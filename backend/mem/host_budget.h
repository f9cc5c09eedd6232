/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host memory the daemon holds for one VM, against the VM's
 * max-host-mem: what a guest can make the daemon allocate beyond a
 * fixed size per object (the page lists of MRs and rings, whose size
 * follows the pages the guest names) is charged here when allocated and
 * uncharged when freed, so one guest's requests fail with ENOSPC instead
 * of taking the host's memory from every other VM.
 */
#ifndef PVO_HOST_BUDGET_H
#define PVO_HOST_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct pvo_host_budget {
	uint64_t used;	/* bytes charged */
	uint64_t limit; /* max-host-mem; 0: no charge succeeds */
	uint64_t refused; /* charges refused, for pvo-ctl show */
};

/* Charges bytes if used + bytes stays within the limit; false, charging
 * nothing, if not. */
static inline bool pvo_budget_charge(struct pvo_host_budget *b,
				     uint64_t bytes)
{
	if (bytes > b->limit || b->used > b->limit - bytes) {
		b->refused++;
		return false;
	}
	b->used += bytes;
	return true;
}

static inline void pvo_budget_uncharge(struct pvo_host_budget *b,
				       uint64_t bytes)
{
	b->used -= bytes < b->used ? bytes : b->used;
}

#endif
