// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Overlay transport: the VTEP sockets, batched transmit, and the checks on
 * every received datagram before a QP sees it (outer and inner headers,
 * VNI, destination VM, ICRC, destination QP). Anything that fails is
 * dropped and counted; nothing a packet says is used before it is checked.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib-unix.h>

#include "mcast.h"
#include "icrc.h"
#include "log.h"
#include "loop.h"
#include "announce.h"
#include "evpn.h"
#include "handoff.h"
#include "moves.h"
#include "overlay.h"
#include "overlay_map.h"
#include "overlay_state.h"
#include "rebind_msg.h"
#include "qp.h"
#include "threads.h"
#include "timer.h"
#include "vm.h"

#define BATCH 64
#define TX_SOCKETS 8 /* outer UDP source ports: entropy for the underlay */
#define PKT_ROOM                                                         \
	(PVO_ENCAP_LEN + PVO_ROCE_MAX_HDRS + 4096 + 3 + PVO_ROCE_ICRC_LEN)
/*
 * UDP GSO: a run of same-size datagrams to one VTEP goes to the kernel as
 * one send that it cuts into the datagrams (late, or in the NIC), and
 * UDP GRO hands a run that arrived that way to us in one piece. Limits:
 * a GSO send is one UDP datagram of at most 64 KiB, 64 segments.
 */
#define GSO_MAX_BYTES 65000
#define GSO_MAX_SEGS 64
#define GSO_PAD_MAX 32 /* bytes of Ethernet trailer that keep a run going */
#define RX_BATCH 32
#define RX_ROOM 65536 /* a GRO run, or one datagram up to a jumbo frame */
#define RX_ROUNDS 16 /* recvmmsg calls per wake-up before yielding */

union cmsg_room {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* A loop's overlay: its sockets, counters and packet batches. */
struct overlay {
	bool on;
	const struct pvo_daemon_config *cfg;
	int fd; /* bound to vtep:vxlan-port, receives (thread 0's only) */
	int tx_fd[TX_SOCKETS];
	struct pvo_watch *src; /* watches fd on the loop */
	bool in_rx; /* taking in a receive batch: flushes wait for its end */
	uint16_t ip_id;
	struct pvo_overlay_stats stats;
	/* transmit batch: packets, then the sends they make (GSO runs) */
	unsigned int n;
	struct iovec iov[BATCH];
	struct sockaddr_in to[BATCH];
	int fd_of[BATCH];
	uint8_t buf[BATCH][PKT_ROOM] __attribute__((aligned(64)));
	struct mmsghdr msg[BATCH];
	unsigned int msg_first[BATCH]; /* the send's first packet */
	union cmsg_room msg_cmsg[BATCH];
	/* receive batch */
	struct mmsghdr rmsg[RX_BATCH];
	struct iovec riov[RX_BATCH];
	struct sockaddr_in from[RX_BATCH];
	union cmsg_room rcmsg[RX_BATCH];
	uint8_t rbuf[RX_BATCH][RX_ROOM] __attribute__((aligned(64)));
	struct pvo_ratelimit tx_log;
	struct pvo_timer aging; /* learned entries age out */
};

static void overlay_init(void *data)
{
	struct overlay *ov = data;

	ov->fd = -1;
}

static struct overlay *overlay(void)
{
	return pvo_loop_state(PVO_LOOP_OVERLAY, sizeof(struct overlay),
			      overlay_init, NULL);
}

const char *pvo_drop_name(enum pvo_drop d)
{
	static const char *const names[PVO_DROP_COUNT] = {
		[PVO_DROP_MALFORMED] = "malformed",
		[PVO_DROP_UNKNOWN_VNI] = "unknown_vni",
		[PVO_DROP_UNKNOWN_DST] = "unknown_dst",
		[PVO_DROP_BAD_ICRC] = "bad_icrc",
		[PVO_DROP_UNKNOWN_QP] = "unknown_qp",
		[PVO_DROP_BAD_PEER] = "bad_peer",
		[PVO_DROP_BAD_QKEY] = "bad_qkey",
		[PVO_DROP_BAD_STATE] = "bad_state",
		[PVO_DROP_BAD_PSN] = "bad_psn",
		[PVO_DROP_NO_ROUTE] = "no_route",
		[PVO_DROP_WRONG_VTEP] = "wrong_vtep",
		[PVO_DROP_FROZEN] = "frozen",
		[PVO_DROP_BAD_ANNOUNCE] = "bad_announce",
		[PVO_DROP_STALE_ANNOUNCE] = "stale_announce",
		[PVO_DROP_READ_BUSY] = "read_busy",
		[PVO_DROP_UNKNOWN_SRC] = "unknown_src",
		[PVO_DROP_FOREIGN_VTEP] = "foreign_vtep",
		[PVO_DROP_THREAD_BUSY] = "thread_busy",
		[PVO_DROP_LOCAL_SRC] = "local_src",
	};

	return d < PVO_DROP_COUNT ? names[d] : "?";
}

bool pvo_overlay_enabled(void)
{
	return overlay()->on;
}

static void add_stats(struct pvo_overlay_stats *to,
		      const struct pvo_overlay_stats *s)
{
	unsigned int d;

	to->net.tx_packets += s->net.tx_packets;
	to->net.tx_bytes += s->net.tx_bytes;
	to->net.rx_packets += s->net.rx_packets;
	to->net.rx_bytes += s->net.rx_bytes;
	to->net.retransmits += s->net.retransmits;
	for (d = 0; d < PVO_DROP_COUNT; d++)
		to->net.drops[d] += s->net.drops[d];
	to->tx_syscalls += s->tx_syscalls;
	to->rx_syscalls += s->rx_syscalls;
	to->gso_padded += s->gso_padded;
}

void pvo_overlay_stats(struct pvo_overlay_stats *out)
{
	unsigned int i;

	memset(out, 0, sizeof(*out));
	out->gso = true;
	for (i = 0; i < pvo_threads_count(); i++) {
		struct pvo_loop *was = pvo_thread_enter(i);
		struct overlay *ov = overlay();

		add_stats(out, &ov->stats);
		/* thread 0 receives; a thread that gave GSO up says so */
		if (i == 0)
			out->gro = ov->stats.gro;
		out->gso = out->gso && ov->stats.gso;
		pvo_thread_leave(was);
	}
}

uint32_t pvo_gid_ipv4(const uint8_t *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };
	uint32_t ip;

