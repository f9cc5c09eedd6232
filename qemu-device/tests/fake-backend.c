// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fake-backend: a minimal vhost-user back-end that serves a chosen
 * struct pvo_config, for testing the QEMU device's config handling
 * without pvrdma-overlayd.
 *
 *   fake-backend SOCKET VERSION NUM_QUEUES [OPTION...]
 *
 * It serves one front-end connection and exits when it closes. Every
 * request ("request N") and GET_CONFIG is logged on stdout. It does not
 * watch the kick eventfds, so a test can read their counters in QEMU.
 * SIGUSR1 bumps the last byte of the MAC, SIGUSR2 sets version 99; both
 * then send a config-change message. GET_QUEUE_NUM always answers
 * PVO_MAX_QUEUES, so that the config's num_queues is what the device
 * checks.
 *
 * Migration (VHOST_USER_PROTOCOL_F_DEVICE_STATE), which libvhost-user
 * leaves to the device:
 *   --device-state     offer the feature, serve SET_DEVICE_STATE_FD and
 *                      CHECK_DEVICE_STATE
 *   --state-seed=N     the state is state_byte(N, i) for i < size: saved
 *                      as such, expected as such on load (default 1)
 *   --state-size=N     its size in bytes (default 300000: more than a
 *                      pipe holds)
 *   --state-dump=FILE  write the state sent (save) or received (load)
 *   --refuse=save|load CHECK_DEVICE_STATE fails for that direction
 * A load whose data is not the expected state fails CHECK too. Each
 * outcome is logged ("CHECK save ok", "CHECK load failed: ...").
 *
 * Built by device-qtest.py against libvhost-user from the QEMU source.
 */
#include <endian.h>
#include <errno.h>
#include <glib.h>
#include <glib-unix.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libvhost-user-glib.h"
#include "pvo-device.h"

/* Not in QEMU 10's libvhost-user; values from docs/interop/vhost-user.rst */
#define FAKE_PROTOCOL_F_DEVICE_STATE	19
#define FAKE_SET_DEVICE_STATE_FD	42
#define FAKE_CHECK_DEVICE_STATE		43
#define FAKE_STATE_NOFD			(1ull << 8)

static VugDev fake_dev;
static struct pvo_config fake_config;

static struct {
	bool offer;
	uint32_t seed;
	size_t size;
	const char *dump;
	const char *refuse;	/* "save", "load" or NULL */
} opt_state = { .seed = 1, .size = 300000 };

/* One transfer at a time, run by a thread: the reply goes out first. */
static struct {
	bool active;
	uint32_t direction;	/* 0 save, 1 load */
	int fd;
	pthread_t thread;
	uint8_t *data;		/* save: what to send; load: what came */
	size_t len;
	int err;		/* errno of a failed read or write */
} xfer;

static uint8_t state_byte(uint32_t seed, size_t i)
{
	/* Not periodic in 256: misplaced chunks show. */
	return (uint8_t)(i * 131 + (i >> 10) * 7 + seed * 29);
}

static void *save_thread(void *arg)
{
	size_t off = 0;

	while (off < xfer.len) {
		ssize_t n = write(xfer.fd, xfer.data + off, xfer.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			xfer.err = n < 0 ? errno : EPIPE;
			break;
		}
		off += n;
	}
	close(xfer.fd);		/* EOF for the front-end */
	return NULL;
}

