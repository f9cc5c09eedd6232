// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Control commands executed directly (no vhost-user): results carry the
 * right data, and malformed or hostile commands get the right status
 * without touching state. tests/integration drives the same commands through
 * a real vhost-user session.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config.h"
#include "ctrl.h"
#include "device.h"
#include "tap.h"
#include "vm.h"

static struct pvo_vm *vm;

struct msg {
	struct pvo_cmd_hdr h;
	uint8_t body[256];
} __attribute__((packed));

struct reply {
	struct pvo_resp_hdr h;
	uint8_t body[256];
} __attribute__((packed));

static size_t last_len;

static uint32_t run(uint16_t op, uint32_t ctx, const void *body,
		    size_t body_len, struct reply *r)
{
	struct msg m = { .h = { htole16(op), 0, htole32(ctx) } };

	if (body_len)
		memcpy(m.body, body, body_len);
	memset(r, 0xee, sizeof(*r));
	do
		last_len = pvo_ctrl_execute(vm, &m, sizeof(m.h) + body_len, r,
					    sizeof(*r));
	while (last_len == PVO_CTRL_AGAIN);
	return le32toh(r->h.status);
}

static uint32_t add_gid(const char *ip, uint32_t index)
{
	struct pvo_cmd_add_gid c = { htole32(1), htole32(index) };
	struct in6_addr a;
	struct reply r;

	pvo_parse_ip(ip, &a);
	memcpy(c.gid, a.s6_addr, 16);
	c.type = htole32(PVO_GID_TYPE_ROCE_V2);
	return run(PVO_CMD_ADD_GID, 0, &c, sizeof(c), &r);
}

