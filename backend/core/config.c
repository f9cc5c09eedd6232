// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Configuration file parser. The syntax is GKeyFile's INI dialect
 * ("[group]", "key = value", '#' comments, lists separated by ';' or ','),
 * parsed here line by line so that every error can name FILE:LINE; a '#'
 * after a blank also starts a comment at the end of a line.
 *
 *   [daemon]        socket-dir
 *   [tenant NAME]   vni, mtu, learn, transport, hostverbs-netdev,
 *                   hostverbs-device, hostverbs-port
 *   [vm NAME]       tenant, mac, ips, socket, max-* quotas
 *   [remote NAME]   tenant, mac, ips, vtep, vtep-port (docs/overlay.md)
 *   [daemon]        also vtep, vxlan-port, dscp, udp-gso,
 *                   management-socket, busy-poll-us, peers,
 *                   learn-age-s, learn-move-s, migration-key,
 *                   hostverbs-device, hostverbs-port
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config.h"
#include "pvo-device.h"

#define DEFAULT_SOCKET_DIR "/run/pvrdma-overlay"

enum group_kind { GROUP_NONE, GROUP_DAEMON, GROUP_TENANT, GROUP_VM, GROUP_REMOTE };

struct parser {
	const char *path;
	struct pvo_daemon_config *cfg;
	enum group_kind group;
	int vm_tenant_line[1024];	/* line of each VM's tenant= key */
	char *vm_tenant[1024];
	int remote_tenant_line[1024];
	char *remote_tenant[1024];
	char *err;
};

void pvo_quota_defaults(struct pvo_quota *q)
{
	q->max_ucontexts = 1024;
	q->max_pd = 4096;
	q->max_qp = 4096;
	q->max_cq = 4096;
	q->max_mr = 4096;
	q->max_mw = 4096;
	q->max_ah = 1024;
	q->max_srq = 64;
	q->max_mr_size = 1ULL << 32;
}

static bool fail(struct parser *p, int line, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

static bool fail(struct parser *p, int line, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	p->err = g_strdup_printf("%s:%d: %s", p->path, line, msg);
	g_free(msg);
	return false;
}

bool pvo_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool pvo_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		return false;
	for (i = 0; i < 6; i++) {
		if (!isxdigit((unsigned char)s[3 * i]) ||
		    !isxdigit((unsigned char)s[3 * i + 1]))
			return false;
		mac[i] = b[i];
	}
	/* A VM MAC must be a unicast address and not all zero. */
	return !(mac[0] & 1) && (b[0] | b[1] | b[2] | b[3] | b[4] | b[5]);
}

bool pvo_parse_ip(const char *s, struct in6_addr *out)
{
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(out, 0, sizeof(*out));
		out->s6_addr[10] = 0xff;
		out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12], &v4, 4);
		return v4.s_addr != 0;
	}
	return inet_pton(AF_INET6, s, out) == 1 && !IN6_IS_ADDR_UNSPECIFIED(out);
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= PVO_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

static struct pvo_tenant *cur_tenant(struct parser *p)
{
	return &p->cfg->tenants[p->cfg->num_tenants - 1];
}

static struct pvo_vm_config *cur_vm(struct parser *p)
{
	return &p->cfg->vms[p->cfg->num_vms - 1];
}

static struct pvo_vm_config *cur_remote(struct parser *p)
{
	return &p->cfg->remotes[p->cfg->num_remotes - 1];
}

/* The [vm] or [remote] section being read. */
static struct pvo_vm_config *cur_entry(struct parser *p)
{
	return p->group == GROUP_REMOTE ? cur_remote(p) : cur_vm(p);
}

