// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Verbs of a simulated guest: objects through control commands, the data
 * path through rings in guest RAM and doorbells.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "pvo_cmd.h"
#include "sim_verbs.h"

#define PAGE PVO_PAGE_SIZE

static int cmd_err(struct sim_ctx *ctx, int st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record why a command failed; returns @st unchanged. */
static int cmd_err(struct sim_ctx *ctx, int st, const char *fmt, ...)
{
	struct sim_vm *vm = ctx->vm;
	va_list ap;
	int n;

	if (st == PVO_STATUS_OK)
		return st;
	n = snprintf(vm->err, sizeof(vm->err), "%s ctx %u: ", vm->name,
		     ctx->handle);
	va_start(ap, fmt);
	n += vsnprintf(vm->err + n, sizeof(vm->err) - n, fmt, ap);
	va_end(ap);
	snprintf(vm->err + n, sizeof(vm->err) - n, ": %s",
		 st < 0 ? vu_frontend_error(vm->fe) : pvo_status_name(st));
	return st;
}

static struct vu_frontend *fe_of(struct sim_ctx *ctx)
{
	return ctx->vm->fe;
}

static struct guest_ram *ram_of(struct sim_ctx *ctx)
{
	return &ctx->vm->fe->ram;
}

int sim_alloc_pd(struct sim_ctx *ctx, struct sim_pd *pd)
{
	memset(pd, 0, sizeof(*pd));
	pd->ctx = ctx;
	return cmd_err(ctx, pvo_alloc_pd(fe_of(ctx), ctx->handle, &pd->handle),
		       "ALLOC_PD");
}

int sim_dealloc_pd(struct sim_pd *pd)
{
	return cmd_err(
	    pd->ctx,
	    pvo_dealloc_pd(fe_of(pd->ctx), pd->ctx->handle, pd->handle),
	    "DEALLOC_PD");
}

int sim_reg_mr(struct sim_pd *pd, struct sim_buf *b, uint64_t off, uint64_t len,
	       uint32_t access, struct sim_mr *mr)
{
	struct sim_ctx *ctx = pd->ctx;
	struct pvo_cmd_reg_mr c = {0};
	uint64_t iova = b->va + off, first, last;
	int ret;

	memset(mr, 0, sizeof(*mr));
	mr->ctx = ctx;
	mr->iova = iova;
	mr->len = len;
	mr->access = access;
	first = (b->page_off + off) / PAGE;
	last = (b->page_off + off + (len ? len - 1 : 0)) / PAGE;
	if (last >= b->pages.npages)
		return -EINVAL;
	ret = sim_pdir_build(ram_of(ctx), &b->pages.gpa[first],
			     (uint32_t)(last - first + 1), &c.pages,
			     &mr->pdir_mem);
	if (ret < 0)
		return ret;
	c.pd = htole32(pd->handle);
	c.access = htole32(access);
	c.iova = htole64(iova);
	c.length = htole64(len);
	ret = pvo_reg_mr(fe_of(ctx), ctx->handle, &c, &mr->handle, &mr->key);
	if (ret != PVO_STATUS_OK)
		sim_pdir_free(ram_of(ctx), &mr->pdir_mem);
	return cmd_err(ctx, ret, "REG_MR of %llu bytes at 0x%llx",
		       (unsigned long long)len, (unsigned long long)iova);
}

int sim_rereg_mr(struct sim_mr *mr, uint32_t flags, struct sim_pd *pd,
		 struct sim_buf *b, uint64_t off, uint64_t len, uint32_t access)
{
	struct sim_ctx *ctx = mr->ctx;
	struct pvo_cmd_rereg_mr c = {0};
	struct sim_pdir_mem mem = {0};
	uint64_t first, last;
	uint32_t key;
	int ret;

	c.mr = htole32(mr->handle);
	c.flags = htole32(flags);
	c.pd = htole32(pd ? pd->handle : 0);
	c.access = htole32(access);
	if (b) {
		c.iova = htole64(b->va + off);
		c.length = htole64(len);
		first = (b->page_off + off) / PAGE;
		last = (b->page_off + off + (len ? len - 1 : 0)) / PAGE;
		if (last >= b->pages.npages)
			return -EINVAL;
		ret = sim_pdir_build(ram_of(ctx), &b->pages.gpa[first],
				     (uint32_t)(last - first + 1), &c.pages,
				     &mem);
		if (ret < 0)
			return ret;
	}
	ret = pvo_rereg_mr(fe_of(ctx), ctx->handle, &c, &key);
	if (ret == PVO_STATUS_OK) {
		mr->key = key;
		if (flags & PVO_REREG_ACCESS)
			mr->access = access;
		if (b) {
			sim_pdir_free(ram_of(ctx), &mr->pdir_mem);
			mr->pdir_mem = mem;
			mr->iova = b->va + off;
			mr->len = len;
		}
	} else if (b) {
		sim_pdir_free(ram_of(ctx), &mem);
	}
	return cmd_err(ctx, ret, "REREG_MR %u (flags 0x%x)", mr->handle, flags);
}

int sim_dereg_mr(struct sim_mr *mr)
{
	struct sim_ctx *ctx = mr->ctx;
	int st;

	st = pvo_destroy(fe_of(ctx), PVO_CMD_DEREG_MR, ctx->handle, mr->handle);
	if (st == PVO_STATUS_OK)
		sim_pdir_free(ram_of(ctx), &mr->pdir_mem);
	return cmd_err(ctx, st, "DEREG_MR %u", mr->handle);
}

int sim_create_cq(struct sim_ctx *ctx, uint32_t entries, struct sim_cq *cq)
{
	return sim_create_cq_flags(ctx, entries, 0, cq);
}

int sim_create_cq_flags(struct sim_ctx *ctx, uint32_t entries, uint32_t flags,
			struct sim_cq *cq)
{
	struct pvo_cmd_create_cq c = {0};
	int ret;

	memset(cq, 0, sizeof(*cq));
	cq->ctx = ctx;
	ret = sim_ring_alloc(&cq->ring, ram_of(ctx), entries, 6,
			     SIM_LAYOUT_SCATTER);
	if (ret < 0)
		return ret;
	c.entries = htole32(entries);
	c.flags = htole32(flags);
	c.ring = cq->ring.pages.pdir;
	ret = pvo_create_cq(fe_of(ctx), ctx->handle, &c, &cq->handle);
	if (ret != PVO_STATUS_OK)
		sim_ring_free(&cq->ring);
	return cmd_err(ctx, ret, "CREATE_CQ of %u entries", entries);
}

int sim_resize_cq(struct sim_cq *cq, uint32_t entries)
{
	struct pvo_cmd_resize_cq c = {.cq = htole32(cq->handle),
				      .entries = htole32(entries)};
	struct sim_ctx *ctx = cq->ctx;
	struct sim_ring ring;
	int ret;

	ret = sim_ring_alloc(&ring, ram_of(ctx), entries, 6,
			     SIM_LAYOUT_SCATTER);
	if (ret < 0)
		return ret;
	c.ring = ring.pages.pdir;
	ret = pvo_resize_cq(fe_of(ctx), ctx->handle, &c);
	if (ret != PVO_STATUS_OK) {
		sim_ring_free(&ring);
	} else {
		sim_ring_free(&cq->ring);
		cq->ring = ring;
	}
	return cmd_err(ctx, ret, "RESIZE_CQ to %u entries", entries);
}

int sim_destroy_cq(struct sim_cq *cq)
{
	struct sim_ctx *ctx = cq->ctx;
	int st;

	st = pvo_destroy(fe_of(ctx), PVO_CMD_DESTROY_CQ, ctx->handle,
			 cq->handle);
	if (st == PVO_STATUS_OK)
		sim_ring_free(&cq->ring);
	return cmd_err(ctx, st, "DESTROY_CQ %u", cq->handle);
}

int sim_create_srq(struct sim_pd *pd, uint32_t entries, uint32_t max_sge,
		   uint32_t limit, struct sim_srq *srq)
{
	struct sim_ctx *ctx = pd->ctx;
	struct pvo_cmd_create_srq c = {0};
	struct pvo_resp_create_srq r;
	unsigned int shift = pvo_recv_wqe_shift(max_sge);
	int ret;

	memset(srq, 0, sizeof(*srq));
	srq->ctx = ctx;
	srq->max_sge = max_sge;
	ret = sim_ring_alloc(&srq->ring, ram_of(ctx), entries, shift,
			     SIM_LAYOUT_SCATTER);
	if (ret < 0)
		return ret;
	c.pd = htole32(pd->handle);
	c.entries = htole32(entries);
	c.max_sge = htole32(max_sge);
	c.srq_limit = htole32(limit);
	c.wqe_shift = (uint8_t)shift;
	c.ring = srq->ring.pages.pdir;
	/* as the provider: the SRQ rings its doorbell if the device asks */
	c.flags = PVO_SRQ_F_DOORBELL;
	ret = pvo_create_srq_resp(fe_of(ctx), ctx->handle, &c, &r, sizeof(r));
	srq->handle = le32toh(r.srq);
	srq->srqn = le32toh(r.srqn);
	srq->resp_flags = le32toh(r.flags);
	if (ret != PVO_STATUS_OK)
		sim_ring_free(&srq->ring);
	return cmd_err(ctx, ret, "CREATE_SRQ of %u entries", entries);
}

int sim_resize_srq(struct sim_srq *srq, uint32_t entries)
{
	struct pvo_cmd_resize_srq c = {.srq = htole32(srq->handle),
				       .entries = htole32(entries),
				       .wqe_shift = (uint8_t)srq->ring.shift};
	struct sim_ctx *ctx = srq->ctx;
	struct sim_ring ring;
	int ret;

	ret = sim_ring_alloc(&ring, ram_of(ctx), entries, srq->ring.shift,
			     SIM_LAYOUT_SCATTER);
	if (ret < 0)
		return ret;
	c.ring = ring.pages.pdir;
	ret = pvo_resize_srq(fe_of(ctx), ctx->handle, &c);
	if (ret != PVO_STATUS_OK) {
		sim_ring_free(&ring);
	} else {
		sim_ring_free(&srq->ring);
		srq->ring = ring;
	}
	return cmd_err(ctx, ret, "RESIZE_SRQ to %u entries", entries);
}

int sim_destroy_srq(struct sim_srq *srq)
{
	struct sim_ctx *ctx = srq->ctx;
	int st;

	st = pvo_destroy(fe_of(ctx), PVO_CMD_DESTROY_SRQ, ctx->handle,
			 srq->handle);
	if (st == PVO_STATUS_OK)
		sim_ring_free(&srq->ring);
	return cmd_err(ctx, st, "DESTROY_SRQ %u", srq->handle);
}

int sim_create_qp(struct sim_pd *pd, const struct sim_qp_init *init,
		  struct sim_qp *qp)
{
	struct sim_ctx *ctx = pd->ctx;
	struct pvo_cmd_create_qp c = {0};
	unsigned int sq_shift, rq_shift;
	int ret;

	memset(qp, 0, sizeof(*qp));
	qp->ctx = ctx;
	qp->type = init->type;
	qp->init = *init;
	sq_shift = pvo_send_wqe_shift(init->max_send_sge, init->max_inline);
	rq_shift = pvo_recv_wqe_shift(init->max_recv_sge);
	ret = sim_ring_alloc(&qp->sq, ram_of(ctx), init->sq_entries, sq_shift,
			     init->layout);
	if (ret < 0)
		return ret;
	if (!init->srq) {
		ret = sim_ring_alloc(&qp->rq, ram_of(ctx), init->rq_entries,
				     rq_shift, init->layout);
		if (ret < 0) {
			sim_ring_free(&qp->sq);
			return ret;
		}
		c.rq_entries = htole32(init->rq_entries);
		c.rq = qp->rq.pages.pdir;
	}
	c.pd = htole32(pd->handle);
	c.send_cq = htole32(init->send_cq ? init->send_cq->handle : 0);
	c.recv_cq = htole32(init->recv_cq ? init->recv_cq->handle : 0);
	c.srq = htole32(init->srq ? init->srq->handle : 0);
	c.qp_type = init->type;
	c.sq_sig_all = init->sq_sig_all;
	c.sq_wqe_shift = (uint8_t)sq_shift;
	c.rq_wqe_shift = (uint8_t)rq_shift;
	c.sq_entries = htole32(init->sq_entries);
	c.max_send_sge = htole32(init->max_send_sge);
	c.max_recv_sge = htole32(init->max_recv_sge);
	c.max_inline_data = htole32(init->max_inline);
	c.sq = qp->sq.pages.pdir;
	ret = pvo_create_qp(fe_of(ctx), ctx->handle, &c, &qp->handle, &qp->qpn,
			    &qp->resp_flags);
	if (ret != PVO_STATUS_OK) {
		sim_ring_free(&qp->sq);
		if (!init->srq)
			sim_ring_free(&qp->rq);
	}
	return cmd_err(ctx, ret, "CREATE_QP type %u", init->type);
}

int sim_destroy_qp(struct sim_qp *qp)
{
	struct sim_ctx *ctx = qp->ctx;
	int st;

	st = pvo_destroy(fe_of(ctx), PVO_CMD_DESTROY_QP, ctx->handle,
			 qp->handle);
	if (st == PVO_STATUS_OK) {
		sim_ring_free(&qp->sq);
		if (qp->rq.pages.ram)
			sim_ring_free(&qp->rq);
	}
	return cmd_err(ctx, st, "DESTROY_QP %u", qp->handle);
}

int sim_modify_qp(struct sim_qp *qp, uint32_t mask,
		  const struct pvo_qp_attr *attr)
{
	struct pvo_cmd_modify_qp c = {0};

	c.qp = htole32(qp->handle);
	c.attr_mask = htole32(mask);
	c.attr = *attr;
	return cmd_err(qp->ctx,
		       pvo_modify_qp(fe_of(qp->ctx), qp->ctx->handle, &c),
		       "MODIFY_QP %u mask 0x%x to %s", qp->handle, mask,
		       sim_qp_state_name(le32toh(attr->qp_state)));
}

int sim_query_qp(struct sim_qp *qp, struct pvo_qp_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	return cmd_err(
	    qp->ctx,
	    pvo_query_qp(fe_of(qp->ctx), qp->ctx->handle, qp->handle, attr),
	    "QUERY_QP %u", qp->handle);
}

int sim_qp_set_state(struct sim_qp *qp, uint32_t state)
{
	struct pvo_qp_attr a = {0};

	a.qp_state = htole32(state);
	return sim_modify_qp(qp, PVO_QP_STATE, &a);
}

void sim_av_to(struct pvo_av *av, const struct sim_peer *peer,
	       uint8_t sgid_index)
{
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, peer->gid, PVO_GID_LEN);
	memcpy(av->dmac, peer->mac, 6);
	av->sgid_index = sgid_index;
	av->hop_limit = 64;
}

