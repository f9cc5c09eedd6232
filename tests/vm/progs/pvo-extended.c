// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-extended: the extended verbs API in one process, on QPs looped back
 * through the device: an RC pair, a UC pair and a UD pair, created with
 * ibv_create_qp_ex (send_ops_flags) on CQs from ibv_create_cq_ex, every
 * send posted with the ibv_wr_* API and every completion polled with
 * ibv_start_poll / ibv_next_poll / ibv_end_poll and checked through the
 * ibv_wc_read_* accessors.
 *
 *   pvo-extended -d DEV -g GID_INDEX
 *
 * Covered: SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM,
 * RDMA_READ, ATOMIC_CMP_AND_SWP (a match and a mismatch),
 * ATOMIC_FETCH_AND_ADD, each with its data or result checked; SGE lists,
 * inline data (single and list, and IBV_SEND_INLINE with SGEs); UD with
 * wr_set_ud_addr (GRH, src_qp); wr_flags (unsignaled, sq_sig_all); a
 * batch of several WRs in one wr_start / wr_complete; wr_abort (nothing
 * posted, the SQ reusable); a CQ from ibv_create_cq_ex under ibv_poll_cq
 * and a completion channel; errors: send_ops_flags the device lacks and
 * CQ fields it lacks at create time, too many SGEs (EINVAL at
 * wr_complete, nothing posted), a bad lkey (a LOC_PROT_ERR completion);
 * ibv_query_device_ex against ibv_query_device; ibv_resize_cq and
 * ibv_modify_srq (IBV_SRQ_MAX_WR) with work outstanding.
 *
 * Prints one TAP line per check ("ok N - ..."), then
 *   pvo-extended: passed=N failed=M
 * and exits 0 only if every check passed. On a device other than
 * pvrdma_overlay* (rdma_rxe as the reference) the checks of what our
 * provider reports and refuses are skipped and a bad lkey may complete
 * with LOC_QP_OP_ERR, as rxe reports it.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define BUF_LEN		65536
#define SEND_OFF	0		/* data the requester sends */
#define RECV_OFF	8192		/* receive buffers */
#define RDMA_OFF	16384		/* RDMA WRITE / READ targets */
#define READ_OFF	24576		/* where RDMA READ lands */
#define ATOMIC_OFF	32768		/* the responder's 64-bit target */
#define RESULT_OFF	32832		/* the requester's atomic results */
#define MSG		200
#define CQE		64
#define SQ_DEPTH	16
#define RQ_DEPTH	16
#define MAX_SGE		4
#define MAX_INLINE	128
#define GRH_LEN		40
#define QKEY		0x11111111u
#define WAIT_MS		20000		/* for a completion that must come */
#define QUIET_MS	1000		/* for one that must not */

#define WC_FLAGS	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |		\
			 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |	\
			 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |		\
			 IBV_WC_EX_WITH_DLID_PATH_BITS)

#define RC_OPS	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
		 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
		 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |	\
		 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define UC_OPS	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
		 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define UD_OPS	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

/* One QP with its CQs and its registered buffer. */
struct side {
	const char *name;
	struct ibv_cq_ex *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct pt_qp_info info;
};

/* What the ibv_wc_read_* accessors said about one completion. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm;		/* host order, valid with IBV_WC_WITH_IMM */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint32_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

static struct pt_dev dev;
static bool is_pvo;
static struct ibv_comp_channel *channel;
static struct side rc_a, rc_b, uc_a, uc_b, ud_a, ud_b;
static struct ibv_ah *ah;

static void xread(struct ibv_cq_ex *cq, struct xwc *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->vendor_err = ibv_wc_read_vendor_err(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	if (w->status != IBV_WC_SUCCESS)
		return;		/* the rest is valid on success only */
	w->byte_len = ibv_wc_read_byte_len(cq);
	if (w->wc_flags & IBV_WC_WITH_IMM)
		w->imm = be32toh(ibv_wc_read_imm_data(cq));
	w->src_qp = ibv_wc_read_src_qp(cq);
	w->slid = ibv_wc_read_slid(cq);
	w->sl = ibv_wc_read_sl(cq);
	w->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/*
 * Collects up to n completions within timeout_ms, each poll session
 * (start_poll, next_poll..., end_poll) taking as many as are there.
 * Returns how many; *max_session (if set) gets the most one session took.
 */
static int xpoll(struct ibv_cq_ex *cq, struct xwc *w, int n, int timeout_ms,
		 int *max_session)
{
	struct ibv_poll_cq_attr attr = {};
	uint64_t deadline = pt_now_ms() + timeout_ms;
	int got = 0, in_session, ret;

	if (max_session)
		*max_session = 0;
	while (got < n) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			if (pt_now_ms() > deadline)
				break;
			continue;
		}
		if (ret) {
			errno = ret;
			pt_die("ibv_start_poll");
		}
		xread(cq, &w[got++]);
		in_session = 1;
		while (got < n) {
			ret = ibv_next_poll(cq);
			if (ret == ENOENT)
				break;
			if (ret) {
				errno = ret;
				pt_die("ibv_next_poll");
			}
			xread(cq, &w[got++]);
			in_session++;
		}
		ibv_end_poll(cq);
		if (max_session && in_session > *max_session)
			*max_session = in_session;
	}
	return got;
}

/* One completion that must come. */
static bool xpoll1(struct ibv_cq_ex *cq, struct xwc *w)
{
	if (xpoll(cq, w, 1, WAIT_MS, NULL) == 1)
		return true;
	memset(w, 0, sizeof(*w));
	w->status = -1;
	printf("# no completion within %d ms\n", WAIT_MS);
	return false;
}

/* No completion for QUIET_MS. */
static bool quiet(struct ibv_cq_ex *cq)
{
	struct xwc w;

	if (xpoll(cq, &w, 1, QUIET_MS, NULL) == 0)
		return true;
	printf("# unexpected completion: wr_id %#llx status %s opcode %d\n",
	       (unsigned long long)w.wr_id, ibv_wc_status_str(w.status), w.opcode);
	return false;
}

static void show(const char *what, const struct xwc *w)
{
	printf("# %s: wr_id %#llx status %s (%d) opcode %d vendor_err %#x byte_len %u "
	       "imm %#x qp_num %#x src_qp %#x wc_flags %#x slid %u sl %u dlid_path_bits %u\n",
	       what, (unsigned long long)w->wr_id, ibv_wc_status_str(w->status), w->status,
	       w->opcode, w->vendor_err, w->byte_len, w->imm, w->qp_num, w->src_qp,
	       w->wc_flags, w->slid, w->sl, w->dlid_path_bits);
}

/* A successful requester completion of s with wr_id and opcode. */
static bool sent_ok(const struct side *s, const struct xwc *w, uint64_t wr_id,
		    enum ibv_wc_opcode opcode)
{
	bool ok = w->status == IBV_WC_SUCCESS && w->wr_id == wr_id &&
		  w->opcode == opcode && w->qp_num == s->qp->qp_num &&
		  w->vendor_err == 0;

	if (!ok)
		show("requester completion", w);
	return ok;
}

