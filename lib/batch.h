/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The prefetch pipeline of lookup_batch, shared by the hash backends.
 *
 * A batch goes through the memory hierarchy in three passes so that the
 * misses of a whole group overlap instead of queueing one after another:
 * hash every key and prefetch its bucket; load the bucket and prefetch the
 * first node of its chain(s); then walk the chains, which mostly hit.
 *
 * The backend supplies the three steps as static functions, and hash-ops.h
 * the hash; the pipeline is always inlined into the backend's lookup_batch
 * of each hash, so they are direct calls that the compiler inlines in
 * turn, not calls through pointers.
 */
#ifndef CT_BATCH_H
#define CT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "conntab-int.h"

/* Keys in flight per group: enough misses to cover DRAM latency. */
#define CT_BATCH	16

struct ct_batch_steps {
	/* The table's keyed hash of @k (inlined: hash-ops.h). */
	uint32_t (*hash)(const struct conntab *t, const struct conntab_key *k);
	/* Prefetch the bucket of hash @h. */
	void (*bucket)(struct conntab *t, uint32_t h);
	/* Load the bucket of @h, prefetch the first node(s) it points to. */
	void (*first)(struct conntab *t, uint32_t h);
	/* The lookup proper (RCU reader), with the hash computed. */
	struct conntab_node *(*find)(struct conntab *t, uint32_t h,
				     const struct conntab_key *k);
};

static inline __attribute__((always_inline)) size_t
ct_batch_lookup(struct conntab *t, const struct conntab_key *keys,
		struct conntab_node **out, size_t n,
		const struct ct_batch_steps steps)
{
	uint32_t h[CT_BATCH];
	size_t base, i, m, found = 0;

	for (base = 0; base < n; base += m) {
		m = n - base < CT_BATCH ? n - base : CT_BATCH;
		for (i = 0; i < m; i++) {
			h[i] = steps.hash(t, &keys[base + i]);
			steps.bucket(t, h[i]);
		}
		for (i = 0; i < m; i++)
			steps.first(t, h[i]);
		for (i = 0; i < m; i++) {
			out[base + i] = steps.find(t, h[i], &keys[base + i]);
			found += out[base + i] != NULL;
		}
	}
	return found;
}

#endif /* CT_BATCH_H */
