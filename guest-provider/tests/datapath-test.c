// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The provider's data path (post_send, post_recv, post_srq_recv, poll_cq,
 * req_notify_cq) against a fake device in this process: the rings and the
 * doorbell record page are ordinary memory, the doorbell "MMIO" page too.
 * The fake device reads WQEs and writes CQEs with the layouts and the
 * ordering of include/pvo-device.h, so this checks the provider's half of
 * the contract without a kernel or a back-end:
 *   - WQE layouts for every opcode, inline data, SGEs, flags, UD fields;
 *   - limits (EINVAL), full rings (ENOMEM) with *bad_wr, counter wrap;
 *   - the doorbell record protocol, single-threaded step by step and with
 *     several posting threads racing a device thread (no lost doorbell, no
 *     QP twice in the record ring, every WQE consumed exactly once);
 *   - CQE -> ibv_wc mapping, CQ arming;
 *   - the ibv_wr_* API (the same WQEs as post_send, all-or-nothing
 *     batches, wr_abort, its errors) and the extended CQ polling API.
 * Prints one line per check and "N passed, N failed"; exit status 1 on a
 * failure.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <util/compiler.h>

#include "ring.h"

#define PAGE 4096

static int passed, failed;

static void check(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s - ", cond ? "ok" : "not ok");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (cond)
		passed++;
	else
		failed++;
}

static void *xalloc_page(void)
{
	void *p;

	if (posix_memalign(&p, PAGE, PAGE)) {
		fprintf(stderr, "datapath-test: out of memory\n");
		exit(2);
	}
	memset(p, 0, PAGE);
	return p;
}

/* ------------------------------------------------------------------ */
/* fake objects */

static struct pvo_context *fake_context(void)
{
	struct pvo_context *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		exit(2);
	ctx->db_page = xalloc_page();
	ctx->db_ring = xalloc_page();
	pthread_spin_init(&ctx->db_lock, PTHREAD_PROCESS_PRIVATE);
	ctx->limits.max_qp_wr = 16384;
	ctx->limits.max_sge = 16;
	ctx->limits.max_cqe = 65536;
	ctx->limits.max_srq_wr = 16384;
	ctx->limits.max_srq_sge = 16;
	ctx->limits.max_inline_data = PVO_MAX_INLINE_DATA;
	return ctx;
}

static void free_context(struct pvo_context *ctx)
{
	pthread_spin_destroy(&ctx->db_lock);
	free(ctx->db_page);
	free(ctx->db_ring);
	free(ctx);
}

static struct pvo_qp *fake_qp(struct pvo_context *ctx, enum ibv_qp_type type,
			      uint32_t handle, const struct ibv_qp_cap *cap,
			      struct pvo_srq *srq, int sig_all)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = type,
		.cap = *cap,
		.srq = srq ? &srq->ibv_srq : NULL,
		.sq_sig_all = sig_all,
	};
	struct pvo_qp *qp = calloc(1, sizeof(*qp));

	if (!qp || pvo_qp_alloc_rings(qp, &attr, PAGE))
		exit(2);
	qp->ibv_qp.context = &ctx->ibv_ctx.context;
	qp->ibv_qp.qp_type = type;
	qp->ibv_qp.state = IBV_QPS_RTS;
	qp->handle = handle;
	return qp;
}

static void free_qp(struct pvo_qp *qp)
{
	pvo_qp_free_rings(qp);
	free(qp);
}

/* ------------------------------------------------------------------ */
/* the fake device's view */

static uint32_t ld(__le32 *p)
{
	return pvo_load_acquire(p);
}

static void st(__le32 *p, uint32_t v)
{
	pvo_store_release(p, v);
}

static struct pvo_send_wqe *sq_wqe(struct pvo_qp *qp, uint32_t i)
{
	return pvo_ring_entry(&qp->sq.ring, i);
}

static struct pvo_sge *wqe_sges(void *wqe, size_t hdr)
{
	return (struct pvo_sge *)((uint8_t *)wqe + hdr);
}

static uint32_t db_prod(struct pvo_context *ctx)
{
	return ld(&((struct pvo_ring_hdr *)ctx->db_ring)->prod);
}

static uint32_t db_record(struct pvo_context *ctx, uint32_t i)
{
	__le32 *r = (__le32 *)((uint8_t *)ctx->db_ring + PVO_DB_RING_ENTRY_OFF);

	return le32toh(r[i % PVO_DB_RING_ENTRIES]);
}

static uint32_t mmio_value(struct pvo_context *ctx)
{
	return le32toh(atomic_load_explicit((_Atomic(uint32_t) *)ctx->db_page,
					    memory_order_relaxed));
}

/* Pops one doorbell record the way the device does; returns the handle. */
static uint32_t device_pop_record(struct pvo_context *ctx, struct pvo_qp *qp)
{
	struct pvo_ring_hdr *db = ctx->db_ring;
	uint32_t cons = ld(&db->cons), h;

	h = db_record(ctx, cons);
	st(&db->cons, cons + 1);
	atomic_store_explicit(pvo_counter(&qp->sq.ring.hdr->db_pending), 0,
			      memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	return h;
}

/* ------------------------------------------------------------------ */

static const struct ibv_qp_cap rc_cap = {
	.max_send_wr = 8, .max_recv_wr = 8,
	.max_send_sge = 4, .max_recv_sge = 3, .max_inline_data = 100,
};

static void test_ring_sizes(struct pvo_context *ctx)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 100, .max_recv_wr = 3,
		.max_send_sge = 16, .max_recv_sge = 16, .max_inline_data = 256,
	};
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 1, &cap, NULL, 0);
	struct ibv_qp_cap none = {};
	struct pvo_cq cq = {};
	struct pvo_srq srq = {};
	struct ibv_srq_attr sattr = { .max_wr = 1000, .max_sge = 2 };

	check(qp->sq.ring.num_entries == 128 && qp->rq.ring.num_entries == 4,
	      "rings: entries rounded up to powers of two (SQ %u, RQ %u)",
	      qp->sq.ring.num_entries, qp->rq.ring.num_entries);
	check(qp->sq.ring.shift == 9 && qp->rq.ring.shift == 9,
	      "rings: strides from pvo_send_wqe_shift / pvo_recv_wqe_shift (SQ %u, RQ %u)",
	      1u << qp->sq.ring.shift, 1u << qp->rq.ring.shift);
	check(qp->sq.ring.ring_size == (1 + 128 * 512 / 4096) * 4096 &&
	      ((uintptr_t)qp->sq.ring.buf & 4095) == 0,
	      "rings: SQ is 1 header page + entries, page-aligned (%zu bytes)",
	      qp->sq.ring.ring_size);
	free_qp(qp);

	qp = fake_qp(ctx, IBV_QPT_RC, 1, &none, NULL, 0);
	check(qp->sq.ring.num_entries == 1 && qp->sq.ring.shift == 7 &&
	      qp->rq.ring.num_entries == 1 && qp->rq.ring.shift == 5 &&
	      qp->rq.ring.ring_size == 2 * 4096,
	      "rings: zero caps give one-entry rings of the minimum strides");
	free_qp(qp);

	check(pvo_cq_alloc_ring(&cq, 100, 65536, PAGE) == 0 &&
	      cq.ring.num_entries == 128 && cq.ring.shift == 6 &&
	      cq.ring.ring_size == 3 * 4096,
	      "CQ of 100: 128 entries of 64 bytes after one header page");
	pvo_cq_free_ring(&cq);
	check(pvo_cq_alloc_ring(&cq, 127, 65536, PAGE) == 0 &&
	      cq.ring.num_entries == 128, "CQ of 127: 128 entries (cqe + 1)");
	pvo_cq_free_ring(&cq);
	check(pvo_cq_alloc_ring(&cq, 128, 65536, PAGE) == 0 &&
	      cq.ring.num_entries == 256, "CQ of 128: 256 entries (cqe + 1)");
	pvo_cq_free_ring(&cq);
	check(pvo_cq_alloc_ring(&cq, 65536, 65536, PAGE) == 0 &&
	      cq.ring.num_entries == 65536,
	      "CQ of max_cqe: max_cqe entries, not more");
	pvo_cq_free_ring(&cq);

	check(pvo_srq_alloc_ring(&srq, &sattr, PAGE) == 0 &&
	      srq.rq.ring.num_entries == 1024 && srq.rq.ring.shift == 6,
	      "SRQ of 1000 x 2 SGEs: 1024 entries of 64 bytes");
	pvo_wq_free(&srq.rq);
}

