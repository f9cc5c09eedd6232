// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: error completions, QP RESET and tiny rings, the memory table
 * sent again.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* error completions                                                  */


/* Post one WR on a fresh RC pair and expect @status on the requester;
 * then both QP states. @cb, if given, is b's side of the connection. */
static void rc_error_case(const char *what, struct sim_wr *w,
			  unsigned int status, bool remote, bool b_recv,
			  const struct sim_conn *cb)
{
	/* A remote error arrives as a NAK, in microseconds; the ACK timeout
	 * only runs out if b's back-end is not scheduled for that long (a
	 * loaded machine, the overlay's second daemon): give it 67 ms per
	 * try rather than fast's 1 ms, which would end in RETRY_EXC_ERR. */
	struct sim_conn ca = fast;
	struct pair p;
	uint64_t before = 0;
	int want_b;

	if (remote)
		ca.timeout = 14;
	if (!pair_make(&p, PVO_QPT_RC, &ca, cb ? cb : &fast))
		return;
	if (b_recv)
		post_recv1(&p.b, &B, 0xc0ff, 8192, 4096);
	before = buf_sum(&B.buf);
	post1(&p.a, w);
	expect_cqe(&A.scq, w->wr_id, -1, status, what);
	expect_state(&p.a, PVO_QPS_ERR, what);
	/* a remote error also kills the responder; a local one never
	 * reached it */
	want_b = remote ? PVO_QPS_ERR : PVO_QPS_RTS;
	expect_state(&p.b, want_b,
		     remote ? "  ... responder" : "  ... responder untouched");
	tap_ok(buf_sum(&B.buf) == before, "%s: no byte changed at b", what);
	pair_destroy(&p);
}

