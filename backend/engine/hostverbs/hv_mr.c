// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Memory of host-verbs VMs: one host PD per guest PD, so the host device
 * keeps a QP to the MRs of its own PD as the guest expects; one host MR
 * per guest MR over the MR's guest pages aliased back to back
 * (mr_alias.h), registered at the guest's iova so that the addresses
 * and keys the guest hands its peers are the host MR's. The host device
 * checks bounds and rights on every access.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <glib.h>

#include "ctrl.h"
#include "hv.h"
#include "log.h"
#include "mr.h"
#include "vm.h"

/*
 * MRs of more than this many pages are made over several turns of the
 * VM's loop: their runs counted this many pages a turn, their alias
 * mapped HV_RUNS_PER_TURN runs a turn, then registered (the host device
 * pins every page) by a thread of their own while the loop goes on. The
 * REG_MR waits (PVO_STATUS_AGAIN, vm->ctrl_waits), the VM's later
 * commands behind it. Smaller MRs are made in one call.
 */
#define HV_PAGES_PER_TURN PVO_MR_PAGES_PER_CALL
/* an mremap costs 15 to 30 us: about 1 ms a turn */
#define HV_RUNS_PER_TURN 32
/* how often a dropped registration's thread is looked at */
#define HV_REAP_US 1000

/* A host MR registered off the loop: the thread and what it reports. */
struct pvo_hv_pin {
	GThread *thread;
	struct ibv_pd *pd;
	void *addr;
	size_t len;
	uint64_t iova;
	int access;
	struct ibv_mr *mr; /* the thread's result, once done */
	int err;
	gint done;
};

struct ibv_pd *pvo_hv_pd(struct pvo_vm *vm, struct pvo_pd *pd)
{
	struct pvo_hv_device *d = pvo_hv_dev(vm->cfg->tenant);

	if (pd->engine_part)
		return pd->engine_part;
	pd->engine_part = ibv_alloc_pd(d->ctx);
	if (!pd->engine_part)
		pvo_vm_warn(vm, "hostverbs: %s: ibv_alloc_pd: %s", d->name,
			    g_strerror(errno));
	return pd->engine_part;
}

void pvo_hv_pd_free(struct pvo_vm *vm, struct pvo_pd *pd)
{
	struct pvo_hv_mr *o = to_hv_vm(vm)->orphan;

	if (!pd->engine_part)
		return;
	if (o && o->pin && o->pin->pd == pd->engine_part) {
		/* a dropped registration's thread still uses it */
		o->own_pd = pd->engine_part;
		pd->engine_part = NULL;
		return;
	}
	ibv_dealloc_pd(pd->engine_part);
	pd->engine_part = NULL;
}

static int ibv_access_of(uint32_t access)
{
	/* PVO_ACCESS_* are the IBV_ACCESS_* bits (pvo-device.h) */
	return (int)(access &
		     (PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
		      PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC));
}

static enum pvo_status status_of_errno(int err)
{
	switch (err) {
	case ENOMEM:
	case ENOSPC:
		return PVO_STATUS_ENOSPC;
	case EFAULT:
		return PVO_STATUS_EFAULT;
	case EOPNOTSUPP:
		return PVO_STATUS_EOPNOTSUPP;
	default:
		return PVO_STATUS_EINVAL;
	}
}

static gpointer pin_main(gpointer opaque)
{
	struct pvo_hv_pin *p = opaque;

	p->mr = ibv_reg_mr_iova(p->pd, p->addr, p->len, p->iova, p->access);
	p->err = p->mr ? 0 : errno;
	g_atomic_int_set(&p->done, 1);
	return NULL;
}

static bool pin_done(const struct pvo_hv_pin *p)
{
	return g_atomic_int_get(&p->done);
}

/* The thread's host MR (NULL with errno), the thread joined. Done only. */
static struct ibv_mr *pin_finish(struct pvo_hv_pin *p)
{
	struct ibv_mr *mr;
	int err;

	g_thread_join(p->thread);
	mr = p->mr;
	err = p->err;
	g_free(p);
	errno = err;
	return mr;
}

static bool pinned_fits(const struct pvo_vm *vm, uint64_t bytes)
{
	const struct pvo_quota *q = &vm->cfg->quota;

	return bytes <=
	       q->max_pinned - MIN(q->max_pinned, to_hv_vm(vm)->use.pinned);
}

