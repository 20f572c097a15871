/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Arrays of chain heads, shared by the hash backends.
 *
 * A backend's buckets are an array of nulls-terminated chain heads
 * (chain.h) in which head i ends in the marker ct_nulls(i), so that every
 * chain of the table has its own marker (CONNTAB_EXTHASH's chains; the
 * fixed backends keep their heads in their bucket lines, slots.h).
 * The writer locks (lock.h) stripe over buckets: stripe s covers the
 * buckets b with b % stripes == s, and all heads of those buckets.
 */
#ifndef CT_HEADS_H
#define CT_HEADS_H

#include <stdbool.h>
#include <stddef.h>

#include "conntab/conntab.h"
#include "../evict.h"
#include "../lock.h"

/*
 * Unlink every node of @n heads (no readers or writers left): clear its
 * claim and pass it to @release (may be NULL), which may free it.
 */
void ct_heads_release(struct conntab_node **heads, size_t n,
		      void (*release)(struct conntab_node *));

/*
 * The buckets of one stripe are nbuckets / stripes buckets apart, a line
 * each, and their nodes a line each: offered one after the other they are
 * two dependent misses per bucket, some twenty for a sample. Ask for the
 * nodes of the first CT_EVICT_AHEAD buckets at once, so that their misses
 * overlap as a batch lookup's do.
 */
#define CT_EVICT_AHEAD	(CT_EVICT_SAMPLE + CT_EVICT_SAMPLE / 2)

/*
 * An eviction sample (evict.h) over any fixed array of @nbuckets
 * buckets striped by @lk, the newcomer's stripe @own locked: its bucket
 * @first, then the stripes from a random one on (try-locked, but @own),
 * each from a random bucket on, until the sample is done
 * (ct_victim_done()) or every bucket was visited; the kept victim's owner
 * is its stripe, and the result is true if a node ranked >= 0. @offer(ctx, b, s, v) offers the nodes of bucket
 * b (its stripe @s held) to @v (evict.h); @ahead(ctx, b) prefetches them,
 * a hint that reads nothing a writer may free. Inlined into each caller,
 * so that its two steps are direct calls, inlined in turn.
 */
static inline __attribute__((always_inline)) bool
ct_stripes_sample(size_t nbuckets, const struct ct_locks *lk,
		  struct ct_stripe *own, size_t first, struct ct_victim *v,
		  void (*offer)(void *ctx, size_t b, struct ct_stripe *s,
				struct ct_victim *v),
		  void (*ahead)(void *ctx, size_t b), void *ctx)
{
	size_t stripes = (size_t)lk->mask + 1, per = nbuckets / stripes;
	size_t o, j0, k, k0, j, b;
	uint64_t r = ct_evict_random();
	unsigned int pass;
	struct ct_stripe *s;
	uint32_t *prev;

	/*
	 * The newcomer's own bucket first: its line is in cache, and a
	 * victim from it leaves every depth as it was. Then a stripe drawn
	 * at random, from a random bucket on, and the stripes after it
	 * while the sample wants more (a small or sparse table), each
	 * try-locked but ours. Not our own stripe first: the newcomer's
	 * stripe is its key's, and a flow whose key keeps coming back
	 * would keep the candidates in one stripe. (The bucket count is a
	 * power of two >= the stripe count, so every stripe covers
	 * nbuckets / stripes buckets: b = stripe + j * stripes.)
	 */
	ct_victim_own_begin(v, own, &own->lock);
	offer(ctx, first, own, v);
	ct_victim_own_end(v);
	k0 = (size_t)r % stripes;
	j0 = (size_t)(r >> 32) % per;
	for (k = 0; k < per && k < CT_EVICT_AHEAD; k++)
		ahead(ctx, k0 + ((j0 + k) % per) * stripes);
	for (pass = 0; pass < 2; pass++) {
		/*
		 * Every stripe visited and the sample still short (a
		 * small table: its budget unspent, nodes were thinned
		 * out): once more, our bucket too, taking every node not
		 * yet ranked (ct_victim_sweep()).
		 */
		if (pass && (ct_victim_done(v) || !ct_victim_sweep(v)))
			break;
		for (k = 0; k < stripes && !ct_victim_done(v); k++) {
			o = (k0 + k) & lk->mask;
			s = &lk->stripe[o];
			if (!ct_victim_trylock(v, &s->lock, &own->lock))
				continue;	/* busy: skip, never wait */
			prev = v->lock;
			for (j = 0; j < per && !ct_victim_done(v); j++) {
				b = o + ((j0 + j) % per) * stripes;
				if (b != first || pass)
					offer(ctx, b, s, v);
			}
			ct_victim_settle(v, &s->lock, prev, &own->lock);
		}
	}
	return v->node != NULL;
}

#endif /* CT_HEADS_H */
