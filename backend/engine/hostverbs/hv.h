/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The host-verbs engine's own objects and the calls between its files
 * (hostverbs.h says what each file does). */
#ifndef PVO_HV_H
#define PVO_HV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "ah.h"
#include "config.h"
#include "cq.h"
#include "engine.h"
#include "hostverbs.h"
#include "hv_budget.h"
#include "mr.h"
#include "mr_alias.h"
#include "peer_alias.h"
#include "pvo-device.h"
#include "replay_plan.h"
#include "qp.h"
#include "srq.h"
#include "timer.h"
#include "vm.h"

/* The VM's part: MR key -> MR for the MRs whose keys the host device
 * chose; until quiet_until, no connection waits for the host to resolve
 * an address (hv_neigh.c); what its host MRs hold (hv_budget.h). */
struct pvo_hv_vm {
	GHashTable *keys;
	gint64 quiet_until;
	struct pvo_hv_use use;
	/* a large MR whose registration was dropped while its thread pins
	 * it: still charged, freed when the thread is done (hv_mr.c) */
	struct pvo_hv_mr *orphan;
	struct pvo_timer reap;
	/* MRs whose host key is not their guest key (made again after a
	 * migration): receive SGEs then translate (pvo_hv_lkey) */
	uint32_t rekeyed;
	/* migrated MRs too large for one call, made again over turns of
	 * the loop before the VM thaws (struct pvo_hv_remake, hv_mr.c) */
	GQueue remakes;
	struct pvo_timer remake;
};

/* An AH's part, made when a host UD QP first sends with it: its host
 * AH, NULL if that failed (the tenant's network does not reach the
 * destination): sends with it fail. */
struct pvo_hv_ah {
	struct ibv_ah *ah;
	/* the destination's move it was made after (pvo_alias_gen) */
	uint64_t gen;
	/* the one before the destination's last move: a send posted before
	 * may still name it */
	struct ibv_ah *old;
};

enum pvo_hv_mr_step { HV_MR_COUNT, HV_MR_MAP, HV_MR_PIN };

struct pvo_hv_pin;

struct pvo_hv_mr {
	struct ibv_mr *mr; /* mr->context: its device */
	struct pvo_mr_alias alias;
	/* a large MR, made over several turns (hv_mr.c): where it is */
	enum pvo_hv_mr_step step;
	struct pvo_mr_alias_walk walk;
	uint32_t runs;		/* counted, charged from HV_MR_MAP on */
	uint64_t bytes;		/* pinned bytes charged */
	struct pvo_hv_pin *pin; /* its thread, in HV_MR_PIN */
	struct ibv_pd *own_pd;	/* an orphan's PD, which the guest freed */
	/* made again for a migrated MR, whose key stays the guest's */
	bool remade;
};

struct pvo_hv_cq {
	struct ibv_cq *cq; /* cq_context: the guest's struct pvo_cq */
	struct pvo_hv_device *dev;
	uint32_t need; /* WQEs of the host queues on it */
};

/* What a completion needs of the guest WQE it answers. */
struct pvo_hv_wqe {
	uint64_t wr_id;
	uint8_t opcode; /* PVO_WR_* (send), 0 (receive) */
	bool signaled;	/* send: the guest wants a CQE on success */
	bool used;	/* SRQ slot: on the host */
	bool held;	/* SRQ slot: off the host SRQ by the freeze, not done */
	/* send: its first PSN on the host QP and the PSNs it takes (the
	 * back-end's count, for QUERY_QP and re-creating the QP) */
	uint32_t psn, npsn;
	/* UD receive: its first SGE (as the guest wrote it), where the
	 * host put the GRH */
	uint32_t lkey, length;
	uint64_t addr;
};

/* What a host SRQ serves (hostverbs.h: pvo_hv_srq_create). */
enum pvo_hv_srq_mode {
	PVO_HV_SRQ_UNSET, /* no QP on it receives yet */
	PVO_HV_SRQ_HOST,  /* host QPs: receives go to the host SRQ */
	PVO_HV_SRQ_SW,	  /* software QPs: the engine reads the ring */
};