/*
 * What the alias of the MR's pages will take, checked against the VM's
 * bounds and charged (hv_budget.h) before anything is mapped: the runs
 * are counted up to the mappings the VM has left, so the walk, and later
 * the mremap calls of this command, stop at the bound.
 */
static enum pvo_status charge(struct pvo_vm *vm, struct pvo_mr *mr,
			      const uint64_t *pages, uint32_t npages,
			      uint32_t *runs)
{
	struct pvo_hv_use *u = &to_hv_vm(vm)->use;
	uint64_t bytes = (uint64_t)npages * PVO_PAGE_SIZE;
	uint32_t left = pvo_hv_budget_mappings_left(vm, u);
	char *why = NULL;
	int err;

	/* the cheap bound first: no walk for an MR that cannot fit */
	if (!pinned_fits(vm, bytes))
		return pvo_hv_budget_charge(vm, u, 1, bytes);
	err = pvo_mr_alias_count(vm, pages, npages, left, runs, &why);
	if (err == -ENOSPC)
		return pvo_hv_budget_charge(vm, u, *runs, bytes);
	if (err) {
		pvo_vm_warn(vm,
			    "hostverbs: MR of %" PRIu32 " pages at iova "
			    "0x%" PRIx64 ": %s",
			    npages, mr->iova, why);
		g_free(why);
		return status_of_errno(-err);
	}
	return pvo_hv_budget_charge(vm, u, *runs, bytes);
}

static void uncharge(struct pvo_vm *vm, const struct pvo_hv_mr *h)
{
	pvo_hv_budget_uncharge(&to_hv_vm(vm)->use, h->alias.runs, h->alias.len);
}

static enum pvo_status alias(struct pvo_vm *vm, struct pvo_mr *mr,
			     const uint64_t *pages, uint32_t npages,
			     struct pvo_hv_mr *h)
{
	uint32_t runs = 0;
	enum pvo_status st = charge(vm, mr, pages, npages, &runs);
	char *why = NULL;
	int err;

	if (st)
		return st;
	err = pvo_mr_alias_map(vm, pages, npages, &h->alias, &why);
	if (!err && h->alias.runs == runs)
		return PVO_STATUS_OK;
	/* the same walk as the count's: a difference is a bug */
	if (!err) {
		why = g_strdup_printf("%u runs mapped, %u counted",
				      h->alias.runs, runs);
		err = -EINVAL;
		pvo_mr_alias_unmap(&h->alias);
	}
	pvo_hv_budget_uncharge(&to_hv_vm(vm)->use, runs,
			       (uint64_t)npages * PVO_PAGE_SIZE);
	pvo_vm_warn(
	    vm, "hostverbs: MR of %" PRIu32 " pages at iova 0x%" PRIx64 ": %s",
	    npages, mr->iova, why);
	g_free(why);
	return status_of_errno(-err);
}

/*
 * The host MR made: its keys checked and taken, or it goes with errno
 * err (h->mr NULL: the device refused it) and h is freed.
 */
static enum pvo_status registered(struct pvo_vm *vm, struct pvo_mr *mr,
				  struct pvo_hv_mr *h, struct ibv_pd *pd,
				  int err)
{
	/* one key for both (rdma_rxe gives rkey 0 without remote access);
	 * a new MR's key is the guest's, which must be free (a migrated
	 * MR keeps its guest key whatever the host's) */
	if (!h->mr || (h->mr->rkey != h->mr->lkey && h->mr->rkey) ||
	    (!h->remade && g_hash_table_contains(to_hv_vm(vm)->keys,
						  GUINT_TO_POINTER(
						      h->mr->lkey)))) {
		err = h->mr ? EINVAL : err;
		pvo_vm_warn(vm,
			    "hostverbs: %s: ibv_reg_mr_iova of %" PRIu64
			    " bytes at iova 0x%" PRIx64 ": %s",
			    ibv_get_device_name(pd->context->device),
			    mr->length, mr->iova,
			    h->mr ? "the device gave lkey != rkey or a key "
				    "in use"
				  : g_strerror(err));
		if (h->mr)
			ibv_dereg_mr(h->mr);
		uncharge(vm, h);
		pvo_mr_alias_unmap(&h->alias);
		g_free(h);
		mr->engine_part = NULL;
		return status_of_errno(err);
	}
	mr->engine_part = h;
	return PVO_STATUS_OK;
}

