// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-datapath: malformed objects and commands (rings, page directories,
 * CREATE_* bodies) are refused.
 */
#include "t-datapath.h"

/* ------------------------------------------------------------------ */
/* malformed objects and commands                                     */

/* A CREATE_CQ body for @entries with a valid ring the caller may spoil. */
static int cq_cmd(struct sim_ring *r, uint32_t entries, uint32_t ring_entries,
		  struct pvo_cmd_create_cq *c)
{
	memset(c, 0, sizeof(*c));
	if (sim_ring_alloc(r, sim_vm_ram(A.vm), ring_entries, 6,
			   SIM_LAYOUT_SCATTER) < 0)
		return -1;
	c->entries = htole32(entries);
	c->ring = r->pages.pdir;
	return 0;
}

static void try_cq(const char *what, int want, uint32_t entries,
		   void (*spoil)(struct sim_ring *, struct pvo_cmd_create_cq *))
{
	struct pvo_cmd_create_cq c;
	struct sim_ring r;
	uint32_t h = 0;
	int st;

	if (cq_cmd(&r, entries,
		   entries && !(entries & (entries - 1)) && entries <= 4096
		       ? entries
		       : 64,
		   &c) < 0) {
		tap_ok(false, "%s: guest RAM for the ring", what);
		return;
	}
	if (spoil)
		spoil(&r, &c);
	st = pvo_create_cq(A.vm->fe, A.ctx.handle, &c, &h);
	if (want >= 0)
		TAP_STATUS(st, want, "CREATE_CQ %s", what);
	else
		tap_ok(st > PVO_STATUS_OK, "CREATE_CQ %s is refused (%s)", what,
		       pvo_status_name(st));
	if (st == PVO_STATUS_OK)
		pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_CQ, A.ctx.handle, h);
	sim_ring_free(&r);
}

static uint64_t ram_end;

static void spoil_no_events(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->flags = htole32(PVO_CQ_F_NO_EVENTS);
}

static void spoil_unknown_flag(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->flags = htole32(PVO_CQ_F_NO_EVENTS | 0x80000000u);
}

static void spoil_dir_outside(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.dir_gpa = htole64(ram_end);
}

static void spoil_dir_unaligned(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.dir_gpa = htole64(le64toh(c->ring.dir_gpa) + 8);
}

static __le64 *table0(struct sim_ring *r)
{
	return guest_ram_ptr(r->pages.ram, r->pages.pdir_mem.tables_gpa,
			     PVO_PAGE_SIZE);
}

static void spoil_page_outside(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)c;
	table0(r)[1] = htole64(ram_end + 0x10000);
}

static void spoil_page_straddles_end(struct sim_ring *r,
				     struct pvo_cmd_create_cq *c)
{
	(void)c;
	table0(r)[1] = htole64(ram_end - PVO_PAGE_SIZE / 2);
}

static void spoil_page_unaligned(struct sim_ring *r,
				 struct pvo_cmd_create_cq *c)
{
	(void)c;
	table0(r)[0] = htole64(le64toh(table0(r)[0]) + 64);
}

static void spoil_table_outside(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	__le64 *dir = guest_ram_ptr(r->pages.ram, r->pages.pdir_mem.dir_gpa,
				    PVO_PAGE_SIZE);

	(void)c;
	dir[0] = htole64(0xfff0000000000000ull);
}

static void spoil_too_few_pages(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = htole32(le32toh(c->ring.npages) - 1);
}

static void spoil_header_only(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = htole32(1);
}

static void spoil_zero_pages(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = 0;
}

static void spoil_huge_pages(struct sim_ring *r, struct pvo_cmd_create_cq *c)
{
	(void)r;
	c->ring.npages = htole32(PVO_PDIR_MAX_PAGES + 1);
}

/* ------------------------------------------------------------------ */
/* MRs over 1 GiB: directories of several pages (pvo_pdir.dir_pages)  */

#define GIB (1024ull * MIB)

/* REG_MR on b of [iova, iova + length), remote write allowed. */
static int big_reg(uint64_t iova, uint64_t length, const struct pvo_pdir *pd,
		   uint32_t *h, uint32_t *key)
{
	struct pvo_cmd_reg_mr mc;

	memset(&mc, 0, sizeof(mc));
	mc.pd = htole32(B.pd.handle);
	mc.access = htole32(PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE);
	mc.iova = htole64(iova);
	mc.length = htole64(length);
	mc.pages = *pd;
	return pvo_reg_mr(B.vm->fe, B.ctx.handle, &mc, h, key);
}

