/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the front end (conntab.c) and the backends share: the common head
 * of every table and the ops table each backend fills.
 *
 * The front end validates arguments, owns the node's claim (ct_owner) and
 * the key copy, then dispatches through one indirect call per operation;
 * the backend's fast path runs without further calls through pointers.
 */
#ifndef CT_CONNTAB_INT_H
#define CT_CONNTAB_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "conntab/conntab.h"
#include "hash.h"
#include "lock.h"
#include "rcu.h"

struct conntab_ops;

/*
 * The head of every table; each backend embeds it first in its own struct.
 * Read-mostly fields share the first line; the max_entries counter, written
 * by every insert when a cap is set, has a line of its own.
 */
struct conntab {
	const struct conntab_ops *ops;
	struct ct_secret secret;
	const struct rcu_flavor_struct *flavor;
	size_t max_entries;
	enum conntab_backend backend;

	size_t reserved __attribute__((aligned(CT_CACHELINE)));
};

/* State filter for ops->walk: every node. */
#define CT_WALK_ALL	(-1)

typedef int (*ct_walk_fn)(struct conntab_node *n, void *arg);

struct conntab_ops {
	/*
	 * The front end stores the key's keyed hash in n->ct_hash before
	 * insert; a backend that indexes by the key's own bits (the trie)
	 * sets this and saves the SipHash on every insert.
	 */
	bool unhashed;
	/*
	 * Allocate and initialise a table whose head is a copy of @tmpl.
	 * NULL with errno set on failure.
	 */
	struct conntab *(*create)(const struct conntab *tmpl,
				  const struct conntab_config *cfg);
	/* Call @release for each node, free everything (no users left). */
	void (*destroy)(struct conntab *t, void (*release)(struct conntab_node *));
	/*
	 * Link @n (claimed, key copied, state ESTABLISHED). With @recycled
	 * non-NULL, replace a TIME_WAIT node of the key and return it there.
	 */
	int (*insert)(struct conntab *t, struct conntab_node *n,
		      struct conntab_node **recycled);
	/*
	 * Optional: prefetch for writing what an insert of a key with @hash
	 * will touch (bucket, lock stripe), before the front end claims the
	 * node.
	 */
	void (*prefetch)(struct conntab *t, uint32_t hash);
	/*
	 * Optional, for a backend that does not hash: the same, from the
	 * key itself.
	 */
	void (*prefetch_key)(struct conntab *t, const struct conntab_key *k);
	struct conntab_node *(*lookup)(struct conntab *t,
				       const struct conntab_key *k);
	size_t (*lookup_batch)(struct conntab *t, const struct conntab_key *keys,
			       struct conntab_node **out, size_t n);
	int (*remove)(struct conntab *t, struct conntab_node *n);
	/*
	 * @tw is @est, or claimed with the key, hash and TIME_WAIT state of
	 * @est already copied in.
	 */
	int (*timewait)(struct conntab *t, struct conntab_node *est,
			struct conntab_node *tw);
	/* @state is CT_WALK_ALL or an enum conntab_state. */
	int (*walk)(struct conntab *t, int state, ct_walk_fn fn, void *arg);
	/* Fill every field of @st. */
	void (*stats)(struct conntab *t, struct conntab_stats *st);
	/* Optional: resize counters (@rs zeroed by the front end). */
	void (*resize_stats)(struct conntab *t,
			     struct conntab_resize_stats *rs);
	/*
	 * Optional: call @fn for every node whose canonical key string
	 * (lib/key.h) agrees with @s in its first @bits bits, at a cost
	 * proportional to the answer. NULL: the front end filters a full
	 * ops->walk.
	 */
	int (*walk_prefix)(struct conntab *t, const uint8_t *s,
			   unsigned int bits, ct_walk_fn fn, void *arg);
};

extern const struct conntab_ops ct_chained_ops;
extern const struct conntab_ops ct_split_ops;
extern const struct conntab_ops ct_trie_ops;
extern const struct conntab_ops ct_exthash_ops;

/* Does @n belong to @t? (a hint outside the lock; recheck under it) */
static inline bool ct_node_owned(const struct conntab_node *n,
				 const struct conntab *t)
{
	return __atomic_load_n(&n->ct_owner, __ATOMIC_ACQUIRE) == t;
}

/* Mark @n unlinked from any table (writer, under the chain's lock). */
static inline void ct_node_release(struct conntab_node *n)
{
	__atomic_store_n(&n->ct_owner, NULL, __ATOMIC_RELEASE);
}

/*
 * Count one more entry against max_entries; false if the cap is reached.
 * Called under the chain lock once the key is known to be absent, so that
 * a duplicate key reports -EEXIST, not -ENOSPC.
 */
static inline bool ct_reserve(struct conntab *t)
{
	if (!t->max_entries)
		return true;
	if (__atomic_add_fetch(&t->reserved, 1, __ATOMIC_RELAXED) <=
	    t->max_entries)
		return true;
	__atomic_sub_fetch(&t->reserved, 1, __ATOMIC_RELAXED);
	return false;
}

static inline void ct_unreserve(struct conntab *t)
{
	if (t->max_entries)
		__atomic_sub_fetch(&t->reserved, 1, __ATOMIC_RELAXED);
}

/* Smallest power of two >= @x (x >= 1), capped at 2^31. */
static inline size_t ct_roundup_pow2(size_t x)
{
	size_t p = 1;

	while (p < x && p < ((size_t)1 << 31))
		p <<= 1;
	return p;
}

#endif /* CT_CONNTAB_INT_H */
