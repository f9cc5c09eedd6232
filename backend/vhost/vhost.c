// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user glue: accepts one front-end (QEMU) per VM socket and runs
 * libvhost-user on it in the glib main loop. Protocol errors and
 * disconnects drop the connection and the guest's objects; the socket
 * keeps listening so that the VM (or a restarted QEMU) can connect again.
 *
 * Live migration within this back-end: while the VM is connected, one
 * more front-end may connect, the destination QEMU. It may load the VM's
 * state (vhost_state.c) and takes over at its first ring start, once the
 * source's rings have stopped; the source's session stays, retired,
 * until its QEMU leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib-unix.h>

#include "ctrl.h"
#include "device.h"
#include "doorbell.h"
#include "event.h"
#include "iov.h"
#include "log.h"
#include "loop.h"
#include "mr.h"
#include "moves.h"
#include "state.h"
#include "timer.h"
#include "transport.h"
#include "vhost.h"
#include "vhost_dev.h"
#include "vhost_msg.h"
#include "vhost_state.h"

#define VIRTIO_F_VERSION_1 32

/*
 * After the last ring of a switch-over started, for a front-end that
 * does not set DRIVER_OK (VHOST_USER_PROTOCOL_F_STATUS): QEMU starts them
 * in one burst, and completions need the event queue and interrupts
 * running. One that does thaws the VM with DRIVER_OK, once every ring
 * runs with its call fd; the longer delay only covers a lost status.
 */
#define THAW_DELAY_USEC 20000
#define THAW_STATUS_DELAY_USEC 1000000
/* how often a thaw that waits for the engine (engine.h vm_ready) looks */
#define THAW_RETRY_USEC 1000

static struct pvo_vhost *session_of(VuDev *dev)
{
	return container_of(dev, struct pvo_vhost, vug.parent);
}

static struct pvo_vm *vm_of(VuDev *dev)
{
	return session_of(dev)->vm;
}

/* The session that owns the VM (not a migration's other end). */
static bool owns_vm(VuDev *dev)
{
	return session_of(dev) == vm_of(dev)->vhost;
}

/* The running queue q, or NULL. */
static VuVirtq *started_queue(struct pvo_vm *vm, unsigned int q)
{
	VuDev *dev;

	if (!vm->connected)
		return NULL;
	dev = &vm->vhost->vug.parent;
	if (dev->broken || !dev->vq || q >= dev->max_queues ||
	    !vu_queue_started(dev, &dev->vq[q]))
		return NULL;
	return &dev->vq[q];
}

static bool queue_started(struct pvo_vm *vm, unsigned int q)
{
	return started_queue(vm, q) != NULL;
}

static int queue_put(struct pvo_vm *vm, unsigned int q, const void *data,
		     size_t len)
{
	VuVirtq *vq = started_queue(vm, q);
	VuDev *dev = &vm->vhost->vug.parent;
	VuVirtqElement *elem;
	int ret = -1;

	if (!vq)
		return 0;
	elem = vu_queue_pop(dev, vq, sizeof(*elem));
	if (!elem)
		return 0;
	if (iov_size(elem->in_sg, elem->in_num) < len) {
		vu_queue_push(dev, vq, elem, 0);
	} else {
		vu_queue_push(dev, vq, elem,
			      iov_from_buf_len(elem->in_sg, elem->in_num, data,
					       len));
		ret = 1;
	}
	free(elem);
	return ret;
}

static void queue_notify(struct pvo_vm *vm, unsigned int q)
{
	VuVirtq *vq = started_queue(vm, q);

	if (vq && vq->call_fd >= 0)
		vu_queue_notify(&vm->vhost->vug.parent, vq);
}

const struct pvo_vm_queues pvo_vhost_queues = {
	.started = queue_started,
	.put = queue_put,
	.notify = queue_notify,
};

/* VHOST_F_LOG_ALL: every write into guest memory marks the dirty log
 * (guest_mem.c), so a front-end can migrate the guest's memory. */
static uint64_t get_features(VuDev *dev)
{
	return 1ull << VIRTIO_F_VERSION_1 | 1ull << VHOST_F_LOG_ALL;
}

/* ... and its state moves with the migration stream (vhost_state.c). */
static uint64_t get_protocol_features(VuDev *dev)
{
	return 1ull << PVO_VHOST_USER_PROTOCOL_F_DEVICE_STATE |
	       1ull << PVO_VHOST_USER_PROTOCOL_F_STATUS;
}

