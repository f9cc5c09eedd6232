// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath section rebind (host verbs): a back-end follows the new
 * host numbers of a peer VM that moved to another host device
 * (docs/migration.md, "VMs on host verbs"). VM b's guest is made to hold
 * numbers its host device does not have (as a moved VM's guest does):
 * QPNs and a key of its own choosing, which an offer signed with the
 * tenant's key, sent from b's VTEP, pairs with the host's. Host 1 then
 * translates them where a's WQEs meet the device: a QP connected to b's
 * guest QPN, WRITE, READ and FETCH_ADD with b's guest rkey, a UD send
 * to b's guest QPN; and host 2, told a's pairs, gives b the guest QPN of a's UD
 * QP as a receive's source. Forged offers (another key, a VTEP naming another,
 * the VM served here, an old generation, a tenant on the overlay) change
 * nothing and are counted.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "rebind_msg.h"
#include "t-datapath.h"

/* Numbers no host object has (rdma_rxe counts QPNs up from 0x11; its
 * keys carry an index in their high bits). */
#define G_QPN_B 0xfff101u
#define G_UD_QPN_B 0xfff102u
#define G_UD_QPN_A 0xfff201u
#define G_RKEY_B 0xfeedb0a5u

static uint64_t now_gen(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
}

/* The offer r, signed with the key in key_path, sent from address from
 * to the back-end at to; false if it could not be. */
static bool send_offer(const struct pvo_rebind *r, const char *key_path,
		       const char *from, const char *to)
{
	struct sockaddr_in f = {.sin_family = AF_INET};
	struct sockaddr_in t = {.sin_family = AF_INET};
	uint8_t key[128], buf[2048];
	size_t keylen = read_key(key_path, key, sizeof(key)), n;
	bool ok;
	int fd;

	n = pvo_rebind_write(buf, sizeof(buf), r, key, keylen);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	f.sin_addr.s_addr = inet_addr(from);
	t.sin_addr.s_addr = inet_addr(to);
	t.sin_port = htons(overlay_port);
	ok = n && fd >= 0 && !bind(fd, (struct sockaddr *)&f, sizeof(f)) &&
	     sendto(fd, buf, n, 0, (struct sockaddr *)&t, sizeof(t)) ==
		 (ssize_t)n;
	if (fd >= 0)
		close(fd);
	return ok;
}

static struct pvo_rebind offer(uint32_t vni, const char *ip, const char *vtep,
			       uint8_t mac_last)
{
	struct pvo_rebind r = {
	    .kind = PVO_REBIND_OFFER, .vni = vni, .parts = 1, .gen = now_gen()};

	r.ip = inet_addr(ip);
	r.vtep.s_addr = inet_addr(vtep);
	memcpy(r.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, mac_last}, 6);
	return r;
}

static void add(struct pvo_rebind *r, uint8_t type, uint32_t guest,
		uint32_t host)
{
	r->e[r->count++] = (struct pvo_rebind_entry){
	    .type = type, .guest = guest, .host = host};
}

static unsigned long long daemon_field(const struct backend_proc *b,
				       const char *key)
{
	char line[4096];

	if (!backend_mgmt_line(b, "daemon", line, sizeof(line)))
		return ~0ull;
	return backend_field(line, key);
}

/* Waits up to 2 s for the daemon's field key to pass was. */
static unsigned long long wait_field(const struct backend_proc *b,
				     const char *key, unsigned long long was)
{
	unsigned long long v = was;
	int i;

	for (i = 0; i < 200 && v <= was; i++) {
		v = daemon_field(b, key);
		if (v == ~0ull)
			v = was;
		if (v <= was)
			sleep_ms(10);
	}
	return v;
}

