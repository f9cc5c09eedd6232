/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Adaptive busy polling (latency mode, [daemon] busy-poll-us). A QP whose
 * doorbell rang stays "hot" for busy-poll-us after its last new WQE: its
 * db_pending stays set, so the guest posts without doorbell records or
 * kicks, and the back-end reads the SQ producer itself, in slices of a few
 * tens of microseconds between main-loop iterations (so vhost-user, other
 * VMs and the overlay socket are still served). When the QP stays idle
 * for the window, db_pending is cleared (then the producer read once more,
 * as after a kick) and the QP waits for doorbells again: CPU is spent only
 * while traffic flows. An engine with a poll hook (host verbs) also gets
 * its other doorbell-free work polled: receives posted meanwhile and the
 * host device's completions. A slice that found nothing yields the CPU
 * once, for hosts with fewer cores than spinning processes.
 *
 * The doorbell side owns it (doorbell.c hands it hot QPs): an engine
 * takes part only through its ops' poll hook (engine.h).
 */
#ifndef PVO_BUSY_POLL_H
#define PVO_BUSY_POLL_H

#include <stdbool.h>
#include <stdint.h>

struct pvo_qp;

/* 0 turns busy polling off (the default: eventfd waits only). */
void pvo_busy_poll_init(uint32_t usec);
bool pvo_busy_poll_on(void);

/* qp's doorbell record was popped: keep polling it (db_pending set). */
void pvo_busy_poll_add(struct pvo_qp *qp);

#endif
