// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-integrity: data integrity over an RC QP between two hosts.
 *
 *   server:  pvo-integrity -d DEV -g GID_INDEX [-p PORT]
 *   client:  pvo-integrity -d DEV -g GID_INDEX [-p PORT] [-n ROUNDS] [-m SECONDS]
 *                          [-s MAX] [-v] SERVER_IP
 *            (-m: more rounds until SECONDS have passed, for work that must
 *            span something else, like a migration, on any machine speed)
 *   either:  [-t ACK_TIMEOUT] [-r RETRY_CNT]   the RC QP's local ACK timeout
 *            (4.096 us * 2^ACK_TIMEOUT) and retry count; default 14 and 7
 *
 * The client drives; a TCP connection carries the out-of-band exchange and
 * the per-transfer handshake. Every transfer (SEND, SEND with immediate,
 * RDMA WRITE, RDMA WRITE with immediate, RDMA READ) of every size from 1 B
 * to 1 MiB (powers of two and odd sizes) uses 1..4 SGEs at unaligned
 * addresses with gaps between them, pieces that cross pages, two MRs (one
 * registered at an unaligned address), inline data for small messages, and
 * receive buffers split differently from the send side and sometimes
 * larger than the message. Data is a pattern seeded by round, transfer,
 * operation and size; the receiving side checks every byte, and the guard
 * bytes around each range (4 KiB each side) and the gaps between SGEs must
 * still hold the guard pattern. The source must be unchanged too. A burst
 * of 200 SENDs then wraps the send and receive rings with many WRs in
 * flight.
 *
 * -x on the server flips one byte (data or guard) of every transfer before
 * checking it: a self-test that shows the checks catch a single bad byte.
 *
 * Output: a FAIL line per bad transfer, a line per operation and
 *   pvo-integrity: transfers=N bytes=B failures=F seconds=S
 * Exit status 0 if every transfer was right.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define MR_LEN		(2u << 20)
#define GUARD		4096u
#define MAX_MSG		(1u << 20)
#define MAX_SGE		4
#define SQ_DEPTH	32
#define RQ_DEPTH	256
#define CQ_DEPTH	512
#define INLINE_WANT	64
#define SCRATCH_OFF	(MR_LEN - 512)	/* receive WQE of WRITE_WITH_IMM */
#define SCRATCH_LEN	256
#define BURST_OFF	(1536u << 10)
#define BURST_COUNT	200
#define BURST_SLOT	160
#define BURST_MAX	128
#define CQE_TIMEOUT_MS	30000

enum op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_COUNT, OP_BURST = 100 };

static const char *const op_names[OP_COUNT] = {
	"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ"
};

/* start offsets within a page: aligned, odd, and close to the page end */
static const size_t start_offs[] = { 0, 1, 7, 63, 2049, 4093, 4095 };
#define N_OFFS (sizeof(start_offs) / sizeof(start_offs[0]))

enum ctl_type { CTL_HELLO = 1, CTL_PREP, CTL_READY, CTL_CHECK, CTL_RESULT, CTL_BYE };

struct ctl {
	uint32_t type;
	uint32_t op;
	uint32_t round;
	uint32_t t;		/* transfer number */
	uint32_t size;
	int32_t status;		/* CHECK: requester wc status; RESULT: 0 ok */
	uint64_t addr;		/* READY: remote address for RDMA */
	uint32_t rkey;
	uint32_t reserved;
	char msg[240];
};

struct hello {
	struct pt_qp_info qp;
	uint64_t mr_addr[2];
	uint32_t mr_rkey[2];
};

struct mem {
	uint8_t *base;		/* byte 0 of the MR */
	struct ibv_mr *mr;
};

/* Where a message lives on one side: n pieces with gaps, guards around. */
struct layout {
	int n;
	size_t off[MAX_SGE];	/* from mem.base */
	size_t len[MAX_SGE];
	size_t cap;		/* sum of len: >= message size */
	size_t lo, hi;		/* checked window [lo, hi) */
};

/* Everything both sides derive from (round, t, op, size). */
struct xfer {
	uint32_t round, t, op, size;
	int local_mr, remote_mr;
	int local_nsge, remote_nsge;
	size_t local_off, remote_off;
	size_t recv_extra;
	uint64_t dseed, gseed;
	uint32_t imm;
	bool try_inline;
};

