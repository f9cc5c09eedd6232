// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A migration's save through SET_DEVICE_STATE_FD (vhost/vhost_state.c),
 * driven as the VM's loop would: the stream of a VM with MRs of many runs
 * (several MiB) goes through a pipe a chunk per callback while another
 * source of the loop runs between chunks, also while the reader stalls;
 * it is the stream pvo_state_save writes. A save over the stream's limit,
 * a reader that never reads, a second save, a session's end, rings that
 * start and objects that go away mid-save each fail that save alone: the
 * VM keeps its objects and a later save works.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <glib.h>

#include "config.h"
#include "fake_guest.h"
#include "loop.h"
#include "state.h"
#include "state_format.h"
#include "tap.h"
#include "vhost_state.h"

#define MRS 24
#define PAGES 16384	   /* 64 MiB MRs of pages alternating: a run a page */
#define CHUNK (256u << 10) /* vhost_state.c's SAVE_CHUNK */

static const char conf[] = "[tenant t]\nvni=5\n[vm g]\ntenant=t\n"
			   "mac=52:54:00:ab:cd:ef\nsocket=/tmp/unused.sock\n"
			   "max-mr=64\n";

static struct fake_guest g;
static struct pvo_daemon_config *cfg;
static GByteArray *ref; /* the one-shot stream */

/* stderr into a file, to read what the back-end logged */
static int saved_stderr = -1;
static FILE *log_file;

static void log_capture(void)
{
	fflush(stderr);
	log_file = tmpfile();
	saved_stderr = dup(2);
	dup2(fileno(log_file), 2);
}

/* What was logged since log_capture (free it). */
static char *log_release(void)
{
	char *s;
	long n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	n = ftell(log_file);
	s = g_malloc0((size_t)n + 1);
	rewind(log_file);
	if (fread(s, 1, (size_t)n, log_file) != (size_t)n)
		s[0] = 0;
	fclose(log_file);
	fputs(s, stderr);
	return s;
}

static uint64_t state_msg(int request, uint32_t dir, int fd)
{
	VhostUserMsg m = {0};
	uint32_t params[2] = {dir, 0 /* stopped */};

	m.request = request;
	if (request == PVO_VHOST_USER_SET_DEVICE_STATE_FD) {
		m.size = sizeof(params);
		memcpy(&m.payload, params, sizeof(params));
		m.fds[0] = fd;
		m.fd_num = 1;
	}
	if (!pvo_vhost_state_msg(&g.vhost, &m))
		tap_bail("message %d not handled", request);
	return m.payload.u64;
}

/* A save on a fresh pipe: our end (non-blocking) in *rd. */
static bool save_start(int *rd, int pipe_size)
{
	int p[2];
	uint64_t r;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		tap_bail("pipe: %s", strerror(errno));
	if (pipe_size)
		fcntl(p[0], F_SETPIPE_SZ, pipe_size);
	r = state_msg(PVO_VHOST_USER_SET_DEVICE_STATE_FD, 0, p[1]);
	*rd = p[0];
	return (r & 0xff) == 0;
}

static bool check_ok(void)
{
	return state_msg(PVO_VHOST_USER_CHECK_DEVICE_STATE, 0, -1) == 0;
}

/* Appends what the pipe holds to s: -1 at its end, else the bytes. */
static long drain(int fd, GByteArray *s)
{
	uint8_t buf[65536];
	long got = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		g_byte_array_append(s, buf, (guint)n);
		got += n;
	}
	return n == 0 ? -1 : got;
}

static void iterate(void)
{
	g_main_context_iteration(NULL, FALSE);
}

/* Runs the loop, reading everything, until the pipe's end: the stream. */
static GByteArray *read_all(int rd)
{
	GByteArray *s = g_byte_array_new();
	unsigned int i;

	for (i = 0; i < 1000000 && drain(rd, s) >= 0; i++)
		iterate();
	close(rd);
	return s;
}

static bool is_ref(const GByteArray *s)
{
	return s->len == ref->len && !memcmp(s->data, ref->data, s->len);
}

/* Another VM's work on the loop: an eventfd that stays readable. */
static unsigned long others;

static gboolean other_vm(gint fd, GIOCondition cond, gpointer data)
{
	others++;
	return G_SOURCE_CONTINUE;
}

