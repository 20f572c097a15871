/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Contract of the table operations (design/API.md), run against
 * every backend this build accepts: one TCase per backend, the backend
 * passed as the loop index, so a backend that lands later is covered
 * without a change here.
 *
 * Single-threaded: the main thread is a registered memb reader and holds
 * the read lock around lookups as the contract asks. Nodes live in arrays
 * on the stack; a node is reused only after synchronize_rcu(). Walks,
 * stats and destroy are in test-walk.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

/* --- create --------------------------------------------------------- */

START_TEST(create_bad)
{
	struct conntab_config cfg = { .backend = CONNTAB_CHAINED };
	int b;

	errno = 0;
	ck_assert_ptr_null(conntab_create(NULL));
	ck_assert_int_eq(errno, EINVAL);
	/* 0 is the default backend, not a bad one: test-badinput.c. */
	cfg.backend = 99;
	errno = 0;
	ck_assert_ptr_null(conntab_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.backend = (enum conntab_backend)-1;
	errno = 0;
	ck_assert_ptr_null(conntab_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE; b++) {
		if (conntab_backend_available(b))
			continue;
		cfg.backend = b;
		errno = 0;
		ck_assert_ptr_null(conntab_create(&cfg));
		ck_assert_int_eq(errno, EINVAL);
	}
}
END_TEST

START_TEST(create_flavor)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct tconn c[1];
	struct conntab_key k;
	struct conntab *t;

	/* The real function, macro bypassed: needs the flavor in cfg. */
	errno = 0;
	ck_assert_ptr_null((conntab_create)(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(conntab_create_flavor(&cfg, NULL));
	ck_assert_int_eq(errno, EINVAL);

	cfg.flavor = &rcu_flavor;
	t = (conntab_create)(&cfg);
	ck_assert_ptr_nonnull(t);
	t_conns_init(c, 1);
	t_key(&k, 1);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k), 0);
	t_expect_found(t, &k, &c[0].node, CONNTAB_ESTABLISHED);
	conntab_destroy(t, NULL);

	/* cfg.flavor wins over the argument. */
	t = conntab_create_flavor(&cfg, NULL);
	ck_assert_ptr_nonnull(t);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(create_sizes)
{
	static const size_t expected[] = { 0, 1, 3, 64, 1000, 1 << 16 };
	static const uint8_t secret[16] = "0123456789abcdef";
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct conntab_stats st;
	struct tconn c[200];
	struct conntab *t;
	struct conntab_key k;
	size_t e, i;

	for (e = 0; e < sizeof(expected) / sizeof(expected[0]); e++) {
		for (int sec = 0; sec < 2; sec++) {
			cfg.expected = expected[e];
			cfg.secret = sec ? secret : NULL;
			t = conntab_create(&cfg);
			ck_assert_msg(t != NULL, "%s: expected %zu", BN,
				      expected[e]);
			conntab_stats(t, &st);
			ck_assert_uint_eq(st.entries, 0);
			ck_assert_uint_ge(st.buckets, t_min_buckets(B, 0));
			ck_assert_uint_gt(st.memory, 0);
			t_conns_init(c, 200);
			for (i = 0; i < 200; i++) {
				t_key(&k, (uint32_t)i);
				ck_assert_int_eq(conntab_insert(t, &c[i].node,
								&k), 0);
			}
			for (i = 0; i < 200; i++) {
				t_key(&k, (uint32_t)i);
				t_expect_found(t, &k, &c[i].node,
					     CONNTAB_ESTABLISHED);
			}
			t_expect_counts(t, 200, 0);
			conntab_destroy(t, NULL);
		}
	}
}
END_TEST

/*
 * A sizing hint above CONNTAB_MAX_EXPECTED is refused, not honoured: at
 * SIZE_MAX the hash backends allocated 1 to 2.45 GB for it (issue 27,
 * item 11b). The maximum itself is allocated only for the trie, which
 * sizes nothing before its root bursts; the hash backends would size
 * their arrays at their caps (gigabytes).
 */
START_TEST(create_expected_max)
{
	static const size_t bad[] = { CONNTAB_MAX_EXPECTED + 1, SIZE_MAX / 2,
				      SIZE_MAX };
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct conntab *t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg.expected = bad[i];
		errno = 0;
		ck_assert_ptr_null(conntab_create(&cfg));
		ck_assert_int_eq(errno, EINVAL);
	}
	if (B != CONNTAB_TRIE)
		return;
	cfg.expected = CONNTAB_MAX_EXPECTED;
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	conntab_destroy(t, NULL);
}
END_TEST

