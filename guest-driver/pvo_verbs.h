/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pvrdma_overlay: the driver's verbs objects. Each embeds its ib_core
 * object first, as ib_alloc_device() and INIT_RDMA_OBJ_SIZE() require.
 */
#ifndef PVO_VERBS_H
#define PVO_VERBS_H

#include <linux/mutex.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "pvo.h"
#include "pvo_mem.h"

struct pvo_ibdev {
	struct ib_device ibdev;
	struct pvo_dev *dev;
	/* The bound NIC; the binding holds a reference while we exist. */
	struct net_device *netdev;
	enum ib_port_state port_state;	/* last one reported to ib_core */
	u64 fw_ver;
	u32 max_inline;		/* QUERY_DEVICE max_inline_data */
};

struct pvo_ucontext {
	struct ib_ucontext ibuc;
	u32 ctx;		/* back-end context handle */
	u32 db_queue;		/* doorbell queue its page kicks */
	u32 db_page;		/* BAR 2 page it writes (PVO_MMAP_DOORBELL) */
	struct page *db_ring;	/* doorbell records (PVO_MMAP_DB_RING) */
	dma_addr_t db_ring_dma;
};

struct pvo_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u32 ctx;		/* owner: a ucontext or PVO_CTX_KERNEL */
};

struct pvo_cq {
	struct ib_cq ibcq;
	u32 handle;		/* device handle */
	u32 ctx;
	bool kernel;
	/* Kernel CQs: poll, arm and QP teardown (scrubbing CQEs). */
	spinlock_t lock;
	struct pvo_ring ring;
};

struct pvo_qp {
	struct ib_qp ibqp;
	u32 handle;		/* device handle: doorbell records, events */
	u32 ctx;
	bool kernel;
	bool has_srq;
	u8 sq_sig_all;
	struct ib_qp_cap cap;	/* what the rings hold, for query_qp */

	struct mutex state_lock;	/* modify_qp vs. the tracked state */
	/* Last state set by modify_qp or seen by query_qp. */
	enum ib_qp_state state;
	/*
	 * The device put the QP in error on its own (error completion or
	 * event) since the last reset: receives posted now must be flushed.
	 */
	bool dev_err;

	/* Kernel QPs: the rings the driver posts to. */
	spinlock_t sq_lock;		/* SQ producer */
	spinlock_t rq_lock;		/* RQ producer */
	struct pvo_ring sq;
	struct pvo_ring rq;
};

struct pvo_srq {
	struct ib_srq ibsrq;
	u32 handle;
	u32 srqn;
	u32 ctx;
	bool kernel;
	u32 max_sge;
	spinlock_t lock;	/* kernel SRQs: producer */
	struct pvo_ring ring;
};

struct pvo_ah {
	struct ib_ah ibah;
	u32 handle;
	u32 ctx;
};

struct pvo_mr {
	struct ib_mr ibmr;
	u32 handle;		/* 0: a DMA MR on the local DMA lkey */
	u32 ctx;
	struct ib_umem *umem;
	int umem_access;	/* IB access it was pinned for */
	struct pvo_pdir_mem pdir;
	/* fast-reg MRs: the page list REG_MR work requests point at */
	__le64 *pages;
	dma_addr_t pages_dma;
	u32 max_pages;
	u32 npages;		/* set by map_mr_sg */
};

struct pvo_mw {
	struct ib_mw ibmw;
	u32 handle;
	u32 ctx;
};

static inline struct pvo_ibdev *to_pvo_ibdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct pvo_ibdev, ibdev);
}

static inline struct pvo_dev *to_pvo_dev(struct ib_device *ibdev)
{
	return to_pvo_ibdev(ibdev)->dev;
}

static inline struct pvo_ucontext *to_pvo_uc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct pvo_ucontext, ibuc);
}

static inline struct pvo_pd *to_pvo_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct pvo_pd, ibpd);
}

static inline struct pvo_cq *to_pvo_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct pvo_cq, ibcq);
}

static inline struct pvo_qp *to_pvo_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct pvo_qp, ibqp);
}

static inline struct pvo_srq *to_pvo_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct pvo_srq, ibsrq);
}

static inline struct pvo_ah *to_pvo_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct pvo_ah, ibah);
}

static inline struct pvo_mr *to_pvo_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct pvo_mr, ibmr);
}

static inline struct pvo_mw *to_pvo_mw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct pvo_mw, ibmw);
}

/* The acting context of a verb: the caller's ucontext, or the kernel. */
static inline u32 pvo_udata_ctx(struct ib_udata *udata)
{
	struct pvo_ucontext *uc = rdma_udata_to_drv_context(udata,
							    struct pvo_ucontext,
							    ibuc);

	return uc ? uc->ctx : PVO_CTX_KERNEL;
}

/*
 * A destroy command failed: unless the device does not know the object
 * (ENOENT) or is reset (ENODEV), it may still use the object's memory,
 * which must then be leaked rather than freed.
 */
static inline bool pvo_destroy_failed_in_use(int err)
{
	return err && err != -ENOENT && err != -ENODEV;
}

/* Verbs of the data path, by object (pvo_cq.c, pvo_qp.c, ...). */
#if PVO_API_6_11
int pvo_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct uverbs_attr_bundle *attrs);
#else
int pvo_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
#endif
int pvo_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int pvo_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int pvo_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int pvo_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void pvo_cq_scrub(struct pvo_cq *cq, u32 qpn);

int pvo_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata);
int pvo_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_udata *udata);
int pvo_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		 int attr_mask, struct ib_qp_init_attr *init);
int pvo_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
/* Groups the device accepts per QP; groups in all: a guest-side bound */
#define PVO_MAX_MCAST_GRP	1024
int pvo_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int pvo_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);

int pvo_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int pvo_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
int pvo_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);

int pvo_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata);
int pvo_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask attr_mask, struct ib_udata *udata);
int pvo_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int pvo_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);

int pvo_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata);
int pvo_destroy_ah(struct ib_ah *ibah, u32 flags);
int pvo_av_from_ah_attr(struct ib_device *ibdev,
			const struct rdma_ah_attr *ah_attr, struct pvo_av *av);

struct ib_mr *pvo_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *pvo_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 virt_addr, int access,
			      struct ib_udata *udata);
int pvo_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *pvo_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 virt_addr, int access,
				struct ib_pd *ibpd, struct ib_udata *udata);
/* IB_ACCESS_* to PVO_ACCESS_*, or -EOPNOTSUPP for what is not offered. */
int pvo_mr_access(struct ib_device *ibdev, int access);
int pvo_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int pvo_dealloc_mw(struct ib_mw *ibmw);
struct ib_mr *pvo_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg);
int pvo_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset);

/* pvo_db.c: a user context's doorbell record page */
int pvo_db_user_init(struct pvo_dev *dev, struct pvo_ucontext *uc);
void pvo_db_user_free(struct pvo_dev *dev, struct pvo_ucontext *uc,
		      bool in_use);

#endif /* PVO_VERBS_H */
