// SPDX-License-Identifier: GPL-2.0-or-later
/* Event loops and their modules' state; see loop.h. */
#include <stdint.h>

#include "loop.h"

__thread struct pvo_loop *pvo_loop_current;

/* The loops made for threads that entered none, reachable for leak
 * checkers: they live as long as the process. */
static GPtrArray *defaults;
G_LOCK_DEFINE_STATIC(defaults);

struct pvo_loop *pvo_loop_new(GMainContext *ctx)
{
	struct pvo_loop *l = g_new0(struct pvo_loop, 1);

	l->ctx = ctx ? g_main_context_ref(ctx) : NULL;
	return l;
}

void pvo_loop_free(struct pvo_loop *l)
{
	int s;

	if (!l)
		return;
	for (s = PVO_LOOP_NSLOTS - 1; s >= 0; s--) {
		struct pvo_loop_state *st = &l->slot[s];

		if (!st->data)
			continue;
		if (st->fini)
			st->fini(st->data);
		g_free(st->mem);
		st->data = st->mem = NULL;
	}
	if (l->ctx)
		g_main_context_unref(l->ctx);
	if (pvo_loop_current == l)
		pvo_loop_current = NULL;
	G_LOCK(defaults);
	if (defaults)
		g_ptr_array_remove_fast(defaults, l);
	G_UNLOCK(defaults);
	g_free(l);
}

void pvo_loop_enter(struct pvo_loop *l)
{
	pvo_loop_current = l;
}

struct pvo_loop *pvo_loop_default(void)
{
	struct pvo_loop *l = pvo_loop_new(NULL);

	G_LOCK(defaults);
	if (!defaults)
		defaults = g_ptr_array_new();
	g_ptr_array_add(defaults, l);
	G_UNLOCK(defaults);
	pvo_loop_current = l;
	return l;
}

void *pvo_loop_state_make(enum pvo_loop_slot s, size_t size,
			  void (*init)(void *data), void (*fini)(void *data))
{
	struct pvo_loop_state *st = &pvo_loop()->slot[s];

	/* calloc: large states (the overlay's packet buffers) get pages
	 * that are zero until touched */
	st->mem = g_malloc0(size + 64);
	st->data = (void *)(((uintptr_t)st->mem + 63) & ~(uintptr_t)63);
	st->fini = fini;
	if (init)
		init(st->data);
	return st->data;
}

void pvo_loop_attach(GSource *src)
{
	g_source_attach(src, pvo_loop()->ctx);
}

GSource *pvo_loop_add_fd(int fd, GIOCondition cond, GUnixFDSourceFunc fn,
			 void *data)
{
	GSource *src = g_unix_fd_source_new(fd, cond);

	g_source_set_callback(src, G_SOURCE_FUNC(fn), data, NULL);
	pvo_loop_attach(src);
	return src;
}

GSource *pvo_loop_add_timeout_s(unsigned int seconds, GSourceFunc fn,
				void *data)
{
	GSource *src = g_timeout_source_new_seconds(seconds);

	g_source_set_callback(src, fn, data, NULL);
	pvo_loop_attach(src);
	return src;
}

GSource *pvo_loop_add_idle(GSourceFunc fn, void *data)
{
	GSource *src = g_idle_source_new();

	g_source_set_callback(src, fn, data, NULL);
	pvo_loop_attach(src);
	return src;
}

void pvo_loop_remove(GSource *src)
{
	if (!src)
		return;
	g_source_destroy(src);
	g_source_unref(src);
}
