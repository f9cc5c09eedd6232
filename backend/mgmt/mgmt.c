// SPDX-License-Identifier: GPL-2.0-or-later
/* Management socket: show, map add, map del, reload; see mgmt.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib-unix.h>

#include "loop.h"
#include "mgmt.h"
#include "object_types.h"
#include "threads.h"
#include "overlay.h"
#include "overlay_map.h"
#include "peer_alias.h"
#include "qp.h"
#include "vm.h"

#define LINE_MAX_LEN 512

/* A loop's management socket: the VMs it reports on and its clients. */
struct mgmt {
	int fd;
	struct pvo_watch *src;
	char path[108];
	const struct pvo_mgmt_daemon *daemon; /* NULL: mappings only */
	GPtrArray *clients; /* struct client */
};

static void mgmt_init(void *data)
{
	((struct mgmt *)data)->fd = -1;
}

static struct mgmt *mgmt(void)
{
	return pvo_loop_state(PVO_LOOP_MGMT, sizeof(struct mgmt), mgmt_init,
			      NULL);
}

static const char *const qp_types[] = {
	[PVO_QPT_GSI] = "GSI", [PVO_QPT_RC] = "RC", [PVO_QPT_UC] = "UC",
	[PVO_QPT_UD] = "UD",
};
static const char *const qp_states[] = { "RESET", "INIT", "RTR", "RTS",
					 "SQD",	  "SQE",  "ERR" };

static void put_stats(GString *o, const struct pvo_net_stats *s)
{
	int d;

	g_string_append_printf(o,
			       " tx_packets=%" G_GUINT64_FORMAT
			       " tx_bytes=%" G_GUINT64_FORMAT
			       " rx_packets=%" G_GUINT64_FORMAT
			       " rx_bytes=%" G_GUINT64_FORMAT
			       " retransmits=%" G_GUINT64_FORMAT,
			       s->tx_packets, s->tx_bytes, s->rx_packets,
			       s->rx_bytes, s->retransmits);
	for (d = 0; d < PVO_DROP_COUNT; d++)
		g_string_append_printf(o, " drop_%s=%" G_GUINT64_FORMAT,
				       pvo_drop_name(d), s->drops[d]);
}

/* What its engine holds on the host for the VM (host verbs). */
static void put_host_use(GString *o, const struct pvo_vm *vm)
{
	struct pvo_vm_host_use u;

	pvo_vm_host_use(vm, &u);
	g_string_append_printf(
	    o,
	    " host_mrs=%u host_mappings=%u "
	    "max_host_mappings=%u host_pinned=%" G_GUINT64_FORMAT
	    " max_pinned=%" G_GUINT64_FORMAT,
	    u.mrs, u.mappings, u.max_mappings, u.pinned,
	    vm->cfg->quota.max_pinned);
}

static void show_vm(GString *o, struct pvo_vm *vm, bool removed)
{
	const struct pvo_quota *q = &vm->cfg->quota;
	struct pvo_qp *qp;
	uint32_t h;

	g_string_append_printf(o,
			       "vm name=%s vni=%u thread=%u connected=%d "
			       "removed=%d "
			       "max_ucontexts=%u max_pd=%u max_qp=%u max_cq=%u "
			       "max_mr=%u max_mw=%u max_ah=%u max_srq=%u "
			       "max_mr_size=%" G_GUINT64_FORMAT,
			       vm->cfg->name, vm->cfg->tenant->vni,
			       vm->cfg->tenant->thread + 1, vm->connected,
			       removed, q->max_ucontexts,
			       q->max_pd, q->max_qp, q->max_cq, q->max_mr,
			       q->max_mw, q->max_ah, q->max_srq,
			       q->max_mr_size);
	/* host memory held for the VM: page lists against its budget,
	 * objects bounded by the quotas */
	g_string_append_printf(o,
			       " host_mem=%" G_GUINT64_FORMAT
			       " max_host_mem=%" G_GUINT64_FORMAT
			       " host_mem_refused=%" G_GUINT64_FORMAT
			       " objects_mem=%" G_GUINT64_FORMAT,
			       vm->host_mem.used, vm->host_mem.limit,
			       vm->host_mem.refused, pvo_obj_bytes(vm));
	put_stats(o, &vm->net);
	put_host_use(o, vm);
	g_string_append_c(o, '\n');
	for (h = 0; (h = pvo_table_next(&vm->qps, h, (void **)&qp));) {
		g_string_append_printf(
		    o, "qp vm=%s qpn=0x%x type=%s state=%s", vm->cfg->name,
		    qp->qpn,
		    qp->type < G_N_ELEMENTS(qp_types) && qp_types[qp->type]
			? qp_types[qp->type]
			: "?",
		    qp->state < G_N_ELEMENTS(qp_states) ? qp_states[qp->state]
							: "?");
		put_stats(o, &qp->net.stats);
		g_string_append_c(o, '\n');
	}
}

