/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH with hashes that share their top bits: an attacker who
 * knows the secret (cfg.secret) sends keys whose hashes all start with k
 * zero bits, so they fill one corner of the directory. The table must
 * still grow (the directory deepening for the corner within its stated
 * bound of max(4 x segments, entries / 4) slots, lib/hashtab/exthash.c, and the
 * corner's segments widening past it), keep its chains short (at most 16
 * here, for k = 2, 4, 8 at 100K and 1M keys) and find every key. The
 * keys are made with the library's own hash code (lib/hash/hash.h, lib/hash/aes.h),
 * as such an attacker would.
 *
 * And hashes that share their low 6 bits, the chain index within a plain
 * segment (issue 27, item 10; issue 36, item 3: case xh-known-secret, the
 * attacks of the reproduction xh_lowbits): 64 hashes a key put every key
 * in chain 0 of its segment. A segment whose chain passes 16 is rehashed
 * with a multiplier the attacker cannot know: chains at most 16 (9-10
 * measured, as for random keys), memory within 24 bytes per entry (~11
 * measured, as for random keys) and the directory within its bound (16,384
 * slots for 100,000 keys sharing 6 top bits as well, where it was 262,144),
 * also with 8 top bits shared (chains were 132), and no miss for readers
 * while the attack grows and shrinks the table under them.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/hash/aes.h"
#include "../lib/hash/hash.h"
#include "common.h"

static const uint8_t secret[16] = "known-to-them!!";

struct conn {
	struct conntab_node node;
};

/* A walk's visits, by node index: each node of @c counted in @visits. */
struct visits {
	const struct conn *c;
	unsigned char *visits;
	size_t n;
};

static int count_visit(struct conntab_node *node, void *arg)
{
	struct visits *v = arg;
	size_t i = (size_t)((const struct conn *)node - v->c);

	if (i < v->n && v->visits[i] < 255)
		v->visits[i]++;
	return 0;
}

#ifdef CT_HAVE_AES
static CT_AES_TARGET uint32_t aes_hash(const struct ct_aes_key *ak,
				       const struct conntab_key *k)
{
	return ct_hash_aes(ak, k);
}
#endif

/*
 * @n keys whose hash under @h and the known secret has @k top bits 0 (and
 * with @low, its low 6 bits, the chain index, 0 too).
 */
static struct conntab_key *skewed_keys(enum conntab_hash h, unsigned int k,
				       bool low, size_t n)
{
	struct conntab_key *keys = malloc(n * sizeof(*keys)), key;
	struct ct_secret sec;
	uint64_t x = 0;
#ifdef CT_HAVE_AES
	struct ct_aes_key ak;

	ct_aes_expand(&ak, secret);
#endif
	memcpy(&sec.k0, secret, 8);
	memcpy(&sec.k1, secret + 8, 8);
	ck_assert_ptr_nonnull(keys);
	for (size_t i = 0; i < n;) {
		uint32_t hv;

		/* Candidate x: distinct keys, one remote endpoint each. */
		x++;
		conntab_key_v4(&key, IPPROTO_TCP, htonl(0xc0000201), htons(443),
			       htonl(0x0a000000u ^ (uint32_t)x),
			       (uint16_t)(x >> 32));
#ifdef CT_HAVE_AES
		if (h == CONNTAB_HASH_AES)
			hv = aes_hash(&ak, &key);
		else
#endif
			hv = ct_hash_sip(&sec, &key);
		if ((!k || hv >> (32 - k) == 0) && (!low || !(hv & 63)))
			keys[i++] = key;
	}
	return keys;
}

/*
 * The directory's bound (lib/hashtab/exthash.c, XH_ENTRIES_PER_SLOT): a doubling
 * makes at most max(4 x segments, entries / 4) slots, and neither count
 * has fallen since in a table only inserted into. Segments: one at
 * create (no hint), one more per split (counted when it starts), one
 * fewer per merge.
 */
static size_t segments(const struct conntab_resize_stats *rs)
{
	return 1 + rs->splits + rs->in_progress - rs->merges;
}

static size_t dir_bound(const struct conntab_resize_stats *rs, size_t n)
{
	size_t segs = segments(rs);

	return 4 * segs > n / 4 ? 4 * segs : n / 4;
}

/*
 * Insert the @n @keys of (@h, @k, @low), check the directory's bound, that
 * the longest chain is at most @max_chain and the table's memory at most
 * @max_bytes per entry, find them all, remove them all.
 */
