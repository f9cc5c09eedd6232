/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The overlay's part of a QP in the migration stream (overlay_state.c;
 * struct pvo_transport_ops save_qp / load_qp, migration/state_part.h).
 */
#ifndef PVO_OVERLAY_STATE_H
#define PVO_OVERLAY_STATE_H

#include <stdbool.h>

struct pvo_qp;
struct pvo_st_qp;
struct pvo_st_loader;

void pvo_ov_save_qp(const struct pvo_qp *qp, struct pvo_st_qp *rec);
bool pvo_ov_load_qp(struct pvo_qp *qp, const struct pvo_st_qp *rec,
		    struct pvo_st_loader *l);

#endif
