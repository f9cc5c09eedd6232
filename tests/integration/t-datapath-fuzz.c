// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: garbage WQEs (fuzz), and a VM going away with work in
 * flight.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* fuzz                                                               */

uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Garbage in SQ (and RQ) slots: error completions, never a crash or a
 * stall; no byte of either buffer moves. */
void test_fuzz(void)
{
	enum { ROUNDS = 40, K = 16 };
	static const uint8_t types[] = {PVO_QPT_RC, PVO_QPT_UC, PVO_QPT_UD};
	unsigned int round, bad_rounds = 0;
	uint64_t sum_a = buf_sum(&A.buf), sum_b = buf_sum(&B.buf);

	tap_diag("fuzz seed 0x%llx", (unsigned long long)rng_state);
	for (round = 0; round < ROUNDS; round++) {
		uint8_t type = types[round % 3];
		struct sim_conn fz = fast;
		uint64_t ids[K];
		struct pvo_cqe c[K + 8];
		struct pair p;
		unsigned int i, j, n = 0, stray = 0;
		long long deadline;
		bool ok = true;

		fz.rnr_retry = 1;
		fz.retry_cnt = 1;
		if (type == PVO_QPT_UD) {
			struct ud_pair u;

			if (!ud_make(&u, &A, &B))
				break;
			p.a = u.a;
			p.b = u.b;
			p.na = &A;
			p.nb = &B;
			p.made = true;
			sim_destroy_ah(&A.ctx, u.ah_v4);
			sim_destroy_ah(&A.ctx, u.ah_ll);
		} else if (!pair_make(&p, type, &fz, &fz)) {
			break;
		}
		/* garbage receive WQEs on b too, every other round */
		if (round & 1) {
			for (i = 0; i < 4; i++) {
				uint8_t *s = sim_rq_slot(&p.b, i);

				for (j = 0; j < (1u << p.b.rq.shift); j += 8)
					*(uint64_t *)(s + j) = rnd();
			}
			sim_rq_publish(&p.b, 4);
		}
		for (i = 0; i < K; i++) {
			uint8_t *s = sim_sq_slot(&p.a, i);
			struct pvo_send_wqe *h = (struct pvo_send_wqe *)s;
			uint64_t r = rnd();

			for (j = 0; j < (1u << p.a.sq.shift); j += 8)
				*(uint64_t *)(s + j) = rnd();
			/* half of them with a plausible header, so the
			 * parser gets past the opcode */
			if (r & 1) {
				h->opcode = (r >> 8) % 7;
				h->num_sge = (r >> 16) % 20;
				h->flags = (r >> 24) & 0xf;
				if (r & 2)
					h->inline_len =
					    htole32((r >> 32) % 300);
			}
			ids[i] = le64toh(h->wr_id);
		}
		__atomic_thread_fence(__ATOMIC_RELEASE);
		sim_sq_publish(&p.a, K);

		deadline = now_ms() + 2 * timeout_ms;
		while (now_ms() < deadline) {
			int got = sim_wait_cq(&A.scq, c + n, K + 8 - n, 20);

			n += got > 0 ? got : 0;
			if (sim_sq_outstanding(&p.a) == 0 && got <= 0)
				break;
		}
		if (sim_sq_outstanding(&p.a)) {
			tap_diag("round %u (%s): %u of %u garbage WQEs never "
				 "consumed",
				 round, qpt_name(type),
				 sim_sq_outstanding(&p.a), K);
			ok = false;
		}
		for (i = 0; i < n; i++) {
			bool known = false;

			for (j = 0; j < K; j++)
				known |= le64toh(c[i].wr_id) == ids[j];
			if (!known)
				stray++;
		}
		if (stray || n > K) {
			tap_diag("round %u: %u completions, %u with a wr_id "
				 "that was never posted",
				 round, n, stray);
			ok = false;
		}
		if (!n) {
			tap_diag("round %u (%s): 16 garbage WQEs and not one "
				 "(error) completion",
				 round, qpt_name(type));
			ok = false;
		}
		if (!ok)
			bad_rounds++;
		pair_destroy(&p);
		if (!backend_running(&bp))
			lost("the back-end died on garbage WQEs");
	}
	tap_ok(!bad_rounds && round == ROUNDS,
	       "%u rounds of %u garbage WQEs on RC / UC / UD: all consumed, "
	       "completions only for posted wr_ids (%u bad rounds)",
	       round, K, bad_rounds);
	tap_ok(buf_sum(&A.buf) == sum_a && buf_sum(&B.buf) == sum_b,
	       "garbage WQEs moved no byte of a's or b's registered memory");
	{
		struct pair p;

		if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
			xfer(&p, X_WRITE, 10000, 5, 6, false, 9400);
			pair_destroy(&p);
		}
	}
}

