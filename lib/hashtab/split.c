/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_SPLIT: established and time-wait entries apart in every bucket
 * (Eric Dumazet's ehash layout, 2007), on CONNTAB_CHAINED's bucket of
 * tagged slots (slots.h).
 *
 * Layout. Bucket b is one cache line:
 *
 *	tags		a tag byte for each established slot, 0 if free
 *	over		established overflow chain, ends in ct_nulls(2b)
 *	tw		time-wait chain, ends in ct_nulls(2b + 1)
 *	slot[5]		established nodes
 *
 * An established lookup loads the line, compares its tag with the five
 * in one word operation and reads the node whose tag is its own: a hit
 * costs the bucket's line and the node's, as in CONNTAB_CHAINED. Time-wait
 * entries, often the majority on a busy server, take no slot and do not
 * lengthen the overflow chains that established lookups walk. The table
 * has chained's bucket count (ct_slots_buckets_for(): 2 to 4 nodes a
 * bucket at the sizing hint, 16 to 32 bytes an entry, the bytes two chain
 * heads a bucket took at 1 to 2 nodes a bucket). Five slots instead of
 * six: at 4 established nodes a bucket 10.3% of them overflow to the
 * chain (4.9% with six), at 2, 1.1% (0.3%): the Poisson tails, as
 * tests/test-slots.c measures them for six. Writers lock the stripe of
 * the key's hash (lock.h); a stripe covers whole buckets, so it guards
 * the whole line.
 *
 * Invariants (writers hold the bucket's stripe lock):
 *
 *  T1  A node is on its bucket's established side (a slot or the
 *      overflow chain) iff its state is CONNTAB_ESTABLISHED, else on the
 *      time-wait chain, except inside a writer's critical section that
 *      moves it. Writers find a node's side from its state.
 *  T2  Slots as slots.h S1: a writer fills a slot with a release store of
 *      the initialised node, then publishes its tag (release); it empties
 *      one tag first, then the slot, both release stores. A reader loads
 *      the tag word with acquire before any slot. Under the lock tag i is
 *      0 exactly when slot i is NULL.
 *  T3  A slotted node's link is ct_nulls(2b) (slots.h S3), until it moves
 *      to the time-wait chain; a node never moves from a slot to the
 *      overflow chain or back, and never leaves the time-wait chain but
 *      by removal (a recycle links a fresh node). So the only node that
 *      changes place is an established one going to time-wait, in place.
 *  T4  Every store a writer makes that takes a key off a place readers
 *      look (a tag, a slot, a chain link) is a release store made after
 *      the stores that put the key in its new place (R below).
 *
 * Readers scan the established side (slots, then the overflow chain),
 * then the time-wait chain. Keys move between the sides in two ways:
 *
 *  - est -> tw (conntab_timewait), along the scan order. The key is
 *    linked into the tw chain before it leaves its slot or the overflow
 *    chain (the same node, or a separate tw node pushed first). By T4 and
 *    the reader's acquire fence between its two scans, a reader that
 *    finds the key gone from the established side (its tag or slot
 *    cleared, or unlinked from the chain) finds it on tw. A reader
 *    standing on an overflow node while it moves follows it into the tw
 *    chain, ends on the tw marker and restarts its chain scan (chain.h);
 *    one that read a slot has the node already and needs no link.
 *
 *  - tw -> est (conntab_insert_recycle), against the scan order: a
 *    reader could scan est before the new node is published and tw after
 *    the old one is unlinked, and miss both. The stripe's seq is odd for
 *    the duration of such a move. A hit needs no check; a miss is trusted
 *    only after a scan of both sides that started on an even seq and
 *    ended on the same seq (split_find_slow). So the hit path stays the
 *    bucket line plus the node, and only misses read the stripe's line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "../conntab-int.h"
#include "../evict.h"
#include "hash-ops.h"
#include "heads.h"
#include "../mem.h"
#include "../probes.h"
#include "slots.h"
#include "walk.h"

/* Established slots a bucket: the line less the tags and two heads. */
#define SPLIT_SLOTS	5
/* The high bit of each tag byte in use (bytes 0 .. SPLIT_SLOTS - 1). */
#define SPLIT_HIGH	(0x8080808080808080ull >> (8 * (8 - SPLIT_SLOTS)))

