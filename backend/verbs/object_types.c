// SPDX-License-Identifier: GPL-2.0-or-later
#include <endian.h>

#include "ah.h"
#include "cq.h"
#include "mr.h"
#include "mw.h"
#include "object_types.h"
#include "objects.h"
#include "qp.h"
#include "srq.h"
#include "vm.h"

static bool pd_busy(const void *obj)
{
	return ((const struct pvo_pd *)obj)->refcnt != 0;
}

static bool cq_busy(const void *obj)
{
	return ((const struct pvo_cq *)obj)->refcnt != 0;
}

static bool srq_busy(const void *obj)
{
	return ((const struct pvo_srq *)obj)->refcnt != 0;
}

/* IB: unbind an MR's windows first */
static bool mr_busy(const void *obj)
{
	return ((const struct pvo_mr *)obj)->mw_binds != 0;
}

#define FREE_FN(kind)                                                          \
	static void kind##_free(struct pvo_vm *vm, void *obj)                  \
	{                                                                      \
		pvo_##kind##_free(vm, obj);                                    \
	}
FREE_FN(qp)
FREE_FN(srq)
FREE_FN(ah)
FREE_FN(mw)
FREE_FN(mr)
FREE_FN(cq)
FREE_FN(pd)
#undef FREE_FN

#define TYPE(kind, busy_fn)                                                    \
	{                                                                      \
		.name = #kind, .table = offsetof(struct pvo_vm, kind##s),      \
		.busy = busy_fn, .free = kind##_free,                          \
	}

const struct pvo_obj_type pvo_obj_types[PVO_OBJ_KINDS] = {
    [PVO_OBJ_QP] = TYPE(qp, NULL),    [PVO_OBJ_SRQ] = TYPE(srq, srq_busy),
    [PVO_OBJ_AH] = TYPE(ah, NULL),    [PVO_OBJ_MW] = TYPE(mw, NULL),
    [PVO_OBJ_MR] = TYPE(mr, mr_busy), [PVO_OBJ_CQ] = TYPE(cq, cq_busy),
    [PVO_OBJ_PD] = TYPE(pd, pd_busy),
};

static struct pvo_table *table_of(struct pvo_vm *vm,
				  const struct pvo_obj_type *t)
{
	return (struct pvo_table *)((char *)vm + t->table);
}

enum pvo_status pvo_obj_destroy(struct pvo_vm *vm, uint32_t ctx,
				enum pvo_obj_kind kind, const void *req)
{
	const struct pvo_obj_type *t = &pvo_obj_types[kind];
	const struct pvo_cmd_handle *c = req;
	void *obj;

	if (c->reserved)
		return PVO_STATUS_EINVAL;
	obj = pvo_table_get(table_of(vm, t), le32toh(c->handle), ctx);
	if (!obj)
		return PVO_STATUS_ENOENT;
	if (t->busy && t->busy(obj))
		return PVO_STATUS_EBUSY;
	t->free(vm, obj);
	return PVO_STATUS_OK;
}

void pvo_obj_destroy_all(struct pvo_vm *vm, uint32_t ctx, bool all)
{
	unsigned int k;
	uint32_t h;
	void *obj;

	for (k = 0; k < PVO_OBJ_KINDS; k++) {
		struct pvo_table *tab = table_of(vm, &pvo_obj_types[k]);

		for (h = 0; (h = pvo_table_next(tab, h, &obj));)
			if (all || pvo_handle_owner(tab, h) == ctx)
				pvo_obj_types[k].free(vm, obj);
	}
}

uint64_t pvo_obj_bytes(struct pvo_vm *vm)
{
	static const size_t size[PVO_OBJ_KINDS] = {
	    [PVO_OBJ_QP] = sizeof(struct pvo_qp),
	    [PVO_OBJ_SRQ] = sizeof(struct pvo_srq),
	    [PVO_OBJ_AH] = sizeof(struct pvo_ah),
	    [PVO_OBJ_MW] = sizeof(struct pvo_mw),
	    [PVO_OBJ_MR] = sizeof(struct pvo_mr),
	    [PVO_OBJ_CQ] = sizeof(struct pvo_cq),
	    [PVO_OBJ_PD] = sizeof(struct pvo_pd),
	};
	uint64_t n = vm->ucontexts.count * sizeof(struct pvo_ucontext);
	unsigned int k;

	for (k = 0; k < PVO_OBJ_KINDS; k++)
		n += (uint64_t)table_of(vm, &pvo_obj_types[k])->count * size[k];
	return n;
}
