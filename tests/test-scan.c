/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Contract of conntab_scan(), every backend and hash: the return codes and
 * the cursor, budgets from 1 to more than the table, callbacks that stop,
 * remove or time-wait their node, and passes that run while a writer
 * grows and shrinks the table in waves (exthash splitting and merging,
 * its directory doubling and halving), each call in a read-side section
 * of its own: a node present for the whole pass is visited exactly once,
 * any other node at most once, pass after pass. A callback's value, 1
 * included, stops a call and never the pass (issue 27, item 8: a 1 was
 * taken for the end of the pass, and the nodes after it were lost).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threads.h"

#define B		((enum conntab_backend)_i)

struct scan_ctx {
	struct conntab *t;
	uint32_t pass;		/* mark of the pass running */
	size_t calls;		/* callbacks in this conntab_scan() call */
	size_t stop_at;		/* return stop_ret at this callback (0: never) */
	size_t every;		/* and at every every-th of the pass (0: never) */
	size_t total;		/* callbacks in this pass */
	int stop_ret;
	int action;		/* 0 none, 1 remove, 2 timewait in place */
	unsigned long twice;	/* nodes visited twice in one pass */
	struct conntab_node *last;	/* the node of the last callback */
};

static int scan_fn(struct conntab_node *n, void *arg)
{
	struct scan_ctx *s = arg;
	struct tconn *c = t_conn_of(n);

	if (c->magic != T_MAGIC_LIVE) {
		th_report("scan: node %p not alive (magic %#x)", (void *)c,
			  c->magic);
		return 0;
	}
	if (c->mark == s->pass) {
		c->count++;
		s->twice++;
	} else {
		c->mark = s->pass;
		c->count = 1;
	}
	s->calls++;
	s->total++;
	s->last = n;
	if (s->action == 1)
		ck_assert_int_eq(conntab_remove(s->t, n), 0);
	else if (s->action == 2 && conntab_node_state(n) == CONNTAB_ESTABLISHED)
		ck_assert_int_eq(conntab_timewait(s->t, n, n), 0);
	if (s->stop_at && s->calls == s->stop_at)
		return s->stop_ret;
	if (s->every && s->total % s->every == 0)
		return s->stop_ret;
	return 0;
}

/* Did the last callback of the call just made stop it? */
static int scan_stopped(const struct scan_ctx *s)
{
	return s->calls && ((s->stop_at && s->calls == s->stop_at) ||
			    (s->every && s->total % s->every == 0));
}

