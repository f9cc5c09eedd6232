// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: guest memory for the device. DMA-coherent pages for
 * kernel rings and page directories, pinned user memory for user rings,
 * and the two-level page directories (struct pvo_pdir) that describe both
 * to the device. All pages are 4 KiB, whatever the guest's page size.
 */

#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include <rdma/iter.h>

#include "pvo_mem.h"

int pvo_page_alloc(struct pvo_dev *dev, struct pvo_dma_page *page)
{
	/* Zeroed and at least page aligned. */
	page->va = dma_alloc_coherent(dev->dma_dev, PVO_PAGE_SIZE, &page->dma,
				      GFP_KERNEL);
	if (!page->va)
		return -ENOMEM;
	if (WARN_ON_ONCE(page->dma & (PVO_PAGE_SIZE - 1))) {
		pvo_page_free(dev, page);
		return -EIO;
	}
	return 0;
}

void pvo_page_free(struct pvo_dev *dev, struct pvo_dma_page *page)
{
	if (page->va)
		dma_free_coherent(dev->dma_dev, PVO_PAGE_SIZE, page->va,
				  page->dma);
	page->va = NULL;
}

static void pvo_kbuf_free(struct pvo_dev *dev, struct pvo_kbuf *kbuf)
{
	unsigned int i;

	if (!kbuf->pages)
		return;
	for (i = 0; i < kbuf->npages; i++)
		pvo_page_free(dev, &kbuf->pages[i]);
	kvfree(kbuf->pages);
	kbuf->pages = NULL;
	kbuf->npages = 0;
}

static int pvo_kbuf_alloc(struct pvo_dev *dev, struct pvo_kbuf *kbuf,
			  unsigned int npages)
{
	unsigned int i;
	int err;

	kbuf->pages = kvcalloc(npages, sizeof(*kbuf->pages), GFP_KERNEL);
	if (!kbuf->pages)
		return -ENOMEM;
	kbuf->npages = npages;
	for (i = 0; i < npages; i++) {
		err = pvo_page_alloc(dev, &kbuf->pages[i]);
		if (err) {
			pvo_kbuf_free(dev, kbuf);
			return err;
		}
	}
	return 0;
}

void pvo_pdir_free(struct pvo_dev *dev, struct pvo_pdir_mem *pdir)
{
	unsigned int i;

	if (pdir->tables) {
		for (i = 0; i < pdir->ntables; i++)
			pvo_page_free(dev, &pdir->tables[i]);
		kvfree(pdir->tables);
		pdir->tables = NULL;
	}
	if (pdir->dir)
		dma_free_coherent(dev->dma_dev,
				  (size_t)pdir->dir_pages << PVO_PAGE_SHIFT,
				  pdir->dir, pdir->dir_dma);
	pdir->dir = NULL;
	pdir->dir_pages = 0;
	pdir->ntables = 0;
	pdir->npages = 0;
}

/*
 * The directory is one DMA-coherent block of as many 4 KiB pages as the
 * table GPAs need (up to PVO_PDIR_MAX_DIR_PAGES); the device reads it as
 * physically contiguous.
 */
static int pvo_pdir_alloc(struct pvo_dev *dev, struct pvo_pdir_mem *pdir,
			  size_t npages)
{
	unsigned int i;
	int err;

	memset(pdir, 0, sizeof(*pdir));
	if (!npages || npages > PVO_PDIR_MAX_PAGES)
		return -EINVAL;
	pdir->npages = npages;
	pdir->ntables = pvo_pdir_tables(npages);
	pdir->dir_pages = pvo_pdir_dir_pages(npages);
	/* Zeroed and at least page aligned. */
	pdir->dir = dma_alloc_coherent(dev->dma_dev,
				       (size_t)pdir->dir_pages << PVO_PAGE_SHIFT,
				       &pdir->dir_dma, GFP_KERNEL);
	if (!pdir->dir) {
		pvo_pdir_free(dev, pdir);
		return -ENOMEM;
	}
	if (WARN_ON_ONCE(pdir->dir_dma & (PVO_PAGE_SIZE - 1))) {
		pvo_pdir_free(dev, pdir);
		return -EIO;
	}
	pdir->tables = kvcalloc(pdir->ntables, sizeof(*pdir->tables),
				GFP_KERNEL);
	if (!pdir->tables) {
		pvo_pdir_free(dev, pdir);
		return -ENOMEM;
	}
	for (i = 0; i < pdir->ntables; i++) {
		err = pvo_page_alloc(dev, &pdir->tables[i]);
		if (err) {
			pvo_pdir_free(dev, pdir);
			return err;
		}
		pdir->dir[i] = cpu_to_le64(pdir->tables[i].dma);
	}
	return 0;
}

