// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * memfd-backed guest RAM with a tiny first-fit guest-physical allocator.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guest_ram.h"

#define MIB (1024ULL * 1024ULL)
/* Unmapped gap between the regions' host mappings. */
#define GUEST_RAM_HVA_GAP (2 * MIB)

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int guest_ram_init(struct guest_ram *ram, uint64_t size, unsigned int nregions,
		   char *err, size_t errlen)
{
	uint64_t region_size;
	uint8_t *base;
	unsigned int i;
	int ret;

	memset(ram, 0, sizeof(*ram));
	for (i = 0; i < GUEST_RAM_MAX_REGIONS; i++)
		ram->region[i].fd = -1;

	if (nregions < 1 || nregions > GUEST_RAM_MAX_REGIONS || size == 0 ||
	    size % (2 * MIB)) {
		set_err(err, errlen,
			"guest RAM: bad geometry (%llu bytes, %u regions); use "
			"a multiple of 2 MiB and 1 or 2 regions",
			(unsigned long long)size, nregions);
		return -EINVAL;
	}
	region_size = size / nregions;

	ram->reservation_len = size + GUEST_RAM_HVA_GAP * nregions;
	ram->reservation =
	    mmap(NULL, ram->reservation_len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ram->reservation == MAP_FAILED) {
		ret = -errno;
		ram->reservation = NULL;
		set_err(err, errlen,
			"guest RAM: reserving %zu bytes of address space: %s",
			ram->reservation_len, strerror(-ret));
		return ret;
	}

	base = ram->reservation;
	for (i = 0; i < nregions; i++) {
		struct guest_ram_region *r = &ram->region[i];
		char name[32];
		void *p;

		snprintf(name, sizeof(name), "pvo-guest-ram%u", i);
		r->fd = memfd_create(name, MFD_CLOEXEC);
		if (r->fd < 0) {
			ret = -errno;
			set_err(err, errlen, "guest RAM: memfd_create: %s",
				strerror(-ret));
			goto fail;
		}
		if (ftruncate(r->fd, (off_t)region_size) < 0) {
			ret = -errno;
			set_err(err, errlen,
				"guest RAM: ftruncate memfd to %llu bytes: %s",
				(unsigned long long)region_size,
				strerror(-ret));
			goto fail;
		}
		p = mmap(base, region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, r->fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			set_err(err, errlen, "guest RAM: mmap memfd: %s",
				strerror(-ret));
			goto fail;
		}
		r->hva = p;
		r->gpa = region_size * i;
		r->size = region_size;
		ram->nregions++;
		base += region_size + GUEST_RAM_HVA_GAP;
	}
	ram->size = size;
	return 0;

fail:
	guest_ram_fini(ram);
	return ret;
}

void guest_ram_fini(struct guest_ram *ram)
{
	unsigned int i;

	for (i = 0; i < GUEST_RAM_MAX_REGIONS; i++) {
		if (ram->region[i].fd >= 0)
			close(ram->region[i].fd);
		ram->region[i].fd = -1;
	}
	/* One munmap drops the region mappings and the gaps. */
	if (ram->reservation)
		munmap(ram->reservation, ram->reservation_len);
	ram->reservation = NULL;
	ram->nregions = 0;
	ram->nallocs = 0;
	ram->size = 0;
}

static struct guest_ram_region *region_of(struct guest_ram *ram, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < ram->nregions; i++) {
		struct guest_ram_region *r = &ram->region[i];

		if (gpa >= r->gpa && gpa - r->gpa < r->size)
			return r;
	}
	return NULL;
}

void *guest_ram_ptr(struct guest_ram *ram, uint64_t gpa, uint64_t len)
{
	struct guest_ram_region *r = region_of(ram, gpa);

	if (!r || len > r->size - (gpa - r->gpa))
		return NULL;
	return r->hva + (gpa - r->gpa);
}

