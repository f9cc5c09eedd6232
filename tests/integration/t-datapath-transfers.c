// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: RC transfers of every kind and size, inline data, atomics,
 * scatter/gather lists, batches; UC; over the overlay, GSO padding and
 * management clients.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* transfers                                                          */

static const uint32_t sizes[] = {1,	2,     3,      63,     64,   65,
				 1000,	4095,  4096,   4097,   8191, 12289,
				 65536, 65539, 262147, 1048576};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static const char *const xfer_names[] = {"SEND", "SEND_WITH_IMM", "RDMA_WRITE",
					 "RDMA_WRITE_WITH_IMM", "RDMA_READ"};

uint8_t inline_buf[256];

const char *qpt_name(uint8_t t)
{
	return t == PVO_QPT_RC ? "RC" : t == PVO_QPT_UC ? "UC" : "UD";
}

/*
 * One transfer of @len bytes on pair @p (a is the requester). SEND and
 * WRITE move a's buf[so..] to b's buf[doff..]; READ moves b's buf[so..]
 * into a's buf[doff..]. Checks both completions, every byte and the
 * guards; one TAP line.
 */
/* Polls until the pattern is in place (or the timeout passes). */
static void wait_data(struct sim_buf *b, uint64_t off, uint64_t len,
		      uint32_t seed)
{
	int waited;

	for (waited = 0; waited < timeout_ms; waited += 2) {
		if (data_ok(NULL, b, off, len, seed, 0))
			return;
		usleep(2000);
	}
}

bool xfer(struct pair *p, enum xfer_kind k, uint32_t len, uint64_t so,
		 uint64_t doff, bool inl, uint32_t seed)
{
	struct node *na = p->na, *nb = p->nb;
	struct node *src = k == X_READ ? nb : na, *dst = k == X_READ ? na : nb;
	bool recv = k == X_SEND || k == X_SEND_IMM || k == X_WRITE_IMM;
	const uint64_t imm_off = DATA_LEN - 8 * KIB;
	static const uint8_t wc_op[] = {PVO_WC_SEND, PVO_WC_SEND,
					PVO_WC_RDMA_WRITE, PVO_WC_RDMA_WRITE,
					PVO_WC_RDMA_READ};
	static const uint8_t wr_op[] = {
	    PVO_WR_SEND, PVO_WR_SEND_WITH_IMM, PVO_WR_RDMA_WRITE,
	    PVO_WR_RDMA_WRITE_WITH_IMM, PVO_WR_RDMA_READ};
	uint32_t imm = 0xa5000000u | seed;
	struct pvo_cqe c;
	struct sim_wr w;
	char what[200];
	bool ok = true;

	snprintf(what, sizeof(what), "%s %s%s %u B (src +%llu, dst +%llu)",
		 qpt_name(p->a.type), inl ? "inline " : "", xfer_names[k], len,
		 (unsigned long long)so, (unsigned long long)doff);
	fill_pattern(&src->buf, so, len, seed);
	prepare_dst(&dst->buf, doff, len);
	if (k == X_WRITE_IMM) {
		prepare_dst(&nb->buf, imm_off, 0);
		ok &= post_recv1(&p->b, nb, 0x5000 + seed, imm_off, 256);
	} else if (recv) {
		ok &=
		    post_recv1(&p->b, nb, 0x5000 + seed, doff, len + GUARD / 2);
	}
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x6000 + seed;
	w.opcode = wr_op[k];
	w.flags = PVO_WQE_F_SIGNALED;
	w.imm = imm;
	if (k == X_READ) {
		w.num_sge = 1;
		w.sge[0] = sge_of(na, doff, len);
		w.remote_addr = nb->mr.iova + so;
		w.rkey = nb->mr.key;
	} else {
		if (inl) {
			sim_buf_read(&na->buf, so, inline_buf, len);
			w.inline_data = inline_buf;
			w.inline_len = len;
		} else {
			w.num_sge = 1;
			w.sge[0] = sge_of(na, so, len);
		}
		w.remote_addr = nb->mr.iova + doff;
		w.rkey = nb->mr.key;
	}
	if (!post1(&p->a, &w))
		return tap_ok(false, "%s: posted", what);
	if (wait_cqe(&na->scq, &c, what))
		ok &= cqe_ok(&c, w.wr_id, wc_op[k], PVO_WC_SUCCESS, what);
	else
		ok = false;
	/* contract: cons passes a WQE before its CQE is published */
	if (sim_sq_outstanding(&p->a)) {
		tap_diag("%s: SQ cons lags its completion", what);
		ok = false;
	}
	if (recv && wait_cqe(&nb->rcq, &c, what)) {
		int op =
		    k == X_WRITE_IMM ? PVO_WC_RECV_RDMA_WITH_IMM : PVO_WC_RECV;
		bool imm_ok = k == X_SEND ? !(c.flags & PVO_WC_F_IMM)
					  : (c.flags & PVO_WC_F_IMM) &&
						be32toh(c.imm_data) == imm;
		bool good =
		    cqe_ok(&c, 0x5000 + seed, op, PVO_WC_SUCCESS, what) &&
		    le32toh(c.byte_len) == len && le32toh(c.qpn) == p->b.qpn &&
		    imm_ok;

		if (p->b.rq_prod !=
		    le32toh(sim_load_acquire(&p->b.rq.hdr->cons))) {
			tap_diag("%s: RQ cons lags its completion", what);
			good = false;
		}
		if (!good)
			tap_diag("%s: responder completion should be %s, "
				 "byte_len %u, qpn %u%s; got %s",
				 what, sim_wc_opcode_name(op), len, p->b.qpn,
				 k == X_SEND ? ", no imm" : ", imm",
				 cqe_str(&c));
		ok &= good;
	} else if (recv) {
		ok = false;
	}
	/* A UC WRITE completes when it has left; across the overlay the
	 * other host may still be placing it (no ACK, as on the wire). */
	if (overlay && p->a.type == PVO_QPT_UC && k == X_WRITE)
		wait_data(&dst->buf, doff, len, seed);
	ok &= data_ok(what, &dst->buf, doff, len, seed, 0);
	if (k == X_WRITE_IMM)
		ok &= data_ok("the receive buffer of a WRITE_WITH_IMM",
			      &nb->buf, imm_off, 0, 0, 0);
	return tap_ok(ok, "%s", what);
}

