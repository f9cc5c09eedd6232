// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user front-end for back-end tests: messages, handshake, vrings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vu_frontend.h"

#define MIB (1024ULL * 1024ULL)

static int fe_err(struct vu_frontend *fe, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fe_err(struct vu_frontend *fe, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fe->err, sizeof(fe->err), fmt, ap);
	va_end(ap);
	return ret;
}

const char *vu_frontend_error(const struct vu_frontend *fe)
{
	return fe->err[0] ? fe->err : "no error recorded";
}

const char *vu_request_name(uint32_t request)
{
	switch (request) {
	case VU_GET_FEATURES:
		return "GET_FEATURES";
	case VU_SET_FEATURES:
		return "SET_FEATURES";
	case VU_SET_OWNER:
		return "SET_OWNER";
	case VU_RESET_OWNER:
		return "RESET_OWNER";
	case VU_SET_MEM_TABLE:
		return "SET_MEM_TABLE";
	case VU_SET_LOG_BASE:
		return "SET_LOG_BASE";
	case VU_SET_LOG_FD:
		return "SET_LOG_FD";
	case VU_SET_VRING_NUM:
		return "SET_VRING_NUM";
	case VU_SET_VRING_ADDR:
		return "SET_VRING_ADDR";
	case VU_SET_VRING_BASE:
		return "SET_VRING_BASE";
	case VU_GET_VRING_BASE:
		return "GET_VRING_BASE";
	case VU_SET_VRING_KICK:
		return "SET_VRING_KICK";
	case VU_SET_VRING_CALL:
		return "SET_VRING_CALL";
	case VU_SET_VRING_ERR:
		return "SET_VRING_ERR";
	case VU_GET_PROTOCOL_FEATURES:
		return "GET_PROTOCOL_FEATURES";
	case VU_SET_PROTOCOL_FEATURES:
		return "SET_PROTOCOL_FEATURES";
	case VU_GET_QUEUE_NUM:
		return "GET_QUEUE_NUM";
	case VU_SET_VRING_ENABLE:
		return "SET_VRING_ENABLE";
	case VU_GET_CONFIG:
		return "GET_CONFIG";
	case VU_SET_CONFIG:
		return "SET_CONFIG";
	case VU_RESET_DEVICE:
		return "RESET_DEVICE";
	case VU_GET_MAX_MEM_SLOTS:
		return "GET_MAX_MEM_SLOTS";
	case VU_SET_STATUS:
		return "SET_STATUS";
	case VU_GET_STATUS:
		return "GET_STATUS";
	case VU_SET_DEVICE_STATE_FD:
		return "SET_DEVICE_STATE_FD";
	case VU_CHECK_DEVICE_STATE:
		return "CHECK_DEVICE_STATE";
	default:
		return "(unknown request)";
	}
}

struct vu_frontend *vu_frontend_new(const struct vu_options *opt, char *err,
				    size_t errlen)
{
	struct vu_frontend *fe;
	const char *env;

	fe = calloc(1, sizeof(*fe));
	if (!fe) {
		snprintf(err, errlen, "vu_frontend: out of memory");
		return NULL;
	}
	fe->sock = -1;
	fe->opt = *opt;
	if (!fe->opt.ram_size)
		fe->opt.ram_size = 64 * MIB;
	if (!fe->opt.ram_regions)
		fe->opt.ram_regions = 2;
	if (!fe->opt.queue_size)
		fe->opt.queue_size = 128;
	if (!fe->opt.timeout_ms) {
		env = getenv("PVO_TEST_TIMEOUT_MS");
		fe->opt.timeout_ms = env ? atoi(env) : 0;
		if (fe->opt.timeout_ms <= 0)
			fe->opt.timeout_ms = 5000;
	}
	if (!opt->socket_path) {
		snprintf(err, errlen, "vu_frontend: no socket path given");
		free(fe);
		return NULL;
	}
	fe->socket_path = strdup(opt->socket_path);
	fe->opt.socket_path = fe->socket_path;
	if (!fe->socket_path ||
	    guest_ram_init(&fe->ram, fe->opt.ram_size, fe->opt.ram_regions, err,
			   errlen) < 0) {
		free(fe->socket_path);
		free(fe);
		return NULL;
	}
	return fe;
}

