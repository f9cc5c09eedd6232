/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kinds of guest objects, described once: where a VM keeps them, when
 * one is in use, how one is freed. DESTROY_* / DEALLOC_* / DEREG_MR and
 * a context's or the VM's reset all go through these descriptors.
 */
#ifndef PVO_OBJECT_TYPES_H
#define PVO_OBJECT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;

/* In the order a reset frees them: users before what they use. */
enum pvo_obj_kind {
	PVO_OBJ_QP,
	PVO_OBJ_SRQ,
	PVO_OBJ_AH,
	PVO_OBJ_MW,
	PVO_OBJ_MR,
	PVO_OBJ_CQ,
	PVO_OBJ_PD,
	PVO_OBJ_KINDS
};

struct pvo_obj_type {
	const char *name;
	size_t table; /* offsetof(struct pvo_vm, its handle table) */
	/* Still used (destroying it fails with EBUSY); NULL: never. */
	bool (*busy)(const void *obj);
	void (*free)(struct pvo_vm *vm, void *obj);
};

extern const struct pvo_obj_type pvo_obj_types[PVO_OBJ_KINDS];

/*
 * The command that destroys an object of that kind (body: struct
 * pvo_cmd_handle, or struct pvo_cmd_dealloc_pd of the same layout): the
 * handle in the caller's context, a reserved field of 0, not in use.
 */
enum pvo_status pvo_obj_destroy(struct pvo_vm *vm, uint32_t ctx,
				enum pvo_obj_kind kind, const void *req);

/*
 * Host bytes the VM's objects' structs hold, which the quotas bound
 * (docs/security.md); their page lists (MRs, rings) are charged to the
 * VM's budget instead. pvo-ctl show reports both.
 */
uint64_t pvo_obj_bytes(struct pvo_vm *vm);

/* Frees every object of the context ctx (all: of every context). */
void pvo_obj_destroy_all(struct pvo_vm *vm, uint32_t ctx, bool all);

#endif
