// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Configuration file parser. The syntax is GKeyFile's INI dialect
 * ("[group]", "key = value", '#' comments, lists separated by ';' or ','),
 * parsed here line by line so that every error can name FILE:LINE; a '#'
 * after a blank also starts a comment at the end of a line. The sections
 * ([daemon], [tenant NAME], [vm NAME], [remote NAME]) and their keys are
 * the tables below, which also make the reference in
 * docs/configuration.md (pvrdma-overlayd --help-config).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
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

/*
 * The keys of each section, as tables: a key's name, what its value is
 * (a type, with its range), where it goes (a field of the section's
 * struct, or a parser of its own), its default and one line about it.
 * parse_key() reads values with them, the sections start from their
 * defaults, and pvo_config_reference() (--help-config) prints them.
 */
enum key_type {
	KEY_UINT,	/* a number in min..max, stored in a field of 1-8 bytes */
	KEY_ENUM,	/* one of names: its index is stored (bool, uint8_t) */
	KEY_PATH,	/* an absolute path shorter than max */
	KEY_NAME,	/* a device or interface name shorter than max */
	KEY_IPV4,	/* an IPv4 address but 0.0.0.0 (struct in_addr) */
	KEY_MAC,	/* a unicast MAC, not all zero (uint8_t[6]) */
	KEY_CUSTOM,	/* parse() checks and stores it */
};

struct key {
	const char *name;
	enum key_type type;
	size_t off, size;	/* the field in the section's struct */
	uint64_t min, max;	/* UINT: the range; PATH, NAME: shorter than max */
	/*
	 * What a bad value is told was expected ("KEY 'VALUE': expected
	 * ..."), also the reference's value column. UINT: the unit ("a
	 * number" if NULL), then "between MIN and MAX", zero saying what 0
	 * means and note following; ENUM: "A or B" and PATH "an absolute
	 * path shorter than MAX" if NULL.
	 */
	const char *expect;
	const char *zero, *note;
	const char *const *names;	/* ENUM, NULL-terminated */
	bool (*parse)(struct parser *p, int line, const struct key *k,
		      void *base, const char *val);
	const char *def;	/* the default, set when the section starts */
	const char *def_doc;	/* or, with none to set, what happens */
	const char *doc;
};

/* 0, or a compile error if c is false */
#define CHECK0(c) (0 * sizeof(char[(c) ? 1 : -1]))
#define FIELD_SIZE(st, m) sizeof(((st *)0)->m)
#define AT(st, m) .off = offsetof(st, m), .size = FIELD_SIZE(st, m)
/* hi must fit the field */
#define UINT(st, m, lo, hi)                                                 \
	.type = KEY_UINT, AT(st, m), .min = (lo),                           \
	.max = (hi) + CHECK0((uint64_t)(hi) <=                              \
			     UINT64_MAX >> (64 - 8 * FIELD_SIZE(st, m)))
#define ENUM(st, m, n) .type = KEY_ENUM, AT(st, m), .names = (n)
/* the path, with its NUL, must fit the field */
#define PATH(st, m, len)                                                    \
	.type = KEY_PATH, AT(st, m),                                        \
	.max = (len) + CHECK0((len) <= FIELD_SIZE(st, m))
#define NAME(st, m) .type = KEY_NAME, AT(st, m), .max = FIELD_SIZE(st, m)
#define IPV4(st, m) .type = KEY_IPV4, AT(st, m)
#define MAC(st, m) .type = KEY_MAC, AT(st, m)
#define CUSTOM(fn) .type = KEY_CUSTOM, .parse = (fn)

#define DAEMON struct pvo_daemon_config
#define TENANT struct pvo_tenant
#define VM struct pvo_vm_config

#define IFNAME_EXPECT "a network interface name of at most 15 characters"

/* yes = 0, no = 1: stored in the no_* flags */
static const char *const yes_no[] = { "yes", "no", NULL };
/* hostverbs = 1: stored in pvo_tenant.hostverbs */
static const char *const transports[] = { "overlay", "hostverbs", NULL };
/* evpn = 1: stored in pvo_tenant.evpn */
static const char *const control_planes[] = { "static", "evpn", NULL };
/* error = 1: stored in pvo_vm_config.hv_migration_error */
static const char *const hv_migrations[] = { "refuse", "error", NULL };