void sim_qp_peer(struct sim_qp *qp, unsigned int gid_index,
		 struct sim_peer *peer)
{
	struct sim_vm *vm = qp->ctx->vm;

	memset(peer, 0, sizeof(*peer));
	if (gid_index < SIM_MAX_GIDS)
		memcpy(peer->gid, vm->gid[gid_index], PVO_GID_LEN);
	memcpy(peer->mac, vm->mac, 6);
	peer->qpn = qp->qpn;
	peer->psn = 0x1000;
}

int sim_qp_connect(struct sim_qp *qp, const struct sim_conn *c,
		   const struct sim_peer *peer)
{
	struct sim_conn d = *c;
	struct pvo_qp_attr a;
	bool ud = qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI;
	bool rc = qp->type == PVO_QPT_RC;
	uint32_t mask;
	int st;

	if (!d.path_mtu)
		d.path_mtu = qp->ctx->vm->port.active_mtu;
	if (!d.access && !d.no_access)
		d.access = PVO_ACCESS_REMOTE_WRITE | PVO_ACCESS_REMOTE_READ |
			   PVO_ACCESS_REMOTE_ATOMIC;
	if (!d.timeout)
		d.timeout = 14;
	if (!d.retry_cnt)
		d.retry_cnt = 7;
	if (!d.rnr_retry)
		d.rnr_retry = 7;
	if (!d.min_rnr_timer)
		d.min_rnr_timer = 1;
	if (!d.max_rd_atomic)
		d.max_rd_atomic = 16;
	if (!d.sq_psn)
		d.sq_psn = 0x1000;
	if (!d.qkey)
		d.qkey = 0x11111111;

	memset(&a, 0, sizeof(a));
	a.qp_state = htole32(PVO_QPS_INIT);
	a.pkey_index = 0;
	a.port_num = 1;
	/* IB: QP1 takes no port attribute (it belongs to its port) */
	mask = PVO_QP_STATE | PVO_QP_PKEY_INDEX |
	       (qp->type == PVO_QPT_GSI ? 0 : PVO_QP_PORT);
	if (ud) {
		a.qkey = htole32(d.qkey);
		mask |= PVO_QP_QKEY;
	} else {
		a.qp_access_flags = htole32(d.access);
		mask |= PVO_QP_ACCESS_FLAGS;
	}
	st = sim_modify_qp(qp, mask, &a);
	if (st != PVO_STATUS_OK)
		return st;

	memset(&a, 0, sizeof(a));
	a.qp_state = htole32(PVO_QPS_RTR);
	mask = PVO_QP_STATE;
	if (!ud) {
		if (!peer)
			return -EINVAL;
		sim_av_to(&a.av, peer, d.sgid_index);
		a.path_mtu = htole32(d.path_mtu);
		a.dest_qp_num = htole32(peer->qpn);
		a.rq_psn = htole32(peer->psn);
		mask |= PVO_QP_AV | PVO_QP_PATH_MTU | PVO_QP_DEST_QPN |
			PVO_QP_RQ_PSN;
		if (rc) {
			a.max_dest_rd_atomic = d.max_rd_atomic;
			a.min_rnr_timer = d.min_rnr_timer;
			mask |=
			    PVO_QP_MAX_DEST_RD_ATOMIC | PVO_QP_MIN_RNR_TIMER;
		}
	}
	st = sim_modify_qp(qp, mask, &a);
	if (st != PVO_STATUS_OK)
		return st;

	memset(&a, 0, sizeof(a));
	a.qp_state = htole32(PVO_QPS_RTS);
	a.sq_psn = htole32(d.sq_psn);
	mask = PVO_QP_STATE | PVO_QP_SQ_PSN;
	if (rc) {
		a.timeout = d.timeout;
		a.retry_cnt = d.retry_cnt;
		a.rnr_retry = d.rnr_retry;
		a.max_rd_atomic = d.max_rd_atomic;
		mask |= PVO_QP_TIMEOUT | PVO_QP_RETRY_CNT | PVO_QP_RNR_RETRY |
			PVO_QP_MAX_QP_RD_ATOMIC;
	}
	return sim_modify_qp(qp, mask, &a);
}

