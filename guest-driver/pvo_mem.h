/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pvrdma_overlay: guest memory the device reads and writes. Rings and
 * memory regions are described to the device by two-level page directories
 * of 4 KiB pages (struct pvo_pdir); rings have a header page followed by
 * power-of-two entries (include/pvo-device.h).
 */
#ifndef PVO_MEM_H
#define PVO_MEM_H

#include <linux/compiler.h>
#include <asm/barrier.h>
#include <rdma/ib_umem.h>

#include "pvo.h"

/* Kernel memory: an array of 4 KiB DMA-coherent pages. */
struct pvo_kbuf {
	unsigned int npages;
	struct pvo_dma_page *pages;
};

/*
 * The directory (dir_pages contiguous pages, one DMA allocation) and the
 * table pages of one struct pvo_pdir.
 */
struct pvo_pdir_mem {
	u32 npages;			/* data pages listed */
	unsigned int ntables;
	unsigned int dir_pages;
	__le64 *dir;
	dma_addr_t dir_dma;
	struct pvo_dma_page *tables;
};

/*
 * A ring: user rings are pinned provider memory (umem), kernel rings
 * driver pages (kbuf) the driver reads and writes through hdr / entries.
 */
struct pvo_ring {
	struct ib_umem *umem;
	struct pvo_kbuf kbuf;
	struct pvo_pdir_mem pdir;
	struct pvo_ring_hdr *hdr;	/* kernel rings only */
	u32 entries;			/* power of two */
	u8 shift;			/* log2 of the entry stride */
};

int pvo_page_alloc(struct pvo_dev *dev, struct pvo_dma_page *page);
void pvo_page_free(struct pvo_dev *dev, struct pvo_dma_page *page);

int pvo_pdir_from_umem(struct pvo_dev *dev, struct pvo_pdir_mem *pdir,
		       struct ib_umem *umem);
void pvo_pdir_free(struct pvo_dev *dev, struct pvo_pdir_mem *pdir);
void pvo_pdir_describe(const struct pvo_pdir_mem *pdir, struct pvo_pdir *out);

int pvo_ring_init_kernel(struct pvo_dev *dev, struct pvo_ring *ring,
			 u32 entries, unsigned int shift);
int pvo_ring_init_user(struct pvo_dev *dev, struct ib_device *ibdev,
		       struct pvo_ring *ring, u64 addr, u32 size,
		       u32 entries, unsigned int shift);
void pvo_ring_free(struct pvo_dev *dev, struct pvo_ring *ring);

/* Entry @idx (a free-running counter) of a kernel ring. */
static inline void *pvo_ring_entry(const struct pvo_ring *ring, u32 idx)
{
	size_t off = (size_t)(idx & (ring->entries - 1)) << ring->shift;

	return ring->kbuf.pages[1 + (off >> PVO_PAGE_SHIFT)].va +
	       (off & (PVO_PAGE_SIZE - 1));
}

/*
 * Ring counters. The guest owns one counter of each ring and is its only
 * writer, so it reads its own counter plainly; the device's counter is
 * read once, and an acquire barrier orders the entry reads after it.
 */
static inline u32 pvo_ring_own(const __le32 *counter)
{
	return le32_to_cpu(*counter);
}

static inline u32 pvo_ring_peer(const __le32 *counter)
{
	u32 v = le32_to_cpu(READ_ONCE(*counter));

	dma_rmb();	/* entries after the counter that covers them */
	return v;
}

/* Producer: the entries written so far become visible before @val. */
static inline void pvo_ring_publish(__le32 *counter, u32 val)
{
	dma_wmb();
	WRITE_ONCE(*counter, cpu_to_le32(val));
}

/*
 * Consumer: entries read so far are done before the device may reuse
 * their slots (a load -> store ordering, hence a full barrier).
 */
static inline void pvo_ring_release(__le32 *counter, u32 val)
{
	dma_mb();
	WRITE_ONCE(*counter, cpu_to_le32(val));
}

/*
 * Producer: is there no free slot at @prod? @cons is the consumer counter
 * read earlier; it is read again only when the ring looks full.
 */
static inline bool pvo_ring_full(const struct pvo_ring *ring, u32 prod,
				 u32 *cons)
{
	if (prod - *cons < ring->entries)
		return false;
	*cons = pvo_ring_peer(&ring->hdr->cons);
	return prod - *cons >= ring->entries;
}

#endif /* PVO_MEM_H */
