// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-alias-mr: the host-verbs transport's memory path on a real RDMA
 * device (docs/hostverbs.md, "Memory"). Guest RAM is two shared memfd
 * mappings, as a VMM's; a guest MR of scattered pages (out of order,
 * across both regions) is aliased back to back by the back-end's own
 * pvo_mr_alias_map and registered with ibv_reg_mr on the host device
 * (-d, e.g. rxe0). Two RC QPs of this process, connected through the
 * device, then check that the device moves data straight between the
 * wire and the guest pages:
 *
 *   - an RDMA WRITE into the alias MR lands in the guest pages, in the
 *     MR's order, and no page outside the MR changes;
 *   - a SEND from the alias MR and an RDMA READ of it carry the guest
 *     pages' bytes;
 *   - a WRITE that runs past the MR's end fails with a remote access
 *     error, and guest RAM is unchanged: the host MR covers exactly the
 *     guest MR, so the device enforces its bounds.
 *
 *   pvo-alias-mr -d DEV -g GID_INDEX
 *
 * TAP on stdout; exit 0 if every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fake_guest.h"
#include "mr_alias.h"
#include "pvo-test-util.h"

#define PAGE 4096u

/* out of order, a run of three, a page of the second region */
static const uint64_t gpas[] = {5 * PAGE,  6 * PAGE,	       7 * PAGE,
				2 * PAGE,  FG_HALF + 9 * PAGE, 40 * PAGE,
				12 * PAGE, FG_HALF + 3 * PAGE};
#define NPAGES (sizeof(gpas) / sizeof(gpas[0]))
#define MR_LEN (NPAGES * PAGE)

static struct fake_guest g;
static struct pt_dev dev;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *guest_mr, *local_mr;
static struct pvo_mr_alias alias;
static uint8_t *local;	     /* A's buffer: 2 x MR_LEN */
static uint8_t *ram_copy[2]; /* guest RAM as it should be */

static void usage(void)
{
	fprintf(stderr, "usage: pvo-alias-mr -d DEV -g GID_INDEX\n");
	exit(2);
}

/* Posts wr on qp and waits for its completion; returns its status. */
static int post_wait(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, wr, &bad))
		pt_die("ibv_post_send");
	if (!pt_poll(cq, &wc, 10000))
		pt_die("no completion within 10 s");
	return wc.status;
}

/* Whether guest RAM equals ram_copy; says where it first differs. */
static bool ram_as_expected(char *where, size_t len)
{
	int r;

	for (r = 0; r < 2; r++) {
		const uint8_t *p = g.block[r], *q = ram_copy[r];
		size_t i;

		for (i = 0; i < FG_HALF; i++)
			if (p[i] != q[i]) {
				snprintf(where, len,
					 "guest byte at 0x%zx is 0x%02x, "
					 "expected 0x%02x",
					 (size_t)r * FG_HALF + i, p[i], q[i]);
				return false;
			}
	}
	snprintf(where, len, "every byte as expected");
	return true;
}

/* ram_copy as it is after MR bytes [0, MR_LEN) became src. */
static void expect_mr(const uint8_t *src)
{
	size_t i;

	for (i = 0; i < NPAGES; i++)
		memcpy(ram_copy[gpas[i] / FG_HALF] + gpas[i] % FG_HALF,
		       src + i * PAGE, PAGE);
}

static void test_write(void)
{
	struct ibv_sge sge = {(uintptr_t)local, MR_LEN, local_mr->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};
	char where[128];
	int st;

	wr.wr.rdma.remote_addr = (uintptr_t)alias.base;
	wr.wr.rdma.rkey = guest_mr->rkey;
	st = post_wait(qa, &wr);
	expect_mr(local);
	pt_tap_ok(
	    st == IBV_WC_SUCCESS && ram_as_expected(where, sizeof(where)),
	    "an RDMA WRITE of %u bytes into the alias MR lands in the %zu "
	    "guest pages, in the MR's order, and nowhere else (%s; %s)",
	    (unsigned)MR_LEN, NPAGES, ibv_wc_status_str(st), where);
}

