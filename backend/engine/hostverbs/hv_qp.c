// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host QPs of host-verbs VMs: creation, modify, async events (the QP
 * engine that runs guest work on them is hv_post.c).
 *
 * A guest RC / UC / UD QP gets a host QP when it is created, so its QPN
 * is the host QP's number, the one remote peers address. An RC / UC host
 * QP stays in RESET until the guest's INIT -> RTR names the destination:
 * a GID this back-end serves keeps the software engine (local transport),
 * any other takes the host QP through INIT and RTR, and from then on
 * guest WQEs are posted on it as the doorbell rings. A UD host QP follows
 * the guest's from INIT on and carries all its work: its receives are the
 * host's, so every datagram goes through the host device, to this
 * back-end's VMs too (the device loops them back); the guest AH of a send
 * becomes a host AH on first use, checked as a connection's destination.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <glib.h>

#include "ah.h"
#include "cq.h"
#include "device.h"
#include "dma.h"
#include "engine.h"
#include "event.h"
#include "grh.h"
#include "hv.h"
#include "log.h"
#include "mr.h"
#include "qp.h"
#include "srq.h"
#include "transport.h"
#include "vm.h"

struct pvo_qp *pvo_hv_qp_by_host_qpn(struct pvo_hv_device *d, uint32_t qpn)
{
	return g_hash_table_lookup(d->by_qpn, GUINT_TO_POINTER(qpn));
}

uint32_t pvo_hv_qp_resp_flags(const struct pvo_qp *qp)
{
	return to_hv_qp(qp) ? PVO_QP_RESP_F_RQ_DOORBELL : 0;
}

static const char *type_name(unsigned int type)
{
	return type == PVO_QPT_RC ? "RC" : type == PVO_QPT_UC ? "UC" : "UD";
}

/* The host QP's state, or -1 if the device does not say. */
int pvo_hv_host_state(struct pvo_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(to_hv_qp(qp)->qp, &a, IBV_QP_STATE, &init))
		return -1;
	return a.qp_state;
}

/* ---- path MTU ---- */

unsigned int pvo_hv_qp_path_mtu_max(const struct pvo_qp *qp)
{
	unsigned int tenant = pvo_ib_mtu_for(qp->vm->cfg->tenant->mtu);

	if (!to_hv_qp(qp))
		return 0;
	/* the guest's port says the tenant's: no path beyond it either */
	return MIN(to_hv_qp(qp)->dev->port_attr.active_mtu, tenant);
}

static uint8_t path_mtu(struct pvo_qp *qp, uint32_t guest)
{
	unsigned int port = pvo_hv_qp_path_mtu_max(qp);

	return guest && guest < port ? guest : port;
}

/* ---- creation ---- */

static void host_qp_destroy(struct ibv_qp *q)
{
	if (ibv_destroy_qp(q))
		pvo_log(NULL, "hostverbs: ibv_destroy_qp 0x%x: %s", q->qp_num,
			g_strerror(errno));
}

enum pvo_status pvo_hv_qp_create(struct pvo_qp *qp)
{
	struct pvo_vm *vm = qp->vm;
	struct pvo_hv_device *d = pvo_hv_dev(vm->cfg->tenant);
	struct ibv_qp_init_attr ia = {0};
	struct ibv_qp *stale[4];
	struct pvo_hv_qp *h;
	unsigned int nstale = 0, i;
	struct ibv_pd *pd;
	uint32_t rq_need;

