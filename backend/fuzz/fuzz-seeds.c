// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Writes fuzz-ctrl's seed inputs from real scenarios: each runs commands
 * on the harness's guest (same configuration, same RAM) with fg_cmd
 * recording them, builds rings and WQEs in RAM, and saves the RAM image
 * and the commands in fuzz-ctrl's input format. Replayed, a seed reaches
 * the same state, so the fuzzer starts from QPs that move data.
 *
 * It also writes fuzz-overlay-rx's seeds, one well-formed datagram of
 * each RoCE opcode the overlay handles with a correct ICRC, and
 * fuzz-vhost's: QEMU's handshake with the device as message streams,
 * and fuzz-state's: the migration state stream of each scenario's VM,
 * and fuzz-overlay-rq's: datagrams of each kind of request and response
 * to the harness's QPs, in its record format (fuzz.h).
 *
 *   fuzz-seeds DIR     (backend/fuzz/corpus: writes fuzz-ctrl/,
 *                       fuzz-overlay-rx/, fuzz-overlay-rq/, fuzz-vhost/
 *                       and fuzz-state/)
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "fuzz.h"
#define FG_RAM_SIZE FUZZ_CTRL_RAM
#include "doorbell.h"
#include "encap.h"
#include "fake_guest.h"
#include "roce.h"
#include "state.h"

struct scenario {
	struct fake_guest g;
	uint32_t ctx, dbq; /* the context and its doorbell queue */
	uint32_t pd, cq, mr, key, qp, qpn;
	uint64_t db, buf;
	struct fg_ring cqr, sq, rq;
	uint32_t srq; /* the QP's SRQ (its receives on srqr), or 0 */
	struct fg_ring srqr;
	uint8_t gid[16];
};

/* The objects of one context: the kernel's, or (user) a new one. */
static void setup(struct scenario *s, const struct pvo_vm_config *cfg,
		  bool user)
{
	struct pvo_resp_alloc_ucontext ru;
	struct pvo_cmd_add_gid ag = { htole32(1), htole32(1) };
	struct pvo_cmd_create_cq cc = { .entries = htole32(64) };
	struct pvo_cmd_reg_mr mr = { 0 };
	struct pvo_cmd_set_db_ring db;
	struct pvo_resp_create_cq rcq;
	struct pvo_resp_alloc_pd rpd;
	struct pvo_resp_reg_mr rmr;
	uint32_t ip = inet_addr("10.0.0.1");

	fg_init(&s->g, cfg);
	s->g.next = FUZZ_CTRL_IMAGE_GPA;
	memset(s->gid, 0, 16);
	s->gid[10] = s->gid[11] = 0xff;
	memcpy(s->gid + 12, &ip, 4);
	memcpy(ag.gid, s->gid, 16);
	ag.type = htole32(PVO_GID_TYPE_ROCE_V2);
	fg_cmd(&s->g, PVO_CMD_ADD_GID, 0, &ag, sizeof(ag), NULL, 0);
	s->ctx = PVO_CTX_KERNEL;
	s->dbq = PVO_VQ_DB_KERNEL;
	if (user) {
		fg_cmd(&s->g, PVO_CMD_ALLOC_UCONTEXT, 0, NULL, 0, &ru,
		       sizeof(ru));
		s->ctx = le32toh(ru.ctx);
		s->dbq = le32toh(ru.db_queue);
	}
	fg_cmd(&s->g, PVO_CMD_ALLOC_PD, s->ctx, NULL, 0, &rpd, sizeof(rpd));
	s->pd = le32toh(rpd.pd);
	s->db = fg_alloc(&s->g, 1);
	db.gpa = htole64(s->db);
	fg_cmd(&s->g, PVO_CMD_SET_DB_RING, s->ctx, &db, sizeof(db), NULL, 0);
	fg_ring(&s->g, &s->cqr, 64, 6);
	cc.ring = s->cqr.pdir;
	fg_cmd(&s->g, PVO_CMD_CREATE_CQ, s->ctx, &cc, sizeof(cc), &rcq,
	       sizeof(rcq));
	s->cq = le32toh(rcq.cq);
	s->buf = fg_alloc(&s->g, 2);
	mr.pd = htole32(s->pd);
	mr.access = htole32(PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_READ | PVO_ACCESS_REMOTE_ATOMIC |
			    PVO_ACCESS_MW_BIND);
	mr.iova = htole64(0x7f0000000000ull);
	mr.length = htole64(2 * 4096);
	fg_pdir_range(&s->g, s->buf, 2, &mr.pages);
	fg_cmd(&s->g, PVO_CMD_REG_MR, s->ctx, &mr, sizeof(mr), &rmr,
	       sizeof(rmr));
	s->mr = le32toh(rmr.mr);
	s->key = le32toh(rmr.key);
}

