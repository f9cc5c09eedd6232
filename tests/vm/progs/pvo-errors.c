// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-errors: the error paths a verbs user relies on, with the IB status
 * each one must produce.
 *
 *   server:  pvo-errors -d DEV -g GID_INDEX [-p PORT]
 *   client:  pvo-errors -d DEV -g GID_INDEX [-p PORT] [-i MAX_INLINE] [-x KEY=STATUS]...
 *                       [-q] SERVER_IP
 *
 * The server is the remote end: on request (over TCP) it creates an RC QP
 * connected to the client's new QP, with an MR of the access rights asked
 * for, and receive WQEs; or a UD QP with a Q_Key; and reports its QP state,
 * the receive completions it saw and a checksum of its MR (plus the page
 * after it) so the client can tell that no byte moved.
 *
 * The client prints TAP: device limits (create_qp / create_cq / create_srq
 * above the advertised maxima fail, at the maxima work; reg_mr above
 * max_mr_size fails; more WRs than the SQ holds -> ENOMEM; moving to ERR
 * flushes SQ and RQ), local errors (bad lkey, SGE outside its MR ->
 * LOC_PROT_ERR, QP to ERR, later WRs flushed), remote errors (bad rkey,
 * outside the MR, MR or QP without the remote access -> REM_ACCESS_ERR,
 * both QPs to ERR, target untouched), receive buffer too small, RNR with
 * rnr_retry 0 and RNR recovered, no responder -> RETRY_EXC_ERR, UD with a
 * wrong Q_Key dropped while the sender completes, UD longer than the MTU.
 * -q adds the VM quotas: objects are created until the device says no.
 * -x replaces an expected status, for a reference device that differs from
 * the IB spec / our contract (see usage()).
 *
 * Exit status 0 if every test passed.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define MR_LEN		(64u << 10)
#define RBUF_LEN	(16u << 10)
#define RSLOT		2048u
#define MAX_RECV	8
#define MSG		64
#define UD_QKEY		0x11223344u
#define BOGUS_QPN	0xabcdefu
#define ALL_REMOTE	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

enum req_type { REQ_RC = 1, REQ_UD, REQ_STATUS, REQ_POST_RECV, REQ_BYE };

struct req {
	uint32_t type;
	uint32_t mr_access;
	uint32_t qp_access;
	uint32_t nrecv;
	uint32_t recv_len;
	uint32_t min_rnr_timer;
	uint32_t qkey;
	uint32_t wait_ms;	/* STATUS: poll at most this long ... */
	uint32_t want;		/* ... or until this many receive CQEs */
	uint32_t reserved;
	struct pt_qp_info peer;
};

struct cqe_rec {
	uint32_t status, opcode, byte_len, flags;
};

struct resp {
	int32_t err;		/* errno of a failed server step */
	uint32_t qp_state;
	uint32_t ncqe;		/* receive CQEs since the QP was made */
	uint32_t reserved;
	struct cqe_rec rec[MAX_RECV];
	uint64_t checksum0;	/* MR (+ guard pages) when made */
	uint64_t checksum;	/* ... now */
	struct pt_qp_info qp;
	char msg[200];
};

static struct pt_dev dev;
static int fd;

/*
 * The completion status each case expects (the contract and the IB spec).
 * -x KEY=STATUS replaces one, for a reference device that differs (Linux
 * rxe in 6.1 does on these; t-errors says which and why).
 */
static struct expectation {
	const char *key;
	int status;
	bool overridden;
} expectations[] = {
	{ "bad-lkey", IBV_WC_LOC_PROT_ERR, false },
	{ "sge-outside-mr", IBV_WC_LOC_PROT_ERR, false },
	{ "qp-no-remote-write", IBV_WC_REM_ACCESS_ERR, false },
	{ "recv-too-small-requester", IBV_WC_REM_INV_REQ_ERR, false },
	{ "recv-too-small-responder", IBV_WC_LOC_LEN_ERR, false },
	{ "ud-longer-than-mtu", IBV_WC_LOC_LEN_ERR, false },
};

static struct expectation *find_expectation(const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(expectations) / sizeof(expectations[0]); i++)
		if (strlen(expectations[i].key) == len && strncmp(expectations[i].key, key, len) == 0)
			return &expectations[i];
	return NULL;
}

static int expect(const char *key)
{
	struct expectation *e = find_expectation(key, strlen(key));

	if (!e) {
		errno = 0;
		pt_die("internal error: no expectation %s", key);
	}
	return e->status;
}

/* " [-x]" after a test name whose expectation came from the command line */
static const char *overridden(const char *key)
{
	return find_expectation(key, strlen(key))->overridden ? " [expectation set by -x]" : "";
}

/* ---- server ---- */

static struct {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *rmr;
	uint8_t *map, *rbuf;
	uint32_t recv_len, nposted;
	uint64_t checksum0;
	uint32_t ncqe;
	struct cqe_rec rec[MAX_RECV];
} so;

#define MAP_LEN (MR_LEN + 2 * 4096)

static void server_free(void)
{
	if (so.qp)
		ibv_destroy_qp(so.qp);
	if (so.cq)
		ibv_destroy_cq(so.cq);
	if (so.mr)
		ibv_dereg_mr(so.mr);
	if (so.rmr)
		ibv_dereg_mr(so.rmr);
	free(so.rbuf);
	if (so.map)
		munmap(so.map, MAP_LEN);
	memset(&so, 0, sizeof(so));
}

