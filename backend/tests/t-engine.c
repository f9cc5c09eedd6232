// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The QP engine between fake guests (no vhost-user): VMs a and b share
 * tenant t1, c is in tenant t2 with the same IP as b. Rings, WQEs,
 * doorbell records and CQEs are written and read the way the guest driver
 * and provider do; every byte that moves is checked.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config.h"
#include "device.h"
#include "engine.h"
#include "fake_guest.h"
#include "grh.h"
#include "loop.h"
#include "mr.h"
#include "qp.h"
#include "sw_trace.h"
#include "tap.h"
#include "transport.h"

#define BUF_PAGES 64

struct node {
	struct fake_guest *g;
	uint32_t ctx;		/* PVO_CTX_KERNEL or a user context */
	unsigned int dbq;	/* its doorbell queue */
	uint32_t pd;
	uint32_t cq;
	struct fg_ring cqr;
	uint64_t db;		/* doorbell record page */
	uint64_t buf;		/* BUF_PAGES, registered as mr/key */
	uint32_t mr, key;
	uint8_t gid[16];
};

struct tqp {
	struct node *n;
	uint32_t handle, qpn;
	struct fg_ring sq, rq;
	uint32_t cq;		/* send and recv CQ */
	struct fg_ring *cqr;
};

static struct node A, B, C, U;

static void gid_of(const char *ip, uint8_t gid[16])
{
	struct in6_addr a;

	pvo_parse_ip(ip, &a);
	memcpy(gid, a.s6_addr, 16);
}

static uint32_t make_cq(struct node *n, struct fg_ring *r, uint32_t entries)
{
	struct pvo_cmd_create_cq c = { .entries = htole32(entries) };
	struct pvo_resp_create_cq resp;

	fg_ring(n->g, r, entries, 6);
	c.ring = r->pdir;
	if (fg_cmd(n->g, PVO_CMD_CREATE_CQ, n->ctx, &c, sizeof(c), &resp,
		   sizeof(resp)))
		return 0;
	return le32toh(resp.cq);
}

static uint32_t reg_mr(struct node *n, uint64_t gpa, uint32_t pages,
		       uint64_t iova, uint64_t len, uint32_t access,
		       uint32_t *key)
{
	struct pvo_cmd_reg_mr c = { .pd = htole32(n->pd),
				    .access = htole32(access),
				    .iova = htole64(iova),
				    .length = htole64(len) };
	struct pvo_resp_reg_mr r;

	fg_pdir_range(n->g, gpa, pages, &c.pages);
	if (fg_cmd(n->g, PVO_CMD_REG_MR, n->ctx, &c, sizeof(c), &r,
		   sizeof(r)))
		return 0;
	*key = le32toh(r.key);
	return le32toh(r.mr);
}

/* The kernel context's setup: GID 1, PD, doorbell page, CQ, an MR. */
static void node_setup(struct node *n, const char *ip)
{
	struct pvo_cmd_add_gid ag = { htole32(1), htole32(1) };
	struct pvo_resp_alloc_pd pd;
	struct pvo_cmd_set_db_ring db;

	gid_of(ip, n->gid);
	memcpy(ag.gid, n->gid, 16);
	ag.type = htole32(PVO_GID_TYPE_ROCE_V2);
	fg_cmd(n->g, PVO_CMD_ADD_GID, 0, &ag, sizeof(ag), NULL, 0);
	n->dbq = PVO_VQ_DB_KERNEL;
	if (n->ctx) {
		struct pvo_resp_alloc_ucontext uc;

		fg_cmd(n->g, PVO_CMD_ALLOC_UCONTEXT, 0, NULL, 0, &uc,
		       sizeof(uc));
		n->ctx = le32toh(uc.ctx);
		n->dbq = le32toh(uc.db_queue);
	}
	fg_cmd(n->g, PVO_CMD_ALLOC_PD, n->ctx, NULL, 0, &pd, sizeof(pd));
	n->pd = le32toh(pd.pd);
	n->db = fg_alloc(n->g, 1);
	db.gpa = htole64(n->db);
	fg_cmd(n->g, PVO_CMD_SET_DB_RING, n->ctx, &db, sizeof(db), NULL, 0);
	n->cq = make_cq(n, &n->cqr, 256);
	n->buf = fg_alloc(n->g, BUF_PAGES);
	/* iova differs from the GPA, as a guest virtual address does */
	n->mr = reg_mr(n, n->buf, BUF_PAGES, 0x7f0000000000ull,
		       BUF_PAGES * 4096,
		       PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			       PVO_ACCESS_REMOTE_READ |
			       PVO_ACCESS_REMOTE_ATOMIC,
		       &n->key);
}

static void node_init(struct node *n, const struct pvo_vm_config *cfg,
		      const char *ip)
{
	n->g = g_new0(struct fake_guest, 1);
	fg_init(n->g, cfg);
	node_setup(n, ip);
}

/* Lets timers run for ms milliseconds. */
static void spin_ms(int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000;

	while (g_get_monotonic_time() < end)
		if (!g_main_context_iteration(NULL, FALSE))
			g_usleep(100);
}

static void destroy_qp(struct tqp *q)
{
	struct pvo_cmd_handle h = { htole32(q->handle), 0 };

	fg_cmd(q->n->g, PVO_CMD_DESTROY_QP, q->n->ctx, &h, sizeof(h), NULL,
	       0);
}

/* MR address of byte off of the node's buffer, and its host pointer. */
static uint64_t va(uint64_t off)
{
	return 0x7f0000000000ull + off;
}

static uint8_t *bufp(struct node *n, uint64_t off)
{
	return fg_ptr(n->g, n->buf + off);
}

static uint32_t create_qp(struct node *n, struct tqp *q, uint8_t type,
			  uint32_t srq)
{
	struct pvo_cmd_create_qp c = { 0 };
	struct pvo_resp_create_qp r;
	uint32_t st;

	memset(q, 0, sizeof(*q));
	q->n = n;
	q->cq = n->cq;
	q->cqr = &n->cqr;
	c.pd = htole32(n->pd);
	c.send_cq = c.recv_cq = htole32(n->cq);
	c.srq = htole32(srq);
	c.qp_type = type;
	c.sq_wqe_shift = pvo_send_wqe_shift(4, 64);
	c.rq_wqe_shift = srq ? 0 : pvo_recv_wqe_shift(4);
	c.sq_entries = htole32(16);
	c.rq_entries = htole32(srq ? 0 : 16);
	c.max_send_sge = htole32(4);
	c.max_recv_sge = htole32(4);
	c.max_inline_data = htole32(64);
	fg_ring(n->g, &q->sq, 16, c.sq_wqe_shift);
	c.sq = q->sq.pdir;
	if (!srq) {
		fg_ring(n->g, &q->rq, 16, c.rq_wqe_shift);
		c.rq = q->rq.pdir;
	}
	st = fg_cmd(n->g, PVO_CMD_CREATE_QP, n->ctx, &c, sizeof(c), &r,
		    sizeof(r));
	if (st)
		return st;
	q->handle = le32toh(r.qp);
	q->qpn = le32toh(r.qpn);
	return 0;
}

static uint32_t modify(struct tqp *q, uint32_t mask,
		       const struct pvo_qp_attr *a)
{
	struct pvo_cmd_modify_qp c = { .qp = htole32(q->handle),
				       .attr_mask = htole32(mask) };

	c.attr = *a;
	return fg_cmd(q->n->g, PVO_CMD_MODIFY_QP, q->n->ctx, &c, sizeof(c),
		      NULL, 0);
}

static uint32_t qp_state(struct tqp *q)
{
	struct pvo_cmd_handle c = { htole32(q->handle), 0 };
	struct pvo_qp_attr a;

	if (fg_cmd(q->n->g, PVO_CMD_QUERY_QP, q->n->ctx, &c, sizeof(c), &a,
		   sizeof(a)))
		return 99;
	return le32toh(a.qp_state);
}

/* RESET -> INIT -> RTR -> RTS, connected to peer (gid, qpn). */
static uint32_t connect_rc(struct tqp *q, const uint8_t *dgid, uint32_t dqpn,
			   uint8_t rnr_retry, uint8_t timeout,
			   uint8_t min_rnr)
{
	struct pvo_qp_attr a = { 0 };
	uint32_t st;

	a.qp_state = htole32(PVO_QPS_INIT);
	a.port_num = 1;
	a.qp_access_flags = htole32(PVO_ACCESS_REMOTE_WRITE |
				    PVO_ACCESS_REMOTE_READ |
				    PVO_ACCESS_REMOTE_ATOMIC);
	st = modify(q, PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			       PVO_QP_ACCESS_FLAGS,
		    &a);
	if (st)
		return 100 + st;
	a.qp_state = htole32(PVO_QPS_RTR);
	memcpy(a.av.dgid, dgid, 16);
	a.av.sgid_index = 1;
	a.av.hop_limit = 64;
	a.path_mtu = htole32(3);
	a.dest_qp_num = htole32(dqpn);
	a.rq_psn = htole32(0x123);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = min_rnr;
	st = modify(q, PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
			       PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
			       PVO_QP_MAX_DEST_RD_ATOMIC |
			       PVO_QP_MIN_RNR_TIMER,
		    &a);
	if (st)
		return 200 + st;
	a.qp_state = htole32(PVO_QPS_RTS);
	a.sq_psn = htole32(0x456);
	a.timeout = timeout;
	a.retry_cnt = 2;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 1;
	st = modify(q, PVO_QP_STATE | PVO_QP_SQ_PSN | PVO_QP_TIMEOUT |
			       PVO_QP_RETRY_CNT | PVO_QP_RNR_RETRY |
			       PVO_QP_MAX_QP_RD_ATOMIC,
		    &a);
	return st ? 300 + st : 0;
}

static uint32_t to_rts_ud(struct tqp *q, uint32_t qkey)
{
	struct pvo_qp_attr a = { 0 };
	uint32_t st;

	a.qp_state = htole32(PVO_QPS_INIT);
	a.port_num = 1;
	a.qkey = htole32(qkey);
	st = modify(q, PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			       PVO_QP_QKEY,
		    &a);
	a.qp_state = htole32(PVO_QPS_RTR);
	st |= modify(q, PVO_QP_STATE, &a);
	a.qp_state = htole32(PVO_QPS_RTS);
	st |= modify(q, PVO_QP_STATE | PVO_QP_SQ_PSN, &a);
	return st;
}

