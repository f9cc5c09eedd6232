// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The overlay responder's READ responses against a hostile peer: the
 * overlay runs in this process on 127.0.0.1, serving a fake guest's VM,
 * and the peer its RC QPs are connected to is a plain UDP socket on
 * 127.0.0.6 that crafts RoCEv2-in-VXLAN READ requests and reads what
 * comes back. One turn of the loop is one g_main_context_iteration: none
 * brings more than a burst of responses per QP, whatever the RETH says;
 * a READ past the MR or longer than IB allows is refused before anything
 * is sent; a re-request gets what it names of the READ it repeats and
 * never more; a QP destroyed, in error, frozen or migrated in the middle
 * stops cleanly.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>

#include "config.h"
#include "encap.h"
#include "fake_guest.h"
#include "overlay.h"
#include "qp.h"
#include "roce.h"
#include "state_format.h"
#include "tap.h"

#define BURST 64   /* receiver.c's READ_BURST */
#define MTU 1024   /* path MTU 3 */
#define PAGES 1024 /* the MR: 4 MiB */
#define MR_LEN ((uint64_t)PAGES * 4096)
#define IOVA 0x7f0000000000ull
#define PEER_QPN 0x66
#define RQ_PSN 0xfffe00u /* the READs' PSNs wrap past 0 */

static const uint8_t mac_a[6] = { 0x52, 0x54, 0, 0, 0, 0x0a };
static const uint8_t mac_x[6] = { 0x52, 0x54, 0, 0, 0, 0x66 };

static struct fake_guest G;
static uint32_t pd, cq, mr, rkey;
static uint64_t buf;
static int peer = -1;

/* A packet the peer read. */
struct resp {
	uint8_t opcode, syndrome;
	uint32_t psn;
	size_t len;
	bool data_ok; /* a READ response with the MR's bytes for its PSN */
};

#define MAX_GOT 8192
static struct resp got[MAX_GOT];
static unsigned int ngot;
/* Every READ here asks at IOVA + k * MTU with PSN RQ_PSN + k: the
 * responses' PSNs say which bytes they carry. */
static const uint32_t want_psn = RQ_PSN;
static const uint64_t want_va = IOVA;

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 12) * 7 + 1);
}

/* ---- the VM ----------------------------------------------------------- */

static uint32_t cmd(uint16_t op, const void *c, size_t len, void *r,
		    size_t rlen)
{
	return fg_cmd(&G, op, 0, c, len, r, rlen);
}