/* Forged offers: each one counted as its drop, no pair kept. */
static void forged(uint32_t rkey_b)
{
	static const struct {
		const char *what, *ip, *vtep, *from, *drop;
		uint32_t vni;
		bool red_key, old;
	} cases[] = {
	    {"signed with tenant red's key", "10.0.0.2", "127.0.0.2",
	     "127.0.0.2", "bad_announce", 100, true, false},
	    {"naming VTEP 127.0.0.2, sent from 127.0.0.3", "10.0.0.2",
	     "127.0.0.2", "127.0.0.3", "bad_announce", 100, false, false},
	    {"from VTEP 127.0.0.3, where the map does not have b", "10.0.0.2",
	     "127.0.0.3", "127.0.0.3", "wrong_vtep", 100, false, false},
	    {"for VM a, which runs here", "10.0.0.1", "127.0.0.2", "127.0.0.2",
	     "local_src", 100, false, false},
	    {"of a generation two minutes old", "10.0.0.2", "127.0.0.2",
	     "127.0.0.2", "stale_announce", 100, false, true},
	    {"for tenant red, on the overlay", "10.0.0.3", "127.0.0.2",
	     "127.0.0.2", "bad_announce", 200, true, false},
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pvo_rebind r =
		    offer(cases[i].vni, cases[i].ip, cases[i].vtep, 0x0b);
		char key[64];
		unsigned long long d0, d;

		snprintf(key, sizeof(key), " drop_%s=", cases[i].drop);
		add(&r, PVO_REBIND_RKEY, G_RKEY_B, rkey_b);
		if (cases[i].old)
			r.gen -= 120ull * 1000000;
		d0 = daemon_field(&bp, key);
		if (!tap_ok(send_offer(
				&r, cases[i].red_key ? red_key : migration_key,
				cases[i].from, "127.0.0.1"),
			    "rebind: send an offer %s", cases[i].what))
			continue;
		d = wait_field(&bp, key, d0);
		tap_ok(d == d0 + 1 && daemon_field(&bp, " peer_aliases=") == 0,
		       "rebind: an offer %s is dropped as %s (%llu -> %llu), "
		       "no pair kept",
		       cases[i].what, cases[i].drop, d0, d);
	}
}

/* a's WRITE with b's guest key, before b's offer: the host device does
 * not know it. */
static void unknown_key(void)
{
	struct pair p;
	struct sim_wr w;

	if (!pair_make(&p, PVO_QPT_RC, &fast, &fast))
		return;
	w = write_wr(0x7701, 0, 512, B.mr.iova, G_RKEY_B);
	post1(&p.a, &w);
	expect_cqe(&A.scq, w.wr_id, PVO_WC_RDMA_WRITE, PVO_WC_REM_ACCESS_ERR,
		   "rebind: a's WRITE with b's guest key before b's offer");
	pair_destroy(&p);
	drain_all();
}

/* b's RC QP, whose host QPN b's offer pairs with G_QPN_B. */
static bool b_qp(struct pair *p)
{
	struct sim_qp_init ib = qp_init(&B, PVO_QPT_RC);

	memset(p, 0, sizeof(*p));
	p->na = &A;
	p->nb = &B;
	return TAP_STATUS(sim_create_qp(&B.pd, &ib, &p->b), PVO_STATUS_OK,
			  "rebind: an RC QP on b");
}

/* a's RC QP connected to b's guest QPN; b's to a's real one. */
static bool connect_to_guest_qpn(struct pair *p)
{
	struct sim_qp_init ia = qp_init(&A, PVO_QPT_RC);
	struct sim_conn ca = fast, cb = fast;
	struct sim_peer pa, pb;
	int st;

	ca.sgid_index = A.gid_v4;
	cb.sgid_index = B.gid_v4;
	st = sim_create_qp(&A.pd, &ia, &p->a);
	if (st != PVO_STATUS_OK) {
		sim_destroy_qp(&p->b);
		return tap_ok(false, "rebind: an RC QP on a");
	}
	p->made = true;
	sim_qp_peer(&p->b, cb.sgid_index, &pb);
	sim_qp_peer(&p->a, ca.sgid_index, &pa);
	pb.qpn = G_QPN_B;
	st = sim_qp_connect(&p->a, &ca, &pb);
	if (st == PVO_STATUS_OK)
		st = sim_qp_connect(&p->b, &cb, &pa);
	return TAP_STATUS(st, PVO_STATUS_OK,
			  "rebind: a connects to b's guest QPN 0x%x (host "
			  "QPN 0x%x)",
			  G_QPN_B, p->b.qpn);
}

