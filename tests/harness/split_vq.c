// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Driver side of a split virtqueue (virtio 1.x, little-endian rings).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "split_vq.h"

#define PAGE_SIZE 4096ULL

static uint64_t ring_bytes_avail(uint16_t num)
{
	/* flags, idx, ring[num], used_event */
	return 4 + 2ULL * num + 2;
}

static uint64_t ring_bytes_used(uint16_t num)
{
	/* flags, idx, ring[num] of {id, len}, avail_event */
	return 4 + 8ULL * num + 2;
}

int split_vq_init(struct split_vq *vq, struct guest_ram *ram,
		  unsigned int index, uint16_t num)
{
	uint16_t i;
	int ret;

	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = -1;
	vq->call_fd = -1;
	vq->desc_gpa = vq->avail_gpa = vq->used_gpa = GUEST_RAM_NO_ADDR;
	if (num == 0 || (num & (num - 1)) || num > 32768)
		return -EINVAL;
	vq->ram = ram;
	vq->index = index;
	vq->num = num;

	/* One allocation each so the three parts sit on separate pages. */
	vq->desc_gpa = guest_ram_alloc(ram, 16ULL * num, PAGE_SIZE);
	vq->avail_gpa = guest_ram_alloc(ram, ring_bytes_avail(num), PAGE_SIZE);
	vq->used_gpa = guest_ram_alloc(ram, ring_bytes_used(num), PAGE_SIZE);
	if (vq->desc_gpa == GUEST_RAM_NO_ADDR ||
	    vq->avail_gpa == GUEST_RAM_NO_ADDR ||
	    vq->used_gpa == GUEST_RAM_NO_ADDR) {
		ret = -ENOMEM;
		goto fail;
	}
	vq->desc = guest_ram_ptr(ram, vq->desc_gpa, 16ULL * num);
	vq->avail = guest_ram_ptr(ram, vq->avail_gpa, ring_bytes_avail(num));
	vq->used = guest_ram_ptr(ram, vq->used_gpa, ring_bytes_used(num));

	vq->shadow_next = calloc(num, sizeof(*vq->shadow_next));
	vq->head = calloc(num, sizeof(*vq->head));
	if (!vq->shadow_next || !vq->head) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < num; i++)
		vq->shadow_next[i] = i + 1;
	vq->free_head = 0;
	vq->num_free = num;

	vq->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vq->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vq->kick_fd < 0 || vq->call_fd < 0) {
		ret = -errno;
		goto fail;
	}
	return 0;

fail:
	split_vq_fini(vq, ram);
	return ret;
}

void split_vq_fini(struct split_vq *vq, struct guest_ram *ram)
{
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	if (vq->call_fd >= 0)
		close(vq->call_fd);
	vq->kick_fd = vq->call_fd = -1;
	free(vq->shadow_next);
	free(vq->head);
	vq->shadow_next = NULL;
	vq->head = NULL;
	if (ram) {
		if (vq->desc_gpa != GUEST_RAM_NO_ADDR)
			guest_ram_free(ram, vq->desc_gpa);
		if (vq->avail_gpa != GUEST_RAM_NO_ADDR)
			guest_ram_free(ram, vq->avail_gpa);
		if (vq->used_gpa != GUEST_RAM_NO_ADDR)
			guest_ram_free(ram, vq->used_gpa);
	}
	vq->desc_gpa = vq->avail_gpa = vq->used_gpa = GUEST_RAM_NO_ADDR;
}

/* Take @n slots off the free list; returns the first, chained via shadow. */
static int take_slots(struct split_vq *vq, unsigned int n, uint16_t *slots)
{
	unsigned int i;

	if (n == 0 || n > vq->num_free)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		slots[i] = vq->free_head;
		vq->free_head = vq->shadow_next[vq->free_head];
	}
	vq->num_free -= n;
	for (i = 0; i + 1 < n; i++)
		vq->shadow_next[slots[i]] = slots[i + 1];
	vq->head[slots[0]].ndesc = n;
	vq->head[slots[0]].done = false;
	vq->head[slots[0]].used_len = 0;
	vq->head[slots[0]].indirect_gpa = GUEST_RAM_NO_ADDR;
	return slots[0];
}

static void release_chain(struct split_vq *vq, uint16_t head)
{
	uint16_t n = vq->head[head].ndesc, last = head, i;

	for (i = 1; i < n; i++)
		last = vq->shadow_next[last];
	vq->shadow_next[last] = vq->free_head;
	vq->free_head = head;
	vq->num_free += n;
	vq->head[head].ndesc = 0;
	if (vq->head[head].indirect_gpa != GUEST_RAM_NO_ADDR)
		guest_ram_free(vq->ram, vq->head[head].indirect_gpa);
	vq->head[head].indirect_gpa = GUEST_RAM_NO_ADDR;
}

