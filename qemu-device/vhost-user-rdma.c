/*
 * pvrdma-overlay: vhost-user RDMA virtio device (virtio ID 42)
 *
 * The device holds no RDMA logic. It connects the guest's virtqueues,
 * doorbells, interrupts and config space to pvrdma-overlayd, the
 * vhost-user back-end that executes the verbs commands. Queue layout
 * (include/pvo-device.h):
 *
 *   0          control queue
 *   1          event queue
 *   2..N-1     doorbell queues (2: the kernel's, 3..: user contexts)
 *
 * User contexts beyond the user queues share them through slot doorbell
 * pages and notify rings in guest memory (see the doorbell BAR below).
 *
 * The config space (struct pvo_config) comes from the back-end through
 * VHOST_USER_GET_CONFIG. Its num_queues is the back-end's maximum; the
 * guest sees the number of queues this device actually created.
 *
 * It stands on its own rather than on vhost-user-base: that base has no
 * hooks around start and stop, where the doorbell BAR's ioeventfds are
 * bound and released, no check of the back-end's config space, no
 * feature filter for the ring features the back-end may drop, and no
 * guest notifier masking.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/bitops.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "hw/virtio/virtio-bus.h"
#include "chardev/char-socket.h"
#include "io/task.h"
#include "migration/blocker.h"
#include "migration/misc.h"
#include "migration/vmstate.h"
#include "vhost-user-rdma.h"

#define PVO_DEFAULT_DOORBELLS       16
#define PVO_DEFAULT_QUEUE_SIZE      256

/* Ring features the back-end may take away; everything else is ours. */
static const int pvo_vhost_feature_bits[] = {
    VIRTIO_F_VERSION_1,
    VIRTIO_RING_F_INDIRECT_DESC,
    VIRTIO_RING_F_EVENT_IDX,
    VIRTIO_F_NOTIFY_ON_EMPTY,
    VIRTIO_F_ANY_LAYOUT,
    VIRTIO_F_RING_PACKED,
    VIRTIO_F_RING_RESET,
    VIRTIO_F_IN_ORDER,
    VIRTIO_F_NOTIFICATION_DATA,
    VHOST_INVALID_FEATURE_BIT
};

static void pvo_chr_event(void *opaque, QEMUChrEvent event);

static const char *pvo_chardev_name(VHostUserRDMA *s)
{
    Chardev *chr = qemu_chr_fe_get_driver(&s->chardev);

    return chr ? chr->label : "?";
}

uint16_t vhost_user_rdma_queue_count(VHostUserRDMA *s)
{
    return VHOST_USER_RDMA_FIXED_QUEUES + s->doorbells;
}

/*
 * Doorbell BAR (include/pvo-device.h)
 *
 * Page 0 holds the registers. Queue page N (2 <= N < num_queues) kicks
 * virtqueue N: while vhost runs, each is an ioeventfd on the queue's host
 * notifier, which is the kick fd the back-end polls, so a guest write
 * reaches the back-end without QEMU (in-kernel under KVM); the MMIO
 * handler below is the fallback for writes that the ioeventfd does not
 * match (not at offset 0 of the page, or vhost stopped).
 *
 * Slot page PVO_DB_SLOT_PAGE0 + s serves a user context that has no queue
 * of its own: KVM allows about a thousand ioeventfds per VM, far fewer
 * than contexts. A write exits to QEMU, which appends s to the notify ring
 * of queue pvo_db_slot_queue(num_queues, s) in the guest's notify area
 * and kicks that queue; the back-end learns from the entry which context
 * rang. A slot whose last entry is not consumed yet is not appended again:
 * the back-end advances cons before it reads the context's doorbell
 * records, so it sees the work of the skipped doorbell, and a ring never
 * holds a slot twice.
 */

#define PVO_NOTIFY_PROD_OFF     0
#define PVO_NOTIFY_CONS_OFF     64

QEMU_BUILD_BUG_ON(PVO_MAX_QUEUES > PVO_DB_SLOT_PAGE0);

/* Forget the notify area: after a device reset or a new NOTIFY_HI. */
static void pvo_notify_reset(VHostUserRDMA *s, bool registers)
{
    if (registers) {
        s->notify_lo = 0;
        s->notify_hi = 0;
        s->notify_gpa = 0;
    }
    memset(s->notify_prod, 0, sizeof(s->notify_prod));
    if (s->slots) {
        memset(s->slots, 0, sizeof(*s->slots) * PVO_MAX_DB_SLOTS);
    }
}

static void pvo_notify_reg_write(VHostUserRDMA *s, hwaddr addr,
                                 uint32_t val)
{
    if (addr == PVO_DBREG_NOTIFY_LO) {
        s->notify_lo = val;
        return;
    }
    s->notify_hi = val;
    s->notify_gpa = (uint64_t)s->notify_hi << 32 | s->notify_lo;
    pvo_notify_reset(s, false);
    if (s->notify_gpa + pvo_notify_area_size(s->num_queues) - 1 <
        s->notify_gpa) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma-overlay: notify area at 0x%" PRIx64 " wraps "
                      "around the address space: slot doorbells stay "
                      "off\n", s->notify_gpa);
        s->notify_gpa = 0;
    }
}

