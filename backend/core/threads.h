/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Data-path threads (docs/threads.md). Thread 0 is the main thread: it
 * runs the daemon's control (config, reloads, the management socket,
 * signals) and the overlay's receive socket, and serves tenants like the
 * others. Threads 1..n-1 each run a loop of their own over the VMs of the
 * tenants placed on them, and never wait for another thread.
 *
 * Thread 0 acts on another thread's objects only with the world paused:
 * every other thread parked between two callbacks, so no callback of
 * theirs runs, and with that thread's loop entered, so whatever it
 * attaches (watches, timers, sources) lands on the owner's loop.
 */
#ifndef PVO_THREADS_H
#define PVO_THREADS_H

#include <stdbool.h>

#include "config.h"
#include "loop.h"

/*
 * From thread 0, whose loop is entered: n threads in all (the caller's
 * plus n - 1 started now, each running its own loop). false with *err
 * if a thread cannot be started; none is then left running.
 */
bool pvo_threads_start(unsigned int n, char **err);
/* Ends and joins the started threads and frees their loops; the world
 * must not be paused. Their loops' modules must be stopped already. */
void pvo_threads_stop(void);
/* How many threads serve (1 before start). */
unsigned int pvo_threads_count(void);
/* The loop of thread i (0: thread 0's). */
struct pvo_loop *pvo_thread_loop(unsigned int i);
/* The calling thread's index: 0 on thread 0 or any other thread. */
unsigned int pvo_thread_self(void);

/*
 * From thread 0: parks every other thread between two callbacks and
 * returns once all are parked; nests (the outermost resume releases
 * them). With one thread it does nothing.
 */
void pvo_threads_pause(void);
void pvo_threads_resume(void);
bool pvo_threads_paused(void);

/* With the world paused (or on thread i itself): the calling thread
 * acts in thread i's loop until pvo_thread_leave(), which returns the
 * loop that was entered before. */
struct pvo_loop *pvo_thread_enter(unsigned int i);
void pvo_thread_leave(struct pvo_loop *was);

/* CPU time thread i has used, in microseconds (0 if unknown). */
unsigned long long pvo_thread_cpu_us(unsigned int i);

#endif
