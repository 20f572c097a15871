/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hashed operations (design/API.md, "Additions: hashed operations";
 * conntab_lookup_hashed(3)): conntab_hash(), conntab_prefetch(),
 * conntab_lookup_hashed(), conntab_insert_hashed(). With the right hash
 * they are the plain calls; a wrong hash never finds another key's node
 * and is never linked (the table, its walks and its lookups unchanged);
 * -EEXIST hands back the node that holds the key, also to the loser of
 * a race between two inserters, and with a remover in the race, a node
 * of that key. Every backend and hash (one TCase each).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define B		((enum conntab_backend)_i)

/* Keys in the table; every test's keys are t_key(0..NKEYS-1). */
#define NKEYS		1500
/* Keys never inserted (t_key(ABSENT + i)). */
#define ABSENT		(1u << 22)

static uint64_t th_hash(struct conntab *t, uint32_t id)
{
	struct conntab_key k;

	t_key(&k, id);
	return conntab_hash(t, &k);
}

/* A table holding t_key(i) at c[i] for i < NKEYS, inserted hashed. */
static struct conntab *th_filled(enum conntab_backend b, struct tconn *c)
{
	struct conntab *t = t_table(b, 0, 0);
	struct conntab_node *x;
	struct conntab_key k;
	uint32_t i;

	t_conns_init(c, NKEYS);
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, i);
		x = (struct conntab_node *)&c[0];	/* must become NULL */
		ck_assert_int_eq(conntab_insert_hashed(t, &c[i].node, &k,
						       conntab_hash(t, &k), &x),
				 0);
		ck_assert_ptr_null(x);
	}
	return t;
}

/* Each node of the table visited once: c[i].count for node i. */
static int th_count_fn(struct conntab_node *n, void *arg)
{
	(void)arg;
	t_conn_of(n)->count++;
	return 0;
}

/* The table holds exactly c[0..NKEYS), each found and walked once. */
static void th_expect_intact(struct conntab *t, struct tconn *c)
{
	struct conntab_key k;
	uint32_t i;

	for (i = 0; i < NKEYS; i++)
		c[i].count = 0;
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(t, th_count_fn, NULL), 0);
	for (i = 0; i < NKEYS; i++) {
		ck_assert_uint_eq(c[i].count, 1);
		t_key(&k, i);
		ck_assert_ptr_eq(conntab_lookup(t, &k), &c[i].node);
		ck_assert_ptr_eq(conntab_lookup_hashed(t, &k,
						       conntab_hash(t, &k)),
				 &c[i].node);
	}
	rcu_read_unlock();
	t_expect_counts(t, NKEYS, 0);
}

/* The right hash: the plain calls' results, a hash per table. */
START_TEST(hashed_equal)
{
	struct tconn *c = malloc(NKEYS * sizeof(*c));
	struct conntab *t, *t2;
	struct conntab_key k;
	uint64_t h;
	uint32_t i, same = 0, zero = 0;

	ck_assert_ptr_nonnull(c);
	t = th_filled(B, c);
	t2 = t_table(B, 0, 0);
	th_expect_intact(t, c);
	rcu_read_lock();
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, i);
		h = conntab_hash(t, &k);
		/* A function of the key: the same every time. */
		ck_assert_uint_eq(conntab_hash(t, &k), h);
		zero += h == 0;
		same += conntab_hash(t2, &k) == h;
		conntab_prefetch(t, h);
		ck_assert_ptr_eq(conntab_lookup_hashed(t, &k, h),
				 conntab_lookup(t, &k));
		t_key(&k, ABSENT + i);
		h = conntab_hash(t, &k);
		conntab_prefetch(t, h);
		ck_assert_ptr_null(conntab_lookup_hashed(t, &k, h));
	}
	rcu_read_unlock();
	if (B == CONNTAB_TRIE) {
		ck_assert_uint_eq(zero, NKEYS);
	} else {
		/* 32 bits of a keyed PRF: a handful of collisions at most. */
		ck_assert_uint_lt(zero, 4);
		ck_assert_uint_lt(same, 4);
	}
	conntab_destroy(t2, NULL);
	conntab_destroy(t, NULL);
	free(c);
}
END_TEST