static void pvo_slot_doorbell(VHostUserRDMA *s, uint32_t slot)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(s);
    VHostUserRDMASlot *sl = &s->slots[slot];
    uint32_t q = pvo_db_slot_queue(s->num_queues, slot);
    uint32_t entries = pvo_notify_ring_entries(s->num_queues);
    uint32_t prod = s->notify_prod[q];
    uint32_t cons;
    hwaddr ring;
    MemTxResult res;

    if (!s->notify_gpa) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma-overlay: ignoring doorbell of slot %" PRIu32
                      ": no notify area registered\n", slot);
        return;
    }
    ring = s->notify_gpa + pvo_notify_ring_off(s->num_queues, q);

    /*
     * The guest wrote the context's doorbell records before this write;
     * read cons after them. Pairs with the back-end's barrier between
     * advancing cons and reading the records.
     */
    smp_mb();
    cons = address_space_ldl_le(vdev->dma_as, ring + PVO_NOTIFY_CONS_OFF,
                                MEMTXATTRS_UNSPECIFIED, &res);
    if (res != MEMTX_OK) {
        goto bad_ring;
    }
    if (sl->queued && (int32_t)(sl->pos - cons) >= 0) {
        /* Not consumed yet: the back-end will see this doorbell's work. */
        return;
    }
    if (prod - cons >= entries) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma-overlay: notify ring of queue %" PRIu32
                      " is full (prod %" PRIu32 ", cons %" PRIu32 "): "
                      "dropping the doorbell of slot %" PRIu32 "\n",
                      q, prod, cons, slot);
        return;
    }

    address_space_stl_le(vdev->dma_as,
                         ring + PVO_NOTIFY_RING_ENTRY_OFF +
                         4 * (prod % entries), slot,
                         MEMTXATTRS_UNSPECIFIED, &res);
    if (res != MEMTX_OK) {
        goto bad_ring;
    }
    /* The entry before the counter that publishes it. */
    smp_wmb();
    address_space_stl_le(vdev->dma_as, ring + PVO_NOTIFY_PROD_OFF, prod + 1,
                         MEMTXATTRS_UNSPECIFIED, &res);
    if (res != MEMTX_OK) {
        goto bad_ring;
    }
    s->notify_prod[q] = prod + 1;
    sl->queued = true;
    sl->pos = prod;

    /* With vhost stopped nobody serves the queue: nothing to tell. */
    if (s->vhost_running) {
        event_notifier_set(
            virtio_queue_get_host_notifier(virtio_get_queue(vdev, q)));
    }
    return;

bad_ring:
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pvrdma-overlay: notify ring of queue %" PRIu32 " at 0x%"
                  HWADDR_PRIx " is not in guest memory: dropping the "
                  "doorbell of slot %" PRIu32 "\n", q, ring, slot);
}

static uint64_t pvo_doorbell_read(void *opaque, hwaddr addr, unsigned size)
{
    VHostUserRDMA *s = opaque;
    uint64_t regs = (uint64_t)s->notify_hi << 32 | s->notify_lo;

    QEMU_BUILD_BUG_ON(PVO_DBREG_NOTIFY_LO != 0 || PVO_DBREG_NOTIFY_HI != 4);
    if (addr + size > sizeof(regs)) {
        return 0;
    }
    return extract64(regs, addr * 8, size * 8);
}

static void pvo_doorbell_write(void *opaque, hwaddr addr, uint64_t val,
                               unsigned size)
{
    VHostUserRDMA *s = opaque;
    hwaddr page = addr / PVO_DOORBELL_PAGE_SIZE;

    if (page >= PVO_VQ_DB_KERNEL && page < s->num_queues) {
        virtio_queue_notify(VIRTIO_DEVICE(s), page);
    } else if (page >= PVO_DB_SLOT_PAGE0 && page < PVO_DOORBELL_BAR_PAGES) {
        pvo_slot_doorbell(s, page - PVO_DB_SLOT_PAGE0);
    } else if (size == 4 && (addr == PVO_DBREG_NOTIFY_LO ||
                             addr == PVO_DBREG_NOTIFY_HI)) {
        pvo_notify_reg_write(s, addr, val);
    } else {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma-overlay: ignoring %u-byte write at 0x%"
                      HWADDR_PRIx " of the doorbell BAR: page 0 takes "
                      "4-byte register writes, pages %u..%u kick doorbell "
                      "queues, pages %u..%u are context slots\n",
                      size, addr, PVO_VQ_DB_KERNEL, s->num_queues - 1,
                      PVO_DB_SLOT_PAGE0, PVO_DOORBELL_BAR_PAGES - 1);
    }
}

static const MemoryRegionOps pvo_doorbell_ops = {
    .read = pvo_doorbell_read,
    .write = pvo_doorbell_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/* Wire (or unwire) the doorbell pages to the queues' host notifiers. */
static void pvo_doorbells_set_eventfds(VHostUserRDMA *s, bool assign)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(s);
    unsigned int n;

    if (s->doorbell_eventfds == assign) {
        return;
    }

    memory_region_transaction_begin();
    for (n = PVO_VQ_DB_KERNEL; n < s->num_queues; n++) {
        EventNotifier *e =
            virtio_queue_get_host_notifier(virtio_get_queue(vdev, n));
        hwaddr offset = (hwaddr)n * PVO_DOORBELL_PAGE_SIZE;

        if (assign) {
            memory_region_add_eventfd(&s->doorbell_mr, offset, 0, false, 0,
                                      e);
        } else {
            memory_region_del_eventfd(&s->doorbell_mr, offset, 0, false, 0,
                                      e);
        }
    }
    memory_region_transaction_commit();
    s->doorbell_eventfds = assign;
}

/* Starting and stopping vhost with the driver */