/* --- insert --------------------------------------------------------- */

START_TEST(insert_basic)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k[T_SMALL_KEYS], other;
	struct tconn c[T_SMALL_KEYS + 1];
	size_t i;

	t_conns_init(c, T_SMALL_KEYS + 1);
	for (i = 0; i < T_SMALL_KEYS; i++) {
		t_key_small(&k[i], (uint32_t)i);
		ck_assert(t_lookup(t, &k[i]) == NULL);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
		t_expect_found(t, &k[i], &c[i].node, CONNTAB_ESTABLISHED);
	}
	/* Keys that differ in one field only are all told apart. */
	for (i = 0; i < T_SMALL_KEYS; i++)
		t_expect_found(t, &k[i], &c[i].node, CONNTAB_ESTABLISHED);
	t_expect_counts(t, T_SMALL_KEYS, 0);
	/* Misses next to hits. */
	for (i = 0; i < T_SMALL_KEYS; i++) {
		other = k[i];
		other.lport ^= 1;
		ck_assert(t_lookup(t, &other) == NULL);
		other = k[i];
		other.zone = 3;
		ck_assert(t_lookup(t, &other) == NULL);
	}
	/* The key was copied: the caller's copy may change. */
	memset(&k[0], 0, sizeof(k[0]));
	t_key_small(&other, 0);
	t_expect_found(t, &other, &c[0].node, CONNTAB_ESTABLISHED);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(insert_exists)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k1, k2;
	struct tconn c[4];

	t_conns_init(c, 4);
	t_key(&k1, 1);
	t_key(&k2, 3);		/* IPv6 */
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k1), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k1), -EEXIST);
	ck_assert_int_eq(conntab_insert(t, &c[2].node, &k2), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k2), -EEXIST);
	/* TIME_WAIT holds the key too: in place and as a new node. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[0].node), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k1), -EEXIST);
	ck_assert_int_eq(conntab_timewait(t, &c[2].node, &c[3].node), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k2), -EEXIST);
	t_expect_found(t, &k1, &c[0].node, CONNTAB_TIMEWAIT);
	t_expect_found(t, &k2, &c[3].node, CONNTAB_TIMEWAIT);
	t_expect_counts(t, 2, 2);
	/* The failed node was released: it can go elsewhere. */
	t_key(&k1, 5);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k1), 0);
	t_expect_counts(t, 3, 2);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(insert_busy)
{
	struct conntab *t = t_table(B, 0, 0), *u = t_table(B, 0, 0);
	struct conntab_key k1, k2;
	struct conntab_node *rec;
	struct tconn c[2];

	t_conns_init(c, 2);
	t_key(&k1, 1);
	t_key(&k2, 2);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k1), 0);
	/* In this table, under another key: refused, key unchanged. */
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k2), -EBUSY);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[0].node, &k2, &rec),
			 -EBUSY);
	/* In another table. */
	ck_assert_int_eq(conntab_insert(u, &c[0].node, &k2), -EBUSY);
	ck_assert_int_eq(conntab_insert(u, &c[0].node, &k1), -EBUSY);
	t_expect_found(t, &k1, &c[0].node, CONNTAB_ESTABLISHED);
	ck_assert(t_lookup(t, &k2) == NULL);
	ck_assert(t_lookup(u, &k1) == NULL);
	ck_assert(t_lookup(u, &k2) == NULL);
	t_expect_counts(t, 1, 0);
	t_expect_counts(u, 0, 0);
	/* A TIME_WAIT node is still in the table. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[0].node), 0);
	ck_assert_int_eq(conntab_insert(u, &c[0].node, &k2), -EBUSY);
	/* After removal (and a grace period) it may go anywhere. */
	ck_assert_int_eq(conntab_remove(t, &c[0].node), 0);
	synchronize_rcu();
	conntab_node_init(&c[0].node);
	ck_assert_int_eq(conntab_insert(u, &c[0].node, &k2), 0);
	t_expect_found(u, &k2, &c[0].node, CONNTAB_ESTABLISHED);
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

