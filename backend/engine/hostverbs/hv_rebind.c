// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Rebinding the connections of a host-verbs VM that moved, or that a
 * failed migration stopped (docs/migration.md, "Re-creating at the
 * destination, and rebinding each peer"). An RC / UC QP's destination is
 * set only on the way to RTR, and a fresh responder cannot resume inside
 * a message, so both ends make their host QPs again in two round trips:
 *
 *   moved end  OFFER  its new host QPN, where its responder stood
 *   peer end   ANSWER its host QPN, where its responder stood, where
 *                     its requester restarts (replay_plan.h: what the
 *                     moved end's responder executed completes)
 *   moved end  READY  its requester's restart (the same plan); its host
 *                     QP runs, its receives posted, its sends held
 *   peer end   GO     its host QP runs at the moved one's new number
 *   moved end         sends
 *
 * An end whose requester cannot restart where the other's responder
 * stood (replay_plan.h), or whose host QP cannot be made again, says
 * END instead of its answer or ready: the other end's connection ends
 * at once, as at give_up, not after its wait.
 *
 * Each step is taken once per move (generation): a repeated message
 * gets the reply it had. An end that waits for the other's next step
 * longer than its requester would wait for an ACK gives up: the other
 * end is stopped, gone or was never told, and the connection ends as it
 * would if the peer had vanished. The messages ride the overlay's
 * announcement channel (transport/overlay/moves.c), which calls these
 * in the thread of the VM's tenant.
 */
#include <arpa/inet.h>
#include <glib.h>

#include "hv.h"
#include "log.h"
#include "qp.h"
#include "timer.h"
#include "vm.h"

/* The VM's RC / UC host QP qpn, connected to QP peer_qpn of the VM at
 * peer_ip, or NULL. */
static struct pvo_qp *conn_qp(struct pvo_vm *vm, uint32_t qpn, uint32_t peer_ip,
			      uint32_t peer_qpn)
{
	struct pvo_qp *qp = pvo_qp_by_qpn(vm, qpn);

	if (!qp || !to_hv_qp(qp) ||
	    (qp->type != PVO_QPT_RC && qp->type != PVO_QPT_UC) ||
	    qp->attr.dest_qpn != peer_qpn ||
	    pvo_hv_gid_ip(qp->attr.path.dgid) != peer_ip)
		return NULL;
	return qp;
}

/* How long an end waits for the other's next step: as long as its
 * requester would retry an unanswered packet (RC), at least the span of
 * the offer's repeats and a margin. */
static uint64_t give_up_usec(const struct pvo_qp *qp)
{
	uint64_t t = 0;

	if (qp->type == PVO_QPT_RC)
		t = pvo_ack_timeout_usec(qp->attr.timeout) *
		    (qp->attr.retry_cnt + 1u);
	return MAX(t, HV_RB_GIVE_UP_MIN_USEC);
}

/* Plans the QP's requester against the other end's responder at rq_psn
 * and completes what that one executed: the restart PSN in *restart,
 * false (the QP in error, logged) if the connection cannot go on. */
static bool replay(struct pvo_qp *qp, uint32_t rq_psn, uint32_t *restart)
{
	struct pvo_replay_plan p;
	struct pvo_replay_wqe *e;
	uint32_t n, next;
	bool ok;

	e = pvo_hv_sq_pending(qp, qp->attr.sq_psn, &n, &next);
	ok = pvo_replay_plan(e, n, next, rq_psn, &p);
	g_free(e);
	if (!ok) {
		pvo_vm_warn(qp->vm,
			    "hostverbs: QP 0x%x: the peer's responder is at "
			    "PSN 0x%x, outside what this QP sent: its "
			    "connection cannot be rebound",
			    qp->qpn, rq_psn);
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		return false;
	}
	pvo_hv_sq_complete_oldest(qp, p.done, p.fail_status);
	if (p.fail_status) {
		pvo_vm_warn(qp->vm,
			    "hostverbs: QP 0x%x: a READ or atomic whose "
			    "answer the move lost cannot run again: the "
			    "connection ends (docs/migration.md)",
			    qp->qpn);
		return false;
	}
	*restart = p.restart_psn;
	return true;
}

/* The host QP runs again at the other end's host QP dest, with what
 * the guest posted past its consumer indices. */
static bool rejoin(struct pvo_qp *qp, uint32_t dest, uint32_t rq_psn,
		   uint32_t sq_psn)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	/* the old host QP's flushes a device made after the stop are not
	 * completions either */
	pvo_hv_qp_poll(qp);
	h->frozen = false;
	h->stuck = 0;
	h->sq_posted = qp->sq_cons;
	h->rq_posted = qp->rq_cons;
	h->held_posted = false;
	if (pvo_hv_qp_reconnect(qp, dest, rq_psn, sq_psn)) {
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		return false;
	}
	return true;
}

/* stop(): the connection cannot go on (logged, the QP in error) */
#define NO_PSN UINT32_MAX

/* The peer end stops its host QP: what completed reaches the guest, the
 * flushes do not; its responder's next PSN. A connection in software
 * (the moved VM was served here) goes onto its host QP from where the
 * software engine stands, its responder's PSN the software's. */
static uint32_t stop(struct pvo_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct ibv_qp_init_attr init;
	struct pvo_hv_qp *h = to_hv_qp(qp);

	if (qp->engine != &pvo_engine_hostverbs)
		return pvo_hv_qp_adopt(qp) ? qp->attr.rq_psn & PVO_QPN_MAX
					   : NO_PSN;
	h->frozen = true;
	ibv_modify_qp(h->qp, &a, IBV_QP_STATE);
	pvo_hv_qp_poll(qp);
	if (ibv_query_qp(h->qp, &a, IBV_QP_RQ_PSN, &init))
		return qp->attr.rq_psn;
	return a.rq_psn & PVO_QPN_MAX;
}

/* The connection ends as if the peer had vanished: the oldest send of
 * an RC QP completes with RETRY_EXC_ERR (what an application sees then),
 * the rest flush; with no send to carry the error, the QP's
 * IBV_EVENT_QP_FATAL tells it. */
static void end_conn(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	uint32_t n = 0, next;
	struct pvo_replay_wqe *e;

	pvo_hv_rebind_cancel(qp);
	/* the host QP's flushes are not completions: the guest's WQEs
	 * flush below, each once */
	h->frozen = true;
	ibv_modify_qp(h->qp, &a, IBV_QP_STATE);
	pvo_hv_qp_poll(qp);
	h->frozen = false;
	h->hold = false;
	h->rb_step = HV_RB_ENDED;
	e = pvo_hv_sq_pending(qp, qp->attr.sq_psn, &n, &next);
	g_free(e);
	if (qp->type == PVO_QPT_RC && n)
		pvo_hv_sq_complete_oldest(qp, 0, PVO_WC_RETRY_EXC_ERR);
	else
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
}

/* Where the QP's peer is, for the log. */
static const char *peer_str(const struct pvo_qp *qp, char *buf, size_t len)
{
	struct in_addr a = {pvo_hv_gid_ip(qp->attr.path.dgid)};

	return inet_ntop(AF_INET, &a, buf, len);
}

/* The wait for the other end ran out. */
static void give_up(void *opaque)
{
	struct pvo_qp *qp = opaque;
	struct pvo_hv_qp *h = to_hv_qp(qp);
	char ip[INET_ADDRSTRLEN];

	if (!h || h->rb_step == HV_RB_NONE || h->rb_step >= HV_RB_DONE ||
	    qp->state == PVO_QPS_ERR)
		return;
	pvo_vm_warn(qp->vm,
		    "hostverbs: QP 0x%x: its peer (QP 0x%x at %s) took no "
		    "step to rebind the connection after the move within "
		    "%u ms: the connection ends (is the peer's back-end "
		    "running, and does it share the tenant's migration key?)",
		    qp->qpn, qp->attr.dest_qpn, peer_str(qp, ip, sizeof(ip)),
		    (unsigned int)(give_up_usec(qp) / 1000));
	end_conn(qp);
}

/* The other end said END: it could not rebind the connection (its log
 * says why). */
static void ended(struct pvo_qp *qp, const struct pvo_conn_step *in)
{
	struct pvo_hv_qp *h = qp ? to_hv_qp(qp) : NULL;
	char ip[INET_ADDRSTRLEN];

	if (!h || h->rb_gen != in->gen || h->rb_step == HV_RB_NONE ||
	    h->rb_step >= HV_RB_DONE || qp->state == PVO_QPS_ERR)
		return;
	pvo_vm_warn(qp->vm,
		    "hostverbs: QP 0x%x: its peer (QP 0x%x at %s) could not "
		    "rebind the connection after the move (its back-end's "
		    "log says why): the connection ends",
		    qp->qpn, qp->attr.dest_qpn, peer_str(qp, ip, sizeof(ip)));
	end_conn(qp);
}

void pvo_hv_rebind_wait(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	if (!h->rb_timer.fn)
		pvo_timer_init(&h->rb_timer, give_up, qp);
	pvo_timer_arm(&h->rb_timer, give_up_usec(qp));
}

void pvo_hv_rebind_cancel(struct pvo_qp *qp)
{
	pvo_timer_cancel(&to_hv_qp(qp)->rb_timer);
}

static void reply(const struct pvo_conn_step *in, enum pvo_conn_kind kind,
		  uint32_t psn, uint32_t psn2, struct pvo_conn_step *out)
{
	*out = *in;
	out->kind = kind;
	out->host_qpn = 0;
	out->psn = psn;
	out->psn2 = psn2;
}

/* This end cannot rebind the connection (the QP in error, logged):
 * the other end is told at once, and again if it repeats its step. */
static void cannot(struct pvo_qp *qp, const struct pvo_conn_step *in,
		   enum pvo_conn_kind end, struct pvo_conn_step *out)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	pvo_hv_rebind_cancel(qp);
	h->rb_gen = in->gen;
	h->rb_step = HV_RB_ENDED;
	h->hold = false;
	h->frozen = false;
	reply(in, end, 0, 0, out);
}

