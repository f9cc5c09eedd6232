// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Module state per event loop (core/loop.h): two loops on two main
 * contexts keep their own timers and busy-poll settings, a module's slot
 * is made once per loop and undone when the loop is freed, and a thread
 * that entered no loop gets one of its own. fd watches (one epoll set per
 * loop): events reach their callback, a watch removed by an earlier
 * callback of the same wake-up is not called, G_SOURCE_REMOVE ends one,
 * and an fd epoll cannot wait on is refused, not watched.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
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

struct fd_probe {
	int calls;
	GIOCondition cond;
	struct pvo_watch *victim; /* removed by this callback */
	gboolean ret;
};

static gboolean on_fd(int fd, GIOCondition cond, void *data)
{
	struct fd_probe *p = data;
	uint64_t v;

	p->calls++;
	p->cond = cond;
	if (cond & G_IO_IN && read(fd, &v, sizeof(v)) != sizeof(v))
		p->calls += 100;
	pvo_loop_remove_fd(p->victim);
	p->victim = NULL;
	return p->ret;
}

static void kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

/* The fd watches of the loop on ctx (entered). */
static void test_fd_watches(GMainContext *ctx)
{
	int e1 = eventfd(0, EFD_NONBLOCK), e2 = eventfd(0, EFD_NONBLOCK);
	struct fd_probe p1 = {.ret = G_SOURCE_CONTINUE},
			p2 = {.ret = G_SOURCE_CONTINUE};
	struct pvo_watch *w1 = pvo_loop_add_fd(e1, G_IO_IN, on_fd, &p1);
	struct pvo_watch *w2 = pvo_loop_add_fd(e2, G_IO_IN, on_fd, &p2);
	char path[] = "/tmp/t-loop-XXXXXX";
	int file = mkstemp(path);

	spin(ctx, 5);
	tap_ok(w1 && w2 && !p1.calls && !p2.calls,
	       "fd watches wait while their fds are quiet");
	kick(e1);
	spin(ctx, 5);
	tap_ok(p1.calls == 1 && p1.cond == G_IO_IN && !p2.calls,
	       "a readable fd calls its watch once, with G_IO_IN (%d calls)",
	       p1.calls);

	/* both ready in one wake-up; whichever runs first removes the other */
	p1.victim = w2;
	p2.victim = w1;
	kick(e1);
	kick(e2);
	spin(ctx, 5);
	tap_ok(p1.calls + p2.calls == 2,
	       "a watch removed by another's callback in the same wake-up "
	       "is not called (%d + %d calls)",
	       p1.calls - 1, p2.calls);
	pvo_loop_remove_fd(p1.calls == 2 ? w1 : w2);

	p1 = (struct fd_probe){.ret = G_SOURCE_REMOVE};
	w1 = pvo_loop_add_fd(e1, G_IO_IN, on_fd, &p1);
	kick(e1);
	spin(ctx, 5);
	kick(e1);
	spin(ctx, 5);
	tap_ok(w1 && p1.calls == 1,
	       "G_SOURCE_REMOVE ends a watch; the fd can be watched again "
	       "(%d calls)",
	       p1.calls);

	errno = 0;
	w2 = file >= 0 ? pvo_loop_add_fd(file, G_IO_IN, on_fd, &p2) : NULL;
	tap_ok(file >= 0 && !w2 && errno == EPERM,
	       "a regular file is refused with EPERM (%s)", g_strerror(errno));
	if (file >= 0) {
		close(file);
		unlink(path);
	}
	close(e1);
	close(e2);
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

	tap_plan(18);

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
	test_fd_watches(ca);

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
