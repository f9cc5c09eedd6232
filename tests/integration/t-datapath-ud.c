// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: UD sends over IPv4 and link-local AHs, GRHs, Q_Keys.
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
		   !memcmp(c.smac, A.vm->mac, 6) &&
		   c.network_hdr_type == (v4 ? PVO_NET_IPV4 : PVO_NET_IPV6) &&
		   le32toh(c.qpn) == u->b.qpn &&
		   (!imm || ((c.flags & PVO_WC_F_IMM) &&
			     be32toh(c.imm_data) == (0xfeed0000 | seed))),
	       "%s: receive CQE has byte_len 40 + %u, GRH flag, src_qp %u, "
	       "smac of a, network type %s%s",
	       what, len, u->a.qpn, v4 ? "IPv4" : "IPv6", imm ? ", imm" : "");
	tap_diag("  got %s smac %02x:%02x:%02x:%02x:%02x:%02x net %u",
		 cqe_str(&c), c.smac[0], c.smac[1], c.smac[2], c.smac[3],
		 c.smac[4], c.smac[5], c.network_hdr_type);
	sim_buf_read(&B.buf, ro, grh, 40);
	check_grh(grh, v4, &A, &B);
	/* the GRH sits in the guard zone of the data: blank it again */
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data(what, &B.buf, ro + 40, len, seed);
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
	ud_destroy(&u, &A, &B);
}
