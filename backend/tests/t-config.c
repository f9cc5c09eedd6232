// SPDX-License-Identifier: GPL-2.0-or-later
/* Config parser: good files parse to the right values; every kind of bad
 * line fails with FILE:LINE and says what is wrong. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

#include "config.h"
#include "tap.h"

static const char good[] =
	"# two tenants\n"
	"[daemon]\n"
	"socket-dir = /run/test\n"
	"\n"
	"[tenant blue]\n"
	"vni = 100\n"
	"mtu = 9000\n"
	"[tenant red]\n"
	"vni=0x200\n"
	"[vm blue-1]\n"
	"tenant = blue\n"
	"mac = 52:54:00:00:01:01\n"
	"ips = 10.0.0.1; fd00::1,\n"
	"max-pd = 7\n"
	"max-mr-size = 65536\n"
	"max-host-mappings = 300\n"
	"max-pinned = 1048576\n"
	"hostverbs-migration = error\n"
	"[vm red-1]\n"
	"tenant = red\n"
	"mac = 52:54:00:00:01:01\n"
	"socket = /tmp/red-1.sock\n";

/* Each case: config text and the substring the error must contain. */
static const struct {
	const char *text, *want;
} bad[] = {
	{ "[tenant a]\nvni = 1\nfoo\n", "t.conf:3: expected 'key = value'" },
	{ "vni = 1\n", "t.conf:1: 'vni' is outside any section" },
	{ "[tenant a\n", "t.conf:1: section header '[tenant a' lacks" },
	{ "[bogus]\n", "t.conf:1: unknown section '[bogus]'" },
	{ "[tenant a]\nvni = 0\n", "t.conf:2: vni '0'" },
	{ "[tenant a]\nvni = 16777216\n", "t.conf:2: vni" },
	{ "[tenant a]\nvni = 1\nmtu = 100\n", "t.conf:3: mtu '100'" },
	{ "[tenant a]\nvni = 1\ncolour = blue\n",
	  "t.conf:3: unknown key 'colour'" },
	{ "[tenant a]\nvni = 1\n[vm v]\nmax-mb = 1\n",
	  "t.conf:4: unknown key 'max-mb' in a [vm] section (expected tenant, "
	  "mac, ips, socket, max-ucontexts," },
	{ "[tenant a]\n", "t.conf:1: tenant 'a' has no 'vni = N'" },
	{ "[tenant a]\nvni=1\n[tenant b]\nvni=1\n",
	  "t.conf:3: tenant 'b' reuses vni 1" },
	{ "[tenant a]\nvni=1\n[tenant a]\nvni=2\n",
	  "t.conf:3: tenant 'a' is already defined at line 1" },
	{ "[tenant a b]\n", "t.conf:1: bad name 'a b'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=zz\nmac=52:54:00:00:00:01\n",
	  "t.conf:4: vm 'v': unknown tenant 'zz'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\n",
	  "t.conf:3: vm 'v' has no 'mac" },
	{ "[tenant a]\nvni=1\n[vm v]\nmac=52:54:00:00:00:01\n",
	  "t.conf:3: vm 'v' has no 'tenant" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00\n",
	  "t.conf:5: mac '52:54:00:00:00'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=ff:ff:ff:ff:ff:ff\n",
	  "t.conf:5: mac" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00:01\n"
	  "ips=10.0.0.1,banana\n",
	  "t.conf:6: ips: 'banana' is not an IPv4 or IPv6 address" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00:01\n"
	  "max-qp=-1\n",
	  "t.conf:6: max-qp '-1'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00:01\n"
	  "max-ucontexts=4097\n",
	  "t.conf:6: max-ucontexts '4097'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00:01\n"
	  "socket=relative.sock\n",
	  "t.conf:6: socket 'relative.sock'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00:01\n"
	  "[vm w]\ntenant=a\nmac=52:54:00:00:00:01\n",
	  "t.conf:6: vm 'w' uses the MAC of vm 'v'" },
	{ "[tenant a]\nvni=1\n[vm v]\ntenant=a\nmac=52:54:00:00:00:01\n"
	  "[vm v]\n",
	  "t.conf:6: vm 'v' is already defined at line 3" },
	{ "[daemon]\nudp-gso = maybe\n",
	  "t.conf:2: udp-gso 'maybe': expected yes or no" },
	{ "[daemon]\npeers = 192.0.2.1, host-b\n",
	  "t.conf:2: peers: 'host-b' is not the IPv4 address of a VTEP" },
	{ "[daemon]\nmigration-key = key.txt\n",
	  "t.conf:2: migration-key 'key.txt': expected the absolute path" },
	{ "[daemon]\nmigration-key = /nonexistent/pvo-key\n",
	  "t.conf:2: migration-key: cannot read /nonexistent/pvo-key" },
	{ "[daemon]\nmigration-key = /proc/self/comm\n",
	  "holds" },
	{ "[daemon]\nlearn-age-s = 0\n",
	  "t.conf:2: learn-age-s '0': expected seconds between 1 and 86400" },
	{ "[tenant a]\nvni=1\nlearn = sometimes\n",
	  "t.conf:3: learn 'sometimes': expected yes or no" },
	{ "[tenant a]\nvni=1\n[vm v]\nhostverbs-migration = maybe\n",
	  "t.conf:4: hostverbs-migration 'maybe': expected refuse or error" },
	{ "[tenant a]\nvni=1\ntransport = roce\n",
	  "t.conf:3: transport 'roce': expected overlay" },
	{ "[tenant a]\nvni=1\ntransport = hostverbs\nhostverbs-netdev = e0\n",
	  "t.conf:1: tenant 'a' has transport = hostverbs: name the host's "
	  "RDMA device" },
	{ "[daemon]\nhostverbs-device = rxe0\n[tenant a]\nvni=1\n"
	  "transport = hostverbs\n",
	  "t.conf:3: tenant 'a' has transport = hostverbs: name the netdev" },
	{ "[tenant a]\nvni=1\nhostverbs-netdev = eth0\n",
	  "t.conf:1: tenant 'a': hostverbs-netdev is only used with" },
	{ "[tenant a]\nvni=1\nhostverbs-device = rxe0\n",
	  "t.conf:1: tenant 'a': hostverbs-device and hostverbs-port are only" },
	{ "[tenant a]\nvni=1\nhostverbs-netdev = a-netdev-name-too-long\n",
	  "t.conf:3: hostverbs-netdev 'a-netdev-name-too-long'" },
	{ "[daemon]\nhostverbs-device = ../rxe0\n",
	  "t.conf:2: hostverbs-device '../rxe0': expected an RDMA device" },
	{ "[daemon]\nhostverbs-port = 0\n",
	  "t.conf:2: hostverbs-port '0': expected a port number" },
};

