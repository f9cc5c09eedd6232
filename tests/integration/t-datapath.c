// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: the verbs data path of pvrdma-overlayd, driven by simulated
 * guests (sim_vm / sim_verbs) over vhost-user, no QEMU involved.
 *
 * One back-end serves four VMs: a and b in tenant blue (the data tests run
 * between them), c in tenant red (isolation: it shares the IP 10.0.0.2
 * with b and owns 10.0.0.3), q in tenant red with tiny quotas. Every
 * transfer checks every byte at the destination and guard bytes around
 * it; every buffer and ring is laid out in physically scattered pages.
 *
 * Environment: PVO_BACKEND (use the ASan/UBSan build), PVO_TEST_TIMEOUT_MS,
 * PVO_TEST_KEEP=1, T_DATAPATH_ONLY=section,section (run a subset).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define GUARD 64
#define GUARD_BYTE 0xd5
#define DATA_LEN (2 * MIB + 64 * KIB) /* per node data buffer */
#define NODE_CQE 1024

static const char config[] = "[tenant blue]\n"
			     "vni = 100\n"
			     "\n"
			     "[tenant red]\n"
			     "vni = 200\n"
			     "\n"
			     "[vm a]\n"
			     "tenant = blue\n"
			     "mac = 52:54:00:00:00:0a\n"
			     "ips = 10.0.0.1\n"
			     "\n"
			     "[vm b]\n"
			     "tenant = blue\n"
			     "mac = 52:54:00:00:00:0b\n"
			     "ips = 10.0.0.2\n"
			     "\n"
			     "[vm c]\n"
			     "tenant = red\n"
			     "mac = 52:54:00:00:00:0c\n"
			     "ips = 10.0.0.3, 10.0.0.2\n"
			     "\n"
			     "[vm q]\n"
			     "tenant = red\n"
			     "mac = 52:54:00:00:00:0d\n"
			     "ips = 10.0.0.9\n"
			     "max-qp = 4\n"
			     "max-cq = 4\n"
			     "max-mr = 4\n"
			     "max-srq = 1\n"
			     "max-ah = 2\n"
			     "max-mr-size = 65536\n";
static const char *const vm_names[] = {"a", "b", "c", "q", NULL};

/*
 * T_DATAPATH_OVERLAY=1: VM b is served by a second back-end ("host 2",
 * VTEP 127.0.0.2) and every a <-> b transfer crosses the overlay transport
 * (RoCEv2 in VXLAN over loopback UDP) instead of the local copy. The same
 * checks then prove the wire protocol: segmentation, PSNs, ACK / NAK,
 * READ responses, atomics, RNR, errors.
 */
static bool overlay;
static struct backend_proc bp2;
static const char *const vm_names_host1[] = {"a", "c", "q", NULL};
static const char *const vm_names_host2[] = {"b", NULL};

/* One side of the tests: a VM's user context with a PD, CQs and a big
 * registered buffer. */
struct node {
	const char *name;
	struct sim_vm *vm;
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq scq, rcq;
	struct sim_buf buf;
	struct sim_mr mr; /* all of buf, every access right */
	int gid_v4;	  /* GID index of the node's first IPv4 address */
};

struct pair {
	struct node *na, *nb;
	struct sim_qp a, b;
	bool made;
};

static struct backend_proc bp;
static struct node A = {.name = "a"}, B = {.name = "b"}, C = {.name = "c"};
/* The GID index connected QPs use: link-local, or over the overlay (which
 * carries RoCEv2 over IPv4 only) the nodes' IPv4 GID (index 1 in all). */
static uint8_t pair_gid(void)
{
	return overlay ? 1 : 0;
}

/* Quick retries so that error paths finish fast. */
static struct sim_conn fast = {
    .timeout = 8, .retry_cnt = 2, .rnr_retry = 2, .min_rnr_timer = 1};
static int timeout_ms = 5000;
static uint8_t *scratch; /* 2 x DATA_LEN host bytes */
static const char *only;

/* ------------------------------------------------------------------ */
/* helpers                                                            */

static void __attribute__((noreturn)) lost(const char *what)
{
	backend_running(&bp);
	tap_diag("back-end %s", backend_describe(&bp));
	backend_dump_log(&bp, 60);
	backend_stop(&bp, 2000);
	backend_cleanup(&bp, true);
	if (overlay) {
		tap_diag("back-end of host 2 %s", backend_describe(&bp2));
		backend_dump_log(&bp2, 60);
		backend_stop(&bp2, 2000);
		backend_cleanup(&bp2, true);
	}
	tap_bail("%s (log kept in %s)", what, bp.dir);
}

static bool section(const char *name)
{
	const char *p;
	size_t n = strlen(name);

	if (!only)
		return true;
	for (p = only; (p = strstr(p, name)); p += n)
		if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	usleep(ms * 1000);
}

/* Byte @i of the pattern @seed: differs per position, so a misplaced
 * page or chunk shows. */
static uint8_t pat(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 32);

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 56);
}

/* Pattern bytes base.. base + len of @seed at @off of @b. */
static void fill_pattern_at(struct sim_buf *b, uint64_t off, uint64_t len,
			    uint32_t seed, uint64_t base)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		scratch[i] = pat(seed, base + i);
	sim_buf_write(b, off, scratch, len);
}

static void fill_pattern(struct sim_buf *b, uint64_t off, uint64_t len,
			 uint32_t seed)
{
	fill_pattern_at(b, off, len, seed, 0);
}

/* Destination area: guard bytes around [off, off + len), filler inside. */
static void prepare_dst(struct sim_buf *b, uint64_t off, uint64_t len)
{
	uint64_t lo = off >= GUARD ? off - GUARD : 0;

	sim_buf_fill(b, lo, GUARD_BYTE, off - lo + len + GUARD);
}

/* Every byte of [off, off + len) is pattern @seed, the GUARD bytes on
 * either side are untouched. */
static bool data_ok(const char *what, struct sim_buf *b, uint64_t off,
		    uint64_t len, uint32_t seed, uint64_t base)
{
	uint64_t lo = off >= GUARD ? off - GUARD : 0, hi = off + len + GUARD;
	uint64_t i, bad = 0, first = ~0ull;
	uint8_t want = 0, got = 0;

	sim_buf_read(b, lo, scratch, hi - lo);
	for (i = lo; i < hi; i++) {
		uint8_t w = i >= off && i < off + len
				? pat(seed, base + i - off)
				: GUARD_BYTE;

		if (scratch[i - lo] != w) {
			if (!bad) {
				first = i;
				want = w;
				got = scratch[i - lo];
			}
			bad++;
		}
	}
	if (bad && what)
		tap_diag(
		    "%s: %llu wrong bytes; first at buffer offset %llu (%s, "
		    "data starts at %llu): want 0x%02x got 0x%02x",
		    what, (unsigned long long)bad, (unsigned long long)first,
		    first < off		 ? "guard before"
		    : first >= off + len ? "guard after"
					 : "data",
		    (unsigned long long)off, want, got);
	return !bad;
}

static bool check_data_at(const char *what, struct sim_buf *b, uint64_t off,
			  uint64_t len, uint32_t seed, uint64_t base)
{
	return tap_ok(data_ok(what, b, off, len, seed, base),
		      "%s: all %llu bytes and the guards are right", what,
		      (unsigned long long)len);
}

static bool check_data(const char *what, struct sim_buf *b, uint64_t off,
		       uint64_t len, uint32_t seed)
{
	return check_data_at(what, b, off, len, seed, 0);
}

/* Checksum of a whole buffer, for "no byte moved" checks. */
static uint64_t buf_sum(struct sim_buf *b)
{
	uint64_t h = 1469598103934665603ull, i;

	sim_buf_read(b, 0, scratch, b->len);
	for (i = 0; i < b->len; i++)
		h = (h ^ scratch[i]) * 1099511628211ull;
	return h;
}

static const char *cqe_str(const struct pvo_cqe *c)
{
	static char buf[2][200];
	static unsigned int slot;
	char *s = buf[slot++ % 2];

	snprintf(s, sizeof(buf[0]),
		 "wr_id 0x%llx %s %s qpn %u len %u flags 0x%x imm 0x%x "
		 "src_qp %u vendor_err %u",
		 (unsigned long long)le64toh(c->wr_id),
		 sim_wc_opcode_name(c->opcode), sim_wc_status_name(c->status),
		 le32toh(c->qpn), le32toh(c->byte_len), c->flags,
		 be32toh(c->imm_data), le32toh(c->src_qp),
		 le32toh(c->vendor_err));
	return s;
}

/* Wait for one CQE; a TAP failure if none came. */
static bool get_cqe(struct sim_cq *cq, struct pvo_cqe *c, const char *what)
{
	if (sim_wait_cq(cq, c, 1, timeout_ms) == 1)
		return true;
	tap_ok(false, "%s: a completion arrives within %d ms", what,
	       timeout_ms);
	memset(c, 0xff, sizeof(*c));
	return false;
}

/* The CQE is @status for @wr_id (and @opcode unless < 0); diag if not. */
static bool cqe_ok(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
		   unsigned int status, const char *what)
{
	bool ok = le64toh(c->wr_id) == wr_id && c->status == status &&
		  (opcode < 0 || c->opcode == opcode);

	if (!ok)
		tap_diag("%s: expected wr_id 0x%llx %s %s, got %s", what,
			 (unsigned long long)wr_id,
			 opcode >= 0 ? sim_wc_opcode_name(opcode) : "",
			 sim_wc_status_name(status), cqe_str(c));
	return ok;
}

static bool cqe_is(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
		   unsigned int status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static bool cqe_is(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
		   unsigned int status, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tap_ok(cqe_ok(c, wr_id, opcode, status, what), "%s: %s%s%s",
		      what, sim_wc_status_name(status), opcode >= 0 ? " " : "",
		      opcode >= 0 ? sim_wc_opcode_name(opcode) : "");
}

/* Wait for one CQE without a TAP line; diag if none. */
static bool wait_cqe(struct sim_cq *cq, struct pvo_cqe *c, const char *what)
{
	if (sim_wait_cq(cq, c, 1, timeout_ms) == 1)
		return true;
	tap_diag("%s: no completion within %d ms", what, timeout_ms);
	memset(c, 0xff, sizeof(*c));
	return false;
}

/* Wait for one CQE and check it. */
static bool expect_cqe(struct sim_cq *cq, uint64_t wr_id, int opcode,
		       unsigned int status, const char *what)
{
	struct pvo_cqe c;

	if (!get_cqe(cq, &c, what))
		return false;
	return cqe_is(&c, wr_id, opcode, status, "%s", what);
}

/* No CQE shows up within @ms. */
static bool expect_no_cqe(struct sim_cq *cq, int ms, const char *what)
{
	struct pvo_cqe c;
	int n = sim_wait_cq(cq, &c, 1, ms);

	if (!tap_ok(n == 0, "%s: no completion within %d ms", what, ms))
		tap_diag("got %s", cqe_str(&c));
	return n == 0;
}

/* Throw away leftovers of a failed test so they do not confuse the next. */
static void drain(struct node *n)
{
	struct pvo_cqe c[64];
	int k, total = 0;

	sleep_ms(5);
	while ((k = sim_poll_cq(&n->scq, c, 64)) > 0)
		total += k;
	while ((k = sim_poll_cq(&n->rcq, c, 64)) > 0)
		total += k;
	if (total)
		tap_diag("%s: dropped %d stray completions", n->name, total);
}

static void drain_all(void)
{
	drain(&A);
	drain(&B);
	drain(&C);
	sim_vm_drop_events(A.vm, 0);
	sim_vm_drop_events(B.vm, 0);
	sim_vm_drop_events(C.vm, 0);
}

static int qp_state(struct sim_qp *qp)
{
	struct pvo_qp_attr a;
	int st = sim_query_qp(qp, &a);

	if (st != PVO_STATUS_OK)
		return -1000 - st;
	return (int)le32toh(a.qp_state);
}

static bool expect_state(struct sim_qp *qp, int state, const char *what)
{
	int got = qp_state(qp);

	if (!tap_ok(got == state, "%s: QP is %s", what,
		    sim_qp_state_name(state)))
		tap_diag("QUERY_QP says %s",
			 got >= 0 ? sim_qp_state_name(got) : qp->ctx->vm->err);
	return got == state;
}

static struct sim_qp_init qp_init(struct node *n, uint8_t type)
{
	struct sim_qp_init in = {
	    .type = type,
	    .send_cq = &n->scq,
	    .recv_cq = &n->rcq,
	    .sq_entries = 256,
	    .rq_entries = 256,
	    .max_send_sge = 16,
	    .max_recv_sge = 16,
	    .max_inline = 256,
	};

	return in;
}

/*
 * Two connected QPs of @type between nodes @na and @nb, through GID index
 * @gid (0 = link-local, else the nodes' IPv4 GID); @ca / @cb may be NULL.
 */
static bool pair_make_ex(struct pair *p, struct node *na, struct node *nb,
			 uint8_t type, bool v4, const struct sim_conn *ca,
			 const struct sim_conn *cb)
{
	struct sim_qp_init ia = qp_init(na, type), ib = qp_init(nb, type);
	struct sim_conn da = {0}, db = {0};
	struct sim_peer pa, pb;
	int st;

	memset(p, 0, sizeof(*p));
	p->na = na;
	p->nb = nb;
	if (ca)
		da = *ca;
	if (cb)
		db = *cb;
	da.sgid_index = v4 ? na->gid_v4 : 0;
	db.sgid_index = v4 ? nb->gid_v4 : 0;
	st = sim_create_qp(&na->pd, &ia, &p->a);
	if (st != PVO_STATUS_OK) {
		tap_ok(false, "create %s QP on %s",
		       type == PVO_QPT_UC ? "UC" : "RC", na->name);
		tap_diag("%s", na->vm->err);
		return false;
	}
	st = sim_create_qp(&nb->pd, &ib, &p->b);
	if (st != PVO_STATUS_OK) {
		tap_ok(false, "create QP on %s", nb->name);
		tap_diag("%s", nb->vm->err);
		sim_destroy_qp(&p->a);
		return false;
	}
	sim_qp_peer(&p->b, db.sgid_index, &pb);
	sim_qp_peer(&p->a, da.sgid_index, &pa);
	st = sim_qp_connect(&p->a, &da, &pb);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&p->b, &db, &pa);
	if (st != PVO_STATUS_OK) {
		tap_ok(false, "connect QPs %u (%s) <-> %u (%s)", p->a.qpn,
		       na->name, p->b.qpn, nb->name);
		tap_diag("%s / %s", na->vm->err, nb->vm->err);
		sim_destroy_qp(&p->a);
		sim_destroy_qp(&p->b);
		return false;
	}
	p->made = true;
	return true;
}

static bool pair_make(struct pair *p, uint8_t type, const struct sim_conn *ca,
		      const struct sim_conn *cb)
{
	/* the overlay carries RoCEv2 over IPv4 only */
	return pair_make_ex(p, &A, &B, type, overlay, ca, cb);
}

static void pair_destroy(struct pair *p)
{
	if (!p->made)
		return;
	if (sim_destroy_qp(&p->a) != PVO_STATUS_OK)
		tap_diag("destroy QP: %s", p->na->vm->err);
	if (sim_destroy_qp(&p->b) != PVO_STATUS_OK)
		tap_diag("destroy QP: %s", p->nb->vm->err);
	p->made = false;
	drain(p->na);
	drain(p->nb);
}

static struct sim_sge sge_of(struct node *n, uint64_t off, uint32_t len)
{
	struct sim_sge s = {
	    .addr = n->buf.va + off, .length = len, .lkey = n->mr.key};

	return s;
}

/* @off rounded up so that the buffer's virtual address there is 8-byte
 * aligned (the buffers start at page offset 0x123). */
static uint64_t al8(struct node *n, uint64_t off)
{
	return ((n->buf.va + off + 7) & ~7ull) - n->buf.va;
}

static bool post_recv1(struct sim_qp *qp, struct node *n, uint64_t wr_id,
		       uint64_t off, uint32_t len)
{
	struct sim_sge s = sge_of(n, off, len);
	int ret = sim_post_recv(qp, wr_id, &s, 1);

	if (ret)
		tap_diag("post_recv: %s", strerror(-ret));
	return ret == 0;
}

static bool post1(struct sim_qp *qp, const struct sim_wr *wr)
{
	int ret = sim_post_send(qp, wr, 1);

	if (ret)
		tap_diag("post_send: %s", strerror(-ret));
	return ret == 0;
}

/* A signaled WR with one SGE of node @n. */
static struct sim_wr wr1(uint64_t wr_id, uint8_t opcode, struct node *n,
			 uint64_t off, uint32_t len)
{
	struct sim_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = opcode;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 1;
	w.sge[0] = sge_of(n, off, len);
	return w;
}

static struct sim_wr write_wr(uint64_t id, uint64_t loff, uint32_t len,
			      uint64_t raddr, uint32_t rkey)
{
	struct sim_wr w = wr1(id, PVO_WR_RDMA_WRITE, &A, loff, len);

	w.remote_addr = raddr;
	w.rkey = rkey;
	return w;
}

/* After a CQE for every WQE posted, the device must have consumed them
 * all (contract-questions, provider 3: cons passes a WQE before its CQE). */
static void check_sq_consumed(struct sim_qp *qp, const char *what)
{
	uint32_t left = sim_sq_outstanding(qp);

	if (!tap_ok(left == 0, "%s: SQ cons has passed every completed WQE",
		    what))
		tap_diag("%u WQEs still not consumed", left);
}

/* ------------------------------------------------------------------ */
/* setup                                                              */

static bool node_open(struct node *n, const char *ipv4)
{
	struct sim_vm_opts o = {
	    .name = n->name,
	    .socket_path = backend_vm_socket(
		overlay && !strcmp(n->name, "b") ? &bp2 : &bp, n->name),
	    .ram_size = 64 * MIB,
	};
	char err[512];
	int st;

	n->vm = sim_vm_open(&o, err, sizeof(err));
	if (!tap_ok(n->vm != NULL,
		    "%s: session, config space v%d, event buffers, GIDs, "
		    "kernel doorbell page",
		    n->name, PVO_INTERFACE_VERSION)) {
		tap_diag("%s", err);
		return false;
	}
	n->gid_v4 = sim_vm_gid_index_ipv4(n->vm, ipv4);
	if (!tap_ok(n->gid_v4 > 0, "%s: GID of %s installed (index %d)",
		    n->name, ipv4, n->gid_v4))
		return false;
	st = sim_ctx_open(n->vm, &n->ctx);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"%s: user context with a doorbell record page",
			n->name)) {
		tap_diag("%s", n->vm->err);
		return false;
	}
	st = sim_alloc_pd(&n->ctx, &n->pd);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&n->ctx, NODE_CQE, &n->scq);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&n->ctx, NODE_CQE, &n->rcq);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "%s: PD and two %u-entry CQs",
			n->name, NODE_CQE)) {
		tap_diag("%s", n->vm->err);
		return false;
	}
	st = sim_buf_alloc(&n->buf, sim_vm_ram(n->vm),
			   sim_vm_va(n->vm, DATA_LEN + PVO_PAGE_SIZE), DATA_LEN,
			   0x123, SIM_LAYOUT_SCATTER);
	if (st < 0)
		tap_bail("%s: no guest RAM for a %llu-byte buffer", n->name,
			 (unsigned long long)DATA_LEN);
	st = sim_reg_mr(&n->pd, &n->buf, 0, DATA_LEN,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC,
			&n->mr);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"%s: REG_MR of %llu bytes in %u scattered pages "
			"(iova 0x%llx)",
			n->name, (unsigned long long)DATA_LEN,
			n->buf.pages.npages, (unsigned long long)n->buf.va)) {
		tap_diag("%s", n->vm->err);
		return false;
	}
	tap_ok(n->mr.key != 0 && n->mr.key != PVO_LOCAL_DMA_LKEY,
	       "%s: MR key 0x%x is not 0 or the local DMA lkey", n->name,
	       n->mr.key);
	return true;
}

/*
 * The config text of one host: daemon keys, then the sections of the VMs
 * it serves from config[], then the other host's VM as a remote, reached
 * at via ("IP PORT"): the other VTEP, or a lossy link (pvo-impair) that
 * T_DATAPATH_VIA="IP:PORT,IP:PORT" names for host 1 and host 2.
 */
static char *host_config(int host, unsigned int port, const char *via)
{
	const char *vm_a = strstr(config, "[vm a]");
	const char *vm_b = strstr(config, "[vm b]");
	const char *vm_c = strstr(config, "[vm c]");
	char vtep[64], *out;
	unsigned int vport = port;

	snprintf(vtep, sizeof(vtep), "127.0.0.%d", host == 1 ? 2 : 1);
	if (via && sscanf(via, "%63[0-9.] %u", vtep, &vport) != 2)
		tap_bail("T_DATAPATH_VIA: expected IP:PORT,IP:PORT");
	if (host == 1)
		/* everything but [vm b]; b is remote */
		return asprintf(&out,
				"vtep = 127.0.0.1\nvxlan-port = %u\n\n%.*s%s\n"
				"[remote b]\ntenant = blue\n"
				"mac = 52:54:00:00:00:0b\nips = 10.0.0.2\n"
				"vtep = %s\nvtep-port = %u\n",
				port, (int)(vm_b - config), config, vm_c, vtep,
				vport) < 0
			   ? NULL
			   : out;
	/* the tenants and [vm b]; a is remote */
	return asprintf(&out,
			"vtep = 127.0.0.2\nvxlan-port = %u\n\n%.*s%.*s\n"
			"[remote a]\ntenant = blue\n"
			"mac = 52:54:00:00:00:0a\nips = 10.0.0.1\n"
			"vtep = %s\nvtep-port = %u\n",
			port, (int)(vm_a - config), config, (int)(vm_c - vm_b),
			vm_b, vtep, vport) < 0
		   ? NULL
		   : out;
}

