/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE internals shared by the files of lib/trie/: node layouts, child words,
 * the bit arithmetic of windows, and the writer's locks.
 *
 * The design, its invariants and the bounds are stated in lib/trie/trie.c; the
 * comments here say what each field is for and who may touch it.
 */
#ifndef CT_TRIE_H
#define CT_TRIE_H

#include <stdbool.h>
#include <stdint.h>
#if defined(__SSE2__)
# include <emmintrin.h>
#endif

#include "../conntab-int.h"
#include "../key.h"
#include "../shard.h"

/* Entries of a sparse node at most; a 33rd distinct value bursts it. */
#define CT_T_KMAX	32
/*
 * An adjacent sparse child with this many live entries is "heavy"; a
 * dense node inflates when half its slots are, so under random keys its
 * sparse children hold about 12 to 24 between inflations (any one at
 * most CT_T_KMAX, then it bursts). At 12 (6 to 12 keys) a 1M
 * random table took 14.8 B/entry instead of 12.7, under a root twice
 * as wide, and removes (which empty it, halving as they go) were a
 * tenth slower; lookups were no faster (doc/performance.md).
 */
#define CT_T_KHEAVY	24
/* A sparse child with at most this many live entries is "light". */
#define CT_T_KLIGHT	4
/* Widest dense node: 2^24 slots (128 MiB). */
#define CT_T_DMAX	24
/* Widest short dense node (a byte). */
#define CT_T_SMAX	8
/*
 * A short dense node of 2^w slots with this many used or fewer becomes
 * sparse: half a full sparse node, or an eighth of its slots.
 */
static inline unsigned int ct_d_slow(unsigned int w)
{
	unsigned int e = (1u << w) / 8;

	return e > CT_T_KMAX / 2 ? e : CT_T_KMAX / 2;
}
/*
 * The sizing hint (conntab_config::expected = E) builds the first dense
 * root 2^w wide, w = ceil(log2 E) - CT_T_HINT_LOAD within
 * [CT_T_HINT_MIN, CT_T_HINT_MAX], instead of growing it by doubling:
 * lib/trie/trie.c, "The sizing hint". 2^CT_T_HINT_LOAD keys a slot at E
 * leave room to grow before the slots turn heavy. The burst that builds
 * it clears 2^w slots and counts them under the root's lock: 8 MiB and
 * 1M slots at most (16M keys); wider comes by inflating, one node's
 * worth of work at a time.
 */
#define CT_T_HINT_LOAD	4
#define CT_T_HINT_MIN	9
#define CT_T_HINT_MAX	20
/* Longest path: two internal nodes per byte of the string, and the leaf. */
#define CT_T_DEPTH	(2 * CT_KEY_STR_MAX + 1)

/*
 * Child words (slots of nodes, and the root word): 0 (empty), a leaf
 * (the user's struct conntab_node | CT_T_LEAF) or an internal node. Bit 1
 * is the writer lock of a dense node's slot; readers mask it off.
 */
#define CT_T_LEAF	((uintptr_t)1)
#define CT_T_LOCKED	((uintptr_t)2)

/* kind byte */
#define CT_T_K		0x01	/* sparse: up to CT_T_KMAX (value, kid) pairs */
#define CT_T_D		0x02	/* dense: 2^w slots */
#define CT_T_SHORT	0x04	/* dense, ends on a byte boundary, w <= 8 */
#define CT_T_BLOCKED	0x08	/* dense: inflating would share a dense child */
#define CT_T_HINTED	0x10	/* dense: built to the sizing hint, no halving
				   until its counts stop asking for it */
#define CT_T_DEAD	0x80	/* replaced: writers that lock it retry */

/*
 * The head of every internal node. A node branches on the window
 * [pos, pos + w) of the canonical key string (lib/key.h). pos and w never
 * change once the node is published; a writer sets CT_T_DEAD under the
 * node's lock(s) when it unlinks the node.
 */
