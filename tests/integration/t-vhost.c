// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-vhost: vhost-user and virtqueue behaviour of pvrdma-overlayd as a
 * Linux guest behind QEMU exercises it (EVENT_IDX, indirect descriptors,
 * ring wrap-around, batched kicks, VM stop/continue, reconnects), and its
 * robustness against what QEMU or a guest must never be able to break it
 * with: malformed descriptor chains and malformed vhost-user messages.
 * After each bad input the back-end may answer or drop the connection, but
 * must not crash, must not stall a waiting front-end, and must serve the
 * next session. Output is TAP.
 *
 * Environment: PVO_BACKEND, PVO_TEST_TIMEOUT_MS, PVO_TEST_KEEP (see t-ctrl).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "tap.h"
#include "vu_frontend.h"

#define RAM_SIZE (64ull << 20)
/* How long a bad input may take to be answered or dropped. */
#define VERDICT_MS 3000

static const char *const backend_args[] = {
    "--name", "vm1",	  "--vni", "100", "--mac", "52:54:00:00:00:01",
    "--ip",   "10.0.0.1", NULL};

static struct backend_proc bp;
static struct pvo_resp_query_device qdev_ref;
static uint32_t max_ucontexts;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void __attribute__((noreturn)) give_up(const char *what, const char *why)
{
	tap_diag("%s: %s", what, why);
	backend_running(&bp);
	tap_diag("back-end %s", backend_describe(&bp));
	backend_dump_log(&bp, 40);
	backend_stop(&bp, 2000);
	backend_cleanup(&bp, true);
	tap_bail("%s failed (log kept in %s)", what, bp.dir);
}

/*
 * Open a full session. Right after a session ends the back-end may still
 * be tearing it down and refuse the next one, as QEMU would see on a quick
 * reconnect: retry for a while like QEMU's reconnect does.
 */
static struct vu_frontend *open_session_at(const char *socket_path,
					   uint64_t extra_features,
					   int timeout_ms, char *err,
					   size_t errlen)
{
	struct vu_options opt = {
	    .socket_path = socket_path,
	    .ram_size = RAM_SIZE,
	    .ram_regions = 2,
	    .queue_size = 128,
	    .ack_every_message = true,
	    .extra_features = extra_features,
	    .timeout_ms = timeout_ms,
	    .config_size = PVO_CONFIG_SIZE,
	};
	struct vu_frontend *fe = NULL;
	int tries;

	for (tries = 0; tries < 30 && !fe; tries++) {
		if (tries)
			sleep_ms(100);
		fe = vu_frontend_open(&opt, err, errlen);
		if (!backend_running(&bp))
			break;
	}
	return fe;
}

static struct vu_frontend *open_session(uint64_t extra_features, int timeout_ms,
					char *err, size_t errlen)
{
	return open_session_at(bp.socket_path, extra_features, timeout_ms, err,
			       errlen);
}

static struct vu_frontend *must_open(uint64_t extra_features, const char *what)
{
	char err[512];
	struct vu_frontend *fe =
	    open_session(extra_features, 0, err, sizeof(err));

	if (!fe)
		give_up(what, err);
	return fe;
}

/* A new session handshakes and answers QUERY_DEVICE like the first one. */
static bool fresh_session_works(void)
{
	struct pvo_resp_query_device d;
	struct vu_frontend *fe;
	char err[512];
	int st;

	if (!backend_running(&bp)) {
		tap_diag("back-end %s", backend_describe(&bp));
		return false;
	}
	fe = open_session(0, 0, err, sizeof(err));
	if (!fe) {
		tap_diag("new session: %s", err);
		return false;
	}
	st = pvo_query_device(fe, &d);
	if (st != PVO_STATUS_OK || memcmp(&d, &qdev_ref, sizeof(d)))
		tap_diag("new session: QUERY_DEVICE -> %s %s",
			 pvo_status_name(st),
			 st < 0 ? vu_frontend_error(fe) : "");
	vu_frontend_free(fe);
	return st == PVO_STATUS_OK && !memcmp(&d, &qdev_ref, sizeof(d));
}

static void list_backend_fds(void)
{
	char path[64], link[400], target[256];
	struct dirent *de;
	DIR *d;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)bp.pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		tap_diag("  fd %s -> %s", de->d_name, target);
	}
	closedir(d);
}

static int backend_fd_count(void)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)bp.pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

#define FD_SNAP_MAX 1024

/* Which fd numbers the back-end has open (bitmap of the first 1024). */
static void fd_snapshot(uint8_t snap[FD_SNAP_MAX / 8])
{
	char path[64];
	struct dirent *de;
	DIR *d;

	memset(snap, 0, FD_SNAP_MAX / 8);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)bp.pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd < FD_SNAP_MAX)
			snap[fd / 8] |= 1 << (fd % 8);
	}
	closedir(d);
}

/*
 * Compare with @base once the back-end settles: fds it lost (closed
 * something it did not own) and fds it gained (leaks). Text into @out.
 */
static bool fds_match(const uint8_t *base, char *out, size_t len)
{
	uint8_t now[FD_SNAP_MAX / 8];
	int waited, fd;
	size_t off = 0;
	bool same = false;

	for (waited = 0; waited <= 2000 && !same; waited += 50) {
		if (waited)
			sleep_ms(50);
		fd_snapshot(now);
		same = !memcmp(now, base, sizeof(now));
	}
	out[0] = 0;
	for (fd = 0; fd < FD_SNAP_MAX && !same; fd++) {
		bool was = base[fd / 8] & (1 << (fd % 8));
		bool is = now[fd / 8] & (1 << (fd % 8));

		if (was != is && off < len)
			off += snprintf(out + off, len - off, " fd %d %s", fd,
					was ? "closed" : "leaked");
	}
	return same;
}

/* fd count once the back-end has settled (no change for 300 ms). */
static int settled_fd_count(int want)
{
	int last = -2, n, stable = 0, waited;

	for (waited = 0; waited < 3000; waited += 50) {
		n = backend_fd_count();
		if (n == want)
			return n;
		stable = n == last ? stable + 50 : 0;
		if (stable >= 300 && want < 0)
			return n;
		last = n;
		sleep_ms(50);
	}
	return last;
}

/* ------------------------------------------------------------------ */

