// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvrdma_overlay: the ib_device and its verbs. One port, RoCE v2 only.
 * Device, port, P_Key, GID, user context and PD verbs go to the back-end
 * through the control queue; the data path objects have a file each
 * (pvo_cq.c, pvo_qp.c, pvo_post.c, pvo_srq.c, pvo_ah.c, pvo_mr.c).
 */

#include <linux/mm.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "rdma/pvrdma_overlay-abi.h"
#include "pvo.h"
#include "pvo_verbs.h"

#define PVO_PORT		1
#define PVO_MAX_GID_TBL_LEN	1024

/*
 * Device capabilities the driver passes on from the back-end, if the
 * back-end reports them. Anything the driver does not implement (XRC,
 * ...) is masked; SRQ resizing is for user SRQs. Memory management extensions: fast
 * registration and invalidation (kernel ULPs); memory windows of type 1
 * and 2B (user space).
 */
#define PVO_DEVICE_CAP_FLAGS	(IB_DEVICE_SYS_IMAGE_GUID |		\
				 IB_DEVICE_RC_RNR_NAK_GEN |		\
				 IB_DEVICE_SRQ_RESIZE |			\
				 IB_DEVICE_PORT_ACTIVE_EVENT |		\
				 IB_DEVICE_CURR_QP_STATE_MOD |		\
				 IB_DEVICE_UD_AV_PORT_ENFORCE |		\
				 IB_DEVICE_N_NOTIFY_CQ |		\
				 IB_DEVICE_MEM_MGT_EXTENSIONS |		\
				 IB_DEVICE_MEM_WINDOW |			\
				 IB_DEVICE_MEM_WINDOW_TYPE_2B)

static int pvo_cmd_query_device(struct pvo_dev *dev,
				struct pvo_resp_query_device *r)
{
	return pvo_ctrl_cmd(dev, PVO_CMD_QUERY_DEVICE, PVO_CTX_KERNEL,
			    NULL, 0, r, sizeof(*r));
}

static int pvo_cmd_query_port(struct pvo_dev *dev, u32 port,
			      struct pvo_resp_query_port *r)
{
	struct pvo_cmd_port cmd = { .port = cpu_to_le32(port) };

	return pvo_ctrl_cmd(dev, PVO_CMD_QUERY_PORT, PVO_CTX_KERNEL,
			    &cmd, sizeof(cmd), r, sizeof(*r));
}

/* ib_core keeps most limits in ints. */
static int pvo_limit(__le32 v)
{
	return min_t(u32, le32_to_cpu(v), INT_MAX);
}

/* Probe-time check that the back-end answers and describes one port. */
int pvo_check_device(struct pvo_dev *dev)
{
	struct pvo_resp_query_device r;
	int err;

	err = pvo_cmd_query_device(dev, &r);
	if (err) {
		dev_err(&dev->vdev->dev,
			"QUERY_DEVICE failed: %d; is pvrdma-overlayd running and serving this VM?\n",
			err);
		return err;
	}
	if (r.phys_port_cnt != PVO_PORT) {
		dev_err(&dev->vdev->dev,
			"the back-end reports %u ports; this driver supports exactly one\n",
			r.phys_port_cnt);
		return -EINVAL;
	}
	dev_info(&dev->vdev->dev,
		 "back-end limits: %u QPs, %u CQs, %u MRs, %u PDs, %u AHs, %u SRQs\n",
		 le32_to_cpu(r.max_qp), le32_to_cpu(r.max_cq),
		 le32_to_cpu(r.max_mr), le32_to_cpu(r.max_pd),
		 le32_to_cpu(r.max_ah), le32_to_cpu(r.max_srq));
	return 0;
}

static int pvo_query_device(struct ib_device *ibdev,
			    struct ib_device_attr *attr,
			    struct ib_udata *udata)
{
	struct pvo_resp_query_device r;
	u64 rd_atom;
	int err;

	/* No driver-specific query data in this ABI. */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	err = pvo_cmd_query_device(to_pvo_dev(ibdev), &r);
	if (err)
		return err;

