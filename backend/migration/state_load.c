// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reading a VM's state stream; see state.h. The stream comes from another
 * back-end through the front-end: every field is checked as the command
 * that created the object checks it (against the destination's quotas
 * and limits), and every object it names must come earlier in the
 * stream, owned by the same context. What cannot be checked before the
 * guest's memory table arrives (that GPAs are guest RAM) is checked at
 * each use, as for objects the guest creates. A QP's engine and
 * transports check their own fields of its record (state_part.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "ah.h"
#include "cq.h"
#include "device.h"
#include "engine.h"
#include "mcast.h"
#include "mr.h"
#include "mw.h"
#include "qp.h"
#include "srq.h"
#include "state.h"
#include "state_part.h"
#include "transport.h"
#include "vm.h"

#define CQE_SHIFT 6
#define SRQ_MAX_ENTRIES PVO_DEV_MAX_QP_WR

struct pvo_st_loader {
	struct pvo_vm *vm;
	char **err;
	unsigned int recno;
	const char *what; /* record type, for messages */
	uint32_t handle;  /* object of the record, for messages */
	GHashTable *keys; /* MR keys an engine chose (no slot in them) */
};

bool pvo_st_refuse(struct pvo_st_loader *l, const char *field, const char *fmt,
		   ...)
{
	va_list ap;
	char *why;

	va_start(ap, fmt);
	why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	*l->err = g_strdup_printf("record %u (%s 0x%x): field %s: %s", l->recno,
				  l->what, l->handle, field, why);
	g_free(why);
	return false;
}

#define CHECK(cond, field, ...) PVO_ST_CHECK(cond, field, __VA_ARGS__)

static bool ctx_ok(struct pvo_st_loader *l, uint32_t ctx)
{
	CHECK(pvo_vm_ctx(l->vm, ctx), "ctx", "no context 0x%x before it", ctx);
	return true;
}

static struct pvo_pd *pd_of(struct pvo_st_loader *l, uint32_t pd, uint32_t ctx)
{
	struct pvo_pd *p = pvo_table_get(&l->vm->pds, pd, ctx);

	if (!p)
		pvo_st_refuse(l, "pd", "no PD 0x%x of context 0x%x before it",
			      pd, ctx);
	return p;
}

static bool add(struct pvo_st_loader *l, struct pvo_table *t, uint32_t handle,
		void *obj, uint32_t owner)
{
	CHECK(pvo_table_add_at(t, handle, obj, owner), "handle",
	      "not a free %s handle within max-%s (%u)", t->what, t->what,
	      t->limit);
	return true;
}

static bool gpa_page_ok(uint64_t gpa)
{
	return !(gpa & (PVO_PAGE_SIZE - 1));
}

/* A ring's description and its npages GPAs from *var (advanced). */
static bool ring_ok(struct pvo_st_loader *l, struct pvo_ring *r,
		    const char *name, const struct pvo_st_ring *s,
		    uint32_t max_entries, unsigned int shift,
		    const uint8_t **var, size_t *left)
{
	uint64_t *gpas;
	uint32_t i;

	CHECK(pvo_is_pow2(s->entries) && s->entries <= max_entries, name,
	      "%u entries (a power of 2 up to %u)", s->entries, max_entries);
	CHECK(s->shift == shift, name, "stride 2^%u, needs 2^%u", s->shift,
	      shift);
	CHECK(s->npages == pvo_ring_pages(s->entries, s->shift), name,
	      "%u pages for %u entries", s->npages, s->entries);
	CHECK(*left >= s->npages * 8ull, name, "page list truncated");
	gpas = g_memdup2(*var, s->npages * 8ull); /* aligned */
	for (i = 0; i < s->npages; i++)
		if (!gpa_page_ok(gpas[i])) {
			pvo_st_refuse(l, name,
				      "page %u at 0x%" PRIx64 " not page "
				      "aligned",
				      i, gpas[i]);
			g_free(gpas);
			return false;
		}
	if (!pvo_ring_restore(r, &l->vm->host_mem, gpas, s->npages,
			      s->entries, s->shift)) {
		g_free(gpas);
		return pvo_st_refuse(l, name, "%u pages over max-host-mem",
				     s->npages);
	}
	g_free(gpas);
	*var += s->npages * 8ull;
	*left -= s->npages * 8ull;
	return true;
}

static bool path_ok(struct pvo_st_loader *l, struct pvo_path *p,
		    const struct pvo_st_path *s)
{
	CHECK(s->sgid_index < PVO_GID_TABLE_LEN && s->flow_label <= 0xfffff &&
		  s->sl <= 15,
	      "path", "sgid_index %u, flow_label 0x%x, sl %u", s->sgid_index,
	      s->flow_label, s->sl);
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, s->dgid, 16);
	memcpy(p->dmac, s->dmac, 6);
	p->sgid_index = s->sgid_index;
	p->hop_limit = s->hop_limit;
	p->flow_label = s->flow_label;
	p->traffic_class = s->traffic_class;
	p->sl = s->sl;
	return true;
}

