// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-bench: native data-path benchmark of pvrdma-overlayd. Two simulated
 * VMs (tests/harness's sim_vm / sim_verbs, no QEMU, no guest) on one
 * back-end in one tenant; one RC QP pair between them.
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
 *
 * Usage: pvo-bench [--seconds S] [--sizes 64,4096,...] [--repeat N] [--depth N]
 *		    [--batch N] [--lat-iters N] [--rounds N] [--cpus C,B|none]
 *		    [--backend-arg ARG]...
 * PVO_BACKEND picks the back-end binary (default: the plain -O2 build).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "backend_proc.h"
#include "pvo_cmd.h"
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

static const char config[] = "[tenant bench]\n"
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

struct side {
	const char *name;
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
	const char *netns[2]; /* --netns A,B: the two hosts (veth) */
	const char *vtep[2];  /* --vteps IP,IP */
	double seconds;
	unsigned int sizes[MAX_SIZES];
	unsigned int nsizes;
	bool sizes_given; /* --sizes: else --overlay has its own list */
	unsigned int depth;
	unsigned int batch;
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

static struct backend_proc bp, bp2; /* bp2: host 2 with --overlay */
static struct side A = {.name = "a"}, B = {.name = "b"};
static bool overlay;
/* --overlay: the client sleeps this long when it has nothing to do */
static unsigned int idle_sleep_us;
static unsigned int vxlan_port;
static int timeout_ms = 10000;

/* CPU time the back-end has used so far (ns), from /proc schedstat. */
static uint64_t proc_cpu_ns(pid_t pid)
{
	unsigned long long run = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &run) != 1)
		run = 0;
	fclose(f);
	return run;
}

/*
 * A back-end built with `make -C backend PROFILE=1` logs where each
 * requester QP's messages spent their cycles when the QP is destroyed
 * (backend/profile.h). After each stream the new lines are kept, named
 * by the stream, and printed after the table.
 */
#define MAX_PROFILE_LINES 64
static char *profile_lines[MAX_PROFILE_LINES];
static unsigned int nprofile;
static long profile_seen; /* bytes of the log read so far */

static void collect_profile(const char *what, unsigned int size)
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
	       "by segment (backend/profile.h)\n");
	for (i = 0; i < nprofile; i++) {
		printf("  %s\n", profile_lines[i]);
		free(profile_lines[i]);
	}
	nprofile = 0;
}

