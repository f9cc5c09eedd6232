/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The event queue (virtqueue 1): completion and async events to the guest
 * driver, one struct pvo_event per device-writable buffer. Events wait in
 * a bounded list while the driver has no buffer posted.
 */
#ifndef PVO_EVENT_H
#define PVO_EVENT_H

#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;

#define PVO_EVENT_PENDING_MAX 4096

struct pvo_event_queue {
	struct pvo_event pending[PVO_EVENT_PENDING_MAX];
	uint32_t head, count;	  /* ring of pending events */
	uint64_t posted, dropped; /* statistics */
};

/* What an event's handle names. */
enum pvo_event_obj {
	PVO_EVOBJ_CQ,
	PVO_EVOBJ_QP,
	PVO_EVOBJ_SRQ,
	PVO_EVOBJ_PORT
};

void pvo_event_post(struct pvo_vm *vm, uint32_t type, uint32_t handle);
/* Hand pending events to buffers the driver posted (event queue kick). */
void pvo_event_flush(struct pvo_vm *vm);
/* Forget pending events of a destroyed object. */
void pvo_event_purge(struct pvo_vm *vm, enum pvo_event_obj obj,
		     uint32_t handle);
void pvo_event_reset(struct pvo_vm *vm);

#endif