static int start_two_hosts(const char *const *args, char *err, size_t len)
{
	const char *via = getenv("T_DATAPATH_VIA");
	unsigned int port = 20000 + getpid() % 20000, p1, p2;
	char ip1[64], ip2[64], via1[80], via2[80], *c1, *c2;
	int ret;

	if (getenv("T_DATAPATH_PORT"))
		port = atoi(getenv("T_DATAPATH_PORT"));
	if (via) {
		if (sscanf(via, "%63[0-9.]:%u,%63[0-9.]:%u", ip1, &p1, ip2,
			   &p2) != 4)
			tap_bail("T_DATAPATH_VIA: expected IP:PORT,IP:PORT");
		snprintf(via1, sizeof(via1), "%s %u", ip1, p1);
		snprintf(via2, sizeof(via2), "%s %u", ip2, p2);
	}
	c1 = host_config(1, port, via ? via1 : NULL);
	c2 = host_config(2, port, via ? via2 : NULL);

	if (!c1 || !c2)
		tap_bail("out of memory");
	ret = backend_start_config(&bp, c1, vm_names_host1, args, 10000, err,
				   len);
	if (!ret)
		ret = backend_start_config(&bp2, c2, vm_names_host2, args,
					   10000, err, len);
	free(c1);
	free(c2);
	return ret;
}

static void test_setup(void)
{
	/* T_DATAPATH_BUSY_POLL=N: the back-end in latency mode */
	const char *busy = getenv("T_DATAPATH_BUSY_POLL");
	const char *args[] = {busy ? "--busy-poll-us" : NULL, busy, NULL};
	struct pvo_resp_query_device *d;
	struct sim_ctx tmp;
	char err[512];
	int ret, st;

	if (overlay) {
		ret = start_two_hosts(args, err, sizeof(err));
		fast.sgid_index = pair_gid();
	}
	else
		ret = backend_start_config(&bp, config, vm_names, args, 10000,
					   err, sizeof(err));
	if (!tap_ok(ret == 0, "back-end serves VMs a, b (tenant blue), c, q "
			      "(tenant red) from one config file")) {
		tap_diag("%s", err);
		backend_dump_log(&bp, 40);
		tap_bail("cannot run the back-end: %s", err);
	}
	tap_diag("back-end %s, config %s", bp.binary, bp.config_path);
	if (!node_open(&A, "10.0.0.1") || !node_open(&B, "10.0.0.2") ||
	    !node_open(&C, "10.0.0.3"))
		lost("the data path cannot be set up, nothing else can run");

	d = &A.vm->dev;
	tap_ok(
	    le32toh(d->max_qp_wr) == 16384 && le32toh(d->max_send_sge) == 16 &&
		le32toh(d->max_recv_sge) == 16 &&
		le32toh(d->max_inline_data) == 256 &&
		le32toh(d->max_cqe) == 65536 && le32toh(d->max_srq_wr) == 16384,
	    "QUERY_DEVICE advertises max_qp_wr 16384, max_sge 16, "
	    "max_inline 256, max_cqe 65536, max_srq_wr 16384 (got %u, "
	    "%u/%u, %u, %u, %u)",
	    le32toh(d->max_qp_wr), le32toh(d->max_send_sge),
	    le32toh(d->max_recv_sge), le32toh(d->max_inline_data),
	    le32toh(d->max_cqe), le32toh(d->max_srq_wr));
	tap_ok(le32toh(d->atomic_cap) >= 1, "atomics are advertised (cap %u)",
	       le32toh(d->atomic_cap));

	/* doorbell record pages */
	st = pvo_set_db_ring(A.vm->fe, A.ctx.handle,
			     A.ctx.db_page.gpa[0] + PVO_PAGE_SIZE);
	TAP_STATUS(st, PVO_STATUS_EBUSY,
		   "SET_DB_RING a second time for a context -> EBUSY");
	st = pvo_set_db_ring(A.vm->fe, PVO_CTX_KERNEL, A.ctx.db_page.gpa[0]);
	TAP_STATUS(st, PVO_STATUS_EBUSY,
		   "SET_DB_RING a second time for the kernel -> EBUSY");
	memset(&tmp, 0, sizeof(tmp));
	st = pvo_alloc_ucontext(A.vm->fe, &tmp.handle, &tmp.db_queue);
	if (TAP_STATUS(st, PVO_STATUS_OK, "a spare user context")) {
		st = pvo_set_db_ring(A.vm->fe, tmp.handle,
				     sim_vm_ram(A.vm)->size);
		TAP_STATUS(st, PVO_STATUS_EFAULT,
			   "SET_DB_RING at the end of guest RAM -> EFAULT");
		st = pvo_set_db_ring(A.vm->fe, tmp.handle,
				     sim_vm_ram(A.vm)->size - 2048);
		tap_ok(st > PVO_STATUS_OK,
		       "SET_DB_RING on a page sticking out of guest RAM is "
		       "refused (%s)",
		       pvo_status_name(st));
		st = pvo_set_db_ring(A.vm->fe, tmp.handle, 0x200123);
		tap_ok(st > PVO_STATUS_OK,
		       "SET_DB_RING at an unaligned address is refused (%s)",
		       pvo_status_name(st));
		st = pvo_set_db_ring(A.vm->fe, 0x7ffff00, 0x200000);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "SET_DB_RING for a context that does not exist -> "
			   "ENOENT");
		pvo_dealloc_ucontext(A.vm->fe, tmp.handle);
	}
}

/* ------------------------------------------------------------------ */
/* transfers                                                          */

static const uint32_t sizes[] = {1,	2,     3,      63,     64,   65,
				 1000,	4095,  4096,   4097,   8191, 12289,
				 65536, 65539, 262147, 1048576};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

enum xfer_kind { X_SEND, X_SEND_IMM, X_WRITE, X_WRITE_IMM, X_READ };

static const char *const xfer_names[] = {"SEND", "SEND_WITH_IMM", "RDMA_WRITE",
					 "RDMA_WRITE_WITH_IMM", "RDMA_READ"};

static uint8_t inline_buf[256];

static const char *qpt_name(uint8_t t)
{
	return t == PVO_QPT_RC ? "RC" : t == PVO_QPT_UC ? "UC" : "UD";
}

/*
 * One transfer of @len bytes on pair @p (a is the requester). SEND and
 * WRITE move a's buf[so..] to b's buf[doff..]; READ moves b's buf[so..]
 * into a's buf[doff..]. Checks both completions, every byte and the
 * guards; one TAP line.
 */
/* Polls until the pattern is in place (or the timeout passes). */
static void wait_data(struct sim_buf *b, uint64_t off, uint64_t len,
		      uint32_t seed)
{
	int waited;

	for (waited = 0; waited < timeout_ms; waited += 2) {
		if (data_ok(NULL, b, off, len, seed, 0))
			return;
		usleep(2000);
	}
}

static bool xfer(struct pair *p, enum xfer_kind k, uint32_t len, uint64_t so,
		 uint64_t doff, bool inl, uint32_t seed)
{
	struct node *na = p->na, *nb = p->nb;
	struct node *src = k == X_READ ? nb : na, *dst = k == X_READ ? na : nb;
	bool recv = k == X_SEND || k == X_SEND_IMM || k == X_WRITE_IMM;
	const uint64_t imm_off = DATA_LEN - 8 * KIB;
	static const uint8_t wc_op[] = {PVO_WC_SEND, PVO_WC_SEND,
					PVO_WC_RDMA_WRITE, PVO_WC_RDMA_WRITE,
					PVO_WC_RDMA_READ};
	static const uint8_t wr_op[] = {
	    PVO_WR_SEND, PVO_WR_SEND_WITH_IMM, PVO_WR_RDMA_WRITE,
	    PVO_WR_RDMA_WRITE_WITH_IMM, PVO_WR_RDMA_READ};
	uint32_t imm = 0xa5000000u | seed;
	struct pvo_cqe c;
	struct sim_wr w;
	char what[200];
	bool ok = true;

	snprintf(what, sizeof(what), "%s %s%s %u B (src +%llu, dst +%llu)",
		 qpt_name(p->a.type), inl ? "inline " : "", xfer_names[k], len,
		 (unsigned long long)so, (unsigned long long)doff);
	fill_pattern(&src->buf, so, len, seed);
	prepare_dst(&dst->buf, doff, len);
	if (k == X_WRITE_IMM) {
		prepare_dst(&nb->buf, imm_off, 0);
		ok &= post_recv1(&p->b, nb, 0x5000 + seed, imm_off, 256);
	} else if (recv) {
		ok &=
		    post_recv1(&p->b, nb, 0x5000 + seed, doff, len + GUARD / 2);
	}
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x6000 + seed;
	w.opcode = wr_op[k];
	w.flags = PVO_WQE_F_SIGNALED;
	w.imm = imm;
	if (k == X_READ) {
		w.num_sge = 1;
		w.sge[0] = sge_of(na, doff, len);
		w.remote_addr = nb->mr.iova + so;
		w.rkey = nb->mr.key;
	} else {
		if (inl) {
			sim_buf_read(&na->buf, so, inline_buf, len);
			w.inline_data = inline_buf;
			w.inline_len = len;
		} else {
			w.num_sge = 1;
			w.sge[0] = sge_of(na, so, len);
		}
		w.remote_addr = nb->mr.iova + doff;
		w.rkey = nb->mr.key;
	}
	if (!post1(&p->a, &w))
		return tap_ok(false, "%s: posted", what);
	if (wait_cqe(&na->scq, &c, what))
		ok &= cqe_ok(&c, w.wr_id, wc_op[k], PVO_WC_SUCCESS, what);
	else
		ok = false;
	/* contract: cons passes a WQE before its CQE is published */
	if (sim_sq_outstanding(&p->a)) {
		tap_diag("%s: SQ cons lags its completion", what);
		ok = false;
	}
	if (recv && wait_cqe(&nb->rcq, &c, what)) {
		int op =
		    k == X_WRITE_IMM ? PVO_WC_RECV_RDMA_WITH_IMM : PVO_WC_RECV;
		bool imm_ok = k == X_SEND ? !(c.flags & PVO_WC_F_IMM)
					  : (c.flags & PVO_WC_F_IMM) &&
						be32toh(c.imm_data) == imm;
		bool good =
		    cqe_ok(&c, 0x5000 + seed, op, PVO_WC_SUCCESS, what) &&
		    le32toh(c.byte_len) == len && le32toh(c.qpn) == p->b.qpn &&
		    imm_ok;

		if (p->b.rq_prod !=
		    le32toh(sim_load_acquire(&p->b.rq.hdr->cons))) {
			tap_diag("%s: RQ cons lags its completion", what);
			good = false;
		}
		if (!good)
			tap_diag("%s: responder completion should be %s, "
				 "byte_len %u, qpn %u%s; got %s",
				 what, sim_wc_opcode_name(op), len, p->b.qpn,
				 k == X_SEND ? ", no imm" : ", imm",
				 cqe_str(&c));
		ok &= good;
	} else if (recv) {
		ok = false;
	}
	/* A UC WRITE completes when it has left; across the overlay the
	 * other host may still be placing it (no ACK, as on the wire). */
	if (overlay && p->a.type == PVO_QPT_UC && k == X_WRITE)
		wait_data(&dst->buf, doff, len, seed);
	ok &= data_ok(what, &dst->buf, doff, len, seed, 0);
	if (k == X_WRITE_IMM)
		ok &= data_ok("the receive buffer of a WRITE_WITH_IMM",
			      &nb->buf, imm_off, 0, 0, 0);
	return tap_ok(ok, "%s", what);
}

/* Unaligned, page-crossing source and destination offsets for size k. */
static uint64_t src_off(unsigned int k)
{
	return GUARD + (k * 1237 + 1) % PVO_PAGE_SIZE;
}

static uint64_t dst_off(unsigned int k)
{
	return GUARD + (k * 2731 + 4091) % PVO_PAGE_SIZE;
}

/*
 * Overlay: the multi-packet WRITEs (host 1) and READ responses (host 2)
 * went out in GSO runs, the shorter middle packets padded with an
 * Ethernet trailer, and the transfers checked every byte across them.
 */
static void test_gso_padding(void)
{
	struct backend_proc *hosts[] = {&bp, &bp2};
	const char *what[] = {"WRITE", "READ response"};
	char line[1024];
	int h;

	for (h = 0; h < 2; h++) {
		bool got = backend_mgmt_line(hosts[h], "daemon", line,
					     sizeof(line));

		if (got && strstr(line, " gso=off")) {
			tap_skip(1, h ? "host 2: UDP GSO is off here"
				      : "host 1: UDP GSO is off here");
			continue;
		}
		tap_ok(got && backend_field(line, " gso_padded=") > 0,
		       "host %d padded the middle packets of a %s to keep "
		       "its GSO run (%s)",
		       h + 1, what[h], got ? line : "no answer on mgmt");
	}
}

/*
 * Overlay: the management socket serves each client from the main loop as
 * its bytes come. A client stalled in the middle of its request line holds
 * up neither the data path nor another client, and gets its answer once
 * the line ends. Clients beyond the daemon's limit, and lines longer than
 * it reads, are told so.
 */
static void test_mgmt_clients(void)
{
	static char buf[65536];
	char line[1024], big[600];
	int stalled, more[16], fd, i;
	unsigned int n = 0;
	struct pair p;
	bool ok;

	stalled = backend_mgmt_connect(&bp);
	if (!tap_ok(stalled >= 0 && write(stalled, "sh", 2) == 2,
		    "a management client connects and sends half a line"))
		return;
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		ok = xfer(&p, X_SEND, 65536, src_off(3), dst_off(3), false,
			  1200);
		ok &= xfer(&p, X_WRITE, 4097, src_off(4), dst_off(4), false,
			   1201);
		pair_destroy(&p);
		tap_ok(ok, "transfers run while that client stalls");
	}
	ok = backend_mgmt_line(&bp, "daemon", line, sizeof(line));
	tap_ok(ok, "another client's show is answered meanwhile (%s)",
	       ok ? line : "no answer");
	ok = send(stalled, "ow\n", 3, MSG_NOSIGNAL) == 3;
	backend_mgmt_read(stalled, buf, sizeof(buf));
	close(stalled);
	n = strlen(buf);
	tap_ok(ok && strstr(buf, "\ndaemon ") && n >= 3 &&
		   !strcmp(buf + n - 3, "ok\n"),
	       "the stalled client's show is answered once its line ends "
	       "(%u bytes%s)",
	       n, n >= 3 && !strcmp(buf + n - 3, "ok\n") ? ", ok" : "");

	for (i = 0; i < 16; i++)
		more[i] = backend_mgmt_connect(&bp);
	fd = backend_mgmt_connect(&bp);
	buf[0] = '\0';
	if (fd >= 0)
		backend_mgmt_read(fd, buf, sizeof(buf));
	close(fd);
	buf[strcspn(buf, "\n")] = '\0';
	tap_ok(strstr(buf, "error: 16 management connections are open") != NULL,
	       "a 17th open management connection is refused with a reason "
	       "(%s)",
	       buf);
	for (i = 0; i < 16; i++)
		if (more[i] >= 0)
			close(more[i]);

	/* (the daemon reaps those 16 as their ends close, in its own time) */
	memset(big, 'x', sizeof(big));
	for (i = 0; i < timeout_ms; i += 10) {
		fd = backend_mgmt_connect(&bp);
		buf[0] = '\0';
		if (fd >= 0 && send(fd, big, sizeof(big), MSG_NOSIGNAL) ==
				   (ssize_t)sizeof(big))
			backend_mgmt_read(fd, buf, sizeof(buf));
		close(fd);
		if (!strstr(buf, "management connections are open"))
			break;
		usleep(10000);
	}
	buf[strcspn(buf, "\n")] = '\0';
	tap_ok(!strcmp(buf, "error: request line longer than 512 bytes"),
	       "a request line over 512 bytes is refused (%s)", buf);
	ok = backend_mgmt_line(&bp, "daemon", line, sizeof(line));
	tap_ok(ok, "the management socket still answers");
}

static void test_rc_transfers(void)
{
	static const enum xfer_kind kinds[] = {X_SEND, X_SEND_IMM, X_WRITE,
					       X_WRITE_IMM, X_READ};
	unsigned int i, k, fails = 0;
	struct pair p;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	tap_diag("RC QPs %u (a) <-> %u (b), %s GIDs", p.a.qpn, p.b.qpn,
		 overlay ? "IPv4" : "link-local");
	{
		struct pvo_qp_attr q;
		int st = sim_query_qp(&p.a, &q);

		tap_ok(
		    st == PVO_STATUS_OK && le32toh(q.qp_state) == PVO_QPS_RTS &&
			le32toh(q.dest_qp_num) == p.b.qpn &&
			le32toh(q.path_mtu) == A.vm->port.active_mtu &&
			!memcmp(q.av.dgid, B.vm->gid[overlay ? B.gid_v4 : 0],
				16) &&
			le32toh(q.max_send_wr) >= 255 &&
			le32toh(q.max_recv_wr) >= 255 &&
			le32toh(q.max_send_sge) >= 16 &&
			le32toh(q.max_inline_data) >= 256 && q.retry_cnt == 7 &&
			q.rnr_retry == 7 && q.timeout == 14 &&
			q.max_rd_atomic == 16 && q.max_dest_rd_atomic == 16,
		    "QUERY_QP: RTS, dest QPN %u, path MTU, dgid, caps, "
		    "timers as set (%s; state %u dest %u mtu %u send_wr "
		    "%u recv_wr %u sge %u inline %u retry %u rnr %u "
		    "timeout %u rd_atom %u/%u)",
		    p.b.qpn, pvo_status_name(st), le32toh(q.qp_state),
		    le32toh(q.dest_qp_num), le32toh(q.path_mtu),
		    le32toh(q.max_send_wr), le32toh(q.max_recv_wr),
		    le32toh(q.max_send_sge), le32toh(q.max_inline_data),
		    q.retry_cnt, q.rnr_retry, q.timeout, q.max_rd_atomic,
		    q.max_dest_rd_atomic);
	}
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		for (k = 0; k < NSIZES; k++) {
			if (!xfer(&p, kinds[i], sizes[k], src_off(k),
				  dst_off(k), false, i * 100 + k))
				fails++;
			if (fails > 10)
				break;
		}
	}
	check_sq_consumed(&p.a, "RC transfers");
	expect_no_cqe(&B.rcq, 20, "RC transfers: nothing else on b's CQ");
	expect_no_cqe(&A.scq, 0, "RC transfers: nothing else on a's CQ");
	pair_destroy(&p);

	/* the same over the IPv4 GIDs, a few sizes */
	if (!pair_make_ex(&p, &A, &B, PVO_QPT_RC, true, NULL, NULL))
		return;
	for (k = 0; k < NSIZES; k += 5)
		xfer(&p, X_WRITE, sizes[k], src_off(k), dst_off(k), false,
		     1000 + k);
	xfer(&p, X_SEND, 4097, 7, 4095, false, 1100);
	xfer(&p, X_READ, 65539, 4095, 3, false, 1101);
	pair_destroy(&p);
}

static void test_rc_inline(void)
{
	static const uint32_t isz[] = {1, 17, 64, 200, 255, 256};
	struct pair p;
	unsigned int k;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	for (k = 0; k < sizeof(isz) / sizeof(isz[0]); k++) {
		xfer(&p, X_SEND, isz[k], src_off(k), dst_off(k), true,
		     2000 + k);
		xfer(&p, X_WRITE, isz[k], src_off(k), dst_off(k), true,
		     2100 + k);
		xfer(&p, X_WRITE_IMM, isz[k], src_off(k), dst_off(k), true,
		     2200 + k);
	}
	pair_destroy(&p);
}

