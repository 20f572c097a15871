/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_SPLIT: an established and a time-wait chain side by side in every
 * bucket (Eric Dumazet's ehash layout, 2007).
 *
 * Layout. Bucket b is two chain heads, 16 bytes:
 *
 *	heads[2b]	established chain, ends in ct_nulls(2b)
 *	heads[2b + 1]	time-wait chain, ends in ct_nulls(2b + 1)
 *
 * so four buckets share a 64-byte line and the array is aligned to a line
 * (heads.h): a lookup of either state loads one bucket line, then the nodes
 * it walks (link, hash and key share a node's line, conntab.h). An
 * established hit costs two lines, as in CONNTAB_CHAINED, and time-wait
 * entries, often the majority on a busy server, do not lengthen the chains
 * that established lookups walk. The bucket count is a power of two
 * >= expected, so the two chains of a bucket hold one node on average at
 * the sizing hint. Writers lock the stripe of the key's hash (lock.h); a
 * stripe covers whole buckets, so it guards both chains of a bucket.
 *
 * Invariant (S): a node is on its bucket's established chain iff its state
 * is CONNTAB_ESTABLISHED, else on the time-wait chain, except inside a
 * writer's critical section that moves it. Writers find a node's chain
 * from its state.
 *
 * Invariant (R): every store a writer makes to a link that readers follow
 * is a release store (push, unlink, move). A reader that reads one of them
 * and then issues an acquire fence sees everything writers did before it
 * under that stripe's lock (the lock orders them).
 *
 * Readers scan the established chain, then the time-wait chain. Keys move
 * between the two chains of their bucket in two ways:
 *
 *  - est -> tw (conntab_timewait), along the scan order. The key is linked
 *    into the tw chain before it is unlinked from the est chain (the same
 *    node with ct_chain_move(), or a separate tw node pushed first). By (R)
 *    and the reader's fence between its two scans, a reader that finds the
 *    key gone from est finds it on tw. A reader standing on a node while it
 *    moves follows it into the tw chain, ends on the tw marker and restarts
 *    its est scan (chain.h).
 *
 *  - tw -> est (conntab_insert_recycle), against the scan order: a reader
 *    could scan est before the new node is pushed and tw after the old one
 *    is unlinked, and miss both. The stripe's seq is odd for the duration
 *    of such a move. A hit needs no check; a miss is trusted only after a
 *    scan of both chains that started on an even seq and ended on the same
 *    seq (split_find_slow). So the hit path stays one bucket line plus the
 *    nodes walked, and only misses read the stripe's line.
 *
 * Nodes never leave a tw chain for another chain (recycling links a fresh
 * node into est), so a reader on a tw chain is never diverted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "../conntab-int.h"
#include "../evict.h"
#include "hash-ops.h"
#include "heads.h"
#include "../probes.h"
#include "walk.h"

/* Smallest table, for expected = 0. */
#define CT_SPLIT_MIN_BUCKETS	64

struct ct_split {
	struct conntab base;
	struct conntab_node **heads;	/* 2 per bucket: est, tw */
	uint32_t mask;			/* buckets - 1 */
	struct ct_locks locks;
};

static inline struct ct_split *ct_split(struct conntab *t)
{
	return (struct ct_split *)t;
}

/* Chain ids (and head indices) of bucket @b: est is 2b, tw is 2b + 1. */
static inline uintptr_t split_est_id(uint32_t b)
{
	return 2 * (uintptr_t)b;
}

static inline struct conntab_node **split_head(struct ct_split *sp,
					       uint32_t b, int state)
{
	return &sp->heads[split_est_id(b) + (state == CONNTAB_TIMEWAIT)];
}

static struct conntab *split_create(const struct conntab *tmpl,
				    const struct conntab_config *cfg)
{
	size_t nb = ct_buckets_for(cfg->expected, CT_SPLIT_MIN_BUCKETS);
	struct ct_split *sp;

	sp = aligned_alloc(CT_CACHELINE, sizeof(*sp));
	if (!sp)
		goto nomem;
	memset(sp, 0, sizeof(*sp));
	sp->base = *tmpl;
	sp->mask = (uint32_t)(nb - 1);
	sp->heads = ct_heads_alloc(2 * nb);
	if (!sp->heads)
		goto nomem;
	if (ct_locks_init(&sp->locks, nb))
		goto nomem;
	return &sp->base;
nomem:
	if (sp)
		ct_heads_free(sp->heads, 2 * nb);
	free(sp);
	errno = ENOMEM;
	return NULL;
}

static void split_destroy(struct conntab *t,
			  void (*release)(struct conntab_node *))
{
	struct ct_split *sp = ct_split(t);

	ct_heads_release(sp->heads, 2 * ((size_t)sp->mask + 1), release);
	ct_locks_fini(&sp->locks);
	ct_heads_free(sp->heads, 2 * ((size_t)sp->mask + 1));
	free(sp);
}

/*
 * Bracket a move against the readers' scan order (writer, stripe locked).
 * The odd store needs no fence of its own: every store of the move that a
 * reader can read is a link store, and those are release stores (R), each
 * of which orders the odd store before it. So a reader that reads any of
 * them and then fences (split_find_slow) sees seq changed. (A release
 * fence here said the same a second time, and is one ThreadSanitizer
 * cannot see.)
 */
static inline void split_seq_begin(struct ct_stripe *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
}

static inline void split_seq_end(struct ct_stripe *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* Insert @n, its stripe @s held; -ENOSPC only once the key is absent. */
static int split_insert_locked(struct conntab *t, struct ct_stripe *s,
			       struct conntab_node *n,
			       struct conntab_node **recycled)
{
	struct ct_split *sp = ct_split(t);
	uint32_t h = n->ct_hash, b = h & sp->mask;
	struct conntab_node **est = split_head(sp, b, CONNTAB_ESTABLISHED);
	struct conntab_node **tw = split_head(sp, b, CONNTAB_TIMEWAIT);
	struct conntab_node **pprev, *old;
	size_t nest, ntw;

	old = ct_chain_find_locked(est, h, &n->ct_key, &pprev, &nest);
	if (old)	/* a pair's half whose step may yet fail (P2) */
		return ct_node_check_locked(old, t, false) == CT_ECLAIMED ?
		       CT_ECLAIMED : -EEXIST;
	old = ct_chain_find_locked(tw, h, &n->ct_key, &pprev, &ntw);
	if (old) {
		if (!recycled)
			return -EEXIST;
		/*
		 * tw -> est: push first, so the key is on a chain at every
		 * instant; seq odd meanwhile, since a reader scans est before
		 * tw (see top of file).
		 */
		split_seq_begin(s);
		ct_chain_push(est, n);
		ct_chain_unlink_release(pprev, old);
		ct_delay(CT_DP_SP_PUB_SEQ_END);
		split_seq_end(s);
		ct_node_release(old);
		ct_stripe_add(s, 0, -1);
		*recycled = old;
		return 0;
	}
	if (!ct_reserve(t, n))
		return -ENOSPC;
	ct_chain_push(est, n);
	ct_stripe_add(s, 1, 0);
	/* A miss in this bucket passes both chains. */
	ct_probe_chain(t, h, nest + 1 + ntw);
	return 0;
}

static int split_insert(struct conntab *t, struct conntab_node *n,
			struct conntab_node **recycled)
{
	struct ct_stripe *s = ct_lock_hash(&ct_split(t)->locks, n->ct_hash);
	int err = split_insert_locked(t, s, n, recycled);

	ct_unlock_stripe(s);
	return err;
}

/*
 * At the cap, evict a sampled node of either chain (a plain unlink, as
 * split_remove: no move, no seq) and link @n in its place in the count.
 */
static int split_insert_evict(struct conntab *t, struct conntab_node *n,
			      ct_rank_fn rank, void *arg,
			      struct conntab_node **evicted)
{
	struct ct_split *sp = ct_split(t);
	size_t nb = (size_t)sp->mask + 1;
	uint32_t h = n->ct_hash;
	unsigned int tries = 0;
	struct ct_victim v;
	struct ct_stripe *s;
	int err;

	for (;;) {
		s = ct_lock_hash(&sp->locks, h);
		err = split_insert_locked(t, s, n, NULL);
		if (err == -ENOSPC) {
			ct_victim_init(&v, t, rank, arg);
			v.self = n->ct_peer;
			v.tries = tries;
			ct_victim_thin_table(&v, t, nb);
			if (ct_heads_sample(sp->heads, nb, 2, &sp->locks, s,
					    h & sp->mask, &v)) {
				ct_heads_evict(&v, s);
				ct_chain_push(split_head(sp, h & sp->mask,
							 CONNTAB_ESTABLISHED),
					      n);
				ct_stripe_add(s, 1, 0);
				*evicted = v.node;
				err = 0;
			}
		}
		ct_unlock_stripe(s);
		/* -ENOSPC after a sample another writer crossed: again. */
		if (err != -ENOSPC || !ct_evict_again(&v, &tries))
			return err;
	}
}

/* Reader: one pass over the est chain, then the tw chain of bucket @b. */
static inline struct conntab_node *
split_scan(struct ct_split *sp, uint32_t b, uint32_t h,
	   const struct conntab_key *k)
{
	uintptr_t id = split_est_id(b);
	struct conntab_node *n;

	n = ct_chain_lookup(&sp->heads[id], id, h, k);
	if (__builtin_expect(n != NULL, 1))
		return n;
	/*
	 * Pairs with the release stores of (R): if the est scan saw a node
	 * of our key unlinked by a move to tw, the tw scan sees it linked.
	 */
	ct_delay(CT_DP_SP_READ_TW);
	ct_rcu_deref_fence();
	return ct_chain_lookup(&sp->heads[id + 1], id + 1, h, k);
}

/*
 * Reader, after a pass that missed: a miss is trusted only if no move
 * against the scan order ran on the stripe during a whole pass, i.e. seq
 * was even before it and unchanged after it. Any store of such a move that
 * the pass read was made after the odd seq store (release, (R)), so with
 * the fence the second seq load sees seq changed. An odd seq means a move
 * is between its two link stores: a few stores under a spinlock, so the
 * reader waits it out like a seqlock reader (yielding now and then, in
 * case the writer was preempted there).
 */
static __attribute__((noinline, cold)) struct conntab_node *
split_find_slow(struct ct_split *sp, uint32_t b, uint32_t h,
		const struct conntab_key *k)
{
	const struct ct_stripe *s = ct_stripe_of(&sp->locks, h);
	struct conntab_node *n;
	unsigned int spins = 0;
	uint32_t seq;

	for (;;) {
		seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (seq & 1) {
			if (++spins & 1023)
				ct_cpu_relax();
			else
				sched_yield();
			continue;
		}
		n = split_scan(sp, b, h, k);
		if (n)
			return n;
		ct_delay(CT_DP_SP_READ_SEQ);
		/* The scan (and any move store it read) before seq. */
		ct_rcu_deref_fence();
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
			return NULL;
	}
}

static inline struct conntab_node *
split_find(struct conntab *t, uint32_t h, const struct conntab_key *k)
{
	struct ct_split *sp = ct_split(t);
	uint32_t b = h & sp->mask;
	struct conntab_node *n;

	/* A hit is always right; only a miss needs the seq check. */
	n = split_scan(sp, b, h, k);
	if (__builtin_expect(n != NULL, 1))
		return n;
	return split_find_slow(sp, b, h, k);
}

static inline void split_prefetch_bucket(struct conntab *t, uint32_t h)
{
	struct ct_split *sp = ct_split(t);

	__builtin_prefetch(&sp->heads[split_est_id(h & sp->mask)]);
}

/*
 * Both chains' first nodes: the batch does not know which state it wants.
 * The est chain's is the one the probe checks (split_find walks it first).
 */
static inline struct conntab_node *split_prefetch_first(struct conntab *t,
							uint32_t h)
{
	struct ct_split *sp = ct_split(t);
	struct conntab_node **bk = &sp->heads[split_est_id(h & sp->mask)];
	struct conntab_node *e = ct_rcu_deref(bk[0]);
	struct conntab_node *w = ct_rcu_deref(bk[1]);

	__builtin_prefetch(ct_is_nulls(e) ? (void *)sp : e);
	__builtin_prefetch(ct_is_nulls(w) ? (void *)sp : w);
	return e;
}

CT_READ_OPS_DEFINE(split, split_find, split_prefetch_bucket,
		   split_prefetch_first)

static void split_prefetch(struct conntab *t, const struct conntab_key *key,
			   uint32_t h)
{
	struct ct_split *sp = ct_split(t);

	__builtin_prefetch(split_head(sp, h & sp->mask, CONNTAB_ESTABLISHED), 1);
	__builtin_prefetch(ct_stripe_of(&sp->locks, h), 1);
}

static int split_remove(struct conntab *t, struct conntab_node *n,
			bool claimed)
{
	struct ct_split *sp = ct_split(t);
	uint32_t h = n->ct_hash, b = h & sp->mask;
	struct conntab_node **pprev;
	struct ct_stripe *s;
	int err = -ENOENT;

	s = ct_lock_hash(&sp->locks, h);
	/* Recheck under the lock: a racing remove may have won. By (S) the
	 * state names the chain. */
	ct_delay(CT_DP_SP_LOCK_REMOVE);
	err = ct_node_check_locked(n, t, claimed);
	if (err) {
		/* -ENOENT, or CT_ECLAIMED: the front end waits (P2) */
	} else if (!(pprev = ct_chain_pprev(split_head(sp, b, n->ct_state),
					     n))) {
		err = -ENOENT;
	} else {
		ct_chain_unlink_release(pprev, n);
		ct_node_release(n);
		ct_stripe_add(s, -1, -(n->ct_state == CONNTAB_TIMEWAIT));
		ct_unreserve(t, n);
	}
	ct_unlock_stripe(s);
	return err;
}

static int split_timewait(struct conntab *t, struct conntab_node *est,
			  struct conntab_node *tw)
{
	struct ct_split *sp = ct_split(t);
	uint32_t h = est->ct_hash, b = h & sp->mask;
	struct conntab_node **twhead = split_head(sp, b, CONNTAB_TIMEWAIT);
	struct conntab_node **pprev = NULL;
	struct ct_stripe *s;
	int err = 0;

	s = ct_lock_hash(&sp->locks, h);
	ct_delay(CT_DP_SP_LOCK_TIMEWAIT);
	if ((err = ct_node_check_locked(est, t, false))) {
		/* -ENOENT, or CT_ECLAIMED: the front end waits (P2) */
	} else if (!(pprev = ct_chain_pprev(split_head(sp, b, est->ct_state),
					     est))) {
		err = -ENOENT;
	} else if (est->ct_state != CONNTAB_ESTABLISHED) {
		err = -EINVAL;
	} else if (tw == est) {
		/*
		 * The node itself changes chains (ct_chain_move: tw chain
		 * first, then off est). Its state changes first, so a walker
		 * of the tw chain never sees it ESTABLISHED; a reader that
		 * finds it on est meanwhile sees either state.
		 */
		ct_delay(CT_DP_SP_PUB_TW_STATE);
		__atomic_store_n(&est->ct_state, CONNTAB_TIMEWAIT,
				 __ATOMIC_RELAXED);
		ct_chain_move(pprev, est, twhead);
		ct_stripe_add(s, 0, 1);
	} else {
		/* tw on its chain before est leaves its own (R). */
		ct_chain_push(twhead, tw);
		ct_chain_unlink_release(pprev, est);
		ct_node_release(est);
		ct_stripe_add(s, 0, 1);
	}
	ct_unlock_stripe(s);
	return err;
}

/*
 * One pass of a walk or scan over bucket @b (walk.h): its est chain, then
 * its tw chain, into @sel. False if the est scan was diverted by a move to
 * tw; the pass is then retried (nothing was called yet).
 *
 * A node in the table for the whole walk is seen in every pass: if it left
 * est before the est scan reached it, it was on tw before (R), and the
 * fence makes the tw scan see it. A node caught in the move is seen on
 * both and kept once. tw chains never divert a reader (their nodes leave
 * only by unlink, which keeps the link).
 *
 * conntab_walk_state(CONNTAB_TIMEWAIT) scans only tw chains, so an expiry
 * sweep reads no established entry; CONNTAB_ESTABLISHED scans only est
 * chains, and the caller skips a node caught in its move to tw.
 */
static bool split_walk_pass(struct conntab *t, size_t b, int state,
			    struct ct_walk_sel *sel)
{
	struct ct_split *sp = ct_split(t);
	uintptr_t id = split_est_id((uint32_t)b);

	if (state != CONNTAB_TIMEWAIT &&
	    !ct_walk_sel_chain(sel, &sp->heads[id], id))
		return false;
	if (state == CONNTAB_ESTABLISHED)
		return true;
	/* Pairs with (R): a node gone from the est scan is on tw. */
	ct_delay(CT_DP_SP_READ_TW);
	ct_rcu_deref_fence();
	ct_walk_sel_chain(sel, &sp->heads[id + 1], id + 1);
	return true;
}

/* Both chains of bucket @b: a walk of one state still reads its heads. */
static void split_walk_ahead(struct conntab *t, size_t b)
{
	struct ct_split *sp = ct_split(t);
	uintptr_t id = split_est_id((uint32_t)b);

	ct_chain_prefetch(&sp->heads[id]);
	ct_chain_prefetch(&sp->heads[id + 1]);
}

static int split_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	uint64_t pos[CT_SCAN_POS_WORDS] = { 0 };
	enum ct_scan_end end;
	int fnret = 0;

	end = ct_walk_buckets(t, pos, (size_t)ct_split(t)->mask + 1, state,
			      SIZE_MAX, split_walk_pass, split_walk_ahead,
			      fn, arg, &fnret);
	return ct_walk_result(end, fnret);
}

static enum ct_scan_end split_table_scan(struct conntab *t, uint64_t *pos,
					 bool fresh, size_t budget,
					 ct_walk_fn fn, void *arg, int *fnret)
{
	return ct_walk_buckets(t, pos, (size_t)ct_split(t)->mask + 1,
			       CT_WALK_ALL, budget, split_walk_pass,
			       split_walk_ahead, fn, arg, fnret);
}

static void split_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_split *sp = ct_split(t);

	ct_locks_count(&sp->locks, &st->entries, &st->timewait);
	st->buckets = (size_t)sp->mask + 1;
	st->memory = sizeof(*sp) + ct_heads_memory(2 * st->buckets) +
		     ct_locks_memory(&sp->locks);
	/* The longest single chain, est or tw. */
	st->max_depth = ct_heads_max_depth(sp->heads, st->buckets, 2,
					   &sp->locks);
	st->resizes = 0;
}

const struct conntab_ops ct_split_ops = {
	.create		= split_create,
	.destroy	= split_destroy,
	.insert		= split_insert,
	.insert_evict	= split_insert_evict,
	.prefetch	= split_prefetch,
	.read		= CT_READ_OPS(split),
	.lookup_hashed	= split_find,
	.prefetch_hashed = split_prefetch_bucket,
	.remove		= split_remove,
	.timewait	= split_timewait,
	.walk		= split_walk,
	.scan		= split_table_scan,
	.stats		= split_stats,
};
