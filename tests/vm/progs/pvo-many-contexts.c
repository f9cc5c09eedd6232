// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-many-contexts: many user verbs contexts of one device open at once,
 * each with objects of its own, each moving data.
 *
 *   pvo-many-contexts -d DEV -g GID_INDEX -n CONTEXTS [-p PROCS] [-r ROUNDS]
 *
 * PROCS processes (default 1) share CONTEXTS between them. In each of
 * ROUNDS rounds (default 2) a process opens its share with one
 * ibv_open_device each and keeps them all open; every context gets a PD, a
 * CQ, an MR of MR_LEN bytes and an RC QP. Contexts 2k and 2k + 1 of a
 * process connect their QPs (INIT, RTR, RTS; the same GID), and with an odd
 * share the last context connects its QP to itself (and plays both sides). Per pair, 2k SENDs a
 * message into a receive of 2k + 1 and 2k + 1 RDMA WRITEs a message into
 * 2k's MR; every message carries a header and a pattern derived from
 * (process, round, pair, direction). All WRs of all pairs are posted
 * before any completion is polled. Every completion is checked (status,
 * opcode, length, QP, wr_id naming the context), then every byte: the
 * message, the guard bytes behind it and the unchanged source. Only when
 * all contexts of the process have verified their data does it close
 * everything (QP, MR, CQ, PD, context) and count.
 *
 * Once per process, context 0's uverbs file shows that its mmap offset
 * space holds only the context's own pages: a page at any offset other
 * than the driver's (PVO_MMAP_DOORBELL, PVO_MMAP_DB_RING) is refused with
 * EINVAL. On pvrdma_overlay the doorbell record page maps, as a control.
 *
 * RLIMIT_NOFILE is raised to what the share needs (a context holds two
 * descriptors: the uverbs command fd and its async event fd).
 *
 * Output: a line per round and process, "FAIL context I (proc P, round R):
 * VERB: ERROR" on the first error of a process (I counts across all
 * processes), per process
 *   pvo-many-contexts: proc P: contexts=C rounds=R seconds=S ok
 * and from the parent the time taken and
 *   pvo-many-contexts: procs=P contexts=N rounds=R ok
 * Exit status 0 only if every process succeeded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/pvrdma_overlay-abi.h>

#include "pvo-test-util.h"

/* The MR: four regions. 2k sends from SEND_SRC into 2k+1's SEND_DST;
 * 2k+1 writes from WRITE_SRC into 2k's WRITE_DST. */
#define REGION		2048u
#define MR_LEN		(4 * REGION)
#define SEND_SRC	(0 * REGION)
#define SEND_DST	(1 * REGION)
#define WRITE_SRC	(2 * REGION)
#define WRITE_DST	(3 * REGION)
#define MSG_LEN		1999u	/* odd: the device must stop exactly there */
#define GUARD_BYTE	0xee
#define CQ_DEPTH	8
#define CQE_TIMEOUT_MS	120000
#define MAGIC		0x21434d50u	/* "PMC!" */
#define FDS_PER_CTX	2
#define FDS_SPARE	64

/* wr_id = context index << 2 | kind: a completion names its context */
enum { WR_SEND = 1, WR_RECV = 2, WR_WRITE = 3 };
static const char *const wr_names[] = { "?", "SEND", "RECV", "RDMA WRITE" };

/* What the first bytes of every message say. */
struct msg_hdr {
	uint32_t magic;
	uint32_t proc;
	uint32_t round;
	uint32_t pair;
	uint32_t dir;		/* 0: the SEND, 1: the RDMA WRITE */
};

struct mc_ctx {
	struct pt_dev dev;	/* ctx, pd, port attributes, GID */
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct pt_qp_info info;
	int peer;		/* index (in the process) of the other side */
	unsigned int expect;	/* completions still due, bit per WR_* */
};

static struct {
	int procs, contexts, rounds;
	const char *dev;
	int gid_index;
} opt = { .procs = 1, .rounds = 2, .gid_index = -1 };

