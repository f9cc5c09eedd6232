/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The software engine's part of a QP (struct pvo_qp's req and resp): the
 * requester's place in the SQ, its active WQE and the WQEs sent behind
 * it, its timers and window; the responder's place in the RQ and the
 * message it is receiving. Embedded in struct pvo_qp (verbs/qp.h).
 */
#ifndef PVO_SW_QP_H
#define PVO_SW_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "ah.h"
#include "dma.h"
#include "pvo-device.h"
#include "timer.h"

/* A send WQE copied out of the SQ and checked. */
struct pvo_swqe {
	uint32_t idx; /* SQ index */
	uint32_t psn; /* of its first packet */
	uint32_t npkts; /* PSNs it takes (READ: response packets) */
	uint64_t wr_id;
	uint8_t opcode; /* enum pvo_wr_opcode */
	uint8_t flags;	/* PVO_WQE_F_* */
	bool signaled;
	uint32_t imm_data; /* big-endian, as in the WQE */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t invalidate_rkey; /* LOCAL_INV, SEND_WITH_INV */
	struct {		  /* REG_MR */
		uint64_t iova, length, pages;
		uint32_t key, access, npages;
	} reg;
	struct { /* BIND_MW */
		uint64_t addr, length;
		uint32_t rkey, lkey, access;
	} bind;
	struct pvo_path path; /* where to: the QP's, or the AH's (UD) */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint64_t length;    /* of the local data */
	struct pvo_dma dma; /* local data: source or READ/atomic target */
	uint8_t inline_data[PVO_DEV_MAX_INLINE];
};

enum pvo_req_wait { PVO_WAIT_NONE, PVO_WAIT_RNR, PVO_WAIT_ACK };

/* A receive WQE taken off the RQ / SRQ. */
struct pvo_rwqe {
	uint64_t wr_id; /* as in the WQE (little-endian) */
	struct pvo_dma dma;
};

/* WQEs and packets a QP may have in flight beyond its oldest WQE; the
 * packet window adapts: halved on a PSN sequence NAK or a timeout (go-back-N
 * resends all of it), grown by what each completion acknowledged */
#define PVO_REQ_AHEAD 64
#define PVO_REQ_AHEAD_PKTS 512
#define PVO_REQ_WINDOW_MIN 8
#define PVO_REQ_WINDOW_START 64

/*
 * Bytes of one WQE a requester's step moves at most: a larger SEND, WRITE
 * or READ goes in slices of this many bytes (rounded down to whole path
 * MTUs), one per step, and the run's byte budget is one slice, so no
 * callback holds the loop (every VM of the host) for more than the copy
 * of about one slice, whatever size the guest posts (up to 2 GiB). 256 KiB
 * copies in some 20-50 us here, a few times a 64 B round trip's cost,
 * while a WQE per step of that size keeps the per-step overhead (a key
 * lookup, a loop turn) below 1% of the copy.
 */
#define PVO_REQ_SLICE (256u << 10)

/*
 * Where the active WQE stands: what the requester handed to the
 * transport of it (in slices, struct pvo_pkt's pkt_from .. pkt_to, in
 * path MTU packets), what the responder acknowledged or, for a READ,
 * answered. Starts over with each WQE. The local transport answers each
 * slice before send returns; the overlay cuts them into packets and
 * answers later.
 */
struct pvo_req_pos {
	uint32_t resend_pkt; /* the next (re)send starts here */
	uint32_t acked;	     /* packets acknowledged */
	uint32_t next_pkt;   /* packets sent (go-back-N: since the
			      * last resend) */
	bool more;	     /* the next send continues at next_pkt */
	uint32_t read_next;  /* READ response packets placed */
	uint32_t read_end;   /* ... asked for so far */
	uint32_t read_asked; /* read_next + 1 of the last re-request */
	bool sent;	     /* sent at least once */
	/* the slice the transport has at hand (an answer to a whole
	 * message is about it) */
	uint32_t slice_from, slice_to;
};

/* requester (the SQ's consumer is the QP's, qp->sq_cons) */
struct pvo_req {
	uint32_t prod_seen; /* SQ producer as last loaded */
	bool active;  /* wqe holds SQ[qp->sq_cons], sent at least once */
	bool running; /* pvo_req_run is on the stack */
	enum pvo_req_wait wait;
	uint8_t rnr_left, retry_left;
	struct pvo_swqe wqe;
	struct pvo_timer timer;
	struct pvo_timer resume; /* continue after the budget */
	/* overlay RC: SEND / WRITE WQEs sent behind the active one
	 * before it completed (oldest first), so that a message per
	 * round trip does not bound the QP */
	struct pvo_swqe *ahead; /* ring of PVO_REQ_AHEAD, on first
				 * use; pvo_req_ahead() */
	unsigned int ahead_head, nahead;
	/* ... of which sent since the last go-back-N (the rest
	 * were sent before it and go again in order) */
	unsigned int ahead_sent;
	bool resend_active; /* promoted, not sent since go-back-N */
	/* packets in flight allowed, 0: start (pvo_req_window) */
	uint32_t window;
	struct pvo_req_pos pos; /* of the active WQE */
};

struct pvo_resp {
	uint32_t rq_prod_seen; /* RQ producer as last loaded */
	bool comm_est; /* COMM_EST raised (RTR) */
	uint32_t msn;  /* messages completed (the AETH's MSN) */
	/* a message arriving in packets (overlay) */
	struct {
		bool active;
		uint8_t op; /* enum pvo_pkt_op */
		struct pvo_rwqe rw;
		enum pvo_wc_status st;
		bool has_rw;
		uint64_t off; /* bytes placed so far */
		uint32_t rkey;
		uint64_t va, len; /* WRITE: the RETH */
	} msg;
	/* the MR range a READ request names (pvo_reply.data) */
	struct pvo_dma read_src;
};

struct pvo_qp;
struct pvo_st_qp;
struct pvo_st_loader;

/* Another engine takes the QP's work where this one stands (sw_qp.c):
 * the requester stops, its WQEs stay in the SQ from qp->sq_cons, the
 * first of them at qp->attr.sq_psn; the responder expects
 * qp->attr.rq_psn, a message arriving in parts is dropped but the
 * receive it came into stays taken (qp->resp.msg.rw, has_rw); the
 * transports forget the QP's packets. */
void pvo_sw_hand_over(struct pvo_qp *qp);

/* The engine's part of the QP's migration state (sw_state.c; struct
 * pvo_engine_ops save / load). */
void pvo_sw_save(const struct pvo_qp *qp, struct pvo_st_qp *rec);
bool pvo_sw_load(struct pvo_qp *qp, const struct pvo_st_qp *rec,
		 struct pvo_st_loader *l);

#endif
