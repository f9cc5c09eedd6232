// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Device state transfer (VHOST_USER_PROTOCOL_F_DEVICE_STATE): the
 * front-end hands over a pipe with SET_DEVICE_STATE_FD and asks for the
 * result with CHECK_DEVICE_STATE. The pipe is served by a thread that
 * owns only the buffer, so that QEMU can read or write it while it waits
 * for our replies; the main loop waits for it only at CHECK_DEVICE_STATE,
 * and only for CHECK_WAIT_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
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
 * only once its end of the pipe saw the end of the state (save) or is
 * closed (load), so at most a pipe's worth of bytes is left to move. The
 * loop every VM shares waits meanwhile: a front-end that keeps its end
 * open fails its migration after this, its session and VM run on. A
 * second leaves room for a thread descheduled on a loaded host.
 */
#define CHECK_WAIT_MS 1000

struct pvo_state_xfer {
	GThread *thread;
	int fd;
	int stop;	/* eventfd: ends the thread's wait for the pipe */
	bool load;
	GByteArray *buf;
	int error;	/* errno of the transfer, 0 */
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

/* The pipe is non-blocking: a stop ends the transfer at any point. */
static void xfer_save(struct pvo_state_xfer *x)
{
	size_t done = 0;
	ssize_t n;

	while (done < x->buf->len && wait_pipe(x, POLLOUT)) {
		n = write(x->fd, x->buf->data + done, x->buf->len - done);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			x->error = n < 0 ? errno : EPIPE;
			break;
		}
		done += (size_t)n;
	}
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

	if (x->load)
		xfer_load(x);
	else
		xfer_save(x);
	close(x->fd);
	g_mutex_lock(&x->lock);
	x->done = true;
	g_cond_signal(&x->ended);
	g_mutex_unlock(&x->lock);
	return NULL;
}

/* Whether the transfer ended within CHECK_WAIT_MS. */
static bool xfer_wait(struct pvo_state_xfer *x)
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

/* Stops the thread wherever it waits: the join is short. */
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

static uint64_t set_fd(struct pvo_vhost *vh, VhostUserMsg *m)
{
	struct pvo_vm *vm = vh->vm;
	struct pvo_state_xfer *x;
	uint32_t dir, phase;

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
	x = g_new0(struct pvo_state_xfer, 1);
	g_mutex_init(&x->lock);
	g_cond_init(&x->ended);
	x->stop = eventfd(0, EFD_CLOEXEC);
	if (x->stop < 0) {
		pvo_info(pvo_vm_name(vm), "device state transfer: eventfd: "
			 "%s", g_strerror(errno));
		xfer_free(x);
		return 1;
	}
	x->load = dir == DIR_LOAD;
	x->fd = m->fds[0];
	m->fd_num = 0; /* the thread closes it */
	/* the front-end's end is its own: ours never blocks the thread
	 * past a stop */
	fcntl(x->fd, F_SETFL, fcntl(x->fd, F_GETFL) | O_NONBLOCK);
	if (x->load) {
		x->buf = g_byte_array_new();
	} else {
		x->buf = pvo_state_save(vm);
		if (!x->buf) {
			close(x->fd); /* no thread to close it */
			xfer_free(x);
			return 1;
		}
		pvo_info(pvo_vm_name(vm),
			 "saving the VM's RDMA state "
			 "(%u bytes) for migration",
			 x->buf->len);
	}
	x->thread = g_thread_new("pvo-state", xfer_run, x);
	vh->xfer = x;
	return REPLY_NO_FD;
}

static uint64_t check(struct pvo_vhost *vh)
{
	struct pvo_vm *vm = vh->vm;
	struct pvo_state_xfer *x = vh->xfer;
	char *err = NULL;
	uint64_t ret = 1;

	if (!x) {
		pvo_info(pvo_vm_name(vm), "CHECK_DEVICE_STATE without a "
					  "transfer: refused");
		return 1;
	}
	if (!xfer_wait(x)) {
		pvo_info(pvo_vm_name(vm),
			 "device state %s did not end within %d ms of "
			 "CHECK_DEVICE_STATE (the front-end keeps its end of "
			 "the pipe open?): the migration fails, the VM runs "
			 "on",
			 x->load ? "load" : "save", CHECK_WAIT_MS);
		xfer_free(x);
		vh->xfer = NULL;
		return 1;
	}
	g_thread_join(x->thread); /* it has returned or is about to */
	x->thread = NULL;
	if (x->error) {
		pvo_info(pvo_vm_name(vm), "device state %s failed: %s",
			 x->load ? "load" : "save", g_strerror(x->error));
	} else if (!x->load) {
		ret = 0;
	} else if (!pvo_state_check(vm->cfg, x->buf->data, x->buf->len, &err)) {
		pvo_info(pvo_vm_name(vm), "migrated state refused: %s", err);
		g_free(err);
	} else {
		pvo_info(pvo_vm_name(vm),
			 "migrated state accepted (%u "
			 "bytes); applied when the VM starts",
			 x->buf->len);
		vh->loaded = x->buf;
		x->buf = NULL;
		ret = 0;
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
