// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host SRQs of host-verbs VMs.
 *
 * A guest SRQ whose guest rings its doorbell gets a host SRQ at creation;
 * its RC / UC QPs get host QPs attached to it. Which kind of QP the SRQ
 * serves is decided by the first QP that starts receiving
 * (hostverbs.h). Serving host QPs, the guest's receives go to the host
 * SRQ as the doorbell rings, each with a slot of the back-end's as host
 * wr_id; a completion, on whichever QP took the WQE, frees the slot and
 * passes the guest ring's cons before the CQE goes to that QP's receive
 * CQ. QPs on one SRQ complete in any order, so cons counts completions,
 * not ring positions: the guest never has more WQEs out than the ring
 * holds, and the host SRQ (as large) never overflows. The SRQ limit is
 * the back-end's, checked at each completion as the software engine
 * does; the host SRQ has none.
 *
 * So the ring does not say which WQEs the host SRQ holds: a completion
 * out of order lets the guest write a position whose WQE is still on the
 * host. Each slot keeps a copy of its WQE and the position it came from;
 * a migration writes the WQEs on the host back to the ring, in the order
 * they were posted, from cons on, and the destination posts the ring
 * (docs/migration.md).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "host_budget.h"
#include "hv.h"
#include "log.h"
#include "qp.h"
#include "srq.h"
#include "vm.h"

static const char *mode_name(enum pvo_hv_srq_mode m)
{
	return m == PVO_HV_SRQ_HOST ? "QPs connected through the host device"
				    : "QPs with a peer on this back-end";
}

/* The copies of a host SRQ of that many slots, charged. */
static bool copies(struct pvo_vm *vm, struct pvo_hv_srq *h, uint32_t slots)
{
	uint64_t more = (uint64_t)(slots - h->slots) * h->stride;

	if (!pvo_budget_charge(&vm->host_mem, more)) {
		pvo_vm_warn(vm,
			    "hostverbs: an SRQ of %u WQEs needs %llu more "
			    "bytes of max-host-mem (%llu of %llu used): "
			    "raise max-host-mem or make the SRQ smaller",
			    slots, (unsigned long long)more,
			    (unsigned long long)vm->host_mem.used,
			    (unsigned long long)vm->host_mem.limit);
		return false;
	}
	h->copy = g_realloc(h->copy, (size_t)slots * h->stride);
	h->pos = g_renew(uint32_t, h->pos, slots);
	return true;
}

/* Slots [from, to) join the free stack. */
static void add_slots(struct pvo_hv_srq *h, uint32_t from, uint32_t to)
{
	uint32_t i;

	for (i = to; i-- > from;)
		h->free[h->nfree++] = i;
}

enum pvo_status pvo_hv_srq_create(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_device *d = pvo_hv_dev(vm->cfg->tenant);
	struct ibv_srq_init_attr ia = {0};
	struct pvo_hv_srq *h;
	struct ibv_pd *pd;

	if (!d || srq->ctx == PVO_CTX_KERNEL)
		return PVO_STATUS_OK;
	pd = pvo_hv_pd(vm, srq->pd);
	if (!pd)
		return PVO_STATUS_ENOSPC;
	ia.attr.max_wr = srq->ring.entries;
	ia.attr.max_sge = srq->max_sge ? srq->max_sge : 1;
	h = g_new0(struct pvo_hv_srq, 1);
	h->stride = sizeof(struct pvo_recv_wqe) +
		    (size_t)srq->max_sge * sizeof(struct pvo_sge);
	h->budget = &vm->host_mem;
	if (!copies(vm, h, srq->ring.entries)) {
		g_free(h);
		return PVO_STATUS_ENOSPC;
	}
	h->srq = ibv_create_srq(pd, &ia);
	if (!h->srq) {
		pvo_vm_warn(vm, "hostverbs: %s: SRQ of %u WQEs, %u SGEs: %s",
			    d->name, srq->ring.entries, ia.attr.max_sge,
			    g_strerror(errno));
		pvo_budget_uncharge(h->budget,
				    (uint64_t)srq->ring.entries * h->stride);
		g_free(h->copy);
		g_free(h->pos);
		g_free(h);
		return PVO_STATUS_ENOSPC;
	}
	h->dev = d;
	h->slots = srq->ring.entries;
	h->wqe = g_new0(struct pvo_hv_wqe, h->slots);
	h->free = g_new(uint32_t, h->slots);
	add_slots(h, 0, h->slots);
	h->posted = srq->cons;
	srq->engine_part = h;
	return PVO_STATUS_OK;
}

