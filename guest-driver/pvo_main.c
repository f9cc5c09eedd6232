// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: module entry and the virtio driver. Probe reads the config
 * space, maps the doorbell BAR, sets up the control, event and doorbell
 * virtqueues, checks that the back-end answers, and starts looking for the
 * netdev the ib_device binds to (pvo_netdev.c).
 */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>

#include "pvo.h"

static int pvo_read_config(struct pvo_dev *dev)
{
	struct virtio_device *vdev = dev->vdev;
	u32 version;
	u16 num_queues;

	virtio_cread_le(vdev, struct pvo_config, version, &version);
	if (version != PVO_INTERFACE_VERSION) {
		dev_err(&vdev->dev,
			"device interface version %u, this driver speaks %u: install a matching pvrdma-overlayd and pvrdma_overlay.ko\n",
			version, PVO_INTERFACE_VERSION);
		return -ENODEV;
	}

	virtio_cread_le(vdev, struct pvo_config, num_queues, &num_queues);
	if (num_queues <= PVO_VQ_DB_KERNEL || num_queues > PVO_MAX_QUEUES) {
		dev_err(&vdev->dev,
			"the device has %u virtqueues; need %u..%u (control, event, kernel doorbell, user doorbells)\n",
			num_queues, PVO_VQ_DB_KERNEL + 1, PVO_MAX_QUEUES);
		return -ENODEV;
	}
	dev->num_queues = num_queues;

	virtio_cread_le(vdev, struct pvo_config, mtu, &dev->mtu);
	virtio_cread_bytes(vdev, offsetof(struct pvo_config, mac), dev->mac,
			   ETH_ALEN);
	if (!is_valid_ether_addr(dev->mac)) {
		dev_err(&vdev->dev,
			"the device's MAC %pM is not a valid unicast address: set the VM's mac in the back-end's tenant config\n",
			dev->mac);
		return -ENODEV;
	}
	return 0;
}

static u32 pvo_read_backend(struct pvo_dev *dev)
{
	u32 backend;

	virtio_cread_le(dev->vdev, struct pvo_config, backend, &backend);
	return backend;
}

/* Re-probes the device from outside it: remove() frees dev and its work. */
struct pvo_reprobe {
	struct work_struct work;
	struct device *dev;
};

static void pvo_reprobe_work(struct work_struct *work)
{
	struct pvo_reprobe *r = container_of(work, struct pvo_reprobe, work);
	int err = device_reprobe(r->dev);

	if (err)
		dev_err(r->dev,
			"cannot bring the RDMA device back (%d): reload pvrdma_overlay\n",
			err);
	put_device(r->dev);
	kfree(r);
}

/*
 * The VMM says the back-end went away or a new one serves the device
 * (config `backend`). Either way every object the guest made is gone:
 * ib_core's clients and applications get IB_EVENT_DEVICE_FATAL, commands
 * fail at once, and once a back-end serves the device again the driver
 * re-creates it (remove and probe: a new ib_device, new contexts work).
 */
static void pvo_backend_work(struct work_struct *work)
{
	struct pvo_dev *dev = container_of(work, struct pvo_dev, backend_work);
	u32 backend = pvo_read_backend(dev);
	bool up = backend & PVO_BACKEND_UP;
	struct pvo_reprobe *r;

	if (!backend || !dev->backend_conns)
		return;
	if (up && (backend & PVO_BACKEND_CONNS) == dev->backend_conns &&
	    !dev->backend_lost)
		return;
	if (!dev->backend_lost) {
		dev->backend_lost = true;
		pvo_ctrl_lost(dev);
		dev_err(&dev->vdev->dev,
			"the back-end (pvrdma-overlayd) went away and with it every RDMA object of this VM: applications get IBV_EVENT_DEVICE_FATAL; the device comes back when a back-end serves the VM again\n");
		pvo_netdev_device_fatal(dev);
	}
	if (!up)
		return;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return;
	dev_info(&dev->vdev->dev,
		 "a back-end serves the device again (connection %u): re-creating the RDMA device\n",
		 backend & PVO_BACKEND_CONNS);
	INIT_WORK(&r->work, pvo_reprobe_work);
	r->dev = get_device(&dev->vdev->dev);
	schedule_work(&r->work);
}

/* Config interrupt (may be atomic): the work reads the config. */
static void pvo_config_changed(struct virtio_device *vdev)
{
	struct pvo_dev *dev = vdev->priv;

	if (dev)
		schedule_work(&dev->backend_work);
}

