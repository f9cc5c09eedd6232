// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Helpers shared by the verbs test programs (see pvo-test-util.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pvo-test-util.h"

const struct pt_conn pt_conn_default = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC,
	.timeout = 14,
	.retry_cnt = 7,
	.rnr_retry = 7,
	.min_rnr_timer = 1,
};

void pt_die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

void pt_open(struct pt_dev *d, const char *name, int gid_index)
{
	struct ibv_device **list;
	int i, n;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (!list || n == 0)
		pt_die("no RDMA device (is the driver loaded?)");
	for (i = 0; i < n; i++)
		if (!name || strcmp(ibv_get_device_name(list[i]), name) == 0)
			break;
	if (i == n) {
		errno = 0;
		pt_die("no RDMA device named %s", name);
	}
	d->ctx = ibv_open_device(list[i]);
	if (!d->ctx)
		pt_die("ibv_open_device %s", ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	d->port = 1;
	d->gid_index = gid_index;
	if (ibv_query_device(d->ctx, &d->attr))
		pt_die("ibv_query_device");
	if (ibv_query_port(d->ctx, d->port, &d->port_attr))
		pt_die("ibv_query_port");
	if (ibv_query_gid(d->ctx, d->port, gid_index, &d->gid))
		pt_die("ibv_query_gid index %d", gid_index);
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		pt_die("ibv_alloc_pd");
}

void pt_close(struct pt_dev *d)
{
	if (d->pd && ibv_dealloc_pd(d->pd))
		pt_die("ibv_dealloc_pd");
	if (d->ctx && ibv_close_device(d->ctx))
		pt_die("ibv_close_device");
	memset(d, 0, sizeof(*d));
}

static void tune_socket(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int pt_tcp_accept(int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int one = 1, lfd, fd;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		pt_die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
		pt_die("listening on TCP port %d", port);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		pt_die("accept on TCP port %d", port);
	close(lfd);
	tune_socket(fd);
	return fd;
}

int pt_tcp_connect(const char *host, int port, int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint64_t deadline = pt_now_ms() + (uint64_t)timeout_s * 1000;
	int fd;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		errno = 0;
		pt_die("%s: expected an IPv4 address", host);
	}
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			pt_die("socket");
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(fd);
		if (pt_now_ms() > deadline)
			pt_die("connecting to %s:%d for %d s", host, port, timeout_s);
		usleep(100 * 1000);
	}
	tune_socket(fd);
	return fd;
}

void pt_tcp_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			pt_die("sending to the peer");
		p += n;
		len -= n;
	}
}

bool pt_tcp_recv(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = recv(fd, p + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && got == 0)
			return false;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			pt_die("receiving from the peer (connection lost)");
		}
		got += n;
	}
	return true;
}

void pt_local_info(struct pt_dev *d, struct ibv_qp *qp, struct pt_qp_info *info)
{
	memset(info, 0, sizeof(*info));
	info->qpn = qp->qp_num;
	info->psn = lrand48() & 0xffffff;
	memcpy(info->gid, d->gid.raw, 16);
}

static void fill_ah(struct pt_dev *d, struct ibv_ah_attr *ah, const uint8_t gid[16])
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, gid, 16);
	ah->grh.sgid_index = d->gid_index;
	ah->grh.hop_limit = 64;
	ah->port_num = d->port;
}

int pt_connect_qp(struct pt_dev *d, struct ibv_qp *qp, const struct pt_qp_info *local,
		  const struct pt_qp_info *remote, const struct pt_conn *c)
{
	bool rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = d->port;
	a.qp_access_flags = rc ? c->access : (c->access & IBV_ACCESS_REMOTE_WRITE);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return errno;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d->port_attr.active_mtu;
	a.dest_qp_num = remote->qpn;
	a.rq_psn = remote->psn;
	fill_ah(d, &a.ah_attr, remote->gid);
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (rc) {
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = c->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(qp, &a, mask))
		return errno;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = local->psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		a.timeout = c->timeout;
		a.retry_cnt = c->retry_cnt;
		a.rnr_retry = c->rnr_retry;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, mask))
		return errno;
	return 0;
}