struct split_bucket {
	uint64_t tags;			/* byte i: tag of slot i, 0 if free */
	struct conntab_node *over;	/* est overflow, ends ct_nulls(2b) */
	struct conntab_node *tw;	/* time-wait, ends ct_nulls(2b + 1) */
	struct conntab_node *slot[SPLIT_SLOTS];
} __attribute__((aligned(CT_CACHELINE)));

_Static_assert(sizeof(struct split_bucket) == CT_CACHELINE,
	       "a bucket is one cache line");

struct ct_split {
	struct conntab base;
	struct split_bucket *buckets;
	uint32_t mask;			/* buckets - 1 */
	struct ct_locks locks;
};

static inline struct ct_split *ct_split(struct conntab *t)
{
	return (struct ct_split *)t;
}

static inline struct split_bucket *split_bucket(struct ct_split *sp,
						uint32_t h)
{
	return &sp->buckets[h & sp->mask];
}

/* Chain ids of bucket @b: the overflow chain's is 2b, tw's 2b + 1. */
static inline uintptr_t split_est_id(size_t b)
{
	return 2 * (uintptr_t)b;
}

static size_t split_memory(size_t nb)
{
	return nb * sizeof(struct split_bucket);
}

/* One bit per slot whose tag in @tags is that of hash @h. */
static inline uint64_t split_match(uint64_t tags, uint32_t h)
{
	return ct_slots_zero_bytes(tags ^ (ct_slots_tag(h) * CT_SLOTS_LOW)) &
	       SPLIT_HIGH;
}

static struct conntab *split_create(const struct conntab *tmpl,
				    const struct conntab_config *cfg)
{
	size_t i, nb = ct_slots_buckets_for(cfg->expected);
	struct ct_split *sp;

	sp = aligned_alloc(CT_CACHELINE, sizeof(*sp));
	if (!sp)
		goto nomem;
	memset(sp, 0, sizeof(*sp));
	sp->base = *tmpl;
	sp->mask = (uint32_t)(nb - 1);
	/* Zeroed: every slot free (T2). */
	sp->buckets = ct_array_alloc(split_memory(nb));
	if (!sp->buckets)
		goto nomem;
	for (i = 0; i < nb; i++) {
		sp->buckets[i].over = ct_nulls(split_est_id(i));
		sp->buckets[i].tw = ct_nulls(split_est_id(i) + 1);
	}
	if (ct_locks_init(&sp->locks, nb))
		goto nomem;
	return &sp->base;
nomem:
	if (sp && sp->buckets)
		ct_array_free(sp->buckets, split_memory(nb));
	free(sp);
	errno = ENOMEM;
	return NULL;
}

static void split_release(struct conntab_node *n,
			  void (*release)(struct conntab_node *))
{
	ct_node_release(n);
	if (release)
		release(n);	/* may free n */
}

static void split_release_chain(struct conntab_node *n,
				void (*release)(struct conntab_node *))
{
	struct conntab_node *next;

	for (; !ct_is_nulls(n); n = next) {
		next = n->ct_next;
		split_release(n, release);
	}
}

static void split_destroy(struct conntab *t,
			  void (*release)(struct conntab_node *))
{
	struct ct_split *sp = ct_split(t);
	struct split_bucket *bk;
	size_t i, j;

	for (i = 0; i <= sp->mask; i++) {
		bk = &sp->buckets[i];
		for (j = 0; j < SPLIT_SLOTS; j++)
			if (bk->slot[j])
				split_release(bk->slot[j], release);
		split_release_chain(bk->over, release);
		split_release_chain(bk->tw, release);
	}
	ct_locks_fini(&sp->locks);
	ct_array_free(sp->buckets, split_memory((size_t)sp->mask + 1));
	free(sp);
}

/*
 * Writer (stripe locked): the established node of key @k in @bk, with
 * *@slot its slot, or -1 and *@pprev its overflow link; or NULL with
 * *@len the nodes on the overflow chain.
 */
static inline __attribute__((always_inline)) struct conntab_node *
split_est_find_locked(struct split_bucket *bk, uint32_t h,
		      const struct conntab_key *k, int *slot,
		      struct conntab_node ***pprev, size_t *len)
{
	uint64_t m = split_match(bk->tags, h);
	struct conntab_node *n;

	for (; m; m &= m - 1) {
		n = bk->slot[ct_slots_first(m)];
		if (n->ct_hash == h && ct_key_eq(&n->ct_key, k)) {
			*slot = (int)ct_slots_first(m);
			*pprev = NULL;
			return n;
		}
	}
	*slot = -1;
	return ct_chain_find_locked(&bk->over, h, k, pprev, len);
}

