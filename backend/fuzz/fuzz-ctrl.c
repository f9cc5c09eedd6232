// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control queue and what it points at: a sequence of commands (any
 * opcode, any body) from a guest whose RAM holds fuzzer-chosen bytes, so
 * page directories, rings, WQEs and doorbell records come from the input
 * too; after the commands the doorbell queues are kicked and the loop
 * runs, so the requester and responder parse whatever the rings hold.
 *
 * Input (little-endian): u32 n, then n bytes copied to guest RAM at
 * FUZZ_CTRL_IMAGE_GPA; then commands, each u16 len and len bytes of
 * header and body. fuzz-seeds.c writes such inputs from real scenarios.
 */
#include <endian.h>
#include <string.h>

#include "fuzz.h"
#define FG_RAM_SIZE FUZZ_CTRL_RAM
#include "doorbell.h"
#include "fake_guest.h"

#define MAX_COMMANDS 64

static struct pvo_daemon_config *cfg;
/* Guest RAM for every input: mapping it anew each time cost more than
 * the rest of an execution. */
static uint8_t *ram[2];

static void setup(void)
{
	char *err = NULL;

	cfg = pvo_config_parse("fuzz.conf", FUZZ_CTRL_CONF, &err);
	ram[0] = aligned_alloc(4096, FG_HALF);
	ram[1] = aligned_alloc(4096, FG_HALF);
	if (!cfg || !ram[0] || !ram[1])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake_guest g;
	const uint8_t *p;
	uint32_t n;
	uint8_t resp[1024];
	int i, parts = 0;

	if (!cfg)
		setup();
	fg_init_ram(&g, &cfg->vms[0], ram);
	p = fuzz_take(&data, &size, 4);
	if (p) {
		n = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
		if (n > FG_HALF - FUZZ_CTRL_IMAGE_GPA)
			n = FG_HALF - FUZZ_CTRL_IMAGE_GPA;
		if (n > size)
			n = size;
		memcpy(fg_ptr(&g, FUZZ_CTRL_IMAGE_GPA), data, n);
		fuzz_take(&data, &size, n);
	}
	for (i = 0; i < MAX_COMMANDS && (p = fuzz_take(&data, &size, 2));
	     i++) {
		n = p[0] | p[1] << 8;
		if (n > size)
			n = size;
		/* a command that goes on is called again, as the control
		 * queue does (1M pages: 2 x 512 parts) */
		while (pvo_ctrl_execute(g.vm, data, n, resp, sizeof(resp)) ==
			   PVO_CTRL_AGAIN &&
		       ++parts < 1100)
			;
		parts = 0;
		fuzz_take(&data, &size, n);
	}
	/* doorbells of the kernel and the two user queues that exist */
	for (i = PVO_VQ_DB_KERNEL; i <= PVO_VQ_DB_FIRST_USER + 1; i++)
		pvo_doorbell_kick(g.vm, i);
	for (i = 0; i < 4; i++)
		g_main_context_iteration(NULL, FALSE);
	fg_fini(&g);
	return 0;
}
