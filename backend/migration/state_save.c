// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Writing a VM's state stream (state.h, state_format.h) through a cursor:
 * each read gives the stream's next bytes, as many as the caller asks, so
 * a save holds a stage of a few KiB, never the stream. A record's header
 * and fixed part are staged when it begins; its variable parts (an MR's
 * runs, ring page lists, multicast groups, events) are copied from the
 * object a stage at a time, the object found again by its handle each
 * time: a save that outlives its objects fails, it never reads a freed
 * one.
 */
#include <stdarg.h>
#include <string.h>

#include "cq.h"
#include "engine.h"
#include "log.h"
#include "mr.h"
#include "mw.h"
#include "qp.h"
#include "srq.h"
#include "ah.h"
#include "state.h"
#include "state_format.h"
#include "transport.h"
#include "vm.h"

/* Room for the largest fixed part and its record header. */
#define STAGE_BYTES 16384
/* Runs of an MR's list a read may count for its record's length: one
 * read's work stays bounded for an MR of millions of runs. */
#define COUNT_BUDGET 65536

uint64_t pvo_state_save_limit = PVO_STATE_MAX_BYTES;

/* The stream's parts, in its order; UCONTEXT to QP are tables. */
enum kind {
	K_HEADER,
	K_VM,
	K_UCONTEXT,
	K_PD,
	K_MR,
	K_MW,
	K_CQ,
	K_SRQ,
	K_AH,
	K_QP,
	K_EVENTS,
	K_END,
	K_DONE
};

#define K_TABLES (K_QP - K_UCONTEXT + 1)

struct pvo_state_saver {
	struct pvo_vm *vm;
	enum pvo_state_saver_status status;
	char *error;
	uint64_t total;		   /* bytes of the header and records begun */
	uint64_t out;		   /* bytes read */
	uint32_t counts[K_TABLES]; /* objects when the save began */
	enum kind kind;		   /* what comes next */
	uint32_t handle; /* the kind's last object begun, 0 for none yet */
	/* the record whose variable part is written */
	enum kind rec;
	const void *obj; /* its object: what its handle must find again */
	bool counting;	 /* MR: its runs are being counted */
	bool in_var;
	uint64_t var_len, var_off; /* its bytes, those staged */
	uint64_t runs;		   /* MR: the record's runs */
	uint32_t k, sub;	   /* MR: run k of the list, its pages staged */
	uint32_t list_runs, list_pages; /* MR: its list when counted */
	uint32_t ev_head;		/* events: the ring's head */
	uint32_t budget;		/* runs this read may still count */
	size_t pos, len;		/* staged bytes: those read, all */
	uint8_t stage[STAGE_BYTES];
};

G_STATIC_ASSERT(sizeof(struct pvo_st_rec) + sizeof(struct pvo_st_qp) +
		    sizeof(struct pvo_st_vm) <=
		STAGE_BYTES);

