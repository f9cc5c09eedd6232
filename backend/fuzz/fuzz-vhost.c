// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The vhost-user socket: the input is what a front-end writes, a stream
 * of messages (header and payload), served by the daemon's own session
 * code (vhost.c, vhost_msg.c, vhost_state.c and libvhost-user underneath)
 * on one end of a socket pair until the stream ends and the session is
 * dropped.
 *
 * Each message goes with the fds a front-end would pass with it, made
 * from what the payload says: a memfd per region of a memory table (the
 * region's offset plus size, sparse), one for the dirty log, an eventfd
 * for a ring's kick, call or error fd (unless the payload says "no fd"),
 * a socket for the back-end channel, a pipe end for a state transfer.
 * Sizes come from the input, so mappings fail or succeed as it decides.
 */
#include <endian.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>

#include "config.h"
#include "fuzz.h"
#include "loop.h"
#include "vhost.h"
#include "vhost_dev.h"
#include "vhost_state.h"
#include "vm.h"

#define HDR_LEN 12
#define MAX_FDS VHOST_MEMORY_BASELINE_NREGIONS
/* memfds are sparse, but mapping more than this is not interesting */
#define MAX_MEMFD (1ull << 30)

static struct pvo_daemon_config *cfg;

static uint32_t le32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static int memfd_of(uint64_t size)
{
	int fd = memfd_create("fuzz-vhost", MFD_CLOEXEC);

	if (fd >= 0 && ftruncate(fd, size > MAX_MEMFD ? MAX_MEMFD : size)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A memory region in a payload: gpa, size, uaddr, mmap offset. */
static int region_fd(const uint8_t *r, size_t left)
{
	if (left < 32)
		return memfd_of(4096);
	return memfd_of(le64_at(r + 8) + le64_at(r + 24));
}

/* The fds a front-end sends with message (hdr, payload). */
static int fds_for(const uint8_t *msg, size_t len, int *fds)
{
	const uint8_t *pl = msg + HDR_LEN;
	size_t plen = len > HDR_LEN ? len - HDR_LEN : 0;
	uint32_t n, i;
	int sv[2];

	if (len < HDR_LEN)
		return 0;
	switch (le32_at(msg)) {
	case VHOST_USER_SET_MEM_TABLE:
		n = plen >= 4 ? le32_at(pl) : 0;
		if (n > MAX_FDS)
			n = MAX_FDS;
		for (i = 0; i < n; i++) {
			size_t off = 8 + (size_t)i * 32;

			fds[i] =
			    region_fd(pl + off, plen > off ? plen - off : 0);
			if (fds[i] < 0)
				return i;
		}
		return n;
	case VHOST_USER_ADD_MEM_REG:
	case VHOST_USER_REM_MEM_REG:
		/* a u64 of padding, then the region */
		fds[0] = region_fd(pl + 8, plen > 8 ? plen - 8 : 0);
		return fds[0] >= 0;
	case VHOST_USER_SET_LOG_BASE:
		/* mmap size, then offset */
		fds[0] =
		    memfd_of(plen >= 16 ? le64_at(pl) + le64_at(pl + 8) : 4096);
		return fds[0] >= 0;
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		if (plen >= 8 && (le64_at(pl) & VHOST_USER_VRING_NOFD_MASK))
			return 0;
		/* fall through */
	case VHOST_USER_SET_LOG_FD:
		fds[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		return fds[0] >= 0;
	case VHOST_USER_SET_BACKEND_REQ_FD:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return 0;
		close(sv[1]); /* nobody answers: requests fail, as they may */
		fds[0] = sv[0];
		return 1;
	case PVO_VHOST_USER_SET_DEVICE_STATE_FD:
		if (pipe2(sv, O_CLOEXEC | O_NONBLOCK))
			return 0;
		/* the direction the payload asks for: 0 save, 1 load */
		if (plen >= 4 && le32_at(pl) == 0) {
			close(sv[0]);
			fds[0] = sv[1];
		} else {
			close(sv[1]);
			fds[0] = sv[0];
		}
		return 1;
	default:
		return 0;
	}
}

/* The length of the message at p: its header and payload, or what is
 * left of the input. */
static size_t msg_len(const uint8_t *p, size_t left)
{
	uint64_t n;

	if (left < HDR_LEN)
		return left;
	n = HDR_LEN + (uint64_t)le32_at(p + 8);
	return n < left ? n : left;
}

/* Sends len bytes at p, the fds with the first; bytes sent or -1. */
static ssize_t send_with(int sock, const uint8_t *p, size_t len, const int *fds,
			 int nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

	if (nfds) {
		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

/* Open fds of this process: a session must give back every fd it got. */
static int count_fds(void)
{
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	int n = 0;

	if (!d)
		return -1;
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

static int session(const uint8_t *data, size_t size);

static gboolean never(int fd, GIOCondition cond, void *data)
{
	return G_SOURCE_CONTINUE;
}

/* The loop's epoll set, made by its first fd watch (a ring's kick). */
static void make_fd_set(void)
{
	int e = eventfd(0, EFD_CLOEXEC);

	pvo_loop_remove_fd(pvo_loop_add_fd(e, G_IO_IN, never, NULL));
	close(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool warm;
	int before, i;

	if (!warm) {
		/* what the first session sets up for good (the loop's
		 * state) is not a session's fd */
		session(NULL, 0);
		make_fd_set();
		warm = true;
	}
	before = count_fds();
	session(data, size);
	/* the state transfer's thread may still hold its pipe end */
	for (i = 0; i < 100 && count_fds() > before; i++) {
		g_main_context_iteration(NULL, FALSE);
		g_usleep(1000);
	}
	if (count_fds() > before) {
		fprintf(stderr, "fuzz-vhost: the session kept %d fds\n",
			count_fds() - before);
		abort();
	}
	return 0;
}

static int session(const uint8_t *data, size_t size)
{
	char drain[4096];
	struct pvo_vm *vm;
	int sv[2], fds[MAX_FDS], nfds = 0, i, k;
	size_t off = 0, len = 0, sent = 0;

	if (!cfg) {
		char *err = NULL;

		cfg = pvo_config_parse("fuzz.conf", FUZZ_CTRL_CONF, &err);
		if (!cfg)
			abort();
		/* as the daemon: a reply to a closed front-end is an error,
		 * not the end of the process */
		signal(SIGPIPE, SIG_IGN);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	vm = pvo_vm_new(&cfg->vms[0]);
	if (!pvo_vhost_serve(vm, sv[0])) {
		close(sv[1]);
		pvo_vhost_close(vm);
		pvo_vm_free(vm);
		return 0;
	}
	/* feed the messages as the socket takes them, each with its fds,
	 * read the replies so the daemon never blocks on a full socket,
	 * stop once it hangs up */
	for (i = 0; i < 10000 && vm->connected; i++) {
		if (off < size && sent == len) {
			/* the next message */
			len = msg_len(data + off, size - off);
			sent = 0;
			nfds = fds_for(data + off, len, fds);
		}
		if (off < size) {
			ssize_t n = send_with(sv[1], data + off + sent,
					      len - sent, fds, sent ? 0 : nfds);

			if (n > 0) {
				if (!sent)
					for (k = 0; k < nfds; k++)
						close(fds[k]);
				sent += n;
				if (sent == len)
					off += len;
			}
			if (off == size)
				shutdown(sv[1], SHUT_WR);
		} else if (!size) {
			shutdown(sv[1], SHUT_WR);
		}
		while (read(sv[1], drain, sizeof(drain)) > 0)
			;
		g_main_context_iteration(NULL, FALSE);
	}
	if (off < size && !sent)
		for (k = 0; k < nfds; k++)
			close(fds[k]);
	close(sv[1]);
	pvo_vhost_close(vm);
	pvo_vm_free(vm);
	return 0;
}
