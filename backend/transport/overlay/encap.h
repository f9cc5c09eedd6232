/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * VXLAN encapsulation of RoCEv2 (RFC 7348): the 8-byte VXLAN header with
 * the tenant's VNI, then an inner Ethernet frame (no VLAN tag) holding an
 * IPv4 / UDP (port 4791) packet. The outer IP and UDP headers belong to
 * the host's UDP socket. Encoding writes the inner headers with a correct
 * IPv4 checksum; decoding checks every field a receiver relies on.
 */
#ifndef PVO_ENCAP_H
#define PVO_ENCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PVO_VXLAN_PORT 4789
#define PVO_VXLAN_LEN 8
#define PVO_ETH_LEN 14
#define PVO_IP4_LEN 20
#define PVO_UDP_LEN 8
/* VXLAN .. inner UDP: what precedes the BTH in a datagram */
#define PVO_ENCAP_LEN (PVO_VXLAN_LEN + PVO_ETH_LEN + PVO_IP4_LEN + PVO_UDP_LEN)
#define PVO_ENCAP_IP_OFF (PVO_VXLAN_LEN + PVO_ETH_LEN)

/* The VNI of a VXLAN header (at least PVO_VXLAN_LEN bytes). */
static inline uint32_t pvo_vxlan_vni(const uint8_t *vxlan)
{
	return (uint32_t)vxlan[4] << 16 | (uint32_t)vxlan[5] << 8 | vxlan[6];
}

/* The inner addressing of one packet; IPv4 addresses in network order. */
struct pvo_inner {
	uint32_t vni;
	uint8_t dmac[6], smac[6];
	uint32_t sip, dip;
	uint8_t tos, ttl;
	uint16_t ip_id;
	uint16_t sport; /* inner UDP source port (per-QP entropy) */
	uint16_t dport; /* decode: the inner UDP destination port */
};

/*
 * Writes VXLAN / Ethernet / IPv4 / UDP for roce_len bytes of RoCE (BTH to
 * ICRC inclusive) into buf (PVO_ENCAP_LEN bytes).
 */
void pvo_encap_write(uint8_t *buf, const struct pvo_inner *in, size_t roce_len);

/*
 * Makes a datagram of the roce_len bytes of RoCE headers and payload at
 * buf + PVO_ENCAP_LEN: the encapsulation in front, the ICRC behind (room
 * for PVO_ROCE_ICRC_LEN more bytes). Returns the datagram's length.
 */
size_t pvo_encap_seal(uint8_t *buf, const struct pvo_inner *in,
		      size_t roce_len);

enum pvo_encap_error {
	PVO_ENCAP_OK,
	PVO_ENCAP_SHORT,      /* shorter than the headers */
	PVO_ENCAP_VXLAN,      /* VXLAN flags: no valid VNI */
	PVO_ENCAP_NOT_IPV4,   /* inner EtherType (incl. ARP, VLAN) */
	PVO_ENCAP_BAD_IP,     /* version, IHL, length, fragment, checksum */
	PVO_ENCAP_NOT_ROCE,   /* not UDP to port 4791 */
	PVO_ENCAP_BAD_UDP,    /* UDP length */
};

/*
 * Parses a received datagram of len bytes. On success fills *in and
 * points *roce at the BTH, with *roce_len bytes up to and including the
 * ICRC (trailing Ethernet padding removed).
 */
enum pvo_encap_error pvo_encap_parse(const uint8_t *buf, size_t len,
				     struct pvo_inner *in,
				     const uint8_t **roce, size_t *roce_len);

/* The IPv4 header checksum of a 20-byte header (checksum field as is). */
uint16_t pvo_ip4_csum(const uint8_t *hdr);

#endif
