// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: tenant isolation (cross-tenant QPs, rogue writes, route
 * changes) and per-VM quotas.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* tenant isolation                                                   */

/* QP on @from aimed at @to's QP through @to's GID @gid: both set up as a
 * connected pair would be, but across tenants. */
static bool cross_pair(struct pair *p, struct node *from, struct node *to,
		       const uint8_t *dgid, uint8_t type)
{
	struct sim_conn cf = fast, ct = fast;
	struct sim_qp_init ia = qp_init(from, type), ib = qp_init(to, type);
	struct sim_peer pf, pt;
	int st;

	memset(p, 0, sizeof(*p));
	p->na = from;
	p->nb = to;
	cf.sgid_index = (uint8_t)from->gid_v4;
	ct.sgid_index = (uint8_t)to->gid_v4;
	st = sim_create_qp(&from->pd, &ia, &p->a);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&to->pd, &ib, &p->b);
	if (st != PVO_STATUS_OK)
		goto fail;
	sim_qp_peer(&p->b, to->gid_v4, &pt);
	memcpy(pt.gid, dgid, 16);
	sim_qp_peer(&p->a, from->gid_v4, &pf);
	st = sim_qp_connect(&p->a, &cf, &pt);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&p->b, &ct, &pf);
	if (st != PVO_STATUS_OK && hv_dev[0] &&
	    (from == &A || from == &B || to == &A || to == &B)) {
		/* tenant blue on host verbs: the host device finds nobody
		 * at the address in blue's network (EHOSTUNREACH), or the
		 * address is outside it (EPERM) */
		tap_ok(st == PVO_STATUS_EHOSTUNREACH || st == PVO_STATUS_EPERM,
		       "QPs %s -> %s: the host device does not reach the "
		       "address from tenant blue's network: MODIFY_QP to RTR "
		       "refused (%s)",
		       from->name, to->name, pvo_status_name(st));
		p->made = true;
		pair_destroy(p);
		return false;
	}
	if (st != PVO_STATUS_OK)
		goto fail;
	p->made = true;
	return true;
fail:
	tap_ok(false, "QPs %s -> %s", from->name, to->name);
	tap_diag("%s / %s", from->vm->err, to->vm->err);
	return false;
}

static void isolation_rc(struct node *from, struct node *to, const char *dst_ip,
			 bool send, const char *what)
{
	uint8_t dgid[16];
	uint64_t sum_to, sum_b;
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;

	pvo_gid_from_ipv4(dgid, dst_ip);
	if (!cross_pair(&p, from, to, dgid, PVO_QPT_RC))
		return;
	if (send)
		post_recv1(&p.b, to, 0xf201, 0, 4096);
	fill_pattern(&from->buf, 0, 4096, 9300);
	sum_to = buf_sum(&to->buf);
	sum_b = buf_sum(&B.buf);
	if (send) {
		w = wr1(0xf202, PVO_WR_SEND, from, 0, 4096);
	} else {
		w = wr1(0xf202, PVO_WR_RDMA_WRITE, from, 0, 4096);
		w.remote_addr = to->mr.iova;
		w.rkey = to->mr.key;
	}
	post1(&p.a, &w);
	if (get_cqe(&from->scq, &c, what))
		tap_ok(c.status == PVO_WC_RETRY_EXC_ERR &&
			   le64toh(c.wr_id) == 0xf202,
		       "%s: RETRY_EXC_ERR on the requester (got %s)", what,
		       sim_wc_status_name(c.status));
	expect_state(&p.a, PVO_QPS_ERR, what);
	tap_ok(buf_sum(&to->buf) == sum_to,
	       "%s: %s's memory is byte for byte unchanged", what, to->name);
	if (to != &B)
		tap_ok(buf_sum(&B.buf) == sum_b,
		       "%s: b's memory is unchanged too", what);
	expect_no_cqe(&to->rcq, 20, what);
	pair_destroy(&p);
}

/* A QP of a that b's QP is not connected to must not reach it, even with
 * its QPN and b's rkey: either another QP (@same_qp false) or a's own
 * connected QP reconnected from another source GID. */
