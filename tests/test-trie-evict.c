/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE eviction: the sample is a fair one (spread over the key
 * space, not the same few flows every time), its work is bounded on
 * constructed worst cases, and a tiny capped table does not refuse an
 * evicting insert for room another writer is about to give back.
 *
 * The sample is run directly (lib/trie-sample.h) with a seeded random
 * stream, so the statistics below are the same on every run; the public
 * calls are checked beside it.
 */
#include <urcu.h>		/* memb flavor: conntab_create picks it up */
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "../lib/trie-sample.h"

#define REQUIRE(c) do {							\
	if (!(c))							\
		ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);	\
} while (0)

/* One NAT connection: its two directions, a pair. */
struct nat {
	struct conntab_node a, b;
	uint32_t id;
	long rank;			/* < 0: protected */
	bool in;
};

static struct nat *nat_of(struct conntab_node *n)
{
	return conntab_entry(n, struct nat, a);
}

/*
 * Connection @id of a NAT: a from client 10.0.x.y (sequential, the shape
 * in which the sample used to favour the lowest keys) to one server, b
 * from that server to the public address's port 10000 + id. Key order of
 * the a halves is id order.
 */
static void nat_keys(uint32_t id, struct conntab_key *ka,
		     struct conntab_key *kb)
{
	conntab_key_v4(ka, IPPROTO_TCP, htonl(0x0a000000 | id), htons(1024),
		       htonl(0x5db8d822), htons(443));
	conntab_key_v4(kb, IPPROTO_TCP, htonl(0x5db8d822), htons(443),
		       htonl(0xcb007101), htons((uint16_t)(10000 + id % 50000)));
}

static uint64_t rng_state;

/* xorshift64*: the sample's random numbers, seeded per test. */
static uint64_t test_random(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* What the rank saw. */
struct seen {
	uint32_t *count;		/* per id */
	size_t calls;
	bool refuse;			/* rank every candidate -1 */
};

static long rank_record(struct conntab_node *v, void *arg)
{
	struct seen *s = arg;
	struct nat *c = nat_of(v);

	s->count[c->id]++;
	s->calls++;
	return s->refuse ? -1 : c->rank;
}

static struct conntab *nat_table(size_t cap, size_t expected)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_TRIE, .max_entries = cap,
		.expected = expected,
	};
	struct conntab *t = conntab_create(&cfg);

	ck_assert_ptr_nonnull(t);
	return t;
}

static int nat_insert(struct conntab *t, struct nat *c, uint32_t id,
		      struct seen *s, struct conntab_node **out)
{
	struct conntab_key ka, kb;
	int err;

	conntab_node_init(&c->a);
	conntab_node_init(&c->b);
	c->id = id;
	nat_keys(id, &ka, &kb);
	*out = NULL;
	err = conntab_insert_pair_evict(t, &c->a, &ka, &c->b, &kb,
					rank_record, s, out);
	if (!err) {
		c->in = true;
		if (*out)
			nat_of(*out)->in = false;
	}
	return err;
}

/* One sample of @t's trie, run here: its work, and what it offered. */
static size_t sample_once(struct conntab *t, struct seen *s, size_t *offered)
{
	struct ct_tsample sm = {
		.t = t, .rank = rank_record, .arg = s, .random = test_random,
	};

	rcu_read_lock();
	ct_ts_sample(&sm, &ct_trie(t)->root);
	rcu_read_unlock();
	*offered = sm.n;
	return sm.work;
}

#define NAT_N		1000
#define NAT_EVICT	3000
#define NAT_SAMPLES	4000

/*
 * Deciles of key order among the connections present, and the number of
 * distinct candidates, over NAT_SAMPLES samples of an unchanging table.
 */
