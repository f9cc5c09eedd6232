// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int pvo_verbose;

void pvo_log(const char *vm, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (vm)
		fprintf(stderr, "pvrdma-overlayd: vm %s: %s\n", vm, msg);
	else
		fprintf(stderr, "pvrdma-overlayd: %s\n", msg);
	g_free(msg);
}

bool pvo_ratelimit_ok(struct pvo_ratelimit *rl, const char *vm)
{
	gint64 now = g_get_monotonic_time();

	if (now - rl->start > PVO_RATELIMIT_INTERVAL_US) {
		if (rl->suppressed)
			pvo_log(vm, "%u similar messages suppressed",
				rl->suppressed);
		rl->start = now;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed < PVO_RATELIMIT_BURST) {
		rl->printed++;
		return true;
	}
	rl->suppressed++;
	return false;
}
