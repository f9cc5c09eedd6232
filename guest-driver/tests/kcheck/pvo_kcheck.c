// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pvo_kcheck: an in-guest check of pvrdma_overlay's kernel verbs, the part
 * of the driver no user-space tool reaches (kernel rings, post/poll, the
 * local DMA lkey, kernel AHs, CQ and SRQ events, GSI through rdma_cm).
 *
 *   insmod pvo_kcheck.ko mode=loop [ibdev=...]      RC + UD on one device
 *   insmod pvo_kcheck.ko mode=server [port=18999]   rdma_cm listener
 *   insmod pvo_kcheck.ko mode=client peer=10.0.0.1  rdma_cm ping-pong
 *
 * Results go to the kernel log as "pvo_kcheck: ok N - what" / "not ok";
 * loop and client fail to load (-EIO) if a check failed. The server stays
 * loaded, answers one connection and logs "pvo_kcheck: server: ...".
 */

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

static char *mode = "loop";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "loop, server or client");
static char *ibdev = "pvrdma_overlay0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "RDMA device for mode=loop");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "server IPv4 address for mode=client");
static int port = 18999;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "rdma_cm port");

#define KC_BUF		8192
#define KC_QKEY		0x11111111
#define KC_TIMEOUT_MS	5000

static int kc_passed, kc_failed;

static bool kc_ok(bool cond, const char *what)
{
	if (cond)
		kc_passed++;
	else
		kc_failed++;
	pr_info("pvo_kcheck: %s %d - %s\n", cond ? "ok" : "not ok",
		kc_passed + kc_failed, what);
	return cond;
}

/* ---- helpers ---------------------------------------------------------- */

struct kc_buf {
	struct ib_device *dev;
	u8 *va;
	u64 dma;
};

static int kc_buf_alloc(struct ib_device *dev, struct kc_buf *b)
{
	b->dev = dev;
	b->va = kzalloc(KC_BUF, GFP_KERNEL);
	if (!b->va)
		return -ENOMEM;
	b->dma = ib_dma_map_single(dev, b->va, KC_BUF, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, b->dma)) {
		kfree(b->va);
		b->va = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void kc_buf_free(struct kc_buf *b)
{
	if (!b->va)
		return;
	ib_dma_unmap_single(b->dev, b->dma, KC_BUF, DMA_BIDIRECTIONAL);
	kfree(b->va);
	b->va = NULL;
}

/* The CPU reads what the device wrote and vice versa. */
static void kc_sync(struct kc_buf *b, bool for_cpu)
{
	if (for_cpu)
		ib_dma_sync_single_for_cpu(b->dev, b->dma, KC_BUF,
					   DMA_BIDIRECTIONAL);
	else
		ib_dma_sync_single_for_device(b->dev, b->dma, KC_BUF,
					      DMA_BIDIRECTIONAL);
}

static atomic_t kc_cq_events = ATOMIC_INIT(0);

static void kc_comp_handler(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&kc_cq_events);
}

static struct ib_cq *kc_create_cq(struct ib_device *dev)
{
	struct ib_cq_init_attr attr = { .cqe = 256 };

	return ib_create_cq(dev, kc_comp_handler, NULL, NULL, &attr);
}

/* Poll one completion; false on timeout. */
static bool kc_poll(struct ib_cq *cq, struct ib_wc *wc, unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	int n;

	do {
		n = ib_poll_cq(cq, 1, wc);
		if (n > 0)
			return true;
		if (n < 0)
			return false;
		usleep_range(200, 1000);
	} while (time_before(jiffies, end));
	return false;
}

/*
 * Poll until the completions of @id1 and @id2 (0: none) arrived, in any
 * order; other completions are dropped.
 */
static bool kc_wait2(struct ib_cq *cq, u64 id1, struct ib_wc *wc1, u64 id2,
		     struct ib_wc *wc2)
{
	unsigned long end = jiffies + msecs_to_jiffies(KC_TIMEOUT_MS);
	bool got1 = false, got2 = !id2;
	struct ib_wc wc;

	while (!(got1 && got2) && time_before(jiffies, end)) {
		if (!kc_poll(cq, &wc, KC_TIMEOUT_MS))
			break;
		if (wc.wr_id == id1 && !got1) {
			*wc1 = wc;
			got1 = true;
		} else if (id2 && wc.wr_id == id2 && !got2) {
			*wc2 = wc;
			got2 = true;
		} else {
			pr_info("pvo_kcheck: (completion %llu status %d skipped)\n",
				wc.wr_id, wc.status);
		}
	}
	if (!got1)
		pr_info("pvo_kcheck: no completion for %llu\n", id1);
	if (!got2)
		pr_info("pvo_kcheck: no completion for %llu\n", id2);
	return got1 && got2;
}

