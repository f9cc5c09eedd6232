// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Runs a fuzz harness once over files (regression mode, no libFuzzer):
 * `replay FILE|DIR...` prints one TAP line per input. A crash or a
 * sanitizer report ends the program, which fails the test.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <glib.h>

#include "fuzz.h"
#include "tap.h"

static void run_file(const char *path)
{
	gchar *buf;
	gsize len;
	GError *err = NULL;

	if (!g_file_get_contents(path, &buf, &len, &err)) {
		tap_ok(false, "%s: %s", path, err->message);
		g_error_free(err);
		return;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	g_free(buf);
	tap_ok(true, "%s (%zu bytes)", path, (size_t)len);
}

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *n;
	guint i;

	if (!d) {
		tap_ok(false, "%s: cannot open the corpus directory", dir);
		return;
	}
	while ((n = g_dir_read_name(d)))
		g_ptr_array_add(names, g_build_filename(dir, n, NULL));
	g_dir_close(d);
	g_ptr_array_sort(names, by_name);
	if (!names->len)
		tap_ok(false, "%s: the corpus is empty", dir);
	for (i = 0; i < names->len; i++)
		run_file(g_ptr_array_index(names, i));
	g_ptr_array_free(names, TRUE);
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (g_file_test(argv[i], G_FILE_TEST_IS_DIR))
			run_dir(argv[i]);
		else
			run_file(argv[i]);
	}
	tap_done_testing();
	return tap_exit_status();
}
