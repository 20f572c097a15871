/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_CHAINED's buckets of tagged slots (lib/hashtab/slots.h), against the
 * key sets that stress them most: keys that all fall into one bucket and
 * all carry one tag, so that every slot's tag matches every lookup, the
 * slots are full and the rest is on the overflow chain. Built with the
 * table's known secret and the library's own SipHash (lib/hash/hash.h), as
 * tests/test-flood.c does, or its AES hash (through conntab_hash()): the
 * worst-bucket and race cases run with each hash of t_hashes(), since an
 * AES table's lookups, batches and inserts match tags with SSE
 * (lib/hashtab/slots.h), a SipHash table's with the portable word match.
 *
 *  - slots-worst: every operation on such a bucket (lookup and batch of
 *    each key wherever it sits, walk and scan exactly once, removal from
 *    a slot and from the chain, refilling, TIME_WAIT in place and by
 *    replacement in a slot and on the chain, recycling, eviction of a
 *    slotted and of a chained victim at the cap), with stats checked;
 *  - slots-load: random keys at both ends of the sizing range, the share
 *    of nodes on the overflow chains against the bound slots.h states;
 *    split-load the same for CONNTAB_SPLIT's five slots (split.c);
 *  - slots-race: readers look up keys that stay in the bucket while
 *    writers empty and refill the other slots with keys of the same tag
 *    (so a reader's stale tag leads to another key's node) and move
 *    stable keys to TIME_WAIT and back by replacement: a present key is
 *    never missed, and nothing but its own node is returned for it.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/hash/hash.h"
#include "common.h"

#define NB		16	/* buckets of a table with expected = 64 */
#define NKEYS		24	/* 6 slotted, 18 on the chain */
#define NSTABLE		4	/* slots-race: keys that stay */
#define CT_SLOTS_TEST	6	/* lib/hashtab/slots.h CT_SLOTS: the first six go there */

static const uint8_t known_secret[16] = "slots-are-known";

struct conn {
	struct conntab_node node;
	int id;
};

static struct conntab_key keys[NKEYS];
static struct conn conns[NKEYS], tws[NKEYS], fresh[NKEYS];
static unsigned int visits[NKEYS * 3];

/* The hash of the table under test (the cases' loop over t_hashes()). */
static enum conntab_hash slots_hash = CONNTAB_HASH_SIPHASH;
static enum conntab_hash hashes[2];
static size_t nhashes;

static uint32_t known_hash(const struct conntab_key *k)
{
	struct ct_secret sec;

	if (slots_hash == CONNTAB_HASH_AES) {
		/* The library's own AES hash, keyed with the known secret. */
		static struct conntab *ht;
		struct conntab_config cfg = {
			.backend = CONNTAB_CHAINED,
			.secret = known_secret, .hash = CONNTAB_HASH_AES,
		};

		if (!ht)
			ht = conntab_create(&cfg);
		ck_assert_ptr_nonnull(ht);
		return (uint32_t)conntab_hash(ht, k);
	}
	memcpy(&sec.k0, known_secret, 8);
	memcpy(&sec.k1, known_secret + 8, 8);
	return ct_hash_sip(&sec, k);
}

/*
 * NKEYS keys of bucket 0 of NB, all with tag @tag: the hash's top byte, or
 * for @tag 1 a top byte of 0 or 1 (a 0 is stored as 1: slots.h), mixed.
 */
static void build_keys(uint32_t tag)
{
	uint64_t x = 88172645463325252ULL;	/* xorshift: reproducible */
	struct conntab_key k;
	size_t n = 0;
	uint32_t h;

	while (n < NKEYS) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		conntab_key_v4(&k, IPPROTO_UDP, htonl(0xc0000201), htons(53),
			       (uint32_t)x, (uint16_t)(x >> 32));
		h = known_hash(&k);
		if ((h & (NB - 1)) == 0 && ((h >> 24) | !(h >> 24)) == tag)
			keys[n++] = k;
	}
}

static struct conntab *make_table(size_t max_entries)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_CHAINED, .expected = 64,
		.secret = known_secret, .hash = slots_hash,
		.max_entries = max_entries,
	};
	struct conntab_stats st;
	struct conntab *t = conntab_create(&cfg);

	ck_assert_ptr_nonnull(t);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.buckets, NB);
	return t;
}