static void test_guest_like_session(void)
{
	const uint64_t want =
	    (1ull << VU_F_RING_EVENT_IDX) | (1ull << VU_F_RING_INDIRECT_DESC);
	struct pvo_cmd_hdr h = {.opcode = htole16(PVO_CMD_QUERY_DEVICE)};
	uint8_t got[8 + sizeof(struct pvo_resp_query_device)];
	struct pvo_resp_query_pkey pk;
	struct pvo_resp_query_port p;
	struct vu_frontend *fe;
	struct split_vq *vq;
	struct vq_buf out, in[2];
	uint64_t area;
	uint32_t used = 0;
	int st, i, heads[60], bad;

	fe = must_open(want, "session with EVENT_IDX and INDIRECT_DESC");
	tap_ok(1, "session with EVENT_IDX and INDIRECT_DESC requested starts");
	tap_ok((fe->acked_features & want) == want,
	       "back-end offers EVENT_IDX and INDIRECT_DESC, as a Linux guest "
	       "will use them (acked 0x%llx)",
	       (unsigned long long)fe->acked_features);
	st = pvo_query_device(fe, &qdev_ref);
	if (st != PVO_STATUS_OK)
		give_up("QUERY_DEVICE", pvo_status_name(st));
	max_ucontexts =
	    le32toh(((struct pvo_config *)fe->config)->max_ucontexts);
	vq = vu_vq(fe, PVO_VQ_CTRL);

	/* a chain given as an indirect table, response in two pieces */
	area = guest_ram_alloc(&fe->ram, 4096, 4096);
	out = (struct vq_buf){area, sizeof(h)};
	in[0] = (struct vq_buf){area + 512, 8};
	in[1] = (struct vq_buf){area + 1024, sizeof(qdev_ref)};
	guest_ram_write(&fe->ram, area, &h, sizeof(h));
	st = vu_kick_and_wait(fe, PVO_VQ_CTRL,
			      split_vq_add_indirect(vq, &out, 1, in, 2), &used);
	if (st < 0)
		give_up("indirect chain", vu_frontend_error(fe));
	guest_ram_read(&fe->ram, in[0].gpa, got, 8);
	guest_ram_read(&fe->ram, in[1].gpa, got + 8, sizeof(qdev_ref));
	tap_ok(used == sizeof(got) &&
		   !memcmp(got + 8, &qdev_ref, sizeof(qdev_ref)) && got[0] == 0,
	       "QUERY_DEVICE through an indirect descriptor table (used %u)",
	       used);
	guest_ram_free(&fe->ram, area);

	/* 3 laps of the 128-entry ring, waiting on EVENT_IDX calls */
	for (i = 0, bad = 0; i < 3 * 128 + 7; i++) {
		st = pvo_query_pkey(fe, 1, 0, &pk);
		if (st < 0)
			give_up("ring wrap", vu_frontend_error(fe));
		bad += st != PVO_STATUS_OK || le16toh(pk.pkey) != 0xffff;
	}
	tap_ok(!bad,
	       "391 commands in a row wrap the ring 3 times, all answered (%d "
	       "wrong)",
	       bad);

	/* 60 chains (two descriptors each) published, one kick: more
	 * than the back-end takes per turn of its loop, the rest follow
	 * without another kick */
	area = guest_ram_alloc(&fe->ram, 60 * 64, 64);
	for (i = 0; i < 60; i++) {
		struct pvo_cmd_hdr hp = {.opcode = htole16(PVO_CMD_QUERY_PORT)};
		struct pvo_cmd_port body = {.port = htole32(1)};
		struct vq_buf o = {area + i * 64, 16};
		struct vq_buf r = {area + i * 64 + 16, 8 + sizeof(p)};

		guest_ram_write(&fe->ram, o.gpa, &hp, 8);
		guest_ram_write(&fe->ram, o.gpa + 8, &body, 8);
		heads[i] = split_vq_add(vq, &o, 1, &r, 1);
	}
	split_vq_kick(vq);
	for (i = 0, bad = 0; i < 60; i++) {
		uint32_t status = 1;

		st = split_vq_wait(vq, heads[i], fe->sock, 5000, &used);
		if (st < 0)
			give_up("batched chains", strerror(-st));
		guest_ram_read(&fe->ram, area + i * 64 + 16, &status, 4);
		bad += used != 8 + sizeof(p) || status != 0;
	}
	tap_ok(!bad,
	       "60 chains behind a single kick are all answered (%d wrong)",
	       bad);
	guest_ram_free(&fe->ram, area);

	vu_frontend_free(fe);
}

/*
 * QEMU's VM stop / continue: SET_VRING_ENABLE 0 + GET_VRING_BASE, later
 * SET_FEATURES, SET_MEM_TABLE and the vrings again from the saved base,
 * SET_VRING_KICK before SET_VRING_CALL. Objects must survive; a ring must
 * not be processed while stopped; a chain pending at resume must complete
 * with a call, whenever the back-end gets to it.
 */
static void test_stop_continue(void)
{
	struct pvo_cmd_hdr hq = {.opcode = htole16(PVO_CMD_QUERY_DEVICE)};
	struct vu_frontend *fe;
	struct split_vq *vq;
	struct vq_buf o, r;
	uint64_t area;
	uint32_t used = 0, ctx = 0;
	int st, head;

	fe = must_open((1ull << VU_F_RING_EVENT_IDX), "stop/continue session");
	vq = vu_vq(fe, PVO_VQ_CTRL);
	st = pvo_alloc_ucontext(fe, &ctx, NULL, NULL);
	if (st != PVO_STATUS_OK)
		give_up("ALLOC_UCONTEXT", pvo_status_name(st));
	st = vu_frontend_stop(fe);
	tap_ok(st == 0 && vq->stopped_base == vq->avail_idx,
	       "GET_VRING_BASE on stop reports the ring's avail index (%u, "
	       "driver at %u)%s%s",
	       vq->stopped_base, vq->avail_idx, st ? ": " : "",
	       st ? vu_frontend_error(fe) : "");
	if (st)
		give_up("stop", vu_frontend_error(fe));

	area = guest_ram_alloc(&fe->ram, 4096, 64);
	o = (struct vq_buf){area, 8};
	r = (struct vq_buf){area + 64, 8 + sizeof(qdev_ref)};
	guest_ram_write(&fe->ram, area, &hq, 8);
	head = split_vq_add(vq, &o, 1, &r, 1);
	split_vq_kick(vq);
	st = split_vq_wait(vq, head, fe->sock, 500, &used);
	tap_ok(st == -ETIMEDOUT,
	       "a chain kicked while the rings are stopped is left alone (%s)",
	       st == 0 ? "it was processed" : strerror(-st));

	/* give the back-end time to act between KICK and CALL */
	fe->opt.kick_call_gap_ms = 200;
	st = vu_frontend_start(fe);
	if (!tap_ok(st == 0,
		    "resume: SET_FEATURES, SET_MEM_TABLE, vrings from base %u, "
		    "ENABLE%s%s",
		    vq->stopped_base, st ? ": " : "",
		    st ? vu_frontend_error(fe) : "")) {
		tap_diag("QEMU sends SET_VRING_KICK before SET_VRING_CALL: a "
			 "ring with pending work must not be processed, or "
			 "must not be notified, until the call fd is there");
		tap_skip(2, "resume failed");
		vu_frontend_free(fe);
		return;
	}
	st = split_vq_wait(vq, head, fe->sock, 5000, &used);
	tap_ok(st == 0 && used == 8 + sizeof(qdev_ref),
	       "after resume the pending chain completes with a call (%s, used "
	       "%u)",
	       st ? strerror(-st) : "done", used);
	guest_ram_free(&fe->ram, area);
	st = pvo_dealloc_ucontext(fe, ctx);
	TAP_STATUS(st, PVO_STATUS_OK,
		   "a context created before stop/continue survives it");
	vu_frontend_free(fe);
}