static bool parse_peers(struct parser *p, int line, const struct key *k,
			void *base, const char *val);
static bool parse_tenant_peers(struct parser *p, int line, const struct key *k,
			       void *base, const char *val);
static bool parse_migration_key(struct parser *p, int line,
				const struct key *k, void *base,
				const char *val);
static bool parse_tenant_migration_key(struct parser *p, int line,
				       const struct key *k, void *base,
				       const char *val);
static bool parse_tenant(struct parser *p, int line, const struct key *k,
			 void *base, const char *val);
static bool parse_ips(struct parser *p, int line, const struct key *k,
		      void *base, const char *val);
static bool parse_socket_group(struct parser *p, int line,
			       const struct key *k, void *base,
			       const char *val);

static const struct key daemon_keys[] = {
	{ "socket-dir", PATH(DAEMON, socket_dir, 64),
	  .def = DEFAULT_SOCKET_DIR,
	  .doc = "where the VMs' default sockets (NAME.sock) and the default "
		 "management socket are" },
	{ "vtep", IPV4(DAEMON, vtep),
	  .expect = "this host's IPv4 address, like 192.0.2.1",
	  .def_doc = "none: no overlay",
	  .doc = "this host's VTEP address; it enables the overlay, RoCEv2 "
		 "in VXLAN to VMs on other hosts" },
	{ "vxlan-port", UINT(DAEMON, vxlan_port, 1, 65535),
	  .expect = "a UDP port", .def = "4789",
	  .doc = "the UDP port of the VTEPs: the overlay's socket and the "
		 "port it sends to" },
	{ "dscp", UINT(DAEMON, dscp, 0, 63), .note = "26 = AF31",
	  .def = "26", .doc = "the DSCP of the overlay's outer IP header" },
	{ "udp-gso", ENUM(DAEMON, no_udp_gso, yes_no), .def = "yes",
	  .doc = "send a run of datagrams to one VTEP as one UDP GSO send" },
	{ "socket-group", CUSTOM(parse_socket_group),
	  .expect = "the name of a group of this host",
	  .def_doc = "none: the sockets keep the daemon's umask",
	  .doc = "the group of the VMs' vhost-user sockets (mode 0660) and of "
		 "socket-dir (which it may search, not list), e.g. "
		 "libvirt-qemu: QEMU running as that group connects without "
		 "world-writable sockets; set when a socket is made" },
	{ "management-socket", PATH(DAEMON, mgmt_socket, 108),
	  .def_doc = "socket-dir/pvrdma-overlayd.mgmt with a vtep, else none",
	  .doc = "the unix socket pvo-ctl talks to (mode 0600)" },
	{ "busy-poll-us", UINT(DAEMON, busy_poll_us, 0, 1000000),
	  .expect = "microseconds", .zero = "off", .def = "0",
	  .doc = "latency mode: poll a QP's send queue for this long after "
		 "its last WQE instead of waiting for doorbells "
		 "(--busy-poll-us overrides it)" },
	{ "threads", UINT(DAEMON, threads, 0, PVO_MAX_THREADS),
	  .expect = "a number of threads", .zero = "one per online CPU, at "
	  "most " G_STRINGIFY(PVO_AUTO_THREADS), .def = "0",
	  .doc = "data-path threads; each serves the VMs of the tenants "
		 "placed on it (docs/threads.md; --threads overrides it)" },
	{ "peers", CUSTOM(parse_peers),
	  .expect = "IPv4 addresses, separated by commas or semicolons (at "
		    "most " G_STRINGIFY(PVO_MAX_PEERS) ")",
	  .def_doc = "none",
	  .doc = "VTEPs senders may be learned from, besides those of "
		 "[remote] sections, for every tenant that lists no peers of "
		 "its own" },
	{ "learn-age-s", UINT(DAEMON, learn_age_s, 1, 86400),
	  .expect = "seconds", .def = "300",
	  .doc = "how long a learned sender is kept without packets" },
	{ "learn-move-s", UINT(DAEMON, learn_move_s, 1, 86400),
	  .expect = "seconds", .def = "30",
	  .doc = "how long a learned sender must be silent before it may "
		 "move to another VTEP" },
	{ "migration-key", CUSTOM(parse_migration_key),
	  .expect = "the absolute path of a file with "
		    G_STRINGIFY(PVO_MIGRATION_KEY_MIN) " to "
		    G_STRINGIFY(PVO_MIGRATION_KEY_MAX) " bytes of secret",
	  .def_doc = "none: migrated VMs are not announced",
	  .doc = "a secret shared by the back-ends VMs migrate between: a "
		 "migrated VM's new VTEP is announced to the peers with it" },
	{ "hostverbs-device", NAME(DAEMON, hv_device),
	  .expect = "an RDMA device name as 'rdma link' shows it, like mlx5_0 "
		    "or rxe0",
	  .def_doc = "none",
	  .doc = "the host RDMA device of the tenants with transport = "
		 "hostverbs that name none" },
	{ "hostverbs-port", UINT(DAEMON, hv_port, 1, 255),
	  .expect = "a port number", .def = "1",
	  .doc = "the port of that device" },
};

