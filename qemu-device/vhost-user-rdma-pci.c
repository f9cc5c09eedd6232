/*
 * pvrdma-overlay: PCI binding of the vhost-user RDMA device
 *
 * -device pvrdma-overlay,chardev=<id>[,doorbells=N][,queue-size=N]
 *
 * A modern-only virtio-pci device, PCI 1af4:106a (0x1040 + virtio ID 42).
 * disable-legacy and page-per-vq are forced on, whatever the command line
 * says: every virtqueue's notify register sits on its own page.
 *
 * BAR layout:
 *   BAR 1      MSI-X table and PBA (virtio-pci)
 *   BAR 2      doorbell BAR (this file), 32-bit non-prefetchable memory
 *   BAR 4+5    virtio-pci modern capabilities and notify area (virtio-pci)
 *
 * Doorbell BAR: 4 KiB pages (PVO_DOORBELL_PAGE_SIZE), 32 MiB whatever the
 * number of queues (PVO_DOORBELL_BAR_PAGES rounded up to a power of two):
 *   page 0        registers: the notify area's guest-physical address,
 *                 4-byte writes to NOTIFY_LO then NOTIFY_HI (HI latches
 *                 it, 0 turns slot doorbells off); reads return them
 *   page N        2 <= N < number of queues: a write of any value and
 *                 width (1..8 bytes) at offset 0 kicks virtqueue N exactly
 *                 as a write to its virtio notify register would: the
 *                 back-end sees an ordinary vhost-user kick on the queue's
 *                 kick fd. While vhost runs the page is an ioeventfd
 *                 (in-kernel under KVM).
 *   page 128 + s  (PVO_DB_SLOT_PAGE0 + s) context slot s < 4096: QEMU
 *                 appends s to the notify ring of the slot's queue, unless
 *                 its last entry is not consumed yet, and kicks the queue
 * Other writes (page 1, pages past the last queue or slot, other register
 * offsets or widths) are ignored; other reads return 0. The guest driver
 * maps a context's queue page or slot page, uncached, into the process
 * that owns the context.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/qdev-properties.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio-pci.h"
#include "vhost-user-rdma.h"

typedef struct VHostUserRDMAPCI {
    VirtIOPCIProxy parent_obj;
    VHostUserRDMA vdev;
} VHostUserRDMAPCI;

#define TYPE_VHOST_USER_RDMA_PCI "pvrdma-overlay-pci-base"
DECLARE_INSTANCE_CHECKER(VHostUserRDMAPCI, VHOST_USER_RDMA_PCI,
                         TYPE_VHOST_USER_RDMA_PCI)

QEMU_BUILD_BUG_ON(PVO_DOORBELL_BAR != 2);

static void (*pvo_pci_parent_realize)(PCIDevice *pci_dev, Error **errp);

/*
 * Runs before virtio_pci_realize(), which sizes the notify area from the
 * page-per-vq flag, and before the BARs are laid out.
 */
static void pvo_pci_realize_pci(PCIDevice *pci_dev, Error **errp)
{
    VirtIOPCIProxy *proxy = VIRTIO_PCI(pci_dev);

    virtio_pci_force_virtio_1(proxy);
    proxy->flags |= VIRTIO_PCI_FLAG_PAGE_PER_VQ;
    /* The modern PIO notify BAR would take BAR 2. */
    proxy->flags &= ~VIRTIO_PCI_FLAG_MODERN_PIO_NOTIFY;
    pvo_pci_parent_realize(pci_dev, errp);
}

static void pvo_pci_realize(VirtIOPCIProxy *vpci_dev, Error **errp)
{
    VHostUserRDMAPCI *dev = VHOST_USER_RDMA_PCI(vpci_dev);
    DeviceState *vdev = DEVICE(&dev->vdev);

    if (vpci_dev->nvectors == DEV_NVECTORS_UNSPECIFIED) {
        /* One per queue plus the config interrupt. */
        vpci_dev->nvectors = vhost_user_rdma_queue_count(&dev->vdev) + 1;
    }

    if (!qdev_realize(vdev, BUS(&vpci_dev->bus), errp)) {
        return;
    }

    pci_register_bar(&vpci_dev->pci_dev, PVO_DOORBELL_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY, &dev->vdev.doorbell_mr);
}

static const Property pvo_pci_properties[] = {
    DEFINE_PROP_UINT32("vectors", VirtIOPCIProxy, nvectors,
                       DEV_NVECTORS_UNSPECIFIED),
};

static void pvo_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioPCIClass *k = VIRTIO_PCI_CLASS(klass);
    PCIDeviceClass *pcidev_k = PCI_DEVICE_CLASS(klass);

    k->realize = pvo_pci_realize;
    pvo_pci_parent_realize = pcidev_k->realize;
    pcidev_k->realize = pvo_pci_realize_pci;
    dc->desc = "pvrdma-overlay paravirtual RDMA device (vhost-user, "
               "needs chardev=)";
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    device_class_set_props(dc, pvo_pci_properties);
    object_class_property_set_description(klass, "vectors",
        "MSI-X vectors (default: one per virtqueue + 1 for config)");
    pcidev_k->vendor_id = PCI_VENDOR_ID_REDHAT_QUMRANET;
    pcidev_k->device_id = 0; /* virtio-pci sets 0x1040 + virtio ID */
    pcidev_k->revision = 0x00;
    pcidev_k->class_id = PCI_CLASS_NETWORK_OTHER;
}

static void pvo_pci_instance_init(Object *obj)
{
    VHostUserRDMAPCI *dev = VHOST_USER_RDMA_PCI(obj);

    virtio_instance_init_common(obj, &dev->vdev, sizeof(dev->vdev),
                                TYPE_VHOST_USER_RDMA);
}

static const VirtioPCIDeviceTypeInfo pvo_pci_info = {
    .base_name = TYPE_VHOST_USER_RDMA_PCI,
    .non_transitional_name = "pvrdma-overlay",
    .instance_size = sizeof(VHostUserRDMAPCI),
    .instance_init = pvo_pci_instance_init,
    .class_init = pvo_pci_class_init,
};

static void pvo_pci_register(void)
{
    virtio_pci_types_register(&pvo_pci_info);
}

type_init(pvo_pci_register);
