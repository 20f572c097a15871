/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: a path-compressed multi-bit trie over the canonical key
 * string (lib/key.h: zone, proto, family, local address and port, remote
 * address and port, big-endian), after Polyakov's side of the 2007 debate.
 *
 * No hash: the path of a key is its own bits, so there is nothing to flood;
 * nothing ever resizes; a walk visits keys in order, and every connection
 * of one local endpoint (or zone) lies in one subtree (conntab_walk_prefix).
 *
 * Shape. The string is cut into chunks: eight of 4 bits over the 32-bit
 * header (zone, proto, family), then chunks of S = CT_TRIE_STRIDE bits
 * from the local address on (see ct_chunk_bit). An internal node branches
 * on one chunk (pos) and holds one child per chunk value present: a bitmap
 * and a dense array of children in chunk order, a child's index being the
 * popcount of the bitmap below its bit (Bagwell's array-mapped trie). A
 * child is a tagged word: an internal node, or a leaf (bit 0 set) which is
 * the user's struct conntab_node itself; the key lives in the node.
 *
 * Path compression: a node exists only where at least two keys part, at
 * the chunk holding their first differing bit; chunks on which every key
 * below agrees are skipped. Readers skip them blindly and compare the whole
 * key at the leaf (ct_key_eq); writers check them against the prefix each
 * node stores (the bytes of the string of any key below it that hold the
 * bits above its chunk). Hence, for any key set:
 *  - every internal node has >= 2 children, so there are < N of them and
 *    the child slots number < 2N: memory per entry is bounded by about
 *    (node header + rounded prefix) + 2 pointers, whatever the keys;
 *  - pos strictly grows along a path, so depth <= 8 + 96 / S + 1 levels
 *    for IPv4 (25 for S = 6) and 8 + 288 / S + 1 for IPv6 (57), whatever
 *    the keys (sequential, sharing long prefixes, differing in the last
 *    bit, or mixed families).
 *
 * Stride: S = 6 (a 64-bit bitmap, popcount of one word; a node with k
 * children is 16 + 8k bytes plus its head). A lookup is one dependent
 * cache miss per level, so the stride sets its cost. Measured with
 * conntab-bench --n 1M,4M --workload lookup,memory --impl chained,trie
 * --clock cpu (one build with -DCT_TRIE_STRIDE=4, one without, same
 * seed; 1M random IPv4): S = 4 (16-bit bitmap, 8-byte header) has depth
 * 9 and costs 2.7x a chained lookup that hashes with SipHash (3.5x with
 * AES), 19.2 bytes per entry; S = 6 has depth 7 and costs 1.8x (2.3x),
 * 18.4 bytes per entry (14.8 at 4M, where more nodes fill). The wider
 * nodes are sparser near the leaves, but there are fewer of them and
 * fewer prefix heads. S = 8 would need a 256-bit bitmap in front of the
 * 1-3 children of a typical bottom node; 6 is the widest whose bitmap is
 * one word.
 *
 * Readers (RCU read lock held) load child words with ct_rcu_deref and never
 * write. Writers never change a published node's bitmap or pos: adding or
 * removing a child copies the node (copy-on-write) and publishes the copy
 * with one release store into the parent's slot; the old node goes to
 * call_rcu. Replacing a child by another (a leaf by its TIME_WAIT
 * successor, a subtree by a new node that splits its compressed prefix, a
 * node by its only remaining child) is a single in-place slot store. So a
 * reader sees each slot either before or after a change, and either way
 * it leads to every key that was present across the change: a present key
 * is never missed, and a walk visits it exactly once.
 *
 * Full nodes (all 2^S children present) are the exception: a node that
 * fills up is published with bit 1 set in its child word and from then on
 * is never copied or freed until the table is destroyed; its slots are
 * updated in place, 0 meaning empty, and it never collapses. A node fills
 * only when 2^S keys part at it, so full nodes number fewer than
 * N / (2^S - 1) for the largest N the table held.
 *
 * Writer locking, never a table lock: a spinlock in every internal node
 * owns its slots, except that the slots of full nodes are owned by 128
 * striped locks hashed by slot address, and the root slot by a lock of
 * its own. A writer first follows full nodes from the root without locks
 * (they are immortal), then locks the owner of the first slot that holds
 * no full node and continues by lock coupling (parent before child, at
 * most two held); ct_descend states the lock order. A writer holds the
 * lock that owns the slot it stores into, and also the lock of the node
 * it replaces: since a node is only replaced by a writer holding the
 * owner of its slot, a writer holding that may read and lock the node
 * without the RCU read lock (writers need not be RCU readers), and a node
 * once replaced is unreachable to writers. The prefix bytes of a replaced
 * node are reused as its rcu_head, which is safe because only writers
 * (holding the owner of its slot) read them. In a random table the top
 * levels are full, so writers in different subtrees share no lock;
 * writers inside one sparse subtree (one local endpoint with few peers)
 * serialise on its top node.
 *
 * Invariants (writers keep them under the locks above):
 *  - a published node's bmap, pos and prefix never change; a non-full
 *    node's slots change only by in-place replacement of one child by
 *    another covering the same keys; a full node's slot may also go
 *    between 0 and a leaf;
 *  - every key below a node agrees with its prefix above its chunk, and
 *    sits below the child of its own chunk value;
 *  - a non-full node has >= 2 children (but see the hole below);
 *  - a node leaves the tree only by a slot store of the writer holding
 *    the owner of its slot, and is freed only through call_rcu after that.
 *
 * If a copy-on-write allocation fails in remove (which cannot fail), the
 * leaf slot is pointed at the table's hole, a leaf with a key no lookup
 * can match, that walks skip and inserts reuse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conntab-int.h"
#include "key.h"

#ifndef CT_TRIE_STRIDE
# define CT_TRIE_STRIDE	6
#endif
#define CT_S		CT_TRIE_STRIDE
#define CT_FANOUT	(1u << CT_S)

#if CT_S == 4
typedef uint16_t ct_bmap_t;
#elif CT_S == 5 || CT_S == 6
typedef uint64_t ct_bmap_t;
#else
# error "CT_TRIE_STRIDE must be 4, 5 or 6 (tests assume >= 4)"
#endif

/*
 * Chunk layout. The 32-bit header of the string (zone, proto, family) is
 * cut into 4-bit chunks, the rest (addresses and ports: 96 bits for IPv4,
 * 288 for IPv6, both multiples of 6) into S-bit chunks starting at bit 32.
 * So chunk boundaries fall on the local address, and a node branching on
 * the first bits of the local address can fill up (become immortal, see
 * CT_FULL) instead of straddling the constant family bits.
 */
#define CT_HDR_BITS	32
#define CT_HDR_S	4
#define CT_HDR_CHUNKS	(CT_HDR_BITS / CT_HDR_S)

/* First bit of chunk @pos. */
static inline unsigned int ct_chunk_bit(unsigned int pos)
{
	return pos < CT_HDR_CHUNKS ? pos * CT_HDR_S :
	       CT_HDR_BITS + (pos - CT_HDR_CHUNKS) * CT_S;
}

/* Width of chunk @pos. */
static inline unsigned int ct_chunk_width(unsigned int pos)
{
	return pos < CT_HDR_CHUNKS ? CT_HDR_S : CT_S;
}

/* The chunk that holds bit @bit. */
static inline unsigned int ct_bit_chunk(unsigned int bit)
{
	return bit < CT_HDR_BITS ? bit / CT_HDR_S :
	       CT_HDR_CHUNKS + (bit - CT_HDR_BITS) / CT_S;
}

struct ct_tnode {
	ct_bmap_t bmap;		/* chunk values present; immutable */
	uint8_t pos;		/* chunk this node branches on; immutable */
	uint8_t plen;		/* bytes of the stored prefix */
	uint32_t lock;		/* writers: owns the kid[] slots */
	uintptr_t kid[];	/* popcount(bmap) tagged children */
	/* then the tail: the prefix, reused as rcu_head once replaced */
};

struct ct_trie_count {
	long entries;
	long timewait;
	long nodes;
	long memory;
} __attribute__((aligned(CT_CACHELINE)));

struct ct_trie {
	struct conntab base;
	uintptr_t root;		/* empty (0), a leaf or a node */
	uint32_t root_lock;	/* owns the root slot */
	struct conntab_node hole;	/* matches no key; see above */
	struct ct_locks slot_locks;	/* own the slots of full nodes */
	struct ct_trie_count cnt[];	/* CT_TRIE_SHARDS, see ct_cnt() */
};

/*
 * Slot locks: the slots of a full node are owned by striped locks hashed
 * by the slot's address (lib/lock.h), not by the node's own lock, so that
 * writers below one full node (the root of a random table, or the node
 * under one busy local endpoint) do not all meet on one lock.
 */
#define CT_TRIE_SLOT_STRIPES	128

/*
 * Counters: sharded by writer thread (each thread draws a shard once), so
 * that two writers do not bounce one counter line on every write. Each
 * shard is updated with relaxed atomics (threads may share a shard); the
 * sums in conntab_stats are not a snapshot.
 */
#define CT_TRIE_SHARDS	32

static unsigned int ct_shard_next;
static __thread unsigned int ct_shard_mine = -1u;

static inline struct ct_trie_count *ct_cnt(struct ct_trie *tr)
{
	if (__builtin_expect(ct_shard_mine == -1u, 0))
		ct_shard_mine = __atomic_fetch_add(&ct_shard_next, 1,
						   __ATOMIC_RELAXED) %
				CT_TRIE_SHARDS;
	return &tr->cnt[ct_shard_mine];
}

static inline size_t ct_trie_size(void)
{
	return sizeof(struct ct_trie) +
	       CT_TRIE_SHARDS * sizeof(struct ct_trie_count);
}

static inline struct ct_trie *ct_trie(struct conntab *t)
{
	return (struct ct_trie *)t;
}

/* Tagged child words. */
static inline bool ct_is_leaf(uintptr_t p)
{
	return p & 1;
}

static inline struct conntab_node *ct_leaf(uintptr_t p)
{
	return (struct conntab_node *)(p & ~(uintptr_t)1);
}

static inline uintptr_t ct_leaf_word(struct conntab_node *n)
{
	return (uintptr_t)n | 1;
}

/*
 * Bit 1 of a child word marks a full node (every chunk value has a
 * slot). A full node is never copied or freed before the table is
 * destroyed: its slots are updated in place, 0 meaning empty. So writers
 * may read it without locks or RCU, and need to lock only where the trie
 * stops being full (see ct_descend).
 */
#define CT_FULL		((uintptr_t)2)

static inline bool ct_is_full(uintptr_t p)
{
	return p & CT_FULL;
}

static inline struct ct_tnode *ct_tnode(uintptr_t p)
{
	return (struct ct_tnode *)(p & ~(uintptr_t)3);
}

/* Chunk @pos of the string @s (CT_KEY_STR_BUF bytes, zero-padded). */
static inline unsigned int ct_chunk(const uint8_t *s, unsigned int pos)
{
	unsigned int bit = ct_chunk_bit(pos), w = ct_chunk_width(pos);
	unsigned int v = (unsigned int)s[bit >> 3] << 8 | s[(bit >> 3) + 1];

	return (v >> (16 - (bit & 7) - w)) & ((1u << w) - 1);
}

/*
 * Population count without a libgcc call: a baseline x86-64 build has no
 * popcnt instruction, and __builtin_popcount then becomes a function call
 * on every level of every lookup. SWAR on the bitmap's width instead.
 */
static inline unsigned int ct_popcount(ct_bmap_t x)
{
#if CT_S == 4
	unsigned int v = x;

	v = v - ((v >> 1) & 0x5555);
	v = (v & 0x3333) + ((v >> 2) & 0x3333);
	v = (v + (v >> 4)) & 0x0f0f;
	return (v + (v >> 8)) & 0x1f;
#else
	uint64_t v = x;

	v = v - ((v >> 1) & 0x5555555555555555ULL);
	v = (v & 0x3333333333333333ULL) + ((v >> 2) & 0x3333333333333333ULL);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (unsigned int)((v * 0x0101010101010101ULL) >> 56);
#endif
}

static inline unsigned int ct_nkids(const struct ct_tnode *x)
{
	return ct_popcount(x->bmap);
}

/* Index in kid[] of chunk value @c (whether present or not). */
static inline unsigned int ct_kid_index(ct_bmap_t bmap, unsigned int c)
{
	return ct_popcount(bmap & (ct_bmap_t)(((ct_bmap_t)1 << c) - 1));
}

static inline bool ct_has(ct_bmap_t bmap, unsigned int c)
{
	return (bmap >> c) & 1;
}

/* Bytes of prefix a node at chunk @pos keeps: the chunks above it. */
static inline unsigned int ct_plen(unsigned int pos)
{
	return (ct_chunk_bit(pos) + 7) / 8;
}

/*
 * A node is allocated as [head][struct ct_tnode][kid[]]: the head before
 * the node holds the prefix (plus one byte, as ct_chunk reads byte pairs)
 * and, once the node is replaced, its rcu_head, so the call_rcu callback
 * frees the head's address. Rounded to words so that the node is aligned.
 */
static inline size_t ct_head_size(unsigned int plen)
{
	size_t sz = (plen + 1 + 7) & ~(size_t)7;

	return sz < sizeof(struct rcu_head) ? sizeof(struct rcu_head) : sz;
}

static inline size_t ct_tnode_size(unsigned int nkids, unsigned int plen)
{
	return ct_head_size(plen) + sizeof(struct ct_tnode) +
	       nkids * sizeof(uintptr_t);
}

static inline uint8_t *ct_prefix(struct ct_tnode *x)
{
	return (uint8_t *)x - ct_head_size(x->plen);
}

static struct ct_tnode *ct_tnode_alloc(struct ct_trie *tr, unsigned int nkids,
				       unsigned int pos)
{
	unsigned int plen = ct_plen(pos);
	size_t sz = ct_tnode_size(nkids, plen);
	uint8_t *base = malloc(sz);
	struct ct_tnode *x;

	if (!base)
		return NULL;
	memset(base, 0, sz);
	x = (struct ct_tnode *)(void *)(base + ct_head_size(plen));
	x->pos = (uint8_t)pos;
	x->plen = (uint8_t)plen;
	__atomic_add_fetch(&ct_cnt(tr)->nodes, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ct_cnt(tr)->memory, (long)sz, __ATOMIC_RELAXED);
	return x;
}

/* Free a node no reader can reach (never published, or at destroy). */
static void ct_tnode_free(struct ct_trie *tr, struct ct_tnode *x)
{
	__atomic_sub_fetch(&ct_cnt(tr)->nodes, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&ct_cnt(tr)->memory,
			   (long)ct_tnode_size(ct_nkids(x), x->plen),
			   __ATOMIC_RELAXED);
	free(ct_prefix(x));
}

static void ct_tnode_free_rcu(struct rcu_head *head)
{
	free(head);	/* the start of the node's allocation */
}

/*
 * Retire @x, just unlinked by a writer holding the lock of the slot that
 * pointed to it: no writer can reach it any more, readers may still stand
 * on it. The head (prefix, read only by writers) becomes the rcu_head.
 * The callback touches nothing but the node, so it may run after the
 * table is destroyed.
 */
static void ct_tnode_retire(struct ct_trie *tr, struct ct_tnode *x)
{
	struct rcu_head *rh = (struct rcu_head *)(void *)ct_prefix(x);

	__atomic_sub_fetch(&ct_cnt(tr)->nodes, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&ct_cnt(tr)->memory,
			   (long)ct_tnode_size(ct_nkids(x), x->plen),
			   __ATOMIC_RELAXED);
	tr->base.flavor->update_call_rcu(rh, ct_tnode_free_rcu);
}

static struct conntab *trie_create(const struct conntab *tmpl,
				   const struct conntab_config *cfg)
{
	struct ct_trie *tr = aligned_alloc(CT_CACHELINE, ct_trie_size());

	if (!tr) {
		errno = ENOMEM;
		return NULL;
	}
	memset(tr, 0, ct_trie_size());
	tr->base = *tmpl;
	if (ct_locks_init(&tr->slot_locks, CT_TRIE_SLOT_STRIPES)) {
		free(tr);
		errno = ENOMEM;
		return NULL;
	}
	/* Family 0: ct_key_eq never matches it against a valid key. */
	tr->hole.ct_key.family = 0;
	return &tr->base;
}

/* Free a subtree at destroy: no readers or writers are left. */
static void ct_destroy_sub(struct ct_trie *tr, uintptr_t p,
			   void (*release)(struct conntab_node *))
{
	struct ct_tnode *x;
	unsigned int i, nk;

	if (!p)
		return;
	if (ct_is_leaf(p)) {
		struct conntab_node *n = ct_leaf(p);

		if (n == &tr->hole)
			return;
		ct_node_release(n);
		if (release)
			release(n);
		return;
	}
	x = ct_tnode(p);
	nk = ct_nkids(x);
	for (i = 0; i < nk; i++)
		ct_destroy_sub(tr, x->kid[i], release);
	ct_tnode_free(tr, x);
}

static void trie_destroy(struct conntab *t,
			 void (*release)(struct conntab_node *))
{
	struct ct_trie *tr = ct_trie(t);

	ct_destroy_sub(tr, tr->root, release);
	ct_locks_fini(&tr->slot_locks);
	free(tr);
}

static inline void ct_count(long *c, long d)
{
	__atomic_add_fetch(c, d, __ATOMIC_RELAXED);
}

/*
 * Writer, owner of @slot locked, @slot empty or the hole: put @leaf there.
 * One store: the leaf is fully initialised and published by it.
 */
static int ct_link_leaf(struct ct_trie *tr, uintptr_t *slot, uintptr_t leaf)
{
	if (!ct_reserve(&tr->base))
		return -ENOSPC;
	ct_rcu_assign(*slot, leaf);	/* pairs with ct_rcu_deref */
	ct_count(&ct_cnt(tr)->entries, 1);
	return 0;
}

/*
 * Writer, owner of @slot locked: @old (a leaf, or a node whose keys agree
 * with @k above chunk d / S) and the new @leaf part at bit @d. Put a new
 * node at chunk d / S with the two as children into @slot. @os is the
 * string of @old (its key, or a node's prefix: d / S < its pos, so the
 * chunk is within it).
 */
static int ct_split(struct ct_trie *tr, uintptr_t *slot, uintptr_t old,
		    const uint8_t *os, uintptr_t leaf, const uint8_t *k,
		    unsigned int d)
{
	unsigned int q = ct_bit_chunk(d);
	unsigned int cn = ct_chunk(k, q), co = ct_chunk(os, q);
	struct ct_tnode *x;

	if (!ct_reserve(&tr->base))
		return -ENOSPC;
	x = ct_tnode_alloc(tr, 2, q);
	if (!x) {
		ct_unreserve(&tr->base);
		return -ENOMEM;
	}
	x->bmap = (ct_bmap_t)((ct_bmap_t)1 << cn | (ct_bmap_t)1 << co);
	x->kid[cn > co] = leaf;
	x->kid[cn < co] = old;
	memcpy(ct_prefix(x), k, x->plen);
	/*
	 * Release: x's fields are visible before x. A reader sees old, which
	 * still leads to every key it did, or x, which leads to old too.
	 */
	ct_rcu_assign(*slot, (uintptr_t)x);
	ct_count(&ct_cnt(tr)->entries, 1);
	return 0;
}

/*
 * Writer, owner of @slot and @x locked, chunk @c absent from @x: publish a
 * copy of @x with @leaf added at @c. The caller unlocks and retires @x.
 */
static int ct_grow(struct ct_trie *tr, uintptr_t *slot, struct ct_tnode *x,
		   unsigned int c, uintptr_t leaf)
{
	unsigned int nk = ct_nkids(x), at = ct_kid_index(x->bmap, c);
	struct ct_tnode *y;

	if (!ct_reserve(&tr->base))
		return -ENOSPC;
	y = ct_tnode_alloc(tr, nk + 1, x->pos);
	if (!y) {
		ct_unreserve(&tr->base);
		return -ENOMEM;
	}
	y->bmap = x->bmap | (ct_bmap_t)((ct_bmap_t)1 << c);
	/* x is locked: its slots are stable, plain reads suffice. */
	memcpy(y->kid, x->kid, at * sizeof(uintptr_t));
	y->kid[at] = leaf;
	memcpy(&y->kid[at + 1], &x->kid[at], (nk - at) * sizeof(uintptr_t));
	memcpy(ct_prefix(y), ct_prefix(x), x->plen);
	/*
	 * A node that becomes full is published tagged: from now on it
	 * stays in place (see CT_FULL).
	 */
	ct_rcu_assign(*slot, (uintptr_t)y |
		      (nk + 1 == 1u << ct_chunk_width(x->pos) ? CT_FULL : 0));
	ct_count(&ct_cnt(tr)->entries, 1);
	return 0;
}

/*
 * Writer, owner of @slot locked, *@slot is the leaf @old with the key of
 * @n: replace it by @n if @recycled asks for it and @old is TIME_WAIT.
 */
static int ct_recycle(struct ct_trie *tr, uintptr_t *slot,
		      struct conntab_node *old, struct conntab_node *n,
		      struct conntab_node **recycled)
{
	if (!recycled || old->ct_state != CONNTAB_TIMEWAIT)
		return -EEXIST;
	/* One store: a reader finds old or n, never neither. */
	ct_rcu_assign(*slot, ct_leaf_word(n));
	ct_node_release(old);
	ct_count(&ct_cnt(tr)->timewait, -1);
	*recycled = old;
	return 0;
}

/* The lock that owns slot @slot of a full node. */
static inline uint32_t *ct_slot_lock(struct ct_trie *tr, const uintptr_t *slot)
{
	uint64_t h = ((uintptr_t)slot >> 3) * 0x9e3779b97f4a7c15ULL;

	return &ct_stripe_of(&tr->slot_locks, (uint32_t)(h >> 32))->lock;
}

/*
 * Writer: where a descent for the string @k starts locking, from @slot
 * whose owner is immortal (the root, or a full node) and locked by @lk.
 * Follows full nodes without locks (they are never copied or freed while
 * the table lives, and their prefix and pos never change), stopping at
 * the first slot that holds no full node or, with @check_prefix, one
 * whose prefix @k leaves (the insert splits there). Locks the owner of
 * that slot, rechecks the slot and returns it with *@hl the lock held:
 * from then on the slot changes only by us, and the descent continues by
 * lock coupling.
 *
 * Lock rules, so that no cycle can form: a writer takes a slot lock or
 * the root lock only while it holds no lock at all (the coupling loops
 * drop their locks before they enter a full node here), and node locks
 * only in tree order under the lock owning the node's slot. conntab_stats
 * takes the root lock and every slot lock, in index order, before it
 * takes node locks.
 */
static uintptr_t *ct_descend(struct ct_trie *tr, const uint8_t *k,
			     bool check_prefix, uintptr_t *slot, uint32_t *lk,
			     uint32_t **hl)
{
	struct ct_tnode *x;
	uintptr_t p;

	for (;;) {
		/* Pairs with the release store that published p. */
		p = ct_rcu_deref(*slot);
		if (ct_is_full(p)) {
			x = ct_tnode(p);
			if (!check_prefix ||
			    ct_str_diff(k, ct_prefix(x), x->plen) >=
			    ct_chunk_bit(x->pos)) {
				slot = &x->kid[ct_chunk(k, x->pos)];
				lk = ct_slot_lock(tr, slot);
				continue;
			}
		}
		ct_spin_lock(lk);
		if (*slot == p)
			break;
		/* Changed meanwhile; the owner is immortal: look again. */
		ct_spin_unlock(lk);
	}
	*hl = lk;
	return slot;
}

/* Writer, holding @hl: drop it and descend lock-free below full @x. */
static uintptr_t *ct_descend_below(struct ct_trie *tr, const uint8_t *k,
				   bool check_prefix, struct ct_tnode *x,
				   uint32_t **hl)
{
	uintptr_t *slot = &x->kid[ct_chunk(k, x->pos)];

	ct_spin_unlock(*hl);
	return ct_descend(tr, k, check_prefix, slot, ct_slot_lock(tr, slot),
			  hl);
}

static int trie_insert(struct conntab *t, struct conntab_node *n,
		       struct conntab_node **recycled)
{
	struct ct_trie *tr = ct_trie(t);
	uintptr_t leaf = ct_leaf_word(n), hole = ct_leaf_word(&tr->hole);
	uint8_t k[CT_KEY_STR_BUF], os[CT_KEY_STR_BUF];
	uint32_t *hl;		/* lock of the owner of *slot */
	uintptr_t *slot;
	struct ct_tnode *x;
	unsigned int c, d;
	uintptr_t p;
	int err;

	ct_key_str(&n->ct_key, k);
	slot = ct_descend(tr, k, true, &tr->root, &tr->root_lock, &hl);
	for (;;) {
		/* Stable: only writers holding *hl store into *slot. */
		p = *slot;
		if (!p || p == hole) {
			err = ct_link_leaf(tr, slot, leaf);
			break;
		}
		if (ct_is_leaf(p)) {
			struct conntab_node *o = ct_leaf(p);

			ct_key_str(&o->ct_key, os);
			d = ct_str_diff(k, os, CT_KEY_STR_MAX);
			if (d == CT_KEY_STR_MAX * 8)
				err = ct_recycle(tr, slot, o, n, recycled);
			else
				err = ct_split(tr, slot, p, os, leaf, k, d);
			break;
		}
		/*
		 * x cannot be replaced while we hold its parent's lock, so
		 * its prefix (read only by writers) is intact.
		 */
		x = ct_tnode(p);
		d = ct_str_diff(k, ct_prefix(x), x->plen);
		if (d < ct_chunk_bit(x->pos)) {
			err = ct_split(tr, slot, p, ct_prefix(x), leaf, k, d);
			break;
		}
		if (ct_is_full(p)) {
			slot = ct_descend_below(tr, k, true, x, &hl);
			continue;
		}
		ct_spin_lock(&x->lock);	/* order: slot owner, then x */
		c = ct_chunk(k, x->pos);
		if (!ct_has(x->bmap, c)) {
			err = ct_grow(tr, slot, x, c, leaf);
			ct_spin_unlock(&x->lock);
			if (!err)
				ct_tnode_retire(tr, x);
			break;
		}
		ct_spin_unlock(hl);
		hl = &x->lock;
		slot = &x->kid[ct_kid_index(x->bmap, c)];
	}
	ct_spin_unlock(hl);
	return err;
}

static struct conntab_node *trie_lookup(struct conntab *t,
					const struct conntab_key *k)
{
	struct ct_trie *tr = ct_trie(t);
	uint8_t s[CT_KEY_STR_BUF];
	const struct ct_tnode *x;
	struct conntab_node *n;
	unsigned int c;
	uintptr_t p;

	ct_key_str(k, s);
	/*
	 * Each child word is loaded with ct_rcu_deref, pairing with the
	 * release store that published it: the node it points to is seen
	 * initialised. bmap and pos never change once published. The
	 * skipped chunks are not checked here: the leaf's key is.
	 */
	p = ct_rcu_deref(tr->root);
	while (p && !ct_is_leaf(p)) {
		x = ct_tnode(p);
		c = ct_chunk(s, x->pos);
		if (!ct_has(x->bmap, c))
			return NULL;
		p = ct_rcu_deref(x->kid[ct_kid_index(x->bmap, c)]);
	}
	if (!p)
		return NULL;
	n = ct_leaf(p);
	return ct_key_eq(&n->ct_key, k) ? n : NULL;
}

/*
 * Batches descend all their keys one level per round, prefetching each
 * next node, so that the misses of a round overlap: a batch costs about
 * depth misses instead of depth misses per key.
 */
#define CT_TRIE_BATCH	16

static size_t trie_lookup_batch(struct conntab *t,
				const struct conntab_key *keys,
				struct conntab_node **out, size_t n)
{
	struct ct_trie *tr = ct_trie(t);
	uint8_t s[CT_TRIE_BATCH][CT_KEY_STR_BUF];
	uintptr_t p[CT_TRIE_BATCH];
	size_t base, i, m, found = 0;
	uintptr_t root = ct_rcu_deref(tr->root);
	bool more;

	for (base = 0; base < n; base += m) {
		m = n - base < CT_TRIE_BATCH ? n - base : CT_TRIE_BATCH;
		for (i = 0; i < m; i++) {
			ct_key_str(&keys[base + i], s[i]);
			p[i] = root;
		}
		do {
			more = false;
			for (i = 0; i < m; i++) {
				const struct ct_tnode *x;
				unsigned int c;

				if (!p[i] || ct_is_leaf(p[i]))
					continue;
				x = ct_tnode(p[i]);
				c = ct_chunk(s[i], x->pos);
				if (!ct_has(x->bmap, c)) {
					p[i] = 0;
					continue;
				}
				p[i] = ct_rcu_deref(
					x->kid[ct_kid_index(x->bmap, c)]);
				__builtin_prefetch(
					(void *)(p[i] & ~(uintptr_t)3));
				more |= !ct_is_leaf(p[i]);
			}
		} while (more);
		for (i = 0; i < m; i++) {
			struct conntab_node *l = p[i] ? ct_leaf(p[i]) : NULL;

			if (l && !ct_key_eq(&l->ct_key, &keys[base + i]))
				l = NULL;
			out[base + i] = l;
			found += l != NULL;
		}
	}
	return found;
}

/*
 * Writer, owner of @slot and non-full @x locked, kid @i of @x is a leaf
 * being removed: publish @x without it (its other child alone when only
 * one is left: path compression). Unlocks and retires @x, or, without
 * memory for the copy, leaves the hole in the leaf's slot.
 */
static void ct_shrink(struct ct_trie *tr, uintptr_t *slot, struct ct_tnode *x,
		      unsigned int i)
{
	uintptr_t hole = ct_leaf_word(&tr->hole);
	unsigned int nk = ct_nkids(x), j, c;
	struct ct_tnode *y;
	uintptr_t other;

	if (nk == 2) {
		other = x->kid[1 - i];
		if (other == hole && slot == &tr->root)
			other = 0;
		/*
		 * other was published before; the release orders nothing new
		 * but keeps one store primitive for every slot change.
		 */
		ct_rcu_assign(*slot, other);
		ct_spin_unlock(&x->lock);
		ct_tnode_retire(tr, x);
		return;
	}
	y = ct_tnode_alloc(tr, nk - 1, x->pos);
	if (!y) {
		/* Out of memory: leave a hole in place (one slot store). */
		ct_rcu_store(x->kid[i], hole);
		ct_spin_unlock(&x->lock);
		return;
	}
	/* Clear the i-th set bit of x's bitmap. */
	y->bmap = x->bmap;
	for (c = 0, j = 0; c < CT_FANOUT; c++) {
		if (!ct_has(x->bmap, c))
			continue;
		if (j++ == i) {
			y->bmap &= (ct_bmap_t)~((ct_bmap_t)1 << c);
			break;
		}
	}
	memcpy(y->kid, x->kid, i * sizeof(uintptr_t));
	memcpy(&y->kid[i], &x->kid[i + 1], (nk - i - 1) * sizeof(uintptr_t));
	memcpy(ct_prefix(y), ct_prefix(x), x->plen);
	ct_rcu_assign(*slot, (uintptr_t)y);	/* pairs with ct_rcu_deref */
	ct_spin_unlock(&x->lock);
	ct_tnode_retire(tr, x);
}

/* Account for the unlinking of @n (a writer unlinked it). */
static void ct_unlinked(struct ct_trie *tr, struct conntab_node *n)
{
	ct_node_release(n);
	ct_count(&ct_cnt(tr)->entries, -1);
	if (n->ct_state == CONNTAB_TIMEWAIT)
		ct_count(&ct_cnt(tr)->timewait, -1);
	ct_unreserve(&tr->base);
}

static int trie_remove(struct conntab *t, struct conntab_node *n)
{
	struct ct_trie *tr = ct_trie(t);
	uintptr_t leaf = ct_leaf_word(n);
	uint8_t k[CT_KEY_STR_BUF];
	uint32_t *hl;
	uintptr_t *slot;
	struct ct_tnode *x;
	unsigned int c, i;
	uintptr_t p;
	int err = -ENOENT;

	ct_key_str(&n->ct_key, k);
	slot = ct_descend(tr, k, false, &tr->root, &tr->root_lock, &hl);
again:
	p = *slot;
	if (p == leaf) {
		/* The owner is the root or a full node: empty in place. */
		ct_rcu_store(*slot, 0);
		ct_unlinked(tr, n);
		err = 0;
	}
	while (p && !ct_is_leaf(p)) {
		x = ct_tnode(p);
		if (ct_is_full(p)) {
			slot = ct_descend_below(tr, k, false, x, &hl);
			goto again;
		}
		ct_spin_lock(&x->lock);	/* order: slot owner, then x */
		c = ct_chunk(k, x->pos);
		if (!ct_has(x->bmap, c)) {
			ct_spin_unlock(&x->lock);
			break;
		}
		i = ct_kid_index(x->bmap, c);
		p = x->kid[i];
		if (p == leaf) {
			ct_shrink(tr, slot, x, i);
			ct_unlinked(tr, n);
			err = 0;
			break;
		}
		ct_spin_unlock(hl);
		hl = &x->lock;
		slot = &x->kid[i];
	}
	ct_spin_unlock(hl);
	return err;
}

/*
 * Writer: the slot holding the leaf @n, with the lock of its owner taken
 * and returned in *@hl; NULL (nothing locked) if @n is not in the trie.
 */
static uintptr_t *ct_find_leaf_locked(struct ct_trie *tr,
				      struct conntab_node *n, uint32_t **hl)
{
	uintptr_t leaf = ct_leaf_word(n);
	uint8_t k[CT_KEY_STR_BUF];
	uintptr_t *slot;
	struct ct_tnode *x;
	unsigned int c;
	uintptr_t p;

	ct_key_str(&n->ct_key, k);
	slot = ct_descend(tr, k, false, &tr->root, &tr->root_lock, hl);
	for (;;) {
		p = *slot;
		if (p == leaf)
			return slot;
		if (!p || ct_is_leaf(p))
			break;
		x = ct_tnode(p);
		if (ct_is_full(p)) {
			slot = ct_descend_below(tr, k, false, x, hl);
			continue;
		}
		c = ct_chunk(k, x->pos);
		if (!ct_has(x->bmap, c))
			break;
		ct_spin_lock(&x->lock);
		ct_spin_unlock(*hl);
		*hl = &x->lock;
		slot = &x->kid[ct_kid_index(x->bmap, c)];
	}
	ct_spin_unlock(*hl);
	return NULL;
}

static int trie_timewait(struct conntab *t, struct conntab_node *est,
			 struct conntab_node *tw)
{
	struct ct_trie *tr = ct_trie(t);
	uintptr_t *slot;
	uint32_t *hl;
	int err = 0;

	slot = ct_find_leaf_locked(tr, est, &hl);
	if (!slot)
		return -ENOENT;
	if (est->ct_state != CONNTAB_ESTABLISHED) {
		err = -EINVAL;
	} else if (tw == est) {
		/* Same node, same place: readers see either state. */
		__atomic_store_n(&est->ct_state, CONNTAB_TIMEWAIT,
				 __ATOMIC_RELAXED);
		ct_count(&ct_cnt(tr)->timewait, 1);
	} else {
		/* One store: a reader finds est or tw, never neither. */
		ct_rcu_assign(*slot, ct_leaf_word(tw));
		ct_node_release(est);
		ct_count(&ct_cnt(tr)->timewait, 1);
	}
	ct_spin_unlock(hl);
	return err;
}

/*
 * Reader: call @fn for the leaves below @p in key order (children are
 * kept in chunk order). Each slot is loaded once; whatever version of a
 * subtree it yields holds every key present across the walk (see the top
 * of this file), so such a key is visited exactly once. fn may remove the
 * node it gets: the nodes we stand on stay valid for the read lock.
 */
static int ct_walk_sub(struct ct_trie *tr, uintptr_t p, int state,
		       ct_walk_fn fn, void *arg)
{
	const struct ct_tnode *x;
	unsigned int i, nk;
	int ret;

	if (!p)
		return 0;
	if (ct_is_leaf(p)) {
		struct conntab_node *n = ct_leaf(p);

		if (n == &tr->hole || (state != CT_WALK_ALL &&
		    conntab_node_state(n) != (enum conntab_state)state))
			return 0;
		return fn(n, arg);
	}
	x = ct_tnode(p);
	nk = ct_nkids(x);
	for (i = 0; i < nk; i++) {
		ret = ct_walk_sub(tr, ct_rcu_deref(x->kid[i]), state, fn, arg);
		if (ret)
			return ret;
	}
	return 0;
}

static int trie_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	struct ct_trie *tr = ct_trie(t);

	return ct_walk_sub(tr, ct_rcu_deref(tr->root), state, fn, arg);
}