/* Fresh nodes @c[], numbered @base + i (conns 0, tws 1, fresh 2). */
static void init_conns(struct conn *c, int base)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		conntab_node_init(&c[i].node);
		c[i].id = base * NKEYS + (int)i;
	}
}

static int count_visit(struct conntab_node *n, void *arg)
{
	struct conn *c = conntab_entry(n, struct conn, node);

	(void)arg;
	visits[c->id]++;
	return 0;
}

/*
 * Every key whose node in @present is non-NULL is found, by lookup and by
 * batch, as that node; every other key is not; a walk and a scan in
 * calls of 3 visit each present node once; the stats agree.
 */
static void expect(struct conntab *t, struct conn *const *present,
		   size_t timewait)
{
	struct conntab_node *out[NKEYS];
	struct conntab_cursor cur;
	struct conntab_stats st;
	size_t i, want = 0;
	int ret;

	for (i = 0; i < NKEYS; i++)
		want += present[i] != NULL;
	rcu_read_lock();
	for (i = 0; i < NKEYS; i++)
		ck_assert_ptr_eq(conntab_lookup(t, &keys[i]),
				 present[i] ? &present[i]->node : NULL);
	ck_assert_uint_eq(conntab_lookup_batch(t, keys, out, NKEYS), want);
	for (i = 0; i < NKEYS; i++)
		ck_assert_ptr_eq(out[i], present[i] ? &present[i]->node : NULL);
	memset(visits, 0, sizeof(visits));
	ck_assert_int_eq(conntab_walk(t, count_visit, NULL), 0);
	for (i = 0; i < NKEYS; i++)
		if (present[i])
			ck_assert_uint_eq(visits[present[i]->id], 1);
	memset(visits, 0, sizeof(visits));
	memset(&cur, 0, sizeof(cur));
	do {
		ret = conntab_scan(t, &cur, 3, count_visit, NULL);
		ck_assert_int_ge(ret, 0);
	} while (!conntab_cursor_done(&cur));
	rcu_read_unlock();
	for (i = 0; i < NKEYS; i++)
		if (present[i])
			ck_assert_uint_eq(visits[present[i]->id], 1);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, want);
	ck_assert_uint_eq(st.timewait, timewait);
	ck_assert_uint_eq(st.max_depth, want);
}

/* Rank: every node alike (the choice among ties is the sample's). */
static long rank_equal(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	return 0;
}