static void test_send_layouts(struct pvo_context *ctx)
{
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 0x1234, &rc_cap, NULL, 0);
	struct ibv_sge sg[3] = {
		{ .addr = 0x1000, .length = 10, .lkey = 0x101 },
		{ .addr = 0x2000000000ull, .length = 20, .lkey = 0x202 },
		{ .addr = 0x3003, .length = 30, .lkey = 0x303 },
	};
	struct ibv_send_wr wr = {}, *bad = NULL;
	struct pvo_send_wqe *w;
	struct pvo_sge *s;
	int ret;

	wr.wr_id = 0xdeadbeefcafe0001ull;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.sg_list = sg;
	wr.num_sge = 3;
	wr.imm_data = htobe32(0x11223344);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 0);
	s = wqe_sges(w, 64);
	check(ret == 0 && ld(&qp->sq.ring.hdr->prod) == 1,
	      "SEND_WITH_IMM posted, SQ prod 1");
	check(le64toh(w->wr_id) == wr.wr_id && w->opcode == PVO_WR_SEND_WITH_IMM &&
	      w->flags == (PVO_WQE_F_SIGNALED | PVO_WQE_F_SOLICITED | PVO_WQE_F_FENCE) &&
	      w->num_sge == 3 && w->inline_len == 0,
	      "SEND_WITH_IMM header: wr_id, opcode, flags, num_sge");
	check(memcmp(&w->imm_data, "\x11\x22\x33\x44", 4) == 0,
	      "imm_data stays in network byte order");
	check(le64toh(s[1].addr) == 0x2000000000ull && le32toh(s[1].length) == 20 &&
	      le32toh(s[1].lkey) == 0x202 && le64toh(s[2].addr) == 0x3003,
	      "SGEs follow the 64-byte header");
	check(db_prod(ctx) == 1 && db_record(ctx, 0) == 0x1234 &&
	      ld(&qp->sq.ring.hdr->db_pending) == 1 && mmio_value(ctx) == 0x1234,
	      "doorbell: record with the QP handle, db_pending set, page written");

	/* a second post while the record waits: no second record */
	atomic_store((_Atomic(uint32_t) *)ctx->db_page, 0);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = 0;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = 0x7f0000001234ull;
	wr.wr.rdma.rkey = 0xabcd01;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 1);
	check(ret == 0 && db_prod(ctx) == 1 && mmio_value(ctx) == 0,
	      "doorbell: a post while the record is queued adds no record and no kick");
	check(w->opcode == PVO_WR_RDMA_WRITE && w->flags == 0 && w->imm_data == 0 &&
	      le64toh(w->u.rdma.remote_addr) == 0x7f0000001234ull &&
	      le32toh(w->u.rdma.rkey) == 0xabcd01,
	      "RDMA_WRITE: remote address and rkey, unsignaled");

	check(device_pop_record(ctx, qp) == 0x1234, "device pops the record");
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 2);
	check(ret == 0 && db_prod(ctx) == 2 && db_record(ctx, 1) == 0x1234 &&
	      mmio_value(ctx) == 0x1234,
	      "doorbell: after the device popped it, the next post appends a record");
	check(w->opcode == PVO_WR_RDMA_READ && w->num_sge == 1 &&
	      !(w->flags & PVO_WQE_F_INLINE) && le32toh(wqe_sges(w, 64)->lkey) == 0x101,
	      "RDMA_READ: IBV_SEND_INLINE ignored, SGEs used");

	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = 0x5008;
	wr.wr.atomic.compare_add = 0x0102030405060708ull;
	wr.wr.atomic.swap = 0x1112131415161718ull;
	wr.wr.atomic.rkey = 0x4401;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 3);
	check(ret == 0 && w->opcode == PVO_WR_ATOMIC_CMP_AND_SWP &&
	      le64toh(w->u.atomic.remote_addr) == 0x5008 &&
	      le64toh(w->u.atomic.compare_add) == 0x0102030405060708ull &&
	      le64toh(w->u.atomic.swap) == 0x1112131415161718ull &&
	      le32toh(w->u.atomic.rkey) == 0x4401,
	      "ATOMIC_CMP_AND_SWP: address, compare, swap, rkey");
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 4);
	check(ret == 0 && w->opcode == PVO_WR_ATOMIC_FETCH_AND_ADD &&
	      le64toh(w->u.atomic.compare_add) == 0x0102030405060708ull,
	      "ATOMIC_FETCH_AND_ADD: add value");

	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(7);
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 5);
	check(ret == 0 && w->opcode == PVO_WR_RDMA_WRITE_WITH_IMM &&
	      w->imm_data == htobe32(7) &&
	      le64toh(w->u.rdma.remote_addr) == 0x5008,
	      "RDMA_WRITE_WITH_IMM: imm and remote address");
	free_qp(qp);
}

static void test_inline(struct pvo_context *ctx)
{
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 7, &rc_cap, NULL, 0);
	char a[60], b[40], big[101];
	struct ibv_sge sg[2] = {
		{ .addr = (uintptr_t)a, .length = sizeof(a), .lkey = 0 },
		{ .addr = (uintptr_t)b, .length = sizeof(b), .lkey = 0 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 5, .sg_list = sg, .num_sge = 2,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
	}, *bad = NULL;
	struct pvo_send_wqe *w;
	int ret;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 0);
	check(ret == 0 && (w->flags & PVO_WQE_F_INLINE) &&
	      le32toh(w->inline_len) == 100 && w->num_sge == 0 &&
	      memcmp((char *)(w + 1), a, 60) == 0 &&
	      memcmp((char *)(w + 1) + 60, b, 40) == 0,
	      "inline SEND: 100 bytes from two SGEs copied after the header");

	/* the caller may reuse its buffer at once */
	memset(a, 'x', sizeof(a));
	check(((char *)(w + 1))[0] == 'a', "inline data is a copy");

	sg[0].addr = (uintptr_t)big;
	sg[0].length = sizeof(big);
	wr.num_sge = 1;
	wr.next = NULL;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	check(ret == EINVAL && bad == &wr && ld(&qp->sq.ring.hdr->prod) == 1,
	      "inline above max_inline_data: EINVAL, *bad_wr, nothing published");

	wr.opcode = IBV_WR_RDMA_WRITE;
	sg[0].length = 0;
	ret = pvo_post_send(&qp->ibv_qp, &wr, &bad);
	w = sq_wqe(qp, 1);
	check(ret == 0 && (w->flags & PVO_WQE_F_INLINE) && w->inline_len == 0,
	      "inline zero-length RDMA_WRITE");
	free_qp(qp);
}

