/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The QP engine's roles, as in Linux rxe: the requester (req.c) turns
 * send WQEs into messages, the completer (comp.c) turns the answers into
 * send completions, retries and errors, the responder (resp.c) executes
 * incoming messages against receive WQEs and MRs. Everything runs on the
 * main loop; per-VM state is touched from that thread only.
 */
#ifndef PVO_ENGINE_H
#define PVO_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_qp;
struct pvo_st_qp;
struct pvo_st_loader;

/*
 * A QP engine runs a QP's work once verbs/qp.c has checked the command:
 * the software engine (sw_qp.c with req / comp / resp) executes WQEs
 * itself; an engine on host RDMA verbs would hand them to a host QP.
 */
struct pvo_engine_ops {
	const char *name;
	/* The QP's rings are mapped and its attributes decoded. */
	void (*create)(struct pvo_qp *qp);
	/* The QP was loaded from a migrated VM's state (counters and
	 * attributes set; guest memory may not be mapped yet). */
	void (*restore)(struct pvo_qp *qp);
	/* qp->state changed from cur (attributes already applied). */
	void (*modify)(struct pvo_qp *qp, unsigned int cur);
	/* The guest rang the QP's doorbell. */
	void (*doorbell)(struct pvo_qp *qp);
	/* Latency mode (busy_poll.h), optional: work on a hot QP that no
	 * doorbell announces while db_pending stays set (receives a doorbell
	 * would bring, completions of a device); true if there was some. */
	bool (*poll)(struct pvo_qp *qp);
	/* Complete outstanding send (and receive) WQEs with WR_FLUSH_ERR. */
	void (*flush)(struct pvo_qp *qp, bool rq_too);
	void (*destroy)(struct pvo_qp *qp);
	/* Migration (migration/state_part.h): save fills the engine's
	 * fields of the QP's state record; load checks them (the stream is
	 * untrusted) and applies them, or refuses one with pvo_st_refuse
	 * and returns false (the QP is then freed without destroy). restore
	 * runs after a load succeeded. An engine without them has no QP
	 * that migrates. */
	void (*save)(const struct pvo_qp *qp, struct pvo_st_qp *rec);
	bool (*load)(struct pvo_qp *qp, const struct pvo_st_qp *rec,
		     struct pvo_st_loader *l);
};

extern const struct pvo_engine_ops pvo_engine_sw;

/* Completes every outstanding WQE with WR_FLUSH_ERR. */
void pvo_qp_flush_sq(struct pvo_qp *qp);
void pvo_qp_flush_rq(struct pvo_qp *qp);

/* Start or continue work on the SQ (RTS; in SQD only the active WQE). */
void pvo_req_run(struct pvo_qp *qp);

/* Timer callback: pvo_req_run after a run used up its budget. */
void pvo_req_resume(void *opaque);

/* Send the active WQE (again). */
void pvo_req_send(struct pvo_qp *qp);

/* Retransmit: the active WQE (from where the responder stands) and every
 * WQE sent behind it. */
void pvo_req_resend(struct pvo_qp *qp);

/* The active WQE is done: the oldest WQE sent behind it takes its place. */
void pvo_req_promote(struct pvo_qp *qp);

/* The WQEs behind the active one are forgotten (reset, flush, error). */
void pvo_req_forget_ahead(struct pvo_qp *qp);

/* Packets the QP may have in flight (overlay RC), and its adaptation: a
 * loss halves it, acknowledged packets grow it. */
uint32_t pvo_req_window(struct pvo_qp *qp);
void pvo_req_window_adjust(struct pvo_qp *qp, bool loss, uint32_t acked);

/*
 * Complete the active WQE: release its SQ slot, post a CQE if it is
 * signaled or failed, and on failure move the QP to error / SQE.
 */
void pvo_comp_complete(struct pvo_qp *qp, enum pvo_wc_status status);

/* Timer callback of the requester (RNR back-off, local ACK timeout). */
void pvo_comp_timer(void *opaque);

/* ibv_wc_opcode of a send WQE opcode. */
uint8_t pvo_wc_opcode_of(uint8_t wr_opcode);

/* The engine that runs a QP arriving in a migration stream (its
 * generic fields loaded), or NULL if none takes it (engine.c). */
const struct pvo_engine_ops *pvo_engine_of_loaded(const struct pvo_qp *qp);

#endif