/* CPU time of the back-end(s) so far: both hosts' with --overlay. */
static uint64_t backend_cpu_ns(void)
{
	return proc_cpu_ns(bp.pid) + (overlay ? proc_cpu_ns(bp2.pid) : 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void __attribute__((noreturn)) die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pvo-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (bp.pid > 0) {
		fprintf(stderr, "pvo-bench: back-end log: %s\n", bp.log_path);
		backend_stop(&bp, 2000);
		backend_cleanup(&bp, true);
	}
	exit(1);
}

static void side_open(struct side *s)
{
	struct sim_vm_opts o = {
	    .name = s->name,
	    .socket_path = backend_vm_socket(
		overlay && s == &B ? &bp2 : &bp, s->name),
	    .ram_size = RAM_LEN,
	    .ram_regions = 1,
	};
	char err[512];
	int st;

	s->vm = sim_vm_open(&o, err, sizeof(err));
	if (!s->vm)
		die("%s", err);
	st = sim_ctx_open(s->vm, &s->ctx);
	if (!st)
		st = sim_alloc_pd(&s->ctx, &s->pd);
	/* the bench polls and never waits for an event: its CQs are what
	 * the provider makes of a CQ without a completion channel */
	if (!st)
		st = sim_create_cq_flags(&s->ctx, 4096, PVO_CQ_F_NO_EVENTS,
					 &s->scq);
	if (!st)
		st = sim_create_cq_flags(&s->ctx, 4096, PVO_CQ_F_NO_EVENTS,
					 &s->rcq);
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

static void connect_pair(void)
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

	in.send_cq = &A.scq;
	in.recv_cq = &A.rcq;
	st = sim_create_qp(&A.pd, &in, &A.qp);
	if (st)
		die("%s", A.vm->err);
	in.send_cq = &B.scq;
	in.recv_cq = &B.rcq;
	st = sim_create_qp(&B.pd, &in, &B.qp);
	if (st)
		die("%s", B.vm->err);
	/* the overlay carries IPv4 GIDs (index 1: the VM's first IP) */
	conn.sgid_index = overlay ? 1 : 0;
	sim_qp_peer(&A.qp, conn.sgid_index, &pa);
	sim_qp_peer(&B.qp, conn.sgid_index, &pb);
	st = sim_qp_connect(&A.qp, &conn, &pb);
	if (!st)
		st = sim_qp_connect(&B.qp, &conn, &pa);
	if (st)
		die("connect: %s / %s", A.vm->err, B.vm->err);
}

/* Each measurement starts on a fresh pair: no receives of another size
 * left in the RQ, no completions left in the CQs. */
static void disconnect_pair(void)
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
static unsigned int recv_slot;

static void refill_recvs(struct side *s, unsigned int size, unsigned int nslots)
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

static void check_cqes(const struct pvo_cqe *c, int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (c[i].status != PVO_WC_SUCCESS)
			die("%s: completion with status %s (wr_id %llu)", what,
			    sim_wc_status_name(c[i].status),
			    (unsigned long long)le64toh(c[i].wr_id));
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
struct tally {
	uint64_t msgs;
	double secs;
	uint64_t tsc; /* cycles, for the profile section */
};

static void memcpy_slice(unsigned int size, unsigned int nslots, double seconds,
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

/*
 * The host's memory bandwidth drifts by a factor of two from one second
 * to the next here. With a baseline the stream alternates with it in
 * slices this long, so both see the same spells; the pipeline drains at
 * the end of each slice (a cost of about 1 % at 1 MiB, counted against
 * the stream).
 */
#define SLICE_S 0.1

/*
 * Stream @opcode messages of @size from a to b for @seconds with up to
 * @depth in flight, posted @batch per doorbell, the last of each batch
 * signaled. With @base, a memcpy slice of the same length follows each
 * slice of the stream and @base adds them up.
 */
static struct result stream(uint8_t opcode, unsigned int size,
			    unsigned int depth, unsigned int batch,
			    double seconds, struct tally *base)
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* SEND ping-pong of @size bytes: a -> b, b -> a; half round trips. */
static void latency(unsigned int size, unsigned int iters, double *median,
		    double *p99)
{
	double *half = calloc(iters, sizeof(*half));
	struct sim_wr wa, wb;
	struct pvo_cqe c[4];
	unsigned int i, warm = iters / 10 + 10;

	if (!half)
		die("out of memory");
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
		while ((n = sim_poll_cq(&B.rcq, c, 1)) == 0)
			if (now_s() > dl)
				die("latency: b never received message %u", i);
		check_cqes(c, n, "ping");
		if (sim_post_send(&B.qp, &wb, 1))
			die("latency: b's SQ is full");
		while ((n = sim_poll_cq(&A.rcq, c, 1)) == 0)
			if (now_s() > dl)
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
	qsort(half, iters, sizeof(*half), cmp_double);
	*median = half[iters / 2];
	*p99 = half[(size_t)(iters * 0.99)];
	free(half);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pvo-bench [--overlay [--netns A,B --vteps IP,IP]] "
		"[--seconds S] [--sizes N,N,...] [--depth N] [--batch N]\n"
		"                 [--lat-iters N] [--repeat N] [--rounds N] "
		"[--cpus C,B|none] [--backend-arg ARG]...\n"
		"--cpus: the client's and the back-end's CPU (native mode; "
		"default: the first two we may use)\n"
		"PVO_BACKEND: back-end binary (default %s)\n",
		BACKEND_DEFAULT_PATH);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"overlay", no_argument, NULL, 'o'},
	    {"netns", required_argument, NULL, 'n'},
	    {"vteps", required_argument, NULL, 'v'},
	    {"seconds", required_argument, NULL, 's'},
	    {"sizes", required_argument, NULL, 'z'},
	    {"depth", required_argument, NULL, 'd'},
	    {"batch", required_argument, NULL, 'b'},
	    {"lat-iters", required_argument, NULL, 'l'},
	    {"repeat", required_argument, NULL, 'r'},
	    {"rounds", required_argument, NULL, 'R'},
	    {"backend-arg", required_argument, NULL, 'a'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const unsigned int def_sizes[] = {64,	256,   1024,   4096,
						 16384, 65536, 262144, 1048576};
	char *tok, *save;
	int c;

	o->seconds = 0.5;
	o->depth = 128;
	o->batch = 16;
	o->lat_iters = 20000;
	o->repeat = 3;
	o->rounds = 1;
	memcpy(o->sizes, def_sizes, sizeof(def_sizes));
	o->nsizes = sizeof(def_sizes) / sizeof(def_sizes[0]);
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->overlay = true;
			break;
		case 'n':
		case 'v':
			tok = strchr(optarg, ',');
			if (!tok)
				usage();
			*tok = '\0';
			if (c == 'n') {
				o->netns[0] = optarg;
				o->netns[1] = tok + 1;
			} else {
				o->vtep[0] = optarg;
				o->vtep[1] = tok + 1;
			}
			break;
		case 's':
			o->seconds = atof(optarg);
			break;
		case 'z':
			o->sizes_given = true;
			o->nsizes = 0;
			for (tok = strtok_r(optarg, ",", &save);
			     tok && o->nsizes < MAX_SIZES;
			     tok = strtok_r(NULL, ",", &save))
				o->sizes[o->nsizes++] = strtoul(tok, NULL, 0);
			break;
		case 'd':
			o->depth = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			o->batch = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			o->lat_iters = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o->repeat = strtoul(optarg, NULL, 0);
			break;
		case 'R':
			o->rounds = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			if (!strcmp(optarg, "none")) {
				o->no_pin = true;
				break;
			}
			if (sscanf(optarg, "%d,%d", &o->cpu[0], &o->cpu[1]) !=
				2 ||
			    o->cpu[0] < 0 || o->cpu[1] < 0 ||
			    o->cpu[0] >= CPU_SETSIZE ||
			    o->cpu[1] >= CPU_SETSIZE)
				usage();
			o->cpus_given = true;
			break;
		case 'a':
			if (o->nargs < 15)
				o->backend_args[o->nargs++] = optarg;
			break;
		default:
			usage();
		}
	}
	if (o->seconds <= 0 || !o->nsizes || !o->depth || !o->batch ||
	    o->batch > MAX_BATCH || o->depth > SQ_ENTRIES ||
	    o->lat_iters < 100 || !o->rounds || o->rounds > MAX_ROUNDS)
		die("bad option values: seconds > 0, 1 <= batch <= %d, "
		    "1 <= depth <= %d, lat-iters >= 100, 1 <= rounds <= %d",
		    MAX_BATCH, SQ_ENTRIES, MAX_ROUNDS);
}