void pvo_hv_srq_free(struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);

	if (!h)
		return;
	/* no QP is attached (DESTROY_SRQ is EBUSY until then): the WQEs
	 * it holds go with it, completing nowhere */
	if (ibv_destroy_srq(h->srq))
		pvo_log(NULL, "hostverbs: ibv_destroy_srq: %s",
			g_strerror(errno));
	pvo_budget_uncharge(h->budget, (uint64_t)h->slots * h->stride);
	g_free(h->wqe);
	g_free(h->free);
	g_free(h->copy);
	g_free(h->pos);
	g_free(h);
	srq->engine_part = NULL;
}

enum pvo_status pvo_hv_srq_resize(struct pvo_vm *vm, struct pvo_srq *srq,
				  uint32_t entries)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	struct ibv_srq_attr a = {.max_wr = entries};
	int err;

	if (!h || entries <= h->slots)
		return PVO_STATUS_OK;
	if (!copies(vm, h, entries))
		return PVO_STATUS_ENOSPC;
	err = ibv_modify_srq(h->srq, &a, IBV_SRQ_MAX_WR);
	if (err) {
		/* the copies stay as large; their charge goes */
		pvo_budget_uncharge(h->budget,
				    (uint64_t)(entries - h->slots) * h->stride);
		pvo_vm_warn(vm,
			    "hostverbs: %s: SRQ 0x%x to %u WQEs: "
			    "ibv_modify_srq: %s",
			    h->dev->name, srq->handle, entries,
			    g_strerror(err));
		return err == ENOMEM ? PVO_STATUS_ENOSPC : PVO_STATUS_EINVAL;
	}
	h->wqe = g_renew(struct pvo_hv_wqe, h->wqe, entries);
	memset(h->wqe + h->slots, 0, (entries - h->slots) * sizeof(*h->wqe));
	h->free = g_renew(uint32_t, h->free, entries);
	add_slots(h, h->slots, entries);
	h->slots = entries;
	return PVO_STATUS_OK;
}

static void broken(struct pvo_vm *vm, struct pvo_srq *srq, const char *why)
{
	pvo_vm_warn(vm,
		    "SRQ 0x%x: %s: no more of its receives go to the host "
		    "device",
		    srq->handle, why);
	to_hv_srq(srq)->broken = true;
}

/* One guest WQE (its copy in the slot) to the host SRQ; false if the
 * host refused it (logged, the SRQ takes no more). */
static bool post_slot(struct pvo_vm *vm, struct pvo_srq *srq, uint32_t slot)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	const struct pvo_recv_wqe *w =
	    (const void *)(h->copy + slot * h->stride);
	struct ibv_sge sge[PVO_DEV_MAX_SGE];
	struct ibv_recv_wr wr = {0}, *bad;
	struct pvo_hv_wqe *e = &h->wqe[slot];
	unsigned int i;
	int err;

	pvo_hv_take_sges(sge, (const void *)(w + 1), w->num_sge);
	*e = (struct pvo_hv_wqe){.wr_id = w->wr_id, .used = true};
	if (w->num_sge) {
		e->addr = sge[0].addr;
		e->length = sge[0].length;
		e->lkey = sge[0].lkey;
	}
	/* the guest's keys, the host MRs' after a move */
	for (i = 0; i < w->num_sge; i++)
		sge[i].lkey = pvo_hv_lkey(vm, sge[i].lkey);
	wr.wr_id = HV_WR_SRQ | slot;
	wr.sg_list = sge;
	wr.num_sge = w->num_sge;
	err = ibv_post_srq_recv(h->srq, &wr, &bad);
	if (!err)
		return true;
	pvo_vm_warn(vm, "hostverbs: %s SRQ 0x%x: ibv_post_srq_recv: %s",
		    h->dev->name, srq->handle, g_strerror(err));
	h->broken = true;
	return false;
}

