/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the attacks (attack_*.c) share: the attack object, their table
 * entry, and helpers for the objects most of them need.
 */
#ifndef ATTACK_INT_H
#define ATTACK_INT_H

#include "attack.h"
#include "sim_verbs.h"

#define ATK_MIB (1024ull * 1024ull)
#define ATK_GIB (1024ull * ATK_MIB)
/* The biggest MR the default quota allows (max-mr-size). */
#define ATK_BIG_MR (4 * ATK_GIB)
/* How long to wait for the back-end when draining. */
#define ATK_DRAIN_MS 60000

struct attack;

struct attack_ops {
	const char *name;
	int (*start)(struct attack *a);
	int (*step)(struct attack *a);
	void (*stop)(struct attack *a);
};

struct attack {
	const struct attack_ops *ops;
	struct sim_vm *vm;
	struct attack_opts o;
	struct attack_stats st;
	/* what most attacks need: a context, a PD, one CQ */
	struct sim_ctx ctx;
	struct sim_pd pd;
	struct sim_cq cq;
	bool have_ctx, have_pd, have_cq;
	/* a page directory of ATK_BIG_MR / 4 KiB entries alternating two
	 * guest pages, and the pages (attack_big_pdir) */
	struct pvo_pdir big_pdir;
	struct sim_pdir_mem big_pdir_mem;
	struct sim_buf two_pages;
	bool have_big_pdir;
	void *priv; /* the attack's own state */
};

extern const struct attack_ops atk_big_wqe, atk_ctrl_flood, atk_mr_amplify,
    atk_read_amplify, atk_legal_flood;

/* Record an error status the attacker got (first message kept). */
void atk_error(struct attack *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A failure that ends the attack: -@err, message kept. */
int atk_fail(struct attack *a, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Context, PD and a CQ of @cqe entries. */
int atk_basic_objects(struct attack *a, uint32_t cqe);
/* The repeating page directory (once per attack). */
int atk_big_pdir(struct attack *a);
/* REG_MR of ATK_BIG_MR bytes over the repeating directory at @iova: the
 * pvo_status, handle and key in *@mr / *@key. */
int atk_reg_big_mr(struct attack *a, uint64_t iova, uint32_t access,
		   uint32_t *mr, uint32_t *key);
int atk_dereg(struct attack *a, uint32_t mr);
/* An RC QP pair of this VM connected to each other (GID index 0). */
int atk_rc_pair(struct attack *a, struct sim_qp *x, struct sim_qp *y,
		uint32_t sq_entries);
/* Poll the CQ until @n CQEs came (WC errors counted); -ETIMEDOUT. */
int atk_reap(struct attack *a, unsigned int n, int timeout_ms);

#endif /* ATTACK_INT_H */
