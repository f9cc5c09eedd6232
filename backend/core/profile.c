// SPDX-License-Identifier: GPL-2.0-or-later
/* Cycle accounting of the local data path; see profile.h. */
#ifdef PVO_PROFILE
#include <inttypes.h>
#include <stdio.h>

#include "log.h"
#include "loop.h"
#include "profile.h"

/* A loop's marks. */
struct marks {
	/* cur: the requester counters of the message being marked (NULL
	 * between messages: marks then count nothing). done: those of the
	 * last message that ended, whose QP the time until the next begin is
	 * charged to when the next message is its own too (else it is other
	 * QPs' time). */
	struct pvo_prof *cur, *done;
	uint64_t last;
};

static struct marks *marks(void)
{
	return pvo_loop_state(PVO_LOOP_PROFILE, sizeof(struct marks), NULL,
			      NULL);
}

void pvo_prof_begin(struct pvo_prof *p)
{
	uint64_t t = pvo_prof_cycles();
	struct marks *m = marks();

	if (m->done == p)
		m->done->cycles[PVO_PROF_BETWEEN] += t - m->last;
	m->done = NULL;
	m->cur = p;
	m->last = t;
}

void pvo_prof_cancel(void)
{
	/* the SQ was empty: what follows until the next message is idle
	 * time, not the cost of a message */
	marks()->cur = NULL;
}

void pvo_prof_mark(enum pvo_prof_seg seg)
{
	uint64_t t = pvo_prof_cycles();
	struct marks *m = marks();

	if (!m->cur)
		return;
	m->cur->cycles[seg] += t - m->last;
	m->last = t;
}

void pvo_prof_end(uint64_t bytes)
{
	struct marks *m = marks();

	pvo_prof_mark(PVO_PROF_COMPLETE);
	if (!m->cur)
		return;
	m->cur->msgs++;
	m->cur->bytes += bytes;
	m->done = m->cur;
	m->cur = NULL;
}

void pvo_prof_report(struct pvo_prof *p, const char *log_name, const char *what,
		     uint32_t id)
{
	static const char *const names[PVO_PROF_NSEGS] = {
	    "between", "fetch", "build",    "recv-wqe",
	    "place",   "copy",	"recv-cqe", "complete"};
	struct marks *m = marks();
	char line[512];
	int n, k;

	if (m->cur == p)
		m->cur = NULL;
	if (m->done == p)
		m->done = NULL;
	if (!p->msgs)
		return;
	n = snprintf(line, sizeof(line),
		     "profile: %s 0x%x: %" PRIu64 " local messages of %" PRIu64
		     " B on average; cycles per message:",
		     what, id, p->msgs, p->bytes / p->msgs);
	for (k = 0; k < PVO_PROF_NSEGS && n > 0 && n < (int)sizeof(line); k++)
		n += snprintf(line + n, sizeof(line) - n, " %s %" PRIu64,
			      names[k], p->cycles[k] / p->msgs);
	pvo_log(log_name, "%s", line);
}
#endif
