// SPDX-License-Identifier: GPL-2.0-or-later
/* Host memory of host-verbs VMs, bounded; see hv_budget.h. */
#include <inttypes.h>
#include <stdio.h>
#include <glib.h>

#include "config.h"
#include "hv_budget.h"
#include "log.h"

/* Linux's default, if /proc does not say */
#define MAP_COUNT_DEFAULT 65530

/* process-wide: the share, what is mapped of it, the VMs that take
 * part; under the lock */
static struct {
	GMutex lock;
	uint64_t share, mapped;
	GPtrArray *vms; /* struct pvo_vm */
	bool over;	/* the quotas exceed the share (logged once) */
} b;

static uint64_t read_map_count(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : MAP_COUNT_DEFAULT;
}

void pvo_hv_budget_init(uint64_t limit)
{
	g_mutex_lock(&b.lock);
	if (!limit)
		limit = read_map_count();
	b.share = limit / 2;
	g_mutex_unlock(&b.lock);
	pvo_info(NULL,
		 "hostverbs: host MRs of all VMs may have %" PRIu64
		 " mappings (half of vm.max_map_count = %" PRIu64 ")",
		 limit / 2, limit);
}

/* Under the lock. */
static uint64_t share_locked(void)
{
	if (!b.share)
		b.share = read_map_count() / 2;
	return b.share;
}

uint64_t pvo_hv_budget_share(void)
{
	uint64_t s;

	g_mutex_lock(&b.lock);
	s = share_locked();
	g_mutex_unlock(&b.lock);
	return s;
}

uint64_t pvo_hv_budget_mapped(void)
{
	uint64_t m;

	g_mutex_lock(&b.lock);
	m = b.mapped;
	g_mutex_unlock(&b.lock);
	return m;
}

/* The quotas of the VMs that take part, added up (under the lock). */
static uint64_t quotas_locked(void)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; b.vms && i < b.vms->len; i++) {
		const struct pvo_vm *vm = g_ptr_array_index(b.vms, i);

		sum += vm->cfg->quota.max_host_mappings;
	}
	return sum;
}

static uint32_t max_locked(const struct pvo_vm *vm)
{
	uint64_t q = vm->cfg->quota.max_host_mappings;
	uint64_t sum = quotas_locked(), share = share_locked();

	/* in proportion: the parts add up to the share at most */
	return (uint32_t)(sum <= share ? q : q * share / sum);
}

uint32_t pvo_hv_budget_mappings_max(const struct pvo_vm *vm)
{
	uint32_t m;

	g_mutex_lock(&b.lock);
	m = max_locked(vm);
	g_mutex_unlock(&b.lock);
	return m;
}

static uint32_t left_locked(const struct pvo_vm *vm, const struct pvo_hv_use *u)
{
	uint64_t max = max_locked(vm), share = share_locked();
	uint64_t own = u->mappings < max ? max - u->mappings : 0;
	uint64_t all = b.mapped < share ? share - b.mapped : 0;

	return (uint32_t)MIN(own, all);
}

uint32_t pvo_hv_budget_mappings_left(const struct pvo_vm *vm,
				     const struct pvo_hv_use *u)
{
	uint32_t n;

	g_mutex_lock(&b.lock);
	n = left_locked(vm, u);
	g_mutex_unlock(&b.lock);
	return n;
}

void pvo_hv_budget_join(struct pvo_vm *vm, struct pvo_hv_use *u)
{
	uint64_t sum, share;
	bool warn;

	g_mutex_lock(&b.lock);
	if (!b.vms)
		b.vms = g_ptr_array_new();
	g_ptr_array_add(b.vms, vm);
	u->joined = true;
	sum = quotas_locked();
	share = share_locked();
	warn = sum > share && !b.over;
	b.over = sum > share;
	g_mutex_unlock(&b.lock);
	if (warn)
		pvo_log(
		    NULL,
		    "hostverbs: the VMs' max-host-mappings add up to %" PRIu64
		    ", more than the %" PRIu64 " host mappings of half of "
		    "vm.max_map_count: each VM may have its part of them, "
		    "in proportion to its quota; raise vm.max_map_count "
		    "to %" PRIu64 " (sysctl) to give each its whole quota",
		    sum, share, 2 * sum);
}

void pvo_hv_budget_leave(struct pvo_vm *vm, struct pvo_hv_use *u)
{
	if (!u->joined)
		return;
	g_mutex_lock(&b.lock);
	g_ptr_array_remove(b.vms, vm);
	b.mapped -= MIN(b.mapped, u->mappings);
	b.over = quotas_locked() > share_locked();
	g_mutex_unlock(&b.lock);
	u->joined = false;
}

/* Why a charge is refused (a log line), or NULL. Under the lock. */
static char *refusal_locked(const struct pvo_vm *vm, const struct pvo_hv_use *u,
			    uint32_t mappings, uint64_t pinned)
{
	const struct pvo_quota *q = &vm->cfg->quota;
	uint64_t max = max_locked(vm), share = share_locked();

	if (pinned > q->max_pinned - MIN(q->max_pinned, u->pinned))
		return g_strdup_printf(
		    "host MR quota reached: %" PRIu64 " more bytes pinned "
		    "would pass max-pinned = %" PRIu64 " (%" PRIu64
		    " pinned by %u host MRs)",
		    pinned, q->max_pinned, u->pinned, u->mrs);
	if (u->mappings + (uint64_t)mappings > max)
		return g_strdup_printf(
		    "host MR quota reached: %u more host mappings would pass "
		    "%" PRIu64 "%s (%u in use by %u host MRs); an MR takes "
		    "one per run of guest-contiguous pages",
		    mappings, max,
		    max < q->max_host_mappings
			? ", its part of the host's share (vm.max_map_count)"
			: " = max-host-mappings",
		    u->mappings, u->mrs);
	if (b.mapped + mappings > share)
		return g_strdup_printf(
		    "host mappings of all VMs in use: %u more would pass "
		    "the %" PRIu64 " of half of vm.max_map_count (%" PRIu64
		    " in use)",
		    mappings, share, b.mapped);
	return NULL;
}

enum pvo_status pvo_hv_budget_charge(struct pvo_vm *vm, struct pvo_hv_use *u,
				     uint32_t mappings, uint64_t pinned)
{
	char *why;

	g_mutex_lock(&b.lock);
	why = refusal_locked(vm, u, mappings, pinned);
	if (!why) {
		b.mapped += mappings;
		u->mappings += mappings;
		u->pinned += pinned;
		u->mrs++;
	}
	g_mutex_unlock(&b.lock);
	if (!why)
		return PVO_STATUS_OK;
	pvo_vm_warn(vm, "%s", why);
	g_free(why);
	return PVO_STATUS_ENOSPC;
}

void pvo_hv_budget_uncharge(struct pvo_hv_use *u, uint32_t mappings,
			    uint64_t pinned)
{
	g_mutex_lock(&b.lock);
	b.mapped -= MIN(b.mapped, mappings);
	u->mappings -= MIN(u->mappings, mappings);
	u->pinned -= MIN(u->pinned, pinned);
	u->mrs -= !!u->mrs;
	g_mutex_unlock(&b.lock);
}
