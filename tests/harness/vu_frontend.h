/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Native test front-end: plays QEMU's part of vhost-user against a
 * back-end socket. Owns a memfd "guest RAM", negotiates features the way
 * QEMU's vhost-user code does, lays out split virtqueues in guest RAM and
 * submits descriptor chains. Raw helpers let tests send what QEMU never
 * would (truncated messages, bad descriptors).
 *
 * Typical use:
 *	fe = vu_frontend_new(&opts, err, sizeof(err));
 *	vu_frontend_connect(fe) / vu_frontend_negotiate(fe) /
 *	vu_frontend_get_config(fe, ...) / vu_frontend_start(fe)
 *	(or all four via vu_frontend_open()), then vu_call() on queues.
 *
 * Functions returning int give 0 (or a count) on success and -errno on
 * failure, with a readable reason in vu_frontend_error().
 */
#ifndef VU_FRONTEND_H
#define VU_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_ram.h"
#include "split_vq.h"

/* vhost-user message numbers (front-end -> back-end) */
enum vu_request {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_GET_CONFIG = 24,
	VU_SET_CONFIG = 25,
	VU_POSTCOPY_ADVISE = 28,
	VU_GET_INFLIGHT_FD = 31,
	VU_RESET_DEVICE = 34,
	VU_GET_MAX_MEM_SLOTS = 36,
	VU_SET_STATUS = 39,
	VU_GET_STATUS = 40,
	VU_SET_DEVICE_STATE_FD = 42,
	VU_CHECK_DEVICE_STATE = 43,
};

#define VU_FLAG_VERSION 0x1u
#define VU_FLAG_REPLY (1u << 2)
#define VU_FLAG_NEED_REPLY (1u << 3)
#define VU_VRING_NOFD (1ull << 8)
#define VU_MAX_FDS 8	  /* what a back-end must accept */
#define VU_RAW_MAX_FDS 32 /* what vu_send_raw() can attach */
#define VU_MAX_MEM_REGIONS 8
#define VU_MAX_CONFIG_SIZE 256
#define VU_MAX_QUEUES 256

/* virtio / vhost-user feature bits */
#define VU_F_VIRTIO_VERSION_1 32
#define VU_F_LOG_ALL 26
#define VU_F_PROTOCOL_FEATURES 30
#define VU_F_RING_INDIRECT_DESC 28
#define VU_F_RING_EVENT_IDX 29

#define VU_PROTOCOL_F_MQ 0
#define VU_PROTOCOL_F_LOG_SHMFD 1
#define VU_PROTOCOL_F_REPLY_ACK 3
#define VU_PROTOCOL_F_BACKEND_REQ 5
#define VU_PROTOCOL_F_CONFIG 9
#define VU_PROTOCOL_F_RESET_DEVICE 13
#define VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS 15
#define VU_PROTOCOL_F_STATUS 16
/* virtio device status bits (SET_STATUS) */
#define VU_STATUS_ACKNOWLEDGE 1
#define VU_STATUS_DRIVER 2
#define VU_STATUS_DRIVER_OK 4
#define VU_PROTOCOL_F_DEVICE_STATE 19

/* Wire header; all vhost-user numbers are host byte order. */
struct vu_msg_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
} __attribute__((packed));

struct vu_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
};

struct vu_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vu_mem_region regions[VU_MAX_MEM_REGIONS];
};

struct vu_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vu_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
};

struct vu_config_msg {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VU_MAX_CONFIG_SIZE];
};
#define VU_CONFIG_HDR_SIZE 12

struct vu_options {
	const char *socket_path;
	uint64_t ram_size;	  /* default 64 MiB */
	unsigned int ram_regions; /* 1 or 2, default 2 */
	uint16_t queue_size;	  /* default 128 */
	/* vrings to set up; 0 = as many as GET_QUEUE_NUM reports */
	unsigned int num_queues;
	/* virtio feature bits to accept besides VERSION_1, if offered */
	uint64_t extra_features;
	/* ask for a REPLY_ACK on every message without a reply (if offered) */
	bool ack_every_message;
	int timeout_ms; /* default: env PVO_TEST_TIMEOUT_MS or 5000 */
	/* vu_frontend_open(): GET_CONFIG of this many bytes into config[] */
	uint32_t config_size;
	/*
	 * Pause between SET_VRING_KICK and SET_VRING_CALL (QEMU's order), to
	 * make a back-end that processes a ring before it has the call fd
	 * show it every time instead of now and then.
	 */
	unsigned int kick_call_gap_ms;
	/*
	 * As QEMU: negotiate VHOST_USER_PROTOCOL_F_STATUS (if offered), set
	 * ACKNOWLEDGE | DRIVER | DRIVER_OK (acknowledged) once the rings of
	 * a start run, and 0 once they stopped.
	 */
	bool set_status;
};

struct vu_frontend {
	struct vu_options opt;
	char *socket_path;
	int sock;
	struct guest_ram ram;

	uint64_t backend_features;
	uint64_t acked_features;
	uint64_t backend_protocol_features;
	uint64_t acked_protocol_features;
	uint32_t backend_queue_num;	    /* GET_QUEUE_NUM, 0 without MQ */
	uint8_t config[VU_MAX_CONFIG_SIZE]; /* see vu_options.config_size */

