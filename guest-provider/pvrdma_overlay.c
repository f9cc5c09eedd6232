// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider registration: which uverbs devices are ours, and the life cycle
 * of a device and of a user context (with its doorbell page and doorbell
 * record page).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pvo-device.h"
#include "pvrdma_overlay.h"

static void pvo_free_context(struct ibv_context *ibctx);

/* Verbs not listed here are answered by libibverbs with EOPNOTSUPP. */
static const struct verbs_context_ops pvo_ctx_ops = {
	.free_context = pvo_free_context,
	.query_device_ex = pvo_query_device,
	.query_port = pvo_query_port,
	.alloc_pd = pvo_alloc_pd,
	.dealloc_pd = pvo_dealloc_pd,
	.reg_mr = pvo_reg_mr,
	.dereg_mr = pvo_dereg_mr,
	.alloc_mw = pvo_alloc_mw,
	.dealloc_mw = pvo_dealloc_mw,
	.bind_mw = pvo_bind_mw,
	.rereg_mr = pvo_rereg_mr,
	.create_cq = pvo_create_cq,
	.create_cq_ex = pvo_create_cq_ex,
	.destroy_cq = pvo_destroy_cq,
	.resize_cq = pvo_resize_cq,
	.poll_cq = pvo_poll_cq,
	.req_notify_cq = pvo_req_notify_cq,
	.create_qp = pvo_create_qp,
	.create_qp_ex = pvo_create_qp_ex,
	.query_qp = pvo_query_qp,
	.modify_qp = pvo_modify_qp,
	.destroy_qp = pvo_destroy_qp,
	.post_send = pvo_post_send,
	.post_recv = pvo_post_recv,
	.create_srq = pvo_create_srq,
	.modify_srq = pvo_modify_srq,
	.query_srq = pvo_query_srq,
	.destroy_srq = pvo_destroy_srq,
	.post_srq_recv = pvo_post_srq_recv,
	.create_ah = pvo_create_ah,
	.destroy_ah = pvo_destroy_ah,
	.attach_mcast = pvo_attach_mcast,
	.detach_mcast = pvo_detach_mcast,
};

/* Maps page `pgoff' of the uverbs fd; NULL with errno set on failure. */
static void *pvo_map_page(struct pvo_context *ctx, struct pvo_device *dev,
			  off_t pgoff, int prot)
{
	void *p;

	p = mmap(NULL, dev->page_size, prot, MAP_SHARED,
		 ctx->ibv_ctx.context.cmd_fd, pgoff * (off_t)dev->page_size);
	return p == MAP_FAILED ? NULL : p;
}

/* The limits create_cq / create_qp / create_srq check requests against. */
static int pvo_read_limits(struct pvo_context *ctx, uint32_t max_inline)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	struct ibv_device_attr_ex attr = {};
	int ret;

	ret = ibv_cmd_query_device_any(&ctx->ibv_ctx.context, NULL, &attr,
				       sizeof(attr), &resp, &resp_size);
	if (ret)
		return ret;

	ctx->limits.max_qp_wr = attr.orig_attr.max_qp_wr;
	ctx->limits.max_sge = attr.orig_attr.max_sge;
	ctx->limits.max_cqe = attr.orig_attr.max_cqe;
	ctx->limits.max_srq_wr = attr.orig_attr.max_srq_wr;
	ctx->limits.max_srq_sge = attr.orig_attr.max_srq_sge;
	/* uverbs query_device does not carry it; the context response does */
	ctx->limits.max_inline_data = max_inline ? max_inline :
				      PVO_MAX_INLINE_DATA;
	return 0;
}