static void test_connections(void)
{
	struct vu_frontend *fe, *second, *third;
	struct vu_options opt = {.socket_path = bp.socket_path};
	uint32_t ctx = 0, c;
	char err[512];
	int st, n = 0;

	fe = must_open(0, "first session");
	second = vu_frontend_new(&opt, err, sizeof(err));
	if (!second)
		tap_bail("%s", err);
	st = vu_frontend_connect(second);
	tap_ok(st == 0 && vu_frontend_negotiate(second) == 0 &&
		       vu_connection_alive(second, 500),
	       "a second front-end on a connected VM's socket is accepted "
	       "(a migration's destination)");
	third = vu_frontend_new(&opt, err, sizeof(err));
	if (!third)
		tap_bail("%s", err);
	st = vu_frontend_connect(third);
	tap_ok(st == 0 && !vu_connection_alive(third, 2000),
	       "a third front-end is turned away while the second waits");
	vu_frontend_free(third);
	vu_frontend_start(second);
	tap_ok(!vu_connection_alive(second, 2000),
	       "the second front-end cannot start the VM without the VM's "
	       "migrated state: dropped");
	vu_frontend_free(second);
	st = pvo_alloc_ucontext(fe, &ctx, NULL, NULL);
	TAP_STATUS(st, PVO_STATUS_OK, "the first session is unaffected");
	/* leave with the context still allocated */
	vu_frontend_free(fe);

	fe = must_open(0, "session after disconnect");
	st = pvo_dealloc_ucontext(fe, ctx);
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "after a reconnect the previous session's context is gone");
	/* no notify area on this session: the user queues are the limit */
	while (n < PVO_MAX_QUEUES &&
	       pvo_alloc_ucontext(fe, &c, NULL, NULL) == PVO_STATUS_OK)
		n++;
	tap_ok(n == (int)fe->nvqs - PVO_VQ_DB_FIRST_USER,
	       "all user doorbell queues are free again after the reconnect "
	       "(allocated %d contexts on %d queues)",
	       n, (int)fe->nvqs - PVO_VQ_DB_FIRST_USER);
	vu_frontend_free(fe);
}

/* --- malformed descriptor chains ------------------------------------ */

enum verdict { ANSWERED, DROPPED, STALLED, CRASHED };

static const char *verdict_name(enum verdict v)
{
	static const char *const names[] = {"answered", "connection dropped",
					    "stalled", "back-end died"};
	return names[v];
}

struct chain_case {
	const char *name;
	/* builds the chain, returns the head (or -1 when none to wait on) */
	int (*build)(struct vu_frontend *fe, struct split_vq *vq,
		     uint64_t area);
};

static void cmd_at(struct vu_frontend *fe, uint64_t gpa)
{
	struct pvo_cmd_hdr h = {.opcode = htole16(PVO_CMD_QUERY_DEVICE)};

	guest_ram_write(&fe->ram, gpa, &h, sizeof(h));
}

static int b_read_outside(struct vu_frontend *fe, struct split_vq *vq,
			  uint64_t a)
{
	struct vq_buf o = {RAM_SIZE + 0x1000, 8}, i = {a + 64, 256};

	(void)fe;
	return split_vq_add(vq, &o, 1, &i, 1);
}

static int b_write_outside(struct vu_frontend *fe, struct split_vq *vq,
			   uint64_t a)
{
	struct vq_buf o = {a, 8}, i = {1ull << 40, 256};

	cmd_at(fe, a);
	return split_vq_add(vq, &o, 1, &i, 1);
}

static int b_past_end(struct vu_frontend *fe, struct split_vq *vq, uint64_t a)
{
	struct vq_buf o = {a, 8}, i = {RAM_SIZE - 16, 256};

	cmd_at(fe, a);
	return split_vq_add(vq, &o, 1, &i, 1);
}

static int b_wrapping_addr(struct vu_frontend *fe, struct split_vq *vq,
			   uint64_t a)
{
	struct vq_buf o = {a, 8}, i = {UINT64_MAX - 64, 256};

	cmd_at(fe, a);
	return split_vq_add(vq, &o, 1, &i, 1);
}

static int b_zero_len(struct vu_frontend *fe, struct split_vq *vq, uint64_t a)
{
	struct vq_buf o[2] = {{a, 8}, {a + 8, 0}}, i = {a + 64, 256};

	cmd_at(fe, a);
	return split_vq_add(vq, o, 2, &i, 1);
}

static int b_write_then_read(struct vu_frontend *fe, struct split_vq *vq,
			     uint64_t a)
{
	struct vq_raw_desc d[2] = {
	    {.addr = a + 64,
	     .len = 256,
	     .flags = VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
	     .next = 1},
	    {.addr = a, .len = 8},
	};

	cmd_at(fe, a);
	return split_vq_add_raw(vq, d, 2);
}

static int b_loop(struct vu_frontend *fe, struct split_vq *vq, uint64_t a)
{
	struct vq_raw_desc d[2] = {
	    {.addr = a, .len = 8, .flags = VRING_DESC_F_NEXT, .next = 1},
	    {.addr = a + 64,
	     .len = 256,
	     .flags = VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
	     .next = 0},
	};

	cmd_at(fe, a);
	return split_vq_add_raw(vq, d, 2);
}

static int b_next_out_of_ring(struct vu_frontend *fe, struct split_vq *vq,
			      uint64_t a)
{
	struct vq_raw_desc d[1] = {
	    {.addr = a,
	     .len = 8,
	     .flags = VRING_DESC_F_NEXT,
	     .next = 1000,
	     .raw_next = true},
	};

	cmd_at(fe, a);
	return split_vq_add_raw(vq, d, 1);
}

static int b_head_out_of_ring(struct vu_frontend *fe, struct split_vq *vq,
			      uint64_t a)
{
	(void)fe;
	(void)a;
	split_vq_publish_head(vq, 500);
	return -1;
}

static int b_avail_jump(struct vu_frontend *fe, struct split_vq *vq, uint64_t a)
{
	(void)fe;
	(void)a;
	/* claim 1000 new entries in a 128-entry ring */
	vq->avail_idx += 1000;
	__atomic_store_n(&vq->avail->idx, htole16(vq->avail_idx),
			 __ATOMIC_RELEASE);
	return -1;
}

static int b_indirect_bad_len(struct vu_frontend *fe, struct split_vq *vq,
			      uint64_t a)
{
	struct vq_raw_desc d = {
	    .addr = a + 1024, .len = 20, .flags = VRING_DESC_F_INDIRECT};

	(void)fe;
	return split_vq_add_raw(vq, &d, 1);
}

static int b_indirect_outside(struct vu_frontend *fe, struct split_vq *vq,
			      uint64_t a)
{
	struct vq_raw_desc d = {
	    .addr = RAM_SIZE + 4096, .len = 32, .flags = VRING_DESC_F_INDIRECT};

	(void)fe;
	(void)a;
	return split_vq_add_raw(vq, &d, 1);
}

static int b_indirect_nested(struct vu_frontend *fe, struct split_vq *vq,
			     uint64_t a)
{
	struct vring_desc t[2] = {
	    {.addr = htole64(a),
	     .len = htole32(8),
	     .flags = htole16(VRING_DESC_F_NEXT),
	     .next = htole16(1)},
	    {.addr = htole64(a + 2048),
	     .len = htole32(32),
	     .flags = htole16(VRING_DESC_F_INDIRECT)},
	};
	struct vq_raw_desc d = {
	    .addr = a + 1024, .len = sizeof(t), .flags = VRING_DESC_F_INDIRECT};

	cmd_at(fe, a);
	guest_ram_write(&fe->ram, a + 1024, t, sizeof(t));
	return split_vq_add_raw(vq, &d, 1);
}

