// SPDX-License-Identifier: GPL-2.0-or-later
/* Adaptive busy polling of hot QPs; see busy_poll.h. */
#include <glib.h>
#include <sched.h>
#include <stdbool.h>

#include "busy_poll.h"
#include "engine.h"
#include "loop.h"
#include "qp.h"
#include "ring.h"
#include "vm.h"

/* Longest stretch spent polling before the main loop runs again */
#define SLICE_US 50

struct hot {
	struct pvo_vm *vm;
	uint32_t ctx, handle; /* looked up every time: QPs go away */
	uint32_t prod;	      /* SQ producer last seen */
	gint64 last;	      /* when it last had new work */
};

/* A loop's busy polling: its window and the QPs it polls. */
struct busy_poll {
	uint32_t window_us;
	GArray *hot;	/* struct hot */
	GSource *idle;	/* polls while a QP is hot */
};

static void bp_init(void *data)
{
	struct busy_poll *bp = data;

	bp->hot = g_array_new(FALSE, FALSE, sizeof(struct hot));
}

static void bp_fini(void *data)
{
	struct busy_poll *bp = data;

	pvo_loop_remove(bp->idle);
	g_array_free(bp->hot, TRUE);
}

static struct busy_poll *busy_poll(void)
{
	return pvo_loop_state(PVO_LOOP_BUSY_POLL, sizeof(struct busy_poll),
			      bp_init, bp_fini);
}

void pvo_busy_poll_init(uint32_t usec)
{
	busy_poll()->window_us = usec;
}

bool pvo_busy_poll_on(void)
{
	return busy_poll()->window_us != 0;
}

/* Leaves busy mode: doorbells again, and one look at the producer for a
 * WQE posted while db_pending was still set. */
static void cool(struct pvo_qp *qp)
{
	pvo_ring_store(qp->vm, &qp->sq, PVO_RING_DB_PENDING, 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pvo_qp_doorbell(qp);
}

static gboolean poll_hot(gpointer opaque)
{
	struct busy_poll *bp = opaque;
	GArray *hot = bp->hot;
	gint64 now = g_get_monotonic_time(), end = now + SLICE_US;
	bool found = false;
	unsigned int i;

	do {
		for (i = 0; i < hot->len;) {
			struct hot *h = &g_array_index(hot, struct hot, i);
			struct pvo_qp *qp = pvo_table_get(&h->vm->qps, h->handle,
							  h->ctx);
			uint32_t prod;

			if (!qp || !h->vm->connected) {
				g_array_remove_index_fast(hot, i);
				continue;
			}
			/* errors and flushes go the doorbell way */
			if (qp->state != PVO_QPS_RTS && qp->state != PVO_QPS_SQD) {
				g_array_remove_index_fast(hot, i);
				cool(qp);
				continue;
			}
			if (pvo_ring_load(h->vm, &qp->sq, PVO_RING_PROD, &prod) &&
			    prod != h->prod) {
				h->prod = prod;
				h->last = now;
				found = true;
				pvo_qp_doorbell(qp);
			} else if (qp->engine->poll && qp->engine->poll(qp)) {
				h->last = now;
				found = true;
			} else if (now - h->last > bp->window_us) {
				g_array_remove_index_fast(hot, i);
				cool(qp);
				continue;
			}
			i++;
		}
		now = g_get_monotonic_time();
	} while (hot->len && now < end);
	/* A slice with nothing to do gives the CPU away once: on a host
	 * with fewer cores than spinners, the process that writes our next
	 * WQE (or the device's completion) may be waiting for it. */
	if (!found)
		sched_yield();
	if (hot->len)
		return G_SOURCE_CONTINUE;
	g_source_unref(bp->idle);
	bp->idle = NULL;
	return G_SOURCE_REMOVE;
}

void pvo_busy_poll_add(struct pvo_qp *qp)
{
	struct busy_poll *bp = busy_poll();
	GArray *hot = bp->hot;
	gint64 now = g_get_monotonic_time();
	struct hot h = { .vm = qp->vm, .ctx = qp->ctx, .handle = qp->handle,
			 .last = now };
	unsigned int i;

	for (i = 0; i < hot->len; i++) {
		struct hot *e = &g_array_index(hot, struct hot, i);

		if (e->vm == qp->vm && e->handle == qp->handle) {
			e->last = now;
			return;
		}
	}
	pvo_ring_load(qp->vm, &qp->sq, PVO_RING_PROD, &h.prod);
	g_array_append_val(hot, h);
	if (!bp->idle) {
		bp->idle = pvo_loop_add_idle(poll_hot, bp);
		/* at an idle source's priority it would not run while a
		 * timer is always due (a requester resuming a large WQE
		 * slice by slice): the hot QPs of every other VM would
		 * wait for it to end */
		g_source_set_priority(bp->idle, G_PRIORITY_DEFAULT);
	}
}
