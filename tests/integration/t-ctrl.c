// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-ctrl: control-queue contract of pvrdma-overlayd, driven through the
 * native vhost-user test front-end. Starts its own back-end, checks the
 * config space and every control command against include/pvo-device.h,
 * feeds it malformed commands, and requires it to keep answering and to
 * exit cleanly on SIGTERM. Output is TAP.
 *
 * Environment: PVO_BACKEND (back-end binary), PVO_TEST_TIMEOUT_MS
 * (per-command timeout, default 5000), PVO_TEST_KEEP=1 (keep the temp
 * dir with the back-end log).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "tap.h"
#include "vu_frontend.h"

#define IB_PORT_ACTIVE 4
#define IB_PHYS_LINK_UP 5
#define NO_SUCH_CTX 0x7fffff00u
/* Exhausting a quota larger than this would take too long for a test. */
#define MAX_QUOTA_WALK 200000u

static const uint8_t vm_mac[6] = {0x52, 0x54, 0x00, 0x00, 0x00, 0x01};
static const char *const backend_args[] = {
    "--name", "vm1",	  "--vni", "100",      "--mac", "52:54:00:00:00:01",
    "--ip",   "10.0.0.1", "--ip",  "10.0.0.2", NULL};

static struct backend_proc bp;
static struct vu_frontend *fe;
static struct pvo_config cfg;
static struct pvo_resp_query_device qdev;
static struct pvo_resp_query_port qport;
static uint32_t num_queues; /* config num_queues */

/* The back-end stopped answering: say why, show its log, give up. */
static void __attribute__((noreturn)) lost(const char *what)
{
	tap_diag("%s: %s", what, fe ? vu_frontend_error(fe) : "no front-end");
	backend_running(&bp);
	tap_diag("back-end %s", backend_describe(&bp));
	backend_dump_log(&bp, 40);
	backend_stop(&bp, 2000);
	backend_cleanup(&bp, true);
	tap_bail("back-end stopped answering during: %s (log kept in %s)", what,
		 bp.dir);
}

/* Commands must come back with a status; -EPROTO is a wrong answer. */
static int C(int st, const char *what)
{
	if (st == -EPROTO)
		tap_diag("%s: %s", what, vu_frontend_error(fe));
	else if (st < 0)
		lost(what);
	return st;
}

static uint32_t le32(__le32 v)
{
	return le32toh(v);
}
static uint16_t le16(__le16 v)
{
	return le16toh(v);
}

/* ------------------------------------------------------------------ */

static void test_start_and_handshake(void)
{
	struct vu_options opt = {
	    .ram_size = 64ull << 20,
	    .ram_regions = 2,
	    .queue_size = 128,
	    .ack_every_message = true,
	};
	char err[512];
	int ret, got;

	ret = backend_start(&bp, backend_args, 10000, err, sizeof(err));
	if (!tap_ok(ret == 0, "back-end starts and creates its socket")) {
		tap_diag("%s", err);
		backend_dump_log(&bp, 40);
		tap_bail("cannot run the back-end: %s", err);
	}
	tap_diag("back-end %s, socket %s", bp.binary, bp.socket_path);

	opt.socket_path = bp.socket_path;
	fe = vu_frontend_new(&opt, err, sizeof(err));
	if (!fe)
		tap_bail("front-end setup: %s", err);
	/* bind() and listen() are not atomic: allow a moment */
	for (got = 0; got < 100; got++) {
		ret = vu_frontend_connect(fe);
		if (ret != -ECONNREFUSED)
			break;
		usleep(10000);
	}
	if (!tap_ok(ret == 0, "connect to the vhost-user socket"))
		lost("connect");

	ret = vu_frontend_negotiate(fe);
	if (!tap_ok(ret == 0, "GET_FEATURES / GET+SET_PROTOCOL_FEATURES / "
			      "GET_QUEUE_NUM / SET_OWNER"))
		lost("negotiation");
	tap_diag("features 0x%llx, protocol features 0x%llx, queue num %u",
		 (unsigned long long)fe->backend_features,
		 (unsigned long long)fe->backend_protocol_features,
		 fe->backend_queue_num);
	tap_ok(fe->backend_features & (1ull << VU_F_PROTOCOL_FEATURES),
	       "back-end offers VHOST_USER_F_PROTOCOL_FEATURES");
	tap_ok(
	    (fe->backend_protocol_features & (1ull << VU_PROTOCOL_F_CONFIG)) &&
		(fe->backend_protocol_features & (1ull << VU_PROTOCOL_F_MQ)) &&
		(fe->backend_protocol_features &
		 (1ull << VU_PROTOCOL_F_REPLY_ACK)),
	    "protocol features include CONFIG, MQ and REPLY_ACK");
	tap_ok(fe->backend_queue_num >= 3 &&
		   fe->backend_queue_num <= PVO_MAX_QUEUES,
	       "GET_QUEUE_NUM = %u is within [3, %d]", fe->backend_queue_num,
	       PVO_MAX_QUEUES);

	got = vu_frontend_get_config(fe, 0, &cfg, sizeof(cfg));
	if (!tap_ok(got == (int)(VU_CONFIG_HDR_SIZE + sizeof(cfg)),
		    "GET_CONFIG answers the full %zu-byte config space",
		    sizeof(cfg)))
		tap_diag("got %d: %s", got,
			 got < 0 ? vu_frontend_error(fe) : "");
	if (got < 0)
		lost("GET_CONFIG");

	ret = vu_frontend_start(fe);
	if (!tap_ok(ret == 0,
		    "SET_FEATURES, SET_MEM_TABLE (2 regions), %u vrings, "
		    "SET_VRING_ENABLE",
		    fe->backend_queue_num))
		lost("starting the vrings");
}