static void setup(void)
{
	struct pvo_cmd_reg_mr cmd = {0};
	struct pvo_resp_reg_mr rr;
	struct pvo_resp_alloc_pd r;
	uint64_t *gpas, a, b;
	char *err = NULL;
	uint32_t i;

	cfg = pvo_config_parse("t", conf, &err);
	if (!cfg)
		tap_bail("config: %s", err);
	fg_init(&g, &cfg->vms[0]);
	fg_cmd(&g, PVO_CMD_ALLOC_PD, 0, NULL, 0, &r, sizeof(r));
	a = fg_alloc(&g, 1);
	fg_alloc(&g, 1);
	b = fg_alloc(&g, 1);
	gpas = g_new(uint64_t, PAGES);
	for (i = 0; i < PAGES; i++)
		gpas[i] = i & 1 ? b : a;
	fg_pdir(&g, gpas, PAGES, &cmd.pages);
	cmd.pd = r.pd;
	cmd.access = htole32(PVO_ACCESS_LOCAL_WRITE);
	cmd.length = htole64((uint64_t)PAGES * 4096);
	for (i = 0; i < MRS; i++) {
		cmd.iova = htole64((uint64_t)i << 32);
		if (fg_cmd(&g, PVO_CMD_REG_MR, 0, &cmd, sizeof(cmd), &rr,
			   sizeof(rr)))
			tap_bail("REG_MR %u refused", i);
	}
	g_free(gpas);
	ref = pvo_state_save(g.vm);
	if (!ref)
		tap_bail("no one-shot stream");
	/* as QEMU saves: rings stopped, the VM frozen */
	g.vqs[PVO_VQ_DB_FIRST_USER].started = false;
	g.vqs[PVO_VQ_DB_FIRST_USER + 1].started = false;
	g.vm->frozen = true;
}

static void test_streams(void)
{
	GByteArray *s = g_byte_array_new();
	unsigned long before, stalled_others = 0;
	unsigned int i, data_iters = 0, lonely = 0, stalled_data = 0;
	long got, most = 0;
	int rd, efd = eventfd(1, EFD_CLOEXEC);
	struct pvo_watch *w = pvo_loop_add_fd(efd, G_IO_IN, other_vm, NULL);
	bool ok = save_start(&rd, 1 << 20);

	tap_ok(ok && ref->len > 3 * CHUNK,
	       "SET_DEVICE_STATE_FD (save) of a %u-byte state is taken",
	       ref->len);
	for (i = 0; i < 1000000; i++) {
		before = others;
		iterate();
		if (i >= 3 && i < 50) {
			/* the reader stalls: the pipe fills */
			stalled_others += others - before;
			continue;
		}
		got = drain(rd, s);
		if (i == 50) {
			stalled_data = (unsigned int)got; /* the backlog */
			continue;
		}
		if (got < 0)
			break;
		if (got > 0) {
			data_iters++;
			most = MAX(most, got);
			lonely += others == before;
		}
	}
	close(rd);
	tap_ok(is_ref(s),
	       "the stream through the pipe is the one-shot "
	       "stream (%u bytes)",
	       s->len);
	tap_ok(most <= (long)CHUNK &&
		   data_iters >= (ref->len - stalled_data) / CHUNK,
	       "... written a chunk of at most %u bytes per callback (%u "
	       "callbacks, at most %ld bytes)",
	       CHUNK, data_iters, most);
	tap_ok(!lonely,
	       "... another VM's callback ran between every two "
	       "chunks (%u times not)",
	       lonely);
	tap_ok(stalled_others >= 40 && stalled_data > 0,
	       "... and while the reader stalled, the pipe full (%lu "
	       "times; %u bytes waited)",
	       stalled_others, stalled_data);
	tap_ok(check_ok(), "CHECK_DEVICE_STATE reports success");
	pvo_loop_remove_fd(w);
	close(efd);
	g_byte_array_free(s, TRUE);
}

