// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Live migration of a host-verbs VM (docs/migration.md, "VMs on host
 * verbs"). What may move: its PDs, MRs, CQs, SRQs, UD QPs and RC / UC
 * connections to VMs of the deployment; a connection in software to a
 * VM of this back-end (it goes onto the host device, both ends rebound
 * as for a remote peer) unless an SRQ feeds either end; one to a peer
 * that is not ours or an MR still being registered keeps the VM where
 * it is (the save refuses it, saying which). At a destination, MRs too
 * large for one call are registered over turns of the loop (hv_mr.c)
 * and the VM thaws once they are.
 *
 * At the freeze the VM's active host QPs go to ERROR, so the device
 * writes no more into guest memory; their completions are taken (the
 * flushed ones are not completions: their WQEs stay in the guest's rings
 * and are posted again where the VM runs next), and every page the
 * device may have written is marked dirty, as no write of the device
 * passed the dirty log. At the destination, once the stream is loaded,
 * the VM's objects are made again on its host device over this host's
 * guest memory, keeping the numbers the guest knows (QPNs, keys): the
 * host ones differ, and the VM's peers learn them from the rebind offer
 * its announcement carries (hv_ids below, transport/overlay/moves.c). A
 * migration that fails or is cancelled takes the host QPs through RESET
 * back to where they were, same numbers.
 */
#include <inttypes.h>
#include <glib.h>

#include "hostverbs.h"
#include "hv.h"
#include "log.h"
#include "mr.h"
#include "qp.h"
#include "srq.h"
#include "transport.h"
#include "vm.h"

/* A connection on the host device to a peer that cannot follow a move:
 * one neither served here nor placed behind a VTEP of ours by the
 * tenant's map (which has no entry for a VM that runs here once it
 * came back: moves.c, forget_elsewhere). */
static bool peer_not_ours(const struct pvo_qp *qp)
{
	uint32_t vni = qp->vm->cfg->tenant->vni;

	return qp->type != PVO_QPT_UD &&
	       !pvo_served_by_gid(vni, qp->attr.path.dgid) &&
	       !pvo_transport_vm_of_ours(vni,
					 pvo_hv_gid_ip(qp->attr.path.dgid));
}

/* Why a connection in software to a VM of this back-end cannot go onto
 * the host device once one end leaves (NULL: it can; hv_rebind.c): an
 * SRQ at either end goes onto the device with all its QPs, which the
 * software engine then no longer serves (pvo_hv_srq_unmovable). */
static char *software_unmovable(const struct pvo_qp *qp)
{
	struct pvo_vm *peer =
	    pvo_served_by_gid(qp->vm->cfg->tenant->vni, qp->attr.path.dgid);
	struct pvo_qp *pq =
	    peer ? pvo_qp_by_qpn(peer, qp->attr.dest_qpn) : NULL;
	const struct pvo_srq *srq = NULL;
	char *why = NULL, *out;

	/* an SRQ goes onto the host device with all its QPs: at the
	 * peer's end they must all follow this VM */
	if (qp->srq) {
		srq = qp->srq;
		why = pvo_hv_srq_unmovable(qp->vm, qp->srq, NULL);
	}
	if (!why && pq && pq->srq) {
		srq = pq->srq;
		why = pvo_hv_srq_unmovable(peer, pq->srq, pq->attr.path.dgid);
	}
	if (!why)
		return NULL;
	out = g_strdup_printf("%s QP 0x%x is connected in software to QP "
			      "0x%x of a VM of this back-end, and the SRQ "
			      "0x%x %s receives from cannot go onto the host "
			      "device: %s",
			      qp->type == PVO_QPT_RC ? "RC" : "UC", qp->qpn,
			      qp->attr.dest_qpn, srq->handle,
			      srq == qp->srq ? "it" : "that QP", why);
	g_free(why);
	return out;
}

