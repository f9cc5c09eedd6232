// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: binding to the guest's netdev. RoCE needs a netdev for
 * its GIDs (ib_core derives them from the netdev's addresses) and for the
 * port state. The device names the VM's MAC in its config space; the
 * ib_device exists exactly while a NIC with that MAC is registered.
 *
 * The netdevice notifier runs under RTNL and only queues work: registering
 * and unregistering an ib_device must not happen under RTNL, because
 * ib_core's RoCE GID code takes RTNL itself.
 */

#include <linux/if_arp.h>
#include <linux/rtnetlink.h>
#include <net/net_namespace.h>

#include "pvo.h"

/* Queue work unless the device is going away. */
static void pvo_netdev_queue(struct pvo_dev *dev, struct work_struct *work)
{
	unsigned long flags;

	spin_lock_irqsave(&dev->work_lock, flags);
	if (!dev->removing)
		queue_work(dev->wq, work);
	spin_unlock_irqrestore(&dev->work_lock, flags);
}

/*
 * The NIC itself has a parent device (virtio-net's is the virtio device);
 * VLANs, bridges, bonds and macvlans stacked on it may carry the same MAC
 * but have none.
 */
static bool pvo_netdev_matches(const struct pvo_dev *dev,
			       const struct net_device *ndev)
{
	return ndev->type == ARPHRD_ETHER && ndev->dev.parent &&
	       ndev->reg_state == NETREG_REGISTERED &&
	       ether_addr_equal(ndev->dev_addr, dev->mac);
}

/* Any network namespace: the NIC may have been moved into a container. */
static struct net_device *pvo_netdev_find(const struct pvo_dev *dev)
{
	struct net_device *ndev, *found = NULL;
	struct net *net;

	ASSERT_RTNL();
	rcu_read_lock();
	for_each_net_rcu(net) {
		for_each_netdev_rcu(net, ndev) {
			if (pvo_netdev_matches(dev, ndev)) {
				found = ndev;
				goto out;
			}
		}
	}
out:
	rcu_read_unlock();
	return found;
}

static void pvo_netdev_unbind(struct pvo_dev *dev, struct net_device *ndev)
{
	if (dev->ibdev) {
		pvo_ib_unregister(dev->ibdev);
		dev->ibdev = NULL;
	}
	dev_info(&dev->vdev->dev, "unbound from %s\n", netdev_name(ndev));
	netdev_put(ndev, &dev->netdev_tracker);
}

static void pvo_netdev_bind(struct pvo_dev *dev, struct net_device *ndev)
{
	struct pvo_ibdev *pib;

	pib = pvo_ib_register(dev, ndev);
	if (IS_ERR(pib)) {
		dev_err(&dev->vdev->dev,
			"cannot register the RDMA device on %s: %pe; fix the back-end, then reload the driver (rmmod pvrdma_overlay; modprobe pvrdma_overlay)\n",
			netdev_name(ndev), pib);
		rtnl_lock();
		dev->netdev = NULL;
		dev->netdev_lost = false;
		rtnl_unlock();
		netdev_put(ndev, &dev->netdev_tracker);
		return;
	}
	dev->ibdev = pib;
}

/*
 * Make the binding match reality: drop a netdev that went away or changed
 * its MAC, then look for the NIC with the VM's MAC. Runs on dev->wq.
 */
static void pvo_netdev_sync(struct work_struct *work)
{
	struct pvo_dev *dev = container_of(work, struct pvo_dev, sync_work);
	struct net_device *gone = NULL, *found = NULL;

	rtnl_lock();
	if (dev->netdev && (dev->netdev_lost ||
			    !pvo_netdev_matches(dev, dev->netdev))) {
		gone = dev->netdev;
		dev->netdev = NULL;
		dev->netdev_lost = false;
	}
	rtnl_unlock();
	if (gone)
		pvo_netdev_unbind(dev, gone);

	rtnl_lock();
	if (!dev->netdev) {
		found = pvo_netdev_find(dev);
		if (found) {
			/* Held until unbind; NETDEV_UNREGISTER triggers it. */
			netdev_hold(found, &dev->netdev_tracker, GFP_KERNEL);
			dev->netdev = found;
			dev->netdev_lost = false;
		}
	}
	rtnl_unlock();

	if (found) {
		dev->waiting_logged = false;
		pvo_netdev_bind(dev, found);
	} else if (!dev->netdev && !dev->waiting_logged) {
		dev->waiting_logged = true;
		dev_info(&dev->vdev->dev,
			 "no network interface with MAC %pM yet; the RDMA device appears when it does (check the VM's virtio-net mac= and the tenant config)\n",
			 dev->mac);
	}
}

static void pvo_netdev_port_work(struct work_struct *work)
{
	struct pvo_dev *dev = container_of(work, struct pvo_dev, port_work);

	if (dev->ibdev)
		pvo_ib_port_update(dev->ibdev);
}

static void pvo_netdev_fatal_work(struct work_struct *work)
{
	struct pvo_dev *dev = container_of(work, struct pvo_dev, fatal_work);

	if (dev->ibdev)
		pvo_ib_device_fatal(dev->ibdev);
}

static int pvo_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct pvo_dev *dev = container_of(nb, struct pvo_dev, netdev_nb);

	/* Under RTNL: dev->netdev cannot change meanwhile. */
	switch (event) {
	case NETDEV_REGISTER:
	case NETDEV_CHANGEADDR:
		if (ndev == dev->netdev ||
		    (!dev->netdev && pvo_netdev_matches(dev, ndev)))
			pvo_netdev_queue(dev, &dev->sync_work);
		break;
	case NETDEV_UNREGISTER:
		if (ndev == dev->netdev) {
			dev->netdev_lost = true;
			pvo_netdev_queue(dev, &dev->sync_work);
		}
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		if (ndev == dev->netdev)
			pvo_netdev_queue(dev, &dev->port_work);
		break;
	}
	return NOTIFY_DONE;
}