int main(void)
{
	static const char conf[] =
		"[tenant t]\nvni=5\nmtu=1500\n"
		"[vm g]\ntenant=t\nmac=52:54:00:ab:cd:ef\nips=10.0.0.1\n"
		"max-pd=3\nsocket=/tmp/unused.sock\n";
	struct pvo_resp_query_device *d;
	struct pvo_resp_query_port *p;
	struct pvo_resp_query_gid *g;
	struct pvo_daemon_config *cfg;
	struct pvo_cmd_port port = { htole32(1), 0 };
	struct pvo_cmd_dealloc_pd dp = { 0 };
	struct reply r;
	struct msg m;
	char *err = NULL;
	uint8_t ll[16];
	uint32_t pd[4];
	int i, bad;

	tap_plan(37);
	cfg = pvo_config_parse("t", conf, &err);
	vm = pvo_vm_new(&cfg->vms[0]);

	tap_is(run(PVO_CMD_QUERY_DEVICE, 0, NULL, 0, &r), PVO_STATUS_OK,
	       "QUERY_DEVICE ok");
	d = (void *)r.body;
	tap_is(last_len, sizeof(r.h) + sizeof(*d), "QUERY_DEVICE length");
	tap_is(le32toh(d->max_pd), 3, "max_pd is the VM quota");
	tap_is(le32toh(d->vendor_part_id), PVO_PCI_DEVICE_ID, "part id");
	tap_ok(memcmp(&d->node_guid, "\x50\x54\x00\xff\xfe\xab\xcd\xef", 8) ==
		       0,
	       "node GUID is the MAC's EUI-64");
	tap_is(d->phys_port_cnt, 1, "one port");

	tap_is(run(PVO_CMD_QUERY_PORT, 0, &port, sizeof(port), &r),
	       PVO_STATUS_OK, "QUERY_PORT ok");
	p = (void *)r.body;
	tap_is(p->state, 4, "port ACTIVE");
	tap_is(p->active_mtu, 3, "1500 tenant MTU -> IB MTU 1024");
	tap_is(le32toh(p->gid_tbl_len), PVO_GID_TABLE_LEN, "gid table len");
	port.port = htole32(2);
	tap_is(run(PVO_CMD_QUERY_PORT, 0, &port, sizeof(port), &r),
	       PVO_STATUS_EINVAL, "port 2 does not exist");
	port.port = htole32(1);

	tap_is(run(PVO_CMD_QUERY_PKEY, 0, &port, sizeof(port), &r),
	       PVO_STATUS_OK, "QUERY_PKEY 0");
	tap_is(le16toh(((struct pvo_resp_query_pkey *)r.body)->pkey), 0xffff,
	       "default pkey");
	port.index = htole32(1);
	tap_is(run(PVO_CMD_QUERY_PKEY, 0, &port, sizeof(port), &r),
	       PVO_STATUS_EINVAL, "pkey index 1 does not exist");

	/* GIDs: the policy decides, the table remembers. */
	tap_is(add_gid("::ffff:10.0.0.1", 1), PVO_STATUS_OK,
	       "allowed IPv4 GID installs");
	tap_is(add_gid("::ffff:10.0.0.2", 2), PVO_STATUS_EPERM,
	       "foreign IPv4 GID is refused");
	pvo_gid_link_local(vm->cfg->mac, ll);
	{
		char s[64];

		inet_ntop(AF_INET6, ll, s, sizeof(s));
		tap_is(add_gid(s, 0), PVO_STATUS_OK,
		       "MAC-derived link-local GID installs");
	}
	tap_is(add_gid("::ffff:10.0.0.1", 3), PVO_STATUS_EBUSY,
	       "same GID in a second slot is refused");
	tap_is(add_gid("::ffff:10.0.0.1", PVO_GID_TABLE_LEN), PVO_STATUS_EINVAL,
	       "GID index out of range");
	port.index = htole32(1);
	tap_is(run(PVO_CMD_QUERY_GID, 0, &port, sizeof(port), &r),
	       PVO_STATUS_OK, "QUERY_GID of the installed slot");
	g = (void *)r.body;
	tap_ok(g->gid[10] == 0xff && g->gid[15] == 1 &&
		       le32toh(g->type) == PVO_GID_TYPE_ROCE_V2,
	       "QUERY_GID returns ::ffff:10.0.0.1 RoCEv2");
	port.index = htole32(2);
	tap_is(run(PVO_CMD_QUERY_GID, 0, &port, sizeof(port), &r),
	       PVO_STATUS_ENOENT, "QUERY_GID of the refused slot is empty");
	port.index = htole32(1);
	tap_is(run(PVO_CMD_DEL_GID, 0, &port, sizeof(port), &r), PVO_STATUS_OK,
	       "DEL_GID");
	tap_is(run(PVO_CMD_QUERY_GID, 0, &port, sizeof(port), &r),
	       PVO_STATUS_ENOENT, "deleted slot is empty");

	/* PDs: quota 3, ownership. */
	for (i = 0; i < 4; i++) {
		pd[i] = run(PVO_CMD_ALLOC_PD, 0, NULL, 0, &r) ? 0 :
			le32toh(((struct pvo_resp_alloc_pd *)r.body)->pd);
	}
	tap_ok(pd[0] && pd[1] && pd[2] && !pd[3],
	       "three PDs fit the quota, the fourth does not");
	tap_is(le32toh(r.h.status), PVO_STATUS_ENOSPC, "quota -> ENOSPC");
	dp.pd = htole32(pd[1]);
	tap_is(run(PVO_CMD_DEALLOC_PD, 0, &dp, sizeof(dp), &r), PVO_STATUS_OK,
	       "DEALLOC_PD");
	tap_is(run(PVO_CMD_DEALLOC_PD, 0, &dp, sizeof(dp), &r),
	       PVO_STATUS_ENOENT, "double DEALLOC_PD -> ENOENT");
	dp.pd = htole32(pd[0]);
	tap_is(run(PVO_CMD_DEALLOC_PD, 12345, &dp, sizeof(dp), &r),
	       PVO_STATUS_ENOENT, "command for a context that does not exist");
	tap_is(run(PVO_CMD_ALLOC_UCONTEXT, 0, NULL, 0, &r), PVO_STATUS_ENOSPC,
	       "ALLOC_UCONTEXT without a started doorbell queue -> ENOSPC");

	/* Malformed commands. */
	tap_is(run(77, 0, NULL, 0, &r), PVO_STATUS_EOPNOTSUPP,
	       "unknown opcode");
	tap_is(run(PVO_CMD_QUERY_GID, 0, &port, 4, &r), PVO_STATUS_EINVAL,
	       "truncated body");
	memset(&m, 0, sizeof(m));
	m.h.opcode = htole16(PVO_CMD_QUERY_DEVICE);
	m.h.flags = htole16(1);
	pvo_ctrl_execute(vm, &m, sizeof(m.h), &r, sizeof(r));
	tap_is(le32toh(r.h.status), PVO_STATUS_EINVAL, "nonzero flags");
	tap_is(pvo_ctrl_execute(vm, &m, 3, &r, sizeof(r)), sizeof(r.h),
	       "short header still gets a status");
	m.h.flags = 0;
	tap_is(pvo_ctrl_execute(vm, &m, sizeof(m.h), &r, sizeof(r.h) + 8),
	       sizeof(r.h), "response buffer too small for the body");
	tap_is(pvo_ctrl_execute(vm, &m, sizeof(m.h), &r, 4), 0,
	       "response buffer smaller than the header -> nothing written");

	/* Random commands: no crash, status always a known code, and the
	 * sanitizers watch every access. */
	srand(1);
	bad = 0;
	for (i = 0; i < 200000; i++) {
		size_t n = rand() % sizeof(m), room = rand() % sizeof(r);
		size_t k, len;

		for (k = 0; k < n; k++)
			((uint8_t *)&m)[k] = rand();
		m.h.opcode = htole16(rand() % (PVO_CMD_MAX + 2));
		if (rand() & 1)
			m.h.ctx = 0;
		if (rand() % 4)
			m.h.flags = 0;
		if (m.h.opcode == htole16(PVO_CMD_DEALLOC_UCONTEXT))
			continue; /* covered above; keep PDs to exercise */
		do
			len = pvo_ctrl_execute(vm, &m, n, &r, room);
		while (len == PVO_CTRL_AGAIN);
		if (len > room || (len && le32toh(r.h.status) > 8))
			bad++;
	}
	tap_is(bad, 0, "200000 random commands: sane lengths and statuses");

	pvo_vm_free(vm);
	pvo_config_free(cfg);
	return tap_done();
}
