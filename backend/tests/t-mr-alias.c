// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest MR as one host virtual range (hostverbs/mr_alias.h): guest RAM
 * is two shared memfd mappings, as a VMM's; an MR's scattered pages,
 * also across the two regions, alias back to back, writes through the
 * alias land in the guest pages and the other way round, and bad page
 * lists are refused with nothing left mapped. Runs are counted before
 * anything is mapped, up to a bound; the bounds of host mappings and
 * pinned bytes per VM (hv_budget.h) refuse at the quota and at the
 * VM's part of the host's share, and what is given back can be taken
 * again. Prints what the worst aliases cost in time.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <glib.h>

#include "config.h"
#include "fake_guest.h"
#include "hv_budget.h"
#include "mr_alias.h"
#include "tap.h"

#define PAGE 4096u

static struct fake_guest g;

static uint8_t pat(uint32_t page, uint32_t i)
{
	return (uint8_t)(page * 37 + i * 11 + (i >> 8));
}

static void test_alias(void)
{
	/* out of order, a run of three, a page of the second region */
	const uint64_t gpas[] = {5 * PAGE, 6 * PAGE,	       7 * PAGE,
				 2 * PAGE, FG_HALF + 9 * PAGE, 40 * PAGE};
	const uint32_t n = G_N_ELEMENTS(gpas);
	struct pvo_mr_alias a;
	char *why = NULL;
	uint32_t p, i, bad = 0;
	uint8_t *alias;
	int ret;

	ret = pvo_mr_alias_map(g.vm, gpas, n, &a, &why);
	tap_ok(ret == 0 && a.len == n * PAGE && a.runs == 4,
	       "6 pages alias back to back in 4 mappings (ret %d, %u runs%s%s)",
	       ret, a.runs, why ? ": " : "", why ? why : "");
	g_free(why);
	if (ret)
		return;
	alias = a.base;
	for (p = 0; p < n; p++)
		for (i = 0; i < PAGE; i++)
			alias[p * PAGE + i] = pat(p, i);
	for (p = 0; p < n; p++)
		for (i = 0; i < PAGE; i++)
			bad += ((uint8_t *)fg_ptr(&g, gpas[p]))[i] != pat(p, i);
	tap_ok(bad == 0,
	       "what a device writes through the alias is in the "
	       "guest pages, in the MR's order (%u bad bytes)",
	       bad);
	memset(fg_ptr(&g, gpas[4]), 0x5a, PAGE);
	tap_ok(alias[4 * PAGE] == 0x5a && alias[5 * PAGE - 1] == 0x5a,
	       "what the guest writes shows through the alias");
	pvo_mr_alias_unmap(&a);
	tap_ok(*(uint8_t *)fg_ptr(&g, gpas[0]) == pat(0, 0) && !a.base,
	       "unmapping the alias leaves guest RAM as it was");
}

static void refused(const char *what, const uint64_t *gpas, uint32_t n,
		    int want, const char *says)
{
	struct pvo_mr_alias a;
	char *why = NULL;
	int ret = pvo_mr_alias_map(g.vm, gpas, n, &a, &why);

	tap_ok(ret == want && !a.base && why && strstr(why, says),
	       "%s: refused (%d), nothing mapped: %s", what, ret,
	       why ? why : "(no reason)");
	g_free(why);
}

static void test_refused(void)
{
	const uint64_t outside[] = {0, PAGE, FG_RAM_SIZE};
	const uint64_t unaligned[] = {0, PAGE + 8};
	const uint64_t last[] = {FG_RAM_SIZE - PAGE, FG_RAM_SIZE};

	refused("a page past guest RAM", outside, 3, -EFAULT,
		"page 2 at 0x1000000 is not guest RAM");
	refused("an unaligned page", unaligned, 2, -EINVAL,
		"page 1 at 0x1008 is not page aligned");
	refused("a run that walks off the end of RAM", last, 2, -EFAULT,
		"page 1");
	refused("no pages", outside, 0, -EINVAL, "0 pages");
}

