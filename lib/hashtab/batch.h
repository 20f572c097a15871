/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The prefetch pipeline of lookup_batch, shared by the hash backends.
 *
 * A hit costs two dependent misses (bucket, node), a third for the keys
 * that are not first in their chain (about a third of them at load 1,
 * in split and exthash; CONNTAB_CHAINED's buckets point to every node of
 * theirs from a tagged slot, so only the few on an overflow chain behind
 * another pay it: slots.h).
 * Within a group nothing can hide the dependence, so a group of up to 32
 * keys goes through the memory hierarchy in waves, each as wide as the
 * group:
 *
 *  1. hash every key and prefetch its bucket;
 *  2. load each bucket and prefetch the first node of its chain;
 *  3. probe each first node: a hit is an answer; otherwise prefetch its
 *     successor;
 *  4. probe those successors the same way, for the keys still open;
 *  5. the lookup proper, for the few keys the probes did not answer
 *     (third or later in their chain, absent, or moving).
 *
 * Groups overlap by one wave: the next group's pass 1 runs while this
 * group's first nodes are in flight, so its buckets are in cache when its
 * pass 2 starts. A call of up to 32 keys has no next group: it pays
 * each wave's full latency, which is what bench/floor.c's "16-key calls"
 * measure for 16.
 *
 * Passes 2 to 4 take no branch that depends on loaded data: a branch on
 * a node still in flight is mispredicted a third of the time, and the
 * flush throws away the loads issued behind it, which is the overlap the
 * pipeline exists for. So the probes compare with bitwise operations,
 * read a dummy node in place of an empty chain, and choose addresses
 * to prefetch with conditional moves; the keys left over are collected
 * without a branch too.
 *
 * A probe hit is the answer the lookup would give: the node was read
 * from the chain under the caller's RCU read lock by following its links
 * from the bucket, as the lookup does, and holds the key (the first node
 * holding it that a lookup meets). A probe miss proves nothing (the key
 * may be further on, or moving), so the lookup proper runs, with all of
 * its backend's guarantees.
 *
 * The backend supplies the steps as static functions, and hash-ops.h the
 * hash; the pipeline is always inlined into the backend's lookup_batch of
 * each hash, so they are direct calls that the compiler inlines in turn,
 * not calls through pointers.
 */
#ifndef CT_BATCH_H
#define CT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "../conntab-int.h"
#include "../key.h"

/*
 * Keys in flight per group. A burst of 32 or 64 keys was run as groups
 * of 16 overlapped by one wave, so its last group's probes waited out a
 * full latency of their own: bursts of 32 gained on 16 less than they
 * could (issue 37). With groups of 32, a burst of 32 pays the waves of
 * one group, and each wave issues more misses than a core tracks at
 * once (16-24 on current x86-64 and arm64 cores): the rest queue behind
 * them instead of waiting a wave. Measured (conntab-bench --n 1M
 * --workload batch --impl chained --clock cpu, two rounds each, 16 ->
 * 32): ns per key, burst 16 40.0/40.8 -> 42.6/41.3, burst 32 34.0/33.3
 * -> 31.6/29.9, burst 64 31.7/30.2 -> 28.5/28.1. A burst of 16 is one
 * group either way. left[] holds group indices in a byte.
 */
#define CT_BATCH	32

/* Read in place of the first node of an empty chain: matches no key. */
extern const struct conntab_node ct_batch_dummy;

struct ct_batch_steps {
	/* The table's keyed hash of @k (inlined: hash-ops.h). */
	uint32_t (*hash)(const struct conntab *t, const struct conntab_key *k);
	/* Prefetch the bucket of hash @h. */
	void (*bucket)(struct conntab *t, uint32_t h);
	/*
	 * Load the bucket of @h; prefetch and return the first node a
	 * lookup of @h reads (the first of the chain it walks first, or the
	 * slot its tag matched; a nulls marker if none), and prefetch the
	 * first nodes of any other chain it walks.
	 */
	struct conntab_node *(*first)(struct conntab *t, uint32_t h);
	/* The lookup proper (RCU reader), with the hash computed. */
	struct conntab_node *(*find)(struct conntab *t, uint32_t h,
				     const struct conntab_key *k);
};

