// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The VM state stream (migration/): the committed fuzz-state streams
 * load and save again byte for byte, and a QP's receive cursor (a
 * message arriving in packets) is checked against the QP's own context,
 * and a window binding as BIND_MW would check it. MR page lists travel
 * as runs: many MRs of pages that jump at every entry save, load and
 * save again to the same bytes, within the destination's max-host-mem.
 * The saver gives the same bytes in pieces of any size, counts an MR of
 * more runs than a read may count over several reads, splits runs
 * longer than a stream run, refuses a stream over its limit, and fails
 * (never reads freed memory) when objects go away under it. An SRQ's
 * record keeps whether its guest rings doorbells for it (version 2);
 * one of version 1 loads without.
 */
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "../fuzz/fuzz.h"
#include "config.h"
#include "dma.h"
#define FG_RAM_SIZE (64u << 20) /* an MR of 9000 pages in a row */
#include "fake_guest.h"
#include "mr.h"
#include "ring.h"
#include "state.h"
#include "state_format.h"
#include "tap.h"
#include "vm.h"

#define CORPUS SOURCE_ROOT "/backend/fuzz/corpus/fuzz-state/"

static struct pvo_daemon_config *cfg;

static GByteArray *stream_of(const char *name)
{
	char *path = g_strconcat(CORPUS, name, NULL);
	GByteArray *s = g_byte_array_new();
	gchar *d;
	gsize len;

	if (!g_file_get_contents(path, &d, &len, NULL))
		tap_bail("cannot read %s", path);
	g_byte_array_append(s, (const guint8 *)d, (guint)len);
	g_free(d);
	g_free(path);
	return s;
}

/* s with its MR records of version 1 (a GPA a page) written as a save
 * writes them now: runs of contiguous pages (PVO_ST_MR_VERSION). */
static GByteArray *upgraded(const GByteArray *s)
{
	size_t pos = sizeof(struct pvo_st_header);
	GByteArray *u = g_byte_array_new();

	g_byte_array_append(u, s->data, (guint)pos);
	while (pos + sizeof(struct pvo_st_rec) <= s->len) {
		const uint8_t *p = s->data + pos + sizeof(struct pvo_st_rec);
		struct pvo_st_mr_runs h = { 0 };
		struct pvo_st_rec r;
		struct pvo_st_mr m;
		GByteArray *runs;
		uint32_t i;

		memcpy(&r, s->data + pos, sizeof(r));
		pos += sizeof(r) + r.len;
		if (r.type != PVO_ST_MR || r.version != 1) {
			g_byte_array_append(u, p - sizeof(r),
					    (guint)(sizeof(r) + r.len));
			continue;
		}
		memcpy(&m, p, sizeof(m));
		runs = g_byte_array_new();
		for (i = 0; i < m.npages; i++) {
			struct pvo_st_mr_run last, run;
			size_t at = runs->len - sizeof(last);
			uint64_t n;

			memcpy(&run.page, p + sizeof(m) + i * 8ull, 8);
			if (runs->len) {
				memcpy(&last, runs->data + at, sizeof(last));
				n = (last.page & 4095) + 1;
				if (n < PVO_ST_RUN_MAX &&
				    run.page == (last.page & ~4095ull) + n * 4096) {
					last.page++;
					memcpy(runs->data + at, &last,
					       sizeof(last));
					continue;
				}
			}
			g_byte_array_append(runs, (const guint8 *)&run,
					    sizeof(run));
			h.nruns++;
		}
		r.version = PVO_ST_MR_VERSION;
		r.len = (uint32_t)(sizeof(m) + sizeof(h) + runs->len);
		g_byte_array_append(u, (const guint8 *)&r, sizeof(r));
		g_byte_array_append(u, (const guint8 *)&m, sizeof(m));
		g_byte_array_append(u, (const guint8 *)&h, sizeof(h));
		g_byte_array_append(u, runs->data, runs->len);
		g_byte_array_free(runs, TRUE);
	}
	return u;
}

/* Whether a saves to the bytes of s (with its MRs as runs). */
static bool same(const GByteArray *again, const GByteArray *s)
{
	GByteArray *u = upgraded(s);
	bool eq = again->len == u->len && !memcmp(again->data, u->data, u->len);

	g_byte_array_free(u, TRUE);
	return eq;
}

/* Loads s; NULL if refused (*err then says why), else the stream saved
 * again from what loaded. */
