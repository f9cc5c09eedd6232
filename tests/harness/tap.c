// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Minimal TAP producer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

static int planned = -1;
static int count;
static int failures;

void tap_plan(int n)
{
	planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

void tap_done_testing(void)
{
	planned = count;
	printf("1..%d\n", count);
	fflush(stdout);
}

static void result(bool ok, const char *fmt, va_list ap)
{
	count++;
	if (!ok)
		failures++;
	printf("%sok %d - ", ok ? "" : "not ", count);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

bool tap_ok(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	result(ok, fmt, ap);
	va_end(ap);
	return ok;
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void tap_skip(int n, const char *why)
{
	while (n-- > 0) {
		count++;
		printf("ok %d # SKIP %s\n", count, why);
	}
	fflush(stdout);
}

void tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

int tap_failures(void)
{
	return failures;
}

int tap_count(void)
{
	return count;
}

int tap_exit_status(void)
{
	if (failures)
		return 1;
	if (planned >= 0 && count != planned) {
		printf("# planned %d tests but ran %d\n", planned, count);
		return 1;
	}
	return 0;
}