/* Why the VM cannot move (NULL: it can), g_free. */
static char *unmovable(struct pvo_vm *vm)
{
	uint32_t h = 0;
	void *obj;

	if (pvo_hv_mr_remaking(vm))
		return g_strdup("the MRs it came with are still being "
				"registered here");
	while ((h = pvo_table_next(&vm->mrs, h, &obj))) {
		struct pvo_mr *mr = obj;

		if (to_hv_mr(mr) && !to_hv_mr(mr)->mr)
			return g_strdup_printf(
			    "MR key 0x%x (%" PRIu64 " pages) is still being "
			    "registered",
			    mr->key, pvo_mr_npages(mr->iova, mr->length));
	}
	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;

		if (!to_hv_qp(qp))
			continue;
		if (qp->type != PVO_QPT_UD && qp->state != PVO_QPS_RESET &&
		    qp->state != PVO_QPS_INIT && qp->state != PVO_QPS_ERR &&
		    !to_hv_qp(qp)->active) {
			char *why = software_unmovable(qp);

			if (why)
				return why;
			continue;
		}
		if (to_hv_qp(qp)->active && !vm->cfg->hv_migration_error &&
		    peer_not_ours(qp)) {
			char gid[64];

			return g_strdup_printf(
			    "%s QP 0x%x is connected to %s, which is not a VM "
			    "of this deployment: that peer could not follow",
			    qp->type == PVO_QPT_RC ? "RC" : "UC", qp->qpn,
			    pvo_gid_str(qp->attr.path.dgid, gid, sizeof(gid)));
		}
		if (qp->type == PVO_QPT_UD && qp->state > PVO_QPS_RTS)
			return g_strdup_printf("UD QP 0x%x is in error",
					       qp->qpn);
	}
	return NULL;
}

bool pvo_hv_migratable(struct pvo_vm *vm)
{
	char *why = unmovable(vm);

	if (!why)
		return true;
	pvo_log(pvo_vm_name(vm),
		"migration refused: the VM uses the host-verbs transport and "
		"%s (docs/migration.md); it runs on here. Stop its RDMA "
		"connections first, or use transport = overlay",
		why);
	g_free(why);
	return false;
}

/* The pages of an MR the device may write, marked dirty. */
static void dirty_mr(struct pvo_vm *vm, struct pvo_mr *mr)
{
	uint64_t addr = mr->iova, end = mr->iova + mr->length, avail, gpa;

	if (!(mr->access & (PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |
			    PVO_ACCESS_REMOTE_ATOMIC)))
		return;
	while (addr < end) {
		gpa = pvo_mr_gpa(mr, addr, &avail);
		if (!avail)
			break;
		avail = MIN(avail, end - addr);
		pvo_gmem_log_dirty(vm, gpa, avail);
		addr += avail;
	}
}

void pvo_hv_vm_freeze(struct pvo_vm *vm)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	char *why = unmovable(vm);
	uint32_t h = 0;
	void *obj;

	/* one that cannot move keeps its connections: the save refuses it */
	if (why) {
		g_free(why);
		return;
	}
	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;
		struct pvo_hv_qp *hq = to_hv_qp(qp);

		if (!hq)
			continue;
		/* a rebind in progress waits again from the thaw; one
		 * done is history: the next thaw rebinds again */
		pvo_hv_rebind_cancel(qp);
		if (hq->rb_step >= HV_RB_DONE)
			hq->rb_step = HV_RB_NONE;
		if (!hq->active)
			continue;
		if (ibv_modify_qp(hq->qp, &a, IBV_QP_STATE))
			pvo_vm_warn(vm,
				    "hostverbs: %s QP 0x%x to ERROR for "
				    "the switch-over: %s",
				    hv_devname(qp), qp->qpn, g_strerror(errno));
		hq->frozen = true;
	}
	/* what completed before the device stopped reaches the guest (its
	 * CQEs are logged writes); the flushes are not completions */
	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;

		if (!to_hv_qp(qp) || !to_hv_qp(qp)->frozen)
			continue;
		pvo_hv_qp_poll(qp);
	}
	/* where each connection's responder stood: the stream carries it
	 * to the rebind (hv_rebind.c) */
	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;
		struct ibv_qp_init_attr init;

		if (!to_hv_qp(qp) || !to_hv_qp(qp)->frozen ||
		    qp->type == PVO_QPT_UD)
			continue;
		if (!ibv_query_qp(to_hv_qp(qp)->qp, &a, IBV_QP_RQ_PSN, &init))
			qp->attr.rq_psn = a.rq_psn & PVO_QPN_MAX;
	}
	while ((h = pvo_table_next(&vm->mrs, h, &obj)))
		if (to_hv_mr((struct pvo_mr *)obj))
			dirty_mr(vm, obj);
	/* the receives on host SRQs back in their rings (hv_srq.c) */
	while ((h = pvo_table_next(&vm->srqs, h, &obj)))
		pvo_hv_srq_freeze(vm, obj);
}

/* A connection stopped by the freeze: its rebind starts (a migration
 * that failed: the same host QP, from RESET). */
static void to_offer(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	ibv_modify_qp(h->qp, &a, IBV_QP_STATE);
	/* a connection the software engine carried (a stream's, or the
	 * source's when a migration fails) goes on from where it stood */
	pvo_sw_hand_over(qp);
	qp->engine = &pvo_engine_hostverbs;
	h->active = false;
	h->held_posted = false;
	h->frozen = true; /* nothing posted until READY */
	h->rb_step = HV_RB_OFFERED;
	h->rb_gen = qp->vm->move_gen;
}

