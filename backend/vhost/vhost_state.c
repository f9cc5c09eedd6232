// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Device state transfer (VHOST_USER_PROTOCOL_F_DEVICE_STATE): the
 * front-end hands over a pipe with SET_DEVICE_STATE_FD and asks for the
 * result with CHECK_DEVICE_STATE; QEMU reads or writes the pipe while it
 * waits for our replies.
 *
 * A save streams from the VM's own loop: each time the pipe can take
 * bytes, one callback takes a chunk of at most SAVE_CHUNK from the
 * state saver (migration/state.h) and writes what the pipe takes, so the
 * loop serves every other VM between chunks and no copy of the whole
 * state exists. A load is read by a thread that owns only its buffer;
 * the loop waits for it only at CHECK_DEVICE_STATE, for CHECK_WAIT_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "state.h"
#include "state_format.h"
#include "vhost_dev.h"
#include "vhost_state.h"
#include "vm.h"

enum { DIR_SAVE = 0, DIR_LOAD = 1 };
#define PHASE_STOPPED 0
#define REPLY_NO_FD (1ull << 8)

/*
 * How long CHECK_DEVICE_STATE waits for the transfer to end. QEMU asks
 * only once its end of the pipe saw the end of the state (save: we closed
 * ours) or is closed (load), so at most a pipe's worth of bytes is left
 * to move. The loop waits meanwhile: a front-end that keeps its end open
 * or stops reading fails its migration after this, its session and VM
 * run on. A second leaves room for a thread descheduled on a loaded host.
 */
#define CHECK_WAIT_MS 1000

/* The most of the stream one callback of a save produces and writes. */
#define SAVE_CHUNK (256u << 10)

struct pvo_state_xfer {
	struct pvo_vhost *vh;
	int fd;		/* ours; -1 once closed */
	bool load;
	int error;	/* errno of the transfer, 0 */
	/* a save, on the loop */
	struct pvo_state_saver *saver;
	struct pvo_watch *watch;  /* the pipe's POLLOUT */
	uint8_t *chunk;
	size_t pos, len;	  /* of the chunk: written, produced */
	bool last;		  /* the chunk ends the stream */
	bool saved;		  /* the save ended (error says how) */
	/* a load, on a thread */
	GThread *thread;
	int stop;	/* eventfd: ends the thread's wait for the pipe */
	GByteArray *buf;
	GMutex lock;
	GCond ended;
	bool done;	/* under lock: the thread is about to return */
};

/* Waits for the pipe (events) or a stop: false for a stop. */
static bool wait_pipe(struct pvo_state_xfer *x, short events)
{
	struct pollfd p[2] = {
		{ .fd = x->fd, .events = events },
		{ .fd = x->stop, .events = POLLIN },
	};

	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return true;	/* the read or write says why */
	if (p[1].revents) {
		x->error = ETIMEDOUT;
		return false;
	}
	return true;
}

static void xfer_load(struct pvo_state_xfer *x)
{
	uint8_t chunk[65536];
	ssize_t n;

	while (wait_pipe(x, POLLIN)) {
		n = read(x->fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			x->error = errno;
			break;
		}
		if (n == 0)
			break;
		if (x->buf->len + (size_t)n > PVO_STATE_MAX_BYTES) {
			x->error = EFBIG;
			break;
		}
		g_byte_array_append(x->buf, chunk, (guint)n);
	}
}

static gpointer xfer_run(gpointer data)
{
	struct pvo_state_xfer *x = data;

	xfer_load(x);
	close(x->fd);
	g_mutex_lock(&x->lock);
	x->done = true;
	g_cond_signal(&x->ended);
	g_mutex_unlock(&x->lock);
	return NULL;
}

/* Whether the load's thread ended within CHECK_WAIT_MS. */
static bool load_wait(struct pvo_state_xfer *x)
{
	gint64 end = g_get_monotonic_time() + CHECK_WAIT_MS * 1000;
	bool done;

	g_mutex_lock(&x->lock);
	while (!x->done && g_cond_wait_until(&x->ended, &x->lock, end))
		;
	done = x->done;
	g_mutex_unlock(&x->lock);
	return done;
}

/* Ends a save: what it holds goes, its end of the pipe closes (the
 * front-end sees the end of the stream, then asks for the result). */
static void save_end(struct pvo_state_xfer *x, int error, const char *why)
{
	const char *vm = pvo_vm_name(x->vh->vm);

	if (x->saved)
		return;
	x->saved = true;
	x->error = error;
	if (error)
		pvo_info(vm, "device state save failed: %s", why ? why
				 : g_strerror(error));
	else
		pvo_info(vm, "saved the VM's RDMA state (%llu bytes) for "
			 "migration", (unsigned long long)
			 pvo_state_saver_bytes(x->saver));
	pvo_loop_remove_fd(x->watch);
	x->watch = NULL;
	close(x->fd);
	x->fd = -1;
	pvo_state_saver_free(x->saver);
	x->saver = NULL;
	g_free(x->chunk);
	x->chunk = NULL;
}

