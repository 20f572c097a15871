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
#include "hash/aes.h"
#include "delay.h"
#include "hash/hash.h"
#include "lock.h"
#include "rcu.h"

struct conntab_ops;
struct ct_reg_family;

/*
 * Thread-local state of the library (a writer's counter shard, the
 * eviction sampler's random state): initial-exec, so that reading it is
 * one %fs-relative load instead of a __tls_get_addr() call (11
 * instructions, twice per trie remove). 56 bytes in all (rcu-reg.h's
 * cache is 32 of them): glibc keeps a static TLS surplus for dlopen()ed
 * libraries (hundreds of bytes) that holds them.
 */
#define CT_TLS	__thread __attribute__((tls_model("initial-exec")))

typedef struct conntab_node *(*ct_lookup_fn)(struct conntab *t,
					     const struct conntab_key *k);
typedef size_t (*ct_batch_fn)(struct conntab *t,
			      const struct conntab_key *keys,
			      struct conntab_node **out, size_t n);
typedef int (*ct_insert_fn)(struct conntab *t, struct conntab_node *n,
			    const struct conntab_key *key);

/*
 * The head of every table; each backend embeds it first in its own struct.
 * Read-mostly fields share the first line, with the read paths of the
 * table's hash, so that conntab_lookup() costs one load and one call
 * before the backend's code; the AES round keys (read by every AES hash)
 * follow, and in the rest of their last line and the next the key that
 * seals scan cursors (lib/cursor.c) and the flavor's family (read-only,
 * by every exthash and trie writer: rcu-reg.h). The max_entries counter,
 * written by every insert when a cap is set, has a line of its own.
 */
struct conntab {
	ct_lookup_fn lookup;		/* ops->read[hash].lookup */
	ct_batch_fn lookup_batch;	/* ops->read[hash].lookup_batch */
	/*
	 * conntab_insert() past its argument checks: the backend's own path
	 * for the table's hash (ops->insert_key), else the front end's
	 * generic one. One jump, where comparing the backend and then the
	 * hash was five instructions of every insert.
	 */
	ct_insert_fn insert;
	const struct conntab_ops *ops;
	const struct rcu_flavor_struct *flavor;
	size_t max_entries;
	enum conntab_backend backend;
	enum conntab_hash hash;		/* SIPHASH or AES, never AUTO */
	struct ct_secret secret;	/* SipHash key, and the AES key's bytes */

	struct ct_aes_key aes __attribute__((aligned(CT_CACHELINE)));
	struct ct_secret cursor_key;	/* random, not derived from secret */
	/*
	 * How to tell whether a thread is counted by flavor (rcu-reg.h):
	 * reg for every backend, NULL where the library cannot tell (bp,
	 * an unidentified flavor); wreg the same where the backend's
	 * writers need a counted thread (exthash, trie), else NULL.
	 */
	const struct ct_reg_family *reg;
	const struct ct_reg_family *wreg;

	size_t reserved __attribute__((aligned(CT_CACHELINE)));
	/*
	 * conntab_counters(): relaxed atomic adds by the front end, rare
	 * next to the inserts that write reserved, so they share its line.
	 */
	uint64_t pairs;			/* pairs with both halves in */
	uint64_t evictions;		/* victims unlinked by an eviction */
	uint64_t evict_refused;		/* evicting inserts that got -ENOSPC */
	uint64_t scan_passes;		/* conntab_scan() passes ended */
};

/*
 * The keyed hash of @k under @t's hash choice, for writers and other code
 * off the lookup path: a predictable branch and a direct call. The lookup
 * paths inline theirs instead (hash-ops.h).
 */
static inline __attribute__((always_inline)) uint32_t
ct_hash_key(const struct conntab *t, const struct conntab_key *k)
{
#ifdef CT_HAVE_AES
	if (t->hash == CONNTAB_HASH_AES)
		return ct_hash_aes_call(&t->aes, k);
#endif
	return ct_hash_sip(&t->secret, k);
}

/* The read paths of a backend for one hash (lookup and batch). */
struct ct_read_ops {
	ct_lookup_fn lookup;
	ct_batch_fn lookup_batch;
};

/* ops->read[] is indexed by the resolved enum conntab_hash. */
#define CT_NHASH	(CONNTAB_HASH_AES + 1)

/* State filter for ops->walk: every node. */
#define CT_WALK_ALL	(-1)

typedef int (*ct_walk_fn)(struct conntab_node *n, void *arg);
typedef long (*ct_rank_fn)(struct conntab_node *victim, void *arg);

