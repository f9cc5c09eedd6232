// SPDX-License-Identifier: GPL-2.0-or-later
/* Doorbells; see doorbell.h. */
#include <endian.h>
#include <inttypes.h>

#include "busy_poll.h"
#include "device.h"
#include "doorbell.h"
#include "guest_mem.h"
#include "engine.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
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

enum pvo_status pvo_cmd_set_notify_area(struct pvo_vm *vm, uint32_t ctx,
					const void *req, void *resp)
{
	const struct pvo_cmd_set_notify_area *c = req;
	struct pvo_db_notify *n = &vm->notify;
	uint64_t gpa = le64toh(c->gpa);
	uint32_t nq = le32toh(c->num_queues), q;

	if (ctx != PVO_CTX_KERNEL)
		return PVO_STATUS_EPERM;
	if (n->set)
		return PVO_STATUS_EBUSY;
	if ((gpa & (PVO_PAGE_SIZE - 1)) || c->reserved ||
	    nq <= PVO_VQ_DB_KERNEL || nq > pvo_device_max_queues(vm->cfg)) {
		pvo_vm_warn(vm,
			    "SET_NOTIFY_AREA: gpa 0x%" PRIx64
			    " for %u queues refused: the area must be page "
			    "aligned and the device has 3..%u queues",
			    gpa, nq, pvo_device_max_queues(vm->cfg));
		return PVO_STATUS_EINVAL;
	}
	if (!pvo_gmem_ptr(vm, gpa, pvo_notify_area_size(nq)))
		return PVO_STATUS_EFAULT;
	n->set = true;
	n->gpa = gpa;
	n->num_queues = nq;
	n->entries = pvo_notify_ring_entries(nq);
	for (q = pvo_db_notify_first(nq); q < nq; q++)
		pvo_gmem_load32(vm, gpa + pvo_notify_ring_off(nq, q) +
				    PVO_RING_CONS,
				&n->cons[q]);
	return PVO_STATUS_OK;
}

/*
 * A record that names an SRQ (its srqn): one of this context's that asked
 * for doorbells, or nothing (destroyed meanwhile, forged).
 */
static void srq_doorbell(struct pvo_vm *vm, struct pvo_ucontext *uctx,
			 uint32_t srqn)
{
	struct pvo_srq *srq = pvo_table_at(&vm->srqs, srqn);

	if (!srq || srq->ctx != uctx->handle || !srq->doorbell)
		return;
	pvo_ring_store(vm, &srq->ring, PVO_RING_DB_PENDING, 0);
	/* ... and clear db_pending before reading the SRQ prod */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (pvo_vm_eng_has(vm, srq_doorbell))
		vm->eng->srq_doorbell(vm, srq);
}

/* The QPs a pass named, each once, in the order of their first record. */
struct rung {
	uint64_t pass;
	unsigned int n;
	uint32_t handle[PVO_DB_RING_ENTRIES];
};

static void ring_once(struct rung *r, struct pvo_qp *qp)
{
	if (qp->db_pass == r->pass)
		return;
	qp->db_pass = r->pass;
	r->handle[r->n++] = qp->handle;
}

/*
 * The QPs of the pass, once each, after all its records were popped and
 * their db_pending cleared: a post that comes later than a record is
 * seen by the run or rings again, and a QP named in 511 records costs
 * one run, not 511.
 */
static void ring_all(struct pvo_vm *vm, struct pvo_ucontext *uctx,
		     const struct rung *r)
{
	struct pvo_qp *qp;
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		qp = pvo_table_get(&vm->qps, r->handle[i], uctx->handle);
		if (!qp)
			continue;
		if (pvo_busy_poll_on() &&
		    (qp->state == PVO_QPS_RTS || qp->state == PVO_QPS_SQD))
			pvo_busy_poll_add(qp);
		pvo_qp_doorbell(qp);
	}
}

/*
 * Pops records until the ring is empty, at most one ring's worth per kick:
 * a guest that keeps appending also keeps kicking, so we come back, and
 * it cannot hold the main loop.
 */
