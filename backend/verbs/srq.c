// SPDX-License-Identifier: GPL-2.0-or-later
/* Shared receive queues; see srq.h. */
#include <endian.h>
#include <glib.h>

#include "device.h"
#include "event.h"
#include "engine.h"
#include "srq.h"
#include "vm.h"

/* entries is a power of two <= max_srq_wr + 1, so at most this: */
#define SRQ_MAX_ENTRIES PVO_DEV_MAX_SRQ_WR
/* the stride of receive WQEs with the most SGEs */
#define PVO_RECV_WQE_MAX_SHIFT 9
_Static_assert((1u << PVO_RECV_WQE_MAX_SHIFT) >=
		       sizeof(struct pvo_recv_wqe) +
			   PVO_DEV_MAX_SGE * sizeof(struct pvo_sge),
	       "receive WQE buffer");

enum pvo_status pvo_cmd_create_srq(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp)
{
	const struct pvo_cmd_create_srq *c = req;
	struct pvo_resp_create_srq *r = resp;
	struct pvo_ucontext *uctx;
	uint32_t entries = le32toh(c->entries);
	uint32_t max_sge = le32toh(c->max_sge);
	uint32_t limit = le32toh(c->srq_limit);
	enum pvo_status st;
	struct pvo_srq *srq;
	struct pvo_pd *pd;
	unsigned int i;

	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	if (!pd)
		return PVO_STATUS_ENOENT;
	for (i = 0; i < sizeof(c->reserved); i++)
		if (c->reserved[i])
			return PVO_STATUS_EINVAL;
	if (max_sge > PVO_DEV_MAX_SGE || limit > entries ||
	    c->wqe_shift != pvo_recv_wqe_shift(max_sge) ||
	    (c->flags & ~PVO_SRQ_F_DOORBELL))
		return PVO_STATUS_EINVAL;
	if (vm->srqs.count >= vm->srqs.limit) {
		pvo_vm_warn(vm, "SRQ quota reached (max-srq = %u)",
			    vm->cfg->quota.max_srq);
		return PVO_STATUS_ENOSPC;
	}
	srq = g_new0(struct pvo_srq, 1);
	st = pvo_ring_init(&srq->ring, vm, &c->ring, entries, SRQ_MAX_ENTRIES,
			   c->wqe_shift);
	if (st) {
		g_free(srq);
		return st;
	}
	pvo_ring_load(vm, &srq->ring, PVO_RING_CONS, &srq->cons);
	srq->handle = pvo_table_add(&vm->srqs, srq, ctx);
	if (!srq->handle) {
		pvo_ring_fini(&srq->ring);
		g_free(srq);
		return PVO_STATUS_ENOSPC;
	}
	srq->ctx = ctx;
	srq->srqn = pvo_handle_index(srq->handle);
	srq->pd = pd;
	srq->max_sge = max_sge;
	srq->limit = limit;
	/* the VM's engine (host verbs: a host SRQ) for a guest that can
	 * ring for it, and has room in its doorbell record ring */
	uctx = pvo_vm_ctx(vm, ctx);
	if ((c->flags & PVO_SRQ_F_DOORBELL) && uctx &&
	    uctx->nqps < PVO_DB_RING_ENTRIES &&
	    pvo_vm_eng_has(vm, srq_create)) {
		st = vm->eng->srq_create(vm, srq);
		if (st) {
			pvo_table_remove(&vm->srqs, srq->handle, ctx);
			pvo_ring_fini(&srq->ring);
			g_free(srq);
			return st;
		}
		srq->doorbell = srq->engine_part != NULL;
	}
	if (srq->doorbell) {
		uctx->nqps++;
		r->flags = htole32(PVO_SRQ_RESP_F_DOORBELL);
	}
	pd->refcnt++;
	r->srq = htole32(srq->handle);
	r->srqn = htole32(srq->srqn);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_modify_srq(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp)
{
	const struct pvo_cmd_modify_srq *c = req;
	uint32_t mask = le32toh(c->attr_mask);
	uint32_t limit = le32toh(c->srq_limit);
	struct pvo_srq *srq;

	srq = pvo_table_get(&vm->srqs, le32toh(c->srq), ctx);
	if (!srq)
		return PVO_STATUS_ENOENT;
	/* No resize: the guest sized the ring at creation. */
	if (mask != PVO_SRQ_LIMIT || limit > srq->ring.entries)
		return PVO_STATUS_EINVAL;
	/* Checked when the responder consumes a WQE, as IB specifies. */
	srq->limit = limit;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_resize_srq(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp)
{
	const struct pvo_cmd_resize_srq *c = req;
	uint8_t wqe[1u << PVO_RECV_WQE_MAX_SHIFT];
	struct pvo_ring ring = { 0 };
	uint32_t prod, i, stride;
	enum pvo_status st;
	struct pvo_srq *srq;

	srq = pvo_table_get(&vm->srqs, le32toh(c->srq), ctx);
	if (!srq)
		return PVO_STATUS_ENOENT;
	for (i = 0; i < sizeof(c->reserved); i++)
		if (c->reserved[i])
			return PVO_STATUS_EINVAL;
	if (c->wqe_shift != srq->ring.shift)
		return PVO_STATUS_EINVAL;
	st = pvo_ring_init(&ring, vm, &c->ring, le32toh(c->entries),
			   SRQ_MAX_ENTRIES, c->wqe_shift);
	if (st)
		return st;
	/* What the guest posted and we did not take moves; a producer not
	 * within the old ring of our consumer is a guest error. */
	if (!pvo_ring_load(vm, &srq->ring, PVO_RING_PROD, &prod) ||
	    prod - srq->cons > srq->ring.entries ||
	    prod - srq->cons > ring.entries) {
		pvo_vm_warn(vm,
			    "RESIZE_SRQ of SRQ 0x%x to %u entries refused: %u "
			    "WQEs outstanding",
			    srq->handle, ring.entries, prod - srq->cons);
		pvo_ring_fini(&ring);
		return PVO_STATUS_EINVAL;
	}
	/* a host SRQ grows first (it holds the posted part) */
	st = pvo_vm_eng_has(vm, srq_resize) ?
		     vm->eng->srq_resize(vm, srq, ring.entries) :
		     PVO_STATUS_OK;
	if (st) {
		pvo_ring_fini(&ring);
		return st;
	}
	stride = 1u << srq->ring.shift;
	for (i = srq->cons; i != prod; i++)
		if (!pvo_ring_read(vm, &srq->ring, i, wqe, stride) ||
		    !pvo_ring_write(vm, &ring, i, wqe, stride)) {
			pvo_ring_fini(&ring);
			return PVO_STATUS_EFAULT;
		}
	if (!pvo_ring_store(vm, &ring, PVO_RING_CONS, srq->cons) ||
	    !pvo_ring_store(vm, &ring, PVO_RING_PROD, prod)) {
		pvo_ring_fini(&ring);
		return PVO_STATUS_EFAULT;
	}
	pvo_ring_fini(&srq->ring);
	srq->ring = ring;
	srq->prod_seen = prod;
	/* an armed limit above the new size fires at once, as IB has it */
	pvo_srq_check_limit(vm, srq);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_query_srq(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp)
{
	const struct pvo_cmd_handle *c = req;
	struct pvo_resp_query_srq *r = resp;
	struct pvo_srq *srq;

	if (c->reserved)
		return PVO_STATUS_EINVAL;
	srq = pvo_table_get(&vm->srqs, le32toh(c->handle), ctx);
	if (!srq)
		return PVO_STATUS_ENOENT;
	r->max_wr = htole32(srq->ring.entries);
	r->max_sge = htole32(srq->max_sge);
	r->srq_limit = htole32(srq->limit);
	return PVO_STATUS_OK;
}

void pvo_srq_free(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_ucontext *uctx = pvo_vm_ctx(vm, srq->ctx);

	if (pvo_vm_eng_has(vm, srq_free))
		vm->eng->srq_free(srq);
	if (srq->doorbell && uctx)
		uctx->nqps--;
	pvo_event_purge(vm, PVO_EVOBJ_SRQ, srq->handle);
	pvo_table_remove(&vm->srqs, srq->handle, srq->ctx);
	srq->pd->refcnt--;
	pvo_ring_fini(&srq->ring);
	g_free(srq);
}

void pvo_srq_check_limit(struct pvo_vm *vm, struct pvo_srq *srq)
{
	uint32_t prod;

	if (!srq->limit || !pvo_ring_load(vm, &srq->ring, PVO_RING_PROD, &prod))
		return;
	if (prod - srq->cons < srq->limit) {
		srq->limit = 0; /* one event per arming */
		pvo_event_post(vm, PVO_EV_SRQ_LIMIT, srq->handle);
	}
}
