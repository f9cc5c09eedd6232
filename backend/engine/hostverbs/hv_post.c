// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host-verbs QP engine: guest WQEs posted on host QPs as the doorbell
 * rings, and host completions turned into guest CQEs (hv_qp.c makes the
 * host QPs and says which QPs get one).
 *
 * Each posted WQE is signaled on the host, its host wr_id is its guest
 * ring index, and completions advance the guest's ring cons in order
 * before the guest CQE is written (the device's ordering rules,
 * pvo-device.h). Send WQEs are checked first against the VM's own MRs;
 * one that the host does not get (a bad SGE, an operation the host QP
 * does not carry, an AH it cannot use) completes in its turn with the
 * status the software engine would give and moves the QP to error (UD:
 * its send queue, SQE).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <glib.h>

#include "ah.h"
#include "cq.h"
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

/* Host wr_ids: the guest ring index, and this bit for receives; a
 * receive the software engine held when it handed the QP over (no
 * ring index: qp->resp.msg.rw) carries HV_WR_HELD too. */
#define HV_WR_RECV (1ull << 32)
#define HV_WR_HELD (1ull << 34)

/* ---- posting ---- */

static size_t send_tail(const void *hdr)
{
	const struct pvo_send_wqe *w = hdr;

	if (w->flags & PVO_WQE_F_INLINE)
		return MIN(le32toh(w->inline_len), PVO_DEV_MAX_INLINE);
	return MIN(w->num_sge, PVO_DEV_MAX_SGE) * sizeof(struct pvo_sge);
}

void pvo_hv_take_sges(struct ibv_sge *s, const struct pvo_sge *g,
		      unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		s[i].addr = le64toh(g[i].addr);
		s[i].length = le32toh(g[i].length);
		s[i].lkey = le32toh(g[i].lkey);
	}
}

/*
 * The SGEs of a send WQE, checked against the VM's own host MRs before
 * the host sees them: the status is then the one the guest expects
 * whichever device the host has (the device checks again, and keeps a QP
 * to the MRs of its PD). Empty SGEs are left out. Returns the status and
 * in *total the message length.
 */
static enum pvo_wc_status check_sges(struct pvo_qp *qp, struct ibv_sge *s,
				     int *n, uint32_t access, uint64_t *total)
{
	int i, k = 0;
	struct pvo_mr *mr;

	*total = 0;
	for (i = 0; i < *n; i++) {
		if (!s[i].length)
			continue;
		mr = pvo_mr_get(qp->vm, s[i].lkey, qp->pd, access, s[i].addr,
				s[i].length);
		if (!mr || !to_hv_mr(mr) || !to_hv_mr(mr)->mr)
			return PVO_WC_LOC_PROT_ERR;
		/* the guest's key names the MR; the host knows it by its
		 * host MR's key (another after a migration) */
		s[i].lkey = to_hv_mr(mr)->mr->lkey;
		*total += s[i].length;
		s[k++] = s[i];
	}
	*n = k;
	return PVO_WC_SUCCESS;
}

/* A UD send's destination: the guest AH (of the QP's PD) as a host AH,
 * the remote QPN and Q_Key; the statuses the software engine gives. */
static enum pvo_wc_status ud_dest(struct pvo_qp *qp,
				  const struct pvo_send_wqe *w,
				  struct ibv_send_wr *wr, uint64_t len)
{
	struct pvo_ah *ah =
	    pvo_table_get(&qp->vm->ahs, le32toh(w->u.ud.ah), qp->ctx);
	uint32_t qkey = le32toh(w->u.ud.remote_qkey);
	uint32_t mtu = 128u << to_hv_qp(qp)->dev->port_attr.active_mtu;

	if (!ah || ah->pd != qp->pd)
		return PVO_WC_LOC_QP_OP_ERR;
	/* one packet: of the guest's port and of the host's */
	if (len > MIN(pvo_qp_mtu_bytes(qp), mtu))
		return PVO_WC_LOC_LEN_ERR;
	wr->wr.ud.ah = pvo_hv_host_ah(qp, ah);
	if (!wr->wr.ud.ah)
		return PVO_WC_LOC_QP_OP_ERR;
	wr->wr.ud.remote_qpn = pvo_hv_peer_host(
	    qp, pvo_hv_gid_ip(ah->path.dgid), PVO_ALIAS_QPN,
	    le32toh(w->u.ud.remote_qpn) & PVO_QPN_MAX);
	/* IB: a Q_Key with the high bit set stands for the QP's own */
	wr->wr.ud.remote_qkey = (qkey & 0x80000000u) ? qp->attr.qkey : qkey;
	return PVO_WC_SUCCESS;
}

/* A one-sided WQE's rkey (little-endian) as the peer's host device knows
 * it. */
static uint32_t peer_rkey(const struct pvo_qp *qp, uint32_t rkey)
{
	return pvo_hv_peer_host(qp, to_hv_qp(qp)->peer_ip, PVO_ALIAS_RKEY,
				le32toh(rkey));
}