static void show(GString *o)
{
	struct pvo_overlay_stats ost, *os = &ost;
	const struct pvo_mgmt_daemon *d = mgmt()->daemon;
	GPtrArray *map = pvo_map_sorted();
	char ip[INET_ADDRSTRLEN], vtep[INET_ADDRSTRLEN];
	unsigned long pairs;
	unsigned int i, moved;

	pvo_overlay_stats(os);
	pvo_alias_count(&moved, &pairs);
	for (i = 0; i < map->len; i++) {
		const struct pvo_map_entry *e = g_ptr_array_index(map, i);
		const uint8_t *m = e->mac;

		inet_ntop(AF_INET, &e->ip, ip, sizeof(ip));
		inet_ntop(AF_INET, &e->vtep, vtep, sizeof(vtep));
		g_string_append_printf(
		    o,
		    "map vni=%u ip=%s vtep=%s:%u "
		    "mac=%02x:%02x:%02x:%02x:%02x:%02x origin=%s\n",
		    e->vni, ip, vtep, e->port, m[0], m[1], m[2], m[3], m[4],
		    m[5], pvo_map_origin_name(e->origin));
	}
	g_ptr_array_free(map, TRUE);
	g_string_append_printf(o,
			       "daemon overlay=%s gso=%s gro=%s "
			       "tx_syscalls=%" G_GUINT64_FORMAT
			       " rx_syscalls=%" G_GUINT64_FORMAT
			       " gso_padded=%" G_GUINT64_FORMAT
			       " moved_peers=%u peer_aliases=%lu",
			       pvo_overlay_enabled() ? "on" : "off",
			       os->gso ? "on" : "off", os->gro ? "on" : "off",
			       os->tx_syscalls, os->rx_syscalls, os->gso_padded,
			       moved, pairs);
	put_stats(o, &os->net);
	g_string_append_c(o, '\n');
	if (!d)
		return;
	d->show(o);
	for (i = 0; i < d->vms->len; i++)
		show_vm(o, g_ptr_array_index(d->vms, i), false);
	for (i = 0; i < d->removed->len; i++)
		show_vm(o, g_ptr_array_index(d->removed, i), true);
}

static void reload(GString *o)
{
	const struct pvo_mgmt_daemon *d = mgmt()->daemon;
	char *summary = NULL, *err = NULL;

	if (!d) {
		g_string_append(o, "error: this daemon has nothing to "
				   "reload\n");
		return;
	}
	if (!d->reload(&summary, &err)) {
		g_string_append_printf(o, "error: %s\n", err);
		g_free(err);
		return;
	}
	g_string_append_printf(o, "%s\nok\n", summary);
	g_free(summary);
}

static bool parse_vni_ip(const char *vni_s, const char *ip_s, uint32_t *vni,
			 uint32_t *ip, GString *o)
{
	uint64_t v;
	struct in_addr a;

	if (!pvo_parse_u64(vni_s, 1, 0xffffff, &v)) {
		g_string_append_printf(o, "error: VNI '%s': expected 1..16777215\n",
				       vni_s);
		return false;
	}
	if (inet_pton(AF_INET, ip_s, &a) != 1) {
		g_string_append_printf(o, "error: '%s' is not an IPv4 address\n",
				       ip_s);
		return false;
	}
	*vni = v;
	*ip = a.s_addr;
	return true;
}

