// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ibv_wr_* API of send queues (struct ibv_qp_ex). wr_start takes the
 * SQ lock; each builder writes the header of the next SQ slot past the
 * published prod, and the setters that follow complete that WQE;
 * wr_complete publishes the batch and rings the doorbell exactly as
 * post_send does (pvo_sq_publish), and wr_abort forgets it. The WQE
 * layouts are post_send's (send.c).
 *
 * Builders and setters return nothing: the first error of a batch is kept,
 * everything after it is ignored, and wr_complete returns it without
 * publishing any WQE of the batch. EINVAL: an opcode not in the QP's
 * send_ops_flags or not for its type, a setter without a builder, a second
 * data setter, more SGEs than max_send_sge, more inline data than
 * max_inline_data, inline data for an opcode that has none, a UD WQE
 * without wr_set_ud_addr, a QP in RESET, INIT or RTR. ENOMEM: a full SQ.
 */
#include <errno.h>
#include <string.h>

#include "ring.h"

static void pvo_wr_fail(struct pvo_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* The WQE the setters completed is done: a UD one needs its address. */
static void pvo_wr_close(struct pvo_wr_batch *b)
{
	if (b->wqe && b->needs_ud_addr)
		pvo_wr_fail(b, EINVAL);
	b->wqe = NULL;
}

/*
 * Starts the next WQE of the batch for op (flag: its IBV_QP_EX_WITH_* bit)
 * with the wr_id and wr_flags of the ibv_qp_ex. NULL, with the batch
 * failed, if the QP may not post op or its SQ is full.
 */
static struct pvo_send_wqe *pvo_wr_begin(struct pvo_qp *qp, uint64_t flag,
					 enum ibv_wr_opcode op)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	struct pvo_wr_batch *b = &qp->wr;
	struct pvo_send_wqe *wqe;
	int opcode;

	pvo_wr_close(b);
	if (b->err)
		return NULL;

	opcode = pvo_send_opcode(qp->ibv_qp.qp_type, op);
	if (!(qp->send_ops_flags & flag) || opcode < 0) {
		pvo_wr_fail(b, EINVAL);
		return NULL;
	}
	if (!b->room) {
		/* the device may have consumed some since */
		b->room = pvo_ring_space(&qp->sq.ring, b->prod);
		if (!b->room) {
			pvo_wr_fail(b, ENOMEM);
			return NULL;
		}
	}

	wqe = pvo_ring_entry(&qp->sq.ring, b->prod);
	pvo_send_wqe_init(qp, wqe, qpx->wr_id, qpx->wr_flags, opcode);
	b->prod++;
	b->room--;
	b->wqe = wqe;
	/* inline data for SEND and WRITE only, as in post_send */
	b->can_inline = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
			op == IBV_WR_SEND_WITH_INV || op == IBV_WR_RDMA_WRITE ||
			op == IBV_WR_RDMA_WRITE_WITH_IMM;
	b->inline_flag = b->can_inline && (qpx->wr_flags & IBV_SEND_INLINE);
	b->needs_ud_addr = qp->ibv_qp.qp_type == IBV_QPT_UD;
	b->has_data = false;
	return wqe;
}

static void pvo_wr_start(struct ibv_qp_ex *qpx)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_wr_batch *b = &qp->wr;

	pthread_spin_lock(&qp->sq.lock);
	b->start = b->prod = pvo_load_own(&qp->sq.ring.hdr->prod);
	b->room = pvo_ring_space(&qp->sq.ring, b->prod);
	b->err = pvo_sq_takes_sends(qp) ? 0 : EINVAL;
	b->wqe = NULL;
}

static int pvo_wr_complete(struct ibv_qp_ex *qpx)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_wr_batch *b = &qp->wr;
	int err;

	pvo_wr_close(b);
	err = b->err;
	/* all or nothing; unlocks */
	pvo_sq_publish(qp, b->start, err ? b->start : b->prod);
	return err;
}

static void pvo_wr_abort(struct ibv_qp_ex *qpx)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);

	/* the slots past prod were never published: the device ignores them */
	qp->wr.wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/* ---- builders ---- */

static void pvo_wr_send(struct ibv_qp_ex *qpx)
{
	pvo_wr_begin(to_pvo_qp_ex(qpx), IBV_QP_EX_WITH_SEND, IBV_WR_SEND);
}

