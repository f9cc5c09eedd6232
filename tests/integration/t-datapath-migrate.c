// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath, section migrate: live migration of VM a within its
 * back-end, as QEMU does it: dirty log on, rings stopped (the back-end
 * freezes the VM), the state saved through SET_DEVICE_STATE_FD, a second
 * front-end over the same guest memory loads it and starts the rings.
 * Work posted while frozen, a peer's SEND that had to wait, and every
 * key and QP of a keep working; bad streams and a destination without
 * state are refused while the source keeps running. With the overlay,
 * the VMs also move between three back-ends: a away from b, next to b
 * (local transport), both at once, and back. On host verbs: a with a
 * connection to a peer that is not ours is refused; with a UD QP, an RC
 * QP not connected and its MR, then with an RC connection and work in
 * flight: a cancelled migration, a move to host 3 and home.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "announce.h"
#include "encap.h"
#include "t-datapath.h"

/* Whether the back-end's log has a line with every one of the needles
 * (the refusal names the record and field). */
static bool log_has(const struct backend_proc *b, const char *n1,
		    const char *n2)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen(b->log_path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, n1) && (!n2 || strstr(line, n2));
	fclose(f);
	return found;
}

static int log_count(const struct backend_proc *b, const char *needle)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(b->log_path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* The number of the last line with needle (0: none). */
static int log_last(const struct backend_proc *b, const char *needle)
{
	char line[1024];
	int n = 0, last = 0;
	FILE *f = fopen(b->log_path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, needle))
			last = n;
	}
	fclose(f);
	return last;
}

#define LEFT "destination front-end left"
/* host 2 took a's new numbers */
#define TO_HOST3 "10.0.0.1 behind VTEP 127.0.0.3 has new host numbers"
#define TO_HOST1 "10.0.0.1 behind VTEP 127.0.0.1 has new host numbers"
#define THAWED "rings running again"
/* the back-end times the guest's first doorbell after a thaw */
#define FIRST_DOORBELL "the guest rang its first doorbell"
/* an end of a connection waited for the other's rebind in vain */
#define TOOK_NO_STEP "took no step to rebind the connection"
/* ... or the other end said the connection ends */
#define PEER_ENDED "could not rebind the connection"

/* Back-end b dropped the last refused destination: the next may come. */
static void wait_gone(const struct backend_proc *b, int before)
{
	long long end = now_ms() + timeout_ms;

	while (log_count(b, LEFT) <= before && now_ms() < end)
		sleep_ms(10);
}

static void wait_destination_gone(int before)
{
	wait_gone(&bp, before);
}

/* Host 1 logged a thaw more than `before` (5 s at most). */
static void wait_thawed(int before)
{
	int i;

	for (i = 0; i < 500 && log_count(&bp, THAWED) <= before; i++)
		sleep_ms(10);
}

static bool stop_for_migration(struct node *n)
{
	struct vu_frontend *fe = n->vm->fe;
	size_t size;

	if (!vu_frontend_start_log(fe, &size) || vu_frontend_stop(fe) < 0) {
		tap_diag("%s: %s", n->name, vu_frontend_error(fe));
		return false;
	}
	return true;
}

/* A destination front-end of its own (own RAM) on back-end b's socket
 * path that offers buf: the CHECK_DEVICE_STATE result. */
static int offer_at(const struct backend_proc *b, const char *path,
		    const uint8_t *buf, size_t len, struct vu_frontend **out)
{
	struct vu_options o = {.socket_path = path,
			       .ram_size = 16 * MIB};
	char err[256];
	struct vu_frontend *fe = vu_frontend_new(&o, err, sizeof(err));
	int left = log_count(b, LEFT), ret;

	if (!fe)
		return -ENOMEM;
	ret = vu_frontend_connect(fe);
	if (!ret)
		ret = vu_frontend_negotiate(fe);
	if (!ret)
		ret = vu_frontend_load_state(fe, buf, len);
	if (out) {
		*out = fe;
	} else {
		vu_frontend_free(fe);
		wait_gone(b, left);
	}
	return ret;
}

/* ... on n's own back-end. */
static int offer(struct node *n, const uint8_t *buf, size_t len,
		 struct vu_frontend **out)
{
	return offer_at(&bp, n->vm->fe->socket_path, buf, len, out);
}

/* The source runs again (a failed or cancelled migration). */
static bool resume_source(struct node *n)
{
	if (vu_frontend_start(n->vm->fe) < 0) {
		tap_diag("%s: %s", n->name, vu_frontend_error(n->vm->fe));
		return false;
	}
	return true;
}

/*
 * The back-end's config file with extra keys for [vm a] (none: as it
 * was), reloaded with SIGHUP; true once the log says it took it.
 */
static bool reload_vm_a(const char *extra)
{
	static char *orig;
	char *text = NULL, *out, *at;
	long long end = now_ms() + timeout_ms;
	int before = log_count(&bp, "config reloaded");
	size_t len = 0;
	FILE *f = fopen(bp.config_path, "r");

	if (!f || getdelim(&text, &len, '\0', f) < 0) {
		if (f)
			fclose(f);
		free(text);
		return false;
	}
	fclose(f);
	if (!orig)
		orig = strdup(text);
	at = strstr(orig, "[vm a]\n");
	if (!at || asprintf(&out, "%.*s[vm a]\n%s%s", (int)(at - orig), orig,
			    extra ? extra : "", at + 7) < 0) {
		free(text);
		return false;
	}
	free(text);
	f = fopen(bp.config_path, "w");
	if (!f || fputs(out, f) < 0 || fclose(f)) {
		free(out);
		return false;
	}
	free(out);
	kill(bp.pid, SIGHUP);
	while (log_count(&bp, "config reloaded") == before && now_ms() < end)
		sleep_ms(10);
	return log_count(&bp, "config reloaded") > before;
}

static void refused_streams(struct pair *p)
{
	uint8_t *buf, *bad;
	size_t len;
	struct vu_frontend *fe;
	int ret;

	if (!stop_for_migration(&A))
		return;
	if (vu_frontend_save_state(A.vm->fe, &buf, &len) < 0) {
		tap_ok(false, "migrate: state saved");
		return;
	}
	bad = malloc(len);
	memcpy(bad, buf, len);
	bad[8] = 99; /* stream version */
	tap_ok(offer(&A, bad, len, NULL) < 0 &&
		   log_has(&bp, "migrated state refused", "field version"),
	       "a stream of another version is refused, naming the field");
	tap_ok(offer(&A, buf, len / 2, NULL) < 0 &&
		   log_has(&bp, "migrated state refused", "truncated"),
	       "a truncated stream is refused");
	tap_ok(offer(&A, buf, len - 1, NULL) < 0,
	       "a stream without its last byte is refused");
	/* a destination whose quota cannot hold a's QPs */
	if (tap_ok(reload_vm_a("max-qp = 1\n"),
		   "migrate: the back-end reloads with max-qp = 1 for a")) {
		tap_ok(offer(&A, buf, len, NULL) < 0 &&
			   log_has(&bp, "migrated state refused",
				   "within max-QP (1)"),
		       "a state with more QPs than the destination's quota "
		       "is refused, naming the quota");
		tap_ok(reload_vm_a(NULL),
		       "migrate: a's quota is back as it was");
	}
	memcpy(bad, buf, len);
	memcpy(bad + 16, "someone-else", 13);
	tap_ok(offer(&A, bad, len, NULL) < 0 &&
		   log_has(&bp, "migrated state refused", "field vm"),
	       "the state of another VM is refused");
	free(bad);

	/* a destination without state may connect, never start */
	ret = offer(&A, (const uint8_t *)"", 0, &fe);
	tap_ok(ret < 0, "an empty stream is refused");
	vu_frontend_start(fe);
	tap_ok(!vu_connection_alive(fe, 2000) &&
		   log_has(&bp,
			   "started the VM without its migrated "
			   "state",
			   NULL),
	       "a second front-end starting without the VM's state is "
	       "dropped");
	vu_frontend_free(fe);
	wait_destination_gone(log_count(&bp, LEFT) - 1);

	/* the source goes on as after a failed migration */
	if (!resume_source(&A))
		return;
	tap_ok(xfer(p, X_WRITE, 9000, 0, 0, false, 9301) &&
		   xfer(p, X_SEND, 5000, 0, 4096, false, 9302),
	       "after refused migrations the source's traffic continues");
	free(buf);
}

/*
 * The migration itself, with work waiting on both sides. slow's ACK
 * timeout is 17 s: its SEND lost to the frozen VM completes within the
 * test's wait only because the thaw tells b to resend at once.
 */
static void migrate_a(struct pair *p, struct pair *slow)
{
	const uint64_t roff = 700 * KIB, woff = 800 * KIB;
	uint8_t *buf;
	size_t len;
	struct pvo_cqe c;
	struct sim_wr w;
	int old, thawed, rang;

	/* a receive posted at a before; b's SEND to it waits while a is
	 * frozen (b's requester resends after its timeout) */
	prepare_dst(&A.buf, roff, 6000);
	if (!post_recv1(&p->a, &A, 0xa701, roff, 6000) ||
	    !stop_for_migration(&A))
		return;
	fill_pattern(&B.buf, 64 * KIB, 6000, 9401);
	w = wr1(0xb701, PVO_WR_SEND, &B, 64 * KIB, 6000);
	post1(&p->b, &w);
	prepare_dst(&A.buf, roff + 8192, 3000);
	post_recv1(&slow->a, &A, 0xa703, roff + 8192, 3000);
	fill_pattern(&B.buf, 80 * KIB, 3000, 9407);
	w = wr1(0xb703, PVO_WR_SEND, &B, 80 * KIB, 3000);
	post1(&slow->b, &w);
	/* ... and a WRITE a posts while its rings are stopped */
	fill_pattern(&A.buf, 96 * KIB, 20000, 9402);
	prepare_dst(&B.buf, woff, 20000);
	w = write_wr(0xa702, 96 * KIB, 20000, B.mr.iova + woff, B.mr.key);
	post1(&p->a, &w);
	tap_ok(expect_no_cqe(&B.scq, 150,
			     "migrate: b's SEND while a is "
			     "frozen"),
	       "a frozen VM takes nothing: b's SEND waits (150 ms)");

	if (vu_frontend_save_state(A.vm->fe, &buf, &len) < 0) {
		tap_ok(false, "migrate: state saved: %s",
		       vu_frontend_error(A.vm->fe));
		return;
	}
	tap_diag("migrate: a's state is %zu bytes", len);
	old = vu_frontend_detach(A.vm->fe);
	/* the destination sets DRIVER_OK as QEMU does */
	A.vm->fe->opt.set_status = true;
	thawed = log_count(&bp, THAWED);
	rang = log_count(&bp, FIRST_DOORBELL);
	if (vu_frontend_connect(A.vm->fe) < 0 ||
	    vu_frontend_negotiate(A.vm->fe) < 0 ||
	    vu_frontend_load_state(A.vm->fe, buf, len) < 0 ||
	    vu_frontend_start(A.vm->fe) < 0) {
		tap_ok(false, "migrate: destination loads and starts: %s",
		       vu_frontend_error(A.vm->fe));
		close(old);
		free(buf);
		return;
	}
	free(buf);
	tap_ok(true, "the destination front-end loaded a's state and "
		     "started its rings");
	/* its SET_STATUS was acknowledged: the thaw came with it, not
	 * after the delay for front-ends that set no status */
	tap_ok(log_count(&bp, THAWED) == thawed + 1,
	       "migrate: a thaws with DRIVER_OK, before its SET_STATUS is "
	       "acknowledged");

	expect_cqe(&B.scq, 0xb701, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "migrate: b's SEND after the switch-over");
	if (get_cqe(&A.rcq, &c, "migrate: a's receive"))
		cqe_ok(&c, 0xa701, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "migrate: a's receive posted before the migration");
	check_data("migrate: SEND into the migrated VM", &A.buf, roff, 6000,
		   9401);
	expect_cqe(&A.scq, 0xa702, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "migrate: a's WRITE posted while frozen");
	check_data("migrate: WRITE posted while frozen", &B.buf, woff, 20000,
		   9402);
	expect_cqe(&B.scq, 0xb703, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "migrate: a SEND with a 17 s ACK timeout, resent at the "
		   "thaw");
	if (get_cqe(&A.rcq, &c, "migrate: a's second receive"))
		cqe_ok(&c, 0xa703, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "migrate: the receive it fills");
	check_data("migrate: SEND resent at the thaw", &A.buf, roff + 8192,
		   3000, 9407);

	/* the source's QEMU quits: its connection goes, a's objects stay */
	close(old);
	sleep_ms(100);
	expect_state(&p->a, PVO_QPS_RTS,
		     "migrate: a's QP after the source left");
	tap_ok(xfer(p, X_WRITE, 70000, 0, 0, false, 9403) &&
		   xfer(p, X_READ, 30000, 0, 0, false, 9404) &&
		   xfer(p, X_SEND_IMM, 3000, 0, 0, false, 9405),
	       "WRITE, READ, SEND with immediate both ways with a's old "
	       "keys and QPN after the source left");
	tap_ok(log_count(&bp, FIRST_DOORBELL) == rang + 1,
	       "migrate: the back-end logs how long after the thaw a rang its "
	       "first doorbell, once");
	{
		struct pair q;

		tap_ok(pair_make(&q, PVO_QPT_RC, NULL, NULL) &&
			   xfer(&q, X_WRITE, 4096, 0, 0, false, 9406),
		       "new QPs are made and used after the migration");
		pair_destroy(&q);
	}
}

/* n's state saved, its rings stopped already, as the source QEMU does;
 * *old is the source's connection, which stays until the source QEMU
 * quits. */
static bool leave_stopped(struct node *n, uint8_t **buf, size_t *len, int *old)
{
	if (vu_frontend_save_state(n->vm->fe, buf, len) < 0)
		return tap_ok(false, "%s's state saved: %s", n->name,
			      vu_frontend_error(n->vm->fe));
	*old = vu_frontend_detach(n->vm->fe);
	return true;
}

/* ... its VM frozen first. */
static bool leave(struct node *n, uint8_t **buf, size_t *len, int *old)
{
	return stop_for_migration(n) && leave_stopped(n, buf, len, old);
}

/*
 * Host verbs on two devices (T_DATAPATH_HOSTVERBS3): n's address moves
 * to the netdev of the device serving `to` (host 3's, or the one of
 * hosts 1 and 2), as a VM's address follows it to its new host's NIC;
 * the program that moves it returns once the device has the GID.
 */
