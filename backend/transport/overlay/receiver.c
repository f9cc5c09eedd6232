// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Overlay receiver (the responder's side on the wire): turns a request
 * packet into a struct pvo_pkt for the responder (resp.c) after the
 * wire-level checks, and answers on the wire.
 *
 *   RC   PSN must be the expected one. Ahead: one PSN sequence NAK per gap.
 *        Behind (a retransmission): SEND / WRITE are acknowledged again,
 *        a READ re-request is answered from the READ it repeats (the
 *        part asked for, never more), an atomic gets its saved result
 *        (never executed twice). ACKs only where the requester asked
 *        (AckReq), NAKs at once. READ responses go a burst per turn of
 *        the loop (see "READ responses" below).
 *   UC   a gap drops the rest of the message; a first packet resyncs.
 *   UD   Q_Key checked, no PSN.
 */
#include <arpa/inet.h>
#include <string.h>

#include "device.h"
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
	uint64_t turn; /* receive callbacks so far: READ bursts' budget */
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

void pvo_ov_receiver_turn(void)
{
	pending()->turn++;
}

void pvo_ov_receiver_forget(struct pvo_qp *qp)
{
	struct pending_acks *pa = pending();

	if (ack_waiting(pa, qp))
		pa->a[qp->net.ack_slot].qp = NULL;
	pvo_timer_destroy(&qp->net.rd_timer);
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

/*
 * READ responses. A READ of up to 2 GiB is answered by a packet per path
 * MTU and nothing acknowledges them, so a QP sends at most READ_BURST
 * response packets per turn of the loop (a receive callback, or its
 * zero-delay timer) and the rest on the next turns, oldest READ first:
 * responses go in PSN order. The QP keeps its last PVO_READ_RES READs
 * (its responder resources, as IB and rxe do): at most
 * max_dest_rd_atomic of them sending at once, a further READ gets an
 * Invalid Request NAK; a re-request (a duplicate READ) restarts the READ
 * it repeats from its own PSN, for what it names of that READ and never
 * more. While responses are still going out, the QP takes no other
 * request (an ACK or NAK for it would overtake them): the requester
 * sends it again. A QP that leaves the receiving states, is frozen for a
 * migration or destroyed stops sending; the requester asks again for
 * what it lacks.
 */

/* One transmit batch (overlay.c's BATCH): a turn's responses of a QP go
 * to the kernel in one sendmmsg, 64 KiB of data at 1 KiB MTU, 256 KiB at
 * 4 KiB; a callback's copy stays that small while a READ still moves a
 * whole batch per turn. */
#define READ_BURST 64

G_STATIC_ASSERT(PVO_READ_RES >= PVO_DEV_MAX_RD_ATOM);

static void rd_resume(void *opaque);

/* How far behind rq_psn the READ starts (its age in PSNs). */
static int32_t rd_age(const struct pvo_qp *qp, const struct pvo_read_res *res)
{
	return pvo_psn_diff(qp->attr.rq_psn, res->psn);
}

static bool rd_sending(const struct pvo_read_res *res)
{
	return res->valid && res->next < res->end;
}

/* The oldest READ with responses still to send: responses go in PSN
 * order. */
static struct pvo_read_res *rd_oldest_busy(struct pvo_qp *qp)
{
	struct pvo_read_res *best = NULL;
	unsigned int i;

	for (i = 0; i < PVO_READ_RES; i++) {
		struct pvo_read_res *res = &qp->net.rd[i];

		if (rd_sending(res) &&
		    (!best || rd_age(qp, res) > rd_age(qp, best)))
			best = res;
	}
	return best;
}

/* Where a new READ is kept: a free place, else the oldest READ that is
 * done sending (rd_admit leaves one). */
static struct pvo_read_res *rd_slot(struct pvo_qp *qp)
{
	struct pvo_read_res *best = NULL;
	unsigned int i;

	for (i = 0; i < PVO_READ_RES; i++) {
		struct pvo_read_res *res = &qp->net.rd[i];

		if (!res->valid)
			return res;
		if (!rd_sending(res) &&
		    (!best || rd_age(qp, res) > rd_age(qp, best)))
			best = res;
	}
	return best ? best : &qp->net.rd[0];
}

static unsigned int rd_busy(const struct pvo_qp *qp)
{
	unsigned int i, n = 0;

	for (i = 0; i < PVO_READ_RES; i++)
		n += rd_sending(&qp->net.rd[i]);
	return n;
}

/* The kept READ that PSN psn answers, if any. */
static struct pvo_read_res *rd_find(struct pvo_qp *qp, uint32_t psn)
{
	unsigned int i;

	for (i = 0; i < PVO_READ_RES; i++) {
		struct pvo_read_res *res = &qp->net.rd[i];
		int32_t d = pvo_psn_diff(psn, res->psn);

		if (res->valid && d >= 0 && (uint32_t)d < res->npkts)
			return res;
	}
	return NULL;
}

/* No more responses for now; the READs stay for re-requests. */
static void rd_stop(struct pvo_qp *qp)
{
	unsigned int i;

	for (i = 0; i < PVO_READ_RES; i++)
		qp->net.rd[i].next = qp->net.rd[i].end;
	pvo_timer_cancel(&qp->net.rd_timer);
}

/* What is left of this turn's READ_BURST for qp in a receive callback. */
static uint32_t turn_budget(struct pvo_qp *qp)
{
	struct pending_acks *pa = pending();

	if (qp->net.rd_turn != pa->turn) {
		qp->net.rd_turn = pa->turn;
		qp->net.rd_sent = 0;
	}
	return READ_BURST - MIN(qp->net.rd_sent, READ_BURST);
}

/*
 * Response packets [next, next + n) of res. The READ's memory is looked
 * up again for each burst (the MR may be gone by now): if it is, the
 * requester gets a remote access NAK at the PSN of the first response
 * not sent and the QP stops. False if the responses stopped.
 */
static bool rd_send(struct pvo_qp *qp, const struct pvo_route *rt,
		    struct pvo_read_res *res, uint32_t n)
{
	uint32_t mtu = pvo_qp_mtu_bytes(qp);
	uint64_t base = (uint64_t)res->next * mtu;
	struct pvo_reply r = { .code = PVO_REPLY_NONE };
	struct pvo_pkt sub = {
		.rkey = res->rkey,
		.va = res->va + base,
		.dma_len = MIN(res->stop, base + (uint64_t)n * mtu) -
			   MIN(res->stop, base),
	};
	uint32_t i;

	pvo_resp_read(qp, &sub, &r);
	if (r.code != PVO_REPLY_ACK) {
		send_aeth(qp, rt, PVO_OPC_ACK, pvo_psn_add(res->psn, res->next),
			  nak_syndrome(r.code), 0);
		rd_stop(qp);
		if (r.responder_error)
			pvo_qp_set_error(qp, r.responder_event, false);
		return false;
	}
	ack_first(qp);
	for (i = 0; i < n; i++) {
		uint32_t k = res->next;
		uint64_t off = (uint64_t)k * mtu;
		uint32_t plen = MIN(mtu, res->stop - MIN(off, res->stop));
		bool first = k == res->from, last = k == res->end - 1;
		struct pvo_roce_hdr h = {
			.pkey = PVO_ROCE_PKEY_DEFAULT,
			.dqpn = qp->attr.dest_qpn,
			.psn = pvo_psn_add(res->psn, k),
			.syndrome = PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID,
			.msn = res->msn,
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
			pvo_dma_seek(r.data, off - base);
			if (!pvo_dma_copy(&dst, r.data, plen)) {
				/* the MR left guest RAM: no answer */
				rd_stop(qp);
				return false;
			}
		}
		memset(p + hl + plen, 0, h.pad);
		pvo_overlay_pkt_send(rt, hl + plen + h.pad, qp);
		res->next++;
	}
	return true;
}

/* Sends up to budget response packets of qp's READs, oldest first, and
 * leaves the rest to the next turn. Returns the packets sent. */
static uint32_t rd_pump(struct pvo_qp *qp, const struct pvo_route *rt,
			uint32_t budget)
{
	struct pvo_read_res *res;
	uint32_t n, sent = 0;

	while (sent < budget && (res = rd_oldest_busy(qp))) {
		n = MIN(budget - sent, res->end - res->next);
		if (!rd_send(qp, rt, res, n))
			return sent;
		sent += n;
	}
	if (rd_oldest_busy(qp)) {
		if (!qp->net.rd_timer.fn)
			pvo_timer_init(&qp->net.rd_timer, rd_resume, qp);
		if (!pvo_timer_armed(&qp->net.rd_timer))
			pvo_timer_arm(&qp->net.rd_timer, 0);
	}
	return sent;
}

/* From a receive callback: within the QP's budget of this turn. */
static void rd_pump_turn(struct pvo_qp *qp, const struct pvo_route *rt)
{
	qp->net.rd_sent += rd_pump(qp, rt, turn_budget(qp));
}

/* The route of the QP's answers outside a request: its path. */
static bool path_route(struct pvo_qp *qp, struct pvo_route *rt)
{
	const struct pvo_gid_entry *sg =
	    &qp->vm->gids.e[qp->attr.path.sgid_index];

	if (!sg->valid ||
	    !pvo_overlay_route(qp->vm, pvo_gid_ipv4(sg->gid),
			       pvo_gid_ipv4(qp->attr.path.dgid), rt))
		return false;
	rt->in.sport = pvo_overlay_sport(qp);
	return true;
}

static void rd_resume(void *opaque)
{
	struct pvo_qp *qp = opaque;
	struct pvo_route rt;

	pvo_loop_serve(qp);
	if (!pvo_qp_receives(qp) || qp->vm->frozen || qp->vm->moved_away ||
	    !pvo_overlay_enabled() || !path_route(qp, &rt)) {
		rd_stop(qp);
		return;
	}
	rt.in.tos = qp->net.rd_tos;
	rd_pump(qp, &rt, READ_BURST);
	pvo_overlay_flush();
}

/* A READ the responder accepted: it takes the oldest kept READ's place
 * and its responses start. */
static void rd_start(struct pvo_qp *qp, const struct pvo_route *rt,
		     const struct pvo_pkt *pkt)
{
	struct pvo_read_res *res = rd_slot(qp);
	uint32_t npkts = pvo_packets(pkt->dma_len, pvo_qp_mtu_bytes(qp));

	*res = (struct pvo_read_res){
		.valid = true,
		.psn = pkt->psn,
		.npkts = npkts,
		.va = pkt->va,
		.len = pkt->dma_len,
		.rkey = pkt->rkey,
		.msn = qp->resp.msn,
		.end = npkts,
		.stop = pkt->dma_len,
	};
	qp->net.rd_tos = rt->in.tos;
	rd_pump_turn(qp, rt);
}

/* Room for one more READ sending (IB: responder resources); false with
 * an Invalid Request NAK, which ends the QP: rxe's answer to too many
 * READ / atomic requests (it recycles the oldest resource instead, but
 * the requester broke max_dest_rd_atomic either way). */
static bool rd_admit(struct pvo_qp *qp, const struct pvo_route *rt,
		     uint32_t psn)
{
	if (!qp->attr.max_dest_rd_atomic ||
	    rd_busy(qp) < qp->attr.max_dest_rd_atomic)
		return true; /* 0: pvo_resp_read refuses it */
	send_aeth(qp, rt, PVO_OPC_ACK, psn, PVO_AETH_NAK | PVO_NAK_INV_REQ, 0);
	pvo_qp_set_error(qp, PVO_EV_QP_REQ_ERR, false);
	return false;
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

bool pvo_ov_atomic_saved(const struct pvo_qp *qp, uint32_t psn,
			 uint64_t *orig)
{
	unsigned int i;

	for (i = 0; i < PVO_ATOMIC_REPLAY; i++)
		if (qp->net.atomics[i].valid &&
		    qp->net.atomics[i].psn == psn) {
			*orig = qp->net.atomics[i].orig;
			return true;
		}
	return false;
}

/*
 * A READ re-request matching no kept READ. After a migration the READs
 * before it are not known here (they are not in the stream): one that
 * names only PSNs from before is executed again as a new READ, for the
 * PSNs it names (reads have no side effects; checked anew). Any other is
 * dropped, as rxe drops a re-request it cannot match: one that reaches
 * past rq_psn names PSNs not used yet (taking them would ACK and drop
 * the requests that come with them).
 */
static void dup_read_unknown(struct pvo_qp *qp, const struct pvo_route *rt,
			     const struct pvo_pkt *pkt)
{
	struct pvo_reply r = { .code = PVO_REPLY_NONE };
	uint32_t end = pvo_psn_add(
	    pkt->psn, pvo_packets(pkt->dma_len, pvo_qp_mtu_bytes(qp)));

	if (!qp->net.rd_unknown ||
	    pvo_psn_diff(end, qp->net.rd_floor) > 0 ||
	    pvo_psn_diff(end, qp->attr.rq_psn) > 0) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		return;
	}
	if (rd_busy(qp) >= qp->attr.max_dest_rd_atomic) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_READ_BUSY);
		return;
	}
	pvo_resp_read(qp, pkt, &r);
	if (r.code == PVO_REPLY_ACK)
		rd_start(qp, rt, pkt);
}

