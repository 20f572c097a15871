/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flood: what the keyed hash buys against hash flooding.
 *
 * An attacker who knows a table's secret picks keys toward one victim
 * service (fixed local address and port; remote address and port are
 * his) whose hashes all select one bucket, and every lookup of them walks
 * one long chain. The same keys against a table with a secret he does not
 * know spread like any random keys. Each hash implementation gets both
 * tables, filled with the same normal and attack keys:
 *
 *   flood-known       ns per lookup of an attack key, all-zero secret
 *                     (the attacker's, as with --secret zero)
 *   flood-random      the same keys, a random secret
 *   flood-protection  known / random: what the secret protects
 *   flood-depth-*     the longest chain (conntab_stats), conntab only
 *
 * The flood tables have their own fixed size (B_FLOOD_N normal keys, fewer
 * for a smaller --n): an attack key costs about B SipHash trials for B
 * buckets, so a table of the run's N would take minutes to attack. The
 * bucket is picked from the low bits of the hash for the tables that index
 * by them (chained, split, lfht, plain); for exthash, whose directory takes
 * the top bits and whose segments pick one of 64 chains by the low 6, the
 * same number of bits is split between the two: one chain of one segment
 * of the table's size. trie hashes nothing and ck_ht
 * probes with a 64-bit hash of its own width: neither is measured here.
 */
#include "config.h"

#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

/* Normal keys (and buckets) of a flood table; attack keys: 1/16 of it. */
#define B_FLOOD_N	16384
#define B_FLOOD_SHARE	16
/* Attack-key lookups per repetition: the keys, repeated. */
#define B_FLOOD_ROUNDS	16

enum { FL_KNOWN, FL_RANDOM, FL_NTABLES };

static const uint8_t zero_secret[16];

static bool flood_impl(const struct bench_impl *im)
{
	if (im->flags & BI_TWIN)	/* its backend is measured */
		return false;
	return !strcmp(im->name, "lfht") || !strcmp(im->name, "plain") ||
	       (im->flags & BI_CT_HASH);
}

static bool by_top_bits(const struct bench_impl *im)
{
	return im->backend == CONNTAB_EXTHASH && (im->flags & BI_CONNTAB);
}

/* exthash: chains per segment, indexed by the hash's low bits. */
#define B_FLOOD_XH_SHIFT	6

/*
 * @na keys toward 192.0.2.1:443 whose hash (the run's, --hash) under the
 * all-zero secret has its low @bits bits zero: one bucket of 2^bits; or,
 * @top, its top @bits - 6 and low 6 bits: one chain of exthash's
 * 2^(bits - 6) segments.
 */
static void attack_keys(struct conntab_key *out, size_t na, unsigned int bits,
			bool top, uint64_t seed)
{
	struct b_hash h;
	uint32_t mask = (uint32_t)((1ull << bits) - 1);
	uint64_t rng = seed;
	size_t n = 0;

	b_hash_init(&h, zero_secret, b_opts.hash_used == CONNTAB_HASH_AES);
	if (top && bits > B_FLOOD_XH_SHIFT)
		mask = (uint32_t)((1ull << (bits - B_FLOOD_XH_SHIFT)) - 1)
			       << (32 - bits + B_FLOOD_XH_SHIFT) |
		       ((1u << B_FLOOD_XH_SHIFT) - 1);
	while (n < na) {
		struct conntab_key k;
		uint64_t r = b_rand(&rng);

		conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201), htons(443),
			       (uint32_t)r, (uint16_t)(r >> 32));
		if (!(b_hash32(&h, &k) & mask))
			out[n++] = k;
	}
}

struct flood_table {
	struct bench_table tb;
	size_t depth;		/* longest chain after filling, 0 = unknown */
};

static void flood_build(struct flood_table *ft, const struct bench_impl *im,
			const struct bench_keys *k, size_t nf,
			const struct conntab_key *atk, size_t na,
			const uint8_t *secret)
{
	size_t i, fail = 0;
	void *t;

	t = b_create(im, nf, secret);
	/* Objects in order: these lookups walk chains, not the heap. */
	for (i = 0; i < nf && !(i % 64 == 0 && b_over()); i++)
		fail += im->insert(t, ft->tb.o.base + i * B_OBJ,
				   &k->keys[i]) != 0;
	for (i = 0; i < na && !(i % 64 == 0 && b_over()); i++)
		fail += im->insert(t, ft->tb.o.base + (nf + i) * B_OBJ,
				   &atk[i]) != 0;
	if (fail)
		b_failed("%s flood: %zu inserts failed", im->name, fail);
	ft->tb.t = t;
	ft->depth = 0;
	if (im->flags & BI_CONNTAB) {
		struct conntab_stats st;

		conntab_stats(t, &st);
		ft->depth = st.max_depth;
	}
}

static void flood_free(struct flood_table *ft, size_t nf)
{
	b_table_drop(&ft->tb, B_W(W_FLOOD), nf);
}

