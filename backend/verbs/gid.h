/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The VM's GID table and the tenant policy over it: a guest may only install
 * its MAC-derived link-local GID and the GIDs of the IPs the host
 * administrator allowed (IPv4 as ::ffff:a.b.c.d, as RoCEv2 does).
 */
#ifndef PVO_GID_H
#define PVO_GID_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define PVO_GID_TABLE_LEN 16

struct pvo_gid_entry {
	bool valid;
	uint8_t gid[16];
	uint32_t type;
};

struct pvo_gid_table {
	struct pvo_gid_entry e[PVO_GID_TABLE_LEN];
};

/* fe80::/64 with the modified EUI-64 of the MAC, like ib_core's default GID */
void pvo_gid_link_local(const uint8_t mac[6], uint8_t gid[16]);
/* Modified EUI-64 of the MAC, big-endian, used as node GUID */
void pvo_mac_to_eui64(const uint8_t mac[6], uint8_t eui[8]);

bool pvo_gid_allowed(const struct pvo_vm_config *vm, const uint8_t gid[16]);

/* For messages: "::ffff:10.0.0.1" style text into buf (>= 46 bytes). */
const char *pvo_gid_str(const uint8_t gid[16], char *buf, size_t len);

#endif
