// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-mw: memory windows in one process, on QPs looped back through the
 * device. Side a is the remote requester; side b owns a buffer registered
 * with LOCAL_WRITE | MW_BIND only, and grants remote access to parts of
 * it through windows.
 *
 *   pvo-mw -d DEV -g GID_INDEX
 *
 * Covered: ibv_query_device (MEM_WINDOW, TYPE_2B, max_mw); ibv_alloc_mw
 * of both types; type 1 through ibv_bind_mw (new key byte, BIND_MW
 * completion), RDMA WRITE and READ through its key with the data
 * checked, its bounds and rights (outside the window, the MR's own key,
 * an atomic without REMOTE_ATOMIC), rebinding (the old key dead, the new
 * rights enforced), unbinding (length 0), ZERO_BASED refused, LOCAL_INV
 * of a type 1 key refused, ibv_dereg_mr of an MR with a window bound
 * refused; type 2 bound with IBV_WR_BIND_MW and with ibv_wr_bind_mw, an
 * atomic and a WRITE through it, another QP of the same PD refused (2B),
 * SEND_WITH_INV (the receive names the invalidated key) and
 * ibv_wr_local_inv invalidating it, a second bind of a bound window
 * refused, a window bound through a UC QP; bind errors (MR without
 * MW_BIND, range past the MR, remote write to an MR without LOCAL_WRITE)
 * with IBV_WC_MW_BIND_ERR. Every refused remote access completes with
 * IBV_WC_REM_ACCESS_ERR and leaves b's bytes as they were.
 *
 * Prints one TAP line per check, then "pvo-mw: passed=N failed=M", and
 * exits 0 only if every check passed. On rdma_rxe the same checks run
 * (where rxe's status or errno differ from ours, a refused LOCAL_INV or
 * dereg, either is accepted there; UC windows are skipped): rxe is a
 * control, not the reference. Linux 6.1's rxe checks a window's accesses
 * against the MR instead of the window, so the bounds checks must fail
 * on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define BUF_LEN		65536
#define WAIT_MS		20000
#define CQE		32
#define RW		(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define REMOTE_ALL	(RW | IBV_ACCESS_REMOTE_ATOMIC)
#define OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |	\
			 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |	\
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |		\
			 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define UC_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |	\
			 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

/* Two connected QPs: a (requester) and b (the windows' side). */
struct pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *bx;
};

static struct pt_dev dev;
static bool is_pvo;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;

static void make_pair(struct pair *p, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex ia = {};
	struct pt_conn c = pt_conn_default;
	int err;

	p->acq = ibv_create_cq(dev.ctx, CQE, NULL, NULL, 0);
	p->bcq = ibv_create_cq(dev.ctx, CQE, NULL, NULL, 0);
	if (!p->acq || !p->bcq)
		pt_die("ibv_create_cq");
	ia.qp_type = type;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.pd = dev.pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = type == IBV_QPT_RC ? OPS : UC_OPS;
	ia.send_cq = ia.recv_cq = p->acq;
	p->a = ibv_create_qp_ex(dev.ctx, &ia);
	ia.send_cq = ia.recv_cq = p->bcq;
	p->b = ibv_create_qp_ex(dev.ctx, &ia);
	if (!p->a || !p->b)
		pt_die("ibv_create_qp_ex");
	p->bx = ibv_qp_to_qp_ex(p->b);
	c.access = REMOTE_ALL;
	c.retry_cnt = 1;
	err = pt_connect_pair(&dev, p->a, p->b, &c);
	if (err) {
		errno = err;
		pt_die("connect QPs");
	}
}

static void free_pair(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_destroy_cq(p->acq);
	ibv_destroy_cq(p->bcq);
}

/* One completion on cq: wr_id, opcode (success only) and status. */
static bool expect(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode op,
		   enum ibv_wc_status st, const char *what)
{
	struct ibv_wc wc;

