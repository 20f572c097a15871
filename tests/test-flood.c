/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hash flooding: an attacker who knows a table's secret can send keys that
 * all land in one bucket and turn every lookup into a walk of one long
 * chain. This test plays that attacker against a table whose secret it
 * knows (cfg.secret), checks that the attack works there (all keys in one
 * chain), then replays the same keys against tables with a random secret
 * and checks that their chains stay short. It does so for each hash the
 * machine runs (SipHash, AES) and for IPv4 and IPv6 keys.
 *
 * It computes the library's hashes with the library's own code
 * (lib/hash/hash.h, lib/hash/aes.h) the way an attacker with the source and a leaked
 * secret would; that the attack works also shows that the tables hash
 * exactly as those files say.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "../lib/hash/aes.h"
#include "../lib/hash/hash.h"
#include "common.h"

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

#ifdef CT_HAVE_AES
static CT_AES_TARGET uint32_t aes_hash(const struct ct_aes_key *ak,
				       const struct conntab_key *k)
{
	return ct_hash_aes(ak, k);
}
#endif

/* The hash @h of @k under the known secret, as the library computes it. */
static uint32_t known_hash(enum conntab_hash h, const struct conntab_key *k)
{
	struct ct_secret sec;
#ifdef CT_HAVE_AES
	struct ct_aes_key ak;

	if (h == CONNTAB_HASH_AES) {
		ct_aes_expand(&ak, known_secret);
		return aes_hash(&ak, k);
	}
#endif
	ck_assert_int_eq(h, CONNTAB_HASH_SIPHASH);
	memcpy(&sec.k0, known_secret, 8);
	memcpy(&sec.k1, known_secret + 8, 8);
	return ct_hash_sip(&sec, k);
}

/*
 * Keys whose hash @h under the known secret picks bucket 0 of NBUCKETS:
 * one victim service, the attacker picks the remote address and port.
 */
static void build_attack(enum conntab_hash h, int v6)
{
	uint64_t x = 88172645463325252ULL;	/* xorshift: reproducible */
	struct in6_addr l6 = { { { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 } } };
	struct in6_addr r6 = { { { 0x20, 0x01, 0x0d, 0xb8, 0x66 } } };
	struct conntab_key k;
	size_t n = 0;

	while (n < NATTACK) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (v6) {
			memcpy(&r6.s6_addr[8], &x, 8);
			conntab_key_v6(&k, IPPROTO_TCP, &l6, htons(443), &r6,
				       (uint16_t)(x >> 48));
		} else {
			conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201),
				       htons(443), (uint32_t)x,
				       (uint16_t)(x >> 32));
		}
		if ((known_hash(h, &k) & (NBUCKETS - 1)) == 0)
			attack[n++] = k;
	}
}

/* stats.buckets of the last table fill_and_depth() filled. */
static size_t last_buckets;

/*
 * The most of NATTACK random keys that any of @nb buckets holds but with
 * probability below 1e-9: the least d - 1 with nb * C(NATTACK, d) / nb^d
 * (the union bound over the buckets) below 1e-9. 9 for split's 1024
 * buckets of the hint, 14 for chained's 256 lines of six slots.
 */
static size_t spread_bound(size_t nb)
{
	double p = (double)nb;
	size_t d;

	for (d = 1; d <= NATTACK; d++) {
		p *= (double)(NATTACK - d + 1) / (double)d / (double)nb;
		if (p < 1e-9)
			return d - 1;
	}
	return NATTACK;
}

static size_t fill_and_depth(enum conntab_backend b, enum conntab_hash h,
			     const uint8_t *secret)
{
	struct conntab_config cfg = {
		.backend = b, .expected = NBUCKETS, .secret = secret, .hash = h,
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
	last_buckets = st.buckets;
	conntab_destroy(t, NULL);
	return st.max_depth;
}

/*
 * The attacks: backends that index a power-of-two bucket array by the
 * hash's low bits, times the hashes, times the two families. _i numbers
 * them; an attack this machine cannot run (AES without the CPU) passes.
 */
static const enum conntab_backend flat_hash[] = { CONNTAB_CHAINED, CONNTAB_SPLIT };
#define NFLAT	(sizeof(flat_hash) / sizeof(flat_hash[0]))
#define NATTACKS	((int)NFLAT * 2 * 2)

/* Set up attack _i: false if this machine cannot run it. */
static int attack_of(int i, enum conntab_backend *b, enum conntab_hash *h)
{
	int v6 = i & 1;

	*h = (i >> 1) & 1 ? CONNTAB_HASH_AES : CONNTAB_HASH_SIPHASH;
	*b = flat_hash[i >> 2];
	if (!conntab_backend_available(*b) ||
	    (*h == CONNTAB_HASH_AES && !t_cpu_has_aes()))
		return 0;
	build_attack(*h, v6);
	return 1;
}

START_TEST(test_known_secret_collides)
{
	enum conntab_backend b;
	enum conntab_hash h;

	if (!attack_of(_i, &b, &h))
		return;
	/* The attack works when the secret is known: one chain of all. */
	ck_assert_uint_eq(fill_and_depth(b, h, known_secret), NATTACK);
}
END_TEST

START_TEST(test_random_secret_spreads)
{
	enum conntab_backend b;
	enum conntab_hash h;
	int round;

	if (!attack_of(_i, &b, &h))
		return;
	/*
	 * 256 keys under an unknown secret behave like random keys: no
	 * bucket holds more than spread_bound() of them but once in 1e9
	 * tables. Five fresh tables.
	 */
	for (round = 0; round < 5; round++) {
		size_t depth = fill_and_depth(b, h, NULL);

		ck_assert_uint_le(depth, spread_bound(last_buckets));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flood");
	TCase *tc = tcase_create("flat-hash");
	SRunner *sr;
	int failed;

	rcu_register_thread();
	tcase_add_loop_test(tc, test_known_secret_collides, 0, NATTACKS);
	tcase_add_loop_test(tc, test_random_secret_spreads, 0, NATTACKS);
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
