// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host RDMA device of the host-verbs engine: opened at start-up once
 * per thread that serves a tenant on it, its completion channel and async
 * events on that thread's loop (nothing of one thread's VMs is ever
 * touched from another), and the
 * tenant's side of addressing: which host GID a VM sends from, and which
 * destinations its tenant's netdev reaches.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <string.h>
#include <glib.h>

#include "gid.h"
#include "hv.h"
#include "log.h"
#include "loop.h"
#include "qp.h"
#include "threads.h"
#include "vm.h"

/* the devices opened at start-up (struct pvo_hv_device) */
static GPtrArray *devices;

struct pvo_hv_device *pvo_hv_dev(const struct pvo_tenant *t)
{
	unsigned int i;

	for (i = 0; t && t->hostverbs && devices && i < devices->len; i++) {
		struct pvo_hv_device *d = g_ptr_array_index(devices, i);

		if (d->port == t->hv_port && d->thread == t->thread &&
		    !strcmp(d->name, t->hv_device))
			return d;
	}
	return NULL;
}

bool pvo_hv_serves(const struct pvo_tenant *t)
{
	return pvo_hv_dev(t) != NULL;
}

static gboolean comp_ready(int fd, GIOCondition cond, void *data)
{
	pvo_hv_cq_events(data);
	return G_SOURCE_CONTINUE;
}

static gboolean async_ready(int fd, GIOCondition cond, void *data)
{
	struct pvo_hv_device *d = data;
	struct ibv_async_event ev;

	while (ibv_get_async_event(d->ctx, &ev) == 0) {
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED: {
			struct pvo_qp *qp =
			    pvo_hv_qp_by_host_qpn(d, ev.element.qp->qp_num);

			if (qp)
				pvo_hv_qp_event(qp, ev.event_type);
			break;
		}
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
			pvo_log(NULL, "hostverbs: %s port %u: %s", d->name,
				ev.element.port_num,
				ibv_event_type_str(ev.event_type));
			break;
		default:
			pvo_log(NULL, "hostverbs: %s: async event %s", d->name,
				ibv_event_type_str(ev.event_type));
			break;
		}
		ibv_ack_async_event(&ev);
	}
	return G_SOURCE_CONTINUE;
}

static bool set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

static char *device_names(struct ibv_device **list, int n)
{
	GString *s = g_string_new(NULL);
	int i;

	for (i = 0; i < n; i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "",
				       ibv_get_device_name(list[i]));
	return g_string_free(s, FALSE);
}

static void device_free(struct pvo_hv_device *d)
{
	struct pvo_loop *was = pvo_thread_enter(d->thread);

	if (d->comp_src)
		pvo_loop_remove_fd(d->comp_src);
	if (d->async_src)
		pvo_loop_remove_fd(d->async_src);
	if (d->channel)
		ibv_destroy_comp_channel(d->channel);
	if (d->by_qpn)
		g_hash_table_destroy(d->by_qpn);
	ibv_close_device(d->ctx);
	g_free(d);
	pvo_thread_leave(was);
}

/* Opens the tenant's device and port, or says why not. */
static struct pvo_hv_device *device_open(const struct pvo_tenant *t, char **err)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct pvo_hv_device *d;
	struct pvo_loop *was;
	int i, n = 0;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), t->hv_device))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		char *names = list ? device_names(list, n) : g_strdup("");

		*err = g_strdup_printf(
		    "tenant '%s': hostverbs-device %s: %s (devices here: "
		    "%s); load the NIC's driver, or rdma_rxe and 'rdma "
		    "link add %s type rxe netdev NETDEV', or use "
		    "transport = overlay",
		    t->name, t->hv_device,
		    i < n ? "cannot open it" : "no such RDMA device",
		    *names ? names : "none", t->hv_device);
		g_free(names);
		if (list)
			ibv_free_device_list(list);
		return NULL;
	}
	ibv_free_device_list(list);
	d = g_new0(struct pvo_hv_device, 1);
	d->ctx = ctx;
	d->thread = t->thread;
	g_strlcpy(d->name, t->hv_device, sizeof(d->name));
	d->port = t->hv_port;
	if (ibv_query_port(ctx, d->port, &d->port_attr)) {
		*err = g_strdup_printf("tenant '%s': hostverbs-device %s has "
				       "no port %u; set hostverbs-port",
				       t->name, d->name, d->port);
		goto fail;
	}
	if (d->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		*err = g_strdup_printf("tenant '%s': hostverbs-device %s port "
				       "%u is not RoCE (Ethernet link layer): "
				       "tenants select host GIDs by their "
				       "netdev",
				       t->name, d->name, d->port);
		goto fail;
	}
	d->channel = ibv_create_comp_channel(ctx);
	if (!d->channel || !set_nonblock(d->channel->fd) ||
	    !set_nonblock(ctx->async_fd)) {
		*err = g_strdup_printf("hostverbs-device %s: completion "
				       "channel: %s",
				       d->name, g_strerror(errno));
		goto fail;
	}
	if (d->port_attr.state != IBV_PORT_ACTIVE)
		pvo_log(NULL,
			"hostverbs: %s port %u is %s: host QPs cannot "
			"connect until it is active",
			d->name, d->port,
			ibv_port_state_str(d->port_attr.state));
	d->by_qpn = g_hash_table_new(g_direct_hash, g_direct_equal);
	was = pvo_thread_enter(d->thread);
	d->comp_src = pvo_loop_add_fd(d->channel->fd, G_IO_IN, comp_ready, d);
	d->async_src = pvo_loop_add_fd(ctx->async_fd, G_IO_IN, async_ready, d);
	pvo_thread_leave(was);
	if (!d->comp_src || !d->async_src) {
		*err = g_strdup_printf("hostverbs-device %s: cannot wait on "
				       "its events: %s",
				       d->name, g_strerror(errno));
		goto fail;
	}
	pvo_log(NULL, "hostverbs: %s port %u (%s, MTU %d) for thread %u",
		d->name, d->port, ibv_port_state_str(d->port_attr.state),
		128 << d->port_attr.active_mtu, d->thread + 1);
	return d;
