/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hash flooding: an attacker who knows a table's secret can send keys that
 * all land in one bucket and turn every lookup into a walk of one long
 * chain. This test plays that attacker against a table whose secret it
 * knows (cfg.secret), checks that the attack works there (all keys in one
 * chain), then replays the same keys against tables with a random secret
 * and checks that their chains stay short.
 *
 * It uses the library's own hash (lib/hash.h) the way an attacker with
 * the source and a leaked secret would.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "../lib/hash.h"

#define NBUCKETS	1024	/* expected = NBUCKETS: one bucket per entry */
#define NATTACK		256	/* colliding keys the attacker sends */

static const uint8_t known_secret[16] = "not-so-secret!!";

struct conn {
	struct conntab_node node;
};

static struct conntab_key attack[NATTACK];
static struct conn conns[NATTACK];
static unsigned int visits[NATTACK];

/* Count the visits of each node: a long chain takes several walk passes. */
static int count_visit(struct conntab_node *n, void *arg)
{
	struct conn *c = conntab_entry(n, struct conn, node);

	(void)arg;
	visits[c - conns]++;
	return 0;
}

/* Keys whose hash under the known secret picks bucket 0 of NBUCKETS. */
static void build_attack(void)
{
	struct ct_secret sec;
	uint64_t x = 88172645463325252ULL;	/* xorshift: reproducible */
	size_t n = 0;

	memcpy(&sec.k0, known_secret, 8);
	memcpy(&sec.k1, known_secret + 8, 8);
	while (n < NATTACK) {
		struct conntab_key k;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* One victim service; the attacker picks remote addr/port. */
		conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201), htons(443),
			       (uint32_t)x, (uint16_t)(x >> 32));
		if ((ct_hash_key(&sec, &k) & (NBUCKETS - 1)) == 0)
			attack[n++] = k;
	}
}

static size_t fill_and_depth(enum conntab_backend b, const uint8_t *secret)
{
	struct conntab_config cfg = {
		.backend = b, .expected = NBUCKETS, .secret = secret,
	};
	struct conntab_stats st;
	struct conntab *t;
	size_t i;

	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < NATTACK; i++) {
		conntab_node_init(&conns[i].node);
		ck_assert_int_eq(conntab_insert(t, &conns[i].node, &attack[i]), 0);
	}
	rcu_read_lock();
	for (i = 0; i < NATTACK; i++)
		ck_assert_ptr_eq(conntab_lookup(t, &attack[i]), &conns[i].node);
	/* Every node exactly once, also from one chain of all of them. */
	memset(visits, 0, sizeof(visits));
	ck_assert_int_eq(conntab_walk(t, count_visit, NULL), 0);
	for (i = 0; i < NATTACK; i++)
		ck_assert_uint_eq(visits[i], 1);
	rcu_read_unlock();
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, NATTACK);
	conntab_destroy(t, NULL);
	return st.max_depth;
}

/* Backends that index a power-of-two bucket array by the hash's low bits. */
static const enum conntab_backend flat_hash[] = { CONNTAB_CHAINED, CONNTAB_SPLIT };

START_TEST(test_known_secret_collides)
{
	enum conntab_backend b = flat_hash[_i];

	if (!conntab_backend_available(b))
		return;
	/* The attack works when the secret is known: one chain of all. */
	ck_assert_uint_eq(fill_and_depth(b, known_secret), NATTACK);
}
END_TEST

START_TEST(test_random_secret_spreads)
{
	enum conntab_backend b = flat_hash[_i];
	int round;

	if (!conntab_backend_available(b))
		return;
	/*
	 * 256 keys over 1024 buckets under an unknown secret behave like
	 * random keys: the chance that any chain reaches 8 is below 1e-9
	 * per table (1024 * C(256,8) / 1024^8). Five fresh tables.
	 */
	for (round = 0; round < 5; round++)
		ck_assert_uint_le(fill_and_depth(b, NULL), 7);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flood");
	TCase *tc = tcase_create("flat-hash");
	SRunner *sr;
	int failed;

	rcu_register_thread();
	build_attack();
	tcase_add_loop_test(tc, test_known_secret_collides, 0,
			    (int)(sizeof(flat_hash) / sizeof(flat_hash[0])));
	tcase_add_loop_test(tc, test_random_secret_spreads, 0,
			    (int)(sizeof(flat_hash) / sizeof(flat_hash[0])));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* RCU reader state lives in this process: no fork per test. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rcu_unregister_thread();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
