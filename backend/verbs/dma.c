// SPDX-License-Identifier: GPL-2.0-or-later
/* Data movement; see dma.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "dma.h"
#include "guest_mem.h"
#include "mr.h"
#include "mw.h"
#include "profile.h"
#include "vm.h"

void pvo_dma_init(struct pvo_dma *d, struct pvo_vm *vm)
{
	d->vm = vm;
	d->mr_gen = vm ? vm->mr_gen : 0;
	d->len = 0;
	d->n = 0;
	d->i = 0;
	d->off = 0;
}

bool pvo_dma_add(struct pvo_dma *d, enum pvo_dma_kind kind,
		 const struct pvo_mr *mr, uint64_t addr, void *host,
		 uint64_t len)
{
	struct pvo_dma_range *r;

	if (!len)
		return true;
	if (d->n == PVO_DMA_MAX_RANGES)
		return false;
	r = &d->r[d->n++];
	r->kind = kind;
	r->mr = mr;
	if (mr) {
		r->key = mr->key;
		r->access = mr->access;
		r->qpn = 0;
		r->pd = mr->pd;
	}
	r->addr = addr;
	r->host = host;
	r->len = len;
	d->len += len;
	return true;
}

bool pvo_dma_add_remote(struct pvo_dma *d, const struct pvo_mr *mr,
			uint32_t rkey, uint32_t qpn, uint32_t access,
			uint64_t addr, uint64_t len)
{
	struct pvo_dma_range *r;

	if (!pvo_dma_add(d, PVO_DMA_MR, mr, addr, NULL, len))
		return false;
	if (len) {
		r = &d->r[d->n - 1];
		r->key = rkey;
		r->access = access;
		r->qpn = qpn;
	}
	return true;
}

enum pvo_wc_status pvo_dma_from_sges(struct pvo_dma *d, struct pvo_vm *vm,
				     const struct pvo_pd *pd, bool phys_ok,
				     uint32_t access, const struct pvo_sge *sge,
				     unsigned int num_sge)
{
	unsigned int k;

	for (k = 0; k < num_sge; k++) {
		uint64_t addr = le64toh(sge[k].addr);
		uint32_t len = le32toh(sge[k].length);
		uint32_t lkey = le32toh(sge[k].lkey);
		const struct pvo_mr *mr;
		bool ok;

		if (!len)
			continue;
		if (lkey == PVO_LOCAL_DMA_LKEY) {
			if (!phys_ok || !pvo_gmem_is_ram(vm, addr, len))
				return PVO_WC_LOC_PROT_ERR;
			ok =
			    pvo_dma_add(d, PVO_DMA_PHYS, NULL, addr, NULL, len);
		} else {
			mr = pvo_mr_get(vm, lkey, pd, access, addr, len);
			if (!mr)
				return PVO_WC_LOC_PROT_ERR;
			ok = pvo_dma_add(d, PVO_DMA_MR, mr, addr, NULL, len);
		}
		if (!ok)
			return PVO_WC_LOC_PROT_ERR;
	}
	return PVO_WC_SUCCESS;
}

void pvo_dma_seek(struct pvo_dma *d, uint64_t off)
{
	d->i = 0;
	d->off = 0;
	while (d->i < d->n && off >= d->r[d->i].len) {
		off -= d->r[d->i].len;
		d->i++;
	}
	d->off = d->i < d->n ? off : 0;
}

/* Re-checks the MR ranges after the VM freed an MR; false if one is gone. */
static bool revalidate(struct pvo_dma *d)
{
	unsigned int k;

	for (k = 0; k < d->n; k++) {
		struct pvo_dma_range *r = &d->r[k];

		if (r->kind != PVO_DMA_MR)
			continue;
		r->mr = pvo_rkey_get(d->vm, r->key, r->pd, r->qpn, r->access,
				     r->addr, r->len);
		if (!r->mr)
			return false;
	}
	d->mr_gen = d->vm->mr_gen;
	return true;
}

void *pvo_dma_chunk(struct pvo_dma *d, uint64_t *gpa, uint64_t *len)
{
	const struct pvo_dma_range *r;
	uint64_t left, avail, page_left;
	void *p;

	if (d->i >= d->n)
		return NULL;
	r = &d->r[d->i];
	left = r->len - d->off;
	switch (r->kind) {
	case PVO_DMA_HOST:
		*gpa = 0;
		*len = left;
		return r->host + d->off;
	case PVO_DMA_MR:
		if (d->mr_gen != d->vm->mr_gen && !revalidate(d))
			return NULL;
		*gpa = pvo_mr_gpa(r->mr, r->addr + d->off, &page_left);
		break;
	case PVO_DMA_PHYS:
	default:
		/* validated as guest RAM when the range was added */
		*gpa = r->addr + d->off;
		page_left = left;
		break;
	}
	/* Translate per access: the memory table may have changed since
	 * the MR was registered. */
	p = pvo_gmem_map(d->vm, *gpa, &avail);
	if (!p)
		return NULL;
	*len = MIN(MIN(left, page_left), avail);
	return p;
}

void pvo_dma_advance(struct pvo_dma *d, uint64_t n)
{
	while (n && d->i < d->n) {
		uint64_t k = MIN(n, d->r[d->i].len - d->off);

		d->off += k;
		n -= k;
		if (d->off == d->r[d->i].len) {
			d->i++;
			d->off = 0;
		}
	}
}

static bool copy_ranges(struct pvo_dma *dst, struct pvo_dma *src, uint64_t len)
{
	while (len) {
		uint64_t sgpa, dgpa, slen, dlen, n;
		void *s = pvo_dma_chunk(src, &sgpa, &slen);
		void *p = pvo_dma_chunk(dst, &dgpa, &dlen);

		if (!s || !p)
			return false;
		n = MIN(MIN(slen, dlen), len);
		if (dst->r[dst->i].kind == PVO_DMA_HOST) {
			memmove(p, s, n);
		} else {
			/* dgpa is mapped at p: write through the logging
			 * helper, which translates again (cheap) */
			if (!pvo_gmem_write(dst->vm, dgpa, s, n))
				return false;
		}
		pvo_dma_advance(src, n);
		pvo_dma_advance(dst, n);
		len -= n;
	}
	return true;
}

/* Each copy is a profile segment of its own (profile.h). */
bool pvo_dma_copy(struct pvo_dma *dst, struct pvo_dma *src, uint64_t len)
{
	bool ok;

	pvo_prof_mark(PVO_PROF_PLACE);
	ok = copy_ranges(dst, src, len);
	pvo_prof_mark(PVO_PROF_COPY);
	return ok;
}