	attr->fw_ver = le64_to_cpu(r.fw_ver);
	attr->sys_image_guid = r.sys_image_guid;
	attr->max_mr_size = le64_to_cpu(r.max_mr_size);
	attr->page_size_cap = le64_to_cpu(r.page_size_cap);
	attr->vendor_id = le32_to_cpu(r.vendor_id);
	attr->vendor_part_id = le32_to_cpu(r.vendor_part_id);
	attr->hw_ver = le32_to_cpu(r.hw_ver);
	attr->device_cap_flags = le64_to_cpu(r.device_cap_flags) &
				 PVO_DEVICE_CAP_FLAGS;
	/* ib_core's kernel PDs use PVO_LOCAL_DMA_LKEY (no DMA MR needed). */
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	attr->max_qp = pvo_limit(r.max_qp);
	attr->max_qp_wr = pvo_limit(r.max_qp_wr);
	attr->max_send_sge = pvo_limit(r.max_send_sge);
	attr->max_recv_sge = pvo_limit(r.max_recv_sge);
	attr->max_sge_rd = attr->max_send_sge;
	attr->max_cq = pvo_limit(r.max_cq);
	attr->max_cqe = pvo_limit(r.max_cqe);
	attr->max_mr = pvo_limit(r.max_mr);
	if (attr->device_cap_flags & IB_DEVICE_MEM_WINDOW)
		attr->max_mw = pvo_limit(r.max_mw);
	attr->max_pd = pvo_limit(r.max_pd);
	attr->max_ah = pvo_limit(r.max_ah);
	attr->max_srq = pvo_limit(r.max_srq);
	attr->max_srq_wr = pvo_limit(r.max_srq_wr);
	attr->max_srq_sge = pvo_limit(r.max_srq_sge);
	attr->max_qp_rd_atom = pvo_limit(r.max_qp_rd_atom);
	attr->max_qp_init_rd_atom = pvo_limit(r.max_qp_init_rd_atom);
	rd_atom = (u64)attr->max_qp_rd_atom * attr->max_qp;
	attr->max_res_rd_atom = min_t(u64, rd_atom, INT_MAX);
	switch (le32_to_cpu(r.atomic_cap)) {
	case IB_ATOMIC_HCA:
		attr->atomic_cap = IB_ATOMIC_HCA;
		break;
	case IB_ATOMIC_GLOB:
		attr->atomic_cap = IB_ATOMIC_GLOB;
		break;
	default:
		attr->atomic_cap = IB_ATOMIC_NONE;
	}
	if (attr->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)
		attr->max_fast_reg_page_list_len = PVO_MAX_FAST_REG_PAGES;
	attr->max_mcast_grp = PVO_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = PVO_MAX_MCAST_PER_QP;
	attr->max_total_mcast_qp_attach = PVO_MAX_MCAST_GRP *
					  PVO_MAX_MCAST_PER_QP;
	attr->max_pkeys = le16_to_cpu(r.max_pkeys);
	attr->local_ca_ack_delay = r.local_ca_ack_delay;
	return 0;
}

static enum ib_mtu pvo_mtu_or(u8 mtu, enum ib_mtu fallback)
{
	return (mtu >= IB_MTU_256 && mtu <= IB_MTU_4096) ? mtu : fallback;
}

