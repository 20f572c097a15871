/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE writers: the path of a descent, and the locks that own a
 * node's place in its parent.
 *
 * Who owns what (every store into a slot is made by a writer holding the
 * slot's owner, and a node is unlinked only by a writer holding all the
 * owners of the slots that hold it and the node's own locks):
 *  - the root word: tr->root_lock;
 *  - a sparse node's entries: its lock byte; a writer that changes how
 *    many entries are live also holds the owner(s) of the node's own
 *    slot(s), since that changes its class in a dense parent and may
 *    replace it, except a remove that by the count leaves the node as
 *    it is and its class unchanged (ct_t_remove_fast(), which says why
 *    the node's lock alone is enough there, and the reshapes that keep
 *    a child whole: ct_keep() in lib/trie/trie-resize.c);
 *  - a dense node's slots: one lock bit each, in the slot word.
 * Lock order: a parent's owner before its child's; slots of one dense
 * node in increasing index. Writers never lock upwards: one that finds it
 * needs a lock above what it holds releases everything and starts again.
 *
 * Writers descend under the RCU read lock without locks (as readers do),
 * lock what they change, and then validate: the owner node is not dead
 * (set under its locks when it is unlinked) and the slot still holds what
 * the descent saw. If not, they start again (-EAGAIN inside the library).
 */
#ifndef CT_TRIE_PATH_H
#define CT_TRIE_PATH_H

#include <errno.h>

#include "trie.h"

/* A slot, the node that holds it (NULL: the root word) and its index. */
struct ct_tslot {
	uintptr_t *slot;
	struct ct_tnode *in;
	uint32_t idx;
	unsigned int pend;	/* bits the path fixed above the slot's word */
};

struct ct_tpath {
	unsigned int n;			/* internal nodes on the path */
	struct ct_tslot at[CT_T_DEPTH + 1];	/* at[i] holds x[i]; at[n] the end */
	struct ct_tnode *x[CT_T_DEPTH];
	uintptr_t end;			/* word at at[n]: 0 or a leaf */
	bool kmiss;			/* ended in x[n-1]: no live entry v */
	int ki;				/* then: v's tombstone, or -1 */
	uint32_t v;
	/*
	 * Nodes that start after their parent's window ends (skipped bits
	 * that no lock-free step checked): a sparse one (kskip), and the
	 * deepest dense one (dskip, whose prefix has the bits).
	 */
	bool kskip;
	struct ct_tnode *dskip;
};

/*
 * The owner(s) of the place of node @x (or of a leaf or nothing) in its
 * parent. A sparse child of an anchored dense node whose window starts
 * before the parent's end is shared by the aligned 2^(end - pos) slots
 * that cover it (lib/trie/trie-resize.c); dense children are never shared.
 */
struct ct_thold {
	struct ct_tslot at;
	uint32_t lo, m;		/* dense parent: slots [lo, lo + m) */
};

static inline bool ct_t_anchored(const struct ct_tnode *d)
{
	return d && !ct_t_isk(d) && !ct_t_short(d);
}

static inline void ct_hold_init(struct ct_thold *h, const struct ct_tslot *at,
				const struct ct_tnode *x)
{
	h->at = *at;
	h->lo = at->idx;
	h->m = 1;
	if (at->in && !ct_t_isk(at->in) && x && x->pos < ct_t_end(at->in)) {
		h->m = 1u << (ct_t_end(at->in) - x->pos);
		h->lo = at->idx & ~(h->m - 1);
	}
}

static inline uintptr_t *ct_hold_slot(const struct ct_thold *h, uint32_t j)
{
	return &ct_d(h->at.in)->kid[h->lo + j];
}

void ct_hold_lock(struct ct_trie *tr, const struct ct_thold *h);
void ct_hold_unlock(struct ct_trie *tr, const struct ct_thold *h);
bool ct_hold_valid(const struct ct_thold *h, uintptr_t want);
void ct_hold_store(const struct ct_thold *h, uintptr_t v);
void ct_hold_reclass(const struct ct_thold *h, enum ct_class c0,
		     enum ct_class c1);
enum ct_class ct_hold_class(const struct ct_thold *h, uintptr_t v);

void ct_t_descend(struct ct_trie *tr, const uint8_t *s, struct ct_tpath *pa);

/*
 * A writer step that changes a leaf in its place: under the RCU read
 * lock, descend for the key string @s to the leaf word @leaf and lock the
 * owner of its slot in @h. -ENOENT: the descent did not end at @leaf
 * (removed, or never in); -EAGAIN: once locked, the owner was dead or the
 * slot held something else (moved meanwhile: start again); both with
 * nothing locked. 0: locked, the owner live and the slot holding @leaf.
 * Every store into the slot is made under that lock, and the owner is
 * unlinked only under all its locks, this one among them, so the slot
 * keeps @leaf until the caller's ct_hold_unlock(): the caller may change
 * the leaf's node, or replace the leaf by another in one store
 * (ct_hold_store()), under no other lock, since that changes neither the
 * number of live entries of a sparse owner nor the class of the slot in
 * a dense one. Only sparse nodes are ever shared by slots
 * (lib/trie/trie-resize.c), so a leaf's place is its one slot.
 */
static inline int ct_t_hold_leaf(struct ct_trie *tr, const uint8_t *s,
				 uintptr_t leaf, struct ct_thold *h)
{
	struct ct_tpath pa;

	ct_t_descend(tr, s, &pa);
	if (pa.kmiss || pa.end != leaf)
		return -ENOENT;
	ct_hold_init(h, &pa.at[pa.n], NULL);
	ct_hold_lock(tr, h);
	if (!ct_hold_valid(h, leaf)) {
		ct_hold_unlock(tr, h);
		return -EAGAIN;
	}
	return 0;
}

int ct_k_unshare(struct ct_trie *tr, const struct ct_thold *h,
		 struct ct_tnode *x, enum ct_class c0);

/* lib/trie/trie-resize.c: dense node upkeep after a writer changed its counts. */
void ct_t_fix(struct ct_trie *tr, const uint8_t *s);

#endif /* CT_TRIE_PATH_H */
