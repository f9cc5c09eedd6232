// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The overlay's receive path with QPs behind it: datagrams from a peer
 * VTEP reach the overlay's real socket and go through every check
 * (overlay.c) to a VM's QPs, the responder (receiver.c, resp.c: PSNs,
 * duplicates, NAKs, RNR, READ responses in windows, atomics, rkeys) and
 * the requester's completer (sender.c, comp.c: ACKs, NAKs, READ
 * responses). The answers go out through the real send path to the
 * peer's socket, which nobody reads.
 *
 * Each input gets a new VM (fake guest RAM reused) with an RC, a UC and
 * a UD QP connected to the peer, a read-write and a read-only MR, the
 * receive WQEs and requests the scenario byte asks for; then its
 * datagrams (fuzz.h, struct fuzz_rq_rec), with the loop turning between
 * them where the record says, as the daemon's would: receive batches,
 * coalesced ACKs, the READ responses' zero-delay timers. What a fuzzer
 * cannot guess, the harness fills in: the ICRC, the destination QPN,
 * PSNs relative to the QP's, rkeys and addresses of the MRs.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#define FG_RAM_SIZE (512u << 10)
#include "config.h"
#include "doorbell.h"
#include "encap.h"
#include "fake_guest.h"
#include "overlay.h"
#include "qp.h"
#include "roce.h"

#define IOVA_RW 0x7f0000000000ull
#define IOVA_RO 0x7f0000100000ull
#define PEER_QPN 0x66
#define MAX_TURNS 64 /* loop turns per input, the final ones aside */

static const uint8_t vm_mac[6] = { 0x52, 0x54, 0, 0xab, 0xcd, 0xef };
static const uint8_t peer_mac[6] = { 0x52, 0x54, 0, 0, 7, 1 };

static struct pvo_daemon_config *cfg;
static uint8_t *ram[2];
static int peer = -1; /* 127.0.0.6, the peer VTEP: sends, never reads */
static struct sockaddr_in vtep;

/* One input's VM and what the datagrams may name. */
struct rig {
	struct fake_guest g;
	uint32_t pd, cq, mr_rw, key_rw, key_ro, db;
	unsigned int posted[3]; /* receive WQEs, for their buffers */
	uint32_t qpn[3], rc; /* RC, UC, UD; the RC QP's handle */
	struct fg_ring sq, rq[3];
	uint64_t buf_rw;
};

/* ---- set-up, once per process -------------------------------------- */

static bool try_port(unsigned int port)
{
	struct sockaddr_in la = { .sin_family = AF_INET };
	char *err = NULL, *conf;
	int size = 4096;

	peer = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (peer < 0)
		abort();
	setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	la.sin_addr.s_addr = inet_addr("127.0.0.6");
	la.sin_port = htons(port);
	if (bind(peer, (struct sockaddr *)&la, sizeof(la)))
		goto fail;
	conf = g_strdup_printf(
	    "[daemon]\nvtep = 127.0.0.1\nvxlan-port = %u\nthreads = 1\n"
	    "[tenant t]\nvni = 5\nmtu = 1500\nlearn = no\n"
	    "[tenant u]\nvni = 6\nmtu = 1500\nlearn = no\n"
	    "[vm g]\ntenant = t\nmac = 52:54:00:ab:cd:ef\n"
	    "ips = 10.0.0.1, 10.0.0.2\nmax-qp = 8\nmax-mr = 8\n"
	    "socket = /tmp/pvo-fuzz-unused.sock\n"
	    "[remote x]\ntenant = t\nmac = 52:54:00:00:07:01\n"
	    "ips = 10.0.0.7\nvtep = 127.0.0.6\n"
	    "[remote y]\ntenant = t\nmac = 52:54:00:00:08:01\n"
	    "ips = 10.0.0.8\nvtep = 127.0.0.7\n",
	    port);
	cfg = pvo_config_parse("fuzz.conf", conf, &err);
	g_free(conf);
	if (!cfg) {
		fprintf(stderr, "fuzz-overlay-rq: %s\n", err);
		abort();
	}
	if (pvo_overlay_start(cfg, &err))
		return true;
	g_free(err);
	pvo_config_free(cfg);
	cfg = NULL;
fail:
	close(peer);
	peer = -1;
	return false;
}

