/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: dense nodes that change width (level compression).
 *
 * An anchored dense node (on a byte boundary) counts its slots in three
 * classes as writers change them: used (non-empty), heavy (a sparse child
 * right at its end with many entries, or a short dense child there: what
 * a wider window would split), light (a leaf, or a sparse child with few
 * entries). When half the slots are heavy it inflates: one bit wider,
 * twice the slots. When more than 13/16 of the slots are empty or light
 * it halves; with one child left it collapses into it. The gap between
 * the two keeps a node from going back and forth, but not always: the
 * children that made it heavy may leave no heavy slot behind (a shared
 * child counts as light in its other slots; an old tail, below, is
 * dissolved into slots that may each hold a small subtree), and the
 * inflated node may want halving at once. It then halves back, its slot
 * pairs rebuilt. That costs time, not progress (each writer reshapes a
 * bounded number of times, ct_t_fix()), and it is rare: a dense node
 * grown by random keys halves once on its way, near 100K keys below it
 * (1M keys of one local endpoint: 15 inflations of the root, one
 * halving; test-trie-bound's 1M keys over four local addresses: 52
 * inflations, 4 halvings, which it checks).
 *
 * Inflation does not copy the sparse children: a child that starts at
 * the old end is put in both halves' slots (shared, its window now
 * overlapping the parent's). Readers need nothing for it; a writer that
 * must change how many entries it has locks all its slots (an aligned
 * run of 2^(end - pos)), and one that must replace it cuts it into
 * per-slot pieces first (ct_k_unshare()). The first slot of a shared
 * child counts as light if the child has at most CT_T_KLIGHT entries per
 * slot, the others (CT_C_SHARED) as light always, and not as children:
 * so a node full of shared children from a halved table still halves,
 * and one whose slots all hold one child collapses. A sparse child whose
 * window ends within 4 bits of the new end is cut in pieces at once (or
 * dissolved into the slots, when the new window covers it): such an old
 * tail, its window nearly covered by its parent's growth, is heavy when
 * it is mostly full, and the parent grows through it, which a shared
 * child would hide. A short dense child at the old end is split in two.
 * An anchored dense child there cannot be shared (only sparse children
 * are): the node stays as it is (CT_T_BLOCKED).
 *
 * A short dense node (at most a byte, ending on a byte boundary) does not
 * change width; it becomes sparse when it has few children
 * (ct_d_slow(): at most 16, or an eighth of its slots, which a sparse
 * node can hold), so that at least an eighth of its slots are used.
 *
 * All of this runs with the node's place in its parent and every slot of
 * the node locked (lib/trie/trie-path.h), as "one node's worth of work":
 * O(2^w) for a node of 2^w slots, and no other node's locks but those of
 * the children it absorbs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trie-build.h"
#include "trie-path.h"

/* Entries of sparse @y whose kid is a node (a subtree, not a leaf). */
static unsigned int ct_k_nodes(const struct ct_tnode *y)
{
	unsigned int i, m = 0;

	for (i = 0; i < y->n; i++) {
		uintptr_t c = __atomic_load_n(&ct_k_kid((struct ct_tnode *)y)[i],
					      __ATOMIC_RELAXED);

		m += c && !ct_w_leaf(c);
	}
	return m;
}

enum ct_class ct_d_class(const struct ct_tnode *d, uint32_t idx,
			 uintptr_t c)
{
	unsigned int end = ct_t_end(d), sh;
	const struct ct_tnode *y;

	if (!c)
		return CT_C_EMPTY;
	if (ct_w_leaf(c))
		return CT_C_LIGHT;
	y = ct_w_tn(c);
	if (y->pos < end) {		/* shared (only sparse children are) */
		sh = end - y->pos;
		if (idx & ((1u << sh) - 1))
			return CT_C_SHARED;
		return y->live <= ((unsigned int)CT_T_KLIGHT << sh) ?
		       CT_C_LIGHT : CT_C_NORMAL;
	}
	if (!ct_t_isk(y))
		return y->pos == end && ct_t_short(y) ? CT_C_HEAVY :
							CT_C_NORMAL;
	/*
	 * Heavy: many entries, or a window of a few bits mostly used by
	 * subtrees (an old tail that the parent's growth has nearly
	 * covered: the parent grows through it, ct_d_inflate() cutting it
	 * in pieces). Its entries change kind only under the owner of its
	 * slot, as its live count does (lib/trie/trie-write.c), so the class is
	 * stable for whoever holds that.
	 */
	if (y->pos == end && (y->live >= CT_T_KHEAVY ||
			      (y->w <= 4 && 4u * y->live >= 3u << y->w &&
			       2 * ct_k_nodes(y) >= y->live)))
		return CT_C_HEAVY;
	return y->live <= CT_T_KLIGHT ? CT_C_LIGHT : CT_C_NORMAL;
}

