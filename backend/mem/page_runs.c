// SPDX-License-Identifier: GPL-2.0-or-later
/* Page lists as runs of contiguous guest pages; see page_runs.h. */
#include <glib.h>

#include "page_runs.h"

/* The first growth of a list: most MRs are a few runs. */
#define RUNS_MIN 4

void pvo_page_runs_init(struct pvo_page_runs *r, struct pvo_host_budget *b)
{
	*r = (struct pvo_page_runs){.budget = b};
}

/* An array of cap runs, charging or uncharging the difference. */
static enum pvo_status resize(struct pvo_page_runs *r, uint32_t cap)
{
	uint64_t want = (uint64_t)cap * PVO_PAGE_RUN_BYTES;
	uint64_t *run;

	if (r->budget && want > r->charged &&
	    !pvo_budget_charge(r->budget, want - r->charged))
		return PVO_STATUS_ENOSPC;
	run = g_try_renew(uint64_t, r->run, cap);
	if (!run) {
		if (r->budget && want > r->charged)
			pvo_budget_uncharge(r->budget, want - r->charged);
		return cap > r->cap ? PVO_STATUS_ENOMEM : PVO_STATUS_OK;
	}
	r->run = run;
	if (r->budget && want < r->charged)
		pvo_budget_uncharge(r->budget, r->charged - want);
	r->charged = want;
	r->cap = cap;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_page_runs_add(struct pvo_page_runs *r, uint64_t gpa)
{
	return pvo_page_runs_add_run(r, gpa, 1);
}

enum pvo_status pvo_page_runs_add_run(struct pvo_page_runs *r, uint64_t gpa,
				      uint32_t n)
{
	enum pvo_status st;

	if (gpa >= PVO_PAGE_RUNS_MAX_GPA ||
	    n > (PVO_PAGE_RUNS_MAX_GPA - gpa) >> PVO_PAGE_SHIFT ||
	    n >= PVO_PAGE_RUNS_MAX_PAGES - r->npages)
		return PVO_STATUS_EINVAL;
	if (pvo_page_runs_joins(r, gpa)) {
		r->npages += n;
		return PVO_STATUS_OK;
	}
	if (r->nruns == r->cap) {
		/* grow by half: a list of 1M runs wastes a third at most */
		uint32_t cap = r->cap < RUNS_MIN ? RUNS_MIN
						 : r->cap + r->cap / 2;

		st = resize(r, cap);
		if (st)
			return st;
	}
	r->run[r->nruns++] = (uint64_t)r->npages << PVO_PAGE_RUN_PFN_BITS |
			     gpa >> PVO_PAGE_SHIFT;
	r->npages += n;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_page_runs_reserve(struct pvo_page_runs *r,
				      uint32_t nruns)
{
	return nruns > r->cap ? resize(r, nruns) : PVO_STATUS_OK;
}

void pvo_page_runs_trim(struct pvo_page_runs *r)
{
	if (r->nruns && r->nruns < r->cap)
		resize(r, r->nruns);
}

void pvo_page_runs_free(struct pvo_page_runs *r)
{
	struct pvo_host_budget *b = r->budget;

	g_free(r->run);
	if (b)
		pvo_budget_uncharge(b, r->charged);
	pvo_page_runs_init(r, b);
}

void pvo_page_runs_search(const struct pvo_page_runs *r, uint32_t pg,
			  uint64_t *gpa, uint32_t *left)
{
	uint64_t key = (uint64_t)(pg + 1) << PVO_PAGE_RUN_PFN_BITS;
	uint32_t lo = 0, hi = r->nruns;

	/* the last run that starts at or before pg: its word is below
	 * that of a run starting at pg + 1 */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->run[mid] < key)
			lo = mid;
		else
			hi = mid;
	}
	*gpa = pvo_page_run_gpa(r, lo) +
	       ((uint64_t)(pg - pvo_page_run_pg(r, lo)) << PVO_PAGE_SHIFT);
	*left = pvo_page_run_pg(r, lo) + pvo_page_run_len(r, lo) - pg;
}

uint64_t *pvo_page_runs_expand(const struct pvo_page_runs *r)
{
	uint64_t *p = g_try_new(uint64_t, r->npages ? r->npages : 1);
	uint32_t k, i, pg, n;

	if (!p)
		return NULL;
	for (k = 0; k < r->nruns; k++) {
		pg = pvo_page_run_pg(r, k);
		n = pvo_page_run_len(r, k);
		for (i = 0; i < n; i++)
			p[pg + i] = pvo_page_run_gpa(r, k) +
				    ((uint64_t)i << PVO_PAGE_SHIFT);
	}
	return p;
}
