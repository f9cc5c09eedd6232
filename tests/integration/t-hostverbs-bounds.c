// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-hostverbs-bounds: what a VM's host MRs make the back-end hold is
 * bounded per VM (docs/hostverbs.md, "Bounds"). A simulated VM of a
 * host-verbs tenant registers MRs of one guest page many times over (one
 * host mapping per copy) and MRs of long contiguous runs (many pinned
 * bytes): at max-host-mappings and max-pinned its REG_MR fails with
 * ENOSPC, the daemon's mapping count (/proc/PID/maps) stays within the
 * bound, another VM's REG_MR still succeeds, and deregistering, a
 * REREG_MR's old MR, or the VM going, gives the budget back; pvo-ctl
 * show says how much each VM holds. An MR of more pages than one turn
 * maps is made over several turns and pinned by a thread: the other VM's
 * commands are answered meanwhile, and a VM that goes while its MR is
 * being made gives everything back.
 *
 * Needs an RDMA device: T_HV_DEV=DEV:NETDEV names one; otherwise, as
 * root, the test makes its own in a network namespace of its own (a
 * dummy netdev and rdma_rxe on it, removed at the end), and skips where
 * the kernel has no rdma_rxe.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "sim_mem.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define PAGE 4096u
#define MAX_MAPPINGS 2000
#define MAX_PINNED (16u << 20)
/* mappings the daemon may make besides the aliases meanwhile */
#define SLACK 64

static struct backend_proc bp;
static char rxe_made[64];

static void __attribute__((noreturn)) lost(const char *what)
{
	backend_dump_log(&bp, 30);
	tap_bail("%s (log kept in %s)", what, bp.dir);
}

static int run(const char *fmt, const char *arg)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), fmt, arg);
	return system(cmd);
}

/* The device and netdev to use, or false (why in *why). */
static bool rxe_setup(char *dev, size_t dlen, char *netdev, size_t nlen,
		      const char **why)
{
	const char *env = getenv("T_HV_DEV");

	if (env) {
		if (sscanf(env, "%63[^:]:%15s", dev, netdev) == 2)
			return true;
		*why = "T_HV_DEV is not DEV:NETDEV";
		return false;
	}
	*why = "no RDMA device: set T_HV_DEV=DEV:NETDEV, or run as root "
	       "where the kernel has rdma_rxe";
	if (geteuid() != 0 || unshare(CLONE_NEWNET))
		return false;
	snprintf(netdev, nlen, "hvb0");
	if (run("ip link add %s type dummy 2>/dev/null", netdev) ||
	    run("ip link set %s up", netdev) ||
	    run("ip addr add 10.77.0.1/24 dev %s", netdev))
		return false;
	if (run("modprobe %s 2>/dev/null", "rdma_rxe"))
		return false;
	snprintf(dev, dlen, "rxe_hvb%d", (int)getpid());
	if (run("rdma link add %s type rxe netdev hvb0 2>/dev/null", dev))
		return false;
	snprintf(rxe_made, sizeof(rxe_made), "%s", dev);
	return true;
}

static void rxe_cleanup(void)
{
	/* the namespace, and the dummy netdev, go with the process */
	if (rxe_made[0])
		run("rdma link delete %s 2>/dev/null", rxe_made);
}

static unsigned int daemon_maps(void)
{
	char path[64];
	unsigned int n = 0;
	FILE *f;
	int c;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)bp.pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* A field of VM vm's line of pvo-ctl show. */
/* The daemon has no VTEP, so no default management socket: this one. */
static char mgmt_path[108];

static unsigned long long shown(const char *vm, const char *key)
{
	static char buf[65536];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char kind[64], k[64], *p, *e;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(kind, sizeof(kind), "\nvm name=%s ", vm);
	snprintf(k, sizeof(k), " %s=", key);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", mgmt_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, "show\n", 5) != 5) {
		if (fd >= 0)
			close(fd);
		return ~0ull;
	}
	buf[0] = '\n';
	backend_mgmt_read(fd, buf + 1, sizeof(buf) - 1);
	close(fd);
	p = strstr(buf, kind);
	if (!p)
		return ~0ull;
	e = strchr(p + 1, '\n');
	if (e)
		*e = 0;
	return backend_field(p, k);
}

/* Waits up to 5 s for a field of vm's line to be want. */
static bool shown_becomes(const char *vm, const char *key,
			  unsigned long long want)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (shown(vm, key) == want)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* REG_MR of the n GPAs of gpas[] (repeats allowed) in pd: its status. */
