// SPDX-License-Identifier: GPL-2.0-or-later
/* Data-path threads and the paused world; see threads.h. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <glib.h>

#include "log.h"
#include "threads.h"

/* Parking goes before any other source of a thread, busy polling's
 * included, so a pause waits for one callback at most. */
#define PARK_PRIORITY (G_PRIORITY_HIGH * 10)

struct thread {
	GThread *th;
	GMainContext *ctx;
	GMainLoop *ml;
	struct pvo_loop *loop;
	unsigned int index;
	clockid_t clock;
	bool has_clock;
};

static struct {
	unsigned int n;
	struct thread t[PVO_MAX_THREADS];
	GMutex lock;
	GCond cond;
	unsigned int started; /* threads in their loop */
	unsigned int parked;
	unsigned int depth;   /* pvo_threads_pause() nesting */
	bool paused;
} w = { .n = 1 };

static __thread unsigned int self_index;

static gpointer thread_main(gpointer opaque)
{
	struct thread *t = opaque;

	self_index = t->index;
	pvo_loop_enter(t->loop);
	g_main_context_push_thread_default(t->ctx);
	t->has_clock = pthread_getcpuclockid(pthread_self(), &t->clock) == 0;
	g_mutex_lock(&w.lock);
	w.started++;
	g_cond_broadcast(&w.cond);
	g_mutex_unlock(&w.lock);
	g_main_loop_run(t->ml);
	g_main_context_pop_thread_default(t->ctx);
	pvo_loop_enter(NULL);
	return NULL;
}

static void thread_free(struct thread *t)
{
	if (t->loop) {
		struct pvo_loop *was = pvo_loop_current;

		/* slot fini functions act on the calling thread's loop */
		pvo_loop_enter(t->loop);
		pvo_loop_free(t->loop);
		pvo_loop_enter(was == t->loop ? NULL : was);
	}
	if (t->ml)
		g_main_loop_unref(t->ml);
	if (t->ctx)
		g_main_context_unref(t->ctx);
	*t = (struct thread){ 0 };
}

bool pvo_threads_start(unsigned int n, char **err)
{
	unsigned int i;

	w.t[0].loop = pvo_loop();
	w.t[0].has_clock =
	    pthread_getcpuclockid(pthread_self(), &w.t[0].clock) == 0;
	for (i = 1; i < n; i++) {
		struct thread *t = &w.t[i];
		char name[24];
		GError *gerr = NULL;

		t->index = i;
		t->ctx = g_main_context_new();
		t->ml = g_main_loop_new(t->ctx, FALSE);
		t->loop = pvo_loop_new(t->ctx);
		snprintf(name, sizeof(name), "pvo-data-%u", i);
		t->th = g_thread_try_new(name, thread_main, t, &gerr);
		if (!t->th) {
			*err = g_strdup_printf("cannot start data-path thread "
					       "%u of %u: %s (lower 'threads' "
					       "in [daemon])",
					       i, n, gerr->message);
			g_error_free(gerr);
			thread_free(t);
			w.n = i;
			pvo_threads_stop();
			return false;
		}
		w.n = i + 1;
	}
	g_mutex_lock(&w.lock);
	while (w.started < w.n - 1)
		g_cond_wait(&w.cond, &w.lock);
	g_mutex_unlock(&w.lock);
	return true;
}

void pvo_threads_stop(void)
{
	unsigned int i;

	for (i = 1; i < w.n; i++)
		g_main_loop_quit(w.t[i].ml);
	for (i = 1; i < w.n; i++) {
		g_thread_join(w.t[i].th);
		thread_free(&w.t[i]);
	}
	w.n = 1;
	w.started = 0;
	w.t[0] = (struct thread){ 0 };
}

unsigned int pvo_threads_count(void)
{
	return w.n;
}

struct pvo_loop *pvo_thread_loop(unsigned int i)
{
	if (i == 0 && !w.t[0].loop)
		return pvo_loop();
	return i < w.n ? w.t[i].loop : NULL;
}

unsigned int pvo_thread_self(void)
{
	return self_index;
}

static gboolean park(gpointer unused)
{
	g_mutex_lock(&w.lock);
	w.parked++;
	g_cond_broadcast(&w.cond);
	while (w.paused)
		g_cond_wait(&w.cond, &w.lock);
	w.parked--;
	g_cond_broadcast(&w.cond);
	g_mutex_unlock(&w.lock);
	return G_SOURCE_REMOVE;
}

void pvo_threads_pause(void)
{
	unsigned int i;

	if (w.n == 1 || w.depth++)
		return;
	g_mutex_lock(&w.lock);
	/* the last pause's threads may still be on their way out */
	while (w.parked)
		g_cond_wait(&w.cond, &w.lock);
	w.paused = true;
	for (i = 1; i < w.n; i++)
		g_main_context_invoke_full(w.t[i].ctx, PARK_PRIORITY, park,
					   NULL, NULL);
	while (w.parked < w.n - 1)
		g_cond_wait(&w.cond, &w.lock);
	g_mutex_unlock(&w.lock);
}

void pvo_threads_resume(void)
{
	if (w.n == 1 || --w.depth)
		return;
	g_mutex_lock(&w.lock);
	w.paused = false;
	g_cond_broadcast(&w.cond);
	g_mutex_unlock(&w.lock);
}

bool pvo_threads_paused(void)
{
	return w.n == 1 || w.depth;
}

struct pvo_loop *pvo_thread_enter(unsigned int i)
{
	struct pvo_loop *was = pvo_loop();

	g_assert(i < w.n && (i == self_index || pvo_threads_paused()));
	pvo_loop_enter(pvo_thread_loop(i));
	return was;
}

void pvo_thread_leave(struct pvo_loop *was)
{
	pvo_loop_enter(was);
}

unsigned long long pvo_thread_cpu_us(unsigned int i)
{
	struct timespec ts;

	if (i >= w.n || !w.t[i].has_clock ||
	    clock_gettime(w.t[i].clock, &ts))
		return 0;
	return (unsigned long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