static bool kc_wait(struct ib_cq *cq, u64 wr_id, struct ib_wc *wc)
{
	return kc_wait2(cq, wr_id, wc, 0, NULL);
}

static struct ib_qp *kc_create_qp(struct ib_pd *pd, struct ib_cq *cq,
				  enum ib_qp_type type, struct ib_srq *srq)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = type,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 16,
			.max_recv_wr = 16,
			.max_send_sge = 4,
			.max_recv_sge = 4,
			.max_inline_data = 128,
		},
	};

	return ib_create_qp(pd, &init);
}

/* A RoCE v2 GID of port 1, IPv4-mapped if there is one, and its MAC. */
static int kc_find_gid(struct ib_device *dev, u32 *index, union ib_gid *gid,
		       u8 *mac)
{
	const struct ib_gid_attr *attr;
	struct ib_port_attr pattr;
	int found = -1, err;
	u32 i;

	err = ib_query_port(dev, 1, &pattr);
	if (err)
		return err;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		attr = rdma_get_gid_attr(dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    (found < 0 ||
		     ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw))) {
			found = i;
			*gid = attr->gid;
			rdma_read_gid_l2_fields(attr, NULL, mac);
		}
		rdma_put_gid_attr(attr);
	}
	if (found < 0)
		return -ENOENT;
	*index = found;
	return 0;
}

static void kc_ah_attr(struct ib_device *dev, struct rdma_ah_attr *ah,
		       u32 gid_index, const union ib_gid *gid, const u8 *mac)
{
	memset(ah, 0, sizeof(*ah));
	ah->type = rdma_ah_find_type(dev, 1);
	rdma_ah_set_port_num(ah, 1);
	rdma_ah_set_grh(ah, (union ib_gid *)gid, 0, gid_index, 64, 0);
	memcpy(ah->roce.dmac, mac, ETH_ALEN);
}

/* RESET -> INIT -> RTR -> RTS. */
static int kc_connect(struct ib_qp *qp, u32 dest_qpn, u32 gid_index,
		      const union ib_gid *gid, const u8 *mac)
{
	bool ud = qp->qp_type == IB_QPT_UD;
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = KC_QKEY;
	a.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			    IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | (ud ? IB_QP_QKEY : IB_QP_ACCESS_FLAGS));
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	if (ud) {
		err = ib_modify_qp(qp, &a, IB_QP_STATE);
	} else {
		a.path_mtu = IB_MTU_1024;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		kc_ah_attr(qp->device, &a.ah_attr, gid_index, gid, mac);
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV |
				   IB_QP_PATH_MTU | IB_QP_DEST_QPN |
				   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
				   IB_QP_MIN_RNR_TIMER);
	}
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, ud ? IB_QP_STATE | IB_QP_SQ_PSN :
			    IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static int kc_post_recv(struct ib_qp *qp, u64 wr_id, struct ib_sge *sg,
			int nsge)
{
	struct ib_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = sg,
		.num_sge = nsge,
	};
	const struct ib_recv_wr *bad;

	return ib_post_recv(qp, &wr, &bad);
}

static int kc_post_send(struct ib_qp *qp, struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad;

	return ib_post_send(qp, wr, &bad);
}

static void kc_fill(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 7;
}

/* ---- loop: RC and UD on one device ----------------------------------- */

struct kc_loop {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *a, *b;
	struct kc_buf ba, bb;
	u32 gid_index;
	union ib_gid gid;
	u8 mac[ETH_ALEN];
};

static struct ib_sge kc_sge(struct kc_loop *t, struct kc_buf *b, u32 off,
			    u32 len)
{
	struct ib_sge sge = {
		.addr = b->dma + off,
		.length = len,
		.lkey = t->pd->local_dma_lkey,
	};

	return sge;
}

/* SEND from a to b: returns true if both sides completed successfully. */
static bool kc_send_recv(struct kc_loop *t, struct ib_send_wr *wr,
			 struct ib_sge *rsg, int nrsg, struct ib_wc *rwc)
{
	struct ib_wc swc;

	if (kc_post_recv(t->b, 2000, rsg, nrsg))
		return false;
	kc_sync(&t->ba, false);
	wr->wr_id = 1000;
	wr->send_flags |= IB_SEND_SIGNALED;
	if (kc_post_send(t->a, wr) || !kc_wait2(t->cq, 1000, &swc, 2000, rwc))
		return false;
	if (swc.status != IB_WC_SUCCESS || rwc->status != IB_WC_SUCCESS) {
		pr_info("pvo_kcheck: send status %d, receive status %d\n",
			swc.status, rwc->status);
		return false;
	}
	kc_sync(&t->bb, true);
	return true;
}

