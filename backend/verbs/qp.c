// SPDX-License-Identifier: GPL-2.0-or-later
/* Queue pairs; see qp.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "mcast.h"
#include "cq.h"
#include "device.h"
#include "engine.h"
#include "event.h"
#include "guest_mem.h"
#include "engine.h"
#include "mr.h"
#include "mw.h"
#include "transport.h"
#include "profile.h"
#include "qp.h"
#include "srq.h"
#include "vm.h"

/* ---- QP numbers ---- */

struct pvo_qp *pvo_qp_by_qpn(struct pvo_vm *vm, uint32_t qpn)
{
	if (!vm->qpn_map)
		return NULL;
	return g_hash_table_lookup(vm->qpn_map, GUINT_TO_POINTER(qpn));
}

/* Numbers are handed out round-robin so that a peer still talking to a
 * destroyed QP does not reach its successor right away. */
static uint32_t alloc_qpn(struct pvo_vm *vm)
{
	uint32_t qpn;

	do {
		if (vm->next_qpn < 2 || vm->next_qpn > PVO_QPN_MAX)
			vm->next_qpn = 2;
		qpn = vm->next_qpn++;
	} while (pvo_qp_by_qpn(vm, qpn));
	return qpn;
}

/* ---- creation ---- */

static enum pvo_status check_create(struct pvo_vm *vm, uint32_t ctx,
				    const struct pvo_cmd_create_qp *c)
{
	uint32_t sq_entries = le32toh(c->sq_entries);
	uint32_t rq_entries = le32toh(c->rq_entries);
	uint32_t max_send_sge = le32toh(c->max_send_sge);
	uint32_t max_recv_sge = le32toh(c->max_recv_sge);
	uint32_t max_inline = le32toh(c->max_inline_data);

	switch (c->qp_type) {
	case PVO_QPT_GSI:
		if (ctx != PVO_CTX_KERNEL)
			return PVO_STATUS_EPERM;
		if (vm->gsi_qp)
			return PVO_STATUS_EBUSY;
		if (c->srq)
			return PVO_STATUS_EINVAL;
		break;
	case PVO_QPT_RC:
	case PVO_QPT_UC:
	case PVO_QPT_UD:
		break;
	default:
		return PVO_STATUS_EINVAL;
	}
	if (c->sq_sig_all > 1 || max_send_sge > PVO_DEV_MAX_SGE ||
	    max_recv_sge > PVO_DEV_MAX_SGE || max_inline > PVO_DEV_MAX_INLINE)
		return PVO_STATUS_EINVAL;
	if (!pvo_is_pow2(sq_entries) || sq_entries > PVO_DEV_MAX_QP_WR ||
	    c->sq_wqe_shift != pvo_send_wqe_shift(max_send_sge, max_inline))
		return PVO_STATUS_EINVAL;
	if (c->srq) {
		if (rq_entries || c->rq.npages || c->rq.dir_gpa ||
		    c->rq.dir_pages)
			return PVO_STATUS_EINVAL;
	} else {
		if (!pvo_is_pow2(rq_entries) ||
		    rq_entries > PVO_DEV_MAX_QP_WR ||
		    c->rq_wqe_shift != pvo_recv_wqe_shift(max_recv_sge))
			return PVO_STATUS_EINVAL;
	}
	return PVO_STATUS_OK;
}

void pvo_qp_update_mtu(struct pvo_qp *qp)
{
	unsigned int port = pvo_ib_mtu_for(qp->vm->cfg->tenant->mtu);
	unsigned int e = qp->attr.path_mtu;

	if (qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI || !e || e > port)
		e = port;
	if (pvo_vm_eng_has(qp->vm, qp_path_mtu_max)) {
		port = qp->vm->eng->qp_path_mtu_max(qp);
		if (port && e > port)
			e = port;
	}
	qp->mtu_bytes = 128u << e;
}

enum pvo_status pvo_cmd_create_qp(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp)
{
	const struct pvo_cmd_create_qp *c = req;
	struct pvo_resp_create_qp *r = resp;
	struct pvo_ucontext *uctx = pvo_vm_ctx(vm, ctx);
	struct pvo_srq *srq = NULL;
	struct pvo_cq *scq, *rcq;
	enum pvo_status st;
	struct pvo_pd *pd;
	struct pvo_qp *qp;

	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	scq = pvo_table_get(&vm->cqs, le32toh(c->send_cq), ctx);
	rcq = pvo_table_get(&vm->cqs, le32toh(c->recv_cq), ctx);
	if (c->srq)
		srq = pvo_table_get(&vm->srqs, le32toh(c->srq), ctx);
	if (!uctx || !pd || !scq || !rcq || (c->srq && !srq))
		return PVO_STATUS_ENOENT;
	st = check_create(vm, ctx, c);
	if (st)
		return st;
	if (vm->qps.count >= vm->qps.limit) {
		pvo_vm_warn(vm, "QP quota reached (max-qp = %u)",
			    vm->cfg->quota.max_qp);
		return PVO_STATUS_ENOSPC;
	}
	/* Each QP of a context may sit once in its doorbell record ring. */
	if (uctx->nqps >= PVO_DB_RING_ENTRIES)
		return PVO_STATUS_ENOSPC;

