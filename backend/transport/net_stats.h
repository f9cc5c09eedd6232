/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Overlay transport counters (docs/overlay.md): per QP, per VM, daemon. */
#ifndef PVO_NET_STATS_H
#define PVO_NET_STATS_H

#include <stdint.h>

enum pvo_drop {
	PVO_DROP_MALFORMED,
	PVO_DROP_UNKNOWN_VNI,
	PVO_DROP_UNKNOWN_DST,
	PVO_DROP_BAD_ICRC,
	PVO_DROP_UNKNOWN_QP,
	PVO_DROP_BAD_PEER,
	PVO_DROP_BAD_QKEY,
	PVO_DROP_BAD_STATE,
	PVO_DROP_BAD_PSN,
	PVO_DROP_NO_ROUTE,
	PVO_DROP_WRONG_VTEP,	/* sender mapped behind another VTEP */
	PVO_DROP_UNKNOWN_SRC,	/* sender not mapped, may not be learned */
	PVO_DROP_FOREIGN_VTEP,	/* from a peer that does not serve the
				 * tenant ([tenant] peers) */
	PVO_DROP_FROZEN,	/* VM stopped for migration's switch-over */
	PVO_DROP_BAD_ANNOUNCE,	/* a migration announcement failing its
				 * key or naming a VTEP not its sender */
	PVO_DROP_STALE_ANNOUNCE, /* ... older than the VM's last move */
	PVO_DROP_THREAD_BUSY,	/* the serving thread's inbox was full */
	PVO_DROP_READ_BUSY,	/* a request behind READ responses still
				 * going out (sent again by its requester) */
	PVO_DROP_LOCAL_SRC,	/* a peer claiming the address of a VM
				 * that runs here */
	PVO_DROP_COUNT
};

/* The name show prints, drop_<name> */
const char *pvo_drop_name(enum pvo_drop d);

struct pvo_net_stats {
	uint64_t tx_packets, tx_bytes;
	uint64_t rx_packets, rx_bytes;
	uint64_t retransmits;
	uint64_t drops[PVO_DROP_COUNT];
};

#endif