static void modify(struct scenario *s, uint32_t mask,
		   const struct pvo_qp_attr *a)
{
	struct pvo_cmd_modify_qp c = { .qp = htole32(s->qp),
				       .attr_mask = htole32(mask) };

	c.attr = *a;
	fg_cmd(&s->g, PVO_CMD_MODIFY_QP, s->ctx, &c, sizeof(c), NULL, 0);
}

/* An SRQ of 16 receives for the QP rc_self makes next: its ring is
 * read as messages come (no SRQ doorbell), and a migration stream then
 * carries it. */
static void srq_make(struct scenario *s)
{
	struct pvo_cmd_create_srq c = { 0 };
	struct pvo_resp_create_srq r;

	c.pd = htole32(s->pd);
	c.entries = htole32(16);
	c.max_sge = htole32(4);
	c.wqe_shift = pvo_recv_wqe_shift(4);
	fg_ring(&s->g, &s->srqr, 16, c.wqe_shift);
	c.ring = s->srqr.pdir;
	fg_cmd(&s->g, PVO_CMD_CREATE_SRQ, s->ctx, &c, sizeof(c), &r, sizeof(r));
	s->srq = le32toh(r.srq);
}

/* An RC QP connected to itself through the local transport. */
static void rc_self(struct scenario *s)
{
	struct pvo_cmd_create_qp c = { 0 };
	struct pvo_resp_create_qp r;
	struct pvo_qp_attr a = { 0 };

	c.pd = htole32(s->pd);
	c.send_cq = c.recv_cq = htole32(s->cq);
	c.qp_type = PVO_QPT_RC;
	c.sq_wqe_shift = pvo_send_wqe_shift(4, 64);
	c.rq_wqe_shift = pvo_recv_wqe_shift(4);
	c.sq_entries = c.rq_entries = htole32(16);
	c.max_send_sge = c.max_recv_sge = htole32(4);
	c.max_inline_data = htole32(64);
	fg_ring(&s->g, &s->sq, 16, c.sq_wqe_shift);
	c.sq = s->sq.pdir;
	if (s->srq) {
		c.srq = htole32(s->srq);
		c.rq_entries = 0;
	} else {
		fg_ring(&s->g, &s->rq, 16, c.rq_wqe_shift);
		c.rq = s->rq.pdir;
	}
	fg_cmd(&s->g, PVO_CMD_CREATE_QP, s->ctx, &c, sizeof(c), &r,
	       sizeof(r));
	s->qp = le32toh(r.qp);
	s->qpn = le32toh(r.qpn);

	a.qp_state = htole32(PVO_QPS_INIT);
	a.port_num = 1;
	a.qp_access_flags = htole32(PVO_ACCESS_REMOTE_WRITE |
				    PVO_ACCESS_REMOTE_READ |
				    PVO_ACCESS_REMOTE_ATOMIC);
	modify(s, PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			  PVO_QP_ACCESS_FLAGS, &a);
	a.qp_state = htole32(PVO_QPS_RTR);
	memcpy(a.av.dgid, s->gid, 16);
	a.av.sgid_index = 1;
	a.av.hop_limit = 64;
	a.path_mtu = htole32(3);
	a.dest_qp_num = htole32(s->qpn);
	a.max_dest_rd_atomic = 1;
	modify(s, PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
			  PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
			  PVO_QP_MAX_DEST_RD_ATOMIC | PVO_QP_MIN_RNR_TIMER, &a);
	a.qp_state = htole32(PVO_QPS_RTS);
	a.timeout = 8;
	a.retry_cnt = 1;
	a.max_rd_atomic = 1;
	modify(s, PVO_QP_STATE | PVO_QP_SQ_PSN | PVO_QP_TIMEOUT |
			  PVO_QP_RETRY_CNT | PVO_QP_RNR_RETRY |
			  PVO_QP_MAX_QP_RD_ATOMIC, &a);
}

