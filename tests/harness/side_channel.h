/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TCP side channel of tests that span two hosts (t-hostverbs-*): a
 * connection that retries while the other side starts, and GIDs written
 * as 32 hex digits, the way rdma-core's examples exchange them.
 */
#ifndef SIDE_CHANNEL_H
#define SIDE_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

/* A TCP connection to @ipv4:@port, trying @tries times 100 ms apart: the
 * socket, or -1 (errno set). */
int side_connect(const char *ipv4, int port, int tries);
void side_gid_hex(const uint8_t gid[16], char out[33]);
/* false unless @s is exactly 32 hex digits */
bool side_gid_parse(const char *s, uint8_t gid[16]);

#endif /* SIDE_CHANNEL_H */
