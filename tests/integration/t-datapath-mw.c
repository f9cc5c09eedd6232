// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath, section mw: memory windows of b, used by a's QPs. Type 1
 * and type 2 binds, remote WRITE / READ / atomics through a window's key
 * and its rights and bounds, rebinding, unbinding, LOCAL_INV and
 * SEND_WITH_INV of type 2 keys, the 2B rule (only the binding QP's peer
 * reaches a type 2 window), every bind error, and what windows do to
 * their MR and PD (EBUSY until unbound).
 */
#include "t-datapath.h"

#define WIN_OFF (256 * KIB) /* the window MR: b's buf from here */
#define WIN_MR_LEN (64 * KIB)
#define RW (PVO_ACCESS_REMOTE_WRITE | PVO_ACCESS_REMOTE_READ)

struct win {
	uint32_t handle, rkey;
};

static bool alloc_win(uint32_t type, struct sim_pd *pd, struct win *w)
{
	int st = pvo_alloc_mw(B.vm->fe, pd->ctx->handle, pd->handle, type,
			      &w->handle, &w->rkey);

	return TAP_STATUS(st, PVO_STATUS_OK, "ALLOC_MW type %u (rkey 0x%x)",
			  type, w->rkey);
}

static int dealloc_win(struct win *w)
{
	return pvo_destroy(B.vm->fe, PVO_CMD_DEALLOC_MW, B.ctx.handle,
			   w->handle);
}

static uint32_t next_key(uint32_t key)
{
	return (key & ~0xffu) | ((key + 1) & 0xff);
}

/* BIND_MW on qp: window key rkey, [mr iova + off, + len), access. */
static bool bind_win(struct sim_qp *qp, uint64_t id, uint32_t rkey,
		     const struct sim_mr *mr, uint64_t off, uint64_t len,
		     uint32_t access, unsigned int status, const char *what)
{
	struct sim_wr w = {
	    .wr_id = id, .opcode = PVO_WR_BIND_MW, .flags = PVO_WQE_F_SIGNALED};

	w.bind.rkey = rkey;
	w.bind.lkey = mr ? mr->key : 0;
	w.bind.addr = (mr ? mr->iova : 0) + off;
	w.bind.length = len;
	w.bind.access = access;
	post1(qp, &w);
	return expect_cqe(&B.scq, id, PVO_WC_BIND_MW, status, what);
}

static bool local_inv(struct sim_qp *qp, uint64_t id, uint32_t rkey,
		      unsigned int status, const char *what)
{
	struct sim_wr w = {.wr_id = id,
			   .opcode = PVO_WR_LOCAL_INV,
			   .flags = PVO_WQE_F_SIGNALED,
			   .invalidate_rkey = rkey};

	post1(qp, &w);
	return expect_cqe(&B.scq, id, PVO_WC_LOCAL_INV, status, what);
}

/* a's RDMA WRITE of len bytes (pattern seed) to raddr with rkey. */
static bool win_write(struct sim_qp *qp, uint64_t id, uint64_t raddr,
		      uint32_t rkey, uint32_t len, uint32_t seed,
		      unsigned int status, const char *what)
{
	struct sim_wr w = write_wr(id, 0, len, raddr, rkey);

	fill_pattern(&A.buf, 0, len, seed);
	post1(qp, &w);
	return expect_cqe(&A.scq, id, PVO_WC_RDMA_WRITE, status, what);
}

static bool win_read(struct sim_qp *qp, uint64_t id, uint64_t raddr,
		     uint32_t rkey, uint32_t len, unsigned int status,
		     const char *what)
{
	struct sim_wr w = wr1(id, PVO_WR_RDMA_READ, &A, 64 * KIB, len);

	w.remote_addr = raddr;
	w.rkey = rkey;
	prepare_dst(&A.buf, 64 * KIB, len);
	post1(qp, &w);
	return expect_cqe(&A.scq, id, PVO_WC_RDMA_READ, status, what);
}

/* A bind that must fail, on a pair of its own (the error moves the QP to
 * ERR). */
static void bad_bind(uint64_t id, uint32_t rkey, const struct sim_mr *mr,
		     uint64_t off, uint64_t len, uint32_t access,
		     const char *what)
{
	struct pair p;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	bind_win(&p.b, id, rkey, mr, off, len, access, PVO_WC_MW_BIND_ERR,
		 what);
	pair_destroy(&p);
}

