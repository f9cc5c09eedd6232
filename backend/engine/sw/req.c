// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Requester: takes send WQEs off the SQ in order, checks them against the
 * QP and the local MRs (local errors complete right here), and sends each
 * as one message through the transport. One WQE is active, the oldest not
 * completed: the local transport answers it synchronously; over the wire,
 * RC SENDs and WRITEs behind it go ahead within a window of packets, and
 * the requester says which packets of the active one go each time (cut):
 * at most a slice (PVO_REQ_SLICE) per step, the rest on later steps, so a
 * large WQE never holds the loop.
 * What the answers mean is the completer's (comp.c). A run is a state
 * machine (enum pvo_req_state in sw_trace.h).
 */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "ah.h"
#include "engine.h"
#include "guest_mem.h"
#include "loop.h"
#include "mr.h"
#include "mw.h"
#include "profile.h"
#include "qp.h"
#include "sw_trace.h"
#include "transport.h"
#include "vm.h"

#define MAX_MSG_LEN (1ull << 31) /* port max_msg_sz */

static const char *const state_names[PVO_REQST_NSTATES] = {
	[PVO_REQST_NEXT] = "NEXT",   [PVO_REQST_RESEND] = "RESEND",
	[PVO_REQST_AHEAD] = "AHEAD", [PVO_REQST_FETCH] = "FETCH",
	[PVO_REQST_SEND] = "SEND",   [PVO_REQST_SLICE] = "SLICE",
	[PVO_REQST_FLUSH] = "FLUSH",
	[PVO_REQST_YIELD] = "YIELD", [PVO_REQST_DONE] = "DONE",
};

const char *pvo_req_state_name(enum pvo_req_state s)
{
	if ((unsigned int)s >= PVO_REQST_NSTATES || !state_names[s])
		return "?";
	return state_names[s];
}

static bool opcode_valid(const struct pvo_qp *qp, uint8_t op)
{
	switch (op) {
	case PVO_WR_SEND:
	case PVO_WR_SEND_WITH_IMM:
	case PVO_WR_LOCAL_INV:
		return true;
	case PVO_WR_SEND_WITH_INV: /* IB: RC (and XRC) only */
		return qp->type == PVO_QPT_RC;
	case PVO_WR_REG_MR:
		/* page lists are guest-physical */
		return qp->ctx == PVO_CTX_KERNEL;
	case PVO_WR_BIND_MW: /* windows serve RDMA: RC and UC (IB) */
		return qp->type == PVO_QPT_RC || qp->type == PVO_QPT_UC;
	case PVO_WR_RDMA_WRITE:
	case PVO_WR_RDMA_WRITE_WITH_IMM:
		return qp->type == PVO_QPT_RC || qp->type == PVO_QPT_UC;
	case PVO_WR_RDMA_READ:
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		return qp->type == PVO_QPT_RC;
	}
	return false;
}

/* Operations on local keys: no message, no data. */
static bool is_local(uint8_t op)
{
	return op == PVO_WR_LOCAL_INV || op == PVO_WR_REG_MR ||
	       op == PVO_WR_BIND_MW;
}

static bool is_atomic(uint8_t op)
{
	return op == PVO_WR_ATOMIC_CMP_AND_SWP ||
	       op == PVO_WR_ATOMIC_FETCH_AND_ADD;
}

/* Decodes and checks the WQE in buf (a copy of the slot). */
static enum pvo_wc_status parse_wqe(struct pvo_qp *qp, const uint8_t *buf,
				    struct pvo_swqe *w)
{
	const struct pvo_send_wqe *h = (const void *)buf;
	struct pvo_vm *vm = qp->vm;
	enum pvo_wc_status st;
	uint32_t inline_len = le32toh(h->inline_len);
	bool writes_local;

