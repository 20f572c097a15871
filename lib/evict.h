/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sampled eviction (conntab_insert_evict()), shared by the hash backends.
 *
 * When an insert finds the table at max_entries, the backend offers the
 * application's rank function a sample of nodes and unlinks the
 * best-ranked one in the place of the newcomer, under the newcomer's
 * lock. Where the sample comes from is the backend's choice; what it must
 * be is the same everywhere:
 *
 *  - fair: every node about equally likely to be a candidate, and the
 *    victim, among equal ranks, a uniform choice among them, so that what
 *    eviction leaves behind is distributed as random inserts would leave
 *    it. The places (buckets, chains) are visited from the newcomer's own
 *    (where an eviction changes no depth) on through a run from a random
 *    start, and each node of a place visited is taken into the sample
 *    with probability q = 1 / (nodes per place), clamped to [1/8, 1]
 *    (ct_victim_thin()): so a node's chance to be a candidate does not
 *    depend on how many share its place, where taking whole places would
 *    give the nodes of a deep place fewer evictions each than their share
 *    (a long run of evicting inserts then deepened the tails: chained's
 *    deepest bucket went from 15-18 at the fill to 33-45). Ties go to a
 *    uniform choice (reservoir), not the first offered;
 *  - chosen without regard to the keys' values: which places are visited
 *    depends on the random start and the table's shape, and a node's
 *    place is given by the keyed hash, which nobody without the secret
 *    can steer;
 *  - bounded, whatever the keys: CT_EVICT_SAMPLE nodes are ranked, no
 *    more (ct_victim_done()), and at most CT_EVICT_BUDGET units of work
 *    (a place read, a node walked past or ranked: a line each) are spent
 *    thinning; past the budget, every node met is taken, so the sample
 *    still holds CT_EVICT_SAMPLE nodes where the table does, and no
 *    sample walks more than CT_EVICT_WALK nodes, those it cannot take
 *    (a pair's b half, a claimed node) included. A bucket of 20,000
 *    nodes (a known secret) costs 8 rank calls: tests/test-evict-sample
 *    builds it. The bound is per sample: an insert that tries again
 *    (below) samples again. What it leaves out is the empty places a
 *    sample passes, a line each, where the nodes are far fewer than the
 *    places (a cap far below the sizing hint), as any sample must;
 *  - deadlock-free: the newcomer's lock is held throughout, every other
 *    lock is only try-locked, for a short spin (CT_EVICT_SPIN attempts,
 *    doubled on each try of the same insert up to 256 times that:
 *    writers hold a lock for a few hundred nanoseconds), and one still
 *    busy after it is skipped; at most one of those locks is kept, the
 *    one that holds the best victim so far. A sample that found no
 *    candidate but skipped a busy lock or a node another writer step
 *    held says so (v->busy): the backend drops its locks and tries the
 *    insert again (ct_evict_again()), since that writer may be about to
 *    make room, or to leave a node the sample can take; so does one that
 *    finds room made meanwhile.
 *
 * The victim's reservation (ct_reserve) passes to the newcomer, so the
 * entry count never exceeds max_entries, not even for an instant.
 */
#ifndef CT_EVICT_H
#define CT_EVICT_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashtab/chain.h"
#include "conntab-int.h"

/* A random number for the sample's start (not secret: see above). */
uint64_t ct_evict_random(void);

/* Nodes a sample ranks: at most, and as many where the table holds them. */
#define CT_EVICT_SAMPLE	8
/*
 * Work units of a sample: a place (bucket line, chain head) read, a node
 * walked past or ranked, a unit each. Past this much the sample stops
 * thinning and takes every node it meets; it stops once it has ranked
 * CT_EVICT_SAMPLE nodes or walked CT_EVICT_WALK.
 */
#define CT_EVICT_BUDGET	(16 * CT_EVICT_SAMPLE)
/*
 * Nodes a sample may walk, also past its budget: the nodes it cannot take
 * (a pair's b half, a claimed node) count too, so that a bucket of them
 * cannot make one sample walk without end.
 */
#define CT_EVICT_WALK	(2 * CT_EVICT_BUDGET)
/*
 * The newcomer's own place gives at most CT_EVICT_OWN of the sample,
 * drawn uniformly from the first CT_EVICT_OWN_WALK nodes it holds
 * (ct_victim_own_begin()).
 */
#define CT_EVICT_OWN		(CT_EVICT_SAMPLE / 2)
#define CT_EVICT_OWN_WALK	(CT_EVICT_BUDGET / 4)
/* Whole tries of an evicting insert whose sample another writer crossed. */
#define CT_EVICT_RETRIES	1000
/* Attempts at another lock before the sample goes on without it. */
#define CT_EVICT_SPIN	256u

/* The best victim of a sample so far, and the lock that holds it. */
struct ct_victim {
	const struct conntab *t;	/* the table (its claim mark) */
	ct_rank_fn rank;
	void *arg;
	struct conntab_node *node;	/* NULL: none ranked >= 0 yet */
	struct conntab_node **head;	/* the chain node is on */
	void *owner;			/* what counts it (stripe, segment) */
	uint32_t *lock;			/* held: the newcomer's, or kept */
	long best;
	size_t seen;			/* nodes offered to rank */
	unsigned int work;		/* units spent (CT_EVICT_BUDGET) */
	unsigned int walked;		/* nodes walked (CT_EVICT_WALK) */
	const struct conntab_node *self; /* the newcomer's linked half */
	unsigned int ties;		/* candidates ranked best so far */
	uint32_t thin;			/* take a node if its draw < thin */
	bool busy;			/* a lock or a claimed node skipped */
	unsigned int tries;		/* earlier tries of this insert */
	bool scan;			/* over budget with nothing: take all */
	uint64_t rnd;			/* random bits for draws, ... */
	unsigned int rnd_left;		/* ... 16 at a time */
	bool own;			/* in the newcomer's own place */
	bool again;			/* sweeping: skip what was ranked */
	unsigned int own_n;		/* its nodes met so far */
	void *own_owner;		/* what counts them */
	uint32_t *own_lock;		/* the newcomer's lock */
	struct {
		struct conntab_node *node;
		struct conntab_node **head;
	} pick[CT_EVICT_OWN];		/* a uniform draw of them */
	const struct conntab_node *ranked[CT_EVICT_SAMPLE]; /* [0, seen) */
};

/* 16 random bits from the sample's stream. */
static inline uint32_t ct_victim_draw(struct ct_victim *v)
{
	uint32_t r;

	if (!v->rnd_left) {
		v->rnd = ct_evict_random();
		v->rnd_left = 4;
	}
	r = (uint32_t)v->rnd & 0xffff;
	v->rnd >>= 16;
	v->rnd_left--;
	return r;
}

static inline void ct_victim_init(struct ct_victim *v,
				  const struct conntab *t, ct_rank_fn rank,
				  void *arg)
{
	v->t = t;
	v->rank = rank;
	v->arg = arg;
	v->node = NULL;
	v->head = NULL;
	v->owner = NULL;
	v->lock = NULL;
	v->best = -1;
	v->seen = 0;
	v->work = 0;
	v->walked = 0;
	v->self = NULL;
	v->ties = 0;
	v->thin = 0x10000;
	v->busy = false;
	v->tries = 0;
	v->scan = false;
	v->rnd_left = 0;
	v->own = false;
	v->again = false;
	v->own_n = 0;
}

/*
 * Set q for a table holding @nodes in @places: 1 / (nodes per place),
 * clamped to [1/8, 1] (1/8: a sample of 8 within the budget's walks of
 * an overloaded table's chains), in 16-bit fixed point.
 */
static inline void ct_victim_thin(struct ct_victim *v, size_t nodes,
				  size_t places)
{
	size_t per = places ? nodes / places : 1;

	if (per <= 1)
		v->thin = 0x10000;
	else if (per >= 8)
		v->thin = 0x10000 / 8;
	else
		v->thin = (uint32_t)(0x10000 / per);
}

/*
 * The same for table @t at its cap, over @places: its nodes are its
 * max_entries and a rider half for each pair (which takes no
 * reservation of its own).
 */
static inline void ct_victim_thin_table(struct ct_victim *v,
					const struct conntab *t, size_t places)
{
	ct_victim_thin(v, t->max_entries +
			  __atomic_load_n(&t->pairs, __ATOMIC_RELAXED),
		       places);
}

/*
 * Is the sample over? Once it has ranked CT_EVICT_SAMPLE nodes, or walked
 * CT_EVICT_WALK. Past its budget it takes every node it meets (no more
 * thinning), so that it still ranks CT_EVICT_SAMPLE where the table holds
 * them.
 */
static inline bool ct_victim_done(struct ct_victim *v)
{
	if (v->own)
		return v->walked >= CT_EVICT_OWN_WALK;
	if (v->seen >= CT_EVICT_SAMPLE || v->walked >= CT_EVICT_WALK)
		return true;
	if (v->work >= CT_EVICT_BUDGET)
		v->scan = true;
	return false;
}

/*
 * The newcomer's own place (bucket, chain) is sampled first, but gives at
 * most half the sample: a place as deep as the sample would fill it, and
 * the victim's key is often the next newcomer (a flow that comes back, or
 * a cache that re-admits what it evicted), which lands in the same place:
 * every later sample would stay there, and the rest of the table would
 * never be offered (tests/test-evict-sample.c, evict_fair, found it on
 * exthash, one chain a place: about 1 table in 100 had a chain of 8).
 *
 * Which of its nodes: each taken with probability q, as anywhere else
 * (so that a place's depth neither grows nor shrinks by being the
 * newcomer's: tests/test-evict-sample.c, evict_depth), and of those taken,
 * if more than CT_EVICT_OWN, a uniform draw (reservoir), not the first
 * CT_EVICT_OWN: those would be the same slots each time, and a node
 * behind them (a chain's) never a candidate while the place stays deep,
 * as in a sparse table (q = 1) whose nodes share one bucket
 * (tests/test-slots.c, slots-worst, found it). The place is walked up to
 * CT_EVICT_OWN_WALK nodes. Nothing is ranked while it is walked; the draw
 * is ranked at ct_victim_own_end(), under the newcomer's lock, held
 * throughout, so its nodes are still linked then. Between the two calls
 * the backend offers the place's nodes as it offers any (ct_victim_take(),
 * ct_victim_offer()), and ct_victim_done() ends the walk.
 */
static inline void ct_victim_own_begin(struct ct_victim *v, void *owner,
				       uint32_t *lock)
{
	v->own = true;
	v->own_n = 0;
	v->own_owner = owner;
	v->own_lock = lock;
}

/* Spend a unit: a place read. */
static inline void ct_victim_spend(struct ct_victim *v)
{
	v->work++;
}

/* Spend a unit on a node: walked past, or read to be ranked. */
static inline void ct_victim_walk(struct ct_victim *v)
{
	v->work++;
	v->walked++;
}

/* Take the node at this position into the sample (probability q)? */
static inline bool ct_victim_take(struct ct_victim *v)
{
	return v->scan || v->thin > 0xffff || ct_victim_draw(v) < v->thin;
}

/* The k-th node met in the own place: kept with probability CT_EVICT_OWN / k. */
static inline void ct_victim_own_meet(struct ct_victim *v,
				      struct conntab_node *n,
				      struct conntab_node **head)
{
	unsigned int k = ++v->own_n, j;

	if (k <= CT_EVICT_OWN) {
		j = k - 1;
	} else {
		j = (unsigned int)((ct_victim_draw(v) * k) >> 16); /* [0, k) */
		if (j >= CT_EVICT_OWN)
			return;
	}
	v->pick[j].node = n;
	v->pick[j].head = head;
}

/* Was @n offered to rank already (a sweep's question)? */
static inline bool ct_victim_ranked(const struct ct_victim *v,
				    const struct conntab_node *n)
{
	size_t i;

	for (i = 0; i < v->seen && i < CT_EVICT_SAMPLE; i++)
		if (v->ranked[i] == n)
			return true;
	return false;
}

/*
 * A pair is one candidate, offered through its `a`; to be kept as the
 * best victim it is claimed whole (P1: its halves stay linked, and no
 * other writer unlinks either, until this eviction ends), with
 * compare-and-swaps that fail rather than wait (P3). @t: the table.
 * False: another writer step holds a half; leave the pair out.
 */
static inline bool ct_victim_claim_pair(struct conntab_node *a,
					const struct conntab *t)
{
	if (!ct_node_claim_linked(a, t))
		return false;
	if (ct_node_claim_linked(a->ct_peer, t))
		return true;
	ct_node_unclaim(a, t);
	return false;
}

/* A kept pair that a better candidate displaced: its claims end. */
static inline void ct_victim_drop_pair(struct conntab_node *a,
				       const struct conntab *t)
{
	if (a && a->ct_peer) {
		ct_node_unclaim(a->ct_peer, t);
		ct_node_unclaim(a, t);
	}
}

/*
 * Offer @n (its lock @lock held; @owner counts it; @head the chain it is
 * on, if any): keep it if its rank is the largest non-negative yet, or
 * ties it (a uniform choice among the ties: the k-th tie replaces the
 * kept one with probability 1/k). Claimed nodes are another writer
 * step's (P2) and left out; a pair's b half too, the pair being offered
 * through its a. The victim chosen, if a pair, is claimed whole: the
 * backend unlinks a (ct_victim_unlink()), and the front end the b half
 * (lib/conntab.c).
 */
static inline void ct_victim_offer(struct ct_victim *v, struct conntab_node *n,
				   struct conntab_node **head, void *owner,
				   uint32_t *lock)
{
	const struct conntab *t = v->t;
	long r;

	/* The newcomer's own half (a pair insert's first link) is no one's. */
	if (ct_node_pair_b(n) || n == v->self)
		return;
	if (v->own) {
		ct_victim_own_meet(v, n, head);
		return;
	}
	if (v->again && ct_victim_ranked(v, n))
		return;		/* once: rank is told of each node once */
	if (__atomic_load_n(&n->ct_owner, __ATOMIC_RELAXED) != t) {
		v->busy = true;		/* another step's: may leave room */
		return;
	}
	r = v->rank(n, v->arg);
	if (v->seen < CT_EVICT_SAMPLE)
		v->ranked[v->seen] = n;
	v->seen++;
	if (r < 0 || (v->node && r < v->best))
		return;
	if (v->node && r == v->best &&
	    ct_victim_draw(v) * (v->ties + 1) >= 0x10000)
		goto tie;	/* keep the one we have: 1 - 1/(ties + 1) */
	if (n->ct_peer && !ct_victim_claim_pair(n, t)) {
		v->busy = true;
		return;
	}
	ct_victim_drop_pair(v->node, t);
	if (!v->node || r > v->best)
		v->ties = 0;
	v->node = n;
	v->head = head;
	v->owner = owner;
	v->lock = lock;
	v->best = r;
tie:
	v->ties++;
}

/*
 * The own place walked: rank the draw (see ct_victim_own_begin()). If the
 * rest of the table then gives too few (every other place visited, as in
 * a table whose nodes a known secret put in one bucket, or a small one
 * whose nodes thinning left out), the backend visits every place again
 * after ct_victim_sweep(), its own included, so that the sample still
 * holds CT_EVICT_SAMPLE nodes where the table does.
 */
static inline void ct_victim_own_end(struct ct_victim *v)
{
	unsigned int i, k = v->own_n < CT_EVICT_OWN ? v->own_n : CT_EVICT_OWN;

	v->own = false;
	for (i = 0; i < k; i++)
		ct_victim_offer(v, v->pick[i].node, v->pick[i].head,
				v->own_owner, v->own_lock);
}

/*
 * The backend visited every place and the sample is short of
 * CT_EVICT_SAMPLE: may it visit them all once more, taking every node it
 * has not ranked yet (the own place's included)? Yes unless the sample
 * walked all it may. Where the budget was spent, the first visit took
 * every node past that point already; where it was not, the table is
 * small (fewer places and nodes than CT_EVICT_BUDGET), and thinning left
 * nodes out: this keeps the promise of CT_EVICT_SAMPLE nodes ranked
 * wherever the table holds them, at a second visit of a small table.
 */
static inline bool ct_victim_sweep(struct ct_victim *v)
{
	if (v->walked >= CT_EVICT_WALK)
		return false;
	v->again = true;
	v->scan = true;
	return true;
}

/*
 * Sample the chain at @head, as ct_victim_offer(): each node walked costs
 * a unit, each is taken with probability q; stops when the sample is done.
 */
static inline void ct_victim_chain(struct ct_victim *v,
				   struct conntab_node **head, void *owner,
				   uint32_t *lock)
{
	struct conntab_node *n;

	for (n = *head; !ct_is_nulls(n) && !ct_victim_done(v); n = n->ct_next) {
		ct_victim_walk(v);
		if (ct_victim_take(v))
			ct_victim_offer(v, n, head, owner, lock);
	}
}

/*
 * Take @lock to sample what it covers, unless it is held already (the
 * newcomer's @own, or the best victim's). False: busy for the whole spin,
 * skip it (v->busy says so).
 */
static inline bool ct_victim_trylock(struct ct_victim *v, uint32_t *lock,
				     const uint32_t *own)
{
	unsigned int i;

	if (lock == own || lock == v->lock)
		return true;
	/*
	 * Longer on each try of the same insert: against an evictor that
	 * keeps one lock hot, a short spin could lose every time.
	 */
	for (i = 0; i < CT_EVICT_SPIN << (v->tries < 8u ? v->tries : 8u); i++) {
		if (ct_spin_trylock(lock)) {
			ct_delay(CT_DP_EVICT_LOCK_OTHER);
			return true;
		}
		ct_cpu_relax();
	}
	v->busy = true;		/* its holder may be about to make room */
	return false;
}

/*
 * After sampling under @lock (@prev the best victim's lock before):
 * keep the lock that holds the best victim, drop the others we took.
 */
static inline void ct_victim_settle(const struct ct_victim *v, uint32_t *lock,
				    uint32_t *prev, const uint32_t *own)
{
	if (prev && prev != own && prev != v->lock)
		ct_spin_unlock(prev);
	if (lock != own && lock != v->lock && lock != prev)
		ct_spin_unlock(lock);
}

/* Drop the victim's lock if it is not the newcomer's @own. */
static inline void ct_victim_unlock(const struct ct_victim *v,
				    const uint32_t *own)
{
	if (v->lock && v->lock != own)
		ct_spin_unlock(v->lock);
}

/*
 * After a sample that found no victim, its locks dropped: try the insert
 * again? Yes if it met another writer step (v->busy), which may be about
 * to make room or to leave a node we can take, or if room appeared since
 * the insert found the table full (a remove, a failed insert's
 * reservation given back); pausing longer each time, and yielding the
 * processor after the first few, so that a preempted holder gets to run.
 * A sample that ranked nothing at all in a full table tries again too:
 * it is no snapshot, and another eviction moved the nodes past it. Each
 * try follows another writer's step; CT_EVICT_RETRIES bounds them
 * all the same (a livelock of two evictions that keep meeting each
 * other's lock is not impossible, only vanishingly unlikely). What
 * remains of -ENOSPC: every node the sample ranked (CT_EVICT_SAMPLE, or
 * all the table holds) ranked < 0, with no other step in its way and no
 * room; or CT_EVICT_RETRIES tries, each crossed by another writer.
 */
static inline bool ct_evict_again(const struct ct_victim *v,
				  unsigned int *tries)
{
	const struct conntab *t = v->t;
	unsigned int i;

	/*
	 * Not a snapshot: a sample that ranked nothing in a full table saw
	 * its nodes move under it (another eviction took a node from a
	 * place it had yet to visit into one it had passed), which is as
	 * good as meeting that writer.
	 */
	if (!v->busy && v->seen &&
	    __atomic_load_n(&t->reserved, __ATOMIC_RELAXED) >= t->max_entries)
		return false;
	if (++*tries > CT_EVICT_RETRIES)
		return false;
	if (*tries > 4)
		sched_yield();
	else
		for (i = 0; i < 64u << *tries; i++)
			ct_cpu_relax();
	return true;
}

/*
 * Unlink the chosen victim (its lock held) and clear its claim; the
 * caller adjusts the counts of v->owner and keeps the reservation for the
 * newcomer. The unlink keeps the victim's own link, so a reader standing
 * on it goes on (chain.h), and is a release store (exthash I2).
 */
static inline void ct_victim_unlink(const struct ct_victim *v)
{
	struct conntab_node **pprev = ct_chain_pprev(v->head, v->node);

	ct_delay(CT_DP_EVICT_UNLINK);
	ct_chain_unlink_release(pprev, v->node);
	ct_node_release(v->node);
}


#endif /* CT_EVICT_H */
