// SPDX-License-Identifier: GPL-2.0-or-later
/* Front-end message checks; see vhost_msg.h. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>

#include "log.h"
#include "vhost_dev.h"
#include "vhost_msg.h"
#include "vm.h"

/*
 * A whole message (header, payload and fds) must arrive within this.
 * QEMU writes each message with one sendmsg, so it is all there when the
 * first byte is; meanwhile the loop every VM shares waits, so this is the
 * most a front-end can cost the others before it is dropped. A second
 * leaves room for a front-end descheduled on a loaded host.
 */
#define MSG_DEADLINE_MS 1000

/*
 * How long a message waits for room for its reply (reply_room). QEMU
 * reads each reply before it sends the next request, so the room is
 * there at once; only a front-end that stopped reading waits, with the
 * loop every VM shares. Short: there is nothing to wait for.
 */
#define REPLY_ROOM_MS 250

enum fd_rule {
	FDS_NONE,	/* no fd may come with the message */
	FDS_ONE,	/* exactly one */
	FDS_VRING,	/* one unless the NOFD bit is set in the u64 */
	FDS_REGIONS,	/* one per memory region */
	FDS_ANY,	/* zero or one (REM_MEM_REG) */
};

struct msg_rule {
	uint32_t min_size;	/* payload bytes */
	enum fd_rule fds;
	bool vring_index;	/* payload names a vring: check the index */
	/* exactly min_size: libvhost-user refuses any other size after
	 * taking the fd, and would keep it */
	bool exact;
};

#define U64 sizeof(uint64_t)
#define MEMREG sizeof(VhostUserMemRegMsg)

static const struct msg_rule rules[VHOST_USER_MAX] = {
	[VHOST_USER_SET_FEATURES] = { U64, FDS_NONE },
	[VHOST_USER_SET_MEM_TABLE] = { 8, FDS_REGIONS },
	[VHOST_USER_SET_LOG_BASE] = { sizeof(VhostUserLog), FDS_ONE, false,
				      true },
	[VHOST_USER_SET_LOG_FD] = { 0, FDS_ONE },
	[VHOST_USER_SET_VRING_NUM] = { 8, FDS_NONE, true },
	[VHOST_USER_SET_VRING_ADDR] = { sizeof(struct vhost_vring_addr),
					FDS_NONE, true },
	[VHOST_USER_SET_VRING_BASE] = { 8, FDS_NONE, true },
	[VHOST_USER_GET_VRING_BASE] = { 8, FDS_NONE, true },
	[VHOST_USER_SET_VRING_KICK] = { U64, FDS_VRING, true },
	[VHOST_USER_SET_VRING_CALL] = { U64, FDS_VRING, true },
	[VHOST_USER_SET_VRING_ERR] = { U64, FDS_VRING, true },
	[VHOST_USER_SET_PROTOCOL_FEATURES] = { U64, FDS_NONE },
	[VHOST_USER_SET_VRING_ENABLE] = { 8, FDS_NONE, true },
	[VHOST_USER_SET_BACKEND_REQ_FD] = { 0, FDS_ONE },
	[VHOST_USER_GET_CONFIG] = { VHOST_USER_CONFIG_HDR_SIZE, FDS_NONE },
	[VHOST_USER_SET_CONFIG] = { VHOST_USER_CONFIG_HDR_SIZE, FDS_NONE },
	[VHOST_USER_ADD_MEM_REG] = { MEMREG, FDS_ONE },
	[VHOST_USER_REM_MEM_REG] = { MEMREG, FDS_ANY },
	[PVO_VHOST_USER_SET_STATUS] = { U64, FDS_NONE },
};

