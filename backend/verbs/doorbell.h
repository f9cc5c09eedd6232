/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Doorbells: each context registers a page of doorbell records (QP handles
 * with work) with SET_DB_RING and kicks its doorbell virtqueue. A kick pops
 * the records, so the work per kick is O(QPs with new work), never a scan.
 *
 * A context that owns a queue page is found from the queue; a context on a
 * slot page shares its queue with others, and QEMU names its slot in the
 * queue's notify ring (SET_NOTIFY_AREA), so a kick pops slots first: the
 * work stays O(contexts with work).
 */
#ifndef PVO_DOORBELL_H
#define PVO_DOORBELL_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;

struct pvo_db_ring {
	bool set;      /* SET_DB_RING done */
	uint64_t gpa;  /* record page */
	uint32_t cons; /* records popped */
};

/* The notify rings of a VM (SET_NOTIFY_AREA) and who owns each slot. */
struct pvo_db_notify {
	bool set;
	uint64_t gpa;
	uint32_t num_queues;	/* as the driver said; shapes the area */
	uint32_t entries;	/* per ring */
	uint32_t cons[PVO_MAX_QUEUES];	/* per ring, by queue index */
	uint32_t slot_ctx[PVO_MAX_DB_SLOTS];	/* ucontext per slot, 0 free */
};

enum pvo_status pvo_cmd_set_db_ring(struct pvo_vm *vm, uint32_t ctx,
				    const void *req, void *resp);
enum pvo_status pvo_cmd_set_notify_area(struct pvo_vm *vm, uint32_t ctx,
					const void *req, void *resp);

/* A kick of doorbell virtqueue qidx. */
void pvo_doorbell_kick(struct pvo_vm *vm, unsigned int qidx);

#endif
