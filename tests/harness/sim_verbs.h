/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Verbs of a simulated guest, done the way the guest driver and provider
 * do them (include/pvo-device.h, interface version 2): CQ / QP / SRQ rings
 * and MR page lists in guest RAM described by page directories, WQEs
 * written into ring slots, SQ prod published, the db_pending exchange and
 * a doorbell record + doorbell-page write, CQEs polled from the CQ ring,
 * CQ arming through the ring header.
 *
 * Functions returning int give a pvo_status (>= 0) or -errno; on failure
 * the reason is in ctx->vm->err.
 */
#ifndef SIM_VERBS_H
#define SIM_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"
#include "sim_mem.h"
#include "sim_vm.h"

struct sim_pd {
	struct sim_ctx *ctx;
	uint32_t handle;
};

struct sim_mr {
	struct sim_ctx *ctx;
	uint32_t handle;
	uint32_t key; /* lkey == rkey */
	uint32_t access;
	uint64_t iova;
	uint64_t len;
	struct sim_pdir_mem pdir_mem;
};

struct sim_cq {
	struct sim_ctx *ctx;
	uint32_t handle;
	struct sim_ring ring;
	uint32_t cons; /* our copy of the consumer counter */
};

struct sim_srq {
	struct sim_ctx *ctx;
	uint32_t handle;
	uint32_t srqn;
	uint32_t max_sge;
	struct sim_ring ring;
	uint32_t prod;
	uint32_t resp_flags; /* PVO_SRQ_RESP_F_*: DOORBELL */
	uint64_t doorbells;  /* doorbell records this SRQ appended */
};

struct sim_qp_init {
	uint8_t type; /* PVO_QPT_* */
	struct sim_cq *send_cq, *recv_cq;
	struct sim_srq *srq;
	uint32_t sq_entries; /* power of two */
	uint32_t rq_entries; /* power of two; ignored with an SRQ */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	bool sq_sig_all;
	enum sim_layout layout; /* of the rings (default SCATTER) */
};

struct sim_qp {
	struct sim_ctx *ctx;
	uint32_t handle;
	uint32_t qpn;
	uint8_t type;
	struct sim_qp_init init;
	struct sim_ring sq, rq;
	uint32_t sq_prod, rq_prod;
	uint64_t doorbells; /* doorbell records this QP appended */
	uint32_t resp_flags; /* PVO_QP_RESP_F_*: RQ_DOORBELL */
};

/* More than the device allows, so tests can ask for too many. */
#define SIM_MAX_WR_SGE 32

/* One send work request, host byte order. */
struct sim_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct sim_wr {
	uint64_t wr_id;
	uint8_t opcode; /* PVO_WR_* */
	uint8_t flags;	/* PVO_WQE_F_*; INLINE is set from inline_len */
	uint32_t imm;	/* host order; sent big-endian */
	uint32_t invalidate_rkey; /* SEND_WITH_INV, LOCAL_INV */
	struct {		  /* REG_MR */
		uint64_t iova, length, pages;
		uint32_t key, access, npages;
	} reg;
	struct { /* BIND_MW */
		uint64_t addr, length;
		uint32_t rkey, lkey, access;
	} bind;
	unsigned int num_sge;
	struct sim_sge sge[SIM_MAX_WR_SGE];
	const void *inline_data;
	uint32_t inline_len;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
};

/* The other end of a connection, for sim_qp_connect(). */
struct sim_peer {
	uint8_t gid[PVO_GID_LEN];
	uint8_t mac[6];
	uint32_t qpn;
	uint32_t psn;
};

/* Connection parameters; zero fields take the defaults in brackets. */
struct sim_conn {
	uint8_t sgid_index;
	uint8_t path_mtu;      /* IB enum [5 = 4096, capped by the port] */
	uint32_t access;       /* qp_access_flags [all remote] */
	uint8_t timeout;       /* [14: ~67 ms] */
	uint8_t retry_cnt;     /* [7] */
	uint8_t rnr_retry;     /* [7 = forever] */
	uint8_t min_rnr_timer; /* [1] */
	uint8_t max_rd_atomic; /* [16] */
	uint32_t sq_psn;       /* [0x1000] */
	uint32_t qkey;	       /* UD [0x11111111] */
	bool no_access;	       /* really 0 qp_access_flags */
};

/* Objects: create / destroy */
int sim_alloc_pd(struct sim_ctx *ctx, struct sim_pd *pd);
int sim_dealloc_pd(struct sim_pd *pd);

/* Register [b->va + off, + len) of @b (iova = that address). */
int sim_reg_mr(struct sim_pd *pd, struct sim_buf *b, uint64_t off, uint64_t len,
	       uint32_t access, struct sim_mr *mr);
int sim_dereg_mr(struct sim_mr *mr);
/* REREG_MR with PVO_REREG_* @flags; @b NULL unless TRANS (then the range
 * [b->va + off, + len)), @pd NULL unless PD. Updates @mr on success. */
int sim_rereg_mr(struct sim_mr *mr, uint32_t flags, struct sim_pd *pd,
		 struct sim_buf *b, uint64_t off, uint64_t len, uint32_t access);

