// SPDX-License-Identifier: GPL-2.0-or-later
/* VXLAN / Ethernet / IPv4 / UDP around RoCEv2; see encap.h. */
#include <arpa/inet.h>
#include <endian.h>
#include <string.h>

#include "encap.h"
#include "icrc.h"
#include "roce.h"

#define VXLAN_FLAG_I 0x08
#define ETHERTYPE_IPV4 0x0800
#define IPPROTO_UDP_ 17

uint16_t pvo_ip4_csum(const uint8_t *hdr)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < PVO_IP4_LEN; i += 2)
		if (i != 10)
			sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void pvo_encap_write(uint8_t *buf, const struct pvo_inner *in, size_t roce_len)
{
	uint8_t *eth = buf + PVO_VXLAN_LEN;
	uint8_t *ip = eth + PVO_ETH_LEN;
	uint8_t *udp = ip + PVO_IP4_LEN;
	uint16_t ip_len = PVO_IP4_LEN + PVO_UDP_LEN + roce_len;
	uint16_t udp_len = PVO_UDP_LEN + roce_len;
	uint16_t csum;

	/* VXLAN: I flag, 24 reserved bits, VNI, 8 reserved bits */
	memset(buf, 0, PVO_VXLAN_LEN);
	buf[0] = VXLAN_FLAG_I;
	buf[4] = in->vni >> 16;
	buf[5] = in->vni >> 8;
	buf[6] = in->vni;

	memcpy(eth, in->dmac, 6);
	memcpy(eth + 6, in->smac, 6);
	eth[12] = ETHERTYPE_IPV4 >> 8;
	eth[13] = ETHERTYPE_IPV4 & 0xff;

	ip[0] = 0x45;
	ip[1] = in->tos;
	ip[2] = ip_len >> 8;
	ip[3] = ip_len;
	ip[4] = in->ip_id >> 8;
	ip[5] = in->ip_id;
	ip[6] = 0x40; /* DF */
	ip[7] = 0;
	ip[8] = in->ttl;
	ip[9] = IPPROTO_UDP_;
	memcpy(ip + 12, &in->sip, 4);
	memcpy(ip + 16, &in->dip, 4);
	csum = pvo_ip4_csum(ip);
	ip[10] = csum >> 8;
	ip[11] = csum;

	udp[0] = in->sport >> 8;
	udp[1] = in->sport;
	udp[2] = PVO_ROCE_UDP_PORT >> 8;
	udp[3] = PVO_ROCE_UDP_PORT & 0xff;
	udp[4] = udp_len >> 8;
	udp[5] = udp_len;
	udp[6] = udp[7] = 0; /* no checksum: the ICRC covers the packet */
}

enum pvo_encap_error pvo_encap_parse(const uint8_t *buf, size_t len,
				     struct pvo_inner *in,
				     const uint8_t **roce, size_t *roce_len)
{
	const uint8_t *eth = buf + PVO_VXLAN_LEN;
	const uint8_t *ip = eth + PVO_ETH_LEN;
	const uint8_t *udp = ip + PVO_IP4_LEN;
	size_t ip_len, udp_len;

	memset(in, 0, sizeof(*in));
	if (len < PVO_VXLAN_LEN + PVO_ETH_LEN)
		return PVO_ENCAP_SHORT;
	if (!(buf[0] & VXLAN_FLAG_I))
		return PVO_ENCAP_VXLAN;
	in->vni = pvo_vxlan_vni(buf);
	memcpy(in->dmac, eth, 6);
	memcpy(in->smac, eth + 6, 6);
	if ((eth[12] << 8 | eth[13]) != ETHERTYPE_IPV4)
		return PVO_ENCAP_NOT_IPV4;
	if (len < PVO_ENCAP_LEN)
		return PVO_ENCAP_SHORT;
	/* no options, no fragments, a length that fits the frame */
	ip_len = (size_t)ip[2] << 8 | ip[3];
	if (ip[0] != 0x45 || (ip[6] & 0x3f) || ip[7] ||
	    ip_len < PVO_IP4_LEN + PVO_UDP_LEN ||
	    ip_len > len - PVO_ENCAP_IP_OFF ||
	    pvo_ip4_csum(ip) != ((uint16_t)ip[10] << 8 | ip[11]))
		return PVO_ENCAP_BAD_IP;
	in->tos = ip[1];
	in->ttl = ip[8];
	in->ip_id = (uint16_t)ip[4] << 8 | ip[5];
	memcpy(&in->sip, ip + 12, 4);
	memcpy(&in->dip, ip + 16, 4);
	if (ip[9] != IPPROTO_UDP_)
		return PVO_ENCAP_NOT_ROCE;
	in->sport = (uint16_t)udp[0] << 8 | udp[1];
	in->dport = (uint16_t)udp[2] << 8 | udp[3];
	if (in->dport != PVO_ROCE_UDP_PORT)
		return PVO_ENCAP_NOT_ROCE;
	udp_len = (size_t)udp[4] << 8 | udp[5];
	if (udp_len != ip_len - PVO_IP4_LEN)
		return PVO_ENCAP_BAD_UDP;
	*roce = udp + PVO_UDP_LEN;
	*roce_len = udp_len - PVO_UDP_LEN;
	return PVO_ENCAP_OK;
}

size_t pvo_encap_seal(uint8_t *buf, const struct pvo_inner *in,
		      size_t roce_len)
{
	uint32_t icrc;

	pvo_encap_write(buf, in, roce_len + PVO_ROCE_ICRC_LEN);
	icrc = htole32(pvo_icrc_ipv4(buf + PVO_ENCAP_IP_OFF,
				     PVO_IP4_LEN + PVO_UDP_LEN + roce_len));
	memcpy(buf + PVO_ENCAP_LEN + roce_len, &icrc, 4);
	return PVO_ENCAP_LEN + roce_len + PVO_ROCE_ICRC_LEN;
}
