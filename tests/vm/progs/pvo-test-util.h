/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the verbs test programs that run in test guests:
 * opening a device by name, a TCP side channel for the out-of-band exchange,
 * connecting RC/UC QPs, polling with a deadline, patterned data.
 */
#ifndef PVO_TEST_UTIL_H
#define PVO_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct pt_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct ibv_port_attr port_attr;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
};

/* What a peer tells about one of its QPs (and optionally a buffer). */
struct pt_qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* RC/UC connection parameters of the local QP. */
struct pt_conn {
	int access;		/* qp_access_flags */
	uint8_t timeout;	/* local ACK timeout (4.096 us * 2^timeout) */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
};

extern const struct pt_conn pt_conn_default;

/* Prints "prog: message: strerror(errno)" and exits 1. */
void pt_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Opens device name (NULL: the first one), allocates a PD, queries device,
 * port 1 and GID gid_index. Dies with a message on failure.
 */
void pt_open(struct pt_dev *d, const char *name, int gid_index);
void pt_close(struct pt_dev *d);

/* TCP side channel: the server accepts one connection on port; the client
 * retries connecting for up to timeout_s seconds (the server may start
 * later). Both return the connected socket or die.
 */
int pt_tcp_accept(int port);
int pt_tcp_connect(const char *host, int port, int timeout_s);
void pt_tcp_send(int fd, const void *buf, size_t len);
/* Returns false on EOF before the first byte, dies on a partial read. */
bool pt_tcp_recv(int fd, void *buf, size_t len);

void pt_local_info(struct pt_dev *d, struct ibv_qp *qp, struct pt_qp_info *info);

/* RESET -> INIT -> RTR -> RTS for RC/UC (UC ignores the ACK fields).
 * Returns 0 or the errno of the failing ibv_modify_qp.
 */
int pt_connect_qp(struct pt_dev *d, struct ibv_qp *qp, const struct pt_qp_info *local,
		  const struct pt_qp_info *remote, const struct pt_conn *c);
/* Two RC/UC QPs of this process connected to each other (looped back
 * through the device): 0 or the errno of the failing ibv_modify_qp. */
int pt_connect_pair(struct pt_dev *d, struct ibv_qp *a, struct ibv_qp *b,
		    const struct pt_conn *c);
/* An RC QP on cq (send and receive), every send signalled, depth WRs of
 * one SGE each way; dies if the device refuses it. */
struct ibv_qp *pt_create_rc(struct pt_dev *d, struct ibv_cq *cq, uint32_t depth);
/* RESET -> INIT -> RTR -> RTS for UD with qkey. */
int pt_ud_ready(struct pt_dev *d, struct ibv_qp *qp, uint32_t qkey);
int pt_qp_state(struct ibv_qp *qp);
int pt_set_error(struct ibv_qp *qp);
struct ibv_ah *pt_create_ah(struct pt_dev *d, const uint8_t gid[16]);

/* Busy-polls cq for one completion until timeout_ms: 1 with *wc filled,
 * 0 on timeout; dies if ibv_poll_cq fails.
 */
int pt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

uint64_t pt_now_ms(void);
const char *pt_qp_state_str(int state);

/* Pattern streams: a deterministic byte sequence per seed. */
struct pt_stream {
	uint64_t state;
};

uint64_t pt_mix(uint64_t a, uint64_t b);
void pt_stream_init(struct pt_stream *s, uint64_t seed);
void pt_stream_fill(struct pt_stream *s, uint8_t *p, size_t n);
/* A cheap checksum of a buffer (FNV-1a 64). */
uint64_t pt_checksum(const void *p, size_t n);

/* TAP lines ("ok N - ...") the VM tests forward; counts in pt_tap_*. */
extern int pt_tap_n, pt_tap_failed;
bool pt_tap_ok(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The command line every test program shares: -d DEV, -g GID_INDEX,
 * -p PORT (of the TCP side channel) and, as the one optional argument, the
 * peer's address (without it the program is the server side). Set the
 * defaults in *a before the call.
 */
struct pt_args {
	const char *dev;
	int gid_index;
	int port;
	const char *peer;
};

/*
 * Parses argv: the shared options and the program's own (own_opts, in
 * getopt's syntax), each handed to own(opt, optarg, ctx), which returns
 * false for a value it refuses. An unknown option, a bad number, a second
 * argument or a refused value prints what was wrong and calls usage()
 * (which must not return).
 */
void pt_parse_args(int argc, char **argv, const char *own_opts,
		   bool (*own)(int opt, const char *arg, void *ctx), void *ctx,
		   struct pt_args *a, void (*usage)(void));

/* A whole number in [min, max] (decimal, 0x hex or 0 octal), or false. */
bool pt_parse_num(const char *s, long min, long max, long *v);

#endif