static void *load_thread(void *arg)
{
	size_t cap = 0;

	for (;;) {
		ssize_t n;

		if (xfer.len == cap) {
			cap = cap ? 2 * cap : 65536;
			xfer.data = realloc(xfer.data, cap);
			if (!xfer.data) {
				xfer.err = ENOMEM;
				break;
			}
		}
		n = read(xfer.fd, xfer.data + xfer.len, cap - xfer.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			xfer.err = errno;
		if (n <= 0)
			break;
		xfer.len += n;
	}
	close(xfer.fd);
	return NULL;
}

static void reply_u64(VhostUserMsg *msg, uint64_t val, int *do_reply)
{
	msg->payload.u64 = val;
	msg->size = sizeof(msg->payload.u64);
	msg->fd_num = 0;
	*do_reply = 1;
}

static void set_state_fd(VhostUserMsg *msg, int *do_reply)
{
	uint32_t direction, phase;
	int i;

	memcpy(&direction, (uint8_t *)&msg->payload, 4);
	memcpy(&phase, (uint8_t *)&msg->payload + 4, 4);
	printf("fake-backend: SET_DEVICE_STATE_FD direction %u phase %u\n",
	       direction, phase);
	if (msg->fd_num != 1 || direction > 1 || phase != 0 || xfer.active) {
		printf("fake-backend: SET_DEVICE_STATE_FD refused\n");
		for (i = 0; i < msg->fd_num; i++)
			close(msg->fds[i]);
		reply_u64(msg, 1 | FAKE_STATE_NOFD, do_reply);
		return;
	}
	free(xfer.data);
	memset(&xfer, 0, sizeof(xfer));
	xfer.active = true;
	xfer.direction = direction;
	xfer.fd = msg->fds[0];
	if (direction == 0) {
		size_t n;

		xfer.len = opt_state.size;
		xfer.data = malloc(xfer.len ? xfer.len : 1);
		for (n = 0; n < xfer.len; n++)
			xfer.data[n] = state_byte(opt_state.seed, n);
	}
	pthread_create(&xfer.thread, NULL,
		       direction == 0 ? save_thread : load_thread, NULL);
	reply_u64(msg, FAKE_STATE_NOFD, do_reply);
}

/* Why the transfer failed, or NULL. */
static const char *check_transfer(char *why, size_t len)
{
	const char *dir = xfer.direction ? "load" : "save";
	size_t i;

	if (xfer.err) {
		snprintf(why, len, "%s: %s", dir, strerror(xfer.err));
		return why;
	}
	if (opt_state.refuse && !strcmp(opt_state.refuse, dir)) {
		snprintf(why, len, "refusing to %s (--refuse=%s)", dir, dir);
		return why;
	}
	if (xfer.direction == 1) {
		if (xfer.len != opt_state.size) {
			snprintf(why, len, "got %zu bytes, expected %zu",
				 xfer.len, opt_state.size);
			return why;
		}
		for (i = 0; i < xfer.len; i++) {
			if (xfer.data[i] != state_byte(opt_state.seed, i)) {
				snprintf(why, len, "byte %zu is 0x%02x, expected "
					 "0x%02x (seed %u)", i, xfer.data[i],
					 state_byte(opt_state.seed, i),
					 opt_state.seed);
				return why;
			}
		}
	}
	return NULL;
}

static void check_state(VhostUserMsg *msg, int *do_reply)
{
	char why[256];
	const char *err = "no transfer";

	if (xfer.active) {
		pthread_join(xfer.thread, NULL);	/* the pipe is at EOF */
		xfer.active = false;
		if (opt_state.dump) {
			FILE *f = fopen(opt_state.dump, "wb");

			if (!f || fwrite(xfer.data, 1, xfer.len, f) != xfer.len ||
			    fclose(f))
				perror("fake-backend: --state-dump");
		}
		err = check_transfer(why, sizeof(why));
	}
	if (err)
		printf("fake-backend: CHECK %s failed: %s\n",
		       xfer.direction ? "load" : "save", err);
	else
		printf("fake-backend: CHECK %s ok, %zu bytes\n",
		       xfer.direction ? "load" : "save", xfer.len);
	reply_u64(msg, err ? 1 : 0, do_reply);
}

static uint64_t fake_get_protocol_features(VuDev *dev)
{
	return opt_state.offer ? 1ull << FAKE_PROTOCOL_F_DEVICE_STATE : 0;
}

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

/*
 * Log each request for the test to count; libvhost-user handles all but
 * the device-state ones.
 */
static int fake_process_msg(VuDev *dev, VhostUserMsg *msg, int *do_reply)
{
	int handled = 1;

	printf("fake-backend: request %d\n", msg->request);
	if (opt_state.offer && msg->request == FAKE_SET_DEVICE_STATE_FD)
		set_state_fd(msg, do_reply);
	else if (opt_state.offer && msg->request == FAKE_CHECK_DEVICE_STATE)
		check_state(msg, do_reply);
	else
		handled = 0;
	fflush(stdout);
	return handled;
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
	.get_protocol_features = fake_get_protocol_features,
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
	int lfd, fd, i;

	if (argc < 4 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: fake-backend SOCKET VERSION NUM_QUEUES "
			"[--device-state] [--state-seed=N] [--state-size=N] "
			"[--state-dump=FILE] [--refuse=save|load]\n");
		return 2;
	}
	for (i = 4; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--device-state")) {
			opt_state.offer = true;
		} else if (!strncmp(a, "--state-seed=", 13)) {
			opt_state.seed = strtoul(a + 13, NULL, 0);
		} else if (!strncmp(a, "--state-size=", 13)) {
			opt_state.size = strtoul(a + 13, NULL, 0);
		} else if (!strncmp(a, "--state-dump=", 13)) {
			opt_state.dump = a + 13;
		} else if (!strcmp(a, "--refuse=save") ||
			   !strcmp(a, "--refuse=load")) {
			opt_state.refuse = a + 9;
		} else {
			fprintf(stderr, "fake-backend: unknown option %s\n", a);
			return 2;
		}
	}
	/* A front-end that stops reading must not kill the save thread. */
	signal(SIGPIPE, SIG_IGN);
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