struct pvo_hv_srq {
	struct ibv_srq *srq;
	struct pvo_hv_device *dev;
	enum pvo_hv_srq_mode mode;
	/* guest ring indices before this one went to the host; the ring's
	 * cons passes them as they complete (in any order) */
	uint32_t posted;
	/* host WQEs by host wr_id (a slot); free slots on a stack */
	uint32_t slots, nfree;
	struct pvo_hv_wqe *wqe;
	uint32_t *free;
	/* each slot's guest WQE as read (stride bytes) and the ring
	 * position it came from: the guest may write that position again
	 * before it completes, and a move puts the WQEs on the host back in
	 * the ring (pvo_hv_srq_freeze); charged to the VM's max-host-mem */
	uint8_t *copy;
	uint32_t *pos;
	size_t stride;
	struct pvo_host_budget *budget;
	/* slots the freeze took off the host SRQ (a QP it stopped had
	 * begun a message into them) without completing them */
	uint32_t held;
	bool broken; /* the guest broke its ring: logged, nothing more taken */
};

struct pvo_hv_qp {
	struct ibv_qp *qp;
	/* its number, by which host completions find the guest QP (the
	 * guest's qp->qpn is the number it was created with) */
	uint32_t host_qpn;
	struct pvo_hv_device *dev;
	/* receive completions its receive CQ was grown for */
	uint32_t rcq_need;
	/* being destroyed: its host completions release SRQ WQEs and
	 * write no CQE */
	bool gone;
	/* the host QP carries the guest QP's work (RC / UC: RTR to a
	 * remote peer; UD: from INIT on); false while the software engine
	 * does */
	bool active;
	/* guest ring indices handed to the host and, in the same order,
	 * what each one's completion needs (host wr_id: the index) */
	uint32_t sq_posted, rq_posted;
	struct pvo_hv_wqe *sq, *rq;
	/* the receive the software engine held when it handed the QP over
	 * (qp->resp.msg.rw) is on the host QP (hv_post.c, post_held) */
	bool held_posted;
	/* SQ[sq_posted] is not for the host: it completes with this
	 * status (PVO_WC_*; 0: none) once the host has completed the WQEs
	 * before it */
	uint8_t stuck;
	bool flushing; /* flush_rest polls the host CQs */
	/* the PSN of the next send WQE handed to the host QP (from the
	 * guest's sq_psn on), and its path MTU in bytes */
	uint32_t next_psn, mtu;
	/* RC / UC on the host: the peer's IPv4 (network order), by which
	 * its guest identifiers translate after it moved (peer_alias.h) */
	uint32_t peer_ip;
	/* stopped for a migration's switch-over (hv_migrate.c): the host
	 * QP is in ERROR, its flushed WQEs stay the guest's to post again */
	bool frozen;
	/* its connection being rebound (hv_rebind.c): the step it took
	 * last, for the move of generation rb_gen; what it replied (rb_psn,
	 * rb_psn2); a peer's: the moved QP's host QPN. hold: the sends wait
	 * for the peer's go. */
	uint8_t rb_step;
	bool hold;
	uint64_t rb_gen;
	uint32_t rb_psn, rb_psn2, rb_host_qpn;
	/* a rebind waiting for the other end's next step ends the
	 * connection when it fires (hv_rebind.c) */
	struct pvo_timer rb_timer;
};

/* Where a QP's rebind stands (pvo_hv_qp rb_step). */
enum {
	HV_RB_NONE,
	HV_RB_OFFERED,	/* moved end: its offer is out */
	HV_RB_READY,	/* moved end: ready sent, sends held */
	HV_RB_ANSWERED, /* peer end: its answer is out */
	HV_RB_DONE,
	HV_RB_ENDED, /* this end or the other could not rebind it */
};

/* The engine's parts of the verbs objects (NULL: software only). */
static inline struct pvo_hv_vm *to_hv_vm(const struct pvo_vm *vm)
{
	return vm->engine_part;
}

static inline struct ibv_pd *to_hv_pd(const struct pvo_pd *pd)
{
	return pd->engine_part;
}

static inline struct pvo_hv_mr *to_hv_mr(const struct pvo_mr *mr)
{
	return mr->engine_part;
}

static inline struct pvo_hv_cq *to_hv_cq(const struct pvo_cq *cq)
{
	return cq->engine_part;
}

static inline struct pvo_hv_srq *to_hv_srq(const struct pvo_srq *srq)
{
	return srq->engine_part;
}

static inline struct pvo_hv_ah *to_hv_ah(const struct pvo_ah *ah)
{
	return ah->engine_part;
}

static inline struct pvo_hv_qp *to_hv_qp(const struct pvo_qp *qp)
{
	return qp->engine_part;
}

