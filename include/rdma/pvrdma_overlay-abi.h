/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * User-space verbs ABI between pvrdma_overlay.ko and the rdma-core provider
 * (udata of uverbs commands and the mmap offsets of a ucontext).
 */
#ifndef PVRDMA_OVERLAY_ABI_H
#define PVRDMA_OVERLAY_ABI_H

#include <linux/types.h>

#define PVO_UVERBS_ABI_VERSION	2

/* mmap offsets (in pages) of a ucontext */
#define PVO_MMAP_DOORBELL	0	/* the context's doorbell page, uncached */
#define PVO_MMAP_DB_RING	1	/* the context's doorbell record page */

struct pvo_alloc_ucontext_resp {
	__u32 ctx;		/* back-end context handle */
	__u32 db_queue;		/* doorbell queue index (diagnostics) */
	__u32 interface_version;	/* PVO_INTERFACE_VERSION */
	__u32 max_inline_data;	/* uverbs query_device does not carry it */
};

struct pvo_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

/*
 * Rings of user CQs, QPs and SRQs are allocated by the provider (page
 * aligned, whole pages, layout of include/pvo-device.h); the kernel pins
 * them and describes them to the device. Sizes are in bytes.
 */
struct pvo_create_cq {
	__aligned_u64 buf_addr;
	__u32 buf_size;
	__u32 entries;		/* power of two */
	/* From here on optional: a shorter command means no flags. */
	__u32 flags;		/* PVO_CREATE_CQ_* */
	__u32 reserved;
};

/* The CQ has no completion channel: it raises no events. */
#define PVO_CREATE_CQ_NO_EVENTS	(1u << 0)

/* resize_cq udata: the new ring the provider allocated. The device moves
 * outstanding CQEs to it; the provider switches once the verb returns. */
struct pvo_resize_cq {
	__aligned_u64 buf_addr;
	__u32 buf_size;
	__u32 entries;		/* power of two */
};

struct pvo_create_cq_resp {
	__u32 cq;		/* device handle */
	__u32 reserved;
};

struct pvo_create_qp {
	__aligned_u64 sq_buf_addr;
	__aligned_u64 rq_buf_addr;	/* 0 with an SRQ */
	__u32 sq_buf_size;
	__u32 rq_buf_size;
	__u32 sq_entries;
	__u32 rq_entries;
	__u8 sq_wqe_shift;
	__u8 rq_wqe_shift;
	__u8 reserved[6];
};

struct pvo_create_qp_resp {
	__u32 qp;		/* device handle, for doorbell records */
	__u32 qpn;
	__u32 flags;		/* PVO_QP_RESP_F_* of the device's answer */
	__u32 reserved;
};

struct pvo_create_srq {
	__aligned_u64 buf_addr;
	__u32 buf_size;
	__u32 entries;
	__u8 wqe_shift;
	__u8 reserved[7];
};

/* modify_srq udata with IB_SRQ_MAX_WR: the new ring the provider
 * allocated (the same WQE stride). The device moves posted receives to
 * it; the provider switches once the verb returns. */
struct pvo_modify_srq {
	__aligned_u64 buf_addr;
	__u32 buf_size;
	__u32 entries;		/* power of two */
};

/* A provider that reads flags asks for them by its response size: the
 * driver then lets the device know that it rings SRQ doorbells. */
struct pvo_create_srq_resp {
	__u32 srq;
	__u32 srqn;
	__u32 flags;		/* PVO_SRQ_RESP_F_* of the device's answer */
	__u32 reserved;
};

struct pvo_create_ah_resp {
	__u32 ah;		/* device handle for UD WQEs */
	__u32 reserved;
};

#endif /* PVRDMA_OVERLAY_ABI_H */