/* The send WQE in buf as a host work request: PVO_WC_SUCCESS, or the
 * status it completes with without reaching the host. */
static enum pvo_wc_status send_wr(struct pvo_qp *qp, const uint8_t *buf,
				  struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	const struct pvo_send_wqe *w = (const void *)buf;
	const uint8_t *tail = buf + sizeof(*w);
	bool rc = qp->type == PVO_QPT_RC;
	bool writes_local = w->opcode == PVO_WR_RDMA_READ ||
			    w->opcode == PVO_WR_ATOMIC_CMP_AND_SWP ||
			    w->opcode == PVO_WR_ATOMIC_FETCH_AND_ADD;
	enum pvo_wc_status st;
	uint64_t len;

	memset(wr, 0, sizeof(*wr));
	wr->sg_list = sge;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (w->flags & PVO_WQE_F_SOLICITED)
		wr->send_flags |= IBV_SEND_SOLICITED;
	if (w->flags & PVO_WQE_F_FENCE)
		wr->send_flags |= IBV_SEND_FENCE;
	switch (w->opcode) {
	case PVO_WR_SEND:
		wr->opcode = IBV_WR_SEND;
		break;
	case PVO_WR_SEND_WITH_IMM:
		wr->opcode = IBV_WR_SEND_WITH_IMM;
		wr->imm_data = w->imm_data;
		break;
	case PVO_WR_RDMA_WRITE:
	case PVO_WR_RDMA_WRITE_WITH_IMM:
		if (qp->type == PVO_QPT_UD)
			return PVO_WC_LOC_QP_OP_ERR;
		wr->opcode = w->opcode == PVO_WR_RDMA_WRITE
				 ? IBV_WR_RDMA_WRITE
				 : IBV_WR_RDMA_WRITE_WITH_IMM;
		wr->imm_data = w->imm_data;
		wr->wr.rdma.remote_addr = le64toh(w->u.rdma.remote_addr);
		wr->wr.rdma.rkey = peer_rkey(qp, w->u.rdma.rkey);
		break;
	case PVO_WR_RDMA_READ:
		if (!rc)
			return PVO_WC_LOC_QP_OP_ERR;
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = le64toh(w->u.rdma.remote_addr);
		wr->wr.rdma.rkey = peer_rkey(qp, w->u.rdma.rkey);
		break;
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		if (!rc)
			return PVO_WC_LOC_QP_OP_ERR;
		wr->opcode = w->opcode == PVO_WR_ATOMIC_CMP_AND_SWP
				 ? IBV_WR_ATOMIC_CMP_AND_SWP
				 : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.remote_addr = le64toh(w->u.atomic.remote_addr);
		wr->wr.atomic.compare_add = le64toh(w->u.atomic.compare_add);
		wr->wr.atomic.swap = le64toh(w->u.atomic.swap);
		wr->wr.atomic.rkey = peer_rkey(qp, w->u.atomic.rkey);
		break;
	default:
		/* memory windows, fast-reg, SEND_WITH_INV: software only */
		return PVO_WC_LOC_QP_OP_ERR;
	}
	if (w->flags & PVO_WQE_F_INLINE) {
		if (writes_local)
			return PVO_WC_LOC_QP_OP_ERR;
		if (le32toh(w->inline_len) > qp->max_inline)
			return PVO_WC_LOC_LEN_ERR;
		wr->send_flags |= IBV_SEND_INLINE;
		sge->addr = (uintptr_t)tail;
		sge->length = le32toh(w->inline_len);
		sge->lkey = 0;
		wr->num_sge = sge->length ? 1 : 0;
		len = sge->length;
	} else {
		if (w->num_sge > qp->max_send_sge)
			return PVO_WC_LOC_QP_OP_ERR;
		pvo_hv_take_sges(sge, (const void *)tail, w->num_sge);
		wr->num_sge = w->num_sge;
		st =
		    check_sges(qp, sge, &wr->num_sge,
			       writes_local ? PVO_ACCESS_LOCAL_WRITE : 0, &len);
		if (st)
			return st;
	}
	if (len > to_hv_qp(qp)->dev->port_attr.max_msg_sz)
		return PVO_WC_LOC_LEN_ERR;
	if (qp->type == PVO_QPT_UD)
		return ud_dest(qp, w, wr, len);
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		return len == 8 ? PVO_WC_SUCCESS : PVO_WC_LOC_LEN_ERR;
	return PVO_WC_SUCCESS;
}

/* Guest entries published from pos on, or -1 if its producer is not
 * within the ring of cons (the guest broke its own ring). */
static int64_t published(struct pvo_qp *qp, const struct pvo_ring *r,
			 uint32_t cons, uint32_t pos)
{
	uint32_t prod;

	if (!pvo_ring_load(qp->vm, r, PVO_RING_PROD, &prod) ||
	    prod - cons > r->entries || pos - cons > prod - cons)
		return -1;
	return prod - pos;
}

