// SPDX-License-Identifier: GPL-2.0-or-later
/* Guest RAM region placement; see region_map.h. */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <glib.h>

#include "region_map.h"

#define HUGETLBFS_MAGIC 0x958458f6

size_t pvo_region_colour(unsigned int n)
{
	return (size_t)(n % PVO_REGION_COLOURS) * PVO_REGION_COLOUR_STEP;
}

/* The page size of fd's file: hugetlbfs's, or the base page size. */
static size_t file_page_size(int fd)
{
	struct statfs fs;

	if (!fstatfs(fd, &fs) && fs.f_type == HUGETLBFS_MAGIC)
		return (size_t)fs.f_bsize;
	return (size_t)sysconf(_SC_PAGESIZE);
}

void *pvo_region_mmap(void *addr, size_t len, int prot, int flags, int fd,
		      off_t offset)
{
	static gint next; /* threads map regions at once */
	size_t page, span, colour;
	uintptr_t res, base, end;
	void *p;

	if (addr || fd < 0 || !len || (flags & MAP_FIXED) ||
	    (flags & (MAP_SHARED | MAP_NORESERVE)) !=
		(MAP_SHARED | MAP_NORESERVE))
		return mmap(addr, len, prot, flags, fd, offset);
	/* huge pages above 2 MiB need their own alignment: left alone */
	page = file_page_size(fd);
	if (page > PVO_REGION_COLOUR_STEP)
		return mmap(addr, len, prot, flags, fd, offset);
	/* the kernel maps whole pages (of hugetlbfs too): so do we */
	len = (len + page - 1) & ~(page - 1);
	if (len > SIZE_MAX - 2 * PVO_REGION_PERIOD)
		return mmap(addr, len, prot, flags, fd, offset);
	/* a stretch of address space to place it in; what is left of it
	 * is given back below */
	span = len + 2 * PVO_REGION_PERIOD;
	p = mmap(NULL, span, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return mmap(addr, len, prot, flags, fd, offset);
	res = (uintptr_t)p;
	colour = pvo_region_colour((unsigned int)g_atomic_int_add(&next, 1));
	/* the colour within the period; the file offset's residue modulo
	 * 2 MiB kept, so THP and 2 MiB hugetlbfs pages still line up */
	base = ((res + PVO_REGION_PERIOD - 1) & ~(PVO_REGION_PERIOD - 1)) +
	       colour + ((uintptr_t)offset & (PVO_REGION_COLOUR_STEP - 1));
	end = base + len;
	p = mmap((void *)base, len, prot, flags | MAP_FIXED, fd, offset);
	if (p == MAP_FAILED) {
		int err = errno;

		munmap((void *)res, span);
		errno = err;
		return MAP_FAILED;
	}
	if (base > res)
		munmap((void *)res, base - res);
	if (res + span > end)
		munmap((void *)end, res + span - end);
	return p;
}
