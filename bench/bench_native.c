// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-bench's native benchmark: two simulated VMs on one back-end in one
 * tenant, one RC QP pair between them; the CPU pinning, the memcpy
 * baseline, the profile section, the latency ping-pong and the table.
 *
 * Reports, per message size, RDMA WRITE and SEND bandwidth and message
 * rate next to memcpy bandwidth measured in the same run between the same
 * two guest buffers (the copy the back-end has to do), and the ratio; then
 * the half round-trip latency of a SEND ping-pong (median and p99).
 *
 * Targets (reported, never a failure): RDMA WRITE and SEND >= 80 % of
 * memcpy at >= 64 KiB, >= 2 M msg/s at 64 B with batching, median
 * half-RTT < 2 us when the back-end busy-polls. With --rounds N the table
 * runs N times and the bandwidth target is read from the median round of
 * each ratio (this host's memory bandwidth drifts from minute to minute).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "backend_proc.h"
#include "bench.h"

const char bench_config[] = "[tenant bench]\n"
			    "vni = 10\n"
			    "\n"
			    "[vm a]\n"
			    "tenant = bench\n"
			    "mac = 52:54:00:00:10:0a\n"
			    "ips = 10.1.0.1\n"
			    "\n"
			    "[vm b]\n"
			    "tenant = bench\n"
			    "mac = 52:54:00:00:10:0b\n"
			    "ips = 10.1.0.2\n";

/*
 * The profiling back-end (build/prof, -Dprofile=true) logs where each
 * requester QP's messages spent their cycles when the QP is destroyed
 * (backend/core/profile.h). After each stream the new lines are kept, named
 * by the stream, and printed after the table.
 */
#define MAX_PROFILE_LINES 64
static char *profile_lines[MAX_PROFILE_LINES];
static unsigned int nprofile;
static long profile_seen; /* bytes of the log read so far */

void collect_profile(const char *what, unsigned int size)
{
	char line[1024], *p;
	FILE *f = fopen(bp.log_path, "r");

	if (!f)
		return;
	if (fseek(f, profile_seen, SEEK_SET) == 0) {
		while (fgets(line, sizeof(line), f)) {
			p = strstr(line, "cycles per message:");
			if (!strstr(line, "profile: QP") || !p ||
			    nprofile == MAX_PROFILE_LINES)
				continue;
			line[strcspn(line, "\n")] = '\0';
			if (asprintf(&profile_lines[nprofile], "%6s %8u B:%s",
				     what, size,
				     p + strlen("cycles per message:")) > 0)
				nprofile++;
		}
		profile_seen = ftell(f);
	}
	fclose(f);
}

static void print_profile(void)
{
	unsigned int i;

	if (!nprofile)
		return;
	printf("\nback-end profile (PROFILE build): TSC cycles per message "
	       "by segment (backend/core/profile.h)\n");
	for (i = 0; i < nprofile; i++) {
		printf("  %s\n", profile_lines[i]);
		free(profile_lines[i]);
	}
	nprofile = 0;
}

/*
 * Native mode pins the client (the two simulated guests) and the back-end
 * to one CPU each, and measures the memcpy baseline on the back-end's CPU
 * while the back-end idles: the copy it is compared with then runs on the
 * same core, with the same caches, as the copy the back-end does. Left
 * to the scheduler, the two processes swap CPUs now and then, and the
 * vCPUs of a small VM need not share a last-level cache.
 */
static int pin_cpu[2] = {-1, -1}; /* client, back-end */

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("pinning to CPU %d: %s (pick others with --cpus C,B, or "
		    "--cpus none)",
		    cpu, strerror(errno));
}

/* Default: the first two CPUs we may run on; none if there is only one. */
static void pick_cpus(const struct opts *o)
{
	cpu_set_t set;
	int c, n = 0;

	if (o->no_pin)
		return;
	if (o->cpus_given) {
		pin_cpu[0] = o->cpu[0];
		pin_cpu[1] = o->cpu[1];
		return;
	}
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			pin_cpu[n++] = c;
	if (n < 2)
		pin_cpu[0] = pin_cpu[1] = -1;
}

