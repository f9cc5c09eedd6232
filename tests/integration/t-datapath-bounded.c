// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: bounded work per callback. VM a floods b with 16 MiB RDMA
 * WRITEs while a pair of QPs in VM c (another tenant) plays SEND
 * ping-pong: the pings keep completing during the flood (the back-end
 * copies a large WQE in slices and serves other VMs between them), and
 * every byte of the flood lands where it belongs across slice, SGE and
 * page boundaries. Then an MR deregistered and a QP destroyed while a
 * WQE is half copied: the right error once, no crash.
 */
#include "t-datapath.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

#define FLOOD_WQE (16 * MIB)
#define SRC_LEN (FLOOD_WQE + 64 * KIB)
/* a guest RAM region of the harness is 32 MiB: one target per WRITE */
#define DST_LEN (FLOOD_WQE + 64 * KIB)
#define FLOOD_PER_ROUND 2
/*
 * Round trips the victim must complete while at most FLOOD_MAX_ROUNDS
 * rounds (8 WRITEs, 128 MiB) are being copied. A round trip takes two
 * kicks, each served in a turn of the back-end's loop: with a whole WQE
 * per callback that is two WQEs per round trip (4 in 8 WRITEs, at
 * best); with a slice per turn, two slices (hundreds in 8 WRITEs on an
 * idle machine, a dozen on one so loaded that the busy back-end gets
 * the CPU once per scheduler period). The flood stops early once the
 * floor is reached.
 */
#define FLOOD_MIN_ROUNDS 2
#define FLOOD_MAX_ROUNDS 4
#define VICTIM_FLOOR 8
#define MAX_SAMPLES 100000

static struct sim_buf src, dst[2];
static struct sim_mr src_mr, dst_mr[2];
static long long half_us[MAX_SAMPLES];
static unsigned int nhalf;

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ll + ts.tv_nsec / 1000;
}

static uint8_t big_pat(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;

	return (uint8_t)(x >> 29 ^ x >> 47 ^ i >> 12);
}

/* Pattern seed from byte base on, into [off, off + len) of b. */
static void big_fill(struct sim_buf *b, uint64_t off, uint64_t len,
		     uint32_t seed, uint64_t base)
{
	uint64_t done, n, i;

	for (done = 0; done < len; done += n) {
		n = MIN(len - done, (uint64_t)DATA_LEN);
		for (i = 0; i < n; i++)
			scratch[i] = big_pat(seed, base + done + i);
		sim_buf_write(b, off + done, scratch, n);
	}
}

/* [off, off + len) of b holds pattern seed from base on; the GUARD bytes
 * around it are untouched. Returns the bytes that differ. */
static uint64_t big_diff(struct sim_buf *b, uint64_t off, uint64_t len,
			 uint32_t seed, uint64_t base)
{
	uint64_t done, n, i, bad = 0;
	uint8_t g[GUARD];

	for (done = 0; done < len; done += n) {
		n = MIN(len - done, (uint64_t)DATA_LEN);
		sim_buf_read(b, off + done, scratch, n);
		for (i = 0; i < n; i++)
			bad += scratch[i] != big_pat(seed, base + done + i);
	}
	sim_buf_read(b, off - GUARD, g, GUARD);
	for (i = 0; i < GUARD; i++)
		bad += g[i] != GUARD_BYTE;
	sim_buf_read(b, off + len, g, GUARD);
	for (i = 0; i < GUARD; i++)
		bad += g[i] != GUARD_BYTE;
	return bad;
}

static bool flood_buffers(void)
{
	unsigned int i;
	int st;

	if (sim_buf_alloc(&src, sim_vm_ram(A.vm),
			  sim_vm_va(A.vm, SRC_LEN + PVO_PAGE_SIZE), SRC_LEN,
			  0x211, SIM_LAYOUT_SCATTER) ||
	    sim_buf_alloc(&dst[0], sim_vm_ram(B.vm),
			  sim_vm_va(B.vm, DST_LEN + PVO_PAGE_SIZE), DST_LEN,
			  0x87, SIM_LAYOUT_SCATTER) ||
	    sim_buf_alloc(&dst[1], sim_vm_ram(B.vm),
			  sim_vm_va(B.vm, DST_LEN + PVO_PAGE_SIZE), DST_LEN,
			  0x9, SIM_LAYOUT_SCATTER)) {
		tap_ok(false, "guest RAM for 16 MiB at a and 2 x 16 MiB at b");
		return false;
	}
	st = sim_reg_mr(&A.pd, &src, 0, SRC_LEN, PVO_ACCESS_LOCAL_WRITE,
			&src_mr);
	for (i = 0; i < 2 && st == PVO_STATUS_OK; i++)
		st = sim_reg_mr(&B.pd, &dst[i], 0, DST_LEN,
				PVO_ACCESS_LOCAL_WRITE |
				    PVO_ACCESS_REMOTE_WRITE,
				&dst_mr[i]);
	return TAP_STATUS(st, PVO_STATUS_OK,
			  "REG_MR of 16 MiB at a and 2 x 16 MiB at b, "
			  "scattered pages");
}

