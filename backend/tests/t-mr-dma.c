// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Memory regions (keys, bounds, access, quotas, overflow-y ranges) and
 * the DMA cursor: SGE resolution and chunking at page and region limits.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config.h"
#include "ctrl.h"
#include "dma.h"
#include "fake_guest.h"
#include "mr.h"
#include "tap.h"

static struct fake_guest g;
static uint32_t pd, pd2;

static uint32_t reg(uint32_t in_pd, const uint64_t *gpas, uint32_t n,
		    uint64_t iova, uint64_t len, uint32_t access,
		    uint32_t *key, uint32_t *status)
{
	struct pvo_cmd_reg_mr c = { .pd = htole32(in_pd),
				    .access = htole32(access),
				    .iova = htole64(iova),
				    .length = htole64(len) };
	struct pvo_resp_reg_mr r = { 0 };

	fg_pdir(&g, gpas, n, &c.pages);
	*status = fg_cmd(&g, PVO_CMD_REG_MR, 0, &c, sizeof(c), &r, sizeof(r));
	*key = le32toh(r.key);
	return le32toh(r.mr);
}

/* An MR at iova over the n page GPAs, as REG_MR builds it (no budget). */
static void set_pages(struct pvo_mr *mr, uint64_t iova, uint64_t len,
		      const uint64_t *gpas, uint32_t n)
{
	struct pvo_page_runs r;
	uint32_t i;

	*mr = (struct pvo_mr){ .iova = iova, .length = len };
	pvo_page_runs_init(&r, NULL);
	for (i = 0; i < n; i++)
		if (pvo_page_runs_add(&r, gpas[i]))
			tap_bail("no memory for %u pages", n);
	pvo_page_runs_trim(&r);
	pvo_mr_set_pages(mr, &r);
}

static void unset_pages(struct pvo_mr *mr)
{
	pvo_page_runs_free(&mr->pages);
}

static void test_runs(void)
{
	struct pvo_mr m;
	uint64_t a = 0, g1;

	{
		uint64_t p[3] = { 0x10000, 0x11000, 0x13000 };

		set_pages(&m, 0x1000, 0x3000, p, 3);
		tap_ok(m.pages.nruns == 2 && pvo_page_run_pg(&m.pages, 0) == 0 &&
			       pvo_page_run_pg(&m.pages, 1) == 2 &&
			       m.pages.npages == 3,
		       "a jump at iova 0x3000: runs of 2 and 1 pages");
		g1 = pvo_mr_gpa(&m, 0x1800, &a);
		tap_ok(g1 == 0x10800 && a == 0x1800,
		       "a run goes on over the next page while it is "
		       "contiguous and stops at the gap (0x%llx)",
		       (unsigned long long)a);
		g1 = pvo_mr_gpa(&m, 0x2fff, &a);
		tap_ok(g1 == 0x11fff && a == 1,
		       "the last byte of a run (0x%llx)",
		       (unsigned long long)a);
		g1 = pvo_mr_gpa(&m, 0x3000, &a);
		tap_ok(g1 == 0x13000 && a == 0x1000,
		       "the first byte of the next run, which is one page "
		       "(0x%llx)",
		       (unsigned long long)a);
		unset_pages(&m);
	}
	{
		/* 2 MiB huge pages at iova 0x40000000 + 0x1ff000, so the
		 * list starts one page before a huge page ends */
		uint64_t p[1 + 512 + 512], i;

		p[0] = 0x5ff000;
		for (i = 0; i < 512; i++) {
			p[1 + i] = 0x200000 + i * 0x1000;
			p[513 + i] = 0xa00000 + i * 0x1000;
		}
		set_pages(&m, 0x401ff800, 0x400000, p, 1025);
		tap_ok(m.pages.nruns == 3 && m.base == 0x401ff000,
		       "pages that jump only at 2 MiB boundaries: 3 runs (%u)",
		       m.pages.nruns);
		tap_ok(pvo_mr_gpa(&m, 0x401ff800, &a) == 0x5ff800 && a == 0x800,
		       "the first byte, half a page before its run ends");
		g1 = pvo_mr_gpa(&m, 0x40200010, &a);
		tap_ok(g1 == 0x200010 && a == 0x200000 - 0x10,
		       "the middle run ends at its jump (0x%llx)",
		       (unsigned long long)a);
		tap_ok(pvo_mr_gpa(&m, 0x405ff7ff, &a) == 0xbff7ff && a == 0x801,
		       "the last byte of the MR");
		unset_pages(&m);
	}
	{
		/* physically contiguous across a 1 GiB boundary of iova */
		uint64_t p[4] = { 0x100000, 0x101000, 0x102000, 0x103000 };

		set_pages(&m, 0x3fffe000, 0x4000, p, 4);
		tap_ok(m.pages.nruns == 1,
		       "no jump: one run");
		g1 = pvo_mr_gpa(&m, 0x3fffe100, &a);
		tap_ok(g1 == 0x100100 && a == 0x3f00,
		       "one chunk for the whole MR (0x%llx)",
		       (unsigned long long)a);
		tap_ok(pvo_mr_gpa(&m, 0x40001fff, &a) == 0x103fff && a == 1,
		       "the last byte");
		unset_pages(&m);
	}
	{
		uint64_t p[1] = { 0x7000 };

		set_pages(&m, 0xfff, 1, p, 1);
		tap_ok(m.pages.nruns == 1 &&
			       pvo_mr_gpa(&m, 0xfff, &a) == 0x7fff && a == 1,
		       "one byte at the end of a page");
		unset_pages(&m);
	}
}