static void rc_through_aliases(struct pair *pp)
{
	const uint32_t len = 6000;
	struct pair p = *pp;
	struct sim_wr w;

	if (!connect_to_guest_qpn(&p)) {
		if (p.made)
			pair_destroy(&p);
		return;
	}
	fill_pattern(&A.buf, 4096, len, 0x4e01);
	prepare_dst(&B.buf, 65536, len);
	w = write_wr(0x7711, 4096, len, B.mr.iova + 65536, G_RKEY_B);
	post1(&p.a, &w);
	if (expect_cqe(&A.scq, w.wr_id, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS,
		       "rebind: WRITE with b's guest key"))
		check_data("rebind: the WRITE landed in b's MR", &B.buf, 65536,
			   len, 0x4e01);
	fill_pattern(&B.buf, 131072, len, 0x4e02);
	prepare_dst(&A.buf, 196608, len);
	w = wr1(0x7712, PVO_WR_RDMA_READ, &A, 196608, len);
	w.remote_addr = B.mr.iova + 131072;
	w.rkey = G_RKEY_B;
	post1(&p.a, &w);
	if (expect_cqe(&A.scq, w.wr_id, PVO_WC_RDMA_READ, PVO_WC_SUCCESS,
		       "rebind: READ with b's guest key"))
		check_data("rebind: the READ brought b's bytes", &A.buf, 196608,
			   len, 0x4e02);
	{
		uint64_t was = 0x1122334455667788ull, got = 0, now = 0;
		uint64_t lo = al8(&A, 16384), ro = al8(&B, 327680);

		sim_buf_write(&B.buf, ro, &was, 8);
		sim_buf_fill(&A.buf, lo, 0, 8);
		w = wr1(0x7715, PVO_WR_ATOMIC_FETCH_AND_ADD, &A, lo, 8);
		w.remote_addr = B.mr.iova + ro;
		w.rkey = G_RKEY_B;
		w.compare_add = 0x100;
		post1(&p.a, &w);
		if (expect_cqe(&A.scq, w.wr_id, PVO_WC_FETCH_ADD,
			       PVO_WC_SUCCESS,
			       "rebind: FETCH_ADD with b's guest key")) {
			sim_buf_read(&A.buf, lo, &got, 8);
			sim_buf_read(&B.buf, ro, &now, 8);
			tap_ok(got == was && now == was + 0x100,
			       "rebind: the FETCH_ADD returned b's value and "
			       "added to it (0x%llx, now 0x%llx)",
			       (unsigned long long)got,
			       (unsigned long long)now);
		}
	}
	fill_pattern(&A.buf, 8192, 300, 0x4e03);
	prepare_dst(&B.buf, 262144, 300);
	post_recv1(&p.b, &B, 0x7713, 262144, 300);
	w = wr1(0x7714, PVO_WR_SEND, &A, 8192, 300);
	post1(&p.a, &w);
	if (expect_cqe(&A.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS,
		       "rebind: SEND to b's guest QPN") &&
	    expect_cqe(&B.rcq, 0x7713, PVO_WC_RECV, PVO_WC_SUCCESS,
		       "rebind: b receives a's SEND"))
		check_data("rebind: the SEND's bytes", &B.buf, 262144, 300,
			   0x4e03);
	pair_destroy(&p);
	drain_all();
}