	qp = g_new0(struct pvo_qp, 1);
	st = pvo_ring_init(&qp->sq, vm, &c->sq, le32toh(c->sq_entries),
			   PVO_DEV_MAX_QP_WR, c->sq_wqe_shift);
	if (!st && !srq)
		st = pvo_ring_init(&qp->rq, vm, &c->rq, le32toh(c->rq_entries),
				   PVO_DEV_MAX_QP_WR, c->rq_wqe_shift);
	if (st)
		goto free_rings;
	qp->handle = pvo_table_add(&vm->qps, qp, ctx);
	if (!qp->handle) {
		st = PVO_STATUS_ENOSPC;
		goto free_rings;
	}
	qp->vm = vm;
	qp->ctx = ctx;
	qp->type = c->qp_type;
	qp->state = PVO_QPS_RESET;
	qp->sq_sig_all = c->sq_sig_all;
	qp->pd = pd;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->srq = srq;
	qp->max_send_sge = le32toh(c->max_send_sge);
	qp->max_recv_sge = le32toh(c->max_recv_sge);
	qp->max_inline = le32toh(c->max_inline_data);
	pvo_qp_update_mtu(qp);
	qp->engine = &pvo_engine_sw;
	qp->engine->create(qp);
	/* the VM's engine may take it (host verbs: a host QP, whose number
	 * this QP takes) */
	if (pvo_vm_eng_has(vm, qp_create)) {
		st = vm->eng->qp_create(qp);
		if (st)
			goto destroy;
	}
	if (qp->type == PVO_QPT_GSI) {
		qp->qpn = PVO_QPN_GSI;
		vm->gsi_qp = qp;
	} else if (!qp->qpn) {
		qp->qpn = alloc_qpn(vm);
	}
	g_hash_table_insert(vm->qpn_map, GUINT_TO_POINTER(qp->qpn), qp);
	pd->refcnt++;
	scq->refcnt++;
	rcq->refcnt++;
	if (srq)
		srq->refcnt++;
	uctx->nqps++;
	r->qp = htole32(qp->handle);
	r->qpn = htole32(qp->qpn);
	if (pvo_vm_eng_has(vm, qp_resp_flags))
		r->flags = htole32(vm->eng->qp_resp_flags(qp));
	return PVO_STATUS_OK;

destroy:
	qp->engine->destroy(qp);
	pvo_table_remove(&vm->qps, qp->handle, ctx);
free_rings:
	pvo_ring_fini(&qp->sq);
	pvo_ring_fini(&qp->rq);
	g_free(qp);
	return st;
}

void pvo_qp_free(struct pvo_vm *vm, struct pvo_qp *qp)
{
	struct pvo_ucontext *uctx = pvo_vm_ctx(vm, qp->ctx);

	/* Unreachable first: peers look QPs up by number on every message. */
	if (pvo_qp_by_qpn(vm, qp->qpn) == qp)
		g_hash_table_remove(vm->qpn_map, GUINT_TO_POINTER(qp->qpn));
	if (vm->gsi_qp == qp)
		vm->gsi_qp = NULL;
	pvo_mcast_forget_qp(qp);
	if (vm->mws.count)
		pvo_mw_forget_qp(vm, qp->qpn);
	qp->engine->destroy(qp);
	if (pvo_vm_eng_has(vm, qp_free))
		vm->eng->qp_free(qp);
	pvo_transport_forget_qp(qp);
	pvo_event_purge(vm, PVO_EVOBJ_QP, qp->handle);
	pvo_table_remove(&vm->qps, qp->handle, qp->ctx);
	qp->pd->refcnt--;
	qp->scq->refcnt--;
	qp->rcq->refcnt--;
	if (qp->srq)
		qp->srq->refcnt--;
	if (uctx)
		uctx->nqps--;
	pvo_ring_fini(&qp->sq);
	pvo_ring_fini(&qp->rq);
	pvo_prof_report(PVO_PROF_OF(qp), pvo_vm_name(qp->vm), "QP", qp->qpn);
	g_free(qp);
}

