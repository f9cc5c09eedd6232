/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rdma-core provider for the pvrdma-overlay paravirtual RDMA device: the
 * provider's objects and the verbs it implements.
 */
#ifndef PVRDMA_OVERLAY_H
#define PVRDMA_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include <ccan/container_of.h>
#include <infiniband/driver.h>

#include "pvo-abi.h"

/* One per uverbs device the match table accepted. */
struct pvo_device {
	struct verbs_device ibv_dev;
	size_t page_size;		/* mmap granularity of the uverbs fd */
	unsigned int abi_version;	/* kernel uverbs ABI of the device */
};

/* One per ibv_open_device(); owns a back-end context and its doorbell. */
struct pvo_context {
	struct verbs_context ibv_ctx;
	uint32_t handle;		/* back-end context handle */
	uint32_t db_queue;		/* doorbell queue index (diagnostics) */
	/*
	 * The context's doorbell page: an uncached MMIO page of BAR 2 that
	 * only this process has mapped. The data path writes it after
	 * publishing work in the shared rings; nothing ever reads it.
	 */
	void *db_page;
	size_t db_page_size;
};

struct pvo_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;			/* back-end PD handle */
};

static inline struct pvo_device *to_pvo_dev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct pvo_device, ibv_dev.device);
}

static inline struct pvo_context *to_pvo_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct pvo_context, ibv_ctx.context);
}

static inline struct pvo_pd *to_pvo_pd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct pvo_pd, ibv_pd);
}

/* verbs.c */
int pvo_query_device(struct ibv_context *ibctx,
		     const struct ibv_query_device_ex_input *input,
		     struct ibv_device_attr_ex *attr, size_t attr_size);
int pvo_query_port(struct ibv_context *ibctx, uint8_t port,
		   struct ibv_port_attr *attr);
struct ibv_pd *pvo_alloc_pd(struct ibv_context *ibctx);
int pvo_dealloc_pd(struct ibv_pd *ibpd);

#endif /* PVRDMA_OVERLAY_H */