/*
 * The memcpy baseline: the copy the back-end has to do, between the same
 * two guest buffers, same slots, same sizes, on the back-end's CPU. It
 * runs in slices between the stream's slices (see stream), and @t adds
 * them up.
 */
void memcpy_slice(unsigned int size, unsigned int nslots, double seconds,
		  struct tally *t)
{
	static uint64_t slot;
	uint8_t *src = sim_buf_ptr(&A.buf, 0), *dst = sim_buf_ptr(&B.buf, 0);
	uint64_t n = 0, tsc0;
	double t0, t1;

	pin_self(pin_cpu[1]);
	tsc0 = pvo_prof_cycles();
	t0 = now_s();
	do {
		unsigned int k;

		for (k = 0; k < 16; k++, slot++) {
			uint64_t off = (slot % nslots) * size;

			memcpy(dst + off, src + off, size);
		}
		n += 16;
		__asm__ volatile("" ::: "memory");
		t1 = now_s();
	} while (t1 - t0 < seconds);
	pin_self(pin_cpu[0]);
	t->msgs += n;
	t->secs += t1 - t0;
	t->tsc += pvo_prof_cycles() - tsc0;
}

/* The memcpy baseline in the same cycles, next to a size's streams. */
static void profile_baseline(unsigned int size, const struct tally *t)
{
	if (!nprofile || nprofile == MAX_PROFILE_LINES || !t->msgs)
		return;
	if (asprintf(&profile_lines[nprofile], "%6s %8u B: copy %llu", "memcpy",
		     size, (unsigned long long)(t->tsc / t->msgs)) > 0)
		nprofile++;
}

/* SEND ping-pong of @size bytes: a -> b, b -> a; half round trips. Each
 * side spins on its receive CQ, or sleeps for its event (side.events). */
void native_latency_samples(unsigned int size, unsigned int iters, double *half)
{
	struct sim_wr wa, wb;
	struct pvo_cqe c[4];
	unsigned int i, warm = iters / 10 + 10;

	connect_pair();
	recv_slot = 0;
	refill_recvs(&A, size, 4);
	refill_recvs(&B, size, 4);
	memset(&wa, 0, sizeof(wa));
	wa.opcode = PVO_WR_SEND;
	wa.num_sge = 1;
	wa.sge[0].addr = A.buf.va + 64 * KIB;
	wa.sge[0].length = size;
	wa.sge[0].lkey = A.mr.key;
	wb = wa;
	wb.sge[0].addr = B.buf.va + 64 * KIB;
	wb.sge[0].lkey = B.mr.key;
	for (i = 0; i < warm + iters; i++) {
		double t0 = now_s(), dl = t0 + timeout_ms / 1000.0;
		int n;

		/* every 32nd signaled keeps the send CQs drained */
		wa.flags = wb.flags = (i % 32 == 31) ? PVO_WQE_F_SIGNALED : 0;
		if (sim_post_send(&A.qp, &wa, 1))
			die("latency: a's SQ is full");
		n = cq_reap(&B, &B.rcq, c, 1, dl);
		if (!n)
			die("latency: b never received message %u", i);
		check_cqes(c, n, "ping");
		if (sim_post_send(&B.qp, &wb, 1))
			die("latency: b's SQ is full");
		n = cq_reap(&A, &A.rcq, c, 1, dl);
		if (!n)
			die("latency: a never received reply %u", i);
		check_cqes(c, n, "pong");
		if (i >= warm)
			half[i - warm] = (now_s() - t0) / 2 * 1e6;
		if (i % 64 == 63) {
			refill_recvs(&A, size, 4);
			refill_recvs(&B, size, 4);
		}
		while (sim_poll_cq(&A.scq, c, 4) > 0)
			check_cqes(c, 1, "ping send");
		while (sim_poll_cq(&B.scq, c, 4) > 0)
			check_cqes(c, 1, "pong send");
	}
	disconnect_pair();
}

