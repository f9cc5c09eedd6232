// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-hostmem: the host memory one guest can make the back-end hold. VM a
 * registers, over and over, the hostile MR: a page directory of 1M
 * entries alternating two guest pages, named as a 4 GiB MR (12 MiB of
 * page list each when pages were kept as blocks, 8 MiB as runs). The back-end must charge
 * them to a's max-host-mem and refuse the rest with ENOSPC, its
 * anonymous memory must stay within that budget (docs/security.md), and
 * VM b must keep registering and moving data, every byte checked. Data
 * through a hostile MR lands on its two pages in list order.
 *
 * T_HOSTMEM_MEASURE=1 leaves max-host-mem unset (the default, or a
 * back-end that predates it) and reports each REG_MR's time: a
 * measurement, whose verdicts on the budget then do not hold.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <glib.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define MIB (1024ull * 1024ull)
#define BUDGET (64 * MIB) /* a's max-host-mem */
#define ROUNDS 40
#define HOSTILE_LEN (4ull << 30)
#define HOSTILE_IOVA (1ull << 40)
#define NPAGES PVO_PDIR_MAX_PAGES
#define BUF_LEN (64 * 1024)
#define WAIT_MS 5000
/* What the back-end may hold besides the budget: the objects of both
 * VMs, one page list being built and refused, the allocator's slack and
 * the sanitizer's shadow of the budget (an eighth). */
#define SLACK (32 * MIB + BUDGET / 8)

static struct backend_proc bp;
static struct sim_vm *va, *vb;

struct side {
	struct sim_vm *vm;
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq cq;
	struct sim_buf buf;
	struct sim_mr mr;
	struct sim_qp qp;
	int gid;
};

static struct side A, B;

static void __attribute__((noreturn)) lost(const char *what)
{
	backend_dump_log(&bp, 20);
	tap_bail("%s (log kept in %s)", what, bp.dir);
}

/* The back-end's anonymous memory (guest RAM it maps is shared, not
 * counted), in bytes. */
static unsigned long long rss_anon(void)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)bp.pid);
	f = fopen(path, "r");
	if (!f)
		lost("no /proc status of the back-end");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static long long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000ll + t.tv_nsec / 1000;
}

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void side_open(struct side *s, struct sim_vm *vm, const char *ip)
{
	struct sim_qp_init init = {
	    .type = PVO_QPT_RC,
	    .sq_entries = 16,
	    .rq_entries = 16,
	    .max_send_sge = 1,
	    .max_recv_sge = 1,
	};

	s->vm = vm;
	s->gid = sim_vm_gid_index_ipv4(vm, ip);
	init.send_cq = init.recv_cq = &s->cq;
	if (s->gid < 0 || sim_ctx_open(vm, &s->ctx) ||
	    sim_alloc_pd(&s->ctx, &s->pd) ||
	    sim_create_cq(&s->ctx, 64, &s->cq) ||
	    sim_buf_alloc(&s->buf, sim_vm_ram(vm), sim_vm_va(vm, BUF_LEN),
			  BUF_LEN, 0, SIM_LAYOUT_SCATTER) < 0 ||
	    sim_reg_mr(&s->pd, &s->buf, 0, BUF_LEN,
		       PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			   PVO_ACCESS_REMOTE_READ,
		       &s->mr) ||
	    sim_create_qp(&s->pd, &init, &s->qp))
		lost(vm->err);
}

static void connect_sides(void)
{
	struct sim_conn ca = {.sgid_index = (uint8_t)A.gid};
	struct sim_conn cb = {.sgid_index = (uint8_t)B.gid};
	struct sim_peer pa, pb;

	sim_qp_peer(&A.qp, A.gid, &pa);
	sim_qp_peer(&B.qp, B.gid, &pb);
	if (sim_qp_connect(&A.qp, &ca, &pb) || sim_qp_connect(&B.qp, &cb, &pa))
		lost("connecting a and b");
}

