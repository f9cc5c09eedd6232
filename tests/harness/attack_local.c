// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Attacks through the send queue of QPs connected within the attacker's
 * VM: big-wqe (huge RDMA WRITEs behind one kick, each QP named by many
 * doorbell records) and legal-flood (4 QPs x 8 WRITEs of 1 MiB, as
 * pvo-bench --fairness).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attack_int.h"
#include "pvo_cmd.h"

/* big-wqe */

#define BW_SQ 64

struct big_wqe {
	struct sim_qp x, y;
	uint32_t mr, key;
	bool have_mr, have_qps;
};

static int big_wqe_start(struct attack *a)
{
	struct big_wqe *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return atk_fail(a, ENOMEM, "out of memory");
	a->priv = s;
	if (!a->o.wqe_bytes)
		a->o.wqe_bytes = 64 * ATK_MIB;
	if (!a->o.wqes)
		a->o.wqes = 16;
	if (!a->o.records)
		a->o.records = PVO_DB_RING_ENTRIES - 1;
	if (a->o.wqe_bytes > ATK_BIG_MR / 2 || a->o.wqes > BW_SQ)
		return atk_fail(a, EINVAL, "at most %u WRITEs of 2 GiB", BW_SQ);
	ret = atk_basic_objects(a, 2 * BW_SQ);
	if (!ret)
		ret = atk_big_pdir(a);
	if (ret)
		return ret;
	ret = atk_reg_big_mr(a, ATK_BIG_MR,
			     PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE,
			     &s->mr, &s->key);
	if (ret)
		return atk_fail(a, EIO, "REG_MR of 4 GiB: %s",
				pvo_status_name(ret));
	s->have_mr = true;
	ret = atk_rc_pair(a, &s->x, &s->y, BW_SQ);
	s->have_qps = !ret;
	return ret;
}

/* @n records naming @qp in the context's ring (as many as fit), then
 * one doorbell write. */
static void flood_records(struct sim_ctx *ctx, uint32_t qp, unsigned int n)
{
	struct pvo_ring_hdr *h = sim_ctx_db_hdr(ctx);
	__le32 *e = sim_ctx_db_entries(ctx);
	uint32_t prod = le32toh(h->prod);
	uint32_t room =
	    PVO_DB_RING_ENTRIES - (prod - le32toh(sim_load_acquire(&h->cons)));

	if (n > room)
		n = room;
	while (n--)
		e[prod++ % PVO_DB_RING_ENTRIES] = htole32(qp);
	sim_store_release(&h->prod, htole32(prod));
	sim_ctx_kick(ctx);
}

static int big_wqe_step(struct attack *a)
{
	struct big_wqe *s = a->priv;
	struct sim_wr w;
	struct sim_wr *wr = calloc(a->o.wqes, sizeof(*wr));
	unsigned int i;
	int ret;

	if (!wr)
		return atk_fail(a, ENOMEM, "out of memory");
	memset(&w, 0, sizeof(w));
	w.opcode = PVO_WR_RDMA_WRITE;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 1;
	w.sge[0].addr = ATK_BIG_MR;
	w.sge[0].length = (uint32_t)a->o.wqe_bytes;
	w.sge[0].lkey = s->key;
	w.remote_addr = ATK_BIG_MR + ATK_BIG_MR / 2;
	w.rkey = s->key;
	for (i = 0; i < a->o.wqes; i++) {
		wr[i] = w;
		wr[i].wr_id = i;
	}
	ret = sim_post_send_nodb(&s->x, wr, a->o.wqes);
	free(wr);
	if (ret)
		return atk_fail(a, -ret, "post: %s", a->vm->err);
	flood_records(&a->ctx, s->x.handle, a->o.records);
	a->st.ops += a->o.wqes;
	a->st.bytes += a->o.wqes * a->o.wqe_bytes;
	return atk_reap(a, a->o.wqes, ATK_DRAIN_MS);
}

static void big_wqe_stop(struct attack *a)
{
	struct big_wqe *s = a->priv;

	if (!s)
		return;
	if (s->have_qps) {
		sim_destroy_qp(&s->x);
		sim_destroy_qp(&s->y);
	}
	if (s->have_mr)
		atk_dereg(a, s->mr);
}

const struct attack_ops atk_big_wqe = {
    .name = "big-wqe",
    .start = big_wqe_start,
    .step = big_wqe_step,
    .stop = big_wqe_stop,
};

/* legal-flood */

