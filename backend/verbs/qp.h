/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Queue pairs: the object, QPN allocation, the IB state machine with the
 * attributes each transition requires, and flushing. The data path is in
 * req.c (requester), comp.c (completer) and resp.c (responder).
 */
#ifndef PVO_QP_H
#define PVO_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "ah.h"
#include "dma.h"
#include "net_stats.h"
#include "profile.h"
#include "ring.h"
#include "timer.h"

struct pvo_vm;
struct pvo_pd;
struct pvo_cq;
struct pvo_srq;

#define PVO_QPN_GSI 1
#define PVO_QPN_MAX 0xffffff
#define PVO_GSI_QKEY 0x80010000u

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
	struct pvo_path path; /* where to: the QP's, or the AH's (UD) */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint64_t length;    /* of the local data */
	struct pvo_dma dma; /* local data: source or READ/atomic target */
	uint8_t inline_data[PVO_DEV_MAX_INLINE];
};

/* Modify-able attributes (struct pvo_qp_attr, decoded). */
struct pvo_qp_attrs {
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qpn;
	uint32_t access;  /* PVO_ACCESS_* */
	uint8_t path_mtu; /* IB enum */
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t en_sqd_async_notify;
	struct pvo_path path;
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

/* Results of atomics kept for replay to a retransmitted request. */
#define PVO_ATOMIC_REPLAY 16

/* The local transport's last route lookup (transport/local.c). */
struct pvo_qp_route {
	uint64_t gen; /* routes generation it was made in; 0: none */
	uint8_t gid[16];
	struct pvo_vm *vm; /* NULL: not served here */
};

struct pvo_qp {
	struct pvo_vm *vm;
	uint32_t handle;
	uint32_t ctx;
	uint32_t qpn;
	uint8_t type;  /* PVO_QPT_* */
	uint8_t state; /* PVO_QPS_* */
	bool sq_sig_all;
	/* packet size of the path: set with path_mtu, as the tenant's MTU
	 * is fixed (read per WQE, and the chase through vm->cfg->tenant
	 * missed the cache after every large copy) */
	uint32_t mtu_bytes;
	struct pvo_pd *pd;
	struct pvo_cq *scq, *rcq;
	struct pvo_srq *srq;
	struct pvo_ring sq, rq; /* rq unused (entries 0) with an SRQ */
	uint32_t max_send_sge, max_recv_sge, max_inline;
	struct pvo_qp_attrs attr;
	struct pvo_qp_route route;

	/* requester: SQ[sq_cons] is the oldest WQE not completed */
	struct {
		uint32_t cons;
		uint32_t prod_seen; /* SQ producer as last loaded */
		bool active;  /* wqe holds SQ[cons], sent at least once */
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
	} req;

	/* responder */
	struct {
		uint32_t rq_cons;
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
	} resp;

	/* overlay transport state (sender.c, receiver.c) */
	struct {
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
		struct pvo_net_stats stats;
	} net;
#ifdef PVO_PROFILE
	struct pvo_prof prof;
#endif
};

enum pvo_status pvo_cmd_create_qp(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp);
enum pvo_status pvo_cmd_modify_qp(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp);
enum pvo_status pvo_cmd_query_qp(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp);
enum pvo_status pvo_cmd_destroy_qp(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp);
void pvo_qp_free(struct pvo_vm *vm, struct pvo_qp *qp);

/* The QP a peer reaches by QPN in this VM, or NULL. */
struct pvo_qp *pvo_qp_by_qpn(struct pvo_vm *vm, uint32_t qpn);

/*
 * IB modify rules: whether cur -> next is a valid transition for the QP
 * type, and the attribute bits it requires and allows (besides
 * PVO_QP_STATE). Pure; exported for unit tests.
 */
bool pvo_qp_transition(unsigned int type, unsigned int cur, unsigned int next,
		       uint32_t *required, uint32_t *optional);

/* The doorbell of the QP was rung. */
void pvo_qp_doorbell(struct pvo_qp *qp);

/*
 * The device moves a QP to error (RC/UC, or any type when sq_only is
 * false) or to SQE (UD/GSI send errors, sq_only): flushes, raises the
 * async event ev (0 = none) and, with an SRQ, LAST_WQE_REACHED.
 */
void pvo_qp_set_error(struct pvo_qp *qp, uint32_t ev, bool sq_only);

/* Completes every outstanding WQE with WR_FLUSH_ERR. */
void pvo_qp_flush_sq(struct pvo_qp *qp);
void pvo_qp_flush_rq(struct pvo_qp *qp);

/* Whether the QP's state lets it receive: RTR and after, but not ERR
 * (IB: the responder works from RTR until the QP is in error or reset). */
static inline bool pvo_qp_receives(const struct pvo_qp *qp)
{
	switch (qp->state) {
	case PVO_QPS_RTR:
	case PVO_QPS_RTS:
	case PVO_QPS_SQD:
	case PVO_QPS_SQE:
		return true;
	default:
		return false;
	}
}

/* Bytes in one packet of the QP's path (UD: the port's MTU). */
static inline uint32_t pvo_qp_mtu_bytes(const struct pvo_qp *qp)
{
	return qp->mtu_bytes;
}

/* The i-th WQE behind the active one (0: the next to complete). */
static inline struct pvo_swqe *pvo_req_ahead(struct pvo_qp *qp,
					     unsigned int i)
{
	return &qp->req.ahead[(qp->req.ahead_head + i) % PVO_REQ_AHEAD];
}

/* The packets (PSNs) a message of len bytes takes at mtu: at least one. */
static inline uint32_t pvo_packets(uint64_t len, uint32_t mtu)
{
	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

/* PSN arithmetic on 24 bits. */
static inline uint32_t pvo_psn_add(uint32_t psn, uint64_t n)
{
	return (uint32_t)(psn + n) & PVO_QPN_MAX;
}

#endif