/*
 * RDMA WRITE of @len bytes from a to byte @off of an MR on b at @iova,
 * whose page list names real page 0 everywhere except at the two pages
 * the bytes fall into (real pages 1 and 2). @page_off: iova % 4096. The
 * bytes must be in pages 1 and 2 at the right place, and every other byte
 * of the three pages untouched.
 */
static void big_write(const char *what, uint64_t iova, uint32_t key,
		      uint64_t off, uint32_t len, struct sim_pages *real,
		      uint32_t page_off)
{
	uint32_t in = (uint32_t)((page_off + off) % PVO_PAGE_SIZE);
	uint8_t want[2 * PVO_PAGE_SIZE];
	struct sim_wr w = write_wr(0xb16, 0, len, iova + off, key);
	struct pair p;
	uint32_t i, bad = 0, first = 0;

	if (in + len > sizeof(want) || in + len <= PVO_PAGE_SIZE)
		tap_bail("%s: the write must span exactly two pages", what);
	for (i = 0; i < 3; i++)
		memset(real->hva[i], GUARD_BYTE, PVO_PAGE_SIZE);
	fill_pattern(&A.buf, 0, len, 0xb16b16);
	memset(want, GUARD_BYTE, sizeof(want));
	sim_buf_read(&A.buf, 0, want + in, len);
	if (!pair_make(&p, PVO_QPT_RC, NULL, NULL))
		return;
	post1(&p.a, &w);
	expect_cqe(&A.scq, w.wr_id, PVO_WC_RDMA_WRITE, PVO_WC_SUCCESS, what);
	for (i = 0; i < 3 * PVO_PAGE_SIZE; i++) {
		uint8_t got = real->hva[i / PVO_PAGE_SIZE][i % PVO_PAGE_SIZE];
		uint8_t exp = i < PVO_PAGE_SIZE ? GUARD_BYTE
						: want[i - PVO_PAGE_SIZE];

		if (got != exp && !bad++)
			first = i;
	}
	if (!tap_ok(bad == 0,
		    "%s: the bytes are at offset %u of the two pages the list "
		    "names there, no other byte changed",
		    what, in))
		tap_diag("%u bytes differ, the first at byte %u of page %u",
			 bad, first % PVO_PAGE_SIZE, first / PVO_PAGE_SIZE);
	pair_destroy(&p);
}

/* REG_MR of the 1.5 GiB list of @pd with its directory moved to @dir_gpa
 * (a copy of @pm's two pages; 0: where it is) and dir_pages @dp. */
static void big_bad_dir(const char *what, int want, const struct pvo_pdir *pd,
			const struct sim_pdir_mem *pm, uint64_t dir_gpa,
			uint32_t dp, uint64_t iova, uint64_t len)
{
	struct guest_ram *ram = sim_vm_ram(B.vm);
	struct pvo_pdir bad = *pd;
	uint32_t h, key;
	int st;

	if (dir_gpa) {
		uint8_t *from = guest_ram_ptr(
		    ram, pm->dir_gpa, (uint64_t)pm->dir_pages * PVO_PAGE_SIZE);
		uint64_t n = (uint64_t)pm->dir_pages * PVO_PAGE_SIZE;

		if (n > ram->size - dir_gpa)
			n = ram->size - dir_gpa;

		/* as much of it as fits in RAM */
		if (guest_ram_write(ram, dir_gpa, from, n) < 0)
			tap_bail("%s: copying the directory", what);
		bad.dir_gpa = htole64(dir_gpa);
	}
	bad.dir_pages = htole32(dp);
	st = big_reg(iova, len, &bad, &h, &key);
	TAP_STATUS(st, want, "REG_MR %s", what);
	if (st == PVO_STATUS_OK)
		pvo_destroy(B.vm->fe, PVO_CMD_DEREG_MR, B.ctx.handle, h);
}