static int pvo_vhost_start(VirtIODevice *vdev, Error **errp)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);
    BusState *qbus = BUS(qdev_get_parent_bus(DEVICE(vdev)));
    VirtioBusClass *k = VIRTIO_BUS_GET_CLASS(qbus);
    int i, ret;

    if (!k->set_guest_notifiers) {
        error_setg(errp, "the virtio transport does not support guest "
                   "notifiers");
        return -ENOSYS;
    }

    ret = vhost_dev_enable_notifiers(&s->vhost_dev, vdev);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot enable host notifiers");
        return ret;
    }

    ret = k->set_guest_notifiers(qbus->parent, s->vhost_dev.nvqs, true);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot bind guest notifiers");
        goto err_host_notifiers;
    }

    s->vhost_dev.acked_features = vdev->guest_features;

    /* Interrupts go through irqfds set up by the transport: unmask all. */
    for (i = 0; i < s->vhost_dev.nvqs; i++) {
        vhost_virtqueue_mask(&s->vhost_dev, vdev, i, false);
    }

    s->vhost_dev.vq_index_end = s->vhost_dev.nvqs;
    ret = vhost_dev_start(&s->vhost_dev, vdev, true);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot start vhost");
        goto err_guest_notifiers;
    }

    s->vhost_running = true;
    pvo_doorbells_set_eventfds(s, true);
    return 0;

err_guest_notifiers:
    for (i = 0; i < s->vhost_dev.nvqs; i++) {
        vhost_virtqueue_mask(&s->vhost_dev, vdev, i, true);
    }
    k->set_guest_notifiers(qbus->parent, s->vhost_dev.nvqs, false);
err_host_notifiers:
    vhost_dev_disable_notifiers(&s->vhost_dev, vdev);
    return ret;
}

static void pvo_vhost_stop(VirtIODevice *vdev)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);
    BusState *qbus = BUS(qdev_get_parent_bus(DEVICE(vdev)));
    VirtioBusClass *k = VIRTIO_BUS_GET_CLASS(qbus);
    int ret;

    /* Our own flag: vhost_dev.started is already false on a disconnect. */
    if (!s->vhost_running || !k->set_guest_notifiers) {
        return;
    }
    s->vhost_running = false;

    vhost_dev_stop(&s->vhost_dev, vdev, true);

    ret = k->set_guest_notifiers(qbus->parent, s->vhost_dev.nvqs, false);
    if (ret < 0) {
        error_report("pvrdma-overlay: cannot unbind guest notifiers: %s",
                     strerror(-ret));
    }

    /* Before the notifiers are closed. */
    pvo_doorbells_set_eventfds(s, false);
    vhost_dev_disable_notifiers(&s->vhost_dev, vdev);
}

static void pvo_set_status(VirtIODevice *vdev, uint8_t status)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);
    bool should_start = virtio_device_should_start(vdev, status);
    Error *local_err = NULL;

    if (!status) {
        pvo_notify_reset(s, true);
    }
    if (!s->connected) {
        return;
    }
    if (vhost_dev_is_started(&s->vhost_dev) == should_start) {
        return;
    }

    if (should_start) {
        if (pvo_vhost_start(vdev, &local_err) < 0) {
            error_reportf_err(local_err, "pvrdma-overlay: back-end on "
                              "chardev '%s' did not start: ",
                              pvo_chardev_name(s));
            qemu_chr_fe_disconnect(&s->chardev);
        }
    } else {
        pvo_vhost_stop(vdev);
    }
}

static void pvo_reset(VirtIODevice *vdev)
{
    pvo_notify_reset(VHOST_USER_RDMA(vdev), true);
}

static uint64_t pvo_get_features(VirtIODevice *vdev, uint64_t features,
                                 Error **errp)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);

    /* Addresses in rings and commands are guest-physical: no vIOMMU. */
    virtio_clear_feature(&features, VIRTIO_F_IOMMU_PLATFORM);
    return vhost_get_features(&s->vhost_dev, pvo_vhost_feature_bits,
                              features);
}

static void pvo_handle_output(VirtIODevice *vdev, VirtQueue *vq)
{
    /*
     * The back-end serves every queue. This runs only for a kick while
     * vhost is stopped, when there is nobody to tell.
     */
}

static void pvo_guest_notifier_mask(VirtIODevice *vdev, int idx, bool mask)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);

    if (idx == VIRTIO_CONFIG_IRQ_IDX) {
        return;
    }
    vhost_virtqueue_mask(&s->vhost_dev, vdev, idx, mask);
}

static bool pvo_guest_notifier_pending(VirtIODevice *vdev, int idx)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);

    if (idx == VIRTIO_CONFIG_IRQ_IDX) {
        return false;
    }
    return vhost_virtqueue_pending(&s->vhost_dev, idx);
}

static struct vhost_dev *pvo_get_vhost(VirtIODevice *vdev)
{
    return &VHOST_USER_RDMA(vdev)->vhost_dev;
}

/* Config space */

