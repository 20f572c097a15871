/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scale: a grid of R readers x W writers on one table of the N keys
 * (--grid R[,R...]xW[,W...]), to see which side stops scaling and where.
 *
 * Readers look up the N present keys, which no writer touches, one at a
 * time (B_READ_CHUNK under one read lock) and in bursts of 16, in turn;
 * every lookup must hit: a miss is a present key missed while writers
 * ran, a wrong answer (exit status 1, and the scale-misses row). Writer w
 * owns a slice of the absent keys, inserted before the clock starts, and
 * recycles them: remove a key, insert it again in a fresh object, key
 * after key; the removed objects are reused only after a grace period
 * (one synchronize_rcu() a pass over the slice), as a user's would be.
 * So the table holds N + W x slice entries throughout, and the writers
 * work at a full table's depth, on lines the readers read.
 *
 * Cells of R + W threads that fit the online CPUs pin one thread per CPU
 * (readers first); larger ones run unpinned. Rows, one set per cell:
 * scale-reads-wW (lookups/s of the R readers, threads R), scale-writes-rR
 * (writes/s, remove and insert each one, of the W writers, threads W),
 * scale-writes-rR/1 (writes with W writers over writes with one, per
 * repetition: the writers' scaling, when the grid has W = 1),
 * scale-wcpu-rR (the writers' CPU ns per write, summed over them: on a
 * machine with fewer free cores than threads the wall clock shows the
 * scheduler, while a line that bounces between writers still shows in
 * their CPU time), and scale-misses once per table. Implementations that take concurrent
 * writers (BI_MT); the others are named in a note and skipped.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

/* Largest slice of keys a writer recycles: a grace period per pass. */
#define B_SCALE_SLICE	16384
#define B_SCALE_BURST	16

/* Each thread's counters on a line of their own: no false sharing. */
struct sc_thread {
	pthread_t tid;
	const struct bench_impl *im;
	void *t;
	const struct bench_keys *k;
	unsigned int id;
	int cpu;			/* -1: unpinned */
	int *ready;
	volatile int *go, *stop;
	size_t slice;			/* writers: keys of their own */
	/* Written by the thread (relaxed), read by the main thread. */
	size_t ops __attribute__((aligned(B_LINE)));
	size_t misses, fails;
	uint64_t cpu_ns, writes;	/* writers: CPU time of their run */
} __attribute__((aligned(B_LINE)));

static void sc_start(struct sc_thread *s)
{
	rcu_register_thread();
	if (s->cpu >= 0)
		b_pin_self((unsigned int)s->cpu);
}

static void *sc_reader(void *arg)
{
	struct sc_thread *s = arg;
	const struct conntab_key *keys = s->k->order;
	size_t n = s->k->n, i = (size_t)s->id * 7919 % n, j, done = 0;
	size_t miss = 0;
	void *out[B_SCALE_BURST];
	uintptr_t acc = 0;
	bool burst = false;

	sc_start(s);
	__atomic_add_fetch(s->ready, 1, __ATOMIC_RELEASE);
	while (!*s->go)
		sched_yield();
	while (!*s->stop) {
		rcu_read_lock();
		if (!burst) {
			for (j = 0; j < B_READ_CHUNK; j++) {
				void *p = s->im->lookup(s->t, &keys[i]);

				acc += (uintptr_t)p + b_user_word(s->im, p);
				miss += !p;
				if (++i == n)
					i = 0;
			}
			done += B_READ_CHUNK;
		} else {
			/* B_READ_CHUNK keys in bursts, from where we are. */
			for (j = 0; j < B_READ_CHUNK; j += B_SCALE_BURST) {
				size_t m = n - i < B_SCALE_BURST ?
					   n - i : B_SCALE_BURST, f, q;

				f = s->im->batch(s->t, &keys[i], out, m);
				miss += m - f;
				for (q = 0; q < m; q++)
					acc += b_user_word(s->im, out[q]);
				done += m;
				i = i + m == n ? 0 : i + m;
			}
		}
		rcu_read_unlock();
		burst = !burst;
		__atomic_store_n(&s->ops, done, __ATOMIC_RELAXED);
	}
	s->misses = miss;
	b_sink += acc;
	rcu_unregister_thread();
	return NULL;
}

static void *sc_writer(void *arg)
{
	struct sc_thread *s = arg;
	const struct bench_impl *im = s->im;
	const struct conntab_key *keys = s->k->absent + s->id * s->slice;
	size_t n = s->slice, i = 0, j, done = 0, fails = 0;
	/* Two sets of objects: one linked, one waiting out a grace period. */
	char *set[2], *cur, *nxt;
	uint64_t c0;

	sc_start(s);
	set[0] = b_alloc(n * B_OBJ);
	set[1] = b_alloc(n * B_OBJ);
	cur = set[0];
	nxt = set[1];
	for (i = 0; i < n; i++)
		fails += im->insert(s->t, cur + i * B_OBJ, &keys[i]) != 0;
	__atomic_add_fetch(s->ready, 1, __ATOMIC_RELEASE);
	while (!*s->go)
		sched_yield();
	c0 = b_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (;;) {
		char *tmp;

		/* Keys [0, i) are in nxt's objects, [i, n) in cur's. */
		for (i = 0; i < n && !*s->stop; i++) {
			fails += im->remove(s->t, cur + i * B_OBJ) != 0;
			memset(nxt + i * B_OBJ, 0, B_OBJ);
			fails += im->insert(s->t, nxt + i * B_OBJ,
					    &keys[i]) != 0;
			done += 2;
			__atomic_store_n(&s->ops, done, __ATOMIC_RELAXED);
		}
		if (i < n)
			break;
		/*
		 * Every object of cur is unlinked: after a grace period no
		 * reader (nor an lfht writer, which runs as one) stands on
		 * any, and they may take keys again.
		 */
		synchronize_rcu();
		tmp = cur;
		cur = nxt;
		nxt = tmp;
	}
	s->cpu_ns = b_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	s->writes = done;
	/* Leave the table as it was: [0, stop) in nxt, [stop, n) in cur. */
	for (j = 0; j < n; j++)
		fails += im->remove(s->t, (j < i ? nxt : cur) + j * B_OBJ) != 0;
	/* Grace period: the objects are freed next. */
	synchronize_rcu();
	free(set[0]);
	free(set[1]);
	s->fails = fails;
	rcu_unregister_thread();
	return NULL;
}

static void sc_spawn(struct sc_thread *s, void *(*fn)(void *))
{
	if (pthread_create(&s->tid, NULL, fn, s)) {
		fprintf(stderr, "conntab-bench: no scale thread\n");
		exit(1);
	}
}

static size_t sc_sum(const struct sc_thread *s, unsigned int k)
{
	size_t sum = 0;
	unsigned int i;

	for (i = 0; i < k; i++)
		sum += __atomic_load_n(&s[i].ops, __ATOMIC_RELAXED);
	return sum;
}

static void sc_sleep(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/*
 * One cell: @nr readers and @nw writers (slices of @slice keys) on @tb
 * for a set time (--quick: 50 ms; longer until both sides made progress);
 * lookups/s and writes/s into *@lps and *@wps, present keys missed added
 * to *@miss.
 */
static void scale_cell(struct bench_table *tb, const struct bench_keys *k,
		       unsigned int nr, unsigned int nw, size_t slice,
		       double *lps, double *wps, double *wcpu, size_t *miss)
{
	static struct sc_thread rd[B_MAX_THREADS], wr[B_MAX_THREADS];
	uint64_t dur = b_opts.quick ? 50000000ull : 400000000ull, t0, t1;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	bool pin = ncpu > 0 && nr + nw <= (unsigned long)ncpu;
	size_t l0, l1, w0, w1, fails = 0;
	uint64_t cpu = 0, writes = 0;
	volatile int go = 0, stop = 0;
	int ready = 0;
	unsigned int i;

	for (i = 0; i < nr + nw; i++) {
		struct sc_thread *s = i < nr ? &rd[i] : &wr[i - nr];

		*s = (struct sc_thread){
			.im = tb->im, .t = tb->t, .k = k,
			.id = i < nr ? i : i - nr, .cpu = pin ? (int)i : -1,
			.ready = &ready, .go = &go, .stop = &stop,
			.slice = slice,
		};
		sc_spawn(s, i < nr ? sc_reader : sc_writer);
	}
	/* Writers have their slices in before anyone starts. */
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < (int)(nr + nw))
		sched_yield();
	go = 1;
	sc_sleep(dur / 8);	/* let everyone get going */
	l0 = sc_sum(rd, nr);
	w0 = sc_sum(wr, nw);
	t0 = b_now_ns();
	/*
	 * At least the set time, and on until each side has made progress:
	 * on a loaded machine (CI's distcheck beside other jobs) a pinned
	 * reader can be off its CPU for a whole window, and a writer that
	 * recycles after grace periods then writes nothing in it, which
	 * would print 0 writes/s and an infinite ratio. Not without end: a
	 * side still at 0 after 40 windows is reported as it is.
	 */
	for (i = 0;; i++) {
		sc_sleep(dur);
		l1 = sc_sum(rd, nr);
		w1 = sc_sum(wr, nw);
		if (((l1 > l0 || !nr) && (w1 > w0 || !nw)) || i == 39)
			break;
	}
	t1 = b_now_ns();
	stop = 1;
	for (i = 0; i < nr; i++) {
		pthread_join(rd[i].tid, NULL);
		*miss += rd[i].misses;
	}
	for (i = 0; i < nw; i++) {
		pthread_join(wr[i].tid, NULL);
		fails += wr[i].fails;
		cpu += wr[i].cpu_ns;
		writes += wr[i].writes;
	}
	if (fails)
		b_failed("%s scale %ux%u: %zu writes failed", tb->im->name, nr,
			 nw, fails);
	*lps = nr ? (double)(l1 - l0) * 1e9 / (double)(t1 - t0) : NAN;
	*wps = nw ? (double)(w1 - w0) * 1e9 / (double)(t1 - t0) : NAN;
	*wcpu = writes ? (double)cpu / (double)writes : NAN;
}

/* Figures of one grid: [reader count][writer count][impl][rep]. */
static double sc_lps[B_MAX_GRID][B_MAX_GRID][B_MAX_IMPLS][B_MAX_REPS];
static double sc_wps[B_MAX_GRID][B_MAX_GRID][B_MAX_IMPLS][B_MAX_REPS];
static double sc_wcpu[B_MAX_GRID][B_MAX_GRID][B_MAX_IMPLS][B_MAX_REPS];

/* Rows of one cell; NaN figures (a budget stop) make them "stopped". */
static void scale_rows(const struct bench_impl *im, size_t i, size_t n,
		       unsigned int a, unsigned int b, int one)
{
	unsigned int nr = b_opts.grid_r[a], nw = b_opts.grid_w[b], rep;
	double v[B_MAX_REPS];
	char name[24];

	if (nr) {
		memcpy(v, sc_lps[a][b][i], sizeof(v));
		snprintf(name, sizeof(name), "scale-reads-w%u", nw);
		b_result(im, name, n, nr, v, "lookups/s", R_NONE, true);
	}
	if (!nw)
		return;
	memcpy(v, sc_wps[a][b][i], sizeof(v));
	snprintf(name, sizeof(name), "scale-writes-r%u", nr);
	b_result(im, name, n, nw, v, "writes/s", R_NONE, true);
	memcpy(v, sc_wcpu[a][b][i], sizeof(v));
	snprintf(name, sizeof(name), "scale-wcpu-r%u", nr);
	b_result(im, name, n, nw, v, "ns/op", R_NONE, false);
	if (one < 0 || nw == 1)
		return;
	/* Per repetition (same conditions), then the median. */
	for (rep = 0; rep < b_opts.reps; rep++)
		v[rep] = sc_wps[a][b][i][rep] / sc_wps[a][one][i][rep];
	snprintf(name, sizeof(name), "scale-writes-r%u/1", nr);
	b_result(im, name, n, nw, v, "x", R_NONE, true);
}

void b_run_scale(const struct bench_impl **all, size_t nall,
		 const struct bench_keys *k)
{
	const struct bench_impl *im[B_MAX_IMPLS];
	struct bench_table tb[B_MAX_IMPLS];
	size_t miss[B_MAX_IMPLS] = { 0 };
	unsigned int a, b, rep, wmax = 1;
	size_t ni, i, n = k->n, slice;
	int one = -1;

	if (!b_want(W_SCALE))
		return;
	ni = b_pick(all, nall, BI_MT, im);
	for (i = 0; i < nall && !b_opts.json; i++)
		if (!(all[i]->flags & (BI_MT | BI_TWIN)))
			printf("# scale: %s skipped (no concurrent writers)\n",
			       all[i]->name);
	for (b = 0; b < b_opts.grid_nw; b++) {
		if (b_opts.grid_w[b] > wmax)
			wmax = b_opts.grid_w[b];
		if (b_opts.grid_w[b] == 1)
			one = (int)b;
	}
	slice = k->nabsent / wmax;
	if (slice > B_SCALE_SLICE)
		slice = B_SCALE_SLICE;
	for (i = 0; i < ni; i++) {
		b_progress("n=%zu %s: scale build", n, im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		if (!b_budget_enter(B_W(W_SCALE), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], k, &tb[i].o, n + slice * wmax);
		b_budget_leave();
	}
	for (a = 0; a < b_opts.grid_nr; a++)
		for (b = 0; b < b_opts.grid_nw; b++)
			for (rep = 0; rep < b_opts.reps; rep++) {
				b_progress("n=%zu scale %ux%u %u/%u", n,
					   b_opts.grid_r[a], b_opts.grid_w[b],
					   rep + 1, b_opts.reps);
				for (i = 0; i < ni; i++) {
					double *l = &sc_lps[a][b][i][rep];
					double *w = &sc_wps[a][b][i][rep];
					double *c = &sc_wcpu[a][b][i][rep];

					*l = *w = *c = NAN;
					if (!b_budget_enter(B_W(W_SCALE), im[i],
							    n, "scale"))
						continue;
					scale_cell(&tb[i], k, b_opts.grid_r[a],
						   b_opts.grid_w[b], slice, l,
						   w, c, &miss[i]);
					if (!b_budget_leave())
						*l = *w = *c = NAN;
				}
			}
	for (i = 0; i < ni; i++) {
		for (a = 0; a < b_opts.grid_nr; a++)
			for (b = 0; b < b_opts.grid_nw; b++)
				scale_rows(im[i], i, n, a, b, one);
		/* A present key missed: a wrong answer, whatever the time. */
		b_once_row(im[i], "scale-misses", n, (double)miss[i],
			   "lookups");
		if (miss[i])
			b_failed("%s scale: %zu lookups missed a present key",
				 im[i]->name, miss[i]);
		b_table_drop(&tb[i], B_W(W_SCALE), n);
	}
}
