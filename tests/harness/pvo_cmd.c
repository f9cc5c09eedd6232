// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvrdma-overlay control-queue commands for the native test front-end.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvo_cmd.h"
#include "tap.h"

#define RESP_POISON 0xa5
#define CMD_MAX_BYTES 4096

/* Stage buffers in guest RAM, run the chain, copy the answer back. */
int pvo_cmd_raw(struct vu_frontend *fe, const void *req, size_t req_len,
		void *resp, size_t resp_cap, struct pvo_cmd_result *res)
{
	struct vq_buf out = {0}, in = {0};
	uint32_t used_len = 0;
	int ret;

	memset(res, 0, sizeof(*res));
	if (req_len > CMD_MAX_BYTES || resp_cap > CMD_MAX_BYTES)
		return -EINVAL;
	if (req_len) {
		out.gpa = guest_ram_alloc(&fe->ram, req_len, 64);
		out.len = (uint32_t)req_len;
		if (out.gpa == GUEST_RAM_NO_ADDR)
			return -ENOMEM;
		guest_ram_write(&fe->ram, out.gpa, req, req_len);
	}
	if (resp_cap) {
		in.gpa = guest_ram_alloc(&fe->ram, resp_cap, 64);
		in.len = (uint32_t)resp_cap;
		if (in.gpa == GUEST_RAM_NO_ADDR) {
			ret = -ENOMEM;
			goto out;
		}
		guest_ram_fill(&fe->ram, in.gpa, RESP_POISON, resp_cap);
	}

	ret = vu_call(fe, PVO_VQ_CTRL, &out, req_len ? 1 : 0, &in,
		      resp_cap ? 1 : 0, &used_len);
	if (ret == -ETIMEDOUT || ret == -ECONNRESET) {
		/* The device may still own the buffers: never reuse them. */
		return ret;
	}
	if (ret < 0)
		goto out;
	res->used_len = used_len;
	if (resp_cap)
		guest_ram_read(&fe->ram, in.gpa, resp, resp_cap);
	if (used_len >= sizeof(struct pvo_resp_hdr) &&
	    resp_cap >= sizeof(struct pvo_resp_hdr)) {
		struct pvo_resp_hdr h;

		memcpy(&h, resp, sizeof(h));
		res->status = le32toh(h.status);
		res->resp_len = used_len - sizeof(struct pvo_resp_hdr);
	}
out:
	if (req_len && out.gpa != GUEST_RAM_NO_ADDR)
		guest_ram_free(&fe->ram, out.gpa);
	if (resp_cap && in.gpa != GUEST_RAM_NO_ADDR)
		guest_ram_free(&fe->ram, in.gpa);
	return ret;
}

int pvo_cmd(struct vu_frontend *fe, uint16_t opcode, uint16_t flags,
	    uint32_t ctx, const void *body, size_t body_len, void *resp,
	    size_t resp_cap, size_t *resp_len)
{
	uint8_t req[CMD_MAX_BYTES], rbuf[CMD_MAX_BYTES];
	struct pvo_cmd_hdr hdr = {
	    .opcode = htole16(opcode),
	    .flags = htole16(flags),
	    .ctx = htole32(ctx),
	};
	size_t rsize = sizeof(struct pvo_resp_hdr) + resp_cap;
	struct pvo_cmd_result res;
	int ret;

	if (sizeof(hdr) + body_len > sizeof(req) || rsize > sizeof(rbuf))
		return -EINVAL;
	memcpy(req, &hdr, sizeof(hdr));
	if (body_len)
		memcpy(req + sizeof(hdr), body, body_len);
	ret = pvo_cmd_raw(fe, req, sizeof(hdr) + body_len, rbuf, rsize, &res);
	if (ret < 0)
		return ret;
	if (res.used_len < sizeof(struct pvo_resp_hdr)) {
		snprintf(fe->err, sizeof(fe->err),
			 "opcode %u: used length %u is shorter than the "
			 "%zu-byte response header (room was %zu)",
			 opcode, res.used_len, sizeof(struct pvo_resp_hdr),
			 rsize);
		return -EPROTO;
	}
	if (res.used_len > rsize) {
		snprintf(fe->err, sizeof(fe->err),
			 "opcode %u: used length %u exceeds the %zu-byte "
			 "writable buffer",
			 opcode, res.used_len, rsize);
		return -EPROTO;
	}
	if (resp && resp_cap)
		memcpy(resp, rbuf + sizeof(struct pvo_resp_hdr), resp_cap);
	if (resp_len)
		*resp_len = res.resp_len;
	return (int)res.status;
}

