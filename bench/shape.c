/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor of a table's shape: the loads a lookup of that shape cannot
 * avoid and nothing else (and below, an insert's and a remove's), at the
 * table's N (rounded up to a power of two, as both tables size
 * themselves), laid out and allocated as conntab lays them out:
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
 * the node (the entry is known from the key), a one-word compare. So
 * trie - chain of these rows, in ns, is what a trie whose lookups go
 * root -> node -> leaf adds to a lookup over a chained table of the same
 * N on this machine, however its code is written; their ratio is the
 * shape's cost when the code costs nothing, not a bound on the ratio of
 * the two backends' lookups, which the code's time in both brings
 * nearer 1:
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
 *    their nodes. So xchain - chain, in ns, is what chains from heads
 *    add to a hit over chained's slots at the same N when the code
 *    costs nothing. Their ratio (the targets' note) is no bound on
 *    exthash's lookup over chained's: the code's time, in both, brings
 *    that ratio below it (1M, one run: floors 1.63x, lookups 1.42x).
 *    An exthash that is to come nearer chained needs lines of slots,
 *    which its memory target (12 B/entry, 5.3 nodes a line of 6)
 *    overflows (doc/performance.md, issue 38).
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
	uint64_t claim;			/* insert floors: the node's claim */
	char pad[B_LINE - 2 * sizeof(uint64_t) - sizeof(void *)];
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

/*
 * Insert floors (rows chain-insert, trie-insert, xchain-insert): the
 * loads, locked instructions and stores of each shape's insert and
 * nothing else, no hash, no key copy, no search, as the insert workload
 * runs them: N inserts into the empty shape at N, node i (in an array of
 * nodes in order, as the workload's objects are) taking key i, one
 * after another. What each shape's insert does, as its backend's fast
 * path does it:
 *
 *  - first the node's claim, a locked RMW on its line (conntab_insert()
 *    claims the node before it links it), with the place's line
 *    prefetched before it where its address needs no load;
 *  - chain: the bucket word (array of N), under a stripe lock (1024
 *    lines, as chained's), read and stored;
 *  - trie: the root word (array of N/16) to its 16-entry node, whose
 *    other lines are prefetched on arrival; the root word's lock bit and
 *    the node's lock byte (the trie's fast path takes both); the entry
 *    stored;
 *  - xchain: the segment's lock (a line per 64 heads), every node of the
 *    head's chain read (the duplicate check: a chain holds no tags), the
 *    node pushed at the head. Left out: exthash reaches the segment
 *    through its directory (xh_seg_rcu(), a dependent load of a small
 *    array that stays cached), so here the lock's line is prefetched
 *    with no load before it, which exthash cannot do.
 *
 * A lock's release is a plain release store and the inserts are
 * independent, so xchain - chain or trie - chain, in ns, is what the
 * shape adds to an insert over chained's on this machine (at a load
 * that grows from 0 to one node a head, as the workload's does); their
 * ratio is the shape's cost when the code costs nothing, not a bound on
 * the backends' ratio, which the code's time in both brings nearer 1.
 */
struct shape_w {
	struct shape_line *node;	/* node i gets key i */
	struct shape_line *stripe;	/* chain's locks: 1024 lines */
	struct shape_line *seg;		/* xchain's: a line per 64 heads */
	struct shape_line **bucket, **head;
	uintptr_t *root;		/* trie: node | 2 (the lock bit) */
	struct shape_node **nodes;
};

#define SHAPE_STRIPES	1024

static void shape_w_build(struct shape_w *w, const struct shape *sh,
			  uint64_t *rng)
{
	size_t i, nodes = sh->n / SHAPE_FANOUT;
	uint32_t *perm;

	w->node = b_alloc(sh->n * sizeof(*w->node));
	w->stripe = b_alloc(SHAPE_STRIPES * sizeof(*w->stripe));
	w->seg = b_alloc((sh->n / 64 + 1) * sizeof(*w->seg));
	w->bucket = shape_array(sh->n * sizeof(*w->bucket));
	w->head = shape_array(sh->n * sizeof(*w->head));
	w->root = b_alloc(nodes * sizeof(*w->root));
	w->nodes = b_alloc(nodes * sizeof(*w->nodes));
	for (i = 0; i < nodes; i++) {
		w->nodes[i] = malloc(sizeof(struct shape_node));
		if (!w->nodes[i]) {
			fprintf(stderr, "conntab-bench: out of memory\n");
			exit(1);
		}
	}
	perm = b_alloc(nodes * sizeof(*perm));
	for (i = 0; i < nodes; i++)
		perm[i] = (uint32_t)i;
	b_shuffle32(perm, nodes, rng);
	for (i = 0; i < nodes; i++)
		w->root[i] = (uintptr_t)w->nodes[perm[i]];
	free(perm);
}

/* Empty again: no node linked, no claim held. */
static void shape_w_reset(struct shape_w *w, const struct shape *sh)
{
	size_t i;

	for (i = 0; i < sh->n; i++) {
		w->node[i].next = NULL;
		w->node[i].claim = 0;
	}
	memset(w->bucket, 0, sh->n * sizeof(*w->bucket));
	memset(w->head, 0, sh->n * sizeof(*w->head));
	for (i = 0; i < sh->n / SHAPE_FANOUT; i++)
		memset(w->nodes[i], 0, sizeof(struct shape_node));
}

static void shape_w_free(struct shape_w *w, const struct shape *sh)
{
	size_t i;

	for (i = 0; i < sh->n / SHAPE_FANOUT; i++)
		free(w->nodes[i]);
	free(w->nodes);
	free(w->root);
	ct_array_free(w->head, sh->n * sizeof(*w->head));
	ct_array_free(w->bucket, sh->n * sizeof(*w->bucket));
	free(w->seg);
	free(w->stripe);
	free(w->node);
}

static inline void shape_lock(uint64_t *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		;
}

static inline void shape_unlock(uint64_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* The claim: conntab's locked RMW on the node's own line. */
static inline void shape_claim(struct shape_line *l, size_t k)
{
	l->key = k;
	(void)__atomic_fetch_or(&l->claim, 1, __ATOMIC_ACQ_REL);
}

/*
 * The trie's two locks, as its fast path takes them: the root word's
 * lock bit, then the node's lock byte; the node's other lines prefetched
 * on arrival, as the trie's descent does.
 */
static inline struct shape_node *trie_lock(uintptr_t *r)
{
	uintptr_t p = __atomic_load_n(r, __ATOMIC_ACQUIRE);
	struct shape_node *x = (struct shape_node *)(p & ~(uintptr_t)2);

	__builtin_prefetch((char *)x + B_LINE);
	__builtin_prefetch((char *)x + 2 * B_LINE);
	while (!__atomic_compare_exchange_n(r, &p, (uintptr_t)x | 2, true,
					    __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED))
		p = (uintptr_t)x;
	while (__atomic_exchange_n(&x->head[0], 1, __ATOMIC_ACQUIRE))
		;
	return x;
}

static inline void trie_unlock(uintptr_t *r, struct shape_node *x)
{
	__atomic_store_n(&x->head[0], 0, __ATOMIC_RELEASE);
	__atomic_store_n(r, (uintptr_t)x, __ATOMIC_RELEASE);
}

/* Each returns 1 if the place already held something (for the sink). */
static inline size_t chain_insert(const struct shape *sh,
				  const struct shape_w *w, size_t k)
{
	size_t b = shape_slot(sh, k);
	struct shape_line *l = &w->node[k], *old;
	uint64_t *lock = &w->stripe[b % SHAPE_STRIPES].key;

	__builtin_prefetch(&w->bucket[b], 1);
	shape_claim(l, k);
	shape_lock(lock);
	old = w->bucket[b];
	__atomic_store_n(&w->bucket[b], l, __ATOMIC_RELEASE);
	shape_unlock(lock);
	return old != NULL;
}

static inline size_t trie_insert(const struct shape *sh,
				 const struct shape_w *w, size_t k)
{
	size_t b = shape_slot(sh, k), e = b % SHAPE_FANOUT;
	uintptr_t *r = &w->root[b / SHAPE_FANOUT];
	struct shape_line *l = &w->node[k];
	struct shape_node *x;
	size_t old;

	__builtin_prefetch(r, 1);
	shape_claim(l, k);
	x = trie_lock(r);
	old = x->val[e];
	x->val[e] = (uint16_t)e;
	__atomic_store_n(&x->kid[e], l, __ATOMIC_RELEASE);
	trie_unlock(r, x);
	return old != 0;
}

static inline size_t xchain_insert(const struct shape *sh,
				   const struct shape_w *w, size_t k)
{
	size_t h = shape_head(sh, k), dup = 0;
	struct shape_line *l = &w->node[k], *p;
	uint64_t *lock = &w->seg[h / 64].key;

	__builtin_prefetch(&w->head[h], 1);
	__builtin_prefetch(lock, 1);
	shape_claim(l, k);
	shape_lock(lock);
	for (p = w->head[h]; p; p = p->next)
		dup += p->key == k;
	l->next = w->head[h];
	__atomic_store_n(&w->head[h], l, __ATOMIC_RELEASE);
	shape_unlock(lock);
	return dup;
}

/*
 * Removes (rows *-remove): node gone[i], in a random order as the remove
 * workload's, its key read from its line (a remove knows its node, not
 * its place), and taken off its place under the same locks: chain's
 * bucket word cleared, the trie's entry, the xchain walked from its head
 * to the node's link, which is changed. No locked instruction on the
 * node: conntab_remove() and the backends' remove_single paths claim
 * nothing, they load its owner under the place's lock
 * (ct_node_check_locked()) and end its life with a release store
 * (ct_node_release()), as shape_unclaim() does. Each returns 1 if the
 * node was not where its key says, or not claimed by its insert.
 */
static inline size_t shape_unclaim(struct shape_line *l, size_t bad)
{
	bad |= __atomic_load_n(&l->claim, __ATOMIC_ACQUIRE) != 1;
	__atomic_store_n(&l->claim, 0, __ATOMIC_RELEASE);
	return bad;
}

static inline size_t chain_remove(const struct shape *sh,
				  const struct shape_w *w,
				  struct shape_line *l)
{
	size_t k = l->key, b = shape_slot(sh, k), bad;
	uint64_t *lock = &w->stripe[b % SHAPE_STRIPES].key;

	__builtin_prefetch(&w->bucket[b], 1);
	shape_lock(lock);
	bad = w->bucket[b] != l;
	__atomic_store_n(&w->bucket[b], NULL, __ATOMIC_RELEASE);
	bad = shape_unclaim(l, bad);
	shape_unlock(lock);
	return bad;
}

static inline size_t trie_remove(const struct shape *sh,
				 const struct shape_w *w,
				 struct shape_line *l)
{
	size_t k = l->key, b = shape_slot(sh, k), e = b % SHAPE_FANOUT, bad;
	uintptr_t *r = &w->root[b / SHAPE_FANOUT];
	struct shape_node *x;

	__builtin_prefetch(r, 1);
	x = trie_lock(r);
	bad = x->val[e] != e || x->kid[e] != l;
	__atomic_store_n(&x->kid[e], NULL, __ATOMIC_RELEASE);
	bad = shape_unclaim(l, bad);
	trie_unlock(r, x);
	return bad;
}

static inline size_t xchain_remove(const struct shape *sh,
				   const struct shape_w *w,
				   struct shape_line *l)
{
	size_t h = shape_head(sh, l->key);
	uint64_t *lock = &w->seg[h / 64].key;
	struct shape_line **pp;
	size_t bad;

	__builtin_prefetch(&w->head[h], 1);
	__builtin_prefetch(lock, 1);
	shape_lock(lock);
	for (pp = &w->head[h]; *pp && *pp != l; pp = &(*pp)->next)
		;
	bad = *pp == NULL;
	if (!bad)
		__atomic_store_n(pp, l->next, __ATOMIC_RELEASE);
	bad = shape_unclaim(l, bad);
	shape_unlock(lock);
	return bad;
}

/*
 * ns per insert of the N keys into the empty shape @kind (*ins), then
 * per remove of them all in the order @gone (*rem).
 */
static void shape_w_run(const struct shape *sh, struct shape_w *w,
			const uint32_t *gone, enum shape_kind kind,
			double *ins, double *rem)
{
	size_t i, sink = 0;
	uint64_t t0;

	shape_w_reset(w, sh);
	t0 = b_now_ns();
	switch (kind) {
	case SHAPE_CHAIN:
		for (i = 0; i < sh->n; i++)
			sink += chain_insert(sh, w, i);
		break;
	case SHAPE_TRIE:
		for (i = 0; i < sh->n; i++)
			sink += trie_insert(sh, w, i);
		break;
	default:
		for (i = 0; i < sh->n; i++)
			sink += xchain_insert(sh, w, i);
		break;
	}
	t0 = b_now_ns() - t0;
	/* Every key is new, and every slot of the bijections too. */
	if (sink)
		b_failed("floor shape: %zu inserts found their key", sink);
	*ins = (double)t0 / (double)sh->n;
	t0 = b_now_ns();
	switch (kind) {
	case SHAPE_CHAIN:
		for (i = 0; i < sh->n; i++)
			sink += chain_remove(sh, w, &w->node[gone[i]]);
		break;
	case SHAPE_TRIE:
		for (i = 0; i < sh->n; i++)
			sink += trie_remove(sh, w, &w->node[gone[i]]);
		break;
	default:
		for (i = 0; i < sh->n; i++)
			sink += xchain_remove(sh, w, &w->node[gone[i]]);
		break;
	}
	t0 = b_now_ns() - t0;
	if (sink)
		b_failed("floor shape: %zu removes missed their node", sink);
	*rem = (double)t0 / (double)sh->n;
}

void b_floor_shapes(size_t n)
{
	static const char *const name[SHAPE_KINDS][4] = {
		[SHAPE_CHAIN] = { "chain-indep", "chain-dep", "chain-insert",
				  "chain-remove" },
		[SHAPE_TRIE] = { "trie-indep", "trie-dep", "trie-insert",
				 "trie-remove" },
		[SHAPE_XCHAIN] = { "xchain-indep", "xchain-dep",
				   "xchain-insert", "xchain-remove" },
	};
	uint64_t rng = b_opts.seed ^ 0x5a4e5a4eull;
	double v[SHAPE_KINDS][2][64], vi[SHAPE_KINDS][64];
	double vr[SHAPE_KINDS][64];
	uint32_t *gone;
	unsigned int rep;
	size_t i;
	struct shape_w w;
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
	shape_w_build(&w, &sh, &rng);
	gone = b_alloc(sh.n * sizeof(*gone));
	for (i = 0; i < sh.n; i++)
		gone[i] = (uint32_t)i;
	b_shuffle32(gone, sh.n, &rng);
	for (kind = 0; kind < SHAPE_KINDS; kind++)	/* fault in */
		shape_w_run(&sh, &w, gone, kind, &vi[kind][0], &vr[kind][0]);
	for (rep = 0; rep < b_opts.reps; rep++)
		for (kind = 0; kind < SHAPE_KINDS; kind++)
			shape_w_run(&sh, &w, gone, kind, &vi[kind][rep],
				    &vr[kind][rep]);
	free(gone);
	shape_w_free(&w, &sh);
	shape_free(&sh);
	for (kind = 0; kind < SHAPE_KINDS; kind++) {
		for (dep = 0; dep < 2; dep++)
			b_floor_record(name[kind][dep], "ns/key", n,
				       v[kind][dep]);
		b_floor_record(name[kind][2], "ns/key", n, vi[kind]);
		b_floor_record(name[kind][3], "ns/key", n, vr[kind]);
	}
}
