/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Single-threaded workloads: lookup, lookup-dep, lookup-miss, lookup-cold,
 * batch, memory (one table built per implementation and size) and insert /
 * remove (a fresh table per repetition).
 *
 * Every result of a lookup is accumulated into a sink and the hits are
 * counted and checked, so the compiler cannot drop a lookup and a broken
 * implementation cannot look fast. Readers take the read lock once per
 * B_READ_CHUNK lookups, the same for every implementation.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

#define B_READ_CHUNK	64
/* Lookups per repetition: all keys, at least 1M and at most 4M. */
#define B_MIN_LOOKUPS	(1u << 20)
#define B_MAX_LOOKUPS	(4u << 20)

volatile uintptr_t b_sink;

static size_t lookups_per_rep(size_t n)
{
	if (n < B_MIN_LOOKUPS)
		return B_MIN_LOOKUPS / n * n;
	return n < B_MAX_LOOKUPS ? n : B_MAX_LOOKUPS;
}

void b_objs_init(struct bench_objs *o, const struct bench_impl *im, size_t n)
{
	if (im->obj_size > B_LINE) {
		fprintf(stderr, "conntab-bench: %s objects exceed a line\n",
			im->name);
		exit(1);
	}
	o->n = n;
	o->base = b_alloc(n * B_LINE);
}

void b_objs_free(struct bench_objs *o)
{
	free(o->base);
	o->base = NULL;
}

void *b_build(const struct bench_impl *im, const struct bench_keys *k,
	      struct bench_objs *o, size_t expected)
{
	void *t;
	size_t i, fail = 0;

	memset(o->base, 0, o->n * B_LINE);
	t = im->create(im, expected, k->secret);
	if (!t) {
		fprintf(stderr, "conntab-bench: %s: create failed\n", im->name);
		exit(1);
	}
	for (i = 0; i < k->n; i++)
		fail += im->insert(t, b_obj(o, k, i), &k->keys[i]) != 0;
	if (fail)
		fprintf(stderr, "conntab-bench: %s: %zu inserts failed\n",
			im->name, fail);
	return t;
}

void b_check_found(const struct bench_impl *im, const char *what,
		   size_t found, size_t want)
{
	if (found != want)
		fprintf(stderr,
			"conntab-bench: %s %s: found %zu of %zu keys\n",
			im->name, what, found, want);
}

/* Random hits, one at a time: independent lookups may overlap. */
static double run_lookup(const struct bench_impl *im, void *t,
			 const struct conntab_key *keys, size_t n, size_t m,
			 size_t *found)
{
	size_t done, i, j, len, hit = 0;
	uintptr_t acc = 0;
	uint64_t t0 = b_now_ns();

	for (done = 0; done < m; done += len) {
		len = m - done < n ? m - done : n;
		for (i = 0; i < len; i += B_READ_CHUNK) {
			size_t end = i + B_READ_CHUNK < len ? i + B_READ_CHUNK
							    : len;

			rcu_read_lock();
			for (j = i; j < end; j++) {
				void *p = im->lookup(t, &keys[j]);

				acc += (uintptr_t)p;
				hit += p != NULL;
			}
			rcu_read_unlock();
		}
	}
	t0 = b_now_ns() - t0;
	b_sink += acc;
	*found = hit;
	return (double)t0 / (double)m;
}

/*
 * Dependent chain: the address of each key is computed from the previous
 * result (its top bit, always 0 for a user-space pointer, but the compiler
 * and the CPU cannot know), so no lookup starts before the previous one
 * has finished and their misses cannot overlap.
 */
static double run_lookup_dep(const struct bench_impl *im, void *t,
			     const struct conntab_key *keys, size_t n,
			     size_t m, size_t *found)
{
	size_t done, i, len, hit = 0;
	const struct conntab_key *kp;
	uint64_t t0 = b_now_ns();
	void *p = NULL;

	for (done = 0; done < m; done += len) {
		len = m - done < n ? m - done : n;
		kp = &keys[(uintptr_t)p >> 63];
		for (i = 0; i < len; i++) {
			if (!(i % B_READ_CHUNK)) {
				if (i)
					rcu_read_unlock();
				rcu_read_lock();
			}
			p = im->lookup(t, kp);
			hit += p != NULL;
			kp = &keys[i + 1 + ((uintptr_t)p >> 63)];
		}
		rcu_read_unlock();
	}
	t0 = b_now_ns() - t0;
	b_sink += (uintptr_t)p;
	*found = hit;
	return (double)t0 / (double)m;
}