struct ct_tnode {
	uint8_t kind;
	uint8_t lock;		/* sparse: owns the entries (writers) */
	uint8_t n;		/* sparse: entries published (release) */
	uint8_t cap;		/* sparse: entries allocated */
	uint16_t pos;
	uint8_t w;
	uint8_t live;		/* sparse: entries with a kid (writers;
				   ct_k_live_set()) */
};

/*
 * Sparse node: after the head, val[cap] (the window's value of each
 * entry, never changed once published below n) and kid[cap] (8-byte
 * aligned). An entry whose kid is 0 is a tombstone: its value stays, so
 * a value occurs at most once in val[0, n).
 */
static inline uint16_t *ct_k_val(struct ct_tnode *x)
{
	return (uint16_t *)(void *)(x + 1);
}

static inline size_t ct_k_kidoff(unsigned int cap)
{
	return (sizeof(struct ct_tnode) + 2 * (size_t)cap + 7) & ~(size_t)7;
}

/*
 * Sparse node: the index of the entry of value @v, or -1. Values in
 * val[0, n) never change once the release store of n covers them, and a
 * value occurs there at most once.
 *
 * With SSE2 (every x86-64) the first 16 values are compared at once,
 * without a branch on n: when nodes held about 8 entries, the scalar
 * loop's exit was mispredicted about twice a lookup (callgrind
 * --branch-sim: 2.01 a lookup before, 0.017 after; the lookup's time did
 * not move measurably, doc/performance.md). Nodes of more than 16
 * entries take a loop for the rest: with 12 to 24 entries a node
 * (CT_T_KHEAVY), 0.14 mispredicts a lookup at 1M random keys. Every vector
 * load stays inside the node: val[0, 8), val[8, 16) only when cap > 8
 * (else val[0, 8) again, its bits masked off: an address chosen without
 * a branch), and in the loop val[] up to roundup(n, 8) <= roundup(cap,
 * 8), with ct_k_kidoff(cap) + 8 * cap >= 8 + 2 * roundup(cap, 8) for
 * every cap >= 1. Past n a writer may be filling entries not yet
 * published: the mask drops them. ThreadSanitizer would report those
 * reads as the races they are by the letter: under it, the plain loop.
 */
#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
static inline uint32_t ct_k_match8(const uint16_t *val, __m128i key)
{
	__m128i e = _mm_loadu_si128((const __m128i *)(const void *)val);

	return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(e, key));
}

static inline int ct_k_find(struct ct_tnode *x, uint32_t v)
{
	unsigned int i, n = __atomic_load_n(&x->n, __ATOMIC_ACQUIRE);
	const uint16_t *val = ct_k_val(x);
	__m128i key = _mm_set1_epi16((short)v);
	uint32_t m;

	m = ct_k_match8(val, key) |
	    ct_k_match8(val + 8 * (x->cap > 8), key) << 16;
	/*
	 * The first 2n mask bits, all 32 from n = 16 on, without clamping
	 * n: (1 << n) << n is 2^2n below 2^64, and 0 at n = 32 (two shifts
	 * below 64, so defined), and its low 32 bits less one are all ones
	 * from n = 16 on. n <= CT_T_KMAX = 32.
	 */
	m &= (uint32_t)(((1ull << n) << n) - 1);
	if (__builtin_expect(m != 0, 1))
		return (int)((unsigned int)__builtin_ctz(m) / 2);
	for (i = 16; i < n; i += 8) {
		m = ct_k_match8(val + i, key);
		if (n - i < 8)
			m &= (1u << (2 * (n - i))) - 1;
		if (m)
			return (int)(i + (unsigned int)__builtin_ctz(m) / 2);
	}
	return -1;
}
#else
static inline int ct_k_find(struct ct_tnode *x, uint32_t v)
{
	unsigned int i, n = __atomic_load_n(&x->n, __ATOMIC_ACQUIRE);
	const uint16_t *val = ct_k_val(x);

	for (i = 0; i < n; i++)
		if (val[i] == v)
			return (int)i;
	return -1;
}
#endif