static void ring_doorbell(struct tqp *q)
{
	struct fake_guest *g = q->n->g;
	struct pvo_ring_hdr *sq = fg_hdr(g, &q->sq);
	uint32_t *db = fg_ptr(g, q->n->db), prod;

	if (__atomic_exchange_n(&sq->db_pending, htole32(1),
				__ATOMIC_SEQ_CST))
		return;
	prod = le32toh(db[0]);
	db[PVO_DB_RING_ENTRY_OFF / 4 + prod % PVO_DB_RING_ENTRIES] =
		htole32(q->handle);
	__atomic_store_n(&db[0], htole32(prod + 1), __ATOMIC_RELEASE);
	pvo_doorbell_kick(g->vm, q->n->dbq);
}

/* A send WQE with nsge SGEs of the node's MR. */
static struct pvo_send_wqe *wqe(struct tqp *q, uint8_t op, uint64_t id)
{
	struct pvo_send_wqe *w = fg_next(q->n->g, &q->sq);

	w->wr_id = htole64(id);
	w->opcode = op;
	w->flags = PVO_WQE_F_SIGNALED;
	return w;
}

static void sge(struct pvo_send_wqe *w, uint64_t addr, uint32_t len,
		uint32_t lkey)
{
	struct pvo_sge *s = (struct pvo_sge *)(w + 1) + w->num_sge++;

	s->addr = htole64(addr);
	s->length = htole32(len);
	s->lkey = htole32(lkey);
}

/*
 * Each post comes as if another VM had had a callback since the QP's
 * last run: its run does one budget (a slice, RUN_WQES), which is what
 * the tests of budgets and slices count. A run alone on its loop may go
 * on for a while longer (req.c), and how far depends on the clock.
 */
static void post_send(struct tqp *q)
{
	static const char someone_else;

	pvo_loop_serve(&someone_else);
	fg_publish(q->n->g, &q->sq);
	ring_doorbell(q);
}

static void post_recv(struct tqp *q, struct fg_ring *rq, uint64_t id,
		      uint64_t off, uint32_t len)
{
	struct pvo_recv_wqe *r = fg_next(q->n->g, rq);
	struct pvo_sge *s = (struct pvo_sge *)(r + 1);

	r->wr_id = htole64(id);
	r->num_sge = 1;
	s->addr = htole64(va(off));
	s->length = htole32(len);
	s->lkey = htole32(q->n->key);
	fg_publish(q->n->g, rq);
}

static struct pvo_cqe cqe_of(struct node *n)
{
	struct pvo_cqe *e = fg_poll(n->g, &n->cqr), none;

	if (e)
		return *e;
	memset(&none, 0xff, sizeof(none));
	return none;
}

static int cqes_pending(struct node *n)
{
	struct pvo_ring_hdr *h = fg_hdr(n->g, &n->cqr);

	return le32toh(h->prod) - le32toh(h->cons);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static bool has_event(struct node *n, uint32_t type, uint32_t handle)
{
	struct pvo_event_queue *q = &n->g->vm->events;
	uint32_t i;

	for (i = 0; i < q->count; i++) {
		struct pvo_event *e =
			&q->pending[(q->head + i) % PVO_EVENT_PENDING_MAX];

		if (le32toh(e->type) == type && le32toh(e->handle) == handle)
			return true;
	}
	return false;
}

static void test_rc_data(void)
{
	struct tqp a, b;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	uint64_t *word;

	tap_is(create_qp(&A, &a, PVO_QPT_RC, 0), 0, "RC QP in a");
	tap_is(create_qp(&B, &b, PVO_QPT_RC, 0), 0, "RC QP in b");
	tap_is(connect_rc(&a, B.gid, b.qpn, 7, 14, 1), 0, "a: RESET->RTS");
	tap_is(connect_rc(&b, A.gid, a.qpn, 7, 14, 1), 0, "b: RESET->RTS");

	/* SEND: two SGEs, the first across a page boundary; one recv SGE */
	fill(bufp(&A, 4000), 300, 1);
	fill(bufp(&A, 9000), 5000, 2);
	memset(bufp(&B, 0), 0, 8192);
	post_recv(&b, &b.rq, 77, 100, 6000);
	w = wqe(&a, PVO_WR_SEND_WITH_IMM, 1);
	w->imm_data = htobe32(0xabcd);
	w->flags |= PVO_WQE_F_SOLICITED;
	sge(w, va(4000), 300, A.key);
	sge(w, va(9000), 5000, A.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_SUCCESS && e.opcode == PVO_WC_SEND &&
		       le64toh(e.wr_id) == 1 && le32toh(e.qpn) == a.qpn,
	       "SEND completes on the requester (status %u)", e.status);
	tap_is(le32toh(fg_hdr(A.g, &a.sq)->cons), 1,
	       "SQ consumer passed the WQE");
	e = cqe_of(&B);
	tap_ok(e.status == 0 && e.opcode == PVO_WC_RECV &&
		       le64toh(e.wr_id) == 77 && le32toh(e.byte_len) == 5300 &&
		       (e.flags & PVO_WC_F_IMM) &&
		       be32toh(e.imm_data) == 0xabcd &&
		       (e.flags & PVO_WC_F_SOLICITED),
	       "RECV CQE: wr_id, byte_len, imm, solicited");
	tap_ok(memcmp(bufp(&B, 100), bufp(&A, 4000), 300) == 0 &&
		       memcmp(bufp(&B, 400), bufp(&A, 9000), 5000) == 0 &&
		       bufp(&B, 99)[0] == 0 && bufp(&B, 5400)[0] == 0,
	       "SEND data landed byte for byte, nothing outside");

	/* RDMA WRITE, unsignaled, then WRITE_WITH_IMM */
	fill(bufp(&A, 20000), 4096, 3);
	w = wqe(&a, PVO_WR_RDMA_WRITE, 2);
	w->flags = 0;
	sge(w, va(20000), 4096, A.key);
	w->u.rdma.remote_addr = htole64(va(30001));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&a);
	tap_is(cqes_pending(&A), 0, "unsignaled WRITE: no CQE");
	tap_ok(memcmp(bufp(&B, 30001), bufp(&A, 20000), 4096) == 0,
	       "RDMA WRITE data (unaligned, page-crossing)");
	post_recv(&b, &b.rq, 78, 0, 16);
	w = wqe(&a, PVO_WR_RDMA_WRITE_WITH_IMM, 3);
	w->imm_data = htobe32(5);
	sge(w, va(20000), 100, A.key);
	w->u.rdma.remote_addr = htole64(va(40000));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == 0 && e.opcode == PVO_WC_RDMA_WRITE &&
		       le64toh(e.wr_id) == 3,
	       "WRITE_WITH_IMM completes");
	e = cqe_of(&B);
	tap_ok(e.status == 0 && e.opcode == PVO_WC_RECV_RDMA_WITH_IMM &&
		       le64toh(e.wr_id) == 78 && le32toh(e.byte_len) == 100 &&
		       be32toh(e.imm_data) == 5,
	       "WRITE_WITH_IMM consumes a receive WQE");

	/* RDMA READ into two SGEs */
	fill(bufp(&B, 50000), 3000, 4);
	memset(bufp(&A, 60000), 0, 4000);
	w = wqe(&a, PVO_WR_RDMA_READ, 4);
	sge(w, va(60000), 1000, A.key);
	sge(w, va(62000), 2000, A.key);
	w->u.rdma.remote_addr = htole64(va(50000));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == 0 && e.opcode == PVO_WC_RDMA_READ &&
		       le32toh(e.byte_len) == 3000,
	       "READ completes with byte_len");
	tap_ok(memcmp(bufp(&A, 60000), bufp(&B, 50000), 1000) == 0 &&
		       memcmp(bufp(&A, 62000), bufp(&B, 51000), 2000) == 0,
	       "READ data");

	/* Atomics */
	word = (uint64_t *)bufp(&B, 8);
	*word = htole64(41);
	w = wqe(&a, PVO_WR_ATOMIC_FETCH_AND_ADD, 5);
	sge(w, va(64), 8, A.key);
	w->u.atomic.remote_addr = htole64(va(8));
	w->u.atomic.compare_add = htole64(1);
	w->u.atomic.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == 0 && e.opcode == PVO_WC_FETCH_ADD &&
		       le64toh(*(uint64_t *)bufp(&A, 64)) == 41 &&
		       le64toh(*word) == 42,
	       "FETCH_AND_ADD returns the old value and adds");
	w = wqe(&a, PVO_WR_ATOMIC_CMP_AND_SWP, 6);
	sge(w, va(72), 8, A.key);
	w->u.atomic.remote_addr = htole64(va(8));
	w->u.atomic.compare_add = htole64(42);
	w->u.atomic.swap = htole64(7);
	w->u.atomic.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == 0 && le64toh(*(uint64_t *)bufp(&A, 72)) == 42 &&
		       le64toh(*word) == 7,
	       "CMP_AND_SWP swaps on a match");

	/* Inline SEND */
	post_recv(&b, &b.rq, 79, 0, 64);
	w = wqe(&a, PVO_WR_SEND, 7);
	w->flags |= PVO_WQE_F_INLINE;
	w->inline_len = htole32(40);
	memcpy(w + 1, "inline data travels inside the WQE.....", 40);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == 0, "inline SEND completes");
	e = cqe_of(&B);
	tap_ok(e.status == 0 && le32toh(e.byte_len) == 40 &&
		       memcmp(bufp(&B, 0), "inline data travels", 19) == 0,
	       "inline data arrives");

	/* CQ arming: NEXT fires on the next CQE, SOLICITED waits */
	fg_hdr(B.g, &B.cqr)->arm = htole32(PVO_CQ_ARM_SOLICITED);
	post_recv(&b, &b.rq, 80, 0, 64);
	w = wqe(&a, PVO_WR_SEND, 8);
	sge(w, va(0), 10, A.key);
	post_send(&a);
	cqe_of(&A);
	cqe_of(&B);
	tap_ok(!has_event(&B, PVO_EV_CQ_COMP, B.cq) &&
		       le32toh(fg_hdr(B.g, &B.cqr)->arm) ==
			       PVO_CQ_ARM_SOLICITED,
	       "SOLICITED arm: no event for an unsolicited CQE");
	post_recv(&b, &b.rq, 81, 0, 64);
	w = wqe(&a, PVO_WR_SEND, 9);
	w->flags |= PVO_WQE_F_SOLICITED;
	sge(w, va(0), 10, A.key);
	post_send(&a);
	cqe_of(&A);
	cqe_of(&B);
	tap_ok(has_event(&B, PVO_EV_CQ_COMP, B.cq) &&
		       fg_hdr(B.g, &B.cqr)->arm == 0,
	       "... and an event (arm cleared) for a solicited one");

	/* An MR whose pages straddle the two RAM regions, and the local DMA
	 * key (guest-physical SGEs) of kernel QPs */
	{
		uint64_t save = A.g->next, gpa;
		uint32_t key2;

		A.g->next = FG_HALF - 2 * 4096;
		gpa = fg_alloc(A.g, 4);
		A.g->next = save;
		tap_ok(reg_mr(&A, gpa, 4, 0x5000, 4 * 4096,
			      PVO_ACCESS_LOCAL_WRITE, &key2) != 0,
		       "MR across the two RAM regions");
		fill(fg_ptr(A.g, gpa), 2 * 4096, 12);
		fill(fg_ptr(A.g, FG_HALF), 2 * 4096, 14);
		post_recv(&b, &b.rq, 82, 0, 16384);
		w = wqe(&a, PVO_WR_SEND, 14);
		sge(w, 0x5000 + 5000, 6000, key2);
		sge(w, gpa + 100, 50, PVO_LOCAL_DMA_LKEY);
		post_send(&a);
		e = cqe_of(&A);
		tap_is(e.status, 0, "SEND across regions + DMA-key SGE");
		e = cqe_of(&B);
		tap_ok(e.status == 0 && le32toh(e.byte_len) == 6050 &&
			       memcmp(bufp(&B, 0), fg_ptr(A.g, gpa + 5000),
				      8192 - 5000) == 0 &&
			       memcmp(bufp(&B, 8192 - 5000),
				      fg_ptr(A.g, FG_HALF), 6000 - 3192) == 0 &&
			       memcmp(bufp(&B, 6000), fg_ptr(A.g, gpa + 100),
				      50) == 0,
		       "... every byte arrives");
	}

	/* Errors: bad lkey -> LOC_PROT_ERR, next WQE flushed, QP in ERR */
	w = wqe(&a, PVO_WR_SEND, 10);
	sge(w, va(0), 10, A.key + 1);
	fg_publish(A.g, &a.sq);
	w = wqe(&a, PVO_WR_SEND, 11);
	w->flags = 0;
	sge(w, va(0), 10, A.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_LOC_PROT_ERR && le64toh(e.wr_id) == 10,
	       "bad lkey -> LOC_PROT_ERR (status %u)", e.status);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_WR_FLUSH_ERR && le64toh(e.wr_id) == 11,
	       "the unsignaled WQE after it is flushed");
	tap_is(qp_state(&a), PVO_QPS_ERR, "requester QP in ERR");
	w = wqe(&a, PVO_WR_SEND, 12);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_WR_FLUSH_ERR && le64toh(e.wr_id) == 12,
	       "a WQE posted in ERR is flushed");
	post_recv(&a, &a.rq, 13, 0, 8);
	ring_doorbell(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_WR_FLUSH_ERR && e.opcode == PVO_WC_RECV &&
		       le64toh(e.wr_id) == 13,
	       "a receive posted in ERR is flushed at the doorbell");
	tap_is(cqes_pending(&A), 0, "nothing else on a's CQ");
	tap_is(cqes_pending(&B), 0, "nothing on b's CQ");
}