/* One call in its own read-side section; checks the budget is kept. */
static int scan_call(struct conntab *t, struct conntab_cursor *cur,
		     size_t budget, struct scan_ctx *s)
{
	int ret;

	s->calls = 0;
	rcu_read_lock();
	ret = conntab_scan(t, cur, budget, scan_fn, s);
	rcu_read_unlock();
	ck_assert_uint_le(s->calls, budget);
	return ret;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int cursor_zero(const struct conntab_cursor *cur)
{
	static const struct conntab_cursor zero;

	return !memcmp(cur, &zero, sizeof(zero));
}

/*
 * A whole pass with @budget per call, until it ends (the
 * callback may stop calls with s->every); returns the number of calls.
 */
static size_t scan_pass(struct conntab *t, size_t budget, struct scan_ctx *s)
{
	struct conntab_cursor cur = { { 0 } };
	size_t calls = 0;
	int ret;

	s->pass++;
	s->total = 0;
	for (;;) {
		ret = scan_call(t, &cur, budget, s);
		calls++;
		if (scan_stopped(s)) {
			ck_assert_int_eq(ret, s->stop_ret);
			ck_assert(!conntab_cursor_done(&cur));
			continue;
		}
		ck_assert_int_ge(ret, 0);
		ck_assert_int_le(ret, 1);
		ck_assert_int_eq(conntab_cursor_done(&cur), ret == 1);
		ck_assert_int_eq(cursor_zero(&cur), ret == 1);
		if (ret == 1)
			return calls;
	}
}

static struct conntab *filled(enum conntab_backend b, size_t n,
			      struct tconn *c, size_t expected)
{
	struct conntab *t = t_table(b, expected, 0);
	struct conntab_key k;
	size_t i;

	t_conns_init(c, n);
	for (i = 0; i < n; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	return t;
}

START_TEST(scan_codes)
{
	static struct tconn c[300];
	struct conntab_cursor cur = { { 0 } }, other;
	struct scan_ctx s = { 0 };
	struct conntab *t, *u;
	size_t i;

	t = t_table(B, 0, 0);
	u = t_table(B, 0, 0);
	/* Bad arguments: -EINVAL, cursor untouched. */
	ck_assert_int_eq(conntab_scan(NULL, &cur, 1, scan_fn, &s), -EINVAL);
	ck_assert_int_eq(conntab_scan(t, NULL, 1, scan_fn, &s), -EINVAL);
	ck_assert_int_eq(conntab_scan(t, &cur, 1, NULL, &s), -EINVAL);
	ck_assert_int_eq(conntab_scan(t, &cur, 0, scan_fn, &s), -EINVAL);
	ck_assert(cursor_zero(&cur));
	/*
	 * Empty table: a call with a budget that covers its empty slots
	 * ends the pass at once; with budget 1, calls that visit nothing
	 * pass the empty slots a bounded number at a time, and end it.
	 */
	s.pass = 1;
	ck_assert_int_eq(scan_call(t, &cur, 1000, &s), 1);
	ck_assert_uint_eq(s.calls, 0);
	ck_assert(cursor_zero(&cur));
	for (i = 0; i < 1000 && scan_call(t, &cur, 1, &s) == 0; i++)
		ck_assert_uint_eq(s.calls, 0);
	ck_assert_uint_lt(i, 1000);
	ck_assert(cursor_zero(&cur));
	conntab_destroy(t, NULL);

	t = filled(B, 300, c, 0);
	/* Budget: 0 while nodes are left, the cursor records where. */
	s.pass = 2;
	ck_assert_int_eq(scan_call(t, &cur, 7, &s), 0);
	ck_assert_uint_eq(s.calls, 7);
	ck_assert(!cursor_zero(&cur));
	/* A cursor of this table is refused by another table... */
	ck_assert_int_eq(conntab_scan(u, &cur, 5, scan_fn, &s), -EINVAL);
	/* ...and garbage in a cursor by any. */
	other = cur;
	other.opaque[0] ^= 0x10;
	ck_assert_int_eq(conntab_scan(t, &other, 5, scan_fn, &s), -EINVAL);
	memset(&other, 0, sizeof(other));
	other.opaque[3] = 1;	/* "fresh", but not zero */
	ck_assert_int_eq(conntab_scan(t, &other, 5, scan_fn, &s), -EINVAL);
	/* fn's value stops the call; the pass goes on after that node. */
	s.stop_at = 3;
	s.stop_ret = 42;
	ck_assert_int_eq(scan_call(t, &cur, 50, &s), 42);
	ck_assert_uint_eq(s.calls, 3);
	s.stop_at = 0;
	s.stop_ret = -ENOENT;	/* negative values come back too */
	s.stop_at = 1;
	ck_assert_int_eq(scan_call(t, &cur, 50, &s), -ENOENT);
	s.stop_at = 0;
	while (scan_call(t, &cur, 64, &s) == 0)
		;
	ck_assert(cursor_zero(&cur));
	for (i = 0; i < 300; i++) {
		ck_assert_uint_eq(c[i].mark, 2);
		ck_assert_uint_eq(c[i].count, 1);
	}
	ck_assert_uint_eq(s.twice, 0);
	/* The next call starts a new pass. */
	s.pass = 3;
	ck_assert_int_eq(scan_call(t, &cur, 1000, &s), 1);
	ck_assert_uint_eq(s.calls, 300);
	t_expect_counts(t, 300, 0);
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

/*
 * Every value a callback can stop a call with comes back as it is, 1
 * included, and never ends the pass: the cursor stays just after the
 * node, not zeroed, so conntab_cursor_done() tells a 1 from the end of
 * the pass. Stops every k-th callback of the pass, at budget boundaries
 * (the budget-th callback of a call, the one after), and on the last node
 * of the pass, whose next call visits nothing and ends it.
 */
START_TEST(scan_stop_values)
{
	enum { N = 300 };
	static const int values[] = { 1, 2, -1, 42, -EINVAL, INT_MAX, INT_MIN };
	static const size_t budgets[] = { 1, 7, 32, 33, N - 1, N, 1000 };
	static struct tconn c[N];
	struct conntab_cursor cur;
	struct scan_ctx s = { 0 };
	size_t v, b, e, i, every[5], calls, stops;
	struct conntab *t;
	int ret;

	t = filled(B, N, c, 0);
	memset(&cur, 0, sizeof(cur));
	ck_assert(conntab_cursor_done(&cur));
	for (v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
		for (b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
			every[0] = 1;
			every[1] = 10;
			every[2] = budgets[b];
			every[3] = budgets[b] + 1;
			every[4] = N;		/* the last node of the pass */
			for (e = 0; e < 5; e++) {
				s.stop_ret = values[v];
				s.every = every[e];
				s.pass++;
				s.total = 0;
				memset(&cur, 0, sizeof(cur));
				calls = stops = 0;
				for (;;) {
					ret = scan_call(t, &cur, budgets[b],
							&s);
					ck_assert_uint_le(++calls, 2 * N + 2);
					if (scan_stopped(&s)) {
						ck_assert_int_eq(ret,
								 values[v]);
						ck_assert(!conntab_cursor_done(
							&cur));
						stops++;
						continue;
					}
					ck_assert_int_ge(ret, 0);
					ck_assert_int_le(ret, 1);
					ck_assert_int_eq(
						conntab_cursor_done(&cur),
						ret == 1);
					if (ret == 1)
						break;
				}
				ck_assert_uint_eq(s.total, N);
				ck_assert_uint_eq(stops, N / every[e]);
				for (i = 0; i < N; i++) {
					ck_assert_uint_eq(c[i].mark, s.pass);
					ck_assert_uint_eq(c[i].count, 1);
				}
				ck_assert_uint_eq(s.twice, 0);
				/* Stopped on the last node: one empty call. */
				if (every[e] == N && budgets[b] >= N) {
					ck_assert_uint_eq(calls, 2);
					ck_assert_uint_eq(s.calls, 0);
				}
			}
		}
	}
	/* The next call after a pass starts a new one. */
	s.every = 0;
	s.pass++;
	s.total = 0;
	ck_assert_int_eq(scan_call(t, &cur, 1000, &s), 1);
	ck_assert_uint_eq(s.calls, N);
	ck_assert(conntab_cursor_done(&cur));
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * A cursor shows nothing of its table (issue 27, item 11a: it carried the
 * table's address, invertibly, and the keyed hash and address of the
 * last node visited; in the trie, that node's key). Over the cursors of
 * a pass every bit is set in some and clear in others (but the tag's
 * lowest, always set), and no word is the table's or the node's address. Two tables with the same secret and
 * keys give different cursors, and neither takes the other's. A cursor
 * changed in any one bit, or made up, is refused with -EINVAL and left as
 * it was; a copy resumes exactly where the original did.
 */
START_TEST(scan_cursor_sealed)
{
	enum { N = 300, C = 200, W = sizeof(struct conntab_cursor) / 8 };
	static const uint8_t secret[16] = "one secret, two";
	static struct tconn c[N], d[N];
	static struct conntab_cursor seen[C + 1];
	static struct conntab_node *next[C + 1];
	struct conntab_config cfg = { .backend = B, .hash = t_hash,
				      .secret = secret };
	struct conntab_cursor cur = { { 0 } }, x;
	struct scan_ctx s = { 0 };
	uint64_t rng = 0xc0ffee;
	struct conntab *t, *u;
	struct conntab_key k;
	size_t i, w, bit, set;

	t = conntab_create(&cfg);
	u = conntab_create(&cfg);
	ck_assert(t && u);
	t_conns_init(c, N);
	t_conns_init(d, N);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
		ck_assert_int_eq(conntab_insert(u, &d[i].node, &k), 0);
	}
	/* C calls of budget 1: each leaves a cursor of a pass under way. */
	s.pass = 1;
	for (i = 0; i <= C; i++) {
		s.last = NULL;
		ck_assert_int_eq(scan_call(t, &cur, 1, &s), 0);
		next[i] = s.last;	/* what the call from seen[i - 1] did */
		seen[i] = cur;
		for (w = 0; w < W; w++) {
			ck_assert_uint_ne(cur.opaque[w], (uintptr_t)t);
			ck_assert_uint_ne(cur.opaque[w], (uintptr_t)s.last);
		}
	}
	for (w = 0; w < W; w++)
		for (bit = !w; bit < 64; bit++) {	/* a tag is odd */
			for (i = set = 0; i < C; i++)
				set += seen[i].opaque[w] >> bit & 1;
			/* Binomial(200, 1/2): outside this, p < 1e-17. */
			ck_assert_msg(set >= C / 5 && set <= C - C / 5,
				      "cursor word %zu bit %zu set in %zu of "
				      "%d cursors", w, bit, set, C);
		}
	/* The same calls on the twin table: other cursors, refused here. */
	memset(&x, 0, sizeof(x));
	s.pass = 2;
	ck_assert_int_eq(scan_call(u, &x, 1, &s), 0);
	ck_assert(memcmp(&x, &seen[0], sizeof(x)));
	ck_assert_int_eq(conntab_scan(t, &x, 1, scan_fn, &s), -EINVAL);
	x = seen[0];
	ck_assert_int_eq(conntab_scan(u, &x, 1, scan_fn, &s), -EINVAL);
	ck_assert(!memcmp(&x, &seen[0], sizeof(x)));
	/* Any one bit changed: refused, cursor untouched, nothing visited. */
	for (bit = 0; bit < 64 * W; bit++) {
		x = seen[C / 2];
		x.opaque[bit / 64] ^= 1ull << (bit % 64);
		s.calls = 0;
		rcu_read_lock();
		ck_assert_int_eq(conntab_scan(t, &x, 5, scan_fn, &s),
				 -EINVAL);
		rcu_read_unlock();
		ck_assert_uint_eq(s.calls, 0);
		ck_assert_uint_eq(x.opaque[bit / 64] ^ seen[C / 2].opaque[bit / 64],
				  1ull << (bit % 64));
	}
	/* Made up: random words, the tag's low bit as a seal sets it. */
	for (i = 0; i < 2000; i++) {
		for (w = 0; w < W; w++)
			x.opaque[w] = th_rnd(&rng);
		x.opaque[0] |= i & 1;
		ck_assert_int_eq(conntab_scan(t, &x, 5, scan_fn, &s), -EINVAL);
	}
	/* A copy (a token handed out and back) resumes as the original. */
	for (i = 0; i < C; i += 17) {
		x = seen[i];
		s.last = NULL;
		ck_assert_int_eq(scan_call(t, &x, 1, &s), 0);
		ck_assert_ptr_eq(s.last, next[i + 1]);
		ck_assert(!memcmp(&x, &seen[i + 1], sizeof(x)));
	}
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

START_TEST(scan_budgets)
{
	static const size_t budgets[] = { 1, 2, 3, 17, 31, 32, 33, 100, 1000,
					  5000, (size_t)-1 };
	static struct tconn c[3000];
	struct scan_ctx s = { 0 };
	struct conntab *t;
	size_t b, i, calls;

	t = filled(B, 3000, c, 3000);
	for (b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
		calls = scan_pass(t, budgets[b], &s);
		for (i = 0; i < 3000; i++) {
			ck_assert_uint_eq(c[i].mark, s.pass);
			ck_assert_uint_eq(c[i].count, 1);
		}
		ck_assert_uint_eq(s.twice, 0);
		/* Budget-bound calls, never a rescan: about 3000 / budget. */
		if (budgets[b] < 3000)
			ck_assert_uint_le(calls, 3000 / budgets[b] + 2);
		else
			ck_assert_uint_eq(calls, 1);
	}
	conntab_destroy(t, NULL);
}
END_TEST

/* Callbacks that remove or time-wait their node, a few per call. */
START_TEST(scan_fn_changes)
{
	static struct tconn c[2000];
	struct scan_ctx s = { 0 };
	struct conntab *t;
	size_t i;

	t = filled(B, 2000, c, 0);
	s.t = t;
	s.action = 2;
	scan_pass(t, 13, &s);
	t_expect_counts(t, 2000, 2000);
	for (i = 0; i < 2000; i++)
		ck_assert_uint_eq(c[i].count, 1);
	s.action = 1;
	scan_pass(t, 5, &s);
	for (i = 0; i < 2000; i++)
		ck_assert_uint_eq(c[i].count, 1);
	t_expect_counts(t, 0, 0);
	ck_assert_uint_eq(s.twice, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
}
END_TEST

/*
 * Passes while a writer grows and shrinks the table, for RUN_MS (the
 * minimums bound the work, not the time: no outcome depends on timing).
 * Stable keys (ids
 * below NSTABLE) are inserted first and stay; the writer inserts and
 * removes the wave keys (its own nodes, freed through call_rcu) in waves
 * of WAVE, and time-waits and recycles some. Every pass must visit each
 * stable node exactly once; scan_fn counts any node visited twice.
 */
#define NSTABLE	1000
#define WAVE	8000
#define RUN_MS	1500	/* and at least 10 passes over 3 waves */

struct waver {
	struct conntab *t;
	int stop;		/* atomic: set by the main thread */
	unsigned long waves, ops;
	struct tconn **live;
};

static void *wave_writer(void *arg)
{
	struct waver *w = arg;
	struct conntab_node *rec;
	struct conntab_key k;
	uint32_t i, size;
	struct tconn *c;

	rcu_register_thread();
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		/* Up to WAVE, then down to 0: exthash splits, then merges. */
		size = WAVE / 4 + (uint32_t)(w->waves % 4) * WAVE / 4;
		for (i = 0; i < size &&
			    !__atomic_load_n(&w->stop, __ATOMIC_RELAXED); i++) {
			c = t_conn_new(NSTABLE + i);
			t_key(&k, NSTABLE + i);
			if (conntab_insert(w->t, &c->node, &k)) {
				th_report("wave insert %u failed", i);
				free(c);
				continue;
			}
			w->live[i] = c;
			w->ops++;
		}
		for (i = 0; i < size; i += 3) {
			c = w->live[i];
			if (!c || conntab_timewait(w->t, &c->node, &c->node))
				continue;
			/* And back: a new node in its place. */
			c = t_conn_new(NSTABLE + i);
			t_key(&k, NSTABLE + i);
			if (!conntab_insert_recycle(w->t, &c->node, &k, &rec)) {
				th_retire(t_conn_of(rec));
				w->live[i] = c;
			} else {
				free(c);
			}
		}
		for (i = 0; i < size; i++) {
			c = w->live[i];
			if (!c)
				continue;
			if (conntab_remove(w->t, &c->node))
				th_report("wave remove %u failed", i);
			else
				th_retire(c);
			w->live[i] = NULL;
			w->ops++;
		}
		__atomic_store_n(&w->waves, w->waves + 1, __ATOMIC_RELAXED);
	}
	rcu_unregister_thread();
	return NULL;
}

START_TEST(scan_under_waves)
{
	static struct tconn c[NSTABLE];
	static struct tconn *live[WAVE];
	struct waver w = { 0 };
	struct scan_ctx s = { 0 };
	struct conntab_resize_stats rs;
	unsigned long passes = 0, calls = 0;
	uint64_t rng = 0x5ca1ab1e, t0;
	pthread_t th;
	size_t i, budget;

	th_reset();
	w.t = filled(B, NSTABLE, c, 0);
	w.live = live;
	memset(live, 0, sizeof(live));
	ck_assert_int_eq(pthread_create(&th, NULL, wave_writer, &w), 0);
	t0 = now_ms();
	while (now_ms() - t0 < RUN_MS || passes < 10 ||
	       __atomic_load_n(&w.waves, __ATOMIC_RELAXED) < 3) {
		/* Budgets from 1 up: many resumes per pass. */
		budget = 1 + th_rnd(&rng) % (passes % 3 ? 2000 : 40);
		/* Every fourth pass, the callback stops calls with 1. */
		s.every = passes % 4 == 3 ? 1 + th_rnd(&rng) % 50 : 0;
		s.stop_ret = 1;
		calls += scan_pass(w.t, budget, &s);
		for (i = 0; i < NSTABLE; i++) {
			ck_assert_msg(c[i].mark == s.pass && c[i].count == 1,
				      "pass %u: stable key %zu visited %u "
				      "times", s.pass, i,
				      c[i].mark == s.pass ? c[i].count : 0);
		}
		ck_assert_uint_eq(s.twice, 0);
		passes++;
		if (passes > 4000)
			break;
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	ck_assert_uint_eq(th_errors(), 0);
	conntab_resize_stats(w.t, &rs);
	if (B == CONNTAB_EXTHASH) {
		/* The waves made it resize under the passes. */
		ck_assert_uint_gt(rs.splits, 0);
		ck_assert_uint_gt(rs.merges, 0);
	}
	t_expect_counts(w.t, NSTABLE, 0);
	rcu_barrier();
	conntab_destroy(w.t, NULL);
	th_quarantine_flush();
	(void)calls;
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		scan_codes, scan_stop_values, scan_cursor_sealed, scan_budgets,
		scan_fn_changes, scan_under_waves,
	};
	Suite *s = suite_create("scan");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 120);
	ret = t_run(s, 900);
	rcu_unregister_thread();
	return ret;
}