int sim_create_cq(struct sim_ctx *ctx, uint32_t entries, struct sim_cq *cq);
/* The same with PVO_CQ_F_* @flags. */
int sim_create_cq_flags(struct sim_ctx *ctx, uint32_t entries, uint32_t flags,
			struct sim_cq *cq);
int sim_destroy_cq(struct sim_cq *cq);
/* RESIZE_CQ to a new ring of @entries; on success the CQ uses it. */
int sim_resize_cq(struct sim_cq *cq, uint32_t entries);

int sim_create_srq(struct sim_pd *pd, uint32_t entries, uint32_t max_sge,
		   uint32_t limit, struct sim_srq *srq);
int sim_destroy_srq(struct sim_srq *srq);
/* RESIZE_SRQ to a new ring of @entries; @srq uses it on success. */
int sim_resize_srq(struct sim_srq *srq, uint32_t entries);

int sim_create_qp(struct sim_pd *pd, const struct sim_qp_init *init,
		  struct sim_qp *qp);
int sim_destroy_qp(struct sim_qp *qp);
int sim_modify_qp(struct sim_qp *qp, uint32_t mask,
		  const struct pvo_qp_attr *attr);
int sim_query_qp(struct sim_qp *qp, struct pvo_qp_attr *attr);
/* State only (RESET, ERR, SQD ...). */
int sim_qp_set_state(struct sim_qp *qp, uint32_t state);
/* RESET -> INIT -> RTR -> RTS for RC / UC (to @peer) or UD (peer NULL). */
int sim_qp_connect(struct sim_qp *qp, const struct sim_conn *c,
		   const struct sim_peer *peer);
/* This QP as a peer, through GID index @gid_index of its VM. */
void sim_qp_peer(struct sim_qp *qp, unsigned int gid_index,
		 struct sim_peer *peer);

int sim_create_ah(struct sim_pd *pd, const struct pvo_av *av, uint32_t *ah);
int sim_destroy_ah(struct sim_ctx *ctx, uint32_t ah);
/* AV towards @peer from our GID index @sgid_index. */
void sim_av_to(struct pvo_av *av, const struct sim_peer *peer,
	       uint8_t sgid_index);

/* Data path */

/* Write @n WQEs, publish SQ prod, ring the doorbell once. -ENOSPC if the
 * SQ lacks room (nothing posted), -EINVAL for a WR the QP cannot hold. */
int sim_post_send(struct sim_qp *qp, const struct sim_wr *wr, unsigned int n);
/* The same without the doorbell (prod published only). */
int sim_post_send_nodb(struct sim_qp *qp, const struct sim_wr *wr,
		       unsigned int n);
/* Slot for the next SQ entry (raw bytes, stride 1 << sq.shift). */
void *sim_sq_slot(struct sim_qp *qp, uint32_t ahead);
/* Publish @n raw slots and ring the doorbell. */
void sim_sq_publish(struct sim_qp *qp, uint32_t n);
/* The db_pending exchange + record + kick, as after publishing prod. */
void sim_qp_doorbell(struct sim_qp *qp);
/* Entries the device has not consumed yet. */
uint32_t sim_sq_outstanding(struct sim_qp *qp);

int sim_post_recv(struct sim_qp *qp, uint64_t wr_id, const struct sim_sge *sge,
		  unsigned int num_sge);
/* Rings the SRQ's doorbell after the post when CREATE_SRQ asked. */
int sim_post_srq_recv(struct sim_srq *srq, uint64_t wr_id,
		      const struct sim_sge *sge, unsigned int num_sge);
/* The db_pending exchange + SRQ record + kick. */
void sim_srq_doorbell(struct sim_srq *srq);
void *sim_rq_slot(struct sim_qp *qp, uint32_t ahead);
void sim_rq_publish(struct sim_qp *qp, uint32_t n);

/*
 * Queues that ring for receives (host verbs) hand them to the device
 * asynchronously, so a UC or UD message sent right after post_recv may
 * find none (real hardware has the WQE when post_recv returns).
 * sim_ctx_settle() waits until the device took @ctx's doorbell records
 * (the record ring's cons reached its prod) and then answered a command,
 * which the back-end does only after the records' work: 0, -ETIMEDOUT or
 * -EIO. With sim_settle_receives set, posting receives on such a queue
 * does it (a test's choice: the guest's provider cannot).
 */
int sim_ctx_settle(struct sim_ctx *ctx, int timeout_ms);
extern bool sim_settle_receives;

/* Up to @max CQEs, in host order fields as in the ring (le on x86). */
int sim_poll_cq(struct sim_cq *cq, struct pvo_cqe *out, int max);
/* Poll until @n CQEs arrived or @timeout_ms passed; returns how many. */
int sim_wait_cq(struct sim_cq *cq, struct pvo_cqe *out, int n, int timeout_ms);
/* CQEs the device published and we have not consumed. */
uint32_t sim_cq_pending(struct sim_cq *cq);
/* Set arm (PVO_CQ_ARM_*). The caller re-polls afterwards. */
void sim_arm_cq(struct sim_cq *cq, uint32_t how);

const char *sim_wc_status_name(unsigned int status);
const char *sim_wc_opcode_name(unsigned int opcode);
const char *sim_qp_state_name(unsigned int state);

#endif /* SIM_VERBS_H */