static void rogue_write(struct pair *p, bool same_qp, const char *what)
{
	if (overlay) {
		/* RC packets carry no source QPN, and a has one IPv4 GID:
		 * on the wire a QP is bound to its peer's address and tenant
		 * (as on RoCE hardware), which t-overlay-tenants covers */
		tap_skip(1, "over the overlay another QP of the same peer "
			    "address is indistinguishable on the wire");
		return;
	}
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC);
	struct sim_conn cn = fast;
	struct sim_peer peer;
	struct sim_qp rogue, *q = &rogue;
	struct pvo_cqe c;
	struct sim_wr w;
	uint64_t sum;
	int st;

	sim_qp_peer(&p->b, pair_gid(), &peer);
	if (same_qp) {
		q = &p->a;
		cn.sgid_index = (uint8_t)A.gid_v4;
		st = sim_qp_set_state(q, PVO_QPS_RESET);
	} else {
		st = sim_create_qp(&A.pd, &in, q);
	}
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(q, &cn, &peer);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "%s: QP set up", what)) {
		tap_diag("%s", A.vm->err);
		return;
	}
	sum = buf_sum(&B.buf);
	w = write_wr(0xf231, 0, 4096, B.mr.iova, B.mr.key);
	post1(q, &w);
	if (get_cqe(&A.scq, &c, what))
		tap_ok(c.status != PVO_WC_SUCCESS, "%s: the WRITE fails (%s)",
		       what, sim_wc_status_name(c.status));
	tap_ok(buf_sum(&B.buf) == sum, "%s: b's memory is unchanged", what);
	expect_state(&p->b, PVO_QPS_RTS, "  ... b's QP is not disturbed");
	if (!same_qp)
		sim_destroy_qp(&rogue);
}

/*
 * The local transport remembers each QP's route; removing the GID at the
 * other end must end it at once: the next WRITE finds no destination
 * (RETRY_EXC_ERR) and b's memory stays as it was. Installing the GID
 * again makes b reachable for a new pair.
 */
void test_route_change(void)
{
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;
	uint64_t sum;
	int st;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	xfer(&p, X_WRITE, 4096, 0, 0, false, 9360);
	st = pvo_del_gid(B.vm->fe, 1, 0);
	tap_ok(st == PVO_STATUS_OK, "b removes its GID 0 (%s)",
	       st < 0 ? "no answer" : pvo_status_name(st));
	sum = buf_sum(&B.buf);
	w = write_wr(0xf361, 0, 4096, B.mr.iova, B.mr.key);
	post1(&p.a, &w);
	if (get_cqe(&A.scq, &c, "WRITE to b's removed GID"))
		tap_ok(c.wr_id == 0xf361 && c.status == PVO_WC_RETRY_EXC_ERR,
		       "a WRITE to the removed GID on the same QP: "
		       "RETRY_EXC_ERR (got %s)",
		       sim_wc_status_name(c.status));
	tap_ok(buf_sum(&B.buf) == sum, "  ... and b's memory is unchanged");
	pair_destroy(&p);
	st = pvo_add_gid(B.vm->fe, 1, 0, B.vm->gid[0], PVO_GID_TYPE_ROCE_V2);
	tap_ok(st == PVO_STATUS_OK, "b installs its GID 0 again (%s)",
	       st < 0 ? "no answer" : pvo_status_name(st));
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	xfer(&p, X_WRITE, 4096, 0, 0, false, 9361);
	pair_destroy(&p);
}