static void test_rc_atomics(void)
{
	const uint64_t roff = al8(&B, 4096 * 3 + 8), loff = al8(&A, 4096 * 5);
	uint64_t v0 = 0x1122334455667788ull, v1 = 0x0badc0ffee0ddf00ull;
	uint64_t got, remote;
	struct sim_wr w;
	struct pair p;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	sim_buf_write(&B.buf, roff, &v0, 8);
	sim_buf_fill(&A.buf, loff, 0, 8);

	w = wr1(0x7001, PVO_WR_ATOMIC_CMP_AND_SWP, &A, loff, 8);
	w.remote_addr = B.mr.iova + roff;
	w.rkey = B.mr.key;
	w.compare_add = v0;
	w.swap = v1;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7001, PVO_WC_COMP_SWAP, PVO_WC_SUCCESS,
		   "CMP_AND_SWP with a matching compare");
	sim_buf_read(&A.buf, loff, &got, 8);
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(got == v0 && remote == v1,
	       "  ... returns the old value 0x%llx (got 0x%llx) and swaps in "
	       "0x%llx (remote now 0x%llx)",
	       (unsigned long long)v0, (unsigned long long)got,
	       (unsigned long long)v1, (unsigned long long)remote);

	w.wr_id = 0x7002;
	w.compare_add = v0; /* no longer matches */
	w.swap = 42;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7002, PVO_WC_COMP_SWAP, PVO_WC_SUCCESS,
		   "CMP_AND_SWP with a stale compare");
	sim_buf_read(&A.buf, loff, &got, 8);
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(got == v1 && remote == v1,
	       "  ... returns the current value and leaves it (0x%llx, "
	       "remote 0x%llx)",
	       (unsigned long long)got, (unsigned long long)remote);

	w = wr1(0x7003, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, loff, 8);
	w.remote_addr = B.mr.iova + roff;
	w.rkey = B.mr.key;
	w.compare_add = 0x1000000001ull;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7003, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "FETCH_AND_ADD");
	sim_buf_read(&A.buf, loff, &got, 8);
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(got == v1 && remote == v1 + 0x1000000001ull,
	       "  ... returns 0x%llx (got 0x%llx), remote is the sum "
	       "(0x%llx)",
	       (unsigned long long)v1, (unsigned long long)got,
	       (unsigned long long)remote);

	/* the add wraps at 64 bits */
	remote = ~0ull;
	sim_buf_write(&B.buf, roff, &remote, 8);
	w.wr_id = 0x7004;
	w.compare_add = 2;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x7004, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "FETCH_AND_ADD across 2^64");
	sim_buf_read(&B.buf, roff, &remote, 8);
	tap_ok(remote == 1, "  ... wraps to 1 (got 0x%llx)",
	       (unsigned long long)remote);

	/* two QPs adding to one counter, interleaved */
	{
		struct pair q;
		struct sim_wr ws[50];
		struct pvo_cqe c[64];
		unsigned int i, got = 0;

		if (pair_make(&q, PVO_QPT_RC, NULL, NULL)) {
			remote = 0;
			sim_buf_write(&B.buf, roff, &remote, 8);
			for (i = 0; i < 50; i++) {
				ws[i] =
				    wr1(0x7100 + i, PVO_WR_ATOMIC_FETCH_AND_ADD,
					&A, al8(&A, 4096 * 6 + 8 * i), 8);
				ws[i].remote_addr = B.mr.iova + roff;
				ws[i].rkey = B.mr.key;
				ws[i].compare_add = 3;
			}
			sim_post_send(&p.a, ws, 25);
			sim_post_send(&q.a, ws + 25, 25);
			sim_post_send(&p.a, ws, 25);
			sim_post_send(&q.a, ws + 25, 25);
			while (got < 100) {
				int n = sim_wait_cq(&A.scq, c, 64, timeout_ms);

				if (n <= 0)
					break;
				for (i = 0; i < (unsigned int)n; i++)
					if (c[i].status != PVO_WC_SUCCESS)
						tap_diag("%s", cqe_str(&c[i]));
				got += n;
			}
			sim_buf_read(&B.buf, roff, &remote, 8);
			tap_ok(got == 100 && remote == 300,
			       "100 FETCH_AND_ADDs of 3 from two QPs: 100 "
			       "completions, counter 300 (%u, %llu)",
			       got, (unsigned long long)remote);
			pair_destroy(&q);
		}
	}
	pair_destroy(&p);
}

/* Several SGEs on both sides, from two MRs, one of them across the two
 * guest RAM regions. */
static void test_rc_sges(void)
{
	static const uint32_t glen[16] = {1,  4095, 3,	  4097, 100, 1,
					  64, 65,   8000, 7,	512, 33,
					  2,  4096, 999,  5};
	static const uint32_t slen[5] = {3000, 1, 9000, 4097, 6000};
	uint64_t goff[16], soff[5], total = 0, pos, xpos, stotal = 0;
	struct sim_buf xb;
	struct sim_mr xmr;
	struct pvo_cqe c;
	struct sim_sge rs[5];
	struct sim_wr w;
	struct pair p;
	unsigned int i;
	bool ok;
	int st;

	st = sim_buf_alloc(&xb, sim_vm_ram(A.vm),
			   sim_vm_va(A.vm, 64 * KIB + PVO_PAGE_SIZE), 64 * KIB,
			   0x777, SIM_LAYOUT_STRADDLE);
	if (!tap_ok(st == 0, "a 64 KiB buffer across the guest RAM region "
			     "boundary"))
		return;
	st = sim_reg_mr(&A.pd, &xb, 0, 64 * KIB,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ |
			    PVO_ACCESS_REMOTE_WRITE,
			&xmr);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "REG_MR of it")) {
		tap_diag("%s", A.vm->err);
		sim_buf_free(&xb);
		return;
	}
	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		goto out;

	/* gather: 16 SGEs alternating between the two MRs */
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8001;
	w.opcode = PVO_WR_SEND;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 16;
	for (i = 0, pos = GUARD, xpos = GUARD + 33; i < 16; i++) {
		bool x = i & 1;
		uint64_t o = x ? xpos : pos;

		goff[i] = o;
		if (x) {
			fill_pattern_at(&xb, o, glen[i], 3000, total);
			w.sge[i].addr = xb.va + o;
			w.sge[i].lkey = xmr.key;
			xpos += glen[i] + 2 * GUARD + 7;
		} else {
			fill_pattern_at(&A.buf, o, glen[i], 3000, total);
			w.sge[i].addr = A.buf.va + o;
			w.sge[i].lkey = A.mr.key;
			pos += glen[i] + 2 * GUARD + 1;
		}
		w.sge[i].length = glen[i];
		total += glen[i];
	}
	/* scatter: 5 SGEs, spaced apart, enough room in all */
	for (i = 0, pos = 64 * KIB + GUARD; i < 5; i++) {
		soff[i] = pos;
		rs[i] = sge_of(&B, pos, slen[i]);
		prepare_dst(&B.buf, pos, slen[i]);
		pos += slen[i] + 3 * GUARD + 13;
		stotal += slen[i];
	}
	tap_diag("SEND of %llu bytes from 16 SGEs into 5 SGEs of %llu",
		 (unsigned long long)total, (unsigned long long)stotal);
	sim_post_recv(&p.b, 0x8101, rs, 5);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8001, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "SEND with 16 SGEs from two MRs");
	if (get_cqe(&B.rcq, &c, "receive into 5 SGEs"))
		tap_ok(cqe_ok(&c, 0x8101, PVO_WC_RECV, PVO_WC_SUCCESS,
			      "5-SGE receive") &&
			   le32toh(c.byte_len) == total,
		       "receive into 5 SGEs: RECV, byte_len %llu (got %u)",
		       (unsigned long long)total, le32toh(c.byte_len));
	ok = true;
	for (i = 0, pos = 0; i < 5 && pos < total; i++) {
		uint64_t n = total - pos < slen[i] ? total - pos : slen[i];

		ok &= data_ok("scatter SGE", &B.buf, soff[i], n, 3000, pos);
		/* the unused tail of a receive SGE keeps its filler */
		if (n < slen[i]) {
			uint64_t t, tl = slen[i] - n + GUARD;

			sim_buf_read(&B.buf, soff[i] + n, scratch, tl);
			for (t = 0; t < tl && scratch[t] == GUARD_BYTE; t++)
				;
			if (t < tl) {
				tap_diag("unused tail of receive SGE %u: byte "
					 "%llu of %llu written",
					 i, (unsigned long long)t,
					 (unsigned long long)tl);
				ok = false;
			}
		}
		pos += n;
	}
	tap_ok(ok, "every byte landed in the right receive SGE, in order");

	/* RDMA WRITE from 3 SGEs, RDMA READ into 4 SGEs */
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8002;
	w.opcode = PVO_WR_RDMA_WRITE;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 3;
	w.sge[0] = sge_of(&A, goff[0], glen[0]);
	w.sge[1].addr = xb.va + goff[1];
	w.sge[1].length = glen[1];
	w.sge[1].lkey = xmr.key;
	w.sge[2] = sge_of(&A, goff[2], glen[2]);
	prepare_dst(&B.buf, 5000, glen[0] + glen[1] + glen[2]);
	w.remote_addr = B.mr.iova + 5000;
	w.rkey = B.mr.key;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8002, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "RDMA WRITE from 3 SGEs");
	check_data("RDMA WRITE from 3 SGEs", &B.buf, 5000,
		   glen[0] + glen[1] + glen[2], 3000);

	fill_pattern(&B.buf, 200 * KIB + 5, 20000, 3100);
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8003;
	w.opcode = PVO_WR_RDMA_READ;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 4;
	for (i = 0, pos = 300 * KIB + GUARD; i < 4; i++) {
		uint32_t l = i == 3 ? 20000 - 3 * 5001 : 5001;

		if (i == 2) {
			w.sge[i].addr = xb.va + 40 * KIB + 3;
			w.sge[i].lkey = xmr.key;
			prepare_dst(&xb, 40 * KIB + 3, l);
		} else {
			w.sge[i] = sge_of(&A, pos, l);
			prepare_dst(&A.buf, pos, l);
			soff[i] = pos;
			pos += l + 3 * GUARD;
		}
		w.sge[i].length = l;
	}
	w.remote_addr = B.mr.iova + 200 * KIB + 5;
	w.rkey = B.mr.key;
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8003, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "RDMA READ into 4 SGEs");
	ok = data_ok("READ SGE 0", &A.buf, soff[0], 5001, 3100, 0) &&
	     data_ok("READ SGE 1", &A.buf, soff[1], 5001, 3100, 5001) &&
	     data_ok("READ SGE 2", &xb, 40 * KIB + 3, 5001, 3100, 10002) &&
	     data_ok("READ SGE 3", &A.buf, soff[3], 20000 - 3 * 5001, 3100,
		     15003);
	tap_ok(ok, "RDMA READ scattered every byte into the right SGE");

	/* a zero-length SEND needs no SGE and consumes a receive */
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8004;
	w.opcode = PVO_WR_SEND;
	w.flags = PVO_WQE_F_SIGNALED;
	post_recv1(&p.b, &B, 0x8104, 0, 16);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8004, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "zero-length SEND");
	if (get_cqe(&B.rcq, &c, "zero-length receive"))
		tap_ok(cqe_ok(&c, 0x8104, PVO_WC_RECV, PVO_WC_SUCCESS,
			      "zero-length receive") &&
			   c.byte_len == 0,
		       "  ... receive completes with byte_len 0 (got %u)",
		       le32toh(c.byte_len));
	memset(&w, 0, sizeof(w));
	w.wr_id = 0x8005;
	w.opcode = PVO_WR_RDMA_WRITE_WITH_IMM;
	w.flags = PVO_WQE_F_SIGNALED;
	w.imm = 0x12345678;
	w.remote_addr = B.mr.iova;
	w.rkey = B.mr.key;
	sim_post_recv(&p.b, 0x8105, NULL, 0);
	post1(&p.a, &w);
	expect_cqe(&A.scq, 0x8005, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "zero-length RDMA WRITE_WITH_IMM");
	if (get_cqe(&B.rcq, &c, "zero-length WRITE_WITH_IMM receive"))
		tap_ok(cqe_ok(&c, 0x8105, PVO_WC_RECV_RDMA_WITH_IMM,
			      PVO_WC_SUCCESS, "zero-length WRITE_WITH_IMM") &&
			   c.byte_len == 0 && (c.flags & PVO_WC_F_IMM) &&
			   be32toh(c.imm_data) == 0x12345678,
		       "  ... consumes a receive without SGEs: byte_len 0, "
		       "imm 0x12345678 (got %s)",
		       cqe_str(&c));
	pair_destroy(&p);
out:
	sim_dereg_mr(&xmr);
	sim_buf_free(&xb);
}

/* Many WQEs: unsignaled ones, SQ wrap-around, batches behind one doorbell,
 * and many QPs of one context with work at the same time. */
static void test_rc_batches(void)
{
	enum { NPAIRS = 8, PER = 24 };
	static struct sim_wr ws[64];
	static struct pair pp[NPAIRS];
	unsigned int i, j, round, got = 0, made = 0;
	struct pvo_cqe c[64];
	struct pair p;
	bool ok = true;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	/* 20 rounds of 32 writes, one signaled: 640 WQEs through 256 slots */
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 32; i++) {
			uint64_t off = GUARD + (round * 32 + i) * 200;

			ws[i] = wr1(round * 100 + i, PVO_WR_RDMA_WRITE, &A, off,
				    150);
			ws[i].flags = i == 31 ? PVO_WQE_F_SIGNALED : 0;
			ws[i].remote_addr = B.mr.iova + off;
			ws[i].rkey = B.mr.key;
		}
		fill_pattern(&A.buf, GUARD + round * 32 * 200, 32 * 200,
			     4000 + round);
		if (sim_post_send(&p.a, ws, 32)) {
			ok = false;
			tap_diag("round %u: SQ full", round);
			break;
		}
		if (sim_wait_cq(&A.scq, c, 1, timeout_ms) != 1 ||
		    !cqe_ok(c, round * 100 + 31, PVO_WC_RDMA_WRITE,
			    PVO_WC_SUCCESS, "batch")) {
			ok = false;
			break;
		}
	}
	tap_ok(ok, "640 RDMA WRITEs in batches of 32 behind one doorbell, "
		   "one signaled each: one completion per batch");
	expect_no_cqe(&A.scq, 20, "unsignaled WQEs");
	for (round = 0, ok = true; round < 20 && ok; round++) {
		for (i = 0; i < 32 && ok; i++) {
			uint64_t off = GUARD + (round * 32 + i) * 200;
			uint8_t b1[150], b2[150];

			sim_buf_read(&A.buf, off, b1, 150);
			sim_buf_read(&B.buf, off, b2, 150);
			ok = !memcmp(b1, b2, 150);
			if (!ok)
				tap_diag("write %u of round %u differs", i,
					 round);
		}
	}
	tap_ok(ok, "all 640 written ranges match their source");
	tap_diag("SQ doorbell records for 20 batches: %llu",
		 (unsigned long long)p.a.doorbells);
	tap_ok(p.a.doorbells <= 20,
	       "at most one doorbell record per batch (%llu)",
	       (unsigned long long)p.a.doorbells);
	check_sq_consumed(&p.a, "batched writes");
	pair_destroy(&p);

	/* both directions at once, and more READs than max_rd_atomic */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		static struct sim_wr wa[64], wb[64], wr[64];
		unsigned int ga = 0, gb = 0;
		bool dok = true;

		/* guards first: they reach 64 bytes into the neighbours */
		prepare_dst(&B.buf, 768 * KIB, 64 * 4096);
		prepare_dst(&A.buf, 1280 * KIB, 64 * 4096);
		prepare_dst(&A.buf, 1792 * KIB, 64 * 1024);
		fill_pattern(&A.buf, 512 * KIB, 64 * 4096, 4100);
		fill_pattern(&B.buf, 1040 * KIB, 64 * 4096, 4101);
		fill_pattern(&B.buf, 1600 * KIB, 64 * 1024, 4102);
		for (i = 0; i < 64; i++) {
			wa[i] = write_wr(i, 512 * KIB + i * 4096, 4096,
					 B.mr.iova + 768 * KIB + i * 4096,
					 B.mr.key);
			wb[i] = wr1(i, PVO_WR_RDMA_WRITE, &B,
				    1040 * KIB + i * 4096, 4096);
			wb[i].remote_addr = A.mr.iova + 1280 * KIB + i * 4096;
			wb[i].rkey = A.mr.key;
			wr[i] = wr1(100 + i, PVO_WR_RDMA_READ, &A,
				    1792 * KIB + i * 1024, 1024);
			wr[i].remote_addr = B.mr.iova + 1600 * KIB + i * 1024;
			wr[i].rkey = B.mr.key;
		}
		sim_post_send(&p.a, wa, 64);
		sim_post_send(&p.b, wb, 64);
		sim_post_send(&p.a, wr, 64);
		{
			long long dl = now_ms() + 2 * timeout_ms;

			while ((ga < 128 || gb < 64) && now_ms() < dl) {
				ga += sim_wait_cq(&A.scq, c, 64, 1);
				gb += sim_wait_cq(&B.scq, c, 64, 1);
			}
		}
		dok &= data_ok("a -> b", &B.buf, 768 * KIB, 64 * 4096, 4100, 0);
		dok &=
		    data_ok("b -> a", &A.buf, 1280 * KIB, 64 * 4096, 4101, 0);
		dok &= data_ok("READs", &A.buf, 1792 * KIB, 64 * 1024, 4102, 0);
		tap_ok(ga == 128 && gb == 64 && dok,
		       "64 WRITEs each way at once plus 64 READs (4x "
		       "max_rd_atomic): all complete (%u/128, %u/64), data "
		       "right",
		       ga, gb);
		pair_destroy(&p);
	}

	/* NPAIRS QPs of one context busy at once */
	for (i = 0; i < NPAIRS; i++) {
		if (!pair_make(&pp[i], PVO_QPT_RC, NULL, NULL))
			break;
		made++;
	}
	tap_ok(made == NPAIRS, "%u RC pairs", NPAIRS);
	for (j = 0; j < PER; j++) {
		for (i = 0; i < made; i++) {
			uint64_t off = GUARD + (i * PER + j) * 4200;
			struct sim_wr w =
			    wr1(i << 16 | j, PVO_WR_RDMA_WRITE, &A, off, 4100);

			w.remote_addr = B.mr.iova + off;
			w.rkey = B.mr.key;
			if (j == 0)
				fill_pattern(&A.buf, GUARD + i * PER * 4200,
					     PER * 4200, 5000 + i);
			if (post1(&pp[i].a, &w) != true)
				ok = false;
		}
	}
	got = sim_wait_cq(&A.scq, c, 64, timeout_ms);
	while (got < made * PER) {
		int n = sim_wait_cq(&A.scq, c, 64, timeout_ms);

		if (n <= 0)
			break;
		got += n;
	}
	tap_ok(got == made * PER,
	       "%u QPs x %u WRITEs, interleaved: %u completions (got %u)", made,
	       PER, made * PER, got);
	for (i = 0, ok = true; i < made; i++) {
		for (j = 0; j < PER; j++) {
			uint64_t off = GUARD + (i * PER + j) * 4200;
			uint8_t b1[4100], b2[4100];

			sim_buf_read(&A.buf, off, b1, 4100);
			sim_buf_read(&B.buf, off, b2, 4100);
			if (memcmp(b1, b2, 4100)) {
				if (ok)
					tap_diag("QP %u write %u differs", i,
						 j);
				ok = false;
			}
		}
	}
	tap_ok(ok, "every QP's data arrived");
	for (i = 0; i < made; i++)
		pair_destroy(&pp[i]);
}

static void test_uc(void)
{
	struct pair p;

	if (!pair_make(&p, PVO_QPT_UC, NULL, NULL))
		return;
	xfer(&p, X_SEND, 1, 64, 64, false, 6000);
	xfer(&p, X_SEND, 4097, src_off(3), dst_off(3), false, 6001);
	xfer(&p, X_SEND, 1048576, src_off(4), dst_off(4), false, 6002);
	xfer(&p, X_SEND_IMM, 100, src_off(5), dst_off(5), false, 6003);
	xfer(&p, X_SEND, 100, src_off(6), dst_off(6), true, 6004);
	xfer(&p, X_WRITE, 65539, src_off(7), dst_off(7), false, 6005);
	xfer(&p, X_WRITE, 1048576, src_off(8), dst_off(8), false, 6006);
	xfer(&p, X_WRITE_IMM, 3000, src_off(9), dst_off(9), false, 6007);
	check_sq_consumed(&p.a, "UC transfers");
	{
		/* UC has no RNR: a SEND without a receive is dropped */
		struct sim_wr w = wr1(0x6101, PVO_WR_SEND, &A, 100, 100);
		uint64_t sum = buf_sum(&B.buf);

		post1(&p.a, &w);
		expect_cqe(&A.scq, 0x6101, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "UC SEND with no receive posted completes on the "
			   "sender");
		expect_no_cqe(&B.rcq, 30, "UC SEND with no receive posted");
		tap_ok(buf_sum(&B.buf) == sum,
		       "UC SEND with no receive posted: nothing written");
		expect_state(&p.b, PVO_QPS_RTS, "UC responder after a drop");
		xfer(&p, X_SEND, 1234, 64, 64, false, 6008);
	}
	pair_destroy(&p);
}

/* ------------------------------------------------------------------ */
/* UD                                                                 */

#define QKEY 0x11111111u

struct ud_pair {
	struct sim_qp a, b;
	uint32_t ah_v4, ah_ll; /* a's AHs to b */
};

static bool ud_make(struct ud_pair *u, struct node *na, struct node *nb)
{
	struct sim_qp_init ia = qp_init(na, PVO_QPT_UD),
			   ib = qp_init(nb, PVO_QPT_UD);
	struct sim_conn conn = {.qkey = QKEY};
	struct sim_peer peer;
	struct pvo_av av;
	int st;

	memset(u, 0, sizeof(*u));
	st = sim_create_qp(&na->pd, &ia, &u->a);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&nb->pd, &ib, &u->b);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&u->a, &conn, NULL);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&u->b, &conn, NULL);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "UD QPs on %s and %s to RTS",
			na->name, nb->name)) {
		tap_diag("%s / %s", na->vm->err, nb->vm->err);
		return false;
	}
	sim_qp_peer(&u->b, nb->gid_v4, &peer);
	sim_av_to(&av, &peer, (uint8_t)na->gid_v4);
	st = sim_create_ah(&na->pd, &av, &u->ah_v4);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&u->b, 0, &peer);
		sim_av_to(&av, &peer, 0);
		st = sim_create_ah(&na->pd, &av, &u->ah_ll);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"AHs to %s's IPv4 and link-local GIDs", nb->name)) {
		tap_diag("%s", na->vm->err);
		return false;
	}
	return true;
}