static struct {
	struct pt_dev dev;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct mem mem[2];
	uint32_t max_inline;
	bool verbose;
	bool corrupt;		/* self-test: spoil every transfer on the server */
	int ack_timeout;	/* -t, -1: pt_conn_default's */
	int retry_cnt;		/* -r, -1: pt_conn_default's */
	int fd;
	uint8_t *img;		/* expected window contents */
	uint8_t *data;		/* message bytes */
} g;

static void xfer_init(struct xfer *x, uint32_t round, uint32_t t, uint32_t op, uint32_t size)
{
	uint64_t h = pt_mix(pt_mix(round, t), (uint64_t)size << 8 | op);

	memset(x, 0, sizeof(*x));
	x->round = round;
	x->t = t;
	x->op = op;
	x->size = size;
	x->local_mr = t & 1;
	x->remote_mr = (t >> 1) & 1;
	x->local_nsge = 1 + t % MAX_SGE;
	x->remote_nsge = 1 + (t / MAX_SGE + 1) % MAX_SGE;
	x->local_off = start_offs[t % N_OFFS];
	x->remote_off = start_offs[(t * 3 + 2) % N_OFFS];
	x->recv_extra = t % 5 == 0 ? 100 : 0;
	x->dseed = h;
	x->gseed = pt_mix(h, 0x6a4d);
	x->imm = (uint32_t)pt_mix(h, 0x1a1a);
	x->try_inline = t % 3 == 0;
}

/* n pieces holding cap bytes, uneven lengths, gaps of 1..61 bytes, the
 * first at GUARD + start.
 */
static void make_layout(struct layout *l, size_t cap, int n, size_t start)
{
	size_t base, sum = 0, gap;
	int k;

	if ((size_t)n > cap)
		n = cap;
	l->n = n;
	l->cap = cap;
	base = cap / n;
	for (k = 0; k < n - 1; k++) {
		l->len[k] = base + ((k & 1) ? -(base / 3) : base / 3);
		sum += l->len[k];
	}
	l->len[n - 1] = cap - sum;
	l->off[0] = GUARD + start;
	for (k = 1; k < n; k++) {
		gap = 1 + (start + 37 * k) % 61;
		l->off[k] = l->off[k - 1] + l->len[k - 1] + gap;
	}
	l->lo = l->off[0] - GUARD;
	l->hi = l->off[n - 1] + l->len[n - 1] + GUARD;
	if (l->hi > MR_LEN - SCRATCH_LEN - 256) {
		errno = 0;
		pt_die("layout of %zu bytes does not fit the MR", cap);
	}
}

/* The window as it must look: the guard pattern, and with_data the first
 * size bytes of the message laid over the pieces in order.
 */
static void build_image(const struct layout *l, const struct xfer *x, bool with_data)
{
	struct pt_stream s;
	size_t pos = 0, c;
	int k;

	pt_stream_init(&s, x->gseed);
	pt_stream_fill(&s, g.img, l->hi - l->lo);
	if (!with_data)
		return;
	pt_stream_init(&s, x->dseed);
	pt_stream_fill(&s, g.data, x->size);
	for (k = 0; k < l->n && pos < x->size; k++) {
		c = l->len[k] < x->size - pos ? l->len[k] : x->size - pos;
		memcpy(g.img + (l->off[k] - l->lo), g.data + pos, c);
		pos += c;
	}
}

static void apply_image(const struct mem *m, const struct layout *l)
{
	memcpy(m->base + l->lo, g.img, l->hi - l->lo);
}

