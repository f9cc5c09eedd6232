// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's configuration file: every section, key and value, and the
 * cross-checks between sections. A file the parser accepts is also run
 * through VM selection.
 */
#include <string.h>
#include <glib.h>

#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, size);
	char *names[] = { "vm", NULL };
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	cfg = pvo_config_parse("fuzz.conf", text, &err);
	g_free(err);
	err = NULL;
	if (cfg) {
		if (cfg->num_vms)
			names[0] = (char *)cfg->vms[0].name;
		pvo_config_select(cfg, names, &err);
		g_free(err);
		pvo_config_free(cfg);
	}
	g_free(text);
	return 0;
}
