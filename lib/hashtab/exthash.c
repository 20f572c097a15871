/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH: extendible hashing that grows and shrinks online.
 *
 * A directory of 2^d pointers indexed by the TOP d bits of the 32-bit hash
 * points to segments; a segment of local depth l <= d holds every node
 * whose hash starts with its l-bit prefix and fills the 2^(d-l) consecutive
 * slots of that prefix. A segment is an array of XH_HEADS RCU chain heads
 * (lib/hashtab/chain.h) indexed by the LOW bits of the hash, behind a header with
 * its lock, depth, counts and two successor pointers. The two index ranges
 * never overlap (XH_MAX_DEPTH + XH_SHIFT <= 32), so a split on hash bit l
 * unzips chain i of the segment into chain i of each child.
 *
 * Keys aimed at the chain index (a known secret) are answered by a
 * REHASH: the segment's nodes move, as in a split, into a segment of the
 * same range indexed by a random multiply-shift of the hash (xh_idx_of),
 * which its split children keep; where the directory may not deepen
 * (XH_ENTRIES_PER_SLOT), an overfull segment widens into one of twice the
 * heads the same way, and narrows back. A reader with hash h looks at
 * chain xh_idx_of(s, h) of every segment s on its path.
 *
 * Why segments, not one chain per bucket: a lookup's hit path is the
 * directory slot, one chain head and the node, as in the chained backend
 * plus one load from a directory 64 times smaller than the head array (it
 * stays in the cache), and a head costs 8 bytes, not a 64-byte bucket.
 *
 * Growth splits one overfull segment at a time (spread over the writer
 * calls on it that follow the insert that overfills it); shrinking
 * merges two light buddies in the remove that empties them. Directory
 * doubling and halving copy the pointers into a new directory a chunk at
 * a time, piggybacked on later writer calls, and publish it when
 * complete, so no single call pays for the whole table. doc/exthash.md
 * gives the design and the proofs; the invariants the code relies on
 * are (I1..I6, stated again where used):
 *
 *  I1 A segment's successors (succ[], the children of a split, the
 *     segment of a rehash in both halves, or the segment of a merge) are
 *     initialised and set with release stores
 *     before the first node leaves it, and never change afterwards.
 *  I2 Nodes leave a chain of a dying segment tail first, and each is
 *     linked at the head of the chain of its hash in its successor before
 *     it is cut off the dying chain (a merge moves a whole chain whose
 *     nodes all go to one chain the same way: linked, then cut off in
 *     one store); every store into a chain link of this backend is a
 *     release store. So a reader that walks the chain of its
 *     hash in a segment and then (after an acquire fence) in every
 *     successor it finds has passed every node present throughout its
 *     lookup.
 *  I3 A segment dies (dead = 1, under its lock) only after the directory
 *     (and the part of a pending directory already filled) points past it;
 *     a writer that locks a dead segment reloads the directory.
 *  I4 All directory slot stores happen under dir_lock; a pending directory
 *     is published only when complete, and every publish made while it was
 *     being filled also went into its filled part.
 *  I5 Segments and directories are freed through call_rcu once unreachable
 *     from the current directory; readers AND writers hold the flavor's
 *     read lock while they touch them.
 *  I6 Lock order: segment lock, then dir_lock. A second segment lock
 *     (merge buddy) is only ever try-locked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "chain.h"
#include "chain-ops.h"
#include "../conntab-int.h"
#include "../evict.h"
#include "hash-ops.h"
#include "heads.h"
#include "../probes.h"
#include "../rcu-reg.h"
#include "../shard.h"
#include "walk.h"

/*
 * Chain heads per segment: 64 heads (512 bytes). Larger segments make the
 * directory smaller but a split longer (it moves ~1.5 x XH_HEADS nodes,
 * each a cache miss, inside one insert); this keeps a split within a few
 * microseconds (doc/exthash.md has the measurements).
 */
#define XH_SHIFT	6
#define XH_HEADS	(1u << XH_SHIFT)
/*
 * Split a segment when an insert makes it hold more than 1.5 nodes per
 * chain; its children then hold ~0.75, so a growing table averages ~1.1,
 * the load the chained backend has at its sizing hint.
 */
#define XH_SPLIT	(XH_HEADS * 3 / 2)
/*
 * An insert that makes one of a segment's chains longer than
 * XH_CHAIN_SPLIT, however few nodes the segment holds, REHASHES it: the
 * chain index is the low bits of the hash, which whoever knows the
 * secret can choose as easily as the top ones (64 hashes a key put every
 * key in chain 0 of its segment). A rehash moves the segment's nodes,
 * over its next writer calls as a split does, into a segment of the same
 * range whose chain index is a multiply-shift hash of the whole 32-bit
 * hash, mixed first, with a random odd multiplier (xh_idx_fn), drawn from
 * a key of the table's own that cfg.secret does not give (the cursor
 * key): the keys the attacker chose then spread over the chains as
 * random ones do (multiply-shift is universal: two distinct hashes share
 * a chain of 2^s with probability at most 2 / 2^s, whatever they are;
 * the mixing keeps them distinct). Random hashes never come near it: a
 * segment's chains are Poisson of mean <= 1.5, one of 17 has probability
 * ~1e-13.
 *
 * A segment already rehashed rehashes again, with a new multiplier, once
 * it holds twice the nodes it held when its generation began (the
 * rehash, widening or narrowing that made it, struct ct_xseg.rehashed),
 * and before that at most XH_REDRAWS times (below). A redraw moves less
 * than twice the generation's first count (the count has not doubled);
 * a generation has at most XH_REDRAWS of them after the rehash that
 * began it (split halves share them out: each keeps the redraws left and
 * half the count); the rehash that ends it moves nodes at least half of
 * which came in during it (a merge's segment begins no generation and
 * rehashes at its first long chain: at most XH_MERGE nodes more than the
 * inserts since). So rehashing stays O(1) moves per insert, amortised,
 * even for keys that no multiplier can separate (equal 32-bit hashes).
 * An earlier version split the segment instead: chains of ~16, but
 * segments of ~9 nodes, 70-95 bytes of table per entry, and
 * the directory deepening with them.
 */
#define XH_CHAIN_SPLIT	16
/*
 * Multipliers a generation may draw again, at once, for a chain that
 * passed XH_CHAIN_SPLIT: universality bounds pairs, not the longest
 * chain, so a draw can be unlucky for the keys at hand (xh_idx_fn), and
 * one kept until the count doubled held its chains long for the whole
 * generation. Before the redraws (and xh_idx_fn's mix) that was
 * 2-4% of the 100K-key attacks of tests/test-exthash-skew.c (6 and 8
 * top bits and the low 6 shared, 150-250 runs each), chains of 17 to 55.
 * A draw unlucky with probability p stays so with p^3 while the
 * generation has its redraws left: equal hashes, which no draw parts,
 * may have spent them (then it waits for the count to double).
 */
#define XH_REDRAWS	2
/*
 * Largest generation count struct ct_xseg.rehashed holds. A generation
 * begun at it or more (2^30 nodes in one segment) does not end by
 * doubling: saturated, its count would pass twice the field at once and
 * every long chain would rehash the whole segment again.
 */
#define XH_GEN_MAX	((1u << 30) - 1u)
/*
 * Buddies merge only if no chain of the merged segment would hold more
 * than this, so that a merge does not build a chain that the next insert
 * rehashes again. Random merges (<= XH_MERGE nodes over 64 chains) never
 * meet it.
 */
#define XH_CHAIN_MERGE	(XH_CHAIN_SPLIT / 2)
/*
 * Merge two buddies when together they hold at most 0.5 per chain: a
 * table at a boundary needs XH_HEADS inserts to split again after a merge
 * and ~XH_HEADS removes to merge again after a split.
 */
#define XH_MERGE	(XH_HEADS / 2)
/* Deepest directory: the top bits may not reach the chain index bits. */
#define XH_MAX_DEPTH	(32 - XH_SHIFT)
/*
 * Largest segment: 2^XH_MAX_SHIFT chain heads (8 KiB). A segment that
 * overflows where the directory may not deepen (XH_ENTRIES_PER_SLOT)
 * rehashes into one of twice its heads instead of splitting (widens), and
 * back to half once it holds less than 3/8 of a node per chain. Bounded
 * because a walk step reads a whole segment (xh_snapshot): a walk reads
 * up to 2^XH_MAX_SHIFT / 32 heads per node in such segments, 16 times
 * what it reads in plain ones.
 */
#define XH_MAX_SHIFT	10
/*
 * Chains a writer call moves while a split is in progress: a split is
 * spread over XH_HEADS / XH_SPLIT_STEP writer calls on the segment, so no
 * insert pays for more than ~1.5 x XH_SPLIT_STEP cold nodes.
 */
#define XH_SPLIT_STEP	8
/*
 * Dead segments go to call_rcu in batches, through the rcu_head of one of
 * them: one batch per 1/8 of the live segments, between these bounds, so
 * what waits is at most ~1/8 of the table's segment memory (and 1024
 * segments). Why: each call_rcu keeps liburcu's worker running grace
 * periods, and a grace period of the default flavor interrupts every
 * running thread of the process (membarrier) and makes read_unlock wake
 * the waiter (futex) while a preempted reader holds it up: one call_rcu
 * per split was ~15000 interrupts per second, the bulk of the insert
 * latency tail (doc/exthash.md, "Reclamation").
 */
#define XH_RETIRE_MIN	8
#define XH_RETIRE_MAX	1024
/*
 * Directory slots copied per writer call while a resize is pending. A
 * test build (lib/local.mk) copies CT_XH_COPY_STEP slots every
 * CT_XH_COPY_EVERY calls instead, so that resizes stay pending across most
 * of the splits and merges of a table, and counts the updates xh_publish()
 * makes to the filled part of a pending directory, which it then makes
 * thousands of times (tests/test-exthash-copystep).
 */
#ifdef CT_XH_COPY_STEP
# define XH_COPY_STEP	CT_XH_COPY_STEP
# define XH_COPY_EVERY	CT_XH_COPY_EVERY
unsigned long ct_xh_fill_updates;
# define xh_count_fill_update() \
	__atomic_fetch_add(&ct_xh_fill_updates, 1, __ATOMIC_RELAXED)
#else
# define XH_COPY_STEP	1024
# define XH_COPY_EVERY	1
# define xh_count_fill_update()	do { } while (0)
#endif
/*
 * The directory doubles while it has at most 2 slots per segment, and
 * halves once no segment uses its full depth and it has more than 8 slots
 * per segment: a table at a boundary does not resize back and forth.
 *
 * That alone stalls when the hashes share their top bits (a known secret,
 * or a hash gone wrong): the keys then fill a corner of the directory that
 * the slots of the empty rest outnumber, so the segments never reach half
 * the slots while the corner's segments overflow. So a segment that
 * overflows at the full depth may also double the directory while the new
 * one has at most one slot per XH_ENTRIES_PER_SLOT entries in the table.
 * The bound: a directory is at most max(4 x segments, entries / 4) slots
 * when it is made (at most 2 bytes per entry beyond the segments' own
 * bound), where it was 4 slots per entry (32 bytes), which keys sharing 6
 * top bits reached: 262,144 slots for 100,000 keys. Past it the corner's
 * segments, which hold 2^k x 4 keys or so for k shared top bits, grow
 * instead (XH_MAX_SHIFT), so chains stay short up to k = 8 and average
 * about 2^k / 256 beyond (tests/test-exthash-skew.c).
 */