void test_errors(void)
{
	struct sim_buf nb;
	struct sim_mr ro_mr, nw_mr, na_mr, nlw_mr;
	struct sim_conn noacc = fast;
	enum pvo_wc_status st_noacc;
	struct sim_wr w;
	struct pair p;
	struct pvo_cqe c;
	long long t0;
	int st, i;

	/* local protection */
	w = wr1(0xd001, PVO_WR_SEND, &A, 100, 100);
	w.sge[0].lkey = A.mr.key ^ 0x100;
	rc_error_case("SEND with a bad lkey: LOC_PROT_ERR", &w,
		      PVO_WC_LOC_PROT_ERR, false, true, NULL);
	w = wr1(0xd002, PVO_WR_SEND, &A, DATA_LEN - 50, 100);
	rc_error_case("SEND with an SGE past the end of its MR: LOC_PROT_ERR",
		      &w, PVO_WC_LOC_PROT_ERR, false, true, NULL);
	w = wr1(0xd003, PVO_WR_SEND, &A, 0, 100);
	w.sge[0].addr = A.buf.va - 1;
	rc_error_case("SEND with an SGE starting before its MR: LOC_PROT_ERR",
		      &w, PVO_WC_LOC_PROT_ERR, false, true, NULL);
	w = wr1(0xd004, PVO_WR_SEND, &A, 100, 100);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	w.sge[0].addr = sim_buf_gpa(&A.buf, 100);
	rc_error_case("user SEND with the local DMA lkey: LOC_PROT_ERR", &w,
		      PVO_WC_LOC_PROT_ERR, false, true, NULL);
	/* keys of deregistered MRs are dead */
	if (sim_buf_alloc(&nb, sim_vm_ram(A.vm), sim_vm_va(A.vm, 8 * KIB),
			  8 * KIB, 0, SIM_LAYOUT_SCATTER) == 0) {
		st = sim_reg_mr(&A.pd, &nb, 0, 8 * KIB, PVO_ACCESS_LOCAL_WRITE,
				&nlw_mr);
		if (TAP_STATUS(st, PVO_STATUS_OK, "a short-lived MR")) {
			sim_dereg_mr(&nlw_mr);
			w = wr1(0xd005, PVO_WR_SEND, &A, 0, 100);
			w.sge[0].addr = nb.va;
			w.sge[0].lkey = nlw_mr.key;
			rc_error_case("SEND with the lkey of a deregistered "
				      "MR: LOC_PROT_ERR",
				      &w, PVO_WC_LOC_PROT_ERR, false, true,
				      NULL);
		}
		sim_buf_free(&nb);
	}

	/* remote access */
	w = write_wr(0xd011, 100, 100, B.mr.iova + 100, B.mr.key ^ 0x100);
	rc_error_case("RDMA WRITE with a bad rkey: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = write_wr(0xd012, 100, 100, B.mr.iova + DATA_LEN - 99, B.mr.key);
	rc_error_case("RDMA WRITE one byte past the MR: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = write_wr(0xd013, 100, 100, B.mr.iova - 1, B.mr.key);
	rc_error_case("RDMA WRITE one byte before the MR: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	if (sim_buf_alloc(&nb, sim_vm_ram(B.vm), sim_vm_va(B.vm, 8 * KIB),
			  8 * KIB, 0, SIM_LAYOUT_SCATTER) == 0) {
		st = sim_reg_mr(
		    &B.pd, &nb, 0, 8 * KIB,
		    PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE, &nw_mr);
		if (TAP_STATUS(st, PVO_STATUS_OK, "a short-lived MR on b")) {
			sim_dereg_mr(&nw_mr);
			w = write_wr(0xd014, 100, 100, nb.va, nw_mr.key);
			rc_error_case("RDMA WRITE with the rkey of a "
				      "deregistered MR: REM_ACCESS_ERR",
				      &w, PVO_WC_REM_ACCESS_ERR, true, false,
				      NULL);
		}
		sim_buf_free(&nb);
	}
	w = wr1(0xd015, PVO_WR_RDMA_READ, &A, 100, 100);
	w.remote_addr = B.mr.iova + DATA_LEN;
	w.rkey = B.mr.key;
	rc_error_case("RDMA READ past the MR: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);

	/* MRs on b lacking one right each, over b's first 64 KiB */
	if (sim_buf_alloc(&nb, sim_vm_ram(B.vm), sim_vm_va(B.vm, 64 * KIB),
			  64 * KIB, 0, SIM_LAYOUT_SCATTER) < 0)
		tap_bail("no guest RAM on b");
	st = sim_reg_mr(&B.pd, &nb, 0, 64 * KIB,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_ATOMIC,
			&ro_mr); /* no remote read */
	st |= sim_reg_mr(&B.pd, &nb, 0, 64 * KIB,
			 PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ |
			     PVO_ACCESS_REMOTE_ATOMIC,
			 &nw_mr); /* no remote write */
	st |= sim_reg_mr(&B.pd, &nb, 0, 64 * KIB,
			 PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ |
			     PVO_ACCESS_REMOTE_WRITE,
			 &na_mr); /* no remote atomic */
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"three MRs over one buffer, each lacking one remote "
			"right"))
		tap_diag("%s", B.vm->err);
	w = write_wr(0xd021, 100, 100, nw_mr.iova + 8, nw_mr.key);
	rc_error_case("RDMA WRITE into an MR without REMOTE_WRITE: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = wr1(0xd022, PVO_WR_RDMA_READ, &A, 100, 100);
	w.remote_addr = ro_mr.iova + 8;
	w.rkey = ro_mr.key;
	rc_error_case("RDMA READ from an MR without REMOTE_READ: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = wr1(0xd023, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 104), 8);
	w.remote_addr = na_mr.iova + 8;
	w.rkey = na_mr.key;
	w.compare_add = 1;
	rc_error_case("FETCH_AND_ADD on an MR without REMOTE_ATOMIC: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	sim_dereg_mr(&ro_mr);
	sim_dereg_mr(&nw_mr);
	sim_dereg_mr(&na_mr);
	sim_buf_free(&nb);

	/* the responder QP's qp_access_flags; on the host-verbs transport
	 * the host device answers, and rdma_rxe NAKs such an operation as
	 * an invalid request */
	st_noacc = hv_dev[0] ? PVO_WC_REM_INV_REQ_ERR : PVO_WC_REM_ACCESS_ERR;
	noacc.no_access = true;
	w = write_wr(0xd031, 100, 100, B.mr.iova + 100, B.mr.key);
	rc_error_case("RDMA WRITE to a QP without remote access flags: "
		      "REM_ACCESS_ERR",
		      &w, st_noacc, true, false, &noacc);
	noacc.no_access = false;
	noacc.access = PVO_ACCESS_REMOTE_WRITE;
	w = wr1(0xd032, PVO_WR_RDMA_READ, &A, 100, 100);
	w.remote_addr = B.mr.iova + 100;
	w.rkey = B.mr.key;
	rc_error_case("RDMA READ from a QP with only REMOTE_WRITE: "
		      "REM_ACCESS_ERR",
		      &w, st_noacc, true, false, &noacc);
	w = wr1(0xd033, PVO_WR_ATOMIC_CMP_AND_SWP, &A, al8(&A, 104), 8);
	w.remote_addr = B.mr.iova + al8(&B, 64);
	w.rkey = B.mr.key;
	rc_error_case("CMP_AND_SWP to a QP with only REMOTE_WRITE: "
		      "REM_ACCESS_ERR",
		      &w, st_noacc, true, false, &noacc);

	/* atomics: alignment and local SGE size */
	w = wr1(0xd041, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 104), 8);
	w.remote_addr = B.mr.iova + al8(&B, 64) + 4;
	w.rkey = B.mr.key;
	/* rdma_rxe's requester refuses the address itself: the WQE fails
	 * locally and the responder never sees it */
	rc_error_case("FETCH_AND_ADD at a remote address not 8-byte aligned: "
		      "REM_INV_REQ_ERR",
		      &w,
		      hv_dev[0] ? PVO_WC_LOC_QP_OP_ERR : PVO_WC_REM_INV_REQ_ERR,
		      !hv_dev[0], false, NULL);
	w = wr1(0xd042, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 104), 4);
	w.remote_addr = B.mr.iova + al8(&B, 64);
	w.rkey = B.mr.key;
	rc_error_case("FETCH_AND_ADD with a 4-byte local SGE: LOC_LEN_ERR", &w,
		      PVO_WC_LOC_LEN_ERR, false, false, NULL);

	/* RDMA READ into local memory without LOCAL_WRITE */
	if (sim_buf_alloc(&nb, sim_vm_ram(A.vm), sim_vm_va(A.vm, 8 * KIB),
			  8 * KIB, 0, SIM_LAYOUT_SCATTER) == 0) {
		st = sim_reg_mr(&A.pd, &nb, 0, 8 * KIB, PVO_ACCESS_REMOTE_READ,
				&nlw_mr);
		/* IB: remote write needs local write; read-only is fine */
		if (TAP_STATUS(st, PVO_STATUS_OK,
			       "REG_MR without LOCAL_WRITE")) {
			w = wr1(0xd051, PVO_WR_RDMA_READ, &A, 0, 100);
			w.sge[0].addr = nb.va;
			w.sge[0].lkey = nlw_mr.key;
			w.remote_addr = B.mr.iova + 100;
			w.rkey = B.mr.key;
			rc_error_case("RDMA READ into an MR without "
				      "LOCAL_WRITE: LOC_PROT_ERR",
				      &w, PVO_WC_LOC_PROT_ERR, false, false,
				      NULL);
			sim_dereg_mr(&nlw_mr);
		}
		sim_buf_free(&nb);
	}

	/* receive buffer too small */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		post_recv1(&p.b, &B, 0xd061, 8192, 99);
		w = wr1(0xd062, PVO_WR_SEND, &A, 100, 100);
		post1(&p.a, &w);
		/* rdma_rxe completes a receive too short for the SEND with
		 * a local QP operation error, and answers the requester
		 * with a remote operational error */
		expect_cqe(&B.rcq, 0xd061, -1,
			   hv_dev[0] ? PVO_WC_LOC_QP_OP_ERR : PVO_WC_LOC_LEN_ERR,
			   "SEND of 100 B into 99: responder");
		expect_cqe(&A.scq, 0xd062, -1,
			   hv_dev[0] ? PVO_WC_REM_OP_ERR
				     : PVO_WC_REM_INV_REQ_ERR,
			   "SEND of 100 B into 99: requester");
		expect_state(&p.a, PVO_QPS_ERR, "SEND into a short receive");
		expect_state(&p.b, PVO_QPS_ERR, "  ... responder");
		pair_destroy(&p);
	}

	/* RNR: no receive, retries exhausted */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		t0 = now_ms();
		w = wr1(0xd071, PVO_WR_SEND, &A, 100, 100);
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xd071, -1, PVO_WC_RNR_RETRY_EXC_ERR,
			   "SEND with no receive posted, rnr_retry 2");
		tap_diag("RNR error after %lld ms", now_ms() - t0);
		expect_state(&p.a, PVO_QPS_ERR, "RNR retries exhausted");
		expect_no_cqe(&B.rcq, 10, "RNR: responder");
		pair_destroy(&p);
	}
	/* RNR: the receive comes while the requester retries */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		w = wr1(0xd081, PVO_WR_SEND, &A, 100, 100);
		fill_pattern(&A.buf, 100, 100, 9000);
		post1(&p.a, &w);
		sleep_ms(30);
		prepare_dst(&B.buf, 8192, 100);
		post_recv1(&p.b, &B, 0xd082, 8192, 100);
		expect_cqe(&A.scq, 0xd081, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "SEND retried after RNR until a receive is posted");
		expect_cqe(&B.rcq, 0xd082, PVO_WC_RECV, PVO_WC_SUCCESS,
			   "  ... and received");
		check_data("SEND after RNR", &B.buf, 8192, 100, 9000);
		pair_destroy(&p);
	}

	/* after the first error everything flushes, signaled or not */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		struct sim_wr ws[4];

		for (i = 0; i < 4; i++)
			ws[i] = write_wr(0xd091 + i, 100, 100, B.mr.iova + 100,
					 B.mr.key);
		ws[0].sge[0].lkey = 0xdead00;
		ws[0].flags = 0;
		ws[2].flags = 0;
		sim_post_send(&p.a, ws, 4);
		expect_cqe(&A.scq, 0xd091, -1, PVO_WC_LOC_PROT_ERR,
			   "first of 4 WQEs with a bad lkey, unsignaled: an "
			   "error always completes");
		for (i = 1; i < 4; i++)
			expect_cqe(&A.scq, 0xd091 + i, -1, PVO_WC_WR_FLUSH_ERR,
				   i == 2 ? "unsignaled WQE after the error"
					  : "WQE after the error");
		check_sq_consumed(&p.a, "flushed WQEs");
		/* posted to a QP in ERR: flushed too */
		w = write_wr(0xd0a1, 100, 100, B.mr.iova + 100, B.mr.key);
		w.flags = 0;
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xd0a1, -1, PVO_WC_WR_FLUSH_ERR,
			   "unsignaled WQE posted to a QP in ERR");
		pair_destroy(&p);
	}

	/* modify to ERR flushes the receive queue */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		for (i = 0; i < 5; i++)
			post_recv1(&p.b, &B, 0xd0b1 + i, 8192, 64);
		st = sim_qp_set_state(&p.b, PVO_QPS_ERR);
		TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_QP to ERR");
		for (i = 0; i < 5; i++)
			expect_cqe(&B.rcq, 0xd0b1 + i, -1, PVO_WC_WR_FLUSH_ERR,
				   "outstanding receive flushed");
		tap_ok(p.b.rq_prod ==
			   le32toh(sim_load_acquire(&p.b.rq.hdr->cons)),
		       "RQ cons has passed every flushed receive");
		expect_no_cqe(&B.rcq, 10, "after the flush");
		w = wr1(0xd0c1, PVO_WR_SEND, &A, 100, 100);
		st = sim_qp_set_state(&p.a, PVO_QPS_ERR);
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xd0c1, -1, PVO_WC_WR_FLUSH_ERR,
			   "SEND posted after MODIFY_QP to ERR");
		pair_destroy(&p);
	}

	/* CQ overrun: 8 completions into a 4-entry CQ nobody polls */
	{
		struct sim_qp_init in = qp_init(&A, PVO_QPT_RC);
		struct sim_qp qa, qb;
		struct sim_cq small;
		struct sim_peer pa, pb;
		struct sim_wr ws[8];
		struct sim_conn cn = {.sgid_index = pair_gid()};
		uint32_t depth;
		int ev;

		st = sim_create_cq(&A.ctx, 4, &small);
		in.send_cq = &small;
		if (st == PVO_STATUS_OK)
			st = sim_create_qp(&A.pd, &in, &qa);
		if (st == PVO_STATUS_OK) {
			struct sim_qp_init ib = qp_init(&B, PVO_QPT_RC);

			st = sim_create_qp(&B.pd, &ib, &qb);
		}
		if (st == PVO_STATUS_OK) {
			sim_qp_peer(&qb, pair_gid(), &pb);
			sim_qp_peer(&qa, pair_gid(), &pa);
			st = sim_qp_connect(&qa, &cn, &pb);
			if (st == PVO_STATUS_OK)
				st = sim_qp_connect(&qb, &cn, &pa);
		}
		if (TAP_STATUS(st, PVO_STATUS_OK,
			       "QP whose send CQ has 4 entries")) {
			bool reused = true;

			/* a CQ the guest keeps draining is used far past its
			 * size: the device's cached view of the consumer is
			 * refreshed when the ring looks full, never an
			 * overrun */
			for (i = 0; i < 12 && reused; i++) {
				ws[0] = write_wr(0xd0c8 + i, 100, 64,
						 B.mr.iova + 100, B.mr.key);
				reused = sim_post_send(&qa, ws, 1) == 0 &&
					 expect_cqe(&small, 0xd0c8 + i,
						    PVO_WC_RDMA_WRITE,
						    PVO_WC_SUCCESS,
						    "WRITE through a drained "
						    "4-entry CQ");
			}
			tap_ok(reused, "12 completions through a 4-entry CQ "
				       "that is polled in between");
			sim_vm_drop_events(A.vm, 0);
			for (i = 0; i < 8; i++)
				ws[i] = write_wr(0xd0d1 + i, 100, 64,
						 B.mr.iova + 100, B.mr.key);
			sim_post_send(&qa, ws, 8);
			ev = sim_vm_expect_events(A.vm, PVO_EV_CQ_ERR,
						  small.handle, 1, timeout_ms,
						  30);
			depth = sim_cq_pending(&small);
			tap_ok(depth <= 4,
			       "the device never fills the CQ past its 4 "
			       "entries (%u)",
			       depth);
			tap_ok(ev == 1,
			       "CQ overrun raises one CQ_ERR event "
			       "for the CQ (%d)",
			       ev);
			expect_state(&qa, PVO_QPS_ERR, "CQ overrun");
			sim_destroy_qp(&qa);
			sim_destroy_qp(&qb);
		} else {
			tap_diag("%s / %s", A.vm->err, B.vm->err);
		}
		sim_destroy_cq(&small);
		drain(&B);
	}
	(void)c;
}