static bool sets_status(VuDev *dev)
{
	return dev->protocol_features &
	       (1ull << PVO_VHOST_USER_PROTOCOL_F_STATUS);
}

static void set_features(VuDev *dev, uint64_t features)
{
	pvo_debug(pvo_vm_name(vm_of(dev)), "features 0x%" PRIx64 "%s",
		  features,
		  features & (1ull << VHOST_F_LOG_ALL) ? " (dirty logging)"
						      : "");
}

static void get_config_bytes(void *opaque, struct pvo_config *c)
{
	struct pvo_vm *vm = opaque;

	pvo_device_config(vm->cfg, c);
}

/* Only here so that libvhost-user offers VHOST_USER_PROTOCOL_F_CONFIG;
 * GET_CONFIG itself is answered in process_msg, which honours the offset. */
static int get_config(VuDev *dev, uint8_t *config, uint32_t len)
{
	return -1;
}

static int set_config(VuDev *dev, const uint8_t *data, uint32_t offset,
		      uint32_t size, uint32_t flags)
{
	pvo_info(pvo_vm_name(vm_of(dev)),
		 "ignored a write to the read-only config space");
	return -1;
}

/*
 * Control commands per callback: a guest that keeps the queue full (of
 * REG_MR / DEREG_MR pairs, say) must not keep the loop from the other
 * VMs. The rest go on the next turn (ctrl_more), before new kicks of the
 * same queue would bring them anyway.
 */
#define CTRL_PER_TURN 16
/*
 * And at most this many page directory entries, as registrations cost
 * (a 4 GiB REG_MR walks 1M): once a turn's commands walked this many, the
 * rest wait for the next turn. A REG_MR or REREG_MR of a longer list
 * walks PVO_MR_PAGES_PER_CALL entries a turn (mr.h): its chain is held
 * (ctrl_held) and executed again on the next turn until it is answered,
 * the commands behind it waiting, in order.
 */
#define CTRL_PAGES_PER_TURN PVO_MR_PAGES_PER_CALL
/*
 * A held command that waits for work off the loop (vm->ctrl_waits: a
 * host-verbs MR being pinned by its thread) is tried again this often,
 * not on every turn.
 */
#define CTRL_WAIT_US 1000

/* The next command: the one a turn left part-way, else a new chain
 * (its request copied: the guest may rewrite it while it goes on). */
static VuVirtqElement *ctrl_next(struct pvo_vhost *vh, VuVirtq *vq)
{
	VuVirtqElement *elem = vh->ctrl_held;

	if (elem) {
		vh->ctrl_held = NULL;
		return elem;
	}
	elem = vu_queue_pop(&vh->vug.parent, vq, sizeof(*elem));
	/* Gather at most the largest command; a longer one is truncated
	 * and fails its length checks only if the opcode needs more than
	 * fits. */
	if (elem)
		vh->ctrl_req_len =
		    iov_to_buf_len(elem->out_sg, elem->out_num, vh->ctrl_req,
				   sizeof(vh->ctrl_req));
	return elem;
}

/* Executes elem's command: false if it goes on (held for a later turn). */
static bool ctrl_run(struct pvo_vhost *vh, VuVirtq *vq, VuVirtqElement *elem)
{
	uint64_t resp[PVO_CTRL_MAX_MSG / 8];
	size_t room, len;

	room = MIN(iov_size(elem->in_sg, elem->in_num), sizeof(resp));
	len = pvo_ctrl_execute(vh->vm, vh->ctrl_req, vh->ctrl_req_len, resp,
			       room);
	if (len == PVO_CTRL_AGAIN) {
		vh->ctrl_held = elem;
		return false;
	}
	len = iov_from_buf_len(elem->in_sg, elem->in_num, resp, len);
	vu_queue_push(&vh->vug.parent, vq, elem, len);
	free(elem);
	return true;
}

/* Each descriptor chain of the control queue is one command. */
static void ctrl_kick(VuDev *dev, int qidx)
{
	struct pvo_vm *vm = vm_of(dev);
	struct pvo_vhost *vh = session_of(dev);
	VuVirtq *vq = vu_get_queue(dev, qidx);
	VuVirtqElement *elem;
	unsigned int budget = CTRL_PER_TURN;
	uint64_t pages0 = vm->gmem.pdir_pages;

	if (!owns_vm(dev))
		return;
	pvo_loop_serve(vm);
	while (budget && (elem = ctrl_next(vh, vq))) {
		budget--;
		if (!ctrl_run(vh, vq, elem))
			budget = 0;
		else if (vm->gmem.pdir_pages - pages0 >= CTRL_PAGES_PER_TURN)
			budget = 0;
	}
	if (!budget)
		pvo_timer_arm(&vh->ctrl_more,
			      vm->ctrl_waits ? CTRL_WAIT_US : 0);
	/* Until SET_VRING_CALL arrives there is nothing to signal; libvhost-user
	 * signals the new call fd once it gets it, so no completion is lost. */
	if (vq->call_fd >= 0)
		vu_queue_notify(dev, vq);
}