/* A successful responder completion of s. */
static bool recv_ok(const struct side *s, const struct xwc *w, uint64_t wr_id,
		    enum ibv_wc_opcode opcode, uint32_t byte_len, unsigned int wc_flags,
		    uint32_t imm)
{
	bool ok = w->status == IBV_WC_SUCCESS && w->wr_id == wr_id &&
		  w->opcode == opcode && w->byte_len == byte_len &&
		  w->qp_num == s->qp->qp_num && w->wc_flags == wc_flags &&
		  (!(wc_flags & IBV_WC_WITH_IMM) || w->imm == imm) &&
		  w->slid == 0 && w->dlid_path_bits == 0;

	if (!ok) {
		show("responder completion", w);
		printf("# expected: wr_id %#llx opcode %d byte_len %u qp_num %#x wc_flags %#x imm %#x\n",
		       (unsigned long long)wr_id, opcode, byte_len, s->qp->qp_num, wc_flags, imm);
	}
	return ok;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	struct pt_stream st;

	pt_stream_init(&st, seed);
	pt_stream_fill(&st, p, n);
}

static bool same(const void *a, const void *b, size_t n, const char *what)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		if (x[i] != y[i]) {
			printf("# %s: byte %zu is %#x, expected %#x\n", what, i, x[i], y[i]);
			return false;
		}
	return true;
}

static void post_recv(struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		pt_die("%s: ibv_post_recv", s->name);
}

static struct ibv_cq_ex *make_cq(struct ibv_comp_channel *ch)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = CQE, .channel = ch, .wc_flags = WC_FLAGS,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(dev.ctx, &a);

	if (!cq)
		pt_die("ibv_create_cq_ex");
	return cq;
}

static void init_attr(struct ibv_qp_init_attr_ex *a, struct side *s,
		      enum ibv_qp_type type, uint64_t ops, int sig_all)
{
	memset(a, 0, sizeof(*a));
	a->send_cq = ibv_cq_ex_to_cq(s->scq);
	a->recv_cq = ibv_cq_ex_to_cq(s->rcq);
	a->qp_type = type;
	a->sq_sig_all = sig_all;
	a->cap.max_send_wr = SQ_DEPTH;
	a->cap.max_recv_wr = RQ_DEPTH;
	a->cap.max_send_sge = MAX_SGE;
	a->cap.max_recv_sge = 1;
	a->cap.max_inline_data = MAX_INLINE;
	a->comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a->pd = dev.pd;
	a->send_ops_flags = ops;
}