static void setup(void)
{
	unsigned int tries;

	for (tries = 0; tries < 50; tries++)
		if (try_port(20000 + (getpid() * 7 + tries * 997) % 40000))
			break;
	ram[0] = aligned_alloc(4096, FG_HALF);
	ram[1] = aligned_alloc(4096, FG_HALF);
	if (!cfg || !ram[0] || !ram[1]) {
		fprintf(stderr, "fuzz-overlay-rq: no overlay on 127.0.0.1\n");
		abort();
	}
	vtep.sin_family = AF_INET;
	vtep.sin_addr.s_addr = inet_addr("127.0.0.1");
	vtep.sin_port = htons(cfg->vxlan_port);
}

/* ---- the VM ---------------------------------------------------------- */

static uint32_t cmd(struct rig *r, uint16_t op, const void *c, size_t len,
		    void *resp, size_t rlen)
{
	return fg_cmd(&r->g, op, 0, c, len, resp, rlen);
}

static uint32_t reg_mr(struct rig *r, uint64_t gpa, uint32_t pages,
		       uint64_t iova, uint32_t access, uint32_t *handle)
{
	struct pvo_cmd_reg_mr m = { 0 };
	struct pvo_resp_reg_mr rm = { 0 };

	m.pd = htole32(r->pd);
	m.access = htole32(access);
	m.iova = htole64(iova);
	m.length = htole64((uint64_t)pages * 4096);
	fg_pdir_range(&r->g, gpa, pages, &m.pages);
	cmd(r, PVO_CMD_REG_MR, &m, sizeof(m), &rm, sizeof(rm));
	if (handle)
		*handle = le32toh(rm.mr);
	return le32toh(rm.key);
}

static void modify(struct rig *r, uint32_t qp, uint32_t mask,
		   const struct pvo_qp_attr *a)
{
	struct pvo_cmd_modify_qp c = { .qp = htole32(qp),
				       .attr_mask = htole32(mask) };

	c.attr = *a;
	cmd(r, PVO_CMD_MODIFY_QP, &c, sizeof(c), NULL, 0);
}

/* A receive WQE of 2 KiB in the read-write MR on QP i. */
static void post_recv(struct rig *r, unsigned int i)
{
	struct pvo_recv_wqe *w = fg_next(&r->g, &r->rq[i]);
	struct pvo_sge *sg = (struct pvo_sge *)(w + 1);
	unsigned int k = r->posted[i]++ % 4;

	w->wr_id = htole64(0x100 * i + k);
	w->num_sge = 1;
	sg->addr = htole64(IOVA_RW + (4 * i + k) * 2048ull);
	sg->length = htole32(2048);
	sg->lkey = htole32(r->key_rw);
	fg_publish(&r->g, &r->rq[i]);
}

/* QP i (RC, UC, UD) in RTS, connected to the peer, with nrecv receive
 * WQEs of 2 KiB each in the read-write MR. */