static enum pvo_status reg_now(struct pvo_vm *vm, struct pvo_mr *mr,
			       struct ibv_pd *pd, const uint64_t *pages,
			       uint32_t npages, bool remade)
{
	struct pvo_hv_mr *h = g_new0(struct pvo_hv_mr, 1);
	enum pvo_status st;

	h->remade = remade;
	st = alias(vm, mr, pages, npages, h);
	if (st) {
		g_free(h);
		return st;
	}
	h->mr = ibv_reg_mr_iova(
	    pd, (uint8_t *)h->alias.base + (mr->iova & (PVO_PAGE_SIZE - 1)),
	    mr->length, mr->iova, ibv_access_of(mr->access));
	return registered(vm, mr, h, pd, errno);
}

/* What a large MR in progress holds goes (its thread is not running). */
static void parts_free(struct pvo_vm *vm, struct pvo_hv_mr *h)
{
	if (h->step != HV_MR_COUNT)
		pvo_hv_budget_uncharge(&to_hv_vm(vm)->use, h->runs, h->bytes);
	if (h->mr)
		ibv_dereg_mr(h->mr);
	pvo_mr_alias_unmap(&h->alias);
	if (h->own_pd)
		ibv_dealloc_pd(h->own_pd);
	g_free(h);
}

static enum pvo_status parts_fail(struct pvo_vm *vm, struct pvo_mr *mr,
				  struct pvo_hv_mr *h, int err, char *why)
{
	pvo_vm_warn(
	    vm, "hostverbs: MR of %" PRIu64 " bytes at iova 0x%" PRIx64 ": %s",
	    mr->length, mr->iova, why ? why : g_strerror(err));
	g_free(why);
	parts_free(vm, h);
	mr->engine_part = NULL;
	return status_of_errno(err);
}

static enum pvo_status again(struct pvo_vm *vm, bool waits)
{
	vm->ctrl_waits = waits;
	return PVO_STATUS_AGAIN;
}

/* A dropped registration whose thread is done is freed: true if none
 * is left. */
static bool reap(struct pvo_vm *vm)
{
	struct pvo_hv_vm *hv = to_hv_vm(vm);
	struct pvo_hv_mr *h = hv->orphan;

	if (!h)
		return true;
	if (!pin_done(h->pin))
		return false;
	h->mr = pin_finish(h->pin);
	h->pin = NULL;
	parts_free(vm, h);
	hv->orphan = NULL;
	return true;
}

static void reap_timer(void *opaque)
{
	struct pvo_vm *vm = opaque;

	if (!reap(vm))
		pvo_timer_arm(&to_hv_vm(vm)->reap, HV_REAP_US);
}

/* A migrated MR made over turns: its pages as REG_MR gave them. */
struct pvo_hv_remake {
	struct pvo_mr *mr;
	uint64_t *pages;
	uint32_t npages;
	gint64 since; /* monotonic us, for the log */
};

static void remake_free(struct pvo_hv_remake *r)
{
	g_free(r->pages);
	g_free(r);
}

/* A migrated MR that goes before it was made again. */
static void remake_drop(struct pvo_vm *vm, struct pvo_mr *mr)
{
	GQueue *q = &to_hv_vm(vm)->remakes;
	GList *l;

	for (l = q->head; l; l = l->next) {
		struct pvo_hv_remake *r = l->data;

		if (r->mr == mr) {
			remake_free(r);
			g_queue_delete_link(q, l);
			return;
		}
	}
}

static void remake_turn(void *opaque);

void pvo_hv_mr_init(struct pvo_vm *vm)
{
	pvo_timer_init(&to_hv_vm(vm)->reap, reap_timer, vm);
	pvo_timer_init(&to_hv_vm(vm)->remake, remake_turn, vm);
}

void pvo_hv_mr_fini(struct pvo_vm *vm)
{
	/* the VM goes (its config removed, the daemon stops): the thread
	 * has at most one MR's pinning left */
	while (!reap(vm))
		g_usleep(HV_REAP_US);
	pvo_timer_destroy(&to_hv_vm(vm)->reap);
	pvo_timer_destroy(&to_hv_vm(vm)->remake);
	g_queue_clear_full(&to_hv_vm(vm)->remakes,
			   (GDestroyNotify)remake_free);
}

