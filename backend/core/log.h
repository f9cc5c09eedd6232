/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Log lines on stderr: "pvrdma-overlayd: vm NAME: message". */
#ifndef PVO_LOG_H
#define PVO_LOG_H

#include <stdbool.h>
#include <glib.h>

extern int pvo_verbose;

void pvo_log(const char *vm, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Messages a guest can trigger at will go through a per-VM rate limit:
 * a burst of PVO_RATELIMIT_BURST per PVO_RATELIMIT_INTERVAL_US. */
#define PVO_RATELIMIT_BURST 10
#define PVO_RATELIMIT_INTERVAL_US (5 * G_USEC_PER_SEC)

struct pvo_ratelimit {
	gint64 start;
	unsigned int printed;
	unsigned int suppressed;
};

bool pvo_ratelimit_ok(struct pvo_ratelimit *rl, const char *vm);

#define pvo_info(vm, ...) pvo_log(vm, __VA_ARGS__)
#define pvo_debug(vm, ...)                   \
	do {                                 \
		if (pvo_verbose)             \
			pvo_log(vm, __VA_ARGS__); \
	} while (0)

#endif