/* The first ```ini block of a file of the source tree, parsed. */
static struct pvo_daemon_config *parse_example(const char *file, char **err)
{
	gchar *path = g_build_filename(SOURCE_ROOT, file, NULL);
	struct pvo_daemon_config *cfg = NULL;
	gchar *text = NULL, *start, *end;

	if (g_file_get_contents(path, &text, NULL, NULL) &&
	    (start = strstr(text, "```ini\n")) &&
	    (end = strstr(start + 7, "```"))) {
		*end = '\0';
		cfg = pvo_config_parse(file, start + 7, err);
	} else {
		*err = g_strdup_printf("no ```ini block in %s", path);
	}
	g_free(text);
	g_free(path);
	return cfg;
}

/* A config with more keys for [vm v], [tenant a] and [tenant b] (the
 * last section, so it may also open others, like [daemon] again). */
static struct pvo_daemon_config *with(const char *vm, const char *ta,
				      const char *tb)
{
	char *text = g_strconcat(
		"[daemon]\nsocket-dir = /run/t\nvtep = 192.0.2.1\n"
		"[vm v]\ntenant = a\nmac = 52:54:00:00:00:01\n"
		"ips = 10.0.0.1\n",
		vm, "[tenant a]\nvni = 1\n", ta, "[tenant b]\nvni = 2\n", tb,
		NULL);
	struct pvo_daemon_config *cfg;
	char *err = NULL;

	cfg = pvo_config_parse("t.conf", text, &err);
	if (!cfg)
		printf("# %s\n", err);
	g_free(err);
	g_free(text);
	return cfg;
}

