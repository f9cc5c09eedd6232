// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest pages, page directories, buffers and rings of a simulated guest.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_mem.h"

#define PAGE PVO_PAGE_SIZE

/* Every live page set, so that a VM's close can free what tests leave. */
struct sim_page_arrays {
	struct sim_page_arrays *next, *prev;
	struct guest_ram *ram;
	uint64_t gpa[]; /* npages GPAs, then npages host pointers */
};

static struct sim_page_arrays live = {.next = &live, .prev = &live};

static struct sim_page_arrays *arrays_new(struct guest_ram *ram,
					  uint32_t npages)
{
	struct sim_page_arrays *a;

	a = calloc(1, sizeof(*a) + (size_t)npages *
				       (sizeof(uint64_t) + sizeof(uint8_t *)));
	if (!a)
		return NULL;
	a->ram = ram;
	a->next = live.next;
	a->prev = &live;
	live.next->prev = a;
	live.next = a;
	return a;
}

static void arrays_free(struct sim_page_arrays *a)
{
	a->prev->next = a->next;
	a->next->prev = a->prev;
	free(a);
}

void sim_mem_release_ram(struct guest_ram *ram)
{
	struct sim_page_arrays *a, *n;

	for (a = live.next; a != &live; a = n) {
		n = a->next;
		if (a->ram == ram)
			arrays_free(a);
	}
}

int sim_pdir_build(struct guest_ram *ram, const uint64_t *gpas, uint32_t npages,
		   struct pvo_pdir *out, struct sim_pdir_mem *mem)
{
	uint32_t ntables = pvo_pdir_tables(npages);
	uint32_t dir_pages = pvo_pdir_dir_pages(npages);
	__le64 *dir, *table;
	uint32_t i;

	memset(mem, 0, sizeof(*mem));
	mem->dir_gpa = mem->tables_gpa = GUEST_RAM_NO_ADDR;
	if (npages > PVO_PDIR_MAX_PAGES)
		return -E2BIG;
	if (!dir_pages)
		dir_pages = 1; /* an empty list still gets a directory page */
	/* one block, as a driver's dma_alloc_coherent gives it */
	mem->dir_gpa = guest_ram_alloc(ram, (uint64_t)dir_pages * PAGE, PAGE);
	if (mem->dir_gpa == GUEST_RAM_NO_ADDR)
		return -ENOMEM;
	mem->dir_pages = dir_pages;
	if (ntables) {
		mem->tables_gpa =
		    guest_ram_alloc(ram, (uint64_t)ntables * PAGE, PAGE);
		if (mem->tables_gpa == GUEST_RAM_NO_ADDR) {
			sim_pdir_free(ram, mem);
			return -ENOMEM;
		}
	}
	mem->ntables = ntables;
	dir = guest_ram_ptr(ram, mem->dir_gpa, (uint64_t)dir_pages * PAGE);
	for (i = 0; i < ntables; i++)
		dir[i] = htole64(mem->tables_gpa + (uint64_t)i * PAGE);
	if (ntables) {
		table = guest_ram_ptr(ram, mem->tables_gpa,
				      (uint64_t)ntables * PAGE);
		for (i = 0; i < npages; i++)
			table[i] = htole64(gpas[i]);
	}
	out->dir_gpa = htole64(mem->dir_gpa);
	out->npages = htole32(npages);
	out->dir_pages = htole32(dir_pages);
	return 0;
}

void sim_pdir_free(struct guest_ram *ram, struct sim_pdir_mem *mem)
{
	if (mem->dir_gpa != GUEST_RAM_NO_ADDR && mem->dir_gpa)
		guest_ram_free(ram, mem->dir_gpa);
	if (mem->tables_gpa != GUEST_RAM_NO_ADDR && mem->tables_gpa)
		guest_ram_free(ram, mem->tables_gpa);
	mem->dir_gpa = mem->tables_gpa = GUEST_RAM_NO_ADDR;
}

/* GPA for a chunk that straddles the region boundary, or NO_ADDR. */
static uint64_t alloc_straddle(struct guest_ram *ram, uint64_t bytes)
{
	uint64_t b = guest_ram_boundary(ram);
	uint64_t half = (bytes / 2) & ~(uint64_t)(PAGE - 1);
	uint64_t gpa;

	if (!b || bytes < 2 * PAGE)
		return GUEST_RAM_NO_ADDR;
	/* a few candidate positions around the boundary */
	for (gpa = b - half; gpa + PAGE > b - 64 * PAGE && gpa < b;
	     gpa -= PAGE) {
		if (guest_ram_reserve(ram, gpa, bytes) == 0)
			return gpa;
	}
	return GUEST_RAM_NO_ADDR;
}

int sim_pages_alloc(struct sim_pages *p, struct guest_ram *ram, uint32_t npages,
		    enum sim_layout layout)
{
	uint64_t bytes = (uint64_t)npages * PAGE;
	uint32_t i, phys;
	int ret;

