/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's configuration and what it serves from it: one struct
 * pvo_vm per [vm] section listening on its socket, the overlay and the
 * management socket, and the data-path threads they run on (each
 * tenant's VMs on one: docs/threads.md). Reloading the file (SIGHUP, pvo-ctl reload) brings
 * them in line with it where that can be done live (docs/configuration.md,
 * "Reloading the configuration").
 */
#ifndef PVO_DAEMON_H
#define PVO_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* What the command line adds to the file; a reload keeps it. */
struct pvo_daemon_opts {
	bool from_file;	    /* --config: cfg->path can be read again */
	char **vms;	    /* --vm NAME...: only these (NULL: every VM) */
	bool busy_poll_set; /* --busy-poll-us overrides the file's */
	uint32_t busy_poll_us;
	bool threads_set;   /* --threads overrides the file's */
	uint32_t threads;
};

/* Serves cfg, which the daemon owns from now on. False with *err set
 * (g_free) if a socket cannot be bound; pvo_daemon_stop() undoes the
 * rest. */
bool pvo_daemon_start(struct pvo_daemon_config *cfg,
		      const struct pvo_daemon_opts *o, char **err);
/* Reads the config file again and applies it. True with *summary (what
 * changed), or false with *err (why nothing did); g_free both. Either
 * way the result is logged. */
bool pvo_daemon_reload(char **summary, char **err);
/* Closes every socket and frees every VM and the config. */
void pvo_daemon_stop(void);

#endif
