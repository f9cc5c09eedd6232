/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One-shot timers on the glib main loop (RNR back-off, local ACK timeout,
 * the requester's "go on after the budget"), and the IB encodings of those
 * times.
 *
 * A loop's timers sit in one min-heap behind one GSource, which tells the
 * loop how long it may sleep (core/loop.h: one heap per loop). Arming or cancelling a timer only reorders the
 * heap: the data path arms and cancels about once per doorbell, and a
 * GSource of its own per timer cost a wake-up write (a system call) on
 * every g_source_set_ready_time. A timer belongs to the loop of the
 * thread that armed it.
 */
#ifndef PVO_TIMER_H
#define PVO_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

struct pvo_timer {
	void (*fn)(void *opaque);
	void *opaque;
	gint64 deadline;   /* g_get_monotonic_time() it is due at */
	unsigned int slot; /* heap index + 1 while armed, else 0 */
};

void pvo_timer_init(struct pvo_timer *t, void (*fn)(void *opaque),
		    void *opaque);
/* (Re)arms the timer to fire once, usec from now. */
void pvo_timer_arm(struct pvo_timer *t, uint64_t usec);
void pvo_timer_cancel(struct pvo_timer *t);
bool pvo_timer_armed(const struct pvo_timer *t);
/* Cancels; the timer may be freed after. */
void pvo_timer_destroy(struct pvo_timer *t);

/* RNR NAK timer field (IB spec table "RNR timer values"): 5 bits. */
uint64_t pvo_rnr_timer_usec(unsigned int code);
/* Local ACK timeout: 4.096 us * 2^code; 0 means infinite (returns 0). */
uint64_t pvo_ack_timeout_usec(unsigned int code);

#endif
