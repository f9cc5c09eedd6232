/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Address vectors (struct pvo_av, checked once into struct pvo_path) and
 * address handles, which UD work requests name by handle.
 */
#ifndef PVO_AH_H
#define PVO_AH_H

#include <stdbool.h>
#include <stdint.h>

#include "pvo-device.h"

struct pvo_vm;
struct pvo_pd;
struct ibv_ah;

/* A validated address vector. */
struct pvo_path {
	uint8_t dgid[PVO_GID_LEN];
	uint8_t dmac[6];
	uint8_t sgid_index; /* a valid slot of the VM's GID table */
	uint8_t hop_limit;
	uint32_t flow_label; /* 20 bits */
	uint8_t traffic_class;
	uint8_t sl;
};

struct pvo_ah {
	uint32_t handle;
	uint32_t ctx;
	struct pvo_pd *pd;
	struct pvo_path path;
	void *engine_part; /* the VM engine's (engine.h), or NULL */
};

/* EINVAL unless sgid_index names an installed GID, flow_label fits 20
 * bits, sl 4 bits and the reserved field is 0. */
enum pvo_status pvo_path_from_av(struct pvo_vm *vm, const struct pvo_av *av,
				 struct pvo_path *p);
void pvo_path_to_av(const struct pvo_path *p, struct pvo_av *av);

enum pvo_status pvo_cmd_create_ah(struct pvo_vm *vm, uint32_t ctx,
				  const void *req, void *resp);
void pvo_ah_free(struct pvo_vm *vm, struct pvo_ah *ah);

#endif
