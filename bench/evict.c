/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evict: conntab_insert_evict() into a full table. A table created with
 * max_entries = N is filled to N - N/8 keys; then N/8 plain inserts fill
 * it (timed), and N/8 inserts of new keys each evict a sampled node
 * (timed). The rank reads the node's state, as an application's would
 * read its connection: TIME_WAIT first, then an order the library cannot
 * guess (bits of the node's address).
 *
 * Rows per conntab backend: evict (evicting inserts per second),
 * evict-plain (plain inserts per second into the same table just before)
 * and evict/insert (ns per evicting insert over ns per plain insert, per
 * repetition). Every evicting insert must succeed with a victim and the
 * table must end with N entries. Backends without insert_evict
 * (-EOPNOTSUPP) are left out.
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

#define B_EVICT_SHARE	8	/* N / 8 inserts of each kind */

static long rank_fn(struct conntab_node *n, void *arg)
{
	long age = (long)((uintptr_t)n >> 6 & 0xffff);

	return conntab_node_state(n) == CONNTAB_TIMEWAIT ? 0x10000 + age
							 : age;
}

/* One repetition: ns per plain insert and per evicting insert; -1 if none. */
static int evict_rep(const struct bench_impl *im, const struct bench_keys *k,
		     struct bench_objs *o, char *extra, double *plain,
		     double *evict)
{
	struct conntab_config cfg = {
		.backend = (enum conntab_backend)im->backend,
		.expected = k->n, .max_entries = k->n,
		.secret = k->secret, .hash = b_opts.hash,
	};
	size_t n = k->n, m = n / B_EVICT_SHARE, i, fail = 0, none = 0;
	struct conntab_node *victim;
	struct conntab_stats st;
	struct conntab *t;
	uint64_t t0;
	int err = 0;

	memset(o->base, 0, n * B_OBJ);
	memset(extra, 0, m * B_OBJ);
	t = conntab_create(&cfg);
	if (!t) {
		fprintf(stderr, "conntab-bench: %s: create failed\n", im->name);
		exit(1);
	}
	for (i = 0; i < n - m && !(i % 64 == 0 && b_over()); i++)
		fail += conntab_insert(t, b_obj(o, k, i), &k->keys[i]) != 0;
	t0 = b_time_ns();
	for (; i < n && !(i % 64 == 0 && b_over()); i++)
		fail += conntab_insert(t, b_obj(o, k, i), &k->keys[i]) != 0;
	*plain = (double)(b_time_ns() - t0) / (double)m;
	t0 = b_time_ns();
	for (i = 0; i < m && err != -EOPNOTSUPP &&
		    !(i % 64 == 0 && b_over()); i++) {
		err = conntab_insert_evict(t, (struct conntab_node *)
					   (extra + i * B_OBJ),
					   &k->absent[i], rank_fn, NULL,
					   &victim);
		fail += err != 0;
		none += !err && !victim;
	}
	*evict = (double)(b_time_ns() - t0) / (double)m;
	conntab_stats(t, &st);
	/* Out of time: the table and its objects are left as they are. */
	if (b_over())
		return 0;
	conntab_destroy(t, NULL);
	if (err == -EOPNOTSUPP)
		return -1;
	if (fail || none || st.entries != n)
		b_failed("%s evict: %zu failed, %zu without a victim, %zu "
			 "entries of %zu", im->name, fail, none, st.entries,
			 n);
	return 0;
}

void b_run_evict(const struct bench_impl **all, size_t nall,
		 const struct bench_keys *k)
{
	static double v[B_MAX_IMPLS][3][B_MAX_REPS];
	const struct bench_impl *im[B_MAX_IMPLS];
	struct bench_objs o[B_MAX_IMPLS];
	size_t ni, i, n = k->n, m = n / B_EVICT_SHARE;
	char *extra[B_MAX_IMPLS];
	bool ok[B_MAX_IMPLS];
	double plain, evict;
	unsigned int rep;

	if (!b_want(W_EVICT))
		return;
	ni = b_pick(all, nall, BI_CONNTAB, im);
	for (i = 0; i < ni; i++) {
		b_objs_init(&o[i], im[i], n);
		extra[i] = b_alloc(m * B_OBJ);
		ok[i] = true;
	}
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu evict %u/%u", n, rep + 1, b_opts.reps);
		for (i = 0; i < ni; i++) {
			v[i][0][rep] = v[i][1][rep] = v[i][2][rep] = NAN;
			if (!ok[i] || !b_budget_enter(B_W(W_EVICT), im[i], n,
						      "evict"))
				continue;
			ok[i] = !evict_rep(im[i], k, &o[i], extra[i], &plain,
					   &evict);
			if (!b_budget_leave())
				continue;
			v[i][0][rep] = 1e9 / evict;
			v[i][1][rep] = 1e9 / plain;
			v[i][2][rep] = evict / plain;
		}
	}
	for (i = 0; i < ni; i++) {
		if (ok[i]) {
			b_result(im[i], "evict", n, 1, v[i][0], "inserts/s",
				 R_NONE, true);
			b_result(im[i], "evict-plain", n, 1, v[i][1],
				 "inserts/s", R_NONE, true);
			b_result(im[i], "evict/insert", n, 1, v[i][2], "x",
				 R_NONE, false);
		} else {
			fprintf(stderr, "conntab-bench: %s has no "
				"conntab_insert_evict(): no evict rows\n",
				im[i]->name);
		}
		if (!b_budget_stopped(B_W(W_EVICT), im[i], n)) {
			b_objs_free(&o[i]);
			free(extra[i]);
		}
	}
}
