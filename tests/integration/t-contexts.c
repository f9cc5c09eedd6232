// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-contexts: user contexts beyond the doorbell queues. One VM (the native
 * front-end playing the guest driver and QEMU's slot pages) opens many
 * more contexts than it has user queues, twice; every context gets a
 * doorbell page of its own, creates an RC QP and moves data with another
 * context, and every byte is checked. Then the isolation cases: a context
 * that shares a queue with another cannot make the back-end run the
 * other's unrung work, and forged or corrupt notify ring entries (out of
 * range, free, another queue's slot, a runaway producer) are skipped.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "sim_verbs.h"
#include "sim_vm.h"
#include "tap.h"

#define NCTX	 200 /* per round: 15 queue pages, the rest slot pages */
#define QUOTA	 250 /* the VM's max-ucontexts */
#define ROUNDS	 2
#define BUF_LEN	 8192
#define MSG_LEN	 1000
#define WAIT_MS	 5000

struct uctx {
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq cq;
	struct sim_buf buf;
	struct sim_mr mr;
	struct sim_qp qp;
};

static struct backend_proc bp;
static struct sim_vm *vm;
static struct uctx *u;
static int gid_index;

static void __attribute__((noreturn)) lost(const char *what)
{
	backend_dump_log(&bp, 20);
	tap_bail("%s: %s (log kept in %s)", what, vm ? vm->err : "", bp.dir);
}

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static bool ctx_open(struct uctx *c, uint32_t i)
{
	struct sim_qp_init init = {
	    .type = PVO_QPT_RC,
	    .sq_entries = 16,
	    .rq_entries = 16,
	    .max_send_sge = 1,
	    .max_recv_sge = 1,
	};
	int st;

	memset(c, 0, sizeof(*c));
	st = sim_ctx_open(vm, &c->ctx);
	if (st == PVO_STATUS_OK)
		st = sim_alloc_pd(&c->ctx, &c->pd);
	if (st == PVO_STATUS_OK)
		st = sim_create_cq(&c->ctx, 64, &c->cq);
	if (st == PVO_STATUS_OK &&
	    sim_buf_alloc(&c->buf, sim_vm_ram(vm), sim_vm_va(vm, 2 * BUF_LEN),
			  BUF_LEN, 0, SIM_LAYOUT_SCATTER) < 0)
		st = -ENOMEM;
	if (st == PVO_STATUS_OK)
		st = sim_reg_mr(&c->pd, &c->buf, 0, BUF_LEN,
				PVO_ACCESS_LOCAL_WRITE |
				    PVO_ACCESS_REMOTE_WRITE,
				&c->mr);
	init.send_cq = init.recv_cq = &c->cq;
	if (st == PVO_STATUS_OK)
		st = sim_create_qp(&c->pd, &init, &c->qp);
	if (st != PVO_STATUS_OK)
		tap_diag("context %u: %s", i, vm->err);
	return st == PVO_STATUS_OK;
}

static void ctx_close(struct uctx *c)
{
	sim_destroy_qp(&c->qp);
	sim_dereg_mr(&c->mr);
	sim_buf_free(&c->buf);
	sim_destroy_cq(&c->cq);
	sim_dealloc_pd(&c->pd);
	sim_ctx_close(&c->ctx);
}

static bool connect_pair(struct uctx *a, struct uctx *b)
{
	struct sim_conn conn = {.sgid_index = (uint8_t)gid_index};
	struct sim_peer pa, pb;

	sim_qp_peer(&a->qp, gid_index, &pa);
	sim_qp_peer(&b->qp, gid_index, &pb);
	return sim_qp_connect(&a->qp, &conn, &pb) == PVO_STATUS_OK &&
	       sim_qp_connect(&b->qp, &conn, &pa) == PVO_STATUS_OK;
}

