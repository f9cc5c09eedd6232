// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: the kernel's post path. Work requests of kernel QPs and
 * SRQs become WQEs in the rings the driver allocated, exactly as the
 * provider builds them in user space: write the WQEs, publish prod, and
 * for send queues ring the QP's doorbell record (pvo_db.c) unless one is
 * already pending. SGE addresses are DMA addresses under the local DMA
 * lkey, or MR addresses under an MR's lkey; the device checks both.
 */

#include <rdma/ib_verbs.h>

#include "pvo_verbs.h"

#define PVO_SEND_FLAGS	(IB_SEND_SIGNALED | IB_SEND_SOLICITED | \
			 IB_SEND_INLINE | IB_SEND_FENCE)

static_assert(sizeof(struct pvo_send_wqe) == 64);
static_assert(sizeof(struct pvo_recv_wqe) == 16);
static_assert(sizeof(struct pvo_sge) == 16);

/*
 * Ring the doorbell of @qp after its SQ prod was published. The exchange
 * is fully ordered (a full barrier on both sides), as the protocol needs
 * between the prod store and the db_pending load.
 */
static void pvo_qp_kick(struct pvo_dev *dev, struct pvo_qp *qp)
{
	u32 *pending = (__force u32 *)&qp->sq.hdr->db_pending;

	if (!xchg(pending, (__force u32)cpu_to_le32(1)))
		pvo_kdb_ring(dev, qp->handle);
}

static int pvo_wr_opcode(enum ib_qp_type type, enum ib_wr_opcode opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
		return PVO_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return PVO_WR_SEND_WITH_IMM;
	case IB_WR_RDMA_WRITE:
		return type == IB_QPT_RC || type == IB_QPT_UC ?
		       PVO_WR_RDMA_WRITE : -EINVAL;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return type == IB_QPT_RC || type == IB_QPT_UC ?
		       PVO_WR_RDMA_WRITE_WITH_IMM : -EINVAL;
	case IB_WR_RDMA_READ:
		return type == IB_QPT_RC ? PVO_WR_RDMA_READ : -EINVAL;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return type == IB_QPT_RC ? PVO_WR_ATOMIC_CMP_AND_SWP : -EINVAL;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return type == IB_QPT_RC ? PVO_WR_ATOMIC_FETCH_AND_ADD :
		       -EINVAL;
	case IB_WR_SEND_WITH_INV:
		return type == IB_QPT_RC ? PVO_WR_SEND_WITH_INV : -EINVAL;
	case IB_WR_LOCAL_INV:
		return PVO_WR_LOCAL_INV;
	case IB_WR_REG_MR:
		return PVO_WR_REG_MR;
	default:
		return -EINVAL;
	}
}

/* Inline data: the SGEs hold kernel virtual addresses (IB_SEND_INLINE). */
static int pvo_wqe_inline(const struct pvo_qp *qp,
			  const struct ib_send_wr *wr,
			  struct pvo_send_wqe *wqe)
{
	u8 *dst = (u8 *)(wqe + 1);
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 len = wr->sg_list[i].length;

		if (len > qp->cap.max_inline_data - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)wr->sg_list[i].addr,
		       len);
		total += len;
	}
	wqe->flags |= PVO_WQE_F_INLINE;
	wqe->inline_len = cpu_to_le32(total);
	return 0;
}

/*
 * IB_WR_REG_MR: the MR's page list (filled by ib_map_mr_sg()) and the key
 * with the consumer's new low byte (ib_update_fast_reg_key()).
 */
static int pvo_wqe_reg(const struct ib_reg_wr *wr, struct pvo_send_wqe *wqe)
{
	struct pvo_mr *mr = to_pvo_mr(wr->mr);
	int access = pvo_mr_access(wr->mr->device, wr->access);

	if (access < 0 || !mr->pages || !mr->npages ||
	    (wr->key & ~0xffu) != (mr->ibmr.lkey & ~0xffu))
		return -EINVAL;
	wqe->u.reg.iova = cpu_to_le64(wr->mr->iova);
	wqe->u.reg.length = cpu_to_le64(wr->mr->length);
	wqe->u.reg.pages = cpu_to_le64(mr->pages_dma);
	wqe->u.reg.key = cpu_to_le32(wr->key);
	wqe->u.reg.access = cpu_to_le32(access);
	wqe->u.reg.npages = cpu_to_le32(mr->npages);
	return 0;
}

static int pvo_wqe_sges(u32 max_sge, const struct ib_sge *sg_list,
			int num_sge, struct pvo_sge *sge, u8 *num)
{
	int i;

	if (num_sge < 0 || (u32)num_sge > max_sge)
		return -EINVAL;
	for (i = 0; i < num_sge; i++) {
		sge[i].addr = cpu_to_le64(sg_list[i].addr);
		sge[i].length = cpu_to_le32(sg_list[i].length);
		sge[i].lkey = cpu_to_le32(sg_list[i].lkey);
	}
	*num = num_sge;
	return 0;
}