static void test_big_mrs(void)
{
	const uint64_t len15 = 3 * GIB / 2, len4 = 4 * GIB;
	const uint32_t n15 = (uint32_t)(len15 / PVO_PAGE_SIZE) + 1, n4 =
	    (uint32_t)(len4 / PVO_PAGE_SIZE);
	struct guest_ram *ram = sim_vm_ram(B.vm);
	uint64_t max = le64toh(B.vm->dev.max_mr_size);
	uint64_t bound = guest_ram_boundary(ram), va, end = ram->size;
	struct sim_pdir_mem pm;
	struct pvo_pdir pd;
	struct sim_pages real;
	uint32_t h, key, k, i;
	uint64_t *gpas;
	int st;

	tap_ok(max == 4 * GIB && le64toh(A.vm->dev.max_mr_size) == 4 * GIB,
	       "QUERY_DEVICE: max_mr_size is 4 GiB with the default "
	       "max-mr-size (got %llu)",
	       (unsigned long long)max);
	tap_ok(n4 == PVO_PDIR_MAX_PAGES, "PVO_PDIR_MAX_PAGES is 4 GiB of pages");
	gpas = malloc((size_t)n4 * sizeof(*gpas));
	if (!gpas || sim_pages_alloc(&real, ram, 3, SIM_LAYOUT_SCATTER) < 0)
		tap_bail("no memory for the big MRs");
	for (i = 0; i < n4; i++)
		gpas[i] = real.gpa[0];

	/* 1.5 GiB from page offset 100: MR byte 1 GiB + 5 KiB is in page
	 * 2^18 + 1, the first page of table 512, named by the second
	 * directory page. */
	k = (uint32_t)((100 + GIB + 5 * KIB) / PVO_PAGE_SIZE);
	gpas[k] = real.gpa[1];
	gpas[k + 1] = real.gpa[2];
	if (sim_pdir_build(ram, gpas, n15, &pd, &pm) < 0)
		tap_bail("no guest RAM on b for a 1.5 GiB page list");
	tap_ok(le32toh(pd.dir_pages) == 2 && pm.ntables == 769,
	       "a list of 2^18 * 1.5 + 1 pages has 769 tables, 2 directory "
	       "pages (%u, %u)",
	       pm.ntables, le32toh(pd.dir_pages));
	va = sim_vm_va(B.vm, 100 + len15) + 100;
	st = big_reg(va, len15, &pd, &h, &key);
	if (TAP_STATUS(st, PVO_STATUS_OK,
		       "REG_MR of 1.5 GiB at page offset 100 (repeating "
		       "GPAs)")) {
		big_write("RDMA WRITE of 6000 bytes at byte 1 GiB + 5 KiB of a "
			  "1.5 GiB MR",
			  va, key, GIB + 5 * KIB, 6000, &real, 100);
		pvo_destroy(B.vm->fe, PVO_CMD_DEREG_MR, B.ctx.handle, h);
	} else {
		tap_diag("%s", B.vm->err);
	}
	big_bad_dir("of 1.5 GiB with dir_pages 1 (769 tables) -> EINVAL",
		    PVO_STATUS_EINVAL, &pd, &pm, 0, 1, va, len15);
	big_bad_dir("of 1.5 GiB with dir_pages 0 (means 1) -> EINVAL",
		    PVO_STATUS_EINVAL, &pd, &pm, 0, 0, va, len15);
	big_bad_dir("of 1.5 GiB with dir_pages 3 -> EINVAL", PVO_STATUS_EINVAL,
		    &pd, &pm, 0, 3, va, len15);
	big_bad_dir("of 1.5 GiB with dir_pages 5 -> EINVAL", PVO_STATUS_EINVAL,
		    &pd, &pm, 0, 5, va, len15);
	big_bad_dir("of 1.5 GiB with dir_pages 2^32 - 1 -> EINVAL",
		    PVO_STATUS_EINVAL, &pd, &pm, 0, UINT32_MAX, va, len15);
	if (guest_ram_reserve(ram, end - PVO_PAGE_SIZE, PVO_PAGE_SIZE) == 0) {
		big_bad_dir("with a 2-page directory in the last page of "
			    "guest RAM -> EFAULT",
			    PVO_STATUS_EFAULT, &pd, &pm, end - PVO_PAGE_SIZE, 2,
			    va, len15);
		guest_ram_free(ram, end - PVO_PAGE_SIZE);
	} else {
		tap_ok(false, "the last page of b's RAM is free");
	}
	if (bound &&
	    guest_ram_reserve(ram, bound - PVO_PAGE_SIZE, 2 * PVO_PAGE_SIZE) ==
		0) {
		big_bad_dir("with a 2-page directory across two RAM regions "
			    "-> EFAULT",
			    PVO_STATUS_EFAULT, &pd, &pm, bound - PVO_PAGE_SIZE,
			    2, va, len15);
		guest_ram_free(ram, bound - PVO_PAGE_SIZE);
	} else {
		tap_ok(false, "two free pages around b's RAM region boundary");
	}
	sim_pdir_free(ram, &pm);

	/* 4 GiB, the most one list describes: the last two pages are at
	 * the end of table 2047, the end of the fourth directory page. */
	gpas[k] = gpas[k + 1] = real.gpa[0];
	k = n4 - 2;
	gpas[k] = real.gpa[1];
	gpas[k + 1] = real.gpa[2];
	if (sim_pdir_build(ram, gpas, n4, &pd, &pm) < 0)
		tap_bail("no guest RAM on b for a 4 GiB page list");
	tap_ok(le32toh(pd.dir_pages) == PVO_PDIR_MAX_DIR_PAGES,
	       "a list of 2^20 pages has 4 directory pages (%u)",
	       le32toh(pd.dir_pages));
	va = sim_vm_va(B.vm, len4);
	st = big_reg(va, len4, &pd, &h, &key);
	if (TAP_STATUS(st, PVO_STATUS_OK,
		       "REG_MR of 4 GiB = max_mr_size (2048 tables)")) {
		big_write("RDMA WRITE of the last 5000 bytes of a 4 GiB MR", va,
			  key, len4 - 5000, 5000, &real, 0);
		pvo_destroy(B.vm->fe, PVO_CMD_DEREG_MR, B.ctx.handle, h);
	} else {
		tap_diag("%s", B.vm->err);
	}
	big_bad_dir("of 4 GiB with dir_pages 5 -> EINVAL", PVO_STATUS_EINVAL,
		    &pd, &pm, 0, 5, va, len4);
	big_bad_dir("of 4 GiB with dir_pages 3 -> EINVAL", PVO_STATUS_EINVAL,
		    &pd, &pm, 0, 3, va, len4);
	big_bad_dir("of max_mr_size + 4096 -> EINVAL", PVO_STATUS_EINVAL, &pd,
		    &pm, 0, 4, va, max + PVO_PAGE_SIZE);
	sim_pdir_free(ram, &pm);

	/* a one-table list: dir_pages 0 and 1 name it, 2 does not */
	if (sim_pdir_build(ram, real.gpa, 3, &pd, &pm) < 0)
		tap_bail("no guest RAM on b");
	va = sim_vm_va(B.vm, 3 * PVO_PAGE_SIZE);
	big_bad_dir("of 3 pages with dir_pages 0 (valid)", PVO_STATUS_OK, &pd,
		    &pm, 0, 0, va, 3 * PVO_PAGE_SIZE);
	big_bad_dir("of 3 pages with dir_pages 1 (valid)", PVO_STATUS_OK, &pd,
		    &pm, 0, 1, va, 3 * PVO_PAGE_SIZE);
	big_bad_dir("of 3 pages with dir_pages 2 -> EINVAL", PVO_STATUS_EINVAL,
		    &pd, &pm, 0, 2, va, 3 * PVO_PAGE_SIZE);
	sim_pdir_free(ram, &pm);
	sim_pages_free(&real);
	free(gpas);
}