/* Creates a connected RC pair (rnr_retry, timeout, min_rnr_timer). */
static void rc_pair(struct tqp *a, struct tqp *b, uint8_t rnr_retry,
		    uint8_t timeout, uint8_t min_rnr)
{
	create_qp(&A, a, PVO_QPT_RC, 0);
	create_qp(&B, b, PVO_QPT_RC, 0);
	connect_rc(a, B.gid, b->qpn, rnr_retry, timeout, min_rnr);
	connect_rc(b, A.gid, a->qpn, rnr_retry, timeout, min_rnr);
}

static void test_rc_errors(void)
{
	struct tqp a, b;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	gint64 t0;

	/* bad rkey */
	rc_pair(&a, &b, 7, 14, 1);
	post_recv(&b, &b.rq, 1, 0, 8);
	w = wqe(&a, PVO_WR_RDMA_WRITE, 20);
	sge(w, va(0), 16, A.key);
	w->u.rdma.remote_addr = htole64(va(0));
	w->u.rdma.rkey = htole32(B.key ^ 0x100);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_REM_ACCESS_ERR && le64toh(e.wr_id) == 20,
	       "bad rkey -> REM_ACCESS_ERR (status %u)", e.status);
	tap_ok(qp_state(&a) == PVO_QPS_ERR && qp_state(&b) == PVO_QPS_ERR,
	       "both QPs in ERR");
	e = cqe_of(&B);
	tap_ok(e.status == PVO_WC_WR_FLUSH_ERR && le64toh(e.wr_id) == 1,
	       "responder's posted receive is flushed");
	tap_ok(has_event(&B, PVO_EV_QP_ACCESS_ERR, b.handle),
	       "responder gets QP_ACCESS_ERR");
	cqe_of(&A);
	while (cqe_of(&A).status != 0xff)
		;

	/* out of the MR */
	rc_pair(&a, &b, 7, 14, 1);
	w = wqe(&a, PVO_WR_RDMA_READ, 21);
	sge(w, va(0), 16, A.key);
	w->u.rdma.remote_addr = htole64(va(BUF_PAGES * 4096 - 8));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_REM_ACCESS_ERR,
	       "READ past the end of the MR -> REM_ACCESS_ERR");
	while (cqe_of(&A).status != 0xff)
		;

	/* receive buffer too small */
	rc_pair(&a, &b, 7, 14, 1);
	post_recv(&b, &b.rq, 2, 0, 8);
	w = wqe(&a, PVO_WR_SEND, 22);
	sge(w, va(0), 9, A.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_REM_INV_REQ_ERR,
	       "too small receive -> requester REM_INV_REQ_ERR (%u)",
	       e.status);
	e = cqe_of(&B);
	tap_ok(e.status == PVO_WC_LOC_LEN_ERR && le64toh(e.wr_id) == 2,
	       "... responder LOC_LEN_ERR");
	tap_ok(qp_state(&a) == PVO_QPS_ERR && qp_state(&b) == PVO_QPS_ERR,
	       "... both in ERR");
	while (cqe_of(&A).status != 0xff)
		;
	while (cqe_of(&B).status != 0xff)
		;

	/* misaligned atomic, 4-byte local SGE */
	rc_pair(&a, &b, 7, 14, 1);
	w = wqe(&a, PVO_WR_ATOMIC_FETCH_AND_ADD, 23);
	sge(w, va(0), 4, A.key);
	w->u.atomic.remote_addr = htole64(va(8));
	w->u.atomic.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_is(e.status, PVO_WC_LOC_LEN_ERR, "atomic with a 4-byte SGE");
	while (cqe_of(&A).status != 0xff)
		;
	rc_pair(&a, &b, 7, 14, 1);
	w = wqe(&a, PVO_WR_ATOMIC_FETCH_AND_ADD, 24);
	sge(w, va(0), 8, A.key);
	w->u.atomic.remote_addr = htole64(va(12));
	w->u.atomic.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_is(e.status, PVO_WC_REM_INV_REQ_ERR, "misaligned atomic target");
	while (cqe_of(&A).status != 0xff)
		;
	while (cqe_of(&B).status != 0xff)
		;

	/* RNR: no receive, rnr_retry 2, timer 0.01 ms */
	rc_pair(&a, &b, 2, 14, 1);
	w = wqe(&a, PVO_WR_SEND, 25);
	sge(w, va(0), 8, A.key);
	post_send(&a);
	tap_is(cqes_pending(&A), 0, "RNR: the WQE waits");
	tap_ok(fg_wait(cqes_pending(&A) > 0), "... then completes");
	e = cqe_of(&A);
	tap_is(e.status, PVO_WC_RNR_RETRY_EXC_ERR,
	       "... with RNR_RETRY_EXC_ERR after rnr_retry retries");
	while (cqe_of(&A).status != 0xff)
		;

	/* RNR, then a receive shows up: retry forever succeeds */
	rc_pair(&a, &b, 7, 14, 1);
	w = wqe(&a, PVO_WR_SEND, 26);
	sge(w, va(0), 8, A.key);
	post_send(&a);
	spin_ms(5);	/* a few RNR rounds */
	post_recv(&b, &b.rq, 3, 0, 8);
	tap_ok(fg_wait(cqes_pending(&A) > 0) && cqe_of(&A).status == 0,
	       "RNR retry succeeds once a receive is posted");
	tap_ok(cqe_of(&B).status == 0, "... and the receive completes");

	/* RNR NAKs between lost answers: the ACK timeouts are not in a
	 * row, so retry_cnt (2) is never used up however many there are */
	rc_pair(&a, &b, 7, 14, 14);
	w = wqe(&a, PVO_WR_SEND, 27);
	sge(w, va(0), 8, A.key);
	post_send(&a);
	{
		struct pvo_qp *qa = pvo_qp_by_qpn(A.g->vm, a.qpn);
		struct pvo_reply lost = { .code = PVO_REPLY_NONE };
		int i;

		for (i = 0; qa && i < 4 && !cqes_pending(&A); i++) {
			/* the answer to a resend got lost, then it timed
			 * out; the resend after it meets an RNR NAK again */
			pvo_comp_reply(qa, &lost);
			pvo_comp_timer(qa);
		}
		tap_ok(qa && i == 4 && !cqes_pending(&A),
		       "4 ACK timeouts, each followed by an RNR NAK: no "
		       "RETRY_EXC_ERR with retry_cnt 2 (%d rounds)", i);
	}
	post_recv(&b, &b.rq, 6, 0, 8);
	tap_ok(fg_wait(cqes_pending(&A) > 0) && cqe_of(&A).status == 0,
	       "... and the SEND completes once a receive is posted");
	tap_ok(cqe_of(&B).status == 0, "... into that receive");

	/* modify to ERR flushes both queues, signaled or not */
	post_recv(&b, &b.rq, 4, 0, 8);
	post_recv(&b, &b.rq, 5, 0, 8);
	{
		struct pvo_qp_attr at = { .qp_state = htole32(PVO_QPS_ERR) };

		tap_is(modify(&b, PVO_QP_STATE, &at), 0, "modify to ERR");
	}
	tap_ok(cqe_of(&B).status == PVO_WC_WR_FLUSH_ERR &&
		       cqe_of(&B).status == PVO_WC_WR_FLUSH_ERR &&
		       cqes_pending(&B) == 0,
	       "... flushes both posted receives");

	/* Unreachable peer: RC to a QPN nobody has -> RETRY_EXC_ERR after
	 * retry_cnt local ACK timeouts (timeout 10 = 4 ms) */
	create_qp(&A, &a, PVO_QPT_RC, 0);
	connect_rc(&a, B.gid, 0xabcde, 7, 10, 1);
	w = wqe(&a, PVO_WR_SEND, 27);
	sge(w, va(0), 8, A.key);
	t0 = g_get_monotonic_time();
	post_send(&a);
	tap_ok(fg_wait(cqes_pending(&A) > 0) &&
		       cqe_of(&A).status == PVO_WC_RETRY_EXC_ERR,
	       "no responder -> RETRY_EXC_ERR");
	tap_ok(g_get_monotonic_time() - t0 >= 3 * 4000,
	       "... after retry_cnt + 1 timeouts");
}