/* A connection whose peer cannot follow (hostverbs-migration = error):
 * it ends, the guest told by IBV_EVENT_QP_FATAL and the flushes. */
static void orphan(struct pvo_qp *qp)
{
	struct pvo_hv_qp *h = to_hv_qp(qp);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	char gid[64];

	pvo_vm_warn(qp->vm,
		    "hostverbs: %s QP 0x%x: its peer %s is not a VM of this "
		    "deployment and cannot follow the move: the connection "
		    "ends (hostverbs-migration = error)",
		    qp->type == PVO_QPT_RC ? "RC" : "UC", qp->qpn,
		    pvo_gid_str(qp->attr.path.dgid, gid, sizeof(gid)));
	ibv_modify_qp(h->qp, &a, IBV_QP_STATE);
	pvo_hv_qp_poll(qp);
	h->frozen = false;
	h->rb_step = HV_RB_NONE;
	pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
}

bool pvo_hv_vm_thaw(struct pvo_vm *vm)
{
	bool offers = false, bumped = false;
	uint32_t h = 0;
	void *obj;

	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;
		struct pvo_hv_qp *hq = to_hv_qp(qp);

		if (!hq)
			continue;
		if ((hq->frozen || hq->rb_step == HV_RB_OFFERED) &&
		    qp->state != PVO_QPS_ERR && peer_not_ours(qp)) {
			orphan(qp);
			continue;
		}
		if (hq->frozen && qp->type != PVO_QPT_UD &&
		    hq->rb_step == HV_RB_NONE) {
			/* the source again: peers tell this rebind from
			 * the last by a newer generation */
			if (!bumped)
				vm->move_gen = MAX(vm->move_gen + 1,
						   (uint64_t)g_get_real_time());
			bumped = true;
			to_offer(qp);
		}
		if (hq->rb_step == HV_RB_OFFERED) {
			hq->rb_gen = vm->move_gen;
			offers = true;
			pvo_hv_rebind_wait(qp);
			continue;
		}
		/* a UD QP of a cancelled migration: the same host QP, from
		 * RESET; the flushes the device made after the freeze are
		 * not completions either */
		if (hq->frozen) {
			pvo_hv_qp_poll(qp);
			hq->frozen = false;
			hq->sq_posted = qp->sq_cons;
			hq->rq_posted = qp->rq_cons;
			hq->stuck = 0;
			if (pvo_hv_qp_rebuild(qp))
				pvo_qp_set_error(qp, PVO_EV_QP_FATAL, false);
		}
		if (qp->engine == &pvo_engine_hostverbs)
			qp->engine->doorbell(qp);
	}
	while ((h = pvo_table_next(&vm->srqs, h, &obj)))
		pvo_hv_srq_thaw(vm, obj);
	return offers;
}

/* Whether a VM was made again here from a stream: its guest's numbers
 * then differ from its host objects' (g_atomic; it stays set). */
static int moved_here;

uint64_t pvo_hv_peer_gen(const struct pvo_qp *qp, uint32_t ip)
{
	struct pvo_vm *vm;
	uint8_t gid[16];

	if (g_atomic_int_get(&moved_here)) {
		pvo_hv_ip_gid(ip, gid);
		vm = pvo_served_by_gid(qp->vm->cfg->tenant->vni, gid);
		if (vm)
			return vm->move_gen;
	}
	return pvo_alias_gen(qp->vm->cfg->tenant->vni, ip);
}

uint32_t pvo_hv_local_host(const struct pvo_qp *qp, uint32_t ip,
			   enum pvo_alias_kind kind, uint32_t v)
{
	struct pvo_vm *vm;
	struct pvo_mr *mr;
	struct pvo_qp *q;
	uint8_t gid[16];

	if (!g_atomic_int_get(&moved_here))
		return v;
	pvo_hv_ip_gid(ip, gid);
	vm = pvo_served_by_gid(qp->vm->cfg->tenant->vni, gid);
	if (!vm || vm->eng != &pvo_vm_engine_hostverbs)
		return v;
	if (kind == PVO_ALIAS_RKEY) {
		mr = pvo_hv_mr_by_key(vm, v);
		return mr && to_hv_mr(mr) && to_hv_mr(mr)->mr
			   ? to_hv_mr(mr)->mr->rkey
			   : v;
	}
	q = pvo_qp_by_qpn(vm, v);
	return q && to_hv_qp(q) ? to_hv_qp(q)->host_qpn : v;
}

bool pvo_hv_vm_ready(struct pvo_vm *vm)
{
	return !pvo_hv_mr_remaking(vm);
}

