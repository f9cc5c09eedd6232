/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Management socket (docs/overlay.md): a unix stream socket, one request
 * line per connection, answered with lines ending in "ok" or "error: ...".
 * Only the host can reach it (mode 0600, in the daemon's socket dir).
 * Connections are served from the main loop without blocking it.
 */
#ifndef PVO_MGMT_H
#define PVO_MGMT_H

#include <stdbool.h>

struct pvo_vm;

bool pvo_mgmt_start(const char *path, struct pvo_vm **vms, int n, char **err);
void pvo_mgmt_stop(void);

/* Executes one request line; the answer goes to out (a GString). */
void pvo_mgmt_execute(const char *line, void *out);

#endif
