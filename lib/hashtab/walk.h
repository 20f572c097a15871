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

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "chain.h"
#include "../conntab-int.h"

#define CT_WALK_BATCH	32

struct ct_walk_sel {
	bool have_cur;		/* false: nothing visited yet in this bucket */
	uint32_t cur_hash;	/* the cursor: last node visited */
	uintptr_t cur_addr;
	size_t len;
	size_t cap;		/* selection size, <= CT_WALK_BATCH */
	struct conntab_node *v[CT_WALK_BATCH];	/* ascending (hash, address) */
};

static inline bool ct_walk_before(uint32_t h1, uintptr_t a1,
				  uint32_t h2, uintptr_t a2)
{
	return h1 < h2 || (h1 == h2 && a1 < a2);
}

/* Start a bucket: no cursor, empty selection of CT_WALK_BATCH. */
static inline void ct_walk_sel_init(struct ct_walk_sel *s)
{
	s->have_cur = false;
	s->len = 0;
	s->cap = CT_WALK_BATCH;
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
	if (i == s->cap)
		return;		/* larger than a full selection */
	if (s->len == s->cap)
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
	     n = ct_rcu_deref(n->ct_next)) {
		ct_walk_sel_offer(s, n);
		ct_delay(CT_DP_WALK_READ_NEXT);
	}
	return ct_nulls_id(n) == id;
}

/*
 * After fn ran on the selection: move the cursor past it. True if the
 * bucket may hold more nodes above the cursor (the pass was full).
 */
static inline bool ct_walk_sel_advance(struct ct_walk_sel *s)
{
	bool full = s->len == s->cap;

	if (s->len) {
		s->cur_hash = s->v[s->len - 1]->ct_hash;
		s->cur_addr = (uintptr_t)s->v[s->len - 1];
		s->have_cur = true;
	}
	s->len = 0;
	return full;
}

/*
 * A pass over a fixed array of buckets (chained, split) in the total
 * order (bucket, hash, address), resumable: the walk of the table, and
 * conntab_scan() in bounded calls. Each bucket is visited as above; the
 * position between calls is the bucket and the cursor within it:
 *
 *	pos[0]	bucket (nbuckets: the pass is over)
 *	pos[1]	the cursor's hash, bit 32 set if the bucket has a cursor
 *	pos[2]	the cursor's address
 *
 * Buckets never move, and a node's hash and address do not change while
 * a reader may see it, so a node present for the whole pass keeps its
 * place in the order, which the position only ever passes once: it is
 * visited exactly once, across calls as within one. Any other node is
 * visited only when the position passes its place, so at most once (a
 * node removed and inserted again with the same key has the same place).
 */
#define CT_WALK_POS_CUR		(1ull << 32)

static inline void ct_walk_pos_save(uint64_t *pos, size_t b,
				    const struct ct_walk_sel *s)
{
	pos[0] = b;
	pos[1] = s->have_cur ? CT_WALK_POS_CUR | s->cur_hash : 0;
	pos[2] = s->have_cur ? s->cur_addr : 0;
}

/* Restore a saved position; false if no pass can have saved it. */
static inline bool ct_walk_pos_load(const uint64_t *pos, size_t nbuckets,
				    size_t *b, struct ct_walk_sel *s)
{
	ct_walk_sel_init(s);
	if (pos[0] > nbuckets || (pos[1] & ~(CT_WALK_POS_CUR | UINT32_MAX)) ||
	    (!(pos[1] & CT_WALK_POS_CUR) && pos[2]) || pos[3] || pos[4])
		return false;
	*b = pos[0];
	s->have_cur = pos[1] & CT_WALK_POS_CUR;
	s->cur_hash = (uint32_t)pos[1];
	s->cur_addr = pos[2];
	return true;
}

/*
 * What a walk or scan call may still do: callbacks, and steps that offer
 * nothing (empty slots: conntab_scan() bounds those by the budget too).
 */
struct ct_walk_budget {
	size_t calls;
	size_t empty;
};

static inline void ct_walk_budget_init(struct ct_walk_budget *bu,
				       size_t budget)
{
	bu->calls = budget;
	bu->empty = budget > SIZE_MAX / CT_SCAN_EMPTY_PER_BUDGET ?
		    SIZE_MAX : budget * CT_SCAN_EMPTY_PER_BUDGET;
}

/*
 * Before a step: false if a budget ran out (the caller saves its
 * position and returns 0); else size the selection to the calls left.
 */
static inline bool ct_walk_step(struct ct_walk_budget *bu,
				struct ct_walk_sel *sel)
{
	if (!bu->calls || !bu->empty)
		return false;
	sel->cap = bu->calls < CT_WALK_BATCH ? bu->calls : CT_WALK_BATCH;
	return true;
}