static bool hv_place(struct node *n, const char *to)
{
	const char *prog = getenv("T_DATAPATH_HV_PLACE");
	bool on3 = !strncmp(to, bp3.dir, strlen(bp3.dir));
	const char *netdev = on3 ? hv3_netdev : hv_netdev;
	char cmd[512];

	if (!hv3_dev[0] || !prog)
		return true;
	snprintf(cmd, sizeof(cmd), "%s %s %s", prog,
		 n == &A ? "10.0.0.1" : "10.0.0.2", netdev);
	return tap_ok(system(cmd) == 0, "%s's address on %s (%s)", n->name,
		      netdev, on3 ? hv3_dev : hv_dev);
}

/* A front-end on the back-end serving socket `to` loads n's state over
 * the same guest memory and starts the rings: the destination QEMU. */
static bool arrive(struct node *n, const char *to, uint8_t *buf, size_t len,
		   const char *what)
{
	char *from = n->vm->fe->socket_path; /* the source's */
	bool ok = hv_place(n, to);

	n->vm->fe->socket_path = strdup(to);
	/* QEMU sets DRIVER_OK once the rings run: the VM thaws with it,
	 * not after the back-end's delay for front-ends that set none */
	n->vm->fe->opt.set_status = true;
	ok = ok && vu_frontend_connect(n->vm->fe) == 0 &&
	     vu_frontend_negotiate(n->vm->fe) == 0 &&
	     vu_frontend_load_state(n->vm->fe, buf, len) == 0 &&
	     vu_frontend_start(n->vm->fe) == 0;
	free(buf);
	if (!tap_ok(ok,
		    "%s: the destination back-end loads %s's state and "
		    "starts it",
		    what, n->name)) {
		tap_diag("%s", vu_frontend_error(n->vm->fe));
		hv_place(n, from); /* it runs on at the source */
	}
	free(from);
	return ok;
}

/* Work that waits for the move: b's SEND to a posted receive of a, and
 * a WRITE, a READ and a FETCH_ADD a posts while frozen (the READ and the
 * atomic must run once, after the move). */
#define ACROSS_READ_SRC (400 * KIB)
#define ACROSS_READ_DST (200 * KIB)
#define ACROSS_ATOMIC (56 * KIB)

static uint64_t across_old(uint32_t seed)
{
	return 0x3c3c000000000000ull | seed;
}

static void post_across(struct pair *p, uint32_t seed)
{
	const uint64_t woff = 840 * KIB;
	uint64_t old = across_old(seed);
	struct sim_wr w;

	fill_pattern(&B.buf, 64 * KIB, 5000, seed);
	w = wr1(0xb801, PVO_WR_SEND, &B, 64 * KIB, 5000);
	post1(&p->b, &w);
	fill_pattern(&A.buf, 96 * KIB, 30000, seed + 1);
	prepare_dst(&B.buf, woff, 30000);
	w = write_wr(0xa802, 96 * KIB, 30000, B.mr.iova + woff, B.mr.key);
	post1(&p->a, &w);
	fill_pattern(&B.buf, ACROSS_READ_SRC, 20000, seed + 2);
	prepare_dst(&A.buf, ACROSS_READ_DST, 20000);
	w = wr1(0xa803, PVO_WR_RDMA_READ, &A, ACROSS_READ_DST, 20000);
	w.remote_addr = B.mr.iova + ACROSS_READ_SRC;
	w.rkey = B.mr.key;
	post1(&p->a, &w);
	sim_buf_write(&B.buf, al8(&B, ACROSS_ATOMIC), &old, 8);
	sim_buf_fill(&A.buf, al8(&A, ACROSS_ATOMIC), 0, 8);
	w = wr1(0xa804, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, al8(&A, ACROSS_ATOMIC),
		8);
	w.remote_addr = B.mr.iova + al8(&B, ACROSS_ATOMIC);
	w.rkey = B.mr.key;
	w.compare_add = 5;
	post1(&p->a, &w);
}

/* The work of post_across completed once, every byte where it belongs. */
static void check_across(uint32_t seed)
{
	const uint64_t roff = 720 * KIB, woff = 840 * KIB;
	uint64_t got = 0, now = 0;
	struct pvo_cqe c;

	expect_cqe(&B.scq, 0xb801, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "b's SEND that waited for the move");
	if (get_cqe(&A.rcq, &c, "a's receive after the move"))
		cqe_ok(&c, 0xa801, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "a's receive posted before the move");
	check_data("SEND into a after the move", &A.buf, roff, 5000, seed);
	expect_cqe(&A.scq, 0xa802, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		   "a's WRITE posted while frozen, sent from its new host");
	check_data("WRITE from a after the move", &B.buf, woff, 30000,
		   seed + 1);
	expect_cqe(&A.scq, 0xa803, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "a's READ posted while frozen");
	check_data("READ by a after the move", &A.buf, ACROSS_READ_DST, 20000,
		   seed + 2);
	expect_cqe(&A.scq, 0xa804, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
		   "a's FETCH_ADD posted while frozen");
	sim_buf_read(&A.buf, al8(&A, ACROSS_ATOMIC), &got, 8);
	sim_buf_read(&B.buf, al8(&B, ACROSS_ATOMIC), &now, 8);
	tap_ok(got == across_old(seed) && now == across_old(seed) + 5,
	       "a's FETCH_ADD across the move ran once: the old value back "
	       "(0x%llx), the sum in b's MR (0x%llx)",
	       (unsigned long long)got, (unsigned long long)now);
}

static bool traffic_after(struct pair *p, const char *what)
{
	return tap_ok(xfer(p, X_WRITE, 70000, 0, 0, false, 9503) &&
			  xfer(p, X_READ, 30000, 0, 0, false, 9504) &&
			  xfer(p, X_SEND, 9000, 0, 0, false, 9505),
		      "%s: WRITE, READ and SEND both ways afterwards", what);
}

/*
 * Moves n's VM (a or b) to the back-end serving socket `to`, as QEMU on
 * another host would: frozen, saved, loaded by a front-end there over the
 * same guest memory. b's SEND waiting for a and a WRITE a posted while
 * one of them was frozen complete only if the other's back-end follows
 * the announcement (or finds the VM next to it).
 */
static bool move_one(struct pair *p, struct node *n, const char *to,
		     const char *what)
{
	uint8_t *buf;
	size_t len;
	int old;

	prepare_dst(&A.buf, 720 * KIB, 5000);
	if (!post_recv1(&p->a, &A, 0xa801, 720 * KIB, 5000) ||
	    !leave(n, &buf, &len, &old))
		return false;
	post_across(p, 9501);
	if (!arrive(n, to, buf, len, what)) {
		close(old);
		return false;
	}
	check_across(9501);
	close(old); /* the source QEMU quits */
	return traffic_after(p, what);
}

/*
 * Both ends move at once, each to another host, while the other is
 * frozen too: each back-end learns where the other VM went only from
 * the other destination's announcement. b_old: b's source QEMU stays
 * (its session fd, for the caller to close) instead of quitting.
 */
static bool move_both(struct pair *p, const char *a_to, const char *b_to,
		      const char *what, int *b_old)
{
	uint8_t *abuf, *bbuf;
	size_t alen, blen;
	int aold, bold = -1;
	bool ok;

	prepare_dst(&A.buf, 720 * KIB, 5000);
	if (!post_recv1(&p->a, &A, 0xa801, 720 * KIB, 5000) ||
	    !leave(&A, &abuf, &alen, &aold))
		return false;
	post_across(p, 9601);
	ok = leave(&B, &bbuf, &blen, &bold);
	if (ok) {
		ok = arrive(&A, a_to, abuf, alen, what);
		ok = arrive(&B, b_to, bbuf, blen, what) && ok;
	} else {
		free(abuf);
	}
	if (ok)
		check_across(9601);
	close(aold);
	if (b_old)
		*b_old = bold;
	else if (bold >= 0)
		close(bold);
	return ok && traffic_after(p, what);
}

/* The overlay packets back-end b sent for VM `vm`. */
static unsigned long long vm_tx(const struct backend_proc *b, const char *vm)
{
	char line[4096], kind[64];

	snprintf(kind, sizeof(kind), "vm name=%s ", vm);
	if (!backend_mgmt_line(b, kind, line, sizeof(line)))
		return ~0ULL;
	return backend_field(line, " tx_packets=");
}