/* Unaligned, page-crossing source and destination offsets for size k. */
uint64_t src_off(unsigned int k)
{
	return GUARD + (k * 1237 + 1) % PVO_PAGE_SIZE;
}

uint64_t dst_off(unsigned int k)
{
	return GUARD + (k * 2731 + 4091) % PVO_PAGE_SIZE;
}

/*
 * Overlay: the multi-packet WRITEs (host 1) and READ responses (host 2)
 * went out in GSO runs, the shorter middle packets padded with an
 * Ethernet trailer, and the transfers checked every byte across them.
 */
void test_gso_padding(void)
{
	struct backend_proc *hosts[] = {&bp, &bp2};
	const char *what[] = {"WRITE", "READ response"};
	char line[1024];
	int h;

	for (h = 0; h < 2; h++) {
		bool got = backend_mgmt_line(hosts[h], "daemon", line,
					     sizeof(line));

		if (got && strstr(line, " gso=off")) {
			tap_skip(1, h ? "host 2: UDP GSO is off here"
				      : "host 1: UDP GSO is off here");
			continue;
		}
		tap_ok(got && backend_field(line, " gso_padded=") > 0,
		       "host %d padded the middle packets of a %s to keep "
		       "its GSO run (%s)",
		       h + 1, what[h], got ? line : "no answer on mgmt");
	}
}

/*
 * Overlay: the management socket serves each client from the main loop as
 * its bytes come. A client stalled in the middle of its request line holds
 * up neither the data path nor another client, and gets its answer once
 * the line ends. Clients beyond the daemon's limit, and lines longer than
 * it reads, are told so.
 */
void test_mgmt_clients(void)
{
	static char buf[65536];
	char line[1024], big[600];
	int stalled, more[16], fd, i;
	unsigned int n = 0;
	struct pair p;
	bool ok;

	stalled = backend_mgmt_connect(&bp);
	if (!tap_ok(stalled >= 0 && write(stalled, "sh", 2) == 2,
		    "a management client connects and sends half a line"))
		return;
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		ok = xfer(&p, X_SEND, 65536, src_off(3), dst_off(3), false,
			  1200);
		ok &= xfer(&p, X_WRITE, 4097, src_off(4), dst_off(4), false,
			   1201);
		pair_destroy(&p);
		tap_ok(ok, "transfers run while that client stalls");
	}
	ok = backend_mgmt_line(&bp, "daemon", line, sizeof(line));
	tap_ok(ok, "another client's show is answered meanwhile (%s)",
	       ok ? line : "no answer");
	ok = send(stalled, "ow\n", 3, MSG_NOSIGNAL) == 3;
	backend_mgmt_read(stalled, buf, sizeof(buf));
	close(stalled);
	n = strlen(buf);
	tap_ok(ok && strstr(buf, "\ndaemon ") && n >= 3 &&
		   !strcmp(buf + n - 3, "ok\n"),
	       "the stalled client's show is answered once its line ends "
	       "(%u bytes%s)",
	       n, n >= 3 && !strcmp(buf + n - 3, "ok\n") ? ", ok" : "");

	for (i = 0; i < 16; i++)
		more[i] = backend_mgmt_connect(&bp);
	fd = backend_mgmt_connect(&bp);
	buf[0] = '\0';
	if (fd >= 0)
		backend_mgmt_read(fd, buf, sizeof(buf));
	close(fd);
	buf[strcspn(buf, "\n")] = '\0';
	tap_ok(strstr(buf, "error: 16 management connections are open") != NULL,
	       "a 17th open management connection is refused with a reason "
	       "(%s)",
	       buf);
	for (i = 0; i < 16; i++)
		if (more[i] >= 0)
			close(more[i]);

	/* (the daemon reaps those 16 as their ends close, in its own time) */
	memset(big, 'x', sizeof(big));
	for (i = 0; i < timeout_ms; i += 10) {
		fd = backend_mgmt_connect(&bp);
		buf[0] = '\0';
		if (fd >= 0 && send(fd, big, sizeof(big), MSG_NOSIGNAL) ==
				   (ssize_t)sizeof(big))
			backend_mgmt_read(fd, buf, sizeof(buf));
		close(fd);
		if (!strstr(buf, "management connections are open"))
			break;
		usleep(10000);
	}
	buf[strcspn(buf, "\n")] = '\0';
	tap_ok(!strcmp(buf, "error: request line longer than 512 bytes"),
	       "a request line over 512 bytes is refused (%s)", buf);
	ok = backend_mgmt_line(&bp, "daemon", line, sizeof(line));
	tap_ok(ok, "the management socket still answers");
}

