/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host-verbs transport (docs/hostverbs.md): a VM whose tenant has
 * transport = hostverbs gets, for each of its RC and UC QPs that talks
 * to another host and each of its user UD QPs, a QP of the host's RDMA
 * device, which moves the data between guest memory and the wire
 * itself. The guest sees the host objects' names: its MR keys are the
 * host MRs' keys and its QPNs the host QPs' numbers, so remote peers
 * reach guest memory directly.
 *
 *   hv_device.c  the host device and port, its completion channel and
 *                async events; which host GID a tenant's VM sends from
 *   hv_mr.c      host PDs per guest PD, host MRs over aliased guest pages
 *   hv_cq.c      host CQs per guest CQ; host completions to guest CQEs
 *   hv_qp.c      host QPs: create, modify, and the engine (engine.h)
 *                that posts guest WQEs on them
 *   hv_neigh.c   destinations the host has no MAC for: refused before
 *                a call that would wait for ARP on the loop
 *
 *   hv_srq.c     host SRQs: guest SRQ receives posted on them, their
 *                completions to the receiving QP's CQ
 *
 * Same-host RC / UC pairs, GSI QPs, UD QPs with an SRQ, kernel QPs,
 * memory windows and fast-reg MRs keep the software engine (local and
 * overlay transports). The host device is process-wide, like the configuration;
 * its sources are on the loop that opened it.
 */
#ifndef PVO_HOSTVERBS_H
#define PVO_HOSTVERBS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "pvo-device.h"

struct pvo_vm;
struct pvo_pd;
struct pvo_ah;
struct pvo_mr;
struct pvo_cq;
struct pvo_qp;
struct pvo_srq;
struct pvo_path;
struct pvo_qp_attr;

/*
 * Opens [daemon] hostverbs-device at start-up if a tenant uses it. False
 * with *err (g_free) naming what is missing and what to do.
 */
bool pvo_hv_open(const struct pvo_daemon_config *cfg, char **err);
void pvo_hv_close(void);
/* A reload may not ask for the device when it was not opened at
 * start-up: false with *err (g_free). */
bool pvo_hv_reloadable(const struct pvo_daemon_config *cfg, char **err);

/* Whether the VM's tenant uses the host-verbs transport and its device
 * is open (the daemon opened it at start-up). */
bool pvo_hv_vm(const struct pvo_vm *vm);

/* The VM holds host objects (a reason to refuse its migration): their
 * count, 0 if none. */
uint32_t pvo_hv_objects(const struct pvo_vm *vm);

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
/* The MR a key names in a host-verbs VM, or NULL. */
struct pvo_mr *pvo_hv_mr_by_key(struct pvo_vm *vm, uint32_t key);
/* mr->key becomes its host MR's key (lkey == rkey), by which
 * pvo_hv_mr_by_key finds it. */
void pvo_hv_take_key(struct pvo_vm *vm, struct pvo_mr *mr);
void pvo_hv_pd_free(struct pvo_pd *pd);
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

/* Guest receive WQEs wait for a doorbell on QPs that carry this flag in
 * their CREATE_QP response (pvo-device.h: PVO_QP_RESP_F_RQ_DOORBELL). */
uint32_t pvo_hv_qp_resp_flags(const struct pvo_qp *qp);

extern const struct pvo_engine_ops pvo_engine_hostverbs;

#endif
