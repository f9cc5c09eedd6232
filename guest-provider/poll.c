// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The completion side of the data path: poll_cq (and the extended
 * start_poll / next_poll / end_poll with their read_* accessors) reads
 * CQEs the device published, req_notify_cq arms the CQ in its ring header.
 * None of them enters the kernel.
 */
#include <errno.h>
#include <string.h>

#include <util/compiler.h>
#include <util/udma_barrier.h>

#include "ring.h"

static unsigned int pvo_cqe_wc_flags(const struct pvo_cqe *cqe)
{
	unsigned int wc_flags = 0;

	if (cqe->flags & PVO_WC_F_GRH)
		wc_flags |= IBV_WC_GRH;
	if (cqe->flags & PVO_WC_F_IMM)
		wc_flags |= IBV_WC_WITH_IMM;
	if (cqe->flags & PVO_WC_F_INV)
		wc_flags |= IBV_WC_WITH_INV;
	return wc_flags;
}

/*
 * RoCE carries no service level, and ibv_wc has no field for the network
 * header type of a UD receive (the kernel's ib_wc does): such receives
 * report it in sl the way mlx5 devices do, bit 3 for RoCEv2 (UDP) and the
 * L3 type in bits 2:0 (1 IPv6, 2 IPv4). UCX's ud_verbs reads it there to
 * find the destination GID in the GRH area, and drops every datagram
 * without it.
 */
#define PVO_SL_ROCE_UDP		0x8
#define PVO_SL_ROCE_IPV6	0x1
#define PVO_SL_ROCE_IPV4	0x2

static uint8_t pvo_cqe_sl(const struct pvo_cqe *cqe)
{
	if (!(cqe->flags & PVO_WC_F_GRH))
		return cqe->sl;
	return PVO_SL_ROCE_UDP | (cqe->network_hdr_type == PVO_NET_IPV4 ?
				  PVO_SL_ROCE_IPV4 : PVO_SL_ROCE_IPV6);
}

static void pvo_cqe_to_wc(const struct pvo_cqe *cqe, struct ibv_wc *wc)
{
	wc->wr_id = le64toh(cqe->wr_id);
	/* opcode and status are ibverbs values */
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = le32toh(cqe->vendor_err);
	wc->byte_len = le32toh(cqe->byte_len);
	/* both in network byte order */
	wc->imm_data = cqe->imm_data;
	/* (its union twin: a SEND_WITH_INV's rkey, le32 in the CQE) */
	if (cqe->flags & PVO_WC_F_INV)
		wc->invalidated_rkey = le32toh(cqe->imm_data);
	/* QP numbers are 24 bits on the wire */
	wc->qp_num = le32toh(cqe->qpn) & 0xffffff;
	wc->src_qp = le32toh(cqe->src_qp) & 0xffffff;
	wc->wc_flags = pvo_cqe_wc_flags(cqe);
	wc->pkey_index = le16toh(cqe->pkey_index);
	wc->slid = 0;
	wc->sl = pvo_cqe_sl(cqe);
	wc->dlid_path_bits = 0;
}

int pvo_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	struct pvo_ring_hdr *hdr = cq->ring.hdr;
	uint32_t prod, cons;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	cons = pvo_load_own(&hdr->cons);
	prod = pvo_load_acquire(&hdr->prod);
	/* CQE contents only after their prod */
	udma_from_device_barrier();

	/* The device never produces past a full ring; if it did, stop. */
	if (prod - cons > cq->ring.num_entries) {
		pthread_spin_unlock(&cq->lock);
		return -EIO;
	}

	while (n < num_entries && cons != prod) {
		pvo_cqe_to_wc(pvo_ring_entry(&cq->ring, cons), &wc[n]);
		cons++;
		n++;
	}

	/* Gives the slots back: the CQE reads come before this store. */
	if (n)
		pvo_store_release(&hdr->cons, cons);
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * Drops the CQEs of a QP that the application has not polled (of its
 * sends only if sends_only), so that no completion names a QP that no
 * longer exists, or one that went to RESET. The device
 * writes only at and after prod, so the entries between cons and a
 * snapshot of prod are ours to move: the survivors slide towards prod,
 * and cons skips the freed slots.
 */
void pvo_cq_clean(struct pvo_cq *cq, uint32_t qpn, bool sends_only)
{
	struct pvo_ring_hdr *hdr = cq->ring.hdr;
	uint32_t prod, cons, i, freed = 0;

	pthread_spin_lock(&cq->lock);
	cons = pvo_load_own(&hdr->cons);
	prod = pvo_load_acquire(&hdr->prod);
	udma_from_device_barrier();
	if (prod - cons > cq->ring.num_entries) {
		pthread_spin_unlock(&cq->lock);
		return;
	}

	for (i = prod; i != cons; i--) {
		struct pvo_cqe *cqe = pvo_ring_entry(&cq->ring, i - 1);

		/* receive opcodes have IBV_WC_RECV's bit */
		if ((le32toh(cqe->qpn) & 0xffffff) == qpn &&
		    !(sends_only && (cqe->opcode & IBV_WC_RECV)))
			freed++;
		else if (freed)
			memcpy(pvo_ring_entry(&cq->ring, i - 1 + freed), cqe,
			       sizeof(*cqe));
	}
	if (freed)
		pvo_store_release(&hdr->cons, cons + freed);
	pthread_spin_unlock(&cq->lock);
}

/*
 * The device exchanges arm with 0 after it publishes a CQE, and raises a
 * completion event if the CQ was armed for it. Both updates here are full
 * barriers, so the caller's next poll reads prod only after the device can
 * see the arm: a CQE published before the arm is found by that poll, one
 * published after it raises an event.
 */
