// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The overlay's part of a QP in the migration stream: the inner UDP
 * source port, the atomics kept for replay, and the PSN after what the
 * requester had sent. The peer may acknowledge up to there although the
 * requester, resuming at its oldest WQE, has not sent that far again
 * (sender.c accepts such ACKs while net.replay holds). The rest of
 * struct pvo_overlay_qp starts over with the next message.
 *
 * READ responses still to go are not saved: they stop on the source
 * when the VM freezes, and the requester, missing them, asks again. The
 * READs the responder kept for such re-requests are not saved either:
 * until the next new request, a re-request that names only PSNs from
 * before the switch-over is executed again for those PSNs (receiver.c).
 */
#include "overlay.h"
#include "overlay_state.h"
#include "qp.h"
#include "state_part.h"

void pvo_ov_save_qp(const struct pvo_qp *qp, struct pvo_st_qp *q)
{
	unsigned int i;

	/* reads only; the sender's accessor takes a QP it may change */
	q->sent_end = pvo_ov_sender_sent_end((struct pvo_qp *)qp);
	q->sport = qp->net.sport;
	G_STATIC_ASSERT(PVO_ST_ATOMICS == PVO_ATOMIC_REPLAY);
	for (i = 0; i < PVO_ST_ATOMICS; i++) {
		q->atomics[i].valid = qp->net.atomics[i].valid;
		q->atomics[i].psn = qp->net.atomics[i].psn;
		q->atomics[i].orig = qp->net.atomics[i].orig;
	}
	q->atomic_next = qp->net.atomic_next;
}

/* Runs after the QP's attributes are loaded (sq_psn). */
bool pvo_ov_load_qp(struct pvo_qp *qp, const struct pvo_st_qp *q,
		    struct pvo_st_loader *l)
{
	unsigned int i;

	/* at most a send queue of maximal messages ahead of sq_psn */
	PVO_ST_CHECK(q->sent_end <= PVO_QPN_MAX &&
			 pvo_psn_diff(q->sent_end, qp->attr.sq_psn) >= 0,
		     "sent_end", "PSN 0x%x with sq_psn 0x%x", q->sent_end,
		     qp->attr.sq_psn);
	qp->net.replay = q->sent_end != qp->attr.sq_psn;
	qp->net.replay_end = q->sent_end;
	qp->net.sport = q->sport;
	for (i = 0; i < PVO_ST_ATOMICS; i++) {
		PVO_ST_CHECK(q->atomics[i].valid <= 1 &&
				 q->atomics[i].psn <= PVO_QPN_MAX,
			     "atomics", "entry %u", i);
		qp->net.atomics[i].valid = q->atomics[i].valid;
		qp->net.atomics[i].psn = q->atomics[i].psn;
		qp->net.atomics[i].orig = q->atomics[i].orig;
	}
	PVO_ST_CHECK(q->atomic_next < PVO_ST_ATOMICS, "atomic_next", "%u",
		     q->atomic_next);
	qp->net.atomic_next = q->atomic_next;
	qp->net.rd_unknown = true;
	qp->net.rd_floor = qp->attr.rq_psn;
	return true;
}