/* What a reload may change: the helpers daemon.c decides with. */
static void test_reload(void)
{
	struct pvo_daemon_config *a = with("", "", ""), *b;
	char *why = NULL, *q;

	b = with("max-qp = 16\nmax-mr-size = 65536\n", "learn = no\n",
		 "[daemon]\ndscp = 10\npeers = 192.0.2.9\n"
		 "learn-age-s = 60\nlearn-move-s = 5\nbusy-poll-us = 50\n");
	tap_ok(a && b && pvo_config_daemon_reloadable(a, b, &why) &&
		       !pvo_config_vm_identity_diff(&a->vms[0], &b->vms[0]),
	       "dscp, peers, learn-*-s, busy-poll-us, learn and quotas "
	       "reload");
	q = b ? pvo_quota_diff(&a->vms[0].quota, &b->vms[0].quota) : NULL;
	tap_ok(q && !strcmp(q, "max-qp 4096 -> 16, max-mr-size 4294967296 "
			       "-> 65536"),
	       "the quota diff names each change (%s)", q ? q : "none");
	g_free(q);
	tap_ok(a && !pvo_quota_diff(&a->vms[0].quota, &a->vms[0].quota),
	       "no quota diff between equal quotas");
	pvo_config_free(b);

	b = with("", "", "[daemon]\nvtep = 192.0.2.2\n");
	tap_ok(b && !pvo_config_daemon_reloadable(a, b, &why) &&
		       strstr(why, "vtep changed (192.0.2.1 -> 192.0.2.2)"),
	       "a new vtep is refused: %s", why);
	g_free(why);
	why = NULL;
	pvo_config_free(b);
	b = with("", "", "[daemon]\nsocket-dir = /run/u\n");
	tap_ok(b && !pvo_config_daemon_reloadable(a, b, &why) &&
		       strstr(why, "/run/t/pvrdma-overlayd.mgmt -> "
				   "/run/u/pvrdma-overlayd.mgmt"),
	       "a management socket that would move is refused: %s", why);
	g_free(why);
	why = NULL;
	pvo_config_free(b);
	b = with("", "", "[daemon]\nvxlan-port = 4790\n");
	tap_ok(b && !pvo_config_daemon_reloadable(a, b, &why) &&
		       strstr(why, "vxlan-port changed"),
	       "a new vxlan-port is refused: %s", why);
	g_free(why);
	pvo_config_free(b);

	b = with("", "", "mtu = 9000\n");
	tap_ok(b && !pvo_config_vm_identity_diff(&a->vms[0], &b->vms[0]),
	       "another tenant's change is none of the VM's");
	pvo_config_free(b);
	{
		static const struct {
			const char *vm, *ta;
		} id[] = {
			{ "tenant = b\n", "" },
			{ "mac = 52:54:00:00:00:02\n", "" },
			{ "ips = 10.0.0.1, 10.0.0.2\n", "" },
			{ "socket = /tmp/v.sock\n", "" },
			{ "", "vni = 3\n" },
			{ "", "mtu = 9000\n" },
		};
		GString *got = g_string_new(NULL);
		size_t i;

		for (i = 0; i < G_N_ELEMENTS(id); i++) {
			const char *w;

			b = with(id[i].vm, id[i].ta, "");
			w = a && b ? pvo_config_vm_identity_diff(&a->vms[0],
								 &b->vms[0])
				   : NULL;
			g_string_append_printf(got, "%s%s", i ? " " : "",
					       w ? w : "-");
			pvo_config_free(b);
		}
		tap_ok(!strcmp(got->str, "tenant mac ips socket vni mtu"),
		       "what the guest has seen: %s", got->str);
		g_string_free(got, TRUE);
	}
	pvo_config_free(a);
}

