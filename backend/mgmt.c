// SPDX-License-Identifier: GPL-2.0-or-later
/* Management socket: show, map add, map del; see mgmt.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib-unix.h>

#include "mgmt.h"
#include "overlay.h"
#include "overlay_map.h"
#include "qp.h"
#include "vm.h"

#define LINE_MAX_LEN 512

static struct {
	int fd;
	guint src;
	char path[108];
	struct pvo_vm **vms;
	int n;
} mg = { .fd = -1 };

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

static void show(GString *o)
{
	const struct pvo_overlay_stats *os = pvo_overlay_stats();
	GPtrArray *map = pvo_map_sorted();
	char ip[INET_ADDRSTRLEN], vtep[INET_ADDRSTRLEN];
	unsigned int i;
	int v;

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
			       " gso_padded=%" G_GUINT64_FORMAT,
			       pvo_overlay_enabled() ? "on" : "off",
			       os->gso ? "on" : "off", os->gro ? "on" : "off",
			       os->tx_syscalls, os->rx_syscalls, os->gso_padded);
	put_stats(o, &os->net);
	g_string_append_c(o, '\n');
	for (v = 0; v < mg.n; v++) {
		struct pvo_vm *vm = mg.vms[v];
		struct pvo_qp *qp;
		uint32_t h;

		g_string_append_printf(o, "vm name=%s vni=%u connected=%d",
				       vm->cfg->name, vm->cfg->tenant->vni,
				       vm->connected);
		put_stats(o, &vm->net);
		g_string_append_c(o, '\n');
		for (h = 0; (h = pvo_table_next(&vm->qps, h, (void **)&qp));) {
			g_string_append_printf(
			    o, "qp vm=%s qpn=0x%x type=%s state=%s",
			    vm->cfg->name, qp->qpn,
			    qp->type < G_N_ELEMENTS(qp_types) && qp_types[qp->type]
				? qp_types[qp->type]
				: "?",
			    qp->state < G_N_ELEMENTS(qp_states)
				? qp_states[qp->state]
				: "?");
			put_stats(o, &qp->net.stats);
			g_string_append_c(o, '\n');
		}
	}
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
		show(o);
		g_string_append(o, "ok\n");
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
				   "'map add VNI IP VTEP[:PORT] MAC' or 'map "
				   "del VNI IP'\n");
	}
	g_strfreev(a);
}

static gboolean on_client(gint fd, GIOCondition cond, gpointer opaque)
{
	struct timeval tv = { .tv_sec = 1 };
	char line[LINE_MAX_LEN + 1];
	GString *o = g_string_new(NULL);
	size_t got = 0;
	ssize_t k;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (c < 0)
		return G_SOURCE_CONTINUE;
	/* the client writes its line at once; never wait on it for long */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (got < LINE_MAX_LEN &&
	       (k = read(c, line + got, LINE_MAX_LEN - got)) > 0) {
		got += k;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (!got)
		g_string_append(o, "error: empty request\n");
	else
		pvo_mgmt_execute(line, o);
	for (got = 0; got < o->len; got += k) {
		k = write(c, o->str + got, o->len - got);
		if (k <= 0)
			break;
	}
	close(c);
	g_string_free(o, TRUE);
	return G_SOURCE_CONTINUE;
}

bool pvo_mgmt_start(const char *path, struct pvo_vm **vms, int n, char **err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	mg.vms = vms;
	mg.n = n;
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
	mg.fd = fd;
	g_strlcpy(mg.path, path, sizeof(mg.path));
	mg.src = g_unix_fd_add(fd, G_IO_IN, on_client, NULL);
	return true;
}

void pvo_mgmt_stop(void)
{
	if (mg.fd < 0)
		return;
	g_source_remove(mg.src);
	close(mg.fd);
	unlink(mg.path);
	mg.fd = -1;
}
