/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pvrdma_overlay: state of one pvrdma-overlay virtio device and the
 * interfaces between the driver's parts (main, control queue, event queue,
 * netdev binding, verbs).
 */
#ifndef PVO_H
#define PVO_H

#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/virtio.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "pvo-device.h"

/*
 * Linux 6.11 changed two interfaces used here: virtio_find_vqs() takes
 * struct virtqueue_info, and create_cq gets the uverbs attribute bundle
 * instead of the udata. Everything else is the same from 6.1 to 6.12.
 */
#define PVO_API_6_11	(KERNEL_VERSION(6, 11, 0) <= LINUX_VERSION_CODE)

struct pvo_ibdev;

/* One 4 KiB DMA-coherent page the device reads or writes. */
struct pvo_dma_page {
	void *va;
	dma_addr_t dma;
};

/*
 * The kernel's doorbell record page (pvo_db.c): kernel QPs append their
 * handle here and kick virtqueue PVO_VQ_DB_KERNEL.
 */
struct pvo_kdb {
	struct pvo_dma_page page;
	spinlock_t lock;		/* record ring producer */
	atomic_t nqps;			/* kernel QPs: at most one record each */
	bool registered;		/* SET_DB_RING succeeded */
};

/* Control queue (pvo_ctrl.c) */
struct pvo_ctrl {
	struct virtqueue *vq;
	spinlock_t lock;		/* vq and request hand-over */
	struct semaphore slots;		/* free descriptor chains */
	bool dead;			/* device reset: fail new commands */
	bool lost;			/* the back-end lost our objects */
};

/* Event queue (pvo_event.c) */
struct pvo_event_queue {
	struct virtqueue *vq;
	spinlock_t lock;		/* vq: callback vs. first kick */
	struct pvo_event *bufs;		/* one posted buffer per event */
	unsigned int nbufs;
};

struct pvo_dev {
	struct virtio_device *vdev;
	struct device *dma_dev;		/* the PCI function; DMA = guest-physical */

	/* from the config space */
	u8 mac[ETH_ALEN];
	u16 num_queues;
	u16 mtu;

	/* doorbell BAR: queue pages, slot pages, registers on page 0 */
	phys_addr_t db_phys;
	resource_size_t db_len;
	void __iomem *db_regs;		/* page 0 */

	/* notify rings for slot pages (pvo_db.c); NULL: queue pages only */
	void *notify_va;
	dma_addr_t notify_dma;
	size_t notify_size;

	struct virtqueue **vqs;		/* num_queues entries */
	struct pvo_ctrl ctrl;
	struct pvo_event_queue events;
	struct pvo_kdb kdb;

	/*
	 * Objects by device handle, for events (looked up under
	 * events.lock), and kernel QPs by QP number, for poll_cq.
	 */
	struct xarray cqs;
	struct xarray qps;
	struct xarray srqs;
	struct xarray kqpns;

	/* Kernel AHs destroyed in atomic context (pvo_ah.c). */
	spinlock_t ah_gc_lock;
	struct list_head ah_gc;
	struct work_struct ah_gc_work;

	/*
	 * Netdev binding (pvo_netdev.c). netdev and netdev_lost are written
	 * under RTNL; ibdev only from work items on wq, which is ordered.
	 */
	struct workqueue_struct *wq;
	struct work_struct sync_work;	/* (un)bind to the netdev */
	struct work_struct port_work;	/* report port state changes */
	struct work_struct fatal_work;	/* report a device fatal event */
	struct notifier_block netdev_nb;
	struct net_device *netdev;
	netdevice_tracker netdev_tracker;
	bool netdev_lost;		/* NETDEV_UNREGISTER seen */
	bool waiting_logged;
	spinlock_t work_lock;		/* removing vs. queueing work */
	bool removing;
	struct pvo_ibdev *ibdev;

	/*
	 * The back-end connection as the VMM reports it (config `backend`,
	 * pvo_main.c): its count when probed (0: not reported) and whether
	 * this device's objects are gone with an earlier back-end.
	 */
	u32 backend_conns;
	bool backend_lost;
	struct work_struct backend_work;
};

/* pvo_ctrl.c */
void pvo_ctrl_init(struct pvo_dev *dev, struct virtqueue *vq);
void pvo_ctrl_done(struct virtqueue *vq);
void pvo_ctrl_shutdown(struct pvo_dev *dev);
void pvo_ctrl_lost(struct pvo_dev *dev);
int pvo_ctrl_cmd(struct pvo_dev *dev, u16 opcode, u32 ctx,
		 const void *req, size_t req_len, void *resp, size_t resp_len);
int pvo_ctrl_cmd_atomic(struct pvo_dev *dev, u16 opcode, u32 ctx,
			const void *req, size_t req_len, void *resp,
			size_t resp_len);
int pvo_ctrl_handle_cmd(struct pvo_dev *dev, u16 opcode, u32 ctx,
			u32 handle);
const char *pvo_cmd_name(u16 opcode);

/* pvo_event.c */
int pvo_event_init(struct pvo_dev *dev, struct virtqueue *vq);
void pvo_event_start(struct pvo_dev *dev);
void pvo_event_done(struct virtqueue *vq);
void pvo_event_shutdown(struct pvo_dev *dev);
void pvo_event_sync(struct pvo_dev *dev);

/* pvo_db.c */
int pvo_kdb_init(struct pvo_dev *dev);
void pvo_kdb_free(struct pvo_dev *dev);
void pvo_notify_init(struct pvo_dev *dev);
void pvo_notify_free(struct pvo_dev *dev);
void pvo_kdb_ring(struct pvo_dev *dev, u32 qp_handle);

/* pvo_netdev.c */
void pvo_netdev_init(struct pvo_dev *dev);
int pvo_netdev_start(struct pvo_dev *dev);
void pvo_netdev_stop(struct pvo_dev *dev);
void pvo_netdev_port_changed(struct pvo_dev *dev);
void pvo_netdev_device_fatal(struct pvo_dev *dev);

/* pvo_verbs.c */
int pvo_check_device(struct pvo_dev *dev);
struct pvo_ibdev *pvo_ib_register(struct pvo_dev *dev,
				  struct net_device *netdev);
void pvo_ib_unregister(struct pvo_ibdev *pib);
void pvo_ib_port_update(struct pvo_ibdev *pib);
void pvo_ib_device_fatal(struct pvo_ibdev *pib);

/* pvo_cq.c, pvo_qp.c, pvo_srq.c: events from the device (atomic context) */
void pvo_cq_event(struct pvo_dev *dev, u32 type, u32 handle);
void pvo_qp_event(struct pvo_dev *dev, u32 type, u32 handle);
void pvo_srq_event(struct pvo_dev *dev, u32 type, u32 handle);

/* pvo_ah.c */
void pvo_ah_gc_init(struct pvo_dev *dev);
void pvo_ah_gc_flush(struct pvo_dev *dev);

#endif /* PVO_H */