/* ------------------------------------------------------------------ */
/* RESET and tiny rings                                               */

/*
 * QEMU sends the memory table again on VM continue (and on memory
 * hot-plug); libvhost-user then maps guest RAM afresh and unmaps the old
 * mappings, and the back-end places each new mapping at its next colour,
 * so host addresses move. Rings and MRs made before must work through the
 * new mappings (the back-end caches ring addresses per memory table).
 */
void test_mem_table_again(void)
{
	struct node *nodes[] = {&A, &B};
	struct pair p;
	unsigned int i;
	bool ok = true;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	ok &= xfer(&p, X_SEND, 4096, src_off(1), dst_off(1), false, 1300);
	ok &= xfer(&p, X_WRITE, 8192, src_off(2), dst_off(2), false, 1301);
	tap_ok(ok, "transfers before the memory table comes again");
	for (i = 0; i < 2; i++) {
		struct vu_frontend *fe = nodes[i]->vm->fe;
		int st = vu_frontend_stop(fe);

		if (!st)
			st = vu_frontend_start(fe);
		tap_ok(st == 0,
		       "%s: stopped, then SET_MEM_TABLE and the rings again "
		       "(%s)",
		       nodes[i]->name, st ? vu_frontend_error(fe) : "ok");
	}
	ok = xfer(&p, X_SEND, 4096, src_off(3), dst_off(3), false, 1302);
	ok &= xfer(&p, X_SEND_IMM, 65536, src_off(4), dst_off(4), false,
		   1303);
	ok &= xfer(&p, X_WRITE, 65536, src_off(5), dst_off(5), false, 1304);
	ok &= xfer(&p, X_READ, 8192, src_off(6), dst_off(6), false, 1305);
	tap_ok(ok, "the same QPs move data through the new mappings");
	check_sq_consumed(&p.a, "after the memory table came again");
	pair_destroy(&p);
}

