// SPDX-License-Identifier: GPL-2.0-or-later
/* A rebuilt host RC QP's restart; see replay_plan.h. */
#include "pvo-device.h"
#include "replay_plan.h"
#include "transport.h"

#define PSN_MASK 0xffffffu

static uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & PSN_MASK;
}

bool pvo_replay_plan(const struct pvo_replay_wqe *e, uint32_t n,
		     uint32_t next_psn, uint32_t rq_psn,
		     struct pvo_replay_plan *p)
{
	uint32_t first = n ? e[0].psn : next_psn, i, k;

	*p = (struct pvo_replay_plan){.restart_psn = next_psn};
	/* the WQEs follow each other and end at next_psn */
	for (i = 0; i < n; i++) {
		uint32_t end = i + 1 < n ? e[i + 1].psn : next_psn;

		if (!e[i].npsn || e[i].psn > PSN_MASK ||
		    psn_add(e[i].psn, e[i].npsn) != end)
			return false;
	}
	/* the responder is somewhere in [first, next_psn]: it cannot have
	 * seen a PSN not sent (and one before first was acknowledged) */
	if (pvo_psn_diff(rq_psn, first) < 0 ||
	    pvo_psn_diff(next_psn, rq_psn) < 0 || rq_psn > PSN_MASK)
		return false;
	/* executed: the whole WQE is before rq_psn */
	for (k = 0;
	     k < n && pvo_psn_diff(rq_psn, psn_add(e[k].psn, e[k].npsn)) >= 0;
	     k++)
		;
	for (i = 0; i < k; i++) {
		if (e[i].op == PVO_REPLAY_ATOMIC ||
		    (e[i].op == PVO_REPLAY_READ && i + 1 < k)) {
			p->done = i;
			p->fail_status = PVO_WC_REM_OP_ERR;
			return true;
		}
		if (e[i].op == PVO_REPLAY_READ)
			break; /* the last executed one: it runs again */
	}
	p->done = i;
	if (i < n)
		p->restart_psn = e[i].psn;
	return true;
}