/* One datagram from 127.0.0.{src} to host 2's VTEP. */
static void send_to_host2(const uint8_t *buf, size_t len, int src)
{
	struct sockaddr_in from = {.sin_family = AF_INET},
			   to = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	char ip[32];

	snprintf(ip, sizeof(ip), "127.0.0.%d", src);
	from.sin_addr.s_addr = inet_addr(ip);
	to.sin_addr.s_addr = inet_addr("127.0.0.2");
	to.sin_port = htons(overlay_port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0 ||
	    sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		tap_diag("sending a forged announcement: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static unsigned long long drops(const struct backend_proc *b,
				const char *reason)
{
	char line[4096], key[64];

	snprintf(key, sizeof(key), " drop_%s=", reason);
	if (!backend_mgmt_line(b, "daemon", line, sizeof(line)))
		return 0;
	return backend_field(line, key);
}

/*
 * a moves next to b (host 3 -> host 2) owing answers it never got: b's
 * back-end is stopped (SIGSTOP) while a's requests go out and runs again
 * once a is frozen, taking them and answering into the void. At host 2
 * a's requester resends over the local transport, from its last
 * acknowledged PSN, what b took already; none of it may run twice. On
 * connection g two SENDs b took whole (each filled a receive before the
 * move: a third receive must stay posted), on h a FETCH_ADD (it adds
 * once, a gets the old value), on k a SEND of 300 KiB of which b took
 * the first window (it goes on where b stands). The connections cross
 * the overlay again after the next move (migrate_hosts): in step.
 */
#define UNACKED_BIG (300 * KIB)
#define UNACKED_SRC (1400 * KIB)
#define UNACKED_DST (1400 * KIB)
#define UNACKED_ATOMIC (48 * KIB)
#define UNACKED_OLD 0x5a5a000000000007ull

static bool b_took(struct pvo_cqe *got, int n, uint64_t wr_id,
		   uint32_t len, const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (le64toh(got[i].wr_id) == wr_id)
			return tap_ok(got[i].status == PVO_WC_SUCCESS &&
					  got[i].opcode == PVO_WC_RECV &&
					  le32toh(got[i].byte_len) == len,
				      "%s: %s", what, cqe_str(&got[i]));
	return tap_ok(false, "%s: a completion for 0x%llx", what,
		      (unsigned long long)wr_id);
}

/* A SEND of len bytes of pattern seed from a's buffer at off, on q. */
static void a_sends(struct sim_qp *q, uint64_t id, uint64_t off, uint32_t len,
		    uint32_t seed)
{
	struct sim_wr w;

	fill_pattern(&A.buf, off, len, seed);
	w = wr1(id, PVO_WR_SEND, &A, off, len);
	post1(q, &w);
}

static void unacked_post(struct pair *g, struct pair *h, struct pair *k)
{
	uint64_t old = UNACKED_OLD;
	struct sim_wr w;

	prepare_dst(&B.buf, 1200 * KIB, 5000);
	prepare_dst(&B.buf, 1210 * KIB, 4000);
	prepare_dst(&B.buf, 1220 * KIB, 1000);
	prepare_dst(&B.buf, UNACKED_DST, UNACKED_BIG);
	prepare_dst(&B.buf, 1760 * KIB, 1000);
	post_recv1(&g->b, &B, 0xb9a1, 1200 * KIB, 5000);
	post_recv1(&g->b, &B, 0xb9a2, 1210 * KIB, 4000);
	post_recv1(&g->b, &B, 0xb9a3, 1220 * KIB, 1000);
	post_recv1(&k->b, &B, 0xb9b1, UNACKED_DST, UNACKED_BIG);
	post_recv1(&k->b, &B, 0xb9b2, 1760 * KIB, 1000);
	sim_buf_write(&B.buf, al8(&B, UNACKED_ATOMIC), &old, 8);
	sim_buf_fill(&A.buf, al8(&A, UNACKED_ATOMIC), 0, 8);

	a_sends(&g->a, 0xa9a1, 1200 * KIB, 5000, 9801);
	a_sends(&g->a, 0xa9a2, 1210 * KIB, 4000, 9802);
	w = wr1(0xa9c1, PVO_WR_ATOMIC_FETCH_AND_ADD, &A,
		al8(&A, UNACKED_ATOMIC), 8);
	w.remote_addr = B.mr.iova + al8(&B, UNACKED_ATOMIC);
	w.rkey = B.mr.key;
	w.compare_add = 5;
	post1(&h->a, &w);
	a_sends(&k->a, 0xa9b1, UNACKED_SRC, UNACKED_BIG, 9803);
}

/* b's back-end, running again, took what a had sent before its freeze:
 * g's SENDs (their receives complete), h's atomic, k's first window. */
static bool unacked_taken(void)
{
	struct pvo_cqe got[2];
	uint64_t now = 0;
	uint8_t first = GUARD_BYTE, last = GUARD_BYTE;
	int n = sim_wait_cq(&B.rcq, got, 2, timeout_ms);
	long long until = now_ms() + timeout_ms;
	bool ok;

	ok = b_took(got, n, 0xb9a1, 5000,
		    "unacked: b took a's first SEND before a moved") &
	     b_took(got, n, 0xb9a2, 4000,
		    "unacked: b took a's second SEND before a moved");
	do {
		sim_buf_read(&B.buf, al8(&B, UNACKED_ATOMIC), &now, 8);
		sim_buf_read(&B.buf, UNACKED_DST, &first, 1);
		if (now != UNACKED_OLD && first != GUARD_BYTE)
			break;
		sleep_ms(10);
	} while (now_ms() < until);
	sim_buf_read(&B.buf, UNACKED_DST + UNACKED_BIG - 1, &last, 1);
	return tap_ok(ok && now == UNACKED_OLD + 5 && first != GUARD_BYTE &&
			  last == GUARD_BYTE,
		      "unacked: b took a's FETCH_ADD (0x%llx) and the start "
		      "of its long SEND, not its end, before a moved",
		      (unsigned long long)now);
}

static void unacked_check(struct pair *g, struct pair *k)
{
	struct pvo_cqe c[4];
	uint64_t got = 0, now = 0;
	int n = sim_wait_cq(&A.scq, c, 4, timeout_ms), i, good = 0;

	for (i = 0; i < n; i++) {
		uint64_t id = le64toh(c[i].wr_id);

		if (c[i].status == PVO_WC_SUCCESS &&
		    (id == 0xa9a1 || id == 0xa9a2 || id == 0xa9b1 ||
		     id == 0xa9c1))
			good++;
		else
			tap_diag("unacked: a's completion %s", cqe_str(&c[i]));
	}
	tap_ok(n == 4 && good == 4 &&
		   expect_no_cqe(&A.scq, 50, "unacked: a's send queue"),
	       "unacked: a's two SENDs, FETCH_ADD and long SEND complete "
	       "once each, with SUCCESS (%d of 4)",
	       good);
	sim_buf_read(&A.buf, al8(&A, UNACKED_ATOMIC), &got, 8);
	sim_buf_read(&B.buf, al8(&B, UNACKED_ATOMIC), &now, 8);
	tap_ok(got == UNACKED_OLD && now == UNACKED_OLD + 5,
	       "unacked: the FETCH_ADD b had run is answered with the result "
	       "it kept, not run again (a got 0x%llx, b holds 0x%llx)",
	       (unsigned long long)got, (unsigned long long)now);
	n = sim_wait_cq(&B.rcq, c, 1, timeout_ms);
	b_took(c, n, 0xb9b1, UNACKED_BIG,
	       "unacked: the long SEND b had begun to take completes its "
	       "receive");
	check_data("unacked: the long SEND across the move", &B.buf,
		   UNACKED_DST, UNACKED_BIG, 9803);
	check_data("unacked: a's first SEND", &B.buf, 1200 * KIB, 5000, 9801);
	check_data("unacked: a's second SEND", &B.buf, 1210 * KIB, 4000, 9802);
	expect_no_cqe(&B.rcq, 100,
		      "unacked: no SEND b took before the move fills another "
		      "receive");
	/* the next SENDs take the receives still posted */
	a_sends(&g->a, 0xa9a4, 1230 * KIB, 1000, 9804);
	a_sends(&k->a, 0xa9b2, 1240 * KIB, 1000, 9805);
	n = sim_wait_cq(&A.scq, c, 2, timeout_ms);
	tap_ok(n == 2 && !c[0].status && !c[1].status,
	       "unacked: a's next SEND on g and k complete");
	n = sim_wait_cq(&B.rcq, c, 2, timeout_ms);
	b_took(c, n, 0xb9a3, 1000,
	       "unacked: g's next SEND fills the receive posted third");
	b_took(c, n, 0xb9b2, 1000,
	       "unacked: k's next SEND fills the receive posted second");
	check_data("unacked: g's next SEND", &B.buf, 1220 * KIB, 1000, 9804);
	check_data("unacked: k's next SEND", &B.buf, 1760 * KIB, 1000, 9805);
}

static bool move_next_to_b_unacked(struct pair *p, struct pair *g,
				   struct pair *h, struct pair *k)
{
	const char *what = "a from host 3 to host 2, next to b, owing answers";
	unsigned long long tx = vm_tx(&bp3, "a"), sent = 0;
	long long until;
	uint8_t *buf;
	size_t len;
	int old;

	if (!tap_ok(kill(bp2.pid, SIGSTOP) == 0,
		    "unacked: b's back-end stopped (SIGSTOP)"))
		return false;
	unacked_post(g, h, k);
	/* g's SENDs (9 packets), h's atomic, k's first window */
	until = now_ms() + timeout_ms;
	while ((sent = vm_tx(&bp3, "a") - tx) < 9 + 1 + 8 &&
	       now_ms() < until)
		sleep_ms(10);
	sleep_ms(100); /* the rest of k's window */
	sent = vm_tx(&bp3, "a") - tx;
	tap_diag("unacked: host 3 sent %llu packets for a", sent);
	if (!leave(&A, &buf, &len, &old)) {
		kill(bp2.pid, SIGCONT);
		return false;
	}
	if (!tap_ok(kill(bp2.pid, SIGCONT) == 0,
		    "unacked: b's back-end runs again, a frozen") ||
	    !unacked_taken() || !arrive(&A, backend_vm_socket(&bp2, "a"), buf,
					len, what)) {
		close(old);
		return false;
	}
	unacked_check(g, k);
	close(old);
	return traffic_after(p, what);
}

/* Underlay hosts cannot move a VM: a wrong key, a replay, a VTEP that
 * names another, a sender that is no peer. */
static void forged_announcements(void)
{
	struct pvo_announce an = {.vni = 100, .port = overlay_port};
	uint8_t key[128], buf[256];
	size_t keylen, n;
	unsigned long long bad, stale;
	FILE *f = fopen(migration_key, "r");

	keylen = f ? fread(key, 1, sizeof(key), f) : 0;
	if (f)
		fclose(f);
	an.ip = inet_addr("10.0.0.1");
	memcpy(an.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, 0x0a}, 6);
	bad = drops(&bp2, "bad_announce");
	stale = drops(&bp2, "stale_announce");

	/* a new VTEP 127.0.0.3 claims a with the wrong key */
	an.vtep.s_addr = inet_addr("127.0.0.3");
	an.gen = (uint64_t)now_ms() * 1000 + 5000000;
	n = pvo_announce_write(buf, sizeof(buf), &an,
			       (const uint8_t *)"not the deployment's key", 24);
	send_to_host2(buf, n, 3);
	/* the right key, but naming a VTEP other than its sender */
	an.vtep.s_addr = inet_addr("127.0.0.9");
	n = pvo_announce_write(buf, sizeof(buf), &an, key, keylen);
	send_to_host2(buf, n, 3);
	/* the right key from a host that is no peer, moving a to itself */
	an.vtep.s_addr = inet_addr("127.0.0.5");
	an.gen = (uint64_t)now_ms() * 1000 + 5000000;
	n = pvo_announce_write(buf, sizeof(buf), &an, key, keylen);
	send_to_host2(buf, n, 5);
	/* a generation far in the past (a replay) */
	an.vtep.s_addr = inet_addr("127.0.0.3");
	an.gen = 1000000;
	n = pvo_announce_write(buf, sizeof(buf), &an, key, keylen);
	send_to_host2(buf, n, 3);
	sleep_ms(200);
	tap_ok(drops(&bp2, "bad_announce") >= bad + 3 &&
		   drops(&bp2, "stale_announce") >= stale + 1,
	       "forged announcements (wrong key, another VTEP named, a "
	       "sender that is no peer, a replayed generation) are dropped "
	       "and counted");
}

static void migrate_hosts(struct pair *p)
{
	struct sim_conn c = {.timeout = 18, .retry_cnt = 7};
	struct pair g = {0}, h = {0}, k = {0};
	char err[512];
	int b_old = -1;

	if (start_host3(err, sizeof(err)) != 0) {
		tap_ok(false, "host 3's back-end starts: %s", err);
		return;
	}
	if (!move_one(p, &A, backend_vm_socket(&bp3, "a"),
		      "a from host 1 to host 3"))
		return;
	tap_ok(log_has(&bp2, "10.0.0.1 migrated behind VTEP 127.0.0.3", NULL),
	       "host 2 followed a's announcement to host 3");
	sleep_ms(1300); /* the repeats: +200 ms, +1 s */
	tap_ok(log_count(&bp2, "migrated behind VTEP 127.0.0.3") == 1 &&
		   log_count(&bp, "migrated behind VTEP 127.0.0.3") == 1 &&
		   drops(&bp2, "stale_announce") == 0,
	       "hosts 1 and 2 take the announcement's repeats as repeats "
	       "(followed once, none counted stale)");
	forged_announcements();
	/* slow retries: b's back-end is stopped for a while (1 s, 7) */
	c.sgid_index = fast.sgid_index;
	c.path_mtu = 3; /* 1024: k's first window is a part of its SEND */
	if (!pair_make(&g, PVO_QPT_RC, &c, &c) ||
	    !pair_make(&h, PVO_QPT_RC, &c, &c) ||
	    !pair_make(&k, PVO_QPT_RC, &c, &c) ||
	    !move_next_to_b_unacked(p, &g, &h, &k))
		goto out;
	/* a and b now talk locally: nothing waited for hosts 1 and 3 */
	tap_ok(backend_log_has(&bp, "10.0.0.1 migrated behind VTEP 127.0.0.2",
			       5000) &&
		   backend_log_has(&bp3,
				   "10.0.0.1 migrated behind VTEP 127.0.0.2",
				   5000),
	       "hosts 1 and 3 followed a to host 2");
	{
		unsigned long long ta = vm_tx(&bp2, "a"), tb = vm_tx(&bp2, "b");

		tap_ok(xfer(p, X_WRITE, 70000, 0, 0, false, 9510) &&
			   xfer(p, X_SEND, 9000, 0, 0, false, 9511) &&
			   vm_tx(&bp2, "a") == ta && vm_tx(&bp2, "b") == tb &&
			   ta != ~0ULL,
		       "a and b on host 2 talk over the local transport: "
		       "transfers both ways, no overlay packet (a sent %llu, "
		       "b %llu)",
		       ta, tb);
	}
	if (!move_both(p, backend_vm_socket(&bp, "a"),
		       backend_vm_socket(&bp3, "b"),
		       "a back to host 1 while b moves to host 3", &b_old)) {
		if (b_old >= 0)
			close(b_old);
		goto out;
	}
	tap_ok(xfer(&g, X_SEND, 9000, 0, 0, false, 9810) &&
		   xfer(&h, X_WRITE, 70000, 0, 0, false, 9811) &&
		   xfer(&k, X_READ, 30000, 0, 0, false, 9812),
	       "g, h and k, whose requests a resent next to b, cross the "
	       "overlay again in step (PSNs agree): SEND, WRITE, READ both "
	       "ways");
	pair_destroy(&g);
	pair_destroy(&h);
	pair_destroy(&k);
	tap_ok(
	    log_has(&bp3, "10.0.0.1 migrated behind VTEP 127.0.0.1", NULL) &&
		log_has(&bp, "10.0.0.2 migrated behind VTEP 127.0.0.3", NULL),
	    "host 1 followed b to host 3 and host 3 followed a to host 1");
	tap_ok(log_has(&bp2, "vm a: migrated to VTEP 127.0.0.1", NULL) &&
		   log_has(&bp2, "vm b: migrated to VTEP 127.0.0.3", NULL),
	       "host 2 no longer serves a and b");
	/* b home again, where the sections after this one expect it,
	 * before its QEMU there quit: host 2 must still announce it */
	if (move_one(p, &B, backend_vm_socket(&bp2, "b"),
		     "b back from host 3 to host 2, its old QEMU there still "
		     "running"))
		tap_ok(log_has(&bp, "10.0.0.2 migrated behind VTEP 127.0.0.2",
			       NULL),
		       "host 1 followed b back to host 2");
	close(b_old);
	sleep_ms(1300); /* the last repeats */
	tap_ok(drops(&bp, "stale_announce") == 0 &&
		   drops(&bp3, "stale_announce") == 0,
	       "no back-end repeats the announcement of a VM that moved on "
	       "(hosts 1 and 3 counted no stale one)");
	return;
out:
	pair_destroy(&g);
	pair_destroy(&h);
	pair_destroy(&k);
}

/* Whether b's log has more lines with the needle than `before` within
 * 5 s. */
static bool wait_log(const struct backend_proc *b, const char *needle,
		     int before)
{
	int i;

	for (i = 0; i < 500 && log_count(b, needle) <= before; i++)
		sleep_ms(10);
	return log_count(b, needle) > before;
}

/* A request line to b's management socket; whether it answered ok. */
static bool mgmt(const struct backend_proc *b, const char *req)
{
	char out[512] = "";
	int fd = backend_mgmt_connect(b);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, req, strlen(req)) == (ssize_t)strlen(req);
	if (ok)
		backend_mgmt_read(fd, out, sizeof(out));
	close(fd);
	return ok && strstr(out, "ok") != NULL;
}

/*
 * Host verbs: a connection whose peer is not a VM of this deployment
 * (here: b, once host 1's map no longer has it) cannot follow a move;
 * saving a's state is refused with a message naming the QP and the
 * peer, and the source runs on with the connection.
 */
static void migrate_hostverbs_refused(struct pair *p)
{
	char add[160];
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	snprintf(add, sizeof(add),
		 "map add 100 10.0.0.2 127.0.0.2:%u 52:54:00:00:00:0b\n",
		 overlay_port);
	if (!tap_ok(mgmt(&bp, "map del 100 10.0.0.2\n"),
		    "host verbs: host 1 forgets where b is") ||
	    !stop_for_migration(&A))
		return;
	ret = vu_frontend_save_state(A.vm->fe, &buf, &len);
	free(buf);
	tap_ok(ret != 0,
	       "host verbs: saving a's state with an RC connection to a peer "
	       "that is not ours is refused (%d)",
	       ret);
	tap_ok(log_has(&bp, "migration refused: the VM uses the host-verbs "
			    "transport",
		       "which is not a VM of this deployment"),
	       "host verbs: the back-end says why (the QP, its peer)");
	tap_ok(resume_source(&A), "host verbs: a runs again");
	tap_ok(mgmt(&bp, add), "host verbs: host 1 maps b again");
	xfer(p, X_WRITE, 4096, 0, 0, false, 9310);
}

/* FETCH_ADD from a to b's MR on p: the old value back, the sum there. */
static void fetch_add(struct pair *p, uint32_t seed, const char *what)
{
	uint64_t lo = al8(&A, 60 * KIB), ro = al8(&B, 60 * KIB);
	uint64_t was = 0x5a5a000000000000ull | seed, got = 0, now = 0;
	struct sim_wr w = wr1(0xf000 + seed, PVO_WR_ATOMIC_FETCH_AND_ADD, &A,
			      lo, 8);

	sim_buf_write(&B.buf, ro, &was, 8);
	sim_buf_fill(&A.buf, lo, 0, 8);
	w.remote_addr = B.mr.iova + ro;
	w.rkey = B.mr.key;
	w.compare_add = 7;
	post1(&p->a, &w);
	if (!expect_cqe(&A.scq, w.wr_id, PVO_WC_FETCH_ADD, PVO_WC_SUCCESS,
			what))
		return;
	sim_buf_read(&A.buf, lo, &got, 8);
	sim_buf_read(&B.buf, ro, &now, 8);
	tap_ok(got == was && now == was + 7,
	       "%s: the old value back, the sum in b's MR", what);
}

/* The RC and UC connections after a move: RC both ways and an atomic,
 * UC WRITE and SEND. */
static void conns_after(struct pair *rc, struct pair *uc, uint32_t seed,
			const char *what)
{
	fetch_add(rc, seed, what);
	tap_ok(xfer(uc, X_WRITE, 20000, 0, 0, false, seed + 1) &&
		       xfer(uc, X_SEND, 3000, 0, 0, false, seed + 2),
	       "%s: UC WRITE and SEND afterwards", what);
}

