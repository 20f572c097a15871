/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure over a whole scripted workload (failalloc.c): for
 * n = 1, 2, ... the n-th allocation of the workload fails (alone, then
 * together with every later one), until a run makes fewer than n. The
 * workload: create with expected = 0 (a growing backend must resize),
 * inserts through growth, time-wait in place and to another node,
 * insert_recycle over TIME_WAIT nodes, removals (a shrinking backend
 * resizes back), retries of what failed, a walk and a scan pass in small
 * calls, destroy; then a second table with a cap, filled past it with
 * conntab_insert_evict().
 *
 * Every call must succeed or give -ENOMEM (create: NULL with errno
 * ENOMEM) and leave the table as the model says: after each failure the
 * key is absent or unchanged and the counts are the model's; at the end
 * of each run every key's lookup gives the model's node and state, a walk
 * visits the model's number of nodes, destroy releases each once.
 * Leaks: the sanitizer build runs this under LeakSanitizer (make check
 * with --enable-sanitizers in .ci/run), which reports anything the
 * library failed to free on an error path at exit.
 *
 * Check allocates in its assertions, so while a failure is armed the
 * workload records the first problem in a static buffer, and the test
 * asserts once the failure is off.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failalloc.h"
#include "helpers.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

#define NK		600	/* keys: enough to grow a few times */
#define MAX_ALLOCS	200000	/* a workload never needs this many */

static struct tconn est[NK], tws[NK], rcy[NK];
static struct tconn *holder[NK];
static enum conntab_state hstate[NK];
static size_t released;

static char problem[256];
static int nproblems;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	if (nproblems++)
		return;
	va_start(ap, fmt);
	vsnprintf(problem, sizeof(problem), fmt, ap);
	va_end(ap);
}

struct run {
	long n;			/* failing allocation (1-based) */
	int sticky;		/* and every later one */
	unsigned long nomem;	/* calls that answered -ENOMEM */
	unsigned long calls;	/* writer calls made */
};

/* The table agrees with the model: key @i, or all keys with i < 0. */
static void check_model(struct conntab *t, long i, const char *after)
{
	struct conntab_stats st;
	struct conntab_node *n;
	struct conntab_key k;
	size_t in = 0, tw = 0;
	long j;

	for (j = 0; j < NK; j++) {
		in += holder[j] != NULL;
		tw += holder[j] && hstate[j] == CONNTAB_TIMEWAIT;
	}
	conntab_stats(t, &st);
	if (st.entries != in || st.timewait != tw)
		note("after %s: stats %zu entries %zu timewait, model %zu %zu",
		     after, st.entries, st.timewait, in, tw);
	rcu_read_lock();
	for (j = i < 0 ? 0 : i; j < (i < 0 ? NK : i + 1); j++) {
		t_key(&k, (uint32_t)j);
		n = conntab_lookup(t, &k);
		if (n != (holder[j] ? &holder[j]->node : NULL))
			note("after %s: key %ld finds %p, model %p", after, j,
			     (void *)n,
			     holder[j] ? (void *)&holder[j]->node : NULL);
		else if (n && conntab_node_state(n) != hstate[j])
			note("after %s: key %ld in state %d, model %d", after,
			     j, conntab_node_state(n), hstate[j]);
	}
	rcu_read_unlock();
}

/* 0, or -ENOMEM with the table unchanged (checked by the caller). */
static int outcome(struct run *r, int err, const char *op, long i)
{
	r->calls++;
	if (err == -ENOMEM) {
		r->nomem++;
		return 1;
	}
	if (err)
		note("%s key %ld: %d (allocation %ld failing%s)", op, i, err,
		     r->n, r->sticky ? " on" : "");
	return 0;
}

