// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A migrating VM's state stream (migration/state_load.c), as another
 * back-end or a tampered migration stream would hand it over: the input
 * is the stream. What loads must save again to a stream that loads: the
 * loader may not accept a state its own objects cannot express.
 * fuzz-seeds.c writes the streams of fuzz-ctrl's scenarios as seeds.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "config.h"
#include "state.h"
#include "vm.h"

static struct pvo_daemon_config *cfg;

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
					       again->len, &err))
			abort();
		g_byte_array_free(again, TRUE);
	}
	g_free(err);
	pvo_vm_free(vm);
	return 0;
}
