/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: building a subtrie for a set of disjoint subtrees (the
 * builder), and sparse nodes from (value, kid) lists.
 *
 * Every change of shape that is not an in-place slot store goes through
 * here: two leaves that part (a leaf split), a key that leaves a node's
 * prefix (a split above it), a sparse node that overflows (a burst), and
 * two slots that merge when a dense node halves. The writer that calls
 * it holds the locks of everything the items come from; what the builder
 * allocates is private until the writer publishes the top with one
 * release store, so a failed allocation frees it all and changes nothing.
 *
 * Placement (the depth bound of lib/trie/trie.c rests on it): a sparse node's
 * window ends on a byte boundary and spans at most 16 bits; a dense node
 * either starts on a byte boundary ("anchored": it may inflate and halve)
 * or ends on one and spans at most 8 bits ("short"). A node starts right
 * at the end of its parent's window when its keys part within 16 bits of
 * it (so a writer below has no skipped bits to check), else at the first
 * bit where they part.
 */
#include <stdlib.h>
#include <string.h>

#include "trie.h"
#include "trie-build.h"

/* The string of a leaf's key into @it (all its bits known). */
void ct_bitem_leaf(struct ct_build *b, struct ct_bitem *it, uintptr_t kid)
{
	it->kid = kid;
	ct_key_str(&ct_w_node(kid)->ct_key, it->s);
	it->lim = b->L;
}

/*
 * Learn more of an item's bits: a leaf's whole key; for a node, the bits
 * all its keys share (a dense node's prefix, or one key of a sparse
 * node's subtree). False if nothing more can be known.
 */
static bool ct_bitem_extend(struct ct_build *b, struct ct_bitem *it)
{
	struct conntab_node *n;
	struct ct_tnode *y;

	if (ct_w_leaf(it->kid)) {
		if (it->lim >= b->L)
			return false;
		ct_bitem_leaf(b, it, it->kid);
		return true;
	}
	y = ct_w_tn(it->kid);
	if (it->lim >= y->pos)
		return false;
	if (!ct_t_isk(y)) {
		memcpy(it->s, ct_d(y)->prefix, CT_KEY_STR_MAX);
	} else {
		n = ct_t_first_leaf(it->kid, it->s, 0);
		if (!n)
			return false;
		ct_key_str(&n->ct_key, it->s);
	}
	it->lim = y->pos;
	return true;
}

/* First bit at or after @q where @a and @c differ, below @lim; or @lim. */
static unsigned int ct_bdiff(const uint8_t *a, const uint8_t *c,
			     unsigned int lim)
{
	unsigned int d = ct_str_diff(a, c, (lim + 7) / 8);

	return d < lim ? d : lim;
}

/*
 * The first bit at or after @q at which the items differ (all agree on
 * [0, q)), learning bits where the known ones do not tell.
 */
static unsigned int ct_bitems_diff(struct ct_build *b, struct ct_bitem *it,
				   unsigned int n)
{
	unsigned int i, lim, x, d = ~0u;

	for (i = 1; i < n; i++) {
		for (;;) {
			lim = it[0].lim < it[i].lim ? it[0].lim : it[i].lim;
			x = ct_bdiff(it[0].s, it[i].s, lim);
			if (x < lim)
				break;
			if (it[0].lim <= it[i].lim) {
				if (!ct_bitem_extend(b, &it[0]) &&
				    !ct_bitem_extend(b, &it[i]))
					break;
			} else if (!ct_bitem_extend(b, &it[i]) &&
				   !ct_bitem_extend(b, &it[0])) {
				break;
			}
		}
		if (x < d)
			d = x;
	}
	return d;
}

/*
 * Learn the items' bits up to @end where they can be learnt; the least
 * any item knows then (at most @lim).
 */
static unsigned int ct_bitems_reach(struct ct_build *b, struct ct_bitem *it,
				    unsigned int n, unsigned int end)
{
	unsigned int i, lim = b->L;

	for (i = 0; i < n; i++) {
		if (it[i].lim < end)
			ct_bitem_extend(b, &it[i]);
		if (it[i].lim < lim)
			lim = it[i].lim;
	}
	return lim;
}

static int ct_bitem_cmp(const void *a, const void *c)
{
	uint32_t x = ((const struct ct_bitem *)a)->v;
	uint32_t y = ((const struct ct_bitem *)c)->v;

	return x < y ? -1 : x > y;
}