static GByteArray *load_save(const GByteArray *s, char **err)
{
	struct pvo_vm *vm = pvo_vm_new_detached(&cfg->vms[0]);
	GByteArray *again = NULL;

	if (pvo_state_load(vm, s->data, s->len, err))
		again = pvo_state_save(vm);
	pvo_vm_free(vm);
	return again;
}

/* After a case of load_save: why it was refused, if it was; all
 * freed. */
static void case_done(GByteArray *s, GByteArray *again, char *err)
{
	if (err)
		tap_diag("  %s", err);
	g_free(err);
	if (again)
		g_byte_array_free(again, TRUE);
	g_byte_array_free(s, TRUE);
}

/* The committed streams of fuzz-seeds' scenarios (fuzz-state's seeds). */
static const char *const streams[] = {
    "rc-bind-mw",     "rc-fetch-add", "rc-read",     "rc-reg-mr",
    "rc-reg-mr-runs", "rc-send",      "rc-send-srq", "rc-write"};

static void test_round_trip(void)
{
	unsigned int i;

	for (i = 0; i < G_N_ELEMENTS(streams); i++) {
		GByteArray *s = stream_of(streams[i]), *again;
		char *err = NULL;

		again = load_save(s, &err);
		tap_ok(again && same(again, s),
		       "%s: loads and saves to the same bytes (MR page "
		       "lists as runs)",
		       streams[i]);
		case_done(s, again, err);
	}
}

/* The stream's one QP record. */
static struct pvo_st_qp *qp_of(GByteArray *s)
{
	size_t pos = sizeof(struct pvo_st_header);

	while (pos + sizeof(struct pvo_st_rec) <= s->len) {
		struct pvo_st_rec r;

		memcpy(&r, s->data + pos, sizeof(r));
		pos += sizeof(r);
		if (r.type == PVO_ST_QP)
			return (struct pvo_st_qp *)(s->data + pos);
		pos += r.len;
	}
	tap_bail("no QP record");
	return NULL;
}

/* The QP takes a message in packets: 100 bytes into one range, of kind
 * and PD as given (a GPA range has none). Returns the refusal, NULL if it loads
 * and saves to the same bytes. */
static char *cursor_case(const char *name, uint8_t kind, bool own_pd,
			 uint32_t *ctx)
{
	GByteArray *s = stream_of(name), *again;
	struct pvo_st_qp q;
	char *err = NULL;

	memcpy(&q, qp_of(s), sizeof(q));
	*ctx = q.ctx;
	q.msg_active = 1;
	q.msg_has_rw = 1;
	q.msg_off = 40;
	q.rw_dma.len = 100;
	q.rw_dma.n = 1;
	q.rw_dma.off = 40;
	q.rw_dma.r[0].kind = kind;
	q.rw_dma.r[0].key = 0x1234;
	if (kind == PVO_DMA_MR)
		q.rw_dma.r[0].pd = own_pd ? q.pd : q.pd + 1;
	q.rw_dma.r[0].addr = 0x10000;
	q.rw_dma.r[0].len = 100;
	memcpy(qp_of(s), &q, sizeof(q));
	again = load_save(s, &err);
	if (again && !same(again, s))
		err = g_strdup("saved again to other bytes");
	if (again)
		g_byte_array_free(again, TRUE);
	g_byte_array_free(s, TRUE);
	return err;
}

static void test_cursor(void)
{
	uint32_t ctx;
	char *err;

	/* rc-bind-mw's QP belongs to a user context, rc-send's to the
	 * kernel */
	err = cursor_case("rc-bind-mw", PVO_DMA_MR, true, &ctx);
	if (!tap_ok(ctx != PVO_CTX_KERNEL && !err,
		    "a user QP's cursor over an MR of its PD loads"))
		tap_diag("  %s", err ? err : "");
	g_free(err);
	err = cursor_case("rc-bind-mw", PVO_DMA_MR, false, &ctx);
	tap_ok(err && strstr(err, "field rw_dma: range 0: no PD"),
	       "... over a PD it does not have is refused");
	g_free(err);
	err = cursor_case("rc-bind-mw", PVO_DMA_PHYS, true, &ctx);
	tap_ok(err && strstr(err, "field rw_dma: range 0 of kind 1"),
	       "... over guest-physical addresses is refused");
	g_free(err);
	err = cursor_case("rc-send", PVO_DMA_PHYS, true, &ctx);
	if (!tap_ok(ctx == PVO_CTX_KERNEL && !err,
		    "a kernel QP's cursor over guest-physical addresses loads"))
		tap_diag("  %s", err ? err : "");
	g_free(err);
	err = cursor_case("rc-send", PVO_DMA_MR, true, &ctx);
	tap_ok(!err, "... and over an MR of its PD");
	g_free(err);
}