	/* what stays in software (hostverbs.h) */
	if (!d || qp->ctx == PVO_CTX_KERNEL ||
	    (qp->type != PVO_QPT_RC && qp->type != PVO_QPT_UC &&
	     qp->type != PVO_QPT_UD) ||
	    (qp->srq && (!to_hv_srq(qp->srq) || qp->type == PVO_QPT_UD)))
		return PVO_STATUS_OK;
	/* its receive CQ takes the completions of its RQ or of any WQE of
	 * its SRQ */
	rq_need = qp->srq ? to_hv_srq(qp->srq)->slots : qp->rq.entries;
	pd = pvo_hv_pd(vm, qp->pd);
	ia.send_cq = pvo_hv_cq(vm, qp->scq);
	ia.recv_cq = pvo_hv_cq(vm, qp->rcq);
	if (!pd || !ia.send_cq || !ia.recv_cq)
		return PVO_STATUS_ENOSPC;
	ia.qp_type = qp->type == PVO_QPT_RC   ? IBV_QPT_RC
		     : qp->type == PVO_QPT_UC ? IBV_QPT_UC
					      : IBV_QPT_UD;
	ia.cap.max_send_wr = qp->sq.entries;
	ia.cap.max_send_sge = qp->max_send_sge ? qp->max_send_sge : 1;
	ia.cap.max_inline_data = qp->max_inline;
	if (qp->srq) {
		ia.srq = to_hv_srq(qp->srq)->srq;
	} else {
		ia.cap.max_recv_wr = qp->rq.entries;
		ia.cap.max_recv_sge = qp->max_recv_sge ? qp->max_recv_sge : 1;
	}
	if (!pvo_hv_cq_grow(vm, qp->scq, qp->sq.entries))
		return PVO_STATUS_ENOSPC;
	if (!pvo_hv_cq_grow(vm, qp->rcq, rq_need)) {
		to_hv_cq(qp->scq)->need -= qp->sq.entries;
		return PVO_STATUS_ENOSPC;
	}
	h = g_new0(struct pvo_hv_qp, 1);
	for (;;) {
		h->qp = ibv_create_qp(pd, &ia);
		/* a number a software QP of this VM has: take another */
		if (!h->qp || !pvo_qp_by_qpn(vm, h->qp->qp_num) ||
		    nstale == G_N_ELEMENTS(stale))
			break;
		stale[nstale++] = h->qp;
	}
	for (i = 0; i < nstale; i++)
		host_qp_destroy(stale[i]);
	if (!h->qp || pvo_qp_by_qpn(vm, h->qp->qp_num)) {
		pvo_vm_warn(vm,
			    "hostverbs: %s: %s QP (%u send, %u receive WQEs): "
			    "%s",
			    d->name, type_name(qp->type), qp->sq.entries,
			    qp->rq.entries,
			    h->qp ? "no free QP number" : g_strerror(errno));
		if (h->qp)
			host_qp_destroy(h->qp);
		g_free(h);
		to_hv_cq(qp->scq)->need -= qp->sq.entries;
		to_hv_cq(qp->rcq)->need -= rq_need;
		return PVO_STATUS_ENOSPC;
	}
	h->sq = g_new0(struct pvo_hv_wqe, qp->sq.entries);
	h->rq = g_new0(struct pvo_hv_wqe, qp->rq.entries);
	/* the software engine's create loaded the guest's counters */
	h->sq_posted = qp->sq_cons;
	h->rq_posted = qp->rq_cons;
	h->dev = d;
	h->rcq_need = rq_need;
	qp->engine_part = h;
	/* a migrated QP's path came with it: its send WQEs' PSNs count at
	 * it from the rebind's plan on (hv_rebind.c) */
	if (qp->attr.path_mtu)
		h->mtu = 128u << path_mtu(qp, qp->attr.path_mtu);
	pvo_qp_update_mtu(qp);
	h->host_qpn = h->qp->qp_num;
	qp->qpn = h->host_qpn;
	qp->engine = &pvo_engine_hostverbs;
	g_hash_table_insert(d->by_qpn, GUINT_TO_POINTER(h->host_qpn), qp);
	return PVO_STATUS_OK;
}

void pvo_hv_qp_free(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	if (!h)
		return;
	pvo_timer_destroy(&h->rb_timer);
	host_qp_destroy(h->qp);
	/* Its completions still in CQs that stay are taken now, while it
	 * still has its number, and write no CQE (h->gone): a new host QP
	 * may soon get the same number, and the WQEs of an SRQ it took are
	 * consumed. A VM that went frees its CQs next. */
	h->gone = true;
	if (qp->vm->connected) {
		pvo_hv_qp_poll(qp);
	}
	g_hash_table_remove(h->dev->by_qpn, GUINT_TO_POINTER(h->host_qpn));
	to_hv_cq(qp->scq)->need -= qp->sq.entries;
	to_hv_cq(qp->rcq)->need -= h->rcq_need;
	g_free(h->sq);
	g_free(h->rq);
	g_free(h);
	qp->engine_part = NULL;
}

/* ---- modify ---- */