static void test_send_errors(struct pvo_context *ctx)
{
	struct ibv_qp_cap ud_cap = { .max_send_wr = 4, .max_send_sge = 1,
				     .max_recv_wr = 4, .max_recv_sge = 1 };
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 9, &rc_cap, NULL, 1);
	struct pvo_qp *ud = fake_qp(ctx, IBV_QPT_UD, 10, &ud_cap, NULL, 0);
	struct pvo_qp *uc = fake_qp(ctx, IBV_QPT_UC, 11, &ud_cap, NULL, 0);
	struct pvo_ah ah = { .handle = 0x5501 };
	struct ibv_sge sg[5] = {};
	struct ibv_send_wr wr[10], *bad;
	struct pvo_send_wqe *w;
	uint32_t db0;
	int i, ret;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 10; i++) {
		wr[i].wr_id = i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].sg_list = sg;
		wr[i].num_sge = 1;
		wr[i].next = i < 9 ? &wr[i + 1] : NULL;
	}

	/* 5 SGEs on a QP created with 4: EINVAL at the third WR */
	wr[2].num_sge = 5;
	db0 = db_prod(ctx);
	ret = pvo_post_send(&qp->ibv_qp, &wr[0], &bad);
	check(ret == EINVAL && bad == &wr[2] &&
	      ld(&qp->sq.ring.hdr->prod) == 2 && db_prod(ctx) == db0 + 1,
	      "too many SGEs: EINVAL, *bad_wr = that WR, the two before it posted and rung");
	check(sq_wqe(qp, 0)->flags == PVO_WQE_F_SIGNALED,
	      "sq_sig_all: unsignaled WRs are signaled");
	device_pop_record(ctx, qp);

	/* 8 entries, 2 used: 6 more fit, the 7th does not */
	wr[2].num_sge = 1;
	ret = pvo_post_send(&qp->ibv_qp, &wr[2], &bad);
	check(ret == ENOMEM && bad == &wr[8] && ld(&qp->sq.ring.hdr->prod) == 8,
	      "full SQ: ENOMEM, *bad_wr = first WR that did not fit, the rest posted");
	device_pop_record(ctx, qp);

	/* the device consumes 3: 3 fit again */
	st(&qp->sq.ring.hdr->cons, 3);
	wr[2].next = NULL;
	ret = pvo_post_send(&qp->ibv_qp, &wr[0], &bad);
	check(ret == 0 && ld(&qp->sq.ring.hdr->prod) == 11 &&
	      le64toh(sq_wqe(qp, 10)->wr_id) == 2,
	      "after the device advanced cons the slots are reused (wrapped index)");
	device_pop_record(ctx, qp);
	ret = pvo_post_send(&qp->ibv_qp, &wr[9], &bad);
	check(ret == ENOMEM && bad == &wr[9], "and it is full again");
	wr[2].next = &wr[3];

	/* opcodes a QP type cannot carry */
	wr[9].opcode = IBV_WR_RDMA_READ;
	ret = pvo_post_send(&uc->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL && bad == &wr[9], "UC QP: RDMA_READ rejected");
	wr[9].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	ret = pvo_post_send(&uc->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL, "UC QP: atomics rejected");
	wr[9].opcode = IBV_WR_RDMA_WRITE;
	ret = pvo_post_send(&ud->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL, "UD QP: RDMA_WRITE rejected");
	wr[9].opcode = IBV_WR_LOCAL_INV;
	ret = pvo_post_send(&ud->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL, "UD QP: LOCAL_INV rejected");
	wr[9].opcode = IBV_WR_BIND_MW;
	wr[9].bind_mw.mw = NULL;
	ret = pvo_post_send(&uc->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL, "BIND_MW without a window: EINVAL");
	wr[9].opcode = IBV_WR_SEND;
	wr[9].wr.ud.ah = NULL;
	ret = pvo_post_send(&ud->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL, "UD SEND without an AH: EINVAL");

	/* QP states that take no sends, or no receives */
	wr[9].opcode = IBV_WR_SEND;
	wr[9].wr.ud.ah = &ah.ibv_ah;
	ud->ibv_qp.state = IBV_QPS_RTR;
	ret = pvo_post_send(&ud->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL && bad == &wr[9] && ld(&ud->sq.ring.hdr->prod) == 0,
	      "post_send in RTR: EINVAL, nothing posted");
	ud->ibv_qp.state = IBV_QPS_RESET;
	ret = pvo_post_send(&ud->ibv_qp, &wr[9], &bad);
	check(ret == EINVAL, "post_send in RESET: EINVAL");
	{
		struct ibv_recv_wr rwr = { .num_sge = 0 }, *rbad = NULL;

		ret = pvo_post_recv(&ud->ibv_qp, &rwr, &rbad);
		check(ret == EINVAL && rbad == &rwr && ld(&ud->rq.ring.hdr->prod) == 0,
		      "post_recv in RESET: EINVAL");
		ud->ibv_qp.state = IBV_QPS_INIT;
		ret = pvo_post_recv(&ud->ibv_qp, &rwr, &rbad);
		check(ret == 0 && ld(&ud->rq.ring.hdr->prod) == 1,
		      "post_recv in INIT: posted");
	}
	/* the device flushes what is posted in ERR */
	ud->ibv_qp.state = IBV_QPS_ERR;

	wr[9].wr.ud.ah = &ah.ibv_ah;
	wr[9].wr.ud.remote_qpn = 0xabcdef;
	wr[9].wr.ud.remote_qkey = 0x80010000;
	wr[9].send_flags = IBV_SEND_SIGNALED;
	ret = pvo_post_send(&ud->ibv_qp, &wr[9], &bad);
	w = sq_wqe(ud, 0);
	check(ret == 0 && w->opcode == PVO_WR_SEND &&
	      le32toh(w->u.ud.ah) == 0x5501 &&
	      le32toh(w->u.ud.remote_qpn) == 0xabcdef &&
	      le32toh(w->u.ud.remote_qkey) == 0x80010000 &&
	      w->flags == PVO_WQE_F_SIGNALED,
	      "UD SEND: device AH handle, remote QPN, Q_Key");
	check(db_record(ctx, db_prod(ctx) - 1) == 10,
	      "UD SEND: the UD QP's record is appended");
	device_pop_record(ctx, ud);

	free_qp(qp);
	free_qp(ud);
	free_qp(uc);
}

static void test_counter_wrap(struct pvo_context *ctx)
{
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 3, &rc_cap, NULL, 0);
	struct ibv_sge sg = { .addr = 1, .length = 1, .lkey = 1 };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sg,
				  .num_sge = 1 }, *bad;
	struct ibv_recv_wr rwr = { .sg_list = &sg, .num_sge = 1 }, *rbad;
	struct pvo_ring_hdr *db = ctx->db_ring;
	uint32_t start = 0xfffffffdu;
	int i, ok = 1;

	st(&qp->sq.ring.hdr->prod, start);
	st(&qp->sq.ring.hdr->cons, start);
	st(&qp->rq.ring.hdr->prod, start);
	st(&qp->rq.ring.hdr->cons, start);
	/* the record ring's counters across 2^32 too */
	st(&db->prod, 0xffffffffu);
	st(&db->cons, 0xffffffffu);
	for (i = 0; i < 8; i++) {
		wr.wr_id = i;
		rwr.wr_id = 100 + i;
		ok &= pvo_post_send(&qp->ibv_qp, &wr, &bad) == 0;
		ok &= pvo_post_recv(&qp->ibv_qp, &rwr, &rbad) == 0;
	}
	check(ok && ld(&qp->sq.ring.hdr->prod) == start + 8 &&
	      ld(&qp->rq.ring.hdr->prod) == start + 8,
	      "counters wrap at 2^32: 8 WQEs posted from prod 0xfffffffd");
	ok = 1;
	for (i = 0; i < 8; i++) {
		struct pvo_recv_wqe *r = pvo_ring_entry(&qp->rq.ring, start + i);

		ok &= le64toh(sq_wqe(qp, start + i)->wr_id) == (uint64_t)i;
		ok &= le64toh(r->wr_id) == 100u + i;
	}
	check(ok, "wrapped WQEs sit at counter & (entries - 1)");
	check(pvo_post_send(&qp->ibv_qp, &wr, &bad) == ENOMEM &&
	      pvo_post_recv(&qp->ibv_qp, &rwr, &rbad) == ENOMEM,
	      "full rings detected across the wrap");
	check(db_prod(ctx) == 0 && db_record(ctx, 0xffffffffu) == 3,
	      "record ring: record 0xffffffff in slot %u, prod wrapped to 0",
	      0xffffffffu % PVO_DB_RING_ENTRIES);
	free_qp(qp);
}

static void test_recv(struct pvo_context *ctx)
{
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 4, &rc_cap, NULL, 0);
	struct ibv_srq_attr sattr = { .max_wr = 4, .max_sge = 2 };
	struct ibv_qp_cap scap = { .max_send_wr = 1, .max_send_sge = 1 };
	struct pvo_srq srq = {};
	struct pvo_qp *sqp;
	struct ibv_sge sg[4] = {
		{ .addr = 0x10, .length = 1, .lkey = 2 },
		{ .addr = 0x20, .length = 3, .lkey = 4 },
		{ .addr = 0x30, .length = 5, .lkey = 6 },
		{ .addr = 0x40, .length = 7, .lkey = 8 },
	};
	struct ibv_recv_wr wr[9], *bad;
	struct pvo_recv_wqe *r;
	struct pvo_sge *s;
	uint32_t db0 = db_prod(ctx);
	int i, ret;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 9; i++) {
		wr[i].wr_id = 0x900 + i;
		wr[i].sg_list = sg;
		wr[i].num_sge = 3;
		wr[i].next = i < 8 ? &wr[i + 1] : NULL;
	}
	wr[0].next = NULL;
	ret = pvo_post_recv(&qp->ibv_qp, &wr[0], &bad);
	r = pvo_ring_entry(&qp->rq.ring, 0);
	s = wqe_sges(r, 16);
	check(ret == 0 && ld(&qp->rq.ring.hdr->prod) == 1 &&
	      le64toh(r->wr_id) == 0x900 && r->num_sge == 3 &&
	      le64toh(s[2].addr) == 0x30 && le32toh(s[2].length) == 5 &&
	      le32toh(s[2].lkey) == 6,
	      "receive WQE: 16-byte header, then the SGEs; RQ prod published");
	check(db_prod(ctx) == db0 && ld(&qp->sq.ring.hdr->db_pending) == 0,
	      "post_recv rings no doorbell");
	qp->ibv_qp.state = IBV_QPS_ERR;
	wr[0].wr_id = 0x8ff;
	ret = pvo_post_recv(&qp->ibv_qp, &wr[0], &bad);
	check(ret == 0 && ld(&qp->rq.ring.hdr->prod) == 2 &&
	      db_prod(ctx) == db0 + 1 && db_record(ctx, db0) == 4 &&
	      ld(&qp->sq.ring.hdr->db_pending) == 1 &&
	      ld(&qp->sq.ring.hdr->prod) == 0,
	      "post_recv on a QP in ERR rings its doorbell (the device flushes the receive)");
	device_pop_record(ctx, qp);
	qp->ibv_qp.state = IBV_QPS_RTS;

	wr[0].next = &wr[1];
	wr[1].num_sge = 4;
	ret = pvo_post_recv(&qp->ibv_qp, &wr[1], &bad);
	check(ret == EINVAL && bad == &wr[1] && ld(&qp->rq.ring.hdr->prod) == 2,
	      "receive with more SGEs than max_recv_sge: EINVAL, *bad_wr");
	wr[1].num_sge = 3;
	ret = pvo_post_recv(&qp->ibv_qp, &wr[1], &bad);
	check(ret == ENOMEM && bad == &wr[7] && ld(&qp->rq.ring.hdr->prod) == 8,
	      "full RQ: ENOMEM, *bad_wr, the WRs that fit are posted");

	check(pvo_srq_alloc_ring(&srq, &sattr, PAGE) == 0, "SRQ ring");
	sqp = fake_qp(ctx, IBV_QPT_RC, 5, &scap, &srq, 0);
	ret = pvo_post_recv(&sqp->ibv_qp, &wr[8], &bad);
	check(ret == EINVAL && bad == &wr[8] && !sqp->rq.ring.buf,
	      "post_recv on a QP with an SRQ: EINVAL, and the QP has no RQ ring");
	wr[5].num_sge = 2;
	wr[6].num_sge = 2;
	wr[7].num_sge = 1;
	wr[8].num_sge = 0;
	ret = pvo_post_srq_recv(&srq.ibv_srq, &wr[5], &bad);
	r = pvo_ring_entry(&srq.rq.ring, 2);
	check(ret == 0 && ld(&srq.rq.ring.hdr->prod) == 4 &&
	      le64toh(r->wr_id) == 0x907 && r->num_sge == 1,
	      "post_srq_recv: 4 WRs into the SRQ ring");
	check(pvo_post_srq_recv(&srq.ibv_srq, &wr[8], &bad) == ENOMEM,
	      "full SRQ: ENOMEM");
	free_qp(sqp);
	pvo_wq_free(&srq.rq);
	free_qp(qp);
}

