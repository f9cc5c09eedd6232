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