/*
 * Wrong hashes for present and absent keys: the hashes of other present
 * keys (which lead into their buckets, to their nodes), every one-bit
 * change, bits above 32, 0 and all ones. A lookup finds the key's own
 * node or nothing, never another; prefetching any of them is harmless.
 */
START_TEST(hashed_wrong_lookup)
{
	struct tconn *c = malloc(NKEYS * sizeof(*c));
	struct conntab_node *n;
	struct conntab_key k;
	struct conntab *t;
	uint64_t h, w, *hs = malloc(NKEYS * sizeof(*hs));
	uint32_t i, j, misses = 0, tries = 0;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(hs);
	t = th_filled(B, c);
	for (i = 0; i < NKEYS; i++)
		hs[i] = th_hash(t, i);
	rcu_read_lock();
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, i);
		h = hs[i];
		for (j = 0; j < 64 + 64 + 3; j++) {
			if (j < 64)
				w = hs[(i + 1 + j * 23) % NKEYS];
			else if (j < 128)
				w = h ^ ((uint64_t)1 << (j - 64));
			else
				w = j == 128 ? 0 : j == 129 ? ~(uint64_t)0 :
				    h + 1;
			conntab_prefetch(t, w);
			n = conntab_lookup_hashed(t, &k, w);
			ck_assert_msg(!n || n == &c[i].node,
				      "key %u, hash %#llx: node of key %u",
				      i, (unsigned long long)w,
				      n ? t_conn_of(n)->id : 0);
			tries++;
			misses += !n;
			/* An absent key finds nothing with any hash. */
			t_key(&k, ABSENT + i);
			ck_assert_ptr_null(conntab_lookup_hashed(t, &k, w));
			t_key(&k, i);
		}
	}
	rcu_read_unlock();
	if (B == CONNTAB_TRIE)
		ck_assert_uint_eq(misses, 0);	/* the hash is ignored */
	else
		/* A hash is wrong in its low 32 bits but for j >= 96. */
		ck_assert_uint_ge(misses, tries / 2);
	th_expect_intact(t, c);
	conntab_destroy(t, NULL);
	free(hs);
	free(c);
}
END_TEST

/*
 * Inserts under wrong hashes: refused, the table and the node unchanged
 * (the node goes in afterwards with the right hash), the key never in
 * twice, even when it is present already. The trie ignores the hash.
 */
START_TEST(hashed_wrong_insert)
{
	struct tconn *c = malloc(NKEYS * sizeof(*c));
	struct tconn *d = malloc(NKEYS * sizeof(*d));
	struct conntab_node *x;
	struct conntab_key k;
	struct conntab *t;
	uint64_t h, w;
	uint32_t i, j;
	int err;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(d);
	t = th_filled(B, c);
	t_conns_init(d, NKEYS);
	if (B == CONNTAB_TRIE) {
		/* Any hash: the key decides. */
		t_key(&k, ABSENT);
		ck_assert_int_eq(conntab_insert_hashed(t, &d[0].node, &k,
						       12345, NULL), 0);
		ck_assert_ptr_eq(t_lookup(t, &k), &d[0].node);
		t_key(&k, 0);
		ck_assert_int_eq(conntab_insert_hashed(t, &d[1].node, &k,
						       99, &x), -EEXIST);
		ck_assert_ptr_eq(x, &c[0].node);
		conntab_destroy(t, NULL);
		free(d);
		free(c);
		return;
	}
	for (i = 0; i < 200; i++) {
		/* Present keys (i < NKEYS) and absent ones. */
		t_key(&k, i % 2 ? i : ABSENT + i);
		h = conntab_hash(t, &k);
		for (j = 0; j < 40; j++) {
			if (j < 32)
				w = h ^ ((uint64_t)1 << j);
			else if (j < 38)
				w = th_hash(t, (i * 7 + j) % NKEYS);
			else
				w = j == 38 ? h | (uint64_t)1 << 40 : h + 1;
			if (w == h)
				continue;
			x = &c[0].node;
			err = conntab_insert_hashed(t, &d[i].node, &k, w, &x);
			ck_assert_msg(err == -EINVAL,
				      "key %u, hash %#llx (right %#llx): %d",
				      i, (unsigned long long)w,
				      (unsigned long long)h, err);
			ck_assert_ptr_null(x);
		}
	}
	th_expect_intact(t, c);
	/* The refused nodes were left as they were: they go in now. */
	for (i = 0; i < 200; i += 2) {
		t_key(&k, ABSENT + i);
		ck_assert_int_eq(conntab_insert_hashed(t, &d[i].node, &k,
						       conntab_hash(t, &k),
						       NULL), 0);
		ck_assert_ptr_eq(t_lookup(t, &k), &d[i].node);
	}
	t_expect_counts(t, NKEYS + 100, 0);
	conntab_destroy(t, NULL);
	free(d);
	free(c);
}
END_TEST

