/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Traffic that is "kind of random... but not quite": the zipf and trains
 * workloads, on the tables the lookup workloads built.
 *
 *  zipf    each packet belongs to a flow drawn from Zipf(s) over the N
 *          connections (--zipf S[,S...], default 1.0): a few flows carry
 *          most packets, as on a server;
 *  trains  flows drawn the same way each send a train of packets of
 *          geometric length (--train MEAN, default 4); B_TRAINS_ACTIVE
 *          trains are in progress at once and every packet comes from one
 *          of them picked at random, so trains interleave as a receive
 *          queue fed by several senders delivers them.
 *
 * Rank r of the popularity order is order[r], the keys shuffled: popular
 * flows sit at random places in the table and the object heap. Each stream
 * is made before the clock starts, as the packets' keys in a receive ring
 * are, and replayed one at a time and in batches of 16 (stream.c). The
 * draws are checked against the distributions they claim to follow.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

/* Trains in progress at once: the flows one receive burst interleaves. */
#define B_TRAINS_ACTIVE	16
/* A draw count this many standard deviations off its mean is a bug. */
#define B_SIGMAS	6

/* |observed - expected| within B_SIGMAS standard deviations (sd >= 1). */
static void check_count(const char *what, double obs, double exp, double sd)
{
	if (fabs(obs - exp) > B_SIGMAS * (sd > 1 ? sd : 1))
		b_failed("%s: %.0f draws, expected %.1f (sd %.1f)", what, obs,
			 exp, sd);
}

/* @m packets, each of a flow drawn from Zipf(@s) over the N keys. */
static void make_zipf(struct conntab_key *out, size_t m,
		      const struct bench_keys *k, double s, uint64_t *rng)
{
	double p1 = b_zipf_p1(k->n, s), top = 0;
	struct b_zipf z;
	size_t i, r;

	b_zipf_init(&z, k->n, s);
	for (i = 0; i < m; i++) {
		r = b_zipf_draw(&z, rng);
		top += !r;
		out[i] = k->order[r];
	}
	check_count("zipf rank 1", top, p1 * (double)m,
		    sqrt((double)m * p1 * (1 - p1)));
}

/* @m packets in trains of Zipf(@s) flows, B_TRAINS_ACTIVE interleaved. */
static void make_trains(struct conntab_key *out, size_t m,
			const struct bench_keys *k, double s, uint64_t *rng)
{
	struct { size_t flow, len, left; } act[B_TRAINS_ACTIVE];
	double mean = b_opts.train_mean, trains = 0, pkts = 0, p;
	struct b_zipf z;
	size_t i, j;

	b_zipf_init(&z, k->n, s);
	for (j = 0; j < B_TRAINS_ACTIVE; j++) {
		act[j].flow = b_zipf_draw(&z, rng);
		act[j].len = act[j].left = b_geometric(mean, rng);
	}
	for (i = 0; i < m; i++) {
		j = (size_t)(b_rand(rng) % B_TRAINS_ACTIVE);
		out[i] = k->order[act[j].flow];
		if (--act[j].left)
			continue;
		/* Completed trains only: their lengths against the mean. */
		trains++;
		pkts += (double)act[j].len;
		act[j].flow = b_zipf_draw(&z, rng);
		act[j].len = act[j].left = b_geometric(mean, rng);
	}
	/* A geometric length has variance (1 - p) / p^2. */
	p = 1 / mean;
	check_count("train lengths", pkts, trains * mean,
		    sqrt(trains * (1 - p)) / p);
}

void b_run_traffic(struct bench_table *tb, size_t ni,
		   const struct bench_keys *k)
{
	size_t m = b_lookups_per_rep(k->n);
	struct conntab_key *stream;
	uint64_t rng = b_opts.seed ^ 0x7a1ff1cull;
	char name[24];
	unsigned int z;

	if (!b_want(W_ZIPF) && !b_want(W_TRAINS))
		return;
	stream = b_alloc(m * sizeof(*stream));
	for (z = 0; z < b_opts.nzipf; z++) {
		double s = b_opts.zipf[z];

		if (b_want(W_ZIPF)) {
			b_progress("n=%zu zipf %.2f: stream", k->n, s);
			make_zipf(stream, m, k, s, &rng);
			snprintf(name, sizeof(name), "zipf-s%.2f", s);
			b_stream_measure(tb, ni, W_ZIPF, name, stream, m,
					 k->n);
		}
		if (b_want(W_TRAINS)) {
			b_progress("n=%zu trains %.2f: stream", k->n, s);
			make_trains(stream, m, k, s, &rng);
			snprintf(name, sizeof(name), "trains-s%.2f", s);
			b_stream_measure(tb, ni, W_TRAINS, name, stream, m,
					 k->n);
		}
	}
	free(stream);
}
