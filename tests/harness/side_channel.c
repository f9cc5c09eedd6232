// SPDX-License-Identifier: GPL-2.0-or-later
/* The TCP side channel of tests that span two hosts; side_channel.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "side_channel.h"

int side_connect(const char *ipv4, int port, int tries)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	int i, fd;

	if (inet_pton(AF_INET, ipv4, &a.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < tries; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, (void *)&a, sizeof(a)))
			return fd;
		if (fd >= 0)
			close(fd);
		usleep(100000);
	}
	return -1;
}

void side_gid_hex(const uint8_t gid[16], char out[33])
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", gid[i]);
}

bool side_gid_parse(const char *s, uint8_t gid[16])
{
	unsigned int b, i;

	if (strlen(s) != 32)
		return false;
	for (i = 0; i < 16; i++) {
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return false;
		gid[i] = (uint8_t)b;
	}
	return true;
}
