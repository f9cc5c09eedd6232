// SPDX-License-Identifier: GPL-2.0-or-later
/* Transport selection; see transport.h. */
#include <string.h>

#include "transport.h"

/* Tried in order: a peer on this host never goes over the wire. */
static const struct pvo_transport_ops *const transports[] = {
	&pvo_transport_local,
	&pvo_transport_overlay,
};

void pvo_transport_send(struct pvo_qp *qp, struct pvo_pkt *pkt)
{
	struct pvo_reply none = {.code = PVO_REPLY_NONE};
	unsigned int i;

	for (i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (transports[i]->send(qp, pkt))
			return;
	pvo_comp_reply(qp, &none);
}