static double run_batch(const struct bench_impl *im, void *t,
			const struct conntab_key *keys, size_t n, size_t m,
			size_t bs, size_t *found)
{
	void *out[64];
	size_t done, i, len, hit = 0;
	uintptr_t acc = 0;
	uint64_t t0;

	m = m / bs * bs;
	n = n / bs * bs;
	t0 = b_now_ns();
	for (done = 0; done < m; done += len) {
		len = m - done < n ? m - done : n;
		for (i = 0; i < len; i += bs) {
			rcu_read_lock();
			hit += im->batch(t, &keys[i], out, bs);
			rcu_read_unlock();
			acc += (uintptr_t)out[0] + (uintptr_t)out[bs - 1];
		}
	}
	t0 = b_now_ns() - t0;
	b_sink += acc;
	*found = hit;
	return (double)t0 / (double)m;
}

/* A thread that keeps writing over 2 x L3, as user work would. */
struct sweeper {
	pthread_t tid;
	volatile int stop;
	char *buf;
	size_t len;
};

static void *sweep_fn(void *arg)
{
	struct sweeper *s = arg;
	size_t i;

	if (b_opts.pin)
		b_pin_self(1);
	while (!s->stop)
		for (i = 0; i < s->len && !s->stop; i += B_LINE)
			s->buf[i]++;
	return NULL;
}

static void result(const struct bench_impl *im, const char *wl, size_t n,
		   double *v, const char *unit, int kind)
{
	struct bench_result r = {
		.impl = im->name, .n = n, .threads = 1, .unit = unit,
		.ratio_kind = kind,
	};

	snprintf(r.workload, sizeof(r.workload), "%s", wl);
	r.value = b_median(v, b_opts.reps, &r.min, &r.max);
	b_record(&r);
}

/* A mix of present and absent keys, half each, in random order. */
static struct conntab_key *make_mix(const struct bench_keys *k, size_t *want)
{
	struct conntab_key *mix = b_alloc(k->n * sizeof(*mix));
	uint64_t rng = b_opts.seed ^ 0x6d6978ull;
	size_t i, hits = 0, a = 0;

	for (i = 0; i < k->n; i++) {
		if (b_rand(&rng) & 1) {
			mix[i] = k->order[i];
			hits++;
		} else {
			mix[i] = k->absent[a++ % k->nabsent];
		}
	}
	*want = hits;
	return mix;
}

static void single_memory(const struct bench_impl *im, void *t, size_t n,
			  size_t heap0)
{
	struct bench_result r = {
		.workload = "memory", .impl = im->name, .n = n, .threads = 1,
		.unit = "B/entry", .ratio_kind = R_NONE,
	};
	long mem = im->memory(t);

	if (mem < 0) {
		/* Let deferred resizes and frees finish before measuring. */
		rcu_barrier();
		mem = (long)(b_heap_bytes() - heap0);
	}
	r.value = r.min = r.max = (double)mem / (double)n;
	b_record(&r);
}

