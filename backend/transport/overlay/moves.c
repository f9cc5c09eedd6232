// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Live migration between hosts, on the overlay (docs/migration.md): after
 * the switch-over the destination back-end announces the VM's new VTEP to
 * the other VTEPs it knows (announce.h), and twice more a little later in
 * case the underlay lost one; a back-end that receives a valid
 * announcement points its mapping of the VM there, and stops serving the
 * VM itself if it was the source. A moved host-verbs VM's new QP numbers
 * and keys come the same way (rebind_msg.h), and are kept for the host-verbs
 * engine (peer_alias.h).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>
#include <glib.h>

#include "announce.h"
#include "encap.h"
#include "engine.h"
#include "log.h"
#include "moves.h"
#include "overlay.h"
#include "overlay_map.h"
#include "peer_alias.h"
#include "rebind_msg.h"
#include "transport.h"
#include "vm.h"

/* Repeats after the first announcement, and their delays. */
static const uint64_t repeat_usec[] = {200000, 1000000};

static void add_target(GArray *t, struct in_addr a, struct in_addr self)
{
	unsigned int i;

	if (a.s_addr == self.s_addr || a.s_addr == INADDR_ANY)
		return;
	for (i = 0; i < t->len; i++)
		if (g_array_index(t, struct in_addr, i).s_addr == a.s_addr)
			return;
	g_array_append_val(t, a);
}

/* The VTEPs to tell: the tenant's peers (else [daemon]'s), the VTEPs of
 * its [remote] sections and of its mapped VMs. */
static GArray *targets(const struct pvo_daemon_config *cfg,
		       const struct pvo_tenant *tenant)
{
	GArray *t = g_array_new(FALSE, FALSE, sizeof(struct in_addr));
	GPtrArray *map = pvo_map_sorted();
	const struct in_addr *peers = cfg->peers;
	int npeers = cfg->num_peers;
	uint32_t vni = tenant->vni;
	unsigned int i;

	if (tenant->num_peers) {
		peers = tenant->peers;
		npeers = tenant->num_peers;
	}
	for (i = 0; i < (unsigned int)npeers; i++)
		add_target(t, peers[i], cfg->vtep);
	for (i = 0; i < (unsigned int)cfg->num_remotes; i++)
		if (cfg->remotes[i].tenant->vni == vni)
			add_target(t, cfg->remotes[i].vtep, cfg->vtep);
	for (i = 0; i < map->len; i++) {
		const struct pvo_map_entry *e = g_ptr_array_index(map, i);

		if (e->vni == vni)
			add_target(t, e->vtep, cfg->vtep);
	}
	g_ptr_array_free(map, TRUE);
	return t;
}

/* The key a tenant's announcements carry: its own, else [daemon]'s;
 * NULL (len 0) if neither is set. */
static const uint8_t *key_of(const struct pvo_daemon_config *cfg,
			     const struct pvo_tenant *t, size_t *len)
{
	if (t && t->migration_key_len) {
		*len = t->migration_key_len;
		return t->migration_key;
	}
	*len = cfg->migration_key_len;
	return *len ? cfg->migration_key : NULL;
}

/* The VM's k-th address as an IPv4 (network order) into *ip, if it is
 * one. */
static bool vm_ipv4(const struct pvo_vm_config *vc, int k, uint32_t *ip)
{
	if (!IN6_IS_ADDR_V4MAPPED(&vc->ips[k]))
		return false;
	memcpy(ip, &vc->ips[k].s6_addr[12], 4);
	return true;
}

/*
 * A connection of vm whose peer this back-end serves too (the VM moved
 * next to it): the four steps at once, here, in the tenant's thread
 * that serves both. False if the peer is not here.
 */
