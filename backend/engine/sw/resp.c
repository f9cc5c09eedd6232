// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Responder: executes a request that reached one of our QPs. It checks
 * that the QP accepts it (state, type, the connected peer or the Q_Key),
 * then the target memory (receive WQE SGEs, or rkey, range and access
 * for RDMA and atomics), moves the data and posts receive completions.
 * The answer goes back in a struct pvo_reply.
 *
 * A message may come whole (local transport) or in packets of the path
 * MTU (overlay, in PSN order: receiver.c checks the sequence first); a
 * SEND or WRITE in packets keeps its receive WQE / RETH in qp->resp.msg
 * from the first packet to the last.
 */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "cq.h"
#include "engine.h"
#include "event.h"
#include "grh.h"
#include "guest_mem.h"
#include "mr.h"
#include "mw.h"
#include "profile.h"
#include "qp.h"
#include "srq.h"
#include "transport.h"
#include "vm.h"

static bool accepts(struct pvo_qp *qp, const struct pvo_pkt *pkt)
{
	/* A QP whose receive queue is its engine's device's (a host QP):
	 * software senders, here or over the overlay, reach none. */
	if (!pvo_qp_receives(qp) || qp->engine->device_rq)
		return false;
	switch (qp->type) {
	case PVO_QPT_RC:
	case PVO_QPT_UC:
		/* Only the peer the QP is connected to. */
		return pkt->qp_type == qp->type &&
		       pkt->src_qpn == qp->attr.dest_qpn &&
		       memcmp(pkt->sgid, qp->attr.path.dgid, PVO_GID_LEN) == 0;
	case PVO_QPT_UD:
	case PVO_QPT_GSI:
		return (pkt->qp_type == PVO_QPT_UD ||
			pkt->qp_type == PVO_QPT_GSI) &&
		       pkt->op == PVO_OP_SEND && pkt->qkey == qp->attr.qkey;
	}
	return false;
}

/*
 * Takes the next receive WQE (RQ or SRQ); false if none is posted. With
 * resolve, its SGEs are checked for local write into *st.
 */
static bool take_recv(struct pvo_qp *qp, struct pvo_rwqe *rw, bool resolve,
		      enum pvo_wc_status *st)
{
	uint8_t buf[sizeof(struct pvo_recv_wqe) +
		    PVO_DEV_MAX_SGE * sizeof(struct pvo_sge)]
	    __attribute__((aligned(8)));
	const struct pvo_recv_wqe *h = (const void *)buf;
	struct pvo_vm *vm = qp->vm;
	struct pvo_srq *srq = qp->srq;
	struct pvo_ring *ring = srq ? &srq->ring : &qp->rq;
	uint32_t *cons = srq ? &srq->cons : &qp->rq_cons;
	uint32_t *seen = srq ? &srq->prod_seen : &qp->resp.rq_prod_seen;
	uint32_t max_sge = srq ? srq->max_sge : qp->max_recv_sge;
	const struct pvo_pd *pd = srq ? srq->pd : qp->pd;
	uint32_t avail;

	if (!pvo_ring_produced(vm, ring, *cons, *cons, seen, &avail)) {
		pvo_vm_warn(vm,
			    "QP 0x%x: receive producer is not within %u of "
			    "the consumer %u: ignoring the ring",
			    qp->qpn, ring->entries, *cons);
		return false;
	}
	if (!avail)
		return false;
	if (!pvo_ring_read_wqe(vm, ring, *cons, buf,
			       sizeof(struct pvo_recv_wqe), pvo_recv_wqe_tail))
		return false;
	rw->wr_id = h->wr_id;
	pvo_dma_init(&rw->dma, vm);
	*st = PVO_WC_SUCCESS;
	if (h->num_sge > max_sge)
		*st = PVO_WC_LOC_QP_OP_ERR;
	else if (resolve)
		*st = pvo_dma_from_sges(
		    &rw->dma, vm, pd, qp->ctx == PVO_CTX_KERNEL,
		    PVO_ACCESS_LOCAL_WRITE, (const void *)(buf + sizeof(*h)),
		    h->num_sge);
	/* The WQE is copied: its slot is free again. */
	(*cons)++;
	pvo_ring_store(vm, ring, PVO_RING_CONS, *cons);
	if (srq)
		pvo_srq_check_limit(vm, srq);
	return true;
}

