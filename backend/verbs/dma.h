/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Data movement. A struct pvo_dma is a cursor over a list of validated
 * ranges (SGEs through MRs, guest-physical ranges of the local DMA key,
 * or host buffers such as inline data and GRHs) that yields contiguous
 * (host address, GPA, length) chunks. pvo_dma_copy moves bytes from one
 * cursor to another, possibly in another VM: one copy from the source
 * guest's pages to the destination guest's pages, each destination write
 * through the dirty-logging helper.
 */
#ifndef PVO_DMA_H
#define PVO_DMA_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "pvo-device.h"

struct pvo_vm;
struct pvo_mr;
struct pvo_pd;

enum pvo_dma_kind {
	PVO_DMA_MR,   /* addr is an MR address */
	PVO_DMA_PHYS, /* addr is a GPA (PVO_LOCAL_DMA_LKEY) */
	PVO_DMA_HOST, /* host buffer */
};

struct pvo_dma_range {
	enum pvo_dma_kind kind;
	const struct pvo_mr *mr;
	/* what names the MR again after a key changed (vm->mr_gen): an MR
	 * key, or a window key used by QP qpn (pvo_rkey_get) */
	uint32_t key, access, qpn;
	const struct pvo_pd *pd;
	uint64_t addr;
	uint8_t *host;
	uint64_t len;
};

/* SGEs of one WQE, plus a GRH or inline buffer in front. */
#define PVO_DMA_MAX_RANGES (PVO_DEV_MAX_SGE + 1)

struct pvo_dma {
	struct pvo_vm *vm;
	uint64_t len;	/* total bytes of all ranges */
	unsigned int n; /* ranges */
	unsigned int i; /* cursor: range ... */
	uint64_t off;	/* ... and offset in it */
	uint64_t mr_gen; /* vm->mr_gen when the MR pointers were checked */
	struct pvo_dma_range r[PVO_DMA_MAX_RANGES];
};

void pvo_dma_init(struct pvo_dma *d, struct pvo_vm *vm);
/* Append a range (false when full). Zero-length ranges are skipped. */
bool pvo_dma_add(struct pvo_dma *d, enum pvo_dma_kind kind,
		 const struct pvo_mr *mr, uint64_t addr, void *host,
		 uint64_t len);

/* Appends the MR range a remote key resolved to (pvo_rkey_get): looked
 * up again by that key, access and QP. */
bool pvo_dma_add_remote(struct pvo_dma *d, const struct pvo_mr *mr,
			uint32_t rkey, uint32_t qpn, uint32_t access,
			uint64_t addr, uint64_t len);

/*
 * Resolves the SGEs of a WQE of a QP in pd: each lkey must name an MR of
 * pd granting access and covering the SGE (or, when phys_ok, be
 * PVO_LOCAL_DMA_LKEY with a guest-RAM range). Returns PVO_WC_SUCCESS or
 * PVO_WC_LOC_PROT_ERR; zero-length SGEs are ignored.
 */
enum pvo_wc_status pvo_dma_from_sges(struct pvo_dma *d, struct pvo_vm *vm,
				     const struct pvo_pd *pd, bool phys_ok,
				     uint32_t access, const struct pvo_sge *sge,
				     unsigned int num_sge);

/*
 * A cursor may outlive the moment its MRs were checked (a WQE waiting for
 * an ACK, a message arriving in packets): whenever the VM has freed an MR
 * or a key changed since, each MR range is looked up again by key and
 * fails if the key no longer grants it, so a guest that deregisters,
 * invalidates or unbinds early gets an error, never a stale pointer.
 */

/* Cursor to byte off from the start (off <= len). */
void pvo_dma_seek(struct pvo_dma *d, uint64_t off);

/*
 * The chunk at the cursor: host address, GPA (0 for host buffers) and
 * length (> 0, within one guest memory region; across pages only where
 * they are contiguous). NULL at the end or
 * if the memory is no longer guest RAM.
 */
void *pvo_dma_chunk(struct pvo_dma *d, uint64_t *gpa, uint64_t *len);
void pvo_dma_advance(struct pvo_dma *d, uint64_t n);

/* Moves len bytes from src's cursor to dst's; both advance. False on a
 * fault (memory that stopped being guest RAM) or if either runs out. */
bool pvo_dma_copy(struct pvo_dma *dst, struct pvo_dma *src, uint64_t len);

#endif