void latency_stats(double *half, unsigned int n, double *median, double *p99)
{
	qsort(half, n, sizeof(*half), cmp_double);
	*median = half[n / 2];
	*p99 = half[(size_t)(n * 0.99)];
}

void native_latency(unsigned int size, unsigned int iters, double *median,
		    double *p99)
{
	double *half = calloc(iters, sizeof(*half));

	if (!half)
		die("out of memory");
	native_latency_samples(size, iters, half);
	latency_stats(half, iters, median, p99);
	free(half);
}

/*
 * One row of the native table: WRITE and SEND of @size, each for --repeat
 * x --seconds in slices that alternate with the memcpy baseline (all of
 * them add up). Their ratios to memcpy go to @wr and @sr; @rate64 keeps
 * the lowest 64 B WRITE rate seen.
 */
static void native_row(const struct opts *o, unsigned int size, double *wr,
		       double *sr, double *rate64)
{
	unsigned int depth = o->depth;
	struct tally base = {0};
	struct result w, s;
	double m;

	if (!size || size > BUF_LEN)
		die("size %u is outside 1..%llu", size, BUF_LEN);
	/* keep the bytes in flight within the buffer */
	while (depth > 1 && (uint64_t)depth * size > BUF_LEN / 2)
		depth /= 2;
	w = stream(PVO_WR_RDMA_WRITE, size, depth, o->batch,
		   o->seconds * o->repeat, &base);
	s = stream(PVO_WR_SEND, size, depth, o->batch, o->seconds * o->repeat,
		   &base);
	m = (double)base.msgs * size / base.secs / 1e6;
	profile_baseline(size, &base);
	printf("%8s | %10.0f %8.3f %7.2f | %10.0f %8.3f %7.2f | %10.0f "
	       "| %6.0f%% %6.0f%%\n",
	       human(size), w.mbps, w.mmsgs, w.be_ns / 1000, s.mbps, s.mmsgs,
	       s.be_ns / 1000, m, 100 * w.mbps / m, 100 * s.mbps / m);
	*wr = w.mbps / m;
	*sr = s.mbps / m;
	if (size == 64 && (*rate64 < 0 || w.mmsgs < *rate64))
		*rate64 = w.mmsgs;
}