/* Compares the window with the image; describes the first difference. */
static bool verify_image(const struct mem *m, const struct layout *l, const char *what,
			 char *msg, size_t msglen)
{
	const uint8_t *got = m->base + l->lo;
	size_t len = l->hi - l->lo, i, bad = 0, first = 0, at;
	const char *where = "guard";
	int k;

	if (memcmp(got, g.img, len) == 0)
		return true;
	for (i = 0; i < len; i++) {
		if (got[i] != g.img[i]) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	at = l->lo + first;
	for (k = 0; k < l->n; k++) {
		if (at >= l->off[k] && at < l->off[k] + l->len[k]) {
			where = "data";
			break;
		}
		if (k + 1 < l->n && at >= l->off[k] + l->len[k] && at < l->off[k + 1]) {
			where = "gap between SGEs";
			break;
		}
	}
	if (k < l->n && where[0] == 'd')
		snprintf(msg, msglen, "%s: %zu bytes differ; first in SGE %d at byte %zu of it "
			 "(got 0x%02x want 0x%02x)", what, bad, k, at - l->off[k], got[first],
			 g.img[first]);
	else
		snprintf(msg, msglen, "%s: %zu bytes differ; first in the %s at window byte %zu "
			 "(MR offset %zu, got 0x%02x want 0x%02x)", what, bad, where, first, at,
			 got[first], g.img[first]);
	return false;
}

static void sges_of(const struct mem *m, const struct layout *l, struct ibv_sge *sge)
{
	int k;

	for (k = 0; k < l->n; k++) {
		sge[k].addr = (uintptr_t)(m->base + l->off[k]);
		sge[k].length = l->len[k];
		sge[k].lkey = m->mr->lkey;
	}
}

static void post_recv_sges(struct ibv_sge *sge, int n, uint64_t wr_id)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = n }, *bad;

	if (ibv_post_recv(g.qp, &wr, &bad)) {
		errno = errno ? errno : EIO;
		pt_die("ibv_post_recv");
	}
}

static void ctl_send(struct ctl *c)
{
	pt_tcp_send(g.fd, c, sizeof(*c));
}

static void ctl_recv(struct ctl *c, uint32_t type)
{
	if (!pt_tcp_recv(g.fd, c, sizeof(*c))) {
		errno = 0;
		pt_die("the peer closed the connection");
	}
	if (c->type != type) {
		errno = 0;
		pt_die("protocol error: message type %u, expected %u", c->type, type);
	}
}

/* ---- setup ---- */

static void setup(const char *devname, int gid_index)
{
	struct ibv_qp_init_attr qa;
	size_t maplen = MR_LEN + 2 * 4096;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int i;

	pt_open(&g.dev, devname, gid_index);
	g.scq = ibv_create_cq(g.dev.ctx, CQ_DEPTH, NULL, NULL, 0);
	g.rcq = ibv_create_cq(g.dev.ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!g.scq || !g.rcq)
		pt_die("ibv_create_cq %d", CQ_DEPTH);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = g.scq;
	qa.recv_cq = g.rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = SQ_DEPTH;
	qa.cap.max_recv_wr = RQ_DEPTH;
	qa.cap.max_send_sge = MAX_SGE;
	qa.cap.max_recv_sge = MAX_SGE;
	qa.cap.max_inline_data = INLINE_WANT;
	g.qp = ibv_create_qp(g.dev.pd, &qa);
	if (!g.qp)
		pt_die("ibv_create_qp RC (send %d, recv %d WRs, %d SGEs, %d inline)",
		       SQ_DEPTH, RQ_DEPTH, MAX_SGE, INLINE_WANT);
	g.max_inline = qa.cap.max_inline_data;
	/* MR 0 starts on a page, MR 1 three bytes into one */
	for (i = 0; i < 2; i++) {
		uint8_t *map = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (map == MAP_FAILED)
			pt_die("mmap %zu bytes", maplen);
		g.mem[i].base = map + 4096 + (i ? 3 : 0);
		memset(map, 0xee, maplen);
		g.mem[i].mr = ibv_reg_mr(g.dev.pd, g.mem[i].base, MR_LEN, access);
		if (!g.mem[i].mr)
			pt_die("ibv_reg_mr %u bytes at %p", MR_LEN, g.mem[i].base);
	}
	g.img = malloc(MR_LEN);
	g.data = malloc(MAX_MSG + 8);
	if (!g.img || !g.data)
		pt_die("malloc");
}

