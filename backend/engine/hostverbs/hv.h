/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The host-verbs transport's own objects, shared by its files
 * (hostverbs.h says what each file does). */
#ifndef PVO_HV_H
#define PVO_HV_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "hostverbs.h"
#include "mr_alias.h"

struct pvo_hv_mr {
	struct ibv_mr *mr; /* mr->context: its device */
	struct pvo_mr_alias alias;
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
	bool broken; /* the guest broke its ring: logged, nothing more taken */
};

struct pvo_hv_qp {
	struct ibv_qp *qp;
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
	/* SQ[sq_posted] is not for the host: it completes with this
	 * status (PVO_WC_*; 0: none) once the host has completed the WQEs
	 * before it */
	uint8_t stuck;
	bool flushing; /* flush_rest polls the host CQs */
};

/* hv_device.c: one per (device, port) of the tenants */
struct pvo_hv_device {
	char name[64];
	struct ibv_context *ctx;
	struct ibv_comp_channel *channel;
	uint8_t port;
	struct ibv_port_attr port_attr;
	struct pvo_watch *comp_src, *async_src;
	GHashTable *by_qpn; /* host QPN -> guest QP (hv_qp.c) */
};

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
/* Guest SGEs (little-endian) as host ones, n of them. */
void pvo_hv_take_sges(struct ibv_sge *s, const struct pvo_sge *g,
		      unsigned int n);
/* The completion channel fired: polls every CQ that has an event. */
void pvo_hv_cq_events(struct pvo_hv_device *d);

/* hv_qp.c: one host completion of qp (its guest QP). */
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

#endif
