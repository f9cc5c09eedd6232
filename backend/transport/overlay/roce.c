// SPDX-License-Identifier: GPL-2.0-or-later
/* RoCEv2 header codec; see roce.h. */
#include <endian.h>
#include <string.h>

#include "roce.h"

#define F_SEND (PVO_RH_PAYLOAD | PVO_RH_REQ)

/* Operations 0x00..0x17 of the RC class; UC and UD take subsets. */
static const uint16_t rc_flags[] = {
	[PVO_OPC_SEND_FIRST] = F_SEND | PVO_RH_FIRST,
	[PVO_OPC_SEND_MIDDLE] = F_SEND,
	[PVO_OPC_SEND_LAST] = F_SEND | PVO_RH_LAST,
	[PVO_OPC_SEND_LAST_IMM] = F_SEND | PVO_RH_LAST | PVO_RH_IMM,
	[PVO_OPC_SEND_ONLY] = F_SEND | PVO_RH_FIRST | PVO_RH_LAST,
	[PVO_OPC_SEND_ONLY_IMM] =
	    F_SEND | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_IMM,
	[PVO_OPC_WRITE_FIRST] = F_SEND | PVO_RH_FIRST | PVO_RH_RETH,
	[PVO_OPC_WRITE_MIDDLE] = F_SEND,
	[PVO_OPC_WRITE_LAST] = F_SEND | PVO_RH_LAST,
	[PVO_OPC_WRITE_LAST_IMM] = F_SEND | PVO_RH_LAST | PVO_RH_IMM,
	[PVO_OPC_WRITE_ONLY] =
	    F_SEND | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_RETH,
	[PVO_OPC_WRITE_ONLY_IMM] = F_SEND | PVO_RH_FIRST | PVO_RH_LAST |
				   PVO_RH_RETH | PVO_RH_IMM,
	[PVO_OPC_READ_REQUEST] =
	    PVO_RH_REQ | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_RETH,
	[PVO_OPC_READ_RESP_FIRST] =
	    PVO_RH_PAYLOAD | PVO_RH_FIRST | PVO_RH_AETH,
	[PVO_OPC_READ_RESP_MIDDLE] = PVO_RH_PAYLOAD,
	[PVO_OPC_READ_RESP_LAST] = PVO_RH_PAYLOAD | PVO_RH_LAST | PVO_RH_AETH,
	[PVO_OPC_READ_RESP_ONLY] =
	    PVO_RH_PAYLOAD | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_AETH,
	[PVO_OPC_ACK] = PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_AETH,
	[PVO_OPC_ATOMIC_ACK] =
	    PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_AETH | PVO_RH_ATMACK,
	[PVO_OPC_CMP_SWAP] =
	    PVO_RH_REQ | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_ATMETH,
	[PVO_OPC_FETCH_ADD] =
	    PVO_RH_REQ | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_ATMETH,
	[PVO_OPC_SEND_LAST_INV] = F_SEND | PVO_RH_LAST | PVO_RH_IETH,
	[PVO_OPC_SEND_ONLY_INV] =
	    F_SEND | PVO_RH_FIRST | PVO_RH_LAST | PVO_RH_IETH,
};

unsigned int pvo_roce_flags(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	switch (PVO_ROCE_CLASS(opcode)) {
	case PVO_ROCE_RC:
		return op < sizeof(rc_flags) / sizeof(rc_flags[0])
			   ? rc_flags[op]
			   : 0;
	case PVO_ROCE_UC:
		return op <= PVO_OPC_WRITE_ONLY_IMM ? rc_flags[op] : 0;
	case PVO_ROCE_UD:
		if (op == PVO_OPC_SEND_ONLY || op == PVO_OPC_SEND_ONLY_IMM)
			return rc_flags[op] | PVO_RH_DETH;
		return 0;
	}
	return 0;
}

size_t pvo_roce_hdr_len(uint8_t opcode)
{
	unsigned int f = pvo_roce_flags(opcode);

	if (!f)
		return 0;
	return PVO_BTH_LEN + (f & PVO_RH_DETH ? PVO_DETH_LEN : 0) +
	       (f & PVO_RH_RETH ? PVO_RETH_LEN : 0) +
	       (f & PVO_RH_ATMETH ? PVO_ATMETH_LEN : 0) +
	       (f & PVO_RH_AETH ? PVO_AETH_LEN : 0) +
	       (f & PVO_RH_ATMACK ? PVO_ATMACK_LEN : 0) +
	       (f & PVO_RH_IMM ? PVO_IMMDT_LEN : 0) +
	       (f & PVO_RH_IETH ? PVO_IETH_LEN : 0);
}

static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

