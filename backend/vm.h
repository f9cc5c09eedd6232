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
#include "libvhost-user-glib.h"

#include "config.h"
#include "gid.h"
#include "log.h"
#include "objects.h"
#include "pvo-device.h"

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

struct pvo_ucontext {
	uint32_t handle;
	uint32_t db_queue;	/* doorbell virtqueue / BAR 2 page */
};

struct pvo_pd {
	uint32_t handle;
	uint32_t ctx;
};

struct pvo_vm_stats {
	uint64_t cmds;		/* control commands executed */
	uint64_t cmd_errors;	/* ... that returned an error status */
};

struct pvo_vm {
	const struct pvo_vm_config *cfg;

	/* vhost-user server side */
	int listen_fd;
	guint listen_src;
	VugDev vug;		/* valid while connected */
	bool connected;
	bool dropping;		/* a disconnect is scheduled */
	int conn_fd;

	/* guest-visible state */
	struct pvo_table ucontexts;
	struct pvo_table pds;
	uint64_t db_queues_busy;	/* bit q: doorbell queue q assigned */
	struct pvo_gid_table gids;
	struct pvo_vm_stats stats;
	struct pvo_ratelimit guest_log;	/* for guest-triggered messages */
};

struct pvo_vm *pvo_vm_new(const struct pvo_vm_config *cfg);
void pvo_vm_free(struct pvo_vm *vm);

/* Forget everything the guest created (device reset, disconnect). */
void pvo_vm_reset_guest_state(struct pvo_vm *vm);

/* Object lifetime, shared by commands and reset. */
void pvo_vm_destroy_ucontext(struct pvo_vm *vm, struct pvo_ucontext *uctx);

/* Log a message the guest can cause (refusals, quota hits). */
#define pvo_vm_warn(vm, ...)                                         \
	do {                                                         \
		if (pvo_ratelimit_ok(&(vm)->guest_log, (vm)->cfg->name)) \
			pvo_log((vm)->cfg->name, __VA_ARGS__);        \
	} while (0)

static inline const char *pvo_vm_name(const struct pvo_vm *vm)
{
	return vm->cfg->name;
}

#endif