static void test_type1(struct sim_mr *mr, struct win *w1)
{
	uint64_t base = mr->iova + 4096;
	uint32_t k1 = next_key(w1->rkey), k2;
	struct pair p;
	uint64_t sum;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	bind_win(&p.b, 0xe101, k1, mr, 4096, 8192, RW, PVO_WC_SUCCESS,
		 "type 1: BIND_MW of 8 KiB of an MR without remote rights, "
		 "REMOTE_WRITE | REMOTE_READ, new key byte");
	prepare_dst(&B.buf, WIN_OFF + 4096 + 100, 3000);
	win_write(&p.a, 0xe102, base + 100, k1, 3000, 9600, PVO_WC_SUCCESS,
		  "type 1: RDMA WRITE through the window's key");
	check_data("type 1: the WRITE landed in the window", &B.buf,
		   WIN_OFF + 4096 + 100, 3000, 9600);
	win_read(&p.a, 0xe103, base + 100, k1, 3000, PVO_WC_SUCCESS,
		 "type 1: RDMA READ through the window's key");
	check_data("type 1: the READ brought the window's bytes", &A.buf,
		   64 * KIB, 3000, 9600);

	/* each failure takes the requester to ERR: a fresh pair each */
	sum = buf_sum(&B.buf);
	pair_destroy(&p);
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_write(&p.a, 0xe104, base + 8192 - 100, k1, 200, 9601,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 1: WRITE crossing the window's end -> "
			  "REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_write(&p.a, 0xe105, base - 1, k1, 2, 9602,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 1: WRITE starting before the window -> "
			  "REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_write(&p.a, 0xe106, base, mr->key, 64, 9603,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 1: WRITE with the MR's own key (no remote "
			  "rights) -> REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		struct sim_wr w =
		    wr1(0xe107, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 0), 8);

		w.remote_addr = base;
		w.rkey = k1;
		w.compare_add = 1;
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xe107, PVO_WC_FETCH_ADD,
			   PVO_WC_REM_ACCESS_ERR,
			   "type 1: atomic through a window without "
			   "REMOTE_ATOMIC -> REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	tap_ok(buf_sum(&B.buf) == sum,
	       "type 1: nothing of b changed by the refused accesses");

	/* rebind: read-only, 4 KiB, new key; the old key is dead */
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	k2 = next_key(k1);
	bind_win(&p.b, 0xe108, k2, mr, 0, 4096, PVO_ACCESS_REMOTE_READ,
		 PVO_WC_SUCCESS, "type 1: bound again (4 KiB, read only)");
	win_read(&p.a, 0xe109, mr->iova + 10, k2, 100, PVO_WC_SUCCESS,
		 "type 1: READ through the new key");
	pair_destroy(&p);
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_read(&p.a, 0xe10a, base + 100, k1, 100,
			 PVO_WC_REM_ACCESS_ERR,
			 "type 1: READ with the key of the previous binding -> "
			 "REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_write(&p.a, 0xe10b, mr->iova + 10, k2, 100, 9604,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 1: WRITE through the read-only binding -> "
			  "REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		local_inv(&p.b, 0xe10c, k2, PVO_WC_LOC_ACCESS_ERR,
			  "type 1: LOCAL_INV of a type 1 key -> "
			  "LOC_ACCESS_ERR (only binds change it)");
		pair_destroy(&p);
	}
	/* unbind: zero length */
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	w1->rkey = next_key(k2);
	bind_win(&p.b, 0xe10d, w1->rkey, NULL, 0, 0, 0, PVO_WC_SUCCESS,
		 "type 1: BIND_MW of length 0 (unbind)");
	pair_destroy(&p);
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_read(&p.a, 0xe10e, mr->iova + 10, k2, 100,
			 PVO_WC_REM_ACCESS_ERR,
			 "type 1: READ after the unbind -> REM_ACCESS_ERR");
		pair_destroy(&p);
	}
}

