/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replaying a stream of keys on a built table: one lookup at a time, in
 * batches, and from several reader threads at once. Every workload that
 * times lookups goes through here, so that they all take the read lock,
 * count hits and time alike.
 *
 * Every result of a lookup, and the word of the user's data in the object
 * it returns (b_user_word()), is accumulated into a sink and the hits are
 * counted (the caller checks them), so the compiler cannot drop a lookup
 * and a broken implementation cannot look fast. One-at-a-time readers take
 * the read lock once per B_READ_CHUNK lookups, batches once per batch,
 * the same for every implementation.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

volatile uintptr_t b_sink;

/*
 * Random hits, one at a time: independent lookups may overlap. Both
 * runners end early when the time budget runs out (b_over(), read once
 * per chunk or batch, the figure then dropped).
 */
double b_run_lookup(const struct bench_impl *im, void *t,
		    const struct conntab_key *keys, size_t n, size_t m,
		    size_t *found)
{
	size_t done, i, j, len, hit = 0;
	uintptr_t acc = 0;
	uint64_t t0 = b_time_ns();

	for (done = 0; done < m; done += len) {
		len = m - done < n ? m - done : n;
		for (i = 0; i < len; i += B_READ_CHUNK) {
			size_t end = i + B_READ_CHUNK < len ? i + B_READ_CHUNK
							    : len;

			if (b_over())
				goto out;
			rcu_read_lock();
			for (j = i; j < end; j++) {
				void *p = im->lookup(t, &keys[j]);

				acc += (uintptr_t)p + b_user_word(im, p);
				hit += p != NULL;
			}
			rcu_read_unlock();
		}
	}
out:
	t0 = b_time_ns() - t0;
	b_sink += acc;
	*found = hit;
	return (double)t0 / (double)m;
}

/*
 * keys[0..n) in groups of @bs, repeated to @m lookups; a stream whose
 * length is not a multiple of @bs ends with a shorter group, as the last
 * receive burst of a capture does.
 */
double b_run_batch(const struct bench_impl *im, void *t,
		   const struct conntab_key *keys, size_t n, size_t m,
		   size_t bs, size_t *found)
{
	void *out[B_MAX_BATCH];
	size_t done, i, j, len, cnt, hit = 0;
	uintptr_t acc = 0;
	uint64_t t0 = b_time_ns();

	for (done = 0; done < m; done += len) {
		len = m - done < n ? m - done : n;
		for (i = 0; i < len; i += cnt) {
			cnt = len - i < bs ? len - i : bs;
			if (b_over())
				goto out;
			rcu_read_lock();
			hit += im->batch(t, &keys[i], out, cnt);
			for (j = 0; j < cnt; j++)
				acc += (uintptr_t)out[j] +
				       b_user_word(im, out[j]);
			rcu_read_unlock();
		}
	}
out:
	t0 = b_time_ns() - t0;
	b_sink += acc;
	*found = hit;
	return (double)t0 / (double)m;
}

/* keys[0..n) once, one at a time (@bs 1) or in groups of @bs. */
static double replay(const struct bench_impl *im, void *t,
		     const struct conntab_key *keys, size_t n, size_t bs,
		     size_t *found)
{
	*found = 0;
	if (!n)
		return 0;
	return bs > 1 ? b_run_batch(im, t, keys, n, n, bs, found)
		      : b_run_lookup(im, t, keys, n, n, found);
}

/* One of several readers replaying the same stream from its own offset. */
struct st_reader {
	pthread_t tid;
	const struct bench_impl *im;
	void *t;
	const struct conntab_key *keys;
	size_t n, bs, off, found;
	unsigned int cpu;
	double ns;
	int *ready;
	volatile int *go;
};

static void *st_reader_fn(void *arg)
{
	struct st_reader *r = arg;
	size_t f1, f2;
	uint64_t t0;

	b_thread_start(r->cpu, r->ready, r->go);
	/* The stream rotated by off: readers do not move in lockstep. */
	t0 = b_time_ns();
	replay(r->im, r->t, r->keys + r->off, r->n - r->off, r->bs, &f1);
	replay(r->im, r->t, r->keys, r->off, r->bs, &f2);
	r->ns = (double)(b_time_ns() - t0) / (double)r->n;
	r->found = f1 + f2;
	rcu_unregister_thread();
	return NULL;
}

/*
 * @nr readers replay keys[0..n) each, at once; the mean of their ns per
 * lookup (each reader's own clock: with --clock cpu, the time it ran).
 */
static double replay_mt(const struct bench_impl *im, void *t,
			const struct conntab_key *keys, size_t n, size_t bs,
			unsigned int nr, size_t *found)
{
	struct st_reader rd[B_MAX_THREADS];
	volatile int go = 0;
	int ready = 0;
	double sum = 0;
	unsigned int i;

	*found = 0;
	for (i = 0; i < nr; i++) {
		rd[i] = (struct st_reader){
			.im = im, .t = t, .keys = keys, .n = n, .bs = bs,
			.off = n / nr * i, .cpu = i, .ready = &ready,
			.go = &go,
		};
		if (pthread_create(&rd[i].tid, NULL, st_reader_fn, &rd[i])) {
			fprintf(stderr, "conntab-bench: no reader thread\n");
			exit(1);
		}
	}
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < (int)nr)
		sched_yield();
	go = 1;
	for (i = 0; i < nr; i++) {
		pthread_join(rd[i].tid, NULL);
		sum += rd[i].ns;
		*found += rd[i].found;
	}
	return sum / nr;
}

/* The four ways a stream is replayed: one thread or --threads readers. */
enum { SM_ONE, SM_BATCH, SM_MT_ONE, SM_MT_BATCH, SM_COUNT };

void b_stream_measure(struct bench_table *tb, size_t ni, enum b_workload w,
		      const char *name, const struct conntab_key *keys,
		      size_t n, size_t size)
{
	static double v[B_MAX_IMPLS][SM_COUNT][B_MAX_REPS];
	unsigned int nr = b_opts.threads, rep, m;
	unsigned int modes = nr > 1 ? SM_COUNT : SM_MT_ONE;
	char wl[2][24];
	size_t i, found;

	snprintf(wl[0], sizeof(wl[0]), "%s", name);
	snprintf(wl[1], sizeof(wl[1]), "%s-b%u", name, B_STREAM_BATCH);
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu %s %u/%u", size, name, rep + 1, b_opts.reps);
		for (m = 0; m < modes; m++) {
			size_t bs = m & 1 ? B_STREAM_BATCH : 1;
			unsigned int k = m >= SM_MT_ONE ? nr : 1;

			for (i = 0; i < ni; i++) {
				v[i][m][rep] = NAN;
				if (!b_budget_enter(B_W(w), tb[i].im, size,
						    wl[m & 1]))
					continue;
				v[i][m][rep] = k > 1 ?
					replay_mt(tb[i].im, tb[i].t, keys, n,
						  bs, k, &found) :
					replay(tb[i].im, tb[i].t, keys, n, bs,
					       &found);
				b_check_found(tb[i].im, wl[m & 1], found,
					      n * k);
				if (!b_budget_leave())
					v[i][m][rep] = NAN;
			}
		}
	}
	for (m = 0; m < modes; m++)
		for (i = 0; i < ni; i++)
			b_result(tb[i].im, wl[m & 1], size,
				 m >= SM_MT_ONE ? nr : 1, v[i][m], "ns/op",
				 m & 1 ? R_INDEP : R_DEP, false);
}
