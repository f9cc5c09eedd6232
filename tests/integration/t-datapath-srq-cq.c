// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: shared receive queues, and CQ arming and completion events.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* SRQ                                                                */

/*
 * RESIZE_SRQ with receives posted: they move to the new ring in order,
 * a ring smaller than what is outstanding is refused, and the SRQ takes
 * receives from the new ring only (64 entries -> 256 -> 8).
 */
static void test_srq_resize(struct sim_srq *srq, struct sim_qp *a)
{
	struct pvo_cmd_resize_srq r = {.srq = htole32(srq->handle),
				       .entries = htole32(128),
				       .wqe_shift = 3};
	struct pvo_resp_query_srq q;
	unsigned int i, n = 0;
	struct sim_ring old;
	struct pvo_cqe c;
	struct sim_wr w = wr1(0xa300, PVO_WR_SEND, &A, 1000, 10);
	int st;

	/* the WQE the limit checks left */
	post1(&a[0], &w);
	expect_cqe(&A.scq, 0xa300, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "SEND taking the last WQE before the resize");
	expect_cqe(&B.rcq, 0xa006, PVO_WC_RECV, PVO_WC_SUCCESS,
		   "  ... the SRQ is empty");
	for (i = 0; i < 20; i++) {
		struct sim_sge s = sge_of(&B, 512 * KIB + i * 1024, 1024);

		prepare_dst(&B.buf, 512 * KIB + i * 1024, 1024);
		sim_post_srq_recv(srq, 0xa301 + i, &s, 1);
	}
	st = sim_resize_srq(srq, 16);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "RESIZE_SRQ to 16 entries with 20 WQEs posted -> EINVAL");
	st = pvo_resize_srq(B.vm->fe, B.ctx.handle, &r);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "RESIZE_SRQ with another WQE stride -> EINVAL");
	old = srq->ring;
	st = sim_resize_srq(srq, 256);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"RESIZE_SRQ to 256 entries with 20 WQEs posted"))
		return;
	/* the old ring is garbage now: nothing may be taken from it */
	memset(old.hdr, 0xee, 64);
	for (i = 20; i < 200; i++) {
		struct sim_sge s = sge_of(&B, 512 * KIB + i * 1024, 1024);

		prepare_dst(&B.buf, 512 * KIB + i * 1024, 1024);
		if (sim_post_srq_recv(srq, 0xa301 + i, &s, 1))
			break;
	}
	tap_ok(i == 200, "180 more receives posted to the new ring (%u)", i);
	st = pvo_query_srq(B.vm->fe, B.ctx.handle, srq->handle, &q);
	tap_ok(st == PVO_STATUS_OK && le32toh(q.max_wr) == 256,
	       "QUERY_SRQ: max_wr %u after the resize", le32toh(q.max_wr));
	for (i = 0; i < 200; i++) {
		struct sim_wr w = wr1(0xa401 + i, PVO_WR_SEND, &A, 2000,
				      100 + i);

		fill_pattern(&A.buf, 2000, 100 + i, 8100 + i);
		post1(&a[i % 2], &w);
		if (!wait_cqe(&A.scq, &c, "SEND into the resized SRQ") ||
		    !wait_cqe(&B.rcq, &c, "receive from the resized SRQ"))
			break;
		if (le64toh(c.wr_id) != 0xa301 + i ||
		    c.status != PVO_WC_SUCCESS ||
		    le32toh(c.byte_len) != 100 + i) {
			tap_diag("receive %u from the resized SRQ: %s", i,
				 cqe_str(&c));
			break;
		}
		if (!data_ok("resized SRQ", &B.buf, 512 * KIB + i * 1024,
			     100 + i, 8100 + i, 0))
			break;
		n++;
	}
	tap_ok(n == 200,
	       "200 SENDs take the 20 moved WQEs, then the 180 new ones, in "
	       "order, every byte right (%u)",
	       n);
	st = sim_resize_srq(srq, 8);
	TAP_STATUS(st, PVO_STATUS_OK, "RESIZE_SRQ down to 8 entries when empty");
}

