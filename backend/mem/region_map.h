/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where guest RAM regions land in the back-end's address space.
 *
 * libvhost-user maps each region of a memory table with mmap(NULL, ...),
 * and the kernel packs same-sized regions back to back: two VMs of 128
 * MiB end up exactly 128 MiB apart. A buffer at the same guest-physical
 * address in both (two guests of one image, or the bench's two sides)
 * is then copied between virtual addresses a large power of two apart,
 * and on this host's CPUs such copies run 10-25 % slower than the same
 * copy at another distance (docs/performance.md). libvhost-user.c is
 * compiled with -Dmmap=pvo_region_mmap, so its region mappings come
 * here: each one is placed at its own "colour", a multiple of 2 MiB
 * (THP and 2 MiB hugetlbfs keep their alignment), in turn.
 */
#ifndef PVO_REGION_MAP_H
#define PVO_REGION_MAP_H

#include <stddef.h>
#include <sys/types.h>

/* Colours in turn; mappings this many apart share one. */
#define PVO_REGION_COLOURS 8
#define PVO_REGION_COLOUR_STEP (2u << 20)
#define PVO_REGION_PERIOD ((size_t)PVO_REGION_COLOURS * PVO_REGION_COLOUR_STEP)

/*
 * mmap for libvhost-user: a region mapping (no address asked for,
 * MAP_SHARED | MAP_NORESERVE of a file) is placed at the next colour;
 * everything else, and files of huge pages above 2 MiB, go to mmap as
 * they are. munmap of the returned range undoes it.
 */
void *pvo_region_mmap(void *addr, size_t len, int prot, int flags, int fd,
		      off_t offset);

/* The colour of the n-th region mapping: its offset within 16 MiB. */
size_t pvo_region_colour(unsigned int n);

#endif /* PVO_REGION_MAP_H */