/*
 * Host verbs: a migration that fails once host 3 has taken a's state
 * (the destination QEMU quits before it runs): a runs on at host 1 with
 * its connections, the work that waited for the move done once there.
 */
static void migrate_hostverbs_failed(struct pair *p, struct pair *u)
{
	uint8_t *buf;
	size_t len;
	int thawed = log_count(&bp, THAWED);

	prepare_dst(&A.buf, 720 * KIB, 5000);
	post_recv1(&p->a, &A, 0xa801, 720 * KIB, 5000);
	if (!stop_for_migration(&A))
		return;
	post_across(p, 9604);
	if (vu_frontend_save_state(A.vm->fe, &buf, &len) == 0) {
		tap_ok(offer_at(&bp3, backend_vm_socket(&bp3, "a"), buf, len,
				NULL) == 0 &&
			   log_has(&bp3, "migrated state accepted", NULL),
		       "host verbs: host 3 takes a's state, then its "
		       "front-end goes (the migration fails)");
		free(buf);
	} else {
		tap_ok(false, "host verbs: a's state saved: %s",
		       vu_frontend_error(A.vm->fe));
	}
	tap_ok(resume_source(&A), "host verbs: a with an RC and a UC "
				  "connection runs again at host 1 after "
				  "the failed migration");
	wait_thawed(thawed);
	check_across(9604);
	traffic_after(p, "host verbs: RC after the failed migration");
	conns_after(p, u, 9615, "host verbs: after the failed migration");
}

/*
 * Host verbs: RC and UC connections a and b make while host 2 serves
 * both run in software (the local transport copies), as do two with an
 * SRQ at one end (soft_srq_*: refused at the save while b's SRQ also
 * serves a connection that stays). A cancelled migration leaves
 * them there; a's state saves with them. a's move home
 * takes them onto the host device: host 2 hands b's QPs from the
 * software engine to their host QPs and both ends are rebound as for a
 * remote peer. b's two 8 MiB SENDs, arriving in slices when a stops
 * (the first's first bytes in a's receive, the second's last not), and
 * the work posted while a is frozen complete once with their bytes, the
 * receive a SEND was arriving into posted first on a's new host QP;
 * every kind of work on both afterwards, and again with a next to b.
 */
/* 32 of the local transport's slices; the most rdma_rxe takes in one
 * message (its port's max_msg_sz) */
#define SOFT_LONG (8 * MIB)
#define ONTO_HOST "goes from software onto the host device"
#define HELD_FIRST "is the host QP's first"

/*
 * SRQs at both ends of connections in software: a's QP on a's SRQ qa
 * connected to b, b's QP on b's SRQ qb connected to a. An SRQ goes onto
 * the host device with all its QPs, so while b has a QP on qb connected
 * to b itself (a VM that stays), a's save is refused and the log says
 * why; once it is gone, a's move takes both SRQs onto the device, their
 * receives posted before the move taking the SENDs after it in order.
 */
#define SS_DST (1536 * KIB) /* 4 KiB per receive, at a and at b */
#define SS_SRC (1600 * KIB)
#define SS_LEN 3000
#define SS_WR(n, i) (((n) == &A ? 0x5700u : 0x5780u) + (i))
#define SRQ_STAYS "is connected to a VM that stays here"
#define SRQ_TO_HOST "its receives to the host SRQ"
#define SRQ_SLICED "was receiving a message in slices"

struct soft_srq {
	struct sim_srq qa, qb;
	struct pair ga, gb; /* ga.a: a's QP on qa; gb.a: b's QP on qb */
	bool made_qa, made_qb;
	unsigned int next_a, next_b; /* the receive each SRQ fills next */
};

/* n's receives from..to-1 on its SRQ q. */
static bool soft_srq_recvs(struct node *n, struct sim_srq *q, unsigned int from,
			   unsigned int to)
{
	unsigned int i;

	for (i = from; i < to; i++) {
		struct sim_sge sg = sge_of(n, SS_DST + i * 4 * KIB, 4 * KIB);

		prepare_dst(&n->buf, SS_DST + i * 4 * KIB, 4 * KIB);
		if (sim_post_srq_recv(q, SS_WR(n, i), &sg, 1))
			return tap_ok(false,
				      "host verbs: %s posts receive %u on its "
				      "SRQ",
				      n->name, i);
	}
	return true;
}

/* A SEND over g (g->b sends, g->a's QP on an SRQ receives into its
 * next receive), every field and byte checked. */
