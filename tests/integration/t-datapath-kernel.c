// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: doorbells, kernel QPs and GSI (QP1) MADs.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* doorbells and kernel QPs                                           */

void test_doorbells(void)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_qp qx, qb;
	struct sim_peer px, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_ctx ctx3;
	struct sim_mr mr2;
	struct pvo_cqe c[64];
	struct sim_wr w;
	struct pair p;
	uint64_t sum;
	unsigned int i, posted, got;
	int st;

	if (!ensure_ctx2())
		return;
	in.send_cq = in.recv_cq = &cq2;
	st = sim_create_qp(&pd2, &in, &qx);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &ib, &qb);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&qb, pair_gid(), &pb);
		sim_qp_peer(&qx, pair_gid(), &px);
		st = sim_qp_connect(&qx, &conn, &pb);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&qb, &conn, &px);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK, "RC pair from a's second context")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}
	st =
	    sim_reg_mr(&pd2, &A.buf, 0, 64 * KIB, PVO_ACCESS_LOCAL_WRITE, &mr2);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "an MR of the second context")) {
		tap_diag("%s", A.vm->err);
		return;
	}
	w = write_wr(0xf001, 100, 100, B.mr.iova + 100, B.mr.key);
	w.sge[0].lkey = mr2.key;
	fill_pattern(&A.buf, 100, 100, 9100);
	prepare_dst(&B.buf, 100, 100);
	sum = buf_sum(&B.buf);
	sim_post_send_nodb(&qx, &w, 1);
	sim_ctx_ring(&A.ctx, qx.handle);
	sleep_ms(50);
	tap_ok(sim_cq_pending(&cq2) == 0 && buf_sum(&B.buf) == sum,
	       "a doorbell record naming another context's QP is ignored");
	sim_qp_doorbell(&qx);
	expect_cqe(&cq2, 0xf001, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "the owner's doorbell runs the same WQE");
	check_data("WRITE after the owner's doorbell", &B.buf, 100, 100, 9100);

	/* garbage records and kicks without records */
	{
		const uint32_t junk[] = {0,	      0xffffffffu,
					 0x12345678u, A.scq.handle,
					 A.mr.handle, qx.handle};

		sim_destroy_qp(&qx);
		sim_dereg_mr(&mr2);
		for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
			sim_ctx_ring(&A.ctx, junk[i]);
		for (i = 0; i < 10; i++)
			sim_ctx_kick(&A.ctx);
		/* kicks of every vring, assigned to a context or not */
		for (i = 0; i < A.vm->fe->nvqs; i++)
			split_vq_kick(vu_vq(A.vm->fe, i));
		sim_destroy_qp(&qb);
	}
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		xfer(&p, X_WRITE, 5000, 77, 88, false, 9101);
		pair_destroy(&p);
	}
	tap_ok(backend_running(&bp),
	       "records of destroyed QPs, CQ and MR handles, 0 and ~0, "
	       "kicks without records and kicks of every vring were "
	       "survived");

	/* a context whose record ring is nonsense */
	st = sim_ctx_open(A.vm, &ctx3);
	if (TAP_STATUS(st, PVO_STATUS_OK, "a third context")) {
		struct pvo_ring_hdr *h = sim_ctx_db_hdr(&ctx3);
		__le32 *e = sim_ctx_db_entries(&ctx3);

		for (i = 0; i < PVO_DB_RING_ENTRIES; i++)
			e[i] = htole32(0x41414141 + i);
		h->cons = htole32(7);
		h->prod = htole32(100000);
		sim_ctx_kick(&ctx3);
		h->prod = htole32(3);
		sim_ctx_kick(&ctx3);
		sleep_ms(20);
		st = sim_ctx_close(&ctx3);
		TAP_STATUS(st, PVO_STATUS_OK,
			   "a context with a nonsense record ring can be "
			   "freed");
	}
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		xfer(&p, X_SEND, 3000, 55, 66, false, 9102);

		/* one post per doorbell, as fast as possible */
		long long deadline = now_ms() + 4 * timeout_ms;

		posted = got = 0;
		while (got < 2000 && now_ms() < deadline) {
			int n;

			if (posted < 2000 && sim_sq_outstanding(&p.a) < 200) {
				w = write_wr(posted, 1000 + posted % 50, 8,
					     B.mr.iova + 1000 + posted % 50,
					     B.mr.key);
				if (sim_post_send(&p.a, &w, 1) == 0)
					posted++;
				continue;
			}
			n = sim_wait_cq(&A.scq, c, 64,
					posted < 2000 ? 0 : timeout_ms);
			if (n <= 0 && posted == 2000)
				break;
			got += n > 0 ? n : 0;
		}
		tap_ok(got == 2000,
		       "2000 single-WQE posts racing the device: all complete "
		       "(%u), %llu doorbell records",
		       got, (unsigned long long)p.a.doorbells);
		pair_destroy(&p);
	}
}