int sim_create_ah(struct sim_pd *pd, const struct pvo_av *av, uint32_t *ah)
{
	struct pvo_cmd_create_ah c = {0};

	c.pd = htole32(pd->handle);
	c.av = *av;
	return cmd_err(pd->ctx,
		       pvo_create_ah(fe_of(pd->ctx), pd->ctx->handle, &c, ah),
		       "CREATE_AH");
}

int sim_destroy_ah(struct sim_ctx *ctx, uint32_t ah)
{
	return cmd_err(
	    ctx, pvo_destroy(fe_of(ctx), PVO_CMD_DESTROY_AH, ctx->handle, ah),
	    "DESTROY_AH %u", ah);
}

/* ---------------------------- data path ---------------------------- */

uint32_t sim_sq_outstanding(struct sim_qp *qp)
{
	return qp->sq_prod - le32toh(sim_load_acquire(&qp->sq.hdr->cons));
}

void *sim_sq_slot(struct sim_qp *qp, uint32_t ahead)
{
	return sim_ring_entry(&qp->sq, qp->sq_prod + ahead);
}

/* The db_pending exchange of a queue (SQ, SRQ): true if the caller must
 * append its record, false if one already waits. */
static bool take_db_pending(struct pvo_ring_hdr *hdr)
{
	/* prod is visible before we look at db_pending (full barrier) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_exchange_n((uint32_t *)&hdr->db_pending, htole32(1),
				   __ATOMIC_SEQ_CST) == 0;
}

void sim_qp_doorbell(struct sim_qp *qp)
{
	if (take_db_pending(qp->sq.hdr)) {
		qp->doorbells++;
		sim_ctx_ring(qp->ctx, qp->handle);
	}
}

void sim_sq_publish(struct sim_qp *qp, uint32_t n)
{
	qp->sq_prod += n;
	sim_store_release(&qp->sq.hdr->prod, htole32(qp->sq_prod));
	sim_qp_doorbell(qp);
}

/* Encode one WR into @slot; -EINVAL if it does not fit the stride. */
static int write_send_wqe(struct sim_qp *qp, void *slot, const struct sim_wr *w)
{
	uint32_t stride = 1u << qp->sq.shift;
	struct pvo_send_wqe *h = slot;
	uint32_t body;
	unsigned int i;

	if (w->inline_len)
		body = w->inline_len;
	else
		body = w->num_sge * sizeof(struct pvo_sge);
	if (sizeof(*h) + body > stride || w->num_sge > SIM_MAX_WR_SGE)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->wr_id = htole64(w->wr_id);
	h->opcode = w->opcode;
	h->flags = w->flags | (w->inline_len ? PVO_WQE_F_INLINE : 0);
	if (w->opcode == PVO_WR_SEND_WITH_INV || w->opcode == PVO_WR_LOCAL_INV)
		h->invalidate_rkey = htole32(w->invalidate_rkey);
	else
		h->imm_data = htobe32(w->imm);
	switch (w->opcode) {
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		h->u.atomic.remote_addr = htole64(w->remote_addr);
		h->u.atomic.compare_add = htole64(w->compare_add);
		h->u.atomic.swap = htole64(w->swap);
		h->u.atomic.rkey = htole32(w->rkey);
		break;
	case PVO_WR_REG_MR:
		h->u.reg.iova = htole64(w->reg.iova);
		h->u.reg.length = htole64(w->reg.length);
		h->u.reg.pages = htole64(w->reg.pages);
		h->u.reg.key = htole32(w->reg.key);
		h->u.reg.access = htole32(w->reg.access);
		h->u.reg.npages = htole32(w->reg.npages);
		break;
	case PVO_WR_BIND_MW:
		h->u.bind.addr = htole64(w->bind.addr);
		h->u.bind.length = htole64(w->bind.length);
		h->u.bind.rkey = htole32(w->bind.rkey);
		h->u.bind.mr_lkey = htole32(w->bind.lkey);
		h->u.bind.access = htole32(w->bind.access);
		break;
	default:
		if (qp->type == PVO_QPT_UD || qp->type == PVO_QPT_GSI) {
			h->u.ud.ah = htole32(w->ah);
			h->u.ud.remote_qpn = htole32(w->remote_qpn);
			h->u.ud.remote_qkey = htole32(w->remote_qkey);
		} else {
			h->u.rdma.remote_addr = htole64(w->remote_addr);
			h->u.rdma.rkey = htole32(w->rkey);
		}
	}
	if (w->inline_len) {
		h->inline_len = htole32(w->inline_len);
		memcpy(h + 1, w->inline_data, w->inline_len);
	} else {
		struct pvo_sge *s = (struct pvo_sge *)(h + 1);

		h->num_sge = (uint8_t)w->num_sge;
		for (i = 0; i < w->num_sge; i++) {
			s[i].addr = htole64(w->sge[i].addr);
			s[i].length = htole32(w->sge[i].length);
			s[i].lkey = htole32(w->sge[i].lkey);
		}
	}
	return 0;
}

static int post_send(struct sim_qp *qp, const struct sim_wr *wr, unsigned int n,
		     bool doorbell)
{
	unsigned int i;
	int ret;

	if (qp->sq.entries - sim_sq_outstanding(qp) < n)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		ret = write_send_wqe(qp, sim_sq_slot(qp, i), &wr[i]);
		if (ret < 0)
			return ret;
	}
	/* WQEs before prod */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (doorbell) {
		sim_sq_publish(qp, n);
	} else {
		qp->sq_prod += n;
		sim_store_release(&qp->sq.hdr->prod, htole32(qp->sq_prod));
	}
	return 0;
}

