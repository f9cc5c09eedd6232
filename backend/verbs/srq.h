/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared receive queues: a ring of receive WQEs several QPs consume. */
#ifndef PVO_SRQ_H
#define PVO_SRQ_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

struct pvo_vm;
struct pvo_pd;

struct pvo_srq {
	uint32_t handle;
	uint32_t ctx;
	uint32_t srqn;
	struct pvo_pd *pd;
	struct pvo_ring ring;
	uint32_t max_sge;
	uint32_t limit;	 /* armed when > 0 */
	uint32_t cons;	 /* WQEs consumed: the device's counter */
	uint32_t prod_seen; /* the guest's producer as last loaded */
	uint32_t refcnt; /* QPs attached */
	/* PVO_SRQ_RESP_F_DOORBELL: the guest rings it (a doorbell record
	 * of its context) */
	bool doorbell;
	void *engine_part; /* the VM engine's (engine.h), or NULL */
};

enum pvo_status pvo_cmd_create_srq(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp);
enum pvo_status pvo_cmd_modify_srq(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp);
enum pvo_status pvo_cmd_resize_srq(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp);
enum pvo_status pvo_cmd_query_srq(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp);
void pvo_srq_free(struct pvo_vm *vm, struct pvo_srq *srq);

/* After a WQE was consumed: raises PVO_EV_SRQ_LIMIT (once per arming)
 * when fewer than limit WQEs remain. */
void pvo_srq_check_limit(struct pvo_vm *vm, struct pvo_srq *srq);

#endif
