/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rings shared with the device (layout of pvo-device.h): counter accessors
 * with the ordering the contract asks for, entry addressing, allocation.
 *
 * The counters are little-endian 32-bit words that run freely; each has
 * one writer. A producer publishes its entries before its counter
 * (release), a consumer reads the counter before the entries (acquire).
 */
#ifndef PVO_RING_H
#define PVO_RING_H

#include <endian.h>
#include <stdatomic.h>
#include <stdint.h>

#include "pvrdma_overlay.h"

static inline _Atomic(uint32_t) *pvo_counter(__le32 *counter)
{
	return (_Atomic(uint32_t) *)counter;
}

static inline uint32_t pvo_load_acquire(__le32 *counter)
{
	return le32toh(atomic_load_explicit(pvo_counter(counter),
					    memory_order_acquire));
}

/* For a counter only this side writes. */
static inline uint32_t pvo_load_own(__le32 *counter)
{
	return le32toh(atomic_load_explicit(pvo_counter(counter),
					    memory_order_relaxed));
}

static inline void pvo_store_release(__le32 *counter, uint32_t value)
{
	atomic_store_explicit(pvo_counter(counter), htole32(value),
			      memory_order_release);
}

static inline void *pvo_ring_entry(struct pvo_ring *ring, uint32_t index)
{
	return ring->entries +
	       ((size_t)(index & (ring->num_entries - 1)) << ring->shift);
}

/*
 * Entries a producer at prod may still write. The acquire pairs with the
 * device's release of cons: it has read the slots it gave back.
 */
static inline uint32_t pvo_ring_space(struct pvo_ring *ring, uint32_t prod)
{
	uint32_t used = prod - pvo_load_acquire(&ring->hdr->cons);

	return used >= ring->num_entries ? 0 : ring->num_entries - used;
}

/* ring.c */
int pvo_ring_alloc(struct pvo_ring *ring, uint32_t num_entries,
		   unsigned int shift, size_t page_size);
void pvo_ring_free(struct pvo_ring *ring);
int pvo_wq_alloc(struct pvo_wq *wq, uint32_t num_entries, unsigned int shift,
		 uint32_t max_sge, size_t page_size);
void pvo_wq_free(struct pvo_wq *wq);
uint32_t pvo_roundup_pow2(uint32_t n);

#endif /* PVO_RING_H */