static bool parse_group(struct parser *p, int line, char *name)
{
	struct pvo_daemon_config *cfg = p->cfg;
	char *arg;
	int i;

	if (strcmp(name, "daemon") == 0) {
		p->group = GROUP_DAEMON;
		return true;
	}
	arg = strchr(name, ' ');
	if (!arg)
		return fail(p, line,
			    "unknown section '[%s]': expected [daemon], "
			    "[tenant NAME], [vm NAME] or [remote NAME]",
			    name);
	*arg++ = '\0';
	arg = g_strstrip(arg);
	if (!valid_name(arg))
		return fail(p, line,
			    "bad name '%s': use 1-%d characters of "
			    "A-Z a-z 0-9 . _ -",
			    arg, PVO_NAME_MAX - 1);

	if (strcmp(name, "tenant") == 0) {
		for (i = 0; i < cfg->num_tenants; i++)
			if (strcmp(cfg->tenants[i].name, arg) == 0)
				return fail(p, line,
					    "tenant '%s' is already defined "
					    "at line %d",
					    arg, cfg->tenants[i].line);
		cfg->tenants = g_renew(struct pvo_tenant, cfg->tenants,
				       cfg->num_tenants + 1);
		cfg->num_tenants++;
		memset(cur_tenant(p), 0, sizeof(struct pvo_tenant));
		g_strlcpy(cur_tenant(p)->name, arg, PVO_NAME_MAX);
		cur_tenant(p)->mtu = 1500;
		cur_tenant(p)->line = line;
		p->group = GROUP_TENANT;
		return true;
	}
	if (strcmp(name, "vm") == 0) {
		for (i = 0; i < cfg->num_vms; i++)
			if (strcmp(cfg->vms[i].name, arg) == 0)
				return fail(p, line,
					    "vm '%s' is already defined at "
					    "line %d",
					    arg, cfg->vms[i].line);
		if (cfg->num_vms >= (int)G_N_ELEMENTS(p->vm_tenant))
			return fail(p, line, "too many [vm] sections");
		cfg->vms = g_renew(struct pvo_vm_config, cfg->vms,
				   cfg->num_vms + 1);
		cfg->num_vms++;
		memset(cur_vm(p), 0, sizeof(struct pvo_vm_config));
		g_strlcpy(cur_vm(p)->name, arg, PVO_NAME_MAX);
		pvo_quota_defaults(&cur_vm(p)->quota);
		cur_vm(p)->line = line;
		p->group = GROUP_VM;
		return true;
	}
	if (strcmp(name, "remote") == 0) {
		for (i = 0; i < cfg->num_remotes; i++)
			if (strcmp(cfg->remotes[i].name, arg) == 0)
				return fail(p, line,
					    "remote '%s' is already defined "
					    "at line %d",
					    arg, cfg->remotes[i].line);
		if (cfg->num_remotes >= (int)G_N_ELEMENTS(p->remote_tenant))
			return fail(p, line, "too many [remote] sections");
		cfg->remotes = g_renew(struct pvo_vm_config, cfg->remotes,
				       cfg->num_remotes + 1);
		cfg->num_remotes++;
		memset(cur_remote(p), 0, sizeof(struct pvo_vm_config));
		g_strlcpy(cur_remote(p)->name, arg, PVO_NAME_MAX);
		cur_remote(p)->line = line;
		p->group = GROUP_REMOTE;
		return true;
	}
	return fail(p, line,
		    "unknown section '[%s %s]': expected [daemon], "
		    "[tenant NAME], [vm NAME] or [remote NAME]",
		    name, arg);
}

/* The object-count quotas (max-mr-size, 64 bits, is apart). */
static const struct {
	const char *key;
	size_t off;
	uint64_t max;
} quota_keys[] = {
#define Q(k, f, m) { k, offsetof(struct pvo_quota, f), m }
	Q("max-ucontexts", max_ucontexts, PVO_MAX_UCONTEXTS),
	Q("max-pd", max_pd, 65536),
	Q("max-qp", max_qp, 65536),
	Q("max-cq", max_cq, 65536),
	Q("max-mr", max_mr, 1 << 20),
	Q("max-mw", max_mw, 1 << 20),
	Q("max-ah", max_ah, 65536),
	Q("max-srq", max_srq, 65536),
#undef Q
};

static uint32_t *quota_field(struct pvo_quota *q, size_t i)
{
	return (uint32_t *)((char *)q + quota_keys[i].off);
}

static uint32_t quota_get(const struct pvo_quota *q, size_t i)
{
	return *(const uint32_t *)((const char *)q + quota_keys[i].off);
}

static bool parse_quota(struct parser *p, int line, const char *key,
			const char *val, bool *handled)
{
	struct pvo_quota *q = &cur_vm(p)->quota;
	uint64_t v;
	size_t i;

	*handled = true;
	if (strcmp(key, "max-mr-size") == 0) {
		if (!pvo_parse_u64(val, 4096, 1ULL << 40, &v))
			return fail(p, line,
				    "max-mr-size '%s': expected bytes "
				    "between 4096 and 2^40",
				    val);
		q->max_mr_size = v;
		return true;
	}
	for (i = 0; i < G_N_ELEMENTS(quota_keys); i++) {
		if (strcmp(key, quota_keys[i].key) != 0)
			continue;
		if (!pvo_parse_u64(val, 0, quota_keys[i].max, &v))
			return fail(p, line,
				    "%s '%s': expected a number between 0 "
				    "and %" PRIu64,
				    key, val, quota_keys[i].max);
		*quota_field(q, i) = v;
		return true;
	}
	*handled = false;
	return true;
}