static void soft_srq_send(struct pair *g, unsigned int *next, uint32_t seed,
			  const char *what)
{
	struct node *to = g->na, *from = g->nb;
	struct sim_wr w = wr1(0x5800 + seed, PVO_WR_SEND, from, SS_SRC, SS_LEN);
	unsigned int i = (*next)++;
	struct pvo_cqe c;

	fill_pattern(&from->buf, SS_SRC, SS_LEN, seed);
	post1(&g->b, &w);
	expect_cqe(&from->scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	if (get_cqe(&to->rcq, &c, what))
		tap_ok(cqe_ok(&c, SS_WR(to, i), PVO_WC_RECV, PVO_WC_SUCCESS,
			      what) &&
			   le32toh(c.qpn) == g->a.qpn &&
			   le32toh(c.byte_len) == SS_LEN,
		       "%s: %s's SRQ receive %u takes %s's SEND (QP %u)", what,
		       to->name, i, from->name, g->a.qpn);
	check_data(what, &to->buf, SS_DST + i * 4 * KIB, SS_LEN, seed);
}

/* b's SEND into a's SRQ and a's into b's. */
static void soft_srq_both(struct soft_srq *ss, uint32_t seed, const char *what)
{
	soft_srq_send(&ss->ga, &ss->next_a, seed, what);
	soft_srq_send(&ss->gb, &ss->next_b, seed + 1, what);
}

static bool soft_srq_make(struct soft_srq *ss, const struct sim_conn *c)
{
	memset(ss, 0, sizeof(*ss));
	ss->made_qa =
	    TAP_STATUS(sim_create_srq(&A.pd, 8, 1, 0, &ss->qa), PVO_STATUS_OK,
		       "host verbs: a's SRQ next to b");
	ss->made_qb = TAP_STATUS(sim_create_srq(&B.pd, 8, 1, 0, &ss->qb),
				 PVO_STATUS_OK, "host verbs: b's SRQ");
	return ss->made_qa && ss->made_qb &&
	       pair_make_srq_at(&ss->ga, &A, &B, &ss->qa, c, c) &&
	       pair_make_srq_at(&ss->gb, &B, &A, &ss->qb, c, c) &&
	       soft_srq_recvs(&A, &ss->qa, 0, 4) &&
	       soft_srq_recvs(&B, &ss->qb, 0, 4);
}

static void soft_srq_free(struct soft_srq *ss)
{
	pair_destroy(&ss->ga);
	pair_destroy(&ss->gb);
	if (ss->made_qa)
		TAP_STATUS(sim_destroy_srq(&ss->qa), PVO_STATUS_OK,
			   "host verbs: a's SRQ destroyed");
	if (ss->made_qb)
		TAP_STATUS(sim_destroy_srq(&ss->qb), PVO_STATUS_OK,
			   "host verbs: b's SRQ destroyed");
}

/* A QP of b on qb connected to another of b's keeps a here: the save is
 * refused, the log says why, and a runs on. */
static void soft_srq_refused(struct soft_srq *ss, const struct sim_conn *c)
{
	int refused = log_count(&bp2, SRQ_STAYS), st;
	uint8_t *buf = NULL;
	struct pair gl;
	size_t len;

	if (!pair_make_srq_at(&gl, &B, &B, &ss->qb, c, c))
		return;
	if (stop_for_migration(&A)) {
		st = vu_frontend_save_state(A.vm->fe, &buf, &len);
		free(buf);
		tap_ok(st != 0,
		       "host verbs: saving a is refused while b's SRQ also "
		       "serves a connection of b to itself (%d)",
		       st);
		tap_ok(log_count(&bp2, SRQ_STAYS) > refused,
		       "host verbs: ... the back-end says why");
		tap_ok(resume_source(&A), "host verbs: a runs on");
	}
	pair_destroy(&gl);
}

struct soft_long {
	struct sim_buf a, b; /* a's two receives, b's source */
	struct sim_mr ma, mb;
};

static bool soft_long_make(struct soft_long *l)
{
	const uint64_t len = SOFT_LONG + 64 * KIB; /* and the guards */
	int st;

	memset(l, 0, sizeof(*l));
	if (!tap_ok(sim_buf_alloc(&l->a, sim_vm_ram(A.vm),
				  sim_vm_va(A.vm, 2 * len + PVO_PAGE_SIZE),
				  2 * len, 0, SIM_LAYOUT_SCATTER) == 0 &&
			sim_buf_alloc(&l->b, sim_vm_ram(B.vm),
				      sim_vm_va(B.vm, len + PVO_PAGE_SIZE), len,
				      0, SIM_LAYOUT_SCATTER) == 0,
		    "host verbs: 16 MiB of a's RAM and 8 MiB of b's"))
		return false;
	st = sim_reg_mr(&A.pd, &l->a, 0, 2 * len, PVO_ACCESS_LOCAL_WRITE,
			&l->ma);
	if (st == PVO_STATUS_OK)
		st = sim_reg_mr(&B.pd, &l->b, 0, len, 0, &l->mb);
	return TAP_STATUS(st, PVO_STATUS_OK, "host verbs: their MRs");
}

static void soft_long_free(struct soft_long *l)
{
	if (l->ma.key)
		sim_dereg_mr(&l->ma);
	if (l->mb.key)
		sim_dereg_mr(&l->mb);
	sim_buf_free(&l->a);
	sim_buf_free(&l->b);
}

/* Whether the 64 bytes of a's receive at off are all still guard bytes. */
static bool soft_long_untouched(struct soft_long *l, uint64_t off)
{
	uint8_t head[64];
	unsigned int k;

	sim_buf_read(&l->a, off, head, sizeof(head));
	for (k = 0; k < sizeof(head) && head[k] == GUARD_BYTE; k++)
		;
	return k == sizeof(head);
}

/* Whether the first bytes of b's SEND are in a's receive (5 s at most):
 * the local transport copies the rest in slices over the next turns. */
static bool soft_long_begun(struct soft_long *l)
{
	unsigned int i;

	for (i = 0; i < 5000 && soft_long_untouched(l, 0); i++)
		sleep_ms(1);
	return !soft_long_untouched(l, 0);
}

/* b's pattern, in pieces (scratch holds 4 MiB). */
static void soft_long_fill(struct soft_long *l, uint32_t seed)
{
	uint64_t off;

	for (off = 0; off < SOFT_LONG; off += 2 * MIB)
		fill_pattern_at(&l->b, off, 2 * MIB, seed, off);
	sim_buf_fill(&l->a, 0, GUARD_BYTE, 2 * SOFT_LONG + GUARD);
}

/* a's n receives hold b's bytes n times, the guard bytes after them
 * untouched. */
static void soft_long_check(struct soft_long *l, unsigned int n,
			    const char *what)
{
	uint8_t *x = malloc(MIB), *y = malloc(MIB);
	uint64_t off, bad = 0, first = 0;

	if (!x || !y)
		tap_bail("no memory to compare b's SENDs");
	for (off = 0; off < n * SOFT_LONG; off += MIB) {
		sim_buf_read(&l->a, off, x, MIB);
		sim_buf_read(&l->b, off % SOFT_LONG, y, MIB);
		if (memcmp(x, y, MIB) && !bad++)
			first = off;
	}
	tap_ok(!bad && soft_long_untouched(l, n * SOFT_LONG),
	       "%s: %u x %u MiB as b sent them, the guard after them "
	       "untouched (%llu MiB differ, the first at %llu MiB)",
	       what, n, (unsigned int)(SOFT_LONG / MIB),
	       (unsigned long long)bad, (unsigned long long)(first / MIB));
	free(x);
	free(y);
}

/* a's receive k (0 or 1) of 8 MiB. */
static struct sim_sge soft_long_recv(const struct soft_long *l, unsigned int k)
{
	return (struct sim_sge){l->a.va + k * SOFT_LONG, SOFT_LONG, l->ma.key};
}

/* b's two 8 MiB SENDs over q, wr_ids id and id + 1. */
static void soft_long_send(struct soft_long *l, struct sim_qp *q, uint64_t id)
{
	struct sim_wr w = wr1(id, PVO_WR_SEND, &B, 0, 0);

	w.sge[0] = (struct sim_sge){l->b.va, SOFT_LONG, l->mb.key};
	post1(q, &w);
	w.wr_id = id + 1;
	post1(q, &w);
}

/* ... both complete, into a's receives rid and rid + 1, every byte
 * checked. */
static void soft_long_done(struct soft_long *l, uint64_t id, uint64_t rid,
			   const char *what)
{
	char first[160], second[160], into[160];

	snprintf(first, sizeof(first), "%s: b's first 8 MiB SEND", what);
	snprintf(second, sizeof(second), "%s: b's second 8 MiB SEND", what);
	snprintf(into, sizeof(into), "%s: ... into a's receives", what);
	expect_cqe(&B.scq, id, PVO_WC_SEND, PVO_WC_SUCCESS, first);
	expect_cqe(&B.scq, id + 1, PVO_WC_SEND, PVO_WC_SUCCESS, second);
	if (expect_cqe(&A.rcq, rid, PVO_WC_RECV, PVO_WC_SUCCESS, into) &&
	    expect_cqe(&A.rcq, rid + 1, PVO_WC_RECV, PVO_WC_SUCCESS, into))
		soft_long_check(l, 2, what);
}

/* SENDs arriving in slices into receives of an SRQ of a when a stops:
 * the save is refused (such a receive left the ring, and a host SRQ
 * could not take it back); a runs on and both complete into them. */
static void soft_srq_sliced(struct soft_long *l, const struct sim_conn *c)
{
	int refused = log_count(&bp2, SRQ_SLICED), st;
	struct sim_sge ra[2] = {soft_long_recv(l, 0), soft_long_recv(l, 1)};
	uint8_t *buf = NULL;
	struct sim_srq q;
	struct pair g;
	size_t len;

	memset(&g, 0, sizeof(g));
	if (!TAP_STATUS(sim_create_srq(&A.pd, 8, 1, 0, &q), PVO_STATUS_OK,
			"host verbs: a's SRQ for two 8 MiB SENDs"))
		return;
	if (!pair_make_srq_at(&g, &A, &B, &q, c, c))
		goto out;
	soft_long_fill(l, 9775);
	if (!tap_ok(sim_post_srq_recv(&q, 0x5790, &ra[0], 1) == 0 &&
			sim_post_srq_recv(&q, 0x5791, &ra[1], 1) == 0,
		    "host verbs: a posts two 8 MiB receives on it") ||
	    !vu_frontend_start_log(A.vm->fe, &len))
		goto out;
	soft_long_send(l, &g.b, 0x5792);
	if (!tap_ok(soft_long_begun(l), "host verbs: b's 8 MiB SENDs into a's "
					"SRQ begun in software") ||
	    !tap_ok(vu_frontend_stop(A.vm->fe) == 0, "host verbs: a stops"))
		goto out;
	tap_ok(soft_long_untouched(l, 2 * SOFT_LONG - 64),
	       "host verbs: ... and under way when a stopped (the second's "
	       "last bytes not in a's receive)");
	st = vu_frontend_save_state(A.vm->fe, &buf, &len);
	free(buf);
	tap_ok(st != 0,
	       "host verbs: saving a while a SEND arrives in slices into its "
	       "SRQ is refused (%d)",
	       st);
	tap_ok(log_count(&bp2, SRQ_SLICED) > refused,
	       "host verbs: ... the back-end says why");
	if (!tap_ok(resume_source(&A), "host verbs: a runs on"))
		goto out;
	soft_long_done(l, 0x5792, 0x5790, "host verbs: b's SENDs into a's SRQ");
out:
	pair_destroy(&g);
	TAP_STATUS(sim_destroy_srq(&q), PVO_STATUS_OK,
		   "host verbs: that SRQ destroyed");
	drain_all();
}

static void migrate_hostverbs_software(void)
{
	struct sim_conn c = {.timeout = 18}; /* 1 s, 7 retries */
	int onto = log_count(&bp2, ONTO_HOST), old;
	int held = log_count(&bp, HELD_FIRST);
	int to_host = log_count(&bp2, SRQ_TO_HOST);
	struct sim_sge sa[2];
	struct soft_srq ss;
	size_t log_size;
	struct soft_long l;
	struct pair s, v;
	uint8_t *buf;
	size_t len;

	c.sgid_index = fast.sgid_index;
	memset(&ss, 0, sizeof(ss));
	if (!soft_long_make(&l))
		goto free;
	if (!pair_make(&s, PVO_QPT_RC, &c, &c))
		goto free;
	if (!pair_make(&v, PVO_QPT_UC, &c, &c)) {
		pair_destroy(&s);
		goto free;
	}
	conns_after(&s, &v, 9680,
		    "host verbs: connected in software on host 2");
	if (!soft_srq_make(&ss, &c))
		goto out;
	soft_srq_both(&ss, 9760, "host verbs: SRQs in software");
	soft_srq_refused(&ss, &c);
	soft_srq_both(&ss, 9762,
		      "host verbs: SRQs in software after the "
		      "refused save");
	soft_srq_sliced(&l, &c);
	if (!stop_for_migration(&A))
		goto out;
	buf = NULL;
	if (!tap_ok(vu_frontend_save_state(A.vm->fe, &buf, &len) == 0,
		    "host verbs: a's state saves with connections in "
		    "software to b"))
		tap_diag("%s", vu_frontend_error(A.vm->fe));
	free(buf);
	if (!tap_ok(resume_source(&A), "host verbs: a runs on at host 2 "
				       "(the migration cancelled)"))
		goto out;
	conns_after(&s, &v, 9683,
		    "host verbs: in software after the "
		    "cancelled migration");
	soft_srq_both(&ss, 9764,
		      "host verbs: SRQs in software after the "
		      "cancelled migration");
	tap_ok(log_count(&bp2, ONTO_HOST) == onto,
	       "host verbs: ... still in software (no QP went onto the host "
	       "device)");

	sa[0] = soft_long_recv(&l, 0);
	sa[1] = soft_long_recv(&l, 1);
	soft_long_fill(&l, 9686);
	prepare_dst(&A.buf, 720 * KIB, 5000);
	if (sim_post_recv(&s.a, 0xa901, &sa[0], 1) ||
	    sim_post_recv(&s.a, 0xa902, &sa[1], 1) ||
	    !post_recv1(&s.a, &A, 0xa801, 720 * KIB, 5000))
		goto out;
	/* the dirty log on before: stopping a's rings is then the freeze,
	 * one round trip after the SENDs are seen to begin */
	if (!vu_frontend_start_log(A.vm->fe, &log_size))
		goto out;
	soft_long_send(&l, &s.b, 0x5500);
	if (!tap_ok(soft_long_begun(&l), "host verbs: b's two 8 MiB SENDs to "
					 "a begun in software") ||
	    !tap_ok(vu_frontend_stop(A.vm->fe) == 0, "host verbs: a stops") ||
	    !leave_stopped(&A, &buf, &len, &old))
		goto out;
	tap_ok(soft_long_untouched(&l, 2 * SOFT_LONG - 64),
	       "host verbs: ... and under way when a stopped (the last bytes "
	       "of the second not in a's receive)");
	post_across(&s, 9687);
	if (!arrive(&A, backend_vm_socket(&bp, "a"), buf, len,
		    "host verbs: a home, its connections to b in software")) {
		close(old);
		goto out;
	}
	soft_long_done(&l, 0x5500, 0xa901,
		       "host verbs: b's SENDs across the move");
	check_across(9687);
	close(old);
	tap_ok(log_count(&bp, HELD_FIRST) == held + 1,
	       "host verbs: host 1 posted the receive b's SEND was arriving "
	       "into first on a's host QP");
	tap_ok(wait_log(&bp2, ONTO_HOST, onto + 1),
	       "host verbs: host 2 took b's QPs from software onto the host "
	       "device");
	tap_ok(log_count(&bp2, ONTO_HOST) == onto + 4,
	       "host verbs: ... all four of them (RC, UC, one on b's SRQ, one "
	       "to a's): %d",
	       log_count(&bp2, ONTO_HOST) - onto);
	traffic_after(&s, "host verbs: RC from software, a home");
	conns_after(&s, &v, 9690, "host verbs: from software, a home");
	/* the receives posted before the move, then new ones through the
	 * host SRQs' doorbells */
	soft_srq_both(&ss, 9766, "host verbs: SRQs from software, a home");
	tap_ok(log_count(&bp2, SRQ_TO_HOST) == to_host + 1,
	       "host verbs: host 2 took b's SRQ onto the host device, once");
	if (soft_srq_recvs(&A, &ss.qa, 4, 8) &&
	    soft_srq_recvs(&B, &ss.qb, 4, 8))
		soft_srq_both(&ss, 9768, "host verbs: host SRQs, a home");
	if (move_one(&s, &A, backend_vm_socket(&bp2, "a"),
		     "host verbs: a next to b again, on host QPs")) {
		conns_after(&s, &v, 9693, "host verbs: a next to b again");
		soft_srq_both(&ss, 9770,
			      "host verbs: host SRQs, a next to "
			      "b again");
	} else {
		backend_dump_log(&bp2, 60);
	}
	expect_no_cqe(&A.rcq, 0, "host verbs: each receive completed once");
	expect_no_cqe(&B.scq, 0, "host verbs: each send completed once");
out:
	soft_srq_free(&ss);
	pair_destroy(&v);
	pair_destroy(&s);
free:
	drain_all();
	soft_long_free(&l);
}

/*
 * Host verbs, an RC and a UC connection between a and b on the device:
 * a's migration that does not happen, then a to host 3 and home, b (the
 * peer) to host 3 and home, a next to b and home, with work posted on
 * both ends while the VM moving is frozen: each connection is rebound
 * at both ends (both host QPs made again, each requester restarting
 * where the other's responder stood), every WQE completes once, every
 * byte lands; WRITE, READ, SEND, an atomic on RC and WRITE, SEND on UC
 * after each.
 */
static void migrate_hostverbs_rc(void)
{
	static const char rebound[] = "follows its peer's move: rebound";
	struct sim_conn c = {.timeout = 18}; /* 1 s, 7 retries */
	int thawed = log_count(&bp, THAWED);
	int on2 = log_count(&bp2, rebound), on1 = log_count(&bp, rebound);
	struct pair p, u;

	c.sgid_index = fast.sgid_index;
	if (!pair_make(&p, PVO_QPT_RC, &c, &c) ||
	    !xfer(&p, X_WRITE, 8192, 0, 0, false, 9601))
		return;
	if (!pair_make(&u, PVO_QPT_UC, &c, &c)) {
		pair_destroy(&p);
		return;
	}
	prepare_dst(&A.buf, 720 * KIB, 5000);
	post_recv1(&p.a, &A, 0xa801, 720 * KIB, 5000);
	if (!stop_for_migration(&A))
		return;
	post_across(&p, 9602);
	tap_ok(resume_source(&A), "host verbs: a with an RC connection runs "
				  "again after a migration that did not "
				  "happen");
	wait_thawed(thawed);
	check_across(9602);
	tap_ok(wait_log(&bp2, rebound, on2),
	       "host verbs: host 2 rebound b's QP to a's (same) host QP");
	traffic_after(&p, "host verbs: RC after the cancelled migration");
	conns_after(&p, &u, 9610, "host verbs: after the cancelled migration");
	migrate_hostverbs_failed(&p, &u);
	if (move_one(&p, &A, backend_vm_socket(&bp3, "a"),
		     "host verbs: a with its connections to host 3"))
		conns_after(&p, &u, 9620, "host verbs: a on host 3");
	if (move_one(&p, &A, backend_vm_socket(&bp, "a"),
		     "host verbs: a with its connections home"))
		conns_after(&p, &u, 9630, "host verbs: a home");
	/* the peer moves: host 1 rebinds a's QPs */
	if (move_one(&p, &B, backend_vm_socket(&bp3, "b"),
		     "host verbs: b with its connections to host 3"))
		conns_after(&p, &u, 9640, "host verbs: b on host 3");
	if (move_one(&p, &B, backend_vm_socket(&bp2, "b"),
		     "host verbs: b with its connections home"))
		conns_after(&p, &u, 9650, "host verbs: b home");
	tap_ok(wait_log(&bp, rebound, on1),
	       "host verbs: host 1 rebound a's QPs to b's");
	/* next to its peer: both ends rebound by one back-end */
	if (move_one(&p, &A, backend_vm_socket(&bp2, "a"),
		     "host verbs: a with its connections next to b")) {
		conns_after(&p, &u, 9660, "host verbs: a next to b");
		migrate_hostverbs_software();
		conns_after(&p, &u, 9665,
			    "host verbs: a next to b, after the "
			    "connections in software moved");
	}
	if (move_one(&p, &A, backend_vm_socket(&bp, "a"),
		     "host verbs: a with its connections home from b's host"))
		conns_after(&p, &u, 9670, "host verbs: a home from b's host");
	pair_destroy(&u);
	pair_destroy(&p);
	drain_all();
}

/* A UD datagram of len bytes from `from` (its QP s, AH ah) to QPN qpn,
 * received by `to` on r into a receive posted before (wr_id rid, at
 * roff): its payload, and the source QPN the receiver sees. */
static void ud_check(const char *what, struct node *from, struct sim_qp *s,
		     uint32_t ah, uint32_t qpn, struct node *to,
		     uint64_t rid, uint64_t roff, uint32_t want_src,
		     uint32_t seed)
{
	const uint64_t so = 12 * KIB;
	const uint32_t len = 1000;
	struct sim_wr w = wr1(0xd100 + seed, PVO_WR_SEND, from, so, len);
	struct pvo_cqe c;

	w.ah = ah;
	w.remote_qpn = qpn;
	w.remote_qkey = QKEY;
	fill_pattern(&from->buf, so, len, seed);
	post1(s, &w);
	expect_cqe(&from->scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	if (!get_cqe(&to->rcq, &c, what))
		return;
	tap_ok(cqe_ok(&c, rid, PVO_WC_RECV, PVO_WC_SUCCESS, what) &&
		   le32toh(c.byte_len) == 40 + len &&
		   le32toh(c.src_qp) == want_src,
	       "%s: received into the receive posted before, source QPN 0x%x "
	       "(got 0x%x)",
	       what, want_src, le32toh(c.src_qp));
	sim_buf_fill(&to->buf, roff, GUARD_BYTE, 40); /* the GRH */
	check_data(what, &to->buf, roff + 40, len, seed);
}

static bool post_ud_recv(struct sim_qp *q, struct node *n, uint64_t id,
			 uint64_t off)
{
	prepare_dst(&n->buf, off, 40 + 1000);
	return post_recv1(q, n, id, off, 40 + 1000);
}

/* A WRITE or READ of len bytes on q, from node `from` (at loff) to or
 * from `to`'s MR (at roff) by the key its guest knows; the bytes
 * checked where they land. */
static void one_sided(struct sim_qp *q, struct node *from, struct node *to,
		      uint8_t op, uint64_t loff, uint64_t roff, uint32_t len,
		      uint32_t seed, const char *what)
{
	bool read = op == PVO_WR_RDMA_READ;
	struct sim_wr w = wr1(seed, op, from, loff, len);

	fill_pattern(read ? &to->buf : &from->buf, read ? roff : loff, len,
		     seed);
	prepare_dst(read ? &from->buf : &to->buf, read ? loff : roff, len);
	w.remote_addr = to->mr.iova + roff;
	w.rkey = to->mr.key;
	post1(q, &w);
	if (expect_cqe(&from->scq, w.wr_id,
		       read ? PVO_WC_RDMA_READ : PVO_WC_RDMA_WRITE,
		       PVO_WC_SUCCESS, what))
		check_data(what, read ? &from->buf : &to->buf,
			   read ? loff : roff, len, seed);
}

/* RC between a's qa and b's qb, both made before a moved: b connects to
 * the QPN a's guest knows. WRITE and READ both ways with the keys the
 * guests know. */
static void rc_after_move(struct sim_qp *qa, struct sim_qp *qb,
			  const char *what)
{
	struct sim_conn ca = fast, cb = fast;
	struct sim_peer pa, pb;
	int st;

	ca.sgid_index = A.gid_v4;
	cb.sgid_index = B.gid_v4;
	sim_qp_peer(qb, cb.sgid_index, &pb);
	sim_qp_peer(qa, ca.sgid_index, &pa);
	st = sim_qp_connect(qa, &ca, &pb);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(qb, &cb, &pa);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"%s: RC QPs made before the move connect (b to a's "
			"QPN 0x%x)",
			what, qa->qpn))
		return;
	one_sided(qb, &B, &A, PVO_WR_RDMA_WRITE, 300 * KIB, 400 * KIB, 9000,
		  0x3301, "host verbs: b's WRITE with a's key, after the move");
	one_sided(qb, &B, &A, PVO_WR_RDMA_READ, 600 * KIB, 500 * KIB, 7000,
		  0x3302, "host verbs: b's READ of a's MR, after the move");
	one_sided(qa, &A, &B, PVO_WR_RDMA_WRITE, 700 * KIB, 800 * KIB, 5000,
		  0x3303, "host verbs: a's WRITE with its own key, after the "
			  "move");
}

