/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The overlay transport's part of a QP (struct pvo_qp's net): where the
 * active WQE stands on the wire, the responder's ACK and NAK state, the
 * atomics kept for replay, the counters. Embedded in struct pvo_qp
 * (verbs/qp.h); sender.c and receiver.c own it.
 */
#ifndef PVO_OVERLAY_QP_H
#define PVO_OVERLAY_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "net_stats.h"

/* Results of atomics kept for replay to a retransmitted request. */
#define PVO_ATOMIC_REPLAY 16

struct pvo_overlay_qp {
	/* requester, for the active WQE */
	uint32_t resend_pkt; /* the next (re)send starts here */
	uint32_t acked;	     /* packets acknowledged */
	uint32_t next_pkt;   /* packets sent (go-back-N: since the
			      * last resend) */
	bool more;	     /* the next send continues at next_pkt */
	uint32_t read_next;  /* READ response packets placed */
	uint32_t read_end;   /* ... asked for so far */
	uint32_t read_asked; /* read_next + 1 of the last re-request */
	bool sent;	     /* sent at least once */
	uint16_t sport;	     /* inner UDP source port */
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
