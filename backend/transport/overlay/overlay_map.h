/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The overlay mapping table: (VNI, inner IPv4) -> the VTEP a VM is behind
 * and its inner MAC. Entries come from the config file, the management
 * socket and from validated received packets; a learned entry never
 * replaces one the administrator set. The table also decides whether a
 * received packet's sender may be where it came from (pvo_map_ingress).
 * Every thread may call any of these: the table has a lock of its own.
 */
#ifndef PVO_OVERLAY_MAP_H
#define PVO_OVERLAY_MAP_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

enum pvo_map_origin {
	PVO_MAP_CONFIG,
	PVO_MAP_MGMT,
	PVO_MAP_LEARNED,
	PVO_MAP_MOVED, /* a migrated VM's announcement (moves.c) */
	PVO_MAP_EVPN,  /* the kernel's tables an EVPN daemon keeps (evpn.c) */
};

struct pvo_map_entry {
	uint32_t vni;
	uint32_t ip;	      /* inner IPv4, network order */
	struct in_addr vtep;
	uint16_t port;	      /* host order */
	uint8_t mac[6];
	enum pvo_map_origin origin;
	uint64_t last_us; /* learned: when a packet last came from it */
	uint64_t gen;	  /* moved: the announcement's generation */
};

/* Learned entries beyond this are not added (spoofed floods). */
#define PVO_MAP_MAX_LEARNED 65536

/* Adds or replaces; false if a learned entry would replace a set one,
 * an EVPN one a configured or managed one, an announced one an EVPN
 * one, or the table of learned entries is full. */
bool pvo_map_set(const struct pvo_map_entry *e);
bool pvo_map_del(uint32_t vni, uint32_t ip);
/* Removes the entry of (vni, ip) only if it has that origin. */
bool pvo_map_del_origin(uint32_t vni, uint32_t ip, enum pvo_map_origin o);
/* A copy of the entry of (vni, ip) in *out; false if there is none. */
bool pvo_map_get(uint32_t vni, uint32_t ip, struct pvo_map_entry *out);
/* Copies of the entries in a stable order (VNI, IP): a GPtrArray the
 * caller frees with them. */
void *pvo_map_sorted(void);
void pvo_map_clear(void);
const char *pvo_map_origin_name(enum pvo_map_origin o);

enum pvo_map_verdict {
	PVO_MAP_OK,		/* the sender is behind the VTEP it came from */
	PVO_MAP_WRONG_VTEP,	/* its (VNI, IP) is mapped to another VTEP */
	PVO_MAP_UNKNOWN_SRC,	/* not mapped, and may not be learned */
};

/* What pvo_map_ingress asks of its caller, and only when the entry of
 * the sender does not settle the packet alone. */
struct pvo_map_rules {
	/* the sender may be learned (its tenant learns, its VTEP is a peer) */
	bool (*may_learn)(const struct pvo_map_entry *seen, void *ctx);
	uint64_t (*now_us)(void *ctx); /* a monotonic clock */
	void *ctx;
	uint64_t move_us; /* silence before a learned sender may move */
};

/*
 * A packet passed the receive checks; seen holds its (VNI, inner source
 * IP), the outer source address (vtep, port) and the inner source MAC.
 * A configured or managed entry must name that VTEP. A learned entry is
 * refreshed from its own VTEP, and moves to another one only if it has
 * been silent for move_us and the sender may be learned. Without an
 * entry the sender is learned if it may be and the table has room.
 */
enum pvo_map_verdict pvo_map_ingress(const struct pvo_map_entry *seen,
				     const struct pvo_map_rules *r);

/* Removes learned entries silent for age_us or longer; returns how many. */
unsigned int pvo_map_expire(uint64_t now_us, uint64_t age_us);

#endif
