/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Completion queues: a ring of struct pvo_cqe in guest memory that the
 * device produces into, with arming for completion events.
 */
#ifndef PVO_CQ_H
#define PVO_CQ_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

struct pvo_vm;

struct pvo_cq {
	uint32_t handle;
	uint32_t ctx;
	struct pvo_ring ring;
	uint32_t prod;	 /* CQEs produced: the device's counter */
	uint32_t cons_seen; /* the guest's consumer as last loaded */
	uint32_t refcnt; /* QPs using it */
	bool error;	 /* overrun: no more CQEs */
	bool no_events;	 /* PVO_CQ_F_NO_EVENTS: arm is never looked at */
	void *engine_part; /* the VM engine's (engine.h), or NULL */
};

enum pvo_status pvo_cmd_create_cq(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp);
enum pvo_status pvo_cmd_resize_cq(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp);
void pvo_cq_free(struct pvo_vm *vm, struct pvo_cq *cq);

/*
 * Publishes one CQE and raises PVO_EV_CQ_COMP if the CQ is armed for it
 * (a CQ created with PVO_CQ_F_NO_EVENTS is never looked at for arm).
 * False if the CQ overran (it is now in error, PVO_EV_CQ_ERR raised) or
 * its ring is no longer guest RAM: the caller's QP must go to error.
 */
bool pvo_cq_post(struct pvo_vm *vm, struct pvo_cq *cq,
		 const struct pvo_cqe *cqe);

#endif
