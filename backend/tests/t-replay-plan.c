// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A rebuilt host RC QP's restart (replay_plan.c): which outstanding WQEs
 * the other side's responder executed, which run again, where the
 * connection fails, and the PSN the requester restarts at, also across
 * the 24-bit wrap; impossible inputs (a message could claim them) are
 * refused.
 */
#include "pvo-device.h"
#include "replay_plan.h"
#include "tap.h"

#define S PVO_REPLAY_SEND
#define W PVO_REPLAY_WRITE
#define R PVO_REPLAY_READ
#define A PVO_REPLAY_ATOMIC

struct plan_case {
	const char *what;
	struct pvo_replay_wqe e[6];
	uint32_t n, next, rq;
	bool ok;
	uint32_t done;
	uint8_t fail;
	uint32_t restart;
};

/* one case per entry, its numbers on a line */
/* clang-format off */
static const struct plan_case cases[] = {
    {"nothing outstanding", {{0}}, 0, 100, 100, true, 0, 0, 100},
    {"nothing executed: all again from the first",
     {{S, 10, 1}, {W, 11, 3}}, 2, 14, 10, true, 0, 0, 10},
    {"a SEND and a WRITE executed, a SEND not: two complete",
     {{S, 10, 1}, {W, 11, 3}, {S, 14, 2}}, 3, 16, 14, true, 2, 0, 14},
    {"a WRITE half placed (rq_psn inside it): it runs again whole",
     {{W, 10, 4}, {S, 14, 1}}, 2, 15, 12, true, 0, 0, 10},
    {"everything executed: all complete, restart at next_psn",
     {{S, 10, 1}, {W, 11, 2}}, 2, 13, 13, true, 2, 0, 13},
    {"the last executed WQE a READ: it runs again",
     {{S, 10, 1}, {R, 11, 4}, {S, 15, 1}}, 3, 16, 15, true, 1, 0, 11},
    {"a READ not executed: again, with what follows",
     {{R, 10, 4}, {S, 14, 1}}, 2, 15, 12, true, 0, 0, 10},
    {"an executed READ with an executed SEND after it: fails there",
     {{S, 10, 1}, {R, 11, 4}, {S, 15, 1}}, 3, 16, 16, true, 1,
     PVO_WC_REM_OP_ERR, 16},
    {"an executed atomic: fails there (no second apply)",
     {{W, 10, 2}, {A, 12, 1}, {S, 13, 1}}, 3, 14, 13, true, 1,
     PVO_WC_REM_OP_ERR, 14},
    {"an atomic not executed: runs again",
     {{W, 10, 2}, {A, 12, 1}}, 2, 13, 12, true, 1, 0, 12},
    {"across the wrap: executed up to 0xffffff",
     {{S, 0xfffffe, 2}, {W, 0, 3}}, 2, 3, 0, true, 1, 0, 0},
    {"across the wrap: a READ ending at 1 executed last",
     {{W, 0xfffffc, 2}, {R, 0xfffffe, 3}}, 2, 1, 1, true, 1, 0, 0xfffffe},
    {"refused: rq_psn before the oldest outstanding PSN",
     {{S, 10, 1}}, 1, 11, 9, false, 0, 0, 0},
    {"refused: rq_psn beyond the last PSN sent",
     {{S, 10, 1}}, 1, 11, 12, false, 0, 0, 0},
    {"refused: a gap between two WQEs' PSNs",
     {{S, 10, 1}, {S, 12, 1}}, 2, 13, 11, false, 0, 0, 0},
    {"refused: a WQE of no PSN", {{S, 10, 0}}, 1, 10, 10, false, 0, 0, 0},
    {"refused: a PSN over 24 bits",
     {{S, 10, 1}}, 1, 11, 0x100000b, false, 0, 0, 0},
};
/* clang-format on */

int main(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct plan_case *c = &cases[i];
		struct pvo_replay_plan p;
		bool ok = pvo_replay_plan(c->e, c->n, c->next, c->rq, &p);

		if (!c->ok) {
			tap_ok(!ok, "%s", c->what);
			continue;
		}
		if (!tap_ok(ok && p.done == c->done &&
				p.fail_status == c->fail &&
				(c->fail || p.restart_psn == c->restart),
			    "%s", c->what))
			tap_diag("got ok %d done %u fail %u restart 0x%x", ok,
				 p.done, p.fail_status, p.restart_psn);
	}
	return tap_done();
}
