// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * First-light verbs checks through libibverbs and the provider, run inside
 * a guest. Prints TAP-like "ok"/"not ok" lines the VM test relays, and one
 * "result: ..." line per measured value.
 *
 *   pvo-firstlight DEVICE MAX_PD MAX_UCONTEXTS
 *
 * Opens contexts until the back-end's user-context quota refuses one, and
 * allocates PDs until the PD quota refuses one, then frees everything and
 * checks that the quota is whole again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

static int failures;

static void check(int cond, const char *what)
{
	printf("%sok - %s\n", cond ? "" : "not ", what);
	if (!cond)
		failures++;
}

static struct ibv_device *find(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	for (i = 0; list && list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			return list[i];	/* list is leaked on purpose */
	return NULL;
}

/* Allocate PDs until one fails; returns how many succeeded. */
static int fill_pds(struct ibv_context *ctx, struct ibv_pd **pds, int room,
		    int *err)
{
	int n = 0;

	while (n < room) {
		pds[n] = ibv_alloc_pd(ctx);
		if (!pds[n]) {
			*err = errno;
			break;
		}
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctxs[70];
	struct ibv_pd *pds[70000];
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	struct ibv_device *dev;
	int max_pd, max_uctx, n, i, err = 0, nctx = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVICE MAX_PD MAX_UCONTEXTS\n",
			argv[0]);
		return 2;
	}
	max_pd = atoi(argv[2]);
	max_uctx = atoi(argv[3]);
	dev = find(argv[1]);
	check(dev != NULL, "device is listed by ibv_get_device_list");
	if (!dev)
		return 1;

	while (nctx < (int)(sizeof(ctxs) / sizeof(ctxs[0]))) {
		ctxs[nctx] = ibv_open_device(dev);
		if (!ctxs[nctx]) {
			err = errno;
			break;
		}
		nctx++;
	}
	printf("result: contexts=%d errno=%d\n", nctx, err);
	check(nctx == max_uctx, "user contexts stop exactly at the quota");
	check(err == ENOSPC, "the refused context reports ENOSPC");
	for (i = 1; i < nctx; i++)
		ibv_close_device(ctxs[i]);
	check(nctx > 0 && !ibv_query_device(ctxs[0], &attr),
	      "ibv_query_device");
	if (nctx == 0)
		return 1;
	check(attr.max_pd == max_pd, "max_pd is the VM's quota");
	check(!ibv_query_port(ctxs[0], 1, &port) &&
		      port.state == IBV_PORT_ACTIVE &&
		      port.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "port 1 active, Ethernet");

	n = fill_pds(ctxs[0], pds, max_pd + 5, &err);
	printf("result: pds=%d errno=%d\n", n, err);
	/* ib_core's own kernel PD may hold one unit of the quota */
	check(n == max_pd || n == max_pd - 1, "PDs stop at the quota");
	check(err == ENOSPC, "the refused PD reports ENOSPC");
	for (i = 0; i < n; i++)
		if (ibv_dealloc_pd(pds[i]))
			break;
	check(i == n, "every PD deallocates");
	i = fill_pds(ctxs[0], pds, n, &err);
	check(i == n, "after freeing, the same number of PDs fits again");
	while (i--)
		ibv_dealloc_pd(pds[i]);

	/* Closing a context with PDs still open frees them in the back-end */
	n = fill_pds(ctxs[0], pds, 3, &err);
	check(n == 3, "three PDs on a context that is then closed");
	check(!ibv_close_device(ctxs[0]), "close a context with open PDs");
	ctxs[0] = ibv_open_device(dev);
	check(ctxs[0] != NULL, "reopen");
	n = fill_pds(ctxs[0], pds, max_pd + 5, &err);
	check(n == max_pd || n == max_pd - 1, "quota whole again after close");
	while (n--)
		ibv_dealloc_pd(pds[n]);
	ibv_close_device(ctxs[0]);
	printf("result: failures=%d\n", failures);
	return failures ? 1 : 0;
}