	if (!pt_poll(cq, &wc, WAIT_MS))
		return pt_tap_ok(false, "%s: no completion in %d ms", what,
				 WAIT_MS);
	return pt_tap_ok(wc.wr_id == wr_id && wc.status == st &&
				 (st != IBV_WC_SUCCESS || wc.opcode == op),
			 "%s: %s (wr_id %llu, opcode %d)", what,
			 ibv_wc_status_str(wc.status),
			 (unsigned long long)wc.wr_id, wc.opcode);
}

/* a's RDMA op of len bytes between abuf + loff and raddr (rkey). */
static int post_rdma(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
		     size_t loff, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {(uintptr_t)abuf + loff, len, amr->lkey};
	struct ibv_send_wr wr = {}, *bad;

	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static enum ibv_wc_opcode wc_op(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_RDMA_WRITE;
	}
}

/* An access that must fail: on a pair of its own (it goes to ERR), with
 * b's bytes unchanged. */
static void refused(enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		    uint32_t len, const char *what)
{
	uint64_t sum = pt_checksum(bbuf, BUF_LEN);
	struct pair p;

	make_pair(&p, IBV_QPT_RC);
	memset(abuf, 0x5c, len);
	if (post_rdma(p.a, 99, op, 0, len, raddr, rkey))
		pt_tap_ok(false, "%s: post failed", what);
	else
		expect(p.acq, 99, wc_op(op), IBV_WC_REM_ACCESS_ERR, what);
	pt_tap_ok(pt_checksum(bbuf, BUF_LEN) == sum, "%s: b unchanged", what);
	free_pair(&p);
}

/* ibv_bind_mw (type 1) on qp; its completion on cq. */
static int bind1(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
		 size_t off, size_t len, unsigned int access, uint64_t wr_id)
{
	struct ibv_mw_bind b = {};

	b.wr_id = wr_id;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)mr->addr + off;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	return ibv_bind_mw(qp, mw, &b);
}

/* IBV_WR_BIND_MW (type 2) through ibv_post_send. */
static int bind2(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		 struct ibv_mr *mr, size_t off, size_t len,
		 unsigned int access, uint64_t wr_id)
{
	struct ibv_send_wr wr = {}, *bad;

	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)mr->addr + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return ibv_post_send(qp, &wr, &bad);
}

