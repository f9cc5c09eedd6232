// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user glue: accepts one front-end (QEMU) per VM socket and runs
 * libvhost-user on it in the glib main loop. Protocol errors and
 * disconnects drop the connection and the guest's objects; the socket
 * keeps listening so that the VM (or a restarted QEMU) can connect again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib-unix.h>

#include "ctrl.h"
#include "device.h"
#include "log.h"
#include "vhost.h"

#define VIRTIO_F_VERSION_1 32

static struct pvo_vm *vm_of(VuDev *dev)
{
	return container_of(dev, struct pvo_vm, vug.parent);
}

static uint64_t get_features(VuDev *dev)
{
	return 1ull << VIRTIO_F_VERSION_1;
}

static void set_features(VuDev *dev, uint64_t features)
{
	pvo_debug(pvo_vm_name(vm_of(dev)), "features 0x%" PRIx64, features);
}

static int get_config(VuDev *dev, uint8_t *config, uint32_t len)
{
	struct pvo_vm *vm = vm_of(dev);
	struct pvo_config c;

	if (len == 0 || len > VHOST_USER_MAX_CONFIG_SIZE)
		return -1;
	pvo_device_config(vm->cfg, &c);
	memset(config, 0, len);
	memcpy(config, &c, MIN(len, sizeof(c)));
	pvo_debug(pvo_vm_name(vm), "served %u bytes of config space", len);
	return 0;
}

static int set_config(VuDev *dev, const uint8_t *data, uint32_t offset,
		      uint32_t size, uint32_t flags)
{
	pvo_info(pvo_vm_name(vm_of(dev)),
		 "ignored a write to the read-only config space");
	return -1;
}

static void ctrl_kick(VuDev *dev, int qidx)
{
	pvo_ctrl_process(vm_of(dev), dev, qidx);
}

static void queue_set_started(VuDev *dev, int qidx, bool started)
{
	struct pvo_vm *vm = vm_of(dev);
	VuVirtq *vq = vu_get_queue(dev, qidx);

	pvo_debug(pvo_vm_name(vm), "queue %d %s", qidx,
		  started ? "started" : "stopped");
	if (qidx != PVO_VQ_CTRL)
		return;	/* event and doorbell queues are used on demand */
	if (!started) {
		vu_set_queue_handler(dev, vq, NULL);
		return;
	}
	/*
	 * A control ring that starts from index 0 belongs to a freshly reset
	 * device (driver probe after boot, reload or guest reset), so nothing
	 * the guest created before can still be referenced. A ring resumed
	 * from a saved index (VM stop/continue) keeps its objects.
	 */
	if (vq->last_avail_idx == 0)
		pvo_vm_reset_guest_state(vm);
	vu_set_queue_handler(dev, vq, ctrl_kick);
}

/*
 * libvhost-user's default reader asserts on a short payload or too many
 * fds, and exits the process when a front-end disconnects: fine for one VM
 * per process, fatal for a daemon serving many. This reader fails the
 * session instead, and never blocks the main loop for long on a front-end
 * that sends a header without its payload.
 */
static bool read_msg(VuDev *dev, int fd, VhostUserMsg *m)
{
	char control[CMSG_SPACE(VHOST_MEMORY_BASELINE_NREGIONS * sizeof(int))];
	struct iovec iov = { .iov_base = m, .iov_len = VHOST_USER_HDR_SIZE };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control,
		.msg_controllen = sizeof(control),
	};
	struct pvo_vm *vm = vm_of(dev);
	struct cmsghdr *cmsg;
	size_t got = 0;
	ssize_t rc;
	int i;

	memset(control, 0, sizeof(control));
	do {
		rc = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	} while (rc < 0 && errno == EINTR);
	m->fd_num = 0;
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		size_t n;

		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < (int)n; i++) {
			int f;

			memcpy(&f, CMSG_DATA(cmsg) + i * sizeof(int),
			       sizeof(int));
			if (m->fd_num < VHOST_MEMORY_BASELINE_NREGIONS)
				m->fds[m->fd_num++] = f;
			else
				close(f);
		}
	}
	if (rc == 0)
		return false;	/* the front-end closed the connection */
	if (rc < 0 || (size_t)rc < VHOST_USER_HDR_SIZE ||
	    (msg.msg_flags & MSG_CTRUNC) || m->size > sizeof(m->payload)) {
		pvo_info(pvo_vm_name(vm),
			 "malformed vhost-user message (header %zd bytes, "
			 "payload size %u)",
			 rc, rc >= (ssize_t)VHOST_USER_HDR_SIZE ? m->size : 0);
		goto fail;
	}
	while (got < m->size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 1000) <= 0) {
			pvo_info(pvo_vm_name(vm),
				 "vhost-user message %u: payload did not "
				 "arrive within 1 s",
				 m->request);
			goto fail;
		}
		rc = read(fd, (char *)&m->payload + got, m->size - got);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0) {
			pvo_info(pvo_vm_name(vm),
				 "vhost-user message %u: truncated payload",
				 m->request);
			goto fail;
		}
		got += rc;
	}
	return true;
