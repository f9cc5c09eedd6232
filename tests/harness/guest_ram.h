/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * "Guest RAM" for the native test front-end: memfd-backed regions at
 * guest-physical 0, shared with the back-end through SET_MEM_TABLE, plus a
 * tiny first-fit guest-physical allocator and GPA <-> pointer translation.
 *
 * With two regions the GPA space stays contiguous ([0, size/2) and
 * [size/2, size)) but the regions are separate memfds mapped at
 * non-adjacent host addresses, so a buffer that straddles the boundary
 * only works if the back-end translates per region.
 */
#ifndef GUEST_RAM_H
#define GUEST_RAM_H

#include <stddef.h>
#include <stdint.h>

#define GUEST_RAM_MAX_REGIONS 2
#define GUEST_RAM_MAX_ALLOCS 4096
#define GUEST_RAM_NO_ADDR UINT64_MAX
/* The allocator leaves low memory alone, as a PC guest would. */
#define GUEST_RAM_ALLOC_BASE 0x100000ULL

struct guest_ram_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
	int fd; /* memfd; the mapping starts at offset 0 */
};

struct guest_ram_alloc {
	uint64_t gpa;
	uint64_t size;
};

struct guest_ram {
	struct guest_ram_region region[GUEST_RAM_MAX_REGIONS];
	unsigned int nregions;
	uint64_t size;	   /* GPAs [0, size) are RAM */
	void *reservation; /* host address range holding all regions */
	size_t reservation_len;
	/* live allocations, sorted by gpa */
	struct guest_ram_alloc alloc[GUEST_RAM_MAX_ALLOCS];
	unsigned int nallocs;
};

/*
 * Create @nregions (1 or 2) memfd regions covering GPAs [0, size). @size
 * must be a multiple of 2 MiB. On failure returns -errno and writes a
 * message into @err.
 */
int guest_ram_init(struct guest_ram *ram, uint64_t size, unsigned int nregions,
		   char *err, size_t errlen);
void guest_ram_fini(struct guest_ram *ram);

/* Host pointer for [gpa, gpa+len) if it lies in one region, else NULL. */
void *guest_ram_ptr(struct guest_ram *ram, uint64_t gpa, uint64_t len);

/* Copy to/from guest RAM, crossing region boundaries; -EFAULT if any byte
 * is outside RAM. */
int guest_ram_write(struct guest_ram *ram, uint64_t gpa, const void *src,
		    uint64_t len);
int guest_ram_read(struct guest_ram *ram, uint64_t gpa, void *dst,
		   uint64_t len);
int guest_ram_fill(struct guest_ram *ram, uint64_t gpa, int byte, uint64_t len);

/* GPA where the second region starts, or 0 with a single region. */
uint64_t guest_ram_boundary(const struct guest_ram *ram);

/*
 * First-fit allocation of @size bytes aligned to @align (a power of two),
 * never straddling a region boundary; zero-filled. GUEST_RAM_NO_ADDR when
 * full.
 */
uint64_t guest_ram_alloc(struct guest_ram *ram, uint64_t size, uint64_t align);
/* Claim a fixed range (may straddle regions); -EBUSY if it overlaps a live
 * allocation, -EFAULT if outside RAM. Zero-filled. */
int guest_ram_reserve(struct guest_ram *ram, uint64_t gpa, uint64_t size);
/* Release an allocation by its start address; -ENOENT if unknown. */
int guest_ram_free(struct guest_ram *ram, uint64_t gpa);

#endif /* GUEST_RAM_H */
