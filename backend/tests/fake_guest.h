/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest for unit tests, without vhost-user: the VM's memory table points
 * at two heap blocks (GPA [0, half) and [half, size), not adjacent on the
 * host, so anything that crosses the boundary must translate per region),
 * plus helpers to build page directories and rings and to run commands.
 * tests/integration does the same through a real vhost-user session.
 */
#ifndef FAKE_GUEST_H
#define FAKE_GUEST_H

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <glib.h>

#include "ctrl.h"
#include "guest_mem.h"
#include "pvo-device.h"
#include "vhost.h"
#include "vhost_dev.h"
#include "vm.h"

#ifndef FG_RAM_SIZE
#define FG_RAM_SIZE (16u << 20)
#endif
#define FG_HALF (FG_RAM_SIZE / 2)

struct fake_guest {
	struct pvo_vm *vm;
	uint8_t *block[2];
	bool borrowed;		/* block[] belongs to the caller */
	VuDevRegion regions[2];
	VuVirtq vqs[PVO_MAX_QUEUES];
	struct pvo_vhost vhost;
	uint64_t next;		/* bump allocator (GPA) */
};

/* An FG_HALF block of shared memfd memory, as a VMM's guest RAM (what
 * mremap aliases need), or NULL. */
static inline uint8_t *fg_shared_block(void)
{
	int fd = memfd_create("fake-guest", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || ftruncate(fd, FG_HALF)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	p = mmap(NULL, FG_HALF, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* A guest whose RAM is the caller's two FG_HALF blocks (NULL: its own),
 * zeroed: a fuzzer reuses them instead of mapping 1 MiB per input. */
static inline void fg_init_ram(struct fake_guest *g,
			       const struct pvo_vm_config *cfg,
			       uint8_t *const ram[2])
{
	VuDev *dev;
	int i;

	memset(g, 0, sizeof(*g));
	g->vm = pvo_vm_new(cfg);
	g->borrowed = ram != NULL;
	for (i = 0; i < 2; i++) {
		g->block[i] = ram ? ram[i] : aligned_alloc(4096, FG_HALF);
		memset(g->block[i], 0, FG_HALF);
		g->regions[i].gpa = (uint64_t)i * FG_HALF;
		g->regions[i].size = FG_HALF;
		g->regions[i].mmap_addr = (uintptr_t)g->block[i];
	}
	/* what pvo_vhost_listen and a front-end's connection would set */
	g->vm->vhost = &g->vhost;
	g->vm->queues = &pvo_vhost_queues;
	g->vm->gmem.ops = &pvo_vhost_gmem_ops;
	g->vhost.vm = g->vm;
	dev = &g->vhost.vug.parent;
	dev->nregions = 2;
	dev->regions = g->regions;
	/* Queues exist, none started: events stay pending; doorbell queue
	 * 3 counts as started so ALLOC_UCONTEXT works. */
	dev->vq = g->vqs;
	dev->max_queues = PVO_MAX_QUEUES;
	for (i = 0; i < PVO_MAX_QUEUES; i++) {
		g->vqs[i].call_fd = -1;
		g->vqs[i].kick_fd = -1;
	}
	g->vqs[PVO_VQ_DB_FIRST_USER].started = true;
	g->vqs[PVO_VQ_DB_FIRST_USER + 1].started = true;
	dev->log_call_fd = -1;
	g->vm->connected = true;
	g->next = 0x10000;
}

static inline void fg_init(struct fake_guest *g,
			   const struct pvo_vm_config *cfg)
{
	fg_init_ram(g, cfg, NULL);
}

static inline void fg_fini(struct fake_guest *g)
{
	pvo_vm_free(g->vm);
	if (!g->borrowed) {
		free(g->block[0]);
		free(g->block[1]);
	}
}

static inline void *fg_ptr(struct fake_guest *g, uint64_t gpa)
{
	return g->block[gpa / FG_HALF] + gpa % FG_HALF;
}

/* npages fresh (zeroed) pages; set g->next to place them. */
static inline uint64_t fg_alloc(struct fake_guest *g, uint32_t npages)
{
	uint64_t gpa = g->next;

	g->next += (uint64_t)npages * 4096;
	if (g->next > FG_RAM_SIZE)
		abort();
	return gpa;
}

/* Writes a two-level directory naming the pages at gpas[] and fills pd. */
static inline void fg_pdir(struct fake_guest *g, const uint64_t *gpas,
			   uint32_t n, struct pvo_pdir *pd)
{
	uint32_t tables = (n + 511) / 512, t, i;
	uint64_t dir = fg_alloc(g, 1);
	uint64_t *d = fg_ptr(g, dir);

	for (t = 0; t < tables; t++) {
		uint64_t tbl = fg_alloc(g, 1);
		uint64_t *p = fg_ptr(g, tbl);

		d[t] = htole64(tbl);
		for (i = 0; i < 512 && t * 512 + i < n; i++)
			p[i] = htole64(gpas[t * 512 + i]);
	}
	pd->dir_gpa = htole64(dir);
	pd->npages = htole32(n);
	pd->dir_pages = 0;
}

/* Directory of n contiguous pages from gpa. */
static inline void fg_pdir_range(struct fake_guest *g, uint64_t gpa,
				 uint32_t n, struct pvo_pdir *pd)
{
	uint64_t *gpas = g_new(uint64_t, n);
	uint32_t i;

	for (i = 0; i < n; i++)
		gpas[i] = gpa + (uint64_t)i * 4096;
	fg_pdir(g, gpas, n, pd);
	g_free(gpas);
}

/* When set, fg_cmd appends each command it runs (u16 length, then header
 * and body) here: the fuzz seed generator records scenarios this way. */
static GByteArray *fg_record;
static unsigned int fg_parts;

struct fg_reply {
	struct pvo_resp_hdr h;
	uint8_t body[512];
} __attribute__((packed));

static inline uint32_t fg_cmd(struct fake_guest *g, uint16_t op, uint32_t ctx,
			      const void *body, size_t len, void *resp,
			      size_t resp_len)
{
	uint8_t m[4096];
	struct pvo_cmd_hdr *h = (void *)m;
	struct fg_reply r;

	memset(m, 0, sizeof(h[0]));
	h->opcode = htole16(op);
	h->ctx = htole32(ctx);
	if (len)
		memcpy(m + sizeof(*h), body, len);
	memset(&r, 0, sizeof(r));
	if (fg_record) {
		uint16_t n = htole16(sizeof(*h) + len);

		g_byte_array_append(fg_record, (const guint8 *)&n, 2);
		g_byte_array_append(fg_record, m, sizeof(*h) + len);
	}
	/* a command that goes on over turns is called again, as the
	 * control queue does (fg_parts: how many calls it took) */
	fg_parts = 1;
	while (pvo_ctrl_execute(g->vm, m, sizeof(*h) + len, &r, sizeof(r)) ==
	       PVO_CTRL_AGAIN)
		fg_parts++;
	if (resp)
		memcpy(resp, r.body, resp_len);
	return le32toh(r.h.status);
}

/* A ring allocated in guest memory and described by a directory. */
struct fg_ring {
	uint64_t gpa;		/* header page; entries follow contiguously */
	uint32_t entries;
	uint32_t shift;
	struct pvo_pdir pdir;
};

static inline void fg_ring(struct fake_guest *g, struct fg_ring *r,
			   uint32_t entries, uint32_t shift)
{
	uint32_t n = pvo_ring_pages(entries, shift);

	r->gpa = fg_alloc(g, n);
	r->entries = entries;
	r->shift = shift;
	fg_pdir_range(g, r->gpa, n, &r->pdir);
}

static inline struct pvo_ring_hdr *fg_hdr(struct fake_guest *g,
					  const struct fg_ring *r)
{
	return fg_ptr(g, r->gpa);
}

static inline void *fg_entry(struct fake_guest *g, const struct fg_ring *r,
			     uint32_t idx)
{
	return fg_ptr(g, r->gpa + 4096 +
			       ((uint64_t)(idx & (r->entries - 1)) << r->shift));
}

/* Guest side of posting: entry idx = prod, then prod++. */
static inline void *fg_next(struct fake_guest *g, const struct fg_ring *r)
{
	void *e = fg_entry(g, r, le32toh(fg_hdr(g, r)->prod));

	memset(e, 0, 1u << r->shift);
	return e;
}

static inline void fg_publish(struct fake_guest *g, const struct fg_ring *r)
{
	struct pvo_ring_hdr *h = fg_hdr(g, r);

	__atomic_store_n(&h->prod, htole32(le32toh(h->prod) + 1),
			 __ATOMIC_RELEASE);
}

/* Guest side of polling: next CQE or NULL. */
static inline struct pvo_cqe *fg_poll(struct fake_guest *g,
				      const struct fg_ring *cq)
{
	struct pvo_ring_hdr *h = fg_hdr(g, cq);
	uint32_t cons = le32toh(h->cons);
	struct pvo_cqe *e;

	if (le32toh(__atomic_load_n(&h->prod, __ATOMIC_ACQUIRE)) == cons)
		return NULL;
	e = fg_entry(g, cq, cons);
	h->cons = htole32(cons + 1);
	return e;
}

/* Runs the main loop until cond or about 2 s. */
#define fg_wait(cond)                                                   \
	({                                                              \
		gint64 end_ = g_get_monotonic_time() + 2 * G_USEC_PER_SEC; \
		while (!(cond) && g_get_monotonic_time() < end_) {      \
			if (!g_main_context_iteration(NULL, FALSE))     \
				g_usleep(100);                          \
		}                                                       \
		(cond);                                                 \
	})

#endif
