// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Control-path verbs that go straight to the kernel driver: device and
 * port queries, protection domains, memory regions, address handles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvrdma_overlay.h"

/*
 * Capabilities that need the provider as well as the device, and that it
 * does not have: whatever the kernel says, they are cleared.
 */
#define PVO_NO_CAP_FLAGS ((uint64_t)IBV_DEVICE_RESIZE_MAX_WR |		\
			  IBV_DEVICE_MEM_WINDOW_TYPE_2A |		\
			  IBV_DEVICE_MEM_MGT_EXTENSIONS |		\
			  IBV_DEVICE_XRC |				\
			  IBV_DEVICE_UD_IP_CSUM |			\
			  IBV_DEVICE_RC_IP_CSUM |			\
			  IBV_DEVICE_RAW_IP_CSUM |			\
			  IBV_DEVICE_MANAGED_FLOW_STEERING |		\
			  IBV_DEVICE_RAW_MULTI |			\
			  IBV_DEVICE_RAW_SCATTER_FCS |			\
			  IBV_DEVICE_PCI_WRITE_END_PADDING)

/*
 * The kernel's answer, narrowed to what this provider can do: no type 2A
 * memory windows, XRC, on-demand paging, device memory, TSO, RSS, raw packet
 * QPs, tag matching, CQ moderation, completion timestamps, PCIe atomics
 * (or dmabuf MRs and resizing, which have no attribute). The limits are the
 * device's, as the kernel reports them.
 */
static void pvo_narrow_device_attr(struct ibv_device_attr_ex *attr)
{
	struct ibv_device_attr *a = &attr->orig_attr;

	a->device_cap_flags &= ~(unsigned int)PVO_NO_CAP_FLAGS;
	a->max_ee = 0;
	a->max_rdd = 0;
	a->max_ee_rd_atom = 0;
	a->max_ee_init_rd_atom = 0;
	a->max_raw_ipv6_qp = 0;
	a->max_raw_ethy_qp = 0;
	a->max_fmr = 0;
	a->max_map_per_fmr = 0;

	attr->device_cap_flags_ex &= ~PVO_NO_CAP_FLAGS;
	memset(&attr->odp_caps, 0, sizeof(attr->odp_caps));
	attr->xrc_odp_caps = 0;
	attr->completion_timestamp_mask = 0;
	attr->hca_core_clock = 0;
	memset(&attr->tso_caps, 0, sizeof(attr->tso_caps));
	memset(&attr->rss_caps, 0, sizeof(attr->rss_caps));
	attr->max_wq_type_rq = 0;
	memset(&attr->packet_pacing_caps, 0,
	       sizeof(attr->packet_pacing_caps));
	attr->raw_packet_caps = 0;
	memset(&attr->tm_caps, 0, sizeof(attr->tm_caps));
	memset(&attr->cq_mod_caps, 0, sizeof(attr->cq_mod_caps));
	attr->max_dm_size = 0;
	memset(&attr->pci_atomic_caps, 0, sizeof(attr->pci_atomic_caps));
}

int pvo_query_device(struct ibv_context *ibctx,
		     const struct ibv_query_device_ex_input *input,
		     struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	struct ibv_device_attr_ex full = {};
	uint64_t fw_ver;
	int ret;

	/* as much as the caller has, narrowed in a whole structure */
	if (attr_size > sizeof(full))
		attr_size = sizeof(full);
	ret = ibv_cmd_query_device_any(ibctx, input, &full, attr_size,
				       &resp, &resp_size);
	if (ret)
		return ret;

	/* fw_ver packs major.minor.patch as 16-bit fields in bits 47..0 */
	fw_ver = resp.base.fw_ver;
	snprintf(full.orig_attr.fw_ver, sizeof(full.orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw_ver >> 32) & 0xffff,
		 (unsigned int)(fw_ver >> 16) & 0xffff,
		 (unsigned int)fw_ver & 0xffff);
	pvo_narrow_device_attr(&full);
	memcpy(attr, &full, attr_size);
	return 0;
}

int pvo_query_port(struct ibv_context *ibctx, uint8_t port,
		   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *pvo_alloc_pd(struct ibv_context *ibctx)
{
	struct pvo_uverbs_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd;
	struct pvo_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_alloc_pd(ibctx, &pd->ibv_pd, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}

	pd->pdn = resp.pdn;
	return &pd->ibv_pd;
}

int pvo_dealloc_pd(struct ibv_pd *ibpd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_pvo_pd(ibpd));
	return 0;
}

/* The kernel pins the pages and gives the device their list. */
struct ibv_mr *pvo_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			  uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* In place (the kernel and the device keep the MR, with a new key). */
int pvo_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		 void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int pvo_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

/*
 * The device keeps the validated address vector; UD work requests name it
 * by the handle the kernel returns.
 */
struct ibv_ah *pvo_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct pvo_uverbs_create_ah_resp resp = {};
	struct pvo_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_ah(ibpd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}

	ah->handle = resp.ah;
	return &ah->ibv_ah;
}

int pvo_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;

	free(to_pvo_ah(ibah));
	return 0;
}

/* UD multicast groups: the kernel tells the device (ATTACH_MCAST). */
int pvo_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

int pvo_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}