/* the running process */
static struct {
	int proc;
	int first;		/* global index of its context 0 */
	int count;
	int round;
	long page;
	struct ibv_device *ibdev;
	struct pt_dev tmpl;	/* port and GID, queried once */
	bool have_tmpl;
	struct mc_ctx *c;
	uint8_t *want;		/* scratch: a message as it must be */
} p;

static void usage(void)
{
	fprintf(stderr, "usage: pvo-many-contexts -d DEV -g GID_INDEX -n CONTEXTS "
		"[-p PROCS] [-r ROUNDS]\n");
	exit(2);
}

/* "FAIL context I (proc P, round R): what[: strerror(err)]", exit 1 */
static void __attribute__((format(printf, 3, 4), noreturn))
fail(int i, int err, const char *fmt, ...)
{
	char line[1024];
	size_t n;
	va_list ap;

	/* one write: the other processes print too */
	n = snprintf(line, sizeof(line), "FAIL context %d (proc %d, round %d): ", p.first + i,
		     p.proc, p.round);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (err)
		snprintf(line + n, sizeof(line) - n, ": %s", strerror(err));
	fflush(stdout);
	fprintf(stderr, "%s\n", line);
	exit(1);
}

/* errno, or EIO when a verb failed without setting it */
static int err_or_eio(void)
{
	return errno ? errno : EIO;
}

static void build_msg(uint8_t *dst, uint32_t pair, uint32_t dir)
{
	struct msg_hdr h = {
		.magic = MAGIC, .proc = p.proc, .round = p.round, .pair = pair, .dir = dir,
	};
	struct pt_stream s;

	memcpy(dst, &h, sizeof(h));
	pt_stream_init(&s, pt_mix(pt_mix(p.proc, p.round), (uint64_t)pair << 1 | dir));
	pt_stream_fill(&s, dst + sizeof(h), MSG_LEN - sizeof(h));
}

static int open_files(void)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

/* ---- one context ---- */

static void ctx_open(int i)
{
	struct mc_ctx *c = &p.c[i];
	struct ibv_context *ctx;
	struct ibv_qp_init_attr qa;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	memset(c, 0, sizeof(*c));
	errno = 0;
	ctx = ibv_open_device(p.ibdev);
	if (!ctx)
		fail(i, err_or_eio(), "ibv_open_device %s", ibv_get_device_name(p.ibdev));
	if (!p.have_tmpl) {
		p.tmpl.port = 1;
		p.tmpl.gid_index = opt.gid_index;
		if (ibv_query_port(ctx, p.tmpl.port, &p.tmpl.port_attr))
			fail(i, err_or_eio(), "ibv_query_port %u", p.tmpl.port);
		if (ibv_query_gid(ctx, p.tmpl.port, opt.gid_index, &p.tmpl.gid))
			fail(i, err_or_eio(), "ibv_query_gid index %d", opt.gid_index);
		p.have_tmpl = true;
	}
	c->dev = p.tmpl;
	c->dev.ctx = ctx;
	errno = 0;
	c->dev.pd = ibv_alloc_pd(ctx);
	if (!c->dev.pd)
		fail(i, err_or_eio(), "ibv_alloc_pd");
	errno = 0;
	c->cq = ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!c->cq)
		fail(i, err_or_eio(), "ibv_create_cq %d", CQ_DEPTH);
	c->buf = aligned_alloc(p.page, MR_LEN);
	if (!c->buf)
		fail(i, ENOMEM, "aligned_alloc %u", MR_LEN);
	memset(c->buf, GUARD_BYTE, MR_LEN);
	errno = 0;
	c->mr = ibv_reg_mr(c->dev.pd, c->buf, MR_LEN, access);
	if (!c->mr)
		fail(i, err_or_eio(), "ibv_reg_mr %u bytes", MR_LEN);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2;
	qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	errno = 0;
	c->qp = ibv_create_qp(c->dev.pd, &qa);
	if (!c->qp)
		fail(i, err_or_eio(), "ibv_create_qp RC");
	pt_local_info(&c->dev, c->qp, &c->info);
	c->info.addr = (uintptr_t)c->buf;
	c->info.rkey = c->mr->rkey;
}