static void test_config(void)
{
	uint8_t want[PVO_GID_LEN], zero[PVO_GID_LEN] = {0};
	const char *ips[] = {"10.0.0.1", "10.0.0.2"};
	unsigned int i, j, n = le16(cfg.num_allowed_gids);
	bool zero_tail = true;

	num_queues = le16(cfg.num_queues);
	tap_ok(le32(cfg.version) == PVO_INTERFACE_VERSION,
	       "config version = %u", le32(cfg.version));
	tap_ok(!memcmp(cfg.mac, vm_mac, 6),
	       "config MAC = %02x:%02x:%02x:%02x:%02x:%02x (--mac "
	       "52:54:00:00:00:01)",
	       cfg.mac[0], cfg.mac[1], cfg.mac[2], cfg.mac[3], cfg.mac[4],
	       cfg.mac[5]);
	tap_ok(n == 2, "config num_allowed_gids = %u for two --ip", n);
	for (i = 0; i < 2; i++) {
		bool found = false;

		pvo_gid_from_ipv4(want, ips[i]);
		for (j = 0; j < n && j < PVO_MAX_ALLOWED_GIDS; j++)
			found |=
			    !memcmp(cfg.allowed_gids[j], want, PVO_GID_LEN);
		tap_ok(found, "allowed GIDs contain %s", pvo_gid_str(want));
	}
	for (j = n; j < PVO_MAX_ALLOWED_GIDS; j++)
		zero_tail &= !memcmp(cfg.allowed_gids[j], zero, PVO_GID_LEN);
	tap_ok(zero_tail, "allowed GID slots past num_allowed_gids are zero");
	tap_ok(num_queues >= 3 && num_queues <= fe->backend_queue_num,
	       "config num_queues = %u is within [3, GET_QUEUE_NUM = %u]",
	       num_queues, fe->backend_queue_num);
	tap_ok(le32(cfg.max_ucontexts) == 1024,
	       "config max_ucontexts = %u, the default quota (1024), not "
	       "bounded by the %u user doorbell queues",
	       le32(cfg.max_ucontexts), num_queues - PVO_VQ_DB_FIRST_USER);
	tap_ok(le16(cfg.mtu) >= 576 && le16(cfg.mtu) <= 9000,
	       "config mtu = %u is a plausible Ethernet MTU", le16(cfg.mtu));
	tap_ok(cfg.backend == 0, "config backend field is 0 (the VMM fills it)");
}

static void test_query_device(void)
{
	struct pvo_resp_query_device again;
	uint64_t psc;
	int st;

	st = C(pvo_query_device(fe, &qdev), "QUERY_DEVICE");
	TAP_STATUS(st, PVO_STATUS_OK,
		   "QUERY_DEVICE returns OK with a full body");
	tap_diag("max_qp %u max_cq %u max_mr %u max_pd %u max_ah %u max_srq %u "
		 "max_qp_wr %u max_cqe %u",
		 le32(qdev.max_qp), le32(qdev.max_cq), le32(qdev.max_mr),
		 le32(qdev.max_pd), le32(qdev.max_ah), le32(qdev.max_srq),
		 le32(qdev.max_qp_wr), le32(qdev.max_cqe));
	tap_ok(qdev.phys_port_cnt == 1, "phys_port_cnt = %u",
	       qdev.phys_port_cnt);
	tap_ok(le32(qdev.max_qp) && le32(qdev.max_cq) && le32(qdev.max_mr) &&
		   le32(qdev.max_pd) && le32(qdev.max_ah),
	       "object limits (qp, cq, mr, pd, ah) are nonzero");
	tap_ok(le32(qdev.max_qp_wr) && le32(qdev.max_cqe) &&
		   le32(qdev.max_send_sge) && le32(qdev.max_recv_sge),
	       "queue limits (qp_wr %u, cqe %u, send_sge %u, recv_sge %u) are "
	       "nonzero",
	       le32(qdev.max_qp_wr), le32(qdev.max_cqe),
	       le32(qdev.max_send_sge), le32(qdev.max_recv_sge));
	tap_ok(!le32(qdev.max_srq) ||
		   (le32(qdev.max_srq_wr) && le32(qdev.max_srq_sge)),
	       "SRQ limits are consistent (max_srq %u, srq_wr %u, srq_sge %u)",
	       le32(qdev.max_srq), le32(qdev.max_srq_wr),
	       le32(qdev.max_srq_sge));
	psc = le64toh(qdev.page_size_cap);
	tap_ok(psc & 4096, "page_size_cap 0x%llx includes 4 KiB",
	       (unsigned long long)psc);
	tap_ok(le64toh(qdev.max_mr_size) >= 4096, "max_mr_size = %llu",
	       (unsigned long long)le64toh(qdev.max_mr_size));
	tap_ok(le32(qdev.atomic_cap) <= 2,
	       "atomic_cap = %u is an IB enum value", le32(qdev.atomic_cap));
	tap_ok(le16(qdev.max_pkeys) >= 1, "max_pkeys = %u",
	       le16(qdev.max_pkeys));
	tap_ok(qdev.node_guid != 0, "node_guid is set (0x%016llx)",
	       (unsigned long long)be64toh(qdev.node_guid));
	st = C(pvo_query_device(fe, &again), "QUERY_DEVICE");
	tap_ok(st == PVO_STATUS_OK && !memcmp(&again, &qdev, sizeof(qdev)),
	       "a second QUERY_DEVICE returns the same bytes");
}

static unsigned int ib_mtu_bytes(unsigned int m)
{
	return m >= 1 && m <= 5 ? 128u << m : 0;
}