static const struct key tenant_keys[] = {
	{ "vni", UINT(TENANT, vni, 1, 0xffffff), .def_doc = "required",
	  .doc = "the VXLAN network identifier, one per tenant" },
	{ "mtu", UINT(TENANT, mtu, 576, 9000), .def = "1500",
	  .doc = "the Ethernet MTU of the tenant network" },
	{ "learn", ENUM(TENANT, no_learn, yes_no), .def = "yes",
	  .doc = "learn senders from the packets of peer VTEPs; with no, only "
		 "[remote] sections and pvo-ctl map entries are known" },
	{ "peers", CUSTOM(parse_tenant_peers),
	  .expect = "IPv4 addresses, separated by commas or semicolons (at "
		    "most " G_STRINGIFY(PVO_MAX_PEERS) ")",
	  .def_doc = "[daemon] peers",
	  .doc = "the VTEPs that serve this tenant: its senders are learned, "
		 "and its migrated VMs followed, only from them and from its "
		 "own [remote] sections' VTEPs; its datagrams from any other "
		 "peer are dropped (foreign_vtep)" },
	{ "migration-key", CUSTOM(parse_tenant_migration_key),
	  .expect = "the absolute path of a file with "
		    G_STRINGIFY(PVO_MIGRATION_KEY_MIN) " to "
		    G_STRINGIFY(PVO_MIGRATION_KEY_MAX) " bytes of secret",
	  .def_doc = "[daemon] migration-key",
	  .doc = "the secret this tenant's announcements of migrated VMs are "
		 "signed and checked with, shared only by the hosts that "
		 "serve the tenant: a host of another tenant cannot move its "
		 "VMs" },
	{ "transport", ENUM(TENANT, hostverbs, transports),
	  .expect = "overlay (RoCEv2 in VXLAN, the default) or hostverbs (the "
		    "host's RDMA device)",
	  .def = "overlay",
	  .doc = "with hostverbs, user RC / UC / UD QPs and SRQs are objects "
		 "of the host's RDMA device (docs/hostverbs.md)" },
	{ "thread", UINT(TENANT, thread_pin, 0, PVO_MAX_THREADS),
	  .expect = "a thread number (up to [daemon] threads)",
	  .zero = "placed by the daemon", .def = "0",
	  .doc = "the data-path thread that serves the tenant's VMs" },
	{ "hostverbs-netdev", NAME(TENANT, hv_netdev),
	  .expect = IFNAME_EXPECT,
	  .def_doc = "required with hostverbs",
	  .doc = "hostverbs: the host netdev that holds the VMs' ips, whose "
		 "GIDs they use" },
	{ "hostverbs-device", NAME(TENANT, hv_device),
	  .expect = "an RDMA device name as 'rdma link' shows it, like mlx5_0 "
		    "or rxe0",
	  .def_doc = "[daemon]'s",
	  .doc = "hostverbs: the tenant's own RDMA device" },
	{ "hostverbs-port", UINT(TENANT, hv_port, 1, 255),
	  .expect = "a port number", .def_doc = "[daemon]'s",
	  .doc = "hostverbs: the port of the tenant's device" },
	{ "control-plane", ENUM(TENANT, evpn, control_planes),
	  .expect = "static ([remote] sections, learning, announcements) or "
		    "evpn (the kernel's tables an EVPN daemon programs)",
	  .def = "static",
	  .doc = "where the tenant's map of VMs on other hosts comes from "
		 "(docs/overlay.md, \"EVPN\")" },
	{ "evpn-netdev", NAME(TENANT, evpn_netdev),
	  .expect = IFNAME_EXPECT,
	  .def_doc = "required with evpn",
	  .doc = "evpn: the tenant's VXLAN device, whose forwarding entries "
		 "(MAC -> VTEP) the EVPN daemon installs" },
	{ "evpn-svi", NAME(TENANT, evpn_svi),
	  .expect = IFNAME_EXPECT,
	  .def_doc = "required with evpn",
	  .doc = "evpn: the bridge or SVI of the tenant's network, whose "
		 "neighbour entries (IP -> MAC) the EVPN daemon installs" },
};

