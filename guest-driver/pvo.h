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

#include "pvo-device.h"

/*
 * Linux 6.11 changed two interfaces used here: virtio_find_vqs() takes
 * struct virtqueue_info, and create_cq gets the uverbs attribute bundle
 * instead of the udata. Everything else is the same from 6.1 to 6.12.
 */
#define PVO_API_6_11	(KERNEL_VERSION(6, 11, 0) <= LINUX_VERSION_CODE)

struct pvo_ibdev;

/* Control queue (pvo_ctrl.c) */
struct pvo_ctrl {
	struct virtqueue *vq;
	spinlock_t lock;		/* vq and request hand-over */
	struct semaphore slots;		/* free descriptor chains */
	bool dead;			/* device reset: fail new commands */
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

	/* from the config space */
	u8 mac[ETH_ALEN];
	u16 num_queues;
	u16 mtu;

	/* doorbell BAR: page N kicks virtqueue N */
	phys_addr_t db_phys;
	resource_size_t db_len;
	void __iomem *db_kernel;	/* page PVO_VQ_DB_KERNEL */

	struct virtqueue **vqs;		/* num_queues entries */
	struct pvo_ctrl ctrl;
	struct pvo_event_queue events;

	/*
	 * Netdev binding (pvo_netdev.c). netdev and netdev_lost are written
	 * under RTNL; ibdev only from work items on wq, which is ordered.
	 */
	struct workqueue_struct *wq;
	struct work_struct sync_work;	/* (un)bind to the netdev */
	struct work_struct port_work;	/* report port state changes */
	struct notifier_block netdev_nb;
	struct net_device *netdev;
	netdevice_tracker netdev_tracker;
	bool netdev_lost;		/* NETDEV_UNREGISTER seen */
	bool waiting_logged;
	spinlock_t work_lock;		/* removing vs. queueing work */
	bool removing;
	struct pvo_ibdev *ibdev;
};

/* pvo_ctrl.c */
void pvo_ctrl_init(struct pvo_dev *dev, struct virtqueue *vq);
void pvo_ctrl_done(struct virtqueue *vq);
void pvo_ctrl_shutdown(struct pvo_dev *dev);
int pvo_ctrl_cmd(struct pvo_dev *dev, u16 opcode, u32 ctx,
		 const void *req, size_t req_len, void *resp, size_t resp_len);
const char *pvo_cmd_name(u16 opcode);

/* pvo_event.c */
int pvo_event_init(struct pvo_dev *dev, struct virtqueue *vq);
void pvo_event_start(struct pvo_dev *dev);
void pvo_event_done(struct virtqueue *vq);
void pvo_event_shutdown(struct pvo_dev *dev);

/* pvo_netdev.c */
void pvo_netdev_init(struct pvo_dev *dev);
int pvo_netdev_start(struct pvo_dev *dev);
void pvo_netdev_stop(struct pvo_dev *dev);
void pvo_netdev_port_changed(struct pvo_dev *dev);

/* pvo_verbs.c */
int pvo_check_device(struct pvo_dev *dev);
struct pvo_ibdev *pvo_ib_register(struct pvo_dev *dev,
				  struct net_device *netdev);
void pvo_ib_unregister(struct pvo_ibdev *pib);
void pvo_ib_port_update(struct pvo_ibdev *pib);

#endif /* PVO_H */