static void ctx_close(int i)
{
	struct mc_ctx *c = &p.c[i];
	int err;

	err = ibv_destroy_qp(c->qp);
	if (err)
		fail(i, err, "ibv_destroy_qp");
	err = ibv_dereg_mr(c->mr);
	if (err)
		fail(i, err, "ibv_dereg_mr");
	err = ibv_destroy_cq(c->cq);
	if (err)
		fail(i, err, "ibv_destroy_cq");
	err = ibv_dealloc_pd(c->dev.pd);
	if (err)
		fail(i, err, "ibv_dealloc_pd");
	err = ibv_close_device(c->dev.ctx);
	if (err)
		fail(i, err, "ibv_close_device");
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

/*
 * The offsets of a context's uverbs file are the context's pages and
 * nothing else: any other page offset must be refused with EINVAL.
 */
static void mmap_check(int i)
{
	static const off_t others[] = { 2, 3, 64, 4096 };
	int fd = p.c[i].dev.ctx->cmd_fd;
	char list[64] = "";
	size_t k;
	void *m;

	for (k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
		errno = 0;
		m = mmap(NULL, p.page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 others[k] * p.page);
		if (m != MAP_FAILED) {
			munmap(m, p.page);
			fail(i, 0, "mmap of the context's uverbs fd at page offset %jd: mapped, "
			     "expected EINVAL", (intmax_t)others[k]);
		}
		if (errno != EINVAL)
			fail(i, errno, "mmap of the context's uverbs fd at page offset %jd: "
			     "expected EINVAL, got", (intmax_t)others[k]);
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%jd",
			 k ? ", " : "", (intmax_t)others[k]);
	}
	printf("proc %d: mmap of context %d's uverbs fd at page offsets %s: EINVAL each: ok\n",
	       p.proc, p.first + i, list);
	/* the control: a page the driver does define maps (our device only) */
	if (strncmp(ibv_get_device_name(p.ibdev), "pvrdma_overlay", 14) == 0) {
		errno = 0;
		m = mmap(NULL, p.page, PROT_READ, MAP_SHARED, fd, PVO_MMAP_DB_RING * p.page);
		if (m == MAP_FAILED)
			fail(i, errno, "mmap of the context's doorbell record page "
			     "(page offset %d, the control)", PVO_MMAP_DB_RING);
		munmap(m, p.page);
		printf("proc %d: control: the same mmap at page offset %d (PVO_MMAP_DB_RING) "
		       "maps: ok\n", p.proc, PVO_MMAP_DB_RING);
	}
}

/* ---- a round ---- */

static void connect_pair(int a, int b)
{
	struct pt_conn conn = pt_conn_default;
	struct mc_ctx *ca = &p.c[a], *cb = &p.c[b];
	int err, st;

	conn.access = IBV_ACCESS_REMOTE_WRITE;
	ca->peer = b;
	cb->peer = a;
	err = pt_connect_qp(&ca->dev, ca->qp, &ca->info, &cb->info, &conn);
	if (!err && a != b)
		err = pt_connect_qp(&cb->dev, cb->qp, &cb->info, &ca->info, &conn);
	if (err) {
		int who = pt_qp_state(ca->qp) == IBV_QPS_RTS ? b : a;

		st = pt_qp_state(p.c[who].qp);
		fail(who, err, "ibv_modify_qp to INIT/RTR/RTS toward context %d's QPN 0x%x "
		     "(stopped in %s)", p.first + p.c[who].peer, p.c[p.c[who].peer].qp->qp_num,
		     st < 0 ? "?" : pt_qp_state_str(st));
	}
}

