/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal TAP producer for the C unit tests (read by prove). */
#ifndef PVO_TAP_H
#define PVO_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed, tap_planned;

static inline void tap_plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
}

static inline int tap_ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

#define tap_is(got, want, what)                                           \
	do {                                                              \
		long long g_ = (long long)(got), w_ = (long long)(want);  \
		if (!tap_ok(g_ == w_, "%s", what))                        \
			printf("#   got %lld, want %lld\n", g_, w_);      \
	} while (0)

static inline int tap_done(void)
{
	if (tap_n != tap_planned) {
		printf("# planned %d tests, ran %d\n", tap_planned, tap_n);
		return 1;
	}
	return tap_failed ? 1 : 0;
}

#endif