static void test_query_port_pkey(void)
{
	struct pvo_resp_query_port bad;
	struct pvo_resp_query_pkey pk;
	int st;

	st = C(pvo_query_port(fe, 1, &qport), "QUERY_PORT");
	TAP_STATUS(st, PVO_STATUS_OK, "QUERY_PORT port 1 returns OK");
	tap_ok(qport.state == IB_PORT_ACTIVE &&
		   qport.phys_state == IB_PHYS_LINK_UP,
	       "port state %u / phys_state %u = ACTIVE / LinkUp", qport.state,
	       qport.phys_state);
	tap_ok(ib_mtu_bytes(qport.active_mtu) && ib_mtu_bytes(qport.max_mtu) &&
		   qport.active_mtu <= qport.max_mtu &&
		   ib_mtu_bytes(qport.active_mtu) <= le16(cfg.mtu),
	       "active_mtu %u (%u B) <= max_mtu %u and fits the %u-byte tenant "
	       "MTU",
	       qport.active_mtu, ib_mtu_bytes(qport.active_mtu), qport.max_mtu,
	       le16(cfg.mtu));
	tap_ok(
	    le32(qport.gid_tbl_len) >= 1u + le16(cfg.num_allowed_gids),
	    "gid_tbl_len %u holds the link-local GID and the %u allowed GIDs",
	    le32(qport.gid_tbl_len), le16(cfg.num_allowed_gids));
	tap_ok(le16(qport.pkey_tbl_len) == le16(qdev.max_pkeys),
	       "pkey_tbl_len %u = QUERY_DEVICE max_pkeys %u",
	       le16(qport.pkey_tbl_len), le16(qdev.max_pkeys));
	tap_ok(le32(qport.max_msg_sz) >= 4096, "max_msg_sz = %u",
	       le32(qport.max_msg_sz));
	tap_ok(qport.reserved == 0, "QUERY_PORT reserved field is 0");
	st = C(pvo_query_port(fe, 0, &bad), "QUERY_PORT 0");
	TAP_STATUS(st, PVO_STATUS_EINVAL, "QUERY_PORT port 0 -> EINVAL");
	st = C(pvo_query_port(fe, 2, &bad), "QUERY_PORT 2");
	TAP_STATUS(st, PVO_STATUS_EINVAL, "QUERY_PORT port 2 -> EINVAL");

	st = C(pvo_query_pkey(fe, 1, 0, &pk), "QUERY_PKEY");
	TAP_STATUS(st, PVO_STATUS_OK, "QUERY_PKEY index 0 returns OK");
	tap_ok(le16(pk.pkey) == 0xffff,
	       "P_Key 0 = 0x%04x (default full member)", le16(pk.pkey));
	st = C(pvo_query_pkey(fe, 1, 1, &pk), "QUERY_PKEY 1");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "QUERY_PKEY index 1 -> EINVAL (only index 0 exists)");
}

static void test_gids(void)
{
	uint8_t ll[PVO_GID_LEN], ip1[PVO_GID_LEN], foreign[PVO_GID_LEN];
	uint8_t other_mac[6] = {0x52, 0x54, 0x00, 0x00, 0x00, 0x02};
	uint32_t last = le32(qport.gid_tbl_len) - 1;
	struct pvo_resp_query_gid g;
	int st;

	pvo_gid_link_local_from_mac(ll, vm_mac);
	pvo_gid_from_ipv4(ip1, "10.0.0.1");

	st = C(pvo_query_gid(fe, 1, last, &g), "QUERY_GID empty");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "QUERY_GID of empty slot %u -> ENOENT", last);

	st = C(pvo_add_gid(fe, 1, 0, ll, PVO_GID_TYPE_ROCE_V2), "ADD_GID ll");
	TAP_STATUS(st, PVO_STATUS_OK, "ADD_GID slot 0 = link-local %s -> OK",
		   pvo_gid_str(ll));
	memset(&g, 0, sizeof(g));
	st = C(pvo_query_gid(fe, 1, 0, &g), "QUERY_GID 0");
	tap_ok(st == PVO_STATUS_OK && !memcmp(g.gid, ll, PVO_GID_LEN) &&
		   le32(g.type) == PVO_GID_TYPE_ROCE_V2,
	       "QUERY_GID slot 0 reads it back (status %s, %s, type %u)",
	       pvo_status_name(st), pvo_gid_str(g.gid), le32(g.type));

	st = C(pvo_add_gid(fe, 1, 1, ip1, PVO_GID_TYPE_ROCE_V2), "ADD_GID ip");
	TAP_STATUS(st, PVO_STATUS_OK, "ADD_GID slot 1 = allowed %s -> OK",
		   pvo_gid_str(ip1));
	memset(&g, 0, sizeof(g));
	st = C(pvo_query_gid(fe, 1, 1, &g), "QUERY_GID 1");
	tap_ok(st == PVO_STATUS_OK && !memcmp(g.gid, ip1, PVO_GID_LEN) &&
		   le32(g.type) == PVO_GID_TYPE_ROCE_V2,
	       "QUERY_GID slot 1 reads it back (status %s, %s, type %u)",
	       pvo_status_name(st), pvo_gid_str(g.gid), le32(g.type));

	pvo_gid_from_ipv4(foreign, "10.0.0.99");
	st = C(pvo_add_gid(fe, 1, 2, foreign, PVO_GID_TYPE_ROCE_V2),
	       "ADD_GID foreign");
	TAP_STATUS(st, PVO_STATUS_EPERM, "ADD_GID of foreign %s -> EPERM",
		   pvo_gid_str(foreign));
	st = C(pvo_query_gid(fe, 1, 2, &g), "QUERY_GID 2");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "the refused GID did not land in slot 2");
	pvo_gid_link_local_from_mac(foreign, other_mac);
	st = C(pvo_add_gid(fe, 1, 2, foreign, PVO_GID_TYPE_ROCE_V2),
	       "ADD_GID foreign ll");
	TAP_STATUS(st, PVO_STATUS_EPERM,
		   "ADD_GID of another MAC's link-local %s -> EPERM",
		   pvo_gid_str(foreign));

	st = C(pvo_add_gid(fe, 1, last + 1, ip1, PVO_GID_TYPE_ROCE_V2),
	       "ADD_GID idx");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ADD_GID at index gid_tbl_len -> EINVAL");
	st = C(pvo_add_gid(fe, 1, 2, ip1, 0), "ADD_GID type 0");
	TAP_STATUS(st, PVO_STATUS_EINVAL, "ADD_GID with type 0 -> EINVAL");
	st = C(pvo_add_gid(fe, 1, 2, ip1, 2), "ADD_GID type 2");
	TAP_STATUS(st, PVO_STATUS_EINVAL, "ADD_GID with type 2 -> EINVAL");
	st = C(pvo_add_gid(fe, 2, 2, ip1, PVO_GID_TYPE_ROCE_V2),
	       "ADD_GID port 2");
	TAP_STATUS(st, PVO_STATUS_EINVAL, "ADD_GID on port 2 -> EINVAL");
	st = C(pvo_query_gid(fe, 1, last + 1, &g), "QUERY_GID idx");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "QUERY_GID at index gid_tbl_len -> EINVAL");

	st = C(pvo_del_gid(fe, 1, 1), "DEL_GID 1");
	TAP_STATUS(st, PVO_STATUS_OK, "DEL_GID slot 1 -> OK");
	st = C(pvo_query_gid(fe, 1, 1, &g), "QUERY_GID deleted");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "QUERY_GID of the deleted slot -> ENOENT");
	st = C(pvo_del_gid(fe, 1, 1), "DEL_GID twice");
	TAP_STATUS(st, PVO_STATUS_ENOENT, "DEL_GID of an empty slot -> ENOENT");
	st = C(pvo_query_gid(fe, 1, 0, &g), "QUERY_GID 0 again");
	TAP_STATUS(st, PVO_STATUS_OK,
		   "slot 0 is unaffected by deleting slot 1");
}

