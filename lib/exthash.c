/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH: extendible hashing that grows and shrinks online.
 *
 * A directory of 2^d pointers indexed by the TOP d bits of the 32-bit hash
 * points to buckets; a bucket of local depth l <= d holds every node whose
 * hash starts with its l-bit prefix and fills the 2^(d-l) consecutive slots
 * of that prefix. A bucket is 64 bytes: an RCU chain of nodes (lib/
 * chain.h) ending in a marker made from the bucket's address, its lock, its
 * depth and counts, and two successor pointers.
 *
 * Growth splits one overfull bucket at a time (O(bucket) work in the insert
 * that overfills it); shrinking merges two light buddies into one bucket
 * in the remove that empties them. Directory doubling and halving copy the
 * pointers into a new directory a chunk at a time, piggybacked on later
 * writer calls, and publish it when complete, so no single call pays for
 * the whole table. doc/exthash.md gives the design and the proofs; the
 * invariants the code relies on are (I1..I6, stated again where used):
 *
 *  I1 A bucket's successors (succ[], the children of a split or the bucket
 *     of a merge) are initialised and set with release stores before the
 *     first node leaves it, and never change afterwards.
 *  I2 Nodes leave a dying bucket tail first, and each is linked at the head
 *     of its successor before it is cut off the dying chain; every store
 *     into a chain link of this backend is a release store. So a reader
 *     that walks a bucket and then (after an acquire fence) every successor
 *     it finds has passed every node present throughout its lookup.
 *  I3 A bucket dies (dead = 1, under its lock) only after the directory
 *     (and the part of a pending directory already filled) points past it;
 *     a writer that locks a dead bucket reloads the directory.
 *  I4 All directory slot stores happen under dir_lock; a pending directory
 *     is published only when complete, and every publish made while it was
 *     being filled also went into its filled part.
 *  I5 Buckets and directories are freed through call_rcu once unreachable
 *     from the current directory; readers AND writers hold the flavor's
 *     read lock while they touch them.
 *  I6 Lock order: bucket lock, then dir_lock. A second bucket lock (merge
 *     buddy) is only ever try-locked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "chain.h"
#include "chain-ops.h"
#include "conntab-int.h"
#include "heads.h"
#include "walk.h"

/*
 * Split a bucket when an insert makes it hold more than this. Small: every
 * node a lookup passes is a cache miss, and a bucket already costs one more
 * than the chained backend's slot, so buckets average ~1.4 nodes (the
 * chained backend ~1 at its sizing hint). Measured in doc/exthash.md.
 */
#define XH_SPLIT	2
/*
 * Merge two buddies when together they hold at most this: a split leaves
 * 3 nodes, so a bucket at the boundary needs 2 removes to merge and 2
 * inserts to split again (each O(1) work; the costly directory resizes
 * have their own, wider hysteresis below).
 */
#define XH_MERGE	1
/* Deepest directory: 2^27 slots = 1 GiB of pointers (~2^28 nodes). */
#define XH_MAX_DEPTH	27
/* Nodes per bucket a table is created with for its sizing hint. */
#define XH_TARGET	2
/* Directory slots copied per writer call while a resize is pending. */
#define XH_COPY_STEP	1024
/*
 * The directory doubles only while it has at most 2 slots per bucket, and
 * halves once no bucket uses its full depth and it has more than 8 slots
 * per bucket: a table at a boundary does not resize back and forth, and
 * the directory stays O(buckets) whatever the local depths.
 */
#define XH_GROW_SHIFT	1
#define XH_HALVE_SHIFT	3
/* Directories from this size on are mapped, not malloced. */
#define XH_DIR_MMAP	(256 * 1024)

struct ct_xb {
	struct conntab_node *head;	/* RCU chain, ends in xh_marker(b) */
	uint32_t lock;
	uint8_t depth;			/* local depth l, fixed */
	uint8_t dead;			/* under lock: nodes moved to succ[] */
	uint16_t pad;
	uint32_t prefix;		/* top l bits of its hashes, fixed */
	uint32_t count;			/* nodes (under lock) */
	uint32_t tw;			/* of which TIME_WAIT (under lock) */
	uint32_t pad2;
	struct ct_xb *succ[2];		/* RCU, I1: by hash bit l */
	struct rcu_head rcu;
};