static void vm_setup(void)
{
	struct pvo_cmd_add_gid ag = { htole32(1), htole32(1) };
	struct pvo_resp_alloc_pd rpd;
	struct pvo_cmd_create_cq c = { .entries = htole32(64) };
	struct pvo_resp_create_cq rcq;
	struct pvo_cmd_reg_mr m = { .access = htole32(
					PVO_ACCESS_LOCAL_WRITE |
					PVO_ACCESS_REMOTE_READ),
				    .iova = htole64(IOVA),
				    .length = htole64(MR_LEN) };
	struct pvo_resp_reg_mr rm;
	struct fg_ring r;
	uint64_t i;

	memcpy(ag.gid, (uint8_t[16]){ [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 },
	       16);
	ag.type = htole32(PVO_GID_TYPE_ROCE_V2);
	cmd(PVO_CMD_ADD_GID, &ag, sizeof(ag), NULL, 0);
	cmd(PVO_CMD_ALLOC_PD, NULL, 0, &rpd, sizeof(rpd));
	pd = le32toh(rpd.pd);
	fg_ring(&G, &r, 64, 6);
	c.ring = r.pdir;
	cmd(PVO_CMD_CREATE_CQ, &c, sizeof(c), &rcq, sizeof(rcq));
	cq = le32toh(rcq.cq);
	buf = fg_alloc(&G, PAGES);
	for (i = 0; i < MR_LEN; i++)
		*(uint8_t *)fg_ptr(&G, buf + i) = pattern(i);
	m.pd = htole32(pd);
	fg_pdir_range(&G, buf, PAGES, &m.pages);
	cmd(PVO_CMD_REG_MR, &m, sizeof(m), &rm, sizeof(rm));
	mr = le32toh(rm.mr);
	rkey = le32toh(rm.key);
}

struct tqp {
	uint32_t handle, qpn;
};

static uint32_t modify(struct tqp *q, uint32_t mask,
		       const struct pvo_qp_attr *a)
{
	struct pvo_cmd_modify_qp c = { .qp = htole32(q->handle),
				       .attr_mask = htole32(mask) };

	c.attr = *a;
	return cmd(PVO_CMD_MODIFY_QP, &c, sizeof(c), NULL, 0);
}

/* An RC QP connected to the peer, expecting RQ_PSN, with max_dest_rd
 * READs at once. */
static bool qp_new(struct tqp *q, uint8_t max_dest_rd)
{
	struct pvo_cmd_create_qp c = { 0 };
	struct pvo_resp_create_qp r;
	struct pvo_qp_attr a = { 0 };
	struct fg_ring sq, rq;
	uint32_t st;

	c.pd = htole32(pd);
	c.send_cq = c.recv_cq = htole32(cq);
	c.qp_type = PVO_QPT_RC;
	c.sq_wqe_shift = pvo_send_wqe_shift(1, 0);
	c.rq_wqe_shift = pvo_recv_wqe_shift(1);
	c.sq_entries = c.rq_entries = htole32(4);
	c.max_send_sge = c.max_recv_sge = htole32(1);
	fg_ring(&G, &sq, 4, c.sq_wqe_shift);
	fg_ring(&G, &rq, 4, c.rq_wqe_shift);
	c.sq = sq.pdir;
	c.rq = rq.pdir;
	if (cmd(PVO_CMD_CREATE_QP, &c, sizeof(c), &r, sizeof(r)))
		return false;
	q->handle = le32toh(r.qp);
	q->qpn = le32toh(r.qpn);
	a.qp_state = htole32(PVO_QPS_INIT);
	a.port_num = 1;
	a.qp_access_flags = htole32(PVO_ACCESS_REMOTE_READ);
	st = modify(q, PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			       PVO_QP_ACCESS_FLAGS,
		    &a);
	a.qp_state = htole32(PVO_QPS_RTR);
	memcpy(a.av.dgid,
	       (uint8_t[16]){ [10] = 0xff, [11] = 0xff, 10, 0, 0, 66 }, 16);
	a.av.sgid_index = 1;
	a.av.hop_limit = 64;
	a.path_mtu = htole32(3);
	a.dest_qp_num = htole32(PEER_QPN);
	a.rq_psn = htole32(RQ_PSN);
	a.max_dest_rd_atomic = max_dest_rd;
	a.min_rnr_timer = 1;
	st |= modify(q, PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
				PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
				PVO_QP_MAX_DEST_RD_ATOMIC |
				PVO_QP_MIN_RNR_TIMER,
		     &a);
	a.qp_state = htole32(PVO_QPS_RTS);
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	st |= modify(q, PVO_QP_STATE | PVO_QP_SQ_PSN | PVO_QP_TIMEOUT |
				PVO_QP_RETRY_CNT | PVO_QP_RNR_RETRY |
				PVO_QP_MAX_QP_RD_ATOMIC,
		     &a);
	if (st)
		tap_diag("modify_qp: %u", st);
	return st == 0;
}

static uint32_t qp_state(struct tqp *q)
{
	struct pvo_cmd_handle c = { htole32(q->handle), 0 };
	struct pvo_qp_attr a;

	if (cmd(PVO_CMD_QUERY_QP, &c, sizeof(c), &a, sizeof(a)))
		return 99;
	return le32toh(a.qp_state);
}

static void qp_destroy(struct tqp *q)
{
	struct pvo_cmd_handle h = { htole32(q->handle), 0 };

	cmd(PVO_CMD_DESTROY_QP, &h, sizeof(h), NULL, 0);
}

static uint64_t drops(struct tqp *q, enum pvo_drop why)
{
	struct pvo_qp *qp = pvo_qp_by_qpn(G.vm, q->qpn);

	return qp ? qp->net.stats.drops[why] : ~0ull;
}

/* ---- the peer ---------------------------------------------------------- */

/* A request of the peer to q (RETH for READ, none for SEND). */
static void peer_send(struct tqp *q, uint8_t opcode, uint32_t psn,
		      uint64_t va, uint32_t len)
{
	struct pvo_inner in = { .vni = 100, .ttl = 64, .sport = 0xc0de };
	struct pvo_roce_hdr h = { 0 };
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint8_t b[256];
	size_t n;

	memcpy(in.dmac, mac_a, 6);
	memcpy(in.smac, mac_x, 6);
	in.sip = inet_addr("10.0.0.66");
	in.dip = inet_addr("10.0.0.1");
	h.opcode = opcode;
	h.pkey = PVO_ROCE_PKEY_DEFAULT;
	h.dqpn = q->qpn;
	h.psn = psn & PVO_QPN_MAX;
	h.ackreq = true;
	h.va = va;
	h.rkey = rkey;
	h.dma_len = len;
	n = pvo_encap_seal(b, &in, pvo_roce_encode(b + PVO_ENCAP_LEN, &h));
	to.sin_addr.s_addr = inet_addr("127.0.0.1");
	to.sin_port = htons(pvo_overlay_config()->vxlan_port);
	if (sendto(peer, b, n, 0, (struct sockaddr *)&to, sizeof(to)) !=
	    (ssize_t)n)
		tap_diag("sendto: %s", strerror(errno));
}

static void peer_read(struct tqp *q, uint32_t psn, uint64_t off,
		      uint32_t len)
{
	peer_send(q, PVO_OPC_READ_REQUEST, psn, IOVA + off, len);
}

/* Takes in what reached the peer; returns how many packets. */
static unsigned int peer_take(void)
{
	static uint8_t b[9000];
	unsigned int n = 0;
	ssize_t len;

	while ((len = recv(peer, b, sizeof(b), MSG_DONTWAIT)) > 0) {
		struct pvo_inner in;
		const uint8_t *roce;
		size_t rl;
		struct pvo_roce_hdr h;
		struct resp *r = &got[ngot < MAX_GOT ? ngot : MAX_GOT - 1];
		uint64_t off;
		size_t i;

		n++;
		if (ngot < MAX_GOT)
			ngot++;
		memset(r, 0, sizeof(*r));
		if (pvo_encap_parse(b, len, &in, &roce, &rl) != PVO_ENCAP_OK ||
		    !pvo_roce_decode(roce, rl, &h))
			continue;
		r->opcode = h.opcode;
		r->syndrome = h.syndrome;
		r->psn = h.psn;
		r->len = h.payload_len;
		if (h.opcode < PVO_OPC_READ_RESP_FIRST ||
		    h.opcode > PVO_OPC_READ_RESP_ONLY)
			continue;
		off = want_va - IOVA +
		      (uint64_t)((h.psn - want_psn) & PVO_QPN_MAX) * MTU;
		r->data_ok = off + h.payload_len <= MR_LEN;
		for (i = 0; r->data_ok && i < h.payload_len; i++)
			r->data_ok = h.payload[i] == pattern(off + i);
	}
	return n;
}

/* One turn of the loop; the most packets any turn brought since
 * *most was reset. */
static unsigned int turn(unsigned int *most)
{
	unsigned int n;

	g_main_context_iteration(NULL, FALSE);
	n = peer_take();
	if (most && n > *most)
		*most = n;
	return n;
}

/* Turns until nothing comes for a few of them; returns the turns that
 * brought something. */
static unsigned int run(unsigned int *most)
{
	unsigned int quiet = 0, busy = 0;

	while (quiet < 5) {
		if (turn(most)) {
			busy++;
			quiet = 0;
		} else {
			quiet++;
			g_usleep(200);
		}
	}
	return busy;
}

/* got[from, from + n) are the READ's responses psn0 + k0 .. in order,
 * each with its bytes; framed from FIRST to LAST (or ONLY). */
static bool responses_ok(unsigned int from, unsigned int n, uint32_t k0,
			 uint32_t last_len)
{
	unsigned int i;

	if (ngot < from + n)
		return false;
	for (i = 0; i < n; i++) {
		const struct resp *r = &got[from + i];
		uint8_t op = n == 1	    ? PVO_OPC_READ_RESP_ONLY
			     : i == 0	    ? PVO_OPC_READ_RESP_FIRST
			     : i == n - 1 ? PVO_OPC_READ_RESP_LAST
					    : PVO_OPC_READ_RESP_MIDDLE;

		if (r->opcode != op ||
		    r->psn != ((want_psn + k0 + i) & PVO_QPN_MAX) ||
		    !r->data_ok || r->len != (i == n - 1 ? last_len : MTU)) {
			tap_diag("response %u: opcode 0x%x psn 0x%x len %zu "
				 "data %d",
				 i, r->opcode, r->psn, r->len, r->data_ok);
			return false;
		}
	}
	return true;
}

static bool is_nak(const struct resp *r, uint32_t psn, uint8_t code)
{
	return r->opcode == PVO_OPC_ACK &&
	       r->syndrome == (PVO_AETH_NAK | code) &&
	       r->psn == (psn & PVO_QPN_MAX);
}

/* ---- the tests --------------------------------------------------------- */

/* A READ longer than IB's 2 GiB, and one past the MR: one NAK each, no
 * data, the QP in error. */
static void test_refused(void)
{
	struct tqp q = { 0 };
	bool ok;

	ok = qp_new(&q, 4);
	tap_ok(ok, "refused: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, 0xffffffffu);
	run(NULL);
	tap_ok(ngot == 1 && is_nak(&got[0], RQ_PSN, PVO_NAK_INV_REQ) &&
		       qp_state(&q) == PVO_QPS_ERR,
	       "refused: a READ of 2^32 - 1 bytes gets one Invalid Request "
	       "NAK and no data (%u packets), the QP goes to error",
	       ngot);
	qp_destroy(&q);

	ok = qp_new(&q, 4);
	tap_ok(ok, "refused: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, MR_LEN + 1);
	run(NULL);
	tap_ok(ngot == 1 && is_nak(&got[0], RQ_PSN, PVO_NAK_REM_ACCESS) &&
		       qp_state(&q) == PVO_QPS_ERR,
	       "refused: a READ one byte longer than the MR gets one Remote "
	       "Access NAK and no data (%u packets), the QP goes to error",
	       ngot);
	qp_destroy(&q);
}

/* The whole MR in one READ: a burst per turn, every byte right; then
 * re-requests of it. */
static void test_window(void)
{
	uint32_t n = MR_LEN / MTU;
	unsigned int most = 0, turns;
	struct tqp q = { 0 };
	bool ok;

	ok = qp_new(&q, 4);
	tap_ok(ok, "window: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, MR_LEN);
	turns = run(&most);
	tap_ok(ngot == n && most <= BURST && turns >= n / BURST,
	       "window: a READ of %llu bytes comes as %u responses over %u "
	       "turns, at most %u per turn (%u)",
	       (unsigned long long)MR_LEN, ngot, turns, most, BURST);
	tap_ok(responses_ok(0, n, 0, MTU),
	       "window: PSNs 0x%x.. in order across the PSN wrap, FIRST .. "
	       "LAST, each with the MR's bytes",
	       RQ_PSN);

	/* the requester lacks the end: it asks from there */
	ngot = 0;
	most = 0;
	peer_read(&q, RQ_PSN + 4000, 4000ull * MTU, 96 * MTU);
	run(&most);
	tap_ok(ngot == 96 && most <= BURST && responses_ok(0, 96, 4000, MTU),
	       "dup: a re-request from response 4000 gets responses "
	       "4000..4095 only (%u), framed as a response of its own",
	       ngot);

	ngot = 0;
	peer_read(&q, RQ_PSN + 4000, 4000ull * MTU, 100);
	run(NULL);
	tap_ok(ngot == 1 && responses_ok(0, 1, 4000, 100),
	       "dup: one naming 100 bytes there gets one response of 100 "
	       "bytes (%u)",
	       ngot);

	ngot = 0;
	peer_read(&q, RQ_PSN + 4000, 4000ull * MTU, 96 * MTU + 1);
	peer_read(&q, RQ_PSN + 4000, 4001ull * MTU, 95 * MTU);
	peer_read(&q, RQ_PSN + 4095, 4095ull * MTU, 2 * MTU);
	run(NULL);
	tap_ok(ngot == 0 && drops(&q, PVO_DROP_BAD_PSN) == 3,
	       "dup: one reaching past the READ's end, one at the wrong "
	       "place in it, one past rq_psn: no answer (%u), dropped as "
	       "bad_psn (%llu)",
	       ngot, (unsigned long long)drops(&q, PVO_DROP_BAD_PSN));

	/* many re-requests of the whole READ in one burst: the READ
	 * starts over, once */
	ngot = 0;
	most = 0;
	for (unsigned int i = 0; i < 100; i++)
		peer_read(&q, RQ_PSN, 0, MR_LEN);
	run(&most);
	tap_ok(ngot <= n + BURST && ngot >= n && most <= BURST,
	       "dup: 100 re-requests of the whole READ bring %u responses "
	       "(at most %u + %u), at most %u per turn (%u)",
	       ngot, n, BURST, BURST, most);
	tap_ok(responses_ok(ngot - n, n, 0, MTU),
	       "dup: ... the last %u of them the whole READ again, in order",
	       n);
	tap_ok(qp_state(&q) == PVO_QPS_RTS, "dup: the QP is still in RTS");
	qp_destroy(&q);
}

/* max_dest_rd_atomic READs sending at once; a further one is refused,
 * and nothing but READs is taken while they send. */
static void test_resources(void)
{
	uint64_t busy0;
	struct tqp q = { 0 };
	bool ok;
	unsigned int i;
	bool nak = false, late = false;

	ok = qp_new(&q, 2);
	tap_ok(ok, "resources: QP 0x%x, max_dest_rd_atomic 2", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, 256 * 1024);
	peer_send(&q, PVO_OPC_SEND_ONLY, RQ_PSN + 256, 0, 0);
	busy0 = drops(&q, PVO_DROP_READ_BUSY);
	turn(NULL);
	tap_ok(ngot == BURST && drops(&q, PVO_DROP_READ_BUSY) == busy0 + 1,
	       "resources: the first turn sends %u responses (%u); a SEND "
	       "behind the READ is dropped as read_busy, not answered",
	       BURST, ngot);
	run(NULL);
	tap_ok(ngot == 256 && responses_ok(0, 256, 0, MTU),
	       "resources: the READ completes (%u responses)", ngot);

	ngot = 0;
	peer_read(&q, RQ_PSN + 256, 256 * MTU, 256 * MTU);
	peer_read(&q, RQ_PSN + 512, 512 * MTU, 256 * MTU);
	peer_read(&q, RQ_PSN + 768, 768 * MTU, 256 * MTU);
	run(NULL);
	for (i = 0; i < ngot; i++) {
		if (is_nak(&got[i], RQ_PSN + 768, PVO_NAK_INV_REQ))
			nak = true;
		else if (((got[i].psn - RQ_PSN) & PVO_QPN_MAX) >= 768)
			late = true;
	}
	tap_ok(nak && !late && qp_state(&q) == PVO_QPS_ERR,
	       "resources: a third READ while two send gets an Invalid "
	       "Request NAK and no response; the QP goes to error");
	tap_ok(ngot <= 1 + 2 * BURST,
	       "resources: the two READs stop with the QP (%u packets)",
	       ngot);
	qp_destroy(&q);
}

/* The QP goes away, to error, is frozen or migrates mid-response. */
static void test_midway(void)
{
	struct pvo_st_qp rec;
	struct pvo_qp *qp;
	struct tqp q = { 0 };
	bool ok;

	ok = qp_new(&q, 4);
	tap_ok(ok, "midway: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, MR_LEN);
	turn(NULL);
	turn(NULL);
	qp_destroy(&q);
	run(NULL);
	tap_ok(ngot == 2 * BURST,
	       "midway: a QP destroyed after two turns sent %u responses, "
	       "nothing after",
	       ngot);

	ok = qp_new(&q, 4);
	tap_ok(ok, "midway: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, MR_LEN);
	turn(NULL);
	{
		struct pvo_qp_attr a = { .qp_state = htole32(PVO_QPS_ERR) };

		modify(&q, PVO_QP_STATE, &a);
	}
	run(NULL);
	tap_ok(ngot == BURST && qp_state(&q) == PVO_QPS_ERR,
	       "midway: a QP moved to error stops its responses (%u)", ngot);
	qp_destroy(&q);

	ok = qp_new(&q, 4);
	tap_ok(ok, "midway: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, 1024 * MTU);
	turn(NULL);
	G.vm->frozen = true;
	run(NULL);
	G.vm->frozen = false;
	tap_ok(ngot == BURST,
	       "midway: a frozen VM's QP stops its responses (%u)", ngot);
	ngot = 0;
	peer_read(&q, RQ_PSN + BURST, BURST * MTU, (1024 - BURST) * MTU);
	run(NULL);
	tap_ok(ngot == 1024 - BURST &&
		       responses_ok(0, 1024 - BURST, BURST, MTU),
	       "midway: thawed, the requester's re-request brings the rest "
	       "(%u)",
	       ngot);

	/* the QP as a migration's destination loads it: no READ kept */
	qp = pvo_qp_by_qpn(G.vm, q.qpn);
	pvo_transport_overlay.save_qp(qp, &rec);
	pvo_transport_overlay.reset_qp(qp);
	tap_ok(pvo_transport_overlay.load_qp(qp, &rec, NULL),
	       "midway: the overlay's part of the QP saved and loaded");
	ngot = 0;
	peer_read(&q, RQ_PSN + 1000, 1000 * MTU, 24 * MTU);
	peer_read(&q, RQ_PSN + 1000, 1000 * MTU, 25 * MTU);
	run(NULL);
	tap_ok(ngot == 24 && responses_ok(0, 24, 1000, MTU) &&
		       drops(&q, PVO_DROP_BAD_PSN) == 1,
	       "midway: after the load, a re-request for PSNs from before "
	       "it is answered (%u); one reaching past rq_psn is dropped",
	       ngot);
	ngot = 0;
	peer_read(&q, RQ_PSN + 1024, 1024 * MTU, MTU);
	run(NULL);
	peer_read(&q, RQ_PSN + 1000, 1000 * MTU, 24 * MTU);
	run(NULL);
	tap_ok(ngot == 1 + 24,
	       "midway: after a new READ, the kept ones answer re-requests "
	       "(%u)",
	       ngot);
	qp_destroy(&q);
}

/* The MR goes away mid-response: a Remote Access NAK where the
 * responses stopped. */
static void test_mr_gone(void)
{
	struct pvo_cmd_handle h = { htole32(mr), 0 };
	struct tqp q = { 0 };
	bool ok;

	ok = qp_new(&q, 4);
	tap_ok(ok, "mr gone: QP 0x%x connected", q.qpn);
	ngot = 0;
	peer_read(&q, RQ_PSN, 0, MR_LEN);
	turn(NULL);
	tap_ok(cmd(PVO_CMD_DEREG_MR, &h, sizeof(h), NULL, 0) == 0,
	       "mr gone: DEREG_MR after the first turn");
	run(NULL);
	tap_ok(ngot == BURST + 1 &&
		       is_nak(&got[BURST], RQ_PSN + BURST,
			      PVO_NAK_REM_ACCESS) &&
		       qp_state(&q) == PVO_QPS_ERR,
	       "mr gone: a Remote Access NAK at PSN 0x%x, no more data, the "
	       "QP in error (%u packets)",
	       (RQ_PSN + BURST) & PVO_QPN_MAX, ngot);
	qp_destroy(&q);
}

int main(void)
{
	struct sockaddr_in la = { .sin_family = AF_INET };
	struct pvo_daemon_config *cfg = NULL;
	int size = 8 << 20, tries;
	char *err = NULL, *conf;
	unsigned int port;

	tap_plan(32);
	peer = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	la.sin_addr.s_addr = inet_addr("127.0.0.6");
	for (tries = 0; tries < 20; tries++) {
		port = 40000 + (getpid() * 7 + tries * 997) % 20000;
		la.sin_port = htons(port);
		if (bind(peer, (struct sockaddr *)&la, sizeof(la)))
			continue;
		conf = g_strdup_printf(
		    "[daemon]\nvtep = 127.0.0.1\nvxlan-port = %u\n\n"
		    "[tenant t1]\nvni = 100\nmtu = 1500\n"
		    "[vm a]\ntenant = t1\nmac = 52:54:00:00:00:0a\n"
		    "ips = 10.0.0.1\nsocket = /tmp/t-read-window-a.sock\n"
		    "[remote x]\ntenant = t1\nmac = 52:54:00:00:00:66\n"
		    "ips = 10.0.0.66\nvtep = 127.0.0.6\n",
		    port);
		cfg = pvo_config_parse("t", conf, &err);
		g_free(conf);
		if (!cfg)
			break;
		if (pvo_overlay_start(cfg, &err))
			break;
		g_clear_pointer(&err, g_free);
		pvo_config_free(cfg);
		cfg = NULL;
		close(peer);
		peer = socket(AF_INET, SOCK_DGRAM, 0);
		setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	}
	if (!cfg || !pvo_overlay_enabled()) {
		printf("Bail out! no overlay on 127.0.0.1 / 127.0.0.6: %s\n",
		       err ? err : "no free port");
		return 1;
	}
	fg_init(&G, &cfg->vms[0]);
	vm_setup();
	tap_ok(pd && cq && mr && rkey, "VM a: PD, CQ and a %llu-byte MR",
	       (unsigned long long)MR_LEN);

	test_refused();
	test_window();
	test_resources();
	test_midway();
	test_mr_gone();

	fg_fini(&G);
	pvo_overlay_stop();
	pvo_config_free(cfg);
	close(peer);
	return tap_done();
}