static int server_post_recv(uint32_t n)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t i;

	for (i = 0; i < n; i++, so.nposted++) {
		sge.addr = (uintptr_t)(so.rbuf + (so.nposted % MAX_RECV) * RSLOT);
		sge.length = so.recv_len;
		sge.lkey = so.rmr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = so.nposted;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(so.qp, &wr, &bad))
			return errno ? errno : EIO;
	}
	return 0;
}

static int server_make(const struct req *r, struct resp *out)
{
	struct ibv_qp_init_attr qa;
	struct pt_qp_info mine;
	struct pt_conn c = pt_conn_default;
	bool ud = r->type == REQ_UD;
	int err;

	server_free();
	if (r->nrecv > MAX_RECV || r->recv_len > RSLOT) {
		snprintf(out->msg, sizeof(out->msg), "bad request: %u receives of %u bytes",
			 r->nrecv, r->recv_len);
		return EINVAL;
	}
	so.cq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	if (!so.cq)
		return snprintf(out->msg, sizeof(out->msg), "ibv_create_cq"), errno;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = so.cq;
	qa.recv_cq = so.cq;
	qa.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = MAX_RECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	so.qp = ibv_create_qp(dev.pd, &qa);
	if (!so.qp)
		return snprintf(out->msg, sizeof(out->msg), "ibv_create_qp"), errno;
	so.map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	so.rbuf = calloc(1, RBUF_LEN);
	if (so.map == MAP_FAILED || !so.rbuf) {
		so.map = NULL;
		return snprintf(out->msg, sizeof(out->msg), "out of memory"), ENOMEM;
	}
	{
		struct pt_stream s;

		pt_stream_init(&s, lrand48());
		pt_stream_fill(&s, so.map, MAP_LEN);
	}
	so.mr = ibv_reg_mr(dev.pd, so.map + 4096, MR_LEN, ud ? IBV_ACCESS_LOCAL_WRITE : r->mr_access);
	if (!so.mr)
		return snprintf(out->msg, sizeof(out->msg), "ibv_reg_mr access 0x%x",
				r->mr_access), errno;
	so.rmr = ibv_reg_mr(dev.pd, so.rbuf, RBUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!so.rmr)
		return snprintf(out->msg, sizeof(out->msg), "ibv_reg_mr"), errno;
	so.recv_len = r->recv_len;
	so.checksum0 = pt_checksum(so.map, MAP_LEN);
	pt_local_info(&dev, so.qp, &mine);
	if (ud) {
		err = pt_ud_ready(&dev, so.qp, r->qkey);
		if (err)
			return snprintf(out->msg, sizeof(out->msg), "UD QP to RTS"), err;
	} else {
		c.access = r->qp_access;
		c.min_rnr_timer = r->min_rnr_timer;
		err = pt_connect_qp(&dev, so.qp, &mine, &r->peer, &c);
		if (err)
			return snprintf(out->msg, sizeof(out->msg), "RC QP to RTS"), err;
	}
	err = server_post_recv(r->nrecv);
	if (err)
		return snprintf(out->msg, sizeof(out->msg), "ibv_post_recv"), err;
	out->qp = mine;
	out->qp.addr = (uintptr_t)so.mr->addr;
	out->qp.rkey = so.mr->rkey;
	out->qp.len = MR_LEN;
	return 0;
}

static void server_status(const struct req *r, struct resp *out)
{
	uint64_t deadline = pt_now_ms() + r->wait_ms;
	struct ibv_wc wc;
	int n;

	while (so.cq && so.ncqe < r->want && pt_now_ms() < deadline) {
		n = ibv_poll_cq(so.cq, 1, &wc);
		if (n < 0) {
			out->err = -n;
			break;
		}
		if (n == 0)
			continue;
		if (so.ncqe < MAX_RECV) {
			so.rec[so.ncqe].status = wc.status;
			so.rec[so.ncqe].opcode = wc.opcode;
			so.rec[so.ncqe].byte_len = wc.byte_len;
			so.rec[so.ncqe].flags = wc.wc_flags;
		}
		so.ncqe++;
	}
	out->ncqe = so.ncqe;
	memcpy(out->rec, so.rec, sizeof(out->rec));
	out->qp_state = so.qp ? pt_qp_state(so.qp) : 0;
	out->checksum0 = so.checksum0;
	out->checksum = so.map ? pt_checksum(so.map, MAP_LEN) : 0;
}

static int run_server(void)
{
	struct resp out;
	struct req r;

	while (pt_tcp_recv(fd, &r, sizeof(r))) {
		memset(&out, 0, sizeof(out));
		switch (r.type) {
		case REQ_RC:
		case REQ_UD:
			out.err = server_make(&r, &out);
			break;
		case REQ_STATUS:
			server_status(&r, &out);
			break;
		case REQ_POST_RECV:
			out.err = so.qp ? server_post_recv(r.nrecv) : ENOENT;
			break;
		case REQ_BYE:
			server_free();
			printf("pvo-errors server: done\n");
			return 0;
		default:
			errno = 0;
			pt_die("protocol error: request %u", r.type);
		}
		pt_tcp_send(fd, &out, sizeof(out));
	}
	errno = 0;
	pt_die("the client went away without saying goodbye");
}

/* ---- client: TAP ---- */

static int tap_skipped;