void split_vq_publish_head(struct split_vq *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx % vq->num] = htole16(head);
	/* The entry must be visible before the index that covers it. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	vq->avail_idx++;
	__atomic_store_n(&vq->avail->idx, htole16(vq->avail_idx),
			 __ATOMIC_RELEASE);
}

int split_vq_add(struct split_vq *vq, const struct vq_buf *out,
		 unsigned int nout, const struct vq_buf *in, unsigned int nin)
{
	unsigned int n = nout + nin, i;
	uint16_t *slots;
	int head;

	if (n == 0 || n > vq->num)
		return -EINVAL;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	head = take_slots(vq, n, slots);
	if (head < 0) {
		free(slots);
		return head;
	}
	for (i = 0; i < n; i++) {
		const struct vq_buf *b = i < nout ? &out[i] : &in[i - nout];
		struct vring_desc *d = &vq->desc[slots[i]];
		uint16_t flags = i < nout ? 0 : VRING_DESC_F_WRITE;

		if (i + 1 < n)
			flags |= VRING_DESC_F_NEXT;
		d->addr = htole64(b->gpa);
		d->len = htole32(b->len);
		d->flags = htole16(flags);
		d->next = htole16(i + 1 < n ? slots[i + 1] : 0);
	}
	free(slots);
	split_vq_publish_head(vq, head);
	return head;
}

int split_vq_add_indirect(struct split_vq *vq, const struct vq_buf *out,
			  unsigned int nout, const struct vq_buf *in,
			  unsigned int nin)
{
	unsigned int n = nout + nin, i;
	struct vring_desc *table;
	uint64_t table_gpa;
	uint16_t slot;
	int head;

	if (n == 0 || n > vq->num)
		return -EINVAL;
	table_gpa = guest_ram_alloc(vq->ram, 16ULL * n, 16);
	if (table_gpa == GUEST_RAM_NO_ADDR)
		return -ENOMEM;
	table = guest_ram_ptr(vq->ram, table_gpa, 16ULL * n);
	for (i = 0; i < n; i++) {
		const struct vq_buf *b = i < nout ? &out[i] : &in[i - nout];
		uint16_t flags = i < nout ? 0 : VRING_DESC_F_WRITE;

		if (i + 1 < n)
			flags |= VRING_DESC_F_NEXT;
		table[i].addr = htole64(b->gpa);
		table[i].len = htole32(b->len);
		table[i].flags = htole16(flags);
		table[i].next = htole16(i + 1 < n ? i + 1 : 0);
	}
	head = take_slots(vq, 1, &slot);
	if (head < 0) {
		guest_ram_free(vq->ram, table_gpa);
		return head;
	}
	vq->head[head].indirect_gpa = table_gpa;
	vq->desc[slot].addr = htole64(table_gpa);
	vq->desc[slot].len = htole32(16 * n);
	vq->desc[slot].flags = htole16(VRING_DESC_F_INDIRECT);
	vq->desc[slot].next = 0;
	split_vq_publish_head(vq, head);
	return head;
}

int split_vq_add_raw(struct split_vq *vq, const struct vq_raw_desc *rd,
		     unsigned int n)
{
	uint16_t *slots;
	unsigned int i;
	int head;

	if (n == 0 || n > vq->num)
		return -EINVAL;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	head = take_slots(vq, n, slots);
	if (head < 0) {
		free(slots);
		return head;
	}
	for (i = 0; i < n; i++) {
		struct vring_desc *d = &vq->desc[slots[i]];
		uint16_t next = rd[i].next;

		if (!rd[i].raw_next && (rd[i].flags & VRING_DESC_F_NEXT))
			next = next < n ? slots[next] : next;
		d->addr = htole64(rd[i].addr);
		d->len = htole32(rd[i].len);
		d->flags = htole16(rd[i].flags);
		d->next = htole16(next);
	}
	free(slots);
	split_vq_publish_head(vq, head);
	return head;
}

int split_vq_kick(struct split_vq *vq)
{
	uint64_t one = 1;

	/* Publish before notify; the syscall orders it too, be explicit. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (write(vq->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

int split_vq_reap(struct split_vq *vq)
{
	uint16_t used_idx;
	int count = 0;

	used_idx = le16toh(__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE));
	if ((uint16_t)(used_idx - vq->last_used_idx) > vq->num) {
		vq->bad_used++;
		snprintf(vq->bad_used_msg, sizeof(vq->bad_used_msg),
			 "queue %u: device moved used idx from %u to %u (ring "
			 "size %u)",
			 vq->index, vq->last_used_idx, used_idx, vq->num);
		return -EPROTO;
	}
	while (vq->last_used_idx != used_idx) {
		struct vring_used_elem *e =
		    &vq->used->ring[vq->last_used_idx % vq->num];
		uint32_t id = le32toh(e->id), len = le32toh(e->len);

		vq->last_used_idx++;
		if (id >= vq->num || !vq->head[id].ndesc || vq->head[id].done) {
			vq->bad_used++;
			snprintf(vq->bad_used_msg, sizeof(vq->bad_used_msg),
				 "queue %u: device returned head %u (len %u) "
				 "that is not in flight",
				 vq->index, id, len);
			return -EPROTO;
		}
		vq->head[id].done = true;
		vq->head[id].used_len = len;
		count++;
	}
	return count;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int split_vq_wait(struct split_vq *vq, uint16_t head, int watch_fd,
		  int timeout_ms, uint32_t *used_len)
{
	long long deadline = now_ms() + timeout_ms;

	if (head >= vq->num || !vq->head[head].ndesc)
		return -EINVAL;
	for (;;) {
		struct pollfd pfd[2] = {
		    {.fd = vq->call_fd, .events = POLLIN},
		    {.fd = watch_fd, .events = POLLRDHUP},
		};
		long long left;
		uint64_t cnt;
		int ret;

		ret = split_vq_reap(vq);
		if (ret < 0)
			return ret;
		if (vq->event_idx && !vq->head[head].done) {
			/* ask for a call when the next entry is used, then
			 * look again: the device may have raced ahead */
			__atomic_store_n(&vq->avail->ring[vq->num],
					 htole16(vq->last_used_idx),
					 __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			ret = split_vq_reap(vq);
			if (ret < 0)
				return ret;
		}
		if (vq->head[head].done) {
			if (used_len)
				*used_len = vq->head[head].used_len;
			release_chain(vq, head);
			return 0;
		}
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		ret = poll(pfd, watch_fd >= 0 ? 2 : 1, (int)left);
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret == 0) {
			/* used without a call: a guest would sleep forever */
			ret = split_vq_reap(vq);
			if (ret < 0)
				return ret;
			if (vq->head[head].done) {
				vq->lost_calls++;
				if (used_len)
					*used_len = vq->head[head].used_len;
				release_chain(vq, head);
				return -ENOMSG;
			}
			return -ETIMEDOUT;
		}
		if (pfd[0].revents & POLLIN) {
			if (read(vq->call_fd, &cnt, sizeof(cnt)) < 0 &&
			    errno != EAGAIN)
				return -errno;
		}
		if (watch_fd >= 0 &&
		    (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			/* a last completion may have raced with the hang-up */
			ret = split_vq_reap(vq);
			if (ret >= 0 && vq->head[head].done)
				continue;
			return -ECONNRESET;
		}
	}
}

