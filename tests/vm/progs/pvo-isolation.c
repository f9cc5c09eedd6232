// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-isolation: can one VM reach another's memory and queues when it knows
 * every identifier (QPN, GID, rkey, address, Q_Key)?
 *
 *   victim:    pvo-isolation -d DEV -g GID_INDEX [-p PORT]
 *   attacker:  pvo-isolation -d DEV -g GID_INDEX [-p PORT] -e blocked|reachable VICTIM_IP
 *
 * The victim registers an MR with every remote access right, fills it with
 * a pattern, and makes three RC QPs (one per attack, a receive WQE posted on
 * each) and a UD QP with receive WQEs. Over TCP it tells the attacker all
 * identifiers and connects its RC QPs to the attacker's QPs, as if the
 * attacker were its legitimate peer: only the path between the two VMs can
 * stop the attacks. The attacker then tries an RDMA WRITE into the MR, an
 * RDMA READ from it, a SEND, and a UD SEND with the right Q_Key; the victim
 * reports its MR checksum and the receive completions it saw.
 *
 * -e blocked (another tenant): every RC attempt ends in RETRY_EXC_ERR, the
 * UD sender completes, and the victim saw nothing: no byte, no completion.
 * -e reachable (the control, same tenant): everything succeeds and lands.
 *
 * Output: TAP lines and "pvo-isolation: expect=... passed=N failed=M";
 * exit status 0 if everything went as expected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define MR_LEN		(64u << 10)
#define RECV_LEN	(40 + 1024)
#define MSG		64
#define TARGET_OFF	128	/* the RDMA WRITE goes here */
#define READ_OFF	1024	/* the RDMA READ comes from here */
#define UD_QKEY		0x2468aceu
#define NRC		3	/* WRITE, READ, SEND */
#define VICTIM_WAIT_MS	1500

struct victim_info {
	struct pt_qp_info rc[NRC];	/* rc[0].addr / rkey: the MR */
	uint32_t ud_qpn;
	uint32_t ud_qkey;
	uint8_t gid[16];
	uint8_t pattern[MSG];		/* what the MR holds at READ_OFF */
};

struct victim_report {
	uint64_t checksum0, checksum;
	uint32_t rc_recv, ud_recv;	/* successful receive completions */
	uint32_t rc_state[NRC];
	uint8_t target[MSG];		/* the MR at TARGET_OFF now */
};

static struct pt_dev dev;
static int fd;

static void recv_or_die(void *buf, size_t len)
{
	if (!pt_tcp_recv(fd, buf, len)) {
		errno = 0;
		pt_die("the peer closed the connection");
	}
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = type;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(dev.pd, &qa);
	if (!qp)
		pt_die("ibv_create_qp");
	return qp;
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = RECV_LEN, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		pt_die("ibv_post_recv");
}

/* ---- victim ---- */