/*
 * After a step: call @fn on the selection (the nodes in @state, or all
 * for CT_WALK_ALL), on no live chain. True if fn returned nonzero: its
 * value is in *@fnret, the cursor just past that node. Else the cursor is
 * past the selection and *@more set if the bucket or range may hold more
 * above it.
 */
static inline bool ct_walk_visit(struct ct_walk_budget *bu,
				 struct ct_walk_sel *sel, int state,
				 ct_walk_fn fn, void *arg, bool *more,
				 int *fnret)
{
	struct conntab_node *n;
	size_t i, offered = 0;

	for (i = 0; i < sel->len; i++)
		offered += !ct_node_pair_b(sel->v[i]);
	/*
	 * A pair's b half is never shown to the caller of a walk or a scan
	 * (conntab.c filters it out; conntab_walk_prefix() alone, which has
	 * no budget, shows it): it costs no call of the budget, and a
	 * selection of b halves only counts as an empty one, so that the
	 * budget bounds the chains a call passes as it says.
	 */
	bu->empty -= !offered;
	for (i = 0; i < sel->len; i++) {
		n = sel->v[i];
		if (state != CT_WALK_ALL && (int)conntab_node_state(n) != state)
			continue;
		bu->calls -= !ct_node_pair_b(n);
		ct_delay(CT_DP_WALK_READ_VISIT);
		*fnret = fn(n, arg);
		if (*fnret) {
			sel->len = i + 1;
			ct_walk_sel_advance(sel);
			return true;
		}
	}
	*more = ct_walk_sel_advance(sel);
	return false;
}

/*
 * From position @pos, call @fn for at most @budget nodes (in @state, or
 * CT_WALK_ALL) of buckets [pos[0], @nbuckets), passing at most @budget x
 * CT_SCAN_EMPTY_PER_BUDGET buckets that offer nothing; save the position.
 * @pass(t, b, state, sel) offers every node of bucket b to @sel (reader,
 * RCU read lock held), false if it was diverted by a move (the pass is
 * then retried before any fn call). Returns how the call ended (enum
 * ct_scan_end): CT_SCAN_PASS at the end of the buckets, CT_SCAN_BUDGET
 * when a budget ran out, CT_SCAN_STOPPED when fn returned nonzero (that
 * value in *@fnret, the position just after its node), CT_SCAN_BADPOS
 * for a position no call saved. fn runs on the selection, on no live
 * chain: it may unlink or move its node.
 *
 * @ahead(t, b) prefetches the first node(s) of bucket b, CT_WALK_AHEAD
 * buckets before the pass reaches it: a bucket's nodes are a miss each,
 * and the selection's work between two chains leaves the core too few
 * loads in flight to overlap them on its own (a pass at 1M cost twice a
 * plain walk without it). A hint only: nothing is read through it.
 */
#define CT_WALK_AHEAD	8

static inline __attribute__((always_inline)) enum ct_scan_end
ct_walk_buckets(struct conntab *t, uint64_t *pos, size_t nbuckets, int state,
		size_t budget,
		bool (*pass)(struct conntab *t, size_t b, int state,
			     struct ct_walk_sel *sel),
		void (*ahead)(struct conntab *t, size_t b),
		ct_walk_fn fn, void *arg, int *fnret)
{
	struct ct_walk_budget bu;
	struct ct_walk_sel sel;
	bool more;
	size_t b;

	if (!ct_walk_pos_load(pos, nbuckets, &b, &sel))
		return CT_SCAN_BADPOS;
	ct_walk_budget_init(&bu, budget);
	for (; b < nbuckets; b++, ct_walk_sel_init(&sel)) {
		if (b + CT_WALK_AHEAD < nbuckets)
			ahead(t, b + CT_WALK_AHEAD);
		do {
			if (!ct_walk_step(&bu, &sel)) {
				ct_walk_pos_save(pos, b, &sel);
				return CT_SCAN_BUDGET;
			}
			while (!pass(t, b, state, &sel))
				sel.len = 0;
			if (ct_walk_visit(&bu, &sel, state, fn, arg, &more,
					  fnret)) {
				ct_walk_pos_save(pos, b, &sel);
				return CT_SCAN_STOPPED;
			}
		} while (more);
	}
	ct_walk_sel_init(&sel);
	ct_walk_pos_save(pos, nbuckets, &sel);
	return CT_SCAN_PASS;
}

/*
 * A whole walk from a pass's result: fn's value if it stopped the walk,
 * else 0. (A walk has no budget and starts at a zero position, so it
 * ends only at the end of the pass or on fn's value.)
 */
static inline int ct_walk_result(enum ct_scan_end end, int fnret)
{
	return end == CT_SCAN_STOPPED ? fnret : 0;
}

#endif /* CT_WALK_H */
