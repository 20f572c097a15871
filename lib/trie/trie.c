/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: a level-compressed trie over the canonical key string
 * (lib/key.h: zone, proto, family, local address and port, remote address
 * and port, big-endian), after Polyakov's side of the 2007 debate.
 *
 * No hash: a key's path is its own bits, so there is nothing to flood; a
 * walk visits keys in order, and every connection of one local endpoint
 * (or zone) lies in one subtree (conntab_walk_prefix()).
 *
 * Shape. A node branches on a window [pos, pos + w) of the string:
 *  - sparse (K): up to 32 (value, kid) entries, values of up to 16 bits,
 *    unsorted; its window ends on a byte boundary;
 *  - dense (D): 2^w slots indexed by the window's value; "anchored" ones
 *    start on a byte boundary and change width with their load (up to 24
 *    bits: the top of a random table is one wide array), "short" ones end
 *    on a byte boundary and span at most a byte.
 * A kid is 0, a leaf (the user's struct conntab_node, tagged) or a node.
 * Nodes exist only where keys part; bits on which every key below agrees
 * are skipped (path compression) and checked at the leaf by readers, at
 * the node's prefix by writers. Layouts: lib/trie/trie.h; building:
 * lib/trie/trie-build.c; inflate, halve, collapse: lib/trie-resize.c.
 *
 * Bounds, for any key set and any history of operations:
 *  - Depth. Along a path the ends of sparse and short nodes are distinct
 *    byte boundaries, and so are the starts of anchored ones, so a path
 *    has at most L/4 internal nodes for an L-bit string: 33 levels with
 *    the leaf for IPv4 (128 bits), 81 for IPv6 (320). A 1M-entry random
 *    table has 3 (dense, sparse, leaf), 4 where two keys share 31 bits.
 *  - Memory. Every internal node has two children or more (one is
 *    collapsed into its parent's slot at once), so I < N internal nodes
 *    for N entries and E = N + I - 1 edges. A sparse node takes at most
 *    31 + 40 bytes per child (capacity < 4 x live entries, else it is
 *    compacted); an anchored dense node at most 80 + 43 per child (it
 *    halves when over 13/16 of its slots are empty or hold at most 4 keys
 *    each, so each of the other 3/16 is a distinct child); a short one at
 *    most 80 + 64 (an eighth of its slots used). So the library holds at
 *    most sizeof(table) + 80 I + 64 E < sizeof(table) + 208 N bytes,
 *    whatever keys came and went. In the terms of conntab_stats(), for
 *    the N entries present now:
 *        buckets (internal nodes) <= N - 1 (0 when N <= 1),
 *        memory <= sizeof(struct ct_trie) + 208 N,
 *    so a table that held 1M and holds 10 now uses what 10 need, and an
 *    emptied one has no internal node at all (tests/test-trie-bound.c
 *    checks both after each phase of adversarial churn). The bound holds
 *    once the writers that emptied a node have reshaped it; one that
 *    finds no memory for that leaves it as it was (a removal never
 *    fails) and the next writer there that changes its counts tries
 *    again (one that keeps its children's classes changes none); an
 *    eviction reshapes the victim's node once its newcomer is in
 *    (lib/trie/trie-evict.c).
 *  - The sizing hint. With conntab_config::expected = E > 2^12, the
 *    first time the root bursts it becomes a dense node 2^w slots wide,
 *    w = ceil(log2 E) - 4 up to CT_T_HINT_MAX (about 16 keys a slot at
 *    E, short of the 24 that make a slot heavy), instead of one that
 *    doubles as keys come: each doubling rebuilds the children at its
 *    old end, and growing to 256K random keys that was a third of the
 *    inserts' instructions. The node is marked (CT_T_HINTED) and does
 *    not halve until its counts stop asking for it (lib/trie/trie-resize.c);
 *    from then on they decide, as for any node. So the bound above
 *    holds plus one dense node of 8 * 2^w + 80 bytes at most, once a
 *    table: with one child left it still collapses, and the hint is not
 *    used again. It helps where the root's keys part first (one local
 *    endpoint and many remote ones, or random keys); a root over a few
 *    local addresses never bursts, and its subtrees grow by doubling as
 *    without it.
 *
 * Concurrency. Readers (RCU read lock held) load each child word once
 * (ct_w_load: consume, pairing with the release store that published it)
 * and never write. Writers run under the RCU read lock of the table's
 * flavor too (on threads the flavor counts, registered by the front end
 * for the call if the application did not: lib/rcu-reg.h): they descend
 * without locks, lock what they change and validate it
 * (lib/trie/trie-path.h: owners, order, dead nodes). A node's
 * window never changes once published; a sparse node gains entries in
 * place (value and kid written before the count that publishes them),
 * loses them as tombstones (kid 0), and is copied when it must grow,
 * shrink or burst: the copy is published with one release store into
 * every slot that held the old node, which goes to call_rcu. A dense
 * node's slots are stored in place. So a reader sees each slot before or
 * after a change, and either way it leads to every key that was present
 * across the change: a present key is never missed, and a walk visits it
 * exactly once. No writer waits for a grace period; none takes a lock
 * for the whole table (the root word's lock only when the root itself is
 * replaced, or while the root is a sparse node of a small table).
 *
 * conntab_stats() takes no writer lock: counters are kept per writer
 * thread, and the depth comes from a walk of the nodes under the RCU
 * read lock, which the call takes itself (its thread is registered, as
 * a writer's is), as a reader's walk does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trie.h"

static struct conntab *trie_create(const struct conntab *tmpl,
				   const struct conntab_config *cfg)
{
	struct ct_trie *tr = aligned_alloc(CT_CACHELINE, sizeof(*tr));
	unsigned int lg = 0;

	if (!tr) {
		errno = ENOMEM;
		return NULL;
	}
	memset(tr, 0, sizeof(*tr));
	tr->base = *tmpl;
	while (lg < 8 * sizeof(size_t) - 1 && ((size_t)1 << lg) < cfg->expected)
		lg++;
	/* About 16 keys a slot at the expected size (lib/trie/trie.h). */
	if (lg >= CT_T_HINT_MIN + CT_T_HINT_LOAD)
		tr->hint_w = (uint8_t)(lg - CT_T_HINT_LOAD < CT_T_HINT_MAX ?
				       lg - CT_T_HINT_LOAD : CT_T_HINT_MAX);
	return &tr->base;
}

/*
 * Free a subtree at destroy: no readers or writers are left. A child
 * shared by a run of a dense node's slots is freed once.
 */
static void ct_destroy_sub(struct ct_trie *tr, uintptr_t p,
			   void (*release)(struct conntab_node *))
{
	struct ct_tnode *x;
	uintptr_t c, prev = 0;
	uint32_t i;

	if (!p)
		return;
	if (ct_w_leaf(p)) {
		ct_node_release(ct_w_node(p));
		if (release)
			release(ct_w_node(p));
		return;
	}
	x = ct_w_tn(p);
#ifdef CT_DEBUG
	ct_t_check(x);
#endif
	if (ct_t_isk(x)) {
		for (i = 0; i < x->n; i++)
			ct_destroy_sub(tr, ct_k_kid(x)[i], release);
	} else {
		for (i = 0; i < (1u << x->w); i++) {
			c = ct_d(x)->kid[i];
			if (c != prev)
				ct_destroy_sub(tr, c, release);
			prev = c;
		}
	}
	ct_t_free(tr, x);
}

static void trie_destroy(struct conntab *t,
			 void (*release)(struct conntab_node *))
{
	struct ct_trie *tr = ct_trie(t);

#ifdef CT_DEBUG
	if (tr->root_geo != ct_t_root_geo(tr->root)) {
		fprintf(stderr, "conntab: trie root_geo %#x, root's %#x\n",
			tr->root_geo, ct_t_root_geo(tr->root));
		abort();
	}
#endif
	ct_destroy_sub(tr, tr->root, release);
	ct_t_drain(tr);
	free(tr);
}

/*
 * Deepest path, levels counted as a lookup touches them (internal nodes
 * and the leaf). Under the RCU read lock, without writer locks: every
 * node it reaches stays allocated until it leaves.
 */
static size_t ct_depth_sub(uintptr_t p)
{
	struct ct_tnode *x;
	size_t d, best = 0;
	uintptr_t c, prev = 0;
	uint32_t i, n;

	if (!p)
		return 0;
	if (ct_w_leaf(p))
		return 1;
	x = ct_w_tn(p);
	if (ct_t_isk(x)) {
		n = __atomic_load_n(&x->n, __ATOMIC_ACQUIRE);
		for (i = 0; i < n; i++) {
			d = ct_depth_sub(ct_w_load(&ct_k_kid(x)[i]));
			if (d > best)
				best = d;
		}
	} else {
		for (i = 0; i < (1u << x->w); i++) {
			c = ct_w_load(&ct_d(x)->kid[i]);
			if (c && c != prev) {
				d = ct_depth_sub(c);
				if (d > best)
					best = d;
			}
			prev = c;
		}
	}
	return best ? best + 1 : 0;
}

static void trie_stats(struct conntab *t, struct conntab_stats *st)
{
	struct ct_trie *tr = ct_trie(t);
	long e = 0, tw = 0, nodes = 0, mem = 0, rs = 0;
	unsigned int i;

	t->flavor->read_lock();
	st->max_depth = ct_depth_sub(ct_w_load(&tr->root));
	t->flavor->read_unlock();
	for (i = 0; i < CT_TRIE_SHARDS; i++) {
		const struct ct_trie_count *c = &tr->cnt[i];

		e += __atomic_load_n(&c->entries, __ATOMIC_RELAXED);
		tw += __atomic_load_n(&c->timewait, __ATOMIC_RELAXED);
		nodes += __atomic_load_n(&c->nodes, __ATOMIC_RELAXED);
		mem += __atomic_load_n(&c->memory, __ATOMIC_RELAXED);
		rs += __atomic_load_n(&c->inflates, __ATOMIC_RELAXED) +
		      __atomic_load_n(&c->halves, __ATOMIC_RELAXED);
	}
	st->entries = e > 0 ? (size_t)e : 0;
	st->timewait = tw > 0 ? (size_t)tw : 0;
	st->buckets = nodes > 0 ? (size_t)nodes : 0;
	st->memory = sizeof(*tr) + (mem > 0 ? (size_t)mem : 0);
	st->resizes = rs > 0 ? (size_t)rs : 0;
}

/*
 * Inflations as splits, halvings as merges, and the root's slots when the
 * root is a dense node (the trie's directory): from root_geo, which
 * holds its width, so that no node is read and the call needs neither
 * the RCU read lock nor a registered thread (conntab_resize_stats(3)).
 */
static void trie_resize_stats(struct conntab *t,
			      struct conntab_resize_stats *rs)
{
	struct ct_trie *tr = ct_trie(t);
	long inf = 0, hal = 0;
	unsigned int i;
	uint32_t geo = __atomic_load_n(&tr->root_geo, __ATOMIC_RELAXED);

	for (i = 0; i < CT_TRIE_SHARDS; i++) {
		inf += __atomic_load_n(&tr->cnt[i].inflates, __ATOMIC_RELAXED);
		hal += __atomic_load_n(&tr->cnt[i].halves, __ATOMIC_RELAXED);
	}
	rs->splits = inf > 0 ? (size_t)inf : 0;
	rs->merges = hal > 0 ? (size_t)hal : 0;
	if (geo)
		rs->dir_slots = (size_t)1 << (geo & 0xff);
}

/* conntab_lookup_hashed(): the trie indexes by the key, the hash is unused. */
static struct conntab_node *trie_lookup_hashed(struct conntab *t, uint32_t h,
					       const struct conntab_key *k)
{
	(void)h;
	return ct_trie_lookup(t, k);
}

const struct conntab_ops ct_trie_ops = {
	.unhashed	= true,
	.registered_writers = true,	/* retires nodes through call_rcu */
	.create		= trie_create,
	.destroy	= trie_destroy,
	.insert		= ct_trie_insert,
	.prefetch	= ct_trie_prefetch,
	.read		= {
		[CONNTAB_HASH_SIPHASH]	= { ct_trie_lookup, ct_trie_lookup_batch },
		[CONNTAB_HASH_AES]	= { ct_trie_lookup, ct_trie_lookup_batch },
	},
	.lookup_hashed	= trie_lookup_hashed,
	.insert_key	= {
		[CONNTAB_HASH_SIPHASH]	= ct_trie_insert_key,
		[CONNTAB_HASH_AES]	= ct_trie_insert_key,
	},
	.remove		= ct_trie_remove,
	.remove_single	= ct_trie_remove_single,
	.timewait	= ct_trie_timewait,
	.walk		= ct_trie_walk,
	.scan		= ct_trie_scan,
	.insert_evict	= ct_trie_insert_evict,
	.stats		= trie_stats,
	.walk_prefix	= ct_trie_walk_prefix,
	.resize_stats	= trie_resize_stats,
};
