// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest memory: translation per region, the write helper and its dirty
 * log, and page directory walking against malicious directories.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config.h"
#include "fake_guest.h"
#include "guest_mem.h"
#include "tap.h"

static struct fake_guest g;

static enum pvo_status walk(uint64_t dir, uint32_t npages, uint32_t want,
			    uint64_t **pages)
{
	struct pvo_pdir pd = { htole64(dir), htole32(npages), 0 };

	return pvo_pdir_read(g.vm, &pd, want, pages);
}

static void test_translation(void)
{
	uint8_t buf[64];
	uint64_t avail;
	uint8_t *p;

	p = pvo_gmem_map(g.vm, 0x1234, &avail);
	tap_ok(p == g.block[0] + 0x1234 && avail == FG_HALF - 0x1234,
	       "map: host address and bytes left in the region");
	p = pvo_gmem_map(g.vm, FG_HALF, &avail);
	tap_ok(p == g.block[1] && avail == FG_HALF, "second region");
	tap_ok(!pvo_gmem_map(g.vm, FG_RAM_SIZE, &avail), "end of RAM");
	tap_ok(!pvo_gmem_map(g.vm, ~0ull, &avail), "GPA 2^64-1");
	tap_ok(!pvo_gmem_ptr(g.vm, FG_HALF - 8, 16),
	       "ptr: a range across regions has no single host address");
	tap_ok(pvo_gmem_is_ram(g.vm, FG_HALF - 8, 16),
	       "... but it is guest RAM");
	tap_ok(!pvo_gmem_is_ram(g.vm, FG_RAM_SIZE - 8, 16),
	       "a range past the end is not");
	tap_ok(!pvo_gmem_is_ram(g.vm, ~0ull - 4, 16),
	       "a range that wraps is not");

	memset(buf, 0x5a, sizeof(buf));
	tap_ok(pvo_gmem_write(g.vm, FG_HALF - 32, buf, sizeof(buf)) &&
		       g.block[0][FG_HALF - 1] == 0x5a &&
		       g.block[1][31] == 0x5a && g.block[1][32] == 0,
	       "write across the region boundary");
	memset(buf, 0, sizeof(buf));
	tap_ok(pvo_gmem_read(g.vm, FG_HALF - 32, buf, sizeof(buf)) &&
		       buf[0] == 0x5a && buf[63] == 0x5a,
	       "read across the region boundary");
	tap_ok(!pvo_gmem_write(g.vm, FG_RAM_SIZE - 4, buf, 8),
	       "write past the end fails");

	g.vm->connected = false;
	tap_ok(!pvo_gmem_map(g.vm, 0x1000, &avail),
	       "no translation while disconnected");
	g.vm->connected = true;
}

static void test_dirty_log(void)
{
	VuDev *dev = &g.vhost.vug.parent;
	uint8_t log[FG_RAM_SIZE / 4096 / 8] = { 0 };
	uint8_t b[2] = { 1, 1 };
	uint32_t old;
	uint64_t orig;

	pvo_gmem_write(g.vm, 0x3000, b, 1);
	dev->log_table = log;
	dev->log_size = sizeof(log);
	pvo_gmem_write(g.vm, 0x5000, b, 1);
	tap_ok(log[0] == 0, "no logging without VHOST_F_LOG_ALL");
	dev->features |= 1ull << VHOST_F_LOG_ALL;
	pvo_gmem_write(g.vm, 0x5fff, b, 2);	/* pages 5 and 6 */
	tap_is(log[0], 0x60, "a write marks every page it touches");
	pvo_gmem_store32(g.vm, 0x8000, 7);
	pvo_gmem_xchg32(g.vm, 0x9000, 7, &old);
	pvo_gmem_atomic64(g.vm, FG_HALF + 0x1000, PVO_GMEM_FETCH_ADD, 1, 0,
			  &orig);
	tap_ok(log[1] == 0x03 && (log[FG_HALF / 4096 / 8] & 2),
	       "stores, exchanges and atomics are logged too");
	dev->log_size = 1;
	pvo_gmem_write(g.vm, 0x20000, b, 1);	/* page 32: past the log */
	tap_is(log[4], 0, "a write beyond the log size does not overrun it");
	dev->features = 0;
	dev->log_table = NULL;
	dev->log_size = 0;
}

static void test_atomics(void)
{
	uint64_t orig, *w = fg_ptr(&g, 0x7008);
	uint32_t v;

	*w = htole64(10);
	tap_ok(pvo_gmem_atomic64(g.vm, 0x7008, PVO_GMEM_CMP_SWAP, 11, 5,
				 &orig) &&
		       orig == 10 && le64toh(*w) == 10,
	       "compare-and-swap: no swap on a mismatch, old value back");
	tap_ok(pvo_gmem_atomic64(g.vm, 0x7008, PVO_GMEM_CMP_SWAP, 10, 5,
				 &orig) &&
		       orig == 10 && le64toh(*w) == 5,
	       "compare-and-swap on a match");
	tap_ok(!pvo_gmem_atomic64(g.vm, 0x700c, PVO_GMEM_FETCH_ADD, 1, 0,
				  &orig),
	       "misaligned 64-bit atomic refused");
	tap_ok(!pvo_gmem_load32(g.vm, 0x7002, &v) && v == 0,
	       "misaligned 32-bit word refused");
}