/* ------------------------------------------------------------------ */
/* the ibv_wr_* API (wr.c) */

static struct ibv_qp_ex *fake_qpx(struct pvo_qp *qp, uint64_t send_ops_flags)
{
	pvo_qp_init_wr_ops(qp, send_ops_flags);
	return ibv_qp_to_qp_ex(&qp->ibv_qp);
}

static bool same_slots(struct pvo_qp *a, struct pvo_qp *b, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (memcmp(sq_wqe(a, i), sq_wqe(b, i), 1u << a->sq.ring.shift))
			return false;
	return true;
}

static void test_wr_layouts(struct pvo_context *ctx)
{
	struct pvo_qp *qa = fake_qp(ctx, IBV_QPT_RC, 0x21, &rc_cap, NULL, 0);
	struct pvo_qp *qb = fake_qp(ctx, IBV_QPT_RC, 0x22, &rc_cap, NULL, 0);
	struct ibv_qp_ex *x = fake_qpx(qb, PVO_SEND_OPS_FLAGS);
	static const char text[] = "inline data, in three pieces";
	struct ibv_sge sg[3] = {
		{ .addr = 0x1000, .length = 10, .lkey = 0x101 },
		{ .addr = 0x2000000000ull, .length = 20, .lkey = 0x202 },
		{ .addr = 0x3003, .length = 30, .lkey = 0x303 },
	};
	struct ibv_sge isg[3] = {
		{ .addr = (uintptr_t)text, .length = 7 },
		{ .addr = (uintptr_t)text + 7, .length = 0 },
		{ .addr = (uintptr_t)text + 7, .length = sizeof(text) - 7 },
	};
	struct ibv_data_buf ibuf[3] = {
		{ .addr = (void *)text, .length = 7 },
		{ .addr = (void *)(text + 7), .length = 0 },
		{ .addr = (void *)(text + 7), .length = sizeof(text) - 7 },
	};
	struct ibv_send_wr wr[8] = {}, *bad = NULL;
	struct pvo_send_wqe *w;
	int i, ret;

	check(x && x == &qb->vqp.qp_ex && ibv_qp_to_qp_ex(&qa->ibv_qp) == NULL,
	      "wr: ibv_qp_to_qp_ex finds the ibv_qp_ex only with send_ops_flags");

	/* the same eight WRs through post_send and through ibv_wr_* */
	wr[0].opcode = IBV_WR_SEND_WITH_IMM;
	wr[0].sg_list = sg;
	wr[0].num_sge = 3;
	wr[0].imm_data = htobe32(0x11223344);
	wr[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE;
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].sg_list = sg + 1;
	wr[1].num_sge = 1;
	wr[1].wr.rdma.remote_addr = 0x7f0000001234ull;
	wr[1].wr.rdma.rkey = 0xabcd01;
	wr[2].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[2].sg_list = isg;
	wr[2].num_sge = 3;
	wr[2].imm_data = htobe32(7);
	wr[2].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wr[2].wr.rdma.remote_addr = 0x5008;
	wr[2].wr.rdma.rkey = 0x99;
	wr[3].opcode = IBV_WR_RDMA_READ;
	wr[3].sg_list = sg;
	wr[3].num_sge = 2;
	wr[3].send_flags = IBV_SEND_INLINE;	/* ignored: SGEs */
	wr[3].wr.rdma.remote_addr = 0x9000;
	wr[3].wr.rdma.rkey = 0x42;
	wr[4].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr[4].sg_list = sg;
	wr[4].num_sge = 1;
	wr[4].wr.atomic.remote_addr = 0x5008;
	wr[4].wr.atomic.compare_add = 0x0102030405060708ull;
	wr[4].wr.atomic.swap = 0x1112131415161718ull;
	wr[4].wr.atomic.rkey = 0x4401;
	wr[5] = wr[4];
	wr[5].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[5].wr.atomic.swap = 0;
	wr[6].opcode = IBV_WR_SEND;
	wr[6].sg_list = isg;
	wr[6].num_sge = 3;
	wr[6].send_flags = IBV_SEND_INLINE;
	wr[7].opcode = IBV_WR_SEND;
	for (i = 0; i < 8; i++) {
		wr[i].wr_id = 0xabc0000000000000ull + i;
		wr[i].next = i < 7 ? &wr[i + 1] : NULL;
	}
	ret = pvo_post_send(&qa->ibv_qp, wr, &bad);

	ibv_wr_start(x);
	for (i = 0; i < 8; i++) {
		x->wr_id = wr[i].wr_id;
		x->wr_flags = wr[i].send_flags;
		switch (i) {
		case 0:
			ibv_wr_send_imm(x, wr[0].imm_data);
			ibv_wr_set_sge_list(x, 3, sg);
			break;
		case 1:
			ibv_wr_rdma_write(x, 0xabcd01, 0x7f0000001234ull);
			ibv_wr_set_sge(x, sg[1].lkey, sg[1].addr, sg[1].length);
			break;
		case 2:
			/* IBV_SEND_INLINE + SGEs: copied, as in post_send */
			ibv_wr_rdma_write_imm(x, 0x99, 0x5008, htobe32(7));
			ibv_wr_set_sge_list(x, 3, isg);
			break;
		case 3:
			ibv_wr_rdma_read(x, 0x42, 0x9000);
			ibv_wr_set_sge_list(x, 2, sg);
			break;
		case 4:
			ibv_wr_atomic_cmp_swp(x, 0x4401, 0x5008,
					      0x0102030405060708ull,
					      0x1112131415161718ull);
			ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, sg[0].length);
			break;
		case 5:
			ibv_wr_atomic_fetch_add(x, 0x4401, 0x5008,
						0x0102030405060708ull);
			ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, sg[0].length);
			break;
		case 6:
			x->wr_flags = 0;
			ibv_wr_send(x);
			ibv_wr_set_inline_data_list(x, 3, ibuf);
			break;
		case 7:
			ibv_wr_send(x);	/* no data */
			break;
		}
	}
	check(ld(&qb->sq.ring.hdr->prod) == 0 && db_prod(ctx) == 1,
	      "wr: nothing is published before wr_complete");
	check(ibv_wr_complete(x) == 0 && ret == 0 &&
	      ld(&qb->sq.ring.hdr->prod) == 8,
	      "wr: a batch of 8 WRs completes, SQ prod 8");
	check(same_slots(qa, qb, 8),
	      "wr: SEND_IMM, WRITE, WRITE_IMM inline, READ, both atomics, SEND inline list, empty SEND: the WQEs post_send writes, byte for byte");
	w = sq_wqe(qb, 6);
	check((w->flags & PVO_WQE_F_INLINE) &&
	      le32toh(w->inline_len) == sizeof(text) &&
	      !memcmp(w + 1, text, sizeof(text)),
	      "wr: wr_set_inline_data_list copies the pieces after the header");
	check(db_prod(ctx) == 2 && db_record(ctx, 0) == 0x21 &&
	      db_record(ctx, 1) == 0x22 && mmio_value(ctx) == 0x22 &&
	      ld(&qb->sq.ring.hdr->db_pending) == 1,
	      "wr: wr_complete rings the doorbell once (record, db_pending, page)");
	free_qp(qa);
	free_qp(qb);
}