struct ct_xdir {
	struct rcu_head rcu;
	uint32_t depth;			/* fixed */
	struct ct_xb *slot[];		/* RCU, written under dir_lock */
};

struct ct_exthash {
	struct conntab base;
	/* Read by every call; written at the rare directory changes. */
	struct ct_xdir *dir __attribute__((aligned(CT_CACHELINE)));
	struct ct_xdir *pending;	/* dir being filled (dir_lock; hint) */

	/* Taken by splits, merges and resize steps. */
	uint32_t dir_lock __attribute__((aligned(CT_CACHELINE)));
	size_t fill;			/* slots of pending filled */
	size_t nb;			/* live buckets */
	size_t nd[XH_MAX_DEPTH + 1];	/* live buckets per local depth */
	size_t splits, merges, dir_resizes;
};

_Static_assert(sizeof(struct ct_xb) == CT_CACHELINE, "bucket is 64 bytes");

static inline struct ct_exthash *ct_exthash(struct conntab *t)
{
	return (struct ct_exthash *)t;
}

/* Directory slot of hash @h at depth @depth (0..32). */
static inline size_t xh_slot(unsigned int depth, uint32_t h)
{
	return (size_t)((uint64_t)h >> (32 - depth));
}

/* The bit a bucket of depth @depth splits on: successor index of @h. */
static inline unsigned int xh_bit(uint32_t h, unsigned int depth)
{
	return (h >> (31 - depth)) & 1;
}

/*
 * The end marker of @b's chain. Unique among buckets a reader can reach:
 * an address is reused only after the bucket's grace period (I5), and a
 * reader that can see the old bucket holds up that grace period.
 */
static inline struct conntab_node *xh_marker(const struct ct_xb *b)
{
	return ct_nulls((uintptr_t)b / 16);	/* malloc aligns to 16 */
}

/* First hash past @b's range (2^32 for the last bucket). */
static inline uint64_t xh_end(const struct ct_xb *b)
{
	return ((uint64_t)b->prefix + 1) << (32 - b->depth);
}

static inline void xh_read_lock(struct ct_exthash *x)
{
	x->base.flavor->read_lock();
}

static inline void xh_read_unlock(struct ct_exthash *x)
{
	x->base.flavor->read_unlock();
}

/*
 * Buckets come from a plain malloc of their 64 bytes, not aligned_alloc:
 * glibc's memalign takes a larger chunk than it returns, so freed buckets
 * were of a size no later memalign reused; they piled up in the fast bins
 * until a heap extension consolidated them all in one insert (hundreds of
 * microseconds). Same-size mallocs reuse them at once, and pack them at 80
 * bytes each. malloc aligns to 16, so what a hit reads (head, depth: the
 * first 14 bytes) never straddles a line; succ[] may, read on misses only.
 */
static struct ct_xb *xh_bucket_new(unsigned int depth, uint32_t prefix)
{
	struct ct_xb *b = malloc(sizeof(*b));

	if (!b)
		return NULL;
	memset(b, 0, sizeof(*b));
	b->depth = (uint8_t)depth;
	b->prefix = prefix;
	b->head = xh_marker(b);
	return b;
}

static void xh_bucket_free(struct ct_xb *b)
{
	free(b);
}

static void xh_bucket_free_rcu(struct rcu_head *head)
{
	xh_bucket_free(conntab_entry(head, struct ct_xb, rcu));
}

static size_t xh_dir_bytes(unsigned int depth)
{
	size_t sz = sizeof(struct ct_xdir) +
		    ((size_t)1 << depth) * sizeof(struct ct_xb *);

	return (sz + CT_CACHELINE - 1) & ~(size_t)(CT_CACHELINE - 1);
}

/*
 * Large directories come straight from mmap: a large malloc from the heap
 * first consolidates every small chunk freed since the last one (the dead
 * buckets), hundreds of microseconds in the insert that starts a resize.
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

/* Reader: the bucket the current directory gives for @h. */
static inline struct ct_xb *xh_bucket_rcu(struct ct_exthash *x, uint32_t h)
{
	/* Pairs with the release publishing the directory and each slot. */
	struct ct_xdir *d = ct_rcu_deref(x->dir);

	return ct_rcu_deref(d->slot[xh_slot(d->depth, h)]);
}