START_TEST(test_worst_bucket)
{
	bool slotted[NKEYS], got_slot = false, got_chain = false;
	struct conn *present[NKEYS], *spare;
	size_t fk, vk;
	unsigned int round;
	struct conntab_node *rec, *ev;
	struct conntab *t;
	size_t i;

	slots_hash = hashes[_i];
	build_keys(0x5a);
	init_conns(conns, 0);
	init_conns(tws, 1);
	init_conns(fresh, 2);
	t = make_table(0);
	/* Six in the slots, in order; the rest on the chain. */
	for (i = 0; i < NKEYS; i++) {
		ck_assert_int_eq(conntab_insert(t, &conns[i].node, &keys[i]), 0);
		present[i] = &conns[i];
	}
	ck_assert_int_eq(conntab_insert(t, &fresh[0].node, &keys[0]),
			 -EEXIST);
	ck_assert_int_eq(conntab_insert(t, &fresh[0].node, &keys[20]),
			 -EEXIST);
	expect(t, present, 0);

	/* Out of two slots and off the chain's middle and its end. */
	ck_assert_int_eq(conntab_remove(t, &conns[1].node), 0);
	ck_assert_int_eq(conntab_remove(t, &conns[4].node), 0);
	ck_assert_int_eq(conntab_remove(t, &conns[12].node), 0);
	ck_assert_int_eq(conntab_remove(t, &conns[6].node), 0);
	ck_assert_int_eq(conntab_remove(t, &conns[6].node), -ENOENT);
	present[1] = present[4] = present[12] = present[6] = NULL;
	expect(t, present, 0);

	/* Back in: two take the free slots, two go on the chain. */
	for (i = 0; i < 4; i++) {
		static const int back[] = { 12, 1, 6, 4 };
		int j = back[i];

		ck_assert_int_eq(conntab_insert(t, &fresh[j].node, &keys[j]),
				 0);
		present[j] = &fresh[j];
	}
	expect(t, present, 0);

	/* TIME_WAIT in place, and by replacement in a slot and on the chain. */
	ck_assert_int_eq(conntab_timewait(t, &conns[0].node, &conns[0].node),
			 0);
	ck_assert_int_eq(conntab_timewait(t, &fresh[12].node, &tws[12].node),
			 0);
	present[12] = &tws[12];
	ck_assert_int_eq(conntab_timewait(t, &conns[20].node, &tws[20].node),
			 0);
	present[20] = &tws[20];
	ck_assert_int_eq(conntab_timewait(t, &conns[20].node, &tws[19].node),
			 -ENOENT);
	expect(t, present, 3);

	/* Recycling a TIME_WAIT node of a slot and one of the chain. */
	rec = NULL;
	ck_assert_int_eq(conntab_insert_recycle(t, &conns[12].node, &keys[12],
						&rec), 0);
	ck_assert_ptr_eq(rec, &tws[12].node);
	present[12] = &conns[12];
	rec = NULL;
	conntab_node_init(&conns[1].node);
	ck_assert_int_eq(conntab_insert_recycle(t, &conns[1].node, &keys[20],
						&rec), 0);
	ck_assert_ptr_eq(rec, &tws[20].node);
	present[20] = &conns[1];
	expect(t, present, 1);
	conntab_destroy(t, NULL);

	/*
	 * At the cap, every node is in this one bucket: evicting inserts,
	 * all ranks equal, each of the last victim's key with its node
	 * (after a grace period), until a chained victim and a slotted one
	 * went; the newcomer takes the victim's kind of place (the six
	 * slots stay full). The sample is 8 of the 23, uniform: both kinds
	 * within 400 rounds but for a chance of 1e-50.
	 */
	init_conns(conns, 0);
	t = make_table(NKEYS - 1);
	for (i = 0; i < NKEYS - 1; i++) {
		ck_assert_int_eq(conntab_insert(t, &conns[i].node, &keys[i]), 0);
		present[i] = &conns[i];
		slotted[i] = i < CT_SLOTS_TEST;
	}
	present[NKEYS - 1] = NULL;
	spare = &conns[NKEYS - 1];
	fk = NKEYS - 1;
	ck_assert_int_eq(conntab_insert(t, &spare->node, &keys[fk]), -ENOSPC);
	for (round = 0; round < 400 && !(got_slot && got_chain); round++) {
		ev = NULL;
		ck_assert_int_eq(conntab_insert_evict(t, &spare->node, &keys[fk],
						      rank_equal, NULL, &ev),
				 0);
		ck_assert_ptr_nonnull(ev);
		for (vk = 0; vk < NKEYS; vk++)
			if (present[vk] && &present[vk]->node == ev)
				break;
		ck_assert_uint_lt(vk, NKEYS);
		got_slot |= slotted[vk];
		got_chain |= !slotted[vk];
		slotted[fk] = slotted[vk];
		present[fk] = spare;
		present[vk] = NULL;
		expect(t, present, 0);
		synchronize_rcu();	/* no reader left on the victim */
		spare = conntab_entry(ev, struct conn, node);
		conntab_node_init(ev);
		fk = vk;
	}
	ck_assert(got_slot && got_chain);
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * @n random IPv4 keys into @k (xorshift from seed @x), each inserted
 * with its node of @c.
 */
static void insert_random(struct conntab *t, struct conntab_key *k,
			  struct conn *c, size_t n, uint64_t x)
{
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		conntab_key_v4(&k[i], IPPROTO_TCP, htonl(0x0a000001),
			       htons(443), (uint32_t)x, (uint16_t)(x >> 32));
		conntab_node_init(&c[i].node);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
	}
}

/*
 * Every one of the @n keys @k found by lookup and by batch as its node
 * of @c (@out: room for the batch's answers), and the stats (into *@st)
 * counting them all.
 */
static void expect_all(struct conntab *t, const struct conntab_key *k,
		       struct conn *c, struct conntab_node **out, size_t n,
		       struct conntab_stats *st)
{
	size_t i, found = 0;

	rcu_read_lock();
	for (i = 0; i < n; i++)
		found += conntab_lookup(t, &k[i]) == &c[i].node;
	ck_assert_uint_eq(found, n);
	ck_assert_uint_eq(conntab_lookup_batch(t, k, out, n), n);
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(out[i], &c[i].node);
	rcu_read_unlock();
	conntab_stats(t, st);
	ck_assert_uint_eq(st->entries, n);
}