static int b_indirect_loop(struct vu_frontend *fe, struct split_vq *vq,
			   uint64_t a)
{
	struct vring_desc t[2] = {
	    {.addr = htole64(a),
	     .len = htole32(8),
	     .flags = htole16(VRING_DESC_F_NEXT),
	     .next = htole16(1)},
	    {.addr = htole64(a + 64),
	     .len = htole32(256),
	     .flags = htole16(VRING_DESC_F_WRITE | VRING_DESC_F_NEXT),
	     .next = htole16(0)},
	};
	struct vq_raw_desc d = {
	    .addr = a + 1024, .len = sizeof(t), .flags = VRING_DESC_F_INDIRECT};

	cmd_at(fe, a);
	guest_ram_write(&fe->ram, a + 1024, t, sizeof(t));
	return split_vq_add_raw(vq, &d, 1);
}

static const struct chain_case chain_cases[] = {
    {"readable buffer outside guest RAM", b_read_outside},
    {"writable buffer at 1 TiB", b_write_outside},
    {"writable buffer running past the end of guest RAM", b_past_end},
    {"buffer address that wraps around 2^64", b_wrapping_addr},
    {"zero-length descriptor", b_zero_len},
    {"writable descriptor before a readable one", b_write_then_read},
    {"descriptor loop", b_loop},
    {"next index beyond the ring", b_next_out_of_ring},
    {"avail entry naming head 500 of a 128-entry ring", b_head_out_of_ring},
    {"avail index moved by 1000", b_avail_jump},
    {"indirect table length not a multiple of 16", b_indirect_bad_len},
    {"indirect table outside guest RAM", b_indirect_outside},
    {"indirect descriptor inside an indirect table", b_indirect_nested},
    {"loop inside an indirect table", b_indirect_loop},
};

static enum verdict run_chain_case(const struct chain_case *c, uint32_t *used)
{
	const uint64_t feats = 1ull << VU_F_RING_INDIRECT_DESC;
	struct vu_frontend *fe = must_open(feats, c->name);
	struct split_vq *vq = vu_vq(fe, PVO_VQ_CTRL);
	uint64_t area = guest_ram_alloc(&fe->ram, 4096, 4096);
	enum verdict v;
	int head, ret;

	head = c->build(fe, vq, area);
	split_vq_kick(vq);
	if (head >= 0) {
		ret = split_vq_wait(vq, head, fe->sock, VERDICT_MS, used);
		v = ret == 0		 ? ANSWERED
		    : ret == -ECONNRESET ? DROPPED
		    : ret == -EPROTO	 ? ANSWERED
					 : STALLED;
		if (ret == -EPROTO)
			tap_diag("  %s", vq->bad_used_msg);
	} else {
		/* nothing to wait for: the device must not hang up silently
		 * forever, and must not return garbage */
		v = vu_connection_alive(fe, VERDICT_MS) ? ANSWERED : DROPPED;
		if (v == ANSWERED && split_vq_reap(vq) < 0) {
			tap_diag("  %s", vq->bad_used_msg);
		}
	}
	sleep_ms(150); /* a crash takes a moment to become visible */
	if (!backend_running(&bp))
		v = CRASHED;
	vu_frontend_free(fe);
	return v;
}

static uint8_t base_fd_snap[FD_SNAP_MAX / 8];

static void check_fds_after(const char *what)
{
	char diff[256];

	if (!tap_ok(fds_match(base_fd_snap, diff, sizeof(diff)),
		    "  ... and the back-end's fds are as before%s", diff)) {
		tap_diag("after %s:", what);
		list_backend_fds();
		/* judge the next case against the new state */
		fd_snapshot(base_fd_snap);
	}
}

static void test_bad_chains(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(chain_cases) / sizeof(chain_cases[0]); i++) {
		const struct chain_case *c = &chain_cases[i];
		uint32_t used = 0;
		enum verdict v = run_chain_case(c, &used);

		if (v == ANSWERED && used)
			tap_diag("%s: answered with used length %u", c->name,
				 used);
		if (!tap_ok(v == ANSWERED || v == DROPPED, "bad chain, %s: %s",
			    c->name, verdict_name(v)) &&
		    v == CRASHED)
			give_up(c->name, "back-end died");
		tap_ok(fresh_session_works(),
		       "  ... and the next session works");
		check_fds_after(c->name);
	}
}

/* --- malformed vhost-user messages ---------------------------------- */

enum owed { OWES_NOTHING, OWES_ACK, OWES_REPLY };

struct msg_case {
	const char *name;
	int (*send)(struct vu_frontend *fe); /* vu_send_* result */
	enum owed owed;
	/* OWES_REPLY: is this reply acceptable? */
	bool (*reply_ok)(const struct vu_msg_hdr *h, const uint8_t *payload,
			 char *why, size_t why_len);
	bool must_drop; /* the stream cannot be resynchronised */
};

static const uint32_t need = VU_FLAG_VERSION | VU_FLAG_NEED_REPLY;

static int m_truncated_payload(struct vu_frontend *fe)
{
	struct {
		struct vu_msg_hdr h;
		uint32_t half;
	} __attribute__((packed))
	m = {{VU_SET_VRING_NUM, VU_FLAG_VERSION, 8}, 0};

	/* header promises 8 bytes, 4 arrive, the sender goes quiet */
	return vu_send_raw(fe, &m, sizeof(m), NULL, 0);
}

static int m_oversized(struct vu_frontend *fe)
{
	struct vu_msg_hdr h = {VU_SET_MEM_TABLE, need, 0x100000};

	return vu_send_raw(fe, &h, sizeof(h), NULL, 0);
}

static int m_short_header(struct vu_frontend *fe)
{
	uint32_t req = VU_GET_FEATURES;

	return vu_send_raw(fe, &req, sizeof(req), NULL, 0);
}

static int m_request_zero(struct vu_frontend *fe)
{
	return vu_send_msg(fe, 0, need, NULL, 0, NULL, 0);
}

static int m_unknown_request(struct vu_frontend *fe)
{
	uint64_t v = 0;

	return vu_send_msg(fe, 99, need, &v, sizeof(v), NULL, 0);
}

static int m_vring_index(struct vu_frontend *fe)
{
	struct vu_vring_state st = {.index = 200, .num = 64};

	return vu_send_msg(fe, VU_SET_VRING_NUM, need, &st, sizeof(st), NULL,
			   0);
}

static int m_vring_addr_unmapped(struct vu_frontend *fe)
{
	struct vu_vring_addr a = {
	    .index = 0,
	    .desc_user_addr = 0x1000,
	    .used_user_addr = 0x2000,
	    .avail_user_addr = 0x3000,
	};

	return vu_send_msg(fe, VU_SET_VRING_ADDR, need, &a, sizeof(a), NULL, 0);
}

static int m_mem_table_nine(struct vu_frontend *fe)
{
	struct vu_mem_table mt = {.nregions = 9};
	int fds[2] = {fe->ram.region[0].fd, fe->ram.region[1].fd};

	return vu_send_msg(fe, VU_SET_MEM_TABLE, need, &mt, sizeof(mt), fds, 2);
}

