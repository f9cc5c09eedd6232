// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * t-reload: the daemon reads its config file again (pvo-ctl reload on the
 * management socket, SIGHUP) while the native front-end plays VMs on it.
 * A VM added to the file gets its socket and serves a vhost-user session;
 * a removed one loses its socket, and if its front-end is connected, keeps
 * running until that front-end leaves; a changed quota counts for objects
 * created afterwards, also below the live count; [remote] mapping entries
 * follow the file without touching managed ones; and every reload the
 * daemon cannot apply live (a parse error, a connected VM's MAC or VNI, the
 * VTEP) changes nothing and says why, in the answer and in the log.
 *
 * Environment: PVO_BACKEND, PVO_TEST_TIMEOUT_MS, PVO_TEST_KEEP (see t-ctrl).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend_proc.h"
#include "pvo_cmd.h"
#include "sim_vm.h"
#include "tap.h"

#define MAX_PDS 16

static struct backend_proc bp;
static int port;
static char answer[65536];

static void __attribute__((noreturn)) lost(const char *what)
{
	backend_running(&bp);
	tap_diag("back-end %s", backend_describe(&bp));
	backend_dump_log(&bp, 40);
	tap_bail("%s (log kept in %s)", what, bp.dir);
}

/* The file the daemon was started on, with these sections after the
 * [daemon] keys the test keeps (socket-dir, vtep, vxlan-port). */
static void write_config(const char *fmt, ...)
{
	FILE *f = fopen(bp.config_path, "w");
	va_list ap;

	if (!f)
		lost("cannot write the config file");
	fprintf(f,
		"[daemon]\nsocket-dir = %s\nvtep = 127.0.0.1\n"
		"vxlan-port = %d\n",
		bp.dir, port);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (fclose(f) != 0)
		lost("cannot write the config file");
}

/* One request on the management socket; true if the answer ends in ok. */
static bool mgmt(const char *req)
{
	int fd = backend_mgmt_connect(&bp);
	size_t n;

	answer[0] = '\0';
	if (fd < 0)
		return false;
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) ||
	    write(fd, "\n", 1) != 1) {
		close(fd);
		return false;
	}
	shutdown(fd, SHUT_WR);
	backend_mgmt_read(fd, answer, sizeof(answer));
	close(fd);
	n = strlen(answer);
	while (n && answer[n - 1] == '\n')
		answer[--n] = '\0';
	return n >= 2 && strcmp(answer + n - 2, "ok") == 0 &&
	       (n == 2 || answer[n - 3] == '\n');
}

static bool reload(const char *what)
{
	bool ok = mgmt("reload");

	if (!ok)
		tap_diag("%s: reload answered: %s", what, answer);
	return ok;
}

/* A reload that must be refused, naming why. */
static void refused(const char *why, const char *what)
{
	bool ok = mgmt("reload");

	if (!tap_ok(!ok &&
			strstr(answer, "error: reload refused, nothing "
				       "changed") &&
			strstr(answer, why),
		    "refused: %s", what))
		tap_diag("answer: %s", answer);
}

/* The first line of the last answer starting with prefix (static). */
static const char *line_of(const char *prefix)
{
	static char line[4096];
	const char *p = answer;

	while (p && *p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (strncmp(p, prefix, strlen(prefix)) == 0) {
			snprintf(line, sizeof(line), "%.*s", (int)n, p);
			return line;
		}
		p = e ? e + 1 : NULL;
	}
	return NULL;
}

/* show's line for VM name, or NULL. */
static const char *show_vm(const char *name)
{
	char prefix[80];

	snprintf(prefix, sizeof(prefix), "vm name=%s ", name);
	if (!mgmt("show"))
		return NULL;
	return line_of(prefix);
}

static bool socket_exists(const char *vm)
{
	struct stat st;

	return stat(backend_vm_socket(&bp, vm), &st) == 0 &&
	       S_ISSOCK(st.st_mode);
}

