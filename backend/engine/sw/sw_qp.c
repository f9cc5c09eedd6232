// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The software QP engine: the back-end executes the QP's WQEs itself
 * (req.c, comp.c, resp.c). Here: its per-QP set-up and teardown, what
 * a state change means for the work in flight, and flushing.
 */
#include <endian.h>
#include <string.h>

#include <glib.h>

#include "cq.h"
#include "engine.h"
#include "event.h"
#include "qp.h"
#include "transport.h"
#include "vm.h"

static void sw_restore(struct pvo_qp *qp)
{
	pvo_timer_init(&qp->req.timer, pvo_comp_timer, qp);
	pvo_timer_init(&qp->req.resume, pvo_req_resume, qp);
}

static void sw_create(struct pvo_qp *qp)
{
	struct pvo_vm *vm = qp->vm;

	/* The guest starts posting at the counters it initialised. */
	pvo_ring_load(vm, &qp->sq, PVO_RING_CONS, &qp->sq_cons);
	qp->req.prod_seen = qp->sq_cons;
	if (!qp->srq)
		pvo_ring_load(vm, &qp->rq, PVO_RING_CONS, &qp->rq_cons);
	sw_restore(qp);
}

static void sw_destroy(struct pvo_qp *qp)
{
	pvo_timer_destroy(&qp->req.timer);
	pvo_timer_destroy(&qp->req.resume);
	g_free(qp->req.ahead);
	qp->req.ahead = NULL;
}

/* The requester stops where it stands and forgets what it sent ahead. */
static void req_stop(struct pvo_qp *qp)
{
	pvo_timer_cancel(&qp->req.timer);
	qp->req.active = false;
	pvo_req_forget_ahead(qp);
	qp->req.wait = PVO_WAIT_NONE;
}

/* IB: in RESET a QP forgets its work; the guest finds empty rings. */
static void sw_reset(struct pvo_qp *qp)
{
	struct pvo_vm *vm = qp->vm;
	uint32_t prod;

	req_stop(qp);
	if (pvo_ring_load(vm, &qp->sq, PVO_RING_PROD, &prod)) {
		qp->sq_cons = prod;
		qp->req.prod_seen = prod;
		pvo_ring_store(vm, &qp->sq, PVO_RING_CONS, prod);
	}
	pvo_ring_store(vm, &qp->sq, PVO_RING_DB_PENDING, 0);
	if (!qp->srq && pvo_ring_load(vm, &qp->rq, PVO_RING_PROD, &prod)) {
		qp->rq_cons = prod;
		qp->resp.rq_prod_seen = prod;
		pvo_ring_store(vm, &qp->rq, PVO_RING_CONS, prod);
	}
	qp->resp.comm_est = false;
	qp->resp.msn = 0;
	memset(&qp->resp.msg, 0, sizeof(qp->resp.msg));
	qp->req.window = 0;
}

static void sw_modify(struct pvo_qp *qp, unsigned int cur)
{
	switch (qp->state) {
	case PVO_QPS_RESET:
		sw_reset(qp);
		break;
	case PVO_QPS_SQD:
		if (!qp->req.active && qp->attr.en_sqd_async_notify)
			pvo_event_post(qp->vm, PVO_EV_SQ_DRAINED, qp->handle);
		break;
	case PVO_QPS_RTS:
		if (cur != PVO_QPS_RTS)
			pvo_req_run(qp); /* WQEs may have been posted early */
		break;
	default:
		break;
	}
}

void pvo_sw_hand_over(struct pvo_qp *qp)
{
	req_stop(qp);
	pvo_timer_cancel(&qp->req.resume);
	qp->req.window = 0;
	/* the sender starts the message over from its first PSN (its
	 * responder's place is a message's start), into the same receive */
	qp->resp.msg.active = false;
	qp->resp.msg.off = 0;
	pvo_transport_reset_qp(qp);
}

static void sw_flush(struct pvo_qp *qp, bool rq_too)
{
	pvo_qp_flush_sq(qp);
	if (rq_too)
		pvo_qp_flush_rq(qp);
}