/* 1M entries alternating two pages, and every 1000th page looked up. */
static void test_runs_alternating(void)
{
	uint32_t n = PVO_PDIR_MAX_PAGES, i, bad = 0, left;
	struct pvo_host_budget b = { .limit = 64ull << 20 };
	struct pvo_page_runs r;
	uint64_t gpa;

	pvo_page_runs_init(&r, &b);
	for (i = 0; i < n; i++)
		if (pvo_page_runs_add(&r, i & 1 ? 0x9000 : 0x5000))
			break;
	pvo_page_runs_trim(&r);
	tap_ok(i == n && r.nruns == n && r.npages == n,
	       "%u alternating pages: a run each", n);
	tap_ok(b.used == r.charged && r.charged == (uint64_t)n * 8,
	       "charged 8 bytes a run (%llu)", (unsigned long long)b.used);
	for (i = 0; i < n; i += 999) {
		pvo_page_runs_find(&r, i, &gpa, &left);
		bad += gpa != (i & 1 ? 0x9000 : 0x5000) || left != 1;
	}
	pvo_page_runs_find(&r, n - 1, &gpa, &left);
	tap_ok(!bad && gpa == 0x9000 && left == 1,
	       "lookups find the page of each entry, the last one too");
	pvo_page_runs_free(&r);
	tap_ok(b.used == 0, "freeing uncharges");

	/* two adjacent pages alternating with a third: runs of 2 */
	pvo_page_runs_init(&r, &b);
	for (i = 0; i < 3000; i++)
		pvo_page_runs_add(&r, i % 3 == 2 ? 0x100000 :
					0x5000 + (i % 3) * 0x1000ull);
	pvo_page_runs_find(&r, 1500, &gpa, &left);
	tap_ok(r.nruns == 2000 && gpa == 0x5000 && left == 2,
	       "pages A, A + 4 KiB, B repeated: 2 runs in 3 pages");
	pvo_page_runs_find(&r, 1502, &gpa, &left);
	tap_ok(gpa == 0x100000 && left == 1, "... and B a run of its own");
	pvo_page_runs_free(&r);

	/* a budget too small for them */
	b.limit = 4096;
	pvo_page_runs_init(&r, &b);
	for (i = 0; i < n; i++)
		if (pvo_page_runs_add(&r, i & 1 ? 0x9000 : 0x5000))
			break;
	tap_ok(i < n && r.nruns == i && b.used <= b.limit && b.refused == 1,
	       "over the budget: ENOSPC after %u runs, %llu bytes charged", i,
	       (unsigned long long)b.used);
	pvo_page_runs_free(&r);
	tap_ok(b.used == 0, "and all of it given back");
}