/* One WQE of op on the SQ (with a receive WQE for SENDs), published and
 * recorded in the doorbell ring; fuzz-ctrl kicks after the commands. */
static void post(struct scenario *s, uint8_t op)
{
	const struct fg_ring *rq = s->srq ? &s->srqr : &s->rq;
	struct pvo_send_wqe *w = fg_next(&s->g, &s->sq);
	struct pvo_sge *sg = (struct pvo_sge *)(w + 1);
	struct pvo_recv_wqe *rw = fg_next(&s->g, rq);
	struct pvo_sge *rs = (struct pvo_sge *)(rw + 1);
	uint32_t *db = fg_ptr(&s->g, s->db);

	w->wr_id = htole64(1);
	w->opcode = op;
	w->flags = PVO_WQE_F_SIGNALED;
	w->num_sge = 1;
	if (op == PVO_WR_ATOMIC_FETCH_AND_ADD) {
		sg->length = htole32(8);
		w->u.atomic.remote_addr = htole64(0x7f0000000000ull + 4096);
		w->u.atomic.compare_add = htole64(1);
		w->u.atomic.rkey = htole32(s->key);
	} else {
		w->u.rdma.remote_addr = htole64(0x7f0000000000ull + 4096);
		w->u.rdma.rkey = htole32(s->key);
	}
	sg->addr = htole64(0x7f0000000000ull);
	sg->lkey = htole32(s->key);
	if (!sg->length)
		sg->length = htole32(64);
	fg_publish(&s->g, &s->sq);
	rw->wr_id = htole64(2);
	rw->num_sge = 1;
	rs->addr = htole64(0x7f0000000000ull + 4096);
	rs->length = htole32(4096);
	rs->lkey = htole32(s->key);
	fg_publish(&s->g, rq);
	fg_hdr(&s->g, &s->sq)->db_pending = htole32(1);
	db[PVO_DB_RING_ENTRY_OFF / 4] = htole32(s->qp);
	db[0] = htole32(1);
}

/* ALLOC_MR and a REG_MR WQE giving it one page: the fast-registration
 * path (kernel QPs only, which the seeds' QPs are). */
static void post_reg(struct scenario *s)
{
	struct pvo_cmd_alloc_mr c = { htole32(s->pd), htole32(4) };
	struct pvo_send_wqe *w = fg_next(&s->g, &s->sq);
	uint32_t *db = fg_ptr(&s->g, s->db);
	struct pvo_resp_reg_mr r;
	uint64_t list = fg_alloc(&s->g, 1), page = fg_alloc(&s->g, 1);
	uint64_t *l = fg_ptr(&s->g, list);

	fg_cmd(&s->g, PVO_CMD_ALLOC_MR, 0, &c, sizeof(c), &r, sizeof(r));
	l[0] = htole64(page);
	w->wr_id = htole64(1);
	w->opcode = PVO_WR_REG_MR;
	w->flags = PVO_WQE_F_SIGNALED;
	w->u.reg.iova = htole64(0x100000);
	w->u.reg.length = htole64(4096);
	w->u.reg.pages = htole64(list);
	w->u.reg.key = htole32((le32toh(r.key) & ~0xffu) | 0x42);
	w->u.reg.access = htole32(PVO_ACCESS_LOCAL_WRITE |
				  PVO_ACCESS_REMOTE_WRITE);
	w->u.reg.npages = htole32(1);
	fg_publish(&s->g, &s->sq);
	fg_hdr(&s->g, &s->sq)->db_pending = htole32(1);
	db[PVO_DB_RING_ENTRY_OFF / 4] = htole32(s->qp);
	db[0] = htole32(1);
}

/* What fuzz-ctrl does after the commands; true if the WQE completed
 * without error, so the seed reaches the data path for real. */
/* A user context's type 2 window bound to a page of its MR: the memory
 * window path (windows are for user contexts only). */