static void ring_broken(struct pvo_qp *qp, const char *which)
{
	pvo_vm_warn(qp->vm,
		    "QP 0x%x: %s producer is not within %u of the "
		    "consumer: QP to error",
		    qp->qpn, which, qp->sq.entries);
	pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
}

/* Receive SGEs name MRs by the guest's keys: the host's after a
 * migration made them again (the device checks them). */
static void take_lkeys(struct pvo_vm *vm, struct ibv_sge *s, unsigned int n)
{
	unsigned int i;

	if (!to_hv_vm(vm)->rekeyed)
		return;
	for (i = 0; i < n; i++)
		s[i].lkey = pvo_hv_lkey(vm, s[i].lkey);
}

/* A receive WR to the host QP; false (logged, the QP in error) if the
 * host refuses it, or err (an errno found before posting) is set. what:
 * which receive, for the log ("" or "...: "). */
static bool host_post_recv(struct pvo_qp *qp, struct ibv_recv_wr *wr,
			   const char *what, int err)
{
	struct ibv_recv_wr *bad;

	if (!err)
		err = ibv_post_recv(to_hv_qp(qp)->qp, wr, &bad);
	if (!err)
		return true;
	pvo_vm_warn(qp->vm, "hostverbs: %s QP 0x%x: %sibv_post_recv: %s",
		    hv_devname(qp), qp->qpn, what, g_strerror(err));
	pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
	return false;
}

/*
 * The receive the software engine had taken off the RQ when it handed
 * the QP to the host (a message was arriving into it, or the message
 * before it was lost): first on the host QP, as it came first. It stays
 * the responder's (qp->resp.msg.rw) until it completes, so a freeze
 * that flushes it saves it again. False: the QP went to error.
 */
static bool post_held(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	const struct pvo_dma *d = &qp->resp.msg.rw.dma;
	struct ibv_sge sge[PVO_DMA_MAX_RANGES];
	struct ibv_recv_wr wr = {.wr_id = HV_WR_RECV | HV_WR_HELD};
	unsigned int i;

	if (!qp->resp.msg.has_rw || h->held_posted)
		return true;
	for (i = 0; i < d->n; i++) {
		if (d->r[i].kind != PVO_DMA_MR)
			break;
		sge[i].addr = d->r[i].addr;
		sge[i].length = (uint32_t)d->r[i].len;
		sge[i].lkey = d->r[i].key;
	}
	take_lkeys(qp->vm, sge, i);
	wr.sg_list = sge;
	wr.num_sge = (int)i;
	/* a range of guest-physical pages (kernel QPs) has no host key */
	if (!host_post_recv(qp, &wr,
			    "the receive a message was arriving into: ",
			    i < d->n ? EINVAL : 0))
		return false;
	h->held_posted = true;
	pvo_info(pvo_vm_name(qp->vm),
		 "QP 0x%x: the receive a message was arriving into when the "
		 "software engine handed the QP over is the host QP's first",
		 qp->qpn);
	return true;
}

static void post_rq(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	int64_t n;
	uint8_t buf[sizeof(struct pvo_recv_wqe) +
		    PVO_DEV_MAX_SGE * sizeof(struct pvo_sge)]
	    __attribute__((aligned(8)));
	const struct pvo_recv_wqe *w = (const void *)buf;
	struct ibv_sge sge[PVO_DEV_MAX_SGE] = {{0}};
	struct ibv_recv_wr wr;
	struct pvo_hv_wqe *e;

	if (qp->srq)
		return; /* the SRQ's doorbell posts its receives */
	if (!post_held(qp))
		return;
	n = published(qp, &qp->rq, qp->rq_cons, h->rq_posted);
	if (n < 0) {
		ring_broken(qp, "RQ");
		return;
	}
	while (n-- > 0) {
		if (!pvo_ring_read_wqe(qp->vm, &qp->rq, h->rq_posted, buf,
				       sizeof(*w), pvo_recv_wqe_tail)) {
			pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
			return;
		}
		if (w->num_sge > qp->max_recv_sge) {
			/* not a WQE this QP can have: as a broken ring */
			ring_broken(qp, "RQ");
			return;
		}
		pvo_hv_take_sges(sge, (const void *)(buf + sizeof(*w)),
				 w->num_sge);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = h->rq_posted | HV_WR_RECV;
		e = &h->rq[h->rq_posted & (qp->rq.entries - 1)];
		e->lkey = sge[0].lkey; /* the guest's, for the GRH's read */
		take_lkeys(qp->vm, sge, w->num_sge);
		wr.sg_list = sge;
		wr.num_sge = w->num_sge;
		e->wr_id = w->wr_id;
		e->length = w->num_sge ? sge[0].length : 0;
		e->addr = sge[0].addr;
		if (!host_post_recv(qp, &wr, "", 0))
			return;
		h->rq_posted++;
	}
}