static void make_qp(struct rig *r, unsigned int i, uint8_t s)
{
	static const uint8_t types[3] = { PVO_QPT_RC, PVO_QPT_UC, PVO_QPT_UD };
	static const uint8_t rd[4] = { 1, 2, 4, 16 };
	struct pvo_cmd_create_qp c = { 0 };
	struct pvo_resp_create_qp cr = { 0 };
	struct pvo_qp_attr a = { 0 };
	struct fg_ring sq;
	uint32_t h, mask;
	unsigned int k;

	c.pd = htole32(r->pd);
	c.send_cq = c.recv_cq = htole32(r->cq);
	c.qp_type = types[i];
	c.sq_wqe_shift = pvo_send_wqe_shift(1, 0);
	c.rq_wqe_shift = pvo_recv_wqe_shift(1);
	c.sq_entries = c.rq_entries = htole32(4);
	c.max_send_sge = c.max_recv_sge = htole32(1);
	fg_ring(&r->g, &sq, 4, c.sq_wqe_shift);
	fg_ring(&r->g, &r->rq[i], 4, c.rq_wqe_shift);
	c.sq = sq.pdir;
	c.rq = r->rq[i].pdir;
	cmd(r, PVO_CMD_CREATE_QP, &c, sizeof(c), &cr, sizeof(cr));
	h = le32toh(cr.qp);
	if (i == 0) {
		r->sq = sq;
		r->rc = h;
	}
	r->qpn[i] = le32toh(cr.qpn);

	a.qp_state = htole32(PVO_QPS_INIT);
	a.port_num = 1;
	a.qkey = htole32(FUZZ_RQ_QKEY);
	a.qp_access_flags = htole32(PVO_ACCESS_REMOTE_WRITE |
				    (i == 0 ? PVO_ACCESS_REMOTE_READ |
						  PVO_ACCESS_REMOTE_ATOMIC
					    : 0));
	mask = PVO_QP_STATE | PVO_QP_PKEY_INDEX;
	mask |= i == 2 ? PVO_QP_PORT | PVO_QP_QKEY
		       : PVO_QP_PORT | PVO_QP_ACCESS_FLAGS;
	modify(r, h, mask, &a);

	a.qp_state = htole32(PVO_QPS_RTR);
	mask = PVO_QP_STATE;
	if (i < 2) {
		memcpy(a.av.dgid,
		       (uint8_t[16]){ [10] = 0xff, [11] = 0xff, 10, 0, 0, 7 },
		       16);
		a.av.sgid_index = 1;
		a.av.hop_limit = 64;
		a.path_mtu = htole32(s & FUZZ_RQ_S_MTU256 ? 1 : 3);
		a.dest_qp_num = htole32(PEER_QPN);
		a.rq_psn = htole32(FUZZ_RQ_RQ_PSN);
		mask |= PVO_QP_AV | PVO_QP_PATH_MTU | PVO_QP_DEST_QPN |
			PVO_QP_RQ_PSN;
	}
	if (i == 0) {
		a.max_dest_rd_atomic =
		    rd[(s & FUZZ_RQ_S_RD) >> FUZZ_RQ_S_RD_SHIFT];
		a.min_rnr_timer = 1;
		mask |= PVO_QP_MAX_DEST_RD_ATOMIC | PVO_QP_MIN_RNR_TIMER;
	}
	modify(r, h, mask, &a);

	a.qp_state = htole32(PVO_QPS_RTS);
	a.sq_psn = htole32(FUZZ_RQ_SQ_PSN);
	mask = PVO_QP_STATE | PVO_QP_SQ_PSN;
	if (i == 0) {
		a.timeout = s & FUZZ_RQ_S_TIMEOUT ? 1 : 0;
		a.retry_cnt = 1;
		a.rnr_retry = 1;
		a.max_rd_atomic = 2;
		mask |= PVO_QP_TIMEOUT | PVO_QP_RETRY_CNT | PVO_QP_RNR_RETRY |
			PVO_QP_MAX_QP_RD_ATOMIC;
	}
	modify(r, h, mask, &a);

	for (k = 0; k < (s & FUZZ_RQ_S_RECV); k++)
		post_recv(r, i);
	if (i == 2 && s & FUZZ_RQ_S_MCAST) {
		struct pvo_cmd_mcast m = { .qp = htole32(h) };
		uint32_t ip = inet_addr(FUZZ_RQ_MCAST);

		pvo_gid_from_ipv4(ip, m.gid);
		cmd(r, PVO_CMD_ATTACH_MCAST, &m, sizeof(m), NULL, 0);
	}
}

/* A WQE of op on the RC QP's SQ: len bytes at local in the read-write
 * MR, to or from the peer's memory. */
static void post(struct rig *r, uint8_t op, uint32_t len, uint64_t local)
{
	struct pvo_send_wqe *w = fg_next(&r->g, &r->sq);
	struct pvo_sge *sg = (struct pvo_sge *)(w + 1);

	w->wr_id = htole64(op);
	w->opcode = op;
	w->flags = PVO_WQE_F_SIGNALED;
	w->num_sge = 1;
	if (op == PVO_WR_ATOMIC_FETCH_AND_ADD) {
		w->u.atomic.remote_addr = htole64(0x3000);
		w->u.atomic.compare_add = htole64(1);
		w->u.atomic.rkey = htole32(0x4242);
	} else {
		w->u.rdma.remote_addr = htole64(0x2000);
		w->u.rdma.rkey = htole32(0x4242);
	}
	sg->addr = htole64(IOVA_RW + local);
	sg->length = htole32(len);
	sg->lkey = htole32(r->key_rw);
	fg_publish(&r->g, &r->sq);
}