/* ---- state machine ---- */

#define M(x) PVO_QP_##x

/* IB 11.2.4.2 / 10.3.1: the modify rules per transition and QP type
 * (index: RC, UC, UD, GSI). */
struct transition {
	uint32_t req[4];
	uint32_t opt[4];
};

static int type_idx(unsigned int type)
{
	switch (type) {
	case PVO_QPT_RC:
		return 0;
	case PVO_QPT_UC:
		return 1;
	case PVO_QPT_UD:
		return 2;
	case PVO_QPT_GSI:
		return 3;
	}
	return -1;
}

/* clang-format off */
#define ALL4(x) { x, x, x, x }
#define VALID 0x80000000u	/* marks a transition that exists */

static const struct transition transitions[7][7] = {
	[PVO_QPS_RESET] = {
		[PVO_QPS_RESET] = { ALL4(VALID), ALL4(0) },
		[PVO_QPS_INIT] = {
			{ M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
			  M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
			  M(PKEY_INDEX) | M(PORT) | M(QKEY),
			  M(PKEY_INDEX) | M(QKEY) },
			ALL4(0) },
	},
	[PVO_QPS_INIT] = {
		[PVO_QPS_INIT] = {
			ALL4(VALID),
			{ M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
			  M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
			  M(PKEY_INDEX) | M(PORT) | M(QKEY),
			  M(PKEY_INDEX) | M(QKEY) } },
		[PVO_QPS_RTR] = {
			{ M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
				  M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
			  M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
			  VALID, VALID },
			{ M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
			  M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
			  M(PKEY_INDEX) | M(QKEY),
			  M(PKEY_INDEX) | M(QKEY) } },
	},
	[PVO_QPS_RTR] = {
		[PVO_QPS_RTS] = {
			{ M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) |
				  M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC),
			  M(SQ_PSN), M(SQ_PSN), M(SQ_PSN) },
			{ M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				  M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
			  M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				  M(PATH_MIG_STATE),
			  M(CUR_STATE) | M(QKEY),
			  M(CUR_STATE) | M(QKEY) } },
	},
	[PVO_QPS_RTS] = {
		[PVO_QPS_RTS] = {
			ALL4(VALID),
			{ M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
				  M(PATH_MIG_STATE) | M(MIN_RNR_TIMER),
			  M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
				  M(PATH_MIG_STATE),
			  M(CUR_STATE) | M(QKEY),
			  M(CUR_STATE) | M(QKEY) } },
		[PVO_QPS_SQD] = { ALL4(VALID), ALL4(M(EN_SQD_ASYNC_NOTIFY)) },
	},
	[PVO_QPS_SQD] = {
		[PVO_QPS_RTS] = {
			ALL4(VALID),
			{ M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				  M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
			  M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				  M(PATH_MIG_STATE),
			  M(CUR_STATE) | M(QKEY),
			  M(CUR_STATE) | M(QKEY) } },
		[PVO_QPS_SQD] = {
			ALL4(VALID),
			{ M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) |
				  M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC) |
				  M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
				  M(ACCESS_FLAGS) | M(PKEY_INDEX) |
				  M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
			  M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				  M(PKEY_INDEX) | M(PATH_MIG_STATE),
			  M(PKEY_INDEX) | M(QKEY),
			  M(PKEY_INDEX) | M(QKEY) } },
	},
	[PVO_QPS_SQE] = {
		[PVO_QPS_RTS] = {
			{ 0, VALID, VALID, VALID },
			{ 0, M(CUR_STATE) | M(ACCESS_FLAGS),
			  M(CUR_STATE) | M(QKEY),
			  M(CUR_STATE) | M(QKEY) } },
	},
};

/* clang-format on */

bool pvo_qp_transition(unsigned int type, unsigned int cur, unsigned int next,
		       uint32_t *required, uint32_t *optional)
{
	int t = type_idx(type);
	const struct transition *tr;

	*required = *optional = 0;
	if (t < 0 || cur > PVO_QPS_ERR || next > PVO_QPS_ERR)
		return false;
	/* Any state may go to RESET or ERR, with no attributes. */
	if (next == PVO_QPS_RESET || next == PVO_QPS_ERR)
		return true;
	tr = &transitions[cur][next];
	if (!tr->req[t])
		return false;
	*required = tr->req[t] & ~VALID;
	*optional = tr->opt[t];
	return true;
}

