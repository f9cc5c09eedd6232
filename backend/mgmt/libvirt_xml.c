// SPDX-License-Identifier: GPL-2.0-or-later
/* libvirt domain XML for a configured VM; see libvirt_xml.h. */
#include <glib.h>

#include "libvirt_xml.h"

/* QEMU's option syntax: a comma inside a value is written twice. */
static char *qemu_opt_value(const char *s)
{
	GString *v = g_string_new(NULL);

	for (; *s; s++) {
		g_string_append_c(v, *s);
		if (*s == ',')
			g_string_append_c(v, ',');
	}
	return g_string_free(v, FALSE);
}

bool pvo_libvirt_xml(FILE *out, const struct pvo_vm_config *vm,
		     const struct pvo_libvirt_opts *o)
{
	char *name = g_markup_escape_text(vm->name, -1);
	char *emulator = g_markup_escape_text(o->emulator, -1);
	char *network = g_markup_escape_text(o->network, -1);
	char *path = qemu_opt_value(vm->socket_path);
	char *chardev = g_strdup_printf("socket,id=pvo-rdma0,path=%s", path);
	char *chardev_xml = g_markup_escape_text(chardev, -1);
	const uint8_t *m = vm->mac;
	int ret;

	ret = fprintf(
	    out,
	    "<!-- a pvrdma-overlay VM (VNI %u): add its disks, then virsh "
	    "define -->\n"
	    "<domain type='%s' "
	    "xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>\n"
	    "  <name>%s</name>\n"
	    "  <memory unit='MiB'>%u</memory>\n"
	    "  <vcpu>%u</vcpu>\n"
	    "  <os>\n"
	    "    <type arch='x86_64' machine='q35'>hvm</type>\n"
	    "  </os>\n"
	    "  <!-- ACPI: virsh shutdown presses the power button -->\n"
	    "  <features>\n"
	    "    <acpi/>\n"
	    "  </features>\n"
	    "  <!-- vhost-user: the back-end maps guest RAM -->\n"
	    "  <memoryBacking>\n"
	    "    <source type='memfd'/>\n"
	    "    <access mode='shared'/>\n"
	    "  </memoryBacking>\n"
	    "  <devices>\n"
	    "    <emulator>%s</emulator>\n"
	    "    <!-- the RDMA port binds to the NIC with the VM's MAC -->\n"
	    "    <interface type='network'>\n"
	    "      <source network='%s'/>\n"
	    "      <mac address='%02x:%02x:%02x:%02x:%02x:%02x'/>\n"
	    "      <model type='virtio'/>\n"
	    "    </interface>\n"
	    "    <serial type='pty'/>\n"
	    "    <console type='pty'/>\n"
	    "  </devices>\n"
	    "  <!-- libvirt has no element for the device; it gets a fixed "
	    "slot on the\n"
	    "       root bus, one that libvirt leaves free, so that libvirt's "
	    "own devices\n"
	    "       never take it and a migration's destination has it at "
	    "the same place.\n"
	    "       The firmware is Debian's (seabios, qemu-system-data, "
	    "ipxe-qemu): this\n"
	    "       QEMU has none of its own -->\n"
	    "  <qemu:commandline>\n"
	    "    <qemu:arg value='-L'/>\n"
	    "    <qemu:arg value='/usr/share/seabios'/>\n"
	    "    <qemu:arg value='-L'/>\n"
	    "    <qemu:arg value='/usr/share/qemu'/>\n"
	    "    <qemu:arg value='-L'/>\n"
	    "    <qemu:arg value='/usr/lib/ipxe/qemu'/>\n"
	    "    <qemu:arg value='-chardev'/>\n"
	    "    <qemu:arg value='%s'/>\n"
	    "    <qemu:arg value='-device'/>\n"
	    "    <qemu:arg "
	    "value='pvrdma-overlay,chardev=pvo-rdma0,bus=pcie.0,addr=0x1c'/>\n"
	    "  </qemu:commandline>\n"
	    "</domain>\n",
	    vm->tenant->vni, o->tcg ? "qemu" : "kvm", name, o->memory_mib,
	    o->vcpus, emulator, network, m[0], m[1], m[2], m[3], m[4], m[5],
	    chardev_xml);
	g_free(name);
	g_free(emulator);
	g_free(network);
	g_free(path);
	g_free(chardev);
	g_free(chardev_xml);
	return ret > 0 && fflush(out) == 0;
}