static bool rebind_here(struct pvo_vm *vm, const struct pvo_announce *a,
			const struct pvo_id_pair *p)
{
	struct pvo_conn_step in = {.kind = PVO_CONN_OFFER,
				   .gen = a->gen,
				   .vm_ip = a->ip,
				   .qpn = p->guest,
				   .host_qpn = p->host,
				   .peer_ip = p->peer_ip,
				   .peer_qpn = p->peer_qpn,
				   .psn = p->psn},
			     out;
	struct pvo_vm *peer, *at;
	uint8_t gid[16];

	pvo_gid_from_ipv4(p->peer_ip, gid);
	peer = pvo_served_by_gid(a->vni, gid);
	if (!peer || peer == vm || !pvo_vm_eng_has(peer, conn_step))
		return false;
	/* offer and ready to the peer, answer and go to the VM */
	for (at = peer; in.kind; at = at == peer ? vm : peer) {
		at->eng->conn_step(at, &in, &out);
		in = out;
	}
	return true;
}

/*
 * A host-verbs VM's rebind offer (rebind_msg.h) for its address a->ip:
 * the numbers its objects have on this host's device where the guest
 * knows others, in parts, to the VTEPs t; the datagrams sent. A VM
 * whose numbers all stayed sends one with none: its peers forget the
 * ones of its last move.
 */
static unsigned int send_offer(struct pvo_vm *vm, const struct pvo_announce *a,
			       const GArray *t, const uint8_t *key,
			       size_t key_len)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	struct pvo_rebind *r;
	GArray *ids;
	uint8_t buf[1500];
	unsigned int i, k, part, sent = 0;
	size_t n;

	if (!pvo_vm_eng_has(vm, vm_ids))
		return 0;
	ids = vm->eng->vm_ids(vm);
	r = g_new0(struct pvo_rebind, 1);
	r->kind = PVO_REBIND_OFFER;
	r->vni = a->vni;
	r->ip = a->ip;
	memcpy(r->mac, a->mac, 6);
	r->vtep = a->vtep;
	r->gen = a->gen;
	r->parts = (uint16_t)MAX(1u, (ids->len + PVO_REBIND_MAX_ENTRIES - 1) /
					 PVO_REBIND_MAX_ENTRIES);
	for (part = 0; part < r->parts; part++) {
		r->part = (uint16_t)part;
		r->count = 0;
		for (k = part * PVO_REBIND_MAX_ENTRIES;
		     k < ids->len && r->count < PVO_REBIND_MAX_ENTRIES; k++) {
			const struct pvo_id_pair *p =
			    &g_array_index(ids, struct pvo_id_pair, k);

			if (p->kind == PVO_ID_CONN && rebind_here(vm, a, p))
				continue;

			r->e[r->count++] = (struct pvo_rebind_entry){
			    .type = p->kind == PVO_ID_QPN   ? PVO_REBIND_QPN
				    : p->kind == PVO_ID_KEY ? PVO_REBIND_RKEY
							    : PVO_REBIND_CONN,
			    .guest = p->guest,
			    .host = p->host,
			    .peer_ip = p->peer_ip,
			    .peer_qpn = p->peer_qpn,
			    .psn = p->psn,
			};
		}
		n = pvo_rebind_write(buf, sizeof(buf), r, key, key_len);
		for (i = 0; n && i < t->len; i++)
			sent += pvo_overlay_send_frame(
			    buf, n, g_array_index(t, struct in_addr, i),
			    cfg->vxlan_port);
	}
	g_free(r);
	g_array_free(ids, TRUE);
	return sent;
}