void test_reset(void)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_peer pa, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_qp qa, qb;
	struct sim_wr w[3];
	struct pair p;
	unsigned int i;
	int st;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	/* receives outstanding and WQEs the device has not seen */
	for (i = 0; i < 3; i++) {
		post_recv1(&p.b, &B, 0xd201 + i, 8192, 64);
		w[i] =
		    write_wr(0xd211 + i, 100, 100, B.mr.iova + 100, B.mr.key);
	}
	sim_post_send_nodb(&p.a, w, 3);
	st = sim_qp_set_state(&p.a, PVO_QPS_RESET);
	if (st == PVO_STATUS_OK)
		st = sim_qp_set_state(&p.b, PVO_QPS_RESET);
	TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_QP RTS -> RESET on both");
	expect_no_cqe(&A.scq, 30, "RESET drops unexecuted send WQEs");
	expect_no_cqe(&B.rcq, 0, "RESET drops posted receives");
	tap_ok(p.a.sq_prod == le32toh(sim_load_acquire(&p.a.sq.hdr->cons)) &&
		   p.b.rq_prod == le32toh(sim_load_acquire(&p.b.rq.hdr->cons)),
	       "RESET sets SQ and RQ cons = prod (SQ %u/%u, RQ %u/%u)",
	       le32toh(p.a.sq.hdr->cons), p.a.sq_prod,
	       le32toh(p.b.rq.hdr->cons), p.b.rq_prod);
	/* the same QPs connect again and carry on from there */
	sim_qp_peer(&p.b, pair_gid(), &pb);
	sim_qp_peer(&p.a, pair_gid(), &pa);
	st = sim_qp_connect(&p.a, &conn, &pb);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&p.b, &conn, &pa);
	if (TAP_STATUS(st, PVO_STATUS_OK, "RESET -> INIT -> RTR -> RTS again"))
		xfer(&p, X_SEND, 5000, 300, 400, false, 9600);
	pair_destroy(&p);

	/* rings of one entry */
	in.sq_entries = in.rq_entries = 1;
	ib.sq_entries = ib.rq_entries = 1;
	st = sim_create_qp(&A.pd, &in, &qa);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &ib, &qb);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&qb, pair_gid(), &pb);
		sim_qp_peer(&qa, pair_gid(), &pa);
		st = sim_qp_connect(&qa, &conn, &pb);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&qb, &conn, &pa);
	}
	if (TAP_STATUS(st, PVO_STATUS_OK, "RC QPs with 1-entry SQ and RQ")) {
		struct pair q = {
		    .na = &A, .nb = &B, .a = qa, .b = qb, .made = true};
		bool ok = true;

		for (i = 0; i < 5 && ok; i++)
			ok = xfer(&q, i & 1 ? X_WRITE : X_SEND, 777 + i, 64,
				  128, false, 9610 + i);
		tap_ok(ok, "five messages through the 1-entry rings");
		pair_destroy(&q);
	}
}

