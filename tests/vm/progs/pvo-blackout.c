// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-blackout: the longest pause of a stream of RDMA WRITEs, for the
 * migration benchmark (bench/migration.py).
 *
 *   server:  pvo-blackout -d DEV -g GID_INDEX [-p PORT]
 *   client:  pvo-blackout -d DEV -g GID_INDEX [-p PORT] [-D SECONDS]
 *                         [-s SIZE] [-w WINDOW] [-a AREA] SERVER_IP
 *
 * The client (the writer) posts RDMA WRITEs of SIZE bytes (default 64 KiB)
 * back to back into the server's AREA (default 16 messages), in turn, with
 * WINDOW (default 8) in flight, every one signalled, for SECONDS (default
 * 10) or until SIGINT or SIGTERM. It timestamps every completion with
 * CLOCK_MONOTONIC and reports the longest gaps between consecutive ones.
 *
 * Every message carries its sequence number in its first and last 8 bytes.
 * The server looks for the highest one in its area every millisecond and
 * times the longest wait for a new one. Both clocks are needed under
 * migration: a guest's clock stands still while its VM is stopped, so the
 * migrating writer's own gap leaves the stop out, while the server's guest
 * keeps running and sees the pause in real time (to a millisecond).
 *
 * At the end the server checks its whole area: each slot must hold the
 * last WRITE into it, whole (the pattern of its source buffer, the sequence
 * number at both ends), so the numbers cannot come from broken traffic.
 *
 * Output: each side lists its gaps of PAUSE_MS or more ("writer pause:",
 * "server pause:" lines with their CLOCK_MONOTONIC start and how long the
 * side itself did not run in them). The client prints the three longest
 * gaps on each side, then one line
 *   pvo-blackout: writes=N bytes=B seconds=S mbps=M gap_ms=G gap_at_s=T
 *     peer_gap_ms=P peer_gap_at_s=U peer_seconds=Q verified=V
 * S and Q: from the first completion (resp. WRITE seen) to the last, on
 * the writer's (resp. the server's) clock; *_at_s: when the longest gap
 * began, on the same clock. Q - S is how long the writer's clock stood
 * still.
 * Exit status 0 if every completion was successful and in order and the
 * server's check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define MAX_SIZE	(1u << 20)
#define MIN_SIZE	64u
#define MAX_AREA	(256u << 20)
/* source buffers: twice the largest window, so a buffer is never rewritten
 * while a WRITE from it may still be in flight, and a slot's next message
 * comes from another buffer than its last one */
#define NSRC		32
#define MAX_WINDOW	(NSRC / 2)
#define CQ_DEPTH	64
#define STALL_MS	60000
#define PEER_POLL_MS	1
#define NGAPS		3
#define PAUSE_MS	20
#define MAX_PAUSES	1024
#define UNWRITTEN	0xffu

struct hello_client {
	struct pt_qp_info qp;
	uint32_t size;
	uint32_t area;
};

struct hello_server {
	struct pt_qp_info qp;
	uint64_t addr;
	uint32_t rkey;
	uint32_t reserved;
};

struct end {
	uint64_t writes;
	int32_t status;		/* client: 0 if every completion was right */
	uint32_t reserved;
};

struct gaps {
	uint64_t len[NGAPS], at[NGAPS];	/* ns, longest first */
};

struct result {
	int32_t ok;
	uint32_t reserved;
	struct gaps gaps;	/* between new WRITEs seen, at: since the first */
	uint64_t span;		/* ns from the first WRITE seen to the last */
	uint64_t arrivals;	/* polls that saw a new WRITE */
	char msg[240];
};

static struct {
	struct pt_dev dev;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	uint32_t size, area, slots;
	int fd;
} g;

/*
 * Every gap of PAUSE_MS or more, with the longest stretch in it during which
 * this side did not look (from one clock read to the next: its own vCPU did
 * not run): the gap is the stream's only if that stretch is short. at:
 * CLOCK_MONOTONIC, so that a script can place it on another clock.
 */
struct pause {
	uint64_t at, len, blind;
};

