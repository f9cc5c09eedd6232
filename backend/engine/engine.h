/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engines that run a VM's verbs objects, and the interfaces the verbs
 * layer calls them through:
 *
 *   sw/         the software engine, after Linux rxe's roles: the
 *               requester (req.c) turns send WQEs into messages, the
 *               completer (comp.c) turns the answers into send
 *               completions, retries and errors, the responder (resp.c)
 *               executes incoming messages against receive WQEs and MRs;
 *               the local and overlay transports carry its messages
 *   hostverbs/  host RDMA verbs (hostverbs.h): the VM's objects on the
 *               host's device, which moves the data itself
 *
 * Every VM's QPs have a QP engine (struct pvo_engine_ops). A VM whose
 * tenant uses host verbs also has an object engine (struct
 * pvo_vm_engine), told of every PD, MR, CQ, SRQ, AH and QP the guest
 * makes. Everything runs on the main loop; per-VM state is touched from
 * that thread only.
 */
#ifndef PVO_ENGINE_H
#define PVO_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "pvo-device.h"

struct pvo_vm;
struct pvo_vm_host_use;
struct pvo_vm_config;
struct pvo_daemon_config;
struct pvo_pd;
struct pvo_mr;
struct pvo_cq;
struct pvo_srq;
struct pvo_ah;
struct pvo_qp;
struct pvo_qp_attr;
struct pvo_path;
struct pvo_st_qp;
struct pvo_st_loader;

/*
 * A QP engine runs a QP's work once verbs/qp.c has checked the command:
 * the software engine (sw/sw_qp.c with req / comp / resp) executes WQEs
 * itself; the host-verbs engine (hostverbs/hv_post.c) hands them to a
 * host QP.
 */
struct pvo_engine_ops {
	const char *name;
	/* The QP's receives are the engine's device's: the software
	 * responder gives it no message (a software sender reaches none). */
	bool device_rq;
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

/* A number the guest of a migrated VM knows, and the host's for it
 * (vm engine's vm_ids): its peers translate (transport/peer_alias.h);
 * or a connection of the VM to rebind (PVO_ID_CONN: its QP's numbers,
 * the peer VM and QP, the PSN its responder expects next). */
enum pvo_id_kind { PVO_ID_QPN, PVO_ID_KEY, PVO_ID_CONN };

struct pvo_id_pair {
	enum pvo_id_kind kind;
	uint32_t guest, host;
	uint32_t peer_ip, peer_qpn, psn; /* CONN */
};

/*
 * One step of rebinding a connection whose one end moved (or was
 * stopped by a migration that then failed): docs/migration.md, "VMs on
 * host verbs". The moved end offers, the other end answers, the moved
 * end says it is ready, the other says go; an end that cannot go on
 * says the connection ends.
 */
enum pvo_conn_kind {
	PVO_CONN_OFFER = 1,
	PVO_CONN_ANSWER,
	PVO_CONN_READY,
	PVO_CONN_GO,
	/* the connection ends, said by the end that cannot rebind it (its
	 * requester cannot restart where the other's responder stood) */
	PVO_CONN_END_BY_PEER,  /* to the moved end */
	PVO_CONN_END_BY_MOVED, /* to the peer end */
};

struct pvo_conn_step {
	enum pvo_conn_kind kind;
	uint64_t gen;	   /* the move's */
	uint32_t vm_ip;	   /* the VM that moved (network order) */
	uint32_t qpn;	   /* its QP, as its guest knows it */
	uint32_t host_qpn; /* OFFER: its host QP's number now; ANSWER: the
			    * peer's */
	uint32_t peer_ip;  /* the other VM (network order) */
	uint32_t peer_qpn; /* its QP, as its guest knows it */
	/* OFFER: the moved QP's responder's next PSN; ANSWER: the peer's
	 * (psn) and where its requester restarts (psn2); READY: where the
	 * moved QP's requester restarts */
	uint32_t psn, psn2;
};

/*
 * A VM's object engine (vm->eng; NULL for VMs whose objects are all
 * software's): the verbs layer calls it as the guest makes and frees
 * objects, after its own checks. Each verbs object has an engine_part
 * pointer the engine fills with what it keeps of it (NULL: the object is
 * software only); the VM's own is vm->engine_part. A hook that returns a
 * status refuses the command with it; PVO_STATUS_OK with nothing done
 * keeps the object in software. Every hook is optional.
 */
struct pvo_vm_engine {
	const char *name;
	/* vm->eng was set (start-up, or a reload that set the VM up
	 * again) / is cleared: the VM's own part. */
	void (*vm_init)(struct pvo_vm *vm);
	void (*vm_fini)(struct pvo_vm *vm);
	/* Whether the VM's state can be saved for a migration: false, with
	 * a log line saying why, if it holds objects of the engine's. */
	bool (*migratable)(struct pvo_vm *vm);
	/* Migration (docs/migration.md): the VM's rings stopped for the
	 * switch-over, the dirty log on (vm_freeze); they run again, the
	 * migration failed or this is its destination (vm_thaw: true if
	 * connections wait for their peers, engine.h conn_step); a stream's
	 * objects were loaded and the engine makes its own for them, false
	 * (logged) if it cannot (vm_loaded); the numbers of the VM's objects
	 * whose host ones differ, a GArray of struct pvo_id_pair (vm_ids). */
	void (*vm_freeze)(struct pvo_vm *vm);
	bool (*vm_thaw)(struct pvo_vm *vm);
	bool (*vm_loaded)(struct pvo_vm *vm);
	/* Whether what vm_loaded began is done (false while a large MR is
	 * still being registered): the VM thaws only then. */
	bool (*vm_ready)(struct pvo_vm *vm);
	GArray *(*vm_ids)(struct pvo_vm *vm);
	/* A rebind step for a QP of this VM (the moved one for ANSWER and
	 * GO, the peer for OFFER and READY); what this side replies into
	 * *reply (kind 0: nothing). */
	void (*conn_step)(struct pvo_vm *vm, const struct pvo_conn_step *in,
			  struct pvo_conn_step *reply);
	/* What the engine holds on the host for the VM (pvo-ctl show). */
	void (*host_use)(const struct pvo_vm *vm, struct pvo_vm_host_use *u);

