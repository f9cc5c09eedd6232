// SPDX-License-Identifier: GPL-2.0-or-later
/* Writing a VM's state stream; see state.h and state_format.h. */
#include <string.h>

#include "cq.h"
#include "engine.h"
#include "mr.h"
#include "mw.h"
#include "qp.h"
#include "srq.h"
#include "ah.h"
#include "state.h"
#include "state_format.h"
#include "transport.h"
#include "vm.h"

/* The stream being written; full once a record would take it past
 * PVO_STATE_MAX_BYTES (nothing more is appended, the save fails). */
struct st_out {
	GByteArray *s;
	bool full;
};

/* Room for a record of len payload bytes: false (and full) if none. */
static bool room(struct st_out *o, uint64_t len)
{
	uint64_t rec = sizeof(struct pvo_st_rec) + len;

	if (o->full || len > UINT32_MAX ||
	    rec > PVO_STATE_MAX_BYTES - o->s->len)
		o->full = true;
	return !o->full;
}

static void put_rec(struct st_out *o, uint16_t type, uint16_t version,
		    uint32_t len)
{
	struct pvo_st_rec r = {.type = type, .version = version, .len = len};

	g_byte_array_append(o->s, (const guint8 *)&r, sizeof(r));
}

/* Appends a record: fixed part, then up to two variable parts. */
static void put(struct st_out *o, uint16_t type, const void *fixed,
		size_t flen, const void *v1, size_t l1, const void *v2,
		size_t l2)
{
	if (!room(o, (uint64_t)flen + l1 + l2))
		return;
	put_rec(o, type, 1, (uint32_t)(flen + l1 + l2));
	g_byte_array_append(o->s, fixed, (guint)flen);
	if (l1)
		g_byte_array_append(o->s, v1, (guint)l1);
	if (l2)
		g_byte_array_append(o->s, v2, (guint)l2);
}

static void put_ring(struct pvo_st_ring *d, const struct pvo_ring *r)
{
	d->entries = r->entries;
	d->shift = r->shift;
	d->npages = r->entries ? r->npages : 0;
}

static void put_path(struct pvo_st_path *d, const struct pvo_path *p)
{
	memcpy(d->dgid, p->dgid, 16);
	memcpy(d->dmac, p->dmac, 6);
	d->sgid_index = p->sgid_index;
	d->hop_limit = p->hop_limit;
	d->flow_label = p->flow_label;
	d->traffic_class = p->traffic_class;
	d->sl = p->sl;
}

static void put_db(struct pvo_st_db_ring *d, const struct pvo_db_ring *r)
{
	d->set = r->set;
	d->gpa = r->gpa;
	d->cons = r->cons;
}

static void save_vm(struct st_out *s, struct pvo_vm *vm)
{
	struct pvo_st_vm v = {0};
	unsigned int i;

	v.move_gen = vm->move_gen;
	v.next_qpn = vm->next_qpn;
	v.mr_tag = vm->mr_tag;
	put_db(&v.kernel_db, &vm->kernel.db);
	v.notify_set = vm->notify.set;
	v.notify_gpa = vm->notify.gpa;
	v.notify_num_queues = vm->notify.num_queues;
	v.notify_entries = vm->notify.entries;
	memcpy(v.notify_cons, vm->notify.cons, sizeof(v.notify_cons));
	G_STATIC_ASSERT(PVO_ST_GIDS == PVO_GID_TABLE_LEN);
	for (i = 0; i < PVO_ST_GIDS; i++) {
		v.gids[i].valid = vm->gids.e[i].valid;
		memcpy(v.gids[i].gid, vm->gids.e[i].gid, 16);
		v.gids[i].type = vm->gids.e[i].type;
	}
	put(s, PVO_ST_VM, &v, sizeof(v), NULL, 0, NULL, 0);
}