/*
 * A sparse node's live count changes under its lock, where writers read
 * it plainly; the eviction sample (lib/trie/trie-sample.h) reads it under no
 * lock, as a weight that may be a step old: so the store is atomic
 * (relaxed, paired with the sample's relaxed load; no order needed, the
 * count orders nothing).
 */
static inline void ct_k_live_set(struct ct_tnode *x, unsigned int live)
{
	__atomic_store_n(&x->live, (uint8_t)live, __ATOMIC_RELAXED);
}

static inline uintptr_t *ct_k_kid(struct ct_tnode *x)
{
	return (uintptr_t *)(void *)((char *)x + ct_k_kidoff(x->cap));
}

/*
 * Dense node. Readers use h and kid[]; the counters and the prefix are
 * the writers'. prefix holds bits [0, pos) of every key below (the bits a
 * writer checks when the node skips bits after its parent's window).
 */
struct ct_dnode {
	struct ct_tnode h;
	uint32_t used;		/* non-empty slots */
	uint32_t heavy;		/* anchored: slots of class CT_C_HEAVY */
	uint32_t light;		/* anchored: non-empty slots of class CT_C_LIGHT
				   or CT_C_SHARED */
	uint32_t shared;	/* anchored: slots of class CT_C_SHARED */
	uint8_t prefix[CT_KEY_STR_MAX];
	uintptr_t kid[];
};

static inline struct ct_dnode *ct_d(struct ct_tnode *x)
{
	return (struct ct_dnode *)(void *)x;
}

/*
 * A writer's read of dense slot @i of @x: one it holds locked, or one of
 * a node it is building. Atomic, relaxed: a writer waiting for the slot's
 * lock reads and compare-and-swaps the same word meanwhile
 * (ct_t_slot_lock()). The lock bit is masked off.
 */
static inline uintptr_t ct_d_slot(struct ct_tnode *x, uint32_t i)
{
	return __atomic_load_n(&ct_d(x)->kid[i], __ATOMIC_RELAXED) &
	       ~CT_T_LOCKED;
}

/*
 * Prefetch the three lines after the first of internal node @p: a sparse
 * node's kid array starts after its values, and the entry a lookup takes
 * is known only once the values are scanned, so without these the kid's
 * line is one more miss in a row (at 1M random keys: 6 % on a lookup,
 * 10-15 % on a batch). The lines of @p and these three hold at least
 * the node's first 193 bytes (@p need not start a line): all of a node
 * up to 18 entries (ct_k_kidoff(18) + 18 * 8 = 192); the kids of larger
 * nodes past that are still fetched on demand. A dense
 * node's slot is far from its head: these lines are wasted there, but
 * cost no wait. Readers and the writers' descent (lib/trie/trie-write.c)
 * both use it.
 */
static inline void ct_t_prefetch_tail(uintptr_t p)
{
	__builtin_prefetch((char *)p + CT_CACHELINE);
	__builtin_prefetch((char *)p + 2 * CT_CACHELINE);
	__builtin_prefetch((char *)p + 3 * CT_CACHELINE);
}

/* Every node is allocated behind a struct rcu_head (its call_rcu link). */
#define CT_T_HEAD	sizeof(struct rcu_head)

static inline size_t ct_k_size(unsigned int cap)
{
	return CT_T_HEAD + ct_k_kidoff(cap) + (size_t)cap * sizeof(uintptr_t);
}

static inline size_t ct_d_size(unsigned int w)
{
	return CT_T_HEAD + sizeof(struct ct_dnode) +
	       ((size_t)1 << w) * sizeof(uintptr_t);
}

static inline struct rcu_head *ct_t_head(struct ct_tnode *x)
{
	return (struct rcu_head *)(void *)((char *)x - CT_T_HEAD);
}

