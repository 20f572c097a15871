/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Arrays of chain heads: allocation, teardown and the depth scan; the
 * dummy node the batch pipeline reads for an empty chain.
 */
#include <stdint.h>
#include <stdlib.h>

#include "batch.h"
#include "chain.h"
#include "../conntab-int.h"
#include "../evict.h"
#include "heads.h"
#include "../mem.h"

/* Zero key (no valid key has family 0), its chain ends at once. */
const struct conntab_node ct_batch_dummy = {
	.ct_next = (struct conntab_node *)1,	/* ct_nulls(0) */
};

size_t ct_buckets_for(size_t expected, size_t min)
{
	if (expected > CT_MAX_BUCKETS)
		expected = CT_MAX_BUCKETS;
	return ct_roundup_pow2(expected > min ? expected : min);
}

size_t ct_heads_memory(size_t n)
{
	return n * sizeof(struct conntab_node *);
}

struct conntab_node **ct_heads_alloc(size_t n)
{
	struct conntab_node **heads;
	size_t i;

	/* Every id must fit in a marker: (id << 1) | 1. */
	if (!n || n > SIZE_MAX / sizeof(*heads) - CT_CACHELINE ||
	    n - 1 > UINTPTR_MAX >> 1)
		return NULL;
	heads = ct_array_alloc(ct_heads_memory(n));
	if (!heads)
		return NULL;
	for (i = 0; i < n; i++)
		heads[i] = ct_nulls(i);
	return heads;
}

void ct_heads_free(struct conntab_node **heads, size_t n)
{
	ct_array_free(heads, ct_heads_memory(n));
}

void ct_heads_release(struct conntab_node **heads, size_t n,
		      void (*release)(struct conntab_node *))
{
	struct conntab_node *node, *next;
	size_t i;

	for (i = 0; i < n; i++) {
		for (node = heads[i]; !ct_is_nulls(node); node = next) {
			next = node->ct_next;	/* release may free node */
			ct_node_release(node);
			if (release)
				release(node);
		}
	}
}

size_t ct_heads_max_depth(struct conntab_node **heads, size_t nbuckets,
			  unsigned int per_bucket, const struct ct_locks *lk)
{
	size_t stripes = (size_t)lk->mask + 1;
	size_t b, len, depth = 0;
	unsigned int j;
	uint32_t sidx;

	/* Each stripe covers the buckets congruent to it modulo the stripes. */
	for (sidx = 0; sidx <= lk->mask; sidx++) {
		struct ct_stripe *s = &lk->stripe[sidx];

		ct_spin_lock(&s->lock);
		for (b = sidx; b < nbuckets; b += stripes) {
			for (j = 0; j < per_bucket; j++) {
				len = ct_chain_len(&heads[b * per_bucket + j]);
				if (len > depth)
					depth = len;
			}
		}
		ct_unlock_stripe(s);
	}
	return depth;
}

/* Arrays of heads, @per_bucket heads a bucket. */
struct ct_heads_ctx {
	struct conntab_node **heads;
	unsigned int per_bucket;
};

static inline __attribute__((always_inline)) void
ct_heads_sample_ahead(void *ctx, size_t b)
{
	const struct ct_heads_ctx *c = ctx;
	unsigned int j;

	for (j = 0; j < c->per_bucket; j++)
		ct_chain_prefetch(&c->heads[b * c->per_bucket + j]);
}

static inline __attribute__((always_inline)) void
ct_heads_sample_bucket(void *ctx, size_t b, struct ct_stripe *s,
		       struct ct_victim *v)
{
	const struct ct_heads_ctx *c = ctx;
	unsigned int j;

	ct_victim_spend(v);	/* the bucket's heads: a line */
	for (j = 0; j < c->per_bucket; j++)
		ct_victim_chain(v, &c->heads[b * c->per_bucket + j], s,
				&s->lock);
}

bool ct_heads_sample(struct conntab_node **heads, size_t nbuckets,
		     unsigned int per_bucket, const struct ct_locks *lk,
		     struct ct_stripe *own, size_t first, struct ct_victim *v)
{
	struct ct_heads_ctx c = { heads, per_bucket };

	return ct_stripes_sample(nbuckets, lk, own, first, v,
				 ct_heads_sample_bucket,
				 ct_heads_sample_ahead, &c);
}

void ct_heads_evict(const struct ct_victim *v, struct ct_stripe *own)
{
	struct ct_stripe *vs = v->owner;

	ct_victim_unlink(v);
	ct_stripe_add(vs, -1, -(v->node->ct_state == CONNTAB_TIMEWAIT));
	ct_victim_unlock(v, &own->lock);
}