static void tap_skip(const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void tap_skip(const char *reason, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - ", ++pt_tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", reason);
	tap_skipped++;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static const char *st(int status)
{
	return status < 0 ? "(no completion)" : ibv_wc_status_str(status);
}

/* ---- client: talking to the server ---- */

static void request(struct req *r, struct resp *out)
{
	pt_tcp_send(fd, r, sizeof(*r));
	if (!pt_tcp_recv(fd, out, sizeof(*out))) {
		errno = 0;
		pt_die("the server closed the connection");
	}
	out->msg[sizeof(out->msg) - 1] = 0;
}

static void peer_status(uint32_t wait_ms, uint32_t want, struct resp *out)
{
	struct req r = { .type = REQ_STATUS, .wait_ms = wait_ms, .want = want };

	request(&r, out);
}

/* ---- client: a local QP with its buffer, connected to a server QP ---- */

struct conn {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t max_send_wr;
	struct ibv_ah *ah;
	struct resp peer;
};

static void conn_free(struct conn *c)
{
	if (c->ah)
		ibv_destroy_ah(c->ah);
	if (c->qp && ibv_destroy_qp(c->qp))
		pt_die("ibv_destroy_qp");
	if (c->cq && ibv_destroy_cq(c->cq))
		pt_die("ibv_destroy_cq");
	if (c->mr && ibv_dereg_mr(c->mr))
		pt_die("ibv_dereg_mr");
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

static void conn_local(struct conn *c, enum ibv_qp_type type, uint32_t sq)
{
	struct ibv_qp_init_attr qa;

	memset(c, 0, sizeof(*c));
	c->cq = ibv_create_cq(dev.ctx, 256, NULL, NULL, 0);
	if (!c->cq)
		pt_die("ibv_create_cq 256");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = type;
	qa.cap.max_send_wr = sq;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	c->qp = ibv_create_qp(dev.pd, &qa);
	if (!c->qp)
		pt_die("ibv_create_qp (send %u WRs)", sq);
	c->max_send_wr = qa.cap.max_send_wr;
	c->buf = aligned_alloc(4096, MR_LEN);
	if (!c->buf)
		pt_die("aligned_alloc");
	memset(c->buf, 0xab, MR_LEN);
	c->mr = ibv_reg_mr(dev.pd, c->buf, MR_LEN, ALL_REMOTE);
	if (!c->mr)
		pt_die("ibv_reg_mr");
}

/* A fresh RC QP here and one there; r says how the remote end looks. */
static bool conn_rc(struct conn *c, struct req *r, const struct pt_conn *pc, uint32_t sq,
		    bool bogus_dest, const char *what)
{
	struct pt_qp_info mine, dest;
	int err;

	conn_local(c, IBV_QPT_RC, sq);
	pt_local_info(&dev, c->qp, &mine);
	r->type = REQ_RC;
	r->peer = mine;
	request(r, &c->peer);
	if (c->peer.err) {
		pt_tap_ok(false, "%s: set up the server's QP", what);
		diag("server: %s: %s", c->peer.msg, strerror(c->peer.err));
		return false;
	}
	dest = c->peer.qp;
	if (bogus_dest)
		dest.qpn = BOGUS_QPN;
	err = pt_connect_qp(&dev, c->qp, &mine, &dest, pc);
	if (err) {
		pt_tap_ok(false, "%s: connect the client's QP", what);
		diag("ibv_modify_qp: %s", strerror(err));
		return false;
	}
	return true;
}

static int post(struct conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return ibv_post_send(c->qp, wr, &bad);
}

static void make_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id,
		    enum ibv_wr_opcode op, struct conn *c, uint32_t len)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)c->buf;
	sge->length = len;
	sge->lkey = c->mr->lkey;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.rdma.remote_addr = c->peer.qp.addr;
	wr->wr.rdma.rkey = c->peer.qp.rkey;
}

/* Polls n completions (status -1 for the ones that did not come). */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!pt_poll(cq, &wc[i], timeout_ms))
			break;
	}
	for (int k = i; k < n; k++) {
		memset(&wc[k], 0, sizeof(wc[k]));
		wc[k].status = -1;
	}
	return i;
}

/* After a first failing WR: the QP is in ERR and a WR posted now is
 * flushed.
 */
static void check_err_and_flush(struct conn *c, const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int state = pt_qp_state(c->qp), err;

	pt_tap_ok(state == IBV_QPS_ERR, "%s: the requester QP is in ERR (ibv_query_qp: %s)", what,
	       pt_qp_state_str(state));
	make_wr(&wr, &sge, 99, IBV_WR_SEND, c, MSG);
	err = post(c, &wr);
	if (err) {
		pt_tap_ok(false, "%s: a WR posted to the QP in ERR completes with WR_FLUSH_ERR", what);
		diag("ibv_post_send: %s", strerror(err));
		return;
	}
	if (!pt_poll(c->cq, &wc, 5000))
		wc.status = -1;
	pt_tap_ok(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 99,
	       "%s: a WR posted to the QP in ERR completes with WR_FLUSH_ERR (%s)", what,
	       st(wc.status));
}

/* ---- client: the tests ---- */

static uint32_t max_inline_expected = 256;

