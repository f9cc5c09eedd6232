/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vhost-user server side of one VM: the unix socket QEMU connects to. */
#ifndef PVO_VHOST_H
#define PVO_VHOST_H

#include <stdbool.h>

#include "vm.h"

/* Bind and listen on the VM's socket path. On failure returns false with a
 * message in *err (g_free). */
bool pvo_vhost_listen(struct pvo_vm *vm, char **err);
/* Drop the connection (if any), stop listening and remove the socket. */
void pvo_vhost_close(struct pvo_vm *vm);

#endif