/* An answer as the overlay decodes it from a packet. */
static struct pvo_reply answer(enum pvo_reply_kind kind,
			       enum pvo_reply_code code, uint32_t psn)
{
	struct pvo_reply r = { .kind = kind, .code = code, .psn = psn };

	return r;
}

static struct pvo_reply aeth(struct pvo_qp *qp, enum pvo_reply_code code,
			     uint32_t psn)
{
	struct pvo_reply r = answer(PVO_ANS_AETH, code, psn);

	r.sent_end = pvo_req_sent_end(qp);
	return r;
}

/*
 * The completer takes the wire's answers itself: a QP whose peer QPN
 * does not exist keeps its WQE active (waiting for an ACK timeout that
 * is long here), and answers given to pvo_comp_reply as the overlay
 * decodes them complete it.
 */
static void test_wire_answers(void)
{
	struct tqp a;
	struct pvo_send_wqe *w;
	struct pvo_qp *qa;
	struct pvo_reply r;
	struct pvo_cqe e;
	uint8_t data[2 * 4096];
	uint32_t psn, mtu;
	uint64_t orig = 0x1122334455667788ull;
	bool ok;

	create_qp(&A, &a, PVO_QPT_RC, 0);
	connect_rc(&a, B.gid, 0xabcde, 7, 14, 1);
	qa = pvo_qp_by_qpn(A.g->vm, a.qpn);
	if (!qa) {
		tap_ok(false, "wire answers: no QP");
		return;
	}
	mtu = pvo_qp_mtu_bytes(qa);

	/* a SEND of three packets, acknowledged in two steps */
	w = wqe(&a, PVO_WR_SEND, 40);
	sge(w, va(0), 2 * mtu + 100, A.key);
	post_send(&a);
	psn = qa->attr.sq_psn;
	r = aeth(qa, PVO_REPLY_ACK, pvo_psn_add(psn, -1));
	ok = pvo_comp_reply(qa, &r) && qa->req.active;
	r = aeth(qa, PVO_REPLY_ACK, psn);
	ok = ok && pvo_comp_reply(qa, &r) && qa->req.active &&
	     !cqes_pending(&A);
	tap_ok(ok, "an ACK before the WQE or of its first packet: it waits");
	r = aeth(qa, PVO_REPLY_ACK, pvo_psn_add(psn, 2));
	pvo_comp_reply(qa, &r);
	e = cqe_of(&A);
	tap_ok(e.status == 0 && le64toh(e.wr_id) == 40 &&
		       qa->attr.sq_psn == pvo_psn_add(psn, 3),
	       "... the ACK of its last packet completes it");
	tap_ok(!pvo_comp_reply(qa, &r), "a late ACK is out of sequence");

	/* a READ of two packets: the responses go where their PSN says */
	fill(data, 2 * mtu, 9);
	memset(bufp(&A, 100000), 0, 2 * mtu);
	w = wqe(&a, PVO_WR_RDMA_READ, 41);
	sge(w, va(100000), 2 * mtu, A.key);
	w->u.rdma.remote_addr = htole64(va(0));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&a);
	psn = qa->attr.sq_psn;
	r = aeth(qa, PVO_REPLY_ACK, psn);
	ok = pvo_comp_reply(qa, &r) && qa->req.active;
	r = answer(PVO_ANS_READ_RESP, PVO_REPLY_ACK, pvo_psn_add(psn, 1));
	r.payload = data + mtu;
	r.payload_len = mtu;
	r.last = true;
	ok = ok && !pvo_comp_reply(qa, &r) && qa->req.active;
	tap_ok(ok, "READ: an ACK does not complete it, a response after a "
		   "gap is out of sequence");
	r = answer(PVO_ANS_READ_RESP, PVO_REPLY_ACK, psn);
	r.payload = data;
	r.payload_len = mtu;
	pvo_comp_reply(qa, &r);
	r.psn = pvo_psn_add(psn, 1);
	r.payload = data + mtu;
	r.last = true;
	pvo_comp_reply(qa, &r);
	e = cqe_of(&A);
	tap_ok(e.status == 0 && le64toh(e.wr_id) == 41 &&
		       memcmp(bufp(&A, 100000), data, 2 * mtu) == 0,
	       "... the responses in order complete it, their data placed");

	/* an atomic ACK: the original value */
	w = wqe(&a, PVO_WR_ATOMIC_FETCH_AND_ADD, 42);
	sge(w, va(110000), 8, A.key);
	w->u.atomic.remote_addr = htole64(va(8));
	w->u.atomic.rkey = htole32(B.key);
	post_send(&a);
	psn = qa->attr.sq_psn;
	r = answer(PVO_ANS_READ_RESP, PVO_REPLY_ACK, psn);
	ok = !pvo_comp_reply(qa, &r) && qa->req.active;
	r = answer(PVO_ANS_ATOMIC_ACK, PVO_REPLY_ACK, psn);
	r.atomic_orig = orig;
	pvo_comp_reply(qa, &r);
	e = cqe_of(&A);
	tap_ok(ok && e.status == 0 && e.opcode == PVO_WC_FETCH_ADD &&
		       le64toh(*(uint64_t *)bufp(&A, 110000)) == orig,
	       "atomic: a READ response is out of sequence, the atomic ACK "
	       "completes it with the original value");

	/* a NAK: the WQE fails, the QP goes to error */
	w = wqe(&a, PVO_WR_SEND, 43);
	sge(w, va(0), 8, A.key);
	post_send(&a);
	r = aeth(qa, PVO_REPLY_REM_ACCESS, qa->attr.sq_psn);
	pvo_comp_reply(qa, &r);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_REM_ACCESS_ERR && le64toh(e.wr_id) == 43 &&
		       qp_state(&a) == PVO_QPS_ERR,
	       "a remote access NAK fails the WQE and the QP");
	destroy_qp(&a);
}

/* Every state of the requester and the completer has a name of its own. */
static void test_state_names(void)
{
	bool ok = true;
	unsigned int i, k;

	for (i = 0; i < PVO_REQST_NSTATES; i++)
		for (k = 0; k < i; k++)
			ok = ok && strcmp(pvo_req_state_name(i), "?") &&
			     strcmp(pvo_req_state_name(i),
				    pvo_req_state_name(k));
	for (i = 0; i < PVO_COMPST_NSTATES; i++)
		for (k = 0; k < i; k++)
			ok = ok && strcmp(pvo_comp_state_name(i), "?") &&
			     strcmp(pvo_comp_state_name(i),
				    pvo_comp_state_name(k));
	tap_ok(ok && !strcmp(pvo_comp_state_name(PVO_COMPST_NSTATES), "?"),
	       "requester and completer states have distinct names");
}

static void test_tenants(void)
{
	struct tqp c, b, a;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	uint8_t before[4096];

	/* c (tenant t2) knows b's GID, QPN and rkey */
	create_qp(&B, &b, PVO_QPT_RC, 0);
	create_qp(&C, &c, PVO_QPT_RC, 0);
	connect_rc(&c, B.gid, b.qpn, 7, 8, 1);
	connect_rc(&b, C.gid, c.qpn, 7, 8, 1);
	memcpy(before, bufp(&B, 0), sizeof(before));
	fill(bufp(&C, 0), 4096, 9);
	w = wqe(&c, PVO_WR_RDMA_WRITE, 30);
	sge(w, va(0), 4096, C.key);
	w->u.rdma.remote_addr = htole64(va(0));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&c);
	tap_ok(fg_wait(cqes_pending(&C) > 0) &&
		       cqe_of(&C).status == PVO_WC_RETRY_EXC_ERR,
	       "other tenant's GID: RC WRITE -> RETRY_EXC_ERR");
	tap_ok(memcmp(before, bufp(&B, 0), sizeof(before)) == 0,
	       "... and not a byte moved");

	/* b's GID seen from a (same tenant) is b, not c (same IP) */
	create_qp(&A, &a, PVO_QPT_RC, 0);
	create_qp(&B, &b, PVO_QPT_RC, 0);
	connect_rc(&a, B.gid, b.qpn, 7, 8, 1);
	connect_rc(&b, A.gid, a.qpn, 7, 8, 1);
	fill(bufp(&A, 0), 64, 10);
	w = wqe(&a, PVO_WR_RDMA_WRITE, 31);
	sge(w, va(0), 64, A.key);
	w->u.rdma.remote_addr = htole64(va(100000));
	w->u.rdma.rkey = htole32(B.key);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == 0 &&
		       memcmp(bufp(&B, 100000), bufp(&A, 0), 64) == 0 &&
		       memcmp(bufp(&C, 100000), bufp(&A, 0), 64) != 0,
	       "same IP in two tenants: the route stays in the tenant");

	/* a peer that vanishes: b is reset while a waits on RNR */
	w = wqe(&a, PVO_WR_SEND, 32);
	sge(w, va(0), 8, A.key);
	post_send(&a);
	tap_is(cqes_pending(&A), 0, "a waits for b's receive (RNR)");
	pvo_vm_reset_guest_state(B.g->vm);
	tap_ok(pvo_qp_by_qpn(B.g->vm, b.qpn) == NULL,
	       "after b's reset its QPN is unreachable");
	tap_ok(fg_wait(cqes_pending(&A) > 0) &&
		       cqe_of(&A).status == PVO_WC_RETRY_EXC_ERR,
	       "a's in-flight work fails cleanly with RETRY_EXC_ERR");
}

