/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rdma-core provider for the pvrdma-overlay paravirtual RDMA device: the
 * provider's objects and the verbs it implements.
 */
#ifndef PVRDMA_OVERLAY_H
#define PVRDMA_OVERLAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ccan/container_of.h>
#include <infiniband/driver.h>

#include "pvo-abi.h"
#include "pvo-device.h"

/*
 * The device's max_inline_data when the kernel does not say
 * (pvo_alloc_ucontext_resp.max_inline_data 0).
 */
#define PVO_MAX_INLINE_DATA	256

/* One per uverbs device the match table accepted. */
struct pvo_device {
	struct verbs_device ibv_dev;
	size_t page_size;		/* mmap granularity of the uverbs fd */
	unsigned int abi_version;	/* kernel uverbs ABI of the device */
};

/* Device limits the provider checks before it asks the kernel. */
struct pvo_limits {
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_inline_data;
};

/* One per ibv_open_device(); owns a back-end context and its doorbell. */
struct pvo_context {
	struct verbs_context ibv_ctx;
	uint32_t handle;		/* back-end context handle */
	uint32_t db_queue;		/* doorbell queue index (diagnostics) */
	/*
	 * The context's doorbell page: an uncached MMIO page of BAR 2 that
	 * only this process has mapped. The data path writes it after
	 * publishing work in the shared rings; nothing ever reads it.
	 */
	void *db_page;
	/*
	 * The doorbell record page (struct pvo_ring_hdr, then
	 * PVO_DB_RING_ENTRIES QP handles): the provider produces, the
	 * device consumes. db_lock serialises the producers.
	 */
	void *db_ring;
	pthread_spinlock_t db_lock;
	struct pvo_limits limits;
};

struct pvo_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;			/* back-end PD handle */
};

/*
 * A ring the provider allocated for the device (layout of pvo-device.h):
 * page 0 is the struct pvo_ring_hdr, entries follow from page 1. The
 * kernel pins the pages and hands their list to the device.
 */
struct pvo_ring {
	void *buf;
	size_t buf_size;		/* whole guest pages */
	size_t ring_size;		/* bytes the device sees */
	struct pvo_ring_hdr *hdr;
	uint8_t *entries;
	uint32_t num_entries;		/* power of two */
	unsigned int shift;		/* log2 of the entry stride */
};

/* A work queue the provider produces into: SQ, RQ or SRQ. */
struct pvo_wq {
	struct pvo_ring ring;
	uint32_t max_sge;
	pthread_spinlock_t lock;	/* one poster at a time */
};

struct pvo_cq {
	union {
		struct ibv_cq ibv_cq;
		struct verbs_cq vcq;	/* vcq.cq_ex: start_poll and friends */
	};
	uint32_t handle;		/* device CQ handle */
	struct pvo_ring ring;
	pthread_spinlock_t lock;	/* one poller at a time */
	/*
	 * Between start_poll and end_poll (the lock held): the CQE the
	 * read_* accessors look at, the cons end_poll will publish (one past
	 * it) and the prod last read.
	 */
	const struct pvo_cqe *poll_cqe;
	uint32_t poll_cons;
	uint32_t poll_prod;
};

struct pvo_srq {
	struct ibv_srq ibv_srq;
	uint32_t handle;
	uint32_t srqn;
	bool doorbell;			/* PVO_SRQ_RESP_F_DOORBELL */
	struct pvo_wq rq;
};

/*
 * The ibv_wr_* batch of a QP, between wr_start and wr_complete/wr_abort
 * (the SQ lock held): WQEs go into slots [start, prod), published only by
 * wr_complete. err is the first error; with it set the rest of the batch
 * is ignored and wr_complete publishes nothing.
 */
struct pvo_wr_batch {
	uint32_t start;
	uint32_t prod;
	uint32_t room;			/* free slots at prod, last seen */
	int err;
	struct pvo_send_wqe *wqe;	/* the WQE the setters complete */
	bool can_inline;		/* its opcode carries inline data */
	bool inline_flag;		/* ... and wr_flags has IBV_SEND_INLINE */
	bool needs_ud_addr;		/* UD: wr_set_ud_addr still to come */
	bool has_data;			/* a data setter ran for it */
};

struct pvo_qp {
	union {
		struct ibv_qp ibv_qp;
		struct verbs_qp vqp;	/* vqp.qp_ex: the ibv_wr_* API */
	};
	uint32_t handle;		/* device QP handle: doorbell records */
	struct pvo_wq sq;
	struct pvo_wq rq;		/* unused with an SRQ */
	bool has_srq;
	bool rq_doorbell;		/* PVO_QP_RESP_F_RQ_DOORBELL */
	bool sq_sig_all;
	uint32_t max_inline_data;
	uint64_t send_ops_flags;	/* IBV_QP_EX_WITH_*: builders allowed */
	struct pvo_wr_batch wr;
};

struct pvo_ah {
	struct ibv_ah ibv_ah;
	uint32_t handle;		/* device AH handle for UD WQEs */
};

static inline struct pvo_device *to_pvo_dev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct pvo_device, ibv_dev.device);
}

static inline struct pvo_context *to_pvo_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct pvo_context, ibv_ctx.context);
}

static inline struct pvo_pd *to_pvo_pd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct pvo_pd, ibv_pd);
}

static inline struct pvo_cq *to_pvo_cq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct pvo_cq, ibv_cq);
}

