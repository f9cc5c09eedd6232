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

int pvo_mr_alias_map(struct pvo_vm *vm, const uint64_t *gpas, uint32_t npages,
		     struct pvo_mr_alias *a, char **why)
{
	uint32_t i = 0, n;
	uint8_t *base, *src;
	uint64_t avail;
	int err;

	memset(a, 0, sizeof(*a));
	if (!npages) {
		*why = g_strdup_printf("%" PRIu32 " pages", npages);
		return -EINVAL;
	}
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
		if (gpas[i] & (PAGE - 1)) {
			*why = g_strdup_printf("page %" PRIu32 " at 0x%" PRIx64
					       " is not page aligned",
					       i, gpas[i]);
			err = -EINVAL;
			goto fail;
		}
		src = pvo_gmem_map(vm, gpas[i], &avail);
		if (!src || avail < PAGE) {
			*why = g_strdup_printf("page %" PRIu32 " at 0x%" PRIx64
					       " is not guest RAM",
					       i, gpas[i]);
			err = -EFAULT;
			goto fail;
		}
		/* the pages that follow in guest RAM and in the MR */
		for (n = 1; i + n < npages && n * PAGE < avail &&
			    gpas[i + n] == gpas[i] + n * PAGE;
		     n++)
			;
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
