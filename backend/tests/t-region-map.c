// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest RAM region placement: each region mapping gets the next colour
 * within 16 MiB, keeps its file offset's residue modulo 2 MiB, shares
 * the file's pages, and munmap leaves nothing of its reservation behind.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "region_map.h"
#include "tap.h"

#define MIB (1ul << 20)
#define LEN (16 * MIB + 4096)

static int maps_lines(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void *region(int fd, off_t off)
{
	return pvo_region_mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_NORESERVE, fd, off);
}

int main(void)
{
	int fd = memfd_create("t-region-map", 0), before, i;
	uint8_t *p[PVO_REGION_COLOURS + 1], *q, *other;

	tap_plan(10);
	if (fd < 0 || ftruncate(fd, 2 * LEN)) {
		perror("memfd");
		return 1;
	}
	before = maps_lines();

	for (i = 0; i <= PVO_REGION_COLOURS; i++)
		p[i] = region(fd, 0);
	for (i = 0; i <= PVO_REGION_COLOURS; i++)
		if (p[i] == MAP_FAILED ||
		    (uintptr_t)p[i] % PVO_REGION_PERIOD != pvo_region_colour(i))
			break;
	tap_ok(i > PVO_REGION_COLOURS,
	       "mapping n starts at colour n within 16 MiB, colours wrap");
	tap_is(pvo_region_colour(1) - pvo_region_colour(0), 2 * MIB,
	       "colours are 2 MiB apart");
	tap_ok(((uintptr_t)p[1] - (uintptr_t)p[0]) % PVO_REGION_PERIOD != 0,
	       "two regions in a row are not a multiple of 16 MiB apart");

	memcpy(p[0] + LEN - 5, "pages", 5);
	tap_ok(!memcmp(p[1] + LEN - 5, "pages", 5),
	       "mappings share the file's pages, to the last byte");

	q = region(fd, 3 * 4096);
	tap_is((uintptr_t)q % (2 * MIB) - pvo_region_colour(1) % (2 * MIB),
	       3 * 4096, "a file offset keeps its residue modulo 2 MiB");
	tap_ok(q != MAP_FAILED && !memcmp(q + LEN - 5 - 3 * 4096, "pages", 5),
	       "... and maps from that offset");

	other = pvo_region_mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				MAP_SHARED, fd, 0);
	tap_ok(other != MAP_FAILED && !memcmp(other, p[0], 16),
	       "a mapping without MAP_NORESERVE (log, inflight) goes to mmap");
	tap_ok(region(-1, 0) == MAP_FAILED, "no fd: fails as mmap does");
	tap_ok(region(1000, 0) == MAP_FAILED,
	       "a descriptor that is not open fails after the reservation");

	for (i = 0; i <= PVO_REGION_COLOURS; i++)
		munmap(p[i], LEN);
	munmap(q, LEN);
	munmap(other, 4096);
	tap_is(maps_lines(), before,
	       "munmap of every region and failures leave no reservation "
	       "behind");
	return tap_done();
}