int main(void)
{
	const struct pvo_vm_config *vm;
	struct pvo_daemon_config *cfg;
	char *err = NULL;
	char *names[] = { "red-1", NULL };
	char *unknown[] = { "green-9", NULL };
	size_t i;

	tap_plan(39 + G_N_ELEMENTS(bad));

	cfg = pvo_config_parse("t.conf", good, &err);
	tap_ok(cfg != NULL, "good config parses (%s)", err ? err : "");
	if (!cfg)
		return 1;
	tap_is(cfg->num_tenants, 2, "two tenants");
	tap_ok(!cfg->no_udp_gso, "UDP GSO is on by default");
	tap_is(cfg->num_vms, 2, "two VMs");
	tap_is(cfg->tenants[1].vni, 0x200, "hex vni");
	tap_is(cfg->tenants[0].mtu, 9000, "tenant mtu");
	tap_is(cfg->tenants[1].mtu, 1500, "default mtu");
	vm = pvo_config_find_vm(cfg, "blue-1");
	tap_ok(vm && vm->tenant == &cfg->tenants[0], "vm resolves its tenant");
	tap_is(vm->num_ips, 2, "two ips, trailing separator ignored");
	tap_ok(vm->ips[0].s6_addr[10] == 0xff && vm->ips[0].s6_addr[15] == 1,
	       "IPv4 stored as ::ffff:10.0.0.1");
	tap_is(vm->quota.max_pd, 7, "quota key");
	tap_is(vm->quota.max_mr_size, 65536, "max-mr-size");
	tap_ok(vm->quota.max_host_mappings == 300 &&
		       vm->quota.max_pinned == 1048576,
	       "max-host-mappings, max-pinned");
	tap_ok(pvo_config_find_vm(cfg, "red-1")->quota.max_host_mappings ==
			   16384 &&
		       pvo_config_find_vm(cfg, "red-1")->quota.max_pinned ==
			   32ull << 30,
	       "hostverbs bounds default to 16384 mappings, 32 GiB pinned");
	tap_ok(vm->hv_migration_error &&
		       !pvo_config_find_vm(cfg, "red-1")->hv_migration_error,
	       "hostverbs-migration = error; refuse by default");
	tap_is(vm->quota.max_qp, 4096, "default quota");
	tap_is(vm->quota.max_ucontexts, 1024, "default max-ucontexts");
	tap_ok(strcmp(vm->socket_path, "/run/test/blue-1.sock") == 0,
	       "socket defaults to socket-dir/NAME.sock");
	tap_ok(vm->mac[5] == 1 && vm->mac[0] == 0x52, "mac parsed");
	tap_ok(!pvo_config_select(cfg, unknown, &err) &&
		       strstr(err, "no [vm green-9] section") &&
		       strstr(err, "blue-1, red-1"),
	       "unknown VM names the known ones: %s", err);
	g_free(err);
	err = NULL;
	tap_ok(pvo_config_select(cfg, names, &err) && cfg->num_vms == 1 &&
		       strcmp(cfg->vms[0].name, "red-1") == 0 &&
		       cfg->vms[0].tenant->vni == 0x200,
	       "--vm selects one VM and keeps its tenant");
	pvo_config_free(cfg);

	for (i = 0; i < G_N_ELEMENTS(bad); i++) {
		err = NULL;
		cfg = pvo_config_parse("t.conf", bad[i].text, &err);
		if (!tap_ok(!cfg && err && strstr(err, bad[i].want),
			    "rejects with \"%s\"", bad[i].want))
			printf("#   got: %s\n", err ? err : "(accepted)");
		pvo_config_free(cfg);
		g_free(err);
	}
	err = NULL;
	cfg = pvo_config_parse("t.conf",
			       "[daemon]\nhostverbs-device = mlx5_0\n"
			       "[tenant a]\nvni=1\ntransport = hostverbs\n"
			       "hostverbs-netdev = vxlan1\n"
			       "[tenant b]\nvni=2\ntransport = hostverbs\n"
			       "hostverbs-netdev = vxlan2\n"
			       "hostverbs-device = rxe_b\nhostverbs-port = 2\n"
			       "[tenant c]\nvni=3\n",
			       &err);
	tap_ok(cfg && cfg->tenants[0].hostverbs &&
		       !strcmp(cfg->tenants[0].hv_device, "mlx5_0") &&
		       cfg->tenants[0].hv_port == 1 &&
		       !strcmp(cfg->tenants[0].hv_netdev, "vxlan1") &&
		       !strcmp(cfg->tenants[1].hv_device, "rxe_b") &&
		       cfg->tenants[1].hv_port == 2 && !cfg->tenants[2].hostverbs,
	       "transport = hostverbs: the tenant's netdev, the [daemon]'s "
	       "device and port 1 unless the tenant names its own (%s)",
	       err ? err : "parsed");
	pvo_config_free(cfg);
	g_free(err);
	err = NULL;
	{
		struct pvo_daemon_config *a = with("", "", ""),
					 *b = with("", "transport = hostverbs\n"
						   "hostverbs-netdev = e0\n"
						   "hostverbs-device = rxe0\n",
						   "");

		tap_ok(a && b &&
			       !g_strcmp0(pvo_config_vm_identity_diff(
						  &a->vms[0], &b->vms[0]),
					  "transport"),
		       "a VM whose tenant moves to host verbs differs in "
		       "'transport' (a reload refuses it for a served VM)");
		pvo_config_free(a);
		pvo_config_free(b);
	}
	cfg = pvo_config_parse("t.conf", "[daemon]\nudp-gso = no\n", &err);
	tap_ok(cfg && cfg->no_udp_gso, "udp-gso = no turns UDP GSO off");
	pvo_config_free(cfg);
	g_free(err);
	err = NULL;
	cfg = pvo_config_parse("t.conf", "[tenant a]\nvni=1\n", &err);
	tap_ok(cfg && !cfg->tenants[0].no_learn && cfg->num_peers == 0 &&
		       cfg->learn_age_s == 300 && cfg->learn_move_s == 30,
	       "learning defaults: tenants learn, no extra peers, entries "
	       "age out after 300 s and move after 30 s of silence");
	pvo_config_free(cfg);
	cfg = pvo_config_parse("t.conf",
			       "[daemon]\npeers = 192.0.2.1; 192.0.2.2\n"
			       "learn-age-s = 60\nlearn-move-s = 5\n"
			       "[tenant a]\nvni=1\nlearn = no\n",
			       &err);
	tap_ok(cfg && cfg->tenants[0].no_learn && cfg->num_peers == 2 &&
		       cfg->peers[1].s_addr == htonl(0xc0000202) &&
		       cfg->learn_age_s == 60 && cfg->learn_move_s == 5,
	       "peers, learn-age-s, learn-move-s and learn = no are read");
	pvo_config_free(cfg);
	{
		char path[] = "/tmp/pvo-t-config-key-XXXXXX", *text;
		int fd = mkstemp(path);

		if (fd < 0 || write(fd, "0123456789abcdefXYZ\n", 20) != 20)
			tap_bail("cannot write %s", path);
		close(fd);
		text = g_strdup_printf("[daemon]\nmigration-key = %s\n", path);
		cfg = pvo_config_parse("t.conf", text, &err);
		tap_ok(cfg && cfg->migration_key_len == 19 &&
			       !memcmp(cfg->migration_key, "0123456789abcdefXYZ",
				       19),
		       "migration-key: the file's bytes without the last "
		       "newline");
		pvo_config_free(cfg);
		g_free(text);
		unlink(path);
	}
	g_free(err);
	err = NULL;
	cfg = pvo_config_parse("t.conf",
			       "[daemon]   # the host\n"
			       "socket-dir = /run/a#b   # '#' inside a word stays\n"
			       "[tenant a]\nvni = 7\t# seven\n",
			       &err);
	tap_ok(cfg && !strcmp(cfg->socket_dir, "/run/a#b") &&
		       cfg->tenants[0].vni == 7,
	       "a '#' after a blank ends the line, one inside a word does "
	       "not (%s)", err ? err : "parsed");
	pvo_config_free(cfg);
	g_free(err);
	err = NULL;
	cfg = parse_example("README.md", &err);
	tap_ok(cfg && cfg->num_vms == 1 && cfg->num_remotes == 1 &&
		       cfg->vtep.s_addr == htonl(0xc0000201) &&
		       !strcmp(cfg->vms[0].socket_path,
			       "/run/pvrdma-overlay/blue-1.sock"),
	       "the README's configuration example parses as it is (%s)",
	       err ? err : "parsed");
	pvo_config_free(cfg);
	g_free(err);
	err = NULL;
	cfg = parse_example("docs/configuration.md", &err);
	tap_ok(cfg && cfg->num_vms == 1 && cfg->num_remotes == 1 &&
		       cfg->num_peers == 1 &&
		       !strcmp(cfg->socket_dir, "/run/pvrdma-overlay"),
	       "docs/configuration.md's example parses as it is (%s)",
	       err ? err : "parsed");
	pvo_config_free(cfg);
	g_free(err);
	test_reload();
	err = NULL;
	cfg = pvo_config_load("/nonexistent/pvo.conf", &err);
	tap_ok(!cfg && strstr(err, "cannot read config file") &&
		       strstr(err, "/nonexistent/pvo.conf"),
	       "missing file is named: %s", err);
	g_free(err);
	return tap_done();
}