static bool db_ok(struct pvo_st_loader *l, struct pvo_db_ring *d,
		  const struct pvo_st_db_ring *s)
{
	CHECK(s->set <= 1 && (!s->set || gpa_page_ok(s->gpa)), "db",
	      "doorbell record page 0x%" PRIx64, s->gpa);
	d->set = s->set;
	d->gpa = s->set ? s->gpa : 0;
	d->cons = s->cons;
	return true;
}

static bool load_vm(struct pvo_st_loader *l, const struct pvo_st_vm *v)
{
	struct pvo_vm *vm = l->vm;
	unsigned int i, nq = pvo_device_max_queues(vm->cfg);

	CHECK(v->next_qpn >= 2 && v->next_qpn <= PVO_QPN_MAX + 1, "next_qpn",
	      "%u", v->next_qpn);
	vm->next_qpn = v->next_qpn;
	vm->move_gen = v->move_gen;
	vm->mr_tag = v->mr_tag;
	if (!db_ok(l, &vm->kernel.db, &v->kernel_db))
		return false;
	CHECK(v->notify_set <= 1, "notify_set", "%u", v->notify_set);
	if (v->notify_set) {
		CHECK(gpa_page_ok(v->notify_gpa) &&
			  v->notify_num_queues > PVO_VQ_DB_KERNEL &&
			  v->notify_num_queues <= nq,
		      "notify", "area at 0x%" PRIx64 " for %u queues (3..%u)",
		      v->notify_gpa, v->notify_num_queues, nq);
		CHECK(v->notify_entries ==
			  pvo_notify_ring_entries(v->notify_num_queues),
		      "notify_entries", "%u", v->notify_entries);
		vm->notify.set = true;
		vm->notify.gpa = v->notify_gpa;
		vm->notify.num_queues = v->notify_num_queues;
		vm->notify.entries = v->notify_entries;
		memcpy(vm->notify.cons, v->notify_cons,
		       sizeof(vm->notify.cons));
	}
	for (i = 0; i < PVO_ST_GIDS; i++) {
		const struct pvo_st_gid *g = &v->gids[i];

		CHECK(g->valid <= 1, "gids", "entry %u: valid %u", i, g->valid);
		if (!g->valid)
			continue;
		/* the tenant's rules, which may differ on this host */
		CHECK(pvo_gid_allowed(vm->cfg, g->gid), "gids",
		      "entry %u: a GID this VM's config does not allow", i);
		vm->gids.e[i].valid = true;
		memcpy(vm->gids.e[i].gid, g->gid, 16);
		vm->gids.e[i].type = g->type;
	}
	return true;
}

static bool load_ucontext(struct pvo_st_loader *l,
			  const struct pvo_st_ucontext *u)
{
	struct pvo_vm *vm = l->vm;
	struct pvo_ucontext *uctx;
	unsigned int nq = pvo_device_max_queues(vm->cfg);

	if (u->db_page < PVO_DB_SLOT_PAGE0) {
		CHECK(u->db_page == u->db_queue &&
			  u->db_queue >= PVO_VQ_DB_FIRST_USER &&
			  u->db_queue < nq && !vm->db_queue_ctx[u->db_queue],
		      "db_page", "queue page %u (a free user queue below %u)",
		      u->db_page, nq);
	} else {
		uint32_t s = u->db_page - PVO_DB_SLOT_PAGE0;

		CHECK(vm->notify.set && s < PVO_MAX_DB_SLOTS &&
			  !vm->notify.slot_ctx[s] &&
			  u->db_queue ==
			      pvo_db_slot_queue(vm->notify.num_queues, s),
		      "db_page", "slot page %u on queue %u", u->db_page,
		      u->db_queue);
	}
	uctx = g_new0(struct pvo_ucontext, 1);
	if (!db_ok(l, &uctx->db, &u->db) ||
	    !add(l, &vm->ucontexts, u->handle, uctx, PVO_CTX_KERNEL)) {
		g_free(uctx);
		return false;
	}
	uctx->handle = u->handle;
	uctx->db_queue = u->db_queue;
	uctx->db_page = u->db_page;
	if (u->db_page < PVO_DB_SLOT_PAGE0)
		vm->db_queue_ctx[u->db_queue] = u->handle;
	else
		vm->notify.slot_ctx[u->db_page - PVO_DB_SLOT_PAGE0] = u->handle;
	return true;
}

static bool load_pd(struct pvo_st_loader *l, const struct pvo_st_pd *p)
{
	struct pvo_pd *pd;

	if (!ctx_ok(l, p->ctx))
		return false;
	pd = g_new0(struct pvo_pd, 1);
	pd->handle = p->handle;
	pd->ctx = p->ctx;
	if (!add(l, &l->vm->pds, p->handle, pd, p->ctx)) {
		g_free(pd);
		return false;
	}
	return true;
}

