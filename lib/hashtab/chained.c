/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_CHAINED: a fixed power-of-two array of buckets of tagged slots.
 *
 * Layout (slots.h): a bucket is a cache line of six node pointers, a tag
 * byte for each and an overflow chain, at 2-4 nodes a bucket at the
 * sizing hint (16-32 bytes an entry). A successful lookup touches the
 * bucket's line and the node's line (pointer, hash and key share one
 * line): Dumazet's two cache misses, also for the keys that a chain
 * would have put second or third, which is what bursts of lookups wait
 * for.
 *
 * Writers lock the stripe of the key's hash (ct_locks); since the bucket
 * count is a power of two no smaller than the stripe count, one stripe
 * covers whole buckets, so a writer holding it owns every slot and chain
 * it touches. TIME_WAIT is a state on the node: conntab_timewait() either
 * flips the state in place or replaces the node in its slot or chain with
 * one pointer store. Nodes never move (slots.h S2): the nulls check in
 * the chain walk is one compare at the end of a miss and keeps the chain
 * code shared with the backends where they do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chain-ops.h"
#include "../conntab-int.h"
#include "../evict.h"
#include "hash-ops.h"
#include "heads.h"
#include "../mem.h"
#include "slots.h"
#include "walk.h"

struct ct_chained {
	struct conntab base;
	struct ct_slots *buckets;
	uint32_t mask;			/* buckets - 1 */
	struct ct_locks locks;
};

static inline struct ct_chained *ct_chained(struct conntab *t)
{
	return (struct ct_chained *)t;
}

static inline struct ct_slots *chained_bucket(struct ct_chained *c,
					      uint32_t h)
{
	return &c->buckets[h & c->mask];
}

static size_t chained_memory(size_t nb)
{
	return nb * sizeof(struct ct_slots);
}

static struct conntab *chained_create(const struct conntab *tmpl,
				      const struct conntab_config *cfg)
{
	size_t i, nb = ct_slots_buckets_for(cfg->expected);
	struct ct_chained *c;

	c = aligned_alloc(CT_CACHELINE, sizeof(*c));
	if (!c)
		goto nomem;
	memset(c, 0, sizeof(*c));
	c->base = *tmpl;
	c->mask = (uint32_t)(nb - 1);
	/* Zeroed: every slot free (S1). */
	c->buckets = ct_array_alloc(chained_memory(nb));
	if (!c->buckets)
		goto nomem;
	for (i = 0; i < nb; i++)
		c->buckets[i].over = ct_nulls(i);
	if (ct_locks_init(&c->locks, nb))
		goto nomem;
	return &c->base;
nomem:
	if (c && c->buckets)
		ct_array_free(c->buckets, chained_memory(nb));
	free(c);
	errno = ENOMEM;
	return NULL;
}

static void chained_release(struct conntab_node *n,
			    void (*release)(struct conntab_node *))
{
	ct_node_release(n);
	if (release)
		release(n);	/* may free n */
}

static void chained_destroy(struct conntab *t,
			    void (*release)(struct conntab_node *))
{
	struct ct_chained *c = ct_chained(t);
	struct conntab_node *n, *next;
	struct ct_slots *b;
	size_t i, j;

	for (i = 0; i <= c->mask; i++) {
		b = &c->buckets[i];
		for (j = 0; j < CT_SLOTS; j++)
			if (b->slot[j])
				chained_release(b->slot[j], release);
		for (n = b->over; !ct_is_nulls(n); n = next) {
			next = n->ct_next;
			chained_release(n, release);
		}
	}
	ct_locks_fini(&c->locks);
	ct_array_free(c->buckets, chained_memory((size_t)c->mask + 1));
	free(c);
}

/*
 * Insert @n (claimed; key, hash and state set) into its bucket @b, or
 * with @recycled non-NULL put it in the place of a TIME_WAIT node of the
 * same key in one store (a reader finds one or the other).
 */
static inline __attribute__((always_inline)) int
chained_insert_locked(struct conntab *t, struct ct_slots *b, uintptr_t id,
		      struct conntab_node *n, struct conntab_node **recycled,
		      struct ct_delta *d, const struct ct_slots_tagops to)
{
	struct conntab_node **pprev, *old;
	size_t len;
	int err, slot;

