// SPDX-License-Identifier: GPL-2.0-or-later
/* Per-VM state; see vm.h. */
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vm.h"

struct pvo_vm *pvo_vm_new(const struct pvo_vm_config *cfg)
{
	struct pvo_vm *vm = g_new0(struct pvo_vm, 1);

	vm->cfg = cfg;
	vm->listen_fd = -1;
	vm->conn_fd = -1;
	pvo_table_init(&vm->ucontexts, "ucontext", cfg->quota.max_ucontexts);
	pvo_table_init(&vm->pds, "PD", cfg->quota.max_pd);
	return vm;
}

static void destroy_pds_of(struct pvo_vm *vm, uint32_t ctx)
{
	struct pvo_pd *pd;
	uint32_t h = 0;
	void *obj;

	while ((h = pvo_table_next(&vm->pds, h, &obj))) {
		pd = obj;
		if (pd->ctx != ctx)
			continue;
		pvo_table_remove(&vm->pds, h, ctx);
		g_free(pd);
	}
}

void pvo_vm_destroy_ucontext(struct pvo_vm *vm, struct pvo_ucontext *uctx)
{
	destroy_pds_of(vm, uctx->handle);
	vm->db_queues_busy &= ~(1ull << uctx->db_queue);
	pvo_table_remove(&vm->ucontexts, uctx->handle, PVO_CTX_KERNEL);
	g_free(uctx);
}

void pvo_vm_reset_guest_state(struct pvo_vm *vm)
{
	uint32_t h = 0;
	void *obj;

	while ((h = pvo_table_next(&vm->ucontexts, h, &obj)))
		pvo_vm_destroy_ucontext(vm, obj);
	destroy_pds_of(vm, PVO_CTX_KERNEL);
	memset(&vm->gids, 0, sizeof(vm->gids));
	vm->db_queues_busy = 0;
}

void pvo_vm_free(struct pvo_vm *vm)
{
	if (!vm)
		return;
	pvo_vm_reset_guest_state(vm);
	pvo_table_destroy(&vm->ucontexts);
	pvo_table_destroy(&vm->pds);
	g_free(vm);
}
