/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Drives a table into the events the USDT probes report (lib/probes.h),
 * for tests/test-probes.sh, which runs it under gdb with a breakpoint on
 * each probe and checks what fires:
 *
 *   probes-drive flood BACKEND   64 buckets (expected = 0), 24 keys per
 *                                bucket: chains far past 16 (chain_long)
 *   probes-drive fill BACKEND    a table sized for its keys, filled to
 *                                its hint: chain_long must stay silent
 *   probes-drive grow            exthash from nothing to 40000 keys and
 *                                back: splits, merges, the directory
 *                                doubling and halving
 *
 * Every operation must succeed and the counts must agree at the end; the
 * exit status says so.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(enum conntab_backend b, size_t expected, size_t n,
	       int remove_all)
{
	struct conntab_config cfg = { .backend = b, .expected = expected };
	struct conntab_node *nodes = calloc(n, sizeof(*nodes));
	struct conntab_stats st;
	struct conntab_key k;
	struct conntab *t;
	size_t i;

	t = conntab_create(&cfg);
	if (!t || !nodes)
		return 1;
	for (i = 0; i < n; i++) {
		conntab_key_v4(&k, IPPROTO_TCP, htonl(0x0a000001), htons(443),
			       htonl(0x0b000000 + (uint32_t)i), htons(40000));
		conntab_node_init(&nodes[i]);
		if (conntab_insert(t, &nodes[i], &k))
			return 1;
	}
	conntab_stats(t, &st);
	if (st.entries != n)
		return 1;
	if (remove_all) {
		for (i = 0; i < n; i++)
			if (conntab_remove(t, &nodes[i]))
				return 1;
		conntab_stats(t, &st);
		if (st.entries)
			return 1;
	}
	/* No reader ever ran: the nodes may go at once. */
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(nodes);
	return 0;
}

int main(int argc, char **argv)
{
	int b = argc > 2 ? conntab_backend_from_name(argv[2]) : -1;
	int err = 2;

	rcu_register_thread();
	if (argc == 3 && !strcmp(argv[1], "flood") && b > 0)
		err = run(b, 0, 64 * 24, 0);
	else if (argc == 3 && !strcmp(argv[1], "fill") && b > 0)
		err = run(b, 1 << 16, 1 << 16, 0);
	else if (argc == 2 && !strcmp(argv[1], "grow"))
		err = run(CONNTAB_EXTHASH, 0, 40000, 1);
	else
		fprintf(stderr, "usage: probes-drive flood|fill BACKEND | grow\n");
	rcu_unregister_thread();
	return err;
}