/* ucontexts A and B, used by the object tests */
static uint32_t ctx_a, ctx_b, db_a, db_b;

static void test_ucontexts_and_pds(void)
{
	uint32_t pd, pd2, pd3, c, dbq;
	int st, st2;

	st = C(pvo_alloc_ucontext(fe, &ctx_a, &db_a, NULL), "ALLOC_UCONTEXT A");
	st2 = C(pvo_alloc_ucontext(fe, &ctx_b, &db_b, NULL), "ALLOC_UCONTEXT B");
	tap_ok(st == PVO_STATUS_OK && st2 == PVO_STATUS_OK,
	       "two ALLOC_UCONTEXT -> OK, OK (%s, %s)", pvo_status_name(st),
	       pvo_status_name(st2));
	tap_ok(ctx_a != ctx_b && ctx_a != PVO_CTX_KERNEL &&
		   ctx_b != PVO_CTX_KERNEL,
	       "context handles %u and %u are distinct and not PVO_CTX_KERNEL",
	       ctx_a, ctx_b);
	tap_ok(db_a != db_b && db_a >= PVO_VQ_DB_FIRST_USER &&
		   db_b >= PVO_VQ_DB_FIRST_USER && db_a < num_queues &&
		   db_b < num_queues,
	       "doorbell queues %u and %u are distinct and in [%d, %u)", db_a,
	       db_b, PVO_VQ_DB_FIRST_USER, num_queues);
	st = C(pvo_cmd(fe, PVO_CMD_ALLOC_UCONTEXT, 0, ctx_a, NULL, 0, NULL,
		       sizeof(struct pvo_resp_alloc_ucontext), NULL),
	       "ALLOC_UCONTEXT ctx");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ALLOC_UCONTEXT issued by a user context -> EINVAL");

	st = C(pvo_alloc_pd(fe, ctx_a, &pd), "ALLOC_PD");
	TAP_STATUS(st, PVO_STATUS_OK, "ALLOC_PD in context A -> OK (pd %u)",
		   pd);
	st = C(pvo_dealloc_pd(fe, ctx_a, pd), "DEALLOC_PD");
	TAP_STATUS(st, PVO_STATUS_OK, "DEALLOC_PD of it -> OK");
	st = C(pvo_dealloc_pd(fe, ctx_a, pd), "DEALLOC_PD twice");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "second DEALLOC_PD of the same PD -> ENOENT");

	st = C(pvo_alloc_pd(fe, ctx_a, &pd2), "ALLOC_PD 2");
	TAP_STATUS(st, PVO_STATUS_OK, "ALLOC_PD in context A -> OK (pd %u)",
		   pd2);
	st = C(pvo_dealloc_pd(fe, ctx_b, pd2), "DEALLOC_PD foreign");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "DEALLOC_PD of A's PD from context B -> ENOENT");
	st = C(pvo_dealloc_pd(fe, PVO_CTX_KERNEL, pd2), "DEALLOC_PD kernel");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "DEALLOC_PD of A's PD from the kernel context -> ENOENT");
	st = C(pvo_dealloc_pd(fe, ctx_a, pd2), "DEALLOC_PD owner");
	TAP_STATUS(st, PVO_STATUS_OK, "the owner can still free it afterwards");

	st = C(pvo_alloc_pd(fe, PVO_CTX_KERNEL, &pd), "ALLOC_PD kernel");
	TAP_STATUS(st, PVO_STATUS_OK, "ALLOC_PD in the kernel context -> OK");
	st = C(pvo_dealloc_pd(fe, PVO_CTX_KERNEL, pd), "DEALLOC_PD kernel own");
	TAP_STATUS(st, PVO_STATUS_OK, "DEALLOC_PD of the kernel's PD -> OK");

	st = C(pvo_alloc_pd(fe, NO_SUCH_CTX, &pd), "ALLOC_PD bad ctx");
	TAP_STATUS(
	    st, PVO_STATUS_ENOENT,
	    "ALLOC_PD with a context handle that does not exist -> ENOENT");
	st = C(pvo_dealloc_pd(fe, NO_SUCH_CTX, 1), "DEALLOC_PD bad ctx");
	TAP_STATUS(
	    st, PVO_STATUS_ENOENT,
	    "DEALLOC_PD with a context handle that does not exist -> ENOENT");
	st = C(pvo_dealloc_ucontext(fe, NO_SUCH_CTX), "DEALLOC_UCONTEXT bad");
	TAP_STATUS(
	    st, PVO_STATUS_ENOENT,
	    "DEALLOC_UCONTEXT of a context that does not exist -> ENOENT");
	st = C(pvo_dealloc_ucontext(fe, PVO_CTX_KERNEL),
	       "DEALLOC_UCONTEXT kernel");
	tap_ok(st != PVO_STATUS_OK,
	       "DEALLOC_UCONTEXT of PVO_CTX_KERNEL is refused (%s)",
	       pvo_status_name(st));

	/* A context's objects die with it; its handle stops working. */
	st = C(pvo_alloc_pd(fe, ctx_b, &pd3), "ALLOC_PD B");
	TAP_STATUS(st, PVO_STATUS_OK, "ALLOC_PD in context B -> OK");
	st = C(pvo_dealloc_ucontext(fe, ctx_b), "DEALLOC_UCONTEXT B");
	TAP_STATUS(st, PVO_STATUS_OK,
		   "DEALLOC_UCONTEXT B while it owns a PD -> OK");
	st = C(pvo_dealloc_pd(fe, ctx_b, pd3), "DEALLOC_PD dead ctx");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "B's PD is gone with B (DEALLOC_PD -> ENOENT)");
	st = C(pvo_alloc_pd(fe, ctx_b, &pd), "ALLOC_PD dead ctx");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "ALLOC_PD with B's stale handle -> ENOENT");
	st = C(pvo_dealloc_ucontext(fe, ctx_b), "DEALLOC_UCONTEXT B twice");
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "second DEALLOC_UCONTEXT of B -> ENOENT");

	/* B's doorbell queue is free again: a new context may get it */
	st = C(pvo_alloc_ucontext(fe, &c, &dbq, NULL), "ALLOC_UCONTEXT C");
	tap_ok(st == PVO_STATUS_OK && c != ctx_a && dbq != db_a,
	       "a new context after B's release gets a fresh handle %u and "
	       "doorbell queue %u (A has %u)",
	       c, dbq, db_a);
	ctx_b = c;
	db_b = dbq;
}

