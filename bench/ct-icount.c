/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ct-icount: instructions per operation of the per-packet paths, counted
 * by callgrind, not timed: the counts do not depend on what else the
 * machine runs, so they can be compared across commits on a shared one.
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/ct.%p \
 *	bench/ct-icount [backend [n]]
 *   bench/ct-icount-report /tmp/ct.<pid>*
 *
 * It fills a table of @n (256K) random IPv4 keys with the table's default
 * (keyed) hash, then runs each phase over @n / 4 operations between a
 * CALLGRIND_ZERO_STATS and a CALLGRIND_DUMP_STATS_AT naming it: lookup
 * hits and misses, bursts of 16, 32 and 64 hits (conntab_lookup_batch),
 * removes and inserts, and "loop", the loop of those phases with no call
 * in it, whose count the report subtracts. Outside valgrind the client
 * requests are no-ops and the program only checks its own answers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <urcu.h>
#include <conntab/conntab.h>

#if defined(__has_include)
# if __has_include(<valgrind/callgrind.h>)
#  include <valgrind/callgrind.h>
# endif
#endif
#ifndef CALLGRIND_ZERO_STATS
# define CALLGRIND_ZERO_STATS
# define CALLGRIND_DUMP_STATS_AT(s)	((void)(s))
#endif

/* splitmix64: a fixed sequence, so that every run counts the same keys. */
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void key_of(struct conntab_key *k, uint64_t r)
{
	conntab_key_v4(k, 6, (uint32_t)r, (uint16_t)(r >> 32),
		       0x0a000001, (uint16_t)(r >> 48) | 1);
}

static void fail(const char *what)
{
	fprintf(stderr, "ct-icount: %s\n", what);
	exit(1);
}

/* Keep @p live across the loop without calling anything. */
#define KEEP(p)	__asm__ volatile("" : : "r"(p) : "memory")

int main(int argc, char **argv)
{
	const char *bname = argc > 1 ? argv[1] : "chained";
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 0) : 256 * 1024;
	size_t ops = n / 4, i, j, burst, found;
	struct conntab_config cfg = { 0 };
	struct conntab_node **out, **nodes;
	struct conntab_key *keys, *miss;
	size_t *order;
	struct conntab *t;
	char name[32];
	int b;

	b = conntab_backend_from_name(bname);
	if (b < 0 || n < 64)
		fail("usage: ct-icount [chained|split|exthash|trie [n]]");
	rcu_register_thread();
	cfg.backend = (enum conntab_backend)b;
	cfg.expected = n;
	t = conntab_create(&cfg);
	keys = calloc(n, sizeof(*keys));
	miss = calloc(ops, sizeof(*miss));
	nodes = calloc(n, sizeof(*nodes));
	order = calloc(n, sizeof(*order));
	out = calloc(64, sizeof(*out));
	if (!t || !keys || !miss || !nodes || !order || !out)
		fail("out of memory");
	for (i = 0; i < n; i++) {
		key_of(&keys[i], rnd());
		nodes[i] = calloc(1, 128);	/* a node in a user object */
		if (!nodes[i])
			fail("out of memory");
		conntab_node_init(nodes[i]);
		if (conntab_insert(t, nodes[i], &keys[i]))
			fail("setup insert");	/* a duplicate: not with rnd() */
		order[i] = i;
	}
	/* Look keys up in an order other than their insertion's. */
	for (i = n - 1; i > 0; i--) {
		size_t r = rnd() % (i + 1), x = order[i];

		order[i] = order[r];
		order[r] = x;
	}
	for (i = 0; i < ops; i++)
		key_of(&miss[i], rnd() | 1ull << 47);	/* zone-free, absent */

	rcu_read_lock();
	CALLGRIND_ZERO_STATS;
	for (i = 0; i < ops; i++)
		KEEP(&keys[order[i]]);
	CALLGRIND_DUMP_STATS_AT("loop");

	CALLGRIND_ZERO_STATS;
	for (i = 0; i < ops; i++)
		KEEP(conntab_lookup(t, &keys[order[i]]));
	CALLGRIND_DUMP_STATS_AT("lookup");

	CALLGRIND_ZERO_STATS;
	for (i = 0; i < ops; i++)
		KEEP(conntab_lookup(t, &miss[i]));
	CALLGRIND_DUMP_STATS_AT("miss");

	for (burst = 16; burst <= 64; burst *= 2) {
		found = 0;
		CALLGRIND_ZERO_STATS;
		for (i = 0; i + burst <= ops; i += burst)
			found += conntab_lookup_batch(t, &keys[i], out, burst);
		snprintf(name, sizeof(name), "batch%zu", burst);
		CALLGRIND_DUMP_STATS_AT(name);
		if (found != ops / burst * burst)
			fail("a burst missed a present key");
	}
	rcu_read_unlock();

	/* Check the lookups' answers outside the counted phases. */
	rcu_read_lock();
	for (i = 0; i < ops; i++)
		if (conntab_lookup(t, &keys[i]) != nodes[i] ||
		    conntab_lookup(t, &miss[i]))
			fail("a lookup gave a wrong answer");
	rcu_read_unlock();

	/*
	 * The setup's deferred frees (a trie retires the nodes it grew out
	 * of) wait for the read-side sections above; let them run here, not
	 * on the call_rcu thread inside the removes' count.
	 */
	rcu_barrier();

	CALLGRIND_ZERO_STATS;
	for (i = 0; i < ops; i++)
		if (conntab_remove(t, nodes[order[i]]))
			fail("remove");
	CALLGRIND_DUMP_STATS_AT("remove");

	/* A grace period before the nodes are inserted again. */
	synchronize_rcu();
	CALLGRIND_ZERO_STATS;
	for (i = 0; i < ops; i++) {
		j = order[i];
		if (conntab_insert(t, nodes[j], &keys[j]))
			fail("insert");
	}
	CALLGRIND_DUMP_STATS_AT("insert");

	conntab_destroy(t, NULL);
	for (i = 0; i < n; i++)
		free(nodes[i]);
	free(nodes);
	free(keys);
	free(miss);
	free(order);
	free(out);
	rcu_unregister_thread();
	printf("ct-icount: %s, %zu keys, %zu ops a phase: answers checked\n",
	       bname, n, ops);
	return 0;
}
