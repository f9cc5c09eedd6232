// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host RDMA device of the host-verbs transport: opened once at
 * start-up, its completion channel and async events on the loop, and the
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
#include "vm.h"

struct pvo_hv_device *pvo_hv;

static const char *port_state_str(enum ibv_port_state s)
{
	return ibv_port_state_str(s);
}

static gboolean comp_ready(int fd, GIOCondition cond, void *data)
{
	pvo_hv_cq_events();
	return G_SOURCE_CONTINUE;
}

static gboolean async_ready(int fd, GIOCondition cond, void *data)
{
	struct ibv_async_event ev;

	while (ibv_get_async_event(pvo_hv->ctx, &ev) == 0) {
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED: {
			struct pvo_qp *qp =
				pvo_hv_qp_by_host_qpn(ev.element.qp->qp_num);

			if (qp)
				pvo_hv_qp_event(qp, ev.event_type);
			break;
		}
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
			pvo_log(NULL, "hostverbs: %s port %u: %s",
				ibv_get_device_name(pvo_hv->ctx->device),
				ev.element.port_num,
				ibv_event_type_str(ev.event_type));
			break;
		default:
			pvo_log(NULL, "hostverbs: %s: async event %s",
				ibv_get_device_name(pvo_hv->ctx->device),
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

bool pvo_hv_open(const struct pvo_daemon_config *cfg, char **err)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct pvo_hv_device *d;
	int i, n = 0;
	bool used = false;

	for (i = 0; i < cfg->num_tenants; i++)
		used |= cfg->tenants[i].hostverbs;
	if (!used)
		return true;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), cfg->hv_device))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		char *names = list ? device_names(list, n) : g_strdup("");

		*err = g_strdup_printf(
			"hostverbs-device %s: %s (devices here: %s); load the "
			"NIC's driver, or rdma_rxe and 'rdma link add %s type "
			"rxe netdev NETDEV', or use transport = overlay",
			cfg->hv_device,
			i < n ? "cannot open it" : "no such RDMA device",
			*names ? names : "none", cfg->hv_device);
		g_free(names);
		if (list)
			ibv_free_device_list(list);
		return false;
	}
	ibv_free_device_list(list);
	d = g_new0(struct pvo_hv_device, 1);
	d->ctx = ctx;
	d->port = cfg->hv_port;
	if (ibv_query_port(ctx, d->port, &d->port_attr)) {
		*err = g_strdup_printf("hostverbs-device %s has no port %u; "
				       "set hostverbs-port",
				       cfg->hv_device, d->port);
		goto fail;
	}
	if (d->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		*err = g_strdup_printf("hostverbs-device %s port %u is not "
				       "RoCE (Ethernet link layer): tenants "
				       "select host GIDs by their netdev",
				       cfg->hv_device, d->port);
		goto fail;
	}
	d->channel = ibv_create_comp_channel(ctx);
	if (!d->channel || !set_nonblock(d->channel->fd) ||
	    !set_nonblock(ctx->async_fd)) {
		*err = g_strdup_printf("hostverbs-device %s: completion "
				       "channel: %s",
				       cfg->hv_device, g_strerror(errno));
		goto fail;
	}
	if (d->port_attr.state != IBV_PORT_ACTIVE)
		pvo_log(NULL,
			"hostverbs: %s port %u is %s: host QPs cannot "
			"connect until it is active",
			cfg->hv_device, d->port,
			port_state_str(d->port_attr.state));
	pvo_hv = d;
	d->comp_src = pvo_loop_add_fd(d->channel->fd, G_IO_IN, comp_ready,
				      NULL);
	d->async_src = pvo_loop_add_fd(ctx->async_fd, G_IO_IN, async_ready,
				       NULL);
	pvo_log(NULL, "hostverbs: %s port %u (%s, MTU %d)", cfg->hv_device,
		d->port, port_state_str(d->port_attr.state),
		128 << d->port_attr.active_mtu);
	return true;
fail:
	if (d->channel)
		ibv_destroy_comp_channel(d->channel);
	ibv_close_device(ctx);
	g_free(d);
	return false;
}

void pvo_hv_close(void)
{
	struct pvo_hv_device *d = pvo_hv;

	if (!d)
		return;
	pvo_loop_remove(d->comp_src);
	pvo_loop_remove(d->async_src);
	ibv_destroy_comp_channel(d->channel);
	ibv_close_device(d->ctx);
	g_free(d);
	pvo_hv = NULL;
}

bool pvo_hv_reloadable(const struct pvo_daemon_config *cfg, char **err)
{
	int i;

	for (i = 0; i < cfg->num_tenants && !pvo_hv; i++) {
		if (!cfg->tenants[i].hostverbs)
			continue;
		*err = g_strdup_printf(
			"tenant '%s' would use transport = hostverbs, but "
			"the daemon started without a host-verbs tenant and "
			"did not open %s: restart the daemon",
			cfg->tenants[i].name, cfg->hv_device);
		return false;
	}
	return true;
}

/* ---- addressing ---- */

int pvo_hv_sgid_index(struct pvo_vm *vm, uint8_t sgid_index, char **why)
{
	const struct pvo_tenant *t = vm->cfg->tenant;
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
	for (i = 0; i < pvo_hv->port_attr.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(pvo_hv->ctx, pvo_hv->port, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    e.ndev_ifindex == ifindex &&
		    !memcmp(e.gid.raw, g->gid, 16))
			return i;
	}
	*why = g_strdup_printf(
		"GID %s is not a RoCE v2 GID of %s port %u on %s: add the "
		"VM's address to %s",
		pvo_gid_str(g->gid, buf, sizeof(buf)),
		ibv_get_device_name(pvo_hv->ctx->device), pvo_hv->port,
		t->hv_netdev, t->hv_netdev);
	return -1;
}

bool pvo_hv_dgid_allowed(struct pvo_vm *vm, const uint8_t dgid[16],
			 char **why)
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
