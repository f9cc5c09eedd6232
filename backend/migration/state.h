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

/*
 * A save in progress (state_save.c): a cursor over vm's objects that
 * writes the stream piece by piece, holding a few KiB whatever the
 * stream's length. vm's objects must stay as they are meanwhile (its
 * rings stopped); if some go away or change, the save fails, it never
 * reads a freed object. Free it before vm.
 */
struct pvo_state_saver;

enum pvo_state_saver_status {
	PVO_SAVE_MORE,	 /* read again */
	PVO_SAVE_END,	 /* the stream is complete */
	PVO_SAVE_FAILED, /* pvo_state_saver_error says why; no more bytes */
};

struct pvo_state_saver *pvo_state_saver_new(struct pvo_vm *vm);
/*
 * Copies the stream's next bytes into buf, at most max, and returns how
 * many: bounded work whatever the objects (it may return 0 with
 * PVO_SAVE_MORE while it counts a long MR's runs). *st says what
 * follows. A stream longer than pvo_state_save_limit fails (a VM whose
 * max-host-mem allows more page lists than a stream carries).
 */
size_t pvo_state_saver_read(struct pvo_state_saver *s, void *buf, size_t max,
			    enum pvo_state_saver_status *st);
/* The bytes read so far. */
uint64_t pvo_state_saver_bytes(const struct pvo_state_saver *s);
const char *pvo_state_saver_error(const struct pvo_state_saver *s);
void pvo_state_saver_free(struct pvo_state_saver *s);

/* The longest stream a save writes: PVO_STATE_MAX_BYTES (tests lower
 * it). */
extern uint64_t pvo_state_save_limit;

/* The whole stream of vm's objects, through a saver (tests, fuzzers);
 * NULL, logged, if the save fails. */
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