static void test_pure(void)
{
	struct pvo_mr mr = { .iova = 0x1000, .length = 0x3000 };
	uint64_t pages[3] = { 0x10000, 0x30000, 0x20000 };
	uint64_t avail;

	tap_is(pvo_mr_npages(0x1000, 4096), 1, "aligned page: 1");
	tap_is(pvo_mr_npages(0x1800, 4096), 2, "unaligned page: 2");
	tap_is(pvo_mr_npages(0xfff, 2), 2, "2 bytes across a boundary: 2");
	tap_is(pvo_mr_npages(0x1000, 0), 0, "empty: 0");
	tap_is(pvo_mr_npages(~0ull - 4095, 4096), 1, "last page of 2^64");

	tap_ok(pvo_mr_access_valid(0) &&
		       pvo_mr_access_valid(PVO_ACCESS_REMOTE_READ) &&
		       pvo_mr_access_valid(PVO_ACCESS_LOCAL_WRITE |
					   PVO_ACCESS_REMOTE_ATOMIC) &&
		       pvo_mr_access_valid(PVO_ACCESS_MW_BIND),
	       "valid access flags (MW_BIND too)");
	tap_ok(!pvo_mr_access_valid(PVO_ACCESS_REMOTE_WRITE) &&
		       !pvo_mr_access_valid(PVO_ACCESS_REMOTE_ATOMIC) &&
		       !pvo_mr_access_valid(1 << 5) && /* zero-based */
		       !pvo_mr_access_valid(1u << 31),
	       "remote write/atomic need local write; unknown bits refused");

	tap_ok(pvo_mr_covers(&mr, 0x1000, 0x3000) &&
		       pvo_mr_covers(&mr, 0x3fff, 1) &&
		       pvo_mr_covers(&mr, 0x4000, 0),
	       "covers: whole MR, last byte, empty at the end");
	tap_ok(!pvo_mr_covers(&mr, 0x4000, 1) && !pvo_mr_covers(&mr, 0xfff, 1) &&
		       !pvo_mr_covers(&mr, 0x1001, 0x3000) &&
		       !pvo_mr_covers(&mr, 0x2000, ~0ull) &&
		       !pvo_mr_covers(&mr, ~0ull, 2) &&
		       !pvo_mr_covers(&mr, ~0ull - 0x1000, 0x2000) &&
		       !pvo_mr_covers(&mr, 0, 0x1000),
	       "does not cover: past the end, before, wrapping lengths");

	set_pages(&mr, 0x1800, 0x2000, pages, 3); /* starts mid-page */
	tap_ok(pvo_mr_gpa(&mr, 0x1800, &avail) == 0x10800 && avail == 0x800,
	       "byte 0 sits at the iova's page offset");
	tap_ok(pvo_mr_gpa(&mr, 0x2000, &avail) == 0x30000 && avail == 4096,
	       "next page from the list, not the next GPA");
	tap_ok(pvo_mr_gpa(&mr, 0x37ff, &avail) == 0x207ff && avail == 0x801,
	       "last byte in the third page");
	unset_pages(&mr);
}

