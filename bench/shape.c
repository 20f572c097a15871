/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor of a table's shape: the loads a lookup of that shape cannot
 * avoid and nothing else, at the table's N (rounded up to a power of two,
 * as both tables size themselves), laid out and allocated as conntab lays
 * them out:
 *
 *  - chain: the key's bucket word in an array of N (a chained table at
 *    load factor 1: conntab maps such arrays with huge pages), then the
 *    node's line;
 *  - trie: the key's root word in an array of N / 16 (the trie's dense
 *    root at the sizing hint, 2^(log2 N - CT_T_HINT_LOAD) slots), then a
 *    node of 16 entries allocated on its own from malloc, as the trie's
 *    sparse nodes are (its head line, whose values a lookup compares,
 *    and the line of the kid it takes), then the node's line.
 *
 * What the code of a lookup would add is left out: no hash, no search in
 * the node (the entry is known from the key), a one-word compare. So the
 * ratio trie / chain of these rows is the least that a trie whose lookups
 * go root -> node -> leaf pays over a chained table of the same N on
 * this machine, however its code is written:
 *
 *  - chain-dep, trie-dep: each lookup's key depends on the pointer the
 *    previous one found, as in lookup-dep (the node's line is loaded and
 *    compared, a branch that the core predicts, so that load overlaps
 *    the next lookup; the internal levels do not);
 *  - chain-indep, trie-indep: the keys in order, independent, as in
 *    lookup: the misses of consecutive lookups overlap as far as the
 *    core's window and its outstanding misses allow.
 *
 * A trie with less than a root access in front of its node level would
 * need its first level as wide as the chained table's bucket array,
 * with nodes for the keys that share a slot: 21.9 B/entry at 1M
 * (doc/performance.md), over the 16 the trie is held to.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "mem.h"

#define SHAPE_FANOUT	16
#define SHAPE_MAX_LOADS	(1u << 20)

struct shape_line {
	uint64_t key;
	char pad[B_LINE - sizeof(uint64_t)];
};

/* A sparse node of SHAPE_FANOUT entries, at the trie's size for that. */
struct shape_node {
	char rcu_head[16];
	uint8_t head[8];
	uint16_t val[SHAPE_FANOUT];
	struct shape_line *kid[SHAPE_FANOUT];
};

struct shape {
	size_t n, mask;
	unsigned int bits;		/* n = 2^bits */
	struct shape_line *lines;
	struct shape_line **bucket;
	struct shape_node **root, **nodes;
};

static volatile uintptr_t shape_sink;

/*
 * Key @k's bucket: a bijection of [0, n) that scatters consecutive keys
 * as a keyed hash would (each step, an odd multiply modulo n or a
 * right xorshift, is one), so no stride is left for a prefetcher.
 */
static inline size_t shape_slot(const struct shape *sh, size_t k)
{
	uint64_t x = k, half = sh->bits / 2 + 1;

	x = (x * 0x9e3779b97f4a7c15ull) & sh->mask;
	x ^= x >> half;
	x = (x * 0xc2b2ae3d27d4eb4full) & sh->mask;
	x ^= x >> half;
	return (size_t)x;
}

static void shape_build(struct shape *sh, size_t n, uint64_t *rng)
{
	size_t i, nn = SHAPE_FANOUT, nodes;
	uint32_t *perm;

	memset(sh, 0, sizeof(*sh));
	for (sh->bits = 4; nn < n; sh->bits++)
		nn <<= 1;
	sh->n = nn;
	sh->mask = nn - 1;
	nodes = nn / SHAPE_FANOUT;
	sh->lines = b_alloc(nn * sizeof(*sh->lines));
	/* The library's own allocator of bucket arrays (lib/mem.c). */
	sh->bucket = ct_array_alloc(nn * sizeof(*sh->bucket));
	if (!sh->bucket) {
		fprintf(stderr, "conntab-bench: out of memory\n");
		exit(1);
	}
	sh->root = b_alloc(nodes * sizeof(*sh->root));
	sh->nodes = b_alloc(nodes * sizeof(*sh->nodes));
	for (i = 0; i < nodes; i++) {
		sh->nodes[i] = malloc(sizeof(struct shape_node));
		if (!sh->nodes[i]) {
			fprintf(stderr, "conntab-bench: out of memory\n");
			exit(1);
		}
		memset(sh->nodes[i], 0, sizeof(struct shape_node));
	}
	/* Nodes in allocation order hang at random root slots. */
	perm = b_alloc(nn * sizeof(*perm));
	for (i = 0; i < nodes; i++)
		perm[i] = (uint32_t)i;
	b_shuffle32(perm, nodes, rng);
	for (i = 0; i < nodes; i++)
		sh->root[i] = sh->nodes[perm[i]];
	/* Key k in a random line; both shapes reach it by its slot. */
	for (i = 0; i < nn; i++)
		perm[i] = (uint32_t)i;
	b_shuffle32(perm, nn, rng);
	for (i = 0; i < nn; i++) {
		size_t b = shape_slot(sh, i);
		struct shape_node *x = sh->root[b / SHAPE_FANOUT];
		struct shape_line *l = &sh->lines[perm[i]];

		l->key = i;
		sh->bucket[b] = l;
		x->val[b % SHAPE_FANOUT] = (uint16_t)(b % SHAPE_FANOUT);
		x->kid[b % SHAPE_FANOUT] = l;
	}
	free(perm);
}

