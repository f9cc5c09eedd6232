/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The back-end's per-VM state stream (live migration): a header, then
 * records of (type, version, length, payload) in an order where each
 * record names only objects of earlier records, then an END record.
 * Little-endian, packed; handles, keys and QPNs as the guest knows them.
 * docs/migration.md describes it; state_load.c checks every field.
 */
#ifndef PVO_STATE_FORMAT_H
#define PVO_STATE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "pvo-device.h"

G_STATIC_ASSERT(G_BYTE_ORDER == G_LITTLE_ENDIAN);

#define PVO_STATE_MAGIC "PVOSTATE"
#define PVO_STATE_VERSION 1
#define PVO_STATE_NAME_LEN 64
/* No VM's state comes near this: MR page lists take 8 bytes a run of
 * contiguous pages, as much as max-host-mem lets them take on the host.
 * A larger stream is refused unread, and not saved (the migration
 * fails, the VM runs on). */
#define PVO_STATE_MAX_BYTES (1ull << 30)

struct pvo_st_header {
	char magic[8];
	uint32_t version;	     /* PVO_STATE_VERSION */
	uint32_t iface_version;	     /* PVO_INTERFACE_VERSION of the source */
	char vm[PVO_STATE_NAME_LEN]; /* NUL-padded */
} __attribute__((packed));

enum pvo_st_type {
	PVO_ST_END,
	PVO_ST_VM,
	PVO_ST_UCONTEXT,
	PVO_ST_PD,
	PVO_ST_MR,
	PVO_ST_MW,
	PVO_ST_CQ,
	PVO_ST_SRQ,
	PVO_ST_AH,
	PVO_ST_QP,
	PVO_ST_EVENTS,
	PVO_ST_TYPES
};

struct pvo_st_rec {
	uint16_t type;
	uint16_t version; /* 1, or PVO_ST_MR_VERSION, PVO_ST_SRQ_VERSION */
	uint32_t len;	  /* payload bytes */
} __attribute__((packed));

struct pvo_st_db_ring {
	uint8_t set;
	uint64_t gpa;
	uint32_t cons;
} __attribute__((packed));

struct pvo_st_gid {
	uint8_t valid;
	uint8_t gid[16];
	uint32_t type;
} __attribute__((packed));

#define PVO_ST_GIDS 16

struct pvo_st_vm {
	uint64_t move_gen; /* the last switch-over's generation */
	uint32_t next_qpn;
	uint8_t mr_tag;
	struct pvo_st_db_ring kernel_db;
	uint8_t notify_set;
	uint64_t notify_gpa;
	uint32_t notify_num_queues;
	uint32_t notify_entries;
	uint32_t notify_cons[PVO_MAX_QUEUES];
	struct pvo_st_gid gids[PVO_ST_GIDS];
} __attribute__((packed));

struct pvo_st_ucontext {
	uint32_t handle;
	uint32_t db_queue;
	uint32_t db_page;
	struct pvo_st_db_ring db;
} __attribute__((packed));

struct pvo_st_pd {
	uint32_t handle;
	uint32_t ctx;
} __attribute__((packed));

/*
 * Record version 1: followed by npages GPAs. Version 2 (what saves
 * write): followed by a struct pvo_st_mr_runs and its runs of pages
 * contiguous in GPA, which cover the npages in order (none if npages is
 * 0), so that the stream grows with the runs, not with the pages: never
 * more than version 1 for the same list.
 */
struct pvo_st_mr {
	uint32_t handle, ctx, pd, key, access, max_pages;
	uint8_t valid, fast_reg;
	uint64_t iova, length;
	uint32_t npages;
} __attribute__((packed));

#define PVO_ST_MR_VERSION 2

struct pvo_st_mr_runs {
	uint32_t nruns;
} __attribute__((packed));

/* A run of up to PVO_ST_RUN_MAX pages: the GPA of its first page, in
 * the low 12 bits the pages that follow it. Longer runs take several. */
#define PVO_ST_RUN_MAX 4096

struct pvo_st_mr_run {
	uint64_t page;
} __attribute__((packed));

