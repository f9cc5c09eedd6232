// SPDX-License-Identifier: GPL-2.0-or-later
/* Memory windows; see mw.h. */
#include <endian.h>
#include <glib.h>

#include "mr.h"
#include "mw.h"
#include "vm.h"

#define MW_ACCESS                                                              \
	(PVO_ACCESS_REMOTE_WRITE | PVO_ACCESS_REMOTE_READ |                    \
	 PVO_ACCESS_REMOTE_ATOMIC)

/* The window a key's index bits name, whatever its low byte. */
static struct pvo_mw *mw_at(struct pvo_vm *vm, uint32_t key)
{
	if (!pvo_key_is_mw(key))
		return NULL;
	return pvo_table_at(&vm->mws, (key & ~PVO_MW_KEY_BIT) >> 8);
}

enum pvo_status pvo_cmd_alloc_mw(struct pvo_vm *vm, uint32_t ctx,
				 const void *req, void *resp)
{
	const struct pvo_cmd_alloc_mw *c = req;
	struct pvo_resp_alloc_mw *r = resp;
	uint32_t type = le32toh(c->type);
	struct pvo_pd *pd;
	struct pvo_mw *mw;

	/* No kernel ULP binds windows; their WQEs come from user rings. */
	if (ctx == PVO_CTX_KERNEL)
		return PVO_STATUS_EPERM;
	if (type != 1 && type != 2)
		return PVO_STATUS_EINVAL;
	pd = pvo_table_get(&vm->pds, le32toh(c->pd), ctx);
	if (!pd)
		return PVO_STATUS_ENOENT;
	mw = g_new0(struct pvo_mw, 1);
	mw->ctx = ctx;
	mw->pd = pd;
	mw->type = type;
	mw->handle = pvo_table_add(&vm->mws, mw, ctx);
	if (!mw->handle) {
		g_free(mw);
		pvo_vm_warn(vm, "MW quota reached (max-mw = %u)",
			    vm->cfg->quota.max_mw);
		return PVO_STATUS_ENOSPC;
	}
	mw->rkey =
	    PVO_MW_KEY_BIT | pvo_handle_index(mw->handle) << 8 | ++vm->mr_tag;
	pd->refcnt++;
	r->mw = htole32(mw->handle);
	r->rkey = htole32(mw->rkey);
	return PVO_STATUS_OK;
}

/* The window grants nothing any more; transfers under way stop (only
 * then: every cursor of the VM looks its keys up again). */
static void unbind(struct pvo_vm *vm, struct pvo_mw *mw)
{
	if (!mw->bound && !mw->mr)
		return;
	if (mw->mr)
		mw->mr->mw_binds--;
	mw->mr = NULL;
	mw->bound = false;
	vm->mr_gen++;
}

void pvo_mw_free(struct pvo_vm *vm, struct pvo_mw *mw)
{
	unbind(vm, mw);
	pvo_table_remove(&vm->mws, mw->handle, mw->ctx);
	mw->pd->refcnt--;
	g_free(mw);
}

bool pvo_mw_may_bind(const struct pvo_mr *mr, uint32_t access)
{
	/* remote writes through a window are local writes to the MR */
	if ((access & (PVO_ACCESS_REMOTE_WRITE | PVO_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & PVO_ACCESS_LOCAL_WRITE))
		return false;
	return mr->access & PVO_ACCESS_MW_BIND;
}

enum pvo_wc_status pvo_mw_bind(struct pvo_vm *vm, const struct pvo_pd *pd,
			       uint32_t qpn, uint32_t rkey, uint32_t lkey,
			       uint64_t addr, uint64_t length, uint32_t access)
{
	struct pvo_mw *mw = mw_at(vm, rkey);
	struct pvo_mr *mr = NULL;

	if (!mw || mw->pd != pd || (access & ~MW_ACCESS))
		return PVO_WC_MW_BIND_ERR;
	/* IB: a type 2 window is bound once, until invalidated */
	if (mw->type == 2 && mw->bound)
		return PVO_WC_MW_BIND_ERR;
	if (length) {
		mr = pvo_table_at(&vm->mrs, lkey >> 8);
		if (!mr || mr->key != lkey || !mr->valid || mr->pd != pd ||
		    !pvo_mw_may_bind(mr, access) ||
		    !pvo_mr_covers(mr, addr, length))
			return PVO_WC_MW_BIND_ERR;
	}
	unbind(vm, mw);
	/* type 1 with length 0 unbinds; a zero-length type 2 binding is
	 * valid (and names no bytes) until invalidated */
	if (mw->type == 1 && !length)
		access = 0;
	else
		mw->bound = true;
	mw->mr = mr;
	if (mr)
		mr->mw_binds++;
	mw->rkey = (mw->rkey & ~0xffu) | (rkey & 0xff);
	mw->qpn = qpn;
	mw->access = access;
	mw->addr = addr;
	mw->length = length;
	return PVO_WC_SUCCESS;
}

enum pvo_wc_status pvo_key_invalidate(struct pvo_vm *vm,
				      const struct pvo_pd *pd, uint32_t qpn,
				      uint32_t key)
{
	struct pvo_mw *mw;

	if (!pvo_key_is_mw(key))
		return pvo_mr_invalidate(vm, pd, key);
	mw = mw_at(vm, key);
	if (!mw || mw->type != 2 || mw->rkey != key || !mw->bound ||
	    mw->pd != pd || (qpn && mw->qpn != qpn))
		return PVO_WC_LOC_ACCESS_ERR;
	unbind(vm, mw);
	return PVO_WC_SUCCESS;
}

void pvo_mw_forget_qp(struct pvo_vm *vm, uint32_t qpn)
{
	uint32_t h = 0;
	void *obj;

	while ((h = pvo_table_next(&vm->mws, h, &obj))) {
		struct pvo_mw *mw = obj;

		if (mw->type == 2 && mw->bound && mw->qpn == qpn)
			unbind(vm, mw);
	}
}

struct pvo_mr *pvo_rkey_get(struct pvo_vm *vm, uint32_t key,
			    const struct pvo_pd *pd, uint32_t qpn,
			    uint32_t access, uint64_t addr, uint64_t len)
{
	struct pvo_mw *mw;

	if (!pvo_key_is_mw(key))
		return pvo_mr_get(vm, key, pd, access, addr, len);
	mw = mw_at(vm, key);
	if (!mw || mw->rkey != key || !mw->bound || !mw->mr || mw->pd != pd ||
	    (mw->type == 2 && mw->qpn != qpn) ||
	    (mw->access & access) != access)
		return NULL;
	if (!pvo_range_covers(mw->addr, mw->length, addr, len))
		return NULL;
	/* the MR may have been invalidated (fast-reg) since the bind */
	if (!mw->mr->valid || !pvo_mr_covers(mw->mr, addr, len))
		return NULL;
	return mw->mr;
}