/* Version 1: npages GPAs, one a page (unaligned in the payload). */
static bool mr_pages_v1(struct pvo_st_loader *l, const struct pvo_st_mr *m,
			const uint8_t *var, size_t left,
			struct pvo_page_runs *out)
{
	uint64_t gpa;
	uint32_t i;

	CHECK(left == m->npages * 8ull, "pages", "%zu bytes for %u pages", left,
	      m->npages);
	pvo_page_runs_init(out, &l->vm->host_mem);
	for (i = 0; i < m->npages; i++) {
		memcpy(&gpa, var + i * 8ull, 8);
		if (!gpa_page_ok(gpa)) {
			pvo_page_runs_free(out);
			return pvo_st_refuse(l, "pages",
					     "page %u at 0x%" PRIx64
					     " not aligned",
					     i, gpa);
		}
		if (pvo_page_runs_add(out, gpa)) {
			pvo_page_runs_free(out);
			return pvo_st_refuse(l, "pages",
					     "page %u at 0x%" PRIx64 ": not "
					     "a guest page frame, or over "
					     "max-host-mem (%" PRIu64 ")",
					     i, gpa, l->vm->host_mem.limit);
		}
	}
	pvo_page_runs_trim(out);
	return true;
}

/* Version 2: runs that cover the npages. */
static bool mr_pages_v2(struct pvo_st_loader *l, const struct pvo_st_mr *m,
			const uint8_t *var, size_t left,
			struct pvo_page_runs *out)
{
	struct pvo_st_mr_runs h;
	struct pvo_st_mr_run r;
	uint32_t k;

	CHECK(left >= sizeof(h), "nruns", "missing");
	memcpy(&h, var, sizeof(h));
	var += sizeof(h);
	left -= sizeof(h);
	CHECK(h.nruns <= m->npages && (h.nruns > 0) == (m->npages > 0) &&
		  left == (uint64_t)h.nruns * sizeof(r),
	      "nruns", "%u for %u pages in %zu bytes", h.nruns, m->npages,
	      left);
	pvo_page_runs_init(out, &l->vm->host_mem);
	for (k = 0; k < h.nruns; k++) {
		uint64_t gpa;
		uint32_t n;

		memcpy(&r, var + (size_t)k * sizeof(r), sizeof(r));
		gpa = r.page & ~(uint64_t)(PVO_PAGE_SIZE - 1);
		n = (uint32_t)(r.page & (PVO_PAGE_SIZE - 1)) + 1;
		if (n > m->npages - out->npages ||
		    pvo_page_runs_add_run(out, gpa, n)) {
			uint32_t before = out->npages;

			pvo_page_runs_free(out);
			return pvo_st_refuse(l, "runs",
					     "run %u: %u pages at 0x%" PRIx64
					     " (%u of %u pages before it; "
					     "max-host-mem %" PRIu64 ")",
					     k, n, gpa, before, m->npages,
					     l->vm->host_mem.limit);
		}
	}
	if (out->npages != m->npages) {
		pvo_page_runs_free(out);
		return pvo_st_refuse(l, "runs", "%u pages of %u", out->npages,
				     m->npages);
	}
	pvo_page_runs_trim(out);
	return true;
}

