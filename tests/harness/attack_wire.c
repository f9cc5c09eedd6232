// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * read-amplify: the attacker's VM has an RC QP connected to a [remote]
 * of its tenant that the attacker plays from the underlay: a UDP socket
 * on the remote's VTEP sends crafted RoCEv2-in-VXLAN READ requests to
 * the back-end's VTEP. Each step sends one READ of read_bytes (within a
 * 4 GiB MR of two guest pages) and dups duplicates of it; the first step
 * also sends, on a second QP, one READ of 4 GiB - 1 against an 8 KiB MR,
 * which the back-end must refuse (a NAK, counted as an error). Responses
 * are read back and counted (wire_bytes), at most as fast as the
 * socket's buffer allows.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "attack_int.h"
#include "encap.h"
#include "pvo_cmd.h"
#include "roce.h"

#define RA_MTU 1024	   /* path MTU of the QPs (IB enum 3) */
#define RA_PEER_QPN 0x4242 /* the remote's QP numbers (any) */
#define RA_PSN 0x100	   /* the remote's first PSN */
#define RA_PACE_MS 100	   /* a step's length: reading responses */

struct read_amplify {
	struct sim_qp qp, qz; /* qz: the over-long READ's */
	bool have_qp, have_qz;
	uint32_t big_mr, big_key;
	bool have_big;
	struct sim_mr small;
	bool have_small;
	int fd;
	struct sockaddr_in to;
	struct pvo_inner in;
	uint32_t psn; /* next new request's */
};

static int ra_connect(struct attack *a, struct sim_qp *qp, uint32_t peer_qpn)
{
	struct sim_qp_init init = {
	    .type = PVO_QPT_RC,
	    .send_cq = &a->cq,
	    .recv_cq = &a->cq,
	    .sq_entries = 16,
	    .rq_entries = 16,
	    .max_send_sge = 1,
	    .max_recv_sge = 1,
	};
	struct sim_conn c = {.path_mtu = 3};
	struct sim_peer p = {.qpn = peer_qpn, .psn = RA_PSN};
	int gi = sim_vm_gid_index_ipv4(a->vm, a->o.vm_ip);

	if (gi < 0)
		return atk_fail(a, EINVAL, "VM has no GID of %s", a->o.vm_ip);
	c.sgid_index = (uint8_t)gi;
	pvo_gid_from_ipv4(p.gid, a->o.peer_ip);
	memcpy(p.mac, ((struct read_amplify *)a->priv)->in.smac, 6);
	if (sim_create_qp(&a->pd, &init, qp))
		return atk_fail(a, EIO, "QP: %s", a->vm->err);
	if (sim_qp_connect(qp, &c, &p))
		return atk_fail(a, EIO, "connect: %s", a->vm->err);
	return 0;
}

static int ra_socket(struct attack *a, struct read_amplify *s)
{
	struct sockaddr_in la = {.sin_family = AF_INET};
	int big = 4 << 20;

	la.sin_addr.s_addr = inet_addr(a->o.src_vtep);
	la.sin_port = htons(a->o.port);
	s->to.sin_family = AF_INET;
	s->to.sin_addr.s_addr = inet_addr(a->o.vtep);
	s->to.sin_port = htons(a->o.port);
	s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&la, sizeof(la)))
		return atk_fail(a, errno, "bind %s:%u: %s", a->o.src_vtep,
				a->o.port, strerror(errno));
	setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	return 0;
}

static int read_amplify_start(struct attack *a)
{
	struct read_amplify *s = calloc(1, sizeof(*s));
	uint8_t *m;
	int ret;

	if (!s)
		return atk_fail(a, ENOMEM, "out of memory");
	s->fd = -1;
	a->priv = s;
	if (!a->o.vtep || !a->o.src_vtep || !a->o.port || !a->o.vni ||
	    !a->o.vm_ip || !a->o.peer_ip || !a->o.peer_mac)
		return atk_fail(a, EINVAL,
				"needs the VTEPs, port, VNI, the "
				"VM's IP and the remote's IP and MAC");
	if (!a->o.read_bytes)
		a->o.read_bytes = 64 * ATK_MIB;
	if (!a->o.dups)
		a->o.dups = 4;
	m = s->in.smac;
	if (sscanf(a->o.peer_mac, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1],
		   &m[2], &m[3], &m[4], &m[5]) != 6)
		return atk_fail(a, EINVAL, "bad MAC %s", a->o.peer_mac);
	memcpy(s->in.dmac, a->vm->mac, 6);
	s->in.vni = a->o.vni;
	s->in.sip = inet_addr(a->o.peer_ip);
	s->in.dip = inet_addr(a->o.vm_ip);
	s->in.ttl = 64;
	s->in.sport = 0xbad;
	s->psn = RA_PSN;
	ret = ra_socket(a, s) ?: atk_basic_objects(a, 64) ?: atk_big_pdir(a);
	if (ret)
		return ret;
	ret = atk_reg_big_mr(a, ATK_BIG_MR,
			     PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ,
			     &s->big_mr, &s->big_key);
	if (ret)
		return atk_fail(a, EIO, "REG_MR: %s", pvo_status_name(ret));
	s->have_big = true;
	if (sim_reg_mr(&a->pd, &a->two_pages, 0, 2 * 4096,
		       PVO_ACCESS_LOCAL_WRITE | PVO_ACCESS_REMOTE_READ,
		       &s->small))
		return atk_fail(a, EIO, "REG_MR: %s", a->vm->err);
	s->have_small = true;
	ret = ra_connect(a, &s->qp, RA_PEER_QPN);
	s->have_qp = !ret;
	if (!ret) {
		ret = ra_connect(a, &s->qz, RA_PEER_QPN + 1);
		s->have_qz = !ret;
	}
	return ret;
}