#define QUOTA(k, m, hi, d, what)                                            \
	{ k, UINT(VM, quota.m, 0, hi), .def = d,                             \
	  .doc = "quota: " what }

static const struct key vm_keys[] = {
	{ "tenant", CUSTOM(parse_tenant),
	  .expect = "the name of a [tenant NAME] section",
	  .def_doc = "required", .doc = "the VM's tenant" },
	{ "mac", MAC(VM, mac),
	  .expect = "a unicast MAC like 52:54:00:12:34:56",
	  .def_doc = "required",
	  .doc = "the VM's MAC: its virtio-net device must have it" },
	{ "ips", CUSTOM(parse_ips),
	  .expect = "IPv4 or IPv6 addresses, separated by commas or "
		    "semicolons (at most " G_STRINGIFY(PVO_MAX_IPS) ")",
	  .def_doc = "none",
	  .doc = "the addresses the VM may use as GIDs" },
	{ "socket", PATH(VM, socket_path, 108),
	  .def_doc = "socket-dir/NAME.sock",
	  .doc = "the vhost-user socket QEMU connects to" },
	QUOTA("max-ucontexts", max_ucontexts, PVO_MAX_UCONTEXTS, "1024",
	      "user contexts (one per ibv_open_device in the "
	      "guest)"),
	QUOTA("max-pd", max_pd, 65536, "4096", "protection domains"),
	QUOTA("max-qp", max_qp, 65536, "4096", "queue pairs"),
	QUOTA("max-cq", max_cq, 65536, "4096", "completion queues"),
	QUOTA("max-mr", max_mr, 1 << 20, "4096", "memory regions"),
	QUOTA("max-mw", max_mw, 1 << 20, "4096", "memory windows"),
	QUOTA("max-ah", max_ah, 65536, "1024", "address handles"),
	QUOTA("max-srq", max_srq, 65536, "64", "shared receive queues"),
	{ "max-mr-size", UINT(VM, quota.max_mr_size, 4096, 1ULL << 40),
	  .expect = "bytes", .def = "4294967296",
	  .doc = "quota: the bytes one memory region may span" },
	QUOTA("max-host-mappings", max_host_mappings, 1 << 24, "16384",
	      "hostverbs: host mappings of the VM's MRs, one per run of "
	      "guest-contiguous pages; all VMs together get at most half "
	      "of vm.max_map_count, shared in proportion to this "
	      "(docs/hostverbs.md)"),
	{ "max-pinned", UINT(VM, quota.max_pinned, 0, 1ULL << 50),
	  .expect = "bytes", .def = "34359738368",
	  .doc = "quota: hostverbs: the bytes of all the VM's MRs together, "
		 "which the host device pins" },
	{ "max-host-mem", UINT(VM, quota.max_host_mem, 1 << 20, 1ULL << 40),
	  .expect = "bytes", .def = "268435456",
	  .doc = "quota: host memory held for the VM's page lists (MRs and "
		 "rings), 8 bytes a run of guest pages contiguous in GPA for "
		 "an MR (one run on contiguous or huge pages), 16 bytes a "
		 "page for a ring, and on the host-verbs transport a copy "
		 "of each receive a host SRQ may hold (16 bytes + 16 an "
		 "SGE, times its entries); beyond it the command fails "
		 "with ENOSPC. "
		 "The default holds 32M runs: 128 GiB registered on "
		 "scattered 4 KiB pages (docs/security.md)" },
	{ "hostverbs-migration", ENUM(VM, hv_migration_error, hv_migrations),
	  .expect = "refuse or error", .def = "refuse",
	  .doc = "hostverbs: a live migration while the VM has an RC / UC "
		 "connection to a peer that is not a VM of this deployment "
		 "(which cannot follow): refuse it, the VM running on here, "
		 "or migrate and end those connections (their QPs go to "
		 "error with IBV_EVENT_QP_FATAL; docs/migration.md)" },
};