static bool load_mr(struct pvo_st_loader *l, const struct pvo_st_mr *m,
		    unsigned int version, const uint8_t *var, size_t left)
{
	struct pvo_vm *vm = l->vm;
	struct pvo_pd *pd = pd_of(l, m->pd, m->ctx);
	struct pvo_page_runs pages = {0};
	struct pvo_mr *mr;

	if (!pd)
		return false;
	CHECK(pvo_mr_access_valid(m->access), "access", "0x%x", m->access);
	CHECK(m->valid <= 1 && m->fast_reg <= 1, "valid", "%u/%u", m->valid,
	      m->fast_reg);
	if (m->ctx != PVO_CTX_KERNEL && !m->fast_reg &&
	    pvo_vm_engine_for(vm->cfg)) {
		/* a key the engine's device chose: one MR each */
		if (!l->keys)
			l->keys = g_hash_table_new(NULL, NULL);
		CHECK(g_hash_table_add(l->keys, GUINT_TO_POINTER(m->key)),
		      "key", "0x%x names another MR too", m->key);
	} else {
		CHECK(m->key >> 8 == pvo_handle_index(m->handle), "key",
		      "0x%x does not name slot %u", m->key,
		      pvo_handle_index(m->handle));
	}
	if (m->fast_reg) {
		CHECK(m->ctx == PVO_CTX_KERNEL && m->max_pages &&
			  m->max_pages <= PVO_MAX_FAST_REG_PAGES,
		      "max_pages", "%u (kernel fast-reg MRs, 1..%u)",
		      m->max_pages, PVO_MAX_FAST_REG_PAGES);
		CHECK(m->npages <= m->max_pages, "npages", "%u of %u",
		      m->npages, m->max_pages);
		CHECK(!m->valid || m->npages, "npages", "a valid MR with none");
	} else {
		CHECK(m->valid && m->max_pages == 0, "valid",
		      "a registered MR must be valid");
	}
	if (m->npages || !m->fast_reg) {
		CHECK(m->length && m->iova + m->length > m->iova &&
			  m->length <= pvo_device_max_mr_size(vm->cfg),
		      "length",
		      "[0x%" PRIx64 ", +0x%" PRIx64 ") (max-mr-size "
		      "%" PRIu64 ")",
		      m->iova, m->length, pvo_device_max_mr_size(vm->cfg));
		CHECK(m->npages == pvo_mr_npages(m->iova, m->length) &&
			  m->npages <= PVO_PDIR_MAX_PAGES,
		      "npages", "%u for the range", m->npages);
	}
	CHECK(vm->mrs.count < vm->mrs.limit, "handle",
	      "more MRs than max-mr (%u)", vm->mrs.limit);
	if (!(version == 1 ? mr_pages_v1 : mr_pages_v2)(l, m, var, left,
							&pages))
		return false;
	mr = g_new0(struct pvo_mr, 1);
	mr->ctx = m->ctx;
	mr->pd = pd;
	mr->key = m->key;
	mr->access = m->access;
	mr->iova = m->iova;
	mr->length = m->length;
	mr->valid = m->valid;
	mr->fast_reg = m->fast_reg;
	mr->max_pages = m->max_pages;
	pvo_mr_set_pages(mr, &pages);
	if (!add(l, &vm->mrs, m->handle, mr, m->ctx)) {
		pvo_page_runs_free(&mr->pages);
		g_free(mr);
		return false;
	}
	mr->handle = m->handle;
	pd->refcnt++;
	return true;
}

static bool load_mw(struct pvo_st_loader *l, const struct pvo_st_mw *w)
{
	struct pvo_vm *vm = l->vm;
	struct pvo_pd *pd = pd_of(l, w->pd, w->ctx);
	struct pvo_mr *mr = NULL;
	struct pvo_mw *mw;

	if (!pd)
		return false;
	CHECK(w->ctx != PVO_CTX_KERNEL, "ctx", "windows are user objects");
	CHECK(w->type == 1 || w->type == 2, "type", "%u", w->type);
	CHECK(w->bound <= 1, "bound", "%u", w->bound);
	CHECK((w->rkey & PVO_MW_KEY_BIT) && (w->rkey & ~PVO_MW_KEY_BIT) >> 8 ==
						pvo_handle_index(w->handle),
	      "rkey", "0x%x is not the window key of slot %u", w->rkey,
	      pvo_handle_index(w->handle));
	CHECK(!(w->access & ~(PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_WRITE |
			      PVO_ACCESS_REMOTE_ATOMIC)),
	      "access", "0x%x", w->access);
	if (w->mr) {
		mr = pvo_table_get(&vm->mrs, w->mr, w->ctx);
		/* what BIND_MW would have refused (pvo_mw_bind) */
		CHECK(mr && w->bound && mr->pd == pd && !mr->fast_reg &&
			  pvo_mw_may_bind(mr, w->access) &&
			  pvo_range_covers(mr->iova, mr->length, w->addr,
					   w->length),
		      "mr", "MR 0x%x does not allow this binding", w->mr);
	}
	CHECK(w->type == 2 || !w->qpn, "qpn", "type 1 windows have none");
	mw = g_new0(struct pvo_mw, 1);
	if (!add(l, &vm->mws, w->handle, mw, w->ctx)) {
		g_free(mw);
		return false;
	}
	mw->handle = w->handle;
	mw->ctx = w->ctx;
	mw->rkey = w->rkey;
	mw->type = w->type;
	mw->bound = w->bound;
	mw->pd = pd;
	mw->mr = mr;
	mw->qpn = w->qpn;
	mw->access = w->access;
	mw->addr = w->addr;
	mw->length = w->length;
	pd->refcnt++;
	if (mr)
		mr->mw_binds++;
	return true;
}

static bool load_cq(struct pvo_st_loader *l, const struct pvo_st_cq *c,
		    const uint8_t *var, size_t left)
{
	struct pvo_cq *cq;

	if (!ctx_ok(l, c->ctx))
		return false;
	CHECK(c->error <= 1 && c->no_events <= 1, "flags", "%u/%u", c->error,
	      c->no_events);
	cq = g_new0(struct pvo_cq, 1);
	if (!ring_ok(l, &cq->ring, "ring", &c->ring, PVO_DEV_MAX_CQE, CQE_SHIFT,
		     &var, &left) ||
	    !(left == 0 ||
	      pvo_st_refuse(l, "ring", "%zu bytes too many", left)) ||
	    !add(l, &l->vm->cqs, c->handle, cq, c->ctx)) {
		pvo_ring_fini(&cq->ring);
		g_free(cq);
		return false;
	}
	cq->handle = c->handle;
	cq->ctx = c->ctx;
	cq->prod = c->prod;
	cq->cons_seen = c->cons_seen;
	cq->error = c->error;
	cq->no_events = c->no_events;
	return true;
}

