/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One served VM: its host-side configuration, its vhost-user connection and
 * the verbs objects its guest created. Everything the guest can name lives
 * in a handle table (objects.h) scoped to this VM, so one VM can never name
 * another VM's objects.
 */
#ifndef PVO_VM_H
#define PVO_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "doorbell.h"
#include "event.h"
#include "gid.h"
#include "guest_mem.h"
#include "host_budget.h"
#include "log.h"
#include "net_stats.h"
#include "objects.h"
#include "pvo-device.h"
#include "timer.h"

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

struct pvo_qp;
struct pvo_vhost;
struct pvo_vm_engine;

/* A user context (or, as vm->kernel, the guest kernel's own). */
struct pvo_ucontext {
	uint32_t handle;	/* PVO_CTX_KERNEL for the kernel */
	uint32_t db_queue;	/* doorbell virtqueue its kicks arrive on */
	uint32_t db_page;	/* BAR 2 page: db_queue or a slot page */
	struct pvo_db_ring db;	/* SET_DB_RING */
	uint32_t nqps;		/* QPs and doorbell SRQs of the context (each has
				 * a record): <= PVO_DB_RING_ENTRIES */
};

struct pvo_pd {
	uint32_t handle;
	uint32_t ctx;
	uint32_t refcnt;	/* MRs, MWs, QPs, SRQs, AHs in it */
	void *engine_part;	/* the VM engine's (engine.h), or NULL */
};

/*
 * The guest's virtqueues as verbs objects reach them (events, doorbell
 * queues): set by the vhost-user side while it serves the VM (vhost.c),
 * so verbs/ needs nothing of vhost/. Without them no queue runs.
 */
struct pvo_vm_queues {
	/* Whether virtqueue q of the connected front-end runs. */
	bool (*started)(struct pvo_vm *vm, unsigned int q);
	/* Copies len bytes into the next buffer the driver posted on q: 1 if
	 * it went, 0 if q does not run or has no buffer, -1 if the buffer was
	 * shorter than len (it is given back empty). */
	int (*put)(struct pvo_vm *vm, unsigned int q, const void *data,
		   size_t len);
	/* Tells the driver about what put() placed on q. */
	void (*notify)(struct pvo_vm *vm, unsigned int q);
};

struct pvo_vm_stats {
	uint64_t cmds;		/* control commands executed */
	uint64_t cmd_errors;	/* ... that returned an error status */
};

struct pvo_vm {
	/* first: mem/ finds it from the VM pointer (guest_mem.h) */
	struct pvo_gmem gmem;
	const struct pvo_vm_config *cfg;

	/* vhost-user server side (vhost/vhost.h) */
	struct pvo_vhost *vhost;
	const struct pvo_vm_queues *queues;
	bool connected;		/* a front-end is, vhost->vug is valid */
	/* The destination of a migration within this back-end: a second
	 * front-end, until its rings start (vhost.c). */
	struct pvo_vhost *incoming;
	struct pvo_vhost *retired;	/* the source after a switch-over */
	/* Rings stopped while the front-end logs dirty pages: a migration's
	 * last phase. Nothing may write into the guest's memory (QEMU has
	 * copied it); peers' packets are dropped, requesters wait. */
	bool frozen;
	/* When it last thawed, until the guest's first doorbell after it
	 * (logged: how long the guest took to post once it ran again). */
	gint64 thawed_us;
	bool registered;	/* with the local transport (pvo_vm_new) */
	/* Live migration between hosts (transport/overlay/moves.c): the
	 * generation of the VM's last switch-over (wall-clock us, carried in
	 * its state), whether it migrated away from here (its source: not
	 * served any more), and the announcements of its arrival. */
	uint64_t move_gen;
	bool moved_away;
	bool announce_pending;	/* at the thaw after a load from elsewhere */
	bool offer_only; /* the repeats carry a rebind offer alone */
	struct pvo_timer announce;
	unsigned int announce_left;
	/* Changes whenever guest RAM may be mapped differently (memory table,
	 * connect, disconnect): host addresses cached under an older value
	 * are stale (ring.c). */
	uint64_t mem_gen;