static inline struct pvo_qp *to_pvo_qp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct pvo_qp, ibv_qp);
}

static inline struct pvo_srq *to_pvo_srq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct pvo_srq, ibv_srq);
}

static inline struct pvo_ah *to_pvo_ah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct pvo_ah, ibv_ah);
}

static inline struct pvo_cq *to_pvo_cq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct pvo_cq, vcq.cq_ex);
}

static inline struct pvo_qp *to_pvo_qp_ex(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct pvo_qp, vqp.qp_ex);
}

/* verbs.c */
int pvo_query_device(struct ibv_context *ibctx,
		     const struct ibv_query_device_ex_input *input,
		     struct ibv_device_attr_ex *attr, size_t attr_size);
int pvo_query_port(struct ibv_context *ibctx, uint8_t port,
		   struct ibv_port_attr *attr);
struct ibv_pd *pvo_alloc_pd(struct ibv_context *ibctx);
int pvo_dealloc_pd(struct ibv_pd *ibpd);
struct ibv_mr *pvo_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			  uint64_t hca_va, int access);
int pvo_dereg_mr(struct verbs_mr *vmr);
int pvo_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		 void *addr, size_t length, int access);
struct ibv_ah *pvo_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int pvo_destroy_ah(struct ibv_ah *ibah);
int pvo_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid);
int pvo_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid);

/* cq.c */
int pvo_cq_alloc_ring(struct pvo_cq *cq, uint32_t cqe, uint32_t max_cqe,
		      size_t page_size);
void pvo_cq_free_ring(struct pvo_cq *cq);
struct ibv_cq *pvo_create_cq(struct ibv_context *ibctx, int cqe,
			     struct ibv_comp_channel *channel,
			     int comp_vector);
struct ibv_cq_ex *pvo_create_cq_ex(struct ibv_context *ibctx,
				   struct ibv_cq_init_attr_ex *attr);
int pvo_resize_cq(struct ibv_cq *ibcq, int cqe);
int pvo_destroy_cq(struct ibv_cq *ibcq);

/* poll.c: the data path of CQs */
int pvo_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int pvo_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void pvo_cq_clean(struct pvo_cq *cq, uint32_t qpn, bool sends_only);
void pvo_cq_init_poll_ops(struct pvo_cq *cq);

/* qp.c */
int pvo_qp_alloc_rings(struct pvo_qp *qp, const struct ibv_qp_init_attr *attr,
		       size_t page_size);
void pvo_qp_free_rings(struct pvo_qp *qp);
struct ibv_qp *pvo_create_qp(struct ibv_pd *ibpd,
			     struct ibv_qp_init_attr *attr);
struct ibv_qp *pvo_create_qp_ex(struct ibv_context *ibctx,
				struct ibv_qp_init_attr_ex *attr);
int pvo_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		 int attr_mask, struct ibv_qp_init_attr *init_attr);
int pvo_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask);
int pvo_destroy_qp(struct ibv_qp *ibqp);

/* srq.c */
int pvo_srq_alloc_ring(struct pvo_srq *srq, const struct ibv_srq_attr *attr,
		       size_t page_size);
struct ibv_srq *pvo_create_srq(struct ibv_pd *ibpd,
			       struct ibv_srq_init_attr *attr);
int pvo_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask);
int pvo_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int pvo_destroy_srq(struct ibv_srq *ibsrq);

/* send.c: the data path of send queues */
int pvo_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
void pvo_ring_doorbell(struct pvo_context *ctx, struct pvo_qp *qp);
void pvo_ring_srq_doorbell(struct pvo_context *ctx, struct pvo_srq *srq);
bool pvo_sq_takes_sends(const struct pvo_qp *qp);
int pvo_send_opcode(enum ibv_qp_type qp_type, enum ibv_wr_opcode op);

/* Memory windows (mw.c). */
struct ibv_mw *pvo_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type);
int pvo_dealloc_mw(struct ibv_mw *mw);
int pvo_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		struct ibv_mw_bind *mw_bind);
int pvo_write_bind(struct pvo_send_wqe *wqe, uint32_t rkey,
		   const struct ibv_mw_bind_info *info);
void pvo_send_wqe_init(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
		       uint64_t wr_id, unsigned int send_flags, int opcode);
int pvo_inline_append(struct pvo_qp *qp, struct pvo_send_wqe *wqe,
		      const void *addr, size_t len);
void pvo_sq_publish(struct pvo_qp *qp, uint32_t start, uint32_t prod);

/* wr.c: the ibv_wr_* API of send queues */
#define PVO_SEND_OPS_FLAGS (IBV_QP_EX_WITH_SEND |			\
			    IBV_QP_EX_WITH_SEND_WITH_IMM |		\
			    IBV_QP_EX_WITH_SEND_WITH_INV |		\
			    IBV_QP_EX_WITH_RDMA_WRITE |			\
			    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
			    IBV_QP_EX_WITH_RDMA_READ |			\
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |		\
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |	\
			    IBV_QP_EX_WITH_LOCAL_INV |			\
			    IBV_QP_EX_WITH_BIND_MW)
uint64_t pvo_send_ops_supported(enum ibv_qp_type qp_type);
void pvo_qp_init_wr_ops(struct pvo_qp *qp, uint64_t send_ops_flags);

/* recv.c: the data path of receive queues */
int pvo_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
int pvo_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

#endif /* PVRDMA_OVERLAY_H */