static bool load_srq(struct pvo_st_loader *l, const struct pvo_st_srq *c,
		     const uint8_t *var, size_t left)
{
	struct pvo_pd *pd = pd_of(l, c->pd, c->ctx);
	struct pvo_ucontext *uctx = pvo_vm_ctx(l->vm, c->ctx);
	struct pvo_srq *srq;

	if (!pd)
		return false;
	CHECK(c->max_sge <= PVO_DEV_MAX_SGE, "max_sge", "%u", c->max_sge);
	CHECK(c->limit <= c->ring.entries, "limit", "%u", c->limit);
	CHECK(!(c->flags & ~PVO_ST_SRQ_DOORBELL), "flags", "0x%x", c->flags);
	/* a doorbell is a record in a user context's ring, as a QP's */
	CHECK(!(c->flags & PVO_ST_SRQ_DOORBELL) ||
		  (uctx && uctx->nqps < PVO_DB_RING_ENTRIES),
	      "flags", "doorbells for an SRQ %s",
	      uctx ? "beyond what the doorbell ring holds"
		   : "of no user context");
	srq = g_new0(struct pvo_srq, 1);
	if (!ring_ok(l, &srq->ring, "ring", &c->ring, SRQ_MAX_ENTRIES,
		     pvo_recv_wqe_shift(c->max_sge), &var, &left) ||
	    !(left == 0 ||
	      pvo_st_refuse(l, "ring", "%zu bytes too many", left)) ||
	    !add(l, &l->vm->srqs, c->handle, srq, c->ctx)) {
		pvo_ring_fini(&srq->ring);
		g_free(srq);
		return false;
	}
	srq->handle = c->handle;
	srq->ctx = c->ctx;
	srq->srqn = pvo_handle_index(c->handle);
	srq->pd = pd;
	srq->max_sge = c->max_sge;
	srq->limit = c->limit;
	srq->cons = c->cons;
	srq->prod_seen = c->cons;
	srq->doorbell = c->flags & PVO_ST_SRQ_DOORBELL;
	if (srq->doorbell)
		uctx->nqps++;
	pd->refcnt++;
	return true;
}

static bool load_ah(struct pvo_st_loader *l, const struct pvo_st_ah *a)
{
	struct pvo_pd *pd = pd_of(l, a->pd, a->ctx);
	struct pvo_ah *ah;

	if (!pd)
		return false;
	ah = g_new0(struct pvo_ah, 1);
	if (!path_ok(l, &ah->path, &a->path) ||
	    !add(l, &l->vm->ahs, a->handle, ah, a->ctx)) {
		g_free(ah);
		return false;
	}
	ah->handle = a->handle;
	ah->ctx = a->ctx;
	ah->pd = pd;
	pd->refcnt++;
	return true;
}

static bool qp_attrs_ok(struct pvo_st_loader *l, struct pvo_qp *qp,
			const struct pvo_st_qp *q)
{
	struct pvo_qp_attrs *a = &qp->attr;

	CHECK(q->path_mtu <= 5 && q->timeout <= 31 && q->retry_cnt <= 7 &&
		  q->rnr_retry <= 7 && q->min_rnr_timer <= 31,
	      "attr",
	      "mtu %u, timeout %u, retry %u, rnr_retry %u, rnr timer "
	      "%u",
	      q->path_mtu, q->timeout, q->retry_cnt, q->rnr_retry,
	      q->min_rnr_timer);
	CHECK(q->rq_psn <= PVO_QPN_MAX && q->sq_psn <= PVO_QPN_MAX &&
		  q->dest_qpn <= PVO_QPN_MAX,
	      "attr", "PSNs 0x%x/0x%x, dest QPN 0x%x", q->rq_psn, q->sq_psn,
	      q->dest_qpn);
	CHECK(!(q->access & ~PVO_ACCESS_ALL) &&
		  q->max_rd_atomic <= PVO_DEV_MAX_RD_ATOM &&
		  q->max_dest_rd_atomic <= PVO_DEV_MAX_RD_ATOM &&
		  q->en_sqd_async_notify <= 1,
	      "attr", "access 0x%x, rd_atomic %u/%u", q->access,
	      q->max_rd_atomic, q->max_dest_rd_atomic);
	a->qkey = q->qkey;
	a->rq_psn = q->rq_psn;
	a->sq_psn = q->sq_psn;
	a->dest_qpn = q->dest_qpn;
	a->access = q->access;
	a->path_mtu = q->path_mtu;
	a->min_rnr_timer = q->min_rnr_timer;
	a->timeout = q->timeout;
	a->retry_cnt = q->retry_cnt;
	a->rnr_retry = q->rnr_retry;
	a->max_rd_atomic = q->max_rd_atomic;
	a->max_dest_rd_atomic = q->max_dest_rd_atomic;
	a->en_sqd_async_notify = q->en_sqd_async_notify;
	return path_ok(l, &a->path, &q->path);
}

