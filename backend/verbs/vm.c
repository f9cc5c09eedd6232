// SPDX-License-Identifier: GPL-2.0-or-later
/* Per-VM state; see vm.h. */
#include <string.h>
#include <unistd.h>

#include "ah.h"
#include "cq.h"
#include "engine.h"
#include "object_types.h"
#include "log.h"
#include "mr.h"
#include "mw.h"
#include "qp.h"
#include "srq.h"
#include "transport.h"
#include "vm.h"

struct pvo_vm *pvo_vm_new(const struct pvo_vm_config *cfg)
{
	struct pvo_vm *vm = pvo_vm_new_detached(cfg);

	vm->registered = true;
	pvo_local_register(vm);
	return vm;
}

struct pvo_vm *pvo_vm_new_detached(const struct pvo_vm_config *cfg)
{
	struct pvo_vm *vm = g_new0(struct pvo_vm, 1);
	const struct pvo_quota *q = &cfg->quota;

	vm->cfg = cfg;
	pvo_table_init(&vm->ucontexts, "ucontext", q->max_ucontexts);
	pvo_table_init(&vm->pds, "PD", q->max_pd);
	pvo_table_init(&vm->cqs, "CQ", q->max_cq);
	pvo_table_init(&vm->mrs, "MR", q->max_mr);
	pvo_table_init(&vm->mws, "MW", q->max_mw);
	pvo_table_init(&vm->qps, "QP", q->max_qp);
	pvo_table_init(&vm->srqs, "SRQ", q->max_srq);
	pvo_table_init(&vm->ahs, "AH", q->max_ah);
	vm->host_mem.limit = q->max_host_mem;
	vm->qpn_map = g_hash_table_new(g_direct_hash, g_direct_equal);
	vm->mcast_qps = g_ptr_array_new();
	vm->next_qpn = 2;
	pvo_vm_set_engine(vm);
	return vm;
}

void pvo_vm_set_engine(struct pvo_vm *vm)
{
	const struct pvo_vm_engine *eng = pvo_vm_engine_for(vm->cfg);

	if (eng == vm->eng)
		return;
	if (vm->eng && vm->eng->vm_fini)
		vm->eng->vm_fini(vm);
	vm->eng = eng;
	if (eng && eng->vm_init)
		eng->vm_init(vm);
}

void pvo_vm_host_use(const struct pvo_vm *vm, struct pvo_vm_host_use *u)
{
	memset(u, 0, sizeof(*u));
	if (pvo_vm_eng_has(vm, host_use))
		vm->eng->host_use(vm, u);
}

void pvo_vm_apply_quota(struct pvo_vm *vm)
{
	const struct pvo_quota *q = &vm->cfg->quota;

	pvo_table_set_limit(&vm->ucontexts, q->max_ucontexts);
	pvo_table_set_limit(&vm->pds, q->max_pd);
	pvo_table_set_limit(&vm->cqs, q->max_cq);
	pvo_table_set_limit(&vm->mrs, q->max_mr);
	pvo_table_set_limit(&vm->mws, q->max_mw);
	pvo_table_set_limit(&vm->qps, q->max_qp);
	pvo_table_set_limit(&vm->srqs, q->max_srq);
	pvo_table_set_limit(&vm->ahs, q->max_ah);
	vm->host_mem.limit = q->max_host_mem;
}

struct pvo_ucontext *pvo_vm_ctx(struct pvo_vm *vm, uint32_t ctx)
{
	if (ctx == PVO_CTX_KERNEL)
		return &vm->kernel;
	return pvo_table_get(&vm->ucontexts, ctx, PVO_CTX_KERNEL);
}

/*
 * Frees every object of one context (all = every context), users before
 * what they use: QPs, then SRQs, AHs, MWs, MRs, CQs, PDs.
 */
bool pvo_vm_migratable(struct pvo_vm *vm)
{
	return !pvo_vm_eng_has(vm, migratable) || vm->eng->migratable(vm);
}