static const struct key remote_keys[] = {
	{ "tenant", CUSTOM(parse_tenant),
	  .expect = "the name of a [tenant NAME] section",
	  .def_doc = "required", .doc = "the VM's tenant" },
	{ "mac", MAC(VM, mac),
	  .expect = "a unicast MAC like 52:54:00:12:34:56",
	  .def_doc = "required", .doc = "the VM's MAC" },
	{ "ips", CUSTOM(parse_ips),
	  .expect = "IPv4 addresses, separated by commas or semicolons (at "
		    "most " G_STRINGIFY(PVO_MAX_IPS) ")",
	  .def_doc = "required", .doc = "the VM's addresses" },
	{ "vtep", IPV4(VM, vtep),
	  .expect = "the IPv4 address of the host the VM runs on",
	  .def_doc = "required",
	  .doc = "the VTEP the VM is behind" },
	{ "vtep-port", UINT(VM, vtep_port, 1, 65535),
	  .expect = "a UDP port", .def_doc = "[daemon]'s vxlan-port",
	  .doc = "that VTEP's UDP port" },
};

static const struct section {
	const char *name;
	bool named;		/* [NAME ARG] */
	const char *doc;
	const struct key *keys;
	size_t num_keys;
} sections[] = {
#define S(g, n, named, doc, keys)                                           \
	[g] = { n, named, doc, keys, G_N_ELEMENTS(keys) }
	S(GROUP_DAEMON, "daemon", false,
	  "The daemon as a whole: its sockets, the overlay and what it "
	  "learns, latency mode, migration announcements, the host's RDMA "
	  "device. All keys are optional; without vtep there is no overlay.",
	  daemon_keys),
	S(GROUP_TENANT, "tenant", true,
	  "A tenant network. VMs reach the VMs of their own tenant only.",
	  tenant_keys),
	S(GROUP_VM, "vm", true,
	  "A VM this daemon serves, on a vhost-user socket of its own. The "
	  "max-* quotas bound the objects the guest may have at once: beyond "
	  "one, the application's verb fails with ENOSPC.",
	  vm_keys),
	S(GROUP_REMOTE, "remote", true,
	  "A VM behind another host's back-end, reached over the overlay "
	  "([daemon] vtep must be set); docs/overlay.md.",
	  remote_keys),
#undef S
};

#undef DAEMON
#undef TENANT
#undef VM

static void *section_struct(struct parser *p)
{
	switch (p->group) {
	case GROUP_DAEMON:
		return p->cfg;
	case GROUP_TENANT:
		return cur_tenant(p);
	case GROUP_VM:
		return cur_vm(p);
	case GROUP_REMOTE:
		return cur_remote(p);
	case GROUP_NONE:
		break;
	}
	return NULL;
}

static void set_uint(void *field, size_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*(uint8_t *)field = v;
		break;
	case 2:
		*(uint16_t *)field = v;
		break;
	case 4:
		*(uint32_t *)field = v;
		break;
	default:
		*(uint64_t *)field = v;
		break;
	}
}

static uint64_t get_uint(const void *field, size_t size)
{
	switch (size) {
	case 1:
		return *(const uint8_t *)field;
	case 2:
		return *(const uint16_t *)field;
	case 4:
		return *(const uint32_t *)field;
	default:
		return *(const uint64_t *)field;
	}
}

static bool parse_ipv4(const char *s, struct in_addr *out)
{
	return inet_pton(AF_INET, s, out) == 1 && out->s_addr != INADDR_ANY;
}

/* Check val as k's type wants it and store it; false if it is not. */
static bool set_value(const struct key *k, void *base, const char *val)
{
	char *field = (char *)base + k->off;
	uint64_t v;
	size_t i;

	switch (k->type) {
	case KEY_UINT:
		if (!pvo_parse_u64(val, k->min, k->max, &v))
			return false;
		set_uint(field, k->size, v);
		return true;
	case KEY_ENUM:
		for (i = 0; k->names[i]; i++)
			if (strcmp(val, k->names[i]) == 0) {
				set_uint(field, k->size, i);
				return true;
			}
		return false;
	case KEY_PATH:
		if (*val != '/' || strlen(val) >= k->max)
			return false;
		g_strlcpy(field, val, k->size);
		return true;
	case KEY_NAME:
		if (!*val || strlen(val) >= k->max || strchr(val, '/') ||
		    strchr(val, ' '))
			return false;
		g_strlcpy(field, val, k->size);
		return true;
	case KEY_IPV4:
		return parse_ipv4(val, (struct in_addr *)field);
	case KEY_MAC:
		return pvo_parse_mac(val, (uint8_t *)field);
	case KEY_CUSTOM:
		break;
	}
	return false;
}

