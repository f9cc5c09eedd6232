// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Overlay sender (the requester's side on the wire): cuts a message into
 * packets at the path MTU with consecutive PSNs, the packets the engine
 * names (struct pvo_pkt's pkt_from .. pkt_to: a window, or a resend from
 * where the responder stands), and decodes what the responder answers
 * (ACKs, NAKs, READ responses, atomic ACKs) for the engine's completer,
 * which decides what they mean (engine/sw/comp.c).
 */
#include <arpa/inet.h>
#include <string.h>

#include "overlay.h"
#include "qp.h"
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

/* The PSN after the last one an ACK may name; a migration's replay ends
 * once the requester has sent that far again. */
static uint32_t answerable_end(struct pvo_qp *qp)
{
	uint32_t end = pvo_req_sent_end(qp);

	if (qp->net.replay && pvo_psn_diff(end, qp->net.replay_end) >= 0)
		qp->net.replay = false;
	return qp->net.replay ? qp->net.replay_end : end;
}

uint32_t pvo_ov_sender_sent_end(struct pvo_qp *qp)
{
	uint32_t end = pvo_req_sent_end(qp);

	if (qp->net.replay && pvo_psn_diff(qp->net.replay_end, end) > 0)
		end = qp->net.replay_end;
	return end;
}

/* What an AETH's syndrome says, in the engine's terms. */
static void decode_aeth(uint8_t syn, struct pvo_reply *r)
{
	switch (PVO_AETH_KIND(syn)) {
	case PVO_AETH_ACK:
		r->code = PVO_REPLY_ACK;
		return;
	case PVO_AETH_RNR_NAK:
		r->code = PVO_REPLY_RNR;
		r->rnr_timer = syn & 0x1f;
		return;
	case PVO_AETH_NAK:
		break;
	default:
		r->code = PVO_REPLY_NONE; /* reserved: only its PSN counts */
		return;
	}
	switch (syn & 0x1f) {
	case PVO_NAK_PSN_SEQ:
		r->code = PVO_REPLY_PSN_SEQ;
		return;
	case PVO_NAK_INV_REQ:
	case PVO_NAK_INV_RD_REQ:
		r->code = PVO_REPLY_INV_REQ;
		return;
	case PVO_NAK_REM_ACCESS:
		r->code = PVO_REPLY_REM_ACCESS;
		return;
	default:
		r->code = PVO_REPLY_REM_OP;
		return;
	}
}

void pvo_ov_sender_input(struct pvo_qp *qp, const struct pvo_inner *in,
			 const struct pvo_roce_hdr *h)
{
	unsigned int f = pvo_roce_flags(h->opcode);
	struct pvo_reply r = { .code = PVO_REPLY_ACK, .psn = h->psn };

	/* responses come only from the peer this RC QP is connected to */
	if (in->sip != pvo_gid_ipv4(qp->attr.path.dgid)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PEER);
		return;
	}
	if (f & PVO_RH_AETH) {
		decode_aeth(h->syndrome, &r);
		r.msn = h->msn;
	}
	switch (h->opcode) {
	case PVO_OPC_ACK:
		r.kind = PVO_ANS_AETH;
		r.sent_end = answerable_end(qp);
		break;
	case PVO_OPC_ATOMIC_ACK:
		r.kind = PVO_ANS_ATOMIC_ACK;
		r.atomic_orig = h->orig;
		break;
	case PVO_OPC_READ_RESP_FIRST:
	case PVO_OPC_READ_RESP_MIDDLE:
	case PVO_OPC_READ_RESP_LAST:
	case PVO_OPC_READ_RESP_ONLY:
		r.kind = PVO_ANS_READ_RESP;
		r.last = f & PVO_RH_LAST;
		r.payload = h->payload;
		r.payload_len = h->payload_len;
		break;
	default:
		return; /* no other response decodes */
	}
	if (!pvo_comp_reply(qp, &r))
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
}
