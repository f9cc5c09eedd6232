// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Overlay receiver (the responder's side on the wire): turns a request
 * packet into a struct pvo_pkt for the responder (resp.c) after the
 * wire-level checks, and answers on the wire.
 *
 *   RC   PSN must be the expected one. Ahead: one PSN sequence NAK per gap.
 *        Behind (a retransmission): SEND / WRITE are acknowledged again,
 *        a READ is executed again from its own RETH, an atomic gets its
 *        saved result (never executed twice). ACKs only where the
 *        requester asked (AckReq), NAKs at once.
 *   UC   a gap drops the rest of the message; a first packet resyncs.
 *   UD   Q_Key checked, no PSN.
 */
#include <arpa/inet.h>
#include <string.h>

#include "loop.h"
#include "overlay.h"
#include "qp.h"
#include "vm.h"

/* Answers go back along the learned or configured route to the sender. */
static bool reply_route(struct pvo_qp *qp, const struct pvo_inner *in,
			struct pvo_route *rt)
{
	if (!pvo_overlay_route(qp->vm, in->dip, in->sip, rt)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_NO_ROUTE);
		return false;
	}
	rt->in.sport = pvo_overlay_sport(qp);
	rt->in.tos = in->tos;
	return true;
}

static void ack_first(struct pvo_qp *qp);

static void send_aeth(struct pvo_qp *qp, const struct pvo_route *rt,
		      uint8_t opcode, uint32_t psn, uint8_t syndrome,
		      uint64_t orig)
{
	struct pvo_roce_hdr h = {
		.opcode = opcode,
		.pkey = PVO_ROCE_PKEY_DEFAULT,
		.dqpn = qp->attr.dest_qpn,
		.psn = psn,
		.syndrome = syndrome,
		.msn = qp->resp.msn,
		.orig = orig,
	};
	uint8_t *p;

	ack_first(qp);
	p = pvo_overlay_pkt();

	pvo_overlay_pkt_send(rt, pvo_roce_encode(p, &h), qp);
}

/*
 * ACK coalescing. Every packet comes from a receive batch (overlay.c);
 * an ACK is cumulative, so a QP answers the batch with one ACK for the
 * latest PSN asked for, sent when the batch is taken in. Any other answer
 * of the QP (a NAK, a READ response, an atomic ACK) sends the waiting
 * ACK first, so the requester sees them in PSN order.
 */
#define ACKS_MAX 64

/* The ACKs a loop holds back until its receive batch is taken in. */
struct pending_acks {
	struct {
		struct pvo_qp *qp;
		struct pvo_route rt;
	} a[ACKS_MAX];
	unsigned int n;
};

static struct pending_acks *pending(void)
{
	return pvo_loop_state(PVO_LOOP_OVERLAY_ACKS,
			      sizeof(struct pending_acks), NULL, NULL);
}

/* qp has an ACK waiting in this batch */
static bool ack_waiting(struct pending_acks *pa, const struct pvo_qp *qp)
{
	return qp->net.ack_slot < pa->n && pa->a[qp->net.ack_slot].qp == qp;
}

/* Sends qp's waiting ACK, if any, before another answer of it. */
static void ack_first(struct pvo_qp *qp)
{
	struct pending_acks *pa = pending();

	if (!ack_waiting(pa, qp))
		return;
	pa->a[qp->net.ack_slot].qp = NULL;
	send_aeth(qp, &pa->a[qp->net.ack_slot].rt, PVO_OPC_ACK,
		  qp->net.ack_psn, PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID, 0);
}

void pvo_ov_receiver_send_acks(void)
{
	struct pending_acks *pa = pending();
	unsigned int i;

	for (i = 0; i < pa->n; i++)
		if (pa->a[i].qp)
			ack_first(pa->a[i].qp);
	pa->n = 0;
}

void pvo_ov_receiver_forget(struct pvo_qp *qp)
{
	struct pending_acks *pa = pending();

	if (ack_waiting(pa, qp))
		pa->a[qp->net.ack_slot].qp = NULL;
}