bool pvo_hv_vm_loaded(struct pvo_vm *vm)
{
	uint32_t h = 0, guest;
	void *obj;

	g_atomic_int_set(&moved_here, 1);
	while ((h = pvo_table_next(&vm->mrs, h, &obj))) {
		struct pvo_mr *mr = obj;

		if (mr->ctx == PVO_CTX_KERNEL || mr->fast_reg)
			continue;
		if (pvo_hv_mr_remake(vm, mr)) {
			pvo_log(pvo_vm_name(vm),
				"hostverbs: the migrated MR key 0x%x could "
				"not be registered on this host's device",
				mr->key);
			return false;
		}
	}
	/* host SRQs before the QPs attached to them */
	while ((h = pvo_table_next(&vm->srqs, h, &obj))) {
		struct pvo_srq *srq = obj;

		if (srq->doorbell && pvo_hv_srq_create(vm, srq)) {
			pvo_log(pvo_vm_name(vm),
				"hostverbs: the migrated SRQ 0x%x could not "
				"be made on this host's device",
				srq->handle);
			return false;
		}
	}
	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;

		if (qp->engine != &pvo_engine_hostverbs)
			continue;
		guest = qp->qpn;
		if (pvo_hv_qp_create(qp) || !to_hv_qp(qp)) {
			pvo_log(pvo_vm_name(vm),
				"hostverbs: the migrated QP 0x%x could not "
				"be made on this host's device",
				guest);
			return false;
		}
		/* the guest keeps its number; host completions find the QP
		 * by the host's */
		qp->qpn = guest;
		if (qp->type != PVO_QPT_UD && qp->state >= PVO_QPS_RTR &&
		    qp->state != PVO_QPS_ERR) {
			to_offer(qp);
			continue;
		}
		if (pvo_hv_qp_rebuild(qp)) {
			pvo_log(pvo_vm_name(vm),
				"hostverbs: the migrated QP 0x%x could not "
				"be brought back to its state",
				guest);
			return false;
		}
	}
	while ((h = pvo_table_next(&vm->srqs, h, &obj)))
		pvo_hv_srq_loaded(vm, obj);
	return true;
}

GArray *pvo_hv_vm_ids(struct pvo_vm *vm)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(struct pvo_id_pair));
	uint32_t h = 0;
	void *obj;

	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;
		struct pvo_id_pair p = {.kind = PVO_ID_QPN, .guest = qp->qpn};

		if (!to_hv_qp(qp) || to_hv_qp(qp)->host_qpn == qp->qpn)
			continue;
		p.host = to_hv_qp(qp)->host_qpn;
		g_array_append_val(out, p);
	}
	while ((h = pvo_table_next(&vm->qps, h, &obj))) {
		struct pvo_qp *qp = obj;
		struct pvo_id_pair p = {.kind = PVO_ID_CONN, .guest = qp->qpn};

		if (!to_hv_qp(qp) || to_hv_qp(qp)->rb_step != HV_RB_OFFERED)
			continue;
		p.host = to_hv_qp(qp)->host_qpn;
		p.peer_ip = pvo_hv_gid_ip(qp->attr.path.dgid);
		p.peer_qpn = qp->attr.dest_qpn;
		p.psn = qp->attr.rq_psn & PVO_QPN_MAX;
		g_array_append_val(out, p);
	}
	while ((h = pvo_table_next(&vm->mrs, h, &obj))) {
		struct pvo_mr *mr = obj;
		struct pvo_id_pair p = {.kind = PVO_ID_KEY, .guest = mr->key};

		if (!to_hv_mr(mr) || !to_hv_mr(mr)->mr ||
		    to_hv_mr(mr)->mr->lkey == mr->key ||
		    !(mr->access &
		      (PVO_ACCESS_REMOTE_WRITE | PVO_ACCESS_REMOTE_READ |
		       PVO_ACCESS_REMOTE_ATOMIC)))
			continue;
		p.host = to_hv_mr(mr)->mr->lkey;
		g_array_append_val(out, p);
	}
	return out;
}

const struct pvo_engine_ops *pvo_hv_engine_of_loaded(const struct pvo_qp *qp)
{
	/* the QPs that get a host QP (pvo_hv_qp_create): on an SRQ, RC / UC
	 * ones on an SRQ that gets a host SRQ (its guest rings for it) */
	if (!pvo_hv_serves(qp->vm->cfg->tenant) || qp->ctx == PVO_CTX_KERNEL ||
	    (qp->srq && (!qp->srq->doorbell || qp->type == PVO_QPT_UD)) ||
	    (qp->type != PVO_QPT_RC && qp->type != PVO_QPT_UC &&
	     qp->type != PVO_QPT_UD))
		return NULL;
	return &pvo_engine_hostverbs;
}