/* An MR, its page list as the runs it keeps (PVO_ST_MR_VERSION). */
static void save_mr(struct st_out *o, const struct pvo_mr *mr)
{
	const struct pvo_page_runs *p = &mr->pages;
	struct pvo_st_mr m = {.handle = mr->handle,
			      .ctx = mr->ctx,
			      .pd = mr->pd->handle,
			      .key = mr->key,
			      .access = mr->access,
			      .max_pages = mr->max_pages,
			      .valid = mr->valid,
			      .fast_reg = mr->fast_reg,
			      .iova = mr->iova,
			      .length = mr->length,
			      .npages = p->npages};
	struct pvo_st_mr_runs h = {0};
	uint64_t len;
	uint32_t k, n;

	for (k = 0; k < p->nruns; k++)
		h.nruns += (pvo_page_run_len(p, k) + PVO_ST_RUN_MAX - 1) /
			   PVO_ST_RUN_MAX;
	len = sizeof(m) + sizeof(h) +
	      (uint64_t)h.nruns * sizeof(struct pvo_st_mr_run);
	if (!room(o, len))
		return;
	put_rec(o, PVO_ST_MR, PVO_ST_MR_VERSION, (uint32_t)len);
	g_byte_array_append(o->s, (const guint8 *)&m, sizeof(m));
	g_byte_array_append(o->s, (const guint8 *)&h, sizeof(h));
	for (k = 0; k < p->nruns; k++) {
		uint64_t gpa = pvo_page_run_gpa(p, k);
		uint32_t left = pvo_page_run_len(p, k);

		for (; left; left -= n, gpa += (uint64_t)n << PVO_PAGE_SHIFT) {
			struct pvo_st_mr_run r;

			n = MIN(left, (uint32_t)PVO_ST_RUN_MAX);
			r.page = gpa | (n - 1);
			g_byte_array_append(o->s, (const guint8 *)&r,
					    sizeof(r));
		}
	}
}

static void save_qp(struct st_out *s, const struct pvo_qp *qp)
{
	struct pvo_st_qp q = {0};
	const struct pvo_qp_attrs *a = &qp->attr;
	GByteArray *var = g_byte_array_new();

	q.handle = qp->handle;
	q.ctx = qp->ctx;
	q.qpn = qp->qpn;
	q.pd = qp->pd->handle;
	q.scq = qp->scq->handle;
	q.rcq = qp->rcq->handle;
	q.srq = qp->srq ? qp->srq->handle : 0;
	q.type = qp->type;
	q.state = qp->state;
	q.sq_sig_all = qp->sq_sig_all;
	q.max_send_sge = qp->max_send_sge;
	q.max_recv_sge = qp->max_recv_sge;
	q.max_inline = qp->max_inline;
	q.qkey = a->qkey;
	q.rq_psn = a->rq_psn;
	q.sq_psn = a->sq_psn;
	q.dest_qpn = a->dest_qpn;
	q.access = a->access;
	q.path_mtu = a->path_mtu;
	q.min_rnr_timer = a->min_rnr_timer;
	q.timeout = a->timeout;
	q.retry_cnt = a->retry_cnt;
	q.rnr_retry = a->rnr_retry;
	q.max_rd_atomic = a->max_rd_atomic;
	q.max_dest_rd_atomic = a->max_dest_rd_atomic;
	q.en_sqd_async_notify = a->en_sqd_async_notify;
	put_path(&q.path, &a->path);
	/* the engine's and the transports' parts (a VM with QPs of an
	 * engine that cannot save them is not saved, vhost_state.c) */
	if (qp->engine->save)
		qp->engine->save(qp, &q);
	pvo_transport_save_qp(qp, &q);
	q.nmcast = qp->nmcast;
	put_ring(&q.sq, &qp->sq);
	put_ring(&q.rq, &qp->rq);
	g_byte_array_append(var, (const guint8 *)qp->sq.pages, q.sq.npages * 8);
	g_byte_array_append(var, (const guint8 *)qp->rq.pages, q.rq.npages * 8);
	put(s, PVO_ST_QP, &q, sizeof(q), var->data, var->len, qp->mcast,
	    (size_t)qp->nmcast * PVO_GID_LEN);
	g_byte_array_free(var, TRUE);
}

#define EACH(table, obj)                                                       \
	for (h = 0; (h = pvo_table_next(&vm->table, h, (void **)&(obj)));)