/* Walk [gpa, gpa+len) region by region; op 0 = write, 1 = read, 2 = fill. */
static int copy_loop(struct guest_ram *ram, uint64_t gpa, void *buf, int byte,
		     uint64_t len, int op)
{
	uint8_t *p = buf;

	if (gpa >= ram->size || len > ram->size - gpa)
		return -EFAULT;
	while (len) {
		struct guest_ram_region *r = region_of(ram, gpa);
		uint64_t off, chunk;

		if (!r)
			return -EFAULT;
		off = gpa - r->gpa;
		chunk = r->size - off;
		if (chunk > len)
			chunk = len;
		if (op == 0)
			memcpy(r->hva + off, p, chunk);
		else if (op == 1)
			memcpy(p, r->hva + off, chunk);
		else
			memset(r->hva + off, byte, chunk);
		if (p)
			p += chunk;
		gpa += chunk;
		len -= chunk;
	}
	return 0;
}

int guest_ram_write(struct guest_ram *ram, uint64_t gpa, const void *src,
		    uint64_t len)
{
	return copy_loop(ram, gpa, (void *)src, 0, len, 0);
}

int guest_ram_read(struct guest_ram *ram, uint64_t gpa, void *dst, uint64_t len)
{
	return copy_loop(ram, gpa, dst, 0, len, 1);
}

int guest_ram_fill(struct guest_ram *ram, uint64_t gpa, int byte, uint64_t len)
{
	return copy_loop(ram, gpa, NULL, byte, len, 2);
}

uint64_t guest_ram_boundary(const struct guest_ram *ram)
{
	return ram->nregions > 1 ? ram->region[1].gpa : 0;
}

static int insert_alloc(struct guest_ram *ram, unsigned int pos, uint64_t gpa,
			uint64_t size)
{
	if (ram->nallocs == GUEST_RAM_MAX_ALLOCS)
		return -ENOSPC;
	memmove(&ram->alloc[pos + 1], &ram->alloc[pos],
		(ram->nallocs - pos) * sizeof(ram->alloc[0]));
	ram->alloc[pos].gpa = gpa;
	ram->alloc[pos].size = size;
	ram->nallocs++;
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

uint64_t guest_ram_alloc(struct guest_ram *ram, uint64_t size, uint64_t align)
{
	uint64_t cursor = GUEST_RAM_ALLOC_BASE;
	unsigned int i;

	if (!size || !align || (align & (align - 1)))
		return GUEST_RAM_NO_ADDR;

	/* Try the gap before each allocation, then the tail. */
	for (i = 0; i <= ram->nallocs; i++) {
		uint64_t gap_end =
		    i < ram->nallocs ? ram->alloc[i].gpa : ram->size;
		uint64_t start = align_up(cursor, align);
		struct guest_ram_region *r;

		while (start < gap_end && gap_end - start >= size) {
			r = region_of(ram, start);
			if (!r)
				break;
			if (size <= r->gpa + r->size - start) {
				if (insert_alloc(ram, i, start, size))
					return GUEST_RAM_NO_ADDR;
				guest_ram_fill(ram, start, 0, size);
				return start;
			}
			/* would straddle: retry at the next region */
			start = align_up(r->gpa + r->size, align);
		}
		if (i < ram->nallocs)
			cursor = ram->alloc[i].gpa + ram->alloc[i].size;
	}
	return GUEST_RAM_NO_ADDR;
}

int guest_ram_reserve(struct guest_ram *ram, uint64_t gpa, uint64_t size)
{
	unsigned int i;

	if (!size || gpa >= ram->size || size > ram->size - gpa)
		return -EFAULT;
	for (i = 0; i < ram->nallocs; i++) {
		struct guest_ram_alloc *a = &ram->alloc[i];

		if (gpa < a->gpa + a->size && a->gpa < gpa + size)
			return -EBUSY;
		if (a->gpa > gpa)
			break;
	}
	if (insert_alloc(ram, i, gpa, size))
		return -ENOSPC;
	return guest_ram_fill(ram, gpa, 0, size);
}

int guest_ram_free(struct guest_ram *ram, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < ram->nallocs; i++) {
		if (ram->alloc[i].gpa == gpa) {
			memmove(&ram->alloc[i], &ram->alloc[i + 1],
				(ram->nallocs - i - 1) * sizeof(ram->alloc[0]));
			ram->nallocs--;
			return 0;
		}
	}
	return -ENOENT;
}
