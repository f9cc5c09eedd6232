// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath (overlay): what the underlay can and cannot do. Datagrams
 * that pass every other receive check (right VNI, inner addresses of a
 * VM of the tenant, valid ICRC) are crafted and sent to host 1's VTEP
 * from a socket bound to the VTEP the sender is configured behind, and
 * from another address: only the first reaches the VM; an unknown sender
 * is learned only from a peer VTEP; a flood of unknown senders from
 * elsewhere leaves the mapping table as it was. A VTEP speaks only for
 * the tenants it serves: a peer that sends for tenant red, whose [tenant]
 * peers do not name it, is dropped (foreign_vtep), data or announcement,
 * with nothing learned. Red's announcements need red's own key. No peer
 * speaks for a VM that runs here (local_src), data or announcement.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <time.h>

#include "announce.h"
#include "t-datapath.h"
#include "wire_forge.h"

#define STRANGER "127.0.0.9" /* no VTEP of this test */

/* The VM a datagram goes to: VM a (blue) unless said otherwise. */
static struct wire_dst dst = {100, "10.0.0.1", {0x52, 0x54, 0, 0, 0, 0x0a}};

/* Sends n forged datagrams from address from to host 1 (wire_forge.h). */
static bool inject(const char *from, const char *sip0, unsigned int n,
		   const uint8_t *smac)
{
	return wire_inject(from, "127.0.0.1", overlay_port, &dst, sip0, n,
			   smac);
}

/* A counter of a VM on host 1 (show's "vm name=..." line). */
static unsigned long long vm_n(const char *vm, const char *key)
{
	char line[2048], kind[32];

	snprintf(kind, sizeof(kind), "vm name=%s ", vm);
	if (!backend_mgmt_line(&bp, kind, line, sizeof(line)))
		return ~0ull;
	return backend_field(line, key);
}

static unsigned long long vm_a(const char *key)
{
	return vm_n("a", key);
}

/* Host 1's "map" line for (vni, ip) into line, or false. */
static bool map_line_vni(unsigned int vni, const char *ip, char *line,
			 size_t len)
{
	char kind[64];

	snprintf(kind, sizeof(kind), "map vni=%u ip=%s ", vni, ip);
	return backend_mgmt_line(&bp, kind, line, len);
}

static bool map_line(const char *ip, char *line, size_t len)
{
	return map_line_vni(100, ip, line, len);
}

/* Waits until a counter of VM vm reaches want (the daemon takes the
 * datagrams in on its own time); returns the last value. */
static unsigned long long wait_vm(const char *vm, const char *key,
				  unsigned long long want)
{
	unsigned long long v = vm_n(vm, key);
	int i;

	for (i = 0; i < 200 && v < want; i++) {
		usleep(10000);
		v = vm_n(vm, key);
	}
	return v;
}

static unsigned long long wait_for(const char *key, unsigned long long want)
{
	return wait_vm("a", key, want);
}

/* Host 1's daemon-wide drop counter of reason (show's "daemon" line). */
static unsigned long long daemon_drops(const char *reason)
{
	char line[4096], key[64];

	snprintf(key, sizeof(key), " drop_%s=", reason);
	if (!backend_mgmt_line(&bp, "daemon", line, sizeof(line)))
		return ~0ull;
	return backend_field(line, key);
}

/* An announcement that (vni, ip) is now behind VTEP vtep, signed with
 * key, sent from vtep to host 1; false if it could not be. */
static bool announce(uint32_t vni, const char *ip, const char *vtep,
		     const uint8_t *key, size_t keylen)
{
	struct pvo_announce an = {.vni = vni, .port = overlay_port};
	struct sockaddr_in from = {.sin_family = AF_INET};
	struct sockaddr_in to = {.sin_family = AF_INET};
	struct timespec now;
	uint8_t buf[256];
	size_t n;
	bool ok;
	int fd;

	clock_gettime(CLOCK_REALTIME, &now);
	an.gen = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	an.ip = inet_addr(ip);
	memcpy(an.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, 0x79}, 6);
	an.vtep.s_addr = inet_addr(vtep);
	n = pvo_announce_write(buf, sizeof(buf), &an, key, keylen);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	from.sin_addr.s_addr = inet_addr(vtep);
	to.sin_addr.s_addr = inet_addr("127.0.0.1");
	to.sin_port = htons(overlay_port);
	ok = n && fd >= 0 &&
	     !bind(fd, (struct sockaddr *)&from, sizeof(from)) &&
	     sendto(fd, buf, n, 0, (struct sockaddr *)&to, sizeof(to)) ==
		 (ssize_t)n;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Waits until host 1's daemon-wide drop counter of reason passes was. */
static unsigned long long wait_drops(const char *reason, unsigned long long was)
{
	unsigned long long v = daemon_drops(reason);
	int i;

	for (i = 0; i < 200 && v == was; i++) {
		usleep(10000);
		v = daemon_drops(reason);
	}
	return v;
}