static void kc_loop_rc(struct kc_loop *t)
{
	struct ib_sge sge[3], rsge[2];
	struct ib_send_wr wr = {};
	struct ib_rdma_wr rwr = {};
	struct ib_wc wc;
	u8 inl[100];
	bool ok;

	/* 1: SEND of 1000 bytes, with a CQ event */
	kc_fill(t->ba.va, 1000, 1);
	memset(t->bb.va, 0, KC_BUF);
	sge[0] = kc_sge(t, &t->ba, 0, 1000);
	rsge[0] = kc_sge(t, &t->bb, 0, KC_BUF);
	wr.opcode = IB_WR_SEND;
	wr.sg_list = sge;
	wr.num_sge = 1;
	atomic_set(&kc_cq_events, 0);
	ib_req_notify_cq(t->cq, IB_CQ_NEXT_COMP);
	ok = kc_send_recv(t, &wr, rsge, 1, &wc);
	kc_ok(ok && wc.byte_len == 1000 && wc.opcode == IB_WC_RECV &&
	      wc.qp == t->b && !memcmp(t->ba.va, t->bb.va, 1000),
	      "RC SEND 1000 bytes: completions and data");
	msleep(100);
	kc_ok(atomic_read(&kc_cq_events) >= 1,
	      "armed CQ: completion event reached the comp_handler");

	/* 2: SEND_WITH_IMM */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IB_WR_SEND_WITH_IMM;
	wr.ex.imm_data = cpu_to_be32(0x12345678);
	sge[0] = kc_sge(t, &t->ba, 0, 64);
	wr.sg_list = sge;
	wr.num_sge = 1;
	ok = kc_send_recv(t, &wr, rsge, 1, &wc);
	kc_ok(ok && (wc.wc_flags & IB_WC_WITH_IMM) &&
	      wc.ex.imm_data == cpu_to_be32(0x12345678) && wc.byte_len == 64,
	      "RC SEND_WITH_IMM: immediate data");

	/* 3: inline SEND from unmapped kernel memory */
	kc_fill(inl, sizeof(inl), 9);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_INLINE;
	sge[0].addr = (uintptr_t)inl;
	sge[0].length = sizeof(inl);
	sge[0].lkey = 0;
	wr.sg_list = sge;
	wr.num_sge = 1;
	ok = kc_send_recv(t, &wr, rsge, 1, &wc);
	kc_ok(ok && wc.byte_len == sizeof(inl) &&
	      !memcmp(inl, t->bb.va, sizeof(inl)),
	      "RC inline SEND of 100 bytes");

	/* 4: gather 3 SGEs, scatter into 2 */
	kc_fill(t->ba.va, KC_BUF, 3);
	memset(t->bb.va, 0, KC_BUF);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IB_WR_SEND;
	sge[0] = kc_sge(t, &t->ba, 10, 100);
	sge[1] = kc_sge(t, &t->ba, 4000, 200);	/* crosses a page */
	sge[2] = kc_sge(t, &t->ba, 7000, 300);
	rsge[0] = kc_sge(t, &t->bb, 0, 250);
	rsge[1] = kc_sge(t, &t->bb, 5000, 1000);
	wr.sg_list = sge;
	wr.num_sge = 3;
	ok = kc_send_recv(t, &wr, rsge, 2, &wc);
	kc_ok(ok && wc.byte_len == 600 &&
	      !memcmp(t->bb.va, t->ba.va + 10, 100) &&
	      !memcmp(t->bb.va + 100, t->ba.va + 4000, 150) &&
	      !memcmp(t->bb.va + 5000, t->ba.va + 4150, 50) &&
	      !memcmp(t->bb.va + 5050, t->ba.va + 7000, 300),
	      "RC SEND gathering 3 SGEs into 2 receive SGEs");

	/* 5: RDMA WRITE with an rkey nobody owns */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr.wr_id = 1001;
	rwr.wr.opcode = IB_WR_RDMA_WRITE;
	rwr.wr.send_flags = IB_SEND_SIGNALED;
	sge[0] = kc_sge(t, &t->ba, 0, 16);
	rwr.wr.sg_list = sge;
	rwr.wr.num_sge = 1;
	rwr.remote_addr = 0x10000;
	rwr.rkey = 0x00abcd42;
	ok = !kc_post_send(t->a, &rwr.wr) && kc_wait(t->cq, 1001, &wc);
	kc_ok(ok && wc.status == IB_WC_REM_ACCESS_ERR,
	      "RDMA WRITE with a bad rkey: remote access error");
	if (ok && wc.status != IB_WC_REM_ACCESS_ERR)
		pr_info("pvo_kcheck: status %d\n", wc.status);

	/* 6: the QP is in error now: a new send is flushed */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1002;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = sge;
	wr.num_sge = 1;
	ok = !kc_post_send(t->a, &wr) && kc_wait(t->cq, 1002, &wc);
	kc_ok(ok && wc.status == IB_WC_WR_FLUSH_ERR,
	      "SEND on a QP in error: flushed");
}