/* -EEXIST hands back the node of the key, in either state. */
START_TEST(hashed_exists)
{
	struct conntab *t = t_table(B, 0, 3);
	struct conntab_node *x;
	struct conntab_key k, k2, k3;
	struct tconn c[6];
	uint64_t h;

	t_conns_init(c, 6);
	t_key(&k, 1);
	t_key(&k2, 2);
	t_key(&k3, 3);
	h = conntab_hash(t, &k);
	ck_assert_int_eq(conntab_insert_hashed(t, &c[0].node, &k, h, NULL), 0);
	rcu_read_lock();
	x = NULL;
	ck_assert_int_eq(conntab_insert_hashed(t, &c[1].node, &k, h, &x),
			 -EEXIST);
	ck_assert_ptr_eq(x, &c[0].node);
	ck_assert(t_key_same(conntab_node_key(x), &k));
	/* Without @existing: -EEXIST all the same. */
	ck_assert_int_eq(conntab_insert_hashed(t, &c[1].node, &k, h, NULL),
			 -EEXIST);
	/* TIME_WAIT: the time-wait node is what holds the key. */
	ck_assert_int_eq(conntab_timewait(t, &c[0].node, &c[2].node), 0);
	ck_assert_int_eq(conntab_insert_hashed(t, &c[1].node, &k, h, &x),
			 -EEXIST);
	ck_assert_ptr_eq(x, &c[2].node);
	ck_assert_int_eq(conntab_node_state(x), CONNTAB_TIMEWAIT);
	/* A node in a table: -EBUSY, no node handed back. */
	x = &c[5].node;
	ck_assert_int_eq(conntab_insert_hashed(t, &c[2].node, &k2,
					       conntab_hash(t, &k2), &x),
			 -EBUSY);
	ck_assert_ptr_null(x);
	rcu_read_unlock();
	/* The cap (3): the third entry goes in, the fourth is -ENOSPC. */
	ck_assert_int_eq(conntab_insert_hashed(t, &c[3].node, &k2,
					       conntab_hash(t, &k2), NULL), 0);
	ck_assert_int_eq(conntab_insert_hashed(t, &c[4].node, &k3,
					       conntab_hash(t, &k3), NULL), 0);
	t_key(&k3, 4);
	x = &c[5].node;
	ck_assert_int_eq(conntab_insert_hashed(t, &c[5].node, &k3,
					       conntab_hash(t, &k3), &x),
			 -ENOSPC);
	ck_assert_ptr_null(x);
	t_expect_counts(t, 3, 1);
	/* Removed: the key goes in again, no node handed back. */
	ck_assert_ptr_eq(conntab_remove_key(t, &k), &c[2].node);
	synchronize_rcu();
	t_conns_init(c, 2);
	x = &c[5].node;
	ck_assert_int_eq(conntab_insert_hashed(t, &c[1].node, &k, h, &x), 0);
	ck_assert_ptr_null(x);
	ck_assert_ptr_eq(t_lookup(t, &k), &c[1].node);
	conntab_destroy(t, NULL);
}
END_TEST

