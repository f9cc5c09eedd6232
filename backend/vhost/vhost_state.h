/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Device state transfer for migration (vhost_state.c). */
#ifndef PVO_VHOST_STATE_H
#define PVO_VHOST_STATE_H

#include <stdbool.h>

#include "vhost_dev.h"
#include "vhost_msg.h"

/* Handles the two transfer messages (true) and fills the reply. */
bool pvo_vhost_state_msg(struct pvo_vhost *vh, VhostUserMsg *m);

/* Drops a transfer in progress and a loaded state not applied yet. */
void pvo_vhost_state_forget(struct pvo_vhost *vh);

#endif
