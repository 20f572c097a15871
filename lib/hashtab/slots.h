/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Buckets of tagged slots over an overflow chain: CONNTAB_CHAINED's layout.
 *
 * A bucket is one cache line: CT_SLOTS node pointers, a tag byte beside
 * each (eight bits of the key's hash that the bucket index does not use),
 * and the head of an overflow chain (chain.h) for the nodes that found
 * every slot taken. A lookup loads the line, compares its key's tag with
 * the six in one word operation, and reads only the node whose tag is
 * its own: a hit costs the bucket's line and the node's, wherever the key
 * sits among its bucket's nodes. (With one chain pointer per bucket, the
 * third of the keys that are second in their chain paid a third miss, and
 * a burst of 16 keys nearly always held one: three waves of misses where
 * this layout needs two.) The table is sized for 2 to 4 nodes a bucket
 * at the sizing hint (ct_slots_buckets_for(): 16 to 32 bytes an entry).
 * For random keys, which the keyed hash makes of any keys, a bucket then
 * overflows its six slots with probability 1/221 (2 a bucket) to 1/9 (4),
 * and 0.3% to 4.9% of the nodes are on a chain, 0.07% to 2.1% behind
 * another one there (the Poisson tails; tests/test-slots.c measures
 * them). A lookup that finds no tag of its own reads the chain head from
 * the same line and, almost always empty, stops there. Keys built to
 * collide, by whoever knows the secret, make one bucket's chain as long
 * as they are many, as in any chained table (tests/test-flood.c).
 *
 * Invariants (writers hold the lock stripe that covers the bucket):
 *
 *  S1  Tag byte i is nonzero only while slot i holds a node, whose hash
 *      has that tag. A writer fills a slot with a release store of the
 *      node (initialised) and then publishes its tag with a release store
 *      of the tag word; it empties one in the reverse order. A reader
 *      loads the tag word with acquire before any slot, so a tag it sees
 *      leads to that node, or to whatever the slot held later: a node
 *      still not freed (it leaves its slot a grace period before it can
 *      be freed, as it leaves a chain) that the key compare accepts or
 *      rejects. Under the stripe lock tag i is 0 exactly when slot i is
 *      NULL: the tags say which slots are free. Walks and scans read the
 *      slots, not the tags: a slot they find non-NULL (ct_rcu_deref(),
 *      pairing with the slot's release store) holds an initialised node.
 *  S2  A node never moves: it stays in the slot or on the overflow chain
 *      that took it until it is removed; a TIME_WAIT or recycling
 *      replacement puts the new node in the same place with one store
 *      (same key, same hash, same tag). So a key present for a whole
 *      lookup is in one place all along: in slot i, with tag i set, or
 *      on the chain, which the chain walk does not miss (chain.h).
 *  S3  A slotted node's link (ct_next) is the bucket's nulls marker: the
 *      batch probes (batch.h), which follow the link of a node that was
 *      not the key, end there as at the end of a chain.
 */
#ifndef CT_SLOTS_H
#define CT_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hash/aes.h"
#include "chain.h"
#include "../delay.h"
#include "../key.h"
#include "../lock.h"
#include "../rcu.h"

#define CT_SLOTS	6
/* Nodes a bucket at the sizing hint, at most (2 to 4: a power of two). */
#define CT_SLOTS_LOAD	4

struct ct_slots {
	uint64_t tags;			/* byte i: tag of slot i, 0 if empty */
	struct conntab_node *over;	/* overflow chain, ends ct_nulls(b) */
	struct conntab_node *slot[CT_SLOTS];
} __attribute__((aligned(CT_CACHELINE)));

_Static_assert(sizeof(struct ct_slots) == CT_CACHELINE,
	       "a bucket is one cache line");

#define CT_SLOTS_LOW	0x0101010101010101ull
#define CT_SLOTS_7F	0x7f7f7f7f7f7f7f7full
/* The high bit of each tag byte in use (bytes 0 .. CT_SLOTS - 1). */
#define CT_SLOTS_HIGH	(0x8080808080808080ull >> (8 * (8 - CT_SLOTS)))

/* The tag of hash @h: its top byte, never 0 (0 marks a free slot). */
static inline uint64_t ct_slots_tag(uint32_t h)
{
	uint64_t tag = h >> 24;

	return tag | !tag;
}

/* The high bit of every byte of @x that is zero, exactly (no borrows). */
static inline uint64_t ct_slots_zero_bytes(uint64_t x)
{
	return ~(((x & CT_SLOTS_7F) + CT_SLOTS_7F) | x | CT_SLOTS_7F);
}

/*
 * One bit per slot whose tag in @tags is that of hash @h: the high bits
 * of ct_slots_zero_bytes() without its "| CT_SLOTS_7F", which sets only
 * bits that the mask clears (one instruction of every lookup's).
 */
static inline uint64_t ct_slots_match(uint64_t tags, uint32_t h)
{
	uint64_t x = tags ^ (ct_slots_tag(h) * CT_SLOTS_LOW);

	return ~(((x & CT_SLOTS_7F) + CT_SLOTS_7F) | x) & CT_SLOTS_HIGH;
}

/* One bit per free slot (writer, stripe locked: S1). */
static inline uint64_t ct_slots_free(uint64_t tags)
{
	return ct_slots_zero_bytes(tags) & CT_SLOTS_HIGH;
}

/* The slot of the lowest bit of a nonzero mask from the two above. */
static inline unsigned int ct_slots_first(uint64_t m)
{
	return (unsigned int)__builtin_ctzll(m) >> 3;
}

/*
 * At most 2^24 buckets, 1 GiB (2^22, 256 MiB, where size_t has 32 bits):
 * a fixed table that large is the wrong tool (use CONNTAB_EXTHASH), and
 * past it the chains take the rest.
 */
#define CT_SLOTS_MAX_BUCKETS	((size_t)1 << (sizeof(size_t) > 4 ? 24 : 22))

/*
 * Bucket count for a sizing hint: a power of two >= @expected / 4, so 2
 * to 4 nodes a bucket at the hint, at least 16 buckets, at most
 * CT_SLOTS_MAX_BUCKETS.
 */
static inline size_t ct_slots_buckets_for(size_t expected)
{
	size_t want = expected / CT_SLOTS_LOAD + !!(expected % CT_SLOTS_LOAD);
	size_t nb = 16;

	while (nb < want && nb < CT_SLOTS_MAX_BUCKETS)
		nb <<= 1;
	return nb;
}

/*
 * Reader (RCU read lock held): the node holding key @k of hash @h in
 * bucket @b, whose chain ends in ct_nulls(@id), or NULL; @m has a bit
 * for each slot whose tag is @h's (bit 8i + 7 from ct_slots_match(),
 * @sh 3; bit i from ct_slots_match_sse(), @sh 0), from the bucket's tags
 * loaded with acquire (pairs with the tag store after the slot's: S1).
 */
static inline __attribute__((always_inline)) struct conntab_node *
ct_slots_find_m(const struct ct_slots *b, uintptr_t id, uint32_t h,
		const struct conntab_key *k, uint64_t m, unsigned int sh)
{
	struct conntab_node *n, *over;

	for (; m; m &= m - 1) {
		ct_delay(CT_DP_SLOT_READ);
		n = ct_rcu_deref(b->slot[__builtin_ctzll(m) >> sh]);
		if (!n)
			continue;
		/*
		 * The node's second line, where the caller's data begins
		 * (the node is 72 bytes): asked for now, it arrives with the
		 * first instead of one miss after it, on cores whose
		 * adjacent-line prefetcher does not fetch it anyway.
		 */
		__builtin_prefetch((const char *)n + CT_CACHELINE);
		if (n->ct_hash == h && ct_key_eq(&n->ct_key, k))
			return n;
	}
	/*
	 * A miss whose chain is empty (nearly all: slots.h's top) ends on
	 * the line it has read, in one compare: the chain's head is our
	 * own marker, which is what the walk below would end on.
	 */
	over = ct_rcu_deref(b->over);
	if (__builtin_expect(over == ct_nulls(id), 1))
		return NULL;
	/* Nodes never move here (S2): the chain walk ends on our marker. */
	return ct_chain_lookup(&b->over, id, h, k);
}

/* Reader: ct_slots_find_m() with the portable tag match. */
static inline __attribute__((always_inline)) struct conntab_node *
ct_slots_find(const struct ct_slots *b, uintptr_t id, uint32_t h,
	      const struct conntab_key *k)
{
	return ct_slots_find_m(b, id, h, k,
			       ct_slots_match(__atomic_load_n(&b->tags,
							      __ATOMIC_ACQUIRE),
					      h), 3);
}

#if defined(__x86_64__) && defined(CT_HAVE_AES)
# define CT_SLOTS_HAVE_SSE	1
/*
 * ct_slots_match() in SSE, for the read paths built with CT_AES_TARGET
 * (which has SSE4.1, so SSSE3): one bit per matching slot, bit i for
 * slot i, in seven instructions where the portable match takes fifteen.
 * The tag byte is broadcast by a shuffle, and a zero tag made 1 by an
 * unsigned byte max, as ct_slots_tag() does; the probe then never
 * equals a free slot's 0, nor bytes 6 and 7 of @tags (0) or the upper
 * half of the register (0), so no mask is needed.
 */
static inline CT_AES_TARGET __attribute__((always_inline)) uint64_t
ct_slots_match_sse(uint64_t tags, uint32_t h)
{
	__m128i t = _mm_cvtsi64_si128((long long)tags);
	__m128i v = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)h),
				     _mm_set1_epi8(3));

	v = _mm_max_epu8(v, _mm_set1_epi8(1));
	return (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(t, v));
}