static void test_limits(void)
{
	struct ibv_device_attr *a = &dev.attr;
	struct ibv_qp_init_attr qa;
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int i;
	struct {
		const char *what;
		uint32_t send_wr, recv_wr, send_sge, recv_sge, inl;
		bool ok;
	} cases[] = {
		{ "max_send_wr = max_qp_wr + 1", a->max_qp_wr + 1, 1, 1, 1, 0, false },
		{ "max_recv_wr = max_qp_wr + 1", 1, a->max_qp_wr + 1, 1, 1, 0, false },
		{ "max_send_sge = max_sge + 1", 1, 1, a->max_sge + 1, 1, 0, false },
		{ "max_recv_sge = max_sge + 1", 1, 1, 1, a->max_sge + 1, 0, false },
		{ "max_inline_data = max inline + 1", 1, 1, 1, 1, max_inline_expected + 1, false },
		{ "max_send_sge = max_recv_sge = max_sge", 4, 4, a->max_sge, a->max_sge, 0, true },
		{ "max_inline_data = max inline", 4, 4, 1, 1, max_inline_expected, true },
		{ "max_send_wr = max_recv_wr = max_qp_wr", a->max_qp_wr, a->max_qp_wr, 1, 1, 0, true },
	};

	diag("device: max_qp_wr %d max_sge %d max_cqe %d max_srq_wr %d max_mr_size 0x%" PRIx64
	     " (max inline expected %u)", a->max_qp_wr, a->max_sge, a->max_cqe, a->max_srq_wr,
	     (uint64_t)a->max_mr_size, max_inline_expected);
	cq = ibv_create_cq(dev.ctx, 16, NULL, NULL, 0);
	if (!cq)
		pt_die("ibv_create_cq");
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		if (cases[i].ok && cases[i].send_wr > 16384) {
			tap_skip("max_qp_wr is too large to allocate in a test guest",
				 "create_qp with %s works", cases[i].what);
			continue;
		}
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = cases[i].send_wr;
		qa.cap.max_recv_wr = cases[i].recv_wr;
		qa.cap.max_send_sge = cases[i].send_sge;
		qa.cap.max_recv_sge = cases[i].recv_sge;
		qa.cap.max_inline_data = cases[i].inl;
		errno = 0;
		qp = ibv_create_qp(dev.pd, &qa);
		if (cases[i].ok)
			pt_tap_ok(qp != NULL, "create_qp with %s works%s%s", cases[i].what,
			       qp ? "" : ": ", qp ? "" : strerror(errno));
		else
			pt_tap_ok(qp == NULL, "create_qp with %s fails (%s)", cases[i].what,
			       qp ? "it worked" : strerror(errno));
		if (qp && ibv_destroy_qp(qp))
			pt_die("ibv_destroy_qp");
	}
	if (ibv_destroy_cq(cq))
		pt_die("ibv_destroy_cq");

	errno = 0;
	cq = ibv_create_cq(dev.ctx, a->max_cqe + 1, NULL, NULL, 0);
	pt_tap_ok(cq == NULL, "create_cq with max_cqe + 1 = %d entries fails (%s)", a->max_cqe + 1,
	       cq ? "it worked" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(dev.ctx, a->max_cqe, NULL, NULL, 0);
	pt_tap_ok(cq != NULL, "create_cq with max_cqe = %d entries works%s%s", a->max_cqe,
	       cq ? "" : ": ", cq ? "" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = a->max_srq_wr + 1;
	sa.attr.max_sge = 1;
	errno = 0;
	srq = ibv_create_srq(dev.pd, &sa);
	pt_tap_ok(srq == NULL, "create_srq with max_srq_wr + 1 = %d WRs fails (%s)",
	       a->max_srq_wr + 1, srq ? "it worked" : strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);
}

static void test_mr_size(void)
{
	uint64_t max = dev.attr.max_mr_size;
	struct ibv_mr *mr;
	size_t len;
	void *p;

	if (max > (256ull << 20)) {
		tap_skip("max_mr_size is too large to exceed in a test guest",
			 "reg_mr of max_mr_size + 4 KiB fails");
		tap_skip("max_mr_size is too large to register in a test guest",
			 "reg_mr of max_mr_size works");
		return;
	}
	len = max + 4096;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		pt_die("mmap %zu bytes", len);
	errno = 0;
	mr = ibv_reg_mr(dev.pd, p, len, IBV_ACCESS_LOCAL_WRITE);
	pt_tap_ok(mr == NULL, "reg_mr of max_mr_size + 4 KiB = %zu bytes fails (%s)", len,
	       mr ? "it worked" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_mr(dev.pd, p, max, IBV_ACCESS_LOCAL_WRITE);
	pt_tap_ok(mr != NULL, "reg_mr of max_mr_size = %" PRIu64 " bytes works%s%s", max,
	       mr ? "" : ": ", mr ? "" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(p, len);
}

/* The responder has no receive WQE and we retry RNR forever, so every
 * SEND stays outstanding: the SQ fills up.
 */
static void test_sq_full(void)
{
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .nrecv = 0,
			 .recv_len = MSG, .min_rnr_timer = 12 };
	const char *what = "SQ full";
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc[64];
	struct conn c;
	uint32_t n = 0;
	int err = 0, got, flushed = 0, i;

	if (!conn_rc(&c, &r, &pt_conn_default, 16, false, what))
		return conn_free(&c);
	while (n < 1000) {
		make_wr(&wr, &sge, n, IBV_WR_SEND, &c, MSG);
		err = post(&c, &wr);
		if (err)
			break;
		n++;
	}
	/* at least what create_qp granted; a queue may round up (rxe to 2^n - 1) */
	pt_tap_ok(n >= c.max_send_wr && n <= 2 * c.max_send_wr && err == ENOMEM,
	       "%s: cap.max_send_wr = %u .. 2x that SENDs post, the next fails with ENOMEM "
	       "(posted %u, then %s)", what, c.max_send_wr, n, err ? strerror(err) : "no error");
	err = pt_set_error(c.qp);
	pt_tap_ok(err == 0, "%s: modify_qp to ERR works (%s)", what, err ? strerror(err) : "ok");
	got = poll_n(c.cq, wc, n < 64 ? n : 64, 5000);
	for (i = 0; i < got; i++)
		flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
	pt_tap_ok(got == (int)n && flushed == got && !pt_poll(c.cq, wc, 100),
	       "%s: moving the QP to ERR flushes every outstanding WR (%d of %u completions, "
	       "%d WR_FLUSH_ERR)", what, got, n, flushed);
	if (got && flushed != got)
		diag("first status %s", st(wc[0].status));
	conn_free(&c);
}

static void test_rq_flush(void)
{
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .recv_len = MSG };
	const char *what = "RQ flush";
	struct ibv_recv_wr rwr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc[4];
	struct conn c;
	int i, got, flushed = 0;

	if (!conn_rc(&c, &r, &pt_conn_default, 4, false, what))
		return conn_free(&c);
	for (i = 0; i < 3; i++) {
		sge.addr = (uintptr_t)c.buf + i * 128;
		sge.length = 128;
		sge.lkey = c.mr->lkey;
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 500 + i;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		if (ibv_post_recv(c.qp, &rwr, &bad))
			pt_die("ibv_post_recv");
	}
	pt_set_error(c.qp);
	got = poll_n(c.cq, wc, 3, 5000);
	for (i = 0; i < got; i++)
		flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].wr_id == 500u + i;
	pt_tap_ok(got == 3 && flushed == 3,
	       "%s: moving the QP to ERR flushes the 3 posted receives in order "
	       "(%d completions, %d WR_FLUSH_ERR)", what, got, flushed);
	conn_free(&c);
}

