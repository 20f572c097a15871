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
 *
 * And the shape of CONNTAB_EXTHASH, chains hung from 8-byte heads:
 *
 *  - xchain: the key's head word in an array of N (one node a head, the
 *    load exthash holds at 1M: 9.25 B/entry), then each node of its
 *    chain up to the key's, the keys hashed at random, so that chains
 *    are as long as a keyed hash makes them (Poisson of mean 1: a hit
 *    reads 1.5 nodes on average). chain's bucket word is the same word
 *    with no collision: what chained's line of tagged slots gets for a
 *    hit, whose tags skip the other keys of its bucket without reading
 *    their nodes. So xchain / chain is the least that chains from
 *    heads pay over chained's slots at the same N, and an exthash that
 *    is to come nearer chained needs lines of slots, which its memory
 *    target (12 B/entry, 5.3 nodes a line of 6) overflows
 *    (doc/performance.md, issue 38).
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
	struct shape_line *next;	/* xchain: the next node of its chain */
	char pad[B_LINE - sizeof(uint64_t) - sizeof(void *)];
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
	uint64_t seed;			/* xchain's hash */
	struct shape_line *lines;
	struct shape_line **bucket, **head;
	struct shape_node **root, **nodes;
};

enum shape_kind { SHAPE_CHAIN, SHAPE_TRIE, SHAPE_XCHAIN, SHAPE_KINDS };

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

/*
 * Key @k's head in xchain: a random function of [0, n) into it (the
 * splitmix64 finaliser of the key and a seed), not a bijection, so heads
 * collide as a keyed hash's do.
 */
static inline size_t shape_head(const struct shape *sh, size_t k)
{
	uint64_t x = k ^ sh->seed;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (size_t)(x >> (64 - sh->bits));
}

static void *shape_array(size_t bytes)
{
	void *a = ct_array_alloc(bytes);

	if (!a) {
		fprintf(stderr, "conntab-bench: out of memory\n");
		exit(1);
	}
	return a;
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
	sh->seed = b_rand(rng);
	sh->lines = b_alloc(nn * sizeof(*sh->lines));
	/* The library's own allocator of bucket arrays (lib/mem.c). */
	sh->bucket = shape_array(nn * sizeof(*sh->bucket));
	sh->head = shape_array(nn * sizeof(*sh->head));	/* zeroed */
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
		l->next = sh->head[shape_head(sh, i)];
		sh->head[shape_head(sh, i)] = l;
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
	ct_array_free(sh->head, sh->n * sizeof(*sh->head));
	free(sh->lines);
}

/*
 * The shapes' steps. @k is the key; the found line's key is compared
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

/* Every key is in its chain: the walk stops at it. */
static inline struct shape_line *xchain_step(const struct shape *sh,
					     size_t k, size_t *hit)
{
	struct shape_line *l = sh->head[shape_head(sh, k)];

	while (l->key != k)
		l = l->next;
	++*hit;
	return l;
}

/*
 * @kind: which shape; @dep: each key depends on the last pointer found
 * (its top bit, 0 for a user-space pointer, which neither the compiler
 * nor the core can know). ns per lookup. Inlined with both constant:
 * a run-time @dep became a conditional move, which made the independent
 * keys depend on the loads all the same.
 */
static inline __attribute__((always_inline)) double
shape_run(const struct shape *sh, enum shape_kind kind, bool dep,
	  size_t loads)
{
	uintptr_t d = 0;
	size_t i, hit = 0;
	uint64_t t0 = b_now_ns();

	for (i = 0; i < loads; i++) {
		size_t k = (i + d) & sh->mask;
		struct shape_line *l =
			kind == SHAPE_TRIE ? trie_step(sh, k, &hit) :
			kind == SHAPE_XCHAIN ? xchain_step(sh, k, &hit) :
			chain_step(sh, k, &hit);

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
	static const char *const name[SHAPE_KINDS][2] = {
		[SHAPE_CHAIN] = { "chain-indep", "chain-dep" },
		[SHAPE_TRIE] = { "trie-indep", "trie-dep" },
		[SHAPE_XCHAIN] = { "xchain-indep", "xchain-dep" },
	};
	uint64_t rng = b_opts.seed ^ 0x5a4e5a4eull;
	double v[SHAPE_KINDS][2][64];
	unsigned int rep;
	struct shape sh;
	size_t loads;
	int kind, dep;

	b_progress("n=%zu floor shapes", n);
	shape_build(&sh, n, &rng);
	loads = sh.n < SHAPE_MAX_LOADS ? sh.n : SHAPE_MAX_LOADS;
	/* Fault in, warm the TLB. */
	(void)shape_run(&sh, SHAPE_CHAIN, false, loads);
	(void)shape_run(&sh, SHAPE_TRIE, false, loads);
	(void)shape_run(&sh, SHAPE_XCHAIN, false, loads);
	for (rep = 0; rep < b_opts.reps; rep++) {
		v[SHAPE_CHAIN][0][rep] = shape_run(&sh, SHAPE_CHAIN, false,
						   loads);
		v[SHAPE_CHAIN][1][rep] = shape_run(&sh, SHAPE_CHAIN, true,
						   loads);
		v[SHAPE_TRIE][0][rep] = shape_run(&sh, SHAPE_TRIE, false,
						  loads);
		v[SHAPE_TRIE][1][rep] = shape_run(&sh, SHAPE_TRIE, true,
						  loads);
		v[SHAPE_XCHAIN][0][rep] = shape_run(&sh, SHAPE_XCHAIN, false,
						    loads);
		v[SHAPE_XCHAIN][1][rep] = shape_run(&sh, SHAPE_XCHAIN, true,
						    loads);
	}
	shape_free(&sh);
	for (kind = 0; kind < SHAPE_KINDS; kind++)
		for (dep = 0; dep < 2; dep++)
			b_floor_record(name[kind][dep], "ns/key", n,
				       v[kind][dep]);
}