/*
 * The ring stops (a migration's last phase, a VM stop): a command held
 * part-way is finished now, as its index is already reported consumed.
 * One command, of at most PVO_PDIR_MAX_PAGES pages, in this callback
 * (a host-verbs MR: its pinning waited for).
 */
static void ctrl_finish_held(struct pvo_vhost *vh, VuVirtq *vq)
{
	VuVirtqElement *elem;

	while ((elem = vh->ctrl_held)) {
		vh->ctrl_held = NULL;
		if (!ctrl_run(vh, vq, elem) && vh->vm->ctrl_waits)
			g_usleep(CTRL_WAIT_US);
	}
	if (vq->call_fd >= 0)
		vu_queue_notify(&vh->vug.parent, vq);
}

/* A session that ends drops what its control queue held. */
static void ctrl_forget(struct pvo_vhost *vh)
{
	if (!vh->ctrl_held)
		return;
	free(vh->ctrl_held);
	vh->ctrl_held = NULL;
	pvo_mr_build_drop(vh->vm);
}

/* The control commands a callback left: the session that owns the VM
 * takes them, while the queue runs. */
static void ctrl_more(void *opaque)
{
	struct pvo_vhost *vh = opaque;

	if (vh == vh->vm->vhost && started_queue(vh->vm, PVO_VQ_CTRL))
		ctrl_kick(&vh->vug.parent, PVO_VQ_CTRL);
}

/* The driver posted event buffers: hand over what waits. */
static void event_kick(VuDev *dev, int qidx)
{
	if (owns_vm(dev))
		pvo_event_flush(vm_of(dev));
}

static void doorbell_kick(VuDev *dev, int qidx)
{
	struct pvo_vm *vm;

	if (!owns_vm(dev))
		return;
	vm = vm_of(dev);
	if (vm->thawed_us) {
		/* a pause after a migration that is the guest's, not ours */
		pvo_info(pvo_vm_name(vm),
			 "the guest rang its first doorbell %.1f ms after "
			 "the thaw",
			 (g_get_monotonic_time() - vm->thawed_us) / 1000.0);
		vm->thawed_us = 0;
	}
	pvo_doorbell_kick(vm, qidx);
}

/* The VM runs again after a migration's last phase (or a failed one):
 * requesters send what waits, peers reach it again. */
static void thaw(void *opaque)
{
	struct pvo_vm *vm = opaque;
	bool rebind;

	if (!vm->frozen || !vm->connected)
		return;
	/* a migrated MR still being registered (pinned) here: the VM's
	 * WQEs wait for it, the thaw looks again */
	if (!pvo_vm_engine_ready(vm)) {
		pvo_timer_arm(&vm->vhost->thaw, THAW_RETRY_USEC);
		return;
	}
	vm->frozen = false;
	vm->thawed_us = g_get_monotonic_time();
	/* its host QPs receive before any peer learns where it is (a
	 * datagram that finds no receive is lost) */
	rebind = pvo_vm_engine_thaw(vm);
	/* peers must know where it is before its first packet reaches them
	 * (else: wrong_vtep, and a lost round trip); the announcement
	 * carries its connections' rebind offer, which a failed migration
	 * sends alone */
	if (vm->announce_pending) {
		vm->announce_pending = false;
		pvo_overlay_announce(vm);
	} else if (rebind) {
		pvo_overlay_offer(vm);
	}
	pvo_local_routes_changed();
	pvo_state_resume(vm);
	pvo_transport_thawed(vm);
	pvo_info(pvo_vm_name(vm), "rings running again: RDMA traffic "
		 "resumes");
}

/*
 * SET_STATUS: QEMU sets DRIVER_OK once the rings of a start all run,
 * their call fds set, so a VM frozen for a switch-over (or a migration
 * that failed) thaws at once instead of after THAW_DELAY_USEC.
 */
static void status_set(struct pvo_vhost *vh, uint8_t status)
{
	struct pvo_vm *vm = vh->vm;

	vh->status = status;
	if (!(status & VIRTIO_CONFIG_S_DRIVER_OK) || vh != vm->vhost ||
	    !vm->frozen || !pvo_vhost_any_ring_started(vh))
		return;
	pvo_timer_cancel(&vh->thaw);
	thaw(vm);
}