static bool pvo_netdev_usable(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/* Active only if the back-end says so and the NIC is up with carrier. */
static enum ib_port_state pvo_port_state(const struct pvo_ibdev *pib,
					 const struct pvo_resp_query_port *r)
{
	if (r->state == IB_PORT_ACTIVE && pvo_netdev_usable(pib->netdev))
		return IB_PORT_ACTIVE;
	return IB_PORT_DOWN;
}

static const char *pvo_port_state_name(enum ib_port_state state)
{
	return state == IB_PORT_ACTIVE ? "ACTIVE" : "DOWN";
}

static int pvo_query_port(struct ib_device *ibdev, u32 port,
			  struct ib_port_attr *attr)
{
	struct pvo_ibdev *pib = to_pvo_ibdev(ibdev);
	struct pvo_resp_query_port r;
	enum ib_mtu max_mtu, active_mtu, netdev_mtu;
	int err;

	err = pvo_cmd_query_port(pib->dev, port, &r);
	if (err)
		return err;

	attr->state = pvo_port_state(pib, &r);
	attr->phys_state = pvo_netdev_usable(pib->netdev) ?
			   r.phys_state : IB_PORT_PHYS_STATE_DISABLED;

	/* Like RoCE NICs: what fits in the NIC's MTU after the headers. */
	max_mtu = pvo_mtu_or(r.max_mtu, IB_MTU_4096);
	active_mtu = min(max_mtu, pvo_mtu_or(r.active_mtu, max_mtu));
	netdev_mtu = iboe_get_mtu(READ_ONCE(pib->netdev->mtu));
	attr->max_mtu = max_mtu;
	attr->active_mtu = netdev_mtu ? min(active_mtu, netdev_mtu) :
			   IB_MTU_256;

	attr->gid_tbl_len = le32_to_cpu(r.gid_tbl_len);
	attr->port_cap_flags = le32_to_cpu(r.port_cap_flags);
	attr->max_msg_sz = le32_to_cpu(r.max_msg_sz);
	attr->pkey_tbl_len = le16_to_cpu(r.pkey_tbl_len);
	attr->active_speed = r.active_speed;
	attr->active_width = r.active_width;
	attr->max_vl_num = 1;
	attr->ip_gids = true;
	return 0;
}

static int pvo_get_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *immutable)
{
	struct pvo_dev *dev = to_pvo_dev(ibdev);
	struct pvo_resp_query_port r;
	u32 gid_tbl_len;
	u16 pkey_tbl_len;
	int err;

	err = pvo_cmd_query_port(dev, port, &r);
	if (err)
		return err;

	gid_tbl_len = le32_to_cpu(r.gid_tbl_len);
	pkey_tbl_len = le16_to_cpu(r.pkey_tbl_len);
	if (!gid_tbl_len || gid_tbl_len > PVO_MAX_GID_TBL_LEN ||
	    !pkey_tbl_len) {
		dev_err(&dev->vdev->dev,
			"the back-end reports %u GID and %u P_Key entries; expected 1..%u and at least 1\n",
			gid_tbl_len, pkey_tbl_len, PVO_MAX_GID_TBL_LEN);
		return -EIO;
	}
	immutable->gid_tbl_len = gid_tbl_len;
	immutable->pkey_tbl_len = pkey_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer pvo_get_link_layer(struct ib_device *ibdev,
					       u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int pvo_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			  u16 *pkey)
{
	struct pvo_cmd_port cmd = {
		.port = cpu_to_le32(port),
		.index = cpu_to_le32(index),
	};
	struct pvo_resp_query_pkey r;
	int err;

	err = pvo_ctrl_cmd(to_pvo_dev(ibdev), PVO_CMD_QUERY_PKEY,
			   PVO_CTX_KERNEL, &cmd, sizeof(cmd), &r, sizeof(r));
	if (err)
		return err;
	*pkey = le16_to_cpu(r.pkey);
	return 0;
}

/*
 * ib_core's RoCE GID management calls this for the default (link-local)
 * GID and the addresses of the netdev. The back-end refuses (EPERM) GIDs
 * outside the VM's allowed set; ib_core then leaves the slot empty.
 */
static int pvo_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct pvo_dev *dev = to_pvo_dev(attr->device);
	struct pvo_cmd_add_gid cmd = {
		.port = cpu_to_le32(attr->port_num),
		.index = cpu_to_le32(attr->index),
		.type = cpu_to_le32(PVO_GID_TYPE_ROCE_V2),
	};
	int err;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	memcpy(cmd.gid, attr->gid.raw, sizeof(cmd.gid));
	err = pvo_ctrl_cmd(dev, PVO_CMD_ADD_GID, PVO_CTX_KERNEL,
			   &cmd, sizeof(cmd), NULL, 0);
	if (err == -EPERM)
		ibdev_info(attr->device,
			   "GID %pI6 refused: not in the VM's allowed set (tenant config)\n",
			   attr->gid.raw);
	return err;
}

static int pvo_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct pvo_cmd_port cmd = {
		.port = cpu_to_le32(attr->port_num),
		.index = cpu_to_le32(attr->index),
	};

	return pvo_ctrl_cmd(to_pvo_dev(attr->device), PVO_CMD_DEL_GID,
			    PVO_CTX_KERNEL, &cmd, sizeof(cmd), NULL, 0);
}