static bool parse_ips(struct parser *p, int line, const char *val)
{
	struct pvo_vm_config *vm = cur_entry(p);
	char **parts = g_strsplit_set(val, ";,", -1);
	bool ok = true;
	int i;

	vm->num_ips = 0;
	for (i = 0; ok && parts[i]; i++) {
		char *ip = g_strstrip(parts[i]);

		if (!*ip)
			continue;
		if (vm->num_ips == PVO_MAX_IPS)
			ok = fail(p, line, "ips: at most %d addresses",
				  PVO_MAX_IPS);
		else if (!pvo_parse_ip(ip, &vm->ips[vm->num_ips++]))
			ok = fail(p, line,
				  "ips: '%s' is not an IPv4 or IPv6 address",
				  ip);
	}
	g_strfreev(parts);
	return ok;
}

static bool parse_ipv4(const char *s, struct in_addr *out)
{
	return inet_pton(AF_INET, s, out) == 1 && out->s_addr != INADDR_ANY;
}

/* The key file's bytes (a trailing newline dropped): shared by the
 * back-ends that may migrate VMs to one another. */
static bool parse_migration_key(struct parser *p, int line, const char *val)
{
	gchar *data = NULL;
	gsize len = 0;
	GError *e = NULL;

	if (*val != '/')
		return fail(p, line, "migration-key '%s': expected the absolute "
			    "path of a file with %d to %d bytes of secret",
			    val, PVO_MIGRATION_KEY_MIN, PVO_MIGRATION_KEY_MAX);
	if (!g_file_get_contents(val, &data, &len, &e)) {
		bool ok = fail(p, line, "migration-key: cannot read %s: %s",
			       val, e->message);

		g_error_free(e);
		return ok;
	}
	if (len && data[len - 1] == '\n')
		len--;
	if (len < PVO_MIGRATION_KEY_MIN || len > PVO_MIGRATION_KEY_MAX) {
		g_free(data);
		return fail(p, line, "migration-key: %s holds %zu bytes; use "
			    "%d to %d (e.g. head -c 32 /dev/urandom | base64)",
			    val, (size_t)len, PVO_MIGRATION_KEY_MIN,
			    PVO_MIGRATION_KEY_MAX);
	}
	memcpy(p->cfg->migration_key, data, len);
	p->cfg->migration_key_len = len;
	g_free(data);
	return true;
}

/* hostverbs-device / hostverbs-port, of [daemon] or of a tenant */
static bool parse_hv_device(struct parser *p, int line, const char *key,
			    const char *val, char dev[64], uint8_t *port)
{
	uint64_t v;

	if (strcmp(key, "hostverbs-port") == 0) {
		if (!pvo_parse_u64(val, 1, 255, &v))
			return fail(p, line,
				    "hostverbs-port '%s': expected a port "
				    "number between 1 and 255",
				    val);
		*port = v;
		return true;
	}
	if (!*val || strlen(val) >= 64 || strchr(val, '/') || strchr(val, ' '))
		return fail(p, line,
			    "hostverbs-device '%s': expected an RDMA device "
			    "name as 'rdma link' shows it, like mlx5_0 or "
			    "rxe0",
			    val);
	g_strlcpy(dev, val, 64);
	return true;
}

static bool parse_peers(struct parser *p, int line, const char *val)
{
	char **parts = g_strsplit_set(val, ";,", -1);
	struct pvo_daemon_config *cfg = p->cfg;
	bool ok = true;
	int i;

	cfg->num_peers = 0;
	for (i = 0; ok && parts[i]; i++) {
		char *ip = g_strstrip(parts[i]);

		if (!*ip)
			continue;
		if (cfg->num_peers == PVO_MAX_PEERS)
			ok = fail(p, line, "peers: at most %d VTEPs",
				  PVO_MAX_PEERS);
		else if (!parse_ipv4(ip, &cfg->peers[cfg->num_peers++]))
			ok = fail(p, line,
				  "peers: '%s' is not the IPv4 address of a "
				  "VTEP",
				  ip);
	}
	g_strfreev(parts);
	return ok;
}

static bool parse_remote_key(struct parser *p, int line, const char *key,
			     const char *val)
{
	struct pvo_vm_config *r = cur_remote(p);
	uint64_t v;

	if (strcmp(key, "vtep") == 0) {
		if (!parse_ipv4(val, &r->vtep))
			return fail(p, line,
				    "vtep '%s': expected the IPv4 address "
				    "of the host the VM runs on",
				    val);
		return true;
	}
	if (strcmp(key, "vtep-port") == 0) {
		if (!pvo_parse_u64(val, 1, 65535, &v))
			return fail(p, line,
				    "vtep-port '%s': expected a UDP port "
				    "between 1 and 65535",
				    val);
		r->vtep_port = v;
		return true;
	}
	return fail(p, line,
		    "unknown key '%s' in a [remote] section (expected "
		    "tenant, mac, ips, vtep, vtep-port)",
		    key);
}