static void shape_free(struct shape *sh)
{
	size_t i;

	for (i = 0; i < sh->n / SHAPE_FANOUT; i++)
		free(sh->nodes[i]);
	free(sh->nodes);
	free(sh->root);
	ct_array_free(sh->bucket, sh->n * sizeof(*sh->bucket));
	free(sh->lines);
}

/*
 * The two shapes' steps. @k is the key; the found line's key is compared
 * (a branch), and its pointer returned for the next key to depend on.
 */
static inline struct shape_line *chain_step(const struct shape *sh,
					    size_t k, size_t *hit)
{
	struct shape_line *l = sh->bucket[shape_slot(sh, k)];

	if (l->key == k)
		++*hit;
	return l;
}

static inline struct shape_line *trie_step(const struct shape *sh,
					   size_t k, size_t *hit)
{
	size_t b = shape_slot(sh, k), e = b % SHAPE_FANOUT;
	struct shape_node *x = sh->root[b / SHAPE_FANOUT];
	struct shape_line *l = NULL;

	if (x->val[e] == e)
		l = x->kid[e];
	if (l && l->key == k)
		++*hit;
	return l;
}

/*
 * @trie: which shape; @dep: each key depends on the last pointer found
 * (its top bit, 0 for a user-space pointer, which neither the compiler
 * nor the core can know). ns per lookup. Inlined with both constant:
 * a run-time @dep became a conditional move, which made the independent
 * keys depend on the loads all the same.
 */
static inline __attribute__((always_inline)) double
shape_run(const struct shape *sh, bool trie, bool dep, size_t loads)
{
	uintptr_t d = 0;
	size_t i, hit = 0;
	uint64_t t0 = b_now_ns();

	for (i = 0; i < loads; i++) {
		size_t k = (i + d) & sh->mask;
		struct shape_line *l = trie ? trie_step(sh, k, &hit)
					    : chain_step(sh, k, &hit);

		if (dep)
			d = (uintptr_t)l >> 63;
	}
	t0 = b_now_ns() - t0;
	if (hit != loads)
		b_failed("floor shape: %zu of %zu keys found", hit, loads);
	shape_sink += d;
	return (double)t0 / (double)loads;
}

void b_floor_shapes(size_t n)
{
	static const char *const name[2][2] = {
		{ "chain-indep", "chain-dep" }, { "trie-indep", "trie-dep" },
	};
	uint64_t rng = b_opts.seed ^ 0x5a4e5a4eull;
	double v[2][2][64];
	unsigned int rep;
	struct shape sh;
	size_t loads;
	int trie, dep;

	b_progress("n=%zu floor shapes", n);
	shape_build(&sh, n, &rng);
	loads = sh.n < SHAPE_MAX_LOADS ? sh.n : SHAPE_MAX_LOADS;
	(void)shape_run(&sh, false, false, loads);	/* fault in, */
	(void)shape_run(&sh, true, false, loads);	/* warm the TLB */
	for (rep = 0; rep < b_opts.reps; rep++) {
		v[0][0][rep] = shape_run(&sh, false, false, loads);
		v[0][1][rep] = shape_run(&sh, false, true, loads);
		v[1][0][rep] = shape_run(&sh, true, false, loads);
		v[1][1][rep] = shape_run(&sh, true, true, loads);
	}
	shape_free(&sh);
	for (trie = 0; trie < 2; trie++)
		for (dep = 0; dep < 2; dep++)
			b_floor_record(name[trie][dep], "ns/key", n,
				       v[trie][dep]);
}