static void pvo_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct pvo_send_wqe *wqe;

	wqe = pvo_wr_begin(to_pvo_qp_ex(qpx), IBV_QP_EX_WITH_SEND_WITH_IMM,
			   IBV_WR_SEND_WITH_IMM);
	if (wqe)
		wqe->imm_data = imm_data;
}

/* RC: the responder invalidates invalidate_rkey (one of its fast-reg MRs,
 * e.g. a kernel ULP's) when the message has arrived. */
static void pvo_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct pvo_send_wqe *wqe;

	wqe = pvo_wr_begin(to_pvo_qp_ex(qpx), IBV_QP_EX_WITH_SEND_WITH_INV,
			   IBV_WR_SEND_WITH_INV);
	if (wqe)
		wqe->invalidate_rkey = htole32(invalidate_rkey);
}

/* Local operations: no data setter may follow. */
static void pvo_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_send_wqe *wqe;

	wqe = pvo_wr_begin(qp, IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV);
	if (!wqe)
		return;
	wqe->invalidate_rkey = htole32(invalidate_rkey);
	qp->wr.has_data = true;
}

static void pvo_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_send_wqe *wqe;

	wqe = pvo_wr_begin(qp, IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW);
	if (!wqe)
		return;
	qp->wr.has_data = true;
	if (!mw || mw->pd != qp->ibv_qp.pd ||
	    pvo_write_bind(wqe, rkey, bind_info))
		pvo_wr_fail(&qp->wr, EINVAL);
}

static void pvo_wr_rdma(struct ibv_qp_ex *qpx, uint64_t flag,
			enum ibv_wr_opcode op, uint32_t rkey,
			uint64_t remote_addr, __be32 imm_data)
{
	struct pvo_send_wqe *wqe;

	wqe = pvo_wr_begin(to_pvo_qp_ex(qpx), flag, op);
	if (!wqe)
		return;
	wqe->u.rdma.remote_addr = htole64(remote_addr);
	wqe->u.rdma.rkey = htole32(rkey);
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wqe->imm_data = imm_data;
}

static void pvo_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	pvo_wr_rdma(qpx, IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE, rkey,
		    remote_addr, 0);
}

static void pvo_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	pvo_wr_rdma(qpx, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		    IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void pvo_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	pvo_wr_rdma(qpx, IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ, rkey,
		    remote_addr, 0);
}

static void pvo_wr_atomic(struct ibv_qp_ex *qpx, uint64_t flag,
			  enum ibv_wr_opcode op, uint32_t rkey,
			  uint64_t remote_addr, uint64_t compare_add,
			  uint64_t swap)
{
	struct pvo_send_wqe *wqe;

	wqe = pvo_wr_begin(to_pvo_qp_ex(qpx), flag, op);
	if (!wqe)
		return;
	wqe->u.atomic.remote_addr = htole64(remote_addr);
	wqe->u.atomic.compare_add = htole64(compare_add);
	wqe->u.atomic.swap = htole64(swap);
	wqe->u.atomic.rkey = htole32(rkey);
}

static void pvo_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	pvo_wr_atomic(qpx, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
		      IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
		      swap);
}

static void pvo_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	pvo_wr_atomic(qpx, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		      IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

/* ---- setters ---- */

/* The WQE a data setter completes; NULL (batch failed) if none or done. */
static struct pvo_send_wqe *pvo_wr_data(struct pvo_qp *qp)
{
	struct pvo_wr_batch *b = &qp->wr;

	if (!b->wqe || b->has_data) {
		pvo_wr_fail(b, EINVAL);
		return NULL;
	}
	b->has_data = true;
	return b->wqe;
}

static void pvo_wr_inline(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
			  const void *addr, size_t len)
{
	if (pvo_inline_append(qp, wqe, addr, len))
		pvo_wr_fail(&qp->wr, EINVAL);
}

static void pvo_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_send_wqe *wqe = pvo_wr_data(qp);
	struct pvo_sge *sge;
	size_t i;

	if (!wqe)
		return;

	/* IBV_SEND_INLINE in wr_flags copies the data, as post_send does */
	if (qp->wr.inline_flag) {
		wqe->flags |= PVO_WQE_F_INLINE;
		for (i = 0; i < num_sge; i++)
			pvo_wr_inline(qp, wqe,
				      (void *)(uintptr_t)sg_list[i].addr,
				      sg_list[i].length);
		return;
	}

	if (num_sge > qp->sq.max_sge) {
		pvo_wr_fail(&qp->wr, EINVAL);
		return;
	}
	sge = (struct pvo_sge *)(wqe + 1);
	for (i = 0; i < num_sge; i++) {
		sge[i].addr = htole64(sg_list[i].addr);
		sge[i].length = htole32(sg_list[i].length);
		sge[i].lkey = htole32(sg_list[i].lkey);
	}
	wqe->num_sge = num_sge;
}