/*
 * More than 13/16 of anchored @d's slots are empty or light: halving
 * would lose little (ct_d_wants_halve()).
 */
static bool ct_d_sparse_counts(const struct ct_tnode *d)
{
	const struct ct_dnode *x = (const struct ct_dnode *)d;
	uint32_t slots = 1u << d->w;
	uint32_t used = __atomic_load_n(&x->used, __ATOMIC_RELAXED);
	uint32_t light = __atomic_load_n(&x->light, __ATOMIC_RELAXED);

	return 16 * (slots - used + light) >= 13 * slots;
}

/* Writers holding a slot of @d: its class @c gains @delta slots. */
void ct_d_count(struct ct_tnode *d, enum ct_class c, int delta)
{
	struct ct_dnode *x = ct_d(d);

	if (c == CT_C_EMPTY)
		return;
	__atomic_add_fetch(&x->used, (uint32_t)delta, __ATOMIC_RELAXED);
	if (ct_t_short(d))
		return;
	if (c == CT_C_HEAVY)
		__atomic_add_fetch(&x->heavy, (uint32_t)delta, __ATOMIC_RELAXED);
	if (c == CT_C_LIGHT || c == CT_C_SHARED)
		__atomic_add_fetch(&x->light, (uint32_t)delta, __ATOMIC_RELAXED);
	if (c == CT_C_SHARED)
		__atomic_add_fetch(&x->shared, (uint32_t)delta,
				   __ATOMIC_RELAXED);
	/*
	 * A node built to the sizing hint is kept from halving until its
	 * counts stop asking for it; from then on they decide. Writers
	 * holding different slots may clear the flag together; the other
	 * flags change only with every slot held, which excludes them.
	 */
	if (__builtin_expect(ct_t_kind(d) & CT_T_HINTED, 0) &&
	    !ct_d_sparse_counts(d))
		__atomic_and_fetch(&d->kind, (uint8_t)~CT_T_HINTED,
				   __ATOMIC_RELAXED);
}

/* Count @d's slots from scratch (unpublished, or all its slots locked). */
void ct_d_recount(struct ct_tnode *d)
{
	uint32_t i;

	ct_d(d)->used = ct_d(d)->heavy = ct_d(d)->light = ct_d(d)->shared = 0;
	for (i = 0; i < (1u << d->w); i++)
		ct_d_count(d, ct_d_class(d, i, ct_d_slot(d, i)),
			   1);
}

#ifdef CT_DEBUG
/*
 * Debug builds, at destroy (no writer left): the counts that writers kept
 * as they went are the ones a recount finds: a sparse node's live
 * entries, a dense node's classes. Writers skip the class bookkeeping
 * when a change keeps a child's class (lib/trie/trie-write.c's fast paths);
 * this is where a wrong skip would show, in every test that destroys a
 * trie.
 */