/*
 * Words of struct conntab_cursor that the backend's scan owns (the front
 * end keeps opaque[0]): 40 bytes, an IPv6 canonical key string (key.h).
 */
#define CT_SCAN_POS_WORDS	5

/*
 * Empty slots a scan call may pass per unit of budget (conntab_scan():
 * "the budget also bounds the work on empty slots").
 */
#define CT_SCAN_EMPTY_PER_BUDGET	16

/*
 * How a backend's scan call (or a walk, a pass with no budget) ended.
 * Kept apart from fn's value, which may be any int: when a callback's
 * stop and the end of the pass shared the value 1, a stop was taken for
 * the end and the rest of the pass was lost.
 */
enum ct_scan_end {
	CT_SCAN_BUDGET,		/* a budget ran out; pos says where */
	CT_SCAN_PASS,		/* nothing is left: the pass is over */
	CT_SCAN_STOPPED,	/* fn returned nonzero; pos just after its node */
	CT_SCAN_BADPOS,		/* pos is no position this backend writes */
};

struct conntab_ops {
	/*
	 * The front end stores the key's keyed hash in n->ct_hash before
	 * insert; a backend that indexes by the key's own bits (the trie)
	 * sets this and saves the hash on every insert.
	 */
	bool unhashed;
	/*
	 * Writers, stats and destroy retire memory through the flavor's
	 * call_rcu and read it under its read lock, which protect only a
	 * thread the flavor counts: the front end makes sure the calling
	 * thread is counted for the call's duration (rcu-reg.h).
	 */
	bool registered_writers;
	/*
	 * Lookup and batch per hash, the hash inlined in each (hash-ops.h);
	 * an unhashed backend gives the same pair for every hash. A NULL
	 * entry: that hash is not built in (AES on other architectures).
	 */
	struct ct_read_ops read[CT_NHASH];
	/*
	 * conntab_lookup_hashed(): the lookup with the keyed hash @h given
	 * (the unhashed trie ignores it): the hash backends' find(t, h, k)
	 * that their lookups inline (hash-ops.h). Any @h is safe: a node
	 * is returned only if its stored hash is @h and its key is @k, so a
	 * wrong @h misses and never finds another key's node.
	 */
	struct conntab_node *(*lookup_hashed)(struct conntab *t, uint32_t h,
					      const struct conntab_key *k);
	/*
	 * Optional, conntab_prefetch(): prefetch what a lookup of hash @h
	 * reads first (the batch's bucket step). Under the read lock, as the
	 * lookup it prepares (exthash reads its directory); any @h.
	 */
	void (*prefetch_hashed)(struct conntab *t, uint32_t h);
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
	 * Optional, per hash: conntab_insert() past its argument checks,
	 * the backend's own path (hash inlined, claim and link in one
	 * function, no call through this table); it asks for a counted
	 * thread itself where the backend needs one. NULL: the front end's
	 * generic path, ct_insert_generic(). Read once, into t->insert.
	 */
	ct_insert_fn insert_key[CT_NHASH];
	/*
	 * Optional: conntab_remove() of a node that @t owns (seen with
	 * acquire) and that is no pair's half, retried while another
	 * writer step holds it (P2), as ct_remove_node() does; it asks for
	 * a counted thread itself where the backend needs one
	 * (ct_remove_uncounted()).
	 */
	int (*remove_single)(struct conntab *t, struct conntab_node *n);
	/*
	 * Optional: prefetch for writing what an insert of @key will touch
	 * first (bucket, lock stripe; the trie's root slot), before the front
	 * end claims the node. @hash is the key's keyed hash (0 when
	 * unhashed). Called without the RCU read lock: it may compute
	 * addresses from what it reads of the table, but load nothing from
	 * memory that a writer may free.
	 */
	void (*prefetch)(struct conntab *t, const struct conntab_key *key,
			 uint32_t hash);
	/*
	 * Unlink @n. @claimed: the caller holds @n's claim (P1) and alone
	 * may unlink it; else CT_ECLAIMED for a node another step holds.
	 */
	int (*remove)(struct conntab *t, struct conntab_node *n, bool claimed);
	/*
	 * @tw is @est, or claimed with the key, hash and TIME_WAIT state of
	 * @est already copied in.
	 */
	int (*timewait)(struct conntab *t, struct conntab_node *est,
			struct conntab_node *tw);
	/* @state is CT_WALK_ALL or an enum conntab_state. */
	int (*walk)(struct conntab *t, int state, ct_walk_fn fn, void *arg);
	/*
	 * Visit at most @budget nodes from the position in @pos (ignored
	 * when @fresh: a pass starts), as conntab_scan() says; write the
	 * resume position into @pos. Returns how the call ended; for
	 * CT_SCAN_STOPPED, fn's nonzero value is in *@fnret.
	 */
	enum ct_scan_end (*scan)(struct conntab *t,
				 uint64_t pos[CT_SCAN_POS_WORDS], bool fresh,
				 size_t budget, ct_walk_fn fn, void *arg,
				 int *fnret);
	/*
	 * Insert @n (claimed; key, hash and state set) as insert does; if
	 * the cap is reached, evict the best-ranked node of a sample (see
	 * conntab_insert_evict()), its reservation passing to @n.
	 */
	int (*insert_evict)(struct conntab *t, struct conntab_node *n,
			    ct_rank_fn rank, void *arg,
			    struct conntab_node **evicted);
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