/* A local protection error: the first WR of two fails, the second is
 * flushed, nothing reaches the responder.
 */
static void test_local(const char *what, bool bad_key)
{
	const char *key = bad_key ? "bad-lkey" : "sge-outside-mr";
	int want = expect(key);
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .nrecv = 4,
			 .recv_len = 1024 };
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	struct ibv_wc wc[2];
	struct resp s;
	struct conn c;
	int err;

	if (!conn_rc(&c, &r, &pt_conn_default, 8, false, what))
		return conn_free(&c);
	make_wr(&wr[0], &sge[0], 1, IBV_WR_SEND, &c, MSG);
	make_wr(&wr[1], &sge[1], 2, IBV_WR_SEND, &c, MSG);
	wr[0].next = &wr[1];
	if (bad_key)
		sge[0].lkey ^= 0x80;	/* same index, another tag */
	else
		sge[0].addr = (uintptr_t)c.buf + MR_LEN - 8;	/* runs 56 bytes past the MR */
	err = post(&c, &wr[0]);
	if (err) {
		pt_tap_ok(false, "%s: requester completes with %s%s", what, st(want), overridden(key));
		diag("ibv_post_send failed: %s", strerror(err));
		return conn_free(&c);
	}
	poll_n(c.cq, wc, 2, 10000);
	pt_tap_ok((int)wc[0].status == want && wc[0].wr_id == 1,
	       "%s: requester completes with %s%s (%s)", what, st(want), overridden(key),
	       st(wc[0].status));
	pt_tap_ok(wc[1].status == IBV_WC_WR_FLUSH_ERR && wc[1].wr_id == 2,
	       "%s: the next WR completes with WR_FLUSH_ERR (%s)", what, st(wc[1].status));
	check_err_and_flush(&c, what);
	peer_status(300, 1, &s);
	pt_tap_ok(s.ncqe == 0 && s.qp_state == IBV_QPS_RTS,
	       "%s: the responder received nothing and stays RTS (%u completions, %s)", what,
	       s.ncqe, pt_qp_state_str(s.qp_state));
	conn_free(&c);
}

enum remote_case { BAD_RKEY, OUT_OF_MR, MR_NO_WRITE, MR_NO_READ, MR_NO_ATOMIC, QP_NO_WRITE };

/* A remote access error: requester REM_ACCESS_ERR, next WR flushed, both
 * QPs in ERR, the responder's memory untouched.
 */
static void test_remote(const char *what, enum remote_case rc)
{
	const char *key = rc == QP_NO_WRITE ? "qp-no-remote-write" : NULL;
	int want = key ? expect(key) : IBV_WC_REM_ACCESS_ERR;
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .nrecv = 2,
			 .recv_len = 1024 };
	enum ibv_wr_opcode op = IBV_WR_RDMA_WRITE;
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	struct ibv_wc wc[2];
	struct resp s;
	struct conn c;
	uint32_t len = MSG;
	int err;

	switch (rc) {
	case MR_NO_WRITE:
		r.mr_access = IBV_ACCESS_REMOTE_READ;
		break;
	case MR_NO_READ:
		r.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		op = IBV_WR_RDMA_READ;
		break;
	case MR_NO_ATOMIC:
		r.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ;
		op = IBV_WR_ATOMIC_FETCH_AND_ADD;
		len = 8;
		break;
	case QP_NO_WRITE:
		r.qp_access = IBV_ACCESS_REMOTE_READ;
		break;
	default:
		break;
	}
	if (!conn_rc(&c, &r, &pt_conn_default, 8, false, what))
		return conn_free(&c);
	make_wr(&wr[0], &sge[0], 1, op, &c, len);
	make_wr(&wr[1], &sge[1], 2, IBV_WR_RDMA_WRITE, &c, MSG);
	wr[0].next = &wr[1];
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr[0].wr.atomic.remote_addr = c.peer.qp.addr;
		wr[0].wr.atomic.rkey = c.peer.qp.rkey;
		wr[0].wr.atomic.compare_add = 1;
	}
	if (rc == BAD_RKEY)
		wr[0].wr.rdma.rkey ^= 0x80;
	if (rc == OUT_OF_MR)
		wr[0].wr.rdma.remote_addr += MR_LEN - 8;	/* 56 bytes past the end */
	err = post(&c, &wr[0]);
	if (err) {
		pt_tap_ok(false, "%s: requester completes with %s", what, st(want));
		diag("ibv_post_send failed: %s", strerror(err));
		return conn_free(&c);
	}
	poll_n(c.cq, wc, 2, 10000);
	pt_tap_ok((int)wc[0].status == want && wc[0].wr_id == 1,
	       "%s: requester completes with %s%s (%s)", what, st(want),
	       key ? overridden(key) : "", st(wc[0].status));
	pt_tap_ok(wc[1].status == IBV_WC_WR_FLUSH_ERR && wc[1].wr_id == 2,
	       "%s: the next WR completes with WR_FLUSH_ERR (%s)", what, st(wc[1].status));
	check_err_and_flush(&c, what);
	/* the responder's receive WQEs are flushed when its QP goes to ERR */
	peer_status(2000, 2, &s);
	pt_tap_ok(s.qp_state == IBV_QPS_ERR, "%s: the responder QP is in ERR (%s)", what,
	       pt_qp_state_str(s.qp_state));
	pt_tap_ok(s.checksum == s.checksum0, "%s: the responder's memory is untouched", what);
	conn_free(&c);
}