static struct sim_vm *open_vm(const char *name)
{
	struct sim_vm_opts o = {.name = name,
				.socket_path = backend_vm_socket(&bp, name)};
	char err[512];
	struct sim_vm *vm = sim_vm_open(&o, err, sizeof(err));

	if (!vm)
		tap_diag("vm %s: %s", name, err);
	return vm;
}

/* Kernel PDs of a VM: allocates until the quota says no, up to want. */
struct pds {
	uint32_t h[MAX_PDS];
	int n;
};

static int alloc_pds(struct sim_vm *vm, struct pds *p, int want)
{
	int got = 0, st;

	while (got < want && p->n < MAX_PDS) {
		st = pvo_alloc_pd(vm->fe, PVO_CTX_KERNEL, &p->h[p->n]);
		if (st != PVO_STATUS_OK)
			return st == PVO_STATUS_ENOSPC ? got : -1;
		p->n++;
		got++;
	}
	return got;
}

static bool free_pds(struct sim_vm *vm, struct pds *p, int n)
{
	while (n-- > 0 && p->n > 0)
		if (pvo_dealloc_pd(vm->fe, PVO_CTX_KERNEL, p->h[--p->n]) !=
		    PVO_STATUS_OK)
			return false;
	return true;
}

/* The sections of the test's file. */
#define TENANT_BLUE "[tenant blue]\nvni = 100\n"
#define TENANT_RED "[tenant red]\nvni = 200\n"
#define VM_A(max_pd)                                                           \
	"[vm a]\ntenant = blue\nmac = 52:54:00:00:0a:01\nips = 10.0.0.1\n"     \
	"max-pd = " #max_pd "\n"
#define VM_B "[vm b]\ntenant = blue\nmac = 52:54:00:00:0b:01\nips = 10.0.0.2\n"
#define VM_C(mac) "[vm c]\ntenant = red\nmac = " mac "\nips = 10.1.0.3\n"
#define REMOTE_R(vtep)                                                         \
	"[remote r]\ntenant = blue\nmac = 52:54:00:00:0f:01\nips = 10.0.0.9\n" \
	"vtep = " vtep "\n"
#define REMOTE_S                                                               \
	"[remote s]\ntenant = blue\nmac = 52:54:00:00:0f:02\nips = 10.0.0.8\n" \
	"vtep = 127.0.0.8\n"

static struct sim_vm *a, *c;
static struct pds pa;

static void test_add_remove_quota(void)
{
	const char *l;
	char *s;

	tap_ok(socket_exists("a") && socket_exists("b"),
	       "start-up: a and b listen");
	a = open_vm("a");
	if (!a)
		lost("vm a does not open");
	tap_is(alloc_pds(a, &pa, MAX_PDS), 4, "vm a: max-pd = 4 PDs");

	/* c and its tenant come, b goes, a's quota grows, r moves, s comes */
	write_config(TENANT_BLUE TENANT_RED VM_A(6) VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S);
	tap_ok(reload("add c, remove b, max-pd 4 -> 6") &&
		   strstr(answer, "VMs added: c") &&
		   strstr(answer, "VMs removed: b;") &&
		   strstr(answer, "a (max-pd 4 -> 6)") &&
		   strstr(answer, "tenants: red added") &&
		   strstr(answer, "remote VMs: r changed, s added") &&
		   strstr(answer, "mapping entries: 1 added, 1 changed, "
				  "0 removed"),
	       "reload: the answer sums up VMs, quotas, tenants, [remote] "
	       "entries");
	s = strdup(answer);
	tap_ok(backend_log_has(&bp, strtok(s, "\n"), 0),
	       "the log has the same summary");
	free(s);
	tap_ok(socket_exists("c") && !socket_exists("b"),
	       "c's socket appeared, b's is gone");
	c = open_vm("c");
	tap_ok(c && c->mac[5] == 0x01 && c->mac[4] == 0x0c,
	       "c serves a vhost-user session with its config space");
	tap_is(alloc_pds(a, &pa, MAX_PDS), 2,
	       "vm a, connected through the reload: 2 more PDs (6)");
	tap_ok(free_pds(a, &pa, 1) && alloc_pds(a, &pa, 1) == 1,
	       "vm a's PDs from before the reload still work");
	l = show_vm("a");
	tap_ok(l && strstr(l, " max_pd=6 ") && strstr(l, " connected=1 "),
	       "show: vm a has max_pd=6");
	tap_ok(show_vm("b") == NULL && show_vm("c") != NULL,
	       "show: c listed, b not");
	tap_ok(mgmt("show") &&
		   line_of("map vni=100 ip=10.0.0.9 vtep=127.0.0.10:") &&
		   line_of("map vni=100 ip=10.0.0.8 vtep=127.0.0.8:") &&
		   line_of("tenant name=red vni=200 "),
	       "show: [remote] r moved, s added, tenant red listed");

	/* below the live count: nothing goes, nothing new comes */
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S);
	tap_ok(reload("max-pd 6 -> 2") && alloc_pds(a, &pa, 1) == 0 &&
		   pa.n == 6,
	       "max-pd 6 -> 2 with 6 PDs: they stay, a 7th is refused");
	tap_ok(free_pds(a, &pa, 5) && alloc_pds(a, &pa, MAX_PDS) == 1,
	       "after freeing down to 1, one more PD fits (2)");
	tap_ok(backend_log_has(&bp, "vm a: quotas changed: max-pd 6 -> 2", 0),
	       "the log names the quota change");
}

