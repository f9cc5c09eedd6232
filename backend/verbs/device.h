/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the device looks like to one VM: config space, device and port
 * attributes. The engine's own limits are capped by the VM's quotas.
 */
#ifndef PVO_DEVICE_ATTR_H
#define PVO_DEVICE_ATTR_H

#include "pvo-device.h"
#include "config.h"

/* Limits of the back-end itself (before per-VM quotas). */
#define PVO_DEV_MAX_QP_WR 16384
#define PVO_DEV_MAX_SGE 16
#define PVO_DEV_MAX_CQE 65536
#define PVO_DEV_MAX_SRQ_WR 16384
#define PVO_DEV_MAX_RD_ATOM 16
#define PVO_DEV_MAX_INLINE 256
#define PVO_DEV_FW_VER 0x0000000100000000ull /* 1.0.0: bits 47-32.31-16.15-0 */

/* Virtqueues this back-end serves for a VM: ctrl + event + kernel doorbell
 * + user doorbells, PVO_MAX_QUEUES in all. */
unsigned int pvo_device_max_queues(const struct pvo_vm_config *vm);

void pvo_device_config(const struct pvo_vm_config *vm, struct pvo_config *c);
void pvo_device_attr(const struct pvo_vm_config *vm,
		     struct pvo_resp_query_device *a);
void pvo_device_port_attr(const struct pvo_vm_config *vm,
			  struct pvo_resp_query_port *p);

/* Largest MR: the VM's max-mr-size quota, at most what one page
 * directory describes (PVO_PDIR_MAX_PAGES pages, 4 GiB). */
uint64_t pvo_device_max_mr_size(const struct pvo_vm_config *vm);

/* IB MTU enum (1 = 256 .. 5 = 4096) usable on an Ethernet MTU. */
unsigned int pvo_ib_mtu_for(unsigned int eth_mtu);

#endif
