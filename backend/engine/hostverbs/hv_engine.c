// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host-verbs object engine (engine.h: struct pvo_vm_engine): the
 * hooks the verbs layer calls for the objects of a VM whose tenant uses
 * host verbs, and the VM's own part.
 */
#include <glib.h>

#include "hv.h"
#include "log.h"

static void hv_vm_init(struct pvo_vm *vm)
{
	struct pvo_hv_vm *h = g_new0(struct pvo_hv_vm, 1);

	h->keys = g_hash_table_new(g_direct_hash, g_direct_equal);
	vm->engine_part = h;
	pvo_hv_budget_join(vm, &h->use);
	pvo_hv_mr_init(vm);
}

static void hv_vm_fini(struct pvo_vm *vm)
{
	struct pvo_hv_vm *h = to_hv_vm(vm);

	pvo_hv_mr_fini(vm);
	pvo_hv_budget_leave(vm, &h->use);
	g_hash_table_destroy(h->keys);
	g_free(h);
	vm->engine_part = NULL;
}

uint32_t pvo_hv_objects(const struct pvo_vm *vm)
{
	uint32_t n = 0, h;
	void *obj;

	/* an AH whose host AH was refused holds none */
#define COUNT(table, type, host)                                               \
	for (h = 0; (h = pvo_table_next(&vm->table, h, &obj));)                \
	n += (host) != NULL
	COUNT(qps, struct pvo_qp, to_hv_qp(obj));
	COUNT(mrs, struct pvo_mr, to_hv_mr(obj));
	COUNT(cqs, struct pvo_cq, to_hv_cq(obj));
	COUNT(pds, struct pvo_pd, to_hv_pd(obj));
	COUNT(srqs, struct pvo_srq, to_hv_srq(obj));
	COUNT(ahs, struct pvo_ah, to_hv_ah(obj) ? to_hv_ah(obj)->ah : NULL);
#undef COUNT
	return n;
}

static void hv_host_use(const struct pvo_vm *vm, struct pvo_vm_host_use *o)
{
	const struct pvo_hv_use *u = &to_hv_vm(vm)->use;

	o->mappings = u->mappings;
	o->max_mappings = pvo_hv_budget_mappings_max(vm);
	o->pinned = u->pinned;
	o->mrs = u->mrs;
}

enum pvo_status pvo_hv_qp_attach_mcast(struct pvo_qp *qp)
{
	if (!to_hv_qp(qp))
		return PVO_STATUS_OK;
	/* its receives are the host device's (docs/hostverbs.md) */
	pvo_vm_warn(qp->vm,
		    "QP 0x%x is a host QP: multicast groups are not "
		    "supported on the host-verbs transport",
		    qp->qpn);
	return PVO_STATUS_EOPNOTSUPP;
}

const struct pvo_vm_engine pvo_vm_engine_hostverbs = {
    .name = "hostverbs",
    .vm_init = hv_vm_init,
    .vm_fini = hv_vm_fini,
    .migratable = pvo_hv_migratable,
    .vm_freeze = pvo_hv_vm_freeze,
    .vm_thaw = pvo_hv_vm_thaw,
    .vm_loaded = pvo_hv_vm_loaded,
    .vm_ready = pvo_hv_vm_ready,
    .vm_ids = pvo_hv_vm_ids,
    .conn_step = pvo_hv_conn_step,
    .host_use = hv_host_use,
    .pd_free = pvo_hv_pd_free,
    .mr_reg = pvo_hv_reg_mr,
    .mr_rereg = pvo_hv_rereg_mr,
    .mr_take_key = pvo_hv_take_key,
    .mr_by_key = pvo_hv_mr_by_key,
    .mr_free = pvo_hv_dereg_mr,
    .cq_free = pvo_hv_cq_free,
    .ah_free = pvo_hv_ah_free,
    .srq_create = pvo_hv_srq_create,
    .srq_resize = pvo_hv_srq_resize,
    .srq_doorbell = pvo_hv_srq_doorbell,
    .srq_free = pvo_hv_srq_free,
    .qp_create = pvo_hv_qp_create,
    .qp_modify = pvo_hv_qp_modify,
    .qp_sync_state = pvo_hv_qp_sync_state,
    .qp_resp_flags = pvo_hv_qp_resp_flags,
    .qp_path_mtu_max = pvo_hv_qp_path_mtu_max,
    .qp_attach_mcast = pvo_hv_qp_attach_mcast,
    .qp_free = pvo_hv_qp_free,
};
