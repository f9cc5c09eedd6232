/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a host RC QP's requester starts again when its connection is
 * rebuilt (docs/migration.md, "VMs on host verbs": a migration's
 * switch-over, or the source's own rebuild after one failed). The old
 * host QPs went to ERROR; the completions they had made were taken; what
 * is left is the QP's outstanding send WQEs with the PSNs the back-end
 * gave them, and the PSN the other side's responder expected next (its
 * rq_psn, from the other side's rebind message). From those alone this
 * decides, so that no message is executed twice and none is lost:
 *
 * - a WQE whose last PSN is before that rq_psn was executed by the
 *   responder, which had no time to answer: a SEND or a WRITE completes
 *   as it would have on its ACK;
 * - an executed READ lost its response: it runs again (a READ changes
 *   nothing) if nothing after it was executed; otherwise it cannot (its
 *   memory may have changed since, by a later WQE of this QP or by the
 *   peer's application reacting to one) and the connection fails there;
 * - an executed atomic lost its result, and running it again would apply
 *   it twice: the connection fails there;
 * - the requester restarts at the first WQE to run again: its first PSN
 *   is what the other side's new responder is told to expect.
 */
#ifndef PVO_REPLAY_PLAN_H
#define PVO_REPLAY_PLAN_H

#include <stdbool.h>
#include <stdint.h>

enum pvo_replay_op {
	PVO_REPLAY_SEND,  /* SEND (with immediate): one message, no answer */
	PVO_REPLAY_WRITE, /* RDMA WRITE (with immediate) */
	PVO_REPLAY_READ,
	PVO_REPLAY_ATOMIC,
};

/* An outstanding send WQE: what it is, its first PSN, the PSNs it takes. */
struct pvo_replay_wqe {
	enum pvo_replay_op op;
	uint32_t psn, npsn;
};

struct pvo_replay_plan {
	/* the first `done` WQEs complete successfully (executed, not
	 * answered) */
	uint32_t done;
	/* then WQE `done` completes with fail_status (PVO_WC_*) and the QP
	 * goes to error, if fail_status is not 0; else WQEs from `done` on
	 * are posted again from restart_psn */
	uint8_t fail_status;
	uint32_t restart_psn;
};

/*
 * The plan for n outstanding WQEs e[] in posting order (PSNs ascending
 * on the 24-bit circle), next_psn the PSN after the last one, rq_psn the
 * other side's responder's. False if e[] and rq_psn cannot be: PSNs out
 * of order, or rq_psn beyond next_psn or before e[0] (by more than the
 * WQEs' span), which a message from the other side could claim: the
 * caller treats the connection as broken.
 */
bool pvo_replay_plan(const struct pvo_replay_wqe *e, uint32_t n,
		     uint32_t next_psn, uint32_t rq_psn,
		     struct pvo_replay_plan *p);

#endif
