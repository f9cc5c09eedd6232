// SPDX-License-Identifier: GPL-2.0-or-later
/* GRH / IP header of UD receives; see grh.h. */
#include <string.h>

#include "grh.h"
#include "pvo-device.h"

bool pvo_gid_is_v4mapped(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0,
					    0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

uint16_t pvo_ipv4_csum(const uint8_t hdr[20])
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

uint8_t pvo_grh_build(uint8_t grh[PVO_GRH_LEN], const uint8_t sgid[16],
		      const uint8_t dgid[16], uint8_t traffic_class,
		      uint32_t flow_label, uint8_t hop_limit,
		      uint32_t payload_len)
{
	uint32_t l4 = payload_len + PVO_ROCE_UD_OVERHEAD;
	uint8_t *ip;

	memset(grh, 0, PVO_GRH_LEN);
	if (pvo_gid_is_v4mapped(sgid) && pvo_gid_is_v4mapped(dgid)) {
		ip = grh + 20;
		ip[0] = 0x45; /* version 4, 5 words */
		ip[1] = traffic_class;
		put_be16(ip + 2, (uint16_t)(20 + l4));
		put_be16(ip + 6, 0x4000); /* don't fragment */
		ip[8] = hop_limit;
		ip[9] = 17; /* UDP */
		memcpy(ip + 12, sgid + 12, 4);
		memcpy(ip + 16, dgid + 12, 4);
		put_be16(ip + 10, pvo_ipv4_csum(ip));
		return PVO_NET_IPV4;
	}
	grh[0] = 0x60 | traffic_class >> 4;
	grh[1] = (uint8_t)(traffic_class << 4) | ((flow_label >> 16) & 0xf);
	put_be16(grh + 2, (uint16_t)flow_label);
	put_be16(grh + 4, (uint16_t)l4);
	grh[6] = 17; /* next header: UDP */
	grh[7] = hop_limit;
	memcpy(grh + 8, sgid, 16);
	memcpy(grh + 24, dgid, 16);
	return PVO_NET_IPV6;
}