/*
 * Reader: find @k (hash @h) starting at bucket @b. Walks @b, then the
 * successor for @h if @b is splitting or merging, and so on (I1, I2): a
 * node moved out of a chain behind the walk was linked into the successor
 * first, and the successor was set before that. Never waits for a writer.
 */
static struct conntab_node *xh_find(struct ct_exthash *x, struct ct_xb *b,
				    uint32_t h, const struct conntab_key *k)
{
	struct conntab_node *n, *end;
	struct ct_xb *next;

	for (;;) {
		n = ct_chain_scan(&b->head, h, k, &end);
		if (n)
			return n;
		/*
		 * Pairs with the release stores of xh_move_all(): if the pass
		 * missed a node because it moved, succ[] (set before) shows.
		 */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		next = ct_rcu_deref(b->succ[xh_bit(h, b->depth)]);
		if (next) {
			b = next;
			continue;
		}
		if (__builtin_expect(end == xh_marker(b), 1))
			return NULL;
		/* A foreign end implies a move, hence succ (I2); be safe. */
		b = xh_bucket_rcu(x, h);
	}
}

/*
 * Writer: lock and return the live bucket of @h. Caller holds the read
 * lock (I5), so a bucket found dead is still memory we may touch.
 */
static struct ct_xb *xh_lock(struct ct_exthash *x, uint32_t h)
{
	struct ct_xb *b;

	for (;;) {
		b = xh_bucket_rcu(x, h);
		ct_spin_lock(&b->lock);
		/* I3: the directory already points past a dead bucket. */
		if (!b->dead)
			return b;
		ct_spin_unlock(&b->lock);
	}
}

/*
 * Writer, dir_lock held (I4): point every slot of @b's range at @b, in the
 * current directory and in the filled part of a pending one.
 */
static void xh_publish(struct ct_exthash *x, struct ct_xb *b)
{
	struct ct_xdir *d = x->dir, *p = x->pending;
	size_t i, lo, hi;

	lo = (size_t)b->prefix << (d->depth - b->depth);
	hi = (size_t)(b->prefix + 1) << (d->depth - b->depth);
	for (i = lo; i < hi; i++)
		ct_rcu_assign(d->slot[i], b);	/* pairs with xh_bucket_rcu */
	if (!p)
		return;
	/* p is deeper or at least as deep as b (xh_reserve_split). */
	lo = (size_t)b->prefix << (p->depth - b->depth);
	hi = (size_t)(b->prefix + 1) << (p->depth - b->depth);
	if (hi > x->fill)
		hi = x->fill;
	for (i = lo; i < hi; i++)
		p->slot[i] = b;		/* p is unpublished: private */
}

/*
 * Writer: move every node of @from (locked, dying, succ[] set: I1) to its
 * successor, tail first (I2). While a node is linked in both chains, a
 * reader on @from passes into the successor's chain and then walks the
 * successor itself: it never waits and never misses a node.
 */
static void xh_move_all(struct ct_xb *from)
{
	struct conntab_node *const end = xh_marker(from);
	struct conntab_node **pp, *n;
	struct ct_xb *to;

	while (!ct_is_nulls(from->head)) {
		for (pp = &from->head; !ct_is_nulls((*pp)->ct_next);
		     pp = &(*pp)->ct_next)
			;
		n = *pp;
		to = from->succ[xh_bit(n->ct_hash, from->depth)];
		/* n is visible: its new link must be a release (I2). */
		ct_rcu_assign(n->ct_next, to->head);
		ct_rcu_assign(to->head, n);
		/* Only now cut n off; from's chain ends on its marker again. */
		ct_rcu_assign(*pp, end);
		to->count++;
		to->tw += n->ct_state == CONNTAB_TIMEWAIT;
	}
	from->count = 0;
	from->tw = 0;
}

static void xh_set_pending(struct ct_exthash *x, struct ct_xdir *p)
{
	/* Read as a hint without the lock by xh_resize_step(). */
	__atomic_store_n(&x->pending, p, __ATOMIC_RELAXED);
	x->fill = 0;
}

/* dir_lock held: may the directory double now? */
static bool xh_grow_ok(const struct ct_exthash *x)
{
	unsigned int d = x->dir->depth;

	return !x->pending && d < XH_MAX_DEPTH && (x->nb << XH_GROW_SHIFT) >=
						  ((size_t)1 << d);
}

