// SPDX-License-Identifier: GPL-2.0-or-later
/* Timers; see timer.h. */
#include "loop.h"
#include "timer.h"

/* The timers of one loop: a min-heap behind one GSource. */
struct timers {
	GArray *heap; /* struct pvo_timer *, earliest deadline first */
	GSource *source;
};

struct heap_source {
	GSource src;
	struct timers *tm;
};

static struct pvo_timer *at(struct timers *tm, unsigned int i)
{
	return g_array_index(tm->heap, struct pvo_timer *, i);
}

static void put(struct timers *tm, unsigned int i, struct pvo_timer *t)
{
	g_array_index(tm->heap, struct pvo_timer *, i) = t;
	t->slot = i + 1;
}

/* Moves the timer at i up or down until the heap is ordered again. */
static void sift(struct timers *tm, unsigned int i)
{
	struct pvo_timer *t = at(tm, i);
	unsigned int n = tm->heap->len;

	while (i > 0 && at(tm, (i - 1) / 2)->deadline > t->deadline) {
		put(tm, i, at(tm, (i - 1) / 2));
		i = (i - 1) / 2;
	}
	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && at(tm, c + 1)->deadline < at(tm, c)->deadline)
			c++;
		if (at(tm, c)->deadline >= t->deadline)
			break;
		put(tm, i, at(tm, c));
		i = c;
	}
	put(tm, i, t);
}

static void unlink_timer(struct timers *tm, struct pvo_timer *t)
{
	unsigned int i = t->slot - 1, last = tm->heap->len - 1;

	t->slot = 0;
	if (i != last) {
		put(tm, i, at(tm, last));
		g_array_set_size(tm->heap, last);
		sift(tm, i);
	} else {
		g_array_set_size(tm->heap, last);
	}
}

static gboolean heap_prepare(GSource *src, gint *timeout)
{
	struct timers *tm = ((struct heap_source *)src)->tm;
	gint64 wait;

	if (!tm->heap->len) {
		*timeout = -1;
		return FALSE;
	}
	wait = at(tm, 0)->deadline - g_source_get_time(src);
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
	struct timers *tm = ((struct heap_source *)src)->tm;

	return tm->heap->len && at(tm, 0)->deadline <= g_source_get_time(src);
}

static gboolean heap_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	struct timers *tm = ((struct heap_source *)src)->tm;
	gint64 now = g_get_monotonic_time();
	/* the timers due now, once each: one re-armed with 0 by its own
	 * callback waits for the next iteration, after the other sources */
	unsigned int budget = tm->heap->len;

	while (budget-- && tm->heap->len && at(tm, 0)->deadline <= now) {
		struct pvo_timer *t = at(tm, 0);

		unlink_timer(tm, t);
		t->fn(t->opaque);
	}
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs heap_funcs = {
    .prepare = heap_prepare,
    .check = heap_check,
    .dispatch = heap_dispatch,
};

static void timers_init(void *data)
{
	struct timers *tm = data;

	tm->heap = g_array_new(FALSE, FALSE, sizeof(struct pvo_timer *));
	tm->source = g_source_new(&heap_funcs, sizeof(struct heap_source));
	((struct heap_source *)tm->source)->tm = tm;
	g_source_set_name(tm->source, "pvo timers");
	pvo_loop_attach(tm->source);
}

static void timers_fini(void *data)
{
	struct timers *tm = data;

	g_source_destroy(tm->source);
	g_source_unref(tm->source);
	g_array_free(tm->heap, TRUE);
}

/* The calling thread's loop's timers. */
static struct timers *timers(void)
{
	return pvo_loop_state(PVO_LOOP_TIMERS, sizeof(struct timers),
			      timers_init, timers_fini);
}

void pvo_timer_init(struct pvo_timer *t, void (*fn)(void *opaque), void *opaque)
{
	t->fn = fn;
	t->opaque = opaque;
	t->deadline = 0;
	t->slot = 0;
	timers(); /* the loop's source exists before a timer is armed */
}

void pvo_timer_arm(struct pvo_timer *t, uint64_t usec)
{
	struct timers *tm = timers();

	t->deadline = g_get_monotonic_time() + (gint64)MIN(usec, 1ull << 50);
	if (!t->slot) {
		g_array_set_size(tm->heap, tm->heap->len + 1);
		put(tm, tm->heap->len - 1, t);
	}
	sift(tm, t->slot - 1);
}

void pvo_timer_cancel(struct pvo_timer *t)
{
	if (t->slot)
		unlink_timer(timers(), t);
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
