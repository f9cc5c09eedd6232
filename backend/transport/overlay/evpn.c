// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * EVPN as the map's source (evpn.h). One rtnetlink socket subscribed to
 * RTNLGRP_NEIGH is watched on thread 0's loop; the tables are dumped once
 * at start, and again whenever the socket overflowed (ENOBUFS: a
 * notification was lost).
 *
 * Only entries the control plane installed count: an FDB or neighbour
 * entry marked externally learned (zebra's), or a static one (an
 * operator's `bridge fdb add ... self`); what the kernel learned from the
 * data path (reachable, stale) does not, so a datagram on the wire
 * cannot place a mapping. The flood list (the all-zero MAC's entries,
 * EVPN type-3 routes) names VTEPs only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <glib.h>

#include "evpn.h"
#include "log.h"
#include "loop.h"
#include "moves.h"
#include "overlay.h"
#include "overlay_map.h"
#include "threads.h"

#ifndef AF_BRIDGE
#define AF_BRIDGE 7
#endif

/* datagrams taken per wake-up before the loop serves the VMs again */
#define RX_ROUNDS 32

struct evpn_tenant {
	char name[PVO_NAME_MAX];
	uint32_t vni;
	int vx_if, svi_if;
	GHashTable *fdb;    /* MAC (uint64 *) -> VTEP (s_addr) */
	GHashTable *neigh;  /* IP (s_addr) -> MAC (uint64 *) */
	GHashTable *by_mac; /* MAC (uint64 *) -> GArray of IPs */
	GHashTable *flood;  /* VTEP (s_addr) of the all-zero MAC: 1 */
	GHashTable *vteps;  /* VTEP (s_addr) -> entries naming it */
	bool full_logged;
};

static struct {
	GMutex lock; /* over each tenant's vteps: read by every thread */
	GPtrArray *tenants;
	int fd;
	struct pvo_watch *src;
	struct in_addr self;
	uint16_t port;
	bool quiet; /* a dump: counted, not logged entry by entry */
} ev = {.fd = -1};

static uint64_t mac_key(const uint8_t *mac)
{
	uint64_t k = 0;

	memcpy(&k, mac, 6);
	return k;
}

static void mac_of(uint64_t k, uint8_t mac[6])
{
	memcpy(mac, &k, 6);
}

static uint64_t *new_key(uint64_t k)
{
	return g_memdup2(&k, sizeof(k));
}

static void free_array(gpointer a)
{
	g_array_free(a, TRUE);
}

static struct evpn_tenant *tenant_new(const struct pvo_tenant *t)
{
	struct evpn_tenant *et = g_new0(struct evpn_tenant, 1);

	g_strlcpy(et->name, t->name, sizeof(et->name));
	et->vni = t->vni;
	et->fdb =
	    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	et->neigh = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	et->by_mac = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
					   free_array);
	et->flood = g_hash_table_new(NULL, NULL);
	et->vteps = g_hash_table_new(NULL, NULL);
	return et;
}

static void tenant_free(gpointer p)
{
	struct evpn_tenant *et = p;

	g_hash_table_destroy(et->fdb);
	g_hash_table_destroy(et->neigh);
	g_hash_table_destroy(et->by_mac);
	g_hash_table_destroy(et->flood);
	g_hash_table_destroy(et->vteps);
	g_free(et);
}

static struct evpn_tenant *by_ifindex(int ifindex, bool svi)
{
	unsigned int i;

	for (i = 0; ev.tenants && i < ev.tenants->len; i++) {
		struct evpn_tenant *et = ev.tenants->pdata[i];

		if ((svi ? et->svi_if : et->vx_if) == ifindex)
			return et;
	}
	return NULL;
}

/* ---- the VTEPs of a tenant ---- */

static void vtep_ref(struct evpn_tenant *et, uint32_t vtep, int d)
{
	gpointer k = GUINT_TO_POINTER(vtep);
	int n = GPOINTER_TO_INT(g_hash_table_lookup(et->vteps, k)) + d;

	g_mutex_lock(&ev.lock);
	if (n > 0)
		g_hash_table_insert(et->vteps, k, GINT_TO_POINTER(n));
	else
		g_hash_table_remove(et->vteps, k);
	g_mutex_unlock(&ev.lock);
}

