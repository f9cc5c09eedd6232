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
 *
 * Threads. Everything here runs on thread 0. A tenant's VMs live on the
 * thread it is placed on (place()), and this file touches a VM only
 * with the world paused and that thread's loop entered (in_vm()), so
 * whatever a VM's code attaches lands on its own loop.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <limits.h>
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
#include "threads.h"
#include "vhost.h"
#include "vm.h"

/* A VM's config once the config file no longer has it. */
struct gone {
	struct pvo_vm_config cfg; /* vm->cfg points here */
	struct pvo_tenant tenant;
	GSource *reaper; /* on the VM's loop, once it is closed */
};

static struct {
	struct pvo_daemon_config *cfg;
	struct pvo_daemon_opts opts;
	GPtrArray *vms;	    /* struct pvo_vm: the config's, in its order */
	GPtrArray *removed; /* struct pvo_vm: gone, front-end connected */
	GPtrArray *dying;   /* struct pvo_vm: gone and closed, to be freed */
	GMutex dying_lock;  /* their reapers run on their own threads */
	GSource *watch;	    /* looks at the removed ones every second */
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

/* From thread 0 (the world paused): the calling thread acts in the
 * loop of vm's thread until out_vm(). */
static struct pvo_loop *in_vm(const struct pvo_vm *vm)
{
	return pvo_thread_enter(vm->cfg->tenant->thread);
}

static void out_vm(struct pvo_loop *was)
{
	pvo_thread_leave(was);
}

static void free_gone(struct pvo_vm *vm)
{
	struct gone *g = gone_of(vm);

	pvo_vm_free(vm);
	g_free(g);
}

static gboolean reap(gpointer opaque)
{
	struct pvo_vm *vm = opaque;

	g_mutex_lock(&d.dying_lock);
	g_ptr_array_remove_fast(d.dying, vm);
	g_mutex_unlock(&d.dying_lock);
	g_source_unref(gone_of(vm)->reaper); /* it ends with this call */
	free_gone(vm);
	return G_SOURCE_REMOVE;
}

/* A VM out of the config and without a front-end: closed now, freed
 * once nothing refers to it any more (see the top of the file). */
static void bury(struct pvo_vm *vm)
{
	struct pvo_loop *was = in_vm(vm);
	struct gone *g = gone_of(vm);

	pvo_vhost_close(vm);
	g_mutex_lock(&d.dying_lock);
	g_ptr_array_add(d.dying, vm);
	g_mutex_unlock(&d.dying_lock);
	g->reaper = g_idle_source_new();
	g_source_set_priority(g->reaper, G_PRIORITY_LOW);
	g_source_set_callback(g->reaper, reap, vm, NULL);
	pvo_loop_attach(g->reaper);
	out_vm(was);
}

static gboolean watch_removed(gpointer unused)
{
	unsigned int i = 0;
	gboolean again;

	pvo_threads_pause();
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
	again = d.removed->len != 0;
	if (!again) {
		g_source_unref(d.watch);
		d.watch = NULL;
	}
	pvo_threads_resume();
	return again ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
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

/* How many threads cfg asks for: threads = 0 takes the online CPUs. */
static unsigned int threads_wanted(const struct pvo_daemon_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cfg->threads)
		return cfg->threads;
	return CLAMP(cpus, 1, PVO_AUTO_THREADS);
}

/* The thread the served VMs of VNI vni run on, or -1 if none is served. */
static int serving_thread(uint32_t vni)
{
	GPtrArray *lists[] = { d.vms, d.removed };
	unsigned int l, k;

	for (l = 0; l < G_N_ELEMENTS(lists); l++)
		for (k = 0; lists[l] && k < lists[l]->len; k++) {
			const struct pvo_vm *vm = g_ptr_array_index(lists[l], k);

			if (vm->cfg->tenant->vni == vni)
				return vm->cfg->tenant->thread;
		}
	return -1;
}

/*
 * Places cfg's tenants on n threads: a pinned one (thread = K) where it
 * says, one whose VNI has VMs served already where they run (a VM never
 * changes threads), the others each on the thread with fewest tenants.
 * Local copies go between VMs of one tenant only, so they never cross
 * threads (docs/threads.md).
 */
static bool place(struct pvo_daemon_config *cfg, unsigned int n, char **err)
{
	unsigned int load[PVO_MAX_THREADS] = { 0 }, k, best;
	int i, was;

	for (i = 0; i < cfg->num_tenants; i++) {
		struct pvo_tenant *t = &cfg->tenants[i];

		t->thread = UINT_MAX;
		was = serving_thread(t->vni);
		if (t->thread_pin > n) {
			*err = g_strdup_printf(
			    "%s:%d: tenant '%s': thread = %u, but the daemon "
			    "runs %u threads (threads in [daemon], or "
			    "--threads)",
			    cfg->path, t->line, t->name, t->thread_pin, n);
			return false;
		}
		if (t->thread_pin && was >= 0 &&
		    (unsigned int)was != t->thread_pin - 1) {
			*err = g_strdup_printf(
			    "%s:%d: tenant '%s': thread = %u, but its VMs "
			    "run on thread %d: a VM cannot change threads; "
			    "change it with the daemon restarted",
			    cfg->path, t->line, t->name, t->thread_pin,
			    was + 1);
			return false;
		}
		if (t->thread_pin)
			t->thread = t->thread_pin - 1;
		else if (was >= 0)
			t->thread = was;
		if (t->thread != UINT_MAX)
			load[t->thread]++;
	}
	for (i = 0; i < cfg->num_tenants; i++) {
		struct pvo_tenant *t = &cfg->tenants[i];

		if (t->thread != UINT_MAX)
			continue;
		for (best = 0, k = 1; k < n; k++)
			if (load[k] < load[best])
				best = k;
		t->thread = best;
		load[best]++;
	}
	return true;
}

static void show_threads(GString *o)
{
	unsigned int i, k, vms;

	for (i = 0; i < pvo_threads_count(); i++) {
		for (vms = 0, k = 0; k < d.vms->len; k++)
			vms += ((struct pvo_vm *)g_ptr_array_index(d.vms, k))
				   ->cfg->tenant->thread == i;
		g_string_append_printf(o, "thread id=%u vms=%u cpu_ms=%llu\n",
				       i + 1, vms,
				       pvo_thread_cpu_us(i) / 1000);
	}
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
	g_string_append_printf(o, "%s remotes=%d threads=%u\n",
			       cfg->num_peers ? "" : "none", cfg->num_remotes,
			       pvo_threads_count());
	show_threads(o);
	for (i = 0; i < cfg->num_tenants; i++) {
		const struct pvo_tenant *t = &cfg->tenants[i];

		g_string_append_printf(
		    o, "tenant name=%s vni=%u mtu=%u learn=%s thread=%u\n",
		    t->name, t->vni, t->mtu, t->no_learn ? "no" : "yes",
		    t->thread + 1);
	}
}

/* The busy-poll setting of every thread's loop. */
static void busy_poll_all(uint32_t usec)
{
	unsigned int i;

	for (i = 0; i < pvo_threads_count(); i++) {
		struct pvo_loop *was = pvo_thread_enter(i);

		pvo_busy_poll_init(usec);
		pvo_thread_leave(was);
	}
}

static bool start(struct pvo_daemon_config *cfg, char **err)
{
	struct pvo_loop *was;
	int i;

	busy_poll_all(cfg->busy_poll_us);
	if (!pvo_engines_open(cfg, err))
		return false;
	for (i = 0; i < cfg->num_vms; i++) {
		struct pvo_vm *vm;
		bool ok;

		was = pvo_thread_enter(cfg->vms[i].tenant->thread);
		vm = pvo_vm_new(&cfg->vms[i]);
		g_ptr_array_add(d.vms, vm);
		ok = pvo_vhost_listen(vm, cfg, err);
		pvo_thread_leave(was);
		if (!ok)
			return false;
	}
	return pvo_overlay_start(cfg, err) &&
	       (!cfg->mgmt_socket[0] ||
		pvo_mgmt_start(cfg->mgmt_socket, &d.mgmt, err));
}

bool pvo_daemon_start(struct pvo_daemon_config *cfg,
		      const struct pvo_daemon_opts *o, char **err)
{
	unsigned int n;
	bool ok;

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
	n = threads_wanted(cfg);
	if (!place(cfg, n, err) || !pvo_threads_start(n, err))
		return false;
	pvo_threads_pause();
	ok = start(cfg, err);
	pvo_threads_resume();
	if (ok)
		pvo_info(NULL, "serving %d VMs of %d tenants on %u thread%s",
			 cfg->num_vms, cfg->num_tenants, n, n > 1 ? "s" : "");
	return ok;
}

void pvo_daemon_stop(void)
{
	struct pvo_loop *was;
	struct pvo_vm *vm;

	if (!d.vms)
		return;
	pvo_threads_pause();
	pvo_mgmt_stop();
	pvo_overlay_stop();
	pvo_loop_remove(d.watch);
	d.watch = NULL;
	while (d.vms->len) {
		vm = g_ptr_array_remove_index(d.vms, 0);
		was = in_vm(vm);
		pvo_vhost_close(vm);
		pvo_vm_free(vm);
		out_vm(was);
	}
	while (d.removed->len) {
		vm = g_ptr_array_remove_index(d.removed, 0);
		bury(vm);
	}
	/* no callback runs any more: the reapers' VMs are freed here */
	while (d.dying->len) {
		vm = g_ptr_array_remove_index(d.dying, 0);
		was = in_vm(vm);
		pvo_loop_remove(gone_of(vm)->reaper);
		free_gone(vm);
		out_vm(was);
	}
	pvo_engines_close();
	pvo_threads_resume();
	pvo_threads_stop();
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
	struct pvo_loop *was;
	unsigned int k;
	bool ok;
	int i;

	for (i = 0; i < p->cfg->num_vms; i++)
		if (!p->keep[i]) {
			was = pvo_thread_enter(p->cfg->vms[i].tenant->thread);
			p->fresh[i] = pvo_vm_new(&p->cfg->vms[i]);
			pvo_thread_leave(was);
		}
	for (k = 0; k < p->closing->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(p->closing, k);

		was = in_vm(vm);
		pvo_vhost_close(vm);
		out_vm(was);
	}
	for (i = 0; i < p->cfg->num_vms; i++) {
		struct pvo_vm *vm = p->keep[i] ? p->keep[i] : p->fresh[i];

		if (vm->vhost)
			continue;
		/* a fresh VM's cfg is already the new file's: its thread */
		was = in_vm(vm);
		ok = pvo_vhost_listen(vm, p->cfg, err);
		out_vm(was);
		if (!ok)
			goto undo;
		g_ptr_array_add(p->listened, vm);
	}
	return true;
undo:
	for (k = 0; k < p->listened->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(p->listened, k);

		was = in_vm(vm);
		pvo_vhost_close(vm);
		out_vm(was);
	}
	for (i = 0; i < p->cfg->num_vms; i++) {
		if (!p->fresh[i])
			continue;
		was = in_vm(p->fresh[i]);
		pvo_vm_free(p->fresh[i]); /* never connected: free now */
		out_vm(was);
	}
	for (k = 0; k < p->closing->len; k++) {
		struct pvo_vm *vm = g_ptr_array_index(p->closing, k);
		char *e = NULL;

		was = in_vm(vm);
		ok = pvo_vhost_listen(vm, d.cfg, &e);
		out_vm(was);
		if (!ok) {
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
	struct pvo_loop *was;
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
		/* a kept VM's tenant keeps its thread (place()) */
		vm->cfg = &p->cfg->vms[i];
		was = in_vm(vm);
		pvo_vm_apply_quota(vm);
		pvo_vm_set_engine(vm);
		out_vm(was);
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
		was = in_vm(vm);
		unlink(vm->cfg->socket_path);
		out_vm(was);
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
		busy_poll_all(p->cfg->busy_poll_us);
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
	if (d.opts.threads_set)
		p.cfg->threads = d.opts.threads;
	if (!place(p.cfg, pvo_threads_count(), err))
		goto out;
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
	char *why = NULL, *sum;

	/* the VMs move to the new file's sections under their threads */
	pvo_threads_pause();
	sum = reload(&why);
	pvo_threads_resume();

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
