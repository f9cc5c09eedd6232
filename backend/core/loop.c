// SPDX-License-Identifier: GPL-2.0-or-later
/* Event loops and their modules' state; see loop.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

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

static void fd_set_free(struct pvo_fd_set *fs);

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
	fd_set_free(l->fds);
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

/* ---- fd watches ---- */

struct pvo_watch {
	int fd;
	GUnixFDSourceFunc fn;
	void *data;
	bool dead;
	struct pvo_watch *next_dead;
};

struct pvo_fd_set {
	GSource *src;
	int epfd;
	unsigned int dispatching; /* nesting of dispatch() */
	struct pvo_watch *dead;	  /* removed while dispatching */
};

struct fd_source {
	GSource base;
	struct pvo_fd_set *fs;
	gpointer tag;
};

#define EPOLL_CONDS (G_IO_IN | G_IO_OUT | G_IO_PRI | G_IO_ERR | G_IO_HUP)
/* the same bits: POLLIN, POLLOUT, ... */
G_STATIC_ASSERT((int)EPOLLIN == (int)G_IO_IN &&
		(int)EPOLLOUT == (int)G_IO_OUT &&
		(int)EPOLLPRI == (int)G_IO_PRI &&
		(int)EPOLLERR == (int)G_IO_ERR &&
		(int)EPOLLHUP == (int)G_IO_HUP);

static gboolean fd_prepare(GSource *src, gint *timeout)
{
	*timeout = -1;
	return FALSE;
}

static gboolean fd_check(GSource *src)
{
	struct fd_source *s = (struct fd_source *)src;

	return (g_source_query_unix_fd(src, s->tag) & G_IO_IN) != 0;
}

static gboolean fd_dispatch(GSource *src, GSourceFunc cb, gpointer unused)
{
	struct pvo_fd_set *fs = ((struct fd_source *)src)->fs;
	struct epoll_event ev[64];
	int i, n;

	n = epoll_wait(fs->epfd, ev, G_N_ELEMENTS(ev), 0);
	fs->dispatching++;
	for (i = 0; i < n; i++) {
		struct pvo_watch *w = ev[i].data.ptr;

		/* an earlier callback of this batch may have removed it */
		if (w->dead)
			continue;
		if (!w->fn(w->fd, (GIOCondition)(ev[i].events & EPOLL_CONDS),
			   w->data))
			pvo_loop_remove_fd(w);
	}
	if (!--fs->dispatching) {
		while (fs->dead) {
			struct pvo_watch *w = fs->dead;

			fs->dead = w->next_dead;
			g_free(w);
		}
	}
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs fd_funcs = {
    .prepare = fd_prepare,
    .check = fd_check,
    .dispatch = fd_dispatch,
};

static struct pvo_fd_set *loop_fds(void)
{
	struct pvo_loop *l = pvo_loop();
	struct pvo_fd_set *fs = l->fds;
	struct fd_source *s;

	if (fs)
		return fs;
	fs = g_new0(struct pvo_fd_set, 1);
	fs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (fs->epfd < 0) {
		g_free(fs);
		return NULL;
	}
	fs->src = g_source_new(&fd_funcs, sizeof(struct fd_source));
	s = (struct fd_source *)fs->src;
	s->fs = fs;
	s->tag = g_source_add_unix_fd(fs->src, fs->epfd, G_IO_IN);
	/* nothing runs the loop from a callback: without this, glib would
	 * take the epoll fd out of its poll set around every dispatch and
	 * write its wake-up eventfd twice doing so */
	g_source_set_can_recurse(fs->src, TRUE);
	g_source_attach(fs->src, l->ctx);
	l->fds = fs;
	return fs;
}

static void fd_set_free(struct pvo_fd_set *fs)
{
	if (!fs)
		return;
	g_source_destroy(fs->src);
	g_source_unref(fs->src);
	close(fs->epfd);
	while (fs->dead) {
		struct pvo_watch *w = fs->dead;

		fs->dead = w->next_dead;
		g_free(w);
	}
	g_free(fs);
}

struct pvo_watch *pvo_loop_add_fd(int fd, GIOCondition cond,
				  GUnixFDSourceFunc fn, void *data)
{
	struct pvo_fd_set *fs = loop_fds();
	struct pvo_watch *w;
	struct epoll_event ev = {.events = cond & EPOLL_CONDS};
	int err;

	if (!fs)
		return NULL;
	w = g_new0(struct pvo_watch, 1);
	w->fd = fd;
	w->fn = fn;
	w->data = data;
	ev.data.ptr = w;
	if (epoll_ctl(fs->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		err = errno;
		g_free(w);
		errno = err;
		return NULL;
	}
	return w;
}

void pvo_loop_remove_fd(struct pvo_watch *w)
{
	struct pvo_fd_set *fs = pvo_loop()->fds;

	if (!w || w->dead)
		return;
	epoll_ctl(fs->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	if (fs->dispatching) {
		w->next_dead = fs->dead;
		fs->dead = w;
	} else {
		g_free(w);
	}
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
