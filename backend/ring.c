// SPDX-License-Identifier: GPL-2.0-or-later
/* Rings in guest memory; see ring.h. */
#include <string.h>
#include <glib.h>

#include "guest_mem.h"
#include "ring.h"

enum pvo_status pvo_ring_init(struct pvo_ring *r, struct pvo_vm *vm,
			      const struct pvo_pdir *pdir, uint32_t entries,
			      uint32_t max_entries, unsigned int shift)
{
	enum pvo_status st;

	memset(r, 0, sizeof(*r));
	if (!pvo_is_pow2(entries) || entries > max_entries ||
	    shift > PVO_PAGE_SHIFT)
		return PVO_STATUS_EINVAL;
	st = pvo_pdir_read(vm, pdir, pvo_ring_pages(entries, shift), &r->pages);
	if (st)
		return st;
	r->npages = pvo_ring_pages(entries, shift);
	r->entries = entries;
	r->shift = shift;
	return PVO_STATUS_OK;
}

void pvo_ring_fini(struct pvo_ring *r)
{
	g_free(r->pages);
	r->pages = NULL;
	r->entries = 0;
}

/* An entry never straddles a page: stride <= 4096 divides the page. */
bool pvo_ring_read(struct pvo_vm *vm, const struct pvo_ring *r, uint32_t idx,
		   void *buf, size_t len)
{
	void *p;

	if (len > (1u << r->shift))
		return false;
	p = pvo_gmem_ptr(vm, pvo_ring_entry_gpa(r, idx), len);
	if (!p)
		return false;
	memcpy(buf, p, len);
	return true;
}

bool pvo_ring_read_wqe(struct pvo_vm *vm, const struct pvo_ring *r,
		       uint32_t idx, void *buf, size_t hdr_len,
		       size_t (*tail_len)(const void *hdr))
{
	size_t stride = 1u << r->shift, tail, in_slot;
	const uint8_t *p;

	if (hdr_len > stride)
		return false;
	p = pvo_gmem_ptr(vm, pvo_ring_entry_gpa(r, idx), stride);
	if (!p)
		return false;
	memcpy(buf, p, hdr_len);
	/* from the copy: the guest may change the slot meanwhile */
	tail = tail_len(buf);
	in_slot = MIN(tail, stride - hdr_len);
	memcpy((uint8_t *)buf + hdr_len, p + hdr_len, in_slot);
	memset((uint8_t *)buf + hdr_len + in_slot, 0, tail - in_slot);
	return true;
}

bool pvo_ring_write(struct pvo_vm *vm, const struct pvo_ring *r, uint32_t idx,
		    const void *buf, size_t len)
{
	if (len > (1u << r->shift))
		return false;
	return pvo_gmem_write(vm, pvo_ring_entry_gpa(r, idx), buf, len);
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

bool pvo_ring_load(struct pvo_vm *vm, const struct pvo_ring *r, size_t field,
		   uint32_t *val)
{
	return pvo_gmem_load32(vm, pvo_ring_hdr_gpa(r, field), val);
}

bool pvo_ring_store(struct pvo_vm *vm, const struct pvo_ring *r, size_t field,
		    uint32_t val)
{
	return pvo_gmem_store32(vm, pvo_ring_hdr_gpa(r, field), val);
}