/* map add VNI IP VTEP[:PORT] MAC */
static void map_add(char **a, GString *o)
{
	struct pvo_map_entry e = { .origin = PVO_MAP_MGMT, .port = 4789 };
	char *port;
	uint64_t p;

	if (!parse_vni_ip(a[2], a[3], &e.vni, &e.ip, o))
		return;
	port = strchr(a[4], ':');
	if (port) {
		*port++ = '\0';
		if (!pvo_parse_u64(port, 1, 65535, &p)) {
			g_string_append_printf(
			    o, "error: VTEP port '%s': expected 1..65535\n",
			    port);
			return;
		}
		e.port = p;
	}
	if (inet_pton(AF_INET, a[4], &e.vtep) != 1 ||
	    e.vtep.s_addr == INADDR_ANY) {
		g_string_append_printf(o, "error: VTEP '%s' is not an IPv4 "
					  "address\n",
				       a[4]);
		return;
	}
	if (!pvo_parse_mac(a[5], e.mac)) {
		g_string_append_printf(o, "error: MAC '%s': expected a unicast "
					  "MAC like 52:54:00:12:34:56\n",
				       a[5]);
		return;
	}
	pvo_map_set(&e);
	g_string_append(o, "ok\n");
}

void pvo_mgmt_execute(const char *line, void *out)
{
	GString *o = out;
	char **a = g_strsplit_set(line, " \t", -1);
	char **w;
	int n = 0;
	uint32_t vni, ip;

	/* drop empty words (repeated blanks) */
	for (w = a; *w; w++)
		if (**w)
			a[n++] = *w;
		else
			g_free(*w);
	a[n] = NULL;
	if (n == 1 && strcmp(a[0], "show") == 0) {
		/* the VMs' counters, still while their threads are parked */
		pvo_threads_pause();
		show(o);
		pvo_threads_resume();
		g_string_append(o, "ok\n");
	} else if (n == 1 && strcmp(a[0], "reload") == 0) {
		reload(o);
	} else if (n == 6 && strcmp(a[0], "map") == 0 &&
		   strcmp(a[1], "add") == 0) {
		map_add(a, o);
	} else if (n == 4 && strcmp(a[0], "map") == 0 &&
		   strcmp(a[1], "del") == 0) {
		if (parse_vni_ip(a[2], a[3], &vni, &ip, o)) {
			if (pvo_map_del(vni, ip))
				g_string_append(o, "ok\n");
			else
				g_string_append_printf(
				    o, "error: no entry for VNI %s IP %s\n",
				    a[2], a[3]);
		}
	} else {
		g_string_append(o, "error: unknown request; expected 'show', "
				   "'map add VNI IP VTEP[:PORT] MAC', 'map "
				   "del VNI IP' or 'reload'\n");
	}
	g_strfreev(a);
}

/*
 * One connection: its request line comes in and its answer goes out as
 * the socket allows, from the main loop, so a client that stalls holds
 * up nothing but itself. It gets CLIENT_TIMEOUT_S for the whole exchange.
 */
struct client {
	int fd;
	struct pvo_watch *io;
	GSource *timer;
	char line[LINE_MAX_LEN + 1];
	size_t got, sent;
	GString *answer; /* NULL while the request is still coming in */
};

#define MAX_CLIENTS 16
#define CLIENT_TIMEOUT_S 10

static void client_close(struct client *cl)
{
	pvo_loop_remove_fd(cl->io);
	pvo_loop_remove(cl->timer);
	close(cl->fd);
	if (cl->answer)
		g_string_free(cl->answer, TRUE);
	g_ptr_array_remove_fast(mgmt()->clients, cl);
	g_free(cl);
}

