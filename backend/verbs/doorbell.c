// SPDX-License-Identifier: GPL-2.0-or-later
/* Doorbells; see doorbell.h. */
#include <endian.h>

#include "busy_poll.h"
#include "doorbell.h"
#include "guest_mem.h"
#include "qp.h"
#include "ring.h"
#include "vm.h"

enum pvo_status pvo_cmd_set_db_ring(struct pvo_vm *vm, uint32_t ctx,
				    const void *req, void *resp)
{
	const struct pvo_cmd_set_db_ring *c = req;
	struct pvo_ucontext *uctx = pvo_vm_ctx(vm, ctx);
	uint64_t gpa = le64toh(c->gpa);

	if (!uctx)
		return PVO_STATUS_ENOENT;
	if (uctx->db.set)
		return PVO_STATUS_EBUSY;
	if (gpa & (PVO_PAGE_SIZE - 1))
		return PVO_STATUS_EINVAL;
	if (!pvo_gmem_ptr(vm, gpa, PVO_PAGE_SIZE))
		return PVO_STATUS_EFAULT;
	uctx->db.set = true;
	uctx->db.gpa = gpa;
	pvo_gmem_load32(vm, gpa + PVO_RING_CONS, &uctx->db.cons);
	return PVO_STATUS_OK;
}

/*
 * Pops records until the ring is empty, at most one ring's worth per kick:
 * a guest that keeps appending also keeps kicking, so we come back, and
 * it cannot hold the main loop.
 */
static void process(struct pvo_vm *vm, struct pvo_ucontext *uctx)
{
	struct pvo_db_ring *db = &uctx->db;
	unsigned int budget = PVO_DB_RING_ENTRIES;
	uint32_t prod, handle;
	struct pvo_qp *qp;

	while (budget) {
		if (!pvo_gmem_load32(vm, db->gpa + PVO_RING_PROD, &prod) ||
		    prod == db->cons)
			return;
		if (prod - db->cons > PVO_DB_RING_ENTRIES) {
			pvo_vm_warn(vm,
				    "doorbell records of context 0x%x: "
				    "producer %u is not within %u of the "
				    "consumer %u: skipping them",
				    uctx->handle, prod, PVO_DB_RING_ENTRIES,
				    db->cons);
			db->cons = prod;
			pvo_gmem_store32(vm, db->gpa + PVO_RING_CONS, prod);
			return;
		}
		while (db->cons != prod && budget) {
			budget--;
			/* the page may have left guest RAM (memory table
			 * change): stop rather than use an unread handle */
			if (!pvo_gmem_load32(vm,
					     db->gpa + PVO_DB_RING_ENTRY_OFF +
						 (db->cons % PVO_DB_RING_ENTRIES) *
						     sizeof(uint32_t),
					     &handle))
				return;
			/* Release the record before clearing db_pending, so
			 * that a re-append always finds room. */
			db->cons++;
			pvo_gmem_store32(vm, db->gpa + PVO_RING_CONS, db->cons);
			qp = pvo_table_get(&vm->qps, handle, uctx->handle);
			if (!qp)
				continue; /* destroyed meanwhile */
			if (pvo_busy_poll_on() &&
			    (qp->state == PVO_QPS_RTS ||
			     qp->state == PVO_QPS_SQD)) {
				/* latency mode: db_pending stays set, the
				 * back-end watches the SQ itself */
				pvo_busy_poll_add(qp);
				pvo_qp_doorbell(qp);
				continue;
			}
			pvo_ring_store(vm, &qp->sq, PVO_RING_DB_PENDING, 0);
			/* ... and clear db_pending before reading SQ prod */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			pvo_qp_doorbell(qp);
		}
	}
}

void pvo_doorbell_kick(struct pvo_vm *vm, unsigned int qidx)
{
	struct pvo_ucontext *uctx;

	if (qidx == PVO_VQ_DB_KERNEL)
		uctx = &vm->kernel;
	else if (qidx < PVO_MAX_QUEUES && vm->db_queue_ctx[qidx])
		uctx = pvo_vm_ctx(vm, vm->db_queue_ctx[qidx]);
	else
		return;
	if (uctx && uctx->db.set)
		process(vm, uctx);
}
