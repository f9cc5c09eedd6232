// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: completion queues. A CQ is a ring of struct pvo_cqe the
 * device produces and the guest consumes. User CQs live in provider memory
 * and are polled and armed in user space; kernel CQs live in driver pages
 * and are polled and armed here. Completion events arrive on the event
 * queue and go to the CQ's comp_handler (uverbs forwards them to
 * completion channels).
 */

#include <linux/log2.h>
#include <rdma/ib_user_verbs.h>

#include "rdma/pvrdma_overlay-abi.h"
#include "pvo_verbs.h"

#define PVO_CQE_SHIFT		6	/* 64-byte CQEs */
/* No QP has this number (QPNs have 24 bits): a CQE of a destroyed QP. */
#define PVO_CQE_QPN_STALE	0xffffffffu

static_assert(sizeof(struct pvo_cqe) == 1 << PVO_CQE_SHIFT);

static void pvo_cq_free(struct pvo_dev *dev, struct pvo_cq *cq)
{
	int err;

	err = pvo_ctrl_handle_cmd(dev, PVO_CMD_DESTROY_CQ, cq->ctx,
				  cq->handle);
	if (pvo_destroy_failed_in_use(err)) {
		dev_err(&dev->vdev->dev,
			"DESTROY_CQ %u (context %u) failed: %d; its ring stays allocated because the back-end may still write to it\n",
			cq->handle, cq->ctx, err);
		return;
	}
	pvo_ring_free(dev, &cq->ring);
}

#if PVO_API_6_11
int pvo_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
#else
int pvo_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata)
{
#endif
	struct ib_device *ibdev = ibcq->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	u32 max_cqe = ibdev->attrs.max_cqe;
	struct pvo_cmd_create_cq cmd = {};
	struct pvo_resp_create_cq resp;
	u32 entries;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > max_cqe)
		return -EINVAL;

	spin_lock_init(&cq->lock);
	cq->ctx = pvo_udata_ctx(udata);
	if (udata) {
		struct pvo_create_cq ucmd = {};

		/* flags and after are optional (older providers) */
		if (udata->inlen < offsetof(struct pvo_create_cq, flags))
			return -EINVAL;
		err = ib_copy_from_udata(&ucmd, udata,
					 min(udata->inlen, sizeof(ucmd)));
		if (err)
			return err;
		if (ucmd.flags & ~PVO_CREATE_CQ_NO_EVENTS || ucmd.reserved)
			return -EINVAL;
		if (ucmd.flags & PVO_CREATE_CQ_NO_EVENTS)
			cmd.flags = cpu_to_le32(PVO_CQ_F_NO_EVENTS);
		entries = ucmd.entries;
		if (entries < attr->cqe || entries > max_cqe) {
			ibdev_dbg(ibdev, "create_cq: %u ring entries for %u CQEs (device max %u)\n",
				  entries, attr->cqe, max_cqe);
			return -EINVAL;
		}
		err = pvo_ring_init_user(dev, ibdev, &cq->ring, ucmd.buf_addr,
					 ucmd.buf_size, entries,
					 PVO_CQE_SHIFT);
	} else {
		cq->kernel = true;
		entries = roundup_pow_of_two(attr->cqe);
		if (entries > max_cqe)
			return -EINVAL;
		err = pvo_ring_init_kernel(dev, &cq->ring, entries,
					   PVO_CQE_SHIFT);
	}
	if (err)
		return err;

	cmd.entries = cpu_to_le32(entries);
	pvo_pdir_describe(&cq->ring.pdir, &cmd.ring);
	err = pvo_ctrl_cmd(dev, PVO_CMD_CREATE_CQ, cq->ctx, &cmd, sizeof(cmd),
			   &resp, sizeof(resp));
	if (err) {
		pvo_ring_free(dev, &cq->ring);
		return err;
	}
	cq->handle = le32_to_cpu(resp.cq);
	ibcq->cqe = entries;

	err = xa_insert(&dev->cqs, cq->handle, cq, GFP_KERNEL);
	if (err) {
		dev_err(&dev->vdev->dev,
			"CREATE_CQ returned handle %u, which is in use: %d\n",
			cq->handle, err);
		goto err_destroy;
	}
	if (udata) {
		struct pvo_create_cq_resp uresp = { .cq = cq->handle };

		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase(&dev->cqs, cq->handle);
err_destroy:
	pvo_cq_free(dev, cq);
	return err;
}

/*
 * User CQs only: the provider hands over a new ring; the device copies
 * what is outstanding into it and writes only there from then on, so the
 * old ring's pages may go once the command has completed. Kernel CQs are
 * polled under a spinlock that cannot cover the command.
 */
