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

#include <glib.h>

/* What the daemon lets the socket see and do besides the mapping table;
 * it stays the daemon's and outlives the socket. */
struct pvo_mgmt_daemon {
	GPtrArray *vms;	    /* struct pvo_vm *: the VMs of the config */
	GPtrArray *removed; /* ... removed by a reload, front-end connected */
	/* show's "config" and "tenant" lines */
	void (*show)(GString *o);
	/* reload: false with *err if nothing changed, else *summary
	 * (both g_free) */
	bool (*reload)(char **summary, char **err);
};

bool pvo_mgmt_start(const char *path, const struct pvo_mgmt_daemon *d,
		    char **err);
void pvo_mgmt_stop(void);

/* Executes one request line; the answer goes to out (a GString). */
void pvo_mgmt_execute(const char *line, void *out);

#endif