static enum pvo_status check_attr_values(struct pvo_qp *qp, uint32_t mask,
					 const struct pvo_qp_attr *a,
					 struct pvo_path *path)
{
	if ((mask & M(PKEY_INDEX)) && le16toh(a->pkey_index) != 0)
		return PVO_STATUS_EINVAL;
	if ((mask & M(PORT)) && a->port_num != 1)
		return PVO_STATUS_EINVAL;
	if (a->reserved || a->reserved2[0] || a->reserved2[1])
		return PVO_STATUS_EINVAL;
	if ((mask & M(ACCESS_FLAGS)) &&
	    (le32toh(a->qp_access_flags) & ~PVO_ACCESS_ALL))
		return PVO_STATUS_EINVAL;
	if ((mask & M(PATH_MTU)) &&
	    (le32toh(a->path_mtu) < 1 || le32toh(a->path_mtu) > 5))
		return PVO_STATUS_EINVAL;
	if ((mask & M(TIMEOUT)) && a->timeout > 31)
		return PVO_STATUS_EINVAL;
	if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
		return PVO_STATUS_EINVAL;
	if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
		return PVO_STATUS_EINVAL;
	if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return PVO_STATUS_EINVAL;
	if ((mask & M(RQ_PSN)) && le32toh(a->rq_psn) > PVO_QPN_MAX)
		return PVO_STATUS_EINVAL;
	if ((mask & M(SQ_PSN)) && le32toh(a->sq_psn) > PVO_QPN_MAX)
		return PVO_STATUS_EINVAL;
	if ((mask & M(DEST_QPN)) && le32toh(a->dest_qp_num) > PVO_QPN_MAX)
		return PVO_STATUS_EINVAL;
	if ((mask & M(MAX_QP_RD_ATOMIC)) &&
	    a->max_rd_atomic > PVO_DEV_MAX_RD_ATOM)
		return PVO_STATUS_EINVAL;
	if ((mask & M(MAX_DEST_RD_ATOMIC)) &&
	    a->max_dest_rd_atomic > PVO_DEV_MAX_RD_ATOM)
		return PVO_STATUS_EINVAL;
	if ((mask & M(EN_SQD_ASYNC_NOTIFY)) && a->en_sqd_async_notify > 1)
		return PVO_STATUS_EINVAL;
	/* No alternate path (automatic path migration) support. */
	if (mask & M(ALT_PATH))
		return PVO_STATUS_EINVAL;
	if (mask & M(AV))
		return pvo_path_from_av(qp->vm, &a->av, path);
	return PVO_STATUS_OK;
}

static void apply_attrs(struct pvo_qp *qp, uint32_t mask,
			const struct pvo_qp_attr *a,
			const struct pvo_path *path)
{
	struct pvo_qp_attrs *q = &qp->attr;

	if (mask & M(QKEY))
		q->qkey = le32toh(a->qkey);
	if (mask & M(ACCESS_FLAGS))
		q->access = le32toh(a->qp_access_flags);
	if (mask & M(PATH_MTU)) {
		q->path_mtu = le32toh(a->path_mtu);
		pvo_qp_update_mtu(qp);
	}
	if (mask & M(TIMEOUT))
		q->timeout = a->timeout;
	if (mask & M(RETRY_CNT))
		q->retry_cnt = a->retry_cnt;
	if (mask & M(RNR_RETRY))
		q->rnr_retry = a->rnr_retry;
	if (mask & M(MIN_RNR_TIMER))
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & M(RQ_PSN))
		q->rq_psn = le32toh(a->rq_psn);
	if (mask & M(SQ_PSN))
		q->sq_psn = le32toh(a->sq_psn);
	if (mask & M(DEST_QPN))
		q->dest_qpn = le32toh(a->dest_qp_num);
	if (mask & M(MAX_QP_RD_ATOMIC))
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & M(MAX_DEST_RD_ATOMIC))
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & M(EN_SQD_ASYNC_NOTIFY))
		q->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & M(AV))
		q->path = *path;
}

enum pvo_status pvo_cmd_modify_qp(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp)
{
	const struct pvo_cmd_modify_qp *c = req;
	const struct pvo_qp_attr *a = &c->attr;
	uint32_t mask = le32toh(c->attr_mask);
	uint32_t required, optional;
	unsigned int cur, next;
	struct pvo_path path;
	enum pvo_status st;
	struct pvo_qp *qp;