fail:
	for (i = 0; i < m->fd_num; i++)
		close(m->fds[i]);
	m->fd_num = 0;
	return false;
}

static int process_msg(VuDev *dev, VhostUserMsg *m, int *do_reply)
{
	/* Request 0 is not a message; libvhost-user would exit(0) on it. */
	if (m->request == VHOST_USER_NONE) {
		*do_reply = 0;
		dev->panic(dev, "front-end sent request 0");
		return 1;
	}
	pvo_debug(pvo_vm_name(vm_of(dev)), "vhost-user %s",
		  vu_request_to_string(m->request));
	return 0;
}

static const VuDevIface iface = {
	.process_msg = process_msg,
	.get_features = get_features,
	.set_features = set_features,
	.get_config = get_config,
	.set_config = set_config,
	.queue_set_started = queue_set_started,
};

static gboolean drop_connection(gpointer data)
{
	struct pvo_vm *vm = data;

	if (vm->connected) {
		vu_deinit(&vm->vug.parent);	/* closes the socket too */
		vug_deinit(&vm->vug);
		vm->conn_fd = -1;
		vm->connected = false;
		pvo_vm_reset_guest_state(vm);
		pvo_info(pvo_vm_name(vm), "front-end disconnected");
	}
	vm->dropping = false;
	return G_SOURCE_REMOVE;
}

static void panic(VuDev *dev, const char *msg)
{
	struct pvo_vm *vm = vm_of(dev);

	if (vm->dropping)
		return;
	/* A closed socket is the normal way QEMU leaves. */
	if (!strstr(msg, "Error processing vhost message"))
		pvo_info(pvo_vm_name(vm),
			 "vhost-user protocol error: %s; dropping the "
			 "connection",
			 msg);
	vm->dropping = true;
	/* libvhost-user is still on the stack: tear down from the loop, at
	 * high priority so the readable EOF cannot starve it. */
	g_idle_add_full(G_PRIORITY_HIGH, drop_connection, vm, NULL);
}

static gboolean on_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct pvo_vm *vm = data;
	int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (conn < 0) {
		if (errno != EAGAIN && errno != EINTR)
			pvo_info(pvo_vm_name(vm), "accept: %s",
				 strerror(errno));
		return G_SOURCE_CONTINUE;
	}
	if (vm->connected || vm->dropping) {
		pvo_info(pvo_vm_name(vm),
			 "refused a second front-end on %s: the VM is "
			 "already connected",
			 vm->cfg->socket_path);
		close(conn);
		return G_SOURCE_CONTINUE;
	}
	if (!vug_init(&vm->vug, pvo_device_max_queues(vm->cfg), conn, panic,
		      &iface)) {
		pvo_info(pvo_vm_name(vm), "cannot set up vhost-user session");
		close(conn);
		return G_SOURCE_CONTINUE;
	}
	vm->vug.parent.read_msg = read_msg;
	vm->conn_fd = conn;
	vm->connected = true;
	pvo_info(pvo_vm_name(vm), "front-end connected");
	return G_SOURCE_CONTINUE;
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

bool pvo_vhost_listen(struct pvo_vm *vm, char **err)
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
	vm->listen_fd = fd;
	vm->listen_src = g_unix_fd_add(fd, G_IO_IN, on_accept, vm);
	pvo_info(pvo_vm_name(vm), "listening on %s (tenant %s, vni %u)", path,
		 vm->cfg->tenant->name, vm->cfg->tenant->vni);
	return true;
}

void pvo_vhost_close(struct pvo_vm *vm)
{
	vm->dropping = false;
	drop_connection(vm);
	if (vm->listen_src)
		g_source_remove(vm->listen_src);
	vm->listen_src = 0;
	if (vm->listen_fd >= 0) {
		close(vm->listen_fd);
		unlink(vm->cfg->socket_path);
	}
	vm->listen_fd = -1;
}
