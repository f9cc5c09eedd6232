// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The completion side of the data path: poll_cq reads CQEs the device
 * published, req_notify_cq arms the CQ in its ring header. Neither enters
 * the kernel.
 */
#include <errno.h>
#include <string.h>

#include <util/udma_barrier.h>

#include "ring.h"

static void pvo_cqe_to_wc(const struct pvo_cqe *cqe, struct ibv_wc *wc)
{
	unsigned int wc_flags = 0;

	if (cqe->flags & PVO_WC_F_GRH)
		wc_flags |= IBV_WC_GRH;
	if (cqe->flags & PVO_WC_F_IMM)
		wc_flags |= IBV_WC_WITH_IMM;

	wc->wr_id = le64toh(cqe->wr_id);
	/* opcode and status are ibverbs values */
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = le32toh(cqe->vendor_err);
	wc->byte_len = le32toh(cqe->byte_len);
	/* both in network byte order */
	wc->imm_data = cqe->imm_data;
	/* QP numbers are 24 bits on the wire */
	wc->qp_num = le32toh(cqe->qpn) & 0xffffff;
	wc->src_qp = le32toh(cqe->src_qp) & 0xffffff;
	wc->wc_flags = wc_flags;
	wc->pkey_index = le16toh(cqe->pkey_index);
	wc->slid = 0;
	wc->sl = cqe->sl;
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
 * Drops the CQEs of a destroyed QP that the application has not polled,
 * so that no completion names a QP that no longer exists. The device
 * writes only at and after prod, so the entries between cons and a
 * snapshot of prod are ours to move: the survivors slide towards prod,
 * and cons skips the freed slots.
 */
void pvo_cq_clean(struct pvo_cq *cq, uint32_t qpn)
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

		if ((le32toh(cqe->qpn) & 0xffffff) == qpn)
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