void b_run_single(const struct bench_impl *im, const struct bench_keys *k)
{
	static const size_t bsizes[] = { 16, 64 };
	double v[B_MAX_REPS];
	size_t n = k->n, m = lookups_per_rep(n), found, want, heap0;
	struct bench_objs o;
	unsigned int rep, b;
	void *t;

	if (!(b_want(W_LOOKUP) || b_want(W_LOOKUP_DEP) ||
	      b_want(W_LOOKUP_MISS) || b_want(W_LOOKUP_COLD) ||
	      b_want(W_BATCH) || b_want(W_MEMORY)))
		return;
	b_objs_init(&o, im, n);
	b_progress("n=%zu %s: build", n, im->name);
	heap0 = b_heap_bytes();
	t = b_build(im, k, &o, n);
	if (b_want(W_MEMORY))
		single_memory(im, t, n, heap0);
	if (b_want(W_LOOKUP)) {
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu %s: lookup %u/%u", n, im->name,
				   rep + 1, b_opts.reps);
			v[rep] = run_lookup(im, t, k->order, n, m, &found);
			b_check_found(im, "lookup", found, m);
		}
		result(im, "lookup", n, v, "ns/op", R_DEP);
	}
	if (b_want(W_LOOKUP_DEP)) {
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu %s: lookup-dep %u/%u", n, im->name,
				   rep + 1, b_opts.reps);
			v[rep] = run_lookup_dep(im, t, k->order, n, m, &found);
			b_check_found(im, "lookup-dep", found, m);
		}
		result(im, "lookup-dep", n, v, "ns/op", R_DEP);
	}
	if (b_want(W_LOOKUP_MISS)) {
		struct conntab_key *mix = make_mix(k, &want);

		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu %s: lookup-miss %u/%u", n, im->name,
				   rep + 1, b_opts.reps);
			v[rep] = run_lookup(im, t, mix, n, n, &found);
			b_check_found(im, "lookup-miss", found, want);
		}
		free(mix);
		result(im, "lookup-miss", n, v, "ns/op", R_DEP);
	}
	if (b_want(W_LOOKUP_COLD)) {
		struct sweeper sw = { .len = 2 * b_l3_bytes() };

		sw.buf = b_alloc(sw.len);
		if (pthread_create(&sw.tid, NULL, sweep_fn, &sw)) {
			fprintf(stderr, "conntab-bench: no sweeper thread\n");
			exit(1);
		}
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu %s: lookup-cold %u/%u", n, im->name,
				   rep + 1, b_opts.reps);
			v[rep] = run_lookup(im, t, k->order, n, m, &found);
			b_check_found(im, "lookup-cold", found, m);
		}
		sw.stop = 1;
		pthread_join(sw.tid, NULL);
		free(sw.buf);
		result(im, "lookup-cold", n, v, "ns/op", R_DEP);
	}
	for (b = 0; b < 2 && b_want(W_BATCH); b++) {
		char wl[16];

		snprintf(wl, sizeof(wl), "batch%zu", bsizes[b]);
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu %s: %s %u/%u", n, im->name, wl,
				   rep + 1, b_opts.reps);
			v[rep] = run_batch(im, t, k->order, n, m, bsizes[b],
					   &found);
			b_check_found(im, wl, found,
				      m / bsizes[b] * bsizes[b]);
		}
		result(im, wl, n, v, "ns/op", R_INDEP);
	}
	im->destroy(t);
	b_objs_free(&o);
}

/* N inserts into an empty table sized for N, then N removes. */
void b_run_update(const struct bench_impl *im, const struct bench_keys *k)
{
	double vi[B_MAX_REPS], vr[B_MAX_REPS];
	size_t n = k->n, i, fail;
	struct bench_objs o;
	unsigned int rep;
	uint64_t t0;
	void *t;

	if (!b_want(W_INSERT) && !b_want(W_REMOVE))
		return;
	b_objs_init(&o, im, n);
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu %s: insert/remove %u/%u", n, im->name,
			   rep + 1, b_opts.reps);
		memset(o.base, 0, n * B_LINE);
		t = im->create(im, n, k->secret);
		if (!t) {
			fprintf(stderr, "conntab-bench: %s: create failed\n",
				im->name);
			exit(1);
		}
		fail = 0;
		t0 = b_now_ns();
		for (i = 0; i < n; i++)
			fail += im->insert(t, b_obj(&o, k, i), &k->keys[i]) != 0;
		vi[rep] = (double)(b_now_ns() - t0) / (double)n;
		t0 = b_now_ns();
		for (i = 0; i < n; i++)
			fail += im->remove(t, b_obj(&o, k, i)) != 0;
		vr[rep] = (double)(b_now_ns() - t0) / (double)n;
		b_check_found(im, "insert/remove", 2 * n - fail, 2 * n);
		im->destroy(t);
	}
	b_objs_free(&o);
	if (b_want(W_INSERT))
		result(im, "insert", n, vi, "ns/op", R_DEP);
	if (b_want(W_REMOVE))
		result(im, "remove", n, vr, "ns/op", R_DEP);
}