#define XH_GROW_SHIFT	1
#define XH_HALVE_SHIFT	3
#define XH_ENTRIES_PER_SLOT	4
/*
 * Entry counters, one line each, a shard per writer thread (lib/shard.h):
 * only the directory's growth decision sums them. They were sharded by the low hash bits, 16 words on two lines,
 * so nearly every write of several writers took a locked add on a line
 * another writer had just written: the one table-wide line a recycling
 * writer wrote (segment locks and chains are spread over the table),
 * which held exthash's writers to 3x from 1 to 8 where chained's made
 * 6.5x (issue 38; doc/performance.md, "Many cores"). A thread's own
 * shard stays in its cache; 16 lines are 1 KiB a table.
 */
#define XH_NCOUNT	16
/* Directories from this size on are mapped, not malloced. */
#define XH_DIR_MMAP	(256 * 1024)

struct ct_xseg {
	uint32_t lock;
	uint8_t depth;			/* local depth l, fixed */
	uint8_t dead;			/* under lock: nodes moved to succ[] */
	uint8_t splitting;		/* under lock: chains [0, moved) moved */
	uint8_t shift;			/* 1 << shift chain heads, fixed */
	uint32_t prefix;		/* top l bits of its hashes, fixed */
	uint32_t mult;			/* chain index (xh_idx_of), fixed */
	/*
	 * Nodes in its chains: written under the lock, with xh_count_set()
	 * (relaxed, so that xh_merge_once() may read a buddy's unlocked, as
	 * a hint).
	 */
	uint32_t count;
	uint32_t tw;			/* of which TIME_WAIT (under lock) */
	uint32_t moved;			/* chains emptied by a split (lock) */
	/* Writer only, fixed: the count its generation (rehash, widening or
	 * narrowing) began at, saturated, and the multipliers redrawn since
	 * (XH_REDRAWS) */
	uint32_t rehashed : 30;
	uint32_t redraws : 2;
	struct ct_xseg *succ[2];	/* RCU, I1: by hash bit l */
	struct ct_xseg *retired;	/* dead: next in its batch (dir_lock) */
	struct rcu_head rcu;
	/* RCU chains, each ending in xh_marker(seg, i) */
	struct conntab_node *head[];
};

struct ct_xdir {
	struct rcu_head rcu;
	uint32_t depth;			/* fixed */
	uint32_t shift;			/* 32 - depth (xh_seg_rcu), fixed */
	struct ct_xseg *slot[];		/* RCU, written under dir_lock */
};

struct ct_exthash {
	struct conntab base;
	/* Read by every call; written at the rare directory changes. */
	struct ct_xdir *dir __attribute__((aligned(CT_CACHELINE)));
	struct ct_xdir *pending;	/* dir being filled (dir_lock; hint) */

	/* Taken by splits, merges and resize steps. */
	uint32_t dir_lock __attribute__((aligned(CT_CACHELINE)));
	size_t fill;			/* slots of pending filled */
	unsigned long copy_calls;	/* test builds: XH_COPY_EVERY */
	size_t nb;			/* live segments */
	size_t nd[XH_MAX_DEPTH + 1];	/* live segments per local depth */
	size_t splits, merges, dir_resizes, splitting, rehashes;
	struct ct_xseg *retired;	/* dead segments awaiting call_rcu */
	unsigned int nretired;
	size_t retired_bytes;		/* their size */
	uint64_t nmult;			/* multipliers drawn (atomic) */

	struct {
		long n;			/* atomic (relaxed) */
	} __attribute__((aligned(CT_CACHELINE))) count[XH_NCOUNT];
};

_Static_assert(XH_MAX_DEPTH + XH_SHIFT <= 32, "index bits overlap");
_Static_assert(XH_SPLIT > 2 * XH_MERGE, "no hysteresis");
_Static_assert(XH_REDRAWS < 4, "struct ct_xseg.redraws has 2 bits");
_Static_assert(XH_HEADS % 4 == 0, "xh_seg_new: heads by 4");

static inline struct ct_exthash *ct_exthash(struct conntab *t)
{
	return (struct ct_exthash *)t;
}

/* Directory slot of hash @h at depth @depth (0..32). */
static inline size_t xh_slot(unsigned int depth, uint32_t h)
{
	return (size_t)((uint64_t)h >> (32 - depth));
}

/*
 * Chain of hash @h in a plain segment (mult 0), which all segments are
 * unless a long chain made the table rehash one (XH_CHAIN_SPLIT). A reader
 * walks it first in every segment, before it reads the segment's header.
 */
static inline unsigned int xh_idx(uint32_t h)
{
	return h & (XH_HEADS - 1);
}

/*
 * Chain of hash @h in a segment of chain index @mult and 2^@shift heads:
 * the low bits for a plain one, else the top @shift bits of
 * ct_mix32(h) * mult (multiply-shift, universal over odd multipliers).
 *
 * The mix keeps distinct hashes distinct, so universality stands, and
 * breaks up arithmetic progressions: the hashes an attacker aims at one
 * segment nearly are one (top and low bits fixed, the middle ones
 * random), and multiply-shift alone maps one onto a rotation, which a
 * multiplier near a fraction of small denominator bunched into a few
 * chains (one draw in 10^3 to 10^4: chains of 17 to 55). Mixed, they
 * fall into chains as random hashes do: Poisson, and as long as their
 * equal hashes make them (keys sharing 14 of 32 bits, 100K of them, hold
 * many equal hashes; tests/test-exthash-skew.c).
 *
 * Taking the top bits of one product keeps chain i of 2^s heads the
 * union of chains 2i and 2i + 1 of 2^(s+1) heads (a widening). Split
 * children keep their parent's function, so that a split unzips chain i
 * into chain i of each child when they are alike; moves go by
 * xh_idx_of() of the segment moved to, whatever it is (xh_move_chain).
 * The mix costs a rehashed segment's lookups ~7 instructions; plain
 * segments, all of them unless keys are aimed, never run it.
 */
static inline unsigned int xh_idx_fn(uint32_t mult, unsigned int shift,
				     uint32_t h)
{
	if (!mult)
		return xh_idx(h);
	return (uint32_t)(ct_mix32(h) * mult) >> (32 - shift);
}

static inline unsigned int xh_idx_of(const struct ct_xseg *s, uint32_t h)
{
	return xh_idx_fn(s->mult, s->shift, h);
}

static inline unsigned int xh_nheads(const struct ct_xseg *s)
{
	return 1u << s->shift;
}

static inline size_t xh_seg_bytes(unsigned int shift)
{
	return sizeof(struct ct_xseg) +
	       (sizeof(struct conntab_node *) << shift);
}

/* Writer, @s locked: its count is now @v (see struct ct_xseg). */
static inline void xh_count_set(struct ct_xseg *s, uint32_t v)
{
	__atomic_store_n(&s->count, v, __ATOMIC_RELAXED);
}

/* The bit a segment of depth @depth splits on: successor index of @h. */
static inline unsigned int xh_bit(uint32_t h, unsigned int depth)
{
	return (h >> (31 - depth)) & 1;
}

/*
 * The end marker of chain @i of @s: the head's own address, unique among
 * the chains a reader can reach, because a segment's memory is reused
 * only after its grace period (I5), which a reader that can still see the
 * old segment holds up.
 */
static inline uintptr_t xh_marker_id(const struct ct_xseg *s, unsigned int i)
{
	return (uintptr_t)&s->head[i] / sizeof(s->head[i]);
}

static inline struct conntab_node *xh_marker(const struct ct_xseg *s,
					     unsigned int i)
{
	return ct_nulls(xh_marker_id(s, i));
}

/* First hash past @s's range (2^32 for the last segment). */
static inline uint64_t xh_end(const struct ct_xseg *s)
{
	return ((uint64_t)s->prefix + 1) << (32 - s->depth);
}

/* The flavor's read lock, inline where it can be (lib/rcu-reg.h). */
static inline void xh_read_lock(struct ct_exthash *x)
{
	ct_writer_read_lock(&x->base);
}

static inline void xh_read_unlock(struct ct_exthash *x)
{
	ct_writer_read_unlock(&x->base);
}

/*
 * Segments come from a plain malloc, not aligned_alloc: glibc's memalign
 * takes a larger chunk than it returns, so freed ones were of a size no
 * later memalign reused; they piled up until a heap extension consolidated
 * them all in one insert (hundreds of microseconds). Same-size mallocs
 * reuse them at once. A hit reads one 8-byte head, which never straddles
 * a line at malloc's 16-byte alignment.
 */
static struct ct_xseg *xh_seg_new(unsigned int depth, uint32_t prefix,
				  unsigned int shift, uint32_t mult)
{
	struct ct_xseg *s = malloc(xh_seg_bytes(shift));
	unsigned int i;
	uintptr_t m;

	if (!s)
		return NULL;
	memset(s, 0, offsetof(struct ct_xseg, head));
	s->depth = (uint8_t)depth;
	s->prefix = prefix;
	s->shift = (uint8_t)shift;
	s->mult = mult;
	/*
	 * Each head's marker from the last, four a step: consecutive heads
	 * are 8 bytes apart, so their markers (xh_marker: the address in
	 * units of 8, as ct_nulls() encodes it) are 2 apart. Computed from
	 * each address, they cost ~8 instructions a head, ~500 a segment:
	 * each of the 16K merges that drain a table of 1M makes one.
	 */
	m = (uintptr_t)xh_marker(s, 0);
	for (i = 0; i < xh_nheads(s); i += 4, m += 8) {
		s->head[i] = (struct conntab_node *)m;
		s->head[i + 1] = (struct conntab_node *)(m + 2);
		s->head[i + 2] = (struct conntab_node *)(m + 4);
		s->head[i + 3] = (struct conntab_node *)(m + 6);
	}
#ifdef CT_DEBUG
	/*
	 * A wrong marker does not fail a lookup: the reader takes the end
	 * for a foreign one (a move, I2), finds no successor, reads the
	 * directory again and walks the same chain, for ever. Debug builds
	 * stop here instead, at the segment that has it.
	 */
	for (i = 0; i < xh_nheads(s); i++) {
		if (s->head[i] == xh_marker(s, i))
			continue;
		fprintf(stderr, "conntab: exthash segment of %u heads: head %u "
			"holds %p, its end marker is %p\n", xh_nheads(s), i,
			(void *)s->head[i], (void *)xh_marker(s, i));
		abort();
	}
#endif
	return s;
}

/*
 * A fresh odd multiplier for a rehash: SipHash of a counter under the
 * table's cursor key, which comes from getrandom() and not from
 * cfg.secret, so whoever knows the secret still cannot tell which of
 * their keys share a chain of a rehashed segment.
 */
static uint32_t xh_new_mult(struct ct_exthash *x)
{
	uint64_t c = __atomic_add_fetch(&x->nmult, 1, __ATOMIC_RELAXED);
	struct ct_sip st;

#ifdef CT_XH_TEST_MULT
	/*
	 * The test build (lib/local.mk): a table's first draws are a known
	 * multiplier, so that tests/test-exthash-redraw can aim keys at one
	 * chain of a rehashed segment and watch each draw the rules make.
	 */
	if (c <= CT_XH_TEST_MULT_DRAWS)
		return CT_XH_TEST_MULT;
#endif

	ct_sip_init(&st, &x->base.cursor_key);
	ct_sip_word(&st, 0x7868206d756c7421ull);	/* "xh mult!" */
	ct_sip_word(&st, c);
	return (uint32_t)ct_sip_final(&st, 16) | 1;
}