static struct sim_ctx ctx2; /* a second context of VM a */
struct sim_pd pd2;
struct sim_cq cq2;

/* ctx2 / pd2 / cq2, made once for the sections that need them. */
bool ensure_ctx2(void)
{
	int st;

	if (ctx2.vm)
		return true;
	st = sim_ctx_open(A.vm, &ctx2);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&ctx2, &pd2);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&ctx2, 16, &cq2);
	if (!TAP_STATUS(st, PVO_STATUS_OK,
			"a second context of VM a with a PD and a CQ")) {
		tap_diag("%s", A.vm->err);
		return false;
	}
	return true;
}

void test_malformed(void)
{
	struct sim_qp_init in = qp_init(&A, PVO_QPT_RC);
	struct pvo_cmd_create_qp qc;
	struct pvo_cmd_reg_mr mc;
	struct pvo_cmd_create_srq sc;
	struct pvo_cmd_create_ah ac;
	struct pvo_qp_attr attr;
	struct sim_qp qp, gsi;
	struct sim_srq srq;
	struct sim_ring r1, r2;
	uint32_t h, h2, key;
	int st;

	ram_end = sim_vm_ram(A.vm)->size;
	if (!ensure_ctx2())
		return;

	/* CQ rings */
	try_cq("of 64 entries (valid)", PVO_STATUS_OK, 64, NULL);
	try_cq("of 1 entry (valid)", PVO_STATUS_OK, 1, NULL);
	try_cq("with NO_EVENTS (valid)", PVO_STATUS_OK, 64, spoil_no_events);
	try_cq("with an unknown flag", PVO_STATUS_EINVAL, 64,
	       spoil_unknown_flag);
	try_cq("of 0 entries", PVO_STATUS_EINVAL, 0, NULL);
	try_cq("of 48 entries (not a power of two)", PVO_STATUS_EINVAL, 48,
	       NULL);
	try_cq("of 131072 entries (> max_cqe)", PVO_STATUS_EINVAL, 131072,
	       NULL);
	try_cq("with its directory outside guest RAM", PVO_STATUS_EFAULT, 64,
	       spoil_dir_outside);
	try_cq("with an unaligned directory address", -1, 64,
	       spoil_dir_unaligned);
	try_cq("with a table page at 2^64 - 2^52", PVO_STATUS_EFAULT, 64,
	       spoil_table_outside);
	try_cq("with a ring page outside guest RAM", PVO_STATUS_EFAULT, 64,
	       spoil_page_outside);
	try_cq("with a ring page straddling the end of RAM", -1, 64,
	       spoil_page_straddles_end);
	try_cq("with an unaligned header page", -1, 64, spoil_page_unaligned);
	try_cq("with one page too few", PVO_STATUS_EINVAL, 256,
	       spoil_too_few_pages);
	try_cq("with only the header page", PVO_STATUS_EINVAL, 64,
	       spoil_header_only);
	try_cq("with 0 pages", PVO_STATUS_EINVAL, 64, spoil_zero_pages);
	try_cq("with PVO_PDIR_MAX_PAGES + 1 pages", PVO_STATUS_EINVAL, 64,
	       spoil_huge_pages);

	/* MRs */
	{
		struct sim_buf b;
		struct sim_pdir_mem pm;

		if (sim_buf_alloc(&b, sim_vm_ram(A.vm),
				  sim_vm_va(A.vm, 3 * PVO_PAGE_SIZE),
				  2 * PVO_PAGE_SIZE, 100, SIM_LAYOUT_SCATTER))
			tap_bail("no guest RAM");
		memset(&mc, 0, sizeof(mc));
		mc.pd = htole32(A.pd.handle);
		mc.access = htole32(PVO_ACCESS_LOCAL_WRITE);
		mc.iova = htole64(b.va);
		mc.length = htole64(2 * PVO_PAGE_SIZE);
		sim_pdir_build(sim_vm_ram(A.vm), b.pages.gpa, 3, &mc.pages,
			       &pm);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_OK,
			   "REG_MR of 8 KiB at page offset 100 over 3 pages");
		if (st == PVO_STATUS_OK)
			pvo_destroy(A.vm->fe, PVO_CMD_DEREG_MR, A.ctx.handle,
				    h);
		mc.pages.npages = htole32(2);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR with a page list too short for iova + "
			   "length -> EINVAL");
		mc.pages.npages = htole32(3);
		mc.pd = htole32(pd2.handle);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "REG_MR on another context's PD -> ENOENT");
		mc.pd = htole32(A.pd.handle);
		mc.access = htole32(PVO_ACCESS_REMOTE_WRITE);
		mc.length = htole64(2 * PVO_PAGE_SIZE);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR with REMOTE_WRITE but not LOCAL_WRITE -> "
			   "EINVAL");
		mc.access = htole32(PVO_ACCESS_LOCAL_WRITE | (1u << 20));
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR with an unknown access bit -> EINVAL");
		mc.access = htole32(PVO_ACCESS_LOCAL_WRITE);
		guest_ram_write(sim_vm_ram(A.vm), pm.tables_gpa + 8,
				&(__le64){htole64(ram_end)}, 8);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EFAULT,
			   "REG_MR with a page outside guest RAM -> EFAULT");
		mc.length = htole64(~0ull - 4096);
		st = pvo_reg_mr(A.vm->fe, A.ctx.handle, &mc, &h, &key);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "REG_MR whose iova + length wraps -> EINVAL");
		sim_pdir_free(sim_vm_ram(A.vm), &pm);
		sim_buf_free(&b);
	}
	test_big_mrs();

	/* QPs */
	st = sim_create_qp(&A.pd, &in, &qp);
	TAP_STATUS(st, PVO_STATUS_OK, "CREATE_QP (valid)");
	memset(&qc, 0, sizeof(qc));
	if (sim_ring_alloc(&r1, sim_vm_ram(A.vm), 64, pvo_send_wqe_shift(4, 64),
			   SIM_LAYOUT_SCATTER) ||
	    sim_ring_alloc(&r2, sim_vm_ram(A.vm), 64, pvo_recv_wqe_shift(4),
			   SIM_LAYOUT_SCATTER))
		tap_bail("no guest RAM");