static void ud_destroy(struct ud_pair *u, struct node *na, struct node *nb)
{
	sim_destroy_ah(&na->ctx, u->ah_v4);
	sim_destroy_ah(&na->ctx, u->ah_ll);
	sim_destroy_qp(&u->a);
	sim_destroy_qp(&u->b);
	drain(na);
	drain(nb);
}

static struct sim_wr ud_wr(uint64_t wr_id, uint32_t ah, uint32_t qpn,
			   uint32_t qkey, uint64_t off, uint32_t len)
{
	struct sim_wr w = wr1(wr_id, PVO_WR_SEND, &A, off, len);

	w.ah = ah;
	w.remote_qpn = qpn;
	w.remote_qkey = qkey;
	return w;
}

static void check_grh(const uint8_t *g, bool v4, struct node *src,
		      struct node *dst)
{
	uint8_t sip[4] = {10, 0, 0, 1}, dip[4] = {10, 0, 0, 2};

	if (v4) {
		const uint8_t *ip = g + 20;

		tap_ok(ip[0] == 0x45 && ip[9] == 17 &&
			   !memcmp(ip + 12, sip, 4) && !memcmp(ip + 16, dip, 4),
		       "GRH holds an IPv4 header in its last 20 bytes: "
		       "version/IHL 0x45 (0x%02x), protocol UDP (%u), "
		       "10.0.0.1 -> 10.0.0.2 (%u.%u.%u.%u -> %u.%u.%u.%u)",
		       ip[0], ip[9], ip[12], ip[13], ip[14], ip[15], ip[16],
		       ip[17], ip[18], ip[19]);
	} else {
		tap_ok((g[0] >> 4) == 6 && g[6] == 17 &&
			   !memcmp(g + 8, src->vm->gid[0], 16) &&
			   !memcmp(g + 24, dst->vm->gid[0], 16),
		       "GRH is an IPv6 header: version 6 (%u), next header "
		       "UDP (%u), source %s, destination %s",
		       g[0] >> 4, g[6], pvo_gid_str(g + 8),
		       pvo_gid_str(g + 24));
	}
}

static void ud_one(struct ud_pair *u, bool v4, uint32_t len, bool inl, bool imm,
		   uint32_t seed)
{
	const uint64_t so = 4096 + 77, ro = 8192 + 100;
	struct sim_wr w = ud_wr(0x9000 + seed, v4 ? u->ah_v4 : u->ah_ll,
				u->b.qpn, QKEY, so, len);
	struct pvo_cqe c;
	uint8_t grh[40];
	char what[120];

	snprintf(what, sizeof(what), "UD %s%s %u B over the %s GID",
		 inl ? "inline " : "", imm ? "SEND_WITH_IMM" : "SEND", len,
		 v4 ? "IPv4" : "link-local");
	if (overlay && !v4) {
		char why[200];

		snprintf(why, sizeof(why),
			 "%s: the overlay carries IPv4 GIDs only", what);
		tap_skip(1, why);
		return;
	}
	fill_pattern(&A.buf, so, len, seed);
	prepare_dst(&B.buf, ro, 40 + len);
	post_recv1(&u->b, &B, 0x9100 + seed, ro, 40 + len + 16);
	if (inl) {
		sim_buf_read(&A.buf, so, inline_buf, len);
		w.num_sge = 0;
		w.inline_data = inline_buf;
		w.inline_len = len;
	}
	if (imm) {
		w.opcode = PVO_WR_SEND_WITH_IMM;
		w.imm = 0xfeed0000 | seed;
	}
	post1(&u->a, &w);
	expect_cqe(&A.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	if (!get_cqe(&B.rcq, &c, what))
		return;
	tap_ok(cqe_ok(&c, 0x9100 + seed, PVO_WC_RECV, PVO_WC_SUCCESS, what) &&
		   le32toh(c.byte_len) == 40 + len &&
		   (c.flags & PVO_WC_F_GRH) && le32toh(c.src_qp) == u->a.qpn &&
		   !memcmp(c.smac, A.vm->mac, 6) &&
		   c.network_hdr_type == (v4 ? PVO_NET_IPV4 : PVO_NET_IPV6) &&
		   le32toh(c.qpn) == u->b.qpn &&
		   (!imm || ((c.flags & PVO_WC_F_IMM) &&
			     be32toh(c.imm_data) == (0xfeed0000 | seed))),
	       "%s: receive CQE has byte_len 40 + %u, GRH flag, src_qp %u, "
	       "smac of a, network type %s%s",
	       what, len, u->a.qpn, v4 ? "IPv4" : "IPv6", imm ? ", imm" : "");
	tap_diag("  got %s smac %02x:%02x:%02x:%02x:%02x:%02x net %u",
		 cqe_str(&c), c.smac[0], c.smac[1], c.smac[2], c.smac[3],
		 c.smac[4], c.smac[5], c.network_hdr_type);
	sim_buf_read(&B.buf, ro, grh, 40);
	check_grh(grh, v4, &A, &B);
	/* the GRH sits in the guard zone of the data: blank it again */
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data(what, &B.buf, ro + 40, len, seed);
}

static void test_ud(void)
{
	unsigned int mtu = 128u << A.vm->port.active_mtu;
	const uint64_t ro = 8192 + 100;
	struct ud_pair u;
	struct pvo_cqe c;
	struct sim_wr w;

	if (!ud_make(&u, &A, &B))
		return;
	tap_diag("UD QPs %u (a) -> %u (b), path MTU %u", u.a.qpn, u.b.qpn, mtu);
	ud_one(&u, true, 100, false, false, 7000);
	ud_one(&u, false, 1000, false, false, 7001);
	ud_one(&u, true, 1, false, true, 7002);
	ud_one(&u, true, 200, true, false, 7003);
	ud_one(&u, false, mtu, false, false, 7004);

	/* wrong Q_Key: dropped; the next good message takes the receive */
	prepare_dst(&B.buf, ro, 40 + 600);
	post_recv1(&u.b, &B, 0x9201, ro, 40 + 600);
	fill_pattern(&A.buf, 4096, 500, 7010);
	w = ud_wr(0x9301, u.ah_v4, u.b.qpn, 0x22222222, 4096, 500);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9301, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND with a wrong Q_Key completes on the sender");
	expect_no_cqe(&B.rcq, 50, "UD SEND with a wrong Q_Key is dropped");
	fill_pattern(&A.buf, 4096, 500, 7011);
	w = ud_wr(0x9302, u.ah_v4, u.b.qpn, QKEY, 4096, 500);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9302, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND with the right Q_Key");
	if (get_cqe(&B.rcq, &c, "UD after a dropped one"))
		cqe_is(&c, 0x9201, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "  ... takes the receive the dropped one did not");
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data("UD after a dropped one", &B.buf, ro + 40, 500, 7011);

	/* a Q_Key with the MSB set means "the QP's own Q_Key" */
	prepare_dst(&B.buf, ro, 40 + 600);
	post_recv1(&u.b, &B, 0x9202, ro, 40 + 600);
	fill_pattern(&A.buf, 4096, 300, 7012);
	w = ud_wr(0x9303, overlay ? u.ah_v4 : u.ah_ll, u.b.qpn, 0x80000000u,
		  4096, 300);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9303, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND with Q_Key 0x80000000 (use the QP's)");
	if (get_cqe(&B.rcq, &c, "UD with the QP's Q_Key"))
		cqe_is(&c, 0x9202, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "  ... is delivered with the sending QP's Q_Key");
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data("UD with the QP's Q_Key", &B.buf, ro + 40, 300, 7012);

	/* nobody behind that QPN: dropped, the sender still completes */
	w = ud_wr(0x9304, u.ah_v4, 0xfffff0, QKEY, 4096, 300);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9304, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "UD SEND to a QPN nobody has completes on the sender");
	/* b has no receive posted now; nothing may complete there */
	expect_no_cqe(&B.rcq, 30, "UD SEND to an unknown QPN");

	/* longer than the path MTU */
	post_recv1(&u.b, &B, 0x9203, 64, 40 + mtu + 64);
	w = ud_wr(0x9305, u.ah_v4, u.b.qpn, QKEY, 4096, mtu + 1);
	post1(&u.a, &w);
	expect_cqe(&A.scq, 0x9305, PVO_WC_SEND, PVO_WC_LOC_LEN_ERR,
		   "UD SEND of MTU + 1 bytes");
	expect_no_cqe(&B.rcq, 30, "UD SEND of MTU + 1 bytes is not delivered");
	ud_destroy(&u, &A, &B);
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                */

static void test_srq(void)
{
	struct sim_qp_init ia = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_qp a[2], b[2];
	struct sim_peer pa, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct pvo_resp_query_srq q;
	struct pvo_cmd_modify_srq m = {0};
	struct sim_srq srq;
	struct pvo_cqe c;
	static const uint32_t len[3] = {3000, 5000, 100};
	static const int via[3] = {0, 1, 0};
	unsigned int i;
	int st, ev;

	st = sim_create_srq(&B.pd, 64, 4, 0, &srq);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"CREATE_SRQ of 64 entries, 4 SGEs")) {
		tap_diag("%s", B.vm->err);
		return;
	}
	ib.srq = &srq;
	ib.rq_entries = 0;
	for (i = 0; i < 2; i++) {
		st = sim_create_qp(&A.pd, &ia, &a[i]);
		if (st == PVO_STATUS_OK)
			st = sim_create_qp(&B.pd, &ib, &b[i]);
		if (st == PVO_STATUS_OK) {
			sim_qp_peer(&b[i], pair_gid(), &pb);
			sim_qp_peer(&a[i], pair_gid(), &pa);
			st = sim_qp_connect(&a[i], &conn, &pb);
		}
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&b[i], &conn, &pa);
		if (!TAP_STATUS(st, PVO_STATUS_OK,
				"RC pair %u with b's side on the SRQ", i)) {
			tap_diag("%s / %s", A.vm->err, B.vm->err);
			return;
		}
	}
	st = pvo_query_srq(B.vm->fe, B.ctx.handle, srq.handle, &q);
	tap_ok(st == PVO_STATUS_OK && le32toh(q.max_wr) >= 63 &&
		   le32toh(q.max_sge) >= 4 && q.srq_limit == 0,
	       "QUERY_SRQ: max_wr %u, max_sge %u, limit %u (%s)",
	       le32toh(q.max_wr), le32toh(q.max_sge), le32toh(q.srq_limit),
	       pvo_status_name(st));

	for (i = 0; i < 4; i++) {
		struct sim_sge s = sge_of(&B, GUARD + i * 8192, 6000);

		prepare_dst(&B.buf, GUARD + i * 8192, 6000);
		sim_post_srq_recv(&srq, 0xa001 + i, &s, 1);
	}
	for (i = 0; i < 3; i++) {
		struct sim_wr w =
		    wr1(0xa101 + i, PVO_WR_SEND, &A, 1000, len[i]);

		fill_pattern(&A.buf, 1000, len[i], 8000 + i);
		post1(&a[via[i]], &w);
		expect_cqe(&A.scq, 0xa101 + i, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "SEND to a QP on the SRQ");
		if (get_cqe(&B.rcq, &c, "SRQ receive"))
			tap_ok(cqe_ok(&c, 0xa001 + i, PVO_WC_RECV,
				      PVO_WC_SUCCESS, "SRQ receive") &&
				   le32toh(c.qpn) == b[via[i]].qpn &&
				   le32toh(c.byte_len) == len[i],
			       "  ... takes SRQ WQE %u in order, CQE names QP "
			       "%u, byte_len %u",
			       i, b[via[i]].qpn, len[i]);
		check_data("SRQ receive", &B.buf, GUARD + i * 8192, len[i],
			   8000 + i);
		if (len[i] < 6000)
			data_ok("SRQ receive tail", &B.buf,
				GUARD + i * 8192 + len[i], 0, 0, 0);
	}

	/* limit event: 1 left + 2 posted = 3; limit 2 fires below 2 */
	for (i = 4; i < 6; i++) {
		struct sim_sge s = sge_of(&B, GUARD + i * 8192, 6000);

		sim_post_srq_recv(&srq, 0xa001 + i, &s, 1);
	}
	sim_vm_drop_events(B.vm, 0);
	m.srq = htole32(srq.handle);
	m.attr_mask = htole32(PVO_SRQ_LIMIT);
	m.srq_limit = htole32(2);
	st = pvo_modify_srq(B.vm->fe, B.ctx.handle, &m);
	TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_SRQ limit 2 with 3 WQEs posted");
	for (i = 0; i < 2; i++) {
		struct sim_wr w = wr1(0xa201 + i, PVO_WR_SEND, &A, 1000, 10);

		post1(&a[1], &w);
		expect_cqe(&A.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "SEND to the SRQ");
		expect_cqe(&B.rcq, 0xa004 + i, PVO_WC_RECV, PVO_WC_SUCCESS,
			   "SRQ receive");
		ev = sim_vm_expect_events(B.vm, PVO_EV_SRQ_LIMIT, srq.handle, i,
					  timeout_ms, 30);
		tap_ok(ev == (i == 0 ? 0 : 1),
		       "%u WQEs left: %d SRQ_LIMIT events (want %d)", 2 - i, ev,
		       i == 0 ? 0 : 1);
	}
	st = pvo_query_srq(B.vm->fe, B.ctx.handle, srq.handle, &q);
	tap_ok(st == PVO_STATUS_OK && q.srq_limit == 0,
	       "the limit disarms when it fires (QUERY_SRQ limit %u)",
	       le32toh(q.srq_limit));
	m.attr_mask = htole32(PVO_SRQ_MAX_WR);
	m.max_wr = htole32(128);
	st = pvo_modify_srq(B.vm->fe, B.ctx.handle, &m);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_SRQ resize -> EINVAL");

	st = pvo_destroy(B.vm->fe, PVO_CMD_DESTROY_SRQ, B.ctx.handle,
			 srq.handle);
	TAP_STATUS(st, PVO_STATUS_EBUSY,
		   "DESTROY_SRQ while QPs use it -> EBUSY");
	for (i = 0; i < 2; i++) {
		sim_destroy_qp(&a[i]);
		sim_destroy_qp(&b[i]);
	}
	st = sim_destroy_srq(&srq);
	TAP_STATUS(st, PVO_STATUS_OK, "DESTROY_SRQ once its QPs are gone");
	drain(&A);
	drain(&B);
}

/* ------------------------------------------------------------------ */
/* CQ arming and events                                               */

/* SEND a -> b with a receive posted; both completions reaped. */
static bool arm_send(struct pair *p, uint64_t id, bool solicited)
{
	struct sim_wr w = wr1(id, PVO_WR_SEND, &A, 100, 32);
	struct pvo_cqe c;
	bool ok;

	if (solicited)
		w.flags |= PVO_WQE_F_SOLICITED;
	post_recv1(&p->b, &B, id, 8192, 64);
	post1(&p->a, &w);
	ok = wait_cqe(&A.scq, &c, "send") &&
	     cqe_ok(&c, id, PVO_WC_SEND, PVO_WC_SUCCESS, "send");
	ok &= wait_cqe(&B.rcq, &c, "recv") &&
	      cqe_ok(&c, id, PVO_WC_RECV, PVO_WC_SUCCESS, "recv");
	if (ok && solicited != !!(c.flags & PVO_WC_F_SOLICITED)) {
		tap_diag("receive CQE flags 0x%x, solicited %s expected",
			 c.flags, solicited ? "" : "not");
		ok = false;
	}
	return ok;
}

/* CQ_COMP events for @cq: waits for @want of them, then 30 ms more. */
static int comp_events(struct sim_cq *cq, int want)
{
	return sim_vm_expect_events(cq->ctx->vm, PVO_EV_CQ_COMP, cq->handle,
				    want, timeout_ms, 30);
}

/*
 * A CQ created with NO_EVENTS (a user CQ without a completion channel):
 * the device never looks at its arm word, so arming it raises nothing and
 * the word stays as the guest wrote it; its completions still arrive.
 */
static void test_cq_no_events(void)
{
	struct sim_cq saved = B.rcq, ne;
	struct pair p;
	int ev;

	if (!tap_ok(sim_create_cq_flags(&B.ctx, 64, PVO_CQ_F_NO_EVENTS, &ne) ==
			PVO_STATUS_OK,
		    "CREATE_CQ with NO_EVENTS"))
		return;
	B.rcq = ne; /* b's QP of the next pair takes it as its receive CQ */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		sim_arm_cq(&B.rcq, PVO_CQ_ARM_NEXT);
		tap_ok(arm_send(&p, 0xb051, true),
		       "SEND into a NO_EVENTS receive CQ completes");
		ev = comp_events(&B.rcq, 0);
		tap_ok(ev == 0, "NO_EVENTS CQ, armed: no CQ_COMP (%d)", ev);
		tap_ok(le32toh(B.rcq.ring.hdr->arm) == PVO_CQ_ARM_NEXT,
		       "NO_EVENTS CQ: the device left arm as written (%u)",
		       le32toh(B.rcq.ring.hdr->arm));
		sim_arm_cq(&A.scq, PVO_CQ_ARM_NEXT);
		tap_ok(arm_send(&p, 0xb052, false),
		       "another SEND, the send CQ armed");
		ev = comp_events(&A.scq, 1);
		tap_ok(ev == 1, "the send CQ (events on) still raises one (%d)",
		       ev);
		pair_destroy(&p);
	}
	ne = B.rcq;
	B.rcq = saved;
	if (sim_destroy_cq(&ne) != PVO_STATUS_OK)
		tap_diag("destroy CQ: %s", B.vm->err);
}

static void test_cq_arm(void)
{
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;
	int ev;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	drain_all();
	tap_ok(arm_send(&p, 0xb001, false), "SEND on an unarmed CQ");
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0, "unarmed CQ: no CQ_COMP event (%d)", ev);

	sim_arm_cq(&B.rcq, PVO_CQ_ARM_NEXT);
	tap_ok(sim_poll_cq(&B.rcq, &c, 1) == 0, "armed NEXT, ring re-checked");
	tap_ok(arm_send(&p, 0xb002, false), "SEND on the armed CQ");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1, "armed NEXT: exactly one CQ_COMP for the CQ (%d)", ev);
	tap_ok(le32toh(B.rcq.ring.hdr->arm) == 0, "the device cleared arm (%u)",
	       le32toh(B.rcq.ring.hdr->arm));
	tap_ok(arm_send(&p, 0xb003, false), "another SEND, not re-armed");
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0, "not re-armed: no event (%d)", ev);

	/* three completions behind one arm: one event */
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_NEXT);
	post_recv1(&p.b, &B, 0xb011, 8192, 64);
	post_recv1(&p.b, &B, 0xb012, 8192, 64);
	post_recv1(&p.b, &B, 0xb013, 8192, 64);
	w = wr1(0xb011, PVO_WR_SEND, &A, 100, 16);
	post1(&p.a, &w);
	w.wr_id = 0xb012;
	post1(&p.a, &w);
	w.wr_id = 0xb013;
	post1(&p.a, &w);
	tap_ok(
	    sim_wait_cq(&B.rcq, (struct pvo_cqe[3]){0}, 3, timeout_ms) == 3 &&
		sim_wait_cq(&A.scq, (struct pvo_cqe[3]){0}, 3, timeout_ms) == 3,
	    "three SENDs complete");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1, "three completions after one arm: one event (%d)", ev);

	/* the send CQ is armed the same way */
	sim_arm_cq(&A.scq, PVO_CQ_ARM_NEXT);
	tap_ok(arm_send(&p, 0xb021, false), "SEND with the send CQ armed");
	ev = comp_events(&A.scq, 1);
	tap_ok(ev == 1, "armed send CQ: one event (%d)", ev);
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0, "... and none for the unarmed receive CQ (%d)", ev);

	/* SOLICITED */
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_SOLICITED);
	tap_ok(arm_send(&p, 0xb031, false), "unsolicited SEND");
	ev = comp_events(&B.rcq, 0);
	tap_ok(ev == 0,
	       "armed SOLICITED: no event for an unsolicited "
	       "completion (%d)",
	       ev);
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_SOLICITED);
	tap_ok(arm_send(&p, 0xb032, true),
	       "solicited SEND: receive CQE has the SOLICITED flag");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1,
	       "armed SOLICITED: one event for a solicited "
	       "completion (%d)",
	       ev);

	/* an error completion counts as solicited */
	sim_arm_cq(&B.rcq, PVO_CQ_ARM_SOLICITED);
	post_recv1(&p.b, &B, 0xb041, 8192, 8);
	w = wr1(0xb041, PVO_WR_SEND, &A, 100, 100);
	post1(&p.a, &w);
	expect_cqe(&B.rcq, 0xb041, -1, PVO_WC_LOC_LEN_ERR,
		   "SEND of 100 B into an 8-byte receive: responder");
	ev = comp_events(&B.rcq, 1);
	tap_ok(ev == 1,
	       "armed SOLICITED: one event for an error completion "
	       "(%d)",
	       ev);
	pair_destroy(&p);
	test_cq_no_events();
}

/* ------------------------------------------------------------------ */
/* error completions                                                  */


