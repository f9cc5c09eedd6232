// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * QPs: the IB transition table, CREATE_QP and MODIFY_QP validation (every
 * field), QUERY_QP, the RESET rewind and the per-context QP limit.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config.h"
#include "device.h"
#include "fake_guest.h"
#include "qp.h"
#include "tap.h"

#define M(x) PVO_QP_##x

static struct fake_guest g;
static uint32_t pd, cq;
static struct pvo_cmd_create_qp proto;	/* a valid CREATE_QP body */

static void test_table(void)
{
	static const unsigned int types[] = { PVO_QPT_RC, PVO_QPT_UC,
					      PVO_QPT_UD, PVO_QPT_GSI };
	static const int expect_valid[] = { 22, 23, 23, 23 };
	uint32_t req, opt;
	unsigned int t, c, n;
	int valid;

	for (t = 0; t < 4; t++) {
		valid = 0;
		for (c = 0; c <= PVO_QPS_ERR; c++)
			for (n = 0; n <= PVO_QPS_ERR; n++)
				valid += pvo_qp_transition(types[t], c, n, &req,
							   &opt);
		tap_is(valid, expect_valid[t], "valid transitions per type");
	}
	tap_ok(pvo_qp_transition(PVO_QPT_RC, PVO_QPS_RESET, PVO_QPS_INIT, &req,
				 &opt) &&
		       req == (M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS)) &&
		       opt == 0,
	       "RC RESET->INIT needs pkey, port, access");
	pvo_qp_transition(PVO_QPT_UD, PVO_QPS_RESET, PVO_QPS_INIT, &req, &opt);
	tap_is(req, M(PKEY_INDEX) | M(PORT) | M(QKEY),
	       "UD RESET->INIT needs pkey, port, qkey");
	pvo_qp_transition(PVO_QPT_GSI, PVO_QPS_RESET, PVO_QPS_INIT, &req,
			  &opt);
	tap_is(req, M(PKEY_INDEX) | M(QKEY), "GSI RESET->INIT: pkey, qkey");
	pvo_qp_transition(PVO_QPT_RC, PVO_QPS_INIT, PVO_QPS_RTR, &req, &opt);
	tap_is(req, M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
			    M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
	       "RC INIT->RTR");
	pvo_qp_transition(PVO_QPT_UC, PVO_QPS_INIT, PVO_QPS_RTR, &req, &opt);
	tap_is(req, M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
	       "UC INIT->RTR");
	tap_ok(pvo_qp_transition(PVO_QPT_UD, PVO_QPS_INIT, PVO_QPS_RTR, &req,
				 &opt) &&
		       req == 0,
	       "UD INIT->RTR needs nothing");
	pvo_qp_transition(PVO_QPT_RC, PVO_QPS_RTR, PVO_QPS_RTS, &req, &opt);
	tap_is(req, M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
			    M(MAX_QP_RD_ATOMIC),
	       "RC RTR->RTS");
	pvo_qp_transition(PVO_QPT_UD, PVO_QPS_RTR, PVO_QPS_RTS, &req, &opt);
	tap_is(req, M(SQ_PSN), "UD RTR->RTS");
	tap_ok(!pvo_qp_transition(PVO_QPT_RC, PVO_QPS_SQE, PVO_QPS_RTS, &req,
				  &opt) &&
		       pvo_qp_transition(PVO_QPT_UD, PVO_QPS_SQE, PVO_QPS_RTS,
					 &req, &opt),
	       "SQE->RTS: UD yes, RC never is in SQE");
	tap_ok(!pvo_qp_transition(PVO_QPT_RC, PVO_QPS_RESET, PVO_QPS_RTS, &req,
				  &opt) &&
		       !pvo_qp_transition(PVO_QPT_RC, PVO_QPS_INIT,
					  PVO_QPS_RTS, &req, &opt) &&
		       !pvo_qp_transition(PVO_QPT_RC, PVO_QPS_ERR,
					  PVO_QPS_INIT, &req, &opt) &&
		       !pvo_qp_transition(PVO_QPT_RC, PVO_QPS_RTS,
					  PVO_QPS_RTR, &req, &opt),
	       "no skipping ahead, no way back except RESET");
	tap_ok(pvo_qp_transition(PVO_QPT_RC, PVO_QPS_RTS, PVO_QPS_ERR, &req,
				 &opt) &&
		       req == 0 && opt == 0 &&
		       pvo_qp_transition(PVO_QPT_UC, PVO_QPS_SQD,
					 PVO_QPS_RESET, &req, &opt),
	       "anything -> ERR / RESET without attributes");
	tap_ok(!pvo_qp_transition(9, PVO_QPS_RESET, PVO_QPS_INIT, &req,
				  &opt) &&
		       !pvo_qp_transition(PVO_QPT_RC, 7, PVO_QPS_ERR, &req,
					  &opt) &&
		       !pvo_qp_transition(PVO_QPT_RC, PVO_QPS_RESET, 7, &req,
					  &opt),
	       "unknown type or state");
}