	if (memcmp(gid, prefix, sizeof(prefix)) != 0)
		return 0;
	memcpy(&ip, gid + 12, 4);
	return ip;
}

void pvo_gid_from_ipv4(uint32_t ip, uint8_t *gid)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &ip, 4);
}

void pvo_overlay_count_retransmits(struct pvo_qp *qp, uint64_t n)
{
	qp->net.stats.retransmits += n;
	qp->vm->net.retransmits += n;
}

void pvo_overlay_count_drop(struct pvo_vm *vm, struct pvo_qp *qp,
			    enum pvo_drop why)
{
	if (qp)
		qp->net.stats.drops[why]++;
	if (vm)
		vm->net.drops[why]++;
	else
		overlay()->stats.net.drops[why]++;
}

uint16_t pvo_overlay_sport(struct pvo_qp *qp)
{
	/* 0xc000 | a hash of the QPN, as RoCE NICs and rxe spread QPs */
	if (!qp->net.sport)
		qp->net.sport = 0xc000 | ((qp->qpn * 2654435761u) >> 18);
	return qp->net.sport;
}

bool pvo_overlay_route(struct pvo_vm *vm, uint32_t sip, uint32_t dip,
		       struct pvo_route *rt)
{
	struct pvo_map_entry e;

	if (!pvo_map_get(vm->cfg->tenant->vni, dip, &e))
		return false;
	memset(rt, 0, sizeof(*rt));
	rt->vtep.sin_family = AF_INET;
	rt->vtep.sin_port = htons(e.port);
	rt->vtep.sin_addr = e.vtep;
	rt->in.vni = vm->cfg->tenant->vni;
	memcpy(rt->in.dmac, e.mac, 6);
	memcpy(rt->in.smac, vm->cfg->mac, 6);
	rt->in.sip = sip;
	rt->in.dip = dip;
	rt->in.ttl = 64;
	return true;
}

/* ---- transmit ---------------------------------------------------------- */

static bool same_vtep(struct overlay *ov, unsigned int a, unsigned int b)
{
	return ov->fd_of[a] == ov->fd_of[b] &&
	       ov->to[a].sin_addr.s_addr == ov->to[b].sin_addr.s_addr &&
	       ov->to[a].sin_port == ov->to[b].sin_port;
}

/* Packet k can join a GSO run from packet i of segment size seg that
 * holds total bytes so far. */
static bool joins(struct overlay *ov, unsigned int i, unsigned int k,
		  size_t seg, size_t total)
{
	return k < ov->n && k - i < GSO_MAX_SEGS && same_vtep(ov, i, k) &&
	       ov->iov[k].iov_len <= seg && total + seg <= GSO_MAX_BYTES;
}

/*
 * One send from packet i on: with GSO, the packets after it to the same
 * VTEP with its size (the last may be shorter). Returns the next packet.
 *
 * A packet a few bytes shorter than the run's segments, with more behind
 * it, is padded up to the segment size: the pad is an Ethernet trailer
 * behind the inner IP packet, which every receiver trims by the IP total
 * length (ours in pvo_encap_parse, Linux in ip_rcv). This keeps a
 * multi-packet WRITE in one run: its first packet carries the 16-byte
 * RETH, the middle ones do not (likewise the AETH of READ responses).
 */
static unsigned int make_send(struct overlay *ov, unsigned int i,
			      struct mmsghdr *m, union cmsg_room *c)
{
	size_t seg = ov->iov[i].iov_len, total = seg;
	unsigned int k = i + 1;
	struct cmsghdr *cm;

	while (ov->stats.gso && joins(ov, i, k, seg, total)) {
		size_t len = ov->iov[k].iov_len;

		if (len < seg && seg - len <= GSO_PAD_MAX &&
		    joins(ov, i, k + 1, seg, total + seg)) {
			memset((uint8_t *)ov->iov[k].iov_base + len, 0,
			       seg - len);
			ov->iov[k].iov_len = len = seg;
			ov->stats.gso_padded++;
		}
		total += len;
		if (ov->iov[k++].iov_len < seg)
			break; /* a shorter one ends the run */
	}
	memset(m, 0, sizeof(*m));
	m->msg_hdr.msg_name = &ov->to[i];
	m->msg_hdr.msg_namelen = sizeof(ov->to[i]);
	m->msg_hdr.msg_iov = &ov->iov[i];
	m->msg_hdr.msg_iovlen = k - i;
	if (k - i > 1) {
		m->msg_hdr.msg_control = c->buf;
		m->msg_hdr.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
		cm = CMSG_FIRSTHDR(&m->msg_hdr);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		*(uint16_t *)CMSG_DATA(cm) = (uint16_t)seg;
	}
	return k;
}