int sim_post_send(struct sim_qp *qp, const struct sim_wr *wr, unsigned int n)
{
	return post_send(qp, wr, n, true);
}

int sim_post_send_nodb(struct sim_qp *qp, const struct sim_wr *wr,
		       unsigned int n)
{
	return post_send(qp, wr, n, false);
}

static int write_recv_wqe(struct sim_ring *r, uint32_t idx, uint64_t wr_id,
			  const struct sim_sge *sge, unsigned int num_sge)
{
	struct pvo_recv_wqe *h = sim_ring_entry(r, idx);
	struct pvo_sge *s = (struct pvo_sge *)(h + 1);
	unsigned int i;

	if (sizeof(*h) + num_sge * sizeof(*s) > (1u << r->shift))
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->wr_id = htole64(wr_id);
	h->num_sge = (uint8_t)num_sge;
	for (i = 0; i < num_sge; i++) {
		s[i].addr = htole64(sge[i].addr);
		s[i].length = htole32(sge[i].length);
		s[i].lkey = htole32(sge[i].lkey);
	}
	return 0;
}

void *sim_rq_slot(struct sim_qp *qp, uint32_t ahead)
{
	return sim_ring_entry(&qp->rq, qp->rq_prod + ahead);
}

bool sim_settle_receives;

