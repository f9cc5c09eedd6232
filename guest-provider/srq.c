// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queue life cycle: the provider allocates the ring, the
 * kernel pins it and creates the device SRQ. post_srq_recv is in recv.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "ring.h"

/* The ring of an SRQ for attr (checked already). */
int pvo_srq_alloc_ring(struct pvo_srq *srq, const struct ibv_srq_attr *attr,
		       size_t page_size)
{
	uint32_t entries = pvo_roundup_pow2(attr->max_wr ? attr->max_wr : 1);

	return pvo_wq_alloc(&srq->rq, entries,
			    pvo_recv_wqe_shift(attr->max_sge), attr->max_sge,
			    page_size);
}

struct ibv_srq *pvo_create_srq(struct ibv_pd *ibpd,
			       struct ibv_srq_init_attr *attr)
{
	struct pvo_context *ctx = to_pvo_ctx(ibpd->context);
	struct pvo_device *dev = to_pvo_dev(ibpd->context->device);
	struct pvo_uverbs_create_srq_resp resp = {};
	struct pvo_uverbs_create_srq cmd = {};
	struct ibv_srq_attr *sattr = &attr->attr;
	struct pvo_srq *srq;
	int ret;

	/* srq_limit is not used at creation (ibv_create_srq(3)) */
	if (sattr->max_wr > ctx->limits.max_srq_wr ||
	    sattr->max_sge > ctx->limits.max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}

	ret = pvo_srq_alloc_ring(srq, sattr, dev->page_size);
	if (ret)
		goto err_free;

	cmd.buf_addr = (uintptr_t)srq->rq.ring.buf;
	cmd.buf_size = srq->rq.ring.ring_size;
	cmd.entries = srq->rq.ring.num_entries;
	cmd.wqe_shift = srq->rq.ring.shift;
	ret = ibv_cmd_create_srq(ibpd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_wq;

	srq->handle = resp.srq;
	srq->srqn = resp.srqn;
	srq->doorbell = resp.flags & PVO_SRQ_RESP_F_DOORBELL;
	/* what the ring holds, which is at least what was asked for */
	sattr->max_wr = srq->rq.ring.num_entries;
	sattr->max_sge = srq->rq.max_sge;
	return &srq->ibv_srq;

err_wq:
	pvo_wq_free(&srq->rq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * IBV_SRQ_MAX_WR: a new ring; the device moves the posted receives to it
 * while the SRQ lock keeps posters out, and the SRQ switches when the
 * kernel returns.
 */
int pvo_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask)
{
	struct pvo_context *ctx = to_pvo_ctx(ibsrq->context);
	struct pvo_device *dev = to_pvo_dev(ibsrq->context->device);
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	struct pvo_uverbs_modify_srq cmd = {};
	struct pvo_ring ring, old;
	int ret;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd));
	if (!attr->max_wr || attr->max_wr > ctx->limits.max_srq_wr)
		return EINVAL;
	ret = pvo_ring_alloc(&ring, pvo_roundup_pow2(attr->max_wr),
			     srq->rq.ring.shift, dev->page_size);
	if (ret)
		return ret;
	cmd.buf_addr = (uintptr_t)ring.buf;
	cmd.buf_size = ring.ring_size;
	cmd.entries = ring.num_entries;
	pthread_spin_lock(&srq->rq.lock);
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (!ret) {
		old = srq->rq.ring;
		srq->rq.ring = ring;
	}
	pthread_spin_unlock(&srq->rq.lock);
	pvo_ring_free(ret ? &ring : &old);
	return ret;
}

int pvo_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	struct ibv_query_srq cmd;
	int ret;

	ret = ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
	if (ret)
		return ret;

	/* the same capabilities create_srq reported */
	attr->max_wr = srq->rq.ring.num_entries;
	attr->max_sge = srq->rq.max_sge;
	return 0;
}

int pvo_destroy_srq(struct ibv_srq *ibsrq)
{
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	int ret;

	/* The device lets go of the ring before the kernel returns. */
	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	pvo_wq_free(&srq->rq);
	free(srq);
	return 0;
}
