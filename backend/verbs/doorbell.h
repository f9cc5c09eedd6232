/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Doorbells: each context registers a page of doorbell records (QP handles
 * with work) with SET_DB_RING and kicks its doorbell virtqueue. A kick pops
 * the records, so the work per kick is O(QPs with new work), never a scan.
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

enum pvo_status pvo_cmd_set_db_ring(struct pvo_vm *vm, uint32_t ctx,
				    const void *req, void *resp);

/* A kick of doorbell virtqueue qidx. */
void pvo_doorbell_kick(struct pvo_vm *vm, unsigned int qidx);

#endif
