/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Handle tables for guest-visible objects (ucontexts, PDs, later CQs, QPs,
 * MRs...). A handle is never 0 and carries a generation, so a stale or
 * forged handle from the guest does not find a recycled slot; each object
 * records the ucontext that owns it, and lookups check the owner.
 */
#ifndef PVO_OBJECTS_H
#define PVO_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#define PVO_HANDLE_INDEX_BITS 20
#define PVO_TABLE_MAX_SLOTS ((1u << PVO_HANDLE_INDEX_BITS) - 1)

struct pvo_slot {
	void *obj;
	uint32_t owner;		/* ucontext handle, 0 = kernel */
	uint16_t gen;		/* 1..4095, bumped on free */
	bool used;
};

struct pvo_table {
	const char *what;	/* "PD", for messages */
	uint32_t limit;		/* quota: live objects allowed */
	uint32_t count;		/* live objects */
	uint32_t size;		/* slots allocated */
	struct pvo_slot *slots;	/* slot i has index i + 1 */
};

void pvo_table_init(struct pvo_table *t, const char *what, uint32_t limit);
/* A new quota (a config reload): live objects beyond it stay, and
 * pvo_table_add refuses until the count is below it. */
void pvo_table_set_limit(struct pvo_table *t, uint32_t limit);
/* Frees the slots, not the objects: callers drain the table first. */
void pvo_table_destroy(struct pvo_table *t);

/* Returns the new handle, or 0 when the quota is reached. */
uint32_t pvo_table_add(struct pvo_table *t, void *obj, uint32_t owner);
/* Puts obj at exactly handle (a handle the table once gave out, e.g. in
 * a migrating VM's state): false if that slot is taken, the handle is
 * malformed or beyond the quota. */
bool pvo_table_add_at(struct pvo_table *t, uint32_t handle, void *obj,
		      uint32_t owner);
/* Object for a handle owned by owner, or NULL. */
void *pvo_table_get(const struct pvo_table *t, uint32_t handle,
		    uint32_t owner);
/* Removes and returns the object (NULL if handle/owner do not match). */
void *pvo_table_remove(struct pvo_table *t, uint32_t handle, uint32_t owner);

/* Iterate live objects: for (h = 0; (h = pvo_table_next(t, h, &obj));) */
uint32_t pvo_table_next(const struct pvo_table *t, uint32_t prev_handle,
			void **obj);

static inline uint32_t pvo_handle_index(uint32_t handle)
{
	return handle & PVO_TABLE_MAX_SLOTS;
}

uint32_t pvo_handle_owner(const struct pvo_table *t, uint32_t handle);

/* Object in slot index (1-based, as in handles) whatever its owner, or
 * NULL: for names that are not handles (MR keys). */
void *pvo_table_at(const struct pvo_table *t, uint32_t index);

#endif
