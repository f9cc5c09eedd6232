// SPDX-License-Identifier: GPL-2.0-or-later
/* Forged underlay datagrams (wire_forge.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "encap.h"
#include "roce.h"
#include "wire_forge.h"

size_t wire_forge(uint8_t *buf, const struct wire_dst *dst, const char *sip,
		  const uint8_t *smac)
{
	struct pvo_inner in = {.vni = dst->vni, .ttl = 64, .sport = 0xc0de};
	struct pvo_roce_hdr h = {0};
	size_t hl;

	memcpy(in.dmac, dst->mac, 6);
	memcpy(in.smac, smac, 6);
	in.sip = inet_addr(sip);
	in.dip = inet_addr(dst->ip);
	h.opcode = PVO_OPC_SEND_ONLY;
	h.pkey = PVO_ROCE_PKEY_DEFAULT;
	h.dqpn = WIRE_MISSING_QPN;
	h.psn = 0x42;
	h.payload_len = 16;
	hl = pvo_roce_encode(buf + PVO_ENCAP_LEN, &h);
	memset(buf + PVO_ENCAP_LEN + hl, 0x5a, 16);
	return pvo_encap_seal(buf, &in, hl + 16);
}

bool wire_inject(const char *from, const char *to, unsigned int port,
		 const struct wire_dst *dst, const char *sip0, unsigned int n,
		 const uint8_t *smac)
{
	struct sockaddr_in la = {.sin_family = AF_INET};
	struct sockaddr_in ta = {.sin_family = AF_INET};
	uint8_t buf[256];
	unsigned int i;
	bool ok;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	la.sin_addr.s_addr = inet_addr(from);
	ta.sin_addr.s_addr = inet_addr(to);
	ta.sin_port = htons(port);
	ok = fd >= 0 && !bind(fd, (struct sockaddr *)&la, sizeof(la));
	for (i = 0; ok && i < n; i++) {
		struct in_addr sip = {inet_addr(sip0)};
		size_t len;

		/* sip0, sip0 + 1, ...: each datagram another sender */
		sip.s_addr = htonl(ntohl(sip.s_addr) + i);
		len = wire_forge(buf, dst, inet_ntoa(sip), smac);
		ok = sendto(fd, buf, len, 0, (struct sockaddr *)&ta,
			    sizeof(ta)) == (ssize_t)len;
	}
	if (fd >= 0)
		close(fd);
	return ok;
}