/*
 * Host verbs: a VM whose host QPs are UD ones and RC ones not yet
 * connected moves. A cancelled migration first: the freeze takes a's UD
 * host QP to ERROR, the thaw back to RTS with the receive a posted
 * before. Then a moves to host 3 (another back-end, the same rxe
 * device): its objects are made again there with other host numbers,
 * its guest keeps its own, host 2 learns the pairs from the offer behind
 * a's announcement; UD both ways (a receive posted before the move
 * takes b's datagram), a new RC connection between QPs made before,
 * WRITE and READ with the keys the guests know. Then a home to host 1.
 */
static void migrate_hostverbs(void)
{
	struct sim_qp_init ia = qp_init(&A, PVO_QPT_RC),
			   ib = qp_init(&B, PVO_QPT_RC);
	struct sim_qp qa, qb;
	struct sim_peer peer;
	struct ud_pair u;
	struct pvo_av av;
	uint32_t ah_ba = 0;
	char err[512];
	uint8_t *buf;
	size_t len;
	int old, thawed, on1, on3;

	if (!ud_make(&u, &A, &B))
		return;
	sim_qp_peer(&u.a, A.gid_v4, &peer);
	sim_av_to(&av, &peer, (uint8_t)B.gid_v4);
	if (!TAP_STATUS(sim_create_ah(&B.pd, &av, &ah_ba), PVO_STATUS_OK,
			"host verbs: an AH from b to a") ||
	    !TAP_STATUS(sim_create_qp(&A.pd, &ia, &qa), PVO_STATUS_OK,
			"host verbs: an RC QP on a, left in RESET") ||
	    !TAP_STATUS(sim_create_qp(&B.pd, &ib, &qb), PVO_STATUS_OK,
			"host verbs: an RC QP on b, left in RESET"))
		return;

	/* a migration that does not happen */
	post_ud_recv(&u.a, &A, 0xd001, 900 * KIB);
	thawed = log_count(&bp, THAWED);
	if (!stop_for_migration(&A))
		return;
	tap_ok(resume_source(&A), "host verbs: a runs again after a "
				  "migration that did not happen");
	/* a UD datagram before the thaw is lost, as on any UD QP that
	 * has no receive yet */
	wait_thawed(thawed);
	ud_check("host verbs: b's datagram to a, after the cancelled "
		 "migration",
		 &B, &u.b, ah_ba, u.a.qpn, &A, 0xd001, 900 * KIB, u.b.qpn,
		 0x3101);
	post_ud_recv(&u.b, &B, 0xd002, 900 * KIB);
	ud_check("host verbs: a's datagram to b, after the cancelled "
		 "migration",
		 &A, &u.a, u.ah_v4, u.b.qpn, &B, 0xd002, 900 * KIB, u.a.qpn,
		 0x3102);

	/* to host 3 */
	if (start_host3(err, sizeof(err)) != 0) {
		tap_ok(false, "host 3's back-end starts: %s", err);
		return;
	}
	post_ud_recv(&u.a, &A, 0xd003, 900 * KIB);
	on3 = log_count(&bp2, TO_HOST3);
	if (!leave(&A, &buf, &len, &old))
		return;
	tap_ok(log_has(&bp, "rings stopped while migrating", NULL),
	       "host verbs: a's state is saved (UD QP, RC QP in RESET, MRs)");
	if (!arrive(&A, backend_vm_socket(&bp3, "a"), buf, len,
		    "host verbs: a to host 3")) {
		close(old);
		return;
	}
	close(old);
	tap_ok(log_has(&bp3, "migrated state applied", NULL),
	       "host verbs: host 3 made a's objects again on its device");
	tap_ok(wait_log(&bp2, TO_HOST3, on3),
	       "host verbs: host 2 took a's new host numbers from host 3's "
	       "offer");
	{
		char line[4096];

		tap_ok(backend_mgmt_line(&bp2, "daemon", line, sizeof(line)) &&
			   backend_field(line, " peer_aliases=") >= 2,
		       "host verbs: host 2 translates a's UD QPN and MR key "
		       "(%llu pairs)",
		       backend_field(line, " peer_aliases="));
	}
	ud_check("host verbs: b's datagram to a's QPN, a on host 3", &B, &u.b,
		 ah_ba, u.a.qpn, &A, 0xd003, 900 * KIB, u.b.qpn, 0x3103);
	post_ud_recv(&u.b, &B, 0xd004, 900 * KIB);
	ud_check("host verbs: a's datagram to b, a on host 3", &A, &u.a,
		 u.ah_v4, u.b.qpn, &B, 0xd004, 900 * KIB, u.a.qpn, 0x3104);
	rc_after_move(&qa, &qb, "host verbs: a on host 3");

	/* home */
	sim_destroy_qp(&qa);
	sim_destroy_qp(&qb);
	post_ud_recv(&u.a, &A, 0xd005, 900 * KIB);
	on1 = log_count(&bp2, TO_HOST1);
	old = -1;
	if (leave(&A, &buf, &len, &old) &&
	    arrive(&A, backend_vm_socket(&bp, "a"), buf, len,
		   "host verbs: a back to host 1")) {
		wait_log(&bp2, TO_HOST1, on1);
		ud_check("host verbs: b's datagram to a's QPN, a home", &B,
			 &u.b, ah_ba, u.a.qpn, &A, 0xd005, 900 * KIB, u.b.qpn,
			 0x3105);
	}
	if (old >= 0)
		close(old);
	sim_destroy_ah(&B.ctx, ah_ba);
	ud_destroy(&u, &A, &B);
	drain_all();
}

/* What a device sends on the link between the two (netdev: its end,
 * hv_netdev for host 1's and 2's, hv3_netdev for host 3's): dropped,
 * slow (4 Mbit/s) or passed again (pvo-hv-link). */
static bool hv_link(const char *netdev, const char *mode)
{
	const char *prog = getenv("T_DATAPATH_HV_LINK");
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s %s %s", prog, netdev, mode);
	return tap_ok(system(cmd) == 0, "host verbs: what %s sends: %s",
		      netdev == hv_netdev ? hv_dev : hv3_dev, mode);
}

/* a leaves and arrives at the back-end of socket to; what pass_netdev
 * sends passes again in between (if named). */
static bool a_move(const char *to, const char *pass_netdev, const char *what)
{
	uint8_t *buf;
	size_t len;
	int old;
	bool ok;

	ok = leave(&A, &buf, &len, &old);
	if (pass_netdev)
		hv_link(pass_netdev, "pass");
	if (!ok)
		return false;
	ok = arrive(&A, to, buf, len, what);
	close(old);
	return ok;
}

/* a back to host 1 (its source QEMU quits), after a test that left it
 * elsewhere; what: the check's name. */
static void a_home(const char *what)
{
	a_move(backend_vm_socket(&bp, "a"), NULL, what);
}

static bool a_to_host3(const char *what)
{
	return a_move(backend_vm_socket(&bp3, "a"), NULL, what);
}

/*
 * Host verbs, hostverbs-migration = error: a with an RC connection to b,
 * which neither host 1 nor host 3 maps (not ours), migrates to host 3
 * instead of being refused; there the connection ends: QP_FATAL for a's
 * QP, its WRITE posted while frozen and its receive flushed.
 */
static void migrate_hostverbs_orphan(void)
{
	static const char ended[] = "cannot follow the move: the connection "
				    "ends";
	struct sim_conn c = {.timeout = 14};
	int on3 = log_count(&bp3, ended), ev;
	char add[160];
	struct sim_wr w;
	struct pair g;
	uint8_t *buf;
	size_t len;
	int old;

	snprintf(add, sizeof(add),
		 "map add 100 10.0.0.2 127.0.0.2:%u 52:54:00:00:00:0b\n",
		 overlay_port);
	c.sgid_index = fast.sgid_index;
	if (!pair_make(&g, PVO_QPT_RC, &c, &c) ||
	    !xfer(&g, X_WRITE, 8192, 0, 0, false, 9751))
		return;
	/* the last repeats of b's announcement (its move home) would map
	 * b again after the map del below */
	sleep_ms(1300);
	if (!tap_ok(reload_vm_a("hostverbs-migration = error\n"),
		    "host verbs: host 1 reloads a with hostverbs-migration "
		    "= error") ||
	    !tap_ok(mgmt(&bp, "map del 100 10.0.0.2\n") &&
			mgmt(&bp3, "map del 100 10.0.0.2\n"),
		    "host verbs: hosts 1 and 3 forget where b is")) {
		pair_destroy(&g);
		return;
	}
	post_recv1(&g.a, &A, 0xa951, 720 * KIB, 5000);
	sim_vm_drop_events(A.vm, 0);
	if (leave(&A, &buf, &len, &old)) {
		w = write_wr(0xa952, 96 * KIB, 3000, B.mr.iova + 840 * KIB,
			     B.mr.key);
		post1(&g.a, &w);
		if (arrive(&A, backend_vm_socket(&bp3, "a"), buf, len,
			   "host verbs: a with a connection to a peer not "
			   "ours, hostverbs-migration = error, to host 3")) {
			tap_ok(wait_log(&bp3, ended, on3),
			       "host verbs: host 3 says the connection to b "
			       "ends, and why");
			ev = sim_vm_expect_events(A.vm, PVO_EV_QP_FATAL,
						  g.a.handle, 1, timeout_ms,
						  30);
			tap_ok(ev == 1,
			       "host verbs: a's QP gets one QP_FATAL event "
			       "(%d)",
			       ev);
			expect_cqe(&A.scq, 0xa952, -1, PVO_WC_WR_FLUSH_ERR,
				   "host verbs: a's WRITE posted while frozen, "
				   "flushed");
			expect_cqe(&A.rcq, 0xa951, -1, PVO_WC_WR_FLUSH_ERR,
				   "host verbs: a's receive, flushed");
			expect_state(&g.a, PVO_QPS_ERR,
				     "host verbs: a's connection to a peer "
				     "not ours after the move");
		}
		close(old);
	}
	tap_ok(mgmt(&bp, add) && mgmt(&bp3, add),
	       "host verbs: hosts 1 and 3 map b again");
	tap_ok(reload_vm_a(NULL), "host verbs: a's config as it was");
	pair_destroy(&g);
	drain_all();
	a_home("host verbs: a home after its connection ended");
}

/*
 * Host verbs, a peer that takes no step: b's back-end is stopped while a
 * moves to host 3 with an RC connection to b. a's end waits for b's
 * answer as long as its requester would wait for an ACK (at least 3 s),
 * then ends the connection as if b were gone: the oldest send
 * RETRY_EXC_ERR, the next flushed, nothing else. Once b's back-end runs
 * again it answers the offer it missed; a's end, which ended, says so
 * (END): b's QP ends too, at once (QP_FATAL, its receive flushed).
 */
static void migrate_hostverbs_give_up(void)
{
	struct sim_conn c = {.timeout = 14}; /* 67 ms, 7 retries: 0.5 s */
	int on3 = log_count(&bp3, TOOK_NO_STEP);
	int on2 = log_count(&bp2, PEER_ENDED),
	    no_step = log_count(&bp2, TOOK_NO_STEP);
	struct sim_wr w;
	struct pair g;
	uint8_t *buf;
	size_t len;
	int old, ev;

	c.sgid_index = fast.sgid_index;
	if (!pair_make(&g, PVO_QPT_RC, &c, &c) ||
	    !xfer(&g, X_WRITE, 8192, 0, 0, false, 9701))
		return;
	post_recv1(&g.b, &B, 0xb901, 720 * KIB, 5000);
	sim_vm_drop_events(B.vm, 0);
	sim_vm_drop_events(A.vm, 0);
	if (!tap_ok(kill(bp2.pid, SIGSTOP) == 0,
		    "host verbs: b's back-end stopped (SIGSTOP)") ||
	    !leave(&A, &buf, &len, &old)) {
		kill(bp2.pid, SIGCONT);
		return;
	}
	fill_pattern(&A.buf, 96 * KIB, 30000, 9702);
	w = write_wr(0xa901, 96 * KIB, 30000, B.mr.iova + 840 * KIB,
		     B.mr.key);
	post1(&g.a, &w);
	w = wr1(0xa902, PVO_WR_SEND, &A, 64 * KIB, 100);
	post1(&g.a, &w);
	if (!arrive(&A, backend_vm_socket(&bp3, "a"), buf, len,
		    "host verbs: a to host 3, b's back-end stopped")) {
		close(old);
		kill(bp2.pid, SIGCONT);
		return;
	}
	close(old);
	tap_ok(wait_log(&bp3, TOOK_NO_STEP, on3),
	       "host verbs: host 3 says a's QP waited for b in vain, and "
	       "what to check");
	expect_cqe(&A.scq, 0xa901, PVO_WC_RDMA_WRITE, PVO_WC_RETRY_EXC_ERR,
		   "host verbs: a's oldest send after b did not answer");
	expect_cqe(&A.scq, 0xa902, -1, PVO_WC_WR_FLUSH_ERR,
		   "host verbs: a's next send, flushed");
	expect_no_cqe(&A.scq, 100, "host verbs: a's QP after giving up");
	expect_state(&g.a, PVO_QPS_ERR, "host verbs: a gave up on b");
	tap_ok(kill(bp2.pid, SIGCONT) == 0,
	       "host verbs: b's back-end runs again");
	tap_ok(wait_log(&bp2, PEER_ENDED, on2) &&
		   log_count(&bp2, TOOK_NO_STEP) == no_step,
	       "host verbs: host 2 answered the offer it missed, and a's "
	       "end said the connection ended");
	ev = sim_vm_expect_events(B.vm, PVO_EV_QP_FATAL, g.b.handle, 1,
				  timeout_ms, 30);
	tap_ok(ev == 1, "host verbs: b's QP gets one QP_FATAL event (%d)",
	       ev);
	expect_cqe(&B.rcq, 0xb901, -1, PVO_WC_WR_FLUSH_ERR,
		   "host verbs: b's receive, flushed");
	expect_state(&g.b, PVO_QPS_ERR, "host verbs: b's end after a's");
	pair_destroy(&g);
	drain_all();
	a_home("host verbs: a home after the connection ended");
	/* the last repeats of a's announcement, after which host 1 forgets
	 * where peers had a (the sections after this one expect it) */
	sleep_ms(1300);
}