/*
 * Announcements use the key of their tenant: red's VMs are moved only
 * with red's own migration-key, not the deployment's.
 */
static void test_tenant_keys(void)
{
	uint8_t key[128], rkey[128];
	size_t keylen = read_key(migration_key, key, sizeof(key));
	size_t rlen = read_key(red_key, rkey, sizeof(rkey));
	unsigned long long ba0, v;
	char line[512];
	bool moved = false;
	int i, fd;

	ba0 = daemon_drops("bad_announce");
	announce(200, "10.0.0.62", "127.0.0.3", key, keylen);
	v = wait_drops("bad_announce", ba0);
	tap_ok(keylen && v == ba0 + 1 &&
		   !map_line_vni(200, "10.0.0.62", line, sizeof(line)),
	       "ingress: red's peer 127.0.0.3 moving red's 10.0.0.62 with "
	       "the deployment's key: drop_bad_announce (%llu -> %llu), the "
	       "map unchanged",
	       ba0, v);
	announce(200, "10.0.0.62", "127.0.0.3", rkey, rlen);
	for (i = 0; i < 200 && !moved; i++) {
		usleep(10000);
		moved = map_line_vni(200, "10.0.0.62", line, sizeof(line)) &&
			strstr(line, "origin=moved") &&
			strstr(line, "127.0.0.3");
	}
	tap_ok(rlen && moved, "ingress: with red's own key it is followed (%s)",
	       moved ? line : "no map entry");
	fd = backend_mgmt_connect(&bp);
	if (fd >= 0) {
		static const char del[] = "map del 200 10.0.0.62\n";

		if (write(fd, del, sizeof(del) - 1) == sizeof(del) - 1)
			backend_mgmt_read(fd, line, sizeof(line));
		close(fd);
	}
}

/*
 * What a VTEP may speak for: a peer of blue sending for red (whose peers
 * are 127.0.0.1 and 127.0.0.3), as data to red's VM c and as an
 * announcement moving a red address to itself. Each is dropped, counted,
 * and learns nothing.
 */
static void test_speaks_for(const char *vtep_b)
{
	static const uint8_t mac_x[6] = {0x52, 0x54, 0, 0, 0, 0x78};
	unsigned long long fv0, v, fd0;
	uint8_t key[128];
	char line[512];
	size_t keylen;
	bool sent;

	dst.vni = 200;
	dst.ip = "10.0.0.3";
	memcpy(dst.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, 0x0c}, 6);
	fv0 = vm_n("c", " drop_foreign_vtep=");
	inject(vtep_b, "10.0.0.60", 1, mac_x);
	v = wait_vm("c", " drop_foreign_vtep=", fv0 + 1);
	tap_ok(v == fv0 + 1 &&
		   !map_line_vni(200, "10.0.0.60", line, sizeof(line)),
	       "ingress: a tenant red sender from %s, a peer of blue but not "
	       "of red, is dropped as drop_foreign_vtep at red's VM c "
	       "(%llu -> %llu), not learned",
	       vtep_b, fv0, v);
	dst.vni = 100;
	dst.ip = "10.0.0.1";
	memcpy(dst.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, 0x0a}, 6);

	/* an announcement with red's key, moving a red address behind the
	 * blue-only peer */
	keylen = read_key(red_key, key, sizeof(key));
	fd0 = daemon_drops("foreign_vtep");
	sent = announce(200, "10.0.0.61", vtep_b, key, keylen);
	v = wait_drops("foreign_vtep", fd0);
	tap_ok(keylen && sent && v == fd0 + 1 &&
		   !map_line_vni(200, "10.0.0.61", line, sizeof(line)),
	       "ingress: an announcement with red's key, moving red's "
	       "10.0.0.61 behind %s, is dropped as drop_foreign_vtep "
	       "(%llu -> %llu), the map unchanged",
	       vtep_b, fd0, v);
}

/*
 * No peer speaks for a VM served here: b's VTEP, a peer of blue, sending
 * as VM a (10.0.0.1, running on host 1) to a, and announcing a behind
 * itself with blue's key. Both are dropped as local_src and map nothing.
 */
static void test_local_src(const char *vtep_b)
{
	static const uint8_t mac_a[6] = {0x52, 0x54, 0, 0, 0, 0x0a};
	unsigned long long ls0, uq0, v, d0;
	uint8_t key[128];
	char line[512];
	size_t keylen = read_key(migration_key, key, sizeof(key));
	bool sent;

	ls0 = vm_a(" drop_local_src=");
	uq0 = vm_a(" drop_unknown_qp=");
	inject(vtep_b, "10.0.0.1", 1, mac_a);
	v = wait_for(" drop_local_src=", ls0 + 1);
	tap_ok(v == ls0 + 1 && vm_a(" drop_unknown_qp=") == uq0 &&
		   !map_line("10.0.0.1", line, sizeof(line)),
	       "ingress: the peer VTEP %s sending as VM a, which runs on "
	       "host 1, is dropped as drop_local_src (%llu -> %llu) before "
	       "any QP, and not learned",
	       vtep_b, ls0, v);

	d0 = daemon_drops("local_src");
	sent = announce(100, "10.0.0.1", vtep_b, key, keylen);
	v = wait_drops("local_src", d0);
	tap_ok(keylen && sent && v == d0 + 1 &&
		   !map_line("10.0.0.1", line, sizeof(line)),
	       "ingress: an announcement with blue's key moving VM a, which "
	       "runs on host 1, behind %s is dropped as drop_local_src "
	       "(%llu -> %llu), the map unchanged",
	       vtep_b, d0, v);
}