static void send_all(struct pvo_vm *vm)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	const struct pvo_vm_config *vc = vm->cfg;
	struct pvo_announce a = {.vni = vc->tenant->vni, .gen = vm->move_gen};
	uint8_t buf[128];
	GArray *t;
	unsigned int i, k, sent = 0;
	const uint8_t *key;
	size_t n, key_len;

	if (!cfg)
		return;
	key = key_of(cfg, vc->tenant, &key_len);
	if (!key)
		return;
	a.vtep = cfg->vtep;
	a.port = cfg->vxlan_port;
	memcpy(a.mac, vc->mac, 6);
	t = targets(cfg, vc->tenant);
	for (k = 0; k < (unsigned int)vc->num_ips; k++) {
		if (!vm_ipv4(vc, (int)k, &a.ip))
			continue;
		n = vm->offer_only ? 0
				   : pvo_announce_write(buf, sizeof(buf), &a,
							key, key_len);
		for (i = 0; n && i < t->len; i++)
			sent += pvo_overlay_send_frame(
			    buf, n, g_array_index(t, struct in_addr, i),
			    cfg->vxlan_port);
		/* behind it (same socket, same order), its new numbers */
		sent += send_offer(vm, &a, t, key, key_len);
	}
	if (!vm->announce_left)
		pvo_info(pvo_vm_name(vm),
			 "%s to %u VTEPs (generation %" PRIu64
			 ", %u datagrams)",
			 vm->offer_only ? "offered its peers to rebind its "
					  "connections"
					: "announced its new VTEP",
			 t->len, vm->move_gen, sent);
	g_array_free(t, TRUE);
}

/* A VM that runs here again is nobody else's: the entries peers made for
 * it while it was away (learned, or announced) go, once its announcements
 * have gone to the VTEPs they name (targets()). */
static void forget_elsewhere(const struct pvo_vm *vm)
{
	const struct pvo_vm_config *vc = vm->cfg;
	uint32_t ip;
	int k;

	for (k = 0; k < vc->num_ips; k++) {
		if (!vm_ipv4(vc, k, &ip))
			continue;
		pvo_map_del_origin(vc->tenant->vni, ip, PVO_MAP_LEARNED);
		pvo_map_del_origin(vc->tenant->vni, ip, PVO_MAP_MOVED);
	}
}

static void repeat(void *opaque)
{
	struct pvo_vm *vm = opaque;

	/* a VM that stopped or moved on since: its next host announces */
	if (!vm->announce_left || !vm->connected || vm->frozen ||
	    vm->moved_away) {
		vm->announce_left = 0;
		return;
	}
	vm->announce_left--;
	send_all(vm);
	if (vm->announce_left)
		pvo_timer_arm(
		    &vm->announce,
		    repeat_usec[G_N_ELEMENTS(repeat_usec) - vm->announce_left]);
	else if (!vm->offer_only)
		forget_elsewhere(vm);
}

/* A VM served here has no aliases here: its objects are this host's. */
static void forget_aliases(const struct pvo_vm *vm)
{
	const struct pvo_vm_config *vc = vm->cfg;
	uint32_t ip;
	int k;

	for (k = 0; k < vc->num_ips; k++)
		if (vm_ipv4(vc, k, &ip))
			pvo_alias_forget(vc->tenant->vni, ip);
}

/* Now, and again at each of repeat_usec. */
static void send_repeated(struct pvo_vm *vm)
{
	if (!vm->announce.fn)
		pvo_timer_init(&vm->announce, repeat, vm);
	vm->announce_left = 0;
	send_all(vm);
	vm->announce_left = G_N_ELEMENTS(repeat_usec);
	pvo_timer_arm(&vm->announce, repeat_usec[0]);
}

void pvo_overlay_announce(struct pvo_vm *vm)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();

	size_t key_len;

	forget_aliases(vm);

	if (!pvo_overlay_enabled() || !cfg)
		return;
	if (vm->cfg->tenant->evpn) {
		/* its peers follow EVPN (evpn.c); a host-verbs VM's new
		 * numbers still go in its offer */
		if (pvo_vm_eng_has(vm, vm_ids) &&
		    key_of(cfg, vm->cfg->tenant, &key_len)) {
			vm->offer_only = true;
			send_repeated(vm);
		}
		return;
	}
	if (!key_of(cfg, vm->cfg->tenant, &key_len)) {
		pvo_info(pvo_vm_name(vm),
			 "migrated in, but no peer learns "
			 "where: set [tenant] or [daemon] migration-key to "
			 "announce it, or update the peers' mappings with "
			 "pvo-ctl");
		forget_elsewhere(vm);
		return;
	}
	vm->offer_only = false;
	send_repeated(vm);
}