static bool qp_refs_ok(struct pvo_st_loader *l, struct pvo_qp *qp,
		       const struct pvo_st_qp *q)
{
	struct pvo_vm *vm = l->vm;
	struct pvo_ucontext *uctx = pvo_vm_ctx(vm, q->ctx);

	CHECK(uctx, "ctx", "no context 0x%x before it", q->ctx);
	qp->pd = pd_of(l, q->pd, q->ctx);
	if (!qp->pd)
		return false;
	qp->scq = pvo_table_get(&vm->cqs, q->scq, q->ctx);
	qp->rcq = pvo_table_get(&vm->cqs, q->rcq, q->ctx);
	CHECK(qp->scq && qp->rcq, "cq", "CQs 0x%x/0x%x not before it", q->scq,
	      q->rcq);
	if (q->srq) {
		qp->srq = pvo_table_get(&vm->srqs, q->srq, q->ctx);
		CHECK(qp->srq, "srq", "no SRQ 0x%x before it", q->srq);
	}
	CHECK(uctx->nqps < PVO_DB_RING_ENTRIES, "ctx",
	      "more QPs than a doorbell ring holds");
	switch (q->type) {
	case PVO_QPT_GSI:
		CHECK(q->ctx == PVO_CTX_KERNEL && !vm->gsi_qp && !q->srq &&
			  q->qpn == PVO_QPN_GSI,
		      "type", "a second GSI QP, or one not the kernel's");
		break;
	case PVO_QPT_RC:
	case PVO_QPT_UC:
	case PVO_QPT_UD:
		CHECK(q->qpn >= 2 && q->qpn <= PVO_QPN_MAX &&
			  !pvo_qp_by_qpn(vm, q->qpn),
		      "qpn", "0x%x is not a free QP number", q->qpn);
		break;
	default:
		return pvo_st_refuse(l, "type", "%u", q->type);
	}
	CHECK(q->state <= PVO_QPS_ERR && q->sq_sig_all <= 1, "state", "%u",
	      q->state);
	CHECK(q->max_send_sge <= PVO_DEV_MAX_SGE &&
		  q->max_recv_sge <= PVO_DEV_MAX_SGE &&
		  q->max_inline <= PVO_DEV_MAX_INLINE,
	      "caps", "%u/%u SGEs, %u inline", q->max_send_sge, q->max_recv_sge,
	      q->max_inline);
	CHECK(q->nmcast <= PVO_MAX_MCAST_PER_QP &&
		  (!q->nmcast || q->type == PVO_QPT_UD),
	      "nmcast", "%u groups", q->nmcast);
	return true;
}

/* The fields of the QP's engine and transports (state_part.h). */
static bool qp_parts_ok(struct pvo_st_loader *l, struct pvo_qp *qp,
			const struct pvo_st_qp *q)
{
	qp->engine = pvo_engine_of_loaded(qp);
	CHECK(qp->engine && qp->engine->load, "type",
	      "no engine takes a QP of type %u", q->type);
	return qp->engine->load(qp, q, l) && pvo_transport_load_qp(qp, q, l);
}

