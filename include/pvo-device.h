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
#define PVO_INTERFACE_VERSION	5

/* Virtqueues. Queue 2 is the kernel's doorbell queue; 3.. go to ucontexts. */
#define PVO_VQ_CTRL		0
#define PVO_VQ_EVENT		1
#define PVO_VQ_DB_KERNEL	2
#define PVO_VQ_DB_FIRST_USER	3
#define PVO_MAX_QUEUES		66	/* ctrl + event + 64 doorbell queues */

/*
 * BAR 2, in 4 KiB pages:
 *   page 0                      registers (PVO_DBREG_*), written by the driver
 *   pages 2 .. num_queues-1     queue pages: a write to page N kicks queue N
 *                               (an ioeventfd under KVM; no exit to QEMU)
 *   pages PVO_DB_SLOT_PAGE0 + s context slot s (0 <= s < PVO_MAX_DB_SLOTS):
 *                               QEMU appends s to the notify ring of queue
 *                               pvo_db_slot_queue(num_queues, s) and kicks it
 * A user context rings either a queue page of its own (the first contexts,
 * while user queues are free) or a slot page of its own; either way no
 * other process can write its page, and the back-end learns which context
 * rang from the queue or the notify ring entry, never from guest data.
 */
#define PVO_DOORBELL_BAR	2
#define PVO_DOORBELL_PAGE_SIZE	4096
#define PVO_DB_SLOT_PAGE0	128
#define PVO_MAX_DB_SLOTS	4096
#define PVO_DOORBELL_BAR_PAGES	(PVO_DB_SLOT_PAGE0 + PVO_MAX_DB_SLOTS)

/* Registers on BAR 2 page 0 (le32 each): the guest-physical address of the
 * notify area; writing HI latches LO:HI (0 turns slot doorbells off). */
#define PVO_DBREG_NOTIFY_LO	0x00
#define PVO_DBREG_NOTIFY_HI	0x04

/* Most user contexts a VM may have (max-ucontexts): one slot each, plus
 * those that own a queue page. */
#define PVO_MAX_UCONTEXTS	PVO_MAX_DB_SLOTS

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
	/*
	 * Written by the VMM, not the back-end (which leaves it 0): bit 31
	 * is set while a back-end serves the device, bits 0..30 count the
	 * back-end connections (from 1). A change raises a config interrupt;
	 * a new count means the back-end lost every object of the VM. 0: the
	 * VMM does not report it.
	 */
	__le32 backend;
	/* GIDs the VM may use besides its MAC-derived link-local GID */
	__u8 allowed_gids[PVO_MAX_ALLOWED_GIDS][PVO_GID_LEN];
};

#define PVO_BACKEND_UP		0x80000000u
#define PVO_BACKEND_CONNS	0x7fffffffu

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
	/* data path (interface version 2) */
	PVO_CMD_SET_DB_RING = 11,
	PVO_CMD_CREATE_CQ = 12,
	PVO_CMD_DESTROY_CQ = 13,
	PVO_CMD_REG_MR = 14,
	PVO_CMD_DEREG_MR = 15,
	PVO_CMD_CREATE_QP = 16,
	PVO_CMD_MODIFY_QP = 17,
	PVO_CMD_QUERY_QP = 18,
	PVO_CMD_DESTROY_QP = 19,
	PVO_CMD_CREATE_SRQ = 20,
	PVO_CMD_MODIFY_SRQ = 21,
	PVO_CMD_QUERY_SRQ = 22,
	PVO_CMD_DESTROY_SRQ = 23,
	PVO_CMD_CREATE_AH = 24,
	PVO_CMD_DESTROY_AH = 25,
	/* interface version 4 */
	PVO_CMD_SET_NOTIFY_AREA = 26,
	PVO_CMD_ALLOC_MR = 27,
	PVO_CMD_ATTACH_MCAST = 28,
	PVO_CMD_DETACH_MCAST = 29,
	PVO_CMD_RESIZE_CQ = 30,
	PVO_CMD_REREG_MR = 31,
	PVO_CMD_ALLOC_MW = 32,
	PVO_CMD_DEALLOC_MW = 33,
	PVO_CMD_RESIZE_SRQ = 34,
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
	PVO_STATUS_EHOSTUNREACH = 9,	/* host verbs: no host answers for the
					 * destination (ARP); may be retried */
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
	__le32 max_mw;			/* memory windows (VM quota) */
	__le32 reserved;
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
	__le32 db_queue;	/* doorbell virtqueue the ctx's rings kick */
	__le32 db_page;		/* BAR 2 page the ctx writes: db_queue, or
				 * PVO_DB_SLOT_PAGE0 + its slot */
	__le32 reserved;
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
	PVO_EV_CQ_ERR = 7,	/* handle = CQ (overrun) */
	PVO_EV_SRQ_LIMIT = 8,	/* handle = SRQ */
	PVO_EV_QP_REQ_ERR = 9,	/* handle = QP */
	PVO_EV_QP_ACCESS_ERR = 10,	/* handle = QP */
	PVO_EV_COMM_EST = 11,	/* handle = QP */
	PVO_EV_SQ_DRAINED = 12,	/* handle = QP */
};