/* The back-end reported a port state change (may be interrupt context). */
void pvo_netdev_port_changed(struct pvo_dev *dev)
{
	pvo_netdev_queue(dev, &dev->port_work);
}

/* The back-end reported a fatal error (may be interrupt context). */
void pvo_netdev_device_fatal(struct pvo_dev *dev)
{
	pvo_netdev_queue(dev, &dev->fatal_work);
}

/* Before the event queue runs: port events are dropped until started. */
void pvo_netdev_init(struct pvo_dev *dev)
{
	spin_lock_init(&dev->work_lock);
	dev->removing = true;
	INIT_WORK(&dev->sync_work, pvo_netdev_sync);
	INIT_WORK(&dev->port_work, pvo_netdev_port_work);
	INIT_WORK(&dev->fatal_work, pvo_netdev_fatal_work);
	dev->netdev_nb.notifier_call = pvo_netdev_event;
}

static void pvo_netdev_set_removing(struct pvo_dev *dev, bool removing)
{
	unsigned long flags;

	spin_lock_irqsave(&dev->work_lock, flags);
	dev->removing = removing;
	spin_unlock_irqrestore(&dev->work_lock, flags);
}

int pvo_netdev_start(struct pvo_dev *dev)
{
	int err;

	dev->wq = alloc_ordered_workqueue("pvrdma_overlay-%s", 0,
					  dev_name(&dev->vdev->dev));
	if (!dev->wq)
		return -ENOMEM;
	pvo_netdev_set_removing(dev, false);

	/* Registering replays NETDEV_REGISTER for every existing netdev. */
	err = register_netdevice_notifier(&dev->netdev_nb);
	if (err) {
		dev_err(&dev->vdev->dev,
			"cannot register a netdevice notifier: %d\n", err);
		pvo_netdev_set_removing(dev, true);
		destroy_workqueue(dev->wq);
		dev->wq = NULL;
		return err;
	}
	/* Also when nothing matched, to log that the driver is waiting. */
	pvo_netdev_queue(dev, &dev->sync_work);
	return 0;
}

/* Unregister the ib_device (while the control queue still works). */
void pvo_netdev_stop(struct pvo_dev *dev)
{
	struct net_device *ndev;

	pvo_netdev_set_removing(dev, true);
	unregister_netdevice_notifier(&dev->netdev_nb);
	/* Nothing queues work any more: wait for what is running. */
	flush_workqueue(dev->wq);

	rtnl_lock();
	ndev = dev->netdev;
	dev->netdev = NULL;
	rtnl_unlock();
	if (ndev)
		pvo_netdev_unbind(dev, ndev);

	destroy_workqueue(dev->wq);
	dev->wq = NULL;
}
