/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz harnesses of the back-end's untrusted inputs. Each harness file
 * defines LLVMFuzzerTestOneInput; built with clang -fsanitize=fuzzer
 * (`make fuzz`) libFuzzer drives it, built with replay.c (`make check`,
 * unit suite, ASan + UBSan) it runs once over every file of its committed
 * corpus, so an input that once crashed stays a regression test.
 */
#ifndef PVO_FUZZ_H
#define PVO_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz-ctrl's guest: its VM's configuration, its RAM size, and where the
 * input's RAM image goes (fuzz-seeds.c records scenarios in the same). */
#define FUZZ_CTRL_CONF                                                   \
	"[tenant t]\nvni=5\nmtu=1500\n"                                  \
	"[vm g]\ntenant=t\nmac=52:54:00:ab:cd:ef\n"                      \
	"ips=10.0.0.1, 10.0.0.2\nmax-qp=16\nmax-mr=16\nmax-cq=16\n"     \
	"socket=/tmp/pvo-fuzz-unused.sock\n"
#define FUZZ_CTRL_RAM (1u << 20)
#define FUZZ_CTRL_IMAGE_GPA 0x1000

/*
 * fuzz-overlay-rq's input: a byte of scenario (FUZZ_RQ_S_*), then
 * datagrams, each a struct fuzz_rq_rec and len bytes of RoCE (BTH up to
 * the pad, no ICRC) that the harness fixes up as the record says, seals
 * (encapsulation and ICRC) and sends to the overlay's VTEP socket.
 */
enum {
	FUZZ_RQ_S_RECV = 3 << 0,	/* receive WQEs posted per QP: 0..3 */
	FUZZ_RQ_S_MTU256 = 1 << 2,	/* path MTU 256, else 1024 */
	FUZZ_RQ_S_RD_SHIFT = 3,		/* max_dest_rd_atomic 1, 2, 4, 16 */
	FUZZ_RQ_S_RD = 3 << FUZZ_RQ_S_RD_SHIFT,
	FUZZ_RQ_S_REQ = 1 << 5,		/* the RC QP posts FUZZ_RQ_REQ_* */
	FUZZ_RQ_S_TIMEOUT = 1 << 6,	/* a local ACK timeout of ~8 us */
	FUZZ_RQ_S_MCAST = 1 << 7,	/* the UD QP joins FUZZ_RQ_MCAST */
};

/* What the RC QP's requester posts with FUZZ_RQ_S_REQ, in this order
 * from PSN FUZZ_RQ_SQ_PSN: a SEND and a WRITE of 64 bytes, a READ of
 * 2 KiB, a FETCH_ADD. */
#define FUZZ_RQ_SQ_PSN 0xfffffcu
#define FUZZ_RQ_RQ_PSN 0xfffff0u /* the RC and UC QPs' first rq_psn */
#define FUZZ_RQ_READ_LEN 2048
#define FUZZ_RQ_QKEY 0x1111
#define FUZZ_RQ_MCAST "239.1.1.1"

struct fuzz_rq_rec {
	uint8_t ctl;  /* FUZZ_RQ_C_* */
	uint8_t sel;  /* FUZZ_RQ_A_*: addressing */
	int8_t psn;   /* the PSN, relative (FUZZ_RQ_C_PSN_RAW unset) */
	uint8_t key;  /* rkey: FUZZ_RQ_KEY_* (FUZZ_RQ_C_KEY_RAW unset) */
	uint8_t len[2]; /* little-endian, at most FUZZ_RQ_MAX_LEN */
} __attribute__((packed));

#define FUZZ_RQ_MAX_LEN 2048
#define FUZZ_RQ_MAX_RECS 32

enum {
	/* destination QP: the RC QP, the UC QP, the UD QP, as in the BTH */
	FUZZ_RQ_C_RC = 0, FUZZ_RQ_C_UC = 1, FUZZ_RQ_C_UD = 2,
	FUZZ_RQ_C_QPN_RAW = 3,
	FUZZ_RQ_C_QP = 3,
	/* a request's PSN is psn after the QP's rq_psn, a response's
	 * psn after FUZZ_RQ_SQ_PSN; with this bit the BTH's */
	FUZZ_RQ_C_PSN_RAW = 1 << 2,
	/* the RETH / AtomicETH's rkey from FUZZ_RQ_KEY_*, its va an
	 * offset into that MR; with this bit both as they are */
	FUZZ_RQ_C_KEY_RAW = 1 << 3,
	FUZZ_RQ_C_BAD_ICRC = 1 << 4,
	/* turns of the loop after this datagram (0: it goes in one
	 * receive batch with the next) */
	FUZZ_RQ_C_TURNS_SHIFT = 5,
};

enum {
	/* inner source: the peer the QPs are connected to, a sender
	 * mapped to another VTEP, an unknown one */
	FUZZ_RQ_A_SRC = 3 << 0,
	/* inner destination: the VM, its other address (no GID), the
	 * multicast group, the VM's IP with another MAC */
	FUZZ_RQ_A_DST_SHIFT = 2,
	FUZZ_RQ_A_DST = 3 << 2,
	/* VNI: the tenant's, another tenant's (no VM), an unknown one */
	FUZZ_RQ_A_VNI_SHIFT = 4,
	FUZZ_RQ_A_VNI = 3 << 4,
	/* the bytes as they are: not decoded and encoded again */
	FUZZ_RQ_A_RAW = 1 << 6,
	/* no datagram: the guest or a migration acts (key: FUZZ_RQ_ACT_*)
	 * before the datagrams that follow */
	FUZZ_RQ_A_ACT = 1 << 7,
};

/* What FUZZ_RQ_A_ACT does: the RC QP to the error state, the
 * read-write MR deregistered, the VM frozen or thawed, the RC QP
 * destroyed, a receive WQE more on each QP. */
enum { FUZZ_RQ_ACT_QP_ERR, FUZZ_RQ_ACT_DEREG, FUZZ_RQ_ACT_FREEZE,
       FUZZ_RQ_ACT_DESTROY, FUZZ_RQ_ACT_RECV, FUZZ_RQ_ACT_COUNT };

/* rkeys: the read-write MR (64 KiB, atomics too), the read-only one
 * (4 KiB), the first with a wrong key byte, as in the packet */
enum { FUZZ_RQ_KEY_RW, FUZZ_RQ_KEY_RO, FUZZ_RQ_KEY_BAD, FUZZ_RQ_KEY_RAW };
#define FUZZ_RQ_MR_RW_LEN (64u << 10)
#define FUZZ_RQ_MR_RO_LEN 4096u

/* Takes n bytes from the front of the input, or NULL if fewer are left. */
static inline const uint8_t *fuzz_take(const uint8_t **data, size_t *size,
				       size_t n)
{
	const uint8_t *p = *data;

	if (*size < n)
		return NULL;
	*data += n;
	*size -= n;
	return p;
}

#endif
