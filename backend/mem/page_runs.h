/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A list of 4 KiB guest pages (an MR's) kept as runs of pages that follow
 * each other in GPA: host memory follows the runs the guest registered,
 * so a buffer on huge pages or physically contiguous is one run, and a
 * page directory that names the same pages over and over costs what it
 * names, charged to the VM's host memory budget (host_budget.h).
 *
 * Run k starts at page pvo_page_run_pg(r, k) of the list (0 for the
 * first) at GPA pvo_page_run_gpa(r, k) and lasts to the next run's first
 * page (the last run to npages). A run is one 64-bit word, its first
 * page above its first page frame, so that the words sort by page: a
 * lookup is a binary search over them, none for a list of one run.
 */
#ifndef PVO_PAGE_RUNS_H
#define PVO_PAGE_RUNS_H

#include <stdbool.h>
#include <stdint.h>

#include "host_budget.h"
#include "pvo-device.h"

/* Page frames of 40 bits (GPAs below 2^52, x86-64's limit), lists below
 * 2^24 pages (a page directory names 2^20 at most). */
#define PVO_PAGE_RUN_PFN_BITS 40
#define PVO_PAGE_RUNS_MAX_GPA (1ull << (PVO_PAGE_RUN_PFN_BITS + PVO_PAGE_SHIFT))
#define PVO_PAGE_RUNS_MAX_PAGES (1u << (64 - PVO_PAGE_RUN_PFN_BITS))

struct pvo_page_runs {
	uint32_t npages;
	uint32_t nruns;
	uint32_t cap;  /* runs allocated */
	uint64_t *run; /* first page << PFN_BITS | its page frame */
	/* what the array is charged to (NULL: nothing), and how much */
	struct pvo_host_budget *budget;
	uint64_t charged;
};

/* Host bytes per run. */
#define PVO_PAGE_RUN_BYTES sizeof(uint64_t)

static inline uint32_t pvo_page_run_pg(const struct pvo_page_runs *r,
				       uint32_t k)
{
	return (uint32_t)(r->run[k] >> PVO_PAGE_RUN_PFN_BITS);
}

static inline uint64_t pvo_page_run_gpa(const struct pvo_page_runs *r,
					uint32_t k)
{
	return (r->run[k] & ((1ull << PVO_PAGE_RUN_PFN_BITS) - 1))
	       << PVO_PAGE_SHIFT;
}

/* Pages of run k. */
static inline uint32_t pvo_page_run_len(const struct pvo_page_runs *r,
					uint32_t k)
{
	return (k + 1 < r->nruns ? pvo_page_run_pg(r, k + 1) : r->npages) -
	       pvo_page_run_pg(r, k);
}

/* Whether a page at gpa would join the list's last run. */
static inline bool pvo_page_runs_joins(const struct pvo_page_runs *r,
				       uint64_t gpa)
{
	uint32_t k = r->nruns - 1;

	return r->nruns &&
	       gpa == pvo_page_run_gpa(r, k) +
			  ((uint64_t)(r->npages - pvo_page_run_pg(r, k))
			   << PVO_PAGE_SHIFT);
}

/* An empty list whose array will be charged to budget (may be NULL). */
void pvo_page_runs_init(struct pvo_page_runs *r, struct pvo_host_budget *b);

/*
 * Appends the next page (page aligned; the caller checked it): it joins
 * the last run if it follows it in GPA. ENOSPC if a new run would take
 * the budget over its limit (the list stays as it was), ENOMEM if the
 * host has no memory for it, EINVAL for a GPA from PVO_PAGE_RUNS_MAX_GPA
 * on or a list of PVO_PAGE_RUNS_MAX_PAGES.
 */
enum pvo_status pvo_page_runs_add(struct pvo_page_runs *r, uint64_t gpa);

/* Appends n (>= 1) pages from gpa on, as n calls of pvo_page_runs_add
 * would. */
enum pvo_status pvo_page_runs_add_run(struct pvo_page_runs *r, uint64_t gpa,
				      uint32_t n);

/* Room for nruns runs in all (one allocation when the caller counted
 * them first): ENOSPC over the budget, ENOMEM. */
enum pvo_status pvo_page_runs_reserve(struct pvo_page_runs *r,
				      uint32_t nruns);

/* Gives back what the array holds beyond its runs (a finished list). */
void pvo_page_runs_trim(struct pvo_page_runs *r);

/* Frees the array and uncharges it; the list is empty again. */
void pvo_page_runs_free(struct pvo_page_runs *r);

/* pvo_page_runs_find's search of a list of more than one run. */
void pvo_page_runs_search(const struct pvo_page_runs *r, uint32_t pg,
			  uint64_t *gpa, uint32_t *left);

/*
 * The run holding page pg (< npages): in *gpa that page's GPA and in
 * *left the pages from it to the run's end (at least 1). Inline for the
 * data path, where most MRs are one run.
 */
static inline void pvo_page_runs_find(const struct pvo_page_runs *r,
				      uint32_t pg, uint64_t *gpa,
				      uint32_t *left)
{
	if (r->nruns != 1) {
		pvo_page_runs_search(r, pg, gpa, left);
		return;
	}
	*gpa = pvo_page_run_gpa(r, 0) + ((uint64_t)pg << PVO_PAGE_SHIFT);
	*left = r->npages - pg;
}

/* The GPA of every page, as a new array (g_free); NULL if the host has
 * no memory for it. For interfaces that take a page array. */
uint64_t *pvo_page_runs_expand(const struct pvo_page_runs *r);

#endif