/*
 * An eviction's claim on its victim (CONNTAB_TRIE, lib/trie/trie-evict.c):
 * while the newcomer is being inserted the victim stays linked, and its
 * ct_owner holds the table's address with bit 0 set (tables come from
 * aligned allocations, so the bit is free). The mark is set under the
 * lock that owns the victim's place, so a writer that checks it under
 * that lock either unlinked the node before the claim or sees the claim
 * and leaves the node alone; only the eviction ends it (release stores).
 * Whoever meets a claimed node waits (ct_node_wait_evict())
 * instead of answering -ENOENT: the eviction ends within its newcomer's
 * insert, with the victim unlinked (owner NULL) or left as it was
 * (owner @t again).
 */
static inline void *ct_evict_mark(const struct conntab *t)
{
	return (void *)((uintptr_t)t | 1);
}

/* The owner of @n once no eviction holds it (spins while one does). */
static inline void *ct_node_wait_evict(const struct conntab_node *n,
				       const struct conntab *t)
{
	void *o = __atomic_load_n(&n->ct_owner, __ATOMIC_ACQUIRE);
	unsigned int spins = 0;

	while (__builtin_expect(o == ct_evict_mark(t), 0)) {
		ct_spin_pause(&spins);
		o = __atomic_load_n(&n->ct_owner, __ATOMIC_ACQUIRE);
	}
	return o;
}

/*
 * Does @n belong to @t? (a hint outside the lock; recheck under it). A
 * node an eviction holds is waited for: it may yet stay in @t.
 */
static inline bool ct_node_owned(const struct conntab_node *n,
				 const struct conntab *t)
{
	return ct_node_wait_evict(n, t) == t;
}

/*
 * Pairs (conntab_insert_pair()) reuse the claim above: a writer step that
 * must act on both halves of a pair as one holds the claim (owner = mark,
 * set by compare-and-swap from NULL for a node not yet linked, or from @t
 * for a linked one) on both. The rules, which every writer follows:
 *
 *  (P1) a paired node is unlinked only by the holder of its claim, and
 *       both halves are claimed before either is unlinked or linked; so
 *       no writer ever finds half a pair that another writer step has
 *       not finished with;
 *  (P2) a writer that meets a claimed node under a backend lock does not
 *       wait there: the backend changes nothing, drops its locks and
 *       returns CT_ECLAIMED, and the front end waits for the claim to
 *       end with no lock held, then retries the whole operation (an
 *       insert of the key then finds it present, or gone);
 *  (P3) a writer holding claims waits only for a claim on a key that is
 *       greater (ct_key_cmp()) than every key it holds linked and
 *       claimed: a pair insert holds its lower half linked while it links
 *       the higher one, a pair removal claims the lower half first and
 *       waits for the higher. Claims taken by an eviction are taken with
 *       compare-and-swap and dropped on failure, never waited for. The
 *       keys along any chain of waiters therefore increase strictly, so
 *       no cycle of waiters can form; and every claim holder's own steps
 *       (backend locks, held briefly by writers that by P2 never wait
 *       for claims under them) end.
 */
#define CT_ECLAIMED	(-EINPROGRESS)

/* ct_flags bits. Written while the node is claimed and unlinked, except
 * CT_NF_RIDER, set on a claimed linked half: atomic accesses. */
#define CT_NF_PAIR_A	0x01	/* the `a` of a pair: walks visit it */
#define CT_NF_RIDER	0x02	/* counted by its peer's reservation */