static bool parse_key(struct parser *p, int line, const char *key,
		      const char *val)
{
	uint64_t v;
	bool handled;

	switch (p->group) {
	case GROUP_NONE:
		return fail(p, line,
			    "'%s' is outside any section; put it under "
			    "[daemon], [tenant NAME], [vm NAME] or "
			    "[remote NAME]",
			    key);
	case GROUP_DAEMON:
		if (strcmp(key, "socket-dir") == 0) {
			if (*val != '/' || strlen(val) >= 64)
				return fail(p, line,
					    "socket-dir '%s': expected an "
					    "absolute path shorter than 64",
					    val);
			g_strlcpy(p->cfg->socket_dir, val,
				  sizeof(p->cfg->socket_dir));
			return true;
		}
		if (strcmp(key, "vtep") == 0) {
			if (!parse_ipv4(val, &p->cfg->vtep))
				return fail(p, line,
					    "vtep '%s': expected this host's "
					    "IPv4 address, like 192.0.2.1",
					    val);
			return true;
		}
		if (strcmp(key, "vxlan-port") == 0) {
			if (!pvo_parse_u64(val, 1, 65535, &v))
				return fail(p, line,
					    "vxlan-port '%s': expected a UDP "
					    "port between 1 and 65535",
					    val);
			p->cfg->vxlan_port = v;
			return true;
		}
		if (strcmp(key, "dscp") == 0) {
			if (!pvo_parse_u64(val, 0, 63, &v))
				return fail(p, line,
					    "dscp '%s': expected a number "
					    "between 0 and 63 (26 = AF31)",
					    val);
			p->cfg->dscp = v;
			return true;
		}
		if (strcmp(key, "udp-gso") == 0) {
			if (strcmp(val, "yes") && strcmp(val, "no"))
				return fail(p, line,
					    "udp-gso '%s': expected yes or no",
					    val);
			p->cfg->no_udp_gso = strcmp(val, "no") == 0;
			return true;
		}
		if (strcmp(key, "busy-poll-us") == 0) {
			if (!pvo_parse_u64(val, 0, 1000000, &v))
				return fail(p, line,
					    "busy-poll-us '%s': expected "
					    "microseconds between 0 (off) and "
					    "1000000",
					    val);
			p->cfg->busy_poll_us = v;
			return true;
		}
		if (strcmp(key, "peers") == 0)
			return parse_peers(p, line, val);
		if (strcmp(key, "migration-key") == 0)
			return parse_migration_key(p, line, val);
		if (strcmp(key, "learn-age-s") == 0 ||
		    strcmp(key, "learn-move-s") == 0) {
			bool age = key[6] == 'a';

			if (!pvo_parse_u64(val, 1, 86400, &v))
				return fail(p, line,
					    "%s '%s': expected seconds "
					    "between 1 and 86400",
					    key, val);
			if (age)
				p->cfg->learn_age_s = v;
			else
				p->cfg->learn_move_s = v;
			return true;
		}
		if (strcmp(key, "hostverbs-device") == 0 ||
		    strcmp(key, "hostverbs-port") == 0)
			return parse_hv_device(p, line, key, val,
					       p->cfg->hv_device,
					       &p->cfg->hv_port);
		if (strcmp(key, "management-socket") == 0) {
			if (*val != '/' ||
			    strlen(val) >= sizeof(p->cfg->mgmt_socket))
				return fail(p, line,
					    "management-socket '%s': expected "
					    "an absolute path shorter than %zu",
					    val, sizeof(p->cfg->mgmt_socket));
			g_strlcpy(p->cfg->mgmt_socket, val,
				  sizeof(p->cfg->mgmt_socket));
			return true;
		}
		break;
	case GROUP_TENANT:
		if (strcmp(key, "vni") == 0) {
			if (!pvo_parse_u64(val, 1, 0xffffff, &v))
				return fail(p, line,
					    "vni '%s': expected a number "
					    "between 1 and 16777215",
					    val);
			cur_tenant(p)->vni = v;
			return true;
		}
		if (strcmp(key, "mtu") == 0) {
			if (!pvo_parse_u64(val, 576, 9000, &v))
				return fail(p, line,
					    "mtu '%s': expected a number "
					    "between 576 and 9000",
					    val);
			cur_tenant(p)->mtu = v;
			return true;
		}
		if (strcmp(key, "learn") == 0) {
			if (strcmp(val, "yes") && strcmp(val, "no"))
				return fail(p, line,
					    "learn '%s': expected yes or no",
					    val);
			cur_tenant(p)->no_learn = strcmp(val, "no") == 0;
			return true;
		}
		if (strcmp(key, "transport") == 0) {
			if (strcmp(val, "overlay") && strcmp(val, "hostverbs"))
				return fail(p, line,
					    "transport '%s': expected overlay "
					    "(RoCEv2 in VXLAN, the default) or "
					    "hostverbs (the host's RDMA "
					    "device)",
					    val);
			cur_tenant(p)->hostverbs = !strcmp(val, "hostverbs");
			return true;
		}
		if (strcmp(key, "hostverbs-device") == 0 ||
		    strcmp(key, "hostverbs-port") == 0)
			return parse_hv_device(p, line, key, val,
					       cur_tenant(p)->hv_device,
					       &cur_tenant(p)->hv_port);
		if (strcmp(key, "hostverbs-netdev") == 0) {
			if (!*val ||
			    strlen(val) >= sizeof(cur_tenant(p)->hv_netdev) ||
			    strchr(val, '/') || strchr(val, ' '))
				return fail(p, line,
					    "hostverbs-netdev '%s': expected "
					    "a network interface name of at "
					    "most 15 characters",
					    val);
			g_strlcpy(cur_tenant(p)->hv_netdev, val,
				  sizeof(cur_tenant(p)->hv_netdev));
			return true;
		}
		break;
	case GROUP_VM:
	case GROUP_REMOTE:
		if (strcmp(key, "tenant") == 0) {
			bool r = p->group == GROUP_REMOTE;
			int i = (r ? p->cfg->num_remotes : p->cfg->num_vms) - 1;
			char **t = r ? &p->remote_tenant[i] : &p->vm_tenant[i];

			g_free(*t);
			*t = g_strdup(val);
			if (r)
				p->remote_tenant_line[i] = line;
			else
				p->vm_tenant_line[i] = line;
			return true;
		}
		if (strcmp(key, "mac") == 0) {
			if (!pvo_parse_mac(val, cur_entry(p)->mac))
				return fail(p, line,
					    "mac '%s': expected a unicast "
					    "MAC like 52:54:00:12:34:56",
					    val);
			return true;
		}
		if (strcmp(key, "ips") == 0)
			return parse_ips(p, line, val);
		if (p->group == GROUP_REMOTE)
			return parse_remote_key(p, line, key, val);
		if (strcmp(key, "socket") == 0) {
			if (*val != '/' ||
			    strlen(val) >= sizeof(cur_vm(p)->socket_path))
				return fail(p, line,
					    "socket '%s': expected an "
					    "absolute path shorter than %zu",
					    val,
					    sizeof(cur_vm(p)->socket_path));
			g_strlcpy(cur_vm(p)->socket_path, val,
				  sizeof(cur_vm(p)->socket_path));
			return true;
		}
		if (!parse_quota(p, line, key, val, &handled))
			return false;
		if (handled)
			return true;
		break;
	}
	return fail(p, line, "unknown key '%s' in this section", key);
}

