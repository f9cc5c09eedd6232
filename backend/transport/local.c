// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Local transport: the destination VM is served by this daemon. The
 * route is tenant-scoped: only a VM of the sender's tenant (same VNI) that
 * has the destination GID installed is a destination, so a guest cannot
 * reach another tenant's QPs even if it knows their GID, QPN and rkey.
 * The responder runs right away and copies straight from the sender's
 * pages into the receiver's; its answer goes back to the completer before
 * send returns. A large message comes in slices, one per send (the
 * packets the requester names, struct pvo_pkt's pkt_from .. pkt_to): each
 * goes to the responder as a segment of whole path MTUs, as packets from
 * the wire would, so that the responder keeps the message open between
 * them and checks the target memory again for each.
 */
#include <string.h>
#include <glib.h>

#include "loop.h"
#include "mcast.h"
#include "overlay.h"
#include "profile.h"
#include "qp.h"
#include "transport.h"
#include "vm.h"

/* The VMs a loop serves, and what their routes depend on. */
struct local {
	GPtrArray *served;
	/* Counts changes of what a route depends on; 0 is never current. */
	uint64_t routes_gen;
};

static void local_init(void *data)
{
	struct local *lo = data;

	lo->served = g_ptr_array_new();
	lo->routes_gen = 1;
}

static void local_fini(void *data)
{
	g_ptr_array_free(((struct local *)data)->served, TRUE);
}

static struct local *local(void)
{
	return pvo_loop_state(PVO_LOOP_LOCAL, sizeof(struct local), local_init,
			      local_fini);
}

void pvo_local_register(struct pvo_vm *vm)
{
	g_ptr_array_add(local()->served, vm);
	pvo_local_routes_changed();
}

void pvo_local_unregister(struct pvo_vm *vm)
{
	g_ptr_array_remove(local()->served, vm);
	pvo_local_routes_changed();
}

void pvo_local_routes_changed(void)
{
	local()->routes_gen++;
}

/* The QP's last answer while nothing it depends on changed: an RC QP
 * asks for the same GID every message. */
struct pvo_vm *pvo_local_route(struct pvo_qp *qp, const uint8_t *gid)
{
	struct pvo_qp_route *c = &qp->route;
	uint64_t gen = local()->routes_gen;

	if (c->gen != gen || memcmp(c->gid, gid, PVO_GID_LEN)) {
		c->vm = pvo_served_by_gid(qp->vm->cfg->tenant->vni, gid);
		memcpy(c->gid, gid, PVO_GID_LEN);
		c->gen = gen;
	}
	return c->vm;
}

struct pvo_vm *pvo_served_by_gid(uint32_t vni, const uint8_t *gid)
{
	GPtrArray *served = local()->served;
	unsigned int i, k;

	for (i = 0; i < served->len; i++) {
		struct pvo_vm *v = g_ptr_array_index(served, i);

		/* a VM that migrated away is reached over the overlay */
		if (!v->connected || v->moved_away ||
		    v->cfg->tenant->vni != vni)
			continue;
		for (k = 0; k < PVO_GID_TABLE_LEN; k++)
			if (v->gids.e[k].valid &&
			    memcmp(v->gids.e[k].gid, gid, PVO_GID_LEN) == 0)
				return v;
	}
	return NULL;
}

void pvo_local_mcast_each(uint32_t vni, const uint8_t *gid,
			  const struct pvo_qp *skip,
			  void (*fn)(struct pvo_qp *member, void *arg),
			  void *arg)
{
	GPtrArray *served = local()->served;
	unsigned int i, k;

	for (i = 0; i < served->len; i++) {
		struct pvo_vm *v = g_ptr_array_index(served, i);

		if (!v->connected || v->frozen || v->cfg->tenant->vni != vni)
			continue;
		for (k = 0; k < v->mcast_qps->len; k++) {
			struct pvo_qp *m = g_ptr_array_index(v->mcast_qps, k);

			if (m != skip && pvo_mcast_member(m, gid))
				fn(m, arg);
		}
	}
}

void pvo_local_thawed(struct pvo_qp *qp)
{
	struct pvo_vm *peer = pvo_served_by_gid(qp->vm->cfg->tenant->vni,
						qp->attr.path.dgid);
	struct pvo_qp *pq =
	    peer ? pvo_qp_by_qpn(peer, qp->attr.dest_qpn) : NULL;

	if (pq && pq->attr.dest_qpn == qp->qpn)
		pvo_comp_peer_thawed(pq);
}

static void deliver(struct pvo_qp *member, void *arg)
{
	struct pvo_pkt *pkt = arg;
	struct pvo_reply r = {.code = PVO_REPLY_NONE};

	if (pkt->payload)
		pvo_dma_seek(pkt->payload, 0);
	pvo_resp_receive(member, pkt, &r);
}

/* A group datagram: a copy for every member of the sender's tenant on
 * this loop, the sender excepted. */
static void local_send_mcast(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	pvo_local_mcast_each(qp->vm->cfg->tenant->vni, pkt->dgid, qp, deliver,
			     pkt);
}

/*
 * The segment of pkt that goes now: packets [pkt_from, pkt_to) of the
 * message at the path MTU. SEND / WRITE: bytes of the payload; READ: a
 * request of its own for that part of the range (the requester places
 * the answer where it belongs). A whole message goes as it is, without
 * a copy into seg (most messages are one slice).
 */
static const struct pvo_pkt *segment(struct pvo_qp *qp,
				     const struct pvo_pkt *pkt,
				     struct pvo_pkt *seg)
{
	uint64_t mtu = pvo_qp_mtu_bytes(qp), len, off, end;

	switch (pkt->op) {
	case PVO_OP_SEND:
	case PVO_OP_WRITE:
		len = pkt->payload_len;
		break;
	case PVO_OP_READ:
		len = pkt->dma_len;
		break;
	default:
		return pkt; /* atomics: one packet */
	}
	off = MIN(len, pkt->pkt_from * mtu);
	end = pkt->pkt_to ? MIN(len, pkt->pkt_to * mtu) : len;
	if (pkt->payload) /* SEND, WRITE */
		pvo_dma_seek(pkt->payload, off);
	if (!off && end == len)
		return pkt;
	*seg = *pkt;
	seg->psn = pvo_psn_add(pkt->psn, pkt->pkt_from);
	seg->offset = off;
	if (pkt->op == PVO_OP_READ) {
		seg->va = pkt->va + off;
		seg->dma_len = end - off;
		return seg;
	}
	seg->first = pkt->pkt_from == 0;
	seg->last = end == len;
	seg->segment = true;
	seg->payload_len = end - off;
	return seg;
}

/* The PSNs seg of qp's message takes. */
static uint32_t seg_packets(struct pvo_qp *qp, const struct pvo_pkt *seg)
{
	uint32_t mtu = pvo_qp_mtu_bytes(qp);

	switch (seg->op) {
	case PVO_OP_SEND:
	case PVO_OP_WRITE:
		return pvo_packets(seg->payload_len, mtu);
	case PVO_OP_READ:
		return pvo_packets(seg->dma_len, mtu);
	default:
		return 1;
	}
}

/*
 * RC after a move (qp->route.resync): the requester resends from its
 * last acknowledged PSN what its peer may have taken over the overlay
 * before one of them moved here, the answer lost at the switch-over.
 * The packets of seg behind the responder's rq_psn were taken, and are
 * handled as the wire's responder does (receiver.c, duplicate()): a
 * SEND or WRITE is acknowledged, not executed again; a READ is answered
 * again; an atomic gets the result kept for it. The rest of a SEND or
 * WRITE that reaches past rq_psn goes on where the responder stands.
 * Once the two ends agree on the PSN nothing is checked any more: on one
 * host, QPs whose PSNs disagree keep working as before.
 * Returns what is left to execute, or NULL when *r is the answer.
 */
static const struct pvo_pkt *resync(struct pvo_qp *qp, struct pvo_qp *dqp,
				    const struct pvo_pkt *seg,
				    struct pvo_pkt *buf, struct pvo_reply *r)
{
	int32_t behind = pvo_psn_diff(dqp->attr.rq_psn, seg->psn);
	uint32_t n = seg_packets(qp, seg);
	uint64_t skip;

	/* in step again; or not a duplicate of this requester's: another
	 * connection's QP, or a responder past all it ever sent */
	if (behind <= 0 || !pvo_resp_accepts(dqp, seg) ||
	    pvo_psn_diff(dqp->attr.rq_psn, pvo_ov_sender_sent_end(qp)) > 0) {
		qp->route.resync = false;
		return seg;
	}
	if ((uint32_t)behind < n &&
	    (seg->op == PVO_OP_SEND || seg->op == PVO_OP_WRITE)) {
		/* the responder holds the message open at rq_psn */
		skip = (uint64_t)behind * pvo_qp_mtu_bytes(qp);
		if (seg != buf)
			*buf = *seg;
		buf->psn = dqp->attr.rq_psn;
		buf->offset += skip;
		buf->payload_len -= skip;
		buf->first = false;
		buf->segment = true;
		pvo_dma_seek(buf->payload, buf->offset);
		return buf;
	}
	switch (seg->op) {
	case PVO_OP_SEND:
	case PVO_OP_WRITE:
		r->code = PVO_REPLY_ACK;
		break;
	case PVO_OP_READ:
		pvo_resp_read(dqp, seg, r);
		/* taken in other pieces: the responder is at its end now */
		if (r->code == PVO_REPLY_ACK && (uint32_t)behind < n)
			dqp->attr.rq_psn = pvo_psn_add(seg->psn, n);
		break;
	default:
		/* none kept: dropped, as on the wire */
		if (pvo_ov_atomic_saved(dqp, seg->psn, &r->atomic_orig))
			r->code = PVO_REPLY_ACK;
		break;
	}
	return NULL;
}

static bool local_send(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct pvo_pkt buf;
	const struct pvo_pkt *seg;
	struct pvo_vm *dvm = pvo_local_route(qp, pkt->dgid);
	struct pvo_reply r = {.code = PVO_REPLY_NONE};
	struct pvo_qp *dqp;
	uint64_t len;

	pvo_prof_mark(PVO_PROF_BUILD);
	if (!dvm) {
		/* over the overlay: answered later, or never */
		if (qp->type == PVO_QPT_RC)
			qp->route.resync = true;
		return false;
	}
	if (dvm->frozen) {
		/* stopped for migration: as a lost packet, which RC
		 * resends after its timeout */
		pvo_comp_reply(qp, &r);
		return true;
	}
	dqp = pvo_qp_by_qpn(dvm, pkt->dst_qpn);
	seg = segment(qp, pkt, &buf);
	len = seg->payload_len;
	if (dqp && qp->route.resync)
		seg = resync(qp, dqp, seg, &buf, &r);
	if (dqp && seg)
		pvo_resp_receive(dqp, seg, &r);
	pkt->pkt_sent = true;
	pvo_comp_reply(qp, &r);
	/* Only now, so that a QP talking to itself completes the request
	 * with the NAK's status before the error flushes it. */
	if (dqp && r.responder_error)
		pvo_qp_set_error(dqp, r.responder_event, false);
	pvo_prof_end(len);
	return true;
}

static void local_reset_qp(struct pvo_qp *qp)
{
	qp->route.resync = false;
}

/* A migrated requester resends what its source may have sent. */
static bool local_load_qp(struct pvo_qp *qp, const struct pvo_st_qp *rec,
			  struct pvo_st_loader *l)
{
	(void)rec;
	(void)l;
	qp->route.resync = qp->type == PVO_QPT_RC;
	return true;
}

const struct pvo_transport_ops pvo_transport_local = {
	.name = "local",
	.send = local_send,
	.send_mcast = local_send_mcast,
	.reset_qp = local_reset_qp,
	.load_qp = local_load_qp,
};