static unsigned int map_size(void)
{
	static char buf[65536];
	unsigned int n = 0;
	char *p;
	int fd = backend_mgmt_connect(&bp);

	if (fd < 0 || write(fd, "show\n", 5) != 5) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	backend_mgmt_read(fd, buf, sizeof(buf));
	close(fd);
	for (p = buf; (p = strstr(p, "\nmap ")); p++)
		n++;
	return n + !strncmp(buf, "map ", 4);
}

void test_overlay_ingress(void)
{
	static const uint8_t mac_b[6] = { 0x52, 0x54, 0, 0, 0, 0x0b };
	static const uint8_t mac_x[6] = { 0x52, 0x54, 0, 0, 0, 0x77 };
	unsigned long long uq0, wv0, us0, v;
	char line[512], vtep_b[64];
	unsigned int maps0;
	char *colon;

	/* the VTEP b is configured behind, as host 1 has it */
	if (!tap_ok(map_line("10.0.0.2", line, sizeof(line)) &&
		    sscanf(strstr(line, "vtep=") ? strstr(line, "vtep=") : "",
			   "vtep=%63s", vtep_b) == 1,
		    "ingress: host 1 maps b (10.0.0.2) to a VTEP (%s)", line))
		return;
	colon = strchr(vtep_b, ':');
	if (colon)
		*colon = '\0';
	uq0 = vm_a(" drop_unknown_qp=");
	wv0 = vm_a(" drop_wrong_vtep=");
	us0 = vm_a(" drop_unknown_src=");

	inject(vtep_b, "10.0.0.2", 1, mac_b);
	v = wait_for(" drop_unknown_qp=", uq0 + 1);
	tap_ok(v == uq0 + 1 && vm_a(" drop_wrong_vtep=") == wv0,
	       "ingress: b's datagram from b's VTEP %s reaches VM a (its "
	       "missing QPN counts drop_unknown_qp: %llu -> %llu)",
	       vtep_b, uq0, v);

	inject(STRANGER, "10.0.0.2", 1, mac_b);
	v = wait_for(" drop_wrong_vtep=", wv0 + 1);
	tap_ok(v == wv0 + 1 && vm_a(" drop_unknown_qp=") == uq0 + 1,
	       "ingress: the same datagram from %s, not b's VTEP, is "
	       "dropped as drop_wrong_vtep (%llu -> %llu) before any QP",
	       STRANGER, wv0, v);

	maps0 = map_size();
	inject(STRANGER, "10.0.0.77", 1, mac_x);
	v = wait_for(" drop_unknown_src=", us0 + 1);
	tap_ok(v == us0 + 1 && !map_line("10.0.0.77", line, sizeof(line)),
	       "ingress: an unknown sender from %s, not a peer VTEP, is "
	       "dropped as drop_unknown_src (%llu -> %llu) and not learned",
	       STRANGER, us0, v);

	inject(vtep_b, "10.0.0.78", 1, mac_x);
	v = wait_for(" drop_unknown_qp=", uq0 + 2);
	tap_ok(v == uq0 + 2 && map_line("10.0.0.78", line, sizeof(line)) &&
		       strstr(line, "origin=learned") &&
		       strstr(line, vtep_b),
	       "ingress: an unknown sender from the peer VTEP %s is learned "
	       "and reaches the VM (%s)",
	       vtep_b, line);

	inject(STRANGER, "10.0.0.78", 1, mac_x);
	v = wait_for(" drop_wrong_vtep=", wv0 + 2);
	tap_ok(v == wv0 + 2 && map_line("10.0.0.78", line, sizeof(line)) &&
		       strstr(line, vtep_b),
	       "ingress: the learned sender cannot be moved to %s while "
	       "it is not silent (drop_wrong_vtep %llu, %s)",
	       STRANGER, v, line);

	inject(STRANGER, "10.1.0.0", 300, mac_x);
	v = wait_for(" drop_unknown_src=", us0 + 301);
	tap_ok(v == us0 + 301 && map_size() == maps0 + 1,
	       "ingress: a flood of 300 unknown senders from %s: all "
	       "dropped (drop_unknown_src %llu), the mapping table holds "
	       "%u entries as before plus the one learned",
	       STRANGER, v, map_size());
	test_speaks_for(vtep_b);
	test_local_src(vtep_b);
	test_tenant_keys();
	tap_ok(backend_running(&bp), "ingress: host 1's back-end still runs");
}