static void test_ud(void)
{
	struct pvo_cmd_create_ah ah = { 0 };
	struct pvo_resp_create_ah ahr;
	struct tqp a, b;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	uint8_t *grh;

	/* b was reset by the previous test: set its kernel context up again */
	node_setup(&B, "10.0.0.2");
	create_qp(&A, &a, PVO_QPT_UD, 0);
	create_qp(&B, &b, PVO_QPT_UD, 0);
	tap_is(to_rts_ud(&a, 0x1111), 0, "UD QP to RTS");
	to_rts_ud(&b, 0x2222);
	ah.pd = htole32(A.pd);
	memcpy(ah.av.dgid, B.gid, 16);
	ah.av.sgid_index = 1;
	ah.av.hop_limit = 9;
	ah.av.traffic_class = 0x28;
	tap_is(fg_cmd(A.g, PVO_CMD_CREATE_AH, 0, &ah, sizeof(ah), &ahr,
		      sizeof(ahr)),
	       0, "CREATE_AH");
	ah.av.sgid_index = 5;
	tap_is(fg_cmd(A.g, PVO_CMD_CREATE_AH, 0, &ah, sizeof(ah), NULL, 0),
	       PVO_STATUS_EINVAL, "AH with an empty sgid slot");

	post_recv(&b, &b.rq, 40, 0, 40 + 100);
	fill(bufp(&A, 0), 100, 11);
	w = wqe(&a, PVO_WR_SEND, 41);
	sge(w, va(0), 100, A.key);
	w->u.ud.ah = ahr.ah;
	w->u.ud.remote_qpn = htole32(b.qpn);
	w->u.ud.remote_qkey = htole32(0x2222);
	post_send(&a);
	e = cqe_of(&A);
	tap_is(e.status, 0, "UD SEND completes");
	e = cqe_of(&B);
	tap_ok(e.status == 0 && le32toh(e.byte_len) == 140 &&
		       (e.flags & PVO_WC_F_GRH) &&
		       e.network_hdr_type == PVO_NET_IPV4 &&
		       le32toh(e.src_qp) == a.qpn &&
		       memcmp(e.smac, A.g->vm->cfg->mac, 6) == 0,
	       "UD RECV: byte_len with GRH, src_qp, smac, IPv4");
	grh = bufp(&B, 0);
	tap_ok(grh[20] == 0x45 && grh[21] == 0x28 && grh[28] == 9 &&
		       grh[29] == 17 && memcmp(grh + 32, A.gid + 12, 4) == 0 &&
		       memcmp(grh + 36, B.gid + 12, 4) == 0 &&
		       pvo_ipv4_csum(grh + 20) == 0,
	       "GRH holds a valid IPv4 header");
	tap_ok(memcmp(bufp(&B, 40), bufp(&A, 0), 100) == 0, "UD payload");

	/* wrong Q_Key: dropped, sender completes */
	post_recv(&b, &b.rq, 42, 0, 200);
	w = wqe(&a, PVO_WR_SEND, 43);
	sge(w, va(0), 10, A.key);
	w->u.ud.ah = ahr.ah;
	w->u.ud.remote_qpn = htole32(b.qpn);
	w->u.ud.remote_qkey = htole32(0x2223);
	post_send(&a);
	tap_ok(cqe_of(&A).status == 0 && cqes_pending(&B) == 0,
	       "wrong Q_Key: dropped silently, sender completes OK");
	/* Q_Key with the high bit: the QP's own (0x1111) */
	w = wqe(&a, PVO_WR_SEND, 44);
	sge(w, va(0), 10, A.key);
	w->u.ud.ah = ahr.ah;
	w->u.ud.remote_qpn = htole32(b.qpn);
	w->u.ud.remote_qkey = htole32(0x80000000);
	post_send(&a);
	tap_ok(cqe_of(&A).status == 0 && cqes_pending(&B) == 0,
	       "WR Q_Key with MSB uses the QP's Q_Key");

	/* longer than the MTU (1500 -> 1024) */
	w = wqe(&a, PVO_WR_SEND, 45);
	sge(w, va(0), 1025, A.key);
	w->u.ud.ah = ahr.ah;
	w->u.ud.remote_qpn = htole32(b.qpn);
	w->u.ud.remote_qkey = htole32(0x2222);
	post_send(&a);
	e = cqe_of(&A);
	tap_ok(e.status == PVO_WC_LOC_LEN_ERR && qp_state(&a) == PVO_QPS_SQE,
	       "UD message over the MTU -> LOC_LEN_ERR, QP in SQE");
	cqe_of(&B);
}

static void test_srq(void)
{
	struct pvo_cmd_create_srq c = { 0 };
	struct pvo_resp_create_srq r;
	struct pvo_cmd_modify_srq m = { 0 };
	struct pvo_cmd_handle h = { 0 };
	struct fg_ring srq;
	struct tqp a, b;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	int i;

	c.pd = htole32(B.pd);
	c.entries = htole32(8);
	c.max_sge = htole32(2);
	c.wqe_shift = pvo_recv_wqe_shift(2);
	fg_ring(B.g, &srq, 8, c.wqe_shift);
	c.ring = srq.pdir;
	tap_is(fg_cmd(B.g, PVO_CMD_CREATE_SRQ, 0, &c, sizeof(c), &r,
		      sizeof(r)),
	       0, "CREATE_SRQ");
	c.wqe_shift++;
	tap_is(fg_cmd(B.g, PVO_CMD_CREATE_SRQ, 0, &c, sizeof(c), NULL, 0),
	       PVO_STATUS_EINVAL, "SRQ with a wrong stride");
	create_qp(&A, &a, PVO_QPT_RC, 0);
	tap_is(create_qp(&B, &b, PVO_QPT_RC, le32toh(r.srq)), 0,
	       "RC QP on the SRQ");
	connect_rc(&a, B.gid, b.qpn, 7, 14, 1);
	connect_rc(&b, A.gid, a.qpn, 7, 14, 1);
	for (i = 0; i < 4; i++)
		post_recv(&b, &srq, 50 + i, 1000 * i, 100);
	m.srq = r.srq;
	m.attr_mask = htole32(PVO_SRQ_LIMIT);
	m.srq_limit = htole32(3);
	tap_is(fg_cmd(B.g, PVO_CMD_MODIFY_SRQ, 0, &m, sizeof(m), NULL, 0), 0,
	       "arm the SRQ limit");
	for (i = 0; i < 2; i++) {
		w = wqe(&a, PVO_WR_SEND, 60 + i);
		sge(w, va(0), 10, A.key);
		post_send(&a);
	}
	e = cqe_of(&B);
	tap_ok(cqe_of(&A).status == 0 && e.status == 0 &&
		       le64toh(e.wr_id) == 50 && cqe_of(&B).status == 0,
	       "SENDs land in SRQ WQEs in order");
	tap_ok(has_event(&B, PVO_EV_SRQ_LIMIT, le32toh(r.srq)),
	       "SRQ limit event below the limit");
	h.handle = r.srq;
	tap_is(fg_cmd(B.g, PVO_CMD_DESTROY_SRQ, 0, &h, sizeof(h), NULL, 0),
	       PVO_STATUS_EBUSY, "SRQ in use cannot be destroyed");
	{
		struct pvo_qp_attr at = { .qp_state = htole32(PVO_QPS_ERR) };

		modify(&b, PVO_QP_STATE, &at);
	}
	tap_ok(has_event(&B, PVO_EV_QP_LAST_WQE, b.handle),
	       "SRQ QP to ERR: LAST_WQE_REACHED");
	h.handle = htole32(b.handle);
	fg_cmd(B.g, PVO_CMD_DESTROY_QP, 0, &h, sizeof(h), NULL, 0);
	h.handle = r.srq;
	tap_is(fg_cmd(B.g, PVO_CMD_DESTROY_SRQ, 0, &h, sizeof(h), NULL, 0),
	       0, "... and can once its QP is gone");
	while (cqe_of(&A).status != 0xff)
		;
	while (cqe_of(&B).status != 0xff)
		;
}