static void test_wr_errors(struct pvo_context *ctx)
{
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 0x31, &rc_cap, NULL, 0);
	struct ibv_qp_ex *x = fake_qpx(qp, PVO_SEND_OPS_FLAGS);
	struct ibv_qp_cap ud_cap = { .max_send_wr = 4, .max_send_sge = 1 };
	struct pvo_qp *ud = fake_qp(ctx, IBV_QPT_UD, 0x32, &ud_cap, NULL, 1);
	struct ibv_qp_ex *ux = fake_qpx(ud, IBV_QP_EX_WITH_SEND);
	struct pvo_qp *uc = fake_qp(ctx, IBV_QPT_UC, 0x33, &ud_cap, NULL, 0);
	struct ibv_qp_ex *cx = fake_qpx(uc, PVO_SEND_OPS_FLAGS);
	struct ibv_sge sg[5] = {};
	struct pvo_ah ah = { .handle = 0x4567 };
	uint8_t big[101] = {};
	uint32_t db;
	struct pvo_send_wqe *w;
	int i;

	/* a bad WR in the middle: nothing of the batch is published */
	db = db_prod(ctx);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 8);
	x->wr_id = 2;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 5, sg);	/* max_send_sge is 4 */
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 8);
	check(ibv_wr_complete(x) == EINVAL && ld(&qp->sq.ring.hdr->prod) == 0 &&
	      db_prod(ctx) == db && mmio_value(ctx) == 0,
	      "wr: 5 SGEs on a QP of 4: EINVAL at wr_complete, nothing posted, no doorbell");

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, sizeof(big));
	check(ibv_wr_complete(x) == EINVAL && ld(&qp->sq.ring.hdr->prod) == 0,
	      "wr: 101 inline bytes on a QP of 100: EINVAL");

	ibv_wr_start(x);
	ibv_wr_rdma_read(x, 1, 0x2000);
	ibv_wr_set_inline_data(x, big, 8);
	check(ibv_wr_complete(x) == EINVAL, "wr: inline data for RDMA_READ: EINVAL");

	ibv_wr_start(x);
	ibv_wr_set_sge(x, 1, 0x1000, 8);
	check(ibv_wr_complete(x) == EINVAL, "wr: a setter without a builder: EINVAL");

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 8);
	ibv_wr_set_sge(x, 1, 0x1000, 8);
	check(ibv_wr_complete(x) == EINVAL, "wr: two data setters for one WR: EINVAL");

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, &ah.ibv_ah, 5, 6);
	check(ibv_wr_complete(x) == EINVAL, "wr: wr_set_ud_addr on an RC QP: EINVAL");

	/* wr_abort drops the batch; the SQ takes the next one */
	ibv_wr_start(x);
	x->wr_id = 0xdead;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 8);
	ibv_wr_abort(x);
	check(ld(&qp->sq.ring.hdr->prod) == 0 && db_prod(ctx) == db,
	      "wr: wr_abort publishes nothing");
	ibv_wr_start(x);
	x->wr_id = 0xbeef;
	x->wr_flags = 0;
	ibv_wr_send(x);
	check(ibv_wr_complete(x) == 0 && ld(&qp->sq.ring.hdr->prod) == 1 &&
	      le64toh(sq_wqe(qp, 0)->wr_id) == 0xbeef &&
	      sq_wqe(qp, 0)->flags == 0 && db_prod(ctx) == db + 1,
	      "wr: after an abort and failed batches the next batch posts from the same slot");

	/* a full SQ (8 entries, 1 used): ENOMEM, all or nothing */
	ibv_wr_start(x);
	for (i = 0; i < 8; i++)
		ibv_wr_send(x);
	check(ibv_wr_complete(x) == ENOMEM && ld(&qp->sq.ring.hdr->prod) == 1,
	      "wr: 8 WRs into 7 free slots: ENOMEM, nothing posted");
	ibv_wr_start(x);
	for (i = 0; i < 7; i++)
		ibv_wr_send(x);
	check(ibv_wr_complete(x) == 0 && ld(&qp->sq.ring.hdr->prod) == 8,
	      "wr: 7 WRs into 7 free slots: posted");

	/* QP state */
	st(&qp->sq.ring.hdr->cons, 8);
	qp->ibv_qp.state = IBV_QPS_RTR;
	ibv_wr_start(x);
	ibv_wr_send(x);
	check(ibv_wr_complete(x) == EINVAL && ld(&qp->sq.ring.hdr->prod) == 8,
	      "wr: a QP in RTR takes no sends: EINVAL");
	qp->ibv_qp.state = IBV_QPS_RTS;

	/* UD: the address is mandatory; sq_sig_all signals every WR */
	ibv_wr_start(ux);
	ux->wr_flags = 0;
	ibv_wr_send(ux);
	ibv_wr_set_sge(ux, 1, 0x1000, 8);
	check(ibv_wr_complete(ux) == EINVAL && ld(&ud->sq.ring.hdr->prod) == 0,
	      "wr: UD without wr_set_ud_addr: EINVAL");
	ibv_wr_start(ux);
	ux->wr_id = 77;
	ibv_wr_send(ux);
	ibv_wr_set_ud_addr(ux, &ah.ibv_ah, 0x123456, 0x11111111);
	ibv_wr_set_sge(ux, 1, 0x1000, 8);
	w = sq_wqe(ud, 0);
	check(ibv_wr_complete(ux) == 0 && ld(&ud->sq.ring.hdr->prod) == 1 &&
	      w->opcode == PVO_WR_SEND && w->flags == PVO_WQE_F_SIGNALED &&
	      le32toh(w->u.ud.ah) == 0x4567 &&
	      le32toh(w->u.ud.remote_qpn) == 0x123456 &&
	      le32toh(w->u.ud.remote_qkey) == 0x11111111 && w->num_sge == 1,
	      "wr: UD SEND: AH handle, remote QPN and Q_Key; sq_sig_all signals");
	ibv_wr_start(ux);
	ibv_wr_send_imm(ux, 1);
	ibv_wr_set_ud_addr(ux, &ah.ibv_ah, 1, 1);
	check(ibv_wr_complete(ux) == EINVAL,
	      "wr: SEND_WITH_IMM not in the QP's send_ops_flags: EINVAL");

	/* opcodes the QP type cannot carry */
	ibv_wr_start(cx);
	ibv_wr_rdma_read(cx, 1, 0x1000);
	check(ibv_wr_complete(cx) == EINVAL, "wr: RDMA_READ on UC: EINVAL");
	ibv_wr_start(cx);
	ibv_wr_atomic_fetch_add(cx, 1, 0x1000, 1);
	check(ibv_wr_complete(cx) == EINVAL &&
	      ld(&uc->sq.ring.hdr->prod) == 0, "wr: atomics on UC: EINVAL");

	check(pvo_send_ops_supported(IBV_QPT_UD) ==
	      (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM) &&
	      !(pvo_send_ops_supported(IBV_QPT_UC) &
		(IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)) &&
	      !(pvo_send_ops_supported(IBV_QPT_UC) &
		IBV_QP_EX_WITH_SEND_WITH_INV) &&
	      pvo_send_ops_supported(IBV_QPT_RC) == PVO_SEND_OPS_FLAGS &&
	      (PVO_SEND_OPS_FLAGS & IBV_QP_EX_WITH_SEND_WITH_INV) &&
	      (PVO_SEND_OPS_FLAGS & IBV_QP_EX_WITH_LOCAL_INV) &&
	      (PVO_SEND_OPS_FLAGS & IBV_QP_EX_WITH_BIND_MW) &&
	      !(PVO_SEND_OPS_FLAGS & IBV_QP_EX_WITH_TSO) &&
	      x->wr_send_inv && x->wr_local_inv && x->wr_bind_mw &&
	      !x->wr_send_tso && !x->wr_set_xrc_srqn,
	      "wr: send_ops_flags per QP type; SEND_WITH_INV on RC only; "
	      "LOCAL_INV and BIND_MW, no TSO");
	ibv_wr_start(cx);
	ibv_wr_send_inv(cx, 0x1234);
	check(ibv_wr_complete(cx) == EINVAL && ld(&uc->sq.ring.hdr->prod) == 0,
	      "wr: SEND_WITH_INV on UC: EINVAL");
	free_qp(uc);
	free_qp(ud);
	free_qp(qp);
}

