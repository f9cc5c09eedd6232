// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: memory windows, for user space. Applications bind and
 * invalidate them with work requests on their own send queues, which the
 * device runs and checks, so the driver only makes and frees them.
 */

#include "pvo_verbs.h"

int pvo_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibmw->device);
	struct pvo_pd *pd = to_pvo_pd(ibmw->pd);
	struct pvo_mw *mw = to_pvo_mw(ibmw);
	struct pvo_cmd_alloc_mw cmd = {};
	struct pvo_resp_alloc_mw resp;
	int err;

	/* binds come from user rings: a kernel PD has no use for one */
	if (!udata || pd->ctx == PVO_CTX_KERNEL)
		return -EOPNOTSUPP;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	cmd.pd = cpu_to_le32(pd->pdn);
	cmd.type = cpu_to_le32(ibmw->type == IB_MW_TYPE_1 ? 1 : 2);
	err = pvo_ctrl_cmd(dev, PVO_CMD_ALLOC_MW, pd->ctx, &cmd, sizeof(cmd),
			   &resp, sizeof(resp));
	if (err)
		return err;
	mw->handle = le32_to_cpu(resp.mw);
	mw->ctx = pd->ctx;
	ibmw->rkey = le32_to_cpu(resp.rkey);
	return 0;
}

/* A window owns no guest memory: whatever the device says, it is gone. */
int pvo_dealloc_mw(struct ib_mw *ibmw)
{
	struct pvo_dev *dev = to_pvo_dev(ibmw->device);
	struct pvo_mw *mw = to_pvo_mw(ibmw);
	int err;

	err = pvo_ctrl_handle_cmd(dev, PVO_CMD_DEALLOC_MW, mw->ctx, mw->handle);
	if (err && err != -ENODEV)
		dev_warn(&dev->vdev->dev,
			 "DEALLOC_MW %u (context %u) failed: %d\n",
			 mw->handle, mw->ctx, err);
	return 0;
}
