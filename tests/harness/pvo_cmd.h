/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pvrdma-overlay control commands (include/pvo-device.h) over the native
 * test front-end: build a request, submit it on the control queue as one
 * device-readable and one device-writable buffer, return the status and
 * the response body.
 *
 * Return convention of every call here: >= 0 is the enum pvo_status the
 * back-end wrote; < 0 is -errno when no status came back (timeout,
 * connection lost, used length too short for a response header), with the
 * reason in vu_frontend_error().
 */
#ifndef PVO_CMD_H
#define PVO_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pvo-device.h"
#include "vu_frontend.h"

/* The config space size QEMU's device reads with GET_CONFIG. */
#define PVO_CONFIG_SIZE sizeof(struct pvo_config)

/* What actually came back for one command. */
struct pvo_cmd_result {
	uint32_t used_len; /* as the device reported it */
	uint32_t status;   /* valid when used_len >= sizeof(pvo_resp_hdr) */
	uint32_t resp_len; /* body bytes: used_len - sizeof(pvo_resp_hdr) */
};

/*
 * Raw exchange: @req (header + body, any bytes) as one readable buffer,
 * @resp_cap bytes as one writable buffer (poisoned with 0xa5 first so a
 * short write shows). Either length may be 0 to leave that buffer out.
 * The whole written area (up to resp_cap) is copied to @resp. Returns 0
 * once the used entry arrived, whatever it says; -errno otherwise.
 */
int pvo_cmd_raw(struct vu_frontend *fe, const void *req, size_t req_len,
		void *resp, size_t resp_cap, struct pvo_cmd_result *res);

/*
 * Build a header {opcode, flags, ctx} + @body, give the device room for
 * the header + @resp_cap body bytes, copy the body it wrote to @resp.
 * *resp_len (optional) gets the body length the device reported.
 */
int pvo_cmd(struct vu_frontend *fe, uint16_t opcode, uint16_t flags,
	    uint32_t ctx, const void *body, size_t body_len, void *resp,
	    size_t resp_cap, size_t *resp_len);

int pvo_query_device(struct vu_frontend *fe, struct pvo_resp_query_device *r);
int pvo_query_port(struct vu_frontend *fe, uint32_t port,
		   struct pvo_resp_query_port *r);
int pvo_query_gid(struct vu_frontend *fe, uint32_t port, uint32_t index,
		  struct pvo_resp_query_gid *r);
int pvo_add_gid(struct vu_frontend *fe, uint32_t port, uint32_t index,
		const uint8_t gid[PVO_GID_LEN], uint32_t type);
int pvo_del_gid(struct vu_frontend *fe, uint32_t port, uint32_t index);
int pvo_query_pkey(struct vu_frontend *fe, uint32_t port, uint32_t index,
		   struct pvo_resp_query_pkey *r);
/* @db_queue, @db_page: NULL if not wanted */
int pvo_alloc_ucontext(struct vu_frontend *fe, uint32_t *ctx,
		       uint32_t *db_queue, uint32_t *db_page);
int pvo_set_notify_area(struct vu_frontend *fe, uint64_t gpa,
			uint32_t num_queues);
int pvo_dealloc_ucontext(struct vu_frontend *fe, uint32_t ctx);
int pvo_alloc_pd(struct vu_frontend *fe, uint32_t ctx, uint32_t *pd);
int pvo_dealloc_pd(struct vu_frontend *fe, uint32_t ctx, uint32_t pd);

/*
 * Data-path commands (interface version 2). Bodies are in wire format
 * (little-endian fields), so tests can send any bytes they like; handles
 * come back in host order.
 */
int pvo_set_db_ring(struct vu_frontend *fe, uint32_t ctx, uint64_t gpa);
int pvo_rereg_mr(struct vu_frontend *fe, uint32_t ctx,
		 const struct pvo_cmd_rereg_mr *c, uint32_t *key);
int pvo_resize_cq(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_resize_cq *c);
int pvo_resize_srq(struct vu_frontend *fe, uint32_t ctx,
		   const struct pvo_cmd_resize_srq *c);
int pvo_create_cq(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_create_cq *c, uint32_t *cq);
int pvo_reg_mr(struct vu_frontend *fe, uint32_t ctx,
	       const struct pvo_cmd_reg_mr *c, uint32_t *mr, uint32_t *key);
/* ATTACH_MCAST / DETACH_MCAST (@opcode) of QP @qp to group @gid. */
int pvo_mcast(struct vu_frontend *fe, uint16_t opcode, uint32_t ctx,
	      uint32_t qp, const uint8_t *gid);
/* Fast-reg MR (kernel contexts only). */
int pvo_alloc_mr(struct vu_frontend *fe, uint32_t ctx, uint32_t pd,
		 uint32_t max_pages, uint32_t *mr, uint32_t *key);
/* Memory window of @type (1 or 2). */
int pvo_alloc_mw(struct vu_frontend *fe, uint32_t ctx, uint32_t pd,
		 uint32_t type, uint32_t *mw, uint32_t *rkey);
/* flags (may be NULL): PVO_QP_RESP_F_* of the response */
int pvo_create_qp(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_create_qp *c, uint32_t *qp,
		  uint32_t *qpn, uint32_t *flags);
int pvo_modify_qp(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_modify_qp *c);
int pvo_query_qp(struct vu_frontend *fe, uint32_t ctx, uint32_t qp,
		 struct pvo_qp_attr *attr);
/* The whole response in resp_size bytes of room (PVO_RESP_CREATE_SRQ_MIN:
 * as a guest that predates its flags). */
int pvo_create_srq_resp(struct vu_frontend *fe, uint32_t ctx,
			const struct pvo_cmd_create_srq *c,
			struct pvo_resp_create_srq *r, size_t resp_size);
int pvo_create_srq(struct vu_frontend *fe, uint32_t ctx,
		   const struct pvo_cmd_create_srq *c, uint32_t *srq,
		   uint32_t *srqn);
int pvo_modify_srq(struct vu_frontend *fe, uint32_t ctx,
		   const struct pvo_cmd_modify_srq *c);
int pvo_query_srq(struct vu_frontend *fe, uint32_t ctx, uint32_t srq,
		  struct pvo_resp_query_srq *r);
int pvo_create_ah(struct vu_frontend *fe, uint32_t ctx,
		  const struct pvo_cmd_create_ah *c, uint32_t *ah);
/* DESTROY_CQ, DEREG_MR, DESTROY_QP, DESTROY_SRQ, DESTROY_AH */
int pvo_destroy(struct vu_frontend *fe, uint16_t opcode, uint32_t ctx,
		uint32_t handle);

/* "OK", "EINVAL", ... or "status N"; negative values name the errno. */
const char *pvo_status_name(int status);

/* GIDs as the back-end should derive them. */
void pvo_gid_from_ipv4(uint8_t gid[PVO_GID_LEN], const char *dotted);
void pvo_gid_link_local_from_mac(uint8_t gid[PVO_GID_LEN],
				 const uint8_t mac[6]);
/* "fe80::..." style text for diagnostics (static buffer, two slots). */
const char *pvo_gid_str(const uint8_t gid[PVO_GID_LEN]);

/* TAP: assert status == want, naming both statuses on failure. */
#define TAP_STATUS(got, want, ...) tap_check_status((got), (want), __VA_ARGS__)
bool tap_check_status(int got, int want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* PVO_CMD_H */
