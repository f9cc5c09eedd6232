// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The receive side of the data path: post_recv and post_srq_recv write
 * receive WQEs and publish the producer counter. The device polls receive
 * rings when a packet arrives, so there is no doorbell and no syscall,
 * except for queues on the host-verbs transport, which asked for one.
 */
#include <errno.h>
#include <string.h>

#include <util/udma_barrier.h>

#include "ring.h"

static void pvo_write_recv_wqe(struct pvo_recv_wqe *wqe,
			       const struct ibv_recv_wr *wr)
{
	struct pvo_sge *sge = (struct pvo_sge *)(wqe + 1);
	int i;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr->wr_id);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = htole64(wr->sg_list[i].addr);
		sge[i].length = htole32(wr->sg_list[i].length);
		sge[i].lkey = htole32(wr->sg_list[i].lkey);
	}
}

static int pvo_post_wq_recv(struct pvo_wq *wq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr)
{
	struct pvo_ring *ring = &wq->ring;
	uint32_t prod, start, room;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	start = prod = pvo_load_own(&ring->hdr->prod);
	room = pvo_ring_space(ring, prod);

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			ret = EINVAL;
			break;
		}
		if (!room) {
			/* the device may have consumed some since */
			room = pvo_ring_space(ring, prod);
			if (!room) {
				ret = ENOMEM;
				break;
			}
		}
		pvo_write_recv_wqe(pvo_ring_entry(ring, prod), wr);
		prod++;
		room--;
	}

	if (prod != start) {
		/* WQEs before the counter that publishes them */
		udma_to_device_barrier();
		pvo_store_release(&ring->hdr->prod, prod);
	}
	pthread_spin_unlock(&wq->lock);

	if (ret)
		*bad_wr = wr;
	return ret;
}

int pvo_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	int ret;

	/*
	 * Receives of a QP with an SRQ go to the SRQ; a QP in RESET takes
	 * none (IB C10-97.2.1).
	 */
	if (qp->has_srq || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	ret = pvo_post_wq_recv(&qp->rq, wr, bad_wr);

	/*
	 * The device reads an RQ when a message comes, which never happens
	 * in ERR: a doorbell makes it flush the new receives (rdma_cm and
	 * drain loops wait for their WR_FLUSH_ERR). A QP the device moved to
	 * ERR on its own is not known here; its receives flush at the next
	 * doorbell or modify. A QP on the host-verbs transport asked for a
	 * doorbell after every post: its receives go to the host's device
	 * before messages come.
	 */
	if (qp->rq_doorbell || ibqp->state == IBV_QPS_ERR)
		pvo_ring_doorbell(to_pvo_ctx(ibqp->context), qp);
	return ret;
}

int pvo_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	int ret = pvo_post_wq_recv(&srq->rq, wr, bad_wr);

	/* an SRQ on the host-verbs transport: its receives go to the
	 * host's device as they are posted */
	if (srq->doorbell)
		pvo_ring_srq_doorbell(to_pvo_ctx(ibsrq->context), srq);
	return ret;
}
