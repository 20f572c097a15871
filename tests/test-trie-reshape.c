/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: fast inserts and removes at the class thresholds while
 * their sparse nodes' dense parent inflates and halves under them.
 *
 * The fast remove (lib/trie/trie-write.c, ct_t_remove_fast()) changes a
 * sparse node x under x's lock alone when x's class in its dense parent
 * d stays as it is (ct_k_class_moves()): it relies on x being unshared
 * in d, which it checks under x's lock (x and d not dead, d's slot
 * holding x), and on the one reshape that makes a kept child shared, an
 * inflation of d, locking x from before it counts x's class until d is
 * dead (ct_keep()). The fast insert takes d's slot too. A class counted
 * from a live count that a lock-alone writer changed meanwhile shows at
 * destroy: debug builds recount every dense node (ct_t_check()) and
 * abort on a difference.
 *
 * Keys 198.51.x.y (one local endpoint, ports fixed) in 64 groups a: one
 * sparse child of the root per group (key_of()). Two hover threads own
 * groups 0..7 and insert and remove keys there so that each child's
 * live count moves over and over across 4 | 5 (CT_T_KLIGHT, unshared)
 * and 8 | 9 (KLIGHT << 1: a child shared by the two slots of an inflated
 * parent). A grower fills groups 32..63 to 26 keys each (heavy: 24 or
 * more) so that the root inflates (2 * heavy >= slots), then drains them
 * so that it halves, round after round. Two keys of every group stay in
 * the table throughout; a reader looks them up all along, and after the
 * run every key must be where its owner's model says. The run must have
 * inflated and halved the root (conntab_resize_stats()), else it tested
 * nothing.
 *
 * Halvings merge slot pairs of sparse children (ct_d_merge_fast()),
 * which reads the children's counts and values under the slot locks
 * alone before it locks them: a remove under a child's lock alone only
 * lowers them, but an insert that added an entry in between (an
 * in-place insert under the child's lock alone, tried and not kept)
 * made it gather more entries than its arrays hold, and sanitizer
 * builds stopped on the index in about half the runs of this test. Run
 * it with CONNTAB_DELAY='all:0.005:sleep=50us' to widen such windows.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

#ifndef NGROUPS
#define NGROUPS		64
#endif
#define NHOVER		8	/* groups 0..7: hovering (4 per thread) */
#ifndef GROW0
#define GROW0		32	/* groups GROW0.. : grown and drained */
#endif
#define NB		256	/* key b of a group */
#define STABLE0		240	/* b = 240, 241: in the table throughout */
#define HOVER_KEYS	8	/* b = 0..7: live 2..10 */
#define GROW_KEYS	24	/* b = 16..39: live 26 */
#define RUN_MS		1500
#define MIN_ROUNDS	4

static struct conntab *table;
static int stop;
static struct tconn *node[NGROUPS][NB];	/* each key's owner's model */

/*
 * Group @a in bits 96..101 of the key string (the remote address's third
 * byte, high six bits): the root's window ends at bit 102, not on a byte
 * boundary (a short node never changes width). Key @j of the group in
 * the next ten bits: the stable keys with bit 102 set, the others clear,
 * so the group's child starts at 102, where the root ends (the fast
 * paths' shape).
 */
static void key_of(struct conntab_key *k, uint32_t a, uint32_t j)
{
	uint32_t b = j >= STABLE0 ? 0x3f0 + (j - STABLE0) : (j * 43) & 0x1ff;

	conntab_key_v4(k, IPPROTO_TCP, htonl(10u << 24 | 1), htons(443),
		       htonl(198u << 24 | 51u << 16 | a << 10 | b),
		       htons(40000));
}

static void put(uint32_t a, uint32_t b)
{
	struct conntab_key k;
	struct tconn *c = t_conn_new(a * NB + b);
	int err;

	key_of(&k, a, b);
	err = conntab_insert(table, &c->node, &k);
	if (err) {
		th_report("insert %u.%u: %d", a, b, err);
		t_conn_free_now(c);
		return;
	}
	node[a][b] = c;
}

static void take(uint32_t a, uint32_t b)
{
	struct tconn *c = node[a][b];
	int err;

	err = conntab_remove(table, &c->node);
	if (err)
		th_report("remove %u.%u: %d", a, b, err);
	node[a][b] = NULL;
	th_retire(c);
}

#define HGROUPS		4	/* groups of one hover thread */
#define NHTHREADS	(NHOVER / HGROUPS)

struct hover {
	pthread_t tid;
	uint32_t a0;		/* groups a0 .. a0 + HGROUPS - 1 */
	uint64_t rng;
	unsigned long steps;
};

/*
 * Random walk of each group's count of hover keys in [0, HOVER_KEYS],
 * nudged towards the middle so that it crosses 4 | 5 and 8 | 9 (with the
 * two stable keys: hover keys 2 | 3 and 6 | 7) often.
 */
static void *hover_main(void *arg)
{
	struct hover *h = arg;
	unsigned int have[HGROUPS] = { 0 };

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = th_rnd(&h->rng);
		uint32_t g = (uint32_t)(r % HGROUPS), a = h->a0 + g, b;
		bool add = have[g] == 0 ||
			   (have[g] < HOVER_KEYS && (r >> 4) % 2);

		/* a random key of the chosen kind (present or absent) */
		for (b = (uint32_t)((r >> 8) % HOVER_KEYS);
		     (node[a][b] != NULL) == add; b = (b + 1) % HOVER_KEYS)
			;
		if (add) {
			put(a, b);
			have[g] += node[a][b] != NULL;
		} else {
			take(a, b);
			have[g]--;
		}
		th_tick(&h->steps);
	}
	rcu_unregister_thread();
	return NULL;
}