struct pvo_event {
	__le32 type;
	__le32 handle;
	__le64 reserved;
};

/*
 * ======================= Data path (version 2) =======================
 *
 * Memory the device reads or writes is described by guest-physical page
 * lists. All pages are 4 KiB (PVO_PAGE_SIZE), whatever the guest uses.
 */
#define PVO_PAGE_SHIFT		12
#define PVO_PAGE_SIZE		(1u << PVO_PAGE_SHIFT)
#define PVO_PDIR_ENTRIES	512	/* le64 GPAs per directory/table page */
#define PVO_PDIR_MAX_DIR_PAGES	4
#define PVO_PDIR_MAX_PAGES	\
	(PVO_PDIR_MAX_DIR_PAGES * PVO_PDIR_ENTRIES * PVO_PDIR_ENTRIES)

/*
 * A two-level page directory: the directory is dir_pages physically
 * contiguous pages from dir_gpa, an array of le64 GPAs of table pages, one
 * per 512 entries of the list; each table page holds up to 512 le64 GPAs
 * of data pages, in order. Entry i of the list is table[i / 512][i % 512].
 * dir_pages (0 means 1) is the fewest pages that hold the table GPAs:
 * 1 up to 1 GiB, at most PVO_PDIR_MAX_DIR_PAGES (4 GiB per list). The
 * directory lies in one guest RAM region; every GPA is page-aligned and
 * must lie in guest RAM.
 */
struct pvo_pdir {
	__le64 dir_gpa;
	__le32 npages;
	__le32 dir_pages;	/* 0 or 1 .. PVO_PDIR_MAX_DIR_PAGES */
};

/* Table pages and directory pages a list of npages entries needs. */
static inline __u32 pvo_pdir_tables(__u32 npages)
{
	return npages / PVO_PDIR_ENTRIES + !!(npages % PVO_PDIR_ENTRIES);
}

static inline __u32 pvo_pdir_dir_pages(__u32 npages)
{
	__u32 ntables = pvo_pdir_tables(npages);

	return ntables / PVO_PDIR_ENTRIES + !!(ntables % PVO_PDIR_ENTRIES);
}

/*
 * Rings (SQ, RQ, SRQ, CQ, doorbell records) live in guest memory: page 0
 * of the ring's page list is this header, the entries follow from page 1
 * on, entry i at byte (i & (entries - 1)) * stride of the entry area
 * (entries and stride are powers of two; an entry never straddles a page
 * because stride <= 4096). Counters run freely (wrap at 2^32); a ring holds
 * prod - cons entries. Producer and consumer each own one counter on its
 * own cache line. Writers publish entries before their counter (release),
 * readers read the counter before entries (acquire).
 */
struct pvo_ring_hdr {
	__le32 prod;		/* entries produced */
	__le32 reserved0[15];
	__le32 cons;		/* entries consumed */
	__le32 reserved1[15];
	__le32 arm;		/* CQ: PVO_CQ_ARM_*; device clears on event */
	__le32 db_pending;	/* SQ (SRQ): a doorbell record for this QP
				 * (SRQ) waits */
	__le32 reserved2[14];
};

/* CQ arming: the driver or provider sets arm, then re-checks the ring. The
 * device, after publishing a CQE, clears arm with a compare-and-exchange and
 * raises PVO_EV_CQ_COMP when arm was NEXT, or SOLICITED and the CQE is
 * solicited or an error; a SOLICITED arm stays set through unsolicited
 * successful CQEs. */
#define PVO_CQ_ARM_NEXT		1
#define PVO_CQ_ARM_SOLICITED	2

