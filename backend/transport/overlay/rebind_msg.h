/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The messages that rebind a moved host-verbs VM's peers
 * (docs/migration.md, "VMs on host verbs"). After the move the VM's guest
 * keeps its QP numbers and keys, while the host device at its new host
 * gave its objects others; the destination back-end tells the peers'
 * back-ends the pairs (guest -> host), and re-targets the connections.
 * The messages ride the announcement channel (announce.h): a VXLAN frame
 * of the same EtherType, an HMAC-SHA256 under the tenant's migration
 * key, the sender's VTEP and the move's generation in the signed body. A
 * message too long for one datagram goes as parts, each signed.
 */
#ifndef PVO_REBIND_MSG_H
#define PVO_REBIND_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "announce.h"

/* What a message is in the exchange of docs/migration.md. */
enum pvo_rebind_kind {
	PVO_REBIND_OFFER = 1, /* destination -> peers: the VM's new numbers */
	PVO_REBIND_ANSWER,    /* peer -> destination */
	PVO_REBIND_READY,     /* destination -> peer */
	PVO_REBIND_GO,	      /* peer -> destination */
	/* the connection ends: the sender cannot rebind it */
	PVO_REBIND_END_BY_PEER,	 /* peer -> destination */
	PVO_REBIND_END_BY_MOVED, /* destination -> peer */
	PVO_REBIND_KIND_MAX = PVO_REBIND_END_BY_MOVED,
};

enum pvo_rebind_type {
	PVO_REBIND_QPN = 1, /* a QP: guest QPN -> host QPN */
	PVO_REBIND_RKEY,    /* an MR with remote rights: guest -> host key */
	PVO_REBIND_CONN,    /* an RC / UC QP connected to a peer VM */
	PVO_REBIND_TYPE_MAX = PVO_REBIND_CONN,
};

struct pvo_rebind_entry {
	uint8_t type;
	uint32_t guest;	   /* the VM's guest QPN or key */
	uint32_t host;	   /* its host QPN or key at the sender */
	uint32_t peer_ip;  /* CONN: the peer VM (network order); else 0 */
	uint32_t peer_qpn; /* CONN: the peer's guest QPN; else 0 */
	uint32_t psn;	   /* CONN: the PSN the kind names; else 0 */
	uint32_t psn2;	   /* CONN, ANSWER: the peer's restart PSN; else 0 */
};

/* Entries per datagram: the frame stays under 1,300 bytes. */
#define PVO_REBIND_MAX_ENTRIES 40

struct pvo_rebind {
	uint8_t kind;
	uint32_t vni;
	uint32_t ip; /* the moved VM (network order) */
	uint8_t mac[6];
	struct in_addr vtep;  /* the sender's */
	uint64_t gen;	      /* the move's (announce.h) */
	uint16_t part, parts; /* this datagram is part of parts (from 0) */
	uint16_t count;
	struct pvo_rebind_entry e[PVO_REBIND_MAX_ENTRIES];
};

/* Whether a datagram (VXLAN header onwards) of the announcement channel
 * is a rebind message rather than an announcement. */
bool pvo_rebind_is_one(const uint8_t *buf, size_t len);

/* The datagram into buf; its length, or 0 if it does not fit, the key is
 * too short, or r is not a message (kind, count, entries). */
size_t pvo_rebind_write(uint8_t *buf, size_t cap, const struct pvo_rebind *r,
			const uint8_t *key, size_t keylen);

/* Checks a received datagram: its length, magic, version, VNI and MAC
 * against the frame's, kind, parts and every entry (types, 24-bit QPNs
 * and PSNs, fields a type has not zero), then its HMAC. */
enum pvo_announce_verdict pvo_rebind_parse(const uint8_t *buf, size_t len,
					   const uint8_t *key, size_t keylen,
					   struct pvo_rebind *r);

#endif
