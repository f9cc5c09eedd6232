/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Transports carry a requester's messages to the responder QP and the
 * responder's answer back. The engine hands a transport one request
 * (struct pvo_pkt: a whole message, which a packetising transport cuts
 * into the packets the engine names) and gets the answer through
 * pvo_comp_reply().
 *
 *   local    both QPs on this back-end, same tenant: the responder runs
 *            right away and copies straight between the two guests
 *   overlay  RoCEv2 in VXLAN to another host (overlay.h); it segments
 *            at the path MTU, answers come back later from the socket
 *
 * pvo_transport_send() picks one per message: local when the destination
 * GID is installed in a VM of the sender's tenant on this back-end.
 * These carry the software engine's messages only: a QP on the host-verbs
 * engine (engine/hostverbs/) has the host's device carry its data.
 *
 * The engine and the transports call each other through this header
 * only, and in one cycle: the engine's requester calls
 * pvo_transport_send(); a transport hands what it receives to the
 * engine's responder (pvo_resp_receive) and what comes back to the
 * engine's completer (pvo_comp_reply), which may call the requester and
 * so pvo_transport_send() again. The local transport goes round it on
 * one stack; the overlay's answers start from the socket. Besides, a
 * transport may ask how far the requester has sent (pvo_req_sent_end)
 * and tell it that its peer runs again (pvo_comp_peer_thawed). Every
 * decision about progress, resends, the window, RNR back-off, timeouts
 * and completions is the completer's; a transport decodes and carries.
 */
#ifndef PVO_TRANSPORT_H
#define PVO_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "dma.h"
#include "pvo-device.h"

struct pvo_vm;
struct pvo_qp;
struct pvo_st_qp;
struct pvo_st_loader;

/* The local transport's last route lookup (transport/local.c). */
struct pvo_qp_route {
	uint64_t gen; /* routes generation it was made in; 0: none */
	uint8_t gid[16];
	struct pvo_vm *vm; /* NULL: not served here */
	/* RC: the QP sent over the overlay, or came with a migration, so
	 * its peer may have taken requests it resends here (local.c) */
	bool resync;
};

enum pvo_pkt_op {
	PVO_OP_SEND,
	PVO_OP_WRITE,
	PVO_OP_READ,
	PVO_OP_CMP_SWAP,
	PVO_OP_FETCH_ADD,
};

/* A request on the wire, with what a BTH / RETH / AtomicETH / DETH /
 * GRH would carry, and the payload as a cursor over the sender's data. */
struct pvo_pkt {
	/* source: the requester */
	struct pvo_vm *src_vm;
	const uint8_t *sgid;
	const uint8_t *smac;
	uint32_t src_qpn;
	uint8_t qp_type; /* PVO_QPT_*; GSI travels as UD */
	/* destination */
	const uint8_t *dgid;
	uint32_t dst_qpn;
	uint32_t qkey; /* UD: the resolved Q_Key (DETH) */
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t sl;
	/* operation */
	enum pvo_pkt_op op;
	uint32_t psn;
	bool first, last; /* segment position in the message */
	bool ahead;	  /* a WQE behind the active one (pipelined) */
	uint64_t offset;  /* bytes of the message before this segment */
	bool has_imm;
	uint32_t imm_data; /* big-endian */
	bool has_inv;	   /* SEND_WITH_INV (IETH) */
	uint32_t invalidate_rkey;
	bool solicited;
	uint64_t va; /* RETH / AtomicETH */
	uint32_t rkey;
	uint64_t dma_len; /* RETH: length of the whole message */
	uint64_t compare_add;
	uint64_t swap;
	/* payload of this segment (SEND, WRITE); NULL when empty */
	struct pvo_dma *payload;
	uint64_t payload_len;
	/* a segment of whole path MTUs (the local transport's slices),
	 * not a packet from the wire: it may carry more than one MTU */
	bool segment;
	/* for a packetising transport: the packets of the message that go
	 * now, [pkt_from, pkt_to) at the path MTU (READ: the responses
	 * asked for), and how many of them are retransmissions; it sets
	 * pkt_sent when it sent them */
	uint32_t pkt_from, pkt_to;
	uint32_t pkt_resent;
	bool pkt_sent;
};