static void test_send_and_read(void)
{
	struct ibv_sge rsge = {(uintptr_t)local + MR_LEN, MR_LEN,
			       local_mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_sge sge = {(uintptr_t)alias.base, MR_LEN, guest_mr->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	struct pt_stream s;
	struct ibv_wc wc;
	uint64_t want;
	int st;
	size_t i;

	/* new guest bytes, written by the guest (not through the alias) */
	pt_stream_init(&s, 2);
	for (i = 0; i < NPAGES; i++)
		pt_stream_fill(&s, fg_ptr(&g, gpas[i]), PAGE);
	want = 0;
	for (i = 0; i < NPAGES; i++)
		want = pt_mix(want, pt_checksum(fg_ptr(&g, gpas[i]), PAGE));

	memset(local + MR_LEN, 0, MR_LEN);
	if (ibv_post_recv(qa, &rwr, &rbad))
		pt_die("ibv_post_recv");
	st = post_wait(qb, &wr);
	/* the receive's completion */
	if (!pt_poll(cq, &wc, 10000))
		pt_die("no receive completion");
	{
		uint64_t got = 0;

		for (i = 0; i < NPAGES; i++)
			got = pt_mix(
			    got, pt_checksum(local + MR_LEN + i * PAGE, PAGE));
		pt_tap_ok(st == IBV_WC_SUCCESS && wc.status == IBV_WC_SUCCESS &&
			      wc.byte_len == MR_LEN && got == want,
			  "a SEND from the alias MR carries the guest pages' "
			  "bytes (%s, receive %s, %u bytes)",
			  ibv_wc_status_str(st), ibv_wc_status_str(wc.status),
			  wc.byte_len);
	}

	memset(local + MR_LEN, 0, MR_LEN);
	{
		struct ibv_sge lsge = {(uintptr_t)local + MR_LEN, MR_LEN,
				       local_mr->lkey};
		struct ibv_send_wr rd = {
		    .sg_list = &lsge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ};
		uint64_t got = 0;

		rd.wr.rdma.remote_addr = (uintptr_t)alias.base;
		rd.wr.rdma.rkey = guest_mr->rkey;
		st = post_wait(qa, &rd);
		for (i = 0; i < NPAGES; i++)
			got = pt_mix(
			    got, pt_checksum(local + MR_LEN + i * PAGE, PAGE));
		pt_tap_ok(st == IBV_WC_SUCCESS && got == want,
			  "an RDMA READ of the alias MR returns the guest "
			  "pages' bytes (%s)",
			  ibv_wc_status_str(st));
	}
	expect_mr(local + MR_LEN);
}

static void test_past_the_end(void)
{
	struct ibv_sge sge = {(uintptr_t)local, 2 * PAGE, local_mr->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};
	char where[128];
	int st;

	memset(local, 0xee, 2 * PAGE);
	/* the MR's last page and the page after it */
	wr.wr.rdma.remote_addr = (uintptr_t)alias.base + MR_LEN - PAGE;
	wr.wr.rdma.rkey = guest_mr->rkey;
	st = post_wait(qa, &wr);
	pt_tap_ok(st == IBV_WC_REM_ACCESS_ERR &&
		      ram_as_expected(where, sizeof(where)),
		  "an RDMA WRITE past the MR's end fails with %s and changes "
		  "no guest byte (got %s; %s)",
		  ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR),
		  ibv_wc_status_str(st), where);
}

int main(int argc, char **argv)
{
	static const char conf[] =
	    "[tenant t]\nvni=1\n"
	    "[vm a]\ntenant=t\nmac=52:54:00:00:00:0a\n"
	    "ips=10.0.0.1\nsocket=/tmp/pvo-alias-mr.sock\n";
	uint8_t *ram[2] = {fg_shared_block(), fg_shared_block()};
	struct pvo_daemon_config *cfg;
	struct pt_args a = {.gid_index = 1};
	struct pt_stream s;
	char *err = NULL;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pt_parse_args(argc, argv, "", NULL, NULL, &a, usage);
	if (a.peer)
		usage();
	if (!ram[0] || !ram[1])
		pt_die("shared memfd blocks for guest RAM");
	cfg = pvo_config_parse("pvo-alias-mr", conf, &err);
	if (!cfg)
		pt_die("config: %s", err);
	fg_init_ram(&g, &cfg->vms[0], ram);
	/* guest RAM starts with a pattern, so a stray write shows */
	pt_stream_init(&s, 1);
	for (r = 0; r < 2; r++) {
		pt_stream_fill(&s, g.block[r], FG_HALF);
		ram_copy[r] = malloc(FG_HALF);
		if (!ram_copy[r])
			pt_die("malloc");
		memcpy(ram_copy[r], g.block[r], FG_HALF);
	}

	r = pvo_mr_alias_map(g.vm, gpas, NPAGES, &alias, &err);
	if (r)
		pt_die("aliasing the guest MR: %s", err);
	pt_open(&dev, a.dev, a.gid_index);
	guest_mr = ibv_reg_mr(dev.pd, alias.base, alias.len,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ);
	pt_tap_ok(guest_mr != NULL,
		  "ibv_reg_mr on %s registers the %u-byte alias of %zu "
		  "guest pages (%u mappings)%s%s",
		  a.dev, (unsigned)alias.len, NPAGES, alias.runs,
		  guest_mr ? "" : ": ", guest_mr ? "" : strerror(errno));
	if (!guest_mr)
		return 1;
	local = calloc(1, 2 * MR_LEN);
	cq = ibv_create_cq(dev.ctx, 16, NULL, NULL, 0);
	if (!local || !cq)
		pt_die("buffer and CQ");
	local_mr =
	    ibv_reg_mr(dev.pd, local, 2 * MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!local_mr)
		pt_die("ibv_reg_mr of the local buffer");
	pt_stream_fill(&s, local, MR_LEN);
	qa = pt_create_rc(&dev, cq, 8);
	qb = pt_create_rc(&dev, cq, 8);
	r = pt_connect_pair(&dev, qa, qb, &pt_conn_default);
	if (r) {
		errno = r;
		pt_die("connecting the QPs");
	}

	test_write();
	test_send_and_read();
	test_past_the_end();

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(local_mr);
	pt_tap_ok(ibv_dereg_mr(guest_mr) == 0, "the alias MR deregisters");
	pvo_mr_alias_unmap(&alias);
	ibv_destroy_cq(cq);
	pt_close(&dev);
	fg_fini(&g);
	pvo_config_free(cfg);
	printf("1..%d\n", pt_tap_n);
	return pt_tap_failed != 0;
}