int sim_ctx_settle(struct sim_ctx *ctx, int timeout_ms)
{
	struct pvo_ring_hdr *h = sim_ctx_db_hdr(ctx);
	uint32_t prod = le32toh(sim_load_acquire(&h->prod));
	struct pvo_resp_query_port port;
	int waited = 0;

	while ((int32_t)(le32toh(sim_load_acquire(&h->cons)) - prod) < 0) {
		if (waited++ >= timeout_ms * 10)
			return -ETIMEDOUT;
		usleep(100);
	}
	/* the back-end pops a record and does its work in one go: an
	 * answer after the pop comes after the work */
	return pvo_query_port(ctx->vm->fe, 1, &port) < 0 ? -EIO : 0;
}

/* A receive doorbell rang: with sim_settle_receives, wait as above. */
static void settle(struct sim_ctx *ctx)
{
	if (sim_settle_receives && sim_ctx_settle(ctx, 20000))
		snprintf(ctx->vm->err, sizeof(ctx->vm->err),
			 "the device did not take the doorbell records");
}

void sim_rq_publish(struct sim_qp *qp, uint32_t n)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	qp->rq_prod += n;
	sim_store_release(&qp->rq.hdr->prod, htole32(qp->rq_prod));
	if (qp->resp_flags & PVO_QP_RESP_F_RQ_DOORBELL) {
		sim_qp_doorbell(qp);
		settle(qp->ctx);
	}
}

