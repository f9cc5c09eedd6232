/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Datagrams for another thread. The VTEP socket is read by thread 0
 * alone (docs/threads.md); a datagram of a tenant another thread serves
 * is copied into that thread's inbox, a bounded queue, and that thread
 * takes it in as if it had read it from the socket. A full inbox drops
 * the datagram: the sender's retransmission covers it, as it covers a
 * full socket buffer.
 */
#ifndef PVO_HANDOFF_H
#define PVO_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* Datagrams waiting per thread; at most this many copies are held. */
#define PVO_HANDOFF_SLOTS 2048
/* Datagrams one wake-up of the receiving thread takes in. */
#define PVO_HANDOFF_BATCH 256
/* Longer datagrams are not handed over (none of ours is: 9000-byte MTU
 * frames and their VXLAN header fit). */
#define PVO_HANDOFF_MAX_LEN 9216

typedef void (*pvo_handoff_fn)(const uint8_t *buf, size_t len,
			       const struct sockaddr_in *from);

/*
 * On thread i, its loop entered: its inbox, whose datagrams go to input
 * one by one and then to done once per batch. false with *err if the
 * inbox's eventfd cannot be made or watched.
 */
bool pvo_handoff_open(unsigned int i, pvo_handoff_fn input,
		      void (*done)(void), char **err);
/* Drops what waits in thread i's inbox and closes it (its loop entered). */
void pvo_handoff_close(unsigned int i);
/* Any thread: hands a copy of the datagram to thread i; false if its
 * inbox is full or closed (the datagram is dropped). */
bool pvo_handoff_post(unsigned int i, const uint8_t *buf, size_t len,
		      const struct sockaddr_in *from);

#endif
