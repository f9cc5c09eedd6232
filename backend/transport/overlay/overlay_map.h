/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The overlay mapping table: (VNI, inner IPv4) -> the VTEP a VM is behind
 * and its inner MAC. Entries come from the config file, the management
 * socket and from validated received packets; a learned entry never
 * replaces one the administrator set.
 */
#ifndef PVO_OVERLAY_MAP_H
#define PVO_OVERLAY_MAP_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

enum pvo_map_origin { PVO_MAP_CONFIG, PVO_MAP_MGMT, PVO_MAP_LEARNED };

struct pvo_map_entry {
	uint32_t vni;
	uint32_t ip;	      /* inner IPv4, network order */
	struct in_addr vtep;
	uint16_t port;	      /* host order */
	uint8_t mac[6];
	enum pvo_map_origin origin;
};

/* Learned entries beyond this are not added (spoofed floods). */
#define PVO_MAP_MAX_LEARNED 65536

/* Adds or replaces; false if a learned entry would replace a set one
 * or the table of learned entries is full. */
bool pvo_map_set(const struct pvo_map_entry *e);
bool pvo_map_del(uint32_t vni, uint32_t ip);
const struct pvo_map_entry *pvo_map_find(uint32_t vni, uint32_t ip);
/* Entries in a stable order (VNI, IP): a GPtrArray the caller frees. */
void *pvo_map_sorted(void);
void pvo_map_clear(void);
const char *pvo_map_origin_name(enum pvo_map_origin o);

#endif