/*
 * Doorbell records: each context (and the kernel) registers one page with
 * PVO_CMD_SET_DB_RING: a pvo_ring_hdr-style header (prod at byte 0, cons at
 * byte 64) followed by PVO_DB_RING_ENTRIES le32 records, QP handles (or
 * SRQ records, PVO_DB_REC_SRQ below). To ring a QP:
 * publish the WQEs and the SQ prod, then (full barrier) exchange the SQ's
 * db_pending with 1; if it was 0, append the QP handle to the record ring,
 * publish its prod, and write the context's doorbell page. The device pops
 * records, clears db_pending (full barrier) and then reads the SQ prod, so
 * a QP appears at most once in the ring and no post is missed. Receive
 * queues need no doorbell, except on QPs created with
 * PVO_QP_RESP_F_RQ_DOORBELL: there the guest rings the same doorbell (SQ
 * db_pending, record) after publishing the RQ prod; an SRQ created with
 * PVO_SRQ_RESP_F_DOORBELL is rung the same way with its own ring header.
 * The device advances the record ring's cons before it clears the
 * queue's db_pending, so the ring never holds more records than the
 * context has QPs and doorbell SRQs (at most PVO_DB_RING_ENTRIES).
 *
 * Ordering rules the device follows (guests rely on them):
 * - an SQ/RQ/SRQ cons passes a WQE before that WQE's CQE is published, so
 *   a poster that reposts on every completion never sees a false full ring;
 * - on the transition to RESET the device drops outstanding WQEs without
 *   CQEs and sets each ring's cons to its prod;
 * - a doorbell for a QP in ERR flushes its SQ and RQ (so a receive posted
 *   to a QP in error gets its WR_FLUSH_ERR once the poster rings);
 * - rings may have 1 entry (a QP with max_send_wr or max_recv_wr 0);
 * - a CQ's entries must be >= the requested cqe (not cqe + 1).
 */
#define PVO_DB_RING_ENTRIES	512	/* power of two: record i is entry i % 512 */
#define PVO_DB_RING_ENTRY_OFF	128

/*
 * An SRQ created with PVO_SRQ_RESP_F_DOORBELL is rung like a QP, with its
 * ring header's db_pending and a record that holds its srqn (below
 * PVO_DB_REC_SRQ_LIMIT). A QP handle never is: its upper 12 bits are a
 * generation, never 0. Each SRQ of a context may sit once in the ring, as
 * each QP.
 */
#define PVO_DB_REC_SRQ_LIMIT	(1u << 20)
#define PVO_DB_REC_SRQ(srqn)	(srqn)
#define PVO_DB_REC_IS_SRQ(rec)	((rec) < PVO_DB_REC_SRQ_LIMIT)

/* PVO_CMD_SET_DB_RING: the record page of hdr.ctx (kernel: PVO_CTX_KERNEL,
 * kicked through virtqueue PVO_VQ_DB_KERNEL). EBUSY if already set. */
struct pvo_cmd_set_db_ring {
	__le64 gpa;
};

/*
 * Notify rings: where QEMU tells the back-end which context slot rang. One
 * ring per doorbell queue that slots map to (the user queues, or the
 * kernel's queue when there are none), laid out one after the other in the
 * notify area: prod at byte 0 (written by QEMU), cons at byte 64 (written
 * by the back-end), then pvo_notify_ring_entries() le32 slot numbers. QEMU
 * appends a slot only if its previous entry has been consumed, so a ring
 * holds each slot at most once and never overflows. The back-end advances
 * cons past an entry (full barrier) before it reads that context's doorbell
 * records, so a doorbell QEMU skipped is seen by that read.
 */
#define PVO_NOTIFY_RING_ENTRY_OFF	128

static inline __u32 pvo_db_notify_first(__u32 num_queues)
{
	return num_queues > PVO_VQ_DB_FIRST_USER ? PVO_VQ_DB_FIRST_USER :
						   PVO_VQ_DB_KERNEL;
}

static inline __u32 pvo_db_notify_rings(__u32 num_queues)
{
	return num_queues - pvo_db_notify_first(num_queues);
}

/* The doorbell queue slot @slot kicks. */
static inline __u32 pvo_db_slot_queue(__u32 num_queues, __u32 slot)
{
	return pvo_db_notify_first(num_queues) +
	       slot % pvo_db_notify_rings(num_queues);
}

/* Entries per notify ring: a power of two >= the slots of one queue. */
static inline __u32 pvo_notify_ring_entries(__u32 num_queues)
{
	__u32 per = (PVO_MAX_DB_SLOTS + pvo_db_notify_rings(num_queues) - 1) /
		    pvo_db_notify_rings(num_queues);
	__u32 n = 1;

	while (n < per)
		n <<= 1;
	return n;
}

static inline __u32 pvo_notify_ring_stride(__u32 num_queues)
{
	return PVO_NOTIFY_RING_ENTRY_OFF + 4 * pvo_notify_ring_entries(num_queues);
}

/* Byte offset of queue @q's ring in the notify area. */
static inline __u32 pvo_notify_ring_off(__u32 num_queues, __u32 q)
{
	return (q - pvo_db_notify_first(num_queues)) *
	       pvo_notify_ring_stride(num_queues);
}

/* Bytes of the notify area (physically contiguous, page aligned). */
static inline __u32 pvo_notify_area_size(__u32 num_queues)
{
	__u32 n = pvo_db_notify_rings(num_queues) *
		  pvo_notify_ring_stride(num_queues);

	return (n + PVO_DOORBELL_PAGE_SIZE - 1) &
	       ~(__u32)(PVO_DOORBELL_PAGE_SIZE - 1);
}