bool pvo_evpn_vtep_serves(const struct pvo_tenant *t, struct in_addr a)
{
	bool yes = false;
	unsigned int i;

	g_mutex_lock(&ev.lock);
	for (i = 0; ev.tenants && i < ev.tenants->len; i++) {
		struct evpn_tenant *et = ev.tenants->pdata[i];

		if (et->vni == t->vni) {
			yes = g_hash_table_contains(et->vteps,
						    GUINT_TO_POINTER(a.s_addr));
			break;
		}
	}
	g_mutex_unlock(&ev.lock);
	return yes;
}

/* ---- the map ---- */

/* Whether (vni, ip) is the address of a VM of this host's config. */
static bool vm_of_here(uint32_t vni, uint32_t ip)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	int i, k;

	for (i = 0; cfg && i < cfg->num_vms; i++)
		for (k = 0; k < cfg->vms[i].num_ips; k++)
			if (cfg->vms[i].tenant->vni == vni &&
			    IN6_IS_ADDR_V4MAPPED(&cfg->vms[i].ips[k]) &&
			    cfg->vms[i].ips[k].s6_addr32[3] == ip)
				return true;
	return false;
}

/* EVPN names another VTEP for a VM of this host: if it is frozen here,
 * it migrated away (moves.c). The VM belongs to its tenant's thread,
 * which the world's pause lets this one act in; a VM of this host's
 * config only, so no other EVPN change pauses anything. */
static void elsewhere(uint32_t vni, uint32_t ip, struct in_addr vtep)
{
	const struct pvo_tenant *t = pvo_overlay_tenant(vni);
	struct pvo_loop *was;

	if (!t || !vm_of_here(vni, ip))
		return;
	pvo_threads_pause();
	was = pvo_thread_enter(t->thread);
	pvo_overlay_vm_elsewhere(vni, ip, vtep, "EVPN names it");
	pvo_thread_leave(was);
	pvo_threads_resume();
}

/* The mapping entry of ip follows the tables: a neighbour whose MAC has
 * an FDB entry maps to that VTEP; anything less, no EVPN entry. */
static void sync_ip(struct evpn_tenant *et, uint32_t ip)
{
	struct pvo_map_entry e = {
	    .vni = et->vni, .ip = ip, .origin = PVO_MAP_EVPN};
	struct pvo_map_entry was;
	const uint64_t *mac =
	    g_hash_table_lookup(et->neigh, GUINT_TO_POINTER(ip));
	gpointer vtep;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	bool had = pvo_map_get(et->vni, ip, &was) && was.origin == PVO_MAP_EVPN;

	inet_ntop(AF_INET, &ip, a, sizeof(a));
	if (!mac || !g_hash_table_lookup_extended(et->fdb, mac, NULL, &vtep)) {
		if (pvo_map_del_origin(et->vni, ip, PVO_MAP_EVPN) && !ev.quiet)
			pvo_info(NULL, "vni %u: %s withdrawn (evpn)", et->vni,
				 a);
		return;
	}
	e.vtep.s_addr = GPOINTER_TO_UINT(vtep);
	e.port = ev.port;
	mac_of(*mac, e.mac);
	if (had && was.vtep.s_addr == e.vtep.s_addr &&
	    memcmp(was.mac, e.mac, 6) == 0)
		return;
	/* a VM that migrated away from here: its source stops serving it;
	 * one that runs here stays served here, whatever the entry says */
	elsewhere(et->vni, ip, e.vtep);
	if (!pvo_map_set(&e))
		return; /* a configured or managed entry names it */
	inet_ntop(AF_INET, &e.vtep, b, sizeof(b));
	if (!ev.quiet)
		pvo_info(NULL, "vni %u: %s %s VTEP %s (evpn)", et->vni, a,
			 had ? "moved behind" : "behind", b);
}

static bool room(struct evpn_tenant *et, GHashTable *h)
{
	if (g_hash_table_size(h) < PVO_EVPN_MAX_ENTRIES)
		return true;
	if (!et->full_logged)
		pvo_log(NULL,
			"tenant '%s': more than %d entries in one of its "
			"EVPN tables; the rest are not followed",
			et->name, PVO_EVPN_MAX_ENTRIES);
	et->full_logged = true;
	return false;
}