/* A '#' after a blank starts a comment, also after a value
 * ("vni = 100   # blue"), as the README's example has them. */
static void cut_comment(char *s)
{
	char *h;

	for (h = strchr(s, '#'); h; h = strchr(h + 1, '#'))
		if (h > s && (h[-1] == ' ' || h[-1] == '\t')) {
			*h = '\0';
			return;
		}
}

static bool parse_line(struct parser *p, int line, char *s)
{
	char *eq;

	s = g_strstrip(s);
	if (!*s || *s == '#' || *s == ';')
		return true;
	cut_comment(s);
	s = g_strstrip(s);
	if (*s == '[') {
		size_t n = strlen(s);

		if (s[n - 1] != ']')
			return fail(p, line,
				    "section header '%s' lacks its closing ']'",
				    s);
		s[n - 1] = '\0';
		return parse_group(p, line, g_strstrip(s + 1));
	}
	eq = strchr(s, '=');
	if (!eq || eq == s)
		return fail(p, line,
			    "expected 'key = value', '[section]' or a "
			    "'#' comment, got '%s'",
			    s);
	*eq = '\0';
	return parse_key(p, line, g_strstrip(s), g_strstrip(eq + 1));
}

static const struct pvo_tenant *tenant_named(struct pvo_daemon_config *cfg,
					     const char *name)
{
	int i;

	for (i = 0; name && i < cfg->num_tenants; i++)
		if (strcmp(cfg->tenants[i].name, name) == 0)
			return &cfg->tenants[i];
	return NULL;
}

