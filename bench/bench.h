/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pvo-bench's shared declarations: sizes and limits, the options, the two
 * simulated VMs (bench_vm.c), the state and helpers of bench.c, and the
 * entry points of the native (bench_native.c), overlay (bench_overlay.c),
 * fairness (bench_fairness.c) and scaling (bench_scaling.c) benchmarks.
 */
#ifndef PVO_BENCH_H
#define PVO_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backend_proc.h"
#include "sim_verbs.h"
#include "sim_vm.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define BUF_LEN (32 * MIB)
#define RAM_LEN (128 * MIB)
#define SQ_ENTRIES 1024
#define RQ_ENTRIES 1024
#define MAX_BATCH 64
#define MAX_SIZES 32
#define MAX_ROUNDS 32

struct side {
	const char *name;
	struct backend_proc *be; /* its back-end; NULL: bp (bp2 for b) */
	bool events; /* CQs with events: the client sleeps for completions */
	struct sim_vm *vm;
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq scq, rcq;
	struct sim_buf buf;
	struct sim_mr mr;
	struct sim_qp qp;
};

struct opts {
	bool overlay;
	bool fairness; /* --fairness: attacks next to a ping-pong */
	bool scaling;  /* --scaling: 1 and 2 VM pairs on 1 and 2 threads */
	const char *netns[2]; /* --netns A,B: the two hosts (veth) */
	const char *vtep[2];  /* --vteps IP,IP */
	double seconds;
	unsigned int sizes[MAX_SIZES];
	unsigned int nsizes;
	bool sizes_given; /* --sizes: else --overlay has its own list */
	unsigned int depth;
	unsigned int batch;
	bool depth_given, batch_given; /* else --scaling has its own */
	unsigned int lat_iters;
	unsigned int
	    repeat; /* native: runs seconds x repeat; overlay: best of */
	unsigned int rounds; /* native: the whole table this many times */
	const char *backend_args[16];
	unsigned int nargs;
	int cpu[2]; /* --cpus C,B: the client's and the back-end's CPU */
	bool cpus_given;
	bool no_pin; /* --cpus none */
};

struct result {
	double mbps;  /* MB/s (10^6 bytes) */
	double mmsgs; /* million messages/s */
	double be_ns; /* back-end CPU time per message, ns */
	bool ok;
};

/* The memcpy baseline's sum of slices (bench_native.c, memcpy_slice). */
struct tally {
	uint64_t msgs;
	double secs;
	uint64_t tsc; /* cycles, for the profile section */
};

/*
 * The host's memory bandwidth drifts by a factor of two from one second
 * to the next here. With a baseline the stream alternates with it in
 * slices this long, so both see the same spells; the pipeline drains at
 * the end of each slice (a cost of about 1 % at 1 MiB, counted against
 * the stream).
 */
#define SLICE_S 0.1

/* bench.c: state shared by both modes */
extern struct backend_proc bp, bp2; /* bp2: host 2 with --overlay */
extern struct side A, B;
extern bool overlay;
/* --overlay: the client sleeps this long when it has nothing to do */
extern unsigned int idle_sleep_us;
extern int timeout_ms;

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t backend_cpu_ns(void);
/* @fn for every thread of @be: its data-path thread number K (0: not
 * one), name, TID and CPU time so far (ms). */
void backend_threads(struct backend_proc *be,
		     void (*fn)(unsigned int k, const char *comm, pid_t tid,
				unsigned long long ms));
/* Thread K of @be on the K-th CPU we may use (of the first two). */
void pin_backend_threads(struct backend_proc *be);
void backend_start_threads(struct backend_proc *be, const char *config,
			   const char *const *vms, const struct opts *o,
			   unsigned int threads);
void __attribute__((noreturn)) die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
int cmp_double(const void *a, const void *b);
const char *human(unsigned int size);

/* bench_vm.c: the two simulated VMs, their QP pair, the stream */
extern unsigned int recv_slot;
void side_open(struct side *s);
void side_close(struct side *s);
void connect_sides(struct side *x, struct side *y);
void connect_pair(void);
void disconnect_pair(void);
void refill_recvs(struct side *s, unsigned int size, unsigned int nslots);
void check_cqes(const struct pvo_cqe *c, int n, const char *what);
/* Up to @max CQEs of @cq (a CQ of @s): spins, or with s->events arms the
 * CQ and sleeps on the VM's event queue. 0 once @deadline (now_s) passed. */
int cq_reap(struct side *s, struct sim_cq *cq, struct pvo_cqe *c, int max,
	    double deadline);
struct result stream(uint8_t opcode, unsigned int size, unsigned int depth,
		     unsigned int batch, double seconds, struct tally *base);

/* bench_native.c; bench_config: the tenant and VMs a and b */
extern const char bench_config[];
void collect_profile(const char *what, unsigned int size);
void memcpy_slice(unsigned int size, unsigned int nslots, double seconds,
		  struct tally *t);
int native_main(struct opts *o);
/* The half round trip of a SEND ping-pong between a and b, in us. */
void native_latency(unsigned int size, unsigned int iters, double *median,
		    double *p99);
/* The same, each of @iters half round trips into @half (after warm-up). */
void native_latency_samples(unsigned int size, unsigned int iters,
			    double *half);
/* Sorts @half and gives its median and 99th percentile. */
void latency_stats(double *half, unsigned int n, double *median, double *p99);
/* bench_fairness.c */
int fairness_main(struct opts *o);
/* bench_scaling.c */
int scaling_main(struct opts *o);

/* bench_overlay.c */
int overlay_main(struct opts *o);

#endif
