/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Queue pairs: the object, QPN allocation, the IB state machine with the
 * attributes each transition requires. The engine runs the QP's work
 * (engine.h: struct pvo_engine_ops); its state, and each transport's,
 * are parts of struct pvo_qp defined by their owners (sw_qp.h,
 * overlay_qp.h, transport.h).
 */
#ifndef PVO_QP_H
#define PVO_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "ah.h"
#include "overlay_qp.h"
#include "profile.h"
#include "ring.h"
#include "sw_qp.h"
#include "transport.h"

struct pvo_vm;
struct pvo_pd;
struct pvo_cq;
struct pvo_srq;
struct pvo_engine_ops;

#define PVO_QPN_GSI 1
#define PVO_QPN_MAX 0xffffff
#define PVO_GSI_QKEY 0x80010000u

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
	/* The rings' consumers, whichever engine runs the QP: SQ[sq_cons]
	 * is the oldest send WQE not completed, RQ[rq_cons] the oldest
	 * receive WQE (what the guest sees in the rings' cons fields). */
	uint32_t sq_cons, rq_cons;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	struct pvo_qp_attrs attr;
	uint8_t (*mcast)[PVO_GID_LEN]; /* UD: groups joined (mcast.h) */
	uint32_t nmcast;
	uint64_t db_pass; /* doorbell.c: the pass of records that named it */

	/* The parts the engine and the transports own, embedded: the data
	 * path reaches them on every message. */
	struct pvo_req req;		/* software engine: requester */
	struct pvo_resp resp;		/* software engine: responder */
	struct pvo_qp_route route;	/* local transport: last lookup */
	struct pvo_overlay_qp net;	/* overlay transport: wire state */
	const struct pvo_engine_ops *engine; /* runs the QP's work */
	void *engine_part;	/* the VM engine's (engine.h), or NULL */

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
/* mtu_bytes from path_mtu and the tenant's MTU */
void pvo_qp_update_mtu(struct pvo_qp *qp);

/*
 * The device moves a QP to error (RC/UC, or any type when sq_only is
 * false) or to SQE (UD/GSI send errors, sq_only): flushes, raises the
 * async event ev (0 = none) and, with an SRQ, LAST_WQE_REACHED.
 */
void pvo_qp_set_error(struct pvo_qp *qp, uint32_t ev, bool sq_only);

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