static void complete_recv(struct pvo_qp *qp, const struct pvo_rwqe *rw,
			  uint8_t opcode, enum pvo_wc_status st,
			  uint64_t byte_len, const struct pvo_pkt *pkt,
			  uint8_t net_type)
{
	struct pvo_cqe cqe = { 0 };

	cqe.wr_id = rw->wr_id;
	cqe.qpn = htole32(qp->qpn);
	cqe.opcode = opcode;
	cqe.status = st;
	if (!st) {
		cqe.byte_len = htole32((uint32_t)byte_len);
		if (pkt->has_imm) {
			cqe.flags |= PVO_WC_F_IMM;
			cqe.imm_data = pkt->imm_data;
		} else if (pkt->has_inv) {
			cqe.flags |= PVO_WC_F_INV;
			cqe.imm_data = htole32(pkt->invalidate_rkey);
		}
	}
	if (pkt->solicited)
		cqe.flags |= PVO_WC_F_SOLICITED;
	if (qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI) {
		cqe.src_qp = htole32(pkt->src_qpn);
		memcpy(cqe.smac, pkt->smac, sizeof(cqe.smac));
		cqe.sl = pkt->sl;
		if (!st) {
			cqe.flags |= PVO_WC_F_GRH;
			cqe.network_hdr_type = net_type;
		}
	}
	if (!pvo_cq_post(qp->vm, qp->rcq, &cqe))
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
}

/* A receive-side failure: how the requester and this QP learn of it. */
static void recv_failed(struct pvo_qp *qp, enum pvo_wc_status st,
			struct pvo_reply *r)
{
	/* LOC_ACCESS_ERR: a SEND_WITH_INV named an rkey it cannot invalidate */
	bool inv_req = st == PVO_WC_LOC_LEN_ERR || st == PVO_WC_LOC_ACCESS_ERR;
	uint32_t ev = inv_req			  ? PVO_EV_QP_REQ_ERR
		      : st == PVO_WC_LOC_PROT_ERR ? PVO_EV_QP_ACCESS_ERR
						  : PVO_EV_QP_FATAL;

	switch (qp->type) {
	case PVO_QPT_RC:
		r->code = inv_req ? PVO_REPLY_INV_REQ : PVO_REPLY_REM_OP;
		/* fallthrough */
	case PVO_QPT_UC:
		r->responder_error = true;
		r->responder_event = ev;
		break;
	default:
		break; /* UD: the CQE tells; the QP keeps receiving */
	}
}

/* RC only: a NAK that also moves this QP to error. */
static void nak(struct pvo_qp *qp, enum pvo_reply_code code,
		struct pvo_reply *r)
{
	if (qp->type != PVO_QPT_RC)
		return; /* UC drops what it cannot execute */
	r->code = code;
	r->responder_error = true;
	r->responder_event = code == PVO_REPLY_REM_ACCESS ? PVO_EV_QP_ACCESS_ERR
							  : PVO_EV_QP_REQ_ERR;
}

static void msg_end(struct pvo_qp *qp)
{
	qp->resp.msg.active = false;
	qp->resp.msg.has_rw = false;
}

/* A packet that does not continue the open message (RC: NAK). */
static void out_of_sequence(struct pvo_qp *qp, struct pvo_reply *r)
{
	msg_end(qp);
	nak(qp, PVO_REPLY_INV_REQ, r);
}