static int count_fn(struct conntab_node *n, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

static void release_fn(struct conntab_node *n)
{
	released++;
}

static long rank_id(struct conntab_node *n, void *arg)
{
	return (long)t_conn_of(n)->id;
}

/*
 * A table capped at NK / 4, filled to NK keys with insert_evict: each
 * call is 0 (an eviction once full) or -ENOMEM with nothing evicted, and
 * the count never passes the cap.
 */
static void evict_workload(enum conntab_backend b, struct run *r)
{
	struct conntab_config cfg = {
		.backend = b, .hash = t_hash, .max_entries = NK / 4,
	};
	struct conntab_node *ev;
	struct conntab_stats st;
	struct conntab_key k;
	struct conntab *t;
	size_t in = 0;
	long i;
	int err;

	for (i = 0; i < NK; i++)
		conntab_node_init(&est[i].node);
	t = conntab_create(&cfg);
	if (!t) {
		if (errno != ENOMEM)
			note("create: NULL with errno %d", errno);
		r->nomem++;
		return;
	}
	for (i = 0; i < NK; i++) {
		t_key(&k, (uint32_t)i);
		err = conntab_insert_evict(t, &est[i].node, &k, rank_id, NULL,
					   &ev);
		if (outcome(r, err, "insert_evict", i)) {
			if (ev)
				note("insert_evict -ENOMEM evicted %p",
				     (void *)ev);
			continue;
		}
		if (err)
			continue;
		if (ev)
			conntab_node_init(ev);	/* no reader: reuse now */
		else
			in++;
		conntab_stats(t, &st);
		if (st.entries != in || in > NK / 4)
			note("insert_evict key %ld: %zu entries, model %zu",
			     i, st.entries, in);
	}
	conntab_destroy(t, NULL);
}

/* One run of the workload with allocation r->n failing; false: no table. */
static int workload(enum conntab_backend b, struct run *r)
{
	struct conntab_config cfg = { .backend = b, .hash = t_hash };
	struct conntab_node *rec;
	struct conntab_key k;
	struct conntab *t;
	size_t in, walked = 0;
	long i;
	int err;

	for (i = 0; i < NK; i++) {
		conntab_node_init(&est[i].node);
		conntab_node_init(&tws[i].node);
		conntab_node_init(&rcy[i].node);
		holder[i] = NULL;
	}
	errno = 0;
	t = conntab_create(&cfg);
	if (!t) {
		if (errno != ENOMEM)
			note("create: NULL with errno %d", errno);
		r->nomem++;
		return 0;
	}
	/* Inserts through growth. */
	for (i = 0; i < NK; i++) {
		t_key(&k, (uint32_t)i);
		err = conntab_insert(t, &est[i].node, &k);
		if (outcome(r, err, "insert", i)) {
			check_model(t, i, "insert -ENOMEM");
			continue;
		}
		if (!err) {
			holder[i] = &est[i];
			hstate[i] = CONNTAB_ESTABLISHED;
		}
	}
	/* Time-wait, in place and to another node. */
	for (i = 0; i < NK; i += 5) {
		if (!holder[i])
			continue;
		err = conntab_timewait(t, &est[i].node, &est[i].node);
		if (outcome(r, err, "timewait in place", i))
			check_model(t, i, "timewait -ENOMEM");
		else if (!err)
			hstate[i] = CONNTAB_TIMEWAIT;
	}
	for (i = 1; i < NK; i += 5) {
		if (!holder[i])
			continue;
		err = conntab_timewait(t, &est[i].node, &tws[i].node);
		if (outcome(r, err, "timewait", i)) {
			check_model(t, i, "timewait -ENOMEM");
		} else if (!err) {
			holder[i] = &tws[i];
			hstate[i] = CONNTAB_TIMEWAIT;
		}
	}
	/* Recycle some TIME_WAIT nodes of both kinds. */
	for (i = 0; i < NK; i += 2) {
		if (!holder[i] || hstate[i] != CONNTAB_TIMEWAIT)
			continue;
		t_key(&k, (uint32_t)i);
		rec = NULL;
		err = conntab_insert_recycle(t, &rcy[i].node, &k, &rec);
		if (outcome(r, err, "insert_recycle", i)) {
			if (rec)
				note("insert_recycle -ENOMEM returned %p",
				     (void *)rec);
			check_model(t, i, "insert_recycle -ENOMEM");
		} else if (!err) {
			if (rec != &holder[i]->node)
				note("recycle key %ld returned %p", i,
				     (void *)rec);
			holder[i] = &rcy[i];
			hstate[i] = CONNTAB_ESTABLISHED;
		}
	}
	/* Remove two thirds: a shrinking backend resizes back. */
	for (i = 0; i < NK; i++) {
		if (!holder[i] || i % 3 == 0)
			continue;
		err = conntab_remove(t, &holder[i]->node);
		r->calls++;
		if (err) {
			/* The contract has no -ENOMEM for remove. */
			note("remove key %ld: %d", i, err);
			continue;
		}
		holder[i] = NULL;
	}
	/* Retry what failed (the refused nodes were released). */
	for (i = 0; i < NK; i += 3) {
		if (holder[i])
			continue;
		t_key(&k, (uint32_t)i);
		err = conntab_insert(t, &est[i].node, &k);
		if (outcome(r, err, "insert retry", i)) {
			check_model(t, i, "insert retry -ENOMEM");
		} else if (!err) {
			holder[i] = &est[i];
			hstate[i] = CONNTAB_ESTABLISHED;
		}
	}
	check_model(t, -1, "the workload");
	rcu_read_lock();
	err = conntab_walk(t, count_fn, &walked);
	rcu_read_unlock();
	for (i = 0, in = 0; i < NK; i++)
		in += holder[i] != NULL;
	if (err || walked != in)
		note("walk: %d, %zu nodes, model %zu", err, walked, in);
	{
		struct conntab_cursor cur = { { 0 } };

		walked = 0;
		do {
			rcu_read_lock();
			err = conntab_scan(t, &cur, 7, count_fn, &walked);
			rcu_read_unlock();
		} while (err == 0);
		if (err != 1 || walked != in)
			note("scan: %d, %zu nodes, model %zu", err, walked,
			     in);
	}
	released = 0;
	conntab_destroy(t, release_fn);
	if (released != in)
		note("destroy released %zu nodes, model %zu", released, in);
	evict_workload(b, r);
	return 1;
}

static void alloc_seq(enum conntab_backend b, int sticky)
{
	struct run r = { 0, sticky, 0, 0 };
	unsigned long runs = 0, nomem = 0, calls = 0, no_table = 0;
	long used;

	for (r.n = 1; r.n < MAX_ALLOCS; r.n++) {
		r.nomem = r.calls = 0;
		nproblems = 0;
		fa_arm(r.n, sticky, 0);
		no_table += !workload(b, &r);
		used = fa_disarm();
		ck_assert_msg(nproblems == 0, "%s: allocation %ld failing%s: "
			      "%s (%d problems)", conntab_backend_name(b), r.n,
			      sticky ? " on" : "", problem, nproblems);
		runs++;
		nomem += r.nomem;
		calls += r.calls;
		if (used < r.n)
			break;	/* the workload ran without failing */
	}
	/* The library's deferred frees: done before the leak check. */
	rcu_barrier();
	ck_assert_int_lt(r.n, MAX_ALLOCS);
	printf("%s: workload makes %ld allocations; each failing%s tested: "
	       "%lu runs, %lu writer calls, %lu -ENOMEM answers, %lu "
	       "creates refused\n", conntab_backend_name(b), r.n - 1,
	       sticky ? " with all later ones" : " alone", runs, calls,
	       nomem, no_table);
	fflush(stdout);
}

START_TEST(nth_fails)
{
	alloc_seq(B, 0);
}
END_TEST

START_TEST(nth_on_fail)
{
	alloc_seq(B, 1);
}
END_TEST

static void warm_up_cb(struct rcu_head *rh)
{
}

int main(void)
{
	const TTest *const per_backend[] = { nth_fails, nth_on_fail };
	Suite *s = suite_create("alloc-seq");
	static struct rcu_head rh;
	int ret;

	rcu_register_thread();
	/* liburcu's call_rcu worker allocates on first use: start it now. */
	call_rcu(&rh, warm_up_cb);
	rcu_barrier();
	t_add_backend_cases(s, per_backend, 2, 120);
	ret = t_run(s, 600);
	rcu_unregister_thread();
	return ret;
}
