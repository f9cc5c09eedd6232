// SPDX-License-Identifier: GPL-2.0-or-later
/* Guest memory access; see guest_mem.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "guest_mem.h"

void *pvo_gmem_map(struct pvo_vm *vm, uint64_t gpa, uint64_t *avail)
{
	struct pvo_gmem *g = pvo_gmem_of(vm);

	return g->ops ? g->ops->map(g, gpa, avail) : NULL;
}

void *pvo_gmem_ptr(struct pvo_vm *vm, uint64_t gpa, uint64_t len)
{
	uint64_t avail;
	void *p = pvo_gmem_map(vm, gpa, &avail);

	return p && len <= avail ? p : NULL;
}

/*
 * A GPA range in chunks that each lie in one region: for (chunks_init();
 * chunks_next();) visits them in order; ok tells afterwards whether the
 * whole range was guest RAM (it fails at a range that wraps, before any
 * chunk, and at the first byte outside RAM).
 */
struct chunks {
	struct pvo_vm *vm;
	uint64_t gpa, left; /* what is still to come */
	void *p;	    /* the current chunk: host address, */
	uint64_t at;	    /* GPA */
	size_t n;	    /* and bytes */
	bool ok;
};

static void chunks_init(struct chunks *c, struct pvo_vm *vm, uint64_t gpa,
			uint64_t len)
{
	c->vm = vm;
	c->gpa = gpa;
	c->left = len;
	c->ok = gpa + len >= gpa;
}

static bool chunks_next(struct chunks *c)
{
	uint64_t avail;

	if (!c->ok || !c->left)
		return false;
	c->p = pvo_gmem_map(c->vm, c->gpa, &avail);
	if (!c->p) {
		c->ok = false;
		return false;
	}
	c->n = MIN(avail, c->left);
	c->at = c->gpa;
	c->gpa += c->n;
	c->left -= c->n;
	return true;
}

bool pvo_gmem_is_ram(struct pvo_vm *vm, uint64_t gpa, uint64_t len)
{
	struct chunks c;

	chunks_init(&c, vm, gpa, len);
	while (chunks_next(&c))
		continue; /* each chunk mapped: RAM so far */
	return c.ok;
}

bool pvo_gmem_read(struct pvo_vm *vm, uint64_t gpa, void *dst, size_t len)
{
	uint8_t *d = dst;
	struct chunks c;

	for (chunks_init(&c, vm, gpa, len); chunks_next(&c); d += c.n)
		memcpy(d, c.p, c.n);
	return c.ok;
}

void pvo_gmem_log_dirty(struct pvo_vm *vm, uint64_t gpa, uint64_t len)
{
	struct pvo_gmem *g = pvo_gmem_of(vm);

	if (len && g->ops)
		g->ops->log_dirty(g, gpa, len);
}

bool pvo_gmem_write(struct pvo_vm *vm, uint64_t gpa, const void *src,
		    size_t len)
{
	const uint8_t *s = src;
	struct chunks c;

	for (chunks_init(&c, vm, gpa, len); chunks_next(&c); s += c.n)
		pvo_gmem_write_at(vm, c.p, c.at, s, c.n);
	return c.ok;
}

static uint32_t *word32(struct pvo_vm *vm, uint64_t gpa)
{
	if (gpa & 3)
		return NULL;
	return pvo_gmem_ptr(vm, gpa, 4);
}

uint32_t pvo_gmem_load32_at(const uint32_t *p)
{
	return le32toh(__atomic_load_n(p, __ATOMIC_ACQUIRE));
}

void pvo_gmem_store32_at(struct pvo_vm *vm, uint32_t *p, uint64_t gpa,
			 uint32_t val)
{
	__atomic_store_n(p, htole32(val), __ATOMIC_RELEASE);
	pvo_gmem_log_dirty(vm, gpa, 4);
}