	w->wr_id = h->wr_id; /* opaque: handed back as is */
	w->opcode = h->opcode;
	w->flags = h->flags;
	w->signaled = (h->flags & PVO_WQE_F_SIGNALED) || qp->sq_sig_all;
	w->imm_data = h->imm_data;
	w->length = 0;
	pvo_dma_init(&w->dma, vm);
	if (!opcode_valid(qp, h->opcode))
		return PVO_WC_LOC_QP_OP_ERR;
	w->invalidate_rkey = le32toh(h->invalidate_rkey);
	if (h->opcode == PVO_WR_REG_MR) {
		w->reg.iova = le64toh(h->u.reg.iova);
		w->reg.length = le64toh(h->u.reg.length);
		w->reg.pages = le64toh(h->u.reg.pages);
		w->reg.key = le32toh(h->u.reg.key);
		w->reg.access = le32toh(h->u.reg.access);
		w->reg.npages = le32toh(h->u.reg.npages);
	} else if (h->opcode == PVO_WR_BIND_MW) {
		w->bind.addr = le64toh(h->u.bind.addr);
		w->bind.length = le64toh(h->u.bind.length);
		w->bind.rkey = le32toh(h->u.bind.rkey);
		w->bind.lkey = le32toh(h->u.bind.mr_lkey);
		w->bind.access = le32toh(h->u.bind.access);
	}
	if (is_local(h->opcode))
		return PVO_WC_SUCCESS;
	writes_local = h->opcode == PVO_WR_RDMA_READ || is_atomic(h->opcode);

	if (h->flags & PVO_WQE_F_INLINE) {
		if (writes_local)
			return PVO_WC_LOC_QP_OP_ERR;
		if (inline_len > qp->max_inline)
			return PVO_WC_LOC_LEN_ERR;
		memcpy(w->inline_data, buf + sizeof(*h), inline_len);
		pvo_dma_add(&w->dma, PVO_DMA_HOST, NULL, 0, w->inline_data,
			    inline_len);
	} else {
		if (h->num_sge > qp->max_send_sge)
			return PVO_WC_LOC_QP_OP_ERR;
		st = pvo_dma_from_sges(
		    &w->dma, vm, qp->pd, qp->ctx == PVO_CTX_KERNEL,
		    writes_local ? PVO_ACCESS_LOCAL_WRITE : 0,
		    (const void *)(buf + sizeof(*h)), h->num_sge);
		if (st)
			return st;
	}
	w->length = w->dma.len;
	if (w->length > MAX_MSG_LEN)
		return PVO_WC_LOC_LEN_ERR;

	switch (h->opcode) {
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		if (w->length != 8)
			return PVO_WC_LOC_LEN_ERR;
		w->remote_addr = le64toh(h->u.atomic.remote_addr);
		w->compare_add = le64toh(h->u.atomic.compare_add);
		w->swap = le64toh(h->u.atomic.swap);
		w->rkey = le32toh(h->u.atomic.rkey);
		break;
	case PVO_WR_RDMA_WRITE:
	case PVO_WR_RDMA_WRITE_WITH_IMM:
	case PVO_WR_RDMA_READ:
		w->remote_addr = le64toh(h->u.rdma.remote_addr);
		w->rkey = le32toh(h->u.rdma.rkey);
		break;
	}

	if (qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI) {
		struct pvo_ah *ah =
		    pvo_table_get(&vm->ahs, le32toh(h->u.ud.ah), qp->ctx);

		if (!ah || ah->pd != qp->pd)
			return PVO_WC_LOC_QP_OP_ERR;
		if (w->length > pvo_qp_mtu_bytes(qp))
			return PVO_WC_LOC_LEN_ERR;
		w->path = ah->path;
		w->remote_qpn = le32toh(h->u.ud.remote_qpn) & PVO_QPN_MAX;
		w->remote_qkey = le32toh(h->u.ud.remote_qkey);
	} else {
		w->path = qp->attr.path;
		w->remote_qpn = qp->attr.dest_qpn;
	}
	return PVO_WC_SUCCESS;
}

/* FETCH_LOCAL: a local operation, done and completed */
enum fetch_result { FETCH_NONE, FETCH_SEND, FETCH_FAILED, FETCH_LOCAL };

/* Bytes behind a send WQE's header that it uses (parse_wqe refuses
 * counts above the QP's limits, which are at most these). */