static bool fail(struct pvo_state_saver *s, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static bool fail(struct pvo_state_saver *s, const char *fmt, ...)
{
	va_list ap;

	if (s->status != PVO_SAVE_FAILED) {
		va_start(ap, fmt);
		s->error = g_strdup_vprintf(fmt, ap);
		va_end(ap);
		s->status = PVO_SAVE_FAILED;
	}
	s->pos = s->len = 0;
	return false;
}

static void stage(struct pvo_state_saver *s, const void *p, size_t n)
{
	g_assert(n <= STAGE_BYTES - s->len);
	memcpy(s->stage + s->len, p, n);
	s->len += n;
}

static struct pvo_table *table_of(struct pvo_vm *vm, enum kind k)
{
	switch (k) {
	case K_UCONTEXT:
		return &vm->ucontexts;
	case K_PD:
		return &vm->pds;
	case K_MR:
		return &vm->mrs;
	case K_MW:
		return &vm->mws;
	case K_CQ:
		return &vm->cqs;
	case K_SRQ:
		return &vm->srqs;
	case K_AH:
		return &vm->ahs;
	case K_QP:
		return &vm->qps;
	default:
		return NULL;
	}
}

/*
 * Begins a record of a fixed part and var_len bytes to follow, if the
 * stream stays within pvo_state_save_limit: a record's header carries
 * its length, so the sum is known before its bytes are.
 */
static bool begin(struct pvo_state_saver *s, uint16_t type, uint16_t version,
		  const void *fixed, size_t flen, uint64_t var_len)
{
	uint64_t len = flen + var_len, rec = sizeof(struct pvo_st_rec) + len;
	uint64_t limit = pvo_state_save_limit;
	struct pvo_st_rec r = {
	    .type = type, .version = version, .len = (uint32_t)len};

	if (len > UINT32_MAX || s->total > limit || rec > limit - s->total)
		return fail(s,
			    "the VM's RDMA state takes more than %llu bytes: "
			    "not saved, the migration fails and the VM runs "
			    "on (MR page lists take the most: a lower "
			    "max-host-mem keeps them within a stream)",
			    (unsigned long long)limit);
	s->total += rec;
	stage(s, &r, sizeof(r));
	if (flen)
		stage(s, fixed, flen);
	s->in_var = var_len > 0;
	s->var_len = var_len;
	s->var_off = 0;
	return true;
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

static bool save_vm(struct pvo_state_saver *s)
{
	struct pvo_vm *vm = s->vm;
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
	return begin(s, PVO_ST_VM, 1, &v, sizeof(v), 0);
}

static bool save_ucontext(struct pvo_state_saver *s,
			  const struct pvo_ucontext *uctx)
{
	struct pvo_st_ucontext u = {.handle = uctx->handle,
				    .db_queue = uctx->db_queue,
				    .db_page = uctx->db_page};

	put_db(&u.db, &uctx->db);
	return begin(s, PVO_ST_UCONTEXT, 1, &u, sizeof(u), 0);
}

static bool save_pd(struct pvo_state_saver *s, const struct pvo_pd *pd)
{
	struct pvo_st_pd p = {.handle = pd->handle, .ctx = pd->ctx};

	return begin(s, PVO_ST_PD, 1, &p, sizeof(p), 0);
}

/* The MR whose record is being written, if its list is the one counted. */
static const struct pvo_mr *same_mr(struct pvo_state_saver *s,
				    const struct pvo_mr *mr)
{
	if (mr && (mr->pages.nruns != s->list_runs ||
		   mr->pages.npages != s->list_pages)) {
		fail(s, "MR 0x%x changed while the VM was saved", mr->handle);
		return NULL;
	}
	return mr;
}

/* An MR, its page list as the runs it keeps (PVO_ST_MR_VERSION): its
 * header once the runs are counted. */
static bool begin_mr(struct pvo_state_saver *s, const struct pvo_mr *mr)
{
	struct {
		struct pvo_st_mr m;
		struct pvo_st_mr_runs h;
	} __attribute__((packed)) f = {
	    .m = {.handle = mr->handle,
		  .ctx = mr->ctx,
		  .pd = mr->pd->handle,
		  .key = mr->key,
		  .access = mr->access,
		  .max_pages = mr->max_pages,
		  .valid = mr->valid,
		  .fast_reg = mr->fast_reg,
		  .iova = mr->iova,
		  .length = mr->length,
		  .npages = mr->pages.npages},
	    .h = {.nruns = (uint32_t)s->runs},
	};

	if (!begin(s, PVO_ST_MR, PVO_ST_MR_VERSION, &f, sizeof(f),
		   s->runs * sizeof(struct pvo_st_mr_run)))
		return false;
	s->k = 0;
	s->sub = 0;
	return true;
}

/* Counts the MR's runs of up to PVO_ST_RUN_MAX pages, within the read's
 * budget: false if it must go on in the next read. */
static bool count_runs(struct pvo_state_saver *s, const struct pvo_mr *mr)
{
	const struct pvo_page_runs *p = &mr->pages;

	for (; s->k < p->nruns; s->k++) {
		if (!s->budget)
			return false;
		s->budget--;
		s->runs += (pvo_page_run_len(p, s->k) + PVO_ST_RUN_MAX - 1) /
			   PVO_ST_RUN_MAX;
	}
	s->counting = false;
	return begin_mr(s, mr);
}

static bool start_mr(struct pvo_state_saver *s, const struct pvo_mr *mr)
{
	s->counting = true;
	s->runs = 0;
	s->k = 0;
	s->list_runs = mr->pages.nruns;
	s->list_pages = mr->pages.npages;
	return count_runs(s, mr);
}

/* Stages the MR's next runs. */
static void mr_runs(struct pvo_state_saver *s, const struct pvo_mr *mr)
{
	const struct pvo_page_runs *p = &mr->pages;
	struct pvo_st_mr_run r;
	uint32_t left, n;

	while (s->k < p->nruns && STAGE_BYTES - s->len >= sizeof(r)) {
		left = pvo_page_run_len(p, s->k) - s->sub;
		n = MIN(left, (uint32_t)PVO_ST_RUN_MAX);
		r.page = (pvo_page_run_gpa(p, s->k) +
			  ((uint64_t)s->sub << PVO_PAGE_SHIFT)) |
			 (n - 1);
		stage(s, &r, sizeof(r));
		s->var_off += sizeof(r);
		s->sub += n;
		if (s->sub == pvo_page_run_len(p, s->k)) {
			s->k++;
			s->sub = 0;
		}
	}
	if (s->k == p->nruns && s->var_off != s->var_len)
		fail(s, "MR 0x%x: %llu bytes of runs, not %llu", mr->handle,
		     (unsigned long long)s->var_off,
		     (unsigned long long)s->var_len);
}

static bool save_mw(struct pvo_state_saver *s, const struct pvo_mw *mw)
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

	return begin(s, PVO_ST_MW, 1, &w, sizeof(w), 0);
}

static uint64_t ring_bytes(const struct pvo_ring *r)
{
	return r->entries ? r->npages * 8ull : 0;
}

static bool save_cq(struct pvo_state_saver *s, const struct pvo_cq *cq)
{
	struct pvo_st_cq c = {.handle = cq->handle,
			      .ctx = cq->ctx,
			      .prod = cq->prod,
			      .cons_seen = cq->cons_seen,
			      .error = cq->error,
			      .no_events = cq->no_events};

	put_ring(&c.ring, &cq->ring);
	return begin(s, PVO_ST_CQ, 1, &c, sizeof(c), ring_bytes(&cq->ring));
}

static bool save_srq(struct pvo_state_saver *s, const struct pvo_srq *srq)
{
	struct pvo_st_srq c = {.handle = srq->handle,
			       .ctx = srq->ctx,
			       .pd = srq->pd->handle,
			       .max_sge = srq->max_sge,
			       .limit = srq->limit,
			       .cons = srq->cons,
			       .flags =
				   srq->doorbell ? PVO_ST_SRQ_DOORBELL : 0};

	put_ring(&c.ring, &srq->ring);
	return begin(s, PVO_ST_SRQ, PVO_ST_SRQ_VERSION, &c, sizeof(c),
		     ring_bytes(&srq->ring));
}

static bool save_ah(struct pvo_state_saver *s, const struct pvo_ah *ah)
{
	struct pvo_st_ah a = {
	    .handle = ah->handle, .ctx = ah->ctx, .pd = ah->pd->handle};

	put_path(&a.path, &ah->path);
	return begin(s, PVO_ST_AH, 1, &a, sizeof(a), 0);
}

static uint64_t mcast_bytes(const struct pvo_qp *qp)
{
	return (uint64_t)qp->nmcast * PVO_GID_LEN;
}

static bool save_qp(struct pvo_state_saver *s, const struct pvo_qp *qp)
{
	struct pvo_st_qp q = {0};
	const struct pvo_qp_attrs *a = &qp->attr;

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
	return begin(s, PVO_ST_QP, 1, &q, sizeof(q),
		     ring_bytes(&qp->sq) + ring_bytes(&qp->rq) +
			 mcast_bytes(qp));
}

/* The events the guest has not taken yet, oldest first. */
static bool save_events(struct pvo_state_saver *s)
{
	struct pvo_st_events ev = {.count = s->vm->events.count};

	s->ev_head = s->vm->events.head;
	s->obj = s->vm;
	return begin(s, PVO_ST_EVENTS, 1, &ev, sizeof(ev),
		     (uint64_t)ev.count * sizeof(struct pvo_event));
}

static bool save_obj(struct pvo_state_saver *s, const void *obj)
{
	switch (s->kind) {
	case K_UCONTEXT:
		return save_ucontext(s, obj);
	case K_PD:
		return save_pd(s, obj);
	case K_MR:
		return start_mr(s, obj);
	case K_MW:
		return save_mw(s, obj);
	case K_CQ:
		return save_cq(s, obj);
	case K_SRQ:
		return save_srq(s, obj);
	case K_AH:
		return save_ah(s, obj);
	default:
		return save_qp(s, obj);
	}
}

/* The variable part's pieces: pointers into the object, up to three. */
struct piece {
	const void *p;
	uint64_t len;
};

static unsigned int pieces_of(struct pvo_state_saver *s, const void *obj,
			      struct piece *pc)
{
	const struct pvo_event_queue *q = &s->vm->events;
	const struct pvo_ring *ring;
	const struct pvo_qp *qp = obj;
	uint32_t n, first;

	switch (s->rec) {
	case K_CQ:
	case K_SRQ:
		ring = s->rec == K_CQ ? &((const struct pvo_cq *)obj)->ring
				      : &((const struct pvo_srq *)obj)->ring;
		pc[0] = (struct piece){ring->pages, ring_bytes(ring)};
		return 1;
	case K_QP:
		pc[0] = (struct piece){qp->sq.pages, ring_bytes(&qp->sq)};
		pc[1] = (struct piece){qp->rq.pages, ring_bytes(&qp->rq)};
		pc[2] = (struct piece){qp->mcast, mcast_bytes(qp)};
		return 3;
	default: /* events: the ring's part from head on, then its start */
		n = (uint32_t)(s->var_len / sizeof(struct pvo_event));
		first = MIN(n, PVO_EVENT_PENDING_MAX - s->ev_head);
		pc[0] = (struct piece){&q->pending[s->ev_head],
				       first * sizeof(struct pvo_event)};
		pc[1] = (struct piece){q->pending,
				       (n - first) * sizeof(struct pvo_event)};
		return 2;
	}
}

/* The record's object, found again by its handle; NULL (failed) if it
 * is not there or its variable part is not the length begun. */
static const void *found(struct pvo_state_saver *s)
{
	const struct pvo_event_queue *q = &s->vm->events;
	const void *obj;

	if (s->rec == K_EVENTS) {
		if (q->head != s->ev_head ||
		    q->count < s->var_len / sizeof(struct pvo_event)) {
			fail(s, "events were taken while the VM was saved");
			return NULL;
		}
		return s->vm;
	}
	obj =
	    pvo_table_at(table_of(s->vm, s->rec), pvo_handle_index(s->handle));
	if (obj != s->obj) {
		fail(s, "object 0x%x went away while the VM was saved",
		     s->handle);
		return NULL;
	}
	return obj;
}

/* Stages the next bytes of the variable part. */
static bool var_bytes(struct pvo_state_saver *s)
{
	const void *obj = found(s);
	struct piece pc[3];
	uint64_t at = 0, sum = 0, skip, n;
	unsigned int i, np;

	if (!obj)
		return false;
	if (s->rec == K_MR) {
		if (!same_mr(s, obj))
			return false;
		if (s->counting)
			return count_runs(s, obj);
		mr_runs(s, obj);
		s->in_var = s->var_off < s->var_len;
		return s->status != PVO_SAVE_FAILED;
	}
	np = pieces_of(s, obj, pc);
	for (i = 0; i < np; i++)
		sum += pc[i].len;
	if (sum != s->var_len)
		return fail(s, "object 0x%x changed while the VM was saved",
			    s->handle);
	for (i = 0; i < np && s->len < STAGE_BYTES; at += pc[i++].len) {
		if (s->var_off >= at + pc[i].len)
			continue;
		skip = s->var_off - at;
		n = MIN(pc[i].len - skip, (uint64_t)(STAGE_BYTES - s->len));
		stage(s, (const uint8_t *)pc[i].p + skip, (size_t)n);
		s->var_off += n;
	}
	s->in_var = s->var_off < s->var_len;
	return true;
}

/* Begins the next record (or moves to the next kind). */
static bool next_record(struct pvo_state_saver *s)
{
	struct pvo_st_header hdr = {.version = PVO_STATE_VERSION,
				    .iface_version = PVO_INTERFACE_VERSION};
	void *obj;
	uint32_t h;

	s->rec = s->kind;
	switch (s->kind) {
	case K_HEADER:
		memcpy(hdr.magic, PVO_STATE_MAGIC, sizeof(hdr.magic));
		g_strlcpy(hdr.vm, pvo_vm_name(s->vm), sizeof(hdr.vm));
		stage(s, &hdr, sizeof(hdr));
		s->total = sizeof(hdr);
		s->kind = K_VM;
		return true;
	case K_VM:
		s->kind = K_UCONTEXT;
		s->handle = 0;
		return save_vm(s);
	case K_EVENTS:
		s->kind = K_END;
		return save_events(s);
	case K_END:
		s->kind = K_DONE;
		return begin(s, PVO_ST_END, 1, NULL, 0, 0);
	default:
		break;
	}
	h = pvo_table_next(table_of(s->vm, s->kind), s->handle, &obj);
	if (!h) {
		s->kind++;
		s->handle = 0;
		return true;
	}
	s->handle = h;
	s->obj = obj;
	return save_obj(s, obj);
}

/* Whether the VM has the objects it had when the save began (none is
 * made or destroyed while its rings are stopped). */
static bool same_objects(struct pvo_state_saver *s)
{
	unsigned int i;

	for (i = 0; i < K_TABLES; i++)
		if (table_of(s->vm, K_UCONTEXT + i)->count != s->counts[i])
			return fail(s,
				    "the VM's %ss changed while it was "
				    "saved",
				    table_of(s->vm, K_UCONTEXT + i)->what);
	return true;
}

/* Stages more of the stream: false to end the read (budget, failure). */
static bool step(struct pvo_state_saver *s)
{
	if (!same_objects(s))
		return false;
	if (s->counting || s->in_var)
		return var_bytes(s);
	return next_record(s);
}

struct pvo_state_saver *pvo_state_saver_new(struct pvo_vm *vm)
{
	struct pvo_state_saver *s = g_new0(struct pvo_state_saver, 1);
	unsigned int i;

	s->vm = vm;
	s->status = PVO_SAVE_MORE;
	s->kind = K_HEADER;
	for (i = 0; i < K_TABLES; i++)
		s->counts[i] = table_of(vm, K_UCONTEXT + i)->count;
	return s;
}

size_t pvo_state_saver_read(struct pvo_state_saver *s, void *buf, size_t max,
			    enum pvo_state_saver_status *st)
{
	size_t n = 0, c;

	s->budget = COUNT_BUDGET;
	while (n < max && s->status == PVO_SAVE_MORE) {
		if (s->pos < s->len) {
			c = MIN(max - n, s->len - s->pos);
			memcpy((uint8_t *)buf + n, s->stage + s->pos, c);
			s->pos += c;
			n += c;
			continue;
		}
		s->pos = s->len = 0;
		if (s->kind == K_DONE && !s->in_var)
			s->status = PVO_SAVE_END;
		else if (!step(s))
			break;
	}
	if (s->status == PVO_SAVE_MORE && s->kind == K_DONE && !s->in_var &&
	    s->pos == s->len)
		s->status = PVO_SAVE_END;
	*st = s->status;
	if (s->status == PVO_SAVE_FAILED)
		return 0;
	s->out += n;
	return n;
}

uint64_t pvo_state_saver_bytes(const struct pvo_state_saver *s)
{
	return s->out;
}

const char *pvo_state_saver_error(const struct pvo_state_saver *s)
{
	return s->error;
}

void pvo_state_saver_free(struct pvo_state_saver *s)
{
	if (!s)
		return;
	g_free(s->error);
	g_free(s);
}

GByteArray *pvo_state_save(struct pvo_vm *vm)
{
	struct pvo_state_saver *s = pvo_state_saver_new(vm);
	enum pvo_state_saver_status st = PVO_SAVE_MORE;
	GByteArray *a = g_byte_array_new();
	const guint piece = 65536;
	guint at;

	while (st == PVO_SAVE_MORE) {
		at = a->len;
		g_byte_array_set_size(a, at + piece);
		g_byte_array_set_size(a, at + (guint)pvo_state_saver_read(
						  s, a->data + at, piece, &st));
	}
	if (st == PVO_SAVE_FAILED) {
		pvo_log(pvo_vm_name(vm), "%s", pvo_state_saver_error(s));
		g_byte_array_free(a, TRUE);
		a = NULL;
	}
	pvo_state_saver_free(s);
	return a;
}