/*
 * Host-verbs: the SRQ serves host QPs (its pairs connected through the
 * host device), so a QP on it with a peer on this back-end, which the
 * software engine would serve, is refused at RTR with EINVAL; a QP of
 * its own RQ to the same peer is not. A record naming no SRQ of the
 * context is ignored.
 */
static void test_srq_mixed(struct sim_srq *srq, const struct sim_qp_init *ib)
{
	struct sim_qp_init own = qp_init(&B, PVO_QPT_RC);
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_qp on_srq, peer, plain;
	struct sim_peer pp, ps;
	int st;

	st = sim_create_qp(&B.pd, ib, &on_srq);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &own, &peer);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &own, &plain);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"b: a QP on the host SRQ and two of their own RQ")) {
		tap_diag("%s", B.vm->err);
		return;
	}
	sim_qp_peer(&peer, pair_gid(), &pp);
	st = sim_qp_connect(&on_srq, &conn, &pp);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "a QP on the host SRQ to a peer on its own back-end "
		   "(software engine) -> EINVAL");
	sim_qp_peer(&plain, pair_gid(), &ps);
	st = sim_qp_connect(&peer, &conn, &ps);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&plain, &conn, &pp);
	TAP_STATUS(st, PVO_STATUS_OK,
		   "  ... QPs of their own RQ to the same peer connect");
	/* an SRQ record for nothing, and one for an SRQ of another
	 * context: ignored (the SRQ's traffic below goes on) */
	sim_ctx_ring(&B.ctx, PVO_DB_REC_SRQ(PVO_DB_REC_SRQ_LIMIT - 1));
	sim_ctx_ring(&A.ctx, PVO_DB_REC_SRQ(srq->srqn));
	sim_destroy_qp(&on_srq);
	sim_destroy_qp(&peer);
	sim_destroy_qp(&plain);
}

/*
 * CREATE_SRQ from a guest that predates the response flags (8 bytes of
 * room): answered with srq and srqn only; no doorbell without
 * PVO_SRQ_F_DOORBELL; unknown flags refused.
 */
static void test_srq_create_compat(void)
{
	struct sim_srq ring;
	struct pvo_cmd_create_srq c = {0};
	struct pvo_resp_create_srq r;
	int st;

	if (sim_ring_alloc(&ring.ring, sim_vm_ram(B.vm), 16,
			   pvo_recv_wqe_shift(1), SIM_LAYOUT_SCATTER) < 0)
		tap_bail("no guest RAM for an SRQ ring");
	c.pd = htole32(B.pd.handle);
	c.entries = htole32(16);
	c.max_sge = htole32(1);
	c.wqe_shift = (uint8_t)pvo_recv_wqe_shift(1);
	c.ring = ring.ring.pages.pdir;
	c.flags = 0x80;
	st = pvo_create_srq_resp(B.vm->fe, B.ctx.handle, &c, &r, sizeof(r));
	TAP_STATUS(st, PVO_STATUS_EINVAL, "CREATE_SRQ with unknown flags");
	c.flags = 0;
	st = pvo_create_srq_resp(B.vm->fe, B.ctx.handle, &c, &r,
				 PVO_RESP_CREATE_SRQ_MIN);
	if (TAP_STATUS(st, PVO_STATUS_OK,
		       "CREATE_SRQ with the 8 bytes of room of older guests "
		       "answers 8 bytes"))
		pvo_destroy(B.vm->fe, PVO_CMD_DESTROY_SRQ, B.ctx.handle,
			    le32toh(r.srq));
	st = pvo_create_srq_resp(B.vm->fe, B.ctx.handle, &c, &r, sizeof(r));
	tap_ok(st == PVO_STATUS_OK && !r.flags,
	       "CREATE_SRQ without SRQ_F_DOORBELL: no doorbell (flags 0x%x, "
	       "%s)",
	       le32toh(r.flags), pvo_status_name(st));
	if (st == PVO_STATUS_OK)
		pvo_destroy(B.vm->fe, PVO_CMD_DESTROY_SRQ, B.ctx.handle,
			    le32toh(r.srq));
	sim_ring_free(&ring.ring);
}