	old = ct_slots_find_locked_t(b, n->ct_hash, &n->ct_key, &slot, &pprev,
				     &len, to);
	if (old) {
		if ((err = ct_insert_met_locked(t, old, recycled)))
			return err;
		ct_slots_replace(b, id, slot, pprev, old, n);
		ct_insert_recycled(old, recycled, d);
		return 0;
	}
	/* After the key check: a duplicate is -EEXIST, not -ENOSPC. */
	if (!ct_reserve(t, n))
		return -ENOSPC;
	/*
	 * n is private until here. The path it is on: its slot, or the
	 * overflow chain, which a lookup of its key walks (lib/probes.h).
	 */
	d->chain = ct_slots_put_t(b, id, n, to) ? 1 : len + 1;
	d->entries++;
	ct_probe_chain(t, n->ct_hash, d->chain);
	return 0;
}

/*
 * Sample source of an eviction: the slots and chain of bucket @b, a unit
 * for its line, a unit for each node ranked or walked (evict.h). A slot's
 * position is taken or left before its node is read.
 */
static inline __attribute__((always_inline)) void
chained_sample_bucket(void *ctx, size_t b, struct ct_stripe *s,
		      struct ct_victim *v)
{
	struct ct_slots *bk = &((struct ct_chained *)ctx)->buckets[b];
	unsigned int i;

	ct_victim_spend(v);
	for (i = 0; i < CT_SLOTS && !ct_victim_done(v); i++) {
		if (!bk->slot[i] || !ct_victim_take(v))
			continue;
		ct_victim_walk(v);
		ct_victim_offer(v, bk->slot[i], &bk->over, s, &s->lock);
	}
	ct_victim_chain(v, &bk->over, s, &s->lock);
}

/* A hint (heads.h): the bucket's slotted nodes and its chain's first. */
static void chained_prefetch_nodes(struct ct_slots *b)
{
	unsigned int i;

	for (i = 0; i < CT_SLOTS; i++) {
		struct conntab_node *n = __atomic_load_n(&b->slot[i],
							 __ATOMIC_RELAXED);

		if (n)
			__builtin_prefetch(n);
	}
	ct_chain_prefetch(&b->over);
}

static inline __attribute__((always_inline)) void
chained_sample_ahead(void *ctx, size_t b)
{
	chained_prefetch_nodes(&((struct ct_chained *)ctx)->buckets[b]);
}

/*
 * At the cap, evict a sampled node for @n (key absent, checked under the
 * stripe @s we hold): the victim's reservation passes to @n. -ENOSPC with
 * v->busy: the sample met another writer step; the caller may try again.
 */
static int chained_evict(struct ct_chained *c, struct ct_stripe *s,
			 struct conntab_node *n, struct ct_victim *v,
			 struct conntab_node **evicted)
{
	struct ct_stripe *vs;

	ct_victim_thin_table(v, &c->base, (size_t)c->mask + 1);
	if (!ct_stripes_sample((size_t)c->mask + 1, &c->locks, s,
			       n->ct_hash & c->mask, v, chained_sample_bucket,
			       chained_sample_ahead, c))
		return -ENOSPC;
	vs = v->owner;
	ct_delay(CT_DP_EVICT_UNLINK);
	ct_slots_unlink(chained_bucket(c, v->node->ct_hash), v->node);
	ct_node_release(v->node);
	ct_stripe_add(vs, -1, -(v->node->ct_state == CONNTAB_TIMEWAIT));
	ct_victim_unlock(v, &s->lock);
	ct_slots_put(chained_bucket(c, n->ct_hash), n->ct_hash & c->mask, n);
	ct_stripe_add(s, 1, 0);
	*evicted = v->node;
	return 0;
}

/*
 * Insert, or with @rank insert_evict: the two share everything else,
 * inlined into each so that a plain insert carries no eviction's
 * arguments and branches.
 */
static inline __attribute__((always_inline)) int
chained_insert_common(struct conntab *t, struct conntab_node *n, uint32_t h,
		      struct conntab_node **recycled, ct_rank_fn rank,
		      void *arg, struct conntab_node **evicted,
		      const struct ct_slots_tagops to)
{
	struct ct_chained *c = ct_chained(t);
	struct ct_victim v;
	struct ct_stripe *s;
	unsigned int tries = 0;
	int err;

	for (;;) {
		struct ct_delta d = { 0 };

		s = ct_lock_hash(&c->locks, h);
		err = chained_insert_locked(t, chained_bucket(c, h),
					    h & c->mask, n, recycled, &d, to);
		ct_stripe_apply(s, &d);
		/* -ENOSPC comes after the key check: the key is absent. */
		if (err == -ENOSPC && rank) {
			ct_victim_init(&v, t, rank, arg);
			v.self = n->ct_peer;
			v.tries = tries;
			err = chained_evict(c, s, n, &v, evicted);
		}
		ct_unlock_stripe(s);
		/* -ENOSPC after a sample another writer crossed: again. */
		if (err != -ENOSPC || !rank || !ct_evict_again(&v, &tries))
			return err;
	}
}

