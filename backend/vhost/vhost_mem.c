// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's guest RAM as the vhost-user session describes it, for mem/
 * (struct pvo_gmem_ops): libvhost-user's memory table and the
 * front-end's dirty log.
 */
#include <inttypes.h>
#include <stddef.h>
#include <sys/eventfd.h>

#include "guest_mem.h"
#include "vhost.h"
#include "vhost_dev.h"
#include "vm.h"

static struct pvo_vm *vm_of_gmem(struct pvo_gmem *g)
{
	return (struct pvo_vm *)((char *)g - offsetof(struct pvo_vm, gmem));
}

static const VuDevRegion *find_region(struct pvo_vm *vm, uint64_t gpa)
{
	const VuDev *dev;
	unsigned int lo = 0, hi, mid;

	if (!vm->connected)
		return NULL;
	dev = &vm->vhost->vug.parent;
	if (!dev->regions)
		return NULL;
	/* libvhost-user keeps the regions sorted by GPA, not overlapping */
	hi = dev->nregions;
	while (lo < hi) {
		const VuDevRegion *r;

		mid = lo + (hi - lo) / 2;
		r = &dev->regions[mid];
		if (gpa < r->gpa)
			hi = mid;
		else if (gpa - r->gpa >= r->size)
			lo = mid + 1;
		else
			return r->mmap_addr ? r : NULL;
	}
	return NULL;
}

static void *map(struct pvo_gmem *g, uint64_t gpa, uint64_t *avail)
{
	const VuDevRegion *r = find_region(vm_of_gmem(g), gpa);

	if (!r)
		return NULL;
	*avail = r->size - (gpa - r->gpa);
	return (void *)(uintptr_t)(r->mmap_addr + r->mmap_offset +
				   (gpa - r->gpa));
}

static void log_dirty(struct pvo_gmem *g, uint64_t gpa, uint64_t len)
{
	struct pvo_vm *vm = vm_of_gmem(g);
	uint64_t page, last;
	VuDev *dev;

	if (!vm->connected)
		return;
	dev = &vm->vhost->vug.parent;
	if (!dev->log_table || !(dev->features & (1ull << VHOST_F_LOG_ALL)))
		return;
	page = gpa / VHOST_LOG_PAGE;
	last = (gpa + len - 1) / VHOST_LOG_PAGE;
	for (; page <= last; page++) {
		/* The front-end sizes the log for all of guest RAM. */
		if (page / 8 >= dev->log_size) {
			pvo_vm_warn(vm,
				    "dirty log of %" PRIu64 " bytes does not "
				    "cover GPA 0x%" PRIx64
				    ": migration may lose this write",
				    dev->log_size, gpa);
			break;
		}
		__atomic_fetch_or(&dev->log_table[page / 8],
				  (uint8_t)(1u << (page % 8)),
				  __ATOMIC_RELAXED);
	}
	if (dev->log_call_fd != -1)
		eventfd_write(dev->log_call_fd, 1);
}

const struct pvo_gmem_ops pvo_vhost_gmem_ops = {
    .map = map,
    .log_dirty = log_dirty,
};
