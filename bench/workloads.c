/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Single-threaded workloads: lookup, lookup-dep, lookup-miss, lookup-cold,
 * batch, memory (one table built per implementation and size) and insert /
 * remove (a fresh table per repetition).
 *
 * The lookups go through bench/stream.c's runners (the dependent chain
 * has its own loop, which takes the read lock as they do), and the hits
 * are checked.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "impl.h"
#include "mem.h"	/* lib/mem.h: --objects huge */
#include "objs.h"

/*
 * Lookups per repetition: all keys, at least 1M and at most 4M; with
 * --quick the keys once, so that a small table is not looked up 16 times
 * over for a figure that only has to be there.
 */
#define B_MIN_LOOKUPS	(1u << 20)
#define B_MAX_LOOKUPS	(4u << 20)

size_t b_lookups_per_rep(size_t n)
{
	if (b_opts.quick)
		return n < B_MAX_LOOKUPS ? n : B_MAX_LOOKUPS;
	if (n < B_MIN_LOOKUPS)
		return B_MIN_LOOKUPS / n * n;
	return n < B_MAX_LOOKUPS ? n : B_MAX_LOOKUPS;
}

void b_objs_init(struct bench_objs *o, const struct bench_impl *im, size_t n)
{
	if (im->obj_size > B_OBJ ||
	    im->user_off + sizeof(uintptr_t) > B_OBJ) {
		fprintf(stderr, "conntab-bench: %s objects exceed a slot\n",
			im->name);
		exit(1);
	}
	o->n = n;
	if (!b_opts.huge_objs) {
		o->base = b_alloc(n * B_OBJ);
		return;
	}
	/* As a DPDK pipeline's mempool: 2 MiB pages where the kernel has them. */
	o->base = ct_array_alloc(n * B_OBJ);
	if (!o->base) {
		fprintf(stderr, "conntab-bench: out of memory (%zu objects)\n",
			n);
		exit(1);
	}
}

void b_objs_free(struct bench_objs *o)
{
	if (b_opts.huge_objs)
		ct_array_free(o->base, o->n * B_OBJ);
	else
		free(o->base);
	o->base = NULL;
}

size_t b_pick(const struct bench_impl **all, size_t nall, unsigned int with,
	      const struct bench_impl **out)
{
	size_t i, n = 0;

	for (i = 0; i < nall; i++)
		if ((all[i]->flags & with) == with &&
		    !(all[i]->flags & BI_TWIN))
			out[n++] = all[i];
	return n;
}

void *b_create(const struct bench_impl *im, size_t expected,
	       const uint8_t *secret)
{
	void *t = im->create(im, im->flags & BI_UNSIZED ? 0 : expected,
			     secret);

	if (!t) {
		fprintf(stderr, "conntab-bench: %s: create failed\n", im->name);
		exit(1);
	}
	return t;
}

void *b_build(const struct bench_impl *im, const struct bench_keys *k,
	      struct bench_objs *o, size_t expected)
{
	void *t;
	size_t i, fail = 0;

	memset(o->base, 0, o->n * B_OBJ);
	t = b_create(im, expected, k->secret);
	/* Out of time: the caller drops the part-built table. */
	for (i = 0; i < k->n && !(i % 64 == 0 && b_over()); i++)
		fail += im->insert(t, b_obj(o, k, i), &k->keys[i]) != 0;
	if (fail)
		b_failed("%s: %zu inserts failed", im->name, fail);
	return t;
}

void b_check_found(const struct bench_impl *im, const char *what,
		   size_t found, size_t want)
{
	/* A loop ended early by the time budget: its figure is dropped. */
	if (found != want && !b_over())
		b_failed("%s %s: found %zu of %zu keys", im->name, what,
			 found, want);
}

/*
 * Destroy a table and free its objects; those of an implementation that
 * ran out of its time budget are left for exit instead: a table in the
 * state that made it slow may take as long to tear down (lfht unlinks
 * node by node from the bucket), and a resize of its own may still be
 * running over the objects.
 */
