// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ring memory: page-aligned, zeroed, kept out of fork()ed children (the
 * kernel pins these pages for the device; a copy-on-write fault in the
 * parent would move them away from the device's view).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

uint32_t pvo_roundup_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * num_entries must be a power of two and stride (1 << shift) at most a
 * page; callers check both against the device limits first.
 */
int pvo_ring_alloc(struct pvo_ring *ring, uint32_t num_entries,
		   unsigned int shift, size_t page_size)
{
	size_t ring_size, buf_size;
	void *buf;
	int ret;

	ring_size = (size_t)pvo_ring_pages(num_entries, shift) * PVO_PAGE_SIZE;
	buf_size = (ring_size + page_size - 1) & ~(page_size - 1);

	ret = posix_memalign(&buf, page_size, buf_size);
	if (ret)
		return ret;
	memset(buf, 0, buf_size);

	/* -1 with errno set, or an errno value */
	errno = 0;
	ret = ibv_dontfork_range(buf, buf_size);
	if (ret) {
		ret = ret > 0 ? ret : (errno ? errno : ENOMEM);
		free(buf);
		return ret;
	}

	ring->buf = buf;
	ring->buf_size = buf_size;
	ring->ring_size = ring_size;
	ring->hdr = buf;
	ring->entries = (uint8_t *)buf + PVO_PAGE_SIZE;
	ring->num_entries = num_entries;
	ring->shift = shift;
	return 0;
}

void pvo_ring_free(struct pvo_ring *ring)
{
	if (!ring->buf)
		return;
	ibv_dofork_range(ring->buf, ring->buf_size);
	free(ring->buf);
	ring->buf = NULL;
}

int pvo_wq_alloc(struct pvo_wq *wq, uint32_t num_entries, unsigned int shift,
		 uint32_t max_sge, size_t page_size)
{
	int ret;

	ret = pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		return ret;

	ret = pvo_ring_alloc(&wq->ring, num_entries, shift, page_size);
	if (ret) {
		pthread_spin_destroy(&wq->lock);
		return ret;
	}
	wq->max_sge = max_sge;
	return 0;
}

void pvo_wq_free(struct pvo_wq *wq)
{
	if (!wq->ring.buf)
		return;
	pvo_ring_free(&wq->ring);
	pthread_spin_destroy(&wq->lock);
}
