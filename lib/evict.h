/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sampled eviction (conntab_insert_evict()), shared by the hash backends.
 *
 * When an insert finds the table at max_entries, the backend offers the
 * application's rank function a sample of at least CT_EVICT_SAMPLE nodes
 * and unlinks the best-ranked one in the place of the newcomer, under the
 * newcomer's lock. Where the sample comes from is the backend's choice;
 * what it must be is the same everywhere:
 *
 *  - chosen without regard to the keys' values: the sample is a run of
 *    chains from a random start, and a node's chain is given by the keyed
 *    hash, which nobody without the secret can steer, so which nodes are
 *    offered depends on the random start and the table's shape, never on
 *    what the keys are;
 *  - O(sample) cache misses: chains are visited until the sample is
 *    full, starting where the newcomer's lock already covers;
 *  - deadlock-free: the newcomer's lock is held throughout, every other
 *    lock is only try-locked, for a short spin (CT_EVICT_SPIN attempts:
 *    writers hold a lock for a few hundred nanoseconds), and one still
 *    busy after it is skipped; at most one of those locks is kept, the
 *    one that holds the best victim so far. So the sample holds at least
 *    CT_EVICT_SAMPLE nodes, or all the table holds, except the nodes
 *    behind a lock that another writer held for all of the spin: two
 *    evictions that want each other's lock could wait forever otherwise.
 *
 * The victim's reservation (ct_reserve) passes to the newcomer, so the
 * entry count never exceeds max_entries, not even for an instant.
 */
#ifndef CT_EVICT_H
#define CT_EVICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "conntab-int.h"

/* Nodes in a sample (the contract's "at least 8"). */
#define CT_EVICT_SAMPLE	8
/* Attempts at another lock before the sample goes on without it. */
#define CT_EVICT_SPIN	256

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
};

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
 * on, if any): keep it if its rank is the largest non-negative yet.
 * Claimed nodes are another writer step's (P2) and left out; a pair's b
 * half too, the pair being offered through its a. The victim chosen, if
 * a pair, is claimed whole: the backend unlinks a (ct_victim_unlink()),
 * and the front end the b half (lib/conntab.c).
 */
static inline void ct_victim_offer(struct ct_victim *v, struct conntab_node *n,
				   struct conntab_node **head, void *owner,
				   uint32_t *lock)
{
	const struct conntab *t = v->t;
	long r;

	if (ct_node_pair_b(n) ||
	    __atomic_load_n(&n->ct_owner, __ATOMIC_RELAXED) != t)
		return;
	r = v->rank(n, v->arg);
	v->seen++;
	if (r >= 0 && (!v->node || r > v->best)) {
		if (n->ct_peer && !ct_victim_claim_pair(n, t))
			return;
		ct_victim_drop_pair(v->node, t);
		v->node = n;
		v->head = head;
		v->owner = owner;
		v->lock = lock;
		v->best = r;
	}
}

/* Offer every node of the chain at @head, as ct_victim_offer(). */
static inline void ct_victim_chain(struct ct_victim *v,
				   struct conntab_node **head, void *owner,
				   uint32_t *lock)
{
	struct conntab_node *n;

	for (n = *head; !ct_is_nulls(n); n = n->ct_next)
		ct_victim_offer(v, n, head, owner, lock);
}

/*
 * Take @lock to sample what it covers, unless it is held already (the
 * newcomer's @own, or the best victim's). False: busy for the whole spin,
 * skip it.
 */
static inline bool ct_victim_trylock(const struct ct_victim *v, uint32_t *lock,
				     const uint32_t *own)
{
	unsigned int i;

	if (lock == own || lock == v->lock)
		return true;
	for (i = 0; i < CT_EVICT_SPIN; i++) {
		if (ct_spin_trylock(lock)) {
			ct_delay(CT_DP_EVICT_LOCK_OTHER);
			return true;
		}
		ct_cpu_relax();
	}
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

/* A random number for the sample's start (not secret: see above). */
uint64_t ct_evict_random(void);

#endif /* CT_EVICT_H */