static int m_mem_table_missing_fd(struct vu_frontend *fe)
{
	struct vu_mem_table mt = {.nregions = 2};
	unsigned int i;

	for (i = 0; i < 2; i++) {
		mt.regions[i].guest_phys_addr = fe->ram.region[i].gpa;
		mt.regions[i].memory_size = fe->ram.region[i].size;
		mt.regions[i].userspace_addr = (uintptr_t)fe->ram.region[i].hva;
	}
	return vu_send_msg(fe, VU_SET_MEM_TABLE, need, &mt, sizeof(mt),
			   &fe->ram.region[0].fd, 1);
}

/*
 * Guest RAM, then a second region that starts where the first does and
 * is empty (wrap = false), or starts inside it and wraps around the
 * address space (wrap = true): libvhost-user's search for its place in
 * the table would never end.
 */
static int mem_table_bad_second(struct vu_frontend *fe, bool wrap)
{
	struct vu_mem_table mt = {.nregions = 2};
	int fds[2] = {fe->ram.region[0].fd, fe->ram.region[0].fd};

	mt.regions[0].guest_phys_addr = fe->ram.region[0].gpa;
	mt.regions[0].memory_size = fe->ram.region[0].size;
	mt.regions[0].userspace_addr = (uintptr_t)fe->ram.region[0].hva;
	mt.regions[1] = mt.regions[0];
	mt.regions[1].memory_size = 0;
	if (wrap) {
		mt.regions[1].guest_phys_addr += 4096;
		mt.regions[1].userspace_addr += 4096;
		mt.regions[1].memory_size = UINT64_MAX - 4095;
	}
	return vu_send_msg(fe, VU_SET_MEM_TABLE, need, &mt, sizeof(mt), fds,
			   2);
}

static int m_mem_table_empty_region(struct vu_frontend *fe)
{
	return mem_table_bad_second(fe, false);
}

static int m_mem_table_wrapping_region(struct vu_frontend *fe)
{
	return mem_table_bad_second(fe, true);
}

static int m_mem_table_huge(struct vu_frontend *fe)
{
	struct vu_mem_table mt = {.nregions = 100000};

	return vu_send_msg(fe, VU_SET_MEM_TABLE, need, &mt, sizeof(mt),
			   &fe->ram.region[0].fd, 1);
}

static int m_kick_without_fd(struct vu_frontend *fe)
{
	uint64_t idx = 0; /* no NOFD flag, no fd attached */

	return vu_send_msg(fe, VU_SET_VRING_KICK, need, &idx, sizeof(idx), NULL,
			   0);
}