static void test_malformed_commands(void)
{
	uint8_t req[64], resp[64];
	struct pvo_cmd_hdr h = {0};
	struct pvo_cmd_result res;
	struct pvo_resp_query_device d;
	struct pvo_resp_alloc_pd pd;
	size_t got;
	int st;

	st = C(pvo_cmd(fe, 0, 0, PVO_CTX_KERNEL, NULL, 0, NULL, 0, NULL),
	       "opcode 0");
	TAP_STATUS(st, PVO_STATUS_EOPNOTSUPP, "opcode 0 -> EOPNOTSUPP");
	st = C(
	    pvo_cmd(fe, PVO_CMD_MAX, 0, PVO_CTX_KERNEL, NULL, 0, NULL, 0, NULL),
	    "opcode MAX");
	TAP_STATUS(st, PVO_STATUS_EOPNOTSUPP,
		   "opcode PVO_CMD_MAX (%d) -> EOPNOTSUPP", PVO_CMD_MAX);
	st = C(pvo_cmd(fe, 0xffff, 0, PVO_CTX_KERNEL, NULL, 0, NULL, 0, NULL),
	       "opcode ffff");
	TAP_STATUS(st, PVO_STATUS_EOPNOTSUPP, "opcode 0xffff -> EOPNOTSUPP");

	st = C(pvo_cmd(fe, PVO_CMD_QUERY_DEVICE, 1, PVO_CTX_KERNEL, NULL, 0, &d,
		       sizeof(d), NULL),
	       "flags 1");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "QUERY_DEVICE with flags = 1 -> EINVAL");
	st = C(pvo_cmd(fe, PVO_CMD_ALLOC_PD, 0x8000, ctx_a, NULL, 0, &pd,
		       sizeof(pd), NULL),
	       "flags 8000");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ALLOC_PD with flags = 0x8000 -> EINVAL");

	st = C(pvo_cmd(fe, PVO_CMD_DEALLOC_PD, 0, ctx_a, "\1\0\0\0", 4, NULL, 0,
		       NULL),
	       "DEALLOC_PD short");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "DEALLOC_PD with a 4-byte body (needs 8) -> EINVAL");
	st = C(pvo_cmd(fe, PVO_CMD_QUERY_PORT, 0, PVO_CTX_KERNEL, NULL, 0, resp,
		       sizeof(struct pvo_resp_query_port), NULL),
	       "QUERY_PORT no body");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "QUERY_PORT without a body -> EINVAL");
	memset(req, 0, sizeof(req));
	req[0] = 1; /* port 1, index 5, 12 of 16 GID bytes */
	req[4] = 5;
	st = C(pvo_cmd(fe, PVO_CMD_ADD_GID, 0, PVO_CTX_KERNEL, req, 20, NULL, 0,
		       NULL),
	       "ADD_GID short");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ADD_GID with a 20-byte body (needs %zu) -> EINVAL",
		   sizeof(struct pvo_cmd_add_gid));

	/* header cut short: only opcode and flags */
	h.opcode = htole16(PVO_CMD_QUERY_DEVICE);
	memcpy(req, &h, sizeof(h));
	st = C(pvo_cmd_raw(fe, req, 4, resp, sizeof(resp), &res),
	       "short header");
	tap_ok(res.used_len >= sizeof(struct pvo_resp_hdr) &&
		   res.status == PVO_STATUS_EINVAL,
	       "a 4-byte command (header cut short) -> EINVAL (used %u, %s)",
	       res.used_len, pvo_status_name(res.status));
	/* no device-readable buffer at all */
	st =
	    C(pvo_cmd_raw(fe, NULL, 0, resp, sizeof(resp), &res), "no command");
	tap_ok(res.used_len >= sizeof(struct pvo_resp_hdr) &&
		   res.status == PVO_STATUS_EINVAL,
	       "a chain with only a writable buffer -> EINVAL (used %u, %s)",
	       res.used_len, pvo_status_name(res.status));
	/* no device-writable buffer: nothing to answer into, but no stall */
	memcpy(req, &h, sizeof(h));
	st = C(pvo_cmd_raw(fe, req, sizeof(h), NULL, 0, &res),
	       "no response buffer");
	tap_ok(st == 0 && res.used_len == 0,
	       "a chain without a writable buffer is returned with used length "
	       "0 (got %u)",
	       res.used_len);

	/* response room: header fits, body does not */
	st = C(pvo_cmd_raw(fe, req, sizeof(h), resp,
			   sizeof(struct pvo_resp_hdr), &res),
	       "QUERY_DEVICE header-only room");
	tap_ok(res.used_len == sizeof(struct pvo_resp_hdr) &&
		   res.status == PVO_STATUS_EINVAL,
	       "QUERY_DEVICE with room for the header only -> EINVAL in the "
	       "header (used %u, %s)",
	       res.used_len, pvo_status_name(res.status));
	/* response room smaller than the header */
	st = C(pvo_cmd_raw(fe, req, sizeof(h), resp, 4, &res),
	       "QUERY_DEVICE 4-byte room");
	tap_ok(res.used_len == 0 && resp[0] == 0xa5 && resp[3] == 0xa5,
	       "QUERY_DEVICE with a 4-byte writable buffer -> used length 0, "
	       "buffer untouched (used %u)",
	       res.used_len);
	/* short room for ALLOC_PD must not allocate: checked by the quota walk
	 */
	st = C(pvo_cmd(fe, PVO_CMD_ALLOC_PD, 0, ctx_a, NULL, 0, NULL, 0, &got),
	       "ALLOC_PD header-only room");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ALLOC_PD with room for the header only -> EINVAL");
	st = C(pvo_cmd(fe, PVO_CMD_ALLOC_UCONTEXT, 0, PVO_CTX_KERNEL, NULL, 0,
		       NULL, 0, &got),
	       "ALLOC_UCONTEXT header-only room");
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "ALLOC_UCONTEXT with room for the header only -> EINVAL");
}