static void flush_now(struct overlay *ov)
{
	unsigned int i = 0;

	while (i < ov->n) {
		unsigned int ns = 0, done = 0, j = i;
		int fd = ov->fd_of[i], sent;

		/* the sends of the packets that go out through fd */
		while (j < ov->n && ov->fd_of[j] == fd) {
			ov->msg_first[ns] = j;
			j = make_send(ov, j, &ov->msg[ns], &ov->msg_cmsg[ns]);
			ns++;
		}
		while (done < ns) {
			sent = sendmmsg(fd, &ov->msg[done], ns - done, 0);
			ov->stats.tx_syscalls++;
			if (sent > 0) {
				done += sent;
				continue;
			}
			if (sent < 0 && ov->stats.gso &&
			    ov->msg[done].msg_hdr.msg_iovlen > 1 &&
			    (errno == EIO || errno == EINVAL ||
			     errno == ENOPROTOOPT || errno == EOPNOTSUPP)) {
				/* this path cannot take GSO (the device's
				 * MTU, an old kernel): send datagrams */
				pvo_log("overlay",
					"UDP GSO failed (%s): sending single "
					"datagrams from now on",
					strerror(errno));
				ov->stats.gso = false;
				j = ov->msg_first[done];
				break;
			}
			/* the retransmission machinery covers the loss */
			if (pvo_ratelimit_ok(&ov->tx_log, "overlay"))
				pvo_log("overlay",
					"sending %u datagrams failed: %s",
					ns - done,
					sent < 0 ? strerror(errno) : "none sent");
			break;
		}
		i = j;
	}
	ov->n = 0;
}

void pvo_overlay_flush(void)
{
	struct overlay *ov = overlay();

	if (!ov->in_rx)
		flush_now(ov);
}

uint8_t *pvo_overlay_pkt(void)
{
	struct overlay *ov = overlay();

	if (ov->n == BATCH)
		flush_now(ov);
	return ov->buf[ov->n] + PVO_ENCAP_LEN;
}

void pvo_overlay_pkt_send(const struct pvo_route *rt, size_t roce_len,
			  struct pvo_qp *qp)
{
	struct overlay *ov = overlay();
	uint8_t *b = ov->buf[ov->n];
	struct pvo_inner in = rt->in;
	size_t len;

	in.ip_id = ov->ip_id++;
	len = pvo_encap_seal(b, &in, roce_len);

	ov->to[ov->n] = rt->vtep;
	ov->iov[ov->n].iov_base = b;
	ov->iov[ov->n].iov_len = len;
	ov->fd_of[ov->n] = ov->tx_fd[in.sport % TX_SOCKETS];
	ov->n++;
	if (qp) {
		qp->net.stats.tx_packets++;
		qp->net.stats.tx_bytes += len;
		qp->vm->net.tx_packets++;
		qp->vm->net.tx_bytes += len;
	}
	ov->stats.net.tx_packets++;
	ov->stats.net.tx_bytes += len;
	if (ov->n == BATCH)
		flush_now(ov);
}

/* 01:00:5e + the low 23 bits of an IPv4 group (RFC 1112) */
static void mcast_mac(uint32_t dip, uint8_t *mac)
{
	uint32_t h = ntohl(dip);

	mac[0] = 0x01;
	mac[1] = 0x00;
	mac[2] = 0x5e;
	mac[3] = (h >> 16) & 0x7f;
	mac[4] = (h >> 8) & 0xff;
	mac[5] = h & 0xff;
}

static bool seen_vtep(const GArray *sent, struct in_addr a, uint16_t port)
{
	unsigned int i;

	for (i = 0; i < sent->len; i++) {
		const struct sockaddr_in *v =
		    &g_array_index(sent, struct sockaddr_in, i);

		if (v->sin_addr.s_addr == a.s_addr && v->sin_port == htons(port))
			return true;
	}
	return false;
}

/*
 * A UD datagram to a multicast group goes to every VTEP the tenant is
 * known behind (its mapping entries: [remote] sections, managed and
 * learned senders) and to the [daemon] peers, once each: head-end
 * replication, no IGMP inside the overlay. Each receiving back-end hands
 * it to its own members of the group.
 */
static void overlay_send_mcast(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct overlay *ov = overlay();
	uint32_t sip = pvo_gid_ipv4(pkt->sgid), dip = pvo_gid_ipv4(pkt->dgid);
	uint32_t vni = qp->vm->cfg->tenant->vni;
	GPtrArray *entries;
	struct pvo_route rt;
	unsigned int i;
	GArray *sent;

	if (!ov->on || !sip || !dip)
		return;
	sent = g_array_new(FALSE, FALSE, sizeof(struct sockaddr_in));
	entries = pvo_map_sorted();
	memset(&rt, 0, sizeof(rt));
	rt.in.vni = vni;
	mcast_mac(dip, rt.in.dmac);
	memcpy(rt.in.smac, qp->vm->cfg->mac, 6);
	rt.in.sip = sip;
	rt.in.dip = dip;
	rt.in.ttl = 64;
	rt.vtep.sin_family = AF_INET;
	for (i = 0; i < entries->len + (unsigned int)ov->cfg->num_peers; i++) {
		const struct pvo_map_entry *e =
		    i < entries->len ? g_ptr_array_index(entries, i) : NULL;
		struct in_addr a = e ? e->vtep
				     : ov->cfg->peers[i - entries->len];
		uint16_t port = e ? e->port : ov->cfg->vxlan_port;

		if ((e && e->vni != vni) || a.s_addr == ov->cfg->vtep.s_addr ||
		    seen_vtep(sent, a, port))
			continue;
		rt.vtep.sin_addr = a;
		rt.vtep.sin_port = htons(port);
		g_array_append_val(sent, rt.vtep);
		if (pkt->payload)
			pvo_dma_seek(pkt->payload, 0);
		pvo_ov_sender_send(qp, pkt, &rt);
	}
	g_ptr_array_free(entries, TRUE);
	g_array_free(sent, TRUE);
}

