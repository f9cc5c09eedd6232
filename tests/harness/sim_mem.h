/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guest memory as a guest driver hands it to the device: sets of 4 KiB
 * guest pages (in any physical order), the two-level page directories of
 * include/pvo-device.h that describe them, "virtual" buffers made of such
 * pages (what a process registers as an MR), and rings (SQ, RQ, SRQ, CQ)
 * with their header page.
 *
 * Pages are deliberately not contiguous by default (SIM_LAYOUT_SCATTER
 * maps virtual page i to physical pages in reverse order), so a back-end
 * that assumes a physically contiguous buffer or ring copies the wrong
 * bytes and the tests see it.
 */
#ifndef SIM_MEM_H
#define SIM_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_ram.h"
#include "pvo-device.h"

enum sim_layout {
	SIM_LAYOUT_SCATTER,  /* virtual pages in reverse physical order */
	SIM_LAYOUT_CONTIG,   /* physically contiguous, in order */
	SIM_LAYOUT_STRADDLE, /* contiguous across the two RAM regions */
};

/* The pages holding one page directory (dir pages + table pages). */
struct sim_pdir_mem {
	uint64_t dir_gpa;    /* dir_pages contiguous pages */
	uint64_t tables_gpa; /* ntables contiguous pages */
	uint32_t dir_pages;
	uint32_t ntables;
};

struct sim_page_arrays;

struct sim_pages {
	struct guest_ram *ram;
	struct sim_page_arrays *arrays; /* owns gpa[] and hva[] */
	enum sim_layout layout;
	uint64_t chunk_gpa; /* the one allocation holding every page */
	uint32_t npages;
	uint64_t *gpa;	      /* GPA of page i */
	uint8_t **hva;	      /* host address of page i */
	struct pvo_pdir pdir; /* describes all npages, in order */
	struct sim_pdir_mem pdir_mem;
};

/*
 * Write a page directory for @npages GPAs (up to PVO_PDIR_MAX_PAGES; the
 * GPAs may repeat) into freshly allocated guest pages: a directory of as
 * many contiguous pages as the tables need, and the tables. @out gets
 * dir_gpa / npages / dir_pages (little-endian). -ENOMEM when guest RAM is
 * full.
 */
int sim_pdir_build(struct guest_ram *ram, const uint64_t *gpas, uint32_t npages,
		   struct pvo_pdir *out, struct sim_pdir_mem *mem);
void sim_pdir_free(struct guest_ram *ram, struct sim_pdir_mem *mem);

/* Allocate @npages zeroed pages and their directory. -errno on failure. */
int sim_pages_alloc(struct sim_pages *p, struct guest_ram *ram, uint32_t npages,
		    enum sim_layout layout);
void sim_pages_free(struct sim_pages *p);
/*
 * Free the host-side bookkeeping of every sim_pages still allocated in
 * @ram (the VM is going away; its objects must not be used afterwards).
 */
void sim_mem_release_ram(struct guest_ram *ram);

/*
 * A process buffer: virtual addresses [va, va + len), va % 4096 ==
 * page_off, backed by sim_pages. The device sees it only through an MR.
 */
struct sim_buf {
	struct sim_pages pages;
	uint64_t va;
	uint64_t len;
	uint32_t page_off;
};

/* @va_page: page-aligned virtual address the buffer's first page gets. */
int sim_buf_alloc(struct sim_buf *b, struct guest_ram *ram, uint64_t va_page,
		  uint64_t len, uint32_t page_off, enum sim_layout layout);
void sim_buf_free(struct sim_buf *b);
/* Copy in / out at byte offset @off of the buffer (walks the pages). */
void sim_buf_write(struct sim_buf *b, uint64_t off, const void *src,
		   uint64_t n);
void sim_buf_read(const struct sim_buf *b, uint64_t off, void *dst, uint64_t n);
void sim_buf_fill(struct sim_buf *b, uint64_t off, int byte, uint64_t n);
/* Host pointer of byte @off; the bytes after it are contiguous in host
 * memory only up to the end of its page (all of them with CONTIG). */
uint8_t *sim_buf_ptr(const struct sim_buf *b, uint64_t off);
/* GPA of byte @off. */
uint64_t sim_buf_gpa(const struct sim_buf *b, uint64_t off);

/*
 * A ring of include/pvo-device.h: page 0 = struct pvo_ring_hdr, entries of
 * 1 << shift bytes from page 1.
 */
struct sim_ring {
	struct sim_pages pages;
	uint32_t entries;
	uint32_t shift;
	struct pvo_ring_hdr *hdr;
};

int sim_ring_alloc(struct sim_ring *r, struct guest_ram *ram, uint32_t entries,
		   uint32_t shift, enum sim_layout layout);
void sim_ring_free(struct sim_ring *r);
/* Host address of entry @idx (taken modulo entries). */
void *sim_ring_entry(const struct sim_ring *r, uint32_t idx);

/* Atomic accessors of a ring header's counters (little-endian host). */
static inline uint32_t sim_load_acquire(const __le32 *p)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

static inline void sim_store_release(__le32 *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)p, v, __ATOMIC_RELEASE);
}

#endif /* SIM_MEM_H */