/* QP1 of a's kernel to QP1 of b's kernel, as ib_mad does. */
void test_gsi(void)
{
	const uint32_t gsi_qkey = 0x80010000u;
	struct sim_qp_init gi = {
	    .type = PVO_QPT_GSI,
	    .sq_entries = 64,
	    .rq_entries = 64,
	    .max_send_sge = 2,
	    .max_recv_sge = 2,
	};
	struct sim_conn conn = {.qkey = gsi_qkey};
	struct sim_pd kpd[2];
	struct sim_cq kcq[2];
	struct sim_qp gsi[2];
	struct node *n[2] = {&A, &B};
	struct sim_peer peer;
	struct pvo_av av;
	struct pvo_cqe c;
	struct sim_wr w;
	uint32_t ah;
	uint8_t grh[40];
	unsigned int i;
	int st = PVO_STATUS_OK;

	for (i = 0; i < 2 && st == PVO_STATUS_OK; i++) {
		st = sim_alloc_pd(&n[i]->vm->kctx, &kpd[i]);
		if (st == PVO_STATUS_OK)
			st = sim_create_cq(&n[i]->vm->kctx, 64, &kcq[i]);
		gi.send_cq = gi.recv_cq = &kcq[i];
		if (st == PVO_STATUS_OK)
			st = sim_create_qp(&kpd[i], &gi, &gsi[i]);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&gsi[i], &conn, NULL);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"GSI QPs of a's and b's kernels to RTS")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}
	tap_ok(gsi[0].qpn == 1 && gsi[1].qpn == 1, "both are QPN 1 (%u, %u)",
	       gsi[0].qpn, gsi[1].qpn);
	sim_qp_peer(&gsi[1], pair_gid(), &peer);
	sim_av_to(&av, &peer, pair_gid());
	st = sim_create_ah(&kpd[0], &av, &ah);
	TAP_STATUS(st, PVO_STATUS_OK, "kernel AH to b's link-local GID");

	/* a MAD: 256 bytes from guest-physical memory */
	fill_pattern(&A.buf, 3 * PVO_PAGE_SIZE + 8, 256, 9250);
	prepare_dst(&B.buf, 5 * PVO_PAGE_SIZE + 64, 296);
	{
		struct sim_sge s = {
		    .addr = sim_buf_gpa(&B.buf, 5 * PVO_PAGE_SIZE + 64),
		    .length = 296,
		    .lkey = PVO_LOCAL_DMA_LKEY,
		};

		sim_post_recv(&gsi[1], 0xf301, &s, 1);
	}
	w = wr1(0xf302, PVO_WR_SEND, &A, 0, 256);
	w.sge[0].addr = sim_buf_gpa(&A.buf, 3 * PVO_PAGE_SIZE + 8);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	w.ah = ah;
	w.remote_qpn = 1;
	w.remote_qkey = gsi_qkey;
	post1(&gsi[0], &w);
	expect_cqe(&kcq[0], 0xf302, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "GSI SEND of a 256-byte MAD from a to b");
	if (get_cqe(&kcq[1], &c, "GSI receive"))
		tap_ok(cqe_ok(&c, 0xf301, PVO_WC_RECV, PVO_WC_SUCCESS,
			      "GSI receive") &&
			   le32toh(c.src_qp) == 1 &&
			   le32toh(c.byte_len) == 296 &&
			   (c.flags & PVO_WC_F_GRH),
		       "b's GSI receives it: src_qp 1, byte_len 40 + 256, "
		       "GRH (got %s)",
		       cqe_str(&c));
	sim_buf_read(&B.buf, 5 * PVO_PAGE_SIZE + 64, grh, 40);
	sim_buf_fill(&B.buf, 5 * PVO_PAGE_SIZE + 64, GUARD_BYTE, 40);
	check_data("GSI MAD", &B.buf, 5 * PVO_PAGE_SIZE + 104, 256, 9250);

	/* a user UD QP cannot reach QP1: its Q_Key is not the GSI's */
	{
		struct ud_pair u;

		if (ud_make(&u, &A, &B)) {
			struct sim_sge s = {
			    .addr = sim_buf_gpa(&B.buf, 5 * PVO_PAGE_SIZE + 64),
			    .length = 296,
			    .lkey = PVO_LOCAL_DMA_LKEY,
			};

			sim_post_recv(&gsi[1], 0xf303, &s, 1);
			w = ud_wr(0xf304, u.ah_ll, 1, 0x80000000u, 4096, 64);
			post1(&u.a, &w);
			expect_cqe(&A.scq, 0xf304, -1, PVO_WC_SUCCESS,
				   "user UD SEND to QPN 1 with \"the QP's "
				   "Q_Key\"");
			expect_no_cqe(&kcq[1], 30,
				      "b's GSI does not take a user QP's "
				      "Q_Key");
			ud_destroy(&u, &A, &B);
		}
	}
	sim_destroy_ah(&A.vm->kctx, ah);
	for (i = 0; i < 2; i++) {
		sim_destroy_qp(&gsi[i]);
		sim_destroy_cq(&kcq[i]);
		sim_dealloc_pd(&kpd[i]);
	}
}