static struct pvo_cqe *cq_slot(struct pvo_cq *cq, uint32_t i)
{
	return pvo_ring_entry(&cq->ring, i);
}

static bool cq_lock_free(struct pvo_cq *cq)
{
	if (pthread_spin_trylock(&cq->lock))
		return false;
	pthread_spin_unlock(&cq->lock);
	return true;
}

static void test_poll_ex(void)
{
	struct pvo_cq cq = {};
	struct ibv_cq_ex *x = &cq.vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_poll_cq_attr bad_attr = { .comp_mask = 1 };
	uint32_t start = 0xfffffffeu;
	struct ibv_wc wc;
	struct pvo_cqe *e;
	int r1, r2, r3, r4, i;

	if (pvo_cq_alloc_ring(&cq, 7, 65536, PAGE))
		exit(2);
	pvo_cq_init_poll_ops(&cq);
	check(ibv_start_poll(x, &attr) == ENOENT && cq_lock_free(&cq),
	      "cq_ex: start_poll on an empty CQ: ENOENT, lock released");
	check(ibv_start_poll(x, &bad_attr) == EINVAL && cq_lock_free(&cq),
	      "cq_ex: start_poll with an unknown comp_mask: EINVAL");

	st(&cq.ring.hdr->prod, start);
	st(&cq.ring.hdr->cons, start);
	e = cq_slot(&cq, start);
	e->wr_id = htole64(0x1111222233334444ull);
	e->qpn = htole32(0x7000012);
	e->byte_len = htole32(140);
	e->opcode = PVO_WC_RECV;
	e->status = PVO_WC_SUCCESS;
	e->flags = PVO_WC_F_GRH | PVO_WC_F_IMM | PVO_WC_F_SOLICITED;
	e->network_hdr_type = PVO_NET_IPV6;
	memcpy(&e->imm_data, "\xaa\xbb\xcc\xdd", 4);
	e->src_qp = htole32(0x1fedcba);
	e->sl = 3;
	for (i = 1; i < 3; i++) {
		e = cq_slot(&cq, start + i);
		e->wr_id = htole64(i);
		e->qpn = htole32(0x13);
		e->opcode = i == 2 ? PVO_WC_RDMA_READ : PVO_WC_RDMA_WRITE;
		e->status = i == 2 ? PVO_WC_REM_ACCESS_ERR : PVO_WC_SUCCESS;
		e->vendor_err = htole32(i == 2 ? 0x77 : 0);
	}
	st(&cq.ring.hdr->prod, start + 2);

	r1 = ibv_start_poll(x, &attr);
	check(r1 == 0 && x->wr_id == 0x1111222233334444ull &&
	      x->status == IBV_WC_SUCCESS && !cq_lock_free(&cq),
	      "cq_ex: start_poll: the oldest CQE's wr_id and status, lock held");
	check(ibv_wc_read_opcode(x) == IBV_WC_RECV &&
	      ibv_wc_read_byte_len(x) == 140 &&
	      ibv_wc_read_qp_num(x) == 0x12 && ibv_wc_read_src_qp(x) == 0xfedcba &&
	      ibv_wc_read_wc_flags(x) == (IBV_WC_GRH | IBV_WC_WITH_IMM) &&
	      be32toh(ibv_wc_read_imm_data(x)) == 0xaabbccdd &&
	      ibv_wc_read_sl(x) == 0x9 && ibv_wc_read_slid(x) == 0 &&
	      ibv_wc_read_dlid_path_bits(x) == 0 &&
	      ibv_wc_read_vendor_err(x) == 0,
	      "cq_ex: read_opcode, byte_len, qp_num, src_qp (24 bits), wc_flags, imm (network order), sl (RoCEv2 IPv6: 0x9), slid, dlid_path_bits");
	r2 = ibv_next_poll(x);
	check(r2 == 0 && x->wr_id == 1 && ibv_wc_read_opcode(x) == IBV_WC_RDMA_WRITE &&
	      ibv_wc_read_wc_flags(x) == 0 && ibv_wc_read_qp_num(x) == 0x13,
	      "cq_ex: next_poll: the second CQE");
	/* the device publishes the third while the batch is open */
	st(&cq.ring.hdr->prod, start + 3);
	r3 = ibv_next_poll(x);
	check(r3 == 0 && x->wr_id == 2 && x->status == IBV_WC_REM_ACCESS_ERR &&
	      ibv_wc_read_vendor_err(x) == 0x77 &&
	      ibv_wc_read_opcode(x) == IBV_WC_RDMA_READ,
	      "cq_ex: next_poll finds a CQE published since start_poll; error status, vendor_err");
	r4 = ibv_next_poll(x);
	check(r4 == ENOENT && ld(&cq.ring.hdr->cons) == start,
	      "cq_ex: next_poll past the last: ENOENT; cons not moved before end_poll");
	ibv_end_poll(x);
	check(ld(&cq.ring.hdr->cons) == start + 3 && cq_lock_free(&cq),
	      "cq_ex: end_poll gives the 3 slots back across the wrap, lock released");

	/* end_poll consumes the current CQE; poll_cq gets the next */
	for (i = 3; i < 5; i++) {
		e = cq_slot(&cq, start + i);
		memset(e, 0, sizeof(*e));
		e->wr_id = htole64(i);
		e->opcode = PVO_WC_SEND;
	}
	st(&cq.ring.hdr->prod, start + 5);
	r1 = ibv_start_poll(x, &attr);
	check(r1 == 0 && x->wr_id == 3, "cq_ex: start_poll again");
	ibv_end_poll(x);
	check(pvo_poll_cq(&cq.ibv_cq, 1, &wc) == 1 && wc.wr_id == 4 &&
	      pvo_poll_cq(&cq.ibv_cq, 1, &wc) == 0 &&
	      ibv_start_poll(x, &attr) == ENOENT,
	      "cq_ex: ibv_poll_cq and start_poll share the ring: each CQE once");

	/* a SEND_WITH_INV received: the rkey, le32 where imm_data would be */
	for (i = 5; i < 7; i++) {
		e = cq_slot(&cq, start + i);
		memset(e, 0, sizeof(*e));
		e->wr_id = htole64(i);
		e->opcode = PVO_WC_RECV;
		e->flags = PVO_WC_F_INV;
		e->imm_data = (__force __be32)htole32(0x12345678);
	}
	st(&cq.ring.hdr->prod, start + 7);
	r1 = ibv_start_poll(x, &attr);
	check(r1 == 0 && ibv_wc_read_wc_flags(x) == IBV_WC_WITH_INV &&
	      ibv_wc_read_invalidated_rkey(x) == 0x12345678,
	      "cq_ex: SEND_WITH_INV: IBV_WC_WITH_INV, read_invalidated_rkey in host order");
	if (r1 == 0)
		ibv_end_poll(x);
	check(pvo_poll_cq(&cq.ibv_cq, 1, &wc) == 1 &&
	      wc.wc_flags == IBV_WC_WITH_INV && wc.invalidated_rkey == 0x12345678,
	      "poll_cq: SEND_WITH_INV: IBV_WC_WITH_INV, invalidated_rkey");

	/* a device that overran the ring */
	st(&cq.ring.hdr->prod, start + 7 + cq.ring.num_entries + 1);
	check(ibv_start_poll(x, &attr) == EIO && cq_lock_free(&cq) &&
	      ld(&cq.ring.hdr->cons) == start + 7,
	      "cq_ex: prod more than a ring ahead: start_poll EIO, nothing consumed");
	pvo_cq_free_ring(&cq);
}

