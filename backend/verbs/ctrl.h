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
 * cannot hold even the header. Never trusts a byte of the request.
 */
size_t pvo_ctrl_execute(struct pvo_vm *vm, const void *req, size_t req_len,
			void *resp, size_t resp_len);

const char *pvo_cmd_name(unsigned int opcode);

#endif
