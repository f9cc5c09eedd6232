// SPDX-License-Identifier: GPL-2.0-or-later
/* RoCEv2 ICRC; see icrc.h. */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "icrc.h"
#include "roce.h"

#define CRC32_POLY_LE 0xedb88320u
/* CRC of 8 bytes of 0xff (the masked LRH) from a seed of all ones */
#define ICRC_SEED 0xdebb20e3u

/* Slicing-by-8 tables, built once. */
static uint32_t table[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

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

uint32_t pvo_crc32_le_table(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* threads may get here first together: one builds, all wait */
	pthread_once(&tables_once, init_tables);
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

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * Folding with carry-less multiplication: four 16-byte lanes advance 64
 * bytes per step, each lane multiplied by x^(512±32) mod P (bit-reflected)
 * and added to the data 64 bytes on. The lanes then fold into one, 16
 * bytes at a time, and the last 16-byte remainder -- which has the same
 * CRC as everything folded into it -- goes through the table code with
 * the tail.
 */
#define K_512_LO 0x154442bd4ull /* lane distance 4 x 128 bits */
#define K_512_HI 0x1c6e41596ull
#define K_128_LO 0x1751997d0ull /* distance 128 bits */
#define K_128_HI 0x0ccaa009eull

__attribute__((target("pclmul,sse4.1"))) static inline __m128i
fold(__m128i x, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
					   _mm_clmulepi64_si128(x, k, 0x11)),
			     next);
}

__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc32_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
	const __m128i k512 = _mm_set_epi64x(K_512_HI, K_512_LO);
	const __m128i k128 = _mm_set_epi64x(K_128_HI, K_128_LO);
	__m128i x0, x1, x2, x3;
	uint8_t rest[16];

	x0 = _mm_loadu_si128((const __m128i *)p);
	x1 = _mm_loadu_si128((const __m128i *)(p + 16));
	x2 = _mm_loadu_si128((const __m128i *)(p + 32));
	x3 = _mm_loadu_si128((const __m128i *)(p + 48));
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;
	while (len >= 64) {
		x0 = fold(x0, k512, _mm_loadu_si128((const __m128i *)p));
		x1 = fold(x1, k512, _mm_loadu_si128((const __m128i *)(p + 16)));
		x2 = fold(x2, k512, _mm_loadu_si128((const __m128i *)(p + 32)));
		x3 = fold(x3, k512, _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	x0 = fold(x0, k128, x1);
	x0 = fold(x0, k128, x2);
	x0 = fold(x0, k128, x3);
	while (len >= 16) {
		x0 = fold(x0, k128, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	_mm_storeu_si128((__m128i *)rest, x0);
	crc = pvo_crc32_le_table(0, rest, sizeof(rest));
	return pvo_crc32_le_table(crc, p, len);
}

static bool have_clmul;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void check_cpu(void)
{
	__builtin_cpu_init();
	have_clmul = __builtin_cpu_supports("pclmul") &&
		     __builtin_cpu_supports("sse4.1");
}
#endif

uint32_t pvo_crc32_le(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (len >= 64) {
		pthread_once(&cpu_once, check_cpu);
		if (have_clmul)
			return crc32_clmul(crc, buf, len);
	}
#endif
	return pvo_crc32_le_table(crc, buf, len);
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