/*
 * slots-load: random keys at 4 and at 2 nodes a bucket, the ends of the
 * range ct_slots_buckets_for() sizes for. The share of nodes past the
 * six slots of their bucket (on its chain) and past the first on the
 * chain, from the known hash, against the Poisson tails slots.h states
 * (4.9% and 2.1% at 4; 0.30% and 0.07% at 2), with the room that 64K
 * keys leave (a standard deviation is below a tenth of the first and a
 * fifth of the second); every key found by lookup and by batch; and the
 * deepest bucket as stats.max_depth says.
 */
#define LOAD_BUCKETS	16384

static void load_case(size_t n, double chain_lo, double chain_hi,
		      double behind_lo, double behind_hi)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_CHAINED, .expected = 4 * LOAD_BUCKETS,
		.secret = known_secret, .hash = CONNTAB_HASH_SIPHASH,
	};
	static uint16_t occ[LOAD_BUCKETS];
	struct conntab_key *k = calloc(n, sizeof(*k));
	struct conntab_node **out = calloc(n, sizeof(*out));
	struct conn *c = calloc(n, sizeof(*c));
	size_t i, chain = 0, behind = 0, deepest = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct conntab_stats st;
	struct conntab *t;

	ck_assert(k && out && c);
	slots_hash = CONNTAB_HASH_SIPHASH;	/* known_hash()'s, as cfg's */
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.buckets, LOAD_BUCKETS);
	memset(occ, 0, sizeof(occ));
	insert_random(t, k, c, n, x);
	for (i = 0; i < n; i++) {
		occ[known_hash(&k[i]) & (LOAD_BUCKETS - 1)]++;
	}
	for (i = 0; i < LOAD_BUCKETS; i++) {
		chain += occ[i] > 6 ? occ[i] - 6u : 0;
		behind += occ[i] > 7 ? occ[i] - 7u : 0;
		deepest = occ[i] > deepest ? occ[i] : deepest;
	}
	printf("slots-load: %zu keys in %d buckets: %.3f%% on a chain, "
	       "%.3f%% behind another there, deepest %zu\n", n, LOAD_BUCKETS,
	       100.0 * (double)chain / (double)n,
	       100.0 * (double)behind / (double)n, deepest);
	ck_assert((double)chain >= chain_lo * (double)n);
	ck_assert((double)chain <= chain_hi * (double)n);
	ck_assert((double)behind >= behind_lo * (double)n);
	ck_assert((double)behind <= behind_hi * (double)n);
	expect_all(t, k, c, out, n, &st);
	ck_assert_uint_eq(st.max_depth, deepest);
	conntab_destroy(t, NULL);
	free(k);
	free(out);
	free(c);
}

START_TEST(test_load)
{
	load_case(4 * LOAD_BUCKETS, 0.040, 0.058, 0.016, 0.026);
	load_case(2 * LOAD_BUCKETS, 0.0015, 0.0045, 0.0001, 0.0015);
}
END_TEST

/*
 * split-load: CONNTAB_SPLIT's line of five established slots
 * (lib/hashtab/split.c) at 4 and at 2 nodes a bucket, all established:
 * the share of keys past the five slots of their bucket (on its overflow
 * chain) against the Poisson tails split.c states (10.3% at 4, 1.1% at
 * 2). The bucket of a key is conntab_hash() & (buckets - 1), the table's
 * own hash and stats.buckets; the sample sizes leave a standard deviation
 * of 1.8% of the first and 3.4% of the second, so +-10% and +-15% are
 * over 4 of them. Every key is found by lookup and by batch, and
 * stats.max_depth is the deepest bucket: all of a bucket's keys on its
 * established side. Then the constructed case the layout implies: five
 * keys of one bucket fill its slots, a sixth and seventh overflow, and
 * every one stays found as slotted and chained ones leave and return.
 */