void pvo_overlay_offer(struct pvo_vm *vm)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	size_t key_len;

	if (!pvo_overlay_enabled() || !cfg)
		return;
	if (!key_of(cfg, vm->cfg->tenant, &key_len)) {
		pvo_info(pvo_vm_name(vm),
			 "its connections wait for their peers, but no "
			 "peer can be told: set [tenant] or [daemon] "
			 "migration-key");
		return;
	}
	vm->offer_only = true;
	send_repeated(vm);
}

bool pvo_overlay_vm_elsewhere(uint32_t vni, uint32_t ip, struct in_addr vtep,
			      const char *how)
{
	struct pvo_vm *here;
	uint8_t gid[16];
	char where[INET_ADDRSTRLEN];

	pvo_gid_from_ipv4(ip, gid);
	here = pvo_served_by_gid(vni, gid);
	if (!here || here->moved_away)
		return true;
	inet_ntop(AF_INET, &vtep, where, sizeof(where));
	if (!here->frozen) {
		/* running here and said to be elsewhere: refuse to guess
		 * which is right */
		pvo_info(pvo_vm_name(here),
			 "%s behind VTEP %s while it runs here: ignored", how,
			 where);
		return false;
	}
	/* its source: peers here reach it over the overlay now */
	here->moved_away = true;
	pvo_local_routes_changed();
	pvo_info(pvo_vm_name(here), "migrated to VTEP %s: no longer served here",
		 where);
	return true;
}

enum pvo_drop pvo_overlay_moves_input(const uint8_t *buf, size_t len,
				      const struct sockaddr_in *from)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	struct pvo_map_entry e = {.origin = PVO_MAP_MOVED};
	struct pvo_map_entry was, *old = NULL;
	struct pvo_announce a;
	struct pvo_vm *here;
	uint8_t gid[16];
	char ip[INET_ADDRSTRLEN], vtep[INET_ADDRSTRLEN];
	int64_t now = g_get_real_time();
	const uint8_t *key;
	size_t key_len;

	/* the key of the tenant whose VNI the VXLAN header names (the
	 * parser checks that the signed VNI is the same) */
	if (len < PVO_VXLAN_LEN)
		return PVO_DROP_MALFORMED;
	key = key_of(cfg, pvo_overlay_tenant(pvo_vxlan_vni(buf)), &key_len);
	switch (pvo_announce_parse(buf, len, key, key_len, &a)) {
	case PVO_ANNOUNCE_OK:
		break;
	case PVO_ANNOUNCE_BAD_MAC:
		return PVO_DROP_BAD_ANNOUNCE;
	default:
		return PVO_DROP_MALFORMED;
	}
	/* a VM moves only to the VTEP that says so, which must serve its
	 * tenant */
	if (a.vtep.s_addr != from->sin_addr.s_addr)
		return PVO_DROP_BAD_ANNOUNCE;
	if (!pvo_overlay_tenant(a.vni))
		return PVO_DROP_UNKNOWN_VNI;
	/* EVPN says where its VMs are, nobody else */
	if (pvo_overlay_tenant(a.vni)->evpn)
		return PVO_DROP_BAD_ANNOUNCE;
	if (!pvo_overlay_vtep_serves(a.vni, a.vtep))
		return pvo_overlay_vtep_serves(0, a.vtep)
			   ? PVO_DROP_FOREIGN_VTEP
			   : PVO_DROP_BAD_ANNOUNCE;
	if (a.gen + PVO_ANNOUNCE_WINDOW_US < (uint64_t)now ||
	    a.gen > (uint64_t)now + PVO_ANNOUNCE_WINDOW_US)
		return PVO_DROP_STALE_ANNOUNCE;
	if (pvo_map_get(a.vni, a.ip, &was))
		old = &was;
	/* the repeats of an announcement already followed */
	if (old && old->gen == a.gen && old->vtep.s_addr == a.vtep.s_addr)
		return PVO_DROP_COUNT;
	if (old && old->gen >= a.gen)
		return PVO_DROP_STALE_ANNOUNCE;
	pvo_gid_from_ipv4(a.ip, gid);
	here = pvo_served_by_gid(a.vni, gid);
	if (here && here->move_gen >= a.gen)
		return PVO_DROP_STALE_ANNOUNCE;
	inet_ntop(AF_INET, &a.ip, ip, sizeof(ip));
	inet_ntop(AF_INET, &a.vtep, vtep, sizeof(vtep));
	if (!pvo_overlay_vm_elsewhere(a.vni, a.ip, a.vtep, "announced"))
		return PVO_DROP_LOCAL_SRC;
	e.vni = a.vni;
	e.ip = a.ip;
	e.vtep = a.vtep;
	e.port = cfg->vxlan_port;
	e.gen = a.gen;
	memcpy(e.mac, a.mac, 6);
	if (!pvo_map_set(&e))
		return PVO_DROP_STALE_ANNOUNCE;
	pvo_info(NULL,
		 "vni %u: %s migrated behind VTEP %s (generation %" PRIu64 ")",
		 a.vni, ip, vtep, a.gen);
	return PVO_DROP_COUNT;
}

