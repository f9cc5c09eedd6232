// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: shared receive queues. An SRQ is a ring of receive WQEs
 * (user rings from the provider, kernel rings from the driver) that QPs
 * created with it consume. The limit event is armed with modify_srq and
 * arrives on the event queue. User SRQs can be resized (modify_srq with
 * IB_SRQ_MAX_WR): the device moves the posted receives to the new ring.
 */

#include <rdma/ib_user_verbs.h>

#include "rdma/pvrdma_overlay-abi.h"
#include "pvo_verbs.h"

static int pvo_srq_ring_user(struct pvo_dev *dev, struct pvo_srq *srq,
			     const struct ib_srq_attr *attr,
			     struct ib_udata *udata)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct pvo_create_srq ucmd;
	int err;

	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.wqe_shift != pvo_recv_wqe_shift(attr->max_sge) ||
	    ucmd.entries < attr->max_wr) {
		ibdev_dbg(ibdev, "create_srq: %u entries of 2^%u bytes do not fit %u WRs of %u SGEs\n",
			  ucmd.entries, ucmd.wqe_shift, attr->max_wr,
			  attr->max_sge);
		return -EINVAL;
	}
	return pvo_ring_init_user(dev, ibdev, &srq->ring, ucmd.buf_addr,
				  ucmd.buf_size, ucmd.entries,
				  ucmd.wqe_shift);
}

static void pvo_srq_free(struct pvo_dev *dev, struct pvo_srq *srq)
{
	int err;

	err = pvo_ctrl_handle_cmd(dev, PVO_CMD_DESTROY_SRQ, srq->ctx,
				  srq->handle);
	if (pvo_destroy_failed_in_use(err)) {
		dev_err(&dev->vdev->dev,
			"DESTROY_SRQ %u (context %u) failed: %d; its ring stays allocated because the back-end may still use it\n",
			srq->handle, srq->ctx, err);
		return;
	}
	pvo_ring_free(dev, &srq->ring);
}

int pvo_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata)
{
	struct ib_device *ibdev = ibsrq->device;
	const struct ib_device_attr *dattr = &ibdev->attrs;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	struct pvo_pd *pd = to_pvo_pd(ibsrq->pd);
	struct ib_srq_attr *attr = &init->attr;
	struct pvo_cmd_create_srq cmd = {};
	struct pvo_resp_create_srq resp;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > dattr->max_srq_wr ||
	    attr->max_sge > dattr->max_srq_sge ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;

	srq->ctx = pd->ctx;
	srq->kernel = !udata;
	srq->max_sge = attr->max_sge;
	spin_lock_init(&srq->lock);
	if (udata)
		err = pvo_srq_ring_user(dev, srq, attr, udata);
	else
		err = pvo_ring_init_kernel(dev, &srq->ring,
					   roundup_pow_of_two(attr->max_wr),
					   pvo_recv_wqe_shift(attr->max_sge));
	if (err)
		return err;

	cmd.pd = cpu_to_le32(pd->pdn);
	cmd.entries = cpu_to_le32(srq->ring.entries);
	cmd.max_sge = cpu_to_le32(attr->max_sge);
	cmd.srq_limit = cpu_to_le32(attr->srq_limit);
	cmd.wqe_shift = srq->ring.shift;
	/* a provider that reads the response flags rings SRQ doorbells */
	if (udata && udata->outlen >= offsetofend(struct pvo_create_srq_resp,
						  flags))
		cmd.flags = PVO_SRQ_F_DOORBELL;
	pvo_pdir_describe(&srq->ring.pdir, &cmd.ring);
	memset(&resp, 0, sizeof(resp));
	err = pvo_ctrl_cmd(dev, PVO_CMD_CREATE_SRQ, srq->ctx, &cmd,
			   sizeof(cmd), &resp, sizeof(resp));
	if (err == -EINVAL && cmd.flags) {
		/* a back-end that predates SRQ doorbells: without them */
		cmd.flags = 0;
		err = pvo_ctrl_cmd(dev, PVO_CMD_CREATE_SRQ, srq->ctx, &cmd,
				   sizeof(cmd), &resp,
				   PVO_RESP_CREATE_SRQ_MIN);
	}
	if (err) {
		pvo_ring_free(dev, &srq->ring);
		return err;
	}
	srq->handle = le32_to_cpu(resp.srq);
	srq->srqn = le32_to_cpu(resp.srqn);
	attr->max_wr = srq->ring.entries;

	err = xa_insert(&dev->srqs, srq->handle, srq, GFP_KERNEL);
	if (err) {
		dev_err(&dev->vdev->dev,
			"CREATE_SRQ returned handle %u, which is in use: %d\n",
			srq->handle, err);
		goto err_destroy;
	}
	if (udata) {
		struct pvo_create_srq_resp uresp = {
			.srq = srq->handle,
			.srqn = srq->srqn,
			.flags = le32_to_cpu(resp.flags),
		};

		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err) {
			xa_erase(&dev->srqs, srq->handle);
			goto err_destroy;
		}
	}
	return 0;