static void by_mac_edit(struct evpn_tenant *et, uint64_t mac, uint32_t ip,
			bool add)
{
	GArray *a = g_hash_table_lookup(et->by_mac, &mac);
	unsigned int i;

	if (add) {
		if (!a) {
			a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
			g_hash_table_insert(et->by_mac, new_key(mac), a);
		}
		g_array_append_val(a, ip);
		return;
	}
	for (i = 0; a && i < a->len; i++)
		if (g_array_index(a, uint32_t, i) == ip) {
			g_array_remove_index_fast(a, i);
			break;
		}
	if (a && !a->len)
		g_hash_table_remove(et->by_mac, &mac);
}

/* ---- the kernel's entries ---- */

static void fdb_change(struct evpn_tenant *et, uint64_t mac, uint32_t vtep,
		       bool present)
{
	GArray *ips;
	gpointer old;
	bool had = g_hash_table_lookup_extended(et->fdb, &mac, NULL, &old);
	unsigned int i;

	if (present && had && GPOINTER_TO_UINT(old) == vtep)
		return;
	/* a removal names the VTEP it removes (the kernel keeps one per
	 * unicast MAC; a stale one must not remove the current) */
	if (!present && (!had || GPOINTER_TO_UINT(old) != vtep))
		return;
	if (had)
		vtep_ref(et, GPOINTER_TO_UINT(old), -1);
	if (present) {
		if (!had && !room(et, et->fdb))
			return;
		g_hash_table_insert(et->fdb, new_key(mac),
				    GUINT_TO_POINTER(vtep));
		vtep_ref(et, vtep, 1);
	} else {
		g_hash_table_remove(et->fdb, &mac);
	}
	ips = g_hash_table_lookup(et->by_mac, &mac);
	for (i = 0; ips && i < ips->len; i++)
		sync_ip(et, g_array_index(ips, uint32_t, i));
}

static void flood_change(struct evpn_tenant *et, uint32_t vtep, bool present)
{
	gpointer k = GUINT_TO_POINTER(vtep);

	if (present == g_hash_table_contains(et->flood, k))
		return;
	if (present && !room(et, et->flood))
		return;
	if (present)
		g_hash_table_add(et->flood, k);
	else
		g_hash_table_remove(et->flood, k);
	vtep_ref(et, vtep, present ? 1 : -1);
}

static void neigh_change(struct evpn_tenant *et, uint32_t ip,
			 const uint8_t *lladdr)
{
	gpointer k = GUINT_TO_POINTER(ip);
	const uint64_t *old = g_hash_table_lookup(et->neigh, k);
	uint64_t mac = lladdr ? mac_key(lladdr) : 0;

	if (lladdr && old && *old == mac)
		return;
	if (!lladdr && !old)
		return;
	if (old)
		by_mac_edit(et, *old, ip, false);
	if (lladdr) {
		if (!old && !room(et, et->neigh))
			return;
		g_hash_table_insert(et->neigh, k, new_key(mac));
		by_mac_edit(et, mac, ip, true);
	} else {
		g_hash_table_remove(et->neigh, k);
	}
	sync_ip(et, ip);
}

/* One RTM_NEWNEIGH / RTM_DELNEIGH; anything else, or an entry of a
 * device no tenant reads, is ignored. */
static void take(const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	const struct rtattr *a;
	const uint8_t *lladdr = NULL;
	const uint32_t *dst = NULL;
	struct evpn_tenant *et;
	bool present;
	int len;

	if ((h->nlmsg_type != RTM_NEWNEIGH && h->nlmsg_type != RTM_DELNEIGH) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)))
		return;
	len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));
	for (a = (const void *)((const char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == ETH_ALEN)
			lladdr = RTA_DATA(a);
		else if (a->rta_type == NDA_DST && RTA_PAYLOAD(a) == 4)
			dst = RTA_DATA(a);
	}
	/* the control plane's: externally learned or static (an FDB entry
	 * of zebra's for a sticky MAC is NOARP) */
	present = h->nlmsg_type == RTM_NEWNEIGH &&
		  ((nd->ndm_flags & NTF_EXT_LEARNED) ||
		   (nd->ndm_state & (NUD_PERMANENT | NUD_NOARP)));
	if (nd->ndm_family == AF_BRIDGE) {
		et = by_ifindex(nd->ndm_ifindex, false);
		/* an IPv4 VTEP other than this host */
		if (!et || !lladdr || !dst || *dst == ev.self.s_addr ||
		    *dst == INADDR_ANY)
			return;
		if (mac_key(lladdr) == 0)
			flood_change(et, *dst, present);
		else
			fdb_change(et, mac_key(lladdr), *dst, present);
	} else if (nd->ndm_family == AF_INET) {
		et = by_ifindex(nd->ndm_ifindex, true);
		/* a VM's address: not multicast or broadcast (the kernel's
		 * own NOARP entries) */
		if (!et || !dst || IN_MULTICAST(ntohl(*dst)) ||
		    *dst == INADDR_BROADCAST)
			return;
		present = h->nlmsg_type == RTM_NEWNEIGH && lladdr &&
			  ((nd->ndm_flags & NTF_EXT_LEARNED) ||
			   (nd->ndm_state & NUD_PERMANENT));
		neigh_change(et, *dst, present ? lladdr : NULL);
	}
}