static void pvo_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u64 fw = to_pvo_ibdev(ibdev)->fw_ver;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u",
		 (u32)(fw >> 32), (u32)(fw >> 16) & 0xffff, (u32)fw & 0xffff);
}

/* Returns false if the back-end may still use the context's pages. */
static bool pvo_ucontext_free(struct pvo_dev *dev, u32 ctx)
{
	int err;

	err = pvo_ctrl_cmd(dev, PVO_CMD_DEALLOC_UCONTEXT, ctx, NULL, 0,
			   NULL, 0);
	if (err)
		dev_warn(&dev->vdev->dev,
			 "DEALLOC_UCONTEXT %u failed: %d; the back-end keeps its objects until the device is reset\n",
			 ctx, err);
	return !pvo_destroy_failed_in_use(err);
}

/* A queue page is its own queue; a slot page kicks its slot's queue. */
static bool pvo_db_page_valid(struct pvo_dev *dev, u32 page, u32 queue)
{
	if (page < PVO_DB_SLOT_PAGE0)
		return page == queue && queue >= PVO_VQ_DB_FIRST_USER &&
		       queue < dev->num_queues;
	return page < PVO_DOORBELL_BAR_PAGES &&
	       queue == pvo_db_slot_queue(dev->num_queues,
					  page - PVO_DB_SLOT_PAGE0);
}

static int pvo_alloc_ucontext(struct ib_ucontext *ibuc,
			      struct ib_udata *udata)
{
	struct pvo_ucontext *uc = to_pvo_uc(ibuc);
	struct pvo_dev *dev = to_pvo_dev(ibuc->device);
	struct pvo_alloc_ucontext_resp uresp = {};
	struct pvo_resp_alloc_ucontext r;
	int err;

	/* A mapping must cover exactly one context's doorbell page. */
	if (PAGE_SIZE != PVO_DOORBELL_PAGE_SIZE) {
		ibdev_warn_ratelimited(ibuc->device,
				       "user contexts need 4 KiB pages (doorbell pages are 4 KiB)\n");
		return -EOPNOTSUPP;
	}
	/* No request data is defined; refuse what a newer provider sends. */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	err = pvo_ctrl_cmd(dev, PVO_CMD_ALLOC_UCONTEXT, PVO_CTX_KERNEL,
			   NULL, 0, &r, sizeof(r));
	if (err)
		return err;
	uc->ctx = le32_to_cpu(r.ctx);
	uc->db_queue = le32_to_cpu(r.db_queue);
	uc->db_page = le32_to_cpu(r.db_page);

	if (!pvo_db_page_valid(dev, uc->db_page, uc->db_queue)) {
		dev_err(&dev->vdev->dev,
			"the back-end gave context %u doorbell page %u on queue %u, which this device (%u queues) does not have\n",
			uc->ctx, uc->db_page, uc->db_queue, dev->num_queues);
		err = -EIO;
		goto err_free;
	}

	err = pvo_db_user_init(dev, uc);
	if (err)
		goto err_free;

	uresp.ctx = uc->ctx;
	uresp.db_queue = uc->db_queue;
	uresp.interface_version = PVO_INTERFACE_VERSION;
	uresp.max_inline_data = to_pvo_ibdev(ibuc->device)->max_inline;
	err = ib_copy_to_udata(udata, &uresp,
			       min(udata->outlen, sizeof(uresp)));
	if (err)
		goto err_free;
	return 0;

err_free:
	pvo_db_user_free(dev, uc, !pvo_ucontext_free(dev, uc->ctx));
	return err;
}

static void pvo_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct pvo_dev *dev = to_pvo_dev(ibuc->device);
	struct pvo_ucontext *uc = to_pvo_uc(ibuc);

	pvo_db_user_free(dev, uc, !pvo_ucontext_free(dev, uc->ctx));
}

/*
 * Hot unplug and module unload with contexts open: ib_core zaps our
 * mappings (doorbell page, record page) first, then destroys the
 * context's objects through the normal verbs and deallocates the context,
 * which frees the record page; there is nothing else to detach.
 */
static void pvo_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * Offset PVO_MMAP_DOORBELL: the context's doorbell page, uncached.
 * Offset PVO_MMAP_DB_RING: its doorbell record page, ordinary cached
 * memory. Both through rdma_user_mmap_io(), so that disassociation zaps
 * them before the pages go away.
 */
