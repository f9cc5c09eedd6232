// SPDX-License-Identifier: GPL-2.0-or-later
/* RoCEv2 ICRC; see icrc.h. */
#include <string.h>

#include "icrc.h"
#include "roce.h"

#define CRC32_POLY_LE 0xedb88320u
/* CRC of 8 bytes of 0xff (the masked LRH) from a seed of all ones */
#define ICRC_SEED 0xdebb20e3u

/* Slicing-by-8 tables, built once. */
static uint32_t table[8][256];

static void init_tables(void)
{
	unsigned int i, k;

	for (i = 0; i < 256; i++) {
		uint32_t c = i;

		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? CRC32_POLY_LE : 0);
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			table[k][i] = (table[k - 1][i] >> 8) ^
				      table[0][table[k - 1][i] & 0xff];
}

uint32_t pvo_crc32_le(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!table[0][1])
		init_tables();
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc; /* little-endian host */
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#define IP4_LEN 20
#define UDP_LEN 8

uint32_t pvo_icrc_ipv4(const uint8_t *ip, size_t len)
{
	uint8_t masked[IP4_LEN + UDP_LEN + PVO_BTH_LEN];
	uint32_t crc;

	if (len < sizeof(masked))
		return 0;
	memcpy(masked, ip, sizeof(masked));
	masked[1] = 0xff;		       /* TOS */
	masked[8] = 0xff;		       /* TTL */
	memset(masked + 10, 0xff, 2);	       /* header checksum */
	memset(masked + IP4_LEN + 6, 0xff, 2); /* UDP checksum */
	masked[IP4_LEN + UDP_LEN + 4] = 0xff;  /* BTH resv8a */
	crc = pvo_crc32_le(ICRC_SEED, masked, sizeof(masked));
	crc = pvo_crc32_le(crc, ip + sizeof(masked), len - sizeof(masked));
	return ~crc;
}