static inline uint8_t ct_node_flags(const struct conntab_node *n)
{
	return __atomic_load_n(&n->ct_flags, __ATOMIC_RELAXED);
}

/* Is @n the half of a pair that walks, scans and destroy skip? */
static inline bool ct_node_pair_b(const struct conntab_node *n)
{
	return n->ct_peer && !(ct_node_flags(n) & CT_NF_PAIR_A);
}

/*
 * Under the lock that owns @n's place, may this writer unlink @n? 0 if
 * @n is in @t and, with @claimed, holds the caller's claim (P1); -ENOENT
 * if it is not in @t; CT_ECLAIMED if another writer step holds it (P2).
 */
static inline int ct_node_check_locked(const struct conntab_node *n,
				       const struct conntab *t, bool claimed)
{
	void *o = __atomic_load_n(&n->ct_owner, __ATOMIC_ACQUIRE);

	if (o == ct_evict_mark(t))
		return claimed ? 0 : CT_ECLAIMED;
	return !claimed && o == t ? 0 : -ENOENT;
}

/*
 * The first step of an insert of @n with key @key and hash @h into @t:
 * claim @n by compare-and-swap NULL -> @t (false: it is linked, or being
 * linked, somewhere: -EBUSY), then fill it in with plain stores, private
 * until the backend publishes it. A fresh life: whatever pair it was
 * half of before is forgotten (readers of that life are gone: a grace
 * period before reuse). Shared by the front end and the backends' direct
 * insert paths (chained_insert_key(), ops->insert_key).
 */
static inline __attribute__((always_inline)) bool
ct_node_claim_key(struct conntab_node *n, struct conntab *t,
		  const struct conntab_key *key, uint32_t h)
{
	void *expected = NULL;

	/*
	 * The node's line before the compare-and-swap: the locked
	 * instruction holds back the loads behind it, so the miss is
	 * started first (the caller has started the bucket's).
	 */
	__builtin_prefetch(n, 1);
	if (!__atomic_compare_exchange_n(&n->ct_owner, &expected, (void *)t,
					 false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false;
	n->ct_key = *key;
	n->ct_hash = h;
	n->ct_state = CONNTAB_ESTABLISHED;
	n->ct_peer = NULL;
	n->ct_flags = 0;
	ct_delay(CT_DP_FE_PUB_CLAIM);
	return true;
}

/*
 * The front end's insert and remove past their argument checks, for the
 * backends' own paths (ops->insert_key, ops->remove_single) to fall back
 * on: ct_insert_generic() on any thread, ct_remove_uncounted() on one
 * that ct_writer_counted() could not clear (lib/conntab.c).
 */
int ct_insert_generic(struct conntab *t, struct conntab_node *n,
		      const struct conntab_key *key);
int ct_remove_uncounted(struct conntab *t, struct conntab_node *n);

/*
 * The rest of a backend's own insert (or remove) of @n once its first try
 * met a node that another writer step holds (CT_ECLAIMED, P2): wait with
 * no lock held and try again through ops->insert (ops->remove), as the
 * front end's path does, until the answer is another. Out of line, so
 * that the backends' paths keep no retry state (lib/conntab.c).
 */
int ct_insert_wait(struct conntab *t, struct conntab_node *n);
int ct_remove_wait(struct conntab *t, struct conntab_node *n);

/* Claim the linked node @n of @t (P1); false if not in @t or claimed. */
static inline bool ct_node_claim_linked(struct conntab_node *n,
					const struct conntab *t)
{
	void *expected = (void *)t;

	return __atomic_compare_exchange_n(&n->ct_owner, &expected,
					   ct_evict_mark(t), false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* End a claim on a node left linked (release: what we did is seen). */
static inline void ct_node_unclaim(struct conntab_node *n,
				   const struct conntab *t)
{
	__atomic_store_n(&n->ct_owner, (void *)t, __ATOMIC_RELEASE);
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
static inline bool ct_reserve(struct conntab *t, const struct conntab_node *n)
{
	/* A pair counts once: its rider half takes no room of its own. */
	if (!t->max_entries || (ct_node_flags(n) & CT_NF_RIDER))
		return true;
	if (__atomic_add_fetch(&t->reserved, 1, __ATOMIC_RELAXED) <=
	    t->max_entries)
		return true;
	__atomic_sub_fetch(&t->reserved, 1, __ATOMIC_RELAXED);
	return false;
}

static inline void ct_unreserve(struct conntab *t,
				const struct conntab_node *n)
{
	if (t->max_entries && !(ct_node_flags(n) & CT_NF_RIDER))
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
