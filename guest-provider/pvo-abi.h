/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uverbs command and response layouts of pvrdma_overlay: the core verbs
 * structures extended with the driver data of rdma/pvrdma_overlay-abi.h.
 */
#ifndef PVO_ABI_H
#define PVO_ABI_H

#include <infiniband/kern-abi.h>
#include <rdma/pvrdma_overlay-abi.h>
#include <kernel-abi/pvrdma_overlay-abi.h>

DECLARE_DRV_CMD(pvo_uverbs_get_context, IB_USER_VERBS_CMD_GET_CONTEXT,
		empty, pvo_alloc_ucontext_resp);
DECLARE_DRV_CMD(pvo_uverbs_alloc_pd, IB_USER_VERBS_CMD_ALLOC_PD,
		empty, pvo_alloc_pd_resp);

#endif /* PVO_ABI_H */