/* Every message of a datagram of got bytes; false at the dump's end or
 * its error (*err, 0 at the end). */
static bool take_all(const void *buf, size_t got, int *err)
{
	const struct nlmsghdr *h;

	for (h = buf; NLMSG_OK(h, got); h = NLMSG_NEXT(h, got)) {
		if (h->nlmsg_type == NLMSG_DONE) {
			*err = 0;
			return false;
		}
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			*err =
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error
				? -e->error
				: EIO;
			return false;
		}
		take(h);
	}
	return true;
}

static union {
	struct nlmsghdr h;
	char buf[65536];
} rx;

/* Dumps one family's neighbour table (AF_BRIDGE: FDBs) into the tables,
 * on a socket of its own; 0 or an errno. */
static int dump(int family)
{
	struct {
		struct nlmsghdr n;
		struct ndmsg nd;
	} req = {
	    .n = {.nlmsg_len = sizeof(req),
		  .nlmsg_type = RTM_GETNEIGH,
		  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		  .nlmsg_seq = 1},
	    .nd = {.ndm_family = (uint8_t)family},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 2};
	int fd, err = EIO;
	ssize_t got;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) != sizeof(req)) {
		err = errno;
		goto out;
	}
	for (;;) {
		got = recv(fd, rx.buf, sizeof(rx.buf), 0);
		if (got < 0) {
			err = errno;
			break;
		}
		if (!take_all(rx.buf, (size_t)got, &err))
			break;
	}
out:
	close(fd);
	return err;
}

/* The whole tables again: entries that went meanwhile are withdrawn. */
static int dump_all(void)
{
	GPtrArray *was = g_ptr_array_new_with_free_func(g_free);
	unsigned int i, k;
	int err;

	for (i = 0; i < ev.tenants->len; i++) {
		struct evpn_tenant *et = ev.tenants->pdata[i];
		GHashTableIter it;
		gpointer ip;
		GArray *ips = g_array_new(FALSE, FALSE, sizeof(uint32_t));

		g_hash_table_iter_init(&it, et->neigh);
		while (g_hash_table_iter_next(&it, &ip, NULL)) {
			uint32_t v = GPOINTER_TO_UINT(ip);

			g_array_append_val(ips, v);
		}
		g_ptr_array_add(was, ips);
		g_mutex_lock(&ev.lock);
		g_hash_table_remove_all(et->vteps);
		g_mutex_unlock(&ev.lock);
		g_hash_table_remove_all(et->fdb);
		g_hash_table_remove_all(et->neigh);
		g_hash_table_remove_all(et->by_mac);
		g_hash_table_remove_all(et->flood);
		et->full_logged = false;
	}
	ev.quiet = true;
	err = dump(AF_BRIDGE);
	if (!err)
		err = dump(AF_INET);
	for (i = 0; i < ev.tenants->len; i++) {
		struct evpn_tenant *et = ev.tenants->pdata[i];
		GArray *ips = was->pdata[i];

		for (k = 0; k < ips->len; k++)
			if (!g_hash_table_contains(
				et->neigh, GUINT_TO_POINTER(g_array_index(
					       ips, uint32_t, k))))
				sync_ip(et, g_array_index(ips, uint32_t, k));
		g_array_free(ips, TRUE);
		was->pdata[i] = NULL;
	}
	ev.quiet = false;
	g_ptr_array_free(was, TRUE);
	return err;
}

