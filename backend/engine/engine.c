// SPDX-License-Identifier: GPL-2.0-or-later
/* Which engine runs a QP that arrives in a migration stream. */
#include "engine.h"
#include "qp.h"

/*
 * Only software QPs migrate: the source refuses to save a VM that holds
 * host objects (vhost/vhost_state.c), so every QP of a stream ran on the
 * software engine. An engine whose QPs can move claims its QPs here.
 */
const struct pvo_engine_ops *pvo_engine_of_loaded(const struct pvo_qp *qp)
{
	(void)qp;
	return &pvo_engine_sw;
}