/*
 * A READ re-request: the requester asks again from the first response
 * packet it lacks. It may name that READ's rest or a part of it, at the
 * same place (its PSN's offset into the READ), never more: the READ's
 * responses start again from there.
 */
static void dup_read(struct pvo_qp *qp, const struct pvo_route *rt,
		     const struct pvo_pkt *pkt)
{
	struct pvo_read_res *res = rd_find(qp, pkt->psn);
	uint32_t mtu = pvo_qp_mtu_bytes(qp), k;
	uint64_t off;

	if (!res) {
		dup_read_unknown(qp, rt, pkt);
		return;
	}
	k = (uint32_t)pvo_psn_diff(pkt->psn, res->psn);
	off = (uint64_t)k * mtu;
	if (pkt->rkey != res->rkey || pkt->va != res->va + off ||
	    pkt->dma_len > res->len - MIN(off, res->len) ||
	    (!pkt->dma_len && res->len)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		return;
	}
	if (res->next == res->end &&
	    rd_busy(qp) >= qp->attr.max_dest_rd_atomic) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_READ_BUSY);
		return;
	}
	res->from = res->next = k;
	res->end = k + pvo_packets(pkt->dma_len, mtu);
	res->stop = off + pkt->dma_len;
	qp->net.rd_tos = rt->in.tos;
	rd_pump_turn(qp, rt);
}