/* Writer (stripe locked): the slot holding @n, or -1. */
static int split_slot_index(const struct split_bucket *bk,
			    const struct conntab_node *n)
{
	int i;

	for (i = 0; i < SPLIT_SLOTS; i++)
		if (bk->slot[i] == n)
			return i;
	return -1;
}

/*
 * Writer (stripe locked): publish initialised established @n, whose key
 * is on no established place of @bk, in a free slot, or at the overflow
 * chain's head if none is (T2, T3). True if it took a slot.
 */
static inline __attribute__((always_inline)) bool
split_est_put(struct split_bucket *bk, uintptr_t id, struct conntab_node *n)
{
	uint64_t tags = bk->tags, fr = ct_slots_free(tags) & SPLIT_HIGH;
	unsigned int i;

	if (!fr) {
		ct_chain_push(&bk->over, n);
		return false;
	}
	i = ct_slots_first(fr);
	n->ct_next = ct_nulls(id);		/* T3 */
	ct_delay(CT_DP_SLOT_PUB);
	ct_rcu_assign(bk->slot[i], n);		/* pairs with ct_rcu_deref */
	ct_delay(CT_DP_SLOT_PUB_TAG);
	/* Release: a reader that sees the tag sees the slot (T2). */
	__atomic_store_n(&bk->tags, tags | ct_slots_tag(n->ct_hash) << (8 * i),
			 __ATOMIC_RELEASE);
	return true;
}

/*
 * Writer (stripe locked): take established @n off slot @slot, or off the
 * overflow link *@pprev. Tag first, then slot (T2); all release stores,
 * so a reader that sees any of them gone and fences sees what this writer
 * did before under the lock, such as @n's key pushed on tw (T4).
 */
static void split_est_unlink(struct split_bucket *bk, int slot,
			     struct conntab_node **pprev,
			     struct conntab_node *n)
{
	if (slot < 0) {
		ct_chain_unlink_release(pprev, n);
		return;
	}
	ct_delay(CT_DP_SLOT_UNLINK);
	__atomic_store_n(&bk->tags, bk->tags & ~(0xffull << (8 * slot)),
			 __ATOMIC_RELEASE);
	ct_delay(CT_DP_SLOT_UNLINK);
	__atomic_store_n(&bk->slot[slot], NULL, __ATOMIC_RELEASE);
}

/*
 * Writer (stripe locked): where established @n is: its slot, or -1 and
 * *@pprev its overflow link. False if it is on neither.
 */
static bool split_est_where(struct split_bucket *bk, struct conntab_node *n,
			    int *slot, struct conntab_node ***pprev)
{
	*pprev = NULL;
	*slot = split_slot_index(bk, n);
	if (*slot >= 0)
		return true;
	*pprev = ct_chain_pprev(&bk->over, n);
	return *pprev != NULL;
}

