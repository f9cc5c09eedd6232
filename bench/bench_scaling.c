// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-bench --scaling: what the back-end's data-path threads buy. Two
 * back-ends run side by side, one with --threads 1, one with --threads 2,
 * each with two VM pairs (a1 -> b1 in tenant p1, a2 -> b2 in tenant p2;
 * on the two-thread back-end p1 is pinned to thread 1 and p2 to thread 2
 * with thread = K). Each cell streams RDMA WRITEs of one size from 1 or
 * both pairs at once, each pair from a client thread of its own, and
 * reports the aggregate rate; the two back-ends take turns, cell by cell
 * and round by round (t1 t2, then t2 t1), so the host's drift does not
 * favour one, and each figure is the median of the rounds.
 *
 * Targets (reported, not gates): 2 pairs on 2 threads >= 1.5x 2 pairs on
 * 1 thread; one pair loses nothing on a 2-thread back-end (>= 0.95x).
 *
 * The clients sleep on completion events (side.events, cq_reap): on two
 * cores, two spinning clients would take the cores the back-end's threads
 * need, and the table would show the CPU scheduler. A client signals one
 * WQE per depth / SCALE_SIG_DIV, so it wakes once per that many messages,
 * as a guest with interrupt moderation would. The back-ends' thread K
 * runs on the K-th CPU we may use (pin_backend_threads).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define SCALE_PAIRS 2
#define SCALE_THREADS 2 /* back-ends: --threads 1 and --threads 2 */
#define SCALE_SIG_DIV 4 /* signaled WQEs in flight */
#define SCALE_MAX_SIZES 4
/* Without --depth / --batch: a client that sleeps between completions
 * needs a deeper queue than the native table's spinning one to keep the
 * back-end busy at 64 B (it wakes once per SCALE_DEPTH / SCALE_SIG_DIV
 * messages). */
#define SCALE_DEPTH 512
#define SCALE_BATCH 32

struct pair {
	struct side a, b;
};

/* One back-end and its pairs; host[t] runs with --threads t + 1. */
struct host {
	struct backend_proc *be;
	struct pair p[SCALE_PAIRS];
};

static struct host hosts[SCALE_THREADS];

/* One client's share of a cell. */
struct job {
	struct pair *p;
	unsigned int size, depth, batch, sig;
	double seconds;
	pthread_barrier_t *go;
	double mbps, mmsgs;
};

static char *scaling_config(unsigned int threads)
{
	char *c;

	if (asprintf(&c,
		     "[tenant p1]\n"
		     "vni = 21\n"
		     "thread = 1\n"
		     "\n"
		     "[tenant p2]\n"
		     "vni = 22\n"
		     "thread = %u\n"
		     "\n"
		     "[vm a1]\ntenant = p1\nmac = 52:54:00:00:21:01\n"
		     "ips = 10.2.1.1\n\n"
		     "[vm b1]\ntenant = p1\nmac = 52:54:00:00:21:02\n"
		     "ips = 10.2.1.2\n\n"
		     "[vm a2]\ntenant = p2\nmac = 52:54:00:00:22:01\n"
		     "ips = 10.2.2.1\n\n"
		     "[vm b2]\ntenant = p2\nmac = 52:54:00:00:22:02\n"
		     "ips = 10.2.2.2\n",
		     threads > 1 ? 2 : 1) < 0)
		die("out of memory");
	return c;
}

static void host_open(struct host *h, struct backend_proc *be,
		      const struct opts *o, unsigned int threads)
{
	static const char *const names[SCALE_PAIRS][2] = {{"a1", "b1"},
							  {"a2", "b2"}};
	static const char *const vms[] = {"a1", "b1", "a2", "b2", NULL};
	char *config = scaling_config(threads);
	unsigned int i;

	h->be = be;
	backend_start_threads(be, config, vms, o, threads);
	free(config);
	for (i = 0; i < SCALE_PAIRS; i++) {
		struct pair *p = &h->p[i];

		p->a = (struct side){
		    .name = names[i][0], .be = be, .events = true};
		p->b = (struct side){
		    .name = names[i][1], .be = be, .events = true};
		side_open(&p->a);
		side_open(&p->b);
		connect_sides(&p->a, &p->b);
	}
}

static void host_close(struct host *h)
{
	unsigned int i;

	for (i = 0; i < SCALE_PAIRS; i++) {
		side_close(&h->p[i].a);
		side_close(&h->p[i].b);
	}
	if (!backend_running(h->be))
		die("a back-end %s", backend_describe(h->be));
	backend_stop(h->be, 5000);
	backend_cleanup(h->be, false);
}

