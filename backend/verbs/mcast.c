// SPDX-License-Identifier: GPL-2.0-or-later
/* UD multicast membership; see mcast.h. */
#include <endian.h>
#include <string.h>
#include <glib.h>

#include "engine.h"
#include "mcast.h"
#include "qp.h"
#include "vm.h"

bool pvo_gid_is_multicast(const uint8_t *gid)
{
	static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};

	if (gid[0] == 0xff)
		return true;
	return !memcmp(gid, v4mapped, sizeof(v4mapped)) &&
	       (gid[12] & 0xf0) == 0xe0;
}

static int find(const struct pvo_qp *qp, const uint8_t *gid)
{
	uint32_t i;

	for (i = 0; i < qp->nmcast; i++)
		if (!memcmp(qp->mcast[i], gid, PVO_GID_LEN))
			return (int)i;
	return -1;
}

bool pvo_mcast_member(const struct pvo_qp *qp, const uint8_t *gid)
{
	return find(qp, gid) >= 0;
}

static enum pvo_status lookup(struct pvo_vm *vm, uint32_t ctx,
			      const struct pvo_cmd_mcast *c,
			      struct pvo_qp **qp)
{
	if (c->reserved || !pvo_gid_is_multicast(c->gid))
		return PVO_STATUS_EINVAL;
	*qp = pvo_table_get(&vm->qps, le32toh(c->qp), ctx);
	if (!*qp)
		return PVO_STATUS_ENOENT;
	if ((*qp)->type != PVO_QPT_UD)
		return PVO_STATUS_EINVAL;
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_attach_mcast(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, void *resp)
{
	const struct pvo_cmd_mcast *c = req;
	enum pvo_status st;
	struct pvo_qp *qp;

	st = lookup(vm, ctx, c, &qp);
	if (st)
		return st;
	if (pvo_vm_eng_has(vm, qp_attach_mcast)) {
		st = vm->eng->qp_attach_mcast(qp);
		if (st)
			return st;
	}
	if (find(qp, c->gid) >= 0)
		return PVO_STATUS_OK;
	if (qp->nmcast == PVO_MAX_MCAST_PER_QP) {
		pvo_vm_warn(vm,
			    "QP 0x%x is in %u multicast groups already, the "
			    "most a QP may join",
			    qp->qpn, PVO_MAX_MCAST_PER_QP);
		return PVO_STATUS_ENOSPC;
	}
	if (!qp->mcast)
		qp->mcast = g_malloc((size_t)PVO_MAX_MCAST_PER_QP * PVO_GID_LEN);
	memcpy(qp->mcast[qp->nmcast++], c->gid, PVO_GID_LEN);
	if (qp->nmcast == 1)
		g_ptr_array_add(vm->mcast_qps, qp);
	return PVO_STATUS_OK;
}

enum pvo_status pvo_cmd_detach_mcast(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, void *resp)
{
	const struct pvo_cmd_mcast *c = req;
	enum pvo_status st;
	struct pvo_qp *qp;
	int i;

	st = lookup(vm, ctx, c, &qp);
	if (st)
		return st;
	i = find(qp, c->gid);
	if (i < 0)
		return PVO_STATUS_ENOENT;
	memmove(qp->mcast[i], qp->mcast[i + 1],
		(qp->nmcast - (uint32_t)i - 1) * PVO_GID_LEN);
	if (--qp->nmcast == 0)
		g_ptr_array_remove_fast(vm->mcast_qps, qp);
	return PVO_STATUS_OK;
}

void pvo_mcast_forget_qp(struct pvo_qp *qp)
{
	if (qp->nmcast)
		g_ptr_array_remove_fast(qp->vm->mcast_qps, qp);
	qp->nmcast = 0;
	g_free(qp->mcast);
	qp->mcast = NULL;
}