static uint32_t create(const struct pvo_cmd_create_qp *c, uint32_t *handle)
{
	struct pvo_resp_create_qp r = { 0 };
	uint32_t st;

	st = fg_cmd(&g, PVO_CMD_CREATE_QP, 0, c, sizeof(*c), &r, sizeof(r));
	*handle = le32toh(r.qp);
	return st;
}

static void test_create(void)
{
	struct pvo_cmd_create_qp c;
	uint32_t h;

	c = proto;
	tap_is(create(&c, &h), 0, "a valid CREATE_QP");
	c = proto;
	c.sq_entries = htole32(12);
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "sq_entries not 2^n");
	c = proto;
	c.sq_entries = htole32(32768);
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "sq_entries > max_qp_wr");
	c = proto;
	c.sq_wqe_shift++;
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "SQ stride not as computed");
	c = proto;
	c.rq_wqe_shift = 4;
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "RQ stride not as computed");
	c = proto;
	c.max_send_sge = htole32(PVO_DEV_MAX_SGE + 1);
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "max_send_sge > 16");
	c = proto;
	c.max_inline_data = htole32(PVO_DEV_MAX_INLINE + 1);
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "max_inline_data > 256");
	c = proto;
	c.sq_sig_all = 2;
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "sq_sig_all not 0/1");
	c = proto;
	c.sq.npages = htole32(le32toh(c.sq.npages) + 1);
	tap_is(create(&c, &h), PVO_STATUS_EINVAL,
	       "SQ directory size does not match entries * stride");
	c = proto;
	c.send_cq = htole32(cq + 1);
	tap_is(create(&c, &h), PVO_STATUS_ENOENT, "unknown send CQ");
	c = proto;
	c.srq = htole32(0x00100001);
	tap_is(create(&c, &h), PVO_STATUS_ENOENT, "unknown SRQ");
	c = proto;
	c.qp_type = 0;
	tap_is(create(&c, &h), PVO_STATUS_EINVAL, "QP type 0");
	c = proto;
	c.sq.dir_gpa = htole64(FG_RAM_SIZE);
	tap_is(create(&c, &h), PVO_STATUS_EFAULT, "SQ directory outside RAM");
}

static uint32_t modify(uint32_t qp, uint32_t mask, struct pvo_qp_attr *a)
{
	struct pvo_cmd_modify_qp c = { .qp = htole32(qp),
				       .attr_mask = htole32(mask) };

	c.attr = *a;
	return fg_cmd(&g, PVO_CMD_MODIFY_QP, 0, &c, sizeof(c), NULL, 0);
}

static struct pvo_qp_attr query(uint32_t qp)
{
	struct pvo_cmd_handle c = { htole32(qp), 0 };
	struct pvo_qp_attr a;

	memset(&a, 0xff, sizeof(a));
	fg_cmd(&g, PVO_CMD_QUERY_QP, 0, &c, sizeof(c), &a, sizeof(a));
	return a;
}

