// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider registration: which uverbs devices are ours, and the life cycle
 * of a device and of a user context (with its doorbell page).
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
};

static int pvo_map_doorbell(struct pvo_context *ctx, struct pvo_device *dev)
{
	off_t offset = (off_t)PVO_MMAP_DOORBELL * dev->page_size;

	ctx->db_page = mmap(NULL, dev->page_size, PROT_WRITE, MAP_SHARED,
			    ctx->ibv_ctx.context.cmd_fd, offset);
	if (ctx->db_page == MAP_FAILED) {
		ctx->db_page = NULL;
		return errno;
	}
	ctx->db_page_size = dev->page_size;
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

	ret = pvo_map_doorbell(ctx, dev);
	if (ret) {
		verbs_err(&ctx->ibv_ctx,
			  "pvrdma_overlay: %s: mapping the doorbell page (queue %u) failed: %s\n",
			  ibdev->name, ctx->db_queue, strerror(ret));
		goto err_uninit;
	}

	verbs_set_ops(&ctx->ibv_ctx, &pvo_ctx_ops);
	return &ctx->ibv_ctx;

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

	munmap(ctx->db_page, ctx->db_page_size);
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