/* Run one chain from explicit pieces of guest RAM. */
static int run_chain(const struct vq_buf *out, unsigned int nout,
		     const struct vq_buf *in, unsigned int nin, uint32_t *used)
{
	int ret = vu_call(fe, PVO_VQ_CTRL, out, nout, in, nin, used);

	if (ret < 0)
		lost("scatter-gather command");
	return ret;
}

static void gather_pieces(const struct vq_buf *in, unsigned int nin,
			  uint8_t *dst)
{
	unsigned int i;

	for (i = 0; i < nin; i++) {
		guest_ram_read(&fe->ram, in[i].gpa, dst, in[i].len);
		dst += in[i].len;
	}
}

static void test_scatter_gather(void)
{
	struct pvo_cmd_hdr h = {.opcode = htole16(PVO_CMD_QUERY_PORT)};
	struct pvo_cmd_port body = {.port = htole32(1)};
	uint8_t req[16], want[8 + sizeof(struct pvo_resp_query_port)];
	uint8_t got[sizeof(want)];
	uint64_t area = guest_ram_alloc(&fe->ram, 4096, 4096);
	uint64_t b = guest_ram_boundary(&fe->ram);
	struct vq_buf out[3], in[3];
	uint32_t used = 0;

	memcpy(req, &h, 8);
	memcpy(req + 8, &body, 8);
	memset(want, 0, 8);
	memcpy(want + 8, &qport, sizeof(qport));

	/* command: 8 + 3 + 5 bytes, response: 8 + 10 + 14 bytes, scattered */
	out[0] = (struct vq_buf){area + 0, 8};
	out[1] = (struct vq_buf){area + 1000, 3};
	out[2] = (struct vq_buf){area + 64, 5};
	in[0] = (struct vq_buf){area + 2000, 8};
	in[1] = (struct vq_buf){area + 3000, 10};
	in[2] = (struct vq_buf){area + 1500, 14};
	guest_ram_write(&fe->ram, out[0].gpa, req, 8);
	guest_ram_write(&fe->ram, out[1].gpa, req + 8, 3);
	guest_ram_write(&fe->ram, out[2].gpa, req + 11, 5);
	run_chain(out, 3, in, 3, &used);
	gather_pieces(in, 3, got);
	tap_ok(used == sizeof(want) && !memcmp(got, want, sizeof(want)),
	       "QUERY_PORT split over 3 readable and 3 writable descriptors "
	       "gives the same answer (used %u)",
	       used);
	guest_ram_free(&fe->ram, area);

	if (!b) {
		tap_skip(2, "guest RAM has one region");
		return;
	}
	/* both buffers across the boundary between the two memory regions */
	if (guest_ram_reserve(&fe->ram, b - 256, 512) < 0)
		tap_bail("cannot reserve guest RAM around the region boundary");
	out[0] = (struct vq_buf){b - 5, 16};
	in[0] = (struct vq_buf){b - 100, 8};
	in[1] = (struct vq_buf){b - 13, sizeof(want) - 8};
	guest_ram_write(&fe->ram, out[0].gpa, req, 16);
	run_chain(out, 1, in, 2, &used);
	gather_pieces(in, 2, got);
	tap_ok(used == sizeof(want) && !memcmp(got, want, sizeof(want)),
	       "command and response straddling the two guest RAM regions work "
	       "(used %u)",
	       used);
	/* one writable buffer straddling the boundary, header and body in it */
	in[0] = (struct vq_buf){b - 17, sizeof(want)};
	out[0] = (struct vq_buf){b - 200, 16};
	guest_ram_write(&fe->ram, out[0].gpa, req, 16);
	run_chain(out, 1, in, 1, &used);
	gather_pieces(in, 1, got);
	tap_ok(used == sizeof(want) && !memcmp(got, want, sizeof(want)),
	       "a response header split by the region boundary is written "
	       "correctly (used %u)",
	       used);
	guest_ram_free(&fe->ram, b - 256);
}

