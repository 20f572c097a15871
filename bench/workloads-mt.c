/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workloads with concurrent readers (only for implementations that allow
 * them, BI_MT):
 *
 *  churn     R readers look up present keys while one writer inserts and
 *            removes other keys at a fixed rate; lookups/s, the readers'
 *            ns/lookup, and the scaling from 1 to 2 readers.
 *  grow      0 -> N inserts into a table created without a sizing hint,
 *            readers looking up keys already inserted: insert latency
 *            percentiles, and lookups that missed a present key (must be
 *            0). Only implementations that resize (BI_GROWS): a fixed-size
 *            table would show chains of N/64 nodes, which says nothing.
 *  timewait  est -> tw transitions, then recycle-inserts that replace the
 *            tw entries, with readers looking up every key meanwhile
 *            (every lookup must hit: the replacements are atomic).
 *
 * Readers take the read lock once per B_READ_CHUNK lookups, as in the
 * single-threaded workloads, so their ns/lookup compare with `lookup`.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

/* The writer removes what it inserted this many steps ago. */
#define B_CHURN_LAG	1024
#define B_CHURN_POOL	8192	/* writer nodes reused after a grace period */

struct reader {
	pthread_t tid;
	const struct bench_impl *im;
	void *t;
	const struct bench_keys *k;
	unsigned int id, cpu;
	volatile int *stop;
	const size_t *limit;	/* grow: keys inserted so far; else NULL */
	size_t lookups, misses;	/* written by the reader (relaxed) */
	int *ready;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	const struct conntab_key *keys = r->limit ? r->k->keys : r->k->order;
	size_t n = r->k->n, i = (size_t)r->id * 7919 % n, j, miss = 0;
	uint64_t rng = b_opts.seed + r->id;
	uintptr_t acc = 0;
	size_t done = 0;

	b_thread_start(r->cpu, r->ready, NULL);
	while (!*r->stop) {
		size_t lim = n;

		if (r->limit) {
			/* Pairs with the release store after each insert. */
			lim = __atomic_load_n(r->limit, __ATOMIC_ACQUIRE);
			if (!lim)
				continue;
		}
		rcu_read_lock();
		for (j = 0; j < B_READ_CHUNK; j++) {
			void *p;

			if (r->limit)
				i = (size_t)(b_rand(&rng) % lim);
			else if (++i == n)
				i = 0;
			p = r->im->lookup(r->t, &keys[i]);
			acc += (uintptr_t)p;
			miss += !p;
		}
		rcu_read_unlock();
		done += B_READ_CHUNK;
		__atomic_store_n(&r->lookups, done, __ATOMIC_RELAXED);
		__atomic_store_n(&r->misses, miss, __ATOMIC_RELAXED);
	}
	b_sink += acc;
	rcu_unregister_thread();
	return NULL;
}

/*
 * @nr readers; with --pin reader i runs on CPU i, or with @others on a CPU
 * other than 0 (the calling thread works there meanwhile) if there is one.
 */
static void readers_start(struct reader *rd, unsigned int nr,
			  bool others, const struct bench_impl *im,
			  void *t, const struct bench_keys *k,
			  volatile int *stop, const size_t *limit, int *ready)
{
	unsigned int i;

	*ready = 0;
	for (i = 0; i < nr; i++) {
		rd[i] = (struct reader){ .im = im, .t = t, .k = k, .id = i,
					 .cpu = others ? b_cpu_other(i) : i,
					 .stop = stop,
					 .limit = limit, .ready = ready };
		if (pthread_create(&rd[i].tid, NULL, reader_fn, &rd[i])) {
			fprintf(stderr, "conntab-bench: no reader thread\n");
			exit(1);
		}
	}
	while (__atomic_load_n(ready, __ATOMIC_ACQUIRE) < (int)nr)
		sched_yield();
}

static void readers_stop(struct reader *rd, unsigned int nr,
			 volatile int *stop, size_t *lookups, size_t *misses)
{
	unsigned int i;

	*stop = 1;
	*lookups = *misses = 0;
	for (i = 0; i < nr; i++) {
		pthread_join(rd[i].tid, NULL);
		*lookups += rd[i].lookups;
		*misses += rd[i].misses;
	}
}

