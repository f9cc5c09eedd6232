// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: UD sends over IPv4 and link-local AHs, GRHs, Q_Keys, send
 * errors and the send queue's error state (SQE).
 *
 * With T_DATAPATH_HOSTVERBS, blue's UD QPs are host QPs: a -> b crosses
 * the host device, which does not report the sender's MAC to a user
 * QP; a destination outside blue's network is refused on the sender.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* UD                                                                 */

bool ud_make(struct ud_pair *u, struct node *na, struct node *nb)
{
	struct sim_qp_init ia = qp_init(na, PVO_QPT_UD),
			   ib = qp_init(nb, PVO_QPT_UD);
	struct sim_conn conn = {.qkey = QKEY};
	struct sim_peer peer;
	struct pvo_av av;
	int st;

	memset(u, 0, sizeof(*u));
	st = sim_create_qp(&na->pd, &ia, &u->a);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&nb->pd, &ib, &u->b);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&u->a, &conn, NULL);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&u->b, &conn, NULL);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "UD QPs on %s and %s to RTS",
			na->name, nb->name)) {
		tap_diag("%s / %s", na->vm->err, nb->vm->err);
		return false;
	}
	sim_qp_peer(&u->b, nb->gid_v4, &peer);
	sim_av_to(&av, &peer, (uint8_t)na->gid_v4);
	st = sim_create_ah(&na->pd, &av, &u->ah_v4);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&u->b, 0, &peer);
		sim_av_to(&av, &peer, 0);
		st = sim_create_ah(&na->pd, &av, &u->ah_ll);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"AHs to %s's IPv4 and link-local GIDs", nb->name)) {
		tap_diag("%s", na->vm->err);
		return false;
	}
	return true;
}

void ud_destroy(struct ud_pair *u, struct node *na, struct node *nb)
{
	sim_destroy_ah(&na->ctx, u->ah_v4);
	sim_destroy_ah(&na->ctx, u->ah_ll);
	sim_destroy_qp(&u->a);
	sim_destroy_qp(&u->b);
	drain(na);
	drain(nb);
}

struct sim_wr ud_wr(uint64_t wr_id, uint32_t ah, uint32_t qpn,
			   uint32_t qkey, uint64_t off, uint32_t len)
{
	struct sim_wr w = wr1(wr_id, PVO_WR_SEND, &A, off, len);

	w.ah = ah;
	w.remote_qpn = qpn;
	w.remote_qkey = qkey;
	return w;
}

static void check_grh(const uint8_t *g, bool v4, struct node *src,
		      struct node *dst)
{
	uint8_t sip[4] = {10, 0, 0, 1}, dip[4] = {10, 0, 0, 2};

	if (v4) {
		const uint8_t *ip = g + 20;

		tap_ok(ip[0] == 0x45 && ip[9] == 17 &&
			   !memcmp(ip + 12, sip, 4) && !memcmp(ip + 16, dip, 4),
		       "GRH holds an IPv4 header in its last 20 bytes: "
		       "version/IHL 0x45 (0x%02x), protocol UDP (%u), "
		       "10.0.0.1 -> 10.0.0.2 (%u.%u.%u.%u -> %u.%u.%u.%u)",
		       ip[0], ip[9], ip[12], ip[13], ip[14], ip[15], ip[16],
		       ip[17], ip[18], ip[19]);
	} else {
		tap_ok((g[0] >> 4) == 6 && g[6] == 17 &&
			   !memcmp(g + 8, src->vm->gid[0], 16) &&
			   !memcmp(g + 24, dst->vm->gid[0], 16),
		       "GRH is an IPv6 header: version 6 (%u), next header "
		       "UDP (%u), source %s, destination %s",
		       g[0] >> 4, g[6], pvo_gid_str(g + 8),
		       pvo_gid_str(g + 24));
	}
}