enum pvo_reply_code {
	PVO_REPLY_NONE, /* nothing came back (dropped, unreachable); of a
			 * packet: nothing to act on besides its PSN */
	PVO_REPLY_ACK,
	PVO_REPLY_RNR,	      /* RNR NAK with rnr_timer */
	PVO_REPLY_INV_REQ,    /* NAK: invalid request */
	PVO_REPLY_REM_ACCESS, /* NAK: remote access error */
	PVO_REPLY_REM_OP,     /* NAK: remote operational error */
	PVO_REPLY_PSN_SEQ,    /* NAK: PSN sequence error at psn */
};

/* Signed distance a - b on the 24-bit PSN circle. */
static inline int32_t pvo_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* What an answer is about. */
enum pvo_reply_kind {
	/* the active message as a whole (the local transport; a message
	 * sent that is answered later or never) */
	PVO_ANS_MESSAGE,
	/* one packet from the wire, about the packet with PSN psn: */
	PVO_ANS_AETH,	    /* ACK / NAK (the PSNs before psn are done) */
	PVO_ANS_READ_RESP,  /* a READ response packet with payload */
	PVO_ANS_ATOMIC_ACK, /* with atomic_orig */
};

/*
 * The responder's answer, as the completer takes it. A transport that
 * carries whole messages fills code and the data; one that decodes
 * packets also says which packet it answers (psn) and, for a READ
 * response, where its payload is.
 */
struct pvo_reply {
	enum pvo_reply_code code;
	uint8_t rnr_timer;
	uint64_t atomic_orig;
	/* READ response data, NULL if none (the responder QP holds it;
	 * valid until pvo_comp_reply returns). A pointer: a reply is made
	 * for every message and must stay cheap to initialise. */
	struct pvo_dma *data;
	/* local transport: the responder QP must go to error once the
	 * requester has seen this reply (its async event, 0 = none) */
	bool responder_error;
	uint32_t responder_event;
	enum pvo_reply_kind kind;
	uint32_t psn;
	uint32_t msn; /* AETH: messages the responder completed */
	/* AETH: the PSN after the last one the requester may be answered
	 * for (pvo_req_sent_end(), or further after a migration: what the
	 * source had sent) */
	uint32_t sent_end;
	bool last; /* READ response: LAST or ONLY */
	const uint8_t *payload;
	uint32_t payload_len;
};

/*
 * What the engine asks of a transport. Only send is required; the hooks
 * let a transport keep per-QP wire state without the engine knowing it.
 * The engine calls the pvo_transport_* functions below, which ask every
 * transport, so no engine file names a transport.
 */
struct pvo_transport_ops {
	const char *name;
	/* Deliver pkt from qp. Returns false if the destination is not
	 * served by this transport (try the next one). */
	bool (*send)(struct pvo_qp *qp, struct pvo_pkt *pkt);
	/* A UD datagram to a multicast group: a copy for each member of the
	 * sender's tenant this transport reaches (every transport is asked). */
	void (*send_mcast)(struct pvo_qp *qp, struct pvo_pkt *pkt);
	/* Whether the WQEs behind qp's active one may be sent before it
	 * completes (RC SEND / WRITE, once the active one is out whole):
	 * this transport carries qp's messages and answers later. */
	bool (*can_send_ahead)(struct pvo_qp *qp);
	/* The requester's run ended: hand over what it queued. */
	void (*flush)(void);
	/* qp went back to RESET: its wire state starts over. */
	void (*reset_qp)(struct pvo_qp *qp);
	/* qp is about to be freed: drop every reference to it. */
	void (*forget_qp)(struct pvo_qp *qp);
	/* Migration (migration/state_part.h): save_qp fills this
	 * transport's fields of qp's state record; load_qp checks them (the
	 * stream is untrusted) and applies them, or refuses one with
	 * pvo_st_refuse and returns false. load_qp runs after the engine's
	 * load. */
	void (*save_qp)(const struct pvo_qp *qp, struct pvo_st_qp *rec);
	bool (*load_qp)(struct pvo_qp *qp, const struct pvo_st_qp *rec,
			struct pvo_st_loader *l);
};

extern const struct pvo_transport_ops pvo_transport_local;
extern const struct pvo_transport_ops pvo_transport_overlay;

