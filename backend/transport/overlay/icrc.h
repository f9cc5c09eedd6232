/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RoCEv2 invariant CRC (IBTA Annex A17.3.3): CRC-32 (the Ethernet
 * polynomial, reflected) over a masked copy of the inner IP and UDP
 * headers, the BTH with its reserved byte masked, the rest of the
 * headers, the payload and the pad. The fields a router may change (TOS,
 * TTL, IP checksum, UDP checksum) count as all ones, and a masked 8-byte
 * LRH is folded into the seed.
 */
#ifndef PVO_ICRC_H
#define PVO_ICRC_H

#include <stddef.h>
#include <stdint.h>

/* Raw reflected CRC-32 update (no pre- or post-inversion): with
 * carry-less multiplication where the CPU has it, else by tables. */
uint32_t pvo_crc32_le(uint32_t crc, const void *buf, size_t len);
/* The same, always by tables (the reference the tests compare with). */
uint32_t pvo_crc32_le_table(uint32_t crc, const void *buf, size_t len);

/*
 * ICRC of an inner IPv4 packet of len bytes (20-byte IP header, UDP
 * header, BTH ..., pad), not counting the 4 ICRC bytes that follow. The
 * result goes on the wire as little-endian bytes (as rxe writes it).
 */
uint32_t pvo_icrc_ipv4(const uint8_t *ip, size_t len);

#endif
