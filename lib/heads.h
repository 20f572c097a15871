/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Arrays of chain heads, shared by the hash backends.
 *
 * A backend's buckets are an array of nulls-terminated chain heads
 * (chain.h) in which head i ends in the marker ct_nulls(i), so that every
 * chain of the table has its own marker. CONNTAB_CHAINED has one head per
 * bucket; CONNTAB_SPLIT has two side by side (established, time-wait).
 * The writer locks (lock.h) stripe over buckets: stripe s covers the
 * buckets b with b % stripes == s, and all heads of those buckets.
 */
#ifndef CT_HEADS_H
#define CT_HEADS_H

#include <stdbool.h>
#include <stddef.h>

#include "conntab/conntab.h"
#include "evict.h"
#include "lock.h"

/*
 * Bucket limit of the fixed-size backends: past 2^27 buckets (1 GiB of
 * heads per head per bucket) a fixed table is the wrong tool (use
 * CONNTAB_EXTHASH), and the load factor rises above 1 instead.
 */
#define CT_MAX_BUCKETS	((size_t)1 << 27)

/*
 * Bucket count for a sizing hint: a power of two >= @expected, at least
 * @min (a power of two), at most CT_MAX_BUCKETS.
 */
size_t ct_buckets_for(size_t expected, size_t min);

/*
 * @n empty chain heads, head i ending in ct_nulls(i), the array aligned to
 * a cache line (huge-page backed when large: mem.h). NULL on allocation
 * failure or overflow.
 */
struct conntab_node **ct_heads_alloc(size_t n);

/* Free an array of @n heads from ct_heads_alloc() (no readers left). */
void ct_heads_free(struct conntab_node **heads, size_t n);

/* Bytes an array of @n heads takes (as allocated). */
size_t ct_heads_memory(size_t n);

/*
 * Unlink every node of @n heads (no readers or writers left): clear its
 * claim and pass it to @release (may be NULL), which may free it.
 */
void ct_heads_release(struct conntab_node **heads, size_t n,
		      void (*release)(struct conntab_node *));

/*
 * The longest chain among @nbuckets buckets of @per_bucket heads each
 * (bucket b owns heads b * per_bucket ...), scanned stripe by stripe under
 * each stripe's lock so that no writer changes a chain while it is counted.
 */
size_t ct_heads_max_depth(struct conntab_node **heads, size_t nbuckets,
			  unsigned int per_bucket, const struct ct_locks *lk);

/*
 * Eviction sample over @nbuckets buckets of @per_bucket heads each (see
 * evict.h), the newcomer's stripe @own locked: buckets of @own from a
 * random one on, then the other stripes' (try-locked) in stripe order,
 * until CT_EVICT_SAMPLE nodes were offered or every bucket was. The kept
 * victim's owner is its stripe. True if a node ranked >= 0.
 */
bool ct_heads_sample(struct conntab_node **heads, size_t nbuckets,
		     unsigned int per_bucket, const struct ct_locks *lk,
		     struct ct_stripe *own, struct ct_victim *v);

/*
 * The buckets of one stripe are nbuckets / stripes buckets apart, a line
 * each, and their nodes a line each: offered one after the other they are
 * two dependent misses per bucket, some twenty for a sample. Ask for the
 * nodes of the first CT_EVICT_AHEAD buckets at once, so that their misses
 * overlap as a batch lookup's do.
 */
#define CT_EVICT_AHEAD	(CT_EVICT_SAMPLE + CT_EVICT_SAMPLE / 2)

/*
 * The sample of ct_heads_sample() over any fixed array of @nbuckets
 * buckets striped by @lk: @offer(ctx, b, s, v) offers the nodes of bucket
 * b (its stripe @s held) to @v (evict.h); @ahead(ctx, b) prefetches them,
 * a hint that reads nothing a writer may free. Inlined into each caller,
 * so that its two steps are direct calls, inlined in turn.
 */
static inline __attribute__((always_inline)) bool
ct_stripes_sample(size_t nbuckets, const struct ct_locks *lk,
		  struct ct_stripe *own, struct ct_victim *v,
		  void (*offer)(void *ctx, size_t b, struct ct_stripe *s,
				struct ct_victim *v),
		  void (*ahead)(void *ctx, size_t b), void *ctx)
{
	size_t stripes = (size_t)lk->mask + 1, per = nbuckets / stripes;
	size_t o = (size_t)(own - lk->stripe), j0, k, j;
	struct ct_stripe *s;
	uint32_t *prev;

	/*
	 * Buckets of our own stripe first, from a random one on: no lock
	 * to take, and a large table has the sample there. (The bucket
	 * count is a power of two >= the stripe count, so every stripe
	 * covers nbuckets / stripes buckets: b = stripe + j * stripes.)
	 */
	j0 = (size_t)(ct_evict_random() % per);
	for (k = 0; k < per && k < CT_EVICT_AHEAD; k++)
		ahead(ctx, o + ((j0 + k) % per) * stripes);
	for (k = 0; k < per && v->seen < CT_EVICT_SAMPLE; k++)
		offer(ctx, o + ((j0 + k) % per) * stripes, own, v);
	/* A small or sparse table: the other stripes, try-locked. */
	for (k = 1; k < stripes && v->seen < CT_EVICT_SAMPLE; k++) {
		s = &lk->stripe[(o + k) & lk->mask];
		if (!ct_victim_trylock(v, &s->lock, &own->lock))
			continue;	/* busy: skip, never wait */
		prev = v->lock;
		for (j = 0; j < per && v->seen < CT_EVICT_SAMPLE; j++)
			offer(ctx, (o + k) % stripes + j * stripes, s, v);
		ct_victim_settle(v, &s->lock, prev, &own->lock);
	}
	return v->node != NULL;
}

/*
 * Unlink the victim ct_heads_sample() chose, counted by its stripe, and
 * drop that stripe's lock unless it is the newcomer's @own.
 */
void ct_heads_evict(const struct ct_victim *v, struct ct_stripe *own);

#endif /* CT_HEADS_H */
