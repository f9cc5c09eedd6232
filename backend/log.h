/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Log lines on stderr: "pvrdma-overlayd: vm NAME: message". */
#ifndef PVO_LOG_H
#define PVO_LOG_H

#include <glib.h>

extern int pvo_verbose;

void pvo_log(const char *vm, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#define pvo_info(vm, ...) pvo_log(vm, __VA_ARGS__)
#define pvo_debug(vm, ...)                   \
	do {                                 \
		if (pvo_verbose)             \
			pvo_log(vm, __VA_ARGS__); \
	} while (0)

#endif