/* Peer end, OFFER: vm is the peer's. */
static void offered(struct pvo_vm *vm, const struct pvo_conn_step *in,
		    struct pvo_conn_step *out)
{
	struct pvo_qp *qp = conn_qp(vm, in->peer_qpn, in->vm_ip, in->qpn);
	struct pvo_hv_qp *h = qp ? to_hv_qp(qp) : NULL;
	uint32_t rq, restart;

	if (!h || h->rb_gen > in->gen)
		return;
	if (h->rb_gen == in->gen && h->rb_step == HV_RB_ENDED) {
		reply(in, PVO_CONN_END_BY_PEER, 0, 0, out);
		return;
	}
	if (qp->state == PVO_QPS_ERR)
		return;
	if (h->rb_gen == in->gen && h->rb_step >= HV_RB_ANSWERED) {
		reply(in, PVO_CONN_ANSWER, h->rb_psn, h->rb_psn2, out);
		out->host_qpn = h->host_qpn;
		return;
	}
	rq = stop(qp);
	if (rq == NO_PSN || !replay(qp, in->psn, &restart)) {
		cannot(qp, in, PVO_CONN_END_BY_PEER, out);
		return;
	}
	h->rb_gen = in->gen;
	h->rb_step = HV_RB_ANSWERED;
	h->rb_psn = rq;
	h->rb_psn2 = restart;
	h->rb_host_qpn = in->host_qpn;
	pvo_hv_rebind_wait(qp);
	reply(in, PVO_CONN_ANSWER, rq, restart, out);
	out->host_qpn = h->host_qpn;
}