static int m_too_many_fds(struct vu_frontend *fe)
{
	int fds[12], i, ret;
	uint64_t idx = 0;

	for (i = 0; i < 12; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	ret = vu_send_msg(fe, VU_SET_VRING_CALL, need, &idx, sizeof(idx), fds,
			  12);
	for (i = 0; i < 12; i++)
		close(fds[i]);
	return ret;
}

/* A dirty log described in 32 bytes (it is 16): the fd must not stay. */
static int m_log_base_size(struct vu_frontend *fe)
{
	uint64_t log[4] = {4096, 0, 0, 0};
	int fd = memfd_create("t-vhost-log", MFD_CLOEXEC), ret;

	if (fd < 0 || ftruncate(fd, 4096))
		return -errno;
	ret = vu_send_msg(fe, VU_SET_LOG_BASE, need, log, sizeof(log), &fd, 1);
	close(fd);
	return ret;
}

/* Twice: each one would leave the daemon a memfd it never closes. */
static int m_get_inflight(struct vu_frontend *fe)
{
	/* VhostUserInflight: mmap_size, mmap_offset, num_queues,
	 * queue_size, 4 bytes of padding */
	struct {
		uint64_t size, offset;
		uint16_t queues, queue_size;
		uint32_t pad;
	} inflight = {0, 0, 1, 64, 0};
	int ret;

	ret = vu_send_msg(fe, VU_GET_INFLIGHT_FD, VU_FLAG_VERSION, &inflight,
			  sizeof(inflight), NULL, 0);
	if (ret)
		return ret;
	/* The back-end may have hung up on the first already (a refusal
	 * drops the session): then the second finds a closed socket, and
	 * the verdict reads the hang-up. */
	vu_send_msg(fe, VU_GET_INFLIGHT_FD, need, &inflight, sizeof(inflight),
		    NULL, 0);
	return 0;
}

static int m_postcopy_advise(struct vu_frontend *fe)
{
	return vu_send_msg(fe, VU_POSTCOPY_ADVISE, VU_FLAG_VERSION, NULL, 0,
			   NULL, 0);
}

/* Postcopy is refused: a failure reply and no userfaultfd. */
static bool r_postcopy_refused(const struct vu_msg_hdr *h, const uint8_t *p,
			       char *why, size_t len)
{
	uint64_t v = 0;

	if (h->size == sizeof(v))
		memcpy(&v, p, sizeof(v));
	snprintf(why, len, "POSTCOPY_ADVISE reply: request %u, %u bytes, "
			   "value %llu (expected a failure)",
		 h->request, h->size, (unsigned long long)v);
	return h->request == VU_POSTCOPY_ADVISE && h->size == sizeof(v) &&
	       v != 0;
}

static int m_set_config(struct vu_frontend *fe)
{
	struct vu_config_msg c = {.offset = 8, .size = 6};

	memset(c.region, 0x66, 6); /* try to change the MAC */
	return vu_send_msg(fe, VU_SET_CONFIG, need, &c, VU_CONFIG_HDR_SIZE + 6,
			   NULL, 0);
}

static int m_config_too_big(struct vu_frontend *fe)
{
	struct {
		struct vu_config_msg c;
		uint8_t more[744];
	} __attribute__((packed)) big;

	memset(&big, 0, sizeof(big));
	big.c.size = 1000;
	return vu_send_msg(fe, VU_GET_CONFIG, VU_FLAG_VERSION, &big,
			   VU_CONFIG_HDR_SIZE + 1000, NULL, 0);
}

/* An error answer to GET_CONFIG is an empty payload (vhost-user spec). */
static bool r_config_error(const struct vu_msg_hdr *h, const uint8_t *p,
			   char *why, size_t len)
{
	(void)p;
	snprintf(why, len,
		 "GET_CONFIG reply of %u payload bytes, expected 0 (error)",
		 h->size);
	return h->request == VU_GET_CONFIG && h->size == 0;
}

static int m_config_past_end(struct vu_frontend *fe)
{
	struct vu_config_msg c = {.offset = 200, .size = 56};

	return vu_send_msg(fe, VU_GET_CONFIG, VU_FLAG_VERSION, &c,
			   VU_CONFIG_HDR_SIZE + 56, NULL, 0);
}

/* Bytes 200..255 lie past struct pvo_config: an error or zeros, not a
 * copy of the config from offset 0. */
static bool r_config_past_end(const struct vu_msg_hdr *h, const uint8_t *p,
			      char *why, size_t len)
{
	static const uint8_t zero[56];
	const struct vu_config_msg *c = (const void *)p;

	if (h->size == 0)
		return true;
	if (h->size != VU_CONFIG_HDR_SIZE + 56) {
		snprintf(why, len,
			 "GET_CONFIG reply of %u payload bytes, asked for %u",
			 h->size, VU_CONFIG_HDR_SIZE + 56);
		return false;
	}
	snprintf(why, len,
		 "GET_CONFIG at offset 200 returned bytes %02x %02x %02x %02x "
		 "... (offset ignored? config starts with version 1)",
		 c->region[0], c->region[1], c->region[2], c->region[3]);
	return !memcmp(c->region, zero, sizeof(zero));
}

static const struct msg_case msg_cases[] = {
    {"payload shorter than the header says, then silence", m_truncated_payload,
     OWES_NOTHING, NULL, true},
    {"header announcing a 1 MiB payload", m_oversized, OWES_NOTHING, NULL,
     true},
    {"4-byte message (header cut short), then silence", m_short_header,
     OWES_NOTHING, NULL, true},
    {"request 0", m_request_zero, OWES_ACK, NULL, false},
    {"unknown request 99", m_unknown_request, OWES_ACK, NULL, false},
    {"SET_VRING_NUM for ring 200", m_vring_index, OWES_ACK, NULL, false},
    {"SET_VRING_ADDR outside the memory table", m_vring_addr_unmapped, OWES_ACK,
     NULL, false},
    {"SET_MEM_TABLE with 2 regions and 1 fd", m_mem_table_missing_fd, OWES_ACK,
     NULL, false},
    {"SET_MEM_TABLE with 9 regions", m_mem_table_nine, OWES_ACK, NULL, false},
    {"SET_MEM_TABLE with an empty region where another starts",
     m_mem_table_empty_region, OWES_ACK, NULL, false},
    {"SET_MEM_TABLE with a region wrapping around 2^64",
     m_mem_table_wrapping_region, OWES_ACK, NULL, false},
    {"SET_VRING_KICK without fd or NOFD flag", m_kick_without_fd, OWES_ACK,
     NULL, false},
    {"SET_VRING_CALL with 12 fds attached", m_too_many_fds, OWES_ACK, NULL,
     false},
    {"SET_CONFIG over the MAC", m_set_config, OWES_ACK, NULL, false},
    {"SET_LOG_BASE with a 32-byte payload", m_log_base_size, OWES_ACK, NULL,
     false},
    {"GET_INFLIGHT_FD twice (inflight tracking is not offered)",
     m_get_inflight, OWES_ACK, NULL, false},
    {"POSTCOPY_ADVISE (postcopy is not supported)", m_postcopy_advise,
     OWES_REPLY, r_postcopy_refused, false},
    {"GET_CONFIG of 1000 bytes", m_config_too_big, OWES_REPLY, r_config_error,
     false},
    {"GET_CONFIG of bytes 200..255", m_config_past_end, OWES_REPLY,
     r_config_past_end, false},
};

/* Run on a back-end of its own at the end: it may kill the process. */
static const struct msg_case hostile_case = {
    "SET_MEM_TABLE claiming 100000 regions", m_mem_table_huge, OWES_ACK, NULL,
    false};

/* Did the back-end hang up within @ms? */
static bool dropped_within(struct vu_frontend *fe, int ms)
{
	return !vu_connection_alive(fe, ms);
}

/*
 * Judge what followed the bad message. Acceptable: a failure ack, a
 * well-formed reply, a dropped connection, or (for harmless input) a
 * success ack on a connection that stays usable. Not acceptable: no answer
 * while the front-end waits, a success ack followed by a hang-up (QEMU
 * would carry on believing it worked), or a dead back-end.
 */
static bool judge_msg_case(const struct msg_case *c, char *why, size_t len)
{
	struct vu_frontend *fe = must_open(0, c->name);
	struct vu_msg_hdr h;
	uint8_t payload[1100];
	uint64_t ack;
	bool ok;
	int ret;

	ret = c->send(fe);
	if (ret < 0) {
		snprintf(why, len, "the test could not send it: %s",
			 vu_frontend_error(fe));
		vu_frontend_free(fe);
		return false;
	}
	if (c->owed == OWES_NOTHING) {
		ok = dropped_within(fe, VERDICT_MS) || !c->must_drop;
		snprintf(why, len,
			 ok ? "connection dropped"
			    : "connection kept open with a half-read message");
		goto out;
	}
	ret = vu_recv_msg(fe, &h, payload, sizeof(payload), VERDICT_MS);
	if (ret == -ECONNRESET) {
		ok = true;
		snprintf(why, len, "connection dropped without an answer");
		goto out;
	}
	if (ret == -ETIMEDOUT) {
		ok = false;
		snprintf(
		    why, len,
		    "no answer within %d ms while the front-end waits for one",
		    VERDICT_MS);
		goto out;
	}
	if (ret < 0) {
		ok = false;
		snprintf(why, len, "unreadable answer: %s",
			 vu_frontend_error(fe));
		goto out;
	}
	if (c->owed == OWES_REPLY) {
		ok = c->reply_ok(&h, payload, why, len);
		if (ok)
			snprintf(why, len, "answered (%u payload bytes)",
				 h.size);
		goto out;
	}
	if (h.size != sizeof(ack) || (h.flags & VU_FLAG_REPLY) == 0) {
		ok = false;
		snprintf(why, len, "ack with %u payload bytes, flags 0x%x",
			 h.size, h.flags);
		goto out;
	}
	memcpy(&ack, payload, sizeof(ack));
	if (ack) {
		ok = true;
		snprintf(why, len, "failure ack (%llu)",
			 (unsigned long long)ack);
	} else if (dropped_within(fe, 500)) {
		ok = false;
		snprintf(why, len,
			 "acked success (0), then dropped the connection: "
			 "REPLY_ACK must report the failure");
	} else {
		ok = true;
		snprintf(why, len, "acked success and kept the session");
	}
out:
	sleep_ms(150); /* a crash takes a moment to become visible */
	if (!backend_running(&bp)) {
		ok = false;
		snprintf(why, len, "back-end %s", backend_describe(&bp));
	}
	vu_frontend_free(fe);
	return ok;
}

static void test_bad_messages(void)
{
	unsigned int i;
	char why[256];

	for (i = 0; i < sizeof(msg_cases) / sizeof(msg_cases[0]); i++) {
		const struct msg_case *c = &msg_cases[i];
		bool ok = judge_msg_case(c, why, sizeof(why));

		tap_ok(ok, "bad message, %s: %s", c->name, why);
		if (!backend_running(&bp))
			give_up(c->name, "back-end died");
		tap_ok(fresh_session_works(),
		       "  ... and the next session works");
		check_fds_after(c->name);
	}
}

static void test_set_config_ignored(void)
{
	struct vu_frontend *fe = must_open(0, "config check");
	struct pvo_config *cfg = (struct pvo_config *)fe->config;
	static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x00, 0x00, 0x01};

	tap_ok(!memcmp(cfg->mac, mac, 6),
	       "the MAC in the config space is still the administrator's after "
	       "SET_CONFIG");
	vu_frontend_free(fe);
}

/* A front-end that lies about the memory table must not take the daemon
 * (and every other VM it serves) down. */
/*
 * A started ring's kick fd that epoll cannot wait on (a memfd, as a
 * regular file would be): the back-end ends the session and says why; it
 * neither crashes nor spins on an always-readable fd.
 */