static bool load_qp(struct pvo_st_loader *l, const struct pvo_st_qp *q,
		    const uint8_t *var, size_t left)
{
	struct pvo_vm *vm = l->vm;
	struct pvo_qp *qp = g_new0(struct pvo_qp, 1);
	unsigned int i;

	qp->vm = vm;
	if (!qp_refs_ok(l, qp, q))
		goto fail;
	if (!ring_ok(l, &qp->sq, "sq", &q->sq, PVO_DEV_MAX_QP_WR,
		     pvo_send_wqe_shift(q->max_send_sge, q->max_inline), &var,
		     &left))
		goto fail;
	if (q->srq) {
		if (q->rq.entries || q->rq.npages) {
			pvo_st_refuse(l, "rq", "a QP with an SRQ has no RQ");
			goto fail;
		}
	} else if (!ring_ok(l, &qp->rq, "rq", &q->rq, PVO_DEV_MAX_QP_WR,
			    pvo_recv_wqe_shift(q->max_recv_sge), &var, &left)) {
		goto fail;
	}
	if (left != (size_t)q->nmcast * PVO_GID_LEN) {
		pvo_st_refuse(l, "mcast", "%zu bytes for %u groups", left,
			      q->nmcast);
		goto fail;
	}
	for (i = 0; i < q->nmcast; i++)
		if (!pvo_gid_is_multicast(var + i * PVO_GID_LEN)) {
			pvo_st_refuse(l, "mcast",
				      "group %u is not a multicast GID", i);
			goto fail;
		}
	if (!qp_attrs_ok(l, qp, q))
		goto fail;
	/* the parts check theirs against these (the receive cursor's PDs
	 * are the QP's context's) */
	qp->handle = q->handle;
	qp->ctx = q->ctx;
	qp->qpn = q->qpn;
	qp->type = q->type;
	qp->state = q->state;
	qp->sq_sig_all = q->sq_sig_all;
	qp->max_send_sge = q->max_send_sge;
	qp->max_recv_sge = q->max_recv_sge;
	qp->max_inline = q->max_inline;
	pvo_qp_update_mtu(qp);
	if (!qp_parts_ok(l, qp, q) || !add(l, &vm->qps, q->handle, qp, q->ctx))
		goto fail;
	qp->engine->restore(qp);
	if (qp->type == PVO_QPT_GSI)
		vm->gsi_qp = qp;
	g_hash_table_insert(vm->qpn_map, GUINT_TO_POINTER(qp->qpn), qp);
	if (q->nmcast) {
		qp->mcast =
		    g_malloc((size_t)PVO_MAX_MCAST_PER_QP * PVO_GID_LEN);
		memcpy(qp->mcast, var, (size_t)q->nmcast * PVO_GID_LEN);
		qp->nmcast = q->nmcast;
		g_ptr_array_add(vm->mcast_qps, qp);
	}
	qp->pd->refcnt++;
	qp->scq->refcnt++;
	qp->rcq->refcnt++;
	if (qp->srq)
		qp->srq->refcnt++;
	pvo_vm_ctx(vm, qp->ctx)->nqps++;
	return true;
fail:
	pvo_ring_fini(&qp->sq);
	pvo_ring_fini(&qp->rq);
	g_free(qp);
	return false;
}

static bool load_events(struct pvo_st_loader *l, const struct pvo_st_events *e,
			const uint8_t *var, size_t left)
{
	struct pvo_event_queue *q = &l->vm->events;

	CHECK(e->count <= PVO_EVENT_PENDING_MAX &&
		  left == e->count * sizeof(struct pvo_event),
	      "count", "%u events in %zu bytes", e->count, left);
	memcpy(q->pending, var, left);
	q->head = 0;
	q->count = e->count;
	return true;
}

static const struct {
	const char *name;
	size_t fixed;
} types[PVO_ST_TYPES] = {
    [PVO_ST_END] = {"end", 0},
    [PVO_ST_VM] = {"VM", sizeof(struct pvo_st_vm)},
    [PVO_ST_UCONTEXT] = {"ucontext", sizeof(struct pvo_st_ucontext)},
    [PVO_ST_PD] = {"PD", sizeof(struct pvo_st_pd)},
    [PVO_ST_MR] = {"MR", sizeof(struct pvo_st_mr)},
    [PVO_ST_MW] = {"MW", sizeof(struct pvo_st_mw)},
    [PVO_ST_CQ] = {"CQ", sizeof(struct pvo_st_cq)},
    [PVO_ST_SRQ] = {"SRQ", sizeof(struct pvo_st_srq)},
    [PVO_ST_AH] = {"AH", sizeof(struct pvo_st_ah)},
    [PVO_ST_QP] = {"QP", sizeof(struct pvo_st_qp)},
    [PVO_ST_EVENTS] = {"events", sizeof(struct pvo_st_events)},
};

/* Fixed-size records carry nothing behind their fixed part. */
static bool exact(struct pvo_st_loader *l, size_t left)
{
	CHECK(left == 0, "length", "%zu bytes too many", left);
	return true;
}

/* The fixed part of a record of that type and version. */
static size_t fixed_len(unsigned int type, unsigned int version)
{
	return type == PVO_ST_SRQ && version == 1 ? PVO_ST_SRQ_V1_LEN
						  : types[type].fixed;
}

static bool load_record(struct pvo_st_loader *l, unsigned int type,
			unsigned int version, const void *p, size_t len)
{
	const uint8_t *var = (const uint8_t *)p + fixed_len(type, version);
	size_t left = len - fixed_len(type, version);
	struct pvo_st_srq srq1 = {0};

	/* every record's first field is its handle */
	l->handle =
	    type > PVO_ST_VM && type < PVO_ST_EVENTS ? *(const uint32_t *)p : 0;
	switch (type) {
	case PVO_ST_VM:
		return exact(l, left) && load_vm(l, p);
	case PVO_ST_UCONTEXT:
		return exact(l, left) && load_ucontext(l, p);
	case PVO_ST_PD:
		return exact(l, left) && load_pd(l, p);
	case PVO_ST_MR:
		return load_mr(l, p, version, var, left);
	case PVO_ST_MW:
		return exact(l, left) && load_mw(l, p);
	case PVO_ST_CQ:
		return load_cq(l, p, var, left);
	case PVO_ST_SRQ:
		if (version == 1) { /* no flags */
			memcpy(&srq1, p, PVO_ST_SRQ_V1_LEN);
			p = &srq1;
		}
		return load_srq(l, p, var, left);
	case PVO_ST_AH:
		return exact(l, left) && load_ah(l, p);
	case PVO_ST_QP:
		return load_qp(l, p, var, left);
	case PVO_ST_EVENTS:
		return load_events(l, p, var, left);
	}
	return false;
}