/*
 * One READ of 8 MiB: more response packets than the requester asks for
 * at once and than the responder sends in one turn (over the overlay),
 * so it comes in pieces and bursts; every byte arrives.
 */
static void test_rc_big_read(void)
{
	const uint64_t len = 8 * MIB, chunk = 2 * MIB; /* scratch holds 2 */
	struct sim_buf sa, sb;
	struct sim_mr ma, mb;
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;
	uint64_t off, bad = 0;
	long long t0;
	int st;

	/* an impaired link (t-overlay-lossy) halves the requester's window
	 * at every gap: 8 MiB takes longer than a completion may; the
	 * transfers above move 1 MiB READs through it */
	if (getenv("T_DATAPATH_VIA")) {
		tap_diag("big READ: not over an impaired link");
		return;
	}
	if (sim_buf_alloc(&sa, sim_vm_ram(A.vm), sim_vm_va(A.vm, len), len,
			  0, SIM_LAYOUT_SCATTER) ||
	    sim_buf_alloc(&sb, sim_vm_ram(B.vm), sim_vm_va(B.vm, len), len,
			  0, SIM_LAYOUT_SCATTER))
		tap_bail("no guest RAM for two 8 MiB buffers");
	st = sim_reg_mr(&A.pd, &sa, 0, len, PVO_ACCESS_LOCAL_WRITE, &ma);
	if (st == PVO_STATUS_OK)
		st = sim_reg_mr(&B.pd, &sb, 0, len, PVO_ACCESS_REMOTE_READ,
				&mb);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "big READ: two 8 MiB MRs"))
		return;
	for (off = 0; off < len; off += chunk)
		fill_pattern_at(&sb, off, chunk, 4242, off);
	sim_buf_fill(&sa, 0, GUARD_BYTE, len);
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		memset(&w, 0, sizeof(w));
		w.wr_id = 0xb16;
		w.opcode = PVO_WR_RDMA_READ;
		w.flags = PVO_WQE_F_SIGNALED;
		w.num_sge = 1;
		w.sge[0] = (struct sim_sge){ .addr = sa.va,
					     .length = (uint32_t)len,
					     .lkey = ma.key };
		w.remote_addr = mb.iova;
		w.rkey = mb.key;
		t0 = now_ms();
		if (post1(&p.a, &w) && wait_cqe(&A.scq, &c, "big READ"))
			cqe_ok(&c, w.wr_id, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
			       "big READ: 8 MiB from b to a");
		tap_diag("big READ: %lld ms", now_ms() - t0);
		for (off = 0; off < len; off += chunk) {
			uint64_t i;

			sim_buf_read(&sa, off, scratch, chunk);
			sim_buf_read(&sb, off, scratch + chunk, chunk);
			for (i = 0; i < chunk; i++)
				bad += scratch[i] != scratch[chunk + i];
		}
		tap_ok(!bad, "big READ: every byte as in b's MR (%llu wrong)",
		       (unsigned long long)bad);
		pair_destroy(&p);
	}
	sim_dereg_mr(&ma);
	sim_dereg_mr(&mb);
	sim_buf_free(&sa);
	sim_buf_free(&sb);
}

