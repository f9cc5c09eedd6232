// SPDX-License-Identifier: GPL-2.0-or-later
/* Address vectors and handles; see ah.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "ah.h"
#include "engine.h"
#include "vm.h"

enum pvo_status pvo_path_from_av(struct pvo_vm *vm, const struct pvo_av *av,
				 struct pvo_path *p)
{
	uint32_t flow = le32toh(av->flow_label);

	if (av->reserved || flow > 0xfffff || av->sl > 15 ||
	    av->sgid_index >= PVO_GID_TABLE_LEN ||
	    !vm->gids.e[av->sgid_index].valid) {
		pvo_vm_warn(vm,
			    "address vector refused: sgid_index %u%s, sl %u, "
			    "flow_label 0x%x, reserved 0x%x",
			    av->sgid_index,
			    av->sgid_index < PVO_GID_TABLE_LEN &&
				    vm->gids.e[av->sgid_index].valid
				? ""
				: " (no such GID)",
			    av->sl, flow, le16toh(av->reserved));
		return PVO_STATUS_EINVAL;
	}
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, av->dgid, sizeof(p->dgid));
	memcpy(p->dmac, av->dmac, sizeof(p->dmac));
	p->sgid_index = av->sgid_index;
	p->hop_limit = av->hop_limit;
	p->flow_label = flow;
	p->traffic_class = av->traffic_class;
	p->sl = av->sl;
	return PVO_STATUS_OK;
}

void pvo_path_to_av(const struct pvo_path *p, struct pvo_av *av)
{
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, p->dgid, sizeof(av->dgid));
	memcpy(av->dmac, p->dmac, sizeof(av->dmac));
	av->sgid_index = p->sgid_index;
	av->hop_limit = p->hop_limit;
	av->flow_label = htole32(p->flow_label);
	av->traffic_class = p->traffic_class;
	av->sl = p->sl;
}

enum pvo_status pvo_cmd_create_ah(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp)
{
	const struct pvo_cmd_create_ah *c = req;
	struct pvo_resp_create_ah *r = resp;
	enum pvo_status st;
	struct pvo_path path;
	struct pvo_pd *pd;
	struct pvo_ah *ah;

	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	if (!pd)
		return PVO_STATUS_ENOENT;
	if (c->reserved)
		return PVO_STATUS_EINVAL;
	st = pvo_path_from_av(vm, &c->av, &path);
	if (st)
		return st;
	ah = g_new0(struct pvo_ah, 1);
	ah->handle = pvo_table_add(&vm->ahs, ah, ctx);
	if (!ah->handle) {
		g_free(ah);
		pvo_vm_warn(vm, "AH quota reached (max-ah = %u)",
			    vm->cfg->quota.max_ah);
		return PVO_STATUS_ENOSPC;
	}
	ah->ctx = ctx;
	ah->pd = pd;
	ah->path = path;
	pd->refcnt++;
	r->ah = htole32(ah->handle);
	return PVO_STATUS_OK;
}

void pvo_ah_free(struct pvo_vm *vm, struct pvo_ah *ah)
{
	pvo_table_remove(&vm->ahs, ah->handle, ah->ctx);
	if (pvo_vm_eng_has(vm, ah_free))
		vm->eng->ah_free(ah);
	ah->pd->refcnt--;
	g_free(ah);
}