static void test_pd_quota(void)
{
	uint32_t max_pd = le32(qdev.max_pd), held = 0, again = 0, pd, c, dbq;
	uint32_t *pds;
	int st = PVO_STATUS_OK;

	if (max_pd > MAX_QUOTA_WALK) {
		tap_skip(4, "max_pd too large to exhaust in a test");
		return;
	}
	pds = calloc(max_pd + 1, sizeof(*pds));
	if (!pds)
		tap_bail("out of memory");
	/* two in the kernel context, the rest in A */
	while (held < max_pd + 1) {
		st = C(pvo_alloc_pd(fe, held < 2 ? PVO_CTX_KERNEL : ctx_a, &pd),
		       "ALLOC_PD quota walk");
		if (st != PVO_STATUS_OK)
			break;
		pds[held++] = pd;
	}
	tap_ok(st == PVO_STATUS_ENOSPC && held == max_pd,
	       "ALLOC_PD succeeds exactly max_pd = %u times, then ENOSPC (got "
	       "%u, then %s)",
	       max_pd, held, pvo_status_name(st));
	if (held >= 3) {
		st = C(pvo_dealloc_pd(fe, ctx_a, pds[held - 1]),
		       "DEALLOC_PD at quota");
		st = st ? st
			: C(pvo_alloc_pd(fe, ctx_a, &pds[held - 1]),
			    "ALLOC_PD after free");
		TAP_STATUS(
		    st, PVO_STATUS_OK,
		    "freeing one PD at the quota makes room for one more");
	} else {
		tap_ok(false, "freeing one PD at the quota makes room for one "
			      "more (too few PDs)");
	}

	/* DEALLOC_UCONTEXT must release the quota A held */
	st = C(pvo_dealloc_ucontext(fe, ctx_a), "DEALLOC_UCONTEXT A full");
	TAP_STATUS(st, PVO_STATUS_OK,
		   "DEALLOC_UCONTEXT of A holding %u PDs -> OK",
		   held > 2 ? held - 2 : 0);
	st = C(pvo_alloc_ucontext(fe, &c, &dbq, NULL), "ALLOC_UCONTEXT A'");
	if (st == PVO_STATUS_OK) {
		ctx_a = c;
		db_a = dbq;
		while (again < max_pd) {
			st = C(pvo_alloc_pd(fe, ctx_a, &pd), "ALLOC_PD refill");
			if (st != PVO_STATUS_OK)
				break;
			again++;
		}
	}
	tap_ok(held > 2 && again == held - 2 && st == PVO_STATUS_ENOSPC,
	       "the freed context's %u PDs can be allocated again, no more "
	       "(got %u, then %s)",
	       held > 2 ? held - 2 : 0, again, pvo_status_name(st));
	/* leave the device with no PDs: drop A' (and its PDs), free the
	 * kernel's */
	C(pvo_dealloc_ucontext(fe, ctx_a), "DEALLOC_UCONTEXT A'");
	C(pvo_dealloc_pd(fe, PVO_CTX_KERNEL, pds[0]), "DEALLOC_PD kernel 0");
	C(pvo_dealloc_pd(fe, PVO_CTX_KERNEL, pds[1]), "DEALLOC_PD kernel 1");
	st = C(pvo_alloc_ucontext(fe, &ctx_a, &db_a, NULL), "ALLOC_UCONTEXT A''");
	if (st != PVO_STATUS_OK)
		tap_diag("re-creating context A: %s", pvo_status_name(st));
	free(pds);
}

/* ALLOC_UCONTEXT until it fails or held + *n reaches max; the status. */
static int ucontext_walk(uint32_t held, uint32_t max, uint32_t *ctx,
			 uint32_t *dbq, uint32_t *page, uint32_t *n)
{
	int st = PVO_STATUS_OK;

	while (held + *n <= max) {
		st = C(pvo_alloc_ucontext(fe, &ctx[*n], &dbq[*n], &page[*n]),
		       "ALLOC_UCONTEXT quota walk");
		if (st != PVO_STATUS_OK)
			break;
		(*n)++;
	}
	return st;
}

/*
 * Contexts past the user queues need slot pages: without a notify area the
 * walk stops at the queues; with one it reaches the quota. Every context
 * gets a page of its own, and a slot's queue is the one the page maps to.
 */
