// SPDX-License-Identifier: GPL-2.0-or-later
/* Guest MRs as one host virtual range; see mr_alias.h. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <glib.h>

#include "guest_mem.h"
#include "mr_alias.h"
#include "pvo-device.h"

#define PAGE 4096ull

void pvo_mr_alias_unmap(struct pvo_mr_alias *a)
{
	if (a->base)
		munmap(a->base, a->len);
	memset(a, 0, sizeof(*a));
}

/*
 * The run that starts at page i: its host address in *src and its length
 * in pages (at least 1), or 0 with *err and *why if page i is not aligned
 * guest RAM. Counting and mapping walk the page list with this alone, so
 * both see the same runs.
 */
static uint32_t run_at(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		       uint32_t i, void **src, int *err, char **why)
{
	uint64_t avail;
	uint32_t n;

	if (gpas[i] & (PAGE - 1)) {
		*why = g_strdup_printf("page %" PRIu32 " at 0x%" PRIx64
				       " is not page aligned",
				       i, gpas[i]);
		*err = -EINVAL;
		return 0;
	}
	*src = pvo_gmem_map(vm, gpas[i], &avail);
	if (!*src || avail < PAGE) {
		*why = g_strdup_printf("page %" PRIu32 " at 0x%" PRIx64
				       " is not guest RAM",
				       i, gpas[i]);
		*err = -EFAULT;
		return 0;
	}
	/* the pages that follow in guest RAM and in the MR */
	for (n = 1; i + n < npages && n * PAGE < avail &&
		    gpas[i + n] == gpas[i] + n * PAGE;
	     n++)
		;
	return n;
}

static int no_pages(uint32_t npages, char **why)
{
	*why = g_strdup_printf("%" PRIu32 " pages", npages);
	return -EINVAL;
}

int pvo_mr_alias_count_part(struct pvo_vm *vm, const uint64_t *gpas,
			    uint32_t npages, uint32_t max_runs,
			    uint32_t max_pages, struct pvo_mr_alias_walk *w,
			    char **why)
{
	uint32_t end, n;
	void *src;
	int err;

	if (!npages)
		return no_pages(npages, why);
	/* a run that starts in this part counts here, however long */
	end = w->next + MIN(max_pages, npages - w->next);
	while (w->next < end) {
		if (w->runs == max_runs) {
			w->runs = max_runs + 1;
			return -ENOSPC;
		}
		n = run_at(vm, gpas, npages, w->next, &src, &err, why);
		if (!n)
			return err;
		w->runs++;
		w->next += n;
	}
	return w->next < npages ? -EAGAIN : 0;
}

int pvo_mr_alias_count(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		       uint32_t max_runs, uint32_t *runs, char **why)
{
	struct pvo_mr_alias_walk w = {0};
	int err = pvo_mr_alias_count_part(vm, gpas, npages, max_runs,
					  UINT32_MAX, &w, why);

	*runs = w.runs;
	return err;
}

int pvo_mr_alias_reserve(uint32_t npages, struct pvo_mr_alias *a, char **why)
{
	void *base;
	int err;

	memset(a, 0, sizeof(*a));
	if (!npages)
		return no_pages(npages, why);
	/* the whole range first, so the runs cannot land on anything else */
	base = mmap(NULL, npages * PAGE, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		*why = g_strdup_printf("reserving %" PRIu32 " pages: %s",
				       npages, strerror(errno));
		return err;
	}
	a->base = base;
	a->len = npages * PAGE;
	return 0;
}

int pvo_mr_alias_map_part(struct pvo_vm *vm, const uint64_t *gpas,
			  uint32_t npages, struct pvo_mr_alias *a,
			  uint32_t max_runs, uint32_t max_total,
			  struct pvo_mr_alias_walk *w, char **why)
{
	uint8_t *base = a->base;
	uint32_t n, made = 0;
	void *src;
	int err;

	while (w->next < npages) {
		if (made == max_runs)
			return -EAGAIN;
		if (a->runs == max_total) {
			*why = g_strdup_printf("more than the %" PRIu32
					       " runs counted at page %" PRIu32
					       ": the guest changed its "
					       "memory meanwhile",
					       max_total, w->next);
			return -EINVAL;
		}
		n = run_at(vm, gpas, npages, w->next, &src, &err, why);
		if (!n)
			return err;
		if (mremap(src, 0, n * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   base + w->next * PAGE) == MAP_FAILED) {
			err = -errno;
			*why = g_strdup_printf("aliasing page %" PRIu32
					       " at 0x%" PRIx64 ": %s (guest "
					       "RAM must be a shared mapping)",
					       w->next, gpas[w->next],
					       strerror(errno));
			return err;
		}
		a->runs++;
		w->runs++;
		made++;
		w->next += n;
	}
	return 0;
}

int pvo_mr_alias_map(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		     struct pvo_mr_alias *a, char **why)
{
	struct pvo_mr_alias_walk w = {0};
	int err = pvo_mr_alias_reserve(npages, a, why);

	if (!err)
		err = pvo_mr_alias_map_part(vm, gpas, npages, a, UINT32_MAX,
					    UINT32_MAX, &w, why);
	if (err)
		pvo_mr_alias_unmap(a);
	return err;
}
