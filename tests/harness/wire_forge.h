/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Datagrams a test forges on the underlay: an RC SEND Only in RoCEv2 in
 * VXLAN that passes every receive check up to the sender's (right VNI,
 * inner addresses of a VM, valid ICRC), sent from a socket bound to the
 * outer source address the test chooses. What the back-end then does
 * with it is what the ingress rules say about that sender.
 */
#ifndef WIRE_FORGE_H
#define WIRE_FORGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A QPN the destination VM does not have: a datagram that passes the
 * sender's checks counts drop_unknown_qp. */
#define WIRE_MISSING_QPN 0xfffff0

/* The VM a datagram goes to. */
struct wire_dst {
	uint32_t vni;
	const char *ip;
	uint8_t mac[6];
};

/* The datagram from (sip, smac) to dst's QPN WIRE_MISSING_QPN into buf
 * (256 bytes); its length. */
size_t wire_forge(uint8_t *buf, const struct wire_dst *dst, const char *sip,
		  const uint8_t *smac);

/* Sends n of them from address from (any port) to the VTEP to:port, the
 * i-th from inner source sip0 + i. */
bool wire_inject(const char *from, const char *to, unsigned int port,
		 const struct wire_dst *dst, const char *sip0, unsigned int n,
		 const uint8_t *smac);

#endif