/* Reader, in a CT_AES_TARGET function: ct_slots_find() with the above. */
static inline CT_AES_TARGET __attribute__((always_inline))
struct conntab_node *
ct_slots_find_sse(const struct ct_slots *b, uintptr_t id, uint32_t h,
		  const struct conntab_key *k)
{
	return ct_slots_find_m(b, id, h, k,
			       ct_slots_match_sse(__atomic_load_n(&b->tags,
								  __ATOMIC_ACQUIRE),
						  h), 0);
}

/* ct_slots_free() in SSE, bit i for slot i (a CT_AES_TARGET writer). */
static inline CT_AES_TARGET __attribute__((always_inline)) uint64_t
ct_slots_free_sse(uint64_t tags)
{
	__m128i t = _mm_cvtsi64_si128((long long)tags);

	return (uint64_t)(unsigned int)_mm_movemask_epi8(
		_mm_cmpeq_epi8(t, _mm_setzero_si128())) &
	       ((1u << CT_SLOTS) - 1);
}
#endif

/*
 * How a writer matches tags, passed as a constant to the inlined code
 * below (its calls become direct, then inline, as batch.h's steps):
 * the portable match, or in CT_AES_TARGET code the SSE one.
 */
struct ct_slots_tagops {
	uint64_t (*match)(uint64_t tags, uint32_t h);	/* slots of @h */
	uint64_t (*free)(uint64_t tags);		/* free slots */
	unsigned int sh;		/* the slot of mask bit b: b >> sh */
};