static const char *human(unsigned int size)
{
	static char buf[4][16];
	static unsigned int slot;
	char *b = buf[slot++ % 4];

	if (size >= MIB && size % MIB == 0)
		snprintf(b, 16, "%u MiB", (unsigned int)(size / MIB));
	else if (size >= KIB && size % KIB == 0)
		snprintf(b, 16, "%u KiB", (unsigned int)(size / KIB));
	else
		snprintf(b, 16, "%u B", size);
	return b;
}

/* ---- --overlay: two back-ends, RoCEv2 in VXLAN over loopback --------- */

/* Path MTU of the tenant (mtu 9000 -> 4096) and the bytes a datagram of
 * a full packet takes: VXLAN + Ethernet + IPv4 + UDP + BTH + ICRC. */
#define OV_MTU 4096
#define OV_DGRAM (8 + 14 + 20 + 8 + 12 + OV_MTU + 4)

/*
 * Enters network namespace name (NULL: the one we started in). Processes
 * forked and sockets made meanwhile stay in it: that is how the two
 * back-ends and the UDP baseline land on the two ends of a veth.
 */
static void enter_netns(const char *name)
{
	static int home = -1;
	char path[256];
	int fd;

	if (home < 0)
		home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (!name) {
		if (home >= 0 && setns(home, CLONE_NEWNET))
			die("back to the first network namespace: %s",
			    strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		die("network namespace %s: %s (create it with ip netns add)",
		    name, strerror(errno));
	close(fd);
}

static const char *ov_vtep[2] = {"127.0.0.1", "127.0.0.2"};
static const char *ov_netns[2];

static void start_overlay(const struct opts *o)
{
	char c1[1024], c2[1024], err[512];
	const char *v1[] = {"a", NULL}, *v2[] = {"b", NULL};

	if (o->vtep[0]) {
		ov_vtep[0] = o->vtep[0];
		ov_vtep[1] = o->vtep[1];
	}
	ov_netns[0] = o->netns[0];
	ov_netns[1] = o->netns[1];
	vxlan_port = 20000 + getpid() % 20000;
	snprintf(c1, sizeof(c1),
		 "vtep = %s\nvxlan-port = %u\n\n"
		 "[tenant bench]\nvni = 10\nmtu = 9000\n\n"
		 "[vm a]\ntenant = bench\nmac = 52:54:00:00:10:0a\n"
		 "ips = 10.1.0.1\n\n"
		 "[remote b]\ntenant = bench\nmac = 52:54:00:00:10:0b\n"
		 "ips = 10.1.0.2\nvtep = %s\n",
		 ov_vtep[0], vxlan_port, ov_vtep[1]);
	snprintf(c2, sizeof(c2),
		 "vtep = %s\nvxlan-port = %u\n\n"
		 "[tenant bench]\nvni = 10\nmtu = 9000\n\n"
		 "[vm b]\ntenant = bench\nmac = 52:54:00:00:10:0b\n"
		 "ips = 10.1.0.2\n\n"
		 "[remote a]\ntenant = bench\nmac = 52:54:00:00:10:0a\n"
		 "ips = 10.1.0.1\nvtep = %s\n",
		 ov_vtep[1], vxlan_port, ov_vtep[0]);
	if (ov_netns[0])
		enter_netns(ov_netns[0]);
	if (backend_start_config(&bp, c1, v1, o->backend_args, 10000, err,
				 sizeof(err)))
		die("%s", err);
	if (ov_netns[1])
		enter_netns(ov_netns[1]);
	if (backend_start_config(&bp2, c2, v2, o->backend_args, 10000, err,
				 sizeof(err)))
		die("%s", err);
	enter_netns(NULL);
}

struct udp_sink {
	int fd;
	volatile bool stop;
	uint64_t packets;
};

static void *udp_receive(void *opaque)
{
	static uint8_t bufs[64][OV_DGRAM];
	struct udp_sink *u = opaque;
	struct mmsghdr m[64];
	struct iovec iov[64];
	struct timeval tv = {.tv_usec = 100000};
	int i, n;

	setsockopt(u->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (!u->stop) {
		for (i = 0; i < 64; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = OV_DGRAM;
			memset(&m[i], 0, sizeof(m[i]));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(u->fd, m, 64, 0, NULL);
		if (n > 0)
			u->packets += n;
	}
	return NULL;
}

/*
 * Plain UDP between the same two addresses: full-size datagrams, 64 per
 * sendmmsg, the receiver in another thread, as the back-ends run. The
 * goodput counts the RoCE payload each datagram would carry.
 */
static double udp_goodput(double seconds, double *cpu_ns_per_pkt)
{
	struct timespec c0, c1;
	static uint8_t pkt[OV_DGRAM];
	struct sockaddr_in to = {.sin_family = AF_INET};
	struct udp_sink u = {0};
	struct mmsghdr m[64];
	struct iovec iov;
	int size = 8 << 20, s, i;
	pthread_t th;
	socklen_t alen = sizeof(to);
	double t0, t1;

	/* the receiver on host 2's VTEP address, the sender on host 1 */
	if (ov_netns[1])
		enter_netns(ov_netns[1]);
	u.fd = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(u.fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	inet_pton(AF_INET, ov_vtep[1], &to.sin_addr);
	if (bind(u.fd, (struct sockaddr *)&to, sizeof(to)) ||
	    getsockname(u.fd, (struct sockaddr *)&to, &alen))
		die("UDP baseline: bind: %s", strerror(errno));
	if (ov_netns[0])
		enter_netns(ov_netns[0]);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
	enter_netns(NULL);
	iov.iov_base = pkt;
	iov.iov_len = OV_DGRAM;
	for (i = 0; i < 64; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_name = &to;
		m[i].msg_hdr.msg_namelen = sizeof(to);
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	pthread_create(&th, NULL, udp_receive, &u);
	t0 = now_s();
	do {
		sendmmsg(s, m, 64, 0);
		t1 = now_s();
	} while (t1 - t0 < seconds);
	usleep(50000);
	u.stop = true;
	pthread_join(th, NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	close(s);
	close(u.fd);
	*cpu_ns_per_pkt = u.packets ? ((c1.tv_sec - c0.tv_sec) * 1e9 +
				       (c1.tv_nsec - c0.tv_nsec)) /
					  u.packets
				    : 0;
	return (double)u.packets * OV_MTU / (t1 - t0) / 1e6;
}

/* Keeps the faster of two measurements of one cell. */
static void keep_best(struct result *best, struct result r)
{
	if (r.mbps > best->mbps)
		*best = r;
}

static int overlay_main(struct opts *o)
{
	static const unsigned int def_sizes[] = {4096, 16384, 65536, 262144,
						 1048576};
	const unsigned int *sizes = o->sizes_given ? o->sizes : def_sizes;
	unsigned int nsizes = o->sizes_given ? o->nsizes : 5;
	char line[4096];
	double worst = 1e9;
	unsigned int i;

	overlay = true;
	/* The guests' CPUs are not the hosts' in a real deployment: here
	 * the client shares two cores with both back-ends and the kernel,
	 * so it sleeps instead of spinning when it waits. */
	idle_sleep_us = 20;
	prctl(PR_SET_TIMERSLACK, 1000UL);
	start_overlay(o);
	side_open(&A);
	side_open(&B);
	if (!o->repeat)
		o->repeat = 1;
	printf("pvo-bench --overlay: two back-ends (VTEPs %s and %s, port "
	       "%u, %s), RoCEv2 in VXLAN, path MTU %u, one RC QP pair; every "
	       "cell is the best of %u runs of %.2f s\n",
	       ov_vtep[0], ov_vtep[1], vxlan_port,
	       ov_netns[0] ? "two network namespaces joined by a veth"
			   : "loopback",
	       OV_MTU, o->repeat, o->seconds);
	printf("UDP: plain UDP between the same addresses in the same row, "
	       "%u-byte datagrams (a full packet), 64 per sendmmsg, goodput "
	       "counted as the %u payload bytes each carries; \"cpu us/4K\": "
	       "CPU time per 4 KiB of payload, of both back-ends (overlay) "
	       "or of the sender and receiver threads (UDP)\n\n",
	       OV_DGRAM, OV_MTU);
	printf("%8s | %8s %7s | %10s %8s %7s | %10s %8s %7s | %7s %7s\n",
	       "size", "UDP MB/s", "cpu us", "WRITE MB/s", "Mmsg/s", "cpu us",
	       "SEND MB/s", "Mmsg/s", "cpu us", "WRITE/", "SEND/");
	printf("%8s | %8s %7s | %10s %8s %7s | %10s %8s %7s | %7s %7s\n", "",
	       "", "/4K", "", "", "/4K", "", "", "/4K", "UDP", "UDP");
	printf("---------+------------------+-----------------------------+---"
	       "--------------------------+----------------\n");
	for (i = 0; i < nsizes; i++) {
		unsigned int depth = o->depth;
		double udp, udp_cpu = 0, per4k = (double)OV_MTU / sizes[i];
		struct result w, sd;

		while (depth > 1 && (uint64_t)depth * sizes[i] > BUF_LEN / 2)
			depth /= 2;
		struct result u = {0};
		unsigned int r;

		w = sd = u;
		/* rounds of all three cells: a slow spell of the machine
		 * hits the baseline as much as the cells it divides */
		for (r = 0; r < o->repeat; r++) {
			struct result ur = {0};

			ur.mbps = udp_goodput(o->seconds, &ur.be_ns);
			keep_best(&u, ur);
			keep_best(&w, stream(PVO_WR_RDMA_WRITE, sizes[i], depth,
					     o->batch, o->seconds, NULL));
			keep_best(&sd, stream(PVO_WR_SEND, sizes[i], depth,
					      o->batch, o->seconds, NULL));
		}
		udp = u.mbps;
		udp_cpu = u.be_ns;
		printf("%8s | %8.0f %7.2f | %10.0f %8.3f %7.2f | %10.0f %8.3f "
		       "%7.2f | %6.0f%% %6.0f%%\n",
		       human(sizes[i]), udp, udp_cpu / 1000, w.mbps, w.mmsgs,
		       w.be_ns * per4k / 1000, sd.mbps, sd.mmsgs,
		       sd.be_ns * per4k / 1000, 100 * w.mbps / udp,
		       100 * sd.mbps / udp);
		if (w.mbps / udp < worst)
			worst = w.mbps / udp;
		if (sd.mbps / udp < worst)
			worst = sd.mbps / udp;
	}
	if (backend_mgmt_line(&bp, "daemon", line, sizeof(line)) &&
	    backend_field(line, " tx_syscalls="))
		printf("\nhost 1 sent %llu packets in %llu sendmmsg calls: "
		       "%.1f packets per syscall; %llu retransmitted; %llu "
		       "padded to stay in a GSO run\n",
		       (unsigned long long)backend_field(line, " tx_packets="),
		       (unsigned long long)backend_field(line, " tx_syscalls="),
		       (double)backend_field(line, " tx_packets=") /
			   backend_field(line, " tx_syscalls="),
		       (unsigned long long)backend_field(line, " retransmits="),
		       (unsigned long long)backend_field(line, " gso_padded="));
	if (backend_mgmt_line(&bp2, "daemon", line, sizeof(line)) &&
	    backend_field(line, " rx_syscalls="))
		printf("host 2 received %llu packets in %llu recvmmsg calls: "
		       "%.1f packets per syscall\n",
		       (unsigned long long)backend_field(line, " rx_packets="),
		       (unsigned long long)backend_field(line, " rx_syscalls="),
		       (double)backend_field(line, " rx_packets=") /
			   backend_field(line, " rx_syscalls="));
	printf("\ntarget (reported, not a gate): overlay goodput >= 70%% of "
	       "plain UDP at 4 KiB .. 1 MiB, WRITE and SEND: %s (lowest %.0f%%)\n",
	       worst >= 0.7 ? "met" : "NOT met", 100 * worst);
	backend_stop(&bp, 5000);
	backend_stop(&bp2, 5000);
	backend_cleanup(&bp, false);
	backend_cleanup(&bp2, false);
	return 0;
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

int main(int argc, char **argv)
{
	const char *vms[] = {"a", "b", NULL};
	struct opts o = {0};
	/* WRITE/memcpy and SEND/memcpy of every round and size */
	static double ratio[2][MAX_SIZES][MAX_ROUNDS];
	double med, p99, med64 = 0, rate64 = -1;
	double big[2] = {1e9, 1e9}; /* lowest (median) ratio at >= 64 KiB */
	char err[512];
	unsigned int i, k, r;
	const char *env;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	env = getenv("PVO_TEST_TIMEOUT_MS");
	if (env && atoi(env) > 0)
		timeout_ms = atoi(env);
	o.backend_args[o.nargs] = NULL;
	if (o.overlay)
		return overlay_main(&o);
	pick_cpus(&o);
	pin_self(pin_cpu[1]); /* the back-end inherits it */
	if (backend_start_config(&bp, config, vms, o.backend_args, 10000, err,
				 sizeof(err)))
		die("%s", err);
	pin_self(pin_cpu[0]);
	side_open(&A);
	side_open(&B);

	printf("pvo-bench: back-end %s%s%s\n", bp.binary,
	       o.nargs ? " with" : "", o.nargs ? "" : " (default options)");
	for (i = 0; i < o.nargs; i++)
		printf("  %s", o.backend_args[i]);
	if (o.nargs)
		printf("\n");
	if (pin_cpu[0] >= 0)
		printf("client on CPU %d, back-end on CPU %d; memcpy runs on "
		       "the back-end's CPU\n",
		       pin_cpu[0], pin_cpu[1]);
	else
		printf("not pinned: memcpy runs wherever the scheduler puts "
		       "it\n");
	if (!o.repeat)
		o.repeat = 1;
	printf("two simulated VMs, one RC QP pair; WRITE and SEND run %.2f s "
	       "each per size in slices of %.2f s, each followed by as long "
	       "a memcpy; up to %u in flight, %u WQEs per doorbell; \"be "
	       "us/msg\" is the back-end's CPU time per message\n\n",
	       o.repeat * o.seconds, SLICE_S, o.depth, o.batch);
	printf("%8s | %10s %8s %7s | %10s %8s %7s | %10s | %7s %7s\n", "size",
	       "WRITE MB/s", "Mmsg/s", "be us", "SEND MB/s", "Mmsg/s", "be us",
	       "memcpy MB/s", "WRITE/", "SEND/");
	printf("%8s | %10s %8s %7s | %10s %8s %7s | %10s | %7s %7s\n", "", "",
	       "", "/msg", "", "", "/msg", "", "memcpy", "memcpy");
	printf("---------+-----------------------------+--------------------"
	       "---------+-------------+----------------\n");
	for (r = 0; r < o.rounds; r++) {
		for (i = 0; i < o.nsizes; i++) {
			native_row(&o, o.sizes[i], &ratio[0][i][r],
				   &ratio[1][i][r], &rate64);
			if (o.rounds > 1 && i == o.nsizes - 1 &&
			    r < o.rounds - 1)
				printf("---------+ round %u of %u done\n",
				       r + 1, o.rounds);
		}
	}
	if (o.rounds > 1)
		printf("\nratios over %u rounds at >= 64 KiB: median (lowest "
		       "- highest)\n",
		       o.rounds);
	for (i = 0; i < o.nsizes; i++) {
		if (o.sizes[i] < 65536)
			continue;
		for (k = 0; k < 2; k++) {
			double *v = ratio[k][i];

			qsort(v, o.rounds, sizeof(*v), cmp_double);
			/* the lower median of an even count */
			med = v[(o.rounds - 1) / 2];
			if (med < big[k])
				big[k] = med;
			if (o.rounds > 1)
				printf("  %8s %5s/memcpy: %4.0f%% (%.0f%% - "
				       "%.0f%%)\n",
				       human(o.sizes[i]), k ? "SEND" : "WRITE",
				       100 * med, 100 * v[0],
				       100 * v[o.rounds - 1]);
		}
	}

	print_profile();
	printf("\nSEND ping-pong, half round trip (%u iterations after "
	       "warm-up):\n",
	       o.lat_iters);
	for (i = 0; i < 3; i++) {
		static const unsigned int lsz[] = {8, 64, 4096};

		latency(lsz[i], o.lat_iters, &med, &p99);
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
			       o.rounds > 1 ? "median of the rounds " : "",
			       100 * big[k]);
	if (rate64 >= 0)
		printf("  >= 2 M msg/s at 64 B with batching: %s (%.2f M "
		       "msg/s RDMA WRITE, %u per doorbell)\n",
		       rate64 >= 2 ? "met" : "NOT met", rate64, o.batch);
	printf("  median half-RTT < 2 us in busy-poll mode: %s (%.2f us at "
	       "64 B%s)\n",
	       med64 < 2 ? "met" : "NOT met", med64,
	       o.nargs ? "" : "; back-end run without extra options");
	backend_stop(&bp, 5000);
	backend_cleanup(&bp, false);
	return 0;
}