static struct pause pauses[MAX_PAUSES];
static unsigned int npauses, pauses_lost;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void gap_add(struct gaps *gs, uint64_t len, uint64_t at)
{
	int i, j;

	for (i = 0; i < NGAPS && len <= gs->len[i]; i++)
		;
	if (i == NGAPS)
		return;
	for (j = NGAPS - 1; j > i; j--) {
		gs->len[j] = gs->len[j - 1];
		gs->at[j] = gs->at[j - 1];
	}
	gs->len[i] = len;
	gs->at[i] = at;
}

static void pause_add(uint64_t at, uint64_t len, uint64_t blind)
{
	if (len < PAUSE_MS * 1000000ull)
		return;
	if (npauses == MAX_PAUSES) {
		pauses_lost++;
		return;
	}
	pauses[npauses++] = (struct pause){ .at = at, .len = len, .blind = blind };
}

static void pause_print(const char *who)
{
	unsigned int i;

	for (i = 0; i < npauses; i++)
		printf("%s pause: at=%.3f len_ms=%.1f blind_ms=%.1f\n", who,
		       pauses[i].at / 1e9, pauses[i].len / 1e6, pauses[i].blind / 1e6);
	if (pauses_lost)
		printf("%s pause: %u more not kept\n", who, pauses_lost);
}

/* the body of source buffer src: the same on both sides */
static void fill_source(uint8_t *p, uint32_t src)
{
	struct pt_stream s;

	pt_stream_init(&s, pt_mix(0xb1ac0u, src));
	pt_stream_fill(&s, p, g.size);
}

/* the QP and the buffer (the server's area, the client's sources) */
static void setup(size_t buf_len)
{
	struct ibv_qp_init_attr qa;

	g.cq = ibv_create_cq(g.dev.ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!g.cq)
		pt_die("ibv_create_cq %d", CQ_DEPTH);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = g.cq;
	qa.recv_cq = g.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = MAX_WINDOW;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	g.qp = ibv_create_qp(g.dev.pd, &qa);
	if (!g.qp)
		pt_die("ibv_create_qp RC (%d send WRs)", MAX_WINDOW);
	g.buf_len = buf_len;
	g.buf = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	if (g.buf == MAP_FAILED)
		pt_die("mmap %zu bytes", buf_len);
	memset(g.buf, UNWRITTEN, buf_len);
	g.mr = ibv_reg_mr(g.dev.pd, g.buf, buf_len,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!g.mr)
		pt_die("ibv_reg_mr %zu bytes", buf_len);
}

static void connect_qp(struct pt_qp_info *mine, const struct pt_qp_info *theirs)
{
	struct pt_conn c = pt_conn_default;
	int err;

	c.access = IBV_ACCESS_REMOTE_WRITE;
	err = pt_connect_qp(&g.dev, g.qp, mine, theirs, &c);
	if (err) {
		errno = err;
		pt_die("connecting the RC QP to QPN 0x%x", theirs->qpn);
	}
}

static void recv_or_die(void *p, size_t len, const char *what)
{
	if (!pt_tcp_recv(g.fd, p, len)) {
		errno = 0;
		pt_die("the peer closed the connection (%s)", what);
	}
}

/* ---- server: the WRITEs' target, timing their arrival ---- */

static uint64_t seq_at(const uint8_t *slot, size_t off)
{
	uint64_t v;

	memcpy(&v, slot + off, sizeof(v));
	return v;
}

/* highest sequence number in the area; UINT64_MAX: nothing arrived yet */
static uint64_t highest(void)
{
	uint64_t hi = UINT64_MAX, v;
	uint32_t k;

	for (k = 0; k < g.slots; k++) {
		v = *(volatile uint64_t *)(g.buf + (size_t)k * g.size + g.size - 8);
		if (v != UINT64_MAX && (hi == UINT64_MAX || v > hi))
			hi = v;
	}
	return hi;
}

