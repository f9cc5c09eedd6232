// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: memory regions. A user MR is its pinned pages, described
 * to the device by a page directory; the device checks every access
 * against [iova, iova + length) and the access flags, and lkey == rkey.
 * Kernel consumers use the local DMA lkey: DMA MRs get that key and no
 * rkey (remote access to all of guest memory is refused). Kernel ULPs
 * that expose memory to peers use fast-reg MRs: ib_alloc_mr() makes an
 * invalid MR with a page list the device reads when an IB_WR_REG_MR
 * work request (pvo_post.c) gives it its pages, range and key.
 */

#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "pvo_verbs.h"

#define PVO_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)
#define PVO_MR_REMOTE	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_ATOMIC)

/*
 * Access flags the device understands; the optional range (relaxed
 * ordering) may be ignored, and IB_ACCESS_HUGETLB is only a hint.
 * On-demand paging and zero-based MRs are not supported.
 */
int pvo_mr_access(struct ib_device *ibdev, int access)
{
	int ignored = IB_ACCESS_OPTIONAL | IB_ACCESS_HUGETLB;

	int flags = 0;

	if (access & ~(PVO_MR_ACCESS | ignored)) {
		ibdev_dbg(ibdev, "MR access flags 0x%x not supported\n",
			  access & ~(PVO_MR_ACCESS | ignored));
		return -EOPNOTSUPP;
	}
	if (access & IB_ACCESS_LOCAL_WRITE)
		flags |= PVO_ACCESS_LOCAL_WRITE;
	if (access & IB_ACCESS_REMOTE_WRITE)
		flags |= PVO_ACCESS_REMOTE_WRITE;
	if (access & IB_ACCESS_REMOTE_READ)
		flags |= PVO_ACCESS_REMOTE_READ;
	if (access & IB_ACCESS_REMOTE_ATOMIC)
		flags |= PVO_ACCESS_REMOTE_ATOMIC;
	if (access & IB_ACCESS_MW_BIND)
		flags |= PVO_ACCESS_MW_BIND;
	return flags;
}

struct ib_mr *pvo_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct pvo_pd *pd = to_pvo_pd(ibpd);
	struct pvo_mr *mr;

	if (pd->ctx != PVO_CTX_KERNEL || (access & PVO_MR_REMOTE)) {
		ibdev_dbg(ibpd->device, "DMA MR with access 0x%x refused: the local DMA lkey has no remote access\n",
			  access);
		return ERR_PTR(-EOPNOTSUPP);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->ctx = PVO_CTX_KERNEL;
	mr->ibmr.lkey = PVO_LOCAL_DMA_LKEY;
	mr->ibmr.rkey = 0;
	return &mr->ibmr;
}

/*
 * Pins [start, start + length) and describes its 4 KiB blocks to the
 * device for iova @virt_addr: *umem and @pdir on success.
 */
static int pvo_mr_pin(struct pvo_dev *dev, struct ib_device *ibdev,
		      u64 start, u64 length, u64 virt_addr, int access,
		      struct ib_umem **umem, struct pvo_pdir_mem *pdir)
{
	int err;

	if (!length || length > ibdev->attrs.max_mr_size)
		return -EINVAL;
	*umem = ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(*umem))
		return PTR_ERR(*umem);
	/* Byte offsets within a 4 KiB page must agree for iova and start. */
	if (!ib_umem_find_best_pgsz(*umem, SZ_4K, virt_addr)) {
		ibdev_dbg(ibdev, "reg_mr: iova 0x%llx and address 0x%llx differ within a 4 KiB page\n",
			  virt_addr, start);
		err = -EINVAL;
		goto err_release;
	}
	err = pvo_pdir_from_umem(dev, pdir, *umem);
	if (!err)
		return 0;
err_release:
	ib_umem_release(*umem);
	*umem = NULL;
	return err;
}

struct ib_mr *pvo_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 virt_addr, int access,
			      struct ib_udata *udata)
{
	struct ib_device *ibdev = ibpd->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_pd *pd = to_pvo_pd(ibpd);
	struct pvo_cmd_reg_mr cmd = {};
	struct pvo_resp_reg_mr resp;
	struct pvo_mr *mr;
	int flags, err;

	flags = pvo_mr_access(ibdev, access);
	if (flags < 0)
		return ERR_PTR(flags);
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EOPNOTSUPP);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->ctx = pd->ctx;
	mr->umem_access = access;
	err = pvo_mr_pin(dev, ibdev, start, length, virt_addr, access,
			 &mr->umem, &mr->pdir);
	if (err)
		goto err_free;

	cmd.pd = cpu_to_le32(pd->pdn);
	cmd.access = cpu_to_le32(flags);
	cmd.iova = cpu_to_le64(virt_addr);
	cmd.length = cpu_to_le64(length);
	pvo_pdir_describe(&mr->pdir, &cmd.pages);
	err = pvo_ctrl_cmd(dev, PVO_CMD_REG_MR, mr->ctx, &cmd, sizeof(cmd),
			   &resp, sizeof(resp));
	if (err)
		goto err_pdir;
	mr->handle = le32_to_cpu(resp.mr);
	mr->ibmr.lkey = le32_to_cpu(resp.key);
	mr->ibmr.rkey = mr->ibmr.lkey;
	return &mr->ibmr;