static void kc_loop_lkey(struct kc_loop *t)
{
	struct ib_send_wr wr = {};
	struct ib_sge sge;
	struct ib_wc wc;
	bool ok;

	sge = kc_sge(t, &t->ba, 0, 16);
	sge.lkey = 0x00dead42;
	wr.wr_id = 1003;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ok = !kc_post_send(t->a, &wr) && kc_wait(t->cq, 1003, &wc);
	kc_ok(ok && wc.status == IB_WC_LOC_PROT_ERR,
	      "SEND with a bad lkey: local protection error");
	if (ok && wc.status != IB_WC_LOC_PROT_ERR)
		pr_info("pvo_kcheck: status %d\n", wc.status);

	/* The device put the QP in error on its own; receives get flushed. */
	sge = kc_sge(t, &t->ba, 0, 64);
	ok = !kc_post_recv(t->a, 1004, &sge, 1) && kc_wait(t->cq, 1004, &wc);
	kc_ok(ok && wc.status == IB_WC_WR_FLUSH_ERR,
	      "receive posted after an error completion: flushed");
}

/* Post one signaled WR on @qp and wait for its completion. */
static bool kc_post_wait(struct ib_qp *qp, struct ib_send_wr *wr,
			 struct ib_cq *cq, struct ib_wc *wc)
{
	wr->send_flags |= IB_SEND_SIGNALED;
	return !kc_post_send(qp, wr) && kc_wait(cq, wr->wr_id, wc);
}

/* b registers 5000 bytes of its buffer, page offset 100, for a. */
static bool kc_fastreg(struct kc_loop *t, struct ib_mr *mr, u64 wr_id)
{
	struct ib_reg_wr reg = {};
	struct scatterlist sg;
	struct ib_wc wc;

	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = t->bb.dma + 100;
	sg_dma_len(&sg) = 5000;
	if (ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE) != 1)
		return false;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	reg.wr.wr_id = wr_id;
	reg.wr.opcode = IB_WR_REG_MR;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		     IB_ACCESS_REMOTE_READ;
	return kc_post_wait(t->b, &reg.wr, t->cq, &wc) &&
	       wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_REG_MR;
}

/*
 * Fast registration as kernel storage ULPs use it: ib_alloc_mr, REG_MR,
 * an RDMA WRITE through the rkey, the peer's SEND_WITH_INV, LOCAL_INV,
 * and a WRITE through an invalidated rkey.
 */
