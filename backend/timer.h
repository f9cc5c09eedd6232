/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One-shot timers on the glib main loop (RNR back-off, local ACK timeout),
 * and the IB encodings of those times.
 */
#ifndef PVO_TIMER_H
#define PVO_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

struct pvo_timer {
	GSource *src;
	void (*fn)(void *opaque);
	void *opaque;
	/* mirrors the source's ready time != -1: cancelling an idle timer,
	 * which the data path does once per message, then costs no
	 * main-context lock */
	bool armed;
};

void pvo_timer_init(struct pvo_timer *t, void (*fn)(void *opaque),
		    void *opaque);
/* (Re)arms the timer to fire once, usec from now. */
void pvo_timer_arm(struct pvo_timer *t, uint64_t usec);
void pvo_timer_cancel(struct pvo_timer *t);
bool pvo_timer_armed(const struct pvo_timer *t);
void pvo_timer_destroy(struct pvo_timer *t);

/* RNR NAK timer field (IB spec table "RNR timer values"): 5 bits. */
uint64_t pvo_rnr_timer_usec(unsigned int code);
/* Local ACK timeout: 4.096 us * 2^code; 0 means infinite (returns 0). */
uint64_t pvo_ack_timeout_usec(unsigned int code);

#endif
