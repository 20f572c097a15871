/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure is an error, not a crash: with failalloc.c in this
 * program, make each allocation of conntab_create() fail in turn, then
 * make inserts meet failing allocations, and check the contract's answer
 * (NULL/ENOMEM, -ENOMEM with the table unchanged) and that the tables
 * keep working.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failalloc.h"
#include "helpers.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

/* Beyond this many allocations in one create, something is wrong. */
#define MAX_CREATE_ALLOCS	10000

/* A table works: insert, find, time-wait, walk, remove a few keys. */
static int count_fn(struct conntab_node *n, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

static void exercise(struct conntab *t, enum conntab_backend b)
{
	struct tconn c[40];
	struct conntab_key k;
	size_t i, n = 0;

	memset(c, 0, sizeof(c));
	for (i = 0; i < 40; i++) {
		conntab_node_init(&c[i].node);
		t_key(&k, (uint32_t)i);
		ck_assert_msg(conntab_insert(t, &c[i].node, &k) == 0, "%s",
			      conntab_backend_name(b));
	}
	ck_assert_int_eq(conntab_timewait(t, &c[3].node, &c[3].node), 0);
	rcu_read_lock();
	for (i = 0; i < 40; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_ptr_eq(conntab_lookup(t, &k), &c[i].node);
	}
	ck_assert_int_eq(conntab_walk(t, count_fn, &n), 0);
	rcu_read_unlock();
	ck_assert_uint_eq(n, 40);
	for (i = 0; i < 40; i += 2)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	/* The nodes are on the stack: nothing may see them after return. */
	conntab_destroy(t, NULL);
}

START_TEST(create_nomem)
{
	static const size_t expected[] = { 0, 5000 };
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct conntab *t;
	size_t e;
	long n, used;

	for (e = 0; e < 2; e++) {
		cfg.expected = expected[e];
		for (n = 1; n < MAX_CREATE_ALLOCS; n++) {
			fa_arm(n, 0, 0);
			errno = 0;
			t = conntab_create(&cfg);
			used = fa_disarm();
			if (!t) {
				ck_assert_msg(errno == ENOMEM,
					      "%s: create with allocation %ld "
					      "failing: errno %d", BN, n,
					      errno);
				ck_assert_msg(used >= n,
					      "%s: create failed with no "
					      "failed allocation", BN);
				continue;
			}
			/* Survived the failure (or never got that far). */
			exercise(t, B);
			if (used < n)
				break;
		}
		printf("%s: create (expected %zu) makes %ld allocations; "
		       "each failing alone tested\n", BN, expected[e], n - 1);
		ck_assert_int_lt(n, MAX_CREATE_ALLOCS);
		/* Every allocation failing. */
		fa_arm(1, 1, 0);
		errno = 0;
		t = conntab_create(&cfg);
		fa_disarm();
		if (t)
			exercise(t, B);	/* a create that needs no memory */
		else
			ck_assert_int_eq(errno, ENOMEM);
	}
}
END_TEST

START_TEST(insert_nomem)
{
	enum { N = 3000 };
	struct conntab *t = t_table(B, 0, 0);
	struct tconn **c = calloc(N, sizeof(*c));
	struct conntab_stats st;
	struct conntab_key k;
	size_t i, in = 0, nomem = 0, tw = 0;
	int err, every;

	ck_assert_ptr_nonnull(c);
	for (i = 0; i < N; i++)
		c[i] = t_conn_new((uint32_t)i);
	/* Growing table; every 'every'-th allocation of the library fails. */
	for (i = 0; i < N; i++) {
		every = 1 + (int)(i % 4);
		t_key(&k, (uint32_t)i);
		fa_arm(every, 0, 1);
		err = conntab_insert(t, &c[i]->node, &k);
		fa_disarm();
		ck_assert_msg(err == 0 || err == -ENOMEM, "%s: insert %zu: %d",
			      BN, i, err);
		if (err) {
			nomem++;
			/* Table unchanged, node released: retry works. */
			rcu_read_lock();
			ck_assert_ptr_null(conntab_lookup(t, &k));
			rcu_read_unlock();
			err = conntab_insert(t, &c[i]->node, &k);
			ck_assert_int_eq(err, 0);
		}
		in++;
	}
	printf("%s: %zu inserts, %zu of them got -ENOMEM and were retried\n",
	       BN, in, nomem);
	/*
	 * No allocation succeeds: writers that need none still work. Check
	 * allocates in every assertion, so results are kept and checked
	 * once the failures are off.
	 */
	fa_arm(1, 1, 1);
	for (i = 0; i < N; i += 3) {
		err = conntab_timewait(t, &c[i]->node, &c[i]->node);
		if (err)
			break;
		tw++;
	}
	fa_disarm();
	ck_assert_msg(err == 0, "%s: timewait under ENOMEM: %d", BN, err);
	fa_arm(1, 1, 1);
	rcu_read_lock();
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		if (conntab_lookup(t, &k) != &c[i]->node)
			break;
	}
	rcu_read_unlock();
	fa_disarm();
	ck_assert_msg(i == N, "%s: lookup %zu under ENOMEM", BN, i);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, N);
	ck_assert_uint_eq(st.timewait, tw);
	/* Removal must not need memory (it cannot report ENOMEM). */
	fa_arm(1, 1, 1);
	for (i = 0; i < N; i += 2) {
		err = conntab_remove(t, &c[i]->node);
		if (err)
			break;
	}
	fa_disarm();
	ck_assert_msg(err == 0, "%s: remove %zu under ENOMEM: %d", BN, i, err);
	/* Inserts under ENOMEM: 0 or -ENOMEM, nothing else changes. */
	synchronize_rcu();	/* the removed nodes: wait, then reuse */
	for (i = 0; i < N; i += 2) {
		conntab_node_init(&c[i]->node);
		t_key(&k, (uint32_t)i);
		fa_arm(1, 1, 1);
		err = conntab_insert(t, &c[i]->node, &k);
		fa_disarm();
		ck_assert_msg(err == 0 || err == -ENOMEM, "%s: insert %zu: %d",
			      BN, i, err);
		if (!err) {
			ck_assert_int_eq(conntab_remove(t, &c[i]->node), 0);
			synchronize_rcu();
		}
		if (i > 400)
			break;
	}
	fa_disarm();
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, N - (N + 1) / 2);
	rcu_read_lock();
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_ptr_eq(conntab_lookup(t, &k),
				 i % 2 ? &c[i]->node : NULL);
	}
	rcu_read_unlock();
	conntab_destroy(t, NULL);
	/* Removed nodes may still be seen by... no one here: free them. */
	for (i = 0; i < N; i++)
		t_conn_free_now(c[i]);
	free(c);
}
END_TEST