static bool one_cqe(struct side *s, uint64_t wr_id, uint8_t opcode,
		    const char *what)
{
	struct pvo_cqe e;

	if (sim_wait_cq(&s->cq, &e, 1, WAIT_MS) != 1) {
		tap_diag("no completion for %s", what);
		return false;
	}
	if (le64toh(e.wr_id) != wr_id || e.status != PVO_WC_SUCCESS ||
	    e.opcode != opcode) {
		tap_diag("%s completed with wr_id %llu status %u opcode %u",
			 what, (unsigned long long)le64toh(e.wr_id), e.status,
			 e.opcode);
		return false;
	}
	return true;
}

static void fill(struct sim_buf *b, uint64_t off, uint32_t len,
		 uint32_t seed)
{
	uint8_t *p = malloc(len);
	uint32_t k;

	for (k = 0; k < len; k++)
		p[k] = pattern(seed, k);
	sim_buf_write(b, off, p, len);
	free(p);
}

/* len bytes at host address p are pattern(seed) from byte from on. */
static bool bytes_ok(const uint8_t *p, uint32_t len, uint32_t seed,
		     uint32_t from, const char *what)
{
	uint32_t k;

	for (k = 0; k < len; k++)
		if (p[k] != pattern(seed, from + k)) {
			tap_diag("%s: byte %u is 0x%02x, want 0x%02x", what, k,
				 p[k], pattern(seed, from + k));
			return false;
		}
	return true;
}

/* The hostile directory: entry i names page A for even i, B for odd. */
struct hostile {
	struct sim_buf two; /* pages A (0) and B (2) */
	struct pvo_pdir pdir;
	struct sim_pdir_mem mem;
};

static void hostile_build(struct hostile *h)
{
	uint64_t *gpas = malloc(NPAGES * sizeof(*gpas));
	uint32_t i;

	/* A and B not adjacent in GPA: no two entries make a run */
	if (!gpas ||
	    sim_buf_alloc(&h->two, sim_vm_ram(va), sim_vm_va(va, 3 * 4096),
			  3 * 4096, 0, SIM_LAYOUT_CONTIG) < 0)
		lost("guest pages for the hostile MR");
	for (i = 0; i < NPAGES; i++)
		gpas[i] = h->two.pages.gpa[i & 1 ? 2 : 0];
	if (sim_pdir_build(sim_vm_ram(va), gpas, NPAGES, &h->pdir, &h->mem) <
	    0)
		lost("the hostile page directory");
	free(gpas);
}

static int hostile_reg(struct hostile *h, uint32_t *mr, uint32_t *key)
{
	struct pvo_cmd_reg_mr c = {
	    .pd = htole32(A.pd.handle),
	    .access = htole32(PVO_ACCESS_LOCAL_WRITE |
			      PVO_ACCESS_REMOTE_WRITE |
			      PVO_ACCESS_REMOTE_READ),
	    .iova = htole64(HOSTILE_IOVA),
	    .length = htole64(HOSTILE_LEN),
	    .pages = h->pdir,
	};

	return pvo_reg_mr(va->fe, A.ctx.handle, &c, mr, key);
}

static bool show_a(char *line, size_t len)
{
	return backend_mgmt_line(&bp, "vm name=a ", line, len);
}