/*
 * One turn of a large MR (HV_PAGES_PER_TURN): count, charge and reserve;
 * map; register on a thread; take its result. PVO_STATUS_AGAIN until the
 * last turn.
 */
static enum pvo_status reg_parts(struct pvo_vm *vm, struct pvo_mr *mr,
				 struct ibv_pd *pd, const uint64_t *pages,
				 uint32_t npages, bool remade)
{
	struct pvo_hv_vm *hv = to_hv_vm(vm);
	struct pvo_hv_mr *h = to_hv_mr(mr);
	struct pvo_hv_pin *p;
	char *why = NULL;
	GError *gerr = NULL;
	int err;

	if (!h) {
		uint64_t bytes = (uint64_t)npages * PVO_PAGE_SIZE;

		/* the cheap bound first: no walk for an MR that cannot fit
		 * (the charge fails, saying why) */
		if (!pinned_fits(vm, bytes))
			return pvo_hv_budget_charge(vm, &hv->use, 1, bytes);
		h = g_new0(struct pvo_hv_mr, 1);
		h->bytes = bytes;
		h->remade = remade;
		mr->engine_part = h;
	}
	switch (h->step) {
	case HV_MR_COUNT:
		err = pvo_mr_alias_count_part(
		    vm, pages, npages,
		    pvo_hv_budget_mappings_left(vm, &hv->use),
		    HV_PAGES_PER_TURN, &h->walk, &why);
		if (err == -EAGAIN)
			return again(vm, false);
		if (err && err != -ENOSPC)
			return parts_fail(vm, mr, h, -err, why);
		if (pvo_hv_budget_charge(vm, &hv->use, h->walk.runs,
					 h->bytes)) {
			g_free(h);
			mr->engine_part = NULL;
			return PVO_STATUS_ENOSPC;
		}
		h->runs = h->walk.runs;
		h->step = HV_MR_MAP;
		h->walk = (struct pvo_mr_alias_walk){0};
		err = pvo_mr_alias_reserve(npages, &h->alias, &why);
		if (err)
			return parts_fail(vm, mr, h, -err, why);
		return again(vm, false);
	case HV_MR_MAP:
		err = pvo_mr_alias_map_part(vm, pages, npages, &h->alias,
					    HV_RUNS_PER_TURN, h->runs, &h->walk,
					    &why);
		if (err == -EAGAIN)
			return again(vm, false);
		if (!err && h->alias.runs != h->runs) {
			err = -EINVAL;
			why = g_strdup_printf("%u runs mapped, %u counted: the "
					      "guest changed its memory "
					      "meanwhile",
					      h->alias.runs, h->runs);
		}
		if (err)
			return parts_fail(vm, mr, h, -err, why);
		/* one registration's thread per VM, a dropped one's first */
		if (!reap(vm))
			return again(vm, true);
		p = g_new0(struct pvo_hv_pin, 1);
		p->pd = pd;
		p->addr =
		    (uint8_t *)h->alias.base + (mr->iova & (PVO_PAGE_SIZE - 1));
		p->len = mr->length;
		p->iova = mr->iova;
		p->access = ibv_access_of(mr->access);
		p->thread = g_thread_try_new("pvo-hv-pin", pin_main, p, &gerr);
		if (!p->thread) {
			why = g_strdup_printf("no thread to register it: %s",
					      gerr->message);
			g_error_free(gerr);
			g_free(p);
			return parts_fail(vm, mr, h, ENOMEM, why);
		}
		h->pin = p;
		h->step = HV_MR_PIN;
		return again(vm, true);
	case HV_MR_PIN:
		if (!pin_done(h->pin))
			return again(vm, true);
		h->mr = pin_finish(h->pin);
		h->pin = NULL;
		/* from here on it is a host MR like any other */
		h->runs = h->alias.runs;
		return registered(vm, mr, h, pd, errno);
	}
	return parts_fail(vm, mr, h, EINVAL, NULL);
}