void ct_t_check(struct ct_tnode *y)
{
	struct ct_dnode *x = ct_d(y);
	uint32_t kept[4], i, live = 0;

	if (ct_t_isk(y)) {
		for (i = 0; i < y->n; i++)
			live += ct_k_kid(y)[i] != 0;
		if (live == y->live)
			return;
		fprintf(stderr, "conntab: trie node at %u/%u counted %u live "
			"entries, holds %u\n", y->pos, y->w, y->live, live);
		abort();
	}
	kept[0] = x->used;
	kept[1] = x->heavy;
	kept[2] = x->light;
	kept[3] = x->shared;
	ct_d_recount(y);
	if (kept[0] == x->used && kept[1] == x->heavy &&
	    kept[2] == x->light && kept[3] == x->shared)
		return;
	fprintf(stderr, "conntab: trie node at %u/%u counted used %u heavy %u "
		"light %u shared %u, holds %u %u %u %u\n", y->pos, y->w,
		kept[0], kept[1], kept[2], kept[3], x->used, x->heavy,
		x->light, x->shared);
	abort();
}
#endif

/*
 * Bits of the keys below @d: IPv4 strings end at 128. A node that starts
 * before the family byte (bits 24 to 31: a node over zones or
 * protocols) may have IPv6 keys below it, whose strings go on to 320: a
 * builder told 128 there took two IPv6 keys that agree on their first
 * 128 bits for one and built a window of negative width
 * (tests/test-trie.c, v6_under_zone_node).
 */
static unsigned int ct_d_lmax(const struct ct_tnode *d)
{
	return d->pos < 32 || ct_d((struct ct_tnode *)d)->prefix[3] ==
	       AF_INET6 ? CT_KEY_STR_MAX * 8 : 16 * 8;
}

static bool ct_d_wants_inflate(const struct ct_tnode *d)
{
	const struct ct_dnode *x = (const struct ct_dnode *)d;
	uint32_t slots = 1u << d->w;

	return !(ct_t_kind(d) & CT_T_BLOCKED) && d->w < CT_T_DMAX &&
	       ct_t_end(d) < ct_d_lmax(d) &&
	       2 * __atomic_load_n(&x->heavy, __ATOMIC_RELAXED) >= slots;
}

static bool ct_d_wants_halve(const struct ct_tnode *d)
{
	return !(ct_t_kind(d) & CT_T_HINTED) && ct_d_sparse_counts(d);
}

bool ct_d_wants_resize(const struct ct_tnode *d)
{
	const struct ct_dnode *x = (const struct ct_dnode *)d;
	uint32_t used = __atomic_load_n(&x->used, __ATOMIC_RELAXED);

	if (ct_t_short(d))
		return used <= ct_d_slow(d->w);
	/* Slots, less the ones that repeat a shared child: children. */
	used -= __atomic_load_n(&x->shared, __ATOMIC_RELAXED);
	return used <= 1 || ct_d_wants_halve(d) || ct_d_wants_inflate(d);
}

/*
 * Children taken (locked, killed on success) while reshaping a node, and
 * children kept (locked, left linked under the new node).
 */
struct ct_taken {
	struct ct_tnode *list;
	struct ct_tnode *kept;
};

/* Lock @y and link it on @list through its rcu_head, unused while linked. */
static void ct_taken_push(struct ct_tnode **list, struct ct_tnode *y)
{
	ct_t_lock_node(y);
	ct_t_head(y)->next.next = (struct cds_wfcq_node *)(void *)*list;
	*list = y;
}

static void ct_take(struct ct_taken *tk, struct ct_tnode *y)
{
	ct_taken_push(&tk->list, y);
}

/*
 * Sparse @y stays whole under the new node, shared by slots where it
 * was not: its class there differs from its class here for the same
 * live count, and the new node's counts are taken from it. A writer
 * that removes one of its entries holding y's lock alone (one that by
 * its count keeps its class here: lib/trie/trie-write.c,
 * ct_t_remove_fast()) must not change it between that count and the
 * parent's death, which it checks under y's lock: so y is locked until
 * ct_taken_end(), which comes after the parent is marked dead (or, the
 * reshape failed, with the parent and its counts as they were).
 */
static void ct_keep(struct ct_taken *tk, struct ct_tnode *y)
{
	ct_taken_push(&tk->kept, y);
}

/*
 * Release what was taken, on success killed and retired, and unlock what
 * was kept.
 */
