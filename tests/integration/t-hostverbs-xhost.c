// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-hostverbs-xhost: verbs between two hosts with RDMA devices, each end
 * either a simulated VM behind its own back-end on the host-verbs
 * transport ("vm") or a plain libibverbs process on the host device
 * ("plain", the interoperability peer). Runs where the devices exist
 * (tests/vm/t-hostverbs-datapath: two TCG guests with rdma_rxe):
 *
 *   T_XHOST=ROLE:KIND:DEV:NETDEV:IP[:SERVER]
 *
 * ROLE is server or client, KIND vm or plain, DEV the host RDMA device,
 * NETDEV the tenant's netdev that holds IP (the end's address); the
 * client names the SERVER's TCP address. The server is an agent: the
 * client drives every case over a line protocol on TCP (QP set-up,
 * buffer fills, receives, completions, byte checks) and prints the TAP.
 *
 * Cases (T_XHOST_CASES, comma separated; default all but the cross-tenant
 * and benchmark ones): send, write, read, atomic, uc, ud, srq, errors,
 * rnr;
 * cross (the client's tenant is not the server's: nothing may cross);
 * bench (WRITE bandwidth and SEND half round trip, printed as
 * "# bench: ..." lines for bench/hostverbs.py).
 *
 * T_XHOST_TRANSPORT=overlay runs the vm ends on the software overlay
 * instead (T_XHOST_OVERLAY=LOCAL_VTEP:REMOTE_VTEP:PEER_IP), for the
 * benchmark's comparison; T_XHOST_BUSY_POLL_US=N puts the vm ends'
 * back-ends in latency mode (busy-poll-us).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "side_channel.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define TCP_PORT 18600
#define WAIT_MS 20000

/* The buffer of each end: RW takes remote writes, reads and atomics and
 * holds receives; RO is remotely readable only; LOC is local only. */
#define RW_OFF 0
#define RW_LEN (256 << 10)
#define RO_OFF RW_LEN
#define RO_LEN (64 << 10)
#define LOC_OFF (RO_OFF + RO_LEN)
#define LOC_LEN (256 << 10)
#define BUF_LEN (LOC_OFF + LOC_LEN)
#define GRH_LEN 40
#define UD_QKEY 0x2545

enum region { RW, RO, LOC, NREGIONS };

static const uint64_t region_off[NREGIONS] = {RW_OFF, RO_OFF, LOC_OFF};

/* A completion, in host order (IB enum values for both kinds). */
struct xwc {
	uint64_t wr_id;
	unsigned int status, opcode, flags;
	uint32_t byte_len, imm, src_qp;
};

struct ep_qp {
	uint8_t type;
	uint32_t qpn, psn;
	struct sim_qp sim;
	struct ibv_qp *ibv;
};

/* One end: its device objects, buffer and MRs. */
struct ep {
	bool plain;
	uint8_t gid[16];
	int gid_index;
	uint64_t base; /* iova of the buffer */
	uint32_t key[NREGIONS];
	/* vm */
	struct backend_proc bp;
	struct sim_vm *vm;
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq cq;
	struct sim_buf buf;
	struct sim_mr mr[NREGIONS];
	uint32_t ah; /* UD: the AH to the peer, 0 if none */
	struct sim_srq srq;
	bool has_srq;
	/* plain */
	struct ibv_context *ibv;
	struct ibv_pd *ipd;
	struct ibv_cq *icq;
	struct ibv_mr *imr[NREGIONS];
	struct ibv_ah *iah;
	struct ibv_srq *isrq;
	uint8_t *mem;
};

static struct ep me;
static struct ep_qp qp;
static FILE *rx;
static int tx = -1;
static char peer_line[512];

static void __attribute__((noreturn)) lost(const char *what)
{
	if (!me.plain && me.vm) {
		backend_dump_log(&me.bp, 30);
		tap_bail("%s: %s (log kept in %s)", what, me.vm->err,
			 me.bp.dir);
	}
	tap_bail("%s", what);
}

static uint8_t pattern(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the end's memory ---- */

static void mem_write(uint64_t off, const void *p, uint64_t n)
{
	if (me.plain)
		memcpy(me.mem + off, p, n);
	else
		sim_buf_write(&me.buf, off, p, n);
}

static void mem_read(uint64_t off, void *p, uint64_t n)
{
	if (me.plain)
		memcpy(p, me.mem + off, n);
	else
		sim_buf_read(&me.buf, off, p, n);
}

static bool in_buf(uint64_t off, uint64_t len)
{
	return off <= BUF_LEN && len <= BUF_LEN - off;
}

/* [off, +len) gets pattern @seed from its byte @start on, so that part
 * of a filled range can be checked on its own. */
static void fill(uint64_t off, uint64_t len, uint32_t seed, uint64_t start)
{
	uint8_t *t = malloc(len ? len : 1);
	uint64_t i;

	for (i = 0; i < len; i++)
		t[i] = pattern(seed, start + i);
	mem_write(off, t, len);
	free(t);
}

/* Bytes of [off, +len) that are not fill()'s; *first the first. */
static uint64_t check(uint64_t off, uint64_t len, uint32_t seed, uint64_t start,
		      uint64_t *first)
{
	uint8_t *t = malloc(len ? len : 1);
	uint64_t i, bad = 0;

	*first = 0;
	mem_read(off, t, len);
	for (i = 0; i < len; i++)
		if (t[i] != pattern(seed, start + i) && !bad++)
			*first = i;
	free(t);
	return bad;
}

/* ---- set-up ---- */

static int plain_gid_index(const char *ip, uint8_t gid[16])
{
	struct in_addr a;
	struct ibv_port_attr pa;
	int i;

	if (inet_pton(AF_INET, ip, &a) != 1 || ibv_query_port(me.ibv, 1, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(me.ibv, 1, i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (!memcmp(e.gid.raw + 12, &a, 4) && e.gid.raw[10] == 0xff &&
		    e.gid.raw[11] == 0xff) {
			memcpy(gid, e.gid.raw, 16);
			return i;
		}
	}
	return -1;
}

static void open_plain(const char *dev, const char *ip)
{
	static const int access[NREGIONS] = {
	    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
	    IBV_ACCESS_LOCAL_WRITE};
	struct ibv_device **l = ibv_get_device_list(NULL);
	int i;

	for (i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), dev))
			me.ibv = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!me.ibv)
		tap_bail("no RDMA device %s here", dev);
	me.gid_index = plain_gid_index(ip, me.gid);
	if (me.gid_index < 0)
		tap_bail("%s has no RoCE v2 GID for %s", dev, ip);
	me.ipd = ibv_alloc_pd(me.ibv);
	me.icq = me.ipd ? ibv_create_cq(me.ibv, 512, NULL, NULL, 0) : NULL;
	if (!me.icq || posix_memalign((void **)&me.mem, 4096, BUF_LEN))
		tap_bail("%s: PD / CQ / buffer: %s", dev, strerror(errno));
	memset(me.mem, 0, BUF_LEN);
	me.base = (uintptr_t)me.mem;
	for (i = 0; i < NREGIONS; i++) {
		uint64_t len = i == RW ? RW_LEN : i == RO ? RO_LEN : LOC_LEN;

		me.imr[i] =
		    ibv_reg_mr(me.ipd, me.mem + region_off[i], len, access[i]);
		if (!me.imr[i])
			tap_bail("%s: ibv_reg_mr: %s", dev, strerror(errno));
		me.key[i] = i == LOC ? me.imr[i]->lkey : me.imr[i]->rkey;
	}
}