/* Post one WR on a fresh RC pair and expect @status on the requester;
 * then both QP states. @mod_b adjusts b's side before connecting. */
static void rc_error_case(const char *what, struct sim_wr *w,
			  unsigned int status, bool remote, bool b_recv,
			  const struct sim_conn *cb)
{
	struct pair p;
	uint64_t before = 0;
	int want_b;

	if (!pair_make(&p, PVO_QPT_RC, &fast, cb ? cb : &fast))
		return;
	if (b_recv)
		post_recv1(&p.b, &B, 0xc0ff, 8192, 4096);
	before = buf_sum(&B.buf);
	post1(&p.a, w);
	expect_cqe(&A.scq, w->wr_id, -1, status, what);
	expect_state(&p.a, PVO_QPS_ERR, what);
	/* a remote error also kills the responder; a local one never
	 * reached it */
	want_b = remote ? PVO_QPS_ERR : PVO_QPS_RTS;
	expect_state(&p.b, want_b,
		     remote ? "  ... responder" : "  ... responder untouched");
	tap_ok(buf_sum(&B.buf) == before, "%s: no byte changed at b", what);
	pair_destroy(&p);
}

static void test_errors(void)
{
	struct sim_buf nb;
	struct sim_mr ro_mr, nw_mr, na_mr, nlw_mr;
	struct sim_conn noacc = fast;
	struct sim_wr w;
	struct pair p;
	struct pvo_cqe c;
	long long t0;
	int st, i;

	/* local protection */
	w = wr1(0xd001, PVO_WR_SEND, &A, 100, 100);
	w.sge[0].lkey = A.mr.key ^ 0x100;
	rc_error_case("SEND with a bad lkey: LOC_PROT_ERR", &w,
		      PVO_WC_LOC_PROT_ERR, false, true, NULL);
	w = wr1(0xd002, PVO_WR_SEND, &A, DATA_LEN - 50, 100);
	rc_error_case("SEND with an SGE past the end of its MR: LOC_PROT_ERR",
		      &w, PVO_WC_LOC_PROT_ERR, false, true, NULL);
	w = wr1(0xd003, PVO_WR_SEND, &A, 0, 100);
	w.sge[0].addr = A.buf.va - 1;
	rc_error_case("SEND with an SGE starting before its MR: LOC_PROT_ERR",
		      &w, PVO_WC_LOC_PROT_ERR, false, true, NULL);
	w = wr1(0xd004, PVO_WR_SEND, &A, 100, 100);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	w.sge[0].addr = sim_buf_gpa(&A.buf, 100);
	rc_error_case("user SEND with the local DMA lkey: LOC_PROT_ERR", &w,
		      PVO_WC_LOC_PROT_ERR, false, true, NULL);
	/* keys of deregistered MRs are dead */
	if (sim_buf_alloc(&nb, sim_vm_ram(A.vm), sim_vm_va(A.vm, 8 * KIB),
			  8 * KIB, 0, SIM_LAYOUT_SCATTER) == 0) {
		st = sim_reg_mr(&A.pd, &nb, 0, 8 * KIB, PVO_ACCESS_LOCAL_WRITE,
				&nlw_mr);
		if (TAP_STATUS(st, PVO_STATUS_OK, "a short-lived MR")) {
			sim_dereg_mr(&nlw_mr);
			w = wr1(0xd005, PVO_WR_SEND, &A, 0, 100);
			w.sge[0].addr = nb.va;
			w.sge[0].lkey = nlw_mr.key;
			rc_error_case("SEND with the lkey of a deregistered "
				      "MR: LOC_PROT_ERR",
				      &w, PVO_WC_LOC_PROT_ERR, false, true,
				      NULL);
		}
		sim_buf_free(&nb);
	}

	/* remote access */
	w = write_wr(0xd011, 100, 100, B.mr.iova + 100, B.mr.key ^ 0x100);
	rc_error_case("RDMA WRITE with a bad rkey: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = write_wr(0xd012, 100, 100, B.mr.iova + DATA_LEN - 99, B.mr.key);
	rc_error_case("RDMA WRITE one byte past the MR: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = write_wr(0xd013, 100, 100, B.mr.iova - 1, B.mr.key);
	rc_error_case("RDMA WRITE one byte before the MR: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	if (sim_buf_alloc(&nb, sim_vm_ram(B.vm), sim_vm_va(B.vm, 8 * KIB),
			  8 * KIB, 0, SIM_LAYOUT_SCATTER) == 0) {
		st = sim_reg_mr(
		    &B.pd, &nb, 0, 8 * KIB,
		    PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE, &nw_mr);
		if (TAP_STATUS(st, PVO_STATUS_OK, "a short-lived MR on b")) {
			sim_dereg_mr(&nw_mr);
			w = write_wr(0xd014, 100, 100, nb.va, nw_mr.key);
			rc_error_case("RDMA WRITE with the rkey of a "
				      "deregistered MR: REM_ACCESS_ERR",
				      &w, PVO_WC_REM_ACCESS_ERR, true, false,
				      NULL);
		}
		sim_buf_free(&nb);
	}
	w = wr1(0xd015, PVO_WR_RDMA_READ, &A, 100, 100);
	w.remote_addr = B.mr.iova + DATA_LEN;
	w.rkey = B.mr.key;
	rc_error_case("RDMA READ past the MR: REM_ACCESS_ERR", &w,
		      PVO_WC_REM_ACCESS_ERR, true, false, NULL);

	/* MRs on b lacking one right each, over b's first 64 KiB */
	if (sim_buf_alloc(&nb, sim_vm_ram(B.vm), sim_vm_va(B.vm, 64 * KIB),
			  64 * KIB, 0, SIM_LAYOUT_SCATTER) < 0)
		tap_bail("no guest RAM on b");
	st = sim_reg_mr(&B.pd, &nb, 0, 64 * KIB,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_ATOMIC,
			&ro_mr); /* no remote read */
	st |= sim_reg_mr(&B.pd, &nb, 0, 64 * KIB,
			 PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ |
			     PVO_ACCESS_REMOTE_ATOMIC,
			 &nw_mr); /* no remote write */
	st |= sim_reg_mr(&B.pd, &nb, 0, 64 * KIB,
			 PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ |
			     PVO_ACCESS_REMOTE_WRITE,
			 &na_mr); /* no remote atomic */
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"three MRs over one buffer, each lacking one remote "
			"right"))
		tap_diag("%s", B.vm->err);
	w = write_wr(0xd021, 100, 100, nw_mr.iova + 8, nw_mr.key);
	rc_error_case("RDMA WRITE into an MR without REMOTE_WRITE: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = wr1(0xd022, PVO_WR_RDMA_READ, &A, 100, 100);
	w.remote_addr = ro_mr.iova + 8;
	w.rkey = ro_mr.key;
	rc_error_case("RDMA READ from an MR without REMOTE_READ: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	w = wr1(0xd023, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 104), 8);
	w.remote_addr = na_mr.iova + 8;
	w.rkey = na_mr.key;
	w.compare_add = 1;
	rc_error_case("FETCH_AND_ADD on an MR without REMOTE_ATOMIC: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, NULL);
	sim_dereg_mr(&ro_mr);
	sim_dereg_mr(&nw_mr);
	sim_dereg_mr(&na_mr);
	sim_buf_free(&nb);

	/* the responder QP's qp_access_flags */
	noacc.no_access = true;
	w = write_wr(0xd031, 100, 100, B.mr.iova + 100, B.mr.key);
	rc_error_case("RDMA WRITE to a QP without remote access flags: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, &noacc);
	noacc.no_access = false;
	noacc.access = PVO_ACCESS_REMOTE_WRITE;
	w = wr1(0xd032, PVO_WR_RDMA_READ, &A, 100, 100);
	w.remote_addr = B.mr.iova + 100;
	w.rkey = B.mr.key;
	rc_error_case("RDMA READ from a QP with only REMOTE_WRITE: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, &noacc);
	w = wr1(0xd033, PVO_WR_ATOMIC_CMP_AND_SWP, &A, al8(&A, 104), 8);
	w.remote_addr = B.mr.iova + al8(&B, 64);
	w.rkey = B.mr.key;
	rc_error_case("CMP_AND_SWP to a QP with only REMOTE_WRITE: "
		      "REM_ACCESS_ERR",
		      &w, PVO_WC_REM_ACCESS_ERR, true, false, &noacc);

	/* atomics: alignment and local SGE size */
	w = wr1(0xd041, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 104), 8);
	w.remote_addr = B.mr.iova + al8(&B, 64) + 4;
	w.rkey = B.mr.key;
	rc_error_case("FETCH_AND_ADD at a remote address not 8-byte aligned: "
		      "REM_INV_REQ_ERR",
		      &w, PVO_WC_REM_INV_REQ_ERR, true, false, NULL);
	w = wr1(0xd042, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, 104), 4);
	w.remote_addr = B.mr.iova + al8(&B, 64);
	w.rkey = B.mr.key;
	rc_error_case("FETCH_AND_ADD with a 4-byte local SGE: LOC_LEN_ERR", &w,
		      PVO_WC_LOC_LEN_ERR, false, false, NULL);

	/* RDMA READ into local memory without LOCAL_WRITE */
	if (sim_buf_alloc(&nb, sim_vm_ram(A.vm), sim_vm_va(A.vm, 8 * KIB),
			  8 * KIB, 0, SIM_LAYOUT_SCATTER) == 0) {
		st = sim_reg_mr(&A.pd, &nb, 0, 8 * KIB, PVO_ACCESS_REMOTE_READ,
				&nlw_mr);
		/* IB: remote write needs local write; read-only is fine */
		if (TAP_STATUS(st, PVO_STATUS_OK,
			       "REG_MR without LOCAL_WRITE")) {
			w = wr1(0xd051, PVO_WR_RDMA_READ, &A, 0, 100);
			w.sge[0].addr = nb.va;
			w.sge[0].lkey = nlw_mr.key;
			w.remote_addr = B.mr.iova + 100;
			w.rkey = B.mr.key;
			rc_error_case("RDMA READ into an MR without "
				      "LOCAL_WRITE: LOC_PROT_ERR",
				      &w, PVO_WC_LOC_PROT_ERR, false, false,
				      NULL);
			sim_dereg_mr(&nlw_mr);
		}
		sim_buf_free(&nb);
	}

	/* receive buffer too small */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		post_recv1(&p.b, &B, 0xd061, 8192, 99);
		w = wr1(0xd062, PVO_WR_SEND, &A, 100, 100);
		post1(&p.a, &w);
		expect_cqe(&B.rcq, 0xd061, -1, PVO_WC_LOC_LEN_ERR,
			   "SEND of 100 B into 99: responder");
		expect_cqe(&A.scq, 0xd062, -1, PVO_WC_REM_INV_REQ_ERR,
			   "SEND of 100 B into 99: requester");
		expect_state(&p.a, PVO_QPS_ERR, "SEND into a short receive");
		expect_state(&p.b, PVO_QPS_ERR, "  ... responder");
		pair_destroy(&p);
	}

	/* RNR: no receive, retries exhausted */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		t0 = now_ms();
		w = wr1(0xd071, PVO_WR_SEND, &A, 100, 100);
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xd071, -1, PVO_WC_RNR_RETRY_EXC_ERR,
			   "SEND with no receive posted, rnr_retry 2");
		tap_diag("RNR error after %lld ms", now_ms() - t0);
		expect_state(&p.a, PVO_QPS_ERR, "RNR retries exhausted");
		expect_no_cqe(&B.rcq, 10, "RNR: responder");
		pair_destroy(&p);
	}
	/* RNR: the receive comes while the requester retries */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		w = wr1(0xd081, PVO_WR_SEND, &A, 100, 100);
		fill_pattern(&A.buf, 100, 100, 9000);
		post1(&p.a, &w);
		sleep_ms(30);
		prepare_dst(&B.buf, 8192, 100);
		post_recv1(&p.b, &B, 0xd082, 8192, 100);
		expect_cqe(&A.scq, 0xd081, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "SEND retried after RNR until a receive is posted");
		expect_cqe(&B.rcq, 0xd082, PVO_WC_RECV, PVO_WC_SUCCESS,
			   "  ... and received");
		check_data("SEND after RNR", &B.buf, 8192, 100, 9000);
		pair_destroy(&p);
	}

	/* after the first error everything flushes, signaled or not */
	if (pair_make(&p, PVO_QPT_RC, &fast, &fast)) {
		struct sim_wr ws[4];

		for (i = 0; i < 4; i++)
			ws[i] = write_wr(0xd091 + i, 100, 100, B.mr.iova + 100,
					 B.mr.key);
		ws[0].sge[0].lkey = 0xdead00;
		ws[0].flags = 0;
		ws[2].flags = 0;
		sim_post_send(&p.a, ws, 4);
		expect_cqe(&A.scq, 0xd091, -1, PVO_WC_LOC_PROT_ERR,
			   "first of 4 WQEs with a bad lkey, unsignaled: an "
			   "error always completes");
		for (i = 1; i < 4; i++)
			expect_cqe(&A.scq, 0xd091 + i, -1, PVO_WC_WR_FLUSH_ERR,
				   i == 2 ? "unsignaled WQE after the error"
					  : "WQE after the error");
		check_sq_consumed(&p.a, "flushed WQEs");
		/* posted to a QP in ERR: flushed too */
		w = write_wr(0xd0a1, 100, 100, B.mr.iova + 100, B.mr.key);
		w.flags = 0;
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xd0a1, -1, PVO_WC_WR_FLUSH_ERR,
			   "unsignaled WQE posted to a QP in ERR");
		pair_destroy(&p);
	}

	/* modify to ERR flushes the receive queue */
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		for (i = 0; i < 5; i++)
			post_recv1(&p.b, &B, 0xd0b1 + i, 8192, 64);
		st = sim_qp_set_state(&p.b, PVO_QPS_ERR);
		TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_QP to ERR");
		for (i = 0; i < 5; i++)
			expect_cqe(&B.rcq, 0xd0b1 + i, -1, PVO_WC_WR_FLUSH_ERR,
				   "outstanding receive flushed");
		tap_ok(p.b.rq_prod ==
			   le32toh(sim_load_acquire(&p.b.rq.hdr->cons)),
		       "RQ cons has passed every flushed receive");
		expect_no_cqe(&B.rcq, 10, "after the flush");
		w = wr1(0xd0c1, PVO_WR_SEND, &A, 100, 100);
		st = sim_qp_set_state(&p.a, PVO_QPS_ERR);
		post1(&p.a, &w);
		expect_cqe(&A.scq, 0xd0c1, -1, PVO_WC_WR_FLUSH_ERR,
			   "SEND posted after MODIFY_QP to ERR");
		pair_destroy(&p);
	}

	/* CQ overrun: 8 completions into a 4-entry CQ nobody polls */
	{
		struct sim_qp_init in = qp_init(&A, PVO_QPT_RC);
		struct sim_qp qa, qb;
		struct sim_cq small;
		struct sim_peer pa, pb;
		struct sim_wr ws[8];
		struct sim_conn cn = {.sgid_index = pair_gid()};
		uint32_t depth;
		int ev;

		st = sim_create_cq(&A.ctx, 4, &small);
		in.send_cq = &small;
		if (st == PVO_STATUS_OK)
			st = sim_create_qp(&A.pd, &in, &qa);
		if (st == PVO_STATUS_OK) {
			struct sim_qp_init ib = qp_init(&B, PVO_QPT_RC);

			st = sim_create_qp(&B.pd, &ib, &qb);
		}
		if (st == PVO_STATUS_OK) {
			sim_qp_peer(&qb, pair_gid(), &pb);
			sim_qp_peer(&qa, pair_gid(), &pa);
			st = sim_qp_connect(&qa, &cn, &pb);
			if (st == PVO_STATUS_OK)
				st = sim_qp_connect(&qb, &cn, &pa);
		}
		if (TAP_STATUS(st, PVO_STATUS_OK,
			       "QP whose send CQ has 4 entries")) {
			bool reused = true;

			/* a CQ the guest keeps draining is used far past its
			 * size: the device's cached view of the consumer is
			 * refreshed when the ring looks full, never an
			 * overrun */
			for (i = 0; i < 12 && reused; i++) {
				ws[0] = write_wr(0xd0c8 + i, 100, 64,
						 B.mr.iova + 100, B.mr.key);
				reused = sim_post_send(&qa, ws, 1) == 0 &&
					 expect_cqe(&small, 0xd0c8 + i,
						    PVO_WC_RDMA_WRITE,
						    PVO_WC_SUCCESS,
						    "WRITE through a drained "
						    "4-entry CQ");
			}
			tap_ok(reused, "12 completions through a 4-entry CQ "
				       "that is polled in between");
			sim_vm_drop_events(A.vm, 0);
			for (i = 0; i < 8; i++)
				ws[i] = write_wr(0xd0d1 + i, 100, 64,
						 B.mr.iova + 100, B.mr.key);
			sim_post_send(&qa, ws, 8);
			ev = sim_vm_expect_events(A.vm, PVO_EV_CQ_ERR,
						  small.handle, 1, timeout_ms,
						  30);
			depth = sim_cq_pending(&small);
			tap_ok(depth <= 4,
			       "the device never fills the CQ past its 4 "
			       "entries (%u)",
			       depth);
			tap_ok(ev == 1,
			       "CQ overrun raises one CQ_ERR event "
			       "for the CQ (%d)",
			       ev);
			expect_state(&qa, PVO_QPS_ERR, "CQ overrun");
			sim_destroy_qp(&qa);
			sim_destroy_qp(&qb);
		} else {
			tap_diag("%s / %s", A.vm->err, B.vm->err);
		}
		sim_destroy_cq(&small);
		drain(&B);
	}
	(void)c;
}

/* ------------------------------------------------------------------ */
/* RESET and tiny rings                                               */

/*
 * QEMU sends the memory table again on VM continue (and on memory
 * hot-plug); libvhost-user then maps guest RAM afresh and unmaps the old
 * mappings, and the back-end places each new mapping at its next colour,
 * so host addresses move. Rings and MRs made before must work through the
 * new mappings (the back-end caches ring addresses per memory table).
 */
static void test_mem_table_again(void)
{
	struct node *nodes[] = {&A, &B};
	struct pair p;
	unsigned int i;
	bool ok = true;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	ok &= xfer(&p, X_SEND, 4096, src_off(1), dst_off(1), false, 1300);
	ok &= xfer(&p, X_WRITE, 8192, src_off(2), dst_off(2), false, 1301);
	tap_ok(ok, "transfers before the memory table comes again");
	for (i = 0; i < 2; i++) {
		struct vu_frontend *fe = nodes[i]->vm->fe;
		int st = vu_frontend_stop(fe);

		if (!st)
			st = vu_frontend_start(fe);
		tap_ok(st == 0,
		       "%s: stopped, then SET_MEM_TABLE and the rings again "
		       "(%s)",
		       nodes[i]->name, st ? vu_frontend_error(fe) : "ok");
	}
	ok = xfer(&p, X_SEND, 4096, src_off(3), dst_off(3), false, 1302);
	ok &= xfer(&p, X_SEND_IMM, 65536, src_off(4), dst_off(4), false,
		   1303);
	ok &= xfer(&p, X_WRITE, 65536, src_off(5), dst_off(5), false, 1304);
	ok &= xfer(&p, X_READ, 8192, src_off(6), dst_off(6), false, 1305);
	tap_ok(ok, "the same QPs move data through the new mappings");
	check_sq_consumed(&p.a, "after the memory table came again");
	pair_destroy(&p);
}

static void test_reset(void)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_peer pa, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_qp qa, qb;
	struct sim_wr w[3];
	struct pair p;
	unsigned int i;
	int st;

	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	/* receives outstanding and WQEs the device has not seen */
	for (i = 0; i < 3; i++) {
		post_recv1(&p.b, &B, 0xd201 + i, 8192, 64);
		w[i] =
		    write_wr(0xd211 + i, 100, 100, B.mr.iova + 100, B.mr.key);
	}
	sim_post_send_nodb(&p.a, w, 3);
	st = sim_qp_set_state(&p.a, PVO_QPS_RESET);
	if (st == PVO_STATUS_OK)
		st = sim_qp_set_state(&p.b, PVO_QPS_RESET);
	TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_QP RTS -> RESET on both");
	expect_no_cqe(&A.scq, 30, "RESET drops unexecuted send WQEs");
	expect_no_cqe(&B.rcq, 0, "RESET drops posted receives");
	tap_ok(p.a.sq_prod == le32toh(sim_load_acquire(&p.a.sq.hdr->cons)) &&
		   p.b.rq_prod == le32toh(sim_load_acquire(&p.b.rq.hdr->cons)),
	       "RESET sets SQ and RQ cons = prod (SQ %u/%u, RQ %u/%u)",
	       le32toh(p.a.sq.hdr->cons), p.a.sq_prod,
	       le32toh(p.b.rq.hdr->cons), p.b.rq_prod);
	/* the same QPs connect again and carry on from there */
	sim_qp_peer(&p.b, pair_gid(), &pb);
	sim_qp_peer(&p.a, pair_gid(), &pa);
	st = sim_qp_connect(&p.a, &conn, &pb);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&p.b, &conn, &pa);
	if (TAP_STATUS(st, PVO_STATUS_OK, "RESET -> INIT -> RTR -> RTS again"))
		xfer(&p, X_SEND, 5000, 300, 400, false, 9600);
	pair_destroy(&p);

	/* rings of one entry */
	in.sq_entries = in.rq_entries = 1;
	ib.sq_entries = ib.rq_entries = 1;
	st = sim_create_qp(&A.pd, &in, &qa);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &ib, &qb);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&qb, pair_gid(), &pb);
		sim_qp_peer(&qa, pair_gid(), &pa);
		st = sim_qp_connect(&qa, &conn, &pb);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&qb, &conn, &pa);
	}
	if (TAP_STATUS(st, PVO_STATUS_OK, "RC QPs with 1-entry SQ and RQ")) {
		struct pair q = {
		    .na = &A, .nb = &B, .a = qa, .b = qb, .made = true};
		bool ok = true;

		for (i = 0; i < 5 && ok; i++)
			ok = xfer(&q, i & 1 ? X_WRITE : X_SEND, 777 + i, 64,
				  128, false, 9610 + i);
		tap_ok(ok, "five messages through the 1-entry rings");
		pair_destroy(&q);
	}
}