static void test_recv_too_small(void)
{
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .nrecv = 1,
			 .recv_len = 16 };
	const char *what = "receive buffer too small";
	const char *kreq = "recv-too-small-requester", *kresp = "recv-too-small-responder";
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct resp s;
	struct conn c;

	if (!conn_rc(&c, &r, &pt_conn_default, 8, false, what))
		return conn_free(&c);
	make_wr(&wr, &sge, 1, IBV_WR_SEND, &c, MSG);
	if (post(&c, &wr) || !pt_poll(c.cq, &wc, 10000))
		wc.status = -1;
	pt_tap_ok((int)wc.status == expect(kreq),
	       "%s: SEND of %d bytes into 16: requester completes with %s%s (%s)",
	       what, MSG, st(expect(kreq)), overridden(kreq), st(wc.status));
	peer_status(2000, 1, &s);
	pt_tap_ok(s.ncqe >= 1 && (int)s.rec[0].status == expect(kresp),
	       "%s: the responder's receive completes with %s%s (%s)", what, st(expect(kresp)),
	       overridden(kresp), s.ncqe ? st(s.rec[0].status) : "none");
	pt_tap_ok(s.qp_state == IBV_QPS_ERR, "%s: the responder QP is in ERR (%s)", what,
	       pt_qp_state_str(s.qp_state));
	conn_free(&c);
}

static void test_rnr(void)
{
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .nrecv = 0,
			 .recv_len = 1024, .min_rnr_timer = 1 };
	struct pt_conn pc = pt_conn_default;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct resp s;
	struct conn c;
	int state, got;

	pc.rnr_retry = 0;
	if (!conn_rc(&c, &r, &pc, 8, false, "RNR"))
		return conn_free(&c);
	make_wr(&wr, &sge, 1, IBV_WR_SEND, &c, MSG);
	if (post(&c, &wr) || !pt_poll(c.cq, &wc, 10000))
		wc.status = -1;
	pt_tap_ok(wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
	       "RNR: SEND without a receive WQE, rnr_retry 0: RNR_RETRY_EXC_ERR (%s)",
	       st(wc.status));
	state = pt_qp_state(c.qp);
	pt_tap_ok(state == IBV_QPS_ERR, "RNR: the requester QP is in ERR (%s)", pt_qp_state_str(state));
	conn_free(&c);

	/* rnr_retry 7 retries until a receive WQE shows up */
	r.min_rnr_timer = 1;
	pc.rnr_retry = 7;
	if (!conn_rc(&c, &r, &pc, 8, false, "RNR retry"))
		return conn_free(&c);
	make_wr(&wr, &sge, 2, IBV_WR_SEND, &c, MSG);
	if (post(&c, &wr))
		pt_die("ibv_post_send");
	got = pt_poll(c.cq, &wc, 500);
	pt_tap_ok(!got, "RNR retry: no completion while the responder has no receive WQE (%s)",
	       got ? st(wc.status) : "none");
	{
		struct req pr = { .type = REQ_POST_RECV, .nrecv = 1 };

		request(&pr, &s);
	}
	if (!pt_poll(c.cq, &wc, 10000))
		wc.status = -1;
	pt_tap_ok(wc.status == IBV_WC_SUCCESS, "RNR retry: the SEND completes once a receive WQE "
	       "is posted (%s)", st(wc.status));
	peer_status(2000, 1, &s);
	pt_tap_ok(s.ncqe == 1 && s.rec[0].status == IBV_WC_SUCCESS && s.rec[0].byte_len == MSG,
	       "RNR retry: the responder received the %d bytes (%u completions, %s, %u bytes)", MSG,
	       s.ncqe, s.ncqe ? st(s.rec[0].status) : "-", s.rec[0].byte_len);
	conn_free(&c);
}