static void free_vqs(struct vu_frontend *fe)
{
	unsigned int i;

	for (i = 0; i < fe->nvqs; i++)
		split_vq_fini(&fe->vq[i], &fe->ram);
	free(fe->vq);
	fe->vq = NULL;
	fe->nvqs = 0;
}

void vu_frontend_free(struct vu_frontend *fe)
{
	if (!fe)
		return;
	vu_frontend_disconnect(fe);
	free_vqs(fe);
	guest_ram_fini(&fe->ram);
	free(fe->socket_path);
	free(fe);
}

int vu_frontend_connect(struct vu_frontend *fe)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(fe->socket_path) >= sizeof(sa.sun_path))
		return fe_err(fe, -ENAMETOOLONG,
			      "socket path %s is longer than %zu bytes; use a "
			      "shorter temp dir",
			      fe->socket_path, sizeof(sa.sun_path) - 1);
	strcpy(sa.sun_path, fe->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fe_err(fe, -errno, "socket(AF_UNIX): %s",
			      strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return fe_err(fe, -e, "connect to back-end socket %s: %s",
			      fe->socket_path, strerror(e));
	}
	fe->sock = fd;
	return 0;
}

void vu_frontend_disconnect(struct vu_frontend *fe)
{
	if (fe->sock >= 0)
		close(fe->sock);
	fe->sock = -1;
}

int vu_send_raw(struct vu_frontend *fe, const void *buf, size_t len,
		const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VU_RAW_MAX_FDS)];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (fe->sock < 0)
		return fe_err(fe, -ENOTCONN, "not connected to the back-end");
	if (nfds > VU_RAW_MAX_FDS)
		return fe_err(fe, -EINVAL, "at most %d fds per message",
			      VU_RAW_MAX_FDS);
	if (nfds) {
		struct cmsghdr *cmsg;

		memset(&control, 0, sizeof(control));
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(fe->sock, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return fe_err(fe, -errno, "sending to back-end: %s",
			      strerror(errno));
	/* fds went with the first byte; push any remainder without them */
	while ((size_t)n < len) {
		ssize_t m = send(fe->sock, (const char *)buf + n, len - n,
				 MSG_NOSIGNAL);

		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0)
			return fe_err(fe, -errno, "sending to back-end: %s",
				      strerror(errno));
		n += m;
	}
	return 0;
}

int vu_send_msg(struct vu_frontend *fe, uint32_t request, uint32_t flags,
		const void *payload, uint32_t size, const int *fds,
		unsigned int nfds)
{
	struct vu_msg_hdr hdr = {
	    .request = request, .flags = flags, .size = size};
	uint8_t *m;
	int ret;

	if (size > (1u << 20))
		return fe_err(fe, -EMSGSIZE, "payload of %u bytes too large",
			      size);
	m = malloc(sizeof(hdr) + size);
	if (!m)
		return fe_err(fe, -ENOMEM,
			      "out of memory for a %u-byte message", size);
	memcpy(m, &hdr, sizeof(hdr));
	if (size)
		memcpy(m + sizeof(hdr), payload, size);
	ret = vu_send_raw(fe, m, sizeof(hdr) + size, fds, nfds);
	free(m);
	return ret;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Read exactly @len bytes before @deadline; stray fds are closed. */
static int read_full(struct vu_frontend *fe, void *buf, size_t len,
		     long long deadline)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * VU_MAX_FDS)];
			struct cmsghdr align;
		} control;
		struct iovec iov = {.iov_base = (char *)buf + got,
				    .iov_len = len - got};
		struct msghdr msg = {
		    .msg_iov = &iov,
		    .msg_iovlen = 1,
		    .msg_control = control.buf,
		    .msg_controllen = sizeof(control.buf),
		};
		struct pollfd pfd = {.fd = fe->sock, .events = POLLIN};
		struct cmsghdr *cmsg;
		long long left = deadline - now_ms();
		ssize_t n;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = recvmsg(fe->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		for (cmsg = CMSG_FIRSTHDR(&msg); cmsg;
		     cmsg = CMSG_NXTHDR(&msg, cmsg)) {
			if (cmsg->cmsg_level == SOL_SOCKET &&
			    cmsg->cmsg_type == SCM_RIGHTS) {
				int nfd = (cmsg->cmsg_len - CMSG_LEN(0)) /
					  sizeof(int);
				int *fds = (int *)CMSG_DATA(cmsg);

				while (nfd--)
					close(fds[nfd]);
			}
		}
		got += n;
	}
	return 0;
}