/* ------------------------------------------------------------------ */
/* malformed objects and commands                                     */

/* A CREATE_CQ body for @entries with a valid ring the caller may spoil. */
static int cq_cmd(struct sim_ring *r, uint32_t entries, uint32_t ring_entries,
		  struct pvo_cmd_create_cq *c)
{
	memset(c, 0, sizeof(*c));
	if (sim_ring_alloc(r, sim_vm_ram(A.vm), ring_entries, 6,
			   SIM_LAYOUT_SCATTER) < 0)
		return -1;
	c->entries = htole32(entries);
	c->ring = r->pages.pdir;
	return 0;
}

static void try_cq(const char *what, int want, uint32_t entries,
		   void (*spoil)(struct sim_ring *, struct pvo_cmd_create_cq *))
{
	struct pvo_cmd_create_cq c;
	struct sim_ring r;
	uint32_t h = 0;
	int st;

	if (cq_cmd(&r, entries,
		   entries && !(entries & (entries - 1)) && entries <= 4096
		       ? entries
		       : 64,
		   &c) < 0) {
		tap_ok(false, "%s: guest RAM for the ring", what);
		return;
	}
	if (spoil)
		spoil(&r, &c);
	st = pvo_create_cq(A.vm->fe, A.ctx.handle, &c, &h);
	if (want >= 0)
		TAP_STATUS(st, want, "CREATE_CQ %s", what);
	else
		tap_ok(st > PVO_STATUS_OK, "CREATE_CQ %s is refused (%s)", what,
		       pvo_status_name(st));
	if (st == PVO_STATUS_OK)
		pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_CQ, A.ctx.handle, h);
	sim_ring_free(&r);
}

static uint64_t ram_end;

static void spoil_no_events(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->flags = htole32(PVO_CQ_F_NO_EVENTS);
}

static void spoil_unknown_flag(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->flags = htole32(PVO_CQ_F_NO_EVENTS | 0x80000000u);
}

static void spoil_dir_outside(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.dir_gpa = htole64(ram_end);
}

static void spoil_dir_unaligned(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.dir_gpa = htole64(le64toh(c->ring.dir_gpa) + 8);
}

static __le64 *table0(struct sim_ring *r)
{
	return guest_ram_ptr(r->pages.ram, r->pages.pdir_mem.tables_gpa,
			     PVO_PAGE_SIZE);
}

static void spoil_page_outside(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)c;
	table0(r)[1] = htole64(ram_end + 0x10000);
}

static void spoil_page_straddles_end(struct sim_ring *r,
				     struct pvo_cmd_create_cq *c)
{
	(void)c;
	table0(r)[1] = htole64(ram_end - PVO_PAGE_SIZE / 2);
}

static void spoil_page_unaligned(struct sim_ring *r,
				 struct pvo_cmd_create_cq *c)
{
	(void)c;
	table0(r)[0] = htole64(le64toh(table0(r)[0]) + 64);
}

static void spoil_table_outside(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	__le64 *dir = guest_ram_ptr(r->pages.ram, r->pages.pdir_mem.dir_gpa,
				    PVO_PAGE_SIZE);

	(void)c;
	dir[0] = htole64(0xfff0000000000000ull);
}

static void spoil_too_few_pages(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = htole32(le32toh(c->ring.npages) - 1);
}

static void spoil_header_only(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = htole32(1);
}

static void spoil_zero_pages(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = 0;
}

static void spoil_huge_pages(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = htole32(PVO_PDIR_MAX_PAGES + 1);
}

static struct sim_ctx ctx2; /* a second context of VM a */
static struct sim_pd pd2;
static struct sim_cq cq2;

/* ctx2 / pd2 / cq2, made once for the sections that need them. */
static bool ensure_ctx2(void)
{
	int st;

	if (ctx2.vm)
		return true;
	st = sim_ctx_open(A.vm, &ctx2);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&ctx2, &pd2);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&ctx2, 16, &cq2);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"a second context of VM a with a PD and a CQ")) {
		tap_diag("%s", A.vm->err);
		return false;
	}
	return true;
}

static void test_malformed(void)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC);
	struct pvo_cmd_create_qp qc;
	struct pvo_cmd_reg_mr mc;
	struct pvo_cmd_create_srq sc;
	struct pvo_cmd_create_ah ac;
	struct pvo_qp_attr attr;
	struct sim_qp qp, gsi;
	struct sim_srq srq;
	struct sim_ring r1, r2;
	uint32_t h, h2, key;
	int st;

	ram_end = sim_vm_ram(A.vm)->size;
	if (!ensure_ctx2())
		return;

	/* CQ rings */
	try_cq("of 64 entries (valid)", PVO_STATUS_OK, 64, NULL);
	try_cq("of 1 entry (valid)", PVO_STATUS_OK, 1, NULL);
	try_cq("with NO_EVENTS (valid)", PVO_STATUS_OK, 64, spoil_no_events);
	try_cq("with an unknown flag", PVO_STATUS_EINVAL, 64,
	       spoil_unknown_flag);
	try_cq("of 0 entries", PVO_STATUS_EINVAL, 0, NULL);
	try_cq("of 48 entries (not a power of two)", PVO_STATUS_EINVAL, 48,
	       NULL);
	try_cq("of 131072 entries (> max_cqe)", PVO_STATUS_EINVAL, 131072,
	       NULL);
	try_cq("with its directory outside guest RAM", PVO_STATUS_EFAULT, 64,
	       spoil_dir_outside);
	try_cq("with an unaligned directory address", -1, 64,
	       spoil_dir_unaligned);
	try_cq("with a table page at 2^64 - 2^52", PVO_STATUS_EFAULT, 64,
	       spoil_table_outside);
	try_cq("with a ring page outside guest RAM", PVO_STATUS_EFAULT, 64,
	       spoil_page_outside);
	try_cq("with a ring page straddling the end of RAM", -1, 64,
	       spoil_page_straddles_end);
	try_cq("with an unaligned header page", -1, 64, spoil_page_unaligned);
	try_cq("with one page too few", PVO_STATUS_EINVAL, 256,
	       spoil_too_few_pages);
	try_cq("with only the header page", PVO_STATUS_EINVAL, 64,
	       spoil_header_only);
	try_cq("with 0 pages", PVO_STATUS_EINVAL, 64, spoil_zero_pages);
	try_cq("with 2^18 + 1 pages", PVO_STATUS_EINVAL, 64, spoil_huge_pages);

	/* MRs */
	{
		struct sim_buf b;
		struct sim_pdir_mem pm;

		if (sim_buf_alloc(&b, sim_vm_ram(A.vm),
				  sim_vm_va(A.vm, 3 * PVO_PAGE_SIZE),
				  2 * PVO_PAGE_SIZE, 100, SIM_LAYOUT_SCATTER))
			tap_bail("no guest RAM");
		memset(&mc, 0, sizeof(mc));
		mc.pd = htole32(A.pd.handle);
		mc.access = htole32(PVO_ACCESS_LOCAL_WRITE);
		mc.iova = htole64(b.va);
		mc.length = htole64(2 * PVO_PAGE_SIZE);
		sim_pdir_build(sim_vm_ram(A.vm), b.pages.gpa, 3, &mc.pages,
			       &pm);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_OK,
			   "REG_MR of 8 KiB at page offset 100 over 3 pages");
		if (st == PVO_STATUS_OK)
			pvo_destroy(A.vm->fe, PVO_CMD_DEREG_MR, A.ctx.handle,
				    h);
		mc.pages.npages = htole32(2);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR with a page list too short for iova + "
			   "length -> EINVAL");
		mc.pages.npages = htole32(3);
		mc.pd = htole32(pd2.handle);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "REG_MR on another context's PD -> ENOENT");
		mc.pd = htole32(A.pd.handle);
		mc.access = htole32(PVO_ACCESS_REMOTE_WRITE);
		mc.length = htole64(2 * PVO_PAGE_SIZE);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR with REMOTE_WRITE but not LOCAL_WRITE -> "
			   "EINVAL");
		mc.access = htole32(PVO_ACCESS_LOCAL_WRITE | (1u << 20));
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR with an unknown access bit -> EINVAL");
		mc.access = htole32(PVO_ACCESS_LOCAL_WRITE);
		guest_ram_write(sim_vm_ram(A.vm), pm.tables_gpa + 8,
				&(__le64){htole64(ram_end)}, 8);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EFAULT,
			   "REG_MR with a page outside guest RAM -> EFAULT");
		mc.length = htole64(~0ull - 4096);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR whose iova + length wraps -> EINVAL");
		sim_pdir_free(sim_vm_ram(A.vm), &pm);
		sim_buf_free(&b);
	}

	/* QPs */
	st = sim_create_qp(&A.pd, &in, &qp);
	TAP_STATUS(st, PVO_STATUS_OK, "CREATE_QP (valid)");
	memset(&qc, 0, sizeof(qc));
	if (sim_ring_alloc(&r1, sim_vm_ram(A.vm), 64, pvo_send_wqe_shift(4, 64),
			   SIM_LAYOUT_SCATTER) ||
	    sim_ring_alloc(&r2, sim_vm_ram(A.vm), 64, pvo_recv_wqe_shift(4),
			   SIM_LAYOUT_SCATTER))
		tap_bail("no guest RAM");
#define QC_RESET()                                                             \
	do {                                                                   \
		memset(&qc, 0, sizeof(qc));                                    \
		qc.pd = htole32(A.pd.handle);                                  \
		qc.send_cq = htole32(A.scq.handle);                            \
		qc.recv_cq = htole32(A.rcq.handle);                            \
		qc.qp_type = PVO_QPT_RC;                                       \
		qc.sq_wqe_shift = pvo_send_wqe_shift(4, 64);                   \
		qc.rq_wqe_shift = pvo_recv_wqe_shift(4);                       \
		qc.sq_entries = htole32(64);                                   \
		qc.rq_entries = htole32(64);                                   \
		qc.max_send_sge = htole32(4);                                  \
		qc.max_recv_sge = htole32(4);                                  \
		qc.max_inline_data = htole32(64);                              \
		qc.sq = r1.pages.pdir;                                         \
		qc.rq = r2.pages.pdir;                                         \
	} while (0)
#define QC_TRY(want, what)                                                     \
	do {                                                                   \
		st = pvo_create_qp(A.vm->fe, A.ctx.handle, &qc, &h, &h2);      \
		if ((want) >= 0)                                               \
			TAP_STATUS(st, (want), "CREATE_QP %s", what);          \
		else                                                           \
			tap_ok(st > PVO_STATUS_OK,                             \
			       "CREATE_QP %s is refused (%s)", what,           \
			       pvo_status_name(st));                           \
		if (st == PVO_STATUS_OK)                                       \
			pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_QP,              \
				    A.ctx.handle, h);                          \
	} while (0)
	QC_RESET();
	QC_TRY(PVO_STATUS_OK, "from a hand-made body (valid)");
	QC_RESET();
	qc.pd = htole32(pd2.handle);
	QC_TRY(PVO_STATUS_ENOENT, "on another context's PD");
	QC_RESET();
	qc.send_cq = htole32(cq2.handle);
	QC_TRY(PVO_STATUS_ENOENT, "with another context's send CQ");
	QC_RESET();
	qc.recv_cq = htole32(B.rcq.handle ^ 0x55500000);
	QC_TRY(PVO_STATUS_ENOENT, "with a made-up receive CQ handle");
	QC_RESET();
	qc.srq = htole32(0x12345);
	qc.rq_entries = 0;
	qc.rq.npages = 0;
	QC_TRY(PVO_STATUS_ENOENT, "with a made-up SRQ handle");
	QC_RESET();
	qc.sq_wqe_shift++;
	QC_TRY(PVO_STATUS_EINVAL, "with the wrong sq_wqe_shift");
	QC_RESET();
	qc.rq_wqe_shift--;
	QC_TRY(PVO_STATUS_EINVAL, "with the wrong rq_wqe_shift");
	QC_RESET();
	qc.sq_entries = htole32(48);
	QC_TRY(PVO_STATUS_EINVAL, "with 48 SQ entries");
	QC_RESET();
	qc.rq_entries = htole32(0);
	QC_TRY(PVO_STATUS_EINVAL, "with an RQ page list but 0 entries");
	QC_RESET();
	qc.sq_entries = htole32(32768);
	QC_TRY(PVO_STATUS_EINVAL, "with 32768 SQ entries (> max_qp_wr)");
	QC_RESET();
	qc.max_send_sge = htole32(17);
	qc.sq_wqe_shift = pvo_send_wqe_shift(17, 64);
	QC_TRY(PVO_STATUS_EINVAL, "with 17 send SGEs");
	QC_RESET();
	qc.max_recv_sge = htole32(17);
	qc.rq_wqe_shift = pvo_recv_wqe_shift(17);
	QC_TRY(PVO_STATUS_EINVAL, "with 17 receive SGEs");
	QC_RESET();
	qc.max_inline_data = htole32(257);
	qc.sq_wqe_shift = pvo_send_wqe_shift(4, 257);
	QC_TRY(PVO_STATUS_EINVAL, "with 257 bytes of inline data");
	QC_RESET();
	qc.qp_type = 9;
	QC_TRY(PVO_STATUS_EINVAL, "of type 9");
	QC_RESET();
	qc.qp_type = 0;
	QC_TRY(PVO_STATUS_EINVAL, "of type 0");
	QC_RESET();
	qc.sq.npages = htole32(1);
	QC_TRY(PVO_STATUS_EINVAL, "with an SQ of only its header page");
	QC_RESET();
	qc.rq.dir_gpa = htole64(ram_end + 0x1000);
	QC_TRY(PVO_STATUS_EFAULT, "with the RQ directory outside guest RAM");
	QC_RESET();
	qc.qp_type = PVO_QPT_GSI;
	QC_TRY(-1, "of type GSI from a user context");
	QC_RESET();
	qc.send_cq = 0;
	QC_TRY(PVO_STATUS_ENOENT, "without a send CQ");
	sim_ring_free(&r1);
	sim_ring_free(&r2);

	/* GSI belongs to the kernel: QPN 1, once */
	{
		struct sim_pd kpd;
		struct sim_cq kcq;
		struct sim_qp_init gi = {
		    .type = PVO_QPT_GSI,
		    .sq_entries = 64,
		    .rq_entries = 64,
		    .max_send_sge = 2,
		    .max_recv_sge = 2,
		};

		st = sim_alloc_pd(&A.vm->kctx, &kpd);
		if (st == PVO_STATUS_OK)
			st = sim_create_cq(&A.vm->kctx, 64, &kcq);
		if (TAP_STATUS(st, PVO_STATUS_OK, "kernel PD and CQ")) {
			gi.send_cq = gi.recv_cq = &kcq;
			st = sim_create_qp(&kpd, &gi, &gsi);
			tap_ok(st == PVO_STATUS_OK && gsi.qpn == 1,
			       "the kernel's GSI QP gets QPN 1 (%s, qpn %u)",
			       pvo_status_name(st), gsi.qpn);
			if (st == PVO_STATUS_OK) {
				struct sim_qp g2;

				st = sim_create_qp(&kpd, &gi, &g2);
				tap_ok(st > PVO_STATUS_OK,
				       "a second GSI QP is refused (%s)",
				       pvo_status_name(st));
				if (st == PVO_STATUS_OK)
					sim_destroy_qp(&g2);
				sim_destroy_qp(&gsi);
			}
			sim_destroy_cq(&kcq);
			sim_dealloc_pd(&kpd);
		} else {
			tap_diag("%s", A.vm->err);
		}
	}

	/* state transitions out of order */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = htole32(PVO_QPS_RTS);
	st = sim_modify_qp(&qp, PVO_QP_STATE | PVO_QP_SQ_PSN, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP RESET -> RTS -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_RTR);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP RESET -> RTR -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_INIT);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "MODIFY_QP RESET -> INIT without PKEY_INDEX / PORT / "
		   "ACCESS_FLAGS -> EINVAL");
	attr.qp_state = htole32(7);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP to state 7 -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_INIT);
	attr.port_num = 1;
	st = sim_modify_qp(&qp,
			   PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			       PVO_QP_ACCESS_FLAGS,
			   &attr);
	TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_QP RESET -> INIT");
	attr.port_num = 2;
	attr.qp_state = htole32(PVO_QPS_INIT);
	st = sim_modify_qp(&qp, PVO_QP_STATE | PVO_QP_PORT, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP to port 2 -> EINVAL");
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = htole32(PVO_QPS_RTS);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP INIT -> RTS -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_RTR);
	st = sim_modify_qp(&qp, PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU,
			   &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "MODIFY_QP INIT -> RTR (RC) without DEST_QPN / RQ_PSN / "
		   "MAX_DEST_RD_ATOMIC / MIN_RNR_TIMER -> EINVAL");
	{
		struct sim_peer peer;

		sim_qp_peer(&qp, pair_gid(), &peer);
		sim_av_to(&attr.av, &peer, 13);
		attr.path_mtu = htole32(A.vm->port.active_mtu);
		attr.dest_qp_num = htole32(peer.qpn);
		st = sim_modify_qp(&qp,
				   PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
				       PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
				       PVO_QP_MAX_DEST_RD_ATOMIC |
				       PVO_QP_MIN_RNR_TIMER,
				   &attr);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "MODIFY_QP to RTR with an empty source GID slot "
			   "-> EINVAL");
		attr.av.sgid_index = pair_gid();
		attr.path_mtu = htole32(9);
		st = sim_modify_qp(&qp,
				   PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
				       PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
				       PVO_QP_MAX_DEST_RD_ATOMIC |
				       PVO_QP_MIN_RNR_TIMER,
				   &attr);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "MODIFY_QP to RTR with path MTU enum 9 -> EINVAL");
	}
	tap_ok(qp_state(&qp) == PVO_QPS_INIT,
	       "failed modifies left the QP in INIT (%s)",
	       sim_qp_state_name(qp_state(&qp)));
	{
		struct pvo_cmd_modify_qp mq = {0};

		mq.qp = htole32(qp.handle);
		mq.attr_mask = htole32(PVO_QP_STATE);
		mq.attr.qp_state = htole32(PVO_QPS_ERR);
		st = pvo_modify_qp(A.vm->fe, ctx2.handle, &mq);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "MODIFY_QP of another context's QP -> ENOENT");
		st = pvo_query_qp(A.vm->fe, ctx2.handle, qp.handle, &attr);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "QUERY_QP of another context's QP -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_QP, ctx2.handle,
				 qp.handle);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_QP of another context's QP -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DEREG_MR, ctx2.handle,
				 A.mr.handle);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DEREG_MR of another context's MR -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_CQ, ctx2.handle,
				 A.scq.handle);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_CQ of another context's CQ -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_CQ, A.ctx.handle,
				 A.scq.handle);
		TAP_STATUS(st, PVO_STATUS_EBUSY,
			   "DESTROY_CQ while a QP uses it -> EBUSY");
	}
	sim_destroy_qp(&qp);

	/* SRQs */
	st = sim_create_srq(&A.pd, 48, 4, 0, &srq);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "CREATE_SRQ of 48 entries -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_destroy_srq(&srq);
	st = sim_create_srq(&A.pd, 64, 17, 0, &srq);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "CREATE_SRQ with 17 SGEs -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_destroy_srq(&srq);
	st = sim_create_srq(&A.pd, 32768, 1, 0, &srq);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "CREATE_SRQ of 32768 entries (> max_srq_wr + 1) -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_destroy_srq(&srq);
	if (sim_ring_alloc(&r1, sim_vm_ram(A.vm), 64, pvo_recv_wqe_shift(4),
			   SIM_LAYOUT_SCATTER) == 0) {
		memset(&sc, 0, sizeof(sc));
		sc.pd = htole32(A.pd.handle);
		sc.entries = htole32(64);
		sc.max_sge = htole32(4);
		sc.wqe_shift = pvo_recv_wqe_shift(4) + 1;
		sc.ring = r1.pages.pdir;
		st = pvo_create_srq(A.vm->fe, A.ctx.handle, &sc, &h, NULL);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "CREATE_SRQ with the wrong wqe_shift -> EINVAL");
		sc.wqe_shift--;
		sc.pd = htole32(pd2.handle);
		st = pvo_create_srq(A.vm->fe, A.ctx.handle, &sc, &h, NULL);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "CREATE_SRQ on another context's PD -> ENOENT");
		sim_ring_free(&r1);
	}

	/* AHs */
	memset(&ac, 0, sizeof(ac));
	ac.pd = htole32(A.pd.handle);
	memcpy(ac.av.dgid, B.vm->gid[pair_gid()], 16);
	memcpy(ac.av.dmac, B.vm->mac, 6);
	ac.av.sgid_index = 12;
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "CREATE_AH from an empty source GID slot -> EINVAL");
	ac.av.sgid_index = 200;
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "CREATE_AH from GID index 200 -> EINVAL");
	ac.av.sgid_index = pair_gid();
	ac.pd = htole32(pd2.handle);
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "CREATE_AH on another context's PD -> ENOENT");
	ac.pd = htole32(A.pd.handle);
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	if (TAP_STATUS(st, PVO_STATUS_OK, "CREATE_AH (valid)")) {
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH, ctx2.handle, h);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_AH of another context's AH -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH, A.ctx.handle, h);
		TAP_STATUS(st, PVO_STATUS_OK, "DESTROY_AH");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH, A.ctx.handle, h);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_AH of a destroyed AH -> ENOENT");
	}

	/* a UD WQE naming an AH of another context, or no AH */
	{
		struct ud_pair u;
		struct sim_wr w;
		uint32_t ah2;

		if (ud_make(&u, &A, &B)) {
			ac.pd = htole32(pd2.handle);
			st = pvo_create_ah(A.vm->fe, ctx2.handle, &ac, &ah2);
			if (TAP_STATUS(st, PVO_STATUS_OK,
				       "CREATE_AH in the second context")) {
				post_recv1(&u.b, &B, 0xe001, 0, 4096);
				w = ud_wr(0xe002, ah2, u.b.qpn, QKEY, 4096, 10);
				post1(&u.a, &w);
				if (sim_wait_cq(&A.scq, (struct pvo_cqe[1]){0},
						1, timeout_ms) == 1)
					tap_ok(true, "UD WQE with another "
						     "context's AH completes");
				else
					tap_ok(false, "UD WQE with another "
						      "context's AH completes");
				expect_no_cqe(&B.rcq, 30,
					      "UD WQE with another context's "
					      "AH is not delivered");
				pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH,
					    ctx2.handle, ah2);
			}
			ud_destroy(&u, &A, &B);
		}
	}
}

