// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Module state per event loop (core/loop.h): two loops on two main
 * contexts keep their own timers and busy-poll settings, a module's slot
 * is made once per loop and undone when the loop is freed, and a thread
 * that entered no loop gets one of its own.
 */
#include <pthread.h>
#include <glib.h>

#include "busy_poll.h"
#include "loop.h"
#include "tap.h"
#include "timer.h"

static int inits, finis;

static void slot_init(void *data)
{
	inits++;
	*(int *)data = 42;
}

static void slot_fini(void *data)
{
	finis += *(int *)data == 42;
}

static void on_timer(void *opaque)
{
	(*(int *)opaque)++;
}

/* Runs ctx without blocking for about ms milliseconds. */
static void spin(GMainContext *ctx, int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000;

	while (g_get_monotonic_time() < end)
		g_main_context_iteration(ctx, FALSE);
}

static void *other_thread(void *arg)
{
	struct pvo_loop **seen = arg;

	*seen = pvo_loop();
	pvo_busy_poll_init(0);
	seen[1] = (struct pvo_loop *)(uintptr_t)pvo_busy_poll_on();
	return NULL;
}

int main(void)
{
	GMainContext *ca = g_main_context_new(), *cb = g_main_context_new();
	struct pvo_loop *a = pvo_loop_new(ca), *b = pvo_loop_new(cb);
	struct pvo_loop *seen[2] = { NULL, NULL };
	struct pvo_timer ta, tb;
	int fired_a = 0, fired_b = 0;
	pthread_t th;
	int *p, *q;

	tap_plan(13);

	pvo_loop_enter(a);
	tap_ok(pvo_loop() == a, "the entered loop is the thread's");
	p = pvo_loop_state(PVO_LOOP_PROFILE, sizeof(int), slot_init,
			   slot_fini);
	q = pvo_loop_state(PVO_LOOP_PROFILE, sizeof(int), slot_init,
			   slot_fini);
	tap_ok(p == q && *p == 42 && inits == 1,
	       "a slot is made once per loop, by its init");
	tap_ok(((uintptr_t)p & 63) == 0, "slot state is cache-line aligned");
	pvo_busy_poll_init(200);
	pvo_timer_init(&ta, on_timer, &fired_a);
	pvo_timer_arm(&ta, 1000);

	pvo_loop_enter(b);
	tap_ok(pvo_loop() == b, "another loop entered");
	tap_ok(!pvo_busy_poll_on(), "busy polling is set per loop");
	q = pvo_loop_state(PVO_LOOP_PROFILE, sizeof(int), slot_init,
			   slot_fini);
	tap_ok(q != p && inits == 2, "each loop has its own slot state");
	pvo_timer_init(&tb, on_timer, &fired_b);
	pvo_timer_arm(&tb, 50000);

	spin(ca, 20);
	tap_ok(fired_a == 1 && fired_b == 0,
	       "running loop a fires a's timer only (a %d, b %d)", fired_a,
	       fired_b);
	spin(cb, 100);
	tap_ok(fired_b == 1 && fired_a == 1,
	       "running loop b fires b's (a %d, b %d)", fired_a, fired_b);

	pvo_loop_enter(a);
	tap_ok(pvo_busy_poll_on(), "loop a kept its busy-poll window");

	if (pthread_create(&th, NULL, other_thread, seen) == 0) {
		pthread_join(th, NULL);
		tap_ok(seen[0] && seen[0] != a && seen[0] != b,
		       "a thread that entered no loop gets its own");
	} else {
		tap_ok(false, "pthread_create");
	}
	tap_ok(pvo_busy_poll_on(),
	       "its settings do not reach this thread's loop");

	pvo_loop_free(b);
	tap_ok(finis == 1, "freeing a loop undoes its slots (fini)");
	tap_ok(pvo_loop() == a, "freeing another loop keeps the entered one");
	pvo_loop_free(a);
	g_main_context_unref(ca);
	g_main_context_unref(cb);
	return tap_done();
}