void test_isolation(void)
{
	struct sim_qp_init ia = qp_init(&A, PVO_QPT_UD),
			   ic = qp_init(&C, PVO_QPT_UD);
	struct sim_conn conn = {.qkey = QKEY};
	struct sim_qp ua, uc;
	struct sim_peer pc;
	struct pvo_av av;
	struct sim_wr w;
	uint64_t sum;
	uint32_t ah;
	int st;

	{
		struct pair p;

		if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
			rogue_write(&p, false,
				    "RC WRITE to b's connected QP from a "
				    "third QP");
			xfer(&p, X_WRITE, 4096, 100, 200, false, 9350);
			rogue_write(&p, true,
				    "RC WRITE to b's connected QP from the "
				    "right QPN but another source GID");
			pair_destroy(&p);
		}
	}
	isolation_rc(&A, &C, "10.0.0.3", false,
		     "RC WRITE from tenant blue to tenant red (10.0.0.3) "
		     "with the right QPN and rkey");
	isolation_rc(&A, &C, "10.0.0.3", true,
		     "RC SEND from tenant blue to tenant red (10.0.0.3)");
	isolation_rc(&C, &A, "10.0.0.1", false,
		     "RC WRITE from tenant red to tenant blue (10.0.0.1)");
	{
		/* c owns 10.0.0.2 in red; b owns it in blue. From a, the
		 * address means b: c's QPN and rkey must not reach c. */
		uint8_t dgid[16];
		struct pvo_cqe c;
		struct pair p;
		uint64_t sum_c = buf_sum(&C.buf);

		pvo_gid_from_ipv4(dgid, "10.0.0.2");
		if (cross_pair(&p, &A, &C, dgid, PVO_QPT_RC)) {
			w = wr1(0xf211, PVO_WR_RDMA_WRITE, &A, 0, 4096);
			w.remote_addr = C.mr.iova;
			w.rkey = C.mr.key;
			post1(&p.a, &w);
			if (get_cqe(&A.scq, &c,
				    "WRITE to 10.0.0.2 with c's "
				    "QPN and rkey"))
				tap_ok(c.status != PVO_WC_SUCCESS,
				       "WRITE to 10.0.0.2 (b in blue, c in "
				       "red) with c's QPN and rkey fails "
				       "(%s)",
				       sim_wc_status_name(c.status));
			tap_ok(buf_sum(&C.buf) == sum_c,
			       "  ... and c's memory is unchanged");
			pair_destroy(&p);
		}
	}

	/* UD: silently dropped, the sender completes */
	st = sim_create_qp(&A.pd, &ia, &ua);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&C.pd, &ic, &uc);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&ua, &conn, NULL);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&uc, &conn, NULL);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "UD QPs on a and c")) {
		tap_diag("%s / %s", A.vm->err, C.vm->err);
		return;
	}
	sim_qp_peer(&uc, C.gid_v4, &pc);
	sim_av_to(&av, &pc, (uint8_t)A.gid_v4);
	st = sim_create_ah(&A.pd, &av, &ah);
	if (TAP_STATUS(st, PVO_STATUS_OK,
		       "an AH on a to c's GID 10.0.0.3 (another tenant)")) {
		post_recv1(&uc, &C, 0xf221, 0, 4096);
		sum = buf_sum(&C.buf);
		w = wr1(0xf222, PVO_WR_SEND, &A, 0, 1000);
		w.ah = ah;
		w.remote_qpn = uc.qpn;
		w.remote_qkey = QKEY;
		post1(&ua, &w);
		/* host verbs: blue's UD QP asks the host device, which
		 * finds nobody at 10.0.0.3 in blue's network */
		expect_cqe(&A.scq, 0xf222, PVO_WC_SEND,
			   hv_dev[0] ? PVO_WC_LOC_QP_OP_ERR : PVO_WC_SUCCESS,
			   hv_dev[0] ? "UD SEND across tenants fails on the "
				       "sender (no host AH)"
				     : "UD SEND across tenants completes on "
				       "the sender");
		expect_no_cqe(&C.rcq, 50, "UD SEND across tenants");
		tap_ok(buf_sum(&C.buf) == sum,
		       "UD SEND across tenants: c's memory is unchanged");
		sim_destroy_ah(&A.ctx, ah);
	}
	sim_destroy_qp(&ua);
	sim_destroy_qp(&uc);
	drain_all();
}

/* ------------------------------------------------------------------ */
/* per-VM quotas                                                      */