/* A kernel RC QP on a (in kpd, completing to kcq) connected to a user RC
 * QP on b; a pvo_status. */
static int kernel_pair(struct sim_pd *kpd, struct sim_cq *kcq,
		       struct sim_qp *qk, struct sim_qp *qb)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_peer pk, pb;
	int st;

	in.send_cq = in.recv_cq = kcq;
	st = sim_create_qp(kpd, &in, qk);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &ib, qb);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(qb, pair_gid(), &pb);
		sim_qp_peer(qk, pair_gid(), &pk);
		st = sim_qp_connect(qk, &conn, &pb);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(qb, &conn, &pk);
	}
	return st;
}

void test_kernel_qp(void)
{
	struct sim_ctx *k = &A.vm->kctx;
	struct sim_pd kpd;
	struct sim_cq kcq;
	struct sim_qp qk, qb;
	struct sim_wr w;
	struct pvo_cqe c;
	const uint64_t off = 3 * PVO_PAGE_SIZE + 500; /* within one page */
	int st;

	st = sim_alloc_pd(k, &kpd);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(k, 64, &kcq);
	if (st == PVO_STATUS_OK)
		st = kernel_pair(&kpd, &kcq, &qk, &qb);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"kernel RC QP on a (doorbells via queue 2) connected "
			"to a user QP on b")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}
	fill_pattern(&A.buf, off, 1000, 9200);
	prepare_dst(&B.buf, 4096, 1000);
	post_recv1(&qb, &B, 0xf101, 4096, 1000);
	w = wr1(0xf102, PVO_WR_SEND, &A, 0, 1000);
	w.sge[0].addr = sim_buf_gpa(&A.buf, off);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf102, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "kernel SEND from a guest-physical SGE (local DMA lkey)");
	expect_cqe(&B.rcq, 0xf101, PVO_WC_RECV, PVO_WC_SUCCESS,
		   "  ... received by the user QP");
	check_data("kernel SEND", &B.buf, 4096, 1000, 9200);
	tap_ok(k->doorbells > 0, "the kernel rang its own doorbell queue");

	fill_pattern(&B.buf, 8192 + 3, 900, 9201);
	prepare_dst(&A.buf, off, 900);
	w = wr1(0xf103, PVO_WR_RDMA_READ, &A, 0, 900);
	w.sge[0].addr = sim_buf_gpa(&A.buf, off);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	w.remote_addr = B.mr.iova + 8192 + 3;
	w.rkey = B.mr.key;
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf103, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "kernel RDMA READ into a guest-physical SGE");
	check_data("kernel RDMA READ", &A.buf, off, 900, 9201);

	w = wr1(0xf104, PVO_WR_SEND, &A, 0, 100);
	w.sge[0].addr = sim_vm_ram(A.vm)->size - 50;
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	post_recv1(&qb, &B, 0xf105, 4096, 1000);
	post1(&qk, &w);
	if (get_cqe(&kcq, &c, "kernel SEND past the end of guest RAM"))
		tap_ok(c.status == PVO_WC_LOC_PROT_ERR ||
			   c.status == PVO_WC_LOC_ACCESS_ERR,
		       "kernel SEND from guest-physical memory past the end "
		       "of RAM: LOC_PROT_ERR (got %s)",
		       sim_wc_status_name(c.status));
	sim_destroy_qp(&qk);
	sim_destroy_qp(&qb);
	sim_destroy_cq(&kcq);
	sim_dealloc_pd(&kpd);
	drain(&B);
}

/* ------------------------------------------------------------------ */
/* fast registration: ALLOC_MR, REG_MR, LOCAL_INV, SEND_WITH_INV      */

