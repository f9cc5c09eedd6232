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

int pvo_mr_alias_count(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		       uint32_t max_runs, uint32_t *runs, char **why)
{
	uint32_t i = 0, n;
	void *src;
	int err;

	*runs = 0;
	if (!npages)
		return no_pages(npages, why);
	while (i < npages) {
		if (*runs == max_runs) {
			*runs = max_runs + 1;
			return -ENOSPC;
		}
		n = run_at(vm, gpas, npages, i, &src, &err, why);
		if (!n)
			return err;
		++*runs;
		i += n;
	}
	return 0;
}

int pvo_mr_alias_map(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		     struct pvo_mr_alias *a, char **why)
{
	uint32_t i = 0, n;
	uint8_t *base;
	void *src;
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
	while (i < npages) {
		n = run_at(vm, gpas, npages, i, &src, &err, why);
		if (!n)
			goto fail;
		if (mremap(src, 0, n * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   base + i * PAGE) == MAP_FAILED) {
			err = -errno;
			*why = g_strdup_printf("aliasing page %" PRIu32
					       " at 0x%" PRIx64 ": %s (guest "
					       "RAM must be a shared mapping)",
					       i, gpas[i], strerror(errno));
			goto fail;
		}
		a->runs++;
		i += n;
	}
	return 0;
fail:
	pvo_mr_alias_unmap(a);
	return err;
}