static void skew_run_keys(enum conntab_hash h, unsigned int k, bool low,
			  const struct conntab_key *keys, size_t n,
			  size_t max_chain, size_t max_bytes)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_EXTHASH, .secret = secret, .hash = h,
	};
	struct conn *c = calloc(n, sizeof(*c));
	struct conntab_resize_stats rs;
	struct conntab_node *out[64];
	struct conntab_stats st;
	struct visits vs;
	struct conntab *t;
	size_t i, j, segs, bound;

	ck_assert_ptr_nonnull(c);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &keys[i]), 0);
	conntab_stats(t, &st);
	conntab_resize_stats(t, &rs);
	segs = segments(&rs);
	bound = dir_bound(&rs, n);
	printf("exthash/%s, top %u%s bits shared, %zu keys: longest chain "
	       "%zu, %zu segments (%zu heads), directory %zu slots (bound "
	       "%zu), %zu splits, %.1f bytes/entry\n", conntab_hash_name(h),
	       k, low ? " and low 6" : "", n, st.max_depth, segs, st.buckets,
	       rs.dir_slots, bound, rs.splits,
	       (double)st.memory / (double)n);
	fflush(stdout);
	ck_assert_uint_eq(st.entries, n);
	ck_assert_uint_le(st.max_depth, max_chain);
	ck_assert_uint_le(st.memory, max_bytes * n);
	ck_assert_uint_le(rs.dir_slots, bound);
	rcu_read_lock();
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(conntab_lookup(t, &keys[i]), &c[i].node);
	for (i = 0; i + 64 <= n; i += 64) {
		ck_assert_uint_eq(conntab_lookup_batch(t, &keys[i], out, 64),
				  64);
		for (j = 0; j < 64; j++)
			ck_assert_ptr_eq(out[j], &c[i + j].node);
	}
	/* A walk over the rehashed and widened segments: each key once. */
	vs = (struct visits){ .c = c, .visits = calloc(n, 1), .n = n };
	ck_assert_ptr_nonnull(vs.visits);
	ck_assert_int_eq(conntab_walk(t, count_visit, &vs), 0);
	rcu_read_unlock();
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(vs.visits[i], 1);
	free(vs.visits);
	/*
	 * And back down: the removes merge and halve what grew. Half first,
	 * then their lookups: misses in the rehashed and widened segments,
	 * which end on the chain xh_idx_of() gives, not on chain h & 63
	 * (a miss that took the wrong chain's end for a foreign one would
	 * start over for ever).
	 */
	for (i = 0; i < n; i += 2)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	rcu_read_lock();
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(conntab_lookup(t, &keys[i]),
				 i % 2 ? &c[i].node : NULL);
	rcu_read_unlock();
	for (i = 1; i < n; i += 2)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	conntab_stats(t, &st);
	conntab_resize_stats(t, &rs);
	printf("  emptied: %zu heads, directory %zu slots, %zu bytes\n",
	       st.buckets, rs.dir_slots, st.memory);
	ck_assert_uint_eq(st.entries, 0);
	/* Memory follows the table: the widened segments narrowed back. */
	ck_assert_uint_le(st.memory, 64 * 1024);
	conntab_destroy(t, NULL);
	rcu_barrier();		/* the directories and segments it retired */
	free(c);
}

static void skew_run(enum conntab_hash h, unsigned int k, bool low, size_t n,
		     size_t max_chain, size_t max_bytes)
{
	struct conntab_key *keys = skewed_keys(h, k, low, n);

	skew_run_keys(h, k, low, keys, n, max_chain, max_bytes);
	free(keys);
}

static const unsigned int top_bits[] = { 2, 4, 8 };

START_TEST(skew_100k)
{
	enum conntab_hash hs[2];
	size_t nh = t_hashes(hs, 2), i;

	for (i = 0; i < nh; i++)
		skew_run(hs[i], top_bits[_i], false, 100000, 16, 100);
}
END_TEST

/*
 * The chain index attacked with 4 top bits (1024 hashes a key): chains at
 * most 16, not 97, and memory as for random keys.
 */
START_TEST(lowbits_100k)
{
	enum conntab_hash hs[2];
	size_t nh = t_hashes(hs, 2), i;

	for (i = 0; i < nh; i++)
		skew_run(hs[i], 4, true, 100000, 16, 24);
}
END_TEST