/*
 * CONNTAB_TRIE: writers whose reshaping needs memory, each allocation
 * failing in turn (alone, then with all later ones): a remove never
 * fails, an insert is 0 or -ENOMEM with the table unchanged; then every
 * key is looked up and the table destroyed (the sanitizer build runs
 * this under ASan: a node freed while still linked shows there).
 */

/* An IPv4 key of one local endpoint: the trie branches on @raddr first. */
static void tk(struct conntab_key *k, uint32_t raddr, uint16_t rport)
{
	conntab_key_v4(k, IPPROTO_TCP, htonl(0x0a000001), htons(443),
		       htonl(raddr), htons(rport));
}

/* The nodes of a trie test: every one ever inserted, in order. */
struct tset {
	struct tconn **c;
	size_t n, cap;
	uint64_t rng;
};

static struct tconn *tset_add(struct tset *ts, struct conntab *t,
			      const struct conntab_key *k)
{
	struct tconn *c = t_conn_new((uint32_t)ts->n);

	if (conntab_insert(t, &c->node, k)) {
		t_conn_free_now(c);	/* a repeated random key */
		return NULL;
	}
	if (ts->n == ts->cap) {
		ts->cap = ts->cap ? 2 * ts->cap : 1024;
		ts->c = realloc(ts->c, ts->cap * sizeof(*ts->c));
		ck_assert_ptr_nonnull(ts->c);
	}
	ts->c[ts->n++] = c;
	return c;
}

static uint64_t tset_rnd(struct tset *ts)
{
	ts->rng ^= ts->rng >> 12;
	ts->rng ^= ts->rng << 25;
	ts->rng ^= ts->rng >> 27;
	return ts->rng * 0x2545f4914f6cdd1dull;
}

/* @n random keys whose remote address does not start with bits 11. */
static void tset_bulk(struct tset *ts, struct conntab *t, size_t n)
{
	struct conntab_key k;
	uint64_t r;
	size_t i;

	for (i = 0; i < n; i++) {
		do
			r = tset_rnd(ts);
		while ((uint32_t)r >> 30 == 3);
		tk(&k, (uint32_t)r, (uint16_t)(r >> 32));
		tset_add(ts, t, &k);
	}
}

static unsigned int root_w(struct conntab *t)
{
	struct conntab_resize_stats rs;
	unsigned int w = 0;

	conntab_resize_stats(t, &rs);
	while (((size_t)1 << w) < rs.dir_slots)
		w++;
	return w;
}

/*
 * Every node of @ts in @t is found, none removed is (a node whose
 * magic is dead was removed and freed), and the counts agree.
 */
static void tset_check(struct tset *ts, struct conntab *t, const char *what)
{
	struct conntab_stats st;
	struct conntab_node *f;
	size_t i, in = 0;

	rcu_read_lock();
	for (i = 0; i < ts->n; i++) {
		struct tconn *c = ts->c[i];

		if (!c)
			continue;
		f = conntab_lookup(t, conntab_node_key(&c->node));
		ck_assert_msg(f == &c->node, "%s: key %zu: lookup %p, not %p",
			      what, i, (void *)f, (void *)&c->node);
		in++;
	}
	rcu_read_unlock();
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, in);
}