static void side_init(struct side *s, const char *name, enum ibv_qp_type type,
		      uint64_t ops, int sig_all, struct ibv_comp_channel *rch)
{
	struct ibv_qp_init_attr_ex a;

	s->name = name;
	s->scq = make_cq(NULL);
	s->rcq = make_cq(rch);
	init_attr(&a, s, type, ops, sig_all);
	s->qp = ibv_create_qp_ex(dev.ctx, &a);
	if (!s->qp)
		pt_die("%s: ibv_create_qp_ex", name);
	s->qpx = ibv_qp_to_qp_ex(s->qp);
	if (!s->qpx) {
		errno = 0;
		pt_die("%s: ibv_qp_to_qp_ex gave NULL", name);
	}
	s->buf = aligned_alloc(4096, BUF_LEN);
	if (!s->buf)
		pt_die("aligned_alloc");
	memset(s->buf, 0, BUF_LEN);
	s->mr = ibv_reg_mr(dev.pd, s->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (!s->mr)
		pt_die("%s: ibv_reg_mr", name);
	pt_local_info(&dev, s->qp, &s->info);
	s->info.addr = (uintptr_t)s->buf;
	s->info.rkey = s->mr->rkey;
}

static void connect_pair(struct side *a, struct side *b)
{
	int err = pt_connect_qp(&dev, a->qp, &a->info, &b->info, &pt_conn_default);

	if (!err)
		err = pt_connect_qp(&dev, b->qp, &b->info, &a->info, &pt_conn_default);
	if (err) {
		errno = err;
		pt_die("connecting %s and %s", a->name, b->name);
	}
}

static uint64_t remote(const struct side *s, size_t off)
{
	return (uintptr_t)s->buf + off;
}

static uint64_t local(const struct side *s, size_t off)
{
	return (uintptr_t)s->buf + off;
}

/* ------------------------------------------------------------------ */

static void test_create_errors(void)
{
	static const struct {
		uint64_t flag;
		const char *name;
	} bad_ops[] = {
		{ IBV_QP_EX_WITH_TSO, "TSO" },
		{ IBV_QP_EX_WITH_ATOMIC_WRITE, "ATOMIC_WRITE" },
	};
	struct ibv_cq_init_attr_ex ca = { .cqe = 4 };
	struct ibv_qp_init_attr_ex a;
	struct side tmp = { .name = "tmp" };
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp;
	unsigned int i;

	if (!is_pvo) {
		pt_tap_ok(true, "create errors # SKIP what a device lacks differs from pvrdma_overlay");
		return;
	}
	tmp.scq = tmp.rcq = make_cq(NULL);
	for (i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		init_attr(&a, &tmp, IBV_QPT_RC, IBV_QP_EX_WITH_SEND | bad_ops[i].flag, 0);
		errno = 0;
		qp = ibv_create_qp_ex(dev.ctx, &a);
		pt_tap_ok(!qp && (errno == EOPNOTSUPP || errno == EINVAL),
			  "ibv_create_qp_ex with send_ops_flags SEND | %s fails (%s)",
			  bad_ops[i].name, strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
	init_attr(&a, &tmp, IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_READ, 0);
	errno = 0;
	qp = ibv_create_qp_ex(dev.ctx, &a);
	pt_tap_ok(!qp && (errno == EOPNOTSUPP || errno == EINVAL),
		  "ibv_create_qp_ex: RDMA_READ on a UD QP fails (%s)", strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	init_attr(&a, &tmp, IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV, 0);
	errno = 0;
	qp = ibv_create_qp_ex(dev.ctx, &a);
	pt_tap_ok(!qp && (errno == EOPNOTSUPP || errno == EINVAL),
		  "ibv_create_qp_ex: SEND_WITH_INV on a UC QP fails (%s)", strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	init_attr(&a, &tmp, IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, 0);
	errno = 0;
	qp = ibv_create_qp_ex(dev.ctx, &a);
	pt_tap_ok(!qp && (errno == EOPNOTSUPP || errno == EINVAL),
		  "ibv_create_qp_ex: atomics on a UC QP fail (%s)", strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);

	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	cq = ibv_create_cq_ex(dev.ctx, &ca);
	pt_tap_ok(!cq && errno == EOPNOTSUPP,
		  "ibv_create_cq_ex with completion timestamps: EOPNOTSUPP (%s)",
		  strerror(errno));
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	ca.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;
	errno = 0;
	cq = ibv_create_cq_ex(dev.ctx, &ca);
	pt_tap_ok(!cq && errno == EOPNOTSUPP,
		  "ibv_create_cq_ex with a flow tag: EOPNOTSUPP (%s)", strerror(errno));
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	ibv_destroy_cq(ibv_cq_ex_to_cq(tmp.scq));
}

static void test_query_device_ex(void)
{
	struct ibv_device_attr_ex x;
	const struct ibv_device_attr *o = &x.orig_attr;
	const uint64_t no_caps = IBV_DEVICE_XRC |
				 IBV_DEVICE_MEM_WINDOW_TYPE_2A |
				 IBV_DEVICE_MEM_MGT_EXTENSIONS |
				 IBV_DEVICE_RESIZE_MAX_WR |
				 IBV_DEVICE_UD_IP_CSUM | IBV_DEVICE_RAW_IP_CSUM;
	int ret;

	memset(&x, 0xa5, sizeof(x));
	ret = ibv_query_device_ex(dev.ctx, NULL, &x);
	pt_tap_ok(ret == 0 && o->max_qp_wr == dev.attr.max_qp_wr &&
		  o->max_sge == dev.attr.max_sge && o->max_cqe == dev.attr.max_cqe &&
		  o->max_qp == dev.attr.max_qp && o->max_mr_size == dev.attr.max_mr_size &&
		  o->max_srq_wr == dev.attr.max_srq_wr &&
		  o->atomic_cap == dev.attr.atomic_cap &&
		  !strcmp(o->fw_ver, dev.attr.fw_ver),
		  "ibv_query_device_ex: the limits of ibv_query_device (max_qp_wr %d, "
		  "max_sge %d, max_cqe %d, fw %s)", o->max_qp_wr, o->max_sge, o->max_cqe,
		  o->fw_ver);
	if (!is_pvo) {
		pt_tap_ok(true, "ibv_query_device_ex says what pvrdma_overlay lacks "
			  "# SKIP not pvrdma_overlay");
		return;
	}
	pt_tap_ok(ret == 0 && !(o->device_cap_flags & no_caps) &&
		  !(x.device_cap_flags_ex & no_caps) &&
		  x.odp_caps.general_caps == 0 &&
		  x.odp_caps.per_transport_caps.rc_odp_caps == 0 &&
		  x.xrc_odp_caps == 0 && x.max_dm_size == 0 && x.tso_caps.max_tso == 0 &&
		  x.completion_timestamp_mask == 0 && x.hca_core_clock == 0 &&
		  x.rss_caps.supported_qpts == 0 && x.raw_packet_caps == 0 &&
		  x.tm_caps.max_num_tags == 0 && x.cq_mod_caps.max_cq_count == 0,
		  "ibv_query_device_ex: no XRC, type 2A windows, ODP, device memory, TSO, "
		  "RSS, timestamps, tag matching, CQ moderation (cap flags %#llx)",
		  (unsigned long long)x.device_cap_flags_ex);
}

/* RC: every opcode once, each through the ibv_wr_* API. */
static void test_rc_opcodes(void)
{
	struct side *a = &rc_a, *b = &rc_b;
	struct ibv_qp_ex *x = a->qpx;
	static const char inl[] = "inline: copied at wr_set_inline_data time";
	struct ibv_data_buf pieces[3];
	struct ibv_sge sg[3];
	uint8_t want[MSG];
	struct xwc s = {}, r = {};
	uint64_t *target = (uint64_t *)(b->buf + ATOMIC_OFF);
	uint64_t *result = (uint64_t *)(a->buf + RESULT_OFF);
	int ret;
	bool ok;

	/* SEND, one SGE */
	fill(a->buf + SEND_OFF, MSG, 1);
	post_recv(b, 101, RECV_OFF, MSG);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 1, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) && recv_ok(b, &r, 101, IBV_WC_RECV, MSG, 0, 0) &&
	     same(b->buf + RECV_OFF, a->buf + SEND_OFF, MSG, "received");
	pt_tap_ok(ok, "rc: wr_send + wr_set_sge: SEND and RECV completions "
		  "(opcode, byte_len, qp_num, wc_flags), payload");

	/* SEND_WITH_IMM from three SGEs */
	fill(a->buf + SEND_OFF, 3 * MSG, 2);
	sg[0] = (struct ibv_sge){ local(a, SEND_OFF), 50, a->mr->lkey };
	sg[1] = (struct ibv_sge){ local(a, SEND_OFF + 300), 70, a->mr->lkey };
	sg[2] = (struct ibv_sge){ local(a, SEND_OFF + 501), 80, a->mr->lkey };
	memcpy(want, a->buf + SEND_OFF, 50);
	memcpy(want + 50, a->buf + SEND_OFF + 300, 70);
	memcpy(want + 120, a->buf + SEND_OFF + 501, 80);
	post_recv(b, 102, RECV_OFF, MSG);
	ibv_wr_start(x);
	x->wr_id = 2;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send_imm(x, htobe32(0xfeedf00d));
	ibv_wr_set_sge_list(x, 3, sg);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 2, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) &&
	     recv_ok(b, &r, 102, IBV_WC_RECV, MSG, IBV_WC_WITH_IMM, 0xfeedf00d) &&
	     same(b->buf + RECV_OFF, want, MSG, "received");
	pt_tap_ok(ok, "rc: wr_send_imm + wr_set_sge_list (3 SGEs): imm, "
		  "IBV_WC_WITH_IMM, concatenated payload");

	/* SEND inline: the source changes right after the setter */
	memcpy(a->buf + SEND_OFF, inl, sizeof(inl));
	post_recv(b, 103, RECV_OFF, MSG);
	ibv_wr_start(x);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, a->buf + SEND_OFF, sizeof(inl));
	memset(a->buf + SEND_OFF, 'X', sizeof(inl));
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 3, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) && recv_ok(b, &r, 103, IBV_WC_RECV, sizeof(inl), 0, 0) &&
	     same(b->buf + RECV_OFF, inl, sizeof(inl), "received");
	pt_tap_ok(ok, "rc: wr_set_inline_data: the data as it was at the setter");

	/* SEND inline from a list of pieces */
	pieces[0] = (struct ibv_data_buf){ (void *)inl, 7 };
	pieces[1] = (struct ibv_data_buf){ (void *)(inl + 7), 0 };
	pieces[2] = (struct ibv_data_buf){ (void *)(inl + 7), sizeof(inl) - 7 };
	post_recv(b, 104, RECV_OFF, MSG);
	memset(b->buf + RECV_OFF, 0, MSG);
	ibv_wr_start(x);
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htobe32(4));
	ibv_wr_set_inline_data_list(x, 3, pieces);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 4, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) &&
	     recv_ok(b, &r, 104, IBV_WC_RECV, sizeof(inl), IBV_WC_WITH_IMM, 4) &&
	     same(b->buf + RECV_OFF, inl, sizeof(inl), "received");
	pt_tap_ok(ok, "rc: wr_set_inline_data_list (3 pieces, one empty) with SEND_WITH_IMM");

	/* SEND with IBV_SEND_INLINE and SGEs: copied at the setter too */
	fill(a->buf + SEND_OFF, 100, 5);
	memcpy(want, a->buf + SEND_OFF, 100);
	post_recv(b, 105, RECV_OFF, MSG);
	ibv_wr_start(x);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), 100);
	/* our provider copies here (rdma-core leaves it open) */
	if (is_pvo)
		memset(a->buf + SEND_OFF, 0, 100);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 5, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) && recv_ok(b, &r, 105, IBV_WC_RECV, 100, 0, 0) &&
	     same(b->buf + RECV_OFF, want, 100, "received");
	pt_tap_ok(ok, "rc: wr_flags IBV_SEND_INLINE + wr_set_sge: inline SEND");

	/* RDMA WRITE from two SGEs */
	fill(a->buf + SEND_OFF, 1000, 6);
	sg[0] = (struct ibv_sge){ local(a, SEND_OFF + 1), 333, a->mr->lkey };
	sg[1] = (struct ibv_sge){ local(a, SEND_OFF + 600), 400, a->mr->lkey };
	memset(b->buf + RDMA_OFF, 0, 1000);
	ibv_wr_start(x);
	x->wr_id = 6;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, b->mr->rkey, remote(b, RDMA_OFF + 5));
	ibv_wr_set_sge_list(x, 2, sg);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 6, IBV_WC_RDMA_WRITE) &&
	     same(b->buf + RDMA_OFF + 5, a->buf + SEND_OFF + 1, 333, "written") &&
	     same(b->buf + RDMA_OFF + 5 + 333, a->buf + SEND_OFF + 600, 400, "written") &&
	     b->buf[RDMA_OFF + 4] == 0 && b->buf[RDMA_OFF + 5 + 733] == 0 &&
	     quiet(b->rcq);
	pt_tap_ok(ok, "rc: wr_rdma_write + 2 SGEs: data in place, bytes around untouched, "
		  "no responder completion");

	/* RDMA WRITE inline */
	ibv_wr_start(x);
	x->wr_id = 7;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, b->mr->rkey, remote(b, RDMA_OFF + 2000));
	ibv_wr_set_inline_data(x, (void *)inl, sizeof(inl));
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 7, IBV_WC_RDMA_WRITE) &&
	     same(b->buf + RDMA_OFF + 2000, inl, sizeof(inl), "written");
	pt_tap_ok(ok, "rc: wr_rdma_write + wr_set_inline_data");

	/* RDMA WRITE with immediate */
	fill(a->buf + SEND_OFF, 777, 8);
	post_recv(b, 108, RECV_OFF, MSG);
	ibv_wr_start(x);
	x->wr_id = 8;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(x, b->mr->rkey, remote(b, RDMA_OFF + 3000), htobe32(0xa5a5f00d));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), 777);
	ret = ibv_wr_complete(x);
	/* byte_len: pvrdma_overlay reports the length written */
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 8, IBV_WC_RDMA_WRITE) &&
	     xpoll1(b->rcq, &r) &&
	     recv_ok(b, &r, 108, IBV_WC_RECV_RDMA_WITH_IMM, is_pvo ? 777 : r.byte_len,
		     IBV_WC_WITH_IMM, 0xa5a5f00d) &&
	     same(b->buf + RDMA_OFF + 3000, a->buf + SEND_OFF, 777, "written");
	pt_tap_ok(ok, "rc: wr_rdma_write_imm: data written, RECV_RDMA_WITH_IMM with imm "
		  "(byte_len %u)", r.byte_len);

	/* RDMA READ into two SGEs */
	fill(b->buf + RDMA_OFF, 900, 9);
	memset(a->buf + READ_OFF, 0, 1000);
	sg[0] = (struct ibv_sge){ local(a, READ_OFF), 400, a->mr->lkey };
	sg[1] = (struct ibv_sge){ local(a, READ_OFF + 500), 500, a->mr->lkey };
	ibv_wr_start(x);
	x->wr_id = 9;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, b->mr->rkey, remote(b, RDMA_OFF));
	ibv_wr_set_sge_list(x, 2, sg);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 9, IBV_WC_RDMA_READ) &&
	     same(a->buf + READ_OFF, b->buf + RDMA_OFF, 400, "read") &&
	     same(a->buf + READ_OFF + 500, b->buf + RDMA_OFF + 400, 500, "read") &&
	     a->buf[READ_OFF + 400] == 0;
	pt_tap_ok(ok, "rc: wr_rdma_read into 2 SGEs: the remote bytes, in order");

	/* atomics: a compare that matches, one that does not, an add */
	*target = 0x1122334455667788ull;
	*result = 0;
	ibv_wr_start(x);
	x->wr_id = 10;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_cmp_swp(x, b->mr->rkey, remote(b, ATOMIC_OFF),
			      0x1122334455667788ull, 0x0badc0de0badc0deull);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, RESULT_OFF), 8);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 10, IBV_WC_COMP_SWAP) &&
	     *result == 0x1122334455667788ull && *target == 0x0badc0de0badc0deull;
	if (!ok)
		printf("# result %#llx target %#llx\n", (unsigned long long)*result,
		       (unsigned long long)*target);
	pt_tap_ok(ok, "rc: wr_atomic_cmp_swp, equal: old value returned, swapped");

	*result = 0;
	ibv_wr_start(x);
	x->wr_id = 11;
	ibv_wr_atomic_cmp_swp(x, b->mr->rkey, remote(b, ATOMIC_OFF), 1, 2);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, RESULT_OFF), 8);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 11, IBV_WC_COMP_SWAP) &&
	     *result == 0x0badc0de0badc0deull && *target == 0x0badc0de0badc0deull;
	if (!ok)
		printf("# result %#llx target %#llx\n", (unsigned long long)*result,
		       (unsigned long long)*target);
	pt_tap_ok(ok, "rc: wr_atomic_cmp_swp, not equal: old value returned, unchanged");

	*result = 0;
	ibv_wr_start(x);
	x->wr_id = 12;
	ibv_wr_atomic_fetch_add(x, b->mr->rkey, remote(b, ATOMIC_OFF), 0x0100000000000001ull);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, RESULT_OFF), 8);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 12, IBV_WC_FETCH_ADD) &&
	     *result == 0x0badc0de0badc0deull && *target == 0x0cadc0de0badc0dfull;
	if (!ok)
		printf("# result %#llx target %#llx\n", (unsigned long long)*result,
		       (unsigned long long)*target);
	pt_tap_ok(ok, "rc: wr_atomic_fetch_add: old value returned, sum stored");
	pt_tap_ok(quiet(b->rcq) && quiet(a->scq),
		  "rc: no completion beyond the expected ones");
}