	memset(p, 0, sizeof(*p));
	p->ram = ram;
	p->layout = layout;
	p->chunk_gpa = GUEST_RAM_NO_ADDR;
	p->pdir_mem.dir_gpa = p->pdir_mem.tables_gpa = GUEST_RAM_NO_ADDR;
	if (!npages)
		return -EINVAL;
	if (layout == SIM_LAYOUT_STRADDLE)
		p->chunk_gpa = alloc_straddle(ram, bytes);
	else
		p->chunk_gpa = guest_ram_alloc(ram, bytes, PAGE);
	if (p->chunk_gpa == GUEST_RAM_NO_ADDR)
		return -ENOMEM;
	p->npages = npages;
	p->arrays = arrays_new(ram, npages);
	if (!p->arrays) {
		sim_pages_free(p);
		return -ENOMEM;
	}
	p->gpa = p->arrays->gpa;
	p->hva = (uint8_t **)(p->arrays->gpa + npages);
	for (i = 0; i < npages; i++) {
		phys = layout == SIM_LAYOUT_SCATTER ? npages - 1 - i : i;
		p->gpa[i] = p->chunk_gpa + (uint64_t)phys * PAGE;
		p->hva[i] = guest_ram_ptr(ram, p->gpa[i], PAGE);
	}
	ret = sim_pdir_build(ram, p->gpa, npages, &p->pdir, &p->pdir_mem);
	if (ret < 0) {
		sim_pages_free(p);
		return ret;
	}
	return 0;
}

void sim_pages_free(struct sim_pages *p)
{
	if (!p->ram)
		return;
	sim_pdir_free(p->ram, &p->pdir_mem);
	if (p->chunk_gpa != GUEST_RAM_NO_ADDR)
		guest_ram_free(p->ram, p->chunk_gpa);
	if (p->arrays)
		arrays_free(p->arrays);
	memset(p, 0, sizeof(*p));
	p->chunk_gpa = GUEST_RAM_NO_ADDR;
}

int sim_buf_alloc(struct sim_buf *b, struct guest_ram *ram, uint64_t va_page,
		  uint64_t len, uint32_t page_off, enum sim_layout layout)
{
	uint64_t npages;

	memset(b, 0, sizeof(*b));
	if (page_off >= PAGE || (va_page & (PAGE - 1)))
		return -EINVAL;
	npages = (page_off + (len ? len : 1) + PAGE - 1) / PAGE;
	if (npages > PVO_PDIR_MAX_PAGES)
		return -E2BIG;
	b->va = va_page + page_off;
	b->len = len;
	b->page_off = page_off;
	return sim_pages_alloc(&b->pages, ram, (uint32_t)npages, layout);
}

void sim_buf_free(struct sim_buf *b)
{
	sim_pages_free(&b->pages);
	memset(b, 0, sizeof(*b));
}

/* op 0 = write, 1 = read, 2 = fill */
static void buf_walk(const struct sim_buf *b, uint64_t off, uint8_t *p,
		     int byte, uint64_t n, int op)
{
	uint64_t pos = b->page_off + off;

	while (n) {
		uint64_t pg = pos / PAGE, in = pos % PAGE;
		uint64_t chunk = PAGE - in;
		uint8_t *h;

		if (pg >= b->pages.npages)
			abort(); /* a test bug: outside its own buffer */
		h = b->pages.hva[pg] + in;
		if (chunk > n)
			chunk = n;
		if (op == 0)
			memcpy(h, p, chunk);
		else if (op == 1)
			memcpy(p, h, chunk);
		else
			memset(h, byte, chunk);
		if (p)
			p += chunk;
		pos += chunk;
		n -= chunk;
	}
}

void sim_buf_write(struct sim_buf *b, uint64_t off, const void *src, uint64_t n)
{
	buf_walk(b, off, (uint8_t *)src, 0, n, 0);
}

void sim_buf_read(const struct sim_buf *b, uint64_t off, void *dst, uint64_t n)
{
	buf_walk(b, off, dst, 0, n, 1);
}

void sim_buf_fill(struct sim_buf *b, uint64_t off, int byte, uint64_t n)
{
	buf_walk(b, off, NULL, byte, n, 2);
}

uint8_t *sim_buf_ptr(const struct sim_buf *b, uint64_t off)
{
	uint64_t pos = b->page_off + off;

	return b->pages.hva[pos / PAGE] + pos % PAGE;
}

uint64_t sim_buf_gpa(const struct sim_buf *b, uint64_t off)
{
	uint64_t pos = b->page_off + off;

	return b->pages.gpa[pos / PAGE] + pos % PAGE;
}

int sim_ring_alloc(struct sim_ring *r, struct guest_ram *ram, uint32_t entries,
		   uint32_t shift, enum sim_layout layout)
{
	int ret;

	memset(r, 0, sizeof(*r));
	if (!entries || shift > PVO_PAGE_SHIFT)
		return -EINVAL;
	ret = sim_pages_alloc(&r->pages, ram, pvo_ring_pages(entries, shift),
			      layout);
	if (ret < 0)
		return ret;
	r->entries = entries;
	r->shift = shift;
	r->hdr = (struct pvo_ring_hdr *)r->pages.hva[0];
	return 0;
}

void sim_ring_free(struct sim_ring *r)
{
	sim_pages_free(&r->pages);
	memset(r, 0, sizeof(*r));
}

void *sim_ring_entry(const struct sim_ring *r, uint32_t idx)
{
	uint64_t off = (uint64_t)(idx & (r->entries - 1)) << r->shift;

	return r->pages.hva[1 + off / PAGE] + off % PAGE;
}
