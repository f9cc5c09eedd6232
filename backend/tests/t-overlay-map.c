// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The overlay mapping table's ingress rules (pvo_map_ingress) and aging
 * (pvo_map_expire): who may send from where, what is learned, when a
 * learned sender may move, when it is forgotten; which origin wins over
 * which (configured and managed > EVPN > announced).
 */
#include <arpa/inet.h>
#include <string.h>

#include "overlay_map.h"
#include "tap.h"

#define S 1000000ull /* microseconds per second */

static struct pvo_map_entry at(const char *ip, const char *vtep)
{
	struct pvo_map_entry e = { .vni = 7, .port = 4789 };

	e.ip = inet_addr(ip);
	e.vtep.s_addr = inet_addr(vtep);
	memcpy(e.mac, (uint8_t[]){ 0x52, 0x54, 0, 0, 0, 1 }, 6);
	return e;
}

/* The caller's side of the rules: a fixed answer and a set clock. */
struct rules_ctx {
	bool learn;
	uint64_t now;
};

static bool may_learn(const struct pvo_map_entry *seen, void *ctx)
{
	return ((struct rules_ctx *)ctx)->learn;
}

static uint64_t now_us(void *ctx)
{
	return ((struct rules_ctx *)ctx)->now;
}

/* pvo_map_ingress with may_learn = learn at time now, move-s 30 */
static enum pvo_map_verdict ingress(const struct pvo_map_entry *seen,
				    bool learn, uint64_t now)
{
	struct rules_ctx c = { learn, now };
	const struct pvo_map_rules r = { may_learn, now_us, &c, 30 * S };

	return pvo_map_ingress(seen, &r);
}

static const char *vtep_of(const char *ip)
{
	struct pvo_map_entry e;

	return pvo_map_get(7, inet_addr(ip), &e) ? inet_ntoa(e.vtep) : "none";
}

int main(void)
{
	struct pvo_map_entry cfg = at("10.0.0.2", "192.0.2.2");
	struct pvo_map_entry seen, got;
	unsigned int i;

	tap_plan(23);
	cfg.origin = PVO_MAP_CONFIG;
	pvo_map_set(&cfg);

	seen = at("10.0.0.2", "192.0.2.2");
	tap_is(ingress(&seen, false, 100 * S), PVO_MAP_OK,
	       "a configured sender from its VTEP passes, learning or not");
	seen = at("10.0.0.2", "192.0.2.99");
	tap_is(ingress(&seen, true, 100 * S),
	       PVO_MAP_WRONG_VTEP,
	       "a configured sender from another VTEP: wrong VTEP, even "
	       "where learning is allowed");
	tap_ok(!strcmp(vtep_of("10.0.0.2"), "192.0.2.2"),
	       "... and the configured entry is unchanged");

	seen = at("10.0.0.3", "192.0.2.3");
	tap_is(ingress(&seen, false, 100 * S),
	       PVO_MAP_UNKNOWN_SRC,
	       "an unknown sender where learning is not allowed: unknown");
	tap_ok(!pvo_map_get(7, seen.ip, &got), "... and it is not learned");
	tap_is(ingress(&seen, true, 100 * S), PVO_MAP_OK,
	       "an unknown sender from a VTEP that may be learned: passes");
	tap_ok(pvo_map_get(7, seen.ip, &got) &&
		       got.origin == PVO_MAP_LEARNED,
	       "... and is learned");

	seen = at("10.0.0.3", "192.0.2.4");
	tap_is(ingress(&seen, true, 120 * S),
	       PVO_MAP_WRONG_VTEP,
	       "a learned sender from another VTEP 20 s after its last "
	       "packet: wrong VTEP (move-s 30)");
	seen = at("10.0.0.3", "192.0.2.3");
	tap_is(ingress(&seen, false, 125 * S), PVO_MAP_OK,
	       "a packet from its own VTEP refreshes it");
	seen = at("10.0.0.3", "192.0.2.4");
	tap_is(ingress(&seen, false, 200 * S),
	       PVO_MAP_WRONG_VTEP,
	       "silent long enough, but the new VTEP may not be learned: "
	       "wrong VTEP");
	tap_is(ingress(&seen, true, 200 * S), PVO_MAP_OK,
	       "silent for 75 s and the new VTEP may be learned: it moves");
	tap_ok(!strcmp(vtep_of("10.0.0.3"), "192.0.2.4"),
	       "... to that VTEP");

	tap_is(pvo_map_expire(400 * S, 300 * S), 0,
	       "aging: a learned entry 200 s silent stays (age 300 s)");
	tap_is(pvo_map_expire(501 * S, 300 * S), 1,
	       "aging: 301 s silent, it goes; the configured entry stays");

	for (i = 0; i < PVO_MAP_MAX_LEARNED; i++) {
		struct in_addr a = { htonl(0x0a100000 + i) };

		seen = at(inet_ntoa(a), "192.0.2.5");
		ingress(&seen, true, 600 * S);
	}
	seen = at("10.99.0.1", "192.0.2.5");
	tap_is(ingress(&seen, true, 600 * S),
	       PVO_MAP_UNKNOWN_SRC,
	       "a full table of learned entries learns no more: unknown");
	pvo_map_clear();

	/* EVPN: what the control plane says, and nobody else */
	seen = at("10.0.1.1", "192.0.2.10");
	seen.origin = PVO_MAP_EVPN;
	tap_ok(pvo_map_set(&seen), "an EVPN entry is added");
	seen = at("10.0.1.1", "192.0.2.11");
	tap_is(ingress(&seen, true, 700 * S), PVO_MAP_WRONG_VTEP,
	       "a datagram for an EVPN-mapped address from a VTEP EVPN does "
	       "not name for it: wrong VTEP, even where learning is allowed");
	seen.origin = PVO_MAP_MOVED;
	tap_ok(!pvo_map_set(&seen) &&
		       !strcmp(vtep_of("10.0.1.1"), "192.0.2.10"),
	       "an announcement does not move an EVPN entry");
	seen.origin = PVO_MAP_EVPN;
	tap_ok(pvo_map_set(&seen) &&
		       !strcmp(vtep_of("10.0.1.1"), "192.0.2.11"),
	       "EVPN moves its own entry");
	tap_ok(!pvo_map_del_origin(7, seen.ip, PVO_MAP_LEARNED) &&
		       pvo_map_get(7, seen.ip, &got),
	       "a removal for another origin leaves it");
	tap_ok(pvo_map_del_origin(7, seen.ip, PVO_MAP_EVPN) &&
		       !pvo_map_get(7, seen.ip, &got),
	       "EVPN's removal removes it");
	cfg = at("10.0.1.2", "192.0.2.2");
	cfg.origin = PVO_MAP_CONFIG;
	pvo_map_set(&cfg);
	seen = at("10.0.1.2", "192.0.2.12");
	seen.origin = PVO_MAP_EVPN;
	tap_ok(!pvo_map_set(&seen) &&
		       !strcmp(vtep_of("10.0.1.2"), "192.0.2.2"),
	       "EVPN does not replace a configured entry");
	tap_ok(!pvo_map_del_origin(7, seen.ip, PVO_MAP_EVPN) &&
		       !strcmp(vtep_of("10.0.1.2"), "192.0.2.2"),
	       "... nor remove it");
	pvo_map_clear();
	return tap_done();
}