static void put_cqe(struct pvo_qp *qp, struct pvo_cq *cq, struct pvo_cqe *c)
{
	c->qpn = htole32(qp->qpn);
	if (!pvo_cq_post(qp->vm, cq, c) && qp->state != PVO_QPS_ERR)
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
}

/* The guest WQE the host does not get completes once everything before
 * it has, with its status; the QP goes to error. */
static void complete_stuck(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct pvo_cqe c = {0};
	struct pvo_hv_wqe *e = &h->sq[h->sq_posted & (qp->sq.entries - 1)];

	c.status = h->stuck;
	h->stuck = 0;
	qp->sq_cons++;
	h->sq_posted++;
	pvo_ring_store(qp->vm, &qp->sq, PVO_RING_CONS, qp->sq_cons);
	c.wr_id = e->wr_id;
	c.opcode = pvo_wc_opcode_of(e->opcode);
	put_cqe(qp, qp->scq, &c);
	/* a WQE that is not guest RAM: the QP is broken, as in software;
	 * otherwise a UD QP's send queue alone goes to error (SQE), as in
	 * software, and the host QP goes on receiving */
	if (c.status == PVO_WC_FATAL_ERR)
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
	else
		pvo_qp_set_error(qp, 0, qp->type == PVO_QPT_UD);
}

/* Send WQEs handed to the host in one ibv_post_send. */
#define HV_BATCH 16

struct hv_batch {
	struct ibv_send_wr wr[HV_BATCH];
	struct ibv_sge sge[HV_BATCH][PVO_DEV_MAX_SGE];
	/* the guest WQEs: inline data is read from here at post time */
	uint8_t buf[HV_BATCH][sizeof(struct pvo_send_wqe) +
			      MAX(PVO_DEV_MAX_SGE * sizeof(struct pvo_sge),
				  PVO_DEV_MAX_INLINE)]
	    __attribute__((aligned(8)));
};

/* Up to HV_BATCH guest WQEs from sq_posted on as host work requests;
 * stops before one the host does not get (h->stuck). */
static unsigned int build_batch(struct pvo_qp *qp, struct hv_batch *b,
				int64_t n)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	unsigned int k;

	for (k = 0; k < HV_BATCH && k < n; k++) {
		const struct pvo_send_wqe *w = (const void *)b->buf[k];
		uint32_t idx = h->sq_posted + k;
		struct pvo_hv_wqe *e = &h->sq[idx & (qp->sq.entries - 1)];

		if (!pvo_ring_read_wqe(qp->vm, &qp->sq, idx, b->buf[k],
				       sizeof(*w), send_tail)) {
			/* not guest RAM under this memory table */
			*e = (struct pvo_hv_wqe){.opcode = PVO_WR_SEND};
			h->stuck = PVO_WC_FATAL_ERR;
			break;
		}
		e->wr_id = w->wr_id;
		e->opcode = w->opcode;
		e->signaled = qp->sq_sig_all || (w->flags & PVO_WQE_F_SIGNALED);
		h->stuck = send_wr(qp, b->buf[k], &b->wr[k], b->sge[k]);
		if (h->stuck)
			break;
		b->wr[k].wr_id = idx;
		if (k)
			b->wr[k - 1].next = &b->wr[k];
	}
	return k;
}

/* The PSNs a host work request takes on the wire (IB: one per packet of
 * a SEND or WRITE, at least one; a READ's response packets; one per
 * atomic and per UD datagram). */
static uint32_t psns_of(const struct pvo_qp *qp, const struct ibv_send_wr *wr)
{
	uint32_t mtu = to_hv_qp(qp)->mtu;
	uint64_t len = 0;
	int i;

	if (qp->type == PVO_QPT_UD || wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || !mtu)
		return 1;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return pvo_packets(len, mtu);
}

static void post_sq(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	int64_t n = published(qp, &qp->sq, qp->sq_cons, h->sq_posted);
	struct ibv_send_wr *bad;
	struct hv_batch b;
	unsigned int k, i;
	int err;

	if (n < 0) {
		ring_broken(qp, "SQ");
		return;
	}
	/* behind a WQE the host does not get, nothing goes out */
	while (n > 0 && !h->stuck) {
		k = build_batch(qp, &b, n);
		if (!k)
			break;
		err = ibv_post_send(h->qp, b.wr, &bad);
		if (err) {
			pvo_vm_warn(qp->vm,
				    "hostverbs: %s QP 0x%x: ibv_post_send: %s",
				    hv_devname(qp), qp->qpn, g_strerror(err));
			/* the ones before bad went out */
			k = bad >= b.wr && bad < b.wr + k ? bad - b.wr : 0;
			h->stuck = PVO_WC_LOC_QP_OP_ERR;
		}
		for (i = 0; i < k; i++) {
			struct pvo_hv_wqe *e =
			    &h->sq[(h->sq_posted + i) & (qp->sq.entries - 1)];

			e->psn = h->next_psn;
			e->npsn = psns_of(qp, &b.wr[i]);
			h->next_psn = pvo_psn_add(h->next_psn, e->npsn);
		}
		h->sq_posted += k;
		n -= k;
	}
	if (h->stuck && qp->sq_cons == h->sq_posted)
		complete_stuck(qp);
}

