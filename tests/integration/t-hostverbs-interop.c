// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-hostverbs-interop: a simulated VM behind a back-end on the host-verbs
 * transport against an unmodified rdma-core example, ibv_rc_pingpong,
 * on another host. Runs where the host RDMA device exists (tests/vm/
 * t-hostverbs-datapath: two TCG guests with rdma_rxe):
 *
 *   T_HV=DEV:NETDEV:VM_IP:SERVER
 *
 * VM_IP (the simulated VM's address) must be on NETDEV; SERVER is where
 * `ibv_rc_pingpong -s 4096 -n 200` listens (TCP port 18515). The VM plays
 * the client side of ibv_rc_pingpong's protocol (its TCP exchange of
 * "LID:QPN:PSN:GID", then SENDs that the server answers from the buffer
 * each one arrived in): every message comes back byte for byte.
 * With T_HV_CROSS_TENANT=1 the VM's tenant is not the server's: nothing
 * may cross.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "side_channel.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define SIZE 4096
#define ITERS 200
#define TCP_PORT 18515
#define WAIT_MS 20000

static struct backend_proc bp;
static struct sim_vm *vm;

static void __attribute__((noreturn)) lost(const char *what)
{
	backend_dump_log(&bp, 30);
	tap_bail("%s: %s (log kept in %s)", what, vm ? vm->err : "", bp.dir);
}

static uint8_t pattern(uint32_t iter, uint32_t i)
{
	return (uint8_t)(iter * 37 + i * 11 + (i >> 9));
}

/* A ping, then its echo, ITERS times: the server sends back the buffer
 * each message arrived in. */
static void pingpong(struct sim_qp *qp, struct sim_cq *cq, struct sim_buf *buf,
		     struct sim_mr *mr)
{
	unsigned int bad = 0, iter;
	struct pvo_cqe c[1];
	int n = 0;

	for (iter = 0; iter < ITERS; iter++) {
		uint8_t *out = sim_buf_ptr(buf, 0),
			*in = sim_buf_ptr(buf, SIZE);
		struct sim_sge rs = {buf->va + SIZE, SIZE, mr->key};
		struct sim_wr w = {.wr_id = iter,
				   .opcode = PVO_WR_SEND,
				   .flags = PVO_WQE_F_SIGNALED,
				   .num_sge = 1};
		unsigned int i, got = 0, recvs = 0, sends = 0;

		for (i = 0; i < SIZE; i++) {
			out[i] = pattern(iter, i);
			in[i] = 0;
		}
		w.sge[0] = (struct sim_sge){buf->va, SIZE, mr->key};
		if (sim_post_recv(qp, 1000 + iter, &rs, 1) ||
		    sim_post_send(qp, &w, 1))
			break;
		while (recvs + sends < 2) {
			n = sim_wait_cq(cq, c, 1, WAIT_MS);
			if (n != 1 || c[0].status != PVO_WC_SUCCESS)
				break;
			if (c[0].opcode == PVO_WC_RECV) {
				recvs++;
				got = le32toh(c[0].byte_len);
			} else {
				sends++;
			}
		}
		if (recvs + sends < 2) {
			tap_diag("iteration %u: %s", iter,
				 n == 1 ? sim_wc_status_name(c[0].status)
					: "no completion");
			break;
		}
		for (i = 0; i < SIZE; i++)
			bad += in[i] != pattern(iter, i);
		bad += got != SIZE;
	}
	tap_ok(iter == ITERS, "%u of %d pings answered", iter, ITERS);
	tap_ok(iter == ITERS && bad == 0,
	       "every echo carries the ping's %d bytes (%u wrong)", SIZE, bad);
}

/*
 * The VM is in another tenant than the server: its device reaches the
 * address only on its own tenant's network, where nobody has it. The
 * connection is refused, or its first ping fails; nothing comes back.
 */
static void cross_tenant(struct sim_qp *qp, struct sim_cq *cq,
			 struct sim_buf *buf, struct sim_mr *mr, int st)
{
	uint8_t *in = sim_buf_ptr(buf, SIZE);
	struct sim_sge rs = {buf->va + SIZE, SIZE, mr->key};
	struct sim_wr w = {.wr_id = 1,
			   .opcode = PVO_WR_SEND,
			   .flags = PVO_WQE_F_SIGNALED,
			   .num_sge = 1};
	struct pvo_cqe c;
	unsigned int i, touched = 0, received = 0;
	int n;

	memset(in, 0, SIZE);
	if (st != PVO_STATUS_OK) {
		tap_ok(st == PVO_STATUS_EINVAL || st == PVO_STATUS_EPERM,
		       "another tenant's VM: connecting to the server's "
		       "address is refused (%s)",
		       pvo_status_name(st));
	} else {
		w.sge[0] = (struct sim_sge){buf->va, SIZE, mr->key};
		sim_post_recv(qp, 2, &rs, 1);
		sim_post_send(qp, &w, 1);
		tap_diag("connected; the first ping should fail");
		n = sim_wait_cq(cq, &c, 1, WAIT_MS);
		tap_ok(n == 1 && c.status != PVO_WC_SUCCESS &&
			   le64toh(c.wr_id) == 1,
		       "another tenant's VM: the first ping fails (%s)",
		       n == 1 ? sim_wc_status_name(c.status) : "no completion");
	}
	/* a flushed receive may follow a failed ping; a successful one
	 * may not */
	while (sim_wait_cq(cq, &c, 1, 200) == 1)
		received +=
		    c.opcode == PVO_WC_RECV && c.status == PVO_WC_SUCCESS;
	tap_ok(received == 0,
	       "another tenant's VM: no receive completes successfully (%u)",
	       received);
	for (i = 0; i < SIZE; i++)
		touched += in[i] != 0;
	tap_ok(touched == 0,
	       "another tenant's VM: its receive buffer is untouched (%u "
	       "bytes changed)",
	       touched);
}

