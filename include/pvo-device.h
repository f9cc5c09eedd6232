/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * pvrdma-overlay device interface: the contract between the guest driver,
 * the QEMU device model and the vhost-user back-end. docs/device-interface.md
 * explains it; this header is the normative layout. Everything is
 * little-endian, except GIDs and GUIDs, which are network byte order as on
 * the wire.
 *
 * Shared by kernel and user space: only <linux/types.h> types.
 */
#ifndef PVO_DEVICE_H
#define PVO_DEVICE_H

#include <linux/types.h>

#define PVO_VIRTIO_ID		42	/* "RDMA device" in the virtio spec */
#define PVO_PCI_VENDOR_ID	0x1af4
#define PVO_PCI_DEVICE_ID	0x106a	/* 0x1040 + PVO_VIRTIO_ID */
#define PVO_INTERFACE_VERSION	1

/* Virtqueues. Queue 2 is the kernel's doorbell queue; 3.. go to ucontexts. */
#define PVO_VQ_CTRL		0
#define PVO_VQ_EVENT		1
#define PVO_VQ_DB_KERNEL	2
#define PVO_VQ_DB_FIRST_USER	3
#define PVO_MAX_QUEUES		66	/* ctrl + event + 64 doorbell queues */

/* BAR 2: one 4 KiB doorbell page per virtqueue; a write to page N kicks N. */
#define PVO_DOORBELL_BAR	2
#define PVO_DOORBELL_PAGE_SIZE	4096

#define PVO_MAX_ALLOWED_GIDS	8
#define PVO_GID_LEN		16

/* Device configuration space (served by the back-end, <= 256 bytes). */
struct pvo_config {
	__le32 version;		/* PVO_INTERFACE_VERSION */
	__le16 num_queues;	/* virtqueues the VMM created (ctrl+event+db) */
	__le16 mtu;		/* Ethernet MTU of the tenant network */
	__u8 mac[6];		/* the VM's MAC on the tenant network */
	__le16 num_allowed_gids;
	__le32 max_ucontexts;	/* user contexts the back-end accepts */
	__le32 reserved;
	/* GIDs the VM may use besides its MAC-derived link-local GID */
	__u8 allowed_gids[PVO_MAX_ALLOWED_GIDS][PVO_GID_LEN];
};

/* Control queue: a chain of one device-readable buffer (pvo_cmd_hdr + body)
 * followed by one device-writable buffer (pvo_resp_hdr + body). Bodies may
 * be split across descriptors; the back-end gathers and scatters. */
enum pvo_cmd_opcode {
	PVO_CMD_QUERY_DEVICE = 1,
	PVO_CMD_QUERY_PORT = 2,
	PVO_CMD_QUERY_GID = 3,
	PVO_CMD_ADD_GID = 4,
	PVO_CMD_DEL_GID = 5,
	PVO_CMD_QUERY_PKEY = 6,
	PVO_CMD_ALLOC_UCONTEXT = 7,
	PVO_CMD_DEALLOC_UCONTEXT = 8,
	PVO_CMD_ALLOC_PD = 9,
	PVO_CMD_DEALLOC_PD = 10,
	PVO_CMD_MAX
};

enum pvo_status {
	PVO_STATUS_OK = 0,
	PVO_STATUS_EINVAL = 1,		/* malformed command or bad field */
	PVO_STATUS_ENOENT = 2,		/* no such object for this context */
	PVO_STATUS_EPERM = 3,		/* refused by the VM's tenant policy */
	PVO_STATUS_ENOSPC = 4,		/* device limit or VM quota reached */
	PVO_STATUS_EOPNOTSUPP = 5,	/* unknown opcode */
	PVO_STATUS_EBUSY = 6,		/* object still referenced */
	PVO_STATUS_ENOMEM = 7,		/* back-end out of memory */
	PVO_STATUS_EFAULT = 8,		/* guest address outside guest RAM */
};

#define PVO_CTX_KERNEL 0	/* pvo_cmd_hdr.ctx for kernel-owned objects */

struct pvo_cmd_hdr {
	__le16 opcode;
	__le16 flags;		/* must be 0 */
	__le32 ctx;		/* acting ucontext handle, PVO_CTX_KERNEL */
};

struct pvo_resp_hdr {
	__le32 status;		/* enum pvo_status */
	__le32 reserved;
};