static void open_vm(const char *dev, const char *netdev, const char *ip,
		    bool overlay, bool server)
{
	static const uint32_t access[NREGIONS] = {
	    PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
		PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC,
	    PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ,
	    PVO_ACCESS_LOCAL_WRITE};
	static const char *const vms[] = {"x", NULL};
	struct sim_vm_opts o = {.name = "x", .ram_size = 64 << 20};
	const char *ov = getenv("T_XHOST_OVERLAY"),
		   *busy = getenv("T_XHOST_BUSY_POLL_US");
	char cfg[1024], err[512], lv[64] = "", rv[64] = "", pip[64] = "";
	char daemon[64] = "";
	int i, st;

	/* latency mode (busy_poll.h) for the benchmark */
	if (busy)
		snprintf(daemon, sizeof(daemon), "busy-poll-us = %d\n",
			 atoi(busy));

	if (overlay) {
		if (!ov || sscanf(ov, "%63[^:]:%63[^:]:%63s", lv, rv, pip) != 3)
			tap_bail("T_XHOST_OVERLAY=LOCAL_VTEP:REMOTE_VTEP:"
				 "PEER_IP needed with the overlay");
		/* 4789 belongs to the hosts' own VXLAN netdevs */
		snprintf(cfg, sizeof(cfg),
			 "[daemon]\n%svtep = %s\nvxlan-port = 4790\n"
			 "[tenant t]\nvni = 7\n"
			 "[vm x]\ntenant = t\nmac = 52:54:00:00:07:0%d\n"
			 "ips = %s\n"
			 "[remote p]\ntenant = t\nvtep = %s\nips = %s\n"
			 "mac = 52:54:00:00:07:0%d\n",
			 daemon, lv, server ? 2 : 1, ip, rv, pip,
			 server ? 1 : 2);
	} else {
		snprintf(cfg, sizeof(cfg),
			 "[daemon]\n%shostverbs-device = %s\n"
			 "[tenant t]\nvni = 7\ntransport = hostverbs\n"
			 "hostverbs-netdev = %s\n"
			 "[vm x]\ntenant = t\nmac = 52:54:00:00:07:01\n"
			 "ips = %s\n",
			 daemon, dev, netdev, ip);
	}
	if (backend_start_config(&me.bp, cfg, vms, NULL, 10000, err,
				 sizeof(err)) < 0)
		tap_bail("%s", err);
	o.socket_path = backend_vm_socket(&me.bp, "x");
	me.vm = sim_vm_open(&o, err, sizeof(err));
	if (!me.vm)
		tap_bail("%s", err);
	me.gid_index = sim_vm_gid_index_ipv4(me.vm, ip);
	if (me.gid_index < 0)
		lost("the VM has no GID for its address");
	memcpy(me.gid, me.vm->gid[me.gid_index], 16);
	st = sim_ctx_open(me.vm, &me.ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&me.ctx, &me.pd);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&me.ctx, 512, &me.cq);
	if (st == PVO_STATUS_OK &&
	    sim_buf_alloc(&me.buf, sim_vm_ram(me.vm), sim_vm_va(me.vm, BUF_LEN),
			  BUF_LEN, 0, SIM_LAYOUT_SCATTER) < 0)
		st = -ENOMEM;
	for (i = 0; i < NREGIONS && st == PVO_STATUS_OK; i++) {
		uint64_t len = i == RW ? RW_LEN : i == RO ? RO_LEN : LOC_LEN;

		st = sim_reg_mr(&me.pd, &me.buf, region_off[i], len, access[i],
				&me.mr[i]);
		me.key[i] = me.mr[i].key;
	}
	if (st != PVO_STATUS_OK)
		lost("VM set-up");
	me.base = me.buf.va;
	fill(0, BUF_LEN, 0, 0);
}

static void close_ep(void)
{
	int i;

	if (me.plain) {
		if (me.iah)
			ibv_destroy_ah(me.iah);
		if (me.isrq)
			ibv_destroy_srq(me.isrq);
		for (i = 0; i < NREGIONS; i++)
			ibv_dereg_mr(me.imr[i]);
		ibv_destroy_cq(me.icq);
		ibv_dealloc_pd(me.ipd);
		ibv_close_device(me.ibv);
		free(me.mem);
		return;
	}
	if (me.has_srq)
		sim_destroy_srq(&me.srq);
	for (i = 0; i < NREGIONS; i++)
		sim_dereg_mr(&me.mr[i]);
	sim_vm_close(me.vm);
}

/* ---- QPs ---- */

static void qp_destroy(void)
{
	if (!qp.qpn)
		return;
	if (me.plain) {
		ibv_destroy_qp(qp.ibv);
		if (me.iah)
			ibv_destroy_ah(me.iah);
		me.iah = NULL;
	} else {
		sim_destroy_qp(&qp.sim);
		if (me.ah)
			sim_destroy_ah(&me.ctx, me.ah);
		me.ah = 0;
	}
	qp.qpn = 0;
}

/* The end's SRQ (made once, kept until the end). */
static int srq_create(void)
{
	if (me.plain) {
		struct ibv_srq_init_attr a = {
		    .attr = {.max_wr = 64, .max_sge = 2}};

		if (!me.isrq)
			me.isrq = ibv_create_srq(me.ipd, &a);
		return me.isrq ? 0 : -errno;
	}
	if (!me.has_srq && sim_create_srq(&me.pd, 64, 2, 0, &me.srq) == 0)
		me.has_srq = true;
	return me.has_srq ? 0 : -EIO;
}

static int qp_create(uint8_t type, bool srq)
{
	qp_destroy();
	if (srq && srq_create())
		return -EIO;
	qp.type = type;
	qp.psn = (uint32_t)(rand() & 0xffffff);
	if (me.plain) {
		struct ibv_qp_init_attr a = {
		    .send_cq = me.icq,
		    .recv_cq = me.icq,
		    .cap = {.max_send_wr = 64,
			    .max_recv_wr = 64,
			    .max_send_sge = 2,
			    .max_recv_sge = 2},
		    .srq = srq ? me.isrq : NULL,
		    .qp_type = type == PVO_QPT_RC   ? IBV_QPT_RC
			       : type == PVO_QPT_UC ? IBV_QPT_UC
						    : IBV_QPT_UD};

		qp.ibv = ibv_create_qp(me.ipd, &a);
		if (!qp.ibv)
			return -errno;
		qp.qpn = qp.ibv->qp_num;
	} else {
		struct sim_qp_init qi = {.type = type,
					 .send_cq = &me.cq,
					 .recv_cq = &me.cq,
					 .sq_entries = 64,
					 .rq_entries = 64,
					 .max_send_sge = 2,
					 .max_recv_sge = 2,
					 .srq = srq ? &me.srq : NULL};
		int st = sim_create_qp(&me.pd, &qi, &qp.sim);

		if (st != PVO_STATUS_OK)
			return st < 0 ? st : -EIO;
		qp.qpn = qp.sim.qpn;
	}
	return 0;
}

/* Connection knobs a case may change (0: defaults). */
struct knobs {
	uint8_t retry_cnt, rnr_retry, min_rnr_timer;
	bool server_srq; /* the server's QP takes its receives from its SRQ */
};

/* In a QP request's type: the server's QP is on its SRQ. */
#define XQP_SRQ 0x100

static int plain_connect(const uint8_t gid[16], uint32_t rqpn, uint32_t rpsn,
			 const struct knobs *k)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.port_num = 1,
				.qkey = UD_QKEY,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						   IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_ATOMIC};
	bool ud = qp.type == PVO_QPT_UD, rc = qp.type == PVO_QPT_RC;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);

	if (ibv_modify_qp(qp.ibv, &a, mask))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = rqpn;
		a.rq_psn = rpsn;
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)me.gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (rc) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer =
			    k->min_rnr_timer ? k->min_rnr_timer : 1;
			mask |=
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(qp.ibv, &a, mask))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = qp.psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		a.timeout = 14;
		a.retry_cnt = k->retry_cnt ? k->retry_cnt : 7;
		a.rnr_retry = k->rnr_retry ? k->rnr_retry : 7;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp.ibv, &a, mask))
		return -errno;
	if (ud) {
		struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

		memcpy(ah.grh.dgid.raw, gid, 16);
		ah.grh.sgid_index = (uint8_t)me.gid_index;
		ah.grh.hop_limit = 64;
		me.iah = ibv_create_ah(me.ipd, &ah);
		if (!me.iah)
			return -errno;
	}
	return 0;
}

/* The QP to the peer's (GID, QPN, PSN); UD: an AH to the GID. */
static int qp_connect(const uint8_t gid[16], uint32_t rqpn, uint32_t rpsn,
		      const struct knobs *k)
{
	struct sim_conn c = {.sgid_index = (uint8_t)me.gid_index,
			     .path_mtu = 3,
			     .sq_psn = qp.psn,
			     .qkey = UD_QKEY,
			     .retry_cnt = k->retry_cnt,
			     .rnr_retry = k->rnr_retry,
			     .min_rnr_timer = k->min_rnr_timer};
	struct sim_peer p = {.qpn = rqpn, .psn = rpsn};
	struct pvo_av av;
	int st;

	if (me.plain)
		return plain_connect(gid, rqpn, rpsn, k);
	memcpy(p.gid, gid, 16);
	st = sim_qp_connect(&qp.sim, &c, qp.type == PVO_QPT_UD ? NULL : &p);
	if (st != PVO_STATUS_OK || qp.type != PVO_QPT_UD)
		return st;
	sim_av_to(&av, &p, (uint8_t)me.gid_index);
	return sim_create_ah(&me.pd, &av, &me.ah);
}

/* ---- data path ---- */

/* A scatter entry: [off, +len) of the buffer under region r's key. */
struct xsge {
	uint64_t off;
	uint32_t len;
	enum region r;
};

