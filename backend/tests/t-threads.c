// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Data-path threads (core/threads.h) and the overlay's inbox between them
 * (transport/overlay/handoff.h): a started thread runs its own loop, a
 * pause waits for the callback a thread is in and holds every later one
 * until the resume, the entered loop is the one sources land on, and an
 * inbox delivers datagrams in order, whole, on its own thread, and drops
 * (refuses) what exceeds its bound.
 */
#include <string.h>
#include <unistd.h>
#include <glib.h>

#include "handoff.h"
#include "loop.h"
#include "tap.h"
#include "threads.h"
#include "timer.h"

static gint ticks;	  /* timer callbacks on thread 2 */
static gint slow_started, slow_done; /* the slow callback's progress */
static GThread *ran_on;	  /* where the timer ran */

static void on_tick(void *opaque)
{
	struct pvo_timer *t = opaque;

	ran_on = g_thread_self();
	g_atomic_int_inc(&ticks);
	pvo_timer_arm(t, 1000);
}

static gboolean slow(gpointer unused)
{
	g_atomic_int_set(&slow_started, 1);
	g_usleep(200 * 1000);
	g_atomic_int_set(&slow_done, 1);
	return G_SOURCE_REMOVE;
}

/* what thread 2's inbox delivered */
static struct {
	unsigned int n, bad, batches;
	GThread *on;
} got;

static void inbox_input(const uint8_t *buf, size_t len,
			const struct sockaddr_in *from)
{
	uint32_t seq;

	got.on = g_thread_self();
	memcpy(&seq, buf, sizeof(seq));
	if (len != 100 + seq % 900 || seq != got.n ||
	    from->sin_port != htons(seq & 0xffff) ||
	    buf[len - 1] != (uint8_t)seq)
		got.bad++;
	got.n++;
}

static void inbox_done(void)
{
	got.batches++;
}

static bool post(unsigned int thread, uint32_t seq)
{
	uint8_t buf[1000] = { 0 };
	struct sockaddr_in from = { .sin_family = AF_INET,
				    .sin_port = htons(seq & 0xffff) };
	size_t len = 100 + seq % 900;

	memcpy(buf, &seq, sizeof(seq));
	buf[len - 1] = (uint8_t)seq;
	return pvo_handoff_post(thread, buf, len, &from);
}

static bool wait_for(unsigned int *v, unsigned int want, int ms)
{
	while (g_atomic_int_get((gint *)v) < (gint)want && ms-- > 0)
		g_usleep(1000);
	return g_atomic_int_get((gint *)v) >= (gint)want;
}

int main(void)
{
	struct pvo_timer tick = { 0 };
	struct pvo_loop *was;
	char *err = NULL;
	unsigned int i, refused = 0;
	gint before;
	bool ok;

	tap_plan(14);
	pvo_loop_enter(pvo_loop_new(NULL));
	tap_is(pvo_threads_count(), 1, "one thread before start");
	ok = pvo_threads_start(2, &err);
	tap_ok(ok && pvo_threads_count() == 2, "two threads started (%s)",
	       err ? err : "ok");
	tap_ok(pvo_thread_loop(1) && pvo_thread_loop(1) != pvo_loop(),
	       "thread 2 has a loop of its own");

	/* a timer attached with thread 2's loop entered runs there */
	pvo_threads_pause();
	was = pvo_thread_enter(1);
	pvo_timer_init(&tick, on_tick, &tick);
	pvo_timer_arm(&tick, 1000);
	pvo_thread_leave(was);
	pvo_threads_resume();
	tap_ok(wait_for((unsigned int *)&ticks, 5, 2000),
	       "a timer armed in thread 2's loop ticks");
	tap_ok(ran_on && ran_on != g_thread_self(),
	       "... on thread 2, not on the caller");

	/* a pause waits for the callback under way, holds the later ones */
	g_main_context_invoke(pvo_thread_loop(1)->ctx, slow, NULL);
	wait_for((unsigned int *)&slow_started, 1, 5000);
	pvo_threads_pause();
	tap_ok(g_atomic_int_get(&slow_done),
	       "a pause returns only after thread 2's running callback");
	before = g_atomic_int_get(&ticks);
	g_usleep(50 * 1000);
	tap_is(g_atomic_int_get(&ticks), before,
	       "no callback of thread 2 runs while the world is paused");
	pvo_threads_pause(); /* nested */
	pvo_threads_resume();
	g_usleep(20 * 1000);
	tap_is(g_atomic_int_get(&ticks), before,
	       "an inner resume does not release the world");
	pvo_threads_resume();
	tap_ok(wait_for((unsigned int *)&ticks, before + 3, 2000),
	       "after the outer resume thread 2 runs again");

	/* the inbox: opened on thread 2; filled while it is parked */
	pvo_threads_pause();
	was = pvo_thread_enter(1);
	ok = pvo_handoff_open(1, inbox_input, inbox_done, &err);
	pvo_thread_leave(was);
	tap_ok(ok, "thread 2's inbox opens (%s)", err ? err : "ok");
	for (i = 0; i < PVO_HANDOFF_SLOTS + 10; i++)
		refused += !post(1, i);
	tap_ok(refused == 10,
	       "an inbox holds %u datagrams; the %u beyond are refused",
	       PVO_HANDOFF_SLOTS, refused);
	pvo_threads_resume();
	tap_ok(wait_for(&got.n, PVO_HANDOFF_SLOTS, 5000) && !got.bad,
	       "thread 2 takes in all %u, in order and whole (%u wrong)",
	       got.n, got.bad);
	tap_ok(got.on && got.on != g_thread_self() &&
		       got.batches >= PVO_HANDOFF_SLOTS / PVO_HANDOFF_BATCH,
	       "... on its own thread, at most %u per wake-up (%u batches)",
	       PVO_HANDOFF_BATCH, got.batches);

	pvo_threads_pause();
	was = pvo_thread_enter(1);
	pvo_handoff_close(1);
	pvo_timer_destroy(&tick);
	pvo_thread_leave(was);
	pvo_threads_resume();
	tap_ok(!post(1, 0), "a closed inbox refuses datagrams");
	pvo_threads_stop();
	pvo_loop_free(pvo_loop());
	g_free(err);
	return tap_done();
}