void test_rc_transfers(void)
{
	static const enum xfer_kind kinds[] = {X_SEND, X_SEND_IMM, X_WRITE,
					       X_WRITE_IMM, X_READ};
	unsigned int i, k, fails = 0;
	struct pair p;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	tap_diag("RC QPs %u (a) <-> %u (b), %s GIDs", p.a.qpn, p.b.qpn,
		 overlay ? "IPv4" : "link-local");
	{
		struct pvo_qp_attr q;
		int st = sim_query_qp(&p.a, &q);

		tap_ok(
		    st == PVO_STATUS_OK && le32toh(q.qp_state) == PVO_QPS_RTS &&
			le32toh(q.dest_qp_num) == p.b.qpn &&
			le32toh(q.path_mtu) == A.vm->port.active_mtu &&
			!memcmp(q.av.dgid, B.vm->gid[overlay ? B.gid_v4 : 0],
				16) &&
			le32toh(q.max_send_wr) >= 255 &&
			le32toh(q.max_recv_wr) >= 255 &&
			le32toh(q.max_send_sge) >= 16 &&
			le32toh(q.max_inline_data) >= 256 && q.retry_cnt == 7 &&
			q.rnr_retry == 7 && q.timeout == 14 &&
			q.max_rd_atomic == 16 && q.max_dest_rd_atomic == 16,
		    "QUERY_QP: RTS, dest QPN %u, path MTU, dgid, caps, "
		    "timers as set (%s; state %u dest %u mtu %u send_wr "
		    "%u recv_wr %u sge %u inline %u retry %u rnr %u "
		    "timeout %u rd_atom %u/%u)",
		    p.b.qpn, pvo_status_name(st), le32toh(q.qp_state),
		    le32toh(q.dest_qp_num), le32toh(q.path_mtu),
		    le32toh(q.max_send_wr), le32toh(q.max_recv_wr),
		    le32toh(q.max_send_sge), le32toh(q.max_inline_data),
		    q.retry_cnt, q.rnr_retry, q.timeout, q.max_rd_atomic,
		    q.max_dest_rd_atomic);
	}
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		for (k = 0; k < NSIZES; k++) {
			if (!xfer(&p, kinds[i], sizes[k], src_off(k),
				  dst_off(k), false, i * 100 + k))
				fails++;
			if (fails > 10)
				break;
		}
	}
	check_sq_consumed(&p.a, "RC transfers");
	expect_no_cqe(&B.rcq, 20, "RC transfers: nothing else on b's CQ");
	expect_no_cqe(&A.scq, 0, "RC transfers: nothing else on a's CQ");
	pair_destroy(&p);

	/* the same over the IPv4 GIDs, a few sizes */
	if (!pair_make_ex(&p, &A, &B, PVO_QPT_RC, true, NULL, NULL))
		return;
	for (k = 0; k < NSIZES; k += 5)
		xfer(&p, X_WRITE, sizes[k], src_off(k), dst_off(k), false,
		     1000 + k);
	xfer(&p, X_SEND, 4097, 7, 4095, false, 1100);
	xfer(&p, X_READ, 65539, 4095, 3, false, 1101);
	pair_destroy(&p);
	test_rc_big_read();
}

void test_rc_inline(void)
{
	static const uint32_t isz[] = {1, 17, 64, 200, 255, 256};
	struct pair p;
	unsigned int k;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	for (k = 0; k < sizeof(isz) / sizeof(isz[0]); k++) {
		xfer(&p, X_SEND, isz[k], src_off(k), dst_off(k), true,
		     2000 + k);
		xfer(&p, X_WRITE, isz[k], src_off(k), dst_off(k), true,
		     2100 + k);
		xfer(&p, X_WRITE_IMM, isz[k], src_off(k), dst_off(k), true,
		     2200 + k);
	}
	pair_destroy(&p);
}

