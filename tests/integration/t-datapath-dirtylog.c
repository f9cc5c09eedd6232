// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath, section dirtylog: the vhost-user dirty log as QEMU starts
 * it for a migration (SET_LOG_BASE, then VHOST_F_LOG_ALL). Every byte the
 * back-end writes into a logging guest's memory must mark its page:
 * payloads of RDMA WRITEs and SENDs, the CQEs of receives, the targets
 * of READ responses and atomics. A page nobody wrote stays clear, and
 * once logging stops nothing is marked.
 */
#include <sys/mman.h>

#include "t-datapath.h"

#define PAGE 4096ull

struct dlog {
	struct vu_frontend *fe;
	uint8_t *bits;
	size_t size;
};

static bool dlog_start(struct dlog *l, struct node *n)
{
	l->fe = n->vm->fe;
	l->bits = vu_frontend_start_log(l->fe, &l->size);
	if (!tap_ok(l->bits != NULL,
		    "%s: SET_LOG_BASE and VHOST_F_LOG_ALL accepted", n->name)) {
		tap_diag("%s", vu_frontend_error(l->fe));
		return false;
	}
	return true;
}

static bool marked(const struct dlog *l, uint64_t gpa)
{
	uint64_t page = gpa / PAGE;

	return page / 8 < l->size && (l->bits[page / 8] >> (page % 8) & 1);
}

/* Every page of [off, off + len) of buffer b is marked in l. */
static bool range_marked(const struct dlog *l, struct sim_buf *b, uint64_t off,
			 uint64_t len, const char *what)
{
	uint64_t o;

	for (o = off; o < off + len; o = (o | (PAGE - 1)) + 1)
		if (!marked(l, sim_buf_gpa(b, o))) {
			tap_diag("%s: page of GPA 0x%llx (offset %llu) not "
				 "marked",
				 what, (unsigned long long)sim_buf_gpa(b, o),
				 (unsigned long long)o);
			return false;
		}
	return true;
}

/* The page of CQE idx of cq. */
static uint64_t cqe_gpa(const struct sim_cq *cq, uint32_t idx)
{
	uint64_t byte = (uint64_t)(idx & (cq->ring.entries - 1))
			<< cq->ring.shift;

	return cq->ring.pages.gpa[1 + byte / PAGE] + byte % PAGE;
}

void test_dirty_log(void)
{
	const uint64_t woff = 1536 * KIB + 100, wlen = 3 * PAGE + 1000;
	const uint64_t roff = 1600 * KIB + 8, idle = 1800 * KIB;
	struct dlog la, lb;
	struct pair p;
	struct pvo_cqe c;
	struct sim_wr w;
	uint64_t off;
	uint32_t ridx;

	if (!dlog_start(&lb, &B) || !dlog_start(&la, &A))
		return;
	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;

	/* RDMA WRITE a -> b */
	fill_pattern(&A.buf, 0, wlen, 9700);
	prepare_dst(&B.buf, woff, wlen);
	w = write_wr(0xf401, 0, wlen, B.mr.iova + woff, B.mr.key);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xf401, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "dirtylog: RDMA WRITE of 3 pages + 1000 bytes into b");
	check_data("dirtylog: WRITE", &B.buf, woff, wlen, 9700);
	tap_ok(range_marked(&lb, &B.buf, woff, wlen, "WRITE"),
	       "every page the WRITE placed in b is marked in b's log");

	/* SEND a -> b: the receive buffer and the CQE's page */
	ridx = B.rcq.cons;
	post_recv1(&p.b, &B, 0xf402, 1700 * KIB, 5000);
	w = wr1(0xf403, PVO_WR_SEND, &A, 0, 5000);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xf403, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "dirtylog: SEND of 5000 bytes");
	if (get_cqe(&B.rcq, &c, "dirtylog: receive"))
		cqe_ok(&c, 0xf402, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "dirtylog: receive");
	tap_ok(range_marked(&lb, &B.buf, 1700 * KIB, 5000, "SEND") &&
		   marked(&lb, cqe_gpa(&B.rcq, ridx)),
	       "the receive buffer's pages and the CQE's page are marked");

	/* READ a <- b lands in a's memory; an atomic changes b's */
	w = wr1(0xf404, PVO_WR_RDMA_READ, &A, 512 * KIB + 8, 2 * PAGE);
	w.remote_addr = B.mr.iova + woff;
	w.rkey = B.mr.key;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xf404, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "dirtylog: RDMA READ of 2 pages from b");
	tap_ok(range_marked(&la, &A.buf, 512 * KIB + 8, 2 * PAGE, "READ"),
	       "the READ response's pages are marked in a's log");
	off = al8(&B, roff);
	w = wr1(0xf405, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 0), 8);
	w.remote_addr = B.mr.iova + off;
	w.rkey = B.mr.key;
	w.compare_add = 5;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xf405, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "dirtylog: FETCH_AND_ADD on b");
	tap_ok(marked(&lb, sim_buf_gpa(&B.buf, off)),
	       "the atomic's target page is marked in b's log");
	tap_ok(!marked(&lb, sim_buf_gpa(&B.buf, idle)),
	       "a page of b nobody wrote is not marked");

	/* logging off (the log still mapped): nothing more is marked */
	tap_ok(vu_frontend_stop_log(lb.fe) == 0,
	       "SET_FEATURES without VHOST_F_LOG_ALL");
	memset(lb.bits, 0, lb.size);
	fill_pattern(&A.buf, 0, 100, 9701);
	prepare_dst(&B.buf, idle, 100);
	w = write_wr(0xf406, 0, 100, B.mr.iova + idle, B.mr.key);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xf406, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "dirtylog: a WRITE after logging stopped");
	check_data("dirtylog: WRITE after stop", &B.buf, idle, 100, 9701);
	tap_ok(!marked(&lb, sim_buf_gpa(&B.buf, idle)),
	       "with VHOST_F_LOG_ALL off the back-end marks nothing");
	vu_frontend_stop_log(la.fe);
	munmap(lb.bits, lb.size);
	munmap(la.bits, la.size);
	pair_destroy(&p);
}