static void ud_through_aliases(struct ud_pair *u)
{
	const uint64_t so = 4096, ro = 8192;
	const uint32_t len = 200;
	struct sim_wr w = ud_wr(0x7721, u->ah_v4, G_UD_QPN_B, QKEY, so, len);
	struct pvo_cqe c;

	fill_pattern(&A.buf, so, len, 0x4e04);
	prepare_dst(&B.buf, ro, 40 + len);
	post_recv1(&u->b, &B, 0x7722, ro, 40 + len);
	post1(&u->a, &w);
	expect_cqe(&A.scq, w.wr_id, PVO_WC_SEND, PVO_WC_SUCCESS,
		   "rebind: UD SEND to b's guest QPN");
	if (!get_cqe(&B.rcq, &c, "rebind: b's UD receive"))
		return;
	tap_ok(cqe_ok(&c, 0x7722, PVO_WC_RECV, PVO_WC_SUCCESS,
		      "rebind: b's UD receive") &&
		   le32toh(c.byte_len) == 40 + len,
	       "rebind: b's UD QP received the datagram sent to its guest "
	       "QPN 0x%x",
	       G_UD_QPN_B);
	/* the GRH sits in the guard zone of the data: blank it again */
	sim_buf_fill(&B.buf, ro, GUARD_BYTE, 40);
	check_data("rebind: the datagram's bytes", &B.buf, ro + 40, len,
		   0x4e04);
	tap_ok(le32toh(c.src_qp) == G_UD_QPN_A,
	       "rebind: its source QPN is a's guest QPN 0x%x as host 2 was "
	       "told (host QPN 0x%x; got 0x%x)",
	       G_UD_QPN_A, u->a.qpn, le32toh(c.src_qp));
}

void test_rebind(void)
{
	struct pvo_rebind r;
	struct ud_pair u;
	struct pair p;
	unsigned long long n;

	if (!hv_dev[0]) {
		tap_skip(1, "rebind: host verbs only (T_DATAPATH_HOSTVERBS)");
		return;
	}
	unknown_key();
	forged(B.mr.key);
	if (!ud_make(&u, &A, &B))
		return;
	if (!b_qp(&p)) {
		ud_destroy(&u, &A, &B);
		return;
	}

	r = offer(100, "10.0.0.2", "127.0.0.2", 0x0b);
	add(&r, PVO_REBIND_QPN, G_QPN_B, p.b.qpn);
	add(&r, PVO_REBIND_QPN, G_UD_QPN_B, u.b.qpn);
	add(&r, PVO_REBIND_RKEY, G_RKEY_B, B.mr.key);
	n = daemon_field(&bp, " peer_aliases=");
	tap_ok(send_offer(&r, migration_key, "127.0.0.2", "127.0.0.1") &&
		   wait_field(&bp, " peer_aliases=", n) == 3 &&
		   daemon_field(&bp, " moved_peers=") == 1,
	       "rebind: host 1 keeps b's three pairs from b's VTEP "
	       "(show: moved_peers=1 peer_aliases=3)");
	r = offer(100, "10.0.0.1", "127.0.0.1", 0x0a);
	add(&r, PVO_REBIND_QPN, G_UD_QPN_A, u.a.qpn);
	n = daemon_field(&bp2, " peer_aliases=");
	tap_ok(send_offer(&r, migration_key, "127.0.0.1", "127.0.0.2") &&
		   wait_field(&bp2, " peer_aliases=", n) == 1,
	       "rebind: host 2 keeps a's pair from a's VTEP");
	ud_through_aliases(&u);
	ud_destroy(&u, &A, &B);
	rc_through_aliases(&p);

	/* b's next move (here: an offer with nothing) replaces them all */
	r = offer(100, "10.0.0.2", "127.0.0.2", 0x0b);
	send_offer(&r, migration_key, "127.0.0.2", "127.0.0.1");
	r = offer(100, "10.0.0.1", "127.0.0.1", 0x0a);
	send_offer(&r, migration_key, "127.0.0.1", "127.0.0.2");
	for (n = 0; n < 200 && (daemon_field(&bp, " peer_aliases=") ||
				daemon_field(&bp2, " peer_aliases="));
	     n++)
		sleep_ms(10);
	tap_ok(daemon_field(&bp, " peer_aliases=") == 0 &&
		   daemon_field(&bp2, " peer_aliases=") == 0,
	       "rebind: a newer move's offer replaces the pairs of the last "
	       "(none left on hosts 1 and 2)");
	unknown_key();
}