/*
 * A successful fixed-size response must fill its whole body; a short one
 * is a protocol error (-EPROTO), not an answer.
 */
static int fixed_cmd(struct vu_frontend *fe, uint16_t opcode, uint32_t ctx,
		     const void *body, size_t body_len, void *resp,
		     size_t resp_size)
{
	size_t got = 0;
	int st;

	st = pvo_cmd(fe, opcode, 0, ctx, body, body_len, resp, resp_size, &got);
	if (st == PVO_STATUS_OK && got != resp_size) {
		snprintf(fe->err, sizeof(fe->err),
			 "opcode %u: status OK with a %zu-byte body, the "
			 "header defines %zu",
			 opcode, got, resp_size);
		return -EPROTO;
	}
	return st;
}

int pvo_query_device(struct vu_frontend *fe, struct pvo_resp_query_device *r)
{
	return fixed_cmd(fe, PVO_CMD_QUERY_DEVICE, PVO_CTX_KERNEL, NULL, 0, r,
			 sizeof(*r));
}

int pvo_query_port(struct vu_frontend *fe, uint32_t port,
		   struct pvo_resp_query_port *r)
{
	struct pvo_cmd_port c = {.port = htole32(port)};

	return fixed_cmd(fe, PVO_CMD_QUERY_PORT, PVO_CTX_KERNEL, &c, sizeof(c),
			 r, sizeof(*r));
}

int pvo_query_gid(struct vu_frontend *fe, uint32_t port, uint32_t index,
		  struct pvo_resp_query_gid *r)
{
	struct pvo_cmd_port c = {.port = htole32(port),
				 .index = htole32(index)};

	return fixed_cmd(fe, PVO_CMD_QUERY_GID, PVO_CTX_KERNEL, &c, sizeof(c),
			 r, sizeof(*r));
}

int pvo_add_gid(struct vu_frontend *fe, uint32_t port, uint32_t index,
		const uint8_t gid[PVO_GID_LEN], uint32_t type)
{
	struct pvo_cmd_add_gid c = {
	    .port = htole32(port),
	    .index = htole32(index),
	    .type = htole32(type),
	};

	memcpy(c.gid, gid, PVO_GID_LEN);
	return fixed_cmd(fe, PVO_CMD_ADD_GID, PVO_CTX_KERNEL, &c, sizeof(c),
			 NULL, 0);
}

int pvo_del_gid(struct vu_frontend *fe, uint32_t port, uint32_t index)
{
	struct pvo_cmd_port c = {.port = htole32(port),
				 .index = htole32(index)};

	return fixed_cmd(fe, PVO_CMD_DEL_GID, PVO_CTX_KERNEL, &c, sizeof(c),
			 NULL, 0);
}

int pvo_query_pkey(struct vu_frontend *fe, uint32_t port, uint32_t index,
		   struct pvo_resp_query_pkey *r)
{
	struct pvo_cmd_port c = {.port = htole32(port),
				 .index = htole32(index)};

	return fixed_cmd(fe, PVO_CMD_QUERY_PKEY, PVO_CTX_KERNEL, &c, sizeof(c),
			 r, sizeof(*r));
}