static void freeze(struct pvo_vm *vm)
{
	if (vm->frozen)
		return;
	vm->frozen = true;
	pvo_timer_cancel(&vm->vhost->thaw);
	pvo_vm_engine_freeze(vm);
	pvo_info(pvo_vm_name(vm), "rings stopped while migrating: the VM's "
		 "memory stays untouched, its RDMA traffic waits");
}

/*
 * Replaces the VM's objects with the migrated ones. from_elsewhere: the
 * VM ran on another back-end, whose peers learn where it is now (the
 * switch-over's generation orders its moves, docs/migration.md).
 */
static void apply_loaded(struct pvo_vm *vm, struct pvo_vhost *vh,
			 bool from_elsewhere)
{
	char *err = NULL;

	pvo_vm_reset_guest_state(vm);
	if (!pvo_state_load(vm, vh->loaded->data, vh->loaded->len, &err)) {
		pvo_info(pvo_vm_name(vm), "the migrated state could not be "
			 "applied: %s; the guest's RDMA objects are lost",
			 err);
		g_free(err);
	} else if (!pvo_vm_engine_loaded(vm)) {
		pvo_info(pvo_vm_name(vm), "the migrated state could not be "
			 "made again on this host's RDMA device (above); the "
			 "guest's RDMA objects are lost");
		pvo_vm_reset_guest_state(vm);
	} else {
		pvo_info(pvo_vm_name(vm), "migrated state applied: %u QPs, "
			 "%u MRs, %u CQs", vm->qps.count, vm->mrs.count,
			 vm->cqs.count);
	}
	g_byte_array_free(vh->loaded, TRUE);
	vh->loaded = NULL;
	vm->move_gen = MAX(vm->move_gen + 1, (uint64_t)g_get_real_time());
	vm->moved_away = false;
	vm->announce_pending = from_elsewhere;
	vm->mem_gen++;
	pvo_local_routes_changed();
	vm->frozen = true; /* until the rings run: thaw() */
}

bool pvo_vhost_any_ring_started(struct pvo_vhost *vh)
{
	VuDev *dev = &vh->vug.parent;
	unsigned int q;

	for (q = 0; dev->vq && q < dev->max_queues; q++)
		if (vu_queue_started(dev, &dev->vq[q]))
			return true;
	return false;
}

/*
 * The second front-end starts the VM: a migration's switch-over. Only
 * with the migrated state, and only once the source stopped its rings.
 */
static bool take_over(struct pvo_vm *vm, struct pvo_vhost *vh)
{
	struct pvo_vhost *old = vm->vhost;

	if (vh == vm->retired)
		return false;
	if (!vh->loaded) {
		pvo_info(pvo_vm_name(vm), "a second front-end started the VM "
			 "without its migrated state: refused (is another "
			 "QEMU using %s?)", vm->cfg->socket_path);
		return false;
	}
	if (vm->connected && pvo_vhost_any_ring_started(old)) {
		pvo_info(pvo_vm_name(vm), "the migration's destination "
			 "started while the source still runs: refused");
		return false;
	}
	pvo_info(pvo_vm_name(vm), "switch-over: the migration's "
		 "destination front-end takes the VM over");
	pvo_vm_reset_guest_state(vm); /* the source's, now in the stream */
	vh->listen_fd = old->listen_fd;
	vh->listen_src = old->listen_src;
	old->listen_fd = -1;
	old->listen_src = NULL;
	pvo_timer_cancel(&old->thaw);
	vm->vhost = vh;
	vm->incoming = NULL;
	if (vm->connected) {
		vm->retired = old;
	} else {
		pvo_timer_destroy(&old->thaw);
		pvo_timer_destroy(&old->ctrl_more);
		g_free(old);
	}
	vm->connected = true;
	vm->mem_gen++;
	pvo_local_routes_changed();
	return true;
}

