/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user objects of one implementation: n slots of B_OBJ bytes, key i
 * in slot[i],
 * so consecutive keys live at unrelated addresses.
 */
#ifndef BENCH_OBJS_H
#define BENCH_OBJS_H

#include <pthread.h>

#include "bench.h"

struct bench_objs {
	char *base;
	size_t n;
};

/* A built table of one implementation, with its objects. */
struct bench_table {
	const struct bench_impl *im;
	void *t;
	struct bench_objs o;
};

static inline void *b_obj(const struct bench_objs *o,
			  const struct bench_keys *k, size_t i)
{
	return o->base + (size_t)k->slot[i] * B_OBJ;
}

/*
 * The implementations of @all that have every flag of @with, unsized
 * twins left out (they are for the single-threaded workloads).
 */
size_t b_pick(const struct bench_impl **all, size_t nall, unsigned int with,
	      const struct bench_impl **out);
/* A table for @expected entries (none for BI_UNSIZED); exits on failure. */
void *b_create(const struct bench_impl *im, size_t expected,
	       const uint8_t *secret);
/* Library bytes of a table; the heap's growth since @heap0 for a peer. */
double b_table_bytes(const struct bench_impl *im, void *t, size_t heap0);
void b_objs_init(struct bench_objs *o, const struct bench_impl *im, size_t n);
void b_objs_free(struct bench_objs *o);
void *b_build(const struct bench_impl *im, const struct bench_keys *k,
	      struct bench_objs *o, size_t expected);
void b_check_found(const struct bench_impl *im, const char *what,
		   size_t found, size_t want);
/* Destroy and free, unless stopped on @wmask at @n by the time budget. */
void b_table_drop(struct bench_table *tb, unsigned long wmask, size_t n);

/* Lookups per repetition of a lookup workload at N keys. */
size_t b_lookups_per_rep(size_t n);

/* bench/stream.c: keys[0..n) looked up, repeated to m lookups; ns/lookup. */
double b_run_lookup(const struct bench_impl *im, void *t,
		    const struct conntab_key *keys, size_t n, size_t m,
		    size_t *found);
double b_run_batch(const struct bench_impl *im, void *t,
		   const struct conntab_key *keys, size_t n, size_t m,
		   size_t bs, size_t *found);
/*
 * keys[0..n) replayed on every table, repetitions interleaved: rows
 * @name (one at a time) and @name-b16 (batches), one thread and, with
 * --threads > 1, that many readers at once; reported at table size @size,
 * timed against workload @w's budget.
 */
void b_stream_measure(struct bench_table *tb, size_t ni, enum b_workload w,
		      const char *name, const struct conntab_key *keys,
		      size_t n, size_t size);

/* bench/traffic.c: zipf and trains on the tables of b_run_single. */
void b_run_traffic(struct bench_table *tb, size_t ni,
		   const struct bench_keys *k);

/*
 * bench/workloads-mt.c: a writer thread that inserts and removes absent
 * keys at --rate pairs/s (reusing its nodes after a grace period) until
 * stopped, and then leaves the table as it found it.
 */
struct b_writer {
	pthread_t tid;
	const struct bench_impl *im;
	void *t;
	const struct bench_keys *k;
	unsigned int cpu;
	volatile int stop;
	size_t pairs;		/* insert+remove pairs done (relaxed) */
	size_t fails;
};

void b_writer_start(struct b_writer *w, const struct bench_impl *im, void *t,
		    const struct bench_keys *k, unsigned int cpu);
size_t b_writer_pairs(struct b_writer *w);
/* Stop and join; failed writes are reported as wrong answers of @what. */
void b_writer_stop(struct b_writer *w, const char *what);

/* A figure measured once (a count, a size): value = min = max. */
void b_once_row(const struct bench_impl *im, const char *wl, size_t n,
		double v, const char *unit);
void b_result(const struct bench_impl *im, const char *wl, size_t n,
	      unsigned int threads, double *v, const char *unit, int kind,
	      bool higher);

extern volatile uintptr_t b_sink;

#endif /* BENCH_OBJS_H */
