/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RCU chains of nodes with "nulls" end markers, shared by the hash backends.
 *
 * A chain ends not in NULL but in an odd pointer that encodes the chain's
 * identity (ct_nulls(id)). Nodes are pointer-aligned, so bit 0 tells a node
 * from an end marker.
 *
 * Why: a node can move from one chain to another while a reader stands on
 * it (the split backend moves a connection from its established to its
 * time-wait chain; a resizing table moves nodes between buckets). The
 * reader then follows the node's link into the other chain and could miss
 * the rest of its own. Because every chain ends in its own marker, a reader
 * that reaches the end of a chain it did not start on knows it was moved
 * and restarts; one that ends on its own marker has seen every node that
 * was in the chain for the whole walk (the kernel's hlist_nulls argument).
 *
 * Invariants, for every chain (writers hold the chain's stripe lock):
 *  - a node is published (ct_chain_push, ct_chain_replace) with a release
 *    store after its key, hash and link are written, so a reader that loads
 *    the pointer with ct_rcu_deref() sees them initialised;
 *  - unlinking a node leaves its own link untouched, so a reader standing
 *    on it continues to its former successor;
 *  - a node is freed or reused only a grace period after it was unlinked.
 */
#ifndef CT_CHAIN_H
#define CT_CHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "conntab/conntab.h"
#include "../delay.h"
#include "../key.h"
#include "../rcu.h"

static inline struct conntab_node *ct_nulls(uintptr_t id)
{
	return (struct conntab_node *)((id << 1) | 1);
}

static inline bool ct_is_nulls(const struct conntab_node *p)
{
	return (uintptr_t)p & 1;
}

static inline uintptr_t ct_nulls_id(const struct conntab_node *p)
{
	return (uintptr_t)p >> 1;
}

/*
 * Reader: one pass over the chain at @head. Returns the node holding key
 * @k (hash @h), or NULL with *@end set to the marker the pass ended on, for
 * the caller to judge (ct_chain_lookup walks again on a foreign marker; a
 * resizing backend follows the bucket its nodes moved to instead). Caller
 * holds the RCU read lock. The hash compare rejects almost every other node
 * without touching its key.
 */
static inline struct conntab_node *
ct_chain_scan(struct conntab_node *const *head, uint32_t h,
	      const struct conntab_key *k, struct conntab_node **end)
{
	struct conntab_node *n;

	for (n = ct_rcu_deref(*head); !ct_is_nulls(n);
	     n = ct_rcu_deref(n->ct_next)) {
		if (n->ct_hash == h && ct_key_eq(&n->ct_key, k))
			return n;
		ct_delay(CT_DP_CHAIN_READ_NEXT);
	}
	*end = n;
	return NULL;
}

/*
 * Reader: the node holding key @k (hash @h) in the chain at @head whose end
 * marker is ct_nulls(@id), or NULL. Caller holds the RCU read lock.
 */
static inline struct conntab_node *
ct_chain_lookup(struct conntab_node *const *head, uintptr_t id, uint32_t h,
		const struct conntab_key *k)
{
	struct conntab_node *n, *end;

	/* Ended on another chain's marker: we were moved; walk again. */
	while (!(n = ct_chain_scan(head, h, k, &end)) &&
	       __builtin_expect(ct_nulls_id(end) != id, 0))
		;
	return n;
}

/*
 * Writer (chain locked): the node holding key @k, with *@pprev set to the
 * link that points to it, or NULL with *@len (when @len is not NULL) set
 * to the chain's length, which an insert thus learns for free
 * (lib/probes.h).
 */
static inline struct conntab_node *
ct_chain_find_locked(struct conntab_node **head, uint32_t h,
		     const struct conntab_key *k, struct conntab_node ***pprev,
		     size_t *len)
{
	struct conntab_node **pp, *n;
	size_t passed = 0;

	for (pp = head; !ct_is_nulls(n = *pp); pp = &n->ct_next, passed++) {
		if (n->ct_hash == h && ct_key_eq(&n->ct_key, k)) {
			*pprev = pp;
			return n;
		}
	}
	if (len)
		*len = passed;
	return NULL;
}

/* Writer (chain locked): the link that points to @node, or NULL. */
static inline struct conntab_node **
ct_chain_pprev(struct conntab_node **head, const struct conntab_node *node)
{
	struct conntab_node **pp, *n;

	for (pp = head; !ct_is_nulls(n = *pp); pp = &n->ct_next)
		if (n == node)
			return pp;
	return NULL;
}

/* Writer (chain locked): publish fully initialised @n at the head. */
static inline void ct_chain_push(struct conntab_node **head,
				 struct conntab_node *n)
{
	n->ct_next = *head;
	ct_delay(CT_DP_CHAIN_PUB_PUSH);
	ct_rcu_assign(*head, n);	/* pairs with ct_rcu_deref in readers */
}

/*
 * Writer (chain locked): unlink the node *@pprev points to, with a release
 * store. Every backend unlinks this way, since readers may conclude from
 * not finding a key on one chain that what a writer did before under the
 * same lock (linking the key into another chain) is visible: a reader that
 * reads this store and then issues an acquire fence sees all of it.
 */
static inline void ct_chain_unlink_release(struct conntab_node **pprev,
					   struct conntab_node *n)
{
	/* n->ct_next stays: a reader on n goes on to its old successor. */
	ct_delay(CT_DP_CHAIN_UNLINK);
	ct_rcu_assign(*pprev, n->ct_next);	/* pairs with readers' fence */
}

/*
 * Writer (both chains locked): move the linked node @n (*@pprev points to
 * it) to the head of another chain @dst, so that it is never off both:
 *
 *  1. n->ct_next = *dst: a reader standing on n now continues into @dst
 *     and ends on @dst's marker, so ct_chain_lookup() restarts its own
 *     chain instead of missing that chain's rest;
 *  2. publish n at *dst: n is on both chains;
 *  3. unlink n from its old chain, saved successor, release store.
 *
 * A reader of n's key finds n on the old chain before step 3 and on @dst
 * from step 2 on; one that finds it gone from the old chain and then
 * fences (acquire) sees step 2. All three are release stores: what each
 * publishes (n, the old head of @dst) was initialised before.
 */
static inline void ct_chain_move(struct conntab_node **pprev,
				 struct conntab_node *n,
				 struct conntab_node **dst)
{
	struct conntab_node *succ = n->ct_next;

	ct_delay(CT_DP_CHAIN_PUB_MOVE_LINK);
	ct_rcu_assign(n->ct_next, *dst);
	ct_delay(CT_DP_CHAIN_PUB_MOVE_DST);
	ct_rcu_assign(*dst, n);
	ct_delay(CT_DP_CHAIN_UNLINK_MOVE);
	ct_rcu_assign(*pprev, succ);
}

/*
 * Writer (chain locked): put initialised @new in the place of @old in one
 * store. A reader sees either @old or @new there, and both lead on to the
 * same successor.
 */
static inline void ct_chain_replace(struct conntab_node **pprev,
				    struct conntab_node *old,
				    struct conntab_node *new)
{
	new->ct_next = old->ct_next;
	ct_delay(CT_DP_CHAIN_PUB_REPLACE);
	ct_rcu_assign(*pprev, new);	/* pairs with ct_rcu_deref in readers */
}

/*
 * Ask for the first node of the chain at @head, to be walked soon (a scan's
 * look-ahead, an eviction sample). A hint: the head is read without order
 * and nothing is read through it, so any value it holds is harmless.
 */
static inline void ct_chain_prefetch(struct conntab_node *const *head)
{
	struct conntab_node *n = __atomic_load_n(head, __ATOMIC_RELAXED);

	if (!ct_is_nulls(n))
		__builtin_prefetch(n);
}

/* Length of a chain (writer, or reader under the RCU read lock). */
static inline size_t ct_chain_len(struct conntab_node *const *head)
{
	struct conntab_node *n;
	size_t len = 0;

	for (n = ct_rcu_deref(*head); !ct_is_nulls(n);
	     n = ct_rcu_deref(n->ct_next))
		len++;
	return len;
}

#endif /* CT_CHAIN_H */