static void test_commands(void)
{
	struct pvo_cmd_create_qp c = { 0 };
	struct pvo_cmd_handle h = { 0 };
	struct pvo_cmd_dealloc_pd dp = { 0 };
	struct pvo_resp_alloc_ucontext uc;
	struct pvo_cmd_set_db_ring db;
	struct tqp q;
	uint32_t key;
	uint32_t ctx;

	tap_is(create_qp(&A, &q, PVO_QPT_GSI, 0), 0, "GSI QP for the kernel");
	tap_is(q.qpn, 1, "... gets QPN 1");
	tap_is(create_qp(&A, &q, PVO_QPT_GSI, 0), PVO_STATUS_EBUSY,
	       "only one GSI QP");
	tap_is(create_qp(&A, &q, 9, 0), PVO_STATUS_EINVAL, "bad QP type");
	/* a QP naming another PD owner */
	c.pd = htole32(A.pd);
	c.send_cq = c.recv_cq = htole32(A.cq);
	c.qp_type = PVO_QPT_RC;
	tap_is(fg_cmd(A.g, PVO_CMD_CREATE_QP, 0x12345, &c, sizeof(c), NULL,
		      0),
	       PVO_STATUS_ENOENT, "unknown context");
	tap_is(fg_cmd(A.g, PVO_CMD_ALLOC_UCONTEXT, 0, NULL, 0, &uc,
		      sizeof(uc)),
	       0, "user context");
	ctx = le32toh(uc.ctx);
	tap_is(fg_cmd(A.g, PVO_CMD_CREATE_QP, ctx, &c, sizeof(c), NULL, 0),
	       PVO_STATUS_ENOENT, "user context cannot use the kernel's PD");
	c.qp_type = PVO_QPT_GSI;
	tap_ok(fg_cmd(A.g, PVO_CMD_CREATE_QP, ctx, &c, sizeof(c), NULL, 0) !=
		       0,
	       "user context cannot create a GSI QP");
	db.gpa = htole64(fg_alloc(A.g, 1) + 8);
	tap_is(fg_cmd(A.g, PVO_CMD_SET_DB_RING, ctx, &db, sizeof(db), NULL,
		      0),
	       PVO_STATUS_EINVAL, "unaligned doorbell page");
	db.gpa = htole64(FG_RAM_SIZE);
	tap_is(fg_cmd(A.g, PVO_CMD_SET_DB_RING, ctx, &db, sizeof(db), NULL,
		      0),
	       PVO_STATUS_EFAULT, "doorbell page outside RAM");
	db.gpa = htole64(fg_alloc(A.g, 1));
	tap_is(fg_cmd(A.g, PVO_CMD_SET_DB_RING, ctx, &db, sizeof(db), NULL,
		      0),
	       0, "user doorbell page");
	tap_is(fg_cmd(A.g, PVO_CMD_SET_DB_RING, ctx, &db, sizeof(db), NULL,
		      0),
	       PVO_STATUS_EBUSY, "only once");
	tap_is(fg_cmd(A.g, PVO_CMD_DEALLOC_UCONTEXT, ctx, NULL, 0, NULL, 0),
	       0, "DEALLOC_UCONTEXT");
	tap_is(A.g->vm->db_queue_ctx[le32toh(uc.db_queue)], 0,
	       "... releases its doorbell queue");

	/* MR bounds through REG_MR */
	tap_ok(reg_mr(&A, A.buf, 1, 0x1000, 4096, PVO_ACCESS_LOCAL_WRITE,
		      &key) != 0,
	       "REG_MR of one page");
	tap_is(reg_mr(&A, A.buf, 1, 0x1800, 4096, PVO_ACCESS_LOCAL_WRITE,
		      &key),
	       0, "unaligned 4 KiB needs two pages");
	tap_is(reg_mr(&A, A.buf, 1, 0x1000, 4096, PVO_ACCESS_REMOTE_WRITE,
		      &key),
	       0, "remote write without local write");
	tap_is(reg_mr(&A, A.buf, 1, ~0ull - 100, 4096, PVO_ACCESS_LOCAL_WRITE,
		      &key),
	       0, "iova + length overflows");
	dp.pd = htole32(A.pd);
	tap_is(fg_cmd(A.g, PVO_CMD_DEALLOC_PD, 0, &dp, sizeof(dp), NULL, 0),
	       PVO_STATUS_EBUSY, "PD with objects cannot be freed");
	h.handle = htole32(A.cq);
	tap_is(fg_cmd(A.g, PVO_CMD_DESTROY_CQ, 0, &h, sizeof(h), NULL, 0),
	       PVO_STATUS_EBUSY, "CQ used by QPs cannot be destroyed");
}

/* A user context: its own doorbell queue, no guest-physical key. */
static void test_user(void)
{
	struct tqp u, b;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	uint32_t mrs;

	U.g = A.g;
	U.ctx = 1;	/* ask node_setup for a user context */
	node_setup(&U, "10.0.0.1");
	tap_ok(U.ctx && U.dbq >= PVO_VQ_DB_FIRST_USER && U.mr,
	       "user context with PD, CQ, MR, doorbell page");
	tap_is(create_qp(&U, &u, PVO_QPT_RC, 0), 0, "user RC QP");
	create_qp(&B, &b, PVO_QPT_RC, 0);
	tap_is(connect_rc(&u, B.gid, b.qpn, 7, 14, 1), 0, "user QP to RTS");
	connect_rc(&b, A.gid, u.qpn, 7, 14, 1);
	post_recv(&b, &b.rq, 90, 0, 100);
	fill(bufp(&U, 0), 100, 13);
	w = wqe(&u, PVO_WR_SEND, 91);
	sge(w, va(0), 100, U.key);
	post_send(&u);
	e = cqe_of(&U);
	tap_is(e.status, 0, "SEND through the user doorbell queue");
	tap_ok(cqe_of(&B).status == 0 &&
		       memcmp(bufp(&B, 0), bufp(&U, 0), 100) == 0,
	       "... arrives");
	w = wqe(&u, PVO_WR_SEND, 92);
	sge(w, U.buf, 100, PVO_LOCAL_DMA_LKEY);
	post_send(&u);
	tap_is(cqe_of(&U).status, PVO_WC_LOC_PROT_ERR,
	       "user QP with the local DMA key -> LOC_PROT_ERR");
	w = wqe(&u, PVO_WR_SEND, 93);
	sge(w, va(0), 100, A.key);
	post_send(&u);
	tap_is(cqe_of(&U).status, PVO_WC_WR_FLUSH_ERR,
	       "(then flushed in ERR)");
	mrs = A.g->vm->mrs.count;
	tap_is(fg_cmd(A.g, PVO_CMD_DEALLOC_UCONTEXT, U.ctx, NULL, 0, NULL, 0),
	       0, "DEALLOC_UCONTEXT with live objects");
	tap_ok(pvo_qp_by_qpn(A.g->vm, u.qpn) == NULL &&
		       A.g->vm->mrs.count == mrs - 1,
	       "... frees its QP and MR");
	while (cqe_of(&B).status != 0xff)
		;
}

/* Back to RTS through RESET, keeping the QPs (and their rings). */
static void reconnect(struct tqp *a, struct tqp *b, uint8_t rnr_retry)
{
	struct pvo_qp_attr r = { .qp_state = htole32(PVO_QPS_RESET) };

	modify(a, PVO_QP_STATE, &r);
	modify(b, PVO_QP_STATE, &r);
	connect_rc(a, B.gid, b->qpn, rnr_retry, 1, 1);
	connect_rc(b, A.gid, a->qpn, rnr_retry, 1, 1);
}

/* Random commands and WQEs against a guest with memory: the engine must
 * survive whatever a guest writes (ASan/UBSan watch). */
static void test_fuzz(void)
{
	uint8_t body[512];
	struct tqp a, b;
	struct pvo_cqe e;
	int i, k;
	uint32_t bad = 0, good = 0;

	rc_pair(&a, &b, 1, 1, 1);
	srand(7);
	for (i = 0; i < 20000; i++) {
		uint16_t op = PVO_CMD_SET_DB_RING + rand() % 15;
		uint32_t st, *w32 = (uint32_t *)body;

		for (k = 0; k < (int)sizeof(body); k++)
			body[k] = rand();
		/* plausible handles and GPAs some of the time */
		if (rand() & 1)
			w32[0] = htole32(rand() & 1 ? A.pd : a.handle);
		if (rand() & 1)
			w32[rand() % 16] = htole32(A.cq);
		if (rand() & 1)
			((uint64_t *)body)[1 + rand() % 4] =
				htole64(fg_alloc(A.g, 0) & ~4095ull);
		if (op == PVO_CMD_DESTROY_CQ || op == PVO_CMD_DESTROY_QP)
			continue;	/* keep the pair alive */
		st = fg_cmd(A.g, op, 0, body, sizeof(body), NULL, 0);
		if (st > PVO_STATUS_EFAULT)
			bad++;
		/* garbage WQEs through the doorbell */
		if (i % 8 == 0) {
			struct pvo_send_wqe *w = wqe(&a, rand() % 9, i);

			for (k = 0; k < 160; k++)
				((uint8_t *)w)[k] = rand();
			if (rand() & 1)
				w->num_sge = rand() % 3;
			post_send(&a);
			while (cqe_of(&A).status != 0xff)
				;
			if (qp_state(&a) != PVO_QPS_RTS) {
				reconnect(&a, &b, 1);
				while (cqe_of(&B).status != 0xff)
					;
			}
		}
	}
	tap_is(bad, 0, "20000 random data-path commands and WQEs: statuses");

	/* Valid WQEs with a few bytes changed, on both sides */
	destroy_qp(&a);
	destroy_qp(&b);
	rc_pair(&a, &b, 0, 1, 1);
	for (i = 0; i < 20000; i++) {
		static const uint8_t ops[] = {
			PVO_WR_SEND, PVO_WR_SEND_WITH_IMM, PVO_WR_RDMA_WRITE,
			PVO_WR_RDMA_WRITE_WITH_IMM, PVO_WR_RDMA_READ,
			PVO_WR_ATOMIC_CMP_AND_SWP, PVO_WR_ATOMIC_FETCH_AND_ADD,
		};
		uint8_t op = ops[rand() % 7];
		struct pvo_send_wqe *w = wqe(&a, op, i);
		struct pvo_recv_wqe *rw;
		int n;

		if (op >= PVO_WR_ATOMIC_CMP_AND_SWP) {
			sge(w, va(8 * (rand() % 64)), 8, A.key);
			w->u.atomic.remote_addr = htole64(va(8 * (rand() % 64)));
			w->u.atomic.rkey = htole32(B.key);
		} else {
			sge(w, va(rand() % 4096), rand() % 3000, A.key);
			sge(w, va(rand() % 65536), rand() % 3000, A.key);
			w->u.rdma.remote_addr = htole64(va(rand() % 65536));
			w->u.rdma.rkey = htole32(B.key);
		}
		n = rand() % 4;
		for (k = 0; k < n; k++)
			((uint8_t *)w)[rand() % 96] = rand();
		if (rand() % 3) {
			post_recv(&b, &b.rq, i, rand() % 65536, 8000);
			rw = fg_entry(B.g, &b.rq, le32toh(fg_hdr(B.g, &b.rq)->prod) - 1);
			if (rand() & 1)
				((uint8_t *)rw)[rand() % 32] = rand();
		}
		post_send(&a);
		while ((e = cqe_of(&A)).status != 0xff)
			good += e.status == PVO_WC_SUCCESS;
		while (cqe_of(&B).status != 0xff)
			;
		if (qp_state(&a) != PVO_QPS_RTS || qp_state(&b) != PVO_QPS_RTS)
			reconnect(&a, &b, 0);
	}
	tap_ok(good > 5000, "20000 mutated WQEs and receive WQEs (%u succeeded)",
	       good);
}

/* Bytes of guest memory g at gpa, a page at a time (the two halves of a
 * fake guest's RAM are separate host blocks). */
static void guest_read(struct fake_guest *g, uint64_t gpa, uint8_t *out,
		       uint64_t len)
{
	uint64_t n;

	for (; len; len -= n, gpa += n, out += n) {
		n = MIN(len, 4096 - gpa % 4096);
		memcpy(out, fg_ptr(g, gpa), n);
	}
}

static void guest_fill(struct fake_guest *g, uint64_t gpa, uint64_t len,
		       uint32_t seed)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		*(uint8_t *)fg_ptr(g, gpa + i) = (uint8_t)(seed + i * 7 + i / 251);
}