/*
 * Host verbs on two devices, answers the switch-over loses: what host 2's
 * device sends to a on host 3 is dropped on the link between the devices
 * (T_DATAPATH_HV_LINK, "PROGRAM NETDEV drop|pass") while b's responder
 * executes a's READ, then a's FETCH_ADD, and a moves home before any
 * answer arrives. b's responder stood past each; the READ runs again
 * (nothing after it was executed) and completes once with the bytes; the
 * atomic cannot run again without applying it twice: it completes with
 * REM_OP_ERR, its sum in b's MR once, and the connection ends.
 */
/* With a on host 3, w posted on q (of a or b, whose send CQ is scq):
 * the answer, which netdev's device sends, is dropped, and a moves home
 * before it arrives. */
static bool lost_answer_move(struct sim_qp *q, struct sim_cq *scq,
			     const char *netdev, const struct sim_wr *w,
			     const char *what)
{
	if (!hv_link(netdev, "drop"))
		return false;
	post1(q, w);
	/* the responder executes it at once; give the answer time to be
	 * lost, and the requester's first retry too */
	sleep_ms(300);
	if (!expect_no_cqe(scq, 0, what)) {
		hv_link(netdev, "pass");
		return false;
	}
	return a_move(backend_vm_socket(&bp, "a"), netdev, what);
}

/* With a on host 3: from's FETCH_ADD (add) to to's word at `at`, whose
 * result netdev's device sends and the link drops, a moving home before
 * it arrives: it completes with REM_OP_ERR, applied once, no result. */
static bool lost_atomic(struct pair *g, struct node *from, uint64_t add,
			const char *netdev, const char *what)
{
	struct node *to = from == &A ? &B : &A;
	struct sim_qp *q = from == &A ? &g->a : &g->b;
	uint64_t was = 0x5a5a000000000000ull | add, got = 0, now = 0;
	uint64_t lo = al8(from, 52 * KIB), ro = al8(to, 52 * KIB);
	struct sim_wr w =
	    wr1(0xa900 + add, PVO_WR_ATOMIC_FETCH_AND_ADD, from, lo, 8);

	sim_buf_write(&to->buf, ro, &was, 8);
	sim_buf_fill(&from->buf, lo, 0, 8);
	w.remote_addr = to->mr.iova + ro;
	w.rkey = to->mr.key;
	w.compare_add = add;
	if (!lost_answer_move(q, &from->scq, netdev, &w, what))
		return false;
	expect_cqe(&from->scq, w.wr_id, PVO_WC_FETCH_ADD, PVO_WC_REM_OP_ERR,
		   what);
	sim_buf_read(&from->buf, lo, &got, 8);
	sim_buf_read(&to->buf, ro, &now, 8);
	return tap_ok(now == was + add && got == 0,
		      "%s: applied once (%s holds 0x%llx), not run again; no "
		      "result for %s (0x%llx)",
		      what, to->name, (unsigned long long)now, from->name,
		      (unsigned long long)got);
}

/* The other end (n's QP q, served by b) was told the connection ends:
 * it ends at once (QP_FATAL), not after its wait. */
static void ended_at_once(const struct backend_proc *b, int ended, int no_step,
			  struct node *n, struct sim_qp *q, const char *what)
{
	tap_ok(wait_log(b, PEER_ENDED, ended) &&
		   log_count(b, TOOK_NO_STEP) == no_step,
	       "%s: %s's end is told the connection ends", what, n->name);
	tap_ok(sim_vm_expect_events(n->vm, PVO_EV_QP_FATAL, q->handle, 1,
				    timeout_ms, 30) == 1,
	       "%s: %s's QP gets one QP_FATAL event", what, n->name);
	expect_state(q, PVO_QPS_ERR, what);
}

/*
 * Host verbs: b's FETCH_ADD to a on host 3, whose result the link drops,
 * and a moves home: b's end cannot run it again (REM_OP_ERR, the sum in
 * a's MR once) and says the connection ends; a's end ends at once
 * (QP_FATAL), not after its wait.
 */
static void migrate_hostverbs_lost_peer_answer(void)
{
	static const char what[] = "host verbs: b's FETCH_ADD to a, whose "
				   "result a's move lost";
	struct sim_conn c = {.timeout = 18};
	int ended = log_count(&bp, PEER_ENDED);
	int no_step = log_count(&bp, TOOK_NO_STEP);
	struct pair g;

	if (!getenv("T_DATAPATH_HV_LINK") || !hv3_dev[0])
		return;
	memset(&g, 0, sizeof(g));
	if (!a_to_host3("host verbs: a to host 3 for b's lost answer") ||
	    !pair_make(&g, PVO_QPT_RC, &c, &c) ||
	    !xfer(&g, X_WRITE, 4096, 0, 0, false, 9791))
		goto out;
	if (lost_atomic(&g, &B, 11, hv3_netdev, what)) {
		ended_at_once(&bp, ended, no_step, &A, &g.a, what);
		expect_state(&g.b, PVO_QPS_ERR, what);
	}
out:
	pair_destroy(&g);
	drain_all();
	if (!strncmp(A.vm->fe->socket_path, bp3.dir, strlen(bp3.dir)))
		a_home("host verbs: a home after b's lost answer");
}

static void migrate_hostverbs_lost_answers(void)
{
	static const char cannot[] = "whose answer the move lost cannot run "
				     "again";
	struct sim_conn c = {.timeout = 18}; /* 1 s, 7 retries */
	int on1 = log_count(&bp, cannot), ended = log_count(&bp2, PEER_ENDED);
	int no_step = log_count(&bp2, TOOK_NO_STEP);
	struct sim_wr w;
	struct pair g;

	if (!getenv("T_DATAPATH_HV_LINK") || !hv3_dev[0])
		return;
	c.sgid_index = fast.sgid_index;
	memset(&g, 0, sizeof(g));
	if (!a_to_host3("host verbs: a to host 3 for lost answers") ||
	    !pair_make(&g, PVO_QPT_RC, &c, &c))
		goto out;
	if (!xfer(&g, X_WRITE, 4096, 0, 0, false, 9781))
		goto out;
	/* the READ */
	fill_pattern(&B.buf, ACROSS_READ_SRC, 20000, 9782);
	prepare_dst(&A.buf, ACROSS_READ_DST, 20000);
	w = wr1(0xa9e1, PVO_WR_RDMA_READ, &A, ACROSS_READ_DST, 20000);
	w.remote_addr = B.mr.iova + ACROSS_READ_SRC;
	w.rkey = B.mr.key;
	if (!lost_answer_move(&g.a, &A.scq, hv_netdev, &w,
			      "host verbs: a home, the response to its READ "
			      "lost"))
		goto out;
	expect_cqe(&A.scq, 0xa9e1, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		   "host verbs: the READ b executed before a moved runs again");
	check_data("host verbs: the READ whose response the move lost",
		   &A.buf, ACROSS_READ_DST, 20000, 9782);
	expect_no_cqe(&A.scq, 100, "host verbs: the READ completed once");
	tap_ok(xfer(&g, X_SEND, 3000, 0, 0, false, 9783),
	       "host verbs: the connection goes on after the READ");
	/* the atomic */
	if (!a_to_host3("host verbs: a to host 3 again") ||
	    !lost_atomic(&g, &A, 9, hv_netdev,
			 "host verbs: a's FETCH_ADD, whose result its move "
			 "lost"))
		goto out;
	tap_ok(wait_log(&bp, cannot, on1),
	       "host verbs: host 1 says the atomic cannot run again and the "
	       "connection ends");
	expect_state(&g.a, PVO_QPS_ERR,
		     "host verbs: a's connection after the lost atomic");
	ended_at_once(&bp2, ended, no_step, &B, &g.b,
		      "host verbs: after a's lost atomic");
out:
	pair_destroy(&g);
	drain_all();
	/* home, where the sections after this one expect a */
	if (!strncmp(A.vm->fe->socket_path, bp3.dir, strlen(bp3.dir)))
		a_home("host verbs: a home after the lost answers");
	/* the last repeats of a's announcement, after which host 1 forgets
	 * where peers had a (the sections after this one expect it) */
	sleep_ms(1300);
}

/*
 * Host verbs, a host SRQ: two RC connections of b to a, a's receives on
 * one SRQ of 8 WQEs. Through a failed migration, a move to host 3 with
 * the ring wrapped, and a move home while a 1 MiB SEND is under way on
 * one connection (the link slowed), its receive overtaken by three
 * SENDs on the other and its ring position written again by the guest:
 * each receive takes one message, in the order posted, with its bytes,
 * none twice; the long SEND completes once.
 */
#define SRQ_WR(i) (0x5200u + (i))
#define SRQ_DST (600 * KIB) /* 4 KiB per receive */
#define SRQ_SRC (700 * KIB)
#define SRQ_LEN 3000
#define SRQ_LONG_AT (1 * MIB) /* a's receive and b's source */
#define SRQ_LONG (1 * MIB)

static bool srq_recv(struct sim_srq *q, unsigned int i, uint64_t off,
		     uint32_t len)
{
	struct sim_sge s = sge_of(&A, off, len);

	prepare_dst(&A.buf, off, len);
	return tap_ok(sim_post_srq_recv(q, SRQ_WR(i), &s, 1) == 0,
		      "host verbs: a posts receive %u on its SRQ", i);
}

static bool srq_recvs(struct sim_srq *q, unsigned int from, unsigned int n)
{
	unsigned int i;

	for (i = from; i < from + n; i++)
		if (!srq_recv(q, i, SRQ_DST + (i % 32) * 4 * KIB, 4 * KIB))
			return false;
	return true;
}

/* a's receive i taken by one message of len bytes over g, checked. */
static void srq_took(struct pair *g, unsigned int i, uint64_t off, uint32_t len,
		     uint32_t seed, const char *what)
{
	struct pvo_cqe c;

	if (get_cqe(&A.rcq, &c, what))
		tap_ok(
		    cqe_ok(&c, SRQ_WR(i), PVO_WC_RECV, PVO_WC_SUCCESS, what) &&
			le32toh(c.qpn) == g->a.qpn &&
			le32toh(c.byte_len) == len,
		    "%s: SRQ receive %u takes it (QP %u, %u bytes)", what, i,
		    g->a.qpn, len);
	check_data(what, &A.buf, off, len, seed);
}

