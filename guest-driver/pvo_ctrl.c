// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: the control queue. Every verb that needs the back-end is
 * one command: a device-readable part (pvo_cmd_hdr + request body) and a
 * device-writable part (pvo_resp_hdr + response body). Several commands may
 * be in flight; each waits for its own completion.
 */

#include <linux/dma-mapping.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/virtio.h>

#include "pvo.h"

static unsigned int ctrl_timeout_ms = 10000;
module_param(ctrl_timeout_ms, uint, 0644);
MODULE_PARM_DESC(ctrl_timeout_ms,
		 "How long a control command waits for the back-end (ms, default 10000)");

/* How often a waiting command checks whether the back-end went away. */
#define PVO_CTRL_SLICE	(HZ / 10)

static unsigned int ctrl_atomic_timeout_ms = 1000;
module_param(ctrl_atomic_timeout_ms, uint, 0644);
MODULE_PARM_DESC(ctrl_atomic_timeout_ms,
		 "How long a control command issued in atomic context (address handles for ib_cm) spins for the back-end (ms, default 1000)");

struct pvo_ctrl_req {
	struct completion done;
	bool abandoned;		/* the waiter gave up; whoever reaps frees */
	bool reset;		/* reaped by a device reset, not answered */
	u32 used_len;		/* bytes the device wrote */
	size_t resp_off;	/* offset of the writable part in buf */
	size_t out_len;		/* device-readable bytes */
	size_t in_len;		/* device-writable bytes */
	u8 buf[];
};

static const char * const pvo_cmd_names[PVO_CMD_MAX] = {
	[PVO_CMD_QUERY_DEVICE] = "QUERY_DEVICE",
	[PVO_CMD_QUERY_PORT] = "QUERY_PORT",
	[PVO_CMD_QUERY_GID] = "QUERY_GID",
	[PVO_CMD_ADD_GID] = "ADD_GID",
	[PVO_CMD_DEL_GID] = "DEL_GID",
	[PVO_CMD_QUERY_PKEY] = "QUERY_PKEY",
	[PVO_CMD_ALLOC_UCONTEXT] = "ALLOC_UCONTEXT",
	[PVO_CMD_DEALLOC_UCONTEXT] = "DEALLOC_UCONTEXT",
	[PVO_CMD_ALLOC_PD] = "ALLOC_PD",
	[PVO_CMD_DEALLOC_PD] = "DEALLOC_PD",
	[PVO_CMD_SET_DB_RING] = "SET_DB_RING",
	[PVO_CMD_CREATE_CQ] = "CREATE_CQ",
	[PVO_CMD_DESTROY_CQ] = "DESTROY_CQ",
	[PVO_CMD_REG_MR] = "REG_MR",
	[PVO_CMD_DEREG_MR] = "DEREG_MR",
	[PVO_CMD_CREATE_QP] = "CREATE_QP",
	[PVO_CMD_MODIFY_QP] = "MODIFY_QP",
	[PVO_CMD_QUERY_QP] = "QUERY_QP",
	[PVO_CMD_DESTROY_QP] = "DESTROY_QP",
	[PVO_CMD_CREATE_SRQ] = "CREATE_SRQ",
	[PVO_CMD_MODIFY_SRQ] = "MODIFY_SRQ",
	[PVO_CMD_QUERY_SRQ] = "QUERY_SRQ",
	[PVO_CMD_DESTROY_SRQ] = "DESTROY_SRQ",
	[PVO_CMD_CREATE_AH] = "CREATE_AH",
	[PVO_CMD_DESTROY_AH] = "DESTROY_AH",
};

const char *pvo_cmd_name(u16 opcode)
{
	if (opcode < PVO_CMD_MAX && pvo_cmd_names[opcode])
		return pvo_cmd_names[opcode];
	return "UNKNOWN";
}

static int pvo_status_to_errno(u32 status)
{
	switch (status) {
	case PVO_STATUS_OK:
		return 0;
	case PVO_STATUS_EINVAL:
		return -EINVAL;
	case PVO_STATUS_ENOENT:
		return -ENOENT;
	case PVO_STATUS_EPERM:
		return -EPERM;
	case PVO_STATUS_ENOSPC:
		return -ENOSPC;
	case PVO_STATUS_EOPNOTSUPP:
		return -EOPNOTSUPP;
	case PVO_STATUS_EBUSY:
		return -EBUSY;
	case PVO_STATUS_ENOMEM:
		return -ENOMEM;
	case PVO_STATUS_EFAULT:
		return -EFAULT;
	case PVO_STATUS_EHOSTUNREACH:
		return -EHOSTUNREACH;
	default:
		return -EIO;
	}
}

