/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Telling peers where a migrated VM went, and following it (moves.c). */
#ifndef PVO_MOVES_H
#define PVO_MOVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "net_stats.h"

struct pvo_vm;

/* The VM was migrated in: announce its VTEP (now and twice later). */
void pvo_overlay_announce(struct pvo_vm *vm);

/* A failed migration stopped the VM's connections: the rebind offer
 * alone goes to its peers (now and twice later). */
void pvo_overlay_offer(struct pvo_vm *vm);

/* A received announcement (VXLAN header onwards) from a VTEP. It is
 * followed only from a VTEP that serves its tenant (overlay.c, [tenant]
 * peers) and names itself. PVO_DROP_COUNT when the mapping follows,
 * else the reason to drop it. */
enum pvo_drop pvo_overlay_moves_input(const uint8_t *buf, size_t len,
				      const struct sockaddr_in *from);

/* A received rebind message (rebind_msg.h) from a VTEP: an offer's
 * pairs are kept (peer_alias.h) if its sender serves the tenant (or is
 * the VTEP EVPN names) and is where the map has the VM, which is not
 * served here. PVO_DROP_COUNT when taken, else why it is dropped. */
enum pvo_drop pvo_overlay_rebind_input(const uint8_t *buf, size_t len,
				       const struct sockaddr_in *from);

/* (vni, ip) is behind vtep now, as how ("announced", "EVPN names it")
 * says: a VM served here that is frozen is the source of that move and
 * is marked moved away (local peers reach it over the overlay). False,
 * logged, if it runs here: the caller keeps it here. */
bool pvo_overlay_vm_elsewhere(uint32_t vni, uint32_t ip, struct in_addr vtep,
			      const char *how);

#endif
