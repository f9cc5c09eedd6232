/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory regions: a guest virtual range [iova, iova + length) backed by a
 * list of guest pages, named by a key (lkey == rkey == slot << 8 | tag).
 * Every access is checked against the range, the access flags and the PD.
 */
#ifndef PVO_MR_H
#define PVO_MR_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;
struct pvo_pd;

struct pvo_mr {
	uint32_t handle;
	uint32_t key;
	uint32_t ctx;
	struct pvo_pd *pd;
	uint32_t access; /* PVO_ACCESS_* */
	uint64_t iova;
	uint64_t length;
	uint64_t *pages; /* GPA of each 4 KiB page from iova & ~4095 */
	uint32_t *run;	 /* pages from each one on that follow in GPA */
	uint32_t npages;
};

#define PVO_ACCESS_ALL                                                         \
	(PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |                    \
	 PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC)

enum pvo_status pvo_cmd_reg_mr(struct pvo_vm *vm, uint32_t ctx, const void *req,
			       void *resp);
enum pvo_status pvo_cmd_dereg_mr(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp);
void pvo_mr_free(struct pvo_vm *vm, struct pvo_mr *mr);

/* Pages covering [iova, iova + length), as REG_MR expects them. */
uint64_t pvo_mr_npages(uint64_t iova, uint64_t length);

/* Access checks of REG_MR: known bits, remote write/atomic need local
 * write (IB rule). */
bool pvo_mr_access_valid(uint32_t access);

/*
 * The MR a key names in this VM if it belongs to pd, grants every bit of
 * access and covers [addr, addr + len) (overflow-safe); NULL otherwise.
 */
struct pvo_mr *pvo_mr_get(struct pvo_vm *vm, uint32_t key,
			  const struct pvo_pd *pd, uint32_t access,
			  uint64_t addr, uint64_t len);

/* Whether [addr, addr + len) lies in the MR (len may be 0). */
bool pvo_mr_covers(const struct pvo_mr *mr, uint64_t addr, uint64_t len);

/*
 * GPA of MR address addr (covered) and in *avail the bytes to the end of
 * its page.
 */
uint64_t pvo_mr_gpa(const struct pvo_mr *mr, uint64_t addr, uint64_t *avail);
/* Fills mr->run from mr->pages (REG_MR does; g_free(mr->run) after). */
void pvo_mr_index_runs(struct pvo_mr *mr);

/* The same, with *avail extended over the following pages that are
 * physically contiguous when want needs more (one copy per run). */
uint64_t pvo_mr_gpa_run(const struct pvo_mr *mr, uint64_t addr,
			uint64_t want, uint64_t *avail);

#endif
