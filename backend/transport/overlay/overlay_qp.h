/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The overlay transport's part of a QP (struct pvo_qp's net): its inner
 * UDP source port, the responder's ACK and NAK state, the atomics kept
 * for replay, what a migrated requester may be answered for, the
 * counters. Embedded in struct pvo_qp (verbs/qp.h); sender.c and
 * receiver.c own it. Where the active WQE stands on the wire is the
 * engine's (struct pvo_req_pos).
 */
#ifndef PVO_OVERLAY_QP_H
#define PVO_OVERLAY_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "net_stats.h"

/* Results of atomics kept for replay to a retransmitted request. */
#define PVO_ATOMIC_REPLAY 16

struct pvo_overlay_qp {
	uint16_t sport; /* inner UDP source port */
	/* responder */
	bool nak_sent; /* PSN sequence NAK sent for rq_psn */
	/* ACK coalescing: one ACK per receive batch, for the latest
	 * PSN asked for (receiver.c; waiting while its slot there
	 * names this QP) */
	uint32_t ack_psn;
	unsigned int ack_slot;
	struct {
		bool valid;
		uint32_t psn;
		uint64_t orig;
	} atomics[PVO_ATOMIC_REPLAY];
	unsigned int atomic_next;
	/* After a migration: the PSN after what the source had sent. The
	 * peer may acknowledge up to there although the requester, resuming
	 * at its oldest WQE, has not sent that far again (sender.c). */
	bool replay;
	uint32_t replay_end;
	struct pvo_net_stats stats;
};

#endif
