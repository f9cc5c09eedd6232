// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest MR as one host virtual range (hostverbs/mr_alias.h): guest RAM
 * is two shared memfd mappings, as a VMM's; an MR's scattered pages,
 * also across the two regions, alias back to back, writes through the
 * alias land in the guest pages and the other way round, and bad page
 * lists are refused with nothing left mapped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <glib.h>

#include "config.h"
#include "fake_guest.h"
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

int main(void)
{
	static const char conf[] = "[tenant t]\nvni=1\n"
				   "[vm a]\ntenant=t\nmac=52:54:00:00:00:0a\n"
				   "ips=10.0.0.1\nsocket=/tmp/a.sock\n";
	uint8_t *ram[2] = {fg_shared_block(), fg_shared_block()};
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	cfg = pvo_config_parse("t", conf, &err);
	if (!cfg || !ram[0] || !ram[1]) {
		printf("Bail out! %s\n", err ? err : "no shared memory");
		return 1;
	}
	tap_plan(9);
	fg_init_ram(&g, &cfg->vms[0], ram);
	test_alias();
	test_refused();
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
