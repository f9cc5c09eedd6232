/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RoCEv2 transport headers (IBTA vol. 1 ch. 9 and Annex A17): the BTH and
 * the extension headers each opcode carries, decoded into one struct and
 * encoded from it. Only facts of the wire format live here; what a packet
 * means to a QP is the engine's business.
 */
#ifndef PVO_ROCE_H
#define PVO_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PVO_ROCE_UDP_PORT 4791
#define PVO_ROCE_PKEY_DEFAULT 0xffff
#define PVO_ROCE_ICRC_LEN 4

/* Opcode = transport class (3 bits) | operation (5 bits). */
#define PVO_ROCE_RC 0x00
#define PVO_ROCE_UC 0x20
#define PVO_ROCE_UD 0x60
#define PVO_ROCE_CLASS(op) ((op) & 0xe0)

enum pvo_roce_opcode {
	PVO_OPC_SEND_FIRST = 0x00,
	PVO_OPC_SEND_MIDDLE = 0x01,
	PVO_OPC_SEND_LAST = 0x02,
	PVO_OPC_SEND_LAST_IMM = 0x03,
	PVO_OPC_SEND_ONLY = 0x04,
	PVO_OPC_SEND_ONLY_IMM = 0x05,
	PVO_OPC_WRITE_FIRST = 0x06,
	PVO_OPC_WRITE_MIDDLE = 0x07,
	PVO_OPC_WRITE_LAST = 0x08,
	PVO_OPC_WRITE_LAST_IMM = 0x09,
	PVO_OPC_WRITE_ONLY = 0x0a,
	PVO_OPC_WRITE_ONLY_IMM = 0x0b,
	PVO_OPC_READ_REQUEST = 0x0c,
	PVO_OPC_READ_RESP_FIRST = 0x0d,
	PVO_OPC_READ_RESP_MIDDLE = 0x0e,
	PVO_OPC_READ_RESP_LAST = 0x0f,
	PVO_OPC_READ_RESP_ONLY = 0x10,
	PVO_OPC_ACK = 0x11,
	PVO_OPC_ATOMIC_ACK = 0x12,
	PVO_OPC_CMP_SWAP = 0x13,
	PVO_OPC_FETCH_ADD = 0x14,
	PVO_OPC_SEND_LAST_INV = 0x16,	/* RC: with IETH */
	PVO_OPC_SEND_ONLY_INV = 0x17,
};

/* Header lengths */
#define PVO_BTH_LEN 12
#define PVO_DETH_LEN 8
#define PVO_RETH_LEN 16
#define PVO_ATMETH_LEN 28
#define PVO_AETH_LEN 4
#define PVO_ATMACK_LEN 8
#define PVO_IMMDT_LEN 4
#define PVO_IETH_LEN 4
#define PVO_ROCE_MAX_HDRS                                                \
	(PVO_BTH_LEN + PVO_DETH_LEN + PVO_RETH_LEN + PVO_ATMETH_LEN +    \
	 PVO_AETH_LEN + PVO_ATMACK_LEN + PVO_IMMDT_LEN)

/* What an opcode carries (PVO_RH_*) */
enum {
	PVO_RH_DETH = 1 << 0,
	PVO_RH_RETH = 1 << 1,
	PVO_RH_ATMETH = 1 << 2,
	PVO_RH_AETH = 1 << 3,
	PVO_RH_ATMACK = 1 << 4,
	PVO_RH_IMM = 1 << 5,
	PVO_RH_PAYLOAD = 1 << 6, /* may carry data */
	PVO_RH_FIRST = 1 << 7,	 /* first (or only) packet of a message */
	PVO_RH_LAST = 1 << 8,	 /* last (or only) packet of a message */
	PVO_RH_REQ = 1 << 9,	 /* a request (else a response) */
	PVO_RH_IETH = 1 << 10,	 /* the R_Key to invalidate */
};

/* AETH syndrome: bits 7..5 kind, 4..0 credit / timer / NAK code */
#define PVO_AETH_ACK 0x00
#define PVO_AETH_RNR_NAK 0x20
#define PVO_AETH_NAK 0x60
#define PVO_AETH_KIND(s) ((s) & 0xe0)
#define PVO_AETH_CREDITS_INVALID 0x1f
enum pvo_nak_code {
	PVO_NAK_PSN_SEQ = 0,
	PVO_NAK_INV_REQ = 1,
	PVO_NAK_REM_ACCESS = 2,
	PVO_NAK_REM_OP = 3,
	PVO_NAK_INV_RD_REQ = 4,
};

/* A decoded packet (host byte order, except imm which stays as on the
 * wire, the way the CQE carries it). */
struct pvo_roce_hdr {
	uint8_t opcode;
	bool se, mig;
	uint8_t pad;
	uint16_t pkey;
	uint32_t dqpn;
	bool ackreq;
	uint32_t psn;
	uint32_t qkey, sqpn;	       /* DETH */
	uint64_t va;		       /* RETH / AtomicETH */
	uint32_t rkey;		       /* RETH / AtomicETH */
	uint32_t dma_len;	       /* RETH */
	uint64_t swap_add, compare;    /* AtomicETH */
	uint8_t syndrome;	       /* AETH */
	uint32_t msn;		       /* AETH */
	uint64_t orig;		       /* AtomicAckETH */
	uint32_t imm;		       /* ImmDt, big-endian */
	uint32_t ieth;		       /* IETH: the R_Key to invalidate */
	const uint8_t *payload;	       /* after headers, before pad */
	size_t payload_len;
};

/* PVO_RH_* of an opcode, 0 if this implementation does not handle it. */
unsigned int pvo_roce_flags(uint8_t opcode);

/* Bytes of BTH + extension headers of an opcode (0: unsupported). */
size_t pvo_roce_hdr_len(uint8_t opcode);

/*
 * Encodes the headers of h (its opcode decides which) into buf, which has
 * room for PVO_ROCE_MAX_HDRS; h->pad must already say how much padding
 * follows payload_len bytes. Returns the header length.
 */
size_t pvo_roce_encode(uint8_t *buf, const struct pvo_roce_hdr *h);

/*
 * Decodes a packet of len bytes (BTH .. ICRC inclusive). False if it is
 * too short for its opcode's headers, names an unsupported opcode or
 * transport version, or its pad does not fit; payload then excludes pad
 * and ICRC.
 */
bool pvo_roce_decode(const uint8_t *buf, size_t len, struct pvo_roce_hdr *h);

/* The opcode of segment (first, last) of an operation, for a class. */
uint8_t pvo_roce_opcode(uint8_t cls, uint8_t op_first, bool first, bool last,
			bool imm);

#endif