static int pvo_build_send_wqe(const struct pvo_qp *qp,
			      const struct ib_send_wr *wr,
			      struct pvo_send_wqe *wqe)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	int opcode;

	opcode = pvo_wr_opcode(type, wr->opcode);
	if (opcode < 0 || (wr->send_flags & ~PVO_SEND_FLAGS))
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	wqe->opcode = opcode;
	if (wr->send_flags & IB_SEND_SIGNALED)
		wqe->flags |= PVO_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= PVO_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= PVO_WQE_F_FENCE;
	if (opcode == PVO_WR_SEND_WITH_IMM ||
	    opcode == PVO_WR_RDMA_WRITE_WITH_IMM)
		wqe->imm_data = wr->ex.imm_data;
	if (opcode == PVO_WR_SEND_WITH_INV || opcode == PVO_WR_LOCAL_INV)
		wqe->invalidate_rkey = cpu_to_le32(wr->ex.invalidate_rkey);

	switch (opcode) {
	case PVO_WR_LOCAL_INV:
		return 0;
	case PVO_WR_REG_MR:
		return pvo_wqe_reg(reg_wr(wr), wqe);
	case PVO_WR_RDMA_WRITE:
	case PVO_WR_RDMA_WRITE_WITH_IMM:
	case PVO_WR_RDMA_READ:
		wqe->u.rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->u.rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		wqe->u.atomic.remote_addr =
			cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->u.atomic.compare_add =
			cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->u.atomic.swap = cpu_to_le64(atomic_wr(wr)->swap);
		wqe->u.atomic.rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		break;
	default:
		if (type == IB_QPT_UD || type == IB_QPT_GSI) {
			const struct ib_ud_wr *ud = ud_wr(wr);

			if (!ud->ah)
				return -EINVAL;
			wqe->u.ud.ah = cpu_to_le32(to_pvo_ah(ud->ah)->handle);
			wqe->u.ud.remote_qpn = cpu_to_le32(ud->remote_qpn);
			wqe->u.ud.remote_qkey = cpu_to_le32(ud->remote_qkey);
		}
	}

	if ((wr->send_flags & IB_SEND_INLINE) && opcode != PVO_WR_RDMA_READ &&
	    opcode != PVO_WR_ATOMIC_CMP_AND_SWP &&
	    opcode != PVO_WR_ATOMIC_FETCH_AND_ADD)
		return pvo_wqe_inline(qp, wr, wqe);
	return pvo_wqe_sges(qp->cap.max_send_sge, wr->sg_list, wr->num_sge,
			    (struct pvo_sge *)(wqe + 1), &wqe->num_sge);
}

int pvo_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	struct pvo_dev *dev = to_pvo_dev(ibqp->device);
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct pvo_ring *sq = &qp->sq;
	enum ib_qp_state state;
	unsigned long flags;
	u32 prod, cons, start;
	bool kick = false;
	int err = 0;

	/* User QPs post from user space. */
	if (!qp->kernel) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	/* Sends need RTS (or later: SQD queues, ERR flushes). */
	state = READ_ONCE(qp->state);
	if (state < IB_QPS_RTS) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->sq_lock, flags);
	prod = pvo_ring_own(&sq->hdr->prod);
	cons = pvo_ring_peer(&sq->hdr->cons);
	start = prod;
	for (; wr; wr = wr->next) {
		if (pvo_ring_full(sq, prod, &cons)) {
			err = -ENOMEM;
			break;
		}
		err = pvo_build_send_wqe(qp, wr, pvo_ring_entry(sq, prod));
		if (err)
			break;
		prod++;
	}
	if (prod != start) {
		pvo_ring_publish(&sq->hdr->prod, prod);
		kick = true;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (kick)
		pvo_qp_kick(dev, qp);
	if (err)
		*bad_wr = wr;
	return err;
}

static int pvo_build_recv_wqe(u32 max_sge, const struct ib_recv_wr *wr,
			      struct pvo_recv_wqe *wqe)
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	return pvo_wqe_sges(max_sge, wr->sg_list, wr->num_sge,
			    (struct pvo_sge *)(wqe + 1), &wqe->num_sge);
}

/* Post to a receive ring (RQ or SRQ); the caller holds its lock. */
static int pvo_post_recv_ring(struct pvo_ring *ring, u32 max_sge,
			      const struct ib_recv_wr **wr, bool *posted)
{
	u32 prod = pvo_ring_own(&ring->hdr->prod);
	u32 cons = pvo_ring_peer(&ring->hdr->cons);
	u32 start = prod;
	int err = 0;

	for (; *wr; *wr = (*wr)->next) {
		if (pvo_ring_full(ring, prod, &cons)) {
			err = -ENOMEM;
			break;
		}
		err = pvo_build_recv_wqe(max_sge, *wr,
					 pvo_ring_entry(ring, prod));
		if (err)
			break;
		prod++;
	}
	if (prod != start)
		pvo_ring_publish(&ring->hdr->prod, prod);
	*posted = prod != start;
	return err;
}

int pvo_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct pvo_dev *dev = to_pvo_dev(ibqp->device);
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	enum ib_qp_state state;
	unsigned long flags;
	bool posted;
	int err;

	if (!qp->kernel || qp->has_srq) {
		*bad_wr = wr;
		return qp->kernel ? -EINVAL : -EOPNOTSUPP;
	}
	state = READ_ONCE(qp->state);
	if (state == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	err = pvo_post_recv_ring(&qp->rq, qp->cap.max_recv_sge, &wr, &posted);
	spin_unlock_irqrestore(&qp->rq_lock, flags);

	/*
	 * Receive queues have no doorbell, but a QP in error must flush what
	 * is posted to it (ib_drain_rq() waits for that): a doorbell on a QP
	 * in error tells the device to.
	 */
	if (posted && (state == IB_QPS_ERR || READ_ONCE(qp->dev_err)))
		pvo_qp_kick(dev, qp);
	if (err)
		*bad_wr = wr;
	return err;
}

int pvo_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	unsigned long flags;
	bool posted;
	int err;

	if (!srq->kernel) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&srq->lock, flags);
	err = pvo_post_recv_ring(&srq->ring, srq->max_sge, &wr, &posted);
	spin_unlock_irqrestore(&srq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}
