/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What this back-end knows of remote host-verbs VMs that moved: the
 * guest of a moved VM keeps the QP numbers and keys it had, its new host
 * device gave its objects others, and the destination's back-end says
 * which (transport/overlay/rebind.c). The host-verbs engine translates
 * a peer's guest identifiers where they meet the host device: an RC / UC
 * QP's destination QPN, a one-sided WQE's rkey, a UD send's remote QPN,
 * and the source QPN of a UD receive. A VM that never moved has no table
 * and costs nothing; the table of a VM that moves again is replaced by
 * its next move's.
 *
 * Every thread may call these: the tables have a lock of their own.
 */
#ifndef PVO_PEER_ALIAS_H
#define PVO_PEER_ALIAS_H

#include <stdbool.h>
#include <stdint.h>

enum pvo_alias_kind {
	PVO_ALIAS_QPN,	/* guest QPN -> host QPN (and back for receives) */
	PVO_ALIAS_RKEY, /* guest key -> host key */
};

enum pvo_alias_verdict {
	PVO_ALIAS_ADDED,
	PVO_ALIAS_STALE, /* an older move's than the table's */
	PVO_ALIAS_FULL,	 /* the VM's table or the tables are full */
};

/* Pairs of a remote VM beyond this (per VM) are not kept. */
#define PVO_ALIAS_MAX_PAIRS (65536u + (1u << 20))
/* Remote VMs with a table beyond this are not added. */
#define PVO_ALIAS_MAX_VMS 65536u

/*
 * The VM (vni, ip: network order) moved with generation gen: a newer
 * generation than its table's starts an empty one (the last move's pairs
 * are gone), the same one keeps it (another part of its message); an
 * older one is stale.
 */
enum pvo_alias_verdict pvo_alias_moved(uint32_t vni, uint32_t ip, uint64_t gen);

/*
 * The move of generation gen gave the VM (vni, ip: network order) the
 * pair guest -> host. A newer generation than its table's starts a new
 * table; an older one is stale. At most max pairs per VM (<=
 * PVO_ALIAS_MAX_PAIRS).
 */
enum pvo_alias_verdict pvo_alias_add(uint32_t vni, uint32_t ip, uint64_t gen,
				     enum pvo_alias_kind kind, uint32_t guest,
				     uint32_t host, uint32_t max);
/* The VM's table goes (it runs here now, or left the tenant's map). */
void pvo_alias_forget(uint32_t vni, uint32_t ip);
void pvo_alias_clear(void);

/* Whether any remote VM has a table: a single load, for the data path. */
bool pvo_alias_any(void);

/* The host identifier of the VM's guest one (itself if the VM has no
 * pair for it). */
uint32_t pvo_alias_host(uint32_t vni, uint32_t ip, enum pvo_alias_kind kind,
			uint32_t guest);
/* The guest QPN of the VM's host QPN (itself without a pair). */
uint32_t pvo_alias_guest_qpn(uint32_t vni, uint32_t ip, uint32_t host_qpn);
/* The generation of the move whose numbers are kept for (vni, ip), 0
 * if none: when it changes, the VM has moved since (to another host, or
 * here). */
uint64_t pvo_alias_gen(uint32_t vni, uint32_t ip);

/* Tables and pairs, for pvo-ctl show. */
void pvo_alias_count(unsigned int *vms, unsigned long *pairs);

#endif