/* A range's bound: 2^N for the large powers of two. */
static void append_bound(GString *s, uint64_t v)
{
	if (v > UINT32_MAX && !(v & (v - 1)))
		g_string_append_printf(s, "2^%d", __builtin_ctzll(v));
	else
		g_string_append_printf(s, "%" PRIu64, v);
}

/* What k's values are, after "expected" (g_free). */
static char *expected(const struct key *k)
{
	GString *s;
	size_t i;

	if (k->type != KEY_UINT && k->expect)
		return g_strdup(k->expect);
	s = g_string_new(NULL);
	switch (k->type) {
	case KEY_UINT:
		g_string_append_printf(s, "%s between ",
				       k->expect ? k->expect : "a number");
		append_bound(s, k->min);
		if (k->zero && k->min == 0)
			g_string_append_printf(s, " (%s)", k->zero);
		g_string_append(s, " and ");
		append_bound(s, k->max);
		if (k->note)
			g_string_append_printf(s, " (%s)", k->note);
		break;
	case KEY_ENUM:
		for (i = 0; k->names[i]; i++)
			g_string_append_printf(s, "%s%s",
					       i == 0		  ? ""
					       : k->names[i + 1] ? ", "
								 : " or ",
					       k->names[i]);
		break;
	case KEY_PATH:
		g_string_append_printf(s, "an absolute path shorter than %"
				       PRIu64, k->max);
		break;
	default:	/* the others have their expect */
		break;
	}
	return g_string_free(s, FALSE);
}

static bool bad_value(struct parser *p, int line, const struct key *k,
		      const char *val)
{
	char *what = expected(k);

	fail(p, line, "%s '%s': expected %s", k->name, val, what);
	g_free(what);
	return false;
}

/* A section starts from its keys' defaults. */
static void set_defaults(enum group_kind g, void *base)
{
	const struct section *s = &sections[g];
	size_t i;

	for (i = 0; i < s->num_keys; i++)
		if (s->keys[i].def &&
		    !set_value(&s->keys[i], base, s->keys[i].def))
			g_error("config: [%s] %s: bad default '%s'", s->name,
				s->keys[i].name, s->keys[i].def);
}

