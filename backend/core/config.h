/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Host-side configuration: tenants and the VMs served, with their overlay
 * parameters and quotas. Only the host administrator sets these. */
#ifndef PVO_CONFIG_H
#define PVO_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

#define PVO_MAX_IPS 8		/* == PVO_MAX_ALLOWED_GIDS */
#define PVO_MAX_PEERS 64	/* [daemon] peers */
/* [daemon] threads: more would wake each other more than they serve;
 * threads = 0 takes one per online CPU up to PVO_AUTO_THREADS */
#define PVO_MAX_THREADS 64
#define PVO_AUTO_THREADS 8
#define PVO_MIGRATION_KEY_MIN 16	/* bytes in the migration-key file */
#define PVO_MIGRATION_KEY_MAX 256
#define PVO_NAME_MAX 64

struct pvo_quota {
	uint32_t max_ucontexts;
	uint32_t max_pd;
	uint32_t max_qp;
	uint32_t max_cq;
	uint32_t max_mr;
	uint32_t max_mw;
	uint32_t max_ah;
	uint32_t max_srq;
	uint64_t max_mr_size;
	/* host verbs (engine/hostverbs/hv_budget.h): mremap'd runs of
	 * host MRs, bytes of host MRs (what the host device pins) */
	uint32_t max_host_mappings;
	uint64_t max_pinned;
	uint64_t max_host_mem;	/* bytes: host_budget.h */
};

struct pvo_tenant {
	char name[PVO_NAME_MAX];
	uint32_t vni;		/* VXLAN network identifier, 24 bits */
	uint16_t mtu;		/* Ethernet MTU of the tenant network */
	bool no_learn;		/* learn = no: only [remote] / managed entries */
	/* peers = the VTEPs that serve the tenant: the only ones its
	 * senders are learned from and its VMs followed to, besides its
	 * [remote] sections' (overlay.c); none: [daemon] peers */
	int num_peers;
	struct in_addr peers[PVO_MAX_PEERS];
	/* migration-key = FILE: its VMs' announcements are signed and
	 * checked with this key, not [daemon]'s (moves.c); 0: none */
	size_t migration_key_len;
	uint8_t migration_key[PVO_MIGRATION_KEY_MAX];
	/* thread = K: the data-path thread K - 1 serves its VMs; 0: the
	 * daemon places it (daemon.c), in thread */
	uint32_t thread_pin;
	unsigned int thread;
	/* transport = hostverbs: inter-host RC / UC QPs ride the host's
	 * RDMA device ([daemon] hostverbs-device) with the GIDs of this
	 * netdev (engine/hostverbs/hv_device.h) */
	bool hostverbs;
	char hv_netdev[16];	/* IFNAMSIZ */
	char hv_device[64];	/* its device and port ([daemon]'s if unset) */
	uint8_t hv_port;
	/* control-plane = evpn: its map entries and its VTEPs come from
	 * the kernel's tables of these devices, which an EVPN daemon
	 * (FRR's zebra) programs (transport/overlay/evpn.c) */
	bool evpn;
	char evpn_netdev[16];	/* the VXLAN device: MAC -> VTEP */
	char evpn_svi[16];	/* the bridge or SVI: IP -> MAC */
	int line;		/* where it was defined, for messages */
};

struct pvo_vm_config {
	char name[PVO_NAME_MAX];
	const struct pvo_tenant *tenant;
	uint8_t mac[6];
	int num_ips;
	struct in6_addr ips[PVO_MAX_IPS];	/* IPv4 as ::ffff:a.b.c.d */
	char socket_path[108];			/* sun_path size */
	struct pvo_quota quota;
	/* hostverbs-migration = error: a migration ends the connections to
	 * peers that are not ours instead of being refused */
	bool hv_migration_error;
	/* [remote NAME] only: the VTEP the VM is behind */
	struct in_addr vtep;
	uint16_t vtep_port;
	int line;
};