static void test_modify(void)
{
	struct pvo_qp_attr a, q;
	uint32_t h, init = M(STATE) | M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS);
	uint32_t rtr = M(STATE) | M(AV) | M(PATH_MTU) | M(DEST_QPN) |
		       M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER);
	uint32_t rts = M(STATE) | M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) |
		       M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC);
	struct pvo_qp *qp;

	create(&proto, &h);
	qp = pvo_table_get(&g.vm->qps, h, 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = htole32(PVO_QPS_INIT);
	a.port_num = 1;
	tap_is(modify(h, init & ~M(PORT), &a), PVO_STATUS_EINVAL,
	       "RESET->INIT without PORT");
	tap_is(modify(h, init | M(QKEY), &a), PVO_STATUS_EINVAL,
	       "RESET->INIT of RC with QKEY (not allowed)");
	a.port_num = 2;
	tap_is(modify(h, init, &a), PVO_STATUS_EINVAL, "port 2");
	a.port_num = 1;
	a.pkey_index = htole16(1);
	tap_is(modify(h, init, &a), PVO_STATUS_EINVAL, "pkey index 1");
	a.pkey_index = 0;
	a.qp_access_flags = htole32(1 << 5);
	tap_is(modify(h, init, &a), PVO_STATUS_EINVAL, "unknown access bit");
	a.qp_access_flags = htole32(PVO_ACCESS_REMOTE_WRITE);
	a.reserved = 1;
	tap_is(modify(h, init, &a), PVO_STATUS_EINVAL, "reserved field set");
	a.reserved = 0;
	tap_is(modify(h, init | (1u << 21), &a), PVO_STATUS_EINVAL,
	       "unknown attr_mask bit");
	a.qp_state = htole32(7);
	tap_is(modify(h, init, &a), PVO_STATUS_EINVAL, "state 7");
	a.qp_state = htole32(PVO_QPS_INIT);
	a.cur_qp_state = htole32(PVO_QPS_RTS);
	tap_is(modify(h, init | M(CUR_STATE), &a), PVO_STATUS_EINVAL,
	       "CUR_STATE that is not the current state");
	tap_is(qp->state, PVO_QPS_RESET, "failed modifies change nothing");
	tap_is(modify(h, init, &a), 0, "RESET->INIT");

	a.qp_state = htole32(PVO_QPS_RTR);
	a.av.sgid_index = 1;
	a.path_mtu = htole32(3);
	a.dest_qp_num = htole32(0x12345);
	a.rq_psn = htole32(0xabcdef);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	tap_is(modify(h, rtr & ~M(MIN_RNR_TIMER), &a), PVO_STATUS_EINVAL,
	       "RC INIT->RTR without MIN_RNR_TIMER");
	a.av.sgid_index = 2;
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL, "AV naming an empty GID");
	a.av.sgid_index = 1;
	a.av.flow_label = htole32(1 << 20);
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL, "flow label > 20 bits");
	a.av.flow_label = 0;
	a.path_mtu = htole32(6);
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL, "path MTU 6");
	a.path_mtu = htole32(3);
	a.rq_psn = htole32(1 << 24);
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL, "PSN > 24 bits");
	a.rq_psn = htole32(0xabcdef);
	a.dest_qp_num = htole32(1 << 24);
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL, "dest QPN > 24 bits");
	a.dest_qp_num = htole32(0x12345);
	a.max_dest_rd_atomic = PVO_DEV_MAX_RD_ATOM + 1;
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL,
	       "max_dest_rd_atomic over the device limit");
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 32;
	tap_is(modify(h, rtr, &a), PVO_STATUS_EINVAL, "min_rnr_timer 32");
	a.min_rnr_timer = 12;
	tap_is(modify(h, rtr | M(ALT_PATH), &a), PVO_STATUS_EINVAL,
	       "alternate path (no APM)");
	tap_is(modify(h, rtr, &a), 0, "INIT->RTR");

	a.qp_state = htole32(PVO_QPS_RTS);
	a.sq_psn = htole32(0x100);
	a.timeout = 14;
	a.retry_cnt = 8;
	a.rnr_retry = 7;
	a.max_rd_atomic = 2;
	tap_is(modify(h, rts, &a), PVO_STATUS_EINVAL, "retry_cnt 8");
	a.retry_cnt = 7;
	a.timeout = 32;
	tap_is(modify(h, rts, &a), PVO_STATUS_EINVAL, "timeout 32");
	a.timeout = 14;
	tap_is(modify(h, rts | M(CAP), &a), PVO_STATUS_EINVAL,
	       "CAP (no resize)");
	tap_is(modify(h, rts, &a), 0, "RTR->RTS");
	q = query(h);
	tap_ok(le32toh(q.qp_state) == PVO_QPS_RTS &&
		       le32toh(q.dest_qp_num) == 0x12345 &&
		       le32toh(q.rq_psn) == 0xabcdef &&
		       le32toh(q.sq_psn) == 0x100 && q.timeout == 14 &&
		       q.retry_cnt == 7 && q.rnr_retry == 7 &&
		       q.min_rnr_timer == 12 && q.max_rd_atomic == 2 &&
		       q.max_dest_rd_atomic == 4 && le32toh(q.path_mtu) == 3 &&
		       le32toh(q.qp_access_flags) == PVO_ACCESS_REMOTE_WRITE &&
		       q.av.sgid_index == 1 && q.port_num == 1,
	       "QUERY_QP returns what was set");
	tap_ok(le32toh(q.max_send_wr) == 16 && le32toh(q.max_recv_wr) == 16 &&
		       le32toh(q.max_send_sge) == 2 &&
		       le32toh(q.max_inline_data) == 32,
	       "QUERY_QP returns the capabilities");

	a.qp_state = htole32(PVO_QPS_SQD);
	a.en_sqd_async_notify = 1;
	tap_is(modify(h, M(STATE) | M(EN_SQD_ASYNC_NOTIFY), &a), 0,
	       "RTS->SQD");
	tap_ok(g.vm->events.count &&
		       le32toh(g.vm->events.pending[0].type) ==
			       PVO_EV_SQ_DRAINED,
	       "idle SQ: SQ_DRAINED right away");
	a.qp_state = htole32(PVO_QPS_RTS);
	tap_is(modify(h, M(STATE), &a), 0, "SQD->RTS");

	/* RESET rewinds: the guest sees empty rings */
	{
		uint64_t sq_hdr = qp->sq.pages[0];
		struct pvo_ring_hdr *hdr = fg_ptr(&g, sq_hdr);

		hdr->prod = htole32(5);
		hdr->db_pending = htole32(1);
		a.qp_state = htole32(PVO_QPS_RESET);
		tap_is(modify(h, M(STATE), &a), 0, "RTS->RESET");
		tap_ok(le32toh(hdr->cons) == 5 && hdr->db_pending == 0 &&
			       qp->sq_cons == 5,
		       "RESET: SQ cons = prod, db_pending cleared");
		q = query(h);
		tap_ok(le32toh(q.qp_state) == PVO_QPS_RESET &&
			       le32toh(q.dest_qp_num) == 0,
		       "RESET forgets the attributes");
		hdr->prod = 0;
		hdr->cons = 0;
		qp->sq_cons = 0;
	}
}