static enum pvo_status host_modify(struct pvo_qp *qp, struct ibv_qp_attr *a,
				   int mask, const char *what)
{
	int err = ibv_modify_qp(to_hv_qp(qp)->qp, a, mask);

	if (!err)
		return PVO_STATUS_OK;
	pvo_vm_warn(qp->vm, "hostverbs: %s QP 0x%x to %s: %s", hv_devname(qp),
		    qp->qpn, what, g_strerror(err));
	errno = err; /* for pvo_hv_resolve_end */
	return err == ENOMEM ? PVO_STATUS_ENOSPC : PVO_STATUS_EINVAL;
}

/* The guest's path as the host's address vector, once the tenant allows
 * the destination and the source GID is a host GID of its netdev. */
static enum pvo_status host_av(struct pvo_qp *qp, const struct pvo_path *path,
			       struct ibv_ah_attr *ah)
{
	char *why = NULL;
	int sgid;

	if (!pvo_hv_dgid_allowed(qp->vm, path->dgid, &why) ||
	    (sgid = pvo_hv_sgid_index(qp->vm, path->sgid_index, &why)) < 0) {
		pvo_vm_warn(qp->vm, "hostverbs: QP 0x%x refused: %s", qp->qpn,
			    why);
		g_free(why);
		return PVO_STATUS_EPERM;
	}
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, path->dgid, 16);
	ah->grh.sgid_index = (uint8_t)sgid;
	ah->grh.hop_limit = path->hop_limit;
	ah->grh.traffic_class = path->traffic_class;
	ah->grh.flow_label = path->flow_label;
	ah->sl = path->sl;
	ah->port_num = to_hv_qp(qp)->dev->port;
	return PVO_STATUS_OK;
}

/* The host QP through INIT to RTR with the guest's attributes; the
 * destination checked against the tenant first. */