START_TEST(insert_inval)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k, bad;
	struct conntab_node *rec;
	struct tconn c[1];
	int i;

	t_conns_init(c, 1);
	t_key(&k, 1);
	ck_assert_int_eq(conntab_insert(NULL, &c[0].node, &k), -EINVAL);
	ck_assert_int_eq(conntab_insert(t, NULL, &k), -EINVAL);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, NULL), -EINVAL);
	ck_assert_int_eq(conntab_insert_recycle(NULL, &c[0].node, &k, &rec),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_recycle(t, NULL, &k, &rec), -EINVAL);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[0].node, NULL, &rec),
			 -EINVAL);
	bad = k;
	bad.family = 0;
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &bad), -EINVAL);
	bad.family = 99;
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &bad), -EINVAL);
	bad.family = AF_UNIX;
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &bad), -EINVAL);
	/* IPv4 key with a nonzero byte beyond the v4 address. */
	for (i = 4; i < 16; i++) {
		bad = k;
		bad.laddr.bytes[i] = 1;
		ck_assert_int_eq(conntab_insert(t, &c[0].node, &bad), -EINVAL);
		bad = k;
		bad.raddr.bytes[i] = 0x80;
		ck_assert_int_eq(conntab_insert(t, &c[0].node, &bad), -EINVAL);
	}
	t_expect_counts(t, 0, 0);
	/* Nothing was claimed: the node still inserts. */
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k), 0);
	t_expect_found(t, &k, &c[0].node, CONNTAB_ESTABLISHED);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(insert_nospc)
{
	enum { MAX = 8 };
	struct conntab *t = t_table(B, 0, MAX), *u = t_table(B, 0, 0);
	struct conntab_node *rec;
	struct conntab_key k[MAX + 2];
	struct tconn c[MAX + 4];
	size_t i;

	t_conns_init(c, MAX + 4);
	for (i = 0; i < MAX + 2; i++)
		t_key(&k[i], (uint32_t)i);
	for (i = 0; i < MAX; i++)
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
	ck_assert_int_eq(conntab_insert(t, &c[MAX].node, &k[MAX]), -ENOSPC);
	rec = &c[0].node;
	ck_assert_int_eq(conntab_insert_recycle(t, &c[MAX].node, &k[MAX],
						&rec), -ENOSPC);
	ck_assert_ptr_null(rec);
	/* A duplicate at the cap is a duplicate. */
	ck_assert_int_eq(conntab_insert(t, &c[MAX].node, &k[3]), -EEXIST);
	ck_assert(t_lookup(t, &k[MAX]) == NULL);
	t_expect_counts(t, MAX, 0);
	/* The refused node was released. */
	ck_assert_int_eq(conntab_insert(u, &c[MAX].node, &k[MAX]), 0);
	/* TIME_WAIT still counts. */
	ck_assert_int_eq(conntab_timewait(t, &c[1].node, &c[1].node), 0);
	ck_assert_int_eq(conntab_timewait(t, &c[2].node, &c[MAX + 1].node),
			 0);
	ck_assert_int_eq(conntab_insert(t, &c[MAX + 2].node, &k[MAX + 1]),
			 -ENOSPC);
	/* Recycling a TIME_WAIT key at the cap replaces, adds nothing. */
	ck_assert_int_eq(conntab_insert_recycle(t, &c[MAX + 2].node, &k[1],
						&rec), 0);
	ck_assert_ptr_eq(rec, &c[1].node);
	t_expect_counts(t, MAX, 1);
	/* Room again after a remove. */
	ck_assert_int_eq(conntab_remove(t, &c[0].node), 0);
	ck_assert_int_eq(conntab_insert(t, &c[MAX + 3].node, &k[MAX + 1]), 0);
	t_expect_found(t, &k[MAX + 1], &c[MAX + 3].node, CONNTAB_ESTABLISHED);
	synchronize_rcu();
	conntab_node_init(&c[0].node);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k[0]), -ENOSPC);
	/* Removing a TIME_WAIT node frees room too. */
	ck_assert_int_eq(conntab_remove(t, &c[MAX + 1].node), 0);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k[0]), 0);
	t_expect_counts(t, MAX, 0);
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

