/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * User-space verbs ABI between pvrdma_overlay.ko and the rdma-core provider
 * (udata of uverbs commands and the mmap offsets of a ucontext).
 */
#ifndef PVRDMA_OVERLAY_ABI_H
#define PVRDMA_OVERLAY_ABI_H

#include <linux/types.h>

#define PVO_UVERBS_ABI_VERSION	1

/* mmap offsets (in pages) of a ucontext */
#define PVO_MMAP_DOORBELL	0	/* the context's doorbell page, uncached */

struct pvo_alloc_ucontext_resp {
	__u32 ctx;		/* back-end context handle */
	__u32 db_queue;		/* doorbell queue index (diagnostics) */
	__u32 interface_version;	/* PVO_INTERFACE_VERSION */
	__u32 reserved;
};

struct pvo_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

#endif /* PVRDMA_OVERLAY_ABI_H */