void test_srq(void)
{
	struct sim_qp_init ia = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_qp a[2], b[2];
	struct sim_peer pa, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct pvo_resp_query_srq q;
	struct pvo_cmd_modify_srq m = {0};
	struct sim_srq srq;
	struct pvo_cqe c;
	static const uint32_t len[3] = {3000, 5000, 100};
	static const int via[3] = {0, 1, 0};
	unsigned int i;
	int st, ev;

	st = sim_create_srq(&B.pd, 64, 4, 0, &srq);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"CREATE_SRQ of 64 entries, 4 SGEs")) {
		tap_diag("%s", B.vm->err);
		return;
	}
	/* host-verbs: a host SRQ, which asks for doorbells */
	tap_ok(!!(srq.resp_flags & PVO_SRQ_RESP_F_DOORBELL) == !!hv_dev[0],
	       "CREATE_SRQ answers flags 0x%x: %s", srq.resp_flags,
	       hv_dev[0] ? "SRQ_DOORBELL, a host SRQ"
			 : "no doorbell, the device reads the ring");
	/* posted before any QP uses the SRQ: they wait in the ring (a host
	 * SRQ gets them when its first QP connects) */
	for (i = 0; i < 4; i++) {
		struct sim_sge s = sge_of(&B, GUARD + i * 8192, 6000);

		prepare_dst(&B.buf, GUARD + i * 8192, 6000);
		sim_post_srq_recv(&srq, 0xa001 + i, &s, 1);
	}
	ib.srq = &srq;
	ib.rq_entries = 0;
	for (i = 0; i < 2; i++) {
		st = sim_create_qp(&A.pd, &ia, &a[i]);
		if (st == PVO_STATUS_OK)
			st = sim_create_qp(&B.pd, &ib, &b[i]);
		if (st == PVO_STATUS_OK) {
			sim_qp_peer(&b[i], pair_gid(), &pb);
			sim_qp_peer(&a[i], pair_gid(), &pa);
			st = sim_qp_connect(&a[i], &conn, &pb);
		}
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&b[i], &conn, &pa);
		if (!TAP_STATUS(st, PVO_STATUS_OK,
				"RC pair %u with b's side on the SRQ", i)) {
			tap_diag("%s / %s", A.vm->err, B.vm->err);
			return;
		}
	}
	st = pvo_query_srq(B.vm->fe, B.ctx.handle, srq.handle, &q);
	tap_ok(st == PVO_STATUS_OK && le32toh(q.max_wr) >= 63 &&
		   le32toh(q.max_sge) >= 4 && q.srq_limit == 0,
	       "QUERY_SRQ: max_wr %u, max_sge %u, limit %u (%s)",
	       le32toh(q.max_wr), le32toh(q.max_sge), le32toh(q.srq_limit),
	       pvo_status_name(st));

	if (hv_dev[0])
		test_srq_mixed(&srq, &ib);
	for (i = 0; i < 3; i++) {
		struct sim_wr w =
		    wr1(0xa101 + i, PVO_WR_SEND, &A, 1000, len[i]);

		fill_pattern(&A.buf, 1000, len[i], 8000 + i);
		post1(&a[via[i]], &w);
		expect_cqe(&A.scq, 0xa101 + i, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "SEND to a QP on the SRQ");
		if (get_cqe(&B.rcq, &c, "SRQ receive"))
			tap_ok(cqe_ok(&c, 0xa001 + i, PVO_WC_RECV,
				      PVO_WC_SUCCESS, "SRQ receive") &&
				   le32toh(c.qpn) == b[via[i]].qpn &&
				   le32toh(c.byte_len) == len[i],
			       "  ... takes SRQ WQE %u in order, CQE names QP "
			       "%u, byte_len %u",
			       i, b[via[i]].qpn, len[i]);
		/* and the guard bytes past it: the rest of the receive
		 * buffer stays as it was */
		check_data("SRQ receive", &B.buf, GUARD + i * 8192, len[i],
			   8000 + i);
	}

	/* limit event: 1 left + 2 posted = 3; limit 2 fires below 2 */
	for (i = 4; i < 6; i++) {
		struct sim_sge s = sge_of(&B, GUARD + i * 8192, 6000);

		sim_post_srq_recv(&srq, 0xa001 + i, &s, 1);
	}
	sim_vm_drop_events(B.vm, 0);
	m.srq = htole32(srq.handle);
	m.attr_mask = htole32(PVO_SRQ_LIMIT);
	m.srq_limit = htole32(2);
	st = pvo_modify_srq(B.vm->fe, B.ctx.handle, &m);
	TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_SRQ limit 2 with 3 WQEs posted");
	for (i = 0; i < 2; i++) {
		struct sim_wr w = wr1(0xa201 + i, PVO_WR_SEND, &A, 1000, 10);

		post1(&a[1], &w);
		expect_cqe(&A.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "SEND to the SRQ");
		expect_cqe(&B.rcq, 0xa004 + i, PVO_WC_RECV, PVO_WC_SUCCESS,
			   "SRQ receive");
		ev = sim_vm_expect_events(B.vm, PVO_EV_SRQ_LIMIT, srq.handle, i,
					  timeout_ms, 30);
		tap_ok(ev == (i == 0 ? 0 : 1),
		       "%u WQEs left: %d SRQ_LIMIT events (want %d)", 2 - i, ev,
		       i == 0 ? 0 : 1);
	}
	st = pvo_query_srq(B.vm->fe, B.ctx.handle, srq.handle, &q);
	tap_ok(st == PVO_STATUS_OK && q.srq_limit == 0,
	       "the limit disarms when it fires (QUERY_SRQ limit %u)",
	       le32toh(q.srq_limit));
	m.attr_mask = htole32(PVO_SRQ_MAX_WR);
	m.max_wr = htole32(128);
	st = pvo_modify_srq(B.vm->fe, B.ctx.handle, &m);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "MODIFY_SRQ with MAX_WR -> EINVAL (RESIZE_SRQ resizes)");
	test_srq_resize(&srq, a);

	st = pvo_destroy(B.vm->fe, PVO_CMD_DESTROY_SRQ, B.ctx.handle,
			 srq.handle);
	TAP_STATUS(st, PVO_STATUS_EBUSY,
		   "DESTROY_SRQ while QPs use it -> EBUSY");
	for (i = 0; i < 2; i++) {
		sim_destroy_qp(&a[i]);
		sim_destroy_qp(&b[i]);
	}
	st = sim_destroy_srq(&srq);
	TAP_STATUS(st, PVO_STATUS_OK, "DESTROY_SRQ once its QPs are gone");
	test_srq_create_compat();
	drain(&A);
	drain(&B);
}