size_t pvo_roce_encode(uint8_t *buf, const struct pvo_roce_hdr *h)
{
	unsigned int f = pvo_roce_flags(h->opcode);
	uint8_t *p = buf;

	/* BTH: opcode | SE M Pad(2) TVer(4) | P_Key | resv8 | DestQP |
	 * A resv7 | PSN */
	p[0] = h->opcode;
	p[1] = (h->se ? 0x80 : 0) | (h->mig ? 0x40 : 0) | (h->pad & 3) << 4;
	put16(p + 2, h->pkey);
	p[4] = 0;
	put24(p + 5, h->dqpn);
	p[8] = h->ackreq ? 0x80 : 0;
	put24(p + 9, h->psn);
	p += PVO_BTH_LEN;
	if (f & PVO_RH_DETH) {
		put32(p, h->qkey);
		p[4] = 0;
		put24(p + 5, h->sqpn);
		p += PVO_DETH_LEN;
	}
	if (f & PVO_RH_RETH) {
		put64(p, h->va);
		put32(p + 8, h->rkey);
		put32(p + 12, h->dma_len);
		p += PVO_RETH_LEN;
	}
	if (f & PVO_RH_ATMETH) {
		put64(p, h->va);
		put32(p + 8, h->rkey);
		put64(p + 12, h->swap_add);
		put64(p + 20, h->compare);
		p += PVO_ATMETH_LEN;
	}
	if (f & PVO_RH_AETH) {
		p[0] = h->syndrome;
		put24(p + 1, h->msn);
		p += PVO_AETH_LEN;
	}
	if (f & PVO_RH_ATMACK) {
		put64(p, h->orig);
		p += PVO_ATMACK_LEN;
	}
	if (f & PVO_RH_IMM) {
		memcpy(p, &h->imm, 4);
		p += PVO_IMMDT_LEN;
	}
	if (f & PVO_RH_IETH) {
		put32(p, h->ieth);
		p += PVO_IETH_LEN;
	}
	return p - buf;
}

bool pvo_roce_decode(const uint8_t *buf, size_t len, struct pvo_roce_hdr *h)
{
	const uint8_t *p = buf;
	unsigned int f;
	size_t hl;

	memset(h, 0, sizeof(*h));
	if (len < PVO_BTH_LEN + PVO_ROCE_ICRC_LEN)
		return false;
	h->opcode = p[0];
	f = pvo_roce_flags(h->opcode);
	hl = pvo_roce_hdr_len(h->opcode);
	if (!f || (p[1] & 0x0f) != 0) /* TVer 0 only */
		return false;
	if (len < hl + PVO_ROCE_ICRC_LEN)
		return false;
	h->se = p[1] & 0x80;
	h->mig = p[1] & 0x40;
	h->pad = (p[1] >> 4) & 3;
	h->pkey = get16(p + 2);
	h->dqpn = get24(p + 5);
	h->ackreq = p[8] & 0x80;
	h->psn = get24(p + 9);
	p += PVO_BTH_LEN;
	if (f & PVO_RH_DETH) {
		h->qkey = get32(p);
		h->sqpn = get24(p + 5);
		p += PVO_DETH_LEN;
	}
	if (f & PVO_RH_RETH) {
		h->va = get64(p);
		h->rkey = get32(p + 8);
		h->dma_len = get32(p + 12);
		p += PVO_RETH_LEN;
	}
	if (f & PVO_RH_ATMETH) {
		h->va = get64(p);
		h->rkey = get32(p + 8);
		h->swap_add = get64(p + 12);
		h->compare = get64(p + 20);
		p += PVO_ATMETH_LEN;
	}
	if (f & PVO_RH_AETH) {
		h->syndrome = p[0];
		h->msn = get24(p + 1);
		p += PVO_AETH_LEN;
	}
	if (f & PVO_RH_ATMACK) {
		h->orig = get64(p);
		p += PVO_ATMACK_LEN;
	}
	if (f & PVO_RH_IMM) {
		memcpy(&h->imm, p, 4);
		p += PVO_IMMDT_LEN;
	}
	if (f & PVO_RH_IETH) {
		h->ieth = get32(p);
		p += PVO_IETH_LEN;
	}
	h->payload = p;
	h->payload_len = len - hl - PVO_ROCE_ICRC_LEN;
	if (h->pad > h->payload_len)
		return false;
	h->payload_len -= h->pad;
	/* Opcodes without data carry none (and no pad). */
	if (!(f & PVO_RH_PAYLOAD) && (h->payload_len || h->pad))
		return false;
	return true;
}

uint8_t pvo_roce_opcode(uint8_t cls, uint8_t op_first, bool first, bool last,
			bool imm)
{
	uint8_t o;

	if (first && last)
		o = imm ? 5 : 4;
	else if (first)
		o = 0;
	else if (last)
		o = imm ? 3 : 2;
	else
		o = 1;
	return cls | (op_first + o);
}