/*
 * WRITE j of round r: three SGEs of odd sizes, back to back in the
 * source (so the message is one run of the pattern) and crossing slice
 * and page boundaries inside, to an odd offset at b.
 */
static struct sim_wr flood_wr(unsigned int r, unsigned int j, uint64_t *so,
			      uint64_t *doff, uint32_t *len)
{
	uint32_t l0 = 5 * MIB + 123, l1 = 7 * MIB + 4001;
	struct sim_wr w;

	*so = 1 + j * 4099 + r * 17;
	*len = FLOOD_WQE - 1 - 2 * j - 1000 * r;
	*doff = GUARD + 3 + r * 5;
	memset(&w, 0, sizeof(w));
	w.wr_id = 0xb100 + r * 16 + j;
	w.opcode = PVO_WR_RDMA_WRITE;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 3;
	w.sge[0] = (struct sim_sge){src.va + *so, l0, src_mr.key};
	w.sge[1] = (struct sim_sge){src.va + *so + l0, l1, src_mr.key};
	w.sge[2] = (struct sim_sge){src.va + *so + l0 + l1, *len - l0 - l1,
				    src_mr.key};
	w.remote_addr = dst[j].va + *doff;
	w.rkey = dst_mr[j].key;
	return w;
}

/*
 * Waits for the CQE of wr_id on cq. Spinning only briefly, then
 * sleeping between looks: on a machine of two CPUs a client that spins
 * shares a CPU with the busy back-end in scheduler time slices of
 * milliseconds, which the victim would measure instead of the back-end;
 * a client that sleeps is woken ahead of it.
 */
static bool victim_cqe(struct sim_cq *cq, uint64_t wr_id)
{
	long long start = now_us(), end = now_ms() + timeout_ms;
	struct timespec nap = {0, 20000};
	struct pvo_cqe c;

	while (now_ms() < end) {
		if (sim_poll_cq(cq, &c, 1) != 1) {
			if (now_us() - start > 20)
				nanosleep(&nap, NULL);
			continue;
		}
		if (c.wr_id != wr_id || c.status != PVO_WC_SUCCESS) {
			tap_diag("victim: unexpected %s", cqe_str(&c));
			return false;
		}
		return true;
	}
	tap_diag("victim: no CQE for wr_id 0x%llx",
		 (unsigned long long)wr_id);
	return false;
}

static void sample(long long us)
{
	if (nhalf < MAX_SAMPLES)
		half_us[nhalf++] = us;
}

/* One 64-byte round trip of the victim pair (a -> b, b -> a), each half
 * timed from the post to the receive CQE. */
static bool ping(struct pair *v, uint64_t n)
{
	struct sim_wr w;
	long long t;

	if (!post_recv1(&v->b, &C, 0xc1000000 + n, 8192, 64) ||
	    !post_recv1(&v->a, &C, 0xc2000000 + n, 12288, 64))
		return false;
	w = wr1(0xc3000000 + n, PVO_WR_SEND, &C, 0, 64);
	w.flags = 0;
	t = now_us();
	if (!post1(&v->a, &w) || !victim_cqe(&C.rcq, 0xc1000000 + n))
		return false;
	sample(now_us() - t);
	w = wr1(0xc4000000 + n, PVO_WR_SEND, &C, 4096, 64);
	w.flags = 0;
	t = now_us();
	if (!post1(&v->b, &w) || !victim_cqe(&C.rcq, 0xc2000000 + n))
		return false;
	sample(now_us() - t);
	return true;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, unsigned int from)
{
	unsigned int n = nhalf - from;
	long long *s = half_us + from;

	if (!n)
		return;
	qsort(s, n, sizeof(*s), cmp_ll);
	tap_diag("%s: %u half round trips, median %lld us, p99 %lld us, "
		 "max %lld us",
		 what, n, s[n / 2], s[(n * 99) / 100], s[n - 1]);
}

/* The victim alone: its latency without the flood, for the record. */
static void idle_pings(struct pair *v)
{
	unsigned int i, from = nhalf;

	for (i = 0; i < 500; i++)
		if (!ping(v, 0x100000 + i))
			break;
	report("victim idle", from);
}

/* Flood CQEs of round r seen so far; false on a wrong one. */
static bool flood_poll(unsigned int r, unsigned int *done)
{
	struct pvo_cqe c;

	while (sim_poll_cq(&A.scq, &c, 1) == 1) {
		if (!cqe_ok(&c, 0xb100 + r * 16 + *done, PVO_WC_RDMA_WRITE,
			    PVO_WC_SUCCESS, "flood WRITE"))
			return false;
		(*done)++;
	}
	return true;
}