GByteArray *pvo_state_save(struct pvo_vm *vm)
{
	struct st_out o = {.s = g_byte_array_new()}, *s = &o;
	struct pvo_st_header hdr = {.version = PVO_STATE_VERSION,
				    .iface_version = PVO_INTERFACE_VERSION};
	struct pvo_st_events ev = {0};
	struct pvo_ucontext *uctx;
	struct pvo_mr *mr;
	struct pvo_mw *mw;
	struct pvo_cq *cq;
	struct pvo_srq *srq;
	struct pvo_ah *ah;
	struct pvo_qp *qp;
	struct pvo_pd *pd;
	uint32_t h, i;

	memcpy(hdr.magic, PVO_STATE_MAGIC, sizeof(hdr.magic));
	g_strlcpy(hdr.vm, pvo_vm_name(vm), sizeof(hdr.vm));
	g_byte_array_append(o.s, (const guint8 *)&hdr, sizeof(hdr));
	save_vm(s, vm);
	EACH(ucontexts, uctx)
	{
		struct pvo_st_ucontext u = {.handle = uctx->handle,
					    .db_queue = uctx->db_queue,
					    .db_page = uctx->db_page};

		put_db(&u.db, &uctx->db);
		put(s, PVO_ST_UCONTEXT, &u, sizeof(u), NULL, 0, NULL, 0);
	}
	EACH(pds, pd)
	{
		struct pvo_st_pd p = {.handle = pd->handle, .ctx = pd->ctx};

		put(s, PVO_ST_PD, &p, sizeof(p), NULL, 0, NULL, 0);
	}
	EACH(mrs, mr)
	save_mr(&o, mr);
	EACH(mws, mw)
	{
		struct pvo_st_mw w = {.handle = mw->handle,
				      .ctx = mw->ctx,
				      .pd = mw->pd->handle,
				      .rkey = mw->rkey,
				      .mr = mw->mr ? mw->mr->handle : 0,
				      .qpn = mw->qpn,
				      .access = mw->access,
				      .type = mw->type,
				      .bound = mw->bound,
				      .addr = mw->addr,
				      .length = mw->length};

		put(s, PVO_ST_MW, &w, sizeof(w), NULL, 0, NULL, 0);
	}
	EACH(cqs, cq)
	{
		struct pvo_st_cq c = {.handle = cq->handle,
				      .ctx = cq->ctx,
				      .prod = cq->prod,
				      .cons_seen = cq->cons_seen,
				      .error = cq->error,
				      .no_events = cq->no_events};

		put_ring(&c.ring, &cq->ring);
		put(s, PVO_ST_CQ, &c, sizeof(c), cq->ring.pages,
		    c.ring.npages * 8ull, NULL, 0);
	}
	EACH(srqs, srq)
	{
		struct pvo_st_srq c = {.handle = srq->handle,
				       .ctx = srq->ctx,
				       .pd = srq->pd->handle,
				       .max_sge = srq->max_sge,
				       .limit = srq->limit,
				       .cons = srq->cons};

		put_ring(&c.ring, &srq->ring);
		put(s, PVO_ST_SRQ, &c, sizeof(c), srq->ring.pages,
		    c.ring.npages * 8ull, NULL, 0);
	}
	EACH(ahs, ah)
	{
		struct pvo_st_ah a = {
		    .handle = ah->handle, .ctx = ah->ctx, .pd = ah->pd->handle};

		put_path(&a.path, &ah->path);
		put(s, PVO_ST_AH, &a, sizeof(a), NULL, 0, NULL, 0);
	}
	EACH(qps, qp)
	save_qp(s, qp);
	/* events the guest has not taken yet, oldest first */
	{
		struct pvo_event *e =
		    g_new(struct pvo_event, vm->events.count + 1);

		ev.count = vm->events.count;
		for (i = 0; i < ev.count; i++)
			e[i] = vm->events.pending[(vm->events.head + i) %
						  PVO_EVENT_PENDING_MAX];
		put(s, PVO_ST_EVENTS, &ev, sizeof(ev), e, ev.count * sizeof(*e),
		    NULL, 0);
		g_free(e);
	}
	put(s, PVO_ST_END, NULL, 0, NULL, 0, NULL, 0);
	if (o.full) {
		pvo_log(pvo_vm_name(vm),
			"the VM's RDMA state takes more than %llu bytes: not "
			"saved",
			(unsigned long long)PVO_STATE_MAX_BYTES);
		g_byte_array_free(o.s, TRUE);
		return NULL;
	}
	return o.s;
}