static bool overlay_send(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct overlay *ov = overlay();
	uint32_t sip = pvo_gid_ipv4(pkt->sgid), dip = pvo_gid_ipv4(pkt->dgid);
	struct pvo_route rt;
	struct pvo_reply none = { .code = PVO_REPLY_NONE };

	if (!ov->on || !sip || !dip)
		return false;
	if (!pvo_overlay_route(qp->vm, sip, dip, &rt)) {
		pvo_overlay_count_drop(qp->vm, qp, PVO_DROP_NO_ROUTE);
		return false;
	}
	pvo_ov_sender_send(qp, pkt, &rt);
	pkt->pkt_sent = true;
	/* RC waits for the answer from the wire; UC and UD are done */
	if (!pkt->ahead)
		pvo_comp_reply(qp, &none);
	return true;
}

/* RC over the wire: the answers take a round trip, so SENDs and WRITEs
 * behind the active WQE go once it is out whole. */
static bool overlay_can_send_ahead(struct pvo_qp *qp)
{
	return overlay()->on && !pvo_local_route(qp, qp->attr.path.dgid);
}

static void overlay_reset_qp(struct pvo_qp *qp)
{
	struct pvo_net_stats keep = qp->net.stats;

	pvo_ov_receiver_forget(qp); /* its timer, before the memset */
	/* the counters stay */
	memset(&qp->net, 0, sizeof(qp->net));
	qp->net.stats = keep;
}

const struct pvo_transport_ops pvo_transport_overlay = {
	.name = "overlay",
	.send = overlay_send,
	.send_mcast = overlay_send_mcast,
	.can_send_ahead = overlay_can_send_ahead,
	.flush = pvo_overlay_flush,
	.reset_qp = overlay_reset_qp,
	.forget_qp = pvo_ov_receiver_forget,
	.save_qp = pvo_ov_save_qp,
	.load_qp = pvo_ov_load_qp,
};

/* ---- receive ----------------------------------------------------------- */

static const struct pvo_tenant *tenant_of_vni(uint32_t vni)
{
	struct overlay *ov = overlay();
	int i;

	for (i = 0; i < ov->cfg->num_tenants; i++)
		if (ov->cfg->tenants[i].vni == vni)
			return &ov->cfg->tenants[i];
	return NULL;
}

const struct pvo_tenant *pvo_overlay_tenant(uint32_t vni)
{
	return overlay()->on ? tenant_of_vni(vni) : NULL;
}

const struct pvo_daemon_config *pvo_overlay_config(void)
{
	struct overlay *ov = overlay();

	return ov->on ? ov->cfg : NULL;
}

bool pvo_overlay_send_frame(const void *buf, size_t len, struct in_addr vtep,
			    uint16_t port)
{
	struct overlay *ov = overlay();
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr = vtep };

	if (!ov->on)
		return false;
	return sendto(ov->tx_fd[0], buf, len, 0, (struct sockaddr *)&to,
		      sizeof(to)) == (ssize_t)len;
}

/* The QP types an opcode's transport class may reach. */
static bool class_fits(uint8_t opcode, const struct pvo_qp *qp)
{
	switch (PVO_ROCE_CLASS(opcode)) {
	case PVO_ROCE_RC:
		return qp->type == PVO_QPT_RC;
	case PVO_ROCE_UC:
		return qp->type == PVO_QPT_UC;
	case PVO_ROCE_UD:
		return qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI;
	}
	return false;
}

static bool in_list(const struct in_addr *l, int n, struct in_addr a)
{
	int i;

	for (i = 0; i < n; i++)
		if (l[i].s_addr == a.s_addr)
			return true;
	return false;
}

/*
 * A VTEP that serves tenant t: its senders may be learned from it, its
 * migrated VMs followed to it. A tenant that lists peers trusts those
 * and the VTEPs of its own [remote] sections; one that lists none, the
 * [daemon] peers and every [remote] section's VTEP. t NULL: whether a
 * serves any tenant.
 */
static bool is_peer(const struct overlay *ov, const struct pvo_tenant *t,
		    struct in_addr a)
{
	const struct pvo_daemon_config *cfg = ov->cfg;
	int i;

	for (i = 0; i < cfg->num_remotes; i++)
		if (cfg->remotes[i].vtep.s_addr == a.s_addr &&
		    (!t || (!t->num_peers && !t->evpn) ||
		     cfg->remotes[i].tenant == t))
			return true;
	if (t && t->evpn)
		return pvo_evpn_vtep_serves(t, a);
	if (t && t->num_peers)
		return in_list(t->peers, t->num_peers, a);
	if (in_list(cfg->peers, cfg->num_peers, a))
		return true;
	for (i = 0; !t && i < cfg->num_tenants; i++)
		if (in_list(cfg->tenants[i].peers, cfg->tenants[i].num_peers,
			    a) ||
		    (cfg->tenants[i].evpn &&
		     pvo_evpn_vtep_serves(&cfg->tenants[i], a)))
			return true;
	return false;
}

