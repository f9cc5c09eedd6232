// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A moved host-verbs VM's numbers, as its peers get and keep them: the
 * rebind messages (rebind_msg.c) read back as written with the same key;
 * a wrong key, a flipped bit, a truncation, an entry with a field its
 * type does not have, and too many entries are refused. The peers'
 * tables (peer_alias.c): pairs by generation, identity without one, the
 * reverse QPN of a receive, the bound per VM, a VM forgotten.
 */
#include <arpa/inet.h>
#include <string.h>

#include "encap.h"
#include "peer_alias.h"
#include "rebind_msg.h"
#include "tap.h"

static const uint8_t key[] = "0123456789abcdef-migration-key";
static const uint8_t other[] = "another key of the right size";
#define KEYLEN (sizeof(key) - 1)

static struct pvo_rebind msg(void)
{
	struct pvo_rebind r = {.kind = PVO_REBIND_OFFER,
			       .vni = 100,
			       .gen = 0x0123456789abcdefull,
			       .parts = 2,
			       .part = 1,
			       .count = 3};

	r.ip = inet_addr("10.0.0.2");
	r.vtep.s_addr = inet_addr("127.0.0.2");
	memcpy(r.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, 0x0b}, 6);
	r.e[0] = (struct pvo_rebind_entry){
	    .type = PVO_REBIND_QPN, .guest = 0x11, .host = 0x23};
	r.e[1] = (struct pvo_rebind_entry){
	    .type = PVO_REBIND_RKEY, .guest = 0xdeadbeef, .host = 0x1234};
	r.e[2] = (struct pvo_rebind_entry){.type = PVO_REBIND_CONN,
					   .guest = 0x12,
					   .host = 0x24,
					   .peer_ip = inet_addr("10.0.0.1"),
					   .peer_qpn = 0x31,
					   .psn = 0xabcdef,
					   .psn2 = 0x123456};
	return r;
}

/* Written, then read back: whether that works. */
static enum pvo_announce_verdict write_read(const struct pvo_rebind *r)
{
	static uint8_t buf[2048];
	struct pvo_rebind b;
	size_t n = pvo_rebind_write(buf, sizeof(buf), r, key, KEYLEN);

	return n ? pvo_rebind_parse(buf, n, key, KEYLEN, &b) : 99;
}

static void codec(void)
{
	struct pvo_rebind r = msg(), b;
	uint8_t buf[2048], bad[2048];
	size_t n, i;
	bool all = true;

	n = pvo_rebind_write(buf, sizeof(buf), &r, key, KEYLEN);
	tap_ok(n > 0 && pvo_rebind_is_one(buf, n),
	       "a rebind offer is written (%zu bytes) and told from an "
	       "announcement",
	       n);
	tap_ok(pvo_rebind_write(bad, n - 1, &r, key, KEYLEN) == 0 &&
		   pvo_rebind_write(bad, sizeof(bad), &r, key, 8) == 0,
	       "... not into a buffer one byte short, nor with a short key");
	memset(&b, 0, sizeof(b));
	tap_ok(pvo_rebind_parse(buf, n, key, KEYLEN, &b) == PVO_ANNOUNCE_OK &&
		   b.kind == r.kind && b.vni == r.vni && b.ip == r.ip &&
		   b.vtep.s_addr == r.vtep.s_addr && b.gen == r.gen &&
		   b.part == 1 && b.parts == 2 && b.count == 3 &&
		   !memcmp(b.mac, r.mac, 6) &&
		   !memcmp(b.e, r.e, 3 * sizeof(b.e[0])),
	       "read back with the same key: every field and entry");
	tap_ok(pvo_rebind_parse(buf, n, other, sizeof(other) - 1, &b) ==
		       PVO_ANNOUNCE_BAD_MAC &&
		   pvo_rebind_parse(buf, n, key, 0, &b) == PVO_ANNOUNCE_BAD_MAC,
	       "another key, or none: refused");
	for (i = PVO_VXLAN_LEN + PVO_ETH_LEN; i < n; i++) {
		memcpy(bad, buf, n);
		bad[i] ^= 0x10;
		if (pvo_rebind_parse(bad, n, key, KEYLEN, &b) ==
		    PVO_ANNOUNCE_OK) {
			tap_diag("a flipped bit in byte %zu was accepted", i);
			all = false;
		}
	}
	tap_ok(all, "a flipped bit in any byte of the body or MAC is refused");
	for (i = 0; i < n; i++)
		if (pvo_rebind_parse(buf, i, key, KEYLEN, &b) ==
		    PVO_ANNOUNCE_OK)
			all = false;
	tap_ok(all, "every truncation is refused");
	memset(buf + n, 0, 40);
	tap_ok(pvo_rebind_parse(buf, n + 40, key, KEYLEN, &b) ==
		       PVO_ANNOUNCE_OK &&
		   pvo_rebind_parse(buf, n + 100, key, KEYLEN, &b) ==
		       PVO_ANNOUNCE_MALFORMED,
	       "Ethernet padding is accepted, a longer frame is not");
	memcpy(bad, buf, n);
	bad[6] ^= 1; /* the VXLAN header's VNI */
	tap_ok(pvo_rebind_parse(bad, n, key, KEYLEN, &b) ==
		   PVO_ANNOUNCE_MALFORMED,
	       "a VXLAN VNI other than the body's is malformed");

	r.count = PVO_REBIND_MAX_ENTRIES;
	for (i = 3; i < PVO_REBIND_MAX_ENTRIES; i++)
		r.e[i] = (struct pvo_rebind_entry){
		    .type = PVO_REBIND_RKEY, .guest = i, .host = 1000 + i};
	n = pvo_rebind_write(buf, sizeof(buf), &r, key, KEYLEN);
	tap_ok(n > 0 && n < 1300 && write_read(&r) == PVO_ANNOUNCE_OK,
	       "%d entries fit one datagram of %zu bytes",
	       PVO_REBIND_MAX_ENTRIES, n);
	r.count++;
	tap_ok(pvo_rebind_write(buf, sizeof(buf), &r, key, KEYLEN) == 0,
	       "... and no more are written");
}