static void resp_send(struct pvo_qp *qp, const struct pvo_pkt *pkt,
		      struct pvo_reply *r)
{
	bool ud = qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI;
	typeof(qp->resp.msg) *m = &qp->resp.msg;
	uint8_t grh[PVO_GRH_LEN], net = 0;
	enum pvo_wc_status st;
	struct pvo_dma g;

	if (pkt->first) {
		/* UC lost the end of the last message: its receive WQE
		 * takes this one (RC cannot get here: PSNs are checked). */
		if (!(m->has_rw && m->op == PVO_OP_SEND)) {
			if (!take_recv(qp, &m->rw, true, &m->st)) {
				msg_end(qp);
				if (qp->type == PVO_QPT_RC) {
					r->code = PVO_REPLY_RNR;
					r->rnr_timer = qp->attr.min_rnr_timer;
				}
				return; /* UC / UD: dropped */
			}
		}
		m->active = true;
		m->has_rw = true;
		m->op = PVO_OP_SEND;
		m->off = 0;
		if (!m->st && ud) {
			net = pvo_grh_build(grh, pkt->sgid, pkt->dgid,
					    pkt->traffic_class, pkt->flow_label,
					    pkt->hop_limit, pkt->payload_len);
			if (PVO_GRH_LEN + pkt->payload_len > m->rw.dma.len) {
				m->st = PVO_WC_LOC_LEN_ERR;
			} else {
				pvo_dma_init(&g, NULL);
				pvo_dma_add(&g, PVO_DMA_HOST, NULL, 0, grh,
					    sizeof(grh));
				pvo_dma_seek(&m->rw.dma, 0);
				if (!pvo_dma_copy(&m->rw.dma, &g, sizeof(grh)))
					m->st = PVO_WC_LOC_PROT_ERR;
			}
			m->off = PVO_GRH_LEN;
		}
	} else if (!m->active || m->op != PVO_OP_SEND) {
		out_of_sequence(qp, r);
		return;
	}
	pvo_prof_mark(PVO_PROF_RECV_WQE);
	st = m->st;
	if (!st && m->off + pkt->payload_len > m->rw.dma.len)
		st = PVO_WC_LOC_LEN_ERR;
	if (!st && pkt->payload_len) {
		pvo_dma_seek(&m->rw.dma, m->off);
		if (!pvo_dma_copy(&m->rw.dma, pkt->payload, pkt->payload_len))
			st = PVO_WC_LOC_PROT_ERR;
	}
	m->off += pkt->payload_len;
	/* SEND_WITH_INV: the rkey goes invalid with the message's end */
	if (!st && pkt->last && pkt->has_inv)
		st = pvo_key_invalidate(qp->vm, qp->pd, qp->qpn,
					pkt->invalidate_rkey);
	if (st) {
		complete_recv(qp, &m->rw, PVO_WC_RECV, st, m->off, pkt, net);
		msg_end(qp);
		recv_failed(qp, st, r);
		return;
	}
	if (pkt->last) {
		complete_recv(qp, &m->rw, PVO_WC_RECV, st, m->off, pkt, net);
		msg_end(qp);
	}
	pvo_prof_mark(PVO_PROF_RECV_CQE);
	r->code = PVO_REPLY_ACK;
}

/* The MR an rkey (an MR's or a window's) names, if both it and the QP
 * grant access. */
static struct pvo_mr *remote_mr(struct pvo_qp *qp, uint32_t rkey,
				uint64_t va, uint32_t access, uint64_t len)
{
	if (!(qp->attr.access & access))
		return NULL;
	return pvo_rkey_get(qp->vm, rkey, qp->pd, qp->qpn, access, va, len);
}

static void resp_write(struct pvo_qp *qp, const struct pvo_pkt *pkt,
		       struct pvo_reply *r)
{
	typeof(qp->resp.msg) *m = &qp->resp.msg;
	uint64_t n = pkt->payload_len;
	enum pvo_wc_status st = PVO_WC_SUCCESS;
	struct pvo_mr *mr;
	struct pvo_dma dst;

