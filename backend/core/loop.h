/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One event loop and the state its modules keep besides per-VM and per-QP
 * objects: the timer heap, busy polling's hot QPs, the local transport's
 * served VMs, the overlay's socket and batches, the ACKs its receiver
 * holds back, the management socket, the profile marks.
 *
 * The daemon runs one loop (main.c). A data-path thread would run a loop
 * of its own over its own VMs; everything it touches must then be that
 * loop's, so modules keep such state in a slot of the calling thread's
 * loop (pvo_loop_state) instead of in file-scope variables. A thread
 * that never entered a loop gets one on the default main context on
 * first use (unit tests, tools).
 *
 * What stays process-wide: the configuration, and the overlay's mapping
 * table (overlay_map.c), which every loop must see the same; loops on
 * several threads would need it behind a lock.
 */
#ifndef PVO_LOOP_H
#define PVO_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>
#include <glib-unix.h>

enum pvo_loop_slot {
	PVO_LOOP_TIMERS,	/* core/timer.c */
	PVO_LOOP_PROFILE,	/* core/profile.c */
	PVO_LOOP_BUSY_POLL,	/* verbs/busy_poll.c */
	PVO_LOOP_LOCAL,		/* transport/local.c */
	PVO_LOOP_OVERLAY,	/* transport/overlay/overlay.c */
	PVO_LOOP_OVERLAY_ACKS,	/* transport/overlay/receiver.c */
	PVO_LOOP_MGMT,		/* mgmt/mgmt.c */
	PVO_LOOP_NSLOTS
};

struct pvo_loop_state {
	void *data; /* 64-byte aligned, within mem */
	void *mem;
	void (*fini)(void *data);
};

struct pvo_fd_set;

struct pvo_loop {
	GMainContext *ctx; /* where the modules attach their sources */
	struct pvo_fd_set *fds; /* the fds it waits on (pvo_loop_add_fd) */
	struct pvo_loop_state slot[PVO_LOOP_NSLOTS];
	const void *serving; /* whom its callbacks served last */
};

/* A loop on ctx (NULL: the default main context); no slot made yet. */
struct pvo_loop *pvo_loop_new(GMainContext *ctx);
/* Frees every slot (fini, in reverse slot order) and the loop. */
void pvo_loop_free(struct pvo_loop *l);
/* The calling thread runs l from now on (NULL: none). */
void pvo_loop_enter(struct pvo_loop *l);

extern __thread struct pvo_loop *pvo_loop_current;
struct pvo_loop *pvo_loop_default(void);

/* The calling thread's loop. */
static inline struct pvo_loop *pvo_loop(void)
{
	return pvo_loop_current ? pvo_loop_current : pvo_loop_default();
}

/*
 * The calling thread's loop now serves who (a QP, a VM's control queue).
 * pvo_loop_served(who): whether who is still the last it served, nobody
 * else having had a callback since. A requester that finds so may take
 * a longer run (engine/sw/req.c).
 */
static inline void pvo_loop_serve(const void *who)
{
	pvo_loop()->serving = who;
}

static inline bool pvo_loop_served(const void *who)
{
	return pvo_loop()->serving == who;
}

void *pvo_loop_state_make(enum pvo_loop_slot s, size_t size,
			  void (*init)(void *data), void (*fini)(void *data));

/*
 * The state of slot s in the calling thread's loop: on first use, size
 * zeroed bytes, aligned to a cache line, that init (may be NULL) sets up; fini (may be NULL) undoes
 * init when the loop is freed, and the bytes are freed after it.
 */
static inline void *pvo_loop_state(enum pvo_loop_slot s, size_t size,
				   void (*init)(void *data),
				   void (*fini)(void *data))
{
	void *data = pvo_loop()->slot[s].data;

	return data ? data : pvo_loop_state_make(s, size, init, fini);
}

/*
 * fds the calling thread's loop waits on. They share one epoll set, which
 * one source polls: a wake-up costs the same with one VM's kicks as with a
 * hundred, where glib's own fd sources would poll() every fd each time and
 * rewrite its poll set around each dispatch. fn runs for the events of
 * cond that occurred (and G_IO_ERR / G_IO_HUP); returning G_SOURCE_REMOVE
 * ends the watch as pvo_loop_remove_fd() does. NULL with errno if fd
 * cannot be watched (EPERM: a regular file; EEXIST: watched already).
 * Remove a watch before closing its fd; removing one from any callback,
 * its own included, is safe.
 */
struct pvo_watch;
struct pvo_watch *pvo_loop_add_fd(int fd, GIOCondition cond,
				  GUnixFDSourceFunc fn, void *data);
void pvo_loop_remove_fd(struct pvo_watch *w);

/*
 * Sources on the calling thread's loop. Each returns the caller's
 * reference: pvo_loop_remove() destroys the source and drops it, also from
 * within its own callback; a callback that ends its source by returning
 * G_SOURCE_REMOVE still drops the reference with g_source_unref().
 */
GSource *pvo_loop_add_timeout_s(unsigned int seconds, GSourceFunc fn,
				void *data);
GSource *pvo_loop_add_idle(GSourceFunc fn, void *data);
void pvo_loop_attach(GSource *src);
void pvo_loop_remove(GSource *src);

#endif