/*
 * The rest of chained_insert_key() once another writer step held a node
 * of @n's key (CT_ECLAIMED): wait for it with no lock held, and try
 * again. Out of line, so that the insert's path keeps no retry state in
 * its registers; the portable tag match, whose answer is the SSE one's.
 */
static __attribute__((noinline)) int
chained_insert_wait(struct conntab *t, struct ct_slots *b, uintptr_t id,
		    struct ct_stripe *s, struct conntab_node *n)
{
	unsigned int spins = 0;
	int err;

	do {
		struct ct_delta d = { 0 };

		ct_spin_pause(&spins);
		ct_spin_lock(&s->lock);
		err = chained_insert_locked(t, b, id, n, NULL, &d,
					    CT_SLOTS_TAGOPS);
		ct_stripe_apply(s, &d);
		ct_unlock_stripe(s);
	} while (err == CT_ECLAIMED);
	return err;
}

/*
 * conntab_insert() for a key of hash @h, arguments checked: the front
 * end's claim (conntab-int.h) and this backend's insert in one function,
 * the bucket's and the stripe's lines prefetched before the claim's
 * compare-and-swap as the front end's path does. As there, a writer
 * step that holds a node of the key (CT_ECLAIMED) is waited for with no
 * lock held (chained_insert_wait()), and a failed insert releases @n.
 */
static inline __attribute__((always_inline)) int
chained_insert_key(struct conntab *t, struct conntab_node *n,
		   const struct conntab_key *key, uint32_t h,
		   const struct ct_slots_tagops to)
{
	struct ct_chained *c = ct_chained(t);
	/*
	 * The bucket, its id and its stripe, computed once, before the
	 * claim: the table is a fixed array (nothing here moves), and
	 * after the claim's barrier they would be loaded again.
	 */
	struct ct_slots *b = chained_bucket(c, h);
	struct ct_stripe *s = ct_stripe_of(&c->locks, h);
	uintptr_t id = h & c->mask;
	struct ct_delta d = { 0 };
	int err;

	__builtin_prefetch(b, 1);
	__builtin_prefetch(s, 1);
	if (!ct_node_claim_key(n, t, key, h))
		return -EBUSY;
	ct_spin_lock(&s->lock);
	err = chained_insert_locked(t, b, id, n, NULL, &d, to);
	/* No TIME_WAIT node recycled (@recycled NULL): d.timewait is 0. */
	ct_stripe_add(s, d.entries, 0);
	ct_unlock_stripe(s);
	if (__builtin_expect(err == CT_ECLAIMED, 0))
		err = chained_insert_wait(t, b, id, s, n);
	if (err)
		ct_node_release(n);
	return err;
}

static int chained_insert_siphash(struct conntab *t, struct conntab_node *n,
				  const struct conntab_key *key)
{
	return chained_insert_key(t, n, key, ct_hash_sip(&t->secret, key),
				  CT_SLOTS_TAGOPS);
}

#ifdef CT_HAVE_AES
static CT_AES_TARGET int chained_insert_aes(struct conntab *t,
					    struct conntab_node *n,
					    const struct conntab_key *key)
{
	/* The SSE tag match of the lookups (slots.h), in the writer too. */
	return chained_insert_key(t, n, key, ct_hash_aes(&t->aes, key),
				  CT_SLOTS_TAGOPS_SSE);
}
#endif

static int chained_insert(struct conntab *t, struct conntab_node *n,
			  struct conntab_node **recycled)
{
	return chained_insert_common(t, n, n->ct_hash, recycled, NULL, NULL,
				     NULL, CT_SLOTS_TAGOPS);
}

static int chained_insert_evict(struct conntab *t, struct conntab_node *n,
				ct_rank_fn rank, void *arg,
				struct conntab_node **evicted)
{
	return chained_insert_common(t, n, n->ct_hash, NULL, rank, arg,
				     evicted, CT_SLOTS_TAGOPS);
}

/* Always inlined into the lookups: a tail call cost five instructions. */
static inline __attribute__((always_inline)) struct conntab_node *
chained_find(struct conntab *t, uint32_t h, const struct conntab_key *k)
{
	struct ct_chained *c = ct_chained(t);

	return ct_slots_find(chained_bucket(c, h), h & c->mask, h, k);
}