static void xh_seg_free(struct ct_xseg *s)
{
	free(s);
}

/* Grace period over for a batch of dead segments: free them all. */
static void xh_batch_free_rcu(struct rcu_head *head)
{
	struct ct_xseg *s = conntab_entry(head, struct ct_xseg, rcu), *next;

	for (; s; s = next) {
		next = s->retired;
		xh_seg_free(s);
	}
}

/*
 * dir_lock held: @s is dead and unreachable from the directory (I3, I4).
 * Queue it; when a batch is full, return its first segment, whose
 * rcu_head the caller hands to call_rcu once it has dropped dir_lock (I5:
 * the grace period starts after @s became unreachable, which is all a
 * reader needs; starting it later only delays the free).
 */
static struct ct_xseg *xh_retire_locked(struct ct_exthash *x,
					struct ct_xseg *s)
{
	s->retired = x->retired;
	x->retired = s;
	x->retired_bytes += xh_seg_bytes(s->shift);
	if (++x->nretired < XH_RETIRE_MIN ||
	    (x->nretired < XH_RETIRE_MAX && x->nretired < x->nb / 8))
		return NULL;
	x->retired = NULL;
	x->nretired = 0;
	x->retired_bytes = 0;
	return s;
}

static void xh_retire_batch(struct ct_exthash *x, struct ct_xseg *batch)
{
	if (!batch)
		return;
	ct_delay(CT_DP_XH_RETIRE_SEG);
	x->base.flavor->update_call_rcu(&batch->rcu, xh_batch_free_rcu);
}

static size_t xh_dir_bytes(unsigned int depth)
{
	size_t sz = sizeof(struct ct_xdir) +
		    ((size_t)1 << depth) * sizeof(struct ct_xseg *);

	return (sz + CT_CACHELINE - 1) & ~(size_t)(CT_CACHELINE - 1);
}

/*
 * Large directories come straight from mmap: a large malloc from the heap
 * first consolidates every small chunk freed since the last one (the dead
 * segments), hundreds of microseconds in the insert that starts a resize.
 * Their pages are faulted in a chunk at a time by the resize steps.
 */
static bool xh_dir_mapped(unsigned int depth)
{
	return xh_dir_bytes(depth) >= XH_DIR_MMAP;
}

static struct ct_xdir *xh_dir_new(unsigned int depth)
{
	struct ct_xdir *d;