void pvo_vm_engine_freeze(struct pvo_vm *vm)
{
	if (pvo_vm_eng_has(vm, vm_freeze))
		vm->eng->vm_freeze(vm);
}

bool pvo_vm_engine_thaw(struct pvo_vm *vm)
{
	return pvo_vm_eng_has(vm, vm_thaw) && vm->eng->vm_thaw(vm);
}

bool pvo_vm_engine_loaded(struct pvo_vm *vm)
{
	return !pvo_vm_eng_has(vm, vm_loaded) || vm->eng->vm_loaded(vm);
}

bool pvo_vm_engine_ready(struct pvo_vm *vm)
{
	return !pvo_vm_eng_has(vm, vm_ready) || vm->eng->vm_ready(vm);
}

void pvo_pd_free(struct pvo_vm *vm, struct pvo_pd *pd)
{
	pvo_table_remove(&vm->pds, pd->handle, pd->ctx);
	if (pvo_vm_eng_has(vm, pd_free))
		vm->eng->pd_free(vm, pd);
	g_free(pd);
}

void pvo_vm_destroy_ucontext(struct pvo_vm *vm, struct pvo_ucontext *uctx)
{
	pvo_obj_destroy_all(vm, uctx->handle, false);
	if (uctx->db_queue < PVO_MAX_QUEUES &&
	    vm->db_queue_ctx[uctx->db_queue] == uctx->handle)
		vm->db_queue_ctx[uctx->db_queue] = 0;
	if (uctx->db_page >= PVO_DB_SLOT_PAGE0 &&
	    uctx->db_page - PVO_DB_SLOT_PAGE0 < PVO_MAX_DB_SLOTS &&
	    vm->notify.slot_ctx[uctx->db_page - PVO_DB_SLOT_PAGE0] ==
		    uctx->handle)
		vm->notify.slot_ctx[uctx->db_page - PVO_DB_SLOT_PAGE0] = 0;
	pvo_table_remove(&vm->ucontexts, uctx->handle, PVO_CTX_KERNEL);
	g_free(uctx);
}

void pvo_vm_reset_guest_state(struct pvo_vm *vm)
{
	uint32_t h = 0;
	void *obj;

	/* A command left part-way ends first: an engine's registration
	 * in progress lets go of its PD. QPs go first of the objects,
	 * inside pvo_obj_destroy_all: from here on no peer reaches this
	 * VM. */
	pvo_mr_build_drop(vm);
	pvo_obj_destroy_all(vm, 0, true);
	while ((h = pvo_table_next(&vm->ucontexts, h, &obj)))
		pvo_vm_destroy_ucontext(vm, obj);
	memset(&vm->kernel, 0, sizeof(vm->kernel));
	memset(&vm->gids, 0, sizeof(vm->gids));
	pvo_local_routes_changed();
	memset(vm->db_queue_ctx, 0, sizeof(vm->db_queue_ctx));
	memset(&vm->notify, 0, sizeof(vm->notify));
	pvo_event_reset(vm);
}

void pvo_vm_free(struct pvo_vm *vm)
{
	if (!vm)
		return;
	if (vm->registered)
		pvo_local_unregister(vm);
	if (vm->announce.fn)
		pvo_timer_destroy(&vm->announce);
	pvo_vm_reset_guest_state(vm);
	pvo_table_destroy(&vm->ucontexts);
	pvo_table_destroy(&vm->pds);
	pvo_table_destroy(&vm->cqs);
	pvo_table_destroy(&vm->mrs);
	pvo_table_destroy(&vm->mws);
	pvo_table_destroy(&vm->qps);
	pvo_table_destroy(&vm->srqs);
	pvo_table_destroy(&vm->ahs);
	g_hash_table_destroy(vm->qpn_map);
	if (vm->eng && vm->eng->vm_fini)
		vm->eng->vm_fini(vm);
	g_ptr_array_free(vm->mcast_qps, TRUE);
	g_free(vm);
}