void pvo_ctrl_init(struct pvo_dev *dev, struct virtqueue *vq)
{
	struct pvo_ctrl *ctrl = &dev->ctrl;

	ctrl->vq = vq;
	spin_lock_init(&ctrl->lock);
	/* A command is a chain of two descriptors (no indirect ones assumed). */
	sema_init(&ctrl->slots, max(virtqueue_get_vring_size(vq) / 2, 1U));
	ctrl->dead = false;
}

/* Called with ctrl->lock held: hand a finished request to its waiter. */
static void pvo_ctrl_finish(struct pvo_ctrl *ctrl, struct pvo_ctrl_req *req,
			    u32 used_len, bool reset)
{
	up(&ctrl->slots);
	if (req->abandoned) {
		kfree(req);
		return;
	}
	req->used_len = used_len;
	req->reset = reset;
	complete(&req->done);
}

/* Virtqueue callback (interrupt context). */
void pvo_ctrl_done(struct virtqueue *vq)
{
	struct pvo_dev *dev = vq->vdev->priv;
	struct pvo_ctrl *ctrl = &dev->ctrl;
	struct pvo_ctrl_req *req;
	unsigned long flags;
	unsigned int len;

	spin_lock_irqsave(&ctrl->lock, flags);
	do {
		virtqueue_disable_cb(vq);
		while ((req = virtqueue_get_buf(vq, &len)))
			pvo_ctrl_finish(ctrl, req, len, false);
	} while (!virtqueue_enable_cb(vq));
	spin_unlock_irqrestore(&ctrl->lock, flags);
}

/* Called with ctrl->lock held: reap without waiting for the interrupt. */
static void pvo_ctrl_reap(struct pvo_ctrl *ctrl)
{
	struct pvo_ctrl_req *req;
	unsigned int len;

	while ((req = virtqueue_get_buf(ctrl->vq, &len)))
		pvo_ctrl_finish(ctrl, req, len, false);
}

/*
 * After the device is reset: nothing will answer any more, so fail the
 * commands still queued and refuse new ones.
 */
void pvo_ctrl_shutdown(struct pvo_dev *dev)
{
	struct pvo_ctrl *ctrl = &dev->ctrl;
	struct pvo_ctrl_req *req;
	unsigned long flags;

	spin_lock_irqsave(&ctrl->lock, flags);
	ctrl->dead = true;
	while ((req = virtqueue_detach_unused_buf(ctrl->vq)))
		pvo_ctrl_finish(ctrl, req, 0, true);
	spin_unlock_irqrestore(&ctrl->lock, flags);
}

/*
 * The back-end went away and took every object of this device with it;
 * a new one knows none of them. Commands fail at once instead of waiting
 * for an answer that cannot come, except the ones that free an object:
 * those succeed, as the object is gone, so that ib_core and applications
 * can tear down what they hold.
 */
void pvo_ctrl_lost(struct pvo_dev *dev)
{
	WRITE_ONCE(dev->ctrl.lost, true);
}

static bool pvo_cmd_frees(u16 opcode)
{
	switch (opcode) {
	case PVO_CMD_DEL_GID:
	case PVO_CMD_DEALLOC_UCONTEXT:
	case PVO_CMD_DEALLOC_PD:
	case PVO_CMD_DESTROY_CQ:
	case PVO_CMD_DEREG_MR:
	case PVO_CMD_DESTROY_QP:
	case PVO_CMD_DESTROY_SRQ:
	case PVO_CMD_DESTROY_AH:
	case PVO_CMD_DEALLOC_MW:
		return true;
	default:
		return false;
	}
}

static int pvo_ctrl_lost_result(u16 opcode)
{
	return pvo_cmd_frees(opcode) ? 0 : -EIO;
}

static int pvo_ctrl_result(struct pvo_dev *dev, u16 opcode,
			   struct pvo_ctrl_req *req, void *resp,
			   size_t resp_len)
{
	const struct pvo_resp_hdr *rhdr = (void *)(req->buf + req->resp_off);
	u32 status;
	int err;

	if (req->reset)
		return -ENODEV;
	if (req->used_len < sizeof(*rhdr)) {
		dev_err(&dev->vdev->dev,
			"control command %s: short response (%u bytes); the back-end does not speak interface version %u\n",
			pvo_cmd_name(opcode), req->used_len,
			PVO_INTERFACE_VERSION);
		return -EIO;
	}
	status = le32_to_cpu(rhdr->status);
	err = pvo_status_to_errno(status);
	if (err) {
		dev_dbg(&dev->vdev->dev, "control command %s: status %u (%d)\n",
			pvo_cmd_name(opcode), status, err);
		return err;
	}
	if (req->used_len < sizeof(*rhdr) + resp_len) {
		dev_err(&dev->vdev->dev,
			"control command %s: short response (%u of %zu bytes); the back-end does not speak interface version %u\n",
			pvo_cmd_name(opcode), req->used_len,
			sizeof(*rhdr) + resp_len, PVO_INTERFACE_VERSION);
		return -EIO;
	}
	if (resp_len)
		memcpy(resp, rhdr + 1, resp_len);
	return 0;
}