/* PVO_CMD_SET_NOTIFY_AREA (ctx = kernel): the notify area, zeroed, for a
 * device with num_queues virtqueues (as in config space). Written to the
 * BAR 2 registers too. EBUSY if already set; EINVAL for a bad num_queues
 * or alignment; EFAULT if not wholly in guest RAM. */
struct pvo_cmd_set_notify_area {
	__le64 gpa;
	__le32 num_queues;
	__le32 reserved;
};

/* ---- memory keys ---- */

/* lkey of guest-physical SGEs; only kernel QPs (ctx 0) may use it */
#define PVO_LOCAL_DMA_LKEY	0x00000001u

/* IB access flags (uverbs values) */
#define PVO_ACCESS_LOCAL_WRITE		(1 << 0)
#define PVO_ACCESS_REMOTE_WRITE		(1 << 1)
#define PVO_ACCESS_REMOTE_READ		(1 << 2)
#define PVO_ACCESS_REMOTE_ATOMIC	(1 << 3)
#define PVO_ACCESS_MW_BIND		(1 << 4)	/* MRs: windows may bind */

/*
 * PVO_CMD_ATTACH_MCAST / PVO_CMD_DETACH_MCAST: a UD QP of hdr.ctx joins or
 * leaves a multicast group (gid: ff00::/8, or ::ffff:224.0.0.0/4 for
 * IPv4). A UD send whose address vector names the group, with remote QPN
 * 0xffffff, reaches every attached QP of the sender's tenant except the
 * sender; attaching twice is not an error. EINVAL: not a UD QP, not a
 * multicast GID, reserved != 0; ENOENT: no such QP, or (detach) not
 * attached; ENOSPC: PVO_MAX_MCAST_PER_QP groups already.
 */
struct pvo_cmd_mcast {
	__le32 qp;
	__le32 reserved;
	__u8 gid[PVO_GID_LEN];
};

#define PVO_MAX_MCAST_PER_QP	32
#define PVO_MCAST_QPN		0xffffff

/* PVO_CMD_REG_MR: pages of the registered range, from the page holding
 * iova & ~4095; lkey == rkey. The device checks every access against
 * [iova, iova + length) and the access flags. */
struct pvo_cmd_reg_mr {
	__le32 pd;
	__le32 access;		/* PVO_ACCESS_* */
	__le64 iova;		/* the address SGEs / RDMA use for byte 0 */
	__le64 length;
	struct pvo_pdir pages;
};

/*
 * PVO_CMD_ALLOC_MR (kernel contexts only): an MR for fast registration
 * (IB_MR_TYPE_MEM_REG) of up to max_pages 4 KiB pages. It starts invalid
 * and gets its range, pages, access and key byte from a PVO_WR_REG_MR
 * work request; PVO_WR_LOCAL_INV or a SEND_WITH_INV naming its key make
 * it invalid again. Response: struct pvo_resp_reg_mr (the key's low byte
 * is the initial tag; the index bits never change).
 */
struct pvo_cmd_alloc_mr {
	__le32 pd;
	__le32 max_pages;	/* 1 .. PVO_MAX_FAST_REG_PAGES */
};

#define PVO_MAX_FAST_REG_PAGES	512

/*
 * PVO_CMD_REREG_MR: changes an MR of hdr.ctx in place: its pages, iova and
 * length (PVO_REREG_TRANS, with pages as in REG_MR), its PD (PVO_REREG_PD)
 * and/or its access (PVO_REREG_ACCESS); what a flag does not name stays.
 * The key's low byte changes, so the old key reaches nothing; transfers
 * under way look the key up again and stop. Response: pvo_resp_reg_mr.
 * EINVAL: no flag or an unknown one, a fast-reg MR, the new range or
 * access invalid; ENOENT: MR or PD; EFAULT: a page outside guest RAM.
 */
#define PVO_REREG_TRANS		(1u << 0)
#define PVO_REREG_PD		(1u << 1)
#define PVO_REREG_ACCESS	(1u << 2)

struct pvo_cmd_rereg_mr {
	__le32 mr;
	__le32 flags;		/* PVO_REREG_* */
	__le32 pd;
	__le32 access;		/* PVO_ACCESS_* */
	__le64 iova;
	__le64 length;
	struct pvo_pdir pages;
};

/*
 * PVO_CMD_ALLOC_MW (user contexts): a memory window of type 1 or 2 (2B:
 * bound to the QP that binds it) in a PD of hdr.ctx, unbound. Window
 * rkeys have PVO_MW_KEY_BIT set (MR keys never do): the bit, the index
 * bits (<< 8) that never change, and a low byte a bind sets. It gets a
 * range, access rights and a new key from a PVO_WR_BIND_MW work request
 * on an RC or UC QP of its PD (type 1 through ibv_bind_mw only); type 2
 * windows go back to unbound on PVO_WR_LOCAL_INV, on a SEND_WITH_INV
 * from the peer of their QP, or when their QP is destroyed. An MR with
 * windows bound to it cannot be deregistered or re-registered (EBUSY).
 * DEALLOC_MW (pvo_cmd_handle) unbinds it first. EPERM: kernel context;
 * EINVAL: type; ENOENT: PD; ENOSPC: the VM's max-mw quota.
 */