/* hv_device.c: one per (device, port) of the tenants */
/* A host device as one thread opened it: its completion channel and
 * async events are on that thread's loop, with the QPs of the VMs it
 * serves. */
struct pvo_hv_device {
	char name[64];
	unsigned int thread;
	struct ibv_context *ctx;
	struct ibv_comp_channel *channel;
	uint8_t port;
	struct ibv_port_attr port_attr;
	struct pvo_watch *comp_src, *async_src;
	GHashTable *by_qpn; /* host QPN -> guest QP (hv_qp.c) */
};

/* The IPv4 (network order) of an IPv4-mapped GID (a RoCE v2 GID of the
 * tenant's network), 0 for another GID. */
static inline uint32_t pvo_hv_gid_ip(const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
	uint32_t ip;

	if (memcmp(gid, v4mapped, 12))
		return 0;
	memcpy(&ip, gid + 12, 4);
	return ip;
}

/* The IPv4-mapped GID of ip (network order). */
static inline void pvo_hv_ip_gid(uint32_t ip, uint8_t gid[16])
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &ip, 4);
}

/* hv_migrate.c: the last move of qp's peer VM at ip this back-end knows
 * of (its arrival here, or the numbers it sent from elsewhere), 0 if
 * none: a host AH made before it may not reach that VM any more. */
uint64_t pvo_hv_peer_gen(const struct pvo_qp *qp, uint32_t ip);
/* The host number of a guest number v of the VM at ip if this back-end
 * serves it and made it again from a stream (else v). */
uint32_t pvo_hv_local_host(const struct pvo_qp *qp, uint32_t ip,
			   enum pvo_alias_kind kind, uint32_t v);

/* A peer's guest identifier as its host one: identity unless the peer
 * moved (elsewhere: peer_alias.h; here: its own objects). */
static inline uint32_t pvo_hv_peer_host(const struct pvo_qp *qp, uint32_t ip,
					enum pvo_alias_kind kind, uint32_t v)
{
	uint32_t h;

	if (!ip)
		return v;
	if (pvo_alias_any()) {
		h = pvo_alias_host(qp->vm->cfg->tenant->vni, ip, kind, v);
		if (h != v)
			return h;
	}
	return pvo_hv_local_host(qp, ip, kind, v);
}

/* The device of the tenant (transport = hostverbs), or NULL. */
struct pvo_hv_device *pvo_hv_dev(const struct pvo_tenant *t);

/* The host GID index for the VM's GID at guest index sgid_index (a host
 * RoCE v2 GID of the tenant's netdev on the port), or -1 with *why. */
int pvo_hv_sgid_index(struct pvo_vm *vm, uint8_t sgid_index, char **why);
/* Whether the tenant's netdev reaches dgid directly (one of its IPv4
 * subnets): a guest cannot address a GID outside its tenant's network.
 * False with *why. */
bool pvo_hv_dgid_allowed(struct pvo_vm *vm, const uint8_t dgid[16], char **why);

/*
 * hv_neigh.c: before a host call that resolves dgid's link-layer address
 * (ibv_modify_qp to RTR, ibv_create_ah). PVO_STATUS_EHOSTUNREACH (logged)
 * to refuse it without waiting; else OK, *waits if the call may wait for
 * ARP. After the call, with its error (0: none): EHOSTUNREACH (logged) if
 * that was the address not resolving, else OK.
 */
enum pvo_status pvo_hv_resolve_begin(struct pvo_vm *vm,
				     const uint8_t dgid[16], bool *waits);
enum pvo_status pvo_hv_resolve_end(struct pvo_vm *vm, const uint8_t dgid[16],
				   bool waited, int err);

/* hv_mr.c: the host PD of a guest PD, made on first use (NULL: failed,
 * logged). */
struct ibv_pd *pvo_hv_pd(struct pvo_vm *vm, struct pvo_pd *pd);

/* hv_cq.c: the host CQ of a guest CQ, made on first use (NULL: failed,
 * logged). */
struct ibv_cq *pvo_hv_cq(struct pvo_vm *vm, struct pvo_cq *cq);
/* The host CQ takes more completions (a QP's queue of that many WQEs
 * joins it; a QP that goes subtracts from cq->hv->need); false if the
 * device refuses to grow (logged). */
bool pvo_hv_cq_grow(struct pvo_vm *vm, struct pvo_cq *cq, uint32_t more);
/* Takes every completion the host CQ of cq holds (none: nothing). */
unsigned int pvo_hv_cq_poll(struct pvo_cq *cq);
/* Takes every completion the host CQs of qp hold (send, then receive):
 * how many. */