/* 40 hostile MRs: the budget's worth, the rest ENOSPC; memory bounded. */
static void test_hostile(struct hostile *h, uint32_t *mrs, uint32_t *key0,
			 uint32_t *nok)
{
	unsigned long long before, after;
	long long t, worst = 0;
	uint32_t i, other = 0, nospc = 0, key;
	char line[4096];
	int st;

	before = rss_anon();
	*nok = 0;
	for (i = 0; i < ROUNDS; i++) {
		t = now_us();
		st = hostile_reg(h, &mrs[*nok], &key);
		t = now_us() - t;
		worst = t > worst ? t : worst;
		if (getenv("T_HOSTMEM_MEASURE"))
			tap_diag("REG_MR %u: %d in %lld us", i, st, t);
		if (st == PVO_STATUS_OK) {
			if (!*nok)
				*key0 = key;
			++*nok;
		} else if (st == PVO_STATUS_ENOSPC) {
			nospc++;
		} else {
			other++;
			tap_diag("REG_MR %u: status %d", i, st);
		}
	}
	after = rss_anon();
	tap_ok(*nok >= 1 && *nok <= BUDGET / (NPAGES * 8ull) && !other &&
		   nospc == ROUNDS - *nok,
	       "%u hostile 4 GiB MRs: %u registered within max-host-mem, "
	       "%u refused with ENOSPC",
	       ROUNDS, *nok, nospc);
	tap_diag("back-end anonymous memory %llu -> %llu MiB; slowest REG_MR "
		 "of 1M pages %lld ms",
		 before / MIB, after / MIB, worst / 1000);
	tap_ok(after <= before + BUDGET + SLACK,
	       "the back-end holds at most max-host-mem (%llu MiB) more "
	       "(grew %lld MiB)",
	       BUDGET / MIB, ((long long)after - (long long)before) / (1 << 20));
	if (!tap_ok(show_a(line, sizeof(line)) &&
			backend_field(line, " max_host_mem=") == BUDGET &&
			backend_field(line, " host_mem=") >=
			    *nok * NPAGES * 8ull &&
			backend_field(line, " host_mem=") <= BUDGET &&
			backend_field(line, " host_mem_refused=") >= nospc,
		    "pvo-ctl show reports a's host memory, limit and refusals"))
		tap_diag("%s", line);
	tap_ok(backend_running(&bp), "the back-end runs on");
}

/* b writes 3 pages into the hostile MR and reads 2 back: page A holds
 * the third, page B the second, as the list names them. */
static void test_data(struct hostile *h, uint32_t key)
{
	struct sim_wr w = {
	    .wr_id = 1,
	    .opcode = PVO_WR_RDMA_WRITE,
	    .flags = PVO_WQE_F_SIGNALED,
	    .num_sge = 1,
	    .sge = {{B.buf.va, 3 * 4096, B.mr.key}},
	    .remote_addr = HOSTILE_IOVA,
	    .rkey = key,
	};
	struct sim_wr r = {
	    .wr_id = 2,
	    .opcode = PVO_WR_RDMA_READ,
	    .flags = PVO_WQE_F_SIGNALED,
	    .num_sge = 1,
	    .sge = {{B.buf.va + 32768, 2 * 4096, B.mr.key}},
	    .remote_addr = HOSTILE_IOVA + HOSTILE_LEN - 2 * 4096,
	    .rkey = key,
	};
	uint8_t got[2 * 4096];

	fill(&B.buf, 0, 3 * 4096, 5);
	tap_ok(sim_post_send(&B.qp, &w, 1) == PVO_STATUS_OK &&
		   one_cqe(&B, 1, PVO_WC_RDMA_WRITE, "WRITE") &&
		   bytes_ok(sim_buf_ptr(&h->two, 0), 4096, 5, 8192,
			    "page A") &&
		   bytes_ok(sim_buf_ptr(&h->two, 8192), 4096, 5, 4096,
			    "page B"),
	       "an RDMA WRITE over the hostile MR lands page by page as its "
	       "list names them");
	sim_buf_fill(&B.buf, 32768, 0, 2 * 4096);
	tap_ok(sim_post_send(&B.qp, &r, 1) == PVO_STATUS_OK &&
		   one_cqe(&B, 2, PVO_WC_RDMA_READ, "READ"),
	       "an RDMA READ of its last two pages completes");
	sim_buf_read(&B.buf, 32768, got, sizeof(got));
	tap_ok(bytes_ok(got, 4096, 5, 8192, "read page A") &&
		   bytes_ok(got + 4096, 4096, 5, 4096, "read page B"),
	       "... with pages A and B in list order");
}