static void exchange(bool server, const char *host, int port)
{
	struct hello mine, theirs;
	struct pt_conn c = pt_conn_default;
	int err, i;

	memset(&mine, 0, sizeof(mine));
	pt_local_info(&g.dev, g.qp, &mine.qp);
	for (i = 0; i < 2; i++) {
		mine.mr_addr[i] = (uintptr_t)g.mem[i].base;
		mine.mr_rkey[i] = g.mem[i].mr->rkey;
	}
	g.fd = server ? pt_tcp_accept(port) : pt_tcp_connect(host, port, 60);
	pt_tcp_send(g.fd, &mine, sizeof(mine));
	if (!pt_tcp_recv(g.fd, &theirs, sizeof(theirs))) {
		errno = 0;
		pt_die("the peer closed the connection during the exchange");
	}
	c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (g.ack_timeout >= 0)
		c.timeout = g.ack_timeout;
	if (g.retry_cnt >= 0)
		c.retry_cnt = g.retry_cnt;
	err = pt_connect_qp(&g.dev, g.qp, &mine.qp, &theirs.qp, &c);
	if (err) {
		errno = err;
		pt_die("connecting the RC QP to QPN 0x%x", theirs.qp.qpn);
	}
	/* both QPs must be RTR before either side sends */
	pt_tcp_send(g.fd, &mine, sizeof(mine));
	if (!pt_tcp_recv(g.fd, &theirs, sizeof(theirs))) {
		errno = 0;
		pt_die("the peer closed the connection during the exchange");
	}
	if (g.verbose)
		printf("connected: local QPN 0x%x, remote QPN 0x%x, max_inline %u, "
		       "ACK timeout %u, retry count %u\n", g.qp->qp_num, theirs.qp.qpn,
		       g.max_inline, c.timeout, c.retry_cnt);
}

/* ---- server (responder side of every transfer) ---- */

static struct {
	struct xfer x;
	struct layout l;
	struct mem *m;
	bool prepared;
} sv;

static void server_prep(struct ctl *c)
{
	struct ibv_sge sge[MAX_SGE];
	struct xfer *x = &sv.x;
	struct ctl r = { .type = CTL_READY };

	xfer_init(x, c->round, c->t, c->op, c->size);
	sv.m = &g.mem[x->remote_mr];
	switch (x->op) {
	case OP_SEND:
	case OP_SEND_IMM:
		make_layout(&sv.l, x->size + x->recv_extra, x->remote_nsge, x->remote_off);
		build_image(&sv.l, x, false);
		apply_image(sv.m, &sv.l);
		sges_of(sv.m, &sv.l, sge);
		post_recv_sges(sge, sv.l.n, x->t);
		break;
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_READ:
		make_layout(&sv.l, x->size, 1, x->remote_off);
		build_image(&sv.l, x, x->op == OP_READ);
		apply_image(sv.m, &sv.l);
		r.addr = (uintptr_t)(sv.m->base + sv.l.off[0]);
		r.rkey = sv.m->mr->rkey;
		if (x->op == OP_WRITE_IMM) {
			/* consumes a receive WQE but must not write into it */
			memset(g.mem[0].base + SCRATCH_OFF, 0x5c, SCRATCH_LEN);
			sge[0].addr = (uintptr_t)(g.mem[0].base + SCRATCH_OFF + 64);
			sge[0].length = 64;
			sge[0].lkey = g.mem[0].mr->lkey;
			post_recv_sges(sge, 1, x->t);
		}
		break;
	default:
		errno = 0;
		pt_die("protocol error: operation %u", x->op);
	}
	sv.prepared = true;
	ctl_send(&r);
}