bool pvo_overlay_vtep_serves(uint32_t vni, struct in_addr vtep)
{
	struct overlay *ov = overlay();
	const struct pvo_tenant *t = vni ? tenant_of_vni(vni) : NULL;

	return (t || !vni) && is_peer(ov, t, vtep);
}

struct ingress_ctx {
	struct overlay *ov;
	const struct pvo_tenant *tenant;
	enum pvo_drop why; /* a refusal more precise than the map's */
};

/* Learning is confined to the VTEPs that serve the tenant. */
static bool may_learn(const struct pvo_map_entry *seen, void *opaque)
{
	struct ingress_ctx *c = opaque;

	if (c->tenant->no_learn || c->tenant->evpn)
		return false;
	if (!is_peer(c->ov, c->tenant, seen->vtep)) {
		if (is_peer(c->ov, NULL, seen->vtep))
			c->why = PVO_DROP_FOREIGN_VTEP;
		return false;
	}
	return true;
}


static uint64_t now_us(void *opaque)
{
	return g_get_monotonic_time();
}

/* Whether the sender of a checked packet may be behind the VTEP it came
 * from (docs/overlay.md, step 5); learns it where allowed. No peer speaks
 * for a VM that this back-end serves: while it runs here (or stands
 * frozen here, until its move is known), its address is nobody else's. */
static enum pvo_drop ingress(struct overlay *ov, const struct pvo_tenant *t,
			     const struct pvo_inner *in,
			     const struct sockaddr_in *from)
{
	struct ingress_ctx c = { ov, t, PVO_DROP_COUNT };
	uint8_t sgid[16];
	const struct pvo_map_rules rules = {
		.may_learn = may_learn,
		.now_us = now_us,
		.ctx = &c,
		.move_us = (uint64_t)ov->cfg->learn_move_s * G_USEC_PER_SEC,
	};
	struct pvo_map_entry seen = {
		.vni = in->vni,
		.ip = in->sip,
		.vtep = from->sin_addr,
		.port = ov->cfg->vxlan_port,
	};
	enum pvo_map_verdict v;

	pvo_gid_from_ipv4(in->sip, sgid);
	if (pvo_served_by_gid(in->vni, sgid))
		return PVO_DROP_LOCAL_SRC;
	memcpy(seen.mac, in->smac, 6);
	v = pvo_map_ingress(&seen, &rules);
	if (v == PVO_MAP_OK)
		return PVO_DROP_COUNT;
	if (c.why != PVO_DROP_COUNT)
		return c.why;
	return v == PVO_MAP_WRONG_VTEP ? PVO_DROP_WRONG_VTEP
				       : PVO_DROP_UNKNOWN_SRC;
}

/* The ICRC at the end of the RoCE packet (over the inner IPv4 header on). */
static bool icrc_ok(const uint8_t *buf, const uint8_t *roce, size_t roce_len)
{
	uint32_t icrc;

	memcpy(&icrc, roce + roce_len - PVO_ROCE_ICRC_LEN, 4);
	return le32toh(icrc) ==
	       pvo_icrc_ipv4(buf + PVO_ENCAP_IP_OFF,
			     PVO_IP4_LEN + PVO_UDP_LEN + roce_len -
				 PVO_ROCE_ICRC_LEN);
}

struct mcast_rx {
	const struct pvo_inner *in;
	const struct pvo_roce_hdr *h;
	size_t len;
};

static void mcast_member_input(struct pvo_qp *qp, void *arg)
{
	const struct mcast_rx *m = arg;

	qp->vm->net.rx_packets++;
	qp->vm->net.rx_bytes += m->len;
	qp->net.stats.rx_packets++;
	qp->net.stats.rx_bytes += m->len;
	pvo_ov_receiver_input(qp, m->in, m->h);
}

/*
 * A datagram to a multicast group: the same checks as any packet (RoCE
 * headers, ICRC, the sender's VTEP), then a copy for each member of the
 * group in the tenant on this host. Only UD SENDs to QPN 0xffffff.
 */
static void input_mcast(struct overlay *ov, const struct pvo_tenant *tenant,
			const struct pvo_inner *in, const uint8_t *roce,
			size_t roce_len, const uint8_t *buf,
			const struct sockaddr_in *from, const uint8_t *dgid)
{
	struct pvo_roce_hdr h;
	struct mcast_rx m = { in, &h, PVO_ENCAP_LEN + roce_len };
	uint8_t mac[6];
	enum pvo_drop why;

	mcast_mac(in->dip, mac);
	if (memcmp(in->dmac, mac, 6) != 0 ||
	    !pvo_roce_decode(roce, roce_len, &h) ||
	    (h.pkey & 0x7fff) != 0x7fff ||
	    PVO_ROCE_CLASS(h.opcode) != PVO_ROCE_UD ||
	    h.dqpn != PVO_MCAST_QPN) {
		pvo_overlay_count_drop(NULL, NULL, PVO_DROP_MALFORMED);
		return;
	}
	if (!icrc_ok(buf, roce, roce_len)) {
		pvo_overlay_count_drop(NULL, NULL, PVO_DROP_BAD_ICRC);
		return;
	}
	why = ingress(ov, tenant, in, from);
	if (why != PVO_DROP_COUNT) {
		pvo_overlay_count_drop(NULL, NULL, why);
		return;
	}
	pvo_local_mcast_each(in->vni, dgid, NULL, mcast_member_input, &m);
}