int pvo_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct ib_device *ibdev = ibcq->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	struct pvo_cmd_resize_cq cmd = {};
	struct pvo_resize_cq ucmd = {};
	struct pvo_ring ring;
	int err;

	if (!udata || cq->kernel)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > ibdev->attrs.max_cqe ||
	    udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.entries < cqe || ucmd.entries > ibdev->attrs.max_cqe)
		return -EINVAL;
	err = pvo_ring_init_user(dev, ibdev, &ring, ucmd.buf_addr,
				 ucmd.buf_size, ucmd.entries, PVO_CQE_SHIFT);
	if (err)
		return err;
	cmd.cq = cpu_to_le32(cq->handle);
	cmd.entries = cpu_to_le32(ucmd.entries);
	pvo_pdir_describe(&ring.pdir, &cmd.ring);
	err = pvo_ctrl_cmd(dev, PVO_CMD_RESIZE_CQ, cq->ctx, &cmd, sizeof(cmd),
			   NULL, 0);
	if (err) {
		pvo_ring_free(dev, &ring);
		return err;
	}
	pvo_ring_free(dev, &cq->ring);
	cq->ring = ring;
	ibcq->cqe = ucmd.entries;
	return 0;
}

int pvo_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibcq->device);
	struct pvo_cq *cq = to_pvo_cq(ibcq);

	xa_erase(&dev->cqs, cq->handle);
	pvo_event_sync(dev);
	pvo_cq_free(dev, cq);
	return 0;
}

/* Event queue: completion on an armed CQ, or a CQ overrun. */
void pvo_cq_event(struct pvo_dev *dev, u32 type, u32 handle)
{
	struct pvo_cq *cq = xa_load(&dev->cqs, handle);
	struct ib_cq *ibcq;
	struct ib_event ev;

	if (!cq) {
		/* Raced with destroy_cq: nobody waits for it any more. */
		dev_dbg_ratelimited(&dev->vdev->dev,
				    "event %u for unknown CQ %u dropped\n",
				    type, handle);
		return;
	}
	ibcq = &cq->ibcq;
	if (type == PVO_EV_CQ_COMP) {
		if (ibcq->comp_handler)
			ibcq->comp_handler(ibcq, ibcq->cq_context);
		return;
	}

	dev_err_ratelimited(&dev->vdev->dev,
			    "CQ %u overran (more completions than its %d entries); its QPs are in error\n",
			    handle, ibcq->cqe);
	if (ibcq->event_handler) {
		ev.device = ibcq->device;
		ev.element.cq = ibcq;
		ev.event = IB_EVENT_CQ_ERR;
		ibcq->event_handler(&ev, ibcq->cq_context);
	}
}

static enum ib_wc_status pvo_wc_status(u8 status)
{
	switch (status) {
	case PVO_WC_SUCCESS:
		return IB_WC_SUCCESS;
	case PVO_WC_LOC_LEN_ERR:
		return IB_WC_LOC_LEN_ERR;
	case PVO_WC_LOC_QP_OP_ERR:
		return IB_WC_LOC_QP_OP_ERR;
	case PVO_WC_LOC_PROT_ERR:
		return IB_WC_LOC_PROT_ERR;
	case PVO_WC_WR_FLUSH_ERR:
		return IB_WC_WR_FLUSH_ERR;
	case PVO_WC_BAD_RESP_ERR:
		return IB_WC_BAD_RESP_ERR;
	case PVO_WC_LOC_ACCESS_ERR:
		return IB_WC_LOC_ACCESS_ERR;
	case PVO_WC_REM_INV_REQ_ERR:
		return IB_WC_REM_INV_REQ_ERR;
	case PVO_WC_REM_ACCESS_ERR:
		return IB_WC_REM_ACCESS_ERR;
	case PVO_WC_REM_OP_ERR:
		return IB_WC_REM_OP_ERR;
	case PVO_WC_RETRY_EXC_ERR:
		return IB_WC_RETRY_EXC_ERR;
	case PVO_WC_RNR_RETRY_EXC_ERR:
		return IB_WC_RNR_RETRY_EXC_ERR;
	case PVO_WC_FATAL_ERR:
		return IB_WC_FATAL_ERR;
	default:
		return IB_WC_GENERAL_ERR;
	}
}

static enum ib_wc_opcode pvo_wc_opcode(u8 opcode)
{
	switch (opcode) {
	case PVO_WC_SEND:
		return IB_WC_SEND;
	case PVO_WC_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case PVO_WC_RDMA_READ:
		return IB_WC_RDMA_READ;
	case PVO_WC_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case PVO_WC_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case PVO_WC_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case PVO_WC_REG_MR:
		return IB_WC_REG_MR;
	case PVO_WC_RECV_RDMA_WITH_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	case PVO_WC_RECV:
	default:
		return IB_WC_RECV;
	}
}