static void ct_taken_end(struct ct_trie *tr, struct ct_taken *tk, bool done)
{
	struct ct_tnode *y = tk->list, *next;

	for (; y; y = next) {
		next = (struct ct_tnode *)(void *)ct_t_head(y)->next.next;
		if (done)
			ct_t_mark(y, CT_T_DEAD);
		ct_t_unlock_node(y);
		if (done)
			ct_t_retire(tr, y);
	}
	tk->list = NULL;
	for (y = tk->kept; y; y = next) {
		next = (struct ct_tnode *)(void *)ct_t_head(y)->next.next;
		ct_t_unlock_node(y);
	}
	tk->kept = NULL;
}

/* The one child of @d, if it has at most one (shared slots counted once). */
static bool ct_d_single(struct ct_tnode *d, uintptr_t *only)
{
	uintptr_t c, one = 0;
	uint32_t i;

	for (i = 0; i < (1u << d->w); i++) {
		c = ct_d_slot(d, i);
		if (!c || c == one)
			continue;
		if (one)
			return false;
		one = c;
	}
	*only = one;
	return true;
}

/* A short dense node with few children becomes sparse, same window. */
static struct ct_tnode *ct_d_to_k(struct ct_trie *tr, struct ct_tnode *d)
{
	uint16_t val[CT_T_KMAX];
	uintptr_t kid[CT_T_KMAX], c;
	unsigned int m = 0;
	uint32_t i;

	for (i = 0; i < (1u << d->w) && m < CT_T_KMAX; i++) {
		c = ct_d_slot(d, i);
		if (!c)
			continue;
		val[m] = (uint16_t)i;
		kid[m++] = c;
	}
	return ct_k_make(tr, d->pos, d->w, val, kid, m, 0);
}

/* Bit @bit of the keys below child word @c (all share it). */
static unsigned int ct_t_keybit(uintptr_t c, unsigned int bit)
{
	uint8_t s[CT_KEY_STR_BUF];
	struct conntab_node *n;
	struct ct_tnode *y;

	if (ct_w_leaf(c)) {
		ct_key_str(&ct_w_node(c)->ct_key, s);
		return ct_bits(s, bit, 1);
	}
	y = ct_w_tn(c);
	if (!ct_t_isk(y))
		return ct_bits(ct_d(y)->prefix, bit, 1);
	memset(s, 0, sizeof(s));
	n = ct_t_first_leaf(c, s, 0);
	if (!n)
		return 0;	/* no key left below: either half will do */
	ct_key_str(&n->ct_key, s);
	return ct_bits(s, bit, 1);
}

/*
 * Half @hb of short dense @z (the slots whose top bit is hb), as a word
 * for the inflated parent: nothing, the one child, a sparse node when
 * it has few children, or a short dense node one bit narrower (same
 * end, so still short). The half is made in the shape a writer's
 * reshaping would give it (ct_d_wants_resize()): no writer's path need
 * ever pass through it again, so one built as a short node of two
 * children would stay so, 1 KiB for two keys, and break the memory
 * bound of lib/trie/trie.c (tests/test-trie-bound.c builds that history).
 */
static int ct_d_half(struct ct_build *b, struct ct_tnode *z, unsigned int hb,
		     uintptr_t *out)
{
	uint32_t half = 1u << (z->w - 1), i, used = 0;
	uint16_t val[CT_T_KMAX];
	uintptr_t kid[CT_T_KMAX];
	struct ct_tnode *y;
	uintptr_t c, one = 0;

	for (i = 0; i < half; i++) {
		c = ct_d_slot(z, hb * half + i);
		if (c) {
			if (used < CT_T_KMAX) {
				val[used] = (uint16_t)i;
				kid[used] = c;
			}
			used++;
			one = c;
		}
	}
	if (used <= 1 || z->w == 1) {
		*out = used ? one : 0;
		return 0;
	}
	if (used <= ct_d_slow(z->w - 1)) {	/* <= CT_T_KMAX: all in val[] */
		y = ct_k_make(b->tr, z->pos + 1, z->w - 1, val, kid, used, 0);
		if (!y)
			return -ENOMEM;
		ct_build_keep(b, y);
		*out = (uintptr_t)y;
		return 0;
	}
	y = ct_d_alloc(b->tr, z->pos + 1, z->w - 1, true);
	if (!y)
		return -ENOMEM;
	ct_build_keep(b, y);
	memcpy(ct_d(y)->prefix, ct_d(z)->prefix, CT_KEY_STR_MAX);
	ct_putbits(ct_d(y)->prefix, z->pos, 1, hb);
	for (i = 0; i < half; i++)
		ct_d(y)->kid[i] = ct_d_slot(z, hb * half + i);
	ct_d_recount(y);
	*out = (uintptr_t)y;
	return 0;
}