struct pvo_daemon_config {
	char *path;		/* "command line" for quick-start flags */
	char socket_dir[96];
	int num_tenants;
	struct pvo_tenant *tenants;
	int num_vms;
	struct pvo_vm_config *vms;
	/* overlay transport: enabled by a VTEP address */
	struct in_addr vtep;		/* INADDR_ANY: no overlay */
	uint16_t vxlan_port;
	uint8_t dscp;
	bool no_udp_gso;		/* udp-gso = no */
	char mgmt_socket[108];
	/* socket-group: the group given the VMs' sockets and socket-dir
	 * ("": none, sockets keep the daemon's umask) */
	char socket_group[33];
	gid_t socket_gid;
	uint32_t busy_poll_us;		/* 0: wait for doorbells only */
	uint32_t threads;		/* 0: one per online CPU, capped */
	/* overlay learning: the VTEPs it may learn from besides those of
	 * [remote] sections, how long a learned entry lives without
	 * packets, and how long it must be silent before another VTEP may
	 * take its (VNI, IP) */
	int num_peers;
	struct in_addr peers[PVO_MAX_PEERS];
	uint32_t learn_age_s;
	uint32_t learn_move_s;
	/* migration-key = FILE: authenticates announcements of migrated
	 * VMs between back-ends (transport/overlay/moves.c); 0: none */
	size_t migration_key_len;
	uint8_t migration_key[PVO_MIGRATION_KEY_MAX];
	/* host-verbs engine: the host RDMA device and port of tenants
	 * with transport = hostverbs that name none; "" when none is set */
	char hv_device[64];
	uint8_t hv_port;
	int num_remotes;		/* [remote NAME]: VMs behind other VTEPs */
	struct pvo_vm_config *remotes;
};

/* Parse a config file. On failure returns NULL and sets *err to a message
 * of the form "FILE:LINE: what is wrong" (caller frees with g_free). */
struct pvo_daemon_config *pvo_config_load(const char *path, char **err);
struct pvo_daemon_config *pvo_config_parse(const char *path, const char *text,
				    char **err);
void pvo_config_free(struct pvo_daemon_config *cfg);

/* Keep only the named VMs; an unknown name is an error naming the file. */
bool pvo_config_select(struct pvo_daemon_config *cfg, char **names, char **err);

const struct pvo_vm_config *pvo_config_find_vm(const struct pvo_daemon_config *cfg,
					       const char *name);

void pvo_quota_defaults(struct pvo_quota *q);

/* The reference of every section and key, from the parser's tables:
 * markdown, as in docs/configuration.md (g_free). */
char *pvo_config_reference(void);

/*
 * Reloading (SIGHUP, pvo-ctl reload): what a running daemon can take from
 * a new file. The [daemon] keys that bind sockets or that the overlay
 * reads once stay (vtep, vxlan-port, udp-gso, the management socket):
 * false with *why naming the key (g_free) if one changed.
 */
bool pvo_config_daemon_reloadable(const struct pvo_daemon_config *old,
				  const struct pvo_daemon_config *new,
				  char **why);
/* What a VM's front-end and guest have seen of its config (its tenant by
 * name, VNI and MTU, mac, ips, socket): the first key that differs
 * between a and b ("tenant", "vni", "mtu", "transport", "mac", "ips",
 * "socket"), or
 * NULL if none does. */
const char *pvo_config_vm_identity_diff(const struct pvo_vm_config *a,
					const struct pvo_vm_config *b);
/* "max-qp 4096 -> 16, max-mr 4096 -> 8" for the quotas that differ, or
 * NULL if none does (g_free). */
char *pvo_quota_diff(const struct pvo_quota *a, const struct pvo_quota *b);

/* Value parsers shared with the command line. Return false if malformed. */
bool pvo_parse_mac(const char *s, uint8_t mac[6]);
bool pvo_parse_ip(const char *s, struct in6_addr *out);
bool pvo_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
