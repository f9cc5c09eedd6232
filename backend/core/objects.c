// SPDX-License-Identifier: GPL-2.0-or-later
/* Handle tables; see objects.h. */
#include <string.h>
#include <glib.h>

#include "objects.h"

#define GEN_MAX ((1u << (32 - PVO_HANDLE_INDEX_BITS)) - 1)

void pvo_table_init(struct pvo_table *t, const char *what, uint32_t limit)
{
	memset(t, 0, sizeof(*t));
	t->what = what;
	t->limit = MIN(limit, PVO_TABLE_MAX_SLOTS);
}

void pvo_table_set_limit(struct pvo_table *t, uint32_t limit)
{
	t->limit = MIN(limit, PVO_TABLE_MAX_SLOTS);
}

void pvo_table_destroy(struct pvo_table *t)
{
	g_free(t->slots);
	t->slots = NULL;
	t->size = t->count = 0;
}

static uint32_t make_handle(uint32_t idx, uint16_t gen)
{
	return ((uint32_t)gen << PVO_HANDLE_INDEX_BITS) | (idx + 1);
}

uint32_t pvo_table_add(struct pvo_table *t, void *obj, uint32_t owner)
{
	struct pvo_slot *s;
	uint32_t i;

	if (t->count >= t->limit)
		return 0;
	for (i = 0; i < t->size; i++)
		if (!t->slots[i].used)
			break;
	if (i == t->size) {
		uint32_t n = MIN(MAX(t->size * 2, 16u), PVO_TABLE_MAX_SLOTS);

		if (n <= t->size)
			return 0;
		t->slots = g_renew(struct pvo_slot, t->slots, n);
		memset(&t->slots[t->size], 0,
		       (n - t->size) * sizeof(struct pvo_slot));
		t->size = n;
	}
	s = &t->slots[i];
	if (!s->gen)
		s->gen = 1;
	s->obj = obj;
	s->owner = owner;
	s->used = true;
	t->count++;
	return make_handle(i, s->gen);
}

bool pvo_table_add_at(struct pvo_table *t, uint32_t handle, void *obj,
		      uint32_t owner)
{
	uint32_t idx = pvo_handle_index(handle);
	uint32_t gen = handle >> PVO_HANDLE_INDEX_BITS;
	struct pvo_slot *s;

	/* add() hands out the lowest free slot, so a live handle's index
	 * never exceeds the quota */
	if (idx == 0 || idx > t->limit || gen == 0 || gen > GEN_MAX ||
	    t->count >= t->limit)
		return false;
	if (idx > t->size) {
		uint32_t n = MAX(t->size * 2, 16u);

		while (n < idx)
			n *= 2;
		n = MIN(n, PVO_TABLE_MAX_SLOTS);
		t->slots = g_renew(struct pvo_slot, t->slots, n);
		memset(&t->slots[t->size], 0,
		       (n - t->size) * sizeof(struct pvo_slot));
		t->size = n;
	}
	s = &t->slots[idx - 1];
	if (s->used)
		return false;
	s->gen = (uint16_t)gen;
	s->obj = obj;
	s->owner = owner;
	s->used = true;
	t->count++;
	return true;
}

static struct pvo_slot *lookup(const struct pvo_table *t, uint32_t handle,
			       uint32_t owner)
{
	uint32_t idx = pvo_handle_index(handle);
	struct pvo_slot *s;

	if (idx == 0 || idx > t->size)
		return NULL;
	s = &t->slots[idx - 1];
	if (!s->used || s->owner != owner ||
	    s->gen != handle >> PVO_HANDLE_INDEX_BITS)
		return NULL;
	return s;
}

void *pvo_table_get(const struct pvo_table *t, uint32_t handle, uint32_t owner)
{
	struct pvo_slot *s = lookup(t, handle, owner);

	return s ? s->obj : NULL;
}

uint32_t pvo_handle_owner(const struct pvo_table *t, uint32_t handle)
{
	uint32_t idx = pvo_handle_index(handle);

	if (idx == 0 || idx > t->size || !t->slots[idx - 1].used)
		return 0;
	return t->slots[idx - 1].owner;
}

void *pvo_table_remove(struct pvo_table *t, uint32_t handle, uint32_t owner)
{
	struct pvo_slot *s = lookup(t, handle, owner);
	void *obj;

	if (!s)
		return NULL;
	obj = s->obj;
	s->obj = NULL;
	s->used = false;
	s->gen = s->gen == GEN_MAX ? 1 : s->gen + 1;
	t->count--;
	return obj;
}

uint32_t pvo_table_next(const struct pvo_table *t, uint32_t prev_handle,
			void **obj)
{
	uint32_t i;

	for (i = pvo_handle_index(prev_handle); i < t->size; i++) {
		if (t->slots[i].used) {
			*obj = t->slots[i].obj;
			return make_handle(i, t->slots[i].gen);
		}
	}
	return 0;
}

void *pvo_table_at(const struct pvo_table *t, uint32_t index)
{
	if (index == 0 || index > t->size || !t->slots[index - 1].used)
		return NULL;
	return t->slots[index - 1].obj;
}
