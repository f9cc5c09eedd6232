// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Control queue commands. Each opcode declares the exact request body and
 * response body it needs; the dispatcher checks header, lengths and the
 * acting ucontext before a handler sees the body, and handlers check every
 * field they use. A bad command gets an error status, never a crash.
 */
#include <endian.h>
#include <string.h>

#include "ah.h"
#include "cq.h"
#include "ctrl.h"
#include "device.h"
#include "doorbell.h"
#include "engine.h"
#include "log.h"
#include "mcast.h"
#include "mr.h"
#include "mw.h"
#include "object_types.h"
#include "qp.h"
#include "srq.h"
#include "transport.h"

struct cmd_desc {
	const char *name;
	size_t req_len;		/* body after pvo_cmd_hdr */
	size_t resp_len;	/* body after pvo_resp_hdr on success */
	/* a response that grew: the room older guests give it (0: none) */
	size_t resp_min;
	enum pvo_status (*fn)(struct pvo_vm *vm, uint32_t ctx,
			      const void *req, void *resp);
	/* DESTROY_*, DEALLOC_*, DEREG_MR: no fn, the kind it destroys */
	bool destroys;
	enum pvo_obj_kind kind;
};

static enum pvo_status check_port(const struct pvo_cmd_port *c,
				  uint32_t index_limit)
{
	if (le32toh(c->port) != 1)
		return PVO_STATUS_EINVAL;
	if (le32toh(c->index) >= index_limit)
		return PVO_STATUS_EINVAL;
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_query_device(struct pvo_vm *vm, uint32_t ctx,
					const void *req, void *resp)
{
	pvo_device_attr(vm->cfg, resp);
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_query_port(struct pvo_vm *vm, uint32_t ctx,
				      const void *req, void *resp)
{
	const struct pvo_cmd_port *c = req;

	if (le32toh(c->port) != 1)
		return PVO_STATUS_EINVAL;
	pvo_device_port_attr(vm->cfg, resp);
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_query_gid(struct pvo_vm *vm, uint32_t ctx,
				     const void *req, void *resp)
{
	const struct pvo_cmd_port *c = req;
	struct pvo_resp_query_gid *r = resp;
	enum pvo_status st = check_port(c, PVO_GID_TABLE_LEN);
	struct pvo_gid_entry *e;

	if (st)
		return st;
	e = &vm->gids.e[le32toh(c->index)];
	if (!e->valid)
		return PVO_STATUS_ENOENT;
	memcpy(r->gid, e->gid, PVO_GID_LEN);
	r->type = htole32(e->type);
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_add_gid(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp)
{
	const struct pvo_cmd_add_gid *c = req;
	uint32_t index = le32toh(c->index);
	char buf[64];
	int i;

	if (le32toh(c->port) != 1 || index >= PVO_GID_TABLE_LEN ||
	    le32toh(c->type) != PVO_GID_TYPE_ROCE_V2 || c->reserved)
		return PVO_STATUS_EINVAL;
	if (ctx != PVO_CTX_KERNEL)
		return PVO_STATUS_EPERM;
	if (!pvo_gid_allowed(vm->cfg, c->gid)) {
		pvo_vm_warn(vm,
			 "refused GID %s: not in the VM's allowed IPs "
			 "(config key 'ips')",
			 pvo_gid_str(c->gid, buf, sizeof(buf)));
		return PVO_STATUS_EPERM;
	}
	/* One GID lives in one slot; installing it twice is a driver bug. */
	for (i = 0; i < PVO_GID_TABLE_LEN; i++)
		if (i != (int)index && vm->gids.e[i].valid &&
		    memcmp(vm->gids.e[i].gid, c->gid, PVO_GID_LEN) == 0)
			return PVO_STATUS_EBUSY;
	vm->gids.e[index].valid = true;
	memcpy(vm->gids.e[index].gid, c->gid, PVO_GID_LEN);
	vm->gids.e[index].type = PVO_GID_TYPE_ROCE_V2;
	pvo_local_routes_changed();
	pvo_debug(pvo_vm_name(vm), "GID %u = %s", index,
		  pvo_gid_str(c->gid, buf, sizeof(buf)));
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_del_gid(struct pvo_vm *vm, uint32_t ctx,
				   const void *req, void *resp)
{
	const struct pvo_cmd_port *c = req;
	enum pvo_status st = check_port(c, PVO_GID_TABLE_LEN);

	if (st)
		return st;
	if (ctx != PVO_CTX_KERNEL)
		return PVO_STATUS_EPERM;
	if (!vm->gids.e[le32toh(c->index)].valid)
		return PVO_STATUS_ENOENT;
	memset(&vm->gids.e[le32toh(c->index)], 0, sizeof(struct pvo_gid_entry));
	pvo_local_routes_changed();
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_query_pkey(struct pvo_vm *vm, uint32_t ctx,
				      const void *req, void *resp)
{
	struct pvo_resp_query_pkey *r = resp;
	enum pvo_status st = check_port(req, 1);

	if (st)
		return st;
	r->pkey = htole16(0xffff);	/* the default, full-member P_Key */
	return PVO_STATUS_OK;
}

/*
 * A doorbell page for a new context: a free user queue page while there is
 * one (an ioeventfd, the fastest doorbell), else a free slot page on a
 * started queue. Returns the page, or 0 if none is free.
 */
static uint32_t pick_db_page(struct pvo_vm *vm, uint32_t *queue)
{
	struct pvo_db_notify *n = &vm->notify;
	unsigned int q, s, nq = pvo_device_max_queues(vm->cfg);

	for (q = PVO_VQ_DB_FIRST_USER; q < nq; q++)
		if (!vm->db_queue_ctx[q] && pvo_vm_queue_started(vm, q)) {
			*queue = q;
			return q;
		}
	if (!n->set)
		return 0;
	for (s = 0; s < PVO_MAX_DB_SLOTS; s++) {
		q = pvo_db_slot_queue(n->num_queues, s);
		if (!n->slot_ctx[s] && pvo_vm_queue_started(vm, q)) {
			*queue = q;
			return PVO_DB_SLOT_PAGE0 + s;
		}
	}
	return 0;
}

static enum pvo_status cmd_alloc_ucontext(struct pvo_vm *vm, uint32_t ctx,
					  const void *req, void *resp)
{
	struct pvo_resp_alloc_ucontext *r = resp;
	struct pvo_ucontext *uctx;
	uint32_t page, q = 0;

	if (ctx != PVO_CTX_KERNEL)
		return PVO_STATUS_EINVAL;
	page = pick_db_page(vm, &q);
	if (!page) {
		pvo_vm_warn(vm,
			 "no free doorbell page for a new user context "
			 "(%u in use)%s",
			 vm->ucontexts.count,
			 vm->notify.set ? "" :
			 ": the driver did not set up slot pages "
			 "(SET_NOTIFY_AREA); update the guest driver");
		return PVO_STATUS_ENOSPC;
	}
	uctx = g_new0(struct pvo_ucontext, 1);
	uctx->handle = pvo_table_add(&vm->ucontexts, uctx, PVO_CTX_KERNEL);
	if (!uctx->handle) {
		g_free(uctx);
		pvo_vm_warn(vm,
			 "user context quota reached (max-ucontexts = %u)",
			 vm->cfg->quota.max_ucontexts);
		return PVO_STATUS_ENOSPC;
	}
	uctx->db_queue = q;
	uctx->db_page = page;
	if (page < PVO_DB_SLOT_PAGE0)
		vm->db_queue_ctx[q] = uctx->handle;
	else
		vm->notify.slot_ctx[page - PVO_DB_SLOT_PAGE0] = uctx->handle;
	r->ctx = htole32(uctx->handle);
	r->db_queue = htole32(q);
	r->db_page = htole32(page);
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_dealloc_ucontext(struct pvo_vm *vm, uint32_t ctx,
					    const void *req, void *resp)
{
	struct pvo_ucontext *uctx;

	if (ctx == PVO_CTX_KERNEL)
		return PVO_STATUS_EINVAL;
	uctx = pvo_table_get(&vm->ucontexts, ctx, PVO_CTX_KERNEL);
	if (!uctx)
		return PVO_STATUS_ENOENT;
	pvo_vm_destroy_ucontext(vm, uctx);
	return PVO_STATUS_OK;
}

static enum pvo_status cmd_alloc_pd(struct pvo_vm *vm, uint32_t ctx,
				    const void *req, void *resp)
{
	struct pvo_resp_alloc_pd *r = resp;
	struct pvo_pd *pd = g_new0(struct pvo_pd, 1);

	pd->ctx = ctx;
	pd->handle = pvo_table_add(&vm->pds, pd, ctx);
	if (!pd->handle) {
		g_free(pd);
		pvo_vm_warn(vm, "PD quota reached (max-pd = %u)",
			 vm->cfg->quota.max_pd);
		return PVO_STATUS_ENOSPC;
	}
	r->pd = htole32(pd->handle);
	return PVO_STATUS_OK;
}

#define CMD(op, fn, req, resp) \
	[PVO_CMD_##op] = { #op, req, resp, 0, fn }
#define CMD_GREW(op, fn, req, resp, min) \
	[PVO_CMD_##op] = { #op, req, resp, min, fn }
#define CMD_DESTROY(op, obj)                                   \
	[PVO_CMD_##op] = { #op, sizeof(struct pvo_cmd_handle), 0, 0, NULL, \
			   true, PVO_OBJ_##obj }

static const struct cmd_desc cmds[PVO_CMD_MAX] = {
	CMD(QUERY_DEVICE, cmd_query_device, 0,
	    sizeof(struct pvo_resp_query_device)),
	CMD(QUERY_PORT, cmd_query_port, sizeof(struct pvo_cmd_port),
	    sizeof(struct pvo_resp_query_port)),
	CMD(QUERY_GID, cmd_query_gid, sizeof(struct pvo_cmd_port),
	    sizeof(struct pvo_resp_query_gid)),
	CMD(ADD_GID, cmd_add_gid, sizeof(struct pvo_cmd_add_gid), 0),
	CMD(DEL_GID, cmd_del_gid, sizeof(struct pvo_cmd_port), 0),
	CMD(QUERY_PKEY, cmd_query_pkey, sizeof(struct pvo_cmd_port),
	    sizeof(struct pvo_resp_query_pkey)),
	CMD(ALLOC_UCONTEXT, cmd_alloc_ucontext, 0,
	    sizeof(struct pvo_resp_alloc_ucontext)),
	CMD(DEALLOC_UCONTEXT, cmd_dealloc_ucontext, 0, 0),
	CMD(ALLOC_PD, cmd_alloc_pd, 0, sizeof(struct pvo_resp_alloc_pd)),
	CMD_DESTROY(DEALLOC_PD, PD),
	CMD(SET_DB_RING, pvo_cmd_set_db_ring,
	    sizeof(struct pvo_cmd_set_db_ring), 0),
	CMD(SET_NOTIFY_AREA, pvo_cmd_set_notify_area,
	    sizeof(struct pvo_cmd_set_notify_area), 0),
	CMD(ALLOC_MR, pvo_cmd_alloc_mr, sizeof(struct pvo_cmd_alloc_mr),
	    sizeof(struct pvo_resp_reg_mr)),
	CMD(ATTACH_MCAST, pvo_cmd_attach_mcast, sizeof(struct pvo_cmd_mcast), 0),
	CMD(DETACH_MCAST, pvo_cmd_detach_mcast, sizeof(struct pvo_cmd_mcast), 0),
	CMD(RESIZE_CQ, pvo_cmd_resize_cq, sizeof(struct pvo_cmd_resize_cq), 0),
	CMD(REREG_MR, pvo_cmd_rereg_mr, sizeof(struct pvo_cmd_rereg_mr),
	    sizeof(struct pvo_resp_reg_mr)),
	CMD(ALLOC_MW, pvo_cmd_alloc_mw, sizeof(struct pvo_cmd_alloc_mw),
	    sizeof(struct pvo_resp_alloc_mw)),
	CMD_DESTROY(DEALLOC_MW, MW),
	CMD(RESIZE_SRQ, pvo_cmd_resize_srq, sizeof(struct pvo_cmd_resize_srq),
	    0),
	CMD(CREATE_CQ, pvo_cmd_create_cq, sizeof(struct pvo_cmd_create_cq),
	    sizeof(struct pvo_resp_create_cq)),
	CMD_DESTROY(DESTROY_CQ, CQ),
	CMD(REG_MR, pvo_cmd_reg_mr, sizeof(struct pvo_cmd_reg_mr),
	    sizeof(struct pvo_resp_reg_mr)),
	CMD_DESTROY(DEREG_MR, MR),
	CMD(CREATE_QP, pvo_cmd_create_qp, sizeof(struct pvo_cmd_create_qp),
	    sizeof(struct pvo_resp_create_qp)),
	CMD(MODIFY_QP, pvo_cmd_modify_qp, sizeof(struct pvo_cmd_modify_qp), 0),
	CMD(QUERY_QP, pvo_cmd_query_qp, sizeof(struct pvo_cmd_handle),
	    sizeof(struct pvo_qp_attr)),
	CMD_DESTROY(DESTROY_QP, QP),
	CMD_GREW(CREATE_SRQ, pvo_cmd_create_srq,
		 sizeof(struct pvo_cmd_create_srq),
		 sizeof(struct pvo_resp_create_srq), PVO_RESP_CREATE_SRQ_MIN),
	CMD(MODIFY_SRQ, pvo_cmd_modify_srq, sizeof(struct pvo_cmd_modify_srq),
	    0),
	CMD(QUERY_SRQ, pvo_cmd_query_srq, sizeof(struct pvo_cmd_handle),
	    sizeof(struct pvo_resp_query_srq)),
	CMD_DESTROY(DESTROY_SRQ, SRQ),
	CMD(CREATE_AH, pvo_cmd_create_ah, sizeof(struct pvo_cmd_create_ah),
	    sizeof(struct pvo_resp_create_ah)),
	CMD_DESTROY(DESTROY_AH, AH),
};

const char *pvo_cmd_name(unsigned int opcode)
{
	if (opcode < PVO_CMD_MAX && cmds[opcode].name)
		return cmds[opcode].name;
	return "unknown";
}

static enum pvo_status dispatch(struct pvo_vm *vm, const uint8_t *req,
				size_t req_len, uint8_t *body, size_t body_room,
				size_t *body_len)
{
	struct pvo_cmd_hdr hdr, *h = &hdr;
	uint64_t in[PVO_CTRL_MAX_MSG / sizeof(uint64_t)];
	uint64_t out[PVO_CTRL_MAX_MSG / sizeof(uint64_t)];
	const struct cmd_desc *d;
	enum pvo_status st;
	unsigned int opcode;
	uint32_t ctx;

	*body_len = 0;
	if (req_len < sizeof(*h))
		return PVO_STATUS_EINVAL;
	memcpy(&hdr, req, sizeof(hdr));
	opcode = le16toh(h->opcode);
	ctx = le32toh(h->ctx);
	if (opcode >= PVO_CMD_MAX ||
	    (!cmds[opcode].fn && !cmds[opcode].destroys))
		return PVO_STATUS_EOPNOTSUPP;
	d = &cmds[opcode];
	if (h->flags)
		return PVO_STATUS_EINVAL;
	if (req_len - sizeof(*h) < d->req_len ||
	    body_room < (d->resp_min ? d->resp_min : d->resp_len))
		return PVO_STATUS_EINVAL;
	if (ctx != PVO_CTX_KERNEL &&
	    !pvo_table_get(&vm->ucontexts, ctx, PVO_CTX_KERNEL))
		return PVO_STATUS_ENOENT;
	/* Handlers see the bodies as their structs: aligned copies. */
	memcpy(in, req + sizeof(*h), d->req_len);
	memset(out, 0, d->resp_len);
	st = d->destroys ? pvo_obj_destroy(vm, ctx, d->kind, in) :
			   d->fn(vm, ctx, in, out);
	/* a guest that gave the old room gets the old response */
	*body_len = d->resp_len < body_room ? d->resp_len : body_room;
	memcpy(body, out, *body_len);
	return st;
}

size_t pvo_ctrl_execute(struct pvo_vm *vm, const void *req, size_t req_len,
			void *resp, size_t resp_len)
{
	struct pvo_resp_hdr *rh = resp;
	const struct pvo_cmd_hdr *h = req;
	enum pvo_status st;
	size_t body_len;

	if (resp_len < sizeof(*rh)) {
		vm->stats.cmd_errors++;
		return 0;
	}
	vm->ctrl_waits = false;
	st = dispatch(vm, req, req_len, (uint8_t *)resp + sizeof(*rh),
		      resp_len - sizeof(*rh), &body_len);
	if (st == PVO_STATUS_AGAIN)
		return PVO_CTRL_AGAIN;
	/* whatever a command left part-way, another command ends it */
	pvo_mr_build_drop(vm);
	vm->stats.cmds++;
	if (st) {
		vm->stats.cmd_errors++;
		body_len = 0;
		pvo_debug(pvo_vm_name(vm), "command %s failed with status %d",
			  req_len >= sizeof(*h) ?
				  pvo_cmd_name(le16toh(h->opcode)) : "(short)",
			  st);
	}
	memset(rh, 0, sizeof(*rh));
	rh->status = htole32(st);
	return sizeof(*rh) + body_len;
}