static void ud_one(struct ud_pair *u, bool v4, uint32_t len, bool inl, bool imm,
		   uint32_t seed)
{
	const uint64_t so = 4096 + 77, ro = 8192 + 100;
	struct sim_wr w = ud_wr(0x9000 + seed, v4 ? u->ah_v4 : u->ah_ll,
				u->b.qpn, QKEY, so, len);
	struct pvo_cqe c;
	uint8_t grh[40];
	char what[120];

	snprintf(what, sizeof(what), "UD %s%s %u B over the %s GID",
		 inl ? "inline " : "", imm ? "SEND_WITH_IMM" : "SEND", len,
		 v4 ? "IPv4" : "link-local");
	if (overlay && !v4) {
		char why[200];

		snprintf(why, sizeof(why),
			 "%s: the overlay carries IPv4 GIDs only", what);
		tap_skip(1, why);
		return;
	}
	fill_pattern(&A.buf, so, len, seed);
	prepare_dst(&B.buf, ro, 40 + len);
	post_recv1(&u->b, &B, 0x9100 + seed, ro, 40 + len + 16);
	if (inl) {
		sim_buf_read(&A.buf, so, inline_buf, len);
		w.num_sge = 0;
		w.inline_data = inline_buf;
		w.inline_len = len;
	}
	if (imm) {
		w.opcode = PVO_WR_SEND_WITH_IMM;
		w.imm = 0xfeed0000 | seed;
	}
	post1(&u->a, &w);
	expect_cqe(&A.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	if (!get_cqe(&B.rcq, &c, what))
		return;
	tap_ok(cqe_ok(&c, 0x9100 + seed, PVO_WC_RECV, PVO_WC_SUCCESS, what) &&
		   le32toh(c.byte_len) == 40 + len &&
		   (c.flags & PVO_WC_F_GRH) && le32toh(c.src_qp) == u->a.qpn &&
		   (hv_dev[0] || !memcmp(c.smac, A.vm->mac, 6)) &&
		   c.network_hdr_type == (v4 ? PVO_NET_IPV4 : PVO_NET_IPV6) &&
		   le32toh(c.qpn) == u->b.qpn &&
		   (!imm || ((c.flags & PVO_WC_F_IMM) &&
			     be32toh(c.imm_data) == (0xfeed0000 | seed))),
	       "%s: receive CQE has byte_len 40 + %u, GRH flag, src_qp %u, "
	       "%snetwork type %s%s",
	       what, len, u->a.qpn, hv_dev[0] ? "" : "smac of a, ",
	       v4 ? "IPv4" : "IPv6", imm ? ", imm" : "");
	tap_diag("  got %s smac %02x:%02x:%02x:%02x:%02x:%02x net %u",
		 cqe_str(&c), c.smac[0], c.smac[1], c.smac[2], c.smac[3],
		 c.smac[4], c.smac[5], c.network_hdr_type);
	sim_buf_read(&B.buf, ro, grh, 40);
	check_grh(grh, v4, &A, &B);
	/* the GRH sits in the guard zone of the data: blank it again */
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data(what, &B.buf, ro + 40, len, seed);
}

/* A UD QP in SQE back to RTS; b's receive rwr at roff (posted before,
 * prepared by the caller) takes a good SEND, every byte checked. */
static void ud_recover(struct ud_pair *u, uint64_t wr_id, uint32_t seed,
		       const char *after, uint64_t rwr, uint64_t roff)
{
	struct pvo_cqe c;
	struct sim_wr w;
	char what[120];
	int st;

	snprintf(what, sizeof(what), "UD SEND %s, back in RTS", after);
	st = sim_qp_set_state(&u->a, PVO_QPS_RTS);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "UD QP %s: SQE -> RTS", after))
		return;
	fill_pattern(&A.buf, 4096, 400, seed);
	w = ud_wr(wr_id, u->ah_v4, u->b.qpn, QKEY, 4096, 400);
	post1(&u->a, &w);
	expect_cqe(&A.scq, wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	if (get_cqe(&B.rcq, &c, what))
		cqe_is(&c, rwr, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "  ... is received by the receive the failed one did "
		       "not take");
	sim_buf_fill(&B.buf, roff, GUARD_BYTE, 40);
	check_data(what, &B.buf, roff + 40, 400, seed);
}

/* Host verbs: a destination outside tenant blue's subnets is refused on
 * the sender (the AH stays refused); nothing moves. */