static enum pvo_status connect_host(struct pvo_qp *qp, uint32_t mask,
				    const struct pvo_qp_attr *ga,
				    const struct pvo_path *path)
{
	struct ibv_qp_attr a = {0};
	struct ibv_ah_attr ah = {0};
	enum pvo_status st;
	bool waits;

	st = host_av(qp, path, &ah);
	if (!st)
		st = pvo_hv_resolve_begin(qp->vm, path->dgid, &waits);
	if (st)
		return st;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = to_hv_qp(qp)->dev->port;
	a.pkey_index = 0;
	a.qp_access_flags = (mask & PVO_QP_ACCESS_FLAGS)
				? le32toh(ga->qp_access_flags)
				: qp->attr.access;
	a.qp_access_flags &= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	if (qp->type == PVO_QPT_UC)
		a.qp_access_flags &= IBV_ACCESS_REMOTE_WRITE;
	st = host_modify(qp, &a,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS,
			 "INIT");
	if (st)
		return st;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = path_mtu(qp, le32toh(ga->path_mtu));
	to_hv_qp(qp)->mtu = 128u << a.path_mtu;
	to_hv_qp(qp)->peer_ip = pvo_hv_gid_ip(path->dgid);
	a.dest_qp_num = pvo_hv_peer_host(qp, to_hv_qp(qp)->peer_ip,
					 PVO_ALIAS_QPN,
					 le32toh(ga->dest_qp_num));
	a.rq_psn = le32toh(ga->rq_psn);
	a.ah_attr = ah;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN;
	if (qp->type == PVO_QPT_RC) {
		a.max_dest_rd_atomic = ga->max_dest_rd_atomic;
		a.min_rnr_timer = ga->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	st = host_modify(qp, &a, (int)mask, "RTR");
	if (st) {
		if (pvo_hv_resolve_end(qp->vm, path->dgid, waits, errno))
			st = PVO_STATUS_EHOSTUNREACH;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		ibv_modify_qp(to_hv_qp(qp)->qp, &a, IBV_QP_STATE);
	}
	return st;
}

/* A UD host QP to INIT with the guest's Q_Key: from then on it carries
 * the guest QP's work. */
static enum pvo_status ud_init(struct pvo_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = to_hv_qp(qp)->dev->port;
	a.qkey = qkey;
	return host_modify(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_QKEY,
			   "INIT");
}

static void destroy_ah(struct ibv_ah *ah)
{
	if (ah && ibv_destroy_ah(ah))
		pvo_log(NULL, "hostverbs: ibv_destroy_ah: %s",
			g_strerror(errno));
}

/*
 * The host AH of a guest AH for a send of qp (same PD), made on first use
 * with the destination and source GID checked as a connection's
 * (host_av). NULL if that fails: the AH is then refused for good (logged
 * once), so a guest cannot make the back-end ask the host again and
 * again for an address nobody answers. Made again once the destination
 * VM has moved: the link-layer address the host resolved for it (its
 * old host's, or a loopback) no longer reaches it.
 */
struct ibv_ah *pvo_hv_host_ah(struct pvo_qp *qp, struct pvo_ah *ah)
{
	struct ibv_ah_attr a = {0};
	struct ibv_pd *pd = to_hv_pd(qp->pd); /* the host QP's */
	struct pvo_hv_ah *h = to_hv_ah(ah);
	uint64_t gen = pvo_hv_peer_gen(qp, pvo_hv_gid_ip(ah->path.dgid));
	bool waits;

	if (h && h->gen == gen)
		return h->ah;
	if (h) {
		destroy_ah(h->old);
		h->old = h->ah;
		h->ah = NULL;
	} else {
		h = g_new0(struct pvo_hv_ah, 1);
		ah->engine_part = h;
	}
	h->gen = gen;
	if (!host_av(qp, &ah->path, &a) &&
	    !pvo_hv_resolve_begin(qp->vm, ah->path.dgid, &waits)) {
		h->ah = ibv_create_ah(pd, &a);
		if (!h->ah) {
			int err = errno;

			pvo_vm_warn(qp->vm,
				    "hostverbs: %s QP 0x%x: AH 0x%x: "
				    "ibv_create_ah: %s",
				    hv_devname(qp), qp->qpn, ah->handle,
				    g_strerror(err));
			pvo_hv_resolve_end(qp->vm, ah->path.dgid, waits, err);
		}
	}
	return h->ah;
}

void pvo_hv_ah_free(struct pvo_ah *ah)
{
	struct pvo_hv_ah *h = to_hv_ah(ah);

	if (!h)
		return;
	destroy_ah(h->ah);
	destroy_ah(h->old);
	g_free(h);
	ah->engine_part = NULL;
}

/* A modify of an active host QP: the guest's attributes, as they are
 * the host's (PVO_QP_* are IBV_QP_* bits, PVO_QPS_* IBV_QPS_*). */
static enum pvo_status pass_modify(struct pvo_qp *qp, unsigned int next,
				   uint32_t mask, const struct pvo_qp_attr *ga,
				   const struct pvo_path *path)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};
	struct ibv_qp_attr a = {0};
	enum pvo_status st;

	a.qp_state = next;
	a.qp_access_flags = le32toh(ga->qp_access_flags);
	a.sq_psn = le32toh(ga->sq_psn);
	a.timeout = ga->timeout;
	a.retry_cnt = ga->retry_cnt;
	a.rnr_retry = ga->rnr_retry;
	a.min_rnr_timer = ga->min_rnr_timer;
	a.max_rd_atomic = ga->max_rd_atomic;
	a.max_dest_rd_atomic = ga->max_dest_rd_atomic;
	a.en_sqd_async_notify = ga->en_sqd_async_notify;
	a.path_mtu = path_mtu(qp, le32toh(ga->path_mtu));
	a.qkey = le32toh(ga->qkey);
	if (mask & PVO_QP_AV) {
		st = host_av(qp, path, &a.ah_attr);
		if (st)
			return st;
	}
	mask &= PVO_QP_ACCESS_FLAGS | PVO_QP_AV | PVO_QP_PATH_MTU |
		PVO_QP_TIMEOUT | PVO_QP_RETRY_CNT | PVO_QP_RNR_RETRY |
		PVO_QP_SQ_PSN | PVO_QP_MAX_QP_RD_ATOMIC | PVO_QP_MIN_RNR_TIMER |
		PVO_QP_MAX_DEST_RD_ATOMIC | PVO_QP_EN_SQD_ASYNC_NOTIFY |
		PVO_QP_CUR_STATE | PVO_QP_QKEY;
	/* a UD guest QP may be in SQE alone (a send the back-end refused):
	 * the host knows its own state */
	if (qp->type == PVO_QPT_UD)
		mask &= ~PVO_QP_CUR_STATE;
	if (mask & PVO_QP_CUR_STATE)
		a.cur_qp_state = qp->state;
	st = host_modify(qp, &a, (int)(mask | IBV_QP_STATE),
			 next < G_N_ELEMENTS(names) ? names[next] : "?");
	if (st)
		return st;
	if (mask & PVO_QP_SQ_PSN)
		to_hv_qp(qp)->next_psn = a.sq_psn & PVO_QPN_MAX;
	if (mask & PVO_QP_PATH_MTU)
		to_hv_qp(qp)->mtu = 128u << a.path_mtu;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_hv_qp_modify(struct pvo_qp *qp, unsigned int next,
				 uint32_t mask, const struct pvo_qp_attr *a,
				 const struct pvo_path *path)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};
	enum pvo_status st;

	if (!h) {
		/* a software QP on a host-verbs SRQ (UD): receives from its
		 * INIT on */
		if (qp->srq && qp->state == PVO_QPS_RESET &&
		    next == PVO_QPS_INIT && !pvo_hv_srq_claim(qp, false))
			return PVO_STATUS_EINVAL;
		return PVO_STATUS_OK;
	}
	if (next == PVO_QPS_RESET) {
		if (h->active && ibv_modify_qp(h->qp, &r, IBV_QP_STATE))
			return PVO_STATUS_EINVAL;
		h->active = false;
		h->next_psn = 0; /* as the host QP's, until RTS sets it */
		/* the next RTR picks the engine again */
		qp->engine = &pvo_engine_hostverbs;
		return PVO_STATUS_OK;
	}
	if (qp->type == PVO_QPT_UD && qp->state == PVO_QPS_RESET &&
	    next == PVO_QPS_INIT) {
		st = ud_init(qp, le32toh(a->qkey));
		if (!st)
			h->active = true;
		return st;
	}
	if (qp->type != PVO_QPT_UD && qp->state == PVO_QPS_INIT &&
	    next == PVO_QPS_RTR) {
		bool local =
		    pvo_served_by_gid(qp->vm->cfg->tenant->vni, path->dgid);

		/* an SRQ serves host QPs or software ones (hostverbs.h) */
		if (qp->srq && to_hv_srq(qp->srq) &&
		    ((to_hv_srq(qp->srq)->mode == PVO_HV_SRQ_HOST && local) ||
		     (to_hv_srq(qp->srq)->mode == PVO_HV_SRQ_SW && !local))) {
			pvo_hv_srq_claim(qp, !local); /* logs why */
			return PVO_STATUS_EINVAL;
		}
		if (local) {
			/* same host: the local transport copies */
			pvo_hv_srq_claim(qp, false);
			qp->engine = &pvo_engine_sw;
			return PVO_STATUS_OK;
		}
		st = connect_host(qp, mask, a, path);
		if (!st) {
			h->active = true;
			/* the SRQ's waiting receives go to the host */
			pvo_hv_srq_claim(qp, true);
		}
		return st;
	}
	if (!h->active)
		return PVO_STATUS_OK;
	if (next == PVO_QPS_ERR) {
		r.qp_state = IBV_QPS_ERR;
		return ibv_modify_qp(h->qp, &r, IBV_QP_STATE)
			   ? PVO_STATUS_EINVAL
			   : PVO_STATUS_OK;
	}
	return pass_modify(qp, next, mask, a, path);
}