static void kc_loop_fastreg(struct kc_loop *t)
{
	struct ib_send_wr wr = {};
	struct ib_rdma_wr rwr = {};
	struct ib_sge sge, rsge;
	struct ib_mr *mr;
	struct ib_wc wc;
	bool ok;

	kc_ok(t->dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS &&
	      t->dev->attrs.max_fast_reg_page_list_len >= 256,
	      "the device offers memory management extensions");
	mr = ib_alloc_mr(t->pd, IB_MR_TYPE_MEM_REG, 4);
	if (!kc_ok(!IS_ERR(mr), "ib_alloc_mr(MEM_REG, 4 pages)"))
		return;
	kc_ok(kc_fastreg(t, mr, 4000),
	      "ib_map_mr_sg over 2 pages + IB_WR_REG_MR: REG_MR completion");

	kc_fill(t->ba.va, 3000, 40);
	memset(t->bb.va, 0, KC_BUF);
	kc_sync(&t->ba, false);
	kc_sync(&t->bb, false);
	sge = kc_sge(t, &t->ba, 0, 3000);
	rwr.wr.wr_id = 4001;
	rwr.wr.opcode = IB_WR_RDMA_WRITE;
	rwr.wr.sg_list = &sge;
	rwr.wr.num_sge = 1;
	rwr.remote_addr = mr->iova + 50;
	rwr.rkey = mr->rkey;
	ok = kc_post_wait(t->a, &rwr.wr, t->cq, &wc);
	kc_sync(&t->bb, true);
	kc_ok(ok && wc.status == IB_WC_SUCCESS &&
	      !memcmp(t->bb.va + 150, t->ba.va, 3000) && !t->bb.va[149] &&
	      !t->bb.va[3150],
	      "RDMA WRITE through the fast-registered rkey lands at iova + 50");

	rsge = kc_sge(t, &t->bb, 6000, 64);
	sge = kc_sge(t, &t->ba, 0, 64);
	wr.opcode = IB_WR_SEND_WITH_INV;
	wr.ex.invalidate_rkey = mr->rkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ok = kc_send_recv(t, &wr, &rsge, 1, &wc);
	kc_ok(ok && (wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
	      wc.ex.invalidate_rkey == mr->rkey,
	      "SEND_WITH_INV: the receive reports the invalidated rkey");

	kc_ok(kc_fastreg(t, mr, 4002),
	      "the invalidated MR registers again with a new key");
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4003;
	wr.opcode = IB_WR_LOCAL_INV;
	wr.ex.invalidate_rkey = mr->rkey;
	ok = kc_post_wait(t->b, &wr, t->cq, &wc);
	kc_ok(ok && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_LOCAL_INV,
	      "IB_WR_LOCAL_INV: LOCAL_INV completion");

	kc_fill(t->ba.va, 64, 41);
	memset(t->bb.va, 0, KC_BUF);
	kc_sync(&t->ba, false);
	kc_sync(&t->bb, false);
	sge = kc_sge(t, &t->ba, 0, 64);
	rwr.wr.wr_id = 4004;
	rwr.wr.send_flags = 0;
	rwr.remote_addr = mr->iova;
	rwr.rkey = mr->rkey;
	ok = kc_post_wait(t->a, &rwr.wr, t->cq, &wc);
	kc_sync(&t->bb, true);
	kc_ok(ok && wc.status == IB_WC_REM_ACCESS_ERR && !t->bb.va[100],
	      "RDMA WRITE through the invalidated rkey: remote access error, nothing written");
	ib_dereg_mr(mr);
}

/* Receives posted to a QP in error are flushed (ib_drain_rq needs it). */
static void kc_loop_drain(struct kc_loop *t)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	struct ib_sge sge = kc_sge(t, &t->bb, 0, 64);
	struct ib_wc wc;
	bool ok;

	ok = !ib_modify_qp(t->b, &a, IB_QP_STATE) &&
	     !kc_post_recv(t->b, 3000, &sge, 1) && kc_wait(t->cq, 3000, &wc);
	kc_ok(ok && wc.status == IB_WC_WR_FLUSH_ERR,
	      "receive posted to a QP in error: flushed");
}

static void kc_loop_ud(struct kc_loop *t)
{
	struct ib_ud_wr wr = {};
	struct rdma_ah_attr ah_attr;
	struct ib_ah *ah, *ah2;
	struct ib_sge sge, rsge;
	struct ib_wc wc, swc;
	bool v4, ok;
	spinlock_t lock;	/* an atomic context, as ib_cm has */
	unsigned long flags;

	v4 = ipv6_addr_v4mapped((struct in6_addr *)t->gid.raw);
	kc_ah_attr(t->dev, &ah_attr, t->gid_index, &t->gid, t->mac);
	ah = rdma_create_ah(t->pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	if (!kc_ok(!IS_ERR(ah), "UD: address handle to our own GID"))
		return;

	spin_lock_init(&lock);
	spin_lock_irqsave(&lock, flags);
	ah2 = rdma_create_ah(t->pd, &ah_attr, 0);
	if (!IS_ERR(ah2))
		rdma_destroy_ah(ah2, 0);
	spin_unlock_irqrestore(&lock, flags);
	kc_ok(!IS_ERR(ah2), "UD: AH created and destroyed in atomic context");

	kc_fill(t->ba.va, 200, 5);
	memset(t->bb.va, 0, KC_BUF);
	sge = kc_sge(t, &t->ba, 0, 200);
	rsge = kc_sge(t, &t->bb, 0, 40 + 256);
	wr.wr.wr_id = 4000;
	wr.wr.opcode = IB_WR_SEND;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.ah = ah;
	wr.remote_qpn = t->b->qp_num;
	wr.remote_qkey = KC_QKEY;

	ok = !kc_post_recv(t->b, 4001, &rsge, 1) &&
	     !kc_post_send(t->a, &wr.wr) &&
	     kc_wait2(t->cq, 4000, &swc, 4001, &wc) &&
	     swc.status == IB_WC_SUCCESS && wc.status == IB_WC_SUCCESS;
	kc_sync(&t->bb, true);
	kc_ok(ok && wc.byte_len == 240 && !memcmp(t->bb.va + 40, t->ba.va, 200),
	      "UD SEND: 40-byte GRH + 200 bytes received");
	kc_ok(ok && wc.src_qp == t->a->qp_num && (wc.wc_flags & IB_WC_GRH) &&
	      (wc.wc_flags & IB_WC_WITH_SMAC) &&
	      ether_addr_equal(wc.smac, t->mac),
	      "UD receive completion: src_qp, GRH flag, source MAC");
	kc_ok(ok && (wc.wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) &&
	      wc.network_hdr_type == (v4 ? RDMA_NETWORK_IPV4 :
					   RDMA_NETWORK_IPV6) &&
	      (!v4 || t->bb.va[20] == 0x45),
	      v4 ? "UD GRH: IPv4 header in its last 20 bytes" :
		   "UD GRH: IPv6 network header type");

	/* a wrong Q_Key: the sender completes, nothing arrives */
	wr.wr.wr_id = 4002;
	wr.remote_qkey = 0x22222222;
	ok = !kc_post_recv(t->b, 4003, &rsge, 1) &&
	     !kc_post_send(t->a, &wr.wr) && kc_wait(t->cq, 4002, &wc) &&
	     wc.status == IB_WC_SUCCESS && !kc_poll(t->cq, &wc, 500);
	kc_ok(ok, "UD SEND with a wrong Q_Key: dropped silently");

	rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
}

static atomic_t kc_srq_events = ATOMIC_INIT(0);

static void kc_srq_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		atomic_inc(&kc_srq_events);
}