/* ------------------------------------------------------------------ */
/* REREG_MR                                                           */

/* A WRITE of 200 bytes from a into @mr at @raddr on a fresh RC pair. */
static bool rereg_write(uint64_t id, uint64_t raddr, uint32_t rkey,
			unsigned int status, const char *what)
{
	struct pair p;
	struct sim_wr w;
	bool ok;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return false;
	w = write_wr(id, 0, 200, raddr, rkey);
	post1(&p.a, &w);
	ok = expect_cqe(&A.scq, id, PVO_WC_RDMA_WRITE, status, what);
	pair_destroy(&p);
	return ok;
}

void test_rereg_mr(void)
{
	const uint32_t rw = PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE;
	struct sim_pd pd2;
	struct sim_mr mr, other;
	uint32_t key1;
	int st;

	st = sim_reg_mr(&B.pd, &B.buf, 0, 64 * KIB, rw, &mr);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "rereg: an MR of 64 KiB on b"))
		return;
	key1 = mr.key;
	fill_pattern(&A.buf, 0, 200, 9500);
	prepare_dst(&B.buf, 1000, 200);
	rereg_write(0xd001, mr.iova + 1000, mr.key, PVO_WC_SUCCESS,
		    "rereg: WRITE before");
	check_data("rereg: WRITE before", &B.buf, 1000, 200, 9500);

	st = sim_rereg_mr(&mr, 0, NULL, NULL, 0, 0, 0);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "REREG_MR without a flag -> EINVAL");
	st = sim_rereg_mr(&mr, 8, NULL, NULL, 0, 0, 0);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "REREG_MR with flag 8 -> EINVAL");
	st = sim_rereg_mr(&mr, PVO_REREG_ACCESS, NULL, NULL, 0, 0,
			  PVO_ACCESS_REMOTE_WRITE);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "REREG_MR to REMOTE_WRITE without LOCAL_WRITE -> EINVAL");
	other = mr;
	other.ctx = &B.vm->kctx;
	st = sim_rereg_mr(&other, PVO_REREG_ACCESS, NULL, NULL, 0, 0, rw);
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "REREG_MR of a user context's MR for the kernel -> ENOENT");

	/* new pages, iova and length; and a new PD */
	st = sim_alloc_pd(&B.ctx, &pd2);
	if (st == PVO_STATUS_OK)
		st = sim_rereg_mr(&mr, PVO_REREG_TRANS | PVO_REREG_PD, &pd2,
				  &B.buf, 128 * KIB, 32 * KIB, 0);
	/* the key stays, as on rdma_rxe and mlx5; on host verbs the host
	 * device registers a new MR with a key of its own */
	tap_ok(st == PVO_STATUS_OK &&
		   (hv_dev[0] ? mr.key != key1 : mr.key == key1),
	       "REREG_MR to 32 KiB at b's offset 128 KiB in another PD: same "
	       "handle, %s key (0x%x -> 0x%x, %s)",
	       hv_dev[0] ? "the host MR's new" : "the same", key1, mr.key,
	       pvo_status_name(st));
	st = sim_dealloc_pd(&pd2);
	TAP_STATUS(st, PVO_STATUS_EBUSY,
		   "the new PD holds the MR now (DEALLOC_PD -> EBUSY)");
	if (hv_dev[0])
		rereg_write(0xd002, mr.iova + 1000, key1,
			    PVO_WC_REM_ACCESS_ERR,
			    "rereg: WRITE with the old host key -> "
			    "REM_ACCESS_ERR");
	/* the pair's QPs are in b's first PD: the MR moved away from it */
	rereg_write(0xd003, mr.iova + 1000, mr.key, PVO_WC_REM_ACCESS_ERR,
		    "rereg: WRITE from a QP of the MR's old PD -> "
		    "REM_ACCESS_ERR");
	st = sim_rereg_mr(&mr, PVO_REREG_PD, &B.pd, NULL, 0, 0, 0);
	TAP_STATUS(st, PVO_STATUS_OK, "REREG_MR back to b's first PD");
	fill_pattern(&A.buf, 0, 200, 9501);
	prepare_dst(&B.buf, 128 * KIB + 1000, 200);
	rereg_write(0xd004, mr.iova + 1000, mr.key, PVO_WC_SUCCESS,
		    "rereg: WRITE into the new range");
	check_data("rereg: the WRITE landed in the new pages", &B.buf,
		   128 * KIB + 1000, 200, 9501);
	st = sim_rereg_mr(&mr, PVO_REREG_ACCESS, NULL, NULL, 0, 0,
			  PVO_ACCESS_LOCAL_WRITE);
	TAP_STATUS(st, PVO_STATUS_OK, "REREG_MR to LOCAL_WRITE only");
	rereg_write(0xd005, mr.iova + 1000, mr.key, PVO_WC_REM_ACCESS_ERR,
		    "rereg: WRITE after remote write was taken away -> "
		    "REM_ACCESS_ERR");
	/* and back: the key the peer holds works again (what rdma-core's
	 * tests of ibv_rereg_mr expect of rdma_rxe and mlx5) */
	key1 = mr.key;
	st = sim_rereg_mr(&mr, PVO_REREG_ACCESS, NULL, NULL, 0, 0, rw);
	TAP_STATUS(st, PVO_STATUS_OK, "REREG_MR to remote write again");
	fill_pattern(&A.buf, 0, 200, 9502);
	prepare_dst(&B.buf, 128 * KIB + 1000, 200);
	rereg_write(0xd006, mr.iova + 1000, hv_dev[0] ? mr.key : key1,
		    PVO_WC_SUCCESS,
		    "rereg: WRITE with the key from before the access change");
	check_data("rereg: the WRITE after the access change landed",
		   &B.buf, 128 * KIB + 1000, 200, 9502);
	sim_dereg_mr(&mr);
	sim_dealloc_pd(&pd2);
	drain_all();
}