/* Sends pkt; if no transport reaches the destination, the requester gets
 * PVO_REPLY_NONE (UD: silently dropped; RC: retries, then RETRY_EXC). A
 * UD datagram to a multicast group goes to every transport's members and
 * completes once. */
void pvo_transport_send(struct pvo_qp *qp, struct pvo_pkt *pkt);
/* The hooks of struct pvo_transport_ops, asked of every transport. */
bool pvo_transport_can_send_ahead(struct pvo_qp *qp);
void pvo_transport_flush(void);
void pvo_transport_reset_qp(struct pvo_qp *qp);
void pvo_transport_forget_qp(struct pvo_qp *qp);

/*
 * A VM stopped for migration runs again: its peers' requesters lost what
 * they sent meanwhile and would resend only at their ACK timeout (2 s
 * and more with rdma_cm). Local peers waiting on it resend now; remote
 * ones get a PSN sequence NAK at each of its connected QPs' expected
 * PSN, RC's way of saying "resend from here".
 */
void pvo_transport_thawed(struct pvo_vm *vm);
void pvo_local_thawed(struct pvo_qp *qp);
void pvo_ov_receiver_resync(struct pvo_qp *qp);

/* Daemon-wide registry of the VMs served here (local transport). */
void pvo_local_register(struct pvo_vm *vm);
void pvo_local_unregister(struct pvo_vm *vm);
/* A VM connected or went, a GID was installed or removed: cached local
 * routes are stale. */
void pvo_local_routes_changed(void);
/* The VM of qp's tenant that has gid installed, or NULL (cached in the
 * QP until pvo_local_routes_changed). */
struct pvo_vm *pvo_local_route(struct pvo_qp *qp, const uint8_t *gid);
/* The connected VM of the tenant with this VNI that has gid installed. */
struct pvo_vm *pvo_served_by_gid(uint32_t vni, const uint8_t *gid);
/* Whether (vni, ip: network order) is a VM of this deployment that
 * another back-end serves: the overlay's map has it (configured, EVPN,
 * announced or learned). */
bool pvo_transport_vm_of_ours(uint32_t vni, uint32_t ip);
/* Calls fn for every QP of tenant vni on this loop that joined group gid,
 * skip excepted (the sender of a datagram never gets its own copy). */
void pvo_local_mcast_each(uint32_t vni, const uint8_t *gid,
			  const struct pvo_qp *skip,
			  void (*fn)(struct pvo_qp *member, void *arg),
			  void *arg);

/* Engine entry points the transports call. */
void pvo_resp_receive(struct pvo_qp *qp, const struct pvo_pkt *pkt,
		      struct pvo_reply *reply);
/* Whether qp takes requests like pkt at all (its state, type, connected
 * peer or Q_Key), as pvo_resp_receive checks first. */
bool pvo_resp_accepts(struct pvo_qp *qp, const struct pvo_pkt *pkt);
/* A READ request again (a duplicate, or a burst of a READ's responses):
 * checks it and points reply->data at the data, changing no responder
 * state. */
void pvo_resp_read(struct pvo_qp *qp, const struct pvo_pkt *pkt,
		   struct pvo_reply *reply);
/*
 * The completer takes an answer: it completes, resends, backs off or
 * waits as the answer says (comp.c), and for a packet's answer lets the
 * requester send what that allows. False if the answer is out of
 * sequence in a way a transport counts as a drop: late (no WQE is
 * active), for a WQE of another kind, the first packet after a gap.
 */
bool pvo_comp_reply(struct pvo_qp *qp, struct pvo_reply *reply);
/* The PSN after the last packet qp's requester has sent (the active WQE
 * and those behind it), or its next PSN when no WQE is active. */
uint32_t pvo_req_sent_end(struct pvo_qp *qp);
/* qp's peer runs again after a migration: if qp waits for an ACK, its
 * timeout expires now (pvo_transport_thawed). */
void pvo_comp_peer_thawed(struct pvo_qp *qp);

/* The save_qp / load_qp hooks, asked of every transport (load: until
 * one refuses). */
void pvo_transport_save_qp(const struct pvo_qp *qp, struct pvo_st_qp *rec);
bool pvo_transport_load_qp(struct pvo_qp *qp, const struct pvo_st_qp *rec,
			   struct pvo_st_loader *l);

#endif