/* b SENDs message i over g: a's receive i takes it. */
static void srq_send(struct pair *g, unsigned int i, const char *what)
{
	struct sim_wr w = wr1(0x5300 + i, PVO_WR_SEND, &B, SRQ_SRC, SRQ_LEN);

	fill_pattern(&B.buf, SRQ_SRC, SRQ_LEN, 9900 + i);
	post1(&g->b, &w);
	expect_cqe(&B.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	srq_took(g, i, SRQ_DST + (i % 32) * 4 * KIB, SRQ_LEN, 9900 + i, what);
}

static bool srq_failed_migration(void)
{
	int thawed = log_count(&bp, THAWED);
	uint8_t *buf;
	size_t len;

	if (!stop_for_migration(&A))
		return false;
	if (vu_frontend_save_state(A.vm->fe, &buf, &len) == 0) {
		tap_ok(offer_at(&bp3, backend_vm_socket(&bp3, "a"), buf, len,
				NULL) == 0,
		       "host verbs: host 3 takes the state of a with a host "
		       "SRQ, then its front-end goes (the migration fails)");
		free(buf);
	} else {
		tap_ok(false, "host verbs: a's state with a host SRQ saved: %s",
		       vu_frontend_error(A.vm->fe));
	}
	if (!tap_ok(resume_source(&A), "host verbs: a runs again at host 1"))
		return false;
	wait_thawed(thawed);
	return true;
}

static void migrate_hostverbs_srq(void)
{
	struct sim_conn c = {.timeout = 18};
	struct sim_wr w;
	struct sim_srq q;
	struct pair g[2];
	unsigned int i;
	int st;

	if (!getenv("T_DATAPATH_HV_LINK") || !hv3_dev[0])
		return;
	memset(g, 0, sizeof(g));
	st = sim_create_srq(&A.pd, 8, 1, 0, &q);
	if (!TAP_STATUS(st, PVO_STATUS_OK, "host verbs: a's SRQ of 8 WQEs") ||
	    !tap_ok(q.resp_flags & PVO_SRQ_RESP_F_DOORBELL,
		    "host verbs: ... a host SRQ (doorbells)"))
		goto out;
	if (!pair_make_srq(&g[0], &q, &c, &c) ||
	    !pair_make_srq(&g[1], &q, &c, &c) || !srq_recvs(&q, 0, 6))
		goto out;
	for (i = 0; i < 3; i++)
		srq_send(&g[i % 2], i, "host verbs: SRQ before any move");
	/* positions 6..9: the ring wraps */
	if (!srq_recvs(&q, 6, 4) || !srq_failed_migration())
		goto out;
	for (i = 3; i < 5; i++)
		srq_send(&g[i % 2], i,
			 "host verbs: SRQ after the failed migration");
	if (!a_to_host3("host verbs: a with a host SRQ to host 3"))
		goto out;
	for (i = 5; i < 10; i++)
		srq_send(&g[i % 2], i, "host verbs: SRQ at host 3");

	/* receive 10 for the long SEND on g[0], 11-13 for g[1]'s */
	if (!srq_recv(&q, 10, SRQ_LONG_AT, SRQ_LONG) || !srq_recvs(&q, 11, 3) ||
	    !hv_link(hv_netdev, "slow"))
		goto out;
	fill_pattern(&B.buf, SRQ_LONG_AT, SRQ_LONG, 9910);
	w = wr1(0x5400, PVO_WR_SEND, &B, SRQ_LONG_AT, SRQ_LONG);
	post1(&g[0].b, &w);
	for (i = 11; i < 14; i++)
		srq_send(&g[1], i,
			 "host verbs: SRQ, a short SEND overtakes the long");
	expect_no_cqe(&A.rcq, 0,
		      "host verbs: the long SEND's receive still open");
	/* 14-20: the ring full again, 18 at receive 10's position */
	if (!srq_recvs(&q, 14, 7))
		goto out;
	expect_no_cqe(&B.scq, 0, "host verbs: b's long SEND under way");
	if (!a_move(backend_vm_socket(&bp, "a"), hv_netdev,
		    "host verbs: a with a host SRQ home, b's long SEND under "
		    "way"))
		goto out;
	expect_cqe(&B.scq, 0x5400, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "host verbs: b's long SEND, under way at the move");
	srq_took(&g[0], 10, SRQ_LONG_AT, SRQ_LONG, 9910,
		 "host verbs: the long SEND after the move");
	for (i = 14; i < 21; i++)
		srq_send(&g[i % 2], i, "host verbs: SRQ after the move home");
	expect_no_cqe(&A.rcq, 200,
		      "host verbs: each SRQ receive completed once");
	expect_no_cqe(&B.scq, 0, "host verbs: each SEND completed once");
out:
	hv_link(hv_netdev, "pass");
	pair_destroy(&g[0]);
	pair_destroy(&g[1]);
	if (q.handle)
		TAP_STATUS(sim_destroy_srq(&q), PVO_STATUS_OK,
			   "host verbs: a's SRQ destroyed");
	drain_all();
	if (!strncmp(A.vm->fe->socket_path, bp3.dir, strlen(bp3.dir)))
		a_home("host verbs: a home after the SRQ");
}

/*
 * Host verbs: a's MR of 12 MiB, more pages than one registration call
 * pins (a destination registers it over turns of its loop, and a thaws
 * once it is; its 3072 pages scattered, mapped 32 runs a turn, take
 * longer than the front-end's start): b writes and reads it past its
 * first 8 MiB, and a SEND lands in a receive in it, before a moves to
 * host 3, there, and home.
 */
#define BIG_LEN (12 * MIB)
#define REMADE "(3072 pages) registered again here"
#define BIG_SRC (700 * KIB) /* b's */
#define BIG_DST (800 * KIB)

static void big_mr_io(struct pair *g, struct sim_buf *big,
		      const struct sim_mr *mr, uint32_t seed, const char *what)
{
	uint64_t off = 9 * MIB + (seed % 16) * 128 * KIB;
	struct sim_sge s = {.addr = big->va + off + 96 * KIB,
			    .length = 4096,
			    .lkey = mr->key};
	struct sim_wr w;

	fill_pattern(&B.buf, BIG_SRC, 64 * KIB, seed);
	prepare_dst(big, off, 64 * KIB);
	w = wr1(seed, PVO_WR_RDMA_WRITE, &B, BIG_SRC, 64 * KIB);
	w.remote_addr = mr->iova + off;
	w.rkey = mr->key;
	post1(&g->b, &w);
	expect_cqe(&B.scq, w.wr_id, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS, what);
	check_data(what, big, off, 64 * KIB, seed);

	fill_pattern(big, off + 64 * KIB, 32 * KIB, seed + 1);
	prepare_dst(&B.buf, BIG_DST, 32 * KIB);
	w = wr1(seed + 1, PVO_WR_RDMA_READ, &B, BIG_DST, 32 * KIB);
	w.remote_addr = mr->iova + off + 64 * KIB;
	w.rkey = mr->key;
	post1(&g->b, &w);
	expect_cqe(&B.scq, w.wr_id, PVO_WC_RDMA_READ, PVO_WC_SUCCESS, what);
	check_data(what, &B.buf, BIG_DST, 32 * KIB, seed + 1);

	prepare_dst(big, off + 96 * KIB, 4096);
	if (sim_post_recv(&g->a, seed + 2, &s, 1))
		tap_ok(false, "%s: a posts a receive in its MR", what);
	fill_pattern(&B.buf, BIG_SRC, 3000, seed + 2);
	w = wr1(seed + 3, PVO_WR_SEND, &B, BIG_SRC, 3000);
	post1(&g->b, &w);
	expect_cqe(&B.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS, what);
	expect_cqe(&A.rcq, seed + 2, PVO_WC_RECV, PVO_WC_SUCCESS, what);
	check_data(what, big, off + 96 * KIB, 3000, seed + 2);
}

static void migrate_hostverbs_large_mr(void)
{
	struct sim_conn c = {.timeout = 18};
	struct sim_buf big;
	struct sim_mr mr;
	struct pair g;
	int st, remade;

	if (!hv3_dev[0])
		return;
	memset(&g, 0, sizeof(g));
	if (!tap_ok(sim_buf_alloc(&big, sim_vm_ram(A.vm),
				  sim_vm_va(A.vm, BIG_LEN + PVO_PAGE_SIZE),
				  BIG_LEN, 0, SIM_LAYOUT_SCATTER) == 0,
		    "host verbs: 12 MiB of a's RAM for an MR"))
		return;
	st = sim_reg_mr(&A.pd, &big, 0, BIG_LEN,
			PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_READ,
			&mr);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"host verbs: a registers an MR of 12 MiB (%u pages)",
			(unsigned int)(BIG_LEN / PVO_PAGE_SIZE)))
		goto free;
	if (!pair_make(&g, PVO_QPT_RC, &c, &c))
		goto dereg;
	big_mr_io(&g, &big, &mr, 9950, "host verbs: a's 12 MiB MR");
	remade = log_count(&bp3, REMADE);
	if (a_to_host3("host verbs: a with a 12 MiB MR to host 3")) {
		big_mr_io(&g, &big, &mr, 9960,
			  "host verbs: a's 12 MiB MR at host 3");
		tap_ok(log_count(&bp3, REMADE) == remade + 1 &&
			   log_last(&bp3, REMADE) < log_last(&bp3, THAWED),
		       "host verbs: host 3 registered a's 12 MiB MR over turns "
		       "before a thawed (log lines %d, %d)",
		       log_last(&bp3, REMADE), log_last(&bp3, THAWED));
		a_home("host verbs: a with a 12 MiB MR home");
		big_mr_io(&g, &big, &mr, 9970,
			  "host verbs: a's 12 MiB MR home again");
	}
	pair_destroy(&g);
dereg:
	TAP_STATUS(sim_dereg_mr(&mr), PVO_STATUS_OK,
		   "host verbs: a's 12 MiB MR deregistered");
free:
	sim_buf_free(&big);
	drain_all();
}

/*
 * T_MIGRATE_BENCH=N (make bench-hostverbs, bench/hostverbs.py): instead
 * of the section's checks, N round trips of a on host verbs between host
 * 1 and host 3 with an RC connection to b, timed:
 *   - each move: the switch-over as the front-end sees it (a frozen ->
 *     running at its destination: QEMU's downtime here), and the
 *     blackout of the connection in each direction (a frozen -> the
 *     first WRITE of b, posted while a was frozen, and of a, posted as it
 *     runs, completes);
 *   - at each place: WRITE bandwidth both ways (64 KiB, 16 in flight)
 *     and the round trip of a 64-byte WRITE, so the translation's cost
 *     (b's WQEs to a moved VM go through host 2's alias table; host 3
 *     looks up its local peers) shows against the same connection
 *     before a moved.
 * Every WQE's status and the bytes of each stream are checked. Lines
 * "# bench: ..." carry the figures.
 */
#define BENCH_LEN (64 * KIB)
#define BENCH_DEPTH 16
#define BENCH_SRC (128 * KIB)
#define BENCH_DST (512 * KIB)

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ll + ts.tv_nsec / 1000;
}

static struct sim_wr bench_write(struct node *from, struct node *to,
				 uint64_t id, uint32_t len)
{
	struct sim_wr w = wr1(id, PVO_WR_RDMA_WRITE, from, BENCH_SRC, len);

	w.remote_addr = to->mr.iova + BENCH_DST;
	w.rkey = to->mr.key;
	return w;
}

/* n WRITEs of 64 KiB from `from` on q, BENCH_DEPTH in flight: MB/s, or
 * a negative value if one failed. */
static double bench_bw(struct sim_qp *q, struct node *from, struct node *to,
		       int n, uint32_t seed)
{
	struct pvo_cqe c[BENCH_DEPTH];
	int posted = 0, done = 0, k, i;
	long long t0;

	fill_pattern(&from->buf, BENCH_SRC, BENCH_LEN, seed);
	prepare_dst(&to->buf, BENCH_DST, BENCH_LEN);
	t0 = mono_us();
	while (done < n) {
		while (posted < n && posted - done < BENCH_DEPTH) {
			struct sim_wr w =
			    bench_write(from, to, 0xbe000 + posted, BENCH_LEN);

			if (!post1(q, &w))
				return -1;
			posted++;
		}
		k = sim_wait_cq(&from->scq, c, BENCH_DEPTH, timeout_ms);
		if (k <= 0)
			return -1;
		for (i = 0; i < k; i++)
			if (c[i].status != PVO_WC_SUCCESS) {
				tap_diag("bench: %s", cqe_str(&c[i]));
				return -1;
			}
		done += k;
	}
	t0 = mono_us() - t0;
	if (!data_ok("bench: the WRITEs' bytes", &to->buf, BENCH_DST,
		     BENCH_LEN, seed, 0))
		return -1;
	return (double)n * BENCH_LEN / (double)(t0 ? t0 : 1);
}

/* The mean round trip of a 64-byte WRITE from a, in us (negative if one
 * failed). */
static double bench_rtt(struct sim_qp *q, int n)
{
	struct pvo_cqe c;
	long long t0 = mono_us();
	int i;

	for (i = 0; i < n; i++) {
		struct sim_wr w = bench_write(&A, &B, 0xbf000 + i, 64);

		if (!post1(q, &w) || sim_wait_cq(&A.scq, &c, 1, timeout_ms) != 1 ||
		    c.status != PVO_WC_SUCCESS)
			return -1;
	}
	return (double)(mono_us() - t0) / n;
}

static void bench_place(struct pair *p, const char *where, int n)
{
	double ab = bench_bw(&p->a, &A, &B, n, 9811);
	double ba = bench_bw(&p->b, &B, &A, n, 9812);
	double rtt = bench_rtt(&p->a, n);

	if (tap_ok(ab > 0 && ba > 0 && rtt > 0,
		   "bench: WRITE streams and round trips with a %s, every "
		   "WQE successful and the bytes checked",
		   where))
		tap_diag("bench: place=%s write_ab_MBps=%.1f write_ba_MBps=%.1f "
			 "rtt_us=%.1f",
			 where, ab, ba, rtt);
}

/* a to the back-end serving `to`, timed (see above). */
static bool bench_move(struct pair *p, const char *to, const char *what)
{
	long long t0, t1, tb = 0, ta = 0;
	struct sim_wr wb, wa;
	struct pvo_cqe c;
	uint8_t *buf;
	size_t len;
	int old;

	fill_pattern(&B.buf, BENCH_SRC, 4096, 9821);
	fill_pattern(&A.buf, BENCH_SRC, 4096, 9822);
	prepare_dst(&A.buf, BENCH_DST, 4096);
	prepare_dst(&B.buf, BENCH_DST, 4096);
	t0 = mono_us();
	if (!leave(&A, &buf, &len, &old))
		return false;
	wb = bench_write(&B, &A, 0xbd01, 4096);
	post1(&p->b, &wb);
	if (!arrive(&A, to, buf, len, what)) {
		close(old);
		return false;
	}
	t1 = mono_us();
	wa = bench_write(&A, &B, 0xad01, 4096);
	post1(&p->a, &wa);
	while ((!tb || !ta) && mono_us() - t1 < timeout_ms * 1000ll) {
		if (!tb && sim_poll_cq(&B.scq, &c, 1) == 1)
			tb = c.status == PVO_WC_SUCCESS ? mono_us() : -1;
		if (!ta && sim_poll_cq(&A.scq, &c, 1) == 1)
			ta = c.status == PVO_WC_SUCCESS ? mono_us() : -1;
		if (!tb || !ta)
			sched_yield();
	}
	close(old);
	if (!tap_ok(tb > 0 && ta > 0 &&
			data_ok("bench: b's WRITE across the move", &A.buf,
				BENCH_DST, 4096, 9821, 0) &&
			data_ok("bench: a's WRITE after the move", &B.buf,
				BENCH_DST, 4096, 9822, 0),
		    "%s: both WRITEs across the move completed, bytes checked",
		    what))
		return false;
	tap_diag("bench: move=%s downtime_ms=%.1f blackout_b_ms=%.1f "
		 "blackout_a_ms=%.1f",
		 strstr(what, "home") ? "home" : "host3", (t1 - t0) / 1000.0,
		 (tb - t0) / 1000.0, (ta - t0) / 1000.0);
	return true;
}

static void migrate_hostverbs_bench(int moves)
{
	/* 1 s: a MiB in flight through one vCPU's rxe takes longer than
	 * 67 ms, and retransmissions would be what the stream measures */
	struct sim_conn c = {.timeout = 18};
	int iters = 200, i;
	char err[512];
	struct pair p;

	if (getenv("T_MIGRATE_BENCH_ITERS"))
		iters = atoi(getenv("T_MIGRATE_BENCH_ITERS"));
	if (start_host3(err, sizeof(err)) != 0) {
		tap_ok(false, "host 3's back-end starts: %s", err);
		return;
	}
	c.sgid_index = fast.sgid_index;
	if (!pair_make(&p, PVO_QPT_RC, &c, &c))
		return;
	bench_place(&p, "home_unmoved", iters);
	for (i = 0; i < moves; i++) {
		if (!bench_move(&p, backend_vm_socket(&bp3, "a"),
				"bench: a to host 3"))
			break;
		bench_place(&p, "on_host3", iters);
		if (!bench_move(&p, backend_vm_socket(&bp, "a"),
				"bench: a home"))
			break;
		bench_place(&p, "home", iters);
	}
	pair_destroy(&p);
	drain_all();
}

void test_migrate(void)
{
	/* ACK timeout 22: 4.096 us x 2^22 = 17 s */
	struct sim_conn slow_conn = {.timeout = 22};
	struct pair p, slow;

	slow_conn.sgid_index = fast.sgid_index;
	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL) ||
	    !pair_make(&slow, PVO_QPT_RC, &slow_conn, &slow_conn))
		return;
	if (!xfer(&p, X_WRITE, 4096, 0, 0, false, 9300))
		return;
	if (hv_dev[0] && getenv("T_MIGRATE_BENCH")) {
		pair_destroy(&slow);
		pair_destroy(&p);
		drain_all();
		migrate_hostverbs_bench(atoi(getenv("T_MIGRATE_BENCH")));
		return;
	}
	if (hv_dev[0]) {
		migrate_hostverbs_refused(&p);
		pair_destroy(&slow);
		pair_destroy(&p);
		drain_all();
		migrate_hostverbs();
		migrate_hostverbs_rc();
		migrate_hostverbs_orphan();
		migrate_hostverbs_give_up();
		migrate_hostverbs_srq();
		migrate_hostverbs_large_mr();
		migrate_hostverbs_lost_peer_answer();
		migrate_hostverbs_lost_answers();
		return;
	}
	refused_streams(&p);
	migrate_a(&p, &slow);
	if (overlay)
		migrate_hosts(&p);
	drain_all();
	pair_destroy(&slow);
	pair_destroy(&p);
}
