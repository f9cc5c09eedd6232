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

struct pvo_vm;

/* vm->vhost, from pvo_vhost_listen to pvo_vhost_close. */
struct pvo_vhost {
	struct pvo_vm *vm;
	int listen_fd;
	GSource *listen_src;
	GSource *drop_src; /* tears the session down after a panic */
	VugDev vug;	/* valid while vm->connected */
	int conn_fd;
	bool dropping;	/* a disconnect is scheduled */
};

#endif