/* The stream's record of that type (the first, or the one whose first
 * 32-bit field, the handle, is handle). */
static void *rec_of(GByteArray *s, uint8_t type, uint32_t handle)
{
	size_t pos = sizeof(struct pvo_st_header);

	while (pos + sizeof(struct pvo_st_rec) <= s->len) {
		struct pvo_st_rec r;
		uint32_t h;

		memcpy(&r, s->data + pos, sizeof(r));
		pos += sizeof(r);
		memcpy(&h, s->data + pos, sizeof(h));
		if (r.type == type && (!handle || h == handle))
			return s->data + pos;
		pos += r.len;
	}
	tap_bail("no record of type %u", type);
	return NULL;
}

/* rc-bind-mw's bound window granting access over an MR whose access
 * loses mr_drop: the refusal, NULL if it loads. */
static char *binding_case(uint32_t mw_access, uint32_t mr_drop)
{
	GByteArray *s = stream_of("rc-bind-mw"), *again;
	struct pvo_st_mw w;
	struct pvo_st_mr m;
	char *err = NULL;

	memcpy(&w, rec_of(s, PVO_ST_MW, 0), sizeof(w));
	if (!w.mr || !w.bound)
		tap_bail("rc-bind-mw's window is not bound to an MR");
	memcpy(&m, rec_of(s, PVO_ST_MR, w.mr), sizeof(m));
	w.access = mw_access;
	m.access &= ~mr_drop;
	memcpy(rec_of(s, PVO_ST_MW, 0), &w, sizeof(w));
	memcpy(rec_of(s, PVO_ST_MR, w.mr), &m, sizeof(m));
	again = load_save(s, &err);
	if (again)
		g_byte_array_free(again, TRUE);
	g_byte_array_free(s, TRUE);
	return err;
}

/* An MR without local write has no remote write or atomic access
 * either (IB; the MR's own record is refused otherwise). */
#define NO_WRITE                                                            \
	(PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE |                 \
	 PVO_ACCESS_REMOTE_ATOMIC)

static void test_mw_binding(void)
{
	char *err;

	err = binding_case(PVO_ACCESS_REMOTE_WRITE, 0);
	if (!tap_ok(!err, "a window granting remote write over an MR with "
			  "local write loads"))
		tap_diag("  %s", err);
	g_free(err);
	err = binding_case(PVO_ACCESS_REMOTE_WRITE, NO_WRITE);
	tap_ok(err && strstr(err, "field mr"),
	       "... over an MR without local write is refused, as BIND_MW "
	       "would (%s)",
	       err ? err : "loaded");
	g_free(err);
	err = binding_case(PVO_ACCESS_REMOTE_ATOMIC, NO_WRITE);
	tap_ok(err && strstr(err, "field mr"),
	       "... and remote atomic access likewise");
	g_free(err);
	err = binding_case(PVO_ACCESS_REMOTE_READ, NO_WRITE);
	if (!tap_ok(!err, "remote read over an MR without local write loads"))
		tap_diag("  %s", err);
	g_free(err);
}

#define ALT_MRS 150
#define ALT_PAGES 16384 /* 64 MiB MRs, a run a page */

/* The MRs' page at list index pg. */
static uint64_t alt_gpa(const struct pvo_vm *vm, uint32_t handle,
			uint32_t pg)
{
	struct pvo_vm *v = (struct pvo_vm *)vm;
	struct pvo_mr *mr = pvo_table_at(&v->mrs, pvo_handle_index(handle));
	uint64_t avail;

	/* the MR starts 0x800 into its first page */
	return mr ? pvo_mr_gpa(mr, mr->iova - 0x800 + (uint64_t)pg * 4096 +
				       (pg ? 0 : 0x800),
			       &avail) &
			~4095ull
		  : 0;
}

