/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The overlay transport (docs/overlay.md): RoCEv2 in VXLAN over the host's
 * UDP sockets. overlay.c owns the sockets, the transmit batch and the
 * receive checks that come before any QP is involved; sender.c sends a
 * requester's messages as packets and takes the responses, receiver.c
 * runs the responder side of the wire protocol (PSNs, ACK / NAK, READ
 * responses, duplicates).
 */
#ifndef PVO_OVERLAY_H
#define PVO_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "config.h"
#include "encap.h"
#include "net_stats.h"
#include "roce.h"
#include "transport.h"

struct pvo_qp;
struct pvo_vm;

extern const struct pvo_transport_ops pvo_transport_overlay;

/* Opens the VTEP socket if cfg has a vtep and loads [remote] entries;
 * false with *err set if the socket cannot be bound. */
bool pvo_overlay_start(const struct pvo_daemon_config *cfg, char **err);
void pvo_overlay_stop(void);
bool pvo_overlay_enabled(void);
/* The daemon config the overlay runs on (NULL when it is off), the
 * tenant of a VNI in it, and one datagram (VXLAN header onwards) to a
 * VTEP outside the packet batches: moves.c's announcements. */
const struct pvo_daemon_config *pvo_overlay_config(void);
const struct pvo_tenant *pvo_overlay_tenant(uint32_t vni);
bool pvo_overlay_send_frame(const void *buf, size_t len, struct in_addr vtep,
			    uint16_t port);

/* What a reload did to the mapping table's config entries. */
struct pvo_overlay_reloaded {
	unsigned int added, changed, removed;
	unsigned int kept_mgmt; /* new or changed, but a managed entry stays */
};
/*
 * A reload's configuration (pvo_config_daemon_reloadable() passed: same
 * vtep, vxlan-port, udp-gso): the entries of [remote] sections that were
 * added, changed or removed follow it, unless the management socket
 * replaced them; learned entries are left alone (a new section's entry
 * replaces a learned one, as at start-up). peers, learn-age-s,
 * learn-move-s, dscp and the tenants' learn keys apply from now on. The
 * overlay reads cfg from now on; the old one may go.
 */
void pvo_overlay_reload(const struct pvo_daemon_config *cfg,
			struct pvo_overlay_reloaded *r);

/* Daemon-wide counters (before a VM is known) and batching figures. */
struct pvo_overlay_stats {
	struct pvo_net_stats net;
	uint64_t tx_syscalls;
	uint64_t rx_syscalls;
	uint64_t gso_padded; /* packets padded to keep a GSO run going */
	bool gso, gro; /* UDP GSO sends, UDP GRO receives in use */
};
/* The daemon's counters: every thread's summed (from thread 0, the world
 * paused). */
void pvo_overlay_stats(struct pvo_overlay_stats *out);

/* Where a packet goes: the peer VTEP and the inner addressing. */
struct pvo_route {
	struct sockaddr_in vtep;
	struct pvo_inner in;
};

/*
 * Resolves the route from a VM of ours (IPv4 sip) to dip in its tenant:
 * false (and counts no_route) if the mapping table has no entry.
 */
bool pvo_overlay_route(struct pvo_vm *vm, uint32_t sip, uint32_t dip,
		       struct pvo_route *rt);

/* The inner UDP source port of qp's packets (per-QP entropy). */
uint16_t pvo_overlay_sport(struct pvo_qp *qp);

/*
 * Transmit: pvo_overlay_pkt() returns room for BTH .. pad of one packet
 * (PVO_ROCE_MAX_HDRS + 4096 + 3 bytes); pvo_overlay_pkt_send() queues it
 * with roce_len bytes written (ICRC added here) and counts it for qp
 * (may be NULL). Packets go to the kernel
 * in batches: when the batch is full and at pvo_overlay_flush().
 */
uint8_t *pvo_overlay_pkt(void);
void pvo_overlay_pkt_send(const struct pvo_route *rt, size_t roce_len,
			  struct pvo_qp *qp);
/* Hands the queued packets to the kernel; while a receive batch is being
 * taken in, that waits for the end of the batch (one sendmmsg for all the
 * answers and the sends the ACKs clocked). */
void pvo_overlay_flush(void);

/* n packets of qp were sent again (QP and VM counters). */
void pvo_overlay_count_retransmits(struct pvo_qp *qp, uint64_t n);

/* Counters of a QP and its VM (and the daemon's, qp may be NULL). */
void pvo_overlay_count_drop(struct pvo_vm *vm, struct pvo_qp *qp,
			    enum pvo_drop why);

/* IPv4 of a v4-mapped GID (network order), or 0. */
uint32_t pvo_gid_ipv4(const uint8_t *gid);
void pvo_gid_from_ipv4(uint32_t ip, uint8_t *gid);
/* Whether the VTEP serves the tenant of the VNI: its senders may be
 * learned from it, its VMs followed to it ([tenant] peers). VNI 0: any
 * tenant. */
bool pvo_overlay_vtep_serves(uint32_t vni, struct in_addr vtep);

/* sender.c */
/* The PSN after what the requester has sent (migration state). */
uint32_t pvo_ov_sender_sent_end(struct pvo_qp *qp);
void pvo_ov_sender_send(struct pvo_qp *qp, const struct pvo_pkt *pkt,
			const struct pvo_route *rt);
void pvo_ov_sender_input(struct pvo_qp *qp, const struct pvo_inner *in,
			 const struct pvo_roce_hdr *h);

/* receiver.c */
/* The result of the atomic at psn the responder qp executed from the wire
 * and keeps for a retransmission of it; false if it keeps none. */
bool pvo_ov_atomic_saved(const struct pvo_qp *qp, uint32_t psn,
			 uint64_t *orig);
void pvo_ov_receiver_input(struct pvo_qp *qp, const struct pvo_inner *in,
			   const struct pvo_roce_hdr *h);
/* Sends the ACKs the last receive batch asked for, one per QP. */
void pvo_ov_receiver_send_acks(void);
/* A receive callback starts: each QP's READ responses get a new burst. */
void pvo_ov_receiver_turn(void);
/* Forgets qp's coalesced ACK and stops its READ responses (the QP goes
 * away or back to RESET). */
void pvo_ov_receiver_forget(struct pvo_qp *qp);

#endif