void b_table_drop(struct bench_table *tb, unsigned long wmask, size_t n)
{
	if (b_budget_stopped(wmask, tb->im, n))
		return;
	if (tb->t)
		tb->im->destroy(tb->t);
	b_objs_free(&tb->o);
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
	uint64_t t0 = b_time_ns();
	void *p = NULL;

	for (done = 0; done < m; done += len) {
		len = m - done < n ? m - done : n;
		kp = &keys[(uintptr_t)p >> 63];
		for (i = 0; i < len; i++) {
			if (!(i % B_READ_CHUNK)) {
				if (i)
					rcu_read_unlock();
				if (b_over())
					goto out;
				rcu_read_lock();
			}
			p = im->lookup(t, kp);
			hit += p != NULL;
			/* The user's word is part of the chain, as its use is. */
			kp = &keys[i + 1 + (((uintptr_t)p |
					     b_user_word(im, p)) >> 63)];
		}
		rcu_read_unlock();
	}
out:
	t0 = b_time_ns() - t0;
	b_sink += (uintptr_t)p;
	*found = hit;
	return (double)t0 / (double)m;
}

/*
 * A thread that keeps writing over 2 x L3, as user work would. --quick
 * caps the buffer at B_QUICK_SWEEP: a virtual machine may report an L3
 * of hundreds of MiB (508 MiB on the 2-core one of doc/performance.md),
 * and zeroing and sweeping 1 GiB took 20 s of a quick run; 64 MiB is 16
 * times the objects of --quick's 64K-entry table.
 */
#define B_QUICK_SWEEP	((size_t)64 << 20)

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

/*
 * The median of one implementation's repetitions of one workload. A
 * repetition that did not run to its end (NaN: the time budget ran out)
 * makes the row "stopped": a median of the survivors would hide that
 * they were the fast ones.
 */