static bool one_cqe(struct uctx *c, uint64_t wr_id, uint8_t opcode,
		    const char *what, uint32_t i)
{
	struct pvo_cqe e;

	if (sim_wait_cq(&c->cq, &e, 1, WAIT_MS) != 1) {
		tap_diag("context %u: no completion for %s", i, what);
		return false;
	}
	if (le64toh(e.wr_id) != wr_id || e.status != PVO_WC_SUCCESS ||
	    e.opcode != opcode) {
		tap_diag("context %u: %s completed with wr_id %llu status %u "
			 "opcode %u",
			 i, what, (unsigned long long)le64toh(e.wr_id),
			 e.status, e.opcode);
		return false;
	}
	return true;
}

static bool bytes_ok(struct uctx *c, uint64_t off, uint32_t seed,
		     uint32_t i)
{
	uint8_t got[MSG_LEN];
	uint32_t k;

	sim_buf_read(&c->buf, off, got, MSG_LEN);
	for (k = 0; k < MSG_LEN; k++)
		if (got[k] != pattern(seed, k)) {
			tap_diag("context %u: byte %u at offset %llu is 0x%02x, "
				 "want 0x%02x",
				 i, k, (unsigned long long)off, got[k],
				 pattern(seed, k));
			return false;
		}
	return true;
}

static void fill(struct uctx *c, uint64_t off, uint32_t seed)
{
	uint8_t b[MSG_LEN];
	uint32_t k;

	for (k = 0; k < MSG_LEN; k++)
		b[k] = pattern(seed, k);
	sim_buf_write(&c->buf, off, b, MSG_LEN);
}

/* a -> b: SEND into b's receive buffer; b -> a: RDMA WRITE into a's MR. */
static bool move_data(struct uctx *a, struct uctx *b, uint32_t i,
		      uint32_t seed)
{
	struct sim_sge rs = {b->buf.va + 4096, MSG_LEN, b->mr.key};
	struct sim_wr send = {
	    .wr_id = 1,
	    .opcode = PVO_WR_SEND,
	    .flags = PVO_WQE_F_SIGNALED,
	    .num_sge = 1,
	    .sge = {{a->buf.va, MSG_LEN, a->mr.key}},
	};
	struct sim_wr write = {
	    .wr_id = 2,
	    .opcode = PVO_WR_RDMA_WRITE,
	    .flags = PVO_WQE_F_SIGNALED,
	    .num_sge = 1,
	    .sge = {{b->buf.va, MSG_LEN, b->mr.key}},
	    .remote_addr = a->buf.va + 4096,
	    .rkey = a->mr.key,
	};

	fill(a, 0, seed);
	fill(b, 0, seed + 1);
	if (sim_post_recv(&b->qp, 9, &rs, 1) != PVO_STATUS_OK ||
	    sim_post_send(&a->qp, &send, 1) != PVO_STATUS_OK ||
	    !one_cqe(a, 1, PVO_WC_SEND, "SEND", i) ||
	    !one_cqe(b, 9, PVO_WC_RECV, "RECV", i + 1) ||
	    !bytes_ok(b, 4096, seed, i + 1))
		return false;
	return sim_post_send(&b->qp, &write, 1) == PVO_STATUS_OK &&
	       one_cqe(b, 2, PVO_WC_RDMA_WRITE, "RDMA WRITE", i + 1) &&
	       bytes_ok(a, 4096, seed + 1, i);
}

static void test_many_contexts(void)
{
	uint32_t r, i, slots, opened, moved, queues_seen;
	bool seen[PVO_MAX_QUEUES];
	uint32_t user_queues = vm->fe->nvqs - PVO_VQ_DB_FIRST_USER;

	for (r = 1; r <= ROUNDS; r++) {
		slots = opened = moved = queues_seen = 0;
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < NCTX && ctx_open(&u[i], i); i++) {
			opened++;
			if (u[i].ctx.bar_page >= PVO_DB_SLOT_PAGE0)
				slots++;
			if (!seen[u[i].ctx.db_queue])
				queues_seen++;
			seen[u[i].ctx.db_queue] = true;
		}
		tap_ok(opened == NCTX,
		       "round %u: %u contexts open at once, each with a PD, CQ, "
		       "MR and RC QP (%u of them on slot pages)",
		       r, opened, slots);
		tap_ok(slots == NCTX - user_queues && queues_seen == user_queues,
		       "round %u: the first %u contexts own a queue page, the "
		       "other %u ring slot pages spread over all %u queues",
		       r, user_queues, slots, queues_seen);
		for (i = 0; i + 1 < opened; i += 2)
			if (connect_pair(&u[i], &u[i + 1]) &&
			    move_data(&u[i], &u[i + 1], i, r * 1000 + i))
				moved += 2;
		tap_ok(moved == NCTX,
		       "round %u: %u contexts moved data in pairs (SEND one "
		       "way, RDMA WRITE back), every byte checked",
		       r, moved);
		for (i = 0; i < opened; i++)
			ctx_close(&u[i]);
	}
}