/*
 * Window [pos, end): values into it[].v, items sorted by them; returns
 * the number of distinct values.
 */
static unsigned int ct_bitems_group(struct ct_bitem *it, unsigned int n,
				    unsigned int pos, unsigned int end)
{
	unsigned int i, g = 0;

	for (i = 0; i < n; i++)
		it[i].v = ct_bits(it[i].s, pos, end - pos);
	qsort(it, n, sizeof(*it), ct_bitem_cmp);
	for (i = 0; i < n; i++)
		g += !i || it[i].v != it[i - 1].v;
	return g;
}

/* Remember @x as made by this build (freed if the build fails). */
void ct_build_keep(struct ct_build *b, struct ct_tnode *x)
{
	ct_t_head(x)->next.next = (struct cds_wfcq_node *)(void *)b->made;
	b->made = x;
}

void ct_build_abort(struct ct_build *b)
{
	struct ct_tnode *x = b->made, *next;

	for (; x; x = next) {
		next = (struct ct_tnode *)(void *)ct_t_head(x)->next.next;
		ct_t_free(b->tr, x);
	}
	b->made = NULL;
}

static int ct_build_sub(struct ct_build *b, struct ct_bitem *it,
			unsigned int n, unsigned int q, bool adj,
			uintptr_t *out);

/*
 * Children of a new node over [pos, end): one per value group, each
 * built from @end on, stored at its value (dense) or next (sparse).
 */
static int ct_build_kids(struct ct_build *b, struct ct_bitem *it,
			 unsigned int n, struct ct_tnode *x, unsigned int end,
			 bool adj)
{
	unsigned int a = 0, z, j = 0;
	uintptr_t kid;
	uint32_t v;
	int err;

	while (a < n) {
		v = it[a].v;	/* the group's build reuses .v below */
		for (z = a + 1; z < n && it[z].v == v; z++)
			;
		err = ct_build_sub(b, it + a, z - a, end, adj, &kid);
		if (err)
			return err;
		if (ct_t_isk(x)) {
			ct_k_val(x)[j] = (uint16_t)v;
			ct_k_kid(x)[j] = kid;
		} else {
			ct_d(x)->kid[v] = kid;
		}
		j++;
		a = z;
	}
	if (ct_t_isk(x))
		x->n = x->live = (uint8_t)j;
	return 0;
}

/* A dense node's prefix: bits [0, pos) of the items' (common) string. */
static void ct_d_set_prefix(struct ct_tnode *x, const uint8_t *s)
{
	uint8_t *p = ct_d(x)->prefix;
	unsigned int pos = x->pos;

	memcpy(p, s, CT_KEY_STR_MAX);
	if (pos < CT_KEY_STR_MAX * 8) {
		if (pos & 7)
			p[pos >> 3] &= (uint8_t)(0xff00 >> (pos & 7));
		memset(p + (pos + 7) / 8, 0, CT_KEY_STR_MAX - (pos + 7) / 8);
	}
}

/*
 * Widest w <= @max for an anchored dense node over the sorted values:
 * more than 3/16 of its 2^w slots get more than CT_T_KLIGHT subtrees, so
 * it does not at once want to halve (lib/trie/trie-resize.c). w = 1 always
 * qualifies: the values part at their top bit and number over 32.
 */
static unsigned int ct_bitems_width(const struct ct_bitem *it, unsigned int n,
				    unsigned int vbits, unsigned int max)
{
	unsigned int w, i, a, big;

	for (w = max; w > 1; w--) {
		for (a = 0, big = 0; a < n; a = i) {
			for (i = a + 1; i < n && (it[i].v >> (vbits - w)) ==
						 (it[a].v >> (vbits - w)); i++)
				;
			big += i - a > CT_T_KLIGHT;
		}
		if (16 * big > 3 * (1u << w))
			return w;
	}
	return 1;
}

/*
 * More than CT_T_KMAX subtrees part at bit @d: a dense node. Anchored on
 * a byte boundary (unless that is right at the end of an anchored
 * parent, which would then have to share it when it inflates), as wide
 * as its load allows (ct_bitems_width()). Otherwise a short one (or a sparse one
 * when the values of its byte are few) up to the next byte boundary.
 */