/* ------------------------------------------------------------------ */
/* doorbells and kernel QPs                                           */

static void test_doorbells(void)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_qp qx, qb;
	struct sim_peer px, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_ctx ctx3;
	struct sim_mr mr2;
	struct pvo_cqe c[64];
	struct sim_wr w;
	struct pair p;
	uint64_t sum;
	unsigned int i, posted, got;
	int st;

	if (!ensure_ctx2())
		return;
	in.send_cq = in.recv_cq = &cq2;
	st = sim_create_qp(&pd2, &in, &qx);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &ib, &qb);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&qb, pair_gid(), &pb);
		sim_qp_peer(&qx, pair_gid(), &px);
		st = sim_qp_connect(&qx, &conn, &pb);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&qb, &conn, &px);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK, "RC pair from a's second context")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}
	st =
	    sim_reg_mr(&pd2, &A.buf, 0, 64 * KIB, PVO_ACCESS_LOCAL_WRITE, &mr2);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "an MR of the second context")) {
		tap_diag("%s", A.vm->err);
		return;
	}
	w = write_wr(0xf001, 100, 100, B.mr.iova + 100, B.mr.key);
	w.sge[0].lkey = mr2.key;
	fill_pattern(&A.buf, 100, 100, 9100);
	prepare_dst(&B.buf, 100, 100);
	sum = buf_sum(&B.buf);
	sim_post_send_nodb(&qx, &w, 1);
	sim_ctx_ring(&A.ctx, qx.handle);
	sleep_ms(50);
	tap_ok(sim_cq_pending(&cq2) == 0 && buf_sum(&B.buf) == sum,
	       "a doorbell record naming another context's QP is ignored");
	sim_qp_doorbell(&qx);
	expect_cqe(&cq2, 0xf001, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "the owner's doorbell runs the same WQE");
	check_data("WRITE after the owner's doorbell", &B.buf, 100, 100, 9100);

	/* garbage records and kicks without records */
	{
		const uint32_t junk[] = {0,	      0xffffffffu,
					 0x12345678u, A.scq.handle,
					 A.mr.handle, qx.handle};

		sim_destroy_qp(&qx);
		sim_dereg_mr(&mr2);
		for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
			sim_ctx_ring(&A.ctx, junk[i]);
		for (i = 0; i < 10; i++)
			sim_ctx_kick(&A.ctx);
		/* kicks of every vring, assigned to a context or not */
		for (i = 0; i < A.vm->fe->nvqs; i++)
			split_vq_kick(vu_vq(A.vm->fe, i));
		sim_destroy_qp(&qb);
	}
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		xfer(&p, X_WRITE, 5000, 77, 88, false, 9101);
		pair_destroy(&p);
	}
	tap_ok(backend_running(&bp),
	       "records of destroyed QPs, CQ and MR handles, 0 and ~0, "
	       "kicks without records and kicks of every vring were "
	       "survived");

	/* a context whose record ring is nonsense */
	st = sim_ctx_open(A.vm, &ctx3);
	if (TAP_STATUS(st, PVO_STATUS_OK, "a third context")) {
		struct pvo_ring_hdr *h = sim_ctx_db_hdr(&ctx3);
		__le32 *e = sim_ctx_db_entries(&ctx3);

		for (i = 0; i < PVO_DB_RING_ENTRIES; i++)
			e[i] = htole32(0x41414141 + i);
		h->cons = htole32(7);
		h->prod = htole32(100000);
		sim_ctx_kick(&ctx3);
		h->prod = htole32(3);
		sim_ctx_kick(&ctx3);
		sleep_ms(20);
		st = sim_ctx_close(&ctx3);
		TAP_STATUS(st, PVO_STATUS_OK,
			   "a context with a nonsense record ring can be "
			   "freed");
	}
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		xfer(&p, X_SEND, 3000, 55, 66, false, 9102);

		/* one post per doorbell, as fast as possible */
		long long deadline = now_ms() + 4 * timeout_ms;

		posted = got = 0;
		while (got < 2000 && now_ms() < deadline) {
			int n;

			if (posted < 2000 && sim_sq_outstanding(&p.a) < 200) {
				w = write_wr(posted, 1000 + posted % 50, 8,
					     B.mr.iova + 1000 + posted % 50,
					     B.mr.key);
				if (sim_post_send(&p.a, &w, 1) == 0)
					posted++;
				continue;
			}
			n = sim_wait_cq(&A.scq, c, 64,
					posted < 2000 ? 0 : timeout_ms);
			if (n <= 0 && posted == 2000)
				break;
			got += n > 0 ? n : 0;
		}
		tap_ok(got == 2000,
		       "2000 single-WQE posts racing the device: all complete "
		       "(%u), %llu doorbell records",
		       got, (unsigned long long)p.a.doorbells);
		pair_destroy(&p);
	}
}

/* QP1 of a's kernel to QP1 of b's kernel, as ib_mad does. */
static void test_gsi(void)
{
	const uint32_t gsi_qkey = 0x80010000u;
	struct sim_qp_init gi = {
	    .type = PVO_QPT_GSI,
	    .sq_entries = 64,
	    .rq_entries = 64,
	    .max_send_sge = 2,
	    .max_recv_sge = 2,
	};
	struct sim_conn conn = {.qkey = gsi_qkey};
	struct sim_pd kpd[2];
	struct sim_cq kcq[2];
	struct sim_qp gsi[2];
	struct node *n[2] = {&A, &B};
	struct sim_peer peer;
	struct pvo_av av;
	struct pvo_cqe c;
	struct sim_wr w;
	uint32_t ah;
	uint8_t grh[40];
	unsigned int i;
	int st = PVO_STATUS_OK;

	for (i = 0; i < 2 && st == PVO_STATUS_OK; i++) {
		st = sim_alloc_pd(&n[i]->vm->kctx, &kpd[i]);
		if (st == PVO_STATUS_OK)
			st = sim_create_cq(&n[i]->vm->kctx, 64, &kcq[i]);
		gi.send_cq = gi.recv_cq = &kcq[i];
		if (st == PVO_STATUS_OK)
			st = sim_create_qp(&kpd[i], &gi, &gsi[i]);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&gsi[i], &conn, NULL);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"GSI QPs of a's and b's kernels to RTS")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}
	tap_ok(gsi[0].qpn == 1 && gsi[1].qpn == 1, "both are QPN 1 (%u, %u)",
	       gsi[0].qpn, gsi[1].qpn);
	sim_qp_peer(&gsi[1], pair_gid(), &peer);
	sim_av_to(&av, &peer, pair_gid());
	st = sim_create_ah(&kpd[0], &av, &ah);
	TAP_STATUS(st, PVO_STATUS_OK, "kernel AH to b's link-local GID");

	/* a MAD: 256 bytes from guest-physical memory */
	fill_pattern(&A.buf, 3 * PVO_PAGE_SIZE + 8, 256, 9250);
	prepare_dst(&B.buf, 5 * PVO_PAGE_SIZE + 64, 296);
	{
		struct sim_sge s = {
		    .addr = sim_buf_gpa(&B.buf, 5 * PVO_PAGE_SIZE + 64),
		    .length = 296,
		    .lkey = PVO_LOCAL_DMA_LKEY,
		};

		sim_post_recv(&gsi[1], 0xf301, &s, 1);
	}
	w = wr1(0xf302, PVO_WR_SEND, &A, 0, 256);
	w.sge[0].addr = sim_buf_gpa(&A.buf, 3 * PVO_PAGE_SIZE + 8);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	w.ah = ah;
	w.remote_qpn = 1;
	w.remote_qkey = gsi_qkey;
	post1(&gsi[0], &w);
	expect_cqe(&kcq[0], 0xf302, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "GSI SEND of a 256-byte MAD from a to b");
	if (get_cqe(&kcq[1], &c, "GSI receive"))
		tap_ok(cqe_ok(&c, 0xf301, PVO_WC_RECV, PVO_WC_SUCCESS,
			      "GSI receive") &&
			   le32toh(c.src_qp) == 1 &&
			   le32toh(c.byte_len) == 296 &&
			   (c.flags & PVO_WC_F_GRH),
		       "b's GSI receives it: src_qp 1, byte_len 40 + 256, "
		       "GRH (got %s)",
		       cqe_str(&c));
	sim_buf_read(&B.buf, 5 * PVO_PAGE_SIZE + 64, grh, 40);
	sim_buf_fill(&B.buf, 5 * PVO_PAGE_SIZE + 64, GUARD_BYTE, 40);
	check_data("GSI MAD", &B.buf, 5 * PVO_PAGE_SIZE + 104, 256, 9250);

	/* a user UD QP cannot reach QP1: its Q_Key is not the GSI's */
	{
		struct ud_pair u;

		if (ud_make(&u, &A, &B)) {
			struct sim_sge s = {
			    .addr = sim_buf_gpa(&B.buf, 5 * PVO_PAGE_SIZE + 64),
			    .length = 296,
			    .lkey = PVO_LOCAL_DMA_LKEY,
			};

			sim_post_recv(&gsi[1], 0xf303, &s, 1);
			w = ud_wr(0xf304, u.ah_ll, 1, 0x80000000u, 4096, 64);
			post1(&u.a, &w);
			expect_cqe(&A.scq, 0xf304, -1, PVO_WC_SUCCESS,
				   "user UD SEND to QPN 1 with \"the QP's "
				   "Q_Key\"");
			expect_no_cqe(&kcq[1], 30,
				      "b's GSI does not take a user QP's "
				      "Q_Key");
			ud_destroy(&u, &A, &B);
		}
	}
	sim_destroy_ah(&A.vm->kctx, ah);
	for (i = 0; i < 2; i++) {
		sim_destroy_qp(&gsi[i]);
		sim_destroy_cq(&kcq[i]);
		sim_dealloc_pd(&kpd[i]);
	}
}

static void test_kernel_qp(void)
{
	struct sim_ctx *k = &A.vm->kctx;
	struct sim_pd kpd;
	struct sim_cq kcq;
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_qp qk, qb;
	struct sim_peer pk, pb;
	struct sim_conn conn = {.sgid_index = pair_gid()};
	struct sim_wr w;
	struct pvo_cqe c;
	const uint64_t off = 3 * PVO_PAGE_SIZE + 500; /* within one page */
	int st;

	st = sim_alloc_pd(k, &kpd);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(k, 64, &kcq);
	in.send_cq = in.recv_cq = &kcq;
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&kpd, &in, &qk);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&B.pd, &ib, &qb);
	if (st == PVO_STATUS_OK) {
		sim_qp_peer(&qb, pair_gid(), &pb);
		sim_qp_peer(&qk, pair_gid(), &pk);
		st = sim_qp_connect(&qk, &conn, &pb);
		if (st == PVO_STATUS_OK)
			st = sim_qp_connect(&qb, &conn, &pk);
	}
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"kernel RC QP on a (doorbells via queue 2) connected "
			"to a user QP on b")) {
		tap_diag("%s / %s", A.vm->err, B.vm->err);
		return;
	}
	fill_pattern(&A.buf, off, 1000, 9200);
	prepare_dst(&B.buf, 4096, 1000);
	post_recv1(&qb, &B, 0xf101, 4096, 1000);
	w = wr1(0xf102, PVO_WR_SEND, &A, 0, 1000);
	w.sge[0].addr = sim_buf_gpa(&A.buf, off);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf102, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "kernel SEND from a guest-physical SGE (local DMA lkey)");
	expect_cqe(&B.rcq, 0xf101, PVO_WC_RECV, PVO_WC_SUCCESS,
		   "  ... received by the user QP");
	check_data("kernel SEND", &B.buf, 4096, 1000, 9200);
	tap_ok(k->doorbells > 0, "the kernel rang its own doorbell queue");

	fill_pattern(&B.buf, 8192 + 3, 900, 9201);
	prepare_dst(&A.buf, off, 900);
	w = wr1(0xf103, PVO_WR_RDMA_READ, &A, 0, 900);
	w.sge[0].addr = sim_buf_gpa(&A.buf, off);
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	w.remote_addr = B.mr.iova + 8192 + 3;
	w.rkey = B.mr.key;
	post1(&qk, &w);
	expect_cqe(&kcq, 0xf103, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "kernel RDMA READ into a guest-physical SGE");
	check_data("kernel RDMA READ", &A.buf, off, 900, 9201);

	w = wr1(0xf104, PVO_WR_SEND, &A, 0, 100);
	w.sge[0].addr = sim_vm_ram(A.vm)->size - 50;
	w.sge[0].lkey = PVO_LOCAL_DMA_LKEY;
	post_recv1(&qb, &B, 0xf105, 4096, 1000);
	post1(&qk, &w);
	if (get_cqe(&kcq, &c, "kernel SEND past the end of guest RAM"))
		tap_ok(c.status == PVO_WC_LOC_PROT_ERR ||
			   c.status == PVO_WC_LOC_ACCESS_ERR,
		       "kernel SEND from guest-physical memory past the end "
		       "of RAM: LOC_PROT_ERR (got %s)",
		       sim_wc_status_name(c.status));
	sim_destroy_qp(&qk);
	sim_destroy_qp(&qb);
	sim_destroy_cq(&kcq);
	sim_dealloc_pd(&kpd);
	drain(&B);
}

/* ------------------------------------------------------------------ */
/* tenant isolation                                                   */

/* QP on @from aimed at @to's QP through @to's GID @gid: both set up as a
 * connected pair would be, but across tenants. */
static bool cross_pair(struct pair *p, struct node *from, struct node *to,
		       const uint8_t *dgid, uint8_t type)
{
	struct sim_conn cf = fast, ct = fast;
	struct sim_qp_init ia = qp_init(from, type), ib = qp_init(to, type);
	struct sim_peer pf, pt;
	int st;

	memset(p, 0, sizeof(*p));
	p->na = from;
	p->nb = to;
	cf.sgid_index = (uint8_t)from->gid_v4;
	ct.sgid_index = (uint8_t)to->gid_v4;
	st = sim_create_qp(&from->pd, &ia, &p->a);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&to->pd, &ib, &p->b);
	if (st != PVO_STATUS_OK)
		goto fail;
	sim_qp_peer(&p->b, to->gid_v4, &pt);
	memcpy(pt.gid, dgid, 16);
	sim_qp_peer(&p->a, from->gid_v4, &pf);
	st = sim_qp_connect(&p->a, &cf, &pt);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&p->b, &ct, &pf);
	if (st != PVO_STATUS_OK)
		goto fail;
	p->made = true;
	return true;
fail:
	tap_ok(false, "QPs %s -> %s", from->name, to->name);
	tap_diag("%s / %s", from->vm->err, to->vm->err);
	return false;
}

static void isolation_rc(struct node *from, struct node *to, const char *dst_ip,
			 bool send, const char *what)
{
	uint8_t dgid[16];
	uint64_t sum_to, sum_b;
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;

	pvo_gid_from_ipv4(dgid, dst_ip);
	if (!cross_pair(&p, from, to, dgid, PVO_QPT_RC))
		return;
	if (send)
		post_recv1(&p.b, to, 0xf201, 0, 4096);
	fill_pattern(&from->buf, 0, 4096, 9300);
	sum_to = buf_sum(&to->buf);
	sum_b = buf_sum(&B.buf);
	if (send) {
		w = wr1(0xf202, PVO_WR_SEND, from, 0, 4096);
	} else {
		w = wr1(0xf202, PVO_WR_RDMA_WRITE, from, 0, 4096);
		w.remote_addr = to->mr.iova;
		w.rkey = to->mr.key;
	}
	post1(&p.a, &w);
	if (get_cqe(&from->scq, &c, what))
		tap_ok(c.status == PVO_WC_RETRY_EXC_ERR &&
			   le64toh(c.wr_id) == 0xf202,
		       "%s: RETRY_EXC_ERR on the requester (got %s)", what,
		       sim_wc_status_name(c.status));
	expect_state(&p.a, PVO_QPS_ERR, what);
	tap_ok(buf_sum(&to->buf) == sum_to,
	       "%s: %s's memory is byte for byte unchanged", what, to->name);
	if (to != &B)
		tap_ok(buf_sum(&B.buf) == sum_b,
		       "%s: b's memory is unchanged too", what);
	expect_no_cqe(&to->rcq, 20, what);
	pair_destroy(&p);
}

/* A QP of a that b's QP is not connected to must not reach it, even with
 * its QPN and b's rkey: either another QP (@same_qp false) or a's own
 * connected QP reconnected from another source GID. */
static void rogue_write(struct pair *p, bool same_qp, const char *what)
{
	if (overlay) {
		/* RC packets carry no source QPN, and a has one IPv4 GID:
		 * on the wire a QP is bound to its peer's address and tenant
		 * (as on RoCE hardware), which t-overlay-tenants covers */
		tap_skip(1, "over the overlay another QP of the same peer "
			    "address is indistinguishable on the wire");
		return;
	}
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC);
	struct sim_conn cn = fast;
	struct sim_peer peer;
	struct sim_qp rogue, *q = &rogue;
	struct pvo_cqe c;
	struct sim_wr w;
	uint64_t sum;
	int st;

	sim_qp_peer(&p->b, pair_gid(), &peer);
	if (same_qp) {
		q = &p->a;
		cn.sgid_index = (uint8_t)A.gid_v4;
		st = sim_qp_set_state(q, PVO_QPS_RESET);
	} else {
		st = sim_create_qp(&A.pd, &in, q);
	}
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(q, &cn, &peer);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "%s: QP set up", what)) {
		tap_diag("%s", A.vm->err);
		return;
	}
	sum = buf_sum(&B.buf);
	w = write_wr(0xf231, 0, 4096, B.mr.iova, B.mr.key);
	post1(q, &w);
	if (get_cqe(&A.scq, &c, what))
		tap_ok(c.status != PVO_WC_SUCCESS, "%s: the WRITE fails (%s)",
		       what, sim_wc_status_name(c.status));
	tap_ok(buf_sum(&B.buf) == sum, "%s: b's memory is unchanged", what);
	expect_state(&p->b, PVO_QPS_RTS, "  ... b's QP is not disturbed");
	if (!same_qp)
		sim_destroy_qp(&rogue);
}

/*
 * The local transport remembers each QP's route; removing the GID at the
 * other end must end it at once: the next WRITE finds no destination
 * (RETRY_EXC_ERR) and b's memory stays as it was. Installing the GID
 * again makes b reachable for a new pair.
 */
static void test_route_change(void)
{
	struct pvo_cqe c;
	struct sim_wr w;
	struct pair p;
	uint64_t sum;
	int st;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	xfer(&p, X_WRITE, 4096, 0, 0, false, 9360);
	st = pvo_del_gid(B.vm->fe, 1, 0);
	tap_ok(st == PVO_STATUS_OK, "b removes its GID 0 (%s)",
	       st < 0 ? "no answer" : pvo_status_name(st));
	sum = buf_sum(&B.buf);
	w = write_wr(0xf361, 0, 4096, B.mr.iova, B.mr.key);
	post1(&p.a, &w);
	if (get_cqe(&A.scq, &c, "WRITE to b's removed GID"))
		tap_ok(c.wr_id == 0xf361 && c.status == PVO_WC_RETRY_EXC_ERR,
		       "a WRITE to the removed GID on the same QP: "
		       "RETRY_EXC_ERR (got %s)",
		       sim_wc_status_name(c.status));
	tap_ok(buf_sum(&B.buf) == sum, "  ... and b's memory is unchanged");
	pair_destroy(&p);
	st = pvo_add_gid(B.vm->fe, 1, 0, B.vm->gid[0], PVO_GID_TYPE_ROCE_V2);
	tap_ok(st == PVO_STATUS_OK, "b installs its GID 0 again (%s)",
	       st < 0 ? "no answer" : pvo_status_name(st));
	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	xfer(&p, X_WRITE, 4096, 0, 0, false, 9361);
	pair_destroy(&p);
}