static void test_kick_not_eventfd(void)
{
	struct vu_frontend *fe = must_open(0, "kick fd that is a memfd");
	int fd = memfd_create("t-vhost-kick", MFD_CLOEXEC), ret;
	uint64_t idx = 0;
	struct vu_msg_hdr h;
	uint8_t payload[64];

	ret =
	    vu_send_msg(fe, VU_SET_VRING_KICK, need, &idx, sizeof(idx), &fd, 1);
	if (fd >= 0)
		close(fd);
	if (ret >= 0)
		ret = vu_recv_msg(fe, &h, payload, sizeof(payload), VERDICT_MS);
	tap_ok(ret == -ECONNRESET && dropped_within(fe, 100),
	       "SET_VRING_KICK with a memfd for a started ring: the session "
	       "is dropped without an answer (%s)",
	       ret == -ECONNRESET ? "dropped"
	       : ret < 0	  ? vu_frontend_error(fe)
				  : "answered");
	vu_frontend_free(fe);
	sleep_ms(150);
	tap_ok(backend_running(&bp) &&
		   backend_log_has(
		       &bp, "cannot wait on the ring eventfd it sent", 0),
	       "  ... the back-end lives on and its log says why");
	tap_ok(fresh_session_works(), "  ... and the next session works");
	check_fds_after("a memfd as a kick fd");
}

/*
 * A call fd that is a full pipe: libvhost-user writes a ring's call fd
 * as an eventfd, at once for a new one and at every notification. The
 * write must fail (the back-end may drop the session), not block the
 * loop for every VM.
 */
static void test_call_fd_full_pipe(void)
{
	struct vu_frontend *fe = must_open(0, "call fd that is a full pipe");
	uint64_t idx = 0, r;
	char path[64], fill[4096] = {0};
	struct vu_msg_hdr h;
	int p[2], w, ret;

	if (pipe2(p, O_CLOEXEC) < 0)
		give_up("pipe", strerror(errno));
	/* fill it through a description of our own: the one sent stays
	 * blocking */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (w < 0)
		give_up("reopening the pipe", strerror(errno));
	while (write(w, fill, sizeof(fill)) > 0)
		;
	close(w);
	ret = vu_send_msg(fe, VU_SET_VRING_CALL, need, &idx, sizeof(idx),
			  &p[1], 1);
	close(p[1]);
	if (ret >= 0)
		ret = vu_recv_msg(fe, &h, &r, sizeof(r), VERDICT_MS);
	tap_ok(ret == 0 || ret == -ECONNRESET,
	       "SET_VRING_CALL with a full pipe: %s",
	       ret == 0 ? "answered" : ret == -ECONNRESET ? "dropped"
							    : vu_frontend_error(fe));
	vu_frontend_free(fe);
	close(p[0]);
	tap_ok(fresh_session_works(), "  ... and the next session works");
	check_fds_after("a full pipe as a call fd");
}

static void test_hostile_frontend(void)
{
	char err[512], why[256];
	bool ok;
	int st;

	st = backend_start(&bp, backend_args, 10000, err, sizeof(err));
	if (st)
		give_up("restarting the back-end", err);
	ok = judge_msg_case(&hostile_case, why, sizeof(why));
	tap_ok(ok, "hostile message, %s: %s", hostile_case.name, why);
	tap_ok(fresh_session_works(), "  ... and the next session works");
	if (!backend_running(&bp))
		tap_diag("back-end %s", backend_describe(&bp));
	st = backend_stop(&bp, 5000);
	tap_ok(st == 0, "that back-end exits with status 0 on SIGTERM (it %s)",
	       backend_describe(&bp));
	if (tap_failures())
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, tap_failures() != 0);
}

/*
 * Front-ends that try to hold the loop every VM shares: one of VM a's
 * drips a message, floods requests without reading the replies, or keeps
 * a state pipe open across CHECK_DEVICE_STATE. Each may cost its own
 * session (or migration) only: VM b's session keeps answering while the
 * attack is on. Timings are loose: the back-end's deadlines are a second
 * or less, the verdicts allow ten.
 */
#define STALL_CONFIG                                                           \
	"vtep = 127.0.0.1\nvxlan-port = %d\n[tenant blue]\nvni = 100\n"        \
	"[vm a]\ntenant = blue\nmac = 52:54:00:00:0a:01\nips = 10.0.0.1\n"     \
	"[vm b]\ntenant = blue\nmac = 52:54:00:00:0b:01\nips = 10.0.0.2\n"
#define STALL_VERDICT_MS 10000

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

struct attack {
	struct vu_frontend *fe;
	/* returns when the back-end dropped it (0) or it gave up (-1) */
	int (*run)(struct attack *a);
	long long start_ms, dropped_ms; /* dropped: -1 if it was not */
	unsigned int sent;
	int over; /* atomic: run() returned */
};

/* SET_MEM_TABLE's header with a full payload announced, then the payload
 * one byte every 200 ms. */
static int drip(struct attack *a)
{
	struct vu_msg_hdr h = {VU_SET_MEM_TABLE, VU_FLAG_VERSION,
			       8 + VU_MAX_MEM_REGIONS * 32};
	uint8_t byte = 0;

	if (vu_send_raw(a->fe, &h, sizeof(h), NULL, 0) < 0)
		return -1;
	for (a->sent = 0; a->sent < h.size; a->sent++) {
		if (!vu_connection_alive(a->fe, 200))
			return 0;
		if (vu_send_raw(a->fe, &byte, 1, NULL, 0) < 0)
			return 0; /* EPIPE: it hung up */
	}
	return -1;
}

/* GET_FEATURES (always answered) as fast as the socket takes them; the
 * replies are never read. Never blocks: it must give up on its own. */
