/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A hostile guest: attacks on the back-end played by a simulated VM, each
 * selectable by name (attack_names()). An attack is set up by
 * attack_new(), does one round of hostile work per attack_step() and
 * gives back what it holds in attack_free(); attack_run_for() loops the
 * steps. What the attacker got (accepted requests, error statuses, bytes)
 * is in attack_stats().
 *
 *   big-wqe       RDMA WRITEs of wqe_bytes behind one kick, plus many
 *                 doorbell records naming the QP
 *   ctrl-flood    the control queue kept full of REG_MR / DEREG_MR of
 *                 4 GiB MRs over a page directory repeating two pages
 *   mr-amplify    such 4 GiB MRs registered until the guest gets an error
 *   read-amplify  RoCEv2-in-VXLAN READ requests from the wire (duplicates
 *                 and one longer than the MR) toward the back-end's VTEP
 *   legal-flood   4 QPs x 8 RDMA WRITEs of 1 MiB in flight
 */
#ifndef ATTACK_H
#define ATTACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim_vm.h"

/* Knobs; zero fields take the defaults in brackets. */
struct attack_opts {
	uint64_t wqe_bytes;   /* big-wqe: bytes per WRITE [64 MiB] */
	unsigned int wqes;    /* big-wqe: WRITEs per kick [16] */
	unsigned int records; /* big-wqe: doorbell records per kick [511] */
	unsigned int batch;   /* ctrl-flood: REG_MRs per full queue [32] */
	uint64_t read_bytes;  /* read-amplify: RETH length [64 MiB] */
	unsigned int dups;    /* read-amplify: duplicates per READ [4] */
	/* read-amplify: the underlay. The attacker's socket is bound to
	 * src_vtep:port, a [remote] (peer_ip, peer_mac) of the VM's tenant
	 * (vni) sits behind it; the back-end's VTEP is vtep:port. */
	const char *vtep;
	const char *src_vtep;
	unsigned int port;
	uint32_t vni;
	const char *vm_ip;
	const char *peer_ip;
	const char *peer_mac;
};

struct attack_stats {
	uint64_t steps;	 /* rounds of hostile work */
	uint64_t ops;	 /* requests the back-end accepted */
	uint64_t errors; /* error statuses, WC errors, NAKs the attacker got */
	uint64_t bytes;	 /* bytes the attacker asked the back-end to move */
	uint64_t wire_bytes; /* read-amplify: bytes that came back */
	char first_error[160];
};

struct attack;

/* NULL-terminated list of the attacks' names. */
const char *const *attack_names(void);
/* Set up attack @name as VM @vm (opened by the caller, which keeps it).
 * NULL with a message in @err. */
struct attack *attack_new(const char *name, struct sim_vm *vm,
			  const struct attack_opts *o, char *err, size_t len);
/* One round; 0, or -errno once the attack cannot go on (message in
 * attack_stats()->first_error). Error statuses are counted, not failures. */
int attack_step(struct attack *a);
/* Steps for @seconds or until *@stop (may be NULL); the first -errno. */
int attack_run_for(struct attack *a, double seconds, const atomic_bool *stop);
const struct attack_stats *attack_stats(const struct attack *a);
/* Wait for what is in flight (up to a timeout), release, free. */
void attack_free(struct attack *a);

#endif /* ATTACK_H */
