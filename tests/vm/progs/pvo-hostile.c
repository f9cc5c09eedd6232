// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-hostile: a guest that asks the back-end for as much as the verbs
 * let it, through the real driver and provider, for SECONDS:
 *
 *   pvo-hostile -d DEV -g GID_INDEX -a ATTACK [-t SECONDS] [-s BYTES]
 *
 * ATTACK is one of
 *   big-write   RDMA WRITEs of BYTES (default 64 MiB) between two RC QPs of
 *               this process, looped back through the device, as many in
 *               flight as the send queue takes: every callback of the
 *               back-end would copy a whole WQE;
 *   alias-mr    MRs over a buffer whose virtual pages all map the same 64
 *               pages of one memfd, registered until the device refuses:
 *               a page list per MR far larger than the guest memory
 *               behind it;
 *   reg-churn   the control queue kept busy with ibv_reg_mr / ibv_dereg_mr
 *               of an alias MR.
 *
 * It prints one line, "pvo-hostile: attack=A ops=N errors=E first_error=S
 * seconds=T", and exits 0 if it ran for its time without crashing (an
 * error from the device is what it expects, not a failure).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pvo-test-util.h"

#define PAGE 4096ul
/* 128 MiB of virtual pages over ALIAS_REAL real ones, each page's
 * neighbour elsewhere: a run per page in the back-end's page list. Few
 * real pages, but not two: the guest kernel counts every pin of a page
 * (1024 a pin), and two pages pinned 16384 times per MR overflow that
 * count after 128 MRs, before the back-end's budget is reached. */
#define ALIAS_PAGES 32768ul
#define ALIAS_REAL 64ul
#define MAX_MRS 4096
#define SQ_DEPTH 16

static struct pt_dev dev;
static unsigned long ops, errors;
static char first_error[96] = "none";

/* The first error, as one word: what failed and its errno's name. */
static void error_seen(const char *what, int err)
{
	const char *name = err ? strerrorname_np(err) : NULL;

	if (!errors++)
		snprintf(first_error, sizeof(first_error), "%s%s%s", what,
			 err ? ":" : "", err ? (name ? name : "?") : "");
}

static void big_write(uint64_t end_ms, size_t bytes)
{
	struct ibv_cq *cq = ibv_create_cq(dev.ctx, 4 * SQ_DEPTH, NULL, NULL, 0);
	struct ibv_qp *a, *b;
	struct ibv_mr *src, *dst;
	struct ibv_wc wc[SQ_DEPTH];
	unsigned int inflight = 0;
	void *sbuf, *dbuf;
	int n, i;

	if (!cq)
		pt_die("ibv_create_cq");
	a = pt_create_rc(&dev, cq, SQ_DEPTH);
	b = pt_create_rc(&dev, cq, SQ_DEPTH);
	if (pt_connect_pair(&dev, a, b, &pt_conn_default))
		pt_die("connect the looped-back pair");
	sbuf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	dbuf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (sbuf == MAP_FAILED || dbuf == MAP_FAILED)
		pt_die("mmap %zu bytes", bytes);
	memset(sbuf, 0x5a, bytes);
	src = ibv_reg_mr(dev.pd, sbuf, bytes, IBV_ACCESS_LOCAL_WRITE);
	dst = ibv_reg_mr(dev.pd, dbuf, bytes,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src || !dst)
		pt_die("ibv_reg_mr of %zu bytes", bytes);
	while (pt_now_ms() < end_ms) {
		while (inflight < SQ_DEPTH) {
			struct ibv_sge sge = { (uintptr_t)sbuf, (uint32_t)bytes,
					       src->lkey };
			struct ibv_send_wr wr = {
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { (uintptr_t)dbuf, dst->rkey },
			}, *bad;

			if (ibv_post_send(a, &wr, &bad)) {
				error_seen("post_send", errno);
				break;
			}
			inflight++;
		}
		n = ibv_poll_cq(cq, SQ_DEPTH, wc);
		for (i = 0; i < n; i++) {
			inflight--;
			ops++;
			if (wc[i].status != IBV_WC_SUCCESS)
				error_seen("wc_status", 0);
		}
		if (n <= 0)
			usleep(1000); /* leave the vCPU to the guest's others */
	}
	/* what is in flight completes or is flushed with the QP */
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(src);
	ibv_dereg_mr(dst);
	ibv_destroy_cq(cq);
}

