/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure is an error, not a crash: with failalloc.c in this
 * program, make each allocation of conntab_create() fail in turn, then
 * make inserts meet failing allocations, and check the contract's answer
 * (NULL/ENOMEM, -ENOMEM with the table unchanged) and that the tables
 * keep working.
 */
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
	ret = t_run(s, 300);
	printf("allocations failed on purpose: %ld\n", fa_failed_total());
	rcu_unregister_thread();
	return ret;
}
