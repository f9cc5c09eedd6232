/*
 * pvrdma-overlay: vhost-user RDMA virtio device (virtio ID 42)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QEMU_VHOST_USER_RDMA_H
#define QEMU_VHOST_USER_RDMA_H

#include "hw/virtio/virtio.h"
#include "hw/virtio/vhost.h"
#include "hw/virtio/vhost-user.h"
#include "chardev/char-fe.h"
#include "exec/memory.h"
#include "qemu/notify.h"
#include "pvo-device.h"

#define TYPE_VHOST_USER_RDMA "pvrdma-overlay-device"
OBJECT_DECLARE_SIMPLE_TYPE(VHostUserRDMA, VHOST_USER_RDMA)

/* Queues that are not doorbell queues: control and event. */
#define VHOST_USER_RDMA_FIXED_QUEUES    PVO_VQ_DB_KERNEL

/* Notify ring bookkeeping of one context slot. */
typedef struct VHostUserRDMASlot {
    uint32_t pos;               /* ring index of its last entry */
    bool queued;                /* appended since the last reset */
} VHostUserRDMASlot;

struct VHostUserRDMA {
    VirtIODevice parent_obj;

    /* Properties */
    CharBackend chardev;
    uint32_t doorbells;         /* doorbell queues, the kernel's included */
    uint16_t queue_size;

    /* Derived at realize */
    uint16_t num_queues;        /* control + event + doorbells */
    VirtQueue **vqs;

    /* vhost-user state */
    VhostUserState vhost_user;
    struct vhost_dev vhost_dev;
    struct vhost_virtqueue *vhost_vqs;
    bool connected;
    bool vhost_running;         /* started by us, not yet stopped */
    /*
     * Back-end connections so far (config field `backend`): each new one
     * starts with no objects, so the guest must re-create its device.
     * Migrates: the destination's back-end continues the source's.
     */
    uint32_t backend_conns;

    /* Config space as last fetched from the back-end, checked. */
    struct pvo_config config;

    /*
     * Doorbell BAR (include/pvo-device.h): page 0 holds the registers,
     * queue page N kicks virtqueue N, slot page PVO_DB_SLOT_PAGE0 + s
     * appends s to a notify ring and kicks that ring's queue. The
     * transport maps the region (virtio-pci: BAR 2); the device owns it
     * because kicking a queue is device business and the region outlives
     * vhost restarts.
     */
    MemoryRegion doorbell_mr;
    bool doorbell_eventfds;     /* host notifiers wired into doorbell_mr */

    /*
     * Notify rings of the slot pages. notify_lo/notify_hi are the
     * registers as written; writing HI latches notify_gpa (0: slot
     * doorbells off) and clears the rest. notify_prod is each ring's
     * producer counter (indexed by virtqueue), owned here and never read
     * back from guest memory. A slot is queued once appended; while its
     * entry at pos is not consumed, further doorbells append nothing.
     * All of it is device state and migrates (pvo_vmstate_device).
     */
    uint32_t notify_lo;
    uint32_t notify_hi;
    uint64_t notify_gpa;
    uint32_t notify_prod[PVO_MAX_QUEUES];
    VHostUserRDMASlot *slots;   /* PVO_MAX_DB_SLOTS entries */

    /*
     * Migration: the back-end's state travels in the vmstate through
     * VHOST_USER_PROTOCOL_F_DEVICE_STATE. migration_blocker is set while
     * the back-end cannot do that (disconnected, or without the feature),
     * re-decided at every connect and disconnect and after a migration.
     */
    Error *migration_blocker;
    NotifierWithReturn migration_notifier;
    uint16_t migrated_num_queues;   /* num_queues as the stream has it */
};

/* Virtqueues the device will create for its current properties. */
uint16_t vhost_user_rdma_queue_count(VHostUserRDMA *s);

#endif