/* What the guest (or a migration) does between two datagrams. */
static void act(struct rig *r, uint8_t what)
{
	struct pvo_cmd_handle h = { 0 };
	struct pvo_qp_attr a = { .qp_state = htole32(PVO_QPS_ERR) };
	unsigned int i;

	switch (what % FUZZ_RQ_ACT_COUNT) {
	case FUZZ_RQ_ACT_QP_ERR:
		modify(r, r->rc, PVO_QP_STATE, &a);
		break;
	case FUZZ_RQ_ACT_DEREG:
		h.handle = htole32(r->mr_rw);
		cmd(r, PVO_CMD_DEREG_MR, &h, sizeof(h), NULL, 0);
		break;
	case FUZZ_RQ_ACT_FREEZE:
		r->g.vm->frozen = !r->g.vm->frozen;
		break;
	case FUZZ_RQ_ACT_DESTROY:
		h.handle = htole32(r->rc);
		cmd(r, PVO_CMD_DESTROY_QP, &h, sizeof(h), NULL, 0);
		break;
	default:
		for (i = 0; i < 3; i++)
			post_recv(r, i);
		break;
	}
}

/* The requests of FUZZ_RQ_S_REQ, rung and sent to the peer. */
static void post_requests(struct rig *r)
{
	uint32_t *db = fg_ptr(&r->g, r->db);

	post(r, PVO_WR_SEND, 64, 0x8000);
	post(r, PVO_WR_RDMA_WRITE, 64, 0x8000);
	post(r, PVO_WR_RDMA_READ, FUZZ_RQ_READ_LEN, 0x9000);
	post(r, PVO_WR_ATOMIC_FETCH_AND_ADD, 8, 0xa000);
	fg_hdr(&r->g, &r->sq)->db_pending = htole32(1);
	db[PVO_DB_RING_ENTRY_OFF / 4] = htole32(r->rc);
	db[0] = htole32(1);
	pvo_doorbell_kick(r->g.vm, PVO_VQ_DB_KERNEL);
}

static void rig_up(struct rig *r, uint8_t s)
{
	struct pvo_cmd_add_gid ag = { htole32(1), htole32(1) };
	struct pvo_cmd_create_cq c = { .entries = htole32(64) };
	struct pvo_cmd_set_db_ring dbr;
	struct pvo_resp_create_cq rcq = { 0 };
	struct pvo_resp_alloc_pd rpd = { 0 };
	struct fg_ring cqr;
	unsigned int i;

	fg_init_ram(&r->g, &cfg->vms[0], ram);
	pvo_gid_from_ipv4(inet_addr("10.0.0.1"), ag.gid);
	ag.type = htole32(PVO_GID_TYPE_ROCE_V2);
	cmd(r, PVO_CMD_ADD_GID, &ag, sizeof(ag), NULL, 0);
	cmd(r, PVO_CMD_ALLOC_PD, NULL, 0, &rpd, sizeof(rpd));
	r->pd = le32toh(rpd.pd);
	r->db = fg_alloc(&r->g, 1);
	dbr.gpa = htole64(r->db);
	cmd(r, PVO_CMD_SET_DB_RING, &dbr, sizeof(dbr), NULL, 0);
	fg_ring(&r->g, &cqr, 64, 6);
	c.ring = cqr.pdir;
	cmd(r, PVO_CMD_CREATE_CQ, &c, sizeof(c), &rcq, sizeof(rcq));
	r->cq = le32toh(rcq.cq);
	r->buf_rw = fg_alloc(&r->g, FUZZ_RQ_MR_RW_LEN / 4096);
	r->key_rw = reg_mr(r, r->buf_rw, FUZZ_RQ_MR_RW_LEN / 4096, IOVA_RW,
			   PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			       PVO_ACCESS_REMOTE_READ |
			       PVO_ACCESS_REMOTE_ATOMIC,
			   &r->mr_rw);
	r->key_ro = reg_mr(r, fg_alloc(&r->g, 1), 1, IOVA_RO,
			   PVO_ACCESS_REMOTE_READ, NULL);
	for (i = 0; i < 3; i++)
		make_qp(r, i, s);
	if (s & FUZZ_RQ_S_REQ)
		post_requests(r);
}

