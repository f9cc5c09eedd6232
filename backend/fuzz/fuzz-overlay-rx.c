// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A datagram from the underlay, as the overlay's receive path takes it:
 * VXLAN, inner Ethernet / IPv4 / UDP checks, then the RoCE headers (BTH
 * and the extension headers its opcode implies) and the ICRC over what
 * the headers claim.
 */
#include "encap.h"
#include "fuzz.h"
#include "icrc.h"
#include "roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvo_roce_hdr h;
	struct pvo_inner in;
	const uint8_t *roce;
	size_t roce_len;
	volatile uint32_t sink;

	if (pvo_encap_parse(data, size, &in, &roce, &roce_len) !=
	    PVO_ENCAP_OK)
		return 0;
	if (!pvo_roce_decode(roce, roce_len, &h))
		return 0;
	/* the receive path computes it over the inner IP header onwards */
	sink = pvo_icrc_ipv4(data + PVO_ENCAP_IP_OFF,
			     PVO_IP4_LEN + PVO_UDP_LEN + roce_len -
				 PVO_ROCE_ICRC_LEN);
	(void)sink;
	return 0;
}