static void test_pdir(void)
{
	uint64_t *pages = NULL, dir, tbl, *d, *t;
	uint64_t gpas[600];
	struct pvo_pdir pd;
	int i;

	for (i = 0; i < 600; i++)
		gpas[i] = 0x100000 + (uint64_t)i * 4096;
	gpas[599] = FG_HALF + 0x3000;	/* pages may be anywhere in RAM */
	fg_pdir(&g, gpas, 600, &pd);
	tap_is(pvo_pdir_read(g.vm, &pd, 600, &pages), PVO_STATUS_OK,
	       "600 pages over two tables");
	tap_ok(pages && pages[0] == gpas[0] && pages[511] == gpas[511] &&
		       pages[512] == gpas[512] && pages[599] == gpas[599],
	       "entry i is table[i / 512][i %% 512]");
	g_free(pages);
	tap_is(pvo_pdir_read(g.vm, &pd, 601, &pages), PVO_STATUS_EINVAL,
	       "npages must be what the object needs");
	tap_ok(pages == NULL, "nothing returned on failure");
	pd.dir_pages = htole32(2);
	tap_is(pvo_pdir_read(g.vm, &pd, 600, &pages), PVO_STATUS_EINVAL,
	       "dir_pages must be no more than the tables need");

	dir = fg_alloc(&g, 1);
	tbl = fg_alloc(&g, 1);
	d = fg_ptr(&g, dir);
	t = fg_ptr(&g, tbl);
	d[0] = htole64(tbl);
	t[0] = htole64(0x200000);
	t[1] = htole64(0x201000);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_OK, "a small directory");
	g_free(pages);
	tap_is(walk(dir, 0, 0, &pages), PVO_STATUS_EINVAL, "zero pages");
	tap_is(walk(dir, PVO_PDIR_MAX_PAGES + 1, PVO_PDIR_MAX_PAGES + 1,
		    &pages),
	       PVO_STATUS_EINVAL, "more than PVO_PDIR_MAX_PAGES pages");
	tap_is(walk(dir + 8, 2, 2, &pages), PVO_STATUS_EINVAL,
	       "misaligned directory");
	tap_is(walk(FG_RAM_SIZE, 2, 2, &pages), PVO_STATUS_EFAULT,
	       "directory outside RAM");
	{
		uint64_t save = g.next, dir2, tbl2;

		g.next = FG_HALF + 0x10000;
		dir2 = fg_alloc(&g, 1);
		tbl2 = fg_alloc(&g, 1);
		g.next = save;
		((uint64_t *)fg_ptr(&g, dir2))[0] = htole64(tbl2);
		((uint64_t *)fg_ptr(&g, tbl2))[0] = htole64(0x200000);
		((uint64_t *)fg_ptr(&g, tbl2))[1] = htole64(FG_HALF - 4096);
		tap_is(walk(dir2, 2, 2, &pages), PVO_STATUS_OK,
		       "directory and table in the second region");
		g_free(pages);
		pages = NULL;
	}
	t[1] = htole64(0x201001);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_EINVAL,
	       "misaligned data page");
	t[1] = htole64(FG_RAM_SIZE);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_EFAULT,
	       "data page outside RAM");
	t[1] = htole64(~0ull & ~4095ull);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_EFAULT,
	       "data page at the top of the address space");
	t[1] = htole64(0x201000);
	d[0] = htole64(tbl + 4);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_EINVAL,
	       "misaligned table page");
	d[0] = htole64(1ull << 40);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_EFAULT,
	       "table page outside RAM");
	d[0] = htole64(dir);	/* the directory as its own table */
	d[1] = htole64(0x123);
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_EINVAL,
	       "directory as its own table: its entries are checked too");
	d[1] = 0;
	d[0] = htole64(tbl);
	t[0] = htole64(tbl);	/* a table naming itself as data: harmless */
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_OK,
	       "a table page listed as data is just a page");
	g_free(pages);
	pages = NULL;
	d[1] = htole64(FG_RAM_SIZE);	/* beyond what npages needs */
	tap_is(walk(dir, 2, 2, &pages), PVO_STATUS_OK,
	       "directory entries past npages are not read");
	g_free(pages);
}

int main(void)
{
	static const char conf[] =
		"[tenant t]\nvni=5\n[vm g]\ntenant=t\n"
		"mac=52:54:00:ab:cd:ef\nsocket=/tmp/unused.sock\n";
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	tap_plan(39);
	cfg = pvo_config_parse("t", conf, &err);
	fg_init(&g, &cfg->vms[0]);
	test_translation();
	test_dirty_log();
	test_atomics();
	test_pdir();
	fg_fini(&g);
	pvo_config_free(cfg);
	return tap_done();
}