/*
 * @d one bit wider (see the top of this file). Returns 0 with *out the
 * new node, 0 with *out == 0 when blocked, or -ENOMEM.
 */
static int ct_d_inflate(struct ct_trie *tr, struct ct_tnode *d,
			struct ct_taken *tk, uintptr_t *out)
{
	unsigned int E = ct_t_end(d), hb;
	struct ct_build b = { .tr = tr };
	struct ct_tnode *y, *z;
	uintptr_t c, prev = 0;
	uint32_t i, j, v;
	int err;

	*out = 0;
	for (i = 0; i < (1u << d->w); i++) {
		c = ct_d_slot(d, i);
		if (c && !ct_w_leaf(c) && ct_w_tn(c)->pos == E &&
		    ct_t_anchored(ct_w_tn(c))) {
			ct_t_mark(d, CT_T_BLOCKED);
			return 0;
		}
	}
	y = ct_d_alloc(tr, d->pos, d->w + 1, false);
	if (!y)
		return -ENOMEM;
	ct_build_keep(&b, y);
	memcpy(ct_d(y)->prefix, ct_d(d)->prefix, CT_KEY_STR_MAX);
	for (i = 0; i < (1u << d->w); i++) {
		c = ct_d_slot(d, i);
		if (!c)
			continue;
		z = ct_w_leaf(c) ? NULL : ct_w_tn(c);
		if (!z || z->pos > E) {
			ct_d(y)->kid[2 * i + ct_t_keybit(c, E)] = c;
		} else if (!ct_t_isk(z)) {	/* short, at the old end */
			if (c != prev)
				ct_take(tk, z);
			for (hb = 0; hb < 2; hb++) {
				err = ct_d_half(&b, z, hb,
						&ct_d(y)->kid[2 * i + hb]);
				if (err)
					goto fail;
			}
		} else if (ct_t_end(z) <= E + 4) {
			/*
			 * Covered, or nearly: dissolved into the slots, or
			 * cut in pieces now (so that its next inflation sees
			 * them, which a shared one would hide).
			 */
			if (c != prev)
				ct_take(tk, z);
			for (j = 2 * i; j < 2 * i + 2; j++) {
				v = E + 1 - z->pos;
				if (v > z->w)
					v = z->w;
				err = ct_k_piece(&b, z, v,
						 (j >> (E + 1 - z->pos - v)) &
						 ((1u << v) - 1),
						 &ct_d(y)->kid[j]);
				if (err)
					goto fail;
			}
		} else {			/* shared by both halves */
			if (c != prev && z->pos == E)
				ct_keep(tk, z);
			ct_d(y)->kid[2 * i] = ct_d(y)->kid[2 * i + 1] = c;
		}
		prev = c;
	}
	ct_d_recount(y);
	*out = (uintptr_t)y;
	return 0;
fail:
	ct_build_abort(&b);
	return -ENOMEM;
}

/*
 * Items for the subtrees of child word @c of @d's slot @idx, merging
 * into a halved slot: a sparse or short dense child is opened (taken),
 * an anchored one and a leaf stay whole. The bits a child's keys share
 * come from @d's prefix and the slot (and, past the window's end, from
 * one key when the child skips bits there).
 */