#define SLICED (1u << 20) /* four slices */
#define BIG_VA 0x7e0000000000ull

/*
 * A WRITE, a READ and a SEND of more than a slice: one kick copies a
 * slice, the rest follows from the main loop, the data lands whole and
 * the WQE completes once, after its last byte.
 */
static void test_slices(void)
{
	uint32_t npages = SLICED / 4096 + 1, ka, kb, mb;
	uint64_t ga = fg_alloc(A.g, npages), gb = fg_alloc(B.g, npages);
	uint8_t *want = g_malloc(SLICED), *got = g_malloc(SLICED);
	uint32_t len = SLICED - 3, l0 = PVO_REQ_SLICE / 3 + 5;
	uint32_t access = PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			  PVO_ACCESS_REMOTE_READ;
	struct pvo_send_wqe *w;
	struct pvo_cqe e;
	struct tqp a, b;
	unsigned int k;

	reg_mr(&A, ga, npages, BIG_VA, (uint64_t)npages * 4096, access, &ka);
	mb = reg_mr(&B, gb, npages, BIG_VA, (uint64_t)npages * 4096, access,
		    &kb);
	create_qp(&A, &a, PVO_QPT_RC, 0);
	create_qp(&B, &b, PVO_QPT_RC, 0);
	connect_rc(&a, B.gid, b.qpn, 7, 14, 1);
	connect_rc(&b, A.gid, a.qpn, 7, 14, 1);

	/* WRITE: two SGEs, the first ending inside the first slice */
	guest_fill(A.g, ga, SLICED, 11);
	memset(fg_ptr(B.g, gb), 0, 4096);
	w = wqe(&a, PVO_WR_RDMA_WRITE, 0x51);
	sge(w, BIG_VA + 1, l0, ka);
	sge(w, BIG_VA + 1 + l0, len - l0, ka);
	w->u.rdma.remote_addr = htole64(BIG_VA + 2);
	w->u.rdma.rkey = htole32(kb);
	post_send(&a);
	tap_ok(cqes_pending(&A) == 0 && le32toh(fg_hdr(A.g, &a.sq)->cons) == 0,
	       "a WRITE of 1 MiB: one kick copies a slice, no completion yet");
	e = fg_wait(cqes_pending(&A) > 0) ? cqe_of(&A) : (struct pvo_cqe){0};
	guest_read(A.g, ga + 1, want, len);
	guest_read(B.g, gb + 2, got, len);
	tap_ok(le64toh(e.wr_id) == 0x51 && e.status == PVO_WC_SUCCESS &&
		       !memcmp(want, got, len) && cqes_pending(&A) == 0,
	       "... the rest follows from the main loop: every byte, one "
	       "completion");

	/* READ back into another part of a's MR */
	guest_fill(B.g, gb, SLICED, 12);
	w = wqe(&a, PVO_WR_RDMA_READ, 0x52);
	sge(w, BIG_VA + 3, len, ka);
	w->u.rdma.remote_addr = htole64(BIG_VA + 1);
	w->u.rdma.rkey = htole32(kb);
	post_send(&a);
	tap_ok(cqes_pending(&A) == 0,
	       "a READ of 1 MiB: no completion after one kick");
	e = fg_wait(cqes_pending(&A) > 0) ? cqe_of(&A) : (struct pvo_cqe){0};
	guest_read(B.g, gb + 1, want, len);
	guest_read(A.g, ga + 3, got, len);
	tap_ok(le64toh(e.wr_id) == 0x52 && e.status == PVO_WC_SUCCESS &&
		       e.opcode == PVO_WC_RDMA_READ &&
		       !memcmp(want, got, len),
	       "... then every byte is in, one completion");

	/* SEND into one receive WQE, then the WRITE's MR is gone midway */
	guest_fill(A.g, ga, SLICED, 13);
	{
		struct pvo_recv_wqe *r = fg_next(B.g, &b.rq);
		struct pvo_sge *s = (struct pvo_sge *)(r + 1);

		r->wr_id = htole64(0x61);
		r->num_sge = 1;
		s->addr = htole64(BIG_VA);
		s->length = htole32(SLICED);
		s->lkey = htole32(kb);
		fg_publish(B.g, &b.rq);
	}
	w = wqe(&a, PVO_WR_SEND, 0x53);
	sge(w, BIG_VA, len, ka);
	post_send(&a);
	tap_ok(cqes_pending(&B) == 0, "a SEND of 1 MiB: not received after "
				      "one kick");
	e = fg_wait(cqes_pending(&A) > 0) ? cqe_of(&A) : (struct pvo_cqe){0};
	tap_ok(e.status == PVO_WC_SUCCESS && le64toh(e.wr_id) == 0x53,
	       "... then completes");
	e = cqe_of(&B);
	guest_read(A.g, ga, want, len);
	guest_read(B.g, gb, got, len);
	tap_ok(le64toh(e.wr_id) == 0x61 && e.status == PVO_WC_SUCCESS &&
		       le32toh(e.byte_len) == len && !memcmp(want, got, len) &&
		       cqes_pending(&B) == 0,
	       "the receive completes once, with every byte");

	/* WRITE with immediate before a receive is posted: RNR NAK on its
	 * last slice, then that slice again, once there is one */
	guest_fill(A.g, ga, SLICED, 14);
	w = wqe(&a, PVO_WR_RDMA_WRITE_WITH_IMM, 0x55);
	w->imm_data = htobe32(0x77);
	sge(w, BIG_VA + 9, len, ka);
	w->u.rdma.remote_addr = htole64(BIG_VA + 4);
	w->u.rdma.rkey = htole32(kb);
	post_send(&a);
	for (k = 0; k < 200; k++)
		g_main_context_iteration(NULL, FALSE);
	tap_ok(cqes_pending(&A) == 0 && cqes_pending(&B) == 0,
	       "a WRITE with immediate of 1 MiB and no receive: waits (RNR)");
	post_recv(&b, &b.rq, 0x62, 0, 16);
	e = fg_wait(cqes_pending(&A) > 0) ? cqe_of(&A) : (struct pvo_cqe){0};
	guest_read(A.g, ga + 9, want, len);
	guest_read(B.g, gb + 4, got, len);
	tap_ok(le64toh(e.wr_id) == 0x55 && e.status == PVO_WC_SUCCESS &&
		       !memcmp(want, got, len),
	       "... completes once a receive is posted, every byte in");
	e = cqe_of(&B);
	tap_ok(le64toh(e.wr_id) == 0x62 && e.status == PVO_WC_SUCCESS &&
		       e.opcode == PVO_WC_RECV_RDMA_WITH_IMM &&
		       be32toh(e.imm_data) == 0x77 &&
		       le32toh(e.byte_len) == len && cqes_pending(&B) == 0,
	       "... and the receive completes once, with the immediate");

	w = wqe(&a, PVO_WR_RDMA_WRITE, 0x54);
	sge(w, BIG_VA, len, ka);
	w->u.rdma.remote_addr = htole64(BIG_VA);
	w->u.rdma.rkey = htole32(kb);
	post_send(&a);
	{
		/* b deregisters the MR between two slices */
		struct pvo_cmd_handle h = { htole32(mb), 0 };

		fg_cmd(B.g, PVO_CMD_DEREG_MR, B.ctx, &h, sizeof(h), NULL, 0);
	}
	e = fg_wait(cqes_pending(&A) > 0) ? cqe_of(&A) : (struct pvo_cqe){0};
	tap_ok(le64toh(e.wr_id) == 0x54 && e.status == PVO_WC_REM_ACCESS_ERR,
	       "a WRITE whose target MR goes between slices: "
	       "REM_ACCESS_ERR (got %u)", e.status);
	tap_ok(!fg_wait(cqes_pending(&A) > 0) && qp_state(&a) == PVO_QPS_ERR,
	       "... once, and the QP is in error");
	while (cqe_of(&B).status != 0xff)
		;
	destroy_qp(&a);
	destroy_qp(&b);
	g_free(want);
	g_free(got);
}

/* A full SQ is worked off in slices, yielding to the main loop. */
static void test_budget(void)
{
	struct tqp a, b;
	struct pvo_send_wqe *w;
	struct fg_ring sq, rq;
	struct pvo_cmd_create_qp c = { 0 };
	struct pvo_resp_create_qp r;
	int i, n = 0;

	/* a 128-entry SQ for a, as many receives on b */
	memset(&a, 0, sizeof(a));
	a.n = &A;
	c.pd = htole32(A.pd);
	c.send_cq = c.recv_cq = htole32(A.cq);
	c.qp_type = PVO_QPT_RC;
	c.sq_wqe_shift = pvo_send_wqe_shift(1, 0);
	c.rq_wqe_shift = pvo_recv_wqe_shift(1);
	c.sq_entries = c.rq_entries = htole32(128);
	c.max_send_sge = c.max_recv_sge = htole32(1);
	fg_ring(A.g, &sq, 128, c.sq_wqe_shift);
	fg_ring(A.g, &rq, 128, c.rq_wqe_shift);
	c.sq = sq.pdir;
	c.rq = rq.pdir;
	fg_cmd(A.g, PVO_CMD_CREATE_QP, 0, &c, sizeof(c), &r, sizeof(r));
	a.handle = le32toh(r.qp);
	a.qpn = le32toh(r.qpn);
	a.sq = sq;
	a.rq = rq;
	c.pd = htole32(B.pd);
	c.send_cq = c.recv_cq = htole32(B.cq);
	fg_ring(B.g, &sq, 128, c.sq_wqe_shift);
	fg_ring(B.g, &rq, 128, c.rq_wqe_shift);
	c.sq = sq.pdir;
	c.rq = rq.pdir;
	fg_cmd(B.g, PVO_CMD_CREATE_QP, 0, &c, sizeof(c), &r, sizeof(r));
	memset(&b, 0, sizeof(b));
	b.n = &B;
	b.handle = le32toh(r.qp);
	b.qpn = le32toh(r.qpn);
	b.sq = sq;
	b.rq = rq;
	connect_rc(&a, B.gid, b.qpn, 7, 14, 1);
	connect_rc(&b, A.gid, a.qpn, 7, 14, 1);
	for (i = 0; i < 100; i++) {
		post_recv(&b, &b.rq, i, 0, 64);
		w = wqe(&a, PVO_WR_SEND, i);
		w->flags = 0;
		if (i == 99)
			w->flags = PVO_WQE_F_SIGNALED;
		sge(w, va(0), 64, A.key);
		fg_publish(A.g, &a.sq);
	}
	{
		/* 200 records naming the QP behind one kick (a guest may
		 * write as many as it likes): one run, not 200 */
		uint32_t *db = fg_ptr(A.g, A.db), prod = le32toh(db[0]);

		for (i = 0; i < 200; i++)
			db[PVO_DB_RING_ENTRY_OFF / 4 +
			   (prod + i) % PVO_DB_RING_ENTRIES] =
			    htole32(a.handle);
		__atomic_store_n(&db[0], htole32(prod + 200),
				 __ATOMIC_RELEASE);
		pvo_doorbell_kick(A.g->vm, A.dbq);
	}
	tap_ok(le32toh(fg_hdr(A.g, &a.sq)->cons) == 64 &&
		       cqes_pending(&A) == 0,
	       "one kick with 200 records naming the QP does one run of a "
	       "full SQ (%u of 100)",
	       le32toh(fg_hdr(A.g, &a.sq)->cons));
	tap_ok(fg_wait(cqes_pending(&A) == 1) &&
		       le32toh(fg_hdr(A.g, &a.sq)->cons) == 100,
	       "the rest follows from the main loop");
	cqe_of(&A);
	while (cqe_of(&B).status != 0xff)
		n++;
	tap_is(n, 100, "all 100 receives completed");
	destroy_qp(&a);
	destroy_qp(&b);
}