/* Lines of /proc/self/maps: the process's mappings. */
static unsigned int map_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned int n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Mappings of /proc/self/maps that overlap [base, base + len). */
static unsigned int mapped_in(const void *base, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, b = (unsigned long)base;
	unsigned int n = 0;
	char line[512];

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < b + len &&
		    hi > b)
			n++;
	fclose(f);
	return n;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_count(void)
{
	const uint64_t gpas[] = {5 * PAGE, 6 * PAGE,	       7 * PAGE,
				 2 * PAGE, FG_HALF + 9 * PAGE, 40 * PAGE};
	const uint64_t bad[] = {0, PAGE + 8};
	uint32_t runs = 0;
	char *why = NULL;
	int ret;

	ret = pvo_mr_alias_count(g.vm, gpas, 6, 4, &runs, &why);
	tap_ok(ret == 0 && runs == 4,
	       "counting finds the 4 runs mapping makes (ret %d, %u)", ret,
	       runs);
	ret = pvo_mr_alias_count(g.vm, gpas, 6, 3, &runs, &why);
	tap_ok(ret == -ENOSPC && runs == 4,
	       "counting up to 3 runs stops at the 4th (ret %d, %u)", ret,
	       runs);
	ret = pvo_mr_alias_count(g.vm, bad, 2, 10, &runs, &why);
	tap_ok(ret == -EINVAL && why && strstr(why, "not page aligned"),
	       "counting checks every page as mapping does: %s",
	       why ? why : "(no reason)");
	g_free(why);
}

/* One page, n times: n runs, the most mappings an MR can take. */
static uint64_t *one_page(uint32_t n)
{
	uint64_t *p = g_new(uint64_t, n);
	uint32_t i;

	for (i = 0; i < n; i++)
		p[i] = 11 * PAGE;
	return p;
}

static void test_map_count(void)
{
	const uint32_t n = 2000;
	uint64_t *gpas = one_page(n);
	unsigned int before = map_count(), during;
	struct pvo_mr_alias a;
	uint32_t runs = 0;
	char *why = NULL;
	int ret;

	ret = pvo_mr_alias_count(g.vm, gpas, n, 1000, &runs, &why);
	tap_ok(ret == -ENOSPC && map_count() == before,
	       "one page 2000 times, counted against 1000: refused, no "
	       "mapping made (%u -> %u)",
	       before, map_count());
	ret = pvo_mr_alias_map(g.vm, gpas, n, &a, &why);
	during = map_count();
	tap_ok(ret == 0 && a.runs == n && during >= before + n - 1 &&
		   during <= before + n + 1,
	       "mapped, it takes one mapping per copy (%u -> %u)", before,
	       during);
	pvo_mr_alias_unmap(&a);
	tap_ok(map_count() == before, "unmapped, they are all gone (%u)",
	       map_count());
	g_free(why);
	g_free(gpas);
}

/*
 * The same over several calls (large host-verbs MRs, hv_mr.c): counting
 * 64 pages a part and mapping 8 runs a part reach what one call does,
 * the same bytes behind the alias; a mapping part that meets more runs
 * than were counted stops with EINVAL.
 */
static void test_parts(void)
{
	const uint32_t n = 300; /* 100 runs of 3 pages, out of order */
	uint64_t *gpas = g_new(uint64_t, n);
	struct pvo_mr_alias_walk w = {0};
	uint32_t i, parts = 0, bad = 0;
	unsigned int before;
	void *base;
	struct pvo_mr_alias a;
	char *why = NULL;
	int ret;

	for (i = 0; i < n; i++)
		gpas[i] = (uint64_t)((99 - i / 3) * 4 + i % 3) * PAGE;
	do {
		ret =
		    pvo_mr_alias_count_part(g.vm, gpas, n, 1000, 64, &w, &why);
		parts++;
	} while (ret == -EAGAIN && parts < 100);
	tap_ok(ret == 0 && w.runs == 100 && w.next == n && parts == 5,
	       "300 pages counted 64 a part: 100 runs in 5 parts (ret %d, "
	       "%u runs, %u parts)",
	       ret, w.runs, parts);
	w = (struct pvo_mr_alias_walk){0};
	before = map_count();
	ret = pvo_mr_alias_reserve(n, &a, &why);
	for (parts = 0; !ret || ret == -EAGAIN; parts++) {
		unsigned int runs0 = a.runs;

		ret =
		    pvo_mr_alias_map_part(g.vm, gpas, n, &a, 8, 100, &w, &why);
		bad += a.runs - runs0 > 8;
		if (!ret)
			break;
	}
	for (i = 0; !ret && i < n; i++)
		bad += memcmp((uint8_t *)a.base + i * PAGE, fg_ptr(&g, gpas[i]),
			      PAGE) != 0;
	tap_ok(ret == 0 && a.runs == 100 && parts == 12 && !bad &&
		   map_count() >= before + 99,
	       "mapped 8 runs a part: 100 runs in 13 parts, every page "
	       "behind the alias the guest's (ret %d, %u runs, %u bad)",
	       ret, a.runs, bad);
	pvo_mr_alias_unmap(&a);
	g_free(why);
	why = NULL;
	w = (struct pvo_mr_alias_walk){0};
	ret = pvo_mr_alias_reserve(n, &a, &why);
	do {
		ret = pvo_mr_alias_map_part(g.vm, gpas, n, &a, 8, 50, &w, &why);
	} while (ret == -EAGAIN);
	tap_ok(ret == -EINVAL && a.runs == 50 && why &&
		   strstr(why, "more than the 50 runs counted"),
	       "a part that meets more runs than counted stops: %s",
	       why ? why : "(no reason)");
	base = a.base;
	pvo_mr_alias_unmap(&a);
	tap_ok(!mapped_in(base, (size_t)n * PAGE),
	       "nothing stays mapped in the alias's range");
	g_free(why);
	g_free(gpas);
}