static void test_poll(void)
{
	struct pvo_cq cq = {};
	struct pvo_cqe *e;
	struct ibv_wc wc[4];
	uint32_t start = 0xfffffffeu;
	int n, i, ok;

	if (pvo_cq_alloc_ring(&cq, 7, 65536, PAGE))
		exit(2);
	check(pvo_poll_cq(&cq.ibv_cq, 4, wc) == 0, "empty CQ polls 0");

	st(&cq.ring.hdr->prod, start);
	st(&cq.ring.hdr->cons, start);
	e = cq_slot(&cq, start);
	e->wr_id = htole64(0x1111222233334444ull);
	e->qpn = htole32(0x12);
	e->byte_len = htole32(140);
	e->opcode = PVO_WC_RECV;
	e->status = PVO_WC_SUCCESS;
	e->flags = PVO_WC_F_GRH | PVO_WC_F_IMM | PVO_WC_F_SOLICITED;
	e->network_hdr_type = PVO_NET_IPV4;
	memcpy(&e->imm_data, "\xaa\xbb\xcc\xdd", 4);
	e->src_qp = htole32(0xfedcba);
	e->pkey_index = htole16(0);
	e->sl = 3;
	for (i = 1; i < 5; i++) {
		e = cq_slot(&cq, start + i);
		e->wr_id = htole64(i);
		e->qpn = htole32(0x13);
		e->opcode = i == 4 ? PVO_WC_RDMA_READ : PVO_WC_SEND;
		e->status = i == 4 ? PVO_WC_REM_ACCESS_ERR : PVO_WC_SUCCESS;
		e->vendor_err = htole32(i == 4 ? 0x77 : 0);
		e->sl = i == 1 ? 5 : 0;
	}
	/* the device publishes 5 CQEs */
	st(&cq.ring.hdr->prod, start + 5);

	n = pvo_poll_cq(&cq.ibv_cq, 2, wc);
	check(n == 2 && ld(&cq.ring.hdr->cons) == start + 2,
	      "poll of 2 with 5 ready: 2 returned, cons advanced by 2 across the wrap");
	check(wc[0].wr_id == 0x1111222233334444ull && wc[0].qp_num == 0x12 &&
	      wc[0].byte_len == 140 && wc[0].opcode == IBV_WC_RECV &&
	      wc[0].status == IBV_WC_SUCCESS && wc[0].src_qp == 0xfedcba &&
	      wc[0].sl == 0xa && wc[0].pkey_index == 0,
	      "CQE -> ibv_wc: wr_id, qp_num, byte_len, opcode, status, src_qp, sl (a GRH'd receive: RoCEv2 IPv4, 0xa)");
	check(wc[0].wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM),
	      "CQE flags GRH + IMM -> IBV_WC_GRH | IBV_WC_WITH_IMM (%#x)",
	      wc[0].wc_flags);
	check(memcmp(&wc[0].imm_data, "\xaa\xbb\xcc\xdd", 4) == 0 &&
	      be32toh(wc[0].imm_data) == 0xaabbccdd,
	      "imm_data delivered in network byte order");
	check(wc[1].wr_id == 1 && wc[1].wc_flags == 0 && wc[1].opcode == IBV_WC_SEND &&
	      wc[1].sl == 5,
	      "second CQE: no flags, its sl as the device gave it");

	n = pvo_poll_cq(&cq.ibv_cq, 4, wc);
	check(n == 3 && wc[2].status == IBV_WC_REM_ACCESS_ERR &&
	      wc[2].vendor_err == 0x77 && wc[2].opcode == IBV_WC_RDMA_READ,
	      "the rest: 3, including an error CQE with vendor_err");
	check(pvo_poll_cq(&cq.ibv_cq, 4, wc) == 0 &&
	      ld(&cq.ring.hdr->cons) == start + 5, "CQ drained");

	/* a device that overran the ring */
	st(&cq.ring.hdr->prod, start + 5 + cq.ring.num_entries + 1);
	check(pvo_poll_cq(&cq.ibv_cq, 4, wc) < 0 &&
	      ld(&cq.ring.hdr->cons) == start + 5,
	      "prod more than a ring ahead of cons: poll fails, consumes nothing");
	st(&cq.ring.hdr->prod, start + 5);

	/* arming */
	check(pvo_req_notify_cq(&cq.ibv_cq, 1) == 0 &&
	      ld(&cq.ring.hdr->arm) == PVO_CQ_ARM_SOLICITED, "arm SOLICITED");
	check(pvo_req_notify_cq(&cq.ibv_cq, 0) == 0 &&
	      ld(&cq.ring.hdr->arm) == PVO_CQ_ARM_NEXT, "arm NEXT over SOLICITED");
	check(pvo_req_notify_cq(&cq.ibv_cq, 1) == 0 &&
	      ld(&cq.ring.hdr->arm) == PVO_CQ_ARM_NEXT,
	      "SOLICITED does not narrow an armed NEXT");
	st(&cq.ring.hdr->arm, 0);

	/* a destroyed QP's CQEs go, the others stay in order */
	{
		static const uint32_t qpns[] = { 5, 7, 5, 9, 0x1000005, 5 };
		uint32_t p = ld(&cq.ring.hdr->prod);

		for (i = 0; i < 6; i++) {
			e = cq_slot(&cq, p + i);
			memset(e, 0, sizeof(*e));
			e->wr_id = htole64(i);
			e->qpn = htole32(qpns[i]);
		}
		st(&cq.ring.hdr->prod, p + 6);
		/* one already polled, 5 left */
		n = pvo_poll_cq(&cq.ibv_cq, 1, wc);
		pvo_cq_clean(&cq, 5, false);
		n += pvo_poll_cq(&cq.ibv_cq, 3, wc + 1);
		check(n == 3 && wc[0].wr_id == 0 && wc[1].wr_id == 1 &&
		      wc[2].wr_id == 3 && ld(&cq.ring.hdr->cons) == p + 6,
		      "cq_clean: the CQEs of QP 5 (24-bit match) go, QP 7 and 9 stay in order");
		pvo_cq_clean(&cq, 5, false);
		check(ld(&cq.ring.hdr->cons) == p + 6, "cq_clean on an empty CQ");
	}

	/* a QP on an SRQ going to RESET: its sends go, its receives stay */
	{
		static const uint8_t ops[] = { IBV_WC_SEND, IBV_WC_RECV,
					       IBV_WC_RDMA_WRITE,
					       IBV_WC_RECV_RDMA_WITH_IMM };
		uint32_t p = ld(&cq.ring.hdr->prod);

		for (i = 0; i < 4; i++) {
			e = cq_slot(&cq, p + i);
			memset(e, 0, sizeof(*e));
			e->wr_id = htole64(i);
			e->qpn = htole32(5);
			e->opcode = ops[i];
		}
		st(&cq.ring.hdr->prod, p + 4);
		pvo_cq_clean(&cq, 5, true);
		n = pvo_poll_cq(&cq.ibv_cq, 4, wc);
		check(n == 2 && wc[0].wr_id == 1 && wc[1].wr_id == 3 &&
		      ld(&cq.ring.hdr->cons) == p + 4,
		      "cq_clean of sends only: the receives stay, in order");
	}

	ok = 1;
	for (i = 0; i < 3 * (int)cq.ring.num_entries; i++) {
		uint32_t p = ld(&cq.ring.hdr->prod);

		cq_slot(&cq, p)->wr_id = htole64(i);
		st(&cq.ring.hdr->prod, p + 1);
		ok &= pvo_poll_cq(&cq.ibv_cq, 1, wc) == 1 && wc[0].wr_id == (uint64_t)i;
	}
	check(ok, "CQ ring reused three times over");
	pvo_cq_free_ring(&cq);
}

/* ------------------------------------------------------------------ */
/* posting threads against a device thread */

#define RACE_QPS	2
#define RACE_THREADS	4
#define RACE_POSTS	100000	/* per thread */

struct race {
	struct pvo_context *ctx;
	struct pvo_qp *qp[RACE_QPS];
	uint64_t consumed[RACE_QPS];	/* device: WQEs seen per QP */
	uint64_t seen_sum[RACE_QPS];	/* device: sum of wr_ids */
	_Atomic int posters_left;
	int twice_in_ring;		/* a QP with two queued records */
	int bad_record;
	int stuck;
	long records;
	long kicks;
};

struct poster {
	struct race *race;
	int id;
	uint64_t sum[RACE_QPS];
};

static void *race_poster(void *arg)
{
	struct poster *p = arg;
	struct race *r = p->race;
	struct ibv_sge sg = { .addr = 1, .length = 1, .lkey = 1 };
	unsigned int seed = p->id * 7919 + 1;
	int i;

	for (i = 0; i < RACE_POSTS; i++) {
		int q = rand_r(&seed) % RACE_QPS;
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)p->id << 32 | i,
			.opcode = IBV_WR_SEND, .sg_list = &sg, .num_sge = 1,
		}, *bad;

		/* a full SQ is fine: the device is behind; try again */
		while (pvo_post_send(&r->qp[q]->ibv_qp, &wr, &bad) == ENOMEM)
			sched_yield();
		p->sum[q] += wr.wr_id;
	}
	atomic_fetch_sub(&r->posters_left, 1);
	return NULL;
}

