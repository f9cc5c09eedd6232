// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-bench: the two simulated VMs a and b both modes run (their context,
 * CQs, 32 MiB buffer and MR), the RC QP pair between them, and the
 * WRITE / SEND stream from a to b that the native and the overlay tables
 * measure.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <string.h>
#include <time.h>

#include "bench.h"

void side_open(struct side *s)
{
	struct backend_proc *be = s->be ? s->be : &bp;
	struct sim_vm_opts o = {
	    .name = s->name,
	    .socket_path =
		backend_vm_socket(overlay && s == &B ? &bp2 : be, s->name),
	    .ram_size = RAM_LEN,
	    .ram_regions = 1,
	};
	uint32_t cq_flags = s->events ? 0 : PVO_CQ_F_NO_EVENTS;
	char err[512];
	int st;

	s->vm = sim_vm_open(&o, err, sizeof(err));
	if (!s->vm)
		die("%s", err);
	st = sim_ctx_open(s->vm, &s->ctx);
	if (!st)
		st = sim_alloc_pd(&s->ctx, &s->pd);
	/* a side that polls and never waits for an event has CQs as the
	 * provider makes them without a completion channel */
	if (!st)
		st = sim_create_cq_flags(&s->ctx, 4096, cq_flags, &s->scq);
	if (!st)
		st = sim_create_cq_flags(&s->ctx, 4096, cq_flags, &s->rcq);
	if (st)
		die("%s", s->vm->err);
	/* physically contiguous, so memcpy sees one host range */
	if (sim_buf_alloc(&s->buf, sim_vm_ram(s->vm), sim_vm_va(s->vm, BUF_LEN),
			  BUF_LEN, 0, SIM_LAYOUT_CONTIG))
		die("%s: no guest RAM for the %llu MiB buffer", s->name,
		    BUF_LEN / MIB);
	st = sim_reg_mr(&s->pd, &s->buf, 0, BUF_LEN,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_READ,
			&s->mr);
	if (st)
		die("%s", s->vm->err);
}

/* Drop the VM's connection and free its guest RAM. */
void side_close(struct side *s)
{
	sim_vm_close(s->vm);
	s->vm = NULL;
}

/* An RC QP on each of @x and @y, connected to each other. */
void connect_sides(struct side *x, struct side *y)
{
	struct sim_qp_init in = {
	    .type = PVO_QPT_RC,
	    .sq_entries = SQ_ENTRIES,
	    .rq_entries = RQ_ENTRIES,
	    .max_send_sge = 1,
	    .max_recv_sge = 1,
	    .max_inline = 64,
	    .layout = SIM_LAYOUT_CONTIG,
	};
	struct sim_conn conn = {0};
	struct sim_peer pa, pb;
	int st;

	in.send_cq = &x->scq;
	in.recv_cq = &x->rcq;
	st = sim_create_qp(&x->pd, &in, &x->qp);
	if (st)
		die("%s", x->vm->err);
	in.send_cq = &y->scq;
	in.recv_cq = &y->rcq;
	st = sim_create_qp(&y->pd, &in, &y->qp);
	if (st)
		die("%s", y->vm->err);
	/* the overlay carries IPv4 GIDs (index 1: the VM's first IP) */
	conn.sgid_index = overlay ? 1 : 0;
	sim_qp_peer(&x->qp, conn.sgid_index, &pa);
	sim_qp_peer(&y->qp, conn.sgid_index, &pb);
	st = sim_qp_connect(&x->qp, &conn, &pb);
	if (!st)
		st = sim_qp_connect(&y->qp, &conn, &pa);
	if (st)
		die("connect: %s / %s", x->vm->err, y->vm->err);
}

void connect_pair(void)
{
	connect_sides(&A, &B);
}

/* Each measurement starts on a fresh pair: no receives of another size
 * left in the RQ, no completions left in the CQs. */
void disconnect_pair(void)
{
	struct pvo_cqe c[64];

	if (sim_destroy_qp(&A.qp) || sim_destroy_qp(&B.qp))
		die("destroy QP: %s / %s", A.vm->err, B.vm->err);
	while (sim_poll_cq(&A.scq, c, 64) > 0 ||
	       sim_poll_cq(&A.rcq, c, 64) > 0 ||
	       sim_poll_cq(&B.scq, c, 64) > 0 || sim_poll_cq(&B.rcq, c, 64) > 0)
		;
}

/* Keep @s's RQ full of receives over its buffer slots. */
unsigned int recv_slot;

void refill_recvs(struct side *s, unsigned int size, unsigned int nslots)
{
	while (s->qp.rq_prod - le32toh(sim_load_acquire(&s->qp.rq.hdr->cons)) <
	       RQ_ENTRIES) {
		struct sim_sge sge = {
		    .addr = s->buf.va + (uint64_t)(recv_slot++ % nslots) * size,
		    .length = size,
		    .lkey = s->mr.key,
		};

		if (sim_post_recv(&s->qp, 0, &sge, 1))
			break;
	}
}

void check_cqes(const struct pvo_cqe *c, int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (c[i].status != PVO_WC_SUCCESS)
			die("%s: completion with status %s (wr_id %llu)", what,
			    sim_wc_status_name(c[i].status),
			    (unsigned long long)le64toh(c[i].wr_id));
}