static size_t send_tail_len(const void *hdr)
{
	const struct pvo_send_wqe *h = hdr;

	if (is_local(h->opcode))
		return 0;
	if (h->flags & PVO_WQE_F_INLINE)
		return MIN(le32toh(h->inline_len), PVO_DEV_MAX_INLINE);
	return MIN(h->num_sge, PVO_DEV_MAX_SGE) * sizeof(struct pvo_sge);
}

/* Reads and checks SQ[idx] into w. */
static enum fetch_result read_wqe(struct pvo_qp *qp, uint32_t idx,
				  struct pvo_swqe *w, enum pvo_wc_status *st)
{
	/* header + the largest tail it can use */
	uint8_t buf[sizeof(struct pvo_send_wqe) +
		    MAX(PVO_DEV_MAX_SGE * sizeof(struct pvo_sge),
			PVO_DEV_MAX_INLINE)] __attribute__((aligned(8)));
	struct pvo_vm *vm = qp->vm;
	uint32_t avail;

	if (!pvo_ring_produced(vm, &qp->sq, qp->sq_cons, idx,
			       &qp->req.prod_seen, &avail)) {
		pvo_vm_warn(vm,
			    "QP 0x%x: SQ producer is not within %u of the "
			    "consumer %u: QP to error",
			    qp->qpn, qp->sq.entries, qp->sq_cons);
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		return FETCH_FAILED;
	}
	if (!avail)
		return FETCH_NONE;
	w->idx = idx;
	if (!pvo_ring_read_wqe(vm, &qp->sq, idx, buf,
			       sizeof(struct pvo_send_wqe), send_tail_len)) {
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		return FETCH_FAILED;
	}
	*st = parse_wqe(qp, buf, w);
	w->npkts = is_local(w->opcode) ? 0
				       : pvo_packets(w->length,
						     pvo_qp_mtu_bytes(qp));
	return FETCH_SEND;
}

static enum pvo_wc_status local_op(struct pvo_qp *qp,
				    const struct pvo_swqe *w)
{
	switch (w->opcode) {
	case PVO_WR_REG_MR:
		return pvo_mr_fast_reg(qp->vm, qp->pd, w->reg.key, w->reg.iova,
				       w->reg.length, w->reg.access,
				       w->reg.pages, w->reg.npages);
	case PVO_WR_BIND_MW:
		return pvo_mw_bind(qp->vm, qp->pd, qp->qpn, w->bind.rkey,
				   w->bind.lkey, w->bind.addr, w->bind.length,
				   w->bind.access);
	default:
		return pvo_key_invalidate(qp->vm, qp->pd, 0,
					  w->invalidate_rkey);
	}
}

/* The active WQE starts as a message; on_wire: it was sent ahead, whole. */
static void new_message(struct pvo_qp *qp, bool on_wire)
{
	struct pvo_req_pos *p = &qp->req.pos;

	qp->req.rnr_left = qp->attr.rnr_retry;
	qp->req.retry_left = qp->attr.retry_cnt;
	memset(p, 0, sizeof(*p));
	p->sent = on_wire;
	p->next_pkt = on_wire ? qp->req.wqe.npkts : 0;
}

static enum fetch_result fetch(struct pvo_qp *qp)
{
	struct pvo_swqe *w = &qp->req.wqe;
	enum pvo_wc_status st = PVO_WC_SUCCESS;
	enum fetch_result r;

	pvo_prof_begin(PVO_PROF_OF(qp));
	r = read_wqe(qp, qp->sq_cons, w, &st);
	if (r != FETCH_SEND) {
		pvo_prof_cancel();
		return r;
	}
	pvo_prof_mark(PVO_PROF_FETCH);
	qp->req.active = true;
	w->psn = qp->attr.sq_psn;
	if (!st && is_local(w->opcode)) {
		/* in SQ order: every WQE before it has completed */
		st = local_op(qp, w);
		pvo_comp_complete(qp, st);
		return FETCH_LOCAL;
	}
	if (st) {
		pvo_comp_complete(qp, st);
		return FETCH_FAILED;
	}
	new_message(qp, false);
	return FETCH_SEND;
}

