// SPDX-License-Identifier: GPL-2.0-or-later
/* Completion queues; see cq.h. */
#include <endian.h>
#include <glib.h>

#include "cq.h"
#include "device.h"
#include "event.h"
#include "guest_mem.h"
#include "engine.h"
#include "vm.h"

#define CQE_SHIFT 6
G_STATIC_ASSERT(sizeof(struct pvo_cqe) == 1u << CQE_SHIFT);

enum pvo_status pvo_cmd_create_cq(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp)
{
	const struct pvo_cmd_create_cq *c = req;
	struct pvo_resp_create_cq *r = resp;
	uint32_t entries = le32toh(c->entries);
	uint32_t flags = le32toh(c->flags);
	enum pvo_status st;
	struct pvo_cq *cq;

	if (flags & ~PVO_CQ_F_NO_EVENTS)
		return PVO_STATUS_EINVAL;
	if (vm->cqs.count >= vm->cqs.limit) {
		pvo_vm_warn(vm, "CQ quota reached (max-cq = %u)",
			    vm->cfg->quota.max_cq);
		return PVO_STATUS_ENOSPC;
	}
	cq = g_new0(struct pvo_cq, 1);
	st = pvo_ring_init(&cq->ring, vm, &c->ring, entries, PVO_DEV_MAX_CQE,
			   CQE_SHIFT);
	if (st) {
		g_free(cq);
		return st;
	}
	/* A fresh ring: the guest starts consuming at its cons. */
	pvo_ring_load(vm, &cq->ring, PVO_RING_CONS, &cq->prod);
	cq->cons_seen = cq->prod;
	cq->no_events = flags & PVO_CQ_F_NO_EVENTS;
	cq->ctx = ctx;
	cq->handle = pvo_table_add(&vm->cqs, cq, ctx);
	if (!cq->handle) {
		pvo_ring_fini(&cq->ring);
		g_free(cq);
		return PVO_STATUS_ENOSPC;
	}
	r->cq = htole32(cq->handle);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_resize_cq(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp)
{
	const struct pvo_cmd_resize_cq *c = req;
	uint8_t cqe[sizeof(struct pvo_cqe)];
	struct pvo_ring ring = { 0 };
	uint32_t cons, arm = 0, i;
	enum pvo_status st;
	struct pvo_cq *cq;

	cq = pvo_table_get(&vm->cqs, le32toh(c->cq), ctx);
	if (!cq)
		return PVO_STATUS_ENOENT;
	st = pvo_ring_init(&ring, vm, &c->ring, le32toh(c->entries),
			   PVO_DEV_MAX_CQE, CQE_SHIFT);
	if (st)
		return st;
	/* The guest's consumer decides what is outstanding; one that is
	 * not within the old ring of our producer is a guest error. */
	if (!pvo_ring_load(vm, &cq->ring, PVO_RING_CONS, &cons) ||
	    cq->prod - cons > cq->ring.entries ||
	    cq->prod - cons > ring.entries) {
		pvo_vm_warn(vm,
			    "RESIZE_CQ of CQ 0x%x to %u entries refused: %u "
			    "CQEs outstanding",
			    cq->handle, ring.entries, cq->prod - cons);
		pvo_ring_fini(&ring);
		return PVO_STATUS_EINVAL;
	}
	for (i = cons; i != cq->prod; i++)
		if (!pvo_ring_read(vm, &cq->ring, i, cqe, sizeof(cqe)) ||
		    !pvo_ring_write(vm, &ring, i, cqe, sizeof(cqe))) {
			pvo_ring_fini(&ring);
			return PVO_STATUS_EFAULT;
		}
	pvo_ring_load(vm, &cq->ring, PVO_RING_ARM, &arm);
	if (!pvo_ring_store(vm, &ring, PVO_RING_CONS, cons) ||
	    !pvo_ring_store(vm, &ring, PVO_RING_ARM, arm) ||
	    !pvo_ring_store(vm, &ring, PVO_RING_PROD, cq->prod)) {
		pvo_ring_fini(&ring);
		return PVO_STATUS_EFAULT;
	}
	pvo_ring_fini(&cq->ring);
	cq->ring = ring;
	cq->cons_seen = cons;
	return PVO_STATUS_OK;
}

void pvo_cq_free(struct pvo_vm *vm, struct pvo_cq *cq)
{
	pvo_event_purge(vm, PVO_EVOBJ_CQ, cq->handle);
	pvo_table_remove(&vm->cqs, cq->handle, cq->ctx);
	if (pvo_vm_eng_has(vm, cq_free))
		vm->eng->cq_free(cq);
	pvo_ring_fini(&cq->ring);
	g_free(cq);
}

static void notify(struct pvo_vm *vm, struct pvo_cq *cq,
		   const struct pvo_cqe *cqe)
{
	uint64_t gpa = pvo_ring_hdr_gpa(&cq->ring, PVO_RING_ARM);
	bool sol =
	    (cqe->flags & PVO_WC_F_SOLICITED) || cqe->status != PVO_WC_SUCCESS;
	uint32_t arm;

	/* The guest arms, then re-checks the ring; we publish, then look at
	 * arm. Whoever comes second sees the other's write. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (;;) {
		if (!pvo_ring_load(vm, &cq->ring, PVO_RING_ARM, &arm) || !arm)
			return;
		if (arm == PVO_CQ_ARM_SOLICITED && !sol)
			return; /* stays armed for a solicited CQE */
		if (pvo_gmem_cmpxchg32(vm, gpa, arm, 0))
			break;
	}
	pvo_event_post(vm, PVO_EV_CQ_COMP, cq->handle);
}

bool pvo_cq_post(struct pvo_vm *vm, struct pvo_cq *cq,
		 const struct pvo_cqe *cqe)
{
	if (cq->error)
		return false;
	/* the guest's consumer is loaded again only when the ring looks
	 * full by the last value seen: not once per CQE */
	if (cq->prod - cq->cons_seen >= cq->ring.entries &&
	    !pvo_ring_load(vm, &cq->ring, PVO_RING_CONS, &cq->cons_seen))
		goto fail;
	if (cq->prod - cq->cons_seen >= cq->ring.entries) {
		pvo_vm_warn(vm,
			    "CQ 0x%x overrun (%u entries): the guest "
			    "polls too slowly or sized the CQ too small",
			    cq->handle, cq->ring.entries);
		goto fail;
	}
	if (!pvo_ring_write(vm, &cq->ring, cq->prod, cqe, sizeof(*cqe)))
		goto fail;
	cq->prod++;
	if (!pvo_ring_store(vm, &cq->ring, PVO_RING_PROD, cq->prod))
		goto fail;
	if (!cq->no_events)
		notify(vm, cq, cqe);
	return true;
fail:
	cq->error = true;
	pvo_event_post(vm, PVO_EV_CQ_ERR, cq->handle);
	return false;
}