static unsigned long grow_rounds;

static void *grower_main(void *arg)
{
	uint32_t a, b;

	(void)arg;
	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (b = 16; b < 16 + GROW_KEYS; b++)
			for (a = GROW0; a < NGROUPS; a++)
				put(a, b);
		for (b = 16; b < 16 + GROW_KEYS; b++)
			for (a = GROW0; a < NGROUPS; a++)
				if (node[a][b])
					take(a, b);
		th_tick(&grow_rounds);
	}
	rcu_unregister_thread();
	return NULL;
}

static unsigned long reads;

static void *reader_main(void *arg)
{
	struct conntab_key k;
	struct conntab_node *n;
	uint32_t a = 0, b = 0;

	(void)arg;
	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		key_of(&k, a, STABLE0 + b);
		rcu_read_lock();
		n = conntab_lookup(table, &k);
		if (n != &node[a][STABLE0 + b]->node)
			th_report("stable key %u.%u: lookup %p", a,
				  STABLE0 + b, (void *)n);
		else
			th_check_node(n, &k, a * NB + STABLE0 + b, "lookup");
		rcu_read_unlock();
		b ^= 1;
		if (!b)
			a = (a + 1) % NGROUPS;
		th_tick(&reads);
	}
	rcu_unregister_thread();
	return NULL;
}

static void release_fn(struct conntab_node *n)
{
	struct tconn *c = t_conn_of(n);
	uint32_t a = c->id / NB, b = c->id % NB;

	if (a >= NGROUPS || node[a][b] != c)
		th_report("destroy released a node no model holds");
	else
		node[a][b] = NULL;
	t_conn_free_now(c);
}

START_TEST(thresholds_under_inflate_halve)
{
	struct hover h[NHTHREADS];
	unsigned long *ctrs[NHTHREADS + 2];
	struct conntab_resize_stats rs;
	struct conntab_stats st;
	pthread_t grower, reader;
	struct conntab_key k;
	size_t i, present = 0;
	uint32_t a, b;

	th_reset();
	memset(node, 0, sizeof(node));
	stop = 0;
	grow_rounds = reads = 0;
	table = t_table(CONNTAB_TRIE, 0, 0);
	for (a = 0; a < NGROUPS; a++)
		for (b = STABLE0; b < STABLE0 + 2; b++)
			put(a, b);
	for (i = 0; i < NHTHREADS; i++) {
		h[i].a0 = (uint32_t)(HGROUPS * i);
		h[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		h[i].steps = 0;
		ck_assert_int_eq(pthread_create(&h[i].tid, NULL, hover_main,
						&h[i]), 0);
		ctrs[i] = &h[i].steps;
	}
	ck_assert_int_eq(pthread_create(&grower, NULL, grower_main, NULL), 0);
	ck_assert_int_eq(pthread_create(&reader, NULL, reader_main, NULL), 0);
	ctrs[NHTHREADS] = &grow_rounds;
	ctrs[NHTHREADS + 1] = &reads;
	th_run_for(RUN_MS, ctrs, NHTHREADS + 2, MIN_ROUNDS);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NHTHREADS; i++)
		pthread_join(h[i].tid, NULL);
	pthread_join(grower, NULL);
	pthread_join(reader, NULL);

	ck_assert_msg(th_errors() == 0, "%lu errors, first: %s", th_errors(),
		      th_first_error());
	for (a = 0; a < NGROUPS; a++)
		for (b = 0; b < NB; b++) {
			key_of(&k, a, b);
			if (node[a][b])
				present++;
			if (node[a][b])
				t_expect_found(table, &k, &node[a][b]->node,
					       CONNTAB_ESTABLISHED);
			else
				ck_assert_ptr_null(t_lookup(table, &k));
		}
	conntab_stats(table, &st);
	ck_assert_uint_eq(st.entries, present);
	conntab_resize_stats(table, &rs);
	printf("trie-reshape: %lu grow rounds, %zu inflations, %zu halvings, "
	       "%lu hover steps\n", grow_rounds, rs.splits, rs.merges,
	       h[0].steps + h[1].steps);
	ck_assert_uint_ge(rs.splits, MIN_ROUNDS);
	ck_assert_uint_ge(rs.merges, MIN_ROUNDS);
	/* Debug builds recount every dense node's classes here. */
	conntab_destroy(table, release_fn);
	rcu_barrier();
	th_quarantine_flush();
	ck_assert_msg(th_errors() == 0, "destroy: %s", th_first_error());
	for (a = 0; a < NGROUPS; a++)
		for (b = 0; b < NB; b++)
			ck_assert_ptr_null(node[a][b]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trie-reshape");
	TCase *tc = tcase_create("trie");
	int ret;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, thresholds_under_inflate_halve);
	suite_add_tcase(s, tc);
	rcu_register_thread();
	ret = t_run(s, 120);
	rcu_unregister_thread();
	return ret;
}