/* dir_lock held: may the directory halve now? */
static bool xh_shrink_ok(const struct ct_exthash *x)
{
	unsigned int d = x->dir->depth;

	return !x->pending && d > 0 && !x->nd[d] &&
	       (x->nb << XH_HALVE_SHIFT) < ((size_t)1 << d);
}

/*
 * Writer, no bucket lock needed: start filling a directory of @depth (one
 * more or one less than the current), if still wanted. The copy itself is
 * spread over later calls (xh_resize_step).
 */
static void xh_start_resize(struct ct_exthash *x, unsigned int depth)
{
	struct ct_xdir *p = xh_dir_new(depth);	/* outside the spinlock */

	if (!p)
		return;	/* ENOMEM: keep the directory; chains get longer */
	ct_spin_lock(&x->dir_lock);
	if (depth == x->dir->depth + 1 ? xh_grow_ok(x) :
	    depth + 1 == x->dir->depth && xh_shrink_ok(x)) {
		xh_set_pending(x, p);
		p = NULL;
	}
	ct_spin_unlock(&x->dir_lock);
	xh_dir_free(p);
}

/*
 * Writer (read lock held, no bucket lock): copy the next chunk of a
 * pending directory and publish it once complete (I4). Copying pointers
 * only: doubling maps slot i to old slot i/2, halving to old slot 2i
 * (valid because no bucket uses the old full depth: xh_reserve_split
 * cancels a halving that a split would invalidate).
 */
static void xh_resize_step(struct ct_exthash *x)
{
	struct ct_xdir *d, *p;
	size_t i, end, size;

	if (!__atomic_load_n(&x->pending, __ATOMIC_RELAXED) ||
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
			/* Slots written before: pairs with xh_bucket_rcu. */
			ct_rcu_assign(x->dir, p);
			xh_set_pending(x, NULL);
			x->dir_resizes++;
			x->base.flavor->update_call_rcu(&d->rcu,
							xh_dir_free_rcu);
		}
	}
	ct_spin_unlock(&x->dir_lock);
}

/*
 * dir_lock held: account a split of a bucket of depth @l if the directory
 * is deep enough. Counting the two children now keeps a halving from
 * making the directory shallower than they are before they are published.
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
	return true;
}

/*
 * Writer: @b is locked and alive and an insert just went into it. Split it
 * if it is overfull. Whatever fails (no memory, directory too shallow), the
 * insert stands and @b merely stays overfull.
 */
static void xh_maybe_split(struct ct_exthash *x, struct ct_xb *b)
{
	unsigned int l = b->depth;
	struct ct_xb *b0, *b1;
	bool ok, grow;

	if (b->count <= XH_SPLIT || l >= XH_MAX_DEPTH)
		return;
	if (l >= ct_rcu_deref(x->dir)->depth) {
		/* Needs a deeper directory: start one, split later. */
		if (__atomic_load_n(&x->pending, __ATOMIC_RELAXED))
			return;
		ct_spin_lock(&x->dir_lock);
		grow = l == x->dir->depth && xh_grow_ok(x);
		ct_spin_unlock(&x->dir_lock);
		if (grow)
			xh_start_resize(x, l + 1);
		return;
	}
	b0 = xh_bucket_new(l + 1, b->prefix << 1);
	b1 = xh_bucket_new(l + 1, b->prefix << 1 | 1);
	if (!b0 || !b1)
		goto out_free;
	ct_spin_lock(&x->dir_lock);	/* I6: after the bucket lock */
	ok = xh_reserve_split(x, l);
	ct_spin_unlock(&x->dir_lock);
	if (!ok)
		goto out_free;
	/* I1: initialised children, set before the first node moves. */
	ct_rcu_assign(b->succ[0], b0);
	ct_rcu_assign(b->succ[1], b1);
	xh_move_all(b);
	/*
	 * Nobody else can reach b0/b1 for writing before this publish: writers
	 * come through the directory, or through b's lock, which we hold.
	 */
	ct_spin_lock(&x->dir_lock);
	xh_publish(x, b0);
	xh_publish(x, b1);
	x->splits++;
	ct_spin_unlock(&x->dir_lock);
	b->dead = 1;	/* I3 */
	/* We hold the read lock: b stays valid until we unlock it. */
	x->base.flavor->update_call_rcu(&b->rcu, xh_bucket_free_rcu);
	return;
out_free:
	xh_bucket_free(b0);
	xh_bucket_free(b1);
}