static void post_bind(struct scenario *s)
{
	struct pvo_cmd_alloc_mw c = { htole32(s->pd), htole32(2) };
	struct pvo_send_wqe *w = fg_next(&s->g, &s->sq);
	uint32_t *db = fg_ptr(&s->g, s->db);
	struct pvo_resp_alloc_mw r;

	fg_cmd(&s->g, PVO_CMD_ALLOC_MW, s->ctx, &c, sizeof(c), &r, sizeof(r));
	w->wr_id = htole64(1);
	w->opcode = PVO_WR_BIND_MW;
	w->flags = PVO_WQE_F_SIGNALED;
	w->u.bind.addr = htole64(0x7f0000000000ull + 4096);
	w->u.bind.length = htole64(4096);
	w->u.bind.rkey = htole32((le32toh(r.rkey) & ~0xffu) | 0x42);
	w->u.bind.mr_lkey = htole32(s->key);
	w->u.bind.access = htole32(PVO_ACCESS_REMOTE_WRITE);
	fg_publish(&s->g, &s->sq);
	fg_hdr(&s->g, &s->sq)->db_pending = htole32(1);
	db[PVO_DB_RING_ENTRY_OFF / 4] = htole32(s->qp);
	db[0] = htole32(1);
}

static bool completes(struct scenario *s)
{
	struct pvo_ring_hdr *h = fg_hdr(&s->g, &s->cqr);
	struct pvo_cqe *c;
	int i;

	pvo_doorbell_kick(s->g.vm, s->dbq);
	for (i = 0; i < 4; i++)
		g_main_context_iteration(NULL, FALSE);
	if (le32toh(h->prod) < 1)
		return false;
	c = fg_entry(&s->g, &s->cqr, 0);
	return c->status == PVO_WC_SUCCESS;
}

static void save(struct scenario *s, const char *dir, const char *name)
{
	uint32_t n = htole32(s->g.next - FUZZ_CTRL_IMAGE_GPA);
	char *path = g_build_filename(dir, name, NULL);
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(&n, 4, 1, f) != 1 ||
	    fwrite(fg_ptr(&s->g, FUZZ_CTRL_IMAGE_GPA), 1, le32toh(n), f) !=
		le32toh(n) ||
	    fwrite(fg_record->data, 1, fg_record->len, f) != fg_record->len ||
	    fclose(f)) {
		perror(path);
		exit(1);
	}
	printf("%s: %u bytes of RAM, %u bytes of commands\n", path,
	       le32toh(n), fg_record->len);
	g_free(path);
}

static void write_file(const char *dir, const char *name, const void *buf,
		       size_t len)
{
	char *path = g_build_filename(dir, name, NULL);
	GError *err = NULL;

	if (!g_file_set_contents(path, buf, len, &err)) {
		fprintf(stderr, "fuzz-seeds: %s\n", err->message);
		exit(1);
	}
	g_free(path);
}

/* A VXLAN datagram of opcode op (RC, or UD with a DETH). */
static void packet(const char *dir, uint8_t op)
{
	struct pvo_inner in = { .vni = 5, .ttl = 64, .sport = 0xc001 };
	struct pvo_roce_hdr h = { 0 };
	uint8_t buf[PVO_ENCAP_LEN + PVO_ROCE_MAX_HDRS + 64 + 4] = { 0 };
	const uint8_t *roce;
	size_t hl, payload = 0, len, dlen;
	char name[32];

	memcpy(in.dmac, (uint8_t[]){ 0x52, 0x54, 0, 0xab, 0xcd, 0xef }, 6);
	memcpy(in.smac, (uint8_t[]){ 0x52, 0x54, 0, 0, 7, 1 }, 6);
	in.sip = inet_addr("10.0.0.7");
	in.dip = inet_addr("10.0.0.1");
	h.opcode = op;
	h.pkey = PVO_ROCE_PKEY_DEFAULT;
	h.dqpn = 0x11;
	h.psn = 0x123;
	h.ackreq = true;
	h.qkey = 0x1111;
	h.sqpn = 0x12;
	h.va = 0x7f0000000000ull;
	h.rkey = 0x100;
	h.dma_len = 64;
	h.swap_add = 1;
	h.syndrome = PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID;
	h.msn = 1;
	if (pvo_roce_flags(op) & PVO_RH_PAYLOAD)
		payload = 64;
	hl = pvo_roce_encode(buf + PVO_ENCAP_LEN, &h);
	memset(buf + PVO_ENCAP_LEN + hl, 0xa5, payload);
	dlen = pvo_encap_seal(buf, &in, hl + payload);
	snprintf(name, sizeof(name), "opcode-0x%02x", op);
	/* a seed the receive path rejects would explore nothing */
	if (pvo_encap_parse(buf, dlen, &in, &roce, &len) != PVO_ENCAP_OK ||
	    !pvo_roce_decode(roce, len, &h)) {
		fprintf(stderr, "fuzz-seeds: %s does not parse\n", name);
		exit(1);
	}
	write_file(dir, name, buf, dlen);
}