static int pvo_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct pvo_ucontext *uc = to_pvo_uc(ibuc);
	struct pvo_dev *dev = to_pvo_dev(ibuc->device);
	phys_addr_t page;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;

	switch (vma->vm_pgoff) {
	case PVO_MMAP_DOORBELL:
		page = dev->db_phys + (phys_addr_t)uc->db_page *
				      PVO_DOORBELL_PAGE_SIZE;
		return rdma_user_mmap_io(ibuc, vma, PHYS_PFN(page), PAGE_SIZE,
					 pgprot_noncached(vma->vm_page_prot),
					 NULL);
	case PVO_MMAP_DB_RING:
		return rdma_user_mmap_io(ibuc, vma, page_to_pfn(uc->db_ring),
					 PAGE_SIZE, vma->vm_page_prot, NULL);
	default:
		return -EINVAL;
	}
}

static void pvo_pd_free(struct pvo_dev *dev, struct pvo_pd *pd)
{
	struct pvo_cmd_dealloc_pd cmd = { .pd = cpu_to_le32(pd->pdn) };
	int err;

	err = pvo_ctrl_cmd(dev, PVO_CMD_DEALLOC_PD, pd->ctx, &cmd,
			   sizeof(cmd), NULL, 0);
	if (err)
		dev_warn(&dev->vdev->dev,
			 "DEALLOC_PD %u (context %u) failed: %d\n",
			 pd->pdn, pd->ctx, err);
}

static int pvo_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct pvo_dev *dev = to_pvo_dev(ibpd->device);
	struct pvo_ucontext *uc = rdma_udata_to_drv_context(udata,
							    struct pvo_ucontext,
							    ibuc);
	struct pvo_pd *pd = to_pvo_pd(ibpd);
	struct pvo_resp_alloc_pd r;
	int err;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	pd->ctx = uc ? uc->ctx : PVO_CTX_KERNEL;
	err = pvo_ctrl_cmd(dev, PVO_CMD_ALLOC_PD, pd->ctx, NULL, 0,
			   &r, sizeof(r));
	if (err)
		return err;
	pd->pdn = le32_to_cpu(r.pd);

	if (udata) {
		struct pvo_alloc_pd_resp uresp = { .pdn = pd->pdn };

		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err) {
			pvo_pd_free(dev, pd);
			return err;
		}
	}
	return 0;
}

/*
 * Destroying must not fail: ib_core frees its object regardless, and
 * the back-end frees whatever a context still owns when it goes.
 */
static int pvo_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	pvo_pd_free(to_pvo_dev(ibpd->device), to_pvo_pd(ibpd));
	return 0;
}

static const struct ib_device_ops pvo_dev_ops = {
	.owner = THIS_MODULE,
	/* The provider matches the virtio modalias; no upstream id needed. */
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = PVO_UVERBS_ABI_VERSION,

	.add_gid = pvo_add_gid,
	.alloc_pd = pvo_alloc_pd,
	.alloc_ucontext = pvo_alloc_ucontext,
	.create_ah = pvo_create_ah,
	.create_cq = pvo_create_cq,
	.create_qp = pvo_create_qp,
	.create_srq = pvo_create_srq,
	.create_user_ah = pvo_create_ah,
	.dealloc_pd = pvo_dealloc_pd,
	.dealloc_ucontext = pvo_dealloc_ucontext,
	.del_gid = pvo_del_gid,
	.dereg_mr = pvo_dereg_mr,
	.rereg_user_mr = pvo_rereg_user_mr,
	.destroy_ah = pvo_destroy_ah,
	.destroy_cq = pvo_destroy_cq,
	.resize_cq = pvo_resize_cq,
	.destroy_qp = pvo_destroy_qp,
	.attach_mcast = pvo_attach_mcast,
	.detach_mcast = pvo_detach_mcast,
	.destroy_srq = pvo_destroy_srq,
	.disassociate_ucontext = pvo_disassociate_ucontext,
	.get_dev_fw_str = pvo_get_dev_fw_str,
	.get_dma_mr = pvo_get_dma_mr,
	.alloc_mr = pvo_alloc_mr,
	.alloc_mw = pvo_alloc_mw,
	.dealloc_mw = pvo_dealloc_mw,
	.map_mr_sg = pvo_map_mr_sg,
	.get_link_layer = pvo_get_link_layer,
	.get_port_immutable = pvo_get_port_immutable,
	.mmap = pvo_mmap,
	.modify_qp = pvo_modify_qp,
	.modify_srq = pvo_modify_srq,
	.poll_cq = pvo_poll_cq,
	.post_recv = pvo_post_recv,
	.post_send = pvo_post_send,
	.post_srq_recv = pvo_post_srq_recv,
	.query_device = pvo_query_device,
	.query_pkey = pvo_query_pkey,
	.query_port = pvo_query_port,
	.query_qp = pvo_query_qp,
	.query_srq = pvo_query_srq,
	.reg_user_mr = pvo_reg_user_mr,
	.req_notify_cq = pvo_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, pvo_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, pvo_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, pvo_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, pvo_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, pvo_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, pvo_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, pvo_ucontext, ibuc),
};