void pvo_gmem_write_at(struct pvo_vm *vm, void *p, uint64_t gpa,
		       const void *src, size_t len)
{
	/* memmove: a guest may copy between overlapping ranges of its own
	 * memory (loopback) */
	memmove(p, src, len);
	pvo_gmem_log_dirty(vm, gpa, len);
}

bool pvo_gmem_load32(struct pvo_vm *vm, uint64_t gpa, uint32_t *val)
{
	uint32_t *p = word32(vm, gpa);

	*val = p ? pvo_gmem_load32_at(p) : 0;
	return p;
}

bool pvo_gmem_store32(struct pvo_vm *vm, uint64_t gpa, uint32_t val)
{
	uint32_t *p = word32(vm, gpa);

	if (!p)
		return false;
	pvo_gmem_store32_at(vm, p, gpa, val);
	return true;
}

bool pvo_gmem_xchg32(struct pvo_vm *vm, uint64_t gpa, uint32_t val,
		     uint32_t *old)
{
	uint32_t *p = word32(vm, gpa);

	*old = 0;
	if (!p)
		return false;
	*old = le32toh(__atomic_exchange_n(p, htole32(val), __ATOMIC_SEQ_CST));
	pvo_gmem_log_dirty(vm, gpa, 4);
	return true;
}

