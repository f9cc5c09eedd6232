/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's verbs state as a byte stream, for live migration: saved while
 * the VM's rings are stopped, loaded on the destination into a VM with
 * no objects. The loader treats the stream as untrusted input.
 */
#ifndef PVO_STATE_H
#define PVO_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

struct pvo_vm;
struct pvo_vm_config;

/* The stream of vm's objects (state_save.c); NULL, logged, if it would
 * be longer than PVO_STATE_MAX_BYTES (a VM whose max-host-mem allows
 * more page lists than a stream carries). */
GByteArray *pvo_state_save(struct pvo_vm *vm);

/*
 * Creates the stream's objects in vm, which has none. On failure vm is
 * left without objects and *err names the record and field refused.
 */
bool pvo_state_load(struct pvo_vm *vm, const uint8_t *buf, size_t len,
		    char **err);

/* Would pvo_state_load succeed for a VM of cfg? Loads into a scratch VM
 * that no peer can reach. */
bool pvo_state_check(const struct pvo_vm_config *cfg, const uint8_t *buf,
		     size_t len, char **err);

/* After a load, once the VM's rings run: requesters send what waits. */
void pvo_state_resume(struct pvo_vm *vm);

#endif