struct pvo_st_mw {
	uint32_t handle, ctx, pd, rkey, mr, qpn, access;
	uint8_t type, bound;
	uint64_t addr, length;
} __attribute__((packed));

/* a ring: followed (after the record's fixed part) by npages GPAs */
struct pvo_st_ring {
	uint32_t entries;
	uint8_t shift;
	uint32_t npages;
} __attribute__((packed));

struct pvo_st_cq {
	uint32_t handle, ctx, prod, cons_seen;
	uint8_t error, no_events;
	struct pvo_st_ring ring;
} __attribute__((packed));

/*
 * Record version 1: up to ring, then the ring's pages. Version 2 (what
 * saves write) has flags before the pages: PVO_ST_SRQ_DOORBELL, its
 * guest rings for it (a host SRQ on the host-verbs transport).
 */
struct pvo_st_srq {
	uint32_t handle, ctx, pd, max_sge, limit, cons;
	struct pvo_st_ring ring;
	uint8_t flags;
} __attribute__((packed));

#define PVO_ST_SRQ_VERSION 2
#define PVO_ST_SRQ_V1_LEN offsetof(struct pvo_st_srq, flags)
#define PVO_ST_SRQ_DOORBELL 1

struct pvo_st_path {
	uint8_t dgid[16];
	uint8_t dmac[6];
	uint8_t sgid_index, hop_limit;
	uint32_t flow_label;
	uint8_t traffic_class, sl;
} __attribute__((packed));

struct pvo_st_ah {
	uint32_t handle, ctx, pd;
	struct pvo_st_path path;
} __attribute__((packed));

#define PVO_ST_DMA_RANGES 32

struct pvo_st_dma_range {
	uint8_t kind; /* PVO_DMA_MR or PVO_DMA_PHYS */
	uint32_t key, access, qpn, pd;
	uint64_t addr, len;
} __attribute__((packed));

struct pvo_st_dma {
	uint64_t len;
	uint32_t n, i;
	uint64_t off;
	struct pvo_st_dma_range r[PVO_ST_DMA_RANGES];
} __attribute__((packed));

struct pvo_st_atomic {
	uint8_t valid;
	uint32_t psn;
	uint64_t orig;
} __attribute__((packed));

#define PVO_ST_ATOMICS 16

/*
 * A QP. The requester is saved at its oldest unacknowledged WQE (cons,
 * with sq_psn its first PSN): the destination sends from there, and the
 * peer's responder treats what it already has as duplicates. The
 * responder keeps a message arriving in packets (its receive WQE was
 * taken from the ring and may be reused by the guest). Followed by the
 * SQ's pages, the RQ's pages and nmcast group GIDs.
 */
struct pvo_st_qp {
	uint32_t handle, ctx, qpn, pd, scq, rcq, srq;
	uint8_t type, state, sq_sig_all;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	/* attributes */
	uint32_t qkey, rq_psn, sq_psn, dest_qpn, access;
	uint8_t path_mtu, min_rnr_timer, timeout, retry_cnt, rnr_retry;
	uint8_t max_rd_atomic, max_dest_rd_atomic, en_sqd_async_notify;
	struct pvo_st_path path;
	/* engine (the software engine's: engine/sw/sw_state.c) */
	uint32_t sq_cons, rq_cons, msn;
	uint8_t comm_est;
	uint8_t msg_active, msg_op, msg_has_rw, msg_st;
	uint64_t msg_off;
	uint32_t msg_rkey;
	uint64_t msg_va, msg_len;
	uint64_t rw_wr_id;
	struct pvo_st_dma rw_dma;
	/* overlay wire state (transport/overlay/overlay_state.c): what
	 * the requester had sent (the peer may acknowledge up to there) */
	uint32_t sent_end;
	uint16_t sport;
	struct pvo_st_atomic atomics[PVO_ST_ATOMICS];
	uint32_t atomic_next;
	uint32_t nmcast;
	struct pvo_st_ring sq, rq;
} __attribute__((packed));

/* followed by count struct pvo_event */
struct pvo_st_events {
	uint32_t count;
} __attribute__((packed));

#endif
