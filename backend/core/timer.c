// SPDX-License-Identifier: GPL-2.0-or-later
/* Timers; see timer.h. */
#include "timer.h"

static GArray *heap; /* struct pvo_timer *, earliest deadline first */
static GSource *source;

static struct pvo_timer *at(unsigned int i)
{
	return g_array_index(heap, struct pvo_timer *, i);
}

static void put(unsigned int i, struct pvo_timer *t)
{
	g_array_index(heap, struct pvo_timer *, i) = t;
	t->slot = i + 1;
}

/* Moves the timer at i up or down until the heap is ordered again. */
static void sift(unsigned int i)
{
	struct pvo_timer *t = at(i);
	unsigned int n = heap->len;

	while (i > 0 && at((i - 1) / 2)->deadline > t->deadline) {
		put(i, at((i - 1) / 2));
		i = (i - 1) / 2;
	}
	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && at(c + 1)->deadline < at(c)->deadline)
			c++;
		if (at(c)->deadline >= t->deadline)
			break;
		put(i, at(c));
		i = c;
	}
	put(i, t);
}

static void unlink_timer(struct pvo_timer *t)
{
	unsigned int i = t->slot - 1, last = heap->len - 1;

	t->slot = 0;
	if (i != last) {
		put(i, at(last));
		g_array_set_size(heap, last);
		sift(i);
	} else {
		g_array_set_size(heap, last);
	}
}

static gboolean heap_prepare(GSource *src, gint *timeout)
{
	gint64 wait;

	if (!heap->len) {
		*timeout = -1;
		return FALSE;
	}
	wait = at(0)->deadline - g_source_get_time(src);
	if (wait <= 0) {
		*timeout = 0;
		return TRUE;
	}
	/* poll() counts in ms: round up, never wake early */
	*timeout = (gint)MIN((wait + 999) / 1000, G_MAXINT);
	return FALSE;
}

static gboolean heap_check(GSource *src)
{
	return heap->len && at(0)->deadline <= g_source_get_time(src);
}

static gboolean heap_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	gint64 now = g_get_monotonic_time();
	/* the timers due now, once each: one re-armed with 0 by its own
	 * callback waits for the next iteration, after the other sources */
	unsigned int budget = heap->len;

	while (budget-- && heap->len && at(0)->deadline <= now) {
		struct pvo_timer *t = at(0);

		unlink_timer(t);
		t->fn(t->opaque);
	}
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs heap_funcs = {
    .prepare = heap_prepare,
    .check = heap_check,
    .dispatch = heap_dispatch,
};

void pvo_timer_init(struct pvo_timer *t, void (*fn)(void *opaque), void *opaque)
{
	t->fn = fn;
	t->opaque = opaque;
	t->deadline = 0;
	t->slot = 0;
	if (!source) {
		heap = g_array_new(FALSE, FALSE, sizeof(struct pvo_timer *));
		source = g_source_new(&heap_funcs, sizeof(GSource));
		g_source_set_name(source, "pvo timers");
		g_source_attach(source, NULL);
	}
}

void pvo_timer_arm(struct pvo_timer *t, uint64_t usec)
{
	t->deadline = g_get_monotonic_time() + (gint64)MIN(usec, 1ull << 50);
	if (!t->slot) {
		g_array_set_size(heap, heap->len + 1);
		put(heap->len - 1, t);
	}
	sift(t->slot - 1);
}

void pvo_timer_cancel(struct pvo_timer *t)
{
	if (t->slot)
		unlink_timer(t);
}

bool pvo_timer_armed(const struct pvo_timer *t)
{
	return t->slot != 0;
}

void pvo_timer_destroy(struct pvo_timer *t)
{
	pvo_timer_cancel(t);
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
