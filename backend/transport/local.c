// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Local transport: the destination VM is served by this daemon. The
 * route is tenant-scoped: only a VM of the sender's tenant (same VNI) that
 * has the destination GID installed is a destination, so a guest cannot
 * reach another tenant's QPs even if it knows their GID, QPN and rkey.
 * The responder runs right away and copies straight from the sender's
 * pages into the receiver's; its answer goes back to the completer before
 * send returns.
 */
#include <string.h>
#include <glib.h>

#include "profile.h"
#include "qp.h"
#include "transport.h"
#include "vm.h"

/* Every VM this daemon serves; all on the main loop. */
static GPtrArray *served;
/* Counts changes of what a route depends on; 0 is never current. */
static uint64_t routes_gen = 1;

void pvo_local_register(struct pvo_vm *vm)
{
	if (!served)
		served = g_ptr_array_new();
	g_ptr_array_add(served, vm);
	pvo_local_routes_changed();
}

void pvo_local_unregister(struct pvo_vm *vm)
{
	if (served)
		g_ptr_array_remove(served, vm);
	pvo_local_routes_changed();
}

void pvo_local_routes_changed(void)
{
	routes_gen++;
}

/* The QP's last answer while nothing it depends on changed: an RC QP
 * asks for the same GID every message. */
struct pvo_vm *pvo_local_route(struct pvo_qp *qp, const uint8_t *gid)
{
	struct pvo_qp_route *c = &qp->route;

	if (c->gen != routes_gen || memcmp(c->gid, gid, PVO_GID_LEN)) {
		c->vm = pvo_served_by_gid(qp->vm->cfg->tenant->vni, gid);
		memcpy(c->gid, gid, PVO_GID_LEN);
		c->gen = routes_gen;
	}
	return c->vm;
}

struct pvo_vm *pvo_served_by_gid(uint32_t vni, const uint8_t *gid)
{
	unsigned int i, k;

	for (i = 0; served && i < served->len; i++) {
		struct pvo_vm *v = g_ptr_array_index(served, i);

		if (!v->connected || v->cfg->tenant->vni != vni)
			continue;
		for (k = 0; k < PVO_GID_TABLE_LEN; k++)
			if (v->gids.e[k].valid &&
			    memcmp(v->gids.e[k].gid, gid, PVO_GID_LEN) == 0)
				return v;
	}
	return NULL;
}

static bool local_send(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct pvo_vm *dvm = pvo_local_route(qp, pkt->dgid);
	struct pvo_reply r = {.code = PVO_REPLY_NONE};
	struct pvo_qp *dqp;

	pvo_prof_mark(PVO_PROF_BUILD);
	if (!dvm)
		return false;
	dqp = pvo_qp_by_qpn(dvm, pkt->dst_qpn);
	if (dqp)
		pvo_resp_receive(dqp, pkt, &r);
	pvo_comp_reply(qp, &r);
	/* Only now, so that a QP talking to itself completes the request
	 * with the NAK's status before the error flushes it. */
	if (dqp && r.responder_error)
		pvo_qp_set_error(dqp, r.responder_event, false);
	pvo_prof_end(pkt->payload_len);
	return true;
}

const struct pvo_transport_ops pvo_transport_local = {
	.name = "local",
	.send = local_send,
};