int sim_post_recv(struct sim_qp *qp, uint64_t wr_id, const struct sim_sge *sge,
		  unsigned int num_sge)
{
	uint32_t cons = le32toh(sim_load_acquire(&qp->rq.hdr->cons));
	int ret;

	if (!qp->rq.entries || qp->rq_prod - cons >= qp->rq.entries)
		return -ENOSPC;
	ret = write_recv_wqe(&qp->rq, qp->rq_prod, wr_id, sge, num_sge);
	if (ret < 0)
		return ret;
	sim_rq_publish(qp, 1);
	return 0;
}

int sim_post_srq_recv(struct sim_srq *srq, uint64_t wr_id,
		      const struct sim_sge *sge, unsigned int num_sge)
{
	uint32_t cons = le32toh(sim_load_acquire(&srq->ring.hdr->cons));
	int ret;

	if (srq->prod - cons >= srq->ring.entries)
		return -ENOSPC;
	ret = write_recv_wqe(&srq->ring, srq->prod, wr_id, sge, num_sge);
	if (ret < 0)
		return ret;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	srq->prod++;
	sim_store_release(&srq->ring.hdr->prod, htole32(srq->prod));
	if (srq->resp_flags & PVO_SRQ_RESP_F_DOORBELL) {
		sim_srq_doorbell(srq);
		settle(srq->ctx);
	}
	return 0;
}