struct pvo_cmd_alloc_mw {
	__le32 pd;
	__le32 type;		/* 1 or 2 (IB_MW_TYPE_*) */
};

struct pvo_resp_alloc_mw {
	__le32 mw;		/* handle for DEALLOC_MW */
	__le32 rkey;
};

#define PVO_MW_KEY_BIT		0x80000000u

struct pvo_resp_reg_mr {
	__le32 mr;		/* handle for DEREG_MR */
	__le32 key;		/* lkey == rkey: index << 8 | 8-bit tag */
};

struct pvo_cmd_handle {		/* DEREG_MR, DESTROY_*, QUERY_* */
	__le32 handle;
	__le32 reserved;
};

/* ---- completion queues ---- */

/* CQ ring: entries of struct pvo_cqe (64 bytes). EBUSY on destroy while a
 * QP or SRQ uses it. */
struct pvo_cmd_create_cq {
	__le32 entries;		/* power of two, <= max_cqe */
	__le32 flags;		/* PVO_CQ_F_* */
	struct pvo_pdir ring;	/* 1 + ceil(entries * 64 / 4096) pages */
};

/*
 * PVO_CMD_RESIZE_CQ: the CQ moves to a new ring. The device copies the
 * CQEs the guest has not consumed (from the old ring's cons to its prod)
 * to the same counter positions of the new ring, sets the new header's
 * prod, cons and arm from the old one and writes only the new ring from
 * then on; the guest switches rings when the command completes and must
 * not poll in between. EINVAL: entries not a power of two, above max_cqe,
 * or fewer than the CQEs outstanding; ENOENT: no such CQ.
 */
struct pvo_cmd_resize_cq {
	__le32 cq;
	__le32 entries;
	struct pvo_pdir ring;
};

/* The CQ never raises completion events (a user CQ created without a
 * completion channel, whose events uverbs would drop): the device does not
 * look at its arm word after a CQE, which spares a full barrier per CQE. */
#define PVO_CQ_F_NO_EVENTS	(1u << 0)

struct pvo_resp_create_cq {
	__le32 cq;
	__le32 reserved;
};

/* Work completion opcodes and status: ibverbs (enum ibv_wc_opcode /
 * ibv_wc_status) values. */
enum pvo_wc_opcode {
	PVO_WC_SEND = 0,
	PVO_WC_RDMA_WRITE = 1,
	PVO_WC_RDMA_READ = 2,
	PVO_WC_COMP_SWAP = 3,
	PVO_WC_FETCH_ADD = 4,
	PVO_WC_BIND_MW = 5,
	PVO_WC_LOCAL_INV = 6,
	PVO_WC_REG_MR = 0x20,
	PVO_WC_RECV = 128,
	PVO_WC_RECV_RDMA_WITH_IMM = 129,
};

enum pvo_wc_status {
	PVO_WC_SUCCESS = 0,
	PVO_WC_LOC_LEN_ERR = 1,
	PVO_WC_LOC_QP_OP_ERR = 2,
	PVO_WC_LOC_PROT_ERR = 4,
	PVO_WC_WR_FLUSH_ERR = 5,
	PVO_WC_MW_BIND_ERR = 6,
	PVO_WC_BAD_RESP_ERR = 7,
	PVO_WC_LOC_ACCESS_ERR = 8,
	PVO_WC_REM_INV_REQ_ERR = 9,
	PVO_WC_REM_ACCESS_ERR = 10,
	PVO_WC_REM_OP_ERR = 11,
	PVO_WC_RETRY_EXC_ERR = 12,
	PVO_WC_RNR_RETRY_EXC_ERR = 13,
	PVO_WC_FATAL_ERR = 19,
	PVO_WC_GENERAL_ERR = 21,
};

#define PVO_WC_F_GRH		(1 << 0)	/* a GRH leads the buffer */
#define PVO_WC_F_IMM		(1 << 1)	/* imm_data valid */
#define PVO_WC_F_SOLICITED	(1 << 2)	/* for arming only */
#define PVO_WC_F_INV		(1 << 3)	/* SEND_WITH_INV: imm_data holds
						 * the invalidated rkey, le32 */

/* rdma_network_type of a received GRH (kernel enum values) */
#define PVO_NET_IPV4	2
#define PVO_NET_IPV6	3

