// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-impair: a lossy UDP "link" for overlay tests on kernels without
 * netem. Each leg listens on one address and forwards every datagram to
 * another, dropping, duplicating and holding back (reordering) a seeded
 * random share of them:
 *
 *   pvo-impair [--loss P] [--dup P] [--reorder P] [--hold-us N] [--seed S]
 *              [--stretch-read P] [--stretch-bytes N]
 *              LISTEN_IP:PORT=TO_IP:PORT [LISTEN_IP:PORT=TO_IP:PORT ...]
 *
 * P are percentages. A held packet goes out after the next one (or after
 * --hold-us, default 500), so it arrives out of order. --stretch-read
 * plays a misbehaving requester: after a RoCE RDMA READ request it sends
 * a copy whose RETH asks for --stretch-bytes (default 4096) more, ICRC
 * made anew, so the copy is a duplicate that reaches past the PSNs the
 * request used (only where the sender's ICRC checks, so that ours is
 * right). Runs until SIGTERM, then prints "pvo-impair: forwarded=N
 * dropped=N duplicated=N reordered=N stretched=N icrc_mismatch=N".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encap.h"
#include "icrc.h"
#include "roce.h"

#define MAX_LEGS 8
#define MAX_HELD 256

struct leg {
	int fd;
	struct sockaddr_in to;
};

struct held {
	int fd;
	struct sockaddr_in to;
	long long due_us;
	size_t len;
	unsigned char data[9216];
};

static struct leg legs[MAX_LEGS];
static struct held held[MAX_HELD];
static unsigned int nlegs, nheld;
static double loss, dup_pct, reorder, stretch_pct;
static long long hold_us = 500;
static uint32_t stretch_bytes = 4096;
static unsigned long long seed = 1, fwd, dropped, duplicated, reordered,
			  stretched, icrc_mismatch;
static volatile sig_atomic_t stop;

static double rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (double)(seed >> 11) / (double)(1ull << 53) * 100.0;
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ll + ts.tv_nsec / 1000;
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
	char ip[64];
	const char *colon = strrchr(s, ':');

	if (!colon || colon - s >= (int)sizeof(ip))
		return -1;
	memcpy(ip, s, colon - s);
	ip[colon - s] = '\0';
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons(atoi(colon + 1));
	return inet_pton(AF_INET, ip, &a->sin_addr) == 1 && a->sin_port ? 0 : -1;
}

static void out(int fd, const struct sockaddr_in *to, const void *p, size_t n)
{
	sendto(fd, p, n, 0, (const struct sockaddr *)to, sizeof(*to));
	fwd++;
}

/* The ICRC of the inner packet whose RoCE part (with the ICRC) is
 * roce_len bytes. */
static uint32_t icrc_of(const unsigned char *p, size_t roce_len)
{
	return pvo_icrc_ipv4(p + PVO_ENCAP_IP_OFF, PVO_IP4_LEN + PVO_UDP_LEN +
						       roce_len -
						       PVO_ROCE_ICRC_LEN);
}

/*
 * If the datagram is VXLAN carrying an IPv4 RoCE RC READ request, makes
 * it ask for stretch_bytes more and gives it a new ICRC; false otherwise.
 */
static bool stretch_read(unsigned char *p, size_t len)
{
	const uint8_t *roce;
	struct pvo_inner in;
	size_t roce_len;
	uint8_t *bth, *dma_len, *trailer;
	uint32_t v, icrc;

	if (pvo_encap_parse(p, len, &in, &roce, &roce_len) != PVO_ENCAP_OK ||
	    roce_len < PVO_BTH_LEN + PVO_RETH_LEN + PVO_ROCE_ICRC_LEN ||
	    roce[0] != PVO_OPC_READ_REQUEST)
		return false;
	bth = p + (roce - p);		  /* the parser's view, writable */
	dma_len = bth + PVO_BTH_LEN + 12; /* RETH: va, rkey */
	trailer = bth + roce_len - PVO_ROCE_ICRC_LEN;
	/* the sender's ICRC must be what we compute, or ours on the
	 * stretched copy would be dropped as corrupt and prove nothing */
	memcpy(&icrc, trailer, 4);
	if (le32toh(icrc) != icrc_of(p, roce_len)) {
		icrc_mismatch++;
		return false;
	}
	memcpy(&v, dma_len, 4);
	v = htonl(ntohl(v) + stretch_bytes);
	memcpy(dma_len, &v, 4);
	icrc = htole32(icrc_of(p, roce_len));
	memcpy(trailer, &icrc, 4);
	return true;
}