static void ud_outside(struct ud_pair *u)
{
	struct sim_peer peer;
	struct pvo_av av;
	struct sim_wr w;
	uint64_t sum;
	uint32_t ah;
	int st;

	sim_qp_peer(&u->b, B.gid_v4, &peer);
	pvo_gid_from_ipv4(peer.gid, "10.9.9.9");
	sim_av_to(&av, &peer, (uint8_t)A.gid_v4);
	st = sim_create_ah(&A.pd, &av, &ah);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "an AH to 10.9.9.9"))
		return;
	prepare_dst(&B.buf, 8192 + 100, 40 + 600);
	post_recv1(&u->b, &B, 0x9210, 8192 + 100, 40 + 600);
	fill_pattern(&A.buf, 4096, 300, 7020);
	sum = buf_sum(&B.buf);
	w = ud_wr(0x9310, ah, u->b.qpn, QKEY, 4096, 300);
	post1(&u->a, &w);
	expect_cqe(&A.scq, 0x9310, PVO_WC_SEND, PVO_WC_LOC_QP_OP_ERR,
		   "UD SEND to 10.9.9.9, outside tenant blue's subnet");
	expect_no_cqe(&B.rcq, 50, "UD SEND outside the tenant's subnet");
	expect_state(&u->a, PVO_QPS_SQE, "after a UD SEND outside the subnet");
	if (sim_qp_set_state(&u->a, PVO_QPS_RTS) == PVO_STATUS_OK) {
		w.wr_id = 0x9311;
		post1(&u->a, &w);
		expect_cqe(&A.scq, 0x9311, PVO_WC_SEND, PVO_WC_LOC_QP_OP_ERR,
			   "UD SEND to 10.9.9.9 again: the AH stays refused");
	}
	tap_ok(buf_sum(&B.buf) == sum,
	       "UD SENDs outside the subnet: b's memory is unchanged");
	sim_destroy_ah(&A.ctx, ah);
	/* b's receive is still posted: the next good SEND takes it */
	ud_recover(u, 0x9312, 7021, "after the refused AH", 0x9210, 8192 + 100);
}

/*
 * Host verbs: a software UD QP (one with an SRQ) of the same back-end
 * does not reach a host UD QP, whose receives are the host device's: the
 * datagram is dropped as one to a QPN nobody has, the sender completes.
 */
static void ud_from_software(struct ud_pair *u)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_UD);
	struct sim_conn conn = {.qkey = QKEY};
	struct sim_peer peer;
	struct sim_srq srq;
	uint64_t sum;
	struct sim_qp sq;
	struct pvo_av av;
	struct sim_wr w;
	uint32_t ah;
	int st;

	st = sim_create_srq(&A.pd, 16, 4, 0, &srq);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "an SRQ on a"))
		return;
	in.srq = &srq;
	st = sim_create_qp(&A.pd, &in, &sq);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&sq, &conn, NULL);
	if (TAP_STATUS(st, PVO_STATUS_OK, "a UD QP with an SRQ on a (software)"))
		tap_ok(!(sq.resp_flags & PVO_QP_RESP_F_RQ_DOORBELL),
		       "  ... is not a host QP (resp flags 0x%x)",
		       sq.resp_flags);
	sim_qp_peer(&u->a, A.gid_v4, &peer);
	sim_av_to(&av, &peer, (uint8_t)A.gid_v4);
	if (st == PVO_STATUS_OK &&
	    TAP_STATUS(sim_create_ah(&A.pd, &av, &ah), PVO_STATUS_OK,
		       "an AH on a to its own IPv4 GID")) {
		post_recv1(&u->a, &A, 0x9220, 2 * MIB, 40 + 600);
		fill_pattern(&A.buf, 4096, 300, 7030);
		sum = buf_sum(&A.buf);
		w = ud_wr(0x9320, ah, u->a.qpn, QKEY, 4096, 300);
		post1(&sq, &w);
		expect_cqe(&A.scq, 0x9320, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "UD SEND from a software QP to a host UD QP of "
			   "the same back-end completes on the sender");
		expect_no_cqe(&A.rcq, 50,
			      "UD SEND from a software QP to a host UD QP");
		tap_ok(buf_sum(&A.buf) == sum,
		       "  ... and moves nothing into a's memory");
		sim_destroy_ah(&A.ctx, ah);
	}
	sim_destroy_qp(&sq);
	sim_destroy_srq(&srq);
}

