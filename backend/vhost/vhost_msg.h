/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vhost-user messages from the front-end, checked before libvhost-user
 * acts on them. libvhost-user trusts counts and sizes in messages (it
 * closes fds it never received, indexes arrays with region counts, asserts
 * on short payloads, exits on EOF); one daemon serves many VMs, so one
 * misbehaving front-end must only lose its own session.
 */
#ifndef PVO_VHOST_MSG_H
#define PVO_VHOST_MSG_H

#include <stdbool.h>
#include "libvhost-user.h"
#include "pvo-device.h"

/* Not in libvhost-user's tables (vhost-user.rst) */
#define PVO_VHOST_USER_PROTOCOL_F_STATUS 16
#define PVO_VHOST_USER_SET_STATUS 39
#define PVO_VHOST_USER_GET_STATUS 40
#define PVO_VHOST_USER_PROTOCOL_F_DEVICE_STATE 19
#define PVO_VHOST_USER_SET_DEVICE_STATE_FD 42
#define PVO_VHOST_USER_CHECK_DEVICE_STATE 43

/*
 * read_msg callback for libvhost-user: the whole message within a
 * deadline, then room for its reply (libvhost-user writes replies
 * blocking), or false; never asserts.
 */
bool pvo_vhost_msg_read(VuDev *dev, int fd, VhostUserMsg *m);

/* False (with *why, g_free) if the message is malformed for its type. */
bool pvo_vhost_msg_valid(VuDev *dev, const VhostUserMsg *m, char **why);

void pvo_vhost_msg_close_fds(VhostUserMsg *m);

/* The request's name, for logs (also those libvhost-user does not know). */
const char *pvo_vhost_msg_name(uint32_t request);

/* Answer GET_CONFIG in place, honouring offset and size. */
void pvo_vhost_msg_get_config(VhostUserMsg *m,
			      void (*fill)(void *opaque, struct pvo_config *c),
			      void *opaque);

/* Turn m into a reply carrying value (GET_* messages). */
int pvo_vhost_msg_reply_u64(VhostUserMsg *m, uint64_t value);

/* Turn m into a failure reply; returns whether a reply is to be sent. */
int pvo_vhost_msg_nack(VhostUserMsg *m);

#endif