/*
 * kind is read without locks while writers set CT_T_DEAD or CT_T_BLOCKED
 * in it (under the node's locks): relaxed atomics, one byte either way.
 */
static inline uint8_t ct_t_kind(const struct ct_tnode *x)
{
	return __atomic_load_n(&x->kind, __ATOMIC_RELAXED);
}

static inline void ct_t_mark(struct ct_tnode *x, uint8_t flag)
{
	__atomic_store_n(&x->kind, (uint8_t)(ct_t_kind(x) | flag),
			 __ATOMIC_RELAXED);
}

static inline bool ct_t_isk(const struct ct_tnode *x)
{
	return ct_t_kind(x) & CT_T_K;
}

static inline bool ct_t_short(const struct ct_tnode *x)
{
	return ct_t_kind(x) & CT_T_SHORT;
}

static inline bool ct_t_dead(const struct ct_tnode *x)
{
	return ct_t_kind(x) & CT_T_DEAD;
}

static inline unsigned int ct_t_end(const struct ct_tnode *x)
{
	return (unsigned int)x->pos + x->w;
}

/* Child words. */
static inline bool ct_w_leaf(uintptr_t p)
{
	return p & CT_T_LEAF;
}

static inline struct conntab_node *ct_w_node(uintptr_t p)
{
	return (struct conntab_node *)(p & ~CT_T_LEAF);
}

static inline struct ct_tnode *ct_w_tn(uintptr_t p)
{
	return (struct ct_tnode *)p;
}

static inline uintptr_t ct_w_of(struct conntab_node *n)
{
	return (uintptr_t)n | CT_T_LEAF;
}

/* Reader: a slot's word, published with ct_rcu_assign (lock bit off). */
static inline uintptr_t ct_w_load(uintptr_t *slot)
{
	return ct_rcu_deref(*slot) & ~CT_T_LOCKED;
}

/* tr->root_geo for a root word @v (struct ct_trie). */
static inline uint32_t ct_t_root_geo(uintptr_t v)
{
	struct ct_tnode *x = v && !ct_w_leaf(v) ? ct_w_tn(v) : NULL;

	return x && !ct_t_isk(x) ? (uint32_t)x->pos << 8 | x->w : 0;
}

/* Byte boundaries. */
static inline unsigned int ct_floor8(unsigned int bit)
{
	return bit & ~7u;
}

/*
 * Bits [pos, pos + w) of the string @s (1 <= w <= 25), as a number. @s
 * is a CT_KEY_STR_BUF buffer, zero past the string, so the 8-byte load
 * never leaves it (pos < 320).
 */
static inline uint32_t ct_bits(const uint8_t *s, unsigned int pos,
			       unsigned int w)
{
	uint64_t v = ct_load_be64(s + (pos >> 3));

	return (uint32_t)((v << (pos & 7)) >> (64 - w));
}

/* Set bits [pos, pos + w) of @s to @v (w <= 25). */
static inline void ct_putbits(uint8_t *s, unsigned int pos, unsigned int w,
			      uint32_t v)
{
	unsigned int i;

	for (i = 0; i < w; i++) {
		unsigned int b = pos + i;
		uint8_t m = (uint8_t)(0x80 >> (b & 7));

		if ((v >> (w - 1 - i)) & 1)
			s[b >> 3] |= m;
		else
			s[b >> 3] &= (uint8_t)~m;
	}
}

/*
 * The part of @x's window that the path above fixed: bits [x->pos, lim)
 * with lim = min(pend, end), where @pend is the end of the parent's
 * window (or further, where the path's bits are known). Returns its width
 * (0: none) and the bits in *pre.
 */
static inline unsigned int ct_t_overlap(const struct ct_tnode *x,
					const uint8_t *ps, unsigned int pend,
					uint32_t *pre)
{
	unsigned int end = ct_t_end(x), lim = pend < end ? pend : end;

	if (lim <= x->pos) {
		*pre = 0;
		return 0;
	}
	*pre = ct_bits(ps, x->pos, lim - x->pos);
	return lim - x->pos;
}