int main(void)
{
	const char *env = getenv("T_HV");
	char dev[64], netdev[16], ip[64], srv[64], cfg[1024], err[512];
	char msg[sizeof "0000:000000:000000:00000000000000000000000000000000"];
	char gid_s[33], rgid_s[40];
	static const char *const vms[] = {"a", NULL};
	struct sim_vm_opts o = {.name = "a", .ram_size = 64 << 20};
	struct sim_qp_init qi = {.type = PVO_QPT_RC,
				 .sq_entries = 16,
				 .rq_entries = 16,
				 .max_send_sge = 1,
				 .max_recv_sge = 1};
	struct sim_conn conn = {.path_mtu = 3, /* pingpong's 1024 */
				.min_rnr_timer = 12,
				.max_rd_atomic = 1,
				.sq_psn = 0x123456};
	unsigned int lid, rqpn, rpsn;
	bool cross = getenv("T_HV_CROSS_TENANT") != NULL;
	struct sim_peer peer = {0};
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq cq;
	struct sim_buf buf;
	struct sim_mr mr;
	struct sim_qp qp;
	int gidx, fd, st, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!env || sscanf(env, "%63[^:]:%15[^:]:%63[^:]:%63s", dev, netdev, ip,
			   srv) != 4)
		tap_bail("T_HV=DEV:NETDEV:VM_IP:SERVER needed");
	tap_plan(8);
	snprintf(cfg, sizeof(cfg),
		 "[daemon]\nhostverbs-device = %s\n"
		 "[tenant t]\nvni = 7\ntransport = hostverbs\n"
		 "hostverbs-netdev = %s\n"
		 "[vm a]\ntenant = t\nmac = 52:54:00:00:07:01\nips = %s\n",
		 dev, netdev, ip);
	if (backend_start_config(&bp, cfg, vms, NULL, 10000, err, sizeof(err)) <
	    0)
		tap_bail("%s", err);
	o.socket_path = backend_vm_socket(&bp, "a");
	vm = sim_vm_open(&o, err, sizeof(err));
	if (!vm)
		lost(err);
	gidx = sim_vm_gid_index_ipv4(vm, ip);
	st = gidx < 0 ? -EINVAL : sim_ctx_open(vm, &ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&ctx, &pd);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&ctx, 64, &cq);
	if (st == PVO_STATUS_OK &&
	    sim_buf_alloc(&buf, sim_vm_ram(vm), sim_vm_va(vm, 4 * SIZE),
			  2 * SIZE, 0, SIM_LAYOUT_SCATTER) < 0)
		st = -ENOMEM;
	if (st == PVO_STATUS_OK)
		st = sim_reg_mr(&pd, &buf, 0, 2 * SIZE, PVO_ACCESS_LOCAL_WRITE,
				&mr);
	qi.send_cq = qi.recv_cq = &cq;
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&pd, &qi, &qp);
	if (!tap_ok(st == PVO_STATUS_OK &&
			(qp.resp_flags & PVO_QP_RESP_F_RQ_DOORBELL),
		    "VM a: an RC QP on the host device (QPN 0x%x, receives "
		    "rung: %s)",
		    qp.qpn,
		    qp.resp_flags & PVO_QP_RESP_F_RQ_DOORBELL ? "yes" : "no"))
		lost("setup");

	fd = side_connect(srv, TCP_PORT, 50);
	if (!tap_ok(fd >= 0, "ibv_rc_pingpong answers on %s port %d", srv,
		    TCP_PORT))
		lost("no server");
	side_gid_hex(vm->gid[gidx], gid_s);
	snprintf(msg, sizeof(msg), "%04x:%06x:%06x:%s", 0, qp.qpn, conn.sq_psn,
		 gid_s);
	n = 0;
	if (write(fd, msg, sizeof(msg)) != sizeof(msg) ||
	    read(fd, msg, sizeof(msg)) != sizeof(msg) ||
	    write(fd, "done", sizeof("done")) != sizeof("done") ||
	    (n = sscanf(msg, "%x:%x:%x:%39s", &lid, &rqpn, &rpsn, rgid_s)) !=
		4 ||
	    !side_gid_parse(rgid_s, peer.gid))
		n = -1;
	close(fd);
	if (!tap_ok(n == 4,
		    "address exchange with ibv_rc_pingpong (its QPN "
		    "0x%x, PSN 0x%x)",
		    rqpn, rpsn))
		lost("exchange");
	peer.qpn = rqpn;
	peer.psn = rpsn;
	conn.sgid_index = (uint8_t)gidx;
	/* rdma_rxe retries forever with retry_cnt 7: a lost ping must end */
	if (cross)
		conn.retry_cnt = 2;
	tap_diag("connecting to QPN 0x%x at %s", rqpn, rgid_s);
	st = sim_qp_connect(&qp, &conn, &peer);
	if (cross) {
		cross_tenant(&qp, &cq, &buf, &mr, st);
	} else {
		if (!tap_ok(st == PVO_STATUS_OK,
			    "VM a's QP connects to the server's (RTR, RTS on "
			    "the host device)"))
			lost("connect");
		pingpong(&qp, &cq, &buf, &mr);
	}
	sim_destroy_qp(&qp);
	sim_dereg_mr(&mr);
	sim_vm_close(vm);
	st = backend_stop(&bp, 5000);
	tap_ok(st == 0, "back-end exits cleanly (%s)", backend_describe(&bp));
	tap_ok(backend_sanitizer_report(&bp, err, sizeof(err)) == 0,
	       "no sanitizer report in the back-end's log");
	backend_cleanup(&bp, tap_failures() > 0);
	return tap_done();
}