static bool check_recv_cqe(const struct xfer *x, enum ibv_wc_opcode want_op, bool want_imm,
			   char *msg, size_t msglen)
{
	struct ibv_wc wc;

	if (!pt_poll(g.rcq, &wc, CQE_TIMEOUT_MS)) {
		snprintf(msg, msglen, "no receive completion within %d ms", CQE_TIMEOUT_MS);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		snprintf(msg, msglen, "receive completion status %s (%d)",
			 ibv_wc_status_str(wc.status), wc.status);
		return false;
	}
	if (wc.wr_id != x->t || wc.opcode != want_op || wc.byte_len != x->size) {
		snprintf(msg, msglen, "receive completion wr_id %" PRIu64 " opcode %d byte_len %u, "
			 "want %u, %d, %u", wc.wr_id, wc.opcode, wc.byte_len, x->t, want_op, x->size);
		return false;
	}
	if (want_imm != !!(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    (want_imm && be32toh(wc.imm_data) != x->imm)) {
		snprintf(msg, msglen, "receive completion immediate: flag %d value 0x%x, want %d 0x%x",
			 !!(wc.wc_flags & IBV_WC_WITH_IMM), be32toh(wc.imm_data), want_imm, x->imm);
		return false;
	}
	return true;
}

static void server_check(struct ctl *c)
{
	struct ctl r = { .type = CTL_RESULT };
	struct xfer *x = &sv.x;
	bool ok = true;
	size_t i;

	if (!sv.prepared) {
		errno = 0;
		pt_die("protocol error: CHECK without PREP (op %u t %u)", c->op, c->t);
	}
	sv.prepared = false;
	if (c->status != IBV_WC_SUCCESS && x->op != OP_READ) {
		/* the requester failed: a receive WQE may still be posted */
		snprintf(r.msg, sizeof(r.msg), "not checked: the requester failed");
		r.status = 1;
		ctl_send(&r);
		return;
	}
	switch (x->op) {
	case OP_SEND:
	case OP_SEND_IMM:
		ok = check_recv_cqe(x, IBV_WC_RECV, x->op == OP_SEND_IMM, r.msg, sizeof(r.msg));
		break;
	case OP_WRITE_IMM:
		ok = check_recv_cqe(x, IBV_WC_RECV_RDMA_WITH_IMM, true, r.msg, sizeof(r.msg));
		for (i = 0; ok && i < SCRATCH_LEN; i++) {
			if (g.mem[0].base[SCRATCH_OFF + i] != 0x5c) {
				snprintf(r.msg, sizeof(r.msg), "RDMA WRITE with immediate wrote into "
					 "its receive WQE's buffer (byte %zu)", i);
				ok = false;
			}
		}
		break;
	default:
		break;
	}
	build_image(&sv.l, x, true);
	if (g.corrupt) {
		/* flip a data byte (even t) or a guard byte (odd t) */
		size_t at = x->t & 1 ? sv.l.lo + x->t % GUARD : sv.l.off[0];

		sv.m->base[at] ^= 0x01;
	}
	if (ok)
		ok = verify_image(sv.m, &sv.l, x->op == OP_READ ? "responder source changed" :
				  "responder memory", r.msg, sizeof(r.msg));
	r.status = ok ? 0 : 1;
	ctl_send(&r);
}

static void server_burst(struct ctl *c, bool check)
{
	struct ctl r = { .type = check ? CTL_RESULT : CTL_READY };
	struct mem *m = &g.mem[0];
	struct pt_stream s;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t i, n = c->size, len;
	uint8_t buf[BURST_MAX];
	uint8_t *slot;

	if (n > BURST_COUNT || n > RQ_DEPTH) {
		errno = 0;
		pt_die("protocol error: burst of %u", n);
	}
	if (!check) {
		memset(m->base + BURST_OFF, 0x3c, n * BURST_SLOT + BURST_SLOT);
		for (i = 0; i < n; i++) {
			sge.addr = (uintptr_t)(m->base + BURST_OFF + i * BURST_SLOT + i % 7);
			sge.length = BURST_MAX;
			sge.lkey = m->mr->lkey;
			post_recv_sges(&sge, 1, 1000000 + i);
		}
		ctl_send(&r);
		return;
	}
	for (i = 0; i < n && r.status == 0; i++) {
		len = 1 + (i * 37) % BURST_MAX;
		if (!pt_poll(g.rcq, &wc, CQE_TIMEOUT_MS)) {
			snprintf(r.msg, sizeof(r.msg), "burst: no receive completion %u within %d ms",
				 i, CQE_TIMEOUT_MS);
			r.status = 1;
			break;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 1000000 + i || wc.byte_len != len) {
			snprintf(r.msg, sizeof(r.msg), "burst: receive %u: status %s wr_id %" PRIu64
				 " byte_len %u, want success, %u, %u", i, ibv_wc_status_str(wc.status),
				 wc.wr_id, wc.byte_len, 1000000 + i, len);
			r.status = 1;
			break;
		}
		pt_stream_init(&s, pt_mix(c->round, 0xb0000000ull + i));
		pt_stream_fill(&s, buf, len);
		slot = m->base + BURST_OFF + i * BURST_SLOT + i % 7;
		if (memcmp(slot, buf, len) != 0 || (len < BURST_MAX && slot[len] != 0x3c) ||
		    (i % 7 && slot[-1] != 0x3c)) {
			snprintf(r.msg, sizeof(r.msg), "burst: message %u (%u bytes) differs or "
				 "spilled over its buffer", i, len);
			r.status = 1;
		}
	}
	ctl_send(&r);
}

static int run_server(void)
{
	struct ctl c;

	while (pt_tcp_recv(g.fd, &c, sizeof(c))) {
		switch (c.type) {
		case CTL_PREP:
			if (c.op == OP_BURST)
				server_burst(&c, false);
			else
				server_prep(&c);
			break;
		case CTL_CHECK:
			if (c.op == OP_BURST)
				server_burst(&c, true);
			else
				server_check(&c);
			break;
		case CTL_BYE:
			printf("pvo-integrity server: done (%s)\n", c.msg);
			return c.status;
		default:
			errno = 0;
			pt_die("protocol error: message type %u", c.type);
		}
	}
	errno = 0;
	pt_die("the client went away without saying goodbye");
}

/* ---- client (requester side of every transfer) ---- */

static struct {
	uint64_t transfers, bytes, failures;
	uint64_t op_count[OP_COUNT], op_fail[OP_COUNT];
	bool qp_broken;
} st;

static void report_fail(const struct xfer *x, const struct layout *l, const char *what)
{
	printf("FAIL round=%u t=%u op=%s size=%u sge=%d->%d off=%zu->%zu mr=%d->%d: %s\n",
	       x->round, x->t, op_names[x->op], x->size, l ? l->n : 0, x->remote_nsge,
	       x->local_off, x->remote_off, x->local_mr, x->remote_mr, what);
}

static void client_transfer(uint32_t round, uint32_t t, uint32_t op, uint32_t size)
{
	static const enum ibv_wr_opcode wr_op[OP_COUNT] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ
	};
	static const enum ibv_wc_opcode wc_op[OP_COUNT] = {
		IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ
	};
	struct ctl c = { .type = CTL_PREP, .op = op, .round = round, .t = t, .size = size };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge[MAX_SGE];
	struct layout l;
	struct xfer x;
	struct ibv_wc wc;
	char msg[300];
	bool ok = true;
	int err;

	xfer_init(&x, round, t, op, size);
	ctl_send(&c);
	ctl_recv(&c, CTL_READY);

	make_layout(&l, size, x.local_nsge, x.local_off);
	build_image(&l, &x, op != OP_READ);
	apply_image(&g.mem[x.local_mr], &l);
	sges_of(&g.mem[x.local_mr], &l, sge);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = t;
	wr.sg_list = sge;
	wr.num_sge = l.n;
	wr.opcode = wr_op[op];
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op != OP_READ && x.try_inline && size <= g.max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	if (op == OP_SEND_IMM || op == OP_WRITE_IMM)
		wr.imm_data = htobe32(x.imm);
	if (op >= OP_WRITE) {
		wr.wr.rdma.remote_addr = c.addr;
		wr.wr.rdma.rkey = c.rkey;
	}
	err = ibv_post_send(g.qp, &wr, &bad);
	c.type = CTL_CHECK;
	c.op = op;
	c.t = t;
	if (err) {
		snprintf(msg, sizeof(msg), "ibv_post_send: %s", strerror(err));
		ok = false;
		st.qp_broken = true;
		c.status = -1;
	} else if (!pt_poll(g.scq, &wc, CQE_TIMEOUT_MS)) {
		snprintf(msg, sizeof(msg), "no send completion within %d ms", CQE_TIMEOUT_MS);
		ok = false;
		st.qp_broken = true;
		c.status = -1;
	} else {
		c.status = wc.status;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != t || wc.opcode != wc_op[op]) {
			snprintf(msg, sizeof(msg), "send completion: status %s (%d), wr_id %" PRIu64
				 ", opcode %d (want %d)", ibv_wc_status_str(wc.status), wc.status,
				 wc.wr_id, wc.opcode, wc_op[op]);
			ok = false;
			if (wc.status != IBV_WC_SUCCESS)
				st.qp_broken = true;
		}
	}
	/* READ: the data arrived here; otherwise the source is unchanged */
	build_image(&l, &x, true);
	if (ok && !verify_image(&g.mem[x.local_mr], &l, op == OP_READ ? "requester memory" :
				"requester source changed", msg, sizeof(msg)))
		ok = false;
	if (!ok)
		report_fail(&x, &l, msg);

	ctl_send(&c);
	ctl_recv(&c, CTL_RESULT);
	if (c.status) {
		c.msg[sizeof(c.msg) - 1] = 0;
		if (ok)
			report_fail(&x, &l, c.msg);
		ok = false;
	}
	st.transfers++;
	st.op_count[op]++;
	st.bytes += size;
	if (!ok) {
		st.failures++;
		st.op_fail[op]++;
	} else if (g.verbose) {
		printf("ok round=%u t=%u op=%s size=%u sge=%d->%d off=%zu->%zu mr=%d->%d%s\n",
		       round, t, op_names[op], size, l.n, x.remote_nsge, x.local_off, x.remote_off,
		       x.local_mr, x.remote_mr, wr.send_flags & IBV_SEND_INLINE ? " inline" : "");
	}
}