void sim_srq_doorbell(struct sim_srq *srq)
{
	if (take_db_pending(srq->ring.hdr)) {
		srq->doorbells++;
		sim_ctx_ring(srq->ctx, PVO_DB_REC_SRQ(srq->srqn));
	}
}

uint32_t sim_cq_pending(struct sim_cq *cq)
{
	return le32toh(sim_load_acquire(&cq->ring.hdr->prod)) - cq->cons;
}

int sim_poll_cq(struct sim_cq *cq, struct pvo_cqe *out, int max)
{
	uint32_t prod = le32toh(sim_load_acquire(&cq->ring.hdr->prod));
	int n = 0;

	while (cq->cons != prod && n < max) {
		memcpy(&out[n++], sim_ring_entry(&cq->ring, cq->cons),
		       sizeof(*out));
		cq->cons++;
	}
	if (n)
		sim_store_release(&cq->ring.hdr->cons, htole32(cq->cons));
	return n;
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int sim_wait_cq(struct sim_cq *cq, struct pvo_cqe *out, int n, int timeout_ms)
{
	long long deadline = now_us() + timeout_ms * 1000LL;
	unsigned int spins = 0;
	int got = 0;

	while (got < n) {
		int r = sim_poll_cq(cq, out + got, n - got);

		got += r;
		if (got >= n)
			break;
		if (r)
			continue;
		if (now_us() > deadline)
			break;
		/* spin briefly, then give the back-end the CPU */
		if (++spins > 1000) {
			struct timespec ts = {0, 50000};

			nanosleep(&ts, NULL);
		} else {
			sched_yield();
		}
	}
	return got;
}

void sim_arm_cq(struct sim_cq *cq, uint32_t how)
{
	__atomic_store_n((uint32_t *)&cq->ring.hdr->arm, htole32(how),
			 __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

const char *sim_wc_status_name(unsigned int status)
{
	static char buf[24];

	switch (status) {
	case PVO_WC_SUCCESS:
		return "SUCCESS";
	case PVO_WC_LOC_LEN_ERR:
		return "LOC_LEN_ERR";
	case PVO_WC_LOC_QP_OP_ERR:
		return "LOC_QP_OP_ERR";
	case PVO_WC_LOC_PROT_ERR:
		return "LOC_PROT_ERR";
	case PVO_WC_WR_FLUSH_ERR:
		return "WR_FLUSH_ERR";
	case PVO_WC_MW_BIND_ERR:
		return "MW_BIND_ERR";
	case PVO_WC_BAD_RESP_ERR:
		return "BAD_RESP_ERR";
	case PVO_WC_LOC_ACCESS_ERR:
		return "LOC_ACCESS_ERR";
	case PVO_WC_REM_INV_REQ_ERR:
		return "REM_INV_REQ_ERR";
	case PVO_WC_REM_ACCESS_ERR:
		return "REM_ACCESS_ERR";
	case PVO_WC_REM_OP_ERR:
		return "REM_OP_ERR";
	case PVO_WC_RETRY_EXC_ERR:
		return "RETRY_EXC_ERR";
	case PVO_WC_RNR_RETRY_EXC_ERR:
		return "RNR_RETRY_EXC_ERR";
	case PVO_WC_FATAL_ERR:
		return "FATAL_ERR";
	case PVO_WC_GENERAL_ERR:
		return "GENERAL_ERR";
	}
	snprintf(buf, sizeof(buf), "status %u", status);
	return buf;
}

const char *sim_wc_opcode_name(unsigned int opcode)
{
	static char buf[24];

	switch (opcode) {
	case PVO_WC_SEND:
		return "SEND";
	case PVO_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case PVO_WC_RDMA_READ:
		return "RDMA_READ";
	case PVO_WC_COMP_SWAP:
		return "COMP_SWAP";
	case PVO_WC_FETCH_ADD:
		return "FETCH_ADD";
	case PVO_WC_BIND_MW:
		return "BIND_MW";
	case PVO_WC_LOCAL_INV:
		return "LOCAL_INV";
	case PVO_WC_REG_MR:
		return "REG_MR";
	case PVO_WC_RECV:
		return "RECV";
	case PVO_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	}
	snprintf(buf, sizeof(buf), "opcode %u", opcode);
	return buf;
}

const char *sim_qp_state_name(unsigned int state)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};

	return state < 7 ? names[state] : "(bad state)";
}