/* ------------------------------------------------------------------ */
/* CQ arming and events                                               */

/* SEND a -> b with a receive posted; both completions reaped. */
static bool arm_send(struct pair *p, uint64_t id, bool solicited)
{
	struct sim_wr w = wr1(id, PVO_WR_SEND, &A, 100, 32);
	struct pvo_cqe c;
	bool ok;

	if (solicited)
		w.flags |= PVO_WQE_F_SOLICITED;
	post_recv1(&p->b, &B, id, 8192, 64);
	post1(&p->a, &w);
	ok = wait_cqe(&A.scq, &c, "send") &&
	     cqe_ok(&c, id, PVO_WC_SEND, PVO_WC_SUCCESS, "send");
	ok &= wait_cqe(&B.rcq, &c, "recv") &&
	      cqe_ok(&c, id, PVO_WC_RECV, PVO_WC_SUCCESS, "recv");
	if (ok && solicited != !!(c.flags & PVO_WC_F_SOLICITED)) {
		tap_diag("receive CQE flags 0x%x, solicited %s expected",
			 c.flags, solicited ? "" : "not");
		ok = false;
	}
	return ok;
}

/* CQ_COMP events for @cq: waits for @want of them, then 30 ms more. */
static int comp_events(struct sim_cq *cq, int want)
{
	return sim_vm_expect_events(cq->ctx->vm, PVO_EV_CQ_COMP, cq->handle,
				    want, timeout_ms, 30);
}

