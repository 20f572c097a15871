/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: the eviction sample (lib/trie/trie-evict.c), in a header so
 * that tests/test-trie-evict.c can run it on a constructed trie and count
 * its work, which the library's interface does not show.
 *
 * What it offers. Up to CT_EVICT_SAMPLE distinct candidates (a pair is
 * one, through its a), each the leaf at the end of a random descent. At
 * every node the descent takes a child with a chance in proportion to
 * its weight, the number of children it has in turn (a leaf: 1), which
 * writers keep in every node (a sparse node's live entries, a dense
 * one's used slots): among all live entries of a sparse node, among
 * CT_T_DRAWS occupied slots of a dense one drawn uniformly (by drawing a
 * slot at random and again while it is empty, CT_T_PROBES draws at most;
 * a descent whose draws all miss is abandoned, not finished by a scan).
 *
 * Why. The descents used to take, at each node, the first occupied slot
 * from a random one on, and end where they met the table's lowest keys:
 * a scan to the next occupied slot takes the child after the longest run
 * of empty ones far more often than the others, and where keys fill a
 * node from its low end (sequential ports or addresses) that is its
 * first child; a child that evictions had thinned (the oldest block of
 * sequential keys) was as likely as a full one, so its few leaves were
 * offered over and over. With 1,000 NAT pairs of sequential keys at the
 * cap, evicting by idle time with one connection in 16 protected
 * (rank < 0), 49 of 3,000 evicting inserts were refused, the protected
 * among the old being the whole sample; now none
 * (tests/test-trie-evict.c). A leaf's chance is now about 1 / entries
 * where keys part evenly below each node (random or sequential keys:
 * every decile of the key order gets 8 to 15 % of the offers); the trie
 * keeps no subtree counts, so where the weight one level down misjudges
 * a subtree (a node of few children over large subtrees), leaves there
 * are offered more or less often than others, still never by their keys'
 * values. The application's rank, not the sample, decides who goes: a
 * negative rank is never evicted.
 *
 * When the descents keep meeting the same leaves (a table of few entries,
 * or one leaf beside the root of a large subtree), a fill completes the
 * sample: a depth-first walk that enters every node at a random child and
 * wraps around, so it starts at a random place of the key space and goes
 * on to that place's neighbours, never from the smallest key; a table of
 * fewer entries than the sample offers all of them.
 *
 * Work. Every node entered and every slot or entry word read counts one.
 * The descents stop after CT_T_DESCENT_WORK, the fill after
 * CT_T_FILL_WORK, so a sample costs at most their sum, whatever the keys
 * and the trie's shape: deep paths (81 nodes for IPv6), nodes of few
 * occupied slots, pairs whose halves other writers hold. The rank is
 * called once per candidate: CT_EVICT_SAMPLE times at most. Within that
 * work every dense node has at least an eighth of its slots occupied
 * (lib/trie/trie.c's bounds: a short node of fewer becomes sparse, an
 * anchored one halves), so all of a descent's draws miss at a node with
 * probability at most (7/8)^CT_T_PROBES (under 2 %) and the sample is
 * full. The exception is a root built to the sizing hint, which keeps
 * its width while the table grows into it: a table that shrank, or keys
 * aimed at few of its slots, can leave it with a handful of occupied
 * slots among a million, where no draw meets one. Its samples try the root slot where
 * a fill last found a leaf (struct ct_trie's sample_slot), and stay
 * within the bound while that slot's subtree fills them; when it does
 * not, the fill goes on without a bound until the sample is full (the
 * caller would otherwise sample again for ever), at up to the root's
 * slots, and the slot that filled it becomes the hint. So such a root
 * costs one long sample each time the hinted slot stops filling one, not
 * every sample (tests/test-trie-evict.c: 228,587 words once, then at
 * most 481). A node below the root that a writer short of memory could
 * not reshape has no hint: descents that meet it give up, and the
 * sample is what the rest of the trie offers, unless that is nothing.
 */
#ifndef CT_TRIE_SAMPLE_H
#define CT_TRIE_SAMPLE_H

#include "../evict.h"
#include "trie.h"

/* Descents tried for a sample before the fill. */
#define CT_T_DESCENTS		(4 * CT_EVICT_SAMPLE)
/* Random slots or entries drawn at one node before a descent gives up. */
#define CT_T_PROBES		32
/* Occupied children drawn at a node, one taken by weight. */
#define CT_T_DRAWS		8
/* Work of the descents, and of the fill, for one sample. */
#define CT_T_DESCENT_WORK	(128 * CT_EVICT_SAMPLE)
#define CT_T_FILL_WORK		(64 * CT_EVICT_SAMPLE)

struct ct_tsample {
	const struct conntab *t;
	ct_rank_fn rank;
	void *arg;
	uint64_t (*random)(void);
	struct conntab_node *seen[CT_EVICT_SAMPLE];
	size_t n;
	struct conntab_node *best;	/* NULL: none ranked >= 0 */
	long rbest;
	size_t work;			/* nodes entered, words read */
	size_t limit;			/* work at which to stop */
	uintptr_t top;			/* the root word sampled */
	uint32_t *hint;			/* a root slot that led to a leaf */
	bool sparse_top;		/* every draw at the root missed */
};

/*
 * Offer @l to the rank unless offered already. A pair is one candidate,
 * offered through its a: a descent that ends on its b offers the a.
 */
static inline void ct_ts_offer(struct ct_tsample *sm, struct conntab_node *l)
{
	long r;
	size_t i;

	if (ct_node_pair_b(l))
		l = l->ct_peer;
	/*
	 * A pair that another writer step holds (P2: being inserted,
	 * removed or evicted) is left out: among them is the lower half of
	 * the very pair whose insert is asking for room, whose claim cannot
	 * end while we wait, so choosing it would loop for ever. A single
	 * node claimed by another eviction stays in, as before pairs: the
	 * claim fails, that eviction ends, and we sample again, so a full
	 * trie always offers its nodes.
	 */
	if (l->ct_peer &&
	    __atomic_load_n(&l->ct_owner, __ATOMIC_RELAXED) != sm->t)
		return;
	for (i = 0; i < sm->n; i++)
		if (sm->seen[i] == l)
			return;
	sm->seen[sm->n++] = l;
	r = sm->rank(l, sm->arg);
	if (r >= 0 && (!sm->best || r > sm->rbest)) {
		sm->best = l;
		sm->rbest = r;
	}
}

/* Internal node @x: its slot or entry count, and the word of child @i. */
static inline uint32_t ct_ts_width(struct ct_tnode *x)
{
	return ct_t_isk(x) ? __atomic_load_n(&x->n, __ATOMIC_ACQUIRE) :
			     1u << x->w;
}

static inline uintptr_t ct_ts_child(struct ct_tsample *sm, struct ct_tnode *x,
				    uint32_t i)
{
	sm->work++;
	return ct_t_isk(x) ? ct_w_load(&ct_k_kid(x)[i]) :
			     ct_w_load(&ct_d(x)->kid[i]);
}

/*
 * The weight of child word @q in a descent: about how many leaves it
 * leads to, from one level down (its occupied slots or live entries, as
 * writers count them: relaxed, a hint).
 */
static inline uint32_t ct_ts_weight(uintptr_t q)
{
	struct ct_tnode *y;

	if (ct_w_leaf(q))
		return 1;
	y = ct_w_tn(q);
	if (ct_t_isk(y))
		return __atomic_load_n(&y->live, __ATOMIC_RELAXED) + 1u;
	return __atomic_load_n(&ct_d(y)->used, __ATOMIC_RELAXED) + 1u;
}

/*
 * Reader: the leaf at the end of a random descent from @p, or NULL (an
 * empty trie, a node whose draws all missed, or the work spent).
 */
static inline struct conntab_node *ct_ts_descend(struct ct_tsample *sm,
						 uintptr_t p)
{
	uintptr_t q, pick[CT_T_KMAX];
	uint32_t m, w[CT_T_KMAX], tot;
	struct ct_tnode *x;
	unsigned int k, d;
	uint64_t r;

	while (p && !ct_w_leaf(p)) {
		x = ct_w_tn(p);
		sm->work++;
		m = ct_ts_width(x);
		tot = 0;
		d = 0;
		for (k = 0; k < CT_T_PROBES && (ct_t_isk(x) ? k < m :
						d < CT_T_DRAWS); k++) {
			if (sm->work >= sm->limit)
				return NULL;
			q = ct_ts_child(sm, x, ct_t_isk(x) ? k :
					(uint32_t)(sm->random() % m));
			if (!q)
				continue;
			pick[d] = q;
			w[d] = ct_ts_weight(q);
			tot += w[d++];
		}
		/*
		 * Every draw missed: a nearly empty root built to the sizing
		 * hint (lib/trie/trie.c), the one node that may hold under an
		 * eighth of its slots. Try the root slot where a fill last
		 * found a leaf (a relaxed hint: any value is a slot).
		 */
		if (!d && p == sm->top && !ct_t_isk(x) &&
		    sm->work < sm->limit) {
			sm->sparse_top = true;
			q = ct_ts_child(sm, x, __atomic_load_n(sm->hint,
					__ATOMIC_RELAXED) & (m - 1));
			if (q) {
				pick[d] = q;
				w[d] = 1;
				tot += w[d++];
			}
		}
		if (!d)
			return NULL;
		r = sm->random() % tot;
		for (k = 0; r >= w[k]; k++)
			r -= w[k];
		p = pick[k];
	}
	return p ? ct_w_node(p) : NULL;
}

/*
 * Reader: the fill, depth first from @p, each node's children from a
 * random one on, cyclically. A run of dense slots that repeat one shared
 * child enters it once. True: stop (the sample is full, or the work
 * spent).
 */
static inline bool ct_ts_fill(struct ct_tsample *sm, uintptr_t p)
{
	struct ct_tnode *x;
	uintptr_t q, prev = 0;
	uint32_t m, r, i;
	size_t n0;
	bool stop;

	if (!p)
		return false;
	if (ct_w_leaf(p)) {
		ct_ts_offer(sm, ct_w_node(p));
		return sm->n == CT_EVICT_SAMPLE;
	}
	x = ct_w_tn(p);
	sm->work++;
	m = ct_ts_width(x);
	r = m ? (uint32_t)(sm->random() % m) : 0;
	for (i = 0; i < m; i++) {
		if (sm->work >= sm->limit)
			return true;
		q = ct_ts_child(sm, x, (r + i) % m);
		if (q == prev)
			continue;
		prev = q;
		n0 = sm->n;
		stop = ct_ts_fill(sm, q);
		if (p == sm->top && !ct_t_isk(x) && sm->n > n0)
			__atomic_store_n(sm->hint, (r + i) % m,
					 __ATOMIC_RELAXED);
		if (stop)
			return true;
	}
	return false;
}

/*
 * Reader (RCU read lock held): rank a sample of @tr; sm->best is the
 * victim, or NULL. sm->t, rank, arg and random set, the rest zero.
 */
static inline void ct_ts_sample(struct ct_tsample *sm, struct ct_trie *tr)
{
	uintptr_t p = ct_w_load(&tr->root);
	struct conntab_node *l;
	unsigned int i;

	sm->top = p;
	sm->hint = &tr->sample_slot;
	sm->limit = CT_T_DESCENT_WORK;
	for (i = 0; i < CT_T_DESCENTS && sm->n < CT_EVICT_SAMPLE &&
		    sm->work < sm->limit; i++) {
		l = ct_ts_descend(sm, p);
		if (l)
			ct_ts_offer(sm, l);
	}
	if (sm->n == CT_EVICT_SAMPLE)
		return;
	sm->limit = sm->work + CT_T_FILL_WORK;
	ct_ts_fill(sm, p);
	if (sm->n == CT_EVICT_SAMPLE || (sm->n && !sm->sparse_top))
		return;
	/*
	 * Nothing met, or a nearly empty root whose hinted slot could not
	 * fill the sample: walk on, without a bound, until it is full; the
	 * root slot that fills it becomes the hint.
	 */
	sm->limit = SIZE_MAX;
	ct_ts_fill(sm, p);
}

#endif /* CT_TRIE_SAMPLE_H */