static bool pvo_fetch_config(VHostUserRDMA *s, struct pvo_config *cfg,
                             Error **errp)
{
    uint32_t version;
    uint16_t max_queues;

    memset(cfg, 0, sizeof(*cfg));
    if (vhost_dev_get_config(&s->vhost_dev, (uint8_t *)cfg, sizeof(*cfg),
                             errp) < 0) {
        error_prepend(errp, "pvrdma-overlay: cannot read the config space "
                      "from the back-end on chardev '%s': ",
                      pvo_chardev_name(s));
        return false;
    }

    version = le32_to_cpu(cfg->version);
    if (version != PVO_INTERFACE_VERSION) {
        error_setg(errp, "pvrdma-overlay: the back-end on chardev '%s' "
                   "speaks device interface version %" PRIu32 " but this "
                   "QEMU speaks version %d: run a pvrdma-overlayd from the "
                   "same pvrdma-overlay build as this QEMU",
                   pvo_chardev_name(s), version, PVO_INTERFACE_VERSION);
        return false;
    }

    max_queues = le16_to_cpu(cfg->num_queues);
    if (max_queues < s->num_queues) {
        error_setg(errp, "pvrdma-overlay: doorbells=%" PRIu32 " needs %u "
                   "virtqueues but the back-end on chardev '%s' supports at "
                   "most %u: set doorbells=%u or lower, or raise the "
                   "back-end's limit", s->doorbells, s->num_queues,
                   pvo_chardev_name(s), max_queues,
                   max_queues > VHOST_USER_RDMA_FIXED_QUEUES ?
                   max_queues - VHOST_USER_RDMA_FIXED_QUEUES : 0);
        return false;
    }
    return true;
}

static void pvo_get_config(VirtIODevice *vdev, uint8_t *config)
{
    VHostUserRDMA *s = VHOST_USER_RDMA(vdev);
    struct pvo_config cfg = s->config;

    /* The guest sees the queues that exist, not the back-end's maximum. */
    cfg.num_queues = cpu_to_le16(s->num_queues);
    cfg.backend = cpu_to_le32((s->connected ? PVO_BACKEND_UP : 0) |
                              (s->backend_conns & PVO_BACKEND_CONNS));
    memcpy(config, &cfg, sizeof(cfg));
}

/* The back-end came or went: the guest driver re-reads `backend`. */
static void pvo_notify_backend_change(VHostUserRDMA *s)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(s);

    if (vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) {
        virtio_notify_config(vdev);
    }
}

/* VHOST_USER_BACKEND_CONFIG_CHANGE_MSG: re-read, check, tell the guest. */
static int pvo_config_changed(struct vhost_dev *hdev)
{
    VHostUserRDMA *s = container_of(hdev, VHostUserRDMA, vhost_dev);
    struct pvo_config cfg;
    Error *local_err = NULL;

    if (!pvo_fetch_config(s, &cfg, &local_err)) {
        error_append_hint(&local_err, "The guest keeps the old config.\n");
        error_report_err(local_err);
        return -EINVAL;
    }
    s->config = cfg;
    virtio_notify_config(VIRTIO_DEVICE(s));
    return 0;
}

static const VhostDevConfigOps pvo_config_ops = {
    .vhost_dev_config_notifier = pvo_config_changed,
};

/*
 * Migration blocker: set while the back-end cannot hand its state over,
 * decided on every connect and disconnect. Adding one fails while a
 * migration runs (and always with --only-migratable); the state transfer
 * then refuses the migration itself, and pvo_migration_event() decides
 * again when it ends.
 */
static bool pvo_update_migration_blocker(VHostUserRDMA *s, Error **errp)
{
    Error *reason = NULL;

    if (!s->connected) {
        error_setg(&reason, "pvrdma-overlay: the back-end on chardev '%s' "
                   "is disconnected, so the guest's RDMA state cannot be "
                   "saved: let the chardev reconnect to a running "
                   "pvrdma-overlayd (reconnect-ms=), or unplug the device, "
                   "before migrating", pvo_chardev_name(s));
    } else if (!vhost_supports_device_state(&s->vhost_dev)) {
        error_setg(&reason, "pvrdma-overlay: the back-end on chardev '%s' "
                   "cannot transfer its RDMA state (it does not offer "
                   "VHOST_USER_PROTOCOL_F_DEVICE_STATE), so the guest "
                   "cannot be migrated: upgrade pvrdma-overlayd to a version "
                   "with migration support, or shut the guest down or unplug "
                   "the device before migrating", pvo_chardev_name(s));
    }

    /* The reason may have changed: replace rather than keep. */
    migrate_del_blocker(&s->migration_blocker);
    if (!reason) {
        return true;
    }
    s->migration_blocker = reason;
    /* On failure this frees the reason and clears the pointer. */
    return migrate_add_blocker(&s->migration_blocker, errp) == 0;
}

static void pvo_update_migration_blocker_or_warn(VHostUserRDMA *s)
{
    Error *local_err = NULL;

    if (!pvo_update_migration_blocker(s, &local_err)) {
        warn_reportf_err(local_err, "pvrdma-overlay: a migration now fails "
                         "when it saves the device: ");
    }
}

static int pvo_migration_event(NotifierWithReturn *notifier,
                               MigrationEvent *e, Error **errp)
{
    VHostUserRDMA *s = container_of(notifier, VHostUserRDMA,
                                    migration_notifier);

    /* A (re)connect during the migration could not add its blocker. */
    if (e->type == MIG_EVENT_PRECOPY_DONE ||
        e->type == MIG_EVENT_PRECOPY_FAILED) {
        pvo_update_migration_blocker_or_warn(s);
    }
    return 0;
}

/* Connection to the back-end */

