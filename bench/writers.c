/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * writers: W writer threads (1, 2, and --threads when more) on one table
 * that holds the N keys, so that they work at a full table's depth. Each
 * writer inserts its own slice of absent keys, then removes them, twice;
 * no readers. Rows: writers (insert+remove writes per second, wall clock,
 * all writers together) and writers-cpu (CPU ns per write, summed over
 * the writers: on a machine with fewer free cores than writers the wall
 * clock mostly shows the scheduler, while lock spinning still shows in
 * CPU time). Implementations that take concurrent writers only (BI_MT).
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

#define B_WRITER_ROUNDS	2

struct wr {
	pthread_t tid;
	const struct bench_impl *im;
	void *t;
	const struct conntab_key *keys;
	char *objs;
	size_t n, fails;
	uint64_t cpu_ns;
	unsigned int cpu;
	int *ready;
	volatile int *go;
};

static void *writer_fn(void *arg)
{
	struct wr *w = arg;
	unsigned int r;
	uint64_t c0;
	size_t i;

	b_thread_start(w->cpu, w->ready, w->go);
	c0 = b_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* Out of time: the table is left with what is in it. */
	for (r = 0; r < B_WRITER_ROUNDS && !b_over(); r++) {
		for (i = 0; i < w->n && !(i % 64 == 0 && b_over()); i++)
			w->fails += w->im->insert(w->t, w->objs + i * B_OBJ,
						  &w->keys[i]) != 0;
		for (i = 0; i < w->n && !(i % 64 == 0 && b_over()); i++)
			w->fails += w->im->remove(w->t,
						  w->objs + i * B_OBJ) != 0;
		if (b_over())
			break;
		/*
		 * Reused only after a grace period: another writer's
		 * traversal (lfht's writers run as readers) may still stand
		 * on a node just removed.
		 */
		synchronize_rcu();
		memset(w->objs, 0, w->n * B_OBJ);
	}
	w->cpu_ns = b_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	rcu_unregister_thread();
	return NULL;
}

/* @nw writers of @slice keys each; writes/s and CPU ns per write. */
static void writers_rep(struct bench_table *tb, const struct bench_keys *k,
			char *objs, size_t slice, unsigned int nw,
			double *wps, double *cpu)
{
	struct wr w[B_MAX_THREADS];
	volatile int go = 0;
	int ready = 0;
	uint64_t t0, sum = 0;
	size_t fails = 0, writes;
	unsigned int i;

	for (i = 0; i < nw; i++) {
		w[i] = (struct wr){
			.im = tb->im, .t = tb->t, .keys = k->absent + i * slice,
			.objs = objs + i * slice * B_OBJ, .n = slice,
			.cpu = i, .ready = &ready, .go = &go,
		};
		if (pthread_create(&w[i].tid, NULL, writer_fn, &w[i])) {
			fprintf(stderr, "conntab-bench: no writer thread\n");
			exit(1);
		}
	}
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < (int)nw)
		sched_yield();
	t0 = b_now_ns();
	go = 1;
	for (i = 0; i < nw; i++) {
		pthread_join(w[i].tid, NULL);
		fails += w[i].fails;
		sum += w[i].cpu_ns;
	}
	t0 = b_now_ns() - t0;
	writes = 2 * B_WRITER_ROUNDS * slice * nw;
	if (fails && !b_over())
		b_failed("%s writers: %zu of %zu writes failed", tb->im->name,
			 fails, writes);
	*wps = (double)writes * 1e9 / (double)t0;
	*cpu = (double)sum / (double)writes;
}

void b_run_writers(const struct bench_impl **all, size_t nall,
		   const struct bench_keys *k)
{
	unsigned int cfg[3] = { 1, 2, b_opts.threads }, nc, c, rep;
	static double wps[B_MAX_IMPLS][B_MAX_REPS];
	static double cpu[B_MAX_IMPLS][B_MAX_REPS];
	const struct bench_impl *im[B_MAX_IMPLS];
	struct bench_table tb[B_MAX_IMPLS];
	char *objs[B_MAX_IMPLS];
	size_t ni, i, n = k->n, slice;

	if (!b_want(W_WRITERS))
		return;
	ni = b_pick(all, nall, BI_MT, im);
	nc = b_opts.threads > 2 ? 3 : 2;
	/* N/8 keys per writer (128K at 1M), from the absent keys. */
	slice = n / 8;
	if (slice * cfg[nc - 1] > k->nabsent)
		slice = k->nabsent / cfg[nc - 1];
	for (i = 0; i < ni; i++) {
		b_progress("n=%zu %s: writers build", n, im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		objs[i] = b_alloc(slice * cfg[nc - 1] * B_OBJ);
		if (!b_budget_enter(B_W(W_WRITERS), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], k, &tb[i].o, n + slice * cfg[nc - 1]);
		b_budget_leave();
	}
	for (c = 0; c < nc; c++) {
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu writers %u/%u", n, cfg[c], rep + 1);
			for (i = 0; i < ni; i++) {
				wps[i][rep] = cpu[i][rep] = NAN;
				if (!b_budget_enter(B_W(W_WRITERS), im[i], n,
						    "writers"))
					continue;
				writers_rep(&tb[i], k, objs[i], slice, cfg[c],
					    &wps[i][rep], &cpu[i][rep]);
				if (!b_budget_leave())
					wps[i][rep] = cpu[i][rep] = NAN;
			}
		}
		for (i = 0; i < ni; i++) {
			b_result(im[i], "writers", n, cfg[c], wps[i],
				 "writes/s", R_NONE, true);
			b_result(im[i], "writers-cpu", n, cfg[c], cpu[i],
				 "ns/op", R_NONE, false);
		}
	}
	for (i = 0; i < ni; i++) {
		/* A table left by the time budget keeps objs[i] linked. */
		b_table_drop(&tb[i], B_W(W_WRITERS), n);
		if (!b_budget_stopped(B_W(W_WRITERS), im[i], n))
			free(objs[i]);
	}
}