static void test_keys(void)
{
	uint64_t p[2] = { 0x100000, 0x101000 };
	uint32_t mr, mr2, key, key2, st;
	struct pvo_cmd_handle h = { 0 };
	struct pvo_pd *ppd = pvo_table_get(&g.vm->pds, pd, 0);
	struct pvo_pd *ppd2 = pvo_table_get(&g.vm->pds, pd2, 0);

	mr = reg(pd, p, 2, 0x7000, 0x2000, PVO_ACCESS_LOCAL_WRITE |
		 PVO_ACCESS_REMOTE_READ, &key, &st);
	tap_ok(st == 0 && mr && key, "REG_MR");
	tap_ok(key != PVO_LOCAL_DMA_LKEY && key >> 8 == pvo_handle_index(mr),
	       "key = slot << 8 | tag, never the local DMA key");
	tap_ok(pvo_mr_get(g.vm, key, ppd, PVO_ACCESS_REMOTE_READ, 0x7000,
			  0x2000) != NULL,
	       "lookup with PD, access, range");
	tap_ok(!pvo_mr_get(g.vm, key, ppd2, 0, 0x7000, 1),
	       "another PD does not reach it");
	tap_ok(!pvo_mr_get(g.vm, key, ppd, PVO_ACCESS_REMOTE_WRITE, 0x7000, 1),
	       "missing access bit");
	tap_ok(!pvo_mr_get(g.vm, key, ppd, 0, 0x8fff, 2) &&
		       !pvo_mr_get(g.vm, key, ppd, 0, 0x6fff, 1),
	       "out of range on both ends");
	tap_ok(!pvo_mr_get(g.vm, key ^ 1, ppd, 0, 0x7000, 1) &&
		       !pvo_mr_get(g.vm, 0, ppd, 0, 0x7000, 1) &&
		       !pvo_mr_get(g.vm, PVO_LOCAL_DMA_LKEY, ppd, 0, 0x7000, 1) &&
		       !pvo_mr_get(g.vm, 0xffffffff, ppd, 0, 0x7000, 1),
	       "wrong tag, key 0, the DMA key, a huge key");
	h.handle = htole32(mr);
	tap_is(fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &h, sizeof(h), NULL, 0), 0,
	       "DEREG_MR");
	mr2 = reg(pd, p, 2, 0x7000, 0x2000, PVO_ACCESS_LOCAL_WRITE, &key2,
		  &st);
	tap_ok(pvo_handle_index(mr2) == pvo_handle_index(mr) && key2 != key,
	       "a re-used slot gets another key");
	tap_ok(!pvo_mr_get(g.vm, key, ppd, 0, 0x7000, 1),
	       "the old key is dead");
	tap_is(fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &h, sizeof(h), NULL, 0),
	       PVO_STATUS_ENOENT, "the old handle too");

	reg(pd, p, 1, 0x7000, 0, 0, &key, &st);
	tap_is(st, PVO_STATUS_EINVAL, "zero length");
	reg(pd, p, 1, 0x7000, 0x1001, 0, &key, &st);
	tap_is(st, PVO_STATUS_EINVAL, "length needing 2 pages, 1 given");
	reg(pd, p, 2, 0x7000, 0x1000, 0, &key, &st);
	tap_is(st, PVO_STATUS_EINVAL, "2 pages given, 1 needed");
	reg(pd, p, 1, ~0ull - 10, 20, 0, &key, &st);
	tap_is(st, PVO_STATUS_EINVAL, "iova + length wraps");
	reg(pd, p, 1, 0, (1ull << 40) + 1, 0, &key, &st);
	tap_is(st, PVO_STATUS_EINVAL, "over max-mr-size");
	reg(0x777, p, 1, 0x7000, 0x1000, 0, &key, &st);
	tap_is(st, PVO_STATUS_ENOENT, "unknown PD");
	reg(pd, p, 1, 0x7000, 0x1000, 0x20, &key, &st);
	tap_is(st, PVO_STATUS_EINVAL, "unknown access bit (zero-based)");
	{
		uint64_t bad[1] = { FG_RAM_SIZE };

		reg(pd, bad, 1, 0x7000, 0x1000, 0, &key, &st);
		tap_is(st, PVO_STATUS_EFAULT, "page outside guest RAM");
	}
	reg(pd, p, 1, 0x7000, 0x1000, 0, &key, &st);
	reg(pd, p, 1, 0x7000, 0x1000, 0, &key, &st);
	tap_is(st, 0, "up to the quota (max-mr = 3)");
	reg(pd, p, 1, 0x7000, 0x1000, 0, &key, &st);
	tap_is(st, PVO_STATUS_ENOSPC, "quota -> ENOSPC");
}

/* Bytes of the cursor, read chunk by chunk (checks the chunk rules). */
static bool drain(struct pvo_dma *d, uint8_t *out, uint64_t *total,
		  int *chunks)
{
	uint64_t gpa, len;
	void *p;

	*total = 0;
	*chunks = 0;
	while ((p = pvo_dma_chunk(d, &gpa, &len))) {
		if (!len)
			return false;
		/* a chunk is one host range: across pages only where guest
		 * memory is contiguous */
		if (gpa && (p != fg_ptr(&g, gpa) ||
			    (uint8_t *)p + len - 1 != fg_ptr(&g, gpa + len - 1)))
			return false;
		memcpy(out + *total, p, len);
		*total += len;
		(*chunks)++;
		pvo_dma_advance(d, len);
	}
	return true;
}

