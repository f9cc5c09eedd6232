/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Control queue: one verbs command per descriptor chain. */
#ifndef PVO_CTRL_H
#define PVO_CTRL_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

/* Largest request/response the control queue accepts (header included). */
#define PVO_CTRL_MAX_MSG 4096

/*
 * Execute one command. req/req_len is the device-readable part, resp has
 * room for resp_len bytes. Returns how many bytes of resp were written:
 * the header with the status, plus the body on success; 0 if resp_len
 * cannot hold even the header; PVO_CTRL_AGAIN (below). Never trusts a
 * byte of the request.
 */
size_t pvo_ctrl_execute(struct pvo_vm *vm, const void *req, size_t req_len,
			void *resp, size_t resp_len);

/*
 * What pvo_ctrl_execute returns for a command that goes on (a REG_MR of a
 * long page list walks a part per call): nothing is written to resp, and
 * the caller executes the same request again on a later turn of the loop,
 * before any other command. A handler says so with PVO_STATUS_AGAIN, which
 * never reaches a guest; one waiting for work off the loop also sets
 * vm->ctrl_waits.
 */
#define PVO_CTRL_AGAIN SIZE_MAX
#define PVO_STATUS_AGAIN ((enum pvo_status)-1)

const char *pvo_cmd_name(unsigned int opcode);

#endif