static int pvo_connect(DeviceState *dev, Error **errp)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VHostUserRDMA *s = VHOST_USER_RDMA(dev);
    struct pvo_config cfg;
    int ret;

    if (s->connected) {
        return 0;
    }

    /* vhost_dev_cleanup() zeroes vhost_dev: set it up from scratch. */
    memset(s->vhost_vqs, 0, sizeof(*s->vhost_vqs) * s->num_queues);
    s->vhost_dev.nvqs = s->num_queues;
    s->vhost_dev.vqs = s->vhost_vqs;
    s->vhost_dev.vq_index = 0;
    s->vhost_dev.backend_features = 0;
    /* vhost-user checks it against GET_QUEUE_NUM before touching a queue. */
    s->vhost_dev.num_queues = s->num_queues;
    vhost_dev_set_config_notifier(&s->vhost_dev, &pvo_config_ops);

    s->vhost_user.supports_config = true;
    ret = vhost_dev_init(&s->vhost_dev, &s->vhost_user,
                         VHOST_BACKEND_TYPE_USER, 0, errp);
    if (ret < 0) {
        error_prepend(errp, "pvrdma-overlay: vhost-user handshake with the "
                      "back-end on chardev '%s' for %u virtqueues "
                      "(doorbells=%" PRIu32 ") failed: ",
                      pvo_chardev_name(s), s->num_queues, s->doorbells);
        error_append_hint(errp, "If the back-end serves fewer queues, "
                          "lower doorbells=.\n");
        return ret;
    }

    if (!virtio_has_feature(s->vhost_dev.features, VIRTIO_F_VERSION_1)) {
        error_setg(errp, "pvrdma-overlay: the back-end on chardev '%s' does "
                   "not offer VIRTIO_F_VERSION_1, which this modern-only "
                   "device needs", pvo_chardev_name(s));
        vhost_dev_cleanup(&s->vhost_dev);
        return -ENOTSUP;
    }

    if (!pvo_fetch_config(s, &cfg, errp)) {
        vhost_dev_cleanup(&s->vhost_dev);
        return -EINVAL;
    }
    s->config = cfg;
    s->connected = true;
    s->backend_conns = s->backend_conns % PVO_BACKEND_CONNS + 1;
    pvo_notify_backend_change(s);

    /*
     * A reconnect while the driver runs: restart vhost, unless the VM is
     * stopped (it restarts with the VM): the back-end state can only be
     * saved with vhost stopped.
     */
    if (virtio_device_should_start(vdev, vdev->status)) {
        ret = pvo_vhost_start(vdev, errp);
        if (ret < 0) {
            error_prepend(errp, "pvrdma-overlay: back-end on chardev '%s' "
                          "did not restart: ", pvo_chardev_name(s));
            return ret;
        }
    }
    return 0;
}

static void pvo_disconnect(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VHostUserRDMA *s = VHOST_USER_RDMA(dev);

    if (s->connected) {
        s->connected = false;
        pvo_vhost_stop(vdev);
        vhost_dev_cleanup(&s->vhost_dev);
        warn_report("pvrdma-overlay: back-end on chardev '%s' disconnected; "
                    "the device resumes when it reconnects",
                    pvo_chardev_name(s));
        pvo_update_migration_blocker_or_warn(s);
        pvo_notify_backend_change(s);
    }

    /* vhost_user_async_close() removed the handler: listen again. */
    qemu_chr_fe_set_handlers(&s->chardev, NULL, NULL, pvo_chr_event, NULL,
                             dev, NULL, true);
}

static void pvo_chr_event(void *opaque, QEMUChrEvent event)
{
    DeviceState *dev = opaque;
    VHostUserRDMA *s = VHOST_USER_RDMA(dev);
    Error *local_err = NULL;

    switch (event) {
    case CHR_EVENT_OPENED:
        if (pvo_connect(dev, &local_err) < 0) {
            error_report_err(local_err);
            qemu_chr_fe_disconnect(&s->chardev);
            break;
        }
        pvo_update_migration_blocker_or_warn(s);
        break;
    case CHR_EVENT_CLOSED:
        /* Deferred: the close may come from inside a vhost-user call. */
        vhost_user_async_close(dev, &s->chardev, &s->vhost_dev,
                               pvo_disconnect);
        break;
    case CHR_EVENT_BREAK:
    case CHR_EVENT_MUX_IN:
    case CHR_EVENT_MUX_OUT:
        break;
    }
}

/*
 * Make sure a back-end is on the other end of the chardev before the
 * handshake. A client socket with reconnect-ms= connects in the
 * background and qemu_chr_fe_wait_connected() would retry forever when
 * the back-end is not running; wait for the first attempt only.
 */
static bool pvo_wait_backend(VHostUserRDMA *s, Error **errp)
{
    Chardev *chr = qemu_chr_fe_get_driver(&s->chardev);
    SocketChardev *sock;

    if (!object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET) ||
        !qemu_chr_has_feature(chr, QEMU_CHAR_FEATURE_FD_PASS)) {
        error_setg(errp, "pvrdma-overlay: chardev '%s' is not a unix "
                   "socket: vhost-user needs '-chardev socket,id=%s,"
                   "path=<pvrdma-overlayd's socket>'", chr->label,
                   chr->label);
        return false;
    }

    sock = SOCKET_CHARDEV(chr);
    if (sock->is_listen) {
        /* QEMU is the server: wait for the back-end as the user asked. */
        if (sock->state != TCP_CHARDEV_STATE_CONNECTED) {
            info_report("pvrdma-overlay: waiting for pvrdma-overlayd to "
                        "connect to chardev '%s'", chr->label);
        }
        return qemu_chr_fe_wait_connected(&s->chardev, errp) == 0;
    }

    if (sock->state == TCP_CHARDEV_STATE_CONNECTING && sock->connect_task) {
        g_main_context_acquire(chr->gcontext);
        qio_task_wait_thread(sock->connect_task);
        g_main_context_release(chr->gcontext);
    }
    if (sock->state != TCP_CHARDEV_STATE_CONNECTED) {
        error_setg(errp, "pvrdma-overlay: no vhost-user back-end is "
                   "listening on chardev '%s': start pvrdma-overlayd for "
                   "this VM first", chr->label);
        return false;
    }
    return true;
}