	if (xh_dir_mapped(depth)) {
		d = mmap(NULL, xh_dir_bytes(depth), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (d == MAP_FAILED)
			return NULL;
	} else {
		d = aligned_alloc(CT_CACHELINE, xh_dir_bytes(depth));
		if (!d)
			return NULL;
	}
	d->depth = depth;
	d->shift = 32 - depth;
	return d;
}

static void xh_dir_free(struct ct_xdir *d)
{
	if (!d)
		return;
	if (xh_dir_mapped(d->depth))
		munmap(d, xh_dir_bytes(d->depth));
	else
		free(d);
}

static void xh_dir_free_rcu(struct rcu_head *head)
{
	xh_dir_free(conntab_entry(head, struct ct_xdir, rcu));
}

/*
 * Reader: the segment the current directory gives for @h: xh_slot(), with
 * the directory's shift stored beside its depth (in what was padding, so
 * a directory is no larger): ct-icount counted one instruction fewer a
 * lookup, a miss and an insert.
 */
static inline struct ct_xseg *xh_seg_rcu(struct ct_exthash *x, uint32_t h)
{
	/* Pairs with the release publishing the directory and each slot. */
	struct ct_xdir *d = ct_rcu_deref(x->dir);

	return ct_rcu_deref(d->slot[(size_t)((uint64_t)h >> d->shift)]);
}

/*
 * Reader: find @k (hash @h) starting at segment @s. Walks chain
 * xh_idx_of(s, h) of @s, then that of the successor for @h if @s is
 * splitting, rehashing or merging, and so on (I1, I2): a node moved out
 * of a chain behind the walk was linked into the successor's chain of its
 * hash first, and the successor was set before that. Never waits for a
 * writer.
 *
 * The chain of a plain segment (xh_idx) is walked first, before the
 * header: the header line is the writers' (lock, counts), and reading it
 * first would put a miss, and a line that writers keep taking away, in
 * front of every hit. In a rehashed segment that walk is wasted (its
 * chain holds other keys; a node of @k found there is still @k's), and
 * the header then gives the chain to walk; mult and shift are fixed
 * before the segment is reachable (published with it).
 *
 * xh_find() walks plain segments and hands a rehashed one, its chain
 * xh_idx(h) walked up to @end, to xh_find_rehashed(), out of line: the
 * rehashed index's mix, inline, cost every lookup registers (ct-icount
 * at 256K: 83.5 instructions a hit where 70.5 were before the mix, 68.5
 * out of line).
 */
static __attribute__((noinline)) struct conntab_node *
xh_find_rehashed(struct ct_exthash *x, struct ct_xseg *s, uint32_t h,
		 const struct conntab_key *k, struct conntab_node *end)
{
	const unsigned int i0 = xh_idx(h);
	struct conntab_node *n;
	struct ct_xseg *next;
	unsigned int i;

	for (;;) {
		i = xh_idx_of(s, h);
		if (i != i0) {
			n = ct_chain_scan(&s->head[i], h, k, &end);
			if (n)
				return n;
		}
		/* As in xh_find(). */
		ct_delay(CT_DP_XH_READ_SUCC);
		ct_rcu_deref_fence();
		next = ct_rcu_deref(s->succ[xh_bit(h, s->depth)]);
		if (next)
			s = next;
		else if (end == xh_marker(s, i))
			return NULL;
		else
			s = xh_seg_rcu(x, h);
		n = ct_chain_scan(&s->head[i0], h, k, &end);
		if (n)
			return n;
	}
}

static struct conntab_node *xh_find(struct ct_exthash *x, struct ct_xseg *s,
				    uint32_t h, const struct conntab_key *k)
{
	const unsigned int i0 = xh_idx(h);
	struct conntab_node *n, *end;
	struct ct_xseg *next;

	for (;;) {
		n = ct_chain_scan(&s->head[i0], h, k, &end);
		if (n)
			return n;
		if (__builtin_expect(s->mult != 0, 0))
			return xh_find_rehashed(x, s, h, k, end);
		/*
		 * Pairs with the release stores of xh_move_all(): if the pass
		 * missed a node because it moved, succ[] (set before) shows.
		 */
		ct_delay(CT_DP_XH_READ_SUCC);
		ct_rcu_deref_fence();
		next = ct_rcu_deref(s->succ[xh_bit(h, s->depth)]);
		if (next) {
			s = next;
			continue;
		}
		if (__builtin_expect(end == xh_marker(s, i0), 1))
			return NULL;
		/* A foreign end implies a move, hence succ (I2); be safe. */
		s = xh_seg_rcu(x, h);
	}
}

/*
 * Writer: lock and return the live segment of @h, starting at @s, which
 * a directory read under the caller's read lock gave for @h (I5: a
 * segment found dead is still memory we may touch). Only the dead flag,
 * read under the segment's lock, decides (I3): a live segment is the one
 * of its range whenever the directory was read, so the read may come
 * before anything else the caller does (xh_insert_key()).
 */
static inline __attribute__((always_inline)) struct ct_xseg *
xh_lock_from(struct ct_exthash *x, uint32_t h, struct ct_xseg *s)
{
	for (;;) {
		ct_spin_lock(&s->lock);
		/* I3: the directory already points past a dead segment. */
		ct_delay(CT_DP_XH_LOCK_SEG);
		if (!s->dead)
			return s;
		ct_spin_unlock(&s->lock);
		s = xh_seg_rcu(x, h);
		__builtin_prefetch(&s->head[xh_idx(h)], 1);
	}
}

/*
 * Writer: lock and return the live segment of @h. Caller holds the read
 * lock (I5), so a segment found dead is still memory we may touch. (Its
 * own loop, not xh_lock_from()'s: the same code, and as compiled into
 * the remove, 6 instructions fewer.)
 */
static inline __attribute__((always_inline)) struct ct_xseg *
xh_lock(struct ct_exthash *x, uint32_t h)
{
	struct ct_xseg *s;

	for (;;) {
		s = xh_seg_rcu(x, h);
		/*
		 * The lock is on the header line, the chain on another: the
		 * locked exchange would stall any later load, so start the
		 * head's miss first and let the two overlap.
		 */
		__builtin_prefetch(&s->head[xh_idx(h)], 1);
		ct_spin_lock(&s->lock);
		/* I3: the directory already points past a dead segment. */
		ct_delay(CT_DP_XH_LOCK_SEG);
		if (!s->dead)
			return s;
		ct_spin_unlock(&s->lock);
	}
}

/*
 * Writer, dir_lock held (I4): point every slot of @s's range at @s, in the
 * current directory and in the filled part of a pending one.
 */
static void xh_publish(struct ct_exthash *x, struct ct_xseg *s)
{
	struct ct_xdir *d = x->dir, *p = x->pending;
	size_t i, lo, hi;

	lo = (size_t)s->prefix << (d->depth - s->depth);
	hi = (size_t)(s->prefix + 1) << (d->depth - s->depth);
	ct_delay(CT_DP_XH_PUB_SLOTS);
	for (i = lo; i < hi; i++)
		ct_rcu_assign(d->slot[i], s);	/* pairs with xh_seg_rcu */
	if (!p)
		return;
	/* p is at least as deep as s (xh_reserve_split). */
	lo = (size_t)s->prefix << (p->depth - s->depth);
	hi = (size_t)(s->prefix + 1) << (p->depth - s->depth);
	if (hi > x->fill)
		hi = x->fill;
	if (lo < hi)
		xh_count_fill_update();
	for (i = lo; i < hi; i++)
		p->slot[i] = s;		/* p is unpublished: private */
}

/*
 * Writer: move every node of chain @i of @from (locked, dying, succ[] set:
 * I1) to the chain of its hash in its successor (chain @i too when the
 * two index alike: a split of a segment not resized), tail first (I2).
 * While a node is linked in both chains, a reader on @from passes into
 * the successor's chain, ends on a foreign marker and then walks the
 * successor itself, the chain of its own hash there: it never waits and
 * never misses a node.
 */
static void xh_move_chain(struct ct_xseg *from, unsigned int i)
{
	struct conntab_node *const end = xh_marker(from, i);
	struct conntab_node **pp, *n;
	struct ct_xseg *to;
	unsigned int j;

	while (!ct_is_nulls(from->head[i])) {
		for (pp = &from->head[i]; !ct_is_nulls((*pp)->ct_next);
		     pp = &(*pp)->ct_next)
			;
		n = *pp;
		to = from->succ[xh_bit(n->ct_hash, from->depth)];
		j = xh_idx_of(to, n->ct_hash);
		/* n is visible: its new link must be a release (I2). */
		ct_delay(CT_DP_XH_PUB_MOVE_LINK);
		ct_rcu_assign(n->ct_next, to->head[j]);
		ct_delay(CT_DP_XH_PUB_MOVE_HEAD);
		ct_rcu_assign(to->head[j], n);
		/* Only now cut n off; the chain ends on its marker again. */
		ct_delay(CT_DP_XH_UNLINK_MOVE);
		ct_rcu_assign(*pp, end);
		xh_count_set(to, to->count + 1);
		xh_count_set(from, from->count - 1);
		if (n->ct_state == CONNTAB_TIMEWAIT) {
			to->tw++;
			from->tw--;
		}
	}
}

/*
 * Writer: move chains [@lo, @hi) of @from to its successors. The nodes are
 * cold (inserted long ago): prefetching every chain's first node first
 * overlaps their misses instead of paying them one after another.
 */
static void xh_move_chains(struct ct_xseg *from, unsigned int lo,
			   unsigned int hi)
{
	struct conntab_node *n;
	unsigned int i;

	for (i = lo; i < hi; i++) {
		n = from->head[i];
		if (!ct_is_nulls(n))
			__builtin_prefetch(n, 1);
	}
	for (i = lo; i < hi; i++)
		xh_move_chain(from, i);
}

/*
 * Writer, @s locked and alive: the chain that holds hash @h now, and in
 * *@owner the segment whose counts it carries. While @s splits (or
 * rehashes), chains already moved live in the successors (nobody reaches
 * those but through @s's lock until they are published); the rest are
 * still @s's.
 */
static __attribute__((noinline)) struct conntab_node **
xh_chain_locked_slow(struct ct_xseg *s, uint32_t h, struct ct_xseg **owner)
{
	*owner = s;
	if (s->splitting && xh_idx_of(s, h) < s->moved)
		*owner = s->succ[xh_bit(h, s->depth)];
	return &(*owner)->head[xh_idx_of(*owner, h)];
}

/*
 * Writer, @s locked and alive: is it plain (mult 0: chain xh_idx(h) of
 * XH_HEADS heads) and not splitting, as nearly every segment is? Then
 * the chain of @h is its own chain xh_idx(h), whose counts are its own,
 * and it stays so while we hold its lock: only its lock holder starts a
 * split or a rehash. A plain segment has XH_HEADS heads: every segment
 * of another shift was made by a widening or a narrowing, rehashed
 * (mult != 0), and split children and merges keep their parents' mult
 * (merges of plain halves: XH_SHIFT), so xh_idx() indexes its heads.
 */
static inline bool xh_plain_locked(const struct ct_xseg *s)
{
	return !s->splitting && !s->mult;
}

/* Inline, the plain segment that is not splitting: nearly every call. */
static inline __attribute__((always_inline)) struct conntab_node **
xh_chain_locked(struct ct_xseg *s, uint32_t h, struct ct_xseg **owner)
{
	if (__builtin_expect(!xh_plain_locked(s), 0))
		return xh_chain_locked_slow(s, h, owner);
	*owner = s;
	return &s->head[xh_idx(h)];
}

/*
 * Writer entry: take the read lock (I5), lock the live segment of @h into
 * *@s and return the chain that holds @h now, its owner in *@owner. The
 * caller unlocks *@s, then the read lock.
 */
static inline __attribute__((always_inline)) struct conntab_node **
xh_write_begin(struct ct_exthash *x, uint32_t h, struct ct_xseg **s,
	       struct ct_xseg **owner)
{
	xh_read_lock(x);
	*s = xh_lock(x, h);
	return xh_chain_locked(*s, h, owner);
}

static void xh_set_pending(struct ct_exthash *x, struct ct_xdir *p)
{
	/* Read as a hint without the lock by xh_resize_step(). */
	__atomic_store_n(&x->pending, p, __ATOMIC_RELAXED);
	x->fill = 0;
}

/*
 * Entries added (or removed, negative) by a writer, on its own shard.
 * Relaxed: the sum is a hint for a resize decision, never a snapshot
 * (a shard may go negative where a thread removes what others put in;
 * only the sum means anything), and threads beyond XH_NCOUNT share
 * shards, so the add is atomic.
 */
static void xh_count_add(struct ct_exthash *x, long n)
{
	if (n)
		__atomic_fetch_add(&x->count[ct_thread_shard(XH_NCOUNT)].n, n,
				   __ATOMIC_RELAXED);
}

/* Entries in the table, give or take the writers in flight. */
static size_t xh_entries(const struct ct_exthash *x)
{
	long n = 0;
	unsigned int i;

	for (i = 0; i < XH_NCOUNT; i++)
		n += __atomic_load_n(&x->count[i].n, __ATOMIC_RELAXED);
	return n > 0 ? (size_t)n : 0;
}

/*
 * dir_lock held: may the directory double now? Asked when a segment
 * overflows at the directory's full depth (see XH_ENTRIES_PER_SLOT).
 */
static bool xh_grow_ok(const struct ct_exthash *x)
{
	unsigned int d = x->dir->depth;
	size_t slots = (size_t)1 << d;

	if (x->pending || d >= XH_MAX_DEPTH)
		return false;
	return (x->nb << XH_GROW_SHIFT) >= slots ||
	       2 * slots * XH_ENTRIES_PER_SLOT <= xh_entries(x);
}

/* dir_lock held: may the directory halve now? */
static bool xh_shrink_ok(const struct ct_exthash *x)
{
	unsigned int d = x->dir->depth;

	return !x->pending && d > 0 && !x->nd[d] &&
	       (x->nb << XH_HALVE_SHIFT) < ((size_t)1 << d);
}

/*
 * Writer, no segment lock needed: start filling a directory of @depth
 * (one more or one less than the current), if still wanted. The copy
 * itself is spread over later calls (xh_resize_step).
 */
static void xh_start_resize(struct ct_exthash *x, unsigned int depth)
{
	struct ct_xdir *p = xh_dir_new(depth);	/* outside the spinlock */

	if (!p)
		return;	/* ENOMEM: keep the directory; chains get longer */
	ct_spin_lock(&x->dir_lock);
	ct_delay(CT_DP_XH_LOCK_DIR_RESIZE);
	if (depth == x->dir->depth + 1 ? xh_grow_ok(x) :
	    depth + 1 == x->dir->depth && xh_shrink_ok(x)) {
		xh_set_pending(x, p);
		p = NULL;
	}
	ct_spin_unlock(&x->dir_lock);
	xh_dir_free(p);
}

/*
 * Writer (read lock held, no segment lock): copy the next chunk of a
 * pending directory and publish it once complete (I4). Copying pointers
 * only: doubling maps slot i to old slot i/2, halving to old slot 2i
 * (valid because no segment uses the old full depth: xh_reserve_split
 * cancels a halving that a split would invalidate).
 */
static __attribute__((noinline)) void xh_resize_copy(struct ct_exthash *x)
{
	struct ct_xdir *d, *p;
	size_t i, end, size;

	if ((XH_COPY_EVERY > 1 &&
	     __atomic_add_fetch(&x->copy_calls, 1, __ATOMIC_RELAXED) %
	     XH_COPY_EVERY) ||
	    !ct_spin_trylock(&x->dir_lock))
		return;
	p = x->pending;
	if (p) {
		d = x->dir;
		size = (size_t)1 << p->depth;
		end = size - x->fill > XH_COPY_STEP ? x->fill + XH_COPY_STEP :
						      size;
		if (p->depth > d->depth)
			for (i = x->fill; i < end; i++)
				p->slot[i] = d->slot[i >> 1];
		else
			for (i = x->fill; i < end; i++)
				p->slot[i] = d->slot[i << 1];
		x->fill = end;
		if (end == size) {
			/* Slots written before: pairs with xh_seg_rcu. */
			ct_delay(CT_DP_XH_PUB_DIR);
			ct_rcu_assign(x->dir, p);
			xh_set_pending(x, NULL);
			x->dir_resizes++;
			CT_PROBE(exthash_dir_resize, x, (size_t)1 << d->depth,
				 (size_t)1 << p->depth);
			ct_delay(CT_DP_XH_RETIRE_DIR);
			x->base.flavor->update_call_rcu(&d->rcu,
							xh_dir_free_rcu);
		}
	}
	ct_spin_unlock(&x->dir_lock);
}

/*
 * Every writer call ends here: a load of the pending hint (on the line
 * of x->dir, which the call read already) and, only while a directory
 * is being filled, the copy, out of line.
 */
static inline void xh_resize_step(struct ct_exthash *x)
{
	if (__builtin_expect(!!__atomic_load_n(&x->pending, __ATOMIC_RELAXED),
			     0))
		xh_resize_copy(x);
}

/*
 * dir_lock held: account a split of a segment of depth @l if the
 * directory is deep enough. Counting the two children now keeps a halving
 * from making the directory shallower than they are before they are
 * published.
 */
static bool xh_reserve_split(struct ct_exthash *x, unsigned int l)
{
	struct ct_xdir *p = x->pending;

	if (l + 1 > x->dir->depth)
		return false;
	if (p && p->depth < l + 1) {
		/* A halving this split invalidates; never published. */
		xh_dir_free(p);
		xh_set_pending(x, NULL);
	}
	x->nd[l]--;
	x->nd[l + 1] += 2;
	x->nb++;
	x->splitting++;
	return true;
}

/*
 * Writer, @s locked, alive and splitting (or rehashing: both successors
 * the one new segment): move the next XH_SPLIT_STEP chains. The call that
 * moves the last publishes the successors in the directory and retires @s
 * (I3, I5).
 */
static void xh_split_step(struct ct_exthash *x, struct ct_xseg *s)
{
	unsigned int lo = s->moved, hi = lo + XH_SPLIT_STEP;
	struct ct_xseg *batch;

	if (hi > xh_nheads(s))
		hi = xh_nheads(s);
	xh_move_chains(s, lo, hi);
	s->moved = hi;
	if (hi < xh_nheads(s))
		return;
	/*
	 * Nobody else can reach the successors for writing before this
	 * publish: writers come through the directory, or through s's lock,
	 * which we hold.
	 */
	ct_spin_lock(&x->dir_lock);	/* I6: after the segment lock */
	xh_publish(x, s->succ[0]);
	if (s->succ[1] != s->succ[0]) {
		xh_publish(x, s->succ[1]);
		x->splits++;
		x->splitting--;
		CT_PROBE(exthash_split, x, s->depth + 1u, x->nb);
	} else {
		/* A rehash: same depth and range, nothing to account. */
		x->rehashes++;
	}
	ct_delay(CT_DP_XH_UNLINK_SEG);
	s->dead = 1;	/* I3 */
	/* We hold the read lock: s stays valid until we unlock it. */
	batch = xh_retire_locked(x, s);
	ct_spin_unlock(&x->dir_lock);
	xh_retire_batch(x, batch);
}

/* Writer, @s locked: more than 1.5 nodes a chain, due to split or widen. */
static inline bool xh_overfull(const struct ct_xseg *s)
{
	return s->count > (size_t)XH_SPLIT << (s->shift - XH_SHIFT);
}

/*
 * Writer, @s locked, alive and not splitting: start rehashing it into a
 * segment of the same depth and range, 2^@shift heads and chain index
 * @mult, which begins a generation (XH_CHAIN_SPLIT) unless it is a
 * @redraw of @s's multiplier. Same protocol as a split (I1: the
 * successor, both halves of succ[], is set before the first node moves;
 * later writer calls move the chains, xh_split_step), with one successor
 * for both hash bits; no directory slot changes until it is published,
 * and the segment counts stay as they are. On allocation failure nothing
 * starts: @s stays as it is, its chains long.
 */
static void xh_start_rehash(struct ct_xseg *s, unsigned int shift,
			    uint32_t mult, bool redraw)
{
	struct ct_xseg *r = xh_seg_new(s->depth, s->prefix, shift, mult);

	if (!r)
		return;
	if (redraw) {
		r->rehashed = s->rehashed;
		r->redraws = s->redraws + 1u;
	} else {
		/* Saturated: such a generation never ends by doubling. */
		r->rehashed = s->count < XH_GEN_MAX ? s->count & XH_GEN_MAX :
						      XH_GEN_MAX;
	}
	/* I1: initialised, set before the first node moves. */
	ct_delay(CT_DP_XH_PUB_SUCC);
	ct_rcu_assign(s->succ[0], r);
	ct_rcu_assign(s->succ[1], r);
	s->splitting = 1;
	s->moved = 0;
}

/*
 * Writer, @s locked, alive and not splitting, overfull where the directory
 * may not deepen: make it twice as wide (rehashed if it was plain), up to
 * XH_MAX_SHIFT; the multiplier stays, so a chain i becomes chains 2i and
 * 2i + 1.
 */
static void xh_widen(struct ct_exthash *x, struct ct_xseg *s)
{
	if (s->shift < XH_MAX_SHIFT)
		xh_start_rehash(s, s->shift + 1u,
				s->mult ? s->mult : xh_new_mult(x), false);
}

/*
 * Writer: @s is locked and alive, not splitting, and an insert just went
 * into it, making its chain @chain long.
 *
 * A chain longer than XH_CHAIN_SPLIT: rehash @s with a fresh multiplier,
 * if it is plain or has doubled its count since its generation began, or
 * redraw its multiplier if the generation has redraws left (XH_REDRAWS)
 * and @s is not overfull: at 1.5 nodes a chain or less a chain of 17 is
 * an unlucky multiplier's (random hashes: ~1e-13), past it the load's,
 * which only a split or a widening shortens.
 *
 * More than 1.5 nodes per chain: split it, allocating and announcing the
 * children; later writer calls on @s move the chains (xh_split_step). A
 * split needs a directory deeper than @s: at the full depth it starts a
 * doubling and splits on a later insert, or, where the directory may not
 * double (XH_ENTRIES_PER_SLOT, XH_MAX_DEPTH), widens @s instead.
 *
 * Whatever fails (no memory), the insert stands and @s merely stays
 * overfull.
 */
static __attribute__((noinline)) void
xh_maybe_split_slow(struct ct_exthash *x, struct ct_xseg *s, size_t chain)
{
	unsigned int l = s->depth, cshift;
	struct ct_xseg *s0, *s1;
	bool ok, grow = false, widen = false;

	if (chain > XH_CHAIN_SPLIT) {
		if (!s->mult || (s->rehashed < XH_GEN_MAX &&
				 s->count >= 2 * (size_t)s->rehashed)) {
			xh_start_rehash(s, s->shift, xh_new_mult(x), false);
			return;
		}
		if (s->redraws < XH_REDRAWS && !xh_overfull(s)) {
			xh_start_rehash(s, s->shift, xh_new_mult(x), true);
			return;
		}
	}
	if (!xh_overfull(s))
		return;
	if (l >= XH_MAX_DEPTH) {
		xh_widen(x, s);
		return;
	}
	if (l >= ct_rcu_deref(x->dir)->depth) {
		/* Needs a deeper directory: start one, split later. */
		if (__atomic_load_n(&x->pending, __ATOMIC_RELAXED))
			return;
		ct_spin_lock(&x->dir_lock);
		if (l == x->dir->depth && !x->pending) {
			grow = xh_grow_ok(x);
			widen = !grow;
		}
		ct_spin_unlock(&x->dir_lock);
		if (grow)
			xh_start_resize(x, l + 1);
		else if (widen)
			xh_widen(x, s);
		return;
	}
	/* Half the heads for half the nodes; the same index function. */
	cshift = s->shift > XH_SHIFT ? s->shift - 1u : XH_SHIFT;
	s0 = xh_seg_new(l + 1, s->prefix << 1, cshift, s->mult);
	s1 = xh_seg_new(l + 1, s->prefix << 1 | 1, cshift, s->mult);
	if (!s0 || !s1)
		goto out_free;
	/*
	 * A rehash again needs twice what each half starts with; the halves
	 * keep the generation's redraws left.
	 */
	s0->rehashed = s1->rehashed = s->rehashed / 2;
	s0->redraws = s1->redraws = s->redraws;
	ct_spin_lock(&x->dir_lock);	/* I6: after the segment lock */
	ct_delay(CT_DP_XH_LOCK_DIR_SPLIT);
	ok = xh_reserve_split(x, l);
	ct_spin_unlock(&x->dir_lock);
	if (!ok)
		goto out_free;
	/* I1: initialised children, set before the first node moves. */
	ct_delay(CT_DP_XH_PUB_SUCC);
	ct_rcu_assign(s->succ[0], s0);
	ct_rcu_assign(s->succ[1], s1);
	s->splitting = 1;
	s->moved = 0;
	/*
	 * No chain moves yet: this call may have faulted in fresh memory for
	 * the children; the moves go to the next calls, not on top of it.
	 */
	return;
out_free:
	xh_seg_free(s0);
	xh_seg_free(s1);
}

/*
 * The non-empty chains of a merge's two halves, which hold at most
 * XH_MERGE nodes together, and so at most as many non-empty chains: what
 * xh_merge_chains_ok() found, for xh_splice_chains(). Listed once, they
 * spare the check and the moves two more passes over 2 x 64 heads, most
 * of them empty (~40 instructions a remove when merges empty a table).
 */
_Static_assert(XH_MAX_SHIFT <= 16, "a head's index in a uint16_t");
struct xh_merge_list {
	unsigned int n[2];			/* chains listed, per half */
	uint16_t idx[2][XH_MERGE];		/* their heads' indices */
};

/*
 * Writer, merge: move @from's chains (@from locked, dying, succ[] = @to:
 * I1) to @to, which indexes alike (same mult and shift), so that every
 * node of chain i goes to chain i of @to: each chain whole, not node by
 * node as xh_move_chain() does. Its tail is linked to @to's chain, its
 * first node made @to's head, and only then is it cut off @from (I2:
 * every node is in @to's chain before it leaves @from's; a reader that
 * reads @from's head before the cut walks the whole run, then ends on
 * @from's marker or walks on into @to's chain to a foreign one; one that
 * reads it after finds it empty and meets the run in @to, through
 * succ[]). A second half spliced into chain i links its tail to the
 * first half's run, which ends on @to's marker. @idx lists @from's @nidx
 * non-empty chains, those xh_merge_chains_ok() listed: only a half with
 * @to's mult and shift comes here (xh_merge_once()), so that chain i
 * holds only nodes of chain i of @to (tests/test-exthash-merge). Node
 * by node, the moves of the merges that empty a table of 1M cost each
 * remove ~50 instructions (callgrind, bench/conntab-bench --workload
 * remove); xh_merge_chains_ok() has just walked the nodes, so finding
 * each tail misses nothing.
 */
static void xh_splice_chains(struct ct_xseg *from, struct ct_xseg *to,
			     const uint16_t *idx, unsigned int nidx)
{
	struct conntab_node *first, *n;
	unsigned int i, k;

	for (k = 0; k < nidx; k++) {
		i = idx[k];
		first = from->head[i];
		for (n = first; !ct_is_nulls(n->ct_next); n = n->ct_next)
			;
		ct_delay(CT_DP_XH_PUB_MOVE_LINK);
		ct_rcu_assign(n->ct_next, to->head[i]);
		ct_delay(CT_DP_XH_PUB_MOVE_HEAD);
		ct_rcu_assign(to->head[i], first);
		ct_delay(CT_DP_XH_UNLINK_MOVE);
		ct_rcu_assign(from->head[i], xh_marker(from, i));
	}
	xh_count_set(to, to->count + from->count);
	to->tw += from->tw;
	xh_count_set(from, 0);
	from->tw = 0;
}

/*
 * Writer, @s locked and alive, after an insert made a chain of @chain
 * nodes: split, rehash or widen @s if it is due (xh_maybe_split_slow()).
 * Inline, the two compares that nearly every insert ends with: the
 * count against XH_SPLIT, which every segment must pass to be overfull
 * (xh_overfull(): its bound grows with its heads, never below XH_SPLIT),
 * not its own bound, whose shift cost 4 more instructions. A widened
 * segment between the two (keys aimed at the table) goes to the slow
 * path, which asks xh_overfull() first and returns.
 */
static inline void xh_maybe_split(struct ct_exthash *x, struct ct_xseg *s,
				  size_t chain)
{
	if (__builtin_expect(chain > XH_CHAIN_SPLIT || s->count > XH_SPLIT,
			     0))
		xh_maybe_split_slow(x, s, chain);
}

/* Writer, @s locked and alive, after a change: advance or start a split. */
static inline __attribute__((always_inline)) void
xh_grow_locked(struct ct_exthash *x, struct ct_xseg *s,
	       const struct ct_delta *d)
{
	if (s->splitting)
		xh_split_step(x, s);
	else if (d->entries > 0)
		xh_maybe_split(x, s, d->chain);
}

/*
 * Writer, @s and @o locked: would every chain of their merge, a segment
 * of XH_HEADS heads indexed by @mult, hold at most XH_CHAIN_MERGE nodes?
 * At most XH_MERGE nodes to count (the caller checked), over the two
 * segments' heads.
 */
static bool xh_merge_chains_ok(struct ct_xseg *s, struct ct_xseg *o,
			       uint32_t mult, struct xh_merge_list *ml)
{
	unsigned char len[XH_HEADS] = { 0 };
	struct ct_xseg *seg[2] = { s, o };
	unsigned int c, i, k, nh, nl = 0;
	struct conntab_node *n;

	/*
	 * The nodes are cold (a table shrinks as it drains: nobody looked
	 * at them for a while), and at <= XH_MERGE nodes over 2 x 64 chains
	 * nearly all are the first of theirs: start all their misses at
	 * once, or the walk below waits for each in turn (the merges of a
	 * table drained from 1M to empty walk ~0.5 nodes a remove). The
	 * moves then find them cached.
	 */
	for (c = 0; c < 2; c++) {
		nh = xh_nheads(seg[c]);
		ml->n[c] = 0;
		for (i = 0; i < nh; i++) {
			if (ct_is_nulls(n = seg[c]->head[i]))
				continue;
			/* More chains than nodes: counts gone wrong. */
			if (nl++ == XH_MERGE)
				return false;
			__builtin_prefetch(n);
			ml->idx[c][ml->n[c]++] = (uint16_t)i;
		}
	}
	for (c = 0; c < 2; c++)
		for (k = 0; k < ml->n[c]; k++)
			for (n = seg[c]->head[ml->idx[c][k]]; !ct_is_nulls(n);
			     n = n->ct_next)
				if (++len[xh_idx_fn(mult, XH_SHIFT,
						    n->ct_hash)] >
				    XH_CHAIN_MERGE)
					return false;
	return true;
}

/*
 * Writer: @s is locked and alive and a remove just went out of it. Merge
 * it with its buddy if both are light. Returns the merged segment, locked,
 * with @s unlocked (the caller may try again one level up), or NULL with
 * @s still locked. *@halve is set when the directory may now halve.
 */
static struct ct_xseg *xh_merge_once(struct ct_exthash *x, struct ct_xseg *s,
				     bool *halve)
{
	struct ct_xseg *o, *m, *batch, *batch2, *half[2];
	struct xh_merge_list ml;
	unsigned int c, l = s->depth;
	struct ct_xdir *d;
	uint32_t mult;

	if (!l || s->splitting || s->count > XH_MERGE)
		return NULL;
	d = ct_rcu_deref(x->dir);
	if (l > d->depth)
		return NULL;
	o = ct_rcu_deref(d->slot[(size_t)(s->prefix ^ 1) << (d->depth - l)]);
	/*
	 * Most removes from a light segment meet a buddy too full to merge
	 * (half the removes that drain a table: 540K of 1M): its count, read
	 * unlocked, spares them the buddy's lock. Only a hint: the locked
	 * test below decides. A stale count may skip a merge the lock would
	 * have allowed, as a failed trylock does; either way the next remove
	 * from either buddy tries again.
	 */
	if (o == s ||
	    s->count + __atomic_load_n(&o->count, __ATOMIC_RELAXED) > XH_MERGE)
		return NULL;
	/* I6: the buddy is only try-locked, so any order is deadlock-free. */
	if (!ct_spin_trylock(&o->lock))
		return NULL;
	ct_delay(CT_DP_XH_LOCK_BUDDY);
	/* A rehashed half keeps its merge rehashed (XH_CHAIN_SPLIT). */
	mult = s->mult ? s->mult : o->mult;
	if (o->dead || o->splitting || o->depth != l ||
	    o->prefix != (s->prefix ^ 1) || s->count + o->count > XH_MERGE ||
	    !xh_merge_chains_ok(s, o, mult, &ml))
		goto out_unlock;
	m = xh_seg_new(l - 1, s->prefix >> 1, XH_SHIFT, mult);
	if (!m)
		goto out_unlock;
	/* Unreachable for writers until published; locked for our caller. */
	ct_spin_lock(&m->lock);
	/* I1: both halves lead to m before any node moves. */
	ct_delay(CT_DP_XH_PUB_MERGE_SUCC);
	ct_rcu_assign(s->succ[0], m);
	ct_rcu_assign(s->succ[1], m);
	ct_rcu_assign(o->succ[0], m);
	ct_rcu_assign(o->succ[1], m);
	half[0] = s;
	half[1] = o;
	for (c = 0; c < 2; c++) {
		if (half[c]->mult == mult && half[c]->shift == XH_SHIFT)
			xh_splice_chains(half[c], m, ml.idx[c], ml.n[c]);
		else
			xh_move_chains(half[c], 0, xh_nheads(half[c]));
	}
	ct_spin_lock(&x->dir_lock);
	xh_publish(x, m);
	x->nd[l] -= 2;
	x->nd[l - 1]++;
	x->nb--;
	x->merges++;
	CT_PROBE(exthash_merge, x, l - 1, x->nb);
	*halve = *halve || xh_shrink_ok(x);
	ct_delay(CT_DP_XH_UNLINK_SEG);
	s->dead = 1;	/* I3 */
	o->dead = 1;
	/* Still under our read lock: s and o stay valid until we leave it. */
	batch = xh_retire_locked(x, s);
	batch2 = xh_retire_locked(x, o);
	ct_spin_unlock(&x->dir_lock);
	ct_spin_unlock(&o->lock);
	ct_spin_unlock(&s->lock);
	xh_retire_batch(x, batch);
	xh_retire_batch(x, batch2);
	return m;
out_unlock:
	ct_spin_unlock(&o->lock);
	return NULL;
}

/*
 * Writer: unlock @s after a remove, merging upwards while it is light. A
 * widened segment (xh_widen) that no merge took and that holds less than
 * 3/8 of a node per chain is rehashed to half its heads (3/4 per chain:
 * it widens again only at twice that), so its memory follows its count.
 */
static __attribute__((noinline)) void
xh_unlock_shrink_slow(struct ct_exthash *x, struct ct_xseg *s)
{
	bool halve = false;
	struct ct_xseg *m;
	unsigned int d;

	while ((m = xh_merge_once(x, s, &halve)))
		s = m;
	if (s->shift > XH_SHIFT && !s->splitting &&
	    (size_t)s->count * 8 < (size_t)3 << s->shift)
		xh_start_rehash(s, s->shift - 1u, s->mult, false);
	ct_spin_unlock(&s->lock);
	if (halve) {
		d = ct_rcu_deref(x->dir)->depth;
		if (d)
			xh_start_resize(x, d - 1);
	}
}

/*
 * Writer, @s locked, alive, light (count <= XH_MERGE) and not the root:
 * could it merge with its buddy now? xh_merge_once()'s first tests,
 * inline, the buddy's count read unlocked as the hint it is there: a
 * table drained to empty meets a light segment with a buddy too full
 * in ~540K of 1M removes, and each paid the out-of-line call, its
 * register saves and the merge's own setup (~50 instructions) to learn
 * that. False only where xh_merge_once() would return NULL at once; a
 * true is decided there, under the buddy's lock.
 */
static inline __attribute__((always_inline)) bool
xh_merge_hint(struct ct_exthash *x, const struct ct_xseg *s)
{
	/*
	 * Pairs with the release publishing the directory and each slot.
	 * The buddy, unlocked, may be dying: it is not freed while this
	 * writer holds the flavor's read lock (I5), and its count is only
	 * read, as xh_merge_once() reads it.
	 */
	const struct ct_xdir *d = ct_rcu_deref(x->dir);
	const struct ct_xseg *o;

	if (s->depth > d->depth)
		return false;
	o = ct_rcu_deref(d->slot[(size_t)(s->prefix ^ 1)
				 << (d->depth - s->depth)]);
	return s->count + __atomic_load_n(&o->count, __ATOMIC_RELAXED) <=
	       XH_MERGE;
}

/*
 * The same, inline for what nearly every remove meets: a plain segment
 * (not widened, not splitting) too full to merge, or the root, which
 * has no buddy; xh_merge_once() and the halving test would both decline.
 */
static inline void xh_unlock_shrink(struct ct_exthash *x, struct ct_xseg *s)
{
	if (__builtin_expect((s->count > XH_MERGE || !s->depth) &&
			     s->shift == XH_SHIFT && !s->splitting, 1)) {
		ct_spin_unlock(&s->lock);
		return;
	}
	xh_unlock_shrink_slow(x, s);
}

static struct conntab *xh_create(const struct conntab *tmpl,
				 const struct conntab_config *cfg)
{
	unsigned int depth = 0;
	struct ct_exthash *x;
	size_t i = 0, nb;

	/* Start at <= 1 node per chain for the hint; 1 segment for 0. */
	while (depth < XH_MAX_DEPTH - 4 &&
	       ((size_t)XH_HEADS << depth) < cfg->expected)
		depth++;
	nb = (size_t)1 << depth;
	x = aligned_alloc(CT_CACHELINE, sizeof(*x));
	if (!x)
		goto nomem;
	memset(x, 0, sizeof(*x));
	x->base = *tmpl;
	x->dir = xh_dir_new(depth);
	if (!x->dir)
		goto nomem;
	for (i = 0; i < nb; i++) {
		x->dir->slot[i] = xh_seg_new(depth, (uint32_t)i, XH_SHIFT, 0);
		if (!x->dir->slot[i])
			goto nomem;
	}
	x->nb = nb;
	x->nd[depth] = nb;
	return &x->base;
nomem:
	if (x && x->dir) {
		while (i--)
			xh_seg_free(x->dir->slot[i]);
		xh_dir_free(x->dir);
	}
	free(x);
	errno = ENOMEM;
	return NULL;
}

/* Free @s and, if it was splitting, its successors, releasing every node. */
static void xh_seg_release(struct ct_xseg *s,
			   void (*release)(struct conntab_node *))
{
	unsigned int c;

	/* A rehash has one successor in both halves of succ[]. */
	if (s->splitting)
		for (c = 0; c < 2 && (!c || s->succ[1] != s->succ[0]); c++) {
			ct_heads_release(s->succ[c]->head,
					 xh_nheads(s->succ[c]), release);
			xh_seg_free(s->succ[c]);
		}
	ct_heads_release(s->head, xh_nheads(s), release);
	xh_seg_free(s);
}

/*
 * No users left: the current directory points at live segments only (I3),
 * and the children of a split in progress only through their parent.
 */
static void xh_destroy(struct conntab *t,
		       void (*release)(struct conntab_node *))
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_xdir *d = x->dir;
	struct ct_xseg *s;
	size_t i = 0, size = (size_t)1 << d->depth;