static void sw_doorbell(struct pvo_qp *qp)
{
	switch (qp->state) {
	case PVO_QPS_ERR:
		/* A doorbell on a QP in error also means "flush what I
		 * posted to the RQ" (receive queues have no doorbell). */
		sw_flush(qp, true);
		break;
	case PVO_QPS_SQE:
		sw_flush(qp, false);
		break;
	case PVO_QPS_RTS:
	case PVO_QPS_SQD:
		pvo_req_run(qp);
		break;
	default:
		break; /* WQEs wait for RTS */
	}
}

const struct pvo_engine_ops pvo_engine_sw = {
	.name = "software",
	.create = sw_create,
	.restore = sw_restore,
	.modify = sw_modify,
	.doorbell = sw_doorbell,
	.flush = sw_flush,
	.destroy = sw_destroy,
	.save = pvo_sw_save,
	.load = pvo_sw_load,
};

/* ---- flushing ---- */

uint8_t pvo_wc_opcode_of(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case PVO_WR_RDMA_WRITE:
	case PVO_WR_RDMA_WRITE_WITH_IMM:
		return PVO_WC_RDMA_WRITE;
	case PVO_WR_RDMA_READ:
		return PVO_WC_RDMA_READ;
	case PVO_WR_ATOMIC_CMP_AND_SWP:
		return PVO_WC_COMP_SWAP;
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		return PVO_WC_FETCH_ADD;
	case PVO_WR_LOCAL_INV:
		return PVO_WC_LOCAL_INV;
	case PVO_WR_BIND_MW:
		return PVO_WC_BIND_MW;
	case PVO_WR_REG_MR:
		return PVO_WC_REG_MR;
	default:
		return PVO_WC_SEND;
	}
}

/* Outstanding WQEs of a ring from cons; 0 if the guest's prod is not
 * plausible (the guest broke its own ring: nothing to flush). */
static uint32_t outstanding(struct pvo_vm *vm, const struct pvo_ring *r,
			    uint32_t cons)
{
	uint32_t prod;

	if (!pvo_ring_load(vm, r, PVO_RING_PROD, &prod) ||
	    prod - cons > r->entries)
		return 0;
	return prod - cons;
}

static void flush_cqe(struct pvo_qp *qp, struct pvo_cq *cq, uint64_t wr_id,
		      uint8_t opcode)
{
	struct pvo_cqe cqe = { 0 };

	cqe.wr_id = wr_id;
	cqe.qpn = htole32(qp->qpn);
	cqe.opcode = opcode;
	cqe.status = PVO_WC_WR_FLUSH_ERR;
	pvo_cq_post(qp->vm, cq, &cqe);
}

void pvo_qp_flush_sq(struct pvo_qp *qp)
{
	struct pvo_vm *vm = qp->vm;
	uint32_t n = outstanding(vm, &qp->sq, qp->sq_cons);

	req_stop(qp);
	while (n--) {
		struct pvo_send_wqe w;

		if (!pvo_ring_read(vm, &qp->sq, qp->sq_cons, &w, sizeof(w)))
			memset(&w, 0, sizeof(w));
		qp->sq_cons++;
		pvo_ring_store(vm, &qp->sq, PVO_RING_CONS, qp->sq_cons);
		flush_cqe(qp, qp->scq, w.wr_id, pvo_wc_opcode_of(w.opcode));
	}
}

void pvo_qp_flush_rq(struct pvo_qp *qp)
{
	struct pvo_vm *vm = qp->vm;
	uint32_t n;

	/* a message arriving in packets holds a receive WQE already */
	if (qp->resp.msg.has_rw) {
		flush_cqe(qp, qp->rcq, qp->resp.msg.rw.wr_id, PVO_WC_RECV);
		qp->resp.msg.has_rw = false;
		qp->resp.msg.active = false;
	}
	if (qp->srq)
		return; /* SRQ WQEs belong to no QP */
	n = outstanding(vm, &qp->rq, qp->rq_cons);
	while (n--) {
		struct pvo_recv_wqe w;

		if (!pvo_ring_read(vm, &qp->rq, qp->rq_cons, &w,
				   sizeof(w)))
			memset(&w, 0, sizeof(w));
		qp->rq_cons++;
		pvo_ring_store(vm, &qp->rq, PVO_RING_CONS, qp->rq_cons);
		flush_cqe(qp, qp->rcq, w.wr_id, PVO_WC_RECV);
	}
}