static void pvo_free_queues(VirtIODevice *vdev, VHostUserRDMA *s)
{
    unsigned int i;

    for (i = 0; i < s->num_queues; i++) {
        virtio_delete_queue(s->vqs[i]);
    }
    g_free(s->vqs);
    s->vqs = NULL;
    g_free(s->vhost_vqs);
    s->vhost_vqs = NULL;
    virtio_cleanup(vdev);
}

static void pvo_device_realize(DeviceState *dev, Error **errp)
{
    ERRP_GUARD();
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VHostUserRDMA *s = VHOST_USER_RDMA(dev);
    unsigned int max_doorbells = PVO_MAX_QUEUES - VHOST_USER_RDMA_FIXED_QUEUES;
    unsigned int i;

    if (!s->chardev.chr) {
        error_setg(errp, "pvrdma-overlay: property 'chardev' is required: "
                   "pass chardev=<id> naming a '-chardev socket,id=<id>,"
                   "path=<socket>' whose socket pvrdma-overlayd serves for "
                   "this VM");
        return;
    }
    if (s->doorbells < 1 || s->doorbells > max_doorbells) {
        error_setg(errp, "pvrdma-overlay: doorbells=%" PRIu32 " is out of "
                   "range: use 1..%u (one queue for the kernel plus the user "
                   "queues)", s->doorbells, max_doorbells);
        return;
    }
    if (!is_power_of_2(s->queue_size) ||
        s->queue_size > VIRTQUEUE_MAX_SIZE) {
        error_setg(errp, "pvrdma-overlay: queue-size=%u must be a power of "
                   "2 no larger than %u", s->queue_size, VIRTQUEUE_MAX_SIZE);
        return;
    }
    if (virtio_host_has_feature(vdev, VIRTIO_F_IOMMU_PLATFORM)) {
        error_setg(errp, "pvrdma-overlay: iommu_platform=on is not "
                   "supported: the back-end works with guest-physical "
                   "addresses; drop the option");
        return;
    }

    s->num_queues = vhost_user_rdma_queue_count(s);

    if (!vhost_user_init(&s->vhost_user, &s->chardev, errp)) {
        return;
    }

    virtio_init(vdev, PVO_VIRTIO_ID, sizeof(struct pvo_config));
    s->vqs = g_new0(VirtQueue *, s->num_queues);
    for (i = 0; i < s->num_queues; i++) {
        s->vqs[i] = virtio_add_queue(vdev, s->queue_size, pvo_handle_output);
    }
    s->vhost_vqs = g_new0(struct vhost_virtqueue, s->num_queues);

    if (!pvo_wait_backend(s, errp) || pvo_connect(dev, errp) < 0) {
        goto err_queues;
    }

    /* With --only-migratable a back-end without the feature fails here. */
    if (!pvo_update_migration_blocker(s, errp)) {
        goto err_connected;
    }
    migration_add_notifier(&s->migration_notifier, pvo_migration_event);

    s->slots = g_new0(VHostUserRDMASlot, PVO_MAX_DB_SLOTS);
    pvo_notify_reset(s, true);

    /*
     * The same size whatever the queue count, slot pages included; a
     * power of two: the region becomes a PCI BAR.
     */
    memory_region_init_io(&s->doorbell_mr, OBJECT(s), &pvo_doorbell_ops, s,
                          "pvrdma-overlay-doorbells",
                          pow2ceil((uint64_t)PVO_DOORBELL_BAR_PAGES *
                                   PVO_DOORBELL_PAGE_SIZE));

    qemu_chr_fe_set_handlers(&s->chardev, NULL, NULL, pvo_chr_event, NULL,
                             dev, NULL, true);
    return;

err_connected:
    migrate_del_blocker(&s->migration_blocker);
    s->connected = false;
    vhost_dev_cleanup(&s->vhost_dev);
err_queues:
    pvo_free_queues(vdev, s);
    vhost_user_cleanup(&s->vhost_user);
}

static void pvo_device_unrealize(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VHostUserRDMA *s = VHOST_USER_RDMA(dev);

    virtio_set_status(vdev, 0);
    qemu_chr_fe_set_handlers(&s->chardev, NULL, NULL, NULL, NULL, NULL, NULL,
                             false);
    migration_remove_notifier(&s->migration_notifier);
    migrate_del_blocker(&s->migration_blocker);
    if (s->connected) {
        s->connected = false;
        vhost_dev_cleanup(&s->vhost_dev);
    }
    pvo_free_queues(vdev, s);
    vhost_user_cleanup(&s->vhost_user);
    g_free(s->slots);
    s->slots = NULL;
}

/*
 * Migration
 *
 * The stream holds, in this order: the virtio core state, the device's
 * own state (pvo_vmstate_device, through vdc->vmsd, checked by its
 * post_load before anything reaches the back-end), then the back-end's
 * state (subsection pvrdma-overlay/backend), fetched from and handed to
 * the back-end with VHOST_USER_SET_DEVICE_STATE_FD and
 * VHOST_USER_CHECK_DEVICE_STATE.
 *
 * Saving needs vhost stopped (vhost_save_backend_state() asserts it).
 * QEMU stops the VM before it saves devices; the VM state change calls
 * pvo_set_status(), where virtio_device_should_start() is false with
 * the VM stopped, so vhost stops first; pvo_connect() does not restart
 * it while the VM is stopped. On the destination the back-end is
 * connected at realize and vhost starts only with the VM, after loading.
 *
 * Version 2, minimum 2: version 1 was never migrated (a blocker refused
 * every migration), and a stream without the back-end state must not
 * load.
 */