static void send_ack(struct pvo_qp *qp, const struct pvo_route *rt,
		     uint32_t psn)
{
	struct pending_acks *pa = pending();

	if (ack_waiting(pa, qp)) {
		if (pvo_psn_diff(psn, qp->net.ack_psn) > 0)
			qp->net.ack_psn = psn;
		return;
	}
	if (pa->n == ACKS_MAX) {
		send_aeth(qp, rt, PVO_OPC_ACK, psn,
			  PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID, 0);
		return;
	}
	pa->a[pa->n].qp = qp;
	pa->a[pa->n].rt = *rt;
	qp->net.ack_slot = pa->n++;
	qp->net.ack_psn = psn;
}

static void send_nak(struct pvo_qp *qp, const struct pvo_route *rt,
		     uint32_t psn, uint8_t syndrome)
{
	send_aeth(qp, rt, PVO_OPC_ACK, psn, syndrome, 0);
}

/* READ response packets for data, from psn on. */
static void send_read_response(struct pvo_qp *qp, const struct pvo_route *rt,
			       uint32_t psn, struct pvo_reply *r)
{
	uint32_t mtu = pvo_qp_mtu_bytes(qp);
	uint64_t len = r->data ? r->data->len : 0;
	uint32_t i, n = pvo_packets(len, mtu);

	ack_first(qp);
	for (i = 0; i < n; i++) {
		bool first = i == 0, last = i == n - 1;
		uint64_t off = (uint64_t)i * mtu;
		uint32_t plen = MIN(mtu, len - MIN(off, len));
		struct pvo_roce_hdr h = {
			.pkey = PVO_ROCE_PKEY_DEFAULT,
			.dqpn = qp->attr.dest_qpn,
			.psn = pvo_psn_add(psn, i),
			.syndrome = PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID,
			.msn = qp->resp.msn,
		};
		uint8_t *p = pvo_overlay_pkt();
		struct pvo_dma dst;
		size_t hl;

		h.opcode = first && last ? PVO_OPC_READ_RESP_ONLY
			   : first	 ? PVO_OPC_READ_RESP_FIRST
			   : last	 ? PVO_OPC_READ_RESP_LAST
					 : PVO_OPC_READ_RESP_MIDDLE;
		h.pad = (4 - (plen & 3)) & 3;
		hl = pvo_roce_encode(p, &h);
		if (plen) {
			pvo_dma_init(&dst, NULL);
			pvo_dma_add(&dst, PVO_DMA_HOST, NULL, 0, p + hl, plen);
			pvo_dma_seek(r->data, off);
			if (!pvo_dma_copy(&dst, r->data, plen))
				return; /* the MR left guest RAM: no answer */
		}
		memset(p + hl + plen, 0, h.pad);
		pvo_overlay_pkt_send(rt, hl + plen + h.pad, qp);
	}
}

static enum pvo_pkt_op op_of(uint8_t opcode)
{
	switch (opcode & 0x1f) {
	case PVO_OPC_READ_REQUEST:
		return PVO_OP_READ;
	case PVO_OPC_CMP_SWAP:
		return PVO_OP_CMP_SWAP;
	case PVO_OPC_FETCH_ADD:
		return PVO_OP_FETCH_ADD;
	case PVO_OPC_SEND_LAST_INV:
	case PVO_OPC_SEND_ONLY_INV:
		return PVO_OP_SEND;
	}
	return (opcode & 0x1f) >= PVO_OPC_WRITE_FIRST ? PVO_OP_WRITE
						      : PVO_OP_SEND;
}

