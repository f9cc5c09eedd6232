// SPDX-License-Identifier: GPL-2.0-or-later
/* UD GRH building and the IB timer tables, plus a real timer firing. */
#include <arpa/inet.h>
#include <string.h>
#include <glib.h>

#include "grh.h"
#include "pvo-device.h"
#include "tap.h"
#include "timer.h"

static void gid(const char *s, uint8_t out[16])
{
	struct in6_addr a;
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(out, 0, 16);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &v4, 4);
		return;
	}
	inet_pton(AF_INET6, s, &a);
	memcpy(out, a.s6_addr, 16);
}

static void test_grh(void)
{
	uint8_t s[16], d[16], grh[PVO_GRH_LEN], zero[20] = { 0 };
	static const uint8_t known[20] = {
		/* 10.0.0.1 -> 10.0.0.2, TOS 0, len 100, DF, TTL 64, UDP;
		 * checksum by hand: ~(0x4500 + 0x64 + 0x4000 + 0x4011 +
		 * 0x0a00 + 1 + 0x0a00 + 2) = ~0xd978 = 0x2687 */
		0x45, 0x00, 0x00, 0x64, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0x26, 0x87, 10,   0,	0,    1,    10,	  0,	0,    2,
	};

	gid("10.0.0.1", s);
	gid("10.0.0.2", d);
	tap_ok(pvo_gid_is_v4mapped(s) && !pvo_gid_is_v4mapped((uint8_t[16]){
						 0xfe, 0x80 }),
	       "IPv4-mapped GIDs are recognised");
	tap_is(pvo_grh_build(grh, s, d, 0, 0, 64, 100 - 20 - 32), PVO_NET_IPV4,
	       "IPv4 GIDs -> an IPv4 header");
	tap_ok(memcmp(grh, zero, 20) == 0, "first 20 bytes zero");
	tap_ok(memcmp(grh + 20, known, 20) == 0,
	       "IPv4 header byte for byte (checksum included)");
	tap_is(pvo_ipv4_csum(grh + 20), 0, "checksum verifies");
	pvo_grh_build(grh, s, d, 0xb8, 0, 1, 4096);
	tap_ok(grh[21] == 0xb8 && grh[28] == 1 && pvo_ipv4_csum(grh + 20) == 0,
	       "TOS and TTL from the AV, checksum still valid");

	gid("fe80::5054:ff:fe00:a", s);
	gid("fe80::5054:ff:fe00:b", d);
	tap_is(pvo_grh_build(grh, s, d, 0x12, 0xabcde, 7, 100), PVO_NET_IPV6,
	       "IPv6 GIDs -> an IPv6 header");
	tap_ok(grh[0] == 0x61 && grh[1] == 0x2a && grh[2] == 0xbc &&
		       grh[3] == 0xde,
	       "version 6, traffic class, flow label");
	tap_ok(grh[4] == 0 && grh[5] == 100 + PVO_ROCE_UD_OVERHEAD &&
		       grh[6] == 17 && grh[7] == 7,
	       "payload length, next header UDP, hop limit");
	tap_ok(memcmp(grh + 8, s, 16) == 0 && memcmp(grh + 24, d, 16) == 0,
	       "source and destination GIDs");
	gid("10.0.0.1", s);
	tap_is(pvo_grh_build(grh, s, d, 0, 0, 1, 10), PVO_NET_IPV6,
	       "mixed families: IPv6");
}

static int fired;

static void on_timer(void *opaque)
{
	(*(int *)opaque)++;
}