/* ALIAS_PAGES virtual pages over the ALIAS_REAL pages of a memfd, in an
 * order where no page follows its neighbour. */
static void *alias_buffer(void)
{
	int fd = memfd_create("pvo-hostile", 0);
	unsigned long i;
	char *base;

	if (fd < 0 || ftruncate(fd, ALIAS_REAL * PAGE))
		pt_die("memfd");
	base = mmap(NULL, ALIAS_PAGES * PAGE, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		pt_die("mmap the alias range");
	for (i = 0; i < ALIAS_PAGES; i++)
		if (mmap(base + i * PAGE, PAGE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd,
			 (i * 7 % ALIAS_REAL) * PAGE) ==
		    MAP_FAILED)
			pt_die("mmap alias page %lu (vm.max_map_count?)", i);
	close(fd);
	return base;
}

static void alias_mr(uint64_t end_ms)
{
	static struct ibv_mr *mrs[MAX_MRS];
	void *buf = alias_buffer();
	unsigned int n = 0, i;

	while (pt_now_ms() < end_ms && n < MAX_MRS) {
		mrs[n] = ibv_reg_mr(dev.pd, buf, ALIAS_PAGES * PAGE,
				    IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[n]) {
			error_seen("reg_mr", errno);
			break;
		}
		ops++;
		n++;
	}
	/* hold them for the rest of the time: the budget stays used */
	while (pt_now_ms() < end_ms)
		usleep(100 * 1000);
	for (i = 0; i < n; i++)
		ibv_dereg_mr(mrs[i]);
}

static void reg_churn(uint64_t end_ms)
{
	void *buf = alias_buffer();

	while (pt_now_ms() < end_ms) {
		struct ibv_mr *mr = ibv_reg_mr(dev.pd, buf, ALIAS_PAGES * PAGE,
					       IBV_ACCESS_LOCAL_WRITE);

		if (!mr) {
			error_seen("reg_mr", errno);
			usleep(10 * 1000);
			continue;
		}
		ibv_dereg_mr(mr);
		ops++;
	}
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *attack = NULL;
	size_t bytes = 64ul << 20;
	int gid_index = 0, seconds = 20, opt;
	uint64_t start, end;

	while ((opt = getopt(argc, argv, "d:g:a:t:s:")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'a':
			attack = optarg;
			break;
		case 't':
			seconds = atoi(optarg);
			break;
		case 's':
			bytes = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (!attack || seconds <= 0 || !bytes)
		goto usage;
	pt_open(&dev, devname, gid_index);
	start = pt_now_ms();
	end = start + (uint64_t)seconds * 1000;
	if (!strcmp(attack, "big-write"))
		big_write(end, bytes);
	else if (!strcmp(attack, "alias-mr"))
		alias_mr(end);
	else if (!strcmp(attack, "reg-churn"))
		reg_churn(end);
	else
		goto usage;
	printf("pvo-hostile: attack=%s ops=%lu errors=%lu first_error=%s "
	       "seconds=%.1f\n",
	       attack, ops, errors, first_error,
	       (pt_now_ms() - start) / 1000.0);
	pt_close(&dev);
	return 0;
usage:
	fprintf(stderr, "usage: pvo-hostile -d DEV -g GID_INDEX -a "
			"big-write|alias-mr|reg-churn [-t SECONDS] [-s BYTES]\n");
	return 2;
}