static void input(const uint8_t *buf, size_t len, const struct sockaddr_in *from)
{
	struct overlay *ov = overlay();
	struct pvo_roce_hdr h;
	struct pvo_inner in;
	const uint8_t *roce;
	size_t roce_len;
	uint8_t dgid[16];
	const struct pvo_tenant *tenant;
	struct pvo_vm *vm;
	struct pvo_qp *qp;
	enum pvo_drop why;

	ov->stats.net.rx_packets++;
	ov->stats.net.rx_bytes += len;
	if (len >= PVO_VXLAN_LEN + PVO_ETH_LEN &&
	    (buf[PVO_VXLAN_LEN + 12] << 8 | buf[PVO_VXLAN_LEN + 13]) ==
		    PVO_ANNOUNCE_ETHERTYPE) {
		why = pvo_rebind_is_one(buf, len)
			  ? pvo_overlay_rebind_input(buf, len, from)
			  : pvo_overlay_moves_input(buf, len, from);
		if (why != PVO_DROP_COUNT)
			pvo_overlay_count_drop(NULL, NULL, why);
		return;
	}
	if (pvo_encap_parse(buf, len, &in, &roce, &roce_len) != PVO_ENCAP_OK) {
		pvo_overlay_count_drop(NULL, NULL, PVO_DROP_MALFORMED);
		return;
	}
	tenant = tenant_of_vni(in.vni);
	if (!tenant) {
		pvo_overlay_count_drop(NULL, NULL, PVO_DROP_UNKNOWN_VNI);
		return;
	}
	pvo_gid_from_ipv4(in.dip, dgid);
	if (pvo_gid_is_multicast(dgid)) {
		input_mcast(ov, tenant, &in, roce, roce_len, buf, from, dgid);
		return;
	}
	vm = pvo_served_by_gid(in.vni, dgid);
	if (!vm || memcmp(in.dmac, vm->cfg->mac, 6) != 0) {
		pvo_overlay_count_drop(NULL, NULL, PVO_DROP_UNKNOWN_DST);
		return;
	}
	if (vm->frozen) {
		pvo_overlay_count_drop(vm, NULL, PVO_DROP_FROZEN);
		return;
	}
	vm->net.rx_packets++;
	vm->net.rx_bytes += len;
	if (!pvo_roce_decode(roce, roce_len, &h) ||
	    (h.pkey & 0x7fff) != 0x7fff) {
		pvo_overlay_count_drop(vm, NULL, PVO_DROP_MALFORMED);
		return;
	}
	if (!icrc_ok(buf, roce, roce_len)) {
		pvo_overlay_count_drop(vm, NULL, PVO_DROP_BAD_ICRC);
		return;
	}
	why = ingress(ov, tenant, &in, from);
	if (why != PVO_DROP_COUNT) {
		pvo_overlay_count_drop(vm, NULL, why);
		return;
	}
	qp = pvo_qp_by_qpn(vm, h.dqpn);
	if (!qp) {
		pvo_overlay_count_drop(vm, NULL, PVO_DROP_UNKNOWN_QP);
		return;
	}
	if (!class_fits(h.opcode, qp)) {
		pvo_overlay_count_drop(vm, qp, PVO_DROP_BAD_STATE);
		return;
	}
	qp->net.stats.rx_packets++;
	qp->net.stats.rx_bytes += len;
	if (pvo_roce_flags(h.opcode) & PVO_RH_REQ)
		pvo_ov_receiver_input(qp, &in, &h);
	else
		pvo_ov_sender_input(qp, &in, &h);
}

/*
 * A datagram of a tenant another thread serves goes to that thread: only
 * its VNI is read here. Everything else, the malformed included, is
 * taken in (and counted) here.
 */
static bool handed_off(const uint8_t *buf, size_t len,
		       const struct sockaddr_in *from)
{
	const struct pvo_tenant *t;

	if (pvo_threads_count() == 1 || len < PVO_VXLAN_LEN)
		return false;
	t = tenant_of_vni(pvo_vxlan_vni(buf));
	if (!t || t->thread == pvo_thread_self())
		return false;
	if (!pvo_handoff_post(t->thread, buf, len, from)) {
		overlay()->stats.net.rx_packets++;
		pvo_overlay_count_drop(NULL, NULL, PVO_DROP_THREAD_BUSY);
	}
	return true;
}

/* After a batch from the inbox, as after one from the socket; the next
 * batch is a new turn for the READ responses' budget. */
static void handed_done(void)
{
	pvo_ov_receiver_send_acks();
	flush_now(overlay());
	pvo_ov_receiver_turn();
}

/* The segment size of a GRO run (UDP_GRO control message), or 0. */
static size_t gro_size(struct msghdr *h)
{
	struct cmsghdr *cm;
	int size;

	for (cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm))
		if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
			memcpy(&size, CMSG_DATA(cm), sizeof(size));
			return size > 0 ? (size_t)size : 0;
		}
	return 0;
}

