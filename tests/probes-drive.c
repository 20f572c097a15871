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
 *   probes-drive evict BACKEND   200 conntab_insert_evict() into a table
 *                                capped at 64: 136 evictions
 *   probes-drive scan BACKEND    3 conntab_scan() passes over 1000 nodes,
 *                                64 a call
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

/* Every node is as good a victim as any other. */
static long rank_any(struct conntab_node *victim, void *arg)
{
	(void)victim;
	(void)arg;
	return 1;
}

static int count(struct conntab_node *n, void *arg)
{
	(void)n;
	++*(size_t *)arg;
	return 0;
}

/* What one run does to a table. */
struct drive {
	enum conntab_backend backend;
	size_t expected;	/* sizing hint */
	size_t n;		/* keys inserted */
	size_t cap;		/* max_entries: inserts evict beyond it */
	size_t passes;		/* conntab_scan() passes, 64 nodes a call */
	int remove_all;		/* then remove every node */
};

/*
 * Run @d: every call must succeed and the counts come out exact. Inserts
 * go through conntab_insert_evict(), which without a cap is
 * conntab_insert().
 */
static int run(const struct drive *d)
{
	struct conntab_config cfg = {
		.backend = d->backend,
		.expected = d->expected,
		.max_entries = d->cap,
	};
	struct conntab_node *nodes = calloc(d->n, sizeof(*nodes)), *victim;
	size_t i, left = d->n, evictions = 0, visits = 0;
	struct conntab_cursor cur = { { 0 } };
	struct conntab_stats st;
	struct conntab_key k;
	struct conntab *t;
	int ret;

	t = conntab_create(&cfg);
	if (!t || !nodes)
		return 1;
	for (i = 0; i < d->n; i++) {
		conntab_key_v4(&k, IPPROTO_TCP, htonl(0x0a000001), htons(443),
			       htonl(0x0b000000 + (uint32_t)i), htons(40000));
		conntab_node_init(&nodes[i]);
		if (conntab_insert_evict(t, &nodes[i], &k, rank_any, NULL,
					 &victim))
			return 1;
		evictions += victim != NULL;
	}
	if (d->cap && d->n > d->cap)
		left = d->cap;
	conntab_stats(t, &st);
	if (st.entries != left || evictions != d->n - left)
		return 1;
	for (i = 0; i < d->passes; i++) {
		rcu_read_lock();
		while (!(ret = conntab_scan(t, &cur, 64, count, &visits)))
			;
		rcu_read_unlock();
		if (ret != 1)
			return 1;
	}
	if (visits != d->passes * left)
		return 1;
	for (i = 0; d->remove_all && i < d->n; i++)
		if (conntab_remove(t, &nodes[i]))
			return 1;
	conntab_stats(t, &st);
	if (d->remove_all && st.entries)
		return 1;
	/* No reader is left: the nodes may go at once. */
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(nodes);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		struct drive d;
	} runs[] = {
		{ "flood", { .n = 64 * 24 } },
		{ "fill", { .expected = 1 << 16, .n = 1 << 16 } },
		{ "grow", { .backend = CONNTAB_EXTHASH, .n = 40000,
			    .remove_all = 1 } },
		{ "evict", { .n = 200, .cap = 64 } },
		{ "scan", { .n = 1000, .passes = 3 } },
	};
	struct drive d;
	size_t i;
	int b, err = 2;

	for (i = 0; argc > 1 && i < sizeof(runs) / sizeof(runs[0]); i++) {
		if (strcmp(argv[1], runs[i].name))
			continue;
		d = runs[i].d;
		b = argc > 2 ? conntab_backend_from_name(argv[2]) : -1;
		if (!d.backend && b > 0 && argc == 3)
			d.backend = (enum conntab_backend)b;
		else if (!d.backend || argc != 2)
			break;
		rcu_register_thread();
		err = run(&d);
		rcu_unregister_thread();
		return err;
	}
	fprintf(stderr, "usage: probes-drive flood|fill|evict|scan BACKEND"
		" | probes-drive grow\n");
	return err;
}
