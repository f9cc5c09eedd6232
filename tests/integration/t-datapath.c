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
 *
 * This file: the fixture (back-end, nodes, shared helpers, setup, end)
 * and main; the sections are in t-datapath-*.c, t-datapath.h joins them.
 */
#include "t-datapath.h"

static const char base_config[] = "threads = 2\n"
			     "\n"
			     "[tenant blue]\n"
			     "vni = 100\n"
			     "thread = 2\n"
			     "\n"
			     "[tenant red]\n"
			     "vni = 200\n"
			     "peers = 127.0.0.1, 127.0.0.3\n"
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
			     "max-mw = 2\n"
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
bool overlay;
struct backend_proc bp2, bp3;
unsigned int overlay_port;
char migration_key[64]; /* overlay: the key file every host reads */
char red_key[64];	/* ... and tenant red's own */
static const char *const vm_names_host1[] = {"a", "c", "q", NULL};
/*
 * T_DATAPATH_HOSTVERBS=DEV:NETDEV (with the overlay's two hosts): tenant
 * blue has transport = hostverbs on the host RDMA device DEV, its VMs'
 * GIDs those of NETDEV (which must hold 10.0.0.1/24 and 10.0.0.2/24):
 * a <-> b RC and UC QPs and blue's UD QPs ride host QPs of DEV. Run where DEV exists
 * (tests/vm/t-hostverbs-datapath: a TCG guest with rdma_rxe).
 */
char hv_dev[64], hv_netdev[16];
static char *hv_config; /* config with tenant blue on hostverbs */
/*
 * T_DATAPATH_HOSTVERBS3=DEV:NETDEV: host 3 (a migration's destination)
 * on a device of its own, which reaches DEV as another host's NIC would;
 * T_DATAPATH_HV_PLACE names a program that moves a VM's address to a
 * netdev ("PROGRAM IP NETDEV"), run as a VM moves between the two, and
 * T_DATAPATH_HV_LINK one that drops what a netdev sends on the link
 * between them, or lets it pass again ("PROGRAM NETDEV drop|pass").
 */
char hv3_dev[64], hv3_netdev[16];
static char *hv3_config;
static const char *const vm_names_host2[] = {"a", "b", NULL};

struct backend_proc bp;
struct node A = {.name = "a"}, B = {.name = "b"}, C = {.name = "c"};
/* The GID index connected QPs use: link-local, or over the overlay (which
 * carries RoCEv2 over IPv4 only) the nodes' IPv4 GID (index 1 in all). */
uint8_t pair_gid(void)
{
	return overlay ? 1 : 0;
}

/* Quick retries so that error paths finish fast. */
struct sim_conn fast = {
    .timeout = 8, .retry_cnt = 2, .rnr_retry = 2, .min_rnr_timer = 1};
int timeout_ms = 5000;
uint8_t *scratch; /* 2 x DATA_LEN host bytes */
static const char *only;

/* ------------------------------------------------------------------ */
/* helpers                                                            */

void __attribute__((noreturn)) lost(const char *what)
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

/* After a failure, where the back-ends' logs go with the machine (a host
 * guest of tests/vm): their last T_DATAPATH_DUMP_LOGS lines each, as
 * diagnostics the VM test keeps. */
static void dump_logs(void)
{
	const char *n = getenv("T_DATAPATH_DUMP_LOGS");
	int lines = n ? atoi(n) : 0;

	if (!tap_failures() || lines <= 0)
		return;
	backend_dump_log(&bp, lines);
	if (bp2.log_path[0])
		backend_dump_log(&bp2, lines);
	if (bp3.log_path[0])
		backend_dump_log(&bp3, lines);
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

long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void sleep_ms(int ms)
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
void fill_pattern_at(struct sim_buf *b, uint64_t off, uint64_t len,
			    uint32_t seed, uint64_t base)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		scratch[i] = pat(seed, base + i);
	sim_buf_write(b, off, scratch, len);
}

void fill_pattern(struct sim_buf *b, uint64_t off, uint64_t len,
			 uint32_t seed)
{
	fill_pattern_at(b, off, len, seed, 0);
}

/* Destination area: guard bytes around [off, off + len), filler inside. */
void prepare_dst(struct sim_buf *b, uint64_t off, uint64_t len)
{
	uint64_t lo = off >= GUARD ? off - GUARD : 0;

	sim_buf_fill(b, lo, GUARD_BYTE, off - lo + len + GUARD);
}

/* Every byte of [off, off + len) is pattern @seed, the GUARD bytes on
 * either side are untouched. */
