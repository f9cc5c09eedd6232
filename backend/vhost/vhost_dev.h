/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvhost-user side of a VM's vhost-user server, for vhost/ (and the
 * unit tests that play a connected front-end): everything else goes
 * through vhost.h.
 */
#ifndef PVO_VHOST_DEV_H
#define PVO_VHOST_DEV_H

#include <stdbool.h>
#include <glib.h>
#include "libvhost-user-glib.h"
#include "ctrl.h"
#include "timer.h"

struct pvo_vm;
struct pvo_state_xfer;

/*
 * A front-end session. vm->vhost, from pvo_vhost_listen to
 * pvo_vhost_close, also holds the VM's listening socket; its session is
 * valid while vm->connected. A migration within this back-end adds a
 * second session (vm->incoming), which takes vm->vhost's place at the
 * switch-over (the old one is vm->retired until its QEMU leaves).
 */
struct pvo_vhost {
	struct pvo_vm *vm;
	int listen_fd;
	struct pvo_watch *listen_src;
	GHashTable *kicks;	/* fd -> struct kick_watch: libvhost-user's */
	GSource *drop_src; /* tears the session down after a panic */
	VugDev vug;
	int conn_fd;
	bool dropping;	/* a disconnect is scheduled */
	struct pvo_state_xfer *xfer;	/* device state transfer running */
	GByteArray *loaded;	/* migrated state, applied at ring start */
	struct pvo_timer thaw;	/* unfreezes the VM after its rings start */
	/* the virtio status the front-end set (VHOST_USER_PROTOCOL_F_STATUS):
	 * DRIVER_OK once every ring of a start runs */
	uint8_t status;
	struct pvo_timer ctrl_more; /* control commands left for a turn */
	/* a command that goes on over turns (ctrl.h PVO_CTRL_AGAIN): its
	 * chain, held, and the request it was popped with */
	VuVirtqElement *ctrl_held;
	uint64_t ctrl_req[PVO_CTRL_MAX_MSG / 8];
	size_t ctrl_req_len;
};

/* Whether any ring of the session runs (a migration's save needs none). */
bool pvo_vhost_any_ring_started(struct pvo_vhost *vh);

#endif
