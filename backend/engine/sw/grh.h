/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The 40 bytes a UD receive buffer starts with: for RoCEv2, the IP header
 * of the packet. IPv4 (IPv4-mapped source GID): 20 zero bytes, then the
 * IPv4 header with a valid checksum, as ib_core expects to parse it; IPv6:
 * the IPv6 header.
 */
#ifndef PVO_GRH_H
#define PVO_GRH_H

#include <stdbool.h>
#include <stdint.h>

#define PVO_GRH_LEN 40

/* RoCEv2 headers after IP in a UD packet: UDP 8 + BTH 12 + DETH 8, and
 * the ICRC 4 after the payload. */
#define PVO_ROCE_UD_OVERHEAD (8 + 12 + 8 + 4)

bool pvo_gid_is_v4mapped(const uint8_t gid[16]);

/* Fills grh and returns PVO_NET_IPV4 or PVO_NET_IPV6. */
uint8_t pvo_grh_build(uint8_t grh[PVO_GRH_LEN], const uint8_t sgid[16],
		      const uint8_t dgid[16], uint8_t traffic_class,
		      uint32_t flow_label, uint8_t hop_limit,
		      uint32_t payload_len);

/* Internet checksum of an IPv4 header (20 bytes, checksum field as is). */
uint16_t pvo_ipv4_csum(const uint8_t hdr[20]);

#endif