static void test_ucontext_quota(void)
{
	uint32_t max_uc = le32(cfg.max_ucontexts), held = 2, n = 0, i;
	uint32_t *ctx = calloc(max_uc + 1, sizeof(*ctx));
	uint32_t *dbq = calloc(max_uc + 1, sizeof(*dbq));
	uint32_t *page = calloc(max_uc + 1, sizeof(*page));
	uint8_t *seen = calloc(PVO_DOORBELL_BAR_PAGES, 1);
	uint32_t user_queues = num_queues - PVO_VQ_DB_FIRST_USER;
	uint64_t area;
	bool distinct = true;
	int st = PVO_STATUS_OK, st2;

	if (!ctx || !dbq || !page || !seen)
		tap_bail("out of memory");
	/* A and B are held; ALLOC_UCONTEXT with a short response did not count
	 */
	st = ucontext_walk(held, max_uc, ctx, dbq, page, &n);
	tap_ok(st == PVO_STATUS_ENOSPC && held + n == user_queues,
	       "without a notify area, ALLOC_UCONTEXT stops with ENOSPC once "
	       "the %u user queues are taken (held %u, then %s)",
	       user_queues, held + n, pvo_status_name(st));

	area = guest_ram_alloc(&fe->ram, pvo_notify_area_size(num_queues),
			       4096);
	st = C(pvo_set_notify_area(fe, area + 8, num_queues),
	       "SET_NOTIFY_AREA misaligned");
	st2 = C(pvo_set_notify_area(fe, area, PVO_MAX_QUEUES + 1),
		"SET_NOTIFY_AREA too many queues");
	tap_ok(st == PVO_STATUS_EINVAL && st2 == PVO_STATUS_EINVAL,
	       "SET_NOTIFY_AREA refuses a misaligned area and %u queues (%s, "
	       "%s)",
	       PVO_MAX_QUEUES + 1, pvo_status_name(st), pvo_status_name(st2));
	st = C(pvo_set_notify_area(fe, fe->ram.size - 4096, num_queues),
	       "SET_NOTIFY_AREA past RAM");
	TAP_STATUS(st, PVO_STATUS_EFAULT,
		   "SET_NOTIFY_AREA refuses an area that runs past guest RAM");
	st = C(pvo_set_notify_area(fe, area, num_queues), "SET_NOTIFY_AREA");
	st2 = C(pvo_set_notify_area(fe, area, num_queues),
		"SET_NOTIFY_AREA again");
	tap_ok(st == PVO_STATUS_OK && st2 == PVO_STATUS_EBUSY,
	       "SET_NOTIFY_AREA is taken once (%s), then EBUSY (%s)",
	       pvo_status_name(st), pvo_status_name(st2));

	st = ucontext_walk(held, max_uc, ctx, dbq, page, &n);
	tap_ok(st == PVO_STATUS_ENOSPC && held + n == max_uc,
	       "with slot pages, ALLOC_UCONTEXT succeeds up to max_ucontexts "
	       "= %u, then ENOSPC (held %u, then %s)",
	       max_uc, held + n, pvo_status_name(st));
	seen[db_a] = seen[db_b] = 1;
	for (i = 0; i < n; i++) {
		bool slot = page[i] >= PVO_DB_SLOT_PAGE0;

		distinct &= page[i] < PVO_DOORBELL_BAR_PAGES && !seen[page[i]] &&
			    ctx[i] != ctx_a && ctx[i] != ctx_b &&
			    ctx[i] != PVO_CTX_KERNEL;
		distinct &= slot ? dbq[i] == pvo_db_slot_queue(
						 num_queues,
						 page[i] - PVO_DB_SLOT_PAGE0)
				 : dbq[i] == page[i] &&
					   dbq[i] >= PVO_VQ_DB_FIRST_USER &&
					   dbq[i] < num_queues;
		if (page[i] < PVO_DOORBELL_BAR_PAGES)
			seen[page[i]] = 1;
	}
	tap_ok(distinct,
	       "all %u live contexts have distinct handles and doorbell pages; "
	       "a queue page is its queue, a slot page kicks its slot's queue",
	       held + n);
	for (i = 0; i < n; i++)
		C(pvo_dealloc_ucontext(fe, ctx[i]),
		  "DEALLOC_UCONTEXT quota walk");
	free(ctx);
	free(dbq);
	free(page);
	free(seen);
}

static void test_still_alive_and_exit(void)
{
	struct pvo_resp_query_device d;
	struct split_vq *vq = vu_vq(fe, PVO_VQ_CTRL);
	int st;

	st = C(pvo_query_device(fe, &d), "final QUERY_DEVICE");
	tap_ok(st == PVO_STATUS_OK && !memcmp(&d, &qdev, sizeof(d)),
	       "after all of that, QUERY_DEVICE still answers the same");
	tap_ok(vq->bad_used == 0,
	       "the back-end never returned a head that was not in flight%s%s",
	       vq->bad_used ? ": " : "", vq->bad_used ? vq->bad_used_msg : "");
	tap_ok(split_vq_in_flight(vq) == 0,
	       "no control chain is left in flight (%u)",
	       split_vq_in_flight(vq));
	tap_ok(backend_running(&bp), "back-end process is still running");

	vu_frontend_free(fe);
	fe = NULL;
	st = backend_stop(&bp, 5000);
	if (!tap_ok(st == 0, "back-end exits with status 0 on SIGTERM (it %s)",
		    backend_describe(&bp)))
		backend_dump_log(&bp, 40);
}

int main(void)
{
	bool keep;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_start_and_handshake();
	test_config();
	test_query_device();
	test_query_port_pkey();
	test_gids();
	test_ucontexts_and_pds();
	test_malformed_commands();
	test_scatter_gather();
	test_pd_quota();
	test_ucontext_quota();
	test_still_alive_and_exit();
	tap_done_testing();

	keep = tap_failures() ||
	       (getenv("PVO_TEST_KEEP") && *getenv("PVO_TEST_KEEP") == '1');
	if (tap_failures())
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, keep);
	return tap_exit_status();
}