static void test_limit(void)
{
	uint32_t mrs = g.vm->mrs.count;
	GByteArray *s;
	char *log;
	int rd;

	pvo_state_save_limit = ref->len / 2;
	log_capture();
	save_start(&rd, 0);
	s = read_all(rd);
	tap_ok(s->len > 0 && s->len <= ref->len / 2 &&
		   !memcmp(s->data, ref->data, s->len),
	       "a save over the stream's limit stops within it (%u of %u "
	       "bytes)",
	       s->len, ref->len);
	tap_ok(!check_ok(), "... CHECK_DEVICE_STATE reports the failure");
	log = log_release();
	tap_ok(strstr(log, "takes more than") && strstr(log, "max-host-mem"),
	       "... the log says why and what to do");
	g_free(log);
	pvo_state_save_limit = PVO_STATE_MAX_BYTES;
	g_byte_array_free(s, TRUE);
	tap_ok(g.vm->mrs.count == mrs, "... the VM keeps its objects");
	save_start(&rd, 0);
	s = read_all(rd);
	tap_ok(is_ref(s) && check_ok(), "... and a later save works");
	g_byte_array_free(s, TRUE);
}

static void test_unread(void)
{
	gint64 t;
	GByteArray *s;
	char *log;
	bool failed, ended;
	int rd, i;

	save_start(&rd, 0);
	for (i = 0; i < 50; i++)
		iterate();
	log_capture();
	t = g_get_monotonic_time();
	failed = !check_ok();
	t = (g_get_monotonic_time() - t) / 1000;
	log = log_release();
	tap_ok(failed && t >= 900 && t < 5000,
	       "a reader that never reads: CHECK_DEVICE_STATE fails after "
	       "its wait (%lld ms)",
	       (long long)t);
	tap_ok(strstr(log, "did not end within") != NULL,
	       "... the log says why");
	g_free(log);
	s = g_byte_array_new();
	ended = drain(rd, s) < 0;
	tap_ok(ended && s->len > 0 && !memcmp(s->data, ref->data, s->len),
	       "... our end of the pipe is closed (%u bytes were in it)",
	       s->len);
	close(rd);
	g_byte_array_free(s, TRUE);
	save_start(&rd, 0);
	s = read_all(rd);
	tap_ok(is_ref(s) && check_ok(), "... and a later save works");
	g_byte_array_free(s, TRUE);
}

/* A save begun and read a little: its pipe's read end, what came. */
static GByteArray *half_save(int *rd)
{
	GByteArray *s = g_byte_array_new();
	int i;

	save_start(rd, 0);
	for (i = 0; i < 8; i++) {
		iterate();
		drain(*rd, s);
	}
	return s;
}

/* Whether the pipe ends (its writer gone) after at most what it holds. */
static bool ends(int rd, GByteArray *s)
{
	unsigned int i;
	bool end = false;

	for (i = 0; i < 100 && !end; i++) {
		iterate();
		end = drain(rd, s) < 0;
	}
	close(rd);
	return end;
}

static void test_dropped(void)
{
	GByteArray *s, *s2;
	int rd, rd2;

	s = half_save(&rd);
	pvo_vhost_state_forget(&g.vhost); /* what a session's end does */
	tap_ok(s->len < ref->len && ends(rd, s),
	       "a save the session's end forgets closes its pipe (after %u "
	       "bytes)",
	       s->len);
	g_byte_array_free(s, TRUE);

	s = half_save(&rd);
	if (!save_start(&rd2, 0))
		tap_diag("second SET_DEVICE_STATE_FD refused");
	tap_ok(ends(rd, s), "a second SET_DEVICE_STATE_FD drops the first "
			    "save");
	s2 = read_all(rd2);
	tap_ok(is_ref(s2) && check_ok(), "... and makes its own");
	g_byte_array_free(s, TRUE);
	g_byte_array_free(s2, TRUE);

	s = half_save(&rd);
	g.vqs[PVO_VQ_DB_FIRST_USER].started = true;
	tap_ok(ends(rd, s) && !check_ok(),
	       "a ring that starts during a save fails it");
	g.vqs[PVO_VQ_DB_FIRST_USER].started = false;
	g_byte_array_free(s, TRUE);

	s = half_save(&rd);
	pvo_vm_reset_guest_state(g.vm);
	tap_ok(ends(rd, s) && !check_ok(),
	       "objects that go away during a save fail it, never read "
	       "(%u bytes came)",
	       s->len);
	g_byte_array_free(s, TRUE);
	pvo_vhost_state_forget(&g.vhost);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* as the daemon */
	tap_plan(20);
	setup();
	test_streams();
	test_limit();
	test_unread();
	test_dropped();
	g_byte_array_free(ref, TRUE);
	fg_fini(&g);
	pvo_config_free(cfg);
	return tap_done();
}