static void test_type2(struct sim_mr *mr, struct win *w2)
{
	uint64_t base = mr->iova + 8192, got, remote;
	/* 8-byte aligned in the window (the buffer's iova is not) */
	uint64_t aoff = 64 + ((8 - ((base + 64) & 7)) & 7);
	uint32_t k = next_key(w2->rkey);
	struct pair p, q;
	struct pvo_cqe c;
	struct sim_wr w;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	bind_win(&p.b, 0xe201, k, mr, 8192, 4096, RW | PVO_ACCESS_REMOTE_ATOMIC,
		 PVO_WC_SUCCESS,
		 "type 2: BIND_MW on b's QP (write, read, atomic)");
	remote = 0x1122334455667788ull;
	sim_buf_write(&B.buf, WIN_OFF + 8192 + aoff, &remote, 8);
	w = wr1(0xe202, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 0), 8);
	w.remote_addr = base + aoff;
	w.rkey = k;
	w.compare_add = 0x10;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xe202, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "type 2: FETCH_AND_ADD through the window");
	sim_buf_read(&A.buf, al8(&A, 0), &got, 8);
	sim_buf_read(&B.buf, WIN_OFF + 8192 + aoff, &remote, 8);
	tap_ok(got == 0x1122334455667788ull && remote == 0x1122334455667798ull,
	       "type 2: the atomic returned the old value and added (0x%llx, "
	       "0x%llx)",
	       (unsigned long long)got, (unsigned long long)remote);
	prepare_dst(&B.buf, WIN_OFF + 8192 + 200, 1000);
	win_write(&p.a, 0xe203, base + 200, k, 1000, 9610, PVO_WC_SUCCESS,
		  "type 2: WRITE through the window");
	check_data("type 2: the WRITE landed", &B.buf, WIN_OFF + 8192 + 200,
		   1000, 9610);

	/* 2B: another QP of b's PD does not reach it */
	if (pair_make(&q, PVO_QPT_RC, &fast, &fast)) {
		win_write(&q.a, 0xe204, base + 200, k, 100, 9611,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 2: WRITE arriving at another QP of the same "
			  "PD -> REM_ACCESS_ERR");
		pair_destroy(&q);
	}
	TAP_STATUS(
	    pvo_destroy(B.vm->fe, PVO_CMD_DEREG_MR, B.ctx.handle, mr->handle),
	    PVO_STATUS_EBUSY, "DEREG_MR of an MR with a window bound -> EBUSY");

	/* SEND_WITH_INV from a invalidates it */
	w = wr1(0xe205, PVO_WR_SEND, &B, 512 * KIB, 512);
	sim_post_recv(&p.b, 0xe205, w.sge, 1);
	w = wr1(0xe206, PVO_WR_SEND_WITH_INV, &A, 0, 100);
	w.invalidate_rkey = k;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0xe206, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "type 2: SEND_WITH_INV naming the window's key");
	if (get_cqe(&B.rcq, &c, "receive of SEND_WITH_INV"))
		tap_ok(c.status == PVO_WC_SUCCESS && (c.flags & PVO_WC_F_INV) &&
			   le32toh((uint32_t)c.imm_data) == k,
		       "type 2: the receive says 'invalidated' and names "
		       "0x%x (%s)",
		       k, cqe_str(&c));
	pair_destroy(&p);
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_write(&p.a, 0xe207, base + 200, k, 100, 9612,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 2: WRITE after SEND_WITH_INV -> "
			  "REM_ACCESS_ERR");
		pair_destroy(&p);
	}

	/* bind again (it is free), LOCAL_INV, and the errors */
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	k = next_key(k);
	bind_win(&p.b, 0xe208, k, mr, 0, 4096, RW, PVO_WC_SUCCESS,
		 "type 2: free again, bound again");
	local_inv(&p.b, 0xe209, k, PVO_WC_SUCCESS,
		  "type 2: LOCAL_INV of the window's key");
	local_inv(&p.b, 0xe20a, k, PVO_WC_LOC_ACCESS_ERR,
		  "type 2: LOCAL_INV of an invalid window -> LOC_ACCESS_ERR");
	pair_destroy(&p);
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		win_write(&p.a, 0xe20b, mr->iova, k, 100, 9613,
			  PVO_WC_REM_ACCESS_ERR,
			  "type 2: WRITE after LOCAL_INV -> REM_ACCESS_ERR");
		pair_destroy(&p);
	}
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	k = next_key(k);
	bind_win(&p.b, 0xe20c, k, mr, 0, 4096, RW, PVO_WC_SUCCESS,
		 "type 2: bound once more");
	bind_win(&p.b, 0xe20d, next_key(k), mr, 0, 4096, RW, PVO_WC_MW_BIND_ERR,
		 "type 2: BIND_MW of a bound type 2 window -> MW_BIND_ERR");
	pair_destroy(&p);
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	k = next_key(k);
	bind_win(&p.b, 0xe20e, k, mr, 0, 4096, RW, PVO_WC_SUCCESS,
		 "type 2: bound again after its QP was destroyed");
	local_inv(&p.b, 0xe20f, k ^ 0x80, PVO_WC_LOC_ACCESS_ERR,
		  "type 2: LOCAL_INV with a wrong key byte -> LOC_ACCESS_ERR");
	pair_destroy(&p);

	/* destroying the binding QP unbinds it: it binds again */
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	k = next_key(k);
	bind_win(&p.b, 0xe210, k, mr, 0, 4096, RW, PVO_WC_SUCCESS,
		 "type 2: bound through a QP about to be destroyed");
	pair_destroy(&p);
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	w2->rkey = next_key(k);
	bind_win(
	    &p.b, 0xe211, w2->rkey, mr, 0, 4096, RW, PVO_WC_SUCCESS,
	    "type 2: its QP destroyed, the window is free and binds again");
	pair_destroy(&p);
}