static void post(int i, int kind, uint32_t pair)
{
	struct mc_ctx *c = &p.c[i], *peer = &p.c[c->peer];
	struct ibv_sge sge = { .length = MSG_LEN, .lkey = c->mr->lkey };
	struct ibv_send_wr swr, *bad_s;
	struct ibv_recv_wr rwr, *bad_r;
	int err;

	if (kind == WR_RECV) {
		sge.addr = (uintptr_t)(c->buf + SEND_DST);
		sge.length = REGION;	/* room to spare: the guard must stay */
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = (uint64_t)i << 2 | WR_RECV;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		errno = 0;
		err = ibv_post_recv(c->qp, &rwr, &bad_r);
		if (err)
			fail(i, err, "ibv_post_recv");
		c->expect |= 1u << WR_RECV;
		return;
	}
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = (uint64_t)i << 2 | kind;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.send_flags = IBV_SEND_SIGNALED;
	if (kind == WR_SEND) {
		build_msg(c->buf + SEND_SRC, pair, 0);
		sge.addr = (uintptr_t)(c->buf + SEND_SRC);
		swr.opcode = IBV_WR_SEND;
	} else {
		build_msg(c->buf + WRITE_SRC, pair, 1);
		sge.addr = (uintptr_t)(c->buf + WRITE_SRC);
		swr.opcode = IBV_WR_RDMA_WRITE;
		swr.wr.rdma.remote_addr = (uintptr_t)(peer->buf + WRITE_DST);
		swr.wr.rdma.rkey = peer->mr->rkey;
	}
	err = ibv_post_send(c->qp, &swr, &bad_s);
	if (err)
		fail(i, err, "ibv_post_send %s", wr_names[kind]);
	c->expect |= 1u << kind;
}