static void queue_set_started(VuDev *dev, int qidx, bool started)
{
	struct pvo_vhost *vh = session_of(dev);
	struct pvo_vm *vm = vh->vm;
	VuVirtq *vq = vu_get_queue(dev, qidx);
	bool applied = false, within = false;

	pvo_debug(pvo_vm_name(vm), "queue %d %s", qidx,
		  started ? "started" : "stopped");
	if (!started) {
		vu_set_queue_handler(dev, vq, NULL);
		if (qidx == PVO_VQ_CTRL)
			ctrl_finish_held(vh, vq);
		/* QEMU stops the rings for a migration's last phase with
		 * the dirty log on: from now on it copies no more memory */
		if (vh == vm->vhost && (dev->features & (1ull << VHOST_F_LOG_ALL)))
			freeze(vm);
		return;
	}
	if (vh != vm->vhost) {
		/* A VM that moved away and comes back from another host
		 * before its old QEMU here has quit replaces that QEMU's
		 * session too, but its peers must learn where it is. */
		within = !vm->moved_away;
		if (!take_over(vm, vh)) {
			dev->panic(dev, "refused to start the VM");
			return;
		}
	}
	if (vh->loaded) {
		apply_loaded(vm, vh, !within);
		applied = true;
	}
	vm->moved_away = false; /* it runs here */
	if (vm->frozen)
		pvo_timer_arm(&vh->thaw, sets_status(dev)
						 ? THAW_STATUS_DELAY_USEC
						 : THAW_DELAY_USEC);
	if (qidx == PVO_VQ_EVENT) {
		vu_set_queue_handler(dev, vq, event_kick);
		pvo_event_flush(vm);
		return;
	}
	if (qidx >= PVO_VQ_DB_KERNEL) {
		vu_set_queue_handler(dev, vq, doorbell_kick);
		/* Kicks that came while the queue was stopped are lost:
		 * look at the records once. */
		pvo_doorbell_kick(vm, qidx);
		return;
	}
	/*
	 * A control ring that starts from index 0 belongs to a freshly reset
	 * device (driver probe after boot, reload or guest reset), so nothing
	 * the guest created before can still be referenced. A ring resumed
	 * from a saved index (VM stop/continue) keeps its objects.
	 */
	if (vq->last_avail_idx == 0 && !applied)
		pvo_vm_reset_guest_state(vm);
	vu_set_queue_handler(dev, vq, ctrl_kick);
}

/*
 * libvhost-user reads and writes these fds as eventfds, on the loop: a
 * pipe (or whatever the front-end sent) that fills would block it for
 * every VM. Non-blocking, a write that does not fit fails and drops the
 * session. QEMU's eventfds are non-blocking already.
 */
static void nonblocking(const VhostUserMsg *m)
{
	int i, fl;

	for (i = 0; i < m->fd_num; i++) {
		fl = fcntl(m->fds[i], F_GETFL);
		if (fl >= 0 && !(fl & O_NONBLOCK))
			fcntl(m->fds[i], F_SETFL, fl | O_NONBLOCK);
	}
}

static int process_msg(VuDev *dev, VhostUserMsg *m, int *do_reply)
{
	struct pvo_vm *vm = vm_of(dev);
	char *why = NULL;

	pvo_debug(pvo_vm_name(vm), "vhost-user %s",
		  pvo_vhost_msg_name(m->request));
	if ((dev->protocol_features &
	     (1ull << PVO_VHOST_USER_PROTOCOL_F_DEVICE_STATE)) &&
	    pvo_vhost_state_msg(session_of(dev), m)) {
		*do_reply = 1;
		return 1;
	}
	if (!pvo_vhost_msg_valid(dev, m, &why)) {
		pvo_vhost_msg_close_fds(m);
		dev->panic(dev, why);
		g_free(why);
		*do_reply = 0;
		return 1;
	}
	if (m->request == PVO_VHOST_USER_SET_STATUS) {
		status_set(session_of(dev), (uint8_t)m->payload.u64);
		return 1; /* libvhost-user acks it if asked */
	}
	if (m->request == PVO_VHOST_USER_GET_STATUS) {
		*do_reply = pvo_vhost_msg_reply_u64(m, session_of(dev)->status);
		return 1;
	}
	switch (m->request) {
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
	case VHOST_USER_SET_LOG_FD:
		nonblocking(m);
		return 0;
	case VHOST_USER_SET_MEM_TABLE:
	case VHOST_USER_ADD_MEM_REG:
	case VHOST_USER_REM_MEM_REG:
		/* libvhost-user remaps guest RAM right after this returns:
		 * host addresses cached until now are stale */
		vm->mem_gen++;
		return 0;
	case VHOST_USER_GET_CONFIG:
		pvo_vhost_msg_get_config(m, get_config_bytes, vm);
		*do_reply = 1;
		return 1;
	case VHOST_USER_SET_CONFIG:
		/* Read-only config space: refuse, but keep the session. */
		pvo_vm_warn(vm, "refused a write to the read-only config "
				"space");
		*do_reply = pvo_vhost_msg_nack(m);
		return 1;
	case VHOST_USER_POSTCOPY_ADVISE:
	case VHOST_USER_POSTCOPY_LISTEN:
	case VHOST_USER_POSTCOPY_END:
		/*
		 * The data path writes guest memory from the event loop, which
		 * a missing page would stall for every VM: refuse, keeping the
		 * session (libvhost-user's userfaultfd would also outlive it).
		 * ADVISE always waits for its reply (and a ufd it does not
		 * get): QEMU fails the postcopy migration, the VM runs on.
		 */
		pvo_vm_warn(vm, "refused %s: postcopy migration is not "
				"supported; migrate with precopy (QEMU's "
				"default)",
			    pvo_vhost_msg_name(m->request));
		if (m->request == VHOST_USER_POSTCOPY_ADVISE)
			m->flags |= VHOST_USER_NEED_REPLY_MASK;
		*do_reply = pvo_vhost_msg_nack(m);
		return 1;
	}
	return 0;
}