#define PVO_VMSTATE_VERSION     2

static bool pvo_backend_state_ready(VHostUserRDMA *s, const char *what,
                                    Error **errp)
{
    if (!s->connected) {
        error_setg(errp, "pvrdma-overlay: cannot %s the RDMA state: the "
                   "back-end on chardev '%s' is disconnected", what,
                   pvo_chardev_name(s));
        return false;
    }
    if (!vhost_supports_device_state(&s->vhost_dev)) {
        error_setg(errp, "pvrdma-overlay: cannot %s the RDMA state: the "
                   "back-end on chardev '%s' does not offer "
                   "VHOST_USER_PROTOCOL_F_DEVICE_STATE; upgrade "
                   "pvrdma-overlayd", what, pvo_chardev_name(s));
        return false;
    }
    if (vhost_dev_is_started(&s->vhost_dev)) {
        /* Never expected (see above); better an error than an assert. */
        error_setg(errp, "pvrdma-overlay: cannot %s the RDMA state: the "
                   "back-end on chardev '%s' is still running its queues",
                   what, pvo_chardev_name(s));
        return false;
    }
    return true;
}

static int pvo_backend_state_put(QEMUFile *f, void *pv, size_t size,
                                 const VMStateField *field, JSONWriter *vmdesc)
{
    VHostUserRDMA *s = pv;
    Error *local_err = NULL;
    int ret;

    if (!pvo_backend_state_ready(s, "save", &local_err)) {
        error_report_err(local_err);
        return -EIO;
    }
    ret = vhost_save_backend_state(&s->vhost_dev, f, &local_err);
    if (ret < 0) {
        error_reportf_err(local_err, "pvrdma-overlay: the back-end on "
                          "chardev '%s' did not hand over its RDMA state "
                          "(pvrdma-overlayd's log says why): ",
                          pvo_chardev_name(s));
        return ret;
    }
    return 0;
}

static int pvo_backend_state_get(QEMUFile *f, void *pv, size_t size,
                                 const VMStateField *field)
{
    VHostUserRDMA *s = pv;
    Error *local_err = NULL;
    int ret;

    if (!pvo_backend_state_ready(s, "load", &local_err)) {
        error_report_err(local_err);
        return -EIO;
    }
    ret = vhost_load_backend_state(&s->vhost_dev, f, &local_err);
    if (ret < 0) {
        error_reportf_err(local_err, "pvrdma-overlay: the back-end on "
                          "chardev '%s' did not take the migrated RDMA state "
                          "(pvrdma-overlayd's log says why): ",
                          pvo_chardev_name(s));
        return ret;
    }
    return 0;
}

static const VMStateInfo pvo_backend_state_info = {
    .name = "pvrdma-overlay back-end state",
    .get = pvo_backend_state_get,
    .put = pvo_backend_state_put,
};

static bool pvo_backend_state_needed(void *opaque)
{
    /* Always: the guest's RDMA objects live only in the back-end. */
    return true;
}