/* b receives from an SRQ; the limit event fires below the armed limit. */
static void kc_loop_srq(struct kc_loop *t, struct ib_srq *srq)
{
	struct ib_srq_attr sattr = { .srq_limit = 3 };
	struct ib_recv_wr rwr = {};
	const struct ib_recv_wr *bad;
	struct ib_send_wr wr = {};
	struct ib_sge sge, rsge[4];
	struct ib_wc swc, rwc;
	bool ok = true;
	int i;

	kc_fill(t->ba.va, KC_BUF, 11);
	memset(t->bb.va, 0, KC_BUF);
	for (i = 0; i < 4; i++) {
		rsge[i] = kc_sge(t, &t->bb, i * 1024, 1024);
		rwr.wr_id = 5000 + i;
		rwr.sg_list = &rsge[i];
		rwr.num_sge = 1;
		ok = ok && !ib_post_srq_recv(srq, &rwr, &bad);
	}
	kc_ok(ok, "SRQ: four receives posted");
	atomic_set(&kc_srq_events, 0);
	kc_ok(!ib_modify_srq(srq, &sattr, IB_SRQ_LIMIT),
	      "SRQ: limit 3 armed");

	kc_sync(&t->ba, false);
	for (i = 0; i < 2; i++) {
		sge = kc_sge(t, &t->ba, i * 100, 100);
		wr.wr_id = 5100 + i;
		wr.opcode = IB_WR_SEND;
		wr.send_flags = IB_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ok = ok && !kc_post_send(t->a, &wr) &&
		     kc_wait2(t->cq, 5100 + i, &swc, 5000 + i, &rwc) &&
		     swc.status == IB_WC_SUCCESS &&
		     rwc.status == IB_WC_SUCCESS && rwc.byte_len == 100 &&
		     rwc.qp == t->b;
	}
	kc_sync(&t->bb, true);
	kc_ok(ok && !memcmp(t->bb.va, t->ba.va, 100) &&
	      !memcmp(t->bb.va + 1024, t->ba.va + 100, 100),
	      "SRQ: two SENDs received in order from the SRQ");
	msleep(200);
	kc_ok(atomic_read(&kc_srq_events) == 1,
	      "SRQ: limit event once the SRQ fell below 3");
	kc_ok(!ib_query_srq(srq, &sattr) && sattr.max_wr >= 4,
	      "SRQ: query");
}

static void kc_loop_teardown(struct kc_loop *t)
{
	if (t->a && !IS_ERR(t->a))
		ib_destroy_qp(t->a);
	if (t->b && !IS_ERR(t->b))
		ib_destroy_qp(t->b);
	t->a = NULL;
	t->b = NULL;
}

static int kc_loop_pair(struct kc_loop *t, enum ib_qp_type type,
			struct ib_srq *srq)
{
	t->a = kc_create_qp(t->pd, t->cq, type, NULL);
	t->b = kc_create_qp(t->pd, t->cq, type, srq);
	if (!kc_ok(!IS_ERR(t->a) && !IS_ERR(t->b),
		   type == IB_QPT_RC ? "create two RC QPs" :
				       "create two UD QPs"))
		return -EIO;
	if (!kc_ok(!kc_connect(t->a, t->b->qp_num, t->gid_index, &t->gid,
			       t->mac) &&
		   !kc_connect(t->b, t->a->qp_num, t->gid_index, &t->gid,
			       t->mac),
		   "modify both QPs to RTS"))
		return -EIO;
	return 0;
}

