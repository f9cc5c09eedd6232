// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * copy-distance: how fast memcpy copies 64 KiB messages between two
 * shared-memory mappings, as a function of how far apart the mappings
 * are in virtual memory. Each distance gets its own pair of mappings of
 * the same two memfds (so the same physical pages and caches), and the
 * distances take turns, so a slow spell of the host hits them all.
 *
 *   copy-distance [--rounds N] [--cpu C] [MiB[+KiB] ...]
 *
 * Default distances: 128 MiB and 128 MiB plus 4 KiB .. 14 MiB, and a
 * few other powers of two with and without 2 MiB. This is what found
 * that the back-end's guest RAM regions want a colour (region_map.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define KIB 1024ul
#define MIB (1024 * KIB)
#define MSG (64 * KIB)
#define SLOTS 128 /* 8 MiB each side, as the bench's 64 KiB row */
#define LEN (MSG * SLOTS)
#define SLOT_GAP (1024 * MIB) /* each pair in its own GiB */
#define MAX_DIST 64

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static unsigned long parse_dist(const char *s)
{
	char *end;
	unsigned long mib = strtoul(s, &end, 0), kib = 0;

	if (*end == '+')
		kib = strtoul(end + 1, &end, 0);
	/* a pair's source must not overlap its destination or the pair
	 * below it, nor leave the reservation */
	if (*end || mib * MIB + kib * KIB < LEN ||
	    mib * MIB + kib * KIB > SLOT_GAP - LEN) {
		fprintf(stderr,
			"copy-distance: \"%s\" is not MiB[+KiB] between %lu "
			"and %lu MiB\n",
			s, LEN / MIB, (SLOT_GAP - LEN) / MIB);
		exit(2);
	}
	return mib * MIB + kib * KIB;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {
	    "128",	"128+4",    "128+16",	 "128+32", "128+256",
	    "128+2048", "128+4096", "128+14336", "64",	   "64+2048",
	    "256",	"256+2048", "144",	 "130"};
	static const struct option opts[] = {{"rounds", 1, NULL, 'r'},
					     {"cpu", 1, NULL, 'c'},
					     {NULL, 0, NULL, 0}};
	unsigned long dist[MAX_DIST];
	double ns[MAX_DIST] = {0}, best = 1e30;
	uint8_t *src[MAX_DIST], *dst[MAX_DIST], *area;
	unsigned int rounds = 40, n = 0, i, r, k;
	int cpu = -1, c, fa, fb;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'r')
			rounds = strtoul(optarg, NULL, 0);
		else if (c == 'c')
			cpu = atoi(optarg);
		else
			return 2;
	}
	for (i = optind; i < (unsigned int)argc && n < MAX_DIST; i++)
		dist[n++] = parse_dist(argv[i]);
	if (!n)
		for (; n < sizeof(defaults) / sizeof(*defaults); n++)
			dist[n] = parse_dist(defaults[n]);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			fprintf(stderr, "copy-distance: CPU %d: %s\n", cpu,
				strerror(errno));
	}

	fa = memfd_create("copy-distance-src", MFD_CLOEXEC);
	fb = memfd_create("copy-distance-dst", MFD_CLOEXEC);
	area = mmap(NULL, (n + 2) * SLOT_GAP, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fa < 0 || fb < 0 || ftruncate(fa, LEN) || ftruncate(fb, LEN) ||
	    area == MAP_FAILED) {
		perror("copy-distance: setting up");
		return 1;
	}
	/* destination i at a GiB boundary, its source dist[i] below it */
	area = (uint8_t *)(((uintptr_t)area + SLOT_GAP - 1) & ~(SLOT_GAP - 1));
	for (i = 0; i < n; i++) {
		dst[i] =
		    mmap(area + (i + 1) * SLOT_GAP, LEN, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fb, 0);
		src[i] =
		    mmap(area + (i + 1) * SLOT_GAP - dist[i], LEN,
			 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fa, 0);
		if (dst[i] == MAP_FAILED || src[i] == MAP_FAILED) {
			perror("copy-distance: mmap");
			return 1;
		}
		memset(src[i], 1, LEN);
		memset(dst[i], 2, LEN);
	}

	printf("copy-distance: memcpy of %lu KiB messages over %u slots "
	       "(%lu MiB each side), %u rounds\n",
	       MSG / KIB, SLOTS, LEN / MIB, rounds);
	for (r = 0; r < rounds; r++)
		for (i = 0; i < n; i++) {
			double t0 = now_ns();

			for (k = 0; k < 2 * SLOTS; k++)
				memcpy(dst[i] + (k % SLOTS) * MSG,
				       src[i] + (k % SLOTS) * MSG, MSG);
			ns[i] += now_ns() - t0;
		}
	for (i = 0; i < n; i++) {
		ns[i] /= rounds * 2 * SLOTS;
		if (ns[i] < best)
			best = ns[i];
	}
	for (i = 0; i < n; i++)
		printf("  dst - src = %4lu MiB + %5lu KiB: %6.2f us per copy, "
		       "%5.1f %% slower than the fastest\n",
		       dist[i] / MIB, dist[i] % MIB / KIB, ns[i] / 1000,
		       100 * (ns[i] / best - 1));
	return 0;
}
