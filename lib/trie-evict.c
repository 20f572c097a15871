/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: conntab_insert_evict().
 *
 * The sample. CT_EVICT_SAMPLE distinct leaves, each the end of a random
 * descent: at every node the first non-empty child from a random slot
 * (dense) or entry (sparse), cyclically; when the descents keep meeting
 * the same leaves (a table of few entries, or one leaf next to the root
 * of a large subtree), the first leaves in key order make up the rest,
 * so a table of fewer entries offers all of them. Which leaves are
 * offered depends on the random numbers and on the trie's shape, never
 * on a key's value beyond where it sits: unlike the hash backends' run
 * of chains, the shape is the keys' own bits, so a leaf alone in a
 * subtree is offered more often than one of many siblings (a descent
 * reaches a leaf with probability the product of 1 / children along its
 * path). The application's rank, not the sample, decides who goes: a
 * negative rank is never evicted, whatever the shape. Cost: a descent
 * each, O(depth) cache misses, no scan of the table.
 *
 * The step. The trie's writers lock a node's place, not a bucket, and
 * unlinking a leaf elsewhere may reshape nodes above the newcomer's, so
 * the eviction is not done under the newcomer's locks as the hash
 * backends do (lib/evict.h); instead, in order:
 *  1. a plain insert: at the cap it fails with -ENOSPC after the key
 *     check under its lock (an existing key is -EEXIST: nothing evicted);
 *  2. under the RCU read lock, the sample is ranked (the rank runs under
 *     no writer lock here: the contract's rules for it suffice) and the
 *     best victim is unlinked "light" (lib/trie-write.c): a tombstone or
 *     an empty slot, no node reshaped, and its reservation (ct_reserve)
 *     kept for the newcomer, so the count never exceeds max_entries; a
 *     victim another writer removed first is sampled again from step 1;
 *  3. the newcomer is inserted on that reservation, its key checked and
 *     the leaf linked under one lock hold, as any insert;
 *  4. if that fails (another thread inserted the same key between steps
 *     1 and 3, or no memory), the victim goes back into the hole it left,
 *     which needs no memory when nothing reshaped it meanwhile: the call
 *     returns the error with *evicted NULL, the table as it was. Only if
 *     that too fails (concurrent reshaping and no memory) is the victim
 *     returned in *evicted beside the error;
 *  5. the victim's old node gets the reshaping the light removal skipped
 *     (ct_t_tidy()), so the memory bound of lib/trie.c holds after it.
 */
#include <errno.h>

#include "evict.h"
#include "trie.h"

/* Descents tried for a sample before the key-order fill. */
#define CT_T_DESCENTS	(4 * CT_EVICT_SAMPLE)

struct ct_tsample {
	ct_rank_fn rank;
	void *arg;
	struct conntab_node *seen[CT_EVICT_SAMPLE];
	size_t n;
	struct conntab_node *best;	/* NULL: none ranked >= 0 */
	long rbest;
};

/* Offer @l to the rank unless offered already. */
static void ct_ts_offer(struct ct_tsample *sm, struct conntab_node *l)
{
	long r;
	size_t i;

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

static int ct_ts_fill(struct conntab_node *l, void *arg)
{
	struct ct_tsample *sm = arg;

	ct_ts_offer(sm, l);
	return sm->n == CT_EVICT_SAMPLE;
}

/* Reader: the leaf at the end of a random descent from @p, or NULL. */
static struct conntab_node *ct_t_random_leaf(uintptr_t p)
{
	struct ct_tnode *x;
	uint32_t i, m, r;
	uintptr_t q;

	while (p && !ct_w_leaf(p)) {
		x = ct_w_tn(p);
		r = (uint32_t)ct_evict_random();
		q = 0;
		if (ct_t_isk(x)) {
			m = __atomic_load_n(&x->n, __ATOMIC_ACQUIRE);
			for (i = 0; i < m && !q; i++)
				q = ct_w_load(&ct_k_kid(x)[(r + i) % m]);
		} else {
			m = 1u << x->w;
			for (i = 0; i < m && !q; i++)
				q = ct_w_load(&ct_d(x)->kid[(r + i) & (m - 1)]);
		}
		p = q;
	}
	return p ? ct_w_node(p) : NULL;
}

/* Reader: rank a sample; the best victim, or NULL. */
static struct conntab_node *ct_t_sample(struct ct_trie *tr, ct_rank_fn rank,
					void *arg)
{
	struct ct_tsample sm = { .rank = rank, .arg = arg };
	uintptr_t root = ct_w_load(&tr->root);
	struct conntab_node *l;
	unsigned int i;

	for (i = 0; i < CT_T_DESCENTS && sm.n < CT_EVICT_SAMPLE; i++) {
		l = ct_t_random_leaf(root);
		if (!l)
			break;
		ct_ts_offer(&sm, l);
	}
	if (sm.n < CT_EVICT_SAMPLE)
		ct_trie_walk(&tr->base, CT_WALK_ALL, ct_ts_fill, &sm);
	return sm.best;
}

int ct_trie_insert_evict(struct conntab *t, struct conntab_node *n,
			 ct_rank_fn rank, void *arg,
			 struct conntab_node **evicted)
{
	struct ct_trie *tr = ct_trie(t);
	uint8_t sv[CT_KEY_STR_BUF];
	struct conntab_node *v;
	int err;

	for (;;) {
		err = ct_t_insert(tr, n, NULL, false);
		if (err != -ENOSPC)
			return err;
		t->flavor->read_lock();
		v = ct_t_sample(tr, rank, arg);
		if (v) {
			ct_key_str(&v->ct_key, sv);
			err = ct_t_remove_light(tr, v, sv);
		}
		t->flavor->read_unlock();
		if (!v)
			return -ENOSPC;
		if (!err)
			break;
		/* removed by another writer first: room, or another sample */
	}
	err = ct_t_insert(tr, n, NULL, true);
	if (!err) {
		*evicted = v;
	} else {
		/* Claimed again for the table before it is linked again. */
		ct_delay(CT_DP_TR_PUB_EVICT);
		__atomic_store_n(&v->ct_owner, t, __ATOMIC_RELEASE);
		if (ct_t_insert(tr, v, NULL, true)) {
			ct_node_release(v);
			ct_unreserve(t);
			*evicted = v;
		}
	}
	ct_t_tidy(tr, sv);
	return err;
}