static inline void chained_prefetch_bucket(struct conntab *t, uint32_t h)
{
	__builtin_prefetch(chained_bucket(ct_chained(t), h));
}

static inline struct conntab_node *chained_prefetch_first(struct conntab *t,
							   uint32_t h)
{
	return ct_slots_first_node(chained_bucket(ct_chained(t), h), h);
}

#ifdef CT_SLOTS_HAVE_SSE
/* The AES pair's steps: the same, with the SSE tag match (slots.h). */
static inline CT_AES_TARGET __attribute__((always_inline))
struct conntab_node *
chained_find_sse(struct conntab *t, uint32_t h, const struct conntab_key *k)
{
	struct ct_chained *c = ct_chained(t);

	return ct_slots_find_sse(chained_bucket(c, h), h & c->mask, h, k);
}

static inline CT_AES_TARGET __attribute__((always_inline))
struct conntab_node *
chained_prefetch_first_sse(struct conntab *t, uint32_t h)
{
	return ct_slots_first_node_sse(chained_bucket(ct_chained(t), h), h);
}
#else
# define chained_find_sse		chained_find
# define chained_prefetch_first_sse	chained_prefetch_first
#endif

CT_READ_OPS_DEFINE2(chained, chained_find, chained_prefetch_bucket,
		    chained_prefetch_first, chained_find_sse,
		    chained_prefetch_first_sse)

static void chained_prefetch(struct conntab *t,
			     const struct conntab_key *key, uint32_t h)
{
	struct ct_chained *c = ct_chained(t);

	__builtin_prefetch(chained_bucket(c, h), 1);
	__builtin_prefetch(ct_stripe_of(&c->locks, h), 1);
}

static inline __attribute__((always_inline)) int
chained_remove_inline(struct conntab *t, struct conntab_node *n, bool claimed)
{
	struct ct_chained *c = ct_chained(t);
	uint32_t h = n->ct_hash;
	struct ct_delta d = { 0 };
	struct ct_stripe *s;
	int err;

	s = ct_lock_hash(&c->locks, h);
	/* Recheck under the lock: a racing remove may have won. */
	ct_delay(CT_DP_CHAIN_LOCK_REMOVE);
	err = ct_node_check_locked(n, t, claimed);
	if (!err && !ct_slots_unlink(chained_bucket(c, h), n))
		err = -ENOENT;
	if (!err)
		ct_removed_locked(t, n, &d);
	ct_stripe_apply(s, &d);
	ct_unlock_stripe(s);
	return err;
}

static int chained_remove(struct conntab *t, struct conntab_node *n,
			  bool claimed)
{
	return chained_remove_inline(t, n, claimed);
}

static int chained_remove_single(struct conntab *t, struct conntab_node *n)
{
	int err = chained_remove_inline(t, n, false);

	return err == CT_ECLAIMED ? ct_remove_wait(t, n) : err;
}

static int chained_timewait(struct conntab *t, struct conntab_node *est,
			    struct conntab_node *tw)
{
	struct ct_chained *c = ct_chained(t);
	uint32_t h = est->ct_hash;
	struct ct_slots *b = chained_bucket(c, h);
	struct conntab_node **pprev = NULL;
	struct ct_delta d = { 0 };
	struct ct_stripe *s;
	int err, slot;

	s = ct_lock_hash(&c->locks, h);
	ct_delay(CT_DP_CHAIN_LOCK_TIMEWAIT);
	err = ct_node_check_locked(est, t, false);
	if (err)
		goto out;
	slot = ct_slots_index(b, est);
	if (slot < 0 && !(pprev = ct_chain_pprev(&b->over, est))) {
		err = -ENOENT;
		goto out;
	}
	if (est->ct_state != CONNTAB_ESTABLISHED) {
		err = -EINVAL;
		goto out;
	}
	if (tw == est)
		ct_timewait_flip(est);
	else
		ct_slots_replace(b, h & c->mask, slot, pprev, est, tw);
	ct_timewait_done(est, tw, &d);
out:
	ct_stripe_apply(s, &d);
	ct_unlock_stripe(s);
	return err;
}

/* Call @fn for @n if it is in @state (or CT_WALK_ALL). */
static inline int chained_visit(struct conntab_node *n, int state,
				ct_walk_fn fn, void *arg)
{
	if (state != CT_WALK_ALL &&
	    conntab_node_state(n) != (enum conntab_state)state)
		return 0;
	return fn(n, arg);
}

