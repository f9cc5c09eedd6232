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
DECLARE_DRV_CMD(pvo_uverbs_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		pvo_create_cq, pvo_create_cq_resp);
DECLARE_DRV_CMD(pvo_uverbs_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		pvo_create_cq, pvo_create_cq_resp);
DECLARE_DRV_CMD(pvo_uverbs_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		pvo_resize_cq, empty);
DECLARE_DRV_CMD(pvo_uverbs_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		pvo_create_qp, pvo_create_qp_resp);
DECLARE_DRV_CMD(pvo_uverbs_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		pvo_create_srq, pvo_create_srq_resp);
DECLARE_DRV_CMD(pvo_uverbs_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		pvo_modify_srq, empty);
DECLARE_DRV_CMD(pvo_uverbs_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, pvo_create_ah_resp);

#endif /* PVO_ABI_H */
