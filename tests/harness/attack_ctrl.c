// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Attacks through the control queue with 4 GiB MRs made of two guest
 * pages: mr-amplify (register them until the back-end says no, keep
 * them) and ctrl-flood (a full queue of REG_MRs behind one kick, then a
 * full queue of their DEREG_MRs, again and again).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attack_int.h"
#include "pvo_cmd.h"
#include "split_vq.h"

#define ATK_ACCESS (PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ)

/* mr-amplify */

struct mr_amplify {
	uint32_t *mr;
	unsigned int n, cap;
};

static int mr_amplify_start(struct attack *a)
{
	a->priv = calloc(1, sizeof(struct mr_amplify));
	if (!a->priv)
		return atk_fail(a, ENOMEM, "out of memory");
	return atk_basic_objects(a, 16) ?: atk_big_pdir(a);
}

static int mr_amplify_step(struct attack *a)
{
	struct mr_amplify *s = a->priv;
	uint32_t mr, key;
	int ret;

	if (s->n == s->cap) {
		uint32_t *m = realloc(s->mr, (s->cap * 2 + 64) * sizeof(*m));

		if (!m)
			return atk_fail(a, ENOMEM, "out of memory");
		s->mr = m;
		s->cap = s->cap * 2 + 64;
	}
	ret = atk_reg_big_mr(a, ATK_BIG_MR, ATK_ACCESS, &mr, &key);
	if (ret < 0)
		return atk_fail(a, -ret, "REG_MR: %s",
				vu_frontend_error(a->vm->fe));
	if (ret != PVO_STATUS_OK) {
		atk_error(a, "REG_MR of 4 GiB #%u: %s", s->n + 1,
			  pvo_status_name(ret));
		/* refused: do not spin on the control queue */
		nanosleep(&(struct timespec){0, 5000000}, NULL);
		return 0;
	}
	s->mr[s->n++] = mr;
	a->st.ops++;
	a->st.bytes += ATK_BIG_MR;
	return 0;
}

static void mr_amplify_stop(struct attack *a)
{
	struct mr_amplify *s = a->priv;

	while (s && s->n)
		atk_dereg(a, s->mr[--s->n]);
	if (s)
		free(s->mr);
}

const struct attack_ops atk_mr_amplify = {
    .name = "mr-amplify",
    .start = mr_amplify_start,
    .step = mr_amplify_step,
    .stop = mr_amplify_stop,
};

/* ctrl-flood */

#define CF_MAX 100 /* 2 descriptors each in a 256-entry queue */
#define CF_REQ 128
#define CF_RESP 64

struct ctrl_flood {
	uint64_t req[CF_MAX], resp[CF_MAX]; /* guest buffers */
	int head[CF_MAX];
	uint32_t mr[CF_MAX];
	unsigned int nmr;
};

static int ctrl_flood_start(struct attack *a)
{
	struct guest_ram *ram = sim_vm_ram(a->vm);
	struct ctrl_flood *s = calloc(1, sizeof(*s));
	unsigned int i;

	if (!s)
		return atk_fail(a, ENOMEM, "out of memory");
	a->priv = s;
	if (!a->o.batch)
		a->o.batch = 32;
	if (a->o.batch > CF_MAX)
		a->o.batch = CF_MAX;
	for (i = 0; i < a->o.batch; i++) {
		s->req[i] = guest_ram_alloc(ram, CF_REQ, 64);
		s->resp[i] = guest_ram_alloc(ram, CF_RESP, 64);
		if (s->req[i] == GUEST_RAM_NO_ADDR ||
		    s->resp[i] == GUEST_RAM_NO_ADDR)
			return atk_fail(a, ENOMEM, "no guest RAM");
	}
	return atk_basic_objects(a, 16) ?: atk_big_pdir(a);
}

/* Command i of the batch: REG_MR of 4 GiB, or DEREG_MR of @mr. */
static void cf_write(struct attack *a, unsigned int i, bool reg, uint32_t mr)
{
	struct ctrl_flood *s = a->priv;
	uint8_t b[CF_REQ] = {0};
	struct pvo_cmd_hdr *h = (void *)b;
	struct pvo_cmd_reg_mr *r = (void *)(h + 1);
	struct pvo_cmd_handle *d = (void *)(h + 1);

	h->opcode = htole16(reg ? PVO_CMD_REG_MR : PVO_CMD_DEREG_MR);
	h->ctx = htole32(a->ctx.handle);
	if (reg) {
		r->pd = htole32(a->pd.handle);
		r->access = htole32(ATK_ACCESS);
		r->iova = htole64(ATK_BIG_MR);
		r->length = htole64(ATK_BIG_MR);
		r->pages = a->big_pdir;
	} else {
		d->handle = htole32(mr);
	}
	guest_ram_write(sim_vm_ram(a->vm), s->req[i], b, sizeof(b));
}

/* n commands written by cf_write() behind one kick, then their answers;
 * REG_MR handles into s->mr. */
static int cf_batch(struct attack *a, unsigned int n, bool reg)
{
	struct ctrl_flood *s = a->priv;
	struct split_vq *vq = vu_vq(a->vm->fe, PVO_VQ_CTRL);
	uint8_t r[CF_RESP];
	struct pvo_resp_hdr *h = (void *)r;
	struct pvo_resp_reg_mr *m = (void *)(h + 1);
	unsigned int i;
	uint32_t used;
	int ret;

	for (i = 0; i < n; i++) {
		struct vq_buf out = {s->req[i], CF_REQ};
		struct vq_buf in = {s->resp[i], CF_RESP};

		s->head[i] = split_vq_add(vq, &out, 1, &in, 1);
		if (s->head[i] < 0)
			return atk_fail(a, -s->head[i], "control queue full");
	}
	split_vq_kick(vq);
	for (i = 0; i < n; i++) {
		ret = split_vq_wait(vq, s->head[i], a->vm->fe->sock,
				    ATK_DRAIN_MS, &used);
		if (ret && ret != -ENOMSG)
			return atk_fail(a, -ret, "no answer to command %u", i);
		guest_ram_read(sim_vm_ram(a->vm), s->resp[i], r, sizeof(r));
		if (h->status) {
			atk_error(a, "%s: %s", reg ? "REG_MR" : "DEREG_MR",
				  pvo_status_name(le32toh(h->status)));
			continue;
		}
		a->st.ops++;
		if (reg) {
			s->mr[s->nmr++] = le32toh(m->mr);
			a->st.bytes += ATK_BIG_MR;
		}
	}
	return 0;
}

static int ctrl_flood_step(struct attack *a)
{
	struct ctrl_flood *s = a->priv;
	unsigned int i, n;
	int ret;

	for (i = 0; i < a->o.batch; i++)
		cf_write(a, i, true, 0);
	ret = cf_batch(a, a->o.batch, true);
	n = s->nmr;
	for (i = 0; i < n; i++)
		cf_write(a, i, false, s->mr[i]);
	s->nmr = 0;
	return cf_batch(a, n, false) ?: ret;
}

/* MRs a failed batch left registered */
static void ctrl_flood_stop(struct attack *a)
{
	struct ctrl_flood *s = a->priv;

	while (s && s->nmr)
		atk_dereg(a, s->mr[--s->nmr]);
}

const struct attack_ops atk_ctrl_flood = {
    .name = "ctrl-flood",
    .start = ctrl_flood_start,
    .step = ctrl_flood_step,
    .stop = ctrl_flood_stop,
};
