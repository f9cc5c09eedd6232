// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Completer: the responder's answers, whichever transport carried them,
 * and the requester's timer decide what becomes of the active WQE: it
 * completes (READ and atomic results placed first), part of it is
 * acknowledged (the timeout starts again, the window moves), it goes
 * again from where the responder stands (go-back-N after a PSN sequence
 * NAK, a gap in READ responses or an ACK timeout), it backs off after an
 * RNR NAK, or it fails. A completion releases the WQE's SQ slot before
 * its CQE appears (so the guest can post again as soon as it polls the
 * completion).
 *
 * pvo_comp_reply() and pvo_comp_timer() run one state machine (enum
 * pvo_comp_state in sw_trace.h). The local transport's answer is about
 * the active message as a whole; one from the wire names a packet: an ACK
 * or NAK also completes the SEND / WRITE WQEs before its PSN (cumulative
 * acknowledgement), READ responses are placed in PSN order.
 */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "cq.h"
#include "engine.h"
#include "event.h"
#include "qp.h"
#include "sw_trace.h"
#include "transport.h"
#include "vm.h"

static const char *const state_names[PVO_COMPST_NSTATES] = {
	[PVO_COMPST_GET_WQE] = "GET_WQE",
	[PVO_COMPST_CHECK_PSN] = "CHECK_PSN",
	[PVO_COMPST_IMPLIED] = "IMPLIED",
	[PVO_COMPST_CHECK_ACK] = "CHECK_ACK",
	[PVO_COMPST_READ] = "READ",
	[PVO_COMPST_ATOMIC] = "ATOMIC",
	[PVO_COMPST_PROGRESS] = "PROGRESS",
	[PVO_COMPST_SEND_MORE] = "SEND_MORE",
	[PVO_COMPST_COMP_WQE] = "COMP_WQE",
	[PVO_COMPST_RNR_RETRY] = "RNR_RETRY",
	[PVO_COMPST_TIMEOUT] = "TIMEOUT",
	[PVO_COMPST_RETRY] = "RETRY",
	[PVO_COMPST_LOSS] = "LOSS",
	[PVO_COMPST_RESEND] = "RESEND",
	[PVO_COMPST_WAIT_ACK] = "WAIT_ACK",
	[PVO_COMPST_DROP] = "DROP",
	[PVO_COMPST_DONE] = "DONE",
};

const char *pvo_comp_state_name(enum pvo_comp_state s)
{
	if ((unsigned int)s >= PVO_COMPST_NSTATES || !state_names[s])
		return "?";
	return state_names[s];
}

/* One pass of the machine: an answer (r), or the timer (r NULL). */
struct comp {
	struct pvo_reply *r;
	enum pvo_wc_status status; /* what COMP_WQE completes with */
	int32_t diff;		   /* r->psn - the active WQE's first PSN */
	uint32_t last;		   /* IMPLIED: the last PSN of that WQE */
	bool implied;		   /* COMP_WQE goes on to the next WQE */
	bool dropped;		   /* out of sequence (the return value) */
	bool run;		   /* the requester goes on afterwards */
};

static void wait_for(struct pvo_qp *qp, enum pvo_req_wait why, uint64_t usec)
{
	qp->req.wait = why;
	/* Timeout 0 means wait forever (IB); the WQE stays active until the
	 * QP is modified or destroyed. */
	if (usec)
		pvo_timer_arm(&qp->req.timer, usec);
}

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
	qp->sq_cons++;
	pvo_ring_store(vm, &qp->sq, PVO_RING_CONS, qp->sq_cons);
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

static bool is_atomic(uint8_t opcode)
{
	return opcode == PVO_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == PVO_WR_ATOMIC_FETCH_AND_ADD;
}

/* READ and atomics complete by their response, not by an ACK. */
static bool is_data_op(uint8_t opcode)
{
	return opcode == PVO_WR_RDMA_READ || is_atomic(opcode);
}

/* Whether the slice the transport has at hand ends the active WQE. */
static bool last_slice(const struct pvo_qp *qp)
{
	return qp->req.pos.slice_to >= qp->req.wqe.npkts;
}

/*
 * An answer at once (PVO_ANS_MESSAGE) acknowledged a slice of a SEND,
 * WRITE or READ that is not its last: the requester goes on after it
 * (next_pkt, read_next). acked stays, so that a resend from the start
 * (after an ACK timeout) goes on in order.
 */