enum pvo_status pvo_hv_reg_mr(struct pvo_vm *vm, struct pvo_mr *mr,
			      const uint64_t *pages, uint32_t npages)
{
	struct ibv_pd *pd = pvo_hv_pd(vm, mr->pd);

	if (!pd)
		return PVO_STATUS_ENOSPC;
	if (npages > HV_PAGES_PER_TURN || to_hv_mr(mr))
		return reg_parts(vm, mr, pd, pages, npages, false);
	return reg_now(vm, mr, pd, pages, npages, false);
}

void pvo_hv_dereg_mr(struct pvo_vm *vm, struct pvo_mr *mr)
{
	struct pvo_hv_vm *hv = to_hv_vm(vm);
	struct pvo_hv_mr *h = to_hv_mr(mr);

	remake_drop(vm, mr);
	if (!h)
		return;
	mr->engine_part = NULL;
	if (!h->mr) {
		/* a registration in progress, dropped: a running thread
		 * keeps it (and its charge) until it is done */
		if (h->pin) {
			hv->orphan = h;
			pvo_timer_arm(&hv->reap, HV_REAP_US);
		} else {
			parts_free(vm, h);
		}
		return;
	}
	if (g_hash_table_lookup(hv->keys, GUINT_TO_POINTER(mr->key)) == mr)
		g_hash_table_remove(hv->keys, GUINT_TO_POINTER(mr->key));
	if (h->mr->lkey != mr->key)
		hv->rekeyed--;
	if (ibv_dereg_mr(h->mr))
		pvo_log(pvo_vm_name(vm), "hostverbs: ibv_dereg_mr key 0x%x: %s",
			mr->key, g_strerror(errno));
	/* the device no longer reaches the pages: unmapping is safe */
	uncharge(vm, h);
	pvo_mr_alias_unmap(&h->alias);
	g_free(h);
}

/* The GPAs of the MR's 4 KiB pages, as REG_MR gave them. */
static uint64_t *mr_pages(const struct pvo_mr *mr, uint32_t *npages)
{
	uint64_t n = pvo_mr_npages(mr->iova, mr->length), i, avail;
	uint64_t *p = g_new(uint64_t, n);

	for (i = 0; i < n; i++) {
		uint64_t addr =
		    i ? (mr->iova & ~(uint64_t)(PVO_PAGE_SIZE - 1)) +
			    i * PVO_PAGE_SIZE
		      : mr->iova;

		p[i] = pvo_mr_gpa(mr, addr, &avail) &
		       ~(uint64_t)(PVO_PAGE_SIZE - 1);
	}
	*npages = (uint32_t)n;
	return p;
}

enum pvo_status pvo_hv_rereg_mr(struct pvo_vm *vm, struct pvo_mr *mr,
				struct pvo_pd *pd, uint32_t access,
				uint64_t iova, uint64_t length,
				const uint64_t *pages, uint32_t npages)
{
	struct pvo_mr next = *mr;
	uint64_t *own = NULL;
	enum pvo_status st;

	/* a new host MR pins every page again, in this call: large ones
	 * are made over several turns by REG_MR only */
	if (pvo_mr_npages(mr->iova, mr->length) > HV_PAGES_PER_TURN ||
	    (pages && npages > HV_PAGES_PER_TURN)) {
		pvo_vm_warn(
		    vm,
		    "hostverbs: REREG_MR of MR key 0x%x: not for MRs of "
		    "more than %u pages on the host-verbs transport; "
		    "deregister it and register the new one",
		    mr->key, HV_PAGES_PER_TURN);
		return PVO_STATUS_EOPNOTSUPP;
	}
	if (!pages)
		pages = own = mr_pages(mr, &npages);
	next.pd = pd;
	next.access = access;
	next.iova = iova;
	next.length = length;
	next.engine_part = NULL;
	/* the new host MR first: on failure the old one stays */
	st = pvo_hv_reg_mr(vm, &next, pages, npages);
	g_free(own);
	if (st)
		return st;
	pvo_hv_dereg_mr(vm, mr);
	mr->engine_part = next.engine_part;
	return PVO_STATUS_OK;
}

/* A migrated MR made again: its guest key names it. */
static void remade(struct pvo_vm *vm, struct pvo_mr *mr)
{
	g_hash_table_insert(to_hv_vm(vm)->keys, GUINT_TO_POINTER(mr->key), mr);
	if (to_hv_mr(mr)->mr->lkey != mr->key)
		to_hv_vm(vm)->rekeyed++;
}