/* Overlay defaults and [remote] sections. */
static bool resolve_overlay(struct parser *p)
{
	struct pvo_daemon_config *cfg = p->cfg;
	int i, k;

	/* the management socket is the overlay's: on by default with it */
	if (!cfg->mgmt_socket[0] && cfg->vtep.s_addr != INADDR_ANY &&
	    snprintf(cfg->mgmt_socket, sizeof(cfg->mgmt_socket),
		     "%s/pvrdma-overlayd.mgmt",
		     cfg->socket_dir) >= (int)sizeof(cfg->mgmt_socket))
		return fail(p, 1, "management socket path too long; set "
				  "'management-socket = PATH' in [daemon]");
	for (i = 0; i < cfg->num_remotes; i++) {
		struct pvo_vm_config *r = &cfg->remotes[i];
		static const uint8_t zero[6];

		if (cfg->vtep.s_addr == INADDR_ANY)
			return fail(p, r->line,
				    "remote '%s': the overlay needs this "
				    "host's address: set 'vtep = IP' in "
				    "[daemon]",
				    r->name);
		if (!p->remote_tenant[i])
			return fail(p, r->line,
				    "remote '%s' has no 'tenant = NAME'",
				    r->name);
		r->tenant = tenant_named(cfg, p->remote_tenant[i]);
		if (!r->tenant)
			return fail(p, p->remote_tenant_line[i],
				    "remote '%s': unknown tenant '%s' (define "
				    "it with a [tenant %s] section)",
				    r->name, p->remote_tenant[i],
				    p->remote_tenant[i]);
		if (memcmp(r->mac, zero, 6) == 0)
			return fail(p, r->line,
				    "remote '%s' has no 'mac = ...'", r->name);
		if (!r->num_ips)
			return fail(p, r->line,
				    "remote '%s' has no 'ips = ...'", r->name);
		for (k = 0; k < r->num_ips; k++)
			if (!IN6_IS_ADDR_V4MAPPED(&r->ips[k]))
				return fail(p, r->line,
					    "remote '%s': the overlay carries "
					    "IPv4 only",
					    r->name);
		if (r->vtep.s_addr == INADDR_ANY)
			return fail(p, r->line,
				    "remote '%s' has no 'vtep = IP'", r->name);
		if (!r->vtep_port)
			r->vtep_port = cfg->vxlan_port;
	}
	return true;
}

/* Cross-section checks once everything is read. */
static bool resolve(struct parser *p)
{
	struct pvo_daemon_config *cfg = p->cfg;
	int i, j;

	for (i = 0; i < cfg->num_tenants; i++) {
		struct pvo_tenant *t = &cfg->tenants[i];

		if (t->hostverbs && !t->hv_device[0] && !cfg->hv_device[0])
			return fail(p, t->line,
				    "tenant '%s' has transport = hostverbs: "
				    "name the host's RDMA device with "
				    "'hostverbs-device = NAME' in [daemon] or "
				    "in the tenant",
				    t->name);
		if (!t->hostverbs && (t->hv_device[0] || t->hv_port))
			return fail(p, t->line,
				    "tenant '%s': hostverbs-device and "
				    "hostverbs-port are only used with "
				    "transport = hostverbs",
				    t->name);
		if (t->hostverbs && !t->hv_netdev[0])
			return fail(p, t->line,
				    "tenant '%s' has transport = hostverbs: "
				    "name the netdev whose GIDs its VMs use "
				    "with 'hostverbs-netdev = NAME'",
				    t->name);
		if (!t->hostverbs && t->hv_netdev[0])
			return fail(p, t->line,
				    "tenant '%s': hostverbs-netdev is only "
				    "used with transport = hostverbs",
				    t->name);
		if (t->hostverbs && !t->hv_device[0])
			g_strlcpy(t->hv_device, cfg->hv_device,
				  sizeof(t->hv_device));
		if (t->hostverbs && !t->hv_port)
			t->hv_port = cfg->hv_port;
		if (!cfg->tenants[i].vni)
			return fail(p, cfg->tenants[i].line,
				    "tenant '%s' has no 'vni = N'",
				    cfg->tenants[i].name);
		for (j = 0; j < i; j++)
			if (cfg->tenants[j].vni == cfg->tenants[i].vni)
				return fail(p, cfg->tenants[i].line,
					    "tenant '%s' reuses vni %u of "
					    "tenant '%s' (line %d)",
					    cfg->tenants[i].name,
					    cfg->tenants[i].vni,
					    cfg->tenants[j].name,
					    cfg->tenants[j].line);
	}
	for (i = 0; i < cfg->num_vms; i++) {
		struct pvo_vm_config *vm = &cfg->vms[i];
		static const uint8_t zero[6];

		if (!p->vm_tenant[i])
			return fail(p, vm->line,
				    "vm '%s' has no 'tenant = NAME'",
				    vm->name);
		for (j = 0; j < cfg->num_tenants; j++)
			if (strcmp(cfg->tenants[j].name, p->vm_tenant[i]) == 0)
				vm->tenant = &cfg->tenants[j];
		if (!vm->tenant)
			return fail(p, p->vm_tenant_line[i],
				    "vm '%s': unknown tenant '%s' (define "
				    "it with a [tenant %s] section)",
				    vm->name, p->vm_tenant[i],
				    p->vm_tenant[i]);
		if (memcmp(vm->mac, zero, 6) == 0)
			return fail(p, vm->line, "vm '%s' has no 'mac = ...'",
				    vm->name);
		if (!vm->socket_path[0]) {
			int n = snprintf(vm->socket_path,
					 sizeof(vm->socket_path), "%s/%s.sock",
					 cfg->socket_dir, vm->name);

			if (n >= (int)sizeof(vm->socket_path))
				return fail(p, vm->line,
					    "vm '%s': socket path too long; "
					    "set 'socket = PATH'",
					    vm->name);
		}
		for (j = 0; j < i; j++) {
			if (strcmp(cfg->vms[j].socket_path,
				   vm->socket_path) == 0)
				return fail(p, vm->line,
					    "vm '%s' uses the socket of vm "
					    "'%s' (line %d)",
					    vm->name, cfg->vms[j].name,
					    cfg->vms[j].line);
			if (cfg->vms[j].tenant == vm->tenant &&
			    memcmp(cfg->vms[j].mac, vm->mac, 6) == 0)
				return fail(p, vm->line,
					    "vm '%s' uses the MAC of vm '%s' "
					    "(line %d) in the same tenant",
					    vm->name, cfg->vms[j].name,
					    cfg->vms[j].line);
		}
	}
	return resolve_overlay(p);
}