fail:
	device_free(d);
	return NULL;
}

bool pvo_hv_open(const struct pvo_daemon_config *cfg, char **err)
{
	struct pvo_hv_device *d;
	int i;

	for (i = 0; i < cfg->num_tenants; i++) {
		const struct pvo_tenant *t = &cfg->tenants[i];

		if (!t->hostverbs || pvo_hv_dev(t))
			continue;
		d = device_open(t, err);
		if (!d)
			return false;
		if (!devices)
			devices = g_ptr_array_new();
		g_ptr_array_add(devices, d);
	}
	if (devices)
		pvo_hv_budget_init(0);
	return true;
}

void pvo_hv_close(void)
{
	unsigned int i;

	if (!devices)
		return;
	for (i = 0; i < devices->len; i++)
		device_free(g_ptr_array_index(devices, i));
	g_ptr_array_free(devices, TRUE);
	devices = NULL;
}

bool pvo_hv_reloadable(const struct pvo_daemon_config *cfg, char **err)
{
	int i;

	for (i = 0; i < cfg->num_tenants; i++) {
		const struct pvo_tenant *t = &cfg->tenants[i];

		if (!t->hostverbs || pvo_hv_dev(t))
			continue;
		*err = g_strdup_printf(
		    "tenant '%s' would use hostverbs-device %s port %u on "
		    "thread %u, where the daemon did not open it at "
		    "start-up: restart the daemon",
		    t->name, t->hv_device, t->hv_port, t->thread + 1);
		return false;
	}
	return true;
}

/* ---- addressing ---- */

int pvo_hv_sgid_index(struct pvo_vm *vm, uint8_t sgid_index, char **why)
{
	const struct pvo_tenant *t = vm->cfg->tenant;
	struct pvo_hv_device *d = pvo_hv_dev(t);
	unsigned int ifindex = if_nametoindex(t->hv_netdev);
	const struct pvo_gid_entry *g;
	char buf[INET6_ADDRSTRLEN];
	struct ibv_gid_entry e;
	int i;

	if (sgid_index >= PVO_GID_TABLE_LEN || !vm->gids.e[sgid_index].valid) {
		*why = g_strdup_printf("no GID at index %u", sgid_index);
		return -1;
	}
	g = &vm->gids.e[sgid_index];
	if (!ifindex) {
		*why = g_strdup_printf("tenant %s's hostverbs-netdev %s does "
				       "not exist",
				       t->name, t->hv_netdev);
		return -1;
	}
	for (i = 0; i < d->port_attr.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(d->ctx, d->port, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    e.ndev_ifindex == ifindex && !memcmp(e.gid.raw, g->gid, 16))
			return i;
	}
	*why = g_strdup_printf(
	    "GID %s is not a RoCE v2 GID of %s port %u on %s: add the "
	    "VM's address to %s",
	    pvo_gid_str(g->gid, buf, sizeof(buf)), d->name, d->port,
	    t->hv_netdev, t->hv_netdev);
	return -1;
}

bool pvo_hv_dgid_allowed(struct pvo_vm *vm, const uint8_t dgid[16], char **why)
{
	const struct pvo_tenant *t = vm->cfg->tenant;
	struct ifaddrs *ifa, *i;
	char buf[INET6_ADDRSTRLEN];
	struct in6_addr d;
	bool ok = false;

	memcpy(&d, dgid, 16);
	if (!IN6_IS_ADDR_V4MAPPED(&d)) {
		*why = g_strdup_printf("destination GID %s is not an IPv4 "
				       "address: the tenant network is IPv4",
				       pvo_gid_str(dgid, buf, sizeof(buf)));
		return false;
	}
	if (getifaddrs(&ifa)) {
		*why = g_strdup_printf("getifaddrs: %s", g_strerror(errno));
		return false;
	}
	for (i = ifa; i && !ok; i = i->ifa_next) {
		const struct sockaddr_in *a, *m;
		uint32_t ip;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !i->ifa_netmask || strcmp(i->ifa_name, t->hv_netdev))
			continue;
		a = (const struct sockaddr_in *)i->ifa_addr;
		m = (const struct sockaddr_in *)i->ifa_netmask;
		memcpy(&ip, dgid + 12, 4);
		ok = ((ip ^ a->sin_addr.s_addr) & m->sin_addr.s_addr) == 0;
	}
	freeifaddrs(ifa);
	if (!ok)
		*why = g_strdup_printf("destination %s is outside tenant "
				       "%s's network (the subnets of %s)",
				       pvo_gid_str(dgid, buf, sizeof(buf)),
				       t->name, t->hv_netdev);
	return ok;
}