/* tenant = NAME, looked up once every [tenant] is read */
static bool parse_tenant(struct parser *p, int line, const struct key *k,
			 void *base, const char *val)
{
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

static bool parse_ips(struct parser *p, int line, const struct key *k,
		      void *base, const char *val)
{
	struct pvo_vm_config *vm = base;
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

/* A list of VTEP addresses, [daemon] or [tenant] peers. */
static bool parse_vteps(struct parser *p, int line, const char *val,
			struct in_addr *peers, int *num)
{
	char **parts = g_strsplit_set(val, ";,", -1);
	bool ok = true;
	int i;

	*num = 0;
	for (i = 0; ok && parts[i]; i++) {
		char *ip = g_strstrip(parts[i]);

		if (!*ip)
			continue;
		if (*num == PVO_MAX_PEERS)
			ok = fail(p, line, "peers: at most %d VTEPs",
				  PVO_MAX_PEERS);
		else if (!parse_ipv4(ip, &peers[(*num)++]))
			ok = fail(p, line,
				  "peers: '%s' is not the IPv4 address of a "
				  "VTEP",
				  ip);
	}
	g_strfreev(parts);
	return ok;
}

static bool parse_peers(struct parser *p, int line, const struct key *k,
			void *base, const char *val)
{
	struct pvo_daemon_config *cfg = base;

	return parse_vteps(p, line, val, cfg->peers, &cfg->num_peers);
}

static bool parse_tenant_peers(struct parser *p, int line, const struct key *k,
			       void *base, const char *val)
{
	struct pvo_tenant *t = base;

	return parse_vteps(p, line, val, t->peers, &t->num_peers);
}

/* The key file's bytes (a trailing newline dropped): shared by the
 * back-ends that may migrate VMs to one another. */
static bool read_key(struct parser *p, int line, const struct key *k,
		     const char *val, uint8_t *key, size_t *key_len)
{
	gchar *data = NULL;
	gsize len = 0;
	GError *e = NULL;

	if (*val != '/')
		return bad_value(p, line, k, val);
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
	memcpy(key, data, len);
	*key_len = len;
	g_free(data);
	return true;
}

static bool parse_migration_key(struct parser *p, int line,
				const struct key *k, void *base,
				const char *val)
{
	struct pvo_daemon_config *cfg = base;

	return read_key(p, line, k, val, cfg->migration_key,
			&cfg->migration_key_len);
}

static bool parse_tenant_migration_key(struct parser *p, int line,
				       const struct key *k, void *base,
				       const char *val)
{
	struct pvo_tenant *t = base;

	return read_key(p, line, k, val, t->migration_key,
			&t->migration_key_len);
}

static bool parse_socket_group(struct parser *p, int line,
			       const struct key *k, void *base,
			       const char *val)
{
	struct pvo_daemon_config *cfg = base;
	struct group gr, *found = NULL;
	char buf[4096];
	int err;

	if (strlen(val) >= sizeof(cfg->socket_group))
		return fail(p, line, "%s '%s': a group name is shorter than %zu "
				     "characters", k->name, val,
			    sizeof(cfg->socket_group));
	err = getgrnam_r(val, &gr, buf, sizeof(buf), &found);
	if (!found)
		return fail(p, line, "%s '%s': %s; create it (addgroup "
				     "--system %s) or name another group",
			    k->name, val,
			    err ? g_strerror(err) : "no such group on this host",
			    val);
	g_strlcpy(cfg->socket_group, val, sizeof(cfg->socket_group));
	cfg->socket_gid = gr.gr_gid;
	return true;
}

static bool parse_key(struct parser *p, int line, const char *key,
		      const char *val)
{
	const struct section *s = &sections[p->group];
	GString *known;
	size_t i;

	if (p->group == GROUP_NONE)
		return fail(p, line,
			    "'%s' is outside any section; put it under "
			    "[daemon], [tenant NAME], [vm NAME] or "
			    "[remote NAME]",
			    key);
	for (i = 0; i < s->num_keys; i++) {
		const struct key *k = &s->keys[i];

		if (strcmp(key, k->name) != 0)
			continue;
		if (k->type == KEY_CUSTOM)
			return k->parse(p, line, k, section_struct(p), val);
		if (!set_value(k, section_struct(p), val))
			return bad_value(p, line, k, val);
		return true;
	}
	known = g_string_new(NULL);
	for (i = 0; i < s->num_keys; i++)
		g_string_append_printf(known, "%s%s", i ? ", " : "",
				       s->keys[i].name);
	fail(p, line, "unknown key '%s' in a [%s] section (expected %s)", key,
	     s->name, known->str);
	g_string_free(known, TRUE);
	return false;
}

char *pvo_config_reference(void)
{
	GString *out = g_string_new(NULL);
	int g;
	size_t i;

	for (g = GROUP_DAEMON; g <= GROUP_REMOTE; g++) {
		const struct section *s = &sections[g];

		g_string_append_printf(out,
				       "%s### [%s%s]\n\n%s\n\n"
				       "| key | value | default | what it sets "
				       "|\n|---|---|---|---|\n",
				       g == GROUP_DAEMON ? "" : "\n", s->name,
				       s->named ? " NAME" : "", s->doc);
		for (i = 0; i < s->num_keys; i++) {
			const struct key *k = &s->keys[i];
			char *what = expected(k);

			g_string_append_printf(out, "| `%s` | %s | ", k->name,
					       what);
			if (k->def)
				g_string_append_printf(out, "`%s`", k->def);
			else
				g_string_append(out, k->def_doc);
			g_string_append_printf(out, " | %s |\n", k->doc);
			g_free(what);
		}
	}
	return g_string_free(out, FALSE);
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
		set_defaults(GROUP_TENANT, cur_tenant(p));
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
		set_defaults(GROUP_VM, cur_vm(p));
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
		set_defaults(GROUP_REMOTE, cur_remote(p));
		cur_remote(p)->line = line;
		p->group = GROUP_REMOTE;
		return true;
	}
	return fail(p, line,
		    "unknown section '[%s %s]': expected [daemon], "
		    "[tenant NAME], [vm NAME] or [remote NAME]",
		    name, arg);
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
		if (t->evpn && (!t->evpn_netdev[0] || !t->evpn_svi[0]))
			return fail(p, t->line,
				    "tenant '%s' has control-plane = evpn: "
				    "name its VXLAN device and its bridge "
				    "with 'evpn-netdev = NAME' and "
				    "'evpn-svi = NAME'",
				    t->name);
		if (t->evpn && cfg->vtep.s_addr == INADDR_ANY)
			return fail(p, t->line,
				    "tenant '%s' has control-plane = evpn, "
				    "which maps its VMs on other hosts: set "
				    "this host's VTEP address with [daemon] "
				    "'vtep = ADDRESS'",
				    t->name);
		if (!t->evpn && (t->evpn_netdev[0] || t->evpn_svi[0]))
			return fail(p, t->line,
				    "tenant '%s': evpn-netdev and evpn-svi "
				    "are only used with control-plane = evpn",
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
	set_defaults(GROUP_DAEMON, cfg);
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

/* The EVPN reader watches the devices it was started with
 * (transport/overlay/evpn.c): a tenant's control plane is not
 * reloaded. */
static bool same_evpn(const struct pvo_daemon_config *old,
		      const struct pvo_daemon_config *new, char **why)
{
	int i, k;

	for (i = 0; i < new->num_tenants; i++) {
		const struct pvo_tenant *n = &new->tenants[i], *o = NULL;

		for (k = 0; k < old->num_tenants && !o; k++)
			if (strcmp(old->tenants[k].name, n->name) == 0)
				o = &old->tenants[k];
		if ((o ? o->evpn : false) == n->evpn &&
		    (!n->evpn || (o->vni == n->vni &&
				  strcmp(o->evpn_netdev, n->evpn_netdev) == 0 &&
				  strcmp(o->evpn_svi, n->evpn_svi) == 0)))
			continue;
		*why = g_strdup_printf(
			"tenant '%s': its EVPN control plane would change "
			"(control-plane, evpn-netdev, evpn-svi, or the vni of "
			"a tenant on EVPN): it is read from start-up on; "
			"restart the daemon to change it",
			n->name);
		return false;
	}
	for (k = 0; k < old->num_tenants; k++) {
		bool kept = false;

		for (i = 0; i < new->num_tenants && !kept; i++)
			kept = strcmp(old->tenants[k].name,
				      new->tenants[i].name) == 0;
		if (!kept && old->tenants[k].evpn) {
			*why = g_strdup_printf(
				"tenant '%s' with control-plane = evpn would "
				"go: restart the daemon to remove it",
				old->tenants[k].name);
			return false;
		}
	}
	return true;
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
	if (old->threads != new->threads) {
		*why = g_strdup_printf(
			"[daemon] threads changed (%u -> %u): the threads are "
			"started with the daemon; restart it to change them",
			old->threads, new->threads);
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
	if (!same_evpn(old, new, why))
		return false;
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

void pvo_quota_defaults(struct pvo_quota *q)
{
	struct pvo_vm_config vm = { 0 };

	set_defaults(GROUP_VM, &vm);
	*q = vm.quota;
}

/* The quotas are the [vm] keys whose field is in vm->quota. */
static const void *quota_field(const struct pvo_quota *q, const struct key *k)
{
	size_t at = offsetof(struct pvo_vm_config, quota);

	if (k->off < at || k->off >= at + sizeof(*q))
		return NULL;
	return (const char *)q + (k->off - at);
}

char *pvo_quota_diff(const struct pvo_quota *a, const struct pvo_quota *b)
{
	GString *s = g_string_new(NULL);
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(vm_keys); i++) {
		const struct key *k = &vm_keys[i];
		uint64_t x, y;

		if (!quota_field(a, k))
			continue;
		x = get_uint(quota_field(a, k), k->size);
		y = get_uint(quota_field(b, k), k->size);
		if (x != y)
			g_string_append_printf(s, "%s%s %" PRIu64 " -> %" PRIu64,
					       s->len ? ", " : "", k->name, x,
					       y);
	}
	return g_string_free(s, s->len == 0);
}