/* vhost-user messages (docs of the protocol: QEMU's vhost-user.rst) */
enum {
	VU_GET_FEATURES = 1, VU_SET_FEATURES = 2, VU_SET_OWNER = 3,
	VU_SET_VRING_NUM = 8, VU_SET_VRING_ADDR = 9, VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11, VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16, VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18, VU_GET_CONFIG = 24,
};

static void vu_msg(GByteArray *out, uint32_t req, const void *body,
		   uint32_t len)
{
	uint32_t hdr[3] = { htole32(req), htole32(1), htole32(len) };

	g_byte_array_append(out, (const guint8 *)hdr, sizeof(hdr));
	if (len)
		g_byte_array_append(out, body, len);
}

static void vu_u64(GByteArray *out, uint32_t req, uint64_t v)
{
	v = htole64(v);
	vu_msg(out, req, &v, 8);
}

static void vu_state(GByteArray *out, uint32_t req, uint32_t idx,
		     uint32_t num)
{
	uint32_t st[2] = { htole32(idx), htole32(num) };

	vu_msg(out, req, st, sizeof(st));
}

static void vhost_seeds(const char *dir)
{
	uint8_t config[12 + 256] = { 0 };
	uint64_t addr[6] = { 0 };
	GByteArray *m = g_byte_array_new();
	uint32_t q;

	/* what QEMU sends before the guest driver runs */
	vu_msg(m, VU_GET_FEATURES, NULL, 0);
	vu_msg(m, VU_GET_PROTOCOL_FEATURES, NULL, 0);
	vu_u64(m, VU_SET_PROTOCOL_FEATURES, 0x203); /* MQ, REPLY_ACK, CONFIG */
	vu_msg(m, VU_GET_QUEUE_NUM, NULL, 0);
	vu_msg(m, VU_SET_OWNER, NULL, 0);
	config[4] = 152; /* size: struct pvo_config */
	vu_msg(m, VU_GET_CONFIG, config, sizeof(config));
	write_file(dir, "handshake", m->data, m->len);
	/* then the rings of the first queues, without memory or eventfds */
	vu_u64(m, VU_SET_FEATURES, 1ull << 32); /* VIRTIO_F_VERSION_1 */
	for (q = 0; q < 3; q++) {
		vu_state(m, VU_SET_VRING_NUM, q, 256);
		vu_state(m, VU_SET_VRING_BASE, q, 0);
		addr[0] = htole64(q);
		vu_msg(m, VU_SET_VRING_ADDR, addr, sizeof(addr));
		vu_state(m, VU_SET_VRING_ENABLE, q, 1);
	}
	vu_state(m, VU_GET_VRING_BASE, 0, 0);
	write_file(dir, "rings", m->data, m->len);
	g_byte_array_free(m, TRUE);
}

/* ---- fuzz-overlay-rq: datagrams to a VM's QPs ---------------------------- */

/* One record: the headers of h (its opcode says which) and len bytes of
 * payload, sent to QP target with ctl's and sel's other bits. */
static void rq_rec(GByteArray *m, uint8_t ctl, uint8_t sel, int8_t psn,
		   uint8_t key, struct pvo_roce_hdr *h, size_t len)
{
	uint8_t b[PVO_ROCE_MAX_HDRS + 4096 + 3];
	struct fuzz_rq_rec r = { ctl, sel, psn, key };
	size_t n, i;

	h->pkey = PVO_ROCE_PKEY_DEFAULT;
	h->pad = (4 - (len & 3)) & 3;
	n = pvo_roce_encode(b, h);
	for (i = 0; i < len; i++)
		b[n + i] = (uint8_t)(i * 7 + 1);
	memset(b + n + len, 0, h->pad);
	n += len + h->pad;
	r.len[0] = n & 0xff;
	r.len[1] = n >> 8;
	g_byte_array_append(m, (const guint8 *)&r, sizeof(r));
	g_byte_array_append(m, b, n);
}