/* A request with the command header and body filled in. */
static struct pvo_ctrl_req *pvo_ctrl_req_new(u16 opcode, u32 ctx,
					     const void *req, size_t req_len,
					     size_t resp_len, gfp_t gfp)
{
	size_t out_len = sizeof(struct pvo_cmd_hdr) + req_len;
	size_t in_len = sizeof(struct pvo_resp_hdr) + resp_len;
	struct pvo_ctrl_req *creq;
	struct pvo_cmd_hdr *hdr;
	size_t resp_off;

	/* The device writes the response: keep it off the request's lines. */
	resp_off = ALIGN(out_len, dma_get_cache_alignment());
	creq = kzalloc(struct_size(creq, buf, resp_off + in_len), gfp);
	if (!creq)
		return NULL;
	init_completion(&creq->done);
	creq->resp_off = resp_off;
	creq->out_len = out_len;
	creq->in_len = in_len;
	hdr = (struct pvo_cmd_hdr *)creq->buf;
	hdr->opcode = cpu_to_le16(opcode);
	hdr->flags = 0;
	hdr->ctx = cpu_to_le32(ctx);
	if (req_len)
		memcpy(hdr + 1, req, req_len);
	return creq;
}

/* Queue @creq (a slot is held) and kick; on error the slot is returned. */
static int pvo_ctrl_queue(struct pvo_dev *dev, u16 opcode,
			  struct pvo_ctrl_req *creq)
{
	struct pvo_ctrl *ctrl = &dev->ctrl;
	struct scatterlist out_sg, in_sg, *sgs[2];
	unsigned long flags;
	bool kick = false;
	int err;

	sg_init_one(&out_sg, creq->buf, creq->out_len);
	sg_init_one(&in_sg, creq->buf + creq->resp_off, creq->in_len);
	sgs[0] = &out_sg;
	sgs[1] = &in_sg;

	spin_lock_irqsave(&ctrl->lock, flags);
	if (ctrl->dead) {
		err = -ENODEV;
	} else {
		err = virtqueue_add_sgs(ctrl->vq, sgs, 1, 1, creq, GFP_ATOMIC);
		kick = !err && virtqueue_kick_prepare(ctrl->vq);
	}
	spin_unlock_irqrestore(&ctrl->lock, flags);
	if (err) {
		up(&ctrl->slots);
		if (err != -ENODEV)
			dev_err_ratelimited(&dev->vdev->dev,
					    "control command %s: cannot queue it: %d\n",
					    pvo_cmd_name(opcode), err);
		return err;
	}
	if (kick)
		virtqueue_notify(ctrl->vq);
	return 0;
}

static void pvo_ctrl_log_timeout(struct pvo_dev *dev, u16 opcode,
				 unsigned int ms)
{
	dev_err_ratelimited(&dev->vdev->dev,
			    "control command %s (opcode %u) timed out after %u ms; the back-end (pvrdma-overlayd) is not answering: check that it runs and read its log\n",
			    pvo_cmd_name(opcode), opcode, ms);
}

/**
 * pvo_ctrl_cmd - execute one control command and wait for its response
 * @dev: the device
 * @opcode: enum pvo_cmd_opcode
 * @ctx: acting context (PVO_CTX_KERNEL for kernel objects)
 * @req: request body (little-endian), copied; may be NULL if @req_len is 0
 * @req_len: size of the request body
 * @resp: where the response body goes; may be NULL if @resp_len is 0
 * @resp_len: size of the expected response body
 *
 * Sleeps. Return: 0, the -errno of the back-end's status, -EIO for a
 * malformed response, -ETIMEDOUT if the back-end does not answer in time,
 * -ENODEV once the device is reset.
 */
