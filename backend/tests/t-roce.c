// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The overlay's wire codec: RoCEv2 headers (roce.c), the ICRC (icrc.c) and
 * the VXLAN / Ethernet / IPv4 / UDP encapsulation (encap.c). Round trips
 * for every opcode, the ICRC's masked fields, and rejection of truncated,
 * padded-wrong, fragmented, mis-addressed and corrupted packets.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <string.h>

#include "encap.h"
#include "icrc.h"
#include "roce.h"
#include "tap.h"
#include "transport.h" /* pvo_psn_diff */

static uint8_t pkt[PVO_ENCAP_LEN + PVO_ROCE_MAX_HDRS + 4096 + 8];

/* Builds a whole datagram: encapsulation, headers of h, len payload
 * bytes, pad, ICRC. Returns its length. */
static size_t build(struct pvo_roce_hdr *h, size_t len)
{
	struct pvo_inner in = { .vni = 0x123456, .ttl = 64, .tos = 0x68,
				.sport = 0xc123, .ip_id = 7 };
	uint8_t *roce = pkt + PVO_ENCAP_LEN;
	size_t hl, i, rl;
	uint32_t icrc;

	memcpy(in.smac, "\x52\x54\x00\x00\x00\x01", 6);
	memcpy(in.dmac, "\x52\x54\x00\x00\x00\x02", 6);
	in.sip = htonl(0x0a000001);
	in.dip = htonl(0x0a000002);
	h->pad = (4 - (len & 3)) & 3;
	hl = pvo_roce_encode(roce, h);
	for (i = 0; i < len; i++)
		roce[hl + i] = (uint8_t)(i * 7 + 3);
	memset(roce + hl + len, 0, h->pad);
	rl = hl + len + h->pad;
	pvo_encap_write(pkt, &in, rl + 4);
	icrc = htole32(pvo_icrc_ipv4(pkt + PVO_ENCAP_IP_OFF, 28 + rl));
	memcpy(roce + rl, &icrc, 4);
	return PVO_ENCAP_LEN + rl + 4;
}

static bool icrc_ok(size_t len)
{
	uint32_t got;

	memcpy(&got, pkt + len - 4, 4);
	return le32toh(got) ==
	       pvo_icrc_ipv4(pkt + PVO_ENCAP_IP_OFF,
			     len - PVO_ENCAP_IP_OFF - 4);
}

/* Every length across the 16- and 64-byte fold boundaries, three
 * alignments, random seeds: the fast path against the reference. */
static bool crc_paths_agree(void)
{
	static uint8_t b[4300];
	unsigned int i, len, off;
	uint32_t seed = 0x12345678;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 131 + (i >> 7));
	for (len = 0; len <= 4200; len++)
		for (off = 0; off < 3; off++) {
			seed = seed * 1664525 + 1013904223;
			if (pvo_crc32_le(seed, b + off, len) !=
			    pvo_crc32_le_table(seed, b + off, len)) {
				printf("# CRC paths differ: len %u off %u\n",
				       len, off);
				return false;
			}
		}
	return true;
}

