/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writer operations on one chain that holds both states (each bucket of
 * exthash), run under the lock that covers the chain, and the steps they
 * share with chained's buckets of slots (lib/hashtab/chained.c): what an insert
 * does when it meets its key, what a removal and a TIME_WAIT change in
 * the node and the counts.
 *
 * They change the chain and the node claims; the caller owns the counters
 * (a lock stripe's or a bucket's) and applies the delta they report.
 */
#ifndef CT_CHAIN_OPS_H
#define CT_CHAIN_OPS_H

#include "chain.h"
#include "../conntab-int.h"
#include "../probes.h"

struct ct_delta {
	int entries;
	int timewait;
	size_t chain;	/* insert: the chain's length with the new node */
};

/*
 * An insert (locked) met @old holding its key: 0 if @old is a TIME_WAIT
 * node that @recycled asks to replace, else the insert's error.
 */
static inline int ct_insert_met_locked(struct conntab *t,
				       const struct conntab_node *old,
				       struct conntab_node **recycled)
{
	/* A pair's half whose step may yet fail: not -EEXIST (P2). */
	if (ct_node_check_locked(old, t, false) == CT_ECLAIMED)
		return CT_ECLAIMED;
	if (!recycled || old->ct_state != CONNTAB_TIMEWAIT)
		return -EEXIST;
	return 0;
}

/* A recycling insert put its node in @old's place: hand @old back. */
static inline void ct_insert_recycled(struct conntab_node *old,
				      struct conntab_node **recycled,
				      struct ct_delta *d)
{
	ct_node_release(old);
	d->timewait--;
	*recycled = old;
}

/*
 * Insert @n (claimed; key, hash and state set) into the chain at @head,
 * or with @recycled non-NULL put it in the place of a TIME_WAIT node of
 * the same key in one store (a reader finds one or the other).
 */
static inline __attribute__((always_inline)) int
ct_chain_insert_locked(struct conntab *t, struct conntab_node **head,
		       struct conntab_node *n, struct conntab_node **recycled,
		       struct ct_delta *d)
{
	struct conntab_node **pprev, *old;
	size_t len;
	int err;

	old = ct_chain_find_locked(head, n->ct_hash, &n->ct_key, &pprev, &len);
	if (old) {
		if ((err = ct_insert_met_locked(t, old, recycled)))
			return err;
		ct_chain_replace(pprev, old, n);
		ct_insert_recycled(old, recycled, d);
		return 0;
	}
	/* Also for an eviction that pushes @n after -ENOSPC. */
	d->chain = len + 1;
	/* After the key check: a duplicate is -EEXIST, not -ENOSPC. */
	if (!ct_reserve(t, n))
		return -ENOSPC;
	ct_chain_push(head, n);		/* n is private until here */
	d->entries++;
	ct_probe_chain(t, n->ct_hash, len + 1);
	return 0;
}

/* A removal (locked) unlinked @n: its claim ends, its count goes. */
static inline void ct_removed_locked(struct conntab *t, struct conntab_node *n,
				     struct ct_delta *d)
{
	ct_node_release(n);
	d->entries--;
	if (n->ct_state == CONNTAB_TIMEWAIT)
		d->timewait--;
	ct_unreserve(t, n);
}

/*
 * Unlink @n from the chain at @head; -ENOENT if it is not there,
 * CT_ECLAIMED if another writer step holds it (@claimed: we do).
 */
static inline __attribute__((always_inline)) int
ct_chain_remove_locked(struct conntab *t, struct conntab_node **head,
		       struct conntab_node *n, struct ct_delta *d, bool claimed)
{
	struct conntab_node **pprev;
	int err;

	/* Recheck under the lock: a racing remove may have won. */
	ct_delay(CT_DP_CHAIN_LOCK_REMOVE);
	err = ct_node_check_locked(n, t, claimed);
	if (err)
		return err;
	if (!(pprev = ct_chain_pprev(head, n)))
		return -ENOENT;
	/* Release: a mover's invariants (exthash I2) need it; free on x86. */
	ct_chain_unlink_release(pprev, n);
	ct_removed_locked(t, n, d);
	return 0;
}

/* TIME_WAIT in place: same node, same place, readers see either state. */
static inline void ct_timewait_flip(struct conntab_node *est)
{
	ct_delay(CT_DP_CHAIN_PUB_TW_STATE);
	__atomic_store_n(&est->ct_state, CONNTAB_TIMEWAIT, __ATOMIC_RELAXED);
}

/* @est went to TIME_WAIT, in place or replaced by @tw: count it. */
static inline void ct_timewait_done(struct conntab_node *est,
				    const struct conntab_node *tw,
				    struct ct_delta *d)
{
	if (tw != est)
		ct_node_release(est);
	d->timewait++;
}

/*
 * TIME_WAIT for @est on the chain at @head: flip its state in place
 * (@tw == @est) or put @tw (claimed, key/hash/state copied) in its place
 * with one store. Either way the key is on the chain at every instant.
 */
static inline int ct_chain_timewait_locked(struct conntab *t,
					   struct conntab_node **head,
					   struct conntab_node *est,
					   struct conntab_node *tw,
					   struct ct_delta *d)
{
	struct conntab_node **pprev;
	int err;

	ct_delay(CT_DP_CHAIN_LOCK_TIMEWAIT);
	err = ct_node_check_locked(est, t, false);
	if (err)
		return err;
	if (!(pprev = ct_chain_pprev(head, est)))
		return -ENOENT;
	if (est->ct_state != CONNTAB_ESTABLISHED)
		return -EINVAL;
	if (tw == est)
		ct_timewait_flip(est);
	else
		ct_chain_replace(pprev, est, tw);
	ct_timewait_done(est, tw, d);
	return 0;
}

/* Apply @d to a lock stripe's counters (stripe locked). */
static inline void ct_stripe_apply(struct ct_stripe *s,
				   const struct ct_delta *d)
{
	ct_stripe_add(s, d->entries, d->timewait);
}

#endif /* CT_CHAIN_OPS_H */