int vu_recv_msg(struct vu_frontend *fe, struct vu_msg_hdr *hdr, void *payload,
		uint32_t cap, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	int ret;

	ret = read_full(fe, hdr, sizeof(*hdr), deadline);
	if (ret == -ETIMEDOUT)
		return fe_err(fe, ret,
			      "no reply from the back-end within %d ms",
			      timeout_ms);
	if (ret == -ECONNRESET)
		return fe_err(
		    fe, ret,
		    "back-end closed the connection instead of replying");
	if (ret < 0)
		return fe_err(fe, ret, "reading reply header: %s",
			      strerror(-ret));
	if (hdr->size > cap)
		return fe_err(
		    fe, -EMSGSIZE,
		    "reply to %s carries %u payload bytes, expected at most %u",
		    vu_request_name(hdr->request), hdr->size, cap);
	ret = read_full(fe, payload, hdr->size, deadline);
	if (ret < 0)
		return fe_err(
		    fe, ret, "reading %u-byte reply payload of %s: %s",
		    hdr->size, vu_request_name(hdr->request), strerror(-ret));
	return 0;
}

int vu_request(struct vu_frontend *fe, uint32_t request, const void *payload,
	       uint32_t size, const int *fds, unsigned int nfds, bool want_ack,
	       void *reply, uint32_t reply_cap, uint32_t *reply_size)
{
	bool ack =
	    !reply &&
	    (fe->acked_protocol_features & (1ull << VU_PROTOCOL_F_REPLY_ACK)) &&
	    (want_ack || fe->opt.ack_every_message);
	uint32_t flags = VU_FLAG_VERSION | (ack ? VU_FLAG_NEED_REPLY : 0);
	struct vu_msg_hdr hdr;
	uint64_t status;
	int ret;

	ret = vu_send_msg(fe, request, flags, payload, size, fds, nfds);
	if (ret < 0)
		return ret;
	if (!reply && !ack)
		return 0;

	ret =
	    vu_recv_msg(fe, &hdr, reply ? reply : (void *)&status,
			reply ? reply_cap : sizeof(status), fe->opt.timeout_ms);
	if (ret < 0) {
		char why[sizeof(fe->err)];

		snprintf(why, sizeof(why), "%s", fe->err);
		return fe_err(fe, ret, "%s: %.400s", vu_request_name(request),
			      why);
	}
	if (hdr.request != request || !(hdr.flags & VU_FLAG_REPLY) ||
	    (hdr.flags & 0x3) != VU_FLAG_VERSION)
		return fe_err(fe, -EPROTO,
			      "%s: reply has request %u flags 0x%x; expected "
			      "request %u with the reply flag and version 1",
			      vu_request_name(request), hdr.request, hdr.flags,
			      request);
	if (reply) {
		if (reply_size)
			*reply_size = hdr.size;
		return 0;
	}
	if (hdr.size != sizeof(status))
		return fe_err(fe, -EPROTO,
			      "%s: REPLY_ACK payload of %u bytes, expected 8",
			      vu_request_name(request), hdr.size);
	if (status)
		return fe_err(fe, -EIO, "%s: back-end answered failure (%llu)",
			      vu_request_name(request),
			      (unsigned long long)status);
	return 0;
}