/* Fill @wc from @cqe; false for a CQE of a QP that is gone. */
static bool pvo_cqe_to_wc(struct pvo_dev *dev, const struct pvo_cqe *cqe,
			  struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn);
	struct pvo_qp *qp;

	qp = qpn == PVO_CQE_QPN_STALE ? NULL : xa_load(&dev->kqpns, qpn);
	if (!qp)
		return false;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(cqe->wr_id);
	wc->status = pvo_wc_status(cqe->status);
	wc->opcode = pvo_wc_opcode(cqe->opcode);
	wc->vendor_err = le32_to_cpu(cqe->vendor_err);
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(cqe->src_qp) & 0xffffff;
	wc->pkey_index = le16_to_cpu(cqe->pkey_index);
	wc->sl = cqe->sl;
	wc->port_num = 1;
	/* An RC error completion: the device moved the QP to ERR. */
	if (wc->status != IB_WC_SUCCESS && qp->ibqp.qp_type == IB_QPT_RC)
		WRITE_ONCE(qp->dev_err, true);
	if (cqe->flags & PVO_WC_F_IMM) {
		wc->ex.imm_data = cqe->imm_data;
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->flags & PVO_WC_F_INV) {
		wc->ex.invalidate_rkey = le32_to_cpu((__force __le32)cqe->imm_data);
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (cqe->flags & PVO_WC_F_GRH) {
		/* ib_init_ah_attr_from_wc() answers MADs with these. */
		wc->wc_flags |= IB_WC_GRH;
		if (cqe->network_hdr_type == PVO_NET_IPV4) {
			wc->network_hdr_type = RDMA_NETWORK_IPV4;
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		} else if (cqe->network_hdr_type == PVO_NET_IPV6) {
			wc->network_hdr_type = RDMA_NETWORK_IPV6;
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		}
		if (qp->ibqp.qp_type == IB_QPT_UD ||
		    qp->ibqp.qp_type == IB_QPT_GSI) {
			ether_addr_copy(wc->smac, cqe->smac);
			wc->wc_flags |= IB_WC_WITH_SMAC;
		}
	}
	return true;
}

int pvo_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct pvo_dev *dev = to_pvo_dev(ibcq->device);
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	struct pvo_ring *ring = &cq->ring;
	struct pvo_ring_hdr *hdr = ring->hdr;
	unsigned long flags;
	u32 prod, cons, start;
	int n = 0;

	/* User CQs are polled by the provider, in user space. */
	if (!cq->kernel)
		return -EOPNOTSUPP;

	spin_lock_irqsave(&cq->lock, flags);
	cons = pvo_ring_own(&hdr->cons);
	prod = pvo_ring_peer(&hdr->prod);
	if (unlikely(prod - cons > ring->entries)) {
		dev_err_ratelimited(&dev->vdev->dev,
				    "CQ %u: the device produced past the ring (prod %u cons %u entries %u)\n",
				    cq->handle, prod, cons, ring->entries);
		prod = cons + ring->entries;
	}
	start = cons;
	while (n < num_entries && cons != prod) {
		if (pvo_cqe_to_wc(dev, pvo_ring_entry(ring, cons), &wc[n]))
			n++;
		cons++;
	}
	if (cons != start)
		pvo_ring_release(&hdr->cons, cons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * Arm, then look again: the device exchanges arm with 0 after publishing
 * a CQE, so a CQE that came before the arm is seen here instead.
 */
int pvo_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	struct pvo_ring_hdr *hdr = cq->ring.hdr;
	u32 *arm;

	if (!cq->kernel)
		return -EOPNOTSUPP;

	arm = (__force u32 *)&hdr->arm;
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED)
		/* An armed NEXT already covers solicited completions. */
		cmpxchg(arm, 0, (__force u32)cpu_to_le32(PVO_CQ_ARM_SOLICITED));
	else
		xchg(arm, (__force u32)cpu_to_le32(PVO_CQ_ARM_NEXT));
	/* Full barrier: the arm store before the prod load. */
	smp_mb();

	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    le32_to_cpu(READ_ONCE(hdr->prod)) !=
	    le32_to_cpu(READ_ONCE(hdr->cons)))
		return 1;
	return 0;
}

/*
 * A kernel QP is being destroyed: its CQEs still in the ring must not be
 * reported with a dangling QP, nor with a later QP that reuses its number.
 */
void pvo_cq_scrub(struct pvo_cq *cq, u32 qpn)
{
	struct pvo_ring *ring = &cq->ring;
	struct pvo_cqe *cqe;
	unsigned long flags;
	u32 cons, n, i;

	spin_lock_irqsave(&cq->lock, flags);
	cons = pvo_ring_own(&ring->hdr->cons);
	n = min(pvo_ring_peer(&ring->hdr->prod) - cons, ring->entries);
	for (i = 0; i < n; i++) {
		cqe = pvo_ring_entry(ring, cons + i);
		if (le32_to_cpu(cqe->qpn) == qpn)
			cqe->qpn = cpu_to_le32(PVO_CQE_QPN_STALE);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}