enum pvo_status pvo_hv_qp_rebuild(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	enum pvo_status st;

	h->active = false;
	if (qp->attr.path_mtu)
		h->mtu = 128u << path_mtu(qp, qp->attr.path_mtu);
	st = host_modify(qp, &a, IBV_QP_STATE, "RESET");
	if (st || qp->type != PVO_QPT_UD || qp->state == PVO_QPS_RESET)
		return st;
	st = ud_init(qp, qp->attr.qkey);
	if (st)
		return st;
	h->active = true;
	memset(&a, 0, sizeof(a));
	if (qp->state == PVO_QPS_INIT)
		return PVO_STATUS_OK;
	a.qp_state = IBV_QPS_RTR;
	st = host_modify(qp, &a, IBV_QP_STATE, "RTR");
	if (st || qp->state == PVO_QPS_RTR)
		return st;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = qp->attr.sq_psn & PVO_QPN_MAX;
	st = host_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
	if (!st)
		h->next_psn = a.sq_psn;
	return st;
}

enum pvo_status pvo_hv_qp_reconnect(struct pvo_qp *qp, uint32_t dest_qpn,
				    uint32_t rq_psn, uint32_t sq_psn)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	const struct pvo_qp_attrs *g = &qp->attr;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	enum pvo_status st;
	bool rc = qp->type == PVO_QPT_RC;
	int mask;

	h->active = false;
	h->peer_ip = pvo_hv_gid_ip(g->path.dgid);
	st = host_modify(qp, &a, IBV_QP_STATE, "RESET");
	if (!st) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = h->dev->port;
		a.qp_access_flags = g->access & (IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_READ |
						 IBV_ACCESS_REMOTE_ATOMIC);
		if (!rc)
			a.qp_access_flags &= IBV_ACCESS_REMOTE_WRITE;
		st = host_modify(qp, &a,
				 IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				 "INIT");
	}
	if (!st) {
		memset(&a, 0, sizeof(a));
		st = host_av(qp, &g->path, &a.ah_attr);
	}
	if (st)
		return st;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = path_mtu(qp, g->path_mtu);
	h->mtu = 128u << a.path_mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = g->max_dest_rd_atomic;
	a.min_rnr_timer = g->min_rnr_timer;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN;
	if (rc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	st = host_modify(qp, &a, mask, "RTR");
	if (st)
		return st;
	h->active = true;
	if (qp->state == PVO_QPS_RTR)
		return st;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = g->timeout;
	a.retry_cnt = g->retry_cnt;
	a.rnr_retry = g->rnr_retry;
	a.max_rd_atomic = g->max_rd_atomic;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	st = host_modify(qp, &a, mask, "RTS");
	if (!st) {
		h->next_psn = sq_psn;
		qp->attr.sq_psn = sq_psn;
	}
	return st;
}