static void test_dma(void)
{
	/* An MR of 4 pages in scrambled order, one in the second region */
	uint64_t p[4] = { 0x300000, FG_HALF + 0x5000, 0x301000, 0x200000 };
	struct pvo_pd *ppd = pvo_table_get(&g.vm->pds, pd2, 0);
	uint8_t expect[16384], got[16384];
	struct pvo_sge sges[4];
	struct pvo_dma d, h;
	uint32_t key, st;
	uint64_t total;
	int chunks, i;
	uint8_t host[100];

	reg(pd2, p, 4, 0x10000 + 0x100, 4 * 4096 - 0x200,
	    PVO_ACCESS_LOCAL_WRITE, &key, &st);
	tap_is(st, 0, "MR over scattered pages");
	for (i = 0; i < 4; i++) {
		uint8_t *page = fg_ptr(&g, p[i]);
		int k;

		for (k = 0; k < 4096; k++)
			page[k] = (uint8_t)(i * 31 + k);
	}
	/* SGEs: 5000 bytes from MR offset 0x50, an empty one, 10 from the
	 * last byte region, and guest-physical 300 bytes */
	sges[0] = (struct pvo_sge){ htole64(0x10150), htole32(5000),
				    htole32(key) };
	sges[1] = (struct pvo_sge){ htole64(0xdead), 0, htole32(0x999) };
	sges[2] = (struct pvo_sge){ htole64(0x10100 + 4 * 4096 - 0x200 - 10),
				    htole32(10), htole32(key) };
	sges[3] = (struct pvo_sge){ htole64(0x300f00), htole32(300),
				    htole32(PVO_LOCAL_DMA_LKEY) };
	pvo_dma_init(&d, g.vm);
	tap_is(pvo_dma_from_sges(&d, g.vm, ppd, true, PVO_ACCESS_LOCAL_WRITE,
				 sges, 4),
	       PVO_WC_SUCCESS, "SGEs resolve (empty SGE ignored, DMA key)");
	tap_ok(d.len == 5310 && d.n == 3, "3 ranges, 5310 bytes");
	/* expected bytes, from the page contents */
	{
		uint64_t off = 0x150 - 0x100 + 0x100;	/* offset in pages */
		uint32_t k = 0;

		for (i = 0; i < 5000; i++, off++)
			expect[k++] = (uint8_t)((off >> 12) * 31 + (off & 4095));
		off = 4 * 4096 - 0x100 - 10;
		for (i = 0; i < 10; i++, off++)
			expect[k++] = (uint8_t)((off >> 12) * 31 + (off & 4095));
		/* 0x300f00: 256 bytes of page 0, then page 2 (0x301000) */
		for (i = 0; i < 300; i++)
			expect[k++] = i < 256 ? (uint8_t)(0xf00 + i) :
						(uint8_t)(2 * 31 + i - 256);
	}
	tap_ok(drain(&d, got, &total, &chunks) && total == 5310 &&
		       memcmp(got, expect, 5310) == 0,
	       "chunks stop where guest memory stops being contiguous and "
	       "carry the right bytes");
	tap_ok(chunks == 2 + 1 + 1,
	       "chunks: 2 for 5000 bytes over two scattered MR pages, 1 for "
	       "10 bytes, 1 for 300 contiguous guest-physical bytes across a "
	       "page (%d)",
	       chunks);
	pvo_dma_seek(&d, 4999);
	tap_ok(drain(&d, got, &total, &chunks) && total == 311 &&
		       memcmp(got, expect + 4999, 311) == 0,
	       "seek into the middle");

	/* copies between cursors of different shapes */
	pvo_dma_init(&h, NULL);
	memset(host, 0, sizeof(host));
	pvo_dma_add(&h, PVO_DMA_HOST, NULL, 0, host, 40);
	pvo_dma_add(&h, PVO_DMA_HOST, NULL, 0, host + 40, 60);
	pvo_dma_seek(&d, 4090);
	tap_ok(pvo_dma_copy(&h, &d, 100) && memcmp(host, expect + 4090, 100) == 0,
	       "copy guest -> host across chunk ends");
	pvo_dma_seek(&h, 0);
	pvo_dma_seek(&d, 0);
	memset(host, 0xab, sizeof(host));
	tap_ok(pvo_dma_copy(&d, &h, 100) && *(uint8_t *)fg_ptr(&g, 0x300150) ==
							 0xab,
	       "copy host -> guest");
	pvo_dma_seek(&h, 50);
	tap_ok(!pvo_dma_copy(&d, &h, 51), "copy past the source's end fails");

	/* resolution failures */
	pvo_dma_init(&d, g.vm);
	tap_is(pvo_dma_from_sges(&d, g.vm, ppd, false, 0, &sges[3], 1),
	       PVO_WC_LOC_PROT_ERR, "DMA key not allowed (user QP)");
	sges[3].addr = htole64(FG_RAM_SIZE - 100);
	tap_is(pvo_dma_from_sges(&d, g.vm, ppd, true, 0, &sges[3], 1),
	       PVO_WC_LOC_PROT_ERR, "DMA key range leaving guest RAM");
	sges[0].length = htole32(4 * 4096);
	tap_is(pvo_dma_from_sges(&d, g.vm, ppd, true, 0, sges, 1),
	       PVO_WC_LOC_PROT_ERR, "SGE longer than its MR");
	sges[0].length = htole32(1);
	sges[0].lkey = htole32(key + 1);
	tap_is(pvo_dma_from_sges(&d, g.vm, ppd, true, 0, sges, 1),
	       PVO_WC_LOC_PROT_ERR, "unknown lkey");
	sges[0].lkey = htole32(key);
	pvo_dma_init(&d, g.vm);
	tap_is(pvo_dma_from_sges(&d, g.vm, ppd, true,
				 PVO_ACCESS_REMOTE_WRITE, sges, 1),
	       PVO_WC_LOC_PROT_ERR, "access the MR lacks");

	/* The memory table changes under a registered MR: chunks fail */
	g.vhost.vug.parent.nregions = 1;
	pvo_dma_init(&d, g.vm);
	pvo_dma_add(&d, PVO_DMA_PHYS, NULL, FG_HALF + 0x1000, NULL, 10);
	tap_ok(!pvo_dma_chunk(&d, &total, &total),
	       "a region that went away is no longer translated");
	g.vhost.vug.parent.nregions = 2;
}