static size_t readers_count(const struct reader *rd, unsigned int nr)
{
	size_t sum = 0;
	unsigned int i;

	for (i = 0; i < nr; i++)
		sum += __atomic_load_n(&rd[i].lookups, __ATOMIC_RELAXED);
	return sum;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* ---- churn ---- */

/*
 * Insert pool node i, remove the one inserted B_CHURN_LAG steps before;
 * after a pass over the pool, wait a grace period before reusing it. The
 * pace is held at b_opts.write_rate pairs per second.
 */
static void *writer_fn(void *arg)
{
	struct b_writer *w = arg;
	size_t pool = w->k->nabsent < B_CHURN_POOL ? w->k->nabsent
						   : B_CHURN_POOL;
	char *objs = b_alloc(pool * B_OBJ);
	size_t i, done = 0, fails = 0;
	uint64_t t0;

	b_thread_start(w->cpu, NULL, NULL);
	t0 = b_now_ns();
	while (!w->stop) {
		for (i = 0; i < pool + B_CHURN_LAG && !w->stop; i++) {
			if (i < pool) {
				memset(objs + i * B_OBJ, 0, B_OBJ);
				fails += w->im->insert(w->t, objs + i * B_OBJ,
						       &w->k->absent[i]) != 0;
			}
			if (i >= B_CHURN_LAG)
				fails += w->im->remove(w->t, objs +
					(i - B_CHURN_LAG) * B_OBJ) != 0;
			if (i >= B_CHURN_LAG && i < pool)
				done++;
			if (!(done & 63)) {
				uint64_t due = t0 + done * 1000000000ull /
						    b_opts.write_rate;
				uint64_t now = b_now_ns();

				__atomic_store_n(&w->pairs, done,
						 __ATOMIC_RELAXED);
				if (due > now)
					sleep_ns(due - now);
			}
		}
		/* Every pool node is unlinked; wait before reusing them. */
		synchronize_rcu();
		__atomic_store_n(&w->pairs, done, __ATOMIC_RELAXED);
	}
	/* Leave the table as it was: drop what is still linked. */
	for (i = 0; i < pool; i++)
		w->im->remove(w->t, objs + i * B_OBJ);
	synchronize_rcu();
	w->fails = fails;
	rcu_unregister_thread();
	free(objs);
	return NULL;
}

void b_writer_start(struct b_writer *w, const struct bench_impl *im, void *t,
		    const struct bench_keys *k, unsigned int cpu)
{
	*w = (struct b_writer){ .im = im, .t = t, .k = k, .cpu = cpu };
	if (pthread_create(&w->tid, NULL, writer_fn, w)) {
		fprintf(stderr, "conntab-bench: no writer thread\n");
		exit(1);
	}
}

size_t b_writer_pairs(struct b_writer *w)
{
	return __atomic_load_n(&w->pairs, __ATOMIC_RELAXED);
}

void b_writer_stop(struct b_writer *w, const char *what)
{
	w->stop = 1;
	pthread_join(w->tid, NULL);
	if (w->fails)
		b_failed("%s %s: %zu writes failed", w->im->name, what,
			 w->fails);
}

/*
 * One churn measurement: @nr readers and one writer on table @tb, for a
 * set time (--quick: 50 ms, enough for a figure that only has to be
 * there), so the time budget only ends what follows it early.
 */
static void churn_rep(struct bench_table *tb, const struct bench_keys *k,
		      unsigned int nr, double *lps, double *nsl, double *wps)
{
	uint64_t dur = b_opts.quick ? 50000000ull : 400000000ull, t0, t1;
	const struct bench_impl *im = tb->im;
	struct reader rd[B_MAX_THREADS];
	volatile int stop = 0;
	struct b_writer w;
	size_t l0, l1, p0, p1, look, miss;
	int ready;

	readers_start(rd, nr, false, im, tb->t, k, &stop, NULL, &ready);
	b_writer_start(&w, im, tb->t, k, nr);
	sleep_ns(dur / 8);	/* let everyone get going */
	l0 = readers_count(rd, nr);
	p0 = b_writer_pairs(&w);
	t0 = b_now_ns();
	sleep_ns(dur);
	l1 = readers_count(rd, nr);
	p1 = b_writer_pairs(&w);
	t1 = b_now_ns();
	b_writer_stop(&w, "churn");
	readers_stop(rd, nr, &stop, &look, &miss);
	b_check_found(im, "churn", look - miss, look);
	*lps = (double)(l1 - l0) * 1e9 / (double)(t1 - t0);
	*nsl = (double)(t1 - t0) * nr / (double)(l1 - l0);
	*wps = (double)(p1 - p0) * 1e9 / (double)(t1 - t0);
}

static void churn(const struct bench_impl **im, size_t ni,
		  const struct bench_keys *k)
{
	unsigned int cfg[3] = { 1, 2, b_opts.threads }, nc, c, rep;
	static double lps[3][B_MAX_IMPLS][B_MAX_REPS];
	double nsl[B_MAX_IMPLS][B_MAX_REPS], wps[B_MAX_IMPLS][B_MAX_REPS];
	double sc[B_MAX_REPS];
	struct bench_table tb[B_MAX_IMPLS];
	size_t n = k->n, i;

	nc = b_opts.threads > 2 ? 3 : 2;
	for (i = 0; i < ni; i++) {
		b_progress("n=%zu %s: churn build", n, im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		if (!b_budget_enter(B_W(W_CHURN), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], k, &tb[i].o, n);
		b_budget_leave();
	}
	for (c = 0; c < nc; c++) {
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu churn %u readers %u/%u", n, cfg[c],
				   rep + 1, b_opts.reps);
			for (i = 0; i < ni; i++) {
				lps[c][i][rep] = nsl[i][rep] = NAN;
				wps[i][rep] = NAN;
				if (!b_budget_enter(B_W(W_CHURN), im[i], n,
						    "churn"))
					continue;
				churn_rep(&tb[i], k, cfg[c], &lps[c][i][rep],
					  &nsl[i][rep], &wps[i][rep]);
				if (!b_budget_leave())
					lps[c][i][rep] = nsl[i][rep] =
						wps[i][rep] = NAN;
			}
		}
		for (i = 0; i < ni; i++) {
			double tmp[B_MAX_REPS];

			b_result(im[i], "churn-ns", n, cfg[c], nsl[i], "ns/op",
				 R_DEP, false);
			b_result(im[i], "churn-writes", n, cfg[c], wps[i],
				 "pairs/s", R_NONE, true);
			/* A copy: b_median sorts, the scale needs pairs. */
			memcpy(tmp, lps[c][i], sizeof(tmp));
			b_result(im[i], "churn", n, cfg[c], tmp, "lookups/s",
				 R_NONE, true);
		}
	}
	for (i = 0; i < ni; i++) {
		/* Scaling per repetition (same conditions), then the median. */
		for (rep = 0; rep < b_opts.reps; rep++)
			sc[rep] = lps[1][i][rep] / lps[0][i][rep];
		b_result(im[i], "churn-scale", n, 2, sc, "x", R_NONE, true);
		b_table_drop(&tb[i], B_W(W_CHURN), n);
	}
}