static void test_retry_exceeded(void)
{
	struct req r = { .mr_access = ALL_REMOTE, .qp_access = ALL_REMOTE, .nrecv = 1,
			 .recv_len = 1024 };
	struct pt_conn pc = pt_conn_default;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct resp s;
	struct conn c;
	int state;

	pc.timeout = 12;	/* 16.8 ms */
	pc.retry_cnt = 2;
	if (!conn_rc(&c, &r, &pc, 8, true, "no responder"))
		return conn_free(&c);
	make_wr(&wr, &sge, 1, IBV_WR_RDMA_WRITE, &c, MSG);
	if (post(&c, &wr) || !pt_poll(c.cq, &wc, 20000))
		wc.status = -1;
	pt_tap_ok(wc.status == IBV_WC_RETRY_EXC_ERR,
	       "no responder (QPN 0x%x does not exist): RETRY_EXC_ERR (%s)", BOGUS_QPN,
	       st(wc.status));
	state = pt_qp_state(c.qp);
	pt_tap_ok(state == IBV_QPS_ERR, "no responder: the requester QP is in ERR (%s)",
	       pt_qp_state_str(state));
	peer_status(300, 1, &s);
	pt_tap_ok(s.checksum == s.checksum0 && s.ncqe == 0,
	       "no responder: the server's QP and memory saw nothing");
	conn_free(&c);
}

static void test_ud(void)
{
	struct req r = { .type = REQ_UD, .nrecv = 4, .recv_len = 40 + 1024, .qkey = UD_QKEY };
	uint32_t mtu = 128u << dev.port_attr.active_mtu;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct resp s;
	struct conn c;
	int err;

	conn_local(&c, IBV_QPT_UD, 8);
	request(&r, &c.peer);
	if (c.peer.err) {
		pt_tap_ok(false, "UD: set up the server's QP");
		diag("server: %s: %s", c.peer.msg, strerror(c.peer.err));
		return conn_free(&c);
	}
	err = pt_ud_ready(&dev, c.qp, 0x5555);
	c.ah = pt_create_ah(&dev, c.peer.qp.gid);
	if (err || !c.ah)
		pt_die("UD QP / AH set-up");

	make_wr(&wr, &sge, 1, IBV_WR_SEND, &c, MSG);
	wr.wr.ud.ah = c.ah;
	wr.wr.ud.remote_qpn = c.peer.qp.qpn;
	wr.wr.ud.remote_qkey = UD_QKEY ^ 1;
	if (post(&c, &wr) || !pt_poll(c.cq, &wc, 10000))
		wc.status = -1;
	pt_tap_ok(wc.status == IBV_WC_SUCCESS, "UD wrong Q_Key: the sender completes with success (%s)",
	       st(wc.status));
	peer_status(1000, 1, &s);
	pt_tap_ok(s.ncqe == 0, "UD wrong Q_Key: the receiver gets nothing within 1 s (%u completions)",
	       s.ncqe);

	wr.wr_id = 2;
	wr.wr.ud.remote_qkey = UD_QKEY;
	if (post(&c, &wr) || !pt_poll(c.cq, &wc, 10000))
		wc.status = -1;
	peer_status(5000, 1, &s);
	pt_tap_ok(wc.status == IBV_WC_SUCCESS && s.ncqe == 1 && s.rec[0].status == IBV_WC_SUCCESS &&
	       s.rec[0].byte_len == 40 + MSG && (s.rec[0].flags & IBV_WC_GRH),
	       "UD right Q_Key (control): delivered, byte_len %d = 40-byte GRH + %d, GRH flag "
	       "(sender %s; %u receive completions, %s, byte_len %u, flags 0x%x)", 40 + MSG, MSG,
	       st(wc.status), s.ncqe, s.ncqe ? st(s.rec[0].status) : "-", s.rec[0].byte_len,
	       s.rec[0].flags);

	wr.wr_id = 3;
	sge.length = mtu + 1;
	err = post(&c, &wr);
	if (!err && !pt_poll(c.cq, &wc, 10000))
		wc.status = -1;
	pt_tap_ok(err || (int)wc.status == expect("ud-longer-than-mtu"),
	       "UD SEND of path MTU + 1 = %u bytes: %s%s (post: %s, completion: %s)",
	       mtu + 1, st(expect("ud-longer-than-mtu")), overridden("ud-longer-than-mtu"),
	       err ? strerror(err) : "ok", err ? "-" : st(wc.status));
	peer_status(500, 2, &s);
	pt_tap_ok(s.ncqe == 1, "UD SEND longer than the MTU: nothing delivered (%u receive "
	       "completions in all)", s.ncqe);
	conn_free(&c);
}