/* Several WRs in one wr_start / wr_complete, some unsignaled. */
static void test_rc_batch(void)
{
	struct side *a = &rc_a, *b = &rc_b;
	struct ibv_qp_ex *x = a->qpx;
	struct xwc s[5] = {}, r[2] = {};
	int n, nr, max_session, ret;
	bool ok;

	fill(a->buf + SEND_OFF, 4 * MSG, 20);
	memset(b->buf + RDMA_OFF, 0, 4 * MSG);
	memset(a->buf + READ_OFF, 0, MSG);
	post_recv(b, 201, RECV_OFF, MSG);
	post_recv(b, 202, RECV_OFF + MSG, MSG);

	ibv_wr_start(x);
	x->wr_id = 21;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	x->wr_id = 22;
	x->wr_flags = 0;		/* unsignaled: no completion */
	ibv_wr_rdma_write(x, b->mr->rkey, remote(b, RDMA_OFF));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF + MSG), MSG);
	x->wr_id = 23;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, b->mr->rkey, remote(b, RDMA_OFF + MSG));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF + 2 * MSG), MSG);
	x->wr_id = 24;
	ibv_wr_send_imm(x, htobe32(24));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF + 3 * MSG), MSG);
	x->wr_id = 25;
	ibv_wr_rdma_read(x, b->mr->rkey, remote(b, RDMA_OFF));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, READ_OFF), MSG);
	ret = ibv_wr_complete(x);

	/* wait for the receiver, then let the requester's CQEs settle so
	 * that one poll session can take them all */
	nr = xpoll(b->rcq, r, 2, WAIT_MS, NULL);
	usleep(QUIET_MS * 1000);
	n = xpoll(a->scq, s, 5, WAIT_MS, &max_session);
	ok = ret == 0 && n == 4 && sent_ok(a, &s[0], 21, IBV_WC_SEND) &&
	     sent_ok(a, &s[1], 23, IBV_WC_RDMA_WRITE) &&
	     sent_ok(a, &s[2], 24, IBV_WC_SEND) && sent_ok(a, &s[3], 25, IBV_WC_RDMA_READ);
	pt_tap_ok(ok, "rc batch: 5 WRs in one wr_complete, 4 signaled: 4 completions in "
		  "order, none for the unsignaled WRITE (%d)", n);
	pt_tap_ok(max_session == 4,
		  "rc batch: one start_poll / next_poll session took all 4 (%d)",
		  max_session);
	ok = nr == 2 && recv_ok(b, &r[0], 201, IBV_WC_RECV, MSG, 0, 0) &&
	     recv_ok(b, &r[1], 202, IBV_WC_RECV, MSG, IBV_WC_WITH_IMM, 24) &&
	     same(b->buf + RECV_OFF, a->buf + SEND_OFF, MSG, "SEND") &&
	     same(b->buf + RECV_OFF + MSG, a->buf + SEND_OFF + 3 * MSG, MSG, "SEND_IMM") &&
	     same(b->buf + RDMA_OFF, a->buf + SEND_OFF + MSG, MSG, "WRITE") &&
	     same(b->buf + RDMA_OFF + MSG, a->buf + SEND_OFF + 2 * MSG, MSG, "WRITE") &&
	     same(a->buf + READ_OFF, a->buf + SEND_OFF + MSG, MSG, "READ");
	pt_tap_ok(ok, "rc batch: both receives, both writes and the read (after the "
		  "unsignaled write) carry the right bytes");
}