static bool pipelined(uint8_t opcode)
{
	return opcode == PVO_WR_SEND || opcode == PVO_WR_SEND_WITH_IMM ||
	       opcode == PVO_WR_SEND_WITH_INV || opcode == PVO_WR_RDMA_WRITE ||
	       opcode == PVO_WR_RDMA_WRITE_WITH_IMM;
}

/* Packets of the path MTU in a slice: at least one. */
static uint32_t slice_pkts(struct pvo_qp *qp)
{
	return MAX(1u, PVO_REQ_SLICE / pvo_qp_mtu_bytes(qp));
}

/* RC over a transport that answers later (the wire): the active WQE goes
 * within a window of packets beyond the last ACK. A transport that
 * answers each slice before send returns needs none. */
static bool windowed(struct pvo_qp *qp)
{
	return qp->type == PVO_QPT_RC && pvo_transport_can_send_ahead(qp);
}

static uint64_t send_wqe(struct pvo_qp *qp, struct pvo_swqe *w, bool ahead,
			 uint32_t again);

/*
 * Overlay RC: sends the next WQE before the active one completed, while
 * the window has room. Only SENDs and WRITEs go ahead (a READ or atomic
 * waits to be the active WQE); a WQE that fails its local checks is left
 * for when it is the active one, so completions stay in order.
 */
static bool send_ahead(struct pvo_qp *qp)
{
	struct pvo_swqe *last, *w;
	enum pvo_wc_status st = PVO_WC_SUCCESS;
	uint32_t pkts = qp->req.wqe.npkts;
	unsigned int i;

	/* the active WQE must be out whole */
	if (qp->type != PVO_QPT_RC || qp->req.wait == PVO_WAIT_RNR ||
	    !pipelined(qp->req.wqe.opcode) || !qp->req.pos.sent ||
	    qp->req.pos.next_pkt < qp->req.wqe.npkts ||
	    !pvo_transport_can_send_ahead(qp))
		return false;
	for (i = 0; i < qp->req.ahead_sent; i++)
		pkts += pvo_req_ahead(qp, i)->npkts;
	if (pkts >= pvo_req_window(qp))
		return false;
	if (qp->req.ahead_sent < qp->req.nahead) {
		/* after a go-back-N: again, in order, as the window allows */
		w = pvo_req_ahead(qp, qp->req.ahead_sent++);
		send_wqe(qp, w, true, w->npkts);
		return true;
	}
	if (qp->req.nahead >= PVO_REQ_AHEAD)
		return false;
	if (!qp->req.ahead)
		qp->req.ahead = g_new(struct pvo_swqe, PVO_REQ_AHEAD);
	w = pvo_req_ahead(qp, qp->req.nahead);
	/* a WQE of more than a slice waits to be the active one, which
	 * goes in slices */
	if (read_wqe(qp, qp->sq_cons + 1 + qp->req.nahead, w, &st) !=
		FETCH_SEND ||
	    st || !pipelined(w->opcode) || w->length > PVO_REQ_SLICE)
		return false;
	last = qp->req.nahead ? pvo_req_ahead(qp, qp->req.nahead - 1)
			      : &qp->req.wqe;
	w->psn = pvo_psn_add(last->psn, last->npkts);
	qp->req.nahead++;
	qp->req.ahead_sent++;
	send_wqe(qp, w, true, 0);
	return true;
}

uint32_t pvo_req_window(struct pvo_qp *qp)
{
	if (!qp->req.window)
		qp->req.window = PVO_REQ_WINDOW_START;
	return qp->req.window;
}

void pvo_req_window_adjust(struct pvo_qp *qp, bool loss, uint32_t acked)
{
	uint32_t w = pvo_req_window(qp);

	if (loss)
		w = MAX(PVO_REQ_WINDOW_MIN, w / 2);
	else
		w = MIN(PVO_REQ_AHEAD_PKTS, w + acked);
	qp->req.window = w;
}