/* One turn of the oldest migrated MR still to make (reg_parts). */
static void remake_turn(void *opaque)
{
	struct pvo_vm *vm = opaque;
	struct pvo_hv_vm *hv = to_hv_vm(vm);
	struct pvo_hv_remake *r = g_queue_peek_head(&hv->remakes);
	struct ibv_pd *pd;
	enum pvo_status st;
	bool waits;

	if (!r)
		return;
	pd = pvo_hv_pd(vm, r->mr->pd);
	/* not a command: the control queue's wait stays as it was */
	waits = vm->ctrl_waits;
	st = pd ? reg_parts(vm, r->mr, pd, r->pages, r->npages, true)
		: PVO_STATUS_ENOSPC;
	if (st == PVO_STATUS_AGAIN) {
		/* pinning: look again in a while; else the next turn */
		pvo_timer_arm(&hv->remake, vm->ctrl_waits ? HV_REAP_US : 0);
		vm->ctrl_waits = waits;
		return;
	}
	vm->ctrl_waits = waits;
	if (st)
		pvo_log(pvo_vm_name(vm),
			"hostverbs: the migrated MR key 0x%x (%u pages) could "
			"not be registered on this host's device (above): "
			"its WQEs fail with protection errors",
			r->mr->key, r->npages);
	else {
		remade(vm, r->mr);
		/* what it adds to the switch-over, for the operator */
		pvo_info(pvo_vm_name(vm),
			 "hostverbs: the migrated MR key 0x%x (%u pages) "
			 "registered again here in %lld ms",
			 r->mr->key, r->npages,
			 (long long)(g_get_monotonic_time() - r->since) / 1000);
	}
	remake_free(g_queue_pop_head(&hv->remakes));
	if (!g_queue_is_empty(&hv->remakes))
		pvo_timer_arm(&hv->remake, 0);
}

enum pvo_status pvo_hv_mr_remake(struct pvo_vm *vm, struct pvo_mr *mr)
{
	struct ibv_pd *pd = pvo_hv_pd(vm, mr->pd);
	struct pvo_hv_remake *r;
	enum pvo_status st;
	uint64_t *pages;
	uint32_t n;

	if (!pd)
		return PVO_STATUS_ENOSPC;
	pages = mr_pages(mr, &n);
	if (n > HV_PAGES_PER_TURN) {
		r = g_new0(struct pvo_hv_remake, 1);
		r->mr = mr;
		r->pages = pages;
		r->npages = n;
		r->since = g_get_monotonic_time();
		g_queue_push_tail(&to_hv_vm(vm)->remakes, r);
		pvo_timer_arm(&to_hv_vm(vm)->remake, 0);
		return PVO_STATUS_OK;
	}
	st = reg_now(vm, mr, pd, pages, n, true);
	g_free(pages);
	if (!st)
		remade(vm, mr);
	return st;
}

bool pvo_hv_mr_remaking(struct pvo_vm *vm)
{
	return !g_queue_is_empty(&to_hv_vm(vm)->remakes);
}

uint32_t pvo_hv_lkey(struct pvo_vm *vm, uint32_t key)
{
	struct pvo_mr *mr;

	if (!to_hv_vm(vm)->rekeyed)
		return key;
	mr = pvo_hv_mr_by_key(vm, key);
	return mr && to_hv_mr(mr) && to_hv_mr(mr)->mr ? to_hv_mr(mr)->mr->lkey
						       : key;
}

struct pvo_mr *pvo_hv_mr_by_key(struct pvo_vm *vm, uint32_t key)
{
	GHashTable *keys = to_hv_vm(vm)->keys;

	/* every key lookup of the data path comes here: no hashing while
	 * the VM has no host MR */
	if (!g_hash_table_size(keys))
		return NULL;
	return g_hash_table_lookup(keys, GUINT_TO_POINTER(key));
}

void pvo_hv_take_key(struct pvo_vm *vm, struct pvo_mr *mr)
{
	mr->key = to_hv_mr(mr)->mr->lkey;
	g_hash_table_insert(to_hv_vm(vm)->keys, GUINT_TO_POINTER(mr->key), mr);
}
