// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-ctl: talks to pvrdma-overlayd's management socket.
 *
 *   pvo-ctl [--socket PATH] show
 *   pvo-ctl [--socket PATH] map add VNI IP VTEP[:PORT] MAC
 *   pvo-ctl [--socket PATH] map del VNI IP
 *   pvo-ctl [--socket PATH] reload
 *   pvo-ctl libvirt-xml --config FILE --emulator QEMU [--network NAME]
 *           [--memory MIB] [--vcpus N] [--tcg] VM
 *
 * Prints the daemon's answer; exit status 0 when it ends in "ok" (a
 * reload the daemon refused ends in "error: ..." and changed nothing).
 * libvirt-xml needs no daemon: it prints a libvirt domain for VM of the
 * configuration file (libvirt_xml.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib.h>

#include "libvirt_xml.h"

#define DEFAULT_SOCKET "/run/pvrdma-overlay/pvrdma-overlayd.mgmt"

static int usage(void)
{
	fprintf(
	    stderr,
	    "usage: pvo-ctl [--socket PATH] show\n"
	    "       pvo-ctl [--socket PATH] map add VNI IP VTEP[:PORT] MAC\n"
	    "       pvo-ctl [--socket PATH] map del VNI IP\n"
	    "       pvo-ctl [--socket PATH] reload\n"
	    "       pvo-ctl libvirt-xml --config FILE --emulator QEMU "
	    "[--network NAME]\n"
	    "               [--memory MIB] [--vcpus N] [--tcg] VM\n"
	    "(default socket %s)\n",
	    DEFAULT_SOCKET);
	return 2;
}

static bool parse_uint(const char *s, unsigned int min, unsigned int max,
		       unsigned int *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || end == s || *end || n < min || n > max)
		return false;
	*v = (unsigned int)n;
	return true;
}

static int libvirt_xml(int argc, char **argv)
{
	struct pvo_libvirt_opts o = {
	    .network = "default", .memory_mib = 1024, .vcpus = 2};
	struct pvo_daemon_config *cfg;
	const char *config = NULL, *name = NULL;
	char *err = NULL;
	int i, ret = 1;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--tcg") == 0) {
			o.tcg = true;
		} else if (a[0] == '-' && a[1] == '-' && !v) {
			fprintf(stderr, "pvo-ctl: %s needs a value\n", a);
			return usage();
		} else if (strcmp(a, "--config") == 0) {
			config = argv[++i];
		} else if (strcmp(a, "--emulator") == 0) {
			o.emulator = argv[++i];
		} else if (strcmp(a, "--network") == 0) {
			o.network = argv[++i];
		} else if (strcmp(a, "--memory") == 0) {
			if (!parse_uint(argv[++i], 64, 1u << 24,
					&o.memory_mib)) {
				fprintf(stderr,
					"pvo-ctl: --memory %s: expected MiB, "
					"64 .. 16777216\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(a, "--vcpus") == 0) {
			if (!parse_uint(argv[++i], 1, 1024, &o.vcpus)) {
				fprintf(stderr,
					"pvo-ctl: --vcpus %s: expected 1 .. "
					"1024\n",
					argv[i]);
				return 2;
			}
		} else if (a[0] == '-' || name) {
			return usage();
		} else {
			name = a;
		}
	}
	if (!config || !o.emulator || !name) {
		fprintf(stderr, "pvo-ctl: libvirt-xml needs --config, "
				"--emulator (a QEMU with -device "
				"pvrdma-overlay) and a VM name\n");
		return usage();
	}
	cfg = pvo_config_load(config, &err);
	if (!cfg) {
		fprintf(stderr, "pvo-ctl: %s\n", err);
		g_free(err);
		return 1;
	}
	for (i = 0; i < cfg->num_vms; i++)
		if (strcmp(cfg->vms[i].name, name) == 0)
			break;
	if (i == cfg->num_vms) {
		fprintf(stderr, "pvo-ctl: %s has no [vm %s]; its VMs:", config,
			name);
		for (i = 0; i < cfg->num_vms; i++)
			fprintf(stderr, " %s", cfg->vms[i].name);
		fprintf(stderr, "\n");
	} else if (!pvo_libvirt_xml(stdout, &cfg->vms[i], &o)) {
		fprintf(stderr, "pvo-ctl: writing the XML: %s\n",
			strerror(errno));
	} else {
		ret = 0;
	}
	pvo_config_free(cfg);
	return ret;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = DEFAULT_SOCKET;
	char req[1024] = "", buf[65536];
	size_t used = 0, got = 0;
	ssize_t k;
	int i = 1, fd;
	char *last;

	if (argc > 1 && strcmp(argv[1], "libvirt-xml") == 0)
		return libvirt_xml(argc - 2, argv + 2);
	if (argc > 2 && strcmp(argv[1], "--socket") == 0) {
		path = argv[2];
		i = 3;
	}
	if (i >= argc || strlen(path) >= sizeof(sa.sun_path))
		return usage();
	for (; i < argc; i++) {
		int n = snprintf(req + used, sizeof(req) - used, "%s%s",
				 argv[i], i + 1 < argc ? " " : "\n");

		if (n < 0 || (size_t)n >= sizeof(req) - used)
			return usage();
		used += n;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr,
			"pvo-ctl: cannot connect to %s: %s (is pvrdma-overlayd "
			"running? its [daemon] management-socket names the "
			"path; pass it with --socket)\n",
			path, strerror(errno));
		return 1;
	}
	if (write(fd, req, used) != (ssize_t)used) {
		fprintf(stderr, "pvo-ctl: sending to %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	shutdown(fd, SHUT_WR);
	while (got < sizeof(buf) - 1 &&
	       (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += k;
	buf[got] = '\0';
	close(fd);
	fputs(buf, stdout);
	/* the answer's last line says how it went */
	while (got && buf[got - 1] == '\n')
		buf[--got] = '\0';
	last = strrchr(buf, '\n');
	last = last ? last + 1 : buf;
	return strcmp(last, "ok") == 0 ? 0 : 1;
}