static enum pvo_comp_state slice_acked(struct pvo_qp *qp)
{
	qp->req.retry_left = qp->attr.retry_cnt;
	return PVO_COMPST_DONE;
}

static enum pvo_comp_state get_wqe(struct pvo_qp *qp, struct comp *c)
{
	const struct pvo_reply *r = c->r;
	const struct pvo_swqe *w = &qp->req.wqe;

	if (!qp->req.active) {
		/* flushed while the message was out; from the wire: late,
		 * the WQE completed already */
		return r->kind == PVO_ANS_MESSAGE ? PVO_COMPST_DONE
						  : PVO_COMPST_DROP;
	}
	switch (r->kind) {
	case PVO_ANS_MESSAGE:
		/* Unreliable types complete when the message has left, all
		 * of it: the requester sends the next slice. */
		if (qp->type != PVO_QPT_RC) {
			if (!last_slice(qp))
				return PVO_COMPST_DONE;
			c->status = PVO_WC_SUCCESS;
			return PVO_COMPST_COMP_WQE;
		}
		return PVO_COMPST_CHECK_ACK;
	case PVO_ANS_AETH:
		c->run = true;
		return PVO_COMPST_CHECK_PSN;
	case PVO_ANS_READ_RESP:
		c->run = true;
		if (w->opcode != PVO_WR_RDMA_READ)
			return PVO_COMPST_DROP;
		/* a NAK travels as a plain ACK packet, never in a response */
		return r->code == PVO_REPLY_ACK ? PVO_COMPST_READ
						: PVO_COMPST_DONE;
	case PVO_ANS_ATOMIC_ACK:
		c->run = true;
		if (!is_atomic(w->opcode) || pvo_psn_diff(r->psn, w->psn) ||
		    r->code != PVO_REPLY_ACK)
			return PVO_COMPST_DONE;
		return PVO_COMPST_ATOMIC;
	}
	return PVO_COMPST_DONE;
}

static enum pvo_comp_state check_psn(struct pvo_qp *qp, struct comp *c)
{
	/* it must name a PSN in flight (after a migration: one the source
	 * had sent; the rest of the WQEs up to it follow, one answer each) */
	if (pvo_psn_diff(c->r->psn, qp->req.wqe.psn) < 0 ||
	    pvo_psn_diff(c->r->psn, c->r->sent_end) >= 0)
		return PVO_COMPST_DONE;
	return PVO_COMPST_IMPLIED;
}

/*
 * An ACK or NAK names a PSN: the responder has executed every message
 * before it, so the SEND / WRITE WQEs that end before it are done
 * (cumulative acknowledgement), then the rest applies to the WQE that
 * holds the PSN.
 */
static enum pvo_comp_state implied(struct pvo_qp *qp, struct comp *c)
{
	const struct pvo_swqe *w = &qp->req.wqe;
	uint32_t psn = c->r->psn, last = pvo_psn_add(w->psn, w->npkts - 1);
	bool is_ack = c->r->code == PVO_REPLY_ACK;

	c->diff = pvo_psn_diff(psn, w->psn);
	if (is_data_op(w->opcode) && is_ack)
		return PVO_COMPST_DONE; /* they complete by their response */
	/* an ACK of this WQE's last packet, or any answer about a later
	 * WQE, completes it */
	if (pvo_psn_diff(psn, last) > 0 || (is_ack && psn == last)) {
		if (is_data_op(w->opcode))
			return PVO_COMPST_DONE; /* its response will come */
		c->implied = true;
		c->last = last;
		c->status = PVO_WC_SUCCESS;
		return PVO_COMPST_COMP_WQE;
	}
	return PVO_COMPST_CHECK_ACK;
}

/* An ACK of packets of the active WQE (SEND / WRITE: a READ or atomic
 * waits for its response), up to c->diff. */
static enum pvo_comp_state acked(struct pvo_qp *qp, struct comp *c)
{
	struct pvo_req_pos *p = &qp->req.pos;

	if ((uint32_t)c->diff + 1 > p->acked) {
		p->acked = c->diff + 1;
		return PVO_COMPST_PROGRESS;
	}
	return PVO_COMPST_SEND_MORE;
}

static enum pvo_comp_state check_ack(struct pvo_qp *qp, struct comp *c)
{
	const struct pvo_reply *r = c->r;
	bool aeth = r->kind == PVO_ANS_AETH;