static void test_ctx_limit(void)
{
	struct pvo_cmd_create_qp c = proto;
	uint32_t h, st = 0;
	int i, made = 0;

	/* Rings may overlap: the device does not care whose pages they
	 * are, so 512 QPs fit in little memory. */
	for (i = 0; i < PVO_DB_RING_ENTRIES + 1; i++) {
		st = create(&c, &h);
		if (st)
			break;
		made++;
	}
	tap_ok(st == PVO_STATUS_ENOSPC &&
		       g.vm->kernel.nqps == PVO_DB_RING_ENTRIES,
	       "at most %d QPs per context (made %d)", PVO_DB_RING_ENTRIES,
	       made);
	pvo_vm_reset_guest_state(g.vm);
	tap_ok(g.vm->qps.count == 0 && g.vm->kernel.nqps == 0 &&
		       g_hash_table_size(g.vm->qpn_map) == 0,
	       "reset frees every QP and number");
}

int main(void)
{
	static const char conf[] =
		"[tenant t]\nvni=5\n[vm g]\ntenant=t\n"
		"mac=52:54:00:ab:cd:ef\nips=10.0.0.1\n"
		"socket=/tmp/unused.sock\nmax-qp=1000\n";
	struct pvo_cmd_add_gid ag = { htole32(1), htole32(1) };
	struct pvo_cmd_create_cq cc = { .entries = htole32(64) };
	struct pvo_resp_create_cq cr;
	struct pvo_resp_alloc_pd r;
	struct pvo_daemon_config *cfg;
	struct fg_ring ring;
	char *err = NULL;

	tap_plan(64);
	cfg = pvo_config_parse("t", conf, &err);
	if (!cfg) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	fg_init(&g, &cfg->vms[0]);
	ag.gid[10] = ag.gid[11] = 0xff;
	ag.gid[12] = 10;
	ag.gid[15] = 1;
	ag.type = htole32(PVO_GID_TYPE_ROCE_V2);
	fg_cmd(&g, PVO_CMD_ADD_GID, 0, &ag, sizeof(ag), NULL, 0);
	fg_cmd(&g, PVO_CMD_ALLOC_PD, 0, NULL, 0, &r, sizeof(r));
	pd = le32toh(r.pd);
	fg_ring(&g, &ring, 64, 6);
	cc.ring = ring.pdir;
	fg_cmd(&g, PVO_CMD_CREATE_CQ, 0, &cc, sizeof(cc), &cr, sizeof(cr));
	cq = le32toh(cr.cq);

	proto.pd = htole32(pd);
	proto.send_cq = proto.recv_cq = htole32(cq);
	proto.qp_type = PVO_QPT_RC;
	proto.max_send_sge = htole32(2);
	proto.max_recv_sge = htole32(2);
	proto.max_inline_data = htole32(32);
	proto.sq_wqe_shift = pvo_send_wqe_shift(2, 32);
	proto.rq_wqe_shift = pvo_recv_wqe_shift(2);
	proto.sq_entries = htole32(16);
	proto.rq_entries = htole32(16);
	fg_ring(&g, &ring, 16, proto.sq_wqe_shift);
	proto.sq = ring.pdir;
	fg_ring(&g, &ring, 16, proto.rq_wqe_shift);
	proto.rq = ring.pdir;

	test_table();
	test_create();
	test_modify();
	test_ctx_limit();
	fg_fini(&g);
	pvo_config_free(cfg);
	return tap_done();
}
