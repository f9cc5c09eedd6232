// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvrdma-overlayd: vhost-user back-end of the pvrdma-overlay device. Serves
 * every configured VM on its own unix socket (daemon.c); SIGHUP reads the
 * config file again.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib-unix.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "loop.h"

static char *opt_config;
static char **opt_vms;
static gboolean opt_check;
static gboolean opt_help_config;
static char *opt_socket;
static char *opt_name;
static char *opt_tenant;
static char *opt_vni;
static char *opt_mac;
static char *opt_mtu;
static char **opt_ips;
static char *opt_max_pd;
static char *opt_max_ucontexts;
static char *opt_busy_poll;
static char *opt_threads;

static const GOptionEntry entries[] = {
	{ "config", 'c', 0, G_OPTION_ARG_FILENAME, &opt_config,
	  "Serve the VMs of this config file", "FILE" },
	{ "vm", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_vms,
	  "Serve only this VM of the config file (repeatable)", "NAME" },
	{ "check", 0, 0, G_OPTION_ARG_NONE, &opt_check,
	  "Check the configuration and exit", NULL },
	{ "help-config", 0, 0, G_OPTION_ARG_NONE, &opt_help_config,
	  "Print the config file reference (markdown) and exit", NULL },
	{ "socket", 's', 0, G_OPTION_ARG_FILENAME, &opt_socket,
	  "Quick start without a config file: serve one VM on this socket",
	  "PATH" },
	{ "name", 0, 0, G_OPTION_ARG_STRING, &opt_name,
	  "Quick start: VM name (default vm)", "NAME" },
	{ "tenant", 0, 0, G_OPTION_ARG_STRING, &opt_tenant,
	  "Quick start: tenant name (default default)", "NAME" },
	{ "vni", 0, 0, G_OPTION_ARG_STRING, &opt_vni,
	  "Quick start: tenant VXLAN network identifier", "N" },
	{ "mac", 0, 0, G_OPTION_ARG_STRING, &opt_mac,
	  "Quick start: the VM's MAC", "MAC" },
	{ "ip", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_ips,
	  "Quick start: an IP the VM may use as GID (repeatable)", "IP" },
	{ "mtu", 0, 0, G_OPTION_ARG_STRING, &opt_mtu,
	  "Quick start: tenant MTU (default 1500)", "N" },
	{ "max-pd", 0, 0, G_OPTION_ARG_STRING, &opt_max_pd,
	  "Quick start: PD quota", "N" },
	{ "max-ucontexts", 0, 0, G_OPTION_ARG_STRING, &opt_max_ucontexts,
	  "Quick start: user context quota", "N" },
	{ "busy-poll-us", 0, 0, G_OPTION_ARG_STRING, &opt_busy_poll,
	  "Keep polling a QP's send queue for N us after its last WQE "
	  "instead of waiting for doorbells (latency mode; overrides "
	  "busy-poll-us of the config)",
	  "N" },
	{ "threads", 0, 0, G_OPTION_ARG_STRING, &opt_threads,
	  "Run N data-path threads (overrides threads of the config; 0: "
	  "one per online CPU)",
	  "N" },
	{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &pvo_verbose,
	  "Log every command and vhost-user event", NULL },
	{ NULL }
};

/* Builds the same text a config file would hold, so that quick-start
 * flags go through the one parser and its checks. */
static struct pvo_daemon_config *config_from_flags(char **err)
{
	GString *t = g_string_new(NULL);
	struct pvo_daemon_config *cfg;
	int i;

	if (!opt_vni || !opt_mac) {
		*err = g_strdup("--socket needs --vni N and --mac MAC "
				"(and usually --ip IP)");
		g_string_free(t, TRUE);
		return NULL;
	}
	g_string_append_printf(t, "[tenant %s]\nvni = %s\n",
			       opt_tenant ? opt_tenant : "default", opt_vni);
	if (opt_mtu)
		g_string_append_printf(t, "mtu = %s\n", opt_mtu);
	g_string_append_printf(t, "[vm %s]\ntenant = %s\nmac = %s\n",
			       opt_name ? opt_name : "vm",
			       opt_tenant ? opt_tenant : "default", opt_mac);
	g_string_append_printf(t, "socket = %s\n", opt_socket);
	if (opt_max_pd)
		g_string_append_printf(t, "max-pd = %s\n", opt_max_pd);
	if (opt_max_ucontexts)
		g_string_append_printf(t, "max-ucontexts = %s\n",
				       opt_max_ucontexts);
	g_string_append(t, "ips = ");
	for (i = 0; opt_ips && opt_ips[i]; i++)
		g_string_append_printf(t, "%s,", opt_ips[i]);
	g_string_append(t, "\n");
	cfg = pvo_config_parse("command line", t->str, err);
	g_string_free(t, TRUE);
	return cfg;
}

static gboolean on_signal(gpointer loop)
{
	g_main_loop_quit(loop);
	return G_SOURCE_CONTINUE;
}