const char *pvo_vhost_msg_name(uint32_t request)
{
	const char *name;

	switch (request) {
	case PVO_VHOST_USER_SET_STATUS:
		return "VHOST_USER_SET_STATUS";
	case PVO_VHOST_USER_GET_STATUS:
		return "VHOST_USER_GET_STATUS";
	case PVO_VHOST_USER_SET_DEVICE_STATE_FD:
		return "VHOST_USER_SET_DEVICE_STATE_FD";
	case PVO_VHOST_USER_CHECK_DEVICE_STATE:
		return "VHOST_USER_CHECK_DEVICE_STATE";
	}
	/* libvhost-user names the requests it knows, NULL for the gaps */
	name = request < VHOST_USER_MAX ? vu_request_to_string(request) : NULL;
	return name ? name : "(unknown request)";
}

void pvo_vhost_msg_close_fds(VhostUserMsg *m)
{
	int i;

	for (i = 0; i < m->fd_num; i++)
		close(m->fds[i]);
	m->fd_num = 0;
}

static bool fail(char **why, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool fail(char **why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return false;
}

/*
 * A region libvhost-user can place: not empty, and no range that wraps.
 * Its search for a region's place in the sorted table only ends when a
 * region overlaps or lies on one side, which an empty or wrapping region
 * need not do: the daemon's loop would spin, for every VM on the host.
 */
static bool region_valid(const char *name, const void *where, char **why)
{
	VhostUserMemoryRegion reg, *r = &reg;
	uint64_t last;

	/* VhostUserMsg is packed: the regions need not be aligned */
	memcpy(&reg, where, sizeof(reg));
	last = r->memory_size - 1;
	if (r->memory_size == 0)
		return fail(why, "%s: a memory region of 0 bytes", name);
	if (r->guest_phys_addr > UINT64_MAX - last ||
	    r->userspace_addr > UINT64_MAX - last ||
	    r->mmap_offset > UINT64_MAX - last)
		return fail(why,
			    "%s: memory region of 0x%" PRIx64 " bytes at "
			    "guest address 0x%" PRIx64 " (user 0x%" PRIx64
			    ", offset 0x%" PRIx64 ") wraps around",
			    name, r->memory_size, r->guest_phys_addr,
			    r->userspace_addr, r->mmap_offset);
	return true;
}

bool pvo_vhost_msg_valid(VuDev *dev, const VhostUserMsg *m, char **why)
{
	const char *name = pvo_vhost_msg_name(m->request);
	const struct msg_rule *r;
	int want_fds = 0;

	if (m->request <= VHOST_USER_NONE || m->request >= VHOST_USER_MAX)
		return fail(why, "unknown vhost-user request %d", m->request);
	/* Inflight tracking (INFLIGHT_SHMFD) is never offered: libvhost-user
	 * would make a new memfd for every GET_INFLIGHT_FD and keep the last
	 * one only, an fd a hostile front-end could repeat until the daemon
	 * has none left. */
	if (m->request == VHOST_USER_GET_INFLIGHT_FD ||
	    m->request == VHOST_USER_SET_INFLIGHT_FD)
		return fail(why, "%s: inflight tracking (INFLIGHT_SHMFD) was "
				 "not offered",
			    name);
	r = &rules[m->request];
	if (m->size < r->min_size || (r->exact && m->size != r->min_size))
		return fail(why, "%s: payload of %u bytes, needs %s%u", name,
			    m->size, r->exact ? "exactly " : "", r->min_size);
	if (r->vring_index) {
		/* vring messages carry the index in their first 32 bits,
		 * fd-passing ones in the low byte of a u64 */
		unsigned int idx = r->fds == FDS_VRING ?
					   (m->payload.u64 &
					    VHOST_USER_VRING_IDX_MASK) :
					   m->payload.state.index;

		if (idx >= dev->max_queues)
			return fail(why, "%s: vring %u does not exist (%u "
					 "queues)",
				    name, idx, dev->max_queues);
	}
	switch (r->fds) {
	case FDS_NONE:
		want_fds = 0;
		break;
	case FDS_ONE:
		want_fds = 1;
		break;
	case FDS_VRING:
		want_fds = (m->payload.u64 & VHOST_USER_VRING_NOFD_MASK) ? 0 :
									  1;
		break;
	case FDS_ANY:
		want_fds = m->fd_num <= 1 ? m->fd_num : 1;
		break;
	case FDS_REGIONS: {
		uint32_t n = m->payload.memory.nregions, i;

		if (n == 0 || n > VHOST_MEMORY_BASELINE_NREGIONS)
			return fail(why, "%s: %u memory regions (1..%d)", name,
				    n, VHOST_MEMORY_BASELINE_NREGIONS);
		if (m->size < offsetof(VhostUserMemory, regions) +
				      n * sizeof(VhostUserMemoryRegion))
			return fail(why, "%s: payload too short for %u regions",
				    name, n);
		for (i = 0; i < n; i++)
			if (!region_valid(name,
					  &m->payload.memory.regions[i], why))
				return false;
		want_fds = n;
		break;
	}
	}
	if ((m->request == VHOST_USER_ADD_MEM_REG ||
	     m->request == VHOST_USER_REM_MEM_REG) &&
	    !region_valid(name, &m->payload.memreg.region, why))
		return false;
	if (m->fd_num != want_fds)
		return fail(why, "%s: came with %d file descriptors, needs %d",
			    name, m->fd_num, want_fds);
	return true;
}

void pvo_vhost_msg_get_config(VhostUserMsg *m,
			      void (*fill)(void *opaque, struct pvo_config *c),
			      void *opaque)
{
	/* VhostUserMsg is packed: work on copies, not member pointers. */
	uint8_t *region = (uint8_t *)m + offsetof(VhostUserMsg, payload) +
			  offsetof(VhostUserConfig, region);
	uint32_t offset = m->payload.config.offset;
	uint32_t size = m->payload.config.size;
	uint8_t space[VHOST_USER_MAX_CONFIG_SIZE] = { 0 };

	G_STATIC_ASSERT(sizeof(struct pvo_config) <= sizeof(space));
	if (size == 0 || size > sizeof(space) || offset > sizeof(space) ||
	    size > sizeof(space) - offset) {
		m->size = 0;	/* tells the front-end the read failed */
		return;
	}
	/* Bytes past struct pvo_config read as zero. */
	fill(opaque, (struct pvo_config *)space);
	memcpy(region, space + offset, size);
	m->size = VHOST_USER_CONFIG_HDR_SIZE + size;
}

int pvo_vhost_msg_reply_u64(VhostUserMsg *m, uint64_t value)
{
	m->payload.u64 = value;
	m->size = sizeof(m->payload.u64);
	return 1;
}

int pvo_vhost_msg_nack(VhostUserMsg *m)
{
	if (!(m->flags & VHOST_USER_NEED_REPLY_MASK))
		return 0;
	m->payload.u64 = 1;	/* non-zero: failed */
	m->size = sizeof(m->payload.u64);
	return 1;
}

/*
 * Waits until fd is ready for events or the deadline (monotonic, us) has
 * passed; false then. An error or hang-up counts as ready: the read or
 * write that follows says what it is.
 */
static bool wait_until(int fd, short events, gint64 deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		gint64 left = deadline - g_get_monotonic_time();
		int rc;

		if (left <= 0)
			return false;
		rc = poll(&p, 1, (int)MIN((left + 999) / 1000, G_MAXINT));
		if (rc != 0 && !(rc < 0 && errno == EINTR))
			return true;
	}
}