void test_rc_atomics(void)
{
	const uint64_t roff = al8(&B, 4096 * 3 + 8), loff = al8(&A, 4096 * 5);
	uint64_t v0 = 0x1122334455667788ull, v1 = 0x0badc0ffee0ddf00ull;
	uint64_t got, remote;
	struct sim_wr w;
	struct pair p;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	sim_buf_write(&B.buf, roff, &v0, 8);
	sim_buf_fill(&A.buf, loff, 0, 8);

	w = wr1(0x7001, PVO_WR_ATOMIC_CMP_AND_SWP, &A, loff, 8);
	w.remote_addr = B.mr.iova + roff;
	w.rkey = B.mr.key;
	w.compare_add = v0;
	w.swap = v1;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7001, PVO_WC_COMP_SWAP, PVO_WC_SUCCESS,
		   "CMP_AND_SWP with a matching compare");
	sim_buf_read(&A.buf, loff, &got, 8);
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(got == v0 && remote == v1,
	       "  ... returns the old value 0x%llx (got 0x%llx) and swaps in "
	       "0x%llx (remote now 0x%llx)",
	       (unsigned long long)v0, (unsigned long long)got,
	       (unsigned long long)v1, (unsigned long long)remote);

	w.wr_id = 0x7002;
	w.compare_add = v0; /* no longer matches */
	w.swap = 42;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7002, PVO_WC_COMP_SWAP, PVO_WC_SUCCESS,
		   "CMP_AND_SWP with a stale compare");
	sim_buf_read(&A.buf, loff, &got, 8);
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(got == v1 && remote == v1,
	       "  ... returns the current value and leaves it (0x%llx, "
	       "remote 0x%llx)",
	       (unsigned long long)got, (unsigned long long)remote);

	w = wr1(0x7003, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, loff, 8);
	w.remote_addr = B.mr.iova + roff;
	w.rkey = B.mr.key;
	w.compare_add = 0x1000000001ull;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7003, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "FETCH_AND_ADD");
	sim_buf_read(&A.buf, loff, &got, 8);
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(got == v1 && remote == v1 + 0x1000000001ull,
	       "  ... returns 0x%llx (got 0x%llx), remote is the sum "
	       "(0x%llx)",
	       (unsigned long long)v1, (unsigned long long)got,
	       (unsigned long long)remote);

	/* the add wraps at 64 bits */
	remote = ~0ull;
	sim_buf_write(&B.buf, roff, &remote, 8);
	w.wr_id = 0x7004;
	w.compare_add = 2;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7004, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "FETCH_AND_ADD across 2^64");
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(remote == 1, "  ... wraps to 1 (got 0x%llx)",
	       (unsigned long long)remote);

	/* two QPs adding to one counter, interleaved */
	{
		struct pair q;
		struct sim_wr ws[50];
		struct pvo_cqe c[64];
		unsigned int i, got = 0;

		if (pair_make(&q, PVO_QPT_RC, NULL, NULL)) {
			remote = 0;
			sim_buf_write(&B.buf, roff, &remote, 8);
			for (i = 0; i < 50; i++) {
				ws[i] =
				    wr1(0x7100 + i, PVO_WR_ATOMIC_FETCH_AND_ADD,
					&A, al8(&A, 4096 * 6 + 8 * i), 8);
				ws[i].remote_addr = B.mr.iova + roff;
				ws[i].rkey = B.mr.key;
				ws[i].compare_add = 3;
			}
			sim_post_send(&p.a, ws, 25);
			sim_post_send(&q.a, ws + 25, 25);
			sim_post_send(&p.a, ws, 25);
			sim_post_send(&q.a, ws + 25, 25);
			while (got < 100) {
				int n = sim_wait_cq(&A.scq, c, 64, timeout_ms);

				if (n <= 0)
					break;
				for (i = 0; i < (unsigned int)n; i++)
					if (c[i].status != PVO_WC_SUCCESS)
						tap_diag("%s", cqe_str(&c[i]));
				got += n;
			}
			sim_buf_read(&B.buf, roff, &remote, 8);
			tap_ok(got == 100 && remote == 300,
			       "100 FETCH_AND_ADDs of 3 from two QPs: 100 "
			       "completions, counter 300 (%u, %llu)",
			       got, (unsigned long long)remote);
			pair_destroy(&q);
		}
	}
	pair_destroy(&p);
}

/* Several SGEs on both sides, from two MRs, one of them across the two
 * guest RAM regions. */