/* Creates objects of one kind until the device refuses; frees them. */
static void test_quota(const char *kind)
{
	enum { CAP = 4096 };
	void **objs = calloc(CAP, sizeof(void *));
	struct ibv_qp_init_attr qa;
	struct ibv_srq_init_attr sa;
	struct ibv_ah_attr aa;
	struct ibv_cq *cq = NULL;
	char *buf = malloc(4096);
	int n, err = 0;

	if (!objs || !buf)
		pt_die("malloc");
	if (strcmp(kind, "qp") == 0) {
		cq = ibv_create_cq(dev.ctx, 4, NULL, NULL, 0);
		if (!cq)
			pt_die("ibv_create_cq");
	}
	for (n = 0; n < CAP; n++) {
		errno = 0;
		if (strcmp(kind, "qp") == 0) {
			memset(&qa, 0, sizeof(qa));
			qa.send_cq = cq;
			qa.recv_cq = cq;
			qa.qp_type = IBV_QPT_RC;
			qa.cap.max_send_wr = 1;
			qa.cap.max_recv_wr = 1;
			qa.cap.max_send_sge = 1;
			qa.cap.max_recv_sge = 1;
			objs[n] = ibv_create_qp(dev.pd, &qa);
		} else if (strcmp(kind, "cq") == 0) {
			objs[n] = ibv_create_cq(dev.ctx, 1, NULL, NULL, 0);
		} else if (strcmp(kind, "mr") == 0) {
			objs[n] = ibv_reg_mr(dev.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
		} else if (strcmp(kind, "srq") == 0) {
			memset(&sa, 0, sizeof(sa));
			sa.attr.max_wr = 1;
			sa.attr.max_sge = 1;
			objs[n] = ibv_create_srq(dev.pd, &sa);
		} else if (strcmp(kind, "ah") == 0) {
			memset(&aa, 0, sizeof(aa));
			aa.is_global = 1;
			aa.grh.dgid = dev.gid;
			aa.grh.sgid_index = dev.gid_index;
			aa.grh.hop_limit = 1;
			aa.port_num = dev.port;
			objs[n] = ibv_create_ah(dev.pd, &aa);
		} else {
			errno = 0;
			pt_die("unknown quota kind %s", kind);
		}
		if (!objs[n]) {
			err = errno;
			break;
		}
	}
	/* parsed by t-errors */
	printf("# quota %s: created %d, then %s (errno %d)\n", kind, n,
	       n == CAP ? "stopped at the cap" : strerror(err), n == CAP ? 0 : err);
	while (n-- > 0) {
		if (strcmp(kind, "qp") == 0)
			err = ibv_destroy_qp(objs[n]);
		else if (strcmp(kind, "cq") == 0)
			err = ibv_destroy_cq(objs[n]);
		else if (strcmp(kind, "mr") == 0)
			err = ibv_dereg_mr(objs[n]);
		else if (strcmp(kind, "srq") == 0)
			err = ibv_destroy_srq(objs[n]);
		else
			err = ibv_destroy_ah(objs[n]);
		if (err)
			pt_die("freeing %s %d", kind, n);
	}
	if (cq)
		ibv_destroy_cq(cq);
	free(objs);
	free(buf);
}

static int run_client(bool quotas)
{
	struct req bye = { .type = REQ_BYE };

	test_limits();
	test_mr_size();
	test_sq_full();
	test_rq_flush();
	test_local("bad lkey", true);
	test_local("local SGE outside its MR", false);
	test_remote("bad rkey", BAD_RKEY);
	test_remote("RDMA WRITE running past the end of the MR", OUT_OF_MR);
	test_remote("RDMA WRITE to an MR without REMOTE_WRITE", MR_NO_WRITE);
	test_remote("RDMA READ from an MR without REMOTE_READ", MR_NO_READ);
	test_remote("ATOMIC on an MR without REMOTE_ATOMIC", MR_NO_ATOMIC);
	test_remote("RDMA WRITE to a QP without REMOTE_WRITE", QP_NO_WRITE);
	test_recv_too_small();
	test_rnr();
	test_retry_exceeded();
	test_ud();
	if (quotas) {
		test_quota("qp");
		test_quota("cq");
		test_quota("mr");
		test_quota("srq");
		test_quota("ah");
	}
	pt_tcp_send(fd, &bye, sizeof(bye));
	printf("1..%d\n", pt_tap_n);
	printf("pvo-errors: passed=%d failed=%d skipped=%d\n", pt_tap_n - pt_tap_failed - tap_skipped,
	       pt_tap_failed, tap_skipped);
	return pt_tap_failed ? 1 : 0;
}

static void usage(void)
{
	size_t i;

	fprintf(stderr,
		"usage: pvo-errors -d DEV -g GID_INDEX [-p PORT] [-i MAX_INLINE] [-x KEY=STATUS]... "
		"[-q] [SERVER_IP]\n"
		"  without SERVER_IP: the server side\n"
		"  -i  the device's max inline data (default 256)\n"
		"  -x  expect ibv_wc_status STATUS (a number) instead of the default for KEY:\n");
	for (i = 0; i < sizeof(expectations) / sizeof(expectations[0]); i++)
		fprintf(stderr, "        %s (default %d, %s)\n", expectations[i].key,
			expectations[i].status, ibv_wc_status_str(expectations[i].status));
	fprintf(stderr, "  -q  probe the VM quotas (create QP/CQ/MR/SRQ/AH until refused)\n");
	exit(2);
}

static void set_expectation(const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct expectation *e = eq ? find_expectation(arg, eq - arg) : NULL;
	char *end;
	long v;

	if (!e)
		usage();
	v = strtol(eq + 1, &end, 0);
	if (*end || v < 0 || v > IBV_WC_TM_RNDV_INCOMPLETE)
		usage();
	e->status = v;
	e->overridden = true;
}

/* The options of pvo-errors besides pt_parse_args' (ctx: the -q flag). */
static bool own_opt(int opt, const char *arg, void *ctx)
{
	long v;

	switch (opt) {
	case 'i':
		if (!pt_parse_num(arg, 0, INT_MAX, &v))
			return false;
		max_inline_expected = v;
		return true;
	case 'x':
		set_expectation(arg);
		return true;
	case 'q':
		*(bool *)ctx = true;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct pt_args a = { .port = 18800 };
	bool quotas = false;

	pt_parse_args(argc, argv, "i:x:q", own_opt, &quotas, &a, usage);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ pt_now_ms());
	pt_open(&dev, a.dev, a.gid_index);
	if (!a.peer) {
		fd = pt_tcp_accept(a.port);
		return run_server();
	}
	fd = pt_tcp_connect(a.peer, a.port, 60);
	return run_client(quotas);
}
