/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH's rehash rules, each step seen (lib/hashtab/exthash.c,
 * XH_CHAIN_SPLIT, XH_REDRAWS), against lib/libconntab-test.la, whose
 * tables draw a known multiplier (T_MULT) for their first three rehashes
 * (lib/local.mk): the keys here, made with the known secret as an
 * attacker would, all fall in chain 0 of a plain segment (hash & 63 == 0)
 * and in chain 0 of a segment rehashed with T_MULT, the unlucky draw this
 * build forces. One segment holds them all (fewer than XH_SPLIT nodes).
 *
 *   17 keys: chain 0 passes 16, the plain segment rehashes (draw 1,
 *            T_MULT; its generation begins at 17): a chain of 17;
 *   18, 19:  the chain passes 16 again, the segment is not overfull, it
 *            redraws (draws 2 and 3, T_MULT again): 18, then 19;
 *   20..33:  no redraw left, and the count has not doubled: 20 .. 33;
 *   34:      twice the generation's 17: a rehash with draw 4, the first
 *            random one, and the chain is gone (at most 16).
 *
 * Had the segment not redrawn, the rehash at 34 would have drawn T_MULT
 * (draw 2) and kept the chain of 34; had it redrawn a third time, draw 4
 * would have spread the keys at 20. Between steps a key outside chain 0
 * goes in and out eight times, the writer calls that move a rehash's 64
 * chains (XH_SPLIT_STEP), so that each count is of a segment at rest.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/hash/hash.h"
#include "common.h"

#define NKEYS		34	/* 2 x 17: the generation's doubling */

static const uint8_t secret[16] = "known-to-them!!";

struct conn {
	struct conntab_node node;
};

static uint32_t known_hash(const struct conntab_key *k)
{
	struct ct_secret sec;

	memcpy(&sec.k0, secret, 8);
	memcpy(&sec.k1, secret + 8, 8);
	return ct_hash_sip(&sec, k);
}

/* Chain of hash @h in a segment of 64 heads rehashed with T_MULT. */
static unsigned int mult_chain(uint32_t h)
{
	return (uint32_t)(ct_mix32(h) * T_MULT) >> 26;
}

/*
 * Distinct keys, from candidate @x on: @aimed ones in chain 0 of both
 * index functions, else one in chain 0 of neither.
 */
static uint64_t next_key(uint64_t x, bool aimed, struct conntab_key *k)
{
	uint32_t h;

	for (;; x++) {
		conntab_key_v4(k, IPPROTO_TCP, htonl(0xc0000201), htons(443),
			       htonl(0x0a000000u ^ (uint32_t)x),
			       (uint16_t)(x >> 32));
		h = known_hash(k);
		if (aimed == (!(h & 63) && !mult_chain(h)) &&
		    (aimed || ((h & 63) && mult_chain(h))))
			return x + 1;
	}
}

/* Insert and remove @k eight times: writer calls that finish a rehash. */
static void settle(struct conntab *t, struct conn other[8],
		   const struct conntab_key *k)
{
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(conntab_insert(t, &other[i].node, k), 0);
		ck_assert_int_eq(conntab_remove(t, &other[i].node), 0);
	}
}

static size_t longest(struct conntab *t, size_t entries)
{
	struct conntab_stats st;

	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, entries);
	return st.max_depth;
}

START_TEST(redraws)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_EXTHASH, .secret = secret,
		.hash = CONNTAB_HASH_SIPHASH,
	};
	struct conntab_key keys[NKEYS], okey;
	struct conn c[NKEYS], other[8];
	struct conntab *t;
	size_t i, j, depth;
	uint64_t x = 1;

	memset(c, 0, sizeof(c));
	memset(other, 0, sizeof(other));
	for (i = 0; i < NKEYS; i++)
		x = next_key(x, true, &keys[i]);
	next_key(x, false, &okey);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < NKEYS; i++) {
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &keys[i]), 0);
		settle(t, other, &okey);
		depth = longest(t, i + 1);
		if (i + 1 < NKEYS)
			/* One chain until the doubling's random draw. */
			ck_assert_uint_eq(depth, i + 1);
		else
			ck_assert_uint_le(depth, 16);
		printf("%zu keys: longest chain %zu\n", i + 1, depth);
		rcu_read_lock();
		for (j = 0; j <= i; j++)
			ck_assert_ptr_eq(conntab_lookup(t, &keys[j]),
					 &c[j].node);
		ck_assert_ptr_null(conntab_lookup(t, &okey));
		rcu_read_unlock();
	}
	for (i = 0; i < NKEYS; i++)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	ck_assert_uint_eq(longest(t, 0), 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exthash-redraw");
	TCase *tc = tcase_create("redraw");
	int ret;

	rcu_register_thread();
	tcase_add_test(tc, redraws);
	suite_add_tcase(s, tc);
	ret = t_run(s, 120);
	rcu_unregister_thread();
	return ret;
}