	while (i < size) {
		s = d->slot[i];
		i = (size_t)(s->prefix + 1) << (d->depth - s->depth);
		xh_seg_release(s, release);
	}
	/* Retired segments: no reader is left to wait for. */
	while ((s = x->retired)) {
		x->retired = s->retired;
		xh_seg_free(s);
	}
	xh_dir_free(x->pending);
	xh_dir_free(d);
	free(x);
}

/* Apply a chain operation's counts to its segment (segment locked). */
static void xh_apply(struct ct_xseg *s, const struct ct_delta *d)
{
	xh_count_set(s, s->count + (uint32_t)d->entries);
	s->tw += (uint32_t)d->timewait;
}

/*
 * Sample the chains of @s (locked, alive) for an eviction, from chain @i0
 * on, a unit for each chain's head and each node (evict.h); @skip, a
 * chain sampled already (or NULL), is passed over. While @s splits or
 * rehashes, its chains [0, moved) are empty and their nodes are in the
 * successors, at chains of the successors' own indexing: those are
 * sampled whole (they hold what moved, and what went in after), each
 * counted by its successor and guarded by @s's lock (nobody reaches them
 * but through it until they are published).
 */
static void xh_sample_seg(struct ct_xseg *s, unsigned int i0,
			  struct conntab_node **skip, struct ct_victim *v)
{
	struct ct_xseg *g = s;
	unsigned int k, i, c, n;