static int reg_pages(struct sim_pd *pd, const uint64_t *gpas, uint32_t n,
		     struct sim_mr *mr)
{
	struct sim_ctx *ctx = pd->ctx;
	struct guest_ram *ram = sim_vm_ram(ctx->vm);
	struct pvo_cmd_reg_mr c = {0};
	int st;

	memset(mr, 0, sizeof(*mr));
	mr->ctx = ctx;
	if (sim_pdir_build(ram, gpas, n, &c.pages, &mr->pdir_mem) < 0)
		return -ENOMEM;
	mr->iova = 0x10000000ull;
	mr->len = (uint64_t)n * PAGE;
	c.pd = htole32(pd->handle);
	c.access = htole32(PVO_ACCESS_LOCAL_WRITE);
	c.iova = htole64(mr->iova);
	c.length = htole64(mr->len);
	st = pvo_reg_mr(ctx->vm->fe, ctx->handle, &c, &mr->handle, &mr->key);
	if (st != PVO_STATUS_OK)
		sim_pdir_free(ram, &mr->pdir_mem);
	return st;
}

/* REREG_MR of mr to one page n times over: its status. */
static int rereg_copies(struct sim_mr *mr, uint64_t gpa, uint32_t n)
{
	struct guest_ram *ram = sim_vm_ram(mr->ctx->vm);
	struct pvo_cmd_rereg_mr c = {0};
	struct sim_pdir_mem mem = {0};
	uint64_t *gpas = calloc(n, sizeof(*gpas));
	uint32_t i, key;
	int st;

	for (i = 0; i < n; i++)
		gpas[i] = gpa;
	st = sim_pdir_build(ram, gpas, n, &c.pages, &mem);
	free(gpas);
	if (st < 0)
		return -ENOMEM;
	c.mr = htole32(mr->handle);
	c.flags = htole32(PVO_REREG_TRANS);
	c.access = htole32(PVO_ACCESS_LOCAL_WRITE);
	c.iova = htole64(mr->iova);
	c.length = htole64((uint64_t)n * PAGE);
	st = pvo_rereg_mr(mr->ctx->vm->fe, mr->ctx->handle, &c, &key);
	if (st != PVO_STATUS_OK) {
		sim_pdir_free(ram, &mem);
		return st;
	}
	sim_pdir_free(ram, &mr->pdir_mem);
	mr->pdir_mem = mem;
	mr->key = key;
	mr->len = (uint64_t)n * PAGE;
	return st;
}

/* One page of the VM's RAM, n times over: n host mappings. */
static int reg_copies(struct sim_pd *pd, uint64_t gpa, uint32_t n,
		      struct sim_mr *mr)
{
	uint64_t *gpas = calloc(n, sizeof(*gpas));
	uint32_t i;
	int st;

	for (i = 0; i < n; i++)
		gpas[i] = gpa;
	st = reg_pages(pd, gpas, n, mr);
	free(gpas);
	return st;
}

struct side {
	struct sim_vm *vm;
	struct sim_ctx ctx;
	struct sim_pd pd;
};

static void open_side(struct side *s, const char *name)
{
	struct sim_vm_opts o = {.name = name, .ram_size = 64 << 20};
	char err[512];

	o.socket_path = backend_vm_socket(&bp, name);
	s->vm = sim_vm_open(&o, err, sizeof(err));
	if (!s->vm)
		lost(err);
	if (sim_ctx_open(s->vm, &s->ctx) || sim_alloc_pd(&s->ctx, &s->pd))
		lost(s->vm->err);
}