struct pvo_cqe {
	__le64 wr_id;
	__le32 qpn;		/* the local QP's number */
	__le32 byte_len;
	__u8 opcode;		/* enum pvo_wc_opcode */
	__u8 status;		/* enum pvo_wc_status */
	__u8 flags;		/* PVO_WC_F_* */
	__u8 network_hdr_type;	/* PVO_NET_*, with PVO_WC_F_GRH */
	__be32 imm_data;
	__le32 src_qp;		/* UD / GSI */
	__le32 vendor_err;
	__le16 pkey_index;
	__u8 smac[6];		/* UD / GSI: the sender's MAC */
	__u8 sl;
	__u8 reserved[23];
};

/* ---- address handles ---- */

struct pvo_av {
	__u8 dgid[16];
	__u8 dmac[6];
	__u8 sgid_index;
	__u8 hop_limit;
	__le32 flow_label;
	__u8 traffic_class;
	__u8 sl;
	__le16 reserved;
};

/* PVO_CMD_CREATE_AH: UD WQEs name the AH by handle (the device keeps the
 * validated address). DESTROY_AH with pvo_cmd_handle. */
struct pvo_cmd_create_ah {
	__le32 pd;
	__le32 reserved;
	struct pvo_av av;
};

struct pvo_resp_create_ah {
	__le32 ah;
	__le32 reserved;
};

/* ---- shared receive queues ---- */

/* SRQ ring: entries of struct pvo_recv_wqe with stride 1 << wqe_shift. */
struct pvo_cmd_create_srq {
	__le32 pd;
	__le32 entries;		/* power of two, <= max_srq_wr + 1 */
	__le32 max_sge;
	__le32 srq_limit;
	__u8 wqe_shift;		/* == pvo_recv_wqe_shift(max_sge) */
	__u8 flags;		/* PVO_SRQ_F_* */
	__u8 reserved[6];
	struct pvo_pdir ring;
};

/*
 * The guest can ring this SRQ's doorbell (below) and reads the whole
 * response, flags included. A guest without it gets no
 * PVO_SRQ_RESP_F_DOORBELL: the device then reads the SRQ ring when a
 * message arrives, as it always did.
 */
#define PVO_SRQ_F_DOORBELL	(1 << 0)

/*
 * Guests that predate flags give the response only the first
 * PVO_RESP_CREATE_SRQ_MIN bytes (srq, srqn) of room; the device answers
 * them with those.
 */
struct pvo_resp_create_srq {
	__le32 srq;
	__le32 srqn;		/* < PVO_DB_REC_SRQ_LIMIT */
	__le32 flags;		/* PVO_SRQ_RESP_F_* */
	__le32 reserved;
};

#define PVO_RESP_CREATE_SRQ_MIN	8

/*
 * The device reads this SRQ's ring only when its doorbell rings: after
 * publishing receive WQEs the guest sets the SRQ ring header's
 * db_pending and appends the record PVO_DB_REC_SRQ(srqn) as for an SQ (a
 * host-verbs SRQ hands receives to the host's device ahead of any
 * message). Only answered to a CREATE_SRQ with PVO_SRQ_F_DOORBELL.
 */
#define PVO_SRQ_RESP_F_DOORBELL	(1 << 0)

#define PVO_SRQ_MAX_WR		(1 << 0)	/* ibv_srq_attr_mask values */
#define PVO_SRQ_LIMIT		(1 << 1)

struct pvo_cmd_modify_srq {
	__le32 srq;
	__le32 attr_mask;	/* only PVO_SRQ_LIMIT (RESIZE_SRQ resizes) */
	__le32 max_wr;
	__le32 srq_limit;	/* arms PVO_EV_SRQ_LIMIT; 0 disarms */
};

/*
 * PVO_CMD_RESIZE_SRQ: the SRQ moves to a new ring (same WQE stride). The
 * device copies the receive WQEs posted and not yet taken (from its cons
 * to the guest's prod) to the same counter positions of the new ring,
 * sets the new header's prod and cons and reads only the new ring from
 * then on; the guest posts to the new ring once the command completes and
 * must not post in between. EINVAL: entries not a power of two or above
 * max_srq_wr + 1, fewer entries than WQEs outstanding, a wqe_shift other
 * than the SRQ's; ENOENT: no such SRQ; EFAULT: ring outside guest RAM.
 */
struct pvo_cmd_resize_srq {
	__le32 srq;
	__le32 entries;
	__u8 wqe_shift;
	__u8 reserved[7];
	struct pvo_pdir ring;
};

struct pvo_resp_query_srq {
	__le32 max_wr;
	__le32 max_sge;
	__le32 srq_limit;
	__le32 reserved;
};

/* ---- queue pairs ---- */

/* QP types and states: IB values */
#define PVO_QPT_GSI	1
#define PVO_QPT_RC	2
#define PVO_QPT_UC	3
#define PVO_QPT_UD	4