/* Reader: some leaf below @p other than the hole, or NULL. */
static struct conntab_node *ct_any_leaf(struct ct_trie *tr, uintptr_t p)
{
	const struct ct_tnode *x;
	struct conntab_node *n;
	unsigned int i, nk;

	if (!p)
		return NULL;
	if (ct_is_leaf(p))
		return ct_leaf(p) == &tr->hole ? NULL : ct_leaf(p);
	x = ct_tnode(p);
	nk = ct_nkids(x);
	for (i = 0; i < nk; i++) {
		n = ct_any_leaf(tr, ct_rcu_deref(x->kid[i]));
		if (n)
			return n;
	}
	return NULL;
}

/*
 * Reader: the leaves below @p whose strings agree with @s in the first
 * @bits bits. Follows @s while the nodes branch inside the prefix; once
 * a node branches at or past bit @bits, all its keys agree on the bits
 * above its chunk, so one leaf decides for the whole subtree. Cost: the
 * depth, plus the answer, plus up to 2^S - 1 siblings where the prefix
 * ends inside a chunk.
 */
static int ct_walk_prefix_sub(struct ct_trie *tr, uintptr_t p,
			      const uint8_t *s, unsigned int bits,
			      ct_walk_fn fn, void *arg)
{
	const struct ct_tnode *x;
	struct conntab_node *n;
	unsigned int start, w, c, v, i, mask;
	int ret;

	while (p && !ct_is_leaf(p)) {
		x = ct_tnode(p);
		start = ct_chunk_bit(x->pos);
		w = ct_chunk_width(x->pos);
		if (start >= bits) {
			n = ct_any_leaf(tr, p);
			if (!n || !ct_node_prefix_eq(n, s, bits))
				return 0;
			return ct_walk_sub(tr, p, CT_WALK_ALL, fn, arg);
		}
		c = ct_chunk(s, x->pos);
		if (start + w <= bits) {
			if (!ct_has(x->bmap, c))
				return 0;
			p = ct_rcu_deref(x->kid[ct_kid_index(x->bmap, c)]);
			continue;
		}
		/* The prefix ends inside this chunk: its top bits decide. */
		mask = ((1u << w) - 1) & ~((1u << (start + w - bits)) - 1);
		for (v = 0, i = 0; v < CT_FANOUT; v++) {
			if (!ct_has(x->bmap, v))
				continue;
			if (!((v ^ c) & mask)) {
				ret = ct_walk_prefix_sub(tr,
						ct_rcu_deref(x->kid[i]),
						s, bits, fn, arg);
				if (ret)
					return ret;
			}
			i++;
		}
		return 0;
	}
	if (!p)
		return 0;
	n = ct_leaf(p);
	if (n == &tr->hole || !ct_node_prefix_eq(n, s, bits))
		return 0;
	return fn(n, arg);
}