static void test_timers(void)
{
	struct pvo_timer t;
	gint64 t0, end;

	tap_is(pvo_rnr_timer_usec(0), 655360, "RNR code 0 = 655.36 ms");
	tap_is(pvo_rnr_timer_usec(1), 10, "RNR code 1 = 0.01 ms");
	tap_is(pvo_rnr_timer_usec(12), 640, "RNR code 12 = 0.64 ms");
	tap_is(pvo_rnr_timer_usec(14), 1280, "RNR code 14 = 1.28 ms");
	tap_is(pvo_rnr_timer_usec(31), 491520, "RNR code 31 = 491.52 ms");
	tap_is(pvo_ack_timeout_usec(0), 0, "ACK timeout 0 = infinite");
	tap_is(pvo_ack_timeout_usec(1), 8, "ACK timeout 1 = 8.192 us");
	tap_is(pvo_ack_timeout_usec(14), 67108, "ACK timeout 14 = 67 ms");

	pvo_timer_init(&t, on_timer, &fired);
	tap_ok(!pvo_timer_armed(&t), "a new timer is idle");
	t0 = g_get_monotonic_time();
	pvo_timer_arm(&t, 20000);
	tap_ok(pvo_timer_armed(&t), "armed");
	end = t0 + 2 * G_USEC_PER_SEC;
	while (!fired && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, TRUE);
	tap_ok(fired == 1 && g_get_monotonic_time() - t0 >= 20000,
	       "fires once, not early");
	tap_ok(!pvo_timer_armed(&t), "one shot");
	pvo_timer_arm(&t, 1000);
	pvo_timer_cancel(&t);
	end = g_get_monotonic_time() + 20000;
	while (g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE);
	tap_is(fired, 1, "a cancelled timer does not fire");
	pvo_timer_arm(&t, 1000);
	pvo_timer_destroy(&t);
	end = g_get_monotonic_time() + 20000;
	while (g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE);
	tap_is(fired, 1, "nor does a destroyed one");
}

struct tagged {
	struct pvo_timer t;
	int id;
	int rearm;		  /* times to re-arm itself with 0 */
	struct pvo_timer *victim; /* destroyed when this one fires */
};

static int order[16], norder;

static void on_tagged(void *opaque)
{
	struct tagged *x = opaque;

	if (norder < 16)
		order[norder++] = x->id;
	if (x->victim)
		pvo_timer_destroy(x->victim);
	if (x->rearm > 0) {
		x->rearm--;
		pvo_timer_arm(&x->t, 0);
	}
}

static void run_loop_us(gint64 usec)
{
	gint64 end = g_get_monotonic_time() + usec;

	while (g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE);
}

/* Many timers in one queue: order, re-arming, cancelling, callbacks that
 * re-arm themselves or destroy another timer that is due too. */
static void test_timer_queue(void)
{
	static const uint64_t usec[5] = {50000, 10000, 30000, 40000, 20000};
	struct tagged x[5], a = {.id = 10}, b = {.id = 11};
	int i, all_idle = 1;

	for (i = 0; i < 5; i++) {
		x[i] = (struct tagged){.id = i};
		pvo_timer_init(&x[i].t, on_tagged, &x[i]);
		pvo_timer_arm(&x[i].t, usec[i]);
	}
	pvo_timer_cancel(&x[3].t);
	pvo_timer_arm(&x[0].t, 5000); /* earlier than all now */
	run_loop_us(80000);
	tap_ok(norder == 4 && order[0] == 0 && order[1] == 1 && order[2] == 4 &&
		   order[3] == 2,
	       "timers fire by deadline; a re-armed one moves, a cancelled "
	       "one stays quiet (%d fired: %d %d %d %d)",
	       norder, order[0], order[1], order[2], order[3]);
	for (i = 0; i < 5; i++)
		all_idle &= !pvo_timer_armed(&x[i].t);
	tap_ok(all_idle, "all idle after");

	norder = 0;
	x[1].rearm = 2;
	pvo_timer_arm(&x[1].t, 0);
	g_usleep(1000);
	g_main_context_iteration(NULL, FALSE);
	tap_ok(norder == 1 && pvo_timer_armed(&x[1].t),
	       "a callback that re-arms with 0 runs once per iteration "
	       "(%d)",
	       norder);
	run_loop_us(20000);
	tap_ok(norder == 3 && !pvo_timer_armed(&x[1].t),
	       "and again in the next ones (%d)", norder);

	norder = 0;
	pvo_timer_init(&a.t, on_tagged, &a);
	pvo_timer_init(&b.t, on_tagged, &b);
	a.victim = &b.t;
	pvo_timer_arm(&a.t, 0);
	pvo_timer_arm(&b.t, 100);
	g_usleep(2000);
	run_loop_us(20000);
	tap_ok(norder == 1 && order[0] == 10 && !pvo_timer_armed(&b.t),
	       "a due timer destroyed by an earlier callback never fires");
}

int main(void)
{
	tap_plan(30);
	test_grh();
	test_timers();
	test_timer_queue();
	return tap_done();
}