	if (pkt->first) {
		msg_end(qp);
		/* A zero-length write touches no memory: no key check (IB). */
		if (pkt->dma_len &&
		    !remote_mr(qp, pkt->rkey, pkt->va, PVO_ACCESS_REMOTE_WRITE,
			       pkt->dma_len)) {
			nak(qp, PVO_REPLY_REM_ACCESS, r);
			return;
		}
		m->active = true;
		m->op = PVO_OP_WRITE;
		m->off = 0;
		m->rkey = pkt->rkey;
		m->va = pkt->va;
		m->len = pkt->dma_len;
	} else if (!m->active || m->op != PVO_OP_WRITE) {
		out_of_sequence(qp, r);
		return;
	}
	/* The packets must add up to the RETH's length exactly. */
	if (m->off + n > m->len || (pkt->last && m->off + n != m->len) ||
	    (!pkt->last && m->off + n == m->len)) {
		out_of_sequence(qp, r);
		return;
	}
	/* With immediate, a receive WQE must be there before the last bytes
	 * move, or the retry after RNR would find them half done. */
	if (pkt->last && pkt->has_imm && !m->has_rw) {
		if (!take_recv(qp, &m->rw, false, &m->st)) {
			if (qp->type == PVO_QPT_RC) {
				r->code = PVO_REPLY_RNR;
				r->rnr_timer = qp->attr.min_rnr_timer;
			} else {
				msg_end(qp);
			}
			return;
		}
		m->has_rw = true;
	}
	if (n) {
		/* looked up per packet: the MR may be gone by now */
		mr = remote_mr(qp, m->rkey, m->va + m->off,
			       PVO_ACCESS_REMOTE_WRITE, n);
		pvo_dma_init(&dst, qp->vm);
		if (!mr ||
		    !pvo_dma_add_remote(&dst, mr, m->rkey, qp->qpn,
					PVO_ACCESS_REMOTE_WRITE, m->va + m->off,
					n) ||
		    !pvo_dma_copy(&dst, pkt->payload, n)) {
			if (m->has_rw)
				complete_recv(qp, &m->rw,
					      PVO_WC_RECV_RDMA_WITH_IMM,
					      PVO_WC_LOC_PROT_ERR, 0, pkt, 0);
			msg_end(qp);
			nak(qp, PVO_REPLY_REM_ACCESS, r);
			return;
		}
	}
	m->off += n;
	if (pkt->last) {
		if (m->has_rw) {
			st = m->st;
			complete_recv(qp, &m->rw, PVO_WC_RECV_RDMA_WITH_IMM, st,
				      m->len, pkt, 0);
		}
		msg_end(qp);
		if (st) {
			recv_failed(qp, st, r);
			return;
		}
	}
	r->code = PVO_REPLY_ACK;
}

/* IB's longest message (max_msg_sz, verbs/device.c): a longer READ is
 * an invalid request, as rxe answers it, before its key is looked at. */
#define READ_MAX_LEN (1ull << 31)

void pvo_resp_read(struct pvo_qp *qp, const struct pvo_pkt *pkt,
		   struct pvo_reply *r)
{
	uint64_t len = pkt->dma_len;
	struct pvo_mr *mr;

	if (!qp->attr.max_dest_rd_atomic || len > READ_MAX_LEN) {
		nak(qp, PVO_REPLY_INV_REQ, r);
		return;
	}
	if (len) {
		mr = remote_mr(qp, pkt->rkey, pkt->va, PVO_ACCESS_REMOTE_READ,
			       len);
		if (!mr) {
			nak(qp, PVO_REPLY_REM_ACCESS, r);
			return;
		}
		/* The requester copies straight out of this MR. */
		pvo_dma_init(&qp->resp.read_src, qp->vm);
		pvo_dma_add_remote(&qp->resp.read_src, mr, pkt->rkey, qp->qpn,
				   PVO_ACCESS_REMOTE_READ, pkt->va, len);
		r->data = &qp->resp.read_src;
	}
	r->code = PVO_REPLY_ACK;
}