/* n signaled RDMA WRITEs of MSG bytes, wr_ids from first, in batches of
 * at most half the SQ, waiting for room (completions stay unpolled). */
static int post_writes(struct side *a, struct side *b, uint64_t first, int n)
{
	struct ibv_qp_ex *x = a->qpx;
	uint64_t deadline = pt_now_ms() + WAIT_MS;
	int done = 0, k, ret;

	while (done < n) {
		k = n - done < SQ_DEPTH / 2 ? n - done : SQ_DEPTH / 2;
		ibv_wr_start(x);
		for (int i = 0; i < k; i++) {
			x->wr_id = first + done + i;
			x->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_rdma_write(x, b->mr->rkey, remote(b, RDMA_OFF));
			ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
		}
		ret = ibv_wr_complete(x);
		if (ret == ENOMEM && pt_now_ms() < deadline) {
			usleep(1000);
			continue;
		}
		if (ret)
			return ret;
		done += k;
	}
	return 0;
}

/*
 * ibv_resize_cq with completions outstanding: refused below their number,
 * and above it they are all still there, in order, and the CQ holds more
 * than it could before.
 */
static void test_rc_resize_cq(void)
{
	struct side *a = &rc_a, *b = &rc_b;
	struct ibv_cq *cq = ibv_cq_ex_to_cq(a->scq);
	int old = cq->cqe, n, i, good, ret, ret2;
	struct xwc w[2 * CQE + 64];

	ret = post_writes(a, b, 300, 6);
	usleep(QUIET_MS * 1000);
	ret2 = ibv_resize_cq(cq, 2);
	pt_tap_ok(ret == 0 && ret2 == EINVAL,
		  "resize_cq to 2 with 6 completions outstanding: EINVAL (%d)", ret2);
	ret2 = ibv_resize_cq(cq, 2 * CQE + 32);
	pt_tap_ok(ret2 == 0 && cq->cqe >= 2 * CQE + 32,
		  "resize_cq from %d to %d entries (%d)", old, cq->cqe, ret2);
	n = xpoll(a->scq, w, 6, WAIT_MS, NULL);
	for (i = 0, good = 0; i < n; i++)
		good += sent_ok(a, &w[i], 300 + i, IBV_WC_RDMA_WRITE);
	pt_tap_ok(n == 6 && good == 6,
		  "the 6 completions made before the resize are there, in order (%d)", n);
	ret = post_writes(a, b, 400, old + 16);
	n = ret ? 0 : xpoll(a->scq, w, old + 16, WAIT_MS, NULL);
	for (i = 0, good = 0; i < n; i++)
		good += sent_ok(a, &w[i], 400 + i, IBV_WC_RDMA_WRITE);
	pt_tap_ok(n == old + 16 && good == n,
		  "%d completions now fit in the CQ (more than its old %d) (%d)",
		  old + 16, old, n);
}

/* IBV_EVENT_SRQ_LIMIT_REACHED events for srq within QUIET_MS (other
 * async events are acknowledged and skipped). */
static int srq_limit_events(struct ibv_srq *srq)
{
	struct pollfd pfd = { .fd = dev.ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n = 0;

	while (poll(&pfd, 1, QUIET_MS) == 1) {
		if (ibv_get_async_event(dev.ctx, &ev))
			break;
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq)
			n++;
		ibv_ack_async_event(&ev);
	}
	return n;
}

/*
 * ibv_modify_srq with IBV_SRQ_MAX_WR and receives posted: refused below
 * their number; above it they are all still there and taken in order,
 * and the SRQ holds more than it could before.
 */