/* Two slot contexts that kick the same queue. */
static bool pick_neighbours(uint32_t *x, uint32_t *y)
{
	uint32_t i, j;

	for (i = 0; i < NCTX; i++)
		for (j = i + 1; j < NCTX; j++)
			if (u[i].ctx.bar_page >= PVO_DB_SLOT_PAGE0 &&
			    u[j].ctx.bar_page >= PVO_DB_SLOT_PAGE0 &&
			    u[i].ctx.db_queue == u[j].ctx.db_queue &&
			    (i ^ 1) != j && i % 2 == 0 && j % 2 == 0) {
				*x = i;
				*y = j;
				return true;
			}
	return false;
}

static void test_isolation(void)
{
	struct sim_sge rs;
	struct sim_wr send = {
	    .wr_id = 7,
	    .opcode = PVO_WR_SEND,
	    .flags = PVO_WQE_F_SIGNALED,
	    .num_sge = 1,
	};
	struct pvo_ring_hdr *h;
	struct pvo_cqe e;
	uint32_t i, x, y, q, prod, opened = 0, free_slot;
	__le32 *ent;
	bool ok, found;

	for (i = 0; i < NCTX && ctx_open(&u[i], i); i++)
		opened++;
	for (i = 0; i + 1 < opened; i += 2)
		connect_pair(&u[i], &u[i + 1]);
	x = y = 0;
	found = opened == NCTX && pick_neighbours(&x, &y);
	if (!tap_ok(found,
		    "isolation: %u contexts again; slot contexts %u and %u "
		    "share queue %u",
		    opened, x, y, u[x].ctx.db_queue))
		goto out;
	q = u[x].ctx.db_queue;

	/* x publishes a SEND but does not ring; y rings its own page. */
	rs = (struct sim_sge){u[x + 1].buf.va + 4096, MSG_LEN,
			      u[x + 1].mr.key};
	sim_post_recv(&u[x + 1].qp, 9, &rs, 1);
	send.sge[0] = (struct sim_sge){u[x].buf.va, MSG_LEN, u[x].mr.key};
	fill(&u[x], 0, 4242);
	sim_post_send_nodb(&u[x].qp, &send, 1);
	sim_ctx_kick(&u[y].ctx);
	sim_ctx_kick(&u[y].ctx);
	tap_ok(sim_wait_cq(&u[x].cq, &e, 1, 300) == 0 &&
		   sim_sq_outstanding(&u[x].qp) == 1,
	       "a context's doorbell on a shared queue does not run another "
	       "context's unrung SEND (still outstanding after 300 ms)");

	/* Forged notify entries: a free slot, another queue's slot, one
	 * out of range, and x's own slot: only the last runs x's work
	 * (x's record is not in its record ring yet, so nothing runs). */
	free_slot = PVO_MAX_DB_SLOTS - 1;
	h = sim_vm_notify_hdr(vm, q);
	ent = sim_vm_notify_entries(vm, q);
	prod = vm->notify_prod[q];
	ent[prod++ % pvo_notify_ring_entries(vm->notify_nq)] =
	    htole32(free_slot);
	ent[prod++ % pvo_notify_ring_entries(vm->notify_nq)] = htole32(
	    u[x].ctx.bar_page - PVO_DB_SLOT_PAGE0 + 1); /* next queue's */
	ent[prod++ % pvo_notify_ring_entries(vm->notify_nq)] =
	    htole32(0xfffffff0u);
	vm->notify_prod[q] = prod;
	sim_store_release(&h->prod, htole32(prod));
	split_vq_kick(vu_vq(vm->fe, q));
	tap_ok(sim_wait_cq(&u[x].cq, &e, 1, 300) == 0,
	       "forged notify entries (a free slot, a slot of another queue, "
	       "slot 0xfffffff0) run nothing");
	tap_ok(le32toh(h->cons) == prod,
	       "... and the back-end consumed them (cons %u, prod %u)",
	       le32toh(h->cons), prod);

	/* x rings: its SEND runs now. */
	sim_qp_doorbell(&u[x].qp);
	ok = one_cqe(&u[x], 7, PVO_WC_SEND, "SEND after its doorbell", x) &&
	     one_cqe(&u[x + 1], 9, PVO_WC_RECV, "RECV", x + 1) &&
	     bytes_ok(&u[x + 1], 4096, 4242, x + 1);
	tap_ok(ok, "once the context rings its own page, the SEND runs and "
		   "lands intact");

	/* The guest overwrites the producer QEMU owns: the back-end ignores
	 * the ring until QEMU's next entry rewrites it. */
	sim_store_release(&h->prod, htole32(vm->notify_prod[q] + 100000));
	split_vq_kick(vu_vq(vm->fe, q));
	ok = move_data(&u[y], &u[y + 1], y, 777);
	tap_ok(ok && le32toh(h->cons) == vm->notify_prod[q],
	       "a notify ring producer overwritten 100000 ahead is ignored; "
	       "the next doorbell rewrites it and the queue's contexts keep "
	       "working (cons %u)",
	       le32toh(h->cons));
	tap_diag("slot doorbells not appended while their entry was pending: "
		 "%llu",
		 (unsigned long long)vm->slot_skipped);
out:
	for (i = 0; i < opened; i++)
		ctx_close(&u[i]);
}