/* --- insert_recycle ------------------------------------------------- */

START_TEST(recycle)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_node *rec;
	struct conntab_key k1, k2;
	struct tconn c[6];

	t_conns_init(c, 6);
	t_key(&k1, 1);
	t_key(&k2, 7);		/* IPv6 */
	/* Absent key: a plain insert. */
	rec = &c[5].node;
	ck_assert_int_eq(conntab_insert_recycle(t, &c[0].node, &k1, &rec), 0);
	ck_assert_ptr_null(rec);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[1].node, &k2, &rec), 0);
	ck_assert_ptr_null(rec);
	/* ESTABLISHED key: refused. */
	rec = &c[5].node;
	ck_assert_int_eq(conntab_insert_recycle(t, &c[2].node, &k1, &rec),
			 -EEXIST);
	ck_assert_ptr_null(rec);
	/* NULL result pointer: refused, nothing changes. */
	ck_assert_int_eq(conntab_insert_recycle(t, &c[2].node, &k1, NULL),
			 -EINVAL);
	t_expect_found(t, &k1, &c[0].node, CONNTAB_ESTABLISHED);
	/* TIME_WAIT in place: replaced by the new node. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[0].node), 0);
	t_expect_counts(t, 2, 1);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[2].node, &k1, NULL),
			 -EINVAL);
	t_expect_found(t, &k1, &c[0].node, CONNTAB_TIMEWAIT);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[2].node, &k1, &rec), 0);
	ck_assert_ptr_eq(rec, &c[0].node);
	t_expect_found(t, &k1, &c[2].node, CONNTAB_ESTABLISHED);
	t_expect_counts(t, 2, 0);
	/* The recycled node is out of the table. */
	ck_assert_int_eq(conntab_remove(t, &c[0].node), -ENOENT);
	/* TIME_WAIT as a separate node: that node is what comes back. */
	ck_assert_int_eq(conntab_timewait(t, &c[1].node, &c[3].node), 0);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[4].node, &k2, &rec), 0);
	ck_assert_ptr_eq(rec, &c[3].node);
	t_expect_found(t, &k2, &c[4].node, CONNTAB_ESTABLISHED);
	ck_assert_int_eq(conntab_remove(t, &c[3].node), -ENOENT);
	t_expect_counts(t, 2, 0);
	/* A recycled node may be inserted again after a grace period. */
	synchronize_rcu();
	conntab_node_init(&c[0].node);
	t_key(&k2, 8);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k2), 0);
	t_expect_found(t, &k2, &c[0].node, CONNTAB_ESTABLISHED);
	t_expect_counts(t, 3, 0);
	conntab_destroy(t, NULL);
}
END_TEST

/* --- lookup / lookup_batch ------------------------------------------ */

