// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which engine serves a VM, and the engines' devices. The only place
 * besides the daemon that names the host-verbs engine; a build without
 * libibverbs (meson option hostverbs) has the software engine only.
 */
#include <glib.h>

#include "config.h"
#include "engine.h"
#ifdef PVO_HOSTVERBS
#include "hostverbs.h"
#endif

const struct pvo_vm_engine *pvo_vm_engine_for(const struct pvo_vm_config *cfg)
{
#ifdef PVO_HOSTVERBS
	if (pvo_hv_serves(cfg->tenant))
		return &pvo_vm_engine_hostverbs;
#endif
	return NULL;
}

/* A tenant asks for a device that this build cannot open. */
static const struct pvo_tenant *unbuilt(const struct pvo_daemon_config *cfg)
{
#ifndef PVO_HOSTVERBS
	int i;

	for (i = 0; i < cfg->num_tenants; i++)
		if (cfg->tenants[i].hostverbs)
			return &cfg->tenants[i];
#endif
	return NULL;
}

static bool refuse_unbuilt(const struct pvo_daemon_config *cfg, char **err)
{
	const struct pvo_tenant *t = unbuilt(cfg);

	if (!t)
		return true;
	*err = g_strdup_printf("tenant '%s' has transport = hostverbs, but "
			       "this pvrdma-overlayd was built without host "
			       "verbs (no libibverbs): install libibverbs-dev "
			       "and rebuild, or use transport = overlay",
			       t->name);
	return false;
}

bool pvo_engines_open(const struct pvo_daemon_config *cfg, char **err)
{
	if (!refuse_unbuilt(cfg, err))
		return false;
#ifdef PVO_HOSTVERBS
	return pvo_hv_open(cfg, err);
#else
	return true;
#endif
}

void pvo_engines_close(void)
{
#ifdef PVO_HOSTVERBS
	pvo_hv_close();
#endif
}

bool pvo_engines_reloadable(const struct pvo_daemon_config *cfg, char **err)
{
	if (!refuse_unbuilt(cfg, err))
		return false;
#ifdef PVO_HOSTVERBS
	return pvo_hv_reloadable(cfg, err);
#else
	return true;
#endif
}

/*
 * Which engine runs a QP that arrives in a migration stream: the one its
 * VM's tenant gives such a QP here (a host-verbs VM's host QPs are made
 * again once the stream is loaded), else the software engine.
 */
const struct pvo_engine_ops *pvo_engine_of_loaded(const struct pvo_qp *qp)
{
#ifdef PVO_HOSTVERBS
	const struct pvo_engine_ops *e = pvo_hv_engine_of_loaded(qp);

	if (e)
		return e;
#endif
	(void)qp;
	return &pvo_engine_sw;
}