/* Whether vtep may speak for the VM (vni, ip) of tenant t: the VTEP EVPN
 * names for it, else one that serves the tenant; why it may not. */
static enum pvo_drop speaks_for(const struct pvo_tenant *t, uint32_t vni,
				uint32_t ip, struct in_addr vtep)
{
	struct pvo_map_entry e;

	if (!t->evpn && !pvo_overlay_vtep_serves(vni, vtep))
		return pvo_overlay_vtep_serves(0, vtep) ? PVO_DROP_FOREIGN_VTEP
							: PVO_DROP_BAD_ANNOUNCE;
	/* its move is known here (the announcement, or EVPN, came first) */
	if (!pvo_map_get(vni, ip, &e) || e.vtep.s_addr != vtep.s_addr)
		return PVO_DROP_WRONG_VTEP;
	return PVO_DROP_COUNT;
}

/* An offer's QPN and key pairs, kept for the host-verbs engine; why
 * it is dropped, or PVO_DROP_COUNT. */
static enum pvo_drop take_pairs(const struct pvo_rebind *r)
{
	static bool told_full;
	struct pvo_quota q;
	unsigned int i, added = 0;

	if (pvo_alias_moved(r->vni, r->ip, r->gen) == PVO_ALIAS_STALE)
		return PVO_DROP_STALE_ANNOUNCE;
	pvo_quota_defaults(&q);
	for (i = 0; i < r->count; i++) {
		const struct pvo_rebind_entry *e = &r->e[i];
		enum pvo_alias_verdict v;

		if (e->type == PVO_REBIND_CONN)
			continue;
		v = pvo_alias_add(r->vni, r->ip, r->gen,
				  e->type == PVO_REBIND_RKEY ? PVO_ALIAS_RKEY
							     : PVO_ALIAS_QPN,
				  e->guest, e->host, q.max_qp + q.max_mr);
		if (v == PVO_ALIAS_STALE)
			return PVO_DROP_STALE_ANNOUNCE;
		if (v == PVO_ALIAS_FULL && !told_full) {
			pvo_info(NULL,
				 "vni %u: a moved VM's numbers beyond %u "
				 "(max-qp + max-mr) are not kept",
				 r->vni, q.max_qp + q.max_mr);
			told_full = true;
		}
		added += v == PVO_ALIAS_ADDED;
	}
	if (r->part == 0) {
		char ip[INET_ADDRSTRLEN], vtep[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &r->ip, ip, sizeof(ip));
		inet_ntop(AF_INET, &r->vtep, vtep, sizeof(vtep));
		pvo_info(NULL,
			 "vni %u: %s behind VTEP %s has new host numbers "
			 "(generation %" PRIu64 ", part 1 of %u: %u pairs)",
			 r->vni, ip, vtep, r->gen, r->parts, added);
	}
	return PVO_DROP_COUNT;
}