/* BAR 2 of the PCI function: queue pages, slot pages, registers. */
static int pvo_map_doorbells(struct pvo_dev *dev)
{
	struct device *parent = dev->vdev->dev.parent;
	resource_size_t need, len;
	struct pci_dev *pdev;
	unsigned long flags;

	if (!parent || !dev_is_pci(parent)) {
		dev_err(&dev->vdev->dev,
			"not a virtio-pci device: the doorbell BAR needs the PCI transport\n");
		return -ENODEV;
	}
	pdev = to_pci_dev(parent);
	flags = pci_resource_flags(pdev, PVO_DOORBELL_BAR);
	if (!(flags & IORESOURCE_MEM) || (flags & IORESOURCE_UNSET) ||
	    !pci_resource_start(pdev, PVO_DOORBELL_BAR)) {
		dev_err(&dev->vdev->dev,
			"PCI BAR %d (doorbells) is missing or unassigned; use QEMU's pvrdma-overlay device, which provides it\n",
			PVO_DOORBELL_BAR);
		return -ENODEV;
	}
	need = (resource_size_t)PVO_DOORBELL_BAR_PAGES * PVO_DOORBELL_PAGE_SIZE;
	len = pci_resource_len(pdev, PVO_DOORBELL_BAR);
	if (len < need) {
		dev_err(&dev->vdev->dev,
			"PCI BAR %d has %llu bytes, interface version %u needs %llu (queue and slot doorbell pages): update QEMU's pvrdma-overlay device\n",
			PVO_DOORBELL_BAR, (unsigned long long)len,
			PVO_INTERFACE_VERSION, (unsigned long long)need);
		return -ENODEV;
	}

	/*
	 * DMA through the PCI function: the ib_device uses it for umems and
	 * kernel ULP mappings, and without a vIOMMU its DMA addresses are the
	 * guest-physical addresses the back-end expects.
	 */
	dev->dma_dev = parent;
	if (device_iommu_mapped(parent))
		dev_warn(&dev->vdev->dev,
			 "the device sits behind an IOMMU; the back-end expects guest-physical addresses, so use iommu=pt or no vIOMMU\n");

	dev->db_phys = pci_resource_start(pdev, PVO_DOORBELL_BAR);
	dev->db_len = need;
	if (!request_mem_region(dev->db_phys, dev->db_len, KBUILD_MODNAME)) {
		dev_err(&dev->vdev->dev,
			"the doorbell BAR at %pa is already claimed\n",
			&dev->db_phys);
		return -EBUSY;
	}
	dev->db_regs = ioremap(dev->db_phys, PVO_DOORBELL_PAGE_SIZE);
	if (!dev->db_regs) {
		release_mem_region(dev->db_phys, dev->db_len);
		return -ENOMEM;
	}
	return 0;
}

static void pvo_unmap_doorbells(struct pvo_dev *dev)
{
	iounmap(dev->db_regs);
	release_mem_region(dev->db_phys, dev->db_len);
}

/*
 * Doorbell queues carry no buffers (a kick is the whole message), so they
 * get no callback; they still need a name, or the transport skips them.
 */