static struct sim_wr reg_wr(uint64_t id, uint64_t iova, uint64_t len,
			    uint64_t pages, uint32_t npages, uint32_t key)
{
	struct sim_wr w = {.wr_id = id,
			   .opcode = PVO_WR_REG_MR,
			   .flags = PVO_WQE_F_SIGNALED};

	w.reg.iova = iova;
	w.reg.length = len;
	w.reg.pages = pages;
	w.reg.npages = npages;
	w.reg.key = key;
	w.reg.access = PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
		       PVO_ACCESS_REMOTE_READ;
	return w;
}

void test_fast_reg(void)
{
	struct sim_ctx *k = &A.vm->kctx;
	struct guest_ram *ram = sim_vm_ram(A.vm);
	struct sim_qp_init iu = qp_init(&A, PVO_QPT_UD);
	struct sim_conn conn = {.sgid_index = pair_gid()};
	const uint64_t iova = 0x7000000064ull;
	struct sim_buf fb; /* the fast-reg MR's pages: 4, page aligned */
	struct sim_qp qk, qb, qu;
	struct sim_pd kpd;
	struct sim_cq kcq;
	uint32_t mr, key, key0, i, junk_mr, junk_key;
	uint64_t list, sum;
	uint64_t *pages;
	struct pvo_cqe c;
	struct sim_wr w;
	int st;

	st = pvo_alloc_mr(A.vm->fe, A.ctx.handle, A.pd.handle, 4, &junk_mr,
			  &junk_key);
	TAP_STATUS(st, PVO_STATUS_EPERM,
		   "ALLOC_MR for a user context -> EPERM (page lists are "
		   "guest-physical)");
	st = sim_alloc_pd(k, &kpd);
	if (st == PVO_STATUS_OK) {
		st = pvo_alloc_mr(A.vm->fe, PVO_CTX_KERNEL, kpd.handle,
				  PVO_MAX_FAST_REG_PAGES + 1, &junk_mr,
				  &junk_key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "ALLOC_MR of %u pages -> EINVAL",
			   PVO_MAX_FAST_REG_PAGES + 1);
		st = pvo_alloc_mr(A.vm->fe, PVO_CTX_KERNEL, kpd.handle, 4, &mr,
				  &key0);
	}
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(k, 64, &kcq);
	if (st == PVO_STATUS_OK)
		st = kernel_pair(&kpd, &kcq, &qk, &qb);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"fast-reg MR of 4 pages and a kernel RC QP on a, "
			"connected to a user QP on b")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}

	/* The page list: three pages of fb, not in order. */
	if (sim_buf_alloc(&fb, ram, sim_vm_va(A.vm, 5 * 4096), 4 * 4096, 0,
			  SIM_LAYOUT_SCATTER) < 0)
		tap_bail("no guest RAM for the fast-reg buffer");
	list = guest_ram_alloc(ram, 4096, 4096);
	pages = guest_ram_ptr(ram, list, 4096);
	pages[0] = htole64(sim_buf_gpa(&fb, 2 * 4096));
	pages[1] = htole64(sim_buf_gpa(&fb, 0));
	pages[2] = htole64(sim_buf_gpa(&fb, 4096));
	key = (key0 & ~0xffu) | 0x5a;

	w = reg_wr(0xf201, iova, 2 * 4096, list, 3, key);
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf201, PVO_WC_REG_MR, PVO_WC_SUCCESS,
		   "REG_MR of 3 scattered pages at iova 0x...64, new key byte "
		   "0x5a");
	fill_pattern(&B.buf, 0, 1000, 9300);
	prepare_dst(&fb, 2 * 4096 + 4070, 26);
	prepare_dst(&fb, 0, 1000);
	w = write_wr(0xf202, 0, 1000, iova + 3970, key);
	post1(&qb, &w);
	expect_cqe(&B.scq, 0xf202, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "RDMA WRITE through the fast-registered rkey");
	/* iova + 3970 is page 0 offset 0x64 + 3970 = 4070: 26 bytes
	 * there, the rest at the start of page 1 (fb's first page) */
	tap_ok(data_ok("fast-reg WRITE, first page", &fb, 2 * 4096 + 4070,
		       26, 9300, 0) &&
		   data_ok("fast-reg WRITE, second page", &fb, 0, 1000 - 26,
			   9300, 26),
	       "the WRITE landed in the pages of the page list, in its order");

	w = reg_wr(0xf203, iova, 2 * 4096, list, 3, key);
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf203, PVO_WC_REG_MR, PVO_WC_LOC_QP_OP_ERR,
		   "REG_MR of an MR that is still valid -> LOC_QP_OP_ERR");
	drain_all();
	sim_destroy_qp(&qk);
	sim_destroy_qp(&qb);

	/* SEND_WITH_INV from b invalidates the rkey at a. */
	st = kernel_pair(&kpd, &kcq, &qk, &qb);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "a second kernel/user RC pair"))
		return;
	w = (struct sim_wr){.wr_id = 0xf204, .opcode = PVO_WR_SEND,
			    .num_sge = 1};
	w.sge[0] = (struct sim_sge){sim_buf_gpa(&A.buf, 0), 512,
				    PVO_LOCAL_DMA_LKEY};
	sim_post_recv(&qk, 0xf204, w.sge, 1);
	w = wr1(0xf205, PVO_WR_SEND_WITH_INV, &B, 0, 100);
	w.invalidate_rkey = key;
	post1(&qb, &w);
	expect_cqe(&B.scq, 0xf205, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "SEND_WITH_INV naming the fast-reg rkey completes");
	if (get_cqe(&kcq, &c, "receive of SEND_WITH_INV"))
		tap_ok(c.status == PVO_WC_SUCCESS && c.opcode == PVO_WC_RECV &&
			   (c.flags & PVO_WC_F_INV) &&
			   le32toh((uint32_t)c.imm_data) == key,
		       "the receive completion says 'invalidated' and names "
		       "rkey 0x%x (%s, flags 0x%x, 0x%x)",
		       key, sim_wc_status_name(c.status), c.flags,
		       le32toh((uint32_t)c.imm_data));
	w = reg_wr(0xf206, iova, 3996, list, 1, (key0 & ~0xffu) | 0x5b);
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf206, PVO_WC_REG_MR, PVO_WC_SUCCESS,
		   "the invalidated MR registers again (key byte 0x5b)");
	w = (struct sim_wr){.wr_id = 0xf207,
			    .opcode = PVO_WR_LOCAL_INV,
			    .flags = PVO_WQE_F_SIGNALED,
			    .invalidate_rkey = (key0 & ~0xffu) | 0x5b};
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf207, PVO_WC_LOCAL_INV, PVO_WC_SUCCESS,
		   "LOCAL_INV of the new key");
	sum = buf_sum(&fb);
	w = write_wr(0xf208, 0, 64, iova, (key0 & ~0xffu) | 0x5b);
	post1(&qb, &w);
	expect_cqe(&B.scq, 0xf208, PVO_WC_RDMA_WRITE, PVO_WC_REM_ACCESS_ERR,
		   "RDMA WRITE with the invalidated rkey -> REM_ACCESS_ERR");
	tap_ok(buf_sum(&fb) == sum,
	       "nothing written through the invalidated rkey");
	drain_all();
	sim_destroy_qp(&qk);
	sim_destroy_qp(&qb);

	/* Bad page lists, and REG_MR from a user QP. */
	for (i = 0; i < 2; i++) {
		if (kernel_pair(&kpd, &kcq, &qk, &qb) != PVO_STATUS_OK)
			break;
		pages[0] = htole64(i == 0 ? sim_buf_gpa(&fb, 0) + 8
					  : ram->size);
		w = reg_wr(0xf209, iova, 4096, list, 1, key);
		post1(&qk, &w);
		expect_cqe(&kcq, 0xf209, PVO_WC_REG_MR, PVO_WC_LOC_QP_OP_ERR,
			   i == 0 ? "REG_MR with an unaligned page -> "
				    "LOC_QP_OP_ERR"
				  : "REG_MR with a page past guest RAM -> "
				    "LOC_QP_OP_ERR");
		drain_all();
		sim_destroy_qp(&qk);
		sim_destroy_qp(&qb);
	}
	iu.send_cq = iu.recv_cq = &A.scq;
	st = sim_create_qp(&A.pd, &iu, &qu);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&qu, &conn, NULL);
	if (TAP_STATUS(st, PVO_STATUS_OK, "a user UD QP on a")) {
		pages[0] = htole64(sim_buf_gpa(&fb, 0));
		w = reg_wr(0xf20a, iova, 4096, list, 1, key);
		post1(&qu, &w);
		expect_cqe(&A.scq, 0xf20a, PVO_WC_REG_MR, PVO_WC_LOC_QP_OP_ERR,
			   "REG_MR from a user QP -> LOC_QP_OP_ERR");
		sim_destroy_qp(&qu);
	}
	drain_all();
	TAP_STATUS(pvo_destroy(A.vm->fe, PVO_CMD_DEREG_MR, PVO_CTX_KERNEL, mr),
		   PVO_STATUS_OK, "DEREG_MR of the fast-reg MR");
	sim_buf_free(&fb);
	sim_destroy_cq(&kcq);
	sim_dealloc_pd(&kpd);
}