/* Create and register the ib_device on @netdev (referenced by caller). */
struct pvo_ibdev *pvo_ib_register(struct pvo_dev *dev,
				  struct net_device *netdev)
{
	struct pvo_resp_query_device qd;
	struct pvo_resp_query_port qp;
	struct ib_device *ibdev;
	struct pvo_ibdev *pib;
	int err;

	err = pvo_cmd_query_device(dev, &qd);
	if (err)
		return ERR_PTR(err);

	pib = ib_alloc_device(pvo_ibdev, ibdev);
	if (!pib)
		return ERR_PTR(-ENOMEM);
	pib->dev = dev;
	pib->netdev = netdev;
	pib->fw_ver = le64_to_cpu(qd.fw_ver);
	pib->max_inline = le32_to_cpu(qd.max_inline_data);
	pib->port_state = IB_PORT_DOWN;

	ibdev = &pib->ibdev;
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->node_guid = qd.node_guid;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = PVO_LOCAL_DMA_LKEY;
	/* The provider finds the virtio modalias through the parent. */
	ibdev->dev.parent = &dev->vdev->dev;
	strscpy(ibdev->node_desc, "pvrdma-overlay", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &pvo_dev_ops);

	err = ib_device_set_netdev(ibdev, netdev, PVO_PORT);
	if (err)
		goto err_dealloc;

	/* DMA goes through the PCI function (no vIOMMU: addresses = GPAs). */
	err = ib_register_device(ibdev, "pvrdma_overlay%d",
				 dev->vdev->dev.parent);
	if (err)
		goto err_dealloc;

	if (!pvo_cmd_query_port(dev, PVO_PORT, &qp))
		pib->port_state = pvo_port_state(pib, &qp);
	ibdev_info(ibdev, "registered on %s, node GUID %016llx, port %s\n",
		   netdev_name(netdev), be64_to_cpu(ibdev->node_guid),
		   pvo_port_state_name(pib->port_state));
	return pib;

err_dealloc:
	ib_dealloc_device(ibdev);
	return ERR_PTR(err);
}

void pvo_ib_unregister(struct pvo_ibdev *pib)
{
	ib_unregister_device(&pib->ibdev);
	ib_dealloc_device(&pib->ibdev);
}

/* Report a port state change (back-end event or netdev event). */
void pvo_ib_port_update(struct pvo_ibdev *pib)
{
	struct pvo_resp_query_port r;
	enum ib_port_state state = IB_PORT_DOWN;
	struct ib_event ev = {};

	if (!pvo_cmd_query_port(pib->dev, PVO_PORT, &r))
		state = pvo_port_state(pib, &r);
	if (state == pib->port_state)
		return;
	pib->port_state = state;

	ev.device = &pib->ibdev;
	ev.element.port_num = PVO_PORT;
	ev.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					     IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
	ibdev_info(&pib->ibdev, "port %u is %s\n", PVO_PORT,
		   pvo_port_state_name(state));
}

/* The back-end reported a fatal error: tell ib_core's clients. */
void pvo_ib_device_fatal(struct pvo_ibdev *pib)
{
	struct ib_event ev = {
		.device = &pib->ibdev,
		.element.port_num = PVO_PORT,
		.event = IB_EVENT_DEVICE_FATAL,
	};

	ib_dispatch_event(&ev);
}