static int chained_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	struct ct_chained *c = ct_chained(t);
	struct conntab_node *n, *next;
	struct ct_slots *b;
	size_t i, j;
	int ret;

	/*
	 * Buckets never move, nodes never leave their slot or chain (S2)
	 * and chains only gain nodes at their head, so a node present for
	 * the whole walk is on its bucket's path exactly once. fn may
	 * unlink n: a chain's link stays valid for a grace period, and we
	 * hold the read lock; a slot is read again for the next node.
	 */
	for (i = 0; i <= c->mask; i++) {
		b = &c->buckets[i];
		for (j = 0; j < CT_SLOTS; j++) {
			n = ct_rcu_deref(b->slot[j]);
			if (n && (ret = chained_visit(n, state, fn, arg)))
				return ret;
		}
		for (n = ct_rcu_deref(b->over); !ct_is_nulls(n); n = next) {
			ct_delay(CT_DP_WALK_READ_NEXT);
			next = ct_rcu_deref(n->ct_next);
			if ((ret = chained_visit(n, state, fn, arg)))
				return ret;
		}
	}
	return 0;
}

/* One pass of a scan over bucket @b (walk.h); nothing here moves (S2). */
static bool chained_scan_pass(struct conntab *t, size_t b, int state,
			      struct ct_walk_sel *sel)
{
	struct ct_slots *bk = &ct_chained(t)->buckets[b];
	struct conntab_node *n;
	unsigned int i;

	for (i = 0; i < CT_SLOTS; i++)
		if ((n = ct_rcu_deref(bk->slot[i])))
			ct_walk_sel_offer(sel, n);
	return ct_walk_sel_chain(sel, &bk->over, b);
}

static void chained_scan_ahead(struct conntab *t, size_t b)
{
	chained_prefetch_nodes(&ct_chained(t)->buckets[b]);
}

/*
 * The walk above needs no selection, but a scan does: between two calls
 * a node can leave its bucket and come back in another slot, so only an
 * order of its own (bucket, hash, address) keeps it from being visited
 * twice.
 */
static enum ct_scan_end chained_scan(struct conntab *t, uint64_t *pos,
				     bool fresh, size_t budget, ct_walk_fn fn,
				     void *arg, int *fnret)
{
	return ct_walk_buckets(t, pos, (size_t)ct_chained(t)->mask + 1,
			       CT_WALK_ALL, budget, chained_scan_pass,
			       chained_scan_ahead, fn, arg, fnret);
}

/* The most nodes a bucket holds, each stripe counted under its lock. */
static size_t chained_max_depth(struct ct_chained *c)
{
	size_t b, len, depth = 0, nb = (size_t)c->mask + 1;
	uint32_t sidx;

	for (sidx = 0; sidx <= c->locks.mask; sidx++) {
		struct ct_stripe *s = &c->locks.stripe[sidx];

		ct_spin_lock(&s->lock);
		for (b = sidx; b < nb; b += (size_t)c->locks.mask + 1) {
			len = ct_slots_len(&c->buckets[b]);
			if (len > depth)
				depth = len;
		}
		ct_unlock_stripe(s);
	}
	return depth;
}

static void chained_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_chained *c = ct_chained(t);

	ct_locks_count(&c->locks, &st->entries, &st->timewait);
	st->buckets = (size_t)c->mask + 1;
	st->memory = sizeof(*c) + chained_memory(st->buckets) +
		     ct_locks_memory(&c->locks);
	st->max_depth = chained_max_depth(c);
	st->resizes = 0;
}

const struct conntab_ops ct_chained_ops = {
	.create		= chained_create,
	.destroy	= chained_destroy,
	.insert		= chained_insert,
	.insert_evict	= chained_insert_evict,
	.prefetch	= chained_prefetch,
	.read		= CT_READ_OPS(chained),
	.lookup_hashed	= chained_find,
	.prefetch_hashed = chained_prefetch_bucket,
	.remove		= chained_remove,
	/* Chained's writers need no counted thread: nothing to ask. */
	.insert_key	= {
		[CONNTAB_HASH_SIPHASH] = chained_insert_siphash,
#ifdef CT_HAVE_AES
		[CONNTAB_HASH_AES] = chained_insert_aes,
#endif
	},
	.remove_single	= chained_remove_single,
	.timewait	= chained_timewait,
	.walk		= chained_walk,
	.scan		= chained_scan,
	.stats		= chained_stats,
};
