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

/* Arrays of cap runs, charging or uncharging the difference. */
static enum pvo_status resize(struct pvo_page_runs *r, uint32_t cap)
{
	uint64_t want = (uint64_t)cap * PVO_PAGE_RUN_BYTES;
	uint32_t *pg;
	uint64_t *gpa;

	if (r->budget && want > r->charged &&
	    !pvo_budget_charge(r->budget, want - r->charged))
		return PVO_STATUS_ENOSPC;
	pg = g_try_renew(uint32_t, r->pg, cap);
	if (pg)
		r->pg = pg;
	gpa = pg ? g_try_renew(uint64_t, r->gpa, cap) : NULL;
	if (!gpa) {
		/* both arrays still hold MIN(cap, r->cap) runs */
		if (r->budget && want > r->charged)
			pvo_budget_uncharge(r->budget, want - r->charged);
		if (cap > r->cap)
			return PVO_STATUS_ENOMEM;
		r->cap = cap;
		return PVO_STATUS_OK;
	}
	r->gpa = gpa;
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
	uint32_t k = r->nruns - 1;

	if (r->nruns &&
	    gpa == r->gpa[k] + ((uint64_t)(r->npages - r->pg[k])
				<< PVO_PAGE_SHIFT)) {
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
	r->pg[r->nruns] = r->npages;
	r->gpa[r->nruns] = gpa;
	r->nruns++;
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

	g_free(r->pg);
	g_free(r->gpa);
	if (b)
		pvo_budget_uncharge(b, r->charged);
	pvo_page_runs_init(r, b);
}

void pvo_page_runs_find(const struct pvo_page_runs *r, uint32_t pg,
			uint64_t *gpa, uint32_t *left)
{
	uint32_t lo = 0, hi = r->nruns, end;

	/* the last run that starts at or before pg */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->pg[mid] <= pg)
			lo = mid;
		else
			hi = mid;
	}
	end = lo + 1 < r->nruns ? r->pg[lo + 1] : r->npages;
	*gpa = r->gpa[lo] + ((uint64_t)(pg - r->pg[lo]) << PVO_PAGE_SHIFT);
	*left = end - pg;
}

uint64_t *pvo_page_runs_expand(const struct pvo_page_runs *r)
{
	uint64_t *p = g_try_new(uint64_t, r->npages ? r->npages : 1);
	uint32_t k, i;

	if (!p)
		return NULL;
	for (k = 0; k < r->nruns; k++) {
		uint32_t end = k + 1 < r->nruns ? r->pg[k + 1] : r->npages;

		for (i = r->pg[k]; i < end; i++)
			p[i] = r->gpa[k] +
			       ((uint64_t)(i - r->pg[k]) << PVO_PAGE_SHIFT);
	}
	return p;
}
