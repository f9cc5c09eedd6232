// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-ctl: talks to pvrdma-overlayd's management socket.
 *
 *   pvo-ctl [--socket PATH] show
 *   pvo-ctl [--socket PATH] map add VNI IP VTEP[:PORT] MAC
 *   pvo-ctl [--socket PATH] map del VNI IP
 *
 * Prints the daemon's answer; exit status 0 when it ends in "ok".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/pvrdma-overlay/pvrdma-overlayd.mgmt"

static int usage(void)
{
	fprintf(stderr,
		"usage: pvo-ctl [--socket PATH] show\n"
		"       pvo-ctl [--socket PATH] map add VNI IP VTEP[:PORT] MAC\n"
		"       pvo-ctl [--socket PATH] map del VNI IP\n"
		"(default socket %s)\n",
		DEFAULT_SOCKET);
	return 2;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = DEFAULT_SOCKET;
	char req[1024] = "", buf[65536];
	size_t used = 0, got = 0;
	ssize_t k;
	int i = 1, fd;
	char *last;

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
