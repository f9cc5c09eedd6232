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
#include "timer.h"

/* Results of atomics kept for replay to a retransmitted request. */
#define PVO_ATOMIC_REPLAY 16

/* READs a QP keeps for their responses and re-requests: its responder
 * resources, of which max_dest_rd_atomic may be sending at once (the
 * device's max_qp_rd_atom, verbs/device.h). */
#define PVO_READ_RES 16

/*
 * A READ the responder accepted (receiver.c): what it asked for, and the
 * responses still to go, packets [next, end) of a response stream that
 * began at packet from and ends stop bytes into the READ (a re-request
 * starts a new stream within the READ). next == end: all sent.
 */
struct pvo_read_res {
	bool valid;
	uint32_t psn; /* of its first response packet */
	uint32_t npkts;
	uint64_t va, len;
	uint32_t rkey;
	uint32_t msn; /* the AETH's MSN: messages done with this READ */
	uint32_t from, next, end;
	uint64_t stop;
};

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
	/* READ responses (receiver.c): the last PVO_READ_RES READs; what
	 * did not fit a turn goes from rd_timer; rd_sent counts this
	 * turn's packets (rd_turn) */
	struct pvo_read_res rd[PVO_READ_RES];
	struct pvo_timer rd_timer;
	uint64_t rd_turn;
	uint32_t rd_sent;
	uint8_t rd_tos; /* of the last READ request, for its responses */
	/* after a migration: READs before rd_floor are not in rd[] */
	bool rd_unknown;
	uint32_t rd_floor;
	/* After a migration: the PSN after what the source had sent. The
	 * peer may acknowledge up to there although the requester, resuming
	 * at its oldest WQE, has not sent that far again (sender.c). */
	bool replay;
	uint32_t replay_end;
	struct pvo_net_stats stats;
};

#endif