/* Moved end, ANSWER: vm is the moved one. */
static void answered(struct pvo_vm *vm, const struct pvo_conn_step *in,
		     struct pvo_conn_step *out)
{
	struct pvo_qp *qp = conn_qp(vm, in->qpn, in->peer_ip, in->peer_qpn);
	struct pvo_hv_qp *h = qp ? to_hv_qp(qp) : NULL;
	uint32_t restart, dest;

	if (!h || h->rb_gen != in->gen)
		return;
	if (h->rb_step == HV_RB_READY) {
		reply(in, PVO_CONN_READY, h->rb_psn, 0, out);
		return;
	}
	if (h->rb_step == HV_RB_ENDED) {
		reply(in, PVO_CONN_END_BY_MOVED, 0, 0, out);
		return;
	}
	if (h->rb_step != HV_RB_OFFERED)
		return;
	if (!replay(qp, in->psn, &restart)) {
		cannot(qp, in, PVO_CONN_END_BY_MOVED, out);
		return;
	}
	/* the peer's host QP, as the answer names it (the peer may have
	 * moved before, and may be served here now) */
	dest = in->host_qpn ? in->host_qpn
			    : pvo_hv_peer_host(qp, in->peer_ip, PVO_ALIAS_QPN,
					       in->peer_qpn);
	h->hold = true;
	if (!rejoin(qp, dest, in->psn2, restart)) {
		cannot(qp, in, PVO_CONN_END_BY_MOVED, out);
		return;
	}
	h->rb_step = HV_RB_READY;
	h->rb_psn = restart;
	pvo_hv_rebind_wait(qp);
	qp->engine->doorbell(qp); /* its receives */
	reply(in, PVO_CONN_READY, restart, 0, out);
}

