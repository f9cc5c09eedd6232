// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A tenant on EVPN against forged datagrams on the wire. In a network
 * namespace of its own (unshare), a tenant bridge and VXLAN device hold
 * what FRR's zebra would install (extern_learn forwarding and neighbour
 * entries); the back-end maps the tenant from them and serves VM a, a
 * simulated guest. Datagrams that pass every other receive check are sent
 * to its VTEP from addresses of the namespace: only the VTEP EVPN names
 * for a sender's (VNI, IP) gets through; the sender's old VTEP after a
 * move, another VTEP of the tenant, and a host that is no VTEP are
 * dropped; nothing is learned from packets; no VTEP speaks for VM a.
 * Needs root (a namespace); skips otherwise.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_proc.h"
#include "sim_vm.h"
#include "tap.h"
#include "wire_forge.h"

#define VTEP "192.0.2.1"
#define PORT 4790

static struct backend_proc bp;
static const struct wire_dst vm_a = {
    100, "10.1.0.1", {0x52, 0x54, 0, 0, 0, 0x01}};
static const uint8_t mac_b[6] = {0x52, 0x54, 0, 0, 0, 0x02};

static bool sh(const char *cmd)
{
	int rc = system(cmd);

	if (rc != 0)
		tap_diag("'%s' failed (%d)", cmd, rc);
	return rc == 0;
}

/* The host as t-evpn makes it, plus local addresses for the VTEPs the
 * test sends from. */
static bool make_host(void)
{
	static const char *const cmds[] = {
	    "ip link set lo up",
	    "ip addr add " VTEP "/32 dev lo",
	    "ip addr add 192.0.2.2/32 dev lo",
	    "ip addr add 192.0.2.3/32 dev lo",
	    "ip addr add 192.0.2.5/32 dev lo",
	    "ip addr add 192.0.2.99/32 dev lo",
	    "ip link add br100 type bridge",
	    "ip link add vxlan100 type vxlan id 100 local " VTEP
	    " dstport 4789 nolearning",
	    "ip link set vxlan100 master br100",
	    "ip link set vxlan100 up",
	    "ip link set br100 up",
	    /* b behind 192.0.2.2, c behind 192.0.2.3 */
	    "bridge fdb add 52:54:00:00:00:02 dev vxlan100 dst 192.0.2.2 "
	    "self extern_learn",
	    "ip neigh add 10.1.0.2 lladdr 52:54:00:00:00:02 dev br100 "
	    "extern_learn",
	    "bridge fdb add 52:54:00:00:00:03 dev vxlan100 dst 192.0.2.3 "
	    "self extern_learn",
	    "ip neigh add 10.1.0.3 lladdr 52:54:00:00:00:03 dev br100 "
	    "extern_learn",
	};
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!sh(cmds[i]))
			return false;
	return true;
}

static unsigned long long vm_n(const char *key)
{
	char line[2048];

	if (!backend_mgmt_line(&bp, "vm name=a ", line, sizeof(line)))
		return ~0ull;
	return backend_field(line, key);
}

/* Host 1's map line for ip into line, or false. */
static bool map_line(const char *ip, char *line, size_t len)
{
	char kind[64];

	snprintf(kind, sizeof(kind), "map vni=100 ip=%s ", ip);
	return backend_mgmt_line(&bp, kind, line, len);
}

/* Waits until ip's map line contains want; false after 5 s. */
static bool wait_map(const char *ip, const char *want)
{
	char line[512];
	int i;

	for (i = 0; i < 500; i++) {
		if (map_line(ip, line, sizeof(line)) && strstr(line, want))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * One datagram from outer source from, as inner sip: it must count
 * drop_<want> at VM a (unknown_qp: it passed the sender's checks) and
 * nothing else. Returns whether it did.
 */
static bool expect(const char *from, const char *sip, const char *want)
{
	static const char *const reasons[] = {
	    "unknown_qp",   "wrong_vtep", "unknown_src",
	    "foreign_vtep", "local_src",
	};
	unsigned long long before[5], was = 0, v;
	char key[64];
	unsigned int i, changed = 0;
	int k;

	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), " drop_%s=", reasons[i]);
		before[i] = vm_n(key);
		if (!strcmp(reasons[i], want))
			was = before[i];
	}
	if (!wire_inject(from, VTEP, PORT, &vm_a, sip, 1, mac_b))
		return false;
	/* the daemon takes it in on its own time */
	snprintf(key, sizeof(key), " drop_%s=", want);
	for (k = 0; k < 200 && vm_n(key) == was; k++)
		usleep(10000);
	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), " drop_%s=", reasons[i]);
		v = vm_n(key);
		if (v != before[i]) {
			changed++;
			if (strcmp(reasons[i], want) || v != before[i] + 1)
				return false;
		}
	}
	return changed == 1;
}