bool data_ok(const char *what, struct sim_buf *b, uint64_t off,
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

bool check_data(const char *what, struct sim_buf *b, uint64_t off,
		       uint64_t len, uint32_t seed)
{
	return check_data_at(what, b, off, len, seed, 0);
}

/* Checksum of a whole buffer, for "no byte moved" checks. */
uint64_t buf_sum(struct sim_buf *b)
{
	uint64_t h = 1469598103934665603ull, i;

	sim_buf_read(b, 0, scratch, b->len);
	for (i = 0; i < b->len; i++)
		h = (h ^ scratch[i]) * 1099511628211ull;
	return h;
}

const char *cqe_str(const struct pvo_cqe *c)
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
bool get_cqe(struct sim_cq *cq, struct pvo_cqe *c, const char *what)
{
	if (sim_wait_cq(cq, c, 1, timeout_ms) == 1)
		return true;
	tap_ok(false, "%s: a completion arrives within %d ms", what,
	       timeout_ms);
	memset(c, 0xff, sizeof(*c));
	return false;
}

/* The CQE is @status for @wr_id (and @opcode unless < 0); diag if not. */
bool cqe_ok(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
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

bool cqe_is(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
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
bool wait_cqe(struct sim_cq *cq, struct pvo_cqe *c, const char *what)
{
	if (sim_wait_cq(cq, c, 1, timeout_ms) == 1)
		return true;
	tap_diag("%s: no completion within %d ms", what, timeout_ms);
	memset(c, 0xff, sizeof(*c));
	return false;
}

/* Wait for one CQE and check it. */
bool expect_cqe(struct sim_cq *cq, uint64_t wr_id, int opcode,
		       unsigned int status, const char *what)
{
	struct pvo_cqe c;

	if (!get_cqe(cq, &c, what))
		return false;
	return cqe_is(&c, wr_id, opcode, status, "%s", what);
}

/* No CQE shows up within @ms. */
bool expect_no_cqe(struct sim_cq *cq, int ms, const char *what)
{
	struct pvo_cqe c;
	int n = sim_wait_cq(cq, &c, 1, ms);

	if (!tap_ok(n == 0, "%s: no completion within %d ms", what, ms))
		tap_diag("got %s", cqe_str(&c));
	return n == 0;
}

/* Throw away leftovers of a failed test so they do not confuse the next. */
void drain(struct node *n)
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

void drain_all(void)
{
	drain(&A);
	drain(&B);
	drain(&C);
	sim_vm_drop_events(A.vm, 0);
	sim_vm_drop_events(B.vm, 0);
	sim_vm_drop_events(C.vm, 0);
}

int qp_state(struct sim_qp *qp)
{
	struct pvo_qp_attr a;
	int st = sim_query_qp(qp, &a);

	if (st != PVO_STATUS_OK)
		return -1000 - st;
	return (int)le32toh(a.qp_state);
}

bool expect_state(struct sim_qp *qp, int state, const char *what)
{
	int got = qp_state(qp);

	if (!tap_ok(got == state, "%s: QP is %s", what,
		    sim_qp_state_name(state)))
		tap_diag("QUERY_QP says %s",
			 got >= 0 ? sim_qp_state_name(got) : qp->ctx->vm->err);
	return got == state;
}

struct sim_qp_init qp_init(struct node *n, uint8_t type)
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
/* a's QP on srq if one is named. */
static bool make_pair(struct pair *p, struct node *na, struct node *nb,
		      uint8_t type, bool v4, struct sim_srq *srq,
		      const struct sim_conn *ca, const struct sim_conn *cb)
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
	if (srq) {
		ia.srq = srq;
		ia.rq_entries = 0;
	}
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

bool pair_make_ex(struct pair *p, struct node *na, struct node *nb,
		  uint8_t type, bool v4, const struct sim_conn *ca,
		  const struct sim_conn *cb)
{
	return make_pair(p, na, nb, type, v4, NULL, ca, cb);
}

bool pair_make_srq(struct pair *p, struct sim_srq *srq,
		   const struct sim_conn *ca, const struct sim_conn *cb)
{
	return make_pair(p, &A, &B, PVO_QPT_RC, overlay, srq, ca, cb);
}

bool pair_make_srq_at(struct pair *p, struct node *na, struct node *nb,
		      struct sim_srq *srq, const struct sim_conn *ca,
		      const struct sim_conn *cb)
{
	return make_pair(p, na, nb, PVO_QPT_RC, overlay, srq, ca, cb);
}

bool pair_make(struct pair *p, uint8_t type, const struct sim_conn *ca,
		      const struct sim_conn *cb)
{
	/* the overlay carries RoCEv2 over IPv4 only */
	return pair_make_ex(p, &A, &B, type, overlay, ca, cb);
}

void pair_destroy(struct pair *p)
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

struct sim_sge sge_of(struct node *n, uint64_t off, uint32_t len)
{
	struct sim_sge s = {
	    .addr = n->buf.va + off, .length = len, .lkey = n->mr.key};

	return s;
}

/* The key in file path into key; its length (0 if unreadable). */
size_t read_key(const char *path, uint8_t *key, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(key, 1, cap, f) : 0;

	if (f)
		fclose(f);
	return n;
}

/* @off rounded up so that the buffer's virtual address there is 8-byte
 * aligned (the buffers start at page offset 0x123). */
uint64_t al8(struct node *n, uint64_t off)
{
	return ((n->buf.va + off + 7) & ~7ull) - n->buf.va;
}

bool post_recv1(struct sim_qp *qp, struct node *n, uint64_t wr_id,
		       uint64_t off, uint32_t len)
{
	struct sim_sge s = sge_of(n, off, len);
	int ret = sim_post_recv(qp, wr_id, &s, 1);

	if (ret)
		tap_diag("post_recv: %s", strerror(-ret));
	return ret == 0;
}

bool post1(struct sim_qp *qp, const struct sim_wr *wr)
{
	int ret = sim_post_send(qp, wr, 1);

	if (ret)
		tap_diag("post_send: %s", strerror(-ret));
	return ret == 0;
}

/* A signaled WR with one SGE of node @n. */
struct sim_wr wr1(uint64_t wr_id, uint8_t opcode, struct node *n,
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

struct sim_wr write_wr(uint64_t id, uint64_t loff, uint32_t len,
			      uint64_t raddr, uint32_t rkey)
{
	struct sim_wr w = wr1(id, PVO_WR_RDMA_WRITE, &A, loff, len);

	w.remote_addr = raddr;
	w.rkey = rkey;
	return w;
}

/* After a CQE for every WQE posted, the device must have consumed them
 * all (contract-questions, provider 3: cons passes a WQE before its CQE). */
void check_sq_consumed(struct sim_qp *qp, const char *what)
{
	uint32_t left = sim_sq_outstanding(qp);

	if (!tap_ok(left == 0, "%s: SQ cons has passed every completed WQE",
		    what))
		tap_diag("%u WQEs still not consumed", left);
}

/* ------------------------------------------------------------------ */
/* setup                                                              */

bool node_open(struct node *n, const char *ipv4)
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
 * it serves from base_config[], then the other host's VM as a remote, reached
 * at via ("IP PORT"): the other VTEP, or a lossy link (pvo-impair) that
 * T_DATAPATH_VIA="IP:PORT,IP:PORT" names for host 1 and host 2.
 */
static char *host_config_text(int host, unsigned int port, const char *via);

/* host_config_text with tenant red's own migration-key. */
static char *host_config(int host, unsigned int port, const char *via)
{
	char *c = host_config_text(host, port, via), *out = NULL, *red;

	red = c ? strstr(c, "[tenant red]\n") : NULL;
	if (!red)
		return c;
	red += strlen("[tenant red]\n");
	if (asprintf(&out, "%.*smigration-key = %s\n%s", (int)(red - c), c,
		     red_key, red) < 0)
		out = NULL;
	free(c);
	return out;
}

/* The config with tenant blue on host verbs, its VMs' GIDs netdev's. */
static char *hv_config_for(const char *netdev)
{
	char *out;

	if (asprintf(&out,
		     "threads = 2\n\n[tenant blue]\nvni = 100\n"
		     "thread = 2\ntransport = hostverbs\n"
		     "hostverbs-netdev = %s\n%s",
		     netdev, strstr(base_config, "\n[tenant red]") + 1) < 0)
		tap_bail("out of memory");
	return out;
}

static char *host_config_text(int host, unsigned int port, const char *via)
{
	const char *config = host == 3 && hv3_config ? hv3_config
			     : hv_config		 ? hv_config
						 : base_config;
	const char *vm_b = strstr(config, "[vm b]");
	const char *vm_c = strstr(config, "[vm c]");
	char vtep[64], *out, dev[96] = "";
	unsigned int vport = port;

	if (hv_dev[0])
		snprintf(dev, sizeof(dev), "hostverbs-device = %s\n",
			 host == 3 && hv3_dev[0] ? hv3_dev : hv_dev);

	snprintf(vtep, sizeof(vtep), "127.0.0.%d", host == 1 ? 2 : 1);
	if (via && sscanf(via, "%63[0-9.] %u", vtep, &vport) != 2)
		tap_bail("T_DATAPATH_VIA: expected IP:PORT,IP:PORT");
	if (host == 1)
		/* everything but [vm b]; b is remote */
		return asprintf(&out,
				"%svtep = 127.0.0.1\nvxlan-port = %u\n"
				"peers = 127.0.0.2, 127.0.0.3\n"
				"migration-key = %s\n\n%.*s%s\n"
				"[remote b]\ntenant = blue\n"
				"mac = 52:54:00:00:00:0b\nips = 10.0.0.2\n"
				"vtep = %s\nvtep-port = %u\n",
				dev, port, migration_key, (int)(vm_b - config),
				config, vm_c, vtep, vport) < 0
			   ? NULL
			   : out;
	if (host == 3)
		/* a migration's destination for a and b: the tenants,
		 * [vm a], [vm b], b remote behind host 2 until it moves */
		return asprintf(&out,
				"%svtep = 127.0.0.3\nvxlan-port = %u\n"
				"peers = 127.0.0.1, 127.0.0.2\n"
				"migration-key = %s\n\n%.*s\n"
				"[remote b]\ntenant = blue\n"
				"mac = 52:54:00:00:00:0b\nips = 10.0.0.2\n"
				"vtep = 127.0.0.2\n",
				dev, port, migration_key,
				(int)(vm_c - config), config) < 0
			   ? NULL
			   : out;
	/* the tenants, [vm b] and [vm a] (a migration's destination next
	 * to b); a is remote behind host 1 until it moves here */
	return asprintf(&out,
			"%svtep = 127.0.0.2\nvxlan-port = %u\n"
			"peers = 127.0.0.1, 127.0.0.3\nmigration-key = %s\n\n"
			"%.*s\n"
			"[remote a]\ntenant = blue\n"
			"mac = 52:54:00:00:00:0a\nips = 10.0.0.1\n"
			"vtep = %s\nvtep-port = %u\n",
			dev, port, migration_key, (int)(vm_c - config), config,
			vtep, vport) < 0
		   ? NULL
		   : out;
}

/*
 * Tenant blue is pinned to thread 2 of 2, red placed on thread 1: every
 * test runs blue's VMs on a data-path thread of their own, and the
 * overlay's datagrams for them are handed over from thread 1, which
 * reads the VTEP socket.
 */
static void check_threads(void)
{
	char line[4096];

	tap_ok(backend_mgmt_line(&bp, "vm name=a ", line, sizeof(line)) &&
		       backend_field(line, " thread=") == 2,
	       "show: vm a (tenant blue, thread = 2) runs on thread 2");
	tap_ok(backend_mgmt_line(&bp, "vm name=c ", line, sizeof(line)) &&
		       backend_field(line, " thread=") == 1,
	       "show: vm c (tenant red, placed) runs on the other thread");
	tap_ok(backend_mgmt_line(&bp, "thread id=2 ", line, sizeof(line)) &&
		       backend_field(line, " vms=") == 1,
	       "show: thread 2 serves one VM here (a; b is remote)");
}

int start_host3(char *err, size_t len)
{
	static const char *const vms[] = {"a", "b", NULL};
	const char *args[] = {NULL};
	char *c3 = host_config(3, overlay_port, NULL);
	int ret;

	if (!c3)
		tap_bail("out of memory");
	ret = backend_start_config(&bp3, c3, vms, args, 10000, err, len);
	free(c3);
	return ret;
}

static int start_two_hosts(const char *const *args, char *err, size_t len)
{
	const char *via = getenv("T_DATAPATH_VIA");
	unsigned int port = 20000 + getpid() % 20000, p1, p2;
	char ip1[64], ip2[64], via1[80], via2[80], *c1, *c2;
	int ret;

	if (getenv("T_DATAPATH_PORT"))
		port = atoi(getenv("T_DATAPATH_PORT"));
	overlay_port = port;
	if (via) {
		if (sscanf(via, "%63[0-9.]:%u,%63[0-9.]:%u", ip1, &p1, ip2,
			   &p2) != 4)
			tap_bail("T_DATAPATH_VIA: expected IP:PORT,IP:PORT");
		snprintf(via1, sizeof(via1), "%s %u", ip1, p1);
		snprintf(via2, sizeof(via2), "%s %u", ip2, p2);
	}
	snprintf(migration_key, sizeof(migration_key),
		 "/tmp/pvo-migration-key-%d", (int)getpid());
	{
		FILE *f = fopen(migration_key, "w");

		if (!f || fputs("t-datapath's migration key, 36 bytes", f) < 0 ||
		    fclose(f))
			tap_bail("cannot write %s", migration_key);
	}
	snprintf(red_key, sizeof(red_key), "/tmp/pvo-red-key-%d",
		 (int)getpid());
	{
		FILE *f = fopen(red_key, "w");

		if (!f || fputs("tenant red's own migration key", f) < 0 ||
		    fclose(f))
			tap_bail("cannot write %s", red_key);
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
		ret = backend_start_config(&bp, base_config, vm_names, args, 10000,
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
	if (overlay)
		check_threads();

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
	st = pvo_alloc_ucontext(A.vm->fe, &tmp.handle, &tmp.db_queue, NULL);
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

static void check_sanitizers(const struct backend_proc *b, const char *who)
{
	char line[512];
	bool found = backend_sanitizer_report(b, line, sizeof(line)) > 0;

	if (found)
		tap_diag("sanitizer: %s", line);
	tap_ok(!found, "no sanitizer report in the log of %s", who);
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
		check_sanitizers(&bp2, "host 2");
		if (bp3.pid) {
			ret = backend_stop(&bp3, 5000);
			tap_ok(ret == 0,
			       "back-end of host 3 exits with status 0 on "
			       "SIGTERM (it %s)",
			       backend_describe(&bp3));
			check_sanitizers(&bp3, "host 3");
		}
	}
	check_sanitizers(&bp, overlay ? "host 1" : "the back-end");
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
	env = getenv("T_DATAPATH_HOSTVERBS");
	if (env && *env) {
		if (sscanf(env, "%63[^:]:%15s", hv_dev, hv_netdev) != 2)
			tap_bail("T_DATAPATH_HOSTVERBS: expected DEV:NETDEV");
		overlay = true;
		/* a UC or UD message right after post_recv finds the
		 * receive, as on hardware (sim_verbs.h) */
		sim_settle_receives = true;
		hv_config = hv_config_for(hv_netdev);
	}
	env = getenv("T_DATAPATH_HOSTVERBS3");
	if (hv_dev[0] && env && *env) {
		if (sscanf(env, "%63[^:]:%15s", hv3_dev, hv3_netdev) != 2)
			tap_bail("T_DATAPATH_HOSTVERBS3: expected DEV:NETDEV");
		hv3_config = hv_config_for(hv3_netdev);
	}
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
			/* the overlay's own packets; the host device's
			 * are not the back-end's to count */
			if (!hv_dev[0])
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
	if (section("ud")) {
		test_ud();
		test_ud_mcast();
	}
	if (section("srq"))
		test_srq();
	if (section("arm"))
		test_cq_arm();
	if (section("errors")) {
		test_errors();
		test_rereg_mr();
	}
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
		test_fast_reg();
		test_gsi();
	}
	if (section("mw"))
		test_mw();
	if (section("dirtylog"))
		test_dirty_log();
	/* before migrate: it gives b numbers of its own choosing, which
	 * must still be b's host ones */
	if (section("rebind"))
		test_rebind();
	if (section("migrate"))
		test_migrate();
	if (section("isolation")) {
		test_isolation();
		if (!overlay)
			test_route_change();
		else
			test_overlay_ingress();
	}
	if (section("bounded"))
		test_bounded();
	if (section("fuzz"))
		test_fuzz();
	if (section("disconnect"))
		test_disconnect();
	if (section("quotas"))
		test_quotas();
	test_end();

	keep = tap_failures() || (getenv("PVO_TEST_KEEP") &&
				  !strcmp(getenv("PVO_TEST_KEEP"), "1"));
	dump_logs();
	if (keep)
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, keep);
	if (overlay) {
		if (keep)
			tap_diag("host 2 back-end log kept in %s",
				 bp2.log_path);
		backend_cleanup(&bp2, keep);
		if (bp3.pid) {
			if (keep)
				tap_diag("host 3 back-end log kept in %s",
					 bp3.log_path);
			backend_cleanup(&bp3, keep);
		}
		unlink(migration_key);
		unlink(red_key);
	}
	free(hv_config);
	free(scratch);
	tap_done_testing();
	return tap_exit_status();
}
