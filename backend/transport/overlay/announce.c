// SPDX-License-Identifier: GPL-2.0-or-later
/* Migration announcements; see announce.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "announce.h"
#include "encap.h"

#define MAGIC "PVOM"
#define VERSION 1
#define HMAC_LEN PVO_ANNOUNCE_MAC_LEN

/* The authenticated body, after the inner Ethernet header. */
struct body {
	char magic[4];
	uint8_t version;
	uint8_t reserved[3];
	uint32_t vni; /* big-endian */
	uint32_t ip;  /* network order */
	uint8_t mac[6];
	uint16_t port; /* big-endian */
	uint32_t vtep; /* network order */
	uint64_t gen;  /* big-endian */
} __attribute__((packed));

#define FRAME_LEN (PVO_VXLAN_LEN + PVO_ETH_LEN + sizeof(struct body) + HMAC_LEN)

void pvo_announce_sign(const uint8_t *body, size_t len, const uint8_t *key,
		       size_t keylen, uint8_t *out)
{
	GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, key, keylen);
	gsize n = PVO_ANNOUNCE_MAC_LEN;

	g_hmac_update(h, body, len);
	g_hmac_get_digest(h, out, &n);
	g_hmac_unref(h);
}

bool pvo_announce_signed(const uint8_t *body, size_t len, const uint8_t *key,
			 size_t keylen)
{
	uint8_t want[PVO_ANNOUNCE_MAC_LEN], diff = 0;
	unsigned int i;

	if (keylen < PVO_ANNOUNCE_KEY_MIN)
		return false;
	pvo_announce_sign(body, len, key, keylen, want);
	for (i = 0; i < PVO_ANNOUNCE_MAC_LEN; i++) /* in constant time */
		diff |= want[i] ^ body[len + i];
	return !diff;
}

uint8_t *pvo_announce_frame(uint8_t *buf, uint32_t vni, const uint8_t *mac)
{
	uint8_t *eth = buf + PVO_VXLAN_LEN;

	memset(buf, 0, PVO_VXLAN_LEN);
	buf[0] = 0x08; /* I: the VNI is valid */
	buf[4] = vni >> 16;
	buf[5] = vni >> 8;
	buf[6] = vni;
	memset(eth, 0xff, 6);
	memcpy(eth + 6, mac, 6);
	eth[12] = PVO_ANNOUNCE_ETHERTYPE >> 8;
	eth[13] = PVO_ANNOUNCE_ETHERTYPE & 0xff;
	return eth + PVO_ETH_LEN;
}

size_t pvo_announce_write(uint8_t *buf, size_t cap,
			  const struct pvo_announce *a, const uint8_t *key,
			  size_t keylen)
{
	uint8_t *p = buf + PVO_VXLAN_LEN + PVO_ETH_LEN;
	struct body b = {.version = VERSION};

	if (cap < FRAME_LEN || keylen < PVO_ANNOUNCE_KEY_MIN)
		return 0;
	pvo_announce_frame(buf, a->vni, a->mac);
	memcpy(b.magic, MAGIC, 4);
	b.vni = htobe32(a->vni);
	b.ip = a->ip;
	memcpy(b.mac, a->mac, 6);
	b.port = htobe16(a->port);
	b.vtep = a->vtep.s_addr;
	b.gen = htobe64(a->gen);
	memcpy(p, &b, sizeof(b));
	pvo_announce_sign(p, sizeof(b), key, keylen, p + sizeof(b));
	return FRAME_LEN;
}

enum pvo_announce_verdict pvo_announce_parse(const uint8_t *buf, size_t len,
					     const uint8_t *key, size_t keylen,
					     struct pvo_announce *a)
{
	const uint8_t *eth = buf + PVO_VXLAN_LEN, *p = eth + PVO_ETH_LEN;
	struct body b;
	uint32_t vni;

	if (len < PVO_VXLAN_LEN + PVO_ETH_LEN ||
	    (eth[12] << 8 | eth[13]) != PVO_ANNOUNCE_ETHERTYPE)
		return PVO_ANNOUNCE_NOT_ONE;
	/* Ethernet padding may follow; nothing else */
	if (len < FRAME_LEN || len > FRAME_LEN + 64 || !(buf[0] & 0x08))
		return PVO_ANNOUNCE_MALFORMED;
	memcpy(&b, p, sizeof(b));
	vni = pvo_vxlan_vni(buf);
	if (memcmp(b.magic, MAGIC, 4) || b.version != VERSION ||
	    be32toh(b.vni) != vni || memcmp(b.mac, eth + 6, 6))
		return PVO_ANNOUNCE_MALFORMED;
	if (!pvo_announce_signed(p, sizeof(b), key, keylen))
		return PVO_ANNOUNCE_BAD_MAC;
	a->vni = vni;
	a->ip = b.ip;
	memcpy(a->mac, b.mac, 6);
	a->port = be16toh(b.port);
	a->vtep.s_addr = b.vtep;
	a->gen = be64toh(b.gen);
	return PVO_ANNOUNCE_OK;
}