static const enum pvo_conn_kind conn_kind[] = {
    [PVO_REBIND_OFFER] = PVO_CONN_OFFER,
    [PVO_REBIND_ANSWER] = PVO_CONN_ANSWER,
    [PVO_REBIND_READY] = PVO_CONN_READY,
    [PVO_REBIND_GO] = PVO_CONN_GO,
    [PVO_REBIND_END_BY_PEER] = PVO_CONN_END_BY_PEER,
    [PVO_REBIND_END_BY_MOVED] = PVO_CONN_END_BY_MOVED,
};
/* a reply's kind is sent as its number */
G_STATIC_ASSERT((int)PVO_REBIND_END_BY_MOVED == (int)PVO_CONN_END_BY_MOVED);

/* The replies of one kind to the sender of r, in one message. */
static void send_replies(const struct pvo_rebind *r, struct pvo_rebind *out)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	size_t key_len, n;
	const uint8_t *key = key_of(cfg, pvo_overlay_tenant(r->vni), &key_len);
	uint8_t buf[1500];

	if (!out->count || !key)
		return;
	n = pvo_rebind_write(buf, sizeof(buf), out, key, key_len);
	if (n)
		pvo_overlay_send_frame(buf, n, r->vtep, cfg->vxlan_port);
}

/*
 * The connection entries of r, each a step of the VM of this host it
 * names (the moved VM `here` for an answer, a go or an end by the peer,
 * the peer VM for an offer, a ready or an end by the moved VM); the
 * replies go back to the sender, one message for each kind of reply.
 * This runs in the thread of r's tenant (overlay.c hands a tenant's
 * datagrams to it), which owns the VM.
 */
static void take_conns(const struct pvo_rebind *r, struct pvo_vm *here)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	const struct pvo_tenant *t = pvo_overlay_tenant(r->vni);
	struct pvo_rebind *outs[PVO_REBIND_KIND_MAX + 1] = {NULL}, *out;
	struct pvo_conn_step in, rep;
	uint8_t gid[16];
	unsigned int i;

	for (i = 0; i < r->count; i++) {
		const struct pvo_rebind_entry *e = &r->e[i];
		struct pvo_vm *vm = here;

		if (e->type != PVO_REBIND_CONN)
			continue;
		if (!vm) {
			pvo_gid_from_ipv4(e->peer_ip, gid);
			vm = pvo_served_by_gid(r->vni, gid);
		} else if (speaks_for(t, r->vni, e->peer_ip, r->vtep) !=
			   PVO_DROP_COUNT) {
			vm = NULL; /* its peer is not behind the sender */
		}
		if (!vm || !pvo_vm_eng_has(vm, conn_step))
			continue;
		in = (struct pvo_conn_step){.kind = conn_kind[r->kind],
					    .gen = r->gen,
					    .vm_ip = r->ip,
					    .qpn = e->guest,
					    .host_qpn = e->host,
					    .peer_ip = e->peer_ip,
					    .peer_qpn = e->peer_qpn,
					    .psn = e->psn,
					    .psn2 = e->psn2};
		vm->eng->conn_step(vm, &in, &rep);
		if (!rep.kind || (unsigned int)rep.kind > PVO_REBIND_KIND_MAX)
			continue;
		out = outs[rep.kind];
		if (!out) {
			out = outs[rep.kind] = g_new0(struct pvo_rebind, 1);
			*out = (struct pvo_rebind){
			    .kind = (uint8_t)rep.kind, /* the same numbers */
			    .vni = r->vni,
			    .ip = r->ip,
			    .gen = r->gen,
			    .vtep = cfg->vtep,
			    .parts = 1};
			memcpy(out->mac, r->mac, 6);
		}
		out->e[out->count++] = (struct pvo_rebind_entry){
		    .type = PVO_REBIND_CONN,
		    .guest = rep.qpn,
		    .host = rep.host_qpn,
		    .peer_ip = rep.peer_ip,
		    .peer_qpn = rep.peer_qpn,
		    .psn = rep.psn,
		    .psn2 = rep.psn2};
	}
	for (i = 0; i <= PVO_REBIND_KIND_MAX; i++) {
		if (!outs[i])
			continue;
		send_replies(r, outs[i]);
		g_free(outs[i]);
	}
}