static void test_isolation(void)
{
	struct sim_qp_init ia = qp_init(&A, PVO_QPT_UD),
			   ic = qp_init(&C, PVO_QPT_UD);
	struct sim_conn conn = {.qkey = QKEY};
	struct sim_qp ua, uc;
	struct sim_peer pc;
	struct pvo_av av;
	struct sim_wr w;
	uint64_t sum;
	uint32_t ah;
	int st;

	{
		struct pair p;

		if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
			rogue_write(&p, false,
				    "RC WRITE to b's connected QP from a "
				    "third QP");
			xfer(&p, X_WRITE, 4096, 100, 200, false, 9350);
			rogue_write(&p, true,
				    "RC WRITE to b's connected QP from the "
				    "right QPN but another source GID");
			pair_destroy(&p);
		}
	}
	isolation_rc(&A, &C, "10.0.0.3", false,
		     "RC WRITE from tenant blue to tenant red (10.0.0.3) "
		     "with the right QPN and rkey");
	isolation_rc(&A, &C, "10.0.0.3", true,
		     "RC SEND from tenant blue to tenant red (10.0.0.3)");
	isolation_rc(&C, &A, "10.0.0.1", false,
		     "RC WRITE from tenant red to tenant blue (10.0.0.1)");
	{
		/* c owns 10.0.0.2 in red; b owns it in blue. From a, the
		 * address means b: c's QPN and rkey must not reach c. */
		uint8_t dgid[16];
		struct pvo_cqe c;
		struct pair p;
		uint64_t sum_c = buf_sum(&C.buf);

		pvo_gid_from_ipv4(dgid, "10.0.0.2");
		if (cross_pair(&p, &A, &C, dgid, PVO_QPT_RC)) {
			w = wr1(0xf211, PVO_WR_RDMA_WRITE, &A, 0, 4096);
			w.remote_addr = C.mr.iova;
			w.rkey = C.mr.key;
			post1(&p.a, &w);
			if (get_cqe(&A.scq, &c,
				    "WRITE to 10.0.0.2 with c's "
				    "QPN and rkey"))
				tap_ok(c.status != PVO_WC_SUCCESS,
				       "WRITE to 10.0.0.2 (b in blue, c in "
				       "red) with c's QPN and rkey fails "
				       "(%s)",
				       sim_wc_status_name(c.status));
			tap_ok(buf_sum(&C.buf) == sum_c,
			       "  ... and c's memory is unchanged");
			pair_destroy(&p);
		}
	}

	/* UD: silently dropped, the sender completes */
	st = sim_create_qp(&A.pd, &ia, &ua);
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&C.pd, &ic, &uc);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&ua, &conn, NULL);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&uc, &conn, NULL);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "UD QPs on a and c")) {
		tap_diag("%s / %s", A.vm->err, C.vm->err);
		return;
	}
	sim_qp_peer(&uc, C.gid_v4, &pc);
	sim_av_to(&av, &pc, (uint8_t)A.gid_v4);
	st = sim_create_ah(&A.pd, &av, &ah);
	if (TAP_STATUS(st, PVO_STATUS_OK,
		       "an AH on a to c's GID 10.0.0.3 (another tenant)")) {
		post_recv1(&uc, &C, 0xf221, 0, 4096);
		sum = buf_sum(&C.buf);
		w = wr1(0xf222, PVO_WR_SEND, &A, 0, 1000);
		w.ah = ah;
		w.remote_qpn = uc.qpn;
		w.remote_qkey = QKEY;
		post1(&ua, &w);
		expect_cqe(&A.scq, 0xf222, PVO_WC_SEND, PVO_WC_SUCCESS,
			   "UD SEND across tenants completes on the sender");
		expect_no_cqe(&C.rcq, 50, "UD SEND across tenants");
		tap_ok(buf_sum(&C.buf) == sum,
		       "UD SEND across tenants: c's memory is unchanged");
		sim_destroy_ah(&A.ctx, ah);
	}
	sim_destroy_qp(&ua);
	sim_destroy_qp(&uc);
	drain_all();
}

/* ------------------------------------------------------------------ */
/* fuzz                                                               */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Garbage in SQ (and RQ) slots: error completions, never a crash or a
 * stall; no byte of either buffer moves. */
static void test_fuzz(void)
{
	enum { ROUNDS = 40, K = 16 };
	static const uint8_t types[] = {PVO_QPT_RC, PVO_QPT_UC, PVO_QPT_UD};
	unsigned int round, bad_rounds = 0;
	uint64_t sum_a = buf_sum(&A.buf), sum_b = buf_sum(&B.buf);

	tap_diag("fuzz seed 0x%llx", (unsigned long long)rng_state);
	for (round = 0; round < ROUNDS; round++) {
		uint8_t type = types[round % 3];
		struct sim_conn fz = fast;
		uint64_t ids[K];
		struct pvo_cqe c[K + 8];
		struct pair p;
		unsigned int i, j, n = 0, stray = 0;
		long long deadline;
		bool ok = true;

		fz.rnr_retry = 1;
		fz.retry_cnt = 1;
		if (type == PVO_QPT_UD) {
			struct ud_pair u;

			if (!ud_make(&u, &A, &B))
				break;
			p.a = u.a;
			p.b = u.b;
			p.na = &A;
			p.nb = &B;
			p.made = true;
			sim_destroy_ah(&A.ctx, u.ah_v4);
			sim_destroy_ah(&A.ctx, u.ah_ll);
		} else if (!pair_make(&p, type, &fz, &fz)) {
			break;
		}
		/* garbage receive WQEs on b too, every other round */
		if (round & 1) {
			for (i = 0; i < 4; i++) {
				uint8_t *s = sim_rq_slot(&p.b, i);

				for (j = 0; j < (1u << p.b.rq.shift); j += 8)
					*(uint64_t *)(s + j) = rnd();
			}
			sim_rq_publish(&p.b, 4);
		}
		for (i = 0; i < K; i++) {
			uint8_t *s = sim_sq_slot(&p.a, i);
			struct pvo_send_wqe *h = (struct pvo_send_wqe *)s;
			uint64_t r = rnd();

			for (j = 0; j < (1u << p.a.sq.shift); j += 8)
				*(uint64_t *)(s + j) = rnd();
			/* half of them with a plausible header, so the
			 * parser gets past the opcode */
			if (r & 1) {
				h->opcode = (r >> 8) % 7;
				h->num_sge = (r >> 16) % 20;
				h->flags = (r >> 24) & 0xf;
				if (r & 2)
					h->inline_len =
					    htole32((r >> 32) % 300);
			}
			ids[i] = le64toh(h->wr_id);
		}
		__atomic_thread_fence(__ATOMIC_RELEASE);
		sim_sq_publish(&p.a, K);

		deadline = now_ms() + 2 * timeout_ms;
		while (now_ms() < deadline) {
			int got = sim_wait_cq(&A.scq, c + n, K + 8 - n, 20);

			n += got > 0 ? got : 0;
			if (sim_sq_outstanding(&p.a) == 0 && got <= 0)
				break;
		}
		if (sim_sq_outstanding(&p.a)) {
			tap_diag("round %u (%s): %u of %u garbage WQEs never "
				 "consumed",
				 round, qpt_name(type),
				 sim_sq_outstanding(&p.a), K);
			ok = false;
		}
		for (i = 0; i < n; i++) {
			bool known = false;

			for (j = 0; j < K; j++)
				known |= le64toh(c[i].wr_id) == ids[j];
			if (!known)
				stray++;
		}
		if (stray || n > K) {
			tap_diag("round %u: %u completions, %u with a wr_id "
				 "that was never posted",
				 round, n, stray);
			ok = false;
		}
		if (!n) {
			tap_diag("round %u (%s): 16 garbage WQEs and not one "
				 "(error) completion",
				 round, qpt_name(type));
			ok = false;
		}
		if (!ok)
			bad_rounds++;
		pair_destroy(&p);
		if (!backend_running(&bp))
			lost("the back-end died on garbage WQEs");
	}
	tap_ok(!bad_rounds && round == ROUNDS,
	       "%u rounds of %u garbage WQEs on RC / UC / UD: all consumed, "
	       "completions only for posted wr_ids (%u bad rounds)",
	       round, K, bad_rounds);
	tap_ok(buf_sum(&A.buf) == sum_a && buf_sum(&B.buf) == sum_b,
	       "garbage WQEs moved no byte of a's or b's registered memory");
	{
		struct pair p;

		if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
			xfer(&p, X_WRITE, 10000, 5, 6, false, 9400);
			pair_destroy(&p);
		}
	}
}

/* ------------------------------------------------------------------ */
/* a VM going away with work in flight                                */

static void node_forget(struct node *n)
{
	/* the back-end dropped everything with the session; closing the
	 * VM frees our side of every object */
	sim_vm_close(n->vm);
	memset(&n->ctx, 0, sizeof(n->ctx));
	n->vm = NULL;
}

static void test_disconnect(void)
{
	enum { NW = 16, FIRST = 4, STUCK = 4 };
	struct sim_conn ca = fast, cb = fast;
	static struct sim_wr ws[NW];
	struct pvo_cqe c[NW];
	struct pvo_resp_query_device d;
	struct pair p;
	unsigned int i, n = 0, flushed = 0;
	long long deadline;

	/* a retries RNR forever; only b's disappearance can end it */
	ca.rnr_retry = 7;
	cb.min_rnr_timer = 14;
	if (!pair_make(&p, PVO_QPT_RC, &ca, &cb))
		return;
	for (i = 0; i < NW; i++) {
		if (i == STUCK) {
			ws[i] = wr1(i, PVO_WR_SEND, &A, 0, 4096);
		} else {
			ws[i] = write_wr(i, 0, i < FIRST ? 1 * MIB : 64 * KIB,
					 B.mr.iova + 64 * KIB, B.mr.key);
			if (i > STUCK && (i & 1))
				ws[i].opcode = PVO_WR_RDMA_READ;
		}
	}
	if (sim_post_send(&p.a, ws, NW))
		tap_diag("post failed");
	n = sim_wait_cq(&A.scq, c, FIRST, timeout_ms);
	tap_ok(n == FIRST, "four 1 MiB WRITEs to b complete (%u)", n);
	n += sim_wait_cq(&A.scq, c + n, 1, 50);
	tap_ok(n == FIRST,
	       "a SEND to b without a receive waits in RNR retries, 11 WQEs "
	       "behind it (%u completions)",
	       n - FIRST);
	if (n > FIRST)
		tap_diag("unexpected: %s", cqe_str(&c[FIRST]));

	/* b's QEMU goes away while a's work to it is in flight */
	sim_vm_disconnect(B.vm);
	deadline = now_ms() + 4 * timeout_ms;
	while (n < NW && now_ms() < deadline) {
		int got = sim_wait_cq(&A.scq, c + n, NW - n, 100);

		n += got > 0 ? got : 0;
	}
	tap_ok(n == NW, "b disconnected: every WQE of a's completes (%u of %u)",
	       n, NW);
	if (n > FIRST)
		cqe_is(&c[FIRST], STUCK, PVO_WC_SEND, PVO_WC_RETRY_EXC_ERR,
		       "the SEND stuck in RNR once b is gone");
	for (i = FIRST + 1; i < n; i++)
		flushed += c[i].status == PVO_WC_WR_FLUSH_ERR;
	tap_ok(n == NW && flushed == NW - FIRST - 1,
	       "the WQEs behind it are flushed (%u of %u)", flushed,
	       NW - FIRST - 1);
	expect_state(&p.a, PVO_QPS_ERR, "a's QP after b left");
	tap_ok(backend_running(&bp), "the back-end survived it");
	tap_ok(pvo_query_device(A.vm->fe, &d) == PVO_STATUS_OK,
	       "a's control queue still answers");
	sim_destroy_qp(&p.a);
	drain(&A);

	/* b comes back as a fresh VM and works */
	node_forget(&B);
	if (!node_open(&B, "10.0.0.2"))
		lost("b cannot reconnect after a disconnect");
	if (pair_make(&p, PVO_QPT_RC, NULL, NULL)) {
		xfer(&p, X_WRITE, 1048576, 9, 10, false, 9500);
		xfer(&p, X_SEND, 4097, 11, 12, false, 9501);
		pair_destroy(&p);
	}
}

/* ------------------------------------------------------------------ */
/* per-VM quotas                                                      */

static void test_quotas(void)
{
	struct node Q = {.name = "q"};
	struct sim_cq cqs[5];
	struct sim_qp qps[5];
	struct sim_mr mrs[5];
	struct sim_srq srqs[2];
	uint32_t ahs[3];
	struct sim_qp_init in;
	struct sim_buf b;
	struct pvo_av av;
	struct sim_peer pe;
	unsigned int i, ncq = 0, nqp = 0, nmr = 0, nsrq = 0, nah = 0;
	int st = PVO_STATUS_OK;
	struct sim_vm_opts o = {.name = "q", .ram_size = 32 * MIB};
	char err[512];

	o.socket_path = backend_vm_socket(&bp, "q");
	Q.vm = sim_vm_open(&o, err, sizeof(err));
	if (!tap_ok(Q.vm != NULL, "q: session")) {
		tap_diag("%s", err);
		return;
	}
	st = sim_ctx_open(Q.vm, &Q.ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&Q.ctx, &Q.pd);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "q: context and PD"))
		goto out;
	for (i = 0; i < 5; i++) {
		st = sim_create_cq(&Q.ctx, 16, &cqs[i]);
		if (st != PVO_STATUS_OK)
			break;
		ncq++;
	}
	tap_ok(ncq == 4 && st == PVO_STATUS_ENOSPC,
	       "max-cq = 4: four CQs, the fifth gets ENOSPC (%u, %s)", ncq,
	       pvo_status_name(st));
	in = qp_init(&Q, PVO_QPT_RC);
	in.send_cq = in.recv_cq = &cqs[0];
	in.sq_entries = in.rq_entries = 4;
	for (i = 0; i < 5 && ncq; i++) {
		st = sim_create_qp(&Q.pd, &in, &qps[i]);
		if (st != PVO_STATUS_OK)
			break;
		nqp++;
	}
	tap_ok(nqp == 4 && st == PVO_STATUS_ENOSPC,
	       "max-qp = 4: four QPs, the fifth gets ENOSPC (%u, %s)", nqp,
	       pvo_status_name(st));
	if (nqp) {
		st = sim_destroy_qp(&qps[--nqp]);
		st = st ? st : sim_create_qp(&Q.pd, &in, &qps[nqp]);
		if (TAP_STATUS(st, PVO_STATUS_OK,
			       "a destroyed QP gives its quota back"))
			nqp++;
	}
	if (sim_buf_alloc(&b, sim_vm_ram(Q.vm), sim_vm_va(Q.vm, 128 * KIB),
			  128 * KIB, 0, SIM_LAYOUT_SCATTER))
		tap_bail("no guest RAM on q");
	st = sim_reg_mr(&Q.pd, &b, 0, 65536 + 1, PVO_ACCESS_LOCAL_WRITE,
			&mrs[0]);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "max-mr-size = 65536: REG_MR of 65537 bytes -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_dereg_mr(&mrs[0]);
	for (i = 0; i < 5; i++) {
		st = sim_reg_mr(&Q.pd, &b, i * 100, 65536,
				PVO_ACCESS_LOCAL_WRITE, &mrs[i]);
		if (st != PVO_STATUS_OK)
			break;
		nmr++;
	}
	tap_ok(nmr == 4 && st == PVO_STATUS_ENOSPC,
	       "max-mr = 4: four MRs of 64 KiB, the fifth gets ENOSPC (%u, "
	       "%s)",
	       nmr, pvo_status_name(st));
	for (i = 0; i < 2; i++) {
		st = sim_create_srq(&Q.pd, 16, 1, 0, &srqs[i]);
		if (st != PVO_STATUS_OK)
			break;
		nsrq++;
	}
	tap_ok(nsrq == 1 && st == PVO_STATUS_ENOSPC,
	       "max-srq = 1: one SRQ, the second gets ENOSPC (%u, %s)", nsrq,
	       pvo_status_name(st));
	memset(&pe, 0, sizeof(pe));
	memcpy(pe.gid, Q.vm->gid[0], 16);
	memcpy(pe.mac, Q.vm->mac, 6);
	sim_av_to(&av, &pe, 0);
	for (i = 0; i < 3; i++) {
		st = sim_create_ah(&Q.pd, &av, &ahs[i]);
		if (st != PVO_STATUS_OK)
			break;
		nah++;
	}
	tap_ok(nah == 2 && st == PVO_STATUS_ENOSPC,
	       "max-ah = 2: two AHs, the third gets ENOSPC (%u, %s)", nah,
	       pvo_status_name(st));
	st = sim_ctx_close(&Q.ctx);
	TAP_STATUS(st, PVO_STATUS_OK,
		   "DEALLOC_UCONTEXT with QPs, CQs, MRs, SRQ, AHs alive");
	st = sim_ctx_open(Q.vm, &Q.ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&Q.ctx, &Q.pd);
	for (i = 0, ncq = 0; st == PVO_STATUS_OK && i < 4; i++) {
		st = sim_create_cq(&Q.ctx, 16, &cqs[i]);
		ncq += st == PVO_STATUS_OK;
	}
	TAP_STATUS(st, PVO_STATUS_OK,
		   "after DEALLOC_UCONTEXT the whole CQ quota is free again "
		   "(%u CQs)",
		   ncq);
	sim_buf_free(&b);
out:
	sim_vm_close(Q.vm);
}

/* ------------------------------------------------------------------ */

static void check_sanitizers(const char *log, const char *who)
{
	bool clean = true;
	char line[512];
	FILE *f = fopen(log, "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "AddressSanitizer") ||
		    strstr(line, "runtime error:") ||
		    strstr(line, "LeakSanitizer")) {
			if (clean)
				tap_diag("sanitizer: %s", line);
			clean = false;
		}
	}
	if (f)
		fclose(f);
	tap_ok(clean, "no sanitizer report in the log of %s", who);
}

static void test_end(void)
{
	int ret;

	tap_ok(backend_running(&bp), "the back-end is still running");
	sim_vm_close(A.vm);
	sim_vm_close(B.vm);
	sim_vm_close(C.vm);
	ret = backend_stop(&bp, 5000);
	tap_ok(ret == 0, "back-end exits with status 0 on SIGTERM (it %s)",
	       backend_describe(&bp));
	if (overlay) {
		ret = backend_stop(&bp2, 5000);
		tap_ok(ret == 0,
		       "back-end of host 2 exits with status 0 on SIGTERM "
		       "(it %s)",
		       backend_describe(&bp2));
		check_sanitizers(bp2.log_path, "host 2");
	}
	check_sanitizers(bp.log_path, overlay ? "host 1" : "the back-end");
}

int main(void)
{
	const char *env = getenv("PVO_TEST_TIMEOUT_MS");
	bool keep;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (env && atoi(env) > 0)
		timeout_ms = atoi(env);
	env = getenv("T_DATAPATH_OVERLAY");
	overlay = env && !strcmp(env, "1");
	env = getenv("T_DATAPATH_SEED");
	if (env && strtoull(env, NULL, 0))
		rng_state = strtoull(env, NULL, 0);
	only = getenv("T_DATAPATH_ONLY");
	if (only && !*only)
		only = NULL;
	scratch = malloc(2 * DATA_LEN);
	if (!scratch)
		tap_bail("out of memory");

	test_setup();
	if (section("transfers")) {
		test_rc_transfers();
		if (overlay) {
			test_gso_padding();
			test_mgmt_clients();
		}
	}
	if (section("inline"))
		test_rc_inline();
	if (section("atomics"))
		test_rc_atomics();
	if (section("sges"))
		test_rc_sges();
	if (section("batches"))
		test_rc_batches();
	if (section("uc"))
		test_uc();
	if (section("ud"))
		test_ud();
	if (section("srq"))
		test_srq();
	if (section("arm"))
		test_cq_arm();
	if (section("errors"))
		test_errors();
	if (section("reset"))
		test_reset();
	if (section("remap"))
		test_mem_table_again();
	if (section("malformed"))
		test_malformed();
	if (section("doorbells"))
		test_doorbells();
	if (section("kernel")) {
		test_kernel_qp();
		test_gsi();
	}
	if (section("isolation")) {
		test_isolation();
		if (!overlay)
			test_route_change();
	}
	if (section("fuzz"))
		test_fuzz();
	if (section("disconnect"))
		test_disconnect();
	if (section("quotas"))
		test_quotas();
	test_end();

	keep = tap_failures() || (getenv("PVO_TEST_KEEP") &&
				  !strcmp(getenv("PVO_TEST_KEEP"), "1"));
	if (keep)
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, keep);
	if (overlay) {
		if (keep)
			tap_diag("host 2 back-end log kept in %s",
				 bp2.log_path);
		backend_cleanup(&bp2, keep);
	}
	free(scratch);
	tap_done_testing();
	return tap_exit_status();
}
