// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Request lines of the management socket (`pvo-ctl`): `show`, `map add`,
 * `map del`, `reload` and everything that is none of them. Several lines
 * per input, so additions and deletions meet; the mapping table is
 * emptied after. No daemon is behind the socket here: `show` has no VMs
 * and `reload` answers that there is nothing to reload (the reload
 * itself reads the trusted config file, fuzz-config's input).
 */
#include <string.h>
#include <glib.h>

#include "fuzz.h"
#include "mgmt.h"
#include "overlay_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, size);
	char **lines = g_strsplit(text, "\n", 16);
	GString *out = g_string_new(NULL);
	int i;

	for (i = 0; lines[i]; i++) {
		g_string_truncate(out, 0);
		pvo_mgmt_execute(lines[i], out);
	}
	pvo_map_clear();
	g_string_free(out, TRUE);
	g_strfreev(lines);
	g_free(text);
	return 0;
}