static void test_refused(void)
{
	char before[4096], *p;
	const char *l;

	l = show_vm("c");
	snprintf(before, sizeof(before), "%s", l ? l : "");
	p = strstr(before, " tx_packets=");
	if (p)
		*p = '\0';

	write_config(TENANT_BLUE TENANT_RED VM_A(2) "[vm c]\nmac = zz\n");
	refused("backend.conf:15: mac 'zz'", "a parse error names FILE:LINE");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:02")
			 REMOTE_R("127.0.0.10") REMOTE_S);
	refused("vm 'c': its mac changed while its front-end is connected",
		"a connected VM's MAC");
	write_config(TENANT_BLUE "[tenant red]\nvni = 201\n" VM_A(2) VM_C(
	    "52:54:00:00:0c:01") REMOTE_R("127.0.0.10") REMOTE_S);
	refused("vm 'c': its vni changed", "a connected VM's tenant VNI");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S "[daemon]\n"
							 "vtep = 127.0.0.2\n");
	refused("[daemon] vtep changed (127.0.0.1 -> 127.0.0.2)", "the VTEP");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S "[daemon]\n"
							 "vxlan-port = 1\n");
	refused("[daemon] vxlan-port changed", "the VXLAN port");
	/* one that would be fine, but for a bad key further down */
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01")
			 VM_B "max-qp = lots\n");
	refused("backend.conf:22: max-qp 'lots'",
		"a good change with an error after it");

	l = show_vm("c");
	tap_ok(l && strncmp(l, before, strlen(before)) == 0 &&
		   socket_exists("c") && !socket_exists("b") && mgmt("show") &&
		   strstr(answer, "reloads=2 ") &&
		   line_of("map vni=100 ip=10.0.0.8 "),
	       "after the refusals nothing changed");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) "[vm c]\nmac = yy\n");
	snprintf(before, sizeof(before),
		 "reload refused, nothing changed: %s:15: mac 'yy'",
		 bp.config_path);
	if (kill(bp.pid, SIGHUP) != 0)
		lost("SIGHUP");
	tap_ok(backend_log_has(&bp, before, 5000) &&
		   backend_log_has(&bp, "SIGHUP: reading", 0),
	       "SIGHUP with a bad file: the log says why");
	tap_ok(c && pvo_alloc_pd(c->fe, PVO_CTX_KERNEL, &(uint32_t){0}) ==
			PVO_STATUS_OK,
	       "vm c still serves commands");
}