static bool load(struct pvo_st_loader *l, const uint8_t *buf, size_t len)
{
	const struct pvo_st_header *h = (const void *)buf;
	bool seen_vm = false;
	size_t pos;

	l->what = "header";
	CHECK(len >= sizeof(*h) && !memcmp(h->magic, PVO_STATE_MAGIC, 8),
	      "magic", "not a pvrdma-overlay state stream (%zu bytes)", len);
	CHECK(h->version == PVO_STATE_VERSION, "version",
	      "stream version %u, this back-end reads %u: migrate between "
	      "back-ends of one release",
	      h->version, PVO_STATE_VERSION);
	CHECK(h->iface_version == PVO_INTERFACE_VERSION, "iface_version",
	      "device interface %u, this back-end offers %u", h->iface_version,
	      PVO_INTERFACE_VERSION);
	CHECK(memchr(h->vm, 0, sizeof(h->vm)) &&
		  !strcmp(h->vm, pvo_vm_name(l->vm)),
	      "vm", "the state of VM '%.*s' offered to VM '%s'",
	      (int)strnlen(h->vm, sizeof(h->vm)), h->vm, pvo_vm_name(l->vm));
	for (pos = sizeof(*h);;) {
		struct pvo_st_rec r;
		void *payload;
		bool ok;

		l->recno++;
		l->what = "record";
		l->handle = 0;
		CHECK(len - pos >= sizeof(r), "type",
		      "stream truncated at "
		      "byte %zu (no END record)",
		      pos);
		memcpy(&r, buf + pos, sizeof(r));
		pos += sizeof(r);
		CHECK(r.type < PVO_ST_TYPES, "type", "unknown type %u", r.type);
		l->what = types[r.type].name;
		CHECK(r.version == 1 ||
			  (r.type == PVO_ST_MR &&
			   r.version == PVO_ST_MR_VERSION) ||
			  (r.type == PVO_ST_SRQ &&
			   r.version == PVO_ST_SRQ_VERSION),
		      "version", "record version %u", r.version);
		CHECK(r.len <= len - pos, "length",
		      "%u bytes, but the stream is truncated (%zu left)", r.len,
		      len - pos);
		CHECK(r.len >= fixed_len(r.type, r.version), "length",
		      "%u bytes, needs at least %zu", r.len,
		      fixed_len(r.type, r.version));
		CHECK((r.type == PVO_ST_VM) != seen_vm || r.type == PVO_ST_END,
		      "type", "%s",
		      seen_vm ? "a second VM record"
			      : "objects before the VM record");
		if (r.type == PVO_ST_END) {
			CHECK(seen_vm && r.len == 0 && pos == len, "length",
			      "END early or with %zu bytes behind it",
			      len - pos);
			return true;
		}
		seen_vm = true;
		/* aligned copy: the fixed parts are read as structs */
		payload = g_memdup2(buf + pos, r.len);
		ok = load_record(l, r.type, r.version, payload, r.len);
		g_free(payload);
		if (!ok)
			return false;
		pos += r.len;
	}
}

bool pvo_state_load(struct pvo_vm *vm, const uint8_t *buf, size_t len,
		    char **err)
{
	struct pvo_st_loader l = {.vm = vm, .err = err};
	bool ok;

	*err = NULL;
	ok = load(&l, buf, len);
	if (l.keys)
		g_hash_table_destroy(l.keys);
	if (!ok)
		pvo_vm_reset_guest_state(vm);
	return ok;
}

bool pvo_state_check(const struct pvo_vm_config *cfg, const uint8_t *buf,
		     size_t len, char **err)
{
	struct pvo_vm *scratch = pvo_vm_new_detached(cfg);
	bool ok = pvo_state_load(scratch, buf, len, err);

	pvo_vm_free(scratch);
	return ok;
}

void pvo_state_resume(struct pvo_vm *vm)
{
	struct pvo_qp *qp;
	uint32_t h = 0;

	/* the software engine's requesters (the others: engine.h
	 * vm_thaw) */
	while ((h = pvo_table_next(&vm->qps, h, (void **)&qp)))
		if (qp->engine == &pvo_engine_sw &&
		    (qp->state == PVO_QPS_RTS || qp->state == PVO_QPS_SQD))
			pvo_req_run(qp);
}