/* b registers and moves data while a sits at its budget. */
static void test_other_vm(void)
{
	struct sim_wr send = {
	    .wr_id = 3,
	    .opcode = PVO_WR_SEND,
	    .flags = PVO_WQE_F_SIGNALED,
	    .num_sge = 1,
	    .sge = {{B.buf.va, 4096, B.mr.key}},
	};
	struct sim_sge rs = {A.buf.va + 8192, 4096, A.mr.key};
	struct sim_mr m2;
	uint8_t got[4096];
	bool ok;

	tap_ok(sim_reg_mr(&B.pd, &B.buf, 0, BUF_LEN,
			  PVO_ACCESS_LOCAL_WRITE, &m2) == PVO_STATUS_OK &&
		   sim_dereg_mr(&m2) == PVO_STATUS_OK,
	       "VM b registers an MR while a is at its budget");

	fill(&B.buf, 0, 4096, 9);
	sim_buf_fill(&A.buf, 8192, 0, 4096);
	ok = sim_post_recv(&A.qp, 4, &rs, 1) == PVO_STATUS_OK &&
	     sim_post_send(&B.qp, &send, 1) == PVO_STATUS_OK &&
	     one_cqe(&B, 3, PVO_WC_SEND, "SEND") &&
	     one_cqe(&A, 4, PVO_WC_RECV, "RECV");
	sim_buf_read(&A.buf, 8192, got, sizeof(got));
	tap_ok(ok && bytes_ok(got, sizeof(got), 9, 0, "SEND payload"),
	       "a SEND from b to a arrives, every byte");
}

static void test_release(struct hostile *h, uint32_t *mrs, uint32_t n)
{
	uint32_t i, bad = 0, mr, key;
	char line[4096];

	for (i = 0; i < n; i++)
		bad += pvo_destroy(va->fe, PVO_CMD_DEREG_MR, A.ctx.handle,
				   mrs[i]) != PVO_STATUS_OK;
	tap_ok(!bad && show_a(line, sizeof(line)) &&
		   backend_field(line, " host_mem=") < MIB,
	       "deregistering them gives the budget back (%llu bytes held)",
	       backend_field(line, " host_mem="));
	tap_ok(hostile_reg(h, &mr, &key) == PVO_STATUS_OK &&
		   pvo_destroy(va->fe, PVO_CMD_DEREG_MR, A.ctx.handle, mr) ==
		       PVO_STATUS_OK,
	       "and a registers a hostile MR again");
}

int main(void)
{
	static const char *const vms[] = {"a", "b", NULL};
	char config[512], budget[64];
	struct sim_vm_opts oa = {.name = "a", .ram_size = 64 * MIB};
	struct sim_vm_opts ob = {.name = "b"};
	const char *asan = getenv("ASAN_OPTIONS");
	uint32_t mrs[ROUNDS], key0 = 0, nok = 0;
	struct hostile h;
	char err[512], *opts;
	int ret;

	tap_plan(12);
	/* freed page lists go back to the system at once, so the memory
	 * the test measures is what the back-end holds */
	opts = g_strdup_printf("%s%squarantine_size_mb=1", asan ? asan : "",
			       asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	g_free(opts);
	snprintf(budget, sizeof(budget), "max-host-mem = %llu\n", BUDGET);
	snprintf(config, sizeof(config),
		 "vtep = 127.0.0.1\nvxlan-port = %d\n"
		 "[tenant t]\nvni = 7\n"
		 "[vm a]\ntenant = t\nmac = 52:54:00:00:0a:01\n"
		 "ips = 10.7.0.1\n%s"
		 "[vm b]\ntenant = t\nmac = 52:54:00:00:0a:02\n"
		 "ips = 10.7.0.2\n",
		 20000 + getpid() % 20000,
		 getenv("T_HOSTMEM_MEASURE") ? "" : budget);
	if (backend_start_config(&bp, config, vms, NULL, 10000, err,
				 sizeof(err)) < 0)
		tap_bail("%s", err);
	oa.socket_path = backend_vm_socket(&bp, "a");
	va = sim_vm_open(&oa, err, sizeof(err));
	if (!va)
		lost(err);
	ob.socket_path = backend_vm_socket(&bp, "b");
	vb = sim_vm_open(&ob, err, sizeof(err));
	if (!vb)
		lost(err);
	side_open(&A, va, "10.7.0.1");
	side_open(&B, vb, "10.7.0.2");
	connect_sides();
	hostile_build(&h);
	test_hostile(&h, mrs, &key0, &nok);
	test_data(&h, key0);
	test_other_vm();
	test_release(&h, mrs, nok);
	sim_vm_close(vb);
	sim_vm_close(va);
	ret = backend_stop(&bp, 10000);
	tap_ok(ret == 0, "back-end exits cleanly (%s)", backend_describe(&bp));
	backend_cleanup(&bp, false);
	return tap_done();
}