/* A request or response of opcode op with the usual fields. */
static void rq_op(GByteArray *m, uint8_t target, unsigned int turns,
		  int8_t psn, uint8_t op, uint64_t va, uint32_t dma_len,
		  size_t len)
{
	struct pvo_roce_hdr h = { .opcode = op, .ackreq = true };

	h.va = va;
	h.dma_len = dma_len;
	h.swap_add = 1;
	h.compare = 0;
	h.qkey = FUZZ_RQ_QKEY;
	h.sqpn = 0x66;
	h.syndrome = PVO_AETH_ACK | PVO_AETH_CREDITS_INVALID;
	h.msn = 1;
	rq_rec(m, target | turns << FUZZ_RQ_C_TURNS_SHIFT, 0, psn,
	       FUZZ_RQ_KEY_RW, &h, len);
}

/* An action of the guest (FUZZ_RQ_ACT_*), with turns after it. */
static void rq_act(GByteArray *m, uint8_t what, unsigned int turns)
{
	struct fuzz_rq_rec r = { turns << FUZZ_RQ_C_TURNS_SHIFT,
				 FUZZ_RQ_A_ACT, 0, what };

	g_byte_array_append(m, (const guint8 *)&r, sizeof(r));
}

static void rq_save(const char *dir, const char *name, uint8_t s,
		    GByteArray *m)
{
	g_byte_array_prepend(m, &s, 1);
	write_file(dir, name, m->data, m->len);
	g_byte_array_set_size(m, 0);
}

