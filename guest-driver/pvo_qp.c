// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: queue pairs. RC, UC and UD QPs for user space and the
 * kernel, and the one GSI QP (QPN 1) that ib_mad creates for RoCE. User
 * QPs bring their rings from the provider (pvo_create_qp udata); kernel
 * QPs get rings from the driver, and pvo_post.c posts to them. The device
 * keeps the QP state machine; the driver checks transitions first and
 * tracks the state for the kernel post paths.
 */

#include <rdma/ib_user_verbs.h>

#include "rdma/pvrdma_overlay-abi.h"
#include "pvo_verbs.h"

/* The attr_mask bits the device defines (IB_QP_STATE .. IB_QP_DEST_QPN). */
#define PVO_QP_ATTR_MASK	((PVO_QP_DEST_QPN << 1) - 1)

static_assert(PVO_QP_DEST_QPN == IB_QP_DEST_QPN);
static_assert(PVO_QP_AV == IB_QP_AV && PVO_QP_CAP == IB_QP_CAP);
static_assert(PVO_QPT_GSI == IB_QPT_GSI && PVO_QPT_RC == IB_QPT_RC &&
	      PVO_QPT_UC == IB_QPT_UC && PVO_QPT_UD == IB_QPT_UD);
static_assert(PVO_QPS_ERR == IB_QPS_ERR && PVO_QPS_SQE == IB_QPS_SQE);

/* Check requested capabilities against the device's limits. */
static int pvo_qp_check_cap(struct ib_device *ibdev,
			    const struct ib_qp_cap *cap, bool srq)
{
	const struct ib_device_attr *a = &ibdev->attrs;
	u32 max_inline = to_pvo_ibdev(ibdev)->max_inline;

	if (cap->max_send_wr > a->max_qp_wr ||
	    cap->max_send_sge > a->max_send_sge ||
	    cap->max_inline_data > max_inline ||
	    (!srq && (cap->max_recv_wr > a->max_qp_wr ||
		      cap->max_recv_sge > a->max_recv_sge))) {
		ibdev_dbg(ibdev, "create_qp: caps %u/%u WRs, %u/%u SGEs, %u inline exceed the device's %d WRs, %d/%d SGEs, %u inline\n",
			  cap->max_send_wr, cap->max_recv_wr,
			  cap->max_send_sge, cap->max_recv_sge,
			  cap->max_inline_data, a->max_qp_wr,
			  a->max_send_sge, a->max_recv_sge, max_inline);
		return -EINVAL;
	}
	return 0;
}

static int pvo_qp_rings_kernel(struct pvo_dev *dev, struct pvo_qp *qp,
			       struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 max_wr = qp->ibqp.device->attrs.max_qp_wr;
	u32 sq_entries, rq_entries;
	int err;

	sq_entries = roundup_pow_of_two(max(cap->max_send_wr, 1U));
	if (sq_entries > max_wr)
		return -EINVAL;
	err = pvo_ring_init_kernel(dev, &qp->sq, sq_entries,
				   pvo_send_wqe_shift(cap->max_send_sge,
						      cap->max_inline_data));
	if (err)
		return err;
	cap->max_send_wr = sq_entries;
	if (qp->has_srq)
		return 0;

	rq_entries = roundup_pow_of_two(max(cap->max_recv_wr, 1U));
	if (rq_entries > max_wr) {
		pvo_ring_free(dev, &qp->sq);
		return -EINVAL;
	}
	err = pvo_ring_init_kernel(dev, &qp->rq, rq_entries,
				   pvo_recv_wqe_shift(cap->max_recv_sge));
	if (err) {
		pvo_ring_free(dev, &qp->sq);
		return err;
	}
	cap->max_recv_wr = rq_entries;
	return 0;
}

/* The provider's rings: strides and sizes must match the capabilities. */
static int pvo_qp_rings_user(struct pvo_dev *dev, struct pvo_qp *qp,
			     struct ib_qp_init_attr *init,
			     struct ib_udata *udata)
{
	struct ib_device *ibdev = qp->ibqp.device;
	struct ib_qp_cap *cap = &init->cap;
	struct pvo_create_qp ucmd;
	int err;

	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;