/* One completion of cq within CQE_TIMEOUT_MS, yielding the CPU between
 * short bursts of polling: the other processes have contexts to open. */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t deadline = pt_now_ms() + CQE_TIMEOUT_MS;

	while (!pt_poll(cq, wc, 0)) {
		if (pt_now_ms() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

static void reap(int i)
{
	static const enum ibv_wc_opcode want_op[] = {
		[WR_SEND] = IBV_WC_SEND, [WR_RECV] = IBV_WC_RECV, [WR_WRITE] = IBV_WC_RDMA_WRITE,
	};
	struct mc_ctx *c = &p.c[i];
	struct ibv_wc wc;
	int kind;

	while (c->expect) {
		if (!poll_one(c->cq, &wc))
			fail(i, 0, "no completion within %d s (still due:%s%s%s)",
			     CQE_TIMEOUT_MS / 1000,
			     c->expect & (1u << WR_SEND) ? " SEND" : "",
			     c->expect & (1u << WR_RECV) ? " RECV" : "",
			     c->expect & (1u << WR_WRITE) ? " RDMA WRITE" : "");
		kind = wc.wr_id & 3;
		if ((int)(wc.wr_id >> 2) != i || !(c->expect & (1u << kind)))
			fail(i, 0, "unexpected completion: wr_id 0x%" PRIx64 " (context %d, %s), "
			     "status %s", wc.wr_id, p.first + (int)(wc.wr_id >> 2),
			     wr_names[kind], ibv_wc_status_str(wc.status));
		if (wc.status != IBV_WC_SUCCESS)
			fail(i, 0, "%s completed with status %d (%s), vendor error 0x%x",
			     wr_names[kind], wc.status, ibv_wc_status_str(wc.status),
			     wc.vendor_err);
		if (wc.opcode != want_op[kind] || wc.qp_num != c->qp->qp_num)
			fail(i, 0, "%s completion: opcode %d (want %d), QPN 0x%x (want 0x%x)",
			     wr_names[kind], wc.opcode, want_op[kind], wc.qp_num, c->qp->qp_num);
		if (kind == WR_RECV && wc.byte_len != MSG_LEN)
			fail(i, 0, "RECV completion: byte_len %u, want %u", wc.byte_len, MSG_LEN);
		c->expect &= ~(1u << kind);
	}
}

/* The region at off of context i holds message (pair, dir), then guard
 * bytes to the region's end. */
static void verify_region(int i, size_t off, uint32_t pair, uint32_t dir, const char *what)
{
	const uint8_t *got = p.c[i].buf + off;
	struct msg_hdr h;
	size_t k, bad = 0, first = 0;
	char whose[96] = "";

	build_msg(p.want, pair, dir);
	memset(p.want + MSG_LEN, GUARD_BYTE, REGION - MSG_LEN);
	if (memcmp(got, p.want, REGION) == 0)
		return;
	for (k = 0; k < REGION; k++) {
		if (got[k] != p.want[k]) {
			if (!bad)
				first = k;
			bad++;
		}
	}
	/* whose message is it, if not this one? */
	memcpy(&h, got, sizeof(h));
	if (h.magic != MAGIC)
		snprintf(whose, sizeof(whose), "; no message header at its start");
	else if (memcmp(got, p.want, sizeof(h)))
		snprintf(whose, sizeof(whose), "; its header is that of proc %u round %u pair %u "
			 "dir %u", h.proc, h.round, h.pair, h.dir);
	fail(i, 0, "%s: %zu of %u bytes differ, first at byte %zu (%s; got 0x%02x, want "
	     "0x%02x)%s", what, bad, REGION, first, first < MSG_LEN ? "message" : "guard",
	     got[first], p.want[first], whose);
}

static void round_run(int r)
{
	uint64_t t0, t1, t2, t3;
	int i, pairs = (p.count + 1) / 2, fds = -1;
	char what[96];

	p.round = r;
	t0 = pt_now_ms();
	for (i = 0; i < p.count; i++)
		ctx_open(i);
	if (r == 0) {
		fds = open_files();
		mmap_check(0);
	}
	t1 = pt_now_ms();
	for (i = 0; i < p.count; i += 2)
		connect_pair(i, i + 1 < p.count ? i + 1 : i);
	/* every receive first, then every SEND and RDMA WRITE, then poll */
	for (i = 0; i < p.count; i += 2)
		post(i + 1 < p.count ? i + 1 : i, WR_RECV, i / 2);
	for (i = 0; i < p.count; i += 2) {
		int b = i + 1 < p.count ? i + 1 : i;

		post(i, WR_SEND, i / 2);
		post(b, WR_WRITE, i / 2);
	}
	for (i = 0; i < p.count; i++)
		reap(i);
	for (i = 0; i < p.count; i += 2) {
		int a = i, b = i + 1 < p.count ? i + 1 : i;

		snprintf(what, sizeof(what), "SEND from context %d", p.first + a);
		verify_region(b, SEND_DST, i / 2, 0, what);
		snprintf(what, sizeof(what), "RDMA WRITE from context %d", p.first + b);
		verify_region(a, WRITE_DST, i / 2, 1, what);
		verify_region(a, SEND_SRC, i / 2, 0, "the SEND's source (changed)");
		verify_region(b, WRITE_SRC, i / 2, 1, "the RDMA WRITE's source (changed)");
	}
	t2 = pt_now_ms();
	for (i = 0; i < p.count; i++)
		ctx_close(i);
	t3 = pt_now_ms();
	printf("proc %d round %d: contexts %d..%d open at once, %d pairs verified, all closed "
	       "(open %.1f s, connect + data %.1f s, close %.1f s)", p.proc, r, p.first,
	       p.first + p.count - 1, pairs, (t1 - t0) / 1000.0, (t2 - t1) / 1000.0,
	       (t3 - t2) / 1000.0);
	if (fds >= 0)
		printf("; %d file descriptors with all open", fds);
	putchar('\n');
}

static int child(int proc, int first, int count)
{
	struct ibv_device **list;
	uint64_t t0 = pt_now_ms();
	int i, n, r;

	p.proc = proc;
	p.first = first;
	p.count = count;
	p.page = sysconf(_SC_PAGESIZE);
	p.c = calloc(count, sizeof(*p.c));
	p.want = malloc(REGION);
	if (!p.c || !p.want)
		pt_die("proc %d: allocating the table of %d contexts", proc, count);
	list = ibv_get_device_list(&n);
	if (!list || n == 0)
		pt_die("proc %d: no RDMA device (is the driver loaded?)", proc);
	for (i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), opt.dev) == 0)
			break;
	if (i == n) {
		errno = 0;
		pt_die("proc %d: no RDMA device named %s", proc, opt.dev);
	}
	p.ibdev = list[i];
	for (r = 0; r < opt.rounds; r++)
		round_run(r);
	ibv_free_device_list(list);
	printf("pvo-many-contexts: proc %d: contexts=%d rounds=%d seconds=%.1f ok\n",
	       proc, count, opt.rounds, (pt_now_ms() - t0) / 1000.0);
	return 0;
}

