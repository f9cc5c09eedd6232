// SPDX-License-Identifier: GPL-2.0-or-later
/* Overlay mapping table; see overlay_map.h. */
#include <arpa/inet.h>
#include <string.h>
#include <glib.h>

#include "overlay_map.h"

/*
 * Every data-path thread looks routes up and learns senders, the main
 * thread changes entries from the config and the management socket: one
 * lock over the table, held for a lookup or a change and never across a
 * call out of this file but the ingress rules' own callbacks.
 */
static GMutex lock;
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

static struct pvo_map_entry *lookup(uint32_t vni, uint32_t ip)
{
	uint64_t k = key_of(vni, ip);

	return table ? g_hash_table_lookup(table, &k) : NULL;
}

bool pvo_map_get(uint32_t vni, uint32_t ip, struct pvo_map_entry *out)
{
	struct pvo_map_entry *e;

	g_mutex_lock(&lock);
	e = lookup(vni, ip);
	if (e)
		*out = *e;
	g_mutex_unlock(&lock);
	return e != NULL;
}

static bool set_locked(const struct pvo_map_entry *e)
{
	struct pvo_map_entry *old = lookup(e->vni, e->ip);
	uint64_t *k;

	if (old) {
		if (e->origin == PVO_MAP_LEARNED &&
		    old->origin != PVO_MAP_LEARNED)
			return false;
		/* what the administrator set wins over the control plane,
		 * which wins over announcements */
		if (e->origin == PVO_MAP_EVPN &&
		    (old->origin == PVO_MAP_CONFIG ||
		     old->origin == PVO_MAP_MGMT))
			return false;
		if (e->origin == PVO_MAP_MOVED && old->origin == PVO_MAP_EVPN)
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

bool pvo_map_set(const struct pvo_map_entry *e)
{
	bool ok;

	g_mutex_lock(&lock);
	ok = set_locked(e);
	g_mutex_unlock(&lock);
	return ok;
}

static bool del(uint32_t vni, uint32_t ip, int origin)
{
	uint64_t k = key_of(vni, ip);
	struct pvo_map_entry *e;

	g_mutex_lock(&lock);
	e = lookup(vni, ip);
	if (e && origin >= 0 && e->origin != (enum pvo_map_origin)origin)
		e = NULL;
	if (e) {
		if (e->origin == PVO_MAP_LEARNED)
			learned--;
		g_hash_table_remove(table, &k);
		g_free(e);
	}
	g_mutex_unlock(&lock);
	return e != NULL;
}

bool pvo_map_del(uint32_t vni, uint32_t ip)
{
	return del(vni, ip, -1);
}

bool pvo_map_del_origin(uint32_t vni, uint32_t ip, enum pvo_map_origin o)
{
	return del(vni, ip, (int)o);
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
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer k, v;

	g_mutex_lock(&lock);
	if (table) {
		g_hash_table_iter_init(&it, table);
		while (g_hash_table_iter_next(&it, &k, &v))
			g_ptr_array_add(out, g_memdup2(v, sizeof(
						struct pvo_map_entry)));
	}
	g_mutex_unlock(&lock);
	g_ptr_array_sort(out, by_key);
	return out;
}

void pvo_map_clear(void)
{
	GHashTableIter it;
	gpointer k, v;

	g_mutex_lock(&lock);
	if (table) {
		g_hash_table_iter_init(&it, table);
		while (g_hash_table_iter_next(&it, &k, &v))
			g_free(v);
		g_hash_table_destroy(table);
		table = NULL;
		learned = 0;
	}
	g_mutex_unlock(&lock);
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
	case PVO_MAP_EVPN:
		return "evpn";
	}
	return "?";
}

static enum pvo_map_verdict ingress_locked(const struct pvo_map_entry *seen,
					   const struct pvo_map_rules *r)
{
	struct pvo_map_entry *e = lookup(seen->vni, seen->ip);
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
	return set_locked(&n) ? PVO_MAP_OK : PVO_MAP_UNKNOWN_SRC;
}

enum pvo_map_verdict pvo_map_ingress(const struct pvo_map_entry *seen,
				     const struct pvo_map_rules *r)
{
	enum pvo_map_verdict v;

	g_mutex_lock(&lock);
	v = ingress_locked(seen, r);
	g_mutex_unlock(&lock);
	return v;
}

unsigned int pvo_map_expire(uint64_t now_us, uint64_t age_us)
{
	GHashTableIter it;
	gpointer k, v;
	unsigned int n = 0;

	g_mutex_lock(&lock);
	if (!table) {
		g_mutex_unlock(&lock);
		return 0;
	}
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
	g_mutex_unlock(&lock);
	return n;
}
