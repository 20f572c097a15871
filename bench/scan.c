/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scan: whole passes of conntab_scan() at budgets 64 and 1000 over a table
 * of the N keys, against one conntab_walk() of it, while a writer inserts
 * and removes other keys at --rate pairs/s (the expiry sweep of a busy
 * server). The read lock is held per call (per walk), as a sweep would.
 *
 * Rows per conntab backend: walk (ns per node visited), scan-B (ns per
 * node visited by the pass), scan-B-max (the longest single call, ns) and
 * scan-B/walk (the pass's time over the walk's, per repetition). Every one
 * of the N keys, present throughout, must be visited exactly once by each
 * pass and each walk (the writer's keys come and go and are not counted).
 * Backends without conntab_scan() (-EOPNOTSUPP) are left out.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

static const size_t scan_budgets[] = { 64, 1000 };
#define B_NBUDGETS	(sizeof(scan_budgets) / sizeof(scan_budgets[0]))

/* What a pass saw: visits per object of the N keys, and in all. */
struct scan_seen {
	const char *base;	/* the N keys' objects, a line each */
	size_t n, visited;
	uint8_t *count;
};

static int seen_fn(struct conntab_node *node, void *arg)
{
	struct scan_seen *s = arg;
	const char *p = (const char *)node;

	s->visited++;
	if (p >= s->base && p < s->base + s->n * B_OBJ &&
	    s->count[(size_t)(p - s->base) / B_OBJ] < 255)
		s->count[(size_t)(p - s->base) / B_OBJ]++;
	return 0;
}

static void seen_reset(struct scan_seen *s)
{
	s->visited = 0;
	memset(s->count, 0, s->n);
}

/* Each of the N keys once: the scan and walk guarantee. */
static void seen_check(const struct bench_impl *im, const char *what,
		       const struct scan_seen *s)
{
	size_t i, bad = 0;

	for (i = 0; i < s->n; i++)
		bad += s->count[i] != 1;
	if (bad)
		b_failed("%s %s: %zu of %zu keys not visited exactly once",
			 im->name, what, bad, s->n);
}

/* One walk; ns. */
static double walk_once(struct bench_table *tb, struct scan_seen *s)
{
	uint64_t t0;

	seen_reset(s);
	t0 = b_time_ns();
	rcu_read_lock();
	conntab_walk(tb->t, seen_fn, s);
	rcu_read_unlock();
	t0 = b_time_ns() - t0;
	seen_check(tb->im, "walk", s);
	return (double)t0;
}

/* One pass at @budget: its ns (*@max: the longest call), or -1. */
static double pass_once(struct bench_table *tb, struct scan_seen *s,
			size_t budget, double *max)
{
	struct conntab_cursor cur = { { 0 } };
	uint64_t t0, dt, sum = 0, longest = 0;
	int r;

	seen_reset(s);
	do {
		t0 = b_time_ns();
		rcu_read_lock();
		r = conntab_scan(tb->t, &cur, budget, seen_fn, s);
		rcu_read_unlock();
		dt = b_time_ns() - t0;
		sum += dt;
		longest = dt > longest ? dt : longest;
	} while (!r);
	if (r != 1) {
		if (r != -EOPNOTSUPP)
			b_failed("%s scan: %d", tb->im->name, r);
		return -1;
	}
	seen_check(tb->im, "scan", s);
	*max = (double)longest;
	return (double)sum;
}

void b_run_scan(const struct bench_impl **all, size_t nall,
		const struct bench_keys *k)
{
	static double v[B_MAX_IMPLS][1 + 3 * B_NBUDGETS][B_MAX_REPS];
	const struct bench_impl *im[B_MAX_IMPLS];
	struct bench_table tb[B_MAX_IMPLS];
	struct scan_seen s = { .n = k->n };
	bool ok[B_MAX_IMPLS];
	size_t ni, i, b, n = k->n;
	unsigned int rep;
	struct b_writer w;
	double walk, pass, max = 0;
	char name[24];

	if (!b_want(W_SCAN))
		return;
	ni = b_pick(all, nall, BI_CONNTAB, im);
	s.count = b_alloc(n);
	for (i = 0; i < ni; i++) {
		b_progress("n=%zu %s: scan build", n, im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		ok[i] = true;
		if (!b_budget_enter(B_W(W_SCAN), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], k, &tb[i].o, n);
		b_budget_leave();
	}
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu scan %u/%u", n, rep + 1, b_opts.reps);
		for (i = 0; i < ni; i++) {
			for (b = 0; b < 1 + 3 * B_NBUDGETS; b++)
				v[i][b][rep] = NAN;
			/* A pass is not cut short: the budget ends the next. */
			if (!ok[i] || !b_budget_enter(B_W(W_SCAN), im[i], n,
						      "scan"))
				continue;
			s.base = tb[i].o.base;
			b_writer_start(&w, im[i], tb[i].t, k, b_cpu_other(0));
			walk = walk_once(&tb[i], &s);
			v[i][0][rep] = walk / (double)s.visited;
			for (b = 0; b < B_NBUDGETS && ok[i]; b++) {
				pass = pass_once(&tb[i], &s, scan_budgets[b],
						 &max);
				ok[i] = pass >= 0;
				v[i][1 + 3 * b][rep] = pass / (double)s.visited;
				v[i][2 + 3 * b][rep] = max;
				v[i][3 + 3 * b][rep] = pass / walk;
			}
			b_writer_stop(&w, "scan");
			if (!b_budget_leave())
				for (b = 0; b < 1 + 3 * B_NBUDGETS; b++)
					v[i][b][rep] = NAN;
		}
	}
	for (i = 0; i < ni; i++) {
		if (ok[i]) {
			b_result(im[i], "walk", n, 1, v[i][0], "ns/op", R_NONE,
				 false);
			for (b = 0; b < B_NBUDGETS; b++) {
				snprintf(name, sizeof(name), "scan-%zu",
					 scan_budgets[b]);
				b_result(im[i], name, n, 1, v[i][1 + 3 * b],
					 "ns/op", R_NONE, false);
				snprintf(name, sizeof(name), "scan-%zu-max",
					 scan_budgets[b]);
				b_result(im[i], name, n, 1, v[i][2 + 3 * b],
					 "ns", R_NONE, false);
				snprintf(name, sizeof(name), "scan-%zu/walk",
					 scan_budgets[b]);
				b_result(im[i], name, n, 1, v[i][3 + 3 * b],
					 "x", R_NONE, false);
			}
		} else {
			fprintf(stderr, "conntab-bench: %s has no "
				"conntab_scan(): no scan rows\n", im[i]->name);
		}
		b_table_drop(&tb[i], B_W(W_SCAN), n);
	}
	free(s.count);
}
