/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: conntab_scan(), a pass in key order resumed from a
 * position in bounded calls.
 *
 * The position. Its 40 bytes (sealed into the cursor by the front end,
 * lib/cursor.c, so that no key shows) hold a string P of the key-string
 * space (lib/key.h; zero past an IPv4 key's 16 bytes, as in the trie):
 * every key <= P that was present for the whole pass so far has been
 * visited, and the pass visits only keys > P from now on. A pass starts
 * at P = 0, below every valid key (the family byte is never 0). After a
 * visit P is the visited key's string; when a call stops on its work
 * budget inside a dense node, P is the largest string below the slot it
 * finished (the node's prefix, the slot's value, then all ones).
 *
 * Exactly once. A call descends as conntab_walk() does (each child word
 * loaded once; keys come out in increasing order, a shared child's keys
 * through their own slot only) and visits a leaf only if its key string
 * is > P, then sets P to it. So across the calls of a pass the visited
 * strings strictly increase: no node is visited twice, and a node that
 * leaves and comes back with the same key counts as one. A key K present
 * for the whole pass: let C be the call after which P first reaches K or
 * beyond (one does: the pass ends only when a call finds nothing above P,
 * and K is above it until then). C started with P < K and its descent
 * passed K's place with K present, so the walk's argument (every key
 * present throughout is found, lib/trie/trie-read.c) puts K among the leaves
 * C found; C visited it, being > P when reached. Nothing then rescans:
 * the next call starts above P.
 *
 * Resume in O(depth). Down the path of P the descent is "tight" (the
 * path's bits equal P's): in a node it starts at P's value in the window
 * (smaller values lie below P, larger ones wholly above it), and bits a
 * node skips are compared with P first (a dense node's prefix has them,
 * a sparse node's are read from one key below it), so the subtrees wholly
 * below P are passed without being entered.
 *
 * Work per call. @budget bounds the callbacks, and budget x
 * CT_SCAN_EMPTY_PER_BUDGET bounds the internal nodes entered and the
 * empty dense slots passed, so that a region emptied by removals (whose
 * nodes a writer short of memory could not yet reshape) cannot make one
 * call long. A call stops on that second budget only where P moves up:
 * after a dense slot (P as above), or before a leaf once a visit moved P.
 * So every call makes progress, and a pass ends after at most one call
 * per budget's worth of visits and passed slots, plus one.
 */
#include <string.h>

#include "trie.h"

struct ct_scan {
	uint8_t ps[CT_KEY_STR_BUF];	/* bits of the current path */
	uint8_t p[CT_KEY_STR_BUF];	/* the position P */
	size_t calls;			/* callbacks left */
	size_t work;			/* nodes and empty slots left */
	bool moved;			/* P moved in this call */
	int ret;			/* why the call stopped: fn's value, or 0 */
	ct_walk_fn fn;
	void *arg;
};

/* Compare bits [from, to) of @a and @b: <0, 0, >0. */
static int ct_bits_cmp(const uint8_t *a, const uint8_t *b, unsigned int from,
		       unsigned int to)
{
	unsigned int w;
	uint32_t x, y;

	for (; from < to; from += w) {
		w = to - from < 24 ? to - from : 24;
		x = ct_bits(a, from, w);
		y = ct_bits(b, from, w);
		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

/*
 * After dense @x's slot @c: P becomes the largest string below that slot,
 * if that is above P. True if it moved (the call may stop there).
 */
static bool ct_scan_past_slot(struct ct_scan *sc, struct ct_tnode *x,
			      uint32_t c)
{
	uint8_t q[CT_KEY_STR_BUF];
	unsigned int end = ct_t_end(x), b;

	memcpy(q, ct_d(x)->prefix, CT_KEY_STR_MAX);
	memset(q + CT_KEY_STR_MAX, 0, CT_KEY_STR_BUF - CT_KEY_STR_MAX);
	ct_putbits(q, x->pos, x->w, c);
	for (b = end; b < CT_KEY_STR_MAX * 8 && (b & 7); b++)
		q[b >> 3] |= (uint8_t)(0x80 >> (b & 7));
	if (b < CT_KEY_STR_MAX * 8)
		memset(q + b / 8, 0xff, CT_KEY_STR_MAX - b / 8);
	if (memcmp(q, sc->p, CT_KEY_STR_MAX) <= 0)
		return false;
	memcpy(sc->p, q, CT_KEY_STR_MAX);
	return true;
}

static bool ct_scan_sub(struct ct_scan *sc, uintptr_t p, unsigned int pend,
			bool tight);

/* A leaf: visit it if it is above P. True: the call stops. */
static bool ct_scan_leaf(struct ct_scan *sc, struct conntab_node *n)
{
	uint8_t ks[CT_KEY_STR_BUF];

	ct_key_str(&n->ct_key, ks);
	if (memcmp(ks, sc->p, CT_KEY_STR_MAX) <= 0)
		return false;		/* visited, or below the resume point */
	if (!sc->calls || (!sc->work && sc->moved))
		return true;		/* P stays: the next call starts here */
	memcpy(sc->p, ks, CT_KEY_STR_MAX);
	sc->moved = true;
	/* A pair's b is filtered out by conntab_scan(): not a call (walk.h). */
	sc->calls -= !ct_node_pair_b(n);
	sc->ret = sc->fn(n, sc->arg);
	return sc->ret != 0;
}

/* The slots of dense @x in [lo, hi], from P's value on when @tight. */
static bool ct_scan_dense(struct ct_scan *sc, struct ct_tnode *x, uint32_t lo,
			  uint32_t hi, unsigned int end, bool tight)
{
	uint32_t c = lo, pc = 0;
	uintptr_t q;

	ct_delay(CT_DP_TR_READ_STEP);
	if (tight) {
		pc = ct_bits(sc->p, x->pos, x->w);
		c = pc > lo ? pc : lo;
	}
	for (; c <= hi; c++) {
		q = ct_w_load(&ct_d(x)->kid[c]);
		if (q) {
			ct_putbits(sc->ps, x->pos, x->w, c);
			if (ct_scan_sub(sc, q, end,
					tight && c == pc))
				return true;
		} else if (sc->work) {
			sc->work--;
		}
		if (!sc->work && ct_scan_past_slot(sc, x, c))
			return true;
	}
	return false;
}

/* The live entries of sparse @x (top @ov bits @pre) above P when @tight. */
static bool ct_scan_sparse(struct ct_scan *sc, struct ct_tnode *x,
			   unsigned int ov, uint32_t pre, unsigned int end,
			   bool tight)
{
	long after = -1;
	uint32_t pc = 0;
	int i;

	ct_delay(CT_DP_TR_READ_STEP);
	if (tight) {
		pc = ct_bits(sc->p, x->pos, x->w);
		after = (long)pc - 1;
	}
	while ((i = ct_k_next(x, after, ov, pre)) >= 0) {
		after = ct_k_val(x)[i];
		ct_putbits(sc->ps, x->pos, x->w, (uint32_t)after);
		if (ct_scan_sub(sc, ct_w_load(&ct_k_kid(x)[i]), end,
				tight && (uint32_t)after == pc))
			return true;
	}
	return false;
}

/*
 * The subtree @p, whose path the bits of sc->ps fix up to @pend; @tight:
 * those bits (and any a node skipped above) equal P's. True: stop.
 */
static bool ct_scan_sub(struct ct_scan *sc, uintptr_t p, unsigned int pend,
			bool tight)
{
	struct conntab_node *rep;
	uint8_t rs[CT_KEY_STR_BUF];
	struct ct_tnode *x;
	unsigned int ov, end;
	uint32_t pre, lo, hi;
	int cmp;

	if (!p)
		return false;
	if (ct_w_leaf(p))
		return ct_scan_leaf(sc, ct_w_node(p));
	x = ct_w_tn(p);
	if (sc->work)
		sc->work--;
	if (tight && x->pos > pend) {
		/* Bits every key below shares: where is P among them? */
		if (!ct_t_isk(x)) {
			/*
			 * A copy: ct_bits() loads 8 bytes, which past the
			 * prefix would read the slots writers change.
			 */
			memcpy(rs, ct_d(x)->prefix, CT_KEY_STR_MAX);
			memset(rs + CT_KEY_STR_MAX, 0,
			       CT_KEY_STR_BUF - CT_KEY_STR_MAX);
			cmp = ct_bits_cmp(rs, sc->p, pend, x->pos);
		} else {
			rep = ct_t_first_leaf(p, sc->ps, pend);
			if (!rep)
				return false;
			ct_key_str(&rep->ct_key, rs);
			cmp = ct_bits_cmp(rs, sc->p, pend, x->pos);
		}
		if (cmp < 0)
			return false;	/* wholly below P */
		tight = cmp == 0;
	}
	end = ct_t_end(x);
	ov = ct_t_overlap(x, sc->ps, pend, &pre);
	if (end < pend)
		end = pend;
	if (ct_t_isk(x))
		return ct_scan_sparse(sc, x, ov, pre, end, tight);
	ct_d_range(x, ov, pre, &lo, &hi);
	return ct_scan_dense(sc, x, lo, hi, end, tight);
}

/*
 * Any 40 bytes are a position P (the descent only compares strings with
 * it), so no position is refused.
 */
enum ct_scan_end ct_trie_scan(struct conntab *t,
			      uint64_t pos[CT_SCAN_POS_WORDS], bool fresh,
			      size_t budget, ct_walk_fn fn, void *arg,
			      int *fnret)
{
	struct ct_scan sc = { .calls = budget, .fn = fn, .arg = arg };

	_Static_assert(CT_SCAN_POS_WORDS * sizeof(uint64_t) == CT_KEY_STR_MAX,
		       "a trie position is one key string");
	if (!fresh)
		memcpy(sc.p, pos, CT_KEY_STR_MAX);
	sc.work = budget > SIZE_MAX / CT_SCAN_EMPTY_PER_BUDGET ?
		  SIZE_MAX : budget * CT_SCAN_EMPTY_PER_BUDGET;
	if (!ct_scan_sub(&sc, ct_w_load(&ct_trie(t)->root), 0, true))
		return CT_SCAN_PASS;
	memcpy(pos, sc.p, CT_KEY_STR_MAX);
	if (!sc.ret)
		return CT_SCAN_BUDGET;
	*fnret = sc.ret;
	return CT_SCAN_STOPPED;
}