/* A connected VM out of the file: it runs on, and goes when it leaves. */
static void test_remove_connected(void)
{
	struct pvo_resp_query_device dev;
	const char *l;

	write_config(TENANT_BLUE TENANT_RED VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S);
	tap_ok(reload("remove a, connected") &&
		   strstr(answer, "VMs removed: a (its front-end is "
				  "connected"),
	       "removing connected vm a is accepted");
	tap_ok(!socket_exists("a") &&
		   backend_log_has(
		       &bp, "vm a: removed from the config: its socket", 0),
	       "a's socket is gone, and the log says what happens to a");
	/* its 2 PDs (max-pd 2) are still there */
	tap_ok(pvo_query_device(a->fe, &dev) == PVO_STATUS_OK &&
		   le32toh(dev.max_pd) == 2 && free_pds(a, &pa, 1) &&
		   alloc_pds(a, &pa, MAX_PDS) == 1,
	       "vm a's front-end keeps the VM and its objects");
	l = show_vm("a");
	tap_ok(l && strstr(l, " connected=1 removed=1 "),
	       "show: vm a connected=1 removed=1");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S);
	refused("vm 'a' was removed by an earlier reload and its front-end "
		"is still connected",
		"a back while its old front-end is connected");
	write_config(TENANT_BLUE TENANT_RED VM_C(
			 "52:54:00:00:0c:01") "[vm d]\ntenant = red\nmac = "
					      "52:54:00:00:0d:01\n"
					      "socket = %s\n" REMOTE_R(
						  "127.0.0.10") REMOTE_S,
		     backend_vm_socket(&bp, "a"));
	refused("its socket", "another VM on a's socket while a runs");
	write_config(TENANT_RED VM_C("52:54:00:00:0c:01"));
	refused("keep the tenant until the VM's front-end has disconnected",
		"removing the tenant of running vm a");

	sim_vm_close(a);
	a = NULL;
	tap_ok(backend_log_has(&bp,
			       "vm a: its front-end has disconnected: the VM, "
			       "removed from the config by a reload, is gone",
			       5000),
	       "a's front-end leaves: the VM goes (logged)");
	tap_ok(show_vm("a") == NULL, "show: vm a no longer listed");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01")
			 REMOTE_R("127.0.0.10") REMOTE_S);
	tap_ok(reload("a back") && socket_exists("a") &&
		   (a = open_vm("a")) != NULL,
	       "a comes back: its socket serves a new session");
}

