/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * UD multicast: a QP's group memberships (ATTACH_MCAST / DETACH_MCAST),
 * and the QPs of a VM that have any, so that a send to a group visits only
 * those. Groups are tenant-scoped like every route: a member of another
 * tenant never sees a datagram, whatever group GID it joined.
 */
#ifndef PVO_MCAST_H
#define PVO_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;
struct pvo_qp;

/* ff00::/8, or an IPv4-mapped 224.0.0.0/4 address */
bool pvo_gid_is_multicast(const uint8_t *gid);

enum pvo_status pvo_cmd_attach_mcast(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, void *resp);
enum pvo_status pvo_cmd_detach_mcast(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, void *resp);

/* The QP is going away: it leaves every group. */
void pvo_mcast_forget_qp(struct pvo_qp *qp);

/* Whether the QP is a member of the group. */
bool pvo_mcast_member(const struct pvo_qp *qp, const uint8_t *gid);

#endif
