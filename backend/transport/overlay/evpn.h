/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The map of tenants with control-plane = evpn, read from the kernel:
 * an EVPN daemon (FRR's zebra) installs each remote MAC as a forwarding
 * entry of the tenant's VXLAN device (MAC -> VTEP) and each remote IP as
 * a neighbour entry of its bridge or SVI (IP -> MAC). Together they give
 * the mapping entries (VNI, IP) -> VTEP, MAC (origin evpn), kept in step
 * with rtnetlink's neighbour notifications; the VTEPs they name are the
 * ones that serve the tenant.
 */
#ifndef PVO_EVPN_H
#define PVO_EVPN_H

#include <stdbool.h>
#include <netinet/in.h>

#include "config.h"

/* Entries of one table (FDB or neighbours) of one tenant beyond this are
 * not taken (logged once): the kernel's tables are the operator's, but
 * the back-end's memory stays bounded. */
#define PVO_EVPN_MAX_ENTRIES 65536

/*
 * Reads the tables of every tenant with control-plane = evpn and follows
 * them on the calling loop (thread 0's). False with *err if a device is
 * missing or netlink cannot be read. Nothing done without such tenants.
 */
bool pvo_evpn_start(const struct pvo_daemon_config *cfg, char **err);
void pvo_evpn_stop(void);

/* Whether an entry of t's VXLAN device (a MAC, or the flood list)
 * names VTEP a: then a serves t. Any thread. */
bool pvo_evpn_vtep_serves(const struct pvo_tenant *t, struct in_addr a);

#endif
