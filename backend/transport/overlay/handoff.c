// SPDX-License-Identifier: GPL-2.0-or-later
/* Datagrams for another thread; see handoff.h. */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <glib.h>

#include "handoff.h"
#include "loop.h"
#include "threads.h"

struct handed {
	size_t len;
	struct sockaddr_in from;
	uint8_t buf[];
};

struct inbox {
	GMutex lock;
	bool open;
	unsigned int head, len; /* a ring of PVO_HANDOFF_SLOTS */
	struct handed *ring[PVO_HANDOFF_SLOTS];
	int efd;
	struct pvo_watch *w;
	pvo_handoff_fn input;
	void (*done)(void);
};

static struct inbox inboxes[PVO_MAX_THREADS];

static gboolean on_inbox(gint fd, GIOCondition cond, gpointer opaque)
{
	struct inbox *ib = opaque;
	struct handed *batch[PVO_HANDOFF_BATCH];
	unsigned int n = 0, i;
	uint64_t v;
	bool more;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return G_SOURCE_CONTINUE;
	g_mutex_lock(&ib->lock);
	while (ib->len && n < PVO_HANDOFF_BATCH) {
		batch[n++] = ib->ring[ib->head];
		ib->head = (ib->head + 1) % PVO_HANDOFF_SLOTS;
		ib->len--;
	}
	more = ib->len != 0;
	g_mutex_unlock(&ib->lock);
	/* the rest on the next turn: other VMs' doorbells go first */
	if (more)
		eventfd_write(fd, 1);
	for (i = 0; i < n; i++) {
		ib->input(batch[i]->buf, batch[i]->len, &batch[i]->from);
		g_free(batch[i]);
	}
	if (n)
		ib->done();
	return G_SOURCE_CONTINUE;
}

bool pvo_handoff_open(unsigned int i, pvo_handoff_fn input,
		      void (*done)(void), char **err)
{
	struct inbox *ib = &inboxes[i];
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	if (efd < 0) {
		*err = g_strdup_printf("overlay: thread %u: eventfd: %s", i + 1,
				       g_strerror(errno));
		return false;
	}
	ib->input = input;
	ib->done = done;
	ib->efd = efd;
	ib->w = pvo_loop_add_fd(efd, G_IO_IN, on_inbox, ib);
	if (!ib->w) {
		*err = g_strdup_printf("overlay: thread %u: cannot wait on "
				       "its inbox: %s",
				       i + 1, g_strerror(errno));
		close(efd);
		return false;
	}
	g_mutex_lock(&ib->lock);
	ib->open = true;
	g_mutex_unlock(&ib->lock);
	return true;
}

void pvo_handoff_close(unsigned int i)
{
	struct inbox *ib = &inboxes[i];

	g_mutex_lock(&ib->lock);
	if (!ib->open) {
		g_mutex_unlock(&ib->lock);
		return;
	}
	ib->open = false;
	while (ib->len) {
		g_free(ib->ring[ib->head]);
		ib->head = (ib->head + 1) % PVO_HANDOFF_SLOTS;
		ib->len--;
	}
	g_mutex_unlock(&ib->lock);
	pvo_loop_remove_fd(ib->w);
	ib->w = NULL;
	close(ib->efd);
	ib->efd = -1;
}

bool pvo_handoff_post(unsigned int i, const uint8_t *buf, size_t len,
		      const struct sockaddr_in *from)
{
	struct inbox *ib;
	struct handed *h;
	bool wake;

	if (i >= PVO_MAX_THREADS || len > PVO_HANDOFF_MAX_LEN)
		return false;
	ib = &inboxes[i];
	h = g_malloc(sizeof(*h) + len);
	h->len = len;
	h->from = *from;
	memcpy(h->buf, buf, len);
	g_mutex_lock(&ib->lock);
	if (!ib->open || ib->len == PVO_HANDOFF_SLOTS) {
		g_mutex_unlock(&ib->lock);
		g_free(h);
		return false;
	}
	ib->ring[(ib->head + ib->len) % PVO_HANDOFF_SLOTS] = h;
	wake = ib->len++ == 0;
	g_mutex_unlock(&ib->lock);
	/* one wake-up per batch: the inbox was empty, or is being taken */
	if (wake)
		eventfd_write(ib->efd, 1);
	return true;
}