enum pvo_drop pvo_overlay_rebind_input(const uint8_t *buf, size_t len,
				       const struct sockaddr_in *from)
{
	const struct pvo_daemon_config *cfg = pvo_overlay_config();
	const struct pvo_tenant *t;
	struct pvo_rebind *r;
	struct pvo_vm *here;
	enum pvo_drop why;
	int64_t now = g_get_real_time();
	const uint8_t *key;
	size_t key_len;
	uint8_t gid[16];

	if (len < PVO_VXLAN_LEN)
		return PVO_DROP_MALFORMED;
	t = pvo_overlay_tenant(pvo_vxlan_vni(buf));
	key = key_of(cfg, t, &key_len);
	r = g_new(struct pvo_rebind, 1);
	switch (pvo_rebind_parse(buf, len, key, key_len, r)) {
	case PVO_ANNOUNCE_OK:
		why = PVO_DROP_COUNT;
		break;
	case PVO_ANNOUNCE_BAD_MAC:
		why = PVO_DROP_BAD_ANNOUNCE;
		goto out;
	default:
		why = PVO_DROP_MALFORMED;
		goto out;
	}
	why = PVO_DROP_BAD_ANNOUNCE;
	/* from the VTEP it names, for a tenant on host verbs, in time */
	if (r->vtep.s_addr != from->sin_addr.s_addr)
		goto out;
	why = PVO_DROP_UNKNOWN_VNI;
	if (!t)
		goto out;
	why = PVO_DROP_BAD_ANNOUNCE;
	if (!t->hostverbs)
		goto out;
	why = PVO_DROP_STALE_ANNOUNCE;
	if (r->gen + PVO_ANNOUNCE_WINDOW_US < (uint64_t)now ||
	    r->gen > (uint64_t)now + PVO_ANNOUNCE_WINDOW_US)
		goto out;
	pvo_gid_from_ipv4(r->ip, gid);
	here = pvo_served_by_gid(r->vni, gid);
	if (r->kind == PVO_REBIND_ANSWER || r->kind == PVO_REBIND_GO ||
	    r->kind == PVO_REBIND_END_BY_PEER) {
		/* to the moved VM, which runs here; each entry's sender
		 * checked against its peer (take_conns) */
		why = PVO_DROP_UNKNOWN_DST;
		if (!here)
			goto out;
		why = PVO_DROP_COUNT;
		take_conns(r, here);
		goto out;
	}
	/* from the moved VM's VTEP */
	why = PVO_DROP_LOCAL_SRC;
	if (here)
		goto out;
	why = speaks_for(t, r->vni, r->ip, r->vtep);
	if (why != PVO_DROP_COUNT)
		goto out;
	if (r->kind == PVO_REBIND_OFFER)
		why = take_pairs(r);
	if (why == PVO_DROP_COUNT)
		take_conns(r, NULL);
out:
	g_free(r);
	return why;
}