	if (ucmd.sq_wqe_shift != pvo_send_wqe_shift(cap->max_send_sge,
						    cap->max_inline_data) ||
	    ucmd.sq_entries < max(cap->max_send_wr, 1U)) {
		ibdev_dbg(ibdev, "create_qp: SQ of %u entries of 2^%u bytes does not fit %u WRs, %u SGEs, %u inline bytes\n",
			  ucmd.sq_entries, ucmd.sq_wqe_shift,
			  cap->max_send_wr, cap->max_send_sge,
			  cap->max_inline_data);
		return -EINVAL;
	}
	if (qp->has_srq ? ucmd.rq_entries || ucmd.rq_buf_addr :
	    ucmd.rq_wqe_shift != pvo_recv_wqe_shift(cap->max_recv_sge) ||
	    ucmd.rq_entries < max(cap->max_recv_wr, 1U)) {
		ibdev_dbg(ibdev, "create_qp: RQ of %u entries of 2^%u bytes does not fit %u WRs, %u SGEs%s\n",
			  ucmd.rq_entries, ucmd.rq_wqe_shift,
			  cap->max_recv_wr, cap->max_recv_sge,
			  qp->has_srq ? " (the QP has an SRQ: no RQ)" : "");
		return -EINVAL;
	}

	err = pvo_ring_init_user(dev, ibdev, &qp->sq, ucmd.sq_buf_addr,
				 ucmd.sq_buf_size, ucmd.sq_entries,
				 ucmd.sq_wqe_shift);
	if (err)
		return err;
	cap->max_send_wr = ucmd.sq_entries;
	if (qp->has_srq)
		return 0;

	err = pvo_ring_init_user(dev, ibdev, &qp->rq, ucmd.rq_buf_addr,
				 ucmd.rq_buf_size, ucmd.rq_entries,
				 ucmd.rq_wqe_shift);
	if (err) {
		pvo_ring_free(dev, &qp->sq);
		return err;
	}
	cap->max_recv_wr = ucmd.rq_entries;
	return 0;
}

static void pvo_qp_free_rings(struct pvo_dev *dev, struct pvo_qp *qp)
{
	pvo_ring_free(dev, &qp->rq);
	pvo_ring_free(dev, &qp->sq);
}

/* DESTROY_QP; false if the device may still use the QP's rings. */
static bool pvo_qp_destroy_cmd(struct pvo_dev *dev, struct pvo_qp *qp)
{
	int err;

	err = pvo_ctrl_handle_cmd(dev, PVO_CMD_DESTROY_QP, qp->ctx,
				  qp->handle);
	if (!pvo_destroy_failed_in_use(err))
		return true;
	dev_err(&dev->vdev->dev,
		"DESTROY_QP %u (QPN %u, context %u) failed: %d; its rings stay allocated because the back-end may still use them\n",
		qp->handle, qp->ibqp.qp_num, qp->ctx, err);
	return false;
}

static int pvo_qp_type(const struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		return init->qp_type;
	case IB_QPT_GSI:
		/* ib_mad's QP1; user space has no business here. */
		return udata ? -EINVAL : IB_QPT_GSI;
	default:
		return -EOPNOTSUPP;
	}
}

