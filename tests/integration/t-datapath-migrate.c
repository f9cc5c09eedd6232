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
 * (local transport), both at once, and back.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>

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

#define LEFT "destination front-end left"
#define THAWED "rings running again"

/* The back-end dropped the last refused destination: the next may come. */
static void wait_destination_gone(int before)
{
	long long end = now_ms() + timeout_ms;

	while (log_count(&bp, LEFT) <= before && now_ms() < end)
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

/* A destination front-end of its own (own RAM) that offers buf: the
 * CHECK_DEVICE_STATE result. */
static int offer(struct node *n, const uint8_t *buf, size_t len,
		 struct vu_frontend **out)
{
	struct vu_options o = {.socket_path = n->vm->fe->socket_path,
			       .ram_size = 16 * MIB};
	char err[256];
	struct vu_frontend *fe = vu_frontend_new(&o, err, sizeof(err));
	int left = log_count(&bp, LEFT), ret;

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
		wait_destination_gone(left);
	}
	return ret;
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
	int old, thawed;

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
	{
		struct pair q;

		tap_ok(pair_make(&q, PVO_QPT_RC, NULL, NULL) &&
			   xfer(&q, X_WRITE, 4096, 0, 0, false, 9406),
		       "new QPs are made and used after the migration");
		pair_destroy(&q);
	}
}

/* n's VM frozen and its state saved, as the source QEMU does; *old is
 * the source's connection, which stays until the source QEMU quits. */
static bool leave(struct node *n, uint8_t **buf, size_t *len, int *old)
{
	if (!stop_for_migration(n))
		return false;
	if (vu_frontend_save_state(n->vm->fe, buf, len) < 0)
		return tap_ok(false, "%s's state saved: %s", n->name,
			      vu_frontend_error(n->vm->fe));
	*old = vu_frontend_detach(n->vm->fe);
	return true;
}

/* A front-end on the back-end serving socket `to` loads n's state over
 * the same guest memory and starts the rings: the destination QEMU. */
static bool arrive(struct node *n, const char *to, uint8_t *buf, size_t len,
		   const char *what)
{
	bool ok;

	free(n->vm->fe->socket_path);
	n->vm->fe->socket_path = strdup(to);
	ok = vu_frontend_connect(n->vm->fe) == 0 &&
	     vu_frontend_negotiate(n->vm->fe) == 0 &&
	     vu_frontend_load_state(n->vm->fe, buf, len) == 0 &&
	     vu_frontend_start(n->vm->fe) == 0;
	free(buf);
	if (!tap_ok(ok,
		    "%s: the destination back-end loads %s's state and "
		    "starts it",
		    what, n->name))
		tap_diag("%s", vu_frontend_error(n->vm->fe));
	return ok;
}

/* Work that waits for the move: b's SEND to a posted receive of a, and
 * a WRITE a posts while frozen. */
static void post_across(struct pair *p, uint32_t seed)
{
	const uint64_t woff = 840 * KIB;
	struct sim_wr w;

	fill_pattern(&B.buf, 64 * KIB, 5000, seed);
	w = wr1(0xb801, PVO_WR_SEND, &B, 64 * KIB, 5000);
	post1(&p->b, &w);
	fill_pattern(&A.buf, 96 * KIB, 30000, seed + 1);
	prepare_dst(&B.buf, woff, 30000);
	w = write_wr(0xa802, 96 * KIB, 30000, B.mr.iova + woff, B.mr.key);
	post1(&p->a, &w);
}

/* The work of post_across completed, every byte where it belongs. */
static void check_across(uint32_t seed)
{
	const uint64_t roff = 720 * KIB, woff = 840 * KIB;
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

/* The overlay packets host 2 sent for VM `vm`. */
static unsigned long long host2_tx(const char *vm)
{
	char line[4096], kind[64];

	snprintf(kind, sizeof(kind), "vm name=%s ", vm);
	if (!backend_mgmt_line(&bp2, kind, line, sizeof(line)))
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
	if (!move_one(p, &A, backend_vm_socket(&bp2, "a"),
		      "a from host 3 to host 2, next to b"))
		return;
	/* a and b now talk locally: nothing waited for hosts 1 and 3 */
	tap_ok(backend_log_has(&bp, "10.0.0.1 migrated behind VTEP 127.0.0.2",
			       5000) &&
		   backend_log_has(&bp3,
				   "10.0.0.1 migrated behind VTEP 127.0.0.2",
				   5000),
	       "hosts 1 and 3 followed a to host 2");
	{
		unsigned long long ta = host2_tx("a"), tb = host2_tx("b");

		tap_ok(xfer(p, X_WRITE, 70000, 0, 0, false, 9510) &&
			   xfer(p, X_SEND, 9000, 0, 0, false, 9511) &&
			   host2_tx("a") == ta && host2_tx("b") == tb &&
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
		return;
	}
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
}

/*
 * Host verbs: a VM holding host QPs and MRs cannot move yet; saving its
 * state is refused with a message, and the source runs on.
 */
static void migrate_hostverbs(struct pair *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	if (!stop_for_migration(&A))
		return;
	ret = vu_frontend_save_state(A.vm->fe, &buf, &len);
	free(buf);
	tap_ok(ret != 0, "host verbs: saving a's state for migration is "
			 "refused (%d)",
	       ret);
	tap_ok(log_has(&bp, "migration refused: the VM uses the host-verbs "
			    "transport",
		       "host objects"),
	       "host verbs: the back-end says why (the host-verbs transport, "
	       "its host objects)");
	tap_ok(resume_source(&A), "host verbs: a runs again");
	xfer(p, X_WRITE, 4096, 0, 0, false, 9310);
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
	if (hv_dev[0]) {
		migrate_hostverbs(&p);
		pair_destroy(&slow);
		pair_destroy(&p);
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
