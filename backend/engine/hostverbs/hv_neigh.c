// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Destinations the host has no link-layer address for. rdma_rxe and RoCE
 * drivers resolve an address vector's MAC inside ibv_modify_qp (RTR) and
 * ibv_create_ah, and wait up to a second for an address nobody answers
 * ARP for; the back-end's one loop, every VM of every tenant, waits with
 * them. So before such a call the back-end asks the kernel for the
 * neighbour entry (rtnetlink, answered at once):
 *
 *   an address of this host         looped back, no ARP: go ahead
 *   valid (reachable, stale, ...)   the call will not wait: go ahead
 *   none, incomplete                first contact, or one being made: go
 *                                   ahead and wait, unless the VM waited
 *                                   in vain lately
 *   failed                          nobody answered lately: fail at once
 *
 * A VM whose call found nobody (it waited the full second) may not make
 * the loop wait again for QUIET_S: meanwhile its first contacts fail at
 * once too. Every refusal asks the kernel to resolve the address in the
 * background (NTF_USE), so a later attempt finds it valid if a host
 * answered. A guest can thus stall the others for a second per QUIET_S,
 * not a second per attempt.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <glib.h>

#include "hv.h"
#include "log.h"
#include "vm.h"

#define QUIET_S 60
/* the kernel's NUD_VALID (not in its UAPI): an address to send to */
#define NEIGH_USABLE                                                           \
	(NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE |   \
	 NUD_DELAY)

enum neigh {
	NEIGH_VALID,
	NEIGH_NONE, /* or incomplete */
	NEIGH_FAILED,
	NEIGH_UNKNOWN, /* the kernel did not say: behave as before */
};

struct nl_req {
	struct nlmsghdr n;
	struct ndmsg nd;
	struct rtattr a;
	uint32_t ip;
};

/* One request on a fresh rtnetlink socket; the answer's neighbour state
 * (RTM_GETNEIGH), 0 (an ack), or -errno. Connection set-up only: the
 * kernel answers at once, a socket per call keeps no state. */
static int nl_call(uint16_t type, uint16_t flags, uint8_t ndm_flags,
		   int ifindex, uint32_t ip)
{
	struct nl_req r = {
	    .n = {.nlmsg_len = sizeof(r),
		  .nlmsg_type = type,
		  .nlmsg_flags = NLM_F_REQUEST | flags,
		  .nlmsg_seq = 1},
	    .nd = {.ndm_family = AF_INET,
		   .ndm_ifindex = ifindex,
		   .ndm_flags = ndm_flags},
	    .a = {.rta_len = RTA_LENGTH(4), .rta_type = NDA_DST},
	    .ip = ip,
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_usec = 200000};
	union {
		struct nlmsghdr n;
		char buf[1024];
	} ans;
	struct nlmsghdr *h = &ans.n;
	int fd, ret = -EIO;
	ssize_t got;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &r, sizeof(r), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) != sizeof(r)) {
		ret = -errno;
		goto out;
	}
	got = recv(fd, &ans, sizeof(ans), 0);
	if (got < 0) {
		ret = -errno;
		goto out;
	}
	if (!NLMSG_OK(h, (size_t)got))
		goto out;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		ret =
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) ? e->error : -EIO;
	} else if (h->nlmsg_type == RTM_NEWNEIGH &&
		   h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ndmsg))) {
		ret = ((const struct ndmsg *)NLMSG_DATA(h))->ndm_state;
	}
out:
	close(fd);
	return ret;
}

static enum neigh lookup(int ifindex, uint32_t ip)
{
	int st = nl_call(RTM_GETNEIGH, 0, 0, ifindex, ip);

	if (st == -ENOENT)
		return NEIGH_NONE;
	if (st < 0)
		return NEIGH_UNKNOWN; /* e.g. a kernel before 5.0 */
	if (st & NEIGH_USABLE)
		return NEIGH_VALID;
	if (st & NUD_FAILED)
		return NEIGH_FAILED;
	return NEIGH_NONE;
}

/* Whether ip is one of this host's addresses (it has no neighbour
 * entry: the host loops it back). */
static bool local_address(uint32_t ip)
{
	struct ifaddrs *ifa, *i;
	bool local = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !local; i = i->ifa_next)
		local = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			((const struct sockaddr_in *)i->ifa_addr)
				->sin_addr.s_addr == ip;
	freeifaddrs(ifa);
	return local;
}

/* Have the kernel resolve it in the background. */
static void kick(int ifindex, uint32_t ip)
{
	nl_call(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_ACK, NTF_USE, ifindex, ip);
}

enum pvo_status pvo_hv_resolve_begin(struct pvo_vm *vm, const uint8_t dgid[16],
				     bool *waits)
{
	const char *netdev = vm->cfg->tenant->hv_netdev;
	int ifindex = (int)if_nametoindex(netdev);
	char buf[INET_ADDRSTRLEN];
	uint32_t ip;
	enum neigh n;

	*waits = false;
	memcpy(&ip, dgid + 12, 4); /* v4-mapped: pvo_hv_dgid_allowed */
	/* no netdev: the caller's checks say why */
	if (!ifindex || local_address(ip))
		return PVO_STATUS_OK;
	n = lookup(ifindex, ip);
	if (n == NEIGH_VALID)
		return PVO_STATUS_OK;
	if (n == NEIGH_UNKNOWN ||
	    (n == NEIGH_NONE && g_get_monotonic_time() >= to_hv_vm(vm)->quiet_until)) {
		*waits = true;
		return PVO_STATUS_OK;
	}
	kick(ifindex, ip);
	inet_ntop(AF_INET, &ip, buf, sizeof(buf));
	pvo_vm_warn(
	    vm, "hostverbs: %s on %s: refused without waiting: %s", buf, netdev,
	    n == NEIGH_FAILED ? "nobody answered for it lately (asking again)"
			      : "this VM waited in vain for an address lately");
	return PVO_STATUS_EHOSTUNREACH;
}

enum pvo_status pvo_hv_resolve_end(struct pvo_vm *vm, const uint8_t dgid[16],
				   bool waited, int err)
{
	char buf[INET_ADDRSTRLEN];

	if (err != ETIMEDOUT && err != EHOSTUNREACH && err != ENETUNREACH &&
	    err != ENODATA)
		return PVO_STATUS_OK;
	if (waited)
		to_hv_vm(vm)->quiet_until =
		    g_get_monotonic_time() + QUIET_S * G_USEC_PER_SEC;
	inet_ntop(AF_INET, dgid + 12, buf, sizeof(buf));
	if (waited)
		pvo_vm_warn(vm,
			    "hostverbs: no host answers for %s on %s (%s); for "
			    "%d s this VM's connections to addresses the host "
			    "has not resolved yet fail at once",
			    buf, vm->cfg->tenant->hv_netdev, g_strerror(err),
			    QUIET_S);
	else
		pvo_vm_warn(vm, "hostverbs: no host answers for %s on %s (%s)",
			    buf, vm->cfg->tenant->hv_netdev, g_strerror(err));
	return PVO_STATUS_EHOSTUNREACH;
}
