// SPDX-License-Identifier: GPL-2.0-or-later
/* Rings in guest memory; see ring.h. */
#include <endian.h>
#include <inttypes.h>
#include <string.h>
#include <glib.h>

#include "device.h"
#include "guest_mem.h"
#include "ring.h"
#include "vm.h"

/* Generation no memory table has: a fresh cache is stale. */
#define HVA_STALE UINT64_MAX

static void set_geometry(struct pvo_ring *r, uint32_t npages,
			 uint32_t entries, unsigned int shift)
{
	r->hva = g_malloc0(sizeof(*r->hva) + npages * sizeof(r->hva->page[0]));
	r->hva->gen = HVA_STALE;
	r->npages = npages;
	r->entries = entries;
	r->shift = (uint8_t)shift;
}

/* Host bytes of a ring of npages: its page list and host addresses. */
static uint64_t ring_bytes(struct pvo_ring *r, uint32_t npages)
{
	return npages * (sizeof(*r->pages) + sizeof(r->hva->page[0])) +
	       sizeof(*r->hva);
}

/* Charges the ring of npages to b (NULL: nothing): false if over it. */
static bool charge(struct pvo_ring *r, struct pvo_host_budget *b,
		   uint32_t npages)
{
	uint64_t n = ring_bytes(r, npages);

	if (b && !pvo_budget_charge(b, n))
		return false;
	r->budget = b;
	r->charged = b ? n : 0;
	return true;
}

enum pvo_status pvo_ring_init(struct pvo_ring *r, struct pvo_vm *vm,
			      const struct pvo_pdir *pdir, uint32_t entries,
			      uint32_t max_entries, unsigned int shift)
{
	enum pvo_status st;
	uint32_t npages;

	memset(r, 0, sizeof(*r));
	if (!pvo_is_pow2(entries) || entries > max_entries ||
	    shift > PVO_PAGE_SHIFT)
		return PVO_STATUS_EINVAL;
	npages = pvo_ring_pages(entries, shift);
	if (le32toh(pdir->npages) != npages)
		return PVO_STATUS_EINVAL;
	if (!charge(r, &vm->host_mem, npages)) {
		pvo_vm_warn(vm,
			    "a ring of %u pages over max-host-mem (%" PRIu64
			    " of %" PRIu64 " bytes used)",
			    npages, vm->host_mem.used, vm->host_mem.limit);
		return PVO_STATUS_ENOSPC;
	}
	st = pvo_pdir_read(vm, pdir, npages, &r->pages);
	if (st) {
		pvo_ring_fini(r);
		return st;
	}
	set_geometry(r, npages, entries, shift);
	return PVO_STATUS_OK;
}

bool pvo_ring_restore(struct pvo_ring *r, struct pvo_host_budget *budget,
		      const uint64_t *pages, uint32_t npages, uint32_t entries,
		      unsigned int shift)
{
	memset(r, 0, sizeof(*r));
	if (!charge(r, budget, npages))
		return false;
	r->pages = g_memdup2(pages, npages * sizeof(*pages));
	set_geometry(r, npages, entries, shift);
	return true;
}

void pvo_ring_fini(struct pvo_ring *r)
{
	g_free(r->pages);
	g_free(r->hva);
	if (r->budget)
		pvo_budget_uncharge(r->budget, r->charged);
	r->budget = NULL;
	r->charged = 0;
	r->pages = NULL;
	r->hva = NULL;
	r->entries = 0;
}

/*
 * Host address of byte off of ring page i, or NULL if that page is not
 * guest RAM. Every page was checked at init; the addresses are looked up
 * again only when the memory table changed (vm->mem_gen), not per access.
 */