	for (c = 0; c < 3 && !ct_victim_done(v); c++) {
		if (c) {
			if (!s->splitting ||
			    (c == 2 && s->succ[1] == s->succ[0]))
				break;
			g = s->succ[c - 1];
		}
		n = xh_nheads(g);
		for (k = 0; k < n && !ct_victim_done(v); k++) {
			i = (i0 + k) & (n - 1);
			if (g == s && s->splitting && i < s->moved)
				continue;
			ct_victim_spend(v);
			if (&g->head[i] != skip)
				ct_victim_chain(v, &g->head[i], g, &s->lock);
		}
	}
}

/*
 * At the cap, evict a sampled node for @n (key absent, checked under @s,
 * the newcomer's segment, locked; read lock held, I5). The sample starts
 * with the newcomer's own chain @head (counted by @o), then goes through
 * the directory from a random slot, each segment once from a random
 * chain, try-locking live segments but @s (I6: only @s is waited for):
 * not @s first, which a key that keeps coming back would make the only
 * segment its evictions ever sample. Each node is taken with the probability
 * of @s's nodes per chain (evict.h). The victim's reservation passes to
 * @n. False: none; v->busy if another writer step was in the way.
 */
static bool xh_evict(struct ct_exthash *x, struct ct_xseg *s,
		     struct conntab_node **head, struct ct_xseg *o,
		     struct ct_victim *v)
{
	uint64_t r = ct_evict_random();
	struct ct_xdir *d = ct_rcu_deref(x->dir);
	size_t size = (size_t)1 << d->depth, j, k;
	struct ct_xseg *g, *vs;
	unsigned int pass;
	uint32_t *prev;