bool pvo_hv_qp_adopt(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	if (qp->srq) {
		/* an SRQ serves host QPs or software ones: all its QPs go
		 * with this one, or none (the save checked it) */
		char *why =
		    pvo_hv_srq_unmovable(qp->vm, qp->srq, qp->attr.path.dgid);

		if (why) {
			pvo_vm_warn(qp->vm,
				    "hostverbs: %s QP 0x%x: its peer moved "
				    "away, but its SRQ 0x%x cannot go onto the "
				    "host device (%s): the connection ends",
				    qp->type == PVO_QPT_RC ? "RC" : "UC",
				    qp->qpn, qp->srq->handle, why);
			g_free(why);
			pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
			return false;
		}
		pvo_hv_srq_to_host(qp->vm, qp->srq);
	}
	pvo_sw_hand_over(qp);
	qp->engine = &pvo_engine_hostverbs;
	/* nothing goes to the host QP (in INIT) before the rebind makes
	 * it again and takes the rings from their consumers on
	 * (hv_rebind.c, rejoin); the software's PSNs count at its path
	 * MTU, which is the host QP's (pvo_hv_qp_path_mtu_max) */
	h->frozen = true;
	h->mtu = pvo_qp_mtu_bytes(qp);
	pvo_info(pvo_vm_name(qp->vm),
		 "QP 0x%x: its peer left this back-end: its connection goes "
		 "from software onto the host device",
		 qp->qpn);
	return true;
}

void pvo_hv_qp_sync_state(struct pvo_qp *qp)
{
	int st;

	/* active: the host QP carries the QP's work (not the software
	 * engine, for a same-host peer) */
	if (!to_hv_qp(qp) || !to_hv_qp(qp)->active || qp->state == PVO_QPS_ERR)
		return;
	/* the responder's errors move the host QP to error with no
	 * completion on this side */
	st = pvo_hv_host_state(qp);
	if (st == IBV_QPS_ERR)
		pvo_qp_set_error(qp, 0, false);
	else if (st == IBV_QPS_SQE && qp->state != PVO_QPS_SQE)
		pvo_qp_set_error(qp, 0, true);
}

void pvo_hv_qp_event(struct pvo_qp *qp, enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_COMM_EST:
		pvo_event_post(qp->vm, PVO_EV_COMM_EST, qp->handle);
		break;
	case IBV_EVENT_SQ_DRAINED:
		pvo_event_post(qp->vm, PVO_EV_SQ_DRAINED, qp->handle);
		break;
	case IBV_EVENT_QP_REQ_ERR:
		pvo_qp_set_error(qp, PVO_EV_QP_REQ_ERR, false);
		break;
	case IBV_EVENT_QP_ACCESS_ERR:
		pvo_qp_set_error(qp, PVO_EV_QP_ACCESS_ERR, false);
		break;
	default:
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		break;
	}
}

