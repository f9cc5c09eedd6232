// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Migration announcements (announce.c): what one back-end writes, another
 * with the same key reads back; a wrong key, a flipped bit anywhere, a
 * truncated or padded-out frame, a VNI or MAC that disagrees with the
 * body, and other EtherTypes are told apart.
 */
#include <arpa/inet.h>
#include <string.h>

#include "announce.h"
#include "encap.h"
#include "tap.h"

static const uint8_t key[] = "0123456789abcdef-migration-key";
static const uint8_t other[] = "another key of the right size";

int main(void)
{
	struct pvo_announce a = {.vni = 0x123456,
				 .port = 4789,
				 .gen = 0x0123456789abcdefull},
			    b;
	uint8_t buf[256], bad[256];
	size_t n, i;
	bool all = true;

	a.ip = inet_addr("10.0.0.7");
	a.vtep.s_addr = inet_addr("192.168.5.3");
	memcpy(a.mac, (uint8_t[]){0x52, 0x54, 0, 0, 0, 7}, 6);

	n = pvo_announce_write(buf, sizeof(buf), &a, key, sizeof(key) - 1);
	tap_ok(n > PVO_VXLAN_LEN + PVO_ETH_LEN,
	       "an announcement is written "
	       "(%zu bytes)",
	       n);
	tap_ok(pvo_announce_write(buf, n - 1, &a, key, sizeof(key) - 1) == 0,
	       "... not into a buffer one byte short");
	tap_ok(pvo_announce_write(bad, sizeof(bad), &a, key, 8) == 0,
	       "... not with a key shorter than %d bytes",
	       PVO_ANNOUNCE_KEY_MIN);
	memset(&b, 0, sizeof(b));
	tap_ok(pvo_announce_parse(buf, n, key, sizeof(key) - 1, &b) ==
		       PVO_ANNOUNCE_OK &&
		   b.vni == a.vni && b.ip == a.ip && b.port == a.port &&
		   b.vtep.s_addr == a.vtep.s_addr && b.gen == a.gen &&
		   !memcmp(b.mac, a.mac, 6),
	       "read back with the same key: every field");
	memcpy(bad, buf, n);
	memset(bad + n, 0, 20);
	tap_ok(pvo_announce_parse(bad, n + 20, key, sizeof(key) - 1, &b) ==
		   PVO_ANNOUNCE_OK,
	       "Ethernet padding behind it is accepted");
	tap_ok(pvo_announce_parse(buf, n, other, sizeof(other) - 1, &b) ==
		   PVO_ANNOUNCE_BAD_MAC,
	       "another key: refused (bad MAC)");
	tap_ok(pvo_announce_parse(buf, n, key, 0, &b) == PVO_ANNOUNCE_BAD_MAC,
	       "no key: refused");
	for (i = PVO_VXLAN_LEN + PVO_ETH_LEN; i < n; i++) {
		memcpy(bad, buf, n);
		bad[i] ^= 0x10;
		if (pvo_announce_parse(bad, n, key, sizeof(key) - 1, &b) ==
		    PVO_ANNOUNCE_OK) {
			tap_diag("a flipped bit in byte %zu was accepted", i);
			all = false;
		}
	}
	tap_ok(all, "a flipped bit in any byte of the body or MAC is refused");
	for (i = 0; i < n; i++)
		if (pvo_announce_parse(buf, i, key, sizeof(key) - 1, &b) ==
		    PVO_ANNOUNCE_OK)
			all = false;
	tap_ok(all, "every truncation is refused");
	memcpy(bad, buf, n);
	bad[6] ^= 1; /* the VXLAN header's VNI */
	tap_ok(pvo_announce_parse(bad, n, key, sizeof(key) - 1, &b) ==
		   PVO_ANNOUNCE_MALFORMED,
	       "a VXLAN VNI other than the body's is malformed");
	memcpy(bad, buf, n);
	bad[PVO_VXLAN_LEN + 11] ^= 1; /* the inner source MAC */
	tap_ok(pvo_announce_parse(bad, n, key, sizeof(key) - 1, &b) ==
		   PVO_ANNOUNCE_MALFORMED,
	       "an inner source MAC other than the body's is malformed");
	memcpy(bad, buf, n);
	bad[PVO_VXLAN_LEN + 13] = 0x00; /* EtherType 0x8800 */
	tap_ok(pvo_announce_parse(bad, n, key, sizeof(key) - 1, &b) ==
		   PVO_ANNOUNCE_NOT_ONE,
	       "another EtherType is not an announcement");
	tap_ok(pvo_announce_parse(buf, n + 80, key, sizeof(key) - 1, &b) ==
		   PVO_ANNOUNCE_MALFORMED,
	       "a frame much longer than one is malformed");
	return tap_done();
}