static int trie_walk_prefix(struct conntab *t, const uint8_t *s,
			    unsigned int bits, ct_walk_fn fn, void *arg)
{
	struct ct_trie *tr = ct_trie(t);

	return ct_walk_prefix_sub(tr, ct_rcu_deref(tr->root), s, bits, fn, arg);
}

/*
 * Writer-side scan for the deepest path, levels counted as a lookup
 * touches them (internal nodes + the leaf). Holds the locks of the path
 * from the root down (tree order, as every writer takes them), so no node
 * below can be replaced or freed while it is read, without the RCU read
 * lock; writers wait for the scan of their subtree.
 */
static void ct_depth_sub(struct ct_trie *tr, uintptr_t p, size_t depth,
			 size_t *maxd)
{
	struct ct_tnode *x;
	unsigned int i, nk;

	if (!p)
		return;
	if (ct_is_leaf(p)) {
		if (ct_leaf(p) != &tr->hole && depth + 1 > *maxd)
			*maxd = depth + 1;
		return;
	}
	x = ct_tnode(p);
	/* A full node's slots are held by the slot locks the caller took. */
	if (!ct_is_full(p))
		ct_spin_lock(&x->lock);
	nk = ct_nkids(x);
	for (i = 0; i < nk; i++)
		ct_depth_sub(tr, x->kid[i], depth + 1, maxd);
	if (!ct_is_full(p))
		ct_spin_unlock(&x->lock);
}