int pvo_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct pvo_cq *cq = to_pvo_cq(ibcq);
	_Atomic(uint32_t) *arm = pvo_counter(&cq->ring.hdr->arm);
	uint32_t disarmed = htole32(0);

	/* an arm for the next completion covers solicited ones too */
	if (solicited_only)
		atomic_compare_exchange_strong(arm, &disarmed,
					       htole32(PVO_CQ_ARM_SOLICITED));
	else
		atomic_exchange(arm, htole32(PVO_CQ_ARM_NEXT));
	return 0;
}

/*
 * The extended polling API over the same ring and lock: start_poll takes
 * the lock and makes the oldest CQE current, next_poll the one after it,
 * end_poll gives every CQE made current back to the device (one release
 * of cons) and drops the lock. The current CQE stays in the ring, where
 * the read_* accessors read it: the device cannot reuse its slot before
 * end_poll moves cons.
 */
static void pvo_poll_take(struct pvo_cq *cq)
{
	const struct pvo_cqe *cqe = pvo_ring_entry(&cq->ring, cq->poll_cons);

	cq->poll_cqe = cqe;
	cq->poll_cons++;
	cq->vcq.cq_ex.wr_id = le64toh(cqe->wr_id);
	cq->vcq.cq_ex.status = cqe->status;
}

/*
 * Re-reads prod once the CQEs read so far are used up: 0 if there is a
 * next one, ENOENT if not, EIO for a device more than a ring ahead of the
 * cons end_poll will publish from.
 */
static int pvo_poll_refill(struct pvo_cq *cq)
{
	uint32_t cons = pvo_load_own(&cq->ring.hdr->cons);

	cq->poll_prod = pvo_load_acquire(&cq->ring.hdr->prod);
	/* CQE contents only after their prod */
	udma_from_device_barrier();
	if (cq->poll_prod - cons > cq->ring.num_entries)
		return EIO;
	return cq->poll_prod == cq->poll_cons ? ENOENT : 0;
}

static int pvo_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct pvo_cq *cq = to_pvo_cq_ex(ibcq);
	int ret;

	if (attr->comp_mask)
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	cq->poll_cons = pvo_load_own(&cq->ring.hdr->cons);
	ret = pvo_poll_refill(cq);
	if (ret) {
		/* no end_poll follows an error */
		pthread_spin_unlock(&cq->lock);
		return ret;
	}
	pvo_poll_take(cq);
	return 0;
}

static int pvo_next_poll(struct ibv_cq_ex *ibcq)
{
	struct pvo_cq *cq = to_pvo_cq_ex(ibcq);
	int ret;

	if (cq->poll_cons == cq->poll_prod) {
		ret = pvo_poll_refill(cq);
		if (ret)
			return ret;
	}
	pvo_poll_take(cq);
	return 0;
}

static void pvo_end_poll(struct ibv_cq_ex *ibcq)
{
	struct pvo_cq *cq = to_pvo_cq_ex(ibcq);

	/* gives the slots back: the reads of their CQEs come before */
	pvo_store_release(&cq->ring.hdr->cons, cq->poll_cons);
	cq->poll_cqe = NULL;
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode pvo_read_opcode(struct ibv_cq_ex *ibcq)
{
	/* an ibverbs value */
	return to_pvo_cq_ex(ibcq)->poll_cqe->opcode;
}

static uint32_t pvo_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_pvo_cq_ex(ibcq)->poll_cqe->vendor_err);
}

static uint32_t pvo_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_pvo_cq_ex(ibcq)->poll_cqe->byte_len);
}

/* also ibv_wc_read_invalidated_rkey's: the rkey in host order */
static __be32 pvo_read_imm_data(struct ibv_cq_ex *ibcq)
{
	const struct pvo_cqe *cqe = to_pvo_cq_ex(ibcq)->poll_cqe;

	if (cqe->flags & PVO_WC_F_INV)
		return (__force __be32)le32toh(cqe->imm_data);
	/* network byte order in the CQE as in the result */
	return cqe->imm_data;
}

static uint32_t pvo_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_pvo_cq_ex(ibcq)->poll_cqe->qpn) & 0xffffff;
}

static uint32_t pvo_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_pvo_cq_ex(ibcq)->poll_cqe->src_qp) & 0xffffff;
}

static unsigned int pvo_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return pvo_cqe_wc_flags(to_pvo_cq_ex(ibcq)->poll_cqe);
}

/* RoCE: no LIDs */
static uint32_t pvo_read_slid(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint8_t pvo_read_sl(struct ibv_cq_ex *ibcq)
{
	return pvo_cqe_sl(to_pvo_cq_ex(ibcq)->poll_cqe);
}

static uint8_t pvo_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return 0;
}

/*
 * Every CQ gets the extended polling functions; ibv_create_cq_ex hands
 * them out. The accessors of fields the CQE does not have (timestamps,
 * CVLAN, flow tag, tag matching) stay NULL: create_cq_ex refuses them.
 */
void pvo_cq_init_poll_ops(struct pvo_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = pvo_start_poll;
	cqx->next_poll = pvo_next_poll;
	cqx->end_poll = pvo_end_poll;
	cqx->read_opcode = pvo_read_opcode;
	cqx->read_vendor_err = pvo_read_vendor_err;
	cqx->read_byte_len = pvo_read_byte_len;
	cqx->read_imm_data = pvo_read_imm_data;
	cqx->read_qp_num = pvo_read_qp_num;
	cqx->read_src_qp = pvo_read_src_qp;
	cqx->read_wc_flags = pvo_read_wc_flags;
	cqx->read_slid = pvo_read_slid;
	cqx->read_sl = pvo_read_sl;
	cqx->read_dlid_path_bits = pvo_read_dlid_path_bits;
}
