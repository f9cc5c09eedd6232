// SPDX-License-Identifier: GPL-2.0-or-later
/* Rebind messages of moved host-verbs VMs; see rebind_msg.h. */
#include <endian.h>
#include <string.h>

#include "encap.h"
#include "rebind_msg.h"

#define MAGIC "PVOR"
#define VERSION 1
#define QPN_MAX 0xffffffu

/* The signed body: this header, count entries, then the HMAC. */
struct head {
	char magic[4];
	uint8_t version;
	uint8_t kind;
	uint16_t count; /* big-endian, like every field */
	uint32_t vni;
	uint32_t ip; /* network order */
	uint8_t mac[6];
	uint16_t part;
	uint16_t parts;
	uint16_t reserved;
	uint32_t vtep; /* network order */
	uint64_t gen;
} __attribute__((packed));

struct entry {
	uint8_t type;
	uint8_t reserved[3];
	uint32_t guest, host;
	uint32_t peer_ip; /* network order */
	uint32_t peer_qpn, psn, psn2;
} __attribute__((packed));

#define HDRS (PVO_VXLAN_LEN + PVO_ETH_LEN)

static size_t frame_len(unsigned int count)
{
	return HDRS + sizeof(struct head) + count * sizeof(struct entry) +
	       PVO_ANNOUNCE_MAC_LEN;
}

/* An entry's fields are those its type has. */
static bool entry_ok(const struct pvo_rebind_entry *e)
{
	if (e->type < PVO_REBIND_QPN || e->type > PVO_REBIND_TYPE_MAX)
		return false;
	switch (e->type) {
	case PVO_REBIND_QPN:
		return e->guest <= QPN_MAX && e->host <= QPN_MAX &&
		       !e->peer_ip && !e->peer_qpn && !e->psn && !e->psn2;
	case PVO_REBIND_RKEY:
		return !e->peer_ip && !e->peer_qpn && !e->psn && !e->psn2;
	default: /* CONN */
		return e->guest <= QPN_MAX && e->host <= QPN_MAX &&
		       e->peer_ip && e->peer_qpn <= QPN_MAX &&
		       e->psn <= QPN_MAX && e->psn2 <= QPN_MAX;
	}
}

static bool message_ok(const struct pvo_rebind *r)
{
	unsigned int i;

	if (r->kind < PVO_REBIND_OFFER || r->kind > PVO_REBIND_KIND_MAX ||
	    r->count > PVO_REBIND_MAX_ENTRIES || !r->parts ||
	    r->part >= r->parts || r->vni > 0xffffff)
		return false;
	for (i = 0; i < r->count; i++)
		if (!entry_ok(&r->e[i]))
			return false;
	return true;
}

bool pvo_rebind_is_one(const uint8_t *buf, size_t len)
{
	return len >= HDRS + 4 && !memcmp(buf + HDRS, MAGIC, 4);
}

size_t pvo_rebind_write(uint8_t *buf, size_t cap, const struct pvo_rebind *r,
			const uint8_t *key, size_t keylen)
{
	uint8_t *body = buf + HDRS;
	struct head h = {.version = VERSION};
	size_t n = frame_len(r->count), blen;
	unsigned int i;

	if (!message_ok(r) || cap < n || keylen < PVO_ANNOUNCE_KEY_MIN)
		return 0;
	pvo_announce_frame(buf, r->vni, r->mac);
	memcpy(h.magic, MAGIC, 4);
	h.kind = r->kind;
	h.count = htobe16(r->count);
	h.vni = htobe32(r->vni);
	h.ip = r->ip;
	memcpy(h.mac, r->mac, 6);
	h.part = htobe16(r->part);
	h.parts = htobe16(r->parts);
	h.vtep = r->vtep.s_addr;
	h.gen = htobe64(r->gen);
	memcpy(body, &h, sizeof(h));
	for (i = 0; i < r->count; i++) {
		struct entry e = {
		    .type = r->e[i].type,
		    .guest = htobe32(r->e[i].guest),
		    .host = htobe32(r->e[i].host),
		    .peer_ip = r->e[i].peer_ip,
		    .peer_qpn = htobe32(r->e[i].peer_qpn),
		    .psn = htobe32(r->e[i].psn),
		    .psn2 = htobe32(r->e[i].psn2),
		};

		memcpy(body + sizeof(h) + i * sizeof(e), &e, sizeof(e));
	}
	blen = n - HDRS - PVO_ANNOUNCE_MAC_LEN;
	pvo_announce_sign(body, blen, key, keylen, body + blen);
	return n;
}

enum pvo_announce_verdict pvo_rebind_parse(const uint8_t *buf, size_t len,
					   const uint8_t *key, size_t keylen,
					   struct pvo_rebind *r)
{
	const uint8_t *eth = buf + PVO_VXLAN_LEN, *body = buf + HDRS;
	struct head h;
	size_t n;
	unsigned int i;

	if (len < HDRS || (eth[12] << 8 | eth[13]) != PVO_ANNOUNCE_ETHERTYPE)
		return PVO_ANNOUNCE_NOT_ONE;
	if (len < frame_len(0) || !(buf[0] & 0x08))
		return PVO_ANNOUNCE_MALFORMED;
	memcpy(&h, body, sizeof(h));
	r->count = be16toh(h.count);
	n = frame_len(r->count);
	/* Ethernet padding may follow; nothing else */
	if (memcmp(h.magic, MAGIC, 4) || h.version != VERSION ||
	    r->count > PVO_REBIND_MAX_ENTRIES || len < n || len > n + 64 ||
	    be32toh(h.vni) != pvo_vxlan_vni(buf) || memcmp(h.mac, eth + 6, 6) ||
	    h.reserved)
		return PVO_ANNOUNCE_MALFORMED;
	if (!pvo_announce_signed(body, n - HDRS - PVO_ANNOUNCE_MAC_LEN, key,
				 keylen))
		return PVO_ANNOUNCE_BAD_MAC;
	r->kind = h.kind;
	r->vni = be32toh(h.vni);
	r->ip = h.ip;
	memcpy(r->mac, h.mac, 6);
	r->part = be16toh(h.part);
	r->parts = be16toh(h.parts);
	r->vtep.s_addr = h.vtep;
	r->gen = be64toh(h.gen);
	for (i = 0; i < r->count; i++) {
		struct entry e;

		memcpy(&e, body + sizeof(h) + i * sizeof(e), sizeof(e));
		if (e.reserved[0] || e.reserved[1] || e.reserved[2])
			return PVO_ANNOUNCE_MALFORMED;
		r->e[i] = (struct pvo_rebind_entry){
		    .type = e.type,
		    .guest = be32toh(e.guest),
		    .host = be32toh(e.host),
		    .peer_ip = e.peer_ip,
		    .peer_qpn = be32toh(e.peer_qpn),
		    .psn = be32toh(e.psn),
		    .psn2 = be32toh(e.psn2),
		};
	}
	return message_ok(r) ? PVO_ANNOUNCE_OK : PVO_ANNOUNCE_MALFORMED;
}
