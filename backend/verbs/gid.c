// SPDX-License-Identifier: GPL-2.0-or-later
/* GID policy; see gid.h. */
#include <arpa/inet.h>
#include <string.h>

#include "gid.h"

void pvo_mac_to_eui64(const uint8_t mac[6], uint8_t eui[8])
{
	eui[0] = mac[0] ^ 2;	/* flip the universal/local bit */
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
}

void pvo_gid_link_local(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	pvo_mac_to_eui64(mac, &gid[8]);
}

bool pvo_gid_allowed(const struct pvo_vm_config *vm, const uint8_t gid[16])
{
	uint8_t ll[16];
	int i;

	pvo_gid_link_local(vm->mac, ll);
	if (memcmp(gid, ll, 16) == 0)
		return true;
	for (i = 0; i < vm->num_ips; i++)
		if (memcmp(gid, vm->ips[i].s6_addr, 16) == 0)
			return true;
	return false;
}

const char *pvo_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, buf, len))
		buf[0] = '\0';
	return buf;
}