void b_run_flood(const struct bench_impl **im, size_t ni,
		 const struct bench_keys *k)
{
	static const char *const wl[FL_NTABLES] = {
		[FL_KNOWN] = "flood-known", [FL_RANDOM] = "flood-random",
	};
	double v[B_MAX_IMPLS][FL_NTABLES][B_MAX_REPS];
	struct flood_table ft[B_MAX_IMPLS][FL_NTABLES];
	struct conntab_key *atk[2] = { NULL, NULL }, *order[2];
	const struct bench_impl *fi[B_MAX_IMPLS];
	size_t nf = B_FLOOD_N, na, nfi = 0, i, c, found;
	uint8_t rnd[16];
	unsigned int bits = 0, rep, s;
	uint64_t rng = b_opts.seed ^ 0xf100df100dull;

	if (!b_want(W_FLOOD))
		return;
	for (i = 0; i < ni; i++)
		if (flood_impl(im[i]))
			fi[nfi++] = im[i];
	if (!nfi)
		return;
	/* A power of two of normal keys, so that it is the bucket count. */
	while (nf > k->n)
		nf >>= 1;
	while ((1u << bits) < nf)
		bits++;
	na = nf / B_FLOOD_SHARE;
	/*
	 * Whatever --secret says: the known table's secret is the attacker's
	 * (zero), the other one a random one he does not know.
	 */
	for (i = 0; i < 16; i += 8) {
		uint64_t r = b_rand(&rng) | 1;

		memcpy(&rnd[i], &r, 8);
	}
	for (c = 0; c < 2; c++) {
		b_progress("flood: %zu attack keys, %s bits", na,
			   c ? "top and low" : "low");
		atk[c] = b_alloc(na * sizeof(*atk[c]));
		order[c] = b_alloc(na * sizeof(*order[c]));
		attack_keys(atk[c], na, bits, c, b_opts.seed + c);
		memcpy(order[c], atk[c], na * sizeof(*order[c]));
		b_shuffle_keys(order[c], na, &rng);
	}
	/* The budget's size is the tables' (nf), whatever --n says. */
	for (i = 0; i < nfi; i++) {
		c = by_top_bits(fi[i]);
		b_progress("flood %s: build", fi[i]->name);
		ft[i][FL_KNOWN].tb.t = ft[i][FL_RANDOM].tb.t = NULL;
		ft[i][FL_KNOWN].tb.im = ft[i][FL_RANDOM].tb.im = fi[i];
		b_objs_init(&ft[i][FL_KNOWN].tb.o, fi[i], nf + na);
		b_objs_init(&ft[i][FL_RANDOM].tb.o, fi[i], nf + na);
		if (!b_budget_enter(B_W(W_FLOOD), fi[i], nf,
				    "building its tables"))
			continue;
		flood_build(&ft[i][FL_KNOWN], fi[i], k, nf, atk[c], na,
			    zero_secret);
		flood_build(&ft[i][FL_RANDOM], fi[i], k, nf, atk[c], na, rnd);
		b_budget_leave();
	}
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("flood %u/%u", rep + 1, b_opts.reps);
		for (i = 0; i < nfi; i++) {
			c = by_top_bits(fi[i]);
			v[i][FL_KNOWN][rep] = v[i][FL_RANDOM][rep] = NAN;
			if (!b_budget_enter(B_W(W_FLOOD), fi[i], nf, "flood"))
				continue;
			for (s = 0; s < FL_NTABLES; s++) {
				v[i][s][rep] = b_run_lookup(fi[i],
						ft[i][s].tb.t, order[c], na,
						na * B_FLOOD_ROUNDS, &found);
				b_check_found(fi[i], wl[s], found,
					      na * B_FLOOD_ROUNDS);
			}
			if (!b_budget_leave())
				v[i][FL_KNOWN][rep] = v[i][FL_RANDOM][rep] =
					NAN;
		}
	}
	for (i = 0; i < nfi; i++) {
		struct bench_result r = {
			.workload = "flood-protection", .impl = fi[i]->name,
			.n = nf, .threads = 1, .unit = "x",
			.ratio_kind = R_NONE, .higher_better = true,
		};
		double ratio[B_MAX_REPS], mn, mx;

		/* Per repetition, so that min and max bound the ratio too. */
		for (rep = 0; rep < b_opts.reps; rep++)
			ratio[rep] = v[i][FL_KNOWN][rep] /
				     v[i][FL_RANDOM][rep];
		for (s = 0; s < FL_NTABLES; s++)
			b_result(fi[i], wl[s], nf, 1, v[i][s], "ns/op",
				 R_NONE, false);
		r.stopped = b_budget_stopped(B_W(W_FLOOD), fi[i], nf);
		r.value = r.min = r.max = NAN;
		if (!r.stopped) {
			r.value = b_median(ratio, b_opts.reps, &mn, &mx);
			r.min = mn;
			r.max = mx;
		}
		b_record(&r);
		if ((fi[i]->flags & BI_CONNTAB) && !r.stopped) {
			b_once_row(fi[i], "flood-depth-known", nf,
				   (double)ft[i][FL_KNOWN].depth, "nodes");
			b_once_row(fi[i], "flood-depth-random", nf,
				   (double)ft[i][FL_RANDOM].depth, "nodes");
		}
		flood_free(&ft[i][FL_KNOWN], nf);
		flood_free(&ft[i][FL_RANDOM], nf);
	}
	for (c = 0; c < 2; c++) {
		free(atk[c]);
		free(order[c]);
	}
}