/* Keeps the fds of one SCM_RIGHTS batch; false if some were cut off. */
static bool take_fds(struct msghdr *msg, VhostUserMsg *m)
{
	struct cmsghdr *cmsg;

	for (cmsg = CMSG_FIRSTHDR(msg); cmsg; cmsg = CMSG_NXTHDR(msg, cmsg)) {
		size_t i, n;

		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int f;

			memcpy(&f, CMSG_DATA(cmsg) + i * sizeof(int),
			       sizeof(int));
			if (m->fd_num < VHOST_MEMORY_BASELINE_NREGIONS)
				m->fds[m->fd_num++] = f;
			else
				close(f);
		}
	}
	return !(msg->msg_flags & MSG_CTRUNC);
}

/* One recvmsg of at most len bytes into buf, fds into m. */
static ssize_t recv_part(int fd, void *buf, size_t len, VhostUserMsg *m,
			 bool *cut)
{
	char control[CMSG_SPACE(VHOST_MEMORY_BASELINE_NREGIONS * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control,
		.msg_controllen = sizeof(control),
	};
	ssize_t rc;

	memset(control, 0, sizeof(control));
	rc = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (rc >= 0 && !take_fds(&msg, m))
		*cut = true;
	return rc;
}

static const char *session_name(VuDev *dev)
{
	return pvo_vm_name(container_of(dev, struct pvo_vhost, vug.parent)->vm);
}

/*
 * The message's header, payload and fds, all within MSG_DEADLINE_MS of
 * the first byte being readable: the loop that waits here serves every
 * VM, so a front-end that drips bytes loses its session instead of
 * holding the loop for as long as it likes.
 */
static bool read_whole(VuDev *dev, int fd, VhostUserMsg *m)
{
	gint64 deadline = g_get_monotonic_time() + MSG_DEADLINE_MS * 1000;
	size_t got = 0, want = VHOST_USER_HDR_SIZE;
	bool cut = false;
	ssize_t rc;

	while (got < want) {
		if (!wait_until(fd, POLLIN, deadline)) {
			pvo_log(session_name(dev),
				"vhost-user %s: %zu of %zu message bytes "
				"arrived within %d ms (a front-end sends a "
				"message at once); dropping the connection",
				got >= VHOST_USER_HDR_SIZE ?
					pvo_vhost_msg_name(m->request) :
					"message",
				got, want, MSG_DEADLINE_MS);
			return false;
		}
		rc = recv_part(fd, (uint8_t *)m + got, want - got, m, &cut);
		if (rc < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (rc == 0 && got == 0)
			return false;	/* the front-end closed the connection */
		if (rc <= 0) {
			pvo_log(session_name(dev),
				"vhost-user message cut short after %zu "
				"bytes: %s",
				got, rc < 0 ? g_strerror(errno) : "end of "
								 "stream");
			return false;
		}
		got += (size_t)rc;
		if (cut || (got == VHOST_USER_HDR_SIZE &&
			    m->size > sizeof(m->payload))) {
			pvo_log(session_name(dev),
				"malformed vhost-user message (%s, payload "
				"size %u)",
				cut ? "too many file descriptors" : "too long",
				m->size);
			return false;
		}
		if (got == VHOST_USER_HDR_SIZE)
			want += m->size;
	}
	return true;
}

/*
 * libvhost-user writes its reply with blocking sendmsg calls and retries
 * them on EAGAIN, so a front-end that stops reading replies would hold
 * the loop for good. A stream socket that polls writable has most of its
 * send buffer free (Linux: three quarters), far more than a reply takes,
 * so a reply that follows never blocks; a socket that is not writable
 * holds dozens of unread replies, which QEMU, waiting for each one, never
 * leaves.
 */
static bool reply_room(VuDev *dev, int fd, const VhostUserMsg *m)
{
	gint64 deadline = g_get_monotonic_time() + REPLY_ROOM_MS * 1000;

	if (wait_until(fd, POLLOUT, deadline))
		return true;
	pvo_log(session_name(dev),
		"vhost-user %s: the front-end has not read its replies, no "
		"room for another within %d ms; dropping the connection",
		pvo_vhost_msg_name(m->request), REPLY_ROOM_MS);
	return false;
}

bool pvo_vhost_msg_read(VuDev *dev, int fd, VhostUserMsg *m)
{
	m->fd_num = 0;
	if (read_whole(dev, fd, m) && reply_room(dev, fd, m))
		return true;
	pvo_vhost_msg_close_fds(m);
	return false;
}