/* Dense node: the slots the path allows, [*lo, *hi]. */
static inline void ct_d_range(const struct ct_tnode *x, unsigned int ov,
			      uint32_t pre, uint32_t *lo, uint32_t *hi)
{
	*lo = pre << (x->w - ov);
	*hi = *lo + (((uint32_t)1 << (x->w - ov)) - 1);
}

/*
 * Per-thread shards of the table's counters: two writers do not bounce
 * one line on every write. Sums are not snapshots.
 */
#define CT_TRIE_SHARDS	32

struct ct_trie_count {
	long entries;
	long timewait;
	long nodes;
	long memory;
	long inflates;
	long halves;
	/*
	 * Nodes this shard's writers retired, waiting for a batch
	 * (lib/trie/trie-mem.c): a lock-free stack and its length. Per shard,
	 * not per table: one list in struct ct_trie took a locked
	 * compare-and-swap and an atomic add on one line from every writer
	 * that copied a node, and that line was the root word's, which
	 * every lookup and every writer's descent reads first.
	 */
	struct rcu_head *retired;
	unsigned long nretired;
} __attribute__((aligned(CT_CACHELINE)));

struct ct_trie {
	struct conntab base;
	uintptr_t root;			/* the top child word */
	uint32_t root_lock;		/* owns the root word */
	/*
	 * Width of the first dense node built at the root, from
	 * conntab_config::expected (0: none, or used; under root_lock).
	 */
	uint8_t hint_w;
	/*
	 * The root's window while the root word holds a dense node,
	 * pos << 8 | w, else 0. Written with the root word (under root_lock,
	 * ct_hold_store()); read without a lock or the RCU read lock by
	 * conntab_resize_stats() (its width, nothing else) and by
	 * ct_t_prefetch_root() (an insert before its claim, a remove before
	 * its read lock), which may pair it with another root than the one
	 * it reads: it only computes an address to prefetch from the pair,
	 * and a prefetch of a wrong address costs a line and faults nothing.
	 * Debug builds check it against the root at destroy.
	 */
	uint32_t root_geo;
	/*
	 * The eviction sample's hint (lib/trie/trie-sample.h): a slot of a dense
	 * root where its last fill found a leaf. Relaxed loads and stores
	 * of any thread: any value is a slot, only the cost of a sample of
	 * a nearly empty root depends on it.
	 */
	uint32_t sample_slot;
	/*
	 * Per-thread shards: the counters, and the retired nodes, which
	 * wait there (lib/trie/trie-mem.c) and go to call_rcu in batches. The
	 * line above (the root word) is written only when the root changes.
	 */
	struct ct_trie_count cnt[CT_TRIE_SHARDS];
};

static inline struct ct_trie *ct_trie(struct conntab *t)
{
	return (struct ct_trie *)(void *)t;
}

/*
 * Writer locks (lib/lock.h for the word lock of the root and the byte
 * lock of a sparse node, ct_spin_lock8()): bit 1 of each slot of a dense
 * node. One compare-and-swap inline; the wait is a call
 * (lib/trie/trie-write.c), as ct_spin_lock()'s is, so that the writers'
 * fast paths keep no registers saved around a loop with a yield in it:
 * inline, the wait made the insert's fast path spill its key vector
 * around x's lock (ct-icount, trie, 256K).
 */
void ct_t_slot_lock_wait(uintptr_t *slot);

static inline void ct_t_slot_lock(uintptr_t *slot)
{
	uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);

	if (__builtin_expect(!(v & CT_T_LOCKED) &&
			     __atomic_compare_exchange_n(slot, &v,
							 v | CT_T_LOCKED, true,
							 __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED), 1))
		return;
	ct_t_slot_lock_wait(slot);
}