/* One READ request to @qp. */
static void ra_send(struct attack *a, const struct sim_qp *qp, uint32_t psn,
		    uint64_t va, uint32_t rkey, uint32_t len)
{
	struct read_amplify *s = a->priv;
	struct pvo_roce_hdr h = {0};
	uint8_t buf[256];
	size_t n;

	h.opcode = PVO_ROCE_RC | PVO_OPC_READ_REQUEST;
	h.pkey = PVO_ROCE_PKEY_DEFAULT;
	h.dqpn = qp->qpn;
	h.ackreq = true;
	h.psn = psn & 0xffffff;
	h.va = va;
	h.rkey = rkey;
	h.dma_len = len;
	n = pvo_roce_encode(buf + PVO_ENCAP_LEN, &h);
	n = pvo_encap_seal(buf, &s->in, n);
	if (sendto(s->fd, buf, n, 0, (struct sockaddr *)&s->to,
		   sizeof(s->to)) != (ssize_t)n)
		atk_error(a, "sendto: %s", strerror(errno));
}

/* Read what came back for @ms: count bytes, NAKs are errors. */
static void ra_drain(struct attack *a, int ms)
{
	struct read_amplify *s = a->priv;
	struct pollfd p = {.fd = s->fd, .events = POLLIN};
	static uint8_t buf[65536];
	struct pvo_roce_hdr h;
	ssize_t n;

	while (poll(&p, 1, ms) > 0) {
		while ((n = recv(s->fd, buf, sizeof(buf), 0)) > 0) {
			a->st.wire_bytes += n;
			if (n > PVO_ENCAP_LEN &&
			    pvo_roce_decode(buf + PVO_ENCAP_LEN,
					    n - PVO_ENCAP_LEN, &h) &&
			    h.opcode == PVO_OPC_ACK &&
			    PVO_AETH_KIND(h.syndrome) == PVO_AETH_NAK)
				atk_error(a, "NAK code %u (PSN 0x%x)",
					  h.syndrome & 0x1f, h.psn);
		}
		ms = 1;
	}
}

static int read_amplify_step(struct attack *a)
{
	struct read_amplify *s = a->priv;
	uint32_t len = (uint32_t)a->o.read_bytes, i;

	if (a->o.read_bytes >= ATK_BIG_MR)
		len = 0xffffffffu;
	if (a->st.steps == 1) {
		ra_send(a, &s->qz, RA_PSN, s->small.iova, s->small.key,
			0xffffffffu);
		a->st.bytes += 0xffffffffu;
	}
	ra_send(a, &s->qp, s->psn, ATK_BIG_MR, s->big_key, len);
	for (i = 0; i < a->o.dups; i++)
		ra_send(a, &s->qp, s->psn, ATK_BIG_MR, s->big_key, len);
	a->st.ops += 1 + a->o.dups;
	a->st.bytes += (uint64_t)len * (1 + a->o.dups);
	s->psn += (uint32_t)(((uint64_t)len + RA_MTU - 1) / RA_MTU);
	ra_drain(a, RA_PACE_MS);
	return 0;
}

static void read_amplify_stop(struct attack *a)
{
	struct read_amplify *s = a->priv;

	if (!s)
		return;
	if (s->fd >= 0) {
		ra_drain(a, 1);
		close(s->fd);
	}
	if (s->have_qp)
		sim_destroy_qp(&s->qp);
	if (s->have_qz)
		sim_destroy_qp(&s->qz);
	if (s->have_small)
		sim_dereg_mr(&s->small);
	if (s->have_big)
		atk_dereg(a, s->big_mr);
}

const struct attack_ops atk_read_amplify = {
    .name = "read-amplify",
    .start = read_amplify_start,
    .step = read_amplify_step,
    .stop = read_amplify_stop,
};
