/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host-verbs engine (docs/hostverbs.md): a VM whose tenant has
 * transport = hostverbs gets, for each of its RC and UC QPs that talks
 * to another host and each of its user UD QPs, a QP of the host's RDMA
 * device, which moves the data between guest memory and the wire
 * itself. The guest sees the host objects' names: its MR keys are the
 * host MRs' keys and its QPNs the host QPs' numbers, so remote peers
 * reach guest memory directly.
 *
 *   hv_device.c  the host device and port, its completion channel and
 *                async events; which host GID a tenant's VM sends from
 *   hv_mr.c      host PDs per guest PD, host MRs over aliased guest pages
 *   hv_budget.c  what host MRs hold per VM (mappings, pinned bytes),
 *                bounded
 *   hv_cq.c      host CQs per guest CQ; host completions to guest CQEs
 *   hv_qp.c      host QPs: create, modify, free, async events
 *   hv_post.c    the QP engine (engine.h): guest WQEs posted on host
 *                QPs, host completions to guest CQEs
 *   hv_engine.c  the object engine (engine.h): the hooks the verbs
 *                layer calls, the VM's own part
 *   hv_neigh.c   destinations the host has no MAC for: refused before
 *                a call that would wait for ARP on the loop
 *
 *   hv_migrate.c a VM's live migration: what may move, the freeze, its
 *                objects made again where it arrives
 *   replay_plan.c where a rebuilt RC requester restarts
 *
 *   hv_srq.c     host SRQs: guest SRQ receives posted on them, their
 *                completions to the receiving QP's CQ
 *
 * Same-host RC / UC pairs, GSI QPs, UD QPs with an SRQ, kernel QPs,
 * memory windows and fast-reg MRs keep the software engine (local and
 * overlay transports). The host device is process-wide, like the configuration;
 * its sources are on the loop that opened it.
 */
#ifndef PVO_HOSTVERBS_H
#define PVO_HOSTVERBS_H

#include <stdbool.h>
#include <stdint.h>


struct pvo_tenant;
struct pvo_daemon_config;
struct pvo_qp;
struct pvo_engine_ops;

/*
 * Opens [daemon] hostverbs-device at start-up if a tenant uses it. False
 * with *err (g_free) naming what is missing and what to do.
 */
bool pvo_hv_open(const struct pvo_daemon_config *cfg, char **err);
void pvo_hv_close(void);
/* A reload may not ask for the device when it was not opened at
 * start-up: false with *err (g_free). */
bool pvo_hv_reloadable(const struct pvo_daemon_config *cfg, char **err);

/* Whether the tenant uses host verbs on a device the daemon opened: its
 * VMs then have the host-verbs object engine. */
bool pvo_hv_serves(const struct pvo_tenant *t);

/* The QP engine of a QP loaded from a migration stream that gets a host
 * QP again where it arrives (hv_migrate.c), or NULL. */
const struct pvo_engine_ops *pvo_hv_engine_of_loaded(const struct pvo_qp *qp);

/* The object engine of such VMs (engine.h), whose QPs that talk to
 * another host run on the host-verbs QP engine. */
extern const struct pvo_vm_engine pvo_vm_engine_hostverbs;

#endif
