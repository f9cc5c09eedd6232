// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The served VMs and config reloads; see daemon.h.
 *
 * Lifetimes. A VM's cfg points into the current config, which a reload
 * replaces: a VM that stays is moved over to its section in the new
 * file, and a VM that leaves the config first gets a copy of its section
 * and tenant of its own (struct gone), so the old config can be freed at
 * once. A VM removed while its front-end is connected keeps running on
 * that copy, its socket file gone, until the front-end disconnects
 * (looked at every second). Then, or at once for a VM that was not
 * connected, it is closed and handed to a low-priority idle source that
 * frees it: busy polling's idle source (verbs/busy_poll.c) runs at a
 * higher priority whenever it has hot QPs and drops those of a VM that is
 * not connected on its first pass, so nothing refers to the VM by then
 * (while other VMs' QPs stay hot, the free waits).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

#include "busy_poll.h"
#include "daemon.h"
#include "engine.h"
#include "log.h"
#include "loop.h"
#include "mgmt.h"
#include "overlay.h"
#include "vhost.h"
#include "vm.h"

/* A VM's config once the config file no longer has it. */
struct gone {
	struct pvo_vm_config cfg; /* vm->cfg points here */
	struct pvo_tenant tenant;
};

static struct {
	struct pvo_daemon_config *cfg;
	struct pvo_daemon_opts opts;
	GPtrArray *vms;	    /* struct pvo_vm: the config's, in its order */
	GPtrArray *removed; /* struct pvo_vm: gone, front-end connected */
	GPtrArray *dying;   /* struct pvo_vm: gone and closed, to be freed */
	GSource *watch;	    /* looks at the removed ones every second */
	GSource *reaper;    /* frees the dying ones */
	unsigned int reloads;
	struct pvo_mgmt_daemon mgmt;
} d;

/* A front-end is attached: the guest has seen the VM's config. */
static bool busy(const struct pvo_vm *vm)
{
	return vm->connected || vm->incoming || vm->retired;
}

static struct gone *gone_of(const struct pvo_vm *vm)
{
	return container_of(vm->cfg, struct gone, cfg);
}

/* vm leaves the config: from now on it runs on a copy of its own. */
static void make_gone(struct pvo_vm *vm)
{
	struct gone *g = g_new0(struct gone, 1);

	g->cfg = *vm->cfg;
	g->tenant = *vm->cfg->tenant;
	g->cfg.tenant = &g->tenant;
	vm->cfg = &g->cfg;
}

static void free_dying(void)
{
	while (d.dying->len) {
		struct pvo_vm *vm = g_ptr_array_remove_index(d.dying, 0);
		struct gone *g = gone_of(vm);

		pvo_vm_free(vm);
		g_free(g);
	}
}

static gboolean reap(gpointer unused)
{
	free_dying();
	g_source_unref(d.reaper); /* this source ends with this call */
	d.reaper = NULL;
	return G_SOURCE_REMOVE;
}

/* A VM out of the config and without a front-end: closed now, freed
 * once nothing refers to it any more (see the top of the file). */
static void bury(struct pvo_vm *vm)
{
	pvo_vhost_close(vm);
	g_ptr_array_add(d.dying, vm);
	if (d.reaper)
		return;
	d.reaper = g_idle_source_new();
	g_source_set_priority(d.reaper, G_PRIORITY_LOW);
	g_source_set_callback(d.reaper, reap, NULL, NULL);
	pvo_loop_attach(d.reaper);
}

static gboolean watch_removed(gpointer unused)
{
	unsigned int i = 0;

	while (i < d.removed->len) {
		struct pvo_vm *vm = g_ptr_array_index(d.removed, i);

		if (busy(vm)) {
			i++;
			continue;
		}
		pvo_info(pvo_vm_name(vm),
			 "its front-end has disconnected: "
			 "the VM, removed from the config by a reload, is "
			 "gone");
		g_ptr_array_remove_index(d.removed, i);
		bury(vm);
	}
	if (d.removed->len)
		return G_SOURCE_CONTINUE;
	g_source_unref(d.watch);
	d.watch = NULL;
	return G_SOURCE_REMOVE;
}

static struct pvo_vm *find(GPtrArray *vms, const char *name)
{
	unsigned int i;

	for (i = 0; i < vms->len; i++) {
		struct pvo_vm *vm = g_ptr_array_index(vms, i);

		if (strcmp(pvo_vm_name(vm), name) == 0)
			return vm;
	}
	return NULL;
}

static const struct pvo_tenant *find_tenant(const struct pvo_daemon_config *cfg,
					    const char *name)
{
	int i;

	for (i = 0; i < cfg->num_tenants; i++)
		if (strcmp(cfg->tenants[i].name, name) == 0)
			return &cfg->tenants[i];
	return NULL;
}

static void show(GString *o)
{
	const struct pvo_daemon_config *cfg = d.cfg;
	char ip[INET_ADDRSTRLEN];
	int i;

	g_string_append_printf(o,
			       "config file=%s reloads=%u busy_poll_us=%u "
			       "dscp=%u learn_age_s=%u learn_move_s=%u peers=",
			       d.opts.from_file ? cfg->path : "none", d.reloads,
			       cfg->busy_poll_us, cfg->dscp, cfg->learn_age_s,
			       cfg->learn_move_s);
	for (i = 0; i < cfg->num_peers; i++) {
		inet_ntop(AF_INET, &cfg->peers[i], ip, sizeof(ip));
		g_string_append_printf(o, "%s%s", i ? "," : "", ip);
	}
	g_string_append_printf(o, "%s remotes=%d\n",
			       cfg->num_peers ? "" : "none", cfg->num_remotes);
	for (i = 0; i < cfg->num_tenants; i++) {
		const struct pvo_tenant *t = &cfg->tenants[i];

		g_string_append_printf(
		    o, "tenant name=%s vni=%u mtu=%u learn=%s\n", t->name,
		    t->vni, t->mtu, t->no_learn ? "no" : "yes");
	}
}

bool pvo_daemon_start(struct pvo_daemon_config *cfg,
		      const struct pvo_daemon_opts *o, char **err)
{
	int i;

	d.cfg = cfg;
	d.opts = *o;
	d.opts.vms = g_strdupv(o->vms);
	d.vms = g_ptr_array_new();
	d.removed = g_ptr_array_new();
	d.dying = g_ptr_array_new();
	d.mgmt = (struct pvo_mgmt_daemon){
	    .vms = d.vms,
	    .removed = d.removed,
	    .show = show,
	    .reload = pvo_daemon_reload,
	};
	pvo_busy_poll_init(cfg->busy_poll_us);
	if (!pvo_engines_open(cfg, err))
		return false;
	for (i = 0; i < cfg->num_vms; i++) {
		struct pvo_vm *vm = pvo_vm_new(&cfg->vms[i]);

		g_ptr_array_add(d.vms, vm);
		if (!pvo_vhost_listen(vm, err))
			return false;
	}
	return pvo_overlay_start(cfg, err) &&
	       (!cfg->mgmt_socket[0] ||
		pvo_mgmt_start(cfg->mgmt_socket, &d.mgmt, err));
}

void pvo_daemon_stop(void)
{
	struct pvo_vm *vm;

	if (!d.vms)
		return;
	pvo_mgmt_stop();
	pvo_overlay_stop();
	pvo_loop_remove(d.watch);
	d.watch = NULL;
	while (d.vms->len) {
		vm = g_ptr_array_remove_index(d.vms, 0);
		pvo_vhost_close(vm);
		pvo_vm_free(vm);
	}
	while (d.removed->len) {
		vm = g_ptr_array_remove_index(d.removed, 0);
		pvo_vhost_close(vm);
		g_ptr_array_add(d.dying, vm);
	}
	/* the loop runs no more: nothing else refers to them */
	pvo_loop_remove(d.reaper);
	d.reaper = NULL;
	free_dying();
	pvo_engines_close();
	g_ptr_array_free(d.vms, TRUE);
	g_ptr_array_free(d.removed, TRUE);
	g_ptr_array_free(d.dying, TRUE);
	d.vms = d.removed = d.dying = NULL;
	pvo_config_free(d.cfg);
	d.cfg = NULL;
	g_strfreev(d.opts.vms);
}

/* ---- reload ------------------------------------------------------------ */

/* What a reload does, worked out before anything changes. */
struct plan {
	struct pvo_daemon_config *cfg; /* the new one */
	/* per VM of cfg: the served VM that stays, or the new one */
	struct pvo_vm **keep, **fresh;
	GPtrArray *closing;  /* served VMs that go, no front-end connected */
	GPtrArray *retiring; /* served VMs that go, front-end connected */
	GPtrArray *listened; /* bound by this reload (undone on failure) */
	/* for the summary */
	GString *added, *removed, *replaced, *quotas, *tenants, *remotes;
	GString *map, *daemon;
};

static void list_add(GString *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void list_add(GString *s, const char *fmt, ...)
{
	va_list ap;

	if (s->len)
		g_string_append(s, ", ");
	va_start(ap, fmt);
	g_string_append_vprintf(s, fmt, ap);
	va_end(ap);
}

/* The [daemon] keys a reload applies (the others must not change:
 * pvo_config_daemon_reloadable). */
static void daemon_changes(const struct pvo_daemon_config *a,
			   const struct pvo_daemon_config *b, GString *s)
{
	if (a->busy_poll_us != b->busy_poll_us)
		list_add(s, "busy-poll-us %u -> %u", a->busy_poll_us,
			 b->busy_poll_us);
	if (a->dscp != b->dscp)
		list_add(s, "dscp %u -> %u", a->dscp, b->dscp);
	if (a->num_peers != b->num_peers ||
	    memcmp(a->peers, b->peers, a->num_peers * sizeof(a->peers[0])))
		list_add(s, "peers");
	if (a->learn_age_s != b->learn_age_s)
		list_add(s, "learn-age-s %u -> %u", a->learn_age_s,
			 b->learn_age_s);
	if (a->learn_move_s != b->learn_move_s)
		list_add(s, "learn-move-s %u -> %u", a->learn_move_s,
			 b->learn_move_s);
	if (strcmp(a->socket_dir, b->socket_dir) != 0)
		list_add(s, "socket-dir");
}

static void tenant_changes(const struct pvo_daemon_config *a,
			   const struct pvo_daemon_config *b, GString *s)
{
	const struct pvo_tenant *t, *o;
	int i;

	for (i = 0; i < b->num_tenants; i++) {
		t = &b->tenants[i];
		o = find_tenant(a, t->name);
		if (!o)
			list_add(s, "%s added", t->name);
		else if (o->vni != t->vni || o->mtu != t->mtu ||
			 o->no_learn != t->no_learn)
			list_add(s, "%s changed", t->name);
	}
	for (i = 0; i < a->num_tenants; i++)
		if (!find_tenant(b, a->tenants[i].name))
			list_add(s, "%s removed", a->tenants[i].name);
}

static const struct pvo_vm_config *
find_remote(const struct pvo_daemon_config *cfg, const char *name)
{
	int i;

	for (i = 0; i < cfg->num_remotes; i++)
		if (strcmp(cfg->remotes[i].name, name) == 0)
			return &cfg->remotes[i];
	return NULL;
}

static void remote_changes(const struct pvo_daemon_config *a,
			   const struct pvo_daemon_config *b, GString *s)
{
	const struct pvo_vm_config *r, *o;
	int i;

	for (i = 0; i < b->num_remotes; i++) {
		r = &b->remotes[i];
		o = find_remote(a, r->name);
		if (!o)
			list_add(s, "%s added", r->name);
		else if (o->tenant->vni != r->tenant->vni ||
			 memcmp(o->mac, r->mac, 6) != 0 ||
			 o->num_ips != r->num_ips ||
			 memcmp(o->ips, r->ips,
				o->num_ips * sizeof(o->ips[0])) ||
			 o->vtep.s_addr != r->vtep.s_addr ||
			 o->vtep_port != r->vtep_port)
			list_add(s, "%s changed", r->name);
	}
	for (i = 0; i < a->num_remotes; i++)
		if (!find_remote(b, a->remotes[i].name))
			list_add(s, "%s removed", a->remotes[i].name);
}

/* What a VM that keeps running out of the config needs of the new one:
 * its tenant's VNI (the overlay takes its packets by it), its socket
 * path and its MAC in the tenant to itself. */
static bool check_gone(const struct plan *p, const struct pvo_vm *vm,
		       char **err)
{
	const struct pvo_vm_config *g = vm->cfg;
	int i;

	for (i = 0; i < p->cfg->num_tenants; i++)
		if (p->cfg->tenants[i].vni == g->tenant->vni)
			break;
	if (i == p->cfg->num_tenants) {
		*err = g_strdup_printf(
		    "vm '%s' is out of the config but its front-end is "
		    "still connected, and no tenant has its vni %u any "
		    "more (tenant '%s'): keep the tenant until the VM's "
		    "front-end has disconnected",
		    g->name, g->tenant->vni, g->tenant->name);
		return false;
	}
	for (i = 0; i < p->cfg->num_vms; i++) {
		const struct pvo_vm_config *c = &p->cfg->vms[i];

		if (p->keep[i])
			continue; /* it ran next to vm: no clash */
		if (strcmp(c->socket_path, g->socket_path) == 0) {
			*err = g_strdup_printf(
			    "vm '%s': its socket %s is still held by vm "
			    "'%s', which is out of the config but whose "
			    "front-end is still connected: use it once "
			    "that front-end has disconnected",
			    c->name, c->socket_path, g->name);
			return false;
		}
		if (c->tenant->vni == g->tenant->vni &&
		    memcmp(c->mac, g->mac, 6) == 0) {
			*err = g_strdup_printf(
			    "vm '%s' uses the MAC of vm '%s' in the same "
			    "tenant, which is out of the config but whose "
			    "front-end is still connected",
			    c->name, g->name);
			return false;
		}
	}
	return true;
}

/* Works out what the reload does, and refuses what it cannot do live. */
static bool plan(struct plan *p, char **err)
{
	const struct pvo_daemon_config *cfg = p->cfg;
	unsigned int k;
	int i;

	if (!pvo_engines_reloadable(cfg, err))
		return false;
	if (!pvo_config_daemon_reloadable(d.cfg, cfg, err))
		return false;
	for (i = 0; i < cfg->num_vms; i++) {
		const struct pvo_vm_config *c = &cfg->vms[i];
		struct pvo_vm *vm = find(d.vms, c->name);
		const char *what;
		char *q;

		if (!vm) {
			if (find(d.removed, c->name)) {
				*err = g_strdup_printf(
				    "vm '%s' was removed by an earlier "
				    "reload and its front-end is still "
				    "connected: it can come back once that "
				    "front-end has disconnected",
				    c->name);
				return false;
			}
			list_add(p->added, "%s", c->name);
			continue;
		}
		what = pvo_config_vm_identity_diff(vm->cfg, c);
		if (what && busy(vm)) {
			*err = g_strdup_printf(
			    "vm '%s': its %s changed while its front-end "
			    "is connected (the guest has seen it): change "
			    "it once the VM's front-end has disconnected",
			    c->name, what);
			return false;
		}
		if (what) {
			g_ptr_array_add(p->closing, vm);
			list_add(p->replaced, "%s (%s)", c->name, what);
			continue;
		}
		p->keep[i] = vm;
		q = pvo_quota_diff(&vm->cfg->quota, &c->quota);
		if (q)
			list_add(p->quotas, "%s (%s)", c->name, q);
		g_free(q);
	}
	for (k = 0; k < d.vms->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(d.vms, k);

		if (pvo_config_find_vm(cfg, pvo_vm_name(vm)))
			continue;
		g_ptr_array_add(busy(vm) ? p->retiring : p->closing, vm);
		list_add(p->removed, "%s%s", pvo_vm_name(vm),
			 busy(vm) ? " (its front-end is connected: the VM "
				    "runs until it disconnects)"
				  : "");
	}
	for (k = 0; k < d.removed->len; k++)
		if (!check_gone(p, g_ptr_array_index(d.removed, k), err))
			return false;
	for (k = 0; k < p->retiring->len; k++)
		if (!check_gone(p, g_ptr_array_index(p->retiring, k), err))
			return false;
	tenant_changes(d.cfg, cfg, p->tenants);
	remote_changes(d.cfg, cfg, p->remotes);
	daemon_changes(d.cfg, cfg, p->daemon);
	return true;
}

/* Binds the sockets of the new VMs (and of any VM whose socket could not
 * be bound before), after closing those of the VMs that go: false, with
 * everything as it was, if one cannot be bound. */
static bool listen_all(struct plan *p, char **err)
{
	unsigned int k;
	int i;

	for (i = 0; i < p->cfg->num_vms; i++)
		if (!p->keep[i])
			p->fresh[i] = pvo_vm_new(&p->cfg->vms[i]);
	for (k = 0; k < p->closing->len; k++)
		pvo_vhost_close(g_ptr_array_index(p->closing, k));
	for (i = 0; i < p->cfg->num_vms; i++) {
		struct pvo_vm *vm = p->keep[i] ? p->keep[i] : p->fresh[i];

		if (vm->vhost)
			continue;
		if (!pvo_vhost_listen(vm, err))
			goto undo;
		g_ptr_array_add(p->listened, vm);
	}
	return true;
undo:
	for (k = 0; k < p->listened->len; k++)
		pvo_vhost_close(g_ptr_array_index(p->listened, k));
	for (i = 0; i < p->cfg->num_vms; i++)
		pvo_vm_free(p->fresh[i]); /* never connected: free now */
	for (k = 0; k < p->closing->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(p->closing, k);
		char *e = NULL;

		if (!pvo_vhost_listen(vm, &e)) {
			pvo_log(pvo_vm_name(vm),
				"%s; not served until a reload binds its "
				"socket",
				e);
			g_free(e);
		}
	}
	return false;
}

static void commit(struct plan *p)
{
	struct pvo_overlay_reloaded ov;
	unsigned int k;
	char *q;
	int i;

	g_ptr_array_set_size(d.vms, 0);
	for (i = 0; i < p->cfg->num_vms; i++) {
		struct pvo_vm *vm = p->keep[i];

		if (!vm) {
			g_ptr_array_add(d.vms, p->fresh[i]);
			continue;
		}
		q = pvo_quota_diff(&vm->cfg->quota, &p->cfg->vms[i].quota);
		if (q)
			pvo_info(pvo_vm_name(vm),
				 "quotas changed: %s; they "
				 "count for objects created from now on, "
				 "existing objects stay",
				 q);
		g_free(q);
		vm->cfg = &p->cfg->vms[i];
		pvo_vm_apply_quota(vm);
		pvo_vm_set_engine(vm);
		g_ptr_array_add(d.vms, vm);
	}
	for (k = 0; k < p->closing->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(p->closing, k);
		const struct pvo_vm_config *c =
		    pvo_config_find_vm(p->cfg, pvo_vm_name(vm));

		if (c)
			pvo_info(pvo_vm_name(vm),
				 "its %s changed: set up "
				 "again (no front-end was connected)",
				 pvo_config_vm_identity_diff(vm->cfg, c));
		else
			pvo_info(pvo_vm_name(vm),
				 "removed from the config: "
				 "its socket %s is closed",
				 vm->cfg->socket_path);
		make_gone(vm);
		bury(vm);
	}
	for (k = 0; k < p->retiring->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(p->retiring, k);

		make_gone(vm);
		/* no front-end can connect any more; the session stays */
		unlink(vm->cfg->socket_path);
		g_ptr_array_add(d.removed, vm);
		pvo_info(pvo_vm_name(vm),
			 "removed from the config: its "
			 "socket %s is gone, no front-end can connect to it "
			 "any more; the connected front-end keeps the VM and "
			 "its RDMA objects until it disconnects",
			 vm->cfg->socket_path);
	}
	if (d.removed->len && !d.watch)
		d.watch = pvo_loop_add_timeout_s(1, watch_removed, NULL);
	pvo_overlay_reload(p->cfg, &ov);
	if (ov.added || ov.changed || ov.removed)
		list_add(p->map, "%u added, %u changed, %u removed", ov.added,
			 ov.changed, ov.removed);
	if (ov.kept_mgmt)
		list_add(p->map, "%u left as the management socket set %s",
			 ov.kept_mgmt, ov.kept_mgmt > 1 ? "them" : "it");
	if (p->cfg->busy_poll_us != d.cfg->busy_poll_us)
		pvo_busy_poll_init(p->cfg->busy_poll_us);
	pvo_config_free(d.cfg);
	d.cfg = p->cfg;
	p->cfg = NULL;
	d.reloads++;
}

static char *summary(const struct plan *p)
{
	GString *s = g_string_new(NULL);
	const struct {
		const char *what;
		const GString *list;
	} parts[] = {
	    {"VMs added", p->added},
	    {"VMs removed", p->removed},
	    {"VMs set up again", p->replaced},
	    {"quotas changed (for objects created from now on)", p->quotas},
	    {"tenants", p->tenants},
	    {"remote VMs", p->remotes},
	    {"mapping entries", p->map},
	    {"[daemon]", p->daemon},
	};
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(parts); i++)
		if (parts[i].list->len)
			g_string_append_printf(
			    s, "%s%s: %s", s->len ? "; " : "", parts[i].what,
			    parts[i].list->str);
	if (!s->len)
		g_string_append(s, "no changes");
	return g_string_free(s, FALSE);
}

static char *reload(char **err)
{
	struct plan p = {0};
	char *sum = NULL;

	if (!d.opts.from_file) {
		*err = g_strdup("the daemon was started with quick-start "
				"flags, not --config FILE: there is no file "
				"to read again");
		return NULL;
	}
	p.cfg = pvo_config_load(d.cfg->path, err);
	if (!p.cfg)
		return NULL;
	if (!pvo_config_select(p.cfg, d.opts.vms, err))
		goto out;
	if (p.cfg->num_vms == 0) {
		*err = g_strdup_printf("%s defines no [vm NAME] section: "
				       "nothing to serve",
				       p.cfg->path);
		goto out;
	}
	if (d.opts.busy_poll_set)
		p.cfg->busy_poll_us = d.opts.busy_poll_us;
	p.keep = g_new0(struct pvo_vm *, p.cfg->num_vms);
	p.fresh = g_new0(struct pvo_vm *, p.cfg->num_vms);
	p.closing = g_ptr_array_new();
	p.retiring = g_ptr_array_new();
	p.listened = g_ptr_array_new();
	p.added = g_string_new(NULL);
	p.removed = g_string_new(NULL);
	p.replaced = g_string_new(NULL);
	p.quotas = g_string_new(NULL);
	p.tenants = g_string_new(NULL);
	p.remotes = g_string_new(NULL);
	p.map = g_string_new(NULL);
	p.daemon = g_string_new(NULL);
	if (plan(&p, err) && listen_all(&p, err)) {
		commit(&p);
		sum = summary(&p);
	}
	g_free(p.keep);
	g_free(p.fresh);
	g_ptr_array_free(p.closing, TRUE);
	g_ptr_array_free(p.retiring, TRUE);
	g_ptr_array_free(p.listened, TRUE);
	g_string_free(p.added, TRUE);
	g_string_free(p.removed, TRUE);
	g_string_free(p.replaced, TRUE);
	g_string_free(p.quotas, TRUE);
	g_string_free(p.tenants, TRUE);
	g_string_free(p.remotes, TRUE);
	g_string_free(p.map, TRUE);
	g_string_free(p.daemon, TRUE);
out:
	pvo_config_free(p.cfg);
	return sum;
}

bool pvo_daemon_reload(char **summary, char **err)
{
	char *why = NULL, *sum = reload(&why);

	if (!sum) {
		*err =
		    g_strdup_printf("reload refused, nothing changed: %s", why);
		g_free(why);
		pvo_log(NULL, "%s", *err);
		return false;
	}
	*summary =
	    g_strdup_printf("config reloaded from %s: %s", d.cfg->path, sum);
	g_free(sum);
	pvo_log(NULL, "%s", *summary);
	return true;
}