static void kc_run_loop(void)
{
	struct ib_srq_init_attr srq_init = {
		.event_handler = kc_srq_event,
		.srq_type = IB_SRQT_BASIC,
		.attr = { .max_wr = 16, .max_sge = 2 },
	};
	struct kc_loop t = {};
	struct ib_srq *srq;

	t.dev = ib_device_get_by_name(ibdev, RDMA_DRIVER_UNKNOWN);
	if (!kc_ok(t.dev, "find the RDMA device"))
		return;
	if (!kc_ok(!kc_find_gid(t.dev, &t.gid_index, &t.gid, t.mac),
		   "a RoCE v2 GID on port 1"))
		goto out_dev;
	pr_info("pvo_kcheck: GID index %u %pI6 MAC %pM\n", t.gid_index,
		t.gid.raw, t.mac);
	t.pd = ib_alloc_pd(t.dev, 0);
	t.cq = kc_create_cq(t.dev);
	if (!kc_ok(!IS_ERR(t.pd) && !IS_ERR(t.cq) &&
		   !kc_buf_alloc(t.dev, &t.ba) && !kc_buf_alloc(t.dev, &t.bb),
		   "PD, CQ and DMA buffers"))
		goto out;

	if (!kc_loop_pair(&t, IB_QPT_RC, NULL)) {
		kc_loop_rc(&t);
		kc_loop_drain(&t);
	}
	kc_loop_teardown(&t);
	if (!kc_loop_pair(&t, IB_QPT_RC, NULL))
		kc_loop_lkey(&t);
	kc_loop_teardown(&t);
	if (!kc_loop_pair(&t, IB_QPT_RC, NULL))
		kc_loop_fastreg(&t);
	kc_loop_teardown(&t);
	if (!kc_loop_pair(&t, IB_QPT_UD, NULL))
		kc_loop_ud(&t);
	kc_loop_teardown(&t);

	srq = ib_create_srq(t.pd, &srq_init);
	if (kc_ok(!IS_ERR(srq), "create an SRQ")) {
		if (!kc_loop_pair(&t, IB_QPT_RC, srq))
			kc_loop_srq(&t, srq);
		kc_loop_teardown(&t);
		ib_destroy_srq(srq);
	}
out:
	kc_buf_free(&t.ba);
	kc_buf_free(&t.bb);
	if (!IS_ERR_OR_NULL(t.cq))
		ib_destroy_cq(t.cq);
	if (!IS_ERR_OR_NULL(t.pd))
		ib_dealloc_pd(t.pd);
out_dev:
	ib_device_put(t.dev);
}

/* ---- rdma_cm: one RC connection, "ping" then "pong" -------------------- */

struct kc_conn {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct kc_buf buf;
	struct completion event;
	enum rdma_cm_event_type last;
	int status;
	struct work_struct work;	/* server: answer the ping */
};

static struct kc_conn *kc_server_conn;
static struct rdma_cm_id *kc_listen_id;

static int kc_conn_setup(struct kc_conn *c, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 8,
			.max_recv_wr = 8,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ib_sge sge;
	int err;

	c->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(c->pd))
		return PTR_ERR(c->pd);
	c->cq = kc_create_cq(id->device);
	if (IS_ERR(c->cq))
		return PTR_ERR(c->cq);
	err = kc_buf_alloc(id->device, &c->buf);
	if (err)
		return err;
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	err = rdma_create_qp(id, c->pd, &init);
	if (err)
		return err;
	sge.addr = c->buf.dma;
	sge.length = 64;
	sge.lkey = c->pd->local_dma_lkey;
	return kc_post_recv(id->qp, 1, &sge, 1);
}

static void kc_conn_free(struct kc_conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	kc_buf_free(&c->buf);
	if (!IS_ERR_OR_NULL(c->cq))
		ib_destroy_cq(c->cq);
	if (!IS_ERR_OR_NULL(c->pd))
		ib_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	kfree(c);
}

static int kc_conn_send(struct kc_conn *c, const char *msg)
{
	struct ib_send_wr wr = {};
	struct ib_sge sge;
	struct ib_wc wc;

	strscpy(c->buf.va + 1024, msg, 64);
	kc_sync(&c->buf, false);
	sge.addr = c->buf.dma + 1024;
	sge.length = strlen(msg) + 1;
	sge.lkey = c->pd->local_dma_lkey;
	wr.wr_id = 2;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (kc_post_send(c->id->qp, &wr) || !kc_wait(c->cq, 2, &wc))
		return -EIO;
	return wc.status == IB_WC_SUCCESS ? 0 : -EIO;
}

static bool kc_conn_recv(struct kc_conn *c, const char *msg)
{
	struct ib_wc wc;

	if (!kc_wait(c->cq, 1, &wc) || wc.status != IB_WC_SUCCESS)
		return false;
	kc_sync(&c->buf, true);
	return !strncmp(c->buf.va, msg, 64);
}