/* The request as the responder sees a message (or a segment of one). */
static void to_pkt(struct pvo_qp *qp, const struct pvo_inner *in,
		   const struct pvo_roce_hdr *h, struct pvo_pkt *pkt,
		   uint8_t *sgid, uint8_t *dgid, struct pvo_dma *payload)
{
	unsigned int f = pvo_roce_flags(h->opcode);

	memset(pkt, 0, sizeof(*pkt));
	pvo_gid_from_ipv4(in->sip, sgid);
	pvo_gid_from_ipv4(in->dip, dgid);
	pkt->sgid = sgid;
	pkt->smac = in->smac;
	pkt->dgid = dgid;
	pkt->dst_qpn = h->dqpn;
	pkt->hop_limit = in->ttl;
	pkt->traffic_class = in->tos;
	pkt->psn = h->psn;
	pkt->op = op_of(h->opcode);
	pkt->first = f & PVO_RH_FIRST;
	pkt->last = f & PVO_RH_LAST;
	pkt->has_imm = f & PVO_RH_IMM;
	pkt->imm_data = h->imm;
	pkt->has_inv = f & PVO_RH_IETH;
	pkt->invalidate_rkey = h->ieth;
	pkt->solicited = h->se;
	switch (PVO_ROCE_CLASS(h->opcode)) {
	case PVO_ROCE_UD:
		pkt->qp_type = PVO_QPT_UD;
		pkt->src_qpn = h->sqpn;
		pkt->qkey = h->qkey;
		break;
	default:
		/* RC / UC carry no source QPN: the peer is checked by its
		 * address, the QPN is the one the QP is connected to */
		pkt->qp_type = qp->type;
		pkt->src_qpn = qp->attr.dest_qpn;
		break;
	}
	pkt->va = h->va;
	pkt->rkey = h->rkey;
	pkt->dma_len = f & PVO_RH_RETH ? h->dma_len : h->payload_len;
	if (pkt->op == PVO_OP_CMP_SWAP) {
		pkt->compare_add = h->compare;
		pkt->swap = h->swap_add;
		pkt->dma_len = 8;
	} else if (pkt->op == PVO_OP_FETCH_ADD) {
		pkt->compare_add = h->swap_add;
		pkt->dma_len = 8;
	}
	pvo_dma_init(payload, NULL);
	if (h->payload_len)
		pvo_dma_add(payload, PVO_DMA_HOST, NULL, 0,
			    (void *)h->payload, h->payload_len);
	pkt->payload = payload;
	pkt->payload_len = h->payload_len;
}

static void save_atomic(struct pvo_qp *qp, uint32_t psn, uint64_t orig)
{
	unsigned int i = qp->net.atomic_next++ % PVO_ATOMIC_REPLAY;

	qp->net.atomics[i].valid = true;
	qp->net.atomics[i].psn = psn;
	qp->net.atomics[i].orig = orig;
}

/* A retransmitted request (PSN behind the expected one). */
static void duplicate(struct pvo_qp *qp, const struct pvo_route *rt,
		      const struct pvo_pkt *pkt, const struct pvo_roce_hdr *h)
{
	struct pvo_reply r = { .code = PVO_REPLY_NONE };
	unsigned int i;
	uint32_t end;

	switch (pkt->op) {
	case PVO_OP_SEND:
	case PVO_OP_WRITE:
		/* done already: say so again where asked */
		if (h->ackreq)
			send_ack(qp, rt, pvo_psn_add(qp->attr.rq_psn, -1));
		return;
	case PVO_OP_READ:
		/* A requester asks again from the first response packet it
		 * lacks, for the rest: the range ends where the first
		 * request's did. One that reaches past rq_psn names PSNs
		 * not used yet (taking them would ACK and drop the requests
		 * that come with them): drop it, as rxe drops a re-request
		 * it cannot match. */
		end = pvo_psn_add(
		    h->psn, pvo_packets(pkt->dma_len, pvo_qp_mtu_bytes(qp)));
		if (pvo_psn_diff(end, qp->attr.rq_psn) > 0) {
			pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
			return;
		}
		/* reads have no side effects: execute again, checked anew */
		pvo_resp_read(qp, pkt, &r);
		if (r.code != PVO_REPLY_ACK)
			return;
		send_read_response(qp, rt, h->psn, &r);
		return;
	default:
		for (i = 0; i < PVO_ATOMIC_REPLAY; i++)
			if (qp->net.atomics[i].valid &&
			    qp->net.atomics[i].psn == h->psn) {
				send_aeth(qp, rt, PVO_OPC_ATOMIC_ACK, h->psn,
					  PVO_AETH_ACK |
					      PVO_AETH_CREDITS_INVALID,
					  qp->net.atomics[i].orig);
				return;
			}
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		return;
	}
}

static uint8_t nak_syndrome(enum pvo_reply_code c)
{
	switch (c) {
	case PVO_REPLY_INV_REQ:
		return PVO_AETH_NAK | PVO_NAK_INV_REQ;
	case PVO_REPLY_REM_ACCESS:
		return PVO_AETH_NAK | PVO_NAK_REM_ACCESS;
	default:
		return PVO_AETH_NAK | PVO_NAK_REM_OP;
	}
}