static struct pvo_vm *budget_vm(const struct pvo_vm_config *cfg)
{
	return pvo_vm_new(cfg);
}

static void test_budget(const struct pvo_daemon_config *cfg)
{
	struct pvo_vm *a = budget_vm(&cfg->vms[1]),
		      *b = budget_vm(&cfg->vms[2]),
		      *c = budget_vm(&cfg->vms[3]);
	struct pvo_hv_use ua = {0}, ub = {0}, uc = {0};
	enum pvo_status st;

	/* max-host-mappings = 100, max-pinned = 1 MiB each */
	pvo_hv_budget_init(1000);
	pvo_hv_budget_join(a, &ua);
	tap_ok(pvo_hv_budget_mappings_max(a) == 100 &&
		   pvo_hv_budget_mappings_left(a, &ua) == 100,
	       "alone under a share of 500, a VM may have its quota of 100 "
	       "mappings");
	st = pvo_hv_budget_charge(a, &ua, 60, 60 * PAGE);
	if (!st)
		st = pvo_hv_budget_charge(a, &ua, 41, 41 * PAGE);
	tap_ok(st == PVO_STATUS_ENOSPC && ua.mappings == 60 && ua.mrs == 1,
	       "60 then 41 more mappings: the second is refused with "
	       "ENOSPC (%d), nothing charged",
	       (int)st);
	st = pvo_hv_budget_charge(a, &ua, 40, 40 * PAGE);
	tap_ok(st == PVO_STATUS_OK && !pvo_hv_budget_mappings_left(a, &ua),
	       "40 more fit exactly; none left");
	pvo_hv_budget_uncharge(&ua, 40, 40 * PAGE);
	tap_ok(pvo_hv_budget_mappings_left(a, &ua) == 40 && ua.mrs == 1 &&
		   ua.pinned == 60 * PAGE,
	       "deregistering gives the 40 back");
	st = pvo_hv_budget_charge(a, &ua, 1, 1 << 20);
	tap_ok(st == PVO_STATUS_ENOSPC && ua.pinned == 60 * PAGE,
	       "1 MiB more pinned passes max-pinned = 1 MiB: refused (%d)",
	       (int)st);

	/* a share of 100 for three quotas of 100: 33 each */
	pvo_hv_budget_init(200);
	pvo_hv_budget_join(b, &ub);
	pvo_hv_budget_join(c, &uc);
	tap_ok(pvo_hv_budget_mappings_max(b) == 33 &&
		   pvo_hv_budget_mappings_left(a, &ua) == 0,
	       "3 VMs on a share of 100: 33 each; the one holding 60 may "
	       "take no more (%u)",
	       pvo_hv_budget_mappings_max(b));
	st = pvo_hv_budget_charge(b, &ub, 34, PAGE);
	tap_ok(st == PVO_STATUS_ENOSPC, "34 for another VM: refused (%d)",
	       (int)st);
	st = pvo_hv_budget_charge(b, &ub, 33, PAGE);
	tap_ok(st == PVO_STATUS_OK && pvo_hv_budget_mapped() == 93,
	       "33 fit (93 of 100 mapped)");
	tap_ok(pvo_hv_budget_mappings_left(c, &uc) == 7 &&
		   pvo_hv_budget_charge(c, &uc, 8, PAGE) == PVO_STATUS_ENOSPC &&
		   pvo_hv_budget_charge(c, &uc, 7, PAGE) == PVO_STATUS_OK,
	       "the third VM gets what is left of the share, 7, not 8");
	pvo_hv_budget_uncharge(&ua, 60, 60 * PAGE);
	tap_ok(pvo_hv_budget_mappings_left(c, &uc) == 26 &&
		   pvo_hv_budget_mapped() == 40,
	       "the first VM's MR goes: the third may have its 33 (%u left)",
	       pvo_hv_budget_mappings_left(c, &uc));
	pvo_hv_budget_leave(b, &ub);
	pvo_hv_budget_leave(c, &uc);
	pvo_hv_budget_leave(a, &ua);
	tap_ok(pvo_hv_budget_mapped() == 0,
	       "VMs that leave give back what they held");
	pvo_vm_free(a);
	pvo_vm_free(b);
	pvo_vm_free(c);
}