/* ---- grow ---- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* What one growth measures; GR_DEPTH on are conntab_stats() figures. */
enum {
	GR_NS, GR_P50, GR_P99, GR_P999, GR_P9999, GR_MAX, GR_MISSES,
	GR_LOOKUPS, GR_MEMORY, GR_DEPTH, GR_BUCKETS, GR_RESIZES, GR_COUNT
};

static const struct {
	const char *name, *unit;
	bool higher;
} gr_rows[GR_COUNT] = {
	[GR_NS] = { "grow", "ns/op", false },
	[GR_P50] = { "grow-p50", "ns", false },
	[GR_P99] = { "grow-p99", "ns", false },
	[GR_P999] = { "grow-p99.9", "ns", false },
	[GR_P9999] = { "grow-p99.99", "ns", false },
	[GR_MAX] = { "grow-max", "ns", false },
	[GR_MISSES] = { "grow-misses", "lookups", false },
	[GR_LOOKUPS] = { "grow-lookups", "lookups", true },
	[GR_MEMORY] = { "grow-memory", "B/entry", false },
	[GR_DEPTH] = { "grow-depth", "nodes", false },
	[GR_BUCKETS] = { "grow-buckets", "slots", false },
	[GR_RESIZES] = { "grow-resizes", "resizes", false },
};

/* The latency at quantile @q of @n sorted values. */
static double quantile(const uint32_t *lat, size_t n, double q)
{
	return lat[(size_t)((double)(n - 1) * q)];
}

/*
 * One growth 0 -> N of a table created without a sizing hint, @nr readers
 * looking up keys already in. Insert latencies are read with the timing
 * clock (--clock cpu: the writer's CPU time, preemption left out).
 */