	ct_victim_thin(v, s->count, xh_nheads(s));
	ct_victim_spend(v);
	ct_victim_own_begin(v, o, &s->lock);
	ct_victim_chain(v, head, o, &s->lock);
	ct_victim_own_end(v);
	for (pass = 0; pass < 2; pass++) {
		/*
		 * Every segment visited and the sample still short (a
		 * small table: its budget unspent, nodes were thinned
		 * out): once more, our chain too, taking every node not
		 * yet ranked (ct_victim_sweep()).
		 */
		if (pass && (ct_victim_done(v) || !ct_victim_sweep(v)))
			break;
		for (k = 0, j = (size_t)(r >> 32) & (size - 1);
		     k < size && !ct_victim_done(v);
		     k++, j = (j + 1) & (size - 1)) {
			g = ct_rcu_deref(d->slot[j]);
			/* Once per segment: at the first slot of its range. */
			if (j != (size_t)g->prefix << (d->depth - g->depth))
				continue;
			if (g != s && !ct_victim_trylock(v, &g->lock, &s->lock))
				continue;
			prev = v->lock;
			/* I3: a dead one's nodes are elsewhere (@s lives). */
			if (!g->dead)
				xh_sample_seg(g, (unsigned int)r,
					      g == s && !pass ? head : NULL, v);
			else
				v->busy = true;	/* its nodes moved under way */
			/* A victim found here drops the one kept elsewhere. */
			ct_victim_settle(v, &g->lock, prev, &s->lock);
		}
	}
	if (!v->node)
		return false;
	vs = v->owner;
	ct_victim_unlink(v);
	xh_count_set(vs, vs->count - 1);
	if (v->node->ct_state == CONNTAB_TIMEWAIT)
		vs->tw--;
	xh_count_add(x, -1);
	ct_victim_unlock(v, &s->lock);
	return true;
}

/*
 * Writer: the end of an insert into the chain of @o (the segment that
 * carries its counts) under @s's lock: apply @d, grow, unlock, help a
 * directory resize along, drop the read lock (I5).
 */
static inline __attribute__((always_inline)) void
xh_insert_end(struct ct_exthash *x, struct ct_xseg *s, struct ct_xseg *o,
	      const struct ct_delta *d)
{
	xh_apply(o, d);
	xh_count_add(x, d->entries);
	xh_grow_locked(x, s, d);
	ct_spin_unlock(&s->lock);
	xh_resize_step(x);
	xh_read_unlock(x);
}

/* Insert, or with @rank insert_evict: the two share everything else. */
static int xh_insert_common(struct conntab *t, struct conntab_node *n,
			    struct conntab_node **recycled, ct_rank_fn rank,
			    void *arg, struct conntab_node **evicted)
{
	struct ct_exthash *x = ct_exthash(t);
	struct conntab_node **head;
	unsigned int tries = 0;
	struct ct_xseg *s, *o;
	struct ct_victim v;
	int err;

	for (;;) {
		struct ct_delta d = { 0 };

		head = xh_write_begin(x, n->ct_hash, &s, &o);
		err = ct_chain_insert_locked(t, head, n, recycled, &d);
		/* -ENOSPC comes after the key check: the key is absent. */
		if (err == -ENOSPC && rank) {
			ct_victim_init(&v, t, rank, arg);
			v.self = n->ct_peer;
			v.tries = tries;
			if (xh_evict(x, s, head, o, &v)) {
				ct_chain_push(head, n);
				d.entries++;
				*evicted = v.node;
				err = 0;
			}
		}
		xh_insert_end(x, s, o, &d);
		/* -ENOSPC after a sample another writer crossed: again. */
		if (err != -ENOSPC || !rank || !ct_evict_again(&v, &tries))
			return err;
	}
}

static int xh_insert(struct conntab *t, struct conntab_node *n,
		     struct conntab_node **recycled)
{
	return xh_insert_common(t, n, recycled, NULL, NULL, NULL);
}

static int xh_insert_evict(struct conntab *t, struct conntab_node *n,
			   ct_rank_fn rank, void *arg,
			   struct conntab_node **evicted)
{
	return xh_insert_common(t, n, NULL, rank, arg, evicted);
}

/*
 * xh_insert_key() into @s (locked, alive) when it is not plain (splitting
 * or rehashed: xh_plain_locked()), out of line, as far as the read lock's
 * release; the insert's error.
 */
static __attribute__((noinline)) int
xh_insert_locked_slow(struct ct_exthash *x, struct ct_xseg *s,
		      struct conntab_node *n)
{
	struct conntab_node **head;
	struct ct_delta d = { 0 };
	struct ct_xseg *o;
	int err;

	head = xh_chain_locked_slow(s, n->ct_hash, &o);
	err = ct_chain_insert_locked(&x->base, head, n, NULL, &d);
	xh_insert_end(x, s, o, &d);
	return err;
}

/*
 * conntab_insert() for a key of hash @h, arguments checked (ops->
 * insert_key): the front end's claim and this backend's insert in one
 * function, as chained_insert_key() is chained's. On a thread the flavor
 * does not count, the front end's path, which counts it for the call
 * (rcu-reg.h). The segment's lock and chain lines are prefetched before
 * the claim's compare-and-swap, from the directory read that the lock
 * then starts at: the read lock, taken before it, keeps the segment's
 * memory (I5), and xh_lock_from() goes on to the live segment if this
 * one died meanwhile (I3). Reading the directory again after the claim
 * cost ~10 instructions an insert.
 */
static inline __attribute__((always_inline)) int
xh_insert_key(struct conntab *t, struct conntab_node *n,
	      const struct conntab_key *key, uint32_t h)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_delta d = { 0 };
	struct ct_xseg *s;
	uintptr_t wl;
	int err;

	wl = ct_writer_lock(t);
	if (__builtin_expect(wl == CT_WL_UNCOUNTED, 0))
		return ct_insert_generic(t, n, key);
	s = xh_seg_rcu(x, h);
	__builtin_prefetch(s, 1);
	__builtin_prefetch(&s->head[xh_idx(h)], 1);
	if (!ct_node_claim_key(n, t, key, h)) {
		ct_writer_unlock(t, wl);
		return -EBUSY;
	}
	s = xh_lock_from(x, h, s);
	if (__builtin_expect(xh_plain_locked(s), 1)) {
		err = ct_chain_insert_locked(t, &s->head[xh_idx(h)], n, NULL,
					     &d);
		/* No TIME_WAIT node recycled (@recycled NULL). */
		xh_count_set(s, s->count + (uint32_t)d.entries);
		xh_count_add(x, d.entries);
		/* Plain: not splitting, and xh_grow_locked() says no more. */
		if (d.entries > 0)
			xh_maybe_split(x, s, d.chain);
		ct_spin_unlock(&s->lock);
		xh_resize_step(x);
		ct_writer_unlock(t, wl);
	} else {
		/* It unlocks with ct_writer_read_unlock(): rcu-reg.h */
		err = xh_insert_locked_slow(x, s, n);
	}
	if (__builtin_expect(err == CT_ECLAIMED, 0))
		err = ct_insert_wait(t, n);
	if (err)
		ct_node_release(n);
	return err;
}

static int xh_insert_siphash(struct conntab *t, struct conntab_node *n,
			     const struct conntab_key *key)
{
	return xh_insert_key(t, n, key, ct_hash_sip(&t->secret, key));
}

#ifdef CT_HAVE_AES
static CT_AES_TARGET int xh_insert_aes(struct conntab *t,
				       struct conntab_node *n,
				       const struct conntab_key *key)
{
	return xh_insert_key(t, n, key, ct_hash_aes(&t->aes, key));
}
#endif

/* Batch steps (lib/hashtab/batch.h); the directory is small and mostly cached. */
static inline void xh_prefetch_head(struct conntab *t, uint32_t h)
{
	__builtin_prefetch(&xh_seg_rcu(ct_exthash(t), h)->head[xh_idx(h)]);
}

static inline struct conntab_node *xh_prefetch_first(struct conntab *t,
						      uint32_t h)
{
	struct ct_xseg *s = xh_seg_rcu(ct_exthash(t), h);
	struct conntab_node *first = ct_rcu_deref(s->head[xh_idx(h)]);

	__builtin_prefetch(ct_is_nulls(first) ? (void *)s : first);
	return first;
}

static inline struct conntab_node *xh_find_hashed(struct conntab *t,
						  uint32_t h,
						  const struct conntab_key *k)
{
	struct ct_exthash *x = ct_exthash(t);

	return xh_find(x, xh_seg_rcu(x, h), h, k);
}

CT_READ_OPS_DEFINE(xh, xh_find_hashed, xh_prefetch_head, xh_prefetch_first)

/*
 * xh_remove_inline() from @s (locked, alive) when it is not plain
 * (splitting or rehashed: xh_plain_locked()), out of line, as far as
 * @s's unlock; the remove's error.
 */
static __attribute__((noinline)) int
xh_remove_locked_slow(struct ct_exthash *x, struct ct_xseg *s,
		      struct conntab_node *n, bool claimed)
{
	struct ct_delta d = { 0 };
	struct conntab_node **head;
	struct ct_xseg *o;
	int err;

	head = xh_chain_locked_slow(s, n->ct_hash, &o);
	err = ct_chain_remove_locked(&x->base, head, n, &d, claimed);
	xh_apply(o, &d);
	xh_count_add(x, d.entries);
	if (s->splitting) {
		/* A split in progress is finished before any merge. */
		xh_split_step(x, s);
		ct_spin_unlock(&s->lock);
	} else if (!err) {
		xh_unlock_shrink(x, s);
	} else {
		ct_spin_unlock(&s->lock);
	}
	return err;
}

/*
 * Remove @n under the read lock that @wl stands for (ct_writer_lock():
 * taken by the caller, dropped here, the caller's token handed over).
 */
static inline __attribute__((always_inline)) int
xh_remove_inline(struct conntab *t, struct conntab_node *n, bool claimed,
		 uintptr_t wl)
{
	struct ct_exthash *x = ct_exthash(t);
	const uint32_t h = n->ct_hash;
	struct ct_delta d = { 0 };
	struct ct_xseg *s;
	int err;

	s = xh_lock(x, h);
	if (__builtin_expect(xh_plain_locked(s), 1)) {
		err = ct_chain_remove_locked(t, &s->head[xh_idx(h)], n, &d,
					     claimed);
		/*
		 * xh_apply(), with a branch for the rare TIME_WAIT node: as
		 * two adds, the compiler paired them in vector registers,
		 * 8 instructions.
		 */
		xh_count_set(s, s->count + (uint32_t)d.entries);
		if (__builtin_expect(d.timewait != 0, 0))
			s->tw += (uint32_t)d.timewait;
		xh_count_add(x, d.entries);
		/*
		 * Plain (XH_HEADS heads) and not splitting: of
		 * xh_unlock_shrink()'s tests, what is left to ask, and
		 * the buddy's count before any call (xh_merge_hint).
		 */
		if (__builtin_expect(err || s->count > XH_MERGE || !s->depth,
				     1) || !xh_merge_hint(x, s))
			ct_spin_unlock(&s->lock);
		else
			xh_unlock_shrink_slow(x, s);
	} else {
		err = xh_remove_locked_slow(x, s, n, claimed);
	}
	xh_resize_step(x);
	ct_writer_unlock(t, wl);
	return err;
}