int split_vq_pop_used(struct split_vq *vq, uint16_t *head, uint32_t *used_len)
{
	struct vring_used_elem *e;
	uint16_t used_idx;
	uint32_t id, len;

	used_idx = le16toh(__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE));
	if (used_idx == vq->last_used_idx)
		return 0;
	if ((uint16_t)(used_idx - vq->last_used_idx) > vq->num) {
		vq->bad_used++;
		snprintf(vq->bad_used_msg, sizeof(vq->bad_used_msg),
			 "queue %u: device moved used idx from %u to %u (ring "
			 "size %u)",
			 vq->index, vq->last_used_idx, used_idx, vq->num);
		return -EPROTO;
	}
	e = &vq->used->ring[vq->last_used_idx % vq->num];
	id = le32toh(e->id);
	len = le32toh(e->len);
	vq->last_used_idx++;
	if (id >= vq->num || !vq->head[id].ndesc || vq->head[id].done) {
		vq->bad_used++;
		snprintf(vq->bad_used_msg, sizeof(vq->bad_used_msg),
			 "queue %u: device returned head %u (len %u) that is "
			 "not in flight",
			 vq->index, id, len);
		return -EPROTO;
	}
	*head = (uint16_t)id;
	*used_len = len;
	release_chain(vq, (uint16_t)id);
	return 1;
}

unsigned int split_vq_in_flight(const struct split_vq *vq)
{
	unsigned int i, n = 0;

	for (i = 0; i < vq->num; i++)
		if (vq->head[i].ndesc)
			n++;
	return n;
}