int main(void)
{
	static const uint8_t ff[8] = { 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff };
	struct pvo_roce_hdr h, d;
	struct pvo_inner in;
	const uint8_t *roce;
	size_t len, rl;
	unsigned int op, bad = 0;

	tap_plan(25);

	/* the ICRC seed is the CRC of a masked (all ones) LRH */
	tap_ok(pvo_crc32_le(0xffffffff, ff, 8) == 0xdebb20e3,
	       "CRC-32 of 8 bytes of 0xff from all ones is 0xdebb20e3");
	tap_ok(~pvo_crc32_le(0xffffffff, "123456789", 9) == 0xcbf43926,
	       "CRC-32 check value of \"123456789\" is 0xcbf43926");
	tap_ok(crc_paths_agree(), "the carry-less multiplication CRC equals the "
				  "table CRC for 0..4200 bytes at any "
				  "alignment and seed");
	{
		/* a long buffer with one bit flipped deep inside */
		static uint8_t big[9000];
		uint32_t c0;

		memset(big, 0xa5, sizeof(big));
		c0 = pvo_crc32_le(0, big, sizeof(big));
		big[7777] ^= 0x10;
		tap_ok(c0 != pvo_crc32_le(0, big, sizeof(big)) &&
			   pvo_crc32_le(0, big, sizeof(big)) ==
			       pvo_crc32_le_table(0, big, sizeof(big)),
		       "one flipped bit 7777 bytes in changes the CRC, and both "
		       "paths agree on it");
	}

	/* every opcode this codec knows round-trips */
	for (op = 0; op < 256; op++) {
		unsigned int f = pvo_roce_flags(op);
		size_t plen = f & PVO_RH_PAYLOAD ? 1001 : 0;

		if (!f)
			continue;
		memset(&h, 0, sizeof(h));
		h.opcode = op;
		h.se = true;
		h.pkey = 0xffff;
		h.dqpn = 0xabcdef;
		h.ackreq = true;
		h.psn = 0xfedcba;
		h.qkey = 0x11223344;
		h.sqpn = 0x123456;
		h.va = 0x0102030405060708ull;
		h.rkey = 0x99887766;
		h.dma_len = 4097;
		h.swap_add = 0x1111222233334444ull;
		h.compare = 0x5555666677778888ull;
		h.syndrome = 0x61;
		h.msn = 0x777777;
		h.orig = 0xdeadbeefcafef00dull;
		h.imm = htobe32(0xa5a5a5a5);
		len = build(&h, plen);
		if (pvo_encap_parse(pkt, len, &in, &roce, &rl) != PVO_ENCAP_OK ||
		    !pvo_roce_decode(roce, rl, &d) || d.opcode != op ||
		    d.dqpn != h.dqpn || d.psn != h.psn || !d.ackreq || !d.se ||
		    d.payload_len != plen || !icrc_ok(len) ||
		    ((f & PVO_RH_RETH) &&
		     (d.va != h.va || d.rkey != h.rkey || d.dma_len != 4097)) ||
		    ((f & PVO_RH_DETH) &&
		     (d.qkey != h.qkey || d.sqpn != h.sqpn)) ||
		    ((f & PVO_RH_ATMETH) &&
		     (d.swap_add != h.swap_add || d.compare != h.compare)) ||
		    ((f & PVO_RH_AETH) &&
		     (d.syndrome != 0x61 || d.msn != 0x777777)) ||
		    ((f & PVO_RH_ATMACK) && d.orig != h.orig) ||
		    ((f & PVO_RH_IMM) && d.imm != h.imm) ||
		    (plen && d.payload[1000] != (uint8_t)(1000 * 7 + 3))) {
			tap_ok(0, "opcode 0x%02x round trip", op);
			bad++;
		}
	}
	tap_ok(!bad, "every supported opcode (RC, UC, UD) encodes and decodes "
		     "with its headers, payload and pad");
	tap_ok(!pvo_roce_flags(0x40) && !pvo_roce_flags(0x15) &&
		   !pvo_roce_flags(0x2c) && !pvo_roce_flags(0x60),
	       "RD, reserved opcodes, UC READ and UD SEND_FIRST are refused");

	/* the ICRC ignores what routers may change, and nothing else */
	memset(&h, 0, sizeof(h));
	h.opcode = PVO_OPC_SEND_ONLY;
	h.pkey = 0xffff;
	h.dqpn = 17;
	len = build(&h, 64);
	pkt[PVO_ENCAP_IP_OFF + 1] ^= 0xfc; /* TOS */
	pkt[PVO_ENCAP_IP_OFF + 8] = 3;	    /* TTL */
	pkt[PVO_ENCAP_IP_OFF + 10] ^= 0x55; /* IP checksum */
	pkt[PVO_ENCAP_IP_OFF + 26] = 0x12;  /* UDP checksum */
	pkt[PVO_ENCAP_LEN + 4] = 0x77;	    /* BTH resv8a */
	tap_ok(icrc_ok(len), "the ICRC masks TOS, TTL, both checksums and "
			     "the BTH reserved byte");
	len = build(&h, 64);
	pkt[PVO_ENCAP_LEN + 12 + 30] ^= 1;
	tap_ok(!icrc_ok(len), "one flipped payload bit breaks the ICRC");
	len = build(&h, 64);
	pkt[PVO_ENCAP_LEN + 7] ^= 1; /* destination QP */
	tap_ok(!icrc_ok(len), "a changed destination QP breaks the ICRC");
	len = build(&h, 64);
	pkt[PVO_ENCAP_IP_OFF + 19] ^= 1; /* inner destination IP */
	tap_ok(!icrc_ok(len), "a changed inner IP address breaks the ICRC");

	/* encapsulation checks */
	len = build(&h, 64);
	tap_ok(pvo_encap_parse(pkt, 20, &in, &roce, &rl) == PVO_ENCAP_SHORT,
	       "a 20-byte datagram is too short");
	pkt[0] = 0;
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) == PVO_ENCAP_VXLAN,
	       "VXLAN without the I flag is refused");
	len = build(&h, 64);
	pkt[PVO_VXLAN_LEN + 12] = 0x08;
	pkt[PVO_VXLAN_LEN + 13] = 0x06; /* ARP */
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) ==
		   PVO_ENCAP_NOT_IPV4,
	       "an inner ARP frame is not RoCE");
	len = build(&h, 64);
	pkt[PVO_ENCAP_IP_OFF + 10] ^= 1;
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) == PVO_ENCAP_BAD_IP,
	       "a wrong inner IPv4 checksum is refused");
	len = build(&h, 64);
	pkt[PVO_ENCAP_IP_OFF + 6] |= 0x20; /* more fragments */
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) == PVO_ENCAP_BAD_IP,
	       "an inner fragment is refused");
	len = build(&h, 64);
	tap_ok(pvo_encap_parse(pkt, len - 8, &in, &roce, &rl) ==
		   PVO_ENCAP_BAD_IP,
	       "an IP length beyond the datagram is refused");
	len = build(&h, 64);
	pkt[PVO_ENCAP_IP_OFF + 23] ^= 1; /* UDP dport */
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) ==
		   PVO_ENCAP_NOT_ROCE,
	       "UDP to another port than 4791 is not RoCE");
	len = build(&h, 64);
	pkt[PVO_ENCAP_IP_OFF + 25] ^= 4; /* UDP length */
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) ==
		   PVO_ENCAP_BAD_UDP,
	       "a UDP length that disagrees with IP is refused");
	len = build(&h, 64);
	tap_ok(pvo_encap_parse(pkt, len, &in, &roce, &rl) == PVO_ENCAP_OK &&
		   in.vni == 0x123456 && in.sip == htonl(0x0a000001) &&
		   in.dip == htonl(0x0a000002) && in.tos == 0x68 &&
		   in.ttl == 64 && !memcmp(in.dmac, "\x52\x54\x00\x00\x00\x02", 6),
	       "a good datagram gives VNI, inner addresses, TOS and TTL");
	/* a GSO run pads a shorter packet with an Ethernet trailer */
	len = build(&h, 64);
	memset(pkt + len, 0xee, 16);
	tap_ok(pvo_encap_parse(pkt, len + 16, &in, &roce, &rl) ==
		       PVO_ENCAP_OK &&
		   roce + rl == pkt + len && icrc_ok(roce + rl - pkt),
	       "an Ethernet trailer behind the inner IP packet is trimmed "
	       "by its IP length, the ICRC is found in front of it");

	/* header checks */
	tap_ok(!pvo_roce_decode(roce, 12, &d), "a bare BTH without ICRC is "
					       "too short");
	h.opcode = PVO_OPC_WRITE_FIRST;
	len = build(&h, 0);
	pvo_encap_parse(pkt, len, &in, &roce, &rl);
	tap_ok(!pvo_roce_decode(roce, rl - 8, &d),
	       "a WRITE_FIRST cut inside its RETH is refused");
	h.opcode = PVO_OPC_SEND_ONLY;
	len = build(&h, 1);
	pvo_encap_parse(pkt, len, &in, &roce, &rl);
	pkt[PVO_ENCAP_LEN + 1] |= 0x0f; /* TVer */
	tap_ok(!pvo_roce_decode(roce, rl, &d), "transport version 15 is "
					       "refused");
	h.opcode = PVO_OPC_ACK;
	len = build(&h, 0);
	pvo_encap_parse(pkt, len, &in, &roce, &rl);
	pkt[PVO_ENCAP_LEN + 1] |= 0x30; /* pad 3, no payload */
	tap_ok(!pvo_roce_decode(roce, rl, &d), "an ACK claiming pad bytes is "
					       "refused");
	tap_ok(pvo_psn_diff(1, 0xffffff) == 2 && pvo_psn_diff(0xffffff, 1) == -2 &&
		   pvo_psn_diff(5, 5) == 0,
	       "PSN distance wraps at 2^24");
	return tap_done();
}