/* A retransmitted request (PSN behind the expected one). */
static void duplicate(struct pvo_qp *qp, const struct pvo_route *rt,
		      const struct pvo_pkt *pkt, const struct pvo_roce_hdr *h)
{
	uint64_t orig;

	if (pkt->op == PVO_OP_READ) {
		dup_read(qp, rt, pkt);
		return;
	}
	/* its answer would overtake the READ responses still to go */
	if (rd_oldest_busy(qp)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_READ_BUSY);
		return;
	}
	switch (pkt->op) {
	case PVO_OP_SEND:
	case PVO_OP_WRITE:
		/* done already: say so again where asked */
		if (h->ackreq)
			send_ack(qp, rt, pvo_psn_add(qp->attr.rq_psn, -1));
		return;
	default:
		if (pvo_ov_atomic_saved(qp, h->psn, &orig)) {
			send_aeth(qp, rt, PVO_OPC_ATOMIC_ACK, h->psn,
				  PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID,
				  orig);
			return;
		}
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		return;
	}
}

static void rc_input(struct pvo_qp *qp, const struct pvo_route *rt,
		     const struct pvo_pkt *pkt, const struct pvo_roce_hdr *h)
{
	int32_t diff = pvo_psn_diff(h->psn, qp->attr.rq_psn);
	struct pvo_reply r = { .code = PVO_REPLY_NONE };
	bool busy = rd_oldest_busy(qp) != NULL;

	if (diff > 0) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_BAD_PSN);
		/* a NAK now would overtake the READ responses still to go */
		if (!qp->net.nak_sent && !busy) {
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
	if (pkt->op == PVO_OP_READ) {
		if (!rd_admit(qp, rt, h->psn))
			return;
	} else if (busy) {
		/* its answer would overtake the READ responses */
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_READ_BUSY);
		return;
	}
	qp->net.nak_sent = false;
	qp->net.rd_unknown = false;
	pvo_resp_receive(qp, pkt, &r);
	switch (r.code) {
	case PVO_REPLY_NONE:
		break;
	case PVO_REPLY_ACK:
		if (pkt->op == PVO_OP_READ) {
			rd_start(qp, rt, pkt);
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

	pvo_loop_serve(qp);
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
	struct pvo_route rt;

	if (path_route(qp, &rt))
		send_nak(qp, &rt, qp->attr.rq_psn,
			 PVO_AETH_NAK | PVO_NAK_PSN_SEQ);
}