#define CT_SLOTS_TAGOPS \
	((struct ct_slots_tagops){ ct_slots_match, ct_slots_free, 3 })
#ifdef CT_SLOTS_HAVE_SSE
# define CT_SLOTS_TAGOPS_SSE \
	((struct ct_slots_tagops){ ct_slots_match_sse, ct_slots_free_sse, 0 })
#else
# define CT_SLOTS_TAGOPS_SSE	CT_SLOTS_TAGOPS
#endif

/*
 * Reader: the node a lookup of @h checks first (a slot with its tag, else
 * the chain's first node, else the chain's nulls marker), prefetched for
 * the batch's first probe (batch.h), which reads it. Not the line after
 * it, where a caller's data begins: the probe asks for that line on a
 * hit, and asking here too was three instructions a key for no time
 * (conntab-bench --workload batch: 28.2/27.3 ns a key in bursts of 32,
 * against 28.3 with it).
 * @m and @sh: the tag match, as for ct_slots_find_m().
 */
static inline __attribute__((always_inline)) struct conntab_node *
ct_slots_first_node_m(const struct ct_slots *b, uint64_t m, unsigned int sh)
{
	struct conntab_node *over = ct_rcu_deref(b->over);
	struct conntab_node *x = m ?
		ct_rcu_deref(b->slot[__builtin_ctzll(m) >> sh]) : over;

	/* An emptied slot reads NULL: probe the chain instead (S1). */
	x = x ? x : over;
	__builtin_prefetch(ct_is_nulls(x) ? (const void *)b : x);
	return x;
}

static inline __attribute__((always_inline)) struct conntab_node *
ct_slots_first_node(const struct ct_slots *b, uint32_t h)
{
	return ct_slots_first_node_m(b,
				     ct_slots_match(__atomic_load_n(&b->tags,
								    __ATOMIC_ACQUIRE),
						    h), 3);
}

#ifdef CT_SLOTS_HAVE_SSE
/* ct_slots_first_node() in a CT_AES_TARGET function. */
static inline CT_AES_TARGET __attribute__((always_inline))
struct conntab_node *
ct_slots_first_node_sse(const struct ct_slots *b, uint32_t h)
{
	return ct_slots_first_node_m(b,
				     ct_slots_match_sse(__atomic_load_n(&b->tags,
									__ATOMIC_ACQUIRE),
							h), 0);
}
#endif

/*
 * Writer (stripe locked): the node holding key @k of hash @h in @b, with
 * *@slot its slot, or -1 and *@pprev the chain link that points to it;
 * or NULL with *@len the nodes on @b's overflow chain.
 */