void test_ud(void)
{
	unsigned int mtu = 128u << A.vm->port.active_mtu;
	const uint64_t ro = 8192 + 100;
	struct ud_pair u;
	struct pvo_cqe c;
	struct sim_wr w;

	if (!ud_make(&u, &A, &B))
		return;
	tap_diag("UD QPs %u (a) -> %u (b), path MTU %u", u.a.qpn, u.b.qpn, mtu);
	if (hv_dev[0])
		tap_ok((u.a.resp_flags & PVO_QP_RESP_F_RQ_DOORBELL) &&
			   (u.b.resp_flags & PVO_QP_RESP_F_RQ_DOORBELL),
		       "blue's UD QPs are host QPs: CREATE_QP asks for the "
		       "receive doorbell (a 0x%x, b 0x%x)",
		       u.a.resp_flags, u.b.resp_flags);
	ud_one(&u, true, 100, false, false, 7000);
	ud_one(&u, false, 1000, false, false, 7001);
	ud_one(&u, true, 1, false, true, 7002);
	ud_one(&u, true, 200, true, false, 7003);
	ud_one(&u, false, mtu, false, false, 7004);

	/* wrong Q_Key: dropped; the next good message takes the receive */
	prepare_dst(&B.buf, ro, 40 + 600);
	post_recv1(&u.b, &B, 0x9201, ro, 40 + 600);
	fill_pattern(&A.buf, 4096, 500, 7010);
	w = ud_wr(0x9301, u.ah_v4, u.b.qpn, 0x22222222, 4096, 500);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9301, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND with a wrong Q_Key completes on the sender");
	expect_no_cqe(&B.rcq, 50, "UD SEND with a wrong Q_Key is dropped");
	fill_pattern(&A.buf, 4096, 500, 7011);
	w = ud_wr(0x9302, u.ah_v4, u.b.qpn, QKEY, 4096, 500);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9302, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND with the right Q_Key");
	if (get_cqe(&B.rcq, &c, "UD after a dropped one"))
		cqe_is(&c, 0x9201, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "  ... takes the receive the dropped one did not");
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data("UD after a dropped one", &B.buf, ro + 40, 500, 7011);

	/* a Q_Key with the MSB set means "the QP's own Q_Key" */
	prepare_dst(&B.buf, ro, 40 + 600);
	post_recv1(&u.b, &B, 0x9202, ro, 40 + 600);
	fill_pattern(&A.buf, 4096, 300, 7012);
	w = ud_wr(0x9303, overlay ? u.ah_v4 : u.ah_ll, u.b.qpn, 0x80000000u,
		  4096, 300);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9303, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND with Q_Key 0x80000000 (use the QP's)");
	if (get_cqe(&B.rcq, &c, "UD with the QP's Q_Key"))
		cqe_is(&c, 0x9202, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "  ... is delivered with the sending QP's Q_Key");
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data("UD with the QP's Q_Key", &B.buf, ro + 40, 300, 7012);

	/* nobody behind that QPN: dropped, the sender still completes */
	w = ud_wr(0x9304, u.ah_v4, 0xfffff0, QKEY, 4096, 300);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9304, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND to a QPN nobody has completes on the sender");
	/* b has no receive posted now; nothing may complete there */
	expect_no_cqe(&B.rcq, 30, "UD SEND to an unknown QPN");

	/* longer than the path MTU */
	post_recv1(&u.b, &B, 0x9203, 64, 40 + mtu + 64);
	w = ud_wr(0x9305, u.ah_v4, u.b.qpn, QKEY, 4096, mtu + 1);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9305, PVO_WC_SEND, PVO_WC_LOC_LEN_ERR,
		   "UD SEND of MTU + 1 bytes");
	expect_no_cqe(&B.rcq, 30, "UD SEND of MTU + 1 bytes is not delivered");
	expect_state(&u.a, PVO_QPS_SQE, "after a UD send error");
	prepare_dst(&B.buf, 64, 40 + 400);
	ud_recover(&u, 0x9306, 7013, "after MTU + 1", 0x9203, 64);

	/* an AH handle that names nothing */
	w = ud_wr(0x9307, 0x7fffff0, u.b.qpn, QKEY, 4096, 100);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9307, PVO_WC_SEND, PVO_WC_LOC_QP_OP_ERR,
		   "UD SEND with an AH handle that names nothing");
	expect_state(&u.a, PVO_QPS_SQE, "after a UD SEND with a bad AH");
	prepare_dst(&B.buf, ro, 40 + 600);
	post_recv1(&u.b, &B, 0x9204, ro, 40 + 600);
	ud_recover(&u, 0x9308, 7014, "after a bad AH", 0x9204, ro);
	if (hv_dev[0]) {
		ud_outside(&u);
		ud_from_software(&u);
	}
	ud_destroy(&u, &A, &B);
}

