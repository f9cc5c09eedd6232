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
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <glib.h>

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
	h->srq = ibv_create_srq(pd, &ia);
	if (!h->srq) {
		pvo_vm_warn(vm, "hostverbs: %s: SRQ of %u WQEs, %u SGEs: %s",
			    d->name, srq->ring.entries, ia.attr.max_sge,
			    g_strerror(errno));
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
	g_free(h->wqe);
	g_free(h->free);
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
	err = ibv_modify_srq(h->srq, &a, IBV_SRQ_MAX_WR);
	if (err) {
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

/* The guest's receives from h->posted on to the host SRQ. */
static void post(struct pvo_vm *vm, struct pvo_srq *srq)
{
	struct pvo_hv_srq *h = to_hv_srq(srq);
	uint8_t buf[sizeof(struct pvo_recv_wqe) +
		    PVO_DEV_MAX_SGE * sizeof(struct pvo_sge)]
	    __attribute__((aligned(8)));
	const struct pvo_recv_wqe *w = (const void *)buf;
	const struct pvo_sge *g = (const void *)(buf + sizeof(*w));
	struct ibv_sge sge[PVO_DEV_MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	struct pvo_hv_wqe *e;
	uint32_t prod, slot;
	int err;

	if (h->broken || !pvo_ring_load(vm, &srq->ring, PVO_RING_PROD, &prod))
		return;
	if (prod - srq->cons > srq->ring.entries ||
	    h->posted - srq->cons > prod - srq->cons) {
		broken(vm, srq, "producer not within the ring of the consumer");
		return;
	}
	while (h->posted != prod) {
		if (!pvo_ring_read_wqe(vm, &srq->ring, h->posted, buf,
				       sizeof(*w), pvo_recv_wqe_tail)) {
			broken(vm, srq, "a WQE outside guest RAM");
			return;
		}
		if (w->num_sge > srq->max_sge) {
			broken(vm, srq, "a WQE with more SGEs than the SRQ's");
			return;
		}
		/* at most ring entries are out: a slot is free */
		if (!h->nfree) {
			broken(vm, srq, "more WQEs out than the ring holds");
			return;
		}
		pvo_hv_take_sges(sge, g, w->num_sge);
		slot = h->free[--h->nfree];
		e = &h->wqe[slot];
		*e = (struct pvo_hv_wqe){.wr_id = w->wr_id, .used = true};
		if (w->num_sge) {
			e->addr = sge[0].addr;
			e->length = sge[0].length;
			e->lkey = sge[0].lkey;
		}
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = HV_WR_SRQ | slot;
		wr.sg_list = sge;
		wr.num_sge = w->num_sge;
		err = ibv_post_srq_recv(h->srq, &wr, &bad);
		if (err) {
			e->used = false;
			h->free[h->nfree++] = slot;
			pvo_vm_warn(vm,
				    "hostverbs: %s SRQ 0x%x: "
				    "ibv_post_srq_recv: %s",
				    h->dev->name, srq->handle, g_strerror(err));
			h->broken = true;
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
	h->mode = want;
	if (host) {
		/* what the guest posted before (the ring kept it) */
		h->posted = srq->cons;
		post(qp->vm, srq);
	}
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