static int post_recv_to(bool srq, uint64_t wr_id, const struct xsge *s,
			unsigned int n)
{
	unsigned int i;

	if (me.plain) {
		struct ibv_sge g[2];
		struct ibv_recv_wr w = {.wr_id = wr_id,
					.sg_list = g,
					.num_sge = (int)n},
				   *bad;

		for (i = 0; i < n && i < 2; i++)
			g[i] = (struct ibv_sge){me.base + s[i].off, s[i].len,
						me.imr[s[i].r]->lkey};
		return srq ? -ibv_post_srq_recv(me.isrq, &w, &bad)
			   : -ibv_post_recv(qp.ibv, &w, &bad);
	} else {
		struct sim_sge g[2];

		for (i = 0; i < n && i < 2; i++)
			g[i] = (struct sim_sge){me.base + s[i].off, s[i].len,
						me.key[s[i].r]};
		return srq ? sim_post_srq_recv(&me.srq, wr_id, g, n)
			   : sim_post_recv(&qp.sim, wr_id, g, n);
	}
}

static int post_recv(uint64_t wr_id, const struct xsge *s, unsigned int n)
{
	return post_recv_to(false, wr_id, s, n);
}

/* A send WR; addresses in sge[] are buffer offsets, lkeys region numbers
 * unless raw_lkey (a bad key on purpose). */
struct xwr {
	uint64_t wr_id;
	uint8_t opcode; /* PVO_WR_* == IBV_WR_* */
	bool signaled;
	uint32_t imm;
	unsigned int num_sge;
	struct xsge sge[2];
	uint32_t raw_lkey;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint32_t remote_qpn;
};