err_pdir:
	pvo_pdir_free(dev, &mr->pdir);
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *pvo_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg)
{
	struct pvo_dev *dev = to_pvo_dev(ibpd->device);
	struct pvo_pd *pd = to_pvo_pd(ibpd);
	struct pvo_cmd_alloc_mr cmd = {};
	struct pvo_resp_reg_mr resp;
	struct pvo_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG || pd->ctx != PVO_CTX_KERNEL)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > PVO_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->ctx = PVO_CTX_KERNEL;
	mr->max_pages = max_num_sg;
	mr->pages = dma_alloc_coherent(dev->dma_dev,
				       max_num_sg * sizeof(*mr->pages),
				       &mr->pages_dma, GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free;
	}
	cmd.pd = cpu_to_le32(pd->pdn);
	cmd.max_pages = cpu_to_le32(max_num_sg);
	err = pvo_ctrl_cmd(dev, PVO_CMD_ALLOC_MR, PVO_CTX_KERNEL, &cmd,
			   sizeof(cmd), &resp, sizeof(resp));
	if (err)
		goto err_pages;
	mr->handle = le32_to_cpu(resp.mr);
	mr->ibmr.lkey = le32_to_cpu(resp.key);
	mr->ibmr.rkey = mr->ibmr.lkey;
	return &mr->ibmr;

err_pages:
	dma_free_coherent(dev->dma_dev, max_num_sg * sizeof(*mr->pages),
			  mr->pages, mr->pages_dma);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

static int pvo_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct pvo_mr *mr = to_pvo_mr(ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

/* The device's pages are 4 KiB, whatever the guest's page size. */
int pvo_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset)
{
	struct pvo_mr *mr = to_pvo_mr(ibmr);

	if (!mr->pages || ibmr->page_size != PVO_PAGE_SIZE)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, pvo_set_page);
}

/*
 * In place: the device changes pages, PD and access of the same MR and
 * gives it a new key byte. New pages are pinned before the command and
 * the old ones released after it succeeded, so the device never sees a
 * page that is not pinned. NULL: updated in place (ib_core's contract).
 */
struct ib_mr *pvo_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 virt_addr, int access,
				struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct ib_device *ibdev = ibmr->device;
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_mr *mr = to_pvo_mr(ibmr);
	struct pvo_cmd_rereg_mr cmd = {};
	struct pvo_pdir_mem pdir = {};
	struct ib_umem *umem = NULL;
	struct pvo_resp_reg_mr resp;
	int err, acc = 0;

	if (!mr->handle || mr->pages ||
	    (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD |
		       IB_MR_REREG_ACCESS)))
		return ERR_PTR(-EOPNOTSUPP);
	if (flags & IB_MR_REREG_ACCESS) {
		acc = pvo_mr_access(ibdev, access);
		if (acc < 0)
			return ERR_PTR(acc);
	}
	if (flags & IB_MR_REREG_PD) {
		if (to_pvo_pd(ibpd)->ctx != mr->ctx)
			return ERR_PTR(-EINVAL);
		cmd.pd = cpu_to_le32(to_pvo_pd(ibpd)->pdn);
	}
	if (flags & IB_MR_REREG_TRANS) {
		err = pvo_mr_pin(dev, ibdev, start, length, virt_addr,
				 flags & IB_MR_REREG_ACCESS ? access :
				 mr->umem_access, &umem, &pdir);
		if (err)
			return ERR_PTR(err);
		cmd.iova = cpu_to_le64(virt_addr);
		cmd.length = cpu_to_le64(length);
		pvo_pdir_describe(&pdir, &cmd.pages);
	}
	cmd.mr = cpu_to_le32(mr->handle);
	cmd.flags = cpu_to_le32(flags);
	cmd.access = cpu_to_le32(acc);
	err = pvo_ctrl_cmd(dev, PVO_CMD_REREG_MR, mr->ctx, &cmd, sizeof(cmd),
			   &resp, sizeof(resp));
	if (err)
		goto err_pdir;
	if (umem) {
		pvo_pdir_free(dev, &mr->pdir);
		ib_umem_release(mr->umem);
		mr->pdir = pdir;
		mr->umem = umem;
	}
	if (flags & IB_MR_REREG_ACCESS)
		mr->umem_access = access;
	mr->ibmr.lkey = le32_to_cpu(resp.key);
	mr->ibmr.rkey = mr->ibmr.lkey;
	return NULL;

err_pdir:
	if (umem) {
		pvo_pdir_free(dev, &pdir);
		ib_umem_release(umem);
	}
	return ERR_PTR(err);
}

int pvo_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibmr->device);
	struct pvo_mr *mr = to_pvo_mr(ibmr);
	int err;

	if (mr->handle) {
		err = pvo_ctrl_handle_cmd(dev, PVO_CMD_DEREG_MR, mr->ctx,
					  mr->handle);
		/* windows are bound to it: it stays as it is (uverbs frees
		 * the windows first when the context goes)
		 */
		if (err == -EBUSY)
			return err;
		if (pvo_destroy_failed_in_use(err)) {
			/* Keep the pages pinned: the device may still DMA. */
			dev_err(&dev->vdev->dev,
				"DEREG_MR %u (context %u) failed: %d; its pages stay pinned because the back-end may still access them\n",
				mr->handle, mr->ctx, err);
			kfree(mr);
			return 0;
		}
		pvo_pdir_free(dev, &mr->pdir);
		ib_umem_release(mr->umem);
		if (mr->pages)
			dma_free_coherent(dev->dma_dev,
					  mr->max_pages * sizeof(*mr->pages),
					  mr->pages, mr->pages_dma);
	}
	kfree(mr);
	return 0;
}