static void pop(struct pvo_vm *vm, struct pvo_ucontext *uctx,
		struct rung *rung)
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
			if (PVO_DB_REC_IS_SRQ(handle)) {
				srq_doorbell(vm, uctx, handle);
				continue;
			}
			qp = pvo_table_get(&vm->qps, handle, uctx->handle);
			if (!qp)
				continue; /* destroyed meanwhile */
			/* latency mode: db_pending stays set, the back-end
			 * watches the SQ itself (ring_all) */
			if (!(pvo_busy_poll_on() &&
			      (qp->state == PVO_QPS_RTS ||
			       qp->state == PVO_QPS_SQD))) {
				pvo_ring_store(vm, &qp->sq,
					       PVO_RING_DB_PENDING, 0);
				/* ... and clear db_pending before reading
				 * SQ prod (ring_all) */
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
			}
			ring_once(rung, qp);
		}
	}
}

static void process(struct pvo_vm *vm, struct pvo_ucontext *uctx)
{
	/* unique per pass, whichever thread or context: a QP never
	 * carries the mark of a pass other than one that named it */
	static uint64_t passes;
	struct rung rung;

	rung.pass = __atomic_add_fetch(&passes, 1, __ATOMIC_RELAXED);
	rung.n = 0;
	pop(vm, uctx, &rung);
	ring_all(vm, uctx, &rung);
}

/*
 * Pops the slots QEMU appended to queue qidx's notify ring and processes
 * their contexts. A slot is in a ring at most once (QEMU waits for its
 * entry to be consumed), so one ring's worth bounds the work per kick.
 * Entries are guest memory: a slot that is out of range, free, or not on
 * this queue is skipped; it can only name the guest's own contexts.
 */
static void process_notify(struct pvo_vm *vm, unsigned int qidx)
{
	struct pvo_db_notify *n = &vm->notify;
	uint64_t ring = n->gpa + pvo_notify_ring_off(n->num_queues, qidx);
	unsigned int budget = n->entries;
	struct pvo_ucontext *uctx;
	uint32_t prod, slot;

	if (!pvo_gmem_load32(vm, ring + PVO_RING_PROD, &prod) ||
	    prod == n->cons[qidx])
		return;
	/* prod is QEMU's; only the guest can have overwritten it, and QEMU
	 * rewrites it with the next entry: ignore it until then. */
	if (prod - n->cons[qidx] > n->entries) {
		pvo_vm_warn(vm,
			    "notify ring of queue %u: producer %u is not within "
			    "%u of the consumer %u: ignoring it until QEMU "
			    "appends again",
			    qidx, prod, n->entries, n->cons[qidx]);
		return;
	}
	while (n->cons[qidx] != prod && budget--) {
		if (!pvo_gmem_load32(vm,
				     ring + PVO_NOTIFY_RING_ENTRY_OFF +
					 (n->cons[qidx] & (n->entries - 1)) *
					     sizeof(uint32_t),
				     &slot))
			return;
		/* Consume the entry before reading the context's records:
		 * QEMU skips a doorbell only while the entry is unconsumed,
		 * so the read below sees the records of every doorbell. */
		n->cons[qidx]++;
		pvo_gmem_store32(vm, ring + PVO_RING_CONS, n->cons[qidx]);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (slot >= PVO_MAX_DB_SLOTS || !n->slot_ctx[slot] ||
		    pvo_db_slot_queue(n->num_queues, slot) != qidx)
			continue;
		uctx = pvo_vm_ctx(vm, n->slot_ctx[slot]);
		if (uctx && uctx->db.set)
			process(vm, uctx);
	}
}

void pvo_doorbell_kick(struct pvo_vm *vm, unsigned int qidx)
{
	struct pvo_ucontext *uctx = NULL;

	if (qidx >= PVO_MAX_QUEUES)
		return;
	if (vm->notify.set && qidx >= pvo_db_notify_first(vm->notify.num_queues) &&
	    qidx < vm->notify.num_queues)
		process_notify(vm, qidx);
	if (qidx == PVO_VQ_DB_KERNEL)
		uctx = &vm->kernel;
	else if (vm->db_queue_ctx[qidx])
		uctx = pvo_vm_ctx(vm, vm->db_queue_ctx[qidx]);
	if (uctx && uctx->db.set)
		process(vm, uctx);
}