static void check_spread(struct conntab *t, struct nat *c, size_t nc,
			 const char *what)
{
	uint32_t *pos = calloc(nc, sizeof(*pos));
	struct seen s = { .count = calloc(nc, sizeof(uint32_t)),
			  .refuse = true };
	size_t dec[10] = { 0 }, i, k, present = 0, distinct = 0, off, total;

	ck_assert_ptr_nonnull(pos);
	ck_assert_ptr_nonnull(s.count);
	for (i = 0; i < nc; i++)	/* ids ascend in key order */
		if (c[i].in)
			pos[i] = (uint32_t)present++;
	for (k = 0; k < NAT_SAMPLES; k++) {
		sample_once(t, &s, &off);
		REQUIRE(off == CT_EVICT_SAMPLE);
	}
	total = s.calls;
	ck_assert_uint_eq(total, (size_t)NAT_SAMPLES * CT_EVICT_SAMPLE);
	for (i = 0; i < nc; i++) {
		if (!s.count[i])
			continue;
		REQUIRE(c[i].in);
		distinct++;
		dec[pos[i] * 10 / present] += s.count[i];
	}
	fprintf(stderr, "%s: %zu present, %zu distinct of %zu candidates; "
		"deciles (per mille):", what, present, distinct, total);
	for (i = 0; i < 10; i++)
		fprintf(stderr, " %zu", dec[i] * 1000 / total);
	fprintf(stderr, "\n");
	/*
	 * A fair sample: each decile about 100 per mille, all but a few
	 * connections offered (32000 offers to 1000: 1 - e^-32 of them).
	 * The sample of lowest-first descents gave the first decile 250
	 * and more. The bounds leave room for the trie's shape (each
	 * child of a node is equally likely, not each leaf).
	 */
	for (i = 0; i < 10; i++) {
		ck_assert_uint_ge(dec[i] * 1000 / total, 50);
		ck_assert_uint_le(dec[i] * 1000 / total, 200);
	}
	ck_assert_uint_ge(distinct, present * 95 / 100);
	free(s.count);
	free(pos);
}

START_TEST(evict_fair)
{
	struct nat *c = calloc(NAT_N + NAT_EVICT, sizeof(*c));
	uint32_t *cnt = calloc(NAT_N + NAT_EVICT, sizeof(uint32_t));
	struct seen s = { .count = cnt };
	struct conntab_node *out;
	struct conntab *t = nat_table(NAT_N, NAT_N);
	size_t refused = 0, i;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(cnt);
	rng_state = 0x9e3779b97f4a7c15ull;
	for (i = 0; i < NAT_N; i++) {
		c[i].rank = 0;
		ck_assert_int_eq(nat_insert(t, &c[i], (uint32_t)i, &s, &out),
				 0);
		ck_assert_ptr_null(out);
	}
	check_spread(t, c, NAT_N, "full table");
	/*
	 * Evictions by idle time (the oldest first), one connection in 16
	 * protected (rank < 0), as an application's assured flows: most of
	 * the table stays evictable (protected ones never leave: 3/16 of it
	 * at the end), so a fair sample of 8 finds an evictable one all
	 * but (3/16)^8 of the time, under 1e-5. The lowest-first sample
	 * kept offering the protected among the old and was refused.
	 */
	for (i = 0; i < NAT_N; i++)
		c[i].rank = i % 16 == 5 ? -1 : (long)(NAT_N + NAT_EVICT - i);
	for (i = NAT_N; i < NAT_N + NAT_EVICT; i++) {
		int err;

		c[i].rank = i % 16 == 5 ? -1 : (long)(NAT_N + NAT_EVICT - i);
		s.calls = 0;
		err = nat_insert(t, &c[i], (uint32_t)i, &s, &out);
		REQUIRE(s.calls <= CT_EVICT_SAMPLE);
		if (err == -ENOSPC) {
			refused++;
			continue;
		}
		REQUIRE(err == 0);
		REQUIRE(out != NULL);
		REQUIRE(nat_of(out)->rank >= 0);
	}
	fprintf(stderr, "evictions by idle time: %zu of %d refused\n",
		refused, NAT_EVICT);
	ck_assert_uint_le(refused, 3);
	/* What eviction left: is its sample still spread? */
	check_spread(t, c, NAT_N + NAT_EVICT, "after evictions");
	conntab_destroy(t, NULL);
	free(cnt);
	free(c);
}
END_TEST

static Suite *trie_evict_suite(void)
{
	Suite *s = suite_create("trie-evict");
	TCase *tc = tcase_create("trie-evict-fair");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, evict_fair);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int ret;

	rcu_register_thread();
	ret = t_run(trie_evict_suite(), 300);
	rcu_unregister_thread();
	return ret;
}