static void rq_seeds(const char *dir)
{
	const uint8_t rd4 = 2 << FUZZ_RQ_S_RD_SHIFT;
	GByteArray *m = g_byte_array_new();
	struct pvo_roce_hdr h = { 0 };
	unsigned int i;

	g_mkdir_with_parents(dir, 0755);
	/* SENDs: one packet, then a message of three */
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_ONLY, 0, 0, 64);
	rq_op(m, FUZZ_RQ_C_RC, 0, 0, PVO_OPC_SEND_FIRST, 0, 0, 1024);
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_LAST_IMM, 0, 0, 100);
	rq_op(m, FUZZ_RQ_C_RC, 1, -1, PVO_OPC_SEND_LAST_IMM, 0, 0, 100);
	rq_save(dir, "rc-send", 3 | rd4, m);
	/* no receive WQE: RNR */
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_ONLY, 0, 0, 64);
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_ONLY, 0, 0, 64);
	rq_save(dir, "rc-rnr", rd4, m);
	/* ... until the guest posts one */
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_ONLY, 0, 0, 64);
	rq_act(m, FUZZ_RQ_ACT_RECV, 0);
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_ONLY, 0, 0, 64);
	rq_save(dir, "rc-rnr-posted", rd4, m);
	/* WRITEs: one packet, two, to the read-only MR, a wrong rkey */
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_WRITE_ONLY, 0x100, 64, 64);
	rq_op(m, FUZZ_RQ_C_RC, 0, 0, PVO_OPC_WRITE_FIRST, 0x1000, 1100,
	      1024);
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_WRITE_LAST_IMM, 0, 0, 76);
	rq_save(dir, "rc-write", 1 | rd4, m);
	h = (struct pvo_roce_hdr){ .opcode = PVO_OPC_WRITE_ONLY,
				   .ackreq = true, .va = 0, .dma_len = 8 };
	rq_rec(m, FUZZ_RQ_C_RC | 1 << FUZZ_RQ_C_TURNS_SHIFT, 0, 0,
	       FUZZ_RQ_KEY_RO, &h, 8);
	rq_rec(m, FUZZ_RQ_C_RC | 1 << FUZZ_RQ_C_TURNS_SHIFT, 0, 0,
	       FUZZ_RQ_KEY_BAD, &h, 8);
	rq_save(dir, "rc-write-denied", rd4, m);
	/* READs: the whole MR at MTU 256, a response window per turn */
	rq_op(m, FUZZ_RQ_C_RC, 7, 0, PVO_OPC_READ_REQUEST, 0,
	      FUZZ_RQ_MR_RW_LEN, 0);
	rq_save(dir, "rc-read-window", FUZZ_RQ_S_MTU256 | rd4, m);
	/* ... stopped halfway: by the QP's error, the MR's going, a
	 * freeze, the QP's destruction */
	for (i = 0; i < FUZZ_RQ_ACT_RECV; i++) {
		static const char *const names[] = {
			"rc-read-qp-err", "rc-read-dereg", "rc-read-frozen",
			"rc-read-destroy" };

		rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_READ_REQUEST, 0,
		      FUZZ_RQ_MR_RW_LEN, 0);
		rq_act(m, i, 2);
		/* thawed, the requester asks for the rest */
		if (i == FUZZ_RQ_ACT_FREEZE) {
			rq_act(m, i, 0);
			rq_op(m, FUZZ_RQ_C_RC, 3, -128, PVO_OPC_READ_REQUEST,
			      FUZZ_RQ_MR_RW_LEN / 2, FUZZ_RQ_MR_RW_LEN / 2,
			      0);
		}
		rq_save(dir, names[i], FUZZ_RQ_S_MTU256 | rd4, m);
	}
	/* a READ, its duplicate, a re-request of its second half, and a
	 * READ past the MR's end */
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_READ_REQUEST, 0x4000, 16384,
	      0);
	rq_op(m, FUZZ_RQ_C_RC, 1, -16, PVO_OPC_READ_REQUEST, 0x4000, 16384,
	      0);
	rq_op(m, FUZZ_RQ_C_RC, 1, -8, PVO_OPC_READ_REQUEST, 0x6000, 8192,
	      0);
	rq_op(m, FUZZ_RQ_C_RC, 0, 0, PVO_OPC_READ_REQUEST, 0x100, 1024, 0);
	rq_op(m, FUZZ_RQ_C_RC, 2, 1, PVO_OPC_READ_REQUEST, 0xff00, 1024, 0);
	rq_save(dir, "rc-read-dup", rd4, m);
	/* atomics, and one again (its saved result) */
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_FETCH_ADD, 0x200, 0, 0);
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_CMP_SWAP, 0x208, 0, 0);
	rq_op(m, FUZZ_RQ_C_RC, 1, -2, PVO_OPC_FETCH_ADD, 0x200, 0, 0);
	rq_save(dir, "rc-atomic", rd4, m);
	/* the requester's SEND, WRITE, READ and FETCH_ADD answered */
	rq_op(m, FUZZ_RQ_C_RC, 1, 1, PVO_OPC_ACK, 0, 0, 0);
	rq_op(m, FUZZ_RQ_C_RC, 0, 2, PVO_OPC_READ_RESP_FIRST, 0, 0, 1024);
	rq_op(m, FUZZ_RQ_C_RC, 1, 3, PVO_OPC_READ_RESP_LAST, 0, 0, 1024);
	rq_op(m, FUZZ_RQ_C_RC, 1, 4, PVO_OPC_ATOMIC_ACK, 0, 0, 0);
	rq_save(dir, "rc-requester", FUZZ_RQ_S_REQ | rd4, m);
	/* ... a sequence NAK and an RNR NAK */
	h = (struct pvo_roce_hdr){ .opcode = PVO_OPC_ACK, .msn = 0 };
	h.syndrome = PVO_AETH_NAK | PVO_NAK_PSN_SEQ;
	rq_rec(m, FUZZ_RQ_C_RC | 1 << FUZZ_RQ_C_TURNS_SHIFT, 0, 0, 0, &h, 0);
	h.syndrome = PVO_AETH_RNR_NAK | 1;
	rq_rec(m, FUZZ_RQ_C_RC | 1 << FUZZ_RQ_C_TURNS_SHIFT, 0, 1, 0, &h, 0);
	h.syndrome = PVO_AETH_NAK | PVO_NAK_REM_ACCESS;
	rq_rec(m, FUZZ_RQ_C_RC | 1 << FUZZ_RQ_C_TURNS_SHIFT, 0, 2, 0, &h, 0);
	rq_save(dir, "rc-nak", FUZZ_RQ_S_REQ | FUZZ_RQ_S_TIMEOUT | rd4, m);
	/* a PSN ahead (a sequence NAK), then the expected one */
	rq_op(m, FUZZ_RQ_C_RC, 1, 5, PVO_OPC_SEND_ONLY, 0, 0, 16);
	rq_op(m, FUZZ_RQ_C_RC, 1, 0, PVO_OPC_SEND_ONLY, 0, 0, 16);
	rq_save(dir, "rc-psn-gap", 1 | rd4, m);
	/* UC: a WRITE, a message with a gap; UD: a SEND, one to the group */
	rq_op(m, FUZZ_RQ_C_UC, 1, 0, PVO_OPC_WRITE_ONLY | PVO_ROCE_UC, 0x300,
	      32, 32);
	rq_op(m, FUZZ_RQ_C_UC, 0, 0, PVO_OPC_SEND_FIRST | PVO_ROCE_UC, 0, 0,
	      1024);
	rq_op(m, FUZZ_RQ_C_UC, 1, 1, PVO_OPC_SEND_LAST | PVO_ROCE_UC, 0, 0,
	      8);
	rq_op(m, FUZZ_RQ_C_UC, 1, 0, PVO_OPC_SEND_ONLY | PVO_ROCE_UC, 0, 0,
	      8);
	rq_save(dir, "uc", 2 | rd4, m);
	rq_op(m, FUZZ_RQ_C_UD, 1, 0, PVO_OPC_SEND_ONLY | PVO_ROCE_UD, 0, 0,
	      256);
	h = (struct pvo_roce_hdr){ .opcode = PVO_OPC_SEND_ONLY_IMM |
					     PVO_ROCE_UD,
				   .qkey = FUZZ_RQ_QKEY, .sqpn = 0x67 };
	rq_rec(m, FUZZ_RQ_C_UD | 1 << FUZZ_RQ_C_TURNS_SHIFT,
	       2 << FUZZ_RQ_A_DST_SHIFT, 0, 0, &h, 40);
	rq_save(dir, "ud-mcast", 2 | FUZZ_RQ_S_MCAST, m);
	g_byte_array_free(m, TRUE);
}