/* ------------------------------------------------------------------ */
/* a VM going away with work in flight                                */

static void node_forget(struct node *n)
{
	/* the back-end dropped everything with the session; closing the
	 * VM frees our side of every object */
	sim_vm_close(n->vm);
	memset(&n->ctx, 0, sizeof(n->ctx));
	n->vm = NULL;
}

void test_disconnect(void)
{
	enum { NW = 16, FIRST = 4, STUCK = 4 };
	struct sim_conn ca = fast, cb = fast;
	static struct sim_wr ws[NW];
	struct pvo_cqe c[NW];
	struct pvo_resp_query_device d;
	struct pair p;
	unsigned int i, n = 0, flushed = 0;
	long long deadline;

	/* a retries RNR forever; only b's disappearance can end it */
	ca.rnr_retry = 7;
	/* 67 ms ACK timeout: RNR waits are tested here, not a loaded
	 * machine's answers that take longer than fast's 1 ms */
	ca.timeout = 14;
	cb.min_rnr_timer = 14;
	if (!pair_make(&p, PVO_QPT_RC, &ca, &cb))
		return;
	for (i = 0; i < NW; i++) {
		if (i == STUCK) {
			ws[i] = wr1(i, PVO_WR_SEND, &A, 0, 4096);
		} else {
			ws[i] = write_wr(i, 0, i < FIRST ? 1 * MIB : 64 * KIB,
					 B.mr.iova + 64 * KIB, B.mr.key);
			if (i > STUCK && (i & 1))
				ws[i].opcode = PVO_WR_RDMA_READ;
		}
	}
	if (sim_post_send(&p.a, ws, NW))
		tap_diag("post failed");
	n = sim_wait_cq(&A.scq, c, FIRST, timeout_ms);
	tap_ok(n == FIRST, "four 1 MiB WRITEs to b complete (%u)", n);
	n += sim_wait_cq(&A.scq, c + n, 1, 50);
	tap_ok(n == FIRST,
	       "a SEND to b without a receive waits in RNR retries, 11 WQEs "
	       "behind it (%u completions)",
	       n - FIRST);
	if (n > FIRST)
		tap_diag("unexpected: %s", cqe_str(&c[FIRST]));

	/* b's QEMU goes away while a's work to it is in flight */
	sim_vm_disconnect(B.vm);
	deadline = now_ms() + 4 * timeout_ms;
	while (n < NW && now_ms() < deadline) {
		int got = sim_wait_cq(&A.scq, c + n, NW - n, 100);

		n += got > 0 ? got : 0;
	}
	tap_ok(n == NW, "b disconnected: every WQE of a's completes (%u of %u)",
	       n, NW);
	if (n > FIRST)
		cqe_is(&c[FIRST], STUCK, PVO_WC_SEND, PVO_WC_RETRY_EXC_ERR,
		       "the SEND stuck in RNR once b is gone");
	for (i = FIRST + 1; i < n; i++)
		flushed += c[i].status == PVO_WC_WR_FLUSH_ERR;
	tap_ok(n == NW && flushed == NW - FIRST - 1,
	       "the WQEs behind it are flushed (%u of %u)", flushed,
	       NW - FIRST - 1);
	expect_state(&p.a, PVO_QPS_ERR, "a's QP after b left");
	tap_ok(backend_running(&bp), "the back-end survived it");
	tap_ok(pvo_query_device(A.vm->fe, &d) == PVO_STATUS_OK,
	       "a's control queue still answers");
	sim_destroy_qp(&p.a);
	drain(&A);

	/* b comes back as a fresh VM and works */
	node_forget(&B);
	if (!node_open(&B, "10.0.0.2"))
		lost("b cannot reconnect after a disconnect");
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		xfer(&p, X_WRITE, 1048576, 9, 10, false, 9500);
		xfer(&p, X_SEND, 4097, 11, 12, false, 9501);
		pair_destroy(&p);
	}
}