/*
 * And with 8 top bits (16K hashes a key, AES only: seconds): the corner's
 * segments hold 2^8 x 4 keys or so, more than the directory's bound lets
 * it split them into, so they widen: chains of 10 to 16 in most runs,
 * where they were 132 (all of a segment's keys in one chain). Not at
 * most 16 here: a corner segment holds ~1,500 keys in 1024 chains, and
 * the 14 hash bits the attack fixes and the 6 more its directory slot
 * fixes leave them 4,096 hashes, so many share their whole hash, hence
 * a chain whatever the multiplier (doc/exthash.md, "A known secret"):
 * 24 once in 200 runs with the library's own hash. 48 is three times
 * the chain that sets a rehash off, a quarter of what it was.
 */
START_TEST(lowbits_corner)
{
#if defined(__SANITIZE_ADDRESS__)
	return;
#endif
	if (!t_cpu_has_aes())
		return;
	skew_run(CONNTAB_HASH_AES, 8, true, 100000, 48, 24);
}
END_TEST

struct reader {
	pthread_t th;
	struct conntab *t;
	const struct conntab_key *keys;
	struct conn *c;
	size_t n;			/* keys[0, n) by 8: present throughout */
	size_t lookups, misses;
	size_t walks, walk_errors;	/* walks: a key by 8 not once */
	bool walker;
	int *stop;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	struct visits v = { .c = r->c, .n = r->n };
	size_t i;

	v.visits = malloc(r->n);
	rcu_register_thread();
	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
		/* Present throughout: visited once, under every resize. */
		if (r->walker && v.visits) {
			memset(v.visits, 0, r->n);
			rcu_read_lock();
			conntab_walk(r->t, count_visit, &v);
			rcu_read_unlock();
			for (i = 0; i < r->n; i++)
				r->walk_errors += v.visits[i] > 1 ||
						  (!(i % 8) && v.visits[i] != 1);
			r->walks++;
		}
		rcu_read_lock();
		for (i = 0; i < r->n; i += 8) {
			if (conntab_lookup(r->t, &r->keys[i]) != &r->c[i].node)
				r->misses++;
			r->lookups++;
		}
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	if (!v.visits)
		r->walk_errors++;
	free(v.visits);
	return NULL;
}

/*
 * issue 36, item 3: the attacks of the reproduction xh_lowbits, keys
 * with hash & 63 == 0 and @top top bits 0 under the known secret, 100K
 * of them. The bounds (lib/hashtab/exthash.c, XH_CHAIN_SPLIT, XH_ENTRIES_PER_SLOT):
 * chains at most 16 (random keys: 9), the directory within max(4 x
 * segments, entries / 4) (it was 262,144 slots with 6 top bits; random
 * keys: 2,048), memory within 24 bytes per entry (random: ~11; it was 71
 * to 93). Then two readers look up every 8th key while the writer
 * inserts and removes the rest, growing and shrinking the
 * attacked segments (rehashes, widenings, narrowings, splits, merges)
 * under them: none may miss a key present throughout, and the first
 * reader's walks, between its lookups, visit each such key exactly once
 * (and no key twice).
 */
