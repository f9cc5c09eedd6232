// SPDX-License-Identifier: GPL-2.0-or-later
/* Device identity and attributes presented to a VM; see device.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "device.h"
#include "gid.h"

/* IB encodings (they are ABI: ib_verbs.h / ib_user_verbs.h) */
enum {
	IB_PORT_ACTIVE = 4,
	IB_PORT_PHYS_LINK_UP = 5,
	IB_MTU_4096 = 5,
	IB_SPEED_EDR = 32,
	IB_WIDTH_4X = 2,
	IB_ATOMIC_HCA = 1,
	IB_PORT_CM_SUP = 1 << 16,
	IB_PORT_IP_BASED_GIDS = 1 << 26,
	IB_DEVICE_PORT_ACTIVE_EVENT = 1 << 10,
	IB_DEVICE_SYS_IMAGE_GUID = 1 << 11,
	IB_DEVICE_RC_RNR_NAK_GEN = 1 << 12,
	IB_DEVICE_SRQ_RESIZE = 1 << 13,
	IB_DEVICE_MEM_WINDOW = 1 << 17,
	IB_DEVICE_MEM_MGT_EXTENSIONS = 1 << 21,
	IB_DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24,
};

/* RoCEv2 headers inside the tenant MTU: IPv4 20 + UDP 8 + BTH 12 +
 * the largest extension header (RETH 16 / AtomicETH 28) + ICRC 4. */
#define ROCE_HEADROOM (20 + 8 + 12 + 28 + 4)

unsigned int pvo_ib_mtu_for(unsigned int eth_mtu)
{
	unsigned int ib = 4096, e = IB_MTU_4096;

	while (e > 1 && ib + ROCE_HEADROOM > eth_mtu) {
		ib /= 2;
		e--;
	}
	return e;
}

/* The queue count is a device limit, not a quota: contexts beyond the
 * queues ring slot pages (doorbell.h), so any QEMU doorbells= value works
 * with any number of contexts up to max-ucontexts. */
unsigned int pvo_device_max_queues(const struct pvo_vm_config *vm)
{
	return PVO_MAX_QUEUES;
}

uint64_t pvo_device_max_mr_size(const struct pvo_vm_config *vm)
{
	return MIN(vm->quota.max_mr_size,
		   (uint64_t)PVO_PDIR_MAX_PAGES * PVO_PAGE_SIZE);
}

void pvo_device_config(const struct pvo_vm_config *vm, struct pvo_config *c)
{
	int i;

	memset(c, 0, sizeof(*c));
	c->version = htole32(PVO_INTERFACE_VERSION);
	c->num_queues = htole16(pvo_device_max_queues(vm));
	c->mtu = htole16(vm->tenant->mtu);
	memcpy(c->mac, vm->mac, 6);
	c->max_ucontexts = htole32(vm->quota.max_ucontexts);
	c->num_allowed_gids = htole16(vm->num_ips);
	for (i = 0; i < vm->num_ips && i < PVO_MAX_ALLOWED_GIDS; i++)
		memcpy(c->allowed_gids[i], vm->ips[i].s6_addr, PVO_GID_LEN);
}

void pvo_device_attr(const struct pvo_vm_config *vm,
		     struct pvo_resp_query_device *a)
{
	const struct pvo_quota *q = &vm->quota;
	uint8_t eui[8];

	memset(a, 0, sizeof(*a));
	pvo_mac_to_eui64(vm->mac, eui);
	a->fw_ver = htole64(PVO_DEV_FW_VER);
	memcpy(&a->node_guid, eui, 8);
	memcpy(&a->sys_image_guid, eui, 8);
	a->max_mr_size = htole64(pvo_device_max_mr_size(vm));
	a->page_size_cap = htole64(0x1000);
	a->device_cap_flags = htole64(IB_DEVICE_PORT_ACTIVE_EVENT |
				      IB_DEVICE_SYS_IMAGE_GUID |
				      IB_DEVICE_RC_RNR_NAK_GEN |
				      IB_DEVICE_SRQ_RESIZE |
				      IB_DEVICE_MEM_MGT_EXTENSIONS |
				      IB_DEVICE_MEM_WINDOW |
				      IB_DEVICE_MEM_WINDOW_TYPE_2B);
	a->vendor_id = htole32(PVO_PCI_VENDOR_ID);
	a->vendor_part_id = htole32(PVO_PCI_DEVICE_ID);
	a->hw_ver = htole32(1);
	a->max_qp = htole32(q->max_qp);
	a->max_qp_wr = htole32(PVO_DEV_MAX_QP_WR);
	a->max_send_sge = htole32(PVO_DEV_MAX_SGE);
	a->max_recv_sge = htole32(PVO_DEV_MAX_SGE);
	a->max_cq = htole32(q->max_cq);
	a->max_cqe = htole32(PVO_DEV_MAX_CQE);
	a->max_mr = htole32(q->max_mr);
	a->max_mw = htole32(q->max_mw);
	a->max_pd = htole32(q->max_pd);
	a->max_ah = htole32(q->max_ah);
	a->max_srq = htole32(q->max_srq);
	a->max_srq_wr = htole32(PVO_DEV_MAX_SRQ_WR);
	a->max_srq_sge = htole32(PVO_DEV_MAX_SGE);
	a->max_qp_rd_atom = htole32(PVO_DEV_MAX_RD_ATOM);
	a->max_qp_init_rd_atom = htole32(PVO_DEV_MAX_RD_ATOM);
	a->max_inline_data = htole32(PVO_DEV_MAX_INLINE);
	a->atomic_cap = htole32(IB_ATOMIC_HCA);
	a->max_pkeys = htole16(1);
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

void pvo_device_port_attr(const struct pvo_vm_config *vm,
			  struct pvo_resp_query_port *p)
{
	memset(p, 0, sizeof(*p));
	p->state = IB_PORT_ACTIVE;
	p->phys_state = IB_PORT_PHYS_LINK_UP;
	p->max_mtu = IB_MTU_4096;
	p->active_mtu = pvo_ib_mtu_for(vm->tenant->mtu);
	p->gid_tbl_len = htole32(PVO_GID_TABLE_LEN);
	p->port_cap_flags = htole32(IB_PORT_CM_SUP | IB_PORT_IP_BASED_GIDS);
	p->max_msg_sz = htole32(1u << 31);
	p->pkey_tbl_len = htole16(1);
	p->active_speed = IB_SPEED_EDR;
	p->active_width = IB_WIDTH_4X;
}