	void (*pd_free)(struct pvo_vm *vm, struct pvo_pd *pd);

	/* A user MR of npages 4 KiB guest pages (GPAs), before it is
	 * published; mr_take_key then gives it the engine's key (lkey ==
	 * rkey), by which mr_by_key finds it. mr_rereg makes the new MR
	 * of REREG_MR (pages NULL: the MR's own) before anything of the
	 * old one changes; on failure the old one stays. mr_reg may say
	 * PVO_STATUS_AGAIN (ctrl.h: a long registration goes on over
	 * several turns): it is called again with the same mr and pages
	 * until it answers, or mr_free ends it (the command was dropped). */
	enum pvo_status (*mr_reg)(struct pvo_vm *vm, struct pvo_mr *mr,
				  const uint64_t *pages, uint32_t npages);
	enum pvo_status (*mr_rereg)(struct pvo_vm *vm, struct pvo_mr *mr,
				    struct pvo_pd *pd, uint32_t access,
				    uint64_t iova, uint64_t length,
				    const uint64_t *pages, uint32_t npages);
	void (*mr_take_key)(struct pvo_vm *vm, struct pvo_mr *mr);
	struct pvo_mr *(*mr_by_key)(struct pvo_vm *vm, uint32_t key);
	void (*mr_free)(struct pvo_vm *vm, struct pvo_mr *mr);

	void (*cq_free)(struct pvo_cq *cq);
	void (*ah_free)(struct pvo_ah *ah);

	/* A new SRQ whose guest rings SRQ doorbells; resize before the SRQ
	 * moves to its new ring of entries; the doorbell rang. */
	enum pvo_status (*srq_create)(struct pvo_vm *vm, struct pvo_srq *srq);
	enum pvo_status (*srq_resize)(struct pvo_vm *vm, struct pvo_srq *srq,
				      uint32_t entries);
	void (*srq_doorbell)(struct pvo_vm *vm, struct pvo_srq *srq);
	void (*srq_free)(struct pvo_srq *srq);

	/*
	 * A new QP (rings mapped, fields set, the software engine created):
	 * the engine may take it (set qp->engine) and give it its device's
	 * QPN (qp->qpn). qp_modify carries a checked modify to the engine
	 * before the QP takes it (mask: PVO_QP_* bits but STATE; path: the
	 * decoded AV if mask has AV) and may refuse it. qp_sync_state
	 * brings the QP's state up to date before QUERY_QP. qp_resp_flags:
	 * PVO_QP_RESP_F_* bits of CREATE_QP's answer. qp_attach_mcast may
	 * refuse ATTACH_MCAST. qp_free runs after qp->engine->destroy.
	 * qp_path_mtu_max: the largest path MTU (IB_MTU_* value, 0: none)
	 * the engine's device gives the QP; the software engine counts the
	 * QP's PSNs at it too, so that a connection handed from one engine
	 * to the other numbers its messages alike.
	 */
	enum pvo_status (*qp_create)(struct pvo_qp *qp);
	enum pvo_status (*qp_modify)(struct pvo_qp *qp, unsigned int next,
				     uint32_t mask, const struct pvo_qp_attr *a,
				     const struct pvo_path *path);
	void (*qp_sync_state)(struct pvo_qp *qp);
	uint32_t (*qp_resp_flags)(const struct pvo_qp *qp);
	unsigned int (*qp_path_mtu_max)(const struct pvo_qp *qp);
	enum pvo_status (*qp_attach_mcast)(struct pvo_qp *qp);
	void (*qp_free)(struct pvo_qp *qp);
};

/* engine.c: the object engine of a VM of that config, or NULL. */
const struct pvo_vm_engine *pvo_vm_engine_for(const struct pvo_vm_config *cfg);

/* engine.c: the engines' devices, opened at start-up for the tenants
 * that name one; false with *err (g_free) saying what is missing and
 * what to do. A reload may use only devices opened at start-up. */
bool pvo_engines_open(const struct pvo_daemon_config *cfg, char **err);
void pvo_engines_close(void);
bool pvo_engines_reloadable(const struct pvo_daemon_config *cfg, char **err);

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