static void test_alternating_mrs(void)
{
	static const char conf[] =
		"[tenant t]\nvni=5\n[vm g]\ntenant=t\n"
		"mac=52:54:00:ab:cd:ef\nsocket=/tmp/unused.sock\n"
		"max-mr=200\n"
		"[vm small]\ntenant=t\nmac=52:54:00:ab:cd:e0\n"
		"socket=/tmp/unused2.sock\nmax-mr=200\n"
		"max-host-mem=4194304\n";
	struct pvo_daemon_config *c;
	struct pvo_cmd_reg_mr cmd = { 0 };
	struct pvo_resp_reg_mr rr;
	struct pvo_resp_alloc_pd r;
	uint64_t *gpas, a, b;
	struct fake_guest g;
	struct pvo_vm *dst;
	GByteArray *s, *again = NULL;
	uint32_t i, ok = 0, first = 0, last = 0;
	char *err = NULL;
	bool loaded;

	c = pvo_config_parse("t", conf, &err);
	if (!c)
		tap_bail("config: %s", err);
	fg_init(&g, &c->vms[0]);
	fg_cmd(&g, PVO_CMD_ALLOC_PD, 0, NULL, 0, &r, sizeof(r));
	a = fg_alloc(&g, 1);
	fg_alloc(&g, 1);
	b = fg_alloc(&g, 1); /* not adjacent to a */
	gpas = g_new(uint64_t, ALT_PAGES);
	for (i = 0; i < ALT_PAGES; i++)
		gpas[i] = i & 1 ? b : a;
	fg_pdir(&g, gpas, ALT_PAGES, &cmd.pages);
	cmd.pd = r.pd;
	cmd.access = htole32(PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ);
	cmd.length = htole64((uint64_t)ALT_PAGES * 4096 - 0x800);
	for (i = 0; i < ALT_MRS; i++) {
		cmd.iova = htole64(((uint64_t)i << 32) + 0x800);
		if (fg_cmd(&g, PVO_CMD_REG_MR, 0, &cmd, sizeof(cmd), &rr,
			   sizeof(rr)))
			break;
		ok++;
		last = le32toh(rr.mr);
		first = first ? first : last;
	}
	s = pvo_state_save(g.vm);
	tap_ok(ok == ALT_MRS && s &&
		   s->len < ALT_MRS * (ALT_PAGES * 8ull + 128) + 65536,
	       "%u MRs of %u pages alternating two: saved in %u bytes, a "
	       "run a page",
	       ok, ALT_PAGES, s ? s->len : 0);
	dst = pvo_vm_new_detached(&c->vms[0]);
	if (s && pvo_state_load(dst, s->data, s->len, &err))
		again = pvo_state_save(dst);
	tap_ok(again && again->len == s->len &&
		   !memcmp(again->data, s->data, s->len) &&
		   dst->host_mem.used == g.vm->host_mem.used,
	       "they load and save again to the same bytes, charged as on "
	       "the source (%s)",
	       err ? err : "");
	tap_ok(alt_gpa(dst, first, 0) == a + 0 &&
		   alt_gpa(dst, first, 1) == b &&
		   alt_gpa(dst, last, ALT_PAGES - 2) == a &&
		   alt_gpa(dst, last, ALT_PAGES - 1) == b,
	       "the loaded MRs find their pages at both ends");
	pvo_vm_free(dst);
	g_free(err);
	err = NULL;
	dst = pvo_vm_new_detached(&c->vms[1]);
	/* the stream names VM g: rename it for VM small */
	memset(s->data + offsetof(struct pvo_st_header, vm), 0,
	       PVO_STATE_NAME_LEN);
	memcpy(s->data + offsetof(struct pvo_st_header, vm), "small", 5);
	loaded = pvo_state_load(dst, s->data, s->len, &err);
	tap_ok(!loaded && err && strstr(err, "max-host-mem") &&
		   !dst->host_mem.used &&
		   !dst->mrs.count,
	       "a destination whose max-host-mem is smaller refuses them, "
	       "holding nothing (%s)",
	       err ? err : "loaded");
	g_free(err);
	pvo_vm_free(dst);
	if (again)
		g_byte_array_free(again, TRUE);
	if (s)
		g_byte_array_free(s, TRUE);
	g_free(gpas);
	fg_fini(&g);
	pvo_config_free(c);
}


/* vm's stream read from a saver in pieces of piece bytes; NULL if the
 * save fails. *idle: reads that gave nothing but asked for more. */