static uint8_t *page_hva(struct pvo_vm *vm, const struct pvo_ring *r,
			 uint32_t i, uint64_t off)
{
	struct pvo_ring_hva *h = r->hva;

	if (G_UNLIKELY(h->gen != vm->mem_gen)) {
		uint32_t k;

		for (k = 0; k < r->npages; k++)
			h->page[k] = pvo_gmem_ptr(vm, r->pages[k],
						  PVO_PAGE_SIZE);
		h->gen = vm->mem_gen;
	}
	return h->page[i] ? h->page[i] + off : NULL;
}

/* Host address of entry idx (an entry never straddles a page: its
 * stride, at most 4096, divides the page). */
static uint8_t *entry_hva(struct pvo_vm *vm, const struct pvo_ring *r,
			  uint32_t idx)
{
	uint64_t off = pvo_ring_entry_off(r, idx);

	return page_hva(vm, r, 1 + (off >> PVO_PAGE_SHIFT),
			off & (PVO_PAGE_SIZE - 1));
}

bool pvo_ring_read(struct pvo_vm *vm, const struct pvo_ring *r, uint32_t idx,
		   void *buf, size_t len)
{
	const uint8_t *p;

	if (len > (1u << r->shift))
		return false;
	p = entry_hva(vm, r, idx);
	if (!p)
		return false;
	memcpy(buf, p, len);
	return true;
}

size_t pvo_recv_wqe_tail(const void *hdr)
{
	const struct pvo_recv_wqe *w = hdr;

	return MIN(w->num_sge, PVO_DEV_MAX_SGE) * sizeof(struct pvo_sge);
}

bool pvo_ring_read_wqe(struct pvo_vm *vm, const struct pvo_ring *r,
		       uint32_t idx, void *buf, size_t hdr_len,
		       size_t (*tail_len)(const void *hdr))
{
	size_t stride = 1u << r->shift, tail, in_slot;
	const uint8_t *p;

	if (hdr_len > stride)
		return false;
	p = entry_hva(vm, r, idx);
	if (!p)
		return false;
	memcpy(buf, p, hdr_len);
	/* from the copy: the guest may change the slot meanwhile */
	tail = tail_len(buf);
	in_slot = MIN(tail, stride - hdr_len);
	memcpy((uint8_t *)buf + hdr_len, p + hdr_len, in_slot);
	if (tail > in_slot)
		memset((uint8_t *)buf + hdr_len + in_slot, 0, tail - in_slot);
	return true;
}

bool pvo_ring_write(struct pvo_vm *vm, const struct pvo_ring *r, uint32_t idx,
		    const void *buf, size_t len)
{
	uint8_t *p;

	if (len > (1u << r->shift))
		return false;
	p = entry_hva(vm, r, idx);
	if (!p)
		return false;
	pvo_gmem_write_at(vm, p, pvo_ring_entry_gpa(r, idx), buf, len);
	return true;
}

bool pvo_ring_produced(struct pvo_vm *vm, const struct pvo_ring *r,
		       uint32_t cons, uint32_t pos, uint32_t *seen,
		       uint32_t *avail)
{
	uint32_t prod = *seen;

	if (prod - cons > r->entries || prod - cons <= pos - cons) {
		if (!pvo_ring_load(vm, r, PVO_RING_PROD, &prod) ||
		    prod - cons > r->entries)
			return false;
		*seen = prod;
	}
	*avail = prod - cons > pos - cons ? prod - pos : 0;
	return true;
}

/* Header words are 4-byte aligned fields of page 0. */
bool pvo_ring_load(struct pvo_vm *vm, const struct pvo_ring *r, size_t field,
		   uint32_t *val)
{
	uint32_t *p = (uint32_t *)page_hva(vm, r, 0, field);

	*val = p ? pvo_gmem_load32_at(p) : 0;
	return p;
}

bool pvo_ring_store(struct pvo_vm *vm, const struct pvo_ring *r, size_t field,
		    uint32_t val)
{
	uint32_t *p = (uint32_t *)page_hva(vm, r, 0, field);

	if (!p)
		return false;
	pvo_gmem_store32_at(vm, p, pvo_ring_hdr_gpa(r, field), val);
	return true;
}
