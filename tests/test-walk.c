/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Contract of conntab_walk(), conntab_walk_state(), conntab_stats() and
 * conntab_destroy(), run against every backend this build accepts (one
 * TCase per backend, the backend passed as the loop index).
 *
 * Single-threaded: the main thread is a registered memb reader and holds
 * the read lock around walks as the contract asks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

/* --- walk ----------------------------------------------------------- */

struct walk_ctx {
	struct conntab *t;
	unsigned int seen[512];
	size_t calls;
	size_t stop_after;	/* return stop_ret at this call (0 = never) */
	int stop_ret;
	int action;		/* 0 none, 1 remove, 2 timewait in place,
				   3 timewait to a new node */
	struct tconn *spare;	/* for action 3 */
	size_t nspare;
	int expect_state;	/* -1 any */
};

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk_ctx *w = arg;
	struct tconn *c = t_conn_of(n);

	ck_assert_uint_eq(c->magic, T_MAGIC_LIVE);
	if (w->expect_state >= 0)
		ck_assert_int_eq(conntab_node_state(n), w->expect_state);
	/* A replacement linked by action 3 may or may not be visited. */
	if (w->action == 3 && conntab_node_state(n) == CONNTAB_TIMEWAIT)
		return 0;
	ck_assert_uint_lt(c->id, 512);
	w->seen[c->id]++;
	w->calls++;
	switch (w->action) {
	case 1:
		ck_assert_int_eq(conntab_remove(w->t, n), 0);
		break;
	case 2:
		ck_assert_int_eq(conntab_timewait(w->t, n, n), 0);
		break;
	case 3:
		ck_assert_uint_lt(w->nspare, 512);
		w->spare[w->nspare].id = c->id;
		ck_assert_int_eq(conntab_timewait(w->t, n,
						  &w->spare[w->nspare].node),
				 0);
		w->nspare++;
		break;
	}
	return w->stop_after && w->calls == w->stop_after ? w->stop_ret : 0;
}

static int walk(struct walk_ctx *w, int state)
{
	int ret;

	memset(w->seen, 0, sizeof(w->seen));
	w->calls = 0;
	rcu_read_lock();
	if (state < 0)
		ret = conntab_walk(w->t, walk_fn, w);
	else
		ret = conntab_walk_state(w->t, state, walk_fn, w);
	rcu_read_unlock();
	return ret;
}