static const VuDevIface iface = {
	.process_msg = process_msg,
	.get_features = get_features,
	.get_protocol_features = get_protocol_features,
	.set_features = set_features,
	.get_config = get_config,
	.set_config = set_config,
	.queue_set_started = queue_set_started,
};

static void end_session(struct pvo_vhost *vh)
{
	ctrl_forget(vh);
	vu_deinit(&vh->vug.parent); /* closes the socket too */
	vug_deinit(&vh->vug);
	g_hash_table_destroy(vh->kicks); /* vu_deinit removed them all */
	vh->kicks = NULL;
	vh->conn_fd = -1;
	pvo_vhost_state_forget(vh);
}

static gboolean drop_connection(gpointer data)
{
	struct pvo_vhost *vh = data;
	struct pvo_vm *vm = vh->vm;

	if (vh == vm->vhost && vm->connected) {
		end_session(vh);
		pvo_timer_cancel(&vh->thaw);
		pvo_timer_cancel(&vh->ctrl_more);
		vm->connected = false;
		vm->frozen = false;
		vm->mem_gen++;
		pvo_local_routes_changed();
		pvo_vm_reset_guest_state(vm);
		pvo_info(pvo_vm_name(vm), "front-end disconnected");
	} else if (vh != vm->vhost) {
		end_session(vh);
		pvo_info(pvo_vm_name(vm), "%s",
			 vh == vm->incoming
				 ? "the migration's destination front-end "
				   "left before the switch-over"
				 : "the migrated VM's previous front-end "
				   "left");
	}
	vh->dropping = false;
	/* done, whether this is the scheduled call or an earlier one */
	pvo_loop_remove(vh->drop_src);
	vh->drop_src = NULL;
	if (vh != vm->vhost) {
		if (vm->incoming == vh)
			vm->incoming = NULL;
		if (vm->retired == vh)
			vm->retired = NULL;
		pvo_timer_destroy(&vh->thaw);
		pvo_timer_destroy(&vh->ctrl_more);
		g_free(vh);
	}
	return G_SOURCE_REMOVE;
}

static void panic(VuDev *dev, const char *msg)
{
	struct pvo_vhost *vh = session_of(dev);
	struct pvo_vm *vm = vh->vm;

	if (vh->dropping)
		return;
	/* A closed socket is the normal way QEMU leaves. */
	if (!strstr(msg, "Error processing vhost message"))
		pvo_info(pvo_vm_name(vm),
			 "vhost-user protocol error: %s; dropping the "
			 "connection",
			 msg);
	vh->dropping = true;
	/* No reply may follow a failed message: libvhost-user would still
	 * write a REPLY_ACK of 0 ("done") for it. */
	shutdown(vh->conn_fd, SHUT_RDWR);
	/* libvhost-user is still on the stack: tear down from the loop, at
	 * high priority so the readable EOF cannot starve it. */
	vh->drop_src = g_idle_source_new();
	g_source_set_priority(vh->drop_src, G_PRIORITY_HIGH);
	g_source_set_callback(vh->drop_src, drop_connection, vh, NULL);
	pvo_loop_attach(vh->drop_src);
}

/*
 * libvhost-user's fd watches (the rings' kick eventfds) go into the loop's
 * epoll set (pvo_loop_add_fd), where a doorbell costs one wake-up and one
 * read, however many rings the back-end serves.
 */
struct kick_watch {
	VuDev *dev;
	vu_watch_cb cb;
	void *pvt;
	struct pvo_watch *w;
};

static void kick_watch_free(gpointer data)
{
	struct kick_watch *k = data;

	pvo_loop_remove_fd(k->w);
	g_free(k);
}