int main(int argc, char **argv)
{
	static const uint8_t ops[] = { PVO_WR_SEND, PVO_WR_RDMA_WRITE,
				       PVO_WR_RDMA_READ,
				       PVO_WR_ATOMIC_FETCH_AND_ADD,
				       PVO_WR_REG_MR, PVO_WR_BIND_MW,
				       PVO_WR_SEND };
	static const char *const names[] = { "rc-send",	     "rc-write",
					     "rc-read",	     "rc-fetch-add",
					     "rc-reg-mr",    "rc-bind-mw",
					     "rc-send-srq" };
	struct pvo_daemon_config *cfg;
	char *err = NULL, *ctrl, *rx, *rq, *vh, *st;
	unsigned int i;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz-seeds DIR\n");
		return 2;
	}
	cfg = pvo_config_parse("fuzz.conf", FUZZ_CTRL_CONF, &err);
	if (!cfg) {
		fprintf(stderr, "fuzz-seeds: %s\n", err);
		return 1;
	}
	ctrl = g_build_filename(argv[1], "fuzz-ctrl", NULL);
	rx = g_build_filename(argv[1], "fuzz-overlay-rx", NULL);
	st = g_build_filename(argv[1], "fuzz-state", NULL);
	g_mkdir_with_parents(st, 0755);
	for (i = 0; i <= PVO_OPC_SEND_ONLY_INV; i++)
		if (pvo_roce_flags(i))
			packet(rx, i);
	packet(rx, PVO_ROCE_UD | PVO_OPC_SEND_ONLY);
	rq = g_build_filename(argv[1], "fuzz-overlay-rq", NULL);
	rq_seeds(rq);
	g_free(rq);
	vh = g_build_filename(argv[1], "fuzz-vhost", NULL);
	vhost_seeds(vh);
	g_free(vh);
	for (i = 0; i < sizeof(ops); i++) {
		struct scenario s;

		fg_record = g_byte_array_new();
		setup(&s, &cfg->vms[0], ops[i] == PVO_WR_BIND_MW);
		s.srq = 0;
		/* the last: a SEND into a receive of the QP's SRQ */
		if (i == sizeof(ops) - 1)
			srq_make(&s);
		rc_self(&s);
		if (ops[i] == PVO_WR_REG_MR)
			post_reg(&s);
		else if (ops[i] == PVO_WR_BIND_MW)
			post_bind(&s);
		else
			post(&s, ops[i]);
		save(&s, ctrl, names[i]);
		if (!completes(&s)) {
			fprintf(stderr, "fuzz-seeds: %s does not complete\n",
				names[i]);
			return 1;
		}
		{
			GByteArray *state = pvo_state_save(s.g.vm);

			write_file(st, names[i], state->data, state->len);
			g_byte_array_free(state, TRUE);
		}
		fg_fini(&s.g);
		g_byte_array_free(fg_record, TRUE);
		fg_record = NULL;
	}
	pvo_config_free(cfg);
	g_free(ctrl);
	g_free(rx);
	g_free(st);
	return 0;
}
