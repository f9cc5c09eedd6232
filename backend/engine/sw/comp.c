// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Completer: turns the responder's answer to the active WQE into a send
 * completion, an RNR back-off, an ACK-timeout retry or an error, and
 * releases the WQE's SQ slot before its CQE appears (so the guest can
 * post again as soon as it polls the completion).
 */
#include <endian.h>
#include <string.h>

#include "cq.h"
#include "engine.h"
#include "event.h"
#include "qp.h"
#include "transport.h"
#include "vm.h"

static void wait_for(struct pvo_qp *qp, enum pvo_req_wait why, uint64_t usec);

void pvo_comp_complete(struct pvo_qp *qp, enum pvo_wc_status status)
{
	struct pvo_vm *vm = qp->vm;
	struct pvo_swqe *w = &qp->req.wqe;
	struct pvo_cqe cqe;

	if (!qp->req.active)
		return;
	pvo_timer_cancel(&qp->req.timer);
	qp->req.active = false;
	qp->req.resend_active = false;
	qp->req.wait = PVO_WAIT_NONE;
	qp->req.cons++;
	pvo_ring_store(vm, &qp->sq, PVO_RING_CONS, qp->req.cons);
	if (status == PVO_WC_SUCCESS) {
		qp->attr.sq_psn = pvo_psn_add(qp->attr.sq_psn, w->npkts);
		pvo_req_window_adjust(qp, false, w->npkts);
	}
	if (status != PVO_WC_SUCCESS || w->signaled) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.wr_id = w->wr_id;
		cqe.qpn = htole32(qp->qpn);
		cqe.byte_len = htole32((uint32_t)w->length);
		cqe.opcode = pvo_wc_opcode_of(w->opcode);
		cqe.status = status;
		if (!pvo_cq_post(vm, qp->scq, &cqe)) {
			pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
			return;
		}
	}
	if (status != PVO_WC_SUCCESS) {
		pvo_req_forget_ahead(qp); /* flushed from the ring */
		pvo_qp_set_error(qp, 0, true);
	} else if (qp->req.nahead) {
		/* the next WQE is on the wire already: its ACK is awaited */
		pvo_req_promote(qp);
		wait_for(qp, PVO_WAIT_ACK,
			 pvo_ack_timeout_usec(qp->attr.timeout));
	} else if (qp->state == PVO_QPS_SQD && qp->attr.en_sqd_async_notify) {
		pvo_event_post(vm, PVO_EV_SQ_DRAINED, qp->handle);
	}
}

static enum pvo_wc_status take_response(struct pvo_qp *qp, struct pvo_reply *r)
{
	struct pvo_swqe *w = &qp->req.wqe;
	uint64_t orig;
	struct pvo_dma src;

	pvo_dma_seek(&w->dma, 0);
	switch (w->opcode) {
	case PVO_WR_RDMA_READ:
		if (!w->length || r->data_placed)
			return PVO_WC_SUCCESS;
		if (!r->data || r->data->len != w->length)
			return PVO_WC_BAD_RESP_ERR;
		pvo_dma_seek(r->data, 0);
		if (!pvo_dma_copy(&w->dma, r->data, w->length))
			return PVO_WC_LOC_PROT_ERR;
		return PVO_WC_SUCCESS;
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		orig = htole64(r->atomic_orig);
		pvo_dma_init(&src, NULL);
		pvo_dma_add(&src, PVO_DMA_HOST, NULL, 0, &orig, sizeof(orig));
		if (!pvo_dma_copy(&w->dma, &src, sizeof(orig)))
			return PVO_WC_LOC_PROT_ERR;
		return PVO_WC_SUCCESS;
	}
	return PVO_WC_SUCCESS;
}

static void wait_for(struct pvo_qp *qp, enum pvo_req_wait why, uint64_t usec)
{
	qp->req.wait = why;
	/* Timeout 0 means wait forever (IB); the WQE stays active until the
	 * QP is modified or destroyed. */
	if (usec)
		pvo_timer_arm(&qp->req.timer, usec);
}

void pvo_comp_reply(struct pvo_qp *qp, struct pvo_reply *r)
{
	if (!qp->req.active)
		return; /* flushed while the message was out */
	/* Unreliable types complete when the message has left. */
	if (qp->type != PVO_QPT_RC) {
		pvo_comp_complete(qp, PVO_WC_SUCCESS);
		return;
	}
	switch (r->code) {
	case PVO_REPLY_ACK:
		pvo_comp_complete(qp, take_response(qp, r));
		break;
	case PVO_REPLY_RNR:
		/* An answer: ACK timeouts before it were not in a row, and
		 * only timeouts in a row exhaust retry_cnt. */
		qp->req.retry_left = qp->attr.retry_cnt;
		if (qp->attr.rnr_retry != 7) { /* 7: retry forever */
			if (!qp->req.rnr_left) {
				pvo_comp_complete(qp, PVO_WC_RNR_RETRY_EXC_ERR);
				break;
			}
			qp->req.rnr_left--;
		}
		wait_for(qp, PVO_WAIT_RNR, pvo_rnr_timer_usec(r->rnr_timer));
		break;
	case PVO_REPLY_NONE:
		wait_for(qp, PVO_WAIT_ACK,
			 pvo_ack_timeout_usec(qp->attr.timeout));
		break;
	case PVO_REPLY_INV_REQ:
		pvo_comp_complete(qp, PVO_WC_REM_INV_REQ_ERR);
		break;
	case PVO_REPLY_REM_ACCESS:
		pvo_comp_complete(qp, PVO_WC_REM_ACCESS_ERR);
		break;
	case PVO_REPLY_REM_OP:
	default:
		pvo_comp_complete(qp, PVO_WC_REM_OP_ERR);
		break;
	}
}

void pvo_comp_timer(void *opaque)
{
	struct pvo_qp *qp = opaque;
	enum pvo_req_wait why = qp->req.wait;

	if (!qp->req.active || why == PVO_WAIT_NONE)
		return;
	if (qp->vm->frozen) {
		/* stopped for migration: no retry, no completion now */
		pvo_timer_arm(&qp->req.timer, PVO_FROZEN_RECHECK_USEC);
		return;
	}
	qp->req.wait = PVO_WAIT_NONE;
	if (why == PVO_WAIT_ACK) {
		if (!qp->req.retry_left) {
			pvo_comp_complete(qp, PVO_WC_RETRY_EXC_ERR);
			pvo_req_run(qp);
			return;
		}
		qp->req.retry_left--;
		pvo_req_window_adjust(qp, true, 0);
	}
	pvo_req_resend(qp);
	pvo_req_run(qp); /* the next WQEs, if this one is done */
}