/* NULL arguments and malformed keys; the table untouched. */
START_TEST(hashed_inval)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k, bad;
	struct conntab_node *x;
	struct tconn c[2];
	uint64_t h;

	t_conns_init(c, 2);
	t_key(&k, 7);
	h = conntab_hash(t, &k);
	bad = k;
	bad.family = 99;
	errno = 0;
	ck_assert_uint_eq(conntab_hash(NULL, &k), 0);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_uint_eq(conntab_hash(t, NULL), 0);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_uint_eq(conntab_hash(t, &bad), 0);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	conntab_hash(t, &k);
	ck_assert_int_eq(errno, 0);	/* a success leaves errno alone */
	conntab_prefetch(NULL, h);
	rcu_read_lock();
	ck_assert_ptr_null(conntab_lookup_hashed(NULL, &k, h));
	ck_assert_ptr_null(conntab_lookup_hashed(t, NULL, h));
	rcu_read_unlock();
	x = &c[1].node;
	ck_assert_int_eq(conntab_insert_hashed(NULL, &c[0].node, &k, h, &x),
			 -EINVAL);
	ck_assert_ptr_null(x);
	ck_assert_int_eq(conntab_insert_hashed(t, NULL, &k, h, NULL), -EINVAL);
	ck_assert_int_eq(conntab_insert_hashed(t, &c[0].node, NULL, h, NULL),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_hashed(t, &c[0].node, &bad, h, NULL),
			 -EINVAL);
	t_expect_counts(t, 0, 0);
	ck_assert_ptr_null(t_lookup(t, &k));
	/* The node was never claimed. */
	ck_assert_int_eq(conntab_insert_hashed(t, &c[0].node, &k, h, NULL), 0);
	ck_assert_ptr_eq(t_lookup(t, &k), &c[0].node);
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * Two inserters race on the same keys, each key once per round, inside
 * the read lock; with RACE_REMOVER a third thread removes the keys as
 * they go in. Without it every key has one winner and every loser is
 * handed the winner's node. With it the loser's node is one of the
 * key's (never another key's), alive while the loser reads it.
 */
#define RACE_KEYS	2000
#define RACE_ROUNDS	4

struct th_race {
	struct conntab *t;
	pthread_barrier_t *bar;
	struct tconn *mine;			/* [RACE_ROUNDS * RACE_KEYS] */
	struct tconn *other;			/* the other inserter's */
	struct conntab_node **got;		/* [... ]: what it ended with */
	int remover;
	unsigned long errors, eexist, removed;
};

static void *th_race_insert(void *arg)
{
	struct th_race *r = arg;
	struct conntab_node *x;
	struct conntab_key k;
	uint32_t round, i, id;
	uint64_t h;
	int err;

	rcu_register_thread();
	for (round = 0; round < RACE_ROUNDS; round++) {
		pthread_barrier_wait(r->bar);
		for (i = 0; i < RACE_KEYS; i++) {
			id = round * RACE_KEYS + i;
			t_key(&k, id);
			h = conntab_hash(r->t, &k);
			rcu_read_lock();
			err = conntab_insert_hashed(r->t, &r->mine[id].node,
						    &k, h, &x);
			if (!err) {
				r->got[id] = &r->mine[id].node;
			} else if (err == -EEXIST) {
				r->eexist++;
				r->got[id] = x;
				if (x != &r->other[id].node &&
				    x != &r->mine[id].node)
					r->errors++;
				else if (!t_key_same(conntab_node_key(x), &k))
					r->errors++;
			} else {
				r->errors++;
			}
			rcu_read_unlock();
		}
	}
	rcu_unregister_thread();
	return NULL;
}