/*
 * Writer: @b is locked and alive and a remove just went out of it. Merge
 * it with its buddy if both are light. Returns the merged bucket, locked,
 * with @b unlocked (the caller may try again one level up), or NULL with
 * @b still locked. *@halve is set when the directory may now halve.
 */
static struct ct_xb *xh_merge_once(struct ct_exthash *x, struct ct_xb *b,
				   bool *halve)
{
	unsigned int l = b->depth;
	struct ct_xdir *d;
	struct ct_xb *o, *m;

	if (!l || b->count > XH_MERGE)
		return NULL;
	d = ct_rcu_deref(x->dir);
	if (l > d->depth)
		return NULL;
	o = ct_rcu_deref(d->slot[(size_t)(b->prefix ^ 1) << (d->depth - l)]);
	/* I6: the buddy is only try-locked, so any order is deadlock-free. */
	if (o == b || !ct_spin_trylock(&o->lock))
		return NULL;
	if (o->dead || o->depth != l || o->prefix != (b->prefix ^ 1) ||
	    b->count + o->count > XH_MERGE)
		goto out_unlock;
	m = xh_bucket_new(l - 1, b->prefix >> 1);
	if (!m)
		goto out_unlock;
	/* Unreachable for writers until published; locked for our caller. */
	ct_spin_lock(&m->lock);
	/* I1: both halves lead to m before any node moves. */
	ct_rcu_assign(b->succ[0], m);
	ct_rcu_assign(b->succ[1], m);
	ct_rcu_assign(o->succ[0], m);
	ct_rcu_assign(o->succ[1], m);
	xh_move_all(b);
	xh_move_all(o);
	ct_spin_lock(&x->dir_lock);
	xh_publish(x, m);
	x->nd[l] -= 2;
	x->nd[l - 1]++;
	x->nb--;
	x->merges++;
	*halve = *halve || xh_shrink_ok(x);
	ct_spin_unlock(&x->dir_lock);
	b->dead = 1;	/* I3 */
	o->dead = 1;
	ct_spin_unlock(&o->lock);
	ct_spin_unlock(&b->lock);
	/* Still under our read lock: b and o stay valid until we leave it. */
	x->base.flavor->update_call_rcu(&b->rcu, xh_bucket_free_rcu);
	x->base.flavor->update_call_rcu(&o->rcu, xh_bucket_free_rcu);
	return m;
out_unlock:
	ct_spin_unlock(&o->lock);
	return NULL;
}

/* Writer: unlock @b after a remove, merging upwards while it is light. */
static void xh_unlock_shrink(struct ct_exthash *x, struct ct_xb *b)
{
	bool halve = false;
	struct ct_xb *m;
	unsigned int d;

	while ((m = xh_merge_once(x, b, &halve)))
		b = m;
	ct_spin_unlock(&b->lock);
	if (halve) {
		d = ct_rcu_deref(x->dir)->depth;
		if (d)
			xh_start_resize(x, d - 1);
	}
}

static struct conntab *xh_create(const struct conntab *tmpl,
				 const struct conntab_config *cfg)
{
	unsigned int depth = 0;
	struct ct_exthash *x;
	size_t i, nb;

	/* Start at ~XH_TARGET nodes per bucket for the hint; 1 bucket for 0. */
	while (depth < XH_MAX_DEPTH - 4 &&
	       ((size_t)XH_TARGET << depth) < cfg->expected)
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
		x->dir->slot[i] = xh_bucket_new(depth, (uint32_t)i);
		if (!x->dir->slot[i])
			goto nomem;
	}
	x->nb = nb;
	x->nd[depth] = nb;
	return &x->base;
nomem:
	if (x && x->dir) {
		while (i--)
			xh_bucket_free(x->dir->slot[i]);
		xh_dir_free(x->dir);
	}
	free(x);
	errno = ENOMEM;
	return NULL;
}