static gboolean on_writable(gint fd, GIOCondition cond, gpointer opaque)
{
	struct client *cl = opaque;
	ssize_t k;

	while (cl->sent < cl->answer->len) {
		k = send(fd, cl->answer->str + cl->sent,
			 cl->answer->len - cl->sent, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return G_SOURCE_CONTINUE;
		if (k <= 0)
			break; /* the client went away: nothing to tell it */
		cl->sent += k;
	}
	client_close(cl);
	return G_SOURCE_CONTINUE; /* removed by client_close */
}

/* Executes the request (a whole line, or what came before the client
 * closed its side) and turns the connection around to answer it. */
static void client_answer(struct client *cl, bool too_long)
{
	cl->answer = g_string_new(NULL);
	cl->line[cl->got] = '\0';
	cl->line[strcspn(cl->line, "\r\n")] = '\0';
	if (too_long)
		g_string_printf(cl->answer,
				"error: request line longer than %d bytes\n",
				LINE_MAX_LEN);
	else if (!cl->line[0])
		g_string_append(cl->answer, "error: empty request\n");
	else
		pvo_mgmt_execute(cl->line, cl->answer);
	pvo_loop_remove_fd(cl->io);
	cl->io = pvo_loop_add_fd(cl->fd, G_IO_OUT, on_writable, cl);
	if (!cl->io)
		client_close(cl); /* out of epoll watches: no answer */
}

static gboolean on_readable(gint fd, GIOCondition cond, gpointer opaque)
{
	struct client *cl = opaque;
	ssize_t k;

	for (;;) {
		k = read(fd, cl->line + cl->got, LINE_MAX_LEN - cl->got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return G_SOURCE_CONTINUE;
		if (k < 0) {
			client_close(cl);
			return G_SOURCE_CONTINUE;
		}
		if (k == 0) /* the client closed its side: what came is all */
			break;
		cl->got += k;
		if (memchr(cl->line + cl->got - k, '\n', k))
			break;
		if (cl->got == LINE_MAX_LEN) {
			client_answer(cl, true);
			return G_SOURCE_CONTINUE;
		}
	}
	client_answer(cl, false);
	return G_SOURCE_CONTINUE;
}

/* Best effort: the client may not be reading either. */
static void G_GNUC_PRINTF(2, 3) tell(int fd, const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (send(fd, msg, MIN(len, (int)sizeof(msg) - 1),
		 MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* it learns from the closed connection */
	}
}

static gboolean on_timeout(gpointer opaque)
{
	struct client *cl = opaque;

	g_source_unref(cl->timer); /* this source ends with this call */
	cl->timer = NULL;
	if (!cl->answer)
		tell(cl->fd, "error: no complete request line within %d s\n",
		     CLIENT_TIMEOUT_S);
	client_close(cl);
	return G_SOURCE_REMOVE;
}

static gboolean on_connect(gint fd, GIOCondition cond, gpointer opaque)
{
	struct mgmt *mg = opaque;
	struct client *cl;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return G_SOURCE_CONTINUE;
	if (mg->clients->len >= MAX_CLIENTS) {
		tell(c,
		     "error: %d management connections are open already; try "
		     "again when they are answered\n",
		     MAX_CLIENTS);
		close(c);
		return G_SOURCE_CONTINUE;
	}
	cl = g_new0(struct client, 1);
	cl->fd = c;
	cl->io = pvo_loop_add_fd(c, G_IO_IN, on_readable, cl);
	if (!cl->io) {
		pvo_log(NULL, "management: cannot wait on a connection: %s",
			strerror(errno));
		close(c);
		g_free(cl);
		return G_SOURCE_CONTINUE;
	}
	cl->timer = pvo_loop_add_timeout_s(CLIENT_TIMEOUT_S, on_timeout, cl);
	g_ptr_array_add(mg->clients, cl);
	return G_SOURCE_CONTINUE;
}

bool pvo_mgmt_start(const char *path, const struct pvo_mgmt_daemon *d,
		    char **err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct mgmt *mg = mgmt();
	int fd;

	mg->daemon = d;
	g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = g_strdup_printf("management socket: %s", strerror(errno));
		return false;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		*err = g_strdup_printf("another daemon is listening on the "
				       "management socket %s; give each "
				       "daemon its own management-socket",
				       path);
		close(fd);
		return false;
	}
	unlink(path); /* a stale socket of an earlier run */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(path, 0600) < 0 || listen(fd, 8) < 0) {
		*err = g_strdup_printf("cannot listen on the management socket "
				       "%s: %s (set management-socket in "
				       "[daemon] to a writable place)",
				       path, strerror(errno));
		close(fd);
		return false;
	}
	mg->fd = fd;
	g_strlcpy(mg->path, path, sizeof(mg->path));
	mg->src = pvo_loop_add_fd(fd, G_IO_IN, on_connect, mg);
	if (!mg->src) {
		*err = g_strdup_printf("management socket %s: cannot wait "
				       "on it: %s",
				       path, strerror(errno));
		close(fd);
		unlink(path);
		mg->fd = -1;
		return false;
	}
	mg->clients = g_ptr_array_new();
	return true;
}

void pvo_mgmt_stop(void)
{
	struct mgmt *mg = mgmt();

	if (mg->fd < 0)
		return;
	while (mg->clients->len)
		client_close(g_ptr_array_index(mg->clients, 0));
	g_ptr_array_free(mg->clients, TRUE);
	mg->clients = NULL;
	pvo_loop_remove_fd(mg->src);
	mg->src = NULL;
	close(mg->fd);
	unlink(mg->path);
	mg->fd = -1;
	mg->daemon = NULL;
}
