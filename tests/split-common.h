/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the stress tests of CONNTAB_SPLIT's moves (test-split-move,
 * test-split-slots): their nodes, and the run both make. Each test picks
 * its keys and buckets, and says what its readers look up and what its
 * walker checks; this file runs the rest:
 *
 *  - SP_WRITERS cycle writers move each of their keys (i = w, w +
 *    SP_WRITERS, ...) est -> tw (in place on odd cycle + i, else to a new
 *    node) and back to a new established node by insert_recycle, so every
 *    such key is in the table at every instant;
 *  - a churn writer inserts, flips in place and removes its own keys;
 *  - SP_READERS readers and a walker run the test's rounds and walks;
 *  - replaced nodes are freed through call_rcu after being poisoned, so a
 *    reader that kept one past its grace period sees the poison (and ASan
 *    reports it in a sanitizer build).
 *
 * The run lasts the seconds its environment variable says (default 2) and
 * at least until every thread made some progress. No timing is asserted.
 *
 * Include <urcu.h> first, as an application does.
 */
#ifndef T_SPLIT_COMMON_H
#define T_SPLIT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <conntab/conntab.h>

#define SP_WRITERS	2	/* cycle writers; the churn writer is one more */
#define SP_READERS	2

#define SP_MAGIC_LIVE	0x4c495645u	/* freed: 0x6b6b6b6b, the poison */

struct sp_obj {
	struct conntab_node node;
	uint32_t magic;
	struct rcu_head rcu;
};

/* What a test hands to the run. */
struct sp_test {
	struct conntab *tab;
	/* Stable nodes, never moved by the writers: stable[i] holds skeys[i]. */
	struct sp_obj *stable;
	const struct conntab_key *skeys;
	int nstable;
	/* Cycle keys: holder[i] holds mkeys[i] (writer-private in the run). */
	struct sp_obj **holder;
	const struct conntab_key *mkeys;
	int nmovers;
	const char *mover_name;		/* in the setup's error message */
	/* The churn writer's keys. */
	const struct conntab_key *ckeys;
	int nchurn;
	/*
	 * Reader @r's round @round, under the read lock: its lookups, each
	 * result counted through sp_found(); returns how many it made.
	 */
	unsigned int (*read_round)(int r, unsigned long long round);
	/*
	 * One walk: @walk_fn over all nodes, or the time-wait ones only (every
	 * other walk), with @walk_state (@walk_size bytes) zeroed before;
	 * then @walk_check(tw_only) gives the walk's errors.
	 */
	int (*walk_fn)(struct conntab_node *n, void *arg);
	void *walk_state;
	size_t walk_size;
	unsigned int (*walk_check)(int tw_only);
	const char *seconds_env;	/* the run's length */
};

/* Reader counters, per reader; sp_bad is for the reader's own checks too. */
extern unsigned long long sp_misses[SP_READERS], sp_bad[SP_READERS];

/* What the threads did, summed. */
struct sp_totals {
	unsigned long long lookups, misses, bad;
	unsigned long long moves, in_place, churn, errs;	/* all writers */
	unsigned long long walks, walk_errs;
};

/* A live, initialised node; exits on ENOMEM. */
struct sp_obj *sp_obj_new(void);

/*
 * Reader @r found @n for key @k, which is present at every instant: a
 * miss, or a node dead or of another key, is counted.
 */
void sp_found(int r, const struct conntab_node *n,
	      const struct conntab_key *k);

/*
 * Insert the stable nodes (TIME_WAIT those @stable_tw says) and then a
 * new node for each cycle key. 0, or -1 with the failure printed.
 */
int sp_insert(const struct sp_test *t, bool (*stable_tw)(int i));

/*
 * Start the readers, the cycle writers, the churn writer and the walker,
 * run them, stop and join them, and sum what they did into @tot.
 */
void sp_run(const struct sp_test *t, struct sp_totals *tot);

/*
 * The table after the run: every cycle key once, held by its holder and
 * established; the stable nodes untouched; the entry count, and
 * @timewait TIME_WAIT nodes.
 */
bool sp_final_ok(const struct sp_test *t, size_t timewait);

/*
 * The verdict: no miss, bad node, writer or walk error, some lookups and
 * moves, no @extra_bad, and a good final state (@final_ok). Prints FAIL
 * and returns 1 otherwise.
 */
int sp_verdict(const struct sp_totals *tot, bool extra_bad, bool final_ok);

/* Wait for the call_rcu frees, destroy the table, unregister. */
void sp_teardown(const struct sp_test *t);

#endif /* T_SPLIT_COMMON_H */