void test_rc_sges(void)
{
	static const uint32_t glen[16] = {1,  4095, 3,	  4097, 100, 1,
					  64, 65,   8000, 7,	512, 33,
					  2,  4096, 999,  5};
	static const uint32_t slen[5] = {3000, 1, 9000, 4097, 6000};
	uint64_t goff[16], soff[5], total = 0, pos, xpos, stotal = 0;
	struct sim_buf xb;
	struct sim_mr xmr;
	struct pvo_cqe c;
	struct sim_sge rs[5];
	struct sim_wr w;
	struct pair p;
	unsigned int i;
	bool ok;
	int st;

	st = sim_buf_alloc(&xb, sim_vm_ram(A.vm),
			   sim_vm_va(A.vm, 64 * KIB + PVO_PAGE_SIZE), 64 * KIB,
			   0x777, SIM_LAYOUT_STRADDLE);
	if (!tap_ok(st == 0, "a 64 KiB buffer across the guest RAM region "
			     "boundary"))
		return;
	st = sim_reg_mr(&A.pd, &xb, 0, 64 * KIB,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ |
			    PVO_ACCESS_REMOTE_WRITE,
			&xmr);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "REG_MR of it")) {
		tap_diag("%s", A.vm->err);
		sim_buf_free(&xb);
		return;
	}
	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		goto out;

	/* gather: 16 SGEs alternating between the two MRs */
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8001;
	w.opcode = PVO_WR_SEND;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 16;
	for (i = 0, pos = GUARD, xpos = GUARD + 33; i < 16; i++) {
		bool x = i & 1;
		uint64_t o = x ? xpos : pos;

		goff[i] = o;
		if (x) {
			fill_pattern_at(&xb, o, glen[i], 3000, total);
			w.sge[i].addr = xb.va + o;
			w.sge[i].lkey = xmr.key;
			xpos += glen[i] + 2 * GUARD + 7;
		} else {
			fill_pattern_at(&A.buf, o, glen[i], 3000, total);
			w.sge[i].addr = A.buf.va + o;
			w.sge[i].lkey = A.mr.key;
			pos += glen[i] + 2 * GUARD + 1;
		}
		w.sge[i].length = glen[i];
		total += glen[i];
	}
	/* scatter: 5 SGEs, spaced apart, enough room in all */
	for (i = 0, pos = 64 * KIB + GUARD; i < 5; i++) {
		soff[i] = pos;
		rs[i] = sge_of(&B, pos, slen[i]);
		prepare_dst(&B.buf, pos, slen[i]);
		pos += slen[i] + 3 * GUARD + 13;
		stotal += slen[i];
	}
	tap_diag("SEND of %llu bytes from 16 SGEs into 5 SGEs of %llu",
		 (unsigned long long)total, (unsigned long long)stotal);
	sim_post_recv(&p.b, 0x8101, rs, 5);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8001, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "SEND with 16 SGEs from two MRs");
	if (get_cqe(&B.rcq, &c, "receive into 5 SGEs"))
		tap_ok(cqe_ok(&c, 0x8101, PVO_WC_RECV, PVO_WC_SUCCESS,
			      "5-SGE receive") &&
			   le32toh(c.byte_len) == total,
		       "receive into 5 SGEs: RECV, byte_len %llu (got %u)",
		       (unsigned long long)total, le32toh(c.byte_len));
	ok = true;
	for (i = 0, pos = 0; i < 5 && pos < total; i++) {
		uint64_t n = total - pos < slen[i] ? total - pos : slen[i];

		ok &= data_ok("scatter SGE", &B.buf, soff[i], n, 3000, pos);
		/* the unused tail of a receive SGE keeps its filler */
		if (n < slen[i]) {
			uint64_t t, tl = slen[i] - n + GUARD;

			sim_buf_read(&B.buf, soff[i] + n, scratch, tl);
			for (t = 0; t < tl && scratch[t] == GUARD_BYTE; t++)
				;
			if (t < tl) {
				tap_diag("unused tail of receive SGE %u: byte "
					 "%llu of %llu written",
					 i, (unsigned long long)t,
					 (unsigned long long)tl);
				ok = false;
			}
		}
		pos += n;
	}
	tap_ok(ok, "every byte landed in the right receive SGE, in order");

	/* RDMA WRITE from 3 SGEs, RDMA READ into 4 SGEs */
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8002;
	w.opcode = PVO_WR_RDMA_WRITE;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 3;
	w.sge[0] = sge_of(&A, goff[0], glen[0]);
	w.sge[1].addr = xb.va + goff[1];
	w.sge[1].length = glen[1];
	w.sge[1].lkey = xmr.key;
	w.sge[2] = sge_of(&A, goff[2], glen[2]);
	prepare_dst(&B.buf, 5000, glen[0] + glen[1] + glen[2]);
	w.remote_addr = B.mr.iova + 5000;
	w.rkey = B.mr.key;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8002, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "RDMA WRITE from 3 SGEs");
	check_data("RDMA WRITE from 3 SGEs", &B.buf, 5000,
		   glen[0] + glen[1] + glen[2], 3000);

	fill_pattern(&B.buf, 200 * KIB + 5, 20000, 3100);
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8003;
	w.opcode = PVO_WR_RDMA_READ;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 4;
	for (i = 0, pos = 300 * KIB + GUARD; i < 4; i++) {
		uint32_t l = i == 3 ? 20000 - 3 * 5001 : 5001;

		if (i == 2) {
			w.sge[i].addr = xb.va + 40 * KIB + 3;
			w.sge[i].lkey = xmr.key;
			prepare_dst(&xb, 40 * KIB + 3, l);
		} else {
			w.sge[i] = sge_of(&A, pos, l);
			prepare_dst(&A.buf, pos, l);
			soff[i] = pos;
			pos += l + 3 * GUARD;
		}
		w.sge[i].length = l;
	}
	w.remote_addr = B.mr.iova + 200 * KIB + 5;
	w.rkey = B.mr.key;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8003, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "RDMA READ into 4 SGEs");
	ok = data_ok("READ SGE 0", &A.buf, soff[0], 5001, 3100, 0) &&
	     data_ok("READ SGE 1", &A.buf, soff[1], 5001, 3100, 5001) &&
	     data_ok("READ SGE 2", &xb, 40 * KIB + 3, 5001, 3100, 10002) &&
	     data_ok("READ SGE 3", &A.buf, soff[3], 20000 - 3 * 5001, 3100,
		     15003);
	tap_ok(ok, "RDMA READ scattered every byte into the right SGE");

	/* a zero-length SEND needs no SGE and consumes a receive */
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8004;
	w.opcode = PVO_WR_SEND;
	w.flags = PVO_WQE_F_SIGNALED;
	post_recv1(&p.b, &B, 0x8104, 0, 16);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8004, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "zero-length SEND");
	if (get_cqe(&B.rcq, &c, "zero-length receive"))
		tap_ok(cqe_ok(&c, 0x8104, PVO_WC_RECV, PVO_WC_SUCCESS,
			      "zero-length receive") &&
			   c.byte_len == 0,
		       "  ... receive completes with byte_len 0 (got %u)",
		       le32toh(c.byte_len));
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8005;
	w.opcode = PVO_WR_RDMA_WRITE_WITH_IMM;
	w.flags = PVO_WQE_F_SIGNALED;
	w.imm = 0x12345678;
	w.remote_addr = B.mr.iova;
	w.rkey = B.mr.key;
	sim_post_recv(&p.b, 0x8105, NULL, 0);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8005, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "zero-length RDMA WRITE_WITH_IMM");
	if (get_cqe(&B.rcq, &c, "zero-length WRITE_WITH_IMM receive"))
		tap_ok(cqe_ok(&c, 0x8105, PVO_WC_RECV_RDMA_WITH_IMM,
			      PVO_WC_SUCCESS, "zero-length WRITE_WITH_IMM") &&
			   c.byte_len == 0 && (c.flags & PVO_WC_F_IMM) &&
			   be32toh(c.imm_data) == 0x12345678,
		       "  ... consumes a receive without SGEs: byte_len 0, "
		       "imm 0x12345678 (got %s)",
		       cqe_str(&c));
	pair_destroy(&p);