START_TEST(lookup_null)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_node *out[2] = { NULL, NULL };
	struct conntab_key k[2];
	struct tconn c[1];

	t_conns_init(c, 1);
	t_key(&k[0], 0);
	t_key(&k[1], 1);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k[0]), 0);
	rcu_read_lock();
	ck_assert_ptr_null(conntab_lookup(NULL, &k[0]));
	ck_assert_ptr_null(conntab_lookup(t, NULL));
	ck_assert_uint_eq(conntab_lookup_batch(NULL, k, out, 2), 0);
	ck_assert_uint_eq(conntab_lookup_batch(t, NULL, out, 2), 0);
	ck_assert_uint_eq(conntab_lookup_batch(t, k, NULL, 2), 0);
	ck_assert_uint_eq(conntab_lookup_batch(t, k, out, 2), 1);
	ck_assert_ptr_eq(out[0], &c[0].node);
	ck_assert_ptr_null(out[1]);
	rcu_read_unlock();
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * lookup_batch answers as lookup does, in a table of backend @b sized
 * for @expected: with 1, the chains of the hash backends are long, so
 * the batch's probes of first and second nodes and its fallback to the
 * lookup proper all answer some keys.
 */
static void batch_check(enum conntab_backend b, size_t expected)
{
	enum { NKEYS = 300, MAXB = 100 };
	static const size_t sizes[] = { 0, 1, 2, 15, 16, 17, 31, 32, 33, 100 };
	struct conntab *t = t_table(b, expected, 0);
	struct conntab_node *out[MAXB + 1], *sentinel = (void *)&sizes;
	struct conntab_key keys[MAXB], k;
	static struct tconn c[NKEYS];
	size_t s, i, base, found, want;

	t_conns_init(c, NKEYS);
	/* Even keys in the table, odd ones absent. */
	for (i = 0; i < NKEYS; i += 2) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	/* Some TIME_WAIT: found like the others. */
	for (i = 0; i < NKEYS; i += 6)
		ck_assert_int_eq(conntab_timewait(t, &c[i].node, &c[i].node),
				 0);
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (base = 0; base < 7; base++) {
			want = 0;
			for (i = 0; i < sizes[s]; i++) {
				/* Mixed runs of hits and misses. */
				uint32_t id = (uint32_t)((base * 37 + i * i +
							  i / 3) % NKEYS);

				t_key(&keys[i], id);
				want += id % 2 == 0;
			}
			for (i = 0; i <= MAXB; i++)
				out[i] = sentinel;
			rcu_read_lock();
			found = conntab_lookup_batch(t, keys, out, sizes[s]);
			for (i = 0; i < sizes[s]; i++) {
				struct conntab_node *one =
					conntab_lookup(t, &keys[i]);

				ck_assert_ptr_eq(out[i], one);
				if (one)
					ck_assert(t_key_same(
						  conntab_node_key(one),
						  &keys[i]));
			}
			rcu_read_unlock();
			ck_assert_uint_eq(found, want);
			/* Nothing written beyond n. */
			ck_assert_ptr_eq(out[sizes[s]], sentinel);
		}
	}
	/* The same key many times in one batch. */
	for (i = 0; i < MAXB; i++)
		t_key(&keys[i], 4);
	rcu_read_lock();
	ck_assert_uint_eq(conntab_lookup_batch(t, keys, out, MAXB), MAXB);
	for (i = 0; i < MAXB; i++)
		ck_assert_ptr_eq(out[i], &c[4].node);
	rcu_read_unlock();
	conntab_destroy(t, NULL);
}

START_TEST(lookup_batch)
{
	batch_check(B, 0);
	batch_check(B, 1);
}
END_TEST

/* --- remove --------------------------------------------------------- */