/* The guest's receives from h->posted on to the host SRQ. */
static void post(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint8_t buf[sizeof(struct pvo_recv_wqe) +
		    PVO_DEV_MAX_SGE * sizeof(struct pvo_sge)]
	    __attribute__((aligned(8)));
	const struct pvo_recv_wqe *w = (const void *)buf;
	uint32_t prod, slot;

	if (h->broken || !pvo_ring_load(vm, &srq->ring, PVO_RING_PROD, &prod))
		return;
	if (prod - srq->cons > srq->ring.entries ||
	    h->posted - srq->cons > prod - srq->cons) {
		broken(vm, srq, "producer not within the ring of the consumer");
		return;
	}
	while (h->posted != prod) {
		/* at most ring entries are out: a slot is free */
		if (!h->nfree) {
			broken(vm, srq, "more WQEs out than the ring holds");
			return;
		}
		if (!pvo_ring_read_wqe(vm, &srq->ring, h->posted, buf,
				       sizeof(*w), pvo_recv_wqe_tail)) {
			broken(vm, srq, "a WQE outside guest RAM");
			return;
		}
		if (w->num_sge > srq->max_sge) {
			broken(vm, srq, "a WQE with more SGEs than the SRQ's");
			return;
		}
		slot = h->free[--h->nfree];
		memcpy(h->copy + slot * h->stride, buf,
		       sizeof(*w) + w->num_sge * sizeof(struct pvo_sge));
		h->pos[slot] = h->posted;
		if (!post_slot(vm, srq, slot)) {
			h->wqe[slot].used = false;
			h->nfree++;
			return;
		}
		h->posted++;
	}
}

void pvo_hv_srq_doorbell(struct pvo_vm *vm, struct pvo_srq *srq)
{
	/* unset: the receives wait in the ring for the first QP; software:
	 * the engine reads the ring as messages come */
	if (to_hv_srq(srq) && to_hv_srq(srq)->mode == PVO_HV_SRQ_HOST)
		post(vm, srq);
}

/* The SRQ serves host QPs from now on: the receives waiting in its ring
 * (the guest's, or those the software engine had not taken) go to the
 * host SRQ. */
static void serve_host(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);

	h->mode = PVO_HV_SRQ_HOST;
	h->posted = srq->cons;
	post(vm, srq);
}

bool pvo_hv_srq_claim(struct pvo_qp *qp, bool host)
{
	struct pvo_srq *srq = qp->srq;
	enum pvo_hv_srq_mode want = host ? PVO_HV_SRQ_HOST : PVO_HV_SRQ_SW;
	struct pvo_hv_srq *h = srq ? to_hv_srq(srq) : NULL;

	if (!h || h->mode == want)
		return true;
	if (h->mode != PVO_HV_SRQ_UNSET) {
		pvo_vm_warn(qp->vm,
			    "hostverbs: QP 0x%x refused: its SRQ 0x%x serves "
			    "%s, and this QP needs %s; use another SRQ for "
			    "it",
			    qp->qpn, srq->handle, mode_name(h->mode),
			    host ? "the host device" : "the software engine");
		return false;
	}
	if (host)
		serve_host(qp->vm, srq);
	else
		h->mode = want;
	return true;
}

bool pvo_hv_srq_take(struct pvo_vm *vm, struct pvo_srq *srq, uint64_t wr_id,
		     struct pvo_hv_wqe *e)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint32_t slot = (uint32_t)wr_id;

	if (!h || slot >= h->slots || !h->wqe[slot].used) {
		pvo_vm_warn(vm,
			    "hostverbs: SRQ 0x%x: a completion for no WQE "
			    "posted (host wr_id 0x%llx): dropped",
			    srq->handle, (unsigned long long)wr_id);
		return false;
	}
	*e = h->wqe[slot];
	h->wqe[slot].used = false;
	h->free[h->nfree++] = slot;
	srq->cons++;
	pvo_ring_store(vm, &srq->ring, PVO_RING_CONS, srq->cons);
	pvo_srq_check_limit(vm, srq);
	return true;
}

void pvo_hv_srq_hold(struct pvo_vm *vm, struct pvo_srq *srq, uint64_t wr_id)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint32_t slot = (uint32_t)wr_id;

	if (!h || slot >= h->slots || !h->wqe[slot].used || h->wqe[slot].held) {
		pvo_vm_warn(vm,
			    "hostverbs: SRQ 0x%x: a flush for no WQE posted "
			    "(host wr_id 0x%llx): dropped",
			    srq->handle, (unsigned long long)wr_id);
		return;
	}
	h->wqe[slot].held = true;
	h->held++;
}

/* qsort's: the slots' positions, oldest first (one thread at a time:
 * the loop's) */
static const struct pvo_hv_srq *sort_h;

static int oldest_first(const void *x, const void *y)
{
	/* every WQE out was posted within the ring's entries before
	 * posted: its age is posted - pos, in 1..entries */
	uint32_t a = sort_h->posted - sort_h->pos[*(const uint32_t *)x],
		 b = sort_h->posted - sort_h->pos[*(const uint32_t *)y];

	return a > b ? -1 : a < b;
}