err_destroy:
	pvo_srq_free(dev, srq);
	return err;
}

/*
 * A user SRQ moves to the ring the provider allocated; the old ring is
 * released once the device reads only the new one. Kernel SRQs post under
 * a spinlock that a command cannot span: not resized.
 */
static int pvo_srq_resize(struct pvo_dev *dev, struct pvo_srq *srq,
			  u32 max_wr, struct ib_udata *udata)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct pvo_cmd_resize_srq cmd = {};
	struct pvo_modify_srq ucmd;
	struct pvo_ring ring;
	int err;

	if (!udata || srq->kernel)
		return -EOPNOTSUPP;
	if (!max_wr || max_wr > ibdev->attrs.max_srq_wr ||
	    udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.entries < max_wr)
		return -EINVAL;
	err = pvo_ring_init_user(dev, ibdev, &ring, ucmd.buf_addr,
				 ucmd.buf_size, ucmd.entries, srq->ring.shift);
	if (err)
		return err;
	cmd.srq = cpu_to_le32(srq->handle);
	cmd.entries = cpu_to_le32(ucmd.entries);
	cmd.wqe_shift = srq->ring.shift;
	pvo_pdir_describe(&ring.pdir, &cmd.ring);
	err = pvo_ctrl_cmd(dev, PVO_CMD_RESIZE_SRQ, srq->ctx, &cmd, sizeof(cmd),
			   NULL, 0);
	if (err) {
		pvo_ring_free(dev, &ring);
		return err;
	}
	pvo_ring_free(dev, &srq->ring);
	srq->ring = ring;
	return 0;
}

int pvo_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask attr_mask, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibsrq->device);
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	struct pvo_cmd_modify_srq cmd = {
		.srq = cpu_to_le32(srq->handle),
		.attr_mask = cpu_to_le32(PVO_SRQ_LIMIT),
		.srq_limit = cpu_to_le32(attr->srq_limit),
	};
	int err;

	if (attr_mask & ~(IB_SRQ_LIMIT | IB_SRQ_MAX_WR))
		return -EOPNOTSUPP;
	if (attr_mask & IB_SRQ_MAX_WR) {
		err = pvo_srq_resize(dev, srq, attr->max_wr, udata);
		if (err)
			return err;
	} else if (udata && udata->inlen &&
		   !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		return -EOPNOTSUPP;
	}
	if (!(attr_mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->ring.entries)
		return -EINVAL;
	return pvo_ctrl_cmd(dev, PVO_CMD_MODIFY_SRQ, srq->ctx, &cmd,
			    sizeof(cmd), NULL, 0);
}

int pvo_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct pvo_srq *srq = to_pvo_srq(ibsrq);
	struct pvo_cmd_handle cmd = { .handle = cpu_to_le32(srq->handle) };
	struct pvo_resp_query_srq r;
	int err;

	err = pvo_ctrl_cmd(to_pvo_dev(ibsrq->device), PVO_CMD_QUERY_SRQ,
			   srq->ctx, &cmd, sizeof(cmd), &r, sizeof(r));
	if (err)
		return err;
	attr->max_wr = le32_to_cpu(r.max_wr);
	attr->max_sge = le32_to_cpu(r.max_sge);
	attr->srq_limit = le32_to_cpu(r.srq_limit);
	return 0;
}

int pvo_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibsrq->device);
	struct pvo_srq *srq = to_pvo_srq(ibsrq);

	xa_erase(&dev->srqs, srq->handle);
	pvo_event_sync(dev);
	pvo_srq_free(dev, srq);
	return 0;
}

/* Event queue: the SRQ fell below its armed limit (the device disarms). */
void pvo_srq_event(struct pvo_dev *dev, u32 type, u32 handle)
{
	struct pvo_srq *srq = xa_load(&dev->srqs, handle);
	struct ib_srq *ibsrq;
	struct ib_event ev;

	if (!srq) {
		dev_dbg_ratelimited(&dev->vdev->dev,
				    "event %u for unknown SRQ %u dropped\n",
				    type, handle);
		return;
	}
	ibsrq = &srq->ibsrq;
	if (ibsrq->event_handler) {
		ev.device = ibsrq->device;
		ev.element.srq = ibsrq;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		ibsrq->event_handler(&ev, ibsrq->srq_context);
	}
}