/* The VM's max-ucontexts (250): the next ALLOC_UCONTEXT gets ENOSPC,
 * and a closed context makes room for one more. */
static void test_quota(void)
{
	struct sim_ctx *c = calloc(QUOTA + 1, sizeof(*c));
	uint32_t n = 0, i;
	int st = 0;

	if (!c)
		lost("out of memory");
	while (n <= QUOTA && (st = sim_ctx_open(vm, &c[n])) == PVO_STATUS_OK)
		n++;
	tap_ok(n == QUOTA && st == PVO_STATUS_ENOSPC,
	       "max-ucontexts = %u: %u contexts open, the next gets %s", QUOTA,
	       n, pvo_status_name(st));
	if (n) {
		sim_ctx_close(&c[0]);
		st = sim_ctx_open(vm, &c[0]);
		tap_ok(st == PVO_STATUS_OK,
		       "a closed context gives its place back (%s)",
		       pvo_status_name(st));
		if (st)
			c[0] = c[--n];
	}
	for (i = 0; i < n; i++)
		sim_ctx_close(&c[i]);
	free(c);
}

int main(void)
{
	static const char *const vms[] = {"a", NULL};
	static const char config[] = "[tenant t]\nvni = 7\n"
				     "[vm a]\ntenant = t\n"
				     "mac = 52:54:00:00:0a:01\nips = 10.7.0.1\n"
				     "max-ucontexts = 250\n";
	struct sim_vm_opts o = {.name = "a", .ram_size = 128 << 20};
	char err[512];
	int ret;

	tap_plan(15);
	if (backend_start_config(&bp, config, vms, NULL, 10000, err,
				 sizeof(err)) < 0)
		tap_bail("%s", err);
	o.socket_path = backend_vm_socket(&bp, "a");
	vm = sim_vm_open(&o, err, sizeof(err));
	if (!vm)
		lost(err);
	gid_index = sim_vm_gid_index_ipv4(vm, "10.7.0.1");
	u = calloc(NCTX, sizeof(*u));
	if (!u || gid_index < 0)
		lost("setup");
	test_many_contexts();
	test_isolation();
	test_quota();
	sim_vm_close(vm);
	ret = backend_stop(&bp, 5000);
	tap_ok(ret == 0, "back-end exits cleanly (%s)", backend_describe(&bp));
	backend_cleanup(&bp, false);
	free(u);
	return tap_done();
}