/* ---- rebinding (hv_rebind.c) ---- */

/* A send WQE's PSNs on the wire as psns_of counts them, read from the
 * guest's ring: false if it cannot be read. */
static bool ring_wqe(struct pvo_qp *qp, uint32_t idx, struct pvo_replay_wqe *r,
		     uint64_t *wr_id, uint8_t *opcode, bool *signaled)
{
	uint8_t buf[sizeof(struct pvo_send_wqe) +
		    MAX(PVO_DEV_MAX_SGE * sizeof(struct pvo_sge),
			PVO_DEV_MAX_INLINE)] __attribute__((aligned(8)));
	const struct pvo_send_wqe *w = (const void *)buf;
	const struct pvo_sge *g = (const void *)(buf + sizeof(*w));
	uint32_t mtu = to_hv_qp(qp)->mtu ? to_hv_qp(qp)->mtu : 256;
	uint64_t len = 0;
	unsigned int i;

	if (!pvo_ring_read_wqe(qp->vm, &qp->sq, idx, buf, sizeof(*w),
			       send_tail))
		return false;
	*wr_id = w->wr_id;
	*opcode = w->opcode;
	*signaled = qp->sq_sig_all || (w->flags & PVO_WQE_F_SIGNALED);
	if (w->flags & PVO_WQE_F_INLINE)
		len = le32toh(w->inline_len);
	else
		for (i = 0; i < w->num_sge && i < PVO_DEV_MAX_SGE; i++)
			len += le32toh(g[i].length);
	switch (w->opcode) {
	case PVO_WR_RDMA_WRITE:
	case PVO_WR_RDMA_WRITE_WITH_IMM:
		r->op = PVO_REPLAY_WRITE;
		break;
	case PVO_WR_RDMA_READ:
		r->op = PVO_REPLAY_READ;
		break;
	case PVO_WR_ATOMIC_CMP_AND_SWP:
	case PVO_WR_ATOMIC_FETCH_AND_ADD:
		r->op = PVO_REPLAY_ATOMIC;
		len = 0;
		break;
	default:
		r->op = PVO_REPLAY_SEND;
		break;
	}
	r->npsn = pvo_packets(len, mtu);
	return true;
}

struct pvo_replay_wqe *pvo_hv_sq_pending(struct pvo_qp *qp, uint32_t first,
					 uint32_t *n, uint32_t *next)
{
	int64_t k = published(qp, &qp->sq, qp->sq_cons, qp->sq_cons);
	struct pvo_replay_wqe *r;
	uint64_t wr_id;
	uint8_t op;
	bool sig;
	uint32_t i;

	*n = 0;
	*next = first & PVO_QPN_MAX;
	if (k <= 0)
		return NULL;
	r = g_new0(struct pvo_replay_wqe, k);
	for (i = 0; i < k; i++) {
		if (!ring_wqe(qp, qp->sq_cons + i, &r[i], &wr_id, &op, &sig)) {
			g_free(r);
			return NULL;
		}
		r[i].psn = *next;
		*next = pvo_psn_add(*next, r[i].npsn);
	}
	*n = (uint32_t)k;
	return r;
}

void pvo_hv_sq_complete_oldest(struct pvo_qp *qp, uint32_t n, uint8_t status)
{
	struct pvo_replay_wqe r;
	struct pvo_cqe c;
	uint64_t wr_id;
	uint8_t op;
	bool sig;

	while (n || status) {
		if (!ring_wqe(qp, qp->sq_cons, &r, &wr_id, &op, &sig))
			return;
		qp->sq_cons++;
		pvo_ring_store(qp->vm, &qp->sq, PVO_RING_CONS, qp->sq_cons);
		memset(&c, 0, sizeof(c));
		c.wr_id = wr_id;
		c.opcode = pvo_wc_opcode_of(op);
		c.status = n ? PVO_WC_SUCCESS : status;
		if (sig || c.status != PVO_WC_SUCCESS)
			put_cqe(qp, qp->scq, &c);
		if (!n) {
			pvo_qp_set_error(qp, 0, false);
			return;
		}
		n--;
	}
}

/* ---- completions ---- */

static uint8_t status_of(enum ibv_wc_status s)
{
	/* PVO_WC_* are the IBV_WC_* values (pvo-device.h) */
	switch (s) {
	case IBV_WC_SUCCESS:
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_WR_FLUSH_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_BAD_RESP_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_FATAL_ERR:
	case IBV_WC_GENERAL_ERR:
		return (uint8_t)s;
	default:
		return PVO_WC_GENERAL_ERR;
	}
}