static void resp_atomic(struct pvo_qp *qp, const struct pvo_pkt *pkt,
			struct pvo_reply *r)
{
	struct pvo_mr *mr;
	uint64_t gpa, avail;

	if (!qp->attr.max_dest_rd_atomic) {
		nak(qp, PVO_REPLY_INV_REQ, r);
		return;
	}
	/* Key and access before alignment, as rxe does. */
	mr = remote_mr(qp, pkt->rkey, pkt->va, PVO_ACCESS_REMOTE_ATOMIC, 8);
	if (!mr) {
		nak(qp, PVO_REPLY_REM_ACCESS, r);
		return;
	}
	if (pkt->va & 7) {
		nak(qp, PVO_REPLY_INV_REQ, r);
		return;
	}
	/* 8-byte aligned: never crosses a page */
	gpa = pvo_mr_gpa(mr, pkt->va, &avail);
	if (!pvo_gmem_atomic64(qp->vm, gpa,
			       pkt->op == PVO_OP_CMP_SWAP ? PVO_GMEM_CMP_SWAP
							  : PVO_GMEM_FETCH_ADD,
			       pkt->compare_add, pkt->swap, &r->atomic_orig)) {
		nak(qp, PVO_REPLY_REM_ACCESS, r);
		return;
	}
	r->code = PVO_REPLY_ACK;
}

bool pvo_resp_accepts(struct pvo_qp *qp, const struct pvo_pkt *pkt)
{
	return accepts(qp, pkt);
}

void pvo_resp_receive(struct pvo_qp *qp, const struct pvo_pkt *pkt,
		      struct pvo_reply *r)
{
	if (!accepts(qp, pkt))
		return; /* silently dropped, as on the wire */
	/* Only the last packet of a message may be shorter than the MTU
	 * (a local segment: whole MTUs). */
	if (!pkt->last &&
	    (pkt->segment ? !pkt->payload_len ||
				pkt->payload_len % pvo_qp_mtu_bytes(qp)
			  : pkt->payload_len != pvo_qp_mtu_bytes(qp))) {
		out_of_sequence(qp, r);
		return;
	}
	if ((qp->type == PVO_QPT_RC || qp->type == PVO_QPT_UC) &&
	    qp->state == PVO_QPS_RTR && !qp->resp.comm_est) {
		qp->resp.comm_est = true;
		pvo_event_post(qp->vm, PVO_EV_COMM_EST, qp->handle);
	}
	switch (pkt->op) {
	case PVO_OP_SEND:
		resp_send(qp, pkt, r);
		break;
	case PVO_OP_WRITE:
		resp_write(qp, pkt, r);
		break;
	case PVO_OP_READ:
		if (qp->type == PVO_QPT_RC)
			pvo_resp_read(qp, pkt, r);
		break;
	case PVO_OP_CMP_SWAP:
	case PVO_OP_FETCH_ADD:
		if (qp->type == PVO_QPT_RC)
			resp_atomic(qp, pkt, r);
		break;
	}
	if (r->code == PVO_REPLY_ACK) {
		uint64_t n = 1;

		/* a whole message, or a READ, takes a PSN per packet */
		if (pkt->first && pkt->last)
			n = pvo_packets(pkt->dma_len, pvo_qp_mtu_bytes(qp));
		else if (pkt->segment)
			n = pvo_packets(pkt->payload_len, pvo_qp_mtu_bytes(qp));
		qp->attr.rq_psn = pvo_psn_add(qp->attr.rq_psn, n);
		if (pkt->last)
			qp->resp.msn = (qp->resp.msn + 1) & PVO_QPN_MAX;
	}
}
