/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a message's cycles go on the local data path, for performance
 * work: `make backend` builds build/prof with PVO_PROFILE (meson
 * -Dprofile=true); other builds compile the marks to nothing.
 *
 * Each mark reads the TSC and charges the cycles since the previous mark
 * to the segment it ends, in the counters (struct pvo_prof) of the object
 * the message belongs to: its requester QP, which embeds them. When that
 * object goes, its owner reports them: the log gets one line of
 * per-message averages ("profile: QP ..."); pvo-bench prints those lines
 * after its table.
 * Only the local transport is marked; the overlay's messages are not
 * counted.
 */
#ifndef PVO_PROFILE_H
#define PVO_PROFILE_H

#include <stdint.h>
#include <time.h>

/* The segments of one local message, in the order they run. */
enum pvo_prof_seg {
	PVO_PROF_BETWEEN,  /* since the last message: main loop, run tail */
	PVO_PROF_FETCH,	   /* read and check the send WQE, its lkeys */
	PVO_PROF_BUILD,	   /* build the packet, pick the transport */
	PVO_PROF_RECV_WQE, /* route, QP lookup, take the receive WQE */
	PVO_PROF_PLACE,	   /* rkey / receive SGE checks up to a copy */
	PVO_PROF_COPY,	   /* the copies (pvo_dma_copy) */
	PVO_PROF_RECV_CQE, /* the receive completion */
	PVO_PROF_COMPLETE, /* the completer, the send completion */
	PVO_PROF_NSEGS
};

struct pvo_prof {
	uint64_t cycles[PVO_PROF_NSEGS];
	uint64_t msgs, bytes;
};

/* The profile's clock: the TSC where there is one (pvo-bench reads it too,
 * for its memcpy baseline). */
static inline uint64_t pvo_prof_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
#endif
}

#ifdef PVO_PROFILE
/* The counters of obj, a struct with a struct pvo_prof named prof (only
 * profiling builds have the member). */
#define PVO_PROF_OF(obj) (&(obj)->prof)

/* A message of p's owner starts. */
void pvo_prof_begin(struct pvo_prof *p);
void pvo_prof_cancel(void);
void pvo_prof_mark(enum pvo_prof_seg seg);
void pvo_prof_end(uint64_t bytes);
/* p's owner goes: the marks forget p, and the log (as log_name) gets
 * its averages under "profile: <what> 0x<id>". */
void pvo_prof_report(struct pvo_prof *p, const char *log_name, const char *what,
		     uint32_t id);
#else
#define PVO_PROF_OF(obj) ((struct pvo_prof *)NULL)

static inline void pvo_prof_begin(struct pvo_prof *p)
{
	(void)p;
}

static inline void pvo_prof_cancel(void)
{
}

static inline void pvo_prof_mark(enum pvo_prof_seg seg)
{
	(void)seg;
}

static inline void pvo_prof_end(uint64_t bytes)
{
	(void)bytes;
}

static inline void pvo_prof_report(struct pvo_prof *p, const char *log_name,
				   const char *what, uint32_t id)
{
	(void)p;
	(void)log_name;
	(void)what;
	(void)id;
}
#endif

#endif
