// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-bench --fairness: one VM floods the back-end, another measures its
 * latency. VMs a and b are the native table's latency pair; VM n has
 * FLOOD_QPS RC QP pairs connected to each other and keeps FLOOD_DEPTH
 * RDMA WRITEs of FLOOD_SIZE in flight on each, from a thread of its own,
 * as fast as the back-end takes them. The SEND ping-pong between a and b
 * (64 B, half round trip) runs idle, then under the flood.
 *
 * Target (reported, not a gate): under the flood a's median half-RTT stays
 * within 2x of its idle value (the back-end's per-VM budgets), and n
 * still gets most of the memcpy bandwidth it would get alone.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define FLOOD_QPS 4
#define FLOOD_DEPTH 8
#define FLOOD_SIZE (1u << 20)

/* a and b as in the native table, and the flooding VM */
static const char vm_n[] = "\n[vm n]\n"
			   "tenant = bench\n"
			   "mac = 52:54:00:00:10:0e\n"
			   "ips = 10.1.0.14\n";

static struct side N = {.name = "n"};
static struct sim_qp src[FLOOD_QPS], dst[FLOOD_QPS];
static atomic_bool stop_flood;
static atomic_ullong flooded; /* bytes written */

static void flood_open(void)
{
	struct sim_qp_init in = {
	    .type = PVO_QPT_RC,
	    .sq_entries = 64,
	    .rq_entries = 16,
	    .max_send_sge = 1,
	    .max_recv_sge = 1,
	    .layout = SIM_LAYOUT_CONTIG,
	};
	struct sim_conn conn = {0};
	struct sim_peer ps, pd;
	unsigned int i;

	side_open(&N);
	in.send_cq = &N.scq;
	in.recv_cq = &N.rcq;
	for (i = 0; i < FLOOD_QPS; i++) {
		if (sim_create_qp(&N.pd, &in, &src[i]) ||
		    sim_create_qp(&N.pd, &in, &dst[i]))
			die("n: %s", N.vm->err);
		sim_qp_peer(&src[i], 0, &ps);
		sim_qp_peer(&dst[i], 0, &pd);
		if (sim_qp_connect(&src[i], &conn, &pd) ||
		    sim_qp_connect(&dst[i], &conn, &ps))
			die("n: connect: %s", N.vm->err);
	}
}

/* The flooding VM: WRITEs from the first half of its buffer into the
 * second, FLOOD_DEPTH in flight per QP, until stop_flood. */
static void *flood(void *arg)
{
	unsigned int inflight[FLOOD_QPS] = {0}, i;
	struct pvo_cqe c[64];
	struct sim_wr w;
	int n, k;

	(void)arg;
	memset(&w, 0, sizeof(w));
	w.opcode = PVO_WR_RDMA_WRITE;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 1;
	w.sge[0].length = FLOOD_SIZE;
	w.sge[0].lkey = N.mr.key;
	w.rkey = N.mr.key;
	while (!atomic_load(&stop_flood)) {
		for (i = 0; i < FLOOD_QPS; i++)
			while (inflight[i] < FLOOD_DEPTH) {
				w.wr_id = i;
				w.sge[0].addr =
				    N.buf.va + (uint64_t)i * 2 * MIB;
				w.remote_addr = N.buf.va + BUF_LEN / 2 +
						(uint64_t)i * 2 * MIB;
				if (sim_post_send(&src[i], &w, 1))
					die("n: SQ full");
				inflight[i]++;
			}
		n = sim_poll_cq(&N.scq, c, 64);
		for (k = 0; k < n; k++) {
			check_cqes(&c[k], 1, "flood WRITE");
			if (c[k].wr_id < FLOOD_QPS)
				inflight[c[k].wr_id]--;
			atomic_fetch_add(&flooded, FLOOD_SIZE);
		}
	}
	/* drain what is in flight */
	for (i = 0; i < FLOOD_QPS; i++)
		while (inflight[i]) {
			double dl = now_s() + timeout_ms / 1000.0;

			while ((n = sim_poll_cq(&N.scq, c, 64)) == 0)
				if (now_s() > dl)
					die("n: WRITEs never completed");
			for (k = 0; k < n; k++)
				if (c[k].wr_id < FLOOD_QPS)
					inflight[c[k].wr_id]--;
		}
	return NULL;
}

/* n's WRITE bandwidth alone for @seconds, MB/s. */
static double flood_alone(double seconds)
{
	pthread_t t;
	unsigned long long b0;
	double t0;

	atomic_store(&stop_flood, false);
	if (pthread_create(&t, NULL, flood, NULL))
		die("pthread_create");
	b0 = atomic_load(&flooded);
	t0 = now_s();
	while (now_s() - t0 < seconds)
		;
	atomic_store(&stop_flood, true);
	pthread_join(t, NULL);
	return (atomic_load(&flooded) - b0) / (now_s() - t0) / 1e6;
}

int fairness_main(struct opts *o)
{
	const char *vms[] = {"a", "b", "n", NULL};
	double idle_med, idle_p99, med, p99, alone, shared, t0;
	unsigned long long b0;
	pthread_t t;
	char err[512];
	char *config = malloc(strlen(bench_config) + sizeof(vm_n));

	if (!config)
		die("out of memory");
	strcpy(config, bench_config);
	strcat(config, vm_n);
	if (backend_start_config(&bp, config, vms, o->backend_args, 10000, err,
				 sizeof(err)))
		die("%s", err);
	free(config);
	side_open(&A);
	side_open(&B);
	flood_open();
	printf("pvo-bench --fairness: VM n floods with %u QPs x %u RDMA "
	       "WRITEs of %s in flight; VM a pings VM b (SEND, 64 B, %u "
	       "iterations)\n\n",
	       FLOOD_QPS, FLOOD_DEPTH, human(FLOOD_SIZE), o->lat_iters);
	native_latency(64, o->lat_iters, &idle_med, &idle_p99);
	printf("  a <-> b idle:          median %8.2f us   p99 %8.2f us\n",
	       idle_med, idle_p99);
	alone = flood_alone(o->seconds * 4);
	printf("  n alone:               %8.0f MB/s\n", alone);

	atomic_store(&stop_flood, false);
	if (pthread_create(&t, NULL, flood, NULL))
		die("pthread_create");
	b0 = atomic_load(&flooded);
	t0 = now_s();
	native_latency(64, o->lat_iters, &med, &p99);
	shared = (atomic_load(&flooded) - b0) / (now_s() - t0) / 1e6;
	atomic_store(&stop_flood, true);
	pthread_join(t, NULL);
	printf("  a <-> b under n's flood: median %8.2f us   p99 %8.2f us\n",
	       med, p99);
	printf("  n meanwhile:           %8.0f MB/s (%.0f%% of alone)\n",
	       shared, 100 * shared / alone);
	printf("\ntarget (reported, not a gate):\n"
	       "  median half-RTT under a flood <= 2x idle: %s (%.1fx; p99 "
	       "%.1fx)\n",
	       med <= 2 * idle_med ? "met" : "NOT met", med / idle_med,
	       p99 / idle_p99);
	backend_stop(&bp, 5000);
	backend_cleanup(&bp, false);
	return 0;
}