/* Executes a command as the control queue does, counting its calls and
 * the most directory entries one of them walked. */
static uint32_t parts(uint16_t op, const void *body, size_t len, void *resp,
		      size_t resp_len, unsigned int *calls, uint64_t *walk)
{
	struct {
		struct pvo_cmd_hdr h;
		uint8_t body[256];
	} m = { .h = { .opcode = htole16(op) } };
	struct fg_reply r;
	uint64_t before;
	size_t got;

	memcpy(m.body, body, len);
	*calls = 0;
	*walk = 0;
	do {
		before = g.vm->gmem.pdir_pages;
		got = pvo_ctrl_execute(g.vm, &m, sizeof(m.h) + len, &r,
				       sizeof(r));
		*walk = MAX(*walk, g.vm->gmem.pdir_pages - before);
		++*calls;
	} while (got == PVO_CTRL_AGAIN && *calls < 100);
	if (resp)
		memcpy(resp, r.body, resp_len);
	return le32toh(r.h.status);
}

/* A REG_MR / REREG_MR of a long page list: a part of the directory per
 * call, answered with the last; nothing kept if it fails or another
 * command comes in between. */
static void test_sliced(void)
{
	const uint32_t per = PVO_MR_PAGES_PER_CALL, n = 3 * per + 100;
	uint64_t *gpas = g_new(uint64_t, n), a = fg_alloc(&g, 5), walk;
	uint64_t used0 = g.vm->host_mem.used, iova = 0x40000000, avail;
	struct pvo_cmd_reg_mr c = { .pd = htole32(pd),
				    .access = htole32(PVO_ACCESS_LOCAL_WRITE),
				    .iova = htole64(iova),
				    .length = htole64((uint64_t)n * 4096) };
	struct pvo_cmd_rereg_mr rc = { .flags = htole32(PVO_REREG_TRANS),
				       .iova = htole64(iova),
				       .length = htole64((uint64_t)n * 4096) };
	struct pvo_cmd_handle dh = { 0 };
	struct pvo_resp_reg_mr r;
	unsigned int calls, mrs0 = g.vm->mrs.count, i, bad = 0;
	struct pvo_mr *mr;
	uint32_t st;

	for (i = 0; i < n; i++)
		gpas[i] = a + (i & 1) * 8192ull;
	fg_pdir(&g, gpas, n, &c.pages);
	st = parts(PVO_CMD_REG_MR, &c, sizeof(c), &r, sizeof(r), &calls,
		   &walk);
	tap_ok(st == PVO_STATUS_OK && calls == 8,
	       "REG_MR of %u pages: answered on its 8th call, two passes of "
	       "4 parts (%u, status %u)",
	       n, calls, st);
	tap_ok(walk == per, "each call walked at most %u entries (%llu)", per,
	       (unsigned long long)walk);
	mr = pvo_table_get(&g.vm->mrs, le32toh(r.mr), 0);
	for (i = 0; mr && i < n; i += 997)
		bad += pvo_mr_gpa(mr, iova + (uint64_t)i * 4096, &avail) !=
		       gpas[i];
	tap_ok(mr && mr->pages.npages == n && mr->pages.nruns == n && !bad &&
		       pvo_mr_gpa(mr, iova + (n - 1) * 4096ull, &avail) ==
			       gpas[n - 1],
	       "its page list names every part's pages");
	tap_ok(mr && !g.vm->mr_build &&
		       g.vm->host_mem.used == used0 + mr->pages.charged,
	       "nothing held beyond the MR's list");
	dh.handle = r.mr;
	fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &dh, sizeof(dh), NULL, 0);

	/* another command between two parts: the REG_MR starts over */
	{
		struct {
			struct pvo_cmd_hdr h;
			struct pvo_cmd_reg_mr c;
		} m = { .h = { .opcode = htole16(PVO_CMD_REG_MR) }, .c = c };
		struct fg_reply fr;
		uint64_t used1 = g.vm->host_mem.used, mid;

		unsigned int again = 0;

		/* the 4 parts of the count and the first of the fill */
		for (i = 0; i < 5; i++)
			again += pvo_ctrl_execute(g.vm, &m, sizeof(m), &fr,
						  sizeof(fr)) == PVO_CTRL_AGAIN;
		tap_ok(again == 5 && g.vm->mr_build,
		       "a second one goes on into its second pass");
		mid = g.vm->host_mem.used;
		fg_cmd(&g, PVO_CMD_QUERY_DEVICE, 0, NULL, 0, NULL, 0);
		tap_ok(mid > used1 && g.vm->host_mem.used == used1 &&
			       !g.vm->mr_build,
		       "another command drops the part built (%llu bytes)",
		       (unsigned long long)(mid - used1));
	}
	st = parts(PVO_CMD_REG_MR, &c, sizeof(c), &r, sizeof(r), &calls,
		   &walk);
	tap_ok(st == PVO_STATUS_OK && calls == 8,
	       "sent again, it starts over: 8 calls (%u)", calls);
	dh.handle = r.mr;
	fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &dh, sizeof(dh), NULL, 0);

	/* the guest rewrites its directory between the two passes */
	{
		struct {
			struct pvo_cmd_hdr h;
			struct pvo_cmd_reg_mr c;
		} m = { .h = { .opcode = htole16(PVO_CMD_REG_MR) } };
		struct fg_reply fr;
		uint64_t *tbl;
		size_t got;

		for (i = 0; i < n; i++)
			gpas[i] = a + (i & 1) * 4096ull; /* n / 2 runs */
		fg_pdir(&g, gpas, n, &c.pages);
		m.c = c;
		for (i = 0; i < 4; i++)
			got = pvo_ctrl_execute(g.vm, &m, sizeof(m), &fr,
					       sizeof(fr));
		/* one page per run now: more runs than counted */
		tbl = fg_ptr(&g, le64toh(*(uint64_t *)fg_ptr(
				     &g, le64toh(c.pages.dir_gpa))));
		for (i = 1; i < 512; i += 2)
			tbl[i] = htole64(a + 4 * 4096ull);
		while (got == PVO_CTRL_AGAIN)
			got = pvo_ctrl_execute(g.vm, &m, sizeof(m), &fr,
					       sizeof(fr));
		tap_ok(le32toh(fr.h.status) == PVO_STATUS_EINVAL &&
			       !g.vm->mr_build &&
			       g.vm->host_mem.used == used0,
		       "a directory rewritten between the passes: EINVAL, "
		       "nothing kept (%u)",
		       le32toh(fr.h.status));
		for (i = 0; i < n; i++)
			gpas[i] = a + (i & 1) * 8192ull;
	}

	/* a page outside guest RAM in the third part */
	gpas[2 * per + 5] = FG_RAM_SIZE + 0x1000;
	fg_pdir(&g, gpas, n, &c.pages);
	st = parts(PVO_CMD_REG_MR, &c, sizeof(c), &r, sizeof(r), &calls,
		   &walk);
	tap_ok(st == PVO_STATUS_EFAULT && calls == 3 && !g.vm->mr_build,
	       "a bad entry in the third part: EFAULT on the third call "
	       "(%u, %u calls)",
	       st, calls);
	tap_ok(g.vm->host_mem.used == used0 && g.vm->mrs.count == mrs0,
	       "no MR, nothing charged (%llu bytes, %u MRs)",
	       (unsigned long long)(g.vm->host_mem.used - used0),
	       g.vm->mrs.count - mrs0);

	/* REREG_MR of a new translation goes the same way */
	gpas[2 * per + 5] = a;
	fg_pdir(&g, gpas, 200, &c.pages);
	c.length = htole64(200 * 4096);
	st = parts(PVO_CMD_REG_MR, &c, sizeof(c), &r, sizeof(r), &calls,
		   &walk);
	rc.mr = r.mr;
	fg_pdir(&g, gpas, n, &rc.pages);
	st = st ? st : parts(PVO_CMD_REREG_MR, &rc, sizeof(rc), &r, sizeof(r),
			     &calls, &walk);
	mr = pvo_table_get(&g.vm->mrs, le32toh(rc.mr), 0);
	tap_ok(st == PVO_STATUS_OK && calls == 8 && mr &&
		       mr->pages.npages == n && walk == per,
	       "REREG_MR to %u pages: 8 calls of at most %u entries (%u)", n,
	       per, st);
	dh.handle = rc.mr;
	fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &dh, sizeof(dh), NULL, 0);
	tap_ok(g.vm->host_mem.used == used0, "deregistered: all given back");
	g_free(gpas);
}

