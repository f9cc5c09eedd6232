// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Overlay sender (the requester's side on the wire): sends the packets of
 * a message the engine names (struct pvo_pkt's pkt_from .. pkt_to) at the
 * path MTU with consecutive PSNs, and takes what the responder answers:
 * ACKs (also coalesced ones, as progress), RNR and other NAKs, READ
 * responses (placed straight into the WQE's buffers, in PSN order) and
 * atomic ACKs.
 *
 * One WQE is active per QP (req.c). A retransmission (ACK timeout, RNR,
 * PSN sequence NAK, a gap in READ responses) resends from the first packet
 * the responder has not acknowledged or placed.
 */
#include <arpa/inet.h>
#include <string.h>

#include "engine.h"
#include "overlay.h"
#include "qp.h"
#include "timer.h"
#include "vm.h"

/* ACK requested at least this often inside a long message */
#define ACKREQ_EVERY 64

/* One packet: headers of h, then len bytes of data from d at off. */
static bool emit(struct pvo_qp *qp, const struct pvo_route *rt,
		 struct pvo_roce_hdr *h, struct pvo_dma *d, uint64_t off,
		 uint32_t len)
{
	uint8_t *p = pvo_overlay_pkt();
	size_t hl;
	struct pvo_dma dst;

	h->pad = (4 - (len & 3)) & 3;
	hl = pvo_roce_encode(p, h);
	if (len) {
		pvo_dma_init(&dst, NULL);
		pvo_dma_add(&dst, PVO_DMA_HOST, NULL, 0, p + hl, len);
		pvo_dma_seek(d, off);
		if (!pvo_dma_copy(&dst, d, len))
			return false;
	}
	memset(p + hl + len, 0, h->pad);
	pvo_overlay_pkt_send(rt, hl + len + h->pad, qp);
	return true;
}

static uint8_t class_of(const struct pvo_qp *qp)
{
	switch (qp->type) {
	case PVO_QPT_RC:
		return PVO_ROCE_RC;
	case PVO_QPT_UC:
		return PVO_ROCE_UC;
	default:
		return PVO_ROCE_UD;
	}
}

void pvo_ov_sender_send(struct pvo_qp *qp, const struct pvo_pkt *pkt,
			const struct pvo_route *rt0)
{
	uint32_t mtu = pvo_qp_mtu_bytes(qp);
	struct pvo_route rt = *rt0;
	struct pvo_roce_hdr h = { 0 };
	uint8_t cls = class_of(qp);
	uint32_t i, n, start = pkt->pkt_from, end = pkt->pkt_to;
	bool rc = qp->type == PVO_QPT_RC;

	rt.in.sport = pvo_overlay_sport(qp);
	rt.in.tos = pkt->traffic_class;
	rt.in.ttl = pkt->hop_limit ? pkt->hop_limit : 64;
	h.pkey = PVO_ROCE_PKEY_DEFAULT;
	h.dqpn = pkt->dst_qpn;

	switch (pkt->op) {
	case PVO_OP_READ:
		/* one request for the responses [start, end) */
		h.opcode = PVO_OPC_READ_REQUEST;
		h.psn = pvo_psn_add(pkt->psn, start);
		h.va = pkt->va + (uint64_t)start * mtu;
		h.rkey = pkt->rkey;
		h.dma_len = MIN(pkt->dma_len, (uint64_t)end * mtu) -
			    MIN(pkt->dma_len, (uint64_t)start * mtu);
		h.ackreq = true;
		emit(qp, &rt, &h, NULL, 0, 0);
		break;
	case PVO_OP_CMP_SWAP:
	case PVO_OP_FETCH_ADD:
		h.opcode = pkt->op == PVO_OP_CMP_SWAP ? PVO_OPC_CMP_SWAP
						      : PVO_OPC_FETCH_ADD;
		h.psn = pkt->psn;
		h.va = pkt->va;
		h.rkey = pkt->rkey;
		h.swap_add = pkt->op == PVO_OP_CMP_SWAP ? pkt->swap
							: pkt->compare_add;
		h.compare = pkt->op == PVO_OP_CMP_SWAP ? pkt->compare_add : 0;
		h.ackreq = true;
		emit(qp, &rt, &h, NULL, 0, 0);
		break;
	default: /* SEND, WRITE */
		n = pvo_packets(pkt->payload_len, mtu);
		for (i = start; i < end; i++) {
			bool first = i == 0, last = i == n - 1;
			uint64_t off = (uint64_t)i * mtu;
			uint32_t len = MIN(mtu, pkt->payload_len - MIN(off, pkt->payload_len));

			if (cls == PVO_ROCE_UD) {
				h.opcode = PVO_ROCE_UD |
					   (pkt->has_imm ? PVO_OPC_SEND_ONLY_IMM
							 : PVO_OPC_SEND_ONLY);
				h.qkey = pkt->qkey;
				h.sqpn = pkt->src_qpn;
			} else {
				h.opcode = pvo_roce_opcode(
				    cls,
				    pkt->op == PVO_OP_SEND ? PVO_OPC_SEND_FIRST
							   : PVO_OPC_WRITE_FIRST,
				    first, last, pkt->has_imm && last);
				if (pkt->has_inv && last)
					h.opcode = cls | (first
						? PVO_OPC_SEND_ONLY_INV
						: PVO_OPC_SEND_LAST_INV);
			}
			h.psn = pvo_psn_add(pkt->psn, i);
			h.se = pkt->solicited && last;
			/* an ACK at the end of each burst clocks the next */
			h.ackreq = rc && (last || i == end - 1 ||
					  i % ACKREQ_EVERY == ACKREQ_EVERY - 1);
			h.imm = pkt->imm_data;
			h.ieth = pkt->invalidate_rkey;
			/* RETH on the first packet of a WRITE */
			h.va = pkt->va;
			h.rkey = pkt->rkey;
			h.dma_len = pkt->payload_len;
			if (!emit(qp, &rt, &h, pkt->payload, off, len)) {
				/* the source left guest RAM: the retry or
				 * the timeout reports it */
				break;
			}
		}
		break;
	}
	if (pkt->pkt_resent)
		pvo_overlay_count_retransmits(qp, pkt->pkt_resent);
}
/* The responder made progress: the ACK timeout starts again. */
static void progress(struct pvo_qp *qp)
{
	uint64_t usec = pvo_ack_timeout_usec(qp->attr.timeout);

	if (qp->req.wait == PVO_WAIT_ACK && usec)
		pvo_timer_arm(&qp->req.timer, usec);
	qp->req.retry_left = qp->attr.retry_cnt;
}

/* Sends the active WQE again now, from resend_pkt / read_next, and the
 * WQEs behind it. */
static void resend_now(struct pvo_qp *qp)
{
	pvo_timer_cancel(&qp->req.timer);
	qp->req.wait = PVO_WAIT_NONE;
	pvo_req_resend(qp);
}

static void read_response(struct pvo_qp *qp, const struct pvo_roce_hdr *h,
			  uint32_t first_psn, uint32_t mtu)
{
	struct pvo_swqe *w = &qp->req.wqe;
	unsigned int f = pvo_roce_flags(h->opcode);
	int32_t d = pvo_psn_diff(h->psn, pvo_psn_add(first_psn,
						      qp->req.pos.read_next));
	uint64_t off = (uint64_t)qp->req.pos.read_next * mtu;
	struct pvo_reply r = { .code = PVO_REPLY_ACK };
	struct pvo_dma src;

	if (d < 0)
		return; /* duplicate */
	if (d > 0) {
		/* a response was lost or is late: ask once per gap */
		if (qp->req.pos.read_asked != qp->req.pos.read_next + 1) {
			qp->req.pos.read_asked = qp->req.pos.read_next + 1;
			pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
			pvo_req_window_adjust(qp, true, 0);
			resend_now(qp);
		}
		return;
	}
	/*
	 * Full packets up to the end of the READ. Which request a response
	 * answers does not matter (after a re-request the older one may
	 * still be answering, with other FIRST / LAST framing): its PSN
	 * says where its bytes go.
	 */
	if (off + h->payload_len > w->length ||
	    (h->payload_len != mtu && off + h->payload_len != w->length) ||
	    ((f & PVO_RH_LAST) && qp->req.pos.read_next + 1 == w->npkts &&
	     off + h->payload_len != w->length)) {
		pvo_comp_complete(qp, PVO_WC_BAD_RESP_ERR);
		return;
	}
	if (h->payload_len) {
		pvo_dma_init(&src, NULL);
		pvo_dma_add(&src, PVO_DMA_HOST, NULL, 0, (void *)h->payload,
			    h->payload_len);
		pvo_dma_seek(&w->dma, off);
		if (!pvo_dma_copy(&w->dma, &src, h->payload_len)) {
			pvo_comp_complete(qp, PVO_WC_LOC_PROT_ERR);
			return;
		}
	}
	qp->req.pos.read_next++;
	if (qp->req.pos.read_next == w->npkts) {
		r.data_placed = true;
		pvo_comp_reply(qp, &r);
	} else if (qp->req.pos.read_next == qp->req.pos.read_end) {
		/* the next piece */
		pvo_req_window_adjust(qp, false, qp->req.pos.read_end);
		pvo_req_send(qp);
	} else {
		progress(qp);
	}
}

/* The PSN after the last WQE in flight (active one and those behind). */
static uint32_t window_end(struct pvo_qp *qp)
{
	const struct pvo_swqe *last = qp->req.nahead
					  ? pvo_req_ahead(qp, qp->req.nahead - 1)
					  : &qp->req.wqe;

	return pvo_psn_add(last->psn, last->npkts);
}

uint32_t pvo_ov_sender_sent_end(struct pvo_qp *qp)
{
	uint32_t end = qp->req.active ? window_end(qp) : qp->attr.sq_psn;

	if (qp->net.replay && pvo_psn_diff(qp->net.replay_end, end) > 0)
		end = qp->net.replay_end;
	return end;
}

static bool is_data_op(uint8_t opcode)
{
	return opcode == PVO_WR_RDMA_READ ||
	       opcode == PVO_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == PVO_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * An ACK or NAK names a PSN: the responder has executed every message
 * before it, so the SEND / WRITE WQEs that end before it are done
 * (cumulative acknowledgement), then the rest applies to the WQE that
 * holds the PSN.
 */
static void aeth(struct pvo_qp *qp, const struct pvo_roce_hdr *h)
{
	struct pvo_reply r = { .code = PVO_REPLY_NONE };
	struct pvo_reply ack = { .code = PVO_REPLY_ACK };
	uint8_t syn = h->syndrome;
	bool is_ack = PVO_AETH_KIND(syn) == PVO_AETH_ACK;
	int32_t diff;

	/* it must name a PSN in flight (after a migration: one the source
	 * had sent; the rest of the WQEs up to it follow, one answer each) */
	if (qp->net.replay &&
	    pvo_psn_diff(window_end(qp), qp->net.replay_end) >= 0)
		qp->net.replay = false;
	if (pvo_psn_diff(h->psn, qp->req.wqe.psn) < 0 ||
	    pvo_psn_diff(h->psn, pvo_ov_sender_sent_end(qp)) >= 0)
		return;
	for (;;) {
		struct pvo_swqe *w = &qp->req.wqe;
		uint32_t last = pvo_psn_add(w->psn, w->npkts - 1);

		diff = pvo_psn_diff(h->psn, w->psn);
		if (is_data_op(w->opcode) && is_ack)
			return; /* READ / atomic complete by their response */
		/* an ACK of this WQE's last packet, or any answer about a
		 * later WQE, completes it */
		if (pvo_psn_diff(h->psn, last) > 0 ||
		    (is_ack && h->psn == last)) {
			if (is_data_op(w->opcode))
				return; /* implied: its response will come */
			pvo_comp_reply(qp, &ack);
			if (!qp->req.active || h->psn == last)
				return;
			continue;
		}
		break;
	}
	switch (PVO_AETH_KIND(syn)) {
	case PVO_AETH_ACK:
		if ((uint32_t)diff + 1 > qp->req.pos.acked) {
			qp->req.pos.acked = diff + 1;
			progress(qp);
		}
		/* the window moved: the rest of a long message */
		if (qp->req.pos.next_pkt < qp->req.wqe.npkts) {
			qp->req.pos.more = true;
			pvo_req_send(qp);
		}
		return;
	case PVO_AETH_RNR_NAK:
		qp->req.pos.resend_pkt = diff;
		r.code = PVO_REPLY_RNR;
		r.rnr_timer = syn & 0x1f;
		pvo_comp_reply(qp, &r);
		return;
	case PVO_AETH_NAK:
		switch (syn & 0x1f) {
		case PVO_NAK_PSN_SEQ:
			/* an RNR back-off is not cut short */
			if (qp->req.wait == PVO_WAIT_RNR)
				return;
			qp->req.pos.resend_pkt = diff;
			pvo_req_window_adjust(qp, true, 0);
			resend_now(qp);
			return;
		case PVO_NAK_INV_REQ:
		case PVO_NAK_INV_RD_REQ:
			r.code = PVO_REPLY_INV_REQ;
			break;
		case PVO_NAK_REM_ACCESS:
			r.code = PVO_REPLY_REM_ACCESS;
			break;
		default:
			r.code = PVO_REPLY_REM_OP;
			break;
		}
		pvo_comp_reply(qp, &r);
		return;
	}
}

void pvo_ov_sender_input(struct pvo_qp *qp, const struct pvo_inner *in,
			 const struct pvo_roce_hdr *h)
{
	struct pvo_swqe *w = &qp->req.wqe;
	uint32_t mtu = pvo_qp_mtu_bytes(qp), first;
	bool is_read, is_atomic;
	struct pvo_reply r = { .code = PVO_REPLY_ACK };
	int32_t diff;

	/* responses come only from the peer this RC QP is connected to */
	if (in->sip != pvo_gid_ipv4(qp->attr.path.dgid)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PEER);
		return;
	}
	if (!qp->req.active) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		return; /* late: the WQE completed already */
	}
	is_read = w->opcode == PVO_WR_RDMA_READ;
	is_atomic = w->opcode == PVO_WR_ATOMIC_CMP_AND_SWP ||
		    w->opcode == PVO_WR_ATOMIC_FETCH_AND_ADD;
	first = w->psn;
	diff = pvo_psn_diff(h->psn, first);

	switch (h->opcode) {
	case PVO_OPC_ACK:
		aeth(qp, h);
		break;
	case PVO_OPC_ATOMIC_ACK:
		if (!is_atomic || diff != 0 ||
		    PVO_AETH_KIND(h->syndrome) != PVO_AETH_ACK)
			break;
		r.atomic_orig = h->orig;
		pvo_comp_reply(qp, &r);
		break;
	case PVO_OPC_READ_RESP_FIRST:
	case PVO_OPC_READ_RESP_MIDDLE:
	case PVO_OPC_READ_RESP_LAST:
	case PVO_OPC_READ_RESP_ONLY:
		if (!is_read) {
			pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
			break;
		}
		/* a NAK travels as a plain ACK packet, never in a response */
		if ((pvo_roce_flags(h->opcode) & PVO_RH_AETH) &&
		    PVO_AETH_KIND(h->syndrome) != PVO_AETH_ACK)
			break;
		read_response(qp, h, first, mtu);
		break;
	default:
		break;
	}
	pvo_req_run(qp);
}