/*
 * A CQ created with NO_EVENTS (a user CQ without a completion channel):
 * the device never looks at its arm word, so arming it raises nothing and
 * the word stays as the guest wrote it; its completions still arrive.
 */
static void test_cq_no_events(void)
{
	struct sim_cq saved = B.rcq, ne;
	struct pair p;
	int ev;

	if (!tap_ok(sim_create_cq_flags(&B.ctx, 64, PVO_CQ_F_NO_EVENTS, &ne) ==
			PVO_STATUS_OK,
		    "CREATE_CQ with NO_EVENTS"))
		return;
	B.rcq = ne; /* b's QP of the next pair takes it as its receive CQ */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		sim_arm_cq(&B.rcq, PVO_CQ_ARM_NEXT);
		tap_ok(arm_send(&p, 0xb051, true),
		       "SEND into a NO_EVENTS receive CQ completes");
		ev = comp_events(&B.rcq, 0);
		tap_ok(ev == 0, "NO_EVENTS CQ, armed: no CQ_COMP (%d)", ev);
		tap_ok(le32toh(B.rcq.ring.hdr->arm) == PVO_CQ_ARM_NEXT,
		       "NO_EVENTS CQ: the device left arm as written (%u)",
		       le32toh(B.rcq.ring.hdr->arm));
		sim_arm_cq(&A.scq, PVO_CQ_ARM_NEXT);
		tap_ok(arm_send(&p, 0xb052, false),
		       "another SEND, the send CQ armed");
		ev = comp_events(&A.scq, 1);
		tap_ok(ev == 1, "the send CQ (events on) still raises one (%d)",
		       ev);
		pair_destroy(&p);
	}
	ne = B.rcq;
	B.rcq = saved;
	if (sim_destroy_cq(&ne) != PVO_STATUS_OK)
		tap_diag("destroy CQ: %s", B.vm->err);
}

/* RESIZE_CQ with CQEs outstanding: they move to the new ring in order. */
static void test_cq_resize(void)
{
	struct sim_cq saved = A.scq, rc;
	struct pvo_cmd_resize_cq bad = {0};
	struct pvo_cqe c[64];
	struct pair p;
	struct sim_wr w;
	unsigned int i, n, in_order;
	int st;

	if (!tap_ok(sim_create_cq(&A.ctx, 16, &rc) == PVO_STATUS_OK,
		    "a 16-entry send CQ to resize"))
		return;
	A.scq = rc; /* a's QP of the next pair takes it as its send CQ */
	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		goto out;
	for (i = 0; i < 6; i++) {
		w = write_wr(0xc500 + i, 0, 64, B.mr.iova, B.mr.key);
		post1(&p.a, &w);
	}
	for (n = 0; n < 100 && sim_cq_pending(&A.scq) < 6; n++)
		sleep_ms(10);
	st = sim_resize_cq(&A.scq, 4);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "RESIZE_CQ to 4 entries with 6 CQEs outstanding -> EINVAL");
	st = sim_resize_cq(&A.scq, 48);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "RESIZE_CQ to 48 entries (not a power of two) -> EINVAL");
	bad.cq = htole32(A.scq.handle);
	bad.entries = htole32(64);
	st = pvo_resize_cq(A.vm->fe, PVO_CTX_KERNEL, &bad);
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "RESIZE_CQ of another context's CQ -> ENOENT");
	st = sim_resize_cq(&A.scq, 64);
	TAP_STATUS(st, PVO_STATUS_OK, "RESIZE_CQ to 64 entries");
	n = (unsigned int)sim_poll_cq(&A.scq, c, 64);
	for (i = 0, in_order = 0; i < n; i++)
		in_order += le64toh(c[i].wr_id) == 0xc500 + i &&
			    c[i].status == PVO_WC_SUCCESS;
	tap_ok(n == 6 && in_order == 6,
	       "the 6 outstanding CQEs are in the new ring, in order (%u, %u)",
	       n, in_order);
	for (i = 0; i < 40; i++) {
		w = write_wr(0xc600 + i, 0, 64, B.mr.iova, B.mr.key);
		post1(&p.a, &w);
	}
	n = (unsigned int)sim_wait_cq(&A.scq, c, 40, timeout_ms);
	for (i = 0, in_order = 0; i < n; i++)
		in_order += le64toh(c[i].wr_id) == 0xc600 + i &&
			    c[i].status == PVO_WC_SUCCESS;
	tap_ok(n == 40 && in_order == 40,
	       "40 more completions fit (more than the old 16 entries) (%u)",
	       n);
	pair_destroy(&p);
