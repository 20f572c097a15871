/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_CHAINED: a fixed power-of-two array of RCU chains.
 *
 * Layout: one pointer per bucket (8 bytes, load factor ~1 at the sizing
 * hint), the chains ending in nulls markers that carry the bucket index.
 * A successful lookup touches the bucket's line and the node's line
 * (pointer, hash and key share one line): Dumazet's two cache misses.
 *
 * Writers lock the stripe of the key's hash (ct_locks); since the bucket
 * count is a power of two no smaller than the stripe count, one stripe
 * covers whole buckets, so a writer holding it owns every chain it touches.
 * TIME_WAIT is a state on the node: conntab_timewait() either flips the
 * state in place or replaces the node in its chain with one pointer store.
 * Nodes never move between chains here; the nulls check in the reader is
 * one compare at the end of a miss and keeps the chain code shared with
 * the backends where they do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "chain-ops.h"
#include "conntab-int.h"
#include "evict.h"
#include "hash-ops.h"
#include "heads.h"
#include "walk.h"

/* Smallest table, for expected = 0. */
#define CT_CHAINED_MIN_BUCKETS	64

struct ct_chained {
	struct conntab base;
	struct conntab_node **buckets;
	uint32_t mask;			/* buckets - 1 */
	struct ct_locks locks;
};

static inline struct ct_chained *ct_chained(struct conntab *t)
{
	return (struct ct_chained *)t;
}

static struct conntab *chained_create(const struct conntab *tmpl,
				      const struct conntab_config *cfg)
{
	size_t nb = ct_buckets_for(cfg->expected, CT_CHAINED_MIN_BUCKETS);
	struct ct_chained *c;

	c = aligned_alloc(CT_CACHELINE, sizeof(*c));
	if (!c)
		goto nomem;
	memset(c, 0, sizeof(*c));
	c->base = *tmpl;
	c->mask = (uint32_t)(nb - 1);
	c->buckets = ct_heads_alloc(nb);
	if (!c->buckets)
		goto nomem;
	if (ct_locks_init(&c->locks, nb))
		goto nomem;
	return &c->base;
nomem:
	if (c)
		ct_heads_free(c->buckets, nb);
	free(c);
	errno = ENOMEM;
	return NULL;
}

static void chained_destroy(struct conntab *t,
			    void (*release)(struct conntab_node *))
{
	struct ct_chained *c = ct_chained(t);

	ct_heads_release(c->buckets, (size_t)c->mask + 1, release);
	ct_locks_fini(&c->locks);
	ct_heads_free(c->buckets, (size_t)c->mask + 1);
	free(c);
}

/*
 * At the cap, evict a sampled node for @n (key absent, checked under the
 * stripe @s we hold): the victim's reservation passes to @n.
 */
static int chained_evict(struct ct_chained *c, struct ct_stripe *s,
			 struct conntab_node *n, ct_rank_fn rank, void *arg,
			 struct conntab_node **evicted)
{
	struct ct_victim v;

	ct_victim_init(&v, &c->base, rank, arg);
	if (!ct_heads_sample(c->buckets, (size_t)c->mask + 1, 1, &c->locks,
			     s, &v))
		return -ENOSPC;
	ct_heads_evict(&v, s);
	ct_chain_push(&c->buckets[n->ct_hash & c->mask], n);
	ct_stripe_add(s, 1, 0);
	*evicted = v.node;
	return 0;
}

/* Insert, or with @rank insert_evict: the two share everything else. */
static int chained_insert_common(struct conntab *t, struct conntab_node *n,
				 struct conntab_node **recycled,
				 ct_rank_fn rank, void *arg,
				 struct conntab_node **evicted)
{
	struct ct_chained *c = ct_chained(t);
	uint32_t h = n->ct_hash;
	struct ct_delta d = { 0 };
	struct ct_stripe *s;
	int err;

	s = ct_lock_hash(&c->locks, h);
	err = ct_chain_insert_locked(t, &c->buckets[h & c->mask], n, recycled,
				     &d);
	ct_stripe_apply(s, &d);
	/* -ENOSPC comes after the key check: the key is absent. */
	if (err == -ENOSPC && rank)
		err = chained_evict(c, s, n, rank, arg, evicted);
	ct_unlock_stripe(s);
	return err;
}

static int chained_insert(struct conntab *t, struct conntab_node *n,
			  struct conntab_node **recycled)
{
	return chained_insert_common(t, n, recycled, NULL, NULL, NULL);
}

static int chained_insert_evict(struct conntab *t, struct conntab_node *n,
				ct_rank_fn rank, void *arg,
				struct conntab_node **evicted)
{
	return chained_insert_common(t, n, NULL, rank, arg, evicted);
}

static inline struct conntab_node *
chained_find(struct conntab *t, uint32_t h, const struct conntab_key *k)
{
	struct ct_chained *c = ct_chained(t);
	uint32_t b = h & c->mask;

	return ct_chain_lookup(&c->buckets[b], b, h, k);
}

