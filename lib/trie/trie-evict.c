/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: conntab_insert_evict().
 *
 * The sample: lib/trie/trie-sample.h (random descents that take each node's
 * child by weight, then a fill from a random place; bounded work).
 *
 * The step. The trie's writers lock a node's place, not a bucket, and
 * the victim's place is anywhere in the trie, so the victim is not
 * unlinked under the newcomer's locks as the hash backends do
 * (lib/evict.h). Instead the victim is claimed, and stays linked until
 * the newcomer is in:
 *  1. a plain insert: at the cap it fails with -ENOSPC after the key
 *     check under its lock (an existing key is -EEXIST: nothing evicted);
 *  2. under the RCU read lock, the sample is ranked (the rank runs under
 *     no writer lock here: the contract's rules for it suffice) and the
 *     best victim is claimed: under the lock of its place, still there
 *     and owned by the table, its ct_owner becomes the table's eviction
 *     mark (ct_evict_mark()). From then on no other writer unlinks or
 *     replaces it (remove, timewait, recycle see the mark under that
 *     lock and wait for the eviction to end); one already gone or
 *     claimed by another eviction sends us back to step 1;
 *  3. the newcomer is inserted on the victim's reservation and entry
 *     count (ct_t_insert() with held): its key checked and its leaf
 *     linked under one lock hold, as any insert;
 *  4. in: the victim is removed as by conntab_remove() (the node it
 *     leaves reshaped, so the memory bound of lib/trie/trie.c holds), its
 *     claim ending as its owner becomes NULL, and returned in *evicted;
 *     failed (another writer inserted the same key since step 1, or no
 *     memory): the claim is dropped (owner back to the table), the
 *     victim never having left, and the error returned with *evicted
 *     NULL.
 *
 * When it answers -ENOSPC. Only when its sample offered the rank at
 * least one candidate and the rank refused every one (rank < 0): a
 * sample that met nothing it could offer (every node it reached a pair
 * that another writer step holds, or the table emptied under it) is
 * taken again, after a pause, until that step ends, and a candidate that
 * another eviction claimed first sends us back to step 1, where its
 * eviction has either made room or left a table to sample again. So at a
 * tiny cap (1 to 3) with several evicting writers, whose steps hold
 * claims most of the time, an insert that any node would make room for
 * never fails (tests/test-trie-evict.c, trie-evict-tiny-cap, also under
 * delays on this path). What remains: a sample that mixes refused
 * candidates with pairs held by other steps answers -ENOSPC, though a
 * held pair might have been evictable once its step ended; and, as the
 * contract says, a sample of 8 in a larger table may miss the nodes the
 * rank would give up.
 *
 * So the call is one writer step as the contract says: to other
 * writers the victim is in the table until the newcomer is, and a
 * failure changes nothing. The entry count never exceeds max_entries
 * (the newcomer counts on the victim's reservation); readers and walks
 * may find both for an instant, as a walk may meet any node that is
 * removed while it runs.
 */
#include <sched.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "../rcu-reg.h"
#include "trie-path.h"
#include "trie-sample.h"

/* Reader: rank a sample; the best victim, or NULL. */
static struct conntab_node *ct_t_sample(struct ct_trie *tr, ct_rank_fn rank,
					void *arg, size_t *offered)
{
	struct ct_tsample sm = {
		.t = &tr->base, .rank = rank, .arg = arg,
		.random = ct_evict_random,
	};

	ct_ts_sample(&sm, tr);
	*offered = sm.n;
	return sm.best;
}

/*
 * Step 2's claim of victim @v (key string @s), under the RCU read lock:
 * 0, -ENOENT if it is gone or another eviction has it, -EAGAIN if its
 * place moved under us.
 */
static int ct_t_claim1(struct ct_trie *tr, struct conntab_node *v,
		       const uint8_t *s)
{
	struct ct_thold h;
	int err;

	err = ct_t_hold_leaf(tr, s, ct_w_of(v), &h);
	if (err)
		return err;
	/*
	 * A compare-and-swap, not a store: a pair's halves are also claimed
	 * under no trie lock (lib/conntab.c), and only one claim may win.
	 */
	ct_delay(CT_DP_TR_PUB_EVICT);
	if (!ct_node_claim_linked(v, &tr->base))
		err = -ENOENT;
	ct_hold_unlock(tr, &h);
	return err;
}

int ct_trie_insert_evict(struct conntab *t, struct conntab_node *n,
			 ct_rank_fn rank, void *arg,
			 struct conntab_node **evicted)
{
	struct ct_trie *tr = ct_trie(t);
	uint8_t sv[CT_KEY_STR_BUF];
	struct conntab_node *v;
	unsigned int spins = 0, tries = 0;
	size_t offered;
	int err;

	for (;;) {
		err = ct_t_insert(tr, n, NULL, false);
		if (err != -ENOSPC)
			return err;
		ct_writer_read_lock(t);
		v = ct_t_sample(tr, rank, arg, &offered);
		if (v) {
			ct_key_str(&v->ct_key, sv);
			while ((err = ct_t_claim1(tr, v, sv)) == -EAGAIN)
				;
			/*
			 * A pair goes whole (P1): its other half is claimed
			 * too, by a compare-and-swap that fails rather than
			 * waits (P3); the front end unlinks it once v is out.
			 */
			if (!err && v->ct_peer &&
			    !ct_node_claim_linked(v->ct_peer, t)) {
				ct_node_unclaim(v, t);
				err = -ENOENT;
			}
		}
		ct_writer_read_unlock(t);
		/*
		 * A sample that met no node at all, at the cap, raced with
		 * removals that emptied the table after our insert found it
		 * full: there is room now, try again. The only other way to
		 * meet none is inserts that have counted their node and not
		 * linked it yet; each ends within its call, so this loop
		 * ends (pausing, to let a preempted one run). A sample the
		 * rank refused entirely is the answer: -ENOSPC.
		 */
		if (!v && !offered) {
			ct_spin_pause(&spins);
			continue;
		}
		if (!v)
			return -ENOSPC;
		if (!err)
			break;
		/*
		 * Gone, or another eviction's: room, or another sample. That
		 * eviction ends within its call; yield to it after the first
		 * few tries, so that a preempted one runs and this loop does
		 * not rank sample after sample meanwhile.
		 */
		if (++tries > 4)
			sched_yield();
		else
			ct_spin_pause(&spins);
	}
	ct_delay(CT_DP_TR_EVICT_HELD);
	err = ct_t_insert(tr, n, NULL, true);
	if (err) {
		/*
		 * The claim ends with v where it was: release, so that a
		 * writer waiting in ct_node_wait_evict() sees v's state.
		 */
		ct_delay(CT_DP_TR_PUB_EVICT);
		if (v->ct_peer)
			ct_node_unclaim(v->ct_peer, t);
		__atomic_store_n(&v->ct_owner, t, __ATOMIC_RELEASE);
		return err;
	}
	/* Only this call can unlink v now: it is found. */
	ct_delay(CT_DP_TR_EVICT_HELD);
	err = ct_t_remove(tr, v, true, false);
#ifdef CT_DEBUG
	if (err) {
		fprintf(stderr, "conntab: trie eviction lost its victim (%d)\n",
			err);
		abort();
	}
#endif
	*evicted = v;
	return 0;
}