#define PVO_QPS_RESET	0
#define PVO_QPS_INIT	1
#define PVO_QPS_RTR	2
#define PVO_QPS_RTS	3
#define PVO_QPS_SQD	4
#define PVO_QPS_SQE	5
#define PVO_QPS_ERR	6

/*
 * PVO_CMD_CREATE_QP. SQ entries have stride 1 << sq_wqe_shift where
 * sq_wqe_shift == pvo_send_wqe_shift(max_send_sge, max_inline_data); RQ
 * entries 1 << rq_wqe_shift == pvo_recv_wqe_shift(max_recv_sge). With an
 * SRQ, rq_entries and rq.npages are 0. GSI: kernel only, one per device,
 * gets QPN 1. The device checks that PD, CQs and SRQ belong to hdr.ctx.
 */
struct pvo_cmd_create_qp {
	__le32 pd;
	__le32 send_cq;
	__le32 recv_cq;
	__le32 srq;		/* 0: own RQ */
	__u8 qp_type;		/* PVO_QPT_* */
	__u8 sq_sig_all;
	__u8 sq_wqe_shift;
	__u8 rq_wqe_shift;
	__le32 sq_entries;	/* power of two >= max_send_wr */
	__le32 rq_entries;
	__le32 max_send_sge;
	__le32 max_recv_sge;
	__le32 max_inline_data;
	struct pvo_pdir sq;
	struct pvo_pdir rq;
};

struct pvo_resp_create_qp {
	__le32 qp;		/* handle: doorbell records, commands */
	__le32 qpn;		/* 24-bit QP number on the wire */
	__le32 flags;		/* PVO_QP_RESP_F_* */
	__le32 reserved;
};

/*
 * The device reads this QP's RQ only when the doorbell rings: after
 * publishing receive WQEs the guest rings it as for the SQ (a host-verbs
 * QP hands receives to the host's device ahead of any message; without
 * the flag the device reads the RQ when a message arrives).
 */
#define PVO_QP_RESP_F_RQ_DOORBELL	(1 << 0)

/* attr_mask bits: IB_QP_* / IBV_QP_* values */
#define PVO_QP_STATE			(1 << 0)
#define PVO_QP_CUR_STATE		(1 << 1)
#define PVO_QP_EN_SQD_ASYNC_NOTIFY	(1 << 2)
#define PVO_QP_ACCESS_FLAGS		(1 << 3)
#define PVO_QP_PKEY_INDEX		(1 << 4)
#define PVO_QP_PORT			(1 << 5)
#define PVO_QP_QKEY			(1 << 6)
#define PVO_QP_AV			(1 << 7)
#define PVO_QP_PATH_MTU			(1 << 8)
#define PVO_QP_TIMEOUT			(1 << 9)
#define PVO_QP_RETRY_CNT		(1 << 10)
#define PVO_QP_RNR_RETRY		(1 << 11)
#define PVO_QP_RQ_PSN			(1 << 12)
#define PVO_QP_MAX_QP_RD_ATOMIC		(1 << 13)
#define PVO_QP_ALT_PATH			(1 << 14)
#define PVO_QP_MIN_RNR_TIMER		(1 << 15)
#define PVO_QP_SQ_PSN			(1 << 16)
#define PVO_QP_MAX_DEST_RD_ATOMIC	(1 << 17)
#define PVO_QP_PATH_MIG_STATE		(1 << 18)
#define PVO_QP_CAP			(1 << 19)
#define PVO_QP_DEST_QPN			(1 << 20)

struct pvo_qp_attr {
	__le32 qp_state;
	__le32 cur_qp_state;
	__le32 path_mtu;	/* IB MTU enum */
	__le32 qkey;
	__le32 rq_psn;
	__le32 sq_psn;
	__le32 dest_qp_num;
	__le32 qp_access_flags;	/* PVO_ACCESS_* remote bits */
	__le16 pkey_index;
	__u8 port_num;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 min_rnr_timer;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 sq_draining;	/* QUERY_QP */
	__u8 en_sqd_async_notify;
	__u8 reserved;
	struct pvo_av av;	/* primary path */
	__le32 max_send_wr;	/* QUERY_QP: capabilities */
	__le32 max_recv_wr;
	__le32 max_send_sge;
	__le32 max_recv_sge;
	__le32 max_inline_data;
	__le32 reserved2[2];
};

/* PVO_CMD_MODIFY_QP: the device checks the transition and the attributes
 * it requires (IB spec); EINVAL otherwise. Moving to ERR flushes. */
struct pvo_cmd_modify_qp {
	__le32 qp;
	__le32 attr_mask;
	struct pvo_qp_attr attr;
};

/* PVO_CMD_QUERY_QP: pvo_cmd_handle -> struct pvo_qp_attr */

/* ---- work requests ---- */

