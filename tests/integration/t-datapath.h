// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath's shared fixture: includes, sizes, the nodes and pairs, and
 * what the section files (t-datapath-*.c) use of one another.
 */
#ifndef T_DATAPATH_H
#define T_DATAPATH_H

#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define GUARD 64
#define GUARD_BYTE 0xd5
#define DATA_LEN (2 * MIB + 64 * KIB) /* per node data buffer */
#define NODE_CQE 1024

/* t-datapath.c: the back-end(s), nodes a, b, c and the helpers */

extern bool overlay;
/* T_DATAPATH_HOSTVERBS: the host RDMA device a <-> b QPs run on ("": none) */
extern char hv_dev[64]; /* T_DATAPATH_OVERLAY=1: b on a second back-end */
extern char hv3_dev[64], hv3_netdev[16]; /* host 3's own device */
extern char hv_netdev[16];
extern unsigned int overlay_port; /* the VTEPs' VXLAN port */
extern struct backend_proc bp, bp2;
/* overlay: host 3 (VTEP 127.0.0.3), started by start_host3(), serves a
 * as a migration's destination; every host reads migration_key */
extern struct backend_proc bp3;
extern char migration_key[64];
extern char red_key[64]; /* tenant red's [tenant] migration-key */
int start_host3(char *err, size_t len);

/* One side of the tests: a VM's user context with a PD, CQs and a big
 * registered buffer. */
struct node {
	const char *name;
	struct sim_vm *vm;
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq scq, rcq;
	struct sim_buf buf;
	struct sim_mr mr; /* all of buf, every access right */
	int gid_v4;	  /* GID index of the node's first IPv4 address */
};

struct pair {
	struct node *na, *nb;
	struct sim_qp a, b;
	bool made;
};

extern struct node A, B, C;
/* Quick retries so that error paths finish fast. */
extern struct sim_conn fast;
extern int timeout_ms;
extern uint8_t *scratch; /* 2 x DATA_LEN host bytes */

uint8_t pair_gid(void);
void __attribute__((noreturn)) lost(const char *what);
long long now_ms(void);
void sleep_ms(int ms);
void fill_pattern_at(struct sim_buf *b, uint64_t off, uint64_t len,
		     uint32_t seed, uint64_t base);
void fill_pattern(struct sim_buf *b, uint64_t off, uint64_t len, uint32_t seed);
void prepare_dst(struct sim_buf *b, uint64_t off, uint64_t len);
bool data_ok(const char *what, struct sim_buf *b, uint64_t off, uint64_t len,
	     uint32_t seed, uint64_t base);
bool check_data(const char *what, struct sim_buf *b, uint64_t off, uint64_t len,
		uint32_t seed);
uint64_t buf_sum(struct sim_buf *b);
const char *cqe_str(const struct pvo_cqe *c);
bool get_cqe(struct sim_cq *cq, struct pvo_cqe *c, const char *what);
bool cqe_ok(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
	    unsigned int status, const char *what);