static void pvo_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {
		.addr = addr, .length = length, .lkey = lkey,
	};

	pvo_wr_set_sge_list(qpx, 1, &sge);
}

static void pvo_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_send_wqe *wqe = pvo_wr_data(qp);
	size_t i;

	if (!wqe)
		return;
	if (!qp->wr.can_inline) {
		pvo_wr_fail(&qp->wr, EINVAL);
		return;
	}
	wqe->flags |= PVO_WQE_F_INLINE;
	for (i = 0; i < num_buf; i++)
		pvo_wr_inline(qp, wqe, buf_list[i].addr, buf_list[i].length);
}

static void pvo_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				   size_t length)
{
	const struct ibv_data_buf buf = { .addr = addr, .length = length };

	pvo_wr_set_inline_data_list(qpx, 1, &buf);
}

static void pvo_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct pvo_qp *qp = to_pvo_qp_ex(qpx);
	struct pvo_wr_batch *b = &qp->wr;
	struct pvo_send_wqe *wqe = b->wqe;

	if (!wqe || !b->needs_ud_addr || !ah) {
		pvo_wr_fail(b, EINVAL);
		return;
	}
	wqe->u.ud.ah = htole32(to_pvo_ah(ah)->handle);
	wqe->u.ud.remote_qpn = htole32(remote_qpn);
	wqe->u.ud.remote_qkey = htole32(remote_qkey);
	b->needs_ud_addr = false;
}

/* ---- set-up ---- */

/* The send_ops_flags a QP of type qp_type may ask for. */
uint64_t pvo_send_ops_supported(enum ibv_qp_type qp_type)
{
	switch (qp_type) {
	case IBV_QPT_RC:
		return PVO_SEND_OPS_FLAGS;
	case IBV_QPT_UC:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	case IBV_QPT_UD:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	default:
		return 0;
	}
}

/*
 * Makes the QP an ibv_qp_ex (ibv_qp_to_qp_ex finds it) whose builders
 * accept the opcodes of send_ops_flags (checked against the QP type
 * already). The builders and setters the device has no use for (TSO, XRC,
 * atomic write, flush) stay NULL.
 */
void pvo_qp_init_wr_ops(struct pvo_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qp->send_ops_flags = send_ops_flags;

	qpx->wr_start = pvo_wr_start;
	qpx->wr_complete = pvo_wr_complete;
	qpx->wr_abort = pvo_wr_abort;

	qpx->wr_send = pvo_wr_send;
	qpx->wr_send_imm = pvo_wr_send_imm;
	qpx->wr_send_inv = pvo_wr_send_inv;
	qpx->wr_rdma_write = pvo_wr_rdma_write;
	qpx->wr_rdma_write_imm = pvo_wr_rdma_write_imm;
	qpx->wr_rdma_read = pvo_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = pvo_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = pvo_wr_atomic_fetch_add;
	qpx->wr_local_inv = pvo_wr_local_inv;
	qpx->wr_bind_mw = pvo_wr_bind_mw;

	qpx->wr_set_sge = pvo_wr_set_sge;
	qpx->wr_set_sge_list = pvo_wr_set_sge_list;
	qpx->wr_set_inline_data = pvo_wr_set_inline_data;
	qpx->wr_set_inline_data_list = pvo_wr_set_inline_data_list;
	qpx->wr_set_ud_addr = pvo_wr_set_ud_addr;

	qp->vqp.comp_mask |= VERBS_QP_EX;
}