unsigned int pvo_hv_qp_poll(struct pvo_qp *qp);
/* Guest SGEs (little-endian) as host ones, n of them. */
void pvo_hv_take_sges(struct ibv_sge *s, const struct pvo_sge *g,
		      unsigned int n);
/* The completion channel fired: polls every CQ that has an event. */
void pvo_hv_cq_events(struct pvo_hv_device *d);

/* hv_qp.c: the host QP's state, or -1 if the device does not say. */
int pvo_hv_host_state(struct pvo_qp *qp);
/* The host AH of a guest AH, made on a UD QP's first send with it, or
 * NULL: the AH is then refused for good (logged once). */
struct ibv_ah *pvo_hv_host_ah(struct pvo_qp *qp, struct pvo_ah *ah);

/* hv_post.c: one host completion of qp (its guest QP). */
void pvo_hv_qp_complete(struct pvo_qp *qp, const struct ibv_wc *wc);
/* A host QP of d by number (its guest QP), or NULL. */
struct pvo_qp *pvo_hv_qp_by_host_qpn(struct pvo_hv_device *d, uint32_t qpn);
/* An async event on a host QP. */
void pvo_hv_qp_event(struct pvo_qp *qp, enum ibv_event_type type);

/* hv_srq.c: host wr_ids of SRQ receives carry this bit (and the slot) */
#define HV_WR_SRQ (1ull << 33)
/* The guest WQE of a host SRQ completion (its slot freed, the SRQ's
 * cons passed, the limit checked), or false if the wr_id names no WQE
 * on the host (logged). *e is a copy. */
bool pvo_hv_srq_take(struct pvo_vm *vm, struct pvo_srq *srq, uint64_t wr_id,
		     struct pvo_hv_wqe *e);
/* A QP on srq starts receiving: host (true) or software. False, logged,
 * if the SRQ serves the other kind. A host SRQ then gets the receives
 * waiting in the ring. */
bool pvo_hv_srq_claim(struct pvo_qp *qp, bool host);
/* A host SRQ completion flushed by the freeze: its WQE was not
 * consumed, and goes to the host SRQ again where the VM runs next. */
void pvo_hv_srq_hold(struct pvo_vm *vm, struct pvo_srq *srq, uint64_t wr_id);
/* After the freeze's completions: the guest WQEs on the host SRQ are
 * written back to the ring from its consumer on, in the order they were
 * posted, so a destination posts the ring as it stands. */
void pvo_hv_srq_freeze(struct pvo_vm *vm, struct pvo_srq *srq);
/* Where the VM runs after a freeze: on the host SRQ it had (a failed or
 * cancelled migration), what the freeze held goes back; a new one (at
 * a destination: serving the kind of QPs it served) gets the ring. */
void pvo_hv_srq_thaw(struct pvo_vm *vm, struct pvo_srq *srq);
/* At a destination: which kind of QPs the SRQ serves, as its QPs say. */
void pvo_hv_srq_loaded(struct pvo_vm *vm, struct pvo_srq *srq);
/* Why the connections in software of vm's SRQ cannot go onto the host
 * device when one end moves (NULL: they can; g_free): a UD QP on it, a
 * message arriving in slices, or (mover: the moving VM's GID) a QP on
 * it connected to a VM that stays. */
char *pvo_hv_srq_unmovable(struct pvo_vm *vm, struct pvo_srq *srq,
			   const uint8_t *mover);
/* The SRQ of software QPs serves host QPs from now on: its receives go
 * to the host SRQ from the ring's consumer on. */
void pvo_hv_srq_to_host(struct pvo_vm *vm, struct pvo_srq *srq);

struct pvo_vm;
struct pvo_pd;
struct pvo_ah;
struct pvo_mr;
struct pvo_cq;
struct pvo_qp;
struct pvo_srq;
struct pvo_path;
struct pvo_qp_attr;

/* The VM holds host objects: their count, 0 if none. */
uint32_t pvo_hv_objects(const struct pvo_vm *vm);