/*
 * Bracket a move against the readers' scan order (writer, stripe locked).
 * The odd store needs no fence of its own: every store of the move that a
 * reader can read is a release store (T2, chain.h), each of which orders
 * the odd store before it. So a reader that reads any of them and then
 * fences (split_find_slow) sees seq changed. (A release fence here said
 * the same a second time, and is one ThreadSanitizer cannot see.)
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
static inline __attribute__((always_inline)) int
split_insert_locked(struct conntab *t, struct ct_stripe *s,
		    struct conntab_node *n, struct conntab_node **recycled)
{
	struct ct_split *sp = ct_split(t);
	uint32_t h = n->ct_hash;
	struct split_bucket *bk = split_bucket(sp, h);
	uintptr_t id = split_est_id(h & sp->mask);
	struct conntab_node **pprev = NULL, *old;
	size_t nover = 0;
	int slot;

	old = split_est_find_locked(bk, h, &n->ct_key, &slot, &pprev, &nover);
	if (old)	/* a pair's half whose step may yet fail (P2) */
		return ct_node_check_locked(old, t, false) == CT_ECLAIMED ?
		       CT_ECLAIMED : -EEXIST;
	old = ct_chain_find_locked(&bk->tw, h, &n->ct_key, &pprev, NULL);
	if (old) {
		if (!recycled)
			return -EEXIST;
		/*
		 * tw -> est: publish first, so the key is in the bucket at
		 * every instant; seq odd meanwhile, since a reader scans
		 * est before tw (see top of file).
		 */
		split_seq_begin(s);
		split_est_put(bk, id, n);
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
	/* The path a lookup of the key walks: its slot, or the chain. */
	nover = split_est_put(bk, id, n) ? 1 : nover + 1;
	ct_stripe_add(s, 1, 0);
	ct_probe_chain(t, h, nover);
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
 * conntab_insert() for a key of hash @h, arguments checked (ops->
 * insert_key; split's writers need no counted thread): the front end's
 * claim and this backend's insert in one function, as chained's, the
 * bucket's and the stripe's lines prefetched before the claim's
 * compare-and-swap. A failed insert releases @n.
 */
static inline __attribute__((always_inline)) int
split_insert_key(struct conntab *t, struct conntab_node *n,
		 const struct conntab_key *key, uint32_t h)
{
	struct ct_split *sp = ct_split(t);
	struct ct_stripe *s = ct_stripe_of(&sp->locks, h);
	int err;

	__builtin_prefetch(split_bucket(sp, h), 1);
	__builtin_prefetch(s, 1);
	if (!ct_node_claim_key(n, t, key, h))
		return -EBUSY;
	ct_spin_lock(&s->lock);
	err = split_insert_locked(t, s, n, NULL);
	ct_unlock_stripe(s);
	if (__builtin_expect(err == CT_ECLAIMED, 0))
		err = ct_insert_wait(t, n);
	if (err)
		ct_node_release(n);
	return err;
}

static int split_insert_siphash(struct conntab *t, struct conntab_node *n,
				const struct conntab_key *key)
{
	return split_insert_key(t, n, key, ct_hash_sip(&t->secret, key));
}

#ifdef CT_HAVE_AES
static CT_AES_TARGET int split_insert_aes(struct conntab *t,
					  struct conntab_node *n,
					  const struct conntab_key *key)
{
	return split_insert_key(t, n, key, ct_hash_aes(&t->aes, key));
}
#endif

/*
 * Sample source of an eviction: the slots and both chains of bucket @b, a
 * unit for its line, a unit for each node ranked or walked (evict.h).
 */
static inline __attribute__((always_inline)) void
split_sample_bucket(void *ctx, size_t b, struct ct_stripe *s,
		    struct ct_victim *v)
{
	struct split_bucket *bk = &((struct ct_split *)ctx)->buckets[b];
	unsigned int i;

	ct_victim_spend(v);
	for (i = 0; i < SPLIT_SLOTS && !ct_victim_done(v); i++) {
		if (!bk->slot[i] || !ct_victim_take(v))
			continue;
		ct_victim_walk(v);
		ct_victim_offer(v, bk->slot[i], &bk->over, s, &s->lock);
	}
	ct_victim_chain(v, &bk->over, s, &s->lock);
	ct_victim_chain(v, &bk->tw, s, &s->lock);
}

/* A hint (heads.h): the bucket's slotted nodes and its chains' first. */
static void split_prefetch_nodes(struct split_bucket *bk)
{
	unsigned int i;

	for (i = 0; i < SPLIT_SLOTS; i++) {
		struct conntab_node *n = __atomic_load_n(&bk->slot[i],
							 __ATOMIC_RELAXED);

		if (n)
			__builtin_prefetch(n);
	}
	ct_chain_prefetch(&bk->over);
	ct_chain_prefetch(&bk->tw);
}

static inline __attribute__((always_inline)) void
split_sample_ahead(void *ctx, size_t b)
{
	split_prefetch_nodes(&((struct ct_split *)ctx)->buckets[b]);
}

/*
 * Writer (@n's stripe locked): take @n off its bucket, on the side its
 * state names (T1), with release stores (a plain unlink: no move, no
 * seq). False if it is not there.
 */
static bool split_unlink(struct ct_split *sp, struct conntab_node *n)
{
	struct split_bucket *bk = split_bucket(sp, n->ct_hash);
	struct conntab_node **pprev = NULL;
	int slot;

	if (n->ct_state == CONNTAB_TIMEWAIT) {
		if (!(pprev = ct_chain_pprev(&bk->tw, n)))
			return false;
		ct_chain_unlink_release(pprev, n);
		return true;
	}
	if (!split_est_where(bk, n, &slot, &pprev))
		return false;
	split_est_unlink(bk, slot, pprev, n);
	return true;
}

/*
 * At the cap, evict a sampled node of either side for @n (key absent,
 * checked under the stripe @s we hold): the victim's reservation passes
 * to @n. -ENOSPC with v->busy: the sample met another writer step.
 */
static int split_evict(struct ct_split *sp, struct ct_stripe *s,
		       struct conntab_node *n, struct ct_victim *v,
		       struct conntab_node **evicted)
{
	struct ct_stripe *vs;
	uint32_t h = n->ct_hash;

	ct_victim_thin_table(v, &sp->base, (size_t)sp->mask + 1);
	if (!ct_stripes_sample((size_t)sp->mask + 1, &sp->locks, s,
			       h & sp->mask, v, split_sample_bucket,
			       split_sample_ahead, sp))
		return -ENOSPC;
	vs = v->owner;
	ct_delay(CT_DP_EVICT_UNLINK);
	split_unlink(sp, v->node);
	ct_node_release(v->node);
	ct_stripe_add(vs, -1, -(v->node->ct_state == CONNTAB_TIMEWAIT));
	ct_victim_unlock(v, &s->lock);
	split_est_put(split_bucket(sp, h), split_est_id(h & sp->mask), n);
	ct_stripe_add(s, 1, 0);
	*evicted = v->node;
	return 0;
}

static int split_insert_evict(struct conntab *t, struct conntab_node *n,
			      ct_rank_fn rank, void *arg,
			      struct conntab_node **evicted)
{
	struct ct_split *sp = ct_split(t);
	unsigned int tries = 0;
	struct ct_victim v;
	struct ct_stripe *s;
	int err;

	for (;;) {
		s = ct_lock_hash(&sp->locks, n->ct_hash);
		err = split_insert_locked(t, s, n, NULL);
		/* -ENOSPC comes after the key check: the key is absent. */
		if (err == -ENOSPC) {
			ct_victim_init(&v, t, rank, arg);
			v.self = n->ct_peer;
			v.tries = tries;
			err = split_evict(sp, s, n, &v, evicted);
		}
		ct_unlock_stripe(s);
		/* -ENOSPC after a sample another writer crossed: again. */
		if (err != -ENOSPC || !ct_evict_again(&v, &tries))
			return err;
	}
}

/*
 * How a reader matches a bucket's tags, a constant where the read paths
 * are inlined (slots.h's struct ct_slots_tagops, whose free() no reader
 * calls): the portable match, or in the AES read paths the SSE one of
 * slots.h, which is right for five slots as for six (bytes 5 to 7 of the
 * tags are 0, which the probe, never 0, does not equal) and gives bit i
 * for slot i (sh 0) where the portable one gives bit 8i + 7 (sh 3).
 */
#define SPLIT_TAGOPS	((struct ct_slots_tagops){ split_match, NULL, 3 })
#ifdef CT_SLOTS_HAVE_SSE
# define SPLIT_TAGOPS_SSE \
	((struct ct_slots_tagops){ ct_slots_match_sse, NULL, 0 })
#endif

/*
 * Reader: the established side of bucket @bk (id @id): the slots whose
 * tag is @h's, then the overflow chain.
 */
static inline __attribute__((always_inline)) struct conntab_node *
split_est_lookup(const struct split_bucket *bk, uintptr_t id, uint32_t h,
		 const struct conntab_key *k, const struct ct_slots_tagops to)
{
	/* Acquire: pairs with the tag store after the slot's (T2). */
	uint64_t m = to.match(__atomic_load_n(&bk->tags, __ATOMIC_ACQUIRE), h);
	struct conntab_node *n;

	for (; m; m &= m - 1) {
		ct_delay(CT_DP_SLOT_READ);
		n = ct_rcu_deref(bk->slot[__builtin_ctzll(m) >> to.sh]);
		if (!n)
			continue;	/* emptied since the tags: T4 */
		/* The caller's data begins on the node's second line. */
		__builtin_prefetch((const char *)n + CT_CACHELINE);
		if (n->ct_hash == h && ct_key_eq(&n->ct_key, k))
			return n;
	}
	/*
	 * An overflow node never goes to a slot (T3): the chain walk,
	 * restarting if a move to tw diverted it, misses none there.
	 */
	return ct_chain_lookup(&bk->over, id, h, k);
}

/*
 * Reader: one pass over the established side, then the tw chain. Inlined
 * into the lookup, which GCC otherwise calls it from (12 instructions of
 * 102 a lookup, callgrind).
 */
static inline __attribute__((always_inline)) struct conntab_node *
split_scan(struct ct_split *sp, uint32_t h, const struct conntab_key *k,
	   const struct ct_slots_tagops to)
{
	uintptr_t id = split_est_id(h & sp->mask);
	struct split_bucket *bk = split_bucket(sp, h);
	struct conntab_node *n;

	n = split_est_lookup(bk, id, h, k, to);
	if (__builtin_expect(n != NULL, 1))
		return n;
	/*
	 * Pairs with the release stores of T4: if the est scan saw our
	 * key's tag, slot or link gone by a move to tw, the tw scan sees
	 * the key linked there.
	 */
	ct_delay(CT_DP_SP_READ_TW);
	ct_rcu_deref_fence();
	return ct_chain_lookup(&bk->tw, id + 1, h, k);
}

/*
 * Reader, after a pass that missed: a miss is trusted only if no move
 * against the scan order ran on the stripe during a whole pass, i.e. seq
 * was even before it and unchanged after it. Any store of such a move that
 * the pass read was made after the odd seq store (release, T4), so with
 * the fence the second seq load sees seq changed. An odd seq means a move
 * is between its stores: a few stores under a spinlock, so the reader
 * waits it out like a seqlock reader (yielding now and then, in case the
 * writer was preempted there).
 */
static __attribute__((noinline, cold)) struct conntab_node *
split_find_slow(struct ct_split *sp, uint32_t h, const struct conntab_key *k)
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
		n = split_scan(sp, h, k, SPLIT_TAGOPS);
		if (n)
			return n;
		ct_delay(CT_DP_SP_READ_SEQ);
		/* The scan (and any move store it read) before seq. */
		ct_rcu_deref_fence();
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
			return NULL;
	}
}