/* BURST_COUNT SENDs of 1..128 bytes with up to SQ_DEPTH in flight. */
static void client_burst(uint32_t round)
{
	struct ctl c = { .type = CTL_PREP, .op = OP_BURST, .round = round, .size = BURST_COUNT };
	struct mem *m = &g.mem[0];
	uint32_t posted = 0, done = 0, len;
	struct ibv_send_wr wr, *bad;
	struct pt_stream s;
	struct ibv_sge sge;
	struct ibv_wc wc;
	bool ok = true;
	uint8_t *src;
	int err;

	ctl_send(&c);
	ctl_recv(&c, CTL_READY);
	while (done < BURST_COUNT && ok) {
		while (posted < BURST_COUNT && posted - done < SQ_DEPTH) {
			len = 1 + (posted * 37) % BURST_MAX;
			src = m->base + BURST_OFF + posted * BURST_SLOT;
			pt_stream_init(&s, pt_mix(round, 0xb0000000ull + posted));
			pt_stream_fill(&s, src, len);
			sge.addr = (uintptr_t)src;
			sge.length = len;
			sge.lkey = m->mr->lkey;
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			err = ibv_post_send(g.qp, &wr, &bad);
			if (err) {
				printf("FAIL burst: ibv_post_send of message %u with %u in flight: %s\n",
				       posted, posted - done, strerror(err));
				ok = false;
				break;
			}
			posted++;
		}
		if (!ok)
			break;
		if (!pt_poll(g.scq, &wc, CQE_TIMEOUT_MS)) {
			printf("FAIL burst: no send completion %u within %d ms\n", done, CQE_TIMEOUT_MS);
			ok = false;
		} else if (wc.status != IBV_WC_SUCCESS || wc.wr_id != done) {
			printf("FAIL burst: send completion %u: status %s, wr_id %" PRIu64 "\n", done,
			       ibv_wc_status_str(wc.status), wc.wr_id);
			ok = false;
		}
		done++;
	}
	if (!ok)
		st.qp_broken = true;
	c.type = CTL_CHECK;
	c.op = OP_BURST;
	c.round = round;
	c.size = BURST_COUNT;
	c.status = ok ? 0 : -1;
	ctl_send(&c);
	ctl_recv(&c, CTL_RESULT);
	if (c.status) {
		c.msg[sizeof(c.msg) - 1] = 0;
		printf("FAIL burst: %s\n", c.msg);
		ok = false;
	}
	st.transfers += BURST_COUNT;
	if (!ok)
		st.failures++;
	printf("BURST: %d SENDs, up to %d in flight: %s\n", BURST_COUNT, SQ_DEPTH,
	       ok ? "ok" : "FAILED");
}