/* hv_migrate.c: the vm engine's migration hooks (engine.h). */
bool pvo_hv_migratable(struct pvo_vm *vm);
void pvo_hv_vm_freeze(struct pvo_vm *vm);
bool pvo_hv_vm_thaw(struct pvo_vm *vm);
bool pvo_hv_vm_loaded(struct pvo_vm *vm);
bool pvo_hv_vm_ready(struct pvo_vm *vm);
GArray *pvo_hv_vm_ids(struct pvo_vm *vm);
/* hv_post.c: the QP's send WQEs from its consumer index to the guest's
 * producer, for the replay plan, PSNs from first (g_free; NULL with *n 0
 * if there are none or the ring cannot be read), *next the PSN after
 * them. */
struct pvo_replay_wqe *pvo_hv_sq_pending(struct pvo_qp *qp, uint32_t first,
					 uint32_t *n, uint32_t *next);
/* Completes the n oldest send WQEs as on their ACK (a CQE if signaled);
 * with status, the next one with it and the QP to error. */
void pvo_hv_sq_complete_oldest(struct pvo_qp *qp, uint32_t n, uint8_t status);
/* hv_qp.c: the host QP from RESET to RTS again with the guest QP's
 * attributes, to host QP dest_qpn, its responder at rq_psn, its requester
 * at sq_psn; an error status, logged, if the host refuses. */
enum pvo_status pvo_hv_qp_reconnect(struct pvo_qp *qp, uint32_t dest_qpn,
				    uint32_t rq_psn, uint32_t sq_psn);
/* hv_rebind.c: the vm engine's conn_step (engine.h). */
void pvo_hv_conn_step(struct pvo_vm *vm, const struct pvo_conn_step *in,
		      struct pvo_conn_step *out);
/* The QP's rebind waits for the other end from now: if that one takes
 * no step within the QP's own retry time (at least
 * HV_RB_GIVE_UP_MIN_USEC), the connection ends as if the peer were gone
 * (in the calling thread's loop: the VM's). */
void pvo_hv_rebind_wait(struct pvo_qp *qp);
void pvo_hv_rebind_cancel(struct pvo_qp *qp);
/* longer than the announcement's repeats (0, 0.2, 1.2 s: moves.c) */
#define HV_RB_GIVE_UP_MIN_USEC 3000000u

/* hv_qp.c: the host QP through RESET to the guest QP's state (a UD QP:
 * up to RTS with its Q_Key and sq_psn; an RC / UC QP stays in RESET until
 * its RTR), as after a migration; an error status, logged, if the host
 * refuses. */
enum pvo_status pvo_hv_qp_rebuild(struct pvo_qp *qp);
/* ATTACH_MCAST: refused on host QPs (their receives are the device's). */
enum pvo_status pvo_hv_qp_attach_mcast(struct pvo_qp *qp);

/* MRs of a host-verbs VM: a host MR over the MR's guest pages (the GPAs
 * of its npages 4 KiB pages), whose key becomes mr->key. */
enum pvo_status pvo_hv_reg_mr(struct pvo_vm *vm, struct pvo_mr *mr,
			      const uint64_t *pages, uint32_t npages);
void pvo_hv_dereg_mr(struct pvo_vm *vm, struct pvo_mr *mr);
/* REREG_MR of a host MR: a new host MR with the new PD, access and
 * range (pages NULL: the MR's own), which replaces the old one; the
 * caller then takes its key. On failure the old one stays. */
enum pvo_status pvo_hv_rereg_mr(struct pvo_vm *vm, struct pvo_mr *mr,
				struct pvo_pd *pd, uint32_t access,
				uint64_t iova, uint64_t length,
				const uint64_t *pages, uint32_t npages);
/* A migrated MR's host MR, made over this host's guest memory; mr->key
 * (the guest's) keeps naming it (hv_migrate.c). One of more pages than
 * one call pins is made over turns of the loop, on the registration
 * thread: PVO_STATUS_OK at once, pvo_hv_mr_remaking until it is done. */
enum pvo_status pvo_hv_mr_remake(struct pvo_vm *vm, struct pvo_mr *mr);
/* Whether migrated MRs are still being made (the VM waits to thaw). */
bool pvo_hv_mr_remaking(struct pvo_vm *vm);
/* The host lkey of a guest key (itself while no MR was made again). */
uint32_t pvo_hv_lkey(struct pvo_vm *vm, uint32_t key);
/* The MR a key names in a host-verbs VM, or NULL. */
struct pvo_mr *pvo_hv_mr_by_key(struct pvo_vm *vm, uint32_t key);
/* mr->key becomes its host MR's key (lkey == rkey), by which
 * pvo_hv_mr_by_key finds it. */