/* Every slot must hold the last of the writes WRITEs aimed at it. */
static bool verify_area(uint64_t writes, char *msg, size_t msglen)
{
	uint8_t *want = malloc(g.size);
	uint64_t n, head, tail;
	uint8_t *slot;
	uint32_t k;
	size_t i;
	bool ok = true;

	if (!want)
		pt_die("malloc");
	for (k = 0; k < g.slots && ok; k++) {
		slot = g.buf + (size_t)k * g.size;
		head = seq_at(slot, 0);
		tail = seq_at(slot, g.size - 8);
		if (writes <= k) {
			for (i = 0; i < g.size && slot[i] == UNWRITTEN; i++)
				;
			if (i < g.size) {
				snprintf(msg, msglen, "slot %u: written (byte %zu), but no "
					 "WRITE was aimed at it", k, i);
				ok = false;
			}
			continue;
		}
		n = (writes - 1 - k) / g.slots * g.slots + k;
		if (head != n || tail != n) {
			snprintf(msg, msglen, "slot %u: sequence numbers %" PRIu64 " and "
				 "%" PRIu64 " at its ends, want %" PRIu64 " (the last WRITE "
				 "into it)", k, head, tail, n);
			ok = false;
			break;
		}
		fill_source(want, n % NSRC);
		for (i = 8; i < g.size - 8 && slot[i] == want[i]; i++)
			;
		if (i < g.size - 8) {
			snprintf(msg, msglen, "slot %u (WRITE %" PRIu64 "): byte %zu is "
				 "0x%02x, want 0x%02x", k, n, i, slot[i], want[i]);
			ok = false;
		}
	}
	free(want);
	return ok;
}

static int run_server(int port)
{
	struct hello_client hc;
	struct hello_server hs;
	struct result r = { 0 };
	struct pollfd pfd;
	struct end e;
	uint64_t hi = UINT64_MAX, v, t, first = 0, last = 0, prev = 0, blind = 0;

	g.fd = pt_tcp_accept(port);
	recv_or_die(&hc, sizeof(hc), "exchange");
	if (hc.size < MIN_SIZE || hc.size > MAX_SIZE || hc.area < hc.size ||
	    hc.area > MAX_AREA) {
		errno = 0;
		pt_die("the client asked for %u-byte messages into %u bytes", hc.size,
		       hc.area);
	}
	g.size = hc.size;
	g.slots = hc.area / hc.size;
	setup((size_t)g.slots * g.size);
	memset(&hs, 0, sizeof(hs));
	pt_local_info(&g.dev, g.qp, &hs.qp);
	hs.addr = (uintptr_t)g.buf;
	hs.rkey = g.mr->rkey;
	connect_qp(&hs.qp, &hc.qp);
	/* RTR before the writer starts */
	pt_tcp_send(g.fd, &hs, sizeof(hs));

	pfd.fd = g.fd;
	pfd.events = POLLIN;
	for (;;) {
		/* the side channel stays quiet until the end: a timed sleep */
		if (poll(&pfd, 1, PEER_POLL_MS) < 0 && errno != EINTR)
			pt_die("poll");
		t = now_ns();
		if (prev && t - prev > blind)
			blind = t - prev;
		prev = t;
		v = highest();
		if (v != hi) {
			if (hi == UINT64_MAX) {
				first = t;
			} else {
				gap_add(&r.gaps, t - last, last - first);
				pause_add(last, t - last, blind);
			}
			blind = 0;
			hi = v;
			last = t;
			r.arrivals++;
		}
		if (pfd.revents)
			break;
	}
	recv_or_die(&e, sizeof(e), "end of the run");
	r.span = last - first;
	if (e.status)
		snprintf(r.msg, sizeof(r.msg), "not checked: the writer failed");
	else
		r.ok = verify_area(e.writes, r.msg, sizeof(r.msg));
	if (r.ok)
		snprintf(r.msg, sizeof(r.msg), "%" PRIu64 " WRITEs, all %u slots right",
			 e.writes, g.slots);
	pt_tcp_send(g.fd, &r, sizeof(r));
	pause_print("server");
	printf("pvo-blackout server: %s; new WRITEs seen %" PRIu64 " times in %.3f s, "
	       "longest wait %.1f ms at %.3f s\n", r.msg, r.arrivals, r.span / 1e9,
	       r.gaps.len[0] / 1e6, r.gaps.at[0] / 1e9);
	return r.ok && e.status == 0 ? 0 : 1;
}