/*
 * A probe of one key: set *@out to @x (a node, or a nulls marker) if it
 * holds key @k, else to NULL; *@next to its successor, which
 * it prefetches; returns 1 if the key is still to be found. No branch on
 * the node's contents: the result is masked, not chosen.
 */
static inline __attribute__((always_inline)) unsigned int
ct_batch_probe(struct conntab_node *x, const struct conntab_key *k,
	       struct conntab_node **out, struct conntab_node **next)
{
	bool empty = ct_is_nulls(x);
	const struct conntab_node *z = empty ? &ct_batch_dummy : x;
	/*
	 * Consume, as the lookup's own walk: pairs with the release store
	 * that linked the successor (ct_chain_push(), ct_chain_replace()),
	 * so the next probe sees its key, hash and link initialised.
	 */
	struct conntab_node *nx = ct_rcu_deref(z->ct_next);
	/*
	 * The key alone decides: a node holding @k has @k's hash, and
	 * valid keys (key.h) never equal the dummy's zeroed one. A lookup
	 * compares the hash first to skip the key on a branch; here both
	 * would be computed anyway, and the hash was three instructions a
	 * probe.
	 */
	unsigned int hit = !empty & ct_key_eq_nb(&z->ct_key, k);

	/*
	 * A hit needs no successor but the line where the caller's data
	 * begins, after the node (72 bytes): fetch that now, while the
	 * other keys are probed, rather than when the caller reads it.
	 * A select, not a branch, as above.
	 */
	__builtin_prefetch(hit ? (const void *)(z + 1) :
			   ct_is_nulls(nx) ? (const void *)z : nx);
	*out = (struct conntab_node *)((uintptr_t)x & -(uintptr_t)hit);
	*next = nx;
	return hit ^ 1;
}

/* Pass 1 for keys[0..m): hash each key and prefetch its bucket. */
static inline __attribute__((always_inline)) void
ct_batch_hash(struct conntab *t, const struct conntab_key *keys, size_t m,
	      uint32_t *h, const struct ct_batch_steps *steps)
{
	size_t i;

	for (i = 0; i < m; i++) {
		h[i] = steps->hash(t, &keys[i]);
		steps->bucket(t, h[i]);
	}
}

static inline __attribute__((always_inline)) size_t
ct_batch_lookup(struct conntab *t, const struct conntab_key *keys,
		struct conntab_node **out, size_t n,
		const struct ct_batch_steps steps)
{
	struct conntab_node *x[CT_BATCH];
	uint32_t hbuf[2][CT_BATCH], *h;
	uint8_t left[CT_BATCH];
	size_t base, i, j, m, mn, m2, nleft, found = 0;
	unsigned int g = 0;

	m = n < CT_BATCH ? n : CT_BATCH;
	ct_batch_hash(t, keys, m, hbuf[0], &steps);
	for (base = 0; base < n; base += m, m = mn, g ^= 1) {
		size_t nb = base + m;

		h = hbuf[g];
		for (i = 0; i < m; i++)
			x[i] = steps.first(t, h[i]);
		/*
		 * The next group's pass 1 while this group's first nodes
		 * are on their way: its buckets arrive during the probes.
		 */
		mn = n - nb < CT_BATCH ? n - nb : CT_BATCH;
		ct_batch_hash(t, &keys[nb], mn, hbuf[g ^ 1], &steps);
		for (i = 0, nleft = 0; i < m; i++) {
			left[nleft] = (uint8_t)i;
			nleft += ct_batch_probe(x[i], &keys[base + i],
						&out[base + i], &x[i]);
		}
		found += m - nleft;
		for (j = 0, m2 = 0; j < nleft; j++) {
			i = left[j];
			left[m2] = (uint8_t)i;
			m2 += ct_batch_probe(x[i], &keys[base + i],
					     &out[base + i], &x[i]);
		}
		found += nleft - m2;
		for (j = 0; j < m2; j++) {
			i = left[j];
			out[base + i] = steps.find(t, h[i], &keys[base + i]);
			found += out[base + i] != NULL;
		}
	}
	return found;
}

#endif /* CT_BATCH_H */