static void grow_rep(const struct bench_impl *im, struct bench_objs *o,
		     const struct bench_keys *k, unsigned int nr,
		     uint32_t *lat, double *out)
{
	struct reader rd[B_MAX_THREADS];
	size_t n = k->n, i, look, miss, fail = 0, count = 0, heap0;
	volatile int stop = 0;
	uint64_t t0, t1, start;
	int ready;
	void *t;

	memset(o->base, 0, n * B_OBJ);
	heap0 = b_heap_bytes();
	t = b_create(im, 0, k->secret);
	readers_start(rd, nr, true, im, t, k, &stop, &count, &ready);
	start = t0 = b_time_ns();
	for (i = 0; i < n && !(i % 64 == 0 && b_over()); i++) {
		fail += im->insert(t, b_obj(o, k, i), &k->keys[i]) != 0;
		t1 = b_time_ns();
		lat[i] = t1 - t0 > UINT32_MAX ? UINT32_MAX
					      : (uint32_t)(t1 - t0);
		t0 = t1;
		/* Key i is in: readers may look it up from now on. */
		__atomic_store_n(&count, i + 1, __ATOMIC_RELEASE);
	}
	out[GR_NS] = (double)(t0 - start) / (double)n;
	readers_stop(rd, nr, &stop, &look, &miss);
	if (i < n) {
		/* Out of time: table and objects are left (b_table_drop). */
		for (i = 0; i < GR_COUNT; i++)
			out[i] = NAN;
		return;
	}
	if (fail)
		b_failed("%s grow: %zu inserts failed", im->name, fail);
	/* A present key was not found while the table grew. */
	if (miss)
		b_failed("%s grow: %zu lookups missed a present key",
			 im->name, miss);
	out[GR_MISSES] = (double)miss;
	out[GR_LOOKUPS] = (double)look;
	qsort(lat, n, sizeof(*lat), cmp_u32);
	out[GR_P50] = quantile(lat, n, 0.5);
	out[GR_P99] = quantile(lat, n, 0.99);
	out[GR_P999] = quantile(lat, n, 0.999);
	out[GR_P9999] = quantile(lat, n, 0.9999);
	out[GR_MAX] = lat[n - 1];
	out[GR_MEMORY] = b_table_bytes(im, t, heap0) / (double)n;
	if (im->flags & BI_CONNTAB) {
		struct conntab_stats st;

		conntab_stats(t, &st);
		out[GR_DEPTH] = (double)st.max_depth;
		out[GR_BUCKETS] = (double)st.buckets;
		out[GR_RESIZES] = (double)st.resizes;
	}
	im->destroy(t);
}

/*
 * --threads - 1 readers besides the inserting thread (none with
 * --threads 1); with --pin the inserter keeps CPU 0 to itself when there
 * are others, the readers take the rest.
 */
static void grow(const struct bench_impl **im, size_t ni,
		 const struct bench_keys *k)
{
	unsigned int nr = b_opts.threads - 1, rep, rows;
	static double v[GR_COUNT][B_MAX_IMPLS][B_MAX_REPS];
	uint32_t *lat = b_alloc(k->n * sizeof(*lat));
	struct bench_objs o[B_MAX_IMPLS];
	size_t i, j;
	double out[GR_COUNT];

	for (i = 0; i < ni; i++)
		b_objs_init(&o[i], im[i], k->n);
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu grow %u/%u", k->n, rep + 1, b_opts.reps);
		for (i = 0; i < ni; i++) {
			for (j = 0; j < GR_COUNT; j++)
				out[j] = NAN;
			if (b_budget_enter(B_W(W_GROW), im[i], k->n,
					   "growing its table")) {
				grow_rep(im[i], &o[i], k, nr, lat, out);
				if (!b_budget_leave())
					for (j = 0; j < GR_COUNT; j++)
						out[j] = NAN;
			}
			for (j = 0; j < GR_COUNT; j++)
				v[j][i][rep] = out[j];
		}
	}
	free(lat);
	for (i = 0; i < ni; i++) {
		if (!b_budget_stopped(B_W(W_GROW), im[i], k->n))
			b_objs_free(&o[i]);
		rows = im[i]->flags & BI_CONNTAB ? GR_COUNT : GR_DEPTH;
		for (j = 0; j < rows; j++)
			b_result(im[i], gr_rows[j].name, k->n, nr, v[j][i],
				 gr_rows[j].unit,
				 j == GR_NS ? R_DEP : R_NONE,
				 gr_rows[j].higher);
	}
}

/* ---- timewait ---- */

/*
 * Keys per timewait repetition: repetition r works on keys [r m, r m + m)
 * of one table built once, so repetitions need no rebuild.
 */
static size_t timewait_keys(size_t n)
{
	return n / (b_opts.reps > 4 ? b_opts.reps : 4);
}