/* Enough descriptors for the largest share, inherited by every child. */
static void raise_nofile(int share)
{
	rlim_t need = (rlim_t)share * FDS_PER_CTX + FDS_SPARE;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		pt_die("getrlimit RLIMIT_NOFILE");
	if (rl.rlim_cur >= need)
		return;
	if (rl.rlim_max < need)
		rl.rlim_max = need;	/* needs CAP_SYS_RESOURCE */
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		getrlimit(RLIMIT_NOFILE, &rl);
		pt_die("RLIMIT_NOFILE (soft %ju, hard %ju) is too low for %d contexts per "
		       "process (%ju descriptors) and cannot be raised; use more processes (-p)",
		       (uintmax_t)rl.rlim_cur, (uintmax_t)rl.rlim_max, share, (uintmax_t)need);
	}
}

static int num_arg(const char *what, const char *s, long min, long max)
{
	long v;

	if (!pt_parse_num(s, min, max, &v)) {
		fprintf(stderr, "pvo-many-contexts: %s '%s': expected %ld..%ld\n", what, s,
			min, max);
		usage();
	}
	return v;
}

int main(int argc, char **argv)
{
	int c, k, status, failed = 0, first = 0;
	pid_t *pids;
	uint64_t t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:g:n:p:r:")) != -1) {
		switch (c) {
		case 'd':
			opt.dev = optarg;
			break;
		case 'g':
			opt.gid_index = num_arg("-g", optarg, 0, INT_MAX);
			break;
		case 'n':
			opt.contexts = num_arg("-n", optarg, 1, 1 << 20);
			break;
		case 'p':
			opt.procs = num_arg("-p", optarg, 1, 1024);
			break;
		case 'r':
			opt.rounds = num_arg("-r", optarg, 1, 1 << 20);
			break;
		default:
			usage();
		}
	}
	if (optind != argc) {
		fprintf(stderr, "pvo-many-contexts: unexpected argument '%s'\n", argv[optind]);
		usage();
	}
	if (!opt.dev || opt.gid_index < 0 || !opt.contexts)
		usage();
	if (opt.procs > opt.contexts) {
		fprintf(stderr, "pvo-many-contexts: -p %d: more processes than contexts (%d)\n",
			opt.procs, opt.contexts);
		usage();
	}
	raise_nofile((opt.contexts + opt.procs - 1) / opt.procs);
	pids = calloc(opt.procs, sizeof(*pids));
	if (!pids)
		pt_die("calloc");
	t0 = pt_now_ms();
	/* process k gets contexts [first, first + share): the first
	 * contexts % procs ones one more */
	for (k = 0; k < opt.procs; k++) {
		int share = opt.contexts / opt.procs + (k < opt.contexts % opt.procs);

		fflush(stdout);
		pids[k] = fork();
		if (pids[k] < 0)
			pt_die("fork");
		if (pids[k] == 0)
			exit(child(k, first, share));
		first += share;
	}
	for (k = 0; k < opt.procs; k++) {
		if (waitpid(pids[k], &status, 0) < 0)
			pt_die("waitpid");
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		failed++;
		if (WIFSIGNALED(status))
			printf("pvo-many-contexts: proc %d (pid %d) killed by signal %d (%s)\n", k,
			       pids[k], WTERMSIG(status), strsignal(WTERMSIG(status)));
		else
			printf("pvo-many-contexts: proc %d (pid %d) exited with status %d\n", k,
			       pids[k], WEXITSTATUS(status));
	}
	printf("pvo-many-contexts: %d processes done in %.1f s, %d failed\n", opt.procs,
	       (pt_now_ms() - t0) / 1000.0, failed);
	printf("pvo-many-contexts: procs=%d contexts=%d rounds=%d %s\n", opt.procs,
	       opt.contexts, opt.rounds, failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