/* A datagram from outer source from as inner sip, and the drop reason it
 * must count at VM a (unknown_qp: it got through). */
struct wire_case {
	const char *from, *sip, *want, *what;
};

static void cases(const struct wire_case *c, unsigned int n)
{
	char line[512];
	unsigned int i;

	for (i = 0; i < n; i++)
		tap_ok(expect(c[i].from, c[i].sip, c[i].want) &&
			   (!strcmp(c[i].want, "unknown_qp") ||
			    !map_line(c[i].sip, line, sizeof(line)) ||
			    !strstr(line, c[i].from)),
		       "%s: from %s as %s, drop_%s%s", c[i].what, c[i].from,
		       c[i].sip, c[i].want,
		       strcmp(c[i].want, "unknown_qp")
			   ? ", and the map does not name that VTEP for it"
			   : " (it got through)");
}

static void run(void)
{
	static const struct wire_case before[] = {
	    {"192.0.2.2", "10.1.0.2", "unknown_qp",
	     "b at the VTEP EVPN names for it"},
	    {"192.0.2.3", "10.1.0.2", "wrong_vtep",
	     "b claimed by a VTEP EVPN names for c only"},
	    {"192.0.2.99", "10.1.0.2", "wrong_vtep",
	     "b claimed by a host that is no VTEP"},
	    {"192.0.2.2", "10.1.0.77", "unknown_src",
	     "an address EVPN does not name"},
	    {"192.0.2.2", "10.1.0.1", "local_src",
	     "VM a, which runs here, claimed by b's VTEP"},
	};
	static const struct wire_case after[] = {
	    {"192.0.2.2", "10.1.0.2", "wrong_vtep",
	     "b claimed by its old VTEP after the move"},
	    {"192.0.2.5", "10.1.0.2", "unknown_qp", "b at its new VTEP"},
	};

	if (!tap_ok(wait_map("10.1.0.2", "vtep=192.0.2.2:4790") &&
			wait_map("10.1.0.3", "vtep=192.0.2.3:4790"),
		    "EVPN maps b (10.1.0.2) behind 192.0.2.2 and c behind "
		    "192.0.2.3"))
		return;
	cases(before, sizeof(before) / sizeof(before[0]));
	/* b moves behind 192.0.2.5 (MAC mobility) */
	sh("bridge fdb replace 52:54:00:00:00:02 dev vxlan100 dst 192.0.2.5 "
	   "self extern_learn");
	if (!tap_ok(wait_map("10.1.0.2", "vtep=192.0.2.5:4790"),
		    "b moves behind 192.0.2.5 in EVPN, and in the map"))
		return;
	cases(after, sizeof(after) / sizeof(after[0]));
}

int main(void)
{
	static const char *const vms[] = {"a", NULL};
	struct sim_vm_opts o = {.name = "a"};
	struct sim_vm *a = NULL;
	char err[512], line[256];
	bool stopped;

	if (getuid() != 0 || unshare(CLONE_NEWNET) != 0) {
		printf("1..0 # SKIP needs root and a network namespace\n");
		return 0;
	}
	tap_plan(12);
	if (!make_host())
		tap_bail("the namespace's bridge and VXLAN device");
	if (backend_start_config(&bp,
				 "vtep = " VTEP "\n"
				 "vxlan-port = 4790\n"
				 "[tenant blue]\n"
				 "vni = 100\n"
				 "control-plane = evpn\n"
				 "evpn-netdev = vxlan100\n"
				 "evpn-svi = br100\n"
				 "[vm a]\n"
				 "tenant = blue\n"
				 "mac = 52:54:00:00:00:01\n"
				 "ips = 10.1.0.1\n",
				 vms, NULL, 10000, err, sizeof(err)) != 0)
		tap_bail("back-end: %s", err);
	o.socket_path = backend_vm_socket(&bp, "a");
	a = sim_vm_open(&o, err, sizeof(err));
	if (tap_ok(a != NULL, "VM a connects and installs its GID (%s)",
		   a ? "ok" : err))
		run();
	else
		tap_skip(9, "no VM");
	if (a)
		sim_vm_close(a);
	stopped = backend_stop(&bp, 5000) == 0;
	tap_ok(stopped, "the back-end exits cleanly (%s)",
	       backend_describe(&bp));
	tap_ok(backend_sanitizer_report(&bp, line, sizeof(line)) == 0,
	       "no sanitizer report in the back-end's log");
	if (tap_failures())
		backend_dump_log(&bp, 40);
	backend_cleanup(&bp, tap_failures() != 0);
	return tap_exit_status();
}