static void test_bind_errors(struct sim_mr *mr, struct win *w1, struct win *w2)
{
	const uint32_t lw = PVO_ACCESS_LOCAL_WRITE;
	struct sim_mr nobind, nolw;
	struct sim_pd pd2;
	struct win w3;
	struct pair p;
	int st;

	st = sim_reg_mr(&B.pd, &B.buf, WIN_OFF, 4096, lw, &nobind);
	if (st == PVO_STATUS_OK)
		st = sim_reg_mr(&B.pd, &B.buf, WIN_OFF, 4096,
				PVO_ACCESS_MW_BIND, &nolw);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"MRs without MW_BIND and without LOCAL_WRITE"))
		return;
	bad_bind(0xe301, next_key(w1->rkey), &nobind, 0, 4096, RW,
		 "BIND_MW to an MR without MW_BIND -> MW_BIND_ERR");
	bad_bind(0xe302, next_key(w1->rkey), &nolw, 0, 4096,
		 PVO_ACCESS_REMOTE_WRITE,
		 "BIND_MW with REMOTE_WRITE to an MR without LOCAL_WRITE -> "
		 "MW_BIND_ERR");
	bad_bind(0xe303, next_key(w1->rkey), mr, WIN_MR_LEN - 4096, 8192, RW,
		 "BIND_MW past the MR's end -> MW_BIND_ERR");
	bad_bind(0xe304, next_key(w1->rkey), mr, 0, 4096, 1u << 7,
		 "BIND_MW with an unknown access bit -> MW_BIND_ERR");
	bad_bind(0xe305, next_key(w1->rkey) & ~PVO_MW_KEY_BIT, mr, 0, 4096, RW,
		 "BIND_MW naming an MR key -> MW_BIND_ERR");
	bad_bind(0xe306, next_key(w1->rkey) + 0x100000, mr, 0, 4096, RW,
		 "BIND_MW naming no window -> MW_BIND_ERR");
	/* the window reg'd in another PD */
	st = sim_alloc_pd(&B.ctx, &pd2);
	if (st == PVO_STATUS_OK && alloc_win(1, &pd2, &w3)) {
		bad_bind(0xe307, next_key(w3.rkey), mr, 0, 4096, RW,
			 "BIND_MW of a window of another PD -> MW_BIND_ERR");
		TAP_STATUS(sim_dealloc_pd(&pd2), PVO_STATUS_EBUSY,
			   "DEALLOC_PD with a window in it -> EBUSY");
		TAP_STATUS(dealloc_win(&w3), PVO_STATUS_OK, "DEALLOC_MW");
	}
	sim_dealloc_pd(&pd2);

	/* a UD QP cannot bind */
	{
		struct ud_pair u;

		if (ud_make(&u, &B, &A)) {
			struct sim_wr w = {.wr_id = 0xe308,
					   .opcode = PVO_WR_BIND_MW,
					   .flags = PVO_WQE_F_SIGNALED};

			w.bind.rkey = next_key(w1->rkey);
			w.bind.lkey = mr->key;
			w.bind.addr = mr->iova;
			w.bind.length = 4096;
			w.bind.access = RW;
			post1(&u.a, &w);
			expect_cqe(&B.scq, 0xe308, PVO_WC_BIND_MW,
				   PVO_WC_LOC_QP_OP_ERR,
				   "BIND_MW on a UD QP -> LOC_QP_OP_ERR");
			ud_destroy(&u, &B, &A);
		}
	}
	/* a window bound to an MR of a's VM: the key names b's window
	 * index only; a's pair binding b's window key fails */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		struct sim_wr w = {.wr_id = 0xe309,
				   .opcode = PVO_WR_BIND_MW,
				   .flags = PVO_WQE_F_SIGNALED};

		w.bind.rkey = next_key(w2->rkey);
		w.bind.lkey = A.mr.key;
		w.bind.addr = A.mr.iova;
		w.bind.length = 4096;
		w.bind.access = RW;
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xe309, PVO_WC_BIND_MW, PVO_WC_MW_BIND_ERR,
			   "BIND_MW from another VM's QP naming b's window -> "
			   "MW_BIND_ERR");
		pair_destroy(&p);
	}
	sim_dereg_mr(&nobind);
	sim_dereg_mr(&nolw);
}

