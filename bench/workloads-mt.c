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
 * Readers take the read lock once per B_RD_CHUNK lookups, as in the
 * single-threaded workloads, so their ns/lookup compare with `lookup`.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

#define B_RD_CHUNK	64
#define B_CHURN_LAG	1024	/* writer removes what it inserted this long ago */
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

	rcu_register_thread();
	if (b_opts.pin)
		b_pin_self(r->cpu);
	__atomic_add_fetch(r->ready, 1, __ATOMIC_RELEASE);
	while (!*r->stop) {
		size_t lim = n;

		if (r->limit) {
			/* Pairs with the release store after each insert. */
			lim = __atomic_load_n(r->limit, __ATOMIC_ACQUIRE);
			if (!lim)
				continue;
		}
		rcu_read_lock();
		for (j = 0; j < B_RD_CHUNK; j++) {
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
		done += B_RD_CHUNK;
		__atomic_store_n(&r->lookups, done, __ATOMIC_RELAXED);
		__atomic_store_n(&r->misses, miss, __ATOMIC_RELAXED);
	}
	b_sink += acc;
	rcu_unregister_thread();
	return NULL;
}

static void readers_start(struct reader *rd, unsigned int nr,
			  const struct bench_impl *im, void *t,
			  const struct bench_keys *k, volatile int *stop,
			  const size_t *limit, int *ready)
{
	unsigned int i;

	*ready = 0;
	for (i = 0; i < nr; i++) {
		rd[i] = (struct reader){ .im = im, .t = t, .k = k, .id = i,
					 .cpu = i, .stop = stop,
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

static void record(const struct bench_impl *im, const char *wl, size_t n,
		   unsigned int threads, double *v, unsigned int k,
		   const char *unit, int kind, bool higher)
{
	struct bench_result r = {
		.impl = im->name, .n = n, .threads = threads, .unit = unit,
		.ratio_kind = kind, .higher_better = higher,
	};

	snprintf(r.workload, sizeof(r.workload), "%s", wl);
	r.value = b_median(v, k, &r.min, &r.max);
	b_record(&r);
}

/* ---- churn ---- */

struct writer {
	pthread_t tid;
	const struct bench_impl *im;
	void *t;
	const struct bench_keys *k;
	unsigned int cpu;
	volatile int *stop;
	size_t pairs;		/* insert+remove pairs done (relaxed) */
	size_t fails;
};

/*
 * Insert pool node i, remove the one inserted B_CHURN_LAG steps before;
 * after a pass over the pool, wait a grace period before reusing it. The
 * pace is held at b_opts.write_rate pairs per second.
 */
static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	size_t pool = w->k->nabsent < B_CHURN_POOL ? w->k->nabsent
						   : B_CHURN_POOL;
	char *objs = b_alloc(pool * B_LINE);
	size_t i, done = 0, fails = 0;
	uint64_t t0;

	rcu_register_thread();
	if (b_opts.pin)
		b_pin_self(w->cpu);
	t0 = b_now_ns();
	while (!*w->stop) {
		for (i = 0; i < pool + B_CHURN_LAG && !*w->stop; i++) {
			if (i < pool) {
				memset(objs + i * B_LINE, 0, B_LINE);
				fails += w->im->insert(w->t, objs + i * B_LINE,
						       &w->k->absent[i]) != 0;
			}
			if (i >= B_CHURN_LAG)
				fails += w->im->remove(w->t, objs +
					(i - B_CHURN_LAG) * B_LINE) != 0;
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
		w->im->remove(w->t, objs + i * B_LINE);
	synchronize_rcu();
	w->fails = fails;
	rcu_unregister_thread();
	free(objs);
	return NULL;
}

static void churn(const struct bench_impl *im, const struct bench_keys *k)
{
	unsigned int cfg[3] = { 1, 2, b_opts.threads }, nc, c, rep, i;
	uint64_t dur = b_opts.quick ? 200000000ull : 400000000ull;
	double lps[3][B_MAX_REPS], nsl[B_MAX_REPS], wps[B_MAX_REPS];
	struct reader rd[B_MAX_THREADS];
	size_t n = k->n, look, miss;
	struct bench_objs o;
	int ready;
	void *t;

	nc = b_opts.threads > 2 ? 3 : 2;
	b_objs_init(&o, im, n);
	b_progress("n=%zu %s: churn build", n, im->name);
	t = b_build(im, k, &o, n);
	for (c = 0; c < nc; c++) {
		unsigned int nr = cfg[c];

		for (rep = 0; rep < b_opts.reps; rep++) {
			volatile int stop = 0, wstop = 0;
			struct writer w = { .im = im, .t = t, .k = k,
					    .cpu = nr, .stop = &wstop };
			size_t l0, l1, p0, p1;
			uint64_t t0, t1;

			b_progress("n=%zu %s: churn %u readers %u/%u", n,
				   im->name, nr, rep + 1, b_opts.reps);
			readers_start(rd, nr, im, t, k, &stop, NULL, &ready);
			if (pthread_create(&w.tid, NULL, writer_fn, &w)) {
				fprintf(stderr, "conntab-bench: no writer\n");
				exit(1);
			}
			sleep_ns(dur / 8);	/* let everyone get going */
			l0 = readers_count(rd, nr);
			p0 = __atomic_load_n(&w.pairs, __ATOMIC_RELAXED);
			t0 = b_now_ns();
			sleep_ns(dur);
			l1 = readers_count(rd, nr);
			p1 = __atomic_load_n(&w.pairs, __ATOMIC_RELAXED);
			t1 = b_now_ns();
			wstop = 1;
			pthread_join(w.tid, NULL);
			readers_stop(rd, nr, &stop, &look, &miss);
			b_check_found(im, "churn", look - miss, look);
			if (w.fails)
				fprintf(stderr, "conntab-bench: %s churn: %zu "
					"writes failed\n", im->name, w.fails);
			lps[c][rep] = (double)(l1 - l0) * 1e9 /
				      (double)(t1 - t0);
			nsl[rep] = (double)(t1 - t0) * nr / (double)(l1 - l0);
			wps[rep] = (double)(p1 - p0) * 1e9 / (double)(t1 - t0);
		}
		record(im, "churn-ns", n, nr, nsl, b_opts.reps, "ns/op",
		       R_DEP, false);
		record(im, "churn-writes", n, nr, wps, b_opts.reps,
		       "pairs/s", R_NONE, true);
		/* Copy: b_median sorts, the scale below needs rep pairs. */
		memcpy(nsl, lps[c], sizeof(nsl));
		record(im, "churn", n, nr, nsl, b_opts.reps, "lookups/s",
		       R_NONE, true);
	}
	/* Scaling per repetition (same conditions), then the median. */
	for (i = 0; i < b_opts.reps; i++)
		nsl[i] = lps[1][i] / lps[0][i];
	record(im, "churn-scale", n, 2, nsl, b_opts.reps, "x", R_NONE, true);
	im->destroy(t);
	b_objs_free(&o);
}

/* ---- grow ---- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void grow(const struct bench_impl *im, const struct bench_keys *k)
{
	unsigned int nr = b_opts.threads > 1 ? b_opts.threads - 1 : 1, rep;
	double mean[B_MAX_REPS], p50[B_MAX_REPS], p99[B_MAX_REPS],
	       p999[B_MAX_REPS], pmax[B_MAX_REPS], misses[B_MAX_REPS];
	struct reader rd[B_MAX_THREADS];
	size_t n = k->n, i, look, miss, fail;
	uint32_t *lat = b_alloc(n * sizeof(*lat));
	struct bench_objs o;
	int ready;

	b_objs_init(&o, im, n);
	for (rep = 0; rep < b_opts.reps; rep++) {
		volatile int stop = 0;
		size_t count = 0;
		uint64_t t0, t1, start;
		void *t;

		b_progress("n=%zu %s: grow %u/%u", n, im->name, rep + 1,
			   b_opts.reps);
		memset(o.base, 0, n * B_LINE);
		t = im->create(im, 0, k->secret);
		if (!t) {
			fprintf(stderr, "conntab-bench: %s: create failed\n",
				im->name);
			exit(1);
		}
		readers_start(rd, nr, im, t, k, &stop, &count, &ready);
		fail = 0;
		start = t0 = b_now_ns();
		for (i = 0; i < n; i++) {
			fail += im->insert(t, b_obj(&o, k, i), &k->keys[i]) != 0;
			t1 = b_now_ns();
			lat[i] = t1 - t0 > UINT32_MAX ? UINT32_MAX
						      : (uint32_t)(t1 - t0);
			t0 = t1;
			/* Key i is in: readers may look it up now. */
			__atomic_store_n(&count, i + 1, __ATOMIC_RELEASE);
		}
		mean[rep] = (double)(t0 - start) / (double)n;
		readers_stop(rd, nr, &stop, &look, &miss);
		if (fail)
			fprintf(stderr, "conntab-bench: %s grow: %zu inserts "
				"failed\n", im->name, fail);
		misses[rep] = (double)miss;
		qsort(lat, n, sizeof(*lat), cmp_u32);
		p50[rep] = lat[n / 2];
		p99[rep] = lat[n - 1 - n / 100];
		p999[rep] = lat[n - 1 - n / 1000];
		pmax[rep] = lat[n - 1];
		im->destroy(t);
	}
	free(lat);
	b_objs_free(&o);
	record(im, "grow", n, nr, mean, b_opts.reps, "ns/op", R_DEP, false);
	record(im, "grow-p50", n, nr, p50, b_opts.reps, "ns", R_NONE, false);
	record(im, "grow-p99", n, nr, p99, b_opts.reps, "ns", R_NONE, false);
	record(im, "grow-p99.9", n, nr, p999, b_opts.reps, "ns", R_NONE,
	       false);
	record(im, "grow-max", n, nr, pmax, b_opts.reps, "ns", R_NONE, false);
	record(im, "grow-misses", n, nr, misses, b_opts.reps, "lookups",
	       R_NONE, false);
}

/* ---- timewait ---- */

static void timewait(const struct bench_impl *im, const struct bench_keys *k)
{
	unsigned int nr = b_opts.threads > 1 ? b_opts.threads - 1 : 1, rep;
	size_t n = k->n, m = n / 4, i, look, miss, fail;
	double tw[B_MAX_REPS], rc[B_MAX_REPS], misses[B_MAX_REPS];
	struct reader rd[B_MAX_THREADS];
	char *two = b_alloc(m * B_LINE), *nwo = b_alloc(m * B_LINE);
	struct bench_objs o;
	int ready;

	b_objs_init(&o, im, n);
	for (rep = 0; rep < b_opts.reps; rep++) {
		volatile int stop = 0;
		uint64_t t0;
		void *t, *old;

		b_progress("n=%zu %s: timewait %u/%u", n, im->name, rep + 1,
			   b_opts.reps);
		memset(two, 0, m * B_LINE);
		memset(nwo, 0, m * B_LINE);
		t = b_build(im, k, &o, n);
		readers_start(rd, nr, im, t, k, &stop, NULL, &ready);
		fail = 0;
		t0 = b_now_ns();
		for (i = 0; i < m; i++)
			fail += im->timewait(t, b_obj(&o, k, i),
					     two + i * B_LINE) != 0;
		tw[rep] = (double)m * 1e9 / (double)(b_now_ns() - t0);
		t0 = b_now_ns();
		for (i = 0; i < m; i++) {
			fail += im->recycle(t, nwo + i * B_LINE, &k->keys[i],
					    &old) != 0;
			fail += old != two + i * B_LINE;
		}
		rc[rep] = (double)m * 1e9 / (double)(b_now_ns() - t0);
		readers_stop(rd, nr, &stop, &look, &miss);
		misses[rep] = (double)miss;
		if (fail)
			fprintf(stderr, "conntab-bench: %s timewait: %zu "
				"operations failed\n", im->name, fail);
		im->destroy(t);
	}
	free(two);
	free(nwo);
	b_objs_free(&o);
	record(im, "timewait", n, nr, tw, b_opts.reps, "ops/s", R_NONE, true);
	record(im, "recycle", n, nr, rc, b_opts.reps, "ops/s", R_NONE, true);
	record(im, "timewait-misses", n, nr, misses, b_opts.reps, "lookups",
	       R_NONE, false);
}

void b_run_mt(const struct bench_impl *im, const struct bench_keys *k)
{
	if (!(im->flags & BI_MT))
		return;
	if (b_want(W_CHURN))
		churn(im, k);
	if (b_want(W_GROW) && (im->flags & BI_GROWS))
		grow(im, k);
	if (b_want(W_TIMEWAIT))
		timewait(im, k);
}