/* Consumes every WQE it learns about from the record ring, like the back-end. */
static void *race_device(void *arg)
{
	struct race *r = arg;
	struct pvo_ring_hdr *db = r->ctx->db_ring;
	int queued[RACE_QPS] = {};
	uint32_t dcons = ld(&db->cons), last_kick = 0;
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		/* posters done before prod read: their last records are seen */
		int done = atomic_load(&r->posters_left) == 0;
		uint32_t dprod = ld(&db->prod);
		uint32_t i;
		int q;

		/* every record now visible: no QP may be in it twice */
		memset(queued, 0, sizeof(queued));
		for (i = dcons; i != dprod; i++) {
			uint32_t h = db_record(r->ctx, i);

			if (h < 100 || h >= 100 + RACE_QPS) {
				r->bad_record = 1;
				return NULL;
			}
			if (queued[h - 100]++)
				r->twice_in_ring = 1;
		}

		if (dcons == dprod) {
			if (done)
				break;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > 60) {
				r->stuck = 1;
				return NULL;
			}
			continue;
		}

		q = db_record(r->ctx, dcons) - 100;
		if (mmio_value(r->ctx) != last_kick) {
			last_kick = mmio_value(r->ctx);
			r->kicks++;
		}
		/* pop, clear db_pending, full barrier, then read the SQ prod */
		st(&db->cons, ++dcons);
		atomic_store_explicit(pvo_counter(&r->qp[q]->sq.ring.hdr->db_pending),
				      0, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
		r->records++;
		{
			struct pvo_ring *ring = &r->qp[q]->sq.ring;
			uint32_t prod = ld(&ring->hdr->prod);
			uint32_t c = ld(&ring->hdr->cons);

			for (; c != prod; c++) {
				struct pvo_send_wqe *w = pvo_ring_entry(ring, c);

				r->consumed[q]++;
				r->seen_sum[q] += le64toh(w->wr_id);
			}
			st(&ring->hdr->cons, c);
		}
	}
	return NULL;
}

static void test_race(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_send_sge = 1,
				  .max_recv_wr = 1, .max_recv_sge = 1 };
	struct poster posters[RACE_THREADS] = {};
	pthread_t pt[RACE_THREADS], dt;
	struct race r = {};
	uint64_t total = 0;
	int i, q, sums_ok = 1, leftovers = 0;

	r.ctx = fake_context();
	for (q = 0; q < RACE_QPS; q++)
		r.qp[q] = fake_qp(r.ctx, IBV_QPT_RC, 100 + q, &cap, NULL, 0);
	atomic_store(&r.posters_left, RACE_THREADS);

	pthread_create(&dt, NULL, race_device, &r);
	for (i = 0; i < RACE_THREADS; i++) {
		posters[i].race = &r;
		posters[i].id = i;
		pthread_create(&pt[i], NULL, race_poster, &posters[i]);
	}
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(pt[i], NULL);
	pthread_join(dt, NULL);

	for (q = 0; q < RACE_QPS; q++) {
		uint64_t sum = 0;

		for (i = 0; i < RACE_THREADS; i++)
			sum += posters[i].sum[q];
		sums_ok &= sum == r.seen_sum[q];
		total += r.consumed[q];
		/* a WQE published without a record the device will see */
		leftovers += ld(&r.qp[q]->sq.ring.hdr->prod) !=
			     ld(&r.qp[q]->sq.ring.hdr->cons);
	}
	check(!r.stuck && !r.bad_record, "race: the device thread finished (%ld records, %ld kicks seen)",
	      r.records, r.kicks);
	check(total == (uint64_t)RACE_THREADS * RACE_POSTS && sums_ok,
	      "race: %d threads x %d posts on %d QPs, every WQE consumed once (%llu)",
	      RACE_THREADS, RACE_POSTS, RACE_QPS, (unsigned long long)total);
	check(!leftovers, "race: no post left without a doorbell record (%d QPs)",
	      leftovers);
	check(!r.twice_in_ring, "race: no QP twice in the record ring");

	for (q = 0; q < RACE_QPS; q++)
		free_qp(r.qp[q]);
	free_context(r.ctx);
}

/* A QP whose CREATE_QP answer asked for receive doorbells (the host-verbs
 * transport): every post_recv rings, once per pending record. */
static void test_recv_doorbell(struct pvo_context *ctx)
{
	struct pvo_qp *qp = fake_qp(ctx, IBV_QPT_RC, 5, &rc_cap, NULL, 0);
	struct ibv_sge sg = { .addr = 0x10, .length = 64, .lkey = 2 };
	struct ibv_recv_wr wr = { .wr_id = 0x700, .sg_list = &sg, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	uint32_t db0 = db_prod(ctx);
	int ret;

	qp->rq_doorbell = true;
	ret = pvo_post_recv(&qp->ibv_qp, &wr, &bad);
	check(ret == 0 && ld(&qp->rq.ring.hdr->prod) == 1 &&
	      db_prod(ctx) == db0 + 1 && db_record(ctx, db0) == 5 &&
	      ld(&qp->sq.ring.hdr->db_pending) == 1 && mmio_value(ctx) == 5 &&
	      ld(&qp->sq.ring.hdr->prod) == 0,
	      "receive doorbells: post_recv publishes the WQE and rings the "
	      "QP's doorbell (record, db_pending, page)");
	ret = pvo_post_recv(&qp->ibv_qp, &wr, &bad);
	check(ret == 0 && ld(&qp->rq.ring.hdr->prod) == 2 &&
	      db_prod(ctx) == db0 + 1,
	      "receive doorbells: a second post while the record waits adds "
	      "no record");
	check(device_pop_record(ctx, qp) == 5, "the device pops the record");
	ret = pvo_post_recv(&qp->ibv_qp, &wr, &bad);
	check(ret == 0 && db_prod(ctx) == db0 + 2 &&
	      db_record(ctx, db0 + 1) == 5,
	      "receive doorbells: after the device took the record, the next "
	      "post rings again");
	free_qp(qp);
}

/* An SRQ whose CREATE_SRQ answer asked for doorbells (the host-verbs
 * transport): post_srq_recv rings with the SRQ's record (its srqn), once
 * per pending record, through the SRQ ring's db_pending. */
static void test_srq_doorbell(struct pvo_context *ctx)
{
	struct ibv_srq_attr sattr = { .max_wr = 4, .max_sge = 1 };
	struct ibv_sge sg = { .addr = 0x10, .length = 64, .lkey = 2 };
	struct ibv_recv_wr wr = { .wr_id = 0x800, .sg_list = &sg, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct pvo_srq srq = {};
	uint32_t db0 = db_prod(ctx);
	struct pvo_ring_hdr *db;
	__le32 *pending;
	int ret;

	if (pvo_srq_alloc_ring(&srq, &sattr, PAGE))
		exit(2);
	srq.ibv_srq.context = &ctx->ibv_ctx.context;
	srq.srqn = 7;
	pending = &srq.rq.ring.hdr->db_pending;
	ret = pvo_post_srq_recv(&srq.ibv_srq, &wr, &bad);
	check(ret == 0 && ld(&srq.rq.ring.hdr->prod) == 1 &&
	      db_prod(ctx) == db0,
	      "SRQ without doorbells: post_srq_recv publishes, no record");
	srq.doorbell = true;
	ret = pvo_post_srq_recv(&srq.ibv_srq, &wr, &bad);
	check(ret == 0 && ld(&srq.rq.ring.hdr->prod) == 2 &&
	      db_prod(ctx) == db0 + 1 &&
	      db_record(ctx, db0) == PVO_DB_REC_SRQ(7) &&
	      PVO_DB_REC_IS_SRQ(db_record(ctx, db0)) && ld(pending) == 1 &&
	      mmio_value(ctx) == PVO_DB_REC_SRQ(7),
	      "SRQ doorbells: post_srq_recv publishes the WQE and rings with "
	      "the SRQ's record (db_pending, record, page)");
	ret = pvo_post_srq_recv(&srq.ibv_srq, &wr, &bad);
	check(ret == 0 && ld(&srq.rq.ring.hdr->prod) == 3 &&
	      db_prod(ctx) == db0 + 1,
	      "SRQ doorbells: a second post while the record waits adds none");
	/* the device pops the record and clears db_pending */
	db = ctx->db_ring;
	st(&db->cons, ld(&db->cons) + 1);
	atomic_store_explicit(pvo_counter(pending), 0, memory_order_seq_cst);
	ret = pvo_post_srq_recv(&srq.ibv_srq, &wr, &bad);
	check(ret == 0 && db_prod(ctx) == db0 + 2 &&
	      db_record(ctx, db0 + 1) == PVO_DB_REC_SRQ(7),
	      "SRQ doorbells: after the device took the record, the next "
	      "post rings again");
	pvo_wq_free(&srq.rq);
}

int main(void)
{
	/* each test gets a fresh context: an empty record ring */
	static void (*const tests[])(struct pvo_context *) = {
		test_ring_sizes, test_send_layouts, test_inline,
		test_send_errors, test_counter_wrap, test_recv,
		test_recv_doorbell, test_srq_doorbell, test_wr_layouts,
		test_wr_errors,
	};
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		struct pvo_context *ctx = fake_context();

		tests[i](ctx);
		free_context(ctx);
	}
	test_poll();
	test_poll_ex();
	test_race();

	printf("pvo-datapath-test: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
