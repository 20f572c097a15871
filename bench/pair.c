/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pair: connections found by two tuples, as a NAT or a connection tracker
 * keeps them (the original and the reply direction). A connection is one
 * object of two adjacent slots (the kernel's nf_conn holds both tuple
 * hashes), placed at random; its halves get keys 2i and 2i + 1.
 *
 * N/2 connections go into an empty table sized for N entries: conntab's
 * backends with conntab_insert_pair(), one writer step; every other
 * implementation with what its users write instead, two inserts and a
 * link from each half to the other (undone if the second insert fails).
 * Then the N/2 connections leave in another random order, through either
 * half: conntab_remove() of one half takes both, the others make two
 * removes. On conntab's backends the same keys, in objects of their own
 * placed alike, go in and out of a second table beside the first as
 * 2 x N/2 single inserts and removes, which is what the pair replaces;
 * the two tables take the connections in turns of 256 (pair_rep()).
 *
 * Rows: pair-insert and pair-remove (ns per connection), and for
 * conntab's backends pair-insert/2 and pair-remove/2: the pair's time
 * over its two single operations', per repetition (below 1: a pair costs
 * less than the two inserts or removes it replaces).
 *
 * The pcap workload's --pairs replay (replay.c) builds its tables with
 * b_pair_insert() too.
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
#include "pair.h"

/* The link a peer's half keeps to its other half: the user's word. */
static inline void **peer_link(const struct bench_impl *im, void *obj)
{
	return (void **)((char *)obj + im->user_off);
}

int b_pair_insert(const struct bench_impl *im, void *t, void *a,
		  const struct conntab_key *ka, void *b,
		  const struct conntab_key *kb)
{
	int err;

	if (im->insert_pair)
		return im->insert_pair(t, a, ka, b, kb);
	err = im->insert(t, a, ka);
	if (err)
		return err;
	err = im->insert(t, b, kb);
	if (err) {
		im->remove(t, a);
		return err;
	}
	*peer_link(im, a) = b;
	*peer_link(im, b) = a;
	return 0;
}

int b_pair_remove(const struct bench_impl *im, void *t, void *obj)
{
	void *peer;
	int err;

	if (im->insert_pair)
		return im->remove(t, obj);
	peer = *peer_link(im, obj);
	err = im->remove(t, obj);
	return err ? err : im->remove(t, peer);
}

void *b_pair_peer(const struct bench_impl *im, void *obj)
{
	if (im->insert_pair)
		return conntab_pair_peer(obj);
	return *peer_link(im, obj);
}

/* The object of connection @c's half @h (0 or 1): two adjacent slots. */
static inline void *half(const struct bench_objs *o, const uint32_t *place,
			 size_t c, unsigned int h)
{
	return o->base + ((size_t)place[c] * 2 + h) * B_OBJ;
}

/*
 * Connections [@c0, @c1) in: as pairs into table @t, or as two single
 * inserts each (@pairs false). The number that failed.
 */
static size_t put(const struct bench_impl *im, void *t,
		  const struct bench_keys *k, const struct bench_objs *o,
		  const uint32_t *place, size_t c0, size_t c1, bool pairs)
{
	size_t c, fail = 0;

	for (c = c0; c < c1; c++) {
		if (pairs) {
			fail += b_pair_insert(im, t, half(o, place, c, 0),
					      &k->keys[2 * c],
					      half(o, place, c, 1),
					      &k->keys[2 * c + 1]) != 0;
		} else {
			fail += im->insert(t, half(o, place, c, 0),
					   &k->keys[2 * c]) != 0;
			fail += im->insert(t, half(o, place, c, 1),
					   &k->keys[2 * c + 1]) != 0;
		}
	}
	return fail;
}

/* The connections gone[@c0, @c1) out, as put() put them in. */
static size_t take(const struct bench_impl *im, void *t,
		   const struct bench_objs *o, const uint32_t *place,
		   const uint32_t *gone, size_t c0, size_t c1, bool pairs)
{
	size_t c, fail = 0;

	for (c = c0; c < c1; c++) {
		size_t g = gone[c];

		if (pairs) {
			/* Through either half: the parity of its number. */
			fail += b_pair_remove(im, t,
					      half(o, place, g, g & 1)) != 0;
		} else {
			fail += im->remove(t, half(o, place, g, 0)) != 0;
			fail += im->remove(t, half(o, place, g, 1)) != 0;
		}
	}
	return fail;
}

/* Connections [@c0, @c1) in (@ph 0) or out (1), timed: ns. */
static uint64_t turn(const struct bench_impl *im, void *t,
		     const struct bench_keys *k, const struct bench_objs *o,
		     const uint32_t *place, const uint32_t *gone, size_t c0,
		     size_t c1, unsigned int ph, bool pairs, size_t *fail)
{
	uint64_t t0 = b_time_ns();

	*fail += ph ? take(im, t, o, place, gone, c0, c1, pairs)
		    : put(im, t, k, o, place, c0, c1, pairs);
	return b_time_ns() - t0;
}