/* Why the VM can no longer be saved as it was when the save began, or
 * NULL: a front-end that started its rings or handed it over. */
static const char *save_moot(struct pvo_state_xfer *x)
{
	struct pvo_vhost *vh = x->vh;

	if (vh != vh->vm->vhost)
		return "the VM went to another front-end";
	if (pvo_vhost_any_ring_started(vh))
		return "its rings started during the save";
	return NULL;
}

/* One chunk of the save: produced if the last one is written, then
 * written as far as the pipe takes it. */
static void save_chunk(struct pvo_state_xfer *x)
{
	enum pvo_state_saver_status st;
	const char *moot = save_moot(x);
	ssize_t n;

	if (moot) {
		save_end(x, ECANCELED, moot);
		return;
	}
	if (x->pos == x->len && !x->last) {
		x->len = pvo_state_saver_read(x->saver, x->chunk, SAVE_CHUNK,
					      &st);
		x->pos = 0;
		if (st == PVO_SAVE_FAILED) {
			save_end(x, EFBIG, pvo_state_saver_error(x->saver));
			return;
		}
		x->last = st == PVO_SAVE_END;
	}
	while (x->pos < x->len) {
		n = write(x->fd, x->chunk + x->pos, x->len - x->pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			save_end(x, n < 0 ? errno : EPIPE, NULL);
			return;
		}
		x->pos += (size_t)n;
	}
	if (x->last)
		save_end(x, 0, NULL);
}

static gboolean on_pipe_writable(gint fd, GIOCondition cond, gpointer data)
{
	struct pvo_state_xfer *x = data;

	save_chunk(x);
	/* save_end removed the watch if the save ended */
	return G_SOURCE_CONTINUE;
}

/* CHECK_DEVICE_STATE before the save ended (QEMU asks once it read the
 * end): goes on for CHECK_WAIT_MS at most, waiting for the pipe without
 * ever blocking on it. Whether it ended. */
static bool save_wait(struct pvo_state_xfer *x)
{
	gint64 end = g_get_monotonic_time() + CHECK_WAIT_MS * 1000;
	struct pollfd p = { .fd = x->fd, .events = POLLOUT };
	gint64 left;

	while (!x->saved) {
		left = end - g_get_monotonic_time();
		if (left <= 0)
			return false;
		if (poll(&p, 1, (int)((left + 999) / 1000)) < 0 &&
		    errno != EINTR)
			return false;
		if (p.revents)
			save_chunk(x);
	}
	return true;
}

/* Stops the transfer wherever it is: a load's thread is stopped, so the
 * join is short. */
static void xfer_free(struct pvo_state_xfer *x)
{
	if (!x)
		return;
	if (x->thread) {
		eventfd_write(x->stop, 1);
		g_thread_join(x->thread);
	}
	if (x->stop >= 0)
		close(x->stop);
	pvo_loop_remove_fd(x->watch);
	if (!x->load && x->fd >= 0)
		close(x->fd);
	pvo_state_saver_free(x->saver);
	g_free(x->chunk);
	g_mutex_clear(&x->lock);
	g_cond_clear(&x->ended);
	if (x->buf)
		g_byte_array_free(x->buf, TRUE);
	g_free(x);
}

void pvo_vhost_state_forget(struct pvo_vhost *vh)
{
	xfer_free(vh->xfer);
	vh->xfer = NULL;
	if (vh->loaded)
		g_byte_array_free(vh->loaded, TRUE);
	vh->loaded = NULL;
}

static struct pvo_state_xfer *xfer_new(struct pvo_vhost *vh, bool load,
				       int fd)
{
	struct pvo_state_xfer *x = g_new0(struct pvo_state_xfer, 1);

	x->vh = vh;
	x->load = load;
	x->fd = fd;
	x->stop = -1;
	g_mutex_init(&x->lock);
	g_cond_init(&x->ended);
	/* the front-end's end is its own: ours never blocks the loop or the
	 * thread past a stop */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return x;
}

/* A load's thread: false (logged) if it cannot start. */
static bool load_start(struct pvo_state_xfer *x)
{
	x->stop = eventfd(0, EFD_CLOEXEC);
	if (x->stop < 0) {
		pvo_info(pvo_vm_name(x->vh->vm), "device state transfer: "
			 "eventfd: %s", g_strerror(errno));
		return false;
	}
	x->buf = g_byte_array_new();
	x->thread = g_thread_new("pvo-state", xfer_run, x);
	return true;
}

