// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fake-backend: a minimal vhost-user back-end that serves a chosen
 * struct pvo_config, for testing the QEMU device's config handling
 * without pvrdma-overlayd.
 *
 *   fake-backend SOCKET VERSION NUM_QUEUES
 *
 * It serves one front-end connection and exits when it closes. Every
 * request ("request N") and GET_CONFIG is logged on stdout. It does not
 * watch the kick eventfds, so a test can read their counters in QEMU. SIGUSR1 bumps the last byte of the MAC,
 * SIGUSR2 sets version 99; both then send a config-change message.
 * GET_QUEUE_NUM always answers PVO_MAX_QUEUES, so that the config's
 * num_queues is what the device checks.
 *
 * Built by device-qtest.py against libvhost-user from the QEMU source.
 */
#include <endian.h>
#include <glib.h>
#include <glib-unix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libvhost-user-glib.h"
#include "pvo-device.h"

static VugDev fake_dev;
static struct pvo_config fake_config;

static uint64_t fake_get_features(VuDev *dev)
{
	return 1ull << 32;	/* VIRTIO_F_VERSION_1 */
}

static int fake_get_config(VuDev *dev, uint8_t *config, uint32_t len)
{
	printf("fake-backend: GET_CONFIG version %u mac-last %02x\n",
	       le32toh(fake_config.version), fake_config.mac[5]);
	fflush(stdout);
	memset(config, 0, len);
	memcpy(config, &fake_config, MIN(len, sizeof(fake_config)));
	return 0;
}

static int fake_set_config(VuDev *dev, const uint8_t *data, uint32_t offset,
			   uint32_t size, uint32_t flags)
{
	return 0;	/* read-only config; needed for F_CONFIG */
}

/* Log each request for the test to count; libvhost-user handles it. */
static int fake_process_msg(VuDev *dev, VhostUserMsg *msg, int *do_reply)
{
	printf("fake-backend: request %d\n", msg->request);
	fflush(stdout);
	return 0;
}

static void fake_panic(VuDev *dev, const char *msg)
{
	printf("fake-backend: front-end gone (%s)\n", msg);
	exit(0);
}

static const VuDevIface fake_iface = {
	.get_features = fake_get_features,
	.get_config = fake_get_config,
	.set_config = fake_set_config,
	.process_msg = fake_process_msg,
};

static gboolean on_sigusr1(gpointer data)
{
	fake_config.mac[5]++;
	vu_config_change_msg(&fake_dev.parent);
	return G_SOURCE_CONTINUE;
}

static gboolean on_sigusr2(gpointer data)
{
	fake_config.version = htole32(99);
	vu_config_change_msg(&fake_dev.parent);
	return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	GMainLoop *loop;
	int lfd, fd;

	if (argc != 4 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: fake-backend SOCKET VERSION NUM_QUEUES\n");
		return 2;
	}
	fake_config.version = htole32(atoi(argv[2]));
	fake_config.num_queues = htole16(atoi(argv[3]));
	fake_config.mtu = htole16(1500);
	memcpy(fake_config.mac, "\x52\x54\x00\x00\x00\x10", 6);

	strcpy(addr.sun_path, argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(lfd, 1)) {
		perror("fake-backend: listen");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("fake-backend: accept");
		return 1;
	}
	loop = g_main_loop_new(NULL, FALSE);
	if (!vug_init(&fake_dev, PVO_MAX_QUEUES, fd, fake_panic, &fake_iface)) {
		fprintf(stderr, "fake-backend: vug_init failed\n");
		return 1;
	}
	g_unix_signal_add(SIGUSR1, on_sigusr1, NULL);
	g_unix_signal_add(SIGUSR2, on_sigusr2, NULL);
	g_main_loop_run(loop);
	return 0;
}
