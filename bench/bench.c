// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-bench: data-path benchmarks of pvrdma-overlayd. This file holds
 * main, the options, the state both modes share and the helpers for
 * timing, statistics and printing; bench_vm.c the two simulated VMs and
 * the WRITE / SEND stream, bench_native.c the native benchmark,
 * bench_overlay.c the --overlay one, bench_fairness.c --fairness and
 * bench_scaling.c --scaling (bench.h).
 *
 * Usage: pvo-bench [--overlay [--netns A,B --vteps IP,IP] | --fairness |
 *		    --scaling] [--seconds S]
 *		    [--sizes 64,4096,...] [--repeat N] [--depth N] [--batch N]
 *		    [--lat-iters N] [--rounds N] [--cpus C,B|none]
 *		    [--backend-arg ARG]...
 * PVO_BACKEND picks the back-end binary (default: the plain -O2 build).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_proc.h"
#include "bench.h"

struct backend_proc bp, bp2; /* bp2: host 2 with --overlay */
struct side A = {.name = "a"}, B = {.name = "b"};
bool overlay;
unsigned int idle_sleep_us;
int timeout_ms = 10000;

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

/* CPU time of the back-end(s) so far: both hosts' with --overlay. */
uint64_t backend_cpu_ns(void)
{
	return proc_cpu_ns(bp.pid) + (overlay ? proc_cpu_ns(bp2.pid) : 0);
}

/* Starts @be on @config with --threads @threads after the user's
 * --backend-arg options; waits for the sockets of @vms. */
void backend_start_threads(struct backend_proc *be, const char *config,
			   const char *const *vms, const struct opts *o,
			   unsigned int threads)
{
	const char *args[20];
	char n[16], err[512];
	unsigned int i;

	for (i = 0; i < o->nargs; i++)
		args[i] = o->backend_args[i];
	snprintf(n, sizeof(n), "%u", threads);
	args[i++] = "--threads";
	args[i++] = n;
	args[i] = NULL;
	memset(be, 0, sizeof(*be));
	if (backend_start_config(be, config, vms, args, 10000, err,
				 sizeof(err)))
		die("%s", err);
}

/*
 * Calls @fn for every thread of @be with its data-path thread
 * number (1: the process's main thread, K + 1: pvo-data-K in
 * core/threads.c; 0: another, e.g. glib's), name, TID and CPU time (ms).
 */
void backend_threads(struct backend_proc *be,
		     void (*fn)(unsigned int k, const char *comm, pid_t tid,
				unsigned long long ms))
{
	char path[64], line[512], comm[32];
	unsigned long long ut, st;
	struct dirent *de;
	unsigned int k;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)be->pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		FILE *f;
		char *p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(line, sizeof(line), "%s/%s/stat", path, de->d_name);
		f = fopen(line, "r");
		if (!f)
			continue;
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		/* after the comm: state ppid pgrp session tty tpgid flags
		 * minflt cminflt majflt cmajflt utime stime */
		if (!p || sscanf(p + 2,
				 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
				 "%*u %llu %llu",
				 &ut, &st) != 2)
			continue;
		*p = '\0';
		snprintf(comm, sizeof(comm), "%s", strchr(line, '(') + 1);
		if (atoi(de->d_name) == be->pid)
			k = 1;
		else if (sscanf(comm, "pvo-data-%u", &k) == 1)
			k++;
		else
			k = 0;
		fn(k, comm, atoi(de->d_name),
		   (ut + st) * 1000 / sysconf(_SC_CLK_TCK));
	}
	closedir(d);
}

/* The CPUs we may use; the back-end's thread K goes on cpus[K - 1]. */
#define PIN_CPUS 2
static int cpus[PIN_CPUS], ncpus = -1;

static void pin_one(unsigned int k, const char *comm, pid_t tid,
		    unsigned long long ms)
{
	cpu_set_t set;

	if (!k || k > (unsigned int)ncpus)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpus[k - 1], &set);
	if (sched_setaffinity(tid, sizeof(set), &set))
		die("pinning back-end thread %u to CPU %d: %s", k, cpus[k - 1],
		    strerror(errno));
}

/*
 * A data-path thread on a core of its own, as a host runs them: thread K
 * on the K-th CPU we may use (the first two), so a tenant pinned to
 * another thread is served on another core, and the scheduler does not
 * move a busy thread and its caches between cores.
 */
void pin_backend_threads(struct backend_proc *be)
{
	cpu_set_t set;
	int c;

	if (ncpus < 0) {
		ncpus = 0;
		if (!sched_getaffinity(0, sizeof(set), &set))
			for (c = 0; c < CPU_SETSIZE && ncpus < PIN_CPUS; c++)
				if (CPU_ISSET(c, &set))
					cpus[ncpus++] = c;
	}
	backend_threads(be, pin_one);
}

void die(const char *fmt, ...)
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
	if (bp2.pid > 0) {
		fprintf(stderr, "pvo-bench: back-end log: %s\n", bp2.log_path);
		backend_stop(&bp2, 2000);
		backend_cleanup(&bp2, true);
	}
	exit(1);
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pvo-bench [--overlay [--netns A,B --vteps IP,IP] | "
		"--fairness | --scaling] "
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
	    {"fairness", no_argument, NULL, 'f'},
	    {"scaling", no_argument, NULL, 'S'},
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
		case 'f':
			o->fairness = true;
			break;
		case 'S':
			o->scaling = true;
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
			o->depth_given = true;
			break;
		case 'b':
			o->batch = strtoul(optarg, NULL, 0);
			o->batch_given = true;
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

const char *human(unsigned int size)
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

int main(int argc, char **argv)
{
	struct opts o = {0};
	const char *env;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	env = getenv("PVO_TEST_TIMEOUT_MS");
	if (env && atoi(env) > 0)
		timeout_ms = atoi(env);
	o.backend_args[o.nargs] = NULL;
	if (o.overlay)
		return overlay_main(&o);
	if (o.fairness)
		return fairness_main(&o);
	if (o.scaling)
		return scaling_main(&o);
	return native_main(&o);
}