static GByteArray *save_in_pieces(struct pvo_vm *vm, size_t piece,
				  unsigned int *idle)
{
	struct pvo_state_saver *sv = pvo_state_saver_new(vm);
	enum pvo_state_saver_status st = PVO_SAVE_MORE;
	GByteArray *s = g_byte_array_new();
	uint8_t *buf = g_malloc(piece);
	size_t n;

	*idle = 0;
	while (st == PVO_SAVE_MORE) {
		n = pvo_state_saver_read(sv, buf, piece, &st);
		if (n > piece)
			tap_bail("a read of %zu gave %zu bytes", piece, n);
		*idle += !n && st == PVO_SAVE_MORE;
		g_byte_array_append(s, buf, (guint)n);
	}
	if (st == PVO_SAVE_FAILED) {
		g_byte_array_free(s, TRUE);
		s = NULL;
	}
	g_free(buf);
	pvo_state_saver_free(sv);
	return s;
}

static bool equal(const GByteArray *a, const GByteArray *b)
{
	return a && b && a->len == b->len && !memcmp(a->data, b->data, a->len);
}

/* The committed streams, loaded, saved in pieces of odd sizes: the
 * bytes of the one-shot save and of the stream (MRs as runs). */
static void test_pieces(void)
{
	static const size_t pieces[] = {1, 7, 4096, 65537};
	unsigned int i, j, bad = 0, idle;

	for (i = 0; i < G_N_ELEMENTS(streams); i++) {
		struct pvo_vm *vm = pvo_vm_new_detached(&cfg->vms[0]);
		GByteArray *s = stream_of(streams[i]), *one = NULL, *p;
		char *err = NULL;

		if (pvo_state_load(vm, s->data, s->len, &err))
			one = pvo_state_save(vm);
		if (!one || !same(one, s))
			bad++;
		for (j = 0; one && j < G_N_ELEMENTS(pieces); j++) {
			p = save_in_pieces(vm, pieces[j], &idle);
			if (!equal(p, one)) {
				tap_diag("%s: pieces of %zu differ", streams[i],
					 pieces[j]);
				bad++;
			}
			if (p)
				g_byte_array_free(p, TRUE);
		}
		g_free(err);
		if (one)
			g_byte_array_free(one, TRUE);
		g_byte_array_free(s, TRUE);
		pvo_vm_free(vm);
	}
	tap_ok(!bad, "the committed streams save in pieces of 1, 7, 4096 "
		     "and 65537 bytes to the one-shot bytes");
}

#define LONG_PAGES 140000 /* alternating: more runs than reads count */
#define RUN_PAGES 9000	 /* contiguous: three runs of the stream */

/* A VM with an MR of LONG_PAGES runs and one of RUN_PAGES pages in a
 * row, from RUN_GPA on. */
#define RUN_GPA (16ull << 20)
static void long_mrs(struct fake_guest *g, const struct pvo_vm_config *vc)
{
	struct pvo_cmd_reg_mr cmd = {0};
	struct pvo_resp_reg_mr rr;
	struct pvo_resp_alloc_pd r;
	uint64_t *gpas, a, b;
	uint32_t i;

	fg_init(g, vc);
	fg_cmd(g, PVO_CMD_ALLOC_PD, 0, NULL, 0, &r, sizeof(r));
	a = fg_alloc(g, 1);
	fg_alloc(g, 1);
	b = fg_alloc(g, 1);
	gpas = g_new(uint64_t, LONG_PAGES);
	for (i = 0; i < LONG_PAGES; i++)
		gpas[i] = i & 1 ? b : a;
	fg_pdir(g, gpas, LONG_PAGES, &cmd.pages);
	cmd.pd = r.pd;
	cmd.access = htole32(PVO_ACCESS_LOCAL_WRITE);
	cmd.length = htole64((uint64_t)LONG_PAGES * 4096);
	if (fg_cmd(g, PVO_CMD_REG_MR, 0, &cmd, sizeof(cmd), &rr, sizeof(rr)))
		tap_bail("REG_MR of %u runs refused", LONG_PAGES);
	for (i = 0; i < RUN_PAGES; i++)
		gpas[i] = RUN_GPA + (uint64_t)i * 4096;
	fg_pdir(g, gpas, RUN_PAGES, &cmd.pages);
	cmd.iova = htole64(1ull << 40);
	cmd.length = htole64((uint64_t)RUN_PAGES * 4096);
	if (fg_cmd(g, PVO_CMD_REG_MR, 0, &cmd, sizeof(cmd), &rr, sizeof(rr)))
		tap_bail("REG_MR of %u contiguous pages refused", RUN_PAGES);
	g_free(gpas);
}

