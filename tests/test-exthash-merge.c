/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH's merges carry their segments' counts: a table grown to
 * 8192 entries, a sixteenth of them put in TIME_WAIT, the rest removed,
 * so that most segments merge (down to ~8 of its ~128, buddies holding
 * at most XH_MERGE = 32 together) while they hold TIME_WAIT nodes; then
 * the TIME_WAIT nodes removed too. After each phase stats.entries and
 * stats.timewait must be what the table holds: they are the sums of the
 * segments' counts, which a merge moves into the merged segment (whole,
 * for halves that index alike: lib/hashtab/exthash.c, xh_splice_chains).
 * A merge that dropped a half's TIME_WAIT count showed in none of the
 * other tests: their tables merged without TIME_WAIT nodes, or counted
 * nothing after. Every node left must still be found, in its state.
 *
 * merge_mixed: buddies that index apart, one plain, one rehashed (keys
 * made with a known secret, as an attacker would, put 17 in chain 0 of
 * one half only), merge into a segment rehashed as that half was: the
 * plain half must move node by node, each node into the chain of its
 * hash there, not whole into the chain it had. Both orders: the remove
 * that merges taken from the plain half, then from the rehashed one; the
 * merge comes with the remove that leaves the pair XH_MERGE nodes, as
 * single-threaded removes always merged (the buddy's count, read
 * unlocked as a hint, must not have changed that).
 * Splicing the plain half whole passed every other test (their attacks
 * rehash a segment before it splits, and split children keep their
 * parent's multiplier, so their buddies index alike).
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/hash/hash.h"
#include "helpers.h"

#define NKEYS	8192
#define TW_EVERY 16

START_TEST(merge_counts)
{
	struct conntab *t = t_table(CONNTAB_EXTHASH, 0, 0);
	struct conntab_resize_stats rs0, rs;
	struct conntab_key k;
	struct tconn *c;
	size_t i, ntw = NKEYS / TW_EVERY;

	c = calloc(NKEYS, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	t_conns_init(c, NKEYS);
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	for (i = 0; i < NKEYS; i += TW_EVERY)
		ck_assert_int_eq(conntab_timewait(t, &c[i].node, &c[i].node),
				 0);
	t_expect_counts(t, NKEYS, ntw);
	ck_assert_int_eq(conntab_resize_stats(t, &rs0), 0);

	/* The established ones go: the segments merge around the rest. */
	for (i = 0; i < NKEYS; i++)
		if (i % TW_EVERY)
			ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	ck_assert_msg(rs.merges >= rs0.merges + 64,
		      "%zu merges, %zu before", rs.merges, rs0.merges);
	t_expect_counts(t, ntw, ntw);
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, (uint32_t)i);
		if (i % TW_EVERY)
			ck_assert_ptr_null(t_lookup(t, &k));
		else
			t_expect_found(t, &k, &c[i].node, CONNTAB_TIMEWAIT);
	}

	/* And the TIME_WAIT ones, out of merged segments. */
	for (i = 0; i < NKEYS; i += TW_EVERY) {
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		t_expect_counts(t, ntw - i / TW_EVERY - 1,
				ntw - i / TW_EVERY - 1);
	}
	conntab_destroy(t, NULL);
	free(c);
}
END_TEST

#define NPLAIN	60	/* random keys per half: 120 split the root */
#define NAIMED	17	/* one chain past XH_CHAIN_SPLIT: a rehash */
#define NLEFT	7	/* plain keys kept a half: 2 x 7 + 17 <= XH_MERGE */
#define XH_MERGE_TEST	32	/* lib/hashtab/exthash.c, XH_MERGE */

static const uint8_t secret[16] = "known-to-them!!";

static uint32_t known_hash(const struct conntab_key *k)
{
	struct ct_secret sec;

	memcpy(&sec.k0, secret, 8);
	memcpy(&sec.k1, secret + 8, 8);
	return ct_hash_sip(&sec, k);
}

/*
 * The next distinct key from candidate *@x on whose hash has top bit
 * @top and, if @aimed, low 6 bits 0 (chain 0 of a plain segment), else
 * not.
 */
static void next_key(uint64_t *x, unsigned int top, bool aimed,
		     struct conntab_key *k)
{
	uint32_t h;

	for (;; (*x)++) {
		conntab_key_v4(k, IPPROTO_TCP, htonl(0xc0000201), htons(443),
			       htonl(0x0a000000u ^ (uint32_t)*x), 1000);
		h = known_hash(k);
		if (h >> 31 == top && !(h & 63) == aimed) {
			(*x)++;
			return;
		}
	}
}

/*
 * Writer calls on both halves (a key in each, in and out), until no
 * split or rehash is in progress: each call moves 8 chains of one.
 */
static void settle(struct conntab *t, struct tconn nc[2],
		   const struct conntab_key nk[2])
{
	struct conntab_resize_stats rs;
	int i, j;

	for (i = 0; i < 64; i++) {
		for (j = 0; j < 2; j++) {
			ck_assert_int_eq(conntab_insert(t, &nc[j].node,
							&nk[j]), 0);
			ck_assert_int_eq(conntab_remove(t, &nc[j].node), 0);
		}
		ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
		if (!rs.in_progress)
			return;
	}
	ck_abort_msg("a split or rehash still in progress");
}

static void expect_all(struct conntab *t, struct tconn *c,
		       const struct conntab_key *k, const bool *in, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (in[i])
			t_expect_found(t, &k[i], &c[i].node,
				       CONNTAB_ESTABLISHED);
		else
			ck_assert_ptr_null(t_lookup(t, &k[i]));
	}
}