static void flood_round(struct pair *fp, struct pair *v, unsigned int r,
			unsigned int *pings)
{
	uint64_t so[FLOOD_PER_ROUND], doff[FLOOD_PER_ROUND];
	uint32_t len[FLOOD_PER_ROUND];
	unsigned int j, done = 0, n = 0;
	bool imm = r == FLOOD_MIN_ROUNDS;
	struct sim_wr w[FLOOD_PER_ROUND];
	long long t0;
	struct pvo_cqe c;
	char what[96];

	sim_buf_fill(&dst[0], 0, GUARD_BYTE, DST_LEN);
	sim_buf_fill(&dst[1], 0, GUARD_BYTE, DST_LEN);
	big_fill(&src, 0, SRC_LEN, 9400 + r, 0);
	for (j = 0; j < FLOOD_PER_ROUND; j++)
		w[j] = flood_wr(r, j, &so[j], &doff[j], &len[j]);
	if (imm) {
		/* the last WRITE of the flood carries an immediate: b
		 * gets it once, after all its bytes */
		w[FLOOD_PER_ROUND - 1].opcode = PVO_WR_RDMA_WRITE_WITH_IMM;
		w[FLOOD_PER_ROUND - 1].imm = 0x5eed0000 + r;
		post_recv1(&fp->b, &B, 0xb1ff, 0, 0);
	}
	t0 = now_us();
	if (sim_post_send(&fp->a, w, FLOOD_PER_ROUND)) {
		tap_ok(false, "flood round %u: post", r);
		return;
	}
	while (done < FLOOD_PER_ROUND && now_us() - t0 < timeout_ms * 4000ll) {
		if (!flood_poll(r, &done))
			break;
		if (done == FLOOD_PER_ROUND)
			break;
		if (!v) { /* warming up: the flood alone */
			sleep_ms(1);
			continue;
		}
		if (!ping(v, r * 100000 + n))
			break;
		n++;
		if (!flood_poll(r, &done))
			break;
	}
	while (done < FLOOD_PER_ROUND && get_cqe(&A.scq, &c, "flood WRITE") &&
	       cqe_ok(&c, 0xb100 + r * 16 + done, PVO_WC_RDMA_WRITE,
		      PVO_WC_SUCCESS, "flood WRITE"))
		done++;
	tap_ok(done == FLOOD_PER_ROUND,
	       "flood round %u: %u WRITEs of ~16 MiB complete in order "
	       "(%u) in %lld ms",
	       r, FLOOD_PER_ROUND, done, (now_us() - t0) / 1000);
	tap_diag("flood round %u: %u victim round trips during it", r, n);
	*pings += n;
	for (j = 0; j < FLOOD_PER_ROUND; j++) {
		uint64_t bad =
		    big_diff(&dst[j], doff[j], len[j], 9400 + r, so[j]);

		snprintf(what, sizeof(what),
			 "flood round %u, WRITE %u%s: %u bytes, 3 SGEs, every "
			 "byte at b as sent, guards untouched",
			 r, j, imm && j == FLOOD_PER_ROUND - 1 ? " with imm" : "",
			 len[j]);
		if (!tap_ok(bad == 0, "%s", what))
			tap_diag("%llu bytes differ", (unsigned long long)bad);
	}
	if (imm) {
		if (get_cqe(&B.rcq, &c, "WRITE with immediate at b"))
			tap_ok(c.wr_id == 0xb1ff && c.status == PVO_WC_SUCCESS &&
				   c.opcode == PVO_WC_RECV_RDMA_WITH_IMM &&
				   be32toh(c.imm_data) == 0x5eed0000 + r &&
				   le32toh(c.byte_len) ==
				       len[FLOOD_PER_ROUND - 1],
			       "the WRITE with immediate completes at b once "
			       "its %u bytes are in (%s)",
			       len[FLOOD_PER_ROUND - 1], cqe_str(&c));
		expect_no_cqe(&B.rcq, 50, "  ... and only once");
	}
}

