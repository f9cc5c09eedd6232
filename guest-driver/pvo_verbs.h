/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pvrdma_overlay: the driver's verbs objects. Each embeds its ib_core
 * object first, as ib_alloc_device() and INIT_RDMA_OBJ_SIZE() require.
 */
#ifndef PVO_VERBS_H
#define PVO_VERBS_H

#include <rdma/ib_verbs.h>

#include "pvo.h"

struct pvo_ibdev {
	struct ib_device ibdev;
	struct pvo_dev *dev;
	/* The bound NIC; the binding holds a reference while we exist. */
	struct net_device *netdev;
	enum ib_port_state port_state;	/* last one reported to ib_core */
	u64 fw_ver;
};

struct pvo_ucontext {
	struct ib_ucontext ibuc;
	u32 ctx;		/* back-end context handle */
	u32 db_queue;		/* doorbell queue = BAR 2 page */
};

struct pvo_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u32 ctx;		/* owner: a ucontext or PVO_CTX_KERNEL */
};

/* CQs and QPs get their state with the data path. */
struct pvo_cq {
	struct ib_cq ibcq;
};

struct pvo_qp {
	struct ib_qp ibqp;
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

#endif /* PVO_VERBS_H */
