// SPDX-License-Identifier: GPL-2.0-or-later
/* Overlay mapping table; see overlay_map.h. */
#include <arpa/inet.h>
#include <string.h>
#include <glib.h>

#include "overlay_map.h"

static GHashTable *table; /* key (vni << 32 | ip) -> entry */
static unsigned int learned;

static uint64_t key_of(uint32_t vni, uint32_t ip)
{
	return (uint64_t)vni << 32 | ip;
}

static GHashTable *get_table(void)
{
	if (!table)
		table = g_hash_table_new_full(g_int64_hash, g_int64_equal,
					      g_free, NULL);
	return table;
}

const struct pvo_map_entry *pvo_map_find(uint32_t vni, uint32_t ip)
{
	uint64_t k = key_of(vni, ip);

	return table ? g_hash_table_lookup(table, &k) : NULL;
}

bool pvo_map_set(const struct pvo_map_entry *e)
{
	struct pvo_map_entry *old =
	    (struct pvo_map_entry *)pvo_map_find(e->vni, e->ip);
	uint64_t *k;

	if (old) {
		if (e->origin == PVO_MAP_LEARNED &&
		    old->origin != PVO_MAP_LEARNED)
			return false;
		if (old->origin == PVO_MAP_LEARNED &&
		    e->origin != PVO_MAP_LEARNED)
			learned--;
		else if (old->origin != PVO_MAP_LEARNED &&
			 e->origin == PVO_MAP_LEARNED)
			learned++;
		*old = *e;
		return true;
	}
	if (e->origin == PVO_MAP_LEARNED) {
		if (learned >= PVO_MAP_MAX_LEARNED)
			return false;
		learned++;
	}
	k = g_new(uint64_t, 1);
	*k = key_of(e->vni, e->ip);
	old = g_new(struct pvo_map_entry, 1);
	*old = *e;
	g_hash_table_insert(get_table(), k, old);
	return true;
}

bool pvo_map_del(uint32_t vni, uint32_t ip)
{
	uint64_t k = key_of(vni, ip);
	struct pvo_map_entry *e;

	if (!table)
		return false;
	e = g_hash_table_lookup(table, &k);
	if (!e)
		return false;
	if (e->origin == PVO_MAP_LEARNED)
		learned--;
	g_hash_table_remove(table, &k);
	g_free(e);
	return true;
}

static gint by_key(gconstpointer a, gconstpointer b)
{
	const struct pvo_map_entry *x = *(const struct pvo_map_entry **)a;
	const struct pvo_map_entry *y = *(const struct pvo_map_entry **)b;
	uint64_t kx = key_of(x->vni, ntohl(x->ip));
	uint64_t ky = key_of(y->vni, ntohl(y->ip));

	return kx < ky ? -1 : kx > ky;
}

void *pvo_map_sorted(void)
{
	GPtrArray *out = g_ptr_array_new();
	GHashTableIter it;
	gpointer k, v;

	if (table) {
		g_hash_table_iter_init(&it, table);
		while (g_hash_table_iter_next(&it, &k, &v))
			g_ptr_array_add(out, v);
	}
	g_ptr_array_sort(out, by_key);
	return out;
}

void pvo_map_clear(void)
{
	GHashTableIter it;
	gpointer k, v;

	if (!table)
		return;
	g_hash_table_iter_init(&it, table);
	while (g_hash_table_iter_next(&it, &k, &v))
		g_free(v);
	g_hash_table_destroy(table);
	table = NULL;
	learned = 0;
}

const char *pvo_map_origin_name(enum pvo_map_origin o)
{
	switch (o) {
	case PVO_MAP_CONFIG:
		return "config";
	case PVO_MAP_MGMT:
		return "mgmt";
	case PVO_MAP_LEARNED:
		return "learned";
	case PVO_MAP_MOVED:
		return "moved";
	}
	return "?";
}

enum pvo_map_verdict pvo_map_ingress(const struct pvo_map_entry *seen,
				     const struct pvo_map_rules *r)
{
	struct pvo_map_entry *e =
	    (struct pvo_map_entry *)pvo_map_find(seen->vni, seen->ip);
	struct pvo_map_entry n = *seen;

	/* the steady state: a sender from its own VTEP */
	if (e && e->vtep.s_addr == seen->vtep.s_addr) {
		if (e->origin == PVO_MAP_LEARNED) {
			e->last_us = r->now_us(r->ctx);
			memcpy(e->mac, seen->mac, 6);
		}
		return PVO_MAP_OK;
	}
	if (e && e->origin != PVO_MAP_LEARNED)
		return PVO_MAP_WRONG_VTEP;
	if (!r->may_learn(seen, r->ctx))
		return e ? PVO_MAP_WRONG_VTEP : PVO_MAP_UNKNOWN_SRC;
	n.last_us = r->now_us(r->ctx);
	if (e && n.last_us - e->last_us < r->move_us)
		return PVO_MAP_WRONG_VTEP;
	n.origin = PVO_MAP_LEARNED;
	return pvo_map_set(&n) ? PVO_MAP_OK : PVO_MAP_UNKNOWN_SRC;
}

unsigned int pvo_map_expire(uint64_t now_us, uint64_t age_us)
{
	GHashTableIter it;
	gpointer k, v;
	unsigned int n = 0;

	if (!table)
		return 0;
	g_hash_table_iter_init(&it, table);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct pvo_map_entry *e = v;

		if (e->origin != PVO_MAP_LEARNED ||
		    now_us - e->last_us < age_us)
			continue;
		g_hash_table_iter_remove(&it);
		g_free(e);
		learned--;
		n++;
	}
	return n;
}