static void kc_server_work(struct work_struct *work)
{
	struct kc_conn *c = container_of(work, struct kc_conn, work);
	bool ok;

	ok = kc_conn_recv(c, "ping") && !kc_conn_send(c, "pong");
	pr_info("pvo_kcheck: server: %s\n",
		ok ? "received ping, sent pong" : "FAILED to answer");
}

static int kc_server_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.rnr_retry_count = 7,
	};
	struct kc_conn *c;
	int err;

	pr_info("pvo_kcheck: server: event %s (%d)\n",
		rdma_event_msg(ev->event), ev->status);
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (kc_server_conn)
			return -EBUSY;	/* rdma_cm destroys the id */
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c)
			return -ENOMEM;
		INIT_WORK(&c->work, kc_server_work);
		err = kc_conn_setup(c, id);
		if (!err)
			err = rdma_accept(id, &param);
		if (err) {
			pr_info("pvo_kcheck: server: accept failed: %d\n", err);
			if (id->qp)
				rdma_destroy_qp(id);
			kc_conn_free(c);	/* not the id: rdma_cm frees it */
			return err;
		}
		c->id = id;
		kc_server_conn = c;
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (kc_server_conn && id == kc_server_conn->id)
			schedule_work(&kc_server_conn->work);
		return 0;
	default:
		return 0;
	}
}

static int kc_run_server(void)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	int err;

	kc_listen_id = rdma_create_id(&init_net, kc_server_handler, NULL,
				      RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(kc_listen_id))
		return PTR_ERR(kc_listen_id);
	err = rdma_bind_addr(kc_listen_id, (struct sockaddr *)&sin);
	if (!err)
		err = rdma_listen(kc_listen_id, 4);
	if (err) {
		rdma_destroy_id(kc_listen_id);
		kc_listen_id = NULL;
		return err;
	}
	pr_info("pvo_kcheck: server: listening on port %d\n", port);
	return 0;
}

static int kc_client_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kc_conn *c = id->context;

	pr_info("pvo_kcheck: client: event %s (%d)\n",
		rdma_event_msg(ev->event), ev->status);
	c->last = ev->event;
	c->status = ev->status;
	complete(&c->event);
	return 0;
}

static bool kc_client_wait(struct kc_conn *c, enum rdma_cm_event_type want)
{
	if (!wait_for_completion_timeout(&c->event,
					 msecs_to_jiffies(KC_TIMEOUT_MS * 2)))
		return false;
	reinit_completion(&c->event);
	return c->last == want;
}

static void kc_run_client(void)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	struct kc_conn *c;
	bool ok;

	if (!kc_ok(in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL),
		   "peer= is an IPv4 address"))
		return;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return;
	init_completion(&c->event);
	c->id = rdma_create_id(&init_net, kc_client_handler, c, RDMA_PS_TCP,
			       IB_QPT_RC);
	if (IS_ERR(c->id)) {
		c->id = NULL;
		goto out;
	}
	ok = !rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sin,
				KC_TIMEOUT_MS) &&
	     kc_client_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!kc_ok(ok, "rdma_cm: address resolved"))
		goto out;
	ok = !rdma_resolve_route(c->id, KC_TIMEOUT_MS) &&
	     kc_client_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!kc_ok(ok, "rdma_cm: route resolved"))
		goto out;
	if (!kc_ok(!kc_conn_setup(c, c->id), "rdma_cm: PD, CQ, QP"))
		goto out;
	ok = !rdma_connect(c->id, &param) &&
	     kc_client_wait(c, RDMA_CM_EVENT_ESTABLISHED);
	if (!kc_ok(ok, "rdma_cm: connection established (CM MADs over GSI)"))
		goto out;
	kc_ok(!kc_conn_send(c, "ping") && kc_conn_recv(c, "pong"),
	      "rdma_cm: ping sent, pong received");
	rdma_disconnect(c->id);
	kc_client_wait(c, RDMA_CM_EVENT_DISCONNECTED);
out:
	kc_conn_free(c);
}

static int __init kc_init(void)
{
	if (!strcmp(mode, "server"))
		return kc_run_server();
	if (!strcmp(mode, "loop"))
		kc_run_loop();
	else if (!strcmp(mode, "client"))
		kc_run_client();
	else
		return -EINVAL;
	pr_info("pvo_kcheck: result: passed=%d failed=%d\n", kc_passed,
		kc_failed);
	return kc_failed ? -EIO : 0;
}

static void __exit kc_exit(void)
{
	if (kc_listen_id)
		rdma_destroy_id(kc_listen_id);
	if (kc_server_conn) {
		cancel_work_sync(&kc_server_conn->work);
		kc_conn_free(kc_server_conn);
	}
}

module_init(kc_init);
module_exit(kc_exit);
MODULE_DESCRIPTION("In-guest check of pvrdma_overlay kernel verbs");
MODULE_LICENSE("Dual BSD/GPL");
