// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Device state transfer (VHOST_USER_PROTOCOL_F_DEVICE_STATE): the
 * front-end hands over a pipe with SET_DEVICE_STATE_FD and asks for the
 * result with CHECK_DEVICE_STATE. The pipe is served by a thread that
 * owns only the buffer, so that QEMU can read or write it while it waits
 * for our replies; the main loop is never blocked on it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

struct pvo_state_xfer {
	GThread *thread;
	int fd;
	bool load;
	GByteArray *buf;
	int error; /* errno of the transfer, 0 */
};

static gpointer xfer_run(gpointer data)
{
	struct pvo_state_xfer *x = data;
	size_t done = 0;
	ssize_t n;

	if (!x->load) {
		while (done < x->buf->len) {
			n = write(x->fd, x->buf->data + done,
				  x->buf->len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				x->error = n < 0 ? errno : EPIPE;
				break;
			}
			done += (size_t)n;
		}
	} else {
		uint8_t chunk[65536];

		for (;;) {
			n = read(x->fd, chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
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
	close(x->fd);
	return NULL;
}

static void xfer_free(struct pvo_state_xfer *x)
{
	if (!x)
		return;
	if (x->thread)
		g_thread_join(x->thread);
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
	x->load = dir == DIR_LOAD;
	x->fd = m->fds[0];
	m->fd_num = 0; /* the thread closes it */
	if (x->load) {
		x->buf = g_byte_array_new();
	} else {
		x->buf = pvo_state_save(vm);
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
	g_thread_join(x->thread);
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
