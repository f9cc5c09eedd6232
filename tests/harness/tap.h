/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Minimal TAP producer for the C tests (unit and integration): a plan,
 * numbered results, diagnostics, skips, and a bail-out.
 */
#ifndef TAP_H
#define TAP_H

#include <stdbool.h>
#include <stdio.h> /* the tests print their own diagnostics too */

/* Plan up front, or print it at the end with tap_done_testing(). */
void tap_plan(int n);
void tap_done_testing(void);
/* Record one result; returns @ok so callers can chain on it. */
bool tap_ok(bool ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "# ..." diagnostics line(s). */
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_skip(int count, const char *why);
/* "Bail out! reason" and exit 1. */
void tap_bail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
int tap_failures(void);
int tap_count(void);
/* Exit status: 0 if all planned tests ran and passed. */
int tap_exit_status(void);

/* Assert got == want (integers), naming both on failure. */
#define tap_is(got, want, what)                                           \
	do {                                                              \
		long long g_ = (long long)(got), w_ = (long long)(want);  \
		if (!tap_ok(g_ == w_, "%s", what))                        \
			tap_diag("  got %lld, want %lld", g_, w_);        \
	} while (0)
/* The unit tests' name for tap_exit_status(). */
static inline int tap_done(void)
{
	return tap_exit_status();
}

#endif /* TAP_H */