void pvo_req_promote(struct pvo_qp *qp)
{
	if (!qp->req.nahead)
		return;
	qp->req.wqe = *pvo_req_ahead(qp, 0);
	qp->req.ahead_head = (qp->req.ahead_head + 1) % PVO_REQ_AHEAD;
	qp->req.nahead--;
	qp->req.active = true;
	if (qp->req.ahead_sent) {
		/* it is on the wire already */
		qp->req.ahead_sent--;
		new_message(qp, true);
		return;
	}
	new_message(qp, false);
	/* a go-back-N came before its turn to go again: pvo_req_run
	 * sends it (unless the ACK at hand completes it first) */
	qp->req.resend_active = true;
}

void pvo_req_forget_ahead(struct pvo_qp *qp)
{
	qp->req.nahead = 0;
	qp->req.ahead_sent = 0;
	qp->req.resend_active = false;
}

void pvo_req_resend(struct pvo_qp *qp)
{
	/* Go-back-N: the responder dropped everything after the first
	 * packet it missed. The WQEs behind the active one stay where they
	 * are (an ACK may still name any PSN they were sent with) and go
	 * again, in order, as the window allows (send_ahead). */
	qp->req.ahead_sent = 0;
	pvo_req_send(qp);
}

void pvo_req_send(struct pvo_qp *qp)
{
	send_wqe(qp, &qp->req.wqe, false, 0);
}

/*
 * Whether the active WQE has a slice to go now: it went once, more of it
 * is to be sent and nothing it waits for stands in the way (an RNR
 * back-off; on the wire, the window; at once, any answer but an ACK).
 */
static bool more_slices(struct pvo_qp *qp)
{
	const struct pvo_swqe *w = &qp->req.wqe;
	const struct pvo_req_pos *p = &qp->req.pos;
	bool win = windowed(qp);

	if (!p->sent || qp->req.resend_active ||
	    qp->req.wait == PVO_WAIT_RNR ||
	    (!win && qp->req.wait != PVO_WAIT_NONE))
		return false;
	if (w->opcode == PVO_WR_RDMA_READ) /* on the wire: by responses */
		return !win && p->read_next < w->npkts;
	if (!pipelined(w->opcode) || p->next_pkt >= w->npkts)
		return false;
	return !win || p->next_pkt < p->acked + pvo_req_window(qp);
}

uint32_t pvo_req_sent_end(struct pvo_qp *qp)
{
	const struct pvo_swqe *last;

	if (!qp->req.active)
		return qp->attr.sq_psn;
	last = qp->req.nahead ? pvo_req_ahead(qp, qp->req.nahead - 1)
			      : &qp->req.wqe;
	return pvo_psn_add(last->psn, last->npkts);
}

/*
 * Which packets of the active WQE go now, for a transport that cuts it at
 * the path MTU (the local transport sends it whole): from where the
 * responder stands (go-back-N) or, when the window moved, from where the
 * last send ended, at most a window beyond the last ACK. Counts the
 * packets that go again.
 */
static void cut(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct pvo_req_pos *p = &qp->req.pos;
	uint32_t mtu = pvo_qp_mtu_bytes(qp), n, start, end;
	bool win = windowed(qp); /* a route lookup: once */

	switch (pkt->op) {
	case PVO_OP_READ:
		/* from the first response packet not yet placed, at most a
		 * window of it: a long READ is asked for in pieces, each a
		 * READ request of its own with the PSNs of its responses.
		 * Asking again within a piece goes to the piece's end, not
		 * past it: a duplicate READ that reaches beyond the PSNs its
		 * first request used is dropped (see duplicate() in the
		 * overlay's receiver.c; rxe drops it too). */
		n = pvo_packets(pkt->dma_len, mtu);
		start = p->read_next;
		pkt->pkt_from = start;
		/* a transport that answers at once copies each piece
		 * before send returns: a slice at most */
		pkt->pkt_to = start < p->read_end
				  ? p->read_end
				  : MIN(n, start + (win ? pvo_req_window(qp)
							: slice_pkts(qp)));
		/* a request goes whole: any but the first is a
		 * retransmission (so is every later piece's) */
		pkt->pkt_resent += p->sent;
		break;
	case PVO_OP_CMP_SWAP:
	case PVO_OP_FETCH_ADD:
		pkt->pkt_from = 0;
		pkt->pkt_to = 1;
		pkt->pkt_resent += p->sent;
		break;
	default: /* SEND, WRITE */
		n = pvo_packets(pkt->payload_len, mtu);
		start = MAX(p->more ? p->next_pkt : p->resend_pkt, p->acked);
		if (!win) {
			/* unreliable types go on where they were; RC
			 * answered at once from where the answer said */
			end = MIN(n, start + slice_pkts(qp));
		} else {
			end = MIN(n, p->acked + pvo_req_window(qp));
			if (end <= start)
				end = p->more ? start : MIN(n, start + 1);
			end = MIN(end, start + slice_pkts(qp));
		}
		pkt->pkt_from = start;
		pkt->pkt_to = end;
		pkt->pkt_resent +=
		    start < p->next_pkt ? MIN(end, p->next_pkt) - start : 0;
		break;
	}
}