/*
 * In ERR the guest's outstanding WQEs complete with WR_FLUSH_ERR: first
 * what the host has completed already is taken from its CQs, then the
 * back-end flushes the rest itself, in ring order, whether the host holds
 * them or never saw them (a host device need not flush its receive queue
 * promptly; rdma_rxe of Linux 6.1 does not). Host completions that come
 * later for flushed WQEs are dropped (pvo_hv_qp_complete). In SQE (UD)
 * the same goes for the send queue alone.
 */
static void flush_rest(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	if ((qp->state != PVO_QPS_ERR && qp->state != PVO_QPS_SQE) ||
	    h->flushing)
		return;
	h->flushing = true;
	pvo_hv_qp_poll(qp);
	h->flushing = false;
	h->stuck = 0;
	pvo_qp_flush_sq(qp);
	h->sq_posted = qp->sq_cons;
	if (qp->state != PVO_QPS_ERR)
		return; /* SQE: the receive queue works on */
	pvo_qp_flush_rq(qp);
	h->rq_posted = qp->rq_cons;
}

/*
 * The network header of a UD receive, told as rdma-core's
 * ibv_init_ah_from_wc tells it: IPv4 if the last 20 bytes of the GRH are
 * an IPv4 header with a valid checksum, IPv6 otherwise. Read where the
 * host put the GRH, the start of the WQE's first SGE (checked as any
 * SGE); IPv4, the tenant network's, if that SGE cannot hold it.
 */
static uint8_t ud_net_type(struct pvo_qp *qp, const struct pvo_hv_wqe *e,
			   uint32_t *src_ip)
{
	struct pvo_sge g = {.addr = htole64(e->addr),
			    .length = htole32(PVO_GRH_LEN),
			    .lkey = htole32(e->lkey)};
	uint8_t grh[PVO_GRH_LEN];
	struct pvo_dma src, dst;

	*src_ip = 0;
	if (e->length < PVO_GRH_LEN)
		return PVO_NET_IPV4;
	pvo_dma_init(&src, qp->vm);
	pvo_dma_init(&dst, NULL);
	if (pvo_dma_from_sges(&src, qp->vm, qp->pd, false,
			      PVO_ACCESS_LOCAL_WRITE, &g, 1) ||
	    !pvo_dma_add(&dst, PVO_DMA_HOST, NULL, 0, grh, sizeof(grh)) ||
	    !pvo_dma_copy(&dst, &src, sizeof(grh)))
		return PVO_NET_IPV4;
	/* RoCE v2 over IPv4: the IP header in the GRH's last 20 bytes (a
	 * device that loops a datagram back may leave its checksum out) */
	if (grh[20] == 0x45 && (pvo_ipv4_csum(grh + 20) == 0 ||
				(grh[0] >> 4) != 6))
		memcpy(src_ip, grh + 20 + 12, 4);
	if (grh[20] == 0x45 && pvo_ipv4_csum(grh + 20) == 0)
		return PVO_NET_IPV4;
	return (grh[0] >> 4) == 6 ? PVO_NET_IPV6 : PVO_NET_IPV4;
}

/* A UD QP's error completion: what follows is the host QP's state. A
 * receive that failed leaves a working QP working (the software engine's
 * rule too); a device that moved to SQE takes the guest's there. */
static void ud_error(struct pvo_qp *qp, bool recv)
{
	int st = pvo_hv_host_state(qp);

	if (st == IBV_QPS_SQE)
		pvo_qp_set_error(qp, 0, true);
	else if (!recv ||
		 (st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQD))
		pvo_qp_set_error(qp, 0, false);
}

/* The receive CQE of the guest WQE e (its wr_id and first SGE). */
static void recv_cqe(struct pvo_qp *qp, const struct ibv_wc *wc,
		     const struct pvo_hv_wqe *e, struct pvo_cqe *c)
{
	c->wr_id = e->wr_id;
	c->opcode = PVO_WC_RECV;
	/* a host completion does not say whether the SEND was solicited: a
	 * CQ armed for solicited events wakes for every receive rather than
	 * miss one */
	c->flags = PVO_WC_F_SOLICITED;
	if (wc->status != IBV_WC_SUCCESS)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		c->opcode = PVO_WC_RECV_RDMA_WITH_IMM;
	c->byte_len = htole32(wc->byte_len);
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		c->flags |= PVO_WC_F_IMM;
		c->imm_data = wc->imm_data;
	}
	c->src_qp = htole32(wc->src_qp);
	if (qp->type == PVO_QPT_UD) {
		/* RoCE: the GRH leads every UD buffer */
		c->flags |= PVO_WC_F_GRH;
		struct pvo_qp *src;
		uint32_t sip;

		c->network_hdr_type = ud_net_type(qp, e, &sip);
		/* a sender that moved: the QPN its guest knows (one served
		 * here knows it by its own QP) */
		if (pvo_alias_any() && sip)
			c->src_qp = htole32(pvo_alias_guest_qpn(
			    qp->vm->cfg->tenant->vni, sip, wc->src_qp));
		src = pvo_hv_qp_by_host_qpn(to_hv_qp(qp)->dev, wc->src_qp);
		if (src)
			c->src_qp = htole32(src->qpn);
		c->sl = wc->sl;
	}
}