#define QC_RESET()                                                             \
	do {                                                                   \
		memset(&qc, 0, sizeof(qc));                                    \
		qc.pd = htole32(A.pd.handle);                                  \
		qc.send_cq = htole32(A.scq.handle);                            \
		qc.recv_cq = htole32(A.rcq.handle);                            \
		qc.qp_type = PVO_QPT_RC;                                       \
		qc.sq_wqe_shift = pvo_send_wqe_shift(4, 64);                   \
		qc.rq_wqe_shift = pvo_recv_wqe_shift(4);                       \
		qc.sq_entries = htole32(64);                                   \
		qc.rq_entries = htole32(64);                                   \
		qc.max_send_sge = htole32(4);                                  \
		qc.max_recv_sge = htole32(4);                                  \
		qc.max_inline_data = htole32(64);                              \
		qc.sq = r1.pages.pdir;                                         \
		qc.rq = r2.pages.pdir;                                         \
	} while (0)
#define QC_TRY(want, what)                                                     \
	do {                                                                   \
		st = pvo_create_qp(A.vm->fe, A.ctx.handle, &qc, &h, &h2, NULL);      \
		if ((want) >= 0)                                               \
			TAP_STATUS(st, (want), "CREATE_QP %s", what);          \
		else                                                           \
			tap_ok(st > PVO_STATUS_OK,                             \
			       "CREATE_QP %s is refused (%s)", what,           \
			       pvo_status_name(st));                           \
		if (st == PVO_STATUS_OK)                                       \
			pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_QP,              \
				    A.ctx.handle, h);                          \
	} while (0)
	QC_RESET();
	QC_TRY(PVO_STATUS_OK, "from a hand-made body (valid)");
	QC_RESET();
	qc.pd = htole32(pd2.handle);
	QC_TRY(PVO_STATUS_ENOENT, "on another context's PD");
	QC_RESET();
	qc.send_cq = htole32(cq2.handle);
	QC_TRY(PVO_STATUS_ENOENT, "with another context's send CQ");
	QC_RESET();
	qc.recv_cq = htole32(B.rcq.handle ^ 0x55500000);
	QC_TRY(PVO_STATUS_ENOENT, "with a made-up receive CQ handle");
	QC_RESET();
	qc.srq = htole32(0x12345);
	qc.rq_entries = 0;
	qc.rq.npages = 0;
	QC_TRY(PVO_STATUS_ENOENT, "with a made-up SRQ handle");
	QC_RESET();
	qc.sq_wqe_shift++;
	QC_TRY(PVO_STATUS_EINVAL, "with the wrong sq_wqe_shift");
	QC_RESET();
	qc.rq_wqe_shift--;
	QC_TRY(PVO_STATUS_EINVAL, "with the wrong rq_wqe_shift");
	QC_RESET();
	qc.sq_entries = htole32(48);
	QC_TRY(PVO_STATUS_EINVAL, "with 48 SQ entries");
	QC_RESET();
	qc.rq_entries = htole32(0);
	QC_TRY(PVO_STATUS_EINVAL, "with an RQ page list but 0 entries");
	QC_RESET();
	qc.sq_entries = htole32(32768);
	QC_TRY(PVO_STATUS_EINVAL, "with 32768 SQ entries (> max_qp_wr)");
	QC_RESET();
	qc.max_send_sge = htole32(17);
	qc.sq_wqe_shift = pvo_send_wqe_shift(17, 64);
	QC_TRY(PVO_STATUS_EINVAL, "with 17 send SGEs");
	QC_RESET();
	qc.max_recv_sge = htole32(17);
	qc.rq_wqe_shift = pvo_recv_wqe_shift(17);
	QC_TRY(PVO_STATUS_EINVAL, "with 17 receive SGEs");
	QC_RESET();
	qc.max_inline_data = htole32(257);
	qc.sq_wqe_shift = pvo_send_wqe_shift(4, 257);
	QC_TRY(PVO_STATUS_EINVAL, "with 257 bytes of inline data");
	QC_RESET();
	qc.qp_type = 9;
	QC_TRY(PVO_STATUS_EINVAL, "of type 9");
	QC_RESET();
	qc.qp_type = 0;
	QC_TRY(PVO_STATUS_EINVAL, "of type 0");
	QC_RESET();
	qc.sq.npages = htole32(1);
	QC_TRY(PVO_STATUS_EINVAL, "with an SQ of only its header page");
	QC_RESET();
	qc.rq.dir_gpa = htole64(ram_end + 0x1000);
	QC_TRY(PVO_STATUS_EFAULT, "with the RQ directory outside guest RAM");
	QC_RESET();
	qc.qp_type = PVO_QPT_GSI;
	QC_TRY(-1, "of type GSI from a user context");
	QC_RESET();
	qc.send_cq = 0;
	QC_TRY(PVO_STATUS_ENOENT, "without a send CQ");
	sim_ring_free(&r1);
	sim_ring_free(&r2);

	/* GSI belongs to the kernel: QPN 1, once */
	{
		struct sim_pd kpd;
		struct sim_cq kcq;
		struct sim_qp_init gi = {
		    .type = PVO_QPT_GSI,
		    .sq_entries = 64,
		    .rq_entries = 64,
		    .max_send_sge = 2,
		    .max_recv_sge = 2,
		};

		st = sim_alloc_pd(&A.vm->kctx, &kpd);
		if (st == PVO_STATUS_OK)
			st = sim_create_cq(&A.vm->kctx, 64, &kcq);
		if (TAP_STATUS(st, PVO_STATUS_OK, "kernel PD and CQ")) {
			gi.send_cq = gi.recv_cq = &kcq;
			st = sim_create_qp(&kpd, &gi, &gsi);
			tap_ok(st == PVO_STATUS_OK && gsi.qpn == 1,
			       "the kernel's GSI QP gets QPN 1 (%s, qpn %u)",
			       pvo_status_name(st), gsi.qpn);
			if (st == PVO_STATUS_OK) {
				struct sim_qp g2;

				st = sim_create_qp(&kpd, &gi, &g2);
				tap_ok(st > PVO_STATUS_OK,
				       "a second GSI QP is refused (%s)",
				       pvo_status_name(st));
				if (st == PVO_STATUS_OK)
					sim_destroy_qp(&g2);
				sim_destroy_qp(&gsi);
			}
			sim_destroy_cq(&kcq);
			sim_dealloc_pd(&kpd);
		} else {
			tap_diag("%s", A.vm->err);
		}
	}

	/* state transitions out of order */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = htole32(PVO_QPS_RTS);
	st = sim_modify_qp(&qp, PVO_QP_STATE | PVO_QP_SQ_PSN, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP RESET -> RTS -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_RTR);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP RESET -> RTR -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_INIT);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "MODIFY_QP RESET -> INIT without PKEY_INDEX / PORT / "
		   "ACCESS_FLAGS -> EINVAL");
	attr.qp_state = htole32(7);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP to state 7 -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_INIT);
	attr.port_num = 1;
	st = sim_modify_qp(&qp,
			   PVO_QP_STATE | PVO_QP_PKEY_INDEX | PVO_QP_PORT |
			       PVO_QP_ACCESS_FLAGS,
			   &attr);
	TAP_STATUS(st, PVO_STATUS_OK, "MODIFY_QP RESET -> INIT");
	attr.port_num = 2;
	attr.qp_state = htole32(PVO_QPS_INIT);
	st = sim_modify_qp(&qp, PVO_QP_STATE | PVO_QP_PORT, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP to port 2 -> EINVAL");
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = htole32(PVO_QPS_RTS);
	st = sim_modify_qp(&qp, PVO_QP_STATE, &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "MODIFY_QP INIT -> RTS -> EINVAL");
	attr.qp_state = htole32(PVO_QPS_RTR);
	st = sim_modify_qp(&qp, PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU,
			   &attr);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "MODIFY_QP INIT -> RTR (RC) without DEST_QPN / RQ_PSN / "
		   "MAX_DEST_RD_ATOMIC / MIN_RNR_TIMER -> EINVAL");
	{
		struct sim_peer peer;

		sim_qp_peer(&qp, pair_gid(), &peer);
		sim_av_to(&attr.av, &peer, 13);
		attr.path_mtu = htole32(A.vm->port.active_mtu);
		attr.dest_qp_num = htole32(peer.qpn);
		st = sim_modify_qp(&qp,
				   PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
				       PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
				       PVO_QP_MAX_DEST_RD_ATOMIC |
				       PVO_QP_MIN_RNR_TIMER,
				   &attr);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "MODIFY_QP to RTR with an empty source GID slot "
			   "-> EINVAL");
		attr.av.sgid_index = pair_gid();
		attr.path_mtu = htole32(9);
		st = sim_modify_qp(&qp,
				   PVO_QP_STATE | PVO_QP_AV | PVO_QP_PATH_MTU |
				       PVO_QP_DEST_QPN | PVO_QP_RQ_PSN |
				       PVO_QP_MAX_DEST_RD_ATOMIC |
				       PVO_QP_MIN_RNR_TIMER,
				   &attr);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "MODIFY_QP to RTR with path MTU enum 9 -> EINVAL");
	}
	tap_ok(qp_state(&qp) == PVO_QPS_INIT,
	       "failed modifies left the QP in INIT (%s)",
	       sim_qp_state_name(qp_state(&qp)));
	{
		struct pvo_cmd_modify_qp mq = {0};

		mq.qp = htole32(qp.handle);
		mq.attr_mask = htole32(PVO_QP_STATE);
		mq.attr.qp_state = htole32(PVO_QPS_ERR);
		st = pvo_modify_qp(A.vm->fe, ctx2.handle, &mq);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "MODIFY_QP of another context's QP -> ENOENT");
		st = pvo_query_qp(A.vm->fe, ctx2.handle, qp.handle, &attr);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "QUERY_QP of another context's QP -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_QP, ctx2.handle,
				 qp.handle);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_QP of another context's QP -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DEREG_MR, ctx2.handle,
				 A.mr.handle);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DEREG_MR of another context's MR -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_CQ, ctx2.handle,
				 A.scq.handle);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_CQ of another context's CQ -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_CQ, A.ctx.handle,
				 A.scq.handle);
		TAP_STATUS(st, PVO_STATUS_EBUSY,
			   "DESTROY_CQ while a QP uses it -> EBUSY");
	}
	sim_destroy_qp(&qp);

	/* SRQs */
	st = sim_create_srq(&A.pd, 48, 4, 0, &srq);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "CREATE_SRQ of 48 entries -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_destroy_srq(&srq);
	st = sim_create_srq(&A.pd, 64, 17, 0, &srq);
	TAP_STATUS(st, PVO_STATUS_EINVAL, "CREATE_SRQ with 17 SGEs -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_destroy_srq(&srq);
	st = sim_create_srq(&A.pd, 32768, 1, 0, &srq);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "CREATE_SRQ of 32768 entries (> max_srq_wr + 1) -> EINVAL");
	if (st == PVO_STATUS_OK)
		sim_destroy_srq(&srq);
	if (sim_ring_alloc(&r1, sim_vm_ram(A.vm), 64, pvo_recv_wqe_shift(4),
			   SIM_LAYOUT_SCATTER) == 0) {
		memset(&sc, 0, sizeof(sc));
		sc.pd = htole32(A.pd.handle);
		sc.entries = htole32(64);
		sc.max_sge = htole32(4);
		sc.wqe_shift = pvo_recv_wqe_shift(4) + 1;
		sc.ring = r1.pages.pdir;
		st = pvo_create_srq(A.vm->fe, A.ctx.handle, &sc, &h, NULL);
		TAP_STATUS(st, PVO_STATUS_EINVAL,
			   "CREATE_SRQ with the wrong wqe_shift -> EINVAL");
		sc.wqe_shift--;
		sc.pd = htole32(pd2.handle);
		st = pvo_create_srq(A.vm->fe, A.ctx.handle, &sc, &h, NULL);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "CREATE_SRQ on another context's PD -> ENOENT");
		sim_ring_free(&r1);
	}

	/* AHs */
	memset(&ac, 0, sizeof(ac));
	ac.pd = htole32(A.pd.handle);
	memcpy(ac.av.dgid, B.vm->gid[pair_gid()], 16);
	memcpy(ac.av.dmac, B.vm->mac, 6);
	ac.av.sgid_index = 12;
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "CREATE_AH from an empty source GID slot -> EINVAL");
	ac.av.sgid_index = 200;
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	TAP_STATUS(st, PVO_STATUS_EINVAL,
		   "CREATE_AH from GID index 200 -> EINVAL");
	ac.av.sgid_index = pair_gid();
	ac.pd = htole32(pd2.handle);
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	TAP_STATUS(st, PVO_STATUS_ENOENT,
		   "CREATE_AH on another context's PD -> ENOENT");
	ac.pd = htole32(A.pd.handle);
	st = pvo_create_ah(A.vm->fe, A.ctx.handle, &ac, &h);
	if (TAP_STATUS(st, PVO_STATUS_OK, "CREATE_AH (valid)")) {
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH, ctx2.handle, h);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_AH of another context's AH -> ENOENT");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH, A.ctx.handle, h);
		TAP_STATUS(st, PVO_STATUS_OK, "DESTROY_AH");
		st = pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH, A.ctx.handle, h);
		TAP_STATUS(st, PVO_STATUS_ENOENT,
			   "DESTROY_AH of a destroyed AH -> ENOENT");
	}

	/* a UD WQE naming an AH of another context, or no AH */
	{
		struct ud_pair u;
		struct sim_wr w;
		uint32_t ah2;

		if (ud_make(&u, &A, &B)) {
			ac.pd = htole32(pd2.handle);
			st = pvo_create_ah(A.vm->fe, ctx2.handle, &ac, &ah2);
			if (TAP_STATUS(st, PVO_STATUS_OK,
				       "CREATE_AH in the second context")) {
				post_recv1(&u.b, &B, 0xe001, 0, 4096);
				w = ud_wr(0xe002, ah2, u.b.qpn, QKEY, 4096, 10);
				post1(&u.a, &w);
				if (sim_wait_cq(&A.scq, (struct pvo_cqe[1]){0},
						1, timeout_ms) == 1)
					tap_ok(true, "UD WQE with another "
						     "context's AH completes");
				else
					tap_ok(false, "UD WQE with another "
						      "context's AH completes");
				expect_no_cqe(&B.rcq, 30,
					      "UD WQE with another context's "
					      "AH is not delivered");
				pvo_destroy(A.vm->fe, PVO_CMD_DESTROY_AH,
					    ctx2.handle, ah2);
			}
			ud_destroy(&u, &A, &B);
		}
	}
}