static int xh_remove(struct conntab *t, struct conntab_node *n, bool claimed)
{
	return xh_remove_inline(t, n, claimed, ct_writer_lock_counted(t));
}

/*
 * conntab_remove() of a single node that @t owns (ops->remove_single):
 * the backend's remove called directly, retried while another writer
 * step holds the node (P2); on a thread the flavor does not count, the
 * front end's path, which counts it for the call (rcu-reg.h).
 */
static int xh_remove_single(struct conntab *t, struct conntab_node *n)
{
	uintptr_t wl = ct_writer_lock(t);
	int err;

	if (__builtin_expect(wl == CT_WL_UNCOUNTED, 0))
		return ct_remove_uncounted(t, n);
	err = xh_remove_inline(t, n, false, wl);
	return err == CT_ECLAIMED ? ct_remove_wait(t, n) : err;
}

static int xh_timewait(struct conntab *t, struct conntab_node *est,
		       struct conntab_node *tw)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_delta d = { 0 };
	struct conntab_node **head;
	struct ct_xseg *s, *o;
	int err;

	head = xh_write_begin(x, est->ct_hash, &s, &o);
	err = ct_chain_timewait_locked(t, head, est, tw, &d);
	xh_apply(o, &d);
	ct_spin_unlock(&s->lock);
	xh_read_unlock(x);
	return err;
}

/*
 * Walker: offer to @sel every node present throughout with its hash in
 * [@r, *@hi) (with strays, which the caller drops). Same path as a lookup
 * of hash @r (xh_find): the segment, then its successors for @r, every
 * chain of each. By the lookup argument (I2) the union of the passes holds
 * every such node of a key whose lookup takes this same path: the keys in
 * the range of EVERY segment on it, so *@hi is the least range end on the
 * path (a merged segment's range also covers its dying buddy, whose nodes
 * may not all be in it yet). A node seen in a dying segment and again in
 * its successor is kept once by the selection.
 */
static void xh_snapshot(struct ct_exthash *x, uint32_t r,
			struct ct_walk_sel *sel, uint64_t *hi)
{
	struct ct_xseg *s = xh_seg_rcu(x, r), *next;
	bool foreign;
	unsigned int i;

	sel->len = 0;
	*hi = xh_end(s);
	for (;;) {
		foreign = false;
		/* The cursor (at or past r) keeps out what lies below r. */
		for (i = 0; i < xh_nheads(s); i++)
			foreign |= !ct_walk_sel_chain(sel, &s->head[i],
						      xh_marker_id(s, i));
		ct_delay(CT_DP_XH_READ_SNAP);
		ct_rcu_deref_fence();	/* as xh_find */
		next = ct_rcu_deref(s->succ[xh_bit(r, s->depth)]);
		if (next) {
			s = next;
			if (xh_end(s) < *hi)
				*hi = xh_end(s);
			continue;
		}
		if (!foreign)
			break;
		/* Unreachable (I2); start over from the directory. */
		s = xh_seg_rcu(x, r);
		*hi = xh_end(s);
		sel->len = 0;
	}
	/* Nodes at or above the range end belong to a later step. */
	while (sel->len && sel->v[sel->len - 1]->ct_hash >= *hi)
		sel->len--;
}

/*
 * Exactly once, and without allocating (walk.h): a walk or scan visits
 * the nodes in increasing (hash, address) order, a cursor marking the
 * last one visited. Each step snapshots the segments covering the hash r
 * (as above) and selects the smallest nodes above the cursor with hash in
 * [r, hi); fn runs on them with no lock held and on no live chain, so it
 * may remove or time-wait its node. A step that selected fewer than it
 * could saw the whole range: the cursor moves on to (hi, 0). A node
 * present throughout is above the cursor until the one step that selects
 * it, whatever splits, merges and directory resizes happen, within a call
 * or between the calls of a scan (the order depends on no segment), so it
 * is visited exactly once; any other node at most once.
 *
 * The position between scan calls (walk.h's layout): pos[0] the range
 * start r (2^32 at the end), pos[1] the cursor's hash with
 * CT_WALK_POS_CUR set if there is one, pos[2] its address. Returns how
 * the call ended, as ct_walk_buckets().
 */
static enum ct_scan_end xh_walk_from(struct ct_exthash *x, uint64_t *pos,
				     int state, size_t budget, ct_walk_fn fn,
				     void *arg, int *fnret)
{
	struct ct_walk_budget bu;
	struct ct_walk_sel sel;
	uint64_t r, hi;
	bool more;
	size_t b;

	if (!ct_walk_pos_load(pos, (size_t)1 << 32, &b, &sel))
		return CT_SCAN_BADPOS;
	ct_walk_budget_init(&bu, budget);
	for (r = b; r <= UINT32_MAX;) {
		if (!ct_walk_step(&bu, &sel)) {
			ct_walk_pos_save(pos, r, &sel);
			return CT_SCAN_BUDGET;
		}
		xh_snapshot(x, (uint32_t)r, &sel, &hi);
		if (ct_walk_visit(&bu, &sel, state, fn, arg, &more, fnret)) {
			/*
			 * Resume at the cursor's hash, as below, not at r: a
			 * split between the calls can end the range of r
			 * before the cursor, and a step from r would then
			 * select nothing and move the cursor back to that
			 * end, visiting again what lies between.
			 */
			ct_walk_pos_save(pos, sel.cur_hash, &sel);
			return CT_SCAN_STOPPED;
		}
		if (more) {
			r = sel.cur_hash;	/* more in this range */
			continue;
		}
		r = hi;
		sel.have_cur = true;	/* cursor (hi, 0): the next range */
		sel.cur_hash = (uint32_t)hi;
		sel.cur_addr = 0;
	}
	ct_walk_sel_init(&sel);
	ct_walk_pos_save(pos, r, &sel);
	return CT_SCAN_PASS;
}

static int xh_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	uint64_t pos[CT_SCAN_POS_WORDS] = { 0 };
	enum ct_scan_end end;
	int fnret = 0;

	end = xh_walk_from(ct_exthash(t), pos, state, SIZE_MAX, fn, arg,
			   &fnret);
	return ct_walk_result(end, fnret);
}

static enum ct_scan_end xh_scan(struct conntab *t, uint64_t *pos, bool fresh,
				size_t budget, ct_walk_fn fn, void *arg,
				int *fnret)
{
	return xh_walk_from(ct_exthash(t), pos, CT_WALK_ALL, budget, fn, arg,
			    fnret);
}

/* Longest chain among chains [@lo, @hi) of @s. */
static size_t xh_max_chain(struct ct_xseg *s, unsigned int lo,
			   unsigned int hi)
{
	size_t len, max = 0;
	unsigned int i;

	for (i = lo; i < hi; i++) {
		len = ct_chain_len(&s->head[i]);
		if (len > max)
			max = len;
	}
	return max;
}

/*
 * Longest walk of a lookup that stops in @s (locked): its longest chain,
 * and while it splits or rehashes, that chain followed by the chains of
 * a successor its hashes can be in. With the same multiplier (a split,
 * a widening or narrowing) chain i of @s leads to chains i << (s' - s)
 * and on, or i >> (s - s'), of a successor of s' shift bits; with another
 * (a rehash for a long chain), to any chain (an upper bound). A rehashed
 * segment's lookup also walks chain h & 63 first (xh_find); that walk is
 * not counted.
 */
static size_t xh_seg_walked(struct ct_xseg *s)
{
	size_t len, c, c0, max = 0;
	unsigned int i, k, lo, hi;
	struct ct_xseg *n;

	if (!s->splitting)
		return xh_max_chain(s, 0, xh_nheads(s));
	for (i = 0; i < xh_nheads(s); i++) {
		c0 = 0;
		for (k = 0; k < 2; k++) {
			n = s->succ[k];
			if (n->mult != s->mult) {
				lo = 0;
				hi = xh_nheads(n);
			} else if (n->shift >= s->shift) {
				lo = i << (n->shift - s->shift);
				hi = (i + 1) << (n->shift - s->shift);
			} else {
				lo = i >> (s->shift - n->shift);
				hi = lo + 1;
			}
			c = xh_max_chain(n, lo, hi);
			if (c > c0)
				c0 = c;
		}
		len = ct_chain_len(&s->head[i]) + c0;
		if (len > max)
			max = len;
	}
	return max;
}

static void xh_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_exthash *x = ct_exthash(t);
	size_t dirbytes, len, heads = 0, segbytes = 0;
	struct ct_xseg *s, *c;
	uint64_t r = 0;
	unsigned int k;

	xh_read_lock(x);	/* I5: segments stay valid while we visit them */
	while (r <= UINT32_MAX) {
		s = xh_lock(x, (uint32_t)r);
		for (k = 0; k < 3; k++) {
			/* s, then the successors of a split or rehash */
			c = k ? s->succ[k - 1] : s;
			if (k && (!s->splitting ||
				  (k == 2 && s->succ[1] == s->succ[0])))
				continue;
			st->entries += c->count;
			st->timewait += c->tw;
			heads += xh_nheads(c);
			segbytes += xh_seg_bytes(c->shift);
		}
		len = xh_seg_walked(s);
		if (len > st->max_depth)
			st->max_depth = len;
		r = xh_end(s);
		ct_spin_unlock(&s->lock);
	}
	ct_spin_lock(&x->dir_lock);
	dirbytes = xh_dir_bytes(x->dir->depth);
	if (x->pending)
		dirbytes += xh_dir_bytes(x->pending->depth);
	/* Retired segments are still ours until their batch is freed. */
	dirbytes += x->retired_bytes;
	st->resizes = x->splits + x->merges;
	ct_spin_unlock(&x->dir_lock);
	xh_read_unlock(x);
	st->buckets = heads;
	st->memory = sizeof(*x) + segbytes + dirbytes;
}

/*
 * Counters kept under dir_lock. No read lock: x->dir is only read for its
 * depth under dir_lock, which a directory swap also holds, so it is alive.
 */
static void xh_resize_stats(struct conntab *t, struct conntab_resize_stats *rs)
{
	struct ct_exthash *x = ct_exthash(t);

	ct_spin_lock(&x->dir_lock);
	rs->splits = x->splits;
	rs->merges = x->merges;
	rs->dir_slots = (size_t)1 << x->dir->depth;
	rs->dir_resizes = x->dir_resizes;
	rs->in_progress = x->splitting;
	ct_spin_unlock(&x->dir_lock);
}

const struct conntab_ops ct_exthash_ops = {
	.registered_writers = true,	/* I5: call_rcu, read lock */
	.create		= xh_create,
	.destroy	= xh_destroy,
	.insert		= xh_insert,
	.insert_evict	= xh_insert_evict,
	.read		= CT_READ_OPS(xh),
	.lookup_hashed	= xh_find_hashed,
	.prefetch_hashed = xh_prefetch_head,
	.insert_key	= {
		[CONNTAB_HASH_SIPHASH] = xh_insert_siphash,
#ifdef CT_HAVE_AES
		[CONNTAB_HASH_AES] = xh_insert_aes,
#endif
	},
	.remove		= xh_remove,
	.remove_single	= xh_remove_single,
	.timewait	= xh_timewait,
	.walk		= xh_walk,
	.scan		= xh_scan,
	.stats		= xh_stats,
	.resize_stats	= xh_resize_stats,
};