static inline __attribute__((always_inline)) struct conntab_node *
split_find_t(struct conntab *t, uint32_t h, const struct conntab_key *k,
	     const struct ct_slots_tagops to)
{
	struct ct_split *sp = ct_split(t);
	struct conntab_node *n;

	/* A hit is always right; only a miss needs the seq check. */
	n = split_scan(sp, h, k, to);
	if (__builtin_expect(n != NULL, 1))
		return n;
	return split_find_slow(sp, h, k);
}

static inline struct conntab_node *
split_find(struct conntab *t, uint32_t h, const struct conntab_key *k)
{
	return split_find_t(t, h, k, SPLIT_TAGOPS);
}

static inline void split_prefetch_bucket(struct conntab *t, uint32_t h)
{
	__builtin_prefetch(split_bucket(ct_split(t), h));
}

/*
 * The node a lookup of @h checks first (a slot with its tag, else the
 * overflow chain's first node), prefetched with the line after it, and
 * the tw chain's first node: the batch does not know which state it
 * wants. With no tag of its own and no overflow chain the key can only be
 * on tw, so the probes start there (batch.h: a probe hit is a node of the
 * key reached from the bucket; a probe miss proves nothing).
 */
static inline __attribute__((always_inline)) struct conntab_node *
split_prefetch_first_t(struct conntab *t, uint32_t h,
		       const struct ct_slots_tagops to)
{
	const struct split_bucket *bk = split_bucket(ct_split(t), h);
	uint64_t m = to.match(__atomic_load_n(&bk->tags, __ATOMIC_ACQUIRE), h);
	struct conntab_node *over = ct_rcu_deref(bk->over);
	struct conntab_node *w = ct_rcu_deref(bk->tw);
	struct conntab_node *x;

	/* The batch's window between the tags and the slot, as a lookup's. */
	ct_delay(CT_DP_SLOT_READ);
	x = m ? ct_rcu_deref(bk->slot[__builtin_ctzll(m) >> to.sh]) : NULL;
	/* An emptied slot reads NULL: probe the chains instead (T2). */
	x = x ? x : ct_is_nulls(over) ? w : over;
	__builtin_prefetch(ct_is_nulls(x) ? (const void *)bk : x);
	__builtin_prefetch(ct_is_nulls(x) ? (const void *)bk :
			   (const void *)((const char *)x + CT_CACHELINE));
	__builtin_prefetch(ct_is_nulls(w) || w == x ? (const void *)bk : w);
	return x;
}

