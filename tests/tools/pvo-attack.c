// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pvo-attack: a hostile guest against a running pvrdma-overlayd. It
 * connects to a VM's vhost-user socket as that VM (no QEMU may be
 * connected to it), runs one attack of tests/harness/attack.h for some
 * seconds, releases what it holds and prints what it got:
 *
 *   pvo-attack --socket PATH --attack NAME [--seconds N] [--ram MIB]
 *              [--wqe-bytes N] [--wqes N] [--records N] [--batch N]
 *              [--read-bytes N] [--dups N]
 *              [--vtep IP --src-vtep IP --port N --vni N --vm-ip IP
 *               --peer-ip IP --peer-mac MAC]        (read-amplify)
 *   pvo-attack --list
 *
 * Output: "pvo-attack: NAME steps=N ops=N errors=N bytes=N wire_bytes=N"
 * and the first error. Exit status 0 unless the attack could not run.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attack.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: pvo-attack --socket PATH --attack NAME [--seconds N] "
		"[options]\n       pvo-attack --list\n"
		"(see the comment at the top of tests/tools/pvo-attack.c)\n");
	exit(2);
}

static void list(void)
{
	const char *const *n;

	for (n = attack_names(); *n; n++)
		printf("%s\n", *n);
	exit(0);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"socket", 1, 0, 's'},
	    {"attack", 1, 0, 'a'},
	    {"seconds", 1, 0, 't'},
	    {"ram", 1, 0, 'm'},
	    {"wqe-bytes", 1, 0, 'W'},
	    {"wqes", 1, 0, 'w'},
	    {"records", 1, 0, 'r'},
	    {"batch", 1, 0, 'b'},
	    {"read-bytes", 1, 0, 'R'},
	    {"dups", 1, 0, 'd'},
	    {"vtep", 1, 0, 'V'},
	    {"src-vtep", 1, 0, 'S'},
	    {"port", 1, 0, 'p'},
	    {"vni", 1, 0, 'n'},
	    {"vm-ip", 1, 0, 'i'},
	    {"peer-ip", 1, 0, 'I'},
	    {"peer-mac", 1, 0, 'M'},
	    {"list", 0, 0, 'l'},
	    {0, 0, 0, 0},
	};
	struct sim_vm_opts vo = {.name = "attacker"};
	struct attack_opts o = {0};
	const struct attack_stats *st;
	const char *name = NULL;
	double seconds = 10;
	struct sim_vm *vm;
	struct attack *a;
	char err[512];
	int c, ret;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			vo.socket_path = optarg;
			break;
		case 'a':
			name = optarg;
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'm':
			vo.ram_size = strtoull(optarg, 0, 0) << 20;
			break;
		case 'W':
			o.wqe_bytes = strtoull(optarg, 0, 0);
			break;
		case 'w':
			o.wqes = atoi(optarg);
			break;
		case 'r':
			o.records = atoi(optarg);
			break;
		case 'b':
			o.batch = atoi(optarg);
			break;
		case 'R':
			o.read_bytes = strtoull(optarg, 0, 0);
			break;
		case 'd':
			o.dups = atoi(optarg);
			break;
		case 'V':
			o.vtep = optarg;
			break;
		case 'S':
			o.src_vtep = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'n':
			o.vni = strtoul(optarg, 0, 0);
			break;
		case 'i':
			o.vm_ip = optarg;
			break;
		case 'I':
			o.peer_ip = optarg;
			break;
		case 'M':
			o.peer_mac = optarg;
			break;
		case 'l':
			list();
			break;
		default:
			usage();
		}
	}
	if (!vo.socket_path || !name || optind != argc)
		usage();
	/* a 4 GiB REG_MR of 1M pages can take seconds */
	setenv("PVO_TEST_TIMEOUT_MS", "120000", 0);
	vm = sim_vm_open(&vo, err, sizeof(err));
	if (!vm) {
		fprintf(stderr, "pvo-attack: %s\n", err);
		return 1;
	}
	a = attack_new(name, vm, &o, err, sizeof(err));
	if (!a) {
		fprintf(stderr, "pvo-attack: %s\n", err);
		sim_vm_close(vm);
		return 1;
	}
	ret = attack_run_for(a, seconds, NULL);
	st = attack_stats(a);
	printf("pvo-attack: %s steps=%llu ops=%llu errors=%llu bytes=%llu "
	       "wire_bytes=%llu\n",
	       name, (unsigned long long)st->steps, (unsigned long long)st->ops,
	       (unsigned long long)st->errors, (unsigned long long)st->bytes,
	       (unsigned long long)st->wire_bytes);
	if (st->first_error[0])
		printf("pvo-attack: %s: %s\n", ret ? "stopped" : "first error",
		       st->first_error);
	attack_free(a);
	sim_vm_close(vm);
	return ret ? 1 : 0;
}