START_TEST(walk_visits)
{
	enum { N = 300 };
	struct walk_ctx w = { .t = t_table(B, 0, 0), .expect_state = -1 };
	static struct tconn c[N], spare[N];
	struct conntab_key k;
	size_t i;

	t_conns_init(c, N);
	ck_assert_int_eq(walk(&w, -1), 0);
	ck_assert_uint_eq(w.calls, 0);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(w.t, &c[i].node, &k), 0);
	}
	ck_assert_int_eq(walk(&w, -1), 0);
	ck_assert_uint_eq(w.calls, N);
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(w.seen[i], 1);

	/* Stop on a nonzero return, with that value. */
	w.stop_after = 17;
	w.stop_ret = -42;
	ck_assert_int_eq(walk(&w, -1), -42);
	ck_assert_uint_eq(w.calls, 17);
	w.stop_after = 1;
	w.stop_ret = 5;
	ck_assert_int_eq(walk(&w, -1), 5);
	ck_assert_uint_eq(w.calls, 1);
	/*
	 * 1 too, anywhere: split and exthash once took it for the end of
	 * their pass and returned 0, as if the walk had been whole.
	 */
	for (i = 1; i <= N; i += 37) {
		w.stop_after = i;
		w.stop_ret = 1;
		ck_assert_int_eq(walk(&w, -1), 1);
		ck_assert_uint_eq(w.calls, i);
		ck_assert_int_eq(walk(&w, CONNTAB_ESTABLISHED), 1);
		ck_assert_uint_eq(w.calls, i);
		/* The hash backends' prefix walk is a filtered walk. */
		w.calls = 0;
		t_key(&k, 0);
		rcu_read_lock();
		ck_assert_int_eq(conntab_walk_prefix(w.t, &k, 0, walk_fn, &w),
				 1);
		rcu_read_unlock();
		ck_assert_uint_eq(w.calls, i);
	}
	w.stop_after = N;	/* the last node of the walk */
	ck_assert_int_eq(walk(&w, -1), 1);
	ck_assert_uint_eq(w.calls, N);
	w.stop_after = 0;

	/* fn flips every third node to TIME_WAIT in place. */
	for (i = 0; i < N; i += 3)
		ck_assert_int_eq(conntab_timewait(w.t, &c[i].node,
						  &c[i].node), 0);
	/* walk_state filters. */
	w.expect_state = CONNTAB_TIMEWAIT;
	ck_assert_int_eq(walk(&w, CONNTAB_TIMEWAIT), 0);
	ck_assert_uint_eq(w.calls, (N + 2) / 3);
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(w.seen[i], i % 3 == 0);
	w.expect_state = CONNTAB_ESTABLISHED;
	ck_assert_int_eq(walk(&w, CONNTAB_ESTABLISHED), 0);
	ck_assert_uint_eq(w.calls, N - (N + 2) / 3);
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(w.seen[i], i % 3 != 0);
	w.stop_after = 2;
	w.stop_ret = 9;
	ck_assert_int_eq(walk(&w, CONNTAB_ESTABLISHED), 9);
	ck_assert_uint_eq(w.calls, 2);
	w.stop_after = 0;

	/* fn moves the established nodes to TIME_WAIT nodes of their own. */
	t_conns_init(spare, N);
	w.spare = spare;
	w.action = 3;
	w.expect_state = -1;
	ck_assert_int_eq(walk(&w, -1), 0);
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(w.seen[i], i % 3 != 0);
	ck_assert_uint_eq(w.nspare, N - (N + 2) / 3);
	t_expect_counts(w.t, N, N);
	for (i = 0; i < w.nspare; i++) {
		t_key(&k, spare[i].id);
		t_expect_found(w.t, &k, &spare[i].node, CONNTAB_TIMEWAIT);
	}

	/* An expiry sweep: fn removes what it is given. */
	w.action = 1;
	w.expect_state = CONNTAB_TIMEWAIT;
	ck_assert_int_eq(walk(&w, CONNTAB_TIMEWAIT), 0);
	ck_assert_uint_eq(w.calls, N);
	t_expect_counts(w.t, 0, 0);
	w.action = 0;
	ck_assert_int_eq(walk(&w, -1), 0);
	ck_assert_uint_eq(w.calls, 0);
	conntab_destroy(w.t, NULL);
}
END_TEST

START_TEST(walk_timewait_in_place)
{
	enum { N = 200 };
	struct walk_ctx w = { .t = t_table(B, 0, 0), .expect_state = -1 };
	static struct tconn c[N];
	struct conntab_key k;
	size_t i;

	t_conns_init(c, N);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(w.t, &c[i].node, &k), 0);
	}
	w.action = 2;
	w.expect_state = CONNTAB_ESTABLISHED;
	ck_assert_int_eq(walk(&w, CONNTAB_ESTABLISHED), 0);
	ck_assert_uint_eq(w.calls, N);
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(w.seen[i], 1);
	t_expect_counts(w.t, N, N);
	/* Remove all in a walk over everything. */
	w.action = 1;
	w.expect_state = -1;
	ck_assert_int_eq(walk(&w, -1), 0);
	ck_assert_uint_eq(w.calls, N);
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(w.seen[i], 1);
	t_expect_counts(w.t, 0, 0);
	conntab_destroy(w.t, NULL);
}
END_TEST