	unsigned int nvqs;
	struct split_vq *vq; /* nvqs entries once started */
	bool stopped;	     /* vu_frontend_stop() ran */

	char err[512];
};

struct vu_frontend *vu_frontend_new(const struct vu_options *opt, char *err,
				    size_t errlen);
void vu_frontend_free(struct vu_frontend *fe);
const char *vu_frontend_error(const struct vu_frontend *fe);

int vu_frontend_connect(struct vu_frontend *fe);
/* Drop the connection (the back-end sees the front-end go away). */
void vu_frontend_disconnect(struct vu_frontend *fe);

/* GET_FEATURES, GET/SET_PROTOCOL_FEATURES, GET_QUEUE_NUM, SET_OWNER. */
int vu_frontend_negotiate(struct vu_frontend *fe);

/*
 * Dirty logging as QEMU starts it for a migration: SET_LOG_BASE with a
 * shared log of one bit per 4 KiB page of guest RAM, then SET_FEATURES
 * with VHOST_F_LOG_ALL. Returns the log, mapped (*log_size bytes; the
 * caller unmaps it), or NULL with the error set. vu_frontend_stop_log
 * clears VHOST_F_LOG_ALL.
 */
uint8_t *vu_frontend_start_log(struct vu_frontend *fe, size_t *log_size);
int vu_frontend_stop_log(struct vu_frontend *fe);
/* GET_CONFIG of [offset, offset+size); returns the payload size the
 * back-end answered (0 is its error indication) or -errno. */
int vu_frontend_get_config(struct vu_frontend *fe, uint32_t offset, void *buf,
			   uint32_t size);
/* SET_FEATURES, SET_MEM_TABLE, every vring, SET_VRING_ENABLE. */
int vu_frontend_start(struct vu_frontend *fe);
/*
 * QEMU's VM stop: SET_VRING_ENABLE 0 and GET_VRING_BASE on every ring
 * (the device stops them; each base lands in split_vq.stopped_base). A
 * later vu_frontend_start() resumes the same rings from the driver's
 * avail index, as QEMU's continue does.
 */
int vu_frontend_stop(struct vu_frontend *fe);
/* new + connect + negotiate (+ GET_CONFIG) + start; NULL with @err
 * filled on failure. */
struct vu_frontend *vu_frontend_open(const struct vu_options *opt, char *err,
				     size_t errlen);

/* The queue @index, or NULL if it was not set up. */
struct split_vq *vu_vq(struct vu_frontend *fe, unsigned int index);

/*
 * Submit out buffers then in buffers on queue @q, kick, and wait for the
 * used entry. Returns 0 with *used_len set; -ETIMEDOUT if the back-end did
 * not answer within the timeout, -ECONNRESET if it closed the connection,
 * -ENOMSG if it used the chain without signalling the call eventfd.
 */
int vu_call(struct vu_frontend *fe, unsigned int q, const struct vq_buf *out,
	    unsigned int nout, const struct vq_buf *in, unsigned int nin,
	    uint32_t *used_len);
/* Wait for an already submitted head (after split_vq_add*) and kick. */
int vu_kick_and_wait(struct vu_frontend *fe, unsigned int q, int head,
		     uint32_t *used_len);

/* --- raw protocol access, for malformed-input tests --- */

/* Send @len bytes as they are, with @nfds descriptors attached. */
int vu_send_raw(struct vu_frontend *fe, const void *buf, size_t len,
		const int *fds, unsigned int nfds);
/* Send one message with the given header flags (version bits included). */
int vu_send_msg(struct vu_frontend *fe, uint32_t request, uint32_t flags,
		const void *payload, uint32_t size, const int *fds,
		unsigned int nfds);
/* Receive one message; payload beyond @cap is an error. */
int vu_recv_msg(struct vu_frontend *fe, struct vu_msg_hdr *hdr, void *payload,
		uint32_t cap, int timeout_ms);
/*
 * One request the way QEMU sends it: NEED_REPLY is added when REPLY_ACK
 * was negotiated and ack_every_message is set (or @want_ack); a reply
 * (@reply != NULL) or ack is awaited and checked. *reply_size gets the
 * reply payload size.
 */
int vu_request(struct vu_frontend *fe, uint32_t request, const void *payload,
	       uint32_t size, const int *fds, unsigned int nfds, bool want_ack,
	       void *reply, uint32_t reply_cap, uint32_t *reply_size);
/* true while the back-end keeps the connection open (waits up to
 * @timeout_ms for a hang-up). */
bool vu_connection_alive(struct vu_frontend *fe, int timeout_ms);

const char *vu_request_name(uint32_t request);

/* --- migration, as QEMU's vhost_save/load_backend_state --- */

/* With the rings stopped: the back-end's state into a malloc'ed buffer. */
int vu_frontend_save_state(struct vu_frontend *fe, uint8_t **buf,
			   size_t *len);
/* Hands the state to the back-end; 0 if CHECK_DEVICE_STATE accepts it. */
int vu_frontend_load_state(struct vu_frontend *fe, const uint8_t *buf,
			   size_t len);
/* Forget the connection without closing it (a migration's source, which
 * stays until its QEMU quits) and return it; vu_frontend_connect then
 * opens a new one over the same guest RAM and rings. */
int vu_frontend_detach(struct vu_frontend *fe);

#endif /* VU_FRONTEND_H */
