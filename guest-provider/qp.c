// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pair life cycle: the provider sizes and allocates the send and
 * receive rings, the kernel pins them and creates the device QP (classic
 * create_qp, or create_qp_ex with the ibv_wr_* API of wr.c). State changes
 * and queries go to the kernel as they are.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

/* The capabilities a QP was created with, as the rings hold them. */
static void pvo_qp_caps(struct pvo_qp *qp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.ring.num_entries;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->max_inline_data;
	cap->max_recv_wr = qp->has_srq ? 0 : qp->rq.ring.num_entries;
	cap->max_recv_sge = qp->has_srq ? 0 : qp->rq.max_sge;
}

static int pvo_check_qp_caps(struct pvo_context *ctx,
			     const struct ibv_qp_init_attr *attr)
{
	const struct pvo_limits *lim = &ctx->limits;
	const struct ibv_qp_cap *cap = &attr->cap;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	default:
		return EOPNOTSUPP;
	}

	if (cap->max_send_wr > lim->max_qp_wr ||
	    cap->max_send_sge > lim->max_sge ||
	    cap->max_inline_data > lim->max_inline_data)
		return EINVAL;
	if (!attr->srq && (cap->max_recv_wr > lim->max_qp_wr ||
			   cap->max_recv_sge > lim->max_sge))
		return EINVAL;
	return 0;
}

/*
 * Sizes and allocates the rings of a QP for attr (checked already): a QP
 * that never sends or receives still gets one-entry rings.
 */
int pvo_qp_alloc_rings(struct pvo_qp *qp, const struct ibv_qp_init_attr *attr,
		       size_t page_size)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	uint32_t entries;
	int ret;

	qp->has_srq = attr->srq != NULL;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->max_inline_data = cap->max_inline_data;

	entries = pvo_roundup_pow2(cap->max_send_wr ? cap->max_send_wr : 1);
	ret = pvo_wq_alloc(&qp->sq, entries,
			   pvo_send_wqe_shift(cap->max_send_sge,
					      cap->max_inline_data),
			   cap->max_send_sge, page_size);
	if (ret || qp->has_srq)
		return ret;

	entries = pvo_roundup_pow2(cap->max_recv_wr ? cap->max_recv_wr : 1);
	ret = pvo_wq_alloc(&qp->rq, entries,
			   pvo_recv_wqe_shift(cap->max_recv_sge),
			   cap->max_recv_sge, page_size);
	if (ret)
		pvo_wq_free(&qp->sq);
	return ret;
}

void pvo_qp_free_rings(struct pvo_qp *qp)
{
	pvo_wq_free(&qp->rq);
	pvo_wq_free(&qp->sq);
}

/* create_qp and create_qp_ex, attr checked for what only the latter has */
static struct ibv_qp *pvo_qp_create(struct ibv_context *ibctx,
				    struct ibv_qp_init_attr_ex *attr)
{
	/* the classic attributes are a prefix of the extended ones */
	struct ibv_qp_init_attr *init = (struct ibv_qp_init_attr *)attr;
	struct pvo_context *ctx = to_pvo_ctx(ibctx);
	struct pvo_device *dev = to_pvo_dev(ibctx->device);
	struct pvo_uverbs_create_qp_resp resp = {};
	struct pvo_uverbs_create_qp cmd = {};
	struct pvo_qp *qp;
	int ret;

	ret = pvo_check_qp_caps(ctx, init);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}

	ret = pvo_qp_alloc_rings(qp, init, dev->page_size);
	if (ret)
		goto err_free;

	cmd.sq_buf_addr = (uintptr_t)qp->sq.ring.buf;
	cmd.sq_buf_size = qp->sq.ring.ring_size;
	cmd.sq_entries = qp->sq.ring.num_entries;
	cmd.sq_wqe_shift = qp->sq.ring.shift;
	if (!qp->has_srq) {
		cmd.rq_buf_addr = (uintptr_t)qp->rq.ring.buf;
		cmd.rq_buf_size = qp->rq.ring.ring_size;
		cmd.rq_entries = qp->rq.ring.num_entries;
		cmd.rq_wqe_shift = qp->rq.ring.shift;
	}

	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_rings;

	qp->handle = resp.qp;
	qp->rq_doorbell = resp.flags & PVO_QP_RESP_F_RQ_DOORBELL;
	/* what the rings hold, which is at least what was asked for */
	pvo_qp_caps(qp, &attr->cap);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		pvo_qp_init_wr_ops(qp, attr->send_ops_flags);
	return &qp->ibv_qp;

err_rings:
	pvo_qp_free_rings(qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *pvo_create_qp(struct ibv_pd *ibpd,
			     struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = ibpd;
	qp = pvo_qp_create(ibpd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

/*
 * ibv_create_qp_ex: a PD, and optionally send_ops_flags (the ibv_wr_* API)
 * for the opcodes the device has for the QP type. Everything else (XRC,
 * RSS, TSO, create flags, other opcodes) is EOPNOTSUPP, as rdma-core
 * providers answer for what they lack.
 */
struct ibv_qp *pvo_create_qp_ex(struct ibv_context *ibctx,
				struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp_init_attr_ex a = *attr;
	struct ibv_qp *qp;

	if ((a.comp_mask & ~known) ||
	    ((a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a.create_flags) ||
	    ((a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (a.send_ops_flags & ~pvo_send_ops_supported(a.qp_type)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd ||
	    a.pd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}

	/* no create flags from here on: the command does not take the mask */
	a.comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = pvo_qp_create(ibctx, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

int pvo_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		 int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct ibv_query_qp cmd;
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (ret)
		return ret;

	/* the same capabilities create_qp reported */
	pvo_qp_caps(qp, &attr->cap);
	init_attr->cap = attr->cap;
	return 0;
}

/*
 * A QP that goes to RESET leaves no completion behind, as on mlx5 and
 * vmw_pvrdma: an application that resets a QP in error and connects it
 * again must not poll the flushes of its earlier life (rdma-core's tests
 * of ibv_rereg_mr do). Receives of a QP on an SRQ stay: their buffers
 * were the SRQ's, and the application still owns them.
 */
static void pvo_qp_clean_cqs(struct ibv_qp *ibqp)
{
	bool srq = ibqp->srq != NULL;

	if (ibqp->send_cq)
		pvo_cq_clean(to_pvo_cq(ibqp->send_cq), ibqp->qp_num,
			     srq && ibqp->recv_cq == ibqp->send_cq);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq && !srq)
		pvo_cq_clean(to_pvo_cq(ibqp->recv_cq), ibqp->qp_num, false);
}

int pvo_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask)
{
	struct ibv_modify_qp cmd;
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (!ret && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET)
		pvo_qp_clean_cqs(ibqp);
	return ret;
}

int pvo_destroy_qp(struct ibv_qp *ibqp)
{
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	int ret;

	/* The device lets go of the rings before the kernel returns. */
	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	if (ibqp->send_cq)
		pvo_cq_clean(to_pvo_cq(ibqp->send_cq), ibqp->qp_num, false);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		pvo_cq_clean(to_pvo_cq(ibqp->recv_cq), ibqp->qp_num, false);
	pvo_qp_free_rings(qp);
	free(qp);
	return 0;
}