#define LF_QPS 4
#define LF_DEPTH 8
#define LF_SIZE ATK_MIB
#define LF_BUF (16 * ATK_MIB)

struct legal_flood {
	struct sim_qp x[LF_QPS], y[LF_QPS];
	unsigned int nqps;
	unsigned int inflight[LF_QPS];
	struct sim_buf buf;
	struct sim_mr mr;
	bool have_buf, have_mr;
};

static int legal_flood_start(struct attack *a)
{
	struct legal_flood *s = calloc(1, sizeof(*s));
	unsigned int i;
	int ret;

	if (!s)
		return atk_fail(a, ENOMEM, "out of memory");
	a->priv = s;
	ret = atk_basic_objects(a, 2 * LF_QPS * LF_DEPTH);
	if (ret)
		return ret;
	if (sim_buf_alloc(&s->buf, sim_vm_ram(a->vm), sim_vm_va(a->vm, LF_BUF),
			  LF_BUF, 0, SIM_LAYOUT_CONTIG) < 0)
		return atk_fail(a, ENOMEM, "no guest RAM for 16 MiB");
	s->have_buf = true;
	if (sim_reg_mr(&a->pd, &s->buf, 0, LF_BUF,
		       PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_WRITE,
		       &s->mr))
		return atk_fail(a, EIO, "REG_MR: %s", a->vm->err);
	s->have_mr = true;
	for (i = 0; i < LF_QPS; i++) {
		ret = atk_rc_pair(a, &s->x[i], &s->y[i], 2 * LF_DEPTH);
		if (ret)
			return ret;
		s->nqps++;
	}
	return 0;
}

static int legal_flood_reap(struct attack *a, int timeout_ms)
{
	struct legal_flood *s = a->priv;
	struct pvo_cqe c[LF_QPS * LF_DEPTH];
	int n, k;

	n = sim_wait_cq(&a->cq, c, 1, timeout_ms);
	n += sim_poll_cq(&a->cq, c + n, LF_QPS * LF_DEPTH - n);
	if (n <= 0)
		return atk_fail(a, ETIMEDOUT, "no WRITE completed");
	for (k = 0; k < n; k++) {
		if (c[k].status != PVO_WC_SUCCESS)
			atk_error(a, "WC %s", sim_wc_status_name(c[k].status));
		if (le64toh(c[k].wr_id) < LF_QPS)
			s->inflight[le64toh(c[k].wr_id)]--;
	}
	return 0;
}

static int legal_flood_step(struct attack *a)
{
	struct legal_flood *s = a->priv;
	struct sim_wr w;
	unsigned int i;

	memset(&w, 0, sizeof(w));
	w.opcode = PVO_WR_RDMA_WRITE;
	w.flags = PVO_WQE_F_SIGNALED;
	w.num_sge = 1;
	w.sge[0].length = LF_SIZE;
	w.sge[0].lkey = s->mr.key;
	w.rkey = s->mr.key;
	for (i = 0; i < LF_QPS; i++)
		while (s->inflight[i] < LF_DEPTH) {
			w.wr_id = i;
			w.sge[0].addr = s->buf.va + i * 2 * LF_SIZE;
			w.remote_addr =
			    s->buf.va + LF_BUF / 2 + i * 2 * LF_SIZE;
			if (sim_post_send(&s->x[i], &w, 1))
				return atk_fail(a, ENOSPC, "SQ full");
			s->inflight[i]++;
			a->st.ops++;
			a->st.bytes += LF_SIZE;
		}
	return legal_flood_reap(a, ATK_DRAIN_MS);
}

static void legal_flood_stop(struct attack *a)
{
	struct legal_flood *s = a->priv;
	unsigned int i, left = 0;

	if (!s)
		return;
	for (i = 0; i < LF_QPS; i++)
		left += s->inflight[i];
	while (left && !legal_flood_reap(a, ATK_DRAIN_MS))
		for (i = 0, left = 0; i < LF_QPS; i++)
			left += s->inflight[i];
	for (i = 0; i < s->nqps; i++) {
		sim_destroy_qp(&s->x[i]);
		sim_destroy_qp(&s->y[i]);
	}
	if (s->have_mr)
		sim_dereg_mr(&s->mr);
	if (s->have_buf)
		sim_buf_free(&s->buf);
}

const struct attack_ops atk_legal_flood = {
    .name = "legal-flood",
    .start = legal_flood_start,
    .step = legal_flood_step,
    .stop = legal_flood_stop,
};