/* The last MR record's runs (the contiguous MR's). */
static bool runs_split(const GByteArray *s)
{
	size_t pos = sizeof(struct pvo_st_header);
	struct pvo_st_mr_run r[3];
	struct pvo_st_mr_runs h = {0};
	struct pvo_st_rec rec;

	while (pos + sizeof(rec) <= s->len) {
		memcpy(&rec, s->data + pos, sizeof(rec));
		pos += sizeof(rec);
		if (rec.type == PVO_ST_MR &&
		    rec.len == sizeof(struct pvo_st_mr) + sizeof(h) + sizeof(r))
			break;
		pos += rec.len;
	}
	if (pos + sizeof(struct pvo_st_mr) + sizeof(h) + sizeof(r) > s->len)
		return false;
	memcpy(&h, s->data + pos + sizeof(struct pvo_st_mr), sizeof(h));
	memcpy(r, s->data + pos + sizeof(struct pvo_st_mr) + sizeof(h),
	       sizeof(r));
	return h.nruns == 3 && r[0].page == (RUN_GPA | 4095) &&
	       r[1].page == ((RUN_GPA + 4096ull * 4096) | 4095) &&
	       r[2].page == ((RUN_GPA + 8192ull * 4096) |
			     (RUN_PAGES - 8192 - 1));
}

static void test_long_mrs(void)
{
	struct fake_guest g;
	struct pvo_vm *dst;
	GByteArray *one, *p, *again = NULL;
	unsigned int idle = 0, idle1;
	char *err = NULL;
	uint32_t mrs;

	long_mrs(&g, &cfg->vms[0]);
	one = pvo_state_save(g.vm);
	p = save_in_pieces(g.vm, 4096, &idle);
	tap_ok(one && equal(p, one) && idle > 0,
	       "an MR of %u runs saves in pieces to the one-shot bytes, its "
	       "runs counted over %u reads that gave nothing",
	       LONG_PAGES, idle);
	if (p)
		g_byte_array_free(p, TRUE);
	p = save_in_pieces(g.vm, 7, &idle1);
	tap_ok(equal(p, one), "... and in pieces of 7 bytes");
	if (p)
		g_byte_array_free(p, TRUE);
	tap_ok(one && runs_split(one),
	       "a run of %u pages is three runs of the stream", RUN_PAGES);
	dst = pvo_vm_new_detached(&cfg->vms[0]);
	if (one && pvo_state_load(dst, one->data, one->len, &err))
		again = pvo_state_save(dst);
	tap_ok(equal(again, one), "they load and save again to the same bytes "
				  "(%s)", err ? err : "");
	g_free(err);
	pvo_vm_free(dst);
	if (again)
		g_byte_array_free(again, TRUE);

	/* the stream's limit: exactly the stream is saved, a byte less not */
	pvo_state_save_limit = one->len;
	p = pvo_state_save(g.vm);
	tap_ok(equal(p, one), "a stream of exactly the limit is saved");
	if (p)
		g_byte_array_free(p, TRUE);
	pvo_state_save_limit = one->len - 1;
	p = save_in_pieces(g.vm, 65536, &idle1);
	tap_ok(!p, "a byte over the limit, the save fails");
	pvo_state_save_limit = PVO_STATE_MAX_BYTES;

	/* an MR deregistered in the middle of its runs */
	{
		struct pvo_state_saver *sv = pvo_state_saver_new(g.vm);
		struct pvo_cmd_handle h = {0};
		enum pvo_state_saver_status st;
		uint8_t buf[4096];
		uint32_t handle = 0;
		void *obj;

		mrs = g.vm->mrs.count;
		pvo_state_saver_read(sv, buf, sizeof(buf), &st);
		while (st == PVO_SAVE_MORE &&
		       pvo_state_saver_bytes(sv) < 65536)
			pvo_state_saver_read(sv, buf, sizeof(buf), &st);
		handle = pvo_table_next(&g.vm->mrs, 0, &obj);
		h.handle = htole32(handle);
		fg_cmd(&g, PVO_CMD_DEREG_MR, 0, &h, sizeof(h), NULL, 0);
		while (st == PVO_SAVE_MORE)
			pvo_state_saver_read(sv, buf, sizeof(buf), &st);
		tap_ok(st == PVO_SAVE_FAILED && g.vm->mrs.count == mrs - 1 &&
			       strstr(pvo_state_saver_error(sv), "changed"),
		       "an MR deregistered while its runs are read fails the "
		       "save (%s)",
		       pvo_state_saver_error(sv) ? pvo_state_saver_error(sv)
						 : "");
		pvo_state_saver_free(sv);
	}
	g_byte_array_free(one, TRUE);
	fg_fini(&g);
}