static int get_u64(struct vu_frontend *fe, uint32_t request, uint64_t *val)
{
	uint32_t size = 0;
	int ret;

	ret = vu_request(fe, request, NULL, 0, NULL, 0, false, val,
			 sizeof(*val), &size);
	if (ret < 0)
		return ret;
	if (size != sizeof(*val))
		return fe_err(fe, -EPROTO,
			      "%s: reply payload of %u bytes, expected 8",
			      vu_request_name(request), size);
	return 0;
}

static int set_u64(struct vu_frontend *fe, uint32_t request, uint64_t val,
		   const int *fds, unsigned int nfds)
{
	return vu_request(fe, request, &val, sizeof(val), fds, nfds, false,
			  NULL, 0, NULL);
}

/* QEMU's vhost_user_dev_start: GET_STATUS, then the bits added (or 0
 * at a stop), acknowledged; nothing without VHOST_USER_PROTOCOL_F_STATUS. */
static int set_status(struct vu_frontend *fe, uint64_t bits)
{
	uint64_t cur = 0;
	int ret;

	if (!(fe->acked_protocol_features & (1ull << VU_PROTOCOL_F_STATUS)))
		return 0;
	if (bits) {
		ret = get_u64(fe, VU_GET_STATUS, &cur);
		if (ret < 0)
			return ret;
		bits |= cur | VU_STATUS_ACKNOWLEDGE | VU_STATUS_DRIVER;
	}
	return vu_request(fe, VU_SET_STATUS, &bits, sizeof(bits), NULL, 0, true,
			  NULL, 0, NULL);
}

int vu_frontend_negotiate(struct vu_frontend *fe)
{
	const uint64_t wanted =
	    (1ull << VU_PROTOCOL_F_MQ) | (1ull << VU_PROTOCOL_F_LOG_SHMFD) |
	    (1ull << VU_PROTOCOL_F_REPLY_ACK) | (1ull << VU_PROTOCOL_F_CONFIG) |
	    (1ull << VU_PROTOCOL_F_DEVICE_STATE) |
	    (fe->opt.set_status ? 1ull << VU_PROTOCOL_F_STATUS : 0);
	uint64_t num;
	int ret;

	ret = get_u64(fe, VU_GET_FEATURES, &fe->backend_features);
	if (ret < 0)
		return ret;
	if (!(fe->backend_features & (1ull << VU_F_VIRTIO_VERSION_1)))
		return fe_err(
		    fe, -EPROTO,
		    "back-end features 0x%llx lack VIRTIO_F_VERSION_1; QEMU's "
		    "modern-only device would refuse it",
		    (unsigned long long)fe->backend_features);

	if (fe->backend_features & (1ull << VU_F_PROTOCOL_FEATURES)) {
		ret = get_u64(fe, VU_GET_PROTOCOL_FEATURES,
			      &fe->backend_protocol_features);
		if (ret < 0)
			return ret;
		fe->acked_protocol_features =
		    fe->backend_protocol_features & wanted;
		ret = set_u64(fe, VU_SET_PROTOCOL_FEATURES,
			      fe->acked_protocol_features, NULL, 0);
		if (ret < 0)
			return ret;
		if (fe->acked_protocol_features & (1ull << VU_PROTOCOL_F_MQ)) {
			ret = get_u64(fe, VU_GET_QUEUE_NUM, &num);
			if (ret < 0)
				return ret;
			fe->backend_queue_num = (uint32_t)num;
		}
	}
	return vu_request(fe, VU_SET_OWNER, NULL, 0, NULL, 0, false, NULL, 0,
			  NULL);
}

