/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Minimal TAP producer for the back-end tests: a plan, numbered results,
 * diagnostics, skips, and a bail-out.
 */
#ifndef TAP_H
#define TAP_H

#include <stdbool.h>

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

/* Assert status == want, naming both on failure. */
#define TAP_STATUS(got, want, ...) tap_check_status((got), (want), __VA_ARGS__)
bool tap_check_status(int got, int want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* TAP_H */