out:
	rc = A.scq;
	A.scq = saved;
	if (sim_destroy_cq(&rc) != PVO_STATUS_OK)
		tap_diag("destroy CQ: %s", A.vm->err);
}

void test_cq_arm(void)
{
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;
	int ev;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	drain_all();
	tap_ok(arm_send(&p, 0xb001, false), "SEND on an unarmed CQ");
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0, "unarmed CQ: no CQ_COMP event (%d)", ev);

	sim_arm_cq(&B.rcq, PVO_CQ_ARM_NEXT);
	tap_ok(sim_poll_cq(&B.rcq, &c, 1) == 0, "armed NEXT, ring re-checked");
	tap_ok(arm_send(&p, 0xb002, false), "SEND on the armed CQ");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1, "armed NEXT: exactly one CQ_COMP for the CQ (%d)", ev);
	tap_ok(le32toh(B.rcq.ring.hdr->arm) == 0, "the device cleared arm (%u)",
	       le32toh(B.rcq.ring.hdr->arm));
	tap_ok(arm_send(&p, 0xb003, false), "another SEND, not re-armed");
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0, "not re-armed: no event (%d)", ev);

	/* three completions behind one arm: one event */
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_NEXT);
	post_recv1(&p.b, &B, 0xb011, 8192, 64);
	post_recv1(&p.b, &B, 0xb012, 8192, 64);
	post_recv1(&p.b, &B, 0xb013, 8192, 64);
	w = wr1(0xb011, PVO_WR_SEND, &A, 100, 16);
	post1(&p.a, &w);
	w.wr_id = 0xb012;
	post1(&p.a, &w);
	w.wr_id = 0xb013;
	post1(&p.a, &w);
	tap_ok(
	    sim_wait_cq(&B.rcq, (struct pvo_cqe[3]){0}, 3, timeout_ms) == 3 &&
		sim_wait_cq(&A.scq, (struct pvo_cqe[3]){0}, 3, timeout_ms) == 3,
	    "three SENDs complete");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1, "three completions after one arm: one event (%d)", ev);

	/* the send CQ is armed the same way */
	sim_arm_cq(&A.scq, PVO_CQ_ARM_NEXT);
	tap_ok(arm_send(&p, 0xb021, false), "SEND with the send CQ armed");
	ev = comp_events(&A.scq, 1);
	tap_ok(ev == 1, "armed send CQ: one event (%d)", ev);
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0, "... and none for the unarmed receive CQ (%d)", ev);

	/* SOLICITED */
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_SOLICITED);
	tap_ok(arm_send(&p, 0xb031, false), "unsolicited SEND");
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0,
	       "armed SOLICITED: no event for an unsolicited "
	       "completion (%d)",
	       ev);
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_SOLICITED);
	tap_ok(arm_send(&p, 0xb032, true),
	       "solicited SEND: receive CQE has the SOLICITED flag");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1,
	       "armed SOLICITED: one event for a solicited "
	       "completion (%d)",
	       ev);

	/* an error completion counts as solicited */
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_SOLICITED);
	post_recv1(&p.b, &B, 0xb041, 8192, 8);
	w = wr1(0xb041, PVO_WR_SEND, &A, 100, 100);
	post1(&p.a, &w);
	expect_cqe(&B.rcq, 0xb041, -1, PVO_WC_LOC_LEN_ERR,
		   "SEND of 100 B into an 8-byte receive: responder");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1,
	       "armed SOLICITED: one event for an error completion "
	       "(%d)",
	       ev);
	pair_destroy(&p);
	test_cq_no_events();
	test_cq_resize();
}