int vu_frontend_get_config(struct vu_frontend *fe, uint32_t offset, void *buf,
			   uint32_t size)
{
	struct vu_config_msg req = {.offset = offset, .size = size}, rep;
	uint32_t rep_size = 0;
	int ret;

	if (size > VU_MAX_CONFIG_SIZE || offset > VU_MAX_CONFIG_SIZE)
		return fe_err(fe, -EINVAL, "config reads are at most %d bytes",
			      VU_MAX_CONFIG_SIZE);
	ret = vu_request(fe, VU_GET_CONFIG, &req, VU_CONFIG_HDR_SIZE + size,
			 NULL, 0, false, &rep, sizeof(rep), &rep_size);
	if (ret < 0)
		return ret;
	if (rep_size == 0)
		return 0;
	if (rep_size != VU_CONFIG_HDR_SIZE + size)
		return fe_err(fe, -EPROTO,
			      "GET_CONFIG: reply payload is %u bytes; the spec "
			      "wants the request's %u (or 0 for an error)",
			      rep_size, VU_CONFIG_HDR_SIZE + size);
	if (rep.offset != offset || rep.size != size)
		return fe_err(fe, -EPROTO,
			      "GET_CONFIG: reply describes offset %u size %u, "
			      "asked offset %u size %u",
			      rep.offset, rep.size, offset, size);
	memcpy(buf, rep.region, size);
	return (int)rep_size;
}