	qp = pvo_table_get(&vm->qps, le32toh(c->qp), ctx);
	if (!qp)
		return PVO_STATUS_ENOENT;
	if (mask & ~(M(DEST_QPN) * 2 - 1))
		return PVO_STATUS_EINVAL;
	cur = qp->state;
	if ((mask & M(CUR_STATE)) && le32toh(a->cur_qp_state) != cur)
		return PVO_STATUS_EINVAL;
	next = (mask & M(STATE)) ? le32toh(a->qp_state) : cur;
	if (!pvo_qp_transition(qp->type, cur, next, &required, &optional))
		return PVO_STATUS_EINVAL;
	mask &= ~M(STATE);
	if ((mask & required) != required || (mask & ~(required | optional)))
		return PVO_STATUS_EINVAL;
	st = check_attr_values(qp, mask, a, &path);
	if (st)
		return st;
	/* the VM's engine takes it first: it may refuse */
	if (pvo_vm_eng_has(qp->vm, qp_modify)) {
		st = qp->vm->eng->qp_modify(qp, next, mask, a, &path);
		if (st)
			return st;
	}

	if (next == PVO_QPS_RESET) {
		/* IB: in RESET a QP forgets its work and its attributes */
		qp->state = PVO_QPS_RESET;
		memset(&qp->attr, 0, sizeof(qp->attr));
		pvo_qp_update_mtu(qp);
		qp->engine->modify(qp, cur);
		pvo_transport_reset_qp(qp);
		return PVO_STATUS_OK;
	}
	apply_attrs(qp, mask, a, &path);
	if (next == PVO_QPS_ERR) {
		pvo_qp_set_error(qp, 0, false);
		return PVO_STATUS_OK;
	}
	qp->state = next;
	qp->engine->modify(qp, cur);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_query_qp(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp)
{
	const struct pvo_cmd_handle *c = req;
	struct pvo_qp_attr *a = resp;
	struct pvo_qp *qp;

	if (c->reserved)
		return PVO_STATUS_EINVAL;
	qp = pvo_table_get(&vm->qps, le32toh(c->handle), ctx);
	if (!qp)
		return PVO_STATUS_ENOENT;
	if (pvo_vm_eng_has(vm, qp_sync_state))
		vm->eng->qp_sync_state(qp);
	a->qp_state = htole32(qp->state);
	a->cur_qp_state = htole32(qp->state);
	a->path_mtu = htole32(qp->attr.path_mtu);
	a->qkey = htole32(qp->attr.qkey);
	a->rq_psn = htole32(qp->attr.rq_psn);
	a->sq_psn = htole32(qp->attr.sq_psn);
	a->dest_qp_num = htole32(qp->attr.dest_qpn);
	a->qp_access_flags = htole32(qp->attr.access);
	a->pkey_index = 0;
	a->port_num = 1;
	a->max_rd_atomic = qp->attr.max_rd_atomic;
	a->max_dest_rd_atomic = qp->attr.max_dest_rd_atomic;
	a->min_rnr_timer = qp->attr.min_rnr_timer;
	a->timeout = qp->attr.timeout;
	a->retry_cnt = qp->attr.retry_cnt;
	a->rnr_retry = qp->attr.rnr_retry;
	a->sq_draining = qp->state == PVO_QPS_SQD && qp->req.active;
	a->en_sqd_async_notify = qp->attr.en_sqd_async_notify;
	pvo_path_to_av(&qp->attr.path, &a->av);
	a->max_send_wr = htole32(qp->sq.entries);
	a->max_recv_wr = htole32(qp->rq.entries);
	a->max_send_sge = htole32(qp->max_send_sge);
	a->max_recv_sge = htole32(qp->srq ? 0 : qp->max_recv_sge);
	a->max_inline_data = htole32(qp->max_inline);
	return PVO_STATUS_OK;
}

/* ---- errors ---- */

void pvo_qp_set_error(struct pvo_qp *qp, uint32_t ev, bool sq_only)
{
	struct pvo_vm *vm = qp->vm;

	if (sq_only && qp->state != PVO_QPS_ERR &&
	    (qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI)) {
		if (qp->state == PVO_QPS_RTS || qp->state == PVO_QPS_SQD)
			qp->state = PVO_QPS_SQE;
		if (qp->state == PVO_QPS_SQE)
			qp->engine->flush(qp, false);
		if (ev)
			pvo_event_post(vm, ev, qp->handle);
		return;
	}
	if (qp->state != PVO_QPS_ERR) {
		qp->state = PVO_QPS_ERR;
		if (ev)
			pvo_event_post(vm, ev, qp->handle);
		if (qp->srq)
			pvo_event_post(vm, PVO_EV_QP_LAST_WQE, qp->handle);
	}
	qp->engine->flush(qp, true);
}

void pvo_qp_doorbell(struct pvo_qp *qp)
{
	qp->engine->doorbell(qp);
}