void test_mw(void)
{
	struct sim_mr mr;
	struct win w1, w2, junk;
	struct pair p;
	uint32_t h, key;
	int st;

	st = pvo_alloc_mw(B.vm->fe, B.ctx.handle, B.pd.handle, 3, &h, &key);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "ALLOC_MW of type 3 -> EINVAL");
	st = pvo_alloc_mw(B.vm->fe, B.ctx.handle, B.pd.handle + 1000, 1, &h,
			  &key);
	TAP_STATUS(st, PVO_STATUS_ENOENT, "ALLOC_MW in no PD -> ENOENT");
	st = pvo_alloc_mw(B.vm->fe, PVO_CTX_KERNEL, B.pd.handle, 1, &h, &key);
	TAP_STATUS(st, PVO_STATUS_EPERM,
		   "ALLOC_MW for the kernel context -> EPERM");
	if (!alloc_win(1, &B.pd, &w1) || !alloc_win(2, &B.pd, &w2))
		return;
	tap_ok((w1.rkey & PVO_MW_KEY_BIT) && (w2.rkey & PVO_MW_KEY_BIT) &&
		   w1.rkey != w2.rkey,
	       "window keys have bit 31 set and differ (0x%x, 0x%x)", w1.rkey,
	       w2.rkey);
	st = sim_reg_mr(&B.pd, &B.buf, WIN_OFF, WIN_MR_LEN,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_MW_BIND, &mr);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"an MR of b with LOCAL_WRITE | MW_BIND only"))
		return;

	test_type1(&mr, &w1);
	test_type2(&mr, &w2);
	test_bind_errors(&mr, &w1, &w2);

	/* a type 1 binding outlives the QP that made it */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		w1.rkey = next_key(w1.rkey);
		bind_win(&p.b, 0xe401, w1.rkey, &mr, 0, 4096, RW,
			 PVO_WC_SUCCESS, "type 1: bound once more");
		pair_destroy(&p);
	}
	TAP_STATUS(sim_dereg_mr(&mr), PVO_STATUS_EBUSY,
		   "DEREG_MR while a window is bound to it -> EBUSY");
	TAP_STATUS(dealloc_win(&w1), PVO_STATUS_OK,
		   "DEALLOC_MW of the bound window");
	TAP_STATUS(dealloc_win(&w1), PVO_STATUS_ENOENT,
		   "DEALLOC_MW again -> ENOENT");
	TAP_STATUS(sim_dereg_mr(&mr), PVO_STATUS_OK,
		   "DEREG_MR once no window is bound");
	TAP_STATUS(dealloc_win(&w2), PVO_STATUS_OK, "DEALLOC_MW of type 2");
	/* windows of a context go with it: one left for the teardown */
	alloc_win(2, &B.pd, &junk);
	drain_all();
}