static void test_mappings(struct side *a, struct side *b, uint64_t page)
{
	unsigned int base = daemon_maps(), full;
	struct sim_mr m1, m2, mb;
	struct sim_buf buf;
	int st;

	st = reg_copies(&a->pd, page, 1500, &m1);
	full = daemon_maps();
	tap_ok(st == PVO_STATUS_OK && full >= base + 1500 - SLACK,
	       "VM a: an MR of one page 1500 times is registered, 1500 host "
	       "mappings (%s; maps %u -> %u)",
	       pvo_status_name(st), base, full);
	tap_ok(shown("a", "host_mappings") == 1500 &&
		   shown("a", "host_mrs") == 1 &&
		   shown("a", "host_pinned") == 1500ull * PAGE &&
		   shown("a", "max_host_mappings") == MAX_MAPPINGS,
	       "pvo-ctl show: VM a holds 1500 mappings of %u, 1 host MR, "
	       "%u bytes pinned",
	       MAX_MAPPINGS, 1500 * PAGE);
	st = reg_copies(&a->pd, page, 600, &m2);
	tap_ok(st == PVO_STATUS_ENOSPC && daemon_maps() <= full + SLACK &&
		   shown("a", "host_mappings") == 1500,
	       "600 more: ENOSPC at max-host-mappings = %d, no mapping made "
	       "(%s; maps %u)",
	       MAX_MAPPINGS, pvo_status_name(st), daemon_maps());
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&m2);
	st = sim_buf_alloc(&buf, sim_vm_ram(b->vm), sim_vm_va(b->vm, 16 * PAGE),
			   16 * PAGE, 0, SIM_LAYOUT_SCATTER);
	if (st == 0)
		st = sim_reg_mr(&b->pd, &buf, 0, 16 * PAGE,
				PVO_ACCESS_LOCAL_WRITE, &mb);
	tap_ok(st == PVO_STATUS_OK && shown("b", "host_mrs") == 1,
	       "VM b registers its MR meanwhile (%s)", pvo_status_name(st));
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&mb);
	st = sim_dereg_mr(&m1);
	tap_ok(st == PVO_STATUS_OK && shown("a", "host_mappings") == 0 &&
		   shown("a", "host_pinned") == 0 &&
		   daemon_maps() <= base + SLACK,
	       "VM a deregisters: its mappings are given back (maps %u)",
	       daemon_maps());
	st = reg_copies(&a->pd, page, 1500, &m2);
	tap_ok(st == PVO_STATUS_OK, "then 1500 fit again (%s)",
	       pvo_status_name(st));
	/* the new host MR is made while the old one stands */
	if (st == PVO_STATUS_OK) {
		int st2 = rereg_copies(&m2, page, 600);

		st = rereg_copies(&m2, page, 400);
		tap_ok(st2 == PVO_STATUS_ENOSPC && st == PVO_STATUS_OK &&
			   shown("a", "host_mappings") == 400 &&
			   shown("a", "host_mrs") == 1,
		       "REREG_MR to 600 copies: ENOSPC (1500 + 600 at once); "
		       "to 400: the old MR's 1500 are given back (%s, %s)",
		       pvo_status_name(st2), pvo_status_name(st));
		sim_dereg_mr(&m2);
	} else {
		tap_ok(false, "REREG_MR");
	}
}

/* A REG_MR of the n GPAs of gpas[] submitted, not waited for: its
 * chain's head, or -errno. */
struct pending_reg {
	struct sim_vm *vm;
	struct sim_pdir_mem pdir;
	uint64_t req, resp;
	int head;
};

static int reg_submit(struct side *s, const uint64_t *gpas, uint32_t n,
		      struct pending_reg *p)
{
	struct guest_ram *ram = sim_vm_ram(s->vm);
	uint8_t b[sizeof(struct pvo_cmd_hdr) + sizeof(struct pvo_cmd_reg_mr)] =
	    {0};
	struct pvo_cmd_hdr *h = (void *)b;
	struct pvo_cmd_reg_mr *c = (void *)(h + 1);
	struct split_vq *vq = vu_vq(s->vm->fe, PVO_VQ_CTRL);
	struct vq_buf out, in;

	memset(p, 0, sizeof(*p));
	p->vm = s->vm;
	if (sim_pdir_build(ram, gpas, n, &c->pages, &p->pdir) < 0)
		return -ENOMEM;
	p->req = guest_ram_alloc(ram, sizeof(b), 64);
	p->resp = guest_ram_alloc(ram, 64, 64);
	if (p->req == GUEST_RAM_NO_ADDR || p->resp == GUEST_RAM_NO_ADDR)
		return -ENOMEM;
	h->opcode = htole16(PVO_CMD_REG_MR);
	h->ctx = htole32(s->ctx.handle);
	c->pd = htole32(s->pd.handle);
	c->access = htole32(PVO_ACCESS_LOCAL_WRITE);
	c->iova = htole64(0x20000000ull);
	c->length = htole64((uint64_t)n * PAGE);
	guest_ram_write(ram, p->req, b, sizeof(b));
	out = (struct vq_buf){p->req, sizeof(b)};
	in = (struct vq_buf){p->resp, 64};
	p->head = split_vq_add(vq, &out, 1, &in, 1);
	if (p->head < 0)
		return p->head;
	split_vq_kick(vq);
	return p->head;
}

/* Its status once answered (-errno if none came in ms), and the MR. */
static int reg_wait(struct pending_reg *p, int ms, uint32_t *mr)
{
	struct split_vq *vq = vu_vq(p->vm->fe, PVO_VQ_CTRL);
	uint8_t r[64];
	struct pvo_resp_hdr *h = (void *)r;
	struct pvo_resp_reg_mr *m = (void *)(h + 1);
	uint32_t used;
	int ret;

	ret = split_vq_wait(vq, (uint16_t)p->head, p->vm->fe->sock, ms, &used);
	if (ret && ret != -ENOMSG)
		return ret;
	guest_ram_read(sim_vm_ram(p->vm), p->resp, r, sizeof(r));
	*mr = le32toh(m->mr);
	return (int)le32toh(h->status);
}