static gboolean on_readable(int fd, GIOCondition cond, gpointer opaque)
{
	int rounds, err;
	ssize_t got;

	(void)cond;
	(void)opaque;
	for (rounds = 0; rounds < RX_ROUNDS; rounds++) {
		got = recv(fd, rx.buf, sizeof(rx.buf), MSG_DONTWAIT);
		if (got < 0 && errno == ENOBUFS) {
			/* notifications were lost: read the tables again */
			pvo_log(NULL, "evpn: netlink notifications were lost; "
				      "reading the tables again");
			err = dump_all();
			if (err)
				pvo_log(NULL, "evpn: reading the tables: %s",
					g_strerror(err));
			continue;
		}
		if (got <= 0)
			break;
		take_all(rx.buf, (size_t)got, &err);
	}
	return G_SOURCE_CONTINUE;
}

static bool fail(char **err, char *msg)
{
	*err = msg;
	pvo_evpn_stop();
	return false;
}

bool pvo_evpn_start(const struct pvo_daemon_config *cfg, char **err)
{
	struct sockaddr_nl me = {.nl_family = AF_NETLINK};
	int rcvbuf = 4 << 20, i, e;
	unsigned int n;

	for (i = 0; i < cfg->num_tenants; i++) {
		const struct pvo_tenant *t = &cfg->tenants[i];
		struct evpn_tenant *et;

		if (!t->evpn)
			continue;
		if (!ev.tenants)
			ev.tenants =
			    g_ptr_array_new_with_free_func(tenant_free);
		et = tenant_new(t);
		g_ptr_array_add(ev.tenants, et);
		et->vx_if = (int)if_nametoindex(t->evpn_netdev);
		et->svi_if = (int)if_nametoindex(t->evpn_svi);
		if (!et->vx_if || !et->svi_if)
			return fail(
			    err,
			    g_strdup_printf(
				"tenant '%s' (line %d): no network device "
				"'%s' on this host: control-plane = evpn "
				"reads the tenant's VXLAN device (evpn-netdev) "
				"and its bridge (evpn-svi), which the host "
				"must have before the daemon starts (ip link "
				"add vxlan%u type vxlan id %u ... nolearning)",
				t->name, t->line,
				et->vx_if ? t->evpn_svi : t->evpn_netdev,
				t->vni, t->vni));
	}
	if (!ev.tenants)
		return true;
	ev.self = cfg->vtep;
	ev.port = cfg->vxlan_port;
	/* subscribed before the dump: nothing between them is missed */
	ev.fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
		       NETLINK_ROUTE);
	me.nl_groups = 1u << (RTNLGRP_NEIGH - 1);
	if (ev.fd < 0 || bind(ev.fd, (struct sockaddr *)&me, sizeof(me)) < 0)
		return fail(err,
			    g_strdup_printf(
				"evpn: cannot listen to the kernel's neighbour "
				"tables (netlink): %s",
				g_strerror(errno)));
	setsockopt(ev.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	e = dump_all();
	if (e)
		return fail(
		    err, g_strdup_printf(
			     "evpn: cannot read the kernel's neighbour tables "
			     "(netlink): %s",
			     g_strerror(e)));
	ev.src = pvo_loop_add_fd(ev.fd, G_IO_IN, on_readable, NULL);
	if (!ev.src)
		return fail(err,
			    g_strdup_printf(
				"evpn: cannot wait on the netlink socket: %s",
				g_strerror(errno)));
	for (n = 0; n < ev.tenants->len; n++) {
		struct evpn_tenant *et = ev.tenants->pdata[n];

		pvo_info(NULL,
			 "tenant '%s': EVPN names %u VTEPs, %u remote MACs, "
			 "%u remote IPs",
			 et->name, g_hash_table_size(et->vteps),
			 g_hash_table_size(et->fdb),
			 g_hash_table_size(et->neigh));
	}
	return true;
}

void pvo_evpn_stop(void)
{
	if (ev.src)
		pvo_loop_remove_fd(ev.src);
	ev.src = NULL;
	if (ev.fd >= 0)
		close(ev.fd);
	ev.fd = -1;
	g_mutex_lock(&ev.lock);
	if (ev.tenants)
		g_ptr_array_free(ev.tenants, TRUE);
	ev.tenants = NULL;
	g_mutex_unlock(&ev.lock);
}