int pt_connect_pair(struct pt_dev *d, struct ibv_qp *a, struct ibv_qp *b,
		    const struct pt_conn *c)
{
	struct pt_qp_info ia, ib;
	int err;

	pt_local_info(d, a, &ia);
	pt_local_info(d, b, &ib);
	err = pt_connect_qp(d, a, &ia, &ib, c);
	return err ? err : pt_connect_qp(d, b, &ib, &ia, c);
}

int pt_ud_ready(struct pt_dev *d, struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = d->port;
	a.qkey = qkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = lrand48() & 0xffffff;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return errno;
	return 0;
}

int pt_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init))
		return -errno;
	return a.qp_state;
}

int pt_set_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE) ? errno : 0;
}

struct ibv_qp *pt_create_rc(struct pt_dev *d, struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &a);

	if (!qp)
		pt_die("ibv_create_qp (RC, %u WRs)", depth);
	return qp;
}

struct ibv_ah *pt_create_ah(struct pt_dev *d, const uint8_t gid[16])
{
	struct ibv_ah_attr ah;

	fill_ah(d, &ah, gid);
	return ibv_create_ah(d->pd, &ah);
}

uint64_t pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t deadline = pt_now_ms() + timeout_ms;
	unsigned int spins = 0;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0) {
			errno = -n;
			pt_die("ibv_poll_cq");
		}
		if (n == 1)
			return 1;
		/* read the clock only now and then: polling stays cheap */
		if ((++spins & 1023) == 0 && pt_now_ms() > deadline)
			return 0;
	}
}

const char *pt_qp_state_str(int state)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	if (state >= 0 && state < (int)(sizeof(names) / sizeof(names[0])))
		return names[state];
	return "?";
}

uint64_t pt_mix(uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void pt_stream_init(struct pt_stream *s, uint64_t seed)
{
	s->state = pt_mix(seed, 0x5eed) | 1;
}

/* xorshift64*: eight bytes per step */
static uint64_t stream_next(struct pt_stream *s)
{
	s->state ^= s->state >> 12;
	s->state ^= s->state << 25;
	s->state ^= s->state >> 27;
	return s->state * 0x2545f4914f6cdd1dull;
}

void pt_stream_fill(struct pt_stream *s, uint8_t *p, size_t n)
{
	uint64_t v;

	while (n >= 8) {
		v = stream_next(s);
		memcpy(p, &v, 8);
		p += 8;
		n -= 8;
	}
	if (n) {
		v = stream_next(s);
		memcpy(p, &v, n);
	}
}

uint64_t pt_checksum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ull;
	}
	return h;
}

int pt_tap_n, pt_tap_failed;

bool pt_tap_ok(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++pt_tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		pt_tap_failed++;
	return ok;
}

bool pt_parse_num(const char *s, long min, long max, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 0);
	return !errno && end != s && !*end && *v >= min && *v <= max;
}

void pt_parse_args(int argc, char **argv, const char *own_opts,
		   bool (*own)(int opt, const char *arg, void *ctx), void *ctx,
		   struct pt_args *a, void (*usage)(void))
{
	char optstring[64];
	long v;
	int opt;

	snprintf(optstring, sizeof(optstring), "d:g:p:%s", own_opts);
	while ((opt = getopt(argc, argv, optstring)) != -1) {
		switch (opt) {
		case 'd':
			a->dev = optarg;
			break;
		case 'g':
			if (!pt_parse_num(optarg, 0, INT_MAX, &v)) {
				fprintf(stderr, "%s: -g %s: expected a GID index\n",
					program_invocation_short_name, optarg);
				usage();
			}
			a->gid_index = v;
			break;
		case 'p':
			if (!pt_parse_num(optarg, 1, 65535, &v)) {
				fprintf(stderr, "%s: -p %s: expected a TCP port\n",
					program_invocation_short_name, optarg);
				usage();
			}
			a->port = v;
			break;
		case '?':
			usage();
			break;
		default:
			if (!own || !own(opt, optarg, ctx)) {
				fprintf(stderr, "%s: -%c %s: not a valid value\n",
					program_invocation_short_name, opt,
					optarg ? optarg : "");
				usage();
			}
		}
	}
	if (optind < argc - 1) {
		fprintf(stderr, "%s: one peer address at most, got '%s' too\n",
			program_invocation_short_name, argv[optind + 1]);
		usage();
	}
	a->peer = optind < argc ? argv[optind] : NULL;
}