START_TEST(remove_errors)
{
	struct conntab *t = t_table(B, 0, 0), *u = t_table(B, 0, 0);
	struct conntab_key k1, k2, k3;
	struct tconn c[5];

	t_conns_init(c, 5);
	t_key(&k1, 1);
	t_key(&k2, 2);
	t_key(&k3, 3);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k1), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k2), 0);
	ck_assert_int_eq(conntab_insert(u, &c[2].node, &k3), 0);
	ck_assert_int_eq(conntab_remove(NULL, &c[0].node), -EINVAL);
	ck_assert_int_eq(conntab_remove(t, NULL), -EINVAL);
	/* Never inserted; in another table. */
	ck_assert_int_eq(conntab_remove(t, &c[3].node), -ENOENT);
	ck_assert_int_eq(conntab_remove(t, &c[2].node), -ENOENT);
	t_expect_found(u, &k3, &c[2].node, CONNTAB_ESTABLISHED);
	/* A node whose key the table holds in another node. */
	ck_assert_int_eq(conntab_insert(u, &c[4].node, &k1), 0);
	ck_assert_int_eq(conntab_remove(t, &c[4].node), -ENOENT);
	t_expect_found(t, &k1, &c[0].node, CONNTAB_ESTABLISHED);
	t_expect_counts(t, 2, 0);
	/* Remove, then twice. */
	ck_assert_int_eq(conntab_remove(t, &c[0].node), 0);
	ck_assert(t_lookup(t, &k1) == NULL);
	ck_assert_int_eq(conntab_remove(t, &c[0].node), -ENOENT);
	t_expect_found(t, &k2, &c[1].node, CONNTAB_ESTABLISHED);
	t_expect_found(u, &k1, &c[4].node, CONNTAB_ESTABLISHED);
	t_expect_counts(t, 1, 0);
	/* TIME_WAIT nodes are removed the same way. */
	ck_assert_int_eq(conntab_timewait(t, &c[1].node, &c[1].node), 0);
	t_expect_counts(t, 1, 1);
	ck_assert_int_eq(conntab_remove(t, &c[1].node), 0);
	ck_assert(t_lookup(t, &k2) == NULL);
	t_expect_counts(t, 0, 0);
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

/* conntab_remove_key(): errors, both states, the node returned. */
START_TEST(remove_key)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k1, k2, k3, bad;
	struct tconn c[3];

	t_conns_init(c, 3);
	t_key(&k1, 1);
	t_key(&k2, 3);		/* IPv6 */
	t_key(&k3, 4);
	memset(&bad, 0, sizeof(bad));	/* family 0 */
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k1), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k2), 0);
	errno = 0;
	ck_assert_ptr_null(conntab_remove_key(NULL, &k1));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(conntab_remove_key(t, NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(conntab_remove_key(t, &bad));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(conntab_remove_key(t, &k3));
	ck_assert_int_eq(errno, ENOENT);
	t_expect_counts(t, 2, 0);
	/* ESTABLISHED, then TIME_WAIT in a node of its own. */
	ck_assert_ptr_eq(conntab_remove_key(t, &k1), &c[0].node);
	ck_assert(t_lookup(t, &k1) == NULL);
	ck_assert_int_eq(conntab_remove(t, &c[0].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(t, &c[1].node, &c[2].node), 0);
	t_expect_counts(t, 1, 1);
	ck_assert_ptr_eq(conntab_remove_key(t, &k2), &c[2].node);
	t_expect_counts(t, 0, 0);
	errno = 0;
	ck_assert_ptr_null(conntab_remove_key(t, &k2));
	ck_assert_int_eq(errno, ENOENT);
	/* Inside a read-side section too, as any writer. */
	conntab_node_init(&c[0].node);	/* no reader: reuse at once */
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k1), 0);
	rcu_read_lock();
	ck_assert_ptr_eq(conntab_remove_key(t, &k1), &c[0].node);
	rcu_read_unlock();
	t_expect_counts(t, 0, 0);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(remove_many)
{
	enum { N = 1000 };
	struct conntab *t = t_table(B, 0, 0);
	static struct tconn c[N];
	struct conntab_key k;
	size_t i;

	t_conns_init(c, N);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	/* Every third first, then the rest: chains lose middles and ends. */
	for (i = 0; i < N; i += 3)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		if (i % 3)
			t_expect_found(t, &k, &c[i].node, CONNTAB_ESTABLISHED);
		else
			ck_assert(t_lookup(t, &k) == NULL);
	}
	t_expect_counts(t, N - (N + 2) / 3, 0);
	for (i = N; i-- > 0;)
		if (i % 3)
			ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	t_expect_counts(t, 0, 0);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert(t_lookup(t, &k) == NULL);
	}
	conntab_destroy(t, NULL);
}
END_TEST

/* --- timewait ------------------------------------------------------- */