/* rc-send with an SRQ record of that version (flags: version 2's) of
 * its user context before its END record. */
static GByteArray *with_srq(unsigned int version, uint8_t flags)
{
	GByteArray *s = stream_of("rc-send"), *u = g_byte_array_new();
	const struct pvo_st_pd *pd = rec_of(s, PVO_ST_PD, 0);
	struct pvo_st_srq c = {.max_sge = 1, .cons = 3, .flags = flags};
	struct pvo_st_rec r = {.type = PVO_ST_SRQ, .version = version};
	size_t end = s->len - sizeof(struct pvo_st_rec);
	uint64_t gpa;
	uint32_t i;

	c.handle = (pd->handle & ~PVO_TABLE_MAX_SLOTS) | 1;
	c.ctx = pd->ctx;
	c.pd = pd->handle;
	c.ring.entries = 8;
	c.ring.shift = (uint8_t)pvo_recv_wqe_shift(1);
	c.ring.npages = pvo_ring_pages(8, c.ring.shift);
	r.len = (uint32_t)((version == 1 ? PVO_ST_SRQ_V1_LEN : sizeof(c)) +
			   c.ring.npages * 8ull);
	g_byte_array_append(u, s->data, (guint)end);
	g_byte_array_append(u, (const guint8 *)&r, sizeof(r));
	g_byte_array_append(u, (const guint8 *)&c,
			    version == 1 ? PVO_ST_SRQ_V1_LEN : sizeof(c));
	for (i = 0; i < c.ring.npages; i++) {
		gpa = 0x100000 + i * 4096ull;
		g_byte_array_append(u, (const guint8 *)&gpa, sizeof(gpa));
	}
	g_byte_array_append(u, s->data + end, sizeof(struct pvo_st_rec));
	g_byte_array_free(s, TRUE);
	return u;
}

/* The SRQ record of a saved stream: version and flags as wanted. */
static bool srq_saved(GByteArray *again, unsigned int version, uint8_t flags)
{
	const struct pvo_st_srq *c;
	struct pvo_st_rec r;

	if (!again)
		return false;
	c = rec_of(again, PVO_ST_SRQ, 0);
	memcpy(&r, (const uint8_t *)c - sizeof(r), sizeof(r));
	return r.version == version && c->flags == flags && c->cons == 3;
}

/* s loaded and saved: its SRQ's record as wanted. */
static void srq_case(GByteArray *s, uint8_t flags, const char *what)
{
	GByteArray *again;
	char *err = NULL;

	again = load_save(s, &err);
	tap_ok(srq_saved(again, PVO_ST_SRQ_VERSION, flags),
	       "%s: loads and saves as version %u, flags 0x%x", what,
	       PVO_ST_SRQ_VERSION, flags);
	case_done(s, again, err);
}

static void test_srq_records(void)
{
	GByteArray *bad = with_srq(PVO_ST_SRQ_VERSION, 0x2), *again;
	char *err = NULL;

	srq_case(with_srq(PVO_ST_SRQ_VERSION, PVO_ST_SRQ_DOORBELL),
		 PVO_ST_SRQ_DOORBELL,
		 "an SRQ whose guest rings doorbells for it");
	srq_case(with_srq(1, 0), 0,
		 "an SRQ record of version 1 (no flags, no doorbells)");
	again = load_save(bad, &err);
	tap_ok(!again && err && strstr(err, "SRQ") && strstr(err, "flags"),
	       "an SRQ record with an unknown flag is refused: %s",
	       err ? err : "(loaded)");
	case_done(bad, again, err);
}

int main(void)
{
	char *err = NULL;

	tap_plan(32);
	cfg = pvo_config_parse("fuzz.conf", FUZZ_CTRL_CONF, &err);
	if (!cfg)
		tap_bail("config: %s", err);
	test_round_trip();
	test_cursor();
	test_mw_binding();
	test_alternating_mrs();
	test_pieces();
	test_long_mrs();
	test_srq_records();
	pvo_config_free(cfg);
	return tap_done();
}