static int start_vring(struct vu_frontend *fe, struct split_vq *vq,
		       uint16_t base)
{
	struct vu_vring_state st = {.index = vq->index, .num = vq->num};
	struct vu_vring_addr addr = {
	    .index = vq->index,
	    .desc_user_addr = (uintptr_t)vq->desc,
	    .used_user_addr = (uintptr_t)vq->used,
	    .avail_user_addr = (uintptr_t)vq->avail,
	};
	int ret;

	ret = vu_request(fe, VU_SET_VRING_NUM, &st, sizeof(st), NULL, 0, false,
			 NULL, 0, NULL);
	if (ret < 0)
		return ret;
	st.num = base;
	ret = vu_request(fe, VU_SET_VRING_BASE, &st, sizeof(st), NULL, 0, false,
			 NULL, 0, NULL);
	if (ret < 0)
		return ret;
	ret = vu_request(fe, VU_SET_VRING_ADDR, &addr, sizeof(addr), NULL, 0,
			 false, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	ret = set_u64(fe, VU_SET_VRING_KICK, vq->index, &vq->kick_fd, 1);
	if (ret < 0)
		return ret;
	if (fe->opt.kick_call_gap_ms) {
		struct timespec ts = {fe->opt.kick_call_gap_ms / 1000,
				      (fe->opt.kick_call_gap_ms % 1000) *
					  1000000L};

		nanosleep(&ts, NULL);
	}
	return set_u64(fe, VU_SET_VRING_CALL, vq->index, &vq->call_fd, 1);
}

static int set_vring_enable(struct vu_frontend *fe, bool enable)
{
	unsigned int i;
	int ret;

	if (!(fe->acked_features & (1ull << VU_F_PROTOCOL_FEATURES)))
		return 0;
	for (i = 0; i < fe->nvqs; i++) {
		struct vu_vring_state st = {.index = i, .num = enable};

		ret = vu_request(fe, VU_SET_VRING_ENABLE, &st, sizeof(st), NULL,
				 0, false, NULL, 0, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int send_mem_table(struct vu_frontend *fe)
{
	struct vu_mem_table mt = {0};
	int fds[GUEST_RAM_MAX_REGIONS];
	unsigned int i;

	mt.nregions = fe->ram.nregions;
	for (i = 0; i < fe->ram.nregions; i++) {
		mt.regions[i].guest_phys_addr = fe->ram.region[i].gpa;
		mt.regions[i].memory_size = fe->ram.region[i].size;
		mt.regions[i].userspace_addr = (uintptr_t)fe->ram.region[i].hva;
		mt.regions[i].mmap_offset = 0;
		fds[i] = fe->ram.region[i].fd;
	}
	/* QEMU sends the whole 8-slot table whatever nregions is. */
	return vu_request(fe, VU_SET_MEM_TABLE, &mt, sizeof(mt), fds,
			  fe->ram.nregions, false, NULL, 0, NULL);
}

uint8_t *vu_frontend_start_log(struct vu_frontend *fe, size_t *log_size)
{
	struct {
		uint64_t mmap_size, mmap_offset;
	} log;
	size_t size = (fe->ram.size / 4096 + 7) / 8;
	uint64_t reply;
	uint32_t got = 0;
	uint8_t *map;
	int fd, ret;

	if (!(fe->backend_features & (1ull << VU_F_LOG_ALL)) ||
	    !(fe->acked_protocol_features & (1ull << VU_PROTOCOL_F_LOG_SHMFD))) {
		fe_err(fe, -ENOTSUP,
		       "the back-end offers no dirty log (features 0x%llx, "
		       "protocol features 0x%llx)",
		       (unsigned long long)fe->backend_features,
		       (unsigned long long)fe->acked_protocol_features);
		return NULL;
	}
	fd = memfd_create("vu-dirty-log", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, size) < 0) {
		fe_err(fe, -errno, "dirty log memfd: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fe_err(fe, -errno, "mapping the dirty log: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	log.mmap_size = size;
	log.mmap_offset = 0;
	ret = vu_request(fe, VU_SET_LOG_BASE, &log, sizeof(log), &fd, 1, false,
			 &reply, sizeof(reply), &got);
	close(fd);
	if (ret == 0)
		ret = set_u64(fe, VU_SET_FEATURES,
			      fe->acked_features | (1ull << VU_F_LOG_ALL), NULL,
			      0);
	if (ret < 0) {
		munmap(map, size);
		return NULL;
	}
	*log_size = size;
	return map;
}

int vu_frontend_stop_log(struct vu_frontend *fe)
{
	return set_u64(fe, VU_SET_FEATURES, fe->acked_features, NULL, 0);
}

int vu_frontend_start(struct vu_frontend *fe)
{
	bool resume = fe->stopped;
	unsigned int i, n;
	int ret;

	fe->acked_features =
	    (1ull << VU_F_VIRTIO_VERSION_1) |
	    (fe->opt.extra_features & fe->backend_features) |
	    (fe->backend_features & (1ull << VU_F_PROTOCOL_FEATURES));
	ret = set_u64(fe, VU_SET_FEATURES, fe->acked_features, NULL, 0);
	if (ret < 0)
		return ret;
	ret = send_mem_table(fe);
	if (ret < 0)
		return ret;

	if (!resume) {
		n = fe->opt.num_queues ? fe->opt.num_queues
				       : fe->backend_queue_num;
		if (!n)
			return fe_err(
			    fe, -EPROTO,
			    "the back-end reported no queue count (MQ not "
			    "negotiated) and vu_options.num_queues is 0");
		if (n > VU_MAX_QUEUES)
			return fe_err(fe, -EINVAL,
				      "%u queues requested, at most %d", n,
				      VU_MAX_QUEUES);
		free_vqs(fe);
		fe->vq = calloc(n, sizeof(*fe->vq));
		if (!fe->vq)
			return fe_err(fe, -ENOMEM,
				      "out of memory for %u queues", n);
		for (i = 0; i < n; i++) {
			ret = split_vq_init(&fe->vq[i], &fe->ram, i,
					    fe->opt.queue_size);
			if (ret < 0)
				return fe_err(fe, ret,
					      "queue %u: cannot lay out a "
					      "%u-entry ring in guest RAM: %s",
					      i, fe->opt.queue_size,
					      strerror(-ret));
			fe->nvqs = i + 1;
		}
	}
	for (i = 0; i < fe->nvqs; i++) {
		struct split_vq *vq = &fe->vq[i];

		vq->event_idx =
		    fe->acked_features & (1ull << VU_F_RING_EVENT_IDX);
		/* a resumed ring continues where the device stopped */
		ret = start_vring(fe, vq,
				  resume ? (uint16_t)vq->stopped_base : 0);
		if (ret < 0)
			return ret;
	}
	ret = set_vring_enable(fe, true);
	if (ret < 0)
		return ret;
	fe->stopped = false;
	return set_status(fe, VU_STATUS_DRIVER_OK);
}

int vu_frontend_stop(struct vu_frontend *fe)
{
	unsigned int i;
	int ret;

	ret = set_vring_enable(fe, false);
	if (ret < 0)
		return ret;
	for (i = 0; i < fe->nvqs; i++) {
		struct vu_vring_state st = {.index = i}, rep = {0};
		uint32_t size = 0;

		ret = vu_request(fe, VU_GET_VRING_BASE, &st, sizeof(st), NULL,
				 0, false, &rep, sizeof(rep), &size);
		if (ret < 0)
			return ret;
		if (size != sizeof(rep) || rep.index != i)
			return fe_err(
			    fe, -EPROTO,
			    "GET_VRING_BASE %u: reply of %u bytes for ring %u",
			    i, size, rep.index);
		fe->vq[i].stopped_base = rep.num;
	}
	fe->stopped = true;
	return set_status(fe, 0);
}

struct vu_frontend *vu_frontend_open(const struct vu_options *opt, char *err,
				     size_t errlen)
{
	struct vu_frontend *fe = vu_frontend_new(opt, err, errlen);
	int ret;

	if (!fe)
		return NULL;
	if (vu_frontend_connect(fe) < 0 || vu_frontend_negotiate(fe) < 0)
		goto fail;
	/* QEMU reads the whole config space at realize, before starting. */
	if (fe->opt.config_size) {
		if (!(fe->acked_protocol_features &
		      (1ull << VU_PROTOCOL_F_CONFIG))) {
			fe_err(
			    fe, -EPROTO,
			    "back-end does not offer "
			    "VHOST_USER_PROTOCOL_F_CONFIG (protocol features "
			    "0x%llx)",
			    (unsigned long long)fe->backend_protocol_features);
			goto fail;
		}
		ret = vu_frontend_get_config(fe, 0, fe->config,
					     fe->opt.config_size);
		if (ret < 0)
			goto fail;
		if (ret == 0) {
			fe_err(fe, -EIO,
			       "GET_CONFIG of %u bytes: back-end answered an "
			       "empty payload (its error indication)",
			       fe->opt.config_size);
			goto fail;
		}
	}
	if (vu_frontend_start(fe) < 0)
		goto fail;
	return fe;
fail:
	snprintf(err, errlen, "%s", fe->err);
	vu_frontend_free(fe);
	return NULL;
}

struct split_vq *vu_vq(struct vu_frontend *fe, unsigned int index)
{
	return index < fe->nvqs ? &fe->vq[index] : NULL;
}

int vu_kick_and_wait(struct vu_frontend *fe, unsigned int q, int head,
		     uint32_t *used_len)
{
	struct split_vq *vq = vu_vq(fe, q);
	int ret;

	if (!vq)
		return fe_err(fe, -EINVAL, "queue %u was not set up", q);
	if (head < 0)
		return fe_err(fe, head, "queue %u: cannot place the chain: %s",
			      q, strerror(-head));
	ret = split_vq_kick(vq);
	if (ret < 0)
		return fe_err(fe, ret, "queue %u: kick: %s", q, strerror(-ret));
	ret = split_vq_wait(vq, (uint16_t)head, fe->sock, fe->opt.timeout_ms,
			    used_len);
	switch (ret) {
	case 0:
		return 0;
	case -ETIMEDOUT:
		return fe_err(fe, ret,
			      "queue %u: back-end did not return head %d "
			      "within %d ms (stall)",
			      q, head, fe->opt.timeout_ms);
	case -ECONNRESET:
		return fe_err(fe, ret,
			      "queue %u: back-end closed the connection with "
			      "head %d in flight",
			      q, head);
	case -EPROTO:
		return fe_err(fe, ret, "%s", vq->bad_used_msg);
	case -ENOMSG:
		return fe_err(
		    fe, ret,
		    "queue %u: head %d was used but the back-end never "
		    "signalled the call eventfd within %d ms (lost interrupt)",
		    q, head, fe->opt.timeout_ms);
	default:
		return fe_err(fe, ret, "queue %u: waiting for head %d: %s", q,
			      head, strerror(-ret));
	}
}

int vu_call(struct vu_frontend *fe, unsigned int q, const struct vq_buf *out,
	    unsigned int nout, const struct vq_buf *in, unsigned int nin,
	    uint32_t *used_len)
{
	struct split_vq *vq = vu_vq(fe, q);

	if (!vq)
		return fe_err(fe, -EINVAL, "queue %u was not set up", q);
	return vu_kick_and_wait(fe, q, split_vq_add(vq, out, nout, in, nin),
				used_len);
}

bool vu_connection_alive(struct vu_frontend *fe, int timeout_ms)
{
	struct pollfd pfd = {.fd = fe->sock, .events = POLLRDHUP};
	int r;

	if (fe->sock < 0)
		return false;
	do {
		r = poll(&pfd, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r <= 0)
		return true;
	return !(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* SET_DEVICE_STATE_FD with one end of a fresh pipe; the other in *mine. */
static int state_fd(struct vu_frontend *fe, uint32_t direction, int *mine)
{
	uint32_t params[2] = {direction, 0 /* stopped */};
	uint32_t size = 0;
	uint64_t r = 0;
	int p[2], theirs, ret;

	if (!(fe->acked_protocol_features &
	      (1ull << VU_PROTOCOL_F_DEVICE_STATE)))
		return fe_err(fe, -ENOTSUP, "the back-end does not offer "
			      "VHOST_USER_PROTOCOL_F_DEVICE_STATE");
	if (pipe2(p, O_CLOEXEC) < 0)
		return fe_err(fe, -errno, "pipe: %s", strerror(errno));
	/* save: the back-end writes; load: it reads */
	theirs = direction == 0 ? p[1] : p[0];
	*mine = direction == 0 ? p[0] : p[1];
	ret = vu_request(fe, VU_SET_DEVICE_STATE_FD, params, sizeof(params),
			 &theirs, 1, false, &r, sizeof(r), &size);
	close(theirs);
	if (ret == 0 && (size != sizeof(r) || (r & 0xff)))
		ret = fe_err(fe, -EIO, "SET_DEVICE_STATE_FD: reply 0x%llx",
			     (unsigned long long)r);
	if (ret < 0)
		close(*mine);
	return ret;
}

static int check_state(struct vu_frontend *fe)
{
	uint64_t r = 1;
	int ret = get_u64(fe, VU_CHECK_DEVICE_STATE, &r);

	if (ret == 0 && r)
		return fe_err(fe, -EIO, "CHECK_DEVICE_STATE: the back-end "
			      "reports failure (%llu)", (unsigned long long)r);
	return ret;
}

int vu_frontend_save_state(struct vu_frontend *fe, uint8_t **buf, size_t *len)
{
	size_t cap = 65536;
	ssize_t n;
	int fd, ret;

	*buf = NULL;
	*len = 0;
	ret = state_fd(fe, 0, &fd);
	if (ret < 0)
		return ret;
	*buf = malloc(cap);
	while (*buf) {
		if (*len == cap)
			*buf = realloc(*buf, cap *= 2);
		if (!*buf)
			break;
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	if (!*buf)
		return fe_err(fe, -ENOMEM, "out of memory for the state");
	return check_state(fe);
}

int vu_frontend_load_state(struct vu_frontend *fe, const uint8_t *buf,
			   size_t len)
{
	size_t done = 0;
	ssize_t n;
	int fd, ret;

	ret = state_fd(fe, 1, &fd);
	if (ret < 0)
		return ret;
	while (done < len) {
		n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return fe_err(fe, -EIO, "writing the state: %s",
				      n < 0 ? strerror(errno) : "closed");
		}
		done += (size_t)n;
	}
	close(fd);
	return check_state(fe);
}

int vu_frontend_detach(struct vu_frontend *fe)
{
	int fd = fe->sock;

	fe->sock = -1;
	return fd;
}