static gboolean on_kick(int fd, GIOCondition cond, void *data)
{
	struct kick_watch *k = data;

	/* may remove this watch: k is not used after */
	k->cb(k->dev, (int)cond, k->pvt);
	return G_SOURCE_CONTINUE;
}

static void panic(VuDev *dev, const char *msg);

static void set_watch(VuDev *dev, int fd, int evt, vu_watch_cb cb, void *pvt)
{
	struct pvo_vhost *vh = session_of(dev);
	struct kick_watch *k = g_new0(struct kick_watch, 1);
	char msg[160];

	/* one watch per fd: a new handler replaces the old one */
	g_hash_table_remove(vh->kicks, GINT_TO_POINTER(fd));
	k->dev = dev;
	k->cb = cb;
	k->pvt = pvt;
	k->w = pvo_loop_add_fd(fd, (GIOCondition)evt, on_kick, k);
	if (!k->w) {
		/* the front-end's fd: e.g. a regular file, not an eventfd */
		snprintf(msg, sizeof(msg),
			 "cannot wait on the ring eventfd it sent (fd %d): %s",
			 fd, g_strerror(errno));
		g_free(k);
		panic(dev, msg);
		return;
	}
	g_hash_table_insert(vh->kicks, GINT_TO_POINTER(fd), k);
}

static void remove_watch(VuDev *dev, int fd)
{
	g_hash_table_remove(session_of(dev)->kicks, GINT_TO_POINTER(fd));
}

static struct pvo_vhost *new_session(struct pvo_vm *vm);
static bool serve_session(struct pvo_vhost *vh, int conn);

static gboolean on_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct pvo_vm *vm = data;
	struct pvo_vhost *vh = vm->vhost;
	int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (conn < 0) {
		if (errno != EAGAIN && errno != EINTR)
			pvo_info(pvo_vm_name(vm), "accept: %s",
				 strerror(errno));
		return G_SOURCE_CONTINUE;
	}
	if (vh->dropping || (vm->connected && vm->incoming)) {
		pvo_info(pvo_vm_name(vm),
			 "refused another front-end on %s: the VM is "
			 "already connected%s",
			 vm->cfg->socket_path,
			 vm->incoming ? " and migrating in" : "");
		close(conn);
		return G_SOURCE_CONTINUE;
	}
	if (vm->connected) {
		struct pvo_vhost *in = new_session(vm);

		if (!serve_session(in, conn)) {
			pvo_timer_destroy(&in->thaw);
			pvo_timer_destroy(&in->ctrl_more);
			g_free(in);
			return G_SOURCE_CONTINUE;
		}
		vm->incoming = in;
		pvo_info(pvo_vm_name(vm), "a second front-end connected: "
			 "the destination of a migration, it may start the "
			 "VM only with the VM's migrated state");
		return G_SOURCE_CONTINUE;
	}
	pvo_vhost_serve(vm, conn);
	return G_SOURCE_CONTINUE;
}

static struct pvo_vhost *new_session(struct pvo_vm *vm)
{
	struct pvo_vhost *vh = g_new0(struct pvo_vhost, 1);

	/* events and doorbell queues reach the guest through the session
	 * that owns the VM (vm->vhost) */
	vm->queues = &pvo_vhost_queues;
	vm->gmem.ops = &pvo_vhost_gmem_ops;
	vh->vm = vm;
	vh->conn_fd = -1;
	vh->listen_fd = -1;
	pvo_timer_init(&vh->thaw, thaw, vm);
	pvo_timer_init(&vh->ctrl_more, ctrl_more, vh);
	return vh;
}

static bool serve_session(struct pvo_vhost *vh, int conn)
{
	struct pvo_vm *vm = vh->vm;

	vh->kicks = g_hash_table_new_full(NULL, NULL, NULL, kick_watch_free);
	if (!vug_init(&vh->vug, pvo_device_max_queues(vm->cfg), conn, panic,
		      &iface)) {
		pvo_info(pvo_vm_name(vm), "cannot set up vhost-user session");
		g_hash_table_destroy(vh->kicks);
		vh->kicks = NULL;
		close(conn);
		return false;
	}
	vh->vug.parent.read_msg = pvo_vhost_msg_read;
	vh->vug.parent.set_watch = set_watch;
	vh->vug.parent.remove_watch = remove_watch;
	/* the socket stays a glib source: no poll-set churn around each
	 * message (see loop.c) */
	g_source_set_can_recurse(vh->vug.src, TRUE);
	vh->conn_fd = conn;
	return true;
}

