/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a message's cycles go on the local data path, for performance
 * work: `make backend` builds build/prof with PVO_PROFILE (meson
 * -Dprofile=true); other builds compile the marks to nothing.
 *
 * Each mark reads the TSC and charges the cycles since the previous mark
 * to the segment it ends, in the requester QP the message belongs to.
 * When that QP is freed, the log gets one line of per-message averages
 * ("profile: QP ..."); pvo-bench prints those lines after its table.
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

struct pvo_qp;

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
void pvo_prof_begin(struct pvo_qp *qp);
void pvo_prof_cancel(void);
void pvo_prof_mark(enum pvo_prof_seg seg);
void pvo_prof_end(uint64_t bytes);
void pvo_prof_report(struct pvo_qp *qp);
#else
static inline void pvo_prof_begin(struct pvo_qp *qp)
{
	(void)qp;
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

static inline void pvo_prof_report(struct pvo_qp *qp)
{
	(void)qp;
}
#endif

#endif