static void *th_race_remove(void *arg)
{
	struct th_race *r = arg;
	struct conntab_key k;
	uint32_t round, i, id;

	rcu_register_thread();
	for (round = 0; round < RACE_ROUNDS; round++) {
		pthread_barrier_wait(r->bar);
		/* Twice over the round's keys: some are in by then. */
		for (i = 0; i < 2 * RACE_KEYS; i++) {
			id = round * RACE_KEYS + i % RACE_KEYS;
			t_key(&k, id);
			/* The nodes stay allocated to the end: no free. */
			r->removed += conntab_remove_key(r->t, &k) != NULL;
		}
	}
	rcu_unregister_thread();
	return NULL;
}

static void th_race(enum conntab_backend b, int remover)
{
	const size_t n = RACE_ROUNDS * RACE_KEYS;
	struct conntab *t = t_table(b, 0, 0);
	struct th_race r[3];
	pthread_barrier_t bar;
	pthread_t th[3];
	struct tconn *c[2];
	struct conntab_key k;
	size_t i, j, nth = remover ? 3 : 2;
	unsigned long eexist = 0;

	ck_assert_int_eq(pthread_barrier_init(&bar, NULL, (unsigned int)nth),
			 0);
	for (j = 0; j < 2; j++) {
		c[j] = malloc(n * sizeof(*c[j]));
		ck_assert_ptr_nonnull(c[j]);
		t_conns_init(c[j], n);
	}
	for (j = 0; j < nth; j++) {
		r[j] = (struct th_race){ .t = t, .bar = &bar,
					 .mine = c[j % 2],
					 .other = c[(j + 1) % 2],
					 .got = calloc(n, sizeof(void *)),
					 .remover = j == 2 };
		ck_assert_ptr_nonnull(r[j].got);
		ck_assert_int_eq(pthread_create(&th[j], NULL,
						r[j].remover ? th_race_remove :
							       th_race_insert,
						&r[j]), 0);
	}
	for (j = 0; j < nth; j++)
		pthread_join(th[j], NULL);
	for (j = 0; j < 2; j++) {
		ck_assert_uint_eq(r[j].errors, 0);
		eexist += r[j].eexist;
	}
	if (!remover) {
		/* One winner per key, one loser. */
		ck_assert_uint_eq(eexist, n);
		for (i = 0; i < n; i++) {
			/* Both ended with the same node: the winner's. */
			ck_assert_ptr_nonnull(r[0].got[i]);
			ck_assert_ptr_eq(r[0].got[i], r[1].got[i]);
			t_key(&k, (uint32_t)i);
			ck_assert_ptr_eq(t_lookup(t, &k), r[0].got[i]);
		}
		t_expect_counts(t, n, 0);
	} else {
		/*
		 * A key is in at most once at a time: a second success on it
		 * needs a removal in between. What is left is the difference.
		 */
		ck_assert_uint_le(2 * n - eexist, n + r[2].removed);
		t_expect_counts(t, 2 * n - eexist - r[2].removed, 0);
	}
	conntab_destroy(t, NULL);
	rcu_barrier();
	for (j = 0; j < nth; j++)
		free(r[j].got);
	free(c[0]);
	free(c[1]);
	pthread_barrier_destroy(&bar);
}

START_TEST(hashed_race)
{
	th_race(B, 0);
}
END_TEST

START_TEST(hashed_race_remove)
{
	th_race(B, 1);
}
END_TEST

int main(void)
{
	const TTest *const fns[] = {
		hashed_equal, hashed_wrong_lookup, hashed_wrong_insert,
		hashed_exists, hashed_inval, hashed_race, hashed_race_remove,
	};
	Suite *s = suite_create("hashed");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, fns, sizeof(fns) / sizeof(fns[0]), 120);
	ret = t_run(s, 600);
	rcu_unregister_thread();
	return ret;
}