/* What the worst aliases cost: the most runs the default bound lets an
 * MR have, a 4 GiB page list refused at that bound, a 4 GiB MR of
 * long runs. */
static void measure(void)
{
	const uint32_t runs = 16384, big = 1u << 20;
	uint64_t *gpas = one_page(big);
	struct pvo_mr_alias a;
	double t0, t1, t2;
	uint32_t n, i;
	char *why = NULL;
	int ret;

	t0 = now_ms();
	ret = pvo_mr_alias_count(g.vm, gpas, runs, runs, &n, &why);
	if (!ret)
		ret = pvo_mr_alias_map(g.vm, gpas, runs, &a, &why);
	t1 = now_ms();
	if (!ret)
		pvo_mr_alias_unmap(&a);
	t2 = now_ms();
	tap_ok(ret == 0,
	       "%u single-page runs: counted and mapped in %.1f "
	       "ms, unmapped in %.1f ms",
	       runs, t1 - t0, t2 - t1);
	t0 = now_ms();
	ret = pvo_mr_alias_count(g.vm, gpas, big, runs, &n, &why);
	t1 = now_ms();
	tap_ok(ret == -ENOSPC && n == runs + 1,
	       "a 4 GiB list of one page, counted against %u: refused in "
	       "%.1f ms, nothing mapped",
	       runs, t1 - t0);
	for (i = 0; i < big; i++)
		gpas[i] = (uint64_t)(i % (FG_RAM_SIZE / PAGE)) * PAGE;
	t0 = now_ms();
	ret = pvo_mr_alias_count(g.vm, gpas, big, runs, &n, &why);
	if (!ret)
		ret = pvo_mr_alias_map(g.vm, gpas, big, &a, &why);
	t1 = now_ms();
	if (!ret)
		pvo_mr_alias_unmap(&a);
	tap_ok(ret == 0 && n == 512,
	       "a 4 GiB MR of guest RAM 256 times (%u runs): counted and "
	       "mapped in %.1f ms",
	       n, t1 - t0);
	g_free(why);
	g_free(gpas);
}

int main(void)
{
	static const char conf[] =
	    "[tenant t]\nvni=1\n"
	    "[vm a]\ntenant=t\nmac=52:54:00:00:00:0a\n"
	    "ips=10.0.0.1\nsocket=/tmp/a.sock\n"
	    "[vm b1]\ntenant=t\nmac=52:54:00:00:00:b1\n"
	    "max-host-mappings=100\nmax-pinned=1048576\n"
	    "[vm b2]\ntenant=t\nmac=52:54:00:00:00:b2\n"
	    "max-host-mappings=100\nmax-pinned=1048576\n"
	    "[vm b3]\ntenant=t\nmac=52:54:00:00:00:b3\n"
	    "max-host-mappings=100\nmax-pinned=1048576\n";
	uint8_t *ram[2] = {fg_shared_block(), fg_shared_block()};
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	cfg = pvo_config_parse("t", conf, &err);
	if (!cfg || !ram[0] || !ram[1]) {
		printf("Bail out! %s\n", err ? err : "no shared memory");
		return 1;
	}
	tap_plan(33);
	fg_init_ram(&g, &cfg->vms[0], ram);
	test_alias();
	test_refused();
	test_count();
	test_map_count();
	test_parts();
	test_budget(cfg);
	measure();
	{
		/* the alias holds its pages: no use after the guest RAM
		 * mapping goes (a new memory table, the VM leaving) */
		const uint64_t gpa = 3 * PAGE;
		struct pvo_mr_alias a;
		char *why = NULL;

		memset(fg_ptr(&g, gpa), 0x77, PAGE);
		pvo_mr_alias_map(g.vm, &gpa, 1, &a, &why);
		g_free(why);
		fg_fini(&g);
		munmap(ram[0], FG_HALF);
		munmap(ram[1], FG_HALF);
		tap_ok(a.base && ((uint8_t *)a.base)[PAGE - 1] == 0x77,
		       "the alias keeps its pages after guest RAM is unmapped");
		pvo_mr_alias_unmap(&a);
	}
	pvo_config_free(cfg);
	return tap_done();
}