/* Valid command bodies with a few bytes changed: reaches the checks deep
 * inside each handler, which purely random bodies rarely pass. */
static void test_mutate(void)
{
	struct tmpl {
		uint16_t op;
		size_t len;
		uint8_t body[256];
	} t[7];
	struct pvo_cmd_create_cq cq = { .entries = htole32(64) };
	struct pvo_cmd_reg_mr mr = { .pd = htole32(A.pd),
				     .access = htole32(PVO_ACCESS_ALL),
				     .iova = htole64(0x10000),
				     .length = htole64(4 * 4096) };
	struct pvo_cmd_create_srq srq = { .pd = htole32(A.pd),
					  .entries = htole32(16),
					  .max_sge = htole32(2) };
	struct pvo_cmd_create_ah ah = { .pd = htole32(A.pd) };
	struct pvo_cmd_modify_qp mq = { 0 };
	struct pvo_cmd_create_qp qp = { 0 };
	struct fg_ring r1, r2, r3;
	uint32_t ok = 0, fail = 0, bad = 0, cqs, srqs, ahs, mrs, qps;
	struct tqp x;
	int i, k, n;

	fg_ring(A.g, &r1, 64, 6);
	cq.ring = r1.pdir;
	fg_pdir_range(A.g, A.buf, 4, &mr.pages);
	srq.wqe_shift = pvo_recv_wqe_shift(2);
	fg_ring(A.g, &r2, 16, srq.wqe_shift);
	srq.ring = r2.pdir;
	memcpy(ah.av.dgid, B.gid, 16);
	ah.av.sgid_index = 1;
	create_qp(&A, &x, PVO_QPT_RC, 0);
	qp.pd = htole32(A.pd);
	qp.send_cq = qp.recv_cq = htole32(A.cq);
	qp.qp_type = PVO_QPT_UD;
	qp.sq_wqe_shift = pvo_send_wqe_shift(1, 0);
	qp.rq_wqe_shift = pvo_recv_wqe_shift(1);
	qp.sq_entries = qp.rq_entries = htole32(4);
	qp.max_send_sge = qp.max_recv_sge = htole32(1);
	fg_ring(A.g, &r3, 4, qp.sq_wqe_shift);
	qp.sq = r3.pdir;
	fg_ring(A.g, &r3, 4, qp.rq_wqe_shift);
	qp.rq = r3.pdir;
	mq.qp = htole32(x.handle);
	mq.attr_mask = htole32(PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			       PVO_QP_ACCESS_FLAGS);
	mq.attr.qp_state = htole32(PVO_QPS_INIT);
	mq.attr.port_num = 1;
#define T(i, o, b)                              \
	t[i].op = o;                            \
	t[i].len = sizeof(b);                   \
	memcpy(t[i].body, &b, sizeof(b))
	T(0, PVO_CMD_CREATE_CQ, cq);
	T(1, PVO_CMD_REG_MR, mr);
	T(2, PVO_CMD_CREATE_SRQ, srq);
	T(3, PVO_CMD_CREATE_AH, ah);
	T(4, PVO_CMD_CREATE_QP, qp);
	T(5, PVO_CMD_MODIFY_QP, mq);
	mq.attr_mask = htole32(PVO_QP_STATE);
	mq.attr.qp_state = htole32(PVO_QPS_RESET);
	T(6, PVO_CMD_MODIFY_QP, mq);
#undef T
	cqs = A.g->vm->cqs.count;
	srqs = A.g->vm->srqs.count;
	ahs = A.g->vm->ahs.count;
	mrs = A.g->vm->mrs.count;
	qps = A.g->vm->qps.count;
	srand(11);
	for (i = 0; i < 30000; i++) {
		struct tmpl *m = &t[rand() % 7];
		uint8_t body[256];
		uint32_t st, resp[4] = { 0 };
		struct pvo_cmd_handle h = { 0 };
		uint16_t destroy = 0;

		memcpy(body, m->body, m->len);
		n = rand() % 4;
		for (k = 0; k < n; k++)
			body[rand() % m->len] = rand() % 3 ? rand() : 0;
		st = fg_cmd(A.g, m->op, 0, body, m->len, resp, sizeof(resp));
		if (st > PVO_STATUS_EFAULT)
			bad++;
		if (st) {
			fail++;
			continue;
		}
		ok++;
		switch (m->op) {
		case PVO_CMD_CREATE_CQ:
			destroy = PVO_CMD_DESTROY_CQ;
			break;
		case PVO_CMD_REG_MR:
			destroy = PVO_CMD_DEREG_MR;
			break;
		case PVO_CMD_CREATE_SRQ:
			destroy = PVO_CMD_DESTROY_SRQ;
			break;
		case PVO_CMD_CREATE_AH:
			destroy = PVO_CMD_DESTROY_AH;
			break;
		case PVO_CMD_CREATE_QP:
			destroy = PVO_CMD_DESTROY_QP;
			break;
		}
		if (destroy) {
			h.handle = resp[0];
			if (fg_cmd(A.g, destroy, 0, &h, sizeof(h), NULL, 0))
				bad++;
		}
	}
	tap_ok(bad == 0 && ok > 1000 && fail > 1000,
	       "30000 mutated commands: sane statuses, objects freed "
	       "(%u accepted, %u refused)", ok, fail);
	tap_ok(A.g->vm->cqs.count == cqs && A.g->vm->srqs.count == srqs &&
		       A.g->vm->ahs.count == ahs && A.g->vm->mrs.count == mrs &&
		       A.g->vm->qps.count == qps,
	       "nothing leaked into the tables (CQs %u/%u, SRQs %u/%u, AHs "
	       "%u/%u, MRs %u/%u, QPs %u/%u)",
	       A.g->vm->cqs.count, cqs, A.g->vm->srqs.count, srqs,
	       A.g->vm->ahs.count, ahs, A.g->vm->mrs.count, mrs,
	       A.g->vm->qps.count, qps);
	destroy_qp(&x);
}

/*
 * A guest that never takes its events (no event buffers posted) cannot
 * make the daemon grow: the backlog stops at PVO_EVENT_PENDING_MAX, the
 * rest is counted as dropped, and the oldest stay to be delivered.
 */
static void test_event_backlog(void)
{
	struct pvo_event_queue *q = &C.g->vm->events;
	uint32_t i, before = q->count;
	uint64_t dropped = q->dropped;

	for (i = 0; i < PVO_EVENT_PENDING_MAX + 1000; i++)
		pvo_event_post(C.g->vm, PVO_EV_QP_FATAL, 0x7000 + i);
	tap_ok(q->count == PVO_EVENT_PENDING_MAX &&
		   q->dropped == dropped + 1000 + before,
	       "event backlog: %u waiting (the bound), %llu more dropped and "
	       "counted",
	       q->count, (unsigned long long)(q->dropped - dropped));
	tap_ok(has_event(&C, PVO_EV_QP_FATAL, 0x7000) &&
		   !has_event(&C, PVO_EV_QP_FATAL,
			      0x7000 + PVO_EVENT_PENDING_MAX + 999),
	       "event backlog: the oldest events stay, the newest are the "
	       "dropped ones");
	for (i = 0; i < PVO_EVENT_PENDING_MAX; i++)
		pvo_event_purge(C.g->vm, PVO_EVOBJ_QP, 0x7000 + i);
	tap_ok(q->count == before, "event backlog: purged with its objects");
}

int main(void)
{
	static const char conf[] =
		"[tenant t1]\nvni=1\nmtu=1500\n"
		"[tenant t2]\nvni=2\nmtu=1500\n"
		"[vm a]\ntenant=t1\nmac=52:54:00:00:00:0a\nips=10.0.0.1\n"
		"socket=/tmp/a.sock\n"
		"[vm b]\ntenant=t1\nmac=52:54:00:00:00:0b\nips=10.0.0.2\n"
		"socket=/tmp/b.sock\n"
		"[vm c]\ntenant=t2\nmac=52:54:00:00:00:0c\nips=10.0.0.2\n"
		"socket=/tmp/c.sock\n";
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	cfg = pvo_config_parse("t", conf, &err);
	if (!cfg) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	tap_plan(137);
	node_init(&A, &cfg->vms[0], "10.0.0.1");
	node_init(&B, &cfg->vms[1], "10.0.0.2");
	node_init(&C, &cfg->vms[2], "10.0.0.2");
	tap_ok(A.pd && A.cq && A.mr && B.mr && C.mr, "nodes set up");

	test_rc_data();
	test_rc_errors();
	test_wire_answers();
	test_state_names();
	test_tenants();
	test_ud();
	test_srq();
	test_commands();
	test_user();
	test_budget();
	test_slices();
	test_mutate();
	test_event_backlog();
	test_fuzz();

	fg_fini(A.g);
	fg_fini(B.g);
	fg_fini(C.g);
	g_free(A.g);
	g_free(B.g);
	g_free(C.g);
	pvo_config_free(cfg);
	return tap_done();
}
