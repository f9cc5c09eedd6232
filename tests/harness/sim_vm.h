/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A simulated VM: one vhost-user session to the back-end plus what the
 * guest kernel driver does at probe time: read the config space, keep the
 * event queue stocked with buffers, install the GIDs the tenant allows
 * (ADD_GID, like ib_core does for the netdev's addresses), register the
 * kernel's doorbell record page. User contexts (sim_ctx) get their own
 * doorbell record page and doorbell virtqueue, as a process would.
 *
 * Functions returning int give a pvo_status (>= 0) or -errno, with a
 * message in vm->err.
 */
#ifndef SIM_VM_H
#define SIM_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"
#include "sim_mem.h"
#include "vu_frontend.h"

#define SIM_MAX_GIDS (1 + PVO_MAX_ALLOWED_GIDS)
#define SIM_EVENT_BUFS 64
#define SIM_EVENT_FIFO 4096

struct sim_vm_opts {
	const char *name; /* for messages */
	const char *socket_path;
	uint64_t ram_size;	  /* default 64 MiB */
	unsigned int ram_regions; /* default 2 */
	/* vrings to create: default 18, what QEMU's device makes with its
	 * default doorbells=16 (ctrl + event + kernel + 15 contexts) */
	unsigned int num_queues;
	bool no_gids;	   /* leave the GID table empty */
	bool no_kernel_db; /* do not SET_DB_RING for the kernel */
	bool no_notify_area; /* do not SET_NOTIFY_AREA (no slot pages) */
};

struct sim_event {
	uint32_t type;
	uint32_t handle;
};

struct sim_vm;

/* A user context (or the kernel's, handle PVO_CTX_KERNEL). */
struct sim_ctx {
	struct sim_vm *vm;
	uint32_t handle;
	uint32_t db_queue;	  /* doorbell virtqueue */
	uint32_t bar_page;	  /* BAR 2 page it rings: queue or slot */
	struct sim_pages db_page; /* doorbell record ring */
	bool db_registered;
	uint64_t doorbells; /* doorbell writes (kicks) so far */
};

struct sim_vm {
	char name[32];
	struct vu_frontend *fe;
	struct pvo_config cfg;
	struct pvo_resp_query_device dev;
	struct pvo_resp_query_port port;
	uint8_t mac[6];
	/* GID table as installed: gid[i] valid if gid_valid[i] */
	uint8_t gid[SIM_MAX_GIDS][PVO_GID_LEN];
	bool gid_valid[SIM_MAX_GIDS];
	struct sim_ctx kctx;

	/* event queue: posted buffers by head, received events in order */
	uint64_t ev_gpa[SIM_EVENT_BUFS];
	int ev_head_slot[1024]; /* vring head -> ev_gpa index, -1 */
	struct sim_event ev[SIM_EVENT_FIFO];
	unsigned int ev_rd, ev_wr;
	unsigned int ev_bad; /* malformed event buffers seen */

	uint64_t next_va; /* virtual address for the next buffer */
	char err[512];

	/* notify rings (SET_NOTIFY_AREA) and what QEMU keeps for slot
	 * pages: its producer per ring, the last position of each slot */
	struct sim_pages notify;
	uint32_t notify_nq;
	uint32_t notify_prod[PVO_MAX_QUEUES];
	uint32_t slot_pos[PVO_MAX_DB_SLOTS];
	bool slot_queued[PVO_MAX_DB_SLOTS];
	uint64_t slot_skipped; /* slot doorbells QEMU did not append */
};

/* Connect, negotiate, read the config, start every vring, post event
 * buffers, install GIDs, register the kernel doorbell page. NULL with
 * @err filled on failure. */
struct sim_vm *sim_vm_open(const struct sim_vm_opts *o, char *err,
			   size_t errlen);
/* Drop the connection (the back-end forgets the VM's objects) and free. */
void sim_vm_close(struct sim_vm *vm);
/* Only drop the connection; objects stay allocated on our side. */
void sim_vm_disconnect(struct sim_vm *vm);

struct guest_ram *sim_vm_ram(struct sim_vm *vm);
/* A fresh page-aligned virtual address range of @len bytes. */
uint64_t sim_vm_va(struct sim_vm *vm, uint64_t len);

/* GID index of the IPv4 address (allowed in config), link-local = 0. */
int sim_vm_gid_index_ipv4(struct sim_vm *vm, const char *dotted);

/* Move events the device used into the fifo and repost the buffers.
 * Returns events added, or -EPROTO / -errno. */
int sim_vm_poll_events(struct sim_vm *vm);
/* Next event (waits up to @timeout_ms, 0 = just look). 1 = got one,
 * 0 = none, < 0 = error. */
int sim_vm_next_event(struct sim_vm *vm, struct sim_event *ev, int timeout_ms);
/* Wait @wait_ms, then remove and count the events of @type for @handle
 * (any handle if handle == ~0u). Others stay in the fifo. */
int sim_vm_count_events(struct sim_vm *vm, uint32_t type, uint32_t handle,
			int wait_ms);
/* Wait up to @timeout_ms until @want events of @type for @handle came,
 * then @linger_ms more for extra ones; removes and counts them. */
int sim_vm_expect_events(struct sim_vm *vm, uint32_t type, uint32_t handle,
			 int want, int timeout_ms, int linger_ms);
/* Forget every queued event (after polling for @wait_ms). */
void sim_vm_drop_events(struct sim_vm *vm, int wait_ms);
const char *sim_event_name(uint32_t type);

/* ALLOC_UCONTEXT + SET_DB_RING of a fresh record page. */
int sim_ctx_open(struct sim_vm *vm, struct sim_ctx *ctx);
/* DEALLOC_UCONTEXT; frees the record page. */
int sim_ctx_close(struct sim_ctx *ctx);
/* Append a QP handle to the context's record ring and kick its doorbell
 * queue (the doorbell-page write). No db_pending logic: sim_verbs does
 * that; tests call this directly to forge records. */
int sim_ctx_ring(struct sim_ctx *ctx, uint32_t qp_handle);
/* Only the doorbell-page write (kick), nothing appended. A slot page
 * write goes through what QEMU does (sim_vm_slot_write). */
int sim_ctx_kick(struct sim_ctx *ctx);
/* A write to BAR 2 page PVO_DB_SLOT_PAGE0 + @slot, as QEMU handles it:
 * append @slot to its queue's notify ring unless its entry there is
 * not consumed yet, then kick the queue. */
int sim_vm_slot_write(struct sim_vm *vm, uint32_t slot);
/* Queue @q's notify ring: header and entries (for forged entries). */
struct pvo_ring_hdr *sim_vm_notify_hdr(struct sim_vm *vm, uint32_t q);
__le32 *sim_vm_notify_entries(struct sim_vm *vm, uint32_t q);
/* The record ring's header and entries (for forged records). */
struct pvo_ring_hdr *sim_ctx_db_hdr(struct sim_ctx *ctx);
__le32 *sim_ctx_db_entries(struct sim_ctx *ctx);

#endif /* SIM_VM_H */
