/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The prefetch pipeline of lookup_batch, shared by the hash backends.
 *
 * A hit costs two dependent misses (bucket, node), a third for the keys
 * that are not first in their chain (about a third of them at load 1).
 * Within a call nothing can hide the dependence, so a group of keys goes
 * through the memory hierarchy in waves, each as wide as the group:
 *
 *  1. hash every key and prefetch its bucket;
 *  2. load each bucket and prefetch the first node of its chain;
 *  3. probe each first node: a hit is an answer; otherwise prefetch its
 *     successor and keep the key for
 *  4. the lookup proper, for the keys the probe did not answer, whose
 *     nodes are now arriving.
 *
 * Passes 2 and 3 take no branch that depends on loaded data: a branch on
 * a node still in flight is mispredicted a third of the time, and the
 * flush throws away the loads issued behind it, which is the overlap the
 * pipeline exists for. So the probe compares with bitwise operations,
 * reads a dummy node in place of an empty chain, and chooses addresses
 * to prefetch with conditional moves; the keys left over are collected
 * without a branch too.
 *
 * A probe hit is the answer the lookup would give: the node was read
 * from the chain under the caller's RCU read lock and holds the key (the
 * first node a lookup meets). A probe miss proves nothing (the key may be
 * further on, or moving), so the lookup proper runs, with all of its
 * backend's guarantees.
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
#include "conntab-int.h"
#include "key.h"

/*
 * Keys in flight per group: each wave then keeps about as many misses in
 * flight as a core tracks (16-24 on current x86-64 and arm64 cores).
 */
#define CT_BATCH	16

/* Read in place of the first node of an empty chain: matches no key. */
extern const struct conntab_node ct_batch_dummy;

struct ct_batch_steps {
	/* The table's keyed hash of @k (inlined: hash-ops.h). */
	uint32_t (*hash)(const struct conntab *t, const struct conntab_key *k);
	/* Prefetch the bucket of hash @h. */
	void (*bucket)(struct conntab *t, uint32_t h);
	/*
	 * Load the bucket of @h; prefetch and return the first node of the
	 * chain a lookup of @h walks first (a nulls marker if empty), and
	 * prefetch the first nodes of any other chain it walks.
	 */
	struct conntab_node *(*first)(struct conntab *t, uint32_t h);
	/* The lookup proper (RCU reader), with the hash computed. */
	struct conntab_node *(*find)(struct conntab *t, uint32_t h,
				     const struct conntab_key *k);
};

/*
 * Pass 3 for one key: set *@out to @x (a node, or a nulls marker) if it
 * holds key @k of hash @h, else to NULL after prefetching its successor;
 * returns 1 if the key is left for the lookup proper. No branch on the
 * node's contents: the result is masked, not chosen.
 */
static inline __attribute__((always_inline)) unsigned int
ct_batch_probe(struct conntab_node *x, uint32_t h, const struct conntab_key *k,
	       struct conntab_node **out)
{
	bool empty = ct_is_nulls(x);
	const struct conntab_node *z = empty ? &ct_batch_dummy : x;
	struct conntab_node *next = ct_rcu_deref(z->ct_next);
	unsigned int hit = !empty & (z->ct_hash == h) &
			   ct_key_eq_nb(&z->ct_key, k);

	__builtin_prefetch(ct_is_nulls(next) ? (const void *)z : next);
	*out = (struct conntab_node *)((uintptr_t)x & -(uintptr_t)hit);
	return hit ^ 1;
}

static inline __attribute__((always_inline)) size_t
ct_batch_lookup(struct conntab *t, const struct conntab_key *keys,
		struct conntab_node **out, size_t n,
		const struct ct_batch_steps steps)
{
	struct conntab_node *first[CT_BATCH];
	uint32_t h[CT_BATCH];
	uint8_t left[CT_BATCH];
	size_t base, i, j, m, nleft, found = 0;

	for (base = 0; base < n; base += m) {
		m = n - base < CT_BATCH ? n - base : CT_BATCH;
		for (i = 0; i < m; i++) {
			h[i] = steps.hash(t, &keys[base + i]);
			steps.bucket(t, h[i]);
		}
		for (i = 0; i < m; i++)
			first[i] = steps.first(t, h[i]);
		for (i = 0, nleft = 0; i < m; i++) {
			left[nleft] = (uint8_t)i;
			nleft += ct_batch_probe(first[i], h[i],
						&keys[base + i],
						&out[base + i]);
		}
		found += m - nleft;
		for (j = 0; j < nleft; j++) {
			i = left[j];
			out[base + i] = steps.find(t, h[i], &keys[base + i]);
			found += out[base + i] != NULL;
		}
	}
	return found;
}

#endif /* CT_BATCH_H */
