// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The vhost-user socket: the input is what a front-end writes, a stream
 * of messages (header and payload, no fds), served by the daemon's own
 * session code (vhost.c, vhost_msg.c and libvhost-user underneath) on one
 * end of a socket pair until the stream ends and the session is dropped.
 * Messages that need fds (memory tables, kick and call eventfds) arrive
 * without them, which drives their error paths.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>

#include "config.h"
#include "fuzz.h"
#include "vhost.h"
#include "vm.h"

static struct pvo_daemon_config *cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char drain[4096];
	struct pvo_vm *vm;
	int sv[2], i;
	size_t off = 0;

	if (!cfg) {
		char *err = NULL;

		cfg = pvo_config_parse("fuzz.conf", FUZZ_CTRL_CONF, &err);
		if (!cfg)
			abort();
		/* as the daemon: a reply to a closed front-end is an error,
		 * not the end of the process */
		signal(SIGPIPE, SIG_IGN);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	vm = pvo_vm_new(&cfg->vms[0]);
	if (!pvo_vhost_serve(vm, sv[0])) {
		close(sv[1]);
		pvo_vhost_close(vm);
		pvo_vm_free(vm);
		return 0;
	}
	/* feed the stream as the socket takes it, read the replies so the
	 * daemon never blocks on a full socket, stop once it hangs up */
	for (i = 0; i < 10000 && vm->connected; i++) {
		if (off < size) {
			ssize_t k = write(sv[1], data + off, size - off);

			if (k > 0)
				off += k;
			if (off == size)
				shutdown(sv[1], SHUT_WR);
		} else if (!size) {
			shutdown(sv[1], SHUT_WR);
		}
		while (read(sv[1], drain, sizeof(drain)) > 0)
			;
		g_main_context_iteration(NULL, FALSE);
	}
	close(sv[1]);
	pvo_vhost_close(vm);
	pvo_vm_free(vm);
	return 0;
}