static void known_secret_run(enum conntab_hash h, unsigned int top, size_t n,
			     bool churn)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_EXTHASH, .secret = secret, .hash = h,
	};
	struct conntab_key *keys = skewed_keys(h, top, true, n);
	struct conn *c = calloc(n, sizeof(*c));
	struct conntab_resize_stats rs, rs2;
	size_t i, lookups = 0, misses = 0, fails = 0, walks = 0, werr = 0;
	struct conntab_stats st, st2;
	struct reader rd[2];
	struct conntab *t;
	int stop = 0;

	/* The static lines first: skew_run_keys checks the bounds. */
	skew_run_keys(h, top, true, keys, n, 16, 24);
	ck_assert_ptr_nonnull(c);
	if (!churn)
		goto out;
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < n; i += 8)
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &keys[i]), 0);
	for (i = 0; i < 2; i++) {
		rd[i] = (struct reader){ .t = t, .keys = keys, .c = c,
					 .n = n, .walker = i == 0,
					 .stop = &stop };
		ck_assert_int_eq(pthread_create(&rd[i].th, NULL, reader_run,
						&rd[i]), 0);
	}
	/* Asserted once the readers are joined (a failed check leaves). */
	for (i = 0; i < n; i++)
		if (i % 8)
			fails += conntab_insert(t, &c[i].node, &keys[i]) != 0;
	conntab_stats(t, &st);
	conntab_resize_stats(t, &rs);
	/* Down to 1/8: merges, and the wide segments narrow back. */
	for (i = 0; i < n; i++)
		if (i % 8)
			fails += conntab_remove(t, &c[i].node) != 0;
	conntab_stats(t, &st2);
	conntab_resize_stats(t, &rs2);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 2; i++) {
		pthread_join(rd[i].th, NULL);
		misses += rd[i].misses;
		lookups += rd[i].lookups;
		walks += rd[i].walks;
		werr += rd[i].walk_errors;
	}
	printf("  churn up to %zu keys: chain %zu, %zu heads, %zu segments, "
	       "directory %zu slots; down to %zu keys: %zu heads, %zu "
	       "segments, %.1f bytes/entry; %zu lookups, %zu misses; %zu "
	       "walks, %zu not exactly once\n", st.entries, st.max_depth,
	       st.buckets, segments(&rs), rs.dir_slots, st2.entries,
	       st2.buckets, segments(&rs2),
	       (double)st2.memory / (double)st2.entries, lookups, misses,
	       walks, werr);
	ck_assert_uint_eq(fails, 0);
	ck_assert_uint_eq(misses, 0);
	ck_assert_uint_gt(lookups, 0);
	ck_assert_uint_eq(werr, 0);
	ck_assert_uint_gt(walks, 0);
	ck_assert_uint_le(st.max_depth, 16);
	ck_assert_uint_le(rs.dir_slots, dir_bound(&rs, n));
	/* 6 top bits: the corner's segments are wider than plain. */
	if (top)
		ck_assert_uint_gt(st.buckets, 64 * segments(&rs));
	/*
	 * Memory follows the table down: the widened segments narrow (one
	 * that stopped holds at least 3/8 of a node a head; one still
	 * narrowing when the removes end holds both its halves), the
	 * merges' hysteresis keeps up to ~4.4 times a fresh table's segments
	 * (doc/exthash.md, "Memory after shrinking"), and the directory does
	 * not halve while segments still use its depth: 28-50 bytes an entry
	 * measured at 1/8 of the keys, against ~11 at the peak.
	 */
	ck_assert_uint_lt(st2.buckets, st.buckets);
	ck_assert_uint_le(st2.memory, 64 * st2.entries);
	conntab_destroy(t, NULL);
	rcu_barrier();
out:
	free(c);
	free(keys);
}

/*
 * xh-known-secret: the chain index alone (64 hashes a key) with both
 * hashes; with 6 top bits as well (4K hashes a key), AES where the CPU
 * has it (SipHash: seconds more; both under ThreadSanitizer, which
 * CONNTAB_TEST_HASH keeps to SipHash, with fewer keys).
 */
START_TEST(xh_known_secret)
{
	static const unsigned int top[] = { 0, 6 };
	enum conntab_hash hs[2];
	size_t nh = t_hashes(hs, 2), i;
	size_t n = 100000;

#if defined(__SANITIZE_THREAD__)
	n = 20000;
#endif
	for (i = 0; i < nh; i++) {
		if (top[_i] && nh > 1 && hs[i] != CONNTAB_HASH_AES)
			continue;
		/* Readers under it once per attack: the last hash's run. */
		known_secret_run(hs[i], top[_i], n, i + 1 == nh);
	}
}
END_TEST

/*
 * 1M keys sharing 8 bits is 256M hashes to find: AES only (seconds), and
 * not under AddressSanitizer (minutes; the 100K runs cover the memory).
 */
START_TEST(skew_1m)
{
	enum conntab_hash h = t_cpu_has_aes() ? CONNTAB_HASH_AES :
						CONNTAB_HASH_SIPHASH;

#if defined(__SANITIZE_ADDRESS__)
	return;
#endif
	if (h == CONNTAB_HASH_SIPHASH && top_bits[_i] > 4)
		return;
	skew_run(h, top_bits[_i], false, 1000000, 16, 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exthash-skew");
	TCase *tc = tcase_create("skew");
	TCase *ks = tcase_create("xh-known-secret");
	int ret;

	rcu_register_thread();
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, skew_100k, 0, 3);
	tcase_add_loop_test(tc, skew_1m, 0, 3);
	tcase_add_test(tc, lowbits_100k);
	tcase_add_test(tc, lowbits_corner);
	suite_add_tcase(s, tc);
	tcase_set_timeout(ks, 600);
	tcase_add_loop_test(ks, xh_known_secret, 0, 2);
	suite_add_tcase(s, ks);
	ret = t_run(s, 900);
	rcu_unregister_thread();
	return ret;
}