/* Send opcodes: ibv_wr_opcode values */
enum pvo_wr_opcode {
	PVO_WR_RDMA_WRITE = 0,
	PVO_WR_RDMA_WRITE_WITH_IMM = 1,
	PVO_WR_SEND = 2,
	PVO_WR_SEND_WITH_IMM = 3,
	PVO_WR_RDMA_READ = 4,
	PVO_WR_ATOMIC_CMP_AND_SWP = 5,
	PVO_WR_ATOMIC_FETCH_AND_ADD = 6,
	PVO_WR_LOCAL_INV = 7,		/* invalidate_rkey: a fast-reg MR or a
					 * type 2 window of the PD */
	PVO_WR_BIND_MW = 8,		/* RC, UC: u.bind */
	PVO_WR_SEND_WITH_INV = 9,	/* RC; the responder invalidates */
	PVO_WR_REG_MR = 0x20,		/* kernel QPs only: u.reg */
};

#define PVO_WQE_F_SIGNALED	(1 << 0)
#define PVO_WQE_F_SOLICITED	(1 << 1)
#define PVO_WQE_F_INLINE	(1 << 2)	/* data follows the header */
#define PVO_WQE_F_FENCE		(1 << 3)

struct pvo_sge {
	__le64 addr;
	__le32 length;
	__le32 lkey;
};

/* A send WQE: 64-byte header, then num_sge pvo_sge or, with
 * PVO_WQE_F_INLINE, inline_len bytes of data. */
struct pvo_send_wqe {
	__le64 wr_id;
	__u8 opcode;		/* enum pvo_wr_opcode */
	__u8 flags;		/* PVO_WQE_F_* */
	__u8 num_sge;
	__u8 reserved0;
	__le32 inline_len;
	union {
		__be32 imm_data;
		__le32 invalidate_rkey;	/* LOCAL_INV, SEND_WITH_INV */
	};
	__le32 reserved1;
	union {
		struct {
			__le64 remote_addr;
			__le32 rkey;
			__le32 reserved;
		} rdma;
		struct {
			__le64 remote_addr;
			__le64 compare_add;
			__le64 swap;
			__le32 rkey;
			__le32 reserved;
		} atomic;
		struct {
			__le32 ah;
			__le32 remote_qpn;
			__le32 remote_qkey;
			__le32 reserved;
		} ud;
		struct {		/* PVO_WR_REG_MR */
			__le64 iova;	/* byte 0 of the range */
			__le64 length;
			__le64 pages;	/* GPA of npages le64 page GPAs */
			__le32 key;	/* the MR's index bits, a new low byte */
			__le32 access;	/* PVO_ACCESS_* */
			__le32 npages;	/* from the page holding iova */
			__le32 reserved;
		} reg;
		struct {		/* PVO_WR_BIND_MW */
			__le64 addr;	/* window: [addr, addr + length) */
			__le64 length;	/* 0: bound to nothing */
			__le32 rkey;	/* the window's index bits, new byte */
			__le32 mr_lkey;	/* an MR of the PD with MW_BIND */
			__le32 access;	/* PVO_ACCESS_REMOTE_* */
			__le32 reserved;
		} bind;
		__u8 raw[40];
	} u;
};

/* A receive WQE (RQ and SRQ): 16-byte header, then num_sge pvo_sge. */
struct pvo_recv_wqe {
	__le64 wr_id;
	__u8 num_sge;
	__u8 reserved[7];
};

static inline unsigned int pvo_ilog2_up(unsigned int v)
{
	unsigned int s = 0;

	while ((1u << s) < v)
		s++;
	return s;
}

/* Stride (log2) of SQ entries for the given capabilities: at least 128. */
static inline unsigned int pvo_send_wqe_shift(unsigned int max_sge,
					      unsigned int max_inline)
{
	unsigned int sz = max_sge * sizeof(struct pvo_sge);

	if (max_inline > sz)
		sz = max_inline;
	sz += sizeof(struct pvo_send_wqe);
	return pvo_ilog2_up(sz < 128 ? 128 : sz);
}

/* Stride (log2) of RQ / SRQ entries: at least 32. */
static inline unsigned int pvo_recv_wqe_shift(unsigned int max_sge)
{
	unsigned int sz = sizeof(struct pvo_recv_wqe) +
			  (max_sge ? max_sge : 1) * sizeof(struct pvo_sge);

	return pvo_ilog2_up(sz < 32 ? 32 : sz);
}

/* Pages of a ring with entries of the given stride, header included. */
static inline unsigned int pvo_ring_pages(unsigned int entries,
					  unsigned int shift)
{
	unsigned long bytes = (unsigned long)entries << shift;

	return 1 + (unsigned int)((bytes + PVO_PAGE_SIZE - 1) >>
				  PVO_PAGE_SHIFT);
}

#endif /* PVO_DEVICE_H */
