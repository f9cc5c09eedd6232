/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rings in guest memory (SQ, RQ, SRQ, CQ): page 0 holds struct
 * pvo_ring_hdr, entries follow from page 1 (include/pvo-device.h). The
 * device keeps its own copy of the counter it owns and only reads the
 * guest's; a guest that scribbles on the device's counter changes nothing.
 */
#ifndef PVO_RING_H
#define PVO_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host_budget.h"
#include "pvo-device.h"

struct pvo_vm;

/* Host addresses of a ring's pages while vm->mem_gen is gen (ring.c). */
struct pvo_ring_hva {
	uint64_t gen;
	uint8_t *page[]; /* NULL: not guest RAM under this memory table */
};

struct pvo_ring {
	uint64_t *pages; /* GPAs: [0] header, [1..] entries */
	struct pvo_ring_hva *hva;
	uint32_t npages;
	uint32_t entries; /* power of two */
	uint8_t shift;	  /* log2 of the entry stride */
	/* the page list and host addresses, charged to the VM's budget */
	struct pvo_host_budget *budget;
	uint64_t charged;
};

#define PVO_RING_PROD offsetof(struct pvo_ring_hdr, prod)
#define PVO_RING_CONS offsetof(struct pvo_ring_hdr, cons)
#define PVO_RING_ARM offsetof(struct pvo_ring_hdr, arm)
#define PVO_RING_DB_PENDING offsetof(struct pvo_ring_hdr, db_pending)

/*
 * Reads and checks the page list of a ring of entries (a power of two,
 * 1..max_entries) with stride 1 << shift. Returns a pvo_status.
 */
enum pvo_status pvo_ring_init(struct pvo_ring *r, struct pvo_vm *vm,
			      const struct pvo_pdir *pdir, uint32_t entries,
			      uint32_t max_entries, unsigned int shift);
/* A ring from a checked page list (a migrating VM's state): takes a copy
 * of pages, charged to budget; false if over it. */
bool pvo_ring_restore(struct pvo_ring *r, struct pvo_host_budget *budget,
		      const uint64_t *pages, uint32_t npages, uint32_t entries,
		      unsigned int shift);
void pvo_ring_fini(struct pvo_ring *r);

static inline bool pvo_is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Byte offset of the entry with free-running index idx behind page 0. */
static inline uint64_t pvo_ring_entry_off(const struct pvo_ring *r,
					  uint32_t idx)
{
	return (uint64_t)(idx & (r->entries - 1)) << r->shift;
}

/* GPA of the entry with free-running index idx. */
static inline uint64_t pvo_ring_entry_gpa(const struct pvo_ring *r,
					  uint32_t idx)
{
	uint64_t off = pvo_ring_entry_off(r, idx);

	return r->pages[1 + (off >> PVO_PAGE_SHIFT)] +
	       (off & (PVO_PAGE_SIZE - 1));
}

static inline uint64_t pvo_ring_hdr_gpa(const struct pvo_ring *r, size_t field)
{
	return r->pages[0] + field;
}

/*
 * Copies a WQE out of entry idx: its hdr_len-byte header, then as many
 * bytes as tail_len() says the copied header needs (SGEs, inline data;
 * at most what buf holds behind the header). What the slot does not hold
 * reads as zeros. false if the slot is not guest RAM.
 */
bool pvo_ring_read_wqe(struct pvo_vm *vm, const struct pvo_ring *r,
		       uint32_t idx, void *buf, size_t hdr_len,
		       size_t (*tail_len)(const void *hdr));
/* tail_len() of a receive WQE (RQ, SRQ): its SGEs. */
size_t pvo_recv_wqe_tail(const void *hdr);
/* Copies len (<= stride) bytes of entry idx; false if not guest RAM. */
bool pvo_ring_read(struct pvo_vm *vm, const struct pvo_ring *r, uint32_t idx,
		   void *buf, size_t len);
bool pvo_ring_write(struct pvo_vm *vm, const struct pvo_ring *r, uint32_t idx,
		    const void *buf, size_t len);

/*
 * Entries the guest has produced from @pos on (@pos at or after @cons),
 * into *@avail. *@seen caches the producer: the guest's counter is loaded
 * again (acquire) only when the cache shows nothing from @pos on, or is
 * not within the ring of @cons (a reset or flush moved cons past it), so
 * a busy ring costs one shared-memory load per batch, not per entry.
 * False if the producer loaded is not within the ring of @cons.
 */
bool pvo_ring_produced(struct pvo_vm *vm, const struct pvo_ring *r,
		       uint32_t cons, uint32_t pos, uint32_t *seen,
		       uint32_t *avail);

/* Header words: loads acquire, stores release. */
bool pvo_ring_load(struct pvo_vm *vm, const struct pvo_ring *r, size_t field,
		   uint32_t *val);
bool pvo_ring_store(struct pvo_vm *vm, const struct pvo_ring *r, size_t field,
		    uint32_t val);

#endif
