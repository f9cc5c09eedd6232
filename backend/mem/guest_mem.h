/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guest memory as the vhost-user memory table of one VM describes it.
 * Every address the guest gives us (page directories, rings, MR pages,
 * SGEs of the local DMA key) is translated here. Only rings keep host
 * addresses, and only until the memory table changes (vm->mem_gen,
 * ring.c). Every write into guest memory goes through the helpers below,
 * which also mark the vhost dirty log (live migration).
 *
 * This layer knows neither verbs nor vhost-user: the front-end's side
 * (vhost/vhost_mem.c) gives it the memory table and the dirty log
 * through struct pvo_gmem_ops.
 */
#ifndef PVO_GUEST_MEM_H
#define PVO_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;
struct pvo_gmem;

/* What the front-end's side says of a VM's guest RAM. */
struct pvo_gmem_ops {
	/* The host address of gpa and in *avail the bytes that follow it
	 * in the same region; NULL if gpa is not guest RAM (or no front-end
	 * is connected). */
	void *(*map)(struct pvo_gmem *g, uint64_t gpa, uint64_t *avail);
	/* Marks [gpa, gpa + len) dirty while the front-end logs writes. */
	void (*log_dirty)(struct pvo_gmem *g, uint64_t gpa, uint64_t len);
};

/*
 * A VM's guest memory. Every struct pvo_vm starts with one (verbs/vm.h
 * asserts it), so the functions below take the VM; ops NULL: no guest
 * RAM at all.
 */
struct pvo_gmem {
	const struct pvo_gmem_ops *ops;
	/* page directory entries walked so far: what a control command
	 * cost, for the control queue's budget per callback */
	uint64_t pdir_pages;
};

static inline struct pvo_gmem *pvo_gmem_of(struct pvo_vm *vm)
{
	return (struct pvo_gmem *)(void *)vm;
}

/*
 * Host address of gpa and in *avail the bytes that follow it in the same
 * guest RAM region (host-contiguous). NULL if gpa is not guest RAM.
 */
void *pvo_gmem_map(struct pvo_vm *vm, uint64_t gpa, uint64_t *avail);

/* Host address of [gpa, gpa + len) if it lies in one region, else NULL. */
void *pvo_gmem_ptr(struct pvo_vm *vm, uint64_t gpa, uint64_t len);

/* Whether [gpa, gpa + len) is guest RAM (it may span regions). */
bool pvo_gmem_is_ram(struct pvo_vm *vm, uint64_t gpa, uint64_t len);

/* Copy out of guest memory; false if any byte is not guest RAM. */
bool pvo_gmem_read(struct pvo_vm *vm, uint64_t gpa, void *dst, size_t len);

/*
 * The one write path into guest memory: copies len bytes to gpa (which
 * may span regions) and marks the pages dirty. False if any byte is not
 * guest RAM; nothing past the first bad byte is written.
 */
bool pvo_gmem_write(struct pvo_vm *vm, uint64_t gpa, const void *src,
		    size_t len);

/* Marks [gpa, gpa + len) dirty after an in-place write (atomics below). */
void pvo_gmem_log_dirty(struct pvo_vm *vm, uint64_t gpa, uint64_t len);

/*
 * Naturally aligned 32-bit words of shared rings: the counters and flags
 * of struct pvo_ring_hdr. Loads acquire, stores release, exchanges are
 * full barriers. A gpa that is not RAM or not aligned reads as 0 and is
 * not written; the caller checks the return value where it matters.
 */
bool pvo_gmem_load32(struct pvo_vm *vm, uint64_t gpa, uint32_t *val);
bool pvo_gmem_store32(struct pvo_vm *vm, uint64_t gpa, uint32_t val);
/* The same at host address p, which the caller translated from gpa. */
uint32_t pvo_gmem_load32_at(const uint32_t *p);
void pvo_gmem_store32_at(struct pvo_vm *vm, uint32_t *p, uint64_t gpa,
			 uint32_t val);
/* pvo_gmem_write of len bytes that lie at host address p in one region. */
void pvo_gmem_write_at(struct pvo_vm *vm, void *p, uint64_t gpa,
		       const void *src, size_t len);
bool pvo_gmem_xchg32(struct pvo_vm *vm, uint64_t gpa, uint32_t val,
		     uint32_t *old);
bool pvo_gmem_cmpxchg32(struct pvo_vm *vm, uint64_t gpa, uint32_t expect,
			uint32_t val);

/* 64-bit verbs atomics on guest memory (little-endian, 8-byte aligned). */
enum pvo_gmem_atomic { PVO_GMEM_CMP_SWAP, PVO_GMEM_FETCH_ADD };
bool pvo_gmem_atomic64(struct pvo_vm *vm, uint64_t gpa, enum pvo_gmem_atomic op,
		       uint64_t compare_add, uint64_t swap, uint64_t *orig);

/*
 * Reads the page list of a struct pvo_pdir (fields still little-endian)
 * into a new array of npages data-page GPAs (g_free). The directory must
 * name exactly want_pages pages (1..PVO_PDIR_MAX_PAGES) and span exactly
 * the pages its tables need (dir_pages 0 counts as 1), else EINVAL; the
 * directory must lie in one guest RAM region, every table and data page
 * in guest RAM (EFAULT), and all of them must be page-aligned (EINVAL).
 * Returns a pvo_status.
 */
enum pvo_status pvo_pdir_read(struct pvo_vm *vm, const struct pvo_pdir *pdir,
			      uint32_t want_pages, uint64_t **pages);

/*
 * The same checks, handing each data page's GPA in order to page()
 * instead of keeping them: a status other than OK from it ends the walk
 * with that status. Pages before a bad entry have been handed over.
 */
typedef enum pvo_status (*pvo_pdir_page_fn)(void *opaque, uint64_t gpa);
enum pvo_status pvo_pdir_walk(struct pvo_vm *vm, const struct pvo_pdir *pdir,
			      uint32_t want_pages, pvo_pdir_page_fn page,
			      void *opaque);

/* The same over entries [first, first + count) of the directory only,
 * so that a long list can be walked a part per turn of the loop. */
enum pvo_status pvo_pdir_walk_part(struct pvo_vm *vm,
				   const struct pvo_pdir *pdir,
				   uint32_t want_pages, uint32_t first,
				   uint32_t count, pvo_pdir_page_fn page,
				   void *opaque);

#endif
