/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vhost-user server side of one VM: the unix socket QEMU connects to, and
 * the libvhost-user device while a front-end is connected
 * (vhost_dev.h). Verbs objects reach their queues through the functions
 * below, so only vhost/ includes libvhost-user.
 */
#ifndef PVO_VHOST_H
#define PVO_VHOST_H

#include <stdbool.h>
#include <stddef.h>

#include "vm.h"

/* Bind and listen on the VM's socket path. On failure returns false with a
 * message in *err (g_free). */
bool pvo_vhost_listen(struct pvo_vm *vm, char **err);
/* Drop the connection (if any), stop listening and remove the socket. */
void pvo_vhost_close(struct pvo_vm *vm);

/* Serves a front-end connected on conn (on_accept's second half; the
 * fuzz harness hands it one end of a socket pair). Closes conn and
 * returns false if the session cannot be set up. */
bool pvo_vhost_serve(struct pvo_vm *vm, int conn);

/* Whether virtqueue q of the connected front-end runs. */
bool pvo_vhost_queue_started(struct pvo_vm *vm, unsigned int q);
/*
 * Copies len bytes into the next buffer the driver posted on queue q:
 * 1 if it went, 0 if the queue does not run or has no buffer, -1 if the
 * buffer was shorter than len (it is given back empty). The driver is
 * told with pvo_vhost_queue_notify.
 */
int pvo_vhost_queue_put(struct pvo_vm *vm, unsigned int q, const void *data,
			size_t len);
void pvo_vhost_queue_notify(struct pvo_vm *vm, unsigned int q);

#endif