out:
	sim_dereg_mr(&xmr);
	sim_buf_free(&xb);
}

/* Many WQEs: unsignaled ones, SQ wrap-around, batches behind one doorbell,
 * and many QPs of one context with work at the same time. */
void test_rc_batches(void)
{
	enum { NPAIRS = 8, PER = 24 };
	static struct sim_wr ws[64];
	static struct pair pp[NPAIRS];
	unsigned int i, j, round, got = 0, made = 0;
	struct pvo_cqe c[64];
	struct pair p;
	bool ok = true;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	/* 20 rounds of 32 writes, one signaled: 640 WQEs through 256 slots */
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 32; i++) {
			uint64_t off = GUARD + (round * 32 + i) * 200;

			ws[i] = wr1(round * 100 + i, PVO_WR_RDMA_WRITE, &A, off,
				    150);
			ws[i].flags = i == 31 ? PVO_WQE_F_SIGNALED : 0;
			ws[i].remote_addr = B.mr.iova + off;
			ws[i].rkey = B.mr.key;
		}
		fill_pattern(&A.buf, GUARD + round * 32 * 200, 32 * 200,
			     4000 + round);
		if (sim_post_send(&p.a, ws, 32)) {
			ok = false;
			tap_diag("round %u: SQ full", round);
			break;
		}
		if (sim_wait_cq(&A.scq, c, 1, timeout_ms) != 1 ||
		    !cqe_ok(c, round * 100 + 31, PVO_WC_RDMA_WRITE,
			    PVO_WC_SUCCESS, "batch")) {
			ok = false;
			break;
		}
	}
	tap_ok(ok, "640 RDMA WRITEs in batches of 32 behind one doorbell, "
		   "one signaled each: one completion per batch");
	expect_no_cqe(&A.scq, 20, "unsignaled WQEs");
	for (round = 0, ok = true; round < 20 && ok; round++) {
		for (i = 0; i < 32 && ok; i++) {
			uint64_t off = GUARD + (round * 32 + i) * 200;
			uint8_t b1[150], b2[150];

			sim_buf_read(&A.buf, off, b1, 150);
			sim_buf_read(&B.buf, off, b2, 150);
			ok = !memcmp(b1, b2, 150);
			if (!ok)
				tap_diag("write %u of round %u differs", i,
					 round);
		}
	}
	tap_ok(ok, "all 640 written ranges match their source");
	tap_diag("SQ doorbell records for 20 batches: %llu",
		 (unsigned long long)p.a.doorbells);
	tap_ok(p.a.doorbells <= 20,
	       "at most one doorbell record per batch (%llu)",
	       (unsigned long long)p.a.doorbells);
	check_sq_consumed(&p.a, "batched writes");
	pair_destroy(&p);

	/* both directions at once, and more READs than max_rd_atomic */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		static struct sim_wr wa[64], wb[64], wr[64];
		unsigned int ga = 0, gb = 0;
		bool dok = true;

		/* guards first: they reach 64 bytes into the neighbours */
		prepare_dst(&B.buf, 768 * KIB, 64 * 4096);
		prepare_dst(&A.buf, 1280 * KIB, 64 * 4096);
		prepare_dst(&A.buf, 1792 * KIB, 64 * 1024);
		fill_pattern(&A.buf, 512 * KIB, 64 * 4096, 4100);
		fill_pattern(&B.buf, 1040 * KIB, 64 * 4096, 4101);
		fill_pattern(&B.buf, 1600 * KIB, 64 * 1024, 4102);
		for (i = 0; i < 64; i++) {
			wa[i] = write_wr(i, 512 * KIB + i * 4096, 4096,
					 B.mr.iova + 768 * KIB + i * 4096,
					 B.mr.key);
			wb[i] = wr1(i, PVO_WR_RDMA_WRITE, &B,
				    1040 * KIB + i * 4096, 4096);
			wb[i].remote_addr = A.mr.iova + 1280 * KIB + i * 4096;
			wb[i].rkey = A.mr.key;
			wr[i] = wr1(100 + i, PVO_WR_RDMA_READ, &A,
				    1792 * KIB + i * 1024, 1024);
			wr[i].remote_addr = B.mr.iova + 1600 * KIB + i * 1024;
			wr[i].rkey = B.mr.key;
		}
		sim_post_send(&p.a, wa, 64);
		sim_post_send(&p.b, wb, 64);
		sim_post_send(&p.a, wr, 64);
		{
			long long dl = now_ms() + 2 * timeout_ms;

			while ((ga < 128 || gb < 64) && now_ms() < dl) {
				ga += sim_wait_cq(&A.scq, c, 64, 1);
				gb += sim_wait_cq(&B.scq, c, 64, 1);
			}
		}
		dok &= data_ok("a -> b", &B.buf, 768 * KIB, 64 * 4096, 4100, 0);
		dok &=
		    data_ok("b -> a", &A.buf, 1280 * KIB, 64 * 4096, 4101, 0);
		dok &= data_ok("READs", &A.buf, 1792 * KIB, 64 * 1024, 4102, 0);
		tap_ok(ga == 128 && gb == 64 && dok,
		       "64 WRITEs each way at once plus 64 READs (4x "
		       "max_rd_atomic): all complete (%u/128, %u/64), data "
		       "right",
		       ga, gb);
		pair_destroy(&p);
	}

	/* NPAIRS QPs of one context busy at once */
	for (i = 0; i < NPAIRS; i++) {
		if (!pair_make(&pp[i], PVO_QPT_RC, NULL, NULL))
			break;
		made++;
	}
	tap_ok(made == NPAIRS, "%u RC pairs", NPAIRS);
	for (j = 0; j < PER; j++) {
		for (i = 0; i < made; i++) {
			uint64_t off = GUARD + (i * PER + j) * 4200;
			struct sim_wr w =
			    wr1(i << 16 | j, PVO_WR_RDMA_WRITE, &A, off, 4100);

			w.remote_addr = B.mr.iova + off;
			w.rkey = B.mr.key;
			if (j == 0)
				fill_pattern(&A.buf, GUARD + i * PER * 4200,
					     PER * 4200, 5000 + i);
			if (post1(&pp[i].a, &w) != true)
				ok = false;
		}
	}
	got = sim_wait_cq(&A.scq, c, 64, timeout_ms);
	while (got < made * PER) {
		int n = sim_wait_cq(&A.scq, c, 64, timeout_ms);

		if (n <= 0)
			break;
		got += n;
	}
	tap_ok(got == made * PER,
	       "%u QPs x %u WRITEs, interleaved: %u completions (got %u)", made,
	       PER, made * PER, got);
	for (i = 0, ok = true; i < made; i++) {
		for (j = 0; j < PER; j++) {
			uint64_t off = GUARD + (i * PER + j) * 4200;
			uint8_t b1[4100], b2[4100];

			sim_buf_read(&A.buf, off, b1, 4100);
			sim_buf_read(&B.buf, off, b2, 4100);
			if (memcmp(b1, b2, 4100)) {
				if (ok)
					tap_diag("QP %u write %u differs", i,
						 j);
				ok = false;
			}
		}
	}
	tap_ok(ok, "every QP's data arrived");
	for (i = 0; i < made; i++)
		pair_destroy(&pp[i]);
}

