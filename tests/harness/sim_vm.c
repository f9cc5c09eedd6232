// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A simulated VM: session, event queue, GIDs, contexts and doorbells.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pvo_cmd.h"
#include "sim_vm.h"

#define VA_BASE 0x7f0000000000ull

static int vm_err(struct sim_vm *vm, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int vm_err(struct sim_vm *vm, int ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(vm->err, sizeof(vm->err), "%s: ", vm->name);
	va_start(ap, fmt);
	vsnprintf(vm->err + n, sizeof(vm->err) - n, fmt, ap);
	va_end(ap);
	return ret;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

struct guest_ram *sim_vm_ram(struct sim_vm *vm)
{
	return &vm->fe->ram;
}

uint64_t sim_vm_va(struct sim_vm *vm, uint64_t len)
{
	uint64_t va = vm->next_va;

	/* a guard gap of unmapped virtual pages between buffers */
	vm->next_va +=
	    ((len + PVO_PAGE_SIZE - 1) & ~(uint64_t)(PVO_PAGE_SIZE - 1)) +
	    16 * PVO_PAGE_SIZE;
	return va;
}

static int post_event_buf(struct sim_vm *vm, unsigned int slot)
{
	struct split_vq *vq = vu_vq(vm->fe, PVO_VQ_EVENT);
	struct vq_buf in = {.gpa = vm->ev_gpa[slot],
			    .len = sizeof(struct pvo_event)};
	int head;

	guest_ram_fill(sim_vm_ram(vm), in.gpa, 0xee, in.len);
	head = split_vq_add(vq, NULL, 0, &in, 1);
	if (head < 0)
		return head;
	if (head >=
	    (int)(sizeof(vm->ev_head_slot) / sizeof(vm->ev_head_slot[0])))
		return -ERANGE;
	vm->ev_head_slot[head] = (int)slot;
	return 0;
}

int sim_vm_poll_events(struct sim_vm *vm)
{
	struct split_vq *vq = vu_vq(vm->fe, PVO_VQ_EVENT);
	int added = 0, ret, slot;
	bool reposted = false;
	uint32_t len;
	uint16_t head;
	uint64_t cnt;

	if (!vq)
		return -EINVAL;
	/* clear the call eventfd before looking, so no signal is lost */
	if (read(vq->call_fd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: nothing signalled */
	}
	for (;;) {
		struct pvo_event e;

		ret = split_vq_pop_used(vq, &head, &len);
		if (ret < 0)
			return vm_err(vm, ret, "event queue: %s",
				      vq->bad_used_msg);
		if (ret == 0)
			break;
		slot = vm->ev_head_slot[head];
		vm->ev_head_slot[head] = -1;
		if (slot < 0)
			return vm_err(vm, -EPROTO,
				      "event queue: head %u has no buffer",
				      head);
		guest_ram_read(sim_vm_ram(vm), vm->ev_gpa[slot], &e, sizeof(e));
		if (len != sizeof(e)) {
			vm->ev_bad++;
		} else if (vm->ev_wr - vm->ev_rd < SIM_EVENT_FIFO) {
			struct sim_event *se =
			    &vm->ev[vm->ev_wr++ % SIM_EVENT_FIFO];

			se->type = le32toh(e.type);
			se->handle = le32toh(e.handle);
			added++;
		}
		ret = post_event_buf(vm, (unsigned int)slot);
		if (ret < 0)
			return vm_err(vm, ret, "event queue: repost: %s",
				      strerror(-ret));
		reposted = true;
	}
	if (reposted)
		split_vq_kick(vq);
	return added;
}

int sim_vm_next_event(struct sim_vm *vm, struct sim_event *ev, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct split_vq *vq = vu_vq(vm->fe, PVO_VQ_EVENT);

	for (;;) {
		int ret = sim_vm_poll_events(vm);
		struct pollfd pfd = {.fd = vq->call_fd, .events = POLLIN};
		long long left;

		if (ret < 0)
			return ret;
		if (vm->ev_rd != vm->ev_wr) {
			*ev = vm->ev[vm->ev_rd++ % SIM_EVENT_FIFO];
			return 1;
		}
		left = deadline - now_ms();
		if (left <= 0)
			return 0;
		if (vq->event_idx) {
			/* ask for a call when the next event is used (else
			 * the device calls once per 2^16 events), then look
			 * again: the device may have raced ahead */
			__atomic_store_n(&vq->avail->ring[vq->num],
					 htole16(vq->last_used_idx),
					 __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) !=
			    htole16(vq->last_used_idx))
				continue;
		}
		poll(&pfd, 1, (int)(left > 50 ? 50 : left));
	}
}

int sim_vm_count_events(struct sim_vm *vm, uint32_t type, uint32_t handle,
			int wait_ms)
{
	long long deadline = now_ms() + wait_ms;
	unsigned int i, keep;
	int n = 0, ret;

	do {
		ret = sim_vm_poll_events(vm);
		if (ret < 0)
			return ret;
		if (wait_ms)
			usleep(2000);
	} while (now_ms() < deadline);
	ret = sim_vm_poll_events(vm);
	if (ret < 0)
		return ret;
	/* compact the fifo, dropping the matches */
	keep = vm->ev_rd;
	for (i = vm->ev_rd; i != vm->ev_wr; i++) {
		struct sim_event e = vm->ev[i % SIM_EVENT_FIFO];

		if (e.type == type && (handle == ~0u || e.handle == handle))
			n++;
		else
			vm->ev[keep++ % SIM_EVENT_FIFO] = e;
	}
	vm->ev_wr = keep;
	return n;
}

int sim_vm_expect_events(struct sim_vm *vm, uint32_t type, uint32_t handle,
			 int want, int timeout_ms, int linger_ms)
{
	long long deadline = now_ms() + timeout_ms;
	int n = 0, ret;

	for (;;) {
		ret = sim_vm_count_events(vm, type, handle, 0);
		if (ret < 0)
			return ret;
		n += ret;
		if (n >= want || now_ms() >= deadline)
			break;
		usleep(1000);
	}
	ret = sim_vm_count_events(vm, type, handle, linger_ms);
	return ret < 0 ? ret : n + ret;
}

void sim_vm_drop_events(struct sim_vm *vm, int wait_ms)
{
	if (wait_ms)
		usleep(wait_ms * 1000);
	sim_vm_poll_events(vm);
	vm->ev_rd = vm->ev_wr;
}

const char *sim_event_name(uint32_t type)
{
	static const char *const names[] = {
	    [PVO_EV_CQ_COMP] = "CQ_COMP",
	    [PVO_EV_QP_FATAL] = "QP_FATAL",
	    [PVO_EV_QP_LAST_WQE] = "QP_LAST_WQE",
	    [PVO_EV_PORT_ACTIVE] = "PORT_ACTIVE",
	    [PVO_EV_PORT_ERR] = "PORT_ERR",
	    [PVO_EV_DEVICE_FATAL] = "DEVICE_FATAL",
	    [PVO_EV_CQ_ERR] = "CQ_ERR",
	    [PVO_EV_SRQ_LIMIT] = "SRQ_LIMIT",
	    [PVO_EV_QP_REQ_ERR] = "QP_REQ_ERR",
	    [PVO_EV_QP_ACCESS_ERR] = "QP_ACCESS_ERR",
	    [PVO_EV_COMM_EST] = "COMM_EST",
	    [PVO_EV_SQ_DRAINED] = "SQ_DRAINED",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "(unknown event)";
}

static int install_gids(struct sim_vm *vm)
{
	unsigned int n = le16toh(vm->cfg.num_allowed_gids), i;
	int st;

	if (n > PVO_MAX_ALLOWED_GIDS)
		n = PVO_MAX_ALLOWED_GIDS;
	pvo_gid_link_local_from_mac(vm->gid[0], vm->mac);
	for (i = 0; i < n; i++)
		memcpy(vm->gid[1 + i], vm->cfg.allowed_gids[i], PVO_GID_LEN);
	for (i = 0; i < 1 + n; i++) {
		st =
		    pvo_add_gid(vm->fe, 1, i, vm->gid[i], PVO_GID_TYPE_ROCE_V2);
		if (st != PVO_STATUS_OK)
			return vm_err(vm, st < 0 ? st : -EIO,
				      "ADD_GID %u (%s): %s", i,
				      pvo_gid_str(vm->gid[i]),
				      st < 0 ? vu_frontend_error(vm->fe)
					     : pvo_status_name(st));
		vm->gid_valid[i] = true;
	}
	return 0;
}

int sim_vm_gid_index_ipv4(struct sim_vm *vm, const char *dotted)
{
	uint8_t g[PVO_GID_LEN];
	int i;

	pvo_gid_from_ipv4(g, dotted);
	for (i = 0; i < SIM_MAX_GIDS; i++)
		if (vm->gid_valid[i] && !memcmp(vm->gid[i], g, PVO_GID_LEN))
			return i;
	return -1;
}

static int db_register(struct sim_ctx *ctx)
{
	struct sim_vm *vm = ctx->vm;
	int ret, st;

	ret = sim_pages_alloc(&ctx->db_page, sim_vm_ram(vm), 1,
			      SIM_LAYOUT_CONTIG);
	if (ret < 0)
		return vm_err(vm, ret, "no guest RAM for a doorbell page");
	st = pvo_set_db_ring(vm->fe, ctx->handle, ctx->db_page.gpa[0]);
	if (st != PVO_STATUS_OK) {
		sim_pages_free(&ctx->db_page);
		return vm_err(vm, st, "SET_DB_RING ctx %u: %s", ctx->handle,
			      st < 0 ? vu_frontend_error(vm->fe)
				     : pvo_status_name(st));
	}
	ctx->db_registered = true;
	return 0;
}

/* What the driver does at probe: a zeroed, contiguous notify area. */
static int notify_register(struct sim_vm *vm, unsigned int num_queues)
{
	uint32_t npages = pvo_notify_area_size(num_queues) / PVO_PAGE_SIZE;
	int ret, st;

	ret = sim_pages_alloc(&vm->notify, sim_vm_ram(vm), npages,
			      SIM_LAYOUT_CONTIG);
	if (ret < 0)
		return vm_err(vm, ret, "no guest RAM for the notify area");
	st = pvo_set_notify_area(vm->fe, vm->notify.gpa[0], num_queues);
	if (st != PVO_STATUS_OK) {
		sim_pages_free(&vm->notify);
		return vm_err(vm, st, "SET_NOTIFY_AREA: %s",
			      st < 0 ? vu_frontend_error(vm->fe)
				     : pvo_status_name(st));
	}
	vm->notify_nq = num_queues;
	return 0;
}

struct pvo_ring_hdr *sim_vm_notify_hdr(struct sim_vm *vm, uint32_t q)
{
	return (struct pvo_ring_hdr *)(vm->notify.hva[0] +
				       pvo_notify_ring_off(vm->notify_nq, q));
}

__le32 *sim_vm_notify_entries(struct sim_vm *vm, uint32_t q)
{
	return (__le32 *)((uint8_t *)sim_vm_notify_hdr(vm, q) +
			  PVO_NOTIFY_RING_ENTRY_OFF);
}

int sim_vm_slot_write(struct sim_vm *vm, uint32_t slot)
{
	uint32_t q, cons, prod, n;
	struct pvo_ring_hdr *h;

	if (!vm->notify_nq || slot >= PVO_MAX_DB_SLOTS)
		return -EINVAL;
	q = pvo_db_slot_queue(vm->notify_nq, slot);
	h = sim_vm_notify_hdr(vm, q);
	n = pvo_notify_ring_entries(vm->notify_nq);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cons = le32toh(__atomic_load_n(&h->cons, __ATOMIC_ACQUIRE));
	if (vm->slot_queued[slot] && (int32_t)(vm->slot_pos[slot] - cons) >= 0) {
		vm->slot_skipped++;
		return 0;
	}
	prod = vm->notify_prod[q];
	if (prod - cons >= n)
		return -ENOSPC;
	sim_vm_notify_entries(vm, q)[prod & (n - 1)] = htole32(slot);
	vm->slot_queued[slot] = true;
	vm->slot_pos[slot] = prod;
	vm->notify_prod[q] = prod + 1;
	sim_store_release(&h->prod, htole32(prod + 1));
	return split_vq_kick(vu_vq(vm->fe, q));
}

struct sim_vm *sim_vm_open(const struct sim_vm_opts *o, char *err,
			   size_t errlen)
{
	struct vu_options vo = {
	    .socket_path = o->socket_path,
	    .ram_size = o->ram_size,
	    .ram_regions = o->ram_regions,
	    .queue_size = 256,
	    .config_size = sizeof(struct pvo_config),
	    .num_queues = o->num_queues ? o->num_queues : 18,
	    /* wait for each vhost-user message to be done: kicks travel on
	     * other fds and could overtake SET_VRING_ENABLE otherwise */
	    .ack_every_message = true,
	};
	struct sim_vm *vm;
	unsigned int i;
	int st, tries;

	vm = calloc(1, sizeof(*vm));
	if (!vm) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(vm->name, sizeof(vm->name), "%s", o->name ? o->name : "vm");
	vm->next_va = VA_BASE;
	for (i = 0; i < sizeof(vm->ev_head_slot) / sizeof(vm->ev_head_slot[0]);
	     i++)
		vm->ev_head_slot[i] = -1;

	/* bind() and listen() are not atomic: allow a moment */
	for (tries = 0;; tries++) {
		vm->fe = vu_frontend_open(&vo, err, errlen);
		if (vm->fe || tries == 50 || !strstr(err, "refused"))
			break;
		usleep(20000);
	}
	if (!vm->fe) {
		free(vm);
		return NULL;
	}
	memcpy(&vm->cfg, vm->fe->config, sizeof(vm->cfg));
	memcpy(vm->mac, vm->cfg.mac, 6);
	if (le32toh(vm->cfg.version) != PVO_INTERFACE_VERSION) {
		snprintf(err, errlen,
			 "%s: config space has interface version %u, the "
			 "tests speak %u",
			 vm->name, le32toh(vm->cfg.version),
			 PVO_INTERFACE_VERSION);
		goto fail;
	}
	st = pvo_query_device(vm->fe, &vm->dev);
	if (st != PVO_STATUS_OK) {
		snprintf(err, errlen, "%s: QUERY_DEVICE: %s", vm->name,
			 st < 0 ? vu_frontend_error(vm->fe)
				: pvo_status_name(st));
		goto fail;
	}
	st = pvo_query_port(vm->fe, 1, &vm->port);
	if (st != PVO_STATUS_OK) {
		snprintf(err, errlen, "%s: QUERY_PORT: %s", vm->name,
			 st < 0 ? vu_frontend_error(vm->fe)
				: pvo_status_name(st));
		goto fail;
	}
	for (i = 0; i < SIM_EVENT_BUFS; i++) {
		vm->ev_gpa[i] = guest_ram_alloc(sim_vm_ram(vm),
						sizeof(struct pvo_event), 64);
		if (vm->ev_gpa[i] == GUEST_RAM_NO_ADDR ||
		    post_event_buf(vm, i) < 0) {
			snprintf(err, errlen, "%s: cannot post event buffers",
				 vm->name);
			goto fail;
		}
	}
	split_vq_kick(vu_vq(vm->fe, PVO_VQ_EVENT));
	if (!o->no_gids && install_gids(vm) < 0) {
		snprintf(err, errlen, "%s", vm->err);
		goto fail;
	}
	vm->kctx.vm = vm;
	vm->kctx.handle = PVO_CTX_KERNEL;
	vm->kctx.db_queue = PVO_VQ_DB_KERNEL;
	if (!o->no_kernel_db && db_register(&vm->kctx) != PVO_STATUS_OK) {
		snprintf(err, errlen, "%s", vm->err);
		goto fail;
	}
	if (!o->no_notify_area && notify_register(vm, vo.num_queues) < 0) {
		snprintf(err, errlen, "%s", vm->err);
		goto fail;
	}
	return vm;
fail:
	sim_mem_release_ram(sim_vm_ram(vm));
	vu_frontend_free(vm->fe);
	free(vm);
	return NULL;
}

void sim_vm_disconnect(struct sim_vm *vm)
{
	if (vm && vm->fe)
		vu_frontend_disconnect(vm->fe);
}

void sim_vm_close(struct sim_vm *vm)
{
	if (!vm)
		return;
	sim_mem_release_ram(sim_vm_ram(vm));
	vu_frontend_free(vm->fe);
	free(vm);
}

int sim_ctx_open(struct sim_vm *vm, struct sim_ctx *ctx)
{
	int st;

	memset(ctx, 0, sizeof(*ctx));
	ctx->vm = vm;
	st = pvo_alloc_ucontext(vm->fe, &ctx->handle, &ctx->db_queue,
				&ctx->bar_page);
	if (st != PVO_STATUS_OK)
		return vm_err(vm, st, "ALLOC_UCONTEXT: %s",
			      st < 0 ? vu_frontend_error(vm->fe)
				     : pvo_status_name(st));
	if (!vu_vq(vm->fe, ctx->db_queue))
		return vm_err(vm, -EPROTO,
			      "ALLOC_UCONTEXT gave doorbell queue %u, which "
			      "was never set up",
			      ctx->db_queue);
	return db_register(ctx);
}

int sim_ctx_close(struct sim_ctx *ctx)
{
	struct sim_vm *vm = ctx->vm;
	int st = PVO_STATUS_OK;

	if (!vm)
		return 0;
	if (ctx->handle != PVO_CTX_KERNEL)
		st = pvo_dealloc_ucontext(vm->fe, ctx->handle);
	if (ctx->db_page.ram)
		sim_pages_free(&ctx->db_page);
	memset(ctx, 0, sizeof(*ctx));
	return st;
}

struct pvo_ring_hdr *sim_ctx_db_hdr(struct sim_ctx *ctx)
{
	return (struct pvo_ring_hdr *)ctx->db_page.hva[0];
}

__le32 *sim_ctx_db_entries(struct sim_ctx *ctx)
{
	return (__le32 *)(ctx->db_page.hva[0] + PVO_DB_RING_ENTRY_OFF);
}

int sim_ctx_kick(struct sim_ctx *ctx)
{
	struct split_vq *vq = vu_vq(ctx->vm->fe, ctx->db_queue);

	if (!vq)
		return -EINVAL;
	ctx->doorbells++;
	if (ctx->bar_page >= PVO_DB_SLOT_PAGE0)
		return sim_vm_slot_write(ctx->vm,
					 ctx->bar_page - PVO_DB_SLOT_PAGE0);
	return split_vq_kick(vq);
}

int sim_ctx_ring(struct sim_ctx *ctx, uint32_t qp_handle)
{
	struct pvo_ring_hdr *h = sim_ctx_db_hdr(ctx);
	__le32 *e = sim_ctx_db_entries(ctx);
	uint32_t prod = le32toh(h->prod);

	e[prod % PVO_DB_RING_ENTRIES] = htole32(qp_handle);
	sim_store_release(&h->prod, htole32(prod + 1));
	return sim_ctx_kick(ctx);
}
