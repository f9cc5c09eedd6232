/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vhost-user server side of one VM: the unix socket QEMU connects to, and
 * the libvhost-user device while a front-end is connected
 * (vhost_dev.h). Verbs objects reach their queues through vm->queues,
 * which this side sets, so only vhost/ includes libvhost-user.
 */
#ifndef PVO_VHOST_H
#define PVO_VHOST_H

#include <stdbool.h>

#include "config.h"
#include "guest_mem.h"
#include "vm.h"

/* Bind and listen on the VM's socket path (given dc's socket-group). On
 * failure returns false with a message in *err (g_free). */
bool pvo_vhost_listen(struct pvo_vm *vm, const struct pvo_daemon_config *dc,
		      char **err);
/* Drop the connection (if any), stop listening and remove the socket. */
void pvo_vhost_close(struct pvo_vm *vm);

/* Serves a front-end connected on conn (on_accept's second half; the
 * fuzz harness hands it one end of a socket pair). Closes conn and
 * returns false if the session cannot be set up. */
bool pvo_vhost_serve(struct pvo_vm *vm, int conn);

/* The VM's queues as verbs objects reach them (vm->queues), set while
 * the VM is served; exported for tests that play a front-end. */
extern const struct pvo_vm_queues pvo_vhost_queues;
/* Its guest RAM as mem/ reaches it (vm->gmem.ops, vhost_mem.c), set
 * likewise. */
extern const struct pvo_gmem_ops pvo_vhost_gmem_ops;

#endif