	/* guest-visible state */
	struct pvo_table ucontexts;
	struct pvo_table pds;
	struct pvo_table cqs;
	struct pvo_table mrs;
	struct pvo_table mws;
	struct pvo_table qps;
	struct pvo_table srqs;
	struct pvo_table ahs;
	struct pvo_ucontext kernel;	/* ctx 0: doorbell ring, QP count */
	uint32_t db_queue_ctx[PVO_MAX_QUEUES];	/* ucontext per queue, 0 free */
	struct pvo_db_notify notify;	/* slot pages and their rings */
	GHashTable *qpn_map;	/* QPN -> struct pvo_qp, what peers reach */
	GPtrArray *mcast_qps;	/* QPs in multicast groups (mcast.h) */
	uint32_t next_qpn;
	struct pvo_qp *gsi_qp;
	uint8_t mr_tag;		/* low byte of the next MR / MW key */
	/* its object engine, from its tenant (engine.h; NULL: software
	 * only), and the engine's part of the VM */
	const struct pvo_vm_engine *eng;
	void *engine_part;
	/* bumped whenever a key may stop naming what it named (an MR freed
	 * or invalidated, a window unbound): dma.h */
	uint64_t mr_gen;
	struct pvo_gid_table gids;
	struct pvo_event_queue events;
	struct pvo_vm_stats stats;
	/* host memory held for the guest beyond its objects' structs: the
	 * page lists of MRs and rings, against [vm] max-host-mem
	 * (host_budget.h) */
	struct pvo_host_budget host_mem;
	/* the page list a REG_MR / REREG_MR builds over turns (mr.c) */
	struct pvo_mr_build *mr_build;
	/* the command that answered PVO_STATUS_AGAIN waits for work off
	 * the loop (a host-verbs registration): try it again after a
	 * while, not on the very next turn (vhost.c) */
	bool ctrl_waits;
	struct pvo_net_stats net;	/* overlay traffic of the VM */
	struct pvo_ratelimit guest_log;	/* for guest-triggered messages */
};

_Static_assert(offsetof(struct pvo_vm, gmem) == 0,
	       "mem/ reaches struct pvo_gmem at the start of struct pvo_vm");

/* Re-check interval of a frozen VM's requester timers. */
#define PVO_FROZEN_RECHECK_USEC 1000

struct pvo_vm *pvo_vm_new(const struct pvo_vm_config *cfg);
/* A VM no peer can reach (a migration stream's trial load). */
struct pvo_vm *pvo_vm_new_detached(const struct pvo_vm_config *cfg);
void pvo_vm_free(struct pvo_vm *vm);
/* Takes the quotas of vm->cfg (a config reload moved it): they count for
 * objects created from now on; existing ones stay. */
void pvo_vm_apply_quota(struct pvo_vm *vm);
/* Takes the object engine of vm->cfg's tenant (a reload may have set the
 * VM up again on another): engine.h. */
void pvo_vm_set_engine(struct pvo_vm *vm);
/* Whether the VM's state can be saved for a migration: false, with a
 * log line saying why, if its engine holds objects that cannot move. */
bool pvo_vm_migratable(struct pvo_vm *vm);
/* The engine's part of a migration (engine.h vm_freeze, vm_thaw,
 * vm_loaded, vm_ready): nothing, or true (thaw: false), for VMs without
 * one. */
void pvo_vm_engine_freeze(struct pvo_vm *vm);
bool pvo_vm_engine_thaw(struct pvo_vm *vm);
bool pvo_vm_engine_loaded(struct pvo_vm *vm);
bool pvo_vm_engine_ready(struct pvo_vm *vm);

/* What the VM's engine holds on the host for it (pvo-ctl show): the
 * mappings of its host MRs and their bound, the bytes they pin, how
 * many there are. All 0 for VMs with no object engine. */
struct pvo_vm_host_use {
	uint64_t pinned;
	uint32_t mappings, max_mappings, mrs;
};
void pvo_vm_host_use(const struct pvo_vm *vm, struct pvo_vm_host_use *u);

/* Forget everything the guest created (device reset, disconnect). */
void pvo_vm_reset_guest_state(struct pvo_vm *vm);

/* Object lifetime, shared by commands and reset. */
void pvo_pd_free(struct pvo_vm *vm, struct pvo_pd *pd);
void pvo_vm_destroy_ucontext(struct pvo_vm *vm, struct pvo_ucontext *uctx);

/* The context named by a command header (kernel or user), or NULL. */
struct pvo_ucontext *pvo_vm_ctx(struct pvo_vm *vm, uint32_t ctx);

/* Log a message the guest can cause (refusals, quota hits). */
#define pvo_vm_warn(vm, ...)                                         \
	do {                                                         \
		if (pvo_ratelimit_ok(&(vm)->guest_log, (vm)->cfg->name)) \
			pvo_log((vm)->cfg->name, __VA_ARGS__);        \
	} while (0)

/* Whether the VM's object engine has that hook (engine.h). */
#define pvo_vm_eng_has(vm, hook) ((vm)->eng && (vm)->eng->hook)

static inline bool pvo_vm_queue_started(struct pvo_vm *vm, unsigned int q)
{
	return vm->queues && vm->queues->started(vm, q);
}

static inline const char *pvo_vm_name(const struct pvo_vm *vm)
{
	return vm->cfg->name;
}

#endif
