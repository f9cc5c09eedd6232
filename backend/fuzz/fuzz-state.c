// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A migrating VM's state stream (migration/state_load.c), as another
 * back-end or a tampered migration stream would hand it over: the input
 * is the stream. What loads must save again to a stream that loads: the
 * loader may not accept a state its own objects cannot express, and the
 * saver read in pieces (of a size the input's length picks) gives the
 * bytes of the one-shot save.
 * fuzz-seeds.c writes the streams of fuzz-ctrl's scenarios as seeds.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config.h"
#include "state.h"
#include "vm.h"

static struct pvo_daemon_config *cfg;

/* Whether vm saves in pieces of piece bytes to the bytes of s. */
static bool same_in_pieces(struct pvo_vm *vm, const GByteArray *s,
			   size_t piece)
{
	struct pvo_state_saver *sv = pvo_state_saver_new(vm);
	enum pvo_state_saver_status st = PVO_SAVE_MORE;
	uint8_t *buf = g_malloc(piece);
	size_t at = 0, n;
	bool same = true;

	while (same && st == PVO_SAVE_MORE) {
		n = pvo_state_saver_read(sv, buf, piece, &st);
		same = n <= piece && n <= s->len - at &&
		       !memcmp(buf, s->data + at, n);
		at += n;
	}
	g_free(buf);
	pvo_state_saver_free(sv);
	return same && st == PVO_SAVE_END && at == s->len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvo_vm *vm;
	GByteArray *again;
	char *err = NULL;

	if (!cfg) {
		cfg = pvo_config_parse("fuzz.conf", FUZZ_CTRL_CONF, &err);
		if (!cfg)
			abort();
	}
	vm = pvo_vm_new_detached(&cfg->vms[0]);
	if (pvo_state_load(vm, data, size, &err)) {
		/* NULL only past PVO_STATE_MAX_BYTES, which no input nears */
		again = pvo_state_save(vm);
		if (!again || !pvo_state_check(&cfg->vms[0], again->data,
					       again->len, &err) ||
		    !same_in_pieces(vm, again, 1 + size % 4099))
			abort();
		g_byte_array_free(again, TRUE);
	}
	g_free(err);
	pvo_vm_free(vm);
	return 0;
}
