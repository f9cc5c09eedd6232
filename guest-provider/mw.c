// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows. The kernel makes and frees them; binds are work
 * requests on the application's SQ (ibv_bind_mw for type 1, IBV_WR_BIND_MW
 * or ibv_wr_bind_mw for type 2), which the device runs in SQ order and
 * checks, completing with IBV_WC_MW_BIND_ERR when a bind is not allowed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pvrdma_overlay.h"

struct ibv_mw *pvo_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int pvo_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/*
 * The bind fields of a send WQE. IBV_ACCESS_LOCAL_WRITE means nothing
 * for a window and is dropped; zero-based windows are not offered.
 */
int pvo_write_bind(struct pvo_send_wqe *wqe, uint32_t rkey,
		   const struct ibv_mw_bind_info *info)
{
	unsigned int access = info->mw_access_flags & ~IBV_ACCESS_LOCAL_WRITE;

	if (access & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	if (info->length && !info->mr)
		return EINVAL;
	wqe->u.bind.addr = htole64(info->addr);
	wqe->u.bind.length = htole64(info->length);
	wqe->u.bind.rkey = htole32(rkey);
	wqe->u.bind.mr_lkey = htole32(info->length ? info->mr->lkey : 0);
	wqe->u.bind.access = htole32(access);
	return 0;
}

/* Type 1: a new key byte with every bind; the key is the window's from
 * the moment the bind is posted (a failed bind leaves it to the caller). */
int pvo_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {}, *bad_wr;
	int ret;

	if (mw->type != IBV_MW_TYPE_1 || mw->pd != qp->pd)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = pvo_post_send(qp, &wr, &bad_wr);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