static void split_load_case(size_t nb, size_t per_bucket, double lo,
			    double hi)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_SPLIT, .expected = 4 * nb,
		.secret = known_secret, .hash = CONNTAB_HASH_SIPHASH,
	};
	size_t i, n = per_bucket * nb, over = 0, deepest = 0;
	struct conntab_key *k = calloc(n, sizeof(*k));
	struct conntab_node **out = calloc(n, sizeof(*out));
	struct conn *c = calloc(n, sizeof(*c));
	uint16_t *occ = calloc(nb, sizeof(*occ));
	uint64_t x = 0x2545f4914f6cdd1dull;
	struct conntab_stats st;
	struct conntab *t;

	ck_assert(k && out && c && occ);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.buckets, nb);
	insert_random(t, k, c, n, x);
	for (i = 0; i < n; i++) {
		occ[conntab_hash(t, &k[i]) & (nb - 1)]++;
	}
	for (i = 0; i < nb; i++) {
		over += occ[i] > 5 ? occ[i] - 5u : 0;
		deepest = occ[i] > deepest ? occ[i] : deepest;
	}
	printf("split-load: %zu keys in %zu buckets: %.3f%% on an overflow "
	       "chain, deepest %zu\n", n, nb,
	       100.0 * (double)over / (double)n, deepest);
	ck_assert((double)over >= lo * (double)n);
	ck_assert((double)over <= hi * (double)n);
	expect_all(t, k, c, out, n, &st);
	ck_assert_uint_eq(st.timewait, 0);
	ck_assert_uint_eq(st.max_depth, deepest);
	conntab_destroy(t, NULL);
	free(k);
	free(out);
	free(c);
	free(occ);
}

/* All present keys of @k (@on[i]) found by lookup, the rest missed. */
static void split_expect(struct conntab *t, const struct conntab_key *k,
			 struct conn *c, const bool *on, size_t n)
{
	size_t i;

	rcu_read_lock();
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(conntab_lookup(t, &k[i]),
				 on[i] ? &c[i].node : NULL);
	rcu_read_unlock();
}

START_TEST(test_split_load)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_SPLIT, .expected = 64,
		.secret = known_secret, .hash = CONNTAB_HASH_SIPHASH,
	};
	struct conntab_key k[7], cand;
	struct conn c[7];
	bool on[7] = { false };
	struct conntab_stats st;
	struct conntab *t;
	uint32_t i, n = 0;
	size_t nb;

	split_load_case(16384, 4, 0.092, 0.113);
	split_load_case(65536, 2, 0.0096, 0.0129);

	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	conntab_stats(t, &st);
	nb = st.buckets;
	for (i = 0; n < 7; i++) {
		conntab_key_v4(&cand, IPPROTO_TCP, htonl(0x0a000003),
			       htons(443), htonl(0xc6336400 + i),
			       htons((uint16_t)(1024 + i)));
		if ((conntab_hash(t, &cand) & (nb - 1)) == 0)
			k[n++] = cand;
	}
	for (i = 0; i < 7; i++) {
		conntab_node_init(&c[i].node);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
		on[i] = true;
		conntab_stats(t, &st);
		ck_assert_uint_eq(st.max_depth, i + 1);
		split_expect(t, k, c, on, 7);
	}
	/* A slotted key leaves and returns (to a slot), then a chained one. */
	for (i = 2; i <= 5; i += 3) {
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		on[i] = false;
		synchronize_rcu();
		split_expect(t, k, c, on, 7);
		conntab_stats(t, &st);
		ck_assert_uint_eq(st.max_depth, 6);
		conntab_node_init(&c[i].node);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
		on[i] = true;
		split_expect(t, k, c, on, 7);
		conntab_stats(t, &st);
		ck_assert_uint_eq(st.max_depth, 7);
	}
	conntab_destroy(t, NULL);
}
END_TEST

/* slots-race: readers against writers in the one bucket. */
#define POOL	(1u << 17)	/* fresh nodes per writer: none is reused */
#define RACE_NS	1000000000ull

static int stop;		/* atomic: the readers poll it */
static struct conntab *race_t;
static unsigned long misses, wrong, lookups, failures;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int id_of(const struct conntab_node *n)
{
	return conntab_entry(n, const struct conn, node)->id;
}

static void *reader(void *arg)
{
	struct conntab_node *n, *out[NSTABLE];
	unsigned long miss = 0, bad = 0, done = 0;
	size_t i;

	(void)arg;
	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		rcu_read_lock();
		for (i = 0; i < NSTABLE; i++) {
			n = conntab_lookup(race_t, &keys[i]);
			/* Its own key's node, never another key's. */
			miss += !n;
			bad += n && id_of(n) != (int)i;
		}
		miss += NSTABLE - conntab_lookup_batch(race_t, keys, out,
						      NSTABLE);
		for (i = 0; i < NSTABLE; i++)
			bad += out[i] && id_of(out[i]) != (int)i;
		rcu_read_unlock();
		done++;
	}
	__atomic_fetch_add(&misses, miss, __ATOMIC_RELAXED);
	__atomic_fetch_add(&wrong, bad, __ATOMIC_RELAXED);
	__atomic_fetch_add(&lookups, done, __ATOMIC_RELAXED);
	rcu_unregister_thread();
	return NULL;
}