struct pvo_daemon_config *pvo_config_parse(const char *path, const char *text,
				    char **err)
{
	struct parser *p = g_new0(struct parser, 1);
	char **lines = g_strsplit(text, "\n", -1);
	struct pvo_daemon_config *cfg;
	bool ok = true;
	int i;

	cfg = g_new0(struct pvo_daemon_config, 1);
	cfg->path = g_strdup(path);
	g_strlcpy(cfg->socket_dir, DEFAULT_SOCKET_DIR, sizeof(cfg->socket_dir));
	cfg->vxlan_port = 4789;
	cfg->dscp = 26; /* AF31 */
	cfg->learn_age_s = 300;
	cfg->learn_move_s = 30;
	cfg->hv_port = 1;
	p->path = path;
	p->cfg = cfg;
	for (i = 0; ok && lines[i]; i++)
		ok = parse_line(p, i + 1, lines[i]);
	if (ok)
		ok = resolve(p);
	g_strfreev(lines);
	for (i = 0; i < (int)G_N_ELEMENTS(p->vm_tenant); i++)
		g_free(p->vm_tenant[i]);
	for (i = 0; i < (int)G_N_ELEMENTS(p->remote_tenant); i++)
		g_free(p->remote_tenant[i]);
	if (!ok) {
		*err = p->err;
		pvo_config_free(cfg);
		cfg = NULL;
	}
	g_free(p);
	return cfg;
}

struct pvo_daemon_config *pvo_config_load(const char *path, char **err)
{
	GError *gerr = NULL;
	struct pvo_daemon_config *cfg;
	char *text;

	if (!g_file_get_contents(path, &text, NULL, &gerr)) {
		*err = g_strdup_printf("cannot read config file: %s",
				       gerr->message);
		g_error_free(gerr);
		return NULL;
	}
	cfg = pvo_config_parse(path, text, err);
	g_free(text);
	return cfg;
}

const struct pvo_vm_config *pvo_config_find_vm(const struct pvo_daemon_config *cfg,
					       const char *name)
{
	int i;

	for (i = 0; i < cfg->num_vms; i++)
		if (strcmp(cfg->vms[i].name, name) == 0)
			return &cfg->vms[i];
	return NULL;
}

bool pvo_config_select(struct pvo_daemon_config *cfg, char **names, char **err)
{
	struct pvo_vm_config *kept;
	int i, n = 0;

	if (!names || !names[0])
		return true;
	kept = g_new0(struct pvo_vm_config, g_strv_length(names));
	for (i = 0; names[i]; i++) {
		const struct pvo_vm_config *vm = pvo_config_find_vm(cfg, names[i]);

		if (!vm) {
			GString *known = g_string_new(NULL);
			int j;

			for (j = 0; j < cfg->num_vms; j++)
				g_string_append_printf(known, "%s%s",
						       j ? ", " : "",
						       cfg->vms[j].name);
			*err = g_strdup_printf(
				"%s: no [vm %s] section (VMs defined there: "
				"%s)",
				cfg->path, names[i],
				known->len ? known->str : "none");
			g_string_free(known, TRUE);
			g_free(kept);
			return false;
		}
		kept[n++] = *vm;
	}
	g_free(cfg->vms);
	cfg->vms = kept;
	cfg->num_vms = n;
	return true;
}