/* A save from the loop, from the pipe's first POLLOUT on. */
static bool save_start(struct pvo_state_xfer *x)
{
	struct pvo_vm *vm = x->vh->vm;

	x->watch = pvo_loop_add_fd(x->fd, G_IO_OUT, on_pipe_writable, x);
	if (!x->watch) {
		pvo_info(pvo_vm_name(vm), "device state save: cannot wait on "
			 "its pipe: %s", g_strerror(errno));
		return false;
	}
	x->saver = pvo_state_saver_new(vm);
	x->chunk = g_malloc(SAVE_CHUNK);
	pvo_info(pvo_vm_name(vm), "saving the VM's RDMA state for migration");
	return true;
}

static uint64_t set_fd(struct pvo_vhost *vh, VhostUserMsg *m)
{
	struct pvo_vm *vm = vh->vm;
	struct pvo_state_xfer *x;
	uint32_t dir, phase;
	bool ok;

	if (m->size < 8 || m->fd_num != 1) {
		pvo_info(pvo_vm_name(vm), "SET_DEVICE_STATE_FD without its "
					  "parameters or pipe: refused");
		return 1;
	}
	memcpy(&dir, &m->payload, 4);
	memcpy(&phase, (uint8_t *)&m->payload + 4, 4);
	if (phase != PHASE_STOPPED || (dir != DIR_SAVE && dir != DIR_LOAD)) {
		pvo_info(pvo_vm_name(vm),
			 "device state transfer: direction "
			 "%u, phase %u not supported",
			 dir, phase);
		return 1;
	}
	if (dir == DIR_SAVE && !pvo_vm_migratable(vm))
		return 1;
	if (dir == DIR_SAVE &&
	    (vh != vm->vhost || pvo_vhost_any_ring_started(vh))) {
		pvo_info(pvo_vm_name(vm), "device state save refused: %s",
			 vh != vm->vhost ? "this front-end does not own the VM"
					 : "its rings still run");
		return 1;
	}
	pvo_vhost_state_forget(vh);
	x = xfer_new(vh, dir == DIR_LOAD, m->fds[0]);
	m->fd_num = 0; /* the transfer closes it */
	ok = x->load ? load_start(x) : save_start(x);
	if (!ok) {
		if (x->load)
			close(x->fd); /* no thread to close it */
		xfer_free(x);
		return 1;
	}
	vh->xfer = x;
	return REPLY_NO_FD;
}

/* The end of a load: its stream checked, kept for the VM's start. */
static uint64_t load_result(struct pvo_vhost *vh, struct pvo_state_xfer *x)
{
	struct pvo_vm *vm = vh->vm;
	char *err = NULL;

	g_thread_join(x->thread); /* it has returned or is about to */
	x->thread = NULL;
	if (x->error) {
		pvo_info(pvo_vm_name(vm), "device state load failed: %s",
			 g_strerror(x->error));
		return 1;
	}
	if (!pvo_state_check(vm->cfg, x->buf->data, x->buf->len, &err)) {
		pvo_info(pvo_vm_name(vm), "migrated state refused: %s", err);
		g_free(err);
		return 1;
	}
	pvo_info(pvo_vm_name(vm),
		 "migrated state accepted (%u "
		 "bytes); applied when the VM starts",
		 x->buf->len);
	vh->loaded = x->buf;
	x->buf = NULL;
	return 0;
}

static uint64_t check(struct pvo_vhost *vh)
{
	struct pvo_vm *vm = vh->vm;
	struct pvo_state_xfer *x = vh->xfer;
	uint64_t ret;

	if (!x) {
		pvo_info(pvo_vm_name(vm), "CHECK_DEVICE_STATE without a "
					  "transfer: refused");
		return 1;
	}
	if (!(x->load ? load_wait(x) : save_wait(x))) {
		pvo_info(pvo_vm_name(vm),
			 "device state %s did not end within %d ms of "
			 "CHECK_DEVICE_STATE (the front-end keeps its end of "
			 "the pipe open%s?): the migration fails, the VM runs "
			 "on",
			 x->load ? "load" : "save", CHECK_WAIT_MS,
			 x->load ? "" : " or stopped reading it");
		ret = 1;
	} else {
		ret = x->load ? load_result(vh, x) : x->error != 0;
	}
	xfer_free(x);
	vh->xfer = NULL;
	return ret;
}

bool pvo_vhost_state_msg(struct pvo_vhost *vh, VhostUserMsg *m)
{
	uint64_t ret;

	switch (m->request) {
	case PVO_VHOST_USER_SET_DEVICE_STATE_FD:
		ret = set_fd(vh, m);
		break;
	case PVO_VHOST_USER_CHECK_DEVICE_STATE:
		ret = check(vh);
		break;
	default:
		return false;
	}
	pvo_vhost_msg_close_fds(m);
	m->size = sizeof(m->payload.u64);
	m->payload.u64 = ret;
	return true;
}