int main(void)
{
	static const char conf[] =
		"[tenant t]\nvni=5\n[vm g]\ntenant=t\n"
		"mac=52:54:00:ab:cd:ef\nsocket=/tmp/unused.sock\n"
		"max-mr=3\nmax-mr-size=1099511627776\n";
	struct pvo_resp_alloc_pd r;
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	tap_plan(80);
	cfg = pvo_config_parse("t", conf, &err);
	if (!cfg) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	fg_init(&g, &cfg->vms[0]);
	fg_cmd(&g, PVO_CMD_ALLOC_PD, 0, NULL, 0, &r, sizeof(r));
	pd = le32toh(r.pd);
	fg_cmd(&g, PVO_CMD_ALLOC_PD, 0, NULL, 0, &r, sizeof(r));
	pd2 = le32toh(r.pd);
	test_runs();
	test_runs_alternating();
	test_pure();
	test_keys();
	{
		struct pvo_cmd_handle h = { 0 };
		uint32_t hd = 0;
		void *obj;

		/* free the quota for test_dma */
		while ((hd = pvo_table_next(&g.vm->mrs, 0, &obj))) {
			h.handle = htole32(hd);
			fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &h, sizeof(h), NULL, 0);
		}
	}
	test_sliced();
	test_dma();
	fg_fini(&g);
	pvo_config_free(cfg);
	return tap_done();
}