/* ------------------------------------------------------------------ */
/* UD multicast                                                       */

static uint8_t group[PVO_GID_LEN] = {[10] = 0xff, [11] = 0xff, 239, 1, 2, 3};

static int mcast(uint16_t op, struct sim_qp *qp, const uint8_t *gid)
{
	return pvo_mcast(qp->ctx->vm->fe, op, qp->ctx->handle, qp->handle, gid);
}

static bool ud_qp(struct node *n, struct sim_qp *qp)
{
	struct sim_qp_init in = qp_init(n, PVO_QPT_UD);
	struct sim_conn conn = {.qkey = QKEY};

	return sim_create_qp(&n->pd, &in, qp) == PVO_STATUS_OK &&
	       sim_qp_connect(qp, &conn, NULL) == PVO_STATUS_OK;
}

/* A group datagram: who got a copy (bit per QP of @qps), data checked. */
static unsigned int mcast_round(struct sim_qp *from, uint32_t ah,
				struct sim_qp **qps, struct node **nodes,
				unsigned int n, uint32_t seed)
{
	unsigned int i, j, got = 0;
	uint8_t tx[300], rx[300];
	struct pvo_cqe c;
	struct sim_wr w;

	for (i = 0; i < n; i++) {
		prepare_dst(&nodes[i]->buf, 64 * KIB * (i + 1), 40 + 300);
		post_recv1(qps[i], nodes[i], 0x7700 + i, 64 * KIB * (i + 1),
			   40 + 300);
	}
	fill_pattern(&A.buf, 0, 300, seed);
	sim_buf_read(&A.buf, 0, tx, sizeof(tx));
	w = ud_wr(0x7800, ah, PVO_MCAST_QPN, QKEY, 0, 300);
	post1(from, &w);
	expect_cqe(&A.scq, 0x7800, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND to group ::ffff:239.1.2.3");
	sleep_ms(overlay ? 300 : 50);
	/* QPs may share a CQ: poll each one, attribute CQEs by wr_id */
	for (j = 0; j < n; j++) {
		struct sim_cq *cq = qps[j]->init.recv_cq;

		while (sim_poll_cq(cq, &c, 1) == 1) {
			uint64_t off;

			i = (unsigned int)(le64toh(c.wr_id) - 0x7700);
			if (i >= n || qps[i]->init.recv_cq != cq)
				continue;
			off = 64 * KIB * (i + 1);
			sim_buf_read(&nodes[i]->buf, off + 40, rx, sizeof(rx));
			if (c.status == PVO_WC_SUCCESS &&
			    le32toh(c.byte_len) == 40 + 300 &&
			    !memcmp(rx, tx, sizeof(tx)))
				got |= 1u << i;
		}
	}
	return got;
}

void test_ud_mcast(void)
{
	struct sim_qp qa, qa2, qb, qb2, qc, rc;
	struct sim_qp *qps[5] = {&qa, &qa2, &qb, &qb2, &qc};
	struct node *nodes[5] = {&A, &A, &B, &B, &C};
	struct sim_qp_init ri = qp_init(&A, PVO_QPT_RC);
	uint8_t not_mcast[PVO_GID_LEN] = {[10] = 0xff, [11] = 0xff, 10, 0, 0,
					  2};
	uint8_t g[PVO_GID_LEN];
	struct sim_peer peer;
	struct pvo_av av;
	unsigned int got, i, n;
	uint32_t ah;
	int st;

	if (!tap_ok(ud_qp(&A, &qa) && ud_qp(&A, &qa2) && ud_qp(&B, &qb) &&
		    ud_qp(&B, &qb2) && ud_qp(&C, &qc) &&
		    sim_create_qp(&A.pd, &ri, &rc) == PVO_STATUS_OK,
		    "multicast: UD QPs on a (2), b (2), c (other tenant)"))
		return;
	st = mcast(PVO_CMD_ATTACH_MCAST, &rc, group);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "ATTACH_MCAST of an RC QP -> EINVAL");
	st = mcast(PVO_CMD_ATTACH_MCAST, &qa, not_mcast);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ATTACH_MCAST to a unicast GID -> EINVAL");
	st = mcast(PVO_CMD_DETACH_MCAST, &qa, group);
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "DETACH_MCAST of a group the QP is not in -> ENOENT");
	if (hv_dev[0]) {
		/* blue's UD QPs receive on the host device: no groups */
		st = mcast(PVO_CMD_ATTACH_MCAST, &qa, group);
		TAP_STATUS(st, PVO_STATUS_EOPNOTSUPP,
			   "ATTACH_MCAST of a host UD QP (tenant blue on host "
			   "verbs) -> EOPNOTSUPP");
		st = mcast(PVO_CMD_ATTACH_MCAST, &qc, group);
		TAP_STATUS(st, PVO_STATUS_OK,
			   "ATTACH_MCAST of tenant red's UD QP (software)");
		tap_skip(6, "multicast groups: not on the host-verbs "
			    "transport");
		goto out;
	}
	st = PVO_STATUS_OK;
	for (i = 0; i < 5 && st == PVO_STATUS_OK; i++)
		if (qps[i] != &qb2)
			st = mcast(PVO_CMD_ATTACH_MCAST, qps[i], group);
	if (st == PVO_STATUS_OK)
		st = mcast(PVO_CMD_ATTACH_MCAST, &qb, group);
	TAP_STATUS(st, PVO_STATUS_OK,
		   "a, a', b and c join ::ffff:239.1.2.3 (b twice: no error)");
	memcpy(g, group, sizeof(g));
	for (n = 1, st = PVO_STATUS_OK; st == PVO_STATUS_OK; n++) {
		g[15] = (uint8_t)(100 + n);
		st = mcast(PVO_CMD_ATTACH_MCAST, &qa2, g);
	}
	tap_ok(st == PVO_STATUS_ENOSPC && n - 1 == PVO_MAX_MCAST_PER_QP,
	       "a QP joins %u groups, the next gets ENOSPC (%u, %s)",
	       PVO_MAX_MCAST_PER_QP, n - 1, pvo_status_name(st));

	sim_qp_peer(&qa, A.gid_v4, &peer);
	memcpy(peer.gid, group, sizeof(group));
	memcpy(peer.mac, (uint8_t[6]){0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}, 6);
	sim_av_to(&av, &peer, (uint8_t)A.gid_v4);
	st = sim_create_ah(&A.pd, &av, &ah);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "an AH to the group"))
		goto out;
	got = mcast_round(&qa, ah, qps, nodes, 5, 9400);
	tap_ok(got == ((1u << 1) | (1u << 2)),
	       "a group datagram reaches a' and b with every byte; not the "
	       "sender, not b' (not a member), not c (another tenant) "
	       "(delivered to 0x%x)",
	       got);
	st = mcast(PVO_CMD_DETACH_MCAST, &qb, group);
	TAP_STATUS(st, PVO_STATUS_OK, "b leaves the group");
	got = mcast_round(&qa, ah, qps, nodes, 5, 9401);
	tap_ok(got == (1u << 1),
	       "after b left, only a' gets the datagram (0x%x)", got);
	sim_destroy_qp(&qa2);
	got = mcast_round(&qa, ah, qps, nodes, 1, 9402);
	tap_ok(got == 0, "a member destroyed while attached: the next "
			 "datagram goes nowhere, nothing breaks");
	sim_destroy_ah(&A.ctx, ah);
out:
	sim_destroy_qp(&qa);
	sim_destroy_qp(&qb);
	sim_destroy_qp(&qb2);
	sim_destroy_qp(&qc);
	sim_destroy_qp(&rc);
	drain_all();
}
