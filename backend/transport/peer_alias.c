// SPDX-License-Identifier: GPL-2.0-or-later
/* Moved remote VMs' identifiers; see peer_alias.h. */
#include <glib.h>

#include "peer_alias.h"

struct vm_table {
	uint64_t gen;
	uint32_t pairs;
	/* guest -> host per kind; host QPN -> guest QPN */
	GHashTable *host[2], *guest_qpn;
};

static GMutex lock;
static GHashTable *vms; /* (vni << 32 | ip) -> struct vm_table */
static int any;		/* g_atomic: vms has an entry */
static unsigned long all_pairs;

/* A 32-bit value as a hash key or value that may be 0. */
#define BOX(v) GSIZE_TO_POINTER((gsize)(v) | ((gsize)1 << 32))
#define UNBOX(p) ((uint32_t)GPOINTER_TO_SIZE(p))

static gpointer vm_key(uint32_t vni, uint32_t ip)
{
	return GSIZE_TO_POINTER((gsize)vni << 32 | ip);
}

static void table_free(gpointer p)
{
	struct vm_table *t = p;

	all_pairs -= t->pairs;
	g_hash_table_destroy(t->host[0]);
	g_hash_table_destroy(t->host[1]);
	g_hash_table_destroy(t->guest_qpn);
	g_free(t);
}

static struct vm_table *table_new(uint64_t gen)
{
	struct vm_table *t = g_new0(struct vm_table, 1);
	unsigned int i;

	t->gen = gen;
	for (i = 0; i < 2; i++)
		t->host[i] = g_hash_table_new(NULL, NULL);
	t->guest_qpn = g_hash_table_new(NULL, NULL);
	return t;
}

static void published(void)
{
	g_atomic_int_set(&any, vms && g_hash_table_size(vms) > 0);
}

/* The VM's table for gen, made or replaced as pvo_alias_moved says;
 * NULL with *v. Under the lock. */
static struct vm_table *table_for(uint32_t vni, uint32_t ip, uint64_t gen,
				  enum pvo_alias_verdict *v)
{
	struct vm_table *t;

	if (!vms)
		vms = g_hash_table_new_full(NULL, NULL, NULL, table_free);
	t = g_hash_table_lookup(vms, vm_key(vni, ip));
	if (t && t->gen > gen) {
		*v = PVO_ALIAS_STALE;
		return NULL;
	}
	if (t && t->gen < gen) {
		g_hash_table_remove(vms, vm_key(vni, ip));
		t = NULL;
	}
	if (!t) {
		if (g_hash_table_size(vms) >= PVO_ALIAS_MAX_VMS) {
			*v = PVO_ALIAS_FULL;
			return NULL;
		}
		t = table_new(gen);
		g_hash_table_insert(vms, vm_key(vni, ip), t);
	}
	*v = PVO_ALIAS_ADDED;
	return t;
}

enum pvo_alias_verdict pvo_alias_moved(uint32_t vni, uint32_t ip, uint64_t gen)
{
	enum pvo_alias_verdict v;

	g_mutex_lock(&lock);
	table_for(vni, ip, gen, &v);
	published();
	g_mutex_unlock(&lock);
	return v;
}

enum pvo_alias_verdict pvo_alias_add(uint32_t vni, uint32_t ip, uint64_t gen,
				     enum pvo_alias_kind kind, uint32_t guest,
				     uint32_t host, uint32_t max)
{
	enum pvo_alias_verdict v;
	struct vm_table *t;
	gpointer old;

	g_mutex_lock(&lock);
	t = table_for(vni, ip, gen, &v);
	if (!t)
		goto out;
	old = g_hash_table_lookup(t->host[kind], BOX(guest));
	if (!old && t->pairs >= MIN(max, PVO_ALIAS_MAX_PAIRS)) {
		v = PVO_ALIAS_FULL;
		goto out;
	}
	if (!old) {
		t->pairs++;
		all_pairs++;
	} else if (kind == PVO_ALIAS_QPN) {
		g_hash_table_remove(t->guest_qpn, BOX(UNBOX(old)));
	}
	g_hash_table_insert(t->host[kind], BOX(guest), BOX(host));
	if (kind == PVO_ALIAS_QPN)
		g_hash_table_insert(t->guest_qpn, BOX(host), BOX(guest));
out:
	published();
	g_mutex_unlock(&lock);
	return v;
}

void pvo_alias_forget(uint32_t vni, uint32_t ip)
{
	g_mutex_lock(&lock);
	if (vms)
		g_hash_table_remove(vms, vm_key(vni, ip));
	published();
	g_mutex_unlock(&lock);
}

void pvo_alias_clear(void)
{
	g_mutex_lock(&lock);
	if (vms)
		g_hash_table_remove_all(vms);
	published();
	g_mutex_unlock(&lock);
}

bool pvo_alias_any(void)
{
	return g_atomic_int_get(&any);
}

static uint32_t lookup(uint32_t vni, uint32_t ip,
		       GHashTable *(*pick)(struct vm_table *,
					   enum pvo_alias_kind),
		       enum pvo_alias_kind kind, uint32_t v)
{
	struct vm_table *t;
	gpointer p;

	if (!pvo_alias_any())
		return v;
	g_mutex_lock(&lock);
	t = vms ? g_hash_table_lookup(vms, vm_key(vni, ip)) : NULL;
	p = t ? g_hash_table_lookup(pick(t, kind), BOX(v)) : NULL;
	g_mutex_unlock(&lock);
	return p ? UNBOX(p) : v;
}

static GHashTable *to_host(struct vm_table *t, enum pvo_alias_kind kind)
{
	return t->host[kind];
}

static GHashTable *to_guest(struct vm_table *t, enum pvo_alias_kind kind)
{
	(void)kind;
	return t->guest_qpn;
}

uint32_t pvo_alias_host(uint32_t vni, uint32_t ip, enum pvo_alias_kind kind,
			uint32_t guest)
{
	return lookup(vni, ip, to_host, kind, guest);
}

uint32_t pvo_alias_guest_qpn(uint32_t vni, uint32_t ip, uint32_t host_qpn)
{
	return lookup(vni, ip, to_guest, PVO_ALIAS_QPN, host_qpn);
}

uint64_t pvo_alias_gen(uint32_t vni, uint32_t ip)
{
	struct vm_table *t;
	uint64_t gen;

	if (!pvo_alias_any())
		return 0;
	g_mutex_lock(&lock);
	t = vms ? g_hash_table_lookup(vms, vm_key(vni, ip)) : NULL;
	gen = t ? t->gen : 0;
	g_mutex_unlock(&lock);
	return gen;
}

void pvo_alias_count(unsigned int *n, unsigned long *pairs)
{
	g_mutex_lock(&lock);
	*n = vms ? g_hash_table_size(vms) : 0;
	*pairs = all_pairs;
	g_mutex_unlock(&lock);
}