static unsigned int ct_d_merge_items(struct ct_build *b, struct ct_taken *tk,
				     struct ct_tnode *d, uint32_t idx,
				     uintptr_t c, struct ct_bitem *it)
{
	uint8_t base[CT_KEY_STR_BUF];
	struct conntab_node *n;
	struct ct_tnode *y;

	if (ct_w_leaf(c)) {
		ct_bitem_leaf(b, it, c);
		return 1;
	}
	y = ct_w_tn(c);
	if (ct_t_anchored(y)) {
		it->kid = c;
		memcpy(it->s, ct_d(y)->prefix, CT_KEY_STR_MAX);
		memset(it->s + CT_KEY_STR_MAX, 0,
		       CT_KEY_STR_BUF - CT_KEY_STR_MAX);
		it->lim = y->pos;
		return 1;
	}
	memset(base, 0, sizeof(base));
	if (!ct_t_isk(y)) {
		memcpy(base, ct_d(y)->prefix, CT_KEY_STR_MAX);
	} else if (y->pos > ct_t_end(d)) {
		/* Live entries hold keys: a sparse node has two or more. */
		n = ct_t_first_leaf(c, base, 0);
		if (n)
			ct_key_str(&n->ct_key, base);
	} else {
		memcpy(base, ct_d(d)->prefix, CT_KEY_STR_MAX);
		ct_putbits(base, d->pos, d->w, idx);
	}
	ct_take(tk, y);
	return ct_bitems_open(y, base, it);
}

/*
 * The common halving cases, without the builder: leaves, and sparse
 * children right at the end @E of @d's window with the same window,
 * merging into slot pair (@c0, @c1) become one sparse node at E - 1 one
 * bit wider (a sparse child's values with the slot's last bit on top; a
 * leaf's value read from its key). Two leaves give the node the builder
 * would, at E - 1, where they part, to the byte boundary within 16 bits,
 * but at capacity 2: ct_build_pair() leaves room for the third key a
 * fill brings, and a halving comes with removes.
 * Children 16 bits wide (what a burst under an anchored node makes) give
 * a window that would be 17: the builder's node ends at that boundary
 * too, so their values lose their low bits, which it does when those
 * keep them apart (else the builder places what they do not part).
 * 1 with *out set, 0 if the case is not one of these, -ENOMEM.
 */
static int ct_d_merge_fast(struct ct_build *b, struct ct_taken *tk,
			   unsigned int E, uintptr_t c0, uintptr_t c1,
			   uintptr_t *out)
{
	uint8_t s[CT_KEY_STR_BUF];
	uint16_t val[CT_T_KMAX];
	uintptr_t kid[CT_T_KMAX], c[2] = { c0, c1 };
	struct ct_tnode *y = NULL, *z;
	unsigned int h, i, j, m = 0, w = 0, nw, sh = 0, end;

	for (h = 0; h < 2; h++) {
		if (!c[h])
			continue;
		if (ct_w_leaf(c[h])) {
			m++;
			continue;
		}
		z = ct_w_tn(c[h]);
		if (!ct_t_isk(z) || z->pos != E || z->w > 16 ||
		    (w && z->w != w))
			return 0;
		w = z->w;
		m += z->live;
	}
	/*
	 * Fewer than two: one leaf (the caller took it alone); a sparse
	 * child has two live entries or more (ct_k_shrink()). More than a
	 * sparse node holds: the builder's case.
	 */
	if (m < 2 || m > CT_T_KMAX)
		return 0;
	if (!w) {		/* two leaves (the caller took one alone) */
		end = ct_floor8(E + 15) < b->L ? ct_floor8(E + 15) : b->L;
		w = end - E;
	}
	nw = w + 1;
	if (nw > 16) {
		nw = ct_floor8(E + 15) - (E - 1);
		sh = w - (nw - 1);
	}
	/*
	 * Shortened values may collide: then it is the builder's case, and
	 * nothing may be taken yet. The values stay as they are while the
	 * caller holds the slots; an entry may still go (a remove that
	 * keeps the node's class takes its lock alone: ct_t_remove_fast()),
	 * which only lowers m and cannot make values collide, but none may
	 * come (an insert takes the slot too: an in-place insert under the
	 * node's lock alone overran val[] here, tests/test-trie-reshape.c);
	 * a kid may be replaced by a leaf of the same key under the node's
	 * own lock (a recycle, a timewait), so kids are read once the node
	 * is taken.
	 */
	for (h = 0, m = 0; sh && h < 2; h++) {
		if (!c[h] || ct_w_leaf(c[h]))
			continue;
		z = ct_w_tn(c[h]);
		for (i = 0; i < z->n; i++)
			if (__atomic_load_n(&ct_k_kid(z)[i], __ATOMIC_RELAXED))
				val[m++] = (uint16_t)(ct_k_val(z)[i] >> sh |
						      h << (nw - 1));
	}
	for (i = 1; i < m; i++)
		for (j = 0; j < i; j++)
			if (val[i] == val[j])
				return 0;
	for (h = 0, m = 0; h < 2; h++) {
		if (!c[h])
			continue;
		if (ct_w_leaf(c[h])) {
			ct_key_str(&ct_w_node(c[h])->ct_key, s);
			val[m] = (uint16_t)ct_bits(s, E - 1, nw);
			kid[m++] = c[h];
			continue;
		}
		z = ct_w_tn(c[h]);
		ct_take(tk, z);
		for (i = 0; i < z->n; i++) {
			if (!ct_k_kid(z)[i])
				continue;
			val[m] = (uint16_t)(ct_k_val(z)[i] >> sh | h << (nw - 1));
			kid[m++] = ct_k_kid(z)[i];
		}
	}
	y = ct_k_make(b->tr, E - 1, nw, val, kid, m, 0);
	if (!y)
		return -ENOMEM;
	ct_build_keep(b, y);
	*out = (uintptr_t)y;
	return 1;
}