START_TEST(merge_mixed)
{
	enum { N = 2 * NPLAIN + NAIMED };
	struct conntab_config cfg = {
		.backend = CONNTAB_EXTHASH, .secret = secret,
		.hash = CONNTAB_HASH_SIPHASH,
	};
	struct conntab_key k[N], nk[2];
	struct tconn c[N], nc[2];
	struct conntab_resize_stats rs;
	struct conntab_stats st;
	struct conntab *t;
	bool in[N];
	/* _i 0: the merge comes from the plain half; 1: the rehashed. */
	unsigned int first = _i ? 0 : 1, i, half;
	uint64_t x = 1;

	/* k[0, 60): top bit 0; [60, 120): top bit 1; then 17 aimed at 1. */
	for (i = 0; i < N; i++)
		next_key(&x, i >= NPLAIN, i >= 2 * NPLAIN, &k[i]);
	for (i = 0; i < 2; i++)
		next_key(&x, i, false, &nk[i]);
	t_conns_init(c, N);
	t_conns_init(nc, 2);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);

	for (i = 0; i < 2 * NPLAIN; i++)
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
	settle(t, nc, nk);
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	ck_assert_uint_eq(rs.splits, 1);
	/* Chain 0 of half 1 passes 16: that half alone rehashes. */
	for (; i < N; i++)
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
	settle(t, nc, nk);
	conntab_stats(t, &st);
	ck_assert_uint_lt(st.max_depth, NAIMED);
	ck_assert_uint_eq(st.entries, N);
	for (i = 0; i < N; i++)
		in[i] = true;

	/*
	 * Half @first down to NLEFT plain keys, then the other: the remove
	 * that takes the pair to XH_MERGE (32) merges it, not one later
	 * (doc/exthash.md, "Memory after shrinking"), and both halves still
	 * hold plain keys then.
	 */
	for (half = first; half < first + 2; half++)
		for (i = 0; i < NPLAIN - NLEFT; i++) {
			ck_assert_int_eq(conntab_remove(t,
					&c[(half & 1) * NPLAIN + i].node), 0);
			in[(half & 1) * NPLAIN + i] = false;
			conntab_stats(t, &st);
			ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
			ck_assert_uint_eq(rs.merges, st.entries <= 32);
		}
	t_expect_counts(t, 2 * NLEFT + NAIMED, 0);
	expect_all(t, c, k, in, N);
	/* And every one removable from the merged segment. */
	for (i = 0; i < N; i++)
		if (in[i])
			ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	t_expect_counts(t, 0, 0);
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * merge_interleaved: two plain buddies (the root split once), drained
 * with removes that alternate between them in three patterns (in turn,
 * two from one half then one from the other, and at random): both go
 * light long before the pair holds XH_MERGE, and the remove that takes
 * the pair to 32 comes from either half. Each remove asks the buddy's
 * count inline (xh_merge_hint) and only a pair that may merge calls
 * out: the merge must still come with exactly that remove, whichever
 * half it leaves.
 */
START_TEST(merge_interleaved)
{
	enum { N = 2 * NPLAIN };
	struct conntab_config cfg = {
		.backend = CONNTAB_EXTHASH, .secret = secret,
		.hash = CONNTAB_HASH_SIPHASH,
	};
	struct conntab_key k[N], nk[2];
	struct tconn c[N], nc[2];
	struct conntab_resize_stats rs;
	struct conntab_stats st;
	unsigned int i, next[2] = { 0, NPLAIN }, half, done = 0;
	uint64_t x = 1, r = 0x9e3779b97f4a7c15ull;
	struct conntab *t;
	bool in[N];

	for (i = 0; i < N; i++)
		next_key(&x, i >= NPLAIN, false, &k[i]);
	for (i = 0; i < 2; i++)
		next_key(&x, i, false, &nk[i]);
	t_conns_init(c, N);
	t_conns_init(nc, 2);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < N; i++) {
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
		in[i] = true;
	}
	settle(t, nc, nk);
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	ck_assert_uint_eq(rs.splits, 1);
	ck_assert_uint_eq(rs.merges, 0);

	while (done < N) {
		if (_i == 0)
			half = done & 1;
		else if (_i == 1)
			half = done % 3 == 2;
		else
			half = (r = r * 6364136223846793005ull + 1) >> 63;
		if (next[half] == (half + 1) * NPLAIN)
			half ^= 1;	/* that half is empty */
		i = next[half]++;
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		in[i] = false;
		done++;
		conntab_stats(t, &st);
		ck_assert_uint_eq(st.entries, N - done);
		ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
		ck_assert_msg(rs.merges == (st.entries <= XH_MERGE_TEST),
			      "pattern %d: %zu merges at %zu entries, from half %u",
			      _i, rs.merges, st.entries, half);
		if (done == N / 2)
			expect_all(t, c, k, in, N);
	}
	t_expect_counts(t, 0, 0);
	conntab_destroy(t, NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exthash-merge");
	TCase *tc = tcase_create("merge");
	int ret;

	rcu_register_thread();
	tcase_add_test(tc, merge_counts);
	tcase_add_loop_test(tc, merge_mixed, 0, 2);
	tcase_add_loop_test(tc, merge_interleaved, 0, 3);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	ret = t_run(s, 120);
	rcu_unregister_thread();
	return ret;
}