static void test_srq_resize(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {};
	struct ibv_srq_attr attr = {};
	struct side *a = &rc_a;
	struct ibv_qp *snd, *rcv;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	uint8_t *buf = aligned_alloc(4096, 65536);
	struct ibv_mr *mr;
	int i, n, err, ret, ret2;

	srq = ibv_create_srq(dev.pd, &sa);
	scq = ibv_create_cq(dev.ctx, 128, NULL, NULL, 0);
	rcq = ibv_create_cq(dev.ctx, 128, NULL, NULL, 0);
	if (!buf || !srq || !scq || !rcq)
		pt_die("SRQ resize: create_srq / create_cq");
	mr = ibv_reg_mr(dev.pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		pt_die("SRQ resize: reg_mr");
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_recv_sge = 1;
	qa.send_cq = scq;
	qa.recv_cq = scq;
	snd = ibv_create_qp(dev.pd, &qa);
	qa.recv_cq = rcq;
	qa.srq = srq;
	rcv = ibv_create_qp(dev.pd, &qa);
	if (!snd || !rcv)
		pt_die("SRQ resize: create_qp");
	err = pt_connect_pair(&dev, snd, rcv, &pt_conn_default);
	if (err) {
		errno = err;
		pt_die("SRQ resize: connect");
	}
	for (i = 0, ret = 0; i < 64 && !ret; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + i * 1024, 1024, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 500 + i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		memset(buf + i * 1024, 0, 1024);
		ret = ibv_post_srq_recv(srq, &wr, &bad);
		if (i == 5) {
			attr.max_wr = 4;
			ret2 = ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR);
			pt_tap_ok(ret == 0 && ret2 == EINVAL,
				  "modify_srq to max_wr 4 with 6 receives posted: EINVAL (%d)",
				  ret2);
			attr.max_wr = 64;
			ret2 = ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR);
			memset(&attr, 0, sizeof(attr));
			if (!ret2)
				ret2 = ibv_query_srq(srq, &attr);
			pt_tap_ok(ret2 == 0 && attr.max_wr >= 64,
				  "modify_srq to max_wr 64 with 6 receives posted (%d, max_wr %u)",
				  ret2, attr.max_wr);
		}
	}
	pt_tap_ok(!ret, "58 more receives posted to the resized SRQ (%s)", strerror(ret));
	memset(&attr, 0, sizeof(attr));
	attr.srq_limit = 60;
	ret = ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT);
	pt_tap_ok(ret == 0, "modify_srq arms srq_limit 60 with 64 receives posted (%d)", ret);
	for (i = 0, n = 0; i < 64; i++) {
		struct ibv_sge sge = { local(a, SEND_OFF), 100 + i, a->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 600 + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		memset(a->buf + SEND_OFF, 0x40 + i, 100 + i);
		if (ibv_post_send(snd, &wr, &bad) || !pt_poll(scq, &wc, WAIT_MS) ||
		    wc.status != IBV_WC_SUCCESS || !pt_poll(rcq, &wc, WAIT_MS))
			break;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 500u + i ||
		    wc.byte_len != 100u + i || buf[i * 1024] != 0x40 + i ||
		    buf[i * 1024 + 99 + i] != 0x40 + i || buf[i * 1024 + 100 + i]) {
			printf("# SRQ receive %d: wr_id %llu %s byte_len %u\n", i,
			       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
			       wc.byte_len);
			break;
		}
		n++;
	}
	pt_tap_ok(n == 64, "64 SENDs take the 6 receives posted before the resize and "
		  "the 58 after it, in order, with their bytes (%d)", n);
	n = srq_limit_events(srq);
	pt_tap_ok(n == 1, "one IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ, when fewer than "
		  "60 receives were left (%d)", n);
	ibv_destroy_qp(snd);
	ibv_destroy_qp(rcv);
	ibv_destroy_srq(srq);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	free(buf);
}

/* One signaled RDMA WRITE of MSG bytes from a's SEND_OFF to (rkey, addr). */
static bool write_to(struct side *a, uint32_t rkey, uint64_t addr, uint64_t id)
{
	struct ibv_qp_ex *x = a->qpx;
	struct xwc w = {};

	ibv_wr_start(x);
	x->wr_id = id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, rkey, addr);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	return ibv_wr_complete(x) == 0 && xpoll1(a->scq, &w) &&
	       sent_ok(a, &w, id, IBV_WC_RDMA_WRITE);
}

/* ibv_rereg_mr moves an MR to other memory: its key (the same, as on
 * rdma_rxe and mlx5) reaches the new memory. */
static void test_rereg_mr(void)
{
	struct side *a = &rc_a;
	uint8_t *m1 = aligned_alloc(4096, 8192), *m2 = aligned_alloc(4096, 8192);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint8_t first[MSG];
	struct ibv_mr *mr;
	uint32_t rkey1;
	int ret;

	if (!m1 || !m2)
		pt_die("aligned_alloc");
	memset(m1, 0, 8192);
	memset(m2, 0, 8192);
	mr = ibv_reg_mr(dev.pd, m1, 8192, acc);
	if (!mr)
		pt_die("ibv_reg_mr");
	rkey1 = mr->rkey;
	fill(a->buf + SEND_OFF, MSG, 61);
	memcpy(first, a->buf + SEND_OFF, MSG);
	pt_tap_ok(write_to(a, mr->rkey, (uintptr_t)m1 + 100, 501) &&
		  same(m1 + 100, a->buf + SEND_OFF, MSG, "m1"),
		  "rereg: a WRITE lands in the MR's first memory");
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, m2, 8192, 0);
	pt_tap_ok(ret == 0 && mr->rkey == rkey1,
		  "ibv_rereg_mr(CHANGE_TRANSLATION) to other memory: the rkey "
		  "stays (0x%x -> 0x%x, %d)", rkey1, mr->rkey, ret);
	fill(a->buf + SEND_OFF, MSG, 62);
	pt_tap_ok(write_to(a, rkey1, (uintptr_t)m2 + 100, 502) &&
		  same(m2 + 100, a->buf + SEND_OFF, MSG, "m2") &&
		  same(m1 + 100, first, MSG, "m1 unchanged"),
		  "rereg: a WRITE with the rkey lands in the new memory, the "
		  "old memory keeps what it had");
	ibv_dereg_mr(mr);
	free(m1);
	free(m2);
}

/*
 * SEND_WITH_INV from user space, on a pair of its own: the rkey named is
 * an ordinary MR's, which no responder may invalidate (only fast-reg MRs
 * and memory windows can be), so the requester gets REM_INV_REQ_ERR and
 * the receive completes with LOC_ACCESS_ERR.
 */
static void test_rc_send_inv(void)
{
	struct side a = {}, b = {};
	struct xwc s = {}, r = {};
	bool got_s, got_r;

	side_init(&a, "inv-a", IBV_QPT_RC, RC_OPS | IBV_QP_EX_WITH_SEND_WITH_INV, 0,
		  NULL);
	side_init(&b, "inv-b", IBV_QPT_RC, RC_OPS, 0, NULL);
	connect_pair(&a, &b);
	post_recv(&b, 701, RECV_OFF, MSG);
	fill(a.buf + SEND_OFF, MSG, 70);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 700;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(a.qpx, b.mr->rkey);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, local(&a, SEND_OFF), MSG);
	pt_tap_ok(ibv_wr_complete(a.qpx) == 0,
		  "rc: ibv_wr_send_inv posts (RC offers SEND_WITH_INV)");
	got_s = xpoll1(a.scq, &s);
	got_r = xpoll1(b.rcq, &r);
	pt_tap_ok(got_s && s.wr_id == 700 && s.status == IBV_WC_REM_INV_REQ_ERR &&
		  got_r && r.wr_id == 701 && r.status == IBV_WC_LOC_ACCESS_ERR,
		  "rc: SEND_WITH_INV naming an ordinary MR's rkey: REM_INV_REQ_ERR at "
		  "the sender (%s), LOC_ACCESS_ERR at the receiver (%s)",
		  got_s ? ibv_wc_status_str(s.status) : "none",
		  got_r ? ibv_wc_status_str(r.status) : "none");
}

