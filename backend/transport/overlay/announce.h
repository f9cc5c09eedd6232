/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a VM went: after a live migration's switch-over the destination
 * back-end tells the other VTEPs that the VM's (VNI, inner IPv4) is now
 * behind it, so that their mapping tables follow without an operator.
 * The message rides the overlay as a VXLAN frame of its own EtherType.
 * The underlay is not trusted: the message carries an HMAC-SHA256 under
 * the deployment's migration key, names the sender as the new VTEP (a
 * VM can only be moved to where the message came from), and carries a
 * generation (the switch-over's wall-clock time in microseconds, above
 * the VM's previous one) that orders a VM's moves and makes a replay
 * stale.
 */
#ifndef PVO_ANNOUNCE_H
#define PVO_ANNOUNCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define PVO_ANNOUNCE_ETHERTYPE 0x88b5 /* IEEE 802 local experimental */
#define PVO_ANNOUNCE_KEY_MIN 16	      /* bytes of key material */
#define PVO_ANNOUNCE_MAC_LEN 32	      /* HMAC-SHA256 */
/* A generation this far from the receiver's clock is refused. */
#define PVO_ANNOUNCE_WINDOW_US (60ull * 1000000ull)

struct pvo_announce {
	uint32_t vni;
	uint32_t ip; /* inner IPv4, network order */
	uint8_t mac[6];
	struct in_addr vtep; /* the VTEP it is behind now: the sender's */
	uint16_t port;	     /* host order */
	uint64_t gen;
};

/* The datagram (VXLAN header onwards) into buf; its length, or 0 if it
 * does not fit. */
size_t pvo_announce_write(uint8_t *buf, size_t cap,
			  const struct pvo_announce *a, const uint8_t *key,
			  size_t keylen);

enum pvo_announce_verdict {
	PVO_ANNOUNCE_OK,
	PVO_ANNOUNCE_NOT_ONE,	/* another EtherType: not for this parser */
	PVO_ANNOUNCE_MALFORMED, /* length, magic, version, VNI or MAC */
	PVO_ANNOUNCE_BAD_MAC,	/* authentication failed (or no key) */
};

/* Checks a received datagram (VXLAN header onwards). */
enum pvo_announce_verdict pvo_announce_parse(const uint8_t *buf, size_t len,
					     const uint8_t *key, size_t keylen,
					     struct pvo_announce *a);

/* The channel's VXLAN and inner Ethernet headers (broadcast from mac, the
 * channel's EtherType) into buf; where the body goes. */
uint8_t *pvo_announce_frame(uint8_t *buf, uint32_t vni, const uint8_t *mac);

/* The HMAC-SHA256 of len bytes of body under key, into out (the
 * channel's other messages sign the same way: rebind.h). */
void pvo_announce_sign(const uint8_t *body, size_t len, const uint8_t *key,
		       size_t keylen, uint8_t *out);
/* Whether the PVO_ANNOUNCE_MAC_LEN bytes after body's len are its HMAC
 * under key (compared in constant time); false without a key. */
bool pvo_announce_signed(const uint8_t *body, size_t len, const uint8_t *key,
			 size_t keylen);

#endif