static inline __attribute__((always_inline)) struct conntab_node *
ct_slots_find_locked_t(struct ct_slots *b, uint32_t h,
		       const struct conntab_key *k, int *slot,
		       struct conntab_node ***pprev, size_t *len,
		       const struct ct_slots_tagops to)
{
	uint64_t m = to.match(b->tags, h);
	struct conntab_node *n;
	size_t over;

	for (; m; m &= m - 1) {
		n = b->slot[__builtin_ctzll(m) >> to.sh];
		if (n->ct_hash == h && ct_key_eq(&n->ct_key, k)) {
			*slot = (int)(__builtin_ctzll(m) >> to.sh);
			*pprev = NULL;
			return n;
		}
	}
	*slot = -1;
	n = ct_chain_find_locked(&b->over, h, k, pprev, &over);
	if (!n)
		*len = over;
	return n;
}

static inline __attribute__((always_inline)) struct conntab_node *
ct_slots_find_locked(struct ct_slots *b, uint32_t h,
		     const struct conntab_key *k, int *slot,
		     struct conntab_node ***pprev, size_t *len)
{
	return ct_slots_find_locked_t(b, h, k, slot, pprev, len,
				      CT_SLOTS_TAGOPS);
}

/* Writer (stripe locked): the slot holding @n, or -1. */
static inline int ct_slots_index(const struct ct_slots *b,
				 const struct conntab_node *n)
{
	int i;

	for (i = 0; i < CT_SLOTS; i++)
		if (b->slot[i] == n)
			return i;
	return -1;
}

/*
 * Writer (stripe locked): publish initialised @n, whose key is absent, in
 * a free slot of bucket @b (id @id), or at its chain's head if none is.
 * True if it took a slot.
 */
static inline __attribute__((always_inline)) bool
ct_slots_put_t(struct ct_slots *b, uintptr_t id, struct conntab_node *n,
	       const struct ct_slots_tagops to)
{
	uint64_t tags = b->tags, fr = to.free(tags);
	unsigned int i;

	if (!fr) {
		ct_chain_push(&b->over, n);
		return false;
	}
	i = (unsigned int)__builtin_ctzll(fr) >> to.sh;
	n->ct_next = ct_nulls(id);		/* S3 */
	ct_delay(CT_DP_SLOT_PUB);
	ct_rcu_assign(b->slot[i], n);		/* pairs with ct_rcu_deref */
	ct_delay(CT_DP_SLOT_PUB_TAG);
	/* Release: a reader that sees the tag sees the slot (S1). */
	__atomic_store_n(&b->tags, tags | ct_slots_tag(n->ct_hash) << (8 * i),
			 __ATOMIC_RELEASE);
	return true;
}

static inline __attribute__((always_inline)) bool
ct_slots_put(struct ct_slots *b, uintptr_t id, struct conntab_node *n)
{
	return ct_slots_put_t(b, id, n, CT_SLOTS_TAGOPS);
}

/*
 * Writer (stripe locked): put initialised @new (same key and hash) in the
 * place of @old, slot @slot or chain link *@pprev, with one store (S2).
 */
static inline void ct_slots_replace(struct ct_slots *b, uintptr_t id,
				    int slot, struct conntab_node **pprev,
				    struct conntab_node *old,
				    struct conntab_node *new)
{
	if (slot < 0) {
		ct_chain_replace(pprev, old, new);
		return;
	}
	new->ct_next = ct_nulls(id);		/* S3 */
	ct_delay(CT_DP_SLOT_PUB);
	ct_rcu_assign(b->slot[slot], new);	/* pairs with ct_rcu_deref */
}

/*
 * Writer (stripe locked): take @n out of bucket @b. False if it is in
 * none of its slots and not on its chain. A reader standing on @n goes
 * on: a slot's reader has read the node already, a chain's keeps its
 * link (chain.h).
 */
static inline bool ct_slots_unlink(struct ct_slots *b, struct conntab_node *n)
{
	struct conntab_node **pprev;
	int i = ct_slots_index(b, n);

	if (i < 0) {
		if (!(pprev = ct_chain_pprev(&b->over, n)))
			return false;
		ct_chain_unlink_release(pprev, n);
		return true;
	}
	ct_delay(CT_DP_SLOT_UNLINK);
	/* Tag first (S1); release for the same reason as a chain's. */
	__atomic_store_n(&b->tags, b->tags & ~(0xffull << (8 * i)),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&b->slot[i], NULL, __ATOMIC_RELEASE);
	return true;
}

/* Writer (stripe locked), or reader: the nodes bucket @b holds. */
static inline size_t ct_slots_len(const struct ct_slots *b)
{
	size_t i, len = ct_chain_len(&b->over);

	for (i = 0; i < CT_SLOTS; i++)
		len += __atomic_load_n(&b->slot[i], __ATOMIC_RELAXED) != NULL;
	return len;
}

#endif /* CT_SLOTS_H */
