// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-fatal: an application that survives its RDMA device dying. Two RC
 * QPs of this process, looped back through the device, exchange RDMA
 * WRITEs until the device reports IBV_EVENT_DEVICE_FATAL (the back-end
 * went away); then the program checks that its QPs are in error, frees
 * everything and exits 0, as an application should.
 *
 *   pvo-fatal -d DEV -g GID_INDEX [-t SECONDS]
 *
 * Prints "pvo-fatal: running" once 100 WRITEs completed (traffic flows:
 * the back-end may be killed now), and at the end
 *   pvo-fatal: IBV_EVENT_DEVICE_FATAL after N WRITEs; QP states ERR ERR; freed
 * Exit 1 if no fatal event came within SECONDS (default 120), a WRITE
 * failed before it, or the teardown failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define BUF_LEN 65536
#define MSG 4096

static struct pt_dev dev;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *mr;
static uint8_t *buf;
static long seconds = 120;

static bool own_opt(int opt, const char *arg, void *ctx)
{
	(void)ctx;
	return opt == 't' && pt_parse_num(arg, 1, 3600, &seconds);
}

static void usage(void)
{
	fprintf(stderr, "usage: pvo-fatal -d DEV -g GID_INDEX [-t SECONDS]\n");
	exit(2);
}

/* One WRITE from a into the second half of the buffer: 1 if it completed
 * with success, 0 if nothing completed within ms, -1 on an error CQE. */
static int write_once(int ms)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = MSG,
			      .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE}, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)buf + BUF_LEN / 2;
	wr.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(qa, &wr, &bad))
		return -1;
	if (!pt_poll(cq, &wc, ms))
		return 0;
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "pvo-fatal: WRITE completed with %s\n",
			ibv_wc_status_str(wc.status));
		return -1;
	}
	return 1;
}

/* The next async event within ms: its type, or -1 if none came. */
static int async_event(int ms)
{
	struct pollfd p = {.fd = dev.ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;
	int type;

	if (poll(&p, 1, ms) <= 0 || ibv_get_async_event(dev.ctx, &ev))
		return -1;
	type = ev.event_type;
	printf("pvo-fatal: async event %s\n", ibv_event_type_str(type));
	ibv_ack_async_event(&ev);
	return type;
}

int main(int argc, char **argv)
{
	struct pt_args a = {.gid_index = 1};
	uint64_t end, writes = 0;
	int flags, r, sa, sb, errs = 0;
	bool idle = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pt_parse_args(argc, argv, "t:", own_opt, NULL, &a, usage);
	if (a.peer)
		usage();
	pt_open(&dev, a.dev, a.gid_index);
	flags = fcntl(dev.ctx->async_fd, F_GETFL);
	if (flags < 0 || fcntl(dev.ctx->async_fd, F_SETFL, flags | O_NONBLOCK))
		pt_die("async fd non-blocking");
	buf = calloc(1, BUF_LEN);
	cq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	if (!buf || !cq)
		pt_die("buffer and CQ");
	mr = ibv_reg_mr(dev.pd, buf, BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		pt_die("ibv_reg_mr");
	qa = pt_create_rc(&dev, cq, 16);
	qb = pt_create_rc(&dev, cq, 16);
	r = pt_connect_pair(&dev, qa, qb, &pt_conn_default);
	if (r) {
		errno = r;
		pt_die("connecting the QPs");
	}

	/* WRITEs until one does not complete: the back-end went away */
	end = pt_now_ms() + seconds * 1000;
	while (!idle && pt_now_ms() < end) {
		r = write_once(1000);
		if (r < 0) {
			fprintf(stderr, "pvo-fatal: WRITE %llu failed before any fatal event\n",
				(unsigned long long)writes + 1);
			return 1;
		}
		idle = r == 0;
		writes += r;
		if (writes == 100)
			printf("pvo-fatal: running\n");
	}
	/* then the event, which must come */
	while ((r = async_event(500)) != IBV_EVENT_DEVICE_FATAL)
		if (pt_now_ms() > end) {
			fprintf(stderr, "pvo-fatal: no IBV_EVENT_DEVICE_FATAL within %ld s (%llu WRITEs done)\n",
				seconds, (unsigned long long)writes);
			return 1;
		}
	sa = pt_qp_state(qa);
	sb = pt_qp_state(qb);
	/* an application's teardown: every call must succeed */
	errs += ibv_destroy_qp(qa) != 0;
	errs += ibv_destroy_qp(qb) != 0;
	errs += ibv_dereg_mr(mr) != 0;
	errs += ibv_destroy_cq(cq) != 0;
	errs += ibv_dealloc_pd(dev.pd) != 0;
	errs += ibv_close_device(dev.ctx) != 0;
	printf("pvo-fatal: IBV_EVENT_DEVICE_FATAL after %llu WRITEs; QP states %s %s; %s\n",
	       (unsigned long long)writes, pt_qp_state_str(sa), pt_qp_state_str(sb),
	       errs ? "teardown failed" : "freed");
	return errs || sa != IBV_QPS_ERR || sb != IBV_QPS_ERR || writes < 100;
}
