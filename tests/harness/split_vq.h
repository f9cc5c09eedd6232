/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Driver side of a virtio 1.x split virtqueue laid out in guest RAM, as a
 * guest driver would run it: descriptor free list, avail ring publishing,
 * kick eventfd, used ring reaping, call eventfd waits with a timeout.
 *
 * Everything the device can see lives in guest RAM; the bookkeeping the
 * driver needs to reclaim descriptors is kept in private shadow arrays so
 * a misbehaving device cannot corrupt it.
 */
#ifndef SPLIT_VQ_H
#define SPLIT_VQ_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/virtio_ring.h>

#include "guest_ram.h"

/* A guest-physical buffer of a chain. */
struct vq_buf {
	uint64_t gpa;
	uint32_t len;
};

/*
 * A descriptor exactly as it should appear in the table, for malformed
 * chains. When flags has VRING_DESC_F_NEXT, next is an index into the
 * array passed to split_vq_add_raw() (translated to the table slot it got)
 * unless raw_next is set, in which case it is written verbatim.
 */
struct vq_raw_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
	bool raw_next;
};

struct split_vq_head_state {
	uint16_t ndesc; /* descriptors the chain holds, 0 = free */
	bool done;
	uint32_t used_len;
	uint64_t
	    indirect_gpa; /* indirect table to free, or GUEST_RAM_NO_ADDR */
};

struct split_vq {
	struct guest_ram *ram;
	unsigned int index;
	bool event_idx; /* VIRTIO_RING_F_EVENT_IDX negotiated */
	uint16_t num;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	int kick_fd;
	int call_fd;

	uint16_t avail_idx;	/* next avail index to publish */
	uint32_t stopped_base;	/* GET_VRING_BASE answer at the last stop */
	uint16_t last_used_idx; /* used entries already reaped */
	uint16_t free_head;
	uint16_t num_free;
	uint16_t *shadow_next; /* free list / chain links, driver-private */
	struct split_vq_head_state *head;

	/* Device protocol violations seen while reaping. */
	unsigned int bad_used;
	unsigned int lost_calls; /* chains used without a call */
	char bad_used_msg[160];
};

/* Allocate the rings in @ram and create the eventfds; -errno on failure. */
int split_vq_init(struct split_vq *vq, struct guest_ram *ram,
		  unsigned int index, uint16_t num);
void split_vq_fini(struct split_vq *vq, struct guest_ram *ram);

/*
 * Place a chain of device-readable (@out) then device-writable (@in)
 * buffers and publish it. No address checks: tests use this to hand the
 * device bad addresses. Returns the head index or -ENOSPC / -EINVAL.
 */
int split_vq_add(struct split_vq *vq, const struct vq_buf *out,
		 unsigned int nout, const struct vq_buf *in, unsigned int nin);
/* The same chain described by an indirect table in guest RAM (one ring
 * descriptor with VRING_DESC_F_INDIRECT). */
int split_vq_add_indirect(struct split_vq *vq, const struct vq_buf *out,
			  unsigned int nout, const struct vq_buf *in,
			  unsigned int nin);
/* Same with descriptors given verbatim (loops, bad next, bad flags). */
int split_vq_add_raw(struct split_vq *vq, const struct vq_raw_desc *d,
		     unsigned int n);
/* Publish an arbitrary head number (e.g. >= num) without a chain. */
void split_vq_publish_head(struct split_vq *vq, uint16_t head);

int split_vq_kick(struct split_vq *vq);

/* Reap new used entries; returns how many, or -EPROTO if the device
 * returned a head that was not in flight (message in bad_used_msg). */
int split_vq_reap(struct split_vq *vq);

/*
 * Wait until @head is used: polls the call eventfd, and @watch_fd (the
 * vhost-user socket, or -1) for hang-up. On success stores the used length
 * and frees the chain. -ETIMEDOUT, -ECONNRESET (watch_fd hung up),
 * -EPROTO, or -ENOMSG when the chain was used but the call eventfd never
 * fired within the timeout (a lost interrupt; *used_len is still set).
 * On a timeout the chain stays in flight.
 */
int split_vq_wait(struct split_vq *vq, uint16_t head, int watch_fd,
		  int timeout_ms, uint32_t *used_len);

/*
 * Take the next used entry in used-ring order and free its chain, for
 * queues whose chains are not waited for one by one (the event queue).
 * Returns 1 with *head / *used_len set, 0 if nothing new was used, or
 * -EPROTO (message in bad_used_msg). Do not mix with split_vq_wait() on
 * the same queue.
 */
int split_vq_pop_used(struct split_vq *vq, uint16_t *head, uint32_t *used_len);

/* Chains handed to the device and not yet returned. */
unsigned int split_vq_in_flight(const struct split_vq *vq);

#endif /* SPLIT_VQ_H */