/* ---- client: the writer ---- */

static bool post_write(uint64_t n, uint64_t raddr, uint32_t rkey)
{
	uint8_t *src = g.buf + (size_t)(n % NSRC) * g.size;
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = g.size, .lkey = g.mr->lkey
	};
	struct ibv_send_wr wr, *bad;
	int err;

	memcpy(src, &n, 8);
	memcpy(src + g.size - 8, &n, 8);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = n;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr + (n % g.slots) * g.size;
	wr.wr.rdma.rkey = rkey;
	err = ibv_post_send(g.qp, &wr, &bad);
	if (err) {
		printf("FAIL ibv_post_send of WRITE %" PRIu64 ": %s\n", n, strerror(err));
		return false;
	}
	return true;
}

static int run_client(const char *host, int port, double seconds, uint32_t window)
{
	struct ibv_wc wc[16];
	struct hello_client hc;
	struct hello_server hs;
	struct gaps gs = { 0 };
	struct result r;
	struct end e = { 0 };
	uint64_t posted = 0, done = 0, first = 0, last = 0, t, end_at;
	uint64_t stall_at = 0, spins = 0, prev = 0, blind = 0;
	bool ok = true;
	double secs;
	int i, n;

	setup((size_t)NSRC * g.size);
	for (i = 0; i < NSRC; i++)
		fill_source(g.buf + (size_t)i * g.size, i);
	memset(&hc, 0, sizeof(hc));
	pt_local_info(&g.dev, g.qp, &hc.qp);
	hc.size = g.size;
	hc.area = g.area;
	g.fd = pt_tcp_connect(host, port, 60);
	pt_tcp_send(g.fd, &hc, sizeof(hc));
	recv_or_die(&hs, sizeof(hs), "exchange");
	connect_qp(&hc.qp, &hs.qp);
	printf("pvo-blackout: RDMA WRITEs of %u bytes into %u slots, %u in flight, "
	       "for up to %.0f s\n", g.size, g.area / g.size, window, seconds);

	end_at = now_ns() + (uint64_t)(seconds * 1e9);
	stall_at = now_ns() + (uint64_t)STALL_MS * 1000000;
	while (ok && (done < posted || !stop)) {
		while (!stop && ok && posted - done < window)
			ok = post_write(posted++, hs.addr, hs.rkey);
		if (!ok)
			break;
		n = ibv_poll_cq(g.cq, 16, wc);
		if (n < 0) {
			errno = -n;
			pt_die("ibv_poll_cq");
		}
		if (n == 0) {
			/* read the clock only now and then: polling stays cheap */
			if ((++spins & 1023) == 0) {
				t = now_ns();
				if (prev && t - prev > blind)
					blind = t - prev;
				prev = t;
				if (t > end_at)
					stop = 1;
				if (t > stall_at) {
					printf("FAIL no completion for %d ms (%" PRIu64
					       " posted, %" PRIu64 " done)\n", STALL_MS,
					       posted, done);
					ok = false;
				}
			}
			continue;
		}
		t = now_ns();
		if (prev && t - prev > blind)
			blind = t - prev;
		prev = t;
		if (done == 0) {
			first = t;
		} else {
			gap_add(&gs, t - last, last - first);
			pause_add(last, t - last, blind);
		}
		blind = 0;
		last = t;
		stall_at = t + (uint64_t)STALL_MS * 1000000;
		if (t > end_at)
			stop = 1;
		for (i = 0; i < n && ok; i++, done++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RDMA_WRITE ||
			    wc[i].wr_id != done) {
				printf("FAIL completion %" PRIu64 ": status %s (%d), opcode %d, "
				       "wr_id %" PRIu64 "\n", done,
				       ibv_wc_status_str(wc[i].status), wc[i].status,
				       wc[i].opcode, wc[i].wr_id);
				ok = false;
			}
		}
	}
	secs = done > 1 ? (last - first) / 1e9 : 0;

	/* the server checks what the completed WRITEs left in its area */
	e.writes = done;
	e.status = ok ? 0 : 1;
	pt_tcp_send(g.fd, &e, sizeof(e));
	recv_or_die(&r, sizeof(r), "the server's check");
	r.msg[sizeof(r.msg) - 1] = 0;
	if (!r.ok)
		printf("FAIL the server's check: %s\n", r.msg);
	pause_print("writer");
	for (i = 0; i < NGAPS && gs.len[i]; i++)
		printf("gap %d: %.3f ms after %.3f s\n", i + 1, gs.len[i] / 1e6,
		       gs.at[i] / 1e9);
	for (i = 0; i < NGAPS && r.gaps.len[i]; i++)
		printf("peer gap %d: %.1f ms after %.3f s\n", i + 1, r.gaps.len[i] / 1e6,
		       r.gaps.at[i] / 1e9);
	printf("peer: %s; new WRITEs seen %" PRIu64 " times in %.3f s\n", r.msg,
	       r.arrivals, r.span / 1e9);
	/* peer_seconds - seconds: how long the writer's clock stood still */
	printf("pvo-blackout: writes=%" PRIu64 " bytes=%" PRIu64 " seconds=%.3f "
	       "mbps=%.1f gap_ms=%.3f gap_at_s=%.3f peer_gap_ms=%.1f "
	       "peer_gap_at_s=%.3f peer_seconds=%.3f verified=%d\n", done,
	       done * g.size, secs,
	       secs > 0 ? (done - 1) * (double)g.size / secs / 1e6 : 0.0,
	       gs.len[0] / 1e6, gs.at[0] / 1e9, r.gaps.len[0] / 1e6,
	       r.gaps.at[0] / 1e9, r.span / 1e9, r.ok ? 1 : 0);
	return ok && r.ok ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pvo-blackout -d DEV -g GID_INDEX [-p PORT] [-D SECONDS] [-s SIZE] "
		"[-w WINDOW] [-a AREA] [SERVER_IP]\n"
		"  without SERVER_IP: the server (the WRITEs' target)\n"
		"  -D  seconds to write (default 10); SIGINT or SIGTERM ends earlier\n"
		"  -s  bytes per WRITE, %u..%u (default 65536)\n"
		"  -w  WRITEs in flight, 1..%d (default 8)\n"
		"  -a  bytes of the server's area the WRITEs go round (default 16\n"
		"      WRITEs), up to %u\n", MIN_SIZE, MAX_SIZE, MAX_WINDOW, MAX_AREA);
	exit(2);
}