static inline struct conntab_node *split_prefetch_first(struct conntab *t,
							uint32_t h)
{
	return split_prefetch_first_t(t, h, SPLIT_TAGOPS);
}

#ifdef CT_SLOTS_HAVE_SSE
/* The AES pair's steps: the same, with the SSE tag match. */
static inline CT_AES_TARGET __attribute__((always_inline))
struct conntab_node *
split_find_sse(struct conntab *t, uint32_t h, const struct conntab_key *k)
{
	return split_find_t(t, h, k, SPLIT_TAGOPS_SSE);
}

static inline CT_AES_TARGET __attribute__((always_inline))
struct conntab_node *
split_prefetch_first_sse(struct conntab *t, uint32_t h)
{
	return split_prefetch_first_t(t, h, SPLIT_TAGOPS_SSE);
}
#else
# define split_find_sse			split_find
# define split_prefetch_first_sse	split_prefetch_first
#endif

CT_READ_OPS_DEFINE2(split, split_find, split_prefetch_bucket,
		    split_prefetch_first, split_find_sse,
		    split_prefetch_first_sse)

static void split_prefetch(struct conntab *t, const struct conntab_key *key,
			   uint32_t h)
{
	struct ct_split *sp = ct_split(t);

	__builtin_prefetch(split_bucket(sp, h), 1);
	__builtin_prefetch(ct_stripe_of(&sp->locks, h), 1);
}

