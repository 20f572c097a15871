/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Delay injection: named points at the steps where concurrent code can
 * interleave badly (configure --enable-delay-injection; tests/stress).
 *
 * A race between a writer's steps and a reader (or another writer) needs
 * the other thread to run exactly between two of them, a window of a few
 * nanoseconds that a stress run hits rarely. A delay at the step widens
 * it to microseconds: the run then goes through the interleavings that
 * the invariants of each backend have to survive, thousands of times a
 * second. Every point sits just BEFORE the step it names:
 *
 *   *_pub_*	a store that makes something visible to readers (a
 *		release store of a link or slot, a count or state that a
 *		reader reads, a claim): the object is ready, not yet seen;
 *   *_unlink*	a store that takes something out of readers' reach (the
 *		reader that stands on it must still go on);
 *   *_retire*	the hand-off of unlinked memory to call_rcu (or to the
 *		queue that feeds it);
 *   *_lock_*	a lock was just taken, and what was read before it (the
 *		descent, the directory, an owner hint) is not yet validated
 *		under it: whatever changed meanwhile must be caught;
 *   *_read_*	a reader stands on a node or segment, between two loads
 *		that a writer's steps may separate.
 *
 * Areas: fe (front end, conntab.c), chain (chain.h, chain-ops.h: chained,
 * split and exthash), slot (slots.h: chained), evict (evict.h, with
 * heads.h and exthash), walk (walk.h: walks and scans of chained, split,
 * exthash), sp (split.c), xh (exthash.c), tr (the trie's files).
 *
 * Built without --enable-delay-injection, ct_delay() is nothing (its
 * argument is still type-checked). Built with it, every pass of a point
 * is counted, and the environment says where to delay, read once when
 * the library is loaded:
 *
 *   CONNTAB_DELAY=RULE[,RULE...]
 *   RULE   = PATTERN:PROB[:ACTION]
 *   PATTERN  a point name, or a glob over the names (fnmatch: xh_*,
 *            *_unlink*, tr_lock_*); "all" is every point
 *   PROB     probability of a delay at each pass, 0 to 1 (0.01, 1e-3)
 *   ACTION   spin=N         up to N pause instructions (default 1000)
 *            sleep=N[UNIT]  up to N ns, us (default) or ms, nanosleep()
 *            yield          sched_yield()
 *
 * e.g. CONNTAB_DELAY=all:0.01:spin=2000 or
 *      CONNTAB_DELAY=all:0.005,xh_pub_*:0.05:sleep=50us,tr_lock_*:0.1:yield
 *
 * Rules apply in order, a later one replacing an earlier one's setting
 * for the points it matches; a pattern that matches no point, or any
 * other mistake, stops the process at load with a message (a typo must
 * not look like a run with delays). The amount of each delay is drawn
 * uniformly in [1, N] from a per-thread random stream, and so is the
 * decision, so that the threads do not move in lock step. `tests/stress
 * --list-points` lists the points; a run prints how often each was
 * passed and delayed.
 *
 * Nothing here is exported: the library's own points call a hidden
 * function, and tests/stress of such a build links the library's objects
 * (tests/local.mk) to read the counters.
 */
#ifndef CT_DELAY_H
#define CT_DELAY_H

#ifdef HAVE_CONFIG_H
# include "config.h"	/* CONNTAB_DELAY_INJECTION */
#endif

#include <stddef.h>
#include <stdint.h>

/*
 * X(ID, name, where and what the step is). One table: the enum below,
 * the names in lib/delay.c, and the list of tests/stress --list-points.
 */
#define CT_DELAY_POINTS(X)						\
	/* front end: lib/conntab.c */					\
	X(FE_PUB_CLAIM, "fe_pub_claim",					\
	  "insert: node claimed, key copied; the backend links it next") \
	X(FE_PUB_TW_CLAIM, "fe_pub_tw_claim",				\
	  "timewait: new node claimed with the old one's key; the backend swaps next") \
	X(FE_LOCK_OWNER, "fe_lock_owner",				\
	  "remove, timewait: owner hint read; the backend locks and rechecks it next") \
	/* chains: lib/hashtab/chain.h, lib/hashtab/chain-ops.h */			\
	X(CHAIN_READ_NEXT, "chain_read_next",				\
	  "lookup standing on a node, before it follows the node's link") \
	X(CHAIN_PUB_PUSH, "chain_pub_push",				\
	  "node's link set, before the release store that puts it at the head") \
	X(CHAIN_PUB_REPLACE, "chain_pub_replace",			\
	  "before the release store that puts a new node in an old one's place") \
	X(CHAIN_UNLINK, "chain_unlink",					\
	  "before the release store that unlinks a node") \
	X(CHAIN_PUB_MOVE_LINK, "chain_pub_move_link",			\
	  "move, step 1: before the moving node's link goes to the other chain") \
	X(CHAIN_PUB_MOVE_DST, "chain_pub_move_dst",			\
	  "move, step 2: before the node is published at the other chain's head") \
	X(CHAIN_UNLINK_MOVE, "chain_unlink_move",			\
	  "move, step 3: node on both chains, before it leaves the old one") \
	X(CHAIN_LOCK_REMOVE, "chain_lock_remove",			\
	  "remove: chain locked, before the owner and position recheck") \
	X(CHAIN_LOCK_TIMEWAIT, "chain_lock_timewait",			\
	  "timewait: chain locked, before the owner and state recheck") \
	X(CHAIN_PUB_TW_STATE, "chain_pub_tw_state",			\
	  "timewait in place: before the node's state becomes TIME_WAIT") \
	/* slots: lib/hashtab/slots.h (chained) */				\
	X(SLOT_READ, "slot_read",					\
	  "lookup read a bucket's tags, before it loads a slot a tag matched") \
	X(SLOT_PUB, "slot_pub",						\
	  "before the release store of a node into a bucket's slot") \
	X(SLOT_PUB_TAG, "slot_pub_tag",					\
	  "slot filled, before the release store of its tag") \
	X(SLOT_UNLINK, "slot_unlink",					\
	  "before a slot's tag and then its node are cleared") \
	/* eviction: lib/evict.h (heads.h, exthash.c) */		\
	X(EVICT_LOCK_OTHER, "evict_lock_other",				\
	  "sample: another lock try-locked, before what it covers is read") \
	X(EVICT_UNLINK, "evict_unlink",					\
	  "victim chosen under its lock, before it is unlinked") \
	/* walks and scans: lib/hashtab/walk.h */				\
	X(WALK_READ_NEXT, "walk_read_next",				\
	  "walk or scan selecting, standing on a node, before following its link") \
	X(WALK_READ_VISIT, "walk_read_visit",				\
	  "walk or scan, selection made, before the callback of its next node") \
	/* split: lib/hashtab/split.c */					\
	X(SP_READ_TW, "sp_read_tw",					\
	  "lookup or walk past the est chain, before the fence and the tw chain") \
	X(SP_READ_SEQ, "sp_read_seq",					\
	  "lookup's checked pass missed, before the seq recheck") \
	X(SP_LOCK_REMOVE, "sp_lock_remove",				\
	  "remove: stripe locked, before the owner, state and position recheck") \
	X(SP_LOCK_TIMEWAIT, "sp_lock_timewait",				\
	  "timewait: stripe locked, before the owner, state and position recheck") \
	X(SP_PUB_TW_STATE, "sp_pub_tw_state",				\
	  "timewait in place: before the state store that precedes the move") \
	X(SP_PUB_SEQ_END, "sp_pub_seq_end",				\
	  "recycle tw -> est done, before seq turns even (misses wait meanwhile)") \
	/* exthash: lib/hashtab/exthash.c */					\
	X(XH_READ_SUCC, "xh_read_succ",					\
	  "lookup missed a segment's chain, before the fence and its successor") \
	X(XH_READ_SNAP, "xh_read_snap",					\
	  "walk or scan read a segment's chains, before the fence and its successor") \
	X(XH_LOCK_SEG, "xh_lock_seg",					\
	  "writer: segment from the directory locked, before the dead check (I3)") \
	X(XH_LOCK_BUDDY, "xh_lock_buddy",				\
	  "merge: buddy try-locked, before the check that it is alive and light") \
	X(XH_LOCK_DIR_SPLIT, "xh_lock_dir_split",			\
	  "split: dir_lock taken, before the depth read before it is checked") \
	X(XH_LOCK_DIR_RESIZE, "xh_lock_dir_resize",			\
	  "resize start: dir_lock taken, before the grow or shrink recheck") \
	X(XH_PUB_SUCC, "xh_pub_succ",					\
	  "split: children made, before the succ[] stores (I1)") \
	X(XH_PUB_MERGE_SUCC, "xh_pub_merge_succ",			\
	  "merge: merged segment made, before the succ[] stores of both halves (I1)") \
	X(XH_PUB_MOVE_LINK, "xh_pub_move_link",				\
	  "split or merge move: before the node's link goes to the successor's chain") \
	X(XH_PUB_MOVE_HEAD, "xh_pub_move_head",				\
	  "split or merge move: before the node is published at the successor's head") \
	X(XH_UNLINK_MOVE, "xh_unlink_move",				\
	  "split or merge move: node on both chains, before it is cut off the old one (I2)") \
	X(XH_PUB_SLOTS, "xh_pub_slots",					\
	  "before a new segment's directory slots are stored (I4)") \
	X(XH_UNLINK_SEG, "xh_unlink_seg",				\
	  "split or merge done, before the old segment is marked dead (I3)") \
	X(XH_PUB_DIR, "xh_pub_dir",					\
	  "resize: pending directory complete, before it is published") \
	X(XH_RETIRE_SEG, "xh_retire_seg",				\
	  "before a batch of dead segments goes to call_rcu (I5)") \
	X(XH_RETIRE_DIR, "xh_retire_dir",				\
	  "before the replaced directory goes to call_rcu (I5)") \
	/* trie: lib/trie/ */   						\
	X(TR_READ_STEP, "tr_read_step",					\
	  "lookup, walk or scan on an internal node, before it loads a child word") \
	X(TR_LOCK_HOLD, "tr_lock_hold",					\
	  "a place's owner locked, before the descent's reading is validated") \
	X(TR_LOCK_FAST, "tr_lock_fast",					\
	  "fast path: slot locked, before the parent and slot are validated") \
	X(TR_LOCK_RESIZE, "tr_lock_resize",				\
	  "reshape: place and every slot locked, before the counts are rechecked") \
	X(TR_PUB_HOLD, "tr_pub_hold",					\
	  "before the release store(s) of a new word into a place's slot(s)") \
	X(TR_PUB_K_ENTRY, "tr_pub_k_entry",				\
	  "sparse node: before the release store of an entry's child") \
	X(TR_PUB_K_COUNT, "tr_pub_k_count",				\
	  "sparse node: entry written, before the count that publishes it") \
	X(TR_PUB_COPY, "tr_pub_copy",					\
	  "fast path: before a grown copy is stored in the locked slot") \
	X(TR_PUB_UNSHARE, "tr_pub_unshare",				\
	  "unshare: before each piece is stored in its slot") \
	X(TR_PUB_TW_STATE, "tr_pub_tw_state",				\
	  "timewait in place: before the leaf's state becomes TIME_WAIT") \
	X(TR_PUB_EVICT, "tr_pub_evict",					\
	  "eviction: before the victim's claim is set, and before a failed one's is dropped") \
	X(TR_EVICT_HELD, "tr_evict_held",				\
	  "eviction: victim claimed, newcomer not yet inserted; then newcomer in, victim not yet removed") \
	X(TR_UNLINK_LEAF, "tr_unlink_leaf",				\
	  "remove: before the store that takes a leaf out of a sparse node") \
	X(TR_UNLINK_KILL, "tr_unlink_kill",				\
	  "a replaced node, before it is marked dead") \
	X(TR_RETIRE, "tr_retire",					\
	  "an unlinked node, before it goes on the retire stack") \
	X(TR_RETIRE_FLUSH, "tr_retire_flush",				\
	  "before a batch of retired nodes goes to call_rcu")

enum ct_delay_point {
#define CT_DP_ENUM(id, name, what)	CT_DP_##id,
	CT_DELAY_POINTS(CT_DP_ENUM)
#undef CT_DP_ENUM
	CT_DP_COUNT
};

#ifdef CONNTAB_DELAY_INJECTION

/* Count a pass of @p and maybe delay (lib/delay.c). */
void ct_delay_hit(enum ct_delay_point p);
# define ct_delay(p)	ct_delay_hit(p)

/*
 * For tests/stress, which links the library's objects: replace the
 * settings by those of @spec (CONNTAB_DELAY's syntax; NULL or "" for no
 * delays). 0, or -EINVAL with a message in @err (@len bytes). Not while
 * other threads pass points.
 */
int ct_delay_configure(const char *spec, char *err, size_t len);
/* Passes and delays of every point since the last reset ([CT_DP_COUNT]). */
void ct_delay_counts(uint64_t *passed, uint64_t *delayed);
void ct_delay_reset(void);
/*
 * The calling thread's points neither count nor delay while @mute: a
 * checker that reads the tables while every writer is stopped races
 * with nothing, and its delays would only make the run longer.
 */
void ct_delay_mute(int mute);

#else
# define ct_delay(p)	((void)(p))
#endif

#endif /* CT_DELAY_H */
