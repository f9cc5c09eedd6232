// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath (overlay): what the underlay can and cannot do. Datagrams
 * that pass every other receive check (right VNI, inner addresses of a
 * VM of the tenant, valid ICRC) are crafted and sent to host 1's VTEP
 * from a socket bound to the VTEP the sender is configured behind, and
 * from another address: only the first reaches the VM; an unknown sender
 * is learned only from a peer VTEP; a flood of unknown senders from
 * elsewhere leaves the mapping table as it was.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "encap.h"
#include "roce.h"
#include "t-datapath.h"

#define STRANGER "127.0.0.9" /* no VTEP of this test */
#define MISSING_QPN 0xfffff0

/* An RC SEND Only from (sip, smac) to VM a, to a QPN a does not have. */
static size_t craft(uint8_t *buf, const char *sip, const uint8_t *smac)
{
	struct pvo_inner in = { .vni = 100, .ttl = 64, .sport = 0xc0de };
	struct pvo_roce_hdr h = { 0 };
	size_t hl;

	memcpy(in.dmac, (uint8_t[]){ 0x52, 0x54, 0, 0, 0, 0x0a }, 6);
	memcpy(in.smac, smac, 6);
	in.sip = inet_addr(sip);
	in.dip = inet_addr("10.0.0.1");
	h.opcode = PVO_OPC_SEND_ONLY;
	h.pkey = PVO_ROCE_PKEY_DEFAULT;
	h.dqpn = MISSING_QPN;
	h.psn = 0x42;
	h.payload_len = 16;
	hl = pvo_roce_encode(buf + PVO_ENCAP_LEN, &h);
	memset(buf + PVO_ENCAP_LEN + hl, 0x5a, 16);
	return pvo_encap_seal(buf, &in, hl + 16);
}

/* Sends n crafted datagrams from address from (any port) to host 1. */
static bool inject(const char *from, const char *sip0, unsigned int n,
		   const uint8_t *smac)
{
	struct sockaddr_in la = { .sin_family = AF_INET };
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint8_t buf[256];
	unsigned int i;
	bool ok;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	la.sin_addr.s_addr = inet_addr(from);
	to.sin_addr.s_addr = inet_addr("127.0.0.1");
	to.sin_port = htons(overlay_port);
	ok = fd >= 0 && !bind(fd, (struct sockaddr *)&la, sizeof(la));
	for (i = 0; ok && i < n; i++) {
		struct in_addr sip = { inet_addr(sip0) };
		size_t len;

		/* sip0, sip0 + 1, ...: each datagram another sender */
		sip.s_addr = htonl(ntohl(sip.s_addr) + i);
		len = craft(buf, inet_ntoa(sip), smac);
		ok = sendto(fd, buf, len, 0, (struct sockaddr *)&to,
			    sizeof(to)) == (ssize_t)len;
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A counter of VM a on host 1 (show's "vm name=a" line). */
static unsigned long long vm_a(const char *key)
{
	char line[2048];

	if (!backend_mgmt_line(&bp, "vm name=a ", line, sizeof(line)))
		return ~0ull;
	return backend_field(line, key);
}

/* Host 1's "map" line for (VNI 100, ip) into line, or false. */
static bool map_line(const char *ip, char *line, size_t len)
{
	char kind[64];

	snprintf(kind, sizeof(kind), "map vni=100 ip=%s ", ip);
	return backend_mgmt_line(&bp, kind, line, len);
}

/* Waits until VM a's counter key reaches want (the daemon takes the
 * datagrams in on its own time); returns the last value. */
static unsigned long long wait_for(const char *key, unsigned long long want)
{
	unsigned long long v = vm_a(key);
	int i;

	for (i = 0; i < 200 && v < want; i++) {
		usleep(10000);
		v = vm_a(key);
	}
	return v;
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
	tap_ok(backend_running(&bp), "ingress: host 1's back-end still runs");
}