static void trie_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_trie *tr = ct_trie(t);
	long e, tw, nodes, mem;

	uint32_t i;

	/* Lock order: see ct_descend. */
	ct_spin_lock(&tr->root_lock);
	for (i = 0; i <= tr->slot_locks.mask; i++)
		ct_spin_lock(&tr->slot_locks.stripe[i].lock);
	ct_depth_sub(tr, tr->root, 0, &st->max_depth);
	for (i = 0; i <= tr->slot_locks.mask; i++)
		ct_spin_unlock(&tr->slot_locks.stripe[i].lock);
	ct_spin_unlock(&tr->root_lock);
	e = tw = nodes = mem = 0;
	for (i = 0; i < CT_TRIE_SHARDS; i++) {
		e += __atomic_load_n(&tr->cnt[i].entries, __ATOMIC_RELAXED);
		tw += __atomic_load_n(&tr->cnt[i].timewait, __ATOMIC_RELAXED);
		nodes += __atomic_load_n(&tr->cnt[i].nodes, __ATOMIC_RELAXED);
		mem += __atomic_load_n(&tr->cnt[i].memory, __ATOMIC_RELAXED);
	}
	st->entries = e > 0 ? (size_t)e : 0;
	st->timewait = tw > 0 ? (size_t)tw : 0;
	st->buckets = nodes > 0 ? (size_t)nodes : 0;
	st->memory = ct_trie_size() + ct_locks_memory(&tr->slot_locks) +
		     (mem > 0 ? (size_t)mem : 0);
	st->resizes = 0;
}

const struct conntab_ops ct_trie_ops = {
	.unhashed	= true,
	.registered_writers = true,	/* retires nodes through call_rcu */
	.create		= trie_create,
	.destroy	= trie_destroy,
	.insert		= trie_insert,
	.read		= {
		[CONNTAB_HASH_SIPHASH]	= { trie_lookup, trie_lookup_batch },
		[CONNTAB_HASH_AES]	= { trie_lookup, trie_lookup_batch },
	},
	.remove		= trie_remove,
	.timewait	= trie_timewait,
	.walk		= trie_walk,
	.stats		= trie_stats,
	.walk_prefix	= trie_walk_prefix,
};