bool cqe_is(const struct pvo_cqe *c, uint64_t wr_id, int opcode,
	    unsigned int status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
bool wait_cqe(struct sim_cq *cq, struct pvo_cqe *c, const char *what);
bool expect_cqe(struct sim_cq *cq, uint64_t wr_id, int opcode,
		unsigned int status, const char *what);
bool expect_no_cqe(struct sim_cq *cq, int ms, const char *what);
void drain(struct node *n);
void drain_all(void);
int qp_state(struct sim_qp *qp);
bool expect_state(struct sim_qp *qp, int state, const char *what);
struct sim_qp_init qp_init(struct node *n, uint8_t type);
bool pair_make_ex(struct pair *p, struct node *na, struct node *nb,
		  uint8_t type, bool v4, const struct sim_conn *ca,
		  const struct sim_conn *cb);
bool pair_make(struct pair *p, uint8_t type, const struct sim_conn *ca,
	       const struct sim_conn *cb);
/* An RC pair with a's receives on srq (of A). */
bool pair_make_srq(struct pair *p, struct sim_srq *srq,
		   const struct sim_conn *ca, const struct sim_conn *cb);
/* ... an RC pair na <-> nb, na's QP on srq (an SRQ of na's). */
bool pair_make_srq_at(struct pair *p, struct node *na, struct node *nb,
		      struct sim_srq *srq, const struct sim_conn *ca,
		      const struct sim_conn *cb);
void pair_destroy(struct pair *p);
struct sim_sge sge_of(struct node *n, uint64_t off, uint32_t len);
uint64_t al8(struct node *n, uint64_t off);
size_t read_key(const char *path, uint8_t *key, size_t cap);
bool post_recv1(struct sim_qp *qp, struct node *n, uint64_t wr_id, uint64_t off,
		uint32_t len);
bool post1(struct sim_qp *qp, const struct sim_wr *wr);
struct sim_wr wr1(uint64_t wr_id, uint8_t opcode, struct node *n, uint64_t off,
		  uint32_t len);
struct sim_wr write_wr(uint64_t id, uint64_t loff, uint32_t len, uint64_t raddr,
		       uint32_t rkey);
void check_sq_consumed(struct sim_qp *qp, const char *what);
bool node_open(struct node *n, const char *ipv4);

/* t-datapath-transfers.c: RC and UC transfers */

enum xfer_kind { X_SEND, X_SEND_IMM, X_WRITE, X_WRITE_IMM, X_READ };

extern uint8_t inline_buf[256];

const char *qpt_name(uint8_t t);
bool xfer(struct pair *p, enum xfer_kind k, uint32_t len, uint64_t so,
	  uint64_t doff, bool inl, uint32_t seed);
uint64_t src_off(unsigned int k);
uint64_t dst_off(unsigned int k);
void test_gso_padding(void);
void test_mgmt_clients(void);
void test_rc_transfers(void);
void test_rc_inline(void);
void test_rc_atomics(void);
void test_rc_sges(void);
void test_rc_batches(void);
void test_uc(void);

/* t-datapath-ud.c: UD */

#define QKEY 0x11111111u

struct ud_pair {
	struct sim_qp a, b;
	uint32_t ah_v4, ah_ll; /* a's AHs to b */
};

bool ud_make(struct ud_pair *u, struct node *na, struct node *nb);
void ud_destroy(struct ud_pair *u, struct node *na, struct node *nb);
struct sim_wr ud_wr(uint64_t wr_id, uint32_t ah, uint32_t qpn, uint32_t qkey,
		    uint64_t off, uint32_t len);
void test_ud(void);
void test_ud_mcast(void);

/* t-datapath-srq-cq.c: SRQ, CQ arming and events */

void test_srq(void);
void test_cq_arm(void);

/* t-datapath-errors.c: error completions, RESET and tiny rings */

void test_errors(void);
void test_mem_table_again(void);
void test_reset(void);

/* t-datapath-malformed.c: malformed objects and commands */

/* a PD and a CQ in a second context of VM a, made by ensure_ctx2() */
extern struct sim_pd pd2;
extern struct sim_cq cq2;

bool ensure_ctx2(void);
void test_malformed(void);

/* t-datapath-kernel.c: doorbells and kernel QPs */

void test_doorbells(void);
void test_gsi(void);
void test_kernel_qp(void);
void test_fast_reg(void);
void test_rereg_mr(void);

/* t-datapath-mw.c: memory windows */

void test_mw(void);

/* t-datapath-dirtylog.c: the vhost-user dirty log */

void test_dirty_log(void);

/* t-datapath-migrate.c: live migration within the back-end */

void test_migrate(void);

/* t-datapath-rebind.c: peers follow a moved host-verbs VM's numbers */

void test_rebind(void);

/* t-datapath-isolation.c: tenant isolation, per-VM quotas */

void test_route_change(void);
void test_isolation(void);

/* t-datapath-ingress.c: forged datagrams from the underlay (overlay) */
void test_overlay_ingress(void);
void test_quotas(void);

/* t-datapath-bounded.c: bounded work per callback (floods, mid-WQE
 * errors) */
void test_bounded(void);

/* t-datapath-fuzz.c: fuzz, a VM going away with work in flight */

extern uint64_t rng_state; /* T_DATAPATH_SEED */

void test_fuzz(void);
void test_disconnect(void);

#endif /* T_DATAPATH_H */
