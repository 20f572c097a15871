/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE writers: insert (and recycle), remove, timewait.
 *
 * Each runs under the RCU read lock of the table's flavor, which is what
 * lets it descend without locks (on a thread the flavor counts, as that
 * lock and its call_rcu require: the front end sees to it for the call,
 * lib/rcu-reg.h), and then locks and validates what it changes
 * (lib/trie/trie-path.h). A writer holds at most the owner(s) of one
 * node's place, that node's lock, and, while it rebuilds the node, the
 * locks of the nodes it absorbs; it never waits for a grace period.
 */
#include <stdlib.h>
#include <string.h>

#include "../rcu-reg.h"
#include "trie-build.h"
#include "trie-path.h"

/* The slot was locked, or changed under the first try (ct_t_slot_lock()). */
void ct_t_slot_lock_wait(uintptr_t *slot)
{
	unsigned int spins = 0;
	uintptr_t v;

	for (;;) {
		v = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (!(v & CT_T_LOCKED) &&
		    __atomic_compare_exchange_n(slot, &v, v | CT_T_LOCKED, true,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		ct_spin_pause(&spins);
	}
}

void ct_hold_lock(struct ct_trie *tr, const struct ct_thold *h)
{
	uint32_t j;

	if (!h->at.in)
		ct_spin_lock(&tr->root_lock);
	else if (ct_t_isk(h->at.in))
		ct_spin_lock8(&h->at.in->lock);
	else
		for (j = 0; j < h->m; j++)	/* increasing index */
			ct_t_slot_lock(ct_hold_slot(h, j));
}

void ct_hold_unlock(struct ct_trie *tr, const struct ct_thold *h)
{
	uint32_t j;

	if (!h->at.in)
		ct_spin_unlock(&tr->root_lock);
	else if (ct_t_isk(h->at.in))
		ct_spin_unlock8(&h->at.in->lock);
	else
		for (j = h->m; j-- > 0;)
			ct_t_slot_unlock(ct_hold_slot(h, j));
}

/* Under the lock: the owner is still linked, and its slot(s) hold @want. */
bool ct_hold_valid(const struct ct_thold *h, uintptr_t want)
{
	uint32_t j;

	ct_delay(CT_DP_TR_LOCK_HOLD);
	if (h->at.in && ct_t_dead(h->at.in))
		return false;
	if (!h->at.in || ct_t_isk(h->at.in))
		return __atomic_load_n(h->at.slot, __ATOMIC_RELAXED) == want;
	for (j = 0; j < h->m; j++)
		if ((__atomic_load_n(ct_hold_slot(h, j), __ATOMIC_RELAXED) &
		     ~CT_T_LOCKED) != want)
			return false;
	return true;
}

/*
 * Publish @v in the slot(s): release, so that everything @v points to,
 * initialised before, is seen by a reader that loads it (ct_w_load). A
 * dense slot keeps its lock bit until ct_hold_unlock().
 */
void ct_hold_store(const struct ct_thold *h, uintptr_t v)
{
	struct ct_trie *tr;
	uint32_t j;

	ct_delay(CT_DP_TR_PUB_HOLD);
	if (!h->at.in) {	/* the root word, in struct ct_trie */
		tr = (struct ct_trie *)(void *)((char *)h->at.slot -
						offsetof(struct ct_trie, root));
		__atomic_store_n(&tr->root_geo, ct_t_root_geo(v),
				 __ATOMIC_RELAXED);
	}
	if (!h->at.in || ct_t_isk(h->at.in)) {
		ct_rcu_assign(*h->at.slot, v);
		return;
	}
	for (j = 0; j < h->m; j++)
		ct_rcu_assign(*ct_hold_slot(h, j), v | CT_T_LOCKED);
}

/* What the place holds (its first slot). */
static uintptr_t ct_hold_word(const struct ct_thold *h)
{
	if (!h->at.in || ct_t_isk(h->at.in))
		return __atomic_load_n(h->at.slot, __ATOMIC_RELAXED);
	return __atomic_load_n(ct_hold_slot(h, 0), __ATOMIC_RELAXED) &
	       ~CT_T_LOCKED;
}

enum ct_class ct_hold_class(const struct ct_thold *h, uintptr_t v)
{
	if (!h->at.in || ct_t_isk(h->at.in))
		return CT_C_EMPTY;
	return ct_d_class(h->at.in, h->lo, v);
}

void ct_hold_reclass(const struct ct_thold *h, enum ct_class c0,
		     enum ct_class c1)
{
	if (!h->at.in || ct_t_isk(h->at.in) || c0 == c1)
		return;
	/*
	 * Only the first slot's class can change: the other slots of a
	 * shared child are light whatever it holds (lib/trie/trie-resize.c),
	 * and a shared child is replaced only by ct_k_unshare().
	 */
	ct_d_count(h->at.in, c0, -1);
	ct_d_count(h->at.in, c1, 1);
}

/*
 * Reader-style descent for the string @s, recording the path: stops at a
 * slot holding 0 or a leaf, or in a sparse node without a live entry for
 * s's value.
 */
void ct_t_descend(struct ct_trie *tr, const uint8_t *s, struct ct_tpath *pa)
{
	struct ct_tslot cur = { &tr->root, NULL, 0, 0 };
	struct ct_tnode *x;
	unsigned int end;
	uint32_t c;
	uintptr_t p;
	int i;

	pa->n = 0;
	pa->kmiss = false;
	pa->kskip = false;
	pa->dskip = NULL;
	for (;;) {
		pa->at[pa->n] = cur;
		p = ct_w_load(cur.slot);
		if (!p && cur.in && ct_t_isk(cur.in)) {
			/*
			 * The entry was live when looked up and is a
			 * tombstone now: a miss in the sparse node, which
			 * only ct_t_k_add() or ct_t_insert_fast() may fill
			 * (they keep the live count, and the class, right).
			 */
			x = cur.in;
			pa->kmiss = true;
			pa->ki = (int)cur.idx;
			pa->v = ct_bits(s, x->pos, x->w);
			pa->end = 0;
			return;
		}
		if (!p || ct_w_leaf(p) || pa->n == CT_T_DEPTH) {
			pa->end = ct_w_leaf(p) ? p : 0;
			return;
		}
		ct_t_prefetch_tail(p);
		x = ct_w_tn(p);
		pa->x[pa->n++] = x;
		if (x->pos > cur.pend) {
			if (ct_t_isk(x))
				pa->kskip = true;
			else
				pa->dskip = x;
		}
		end = ct_t_end(x) > cur.pend ? ct_t_end(x) : cur.pend;
		c = ct_bits(s, x->pos, x->w);
		if (!ct_t_isk(x)) {
			cur = (struct ct_tslot){ &ct_d(x)->kid[c], x, c, end };
			continue;
		}
		i = ct_k_find(x, c);
		if (i >= 0 && ct_w_load(&ct_k_kid(x)[i])) {
			cur = (struct ct_tslot){ &ct_k_kid(x)[i], x,
						 (uint32_t)i, end };
			continue;
		}
		pa->kmiss = true;
		pa->ki = i;
		pa->v = c;
		pa->end = 0;
		return;
	}
}

/*
 * The first bit at which @s leaves the keys below the path's last node,
 * or @L if it does not (then, with a leaf at the end, the key is there).
 * Into @rep, a string of those keys: bits [0, pos) of every node on the
 * path are right in it (the prefix a rebuilt node needs). Skipped bits
 * up to a dense node are in its prefix; below a sparse node that skips,
 * one key of the subtree is read.
 */
static unsigned int ct_t_diverge(const uint8_t *s, unsigned int L,
				 const struct ct_tpath *pa, uint8_t *rep)
{
	struct ct_tnode *z = pa->n ? pa->x[pa->n - 1] : NULL;
	struct conntab_node *n = NULL;
	unsigned int d, lim;

	if (pa->end) {
		ct_key_str(&ct_w_node(pa->end)->ct_key, rep);
		d = ct_str_diff(s, rep, CT_KEY_STR_MAX);
		return d < L ? d : L;
	}
	memcpy(rep, s, CT_KEY_STR_BUF);
	if (!pa->kskip && !pa->dskip)
		return L;
	if (!ct_t_isk(z)) {		/* an empty slot of z */
		memcpy(rep, ct_d(z)->prefix, CT_KEY_STR_MAX);
		lim = z->pos;
	} else if (pa->kskip) {
		n = ct_t_first_leaf((uintptr_t)z, s, pa->at[pa->n - 1].pend);
		if (!n)
			n = ct_t_first_leaf((uintptr_t)z, s, 0);
		if (!n)
			return L;
		ct_key_str(&n->ct_key, rep);
		lim = z->pos;
	} else {
		memcpy(rep, ct_d(pa->dskip)->prefix, CT_KEY_STR_MAX);
		lim = pa->dskip->pos;
	}
	d = ct_str_diff(s, rep, (lim + 7) / 8);
	return d < lim ? d : L;
}

struct ct_tins {
	struct ct_trie *tr;
	uintptr_t leaf;			/* the new node's child word */
	const uint8_t *s;
	unsigned int L;
	struct conntab_node **recycled;
	bool held;		/* the caller holds a reservation for it */
	bool fix;		/* a dense node on the path wants reshaping */
};

/*
 * Count the new entry against max_entries, unless the caller did. Inline:
 * out of line (seven callers) it was a call on every insert's fast path.
 */
static inline __attribute__((always_inline)) bool
ct_t_reserve(struct ct_tins *ins)
{
	return ins->held || ct_reserve(&ins->tr->base, ct_w_node(ins->leaf));
}

static inline void ct_t_unreserve(struct ct_tins *ins)
{
	if (!ins->held)
		ct_unreserve(&ins->tr->base, ct_w_node(ins->leaf));
}

static void ct_t_count(struct ct_trie *tr, long entries, long timewait)
{
	struct ct_trie_count *c = ct_t_cnt(tr);

	if (entries)
		__atomic_add_fetch(&c->entries, entries, __ATOMIC_RELAXED);
	if (timewait)
		__atomic_add_fetch(&c->timewait, timewait, __ATOMIC_RELAXED);
}

/* After a class changed in @h's dense owner: does it want reshaping? */
static void ct_t_note_fix(const struct ct_thold *h, bool *fix)
{
	if (h->at.in && !ct_t_isk(h->at.in) && ct_d_wants_resize(h->at.in))
		*fix = true;
}

/*
 * Sparse x[k] of the path, locked to change its entries: the owner(s) of
 * its place, then its own lock (lib/trie/trie-path.h), and its class as its
 * dense parent counted it.
 */
struct ct_klock {
	struct ct_thold h;
	struct ct_tnode *x;
	enum ct_class c0;
};

static int ct_klock(struct ct_trie *tr, const struct ct_tpath *pa,
		    unsigned int k, struct ct_klock *kl)
{
	kl->x = pa->x[k];
	ct_hold_init(&kl->h, &pa->at[k], kl->x);
	ct_hold_lock(tr, &kl->h);
	if (!ct_hold_valid(&kl->h, (uintptr_t)kl->x)) {
		ct_hold_unlock(tr, &kl->h);
		return -EAGAIN;
	}
	ct_spin_lock8(&kl->x->lock);
	kl->c0 = ct_hold_class(&kl->h, (uintptr_t)kl->x);
	return 0;
}

/*
 * Count the class of what the place holds now (x, or what replaced it)
 * unless @counted (ct_k_unshare() counted each piece), and unlock.
 */
static void ct_kunlock(struct ct_trie *tr, struct ct_klock *kl, bool counted,
		       bool *fix)
{
	uintptr_t now = ct_hold_word(&kl->h);

	if (!counted)
		ct_hold_reclass(&kl->h, kl->c0, ct_hold_class(&kl->h, now));
	ct_t_note_fix(&kl->h, fix);
	ct_spin_unlock8(&kl->x->lock);
	ct_hold_unlock(tr, &kl->h);
}

static bool ct_hold_anchored_end(const struct ct_thold *h, unsigned int q)
{
	return ct_t_anchored(h->at.in) && q == ct_t_end(h->at.in);
}

/*
 * Put @w, built privately, where @h held @old, and count the class
 * change in a dense owner. The caller holds @h. ct_hold_store() is the
 * release store that publishes everything in @w's subtree to readers,
 * whose ct_w_load() of the slot pairs with it.
 */
static void ct_t_publish(struct ct_tins *ins, const struct ct_thold *h,
			 uintptr_t old, uintptr_t w)
{
	enum ct_class c0 = ct_hold_class(h, old);

	ct_hold_store(h, w);
	ct_hold_reclass(h, c0, ct_hold_class(h, w));
	ct_t_note_fix(h, &ins->fix);
}

/*
 * Replace what @h holds (@old) by the subtrie of @it built from the
 * slot's position on; the caller holds @h and the locks of what the
 * items come from.
 */
static int ct_t_rebuild(struct ct_tins *ins, const struct ct_thold *h,
			uintptr_t old, struct ct_bitem *it, unsigned int n)
{
	struct ct_build b = { .tr = ins->tr, .L = ins->L };
	uintptr_t w;
	int err;

	err = ct_build(&b, it, n, h->at.pend, ct_hold_anchored_end(h, h->at.pend),
		       &w);
	if (err)
		return err;
	ct_t_publish(ins, h, old, w);
	return 0;
}

/* The path ends at an empty slot: link the leaf there. */
static int ct_t_fill(struct ct_tins *ins, const struct ct_tpath *pa)
{
	struct ct_thold h;
	int err = 0;

	ct_hold_init(&h, &pa->at[pa->n], NULL);
	ct_hold_lock(ins->tr, &h);
	if (!ct_hold_valid(&h, 0)) {
		err = -EAGAIN;
	} else if (!ct_t_reserve(ins)) {
		err = -ENOSPC;
	} else {
		ct_hold_store(&h, ins->leaf);
		ct_hold_reclass(&h, CT_C_EMPTY, ct_hold_class(&h, ins->leaf));
		ct_t_note_fix(&h, &ins->fix);
	}
	ct_hold_unlock(ins->tr, &h);
	return err;
}

/*
 * The path ends at another key's leaf, whose string @rep parts from the
 * new key's at bit @d: the two part below the path, in a sparse node of
 * two (ct_build_pair()). In a sparse node that changes the kind of one
 * of its entries (a leaf becomes a node), which its class in a dense
 * parent may depend on, so the node is locked as for a change of its
 * entries.
 */
static int ct_t_leaf_split(struct ct_tins *ins, const struct ct_tpath *pa,
			   unsigned int d, const uint8_t *rep)
{
	struct ct_tnode *in = pa->at[pa->n].in;
	struct ct_klock kl;
	struct ct_thold h;
	uintptr_t w;
	int err = 0;

	if (in && ct_t_isk(in) && ct_klock(ins->tr, pa, pa->n - 1, &kl))
		return -EAGAIN;
	ct_hold_init(&h, &pa->at[pa->n], NULL);
	if (!(in && ct_t_isk(in)))
		ct_hold_lock(ins->tr, &h);
	if (!ct_hold_valid(&h, pa->end)) {
		err = -EAGAIN;
	} else if (!ct_t_reserve(ins)) {
		err = -ENOSPC;
	} else {
		err = ct_build_pair(ins->tr, ins->L, h.at.pend, d, rep,
				    pa->end, ins->s, ins->leaf, &w);
		if (err)
			ct_t_unreserve(ins);
		else
			ct_t_publish(ins, &h, pa->end, w);
	}
	if (in && ct_t_isk(in))
		ct_kunlock(ins->tr, &kl, false, &ins->fix);
	else
		ct_hold_unlock(ins->tr, &h);
	return err;
}

/* Mark @x unlinked: writers that lock it from now on start again. */
static void ct_t_kill(struct ct_tnode *x)
{
	ct_delay(CT_DP_TR_UNLINK_KILL);
	ct_t_mark(x, CT_T_DEAD);
}

/*
 * The key leaves the prefix of x[i] at bit @d (skipped bits): a node
 * above x[i] parts them. A sparse or short node whose window starts in
 * d's byte is opened (its children become the new node's, so no sparse
 * window ends off a byte boundary); otherwise x[i] stays whole.
 */
static int ct_t_split_above(struct ct_tins *ins, const struct ct_tpath *pa,
			    unsigned int i, unsigned int d, const uint8_t *rep)
{
	struct ct_tnode *x = pa->x[i];
	bool open = (ct_t_isk(x) || ct_t_short(x)) && ct_floor8(x->pos) <= d;
	struct ct_bitem small[CT_T_KMAX + 2], *it = small;
	struct ct_build b = { .tr = ins->tr, .L = ins->L };
	const uint8_t *base = ct_t_isk(x) ? rep : ct_d(x)->prefix;
	struct ct_thold h;
	unsigned int n = 0;
	int err = 0;

	if (open && !ct_t_isk(x)) {
		it = malloc(((1u << x->w) + 1) * sizeof(*it));
		if (!it)
			return -ENOMEM;
	}
	ct_hold_init(&h, &pa->at[i], x);
	ct_hold_lock(ins->tr, &h);
	if (!ct_hold_valid(&h, (uintptr_t)x)) {
		err = -EAGAIN;
		goto unlock;
	}
	if (!ct_t_reserve(ins)) {
		err = -ENOSPC;
		goto unlock;
	}
	if (open) {
		ct_t_lock_node(x);
		n = ct_bitems_open(x, base, it);
	} else {
		it[0].kid = (uintptr_t)x;
		memcpy(it[0].s, base, CT_KEY_STR_BUF);
		it[0].lim = x->pos;
		n = 1;
	}
	ct_bitem_leaf(&b, &it[n++], ins->leaf);
	err = ct_t_rebuild(ins, &h, (uintptr_t)x, it, n);
	if (err)
		ct_t_unreserve(ins);
	else if (open)
		ct_t_kill(x);
	if (open)
		ct_t_unlock_node(x);
unlock:
	ct_hold_unlock(ins->tr, &h);
	if (!err && open)
		ct_t_retire(ins->tr, x);
	if (it != small)
		free(it);
	return err;
}

/* A copy of sparse @x with its live entries (and @v -> @kid if nonzero). */
static struct ct_tnode *ct_k_copy(struct ct_trie *tr, struct ct_tnode *x,
				  uint32_t v, uintptr_t kid, unsigned int slack)
{
	uint16_t val[CT_T_KMAX + 1];
	uintptr_t kids[CT_T_KMAX + 1];
	unsigned int i, m = 0;

	for (i = 0; i < x->n; i++) {
		if (!ct_k_kid(x)[i])
			continue;
		val[m] = ct_k_val(x)[i];
		kids[m++] = ct_k_kid(x)[i];
	}
	if (kid) {
		val[m] = (uint16_t)v;
		kids[m++] = kid;
	}
	return ct_k_make(tr, x->pos, x->w, val, kids, m, slack);
}

/*
 * Full sparse @x grown by @v -> @kid: a copy with room for half as many
 * entries again (it was an eighth), so a node that keeps filling is
 * copied about a quarter as often. At 1M random keys (conntab-bench
 * memory and insert, doc/performance.md) that is 14.8 B/entry instead
 * of 12.7, and a sixth of an insert's instructions fewer (837 -> 703 at
 * 256K). Memory stays within the bound of lib/trie/trie.c, which rests on
 * compaction (ct_k_shrink()), not on growth.
 */
static struct ct_tnode *ct_k_grow(struct ct_trie *tr, struct ct_tnode *x,
				  uint32_t v, uintptr_t kid)
{
	unsigned int n = x->n, slack = (x->live + 1u) / 2;
	struct ct_tnode *y;

	if (x->live != n)	/* tombstones: compact them (ct_k_copy()) */
		return ct_k_copy(tr, x, v, kid, slack);
	/*
	 * No tombstone (a node that only grew, the common case): the
	 * arrays as they are, and the new entry after them, straight into
	 * the copy, without ct_k_copy()'s entry-by-entry pass through
	 * arrays on the stack (a third of a growing insert's copy).
	 * Nothing in x changes under its lock, which we hold.
	 */
	y = ct_k_alloc(tr, ct_k_capfor(n + 1u + slack), x->pos, x->w);
	if (!y)
		return NULL;
	memcpy(ct_k_val(y), ct_k_val(x), n * sizeof(uint16_t));
	memcpy(ct_k_kid(y), ct_k_kid(x), n * sizeof(uintptr_t));
	ct_k_val(y)[n] = (uint16_t)v;
	ct_k_kid(y)[n] = kid;
	y->n = y->live = (uint8_t)(n + 1u);
	return y;
}

/*
 * Shared sparse @x (h: all its slots, and x's lock, held) becomes one
 * piece per slot: the entries whose bits in the parent's window are the
 * slot's, in a sparse node over the rest of x's window (or the one kid,
 * or nothing). @c0 is the class the first slot was counted in (x may
 * have changed since); the others were light. Pieces of at most one
 * entry need no memory.
 */
int ct_k_unshare(struct ct_trie *tr, const struct ct_thold *h,
		 struct ct_tnode *x, enum ct_class c0)
{
	unsigned int sh = ct_t_end(h->at.in) - x->pos;
	unsigned int ov = sh < x->w ? sh : x->w;
	struct ct_build b = { .tr = tr };
	uintptr_t piece[64], *pieces = piece, p;
	/*
	 * At most one live entry (a removal's collapse, ct_k_shrink()):
	 * every piece is that kid or nothing, made in the loop that stores
	 * it, with no array and no memory, so this cannot fail and neither
	 * can the removal.
	 */
	bool direct = x->live <= 1;
	enum ct_class old;
	uint32_t j;

#define CT_K_WANT(j)	(((h->lo + (j)) & (h->m - 1)) >> (sh - ov))
	if (!direct && h->m > 64) {
		pieces = calloc(h->m, sizeof(*pieces));
		if (!pieces)
			return -ENOMEM;
	}
	for (j = 0; !direct && j < h->m; j++) {
		if (ct_k_piece(&b, x, ov, CT_K_WANT(j), &pieces[j])) {
			ct_build_abort(&b);
			if (pieces != piece)
				free(pieces);
			return -ENOMEM;
		}
	}
	for (j = 0; j < h->m; j++) {
		if (direct)
			ct_k_piece(&b, x, ov, CT_K_WANT(j), &p);
		else
			p = pieces[j];
		old = j ? ct_d_class(h->at.in, h->lo + j, (uintptr_t)x) : c0;
		ct_delay(CT_DP_TR_PUB_UNSHARE);
		ct_rcu_assign(*ct_hold_slot(h, j), p | CT_T_LOCKED);
		ct_d_count(h->at.in, old, -1);
		ct_d_count(h->at.in, ct_d_class(h->at.in, h->lo + j, p), 1);
	}
#undef CT_K_WANT
	ct_t_kill(x);
	if (pieces != piece)
		free(pieces);
	return 0;
}

/*
 * The path ends in sparse x (no live entry for the key's value): add
 * one, in place when there is room (entries are written before the
 * count that publishes them), else in a copy with room, else (full) a
 * burst into a subtrie. A shared x is first cut into its pieces.
 */
static int ct_t_k_add(struct ct_tins *ins, const struct ct_tpath *pa)
{
	struct ct_trie *tr = ins->tr;
	struct ct_bitem it[CT_T_KMAX + 1];
	struct ct_build b = { .tr = tr, .L = ins->L };
	struct ct_tnode *x, *y;
	struct ct_klock kl;
	unsigned int n;
	uintptr_t w;
	int i, err = 0;
	bool gone = false, counted = false;

	if (ct_klock(tr, pa, pa->n - 1, &kl))
		return -EAGAIN;
	x = kl.x;
	i = ct_k_find(x, pa->v);
	if (i >= 0 && ct_k_kid(x)[i]) {
		err = -EAGAIN;		/* a key of this value came in */
	} else if (i < 0 && x->n == x->cap && kl.h.m > 1) {
		err = ct_k_unshare(tr, &kl.h, x, kl.c0);
		gone = counted = !err;
		if (!err)
			err = -EAGAIN;
	} else if (!ct_t_reserve(ins)) {
		err = -ENOSPC;
	} else if (i >= 0) {
		ct_delay(CT_DP_TR_PUB_K_ENTRY);
		ct_rcu_assign(ct_k_kid(x)[i], ins->leaf);
		ct_k_live_set(x, x->live + 1u);
	} else if (x->n < x->cap) {
		n = x->n;
		ct_k_val(x)[n] = (uint16_t)pa->v;
		ct_delay(CT_DP_TR_PUB_K_ENTRY);
		ct_rcu_assign(ct_k_kid(x)[n], ins->leaf);
		ct_delay(CT_DP_TR_PUB_K_COUNT);
		__atomic_store_n(&x->n, (uint8_t)(n + 1), __ATOMIC_RELEASE);
		ct_k_live_set(x, x->live + 1u);
	} else if (x->live < CT_T_KMAX) {
		y = ct_k_grow(tr, x, pa->v, ins->leaf);
		if (!y) {
			ct_t_unreserve(ins);
			err = -ENOMEM;
		} else {
			ct_hold_store(&kl.h, (uintptr_t)y);
			gone = true;
		}
	} else {
		/* Full: the entries and the key, from the slot's bit on. */
		n = ct_bitems_open(x, ins->s, it);
		ct_bitem_leaf(&b, &it[n++], ins->leaf);
		/*
		 * A root that bursts may be built to the sizing hint, once
		 * a table: tr->hint_w is read and cleared under root_lock,
		 * which owns the root word (kl.h).
		 */
		if (!kl.h.at.in)
			b.minw = tr->hint_w;
		err = ct_build(&b, it, n, kl.h.at.pend,
			       ct_hold_anchored_end(&kl.h, kl.h.at.pend), &w);
		if (err) {
			ct_t_unreserve(ins);
		} else {
			ct_hold_store(&kl.h, w);
			if (!kl.h.at.in && tr->hint_w && !b.minw)
				tr->hint_w = 0;
		}
		gone = !err;
	}
	if (gone)
		ct_t_kill(x);
	ct_kunlock(tr, &kl, counted, &ins->fix);
	if (gone)
		ct_t_retire(tr, x);
	return err;
}

/*
 * The writers' fast paths. Most changes are one entry of an unshared
 * sparse node x in a dense node's slot: x is not replaced, so only the
 * entry changes, and x's class in the parent (counted under the slot's
 * lock) when it crosses a threshold. They descend as readers do, without
 * recording a path, and take the locks the general path takes (the slot,
 * then x's own, lib/trie/trie-path.h); anything else goes to the general path,
 * with nothing changed. The helpers are inlined into both fast paths:
 * out of line (two callers), they cost a remove ~60 of its ~640
 * instructions (callgrind, 256K keys).
 */
struct ct_tfast {
	struct ct_tnode *d, *x;	/* x is in d's slot di, *slot */
	uintptr_t *slot;
	uint32_t di;
	int ki;			/* x's entry for the key's value, or -1 */
	uintptr_t kid;		/* what that entry holds */
	uintptr_t *kids;	/* ct_k_kid(x): x->cap never changes */
	uint32_t v;		/* the key's value in x's window */
	unsigned int kn;	/* with check: x->n before ki was looked for */
};

/*
 * Do @s and dense @x's prefix agree in bits [0, x->pos)? One word when
 * x->pos <= 64 (a root's skip of the bits every key shares, at most
 * zone, protocol, family and part of the ports: the check on most
 * inserts), else ct_str_prefix_eq()'s loop. x->pos > 0 here (it skips).
 */
static inline bool ct_t_prefix_eq(const uint8_t *s, struct ct_tnode *x)
{
	unsigned int pos = x->pos;

	if (__builtin_expect(pos <= 64, 1))
		return !((ct_load_be64(s) ^ ct_load_be64(ct_d(x)->prefix)) >>
			 (64 - pos));
	return ct_str_prefix_eq(s, ct_d(x)->prefix, pos);
}

/*
 * Sparse @x, reached through @slot of dense @in (index @di) with the
 * key's value @c in its window, x's place the slot alone (x->pos is
 * in's end): look up c's entry. True if the descent ends in x (no kid,
 * or a leaf), with *f filled; false if the entry holds a node, to go on
 * below it.
 */
static inline __attribute__((always_inline)) bool
ct_t_fast_entry(struct ct_tnode *in, uintptr_t *slot, uint32_t di,
		struct ct_tnode *x, uint32_t c, bool check, struct ct_tfast *f)
{
	/*
	 * Loaded before ct_k_find() loads it, so no more than it
	 * scanned (read-read coherence; x->n only grows while x is
	 * linked: ct_t_insert_fast()).
	 */
	if (check)
		f->kn = __atomic_load_n(&x->n, __ATOMIC_RELAXED);
	f->ki = ct_k_find(x, c);
	f->kids = ct_k_kid(x);
	f->kid = f->ki < 0 ? 0 : ct_w_load(&f->kids[f->ki]);
	if (f->kid && !ct_w_leaf(f->kid))
		return false;
	f->d = in;
	f->x = x;
	f->slot = slot;
	f->di = di;
	f->v = c;
	return true;
}

/*
 * With @check (an insert), the key must be known to belong where the
 * descent ends: bits a node skips are checked against a dense node's
 * prefix, and a sparse node that skips bits sends the insert to the
 * general path (ct_t_diverge() reads a key below it). A remove needs
 * no check: it finds its own leaf or nothing.
 *
 * The shape of most tables is taken first, in a straight line: a dense
 * root (skipping the bits every key shares, checked against its prefix
 * in one word) and in its slot an unshared sparse node that starts
 * where the root's window ends, so that it skips nothing and its place
 * is the one slot. The loop below, which takes any shape, tracks the
 * depth, the bits fixed above and the node each step came from, and
 * tests them at every level: through it the two levels of this shape
 * were ~150 instructions of an insert at 256K random keys, in this
 * line ~90 (ct-icount, trie, callgrind). Any other shape, or an entry
 * of x holding a node, goes on in the loop from the last slot taken,
 * whose word it reads again: a descent is a snapshot under no lock
 * either way, validated by the caller under its locks
 * (ct_t_fast_lock()).
 */
static inline __attribute__((always_inline)) bool
ct_t_fast_find(struct ct_trie *tr, const uint8_t *s, bool check,
	       struct ct_tfast *f)
{
	uintptr_t *slot = &tr->root, p;
	struct ct_tnode *in = NULL, *x;
	unsigned int k = 0, pend = 0;
	uint32_t c, di = 0;

	p = ct_w_load(slot);
	if (!p || ct_w_leaf(p))
		return false;
	x = ct_w_tn(p);
	if (__builtin_expect(!ct_t_isk(x), 1)) {
		if (check && x->pos && !ct_t_prefix_eq(s, x))
			return false;
		in = x;
		pend = ct_t_end(x);
		di = ct_bits(s, x->pos, x->w);
		slot = &ct_d(x)->kid[di];
		k = 1;
		p = ct_w_load(slot);
		if (!p || ct_w_leaf(p))
			return false;
		ct_t_prefetch_tail(p);
		x = ct_w_tn(p);
		if (__builtin_expect(ct_t_isk(x) && x->pos == pend, 1)) {
			c = ct_bits(s, pend, x->w);
			if (ct_t_fast_entry(in, slot, di, x, c, check, f))
				return true;
			/* x's entry holds a node: on below it */
			in = x;
			slot = &f->kids[f->ki];
			if (ct_t_end(x) > pend)
				pend = ct_t_end(x);
			k = 2;
		}
	}
	for (; k < CT_T_DEPTH; k++) {
		p = ct_w_load(slot);
		if (!p || ct_w_leaf(p))
			return false;
		if (in)
			ct_t_prefetch_tail(p);
		x = ct_w_tn(p);
		if (check && x->pos > pend &&
		    (ct_t_isk(x) || !ct_t_prefix_eq(s, x)))
			return false;
		if (ct_t_end(x) > pend)
			pend = ct_t_end(x);
		c = ct_bits(s, x->pos, x->w);
		if (!ct_t_isk(x)) {
			in = x;
			di = c;
			slot = &ct_d(x)->kid[c];
			continue;
		}
		if (in && !ct_t_isk(in) && x->pos >= ct_t_end(in)) {
			if (ct_t_fast_entry(in, slot, di, x, c, check, f))
				return true;
		} else {
			/* only to go on below x: x's place is not one slot */
			f->ki = ct_k_find(x, c);
			f->kids = ct_k_kid(x);
			f->kid = f->ki < 0 ? 0 : ct_w_load(&f->kids[f->ki]);
			if (!f->kid || ct_w_leaf(f->kid))
				return false;
		}
		in = x;
		slot = &f->kids[f->ki];
	}
	return false;
}

/* Lock x's place and x, as ct_klock() does; false if x has moved. */
static inline __attribute__((always_inline)) bool
ct_t_fast_lock(const struct ct_tfast *f)
{
	ct_t_slot_lock(f->slot);
	ct_delay(CT_DP_TR_LOCK_FAST);
	if (ct_t_dead(f->d) ||
	    (__atomic_load_n(f->slot, __ATOMIC_RELAXED) & ~CT_T_LOCKED) !=
	    (uintptr_t)f->x) {
		ct_t_slot_unlock(f->slot);
		return false;
	}
	ct_spin_lock8(&f->x->lock);
	return true;
}

/* Unlock what ct_t_fast_lock() locked, nothing changed. */
static inline __attribute__((always_inline)) void
ct_t_fast_drop(const struct ct_tfast *f)
{
	ct_spin_unlock8(&f->x->lock);
	ct_t_slot_unlock(f->slot);
}

/*
 * x's class before a change of its entries, when the change may move it
 * (@moves, ct_k_class_moves()); else nothing to count.
 */
static inline __attribute__((always_inline)) enum ct_class
ct_t_fast_class(const struct ct_tfast *f, bool moves)
{
	return moves ? ct_d_class(f->d, f->di, (uintptr_t)f->x) : CT_C_EMPTY;
}

/*
 * x's class was @c0 before a change of its entries (@moves as above):
 * count the new one. Only then can the parent come to want reshaping
 * (its counts are all it looks at), so a change that keeps the class
 * leaves the check out.
 */
static inline __attribute__((always_inline)) void
ct_t_fast_unlock(const struct ct_tfast *f, bool moves, enum ct_class c0,
		 bool *fix)
{
	uintptr_t now;
	enum ct_class c1;

	if (moves) {
		now = __atomic_load_n(f->slot, __ATOMIC_RELAXED) & ~CT_T_LOCKED;
		c1 = ct_d_class(f->d, f->di, now);
		if (c1 != c0) {
			ct_d_count(f->d, c0, -1);
			ct_d_count(f->d, c1, 1);
			*fix = ct_d_wants_resize(f->d);
		}
	}
	ct_spin_unlock8(&f->x->lock);
	ct_t_slot_unlock(f->slot);
}

/*
 * Insert into such an x when the key belongs there and x has no live
 * entry for its value: in place (a tombstone of the value, or room at
 * the end), or in a copy with room, as ct_t_k_add() does; its other
 * cases (a shared or full x) and every other path go to the general
 * path. 1 if not done (nothing changed), else 0 or the error. Inline
 * by force: ct_t_insert_str() has two copies, and with both gcc took
 * this out of line, its struct ct_tins through memory (+48
 * instructions an insert, ct-icount, trie, 256K).
 */
static inline __attribute__((always_inline)) int
ct_t_insert_fast(struct ct_tins *ins)
{
	struct ct_trie *tr = ins->tr;
	struct ct_tnode *x, *y;
	struct ct_tfast f;
	enum ct_class c0;
	bool moves;
	unsigned int n, live;
	uint32_t v;
	int i;

	/*
	 * d's slot too, even where x's class stays, unlike the remove
	 * (ct_t_remove_fast()): a halving reads x's entries under d's
	 * slots alone before it locks x, and counts on none being added
	 * (ct_d_merge_fast()).
	 */
	if (!ct_t_fast_find(tr, ins->s, true, &f) || f.kid ||
	    !ct_t_fast_lock(&f))
		return 1;
	x = f.x;
	v = f.v;
	/*
	 * v's entry, under the lock, without a second search: values in
	 * val[0, n) never change once published and occur there once, so
	 * an entry found is still v's; and x->n grows only under x's lock,
	 * which we hold, by appending, so if it is still f.kn the search
	 * missed nothing (kn was loaded before it). Else, look again.
	 */
	i = f.ki;
	if (i < 0 && x->n != f.kn)
		i = ct_k_find(x, v);
	if ((i >= 0 && f.kids[i]) ||
	    (i < 0 && x->n == x->cap && x->live >= CT_T_KMAX)) {
		ct_t_fast_drop(&f);
		return 1;
	}
	if (!ct_t_reserve(ins)) {
		ct_t_fast_drop(&f);
		return -ENOSPC;
	}
	/*
	 * x->live changes only under x's lock, which we hold: read once
	 * (the release stores below would make the compiler read it again).
	 */
	live = x->live;
	moves = ct_k_class_moves(x, live);	/* live -> live + 1 */
	c0 = ct_t_fast_class(&f, moves);
	y = NULL;
	/*
	 * Publication, as in ct_t_k_add(): the kid's release store pairs
	 * with a reader's ct_w_load() of it; an appended entry's value and
	 * kid are written before the release store of n that covers them,
	 * which pairs with the acquire load of n in ct_k_find().
	 */
	if (i >= 0) {
		ct_delay(CT_DP_TR_PUB_K_ENTRY);
		ct_rcu_assign(f.kids[i], ins->leaf);
		ct_k_live_set(x, live + 1u);
	} else if (x->n < x->cap) {
		n = x->n;
		ct_k_val(x)[n] = (uint16_t)v;
		ct_delay(CT_DP_TR_PUB_K_ENTRY);
		ct_rcu_assign(f.kids[n], ins->leaf);
		ct_delay(CT_DP_TR_PUB_K_COUNT);
		__atomic_store_n(&x->n, (uint8_t)(n + 1), __ATOMIC_RELEASE);
		ct_k_live_set(x, live + 1u);
	} else {
		y = ct_k_grow(tr, x, v, ins->leaf);
		if (!y) {
			ct_t_unreserve(ins);
			ct_t_fast_drop(&f);
			return -ENOMEM;
		}
		/* Publishes y; the slot stays locked until unlocked below. */
		ct_delay(CT_DP_TR_PUB_COPY);
		ct_rcu_assign(*f.slot, (uintptr_t)y | CT_T_LOCKED);
		ct_t_kill(x);
	}
	ct_t_fast_unlock(&f, moves, c0, &ins->fix);
	if (y)
		ct_t_retire(tr, x);
	return 0;
}

/* The key is there: -EEXIST, or recycle its TIME_WAIT node. */
static int ct_t_exists(struct ct_tins *ins, const struct ct_tpath *pa)
{
	struct conntab_node *old = ct_w_node(pa->end);
	void *o = __atomic_load_n(&old->ct_owner, __ATOMIC_ACQUIRE);
	struct ct_thold h;
	int err = 0;

	/*
	 * Found by a descent under no lock, so old may have left since:
	 * only a node still in the table (or an eviction's victim, which
	 * is in until its newcomer is) makes -EEXIST. A node already out
	 * (owner NULL: the acquire pairs with the release that ended its
	 * life, after its leaf was unlinked) is looked for again; a pair's
	 * half that another step holds is waited for by the front end
	 * (P2): that step may yet fail and take it out, as a pair insert
	 * that met -EEXIST on its other key does, and then the key was
	 * never in.
	 */
	if (o == ct_evict_mark(&ins->tr->base) && old->ct_peer)
		return CT_ECLAIMED;
	if (o != &ins->tr->base && o != ct_evict_mark(&ins->tr->base))
		return -EAGAIN;
	if (!ins->recycled)
		return -EEXIST;
	ct_hold_init(&h, &pa->at[pa->n], NULL);
	ct_hold_lock(ins->tr, &h);
	if (!ct_hold_valid(&h, pa->end)) {
		err = -EAGAIN;
	} else if (old->ct_state != CONNTAB_TIMEWAIT) {
		err = -EEXIST;
	} else if (ct_t_claimed(ins->tr, old)) {
		err = -EAGAIN;	/* an eviction's victim: wait, below */
	} else {
		/* One store: a reader finds old or n, never neither. */
		ct_hold_store(&h, ins->leaf);
		ct_node_release(old);
		ct_t_count(ins->tr, 0, -1);
		*ins->recycled = old;
	}
	ct_hold_unlock(ins->tr, &h);
	if (err == -EAGAIN)
		ct_node_wait_evict(old, &ins->tr->base);
	return err;
}

/*
 * The general path of one try (after ct_t_insert_fast() declined). Out
 * of line: its path record is two kilobytes of frame, which the fast
 * path, most inserts, does not need set up. It takes the insert's
 * struct ct_tins by value, and hands back whether a dense node wants
 * reshaping in *@fix: the caller's own copy, which no pointer leaves,
 * stays in registers on the fast path (by address, it was stored and
 * read back on every insert).
 */
static __attribute__((noinline)) int ct_t_insert1(struct ct_tins in,
						  bool *fix)
{
	uint8_t rep[CT_KEY_STR_BUF];
	struct ct_tins *ins = &in;
	struct ct_tpath pa;
	unsigned int d, i;
	int err;

	ins->fix = false;
	ct_t_descend(ins->tr, ins->s, &pa);
	d = ct_t_diverge(ins->s, ins->L, &pa, rep);
	if (pa.end && d >= ins->L) {
		err = ct_t_exists(ins, &pa);
		goto out;
	}
	if (d < ins->L)
		for (i = 0; i < pa.n; i++)
			if (pa.x[i]->pos > d) {
				err = ct_t_split_above(ins, &pa, i, d, rep);
				goto out;
			}
	if (pa.kmiss)
		err = ct_t_k_add(ins, &pa);
	else if (pa.end)
		err = ct_t_leaf_split(ins, &pa, d, rep);
	else
		err = ct_t_fill(ins, &pa);
out:
	*fix = ins->fix;
	return err;
}

/*
 * Prefetch, for writing, the root slot of the string @s, where a writer
 * starts its descent. Called where no RCU read lock is held (or not yet),
 * so the root node may be freed under us and nothing is loaded from it:
 * the slot's address comes from tr->root_geo, which may belong to
 * another root than the word read with it, and then the prefetch is of
 * a wrong address, which costs a line and faults nothing. The window
 * stays inside the string's buffer (ct_bits()) whatever root it was
 * read from.
 */
static inline void ct_t_prefetch_root(struct ct_trie *tr, const uint8_t *s)
{
	uint32_t geo = __atomic_load_n(&tr->root_geo, __ATOMIC_RELAXED);
	uintptr_t p = __atomic_load_n(&tr->root, __ATOMIC_RELAXED);

	/* Integer arithmetic: the slot may lie outside p's node. */
	if (geo && p && !ct_w_leaf(p))
		__builtin_prefetch((void *)(p + offsetof(struct ct_dnode, kid) +
					    sizeof(uintptr_t) *
					    ct_bits(s, geo >> 8, geo & 0xff)),
				   1);
}

/*
 * The front end calls this before it claims the node (lib/conntab.c):
 * the claim's locked compare-and-swap on the node's cold line holds
 * every later load back until that line is in, so the descent's first
 * miss, the root slot, would come after it; prefetched here, the two
 * overlap (at 1M random keys an insert then stalls on the sparse node
 * below the slot only: doc/performance.md).
 */
void ct_trie_prefetch(struct conntab *t, const struct conntab_key *key,
		      uint32_t hash)
{
	uint8_t s[CT_KEY_STR_BUF];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	struct ct_trie *tr = ct_trie(t);
	uint32_t geo = __atomic_load_n(&tr->root_geo, __ATOMIC_RELAXED);
	uintptr_t p = __atomic_load_n(&tr->root, __ATOMIC_RELAXED);
	unsigned int pos = geo >> 8, w = geo & 0xff;
	uint64_t lo, hi;

	/*
	 * An IPv4 key and a root window in the string's first 8 bytes
	 * (keys that part in their local address, or random ones): the
	 * slot's index from that word alone, as ct_bits() takes it from
	 * the string, without building the string, which the insert
	 * builds again (ct-icount, trie, 256K: 48 instructions of an
	 * insert went to this prefetch). The same address as
	 * ct_t_prefetch_root()'s, from the same loads.
	 */
	if (__builtin_expect(key->family == AF_INET && geo && pos + w <= 64,
			     1)) {
		if (!p || ct_w_leaf(p))
			return;
		ct_key_words4(key, &lo, &hi);
		__builtin_prefetch((void *)(p + offsetof(struct ct_dnode, kid) +
					    sizeof(uintptr_t) *
					    (uint32_t)((__builtin_bswap64(lo) <<
							pos) >> (64 - w))),
				   1);
		return;
	}
#endif
	(void)hash;
	ct_key_str(key, s);
	ct_t_prefetch_root(ct_trie(t), s);
}

/*
 * Insert @n, whose key's string is @s (@L bits), under the read lock
 * that @wl stands for (ct_writer_lock(): taken by the caller, dropped
 * here); with @held the caller already counted it against max_entries
 * and in the entries (an eviction's victim, still linked, hands both
 * over: lib/trie/trie-evict.c), and keeps them if the insert fails.
 * Inline into ct_trie_insert_key(), which builds @s before its claim,
 * for the root's prefetch too (built twice, it was ~25 instructions of
 * an insert, ct-icount, trie, 256K), and into ct_t_insert_wl().
 */
static inline __attribute__((always_inline)) int
ct_t_insert_str(struct ct_trie *tr, struct conntab_node *n,
		const uint8_t *s, unsigned int L,
		struct conntab_node **recycled, bool held, uintptr_t wl)
{
	struct ct_tins ins = {
		.tr = tr, .leaf = ct_w_of(n), .s = s, .L = L,
		.recycled = recycled, .held = held,
	};
	bool fix;
	int err;

	do {
		ins.fix = false;
		err = ct_t_insert_fast(&ins);
		if (err == 1) {
			err = ct_t_insert1(ins, &fix);
			ins.fix = fix;
		}
		if (ins.fix)
			ct_t_fix(tr, s);
	} while (err == -EAGAIN);
	ct_writer_unlock(&tr->base, wl);
	/* A recycle replaces a counted node, and so does an eviction. */
	if (!err && !held && !(recycled && *recycled))
		ct_t_count(tr, 1, 0);	/* linked ESTABLISHED (lib/conntab.c) */
	return err;
}

/*
 * Insert @n; with @held the caller already counted it against
 * max_entries and in the entries (an eviction's victim, still linked,
 * hands both over: lib/trie/trie-evict.c), and keeps them if the insert
 * fails.
 */
int ct_t_insert(struct ct_trie *tr, struct conntab_node *n,
		struct conntab_node **recycled, bool held)
{
	return ct_t_insert_wl(tr, n, recycled, held,
			      ct_writer_lock_counted(&tr->base));
}

/*
 * ct_t_insert() under the read lock that @wl stands for (ct_writer_lock():
 * taken by the caller, dropped here), its key's string built here.
 */
int ct_t_insert_wl(struct ct_trie *tr, struct conntab_node *n,
		   struct conntab_node **recycled, bool held, uintptr_t wl)
{
	uint8_t s[CT_KEY_STR_BUF];
	unsigned int L = ct_key_str(&n->ct_key, s) * 8;

	return ct_t_insert_str(tr, n, s, L, recycled, held, wl);
}

int ct_trie_insert(struct conntab *t, struct conntab_node *n,
		   struct conntab_node **recycled)
{
	return ct_t_insert(ct_trie(t), n, recycled, false);
}

/*
 * conntab_insert(), arguments checked (ops->insert_key): the front end's
 * generic path without its calls through the ops table and its tests of
 * what a plain insert never has (a hash, a rank, a recycle): the root
 * slot prefetched, the node claimed, the insert retried while another
 * writer step holds a node of the key (P2), a failed insert releasing
 * @n. On a thread the flavor does not count, the front end's path, which
 * counts it for the call (lib/rcu-reg.h).
 */
int ct_trie_insert_key(struct conntab *t, struct conntab_node *n,
		       const struct conntab_key *key)
{
	uintptr_t wl = ct_writer_lock(t);
	uint8_t s[CT_KEY_STR_BUF];
	unsigned int L;
	int err;

	if (__builtin_expect(wl == CT_WL_UNCOUNTED, 0))
		return ct_insert_generic(t, n, key);
	/* @key is n's key once claimed: its string, for both. */
	L = ct_key_str(key, s) * 8;
	ct_t_prefetch_root(ct_trie(t), s);
	if (!ct_node_claim_key(n, t, key, 0)) {
		ct_writer_unlock(t, wl);
		return -EBUSY;
	}
	err = ct_t_insert_str(ct_trie(t), n, s, L, NULL, false, wl);
	if (__builtin_expect(err == CT_ECLAIMED, 0))
		err = ct_insert_wait(t, n);
	if (err)
		ct_node_release(n);
	return err;
}

/*
 * Lock sparse x = pa->x[k] to change its entries (lib/trie/trie-path.h). Under
 * a sparse parent, x may collapse into a leaf: an entry of the parent
 * changes kind, so the parent is locked as for a change of its entries
 * (*pk set, @kp), and x's place is then its own.
 */
static int ct_k_lock_place(struct ct_trie *tr, const struct ct_tpath *pa,
			   unsigned int k, struct ct_klock *kl,
			   struct ct_klock *kp, bool *pk, bool *fix)
{
	*pk = k > 0 && ct_t_isk(pa->at[k].in);
	if (!*pk)
		return ct_klock(tr, pa, k, kl);
	if (ct_klock(tr, pa, k - 1, kp))
		return -EAGAIN;
	kl->x = pa->x[k];
	kl->c0 = CT_C_EMPTY;
	ct_hold_init(&kl->h, &pa->at[k], kl->x);
	if (!ct_hold_valid(&kl->h, (uintptr_t)kl->x)) {
		ct_kunlock(tr, kp, false, fix);
		return -EAGAIN;
	}
	ct_spin_lock8(&kl->x->lock);
	return 0;
}

static void ct_k_unlock_place(struct ct_trie *tr, struct ct_klock *kl,
			      struct ct_klock *kp, bool pk, bool counted,
			      bool *fix)
{
	if (pk) {
		ct_spin_unlock8(&kl->x->lock);
		ct_kunlock(tr, kp, false, fix);
	} else {
		ct_kunlock(tr, kl, counted, fix);
	}
}

/*
 * Sparse x (locked as above) after it lost an entry. Invariant: a linked
 * sparse node has two live entries or more, outside its writers' lock
 * holds (a removal is its only way down, and it ends here). With one
 * left, x is replaced by it (collapse), a shared one cut into its pieces
 * (pieces of at most one entry need no memory, so that cannot fail);
 * down to a quarter of its capacity it is compacted when memory allows
 * (else it stays as it is, valid, and the next removal there tries
 * again). True if x was unlinked (to retire).
 */
static bool ct_k_shrink(struct ct_trie *tr, struct ct_klock *kl,
			bool *counted)
{
	struct ct_tnode *x = kl->x, *y;
	unsigned int i;

	if (x->live <= 1 && kl->h.m > 1) {
		if (ct_k_unshare(tr, &kl->h, x, kl->c0))
			return false;	/* not reached: see above */
		*counted = true;
		return true;		/* unshare killed it */
	}
	if (x->live == 1) {
		for (i = 0; !ct_k_kid(x)[i]; i++)
			;
		ct_hold_store(&kl->h, ct_k_kid(x)[i]);
	} else if (x->live > 1 && x->cap > 4 && 4u * x->live <= x->cap) {
		y = ct_k_copy(tr, x, 0, 0, 0);
		if (!y)
			return false;
		ct_hold_store(&kl->h, (uintptr_t)y);
	} else {
		return false;
	}
	ct_t_kill(x);
	return true;
}

/*
 * Remove @n (the leaf kid @idx of sparse x): a tombstone, then x shrinks
 * (above). @evict: the caller is the eviction that claimed n; otherwise
 * a claimed n is waited for and looked for again.
 */
static int ct_t_k_remove(struct ct_trie *tr, const struct ct_tpath *pa,
			 struct conntab_node *n, bool evict, bool *fix)
{
	uint32_t idx = pa->at[pa->n].idx;
	uintptr_t leaf = ct_w_of(n);
	struct ct_klock kl, kp;
	struct ct_tnode *x;
	bool pk, gone = false, counted = false;

	if (ct_k_lock_place(tr, pa, pa->n - 1, &kl, &kp, &pk, fix))
		return -EAGAIN;
	x = kl.x;
	if (idx < x->n && ct_k_kid(x)[idx] == leaf &&
	    ct_t_claimed(tr, n) == evict) {
		ct_delay(CT_DP_TR_UNLINK_LEAF);
		ct_rcu_store(ct_k_kid(x)[idx], 0);
		ct_k_live_set(x, x->live - 1u);
		gone = ct_k_shrink(tr, &kl, &counted);
	} else {
		idx = ~0u;	/* moved or claimed meanwhile: look again */
	}
	ct_k_unlock_place(tr, &kl, &kp, pk, counted, fix);
	if (gone)
		ct_t_retire(tr, x);
	return idx == ~0u ? -EAGAIN : 0;
}

/*
 * Does removing @n, entry f->ki of f->x, leave x as it is (two entries or
 * more, above a quarter of its capacity: ct_k_shrink() would keep it)?
 * Under x's lock.
 */
static inline __attribute__((always_inline)) bool
ct_t_remove_keeps(struct ct_trie *tr, const struct ct_tfast *f,
		  struct conntab_node *n, bool evict, unsigned int live)
{
	return f->kids[f->ki] == ct_w_of(n) && ct_t_claimed(tr, n) == evict &&
	       live >= 3 && !(f->x->cap > 4 && 4 * (live - 1) <= f->x->cap);
}

/*
 * Remove @n, an entry of such an x, where ct_k_shrink() would then
 * leave x as it is. True if done.
 *
 * Most such removes keep x's class in its dense parent d
 * (ct_k_class_moves()): they change nothing d counts and nothing of d's
 * slot, so they take x's lock alone, not the slot's too (trie-path.h,
 * "Who owns what"). The slot's lock was a locked compare-and-swap and a
 * store on the line of d's slots, which every reader of the keys there
 * reads (the drain's measurements: doc/performance.md, the sixth
 * session). Under x's lock: x not dead is linked and stays
 * so until we unlock (every writer that unlinks a sparse node holds its
 * lock and marks it dead first), so the tombstone is a remove. d not
 * dead and its slot still holding x (read under x's lock, not the
 * slot's) say x is unshared in d now, where the classes of live and
 * live - 1 are the same when ct_k_class_moves() says so. Nothing can
 * make x shared until we unlock: only an inflation of its parent does,
 * and it locks x from before it counts x's class in the new node until
 * after the old one's death (ct_keep()). The slot may change meanwhile
 * with x kept whole below a new node (ct_t_split_above()): x is then
 * unshared there (the node ends by x's start) or under a sparse node,
 * which counts no classes. Without the slot's check, x could have moved
 * under such a node, and from it into a slot pair of a later inflation
 * (a reviewer's history), before we locked it.
 */
static bool ct_t_remove_fast(struct ct_trie *tr, struct conntab_node *n,
			     const uint8_t *s, bool evict, bool *fix)
{
	uintptr_t leaf = ct_w_of(n);
	struct ct_tfast f;
	struct ct_tnode *x;
	unsigned int live;
	enum ct_class c0;
	bool moves;

	if (!ct_t_fast_find(tr, s, false, &f) || f.kid != leaf)
		return false;
	x = f.x;
	ct_spin_lock8(&x->lock);
	ct_delay(CT_DP_TR_LOCK_FAST);
	live = x->live;
	if (__builtin_expect(!ct_t_dead(x) && !ct_t_dead(f.d) &&
			     (__atomic_load_n(f.slot, __ATOMIC_RELAXED) &
			      ~CT_T_LOCKED) == (uintptr_t)x &&
			     ct_t_remove_keeps(tr, &f, n, evict, live) &&
			     !ct_k_class_moves(x, live - 1), 1)) {
		/* A tombstone, as below. */
		ct_delay(CT_DP_TR_UNLINK_LEAF);
		ct_rcu_store(f.kids[f.ki], 0);
		ct_k_live_set(x, live - 1u);
		ct_spin_unlock8(&x->lock);
		return true;
	}
	/* The class may move, or x moved: with d's slot, in lock order. */
	ct_spin_unlock8(&x->lock);
	if (!ct_t_fast_lock(&f))
		return false;
	live = x->live;
	if (!ct_t_remove_keeps(tr, &f, n, evict, live)) {
		ct_t_fast_drop(&f);
		return false;
	}
	moves = ct_k_class_moves(x, live - 1);	/* live -> live - 1 */
	c0 = ct_t_fast_class(&f, moves);
	/* A tombstone: a reader finds the leaf or 0, never anything else. */
	ct_delay(CT_DP_TR_UNLINK_LEAF);
	ct_rcu_store(f.kids[f.ki], 0);
	ct_k_live_set(x, live - 1u);
	ct_t_fast_unlock(&f, moves, c0, fix);
	return true;
}

/*
 * @n is out of the table: count it out. An eviction's victim hands its
 * place in the entries and its reservation to the newcomer already in
 * (ct_t_insert() with held), so only its TIME_WAIT count goes (!@counted).
 */
static inline void ct_t_removed(struct ct_trie *tr, struct conntab_node *n,
				bool counted)
{
	long tw = n->ct_state == CONNTAB_TIMEWAIT ? -1 : 0;

	ct_node_release(n);	/* ends an eviction's claim too */
	ct_t_count(tr, counted ? -1 : 0, tw);
	if (counted)
		ct_unreserve(&tr->base, n);
}

/*
 * One try at removing @n (-EAGAIN: moved, or claimed by an eviction):
 * the fast path, else the general one, out of line for the reason
 * ct_t_insert1() is.
 */
static __attribute__((noinline)) int
ct_t_remove_slow(struct ct_trie *tr, struct conntab_node *n, const uint8_t *s,
		 bool evict, bool counted, bool *fix)
{
	uintptr_t leaf = ct_w_of(n);
	struct ct_tpath pa;
	struct ct_thold h;
	struct ct_tnode *in;
	int err = 0;

	ct_t_descend(tr, s, &pa);
	if (pa.kmiss || pa.end != leaf)
		return -ENOENT;
	in = pa.at[pa.n].in;
	if (in && ct_t_isk(in))
		err = ct_t_k_remove(tr, &pa, n, evict, fix);
	else {
		ct_hold_init(&h, &pa.at[pa.n], NULL);
		ct_hold_lock(tr, &h);
		if (ct_hold_valid(&h, leaf) && ct_t_claimed(tr, n) == evict) {
			ct_delay(CT_DP_TR_UNLINK_LEAF);
			ct_hold_store(&h, 0);
			ct_hold_reclass(&h, ct_hold_class(&h, leaf), CT_C_EMPTY);
			ct_t_note_fix(&h, fix);
		} else {
			err = -EAGAIN;
		}
		ct_hold_unlock(tr, &h);
	}
	if (!err)
		ct_t_removed(tr, n, counted);
	return err;
}

static inline int ct_t_remove1(struct ct_trie *tr, struct conntab_node *n,
			       const uint8_t *s, bool evict, bool counted,
			       bool *fix)
{
	if (ct_t_remove_fast(tr, n, s, evict, fix)) {
		ct_t_removed(tr, n, counted);
		return 0;
	}
	return ct_t_remove_slow(tr, n, s, evict, counted, fix);
}

/*
 * Remove @n. @evict: the caller holds n's claim (an eviction's victim,
 * lib/trie/trie-evict.c, or a pair's half, lib/conntab.c); nobody else can
 * unlink n meanwhile, so it is found. Any other remover of a claimed n
 * waits for the claim to end, under no trie lock (P2): then n is gone
 * (-ENOENT) or still here, and removed. @counted: n leaves the entry
 * count and its reservation; an eviction's victim hands both to its
 * newcomer instead.
 */
int ct_t_remove(struct ct_trie *tr, struct conntab_node *n, bool evict,
		bool counted)
{
	return ct_t_remove_wl(tr, n, evict, counted,
			      ct_writer_lock_counted(&tr->base));
}

/*
 * ct_t_remove() under the read lock that @wl stands for (ct_writer_lock():
 * taken by the caller, dropped here).
 */
int ct_t_remove_wl(struct ct_trie *tr, struct conntab_node *n, bool evict,
		   bool counted, uintptr_t wl)
{
	uint8_t s[CT_KEY_STR_BUF];
	bool fix;
	int err;

	ct_key_str(&n->ct_key, s);
	ct_t_prefetch_root(tr, s);
	for (;;) {
		fix = false;
		err = ct_t_remove1(tr, n, s, evict, counted, &fix);
		if (fix)
			ct_t_fix(tr, s);
		if (err != -EAGAIN)
			break;
		if (!evict)
			ct_node_wait_evict(n, &tr->base);
	}
	ct_writer_unlock(&tr->base, wl);
	return err;
}

int ct_trie_remove(struct conntab *t, struct conntab_node *n, bool claimed)
{
	return ct_t_remove(ct_trie(t), n, claimed, true);
}

/*
 * conntab_remove() of a single node that @t owns (ops->remove_single),
 * retried while another writer step holds it (P2); on a thread the
 * flavor does not count, the front end's path.
 */
int ct_trie_remove_single(struct conntab *t, struct conntab_node *n)
{
	uintptr_t wl = ct_writer_lock(t);
	int err;

	if (__builtin_expect(wl == CT_WL_UNCOUNTED, 0))
		return ct_remove_uncounted(t, n);
	err = ct_t_remove_wl(ct_trie(t), n, false, true, wl);
	return err == CT_ECLAIMED ? ct_remove_wait(t, n) : err;
}

static int ct_t_timewait1(struct ct_trie *tr, struct conntab_node *est,
			  struct conntab_node *tw, const uint8_t *s)
{
	struct ct_thold h;
	int err;

	err = ct_t_hold_leaf(tr, s, ct_w_of(est), &h);
	if (err)
		return err;
	if (ct_t_claimed(tr, est)) {
		err = -EAGAIN;	/* an eviction's victim: wait */
	} else if (est->ct_state != CONNTAB_ESTABLISHED) {
		err = -EINVAL;
	} else if (tw == est) {
		/* Same node, same place: readers see either state. */
		ct_delay(CT_DP_TR_PUB_TW_STATE);
		__atomic_store_n(&est->ct_state, CONNTAB_TIMEWAIT,
				 __ATOMIC_RELAXED);
		ct_t_count(tr, 0, 1);
	} else {
		/* One store: a reader finds est or tw, never neither. */
		ct_hold_store(&h, ct_w_of(tw));
		ct_node_release(est);
		ct_t_count(tr, 0, 1);
	}
	ct_hold_unlock(tr, &h);
	return err;
}

int ct_trie_timewait(struct conntab *t, struct conntab_node *est,
		     struct conntab_node *tw)
{
	uint8_t s[CT_KEY_STR_BUF];
	int err;

	ct_key_str(&est->ct_key, s);
	ct_writer_read_lock(t);
	while ((err = ct_t_timewait1(ct_trie(t), est, tw, s)) == -EAGAIN)
		ct_node_wait_evict(est, t);
	ct_writer_read_unlock(t);
	return err;
}