/* Bad message i (false: no more), and what is wrong with it. */
static bool spoil(unsigned int i, struct pvo_rebind *r, const char **what)
{
	switch (i) {
#define CASE(n, w, stmt)                                                       \
	case n:                                                                \
		*what = w;                                                     \
		stmt;                                                          \
		return true
		CASE(0, "kind 0", r->kind = 0);
		CASE(1, "kind 7", r->kind = PVO_REBIND_KIND_MAX + 1);
		CASE(2, "no parts", r->parts = 0);
		CASE(3, "part beyond parts", r->part = 2);
		CASE(4, "VNI over 24 bits", r->vni = 1u << 24);
		CASE(5, "entry type 0", r->e[0].type = 0);
		CASE(6, "entry type 4", r->e[0].type = PVO_REBIND_TYPE_MAX + 1);
		CASE(7, "QPN over 24 bits", r->e[0].host = 1u << 24);
		CASE(8, "a QPN pair with a peer", r->e[0].peer_ip = 1);
		CASE(9, "a key pair with a PSN", r->e[1].psn = 1);
		CASE(10, "a connection without a peer", r->e[2].peer_ip = 0);
		CASE(11, "a connection's PSN over 24 bits",
		     r->e[2].psn = 1u << 24);
		CASE(12, "a connection's second PSN over 24 bits",
		     r->e[2].psn2 = 1u << 24);
		CASE(13, "a key pair with a second PSN", r->e[1].psn2 = 1);
#undef CASE
	}
	return false;
}

/* Each bad message: the writer refuses it. */
static void refusals(void)
{
	const char *what;
	unsigned int i;

	for (i = 0;; i++) {
		struct pvo_rebind r = msg();

		if (!spoil(i, &r, &what))
			break;
		tap_ok(write_read(&r) == 99, "not written: %s", what);
	}
}

/* The writer's message with byte at (from the first entry, after the 40
 * bytes of the signed header) set to v and signed again: what the reader
 * says. */
static enum pvo_announce_verdict resigned(size_t at, uint8_t v)
{
	const size_t body = PVO_VXLAN_LEN + PVO_ETH_LEN;
	struct pvo_rebind r = msg(), b;
	uint8_t buf[2048];
	size_t n = pvo_rebind_write(buf, sizeof(buf), &r, key, KEYLEN);

	buf[body + 40 + at] = v;
	pvo_announce_sign(buf + body, n - body - PVO_ANNOUNCE_MAC_LEN, key,
			  KEYLEN, buf + n - PVO_ANNOUNCE_MAC_LEN);
	return pvo_rebind_parse(buf, n, key, KEYLEN, &b);
}

/* A message the writer would refuse, signed anyway, is refused when
 * read. */
static void signed_but_wrong(void)
{
	tap_ok(resigned(1, 1) == PVO_ANNOUNCE_MALFORMED,
	       "signed, with a reserved byte set: malformed");
	tap_ok(resigned(0, 9) == PVO_ANNOUNCE_MALFORMED,
	       "signed, with an unknown entry type: malformed");
	tap_ok(resigned(0, PVO_REBIND_QPN) == PVO_ANNOUNCE_OK,
	       "... and the same message signed as written is taken");
}