void pvo_hv_srq_freeze(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint32_t *out, n = 0, i;
	const struct pvo_recv_wqe *w;

	/* an SRQ of software QPs, or of none yet: the ring says it all */
	if (!h || h->broken || h->mode != PVO_HV_SRQ_HOST)
		return;
	out = g_new(uint32_t, h->slots);
	for (i = 0; i < h->slots; i++)
		if (h->wqe[i].used)
			out[n++] = i;
	if (n != h->posted - srq->cons) {
		/* cannot be while each completion passes cons once */
		broken(vm, srq, "WQEs on the host and the ring disagree");
		g_free(out);
		return;
	}
	/* the order they were posted in */
	sort_h = h;
	qsort(out, n, sizeof(*out), oldest_first);
	sort_h = NULL;
	for (i = 0; i < n; i++) {
		w = (const void *)(h->copy + out[i] * h->stride);
		if (!pvo_ring_write(vm, &srq->ring, srq->cons + i, w,
				    sizeof(*w) +
					w->num_sge * sizeof(struct pvo_sge))) {
			broken(vm, srq, "its ring is outside guest RAM");
			break;
		}
		h->pos[out[i]] = srq->cons + i;
	}
	g_free(out);
}

void pvo_hv_srq_thaw(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint32_t i;

	if (!h)
		return;
	for (i = 0; i < h->slots && h->held; i++) {
		if (!h->wqe[i].held)
			continue;
		h->wqe[i].held = false;
		h->held--;
		/* refused: logged, the SRQ broken */
		if (!h->broken)
			post_slot(vm, srq, i);
	}
	if (h->mode == PVO_HV_SRQ_HOST)
		post(vm, srq);
}

char *pvo_hv_srq_unmovable(struct pvo_vm *vm, struct pvo_srq *srq,
			   const uint8_t *mover)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint32_t i = 0;
	void *obj;

	if (!h)
		return g_strdup("it has no host SRQ (its guest rings no SRQ "
				"doorbell)");
	if (h->mode != PVO_HV_SRQ_SW)
		return NULL;
	while ((i = pvo_table_next(&vm->qps, i, &obj))) {
		struct pvo_qp *q = obj;

		if (q->srq != srq || q->state == PVO_QPS_RESET ||
		    q->state == PVO_QPS_ERR)
			continue;
		/* a UD QP on a host SRQ is refused (hostverbs.h) */
		if (q->type == PVO_QPT_UD)
			return g_strdup_printf("UD QP 0x%x receives from it "
					       "too",
					       q->qpn);
		/* the host SRQ could not take the receive such a message
		 * holds back (it left the ring): rare, and gone once the
		 * message completes */
		if (q->resp.msg.has_rw)
			return g_strdup_printf(
			    "QP 0x%x was receiving a message in slices into "
			    "one of its WQEs (a SEND over 256 KiB): try "
			    "again",
			    q->qpn);
		if (mover && q->state >= PVO_QPS_RTR &&
		    memcmp(q->attr.path.dgid, mover, 16))
			return g_strdup_printf("QP 0x%x on it is connected to "
					       "a VM that stays here",
					       q->qpn);
	}
	return NULL;
}

void pvo_hv_srq_to_host(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);

	if (!h || h->mode != PVO_HV_SRQ_SW)
		return;
	/* the software engine completed what it took off the ring
	 * (pvo_hv_srq_unmovable): the host SRQ takes the rest */
	pvo_info(pvo_vm_name(vm),
		 "SRQ 0x%x: its QPs' connections go onto the host device, its "
		 "receives to the host SRQ",
		 srq->handle);
	serve_host(vm, srq);
}

void pvo_hv_srq_loaded(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint32_t i = 0;
	void *obj;

	if (!h)
		return;
	while ((i = pvo_table_next(&vm->qps, i, &obj))) {
		struct pvo_qp *qp = obj;

		if (qp->srq != srq || qp->state == PVO_QPS_RESET ||
		    qp->state == PVO_QPS_ERR)
			continue;
		/* a host QP receives from RTR on; a software one on a host
		 * SRQ (UD, or a local peer's) from INIT */
		if (to_hv_qp(qp) && qp->engine == &pvo_engine_hostverbs) {
			if (qp->state >= PVO_QPS_RTR)
				h->mode = PVO_HV_SRQ_HOST;
		} else {
			h->mode = PVO_HV_SRQ_SW;
		}
	}
}