START_TEST(timewait_in_place)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k;
	struct tconn c[2];

	t_conns_init(c, 2);
	t_key(&k, 3);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k), 0);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[0].node), 0);
	t_expect_found(t, &k, &c[0].node, CONNTAB_TIMEWAIT);
	t_expect_counts(t, 1, 1);
	/* Already TIME_WAIT: in place or to a new node. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[0].node), -EINVAL);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[1].node), -EINVAL);
	t_expect_found(t, &k, &c[0].node, CONNTAB_TIMEWAIT);
	t_expect_counts(t, 1, 1);
	/* The refused tw node was released. */
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k), -EEXIST);
	t_key(&k, 4);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k), 0);
	t_expect_counts(t, 2, 1);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(timewait_separate)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k, k2;
	struct tconn c[4];

	t_conns_init(c, 4);
	t_key(&k, 1);
	t_key(&k2, 2);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k), 0);
	ck_assert_int_eq(conntab_insert(t, &c[2].node, &k2), 0);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[1].node), 0);
	t_expect_found(t, &k, &c[1].node, CONNTAB_TIMEWAIT);
	ck_assert(t_key_same(conntab_node_key(&c[1].node), &k));
	t_expect_counts(t, 2, 1);
	/* est is out of the table. */
	ck_assert_int_eq(conntab_remove(t, &c[0].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[0].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[3].node), -ENOENT);
	/* ... and c[3] was released by the refusal. */
	ck_assert_int_eq(conntab_timewait(t, &c[2].node, &c[3].node), 0);
	t_expect_found(t, &k2, &c[3].node, CONNTAB_TIMEWAIT);
	t_expect_counts(t, 2, 2);
	ck_assert_int_eq(conntab_remove(t, &c[1].node), 0);
	ck_assert(t_lookup(t, &k) == NULL);
	t_expect_counts(t, 1, 1);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(timewait_errors)
{
	struct conntab *t = t_table(B, 0, 0), *u = t_table(B, 0, 0);
	struct conntab_key k1, k2, k3;
	struct tconn c[5];

	t_conns_init(c, 5);
	t_key(&k1, 1);
	t_key(&k2, 2);
	t_key(&k3, 3);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k1), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k2), 0);
	ck_assert_int_eq(conntab_insert(u, &c[2].node, &k3), 0);
	ck_assert_int_eq(conntab_timewait(NULL, &c[0].node, &c[0].node),
			 -EINVAL);
	ck_assert_int_eq(conntab_timewait(t, NULL, &c[0].node), -EINVAL);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, NULL), -EINVAL);
	/* Not in the table: never inserted, or in another one. */
	ck_assert_int_eq(conntab_timewait(t, &c[3].node, &c[3].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(t, &c[3].node, &c[4].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(t, &c[2].node, &c[2].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(t, &c[2].node, &c[4].node), -ENOENT);
	t_expect_found(u, &k3, &c[2].node, CONNTAB_ESTABLISHED);
	/* tw in a table: this one or another. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[1].node), -EBUSY);
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[2].node), -EBUSY);
	t_expect_found(t, &k1, &c[0].node, CONNTAB_ESTABLISHED);
	t_expect_found(t, &k2, &c[1].node, CONNTAB_ESTABLISHED);
	t_expect_found(u, &k3, &c[2].node, CONNTAB_ESTABLISHED);
	t_expect_counts(t, 2, 0);
	t_expect_counts(u, 1, 0);
	/* Everything still works after the refusals. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[4].node), 0);
	t_expect_found(t, &k1, &c[4].node, CONNTAB_TIMEWAIT);
	ck_assert_int_eq(conntab_timewait(u, &c[2].node, &c[3].node), 0);
	t_expect_found(u, &k3, &c[3].node, CONNTAB_TIMEWAIT);
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

/* --- writers inside a read-side critical section ------------------- */

/*
 * Writers never wait for a grace period, so they may run inside a read-side
 * critical section: a backend that waited there (synchronize_rcu to free a
 * resized array, say) would deadlock, and the watchdog would end the test.
 * Enough inserts and removes to make a growing backend resize both ways.
 */
START_TEST(writers_in_read_section)
{
	enum { N = 5000 };
	struct conntab *t = t_table(B, 0, 0);
	struct tconn **c = calloc(N, sizeof(*c)), *tw;
	struct conntab_node *rec;
	struct conntab_key k;
	size_t i;

	ck_assert_ptr_nonnull(c);
	rcu_read_lock();
	for (i = 0; i < N; i++) {
		c[i] = t_conn_new((uint32_t)i);
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i]->node, &k), 0);
	}
	for (i = 0; i < N; i += 4) {
		/* In place, then a new node recycling it, then a new tw. */
		ck_assert_int_eq(conntab_timewait(t, &c[i]->node, &c[i]->node),
				 0);
		tw = t_conn_new((uint32_t)i);
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert_recycle(t, &tw->node, &k, &rec),
				 0);
		ck_assert_ptr_eq(rec, &c[i]->node);
		t_conn_free_rcu(c[i]);
		c[i] = t_conn_new((uint32_t)i);
		ck_assert_int_eq(conntab_timewait(t, &tw->node, &c[i]->node),
				 0);
		t_conn_free_rcu(tw);
	}
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_ptr_eq(conntab_lookup(t, &k), &c[i]->node);
	}
	for (i = 0; i < N; i++) {
		ck_assert_int_eq(conntab_remove(t, &c[i]->node), 0);
		t_conn_free_rcu(c[i]);
	}
	rcu_read_unlock();
	t_expect_counts(t, 0, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
}
END_TEST