int pvo_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata)
{
	struct ib_device *ibdev = ibqp->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct pvo_pd *pd = to_pvo_pd(ibqp->pd);
	struct pvo_cmd_create_qp cmd = {};
	struct pvo_resp_create_qp resp;
	int type, err;

	type = pvo_qp_type(init, udata);
	if (type < 0)
		return type;
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (init->srq && init->srq->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	err = pvo_qp_check_cap(ibdev, &init->cap, !!init->srq);
	if (err)
		return err;

	qp->ctx = pd->ctx;
	qp->kernel = !udata;
	qp->has_srq = !!init->srq;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);

	/* Each kernel QP may hold one slot of the kernel's record ring. */
	if (qp->kernel &&
	    atomic_inc_return(&dev->kdb.nqps) > PVO_DB_RING_ENTRIES) {
		err = -ENOSPC;
		goto err_count;
	}

	if (udata)
		err = pvo_qp_rings_user(dev, qp, init, udata);
	else
		err = pvo_qp_rings_kernel(dev, qp, init);
	if (err)
		goto err_count;
	qp->cap = init->cap;

	cmd.pd = cpu_to_le32(pd->pdn);
	cmd.send_cq = cpu_to_le32(to_pvo_cq(init->send_cq)->handle);
	cmd.recv_cq = cpu_to_le32(to_pvo_cq(init->recv_cq)->handle);
	cmd.srq = cpu_to_le32(init->srq ? to_pvo_srq(init->srq)->handle : 0);
	cmd.qp_type = type;
	cmd.sq_sig_all = qp->sq_sig_all;
	cmd.sq_wqe_shift = qp->sq.shift;
	cmd.rq_wqe_shift = qp->has_srq ?
			   pvo_recv_wqe_shift(init->cap.max_recv_sge) :
			   qp->rq.shift;
	cmd.sq_entries = cpu_to_le32(qp->sq.entries);
	cmd.rq_entries = cpu_to_le32(qp->rq.entries);
	cmd.max_send_sge = cpu_to_le32(init->cap.max_send_sge);
	cmd.max_recv_sge = cpu_to_le32(init->cap.max_recv_sge);
	cmd.max_inline_data = cpu_to_le32(init->cap.max_inline_data);
	pvo_pdir_describe(&qp->sq.pdir, &cmd.sq);
	if (!qp->has_srq)
		pvo_pdir_describe(&qp->rq.pdir, &cmd.rq);

	err = pvo_ctrl_cmd(dev, PVO_CMD_CREATE_QP, qp->ctx, &cmd, sizeof(cmd),
			   &resp, sizeof(resp));
	if (err)
		goto err_rings;
	qp->handle = le32_to_cpu(resp.qp);
	ibqp->qp_num = le32_to_cpu(resp.qpn);

	if (type == IB_QPT_GSI && ibqp->qp_num != 1) {
		dev_err(&dev->vdev->dev,
			"CREATE_QP gave the GSI QP number %u instead of 1\n",
			ibqp->qp_num);
		err = -EIO;
		goto err_destroy;
	}
	err = xa_insert(&dev->qps, qp->handle, qp, GFP_KERNEL);
	if (err)
		goto err_in_use;
	if (qp->kernel) {
		err = xa_insert(&dev->kqpns, ibqp->qp_num, qp, GFP_KERNEL);
		if (err) {
			xa_erase(&dev->qps, qp->handle);
			goto err_in_use;
		}
	}
	if (udata) {
		struct pvo_create_qp_resp uresp = {
			.qp = qp->handle,
			.qpn = ibqp->qp_num,
			.flags = le32_to_cpu(resp.flags),
		};

		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err) {
			xa_erase(&dev->qps, qp->handle);
			goto err_destroy;
		}
	}
	return 0;

err_in_use:
	dev_err(&dev->vdev->dev,
		"CREATE_QP returned handle %u / QPN %u, which is in use: %d\n",
		qp->handle, ibqp->qp_num, err);
err_destroy:
	if (!pvo_qp_destroy_cmd(dev, qp))
		goto err_count;		/* the rings stay with the device */
err_rings:
	pvo_qp_free_rings(dev, qp);
err_count:
	if (qp->kernel)
		atomic_dec(&dev->kdb.nqps);
	return err;
}

int pvo_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibqp->device);
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	bool freed;

	xa_erase(&dev->qps, qp->handle);
	if (qp->kernel)
		xa_erase(&dev->kqpns, ibqp->qp_num);
	pvo_event_sync(dev);

	freed = pvo_qp_destroy_cmd(dev, qp);
	if (qp->kernel) {
		/* Wait out pollers that found the QP, and drop its CQEs. */
		pvo_cq_scrub(to_pvo_cq(ibqp->send_cq), ibqp->qp_num);
		if (ibqp->recv_cq != ibqp->send_cq)
			pvo_cq_scrub(to_pvo_cq(ibqp->recv_cq), ibqp->qp_num);
		atomic_dec(&dev->kdb.nqps);
	}
	if (freed)
		pvo_qp_free_rings(dev, qp);
	return 0;
}

/* ib_core's address of a RoCE path -> the device's address vector. */
int pvo_av_from_ah_attr(struct ib_device *ibdev,
			const struct rdma_ah_attr *ah_attr, struct pvo_av *av)
{
	const struct ib_global_route *grh;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH)) {
		ibdev_dbg(ibdev, "address without a RoCE GRH (type %d)\n",
			  ah_attr->type);
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(ah_attr);
	if (grh->sgid_index > U8_MAX)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	ether_addr_copy(av->dmac, ah_attr->roce.dmac);
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	/* 20 bits on the wire; HCAs drop the rest (UCX passes ~0) */
	av->flow_label = cpu_to_le32(grh->flow_label & IB_GRH_FLOWLABEL_MASK);
	av->traffic_class = grh->traffic_class;
	av->sl = rdma_ah_get_sl(ah_attr);
	return 0;
}