static void rc_input(struct pvo_qp *qp, const struct pvo_route *rt,
		     const struct pvo_pkt *pkt, const struct pvo_roce_hdr *h)
{
	int32_t diff = pvo_psn_diff(h->psn, qp->attr.rq_psn);
	struct pvo_reply r = { .code = PVO_REPLY_NONE };

	if (diff > 0) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		if (!qp->net.nak_sent) {
			qp->net.nak_sent = true;
			send_nak(qp, rt, qp->attr.rq_psn,
				 PVO_AETH_NAK | PVO_NAK_PSN_SEQ);
		}
		return;
	}
	if (diff < 0) {
		duplicate(qp, rt, pkt, h);
		return;
	}
	qp->net.nak_sent = false;
	pvo_resp_receive(qp, pkt, &r);
	switch (r.code) {
	case PVO_REPLY_NONE:
		break;
	case PVO_REPLY_ACK:
		if (pkt->op == PVO_OP_READ) {
			send_read_response(qp, rt, h->psn, &r);
		} else if (pkt->op == PVO_OP_CMP_SWAP ||
			   pkt->op == PVO_OP_FETCH_ADD) {
			save_atomic(qp, h->psn, r.atomic_orig);
			send_aeth(qp, rt, PVO_OPC_ATOMIC_ACK, h->psn,
				  PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID,
				  r.atomic_orig);
		} else if (h->ackreq) {
			send_ack(qp, rt, h->psn);
		}
		break;
	case PVO_REPLY_RNR:
		send_nak(qp, rt, h->psn, PVO_AETH_RNR_NAK | (r.rnr_timer & 0x1f));
		/* the rest of the message is dropped quietly until the
		 * requester comes back after its RNR back-off */
		qp->net.nak_sent = true;
		break;
	default:
		send_nak(qp, rt, h->psn, nak_syndrome(r.code));
		break;
	}
	if (r.responder_error)
		pvo_qp_set_error(qp, r.responder_event, false);
}

void pvo_ov_receiver_input(struct pvo_qp *qp, const struct pvo_inner *in,
			   const struct pvo_roce_hdr *h)
{
	uint8_t sgid[16], dgid[16];
	struct pvo_dma payload;
	struct pvo_route rt;
	struct pvo_pkt pkt;
	struct pvo_reply r = { .code = PVO_REPLY_NONE };
	int32_t diff;

	if (!pvo_qp_receives(qp)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_STATE);
		return;
	}
	to_pkt(qp, in, h, &pkt, sgid, dgid, &payload);
	switch (qp->type) {
	case PVO_QPT_RC:
	case PVO_QPT_UC:
		/* only the peer the QP is connected to */
		if (in->sip != pvo_gid_ipv4(qp->attr.path.dgid)) {
			pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PEER);
			return;
		}
		break;
	default:
		if (h->qkey != qp->attr.qkey) {
			pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_QKEY);
			return;
		}
		pvo_resp_receive(qp, &pkt, &r);
		return;
	}
	if (qp->type == PVO_QPT_RC) {
		if (reply_route(qp, in, &rt))
			rc_input(qp, &rt, &pkt, h);
		return;
	}
	/* UC: a lost packet loses the message; a first packet resyncs */
	diff = pvo_psn_diff(h->psn, qp->attr.rq_psn);
	if (diff != 0) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		/* the open message is lost; a SEND's receive WQE stays
		 * taken for the next message (resp.c) */
		qp->resp.msg.active = false;
		if (!pkt.first)
			return;
		qp->attr.rq_psn = h->psn;
	}
	pvo_resp_receive(qp, &pkt, &r);
	if (r.responder_error)
		pvo_qp_set_error(qp, r.responder_event, false);
}

void pvo_ov_receiver_resync(struct pvo_qp *qp)
{
	const struct pvo_gid_entry *sg =
	    &qp->vm->gids.e[qp->attr.path.sgid_index];
	struct pvo_route rt;

	if (!sg->valid ||
	    !pvo_overlay_route(qp->vm, pvo_gid_ipv4(sg->gid),
			       pvo_gid_ipv4(qp->attr.path.dgid), &rt))
		return;
	rt.in.sport = pvo_overlay_sport(qp);
	send_nak(qp, &rt, qp->attr.rq_psn, PVO_AETH_NAK | PVO_NAK_PSN_SEQ);
}