/* wr_abort, and a batch that fails at wr_complete: nothing goes out. */
static void test_rc_abort_and_einval(void)
{
	struct side *a = &rc_a, *b = &rc_b;
	struct ibv_qp_ex *x = a->qpx;
	struct ibv_sge sg[MAX_SGE + 1];
	struct xwc s = {}, r = {};
	int i, ret;
	bool ok;

	post_recv(b, 301, RECV_OFF, MSG);
	memset(b->buf + RECV_OFF, 0, MSG);
	memset(a->buf + SEND_OFF, 'A', MSG);
	ibv_wr_start(x);
	x->wr_id = 31;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	ibv_wr_abort(x);
	pt_tap_ok(quiet(a->scq) && quiet(b->rcq) && b->buf[RECV_OFF] == 0,
		  "rc: wr_abort: no completion on either side, nothing received");

	for (i = 0; i <= MAX_SGE; i++)
		sg[i] = (struct ibv_sge){ local(a, SEND_OFF + 10 * i), 10, a->mr->lkey };
	ibv_wr_start(x);
	x->wr_id = 32;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	x->wr_id = 33;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, MAX_SGE + 1, sg);
	ret = ibv_wr_complete(x);
	pt_tap_ok(ret == EINVAL, "rc: %d SGEs on a QP of max_send_sge %d: wr_complete "
		  "returns EINVAL (%d)", MAX_SGE + 1, MAX_SGE, ret);
	pt_tap_ok(quiet(a->scq) && quiet(b->rcq) && b->buf[RECV_OFF] == 0,
		  "rc: nothing of the failed batch was posted (not even its good first WR)");

	fill(a->buf + SEND_OFF, MSG, 34);
	ibv_wr_start(x);
	x->wr_id = 34;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 34, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) && recv_ok(b, &r, 301, IBV_WC_RECV, MSG, 0, 0) &&
	     same(b->buf + RECV_OFF, a->buf + SEND_OFF, MSG, "received") &&
	     quiet(a->scq);
	pt_tap_ok(ok, "rc: after the abort and the failed batch the SQ works: one SEND, "
		  "one completion, the new payload in the first receive");
}

/* A CQ from ibv_create_cq_ex under ibv_poll_cq and a completion channel. */
static void test_classic_poll_and_events(void)
{
	struct side *a = &rc_a, *b = &rc_b;
	struct ibv_qp_ex *x = a->qpx;
	struct ibv_cq *rcq = ibv_cq_ex_to_cq(b->rcq), *ev_cq;
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	struct ibv_wc wc;
	struct xwc s = {};
	void *ev_ctx;
	int ret, n;
	bool ok;

	if (ibv_req_notify_cq(rcq, 0))
		pt_die("ibv_req_notify_cq");
	fill(a->buf + SEND_OFF, MSG, 40);
	post_recv(b, 401, RECV_OFF, MSG);
	ibv_wr_start(x);
	x->wr_id = 41;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htobe32(41));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	ret = ibv_wr_complete(x);
	n = poll(&pfd, 1, WAIT_MS);
	ok = ret == 0 && n == 1 && ibv_get_cq_event(channel, &ev_cq, &ev_ctx) == 0 &&
	     ev_cq == rcq;
	if (ok)
		ibv_ack_cq_events(rcq, 1);
	pt_tap_ok(ok, "cq_ex with a channel: armed, the RECV raises a completion event");
	ok = pt_poll(rcq, &wc, WAIT_MS) == 1 && wc.status == IBV_WC_SUCCESS &&
	     wc.wr_id == 401 && wc.opcode == IBV_WC_RECV && wc.byte_len == MSG &&
	     (wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == 41 &&
	     wc.qp_num == b->qp->qp_num &&
	     same(b->buf + RECV_OFF, a->buf + SEND_OFF, MSG, "received");
	pt_tap_ok(ok, "cq_ex: ibv_poll_cq reads it like any CQ (wr_id, opcode, byte_len, imm)");
	pt_tap_ok(xpoll1(a->scq, &s) && sent_ok(a, &s, 41, IBV_WC_SEND),
		  "cq_ex: the requester completion");
}

/* A bad lkey: a completion with an error status (last RC test: the QP
 * ends in ERR). */
static void test_rc_bad_lkey(void)
{
	struct side *a = &rc_a;
	struct ibv_qp_ex *x = a->qpx;
	struct xwc s = {};
	int ret;
	bool ok;

	ibv_wr_start(x);
	x->wr_id = 51;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey ^ 0x5a5a00, local(a, SEND_OFF), MSG);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && s.wr_id == 51 &&
	     s.qp_num == a->qp->qp_num &&
	     (s.status == IBV_WC_LOC_PROT_ERR ||
	      (!is_pvo && s.status == IBV_WC_LOC_QP_OP_ERR));
	if (!ok)
		show("bad lkey", &s);
	pt_tap_ok(ok, "rc: a bad lkey: wr_complete 0, then a completion with %s (vendor_err %#x)",
		  ok ? ibv_wc_status_str(s.status) : "IBV_WC_LOC_PROT_ERR", s.vendor_err);
}

/* UC: sq_sig_all with wr_flags 0; SEND, WRITE, WRITE_IMM. */
static void test_uc(void)
{
	struct side *a = &uc_a, *b = &uc_b;
	struct ibv_qp_ex *x = a->qpx;
	struct xwc s[3] = {}, r[2] = {};
	int n, nr, ret;
	bool ok;

	fill(a->buf + SEND_OFF, 3 * MSG, 60);
	memset(b->buf + RDMA_OFF, 0, 2 * MSG);
	post_recv(b, 601, RECV_OFF, MSG);
	post_recv(b, 602, RECV_OFF + MSG, MSG);
	ibv_wr_start(x);
	x->wr_flags = 0;		/* sq_sig_all signals them anyway */
	x->wr_id = 61;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	x->wr_id = 62;
	ibv_wr_rdma_write(x, b->mr->rkey, remote(b, RDMA_OFF));
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF + MSG), MSG);
	x->wr_id = 63;
	ibv_wr_rdma_write_imm(x, b->mr->rkey, remote(b, RDMA_OFF + MSG), htobe32(63));
	ibv_wr_set_inline_data(x, a->buf + SEND_OFF + 2 * MSG, MAX_INLINE);
	ret = ibv_wr_complete(x);
	n = xpoll(a->scq, s, 3, WAIT_MS, NULL);
	ok = ret == 0 && n == 3 && sent_ok(a, &s[0], 61, IBV_WC_SEND) &&
	     sent_ok(a, &s[1], 62, IBV_WC_RDMA_WRITE) &&
	     sent_ok(a, &s[2], 63, IBV_WC_RDMA_WRITE);
	pt_tap_ok(ok, "uc: sq_sig_all: 3 WRs with wr_flags 0, 3 completions (%d)", n);
	nr = xpoll(b->rcq, r, 2, WAIT_MS, NULL);
	ok = nr == 2 && recv_ok(b, &r[0], 601, IBV_WC_RECV, MSG, 0, 0) &&
	     recv_ok(b, &r[1], 602, IBV_WC_RECV_RDMA_WITH_IMM,
		     is_pvo ? MAX_INLINE : r[1].byte_len, IBV_WC_WITH_IMM, 63) &&
	     same(b->buf + RECV_OFF, a->buf + SEND_OFF, MSG, "SEND") &&
	     same(b->buf + RDMA_OFF, a->buf + SEND_OFF + MSG, MSG, "WRITE") &&
	     same(b->buf + RDMA_OFF + MSG, a->buf + SEND_OFF + 2 * MSG, MAX_INLINE,
		  "WRITE_IMM");
	pt_tap_ok(ok, "uc: SEND, WRITE and inline WRITE_WITH_IMM arrive with the right bytes");
}