bool pvo_vhost_serve(struct pvo_vm *vm, int conn)
{
	/* a connection that did not come through the listener */
	if (!vm->vhost)
		vm->vhost = new_session(vm);
	if (!serve_session(vm->vhost, conn))
		return false;
	vm->connected = true;
	vm->mem_gen++;
	pvo_local_routes_changed();
	pvo_info(pvo_vm_name(vm), "front-end connected");
	return true;
}

/* A socket file nobody accepts on is stale; one with a live server is not
 * ours to take. */
static bool socket_in_use(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool used;

	if (fd < 0)
		return false;
	used = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return used;
}

/*
 * socket-group: the socket is the group's to connect to (0660), and the
 * daemon's own socket-dir lets the group in (search, never list or
 * write); a directory the operator named for one socket is left as it is.
 */
static bool give_group(struct pvo_vm *vm, const struct pvo_daemon_config *dc,
		       const char *path, char **err)
{
	char *dir = g_path_get_dirname(path);
	bool own = strcmp(dir, dc->socket_dir) == 0;
	struct stat st;
	const char *what = path;

	if (chown(path, (uid_t)-1, dc->socket_gid) < 0 || chmod(path, 0660) < 0)
		goto fail;
	what = dir;
	if (own && (stat(dir, &st) < 0 ||
		    chown(dir, (uid_t)-1, dc->socket_gid) < 0 ||
		    chmod(dir, (st.st_mode & 0700) | 0010) < 0))
		goto fail;
	g_free(dir);
	return true;
fail:
	*err = g_strdup_printf("vm %s: cannot give %s to socket-group %s: %s",
			       pvo_vm_name(vm), what, dc->socket_group,
			       strerror(errno));
	g_free(dir);
	return false;
}

bool pvo_vhost_listen(struct pvo_vm *vm, const struct pvo_daemon_config *dc,
		      char **err)
{
	const char *path = vm->cfg->socket_path;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	char *dir;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		*err = g_strdup_printf("vm %s: socket path %s is too long",
				       pvo_vm_name(vm), path);
		return false;
	}
	strcpy(sa.sun_path, path);
	dir = g_path_get_dirname(path);
	if (g_mkdir_with_parents(dir, 0750) < 0) {
		*err = g_strdup_printf("vm %s: cannot create %s: %s",
				       pvo_vm_name(vm), dir, strerror(errno));
		g_free(dir);
		return false;
	}
	g_free(dir);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			*err = g_strdup_printf(
				"vm %s: %s exists and is not a socket; "
				"remove it or choose another 'socket ='",
				pvo_vm_name(vm), path);
			return false;
		}
		if (socket_in_use(&sa)) {
			*err = g_strdup_printf(
				"vm %s: socket %s is served by another "
				"process (is another pvrdma-overlayd running?)",
				pvo_vm_name(vm), path);
			return false;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0) {
		*err = g_strdup_printf("vm %s: cannot listen on %s: %s",
				       pvo_vm_name(vm), path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (dc->socket_group[0] && !give_group(vm, dc, path, err)) {
		close(fd);
		unlink(path);
		return false;
	}
	vm->vhost = new_session(vm);
	vm->vhost->listen_fd = fd;
	vm->vhost->listen_src = pvo_loop_add_fd(fd, G_IO_IN, on_accept, vm);
	if (!vm->vhost->listen_src) {
		*err = g_strdup_printf("vm %s: cannot wait on %s: %s",
				       pvo_vm_name(vm), path, strerror(errno));
		pvo_vhost_close(vm);
		return false;
	}
	pvo_info(pvo_vm_name(vm), "listening on %s (tenant %s, vni %u)", path,
		 vm->cfg->tenant->name, vm->cfg->tenant->vni);
	return true;
}

void pvo_vhost_close(struct pvo_vm *vm)
{
	struct pvo_vhost *vh = vm->vhost;

	if (!vh)
		return;
	if (vm->incoming)
		drop_connection(vm->incoming);
	if (vm->retired)
		drop_connection(vm->retired);
	vh->dropping = false;
	drop_connection(vh);
	pvo_loop_remove_fd(vh->listen_src);
	if (vh->listen_fd >= 0) {
		close(vh->listen_fd);
		unlink(vm->cfg->socket_path);
	}
	vm->vhost = NULL;
	vm->queues = NULL;
	vm->gmem.ops = NULL;
	pvo_timer_destroy(&vh->thaw);
	pvo_timer_destroy(&vh->ctrl_more);
	g_free(vh);
}
