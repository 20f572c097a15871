/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE readers: lookup, lookup_batch, walk, walk_prefix. They hold
 * the RCU read lock, load every child word once with ct_w_load() (a
 * consume load pairing with the writer's release store that published
 * it) and write nothing.
 *
 * Shared children. A dense node that inflates leaves a sparse child that
 * started at its old end in both halves' slots (lib/trie/trie-resize.c): the
 * child's window then overlaps the parent's, and the child holds keys of
 * several parent slots. A lookup needs nothing for it (it matches the
 * whole value of the child's window). A walk does: it keeps the bits of
 * its path and, at a child whose window starts before the parent's end,
 * visits only the entries whose overlapping bits agree with the path, so
 * a shared child's keys are visited once, through their own slot.
 */
#include <string.h>

#include "trie.h"

/*
 * The child of @x for the value @c of its window, or 0. Inlined into
 * every caller: gcc otherwise keeps one out-of-line copy, and its call,
 * saves and restores cost a lookup ten instructions of its ~155
 * (callgrind, 256K keys).
 */
static inline __attribute__((always_inline)) uintptr_t
ct_t_child(struct ct_tnode *x, uint32_t c)
{
	int i;

	ct_delay(CT_DP_TR_READ_STEP);
	if (!ct_t_isk(x))
		return ct_w_load(&ct_d(x)->kid[c]);
	i = ct_k_find(x, c);
	return i < 0 ? 0 : ct_w_load(&ct_k_kid(x)[i]);
}

/* The child of @x for the string @s, or 0. */
static inline __attribute__((always_inline)) uintptr_t
ct_t_step(struct ct_tnode *x, const uint8_t *s)
{
	return ct_t_child(x, ct_bits(s, x->pos, x->w));
}

/* Leaf word @p (or 0) at the end of @k's descent: @k's node, or NULL. */
static inline __attribute__((always_inline)) struct conntab_node *
ct_t_found(uintptr_t p, const struct conntab_key *k)
{
	struct conntab_node *n;

	if (!p)
		return NULL;
	n = ct_w_node(p);
	return ct_key_eq(&n->ct_key, k) ? n : NULL;
}

#if defined(__SIZEOF_INT128__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
# define CT_T_NUM4	1
#endif

#ifdef CT_T_NUM4
/*
 * IPv4 lookups keep the key's string in two registers, as one 128-bit
 * number, and take each window from there. Through a buffer on the
 * stack (ct_key_str(), ct_bits()), each window's 8-byte load straddles
 * the two 8-byte stores that wrote the string, or one of them and the
 * zeroing past it, unless it starts at byte 0 or 8: no store forwards
 * it, so it waits until those stores are written to the cache, which is
 * after every older instruction retired, the previous lookup's misses
 * included. Back-to-back lookups of independent keys then ran one after
 * another (256K keys: lookup 316 ns, lookup-dep 364; chained 77 and
 * 338), where their misses could overlap.
 */
typedef unsigned __int128 ct_u128;

static inline ct_u128 ct_key_num4(const struct conntab_key *k)
{
	uint64_t lo, hi;

	ct_key_words4(k, &lo, &hi);
	return (ct_u128)__builtin_bswap64(lo) << 64 | __builtin_bswap64(hi);
}

/*
 * ct_bits() of the string whose number is @s: bits [pos, pos + w), the
 * bits past the string's 128 zero (as the buffer's are; a skip may lead
 * an IPv4 key into a node of longer keys, whose leaf then does not
 * match it). A window in the first 64 bits (a root's, as a rule) takes
 * one shift pair of the high word; the 128-bit shift costs about eight
 * instructions (ct-icount, trie, 256K: lookup 157 -> 150).
 */
static inline uint32_t ct_bits128(ct_u128 s, unsigned int pos, unsigned int w)
{
	if (pos + w <= 64)
		return (uint32_t)(((uint64_t)(s >> 64) << pos) >> (64 - w));
	if (__builtin_expect(pos >= 128, 0))
		return 0;
	return (uint32_t)((uint64_t)((s << pos) >> 64) >> (64 - w));
}

static inline __attribute__((always_inline)) struct conntab_node *
ct_trie_lookup4(struct ct_trie *tr, const struct conntab_key *k)
{
	ct_u128 s = ct_key_num4(k);
	uintptr_t p = ct_w_load(&tr->root);
	struct ct_tnode *x;

	/* As ct_trie_lookup() below. */
	if (p && !ct_w_leaf(p)) {
		x = ct_w_tn(p);
		p = ct_t_child(x, ct_bits128(s, x->pos, x->w));
	}
	while (p && !ct_w_leaf(p)) {
		ct_t_prefetch_tail(p);
		x = ct_w_tn(p);
		p = ct_t_child(x, ct_bits128(s, x->pos, x->w));
	}
	return ct_t_found(p, k);
}
#endif

struct conntab_node *ct_trie_lookup(struct conntab *t,
				    const struct conntab_key *k)
{
	struct ct_trie *tr = ct_trie(t);
	uint8_t s[CT_KEY_STR_BUF];
	uintptr_t p;

#ifdef CT_T_NUM4
	if (__builtin_expect(k->family == AF_INET, 1))
		return ct_trie_lookup4(tr, k);
#endif
	/* No node of another family is ever linked: family 0 finds nothing. */
	if (k->family != AF_INET && k->family != AF_INET6)
		return NULL;
	ct_key_str(k, s);
	p = ct_w_load(&tr->root);
	/*
	 * Every lookup reads the root's head, and a sparse root's entries:
	 * they stay cached, and its first step needs no prefetch.
	 */
	if (p && !ct_w_leaf(p))
		p = ct_t_step(ct_w_tn(p), s);
	while (p && !ct_w_leaf(p)) {
		ct_t_prefetch_tail(p);
		p = ct_t_step(ct_w_tn(p), s);
	}
	return ct_t_found(p, k);
}

/*
 * Batches descend all their keys one level per round, prefetching each
 * next node, so that the misses of a round overlap.
 */
#define CT_TRIE_BATCH	16

/*
 * A batch's key: its string as a number (IPv4, where ct_trie_lookup4()
 * does so) or in a buffer. The number is stored and loaded whole, 16
 * bytes at one place, which store forwarding serves; the buffer's
 * windows are not (above), so a group whose strings were in buffers
 * waited, at its first window, for the previous group's misses.
 */
struct ct_tbkey {
#ifdef CT_T_NUM4
	ct_u128 num;
#endif
	uint8_t s[CT_KEY_STR_BUF];
};

static inline __attribute__((always_inline)) void
ct_tb_set(struct ct_tbkey *b, const struct conntab_key *k)
{
#ifdef CT_T_NUM4
	if (__builtin_expect(k->family == AF_INET, 1)) {
		b->num = ct_key_num4(k);
		return;
	}
#endif
	ct_key_str(k, b->s);
}

/* The value of @x's window in key @k (set in @b by ct_tb_set()). */
static inline __attribute__((always_inline)) uint32_t
ct_tb_bits(const struct ct_tbkey *b, const struct conntab_key *k,
	   const struct ct_tnode *x)
{
#ifdef CT_T_NUM4
	if (__builtin_expect(k->family == AF_INET, 1))
		return ct_bits128(b->num, x->pos, x->w);
#else
	(void)k;
#endif
	return ct_bits(b->s, x->pos, x->w);
}

size_t ct_trie_lookup_batch(struct conntab *t,
			    const struct conntab_key *keys,
			    struct conntab_node **out, size_t n)
{
	struct ct_trie *tr = ct_trie(t);
	struct ct_tbkey kb[CT_TRIE_BATCH];
	uintptr_t p[CT_TRIE_BATCH], *a[CT_TRIE_BATCH];
	size_t base, i, m, found = 0;
	struct ct_tnode *x;
	bool more;

	for (base = 0; base < n; base += m) {
		const struct conntab_key *k = &keys[base];
		uintptr_t root = ct_w_load(&tr->root);
		struct ct_tnode *rx = root && !ct_w_leaf(root) ?
				      ct_w_tn(root) : NULL;
		/* A dense root: its slots are the first loads of every key. */
		uintptr_t *rslot = rx && !ct_t_isk(rx) ? ct_d(rx)->kid : NULL;

		m = n - base < CT_TRIE_BATCH ? n - base : CT_TRIE_BATCH;
		for (i = 0; i < m; i++) {
			/* No node of another family is ever linked. */
			p[i] = k[i].family == AF_INET ||
			       k[i].family == AF_INET6 ? root : 0;
			if (!p[i])
				continue;
			ct_tb_set(&kb[i], &k[i]);
			/*
			 * Each key's root slot is fetched before any is
			 * read, so that the first round's loads overlap as
			 * the later rounds' do (a root of 2^17 slots at 1M
			 * keys is a megabyte, mostly out of L1 and L2).
			 * The slot is inside the root whatever the key:
			 * the window's value is below 2^w.
			 */
			if (rslot) {
				a[i] = &rslot[ct_tb_bits(&kb[i], &k[i], rx)];
				__builtin_prefetch(a[i]);
			}
		}
		/*
		 * The first round on a dense root: ct_t_child()'s load of
		 * the slot found above (consume, as every child word).
		 */
		for (i = 0; rslot && i < m; i++) {
			if (!p[i])
				continue;
			ct_delay(CT_DP_TR_READ_STEP);
			p[i] = ct_w_load(a[i]);
			__builtin_prefetch((void *)(p[i] & ~CT_T_LEAF));
			if (p[i] && !ct_w_leaf(p[i]))
				ct_t_prefetch_tail(p[i]);
		}
		do {
			more = false;
			for (i = 0; i < m; i++) {
				if (!p[i] || ct_w_leaf(p[i]))
					continue;
				x = ct_w_tn(p[i]);
				p[i] = ct_t_child(x, ct_tb_bits(&kb[i], &k[i],
								x));
				/*
				 * Integer arithmetic: p[i] may be 0, and
				 * an offset from a null pointer is UB.
				 */
				__builtin_prefetch((void *)(p[i] & ~CT_T_LEAF));
				if (p[i] && !ct_w_leaf(p[i]))
					ct_t_prefetch_tail(p[i]);
				more |= p[i] && !ct_w_leaf(p[i]);
			}
		} while (more);
		for (i = 0; i < m; i++) {
			struct conntab_node *l = p[i] ? ct_w_node(p[i]) : NULL;

			if (l && !ct_key_eq(&l->ct_key, &k[i]))
				l = NULL;
			out[base + i] = l;
			found += l != NULL;
		}
	}
	return found;
}

/*
 * Sparse node: the live entry with the smallest value above @after (-1:
 * none yet) whose top @ov bits are @pre; its index, or -1. Entries
 * appended meanwhile are seen or not, as a reader may.
 */
int ct_k_next(struct ct_tnode *x, long after, unsigned int ov, uint32_t pre)
{
	unsigned int i, n = __atomic_load_n(&x->n, __ATOMIC_ACQUIRE);
	const uint16_t *val = ct_k_val(x);
	uintptr_t *kid = ct_k_kid(x);
	int best = -1;

	for (i = 0; i < n; i++) {
		uint32_t v = val[i];

		if ((long)v <= after || (ov && (v >> (x->w - ov)) != pre))
			continue;
		if (best >= 0 && v >= val[best])
			continue;
		if (ct_w_load(&kid[i]))
			best = (int)i;
	}
	return best;
}

struct ct_walk {
	uint8_t ps[CT_KEY_STR_BUF];	/* bits of the current path */
	int state;
	ct_walk_fn fn;
	void *arg;
};

static int ct_walk_sub(struct ct_walk *w, uintptr_t p, unsigned int pend);

/*
 * The children of @x whose top @ov bits are @pre, in key order (dense
 * slots ascending, sparse entries by value), each walked with the path
 * known up to @end.
 */
static int ct_walk_kids(struct ct_walk *w, struct ct_tnode *x,
			unsigned int ov, uint32_t pre, unsigned int end)
{
	uint32_t c, lo, hi;
	long after = -1;
	int i, ret;

	ct_delay(CT_DP_TR_READ_STEP);
	if (!ct_t_isk(x)) {
		ct_d_range(x, ov, pre, &lo, &hi);
		for (c = lo; c <= hi; c++) {
			uintptr_t q = ct_w_load(&ct_d(x)->kid[c]);

			if (!q)
				continue;
			ct_putbits(w->ps, x->pos, x->w, c);
			ret = ct_walk_sub(w, q, end);
			if (ret)
				return ret;
		}
		return 0;
	}
	while ((i = ct_k_next(x, after, ov, pre)) >= 0) {
		after = ct_k_val(x)[i];
		ct_putbits(w->ps, x->pos, x->w, (uint32_t)after);
		ret = ct_walk_sub(w, ct_w_load(&ct_k_kid(x)[i]), end);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Call fn for the leaves below @p in key order. Each child word is loaded
 * once; whatever version of a subtree it yields was in the trie at some
 * moment during the walk and held every key present then, so a key
 * present for the whole walk is visited, and since keys come out in
 * increasing order, at most once. fn may remove or time-wait the node it
 * gets: the nodes the walk stands on stay valid for the read lock.
 */
static int ct_walk_sub(struct ct_walk *w, uintptr_t p, unsigned int pend)
{
	struct ct_tnode *x;
	unsigned int ov, end;
	uint32_t pre;

	if (!p)
		return 0;
	if (ct_w_leaf(p)) {
		struct conntab_node *n = ct_w_node(p);

		if (w->state != CT_WALK_ALL &&
		    conntab_node_state(n) != (enum conntab_state)w->state)
			return 0;
		return w->fn(n, w->arg);
	}
	x = ct_w_tn(p);
	end = ct_t_end(x);
	ov = ct_t_overlap(x, w->ps, pend, &pre);
	return ct_walk_kids(w, x, ov, pre, pend > end ? pend : end);
}

int ct_trie_walk(struct conntab *t, int state, ct_walk_fn fn, void *arg)
{
	struct ct_walk w = { .state = state, .fn = fn, .arg = arg };

	return ct_walk_sub(&w, ct_w_load(&ct_trie(t)->root), 0);
}

static int ct_first_fn(struct conntab_node *n, void *arg)
{
	*(struct conntab_node **)arg = n;
	return 1;
}

/*
 * Reader: the first leaf below @p whose bits agree with @ps where the
 * path fixed them (up to @pend), or NULL. Writers use it for the bits a
 * subtree's keys share (its prefix).
 */
struct conntab_node *ct_t_first_leaf(uintptr_t p, const uint8_t *ps,
				     unsigned int pend)
{
	struct conntab_node *n = NULL;
	struct ct_walk w = { .state = CT_WALK_ALL, .fn = ct_first_fn,
			     .arg = &n };

	memcpy(w.ps, ps, sizeof(w.ps));
	ct_walk_sub(&w, p, pend);
	return n;
}

/*
 * conntab_walk_prefix(): follow @s while the windows lie inside the
 * first @bits bits (as a lookup does), then at the first node whose
 * window reaches past them check one key of the subtree against @s (the
 * bits skipped on the way were not compared) and walk the children whose
 * bits in the window agree with @s. Cost: the depth, plus the answer,
 * plus one node's entries.
 */
int ct_trie_walk_prefix(struct conntab *t, const uint8_t *s,
			unsigned int bits, ct_walk_fn fn, void *arg)
{
	struct ct_walk w = { .state = CT_WALK_ALL, .fn = fn, .arg = arg };
	uintptr_t p = ct_w_load(&ct_trie(t)->root);
	unsigned int pend = 0, end = 0, lim;
	struct conntab_node *n;
	struct ct_tnode *x = NULL;

	memcpy(w.ps, s, sizeof(w.ps));
	while (p && !ct_w_leaf(p)) {
		x = ct_w_tn(p);
		end = ct_t_end(x);
		if (end > bits)
			break;
		p = ct_t_step(x, s);
		if (end > pend)
			pend = end;
	}
	if (!p)
		return 0;
	if (ct_w_leaf(p)) {
		n = ct_w_node(p);
		return ct_node_prefix_eq(n, s, bits) ? fn(n, arg) : 0;
	}
	n = ct_t_first_leaf(p, w.ps, pend);
	if (!n || !ct_node_prefix_eq(n, s, x->pos < bits ? x->pos : bits))
		return 0;
	if (x->pos >= bits)
		return ct_walk_sub(&w, p, pend);
	/* The window straddles the prefix: its first bits are @s's. */
	lim = pend > bits ? pend : bits;
	if (lim > end)
		lim = end;
	return ct_walk_kids(&w, x, lim - x->pos, ct_bits(s, x->pos, lim - x->pos),
			    end > pend ? end : pend);
}