static void pvo_av_to_ah_attr(const struct pvo_av *av,
			      struct rdma_ah_attr *ah_attr)
{
	union ib_gid dgid;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah_attr, 1);
	rdma_ah_set_sl(ah_attr, av->sl);
	memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(ah_attr, &dgid, le32_to_cpu(av->flow_label),
			av->sgid_index, av->hop_limit, av->traffic_class);
	ether_addr_copy(ah_attr->roce.dmac, av->dmac);
}

static int pvo_qp_attr_to_dev(struct ib_device *ibdev,
			      const struct ib_qp_attr *attr, int mask,
			      struct pvo_qp_attr *a)
{
	int err;

	a->qp_state = cpu_to_le32(attr->qp_state);
	a->cur_qp_state = cpu_to_le32(attr->cur_qp_state);
	a->path_mtu = cpu_to_le32(attr->path_mtu);
	a->qkey = cpu_to_le32(attr->qkey);
	a->rq_psn = cpu_to_le32(attr->rq_psn);
	a->sq_psn = cpu_to_le32(attr->sq_psn);
	a->dest_qp_num = cpu_to_le32(attr->dest_qp_num);
	a->qp_access_flags = cpu_to_le32(attr->qp_access_flags &
					 (PVO_ACCESS_LOCAL_WRITE |
					  PVO_ACCESS_REMOTE_WRITE |
					  PVO_ACCESS_REMOTE_READ |
					  PVO_ACCESS_REMOTE_ATOMIC));
	a->pkey_index = cpu_to_le16(attr->pkey_index);
	a->port_num = attr->port_num;
	a->max_rd_atomic = attr->max_rd_atomic;
	a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a->min_rnr_timer = attr->min_rnr_timer;
	a->timeout = attr->timeout;
	a->retry_cnt = attr->retry_cnt;
	a->rnr_retry = attr->rnr_retry;
	a->en_sqd_async_notify = attr->en_sqd_async_notify;
	a->max_send_wr = cpu_to_le32(attr->cap.max_send_wr);
	a->max_recv_wr = cpu_to_le32(attr->cap.max_recv_wr);
	a->max_send_sge = cpu_to_le32(attr->cap.max_send_sge);
	a->max_recv_sge = cpu_to_le32(attr->cap.max_recv_sge);
	a->max_inline_data = cpu_to_le32(attr->cap.max_inline_data);
	if (mask & IB_QP_AV) {
		err = pvo_av_from_ah_attr(ibdev, &attr->ah_attr, &a->av);
		if (err)
			return err;
	}
	return 0;
}