static void test_caps(void)
{
	pt_tap_ok((dev.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
			  (dev.attr.device_cap_flags &
			   IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
			  dev.attr.max_mw > 0,
		  "ibv_query_device: MEM_WINDOW, MEM_WINDOW_TYPE_2B, max_mw %d",
		  dev.attr.max_mw);
}

static void test_type1(struct ibv_mw *mw)
{
	uint64_t base = (uintptr_t)bbuf + 4096;
	uint32_t key0 = mw->rkey, k1;
	struct ibv_mw_bind zb = {};
	struct pair p;
	int ret;

	make_pair(&p, IBV_QPT_RC);
	ret = bind1(p.b, mw, bmr, 4096, 8192, RW, 1);
	k1 = mw->rkey;
	pt_tap_ok(ret == 0 && k1 != key0 && (k1 >> 8) == (key0 >> 8),
		  "type 1: ibv_bind_mw of 8 KiB, write and read (%s, key 0x%x "
		  "-> 0x%x)", strerror(ret), key0, k1);
	expect(p.bcq, 1, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "type 1: the bind completes with IBV_WC_BIND_MW");

	pt_stream_fill(&(struct pt_stream){1}, abuf, 3000);
	memset(bbuf + 4096 + 100, 0, 3000);
	post_rdma(p.a, 2, IBV_WR_RDMA_WRITE, 0, 3000, base + 100, k1);
	expect(p.acq, 2, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS,
	       "type 1: RDMA WRITE through the window's key");
	pt_tap_ok(!memcmp(bbuf + 4096 + 100, abuf, 3000),
		  "type 1: the WRITE landed in the window");
	memset(abuf + 16384, 0, 3000);
	post_rdma(p.a, 3, IBV_WR_RDMA_READ, 16384, 3000, base + 100, k1);
	expect(p.acq, 3, IBV_WC_RDMA_READ, IBV_WC_SUCCESS,
	       "type 1: RDMA READ through the window's key");
	pt_tap_ok(!memcmp(abuf + 16384, bbuf + 4096 + 100, 3000),
		  "type 1: the READ brought the window's bytes");
	free_pair(&p);

	refused(IBV_WR_RDMA_WRITE, base + 8192 - 100, k1, 200,
		"type 1: WRITE crossing the window's end -> REM_ACCESS_ERR");
	refused(IBV_WR_RDMA_READ, base - 1, k1, 2,
		"type 1: READ starting before the window -> REM_ACCESS_ERR");
	refused(IBV_WR_RDMA_WRITE, base, bmr->rkey, 64,
		"type 1: WRITE with the MR's own key (no remote rights) -> "
		"REM_ACCESS_ERR");
	refused(IBV_WR_ATOMIC_FETCH_AND_ADD, (base + 7) & ~7ull, k1, 8,
		"type 1: atomic through a window without REMOTE_ATOMIC -> "
		"REM_ACCESS_ERR");

	ret = ibv_dereg_mr(bmr);
	pt_tap_ok(ret == EBUSY || (!is_pvo && ret),
		  "ibv_dereg_mr of an MR with a window bound fails (%s)",
		  strerror(ret));

	/* rebind: 4 KiB at the MR's start, read only */
	make_pair(&p, IBV_QPT_RC);
	ret = bind1(p.b, mw, bmr, 0, 4096, IBV_ACCESS_REMOTE_READ, 4);
	pt_tap_ok(ret == 0 && mw->rkey != k1,
		  "type 1: bound again, read only (key 0x%x)", mw->rkey);
	expect(p.bcq, 4, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "type 1: the second bind completes");
	post_rdma(p.a, 5, IBV_WR_RDMA_READ, 16384, 100, (uintptr_t)bbuf + 10,
		  mw->rkey);
	expect(p.acq, 5, IBV_WC_RDMA_READ, IBV_WC_SUCCESS,
	       "type 1: READ through the new key");
	zb.bind_info.mr = bmr;
	zb.bind_info.addr = (uintptr_t)bbuf;
	zb.bind_info.length = 4096;
	zb.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_ZERO_BASED;
	ret = ibv_bind_mw(p.b, mw, &zb);
	pt_tap_ok(ret == EINVAL, "type 1: a zero-based bind -> EINVAL (%s)",
		  strerror(ret));
	free_pair(&p);
	refused(IBV_WR_RDMA_READ, base + 100, k1, 100,
		"type 1: READ with the previous binding's key -> "
		"REM_ACCESS_ERR");
	refused(IBV_WR_RDMA_WRITE, (uintptr_t)bbuf + 10, mw->rkey, 100,
		"type 1: WRITE through the read-only binding -> "
		"REM_ACCESS_ERR");

	/* LOCAL_INV is for type 2 windows */
	make_pair(&p, IBV_QPT_RC);
	{
		struct ibv_send_wr wr = {}, *bad;
		struct ibv_wc wc = {};
		int got;

		wr.wr_id = 6;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = mw->rkey;
		ret = ibv_post_send(p.b, &wr, &bad);
		got = ret ? 0 : pt_poll(p.bcq, &wc, WAIT_MS);
		pt_tap_ok(got && (wc.status == IBV_WC_LOC_ACCESS_ERR ||
				   (!is_pvo &&
				    wc.status == IBV_WC_LOC_QP_OP_ERR)),
			  "type 1: LOCAL_INV of its key fails (%s)",
			  ret ? strerror(ret) : ibv_wc_status_str(wc.status));
	}
	free_pair(&p);

	/* unbind: length 0 */
	make_pair(&p, IBV_QPT_RC);
	k1 = mw->rkey;
	ret = bind1(p.b, mw, bmr, 0, 0, 0, 7);
	pt_tap_ok(ret == 0, "type 1: ibv_bind_mw of length 0 (%s)",
		  strerror(ret));
	expect(p.bcq, 7, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "type 1: the unbind completes");
	free_pair(&p);
	refused(IBV_WR_RDMA_READ, (uintptr_t)bbuf + 10, k1, 100,
		"type 1: READ after the unbind -> REM_ACCESS_ERR");
	refused(IBV_WR_RDMA_READ, (uintptr_t)bbuf + 10, mw->rkey, 100,
		"type 1: READ with the unbound window's key -> REM_ACCESS_ERR");
}

static void test_type2(struct ibv_mw *mw)
{
	uint64_t base = (uintptr_t)bbuf + 16384, *target, got;
	uint32_t k = ibv_inc_rkey(mw->rkey);
	struct ibv_mw_bind_info info = {};
	struct pair p, q;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc = {};
	int ret, polled;

	make_pair(&p, IBV_QPT_RC);
	ret = bind2(p.b, mw, k, bmr, 16384, 4096, REMOTE_ALL, 10);
	pt_tap_ok(ret == 0, "type 2: IBV_WR_BIND_MW posted (%s)",
		  strerror(ret));
	expect(p.bcq, 10, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "type 2: the bind completes");
	target = (uint64_t *)(bbuf + 16384 + 64);
	*target = 0x1122334455667788ull;
	post_rdma(p.a, 11, IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8,
		  (uintptr_t)target, k);
	expect(p.acq, 11, IBV_WC_FETCH_ADD, IBV_WC_SUCCESS,
	       "type 2: FETCH_AND_ADD through the window");
	memcpy(&got, abuf + 8192, 8);
	pt_tap_ok(got == 0x1122334455667788ull &&
			  *target == 0x1122334455667789ull,
		  "type 2: the atomic returned the old value and added");
	pt_stream_fill(&(struct pt_stream){2}, abuf, 1000);
	post_rdma(p.a, 12, IBV_WR_RDMA_WRITE, 0, 1000, base + 200, k);
	expect(p.acq, 12, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS,
	       "type 2: RDMA WRITE through the window");
	pt_tap_ok(!memcmp(bbuf + 16384 + 200, abuf, 1000),
		  "type 2: the WRITE landed");

	/* 2B: bound to p.b; q.b is another QP of the same PD */
	make_pair(&q, IBV_QPT_RC);
	post_rdma(q.a, 13, IBV_WR_RDMA_WRITE, 0, 100, base + 200, k);
	expect(q.acq, 13, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR,
	       "type 2: WRITE arriving at another QP of the PD -> "
	       "REM_ACCESS_ERR");
	free_pair(&q);

	/* SEND_WITH_INV from p.a invalidates it */
	sge = (struct ibv_sge){(uintptr_t)bbuf + 32768, 512, bmr->lkey};
	rwr.wr_id = 14;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	ibv_post_recv(p.b, &rwr, &rbad);
	sge = (struct ibv_sge){(uintptr_t)abuf, 100, amr->lkey};
	wr.wr_id = 15;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.invalidate_rkey = k;
	ret = ibv_post_send(p.a, &wr, &bad);
	expect(p.acq, 15, IBV_WC_SEND, IBV_WC_SUCCESS,
	       "type 2: SEND_WITH_INV naming the window's key");
	polled = ret ? 0 : pt_poll(p.bcq, &wc, WAIT_MS);
	pt_tap_ok(polled && wc.wr_id == 14 &&
			  wc.status == IBV_WC_SUCCESS &&
			  (wc.wc_flags & IBV_WC_WITH_INV) &&
			  wc.invalidated_rkey == k,
		  "type 2: the receive has IBV_WC_WITH_INV and names 0x%x "
		  "(wr_id %llu, %s, flags 0x%x, 0x%x)", k,
		  (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		  wc.wc_flags, wc.invalidated_rkey);
	post_rdma(p.a, 16, IBV_WR_RDMA_WRITE, 0, 100, base + 200, k);
	expect(p.acq, 16, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR,
	       "type 2: WRITE after SEND_WITH_INV -> REM_ACCESS_ERR");
	free_pair(&p);

	/* the ibv_wr_* API: bind, use, local invalidation */
	make_pair(&p, IBV_QPT_RC);
	k = ibv_inc_rkey(k);
	info.mr = bmr;
	info.addr = base;
	info.length = 4096;
	info.mw_access_flags = RW;
	ibv_wr_start(p.bx);
	p.bx->wr_id = 17;
	p.bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p.bx, mw, k, &info);
	ret = ibv_wr_complete(p.bx);
	pt_tap_ok(ret == 0, "type 2: ibv_wr_bind_mw (%s)", strerror(ret));
	expect(p.bcq, 17, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "type 2: the ibv_wr_bind_mw bind completes");
	pt_stream_fill(&(struct pt_stream){3}, abuf, 500);
	post_rdma(p.a, 18, IBV_WR_RDMA_WRITE, 0, 500, base + 1000, k);
	expect(p.acq, 18, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS,
	       "type 2: WRITE through the key ibv_wr_bind_mw set");
	pt_tap_ok(!memcmp(bbuf + 16384 + 1000, abuf, 500),
		  "type 2: that WRITE landed");
	ibv_wr_start(p.bx);
	p.bx->wr_id = 19;
	p.bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(p.bx, k);
	ret = ibv_wr_complete(p.bx);
	expect(p.bcq, 19, IBV_WC_LOCAL_INV, IBV_WC_SUCCESS,
	       "type 2: ibv_wr_local_inv of the window's key");
	post_rdma(p.a, 20, IBV_WR_RDMA_WRITE, 0, 100, base + 1000, k);
	expect(p.acq, 20, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR,
	       "type 2: WRITE after LOCAL_INV -> REM_ACCESS_ERR");
	free_pair(&p);

	/* a bound type 2 window binds again only once invalidated */
	make_pair(&p, IBV_QPT_RC);
	k = ibv_inc_rkey(k);
	bind2(p.b, mw, k, bmr, 0, 4096, RW, 21);
	expect(p.bcq, 21, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "type 2: bound again after the invalidation");
	bind2(p.b, mw, ibv_inc_rkey(k), bmr, 0, 4096, RW, 22);
	expect(p.bcq, 22, IBV_WC_BIND_MW, IBV_WC_MW_BIND_ERR,
	       "type 2: IBV_WR_BIND_MW of a bound window -> MW_BIND_ERR");
	free_pair(&p);
	mw->rkey = k;
}

/* A window bound through a UC QP serves UC WRITEs. */
static void test_uc(struct ibv_mw *mw)
{
	uint32_t k = ibv_inc_rkey(mw->rkey);
	uint64_t t0;
	struct pair p;
	bool landed = false;

	if (!is_pvo) {
		/* rdma-core 56's rxe provider has no BIND_MW for UC */
		pt_tap_ok(true, "UC windows # SKIP not pvrdma_overlay");
		return;
	}
	make_pair(&p, IBV_QPT_UC);
	bind2(p.b, mw, k, bmr, 40960, 8192, IBV_ACCESS_REMOTE_WRITE, 30);
	expect(p.bcq, 30, IBV_WC_BIND_MW, IBV_WC_SUCCESS,
	       "UC: type 2 window bound through a UC QP");
	pt_stream_fill(&(struct pt_stream){4}, abuf, 4000);
	memset(bbuf + 40960, 0, 8192);
	post_rdma(p.a, 31, IBV_WR_RDMA_WRITE, 0, 4000,
		  (uintptr_t)bbuf + 40960 + 100, k);
	expect(p.acq, 31, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS,
	       "UC: RDMA WRITE through it");
	/* UC has no ACK: the bytes may land after the send completion */
	for (t0 = pt_now_ms(); pt_now_ms() - t0 < WAIT_MS;) {
		landed = !memcmp(bbuf + 40960 + 100, abuf, 4000);
		if (landed)
			break;
		usleep(1000);
	}
	pt_tap_ok(landed, "UC: the WRITE landed in the window");
	free_pair(&p);
	mw->rkey = k;
}

static void bind_error(struct ibv_mw *mw, struct ibv_mr *mr, size_t off,
		       size_t len, unsigned int access, const char *what)
{
	struct pair p;
	int ret;

	make_pair(&p, IBV_QPT_RC);
	ret = bind1(p.b, mw, mr, off, len, access, 40);
	if (ret)
		pt_tap_ok(false, "%s: ibv_bind_mw: %s", what, strerror(ret));
	else
		expect(p.bcq, 40, IBV_WC_BIND_MW, IBV_WC_MW_BIND_ERR, what);
	free_pair(&p);
}

static void test_bind_errors(struct ibv_mw *mw)
{
	struct ibv_mr *nobind, *nolw;

	nobind = ibv_reg_mr(dev.pd, bbuf, 8192, IBV_ACCESS_LOCAL_WRITE);
	nolw = ibv_reg_mr(dev.pd, bbuf, 8192, IBV_ACCESS_MW_BIND);
	if (!nobind || !nolw)
		pt_die("ibv_reg_mr");
	bind_error(mw, nobind, 0, 4096, RW,
		   "bind to an MR without MW_BIND -> MW_BIND_ERR");
	bind_error(mw, nolw, 0, 4096, IBV_ACCESS_REMOTE_WRITE,
		   "bind with REMOTE_WRITE to an MR without LOCAL_WRITE -> "
		   "MW_BIND_ERR");
	bind_error(mw, bmr, BUF_LEN - 4096, 8192, RW,
		   "bind past the MR's end -> MW_BIND_ERR");
	ibv_dereg_mr(nobind);
	ibv_dereg_mr(nolw);
}

static void usage(void)
{
	fprintf(stderr, "usage: pvo-mw -d DEV -g GID_INDEX\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct pt_args args = {0};
	struct ibv_mw *mw1, *mw2, *bad;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pt_parse_args(argc, argv, "", NULL, NULL, &args, usage);
	if (args.peer)
		usage(); /* every QP is local */
	pt_open(&dev, args.dev, args.gid_index);
	is_pvo = !strncmp(ibv_get_device_name(dev.ctx->device),
			  "pvrdma_overlay", strlen("pvrdma_overlay"));
	abuf = aligned_alloc(4096, BUF_LEN);
	bbuf = aligned_alloc(4096, BUF_LEN);
	if (!abuf || !bbuf)
		pt_die("aligned_alloc");
	memset(abuf, 0, BUF_LEN);
	memset(bbuf, 0, BUF_LEN);
	amr = ibv_reg_mr(dev.pd, abuf, BUF_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ);
	bmr = ibv_reg_mr(dev.pd, bbuf, BUF_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!amr || !bmr)
		pt_die("ibv_reg_mr");

	test_caps();
	mw1 = ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2);
	pt_tap_ok(mw1 && mw2 && mw1->rkey != mw2->rkey,
		  "ibv_alloc_mw of type 1 and type 2 (rkeys 0x%x, 0x%x)",
		  mw1 ? mw1->rkey : 0, mw2 ? mw2->rkey : 0);
	if (!mw1 || !mw2)
		pt_die("ibv_alloc_mw");
	errno = 0;
	bad = ibv_alloc_mw(dev.pd, (enum ibv_mw_type)3);
	pt_tap_ok(!bad, "ibv_alloc_mw of type 3 fails (%s)", strerror(errno));

	test_type1(mw1);
	test_type2(mw2);
	test_uc(mw2);
	test_bind_errors(mw1);

	ret = ibv_dealloc_mw(mw1);
	pt_tap_ok(ret == 0, "ibv_dealloc_mw of type 1 (%s)", strerror(ret));
	ret = ibv_dealloc_mw(mw2);
	pt_tap_ok(ret == 0, "ibv_dealloc_mw of type 2 (%s)",
		  strerror(ret));
	ret = ibv_dereg_mr(bmr);
	pt_tap_ok(ret == 0, "ibv_dereg_mr once its windows are gone (%s)",
		  strerror(ret));
	ibv_dereg_mr(amr);
	pt_close(&dev);
	printf("pvo-mw: passed=%d failed=%d\n", pt_tap_n - pt_tap_failed,
	       pt_tap_failed);
	return pt_tap_failed ? 1 : 0;
}