static inline __attribute__((always_inline)) int
split_remove_inline(struct conntab *t, struct conntab_node *n, bool claimed)
{
	struct ct_split *sp = ct_split(t);
	struct ct_stripe *s;
	int err;

	s = ct_lock_hash(&sp->locks, n->ct_hash);
	/* Recheck under the lock: a racing remove may have won. By T1 the
	 * state names the side. */
	ct_delay(CT_DP_SP_LOCK_REMOVE);
	err = ct_node_check_locked(n, t, claimed);
	if (err) {
		/* -ENOENT, or CT_ECLAIMED: the front end waits (P2) */
	} else if (!split_unlink(sp, n)) {
		err = -ENOENT;
	} else {
		ct_node_release(n);
		ct_stripe_add(s, -1, -(n->ct_state == CONNTAB_TIMEWAIT));
		ct_unreserve(t, n);
	}
	ct_unlock_stripe(s);
	return err;
}

static int split_remove(struct conntab *t, struct conntab_node *n,
			bool claimed)
{
	return split_remove_inline(t, n, claimed);
}

/*
 * conntab_remove() of a single node that @t owns (ops->remove_single):
 * the backend's remove called directly, retried while another writer
 * step holds the node (P2).
 */
static int split_remove_single(struct conntab *t, struct conntab_node *n)
{
	int err = split_remove_inline(t, n, false);

	return err == CT_ECLAIMED ? ct_remove_wait(t, n) : err;
}

static int split_timewait(struct conntab *t, struct conntab_node *est,
			  struct conntab_node *tw)
{
	struct ct_split *sp = ct_split(t);
	struct split_bucket *bk = split_bucket(sp, est->ct_hash);
	struct conntab_node **pprev = NULL;
	struct ct_stripe *s;
	int err, slot = -1;

	s = ct_lock_hash(&sp->locks, est->ct_hash);
	ct_delay(CT_DP_SP_LOCK_TIMEWAIT);
	if ((err = ct_node_check_locked(est, t, false))) {
		/* -ENOENT, or CT_ECLAIMED: the front end waits (P2) */
	} else if (est->ct_state != CONNTAB_ESTABLISHED) {
		/* On the tw chain (T1), or in none: as before, -ENOENT first */
		err = ct_chain_pprev(&bk->tw, est) ? -EINVAL : -ENOENT;
	} else if (!split_est_where(bk, est, &slot, &pprev)) {
		err = -ENOENT;
	} else if (tw == est && slot < 0) {
		/*
		 * The node itself changes chains (ct_chain_move: tw chain
		 * first, then off the overflow chain). Its state changes
		 * first, so a walker of the tw chain never sees it
		 * ESTABLISHED; a reader that finds it on est meanwhile sees
		 * either state.
		 */
		ct_delay(CT_DP_SP_PUB_TW_STATE);
		__atomic_store_n(&est->ct_state, CONNTAB_TIMEWAIT,
				 __ATOMIC_RELAXED);
		ct_chain_move(pprev, est, &bk->tw);
		ct_stripe_add(s, 0, 1);
	} else {
		/*
		 * A slotted node (tw == est), or a separate tw node: pushed
		 * on tw before est leaves its slot or chain (T4). A slotted
		 * node's link leaves its marker (T3) for the tw chain, so a
		 * batch probe standing on it goes on along tw, a chain that
		 * holds it (batch.h: probe hits are any node of the key
		 * reached from the bucket).
		 */
		if (tw == est) {
			ct_delay(CT_DP_SP_PUB_TW_STATE);
			__atomic_store_n(&est->ct_state, CONNTAB_TIMEWAIT,
					 __ATOMIC_RELAXED);
			/* A release store: a probe may read the link. */
			ct_delay(CT_DP_CHAIN_PUB_MOVE_LINK);
			ct_rcu_assign(est->ct_next, bk->tw);
			ct_delay(CT_DP_CHAIN_PUB_MOVE_DST);
			ct_rcu_assign(bk->tw, est);
		} else {
			ct_chain_push(&bk->tw, tw);
		}
		split_est_unlink(bk, slot, pprev, est);
		if (tw != est)
			ct_node_release(est);
		ct_stripe_add(s, 0, 1);
	}
	ct_unlock_stripe(s);
	return err;
}