/* Remove node @i of @ts (it is in), and free it after a grace period. */
static void tset_remove(struct tset *ts, struct conntab *t, size_t i)
{
	ck_assert_int_eq(conntab_remove(t, &ts->c[i]->node), 0);
	t_conn_free_rcu(ts->c[i]);
	ts->c[i] = NULL;
}

static void release_conn(struct conntab_node *n)
{
	t_conn_free_now(t_conn_of(n));
}

static void tset_destroy(struct tset *ts, struct conntab *t)
{
	conntab_destroy(t, release_conn);
	rcu_barrier();
	free(ts->c);
	ts->c = NULL;
	ts->n = ts->cap = 0;	/* the random stream goes on */
}

/*
 * Retired nodes go to call_rcu in batches (lib/trie-mem.c): churn
 * elsewhere retires enough of them, and the grace period ends, so that a
 * node retired while still linked is freed before the lookups.
 */
static void tset_flush(struct tset *ts, struct conntab *t)
{
	struct conntab_key k;
	size_t i, first = ts->n;

	for (i = 0; i < 2048; i++) {
		tk(&k, 0x20000000u | (uint32_t)i << 4, 1);
		ck_assert_ptr_nonnull(tset_add(ts, t, &k));
	}
	for (i = first; i < ts->n; i++)
		tset_remove(ts, t, i);
	rcu_barrier();
}

/*
 * A remove that cuts a shared sparse node of one entry in pieces over
 * more than 64 slots. Under the root, a dense node over the remote
 * address, K1 and K2 share a sparse node x that starts at the root's
 * end and parts them at its last bit; then the root inflates 7 times,
 * never cutting x, so x fills 2^7 of its slots. K1's remove leaves x
 * one entry: each slot gets its piece, K2 or nothing. (At e8b2d6f that
 * took an array of pieces from calloc() for over 64 slots, and on its
 * failure the remove retired x, still linked: a use after free, and a
 * double free at destroy.)
 */
START_TEST(trie_unshare_nomem)
{
	struct tset ts = { .rng = 88172645463325252ull };
	struct conntab_key k1, k2;
	struct tconn *c1, *c2;
	struct conntab *t;
	unsigned int w0, w, xend, bit, sticky;
	long n, used;
	int err;

	for (sticky = 0; sticky < 2; sticky++)
	for (n = 1;; n++) {
		t = t_table(CONNTAB_TRIE, 0, 0);
		while (root_w(t) < 2)
			tset_bulk(&ts, t, 16);
		w0 = root_w(t);
		xend = (80 + w0 + 16) & ~7u;	/* x: [80 + w0, xend) */
		bit = xend - 1;
		ck_assert_uint_lt(bit, 112);	/* in the remote address */
		tk(&k1, 0xc0000000u, 7);
		tk(&k2, 0xc0000000u | 1u << (31 - (bit - 80)), 7);
		c1 = tset_add(&ts, t, &k1);
		c2 = tset_add(&ts, t, &k2);
		ck_assert_ptr_nonnull(c1);
		ck_assert_ptr_nonnull(c2);
		while ((w = root_w(t)) < w0 + 7) {
			ck_assert_uint_lt(80 + w + 4, xend);	/* x whole */
			tset_bulk(&ts, t, 512);
		}
		/* Check allocates: nothing of it while armed. */
		fa_arm(n, (int)sticky, 0);
		err = conntab_remove(t, &c1->node);
		used = fa_disarm();
		ck_assert_int_eq(err, 0);
		t_conn_free_rcu(c1);
		ts.c[c1->id] = NULL;
		tset_flush(&ts, t);
		tset_check(&ts, t, "K1 removed");
		ck_assert_ptr_eq(t_lookup(t, &k2), &c2->node);
		ck_assert_ptr_null(t_lookup(t, &k1));
		tset_destroy(&ts, t);
		if (used < n)
			break;
	}
	printf("trie: removing one of two keys from a node shared by 2^7 "
	       "slots makes %ld allocations; each failing tested\n", used);
}
END_TEST

static void warm_up_cb(struct rcu_head *rh)
{
}

int main(void)
{
	const TTest *const per_backend[] = { create_nomem, insert_nomem };
	Suite *s = suite_create("alloc");
	static struct rcu_head rh;
	int ret;

	rcu_register_thread();
	/*
	 * liburcu allocates its call_rcu worker on first use and dies if it
	 * cannot: start it before any failure is armed.
	 */
	call_rcu(&rh, warm_up_cb);
	rcu_barrier();
	t_add_backend_cases(s, per_backend, 2, 60);
	if (conntab_backend_available(CONNTAB_TRIE)) {
		TCase *tc = tcase_create("trie-nomem");

		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, trie_unshare_nomem);
		suite_add_tcase(s, tc);
	}
	ret = t_run(s, 300);
	printf("allocations failed on purpose: %ld\n", fa_failed_total());
	rcu_unregister_thread();
	return ret;
}