static void release(long long now, bool all)
{
	unsigned int i = 0;

	while (i < nheld) {
		if (all || held[i].due_us <= now) {
			out(held[i].fd, &held[i].to, held[i].data, held[i].len);
			held[i] = held[--nheld];
		} else {
			i++;
		}
	}
}

static void on_term(int sig __attribute__((unused)))
{
	stop = 1;
}

int main(int argc, char **argv)
{
	struct pollfd pfd[MAX_LEGS];
	unsigned char buf[9216];
	int i, bufsize = 8 << 20;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--loss") && i + 1 < argc)
			loss = atof(argv[++i]);
		else if (!strcmp(argv[i], "--dup") && i + 1 < argc)
			dup_pct = atof(argv[++i]);
		else if (!strcmp(argv[i], "--reorder") && i + 1 < argc)
			reorder = atof(argv[++i]);
		else if (!strcmp(argv[i], "--hold-us") && i + 1 < argc)
			hold_us = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--stretch-read") && i + 1 < argc)
			stretch_pct = atof(argv[++i]);
		else if (!strcmp(argv[i], "--stretch-bytes") && i + 1 < argc)
			stretch_bytes = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0) | 1;
		else {
			struct sockaddr_in la;
			char *eq = strchr(argv[i], '=');

			if (!eq || nlegs == MAX_LEGS)
				goto usage;
			*eq = '\0';
			if (parse_addr(argv[i], &la) ||
			    parse_addr(eq + 1, &legs[nlegs].to))
				goto usage;
			legs[nlegs].fd = socket(AF_INET, SOCK_DGRAM, 0);
			setsockopt(legs[nlegs].fd, SOL_SOCKET, SO_RCVBUFFORCE,
				   &bufsize, sizeof(bufsize));
			if (bind(legs[nlegs].fd, (struct sockaddr *)&la,
				 sizeof(la))) {
				fprintf(stderr, "pvo-impair: bind %s: %s\n",
					argv[i], strerror(errno));
				return 1;
			}
			pfd[nlegs].fd = legs[nlegs].fd;
			pfd[nlegs].events = POLLIN;
			nlegs++;
		}
	}
	if (!nlegs)
		goto usage;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	printf("pvo-impair: ready\n");
	fflush(stdout);
	while (!stop) {
		int n = poll(pfd, nlegs, nheld ? 1 : 200);
		long long now = now_us();

		release(now, false);
		for (i = 0; n > 0 && i < (int)nlegs; i++) {
			ssize_t len;

			if (!(pfd[i].revents & POLLIN))
				continue;
			while ((len = recv(legs[i].fd, buf, sizeof(buf),
					   MSG_DONTWAIT)) > 0) {
				if (rnd() < loss) {
					dropped++;
					continue;
				}
				if (rnd() < reorder && nheld < MAX_HELD) {
					struct held *h = &held[nheld++];

					h->fd = legs[i].fd;
					h->to = legs[i].to;
					h->due_us = now + hold_us;
					h->len = len;
					memcpy(h->data, buf, len);
					reordered++;
					continue;
				}
				out(legs[i].fd, &legs[i].to, buf, len);
				if (rnd() < dup_pct) {
					out(legs[i].fd, &legs[i].to, buf, len);
					duplicated++;
				}
				if (stretch_pct > 0 && rnd() < stretch_pct &&
				    stretch_read(buf, len)) {
					out(legs[i].fd, &legs[i].to, buf, len);
					stretched++;
				}
				/* a held packet now trails a later one */
				release(now_us(), true);
			}
		}
	}
	release(0, true);
	printf("pvo-impair: forwarded=%llu dropped=%llu duplicated=%llu "
	       "reordered=%llu stretched=%llu icrc_mismatch=%llu\n",
	       fwd, dropped, duplicated, reordered, stretched, icrc_mismatch);
	return 0;
usage:
	fprintf(stderr, "usage: pvo-impair [--loss P] [--dup P] [--reorder P] "
			"[--hold-us N] [--seed S] [--stretch-read P] "
			"[--stretch-bytes N] LISTEN_IP:PORT=TO_IP:PORT ...\n");
	return 2;
}