static void test_flood(void)
{
	struct pair fp, v;
	unsigned int r, pings = 0, from;

	if (!pair_make(&fp, PVO_QPT_RC, NULL, NULL))
		return;
	if (!pair_make_ex(&v, &C, &C, PVO_QPT_RC, false, NULL, NULL)) {
		pair_destroy(&fp);
		return;
	}
	drain_all();
	/* round 0 alone: the first touch of the pages (the back-end maps
	 * them in) is no part of what the victim measures */
	flood_round(&fp, NULL, 0, &pings);
	nhalf = 0;
	idle_pings(&v);
	from = nhalf;
	for (r = 1; r <= FLOOD_MAX_ROUNDS; r++) {
		if (r > FLOOD_MIN_ROUNDS && pings >= VICTIM_FLOOR)
			break;
		flood_round(&fp, &v, r, &pings);
	}
	report("victim during the flood", from);
	tap_ok(pings >= VICTIM_FLOOR,
	       "the victim (VM c) completes %u round trips while a floods b "
	       "with %u MiB in 16 MiB WRITEs (floor %u)",
	       pings, (r - 1) * FLOOD_PER_ROUND * 16, VICTIM_FLOOR);
	check_sq_consumed(&fp.a, "flood");
	pair_destroy(&v);
	pair_destroy(&fp);
	drain_all();
}

/*
 * Eight 16 MiB WRITEs to an MR of b, then b takes the MR away (or
 * destroys its QP) while they are being copied: the WQE being copied
 * fails with the responder's error, once, the rest are flushed, and the
 * back-end goes on.
 */
static void midway(bool destroy)
{
	const char *what = destroy ? "b's QP destroyed during the WRITEs"
				   : "b's MR deregistered during the WRITEs";
	unsigned int i, ok = 0, failed = 0, flushed = 0, other = 0;
	bool mr_live;
	struct sim_wr w[8];
	struct sim_mr mr;
	struct pvo_cqe c;
	struct pair p;
	uint64_t so, doff;
	uint32_t len;
	int st;

	st = sim_reg_mr(&B.pd, &dst[0], 0, DST_LEN,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE, &mr);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "%s: b registers 16 MiB", what))
		return;
	mr_live = true;
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		sim_dereg_mr(&mr);
		return;
	}
	for (i = 0; i < 8; i++) {
		w[i] = flood_wr(0, 0, &so, &doff, &len);
		w[i].wr_id = 0xb200 + i;
		w[i].rkey = mr.key;
	}
	if (sim_post_send(&p.a, w, 8)) {
		tap_ok(false, "%s: post", what);
		goto out;
	}
	sleep_ms(2);
	if (destroy) {
		st = sim_destroy_qp(&p.b);
		p.made = false;
	} else {
		st = sim_dereg_mr(&mr);
		mr_live = false;
	}
	TAP_STATUS(st, PVO_STATUS_OK, "%s: the command succeeds", what);
	for (i = 0; i < 8; i++) {
		if (!get_cqe(&A.scq, &c, what))
			break;
		if (c.wr_id != 0xb200 + i)
			other++;
		else if (c.status == PVO_WC_SUCCESS && !failed)
			ok++;
		else if (c.status == (destroy ? PVO_WC_RETRY_EXC_ERR
					      : PVO_WC_REM_ACCESS_ERR) &&
			 !failed)
			failed++;
		else if (c.status == PVO_WC_WR_FLUSH_ERR && failed)
			flushed++;
		else
			other++;
		if (other)
			tap_diag("%s: unexpected %s", what, cqe_str(&c));
	}
	if (ok == 8) {
		tap_skip(2, "the WRITEs were done before the command came");
		goto out;
	}
	tap_ok(failed == 1 && ok + failed + flushed == 8 && !other,
	       "%s: %u WRITEs complete, then one fails with %s, the %u "
	       "behind it are flushed, each WQE completes once",
	       what, ok, destroy ? "RETRY_EXC_ERR" : "REM_ACCESS_ERR",
	       flushed);
	expect_no_cqe(&A.scq, 50, "  ... and nothing more");
	tap_ok(backend_running(&bp), "%s: the back-end goes on", what);
out:
	if (mr_live)
		sim_dereg_mr(&mr);
	if (p.made) {
		pair_destroy(&p);
	} else {
		sim_destroy_qp(&p.a);
	}
	drain_all();
}

void test_bounded(void)
{
	if (overlay) {
		tap_skip(1, "the flood runs on the local transport (the "
			    "overlay's own pacing is t-overlay-*'s)");
		return;
	}
	if (!flood_buffers())
		return;
	test_flood();
	midway(false);
	midway(true);
	{
		/* the pair made afterwards still moves data */
		struct pair p;

		if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
			xfer(&p, X_WRITE, 300 * KIB + 7, 5, 9, false, 9470);
			xfer(&p, X_SEND, 600 * KIB + 1, 3, 11, false, 9471);
			xfer(&p, X_READ, 700 * KIB + 3, 1, 13, false, 9472);
			pair_destroy(&p);
		}
	}
	sim_dereg_mr(&dst_mr[0]);
	sim_dereg_mr(&dst_mr[1]);
	sim_dereg_mr(&src_mr);
	sim_buf_free(&dst[0]);
	sim_buf_free(&dst[1]);
	sim_buf_free(&src);
}
