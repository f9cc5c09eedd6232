/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory windows: a remote key for a part of an MR, with its own access
 * rights, that a QP binds and (type 2) invalidates in SQ order, so an
 * application can grant and revoke remote access without registering
 * memory. Window keys have PVO_MW_KEY_BIT set; every remote access names
 * either an MR key or a window key, and pvo_rkey_get resolves both.
 */
#ifndef PVO_MW_H
#define PVO_MW_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;
struct pvo_pd;
struct pvo_mr;

struct pvo_mw {
	uint32_t handle;
	uint32_t ctx;
	uint32_t rkey;
	uint8_t type; /* 1 or 2 */
	bool bound;   /* the key grants access (type 2: valid) */
	struct pvo_pd *pd;
	struct pvo_mr *mr; /* bound to it (NULL: unbound or zero-length) */
	uint32_t qpn;	   /* type 2: the QP that bound it */
	uint32_t access;   /* PVO_ACCESS_REMOTE_* */
	uint64_t addr;
	uint64_t length;
};

static inline bool pvo_key_is_mw(uint32_t key)
{
	return key & PVO_MW_KEY_BIT;
}

enum pvo_status pvo_cmd_alloc_mw(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp);
void pvo_mw_free(struct pvo_vm *vm, struct pvo_mw *mw);

/* Whether a window may grant access over mr: MW_BIND on the MR, and
 * LOCAL_WRITE for remote write or atomic access (IB 10.6.7.2). */
bool pvo_mw_may_bind(const struct pvo_mr *mr, uint32_t access);

/*
 * PVO_WR_BIND_MW from QP qpn in pd: the window rkey's index names gets
 * key rkey and [addr, addr + length) of the MR lkey names with access.
 * PVO_WC_MW_BIND_ERR if the window is not of pd, a type 2 window is
 * bound already, the MR is not of pd, lacks MW_BIND (or LOCAL_WRITE for
 * remote write or atomic access) or does not cover the range.
 */
enum pvo_wc_status pvo_mw_bind(struct pvo_vm *vm, const struct pvo_pd *pd,
			       uint32_t qpn, uint32_t rkey, uint32_t lkey,
			       uint64_t addr, uint64_t length, uint32_t access);

/*
 * Invalidates the key (LOCAL_INV: qpn 0; SEND_WITH_INV: the receiving
 * QP, which must be the one a type 2 window was bound through): a
 * window's or a fast-reg MR's. PVO_WC_LOC_ACCESS_ERR if it names
 * neither, a type 1 window, another PD's, or is not valid.
 */
enum pvo_wc_status pvo_key_invalidate(struct pvo_vm *vm,
				      const struct pvo_pd *pd, uint32_t qpn,
				      uint32_t key);

/* Type 2 windows bound through a destroyed QP go back to unbound. */
void pvo_mw_forget_qp(struct pvo_vm *vm, uint32_t qpn);

/*
 * The MR a remote key names for QP qpn of pd, granting access over
 * [addr, addr + len): an MR key (pvo_mr_get) or a bound window of pd
 * (type 2: bound through qpn) whose rights and range allow it. NULL
 * otherwise.
 */
struct pvo_mr *pvo_rkey_get(struct pvo_vm *vm, uint32_t key,
			    const struct pvo_pd *pd, uint32_t qpn,
			    uint32_t access, uint64_t addr, uint64_t len);

#endif