	switch (r->code) {
	case PVO_REPLY_ACK:
		if (aeth)
			return acked(qp, c);
		if (qp->req.wqe.opcode == PVO_WR_RDMA_READ)
			return PVO_COMPST_READ;
		if (is_atomic(qp->req.wqe.opcode))
			return PVO_COMPST_ATOMIC;
		if (!last_slice(qp))
			return slice_acked(qp);
		c->status = PVO_WC_SUCCESS;
		break;
	case PVO_REPLY_RNR:
		/* where to go on after the back-off (an answer at once:
		 * the slice it refused, the responder holding the message
		 * open) */
		qp->req.pos.resend_pkt =
		    aeth ? (uint32_t)c->diff : qp->req.pos.slice_from;
		return PVO_COMPST_RNR_RETRY;
	case PVO_REPLY_NONE:
		/* a message is out: its answer comes later, or never; a
		 * packet's AETH has nothing more to say */
		if (aeth)
			return PVO_COMPST_DONE;
		/* a slice that did not go (a peer stopped for migration)
		 * goes again from where it starts */
		qp->req.pos.resend_pkt = qp->req.pos.slice_from;
		return PVO_COMPST_WAIT_ACK;
	case PVO_REPLY_PSN_SEQ:
		if (!aeth) {
			c->status = PVO_WC_REM_OP_ERR;
			break;
		}
		/* an RNR back-off is not cut short */
		if (qp->req.wait == PVO_WAIT_RNR)
			return PVO_COMPST_DONE;
		qp->req.pos.resend_pkt = c->diff;
		return PVO_COMPST_LOSS;
	case PVO_REPLY_INV_REQ:
		c->status = PVO_WC_REM_INV_REQ_ERR;
		break;
	case PVO_REPLY_REM_ACCESS:
		c->status = PVO_WC_REM_ACCESS_ERR;
		break;
	case PVO_REPLY_REM_OP:
	default:
		c->status = PVO_WC_REM_OP_ERR;
		break;
	}
	return PVO_COMPST_COMP_WQE;
}

/* The local transport's READ answer: the data of the piece asked for
 * (a slice), placed where it belongs; the last one completes the READ. */
static enum pvo_comp_state read_whole(struct pvo_qp *qp, struct comp *c)
{
	struct pvo_swqe *w = &qp->req.wqe;
	struct pvo_req_pos *p = &qp->req.pos;
	struct pvo_dma *data = c->r->data;
	uint64_t mtu = pvo_qp_mtu_bytes(qp);
	uint64_t off = MIN(w->length, (uint64_t)p->slice_from * mtu);
	uint64_t len = MIN(w->length, (uint64_t)p->slice_to * mtu) - off;

	c->status = PVO_WC_SUCCESS;
	if (!w->length)
		return PVO_COMPST_COMP_WQE;
	if (!data || data->len != len || p->slice_from != p->read_next) {
		c->status = PVO_WC_BAD_RESP_ERR;
		return PVO_COMPST_COMP_WQE;
	}
	pvo_dma_seek(&w->dma, off);
	pvo_dma_seek(data, 0);
	if (!pvo_dma_copy(&w->dma, data, len)) {
		c->status = PVO_WC_LOC_PROT_ERR;
		return PVO_COMPST_COMP_WQE;
	}
	p->read_next = p->slice_to;
	if (p->read_next < w->npkts)
		return slice_acked(qp);
	return PVO_COMPST_COMP_WQE;
}

/*
 * A READ response packet: placed straight into the WQE's buffers, in PSN
 * order. Which request a response answers does not matter (after a
 * re-request the older one may still be answering, with other FIRST /
 * LAST framing): its PSN says where its bytes go.
 */
static enum pvo_comp_state read_packet(struct pvo_qp *qp, struct comp *c)
{
	const struct pvo_reply *r = c->r;
	struct pvo_swqe *w = &qp->req.wqe;
	struct pvo_req_pos *p = &qp->req.pos;
	uint32_t mtu = pvo_qp_mtu_bytes(qp);
	int32_t d = pvo_psn_diff(r->psn, pvo_psn_add(w->psn, p->read_next));
	uint64_t off = (uint64_t)p->read_next * mtu;
	struct pvo_dma src;