/*
 * @d one bit narrower: slots 2i and 2i + 1 merge into slot i (a child
 * shared by both stays as it is). Width 1: the merged child replaces @d.
 */
static int ct_d_halve(struct ct_trie *tr, struct ct_tnode *d,
		      struct ct_taken *tk, uintptr_t *out)
{
	struct ct_build b = { .tr = tr, .L = ct_d_lmax(d) };
	unsigned int q = ct_t_end(d) - 1;
	struct ct_bitem *it;
	struct ct_tnode *y = NULL;
	uintptr_t c0, c1, r;
	uint32_t i, n;
	int err = 0;

	it = malloc(2 * (1u << CT_T_SMAX) * sizeof(*it));
	if (!it)
		return -ENOMEM;
	if (d->w > 1) {
		y = ct_d_alloc(tr, d->pos, d->w - 1, false);
		if (!y) {
			free(it);
			return -ENOMEM;
		}
		ct_build_keep(&b, y);
		memcpy(ct_d(y)->prefix, ct_d(d)->prefix, CT_KEY_STR_MAX);
	}
	for (i = 0; i < (1u << (d->w - 1)); i++) {
		c0 = ct_d_slot(d, 2 * i);
		c1 = ct_d_slot(d, 2 * i + 1);
		r = 0;
		if (c0 == c1 || (!c0 && ct_w_leaf(c1)) ||
		    (!c1 && ct_w_leaf(c0))) {
			r = c0 ? c0 : c1;
			err = 1;
		} else {
			err = ct_d_merge_fast(&b, tk, q + 1, c0, c1, &r);
		}
		if (!err) {	/* the merged child, built from items */
			n = c0 ? ct_d_merge_items(&b, tk, d, 2 * i, c0, it) : 0;
			n += c1 ? ct_d_merge_items(&b, tk, d, 2 * i + 1, c1,
						   it + n) : 0;
			/*
			 * Two children give two items or more, since every
			 * sparse child has two live entries; ct_build()
			 * needs two. Fewer are handled anyway, so that no
			 * state of a child can make a node of no window.
			 */
			err = n < 2 ? 0 : ct_build(&b, it, n, q, y != NULL, &r);
			if (n == 1)
				r = it[0].kid;
		}
		if (err < 0) {
			ct_build_abort(&b);
			break;
		}
		if (y)
			ct_d(y)->kid[i] = r;
		else
			*out = r;
	}
	free(it);
	if (err < 0)
		return err;
	if (y) {
		ct_d_recount(y);
		*out = (uintptr_t)y;
	}
	return 0;
}

/*
 * Reshape dense @d (held in @at) as its counts ask, under the locks of
 * its place and of all its slots. -EAGAIN if @d moved meanwhile.
 */