struct pool {
	struct conn *c;
	size_t used;
};

static struct conntab_node *fresh_node(struct pool *p, int id)
{
	struct conn *c;

	if (p->used == POOL)
		return NULL;
	c = &p->c[p->used++];
	conntab_node_init(&c->node);
	c->id = id;
	return &c->node;
}

/*
 * Writer @w churns the keys NSTABLE + w, NSTABLE + w + 2, ... through the
 * other slots and the chain; writer 0 also moves each stable key to
 * TIME_WAIT by replacement and back by recycling, one store each. Every
 * insert has a fresh node (ThreadSanitizer cannot see grace periods).
 */
static void *writer(void *arg)
{
	unsigned int w = (unsigned int)(uintptr_t)arg;
	struct conntab_node *n, *tw, *rec, *stable[NSTABLE];
	struct pool p = { calloc(POOL, sizeof(struct conn)), 0 };
	unsigned long fail = 0;
	uint64_t end = now_ns() + RACE_NS;
	size_t round, i;

	rcu_register_thread();
	if (!p.c)
		fail++;
	/* Only this writer moves them: they stay valid after the lock. */
	rcu_read_lock();
	for (i = 0; i < NSTABLE; i++)
		stable[i] = conntab_lookup(race_t, &keys[i]);
	rcu_read_unlock();
	for (round = 0; p.c && now_ns() < end; round++) {
		for (i = NSTABLE + w; i < NKEYS; i += 2) {
			if (!(n = fresh_node(&p, (int)i)))
				goto out;
			if (conntab_insert(race_t, n, &keys[i]) != 0 ||
			    conntab_remove(race_t, n) != 0)
				fail++;
		}
		if (w)
			continue;
		i = round % NSTABLE;
		if (!(tw = fresh_node(&p, (int)i)) ||
		    !(n = fresh_node(&p, (int)i)))
			goto out;
		rec = NULL;
		if (conntab_timewait(race_t, stable[i], tw) != 0 ||
		    conntab_insert_recycle(race_t, n, &keys[i], &rec) != 0 ||
		    rec != tw)
			fail++;
		stable[i] = n;
	}
out:
	__atomic_fetch_add(&failures, fail, __ATOMIC_RELAXED);
	rcu_unregister_thread();
	/* The nodes stay for the readers; main frees them after they end. */
	return p.c;
}

START_TEST(test_race)
{
	pthread_t r[2], w[2];
	void *pools[2];
	size_t i;

	slots_hash = hashes[_i];
	/* Tag 1: keys whose top hash byte is 0 share it with those of 1. */
	build_keys(1);
	init_conns(conns, 0);
	race_t = make_table(0);
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	misses = wrong = lookups = failures = 0;
	for (i = 0; i < NSTABLE; i++)
		ck_assert_int_eq(conntab_insert(race_t, &conns[i].node,
						&keys[i]), 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&r[i], NULL, reader, NULL), 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&w[i], NULL, writer,
						(void *)(uintptr_t)i), 0);
	for (i = 0; i < 2; i++)
		pthread_join(w[i], &pools[i]);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	printf("slots-race (%s): %lu rounds of lookups, %lu misses, "
	       "%lu wrong, %lu writer failures\n",
	       conntab_hash_name(slots_hash), lookups, misses, wrong,
	       failures);
	ck_assert_uint_gt(lookups, 0);
	ck_assert_uint_eq(misses, 0);
	ck_assert_uint_eq(wrong, 0);
	ck_assert_uint_eq(failures, 0);
	conntab_destroy(race_t, NULL);
	for (i = 0; i < 2; i++)
		free(pools[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slots");
	TCase *tc = tcase_create("slots-worst"), *tr = tcase_create("slots-race");
	int ret;

	nhashes = t_hashes(hashes, 2);
	tcase_add_loop_test(tc, test_worst_bucket, 0, (int)nhashes);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_split_load);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(tr, test_race, 0, (int)nhashes);
	tcase_set_timeout(tr, 120);
	suite_add_tcase(s, tr);
	rcu_register_thread();
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