/* PVO_CMD_QUERY_DEVICE: no body. */
struct pvo_resp_query_device {
	__le64 fw_ver;
	__be64 node_guid;
	__be64 sys_image_guid;
	__le64 max_mr_size;
	__le64 page_size_cap;
	__le64 device_cap_flags;	/* IB_DEVICE_* bits */
	__le32 vendor_id;
	__le32 vendor_part_id;
	__le32 hw_ver;
	__le32 max_qp;
	__le32 max_qp_wr;
	__le32 max_send_sge;
	__le32 max_recv_sge;
	__le32 max_cq;
	__le32 max_cqe;
	__le32 max_mr;
	__le32 max_pd;
	__le32 max_ah;
	__le32 max_srq;
	__le32 max_srq_wr;
	__le32 max_srq_sge;
	__le32 max_qp_rd_atom;
	__le32 max_qp_init_rd_atom;
	__le32 max_inline_data;
	__le32 atomic_cap;		/* 0 none, 1 HCA, 2 global (IB enum) */
	__le16 max_pkeys;
	__u8 local_ca_ack_delay;
	__u8 phys_port_cnt;
};

struct pvo_cmd_port {
	__le32 port;		/* 1 */
	__le32 index;		/* GID / P_Key table index (unused for port) */
};

/* PVO_CMD_QUERY_PORT: struct pvo_cmd_port. Values use IB enum encodings. */
struct pvo_resp_query_port {
	__u8 state;		/* enum ib_port_state */
	__u8 phys_state;	/* 5 = LinkUp, 3 = Disabled */
	__u8 max_mtu;		/* enum ib_mtu */
	__u8 active_mtu;
	__le32 gid_tbl_len;
	__le32 port_cap_flags;
	__le32 max_msg_sz;
	__le16 pkey_tbl_len;
	__u8 active_speed;	/* enum ib_port_speed */
	__u8 active_width;	/* enum ib_port_width */
	__le32 reserved;
};

enum pvo_gid_type {
	PVO_GID_TYPE_ROCE_V2 = 1,	/* RoCEv2 (UDP encapsulation) */
};

/* PVO_CMD_QUERY_GID: struct pvo_cmd_port; ENOENT for an empty slot. */
struct pvo_resp_query_gid {
	__u8 gid[PVO_GID_LEN];
	__le32 type;		/* enum pvo_gid_type */
	__le32 reserved;
};

/* PVO_CMD_ADD_GID: EPERM unless the GID is the VM's link-local GID or in
 * its allowed set; EINVAL for a bad index or type. */
struct pvo_cmd_add_gid {
	__le32 port;
	__le32 index;
	__u8 gid[PVO_GID_LEN];
	__le32 type;
	__le32 reserved;
};

/* PVO_CMD_DEL_GID: struct pvo_cmd_port. */

/* PVO_CMD_QUERY_PKEY: struct pvo_cmd_port; only index 0 exists. */
struct pvo_resp_query_pkey {
	__le16 pkey;
	__le16 reserved[3];
};

/* PVO_CMD_ALLOC_UCONTEXT: no body; hdr.ctx must be PVO_CTX_KERNEL. */
struct pvo_resp_alloc_ucontext {
	__le32 ctx;		/* handle for later pvo_cmd_hdr.ctx */
	__le32 db_queue;	/* doorbell virtqueue / BAR 2 page of the ctx */
};

/* PVO_CMD_DEALLOC_UCONTEXT: no body; hdr.ctx names the context. Frees
 * every object the context still owns. */

/* PVO_CMD_ALLOC_PD: no body; owned by hdr.ctx. */
struct pvo_resp_alloc_pd {
	__le32 pd;
	__le32 reserved;
};

/* PVO_CMD_DEALLOC_PD */
struct pvo_cmd_dealloc_pd {
	__le32 pd;
	__le32 reserved;
};

/* Event queue: the driver posts device-writable buffers of this size; the
 * back-end fills one event per buffer. */
enum pvo_event_type {
	PVO_EV_CQ_COMP = 1,	/* handle = CQ */
	PVO_EV_QP_FATAL = 2,	/* handle = QP */
	PVO_EV_QP_LAST_WQE = 3,	/* handle = QP */
	PVO_EV_PORT_ACTIVE = 4,	/* handle = port */
	PVO_EV_PORT_ERR = 5,	/* handle = port */
	PVO_EV_DEVICE_FATAL = 6,
};

struct pvo_event {
	__le32 type;
	__le32 handle;
	__le64 reserved;
};

#endif /* PVO_DEVICE_H */
