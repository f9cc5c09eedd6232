// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-steady-loop: a steady-state verbs data path between two RC QPs of one
 * process (looped back through the device), bracketed by two marker
 * writes so that `strace -f` can show which system calls the data path
 * makes:
 *
 *   write(2, "PVO-STEADY-BEGIN\n") ... N iterations ... write(2, "PVO-STEADY-END\n")
 *
 * Each iteration: post_recv on B, arm B's receive CQ (req_notify_cq), post
 * a SEND from A, poll both CQs, post an RDMA WRITE from A into B's buffer,
 * poll. Nothing in the loop allocates, prints or reads the clock (a clock
 * without vDSO support would be a system call of our own).
 *
 *   pvo-steady-loop -d DEV -g GID_INDEX [-n ITERATIONS] [-w WARMUP]
 *
 * Prints "pvo-steady-loop: iterations=N ok" and exits 0 if every
 * completion was right.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define BUF_LEN 4096
#define MSG 64
#define SPIN_LIMIT 2000000000ull

static const char begin_mark[] = "PVO-STEADY-BEGIN\n";
static const char end_mark[] = "PVO-STEADY-END\n";

struct side {
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct pt_qp_info info;
};

static struct pt_dev dev;
static struct ibv_comp_channel *channel;
static struct side a, b;

static void side_init(struct side *s)
{
	struct ibv_qp_init_attr qa;

	s->scq = ibv_create_cq(dev.ctx, 16, NULL, NULL, 0);
	s->rcq = ibv_create_cq(dev.ctx, 16, NULL, channel, 0);
	if (!s->scq || !s->rcq)
		pt_die("ibv_create_cq");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(dev.pd, &qa);
	if (!s->qp)
		pt_die("ibv_create_qp");
	s->buf = aligned_alloc(4096, BUF_LEN);
	if (!s->buf)
		pt_die("aligned_alloc");
	memset(s->buf, 0, BUF_LEN);
	s->mr = ibv_reg_mr(dev.pd, s->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		pt_die("ibv_reg_mr");
	pt_local_info(&dev, s->qp, &s->info);
	s->info.addr = (uintptr_t)s->buf;
	s->info.rkey = s->mr->rkey;
}

/* Spins for one completion without reading the clock; false on a bad
 * status or after SPIN_LIMIT empty polls.
 */
static bool wait_one(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc;
	uint64_t spins;
	int n = 0;

	for (spins = 0; spins < SPIN_LIMIT; spins++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n)
			break;
	}
	return n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id && wc.opcode == opcode;
}

static bool iteration(uint64_t i)
{
	struct ibv_send_wr swr, *sbad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge ssge, rsge;

	rsge.addr = (uintptr_t)b.buf;
	rsge.length = MSG;
	rsge.lkey = b.mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = i;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	if (ibv_post_recv(b.qp, &rwr, &rbad))
		return false;
	if (ibv_req_notify_cq(b.rcq, 0))
		return false;

	a.buf[0] = (uint8_t)i;
	ssge.addr = (uintptr_t)a.buf;
	ssge.length = MSG;
	ssge.lkey = a.mr->lkey;
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = i;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(a.qp, &swr, &sbad))
		return false;
	if (!wait_one(a.scq, i, IBV_WC_SEND) || !wait_one(b.rcq, i, IBV_WC_RECV))
		return false;
	if (b.buf[0] != (uint8_t)i)
		return false;

	swr.opcode = IBV_WR_RDMA_WRITE;
	swr.wr.rdma.remote_addr = b.info.addr + 2048;
	swr.wr.rdma.rkey = b.info.rkey;
	a.buf[0] = (uint8_t)~i;
	if (ibv_post_send(a.qp, &swr, &sbad))
		return false;
	return wait_one(a.scq, i, IBV_WC_RDMA_WRITE) && b.buf[2048] == (uint8_t)~i;
}

/* Acknowledges the completion events the arming produced, so the CQ can
 * be destroyed.
 */
static void drain_events(void)
{
	struct ibv_cq *cq;
	void *ctx;
	unsigned int n = 0;
	int flags = fcntl(channel->fd, F_GETFL);

	fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK);
	while (ibv_get_cq_event(channel, &cq, &ctx) == 0)
		n++;
	if (n)
		ibv_ack_cq_events(b.rcq, n);
}

static void usage(void)
{
	fprintf(stderr, "usage: pvo-steady-loop -d DEV -g GID_INDEX "
		"[-n ITERATIONS] [-w WARMUP]\n");
	exit(2);
}

/* -n ITERATIONS, -w WARMUP (ctx: both, in that order). */
static bool own_opt(int opt, const char *arg, void *ctx)
{
	unsigned long *counts = ctx;
	long v;

	if ((opt != 'n' && opt != 'w') || !pt_parse_num(arg, 0, LONG_MAX, &v))
		return false;
	counts[opt == 'w'] = v;
	return true;
}

int main(int argc, char **argv)
{
	unsigned long counts[2] = { 1000, 100 }, iters, warmup, i;
	struct pt_args args = { 0 };
	int err;
	bool ok = true;

	pt_parse_args(argc, argv, "n:w:", own_opt, counts, &args, usage);
	if (args.peer)
		usage(); /* both QPs are local */
	iters = counts[0];
	warmup = counts[1];
	srand48(getpid());
	pt_open(&dev, args.dev, args.gid_index);
	channel = ibv_create_comp_channel(dev.ctx);
	if (!channel)
		pt_die("ibv_create_comp_channel");
	side_init(&a);
	side_init(&b);
	err = pt_connect_qp(&dev, a.qp, &a.info, &b.info, &pt_conn_default);
	if (!err)
		err = pt_connect_qp(&dev, b.qp, &b.info, &a.info, &pt_conn_default);
	if (err) {
		errno = err;
		pt_die("connecting the two QPs");
	}
	/* the first iterations may fault pages in and warm caches */
	for (i = 0; i < warmup && ok; i++)
		ok = iteration(i);
	if (!ok) {
		errno = 0;
		pt_die("warm-up iteration %lu failed", i - 1);
	}

	if (write(2, begin_mark, sizeof(begin_mark) - 1) < 0)
		return 1;
	for (i = 0; i < iters && ok; i++)
		ok = iteration(warmup + i);
	if (write(2, end_mark, sizeof(end_mark) - 1) < 0)
		return 1;

	if (!ok) {
		errno = 0;
		pt_die("iteration %lu failed (a post failed, a completion was wrong or missing, or "
		       "the data did not arrive)", i - 1);
	}
	drain_events();
	printf("pvo-steady-loop: iterations=%lu ok\n", iters);
	return 0;
}
