// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: address handles. The device keeps each AH's validated
 * address vector; UD WQEs name it by handle. ib_core resolves the RoCE
 * destination MAC before it calls create_ah.
 *
 * ib_cm creates and destroys AHs in atomic context (spinlocks held, no
 * RDMA_CREATE_AH_SLEEPABLE), so creating then polls the control queue,
 * and destroying is deferred to a work item.
 */

#include <linux/slab.h>
#include <rdma/ib_user_verbs.h>

#include "rdma/pvrdma_overlay-abi.h"
#include "pvo_verbs.h"

struct pvo_ah_gc_entry {
	struct list_head list;
	u32 handle;
	u32 ctx;
};

static void pvo_ah_destroy_cmd(struct pvo_dev *dev, u32 ctx, u32 handle)
{
	int err;

	err = pvo_ctrl_handle_cmd(dev, PVO_CMD_DESTROY_AH, ctx, handle);
	if (err && err != -ENODEV)
		dev_warn_ratelimited(&dev->vdev->dev,
				     "DESTROY_AH %u (context %u) failed: %d\n",
				     handle, ctx, err);
}

static void pvo_ah_gc_work(struct work_struct *work)
{
	struct pvo_dev *dev = container_of(work, struct pvo_dev, ah_gc_work);
	struct pvo_ah_gc_entry *e, *next;
	LIST_HEAD(list);

	spin_lock_irq(&dev->ah_gc_lock);
	list_splice_init(&dev->ah_gc, &list);
	spin_unlock_irq(&dev->ah_gc_lock);

	list_for_each_entry_safe(e, next, &list, list) {
		pvo_ah_destroy_cmd(dev, e->ctx, e->handle);
		kfree(e);
	}
}

void pvo_ah_gc_init(struct pvo_dev *dev)
{
	spin_lock_init(&dev->ah_gc_lock);
	INIT_LIST_HEAD(&dev->ah_gc);
	INIT_WORK(&dev->ah_gc_work, pvo_ah_gc_work);
}

/* After the ib_device is gone: every deferred destroy reaches the device. */
void pvo_ah_gc_flush(struct pvo_dev *dev)
{
	flush_work(&dev->ah_gc_work);
}

int pvo_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata)
{
	struct ib_device *ibdev = ibah->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_pd *pd = to_pvo_pd(ibah->pd);
	struct pvo_ah *ah = to_pvo_ah(ibah);
	struct pvo_cmd_create_ah cmd = { .pd = cpu_to_le32(pd->pdn) };
	struct pvo_resp_create_ah resp;
	int err;

	err = pvo_av_from_ah_attr(ibdev, init->ah_attr, &cmd.av);
	if (err)
		return err;

	ah->ctx = pd->ctx;
	if (init->flags & RDMA_CREATE_AH_SLEEPABLE)
		err = pvo_ctrl_cmd(dev, PVO_CMD_CREATE_AH, ah->ctx, &cmd,
				   sizeof(cmd), &resp, sizeof(resp));
	else
		err = pvo_ctrl_cmd_atomic(dev, PVO_CMD_CREATE_AH, ah->ctx,
					  &cmd, sizeof(cmd), &resp,
					  sizeof(resp));
	if (err)
		return err;
	ah->handle = le32_to_cpu(resp.ah);

	if (udata) {
		struct pvo_create_ah_resp uresp = { .ah = ah->handle };

		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err) {
			pvo_ah_destroy_cmd(dev, ah->ctx, ah->handle);
			return err;
		}
	}
	return 0;
}

int pvo_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct pvo_dev *dev = to_pvo_dev(ibah->device);
	struct pvo_ah *ah = to_pvo_ah(ibah);
	struct pvo_ah_gc_entry *e;
	unsigned long irqflags;

	if (flags & RDMA_DESTROY_AH_SLEEPABLE) {
		pvo_ah_destroy_cmd(dev, ah->ctx, ah->handle);
		return 0;
	}

	/* Without memory the AH stays in the back-end until a reset. */
	e = kmalloc(sizeof(*e), GFP_ATOMIC);
	if (!e)
		return 0;
	e->handle = ah->handle;
	e->ctx = ah->ctx;
	spin_lock_irqsave(&dev->ah_gc_lock, irqflags);
	list_add_tail(&e->list, &dev->ah_gc);
	spin_unlock_irqrestore(&dev->ah_gc_lock, irqflags);
	schedule_work(&dev->ah_gc_work);
	return 0;
}