static int size_list(uint32_t max, uint32_t *out)
{
	static const uint32_t odd[] = { 3, 5, 63, 65, 4095, 4097, 8191, 65535, 65537,
					131073, 1048575 };
	uint32_t v;
	int n = 0;
	size_t i;

	for (v = 1; v <= max && v <= MAX_MSG; v <<= 1)
		out[n++] = v;
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		if (odd[i] <= max)
			out[n++] = odd[i];
	return n;
}

static int run_client(uint32_t rounds, uint32_t min_seconds, uint32_t max_size)
{
	struct ctl c = { .type = CTL_BYE };
	uint32_t sizes[64], t = 0, r;
	uint64_t start = pt_now_ms();
	int nsizes = size_list(max_size, sizes), i, op;

	for (r = 0; (r < rounds || pt_now_ms() - start < min_seconds * 1000ull) &&
		    !st.qp_broken;
	     r++) {
		for (op = 0; op < OP_COUNT && !st.qp_broken; op++)
			for (i = 0; i < nsizes && !st.qp_broken; i++)
				client_transfer(r, t++, op, sizes[i]);
		if (!st.qp_broken)
			client_burst(r);
	}
	if (st.qp_broken)
		printf("FAIL the QP broke (a completion with an error or none at all): "
		       "stopped early\n");
	for (op = 0; op < OP_COUNT; op++)
		printf("%s: %" PRIu64 " transfers, %" PRIu64 " failed\n", op_names[op],
		       st.op_count[op], st.op_fail[op]);
	printf("pvo-integrity: transfers=%" PRIu64 " bytes=%" PRIu64 " failures=%" PRIu64
	       " seconds=%.1f\n", st.transfers, st.bytes, st.failures,
	       (pt_now_ms() - start) / 1000.0);
	c.status = st.failures || st.qp_broken ? 1 : 0;
	snprintf(c.msg, sizeof(c.msg), "%" PRIu64 " transfers, %" PRIu64 " failures",
		 st.transfers, st.failures);
	ctl_send(&c);
	return c.status;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pvo-integrity -d DEV -g GID_INDEX [-p PORT] [-n ROUNDS] [-m SECONDS] "
		"[-s MAX_SIZE] [-v] [-x] [-t ACK_TIMEOUT] [-r RETRY_CNT] [SERVER_IP]\n"
		"  without SERVER_IP: the server (responder) side\n"
		"  -m  (client) more rounds until SECONDS have passed\n"
		"  -t  local ACK timeout of the RC QP, 0..31 (4.096 us * 2^N; default 14)\n"
		"  -r  retry count of the RC QP, 0..7 (default 7)\n"
		"  -x  (server) self-test of the checker: flip one byte of every transfer's\n"
		"      window before checking it, so that every transfer must fail\n");
	exit(2);
}