void pvo_config_free(struct pvo_daemon_config *cfg)
{
	if (!cfg)
		return;
	g_free(cfg->path);
	g_free(cfg->tenants);
	g_free(cfg->vms);
	g_free(cfg->remotes);
	g_free(cfg);
}

/* The management socket's path, for messages: it may come from
 * socket-dir (the default with a vtep) or be none. */
static const char *mgmt_path(const struct pvo_daemon_config *cfg)
{
	return cfg->mgmt_socket[0] ? cfg->mgmt_socket : "none";
}

bool pvo_config_daemon_reloadable(const struct pvo_daemon_config *old,
				  const struct pvo_daemon_config *new,
				  char **why)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];

	if (old->vtep.s_addr != new->vtep.s_addr) {
		inet_ntop(AF_INET, &old->vtep, a, sizeof(a));
		inet_ntop(AF_INET, &new->vtep, b, sizeof(b));
		*why = g_strdup_printf(
			"[daemon] vtep changed (%s -> %s): the overlay's "
			"socket is bound at start-up; restart the daemon to "
			"change it",
			old->vtep.s_addr ? a : "none",
			new->vtep.s_addr ? b : "none");
		return false;
	}
	if (old->vxlan_port != new->vxlan_port) {
		*why = g_strdup_printf(
			"[daemon] vxlan-port changed (%u -> %u): the "
			"overlay's socket is bound at start-up; restart the "
			"daemon to change it",
			old->vxlan_port, new->vxlan_port);
		return false;
	}
	if (old->no_udp_gso != new->no_udp_gso) {
		*why = g_strdup_printf(
			"[daemon] udp-gso changed (%s -> %s): it is set when "
			"the overlay starts; restart the daemon to change it",
			old->no_udp_gso ? "no" : "yes",
			new->no_udp_gso ? "no" : "yes");
		return false;
	}
	if (strcmp(old->mgmt_socket, new->mgmt_socket) != 0) {
		*why = g_strdup_printf(
			"the management socket would change (%s -> %s; "
			"management-socket, or socket-dir with a vtep): it is "
			"bound at start-up; restart the daemon to change it",
			mgmt_path(old), mgmt_path(new));
		return false;
	}
	return true;
}

static bool same_ips(const struct pvo_vm_config *a,
		     const struct pvo_vm_config *b)
{
	return a->num_ips == b->num_ips &&
	       memcmp(a->ips, b->ips, a->num_ips * sizeof(a->ips[0])) == 0;
}

const char *pvo_config_vm_identity_diff(const struct pvo_vm_config *a,
					const struct pvo_vm_config *b)
{
	if (strcmp(a->tenant->name, b->tenant->name) != 0)
		return "tenant";
	if (a->tenant->vni != b->tenant->vni)
		return "vni";
	if (a->tenant->mtu != b->tenant->mtu)
		return "mtu";
	if (a->tenant->hostverbs != b->tenant->hostverbs ||
	    strcmp(a->tenant->hv_netdev, b->tenant->hv_netdev) != 0 ||
	    strcmp(a->tenant->hv_device, b->tenant->hv_device) != 0 ||
	    a->tenant->hv_port != b->tenant->hv_port)
		return "transport";
	if (memcmp(a->mac, b->mac, 6) != 0)
		return "mac";
	if (!same_ips(a, b))
		return "ips";
	if (strcmp(a->socket_path, b->socket_path) != 0)
		return "socket";
	return NULL;
}

char *pvo_quota_diff(const struct pvo_quota *a, const struct pvo_quota *b)
{
	GString *s = g_string_new(NULL);
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(quota_keys); i++) {
		uint32_t x = quota_get(a, i), y = quota_get(b, i);

		if (x != y)
			g_string_append_printf(s, "%s%s %u -> %u",
					       s->len ? ", " : "",
					       quota_keys[i].key, x, y);
	}
	if (a->max_mr_size != b->max_mr_size)
		g_string_append_printf(s, "%smax-mr-size %" PRIu64
				       " -> %" PRIu64,
				       s->len ? ", " : "", a->max_mr_size,
				       b->max_mr_size);
	return g_string_free(s, s->len == 0);
}
