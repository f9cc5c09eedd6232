/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A libvirt domain for a VM of the back-end's configuration, so that
 * operators need not write the device's XML by hand (pvo-ctl
 * libvirt-xml). libvirt has no element for the device: it goes in
 * through <qemu:commandline>, next to guest RAM that vhost-user needs
 * shared and the virtio-net MAC the back-end expects.
 */
#ifndef PVO_LIBVIRT_XML_H
#define PVO_LIBVIRT_XML_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

struct pvo_libvirt_opts {
	const char *emulator; /* QEMU with the device (required) */
	const char *network;  /* libvirt network of the virtio-net NIC */
	unsigned int memory_mib;
	unsigned int vcpus;
	bool tcg; /* domain type 'qemu' instead of 'kvm' */
};

/* Writes the domain XML of vm; false if out fails. */
bool pvo_libvirt_xml(FILE *out, const struct pvo_vm_config *vm,
		     const struct pvo_libvirt_opts *o);

#endif