bool pvo_gmem_cmpxchg32(struct pvo_vm *vm, uint64_t gpa, uint32_t expect,
			uint32_t val)
{
	uint32_t *p = word32(vm, gpa);
	uint32_t e = htole32(expect);
	bool ok;

	if (!p)
		return false;
	ok = __atomic_compare_exchange_n(p, &e, htole32(val), false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (ok)
		pvo_gmem_log_dirty(vm, gpa, 4);
	return ok;
}

bool pvo_gmem_atomic64(struct pvo_vm *vm, uint64_t gpa, enum pvo_gmem_atomic op,
		       uint64_t compare_add, uint64_t swap, uint64_t *orig)
{
	uint64_t *p = (gpa & 7) ? NULL : pvo_gmem_ptr(vm, gpa, 8);
	uint64_t e;

	if (!p)
		return false;
	if (op == PVO_GMEM_CMP_SWAP) {
		e = htole64(compare_add);
		__atomic_compare_exchange_n(p, &e, htole64(swap), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		*orig = le64toh(e); /* holds the old value either way */
	} else {
		/* Guest memory is little-endian like the host (x86-64). */
		G_STATIC_ASSERT(G_BYTE_ORDER == G_LITTLE_ENDIAN);
		*orig = __atomic_fetch_add(p, compare_add, __ATOMIC_SEQ_CST);
	}
	pvo_gmem_log_dirty(vm, gpa, 8);
	return true;
}

static enum pvo_status check_page(struct pvo_vm *vm, uint64_t gpa)
{
	if (gpa & (PVO_PAGE_SIZE - 1))
		return PVO_STATUS_EINVAL;
	if (!pvo_gmem_ptr(vm, gpa, PVO_PAGE_SIZE))
		return PVO_STATUS_EFAULT;
	return PVO_STATUS_OK;
}

/*
 * check_page over a list: the guest RAM region of the last page checked
 * ([gpa, gpa + len)) answers for pages in it without a memory table
 * lookup, which a callback walking 1M entries would do 1M times. The
 * table does not change during the walk (one callback on the loop).
 */
struct ram_hint {
	uint64_t gpa, len;
};

static enum pvo_status check_page_hint(struct pvo_vm *vm, uint64_t gpa,
				       struct ram_hint *h)
{
	uint64_t avail;

	if (gpa & (PVO_PAGE_SIZE - 1))
		return PVO_STATUS_EINVAL;
	if (gpa - h->gpa < h->len && h->len - (gpa - h->gpa) >= PVO_PAGE_SIZE)
		return PVO_STATUS_OK;
	if (!pvo_gmem_map(vm, gpa, &avail) || avail < PVO_PAGE_SIZE)
		return PVO_STATUS_EFAULT;
	h->gpa = gpa;
	h->len = avail;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_pdir_walk(struct pvo_vm *vm, const struct pvo_pdir *pdir,
			      uint32_t want_pages, pvo_pdir_page_fn page,
			      void *opaque)
{
	return pvo_pdir_walk_part(vm, pdir, want_pages, 0, want_pages, page,
				  opaque);
}

enum pvo_status pvo_pdir_walk_part(struct pvo_vm *vm,
				   const struct pvo_pdir *pdir,
				   uint32_t want_pages, uint32_t first,
				   uint32_t count, pvo_pdir_page_fn page,
				   void *opaque)
{
	uint64_t dir_gpa = le64toh(pdir->dir_gpa);
	uint32_t npages = le32toh(pdir->npages);
	uint32_t dir_pages = le32toh(pdir->dir_pages);
	uint32_t end, t, i;
	const uint64_t *dir, *tbl = NULL;
	struct ram_hint hint = {0};
	enum pvo_status st;

	if (npages != want_pages || npages == 0 ||
	    npages > PVO_PDIR_MAX_PAGES || first > npages ||
	    count > npages - first)
		return PVO_STATUS_EINVAL;
	/* 0 is 1 (what every guest sent before multi-page directories);
	 * no more pages than the tables need, so none goes unchecked. */
	if (dir_pages == 0)
		dir_pages = 1;
	if (dir_pages != pvo_pdir_dir_pages(npages))
		return PVO_STATUS_EINVAL;
	if (dir_gpa & (PVO_PAGE_SIZE - 1))
		return PVO_STATUS_EINVAL;
	pvo_gmem_of(vm)->pdir_pages += count;
	/* All of it in one RAM region, as the physically contiguous block a
	 * guest allocates for it is (pvo_gmem_ptr does not wrap). Looked up
	 * on every call: the memory table may change between the parts. */
	dir = pvo_gmem_ptr(vm, dir_gpa, (uint64_t)dir_pages * PVO_PAGE_SIZE);
	if (!dir)
		return PVO_STATUS_EFAULT;
	/* The guest may rewrite its directory while we walk it: read each
	 * GPA once and check the value we keep. */
	end = first + count;
	for (i = first; i < end; i++) {
		uint64_t g;

		if (!tbl || i % PVO_PDIR_ENTRIES == 0) {
			t = i / PVO_PDIR_ENTRIES;
			g = le64toh(__atomic_load_n(&dir[t], __ATOMIC_RELAXED));
			st = check_page(vm, g);
			if (st)
				return st;
			tbl = pvo_gmem_ptr(vm, g, PVO_PAGE_SIZE);
		}
		g = le64toh(__atomic_load_n(&tbl[i % PVO_PDIR_ENTRIES],
					    __ATOMIC_RELAXED));
		st = check_page_hint(vm, g, &hint);
		if (!st)
			st = page(opaque, g);
		if (st)
			return st;
	}
	return PVO_STATUS_OK;
}

struct page_array {
	uint64_t *p;
	size_t n;
};

static enum pvo_status to_array(void *opaque, uint64_t gpa)
{
	struct page_array *a = opaque;

	a->p[a->n++] = gpa;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_pdir_read(struct pvo_vm *vm, const struct pvo_pdir *pdir,
			      uint32_t want_pages, uint64_t **pages)
{
	struct page_array a = {0};
	enum pvo_status st;

	*pages = NULL;
	/* the directory's own checks before the allocation they bound */
	if (want_pages == 0 || want_pages > PVO_PDIR_MAX_PAGES ||
	    le32toh(pdir->npages) != want_pages)
		return PVO_STATUS_EINVAL;
	a.p = g_try_new(uint64_t, want_pages);
	if (!a.p)
		return PVO_STATUS_ENOMEM;
	st = pvo_pdir_walk(vm, pdir, want_pages, to_array, &a);
	if (st) {
		g_free(a.p);
		return st;
	}
	*pages = a.p;
	return PVO_STATUS_OK;
}
