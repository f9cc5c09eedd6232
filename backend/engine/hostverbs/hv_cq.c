// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host CQs: one per guest CQ that a host QP uses, on the device's one
 * completion channel. Every host WQE is signaled (the guest's SQ cons
 * must pass each WQE in order), so a host CQ holds up to every WQE of
 * its QPs: it grows with them. Its completions become guest CQEs in
 * hv_qp.c.
 */
#include <errno.h>
#include <glib.h>

#include "cq.h"
#include "hv.h"
#include "log.h"
#include "qp.h"
#include "vm.h"

struct ibv_cq *pvo_hv_cq(struct pvo_vm *vm, struct pvo_cq *cq)
{
	struct pvo_hv_device *d = pvo_hv_dev(vm->cfg->tenant);
	struct pvo_hv_cq *h;

	if (to_hv_cq(cq))
		return to_hv_cq(cq)->cq;
	h = g_new0(struct pvo_hv_cq, 1);
	h->dev = d;
	h->cq = ibv_create_cq(d->ctx, (int)cq->ring.entries, cq, d->channel, 0);
	if (!h->cq || ibv_req_notify_cq(h->cq, 0)) {
		pvo_vm_warn(vm, "hostverbs: %s: CQ of %u entries: %s", d->name,
			    cq->ring.entries, g_strerror(errno));
		if (h->cq)
			ibv_destroy_cq(h->cq);
		g_free(h);
		return NULL;
	}
	cq->engine_part = h;
	return h->cq;
}

bool pvo_hv_cq_grow(struct pvo_vm *vm, struct pvo_cq *cq, uint32_t more)
{
	struct pvo_hv_cq *h = to_hv_cq(cq);
	uint32_t need = h->need + more;

	if (need > (uint32_t)h->cq->cqe && ibv_resize_cq(h->cq, (int)need)) {
		pvo_vm_warn(vm, "hostverbs: %s: CQ of %d entries to %u: %s",
			    h->dev->name, h->cq->cqe, need, g_strerror(errno));
		return false;
	}
	h->need = need;
	return true;
}

void pvo_hv_cq_free(struct pvo_cq *cq)
{
	if (!to_hv_cq(cq))
		return;
	/* events are acknowledged as they come: nothing holds it */
	if (ibv_destroy_cq(to_hv_cq(cq)->cq))
		pvo_log(NULL, "hostverbs: ibv_destroy_cq: %s",
			g_strerror(errno));
	g_free(to_hv_cq(cq));
	cq->engine_part = NULL;
}

static unsigned int poll_cq(struct pvo_hv_device *d, struct ibv_cq *c)
{
	struct ibv_wc wc[16];
	unsigned int got = 0;
	int i, n;

	do {
		n = ibv_poll_cq(c, G_N_ELEMENTS(wc), wc);
		for (i = 0; i < n; i++) {
			struct pvo_qp *qp =
			    pvo_hv_qp_by_host_qpn(d, wc[i].qp_num);

			if (qp)
				pvo_hv_qp_complete(qp, &wc[i]);
		}
		got += n > 0 ? (unsigned int)n : 0;
	} while (n == (int)G_N_ELEMENTS(wc));
	return got;
}

unsigned int pvo_hv_cq_poll(struct pvo_cq *cq)
{
	return to_hv_cq(cq) ? poll_cq(to_hv_cq(cq)->dev, to_hv_cq(cq)->cq) : 0;
}

unsigned int pvo_hv_qp_poll(struct pvo_qp *qp)
{
	unsigned int got = pvo_hv_cq_poll(qp->scq);

	if (qp->rcq != qp->scq)
		got += pvo_hv_cq_poll(qp->rcq);
	return got;
}

void pvo_hv_cq_events(struct pvo_hv_device *d)
{
	struct ibv_cq *c;
	void *ctx;

	while (ibv_get_cq_event(d->channel, &c, &ctx) == 0) {
		ibv_ack_cq_events(c, 1);
		/* armed again before polling: nothing arrives unseen */
		ibv_req_notify_cq(c, 0);
		poll_cq(d, c);
	}
}