static int post_send(const struct xwr *x, unsigned int n)
{
	unsigned int i, j;
	int rc = 0;

	if (me.plain) {
		struct ibv_send_wr w[32], *bad;
		struct ibv_sge g[32][2];

		if (n > 32)
			return -EINVAL;
		for (i = 0; i < n; i++) {
			memset(&w[i], 0, sizeof(w[i]));
			w[i].wr_id = x[i].wr_id;
			w[i].opcode = (enum ibv_wr_opcode)x[i].opcode;
			w[i].send_flags = x[i].signaled ? IBV_SEND_SIGNALED : 0;
			w[i].imm_data = htobe32(x[i].imm);
			w[i].sg_list = g[i];
			w[i].num_sge = (int)x[i].num_sge;
			for (j = 0; j < x[i].num_sge && j < 2; j++)
				g[i][j] = (struct ibv_sge){
				    me.base + x[i].sge[j].off, x[i].sge[j].len,
				    x[i].raw_lkey
					? x[i].raw_lkey
					: me.imr[x[i].sge[j].r]->lkey};
			if (x[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			    x[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
				w[i].wr.atomic.remote_addr = x[i].remote_addr;
				w[i].wr.atomic.rkey = x[i].rkey;
				w[i].wr.atomic.compare_add = x[i].compare_add;
				w[i].wr.atomic.swap = x[i].swap;
			} else if (qp.type == PVO_QPT_UD) {
				w[i].wr.ud.ah = me.iah;
				w[i].wr.ud.remote_qpn = x[i].remote_qpn;
				w[i].wr.ud.remote_qkey = UD_QKEY;
			} else {
				w[i].wr.rdma.remote_addr = x[i].remote_addr;
				w[i].wr.rdma.rkey = x[i].rkey;
			}
			w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		}
		return -ibv_post_send(qp.ibv, w, &bad);
	}
	for (i = 0; i < n && !rc; i++) {
		struct sim_wr w = {.wr_id = x[i].wr_id,
				   .opcode = x[i].opcode,
				   .flags =
				       x[i].signaled ? PVO_WQE_F_SIGNALED : 0,
				   .imm = x[i].imm,
				   .num_sge = x[i].num_sge,
				   .remote_addr = x[i].remote_addr,
				   .rkey = x[i].rkey,
				   .compare_add = x[i].compare_add,
				   .swap = x[i].swap,
				   .ah = me.ah,
				   .remote_qpn = x[i].remote_qpn,
				   .remote_qkey = UD_QKEY};

		for (j = 0; j < x[i].num_sge && j < 2; j++)
			w.sge[j] = (struct sim_sge){
			    me.base + x[i].sge[j].off, x[i].sge[j].len,
			    x[i].raw_lkey ? x[i].raw_lkey
					  : me.key[x[i].sge[j].r]};
		/* one doorbell for the batch: the last WQE rings it */
		rc = i + 1 < n ? sim_post_send_nodb(&qp.sim, &w, 1)
			       : sim_post_send(&qp.sim, &w, 1);
	}
	return rc;
}

/* The next completion, if there is one. */
static bool poll_one(struct xwc *x)
{
	if (me.plain) {
		struct ibv_wc w;

		if (ibv_poll_cq(me.icq, 1, &w) != 1)
			return false;
		*x = (struct xwc){
		    .wr_id = w.wr_id,
		    .status = w.status,
		    .opcode = w.opcode,
		    .flags = (w.wc_flags & IBV_WC_GRH ? PVO_WC_F_GRH : 0) |
			     (w.wc_flags & IBV_WC_WITH_IMM ? PVO_WC_F_IMM : 0),
		    .byte_len = w.byte_len,
		    .imm = be32toh(w.imm_data),
		    .src_qp = w.src_qp};
	} else {
		struct pvo_cqe c;

		if (sim_poll_cq(&me.cq, &c, 1) != 1)
			return false;
		*x = (struct xwc){.wr_id = le64toh(c.wr_id),
				  .status = c.status,
				  .opcode = c.opcode,
				  .flags = c.flags,
				  .byte_len = le32toh(c.byte_len),
				  .imm = be32toh(c.imm_data),
				  .src_qp = le32toh(c.src_qp)};
	}
	return true;
}

/* The benchmark spins; the cases leave the CPU to the back-end. */
static bool busy_poll;

/* At least @min and up to @max completions, waiting up to @ms for the
 * first @min; returns how many. */
static int poll_some(struct xwc *out, int min, int max, int ms)
{
	double end = now_s() + ms / 1000.0;
	int n = 0;

	while (n < max) {
		if (poll_one(&out[n])) {
			n++;
			continue;
		}
		if (n >= min || now_s() > end)
			break;
		/* a spinning poller yields: on a one-CPU host the back-end
		 * that writes the CQE needs the CPU */
		if (busy_poll)
			sched_yield();
		else if (ms > 50)
			usleep(20);
	}
	return n;
}

/* @max completions, or fewer if @ms pass first. */
static int poll_wc(struct xwc *out, int max, int ms)
{
	return poll_some(out, max, max, ms);
}

/* ---- the line protocol ---- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(tx, line, (size_t)n) != n)
		lost("the peer's TCP connection broke");
}

static char *hear(void)
{
	char *nl;

	if (!fgets(peer_line, sizeof(peer_line), rx))
		lost("the peer hung up");
	nl = strchr(peer_line, '\n');
	if (nl)
		*nl = 0;
	return peer_line;
}

/* What one end tells the other of itself. */
struct wire_ep {
	uint8_t gid[16];
	uint64_t base;
	uint32_t key[NREGIONS];
};

static void say_hello(void)
{
	char g[33];

	side_gid_hex(me.gid, g);
	say("HELLO %s %llx %x %x %x", g, (unsigned long long)me.base,
	    me.key[RW], me.key[RO], me.key[LOC]);
}

static bool hear_hello(struct wire_ep *p)
{
	char g[64];
	unsigned long long base;

	if (sscanf(hear(), "HELLO %63s %llx %x %x %x", g, &base, &p->key[RW],
		   &p->key[RO], &p->key[LOC]) != 5 ||
	    !side_gid_parse(g, p->gid))
		return false;
	p->base = base;
	return true;
}

/* ---- the server: an agent doing what each line says ---- */

/* Half round trips: each of @n SENDs of @size bytes is answered with
 * one; the next receive is posted before the answer goes out. */
static void pong(uint64_t n, uint32_t size)
{
	struct xsge s = {RW_OFF, size, RW};
	struct xwr r = {.opcode = PVO_WR_SEND,
			.signaled = true,
			.num_sge = 1,
			.sge = {{LOC_OFF, size, LOC}}};
	struct xwc y;
	uint64_t i, got = 0;

	busy_poll = true;
	/* RC waits through RNR NAKs; a command per receive would be timed */
	sim_settle_receives = false;
	if (post_recv(0, &s, 1)) {
		say("PONGED 0");
		return;
	}
	say("READY");
	for (i = 0; i < n; i++) {
		if (poll_wc(&y, 1, WAIT_MS) != 1 || y.status)
			break;
		if ((i + 1 < n && post_recv(i + 1, &s, 1)) ||
		    post_send(&r, 1) || poll_wc(&y, 1, WAIT_MS) != 1 ||
		    y.status)
			break;
		got++;
	}
	say("PONGED %llu", (unsigned long long)got);
}

static void serve(void)
{
	struct wire_ep peer;
	bool up = true;

	say_hello();
	if (!hear_hello(&peer))
		lost("bad HELLO from the client");
	while (up) {
		char *l = hear(), w[16];
		unsigned long long a = 0, b = 0, c = 0, d = 0;
		struct xwc x;
		int n;

		n = sscanf(l, "%15s %llx %llx %llx %llx", w, &a, &b, &c, &d);
		if (n < 1)
			lost("empty request");
		if (!strcmp(w, "QP") && n == 5) {
			/* type (| XQP_SRQ), client QPN, client PSN, rnr
			 * timer */
			struct knobs k = {.min_rnr_timer = (uint8_t)d};
			int st = qp_create((uint8_t)a, a & XQP_SRQ);

			if (!st)
				st = qp_connect(peer.gid, (uint32_t)b,
						(uint32_t)c, &k);
			say("QP %d %x %x", st, qp.qpn, qp.psn);
		} else if (!strcmp(w, "FILL") && n == 5 && in_buf(a, b)) {
			fill(a, b, (uint32_t)c, d);
			say("OK");
		} else if (!strcmp(w, "CHECK") && n == 5 && in_buf(a, b)) {
			uint64_t first,
			    bad = check(a, b, (uint32_t)c, d, &first);

			say("CHECK %llx %llx", (unsigned long long)bad,
			    (unsigned long long)first);
		} else if (!strcmp(w, "SRQ") && n == 1) {
			say("SRQ %d", srq_create());
		} else if ((!strcmp(w, "RECV") || !strcmp(w, "SRECV")) &&
			   n == 5 && in_buf(b, c) && d < NREGIONS) {
			struct xsge s = {b, (uint32_t)c, (enum region)d};

			say("RECV %d", post_recv_to(w[0] == 'S', a, &s, 1));
		} else if (!strcmp(w, "WC") && n == 2) {
			/* the next completion within a ms, or none */
			if (poll_wc(&x, 1, (int)a) == 1)
				say("WC %llx %x %x %x %x %x %x",
				    (unsigned long long)x.wr_id, x.status,
				    x.opcode, x.flags, x.byte_len, x.imm,
				    x.src_qp);
			else
				say("NONE");
		} else if (!strcmp(w, "U64") && n == 2 && in_buf(a, 8)) {
			uint64_t v;

			mem_read(a, &v, 8);
			say("U64 %llx", (unsigned long long)v);
		} else if (!strcmp(w, "SETU64") && n == 3 && in_buf(a, 8)) {
			uint64_t v = b;

			mem_write(a, &v, 8);
			say("OK");
		} else if (!strcmp(w, "PONG") && n == 3 && b <= LOC_LEN) {
			pong(a, (uint32_t)b);
		} else if (!strcmp(w, "BYE")) {
			up = false;
		} else {
			lost("a request the server does not know");
		}
	}
}

/* ---- the client: cases ---- */

static struct wire_ep peer;
static uint32_t peer_qpn;

static bool rpc_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool rpc_ok(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say("%s", line);
	return !strcmp(hear(), "OK");
}

static void remote_fill(uint64_t off, uint64_t len, uint32_t seed,
			uint64_t start)
{
	if (!rpc_ok("FILL %llx %llx %x %llx", (unsigned long long)off,
		    (unsigned long long)len, seed, (unsigned long long)start))
		lost("FILL failed on the server");
}

/* Bytes of the server's [off, +len) that are not pattern @seed. */
static unsigned long long remote_check(uint64_t off, uint64_t len,
				       uint32_t seed, uint64_t start)
{
	unsigned long long bad, first;

	say("CHECK %llx %llx %x %llx", (unsigned long long)off,
	    (unsigned long long)len, seed, (unsigned long long)start);
	if (sscanf(hear(), "CHECK %llx %llx", &bad, &first) != 2)
		lost("bad CHECK answer");
	if (bad)
		tap_diag("server [%llx, +%llx): %llu bytes differ, the first "
			 "at +%llx",
			 (unsigned long long)off, (unsigned long long)len, bad,
			 first);
	return bad;
}

static int remote_recv_to(bool srq, uint64_t wr_id, uint64_t off, uint32_t len,
			  enum region r)
{
	int st = -1;

	say("%s %llx %llx %x %x", srq ? "SRECV" : "RECV",
	    (unsigned long long)wr_id, (unsigned long long)off, len, r);
	sscanf(hear(), "RECV %d", &st);
	return st;
}

static int remote_recv(uint64_t wr_id, uint64_t off, uint32_t len,
		       enum region r)
{
	return remote_recv_to(false, wr_id, off, len, r);
}

/* The server's next completion within @ms; false if none. */
static bool remote_wc(struct xwc *x, int ms)
{
	unsigned long long id;

	say("WC %x", ms);
	if (sscanf(hear(), "WC %llx %x %x %x %x %x %x", &id, &x->status,
		   &x->opcode, &x->flags, &x->byte_len, &x->imm,
		   &x->src_qp) != 7)
		return false;
	x->wr_id = id;
	return true;
}

static uint64_t remote_u64(uint64_t off)
{
	unsigned long long v = 0;

	say("U64 %llx", (unsigned long long)off);
	sscanf(hear(), "U64 %llx", &v);
	return v;
}

/* A fresh QP of @type at both ends, connected to each other. */
static bool pair(uint8_t type, const struct knobs *k)
{
	int st = qp_create(type, false), rst = -1;
	unsigned int rqpn = 0, rpsn = 0;

	if (st) {
		tap_diag("creating the local QP: %d", st);
		return false;
	}
	say("QP %x %x %x %x", type | (k->server_srq ? XQP_SRQ : 0), qp.qpn,
	    qp.psn, k->min_rnr_timer);
	if (sscanf(hear(), "QP %d %x %x", &rst, &rqpn, &rpsn) != 3 || rst) {
		tap_diag("the server's QP: %d", rst);
		return false;
	}
	peer_qpn = rqpn;
	st = qp_connect(peer.gid, rqpn, rpsn, k);
	if (st)
		tap_diag("connecting the local QP: %d", st);
	return !st;
}

/*
 * After its WQEs completed, the local QP's sq_psn (ibv_query_qp) has
 * moved on by the PSNs they took: the back-end counts them itself (a
 * host QP re-created on a migration's destination starts there), and
 * its count must be the host device's own (rdma res show qp: the
 * kernel's view of the same QP).
 */
static void psn_agrees(const char *what)
{
	struct pvo_qp_attr a;
	char cmd[96], out[4096] = "";
	const char *at;
	unsigned int dev = ~0u;
	size_t got = 0;
	FILE *f;

	if (me.plain)
		return;
	if (sim_query_qp(&qp.sim, &a)) {
		tap_ok(false, "%s: QUERY_QP of the local QP", what);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rdma -j res show qp lqpn %u 2>&1", qp.qpn);
	f = popen(cmd, "r");
	if (f) {
		got = fread(out, 1, sizeof(out) - 1, f);
		pclose(f);
	}
	out[got] = 0;
	at = strstr(out, "\"sq-psn\":");
	if (at)
		sscanf(at + strlen("\"sq-psn\":"), "%u", &dev);
	if (!tap_ok(le32toh(a.sq_psn) == dev && dev != qp.psn,
		    "%s: the QP's sq_psn has moved on from 0x%x to 0x%x, the "
		    "host device's (0x%x)",
		    what, qp.psn, le32toh(a.sq_psn), dev))
		tap_diag("%s: %s", cmd, out);
}

/* The server's QP has no completion to give. */
static bool remote_quiet(int ms)
{
	struct xwc x;

	if (!remote_wc(&x, ms))
		return true;
	tap_diag("the server completed %s (%s, %u bytes)",
		 sim_wc_opcode_name(x.opcode), sim_wc_status_name(x.status),
		 x.byte_len);
	return false;
}

/* @n local completions, each of them in @w. */
static int local_wcs(struct xwc *w, int n)
{
	int got = poll_wc(w, n, WAIT_MS), i;

	for (i = 0; i < got; i++)
		if (w[i].status)
			tap_diag("wr_id %llx: %s",
				 (unsigned long long)w[i].wr_id,
				 sim_wc_status_name(w[i].status));
	return got;
}

static bool all_ok(const struct xwc *w, int got, int n, unsigned int opcode)
{
	int i;

	if (got != n)
		return false;
	for (i = 0; i < n; i++)
		if (w[i].status || w[i].opcode != opcode ||
		    w[i].wr_id != (uint64_t)i)
			return false;
	return true;
}

static struct xwr wr_rdma(uint64_t id, uint8_t op, uint64_t loc, uint32_t len,
			  uint64_t roff, uint32_t rkey)
{
	return (struct xwr){.wr_id = id,
			    .opcode = op,
			    .signaled = true,
			    .num_sge = 1,
			    .sge = {{loc, len, LOC}},
			    .remote_addr = peer.base + roff,
			    .rkey = rkey};
}

static const char *qpt_name(uint8_t type)
{
	return type == PVO_QPT_RC ? "RC" : type == PVO_QPT_UC ? "UC" : "UD";
}

/* SENDs of 1 byte to 64 KiB (multi-packet) with an immediate on the
 * last; the receiver gets each payload and nothing more. */
static void case_send(uint8_t type)
{
	static const uint32_t sizes[] = {1, 4097, 65536, 100};
	const struct knobs k = {0};
	struct xwr w[4];
	struct xwc c[4];
	unsigned long long bad = 0;
	unsigned int i, wrong = 0;
	int got;

	if (!tap_ok(pair(type, &k), "%s: QPs connected across the hosts",
		    qpt_name(type)))
		return;
	remote_fill(RW_OFF, RW_LEN, 1, 0);
	for (i = 0; i < 4; i++) {
		wrong += remote_recv(i, i * 65536, 65536, RW) != 0;
		fill(LOC_OFF + i * 65536, sizes[i], 10 + i, 0);
		w[i] = (struct xwr){
		    .wr_id = i,
		    .opcode = i == 3 ? PVO_WR_SEND_WITH_IMM : PVO_WR_SEND,
		    .signaled = true,
		    .imm = 0xfeed0000 + i,
		    .num_sge = 1,
		    .sge = {{LOC_OFF + i * 65536, sizes[i], LOC}}};
	}
	got = post_send(w, 4) ? 0 : local_wcs(c, 4);
	tap_ok(!wrong && all_ok(c, got, 4, PVO_WC_SEND),
	       "%s: 4 SENDs (1 B to 64 KiB) complete at the sender",
	       qpt_name(type));
	for (i = 0; i < 4; i++) {
		struct xwc r;

		if (!remote_wc(&r, WAIT_MS) || r.status || r.wr_id != i ||
		    r.opcode != PVO_WC_RECV || r.byte_len != sizes[i] ||
		    !!(r.flags & PVO_WC_F_IMM) != (i == 3) ||
		    (i == 3 && r.imm != 0xfeed0003)) {
			wrong++;
			tap_diag("receive %u: %s, %u bytes, flags %x imm %x", i,
				 sim_wc_status_name(r.status), r.byte_len,
				 r.flags, r.imm);
		}
		bad += remote_check(i * 65536, sizes[i], 10 + i, 0);
		bad += remote_check(i * 65536 + sizes[i], 65536 - sizes[i], 1,
				    i * 65536 + sizes[i]);
	}
	tap_ok(!wrong,
	       "%s: the receiver's completions carry length, order and the "
	       "immediate",
	       qpt_name(type));
	tap_ok(!bad,
	       "%s: every payload byte arrived, no byte past it changed "
	       "(%llu wrong)",
	       qpt_name(type), bad);
	psn_agrees(type == PVO_QPT_RC ? "RC SENDs" : "UC SENDs");
}

/* WRITEs (1 byte, 70000 bytes over many pages, WITH_IMM) into the
 * server's memory, which changes exactly there. */
static void case_write(uint8_t type)
{
	const struct knobs k = {0};
	struct xwr w[3];
	struct xwc c[3], r;
	unsigned long long bad = 0;
	int got;

	if (!tap_ok(pair(type, &k), "%s: QPs for RDMA WRITE", qpt_name(type)))
		return;
	remote_fill(RW_OFF, RW_LEN, 2, 0);
	fill(LOC_OFF, 70000, 20, 0);
	w[0] = wr_rdma(0, PVO_WR_RDMA_WRITE, LOC_OFF, 1, 5, peer.key[RW]);
	w[1] =
	    wr_rdma(1, PVO_WR_RDMA_WRITE, LOC_OFF, 70000, 1000, peer.key[RW]);
	w[2] = wr_rdma(2, PVO_WR_RDMA_WRITE_WITH_IMM, LOC_OFF, 4096, 200000,
		       peer.key[RW]);
	w[2].imm = 0xabcd1234;
	remote_recv(99, LOC_OFF, 16, LOC);
	got = post_send(w, 3) ? 0 : local_wcs(c, 3);
	tap_ok(all_ok(c, got, 3, PVO_WC_RDMA_WRITE),
	       "%s: 3 RDMA WRITEs complete at the writer", qpt_name(type));
	tap_ok(remote_wc(&r, WAIT_MS) && !r.status && r.wr_id == 99 &&
		   r.opcode == PVO_WC_RECV_RDMA_WITH_IMM &&
		   r.byte_len == 4096 && (r.flags & PVO_WC_F_IMM) &&
		   r.imm == 0xabcd1234,
	       "%s: WRITE_WITH_IMM completes a receive with its immediate "
	       "and length (%s)",
	       qpt_name(type), sim_wc_status_name(r.status));
	bad += remote_check(5, 1, 20, 0);
	bad += remote_check(1000, 70000, 20, 0);
	bad += remote_check(200000, 4096, 20, 0);
	bad += remote_check(0, 5, 2, 0);
	bad += remote_check(6, 994, 2, 6);
	bad += remote_check(71000, 200000 - 71000, 2, 71000);
	bad += remote_check(204096, RW_LEN - 204096, 2, 204096);
	tap_ok(!bad,
	       "%s: the written bytes are in the server's memory and "
	       "nothing around them changed (%llu wrong)",
	       qpt_name(type), bad);
	psn_agrees(type == PVO_QPT_RC ? "RC WRITEs" : "UC WRITEs");
}

/* READs of the server's read-only MR (64 KiB) and of an odd range of
 * its RW MR into two SGEs. */
static void case_read(void)
{
	const struct knobs k = {0};
	struct xwr w[2];
	struct xwc c[2];
	uint64_t first, bad = 0;
	int got;

	if (!tap_ok(pair(PVO_QPT_RC, &k), "RC: QPs for RDMA READ"))
		return;
	remote_fill(RO_OFF, RO_LEN, 3, 0);
	remote_fill(RW_OFF, 8192, 4, 0);
	fill(LOC_OFF, LOC_LEN, 5, 0);
	w[0] =
	    wr_rdma(0, PVO_WR_RDMA_READ, LOC_OFF, 65536, RO_OFF, peer.key[RO]);
	w[1] = wr_rdma(1, PVO_WR_RDMA_READ, LOC_OFF + 70000, 1000, 17,
		       peer.key[RW]);
	w[1].num_sge = 2;
	w[1].sge[1] = (struct xsge){LOC_OFF + 80000, 2001, LOC};
	got = post_send(w, 2) ? 0 : local_wcs(c, 2);
	tap_ok(all_ok(c, got, 2, PVO_WC_RDMA_READ),
	       "RC: 2 RDMA READs complete");
	bad += check(LOC_OFF, 65536, 3, 0, &first);
	bad += check(LOC_OFF + 70000, 1000, 4, 17, &first);
	bad += check(LOC_OFF + 80000, 2001, 4, 1017, &first);
	bad += check(LOC_OFF + 65536, 70000 - 65536, 5, 65536, &first);
	bad += check(LOC_OFF + 71000, 9000, 5, 71000, &first);
	bad += check(LOC_OFF + 82001, 1000, 5, 82001, &first);
	tap_ok(!bad,
	       "RC: the read bytes landed in their SGEs and nowhere else "
	       "(%llu wrong)",
	       (unsigned long long)bad);
	psn_agrees("RC READs");
}

static void case_atomic(void)
{
	const struct knobs k = {0};
	struct xwr w[3];
	struct xwc c[3];
	uint64_t v[3];
	int got, i;

	if (!tap_ok(pair(PVO_QPT_RC, &k), "RC: QPs for atomics"))
		return;
	if (!rpc_ok("SETU64 40 64") || !rpc_ok("SETU64 48 1111"))
		lost("SETU64");
	for (i = 0; i < 3; i++)
		w[i] = wr_rdma(
		    i,
		    i ? PVO_WR_ATOMIC_CMP_AND_SWP : PVO_WR_ATOMIC_FETCH_AND_ADD,
		    LOC_OFF + 8 * i, 8, i ? 0x48 : 0x40, peer.key[RW]);
	w[0].compare_add = 5;
	w[1].compare_add = 0x1111;
	w[1].swap = 0x2222;
	w[2].compare_add = 7;
	w[2].swap = 9;
	got = post_send(w, 3) ? 0 : local_wcs(c, 3);
	tap_ok(got == 3 && !c[0].status && !c[1].status && !c[2].status &&
		   c[0].opcode == PVO_WC_FETCH_ADD &&
		   c[1].opcode == PVO_WC_COMP_SWAP,
	       "RC: FETCH_ADD and two CMP_SWAPs complete");
	mem_read(LOC_OFF, v, sizeof(v));
	tap_ok(v[0] == 100 && v[1] == 0x1111 && v[2] == 0x2222,
	       "RC: the atomics return the old values (%llu, %llx, %llx)",
	       (unsigned long long)v[0], (unsigned long long)v[1],
	       (unsigned long long)v[2]);
	v[0] = remote_u64(0x40);
	v[1] = remote_u64(0x48);
	tap_ok(v[0] == 105 && v[1] == 0x2222,
	       "RC: the server's words are added to and swapped once (%llu, "
	       "%llx)",
	       (unsigned long long)v[0], (unsigned long long)v[1]);
	psn_agrees("RC atomics");
}

/* UD datagrams: a GRH leads each receive, the source QP is the
 * sender's. */
static void case_ud(void)
{
	static const uint32_t sizes[] = {1, 1000};
	const struct knobs k = {0};
	struct xwr w[2];
	struct xwc c[2];
	unsigned long long bad = 0;
	unsigned int i, wrong = 0;
	int got;

	if (!tap_ok(pair(PVO_QPT_UD, &k), "UD: QPs and an AH across the hosts"))
		return;
	remote_fill(RW_OFF, 65536, 1, 0);
	for (i = 0; i < 2; i++) {
		wrong += remote_recv(i, i * 8192, 8192, RW) != 0;
		fill(LOC_OFF + i * 8192, sizes[i], 30 + i, 0);
		w[i] = (struct xwr){
		    .wr_id = i,
		    .opcode = i ? PVO_WR_SEND_WITH_IMM : PVO_WR_SEND,
		    .signaled = true,
		    .imm = 0x5eed,
		    .num_sge = 1,
		    .sge = {{LOC_OFF + i * 8192, sizes[i], LOC}},
		    .remote_qpn = peer_qpn};
	}
	got = post_send(w, 2) ? 0 : local_wcs(c, 2);
	tap_ok(!wrong && all_ok(c, got, 2, PVO_WC_SEND),
	       "UD: 2 datagrams complete at the sender");
	for (i = 0; i < 2; i++) {
		struct xwc r;

		if (!remote_wc(&r, WAIT_MS) || r.status || r.wr_id != i ||
		    r.byte_len != GRH_LEN + sizes[i] ||
		    !(r.flags & PVO_WC_F_GRH) || r.src_qp != qp.qpn ||
		    !!(r.flags & PVO_WC_F_IMM) != (i == 1)) {
			wrong++;
			tap_diag("datagram %u: %s, %u bytes, flags %x, from "
				 "QPN %x",
				 i, sim_wc_status_name(r.status), r.byte_len,
				 r.flags, r.src_qp);
		}
		bad += remote_check(i * 8192 + GRH_LEN, sizes[i], 30 + i, 0);
		bad += remote_check(i * 8192 + GRH_LEN + sizes[i], 100, 1,
				    i * 8192 + GRH_LEN + sizes[i]);
	}
	tap_ok(!wrong,
	       "UD: each receive has the GRH, the sender's QPN, the length "
	       "and the immediate");
	tap_ok(!bad,
	       "UD: the payloads follow the GRH byte for byte (%llu "
	       "wrong)",
	       bad);
}

/*
 * SENDs into the server's SRQ, which got its receives before any QP
 * used it: two QPs one after the other take them in order from the one
 * queue, each payload checked.
 */
static void case_srq(uint8_t type)
{
	static const uint32_t sizes[] = {1, 4097, 30000, 200};
	const struct knobs k = {.server_srq = true};
	unsigned long long bad = 0;
	unsigned int i, wrong = 0, round;
	int st = -1;

	say("SRQ");
	sscanf(hear(), "SRQ %d", &st);
	if (!tap_ok(st == 0, "%s: the server has an SRQ", qpt_name(type)))
		return;
	remote_fill(RW_OFF, RW_LEN, 1, 0);
	for (i = 0; i < 4; i++)
		wrong +=
		    remote_recv_to(true, 0x50 + i, i * 65536, 65536, RW) != 0;
	for (round = 0; round < 2; round++) {
		struct xwr w[2];
		struct xwc c[2];
		int got;

		if (!pair(type, &k)) {
			wrong++;
			break;
		}
		for (i = 0; i < 2; i++) {
			unsigned int m = round * 2 + i;

			fill(LOC_OFF + m * 32768, sizes[m], 70 + m, 0);
			w[i] = (struct xwr){
			    .wr_id = i,
			    .opcode = PVO_WR_SEND,
			    .signaled = true,
			    .num_sge = 1,
			    .sge = {{LOC_OFF + m * 32768, sizes[m], LOC}}};
		}
		got = post_send(w, 2) ? 0 : local_wcs(c, 2);
		wrong += !all_ok(c, got, 2, PVO_WC_SEND);
		for (i = 0; i < 2; i++) {
			unsigned int m = round * 2 + i;
			struct xwc r;

			if (!remote_wc(&r, WAIT_MS) || r.status ||
			    r.wr_id != 0x50 + m || r.opcode != PVO_WC_RECV ||
			    r.byte_len != sizes[m]) {
				wrong++;
				tap_diag("SRQ receive %u: wr_id %llx, %s, %u "
					 "bytes",
					 m, (unsigned long long)r.wr_id,
					 sim_wc_status_name(r.status),
					 r.byte_len);
			}
			bad += remote_check(m * 65536, sizes[m], 70 + m, 0);
			bad += remote_check(m * 65536 + sizes[m], 64, 1,
					    m * 65536 + sizes[m]);
		}
	}
	tap_ok(!wrong,
	       "%s: two QPs in turn take the SRQ's receives in order (wr_id, "
	       "length)",
	       qpt_name(type));
	tap_ok(!bad,
	       "%s: every payload is in its SRQ receive's buffer, "
	       "nothing past it changed (%llu wrong)",
	       qpt_name(type), bad);
}

/*
 * One SRQ serves host QPs or software ones, decided by its first QP that
 * starts receiving. Here a UD QP (software with an SRQ) decides first; an
 * RC QP on the same SRQ that would connect through the host is refused
 * at RTR with EINVAL. (VM ends only; t-datapath's srq section has host
 * QPs deciding first.)
 */
static void case_srq_kind(void)
{
	const struct knobs k = {0};
	struct sim_qp_init qi = {.type = PVO_QPT_UD,
				 .send_cq = &me.cq,
				 .recv_cq = &me.cq,
				 .sq_entries = 8,
				 .rq_entries = 8,
				 .max_send_sge = 1,
				 .max_recv_sge = 1,
				 .srq = &me.srq};
	struct sim_conn c = {.sgid_index = (uint8_t)me.gid_index,
			     .qkey = UD_QKEY};
	struct sim_qp ud;
	unsigned int rqpn = 0, rpsn = 0;
	int st, rst = -1;

	if (me.plain)
		return;
	/* a fresh SRQ: earlier cases' QPs may have decided this one */
	if (me.has_srq)
		sim_destroy_srq(&me.srq);
	me.has_srq = false;
	st = qp_create(PVO_QPT_RC, true);
	if (!tap_ok(!st && sim_create_qp(&me.pd, &qi, &ud) == PVO_STATUS_OK,
		    "SRQ kinds: an RC and a UD QP on one fresh SRQ (%d)", st))
		return;
	st = sim_qp_connect(&ud, &c, NULL);
	tap_ok(st == PVO_STATUS_OK,
	       "SRQ kinds: the UD QP (software on an SRQ) starts receiving "
	       "first (%d)",
	       st);
	say("QP %x %x %x %x", PVO_QPT_RC, qp.qpn, qp.psn, 0);
	if (sscanf(hear(), "QP %d %x %x", &rst, &rqpn, &rpsn) != 3 || rst)
		tap_diag("the server's QP: %d", rst);
	st = qp_connect(peer.gid, rqpn, rpsn, &k);
	tap_ok(st == PVO_STATUS_EINVAL,
	       "SRQ kinds: the RC QP that would connect through the host on "
	       "that SRQ is refused with EINVAL (%d)",
	       st);
	st = sim_destroy_qp(&ud);
	qp_destroy();
	tap_ok(st == PVO_STATUS_OK && sim_destroy_srq(&me.srq) == 0,
	       "SRQ kinds: both QPs and the SRQ are destroyed");
	me.has_srq = false;
}

/* Whether the host's ARP table has an entry for a.b.c.d (any state). */
static bool in_arp_table(const char *ip)
{
	char line[256], first[64];
	bool found = false;
	FILE *f = fopen("/proc/net/arp", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%63s", first) == 1 && !strcmp(first, ip);
	if (f)
		fclose(f);
	return found;
}

/* RTR of a fresh RC QP toward @ip; its status, *secs the time it took. */
static int connect_to(const char *ip, double *secs)
{
	const struct knobs k = {0};
	uint8_t gid[16];
	double t0;
	int st;

	pvo_gid_from_ipv4(gid, ip);
	st = qp_create(PVO_QPT_RC, false);
	if (st)
		return st;
	t0 = now_s();
	st = qp_connect(gid, 0x11, 1, &k);
	*secs = now_s() - t0;
	return st;
}

/*
 * Addresses in the tenant's subnet that no host answers ARP for. The
 * host device resolves a destination's MAC inside RTR, waiting up to a
 * second; the back-end lets a VM make its loop wait so once, then
 * refuses such addresses at once for a while (hv_neigh.c), and a
 * destination the host has resolved still connects. (VM ends only.)
 */
static void case_unreach(void)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN], what[96];
	unsigned int last, got = 0;
	double secs = 0;
	int st;

	if (me.plain)
		return;
	/* two addresses of the /24 the host never tried (no ARP entry) */
	for (last = 100 + (unsigned int)(getpid() % 100); last < 250 && got < 2;
	     last++) {
		char *ip = got ? b : a;

		snprintf(ip, INET_ADDRSTRLEN, "%u.%u.%u.%u", me.gid[12],
			 me.gid[13], me.gid[14], last);
		got += !in_arp_table(ip);
	}
	if (!tap_ok(got == 2, "unreachable: two addresses nobody has (%s, %s)",
		    a, b))
		return;
	/* the server's address resolved before this VM's waits run out */
	case_send(PVO_QPT_RC);
	st = connect_to(a, &secs);
	tap_ok(st == PVO_STATUS_EHOSTUNREACH && secs > 0.3 && secs < 5,
	       "unreachable: RTR to %s fails with EHOSTUNREACH after the host "
	       "waited for ARP (%s, %.2f s)",
	       a, pvo_status_name(st), secs);
	snprintf(what, sizeof(what), "no host answers for %s", a);
	tap_ok(backend_log_has(&me.bp, what, 0),
	       "unreachable: the back-end's log says \"%s\"", what);
	st = connect_to(a, &secs);
	tap_ok(st == PVO_STATUS_EHOSTUNREACH && secs < 0.3,
	       "unreachable: RTR to %s again fails at once (%s, %.3f s)", a,
	       pvo_status_name(st), secs);
	st = connect_to(b, &secs);
	tap_ok(st == PVO_STATUS_EHOSTUNREACH && secs < 0.3,
	       "unreachable: RTR to another new address %s fails at once: "
	       "this VM waited in vain lately (%s, %.3f s)",
	       b, pvo_status_name(st), secs);
	qp_destroy();
	tap_ok(in_arp_table(b),
	       "unreachable: the refusal had the host resolve %s in the "
	       "background",
	       b);
	/* a destination the host resolved still connects */
	case_send(PVO_QPT_RC);
}

/* One failing WR on fresh RC QPs: its status at the sender, the next
 * one flushed, the server's MRs unchanged. */
static void expect_error(const char *what, struct xwr w,
			 unsigned int want_status)
{
	const struct knobs k = {0};
	/* a READ: a device may have sent it before the error came back */
	struct xwr next =
	    wr_rdma(1, PVO_WR_RDMA_READ, LOC_OFF + 65536, 8, 0, peer.key[RW]);
	struct xwc c[2];
	unsigned long long bad;
	int got;

	if (!pair(PVO_QPT_RC, &k)) {
		tap_ok(false, "%s: QPs connected", what);
		return;
	}
	remote_fill(RW_OFF, RW_LEN + RO_LEN, 6, 0);
	w.wr_id = 0;
	got = post_send(&w, 1) || post_send(&next, 1) ? 0 : local_wcs(c, 2);
	tap_ok(got == 2 && c[0].wr_id == 0 && c[0].status == want_status &&
		   c[1].wr_id == 1 && c[1].status == PVO_WC_WR_FLUSH_ERR,
	       "%s: %s, then the next WR is flushed (%s, %s)", what,
	       sim_wc_status_name(want_status),
	       got > 0 ? sim_wc_status_name(c[0].status) : "-",
	       got > 1 ? sim_wc_status_name(c[1].status) : "-");
	bad = remote_check(RW_OFF, RW_LEN + RO_LEN, 6, 0);
	tap_ok(!bad && remote_quiet(100),
	       "%s: the server's memory is unchanged and it completed "
	       "nothing",
	       what);
}

static void case_errors(void)
{
	struct xwr w;

	fill(LOC_OFF, 8192, 40, 0);
	w = wr_rdma(0, PVO_WR_RDMA_WRITE, LOC_OFF, 4096, 0,
		    peer.key[RW] ^ 0x00ff0000);
	expect_error("WRITE with an rkey the server never gave", w,
		     PVO_WC_REM_ACCESS_ERR);
	w = wr_rdma(0, PVO_WR_RDMA_WRITE, LOC_OFF, 4096, RW_LEN - 100,
		    peer.key[RW]);
	expect_error("WRITE past the end of the server's MR", w,
		     PVO_WC_REM_ACCESS_ERR);
	w = wr_rdma(0, PVO_WR_RDMA_WRITE, LOC_OFF, 100, RO_OFF, peer.key[RO]);
	expect_error("WRITE into an MR without remote write", w,
		     PVO_WC_REM_ACCESS_ERR);
	w = wr_rdma(0, PVO_WR_ATOMIC_FETCH_AND_ADD, LOC_OFF, 8, RO_OFF,
		    peer.key[RO]);
	w.compare_add = 1;
	expect_error("FETCH_ADD on an MR without remote atomics", w,
		     PVO_WC_REM_ACCESS_ERR);
	w = wr_rdma(0, PVO_WR_RDMA_READ, LOC_OFF, 4096, 0, peer.key[RW]);
	w.raw_lkey = me.key[LOC] ^ 0x00ff0000;
	expect_error("READ into an lkey this end never had", w,
		     PVO_WC_LOC_PROT_ERR);
}

/* A SEND longer than the receive: the sender gets REM_INV_REQ_ERR, the
 * receiver LOC_LEN_ERR, and the receive buffer's bytes past its end are
 * untouched. */
static void case_length(void)
{
	const struct knobs k = {0};
	struct xwr w = {.wr_id = 0,
			.opcode = PVO_WR_SEND,
			.signaled = true,
			.num_sge = 1,
			.sge = {{LOC_OFF, 4096, LOC}}};
	struct xwc c, r;
	unsigned long long bad;

	if (!tap_ok(pair(PVO_QPT_RC, &k), "RC: QPs for a too-long SEND"))
		return;
	remote_fill(RW_OFF, 8192, 7, 0);
	remote_recv(5, RW_OFF, 100, RW);
	/* IB: a NAK "invalid request" (REM_INV_REQ_ERR); rdma_rxe NAKs
	 * "remote operational error" */
	if (post_send(&w, 1) || local_wcs(&c, 1) != 1)
		c.status = PVO_WC_GENERAL_ERR;
	tap_ok(c.status == PVO_WC_REM_INV_REQ_ERR ||
		   c.status == PVO_WC_REM_OP_ERR,
	       "RC: a 4096-byte SEND into a 100-byte receive fails at the "
	       "sender (%s)",
	       sim_wc_status_name(c.status));
	if (!remote_wc(&r, WAIT_MS))
		r = (struct xwc){.wr_id = ~0ull, .status = PVO_WC_GENERAL_ERR};
	/* IB: LOC_LEN_ERR; rdma_rxe: LOC_QP_OP_ERR */
	tap_ok(r.wr_id == 5 && (r.status == PVO_WC_LOC_LEN_ERR ||
				r.status == PVO_WC_LOC_QP_OP_ERR),
	       "RC: the receive completes in error (%s)",
	       sim_wc_status_name(r.status));
	bad = remote_check(RW_OFF + 100, 8192 - 100, 7, 100);
	tap_ok(!bad, "RC: nothing past the receive buffer changed (%llu)", bad);
}

/* No receive posted: with rnr_retry 1 the SEND ends in
 * RNR_RETRY_EXC_ERR; with 7 (forever) it waits for a late receive. */
static void case_rnr(void)
{
	struct knobs once = {.rnr_retry = 1, .min_rnr_timer = 1},
		     ever = {.min_rnr_timer = 1};
	struct xwr w = {.wr_id = 0,
			.opcode = PVO_WR_SEND,
			.signaled = true,
			.num_sge = 1,
			.sge = {{LOC_OFF, 64, LOC}}};
	struct xwc c, r;

	fill(LOC_OFF, 64, 50, 0);
	c.status = PVO_WC_GENERAL_ERR;
	if (pair(PVO_QPT_RC, &once) && !post_send(&w, 1))
		local_wcs(&c, 1);
	tap_ok(c.status == PVO_WC_RNR_RETRY_EXC_ERR,
	       "RC: a SEND nobody receives: RNR_RETRY_EXC_ERR (%s)",
	       sim_wc_status_name(c.status));
	if (!pair(PVO_QPT_RC, &ever)) {
		tap_ok(false, "RC: QPs for a late receive");
		return;
	}
	remote_fill(RW_OFF, 64, 0, 0);
	post_send(&w, 1);
	usleep(300000);
	remote_recv(6, RW_OFF, 64, RW);
	tap_ok(local_wcs(&c, 1) == 1 && c.status == PVO_WC_SUCCESS &&
		   remote_wc(&r, WAIT_MS) && r.status == PVO_WC_SUCCESS &&
		   r.byte_len == 64 && !remote_check(RW_OFF, 64, 50, 0),
	       "RC: a SEND waits through RNR NAKs for a late receive and "
	       "arrives");
}

/* The client is in another tenant: its device reaches the server's
 * address only on its own tenant's network. Nothing may cross. */
static void case_cross(void)
{
	struct knobs k = {.retry_cnt = 2};
	struct xwr w[2];
	struct xwc c[2];
	unsigned long long bad;
	int got;

	if (!pair(PVO_QPT_RC, &k)) {
		tap_ok(true, "another tenant: connecting to the server is "
			     "refused");
		return;
	}
	remote_fill(RW_OFF, RW_LEN, 8, 0);
	remote_recv(7, RW_OFF, 4096, RW);
	fill(LOC_OFF, 4096, 60, 0);
	w[0] =
	    wr_rdma(0, PVO_WR_RDMA_WRITE, LOC_OFF, 4096, 65536, peer.key[RW]);
	w[1] = (struct xwr){.wr_id = 1,
			    .opcode = PVO_WR_SEND,
			    .signaled = true,
			    .num_sge = 1,
			    .sge = {{LOC_OFF, 4096, LOC}}};
	got = post_send(w, 2) ? 0 : local_wcs(c, 2);
	tap_ok(got == 2 && c[0].status == PVO_WC_RETRY_EXC_ERR &&
		   c[1].status == PVO_WC_WR_FLUSH_ERR,
	       "another tenant: the WRITE ends in RETRY_EXC_ERR, the SEND is "
	       "flushed (%s, %s)",
	       got > 0 ? sim_wc_status_name(c[0].status) : "-",
	       got > 1 ? sim_wc_status_name(c[1].status) : "-");
	bad = remote_check(RW_OFF, RW_LEN, 8, 0);
	tap_ok(!bad && remote_quiet(500),
	       "another tenant: the server's memory is unchanged and its "
	       "receive still waits (%llu bytes changed)",
	       bad);
}

/* WRITE bandwidth (64 KiB, 16 in flight) and SEND half round trip. */
static void case_bench(void)
{
	const char *e = getenv("T_XHOST_BENCH_ITERS");
	unsigned int iters = e ? (unsigned int)atoi(e) : 2000, posted = 0,
		     done = 0, bad = 0, got = 0, i,
		     pongs = iters / 4 ? iters / 4 : 1;
	const struct knobs k = {0};
	struct xsge s = {LOC_OFF + 65536, 64, LOC};
	struct xwr p = {.opcode = PVO_WR_SEND,
			.signaled = true,
			.num_sge = 1,
			.sge = {{LOC_OFF, 64, LOC}}};
	struct xwc c[16];
	double t0, t;
	int n;

	busy_poll = true;
	/* RC waits through RNR NAKs; a command per receive would be timed */
	sim_settle_receives = false;
	if (!tap_ok(pair(PVO_QPT_RC, &k), "bench: QPs connected"))
		return;
	t0 = now_s();
	while (done < iters && !bad) {
		while (posted < iters && posted - done < 16) {
			struct xwr w =
			    wr_rdma(posted, PVO_WR_RDMA_WRITE, LOC_OFF, 65536,
				    (posted % 4) * 65536, peer.key[RW]);

			if (post_send(&w, 1))
				break;
			posted++;
		}
		n = poll_some(c, 1, 16, WAIT_MS);
		if (!n)
			break;
		for (i = 0; i < (unsigned int)n; i++)
			bad += c[i].status != PVO_WC_SUCCESS;
		done += (unsigned int)n;
	}
	t = now_s() - t0;
	if (!tap_ok(done == iters && !bad,
		    "bench: %u WRITEs of 64 KiB complete (%u done, %u failed)",
		    iters, done, bad))
		return;
	printf("# bench: write_bw_MBps=%.1f size=65536 iters=%u\n",
	       iters * 65536.0 / t / 1e6, iters);
	if (!pair(PVO_QPT_RC, &k))
		return;
	say("PONG %x 40", pongs);
	if (strcmp(hear(), "READY"))
		lost("PONG");
	t0 = now_s();
	for (i = 0; i < pongs; i++) {
		if (post_recv(i, &s, 1) || post_send(&p, 1) ||
		    poll_wc(c, 2, WAIT_MS) != 2 || c[0].status || c[1].status)
			break;
		got++;
	}
	t = now_s() - t0;
	tap_ok(got == pongs && !strncmp(hear(), "PONGED", 6),
	       "bench: %u 64-byte SENDs answered", pongs);
	printf("# bench: half_rtt_us=%.1f size=64 iters=%u\n",
	       t / (2.0 * got) * 1e6, got);
}

static bool wanted(const char *cases, const char *name)
{
	size_t n = strlen(name);
	const char *p = cases;

	while ((p = strstr(p, name))) {
		if ((p == cases || p[-1] == ',') && (!p[n] || p[n] == ','))
			return true;
		p += n;
	}
	return false;
}

static void client(const char *cases)
{
	say_hello();
	if (!hear_hello(&peer))
		lost("bad HELLO from the server");
	if (wanted(cases, "send"))
		case_send(PVO_QPT_RC);
	if (wanted(cases, "write"))
		case_write(PVO_QPT_RC);
	if (wanted(cases, "read"))
		case_read();
	if (wanted(cases, "atomic"))
		case_atomic();
	if (wanted(cases, "uc")) {
		case_send(PVO_QPT_UC);
		case_write(PVO_QPT_UC);
	}
	if (wanted(cases, "ud"))
		case_ud();
	if (wanted(cases, "srq")) {
		case_srq(PVO_QPT_RC);
		case_srq_kind();
	}
	if (wanted(cases, "errors")) {
		case_errors();
		case_length();
	}
	if (wanted(cases, "rnr"))
		case_rnr();
	if (wanted(cases, "cross"))
		case_cross();
	if (wanted(cases, "unreach"))
		case_unreach();
	if (wanted(cases, "bench"))
		case_bench();
	qp_destroy();
	say("BYE");
}

static int tcp_server(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), fd;

	if (l < 0 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (void *)&a, sizeof(a)) || listen(l, 1))
		tap_bail("listening on TCP port %d: %s", port, strerror(errno));
	printf("# listening on TCP port %d\n", port);
	fd = accept(l, NULL, NULL);
	close(l);
	return fd;
}