/* No users left: the current directory points at live buckets only (I3). */
static void xh_destroy(struct conntab *t,
		       void (*release)(struct conntab_node *))
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_xdir *d = x->dir;
	struct ct_xb *b;
	size_t i = 0, size = (size_t)1 << d->depth;

	while (i < size) {
		b = d->slot[i];
		i = (size_t)(b->prefix + 1) << (d->depth - b->depth);
		ct_heads_release(&b->head, 1, release);
		xh_bucket_free(b);
	}
	xh_dir_free(x->pending);
	xh_dir_free(d);
	free(x);
}

/* Apply a chain operation's counts to its bucket (bucket locked). */
static void xh_apply(struct ct_xb *b, const struct ct_delta *d)
{
	b->count += (uint32_t)d->entries;
	b->tw += (uint32_t)d->timewait;
}

static int xh_insert(struct conntab *t, struct conntab_node *n,
		     struct conntab_node **recycled)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_delta d = { 0 };
	struct ct_xb *b;
	int err;

	xh_read_lock(x);	/* I5 */
	b = xh_lock(x, n->ct_hash);
	err = ct_chain_insert_locked(t, &b->head, n, recycled, &d);
	xh_apply(b, &d);
	if (d.entries)
		xh_maybe_split(x, b);
	ct_spin_unlock(&b->lock);
	xh_resize_step(x);
	xh_read_unlock(x);
	return err;
}

static struct conntab_node *xh_lookup(struct conntab *t,
				      const struct conntab_key *k)
{
	struct ct_exthash *x = ct_exthash(t);
	uint32_t h = ct_hash_key(&t->secret, k);

	return xh_find(x, xh_bucket_rcu(x, h), h, k);
}

/*
 * Batches overlap the misses of a group in four passes: directory slot,
 * bucket line, first node, then the walks, which mostly hit.
 */
#define XH_BATCH	16

static size_t xh_lookup_batch(struct conntab *t, const struct conntab_key *keys,
			      struct conntab_node **out, size_t n)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_xdir *d = ct_rcu_deref(x->dir);
	struct ct_xb *b[XH_BATCH];
	uint32_t h[XH_BATCH];
	size_t base, i, m, found = 0;

	for (base = 0; base < n; base += m) {
		m = n - base < XH_BATCH ? n - base : XH_BATCH;
		for (i = 0; i < m; i++) {
			h[i] = ct_hash_key(&t->secret, &keys[base + i]);
			__builtin_prefetch(&d->slot[xh_slot(d->depth, h[i])]);
		}
		for (i = 0; i < m; i++) {
			b[i] = ct_rcu_deref(d->slot[xh_slot(d->depth, h[i])]);
			__builtin_prefetch(b[i]);
		}
		for (i = 0; i < m; i++) {
			struct conntab_node *first = ct_rcu_deref(b[i]->head);

			if (!ct_is_nulls(first))
				__builtin_prefetch(first);
		}
		for (i = 0; i < m; i++) {
			out[base + i] = xh_find(x, b[i], h[i], &keys[base + i]);
			found += out[base + i] != NULL;
		}
	}
	return found;
}

static int xh_remove(struct conntab *t, struct conntab_node *n)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_delta d = { 0 };
	struct ct_xb *b;
	int err;

	xh_read_lock(x);
	b = xh_lock(x, n->ct_hash);
	err = ct_chain_remove_locked(t, &b->head, n, &d);
	xh_apply(b, &d);
	if (!err)
		xh_unlock_shrink(x, b);
	else
		ct_spin_unlock(&b->lock);
	xh_resize_step(x);
	xh_read_unlock(x);
	return err;
}

static int xh_timewait(struct conntab *t, struct conntab_node *est,
		       struct conntab_node *tw)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_delta d = { 0 };
	struct ct_xb *b;
	int err;

	xh_read_lock(x);
	b = xh_lock(x, est->ct_hash);
	err = ct_chain_timewait_locked(t, &b->head, est, tw, &d);
	xh_apply(b, &d);
	ct_spin_unlock(&b->lock);
	xh_read_unlock(x);
	return err;
}

/*
 * Walker: offer to @sel every node present throughout with its hash in
 * [@r, *@hi) (with strays, which the caller drops). Same path as a lookup
 * of hash @r (xh_find): the bucket, then its successors for @r. By the
 * lookup argument (I2) the union of the passes holds every such node of a
 * key whose lookup takes this same path: the keys in the range of EVERY
 * bucket on it, so *@hi is the least range end on the path (a merged
 * bucket's range also covers its dying buddy, whose nodes may not all be
 * in it yet). A node seen in a dying bucket and again in its successor is
 * kept once by the selection.
 */