static int ct_build_dense(struct ct_build *b, struct ct_bitem *it,
			  unsigned int n, unsigned int q, unsigned int d,
			  bool adj, uintptr_t *out)
{
	unsigned int i, lim, end, w, g;
	struct ct_tnode *x;
	int err;
	bool anchored = !(d & 7) && !(adj && d == q), hinted;

	hinted = anchored && b->minw && !b->made;
	end = anchored ? d + (hinted && b->minw > 16 ? b->minw : 16) :
			 ct_floor8(d) + 8;
	lim = ct_bitems_reach(b, it, n, end);
	if (end > lim)
		end = lim;
	g = ct_bitems_group(it, n, d, end);
	if (anchored) {
		w = ct_bitems_width(it, n, end - d, end - d);
		hinted = hinted && b->minw > w;
		if (hinted)
			w = b->minw < end - d ? b->minw : end - d;
		for (i = 0; i < n; i++)
			it[i].v >>= end - d - w;
		x = ct_d_alloc(b->tr, d, w, false);
		if (x && hinted) {
			ct_t_mark(x, CT_T_HINTED);
			b->minw = 0;
		}
	} else if (g <= CT_T_KMAX) {
		w = end - d;
		x = ct_k_alloc(b->tr, ct_k_capfor(g), d, w);
	} else {
		w = end - d;
		x = ct_d_alloc(b->tr, d, w, true);
	}
	if (!x)
		return -ENOMEM;
	ct_build_keep(b, x);
	if (!ct_t_isk(x))
		ct_d_set_prefix(x, it[0].s);
	err = ct_build_kids(b, it, n, x, d + w, anchored);
	if (err)
		return err;
	if (!ct_t_isk(x))
		ct_d_recount(x);
	*out = (uintptr_t)x;
	return 0;
}

/*
 * Where a node for keys that part first at bit @d goes, below a window
 * that ends at @q (the placement rule at the top of this file): its
 * start, returned, and the end it may reach, *end (before what the keys'
 * known bits allow).
 */
static unsigned int ct_build_place(unsigned int q, unsigned int d,
				   unsigned int *end)
{
	unsigned int pos = d < ct_floor8(q + 16) ? q : d;

	*end = ct_floor8(pos + 16);
	return pos;
}

/*
 * Build the subtrie of the @n items, which agree on bits [0, q), for a
 * slot whose parent's window ends at @q (@adj: and the parent is an
 * anchored dense node).
 */
static int ct_build_sub(struct ct_build *b, struct ct_bitem *it,
			unsigned int n, unsigned int q, bool adj,
			uintptr_t *out)
{
	unsigned int d, pos, end, g, lim;
	struct ct_tnode *x;
	int err;

	if (n == 1) {
		*out = it[0].kid;
		return 0;
	}
	d = ct_bitems_diff(b, it, n);
	pos = ct_build_place(q, d, &end);
	lim = ct_bitems_reach(b, it, n, end);
	if (end > lim)
		end = ct_floor8(lim) > d ? ct_floor8(lim) : lim;
	g = ct_bitems_group(it, n, pos, end);
	if (g > CT_T_KMAX)
		return ct_build_dense(b, it, n, q, d, adj, out);
	x = ct_k_alloc(b->tr, ct_k_capfor(g), pos, end - pos);
	if (!x)
		return -ENOMEM;
	ct_build_keep(b, x);
	err = ct_build_kids(b, it, n, x, end, false);
	if (err)
		return err;
	*out = (uintptr_t)x;
	return 0;
}

int ct_build(struct ct_build *b, struct ct_bitem *it, unsigned int n,
	     unsigned int q, bool adj, uintptr_t *out)
{
	int err;

	err = ct_build_sub(b, it, n, q, adj, out);
	if (err)
		ct_build_abort(b);
	return err;
}

/*
 * What ct_build() makes of two leaves, @ka and @kb, whose key strings
 * @sa and @sb part first at bit @d, without items: the two leaves of an
 * insert's leaf split, which every insert into a slot holding a leaf
 * is. A sparse node of the two over the placed window (entries are
 * unsorted, so their order is the callers').
 */