/* Release a slot's lock, leaving @v in it (release: publishes v). */
static inline void ct_t_slot_set_unlock(uintptr_t *slot, uintptr_t v)
{
	ct_rcu_assign(*slot, v);
}

static inline void ct_t_slot_unlock(uintptr_t *slot)
{
	ct_t_slot_set_unlock(slot,
		__atomic_load_n(slot, __ATOMIC_RELAXED) & ~CT_T_LOCKED);
}

/* Every lock of @x itself: a sparse node's, or all a dense one's slots. */
static inline void ct_t_lock_node(struct ct_tnode *x)
{
	uint32_t i;

	if (ct_t_isk(x))
		ct_spin_lock8(&x->lock);
	else
		for (i = 0; i < (1u << x->w); i++)	/* increasing index */
			ct_t_slot_lock(&ct_d(x)->kid[i]);
}

static inline void ct_t_unlock_node(struct ct_tnode *x)
{
	uint32_t i;

	if (ct_t_isk(x))
		ct_spin_unlock8(&x->lock);
	else
		for (i = 1u << x->w; i-- > 0;)
			ct_t_slot_unlock(&ct_d(x)->kid[i]);
}

/*
 * The calling thread's shard of the counters (lib/shard.h). Inline: every
 * write counts itself once, and out of line the call was half its cost.
 */
static inline struct ct_trie_count *ct_t_cnt(struct ct_trie *tr)
{
	return &tr->cnt[ct_thread_shard(CT_TRIE_SHARDS)];
}

/* lib/trie/trie-mem.c: allocation, accounting, retirement. */
struct ct_tnode *ct_k_alloc(struct ct_trie *tr, unsigned int cap,
			    unsigned int pos, unsigned int w);
struct ct_tnode *ct_d_alloc(struct ct_trie *tr, unsigned int pos,
			    unsigned int w, bool is_short);
void ct_t_free(struct ct_trie *tr, struct ct_tnode *x);
void ct_t_retire(struct ct_trie *tr, struct ct_tnode *x);

/* The capacity of a sparse node for @live entries (lib/trie/trie-mem.c). */
extern const uint8_t ct_k_capfor_tab[CT_T_KMAX + 1];

static inline unsigned int ct_k_capfor(unsigned int live)
{
	return live <= CT_T_KMAX ? ct_k_capfor_tab[live] : CT_T_KMAX;
}

void ct_t_drain(struct ct_trie *tr);

/*
 * Classes of an anchored dense node's slots (lib/trie/trie-resize.c): what its
 * counters count, and what decides its inflation and halving.
 */
enum ct_class {
	CT_C_EMPTY,
	CT_C_LIGHT,	/* a leaf, or a few keys */
	CT_C_SHARED,	/* a shared child's slot after its first: light too */
	CT_C_NORMAL,
	CT_C_HEAVY,	/* a wider window would split it */
};

enum ct_class ct_d_class(const struct ct_tnode *d, uint32_t idx,
			 uintptr_t child);

/*
 * Whether ct_d_class() of unshared sparse @y, in a dense slot, can
 * differ between @lo and lo + 1 live entries with nothing else of y
 * changed: only across CT_T_KLIGHT or CT_T_KHEAVY, or for a window of
 * 4 bits or fewer, whose heaviness also weighs its subtrees against its
 * entries. That last case is answered "maybe" whatever the counts. Such
 * windows are rare: the builder places none that narrow at its parent's
 * end but where the key string ends (leaves only, never heavy); the
 * pieces an inflation cuts from an old tail (lib/trie/trie-resize.c) can be.
 * No test makes one change class on a fast path (without this case the
 * suite still passes), so it stays the conservative answer. The writers'
 * fast paths classify y only when this says so: two calls of
 * ct_d_class() were ~50 of a remove's ~590 instructions. Debug builds
 * recount every class at destroy (ct_t_check()); without the KLIGHT or
 * the KHEAVY case, tests/test-trie and tests/test-trie-bound fail there.
 *
 * The two counts are bits of a word (lo <= CT_T_KMAX < 64), and the
 * callers give the lower count, not the two: the min of two counts and
 * two compares took a fast insert 4 instructions more (ct-icount,
 * trie, 256K).
 */