/* The CQE of a receive that is no ring entry of the QP's RQ (an SRQ's,
 * or the one the software engine held); an error takes the QP there. */
static void put_recv(struct pvo_qp *qp, const struct ibv_wc *wc,
		     const struct pvo_hv_wqe *e)
{
	struct pvo_cqe c = {0};

	c.status = status_of(wc->status);
	c.vendor_err = htole32(wc->vendor_err);
	recv_cqe(qp, wc, e, &c);
	put_cqe(qp, qp->rcq, &c);
	if (wc->status != IBV_WC_SUCCESS && qp->state != PVO_QPS_ERR)
		pvo_qp_set_error(qp, 0, false);
	else
		flush_rest(qp);
}

/* A receive from the QP's SRQ: its WQE is consumed whatever became of
 * the QP; the CQE goes to the QP's receive CQ while the QP is there. */
static void srq_complete(struct pvo_qp *qp, const struct ibv_wc *wc)
{
	struct pvo_hv_wqe e;

	/* the freeze stopped the QP in a message into it: not consumed */
	if (qp->srq && to_hv_qp(qp)->frozen &&
	    wc->status == IBV_WC_WR_FLUSH_ERR) {
		pvo_hv_srq_hold(qp->vm, qp->srq, wc->wr_id);
		return;
	}
	if (!qp->srq || !pvo_hv_srq_take(qp->vm, qp->srq, wc->wr_id, &e) ||
	    to_hv_qp(qp)->gone)
		return;
	put_recv(qp, wc, &e);
}

/* The host's completion of the held receive (post_held). */
static void held_complete(struct pvo_qp *qp, const struct ibv_wc *wc)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct pvo_hv_wqe e = {.wr_id = qp->resp.msg.rw.wr_id};

	h->held_posted = false;
	/* the freeze flushed it: still held, posted again where the VM
	 * runs next */
	if ((h->frozen && wc->status == IBV_WC_WR_FLUSH_ERR) || h->gone ||
	    !qp->resp.msg.has_rw)
		return;
	qp->resp.msg.has_rw = false;
	put_recv(qp, wc, &e);
}

void pvo_hv_qp_complete(struct pvo_qp *qp, const struct ibv_wc *wc)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct pvo_cqe c = {0};
	struct pvo_hv_wqe *e;
	/* error completions carry no valid opcode: the wr_id says */
	bool recv = wc->wr_id & HV_WR_RECV;
	uint32_t cons = recv ? qp->rq_cons : qp->sq_cons;
	uint32_t entries = recv ? qp->rq.entries : qp->sq.entries;

	if (wc->wr_id & HV_WR_SRQ) {
		srq_complete(qp, wc);
		return;
	}
	if (wc->wr_id & HV_WR_HELD) {
		held_complete(qp, wc);
		return;
	}
	/* the freeze flushed it: the guest's WQE is posted again where the
	 * VM runs next (hv_migrate.c) */
	if (h->frozen && wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	/* a WQE the back-end flushed already (flush_rest), or a QP being
	 * destroyed */
	if (cons - (uint32_t)wc->wr_id - 1 < entries || h->gone)
		return;
	if ((uint32_t)wc->wr_id != cons) {
		pvo_vm_warn(qp->vm,
			    "hostverbs: %s QP 0x%x: completion out of "
			    "order: QP to error",
			    hv_devname(qp), qp->qpn);
		pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		return;
	}
	c.status = status_of(wc->status);
	c.vendor_err = htole32(wc->vendor_err);
	if (recv) {
		e = &h->rq[qp->rq_cons & (qp->rq.entries - 1)];
		qp->rq_cons++;
		pvo_ring_store(qp->vm, &qp->rq, PVO_RING_CONS,
			       qp->rq_cons);
		recv_cqe(qp, wc, e, &c);
		put_cqe(qp, qp->rcq, &c);
	} else {
		e = &h->sq[qp->sq_cons & (qp->sq.entries - 1)];
		qp->sq_cons++;
		pvo_ring_store(qp->vm, &qp->sq, PVO_RING_CONS, qp->sq_cons);
		/* QUERY_QP's sq_psn: after the last WQE done, as in
		 * software */
		if (wc->status == IBV_WC_SUCCESS)
			qp->attr.sq_psn = pvo_psn_add(e->psn, e->npsn);
		if (e->signaled || wc->status != IBV_WC_SUCCESS) {
			c.wr_id = e->wr_id;
			c.opcode = pvo_wc_opcode_of(e->opcode);
			if (e->opcode == PVO_WR_RDMA_READ &&
			    wc->status == IBV_WC_SUCCESS)
				c.byte_len = htole32(wc->byte_len);
			put_cqe(qp, qp->scq, &c);
		}
		if (h->stuck && qp->sq_cons == h->sq_posted)
			complete_stuck(qp);
	}
	/* an error completion: the host QP is in error, and so is the
	 * guest's (flushes complete the rest) */
	if (wc->status != IBV_WC_SUCCESS && qp->state != PVO_QPS_ERR) {
		if (qp->type == PVO_QPT_UD)
			ud_error(qp, recv);
		else
			pvo_qp_set_error(qp, 0, false);
	} else {
		flush_rest(qp);
	}
}

