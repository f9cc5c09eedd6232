// SPDX-License-Identifier: GPL-2.0-or-later
/* Timers; see timer.h. */
#include "timer.h"

struct timer_source {
	GSource base;
	struct pvo_timer *t;
};

static gboolean timer_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	struct pvo_timer *t = ((struct timer_source *)src)->t;

	g_source_set_ready_time(src, -1); /* one shot */
	t->armed = false;
	t->fn(t->opaque);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs timer_funcs = {
	.dispatch = timer_dispatch,
};

void pvo_timer_init(struct pvo_timer *t, void (*fn)(void *opaque), void *opaque)
{
	t->fn = fn;
	t->opaque = opaque;
	t->armed = false;
	t->src = g_source_new(&timer_funcs, sizeof(struct timer_source));
	((struct timer_source *)t->src)->t = t;
	g_source_set_ready_time(t->src, -1);
	g_source_attach(t->src, NULL);
}

void pvo_timer_arm(struct pvo_timer *t, uint64_t usec)
{
	g_source_set_ready_time(t->src, g_get_monotonic_time() + usec);
	t->armed = true;
}

void pvo_timer_cancel(struct pvo_timer *t)
{
	if (t->src && t->armed)
		g_source_set_ready_time(t->src, -1);
	t->armed = false;
}

bool pvo_timer_armed(const struct pvo_timer *t)
{
	return t->src && t->armed;
}

void pvo_timer_destroy(struct pvo_timer *t)
{
	if (!t->src)
		return;
	g_source_destroy(t->src);
	g_source_unref(t->src);
	t->src = NULL;
	t->armed = false;
}

/* Microseconds * 100 of each RNR timer code (IB spec, 9.7.5.2.8). */
/* clang-format off */
static const uint32_t rnr_centi_usec[32] = {
	65536000, 1000, 2000, 3000,
	4000, 6000, 8000, 12000,
	16000, 24000, 32000, 48000,
	64000, 96000, 128000, 192000,
	256000, 384000, 512000, 768000,
	1024000, 1536000, 2048000, 3072000,
	4096000, 6144000, 8192000, 12288000,
	16384000, 24576000, 32768000, 49152000,
};
/* clang-format on */

uint64_t pvo_rnr_timer_usec(unsigned int code)
{
	return rnr_centi_usec[code & 31] / 100;
}

uint64_t pvo_ack_timeout_usec(unsigned int code)
{
	code &= 31;
	if (!code)
		return 0;
	/* 4.096 us = 4096 ns */
	return (4096ull << code) / 1000;
}