static inline bool ct_k_class_moves(const struct ct_tnode *y, unsigned int lo)
{
	return y->w <= 4 ||
	       (((1ull << CT_T_KLIGHT) | (1ull << (CT_T_KHEAVY - 1))) >> lo & 1);
}
void ct_d_count(struct ct_tnode *d, enum ct_class c, int delta);
void ct_d_recount(struct ct_tnode *d);
#ifdef CT_DEBUG
void ct_t_check(struct ct_tnode *y);
#endif
bool ct_d_wants_resize(const struct ct_tnode *d);

/*
 * Is @n claimed by an eviction (ct_evict_mark(), lib/trie/trie-evict.c)? Read
 * under the lock that owns n's place, which the claim is set and cleared
 * under; elsewhere a hint.
 */
static inline bool ct_t_claimed(struct ct_trie *tr,
				const struct conntab_node *n)
{
	return __atomic_load_n(&n->ct_owner, __ATOMIC_RELAXED) ==
	       ct_evict_mark(&tr->base);
}

/* lib/trie/trie-write.c: the writers. */
int ct_trie_insert(struct conntab *t, struct conntab_node *n,
		   struct conntab_node **recycled);
void ct_trie_prefetch(struct conntab *t, const struct conntab_key *key,
		      uint32_t hash);
int ct_trie_remove(struct conntab *t, struct conntab_node *n, bool claimed);
/* ops->insert_key (either hash: the trie hashes nothing), ops->remove_single */
int ct_trie_insert_key(struct conntab *t, struct conntab_node *n,
		       const struct conntab_key *key);
int ct_trie_remove_single(struct conntab *t, struct conntab_node *n);
int ct_t_insert(struct ct_trie *tr, struct conntab_node *n,
		struct conntab_node **recycled, bool held);
int ct_t_remove(struct ct_trie *tr, struct conntab_node *n, bool evict,
		bool counted);
/* The same under the read lock that @wl stands for (lib/rcu-reg.h). */
int ct_t_insert_wl(struct ct_trie *tr, struct conntab_node *n,
		   struct conntab_node **recycled, bool held, uintptr_t wl);
int ct_t_remove_wl(struct ct_trie *tr, struct conntab_node *n, bool evict,
		   bool counted, uintptr_t wl);
int ct_trie_timewait(struct conntab *t, struct conntab_node *est,
		     struct conntab_node *tw);

/* lib/trie/trie-read.c: the readers, and helpers writers share. */
struct conntab_node *ct_trie_lookup(struct conntab *t,
				    const struct conntab_key *k);
size_t ct_trie_lookup_batch(struct conntab *t, const struct conntab_key *keys,
			    struct conntab_node **out, size_t n);
int ct_trie_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg);
int ct_trie_walk_prefix(struct conntab *t, const uint8_t *s,
			unsigned int bits, ct_walk_fn fn, void *arg);
struct conntab_node *ct_t_first_leaf(uintptr_t p, const uint8_t *ps,
				     unsigned int pend);
int ct_k_next(struct ct_tnode *x, long after, unsigned int ov, uint32_t pre);

/* lib/trie/trie-scan.c, lib/trie/trie-evict.c: the lifecycle calls. */
enum ct_scan_end ct_trie_scan(struct conntab *t,
			      uint64_t pos[CT_SCAN_POS_WORDS], bool fresh,
			      size_t budget, ct_walk_fn fn, void *arg,
			      int *fnret);
int ct_trie_insert_evict(struct conntab *t, struct conntab_node *n,
			 ct_rank_fn rank, void *arg,
			 struct conntab_node **evicted);

#endif /* CT_TRIE_H */
