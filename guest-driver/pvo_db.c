// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: doorbell records. Each context (the kernel, and every
 * user context) registers one page with PVO_CMD_SET_DB_RING: a ring header
 * and PVO_DB_RING_ENTRIES QP handles. A QP with new send work appends its
 * handle once (its SQ's db_pending guards that) and kicks the context's
 * doorbell queue; the device pops the records, so it only looks at QPs
 * with work. This file has the kernel's page and ring; user contexts get
 * theirs from pvo_db_user_*() and fill them from user space.
 *
 * Contexts beyond the user doorbell queues write slot pages of BAR 2;
 * QEMU appends their slot to a notify ring in the area set up here and
 * kicks a shared queue (include/pvo-device.h).
 */

#include <linux/dma-mapping.h>
#include <linux/virtio.h>

#include "pvo_mem.h"
#include "pvo_verbs.h"

/* Record slot of a free-running counter (the entry count is a power of 2). */
static_assert(!(PVO_DB_RING_ENTRIES & (PVO_DB_RING_ENTRIES - 1)));

static inline u32 pvo_db_slot(u32 counter)
{
	return counter & (PVO_DB_RING_ENTRIES - 1);
}

static int pvo_db_register(struct pvo_dev *dev, u32 ctx, dma_addr_t gpa)
{
	struct pvo_cmd_set_db_ring cmd = { .gpa = cpu_to_le64(gpa) };

	return pvo_ctrl_cmd(dev, PVO_CMD_SET_DB_RING, ctx, &cmd, sizeof(cmd),
			    NULL, 0);
}

/* Probe: the kernel's record page, registered for PVO_CTX_KERNEL. */
int pvo_kdb_init(struct pvo_dev *dev)
{
	struct pvo_kdb *kdb = &dev->kdb;
	int err;

	spin_lock_init(&kdb->lock);
	atomic_set(&kdb->nqps, 0);
	err = pvo_page_alloc(dev, &kdb->page);
	if (err)
		return err;
	err = pvo_db_register(dev, PVO_CTX_KERNEL, kdb->page.dma);
	if (err) {
		dev_err(&dev->vdev->dev,
			"SET_DB_RING for the kernel failed: %d; the back-end must implement interface version %u (data path): update pvrdma-overlayd\n",
			err, PVO_INTERFACE_VERSION);
		pvo_page_free(dev, &kdb->page);
		return err;
	}
	kdb->registered = true;
	return 0;
}

/*
 * Probe: the notify area, told to QEMU (BAR 2 registers) and to the
 * back-end. Without it user contexts are limited to the user queues, so
 * a failure is logged, not fatal.
 */
void pvo_notify_init(struct pvo_dev *dev)
{
	struct pvo_cmd_set_notify_area cmd = {};
	size_t size = pvo_notify_area_size(dev->num_queues);
	int err = -ENOMEM;

	dev->notify_va = dma_alloc_coherent(dev->dma_dev, size,
					    &dev->notify_dma, GFP_KERNEL);
	if (!dev->notify_va)
		goto limited;
	dev->notify_size = size;
	iowrite32(lower_32_bits(dev->notify_dma),
		  dev->db_regs + PVO_DBREG_NOTIFY_LO);
	iowrite32(upper_32_bits(dev->notify_dma),
		  dev->db_regs + PVO_DBREG_NOTIFY_HI);
	cmd.gpa = cpu_to_le64(dev->notify_dma);
	cmd.num_queues = cpu_to_le32(dev->num_queues);
	err = pvo_ctrl_cmd(dev, PVO_CMD_SET_NOTIFY_AREA, PVO_CTX_KERNEL, &cmd,
			   sizeof(cmd), NULL, 0);
	if (!err)
		return;
	iowrite32(0, dev->db_regs + PVO_DBREG_NOTIFY_LO);
	iowrite32(0, dev->db_regs + PVO_DBREG_NOTIFY_HI);
	pvo_notify_free(dev);
limited:
	dev_warn(&dev->vdev->dev,
		 "no notify area for slot doorbell pages (%d): user contexts are limited to the %u user doorbell queues\n",
		 err, dev->num_queues - PVO_VQ_DB_FIRST_USER);
}

/* After the device is reset (or the area was refused). */
void pvo_notify_free(struct pvo_dev *dev)
{
	if (!dev->notify_va)
		return;
	dma_free_coherent(dev->dma_dev, dev->notify_size, dev->notify_va,
			  dev->notify_dma);
	dev->notify_va = NULL;
}

/* After the device is reset: it no longer reads the page. */
void pvo_kdb_free(struct pvo_dev *dev)
{
	pvo_page_free(dev, &dev->kdb.page);
	dev->kdb.registered = false;
}

/*
 * Append a kernel QP's handle and kick. The caller won the QP's
 * db_pending exchange, so the QP is not in the ring yet, and at most
 * PVO_DB_RING_ENTRIES kernel QPs exist, so there is room.
 */
void pvo_kdb_ring(struct pvo_dev *dev, u32 qp_handle)
{
	struct pvo_kdb *kdb = &dev->kdb;
	struct pvo_ring_hdr *hdr = kdb->page.va;
	__le32 *slots = kdb->page.va + PVO_DB_RING_ENTRY_OFF;
	unsigned long flags;
	u32 prod, cons;

	spin_lock_irqsave(&kdb->lock, flags);
	prod = pvo_ring_own(&hdr->prod);
	cons = pvo_ring_peer(&hdr->cons);
	WARN_ONCE(prod - cons >= PVO_DB_RING_ENTRIES,
		  "pvrdma_overlay: kernel doorbell record ring full (prod %u cons %u)\n",
		  prod, cons);
	slots[pvo_db_slot(prod)] = cpu_to_le32(qp_handle);
	pvo_ring_publish(&hdr->prod, prod + 1);
	spin_unlock_irqrestore(&kdb->lock, flags);

	/* MMIO write: ordered after the record by the accessor's barrier. */
	virtqueue_notify(dev->vqs[PVO_VQ_DB_KERNEL]);
}

/*
 * A user context's record page: ordinary memory, mapped cached into the
 * process at PVO_MMAP_DB_RING, registered for the context.
 */
int pvo_db_user_init(struct pvo_dev *dev, struct pvo_ucontext *uc)
{
	int err;

	uc->db_ring = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!uc->db_ring)
		return -ENOMEM;
	uc->db_ring_dma = dma_map_page(dev->dma_dev, uc->db_ring, 0,
				       PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev->dma_dev, uc->db_ring_dma)) {
		err = -ENOMEM;
		goto err_free;
	}
	err = pvo_db_register(dev, uc->ctx, uc->db_ring_dma);
	if (err) {
		dev_err_ratelimited(&dev->vdev->dev,
				    "SET_DB_RING for context %u failed: %d\n",
				    uc->ctx, err);
		goto err_unmap;
	}
	return 0;

err_unmap:
	dma_unmap_page(dev->dma_dev, uc->db_ring_dma, PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
err_free:
	__free_page(uc->db_ring);
	uc->db_ring = NULL;
	return err;
}

/* After DEALLOC_UCONTEXT; @in_use: the device may still touch the page. */
void pvo_db_user_free(struct pvo_dev *dev, struct pvo_ucontext *uc,
		      bool in_use)
{
	if (!uc->db_ring)
		return;
	if (in_use) {
		dev_warn(&dev->vdev->dev,
			 "context %u: keeping its doorbell record page, the back-end may still use it\n",
			 uc->ctx);
		return;
	}
	dma_unmap_page(dev->dma_dev, uc->db_ring_dma, PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
	__free_page(uc->db_ring);
	uc->db_ring = NULL;
}