/*
 * A client that spins on its CQs takes a core from the back-end when the
 * machine has no spare one (two back-end threads on two cores): what it
 * measures is then the CPU scheduler. With s->events the client arms the
 * CQ, polls once more (a CQE may have come before the arm) and sleeps on
 * the VM's event queue, as a guest waiting on a completion channel does.
 */
int cq_reap(struct side *s, struct sim_cq *cq, struct pvo_cqe *c, int max,
	    double deadline)
{
	struct sim_event ev;
	int n, left;

	for (;;) {
		n = sim_poll_cq(cq, c, max);
		if (n)
			return n;
		if (now_s() > deadline)
			return 0;
		if (!s->events)
			continue;
		sim_arm_cq(cq, PVO_CQ_ARM_NEXT);
		n = sim_poll_cq(cq, c, max);
		if (n)
			return n;
		left = (int)((deadline - now_s()) * 1000) + 1;
		/* any event will do: the loop polls the CQ again */
		if (sim_vm_next_event(s->vm, &ev, left) < 0)
			die("%s: event queue: %s", s->name, s->vm->err);
	}
}

/*
 * Stream @opcode messages of @size from a to b for @seconds with up to
 * @depth in flight, posted @batch per doorbell, the last of each batch
 * signaled. With @base, a memcpy slice of the same length follows each
 * slice of the stream and @base adds them up.
 */
struct result stream(uint8_t opcode, unsigned int size, unsigned int depth,
		     unsigned int batch, double seconds, struct tally *base)
{
	static struct sim_wr wrs[MAX_BATCH];
	unsigned int nslots = BUF_LEN / size, i;
	uint64_t posted = 0, done = 0, slot = 0, received = 0;
	struct pvo_cqe c[64];
	struct result r = {0};
	double t0, t1, stop_at, streamed = 0;
	bool is_send = opcode == PVO_WR_SEND;
	uint64_t cpu_ns = 0, cpu0;

	if (nslots > depth)
		nslots = depth;
	/* at least four batches in flight, or the back-end idles while we
	 * wait for the one signaled completion */
	if (batch > depth / 4)
		batch = depth / 4 ? depth / 4 : 1;
	connect_pair();
	if (is_send) {
		recv_slot = 0;
		refill_recvs(&B, size, nslots);
	}
	for (i = 0; i < batch; i++) {
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].opcode = opcode;
		wrs[i].num_sge = 1;
		wrs[i].sge[0].length = size;
		wrs[i].sge[0].lkey = A.mr.key;
		wrs[i].rkey = B.mr.key;
	}
	wrs[batch - 1].flags = PVO_WQE_F_SIGNALED;

slice: /* one, or with a baseline until @seconds of them have run */
	cpu0 = backend_cpu_ns();
	t0 = now_s();
	stop_at = t0 + seconds - streamed;
	if (base && seconds - streamed > SLICE_S)
		stop_at = t0 + SLICE_S;
	for (;;) {
		bool stopping = now_s() >= stop_at;
		int n;

		bool busy = false;

		if (!stopping && posted - done + batch <= depth) {
			busy = true;
			for (i = 0; i < batch; i++, slot++) {
				uint64_t off = (slot % nslots) * size;

				wrs[i].wr_id = posted + i;
				wrs[i].sge[0].addr = A.buf.va + off;
				wrs[i].remote_addr = B.mr.iova + off;
			}
			if (sim_post_send(&A.qp, wrs, batch) == 0)
				posted += batch;
		}
		n = sim_poll_cq(&A.scq, c, 64);
		check_cqes(c, n, "requester");
		done += (uint64_t)n * batch;
		busy |= n > 0;
		if (is_send) {
			n = sim_poll_cq(&B.rcq, c, 64);
			check_cqes(c, n, "responder");
			received += n;
			busy |= n > 0;
			if (n)
				refill_recvs(&B, size, nslots);
		}
		if (stopping && done == posted)
			break;
		if (stopping && now_s() > stop_at + timeout_ms / 1000.0)
			die("%s %u B: %llu of %llu messages never completed",
			    is_send ? "SEND" : "WRITE", size,
			    (unsigned long long)(posted - done),
			    (unsigned long long)posted);
		if (!busy && idle_sleep_us) {
			struct timespec ts = {0, idle_sleep_us * 1000L};

			nanosleep(&ts, NULL);
		}
	}
	t1 = now_s();
	if (is_send) {
		/* the last receives may trail the last send completion */
		while (received < posted && now_s() < t1 + 5) {
			int n = sim_poll_cq(&B.rcq, c, 64);

			check_cqes(c, n, "responder");
			received += n;
		}
		if (received != posted)
			die("SEND %u B: %llu sent, %llu received", size,
			    (unsigned long long)posted,
			    (unsigned long long)received);
		refill_recvs(&B, size, nslots);
		t1 = now_s(); /* the slice ends with its last receive */
	}
	cpu_ns += backend_cpu_ns() - cpu0;
	streamed += t1 - t0;
	if (base) {
		memcpy_slice(size, nslots, t1 - t0, base);
		if (streamed < seconds)
			goto slice;
	}
	r.be_ns = done ? (double)cpu_ns / done : 0;
	disconnect_pair();
	if (!overlay)
		collect_profile(is_send ? "SEND" : "WRITE", size);
	r.mbps = (double)done * size / streamed / 1e6;
	r.mmsgs = (double)done / streamed / 1e6;
	r.ok = true;
	return r;
}