static void tables(void)
{
	uint32_t a = inet_addr("10.0.0.2"), c = inet_addr("10.0.0.3");
	unsigned long pairs;
	unsigned int vms, i;
	bool ok = true;

	tap_ok(!pvo_alias_any() &&
		   pvo_alias_host(100, a, PVO_ALIAS_RKEY, 7) == 7,
	       "no table: every identifier is itself");
	tap_ok(pvo_alias_add(100, a, 10, PVO_ALIAS_QPN, 0x11, 0x23, 16) ==
		       PVO_ALIAS_ADDED &&
		   pvo_alias_add(100, a, 10, PVO_ALIAS_RKEY, 0, 0x99, 16) ==
		       PVO_ALIAS_ADDED &&
		   pvo_alias_any(),
	       "a moved VM's QPN and key pairs are kept");
	tap_ok(pvo_alias_host(100, a, PVO_ALIAS_QPN, 0x11) == 0x23 &&
		   pvo_alias_host(100, a, PVO_ALIAS_RKEY, 0) == 0x99 &&
		   pvo_alias_guest_qpn(100, a, 0x23) == 0x11,
	       "guest -> host for both kinds (key 0 included), host QPN -> "
	       "guest for receives");
	tap_ok(pvo_alias_host(100, a, PVO_ALIAS_RKEY, 0x11) == 0x11 &&
		   pvo_alias_host(200, a, PVO_ALIAS_QPN, 0x11) == 0x11 &&
		   pvo_alias_host(100, c, PVO_ALIAS_QPN, 0x11) == 0x11,
	       "kinds, tenants and VMs are apart: no pair, the same number");
	tap_ok(pvo_alias_add(100, a, 9, PVO_ALIAS_QPN, 0x11, 0x77, 16) ==
		       PVO_ALIAS_STALE &&
		   pvo_alias_host(100, a, PVO_ALIAS_QPN, 0x11) == 0x23,
	       "an older move's pair is stale and changes nothing");
	tap_ok(pvo_alias_add(100, a, 11, PVO_ALIAS_QPN, 0x11, 0x55, 16) ==
		       PVO_ALIAS_ADDED &&
		   pvo_alias_host(100, a, PVO_ALIAS_QPN, 0x11) == 0x55 &&
		   pvo_alias_host(100, a, PVO_ALIAS_RKEY, 0) == 0 &&
		   pvo_alias_guest_qpn(100, a, 0x23) == 0x23,
	       "the next move's table replaces the last one's");
	tap_ok(pvo_alias_moved(100, a, 12) == PVO_ALIAS_ADDED &&
		   pvo_alias_host(100, a, PVO_ALIAS_QPN, 0x11) == 0x11 &&
		   pvo_alias_moved(100, a, 11) == PVO_ALIAS_STALE &&
		   pvo_alias_gen(100, a) == 12 && pvo_alias_gen(200, a) == 0,
	       "a newer move with no pair leaves none of the last one's; an "
	       "older one is stale; the VM's generation is the newer one's");
	for (i = 0; i < 20; i++)
		if (pvo_alias_add(100, c, 1, PVO_ALIAS_RKEY, i, i + 1000, 16) !=
		    (i < 16 ? PVO_ALIAS_ADDED : PVO_ALIAS_FULL))
			ok = false;
	pvo_alias_count(&vms, &pairs);
	tap_ok(ok && vms == 2 && pairs == 16 &&
		   pvo_alias_add(100, c, 1, PVO_ALIAS_RKEY, 3, 5, 16) ==
		       PVO_ALIAS_ADDED &&
		   pvo_alias_host(100, c, PVO_ALIAS_RKEY, 3) == 5,
	       "a VM's pairs stop at its bound (a known one still changes): "
	       "%u tables, %lu pairs",
	       vms, pairs);
	pvo_alias_forget(100, a);
	tap_ok(pvo_alias_host(100, a, PVO_ALIAS_QPN, 0x11) == 0x11 &&
		   pvo_alias_gen(100, a) == 0 && pvo_alias_any(),
	       "a VM forgotten translates nothing, and has no generation");
	pvo_alias_clear();
	pvo_alias_count(&vms, &pairs);
	tap_ok(!pvo_alias_any() && vms == 0 && pairs == 0,
	       "cleared: no table, no pair");
}

int main(void)
{
	codec();
	refusals();
	signed_but_wrong();
	tables();
	return tap_done();
}