/*
 * One pass of a walk or scan over bucket @b (walk.h): its slots and
 * overflow chain, then its tw chain, into @sel. False if the overflow
 * scan was diverted by a move to tw; the pass is then retried (nothing
 * was called yet).
 *
 * A node in the table for the whole walk is seen in every pass: if it left
 * its slot or the overflow chain before the pass read it there, it was on
 * tw before (T4), and the fence makes the tw scan see it. A node caught in
 * the move is seen on both and kept once. tw chains never divert a reader
 * (their nodes leave only by unlink, which keeps the link: T3).
 *
 * conntab_walk_state(CONNTAB_TIMEWAIT) scans only tw chains, so an expiry
 * sweep reads no established entry; CONNTAB_ESTABLISHED scans only the
 * established side, and the caller skips a node caught in its move to tw.
 */
static bool split_walk_pass(struct conntab *t, size_t b, int state,
			    struct ct_walk_sel *sel)
{
	struct split_bucket *bk = &ct_split(t)->buckets[b];
	uintptr_t id = split_est_id(b);
	struct conntab_node *n;
	unsigned int i;

	if (state != CONNTAB_TIMEWAIT) {
		for (i = 0; i < SPLIT_SLOTS; i++)
			if ((n = ct_rcu_deref(bk->slot[i])))
				ct_walk_sel_offer(sel, n);
		if (!ct_walk_sel_chain(sel, &bk->over, id))
			return false;
	}
	if (state == CONNTAB_ESTABLISHED)
		return true;
	/* Pairs with T4: a node gone from the est side is on tw. */
	ct_delay(CT_DP_SP_READ_TW);
	ct_rcu_deref_fence();
	ct_walk_sel_chain(sel, &bk->tw, id + 1);
	return true;
}

static void split_walk_ahead(struct conntab *t, size_t b)
{
	split_prefetch_nodes(&ct_split(t)->buckets[b]);
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

/*
 * The most nodes one side of a bucket holds (its slots and overflow
 * chain, or its tw chain), each stripe counted under its lock.
 */
static size_t split_max_depth(struct ct_split *sp)
{
	size_t b, i, len, depth = 0, nb = (size_t)sp->mask + 1;
	struct split_bucket *bk;
	uint32_t sidx;

	for (sidx = 0; sidx <= sp->locks.mask; sidx++) {
		struct ct_stripe *s = &sp->locks.stripe[sidx];

		ct_spin_lock(&s->lock);
		for (b = sidx; b < nb; b += (size_t)sp->locks.mask + 1) {
			bk = &sp->buckets[b];
			len = ct_chain_len(&bk->over);
			for (i = 0; i < SPLIT_SLOTS; i++)
				len += bk->slot[i] != NULL;
			if (len > depth)
				depth = len;
			len = ct_chain_len(&bk->tw);
			if (len > depth)
				depth = len;
		}
		ct_unlock_stripe(s);
	}
	return depth;
}

static void split_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_split *sp = ct_split(t);

	ct_locks_count(&sp->locks, &st->entries, &st->timewait);
	st->buckets = (size_t)sp->mask + 1;
	st->memory = sizeof(*sp) + split_memory(st->buckets) +
		     ct_locks_memory(&sp->locks);
	st->max_depth = split_max_depth(sp);
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
	.insert_key	= {
		[CONNTAB_HASH_SIPHASH] = split_insert_siphash,
#ifdef CT_HAVE_AES
		[CONNTAB_HASH_AES] = split_insert_aes,
#endif
	},
	.remove		= split_remove,
	.remove_single	= split_remove_single,
	.timewait	= split_timewait,
	.walk		= split_walk,
	.scan		= split_table_scan,
	.stats		= split_stats,
};