static int ct_d_resize(struct ct_trie *tr, const struct ct_tpath *pa,
		       unsigned int k)
{
	struct ct_tnode *d = pa->x[k], *p = k ? pa->x[k - 1] : NULL;
	struct ct_taken tk = { NULL };
	struct ct_thold h, hp;
	enum ct_class c0, cp = CT_C_EMPTY;
	uintptr_t w = 0;
	uint32_t i;
	bool done = false, pk = p && ct_t_isk(p);
	int err = 0, which = 0;

	/*
	 * Under a sparse parent, @d may collapse into a leaf: an entry of
	 * the parent changes kind (its class may change), so the parent's
	 * place is held too, as writers changing its entries do.
	 */
	if (pk) {
		ct_hold_init(&hp, &pa->at[k - 1], p);
		ct_hold_lock(tr, &hp);
		if (!ct_hold_valid(&hp, (uintptr_t)p)) {
			ct_hold_unlock(tr, &hp);
			return -EAGAIN;
		}
		cp = ct_hold_class(&hp, (uintptr_t)p);
	}
	ct_hold_init(&h, &pa->at[k], d);
	ct_hold_lock(tr, &h);
	if (!ct_hold_valid(&h, (uintptr_t)d)) {
		ct_hold_unlock(tr, &h);
		if (pk)
			ct_hold_unlock(tr, &hp);
		return -EAGAIN;
	}
	for (i = 0; i < (1u << d->w); i++)
		ct_t_slot_lock(&ct_d(d)->kid[i]);
	ct_delay(CT_DP_TR_LOCK_RESIZE);
	if (!ct_d_wants_resize(d)) {
		/* someone else did it */
	} else if (ct_d_single(d, &w)) {
		done = true;
	} else if (ct_t_short(d)) {
		w = (uintptr_t)ct_d_to_k(tr, d);
		done = w != 0;
		if (!done)	/* stays dense until a later writer's fix */
			err = -ENOMEM;
	} else if (ct_d_wants_halve(d)) {
		err = ct_d_halve(tr, d, &tk, &w);
		done = !err;
		which = 2;
	} else if (ct_d_wants_inflate(d)) {
		err = ct_d_inflate(tr, d, &tk, &w);
		done = !err && w;
		which = 1;
	}
	if (done) {
		c0 = ct_hold_class(&h, (uintptr_t)d);
		ct_hold_store(&h, w);
		ct_hold_reclass(&h, c0, ct_hold_class(&h, w));
		ct_delay(CT_DP_TR_UNLINK_KILL);
		ct_t_mark(d, CT_T_DEAD);
		if (which)
			__atomic_add_fetch(which == 1 ?
					   &ct_t_cnt(tr)->inflates :
					   &ct_t_cnt(tr)->halves, 1,
					   __ATOMIC_RELAXED);
	}
	for (i = 1u << d->w; i-- > 0;)
		ct_t_slot_unlock(&ct_d(d)->kid[i]);
	ct_taken_end(tr, &tk, done);
	ct_hold_unlock(tr, &h);
	if (pk) {
		ct_hold_reclass(&hp, cp, ct_hold_class(&hp, (uintptr_t)p));
		ct_hold_unlock(tr, &hp);
	}
	if (done)
		ct_t_retire(tr, d);
	return err;
}

/*
 * A writer changed the counts of a dense node on the path of @s, which
 * now wants reshaping: find it again and do it; then whatever that made
 * want it (the new node, or its parent), deepest first. Without memory a
 * node stays as it is until a later writer changes its counts.
 */
void ct_t_fix(struct ct_trie *tr, const uint8_t *s)
{
	struct ct_tpath pa;
	unsigned int k, rounds = 0;

	while (rounds++ < 4 * CT_T_DEPTH) {
		ct_t_descend(tr, s, &pa);
		for (k = pa.n; k-- > 0;)
			if (!ct_t_isk(pa.x[k]) && ct_d_wants_resize(pa.x[k]))
				break;
		if (k >= pa.n)
			return;
		if (ct_d_resize(tr, &pa, k) == -ENOMEM)
			return;
	}
}