#if PVO_API_6_11
static int pvo_find_vqs(struct pvo_dev *dev)
{
	struct virtqueue_info *info;
	unsigned int i;
	int err;

	info = kcalloc(dev->num_queues, sizeof(*info), GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	info[PVO_VQ_CTRL].name = "control";
	info[PVO_VQ_CTRL].callback = pvo_ctrl_done;
	info[PVO_VQ_EVENT].name = "event";
	info[PVO_VQ_EVENT].callback = pvo_event_done;
	for (i = PVO_VQ_DB_KERNEL; i < dev->num_queues; i++)
		info[i].name = "doorbell";

	err = virtio_find_vqs(dev->vdev, dev->num_queues, dev->vqs, info,
			      NULL);
	kfree(info);
	return err;
}
#else
static int pvo_find_vqs(struct pvo_dev *dev)
{
	vq_callback_t **callbacks;
	const char **names;
	unsigned int i;
	int err;

	callbacks = kcalloc(dev->num_queues, sizeof(*callbacks), GFP_KERNEL);
	names = kcalloc(dev->num_queues, sizeof(*names), GFP_KERNEL);
	if (!callbacks || !names) {
		err = -ENOMEM;
		goto out;
	}
	names[PVO_VQ_CTRL] = "control";
	callbacks[PVO_VQ_CTRL] = pvo_ctrl_done;
	names[PVO_VQ_EVENT] = "event";
	callbacks[PVO_VQ_EVENT] = pvo_event_done;
	for (i = PVO_VQ_DB_KERNEL; i < dev->num_queues; i++)
		names[i] = "doorbell";

	err = virtio_find_vqs(dev->vdev, dev->num_queues, dev->vqs, callbacks,
			      names, NULL);
out:
	kfree(names);
	kfree(callbacks);
	return err;
}
#endif

/* Stop the device, then take back what it still holds. */
static void pvo_stop_queues(struct pvo_dev *dev)
{
	virtio_reset_device(dev->vdev);
	pvo_ctrl_shutdown(dev);
	pvo_event_shutdown(dev);
	dev->vdev->config->del_vqs(dev->vdev);
}

static int pvo_probe(struct virtio_device *vdev)
{
	struct pvo_dev *dev;
	int err;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->vdev = vdev;
	vdev->priv = dev;
	pvo_netdev_init(dev);
	pvo_ah_gc_init(dev);
	xa_init(&dev->cqs);
	xa_init(&dev->qps);
	xa_init(&dev->srqs);
	xa_init(&dev->kqpns);
	INIT_WORK(&dev->backend_work, pvo_backend_work);

	if (virtio_has_feature(vdev, VIRTIO_F_ACCESS_PLATFORM))
		dev_warn(&vdev->dev,
			 "the device negotiated VIRTIO_F_ACCESS_PLATFORM; the back-end expects guest-physical addresses, so a vIOMMU will break the data path\n");

	err = pvo_read_config(dev);
	if (err)
		goto err_free;
	dev->backend_conns = pvo_read_backend(dev) & PVO_BACKEND_CONNS;
	err = pvo_map_doorbells(dev);
	if (err)
		goto err_free;

	dev->vqs = kcalloc(dev->num_queues, sizeof(*dev->vqs), GFP_KERNEL);
	if (!dev->vqs) {
		err = -ENOMEM;
		goto err_unmap;
	}
	err = pvo_find_vqs(dev);
	if (err) {
		dev_err(&vdev->dev, "cannot set up %u virtqueues: %d\n",
			dev->num_queues, err);
		goto err_unmap;
	}
	pvo_ctrl_init(dev, dev->vqs[PVO_VQ_CTRL]);
	err = pvo_event_init(dev, dev->vqs[PVO_VQ_EVENT]);
	if (err)
		goto err_queues;

	virtio_device_ready(vdev);
	pvo_event_start(dev);

	err = pvo_check_device(dev);
	if (err)
		goto err_queues;
	err = pvo_kdb_init(dev);
	if (err)
		goto err_queues;
	pvo_notify_init(dev);
	err = pvo_netdev_start(dev);
	if (err)
		goto err_queues;

	dev_info(&vdev->dev, "ready: MAC %pM, MTU %u, %u doorbell queues\n",
		 dev->mac, dev->mtu, dev->num_queues - PVO_VQ_DB_KERNEL);
	return 0;

err_queues:
	pvo_stop_queues(dev);
	pvo_kdb_free(dev);
	pvo_notify_free(dev);
err_unmap:
	pvo_unmap_doorbells(dev);
err_free:
	kfree(dev->vqs);
	kfree(dev);
	vdev->priv = NULL;
	return err;
}

static void pvo_remove(struct virtio_device *vdev)
{
	struct pvo_dev *dev = vdev->priv;

	/* Config interrupts stopped before remove(): nothing re-queues it. */
	cancel_work_sync(&dev->backend_work);
	/* First the ib_device: its teardown still talks to the back-end. */
	pvo_netdev_stop(dev);
	pvo_ah_gc_flush(dev);
	pvo_stop_queues(dev);
	/* The device is reset: it no longer touches the kernel's pages. */
	pvo_kdb_free(dev);
	pvo_notify_free(dev);
	WARN_ON(!xa_empty(&dev->cqs) || !xa_empty(&dev->qps) ||
		!xa_empty(&dev->srqs) || !xa_empty(&dev->kqpns));
	pvo_unmap_doorbells(dev);
	kfree(dev->vqs);
	kfree(dev);
	vdev->priv = NULL;
}

static const struct virtio_device_id pvo_id_table[] = {
	{ PVO_VIRTIO_ID, VIRTIO_DEV_ANY_ID },
	{ 0 },
};
MODULE_DEVICE_TABLE(virtio, pvo_id_table);

static struct virtio_driver pvo_virtio_driver = {
	.driver.name = KBUILD_MODNAME,
	.driver.owner = THIS_MODULE,
	.id_table = pvo_id_table,
	.probe = pvo_probe,
	.remove = pvo_remove,
	.config_changed = pvo_config_changed,
};

module_virtio_driver(pvo_virtio_driver);

MODULE_DESCRIPTION("pvrdma-overlay paravirtual RDMA device (virtio, RoCE v2)");
MODULE_LICENSE("Dual BSD/GPL");
/* User contexts need the uverbs character devices. */
MODULE_SOFTDEP("pre: ib_uverbs");