int pvo_alloc_ucontext(struct vu_frontend *fe, uint32_t *ctx,
		       uint32_t *db_queue, uint32_t *db_page)
{
	struct pvo_resp_alloc_ucontext r = {0};
	int st;

	st = fixed_cmd(fe, PVO_CMD_ALLOC_UCONTEXT, PVO_CTX_KERNEL, NULL, 0, &r,
		       sizeof(r));
	if (st == PVO_STATUS_OK) {
		*ctx = le32toh(r.ctx);
		if (db_queue)
			*db_queue = le32toh(r.db_queue);
		if (db_page)
			*db_page = le32toh(r.db_page);
	}
	return st;
}

int pvo_dealloc_ucontext(struct vu_frontend *fe, uint32_t ctx)
{
	return fixed_cmd(fe, PVO_CMD_DEALLOC_UCONTEXT, ctx, NULL, 0, NULL, 0);
}

int pvo_alloc_pd(struct vu_frontend *fe, uint32_t ctx, uint32_t *pd)
{
	struct pvo_resp_alloc_pd r = {0};
	int st;

	st = fixed_cmd(fe, PVO_CMD_ALLOC_PD, ctx, NULL, 0, &r, sizeof(r));
	if (st == PVO_STATUS_OK)
		*pd = le32toh(r.pd);
	return st;
}

int pvo_dealloc_pd(struct vu_frontend *fe, uint32_t ctx, uint32_t pd)
{
	struct pvo_cmd_dealloc_pd c = {.pd = htole32(pd)};

	return fixed_cmd(fe, PVO_CMD_DEALLOC_PD, ctx, &c, sizeof(c), NULL, 0);
}

int pvo_set_db_ring(struct vu_frontend *fe, uint32_t ctx, uint64_t gpa)
{
	struct pvo_cmd_set_db_ring c = {.gpa = htole64(gpa)};

	return fixed_cmd(fe, PVO_CMD_SET_DB_RING, ctx, &c, sizeof(c), NULL, 0);
}

int pvo_rereg_mr(struct vu_frontend *fe, uint32_t ctx,
		 const struct pvo_cmd_rereg_mr *c, uint32_t *key)
{
	struct pvo_resp_reg_mr r = {0};
	int st;

	st = fixed_cmd(fe, PVO_CMD_REREG_MR, ctx, c, sizeof(*c), &r, sizeof(r));
	if (st == PVO_STATUS_OK)
		*key = le32toh(r.key);
	return st;
}

int pvo_resize_cq(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_resize_cq *c)
{
	return fixed_cmd(fe, PVO_CMD_RESIZE_CQ, ctx, c, sizeof(*c), NULL, 0);
}

int pvo_resize_srq(struct vu_frontend *fe, uint32_t ctx,
		   const struct pvo_cmd_resize_srq *c)
{
	return fixed_cmd(fe, PVO_CMD_RESIZE_SRQ, ctx, c, sizeof(*c), NULL, 0);
}

int pvo_set_notify_area(struct vu_frontend *fe, uint64_t gpa,
			uint32_t num_queues)
{
	struct pvo_cmd_set_notify_area c = {
	    .gpa = htole64(gpa),
	    .num_queues = htole32(num_queues),
	};

	return fixed_cmd(fe, PVO_CMD_SET_NOTIFY_AREA, PVO_CTX_KERNEL, &c,
			 sizeof(c), NULL, 0);
}

int pvo_create_cq(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_create_cq *c, uint32_t *cq)
{
	struct pvo_resp_create_cq r = {0};
	int st;

	st =
	    fixed_cmd(fe, PVO_CMD_CREATE_CQ, ctx, c, sizeof(*c), &r, sizeof(r));
	if (st == PVO_STATUS_OK)
		*cq = le32toh(r.cq);
	return st;
}