void pvo_hv_take_key(struct pvo_vm *vm, struct pvo_mr *mr);
void pvo_hv_pd_free(struct pvo_vm *vm, struct pvo_pd *pd);
/* The VM goes: waits for a dropped registration's thread. */
void pvo_hv_mr_fini(struct pvo_vm *vm);
/* Its reap timer (vm init). */
void pvo_hv_mr_init(struct pvo_vm *vm);
void pvo_hv_cq_free(struct pvo_cq *cq);
/* The host AH of an AH (made by a host UD QP's first send with it). */
void pvo_hv_ah_free(struct pvo_ah *ah);

/*
 * A new user SRQ of a host-verbs VM whose guest rings SRQ doorbells
 * (PVO_SRQ_F_DOORBELL): a host SRQ of the same size on the host PD,
 * srq->hv. PVO_STATUS_OK and nothing done for other SRQs.
 *
 * One SRQ serves either host QPs or software ones: the first QP on it
 * that starts receiving (RC / UC: RTR; UD: INIT) decides. Receives the
 * guest posted before stay in its ring until then; a host SRQ gets them
 * when the first host QP connects. A QP that would need the other kind
 * (a local peer on an SRQ of host QPs, or the reverse) is refused at that
 * modify with EINVAL and a log line. The choice lasts as long as the SRQ.
 */
enum pvo_status pvo_hv_srq_create(struct pvo_vm *vm, struct pvo_srq *srq);
void pvo_hv_srq_free(struct pvo_srq *srq);
/* RESIZE_SRQ to entries, before the SRQ moves to the new ring: the host
 * SRQ grows with it (it never shrinks). */
enum pvo_status pvo_hv_srq_resize(struct pvo_vm *vm, struct pvo_srq *srq,
				  uint32_t entries);
/* Its doorbell rang: new receives go to the host SRQ (if it serves host
 * QPs already). */
void pvo_hv_srq_doorbell(struct pvo_vm *vm, struct pvo_srq *srq);

/*
 * A new user RC / UC / UD QP of a host-verbs VM (RC / UC: with no SRQ or
 * one with a host SRQ; UD: no SRQ) (its rings
 * mapped, its fields set): creates the host QP, sets qp->qpn to its
 * number and the engine to the host-verbs one. PVO_STATUS_OK and nothing
 * done for QPs that stay in software.
 */
enum pvo_status pvo_hv_qp_create(struct pvo_qp *qp);
/*
 * Carries a checked modify to the host QP before the guest's QP takes it
 * (mask: PVO_QP_* bits but STATE; path: decoded AV if mask has AV). On
 * INIT -> RTR of an RC / UC QP it picks the engine: software for a
 * destination served by this back-end, the host QP otherwise; a UD QP
 * follows the guest's from RESET -> INIT on. An error status, with a log
 * line naming the host object, if the host refuses.
 */
enum pvo_status pvo_hv_qp_modify(struct pvo_qp *qp, unsigned int next,
				 uint32_t mask, const struct pvo_qp_attr *a,
				 const struct pvo_path *path);
void pvo_hv_qp_free(struct pvo_qp *qp);
/* QUERY_QP: a host QP the device moved to error takes the guest's QP
 * there too. */
void pvo_hv_qp_sync_state(struct pvo_qp *qp);
/* An RC / UC QP connected in software to a VM of this back-end that
 * moved away: the host QP takes its work where the software engine
 * stands, once the rebind makes it again (hv_rebind.c). False (the QP
 * in error, logged) if it cannot: its receives come from an SRQ. */
bool pvo_hv_qp_adopt(struct pvo_qp *qp);
/* The path MTU of the QP's host QP at most (IB_MTU_*; 0: no host QP):
 * its device's and its guest port's. */
unsigned int pvo_hv_qp_path_mtu_max(const struct pvo_qp *qp);

/* Guest receive WQEs wait for a doorbell on QPs that carry this flag in
 * their CREATE_QP response (pvo-device.h: PVO_QP_RESP_F_RQ_DOORBELL). */
uint32_t pvo_hv_qp_resp_flags(const struct pvo_qp *qp);

/* hv_post.c: the QP engine of host QPs */
extern const struct pvo_engine_ops pvo_engine_hostverbs;

/* The name of the host device of a QP with a host QP. */
static inline const char *hv_devname(const struct pvo_qp *qp)
{
	return to_hv_qp(qp)->dev->name;
}

#endif