/* A VM without a front-end may change anything; managed entries stay. */
static void test_not_connected(void)
{
	char path[512];
	const char *l;

	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C(
	    "52:54:00:00:0c:01") "[vm e]\ntenant = blue\nmac = "
				 "52:54:00:00:0e:01\n" REMOTE_R("127.0.0.10")
				     REMOTE_S);
	tap_ok(reload("add e") && socket_exists("e"), "e added");
	/* a socket that cannot be bound undoes the rest: x, e's removal */
	snprintf(path, sizeof(path), "%s/f.sock", bp.dir);
	fclose(fopen(path, "w"));
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C(
	    "52:54:00:00:0c:01") "[vm x]\ntenant = blue\nmac = "
				 "52:54:00:00:0e:02\n"
				 "[vm f]\ntenant = blue\nmac = "
				 "52:54:00:00:0e:03\n" REMOTE_R("127.0.0.10")
				     REMOTE_S);
	refused("vm f: " /* its socket path */,
		"a socket that cannot be bound");
	tap_ok(strstr(answer, "exists and is not a socket") &&
		   socket_exists("e") && !socket_exists("x") && show_vm("e") &&
		   !show_vm("x"),
	       "... and nothing changed: e listens again, x is gone");
	unlink(path);
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C(
			 "52:54:00:00:0c:01") "[vm e]\ntenant = red\nmac = "
					      "52:54:00:00:0e:01\n"
					      "socket = %s/e2.sock\n" REMOTE_R(
						  "127.0.0.10") REMOTE_S,
		     bp.dir);
	tap_ok(reload("e: tenant and socket") &&
		   strstr(answer, "VMs set up again: e (tenant)") &&
		   !socket_exists("e") && socket_exists("e2"),
	       "e, not connected: new tenant and socket, set up again");
	l = show_vm("e");
	tap_ok(l && strstr(l, " vni=200 "), "show: e in vni 200");

	if (!mgmt("map add 100 10.0.0.9 127.0.0.7 52:54:00:00:0f:01") ||
	    !mgmt("map add 100 10.0.0.77 127.0.0.7 52:54:00:00:0f:07"))
		tap_diag("map add: %s", answer);
	write_config(
	    TENANT_BLUE TENANT_RED VM_A(2) VM_C("52:54:00:00:0c:01") REMOTE_R(
		"127.0.0.11") "[daemon]\ndscp = 10\npeers = 127.0.0.5\n"
			      "learn-age-s = 60\n");
	tap_ok(reload("r changed, s and e removed") &&
		   strstr(answer, "remote VMs: r changed, s removed") &&
		   strstr(answer, "mapping entries: 0 added, 0 changed, "
				  "1 removed, 1 left as the management "
				  "socket set it"),
	       "r changed but managed, s removed: the answer says so");
	tap_ok(mgmt("show") &&
		   line_of("map vni=100 ip=10.0.0.9 vtep=127.0.0.7:") &&
		   line_of("map vni=100 ip=10.0.0.77 vtep=127.0.0.7:") &&
		   !line_of("map vni=100 ip=10.0.0.8 ") && !socket_exists("e2"),
	       "managed entries stay, s's entry and e's socket are gone");
	l = line_of("config ");
	tap_ok(l && strstr(l, " dscp=10 ") && strstr(l, " learn_age_s=60 ") &&
		   strstr(l, " peers=127.0.0.5 "),
	       "show: dscp, learn-age-s, peers reloaded");
	write_config(TENANT_BLUE TENANT_RED VM_A(2) VM_C(
	    "52:54:00:00:0c:01") "[daemon]\ndscp = 10\npeers = 127.0.0.5\n"
				 "learn-age-s = 60\n");
	tap_ok(reload("r removed") && strstr(answer, "remote VMs: r removed") &&
		   !strstr(answer, "mapping entries") && mgmt("show") &&
		   line_of("map vni=100 ip=10.0.0.9 vtep=127.0.0.7:"),
	       "removing r leaves its managed entry");
}

int main(void)
{
	static const char *const vms[] = {"a", "b", NULL};
	char config[1024], err[512];
	bool keep;
	int ret;

	tap_plan(44);
	port = 20000 + getpid() % 20000;
	snprintf(config, sizeof(config),
		 "vtep = 127.0.0.1\nvxlan-port = %d\n" TENANT_BLUE VM_A(4)
		     VM_B REMOTE_R("127.0.0.9"),
		 port);
	if (backend_start_config(&bp, config, vms, NULL, 10000, err,
				 sizeof(err)) < 0)
		tap_bail("%s", err);
	test_add_remove_quota();
	test_refused();
	test_remove_connected();
	test_not_connected();
	/* the daemon stops with a removed VM still running */
	write_config(TENANT_BLUE TENANT_RED VM_C("52:54:00:00:0c:01"));
	tap_ok(reload("a removed, connected") && show_vm("a") &&
		   strstr(show_vm("a"), " removed=1 "),
	       "a removed again while connected");
	ret = backend_stop(&bp, 5000);
	tap_ok(ret == 0,
	       "back-end exits cleanly, also with a removed VM "
	       "running (%s)",
	       backend_describe(&bp));
	if (a)
		sim_vm_close(a);
	if (c)
		sim_vm_close(c);
	keep = tap_failures() ||
	       (getenv("PVO_TEST_KEEP") && *getenv("PVO_TEST_KEEP") == '1');
	if (keep)
		tap_diag("back-end log kept in %s", bp.log_path);
	backend_cleanup(&bp, keep);
	return tap_done();
}