/* A transport sent what cut() named: the active WQE stands there now. */
static void cut_sent(struct pvo_qp *qp, const struct pvo_pkt *pkt)
{
	struct pvo_req_pos *p = &qp->req.pos;

	if (pkt->op == PVO_OP_READ) {
		p->read_end = pkt->pkt_to;
	} else if (pkt->op == PVO_OP_SEND || pkt->op == PVO_OP_WRITE) {
		p->next_pkt = pkt->pkt_to;
		p->more = false;
	}
	p->sent = true;
	p->resend_pkt = 0;
}

/* Bytes of packets [from, to) of w at the path MTU. */
static uint64_t cut_bytes(struct pvo_qp *qp, const struct pvo_swqe *w,
			  uint32_t from, uint32_t to)
{
	uint64_t mtu = pvo_qp_mtu_bytes(qp);

	return MIN(w->length, to * mtu) - MIN(w->length, from * mtu);
}

/* Sends w (ahead: a WQE behind the active one, whole); again: packets
 * of it that go again besides what cut() counts. Returns the bytes of
 * it handed to the transport. */
static uint64_t send_wqe(struct pvo_qp *qp, struct pvo_swqe *w, bool ahead,
			 uint32_t again)
{
	struct pvo_req_pos *p = &qp->req.pos;
	struct pvo_vm *vm = qp->vm;
	const struct pvo_gid_entry *sgid = &vm->gids.e[w->path.sgid_index];
	struct pvo_pkt pkt = { 0 };
	bool backoff;

	/* The GID the path names was removed: nothing can be sent. */
	if (!sgid->valid) {
		struct pvo_reply none = { .code = PVO_REPLY_NONE };

		if (!ahead)
			pvo_comp_reply(qp, &none);
		return 0;
	}
	pkt.ahead = ahead;
	pkt.src_vm = vm;
	pkt.sgid = sgid->gid;
	pkt.smac = vm->cfg->mac;
	pkt.src_qpn = qp->qpn;
	pkt.qp_type = qp->type;
	pkt.dgid = w->path.dgid;
	pkt.dst_qpn = w->remote_qpn;
	/* IB: a WR Q_Key with the high bit set means the QP's Q_Key */
	pkt.qkey =
	    (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
	pkt.hop_limit = w->path.hop_limit;
	pkt.traffic_class = w->path.traffic_class;
	pkt.flow_label = w->path.flow_label;
	pkt.sl = w->path.sl;
	pkt.psn = w->psn;
	pkt.first = pkt.last = true;
	pkt.solicited = w->flags & PVO_WQE_F_SOLICITED;
	pkt.va = w->remote_addr;
	pkt.rkey = w->rkey;
	pkt.dma_len = w->length;
	pkt.compare_add = w->compare_add;
	pkt.swap = w->swap;
	switch (w->opcode) {
	case PVO_WR_SEND_WITH_IMM:
		pkt.has_imm = true;
		/* fallthrough */
	case PVO_WR_SEND:
		pkt.op = PVO_OP_SEND;
		break;
	case PVO_WR_SEND_WITH_INV:
		pkt.op = PVO_OP_SEND;
		pkt.has_inv = true;
		pkt.invalidate_rkey = w->invalidate_rkey;
		break;
	case PVO_WR_RDMA_WRITE_WITH_IMM:
		pkt.has_imm = true;
		/* fallthrough */
	case PVO_WR_RDMA_WRITE:
		pkt.op = PVO_OP_WRITE;
		break;
	case PVO_WR_RDMA_READ:
		pkt.op = PVO_OP_READ;
		break;
	case PVO_WR_ATOMIC_CMP_AND_SWP:
		pkt.op = PVO_OP_CMP_SWAP;
		break;
	default:
		pkt.op = PVO_OP_FETCH_ADD;
		break;
	}
	pkt.imm_data = w->imm_data;
	if (pkt.op == PVO_OP_SEND || pkt.op == PVO_OP_WRITE) {
		pvo_dma_seek(&w->dma, 0);
		pkt.payload = &w->dma;
		pkt.payload_len = w->length;
	}
	pkt.pkt_resent = again;
	if (ahead) { /* whole: at most a slice (send_ahead) */
		pkt.pkt_to = pvo_packets(pkt.payload_len, pvo_qp_mtu_bytes(qp));
		pvo_transport_send(qp, &pkt);
		return w->length;
	}
	cut(qp, &pkt);
	p->slice_from = pkt.pkt_from;
	p->slice_to = pkt.pkt_to;
	backoff = qp->req.wait == PVO_WAIT_RNR;
	pvo_transport_send(qp, &pkt);
	/* An answer at once may have completed it (then it is gone), or
	 * been an RNR NAK: then the slice goes again after the back-off,
	 * from where the answer said (pos.resend_pkt). */
	if (pkt.pkt_sent && qp->req.active && w->psn == pkt.psn &&
	    (backoff || qp->req.wait != PVO_WAIT_RNR))
		cut_sent(qp, &pkt);
	if (pkt.op == PVO_OP_SEND || pkt.op == PVO_OP_WRITE ||
	    pkt.op == PVO_OP_READ)
		return cut_bytes(qp, w, pkt.pkt_from, pkt.pkt_to);
	return w->length;
}

/*
 * One run does at most this much, then yields to the main loop (other
 * VMs' kicks and commands) and continues from a zero-delay timer: one
 * guest cannot hold the daemon with a full SQ of large WQEs, nor with
 * one large WQE (it goes a slice per step).
 *
 * A yield costs the loop an iteration and a system call (about 5 us on
 * a virtualised host, where 64 KiB WQEs then lost 40 % of their rate).
 * So a run that finds that the loop served nobody else since this QP's
 * last run (pvo_loop_served: its own yield, or a doorbell right after
 * its last run) goes on past its budget, a budget at a time, for up to
 * RUN_ALONE_US after the first (and RUN_MAX_WQES, RUN_MAX_BYTES):
 * whoever comes next waits that long and one budget at most. With
 * anyone else served in between, no run copies more than a slice. The
 * clock is read only by runs that reach the end of their first budget
 * (most runs of small WQEs end before: their SQ is empty).
 */
#define RUN_WQES 64
#define RUN_ALONE_US 200
#define RUN_MAX_WQES 1024
#define RUN_MAX_BYTES (16u << 20)

void pvo_req_resume(void *opaque)
{
	pvo_req_run(opaque);
}

/* What one run has done so far, and may. */
struct run {
	unsigned int wqes;
	uint64_t bytes;
	unsigned int max_wqes; /* the budget so far */
	uint64_t max_bytes;
	bool alone;   /* nobody else served since its last run */
	gint64 until; /* alone: it may grow until then (0: not read yet) */
};

static bool over_budget(struct run *run)
{
	gint64 now;

	if (run->wqes < run->max_wqes && run->bytes < run->max_bytes)
		return false;
	if (!run->alone || run->wqes >= RUN_MAX_WQES ||
	    run->bytes >= RUN_MAX_BYTES)
		return true;
	/* the clock only for runs that go past their first budget */
	now = g_get_monotonic_time();
	if (!run->until)
		run->until = now + RUN_ALONE_US;
	else if (now >= run->until)
		return true;
	run->max_wqes = run->wqes + RUN_WQES;
	run->max_bytes = run->bytes + PVO_REQ_SLICE;
	return false;
}

/* The active WQE's next slice (more_slices). */
static enum pvo_req_state slice(struct pvo_qp *qp, struct run *run)
{
	struct pvo_req_pos *p = &qp->req.pos;
	uint32_t psn = qp->req.wqe.psn;
	uint32_t at = p->next_pkt + p->read_next;

	p->more = true;
	run->bytes += send_wqe(qp, &qp->req.wqe, false, 0);
	if (qp->req.active && qp->req.wqe.psn == psn &&
	    p->next_pkt + p->read_next == at) {
		/* nothing went (no route, a frozen peer): an answer or the
		 * timer goes on */
		p->more = false;
		return PVO_REQST_DONE;
	}
	return PVO_REQST_NEXT;
}

static enum pvo_req_state next_step(struct pvo_qp *qp, struct run *run)
{
	if (over_budget(run))
		return PVO_REQST_YIELD;
	if (qp->state == PVO_QPS_ERR || qp->state == PVO_QPS_SQE)
		return PVO_REQST_FLUSH;
	/* In SQD the active WQE finishes, no new one starts. */
	if (qp->req.active && more_slices(qp))
		return PVO_REQST_SLICE;
	if (qp->state != PVO_QPS_RTS)
		return PVO_REQST_DONE;
	if (qp->req.active)
		return qp->req.resend_active ? PVO_REQST_RESEND
					     : PVO_REQST_AHEAD;
	return PVO_REQST_FETCH;
}

static enum pvo_req_state step(struct pvo_qp *qp, struct run *run,
			       enum pvo_req_state s)
{
	switch (s) {
	case PVO_REQST_NEXT:
		return next_step(qp, run);
	case PVO_REQST_RESEND:
		/* promoted after a go-back-N: it goes again, whole */
		qp->req.resend_active = false;
		send_wqe(qp, &qp->req.wqe, false, qp->req.wqe.npkts);
		run->wqes++;
		return PVO_REQST_NEXT;
	case PVO_REQST_AHEAD:
		if (!send_ahead(qp))
			return PVO_REQST_DONE;
		run->wqes++;
		run->bytes += pvo_req_ahead(qp, qp->req.ahead_sent - 1)->length;
		return PVO_REQST_NEXT;
	case PVO_REQST_FETCH:
		switch (fetch(qp)) {
		case FETCH_NONE:
			return PVO_REQST_DONE;
		case FETCH_SEND:
			return PVO_REQST_SEND;
		case FETCH_FAILED:
		case FETCH_LOCAL:
			break;
		}
		run->wqes++;
		return PVO_REQST_NEXT;
	case PVO_REQST_SEND:
		run->wqes++;
		run->bytes += send_wqe(qp, &qp->req.wqe, false, 0);
		return PVO_REQST_NEXT;
	case PVO_REQST_SLICE:
		return slice(qp, run);
	case PVO_REQST_FLUSH:
		pvo_qp_flush_sq(qp);
		return PVO_REQST_DONE;
	case PVO_REQST_YIELD:
		pvo_timer_arm(&qp->req.resume, 0);
		return PVO_REQST_DONE;
	default:
		return PVO_REQST_DONE;
	}
}

void pvo_req_run(struct pvo_qp *qp)
{
	enum pvo_req_state s = PVO_REQST_NEXT, next;
	struct run run = { 0 };

	/* A VM stopped for migration writes nothing into its memory: the
	 * requester waits for the rings to start again (state.h). */
	if (qp->req.running || qp->vm->frozen)
		return;
	qp->req.running = true;
	run.max_wqes = RUN_WQES;
	run.max_bytes = PVO_REQ_SLICE;
	run.alone = pvo_loop_served(qp);
	pvo_loop_serve(qp);
	while (s != PVO_REQST_DONE) {
		next = step(qp, &run, s);
		pvo_sw_trace(qp, "req %s -> %s", pvo_req_state_name(s),
			     pvo_req_state_name(next));
		s = next;
	}
	qp->req.running = false;
	/* hand what this run queued for the wire to the kernel */
	pvo_transport_flush();
}
