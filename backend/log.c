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