/* Every 61st connection found by both keys and linked, or by neither. */
static size_t check(const struct bench_impl *im, void *t,
		    const struct bench_keys *k, const struct bench_objs *o,
		    const uint32_t *place, bool in)
{
	size_t m = k->n / 2, c, fail = 0;
	void *a, *b;

	rcu_read_lock();
	for (c = 0; c < m && !b_over(); c += 61) {
		a = im->lookup(t, &k->keys[2 * c]);
		b = im->lookup(t, &k->keys[2 * c + 1]);
		if (!in)
			fail += a || b;
		else
			fail += a != half(o, place, c, 0) ||
				b != half(o, place, c, 1) ||
				b_pair_peer(im, a) != b;
	}
	rcu_read_unlock();
	return fail;
}

/*
 * One repetition of one implementation: ns per connection in *@v (pair
 * insert, pair remove, and for conntab the same over the two single
 * operations'); the number of operations that failed or found the wrong
 * object. conntab's two tables live side by side and take the same
 * connections in turns of B_PAIR_TURN, so that page faults, the cache
 * and the machine's noise fall on both alike, as they would not on one
 * table built after the other.
 */
#define B_PAIR_TURN	256

static size_t pair_rep(const struct bench_impl *im,
		       const struct bench_keys *k, struct bench_objs *o,
		       struct bench_objs *os, const uint32_t *place,
		       const uint32_t *gone, double *v)
{
	size_t m = k->n / 2, c, e, fail = 0;
	uint64_t tp[2] = { 0, 0 }, ts[2] = { 0, 0 };
	unsigned int ph;
	bool single = im->insert_pair != NULL;
	void *t, *u = NULL;

	memset(o->base, 0, 2 * m * B_OBJ);
	t = b_create(im, 2 * m, k->secret);
	if (single) {
		memset(os->base, 0, 2 * m * B_OBJ);
		u = b_create(im, 2 * m, k->secret);
	}
	/* Phase 0 puts every connection in, phase 1 takes them out. */
	for (ph = 0; ph < 2; ph++) {
		for (c = 0; c < m && !b_over(); c = e) {
			e = m - c < B_PAIR_TURN ? m : c + B_PAIR_TURN;
			tp[ph] += turn(im, t, k, o, place, gone, c, e, ph, true,
				       &fail);
			if (single)
				ts[ph] += turn(im, u, k, os, place, gone, c, e,
					       ph, false, &fail);
		}
		fail += check(im, t, k, o, place, !ph);
	}
	/* Out of time: the tables and objects are left as they are. */
	if (b_over())
		return fail;
	v[0] = (double)tp[0] / (double)m;
	v[1] = (double)tp[1] / (double)m;
	if (single) {
		v[2] = (double)tp[0] / (double)ts[0];
		v[3] = (double)tp[1] / (double)ts[1];
		im->destroy(u);
	}
	im->destroy(t);
	return fail;
}

void b_run_pair(const struct bench_impl **im, size_t ni,
		const struct bench_keys *k)
{
	static double v[B_MAX_IMPLS][4][B_MAX_REPS];
	struct bench_objs o[B_MAX_IMPLS], os[B_MAX_IMPLS];
	size_t m = k->n / 2, i, j, fail;
	uint64_t rng = b_opts.seed ^ 0x70616972ull;
	uint32_t *place, *gone;
	unsigned int rep;

	if (!b_want(W_PAIR) || m < 1)
		return;
	place = b_alloc(m * sizeof(*place));
	gone = b_alloc(m * sizeof(*gone));
	for (i = 0; i < m; i++)
		place[i] = gone[i] = (uint32_t)i;
	b_shuffle32(place, m, &rng);
	b_shuffle32(gone, m, &rng);
	for (j = 0; j < ni; j++) {
		b_objs_init(&o[j], im[j], 2 * m);
		os[j].base = NULL;
		os[j].n = 0;
		if (im[j]->insert_pair)
			b_objs_init(&os[j], im[j], 2 * m);
	}
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu pair %u/%u", k->n, rep + 1, b_opts.reps);
		for (j = 0; j < ni; j++) {
			double r[4] = { NAN, NAN, NAN, NAN };

			if (!b_budget_enter(B_W(W_PAIR), im[j], k->n, "pair"))
				goto none;
			fail = pair_rep(im[j], k, &o[j], &os[j], place, gone,
					r);
			if (fail)
				b_failed("%s pair: %zu operations failed or "
					 "found the wrong object", im[j]->name,
					 fail);
			if (!b_budget_leave())
				r[0] = r[1] = r[2] = r[3] = NAN;
none:
			for (i = 0; i < 4; i++)
				v[j][i][rep] = r[i];
		}
	}
	for (j = 0; j < ni; j++) {
		if (!b_budget_stopped(B_W(W_PAIR), im[j], k->n)) {
			b_objs_free(&o[j]);
			b_objs_free(&os[j]);
		}
		b_result(im[j], "pair-insert", k->n, 1, v[j][0], "ns/pair",
			 R_DEP, false);
		b_result(im[j], "pair-remove", k->n, 1, v[j][1], "ns/pair",
			 R_DEP, false);
		if (!im[j]->insert_pair)
			continue;
		b_result(im[j], "pair-insert/2", k->n, 1, v[j][2], "x", R_NONE,
			 false);
		b_result(im[j], "pair-remove/2", k->n, 1, v[j][3], "x", R_NONE,
			 false);
	}
	free(place);
	free(gone);
}