/* A stream of WRITEs a -> b for j->seconds; its rate into @j. */
static void *pair_stream(void *arg)
{
	static __thread struct sim_wr wrs[MAX_BATCH];
	struct job *j = arg;
	struct side *a = &j->p->a, *b = &j->p->b;
	unsigned int nslots = BUF_LEN / j->size, i;
	uint64_t posted = 0, done = 0, slot = 0;
	struct pvo_cqe c[64];
	double t0, stop_at;
	int n;

	if (nslots > j->depth)
		nslots = j->depth;
	for (i = 0; i < j->batch; i++) {
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].opcode = PVO_WR_RDMA_WRITE;
		wrs[i].num_sge = 1;
		wrs[i].sge[0].length = j->size;
		wrs[i].sge[0].lkey = a->mr.key;
		wrs[i].rkey = b->mr.key;
	}
	pthread_barrier_wait(j->go);
	t0 = now_s();
	stop_at = t0 + j->seconds;
	for (;;) {
		bool stopping = now_s() >= stop_at;

		/* stopping, post up to a signaled WQE */
		while ((!stopping || posted % j->sig) &&
		       posted - done + j->batch <= j->depth) {
			for (i = 0; i < j->batch; i++, slot++) {
				uint64_t off = (slot % nslots) * j->size;

				wrs[i].wr_id = posted + i;
				wrs[i].sge[0].addr = a->buf.va + off;
				wrs[i].remote_addr = b->mr.iova + off;
			}
			/* one signaled WQE per j->sig */
			wrs[j->batch - 1].flags = (posted + j->batch) % j->sig
						      ? 0
						      : PVO_WQE_F_SIGNALED;
			if (sim_post_send(&a->qp, wrs, j->batch))
				die("%s: SQ full", a->name);
			posted += j->batch;
		}
		if (stopping && done == posted)
			break;
		n = cq_reap(a, &a->scq, c, 64, now_s() + timeout_ms / 1000.0);
		if (!n)
			die("%s: %llu of %llu WRITEs of %u B never completed",
			    a->name, (unsigned long long)(posted - done),
			    (unsigned long long)posted, j->size);
		check_cqes(c, n, "WRITE");
		done += (uint64_t)n * j->sig;
	}
	t0 = now_s() - t0;
	j->mbps = (double)done * j->size / t0 / 1e6;
	j->mmsgs = (double)done / t0 / 1e6;
	return NULL;
}

/* @pairs pairs of @h stream WRITEs of @size at once: aggregate rates. */
static void cell(struct host *h, const struct opts *o, unsigned int size,
		 unsigned int pairs, double *mbps, double *mmsgs)
{
	struct job jobs[SCALE_PAIRS];
	pthread_t t[SCALE_PAIRS];
	pthread_barrier_t go;
	unsigned int depth = o->depth_given ? o->depth : SCALE_DEPTH;
	unsigned int batch = o->batch_given ? o->batch : SCALE_BATCH, i;

	/* 8 MiB in flight per pair at most, as the native table's 64 KiB
	 * row: two pairs' working sets on one thread still fit the cache
	 * about as well as one pair's */
	while (depth > 1 && (uint64_t)depth * size > BUF_LEN / 4)
		depth /= 2;
	if (batch > depth / SCALE_SIG_DIV)
		batch = depth / SCALE_SIG_DIV ? depth / SCALE_SIG_DIV : 1;
	pthread_barrier_init(&go, NULL, pairs);
	*mbps = *mmsgs = 0;
	for (i = 0; i < pairs; i++) {
		jobs[i] = (struct job){
		    .p = &h->p[i],
		    .size = size,
		    .depth = depth,
		    .batch = batch,
		    /* a multiple of the batch: the batch's last WQE */
		    .sig = (depth / SCALE_SIG_DIV / batch) * batch,
		    .seconds = o->seconds,
		    .go = &go,
		};
		if (!jobs[i].sig)
			jobs[i].sig = batch;
		if (pthread_create(&t[i], NULL, pair_stream, &jobs[i]))
			die("pthread_create");
	}
	for (i = 0; i < pairs; i++) {
		pthread_join(t[i], NULL);
		*mbps += jobs[i].mbps;
		*mmsgs += jobs[i].mmsgs;
	}
	pthread_barrier_destroy(&go);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(n - 1) / 2]; /* the lower one of an even count */
}

static void print_one(unsigned int k, const char *comm, pid_t tid,
		      unsigned long long ms)
{
	if (k)
		printf("  thread %u: %llu ms", k, ms);
	else if (ms >= 10) /* glib's helpers: hardly ever */
		printf("  %s: %llu ms", comm, ms);
}

/* The CPU time each back-end thread used so far: which did the work. */
static void print_thread_cpu(struct host *h, unsigned int threads)
{
	printf("  --threads %u:", threads);
	backend_threads(h->be, print_one);
	printf("\n");
}