/* pvo-integrity's own options; ctx: the client's limits. */
struct client_opts {
	uint32_t rounds, min_seconds, max_size;
};

static bool own_opt(int opt, const char *arg, void *ctx)
{
	struct client_opts *c = ctx;
	long v;

	switch (opt) {
	case 'n':
		if (!pt_parse_num(arg, 0, UINT32_MAX, &v))
			return false;
		c->rounds = v;
		return true;
	case 'm':
		if (!pt_parse_num(arg, 0, 86400, &v))
			return false;
		c->min_seconds = v;
		return true;
	case 's':
		if (!pt_parse_num(arg, 1, MAX_MSG, &v))
			return false;
		c->max_size = v;
		return true;
	case 'v':
		g.verbose = true;
		return true;
	case 'x':
		g.corrupt = true;
		return true;
	case 't':
		if (!pt_parse_num(arg, 0, 31, &v))
			return false;
		g.ack_timeout = v;
		return true;
	case 'r':
		if (!pt_parse_num(arg, 0, 7, &v))
			return false;
		g.retry_cnt = v;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct client_opts c = { .rounds = 1, .max_size = MAX_MSG };
	struct pt_args a = { .port = 18700 };
	int ret;

	g.ack_timeout = -1;
	g.retry_cnt = -1;
	pt_parse_args(argc, argv, "n:m:s:vxt:r:", own_opt, &c, &a, usage);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ pt_now_ms());
	setup(a.dev, a.gid_index);
	exchange(!a.peer, a.peer, a.port);
	ret = !a.peer ? run_server()
		      : run_client(c.rounds, c.min_seconds, c.max_size);
	return ret ? 1 : 0;
}
