// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The software engine's part of a QP in the migration stream
 * (migration/state_part.h): the requester's and the responder's places
 * in their rings and a message arriving in packets. The requester goes
 * from its oldest WQE not completed (comp.c keeps sq_psn at that WQE's
 * first PSN); its WQEs sent ahead and READ responses go again, and so
 * does a WQE copied in part (in slices): from its first byte, which its
 * responder, holding the message open with the same receive WQE, takes
 * as the message starting over.
 */
#include <inttypes.h>
#include <string.h>

#include "engine.h"
#include "qp.h"
#include "state_part.h"
#include "vm.h"

static void save_dma(struct pvo_st_dma *d, const struct pvo_dma *s)
{
	unsigned int i;

	G_STATIC_ASSERT(PVO_ST_DMA_RANGES >= PVO_DMA_MAX_RANGES);
	d->len = s->len;
	d->n = s->n;
	d->i = s->i;
	d->off = s->off;
	for (i = 0; i < s->n; i++) {
		d->r[i].kind = s->r[i].kind;
		d->r[i].key = s->r[i].key;
		d->r[i].access = s->r[i].access;
		d->r[i].qpn = s->r[i].qpn;
		d->r[i].pd = s->r[i].pd ? s->r[i].pd->handle : 0;
		d->r[i].addr = s->r[i].addr;
		d->r[i].len = s->r[i].len;
	}
}

void pvo_sw_save(const struct pvo_qp *qp, struct pvo_st_qp *q)
{
	const typeof(qp->resp.msg) *m = &qp->resp.msg;

	q->sq_cons = qp->sq_cons;
	q->rq_cons = qp->rq_cons;
	q->msn = qp->resp.msn;
	q->comm_est = qp->resp.comm_est;
	q->msg_active = m->active;
	q->msg_op = m->op;
	q->msg_has_rw = m->has_rw;
	q->msg_st = m->st;
	q->msg_off = m->off;
	q->msg_rkey = m->rkey;
	q->msg_va = m->va;
	q->msg_len = m->len;
	q->rw_wr_id = m->rw.wr_id;
	if (m->has_rw)
		save_dma(&q->rw_dma, &m->rw.dma);
}

/* A receive cursor: every MR range is looked up again by its key at its
 * first use (mr_gen is stale), with the checks of pvo_dma.h. */
static bool dma_ok(struct pvo_st_loader *l, struct pvo_vm *vm,
		   struct pvo_dma *d, const struct pvo_st_dma *s, uint32_t ctx)
{
	uint64_t sum = 0;
	unsigned int i;

	PVO_ST_CHECK(s->n <= PVO_DMA_MAX_RANGES && s->i <= s->n, "rw_dma",
		     "%u ranges, cursor at %u", s->n, s->i);
	pvo_dma_init(d, vm);
	for (i = 0; i < s->n; i++) {
		const struct pvo_st_dma_range *r = &s->r[i];
		struct pvo_dma_range *o = &d->r[i];
		/* GPAs (PVO_LOCAL_DMA_LKEY): kernel QPs only */
		bool kind_ok =
		    r->kind == PVO_DMA_MR ||
		    (r->kind == PVO_DMA_PHYS && ctx == PVO_CTX_KERNEL);

		PVO_ST_CHECK(kind_ok, "rw_dma", "range %u of kind %u", i,
			     r->kind);
		PVO_ST_CHECK(r->len && r->addr + r->len > r->addr &&
				 sum + r->len > sum,
			     "rw_dma", "range %u: 0x%" PRIx64 " + 0x%" PRIx64,
			     i, r->addr, r->len);
		memset(o, 0, sizeof(*o));
		o->kind = r->kind;
		o->key = r->key;
		o->access = r->access;
		o->qpn = r->qpn;
		o->addr = r->addr;
		o->len = r->len;
		if (r->kind == PVO_DMA_MR) {
			o->pd = pvo_table_get(&vm->pds, r->pd, ctx);
			PVO_ST_CHECK(o->pd, "rw_dma", "range %u: no PD 0x%x", i,
				     r->pd);
		}
		sum += r->len;
	}
	PVO_ST_CHECK(sum == s->len, "rw_dma",
		     "ranges sum to %" PRIu64 ", not %" PRIu64, sum, s->len);
	PVO_ST_CHECK(s->i < s->n ? s->off < s->r[s->i].len : s->off == 0,
		     "rw_dma", "cursor offset %" PRIu64, s->off);
	d->len = s->len;
	d->n = s->n;
	d->i = s->i;
	d->off = s->off;
	d->mr_gen = vm->mr_gen - 1;
	return true;
}

bool pvo_sw_load(struct pvo_qp *qp, const struct pvo_st_qp *q,
		 struct pvo_st_loader *l)
{
	typeof(qp->resp.msg) *m = &qp->resp.msg;

	qp->sq_cons = q->sq_cons;
	qp->req.prod_seen = q->sq_cons;
	qp->rq_cons = q->rq_cons;
	qp->resp.rq_prod_seen = q->rq_cons;
	PVO_ST_CHECK(q->msn <= PVO_QPN_MAX && q->comm_est <= 1, "msn",
		     "0x%x/%u", q->msn, q->comm_est);
	qp->resp.msn = q->msn;
	qp->resp.comm_est = q->comm_est;
	PVO_ST_CHECK(q->msg_active <= 1 && q->msg_has_rw <= 1 &&
			 q->msg_op <= PVO_OP_FETCH_ADD &&
			 q->msg_st <= PVO_WC_GENERAL_ERR,
		     "msg", "active %u, op %u, rw %u, status %u", q->msg_active,
		     q->msg_op, q->msg_has_rw, q->msg_st);
	m->active = q->msg_active;
	m->op = q->msg_op;
	m->has_rw = q->msg_has_rw;
	m->st = q->msg_st;
	m->off = q->msg_off;
	m->rkey = q->msg_rkey;
	m->va = q->msg_va;
	m->len = q->msg_len;
	m->rw.wr_id = q->rw_wr_id;
	if (m->has_rw && !dma_ok(l, qp->vm, &m->rw.dma, &q->rw_dma, qp->ctx))
		return false;
	PVO_ST_CHECK(!m->active ||
			 m->off <= (m->has_rw ? m->rw.dma.len : m->len),
		     "msg_off", "%" PRIu64 " bytes placed", m->off);
	return true;
}
