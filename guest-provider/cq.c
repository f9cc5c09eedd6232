// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queue life cycle: the provider allocates the ring, the kernel
 * pins it and creates the device CQ. Polling and arming are in poll.c.
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

struct ibv_cq *pvo_create_cq(struct ibv_context *ibctx, int cqe,
			     struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct pvo_context *ctx = to_pvo_ctx(ibctx);
	struct pvo_device *dev = to_pvo_dev(ibctx->device);
	struct pvo_uverbs_create_cq_resp resp = {};
	struct pvo_uverbs_create_cq cmd = {};
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
	if (ret)
		goto err_free;

	cmd.buf_addr = (uintptr_t)cq->ring.buf;
	cmd.buf_size = cq->ring.ring_size;
	cmd.entries = cq->ring.num_entries;
	/* Without a channel nobody can wait for an event: the device need
	 * not look for arming after each CQE. */
	if (!channel)
		cmd.flags = PVO_CREATE_CQ_NO_EVENTS;
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_ring;

	cq->handle = resp.cq;
	return &cq->ibv_cq;

err_ring:
	pvo_cq_free_ring(cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
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