void test_uc(void)
{
	struct pair p;

	if (!pair_make(&p, PVO_QPT_UC, NULL, NULL))
		return;
	xfer(&p, X_SEND, 1, 64, 64, false, 6000);
	xfer(&p, X_SEND, 4097, src_off(3), dst_off(3), false, 6001);
	xfer(&p, X_SEND, 1048576, src_off(4), dst_off(4), false, 6002);
	xfer(&p, X_SEND_IMM, 100, src_off(5), dst_off(5), false, 6003);
	xfer(&p, X_SEND, 100, src_off(6), dst_off(6), true, 6004);
	xfer(&p, X_WRITE, 65539, src_off(7), dst_off(7), false, 6005);
	xfer(&p, X_WRITE, 1048576, src_off(8), dst_off(8), false, 6006);
	xfer(&p, X_WRITE_IMM, 3000, src_off(9), dst_off(9), false, 6007);
	check_sq_consumed(&p.a, "UC transfers");
	{
		/* UC has no RNR: a SEND without a receive is dropped */
		struct sim_wr w = wr1(0x6101, PVO_WR_SEND, &A, 100, 100);
		uint64_t sum = buf_sum(&B.buf);

		post1(&p.a, &w);
		expect_cqe(&A.scq, 0x6101, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "UC SEND with no receive posted completes on the "
			   "sender");
		expect_no_cqe(&B.rcq, 30, "UC SEND with no receive posted");
		tap_ok(buf_sum(&B.buf) == sum,
		       "UC SEND with no receive posted: nothing written");
		expect_state(&p.b, PVO_QPS_RTS, "UC responder after a drop");
		xfer(&p, X_SEND, 1234, 64, 64, false, 6008);
	}
	pair_destroy(&p);
}
