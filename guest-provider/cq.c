// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queue life cycle: the provider allocates the ring, the kernel
 * pins it and creates the device CQ (classic create_cq or create_cq_ex).
 * Polling and arming are in poll.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "ring.h"

/* CQE slots are 64 bytes: log2 of the stride */
#define PVO_CQE_SHIFT	6
static_assert(sizeof(struct pvo_cqe) == 1u << PVO_CQE_SHIFT,
	      "CQE stride out of date");

/*
 * One slot more than asked for when the device allows it; the counters
 * run freely, so cqe slots are enough when cqe + 1 would pass max_cqe.
 */
static uint32_t pvo_cq_entries(uint32_t cqe, uint32_t max_cqe)
{
	uint32_t n = pvo_roundup_pow2(cqe + 1);

	if (n > max_cqe)
		n = pvo_roundup_pow2(cqe);
	return n;
}

/* The ring and lock of a CQ of at least cqe entries (checked already). */
int pvo_cq_alloc_ring(struct pvo_cq *cq, uint32_t cqe, uint32_t max_cqe,
		      size_t page_size)
{
	int ret;

	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		return ret;

	ret = pvo_ring_alloc(&cq->ring, pvo_cq_entries(cqe, max_cqe),
			     PVO_CQE_SHIFT, page_size);
	if (ret)
		pthread_spin_destroy(&cq->lock);
	return ret;
}

void pvo_cq_free_ring(struct pvo_cq *cq)
{
	pvo_ring_free(&cq->ring);
	pthread_spin_destroy(&cq->lock);
}

/* A CQ object with its ring for cqe entries; NULL with errno set. */
static struct pvo_cq *pvo_cq_new(struct ibv_context *ibctx, int cqe)
{
	struct pvo_context *ctx = to_pvo_ctx(ibctx);
	struct pvo_device *dev = to_pvo_dev(ibctx->device);
	struct pvo_cq *cq;
	int ret;

	if (cqe < 1 || (uint32_t)cqe > ctx->limits.max_cqe) {
		errno = EINVAL;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}

	ret = pvo_cq_alloc_ring(cq, cqe, ctx->limits.max_cqe, dev->page_size);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	pvo_cq_init_poll_ops(cq);
	return cq;
}

static void pvo_cq_fail(struct pvo_cq *cq, int ret)
{
	pvo_cq_free_ring(cq);
	free(cq);
	errno = ret;
}

/* The driver data of a create command: the ring the provider allocated. */
static void pvo_cq_cmd(struct pvo_create_cq *cmd, const struct pvo_cq *cq,
		       const struct ibv_comp_channel *channel)
{
	cmd->buf_addr = (uintptr_t)cq->ring.buf;
	cmd->buf_size = cq->ring.ring_size;
	cmd->entries = cq->ring.num_entries;
	/* Without a channel nobody can wait for an event: the device need
	 * not look for arming after each CQE. */
	if (!channel)
		cmd->flags = PVO_CREATE_CQ_NO_EVENTS;
}

struct ibv_cq *pvo_create_cq(struct ibv_context *ibctx, int cqe,
			     struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct pvo_uverbs_create_cq_resp resp = {};
	struct pvo_uverbs_create_cq cmd = {};
	struct pvo_cq *cq;
	int ret;

	cq = pvo_cq_new(ibctx, cqe);
	if (!cq)
		return NULL;

	pvo_cq_cmd(&cmd.drv_payload, cq, channel);
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		pvo_cq_fail(cq, ret);
		return NULL;
	}

	cq->handle = resp.cq;
	return &cq->ibv_cq;
}

/*
 * ibv_create_cq_ex: the CQE has the standard fields (byte_len, imm,
 * qp_num, src_qp, sl; slid and dlid_path_bits read 0 on RoCE) and no
 * timestamps, CVLAN, flow tag or tag-matching data; the device never
 * overruns a CQ and has no parent domains. What it lacks is EOPNOTSUPP.
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED is accepted (the lock stays).
 */
struct ibv_cq_ex *pvo_create_cq_ex(struct ibv_context *ibctx,
				   struct ibv_cq_init_attr_ex *attr)
{
	struct pvo_uverbs_create_cq_ex_resp resp = {};
	struct pvo_uverbs_create_cq_ex cmd = {};
	struct pvo_cq *cq;
	int ret;

	if ((attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}

	cq = pvo_cq_new(ibctx, attr->cqe);
	if (!cq)
		return NULL;

	pvo_cq_cmd(&cmd.drv_payload, cq, attr->channel);
	ret = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret) {
		pvo_cq_fail(cq, ret);
		return NULL;
	}

	cq->handle = resp.cq;
	return &cq->vcq.cq_ex;
}

/*
 * A new ring for cqe entries: the device moves the CQEs not polled yet
 * into it (same counters) before the kernel returns, so the switch under
 * the poll lock loses none; the old ring is freed after.
 */
int pvo_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct pvo_context *ctx = to_pvo_ctx(ibcq->context);
	struct pvo_device *dev = to_pvo_dev(ibcq->context->device);
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	struct pvo_uverbs_resize_cq cmd = {};
	struct ib_uverbs_resize_cq_resp resp;
	struct pvo_ring ring, old;
	int ret;

	if (cqe < 1 || (uint32_t)cqe > ctx->limits.max_cqe)
		return EINVAL;
	ret = pvo_ring_alloc(&ring, pvo_cq_entries(cqe, ctx->limits.max_cqe),
			     PVO_CQE_SHIFT, dev->page_size);
	if (ret)
		return ret;
	cmd.buf_addr = (uintptr_t)ring.buf;
	cmd.buf_size = ring.ring_size;
	cmd.entries = ring.num_entries;
	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd), &resp,
				sizeof(resp));
	if (!ret) {
		old = cq->ring;
		cq->ring = ring;
	}
	pthread_spin_unlock(&cq->lock);
	pvo_ring_free(ret ? &ring : &old);
	return ret;
}

int pvo_destroy_cq(struct ibv_cq *ibcq)
{
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	int ret;

	/* The device stops writing the ring before the kernel returns. */
	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	pvo_cq_free_ring(cq);
	free(cq);
	return 0;
}