int pvo_ctrl_cmd(struct pvo_dev *dev, u16 opcode, u32 ctx,
		 const void *req, size_t req_len, void *resp, size_t resp_len)
{
	struct pvo_ctrl *ctrl = &dev->ctrl;
	unsigned long timeout = msecs_to_jiffies(ctrl_timeout_ms), end;
	struct pvo_ctrl_req *creq;
	unsigned long flags;
	bool lost;
	int err;

	might_sleep();

	if (READ_ONCE(ctrl->lost))
		return pvo_ctrl_lost_result(opcode);
	creq = pvo_ctrl_req_new(opcode, ctx, req, req_len, resp_len,
				GFP_KERNEL);
	if (!creq)
		return -ENOMEM;

	if (down_timeout(&ctrl->slots, timeout)) {
		dev_err(&dev->vdev->dev,
			"control command %s: control queue stayed full for %u ms; the back-end (pvrdma-overlayd) is not processing commands\n",
			pvo_cmd_name(opcode), ctrl_timeout_ms);
		kfree(creq);
		return -ETIMEDOUT;
	}
	err = pvo_ctrl_queue(dev, opcode, creq);
	if (err) {
		kfree(creq);
		return err;
	}

	/*
	 * Not interruptible: destroy commands run while a process exits with
	 * a fatal signal pending and must still reach the back-end. In
	 * slices, to notice a back-end that went away meanwhile.
	 */
	end = jiffies + timeout;
	while (!wait_for_completion_timeout(&creq->done, PVO_CTRL_SLICE)) {
		lost = READ_ONCE(ctrl->lost);
		if (!lost && time_before(jiffies, end))
			continue;
		spin_lock_irqsave(&ctrl->lock, flags);
		if (!completion_done(&creq->done)) {
			/* The device still owns the buffers: reaping frees. */
			creq->abandoned = true;
			spin_unlock_irqrestore(&ctrl->lock, flags);
			if (lost)
				return pvo_ctrl_lost_result(opcode);
			pvo_ctrl_log_timeout(dev, opcode, ctrl_timeout_ms);
			return -ETIMEDOUT;
		}
		spin_unlock_irqrestore(&ctrl->lock, flags);
		break;
	}

	err = pvo_ctrl_result(dev, opcode, creq, resp, resp_len);
	kfree(creq);
	return err;
}

/**
 * pvo_ctrl_cmd_atomic - pvo_ctrl_cmd() for callers that cannot sleep
 * @dev: the device
 * @opcode: enum pvo_cmd_opcode
 * @ctx: acting context
 * @req: request body
 * @req_len: size of the request body
 * @resp: response body
 * @resp_len: size of the response body
 *
 * ib_cm creates address handles under spinlocks with interrupts off, so
 * the completion interrupt may never come on this CPU: poll the used ring
 * instead, for at most ctrl_atomic_timeout_ms. Fails with -EBUSY rather
 * than wait for a free slot.
 */
int pvo_ctrl_cmd_atomic(struct pvo_dev *dev, u16 opcode, u32 ctx,
			const void *req, size_t req_len, void *resp,
			size_t resp_len)
{
	struct pvo_ctrl *ctrl = &dev->ctrl;
	struct pvo_ctrl_req *creq;
	unsigned long flags;
	ktime_t deadline;
	bool done;
	int err;

	if (READ_ONCE(ctrl->lost))
		return pvo_ctrl_lost_result(opcode);
	creq = pvo_ctrl_req_new(opcode, ctx, req, req_len, resp_len,
				GFP_ATOMIC);
	if (!creq)
		return -ENOMEM;
	if (down_trylock(&ctrl->slots)) {
		kfree(creq);
		return -EBUSY;
	}
	err = pvo_ctrl_queue(dev, opcode, creq);
	if (err) {
		kfree(creq);
		return err;
	}

	deadline = ktime_add_ms(ktime_get(), ctrl_atomic_timeout_ms);
	for (;;) {
		spin_lock_irqsave(&ctrl->lock, flags);
		pvo_ctrl_reap(ctrl);
		done = completion_done(&creq->done);
		if (!done && READ_ONCE(ctrl->lost)) {
			creq->abandoned = true;
			spin_unlock_irqrestore(&ctrl->lock, flags);
			return pvo_ctrl_lost_result(opcode);
		}
		if (!done && ktime_after(ktime_get(), deadline)) {
			creq->abandoned = true;
			spin_unlock_irqrestore(&ctrl->lock, flags);
			pvo_ctrl_log_timeout(dev, opcode, ctrl_atomic_timeout_ms);
			return -ETIMEDOUT;
		}
		spin_unlock_irqrestore(&ctrl->lock, flags);
		if (done)
			break;
		cpu_relax();
	}

	err = pvo_ctrl_result(dev, opcode, creq, resp, resp_len);
	kfree(creq);
	return err;
}

/* A command whose body is one handle: DEREG_MR, DESTROY_*. */
int pvo_ctrl_handle_cmd(struct pvo_dev *dev, u16 opcode, u32 ctx, u32 handle)
{
	struct pvo_cmd_handle cmd = { .handle = cpu_to_le32(handle) };

	return pvo_ctrl_cmd(dev, opcode, ctx, &cmd, sizeof(cmd), NULL, 0);
}