static void pvo_pdir_set(struct pvo_pdir_mem *pdir, u32 idx, dma_addr_t dma)
{
	__le64 *table = pdir->tables[idx / PVO_PDIR_ENTRIES].va;

	table[idx % PVO_PDIR_ENTRIES] = cpu_to_le64(dma);
}

void pvo_pdir_describe(const struct pvo_pdir_mem *pdir, struct pvo_pdir *out)
{
	out->dir_gpa = cpu_to_le64(pdir->dir_dma);
	out->npages = cpu_to_le32(pdir->npages);
	out->dir_pages = cpu_to_le32(pdir->dir_pages);
}

/* Every 4 KiB block of @umem, from the one holding umem->iova on. */
int pvo_pdir_from_umem(struct pvo_dev *dev, struct pvo_pdir_mem *pdir,
		       struct ib_umem *umem)
{
	size_t npages = ib_umem_num_dma_blocks(umem, PVO_PAGE_SIZE);
	struct ib_block_iter biter;
	u32 i = 0;
	int err;

	err = pvo_pdir_alloc(dev, pdir, npages);
	if (err)
		return err;
	rdma_umem_for_each_dma_block(umem, &biter, PVO_PAGE_SIZE) {
		if (WARN_ON_ONCE(i >= npages))
			break;
		pvo_pdir_set(pdir, i++, rdma_block_iter_dma_address(&biter));
	}
	if (WARN_ON_ONCE(i != npages)) {
		pvo_pdir_free(dev, pdir);
		return -EIO;
	}
	return 0;
}

/* Pages of a ring of @entries entries of 1 << @shift bytes, or 0. */
static size_t pvo_ring_npages(u32 entries, unsigned int shift)
{
	u64 bytes = (u64)entries << shift;

	if (!entries || !is_power_of_2(entries) || shift > PVO_PAGE_SHIFT ||
	    bytes > (u64)(PVO_PDIR_MAX_PAGES - 1) << PVO_PAGE_SHIFT)
		return 0;
	return 1 + DIV_ROUND_UP(bytes, PVO_PAGE_SIZE);
}

int pvo_ring_init_kernel(struct pvo_dev *dev, struct pvo_ring *ring,
			 u32 entries, unsigned int shift)
{
	size_t npages = pvo_ring_npages(entries, shift);
	unsigned int i;
	int err;

	memset(ring, 0, sizeof(*ring));
	if (!npages)
		return -EINVAL;
	err = pvo_kbuf_alloc(dev, &ring->kbuf, npages);
	if (err)
		return err;
	err = pvo_pdir_alloc(dev, &ring->pdir, npages);
	if (err) {
		pvo_kbuf_free(dev, &ring->kbuf);
		return err;
	}
	for (i = 0; i < npages; i++)
		pvo_pdir_set(&ring->pdir, i, ring->kbuf.pages[i].dma);
	ring->hdr = ring->kbuf.pages[0].va;
	ring->entries = entries;
	ring->shift = shift;
	return 0;
}

/*
 * A ring the provider allocated: page aligned, at least as large as the
 * layout needs. Only the pages the layout uses are pinned and described.
 */
int pvo_ring_init_user(struct pvo_dev *dev, struct ib_device *ibdev,
		       struct pvo_ring *ring, u64 addr, u32 size,
		       u32 entries, unsigned int shift)
{
	size_t npages = pvo_ring_npages(entries, shift);
	size_t len = npages << PVO_PAGE_SHIFT;
	int err;

	memset(ring, 0, sizeof(*ring));
	if (!npages) {
		ibdev_dbg(ibdev, "ring of %u entries of 2^%u bytes: entries must be a power of two, the stride at most 4 KiB\n",
			  entries, shift);
		return -EINVAL;
	}
	if (!addr || (addr & (PVO_PAGE_SIZE - 1)) || size < len) {
		ibdev_dbg(ibdev, "ring buffer 0x%llx + %u: needs a 4 KiB aligned buffer of at least %zu bytes\n",
			  addr, size, len);
		return -EINVAL;
	}
	ring->umem = ib_umem_get(ibdev, addr, len, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(ring->umem)) {
		err = PTR_ERR(ring->umem);
		ring->umem = NULL;
		return err;
	}
	err = pvo_pdir_from_umem(dev, &ring->pdir, ring->umem);
	if (err) {
		ib_umem_release(ring->umem);
		ring->umem = NULL;
		return err;
	}
	ring->entries = entries;
	ring->shift = shift;
	return 0;
}

void pvo_ring_free(struct pvo_dev *dev, struct pvo_ring *ring)
{
	pvo_pdir_free(dev, &ring->pdir);
	pvo_kbuf_free(dev, &ring->kbuf);
	ib_umem_release(ring->umem);
	ring->umem = NULL;
	ring->hdr = NULL;
}