static int tcp_client(const char *server, int port)
{
	int fd = side_connect(server, port, 100);

	if (fd < 0 && errno == EINVAL)
		tap_bail("%s is not an IPv4 address", server);
	if (fd < 0)
		tap_bail("nobody listens on %s port %d: start the server side "
			 "first",
			 server, port);
	return fd;
}

int main(void)
{
	const char *env = getenv("T_XHOST"), *port_s = getenv("T_XHOST_PORT"),
		   *cases = getenv("T_XHOST_CASES"),
		   *tr = getenv("T_XHOST_TRANSPORT");
	char role[16], kind[16], dev[64], netdev[16], ip[64], srv[64] = "";
	int port = port_s ? atoi(port_s) : TCP_PORT, n;
	bool server;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned int)getpid());
	/* the server's receives are the device's before it says RECV 0, so
	 * the client's UC and UD messages find them (sim_verbs.h) */
	sim_settle_receives = true;
	n = env ? sscanf(env, "%15[^:]:%15[^:]:%63[^:]:%15[^:]:%63[^:]:%63s",
			 role, kind, dev, netdev, ip, srv)
		: 0;
	server = n >= 5 && !strcmp(role, "server");
	if (n < 5 || (!server && n != 6) ||
	    (strcmp(kind, "vm") && strcmp(kind, "plain")))
		tap_bail("T_XHOST=server|client:vm|plain:DEV:NETDEV:IP[:SERVER]"
			 " needed");
	me.plain = !strcmp(kind, "plain");
	if (me.plain)
		open_plain(dev, ip);
	else
		open_vm(dev, netdev, ip, tr && !strcmp(tr, "overlay"), server);
	tap_diag("%s (%s) on %s, GID index %d", role, kind, dev, me.gid_index);
	tx = server ? tcp_server(port) : tcp_client(srv, port);
	rx = tx >= 0 ? fdopen(dup(tx), "r") : NULL;
	if (!rx)
		tap_bail("TCP: %s", strerror(errno));
	if (server)
		serve();
	else
		client(cases ? cases
			     : "send,write,read,atomic,uc,ud,srq,errors,rnr");
	qp_destroy();
	fclose(rx);
	close(tx);
	if (!me.plain) {
		char err[512];

		int st;

		close_ep();
		st = backend_stop(&me.bp, 5000);
		tap_ok(st == 0, "%s: back-end exits cleanly (%s)", role,
		       backend_describe(&me.bp));
		tap_ok(backend_sanitizer_report(&me.bp, err, sizeof(err)) == 0,
		       "%s: no sanitizer report in the back-end's log", role);
		backend_cleanup(&me.bp, tap_failures() > 0);
	} else {
		close_ep();
	}
	tap_done_testing();
	return tap_exit_status();
}