int native_main(struct opts *o)
{
	const char *vms[] = {"a", "b", NULL};
	/* WRITE/memcpy and SEND/memcpy of every round and size */
	static double ratio[2][MAX_SIZES][MAX_ROUNDS];
	double med, p99, med64 = 0, rate64 = -1;
	double big[2] = {1e9, 1e9}; /* lowest (median) ratio at >= 64 KiB */
	char err[512];
	unsigned int i, k, r;

	pick_cpus(o);
	pin_self(pin_cpu[1]); /* the back-end inherits it */
	if (backend_start_config(&bp, bench_config, vms, o->backend_args, 10000,
				 err, sizeof(err)))
		die("%s", err);
	pin_self(pin_cpu[0]);
	side_open(&A);
	side_open(&B);

	printf("pvo-bench: back-end %s%s%s\n", bp.binary,
	       o->nargs ? " with" : "", o->nargs ? "" : " (default options)");
	for (i = 0; i < o->nargs; i++)
		printf("  %s", o->backend_args[i]);
	if (o->nargs)
		printf("\n");
	if (pin_cpu[0] >= 0)
		printf("client on CPU %d, back-end on CPU %d; memcpy runs on "
		       "the back-end's CPU\n",
		       pin_cpu[0], pin_cpu[1]);
	else
		printf("not pinned: memcpy runs wherever the scheduler puts "
		       "it\n");
	if (!o->repeat)
		o->repeat = 1;
	printf("two simulated VMs, one RC QP pair; WRITE and SEND run %.2f s "
	       "each per size in slices of %.2f s, each followed by as long "
	       "a memcpy; up to %u in flight, %u WQEs per doorbell; \"be "
	       "us/msg\" is the back-end's CPU time per message\n\n",
	       o->repeat * o->seconds, SLICE_S, o->depth, o->batch);
	printf("%8s | %10s %8s %7s | %10s %8s %7s | %10s | %7s %7s\n", "size",
	       "WRITE MB/s", "Mmsg/s", "be us", "SEND MB/s", "Mmsg/s", "be us",
	       "memcpy MB/s", "WRITE/", "SEND/");
	printf("%8s | %10s %8s %7s | %10s %8s %7s | %10s | %7s %7s\n", "", "",
	       "", "/msg", "", "", "/msg", "", "memcpy", "memcpy");
	printf("---------+-----------------------------+--------------------"
	       "---------+-------------+----------------\n");
	for (r = 0; r < o->rounds; r++) {
		for (i = 0; i < o->nsizes; i++) {
			native_row(o, o->sizes[i], &ratio[0][i][r],
				   &ratio[1][i][r], &rate64);
			if (o->rounds > 1 && i == o->nsizes - 1 &&
			    r < o->rounds - 1)
				printf("---------+ round %u of %u done\n",
				       r + 1, o->rounds);
		}
	}
	if (o->rounds > 1)
		printf("\nratios over %u rounds at >= 64 KiB: median (lowest "
		       "- highest)\n",
		       o->rounds);
	for (i = 0; i < o->nsizes; i++) {
		if (o->sizes[i] < 65536)
			continue;
		for (k = 0; k < 2; k++) {
			double *v = ratio[k][i];

			qsort(v, o->rounds, sizeof(*v), cmp_double);
			/* the lower median of an even count */
			med = v[(o->rounds - 1) / 2];
			if (med < big[k])
				big[k] = med;
			if (o->rounds > 1)
				printf("  %8s %5s/memcpy: %4.0f%% (%.0f%% - "
				       "%.0f%%)\n",
				       human(o->sizes[i]), k ? "SEND" : "WRITE",
				       100 * med, 100 * v[0],
				       100 * v[o->rounds - 1]);
		}
	}

	print_profile();
	printf("\nSEND ping-pong, half round trip (%u iterations after "
	       "warm-up):\n",
	       o->lat_iters);
	for (i = 0; i < 3; i++) {
		static const unsigned int lsz[] = {8, 64, 4096};

		native_latency(lsz[i], o->lat_iters, &med, &p99);
		printf("  %6s: median %7.2f us   p99 %7.2f us\n", human(lsz[i]),
		       med, p99);
		if (lsz[i] == 64)
			med64 = med;
	}

	printf("\ntargets (reported, not gates):\n");
	for (k = 0; k < 2; k++)
		if (big[k] < 1e8)
			printf("  %s >= 80%% of memcpy at >= 64 KiB: %s "
			       "(lowest %s%.0f%%)\n",
			       k ? "SEND" : "RDMA WRITE",
			       big[k] >= 0.8 ? "met" : "NOT met",
			       o->rounds > 1 ? "median of the rounds " : "",
			       100 * big[k]);
	if (rate64 >= 0)
		printf("  >= 2 M msg/s at 64 B with batching: %s (%.2f M "
		       "msg/s RDMA WRITE, %u per doorbell)\n",
		       rate64 >= 2 ? "met" : "NOT met", rate64, o->batch);
	printf("  median half-RTT < 2 us in busy-poll mode: %s (%.2f us at "
	       "64 B%s)\n",
	       med64 < 2 ? "met" : "NOT met", med64,
	       o->nargs ? "" : "; back-end run without extra options");
	backend_stop(&bp, 5000);
	backend_cleanup(&bp, false);
	return 0;
}