int ct_build_pair(struct ct_trie *tr, unsigned int L, unsigned int q,
		  unsigned int d, const uint8_t *sa, uintptr_t ka,
		  const uint8_t *sb, uintptr_t kb, uintptr_t *out)
{
	unsigned int end, pos = ct_build_place(q, d, &end);
	uintptr_t kid[2] = { ka, kb };
	uint16_t val[2];
	struct ct_tnode *x;

	/* As ct_build_sub() with leaves, whose every bit is known. */
	if (end > L)
		end = L;
	val[0] = (uint16_t)ct_bits(sa, pos, end - pos);
	val[1] = (uint16_t)ct_bits(sb, pos, end - pos);
	/*
	 * Room for two more where the window has it: nearly every pair
	 * node of a fill takes a third key, and grew for it (2 -> 4 was
	 * 65K of a 1M random fill's 238K sparse copies). Capacity 4 for 2
	 * live entries is within the bound of lib/trie/trie.c (capacity <
	 * 4 x live), and ct_k_shrink() leaves it, as it leaves cap 4.
	 */
	x = ct_k_make(tr, pos, end - pos, val, kid, 2,
		      end - pos >= 2 ? 2 : 0);
	if (!x)
		return -ENOMEM;
	*out = (uintptr_t)x;
	return 0;
}

/*
 * Items for the live children of @x (a sparse or short dense node the
 * caller holds locked): each knows the bits of @x's window, and [0, pos)
 * from @base (x's prefix). Returns how many were written at @it.
 */
unsigned int ct_bitems_open(struct ct_tnode *x, const uint8_t *base,
			    struct ct_bitem *it)
{
	unsigned int i, m = 0, end = ct_t_end(x);

	if (ct_t_isk(x)) {
		for (i = 0; i < x->n; i++) {
			uintptr_t kid = ct_k_kid(x)[i];

			if (!kid)
				continue;
			it[m].kid = kid;
			memcpy(it[m].s, base, CT_KEY_STR_BUF);
			ct_putbits(it[m].s, x->pos, x->w, ct_k_val(x)[i]);
			it[m++].lim = end;
		}
		return m;
	}
	for (i = 0; i < (1u << x->w); i++) {
		uintptr_t kid = ct_d_slot(x, i);

		if (!kid)
			continue;
		it[m].kid = kid;
		memcpy(it[m].s, base, CT_KEY_STR_BUF);
		ct_putbits(it[m].s, x->pos, x->w, i);
		it[m++].lim = end;
	}
	return m;
}

/*
 * A sparse node over [pos, pos + w) with the @n (value, kid) pairs, its
 * capacity the class of @n plus @slack (lib/trie/trie-mem.c). NULL without
 * memory.
 */
struct ct_tnode *ct_k_make(struct ct_trie *tr, unsigned int pos,
			   unsigned int w, const uint16_t *val,
			   const uintptr_t *kid, unsigned int n,
			   unsigned int slack)
{
	unsigned int cap = ct_k_capfor(n + slack);
	struct ct_tnode *x = ct_k_alloc(tr, cap, pos, w);

	if (!x)
		return NULL;
	memcpy(ct_k_val(x), val, n * sizeof(*val));
	memcpy(ct_k_kid(x), kid, n * sizeof(*kid));
	x->n = x->live = (uint8_t)n;
	return x;
}

/*
 * The entries of sparse @x whose first @ov window bits are @want, as the
 * word of one slot of a parent whose window covers those bits: nothing,
 * the one kid, or a sparse node over the rest of x's window (kept on
 * b->made). -ENOMEM without memory.
 */
int ct_k_piece(struct ct_build *b, struct ct_tnode *x, unsigned int ov,
	       uint32_t want, uintptr_t *out)
{
	unsigned int rest = x->w - ov, i, m = 0;
	uint16_t val[CT_T_KMAX];
	uintptr_t kid[CT_T_KMAX];
	struct ct_tnode *y;

	for (i = 0; i < x->n; i++) {
		if (!ct_k_kid(x)[i] || (uint32_t)ct_k_val(x)[i] >> rest != want)
			continue;
		val[m] = (uint16_t)(ct_k_val(x)[i] & ((1u << rest) - 1));
		kid[m++] = ct_k_kid(x)[i];
	}
	*out = m == 1 ? kid[0] : 0;
	if (m < 2)
		return 0;
	y = ct_k_make(b->tr, ct_t_end(x) - rest, rest, val, kid, m, 0);
	if (!y)
		return -ENOMEM;
	ct_build_keep(b, y);
	*out = (uintptr_t)y;
	return 0;
}