static gboolean on_readable(gint fd, GIOCondition cond, gpointer opaque)
{
	struct overlay *ov = opaque;
	int round, i, n;

	pvo_ov_receiver_turn();
	for (round = 0; round < RX_ROUNDS; round++) {
		for (i = 0; i < RX_BATCH; i++) {
			struct msghdr *h = &ov->rmsg[i].msg_hdr;

			ov->riov[i].iov_base = ov->rbuf[i];
			ov->riov[i].iov_len = RX_ROOM;
			memset(h, 0, sizeof(*h));
			h->msg_name = &ov->from[i];
			h->msg_namelen = sizeof(ov->from[i]);
			h->msg_iov = &ov->riov[i];
			h->msg_iovlen = 1;
			h->msg_control = ov->rcmsg[i].buf;
			h->msg_controllen = sizeof(ov->rcmsg[i].buf);
		}
		n = recvmmsg(fd, ov->rmsg, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			break;
		ov->stats.rx_syscalls++;
		ov->in_rx = true;
		for (i = 0; i < n; i++) {
			struct msghdr *h = &ov->rmsg[i].msg_hdr;
			size_t len = ov->rmsg[i].msg_len, off, seg;

			/* truncated datagrams are malformed */
			if (h->msg_flags & MSG_TRUNC ||
			    h->msg_namelen != sizeof(ov->from[i])) {
				ov->stats.net.rx_packets++;
				pvo_overlay_count_drop(NULL, NULL,
						       PVO_DROP_MALFORMED);
				continue;
			}
			/* a GRO run: datagrams of seg bytes, the last one
			 * maybe shorter, each checked on its own */
			seg = gro_size(h);
			if (!seg || seg > len)
				seg = len;
			for (off = 0; off < len; off += seg)
				if (!handed_off(ov->rbuf[i] + off,
						MIN(seg, len - off),
						&ov->from[i]))
					input(ov->rbuf[i] + off,
					      MIN(seg, len - off), &ov->from[i]);
		}
		ov->in_rx = false;
		pvo_ov_receiver_send_acks();
		flush_now(ov);
		if (n < RX_BATCH)
			break;
	}
	return G_SOURCE_CONTINUE;
}

/* ---- life cycle ---------------------------------------------------------- */

static int open_socket(uint32_t addr, uint16_t port, char **err)
{
	struct overlay *ov = overlay();
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int tos = ov->cfg->dscp << 2, size = 8 << 20;
	char ip[INET_ADDRSTRLEN];

	if (fd < 0) {
		*err = g_strdup_printf("overlay: socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	/* as root, beyond rmem_max: bursts of a whole message arrive */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	sa.sin_addr.s_addr = addr;
	sa.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
		*err = g_strdup_printf(
		    "overlay: cannot bind the VTEP socket to %s:%u: %s (is "
		    "'vtep' an address of this host, and is no other VTEP "
		    "using 'vxlan-port'?)",
		    ip, port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Learned entries silent for learn-age-s go; looked at four times per
 * age, at least once a second. */
static uint64_t aging_period_us(const struct overlay *ov)
{
	uint64_t us = (uint64_t)ov->cfg->learn_age_s * G_USEC_PER_SEC / 4;

	return MAX(us, G_USEC_PER_SEC);
}

static void on_aging(void *opaque)
{
	struct overlay *ov = opaque;

	pvo_map_expire(g_get_monotonic_time(),
		       (uint64_t)ov->cfg->learn_age_s * G_USEC_PER_SEC);
	pvo_timer_arm(&ov->aging, aging_period_us(ov));
}

/* A [remote] section's mapping entry, keyed as in the table. */
struct cfg_entry {
	uint64_t key; /* vni << 32 | ip */
	struct pvo_map_entry e;
};

/* The entries of cfg's [remote] sections by (VNI, IP); a later section's
 * entry wins, as it does in the table. */
static GHashTable *config_entries(const struct pvo_daemon_config *cfg)
{
	GHashTable *h = g_hash_table_new_full(g_int64_hash, g_int64_equal,
					      NULL, g_free);
	int i, k;

	for (i = 0; i < cfg->num_remotes; i++) {
		const struct pvo_vm_config *r = &cfg->remotes[i];

		for (k = 0; k < r->num_ips; k++) {
			struct cfg_entry *c = g_new0(struct cfg_entry, 1);

			c->e.vni = r->tenant->vni;
			c->e.ip = pvo_gid_ipv4(r->ips[k].s6_addr);
			c->e.vtep = r->vtep;
			c->e.port = r->vtep_port;
			c->e.origin = PVO_MAP_CONFIG;
			memcpy(c->e.mac, r->mac, 6);
			c->key = (uint64_t)c->e.vni << 32 | c->e.ip;
			g_hash_table_replace(h, &c->key, c);
		}
	}
	return h;
}

static void close_sockets(struct overlay *ov, int ntx)
{
	while (ntx--)
		close(ov->tx_fd[ntx]);
	if (ov->fd >= 0)
		close(ov->fd);
	ov->fd = -1;
}

/*
 * The calling loop's overlay: sockets to send from on every thread, the
 * VTEP socket and the aging of learned entries on thread 0, the inbox of
 * handed-over datagrams on the others.
 */
static bool start_loop(const struct pvo_daemon_config *cfg, unsigned int i,
		       char **err)
{
	struct overlay *ov = overlay();
	int k;

	ov->cfg = cfg;
	if (cfg->vtep.s_addr == INADDR_ANY)
		return true; /* no overlay: local transport only */
	if (i == 0) {
		ov->fd = open_socket(cfg->vtep.s_addr, cfg->vxlan_port, err);
		if (ov->fd < 0)
			return false;
	}
	for (k = 0; k < TX_SOCKETS; k++) {
		ov->tx_fd[k] = open_socket(cfg->vtep.s_addr, 0, err);
		if (ov->tx_fd[k] < 0) {
			close_sockets(ov, k);
			return false;
		}
	}
	/* GSO and GRO where the kernel has them (Linux 4.18 / 5.0) */
	ov->stats.gso = !cfg->no_udp_gso;
	if (i == 0) {
		ov->stats.gro = setsockopt(ov->fd, SOL_UDP, UDP_GRO,
					   &(int){ 1 }, sizeof(int)) == 0;
		ov->src = pvo_loop_add_fd(ov->fd, G_IO_IN, on_readable, ov);
		if (!ov->src) {
			*err = g_strdup_printf("overlay: cannot wait on the "
					       "VXLAN socket: %s",
					       g_strerror(errno));
			close_sockets(ov, TX_SOCKETS);
			return false;
		}
		pvo_timer_init(&ov->aging, on_aging, ov);
		pvo_timer_arm(&ov->aging, aging_period_us(ov));
		if (!pvo_evpn_start(cfg, err)) {
			pvo_loop_remove_fd(ov->src);
			ov->src = NULL;
			pvo_timer_destroy(&ov->aging);
			close_sockets(ov, TX_SOCKETS);
			return false;
		}
	} else if (!pvo_handoff_open(i, input, handed_done, err)) {
		close_sockets(ov, TX_SOCKETS);
		return false;
	}
	ov->on = true;
	return true;
}

static void stop_loop(unsigned int i)
{
	struct overlay *ov = overlay();

	if (!ov->on)
		return;
	flush_now(ov);
	if (i == 0) {
		pvo_evpn_stop();
		pvo_loop_remove_fd(ov->src);
		ov->src = NULL;
		pvo_timer_destroy(&ov->aging);
	} else {
		pvo_handoff_close(i);
	}
	close_sockets(ov, TX_SOCKETS);
	ov->on = false;
}

/* From thread 0 with the world paused, as the other life-cycle calls. */
bool pvo_overlay_start(const struct pvo_daemon_config *cfg, char **err)
{
	GHashTable *entries = config_entries(cfg);
	GHashTableIter it;
	gpointer k, v;
	unsigned int i;

	g_hash_table_iter_init(&it, entries);
	while (g_hash_table_iter_next(&it, &k, &v))
		pvo_map_set(&((struct cfg_entry *)v)->e);
	g_hash_table_destroy(entries);
	for (i = 0; i < pvo_threads_count(); i++) {
		struct pvo_loop *was = pvo_thread_enter(i);
		bool ok = start_loop(cfg, i, err);

		pvo_thread_leave(was);
		if (!ok) {
			while (i--) {
				was = pvo_thread_enter(i);
				stop_loop(i);
				pvo_thread_leave(was);
			}
			return false;
		}
	}
	return true;
}

static bool same_entry(const struct pvo_map_entry *a,
		       const struct pvo_map_entry *b)
{
	return a->vtep.s_addr == b->vtep.s_addr && a->port == b->port &&
	       memcmp(a->mac, b->mac, 6) == 0;
}

static void reload_loop(const struct pvo_daemon_config *cfg, unsigned int n);

void pvo_overlay_reload(const struct pvo_daemon_config *cfg,
			struct pvo_overlay_reloaded *r)
{
	GHashTable *was = config_entries(overlay()->cfg);
	GHashTable *now = config_entries(cfg);
	struct pvo_map_entry cur;
	struct cfg_entry *c, *o;
	GHashTableIter it;
	gpointer k, v;
	unsigned int i;

	memset(r, 0, sizeof(*r));
	/* sections that went: their entries, where the config's are still
	 * in the table (not replaced through the management socket) */
	g_hash_table_iter_init(&it, was);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		c = v;
		if (g_hash_table_contains(now, k))
			continue;
		if (pvo_map_get(c->e.vni, c->e.ip, &cur) &&
		    cur.origin == PVO_MAP_CONFIG) {
			pvo_map_del(c->e.vni, c->e.ip);
			r->removed++;
		}
	}
	/* new and changed ones; an unchanged section changes nothing, and a
	 * managed entry stays what the administrator made it */
	g_hash_table_iter_init(&it, now);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		c = v;
		o = g_hash_table_lookup(was, k);
		if (o && same_entry(&o->e, &c->e))
			continue;
		if (pvo_map_get(c->e.vni, c->e.ip, &cur) &&
		    cur.origin == PVO_MAP_MGMT) {
			r->kept_mgmt++;
			continue;
		}
		pvo_map_set(&c->e);
		if (o)
			r->changed++;
		else
			r->added++;
	}
	g_hash_table_destroy(was);
	g_hash_table_destroy(now);

	for (i = 0; i < pvo_threads_count(); i++) {
		struct pvo_loop *in = pvo_thread_enter(i);

		reload_loop(cfg, i);
		pvo_thread_leave(in);
	}
}

static void reload_loop(const struct pvo_daemon_config *cfg, unsigned int n)
{
	struct overlay *ov = overlay();
	const struct pvo_daemon_config *old = ov->cfg;
	int tos = cfg->dscp << 2, i;

	ov->cfg = cfg;
	if (!ov->on)
		return;
	if (cfg->dscp != old->dscp) {
		setsockopt(ov->fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
		for (i = 0; i < TX_SOCKETS; i++)
			setsockopt(ov->tx_fd[i], IPPROTO_IP, IP_TOS, &tos,
				   sizeof(tos));
	}
	/* a shorter age is looked at within its own period */
	if (n == 0 && cfg->learn_age_s != old->learn_age_s)
		pvo_timer_arm(&ov->aging, aging_period_us(ov));
}

void pvo_overlay_stop(void)
{
	unsigned int i;

	for (i = 0; i < pvo_threads_count(); i++) {
		struct pvo_loop *was = pvo_thread_enter(i);

		stop_loop(i);
		pvo_thread_leave(was);
	}
	pvo_map_clear();
}