int pvo_reg_mr(struct vu_frontend *fe, uint32_t ctx,
	       const struct pvo_cmd_reg_mr *c, uint32_t *mr, uint32_t *key)
{
	struct pvo_resp_reg_mr r = {0};
	int st;

	st = fixed_cmd(fe, PVO_CMD_REG_MR, ctx, c, sizeof(*c), &r, sizeof(r));
	if (st == PVO_STATUS_OK) {
		*mr = le32toh(r.mr);
		*key = le32toh(r.key);
	}
	return st;
}

int pvo_mcast(struct vu_frontend *fe, uint16_t opcode, uint32_t ctx,
	      uint32_t qp, const uint8_t *gid)
{
	struct pvo_cmd_mcast c = {.qp = htole32(qp)};

	memcpy(c.gid, gid, PVO_GID_LEN);
	return fixed_cmd(fe, opcode, ctx, &c, sizeof(c), NULL, 0);
}

int pvo_alloc_mr(struct vu_frontend *fe, uint32_t ctx, uint32_t pd,
		 uint32_t max_pages, uint32_t *mr, uint32_t *key)
{
	struct pvo_cmd_alloc_mr c = {htole32(pd), htole32(max_pages)};
	struct pvo_resp_reg_mr r = {0};
	int st;

	st = fixed_cmd(fe, PVO_CMD_ALLOC_MR, ctx, &c, sizeof(c), &r, sizeof(r));
	if (st == PVO_STATUS_OK) {
		*mr = le32toh(r.mr);
		*key = le32toh(r.key);
	}
	return st;
}

int pvo_alloc_mw(struct vu_frontend *fe, uint32_t ctx, uint32_t pd,
		 uint32_t type, uint32_t *mw, uint32_t *rkey)
{
	struct pvo_cmd_alloc_mw c = {htole32(pd), htole32(type)};
	struct pvo_resp_alloc_mw r = {0};
	int st;

	st = fixed_cmd(fe, PVO_CMD_ALLOC_MW, ctx, &c, sizeof(c), &r, sizeof(r));
	if (st == PVO_STATUS_OK) {
		*mw = le32toh(r.mw);
		*rkey = le32toh(r.rkey);
	}
	return st;
}

int pvo_create_qp(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_create_qp *c, uint32_t *qp,
		  uint32_t *qpn, uint32_t *flags)
{
	struct pvo_resp_create_qp r = {0};
	int st;

	st =
	    fixed_cmd(fe, PVO_CMD_CREATE_QP, ctx, c, sizeof(*c), &r, sizeof(r));
	if (st == PVO_STATUS_OK) {
		*qp = le32toh(r.qp);
		*qpn = le32toh(r.qpn);
		if (flags)
			*flags = le32toh(r.flags);
	}
	return st;
}

int pvo_modify_qp(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_modify_qp *c)
{
	return fixed_cmd(fe, PVO_CMD_MODIFY_QP, ctx, c, sizeof(*c), NULL, 0);
}

int pvo_query_qp(struct vu_frontend *fe, uint32_t ctx, uint32_t qp,
		 struct pvo_qp_attr *attr)
{
	struct pvo_cmd_handle c = {.handle = htole32(qp)};

	return fixed_cmd(fe, PVO_CMD_QUERY_QP, ctx, &c, sizeof(c), attr,
			 sizeof(*attr));
}

int pvo_create_srq_resp(struct vu_frontend *fe, uint32_t ctx,
			const struct pvo_cmd_create_srq *c,
			struct pvo_resp_create_srq *r, size_t resp_size)
{
	memset(r, 0, sizeof(*r));
	return fixed_cmd(fe, PVO_CMD_CREATE_SRQ, ctx, c, sizeof(*c), r,
			 resp_size);
}

int pvo_create_srq(struct vu_frontend *fe, uint32_t ctx,
		   const struct pvo_cmd_create_srq *c, uint32_t *srq,
		   uint32_t *srqn)
{
	struct pvo_resp_create_srq r;
	int st;

	st = pvo_create_srq_resp(fe, ctx, c, &r, sizeof(r));
	if (st == PVO_STATUS_OK) {
		*srq = le32toh(r.srq);
		if (srqn)
			*srqn = le32toh(r.srqn);
	}
	return st;
}