static const VMStateDescription pvo_vmstate_backend = {
    .name = "pvrdma-overlay/backend",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = pvo_backend_state_needed,
    .fields = (const VMStateField[]) {
        {
            .name = "state",
            .info = &pvo_backend_state_info,
            .flags = VMS_SINGLE,
        },
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription pvo_vmstate_slot = {
    .name = "pvrdma-overlay/slot",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(pos, VHostUserRDMASlot),
        VMSTATE_BOOL(queued, VHostUserRDMASlot),
        VMSTATE_END_OF_LIST()
    },
};

static int pvo_device_pre_save(void *opaque)
{
    VHostUserRDMA *s = opaque;

    s->migrated_num_queues = s->num_queues;
    return 0;
}

/* The stream is untrusted: refuse what the device could not have made. */
static int pvo_device_post_load(void *opaque, int version_id)
{
    VHostUserRDMA *s = opaque;
    uint32_t first = pvo_db_notify_first(s->num_queues);
    uint64_t area = pvo_notify_area_size(s->num_queues);
    unsigned int q, slot;

    if (s->migrated_num_queues != s->num_queues) {
        error_report("pvrdma-overlay: the migration source has %u "
                     "virtqueues (doorbells=%u) but this device has %u "
                     "(doorbells=%" PRIu32 "): start the destination with "
                     "the source's doorbells=", s->migrated_num_queues,
                     (unsigned int)MAX(s->migrated_num_queues,
                                       VHOST_USER_RDMA_FIXED_QUEUES) -
                     VHOST_USER_RDMA_FIXED_QUEUES,
                     s->num_queues, s->doorbells);
        return -EINVAL;
    }
    /* NOTIFY_HI latches notify_gpa = HI:LO; a later LO write keeps it. */
    if (s->notify_gpa &&
        (s->notify_gpa >> 32 != s->notify_hi ||
         s->notify_gpa + area - 1 < s->notify_gpa)) {
        error_report("pvrdma-overlay: migrated notify area 0x%" PRIx64
                     " (NOTIFY_HI 0x%" PRIx32 ") is not one the device "
                     "accepts: refusing the device state", s->notify_gpa,
                     s->notify_hi);
        return -EINVAL;
    }
    for (q = 0; q < PVO_MAX_QUEUES; q++) {
        bool ring = s->notify_gpa && q >= first && q < s->num_queues;

        if (!ring && s->notify_prod[q]) {
            error_report("pvrdma-overlay: migrated producer %" PRIu32 " for "
                         "queue %u, which has no notify ring: refusing the "
                         "device state", s->notify_prod[q], q);
            return -EINVAL;
        }
    }
    for (slot = 0; slot < PVO_MAX_DB_SLOTS; slot++) {
        VHostUserRDMASlot *sl = &s->slots[slot];

        q = pvo_db_slot_queue(s->num_queues, slot);
        /* A queued slot's entry is one the ring's producer has passed. */
        if (sl->queued &&
            (!s->notify_gpa || (int32_t)(s->notify_prod[q] - sl->pos) <= 0)) {
            error_report("pvrdma-overlay: migrated slot %u is queued at %"
                         PRIu32 " on queue %u, whose producer is %" PRIu32
                         ": refusing the device state", slot, sl->pos, q,
                         s->notify_prod[q]);
            return -EINVAL;
        }
    }
    return 0;
}

/*
 * Only after a reconnect: the default 1 is what every source had. (A
 * subsection's name starts with its parent's, or the loader skips it.)
 */
static bool pvo_backend_conns_needed(void *opaque)
{
    VHostUserRDMA *s = opaque;

    return s->backend_conns != 1;
}

static int pvo_backend_conns_post_load(void *opaque, int version_id)
{
    VHostUserRDMA *s = opaque;

    if (s->backend_conns == 0 || s->backend_conns > PVO_BACKEND_CONNS) {
        error_report("pvrdma-overlay: the migration stream says the "
                     "back-end connected %" PRIu32 " times, which no "
                     "device counts", s->backend_conns);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription pvo_vmstate_backend_conns = {
    .name = "pvrdma-overlay-device/backend-conns",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = pvo_backend_conns_needed,
    .post_load = pvo_backend_conns_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(backend_conns, VHostUserRDMA),
        VMSTATE_END_OF_LIST()
    },
};

/* Saved inside virtio_save(), after the virtqueues. */
static const VMStateDescription pvo_vmstate_device = {
    .name = "pvrdma-overlay-device",
    .version_id = PVO_VMSTATE_VERSION,
    .minimum_version_id = PVO_VMSTATE_VERSION,
    .pre_save = pvo_device_pre_save,
    .post_load = pvo_device_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(migrated_num_queues, VHostUserRDMA),
        VMSTATE_UINT32(notify_lo, VHostUserRDMA),
        VMSTATE_UINT32(notify_hi, VHostUserRDMA),
        VMSTATE_UINT64(notify_gpa, VHostUserRDMA),
        VMSTATE_UINT32_ARRAY(notify_prod, VHostUserRDMA, PVO_MAX_QUEUES),
        {
            /* s->slots: PVO_MAX_DB_SLOTS entries, allocated at realize */
            .name = "slots",
            .num = PVO_MAX_DB_SLOTS,
            .size = sizeof(VHostUserRDMASlot),
            .vmsd = &pvo_vmstate_slot,
            .flags = VMS_STRUCT | VMS_ARRAY | VMS_POINTER,
            .offset = vmstate_offset_pointer(VHostUserRDMA, slots,
                                             VHostUserRDMASlot),
        },
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &pvo_vmstate_backend_conns,
        NULL
    },
};

/* The version virtio_load() hands to pvo_vmstate_device. */
static const VMStateDescription pvo_vmstate = {
    .name = "pvrdma-overlay",
    .version_id = PVO_VMSTATE_VERSION,
    .minimum_version_id = PVO_VMSTATE_VERSION,
    .fields = (const VMStateField[]) {
        VMSTATE_VIRTIO_DEVICE,
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &pvo_vmstate_backend,
        NULL
    },
};

static const Property pvo_properties[] = {
    DEFINE_PROP_CHR("chardev", VHostUserRDMA, chardev),
    DEFINE_PROP_UINT32("doorbells", VHostUserRDMA, doorbells,
                       PVO_DEFAULT_DOORBELLS),
    DEFINE_PROP_UINT16("queue-size", VHostUserRDMA, queue_size,
                       PVO_DEFAULT_QUEUE_SIZE),
};

static void pvo_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioDeviceClass *vdc = VIRTIO_DEVICE_CLASS(klass);

    device_class_set_props(dc, pvo_properties);
    object_class_property_set_description(klass, "chardev",
        "vhost-user socket chardev of pvrdma-overlayd (required)");
    object_class_property_set_description(klass, "doorbells",
        "doorbell queues to spread user contexts over: 1 for the kernel + "
        "user queues (1..64)");
    object_class_property_set_description(klass, "queue-size",
        "size of every virtqueue (power of 2, at most 1024)");
    dc->vmsd = &pvo_vmstate;
    vdc->vmsd = &pvo_vmstate_device;
    dc->desc = "pvrdma-overlay paravirtual RDMA device (vhost-user)";
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    vdc->realize = pvo_device_realize;
    vdc->unrealize = pvo_device_unrealize;
    vdc->get_features = pvo_get_features;
    vdc->get_config = pvo_get_config;
    vdc->set_status = pvo_set_status;
    vdc->reset = pvo_reset;
    vdc->guest_notifier_mask = pvo_guest_notifier_mask;
    vdc->guest_notifier_pending = pvo_guest_notifier_pending;
    vdc->get_vhost = pvo_get_vhost;
}

static const TypeInfo pvo_types[] = {
    {
        .name = TYPE_VHOST_USER_RDMA,
        .parent = TYPE_VIRTIO_DEVICE,
        .instance_size = sizeof(VHostUserRDMA),
        .class_init = pvo_class_init,
    },
};

DEFINE_TYPES(pvo_types)