void test_quotas(void)
{
	struct node Q = {.name = "q"};
	struct sim_cq cqs[5];
	struct sim_qp qps[5];
	struct sim_mr mrs[5];
	struct sim_srq srqs[2];
	uint32_t ahs[3];
	struct sim_qp_init in;
	struct sim_buf b;
	struct pvo_av av;
	struct sim_peer pe;
	unsigned int i, ncq = 0, nqp = 0, nmr = 0, nsrq = 0, nah = 0;
	int st = PVO_STATUS_OK;
	struct sim_vm_opts o = {.name = "q", .ram_size = 32 * MIB};
	char err[512];

	o.socket_path = backend_vm_socket(&bp, "q");
	Q.vm = sim_vm_open(&o, err, sizeof(err));
	if (!tap_ok(Q.vm != NULL, "q: session")) {
		tap_diag("%s", err);
		return;
	}
	st = sim_ctx_open(Q.vm, &Q.ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&Q.ctx, &Q.pd);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "q: context and PD"))
		goto out;
	for (i = 0; i < 5; i++) {
		st = sim_create_cq(&Q.ctx, 16, &cqs[i]);
		if (st != PVO_STATUS_OK)
			break;
		ncq++;
	}
	tap_ok(ncq == 4 && st == PVO_STATUS_ENOSPC,
	       "max-cq = 4: four CQs, the fifth gets ENOSPC (%u, %s)", ncq,
	       pvo_status_name(st));
	in = qp_init(&Q, PVO_QPT_RC);
	in.send_cq = in.recv_cq = &cqs[0];
	in.sq_entries = in.rq_entries = 4;
	for (i = 0; i < 5 && ncq; i++) {
		st = sim_create_qp(&Q.pd, &in, &qps[i]);
		if (st != PVO_STATUS_OK)
			break;
		nqp++;
	}
	tap_ok(nqp == 4 && st == PVO_STATUS_ENOSPC,
	       "max-qp = 4: four QPs, the fifth gets ENOSPC (%u, %s)", nqp,
	       pvo_status_name(st));
	if (nqp) {
		st = sim_destroy_qp(&qps[--nqp]);
		st = st ? st : sim_create_qp(&Q.pd, &in, &qps[nqp]);
		if (TAP_STATUS(st, PVO_STATUS_OK,
			       "a destroyed QP gives its quota back"))
			nqp++;
	}
	if (sim_buf_alloc(&b, sim_vm_ram(Q.vm), sim_vm_va(Q.vm, 128 * KIB),
			  128 * KIB, 0, SIM_LAYOUT_SCATTER))
		tap_bail("no guest RAM on q");
	st = sim_reg_mr(&Q.pd, &b, 0, 65536 + 1, PVO_ACCESS_LOCAL_WRITE,
			&mrs[0]);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "max-mr-size = 65536: REG_MR of 65537 bytes -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&mrs[0]);
	for (i = 0; i < 5; i++) {
		st = sim_reg_mr(&Q.pd, &b, i * 100, 65536,
				PVO_ACCESS_LOCAL_WRITE, &mrs[i]);
		if (st != PVO_STATUS_OK)
			break;
		nmr++;
	}
	tap_ok(nmr == 4 && st == PVO_STATUS_ENOSPC,
	       "max-mr = 4: four MRs of 64 KiB, the fifth gets ENOSPC (%u, "
	       "%s)",
	       nmr, pvo_status_name(st));
	{
		uint32_t mw[3], key, nmw = 0;

		for (i = 0; i < 3; i++) {
			st = pvo_alloc_mw(Q.vm->fe, Q.ctx.handle, Q.pd.handle,
					  2, &mw[i], &key);
			if (st != PVO_STATUS_OK)
				break;
			nmw++;
		}
		tap_ok(nmw == 2 && st == PVO_STATUS_ENOSPC,
		       "max-mw = 2: two windows, the third gets ENOSPC (%u, "
		       "%s)",
		       nmw, pvo_status_name(st));
		while (nmw--)
			pvo_destroy(Q.vm->fe, PVO_CMD_DEALLOC_MW, Q.ctx.handle,
				    mw[nmw]);
	}
	for (i = 0; i < 2; i++) {
		st = sim_create_srq(&Q.pd, 16, 1, 0, &srqs[i]);
		if (st != PVO_STATUS_OK)
			break;
		nsrq++;
	}
	tap_ok(nsrq == 1 && st == PVO_STATUS_ENOSPC,
	       "max-srq = 1: one SRQ, the second gets ENOSPC (%u, %s)", nsrq,
	       pvo_status_name(st));
	memset(&pe, 0, sizeof(pe));
	memcpy(pe.gid, Q.vm->gid[0], 16);
	memcpy(pe.mac, Q.vm->mac, 6);
	sim_av_to(&av, &pe, 0);
	for (i = 0; i < 3; i++) {
		st = sim_create_ah(&Q.pd, &av, &ahs[i]);
		if (st != PVO_STATUS_OK)
			break;
		nah++;
	}
	tap_ok(nah == 2 && st == PVO_STATUS_ENOSPC,
	       "max-ah = 2: two AHs, the third gets ENOSPC (%u, %s)", nah,
	       pvo_status_name(st));
	st = sim_ctx_close(&Q.ctx);
	TAP_STATUS(st, PVO_STATUS_OK,
		   "DEALLOC_UCONTEXT with QPs, CQs, MRs, SRQ, AHs alive");
	st = sim_ctx_open(Q.vm, &Q.ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&Q.ctx, &Q.pd);
	for (i = 0, ncq = 0; st == PVO_STATUS_OK && i < 4; i++) {
		st = sim_create_cq(&Q.ctx, 16, &cqs[i]);
		ncq += st == PVO_STATUS_OK;
	}
	TAP_STATUS(st, PVO_STATUS_OK,
		   "after DEALLOC_UCONTEXT the whole CQ quota is free again "
		   "(%u CQs)",
		   ncq);
	sim_buf_free(&b);
out:
	sim_vm_close(Q.vm);
}