/* The result, either way, is logged. */
static gboolean on_hangup(gpointer unused)
{
	char *summary = NULL, *err = NULL;

	pvo_info(NULL, "SIGHUP: reading the config file again");
	pvo_daemon_reload(&summary, &err);
	g_free(summary);
	g_free(err);
	return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
	GOptionContext *octx = g_option_context_new("- pvrdma-overlay back-end");
	struct pvo_daemon_opts dopts = { 0 };
	struct pvo_daemon_config *cfg;
	GMainLoop *loop;
	GError *gerr = NULL;
	char *err = NULL;
	int ret = 1;

	g_option_context_add_main_entries(octx, entries, NULL);
	g_option_context_set_description(
		octx, "Either --config FILE [--vm NAME...] or the quick-start "
		      "flags --socket PATH --vni N --mac MAC [--ip IP...].\n"
		      "--help-config prints the config file's keys; "
		      "docs/configuration.md has them with an example.");
	if (!g_option_context_parse(octx, &argc, &argv, &gerr)) {
		fprintf(stderr, "pvrdma-overlayd: %s (try --help)\n",
			gerr->message);
		return 2;
	}
	g_option_context_free(octx);
	if (argc > 1) {
		fprintf(stderr, "pvrdma-overlayd: unexpected argument '%s'\n",
			argv[1]);
		return 2;
	}
	if (opt_help_config) {
		char *ref = pvo_config_reference();

		fputs(ref, stdout);
		g_free(ref);
		return 0;
	}
	if (!!opt_config == !!opt_socket) {
		fprintf(stderr, "pvrdma-overlayd: give either --config FILE or "
				"--socket PATH with the quick-start flags "
				"(try --help)\n");
		return 2;
	}
	if (opt_config) {
		cfg = pvo_config_load(opt_config, &err);
		if (cfg && !pvo_config_select(cfg, opt_vms, &err)) {
			pvo_config_free(cfg);
			cfg = NULL;
		}
	} else {
		cfg = config_from_flags(&err);
	}
	if (!cfg) {
		fprintf(stderr, "pvrdma-overlayd: %s\n", err);
		g_free(err);
		return 1;
	}
	if (cfg->num_vms == 0) {
		fprintf(stderr, "pvrdma-overlayd: %s defines no [vm NAME] "
				"section: nothing to serve\n",
			cfg->path);
		pvo_config_free(cfg);
		return 1;
	}
	if (opt_check) {
		printf("%s: ok (%d tenants, %d VMs, %d remote VMs, overlay "
		       "%s)\n",
		       cfg->path, cfg->num_tenants, cfg->num_vms,
		       cfg->num_remotes,
		       cfg->vtep.s_addr ? "on" : "off");
		pvo_config_free(cfg);
		return 0;
	}

	if (opt_busy_poll) {
		uint64_t v;

		if (!pvo_parse_u64(opt_busy_poll, 0, 1000000, &v)) {
			fprintf(stderr,
				"pvrdma-overlayd: --busy-poll-us '%s': expected "
				"microseconds between 0 (off) and 1000000\n",
				opt_busy_poll);
			pvo_config_free(cfg);
			return 2;
		}
		cfg->busy_poll_us = v;
		dopts.busy_poll_set = true;
		dopts.busy_poll_us = v;
	}
	if (opt_threads) {
		uint64_t v;

		if (!pvo_parse_u64(opt_threads, 0, PVO_MAX_THREADS, &v)) {
			fprintf(stderr,
				"pvrdma-overlayd: --threads '%s': expected a "
				"number of threads from 1 to %d, or 0 for one "
				"per online CPU\n",
				opt_threads, PVO_MAX_THREADS);
			pvo_config_free(cfg);
			return 2;
		}
		cfg->threads = v;
		dopts.threads_set = true;
		dopts.threads = v;
	}
	dopts.from_file = opt_config != NULL;
	dopts.vms = opt_vms;
	signal(SIGPIPE, SIG_IGN);
	/* thread 0's loop, on the default main context; the daemon starts
	 * the other threads' */
	pvo_loop_enter(pvo_loop_new(NULL));
	loop = g_main_loop_new(NULL, FALSE);
	if (!pvo_daemon_start(cfg, &dopts, &err)) {
		fprintf(stderr, "pvrdma-overlayd: %s\n", err);
		g_free(err);
		goto out;
	}
	g_unix_signal_add(SIGTERM, on_signal, loop);
	g_unix_signal_add(SIGINT, on_signal, loop);
	g_unix_signal_add(SIGHUP, on_hangup, NULL);
	g_main_loop_run(loop);
	pvo_info(NULL, "shutting down");
	ret = 0;
out:
	pvo_daemon_stop();
	pvo_loop_free(pvo_loop());
	g_main_loop_unref(loop);
	g_strfreev(opt_vms);
	g_strfreev(opt_ips);
	return ret;
}