/* DEREG_MR by handle */
static int dereg_handle(struct side *s, uint32_t mr)
{
	struct pvo_cmd_handle d = {.handle = htole32(mr)};

	return pvo_cmd(s->vm->fe, PVO_CMD_DEREG_MR, 0, s->ctx.handle, &d,
		       sizeof(d), NULL, 0, NULL);
}

/*
 * Pages p, p + 1, p, p + 1, ... (pair: two adjacent pages): n / 2 runs of
 * two, n pages.
 */
static uint64_t *pairs(uint64_t pair, uint32_t n)
{
	uint64_t *gpas = calloc(n, sizeof(*gpas));
	uint32_t i;

	for (i = 0; i < n; i++)
		gpas[i] = pair + (i % 2) * PAGE;
	return gpas;
}

static void test_parts(struct side *a, struct side *b, uint64_t pair)
{
	const uint32_t n = 3800; /* 1900 runs: about 60 turns of mapping */
	uint64_t *gpas = pairs(pair, n);
	struct pending_reg p;
	struct sim_mr mb;
	struct sim_buf buf;
	uint32_t mr = 0;
	int st, stb, early;

	st = reg_submit(a, gpas, n, &p);
	if (st < 0)
		lost("REG_MR not submitted");
	/* VM b, on the same thread, meanwhile */
	stb =
	    sim_buf_alloc(&buf, sim_vm_ram(b->vm), sim_vm_va(b->vm, 16 * PAGE),
			  16 * PAGE, 0, SIM_LAYOUT_SCATTER);
	if (stb == 0)
		stb = sim_reg_mr(&b->pd, &buf, 0, 16 * PAGE,
				 PVO_ACCESS_LOCAL_WRITE, &mb);
	early = reg_wait(&p, 0, &mr);
	st = reg_wait(&p, 20000, &mr);
	tap_ok(st == PVO_STATUS_OK && shown("a", "host_mappings") == n / 2 &&
		   shown("a", "host_pinned") == (uint64_t)n * PAGE &&
		   shown("a", "host_mrs") == 1,
	       "VM a: an MR of %u pages in %u runs is made over several turns "
	       "and pinned by a thread: %u mappings, %u bytes pinned (%s)",
	       n, n / 2, n / 2, n * PAGE, pvo_status_name(st));
	tap_ok(stb == PVO_STATUS_OK && early == -ETIMEDOUT,
	       "VM b's REG_MR, sent after it, is answered before it (%s; "
	       "VM a's then: %s)",
	       pvo_status_name(stb),
	       early == -ETIMEDOUT ? "not yet" : pvo_status_name(early));
	if (stb == PVO_STATUS_OK)
		sim_dereg_mr(&mb);
	if (st == PVO_STATUS_OK)
		dereg_handle(a, mr);
	tap_ok(shown("a", "host_mappings") == 0 &&
		   shown("a", "host_pinned") == 0,
	       "deregistered, VM a holds nothing");
	free(gpas);
}

/* n contiguous pages from first: one mapping, n pages pinned */
static int reg_run(struct sim_pd *pd, uint64_t first, uint32_t n,
		   struct sim_mr *mr)
{
	uint64_t *gpas = calloc(n, sizeof(*gpas));
	uint32_t i;
	int st;

	for (i = 0; i < n; i++)
		gpas[i] = first + (uint64_t)i * PAGE;
	st = reg_pages(pd, gpas, n, mr);
	free(gpas);
	return st;
}

static void test_pinned(struct side *a, uint64_t run)
{
	struct sim_mr m1, m2;
	int st, st2;

	st = reg_run(&a->pd, run, 3000, &m1);
	st2 = reg_run(&a->pd, run, 1500, &m2);
	tap_ok(st == PVO_STATUS_OK && st2 == PVO_STATUS_ENOSPC &&
		   shown("a", "host_pinned") == 3000ull * PAGE,
	       "3000 pages, then 1500 more: ENOSPC at max-pinned = %u (%s, "
	       "%s)",
	       MAX_PINNED, pvo_status_name(st), pvo_status_name(st2));
	if (st2 == PVO_STATUS_OK)
		sim_dereg_mr(&m2);
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&m1);
	st = reg_run(&a->pd, run, 1500, &m2);
	tap_ok(st == PVO_STATUS_OK &&
		   shown("a", "host_pinned") == 1500ull * PAGE,
	       "deregistered, the 1500 fit (%s)", pvo_status_name(st));
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&m2);
}