int pvo_modify_srq(struct vu_frontend *fe, uint32_t ctx,
		   const struct pvo_cmd_modify_srq *c)
{
	return fixed_cmd(fe, PVO_CMD_MODIFY_SRQ, ctx, c, sizeof(*c), NULL, 0);
}

int pvo_query_srq(struct vu_frontend *fe, uint32_t ctx, uint32_t srq,
		  struct pvo_resp_query_srq *r)
{
	struct pvo_cmd_handle c = {.handle = htole32(srq)};

	return fixed_cmd(fe, PVO_CMD_QUERY_SRQ, ctx, &c, sizeof(c), r,
			 sizeof(*r));
}

int pvo_create_ah(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_create_ah *c, uint32_t *ah)
{
	struct pvo_resp_create_ah r = {0};
	int st;

	st =
	    fixed_cmd(fe, PVO_CMD_CREATE_AH, ctx, c, sizeof(*c), &r, sizeof(r));
	if (st == PVO_STATUS_OK)
		*ah = le32toh(r.ah);
	return st;
}

int pvo_destroy(struct vu_frontend *fe, uint16_t opcode, uint32_t ctx,
		uint32_t handle)
{
	struct pvo_cmd_handle c = {.handle = htole32(handle)};

	return fixed_cmd(fe, opcode, ctx, &c, sizeof(c), NULL, 0);
}

const char *pvo_status_name(int status)
{
	static char buf[48];

	switch (status) {
	case PVO_STATUS_OK:
		return "OK";
	case PVO_STATUS_EINVAL:
		return "EINVAL";
	case PVO_STATUS_ENOENT:
		return "ENOENT";
	case PVO_STATUS_EPERM:
		return "EPERM";
	case PVO_STATUS_ENOSPC:
		return "ENOSPC";
	case PVO_STATUS_EOPNOTSUPP:
		return "EOPNOTSUPP";
	case PVO_STATUS_EBUSY:
		return "EBUSY";
	case PVO_STATUS_ENOMEM:
		return "ENOMEM";
	case PVO_STATUS_EFAULT:
		return "EFAULT";
	case PVO_STATUS_EHOSTUNREACH:
		return "EHOSTUNREACH";
	}
	if (status < 0)
		snprintf(buf, sizeof(buf), "no status (%s)", strerror(-status));
	else
		snprintf(buf, sizeof(buf), "status %d", status);
	return buf;
}

void pvo_gid_from_ipv4(uint8_t gid[PVO_GID_LEN], const char *dotted)
{
	struct in_addr a = {0};

	memset(gid, 0, PVO_GID_LEN);
	gid[10] = 0xff;
	gid[11] = 0xff;
	if (inet_pton(AF_INET, dotted, &a) == 1)
		memcpy(gid + 12, &a, 4);
}

void pvo_gid_link_local_from_mac(uint8_t gid[PVO_GID_LEN], const uint8_t mac[6])
{
	/* fe80::/64 + modified EUI-64 of the MAC (RoCE default GID) */
	memset(gid, 0, PVO_GID_LEN);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 0x02;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

const char *pvo_gid_str(const uint8_t gid[PVO_GID_LEN])
{
	static char buf[2][INET6_ADDRSTRLEN];
	static unsigned int slot;
	char *b = buf[slot++ % 2];

	if (!inet_ntop(AF_INET6, gid, b, INET6_ADDRSTRLEN))
		snprintf(b, INET6_ADDRSTRLEN, "(bad gid)");
	return b;
}

bool tap_check_status(int got, int want, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ok = tap_ok(got == want, "%s", what);
	if (!ok)
		tap_diag("  expected status %s, got %s", pvo_status_name(want),
			 pvo_status_name(got));
	return ok;
}