static int flood(struct attack *a)
{
	struct vu_msg_hdr h = {VU_GET_FEATURES, VU_FLAG_VERSION, 0};
	struct pollfd p = {.fd = a->fe->sock, .events = POLLOUT | POLLRDHUP};
	size_t off = 0;

	while (mono_ms() - a->start_ms < 3 * STALL_VERDICT_MS) {
		ssize_t n = send(a->fe->sock, (uint8_t *)&h + off,
				 sizeof(h) - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			if (off == sizeof(h)) {
				off = 0;
				a->sent++;
			}
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return 0;
		p.revents = 0;
		if (poll(&p, 1, 100) > 0 &&
		    (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return 0;
	}
	return -1;
}

static void *attack_thread(void *arg)
{
	struct attack *a = arg;

	if (a->run(a) == 0)
		a->dropped_ms = mono_ms() - a->start_ms;
	__atomic_store_n(&a->over, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Victim's QUERY_DEVICE answers while the attack runs. */
struct victim_log {
	unsigned int asked, answered;
	long long slowest_ms;
};

static void ask_victim(struct vu_frontend *victim, struct victim_log *v)
{
	struct pvo_resp_query_device d;
	long long t = mono_ms();
	int st = pvo_query_device(victim, &d);

	v->asked++;
	if (st == PVO_STATUS_OK)
		v->answered++;
	else
		tap_diag("VM b's QUERY_DEVICE: %s %s", pvo_status_name(st),
			 st < 0 ? vu_frontend_error(victim) : "");
	if (mono_ms() - t > v->slowest_ms)
		v->slowest_ms = mono_ms() - t;
}

static void run_attack(struct attack *a, struct vu_frontend *victim,
		       struct victim_log *v)
{
	pthread_t th;

	memset(v, 0, sizeof(*v));
	a->dropped_ms = -1;
	a->start_ms = mono_ms();
	if (pthread_create(&th, NULL, attack_thread, a))
		give_up("attack", "pthread_create failed");
	do {
		ask_victim(victim, v);
		sleep_ms(100);
	} while (!__atomic_load_n(&a->over, __ATOMIC_ACQUIRE) &&
		 v->answered == v->asked);
	pthread_join(th, NULL);
}

static struct vu_frontend *open_vm(const char *vm, const char *what)
{
	char err[512];
	struct vu_frontend *fe = open_session_at(backend_vm_socket(&bp, vm), 0,
						 0, err, sizeof(err));

	if (!fe)
		give_up(what, err);
	return fe;
}

static void judge_attack(const char *name, struct attack *a,
			 const struct victim_log *v, const char *log_line)
{
	tap_ok(a->dropped_ms >= 0 && a->dropped_ms < STALL_VERDICT_MS,
	       "%s: VM a's front-end is dropped (after %lld ms, %u sent)",
	       name, a->dropped_ms, a->sent);
	tap_ok(v->asked > 0 && v->answered == v->asked,
	       "  ... VM b answered meanwhile (%u of %u, slowest %lld ms)",
	       v->answered, v->asked, v->slowest_ms);
	tap_ok(backend_log_has(&bp, log_line, 2000),
	       "  ... the log says why (\"%s\")", log_line);
}

/* One attack by VM a's session while VM b is asked, then the verdict. */
static void attack_vm_a(struct vu_frontend *victim,
			int (*run)(struct attack *), const char *what,
			const char *log_line)
{
	struct attack a = {.run = run};
	struct victim_log v;

	a.fe = open_vm("a", "VM a's session");
	run_attack(&a, victim, &v);
	judge_attack(what, &a, &v, log_line);
	vu_frontend_free(a.fe);
}

static void test_dripping_message(struct vu_frontend *victim)
{
	attack_vm_a(victim, drip, "a message dripping one byte every 200 ms",
		    "message bytes arrived within");
}

static void test_unread_replies(struct vu_frontend *victim)
{
	attack_vm_a(victim, flood, "requests flooded while no reply is read",
		    "has not read its replies");
}

/*
 * SET_DEVICE_STATE_FD (load) with a pipe whose write end the front-end
 * keeps, then CHECK_DEVICE_STATE: it fails within the deadline; VM a's
 * session and VM b's run on.
 */
static void test_open_state_pipe(struct vu_frontend *victim)
{
	struct vu_frontend *fe = open_vm("a", "VM a's session");
	struct pvo_resp_query_device d;
	uint32_t params[2] = {1 /* load */, 0 /* stopped */}, size = 0;
	struct victim_log v = {0};
	uint64_t r = 0;
	struct vu_msg_hdr h;
	long long t;
	int p[2], ret;

	if (pipe2(p, O_CLOEXEC) < 0)
		give_up("pipe", strerror(errno));
	ret = vu_request(fe, VU_SET_DEVICE_STATE_FD, params, sizeof(params),
			 &p[0], 1, false, &r, sizeof(r), &size);
	close(p[0]);
	if (ret < 0 || size != sizeof(r) || (r & 0xff))
		give_up("SET_DEVICE_STATE_FD", vu_frontend_error(fe));
	t = mono_ms();
	ret = vu_send_msg(fe, VU_CHECK_DEVICE_STATE, VU_FLAG_VERSION, NULL, 0,
			  NULL, 0);
	if (ret < 0)
		give_up("CHECK_DEVICE_STATE", vu_frontend_error(fe));
	ask_victim(victim, &v);
	r = 0;
	ret = vu_recv_msg(fe, &h, &r, sizeof(r), STALL_VERDICT_MS);
	t = mono_ms() - t;
	tap_ok(ret == 0 && h.request == VU_CHECK_DEVICE_STATE &&
		   h.size == sizeof(r) && r != 0,
	       "CHECK_DEVICE_STATE with the state pipe held open: fails "
	       "(%s, after %lld ms)",
	       ret < 0 ? vu_frontend_error(fe) : r ? "failure" : "success",
	       t);
	ask_victim(victim, &v);
	tap_ok(v.answered == v.asked,
	       "  ... VM b answered meanwhile (%u of %u, slowest %lld ms)",
	       v.answered, v.asked, v.slowest_ms);
	tap_ok(vu_connection_alive(fe, 200) &&
		   pvo_query_device(fe, &d) == PVO_STATUS_OK,
	       "  ... VM a's session runs on");
	tap_ok(backend_log_has(&bp, "did not end within", 2000),
	       "  ... the log says why");
	close(p[1]);
	vu_frontend_free(fe);
}

static void test_stalling_frontends(void)
{
	static const char *const vms[] = {"a", "b", NULL};
	struct vu_frontend *victim;
	char config[512], err[512];
	int st;

	snprintf(config, sizeof(config), STALL_CONFIG,
		 20000 + getpid() % 20000);
	if (backend_start_config(&bp, config, vms, NULL, 10000, err,
				 sizeof(err)) < 0)
		give_up("starting a back-end with two VMs", err);
	victim = open_vm("b", "VM b's session");
	test_dripping_message(victim);
	test_unread_replies(victim);
	test_open_state_pipe(victim);
	vu_frontend_free(victim);
	tap_ok(backend_running(&bp), "the back-end serving both lives on");
	st = backend_stop(&bp, 5000);
	tap_ok(st == 0, "that back-end exits with status 0 on SIGTERM (it %s)",
	       backend_describe(&bp));
	if (tap_failures())
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, tap_failures() != 0);
}

int main(void)
{
	char err[512];
	int base_fds, fds, st;
	bool keep;

	setvbuf(stdout, NULL, _IOLBF, 0);
	st = backend_start(&bp, backend_args, 10000, err, sizeof(err));
	if (!tap_ok(st == 0, "back-end starts and creates its socket"))
		give_up("starting the back-end", err);

	test_guest_like_session();
	test_stop_continue();
	test_connections();
	base_fds = settled_fd_count(-1);
	tap_diag("back-end holds %d fds with no front-end connected:",
		 base_fds);
	list_backend_fds();
	fd_snapshot(base_fd_snap);
	tap_ok(fresh_session_works(), "a plain session works");
	check_fds_after("a plain session");
	test_bad_chains();
	test_bad_messages();
	test_set_config_ignored();
	test_kick_not_eventfd();
	test_call_fd_full_pipe();

	fds = settled_fd_count(base_fds);
	if (fds != base_fds)
		list_backend_fds();
	tap_ok(fds <= base_fds,
	       "no fd leaked over %zu bad sessions (%d open, %d before)",
	       sizeof(chain_cases) / sizeof(chain_cases[0]) +
		   sizeof(msg_cases) / sizeof(msg_cases[0]) + 2,
	       fds, base_fds);
	st = backend_stop(&bp, 5000);
	if (!tap_ok(st == 0, "back-end exits with status 0 on SIGTERM (it %s)",
		    backend_describe(&bp)))
		backend_dump_log(&bp, 40);
	keep = tap_failures() ||
	       (getenv("PVO_TEST_KEEP") && *getenv("PVO_TEST_KEEP") == '1');
	if (tap_failures())
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, keep);

	test_hostile_frontend();
	test_stalling_frontends();
	tap_done_testing();
	return tap_exit_status();
}