/*
 * conntab_resize_stats(): -EINVAL for NULL; zeros for the backends that
 * never resize; for exthash, grown from one segment, and the trie, whose
 * dense nodes inflate, a breakdown that adds up to
 * conntab_stats().resizes.
 */
START_TEST(resize_stats)
{
	enum { N = 5000 };
	struct conntab *t = t_table(B, 0, 0);
	struct tconn *c = calloc(N, sizeof(*c));
	struct conntab_resize_stats rs;
	struct conntab_stats st;
	struct conntab_key k;
	size_t i;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(conntab_resize_stats(NULL, &rs), -EINVAL);
	ck_assert_int_eq(conntab_resize_stats(t, NULL), -EINVAL);
	t_conns_init(c, N);
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	memset(&rs, 0xff, sizeof(rs));
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(rs.splits + rs.merges, st.resizes);
	if (B == CONNTAB_EXTHASH) {
		ck_assert_uint_gt(rs.splits, 0);
		ck_assert_uint_gt(rs.dir_slots, 1);
		ck_assert_uint_gt(rs.dir_resizes, 0);
	} else if (B == CONNTAB_TRIE) {
		/* Dense nodes inflate and halve; no directory doubling. */
		ck_assert_uint_eq(rs.dir_resizes, 0);
		ck_assert_uint_eq(rs.in_progress, 0);
	} else {
		ck_assert_uint_eq(rs.splits, 0);
		ck_assert_uint_eq(rs.merges, 0);
		ck_assert_uint_eq(rs.dir_slots, 0);
		ck_assert_uint_eq(rs.dir_resizes, 0);
		ck_assert_uint_eq(rs.in_progress, 0);
	}
	for (i = 0; i < N; i++)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(rs.splits + rs.merges, st.resizes);
	if (B == CONNTAB_EXTHASH)
		ck_assert_uint_gt(rs.merges, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();	/* c[] was in the table: no grace owed after */
	free(c);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		create_flavor, create_sizes, create_expected_max,
		insert_basic, insert_exists, insert_busy, insert_inval,
		insert_nospc, recycle,
		lookup_null, lookup_batch,
		remove_errors, remove_key, remove_many,
		timewait_in_place, timewait_separate, timewait_errors,
		writers_in_read_section, resize_stats,
	};
	Suite *s = suite_create("contract");
	TCase *tc = tcase_create("common");
	int ret;

	rcu_register_thread();
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, create_bad);
	suite_add_tcase(s, tc);
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