static int run_victim(int port)
{
	struct pt_qp_info attacker[NRC];
	struct victim_report rep;
	struct victim_info vi;
	struct ibv_qp *rc[NRC], *ud;
	struct ibv_mr *mr, *rmr;
	struct pt_stream s;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	uint8_t *buf, *rbuf, orig[MSG];
	uint64_t deadline;
	char done;
	int i, err;

	buf = aligned_alloc(4096, MR_LEN);
	rbuf = aligned_alloc(4096, (NRC + 2) * 2048);
	cq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	if (!buf || !rbuf || !cq)
		pt_die("set-up");
	pt_stream_init(&s, lrand48());
	pt_stream_fill(&s, buf, MR_LEN);
	memset(rbuf, 0, (NRC + 2) * 2048);
	mr = ibv_reg_mr(dev.pd, buf, MR_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	rmr = ibv_reg_mr(dev.pd, rbuf, (NRC + 2) * 2048, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !rmr)
		pt_die("ibv_reg_mr");

	memset(&vi, 0, sizeof(vi));
	for (i = 0; i < NRC; i++) {
		rc[i] = make_qp(cq, IBV_QPT_RC);
		pt_local_info(&dev, rc[i], &vi.rc[i]);
		vi.rc[i].addr = (uintptr_t)buf;
		vi.rc[i].rkey = mr->rkey;
		vi.rc[i].len = MR_LEN;
	}
	ud = make_qp(cq, IBV_QPT_UD);
	err = pt_ud_ready(&dev, ud, UD_QKEY);
	if (err) {
		errno = err;
		pt_die("UD QP to RTS");
	}
	post_recv(ud, rmr, rbuf + NRC * 2048, 100);
	post_recv(ud, rmr, rbuf + (NRC + 1) * 2048, 101);
	vi.ud_qpn = ud->qp_num;
	vi.ud_qkey = UD_QKEY;
	memcpy(vi.gid, dev.gid.raw, 16);
	memcpy(vi.pattern, buf + READ_OFF, MSG);
	memcpy(orig, buf + TARGET_OFF, MSG);

	fd = pt_tcp_accept(port);
	pt_tcp_send(fd, &vi, sizeof(vi));
	recv_or_die(attacker, sizeof(attacker));
	/* the attacker is our peer as far as our QPs know */
	for (i = 0; i < NRC; i++) {
		err = pt_connect_qp(&dev, rc[i], &vi.rc[i], &attacker[i], &pt_conn_default);
		if (err) {
			errno = err;
			pt_die("connecting RC QP %d to the attacker's QPN 0x%x", i, attacker[i].qpn);
		}
		post_recv(rc[i], rmr, rbuf + i * 2048, i);
	}
	pt_tcp_send(fd, &vi, sizeof(vi));	/* ready */
	recv_or_die(&done, 1);

	memset(&rep, 0, sizeof(rep));
	deadline = pt_now_ms() + VICTIM_WAIT_MS;
	while (pt_now_ms() < deadline) {
		if (!pt_poll(cq, &wc, 50))
			continue;
		printf("victim: completion wr_id %" PRIu64 " status %s opcode %d byte_len %u\n",
		       wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len);
		if (wc.status != IBV_WC_SUCCESS)
			continue;
		if (wc.wr_id >= 100)
			rep.ud_recv++;
		else
			rep.rc_recv++;
	}
	/* the MR as registered: its pattern, unless a write landed */
	rep.checksum = pt_checksum(buf, MR_LEN);
	memcpy(rep.target, buf + TARGET_OFF, MSG);
	memcpy(buf + TARGET_OFF, orig, MSG);
	rep.checksum0 = pt_checksum(buf, MR_LEN);
	memcpy(buf + TARGET_OFF, rep.target, MSG);
	for (i = 0; i < NRC; i++)
		rep.rc_state[i] = pt_qp_state(rc[i]);
	pt_tcp_send(fd, &rep, sizeof(rep));
	printf("victim: checksum %s, %u RC and %u UD receive completions\n",
	       rep.checksum == rep.checksum0 ? "unchanged" : "CHANGED", rep.rc_recv, rep.ud_recv);
	return 0;
}

/* ---- attacker ---- */



static const char *st(int status)
{
	return status < 0 ? "no completion" : ibv_wc_status_str(status);
}

static int run_attacker(const char *host, int port, bool blocked)
{
	static const char *const names[NRC] = { "RDMA WRITE into", "RDMA READ from", "SEND to" };
	static const enum ibv_wr_opcode ops[NRC] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_SEND
	};
	struct pt_qp_info mine[NRC];
	struct victim_report rep;
	struct victim_info vi;
	struct ibv_qp *rc[NRC], *ud;
	struct ibv_send_wr wr, *bad;
	struct pt_conn c = pt_conn_default;
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *buf;
	char done = 1;
	int i, err, want = blocked ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS;
	const char *how = blocked ? "RETRY_EXC_ERR, nothing arrives" : "success";

	buf = aligned_alloc(4096, 4096);
	cq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	if (!buf || !cq)
		pt_die("set-up");
	memset(buf, 0xee, 4096);
	mr = ibv_reg_mr(dev.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		pt_die("ibv_reg_mr");
	for (i = 0; i < NRC; i++) {
		rc[i] = make_qp(cq, IBV_QPT_RC);
		pt_local_info(&dev, rc[i], &mine[i]);
	}
	ud = make_qp(cq, IBV_QPT_UD);
	err = pt_ud_ready(&dev, ud, 0x1357);
	if (err) {
		errno = err;
		pt_die("UD QP to RTS");
	}
	fd = pt_tcp_connect(host, port, 60);
	recv_or_die(&vi, sizeof(vi));
	pt_tcp_send(fd, mine, sizeof(mine));
	recv_or_die(&vi, sizeof(vi));	/* the victim's QPs are connected to ours */

	c.timeout = 12;		/* 16.8 ms */
	c.retry_cnt = 2;
	for (i = 0; i < NRC; i++) {
		err = pt_connect_qp(&dev, rc[i], &mine[i], &vi.rc[i], &c);
		if (err) {
			errno = err;
			pt_die("connecting to the victim's QPN 0x%x", vi.rc[i].qpn);
		}
		memset(&wr, 0, sizeof(wr));
		sge.addr = (uintptr_t)buf + i * 128;
		sge.length = MSG;
		sge.lkey = mr->lkey;
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = ops[i];
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = vi.rc[i].addr + (ops[i] == IBV_WR_RDMA_READ ? READ_OFF :
							     TARGET_OFF);
		wr.wr.rdma.rkey = vi.rc[i].rkey;
		err = ibv_post_send(rc[i], &wr, &bad);
		if (err || !pt_poll(cq, &wc, 20000))
			wc.status = -1;
		pt_tap_ok((int)wc.status == want, "%s the victim's QPN 0x%x (rkey 0x%x): %s (%s)",
		       names[i], vi.rc[i].qpn, vi.rc[i].rkey, how, st(wc.status));
		if (i == 1 && !blocked)
			pt_tap_ok(memcmp(buf + 128, vi.pattern, MSG) == 0,
			       "RDMA READ returned the victim's bytes");
	}
	ah = pt_create_ah(&dev, vi.gid);
	if (!ah)
		pt_die("ibv_create_ah");
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)buf;
	sge.length = MSG;
	sge.lkey = mr->lkey;
	wr.wr_id = 10;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = vi.ud_qpn;
	wr.wr.ud.remote_qkey = vi.ud_qkey;
	err = ibv_post_send(ud, &wr, &bad);
	if (err || !pt_poll(cq, &wc, 10000))
		wc.status = -1;
	pt_tap_ok(wc.status == IBV_WC_SUCCESS, "UD SEND to the victim's QPN 0x%x with its Q_Key: "
	       "the sender completes (%s)", vi.ud_qpn, st(wc.status));

	pt_tcp_send(fd, &done, 1);
	recv_or_die(&rep, sizeof(rep));
	if (blocked) {
		pt_tap_ok(rep.checksum == rep.checksum0, "the victim's MR is unchanged (checksum)");
		pt_tap_ok(rep.rc_recv == 0, "the victim's RC QPs received nothing (%u)", rep.rc_recv);
		pt_tap_ok(rep.ud_recv == 0, "the victim's UD QP received nothing (%u)", rep.ud_recv);
		for (i = 0; i < NRC; i++)
			pt_tap_ok(rep.rc_state[i] == IBV_QPS_RTS, "the victim's RC QP %d is still RTS (%s)",
			       i, pt_qp_state_str(rep.rc_state[i]));
	} else {
		pt_tap_ok(memcmp(rep.target, buf, MSG) == 0 && rep.checksum != rep.checksum0,
		       "the RDMA WRITE landed in the victim's MR");
		pt_tap_ok(rep.rc_recv == 1, "the victim's RC QP received the SEND (%u)", rep.rc_recv);
		pt_tap_ok(rep.ud_recv == 1, "the victim's UD QP received the datagram (%u)",
		       rep.ud_recv);
	}
	printf("1..%d\n", pt_tap_n);
	printf("pvo-isolation: expect=%s passed=%d failed=%d\n", blocked ? "blocked" : "reachable",
	       pt_tap_n - pt_tap_failed, pt_tap_failed);
	return pt_tap_failed ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: pvo-isolation -d DEV -g GID_INDEX [-p PORT] "
		"[-e blocked|reachable VICTIM_IP]\n"
		"  without VICTIM_IP: the victim side\n");
	exit(2);
}

/* -e blocked|reachable (ctx: where to store it). */
static bool own_opt(int opt, const char *arg, void *ctx)
{
	if (opt != 'e' || (strcmp(arg, "blocked") && strcmp(arg, "reachable")))
		return false;
	*(const char **)ctx = arg;
	return true;
}

int main(int argc, char **argv)
{
	struct pt_args a = { .port = 18950 };
	const char *expect = NULL;

	pt_parse_args(argc, argv, "e:", own_opt, &expect, &a, usage);
	if (a.peer && !expect) {
		fprintf(stderr, "pvo-isolation: the attacker side needs -e\n");
		usage();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ pt_now_ms());
	pt_open(&dev, a.dev, a.gid_index);
	if (!a.peer)
		return run_victim(a.port);
	return run_attacker(a.peer, a.port, strcmp(expect, "blocked") == 0);
}
