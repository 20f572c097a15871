/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exactly-once walks of chains whose nodes move, without allocating.
 *
 * A walker cannot call fn while it stands on a live chain that fn (or
 * another writer) may change under it: a node moved to another chain
 * would carry the walker along, and walking the chain again would visit
 * nodes twice. So the nodes of a bucket are visited in increasing
 * (hash, address) order, CT_WALK_BATCH at a time:
 *
 *  - a pass scans the bucket's chains completely and keeps the
 *    CT_WALK_BATCH smallest nodes above the cursor (the last node visited
 *    in this bucket); a chain that ends on another chain's marker was
 *    diverted, and the pass is retried before any fn call;
 *  - fn then runs on the selection, on no live chain;
 *  - the cursor moves to the last node selected; a pass that kept fewer
 *    than CT_WALK_BATCH nodes saw everything above the cursor: the bucket
 *    is done.
 *
 * A node's hash and address do not change while a reader may see it (it
 * is reinserted only a grace period after it left, and the walker holds
 * the read lock), so a node present during the whole walk is above the
 * cursor until the one pass that selects it, and below it after: visited
 * exactly once, whatever moves meanwhile. A node found on two chains in
 * one pass (caught in a move) is kept once. An ordinary bucket of a
 * node or two costs one pass; a chain of L nodes costs L / CT_WALK_BATCH
 * passes of L, where a heap snapshot would have needed memory that may be
 * missing exactly when chains grow long (allocation failures stop splits).
 */
#ifndef CT_WALK_H
#define CT_WALK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "chain.h"

#define CT_WALK_BATCH	32

struct ct_walk_sel {
	bool have_cur;		/* false: nothing visited yet in this bucket */
	uint32_t cur_hash;	/* the cursor: last node visited */
	uintptr_t cur_addr;
	size_t len;
	struct conntab_node *v[CT_WALK_BATCH];	/* ascending (hash, address) */
};

static inline bool ct_walk_before(uint32_t h1, uintptr_t a1,
				  uint32_t h2, uintptr_t a2)
{
	return h1 < h2 || (h1 == h2 && a1 < a2);
}

/* Start a bucket: no cursor, empty selection. */
static inline void ct_walk_sel_init(struct ct_walk_sel *s)
{
	s->have_cur = false;
	s->len = 0;
}

/* Keep @n if it is above the cursor and among the smallest offered. */
static inline void ct_walk_sel_offer(struct ct_walk_sel *s,
				     struct conntab_node *n)
{
	uint32_t h = n->ct_hash;
	uintptr_t a = (uintptr_t)n;
	size_t i;

	if (s->have_cur && !ct_walk_before(s->cur_hash, s->cur_addr, h, a))
		return;
	for (i = s->len; i > 0; i--)
		if (!ct_walk_before(h, a, s->v[i - 1]->ct_hash,
				    (uintptr_t)s->v[i - 1]))
			break;
	if (i > 0 && s->v[i - 1] == n)
		return;		/* seen on another chain in this pass */
	if (i == CT_WALK_BATCH)
		return;		/* larger than a full selection */
	if (s->len == CT_WALK_BATCH)
		s->len--;	/* drop the largest */
	memmove(&s->v[i + 1], &s->v[i], (s->len - i) * sizeof(s->v[0]));
	s->v[i] = n;
	s->len++;
}

/*
 * Offer every node of the chain at @head (reader, RCU read lock held).
 * False if the chain ended on another chain's marker: the caller empties
 * the selection (s->len = 0) and retries the pass.
 */
static inline bool ct_walk_sel_chain(struct ct_walk_sel *s,
				     struct conntab_node *const *head,
				     uintptr_t id)
{
	struct conntab_node *n;

	for (n = ct_rcu_deref(*head); !ct_is_nulls(n);
	     n = ct_rcu_deref(n->ct_next))
		ct_walk_sel_offer(s, n);
	return ct_nulls_id(n) == id;
}

/*
 * After fn ran on the selection: move the cursor past it. True if the
 * bucket may hold more nodes above the cursor (the pass was full).
 */
static inline bool ct_walk_sel_advance(struct ct_walk_sel *s)
{
	bool full = s->len == CT_WALK_BATCH;

	if (s->len) {
		s->cur_hash = s->v[s->len - 1]->ct_hash;
		s->cur_addr = (uintptr_t)s->v[s->len - 1];
		s->have_cur = true;
	}
	s->len = 0;
	return full;
}

#endif /* CT_WALK_H */
