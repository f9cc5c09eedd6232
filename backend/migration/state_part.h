/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A QP's parts in the state stream. migration/ writes and checks the
 * framing and the QP's generic fields; the engine and each transport
 * fill their own fields of the QP record on save and check and apply
 * them on load (struct pvo_engine_ops save / load, struct
 * pvo_transport_ops save_qp / load_qp). A part refuses a field as the
 * loader does, so the refusal names the record and the field.
 */
#ifndef PVO_STATE_PART_H
#define PVO_STATE_PART_H

#include <stdbool.h>
#include <glib.h>

#include "state_format.h"

/* The loader reading the stream (state_load.c). */
struct pvo_st_loader;

/* Fails the load, naming field of the current record and why; false. */
bool pvo_st_refuse(struct pvo_st_loader *l, const char *field, const char *fmt,
		   ...) G_GNUC_PRINTF(3, 4);

/* Returns false from the caller, refusing field, unless cond holds (with
 * the loader as l). */
#define PVO_ST_CHECK(cond, field, ...)                                         \
	do {                                                                   \
		if (!(cond))                                                   \
			return pvo_st_refuse(l, field, __VA_ARGS__);           \
	} while (0)

#endif