/* Peer end, READY. */
static void readied(struct pvo_vm *vm, const struct pvo_conn_step *in,
		    struct pvo_conn_step *out)
{
	struct pvo_qp *qp = conn_qp(vm, in->peer_qpn, in->vm_ip, in->qpn);
	struct pvo_hv_qp *h = qp ? to_hv_qp(qp) : NULL;

	if (!h || h->rb_gen != in->gen)
		return;
	if (h->rb_step == HV_RB_DONE) {
		reply(in, PVO_CONN_GO, 0, 0, out);
		return;
	}
	if (h->rb_step == HV_RB_ENDED) {
		reply(in, PVO_CONN_END_BY_PEER, 0, 0, out);
		return;
	}
	if (h->rb_step != HV_RB_ANSWERED)
		return;
	if (!rejoin(qp, h->rb_host_qpn, in->psn, h->rb_psn2)) {
		cannot(qp, in, PVO_CONN_END_BY_PEER, out);
		return;
	}
	h->rb_step = HV_RB_DONE;
	pvo_hv_rebind_cancel(qp);
	qp->engine->doorbell(qp);
	pvo_info(pvo_vm_name(vm),
		 "QP 0x%x follows its peer's move: rebound to host QP 0x%x",
		 qp->qpn, h->rb_host_qpn);
	reply(in, PVO_CONN_GO, 0, 0, out);
}

/* Moved end, GO: its sends go. */
static void gone(struct pvo_vm *vm, const struct pvo_conn_step *in)
{
	struct pvo_qp *qp = conn_qp(vm, in->qpn, in->peer_ip, in->peer_qpn);
	struct pvo_hv_qp *h = qp ? to_hv_qp(qp) : NULL;

	if (!h || h->rb_gen != in->gen || h->rb_step != HV_RB_READY)
		return;
	h->rb_step = HV_RB_DONE;
	h->hold = false;
	pvo_hv_rebind_cancel(qp);
	qp->engine->doorbell(qp);
	pvo_info(pvo_vm_name(vm), "QP 0x%x rebound to its peer after the move",
		 qp->qpn);
}

void pvo_hv_conn_step(struct pvo_vm *vm, const struct pvo_conn_step *in,
		      struct pvo_conn_step *out)
{
	memset(out, 0, sizeof(*out));
	switch (in->kind) {
	case PVO_CONN_OFFER:
		offered(vm, in, out);
		break;
	case PVO_CONN_ANSWER:
		answered(vm, in, out);
		break;
	case PVO_CONN_READY:
		readied(vm, in, out);
		break;
	case PVO_CONN_GO:
		gone(vm, in);
		break;
	case PVO_CONN_END_BY_PEER: /* to the moved end */
		ended(conn_qp(vm, in->qpn, in->peer_ip, in->peer_qpn), in);
		break;
	case PVO_CONN_END_BY_MOVED:
		ended(conn_qp(vm, in->peer_qpn, in->vm_ip, in->qpn), in);
		break;
	}
}