int main(void)
{
	char dev[64], netdev[16], cfg[1024], err[512];
	static const char *const vms[] = {"a", "b", NULL};
	const char *why = NULL;
	struct pending_reg pend;
	struct sim_buf buf;
	struct side a, b;
	struct sim_mr m;
	unsigned int base;
	uint64_t page, run, pair, *gpas;
	int st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!rxe_setup(dev, sizeof(dev), netdev, sizeof(netdev), &why)) {
		rxe_cleanup();
		printf("1..0 # SKIP %s\n", why);
		return 0;
	}
	tap_plan(17);
	snprintf(mgmt_path, sizeof(mgmt_path), "/tmp/pvo-hvb-%d.mgmt",
		 (int)getpid());
	snprintf(cfg, sizeof(cfg),
		 "[daemon]\nhostverbs-device = %s\nmanagement-socket = %s\n"
		 "[tenant t]\nvni = 7\ntransport = hostverbs\n"
		 "hostverbs-netdev = %s\n"
		 "[vm a]\ntenant = t\nmac = 52:54:00:00:07:01\n"
		 "max-host-mappings = %d\nmax-pinned = %u\n"
		 "[vm b]\ntenant = t\nmac = 52:54:00:00:07:02\n",
		 dev, mgmt_path, netdev, MAX_MAPPINGS, MAX_PINNED);
	if (backend_start_config(&bp, cfg, vms, NULL, 10000, err, sizeof(err)) <
	    0) {
		rxe_cleanup();
		tap_bail("%s", err);
	}
	open_side(&a, "a");
	open_side(&b, "b");
	page = guest_ram_alloc(sim_vm_ram(a.vm), PAGE, PAGE);
	run = guest_ram_alloc(sim_vm_ram(a.vm), 3000 * PAGE, PAGE);
	pair = guest_ram_alloc(sim_vm_ram(a.vm), 2 * PAGE, PAGE);
	if (page == GUEST_RAM_NO_ADDR || run == GUEST_RAM_NO_ADDR ||
	    pair == GUEST_RAM_NO_ADDR)
		lost("guest RAM");
	test_mappings(&a, &b, page);
	test_pinned(&a, run);
	test_parts(&a, &b, pair);

	/* the VM going gives back what its MRs held */
	base = daemon_maps();
	st = reg_copies(&a.pd, page, 1500, &m);
	sim_vm_close(a.vm);
	tap_ok(st == PVO_STATUS_OK && shown_becomes("a", "host_mappings", 0) &&
		   shown("a", "host_mrs") == 0 && daemon_maps() <= base + SLACK,
	       "VM a disconnects holding 1500 mappings: all given back "
	       "(maps %u -> %u)",
	       base, daemon_maps());
	/* and what an MR being made held: its mappings, its thread's pin */
	open_side(&a, "a");
	pair = guest_ram_alloc(sim_vm_ram(a.vm), 2 * PAGE, PAGE);
	gpas = pairs(pair, 3800);
	st = reg_submit(&a, gpas, 3800, &pend);
	free(gpas);
	usleep(20000);
	sim_vm_close(a.vm);
	tap_ok(st >= 0 && shown_becomes("a", "host_mappings", 0) &&
		   shown_becomes("a", "host_pinned", 0) &&
		   daemon_maps() <= base + SLACK,
	       "VM a disconnects while an MR of 3800 pages is being made: "
	       "all given back (maps %u -> %u)",
	       base, daemon_maps());
	st = sim_buf_alloc(&buf, sim_vm_ram(b.vm), sim_vm_va(b.vm, 16 * PAGE),
			   16 * PAGE, 0, SIM_LAYOUT_SCATTER);
	if (st == 0)
		st = sim_reg_mr(&b.pd, &buf, 0, 16 * PAGE,
				PVO_ACCESS_LOCAL_WRITE, &m);
	tap_ok(st == PVO_STATUS_OK, "VM b registers an MR after that (%s)",
	       pvo_status_name(st));
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&m);
	sim_vm_close(b.vm);
	st = backend_stop(&bp, 5000);
	tap_ok(st == 0, "back-end exits cleanly (%s)", backend_describe(&bp));
	tap_ok(backend_sanitizer_report(&bp, err, sizeof(err)) == 0,
	       "no sanitizer report in the back-end's log");
	backend_cleanup(&bp, tap_failures() > 0);
	rxe_cleanup();
	unlink(mgmt_path);
	return tap_done();
}
