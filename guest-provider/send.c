// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The send side of the data path: post_send writes send WQEs into the SQ,
 * publishes the producer counter and rings the doorbell the way the
 * device interface prescribes (doorbell record + one MMIO write), without
 * entering the kernel. The ibv_wr_* API (wr.c) writes the same WQEs with
 * the helpers here and publishes them the same way.
 */
#include <errno.h>
#include <string.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "ring.h"

static inline void pvo_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	asm volatile("pause" ::: "memory");
#else
	asm volatile("" ::: "memory");
#endif
}

/* ibv_wr_opcode -> pvo_wr_opcode; -1 if the QP type cannot carry it */
int pvo_send_opcode(enum ibv_qp_type qp_type, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return PVO_WR_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return PVO_WR_SEND_WITH_IMM;
	case IBV_WR_SEND_WITH_INV:
		return qp_type == IBV_QPT_RC ? PVO_WR_SEND_WITH_INV : -1;
	case IBV_WR_RDMA_WRITE:
		return qp_type == IBV_QPT_UD ? -1 : PVO_WR_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return qp_type == IBV_QPT_UD ? -1 : PVO_WR_RDMA_WRITE_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return qp_type == IBV_QPT_RC ? PVO_WR_RDMA_READ : -1;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return qp_type == IBV_QPT_RC ? PVO_WR_ATOMIC_CMP_AND_SWP : -1;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return qp_type == IBV_QPT_RC ? PVO_WR_ATOMIC_FETCH_AND_ADD : -1;
	case IBV_WR_LOCAL_INV:
		return qp_type == IBV_QPT_UD ? -1 : PVO_WR_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return qp_type == IBV_QPT_UD ? -1 : PVO_WR_BIND_MW;
	default:
		return -1;
	}
}

/*
 * Sends need RTS (or SQD, SQE, ERR, where the device queues or flushes
 * them): an immediate error before that (IB C10-97.2.1). libibverbs
 * tracks the state of every ibv_modify_qp.
 */
bool pvo_sq_takes_sends(const struct pvo_qp *qp)
{
	switch (qp->ibv_qp.state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return false;
	default:
		return true;
	}
}

/* The header of a send WQE: everything but the opcode's own fields. */
void pvo_send_wqe_init(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
		       uint64_t wr_id, unsigned int send_flags, int opcode)
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr_id);
	wqe->opcode = opcode;
	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		wqe->flags |= PVO_WQE_F_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= PVO_WQE_F_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		wqe->flags |= PVO_WQE_F_FENCE;
}

/*
 * Appends len bytes from addr to the WQE's inline data (after its
 * header); EINVAL if the total would pass the QP's max_inline_data, which
 * the SQ stride holds.
 */
int pvo_inline_append(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
		      const void *addr, size_t len)
{
	uint32_t have = le32toh(wqe->inline_len);

	if (len > qp->max_inline_data - have)
		return EINVAL;
	memcpy((uint8_t *)(wqe + 1) + have, addr, len);
	wqe->flags |= PVO_WQE_F_INLINE;
	wqe->inline_len = htole32(have + (uint32_t)len);
	return 0;
}

/* Copies the data the SGEs name into the WQE, after its header. */
static int pvo_write_inline(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
			    const struct ibv_send_wr *wr)
{
	int i, ret;

	wqe->flags |= PVO_WQE_F_INLINE;
	for (i = 0; i < wr->num_sge; i++) {
		ret = pvo_inline_append(qp, wqe,
					(void *)(uintptr_t)wr->sg_list[i].addr,
					wr->sg_list[i].length);
		if (ret)
			return ret;
	}
	return 0;
}

static void pvo_write_sges(struct pvo_send_wqe *wqe,
			   const struct ibv_send_wr *wr)
{
	struct pvo_sge *sge = (struct pvo_sge *)(wqe + 1);
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = htole64(wr->sg_list[i].addr);
		sge[i].length = htole32(wr->sg_list[i].length);
		sge[i].lkey = htole32(wr->sg_list[i].lkey);
	}
	wqe->num_sge = wr->num_sge;
}