struct client_opts {
	double seconds;
	uint32_t window;
};

static bool own_opt(int opt, const char *arg, void *ctx)
{
	struct client_opts *c = ctx;
	long v;

	switch (opt) {
	case 'D':
		if (!pt_parse_num(arg, 1, 86400, &v))
			return false;
		c->seconds = v;
		return true;
	case 's':
		if (!pt_parse_num(arg, MIN_SIZE, MAX_SIZE, &v))
			return false;
		g.size = v;
		return true;
	case 'w':
		if (!pt_parse_num(arg, 1, MAX_WINDOW, &v))
			return false;
		c->window = v;
		return true;
	case 'a':
		if (!pt_parse_num(arg, MIN_SIZE, MAX_AREA, &v))
			return false;
		g.area = v;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct client_opts c = { .seconds = 10, .window = 8 };
	struct pt_args a = { .port = 18750 };
	struct sigaction sa;

	g.size = 65536;
	pt_parse_args(argc, argv, "D:s:w:a:", own_opt, &c, &a, usage);
	if (!g.area)
		g.area = 16 * g.size;
	if (g.area < g.size) {
		fprintf(stderr, "pvo-blackout: -a %u: smaller than one WRITE\n", g.area);
		usage();
	}
	g.slots = g.area / g.size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ pt_now_ms());
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pt_open(&g.dev, a.dev, a.gid_index);
	return !a.peer ? run_server(a.port) : run_client(a.peer, a.port, c.seconds, c.window);
}