static inline void chained_prefetch_bucket(struct conntab *t, uint32_t h)
{
	struct ct_chained *c = ct_chained(t);

	__builtin_prefetch(&c->buckets[h & c->mask]);
}

static inline struct conntab_node *chained_prefetch_first(struct conntab *t,
							   uint32_t h)
{
	struct ct_chained *c = ct_chained(t);
	struct conntab_node *first = ct_rcu_deref(c->buckets[h & c->mask]);

	__builtin_prefetch(ct_is_nulls(first) ? (void *)c : first);
	return first;
}

CT_READ_OPS_DEFINE(chained, chained_find, chained_prefetch_bucket,
		   chained_prefetch_first)

static void chained_prefetch(struct conntab *t,
			     const struct conntab_key *key, uint32_t h)
{
	struct ct_chained *c = ct_chained(t);

	__builtin_prefetch(&c->buckets[h & c->mask], 1);
	__builtin_prefetch(ct_stripe_of(&c->locks, h), 1);
}

static int chained_remove(struct conntab *t, struct conntab_node *n,
			  bool claimed)
{
	struct ct_chained *c = ct_chained(t);
	uint32_t h = n->ct_hash;
	struct ct_delta d = { 0 };
	struct ct_stripe *s;
	int err;

	s = ct_lock_hash(&c->locks, h);
	err = ct_chain_remove_locked(t, &c->buckets[h & c->mask], n, &d,
				     claimed);
	ct_stripe_apply(s, &d);
	ct_unlock_stripe(s);
	return err;
}

static int chained_timewait(struct conntab *t, struct conntab_node *est,
			    struct conntab_node *tw)
{
	struct ct_chained *c = ct_chained(t);
	uint32_t h = est->ct_hash;
	struct ct_delta d = { 0 };
	struct ct_stripe *s;
	int err;

	s = ct_lock_hash(&c->locks, h);
	err = ct_chain_timewait_locked(t, &c->buckets[h & c->mask], est, tw,
				       &d);
	ct_stripe_apply(s, &d);
	ct_unlock_stripe(s);
	return err;
}

static int chained_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	struct ct_chained *c = ct_chained(t);
	struct conntab_node *n, *next;
	size_t i;
	int ret;

	/*
	 * Buckets never move and chains only gain nodes at their head, so a
	 * node present for the whole walk is on its chain's path exactly once.
	 * fn may unlink n: its link stays valid for a grace period, and we
	 * hold the read lock.
	 */
	for (i = 0; i <= c->mask; i++) {
		for (n = ct_rcu_deref(c->buckets[i]); !ct_is_nulls(n); n = next) {
			ct_delay(CT_DP_WALK_READ_NEXT);
			next = ct_rcu_deref(n->ct_next);
			if (state != CT_WALK_ALL &&
			    conntab_node_state(n) != (enum conntab_state)state)
				continue;
			ret = fn(n, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* One pass of a scan over bucket @b (walk.h); its chain never diverts. */
static bool chained_scan_pass(struct conntab *t, size_t b, int state,
			      struct ct_walk_sel *sel)
{
	return ct_walk_sel_chain(sel, &ct_chained(t)->buckets[b], b);
}

static void chained_scan_ahead(struct conntab *t, size_t b)
{
	ct_chain_prefetch(&ct_chained(t)->buckets[b]);
}

/*
 * The walk above needs no selection, but a scan does: between two calls
 * a node can leave its chain and come back at the head, so only an order
 * of its own (bucket, hash, address) keeps it from being visited twice.
 */
static enum ct_scan_end chained_scan(struct conntab *t, uint64_t *pos,
				     bool fresh, size_t budget, ct_walk_fn fn,
				     void *arg, int *fnret)
{
	return ct_walk_buckets(t, pos, (size_t)ct_chained(t)->mask + 1,
			       CT_WALK_ALL, budget, chained_scan_pass,
			       chained_scan_ahead, fn, arg, fnret);
}

static void chained_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_chained *c = ct_chained(t);

	ct_locks_count(&c->locks, &st->entries, &st->timewait);
	st->buckets = (size_t)c->mask + 1;
	st->memory = sizeof(*c) + ct_heads_memory(st->buckets) +
		     ct_locks_memory(&c->locks);
	st->max_depth = ct_heads_max_depth(c->buckets, st->buckets, 1,
					   &c->locks);
	st->resizes = 0;
}

const struct conntab_ops ct_chained_ops = {
	.create		= chained_create,
	.destroy	= chained_destroy,
	.insert		= chained_insert,
	.insert_evict	= chained_insert_evict,
	.prefetch	= chained_prefetch,
	.read		= CT_READ_OPS(chained),
	.remove		= chained_remove,
	.timewait	= chained_timewait,
	.walk		= chained_walk,
	.scan		= chained_scan,
	.stats		= chained_stats,
};