static void xh_snapshot(struct ct_exthash *x, uint32_t r,
			struct ct_walk_sel *sel, uint64_t *hi)
{
	struct ct_xb *b = xh_bucket_rcu(x, r), *next;
	struct conntab_node *n;

	sel->len = 0;
	*hi = xh_end(b);
	for (;;) {
		for (n = ct_rcu_deref(b->head); !ct_is_nulls(n);
		     n = ct_rcu_deref(n->ct_next))
			if (n->ct_hash >= r)
				ct_walk_sel_offer(sel, n);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);	/* as xh_find */
		next = ct_rcu_deref(b->succ[xh_bit(r, b->depth)]);
		if (next) {
			b = next;
			if (xh_end(b) < *hi)
				*hi = xh_end(b);
			continue;
		}
		if (n == xh_marker(b))
			break;
		/* Unreachable (I2); start over from the directory. */
		b = xh_bucket_rcu(x, r);
		*hi = xh_end(b);
		sel->len = 0;
	}
	/* Nodes at or above the range end belong to a later step. */
	while (sel->len && sel->v[sel->len - 1]->ct_hash >= *hi)
		sel->len--;
}

/*
 * Exactly once, and without allocating (walk.h): the walk visits the nodes
 * in increasing (hash, address) order, a cursor marking the last one
 * visited. Each step snapshots the buckets covering the cursor's hash r
 * (as above) and selects the CT_WALK_BATCH smallest nodes above the cursor
 * with hash in [r, hi); fn runs on them with no lock held and on no live
 * chain, so it may remove or time-wait its node. A step that selected
 * fewer saw the whole range: the cursor moves on to (hi, 0). A node
 * present throughout is above the cursor until the one step that selects
 * it, whatever splits or merges happen, so it is visited exactly once.
 */
static int xh_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	struct ct_exthash *x = ct_exthash(t);
	struct ct_walk_sel sel;
	struct conntab_node *n;
	uint64_t r = 0, hi;
	size_t i;
	int ret;

	ct_walk_sel_init(&sel);
	while (r <= UINT32_MAX) {
		xh_snapshot(x, (uint32_t)r, &sel, &hi);
		for (i = 0; i < sel.len; i++) {
			n = sel.v[i];
			if (state != CT_WALK_ALL &&
			    conntab_node_state(n) != (enum conntab_state)state)
				continue;
			ret = fn(n, arg);
			if (ret)
				return ret;
		}
		if (ct_walk_sel_advance(&sel)) {
			r = sel.cur_hash;	/* more in this range */
			continue;
		}
		r = hi;
		sel.have_cur = true;	/* cursor (hi, 0): the next range */
		sel.cur_hash = (uint32_t)hi;
		sel.cur_addr = 0;
	}
	return 0;
}

static void xh_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_exthash *x = ct_exthash(t);
	size_t dirbytes;
	struct ct_xb *b;
	uint64_t r = 0;

	xh_read_lock(x);	/* I5: buckets stay valid while we visit them */
	while (r <= UINT32_MAX) {
		b = xh_lock(x, (uint32_t)r);
		st->entries += b->count;
		st->timewait += b->tw;
		if (b->count > st->max_depth)
			st->max_depth = b->count;
		st->buckets++;
		r = xh_end(b);
		ct_spin_unlock(&b->lock);
	}
	ct_spin_lock(&x->dir_lock);
	dirbytes = xh_dir_bytes(x->dir->depth);
	if (x->pending)
		dirbytes += xh_dir_bytes(x->pending->depth);
	st->resizes = x->splits + x->merges;
	ct_spin_unlock(&x->dir_lock);
	xh_read_unlock(x);
	st->memory = sizeof(*x) + st->buckets * sizeof(struct ct_xb) + dirbytes;
}

const struct conntab_ops ct_exthash_ops = {
	.create		= xh_create,
	.destroy	= xh_destroy,
	.insert		= xh_insert,
	.lookup		= xh_lookup,
	.lookup_batch	= xh_lookup_batch,
	.remove		= xh_remove,
	.timewait	= xh_timewait,
	.walk		= xh_walk,
	.stats		= xh_stats,
};