/*
 * The sl of a UD receive with a GRH: on pvrdma_overlay the RoCE header
 * type, as mlx5 reports it (0x8 | 2 for IPv4, 0x8 | 1 for IPv6), which
 * UCX's ud_verbs needs; rxe reports 0.
 */
static uint8_t ud_sl_expected(void)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };

	if (!is_pvo)
		return 0;
	return memcmp(dev.gid.raw, v4, sizeof(v4)) ? 0x9 : 0xa;
}

/* UD: wr_set_ud_addr; GRH, src_qp, byte_len + 40. */
static void test_ud(void)
{
	struct side *a = &ud_a, *b = &ud_b;
	struct ibv_qp_ex *x = a->qpx;
	static const char inl[] = "a UD datagram, inline, with immediate data";
	struct xwc s = {}, r = {};
	uint8_t sl = ud_sl_expected();
	int ret;
	bool ok;

	fill(a->buf + SEND_OFF, MSG, 70);
	memset(b->buf + RECV_OFF, 0, GRH_LEN + MSG);
	post_recv(b, 701, RECV_OFF, GRH_LEN + MSG);
	ibv_wr_start(x);
	x->wr_id = 71;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, b->qp->qp_num, QKEY);
	ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 71, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) &&
	     recv_ok(b, &r, 701, IBV_WC_RECV, GRH_LEN + MSG, IBV_WC_GRH, 0) &&
	     r.src_qp == a->qp->qp_num && r.sl == sl &&
	     same(b->buf + RECV_OFF + GRH_LEN, a->buf + SEND_OFF, MSG, "received");
	if (!ok)
		show("ud receive", &r);
	pt_tap_ok(ok, "ud: wr_set_ud_addr + wr_set_sge: RECV with IBV_WC_GRH, byte_len %d + 40, "
		  "src_qp = sender, qp_num, sl %#x, slid 0, data after the GRH", MSG, sl);

	memset(b->buf + RECV_OFF, 0, GRH_LEN + MSG);
	post_recv(b, 702, RECV_OFF, GRH_LEN + MSG);
	ibv_wr_start(x);
	x->wr_id = 72;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send_imm(x, htobe32(0x12345678));
	ibv_wr_set_inline_data(x, (void *)inl, sizeof(inl));
	ibv_wr_set_ud_addr(x, ah, b->qp->qp_num, QKEY);
	ret = ibv_wr_complete(x);
	ok = ret == 0 && xpoll1(a->scq, &s) && sent_ok(a, &s, 72, IBV_WC_SEND) &&
	     xpoll1(b->rcq, &r) &&
	     recv_ok(b, &r, 702, IBV_WC_RECV, GRH_LEN + sizeof(inl),
		     IBV_WC_GRH | IBV_WC_WITH_IMM, 0x12345678) &&
	     r.src_qp == a->qp->qp_num &&
	     same(b->buf + RECV_OFF + GRH_LEN, inl, sizeof(inl), "received");
	pt_tap_ok(ok, "ud: wr_send_imm + inline data (address set last): "
		  "IBV_WC_GRH | IBV_WC_WITH_IMM, imm, src_qp, payload");

	if (is_pvo) {
		ibv_wr_start(x);
		x->wr_id = 73;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, a->mr->lkey, local(a, SEND_OFF), MSG);
		ret = ibv_wr_complete(x);
		pt_tap_ok(ret == EINVAL && quiet(a->scq),
			  "ud: a WR without wr_set_ud_addr: EINVAL at wr_complete, nothing sent");
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: pvo-extended -d DEV -g GID_INDEX\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct pt_args args = { 0 };
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pt_parse_args(argc, argv, "", NULL, NULL, &args, usage);
	if (args.peer)
		usage(); /* every QP is local */
	srand48(getpid());
	pt_open(&dev, args.dev, args.gid_index);
	is_pvo = !strncmp(ibv_get_device_name(dev.ctx->device), "pvrdma_overlay",
			  strlen("pvrdma_overlay"));
	channel = ibv_create_comp_channel(dev.ctx);
	if (!channel)
		pt_die("ibv_create_comp_channel");

	test_create_errors();
	test_query_device_ex();

	side_init(&rc_a, "rc-a", IBV_QPT_RC, RC_OPS, 0, NULL);
	side_init(&rc_b, "rc-b", IBV_QPT_RC, RC_OPS, 0, channel);
	side_init(&uc_a, "uc-a", IBV_QPT_UC, UC_OPS, 1, NULL);
	side_init(&uc_b, "uc-b", IBV_QPT_UC, UC_OPS, 0, NULL);
	side_init(&ud_a, "ud-a", IBV_QPT_UD, UD_OPS, 0, NULL);
	side_init(&ud_b, "ud-b", IBV_QPT_UD, UD_OPS, 0, NULL);
	connect_pair(&rc_a, &rc_b);
	connect_pair(&uc_a, &uc_b);
	err = pt_ud_ready(&dev, ud_a.qp, QKEY);
	if (!err)
		err = pt_ud_ready(&dev, ud_b.qp, QKEY);
	if (err) {
		errno = err;
		pt_die("UD QPs to RTS");
	}
	ah = pt_create_ah(&dev, dev.gid.raw);
	if (!ah)
		pt_die("ibv_create_ah");
	{
		struct ibv_poll_cq_attr attr = {};

		pt_tap_ok(ibv_start_poll(rc_a.scq, &attr) == ENOENT,
			  "cq_ex: start_poll on an empty CQ: ENOENT");
	}

	test_rc_opcodes();
	test_rc_batch();
	test_rc_abort_and_einval();
	test_classic_poll_and_events();
	test_uc();
	test_ud();
	test_rc_resize_cq();
	test_srq_resize();
	test_rereg_mr();
	test_rc_send_inv();
	test_rc_bad_lkey();

	printf("pvo-extended: passed=%d failed=%d\n", pt_tap_n - pt_tap_failed, pt_tap_failed);
	return pt_tap_failed ? 1 : 0;
}