static struct verbs_context *pvo_alloc_context(struct ibv_device *ibdev,
					       int cmd_fd, void *private_data)
{
	struct pvo_device *dev = to_pvo_dev(ibdev);
	struct pvo_uverbs_get_context_resp resp = {};
	struct ibv_get_context cmd;
	struct pvo_context *ctx;
	int ret;

	/* No upstream driver id: the kernel does not check it. */
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		verbs_err(&ctx->ibv_ctx,
			  "pvrdma_overlay: %s: allocating a user context failed: %s\n",
			  ibdev->name, strerror(ret));
		goto err_uninit;
	}

	/*
	 * Printed unconditionally: a mismatch is an installation error that
	 * no application can work around, and it must not look like a bug.
	 */
	if (resp.interface_version != PVO_INTERFACE_VERSION) {
		fprintf(stderr,
			"pvrdma_overlay: %s: the kernel driver speaks device interface version %u but this provider speaks %u; install the libpvrdma_overlay provider built together with the loaded pvrdma_overlay.ko\n",
			ibdev->name, resp.interface_version,
			PVO_INTERFACE_VERSION);
		ret = EPROTONOSUPPORT;
		goto err_uninit;
	}
	ctx->handle = resp.ctx;
	ctx->db_queue = resp.db_queue;

	/* the ops before the first command that is not GET_CONTEXT */
	verbs_set_ops(&ctx->ibv_ctx, &pvo_ctx_ops);

	ret = pvo_read_limits(ctx, resp.max_inline_data);
	if (ret) {
		verbs_err(&ctx->ibv_ctx,
			  "pvrdma_overlay: %s: querying the device limits failed: %s\n",
			  ibdev->name, strerror(ret));
		goto err_uninit;
	}

	ctx->db_page = pvo_map_page(ctx, dev, PVO_MMAP_DOORBELL, PROT_WRITE);
	if (!ctx->db_page) {
		ret = errno;
		verbs_err(&ctx->ibv_ctx,
			  "pvrdma_overlay: %s: mapping the doorbell page (queue %u) failed: %s\n",
			  ibdev->name, ctx->db_queue, strerror(ret));
		goto err_uninit;
	}

	ctx->db_ring = pvo_map_page(ctx, dev, PVO_MMAP_DB_RING,
				    PROT_READ | PROT_WRITE);
	if (!ctx->db_ring) {
		ret = errno;
		verbs_err(&ctx->ibv_ctx,
			  "pvrdma_overlay: %s: mapping the doorbell record page failed: %s; the kernel log (dmesg) has the driver's reason\n",
			  ibdev->name, strerror(ret));
		goto err_unmap_db;
	}

	ret = pthread_spin_init(&ctx->db_lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_unmap_ring;

	return &ctx->ibv_ctx;

err_unmap_ring:
	munmap(ctx->db_ring, dev->page_size);
err_unmap_db:
	munmap(ctx->db_page, dev->page_size);
err_uninit:
	/* Closes cmd_fd, which releases the kernel's ucontext too. */
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

static void pvo_free_context(struct ibv_context *ibctx)
{
	struct pvo_context *ctx = to_pvo_ctx(ibctx);
	struct pvo_device *dev = to_pvo_dev(ibctx->device);

	pthread_spin_destroy(&ctx->db_lock);
	munmap(ctx->db_ring, dev->page_size);
	munmap(ctx->db_page, dev->page_size);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *pvo_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct pvo_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	dev->page_size = sysconf(_SC_PAGESIZE);
	dev->abi_version = sysfs_dev->abi_ver;
	return &dev->ibv_dev;
}

static void pvo_uninit_device(struct verbs_device *vdev)
{
	free(to_pvo_dev(&vdev->device));
}

/* The modalias below spells the virtio device id in hex. */
static_assert(PVO_VIRTIO_ID == 0x2a, "match table out of date");

static const struct verbs_match_ent pvo_match_table[] = {
	/* the ib_device's parent is the virtio device, any vendor */
	VERBS_MODALIAS_MATCH("virtio:d0000002Av*", NULL),
	/* fallback when sysfs has no device/modalias for the ib_device */
	VERBS_NAME_MATCH("pvrdma_overlay", NULL),
	{}
};

static const struct verbs_device_ops pvo_dev_ops = {
	.name = "pvrdma_overlay",
	.match_min_abi_version = PVO_UVERBS_ABI_VERSION,
	.match_max_abi_version = PVO_UVERBS_ABI_VERSION,
	.match_table = pvo_match_table,
	.alloc_device = pvo_alloc_device,
	.uninit_device = pvo_uninit_device,
	.alloc_context = pvo_alloc_context,
};
PROVIDER_DRIVER(pvrdma_overlay, pvo_dev_ops);
