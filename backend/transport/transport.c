// SPDX-License-Identifier: GPL-2.0-or-later
/* Transport selection; see transport.h. */
#include <string.h>

#include "mcast.h"
#include "overlay.h"
#include "overlay_map.h"
#include "qp.h"
#include "transport.h"
#include "vm.h"

/* Tried in order: a peer on this host never goes over the wire. */
static const struct pvo_transport_ops *const transports[] = {
	&pvo_transport_local,
	&pvo_transport_overlay,
};
#define NTRANSPORTS (sizeof(transports) / sizeof(transports[0]))

/* Calls an optional hook of every transport that has it. */
#define EACH_TRANSPORT(hook, ...)                                      \
	do {                                                           \
		unsigned int i_;                                       \
		for (i_ = 0; i_ < NTRANSPORTS; i_++)                   \
			if (transports[i_]->hook)                      \
				transports[i_]->hook(__VA_ARGS__);     \
	} while (0)

void pvo_transport_send(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct pvo_reply none = {.code = PVO_REPLY_NONE};
	unsigned int i;

	if (pkt->qp_type == PVO_QPT_UD && pvo_gid_is_multicast(pkt->dgid)) {
		/* IB: a group datagram names QPN 0xffffff, or goes nowhere */
		if (pkt->dst_qpn == PVO_MCAST_QPN)
			EACH_TRANSPORT(send_mcast, qp, pkt);
		pvo_comp_reply(qp, &none);
		return;
	}
	for (i = 0; i < NTRANSPORTS; i++)
		if (transports[i]->send(qp, pkt))
			return;
	pvo_comp_reply(qp, &none);
}

bool pvo_transport_can_send_ahead(struct pvo_qp *qp)
{
	unsigned int i;

	for (i = 0; i < NTRANSPORTS; i++)
		if (transports[i]->can_send_ahead &&
		    transports[i]->can_send_ahead(qp))
			return true;
	return false;
}

void pvo_transport_flush(void)
{
	EACH_TRANSPORT(flush);
}

void pvo_transport_thawed(struct pvo_vm *vm)
{
	struct pvo_qp *qp;
	uint32_t h = 0;

	while ((h = pvo_table_next(&vm->qps, h, (void **)&qp))) {
		if (qp->type != PVO_QPT_RC || !pvo_qp_receives(qp))
			continue;
		if (pvo_served_by_gid(vm->cfg->tenant->vni,
				      qp->attr.path.dgid))
			pvo_local_thawed(qp);
		else if (pvo_overlay_enabled())
			pvo_ov_receiver_resync(qp);
	}
	pvo_transport_flush();
}

void pvo_transport_reset_qp(struct pvo_qp *qp)
{
	EACH_TRANSPORT(reset_qp, qp);
}

void pvo_transport_forget_qp(struct pvo_qp *qp)
{
	EACH_TRANSPORT(forget_qp, qp);
}

void pvo_transport_save_qp(const struct pvo_qp *qp, struct pvo_st_qp *rec)
{
	EACH_TRANSPORT(save_qp, qp, rec);
}

bool pvo_transport_load_qp(struct pvo_qp *qp, const struct pvo_st_qp *rec,
			   struct pvo_st_loader *l)
{
	unsigned int i;

	for (i = 0; i < NTRANSPORTS; i++)
		if (transports[i]->load_qp &&
		    !transports[i]->load_qp(qp, rec, l))
			return false;
	return true;
}

bool pvo_transport_vm_of_ours(uint32_t vni, uint32_t ip)
{
	struct pvo_map_entry e;

	return ip && pvo_map_get(vni, ip, &e);
}