static void verdict(const char *what, double target, const double *ratio,
		    const unsigned int *sizes, unsigned int nsizes)
{
	unsigned int i;

	printf("  %s:", what);
	for (i = 0; i < nsizes; i++)
		printf("%s %s %s (%.2fx)", i ? "," : "", human(sizes[i]),
		       ratio[i] >= target ? "met" : "NOT met", ratio[i]);
	printf("\n");
}

int scaling_main(struct opts *o)
{
	static const unsigned int def_sizes[] = {65536, 64};
	/* [size][pairs - 1][threads - 1][round] */
	static double mb[SCALE_MAX_SIZES][SCALE_PAIRS][SCALE_THREADS]
			[MAX_ROUNDS],
	    mm[SCALE_MAX_SIZES][SCALE_PAIRS][SCALE_THREADS][MAX_ROUNDS],
	    ratio[SCALE_MAX_SIZES][SCALE_PAIRS][MAX_ROUNDS];
	double gain[SCALE_PAIRS][SCALE_MAX_SIZES];
	const unsigned int *sizes = def_sizes;
	unsigned int nsizes = 2, rounds = o->rounds > 1 ? o->rounds : 7;
	unsigned int r, s, p, k, t;

	if (o->sizes_given) {
		sizes = o->sizes;
		nsizes =
		    o->nsizes < SCALE_MAX_SIZES ? o->nsizes : SCALE_MAX_SIZES;
	}
	host_open(&hosts[0], &bp, o, 1);
	host_open(&hosts[1], &bp2, o, 2);
	if (!o->no_pin) {
		pin_backend_threads(hosts[0].be);
		pin_backend_threads(hosts[1].be);
	}
	printf("pvo-bench --scaling: RDMA WRITE a -> b in 1 and 2 VM pairs, "
	       "each pair its own tenant and client thread, on a back-end "
	       "with --threads 1 and one with --threads 2 (pair k's tenant "
	       "pinned to thread k with thread = K); up to %u in flight per "
	       "pair, %u per doorbell; clients sleep on completion events. "
	       "%.2f s per cell, the back-ends alternating; median of %u "
	       "rounds. %s\n\n",
	       o->depth_given ? o->depth : SCALE_DEPTH,
	       o->batch_given ? o->batch : SCALE_BATCH, o->seconds, rounds,
	       o->no_pin ? "Nothing pinned"
			 : "Back-end thread K pinned to the K-th CPU we may "
			   "use, clients not pinned");
	for (r = 0; r < rounds; r++)
		for (s = 0, k = 0; s < nsizes; s++)
			for (p = 0; p < SCALE_PAIRS; p++, k++)
				/* t1 t2, then t2 t1 in the next cell */
				for (t = 0; t < SCALE_THREADS; t++) {
					unsigned int h = (t + r + k) % 2;

					cell(&hosts[h], o, sizes[s], p + 1,
					     &mb[s][p][h][r], &mm[s][p][h][r]);
				}
	for (s = 0; s < nsizes; s++)
		for (p = 0; p < SCALE_PAIRS; p++)
			for (r = 0; r < rounds; r++)
				ratio[s][p][r] =
				    mb[s][p][1][r] / mb[s][p][0][r];

	printf("%8s %5s | %10s %8s | %10s %8s | %8s\n", "size", "pairs",
	       "threads=1", "", "threads=2", "", "@2/@1");
	printf("%8s %5s | %10s %8s | %10s %8s | %8s\n", "", "", "MB/s",
	       "Mmsg/s", "MB/s", "Mmsg/s", "");
	printf("---------------+---------------------+---------------------"
	       "+---------\n");
	for (s = 0; s < nsizes; s++)
		for (p = 0; p < SCALE_PAIRS; p++) {
			double m[SCALE_THREADS][2];

			for (t = 0; t < SCALE_THREADS; t++) {
				m[t][0] = median(mb[s][p][t], rounds);
				m[t][1] = median(mm[s][p][t], rounds);
			}
			gain[p][s] = median(ratio[s][p], rounds);
			printf("%8s %5u | %10.0f %8.3f | %10.0f %8.3f | "
			       "%7.2fx\n",
			       human(sizes[s]), p + 1, m[0][0], m[0][1],
			       m[1][0], m[1][1], gain[p][s]);
		}
	printf("(@2/@1: the median of the rounds' ratios)\n\n");
	printf("CPU time of the back-ends' threads over the whole run:\n");
	print_thread_cpu(&hosts[0], 1);
	print_thread_cpu(&hosts[1], 2);
	printf("\ntargets (reported, not gates):\n");
	verdict("2 pairs, 2 threads >= 1.5x 2 pairs, 1 thread", 1.5, gain[1],
		sizes, nsizes);
	verdict("1 pair, 2 threads: no loss against 1 thread (>= 0.95x)", 0.95,
		gain[0], sizes, nsizes);
	host_close(&hosts[0]);
	host_close(&hosts[1]);
	return 0;
}