START_TEST(walk_inval)
{
	struct walk_ctx w = { .t = t_table(B, 0, 0), .expect_state = -1 };

	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(NULL, walk_fn, &w), -EINVAL);
	ck_assert_int_eq(conntab_walk(w.t, NULL, &w), -EINVAL);
	ck_assert_int_eq(conntab_walk_state(NULL, CONNTAB_TIMEWAIT, walk_fn,
					    &w), -EINVAL);
	ck_assert_int_eq(conntab_walk_state(w.t, CONNTAB_TIMEWAIT, NULL, &w),
			 -EINVAL);
	ck_assert_int_eq(conntab_walk_state(w.t, 2, walk_fn, &w), -EINVAL);
	ck_assert_int_eq(conntab_walk_state(w.t, -1, walk_fn, &w), -EINVAL);
	rcu_read_unlock();
	ck_assert_uint_eq(w.calls, 0);
	conntab_destroy(w.t, NULL);
}
END_TEST

/* --- stats ---------------------------------------------------------- */

START_TEST(stats)
{
	enum { N = 500 };
	struct conntab *t = t_table(B, 0, 0);
	static struct tconn c[N];
	struct conntab_stats st;
	struct conntab_key k;
	size_t i;

	t_conns_init(c, N);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.timewait, 0);
	ck_assert_uint_ge(st.buckets, t_min_buckets(B, 0));
	ck_assert_uint_gt(st.memory, 0);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
		if (i % 4 == 1)
			ck_assert_int_eq(conntab_timewait(t, &c[i].node,
							  &c[i].node), 0);
	}
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, N);
	ck_assert_uint_eq(st.timewait, N / 4);
	ck_assert_uint_ge(st.buckets, t_min_buckets(B, N));
	ck_assert_uint_gt(st.memory, 0);
	ck_assert_uint_ge(st.max_depth, 1);
	ck_assert_uint_le(st.max_depth, N);
	/* NULL st is ignored; NULL t zeroes. */
	conntab_stats(t, NULL);
	memset(&st, 0xff, sizeof(st));
	conntab_stats(NULL, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.timewait, 0);
	ck_assert_uint_eq(st.buckets, 0);
	ck_assert_uint_eq(st.memory, 0);
	ck_assert_uint_eq(st.max_depth, 0);
	ck_assert_uint_eq(st.resizes, 0);
	conntab_destroy(t, NULL);
}
END_TEST

/* --- destroy -------------------------------------------------------- */

static unsigned int released[64];

static void release_fn(struct conntab_node *n)
{
	struct tconn *c = t_conn_of(n);

	ck_assert_uint_eq(c->magic, T_MAGIC_LIVE);
	ck_assert_uint_lt(c->id, 64);
	released[c->id]++;
}

START_TEST(destroy)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_node *rec;
	struct conntab_key k;
	struct tconn c[64];
	size_t i;

	conntab_destroy(NULL, release_fn);
	conntab_destroy(NULL, NULL);
	t_conns_init(c, 64);
	memset(released, 0, sizeof(released));
	for (i = 0; i < 48; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	/* 0..7 removed, 8..15 TIME_WAIT in place, 16..23 replaced by
	 * 48..55, 24..31 recycled into 56..63 after TIME_WAIT. */
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		ck_assert_int_eq(conntab_timewait(t, &c[8 + i].node,
						  &c[8 + i].node), 0);
		ck_assert_int_eq(conntab_timewait(t, &c[16 + i].node,
						  &c[48 + i].node), 0);
		ck_assert_int_eq(conntab_timewait(t, &c[24 + i].node,
						  &c[24 + i].node), 0);
		t_key(&k, (uint32_t)(24 + i));
		ck_assert_int_eq(conntab_insert_recycle(t, &c[56 + i].node, &k,
							&rec), 0);
		ck_assert_ptr_eq(rec, &c[24 + i].node);
	}
	conntab_destroy(t, release_fn);
	for (i = 0; i < 64; i++)
		ck_assert_msg(released[i] == ((i >= 8 && i < 16) ||
					      (i >= 32)),
			      "%s: node %zu released %u times", BN, i,
			      released[i]);
	/* Without a release function. */
	t = t_table(B, 0, 0);
	t_conns_init(c, 4);
	for (i = 0; i < 4; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	conntab_destroy(t, NULL);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		walk_visits, walk_timewait_in_place, walk_inval,
		stats, destroy,
	};
	Suite *s = suite_create("walk");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
