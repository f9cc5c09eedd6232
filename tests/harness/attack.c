// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The attacks' table, their loop, and the objects they share: a context
 * with a PD and a CQ, and a page directory that makes a 4 GiB MR out of
 * two guest pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attack_int.h"
#include "pvo_cmd.h"

static const struct attack_ops *const table[] = {
    &atk_big_wqe,      &atk_ctrl_flood,	 &atk_mr_amplify,
    &atk_read_amplify, &atk_legal_flood,
};
#define NATTACKS (sizeof(table) / sizeof(table[0]))

const char *const *attack_names(void)
{
	static const char *names[NATTACKS + 1];
	unsigned int i;

	for (i = 0; i < NATTACKS; i++)
		names[i] = table[i]->name;
	return names;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void atk_error(struct attack *a, const char *fmt, ...)
{
	va_list ap;

	if (!a->st.errors++) {
		va_start(ap, fmt);
		vsnprintf(a->st.first_error, sizeof(a->st.first_error), fmt,
			  ap);
		va_end(ap);
	}
}

int atk_fail(struct attack *a, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->st.first_error, sizeof(a->st.first_error), fmt, ap);
	va_end(ap);
	return -err;
}

int atk_basic_objects(struct attack *a, uint32_t cqe)
{
	if (sim_ctx_open(a->vm, &a->ctx))
		return atk_fail(a, EIO, "context: %s", a->vm->err);
	a->have_ctx = true;
	if (sim_alloc_pd(&a->ctx, &a->pd))
		return atk_fail(a, EIO, "PD: %s", a->vm->err);
	a->have_pd = true;
	if (sim_create_cq(&a->ctx, cqe, &a->cq))
		return atk_fail(a, EIO, "CQ: %s", a->vm->err);
	a->have_cq = true;
	return 0;
}

int atk_big_pdir(struct attack *a)
{
	uint32_t n = ATK_BIG_MR / PVO_PAGE_SIZE, i;
	struct guest_ram *ram = sim_vm_ram(a->vm);
	uint64_t *gpa;
	int ret;

	if (a->have_big_pdir)
		return 0;
	ret = sim_buf_alloc(&a->two_pages, ram, sim_vm_va(a->vm, 2 * 4096),
			    2 * 4096, 0, SIM_LAYOUT_SCATTER);
	if (ret < 0)
		return atk_fail(a, -ret, "no guest RAM for two pages");
	gpa = malloc(n * sizeof(*gpa));
	if (!gpa)
		return atk_fail(a, ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		gpa[i] = a->two_pages.pages.gpa[i & 1];
	ret = sim_pdir_build(ram, gpa, n, &a->big_pdir, &a->big_pdir_mem);
	free(gpa);
	if (ret < 0)
		return atk_fail(a, -ret,
				"no guest RAM for a %u-entry directory", n);
	a->have_big_pdir = true;
	return 0;
}

int atk_reg_big_mr(struct attack *a, uint64_t iova, uint32_t access,
		   uint32_t *mr, uint32_t *key)
{
	struct pvo_cmd_reg_mr c = {0};

	c.pd = htole32(a->pd.handle);
	c.access = htole32(access);
	c.iova = htole64(iova);
	c.length = htole64(ATK_BIG_MR);
	c.pages = a->big_pdir;
	return pvo_reg_mr(a->vm->fe, a->ctx.handle, &c, mr, key);
}

int atk_dereg(struct attack *a, uint32_t mr)
{
	return pvo_destroy(a->vm->fe, PVO_CMD_DEREG_MR, a->ctx.handle, mr);
}

int atk_rc_pair(struct attack *a, struct sim_qp *x, struct sim_qp *y,
		uint32_t sq_entries)
{
	struct sim_qp_init in = {
	    .type = PVO_QPT_RC,
	    .send_cq = &a->cq,
	    .recv_cq = &a->cq,
	    .sq_entries = sq_entries,
	    .rq_entries = 16,
	    .max_send_sge = 1,
	    .max_recv_sge = 1,
	    .layout = SIM_LAYOUT_CONTIG,
	};
	struct sim_conn conn = {0};
	struct sim_peer px, py;

	if (sim_create_qp(&a->pd, &in, x) || sim_create_qp(&a->pd, &in, y))
		return atk_fail(a, EIO, "QP: %s", a->vm->err);
	sim_qp_peer(x, 0, &px);
	sim_qp_peer(y, 0, &py);
	if (sim_qp_connect(x, &conn, &py) || sim_qp_connect(y, &conn, &px))
		return atk_fail(a, EIO, "connect: %s", a->vm->err);
	return 0;
}

int atk_reap(struct attack *a, unsigned int n, int timeout_ms)
{
	double dl = now_s() + timeout_ms / 1000.0;
	struct pvo_cqe c[64];
	int got, i;

	while (n) {
		/* sim_wait_cq sleeps between polls: the attacker's client
		 * leaves the CPU to the back-end */
		got = sim_wait_cq(&a->cq, c, n < 64 ? (int)n : 64, 100);
		for (i = 0; i < got; i++)
			if (c[i].status != PVO_WC_SUCCESS)
				atk_error(a, "WC %s",
					  sim_wc_status_name(c[i].status));
		n -= got;
		if (!got && now_s() > dl)
			return atk_fail(a, ETIMEDOUT, "%u CQEs missing", n);
	}
	return 0;
}

struct attack *attack_new(const char *name, struct sim_vm *vm,
			  const struct attack_opts *o, char *err, size_t len)
{
	struct attack *a;
	unsigned int i;

	for (i = 0; i < NATTACKS && strcmp(table[i]->name, name); i++)
		;
	if (i == NATTACKS) {
		snprintf(err, len, "no attack named '%s'", name);
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	a->ops = table[i];
	a->vm = vm;
	if (o)
		a->o = *o;
	if (a->ops->start(a)) {
		snprintf(err, len, "%s: %s", name, a->st.first_error);
		attack_free(a);
		return NULL;
	}
	return a;
}

int attack_step(struct attack *a)
{
	a->st.steps++;
	return a->ops->step(a);
}

int attack_run_for(struct attack *a, double seconds, const atomic_bool *stop)
{
	double end = now_s() + seconds;
	int ret = 0;

	while (!ret && now_s() < end && !(stop && atomic_load(stop)))
		ret = attack_step(a);
	return ret;
}

const struct attack_stats *attack_stats(const struct attack *a)
{
	return &a->st;
}

void attack_free(struct attack *a)
{
	if (!a)
		return;
	if (a->ops->stop)
		a->ops->stop(a);
	free(a->priv);
	if (a->have_big_pdir) {
		sim_pdir_free(sim_vm_ram(a->vm), &a->big_pdir_mem);
		sim_buf_free(&a->two_pages);
	}
	if (a->have_cq)
		sim_destroy_cq(&a->cq);
	if (a->have_pd)
		sim_dealloc_pd(&a->pd);
	if (a->have_ctx)
		sim_ctx_close(&a->ctx);
	free(a);
}