void b_result(const struct bench_impl *im, const char *wl, size_t n,
	      unsigned int threads, double *v, const char *unit, int kind,
	      bool higher)
{
	struct bench_result r = {
		.impl = im->name, .n = n, .threads = threads, .unit = unit,
		.ratio_kind = kind, .higher_better = higher,
	};
	unsigned int i;

	snprintf(r.workload, sizeof(r.workload), "%s", wl);
	for (i = 0; i < b_opts.reps; i++)
		r.stopped |= isnan(v[i]);
	if (r.stopped)
		r.value = r.min = r.max = NAN;
	else
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

double b_table_bytes(const struct bench_impl *im, void *t, size_t heap0)
{
	long mem = im->memory(t);

	if (mem < 0) {
		/* Let deferred resizes and frees finish before measuring. */
		rcu_barrier();
		mem = (long)(b_heap_bytes() - heap0);
	}
	return (double)mem;
}

void b_once_row(const struct bench_impl *im, const char *wl, size_t n,
		double v, const char *unit)
{
	struct bench_result r = {
		.impl = im->name, .n = n, .threads = 1, .unit = unit,
		.ratio_kind = R_NONE, .value = v, .min = v, .max = v,
		.stopped = isnan(v),
	};

	snprintf(r.workload, sizeof(r.workload), "%s", wl);
	b_record(&r);
}

/* Bytes per entry; for conntab also the depth and the slots it reports. */
static void memory(const struct bench_impl *im, void *t, size_t n,
		   size_t heap0)
{
	struct conntab_stats st;

	b_once_row(im, "memory", n, b_table_bytes(im, t, heap0) / (double)n,
		 "B/entry");
	if (!(im->flags & BI_CONNTAB))
		return;
	conntab_stats(t, &st);
	b_once_row(im, "depth", n, (double)st.max_depth, "nodes");
	b_once_row(im, "buckets", n, (double)st.buckets, "slots");
}

enum lk_kind {
	LK_HIT, LK_DEP, LK_MISS, LK_COLD, LK_B16, LK_B32, LK_B64, LK_EST, LK_TW
};

static const struct {
	enum b_workload w;
	const char *name;
	int ratio;
} lk_kinds[] = {
	[LK_HIT] = { W_LOOKUP, "lookup", R_DEP },
	[LK_DEP] = { W_LOOKUP_DEP, "lookup-dep", R_DEP },
	[LK_MISS] = { W_LOOKUP_MISS, "lookup-miss", R_DEP },
	[LK_COLD] = { W_LOOKUP_COLD, "lookup-cold", R_DEP },
	[LK_B16] = { W_BATCH, "batch16", R_INDEP },
	/* the bursts of issue 28's targets against rte_hash's bulk lookup */
	[LK_B32] = { W_BATCH, "batch32", R_INDEP },
	[LK_B64] = { W_BATCH, "batch64", R_INDEP },
	[LK_EST] = { W_LOOKUP, "lookup-est", R_DEP },
	[LK_TW] = { W_LOOKUP, "lookup-tw", R_DEP },
};

/* Key arrays of the lookup workloads besides k->order. */
struct lk_keys {
	struct conntab_key *mix;	/* lookup-miss: half absent */
	size_t want;			/* its present keys */
	struct conntab_key *state[2];	/* --tw-share: est, tw keys */
	size_t nstate[2];
};

/*
 * --tw-share: is key i of n one of the ntw time-wait ones? Spread evenly
 * (Bresenham), so that the states interleave in insert order and neither
 * sits nearer the head of the chains that push at the head.
 */
static bool key_is_tw(size_t i, size_t n, size_t ntw)
{
	return (i + 1) * ntw / n != i * ntw / n;
}

static size_t tw_count(size_t n)
{
	return (size_t)(b_opts.tw_share * (double)n + 0.5);
}

/* Each time-wait key's object replaced by its own time-wait object. */
static void make_timewait(struct bench_table *tb, const struct bench_keys *k)
{
	size_t n = k->n, ntw = tw_count(n), i, fail = 0;

	for (i = 0; i < n; i++)
		if (key_is_tw(i, n, ntw))
			fail += tb->im->timewait(tb->t, b_obj(&tb->o, k, i),
					tb->o.base + (n + k->slot[i]) * B_OBJ)
				!= 0;
	if (fail)
		b_failed("%s: %zu of %zu time-wait transitions failed",
			 tb->im->name, fail, ntw);
}

/* The keys of the established (0) and the time-wait (1) entries. */
static void state_keys(struct lk_keys *lk, const struct bench_keys *k)
{
	size_t n = k->n, ntw = tw_count(n), i, s;
	uint64_t rng = b_opts.seed ^ 0x7715ull;

	for (s = 0; s < 2; s++) {
		lk->state[s] = b_alloc((s ? ntw : n - ntw) *
				       sizeof(*lk->state[s]));
		lk->nstate[s] = 0;
	}
	for (i = 0; i < n; i++) {
		s = key_is_tw(i, n, ntw);
		lk->state[s][lk->nstate[s]++] = k->keys[i];
	}
	for (s = 0; s < 2; s++)
		b_shuffle_keys(lk->state[s], lk->nstate[s], &rng);
}

/* One repetition of one lookup workload on one table; ns/lookup. */
static double lookup_rep(enum lk_kind kind, struct bench_table *tb,
			 const struct bench_keys *k, const struct lk_keys *lk)
{
	size_t n = k->n, m = b_lookups_per_rep(n), found = 0, exp = m, bs;
	const struct bench_impl *im = tb->im;
	double ns = 0;

	switch (kind) {
	case LK_HIT:
	case LK_COLD:
		ns = b_run_lookup(im, tb->t, k->order, n, m, &found);
		break;
	case LK_DEP:
		ns = run_lookup_dep(im, tb->t, k->order, n, m, &found);
		break;
	case LK_MISS:
		ns = b_run_lookup(im, tb->t, lk->mix, n, n, &found);
		exp = lk->want;
		break;
	case LK_EST:
	case LK_TW:
		ns = b_run_lookup(im, tb->t, lk->state[kind == LK_TW],
				  lk->nstate[kind == LK_TW], m, &found);
		break;
	case LK_B16:
	case LK_B32:
	case LK_B64:
		bs = kind == LK_B16 ? 16 : kind == LK_B32 ? 32 : 64;
		/* Whole batches only: every one measures bs keys. */
		exp = m / bs * bs;
		ns = b_run_batch(im, tb->t, k->order, n / bs * bs, exp, bs,
				 &found);
		break;
	}
	b_check_found(im, lk_kinds[kind].name, found, exp);
	return ns;
}

/*
 * Every lookup workload on one table per implementation. Repetitions are
 * interleaved (rep 1 of every implementation, then rep 2, ...) so that a
 * burst of load from elsewhere on the machine hits all of them alike.
 */
void b_run_single(const struct bench_impl **im, size_t ni,
		  const struct bench_keys *k)
{
	double v[B_MAX_IMPLS][B_MAX_REPS];
	struct bench_table tb[B_MAX_IMPLS];
	struct lk_keys lk = { 0 };
	struct sweeper sw = { 0 };
	size_t n = k->n, i, ntw = tw_count(n);
	unsigned int rep, kind;
	/* The workloads on these tables: each is charged their building. */
	unsigned long group = b_opts.workloads &
		(B_W(W_LOOKUP) | B_W(W_LOOKUP_DEP) | B_W(W_LOOKUP_MISS) |
		 B_W(W_LOOKUP_COLD) | B_W(W_BATCH) | B_W(W_MEMORY) |
		 B_W(W_ZIPF) | B_W(W_TRAINS));

	if (!group)
		return;
	for (i = 0; i < ni; i++) {
		size_t heap0;

		b_progress("n=%zu %s: build", n, im[i]->name);
		/* With time-wait entries: their objects are n..2n. */
		b_objs_init(&tb[i].o, im[i], ntw ? 2 * n : n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		if (!b_budget_enter(group, im[i], n, "building its table"))
			continue;
		heap0 = b_heap_bytes();
		tb[i].t = b_build(im[i], k, &tb[i].o, n);
		/* A padded twin's memory is its backend's. */
		if (b_want(W_MEMORY) && !b_over() &&
		    !(im[i]->flags & BI_PADDED))
			memory(im[i], tb[i].t, n, heap0);
		if (ntw && !b_over())
			make_timewait(&tb[i], k);
		if (!b_budget_leave() && b_want(W_MEMORY) &&
		    !(im[i]->flags & BI_PADDED))
			b_once_row(im[i], "memory", n, NAN, "B/entry");
	}
	if (b_want(W_LOOKUP_MISS))
		lk.mix = make_mix(k, &lk.want);
	if (ntw && ntw < n)
		state_keys(&lk, k);
	for (kind = 0; kind < sizeof(lk_kinds) / sizeof(lk_kinds[0]); kind++) {
		if (!b_want(lk_kinds[kind].w) ||
		    ((kind == LK_EST || kind == LK_TW) && !lk.state[0]))
			continue;
		if (kind == LK_COLD) {
			sw.len = 2 * b_l3_bytes();
			if (b_opts.quick && sw.len > B_QUICK_SWEEP)
				sw.len = B_QUICK_SWEEP;
			sw.buf = b_alloc(sw.len);
			if (pthread_create(&sw.tid, NULL, sweep_fn, &sw)) {
				fprintf(stderr, "conntab-bench: no thread\n");
				exit(1);
			}
		}
		for (rep = 0; rep < b_opts.reps; rep++) {
			b_progress("n=%zu %s %u/%u", n, lk_kinds[kind].name,
				   rep + 1, b_opts.reps);
			for (i = 0; i < ni; i++) {
				v[i][rep] = NAN;
				if (!b_budget_enter(B_W(lk_kinds[kind].w),
						    im[i], n,
						    lk_kinds[kind].name))
					continue;
				v[i][rep] = lookup_rep(kind, &tb[i], k, &lk);
				if (!b_budget_leave())
					v[i][rep] = NAN;
			}
		}
		if (kind == LK_COLD) {
			sw.stop = 1;
			pthread_join(sw.tid, NULL);
			free(sw.buf);
		}
		for (i = 0; i < ni; i++)
			b_result(im[i], lk_kinds[kind].name, n, 1, v[i],
				 "ns/op", lk_kinds[kind].ratio, false);
	}
	free(lk.mix);
	free(lk.state[0]);
	free(lk.state[1]);
	b_run_traffic(tb, ni, k);
	for (i = 0; i < ni; i++)
		b_table_drop(&tb[i], group, n);
}

/*
 * N inserts into an empty table sized for N, then N removes in another
 * random order: removing in insert order would walk a table that hands
 * out its slots in insert order (rte_hash's key store) front to back,
 * which a connection table's removes never do.
 */
void b_run_update(const struct bench_impl **im, size_t ni,
		  const struct bench_keys *k)
{
	double vi[B_MAX_IMPLS][B_MAX_REPS], vr[B_MAX_IMPLS][B_MAX_REPS];
	unsigned long both = b_opts.workloads & (B_W(W_INSERT) |
						 B_W(W_REMOVE));
	struct bench_objs o[B_MAX_IMPLS];
	size_t n = k->n, i, j, fail;
	uint64_t t0, rng = b_opts.seed ^ 0x72656dull;
	unsigned int rep;
	uint32_t *gone;
	void *t;

	if (!both)
		return;
	gone = b_alloc(n * sizeof(*gone));
	for (i = 0; i < n; i++)
		gone[i] = (uint32_t)i;
	b_shuffle32(gone, n, &rng);
	for (j = 0; j < ni; j++)
		b_objs_init(&o[j], im[j], n);
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu insert/remove %u/%u", n, rep + 1,
			   b_opts.reps);
		for (j = 0; j < ni; j++) {
			vi[j][rep] = vr[j][rep] = NAN;
			if (!b_budget_enter(both, im[j], n, "insert/remove"))
				continue;
			memset(o[j].base, 0, n * B_OBJ);
			t = b_create(im[j], n, k->secret);
			fail = 0;
			t0 = b_time_ns();
			for (i = 0; i < n && !(i % 64 == 0 && b_over()); i++)
				fail += im[j]->insert(t, b_obj(&o[j], k, i),
						      &k->keys[i]) != 0;
			vi[j][rep] = (double)(b_time_ns() - t0) / (double)n;
			t0 = b_time_ns();
			for (i = 0; i < n && !(i % 64 == 0 && b_over()); i++)
				fail += im[j]->remove(t,
						b_obj(&o[j], k, gone[i])) != 0;
			vr[j][rep] = (double)(b_time_ns() - t0) / (double)n;
			b_check_found(im[j], "insert/remove", 2 * n - fail,
				      2 * n);
			if (!b_budget_leave()) {
				/* Left, with its objects (b_table_drop). */
				vi[j][rep] = vr[j][rep] = NAN;
				continue;
			}
			im[j]->destroy(t);
		}
	}
	for (j = 0; j < ni; j++) {
		if (!b_budget_stopped(both, im[j], n))
			b_objs_free(&o[j]);
		if (b_want(W_INSERT))
			b_result(im[j], "insert", n, 1, vi[j], "ns/op", R_DEP,
				 false);
		if (b_want(W_REMOVE))
			b_result(im[j], "remove", n, 1, vr[j], "ns/op", R_DEP,
				 false);
	}
	free(gone);
}
