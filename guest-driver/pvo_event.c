// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: the event queue. The driver keeps device-writable buffers
 * of one struct pvo_event each posted; the back-end fills one per event.
 * Port events are handed to the netdev binding, which combines them with
 * the netdev's state; CQ, QP and SRQ events go to the object's handler.
 *
 * Events are handled under the queue's lock. Objects are found by handle
 * in xarrays; a destroy verb erases its object and then calls
 * pvo_event_sync(), so no handler still runs for it once it is freed.
 */

#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/virtio.h>

#include "pvo.h"

#define PVO_EVENT_BUFS	64U

static int pvo_event_post(struct pvo_event_queue *q, struct pvo_event *ev,
			  gfp_t gfp)
{
	struct scatterlist sg;

	sg_init_one(&sg, ev, sizeof(*ev));
	return virtqueue_add_inbuf(q->vq, &sg, 1, ev, gfp);
}

/* Allocate and post the buffers; the kick waits for pvo_event_start(). */
int pvo_event_init(struct pvo_dev *dev, struct virtqueue *vq)
{
	struct pvo_event_queue *q = &dev->events;
	unsigned int i;
	int err;

	q->vq = vq;
	spin_lock_init(&q->lock);
	q->nbufs = min(virtqueue_get_vring_size(vq), PVO_EVENT_BUFS);
	q->bufs = kcalloc(q->nbufs, sizeof(*q->bufs), GFP_KERNEL);
	if (!q->bufs)
		return -ENOMEM;

	for (i = 0; i < q->nbufs; i++) {
		err = pvo_event_post(q, &q->bufs[i], GFP_KERNEL);
		if (err) {
			dev_err(&dev->vdev->dev,
				"cannot post event buffer %u of %u: %d\n",
				i, q->nbufs, err);
			/* Posted buffers are taken back by pvo_event_shutdown. */
			return err;
		}
	}
	return 0;
}

/* After DRIVER_OK: tell the device the buffers are there. */
void pvo_event_start(struct pvo_dev *dev)
{
	struct pvo_event_queue *q = &dev->events;
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	virtqueue_kick(q->vq);
	spin_unlock_irqrestore(&q->lock, flags);
}

static void pvo_event_handle(struct pvo_dev *dev, const struct pvo_event *ev)
{
	u32 type = le32_to_cpu(ev->type);
	u32 handle = le32_to_cpu(ev->handle);

	switch (type) {
	case PVO_EV_PORT_ACTIVE:
	case PVO_EV_PORT_ERR:
		if (handle != 1) {
			dev_warn_ratelimited(&dev->vdev->dev,
					     "port event %u for port %u: the device has only port 1\n",
					     type, handle);
			return;
		}
		pvo_netdev_port_changed(dev);
		return;
	case PVO_EV_CQ_COMP:
	case PVO_EV_CQ_ERR:
		pvo_cq_event(dev, type, handle);
		return;
	case PVO_EV_QP_FATAL:
	case PVO_EV_QP_LAST_WQE:
	case PVO_EV_QP_REQ_ERR:
	case PVO_EV_QP_ACCESS_ERR:
	case PVO_EV_COMM_EST:
	case PVO_EV_SQ_DRAINED:
		pvo_qp_event(dev, type, handle);
		return;
	case PVO_EV_SRQ_LIMIT:
		pvo_srq_event(dev, type, handle);
		return;
	case PVO_EV_DEVICE_FATAL:
		dev_err(&dev->vdev->dev,
			"the back-end reports a fatal device error; read its log, then reload the driver\n");
		pvo_netdev_device_fatal(dev);
		return;
	default:
		dev_warn_ratelimited(&dev->vdev->dev,
				     "unknown event type %u (handle %u) from the back-end\n",
				     type, handle);
	}
}

/* Virtqueue callback (interrupt context). */
void pvo_event_done(struct virtqueue *vq)
{
	struct pvo_dev *dev = vq->vdev->priv;
	struct pvo_event_queue *q = &dev->events;
	struct pvo_event *ev;
	unsigned long flags;
	unsigned int len;
	bool reposted = false;
	int err;

	spin_lock_irqsave(&q->lock, flags);
	do {
		virtqueue_disable_cb(vq);
		while ((ev = virtqueue_get_buf(vq, &len))) {
			if (len >= sizeof(*ev))
				pvo_event_handle(dev, ev);
			else
				dev_warn_ratelimited(&dev->vdev->dev,
						     "short event (%u bytes) from the back-end ignored\n",
						     len);
			/* The slot just freed takes the buffer back. */
			err = pvo_event_post(q, ev, GFP_ATOMIC);
			if (err)
				dev_warn_ratelimited(&dev->vdev->dev,
						     "cannot repost an event buffer: %d\n",
						     err);
			else
				reposted = true;
		}
	} while (!virtqueue_enable_cb(vq));

	if (reposted)
		virtqueue_kick(vq);
	spin_unlock_irqrestore(&q->lock, flags);
}

/*
 * Wait for event handlers that may have found an object before it was
 * erased from its xarray.
 */
void pvo_event_sync(struct pvo_dev *dev)
{
	struct pvo_event_queue *q = &dev->events;

	spin_lock_irq(&q->lock);
	spin_unlock_irq(&q->lock);
}

/* After the device is reset: take the buffers back and free them. */
void pvo_event_shutdown(struct pvo_dev *dev)
{
	struct pvo_event_queue *q = &dev->events;

	if (q->vq)
		while (virtqueue_detach_unused_buf(q->vq))
			;
	kfree(q->bufs);
	q->bufs = NULL;
}