/* ---- the engine ---- */

static void hv_create(struct pvo_qp *qp)
{
	/* never the first engine: pvo_hv_qp_create switches to it */
}

static void hv_modify(struct pvo_qp *qp, unsigned int cur)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	switch (qp->state) {
	case PVO_QPS_RESET:
		/* The guest finds empty rings; the software engine's part of
		 * the QP (made at CREATE_QP, see hv_destroy) forgets its work
		 * too, as the next RTR may hand the QP to it. */
		pvo_engine_sw.modify(qp, cur);
		h->sq_posted = qp->sq_cons;
		h->rq_posted = qp->rq_cons;
		h->held_posted = false;
		h->stuck = 0;
		break;
	case PVO_QPS_RTR:
		if (h->active)
			post_rq(qp);
		break;
	case PVO_QPS_RTS:
		if (h->active) {
			post_rq(qp);
			post_sq(qp);
		}
		break;
	default:
		break;
	}
}

static void hv_doorbell(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);

	if (h->frozen)
		return; /* posted again at the thaw */
	switch (qp->state) {
	case PVO_QPS_ERR:
		flush_rest(qp);
		break;
	case PVO_QPS_SQE:
		/* receives go on; sends are flushed */
		post_rq(qp);
		flush_rest(qp);
		break;
	case PVO_QPS_RTR:
	case PVO_QPS_RTS:
	case PVO_QPS_SQD:
		if (!h->active)
			break;
		post_rq(qp);
		/* a rebound connection sends once its peer is ready */
		if (qp->state == PVO_QPS_RTS && !h->hold)
			post_sq(qp);
		break;
	default:
		break; /* receives wait for the RTR that picks the engine */
	}
}

/* Latency mode (busy_poll.h): the receives the guest posted without a
 * doorbell (db_pending stays set while the QP is hot) and the host's
 * completions, so no event of the host device has to wake the loop. */
static bool hv_poll(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	uint32_t posted = h->rq_posted;
	unsigned int got;

	if (!h->active || h->frozen)
		return false;
	if (qp->state == PVO_QPS_RTR || qp->state == PVO_QPS_RTS ||
	    qp->state == PVO_QPS_SQD)
		post_rq(qp);
	got = pvo_hv_qp_poll(qp);
	return got || h->rq_posted != posted;
}

static void hv_flush(struct pvo_qp *qp, bool rq_too)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	/* the host flushes what it holds; the rest follows it (SQE: the
	 * host QP goes on receiving, the back-end flushes the sends) */
	if (h->active && rq_too)
		ibv_modify_qp(h->qp, &a, IBV_QP_STATE);
	flush_rest(qp);
}

/*
 * Every QP starts on the software engine (verbs/qp.c) and keeps its part
 * (timers, send-ahead slots) while host verbs runs it: RTR to a peer on
 * this host hands the QP back (hv_qp.c). That part goes with the QP.
 */
static void hv_destroy(struct pvo_qp *qp)
{
	pvo_engine_sw.destroy(qp);
}

static void hv_restore(struct pvo_qp *qp)
{
	pvo_engine_sw.restore(qp);
}

static void hv_save(const struct pvo_qp *qp, struct pvo_st_qp *rec)
{
	pvo_engine_sw.save(qp, rec);
}

static bool hv_load(struct pvo_qp *qp, const struct pvo_st_qp *rec,
		    struct pvo_st_loader *l)
{
	return pvo_engine_sw.load(qp, rec, l);
}

const struct pvo_engine_ops pvo_engine_hostverbs = {
    .name = "hostverbs",
    .device_rq = true,
    .create = hv_create,
    .modify = hv_modify,
    .doorbell = hv_doorbell,
    .poll = hv_poll,
    .flush = hv_flush,
    .destroy = hv_destroy,
    /* the guest's counters and the software part, which the QP keeps;
     * its host QP is made again from them (hv_migrate.c) */
    .restore = hv_restore,
    .save = hv_save,
    .load = hv_load,
};