/* ---- datagrams --------------------------------------------------------- */

/* The record's fix-ups of a decoded packet. */
static void fix_up(struct rig *r, const struct fuzz_rq_rec *rec,
		   unsigned int target, bool mcast, struct pvo_roce_hdr *h)
{
	unsigned int f = pvo_roce_flags(h->opcode);
	struct pvo_qp *qp;

	if (target != FUZZ_RQ_C_QPN_RAW)
		h->dqpn = mcast && target == FUZZ_RQ_C_UD ? PVO_MCAST_QPN
							 : r->qpn[target];
	if (!(rec->ctl & FUZZ_RQ_C_PSN_RAW)) {
		qp = target != FUZZ_RQ_C_QPN_RAW
			 ? pvo_qp_by_qpn(r->g.vm, r->qpn[target])
			 : NULL;
		if (!(f & PVO_RH_REQ))
			h->psn = pvo_psn_add(FUZZ_RQ_SQ_PSN, rec->psn);
		else if (qp)
			h->psn = pvo_psn_add(qp->attr.rq_psn, rec->psn);
	}
	if (!(rec->ctl & FUZZ_RQ_C_KEY_RAW) &&
	    f & (PVO_RH_RETH | PVO_RH_ATMETH)) {
		switch (rec->key & 3) {
		case FUZZ_RQ_KEY_RW:
			h->rkey = r->key_rw;
			h->va = IOVA_RW + h->va % (FUZZ_RQ_MR_RW_LEN + 4096);
			break;
		case FUZZ_RQ_KEY_RO:
			h->rkey = r->key_ro;
			h->va = IOVA_RO + h->va % (FUZZ_RQ_MR_RO_LEN + 4096);
			break;
		case FUZZ_RQ_KEY_BAD:
			h->rkey = r->key_rw ^ 0x80;
			h->va = IOVA_RW + h->va % (FUZZ_RQ_MR_RW_LEN + 4096);
			break;
		}
	}
}

/* The inner addressing of a record. */
static bool address(const struct fuzz_rq_rec *rec, struct pvo_inner *in)
{
	static const char *const src[4] = { "10.0.0.7", "10.0.0.8",
					    "10.0.0.9", "10.0.0.7" };
	static const uint32_t vni[4] = { 5, 6, 7, 5 };
	unsigned int dst = (rec->sel & FUZZ_RQ_A_DST) >> FUZZ_RQ_A_DST_SHIFT;
	uint32_t h;

	memset(in, 0, sizeof(*in));
	in->vni = vni[(rec->sel & FUZZ_RQ_A_VNI) >> FUZZ_RQ_A_VNI_SHIFT];
	in->ttl = 64;
	in->sport = 0xc001;
	in->sip = inet_addr(src[rec->sel & FUZZ_RQ_A_SRC]);
	memcpy(in->smac, peer_mac, 6);
	memcpy(in->dmac, vm_mac, 6);
	switch (dst) {
	case 0:
		in->dip = inet_addr("10.0.0.1");
		break;
	case 1:
		in->dip = inet_addr("10.0.0.2");
		break;
	case 2:
		in->dip = inet_addr(FUZZ_RQ_MCAST);
		h = ntohl(in->dip);
		memcpy(in->dmac,
		       (uint8_t[6]){ 1, 0, 0x5e, (h >> 16) & 0x7f, h >> 8, h },
		       6);
		break;
	default:
		in->dip = inet_addr("10.0.0.1");
		in->dmac[5] ^= 1;
		break;
	}
	return dst == 2;
}