/* Fills one SQ slot from wr; an error leaves the slot unpublished. */
static int pvo_write_send_wqe(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
			      const struct ibv_send_wr *wr)
{
	enum ibv_qp_type qp_type = qp->ibv_qp.qp_type;
	bool can_inline = false;
	int opcode;

	opcode = pvo_send_opcode(qp_type, wr->opcode);
	if (opcode < 0 || wr->num_sge < 0)
		return EINVAL;

	pvo_send_wqe_init(qp, wqe, wr->wr_id, wr->send_flags, opcode);

	switch (wr->opcode) {
	case IBV_WR_LOCAL_INV:
		wqe->invalidate_rkey = htole32(wr->invalidate_rkey);
		return 0;
	case IBV_WR_BIND_MW:
		if (!wr->bind_mw.mw || wr->bind_mw.mw->pd != qp->ibv_qp.pd)
			return EINVAL;
		return pvo_write_bind(wqe, wr->bind_mw.rkey,
				      &wr->bind_mw.bind_info);
	case IBV_WR_SEND_WITH_INV:
		wqe->invalidate_rkey = htole32(wr->invalidate_rkey);
		can_inline = true;
		break;
	case IBV_WR_SEND_WITH_IMM:
		wqe->imm_data = wr->imm_data;
		/* fall through */
	case IBV_WR_SEND:
		if (qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah)
				return EINVAL;
			wqe->u.ud.ah = htole32(to_pvo_ah(wr->wr.ud.ah)->handle);
			wqe->u.ud.remote_qpn = htole32(wr->wr.ud.remote_qpn);
			wqe->u.ud.remote_qkey = htole32(wr->wr.ud.remote_qkey);
		}
		can_inline = true;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->imm_data = wr->imm_data;
		/* fall through */
	case IBV_WR_RDMA_WRITE:
		can_inline = true;
		/* fall through */
	case IBV_WR_RDMA_READ:
		wqe->u.rdma.remote_addr = htole64(wr->wr.rdma.remote_addr);
		wqe->u.rdma.rkey = htole32(wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->u.atomic.remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->u.atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->u.atomic.swap = htole64(wr->wr.atomic.swap);
		wqe->u.atomic.rkey = htole32(wr->wr.atomic.rkey);
		break;
	default:
		return EINVAL;
	}

	/* Inline has no meaning for READ and atomics: they get SGEs. */
	if (can_inline && (wr->send_flags & IBV_SEND_INLINE))
		return pvo_write_inline(qp, wqe, wr);

	if ((uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	pvo_write_sges(wqe, wr);
	return 0;
}

/*
 * Tells the device to look at a queue: an SQ with new WQEs (their prod is
 * already published), a QP in ERR with new receives to flush, or an SRQ
 * with new receives. *pending (the ring header's db_pending) is 1 while a
 * record for the queue waits in the context's record ring: the device
 * clears it (full barrier) before it reads the queue's prod, so either
 * our exchange sees 0 and we append a record, or the device has yet to
 * clear it and will see our prod.
 */
static void pvo_ring_record(struct pvo_context *ctx, __le32 *db_pending,
			    uint32_t record)
{
	struct pvo_ring_hdr *db = ctx->db_ring;
	__le32 *records = (__le32 *)((uint8_t *)ctx->db_ring +
				     PVO_DB_RING_ENTRY_OFF);
	_Atomic(uint32_t) *pending = pvo_counter(db_pending);
	uint32_t prod;

	/* the queue's prod store before the db_pending load */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_exchange(pending, htole32(1)) != 0)
		return;

	pthread_spin_lock(&ctx->db_lock);
	prod = pvo_load_own(&db->prod);
	/*
	 * A queue has at most one record queued and a context at most
	 * PVO_DB_RING_ENTRIES QPs and doorbell SRQs, so the ring cannot be
	 * full while the device pops records before clearing db_pending.
	 * Wait (no syscall) rather than lose the record if it ever is.
	 */
	while (prod - pvo_load_acquire(&db->cons) >= PVO_DB_RING_ENTRIES)
		pvo_cpu_relax();
	records[prod % PVO_DB_RING_ENTRIES] = htole32(record);
	/* the record before the prod that publishes it */
	udma_to_device_barrier();
	pvo_store_release(&db->prod, prod + 1);
	pthread_spin_unlock(&ctx->db_lock);

	/* the record ring before the kick; any write to the page kicks */
	udma_to_device_barrier();
	mmio_write32(ctx->db_page, record);
}

void pvo_ring_doorbell(struct pvo_context *ctx, struct pvo_qp *qp)
{
	pvo_ring_record(ctx, &qp->sq.ring.hdr->db_pending, qp->handle);
}

void pvo_ring_srq_doorbell(struct pvo_context *ctx, struct pvo_srq *srq)
{
	pvo_ring_record(ctx, &srq->rq.ring.hdr->db_pending,
			PVO_DB_REC_SRQ(srq->srqn));
}

/*
 * Publishes the SQ's WQEs [start, prod) (their contents before the counter),
 * releases the SQ lock and, if there were any, rings the doorbell: the end
 * of post_send and of wr_complete alike.
 */
void pvo_sq_publish(struct pvo_qp *qp, uint32_t start, uint32_t prod)
{
	if (prod != start) {
		udma_to_device_barrier();
		pvo_store_release(&qp->sq.ring.hdr->prod, prod);
	}
	pthread_spin_unlock(&qp->sq.lock);

	if (prod != start)
		pvo_ring_doorbell(to_pvo_ctx(qp->ibv_qp.context), qp);
}

int pvo_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct pvo_ring *ring = &qp->sq.ring;
	uint32_t prod, start, room;
	int ret = 0;

	if (!pvo_sq_takes_sends(qp)) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&qp->sq.lock);
	start = prod = pvo_load_own(&ring->hdr->prod);
	room = pvo_ring_space(ring, prod);

	for (; wr; wr = wr->next) {
		if (!room) {
			/* the device may have consumed some since */
			room = pvo_ring_space(ring, prod);
			if (!room) {
				ret = ENOMEM;
				break;
			}
		}
		ret = pvo_write_send_wqe(qp, pvo_ring_entry(ring, prod), wr);
		if (ret)
			break;
		prod++;
		room--;
	}

	/* unlocks */
	pvo_sq_publish(qp, start, prod);

	if (ret)
		*bad_wr = wr;
	return ret;
}