/* est -> tw for slice @rep of the keys, then recycle-inserts over them. */
static void timewait_rep(struct bench_table *tb, const struct bench_keys *k,
			 unsigned int nr, unsigned int rep, char *two,
			 char *nwo, double *out)
{
	size_t m = timewait_keys(k->n), i, look, miss, fail = 0;
	const struct bench_impl *im = tb->im;
	struct reader rd[B_MAX_THREADS];
	volatile int stop = 0;
	uint64_t t0;
	int ready;
	void *old;

	readers_start(rd, nr, true, im, tb->t, k, &stop, NULL, &ready);
	t0 = b_now_ns();
	for (i = rep * m; i < rep * m + m && !(i % 64 == 0 && b_over()); i++)
		fail += im->timewait(tb->t, b_obj(&tb->o, k, i),
				     two + (size_t)k->slot[i] * B_OBJ) != 0;
	out[0] = (double)m * 1e9 / (double)(b_now_ns() - t0);
	t0 = b_now_ns();
	for (i = rep * m; i < rep * m + m && !(i % 64 == 0 && b_over());
	     i++) {
		fail += im->recycle(tb->t, nwo + (size_t)k->slot[i] * B_OBJ,
				    &k->keys[i], &old) != 0;
		fail += old != two + (size_t)k->slot[i] * B_OBJ;
	}
	out[1] = (double)m * 1e9 / (double)(b_now_ns() - t0);
	readers_stop(rd, nr, &stop, &look, &miss);
	out[2] = (double)miss;
	if (b_over())
		return;		/* the figures are dropped */
	if (fail)
		b_failed("%s timewait: %zu operations failed", im->name, fail);
	if (miss)
		b_failed("%s timewait: %zu lookups missed a key", im->name,
			 miss);
}

static void timewait(const struct bench_impl **im, size_t ni,
		     const struct bench_keys *k)
{
	unsigned int nr = b_opts.threads > 1 ? b_opts.threads - 1 : 1, rep;
	size_t n = k->n, i, j;
	static double v[3][B_MAX_IMPLS][B_MAX_REPS];
	struct bench_table tb[B_MAX_IMPLS];
	char *two[B_MAX_IMPLS], *nwo[B_MAX_IMPLS];
	double out[3];

	for (i = 0; i < ni; i++) {
		b_progress("n=%zu %s: timewait build", n, im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		two[i] = b_alloc(n * B_OBJ);
		nwo[i] = b_alloc(n * B_OBJ);
		if (!b_budget_enter(B_W(W_TIMEWAIT), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], k, &tb[i].o, n);
		b_budget_leave();
	}
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu timewait %u/%u", n, rep + 1, b_opts.reps);
		for (i = 0; i < ni; i++) {
			for (j = 0; j < 3; j++)
				out[j] = NAN;
			if (b_budget_enter(B_W(W_TIMEWAIT), im[i], n,
					   "timewait")) {
				timewait_rep(&tb[i], k, nr, rep, two[i],
					     nwo[i], out);
				if (!b_budget_leave())
					for (j = 0; j < 3; j++)
						out[j] = NAN;
			}
			for (j = 0; j < 3; j++)
				v[j][i][rep] = out[j];
		}
	}
	for (i = 0; i < ni; i++) {
		/*
		 * The table still links objects of two[] and nwo[]; a table
		 * left by the time budget keeps them.
		 */
		b_table_drop(&tb[i], B_W(W_TIMEWAIT), n);
		if (!b_budget_stopped(B_W(W_TIMEWAIT), im[i], n)) {
			free(two[i]);
			free(nwo[i]);
		}
		b_result(im[i], "timewait", n, nr, v[0][i], "ops/s", R_NONE,
			 true);
		b_result(im[i], "recycle", n, nr, v[1][i], "ops/s", R_NONE,
			 true);
		b_result(im[i], "timewait-misses", n, nr, v[2][i], "lookups",
			 R_NONE, false);
	}
}

void b_run_mt(const struct bench_impl **all, size_t nall,
	      const struct bench_keys *k)
{
	const struct bench_impl *mt[B_MAX_IMPLS], *gr[B_MAX_IMPLS];
	size_t nmt = b_pick(all, nall, BI_MT, mt);
	size_t ngr = b_pick(all, nall, BI_MT | BI_GROWS, gr);

	if (nmt && b_want(W_CHURN))
		churn(mt, nmt, k);
	if (ngr && b_want(W_GROW))
		grow(gr, ngr, k);
	if (nmt && b_want(W_TIMEWAIT))
		timewait(mt, nmt, k);
}