	if (d < 0)
		return PVO_COMPST_DONE; /* duplicate */
	if (d > 0) {
		/* a response was lost or is late: ask once per gap */
		if (p->read_asked == p->read_next + 1)
			return PVO_COMPST_DONE;
		p->read_asked = p->read_next + 1;
		c->dropped = true;
		return PVO_COMPST_LOSS;
	}
	/* full packets up to the end of the READ */
	c->status = PVO_WC_BAD_RESP_ERR;
	if (off + r->payload_len > w->length ||
	    (r->payload_len != mtu && off + r->payload_len != w->length) ||
	    (r->last && p->read_next + 1 == w->npkts &&
	     off + r->payload_len != w->length))
		return PVO_COMPST_COMP_WQE;
	if (r->payload_len) {
		pvo_dma_init(&src, NULL);
		pvo_dma_add(&src, PVO_DMA_HOST, NULL, 0, (void *)r->payload,
			    r->payload_len);
		pvo_dma_seek(&w->dma, off);
		if (!pvo_dma_copy(&w->dma, &src, r->payload_len)) {
			c->status = PVO_WC_LOC_PROT_ERR;
			return PVO_COMPST_COMP_WQE;
		}
	}
	p->read_next++;
	if (p->read_next == w->npkts) {
		c->status = PVO_WC_SUCCESS;
		return PVO_COMPST_COMP_WQE;
	}
	if (p->read_next == p->read_end) {
		/* the piece asked for is in: the next one */
		pvo_req_window_adjust(qp, false, p->read_end);
		return PVO_COMPST_SEND_MORE;
	}
	return PVO_COMPST_PROGRESS;
}

static enum pvo_comp_state atomic(struct pvo_qp *qp, struct comp *c)
{
	struct pvo_swqe *w = &qp->req.wqe;
	uint64_t orig = htole64(c->r->atomic_orig);
	struct pvo_dma src;

	pvo_dma_seek(&w->dma, 0);
	pvo_dma_init(&src, NULL);
	pvo_dma_add(&src, PVO_DMA_HOST, NULL, 0, &orig, sizeof(orig));
	c->status = pvo_dma_copy(&w->dma, &src, sizeof(orig))
			? PVO_WC_SUCCESS
			: PVO_WC_LOC_PROT_ERR;
	return PVO_COMPST_COMP_WQE;
}

/* The responder made progress: the ACK timeout starts again. */
static enum pvo_comp_state progress(struct pvo_qp *qp, struct comp *c)
{
	uint64_t usec = pvo_ack_timeout_usec(qp->attr.timeout);

	if (qp->req.wait == PVO_WAIT_ACK && usec)
		pvo_timer_arm(&qp->req.timer, usec);
	qp->req.retry_left = qp->attr.retry_cnt;
	return c->r->kind == PVO_ANS_AETH ? PVO_COMPST_SEND_MORE
					  : PVO_COMPST_DONE;
}

static enum pvo_comp_state send_more(struct pvo_qp *qp, struct comp *c)
{
	if (c->r->kind == PVO_ANS_READ_RESP) {
		pvo_req_send(qp); /* the READ's next piece */
		return PVO_COMPST_DONE;
	}
	/* the rest of a long message, as far as the window goes */
	if (qp->req.pos.next_pkt < qp->req.wqe.npkts) {
		qp->req.pos.more = true;
		pvo_req_send(qp);
	}
	return PVO_COMPST_DONE;
}

static enum pvo_comp_state comp_wqe(struct pvo_qp *qp, struct comp *c)
{
	bool implied = c->implied;

	c->implied = false;
	pvo_comp_complete(qp, c->status);
	/* an answer about a later PSN: on to the WQE sent next */
	if (implied && qp->req.active && c->r->psn != c->last)
		return PVO_COMPST_IMPLIED;
	return PVO_COMPST_DONE;
}

static enum pvo_comp_state rnr_retry(struct pvo_qp *qp, struct comp *c)
{
	/* An answer: ACK timeouts before it were not in a row, and only
	 * timeouts in a row exhaust retry_cnt. */
	qp->req.retry_left = qp->attr.retry_cnt;
	if (qp->attr.rnr_retry != 7) { /* 7: retry forever */
		if (!qp->req.rnr_left) {
			c->status = PVO_WC_RNR_RETRY_EXC_ERR;
			return PVO_COMPST_COMP_WQE;
		}
		qp->req.rnr_left--;
	}
	wait_for(qp, PVO_WAIT_RNR, pvo_rnr_timer_usec(c->r->rnr_timer));
	return PVO_COMPST_DONE;
}

static enum pvo_comp_state timeout(struct pvo_qp *qp, struct comp *c)
{
	enum pvo_req_wait why = qp->req.wait;