int pvo_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_udata *udata)
{
	struct ib_device *ibdev = ibqp->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct pvo_cmd_modify_qp cmd = {};
	enum ib_qp_state cur, next;
	int err;

	if (attr_mask & ~PVO_QP_ATTR_MASK)
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if ((attr_mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;

	mutex_lock(&qp->state_lock);
	cur = attr_mask & IB_QP_CUR_STATE ? attr->cur_qp_state :
					    READ_ONCE(qp->state);
	next = attr_mask & IB_QP_STATE ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, attr_mask)) {
		ibdev_dbg(ibdev, "modify_qp QPN %u: %d -> %d with mask 0x%x is not a valid transition\n",
			  ibqp->qp_num, cur, next, attr_mask);
		err = -EINVAL;
		goto out;
	}

	cmd.qp = cpu_to_le32(qp->handle);
	cmd.attr_mask = cpu_to_le32(attr_mask);
	err = pvo_qp_attr_to_dev(ibdev, attr, attr_mask, &cmd.attr);
	if (err)
		goto out;
	err = pvo_ctrl_cmd(dev, PVO_CMD_MODIFY_QP, qp->ctx, &cmd, sizeof(cmd),
			   NULL, 0);
	if (err) {
		ibdev_dbg(ibdev, "MODIFY_QP QPN %u %d -> %d mask 0x%x: %d\n",
			  ibqp->qp_num, cur, next, attr_mask, err);
		goto out;
	}
	WRITE_ONCE(qp->state, next);
	if (next == IB_QPS_RESET)
		WRITE_ONCE(qp->dev_err, false);
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

int pvo_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		 int attr_mask, struct ib_qp_init_attr *init)
{
	struct pvo_dev *dev = to_pvo_dev(ibqp->device);
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct pvo_cmd_handle cmd = { .handle = cpu_to_le32(qp->handle) };
	struct pvo_qp_attr r;
	int err;

	mutex_lock(&qp->state_lock);
	err = pvo_ctrl_cmd(dev, PVO_CMD_QUERY_QP, qp->ctx, &cmd, sizeof(cmd),
			   &r, sizeof(r));
	/* The back-end went away with every QP: this one is in error. */
	if (err && READ_ONCE(dev->ctrl.lost)) {
		memset(&r, 0, sizeof(r));
		r.qp_state = cpu_to_le32(IB_QPS_ERR);
		err = 0;
	}
	/* The device moves QPs to error on its own: catch up. */
	if (!err && le32_to_cpu(r.qp_state) <= IB_QPS_ERR)
		WRITE_ONCE(qp->state, le32_to_cpu(r.qp_state));
	mutex_unlock(&qp->state_lock);
	if (err)
		return err;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = le32_to_cpu(r.qp_state);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = le32_to_cpu(r.path_mtu);
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(r.qkey);
	attr->rq_psn = le32_to_cpu(r.rq_psn);
	attr->sq_psn = le32_to_cpu(r.sq_psn);
	attr->dest_qp_num = le32_to_cpu(r.dest_qp_num);
	attr->qp_access_flags = le32_to_cpu(r.qp_access_flags);
	attr->pkey_index = le16_to_cpu(r.pkey_index);
	attr->port_num = r.port_num;
	attr->max_rd_atomic = r.max_rd_atomic;
	attr->max_dest_rd_atomic = r.max_dest_rd_atomic;
	attr->min_rnr_timer = r.min_rnr_timer;
	attr->timeout = r.timeout;
	attr->retry_cnt = r.retry_cnt;
	attr->rnr_retry = r.rnr_retry;
	attr->sq_draining = r.sq_draining;
	attr->en_sqd_async_notify = r.en_sqd_async_notify;
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC)
		pvo_av_to_ah_attr(&r.av, &attr->ah_attr);
	attr->cap = qp->cap;

	memset(init, 0, sizeof(*init));
	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	init->qp_type = ibqp->qp_type;
	init->port_num = 1;
	return 0;
}

/* Event queue: an asynchronous event of a QP. */
void pvo_qp_event(struct pvo_dev *dev, u32 type, u32 handle)
{
	struct pvo_qp *qp = xa_load(&dev->qps, handle);
	struct ib_event ev;

	if (!qp) {
		dev_dbg_ratelimited(&dev->vdev->dev,
				    "event %u for unknown QP %u dropped\n",
				    type, handle);
		return;
	}
	switch (type) {
	case PVO_EV_QP_FATAL:
		ev.event = IB_EVENT_QP_FATAL;
		break;
	case PVO_EV_QP_REQ_ERR:
		ev.event = IB_EVENT_QP_REQ_ERR;
		break;
	case PVO_EV_QP_ACCESS_ERR:
		ev.event = IB_EVENT_QP_ACCESS_ERR;
		break;
	case PVO_EV_QP_LAST_WQE:
		ev.event = IB_EVENT_QP_LAST_WQE_REACHED;
		break;
	case PVO_EV_COMM_EST:
		ev.event = IB_EVENT_COMM_EST;
		break;
	case PVO_EV_SQ_DRAINED:
		ev.event = IB_EVENT_SQ_DRAINED;
		break;
	default:
		return;
	}
	if (ev.event == IB_EVENT_QP_FATAL || ev.event == IB_EVENT_QP_REQ_ERR ||
	    ev.event == IB_EVENT_QP_ACCESS_ERR)
		WRITE_ONCE(qp->dev_err, true);

	if (qp->ibqp.event_handler) {
		ev.device = qp->ibqp.device;
		ev.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

/* UD multicast: the device delivers a group's datagrams to its members. */
static int pvo_mcast_cmd(struct ib_qp *ibqp, union ib_gid *gid, u16 opcode)
{
	struct pvo_qp *qp = to_pvo_qp(ibqp);
	struct pvo_cmd_mcast cmd = { .qp = cpu_to_le32(qp->handle) };

	memcpy(cmd.gid, gid->raw, sizeof(cmd.gid));
	return pvo_ctrl_cmd(to_pvo_dev(ibqp->device), opcode, qp->ctx, &cmd,
			    sizeof(cmd), NULL, 0);
}

int pvo_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return pvo_mcast_cmd(ibqp, gid, PVO_CMD_ATTACH_MCAST);
}

int pvo_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return pvo_mcast_cmd(ibqp, gid, PVO_CMD_DETACH_MCAST);
}
