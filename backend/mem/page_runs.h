/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A list of 4 KiB guest pages (an MR's) kept as runs of pages that follow
 * each other in GPA: host memory follows the runs the guest registered,
 * so a buffer on huge pages or physically contiguous is one run, and a
 * page directory that names the same pages over and over costs what it
 * names, charged to the VM's host memory budget (host_budget.h).
 *
 * Run k starts at page pg[k] of the list (pg[0] == 0) at GPA gpa[k] and
 * lasts to the next run's first page (the last run to npages). A lookup
 * is a binary search over the runs, none for a list of one run.
 */
#ifndef PVO_PAGE_RUNS_H
#define PVO_PAGE_RUNS_H

#include <stdint.h>

#include "host_budget.h"
#include "pvo-device.h"

struct pvo_page_runs {
	uint32_t npages;
	uint32_t nruns;
	uint32_t cap;	/* runs allocated */
	uint32_t *pg;	/* first page of each run */
	uint64_t *gpa;	/* its GPA */
	/* what the arrays are charged to (NULL: nothing), and how much */
	struct pvo_host_budget *budget;
	uint64_t charged;
};

/* Host bytes per run. */
#define PVO_PAGE_RUN_BYTES (sizeof(uint32_t) + sizeof(uint64_t))

/* An empty list whose arrays will be charged to budget (may be NULL). */
void pvo_page_runs_init(struct pvo_page_runs *r, struct pvo_host_budget *b);

/*
 * Appends the next page (page aligned; the caller checked it): it joins
 * the last run if it follows it in GPA. ENOSPC if a new run would take
 * the budget over its limit (the list stays as it was), ENOMEM if the
 * host has no memory for it.
 */
enum pvo_status pvo_page_runs_add(struct pvo_page_runs *r, uint64_t gpa);

/* Appends n (>= 1) pages from gpa on, as n calls of pvo_page_runs_add
 * would (the caller checked that the npages stay below 2^32 and that
 * the pages do not wrap). */
enum pvo_status pvo_page_runs_add_run(struct pvo_page_runs *r, uint64_t gpa,
				      uint32_t n);

/* Room for nruns runs in all (one allocation when the caller counted
 * them first): ENOSPC over the budget, ENOMEM. */
enum pvo_status pvo_page_runs_reserve(struct pvo_page_runs *r,
				      uint32_t nruns);

/* Gives back what the arrays hold beyond their runs (a finished list). */
void pvo_page_runs_trim(struct pvo_page_runs *r);

/* Frees the arrays and uncharges them; the list is empty again. */
void pvo_page_runs_free(struct pvo_page_runs *r);

/*
 * The run holding page pg (< npages): in *gpa that page's GPA and in
 * *left the pages from it to the run's end (at least 1).
 */
void pvo_page_runs_find(const struct pvo_page_runs *r, uint32_t pg,
			uint64_t *gpa, uint32_t *left);

/* The GPA of every page, as a new array (g_free); NULL if the host has
 * no memory for it. For interfaces that take a page array. */
uint64_t *pvo_page_runs_expand(const struct pvo_page_runs *r);

#endif