	if (!qp->req.active || why == PVO_WAIT_NONE)
		return PVO_COMPST_DONE;
	if (qp->vm->frozen) {
		/* stopped for migration: no retry, no completion now */
		pvo_timer_arm(&qp->req.timer, PVO_FROZEN_RECHECK_USEC);
		return PVO_COMPST_DONE;
	}
	qp->req.wait = PVO_WAIT_NONE;
	c->run = true; /* the next WQEs, if this one is done */
	/* after an RNR back-off: again, the window as it was */
	return why == PVO_WAIT_ACK ? PVO_COMPST_RETRY : PVO_COMPST_RESEND;
}

static enum pvo_comp_state retry(struct pvo_qp *qp, struct comp *c)
{
	if (!qp->req.retry_left) {
		c->status = PVO_WC_RETRY_EXC_ERR;
		return PVO_COMPST_COMP_WQE;
	}
	qp->req.retry_left--;
	return PVO_COMPST_LOSS;
}

/* Go-back-N: the active WQE from resend_pkt / read_next, and the WQEs
 * sent behind it, now. */
static enum pvo_comp_state resend(struct pvo_qp *qp)
{
	pvo_timer_cancel(&qp->req.timer);
	qp->req.wait = PVO_WAIT_NONE;
	pvo_req_resend(qp);
	return PVO_COMPST_DONE;
}

/* The machine, from state s until DONE: one loop, so that the data path
 * pays no call per state. */
static void comp_run(struct pvo_qp *qp, struct comp *c, enum pvo_comp_state s)
{
	enum pvo_comp_state next;

	while (s != PVO_COMPST_DONE) {
		switch (s) {
		case PVO_COMPST_GET_WQE:
			next = get_wqe(qp, c);
			break;
		case PVO_COMPST_CHECK_PSN:
			next = check_psn(qp, c);
			break;
		case PVO_COMPST_IMPLIED:
			next = implied(qp, c);
			break;
		case PVO_COMPST_CHECK_ACK:
			next = check_ack(qp, c);
			break;
		case PVO_COMPST_READ:
			next = c->r->kind == PVO_ANS_READ_RESP
				   ? read_packet(qp, c)
				   : read_whole(qp, c);
			break;
		case PVO_COMPST_ATOMIC:
			next = atomic(qp, c);
			break;
		case PVO_COMPST_PROGRESS:
			next = progress(qp, c);
			break;
		case PVO_COMPST_SEND_MORE:
			next = send_more(qp, c);
			break;
		case PVO_COMPST_COMP_WQE:
			next = comp_wqe(qp, c);
			break;
		case PVO_COMPST_RNR_RETRY:
			next = rnr_retry(qp, c);
			break;
		case PVO_COMPST_TIMEOUT:
			next = timeout(qp, c);
			break;
		case PVO_COMPST_RETRY:
			next = retry(qp, c);
			break;
		case PVO_COMPST_LOSS:
			pvo_req_window_adjust(qp, true, 0);
			next = PVO_COMPST_RESEND;
			break;
		case PVO_COMPST_RESEND:
			next = resend(qp);
			break;
		case PVO_COMPST_WAIT_ACK:
			wait_for(qp, PVO_WAIT_ACK,
				 pvo_ack_timeout_usec(qp->attr.timeout));
			next = PVO_COMPST_DONE;
			break;
		case PVO_COMPST_DROP:
			c->dropped = true;
			next = PVO_COMPST_DONE;
			break;
		default:
			next = PVO_COMPST_DONE;
			break;
		}
		pvo_sw_trace(qp, "comp %s -> %s", pvo_comp_state_name(s),
			     pvo_comp_state_name(next));
		s = next;
	}
}

bool pvo_comp_reply(struct pvo_qp *qp, struct pvo_reply *r)
{
	struct comp c = { .r = r };

	pvo_sw_trace(qp, "comp: answer kind %u code %u psn 0x%x msn %u",
		     (unsigned int)r->kind, (unsigned int)r->code, r->psn,
		     r->msn);
	comp_run(qp, &c, PVO_COMPST_GET_WQE);
	if (c.run)
		pvo_req_run(qp);
	return !c.dropped;
}

void pvo_comp_timer(void *opaque)
{
	struct pvo_qp *qp = opaque;
	struct comp c = { 0 };

	comp_run(qp, &c, PVO_COMPST_TIMEOUT);
	if (c.run)
		pvo_req_run(qp);
}

void pvo_comp_peer_thawed(struct pvo_qp *qp)
{
	/* its timeout, now: it resends what the frozen peer lost */
	if (qp->req.active && qp->req.wait == PVO_WAIT_ACK)
		pvo_timer_arm(&qp->req.timer, 0);
}