/* Datagrams sealed and not sent yet: those of one receive batch. */
static struct {
	unsigned int n;
	uint8_t d[FUZZ_RQ_MAX_RECS][PVO_ENCAP_LEN + PVO_ROCE_MAX_HDRS +
				     FUZZ_RQ_MAX_LEN + 8];
	struct iovec iov[FUZZ_RQ_MAX_RECS];
	struct mmsghdr m[FUZZ_RQ_MAX_RECS];
} out;

/* Sends them to the overlay's socket in one call; on loopback they are
 * in the socket when it returns. */
static void send_out(void)
{
	unsigned int i;

	for (i = 0; i < out.n; i++) {
		memset(&out.m[i], 0, sizeof(out.m[i]));
		out.m[i].msg_hdr.msg_name = &vtep;
		out.m[i].msg_hdr.msg_namelen = sizeof(vtep);
		out.m[i].msg_hdr.msg_iov = &out.iov[i];
		out.m[i].msg_hdr.msg_iovlen = 1;
	}
	if (out.n)
		sendmmsg(peer, out.m, out.n, 0);
	out.n = 0;
}

/* Seals one record's datagram for the next send_out. */
static void seal_rec(struct rig *r, const struct fuzz_rq_rec *rec,
		     const uint8_t *bytes, size_t len)
{
	static uint8_t tmp[FUZZ_RQ_MAX_LEN + PVO_ROCE_ICRC_LEN];
	uint8_t *d = out.d[out.n], *roce = d + PVO_ENCAP_LEN;
	struct pvo_roce_hdr h;
	struct pvo_inner in;
	bool mcast = address(rec, &in);
	size_t rl = len, dl;

	memcpy(tmp, bytes, len);
	memset(tmp + len, 0, PVO_ROCE_ICRC_LEN);
	if (!(rec->sel & FUZZ_RQ_A_RAW) &&
	    pvo_roce_decode(tmp, len + PVO_ROCE_ICRC_LEN, &h)) {
		fix_up(r, rec, rec->ctl & FUZZ_RQ_C_QP, mcast, &h);
		rl = pvo_roce_encode(roce, &h);
		memcpy(roce + rl, h.payload, h.payload_len);
		rl += h.payload_len;
		memset(roce + rl, 0, h.pad);
		rl += h.pad;
	} else {
		memcpy(roce, bytes, len);
	}
	dl = pvo_encap_seal(d, &in, rl);
	if (rec->ctl & FUZZ_RQ_C_BAD_ICRC)
		d[dl - 1] ^= 0x5a;
	out.iov[out.n].iov_base = d;
	out.iov[out.n++].iov_len = dl;
}

/* Turns of the loop, as the daemon's: a receive batch with its ACKs,
 * the READ responses' and the requester's timers. */
static unsigned int turns(unsigned int n)
{
	unsigned int i;

	if (n)
		send_out();
	for (i = 0; i < n; i++)
		g_main_context_iteration(NULL, FALSE);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_rq_rec *rec;
	const uint8_t *p;
	unsigned int n, used = 0, k;
	struct rig r;
	size_t len;

	if (!cfg)
		setup();
	p = fuzz_take(&data, &size, 1);
	if (!p)
		return 0;
	memset(&r, 0, sizeof(r));
	rig_up(&r, p[0]);
	for (k = 0; k < FUZZ_RQ_MAX_RECS &&
		    (rec = (const void *)fuzz_take(&data, &size, sizeof(*rec)));
	     k++) {
		len = MIN(rec->len[0] | rec->len[1] << 8, FUZZ_RQ_MAX_LEN);
		len = MIN(len, size);
		p = fuzz_take(&data, &size, len);
		if (rec->sel & FUZZ_RQ_A_ACT) {
			/* after the datagrams before it */
			turns(!!out.n);
			act(&r, rec->key);
		} else {
			seal_rec(&r, rec, p, len);
		}
		n = rec->ctl >> FUZZ_RQ_C_TURNS_SHIFT;
		used += turns(MIN(n, MAX_TURNS - used));
	}
	/* what is still to go belongs to this input */
	turns(1);
	r.g.vm->frozen = false;
	fg_fini(&r.g);
	return 0;
}
