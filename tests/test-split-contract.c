/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Single-threaded contract smoke test, run for CONNTAB_SPLIT and, as the
 * reference it must agree with, CONNTAB_CHAINED: insert, both kinds of
 * time-wait, recycle, lookup and batch lookup, remove, walks (all and per
 * state, including an expiry sweep and chains longer than the split walk's
 * stack snapshot), stats, the max_entries cap, bad arguments, destroy.
 *
 * The concurrent guarantees of split are in test-split-move.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>
#include <conntab/conntab.h>

static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: %s: check failed: %s\n",	\
			__FILE__, __LINE__, cur_backend, #cond);	\
		failures++;						\
	}								\
} while (0)

static const char *cur_backend;

struct conn {
	struct conntab_node node;
	int id;
	int visits;
};

#define N	5000	/* in a 64-bucket table: chains of ~80 */

static struct conn conns[N], tws[N], fresh[N];

static void mkkey(struct conntab_key *k, int i)
{
	if (i % 7 == 3) {
		struct in6_addr l = IN6ADDR_LOOPBACK_INIT, r = { { { 0x20, 0x01,
			0x0d, 0xb8 } } };

		r.s6_addr[15] = (uint8_t)i;
		r.s6_addr[14] = (uint8_t)(i >> 8);
		conntab_key_v6(k, IPPROTO_TCP, &l, htons(443), &r,
			       htons((uint16_t)(1024 + i)));
	} else {
		conntab_key_v4(k, IPPROTO_TCP, htonl(0xc0000201), htons(80),
			       htonl(0xc6336400 + (uint32_t)i),
			       htons((uint16_t)(40000 + i)));
	}
}

static int count_fn(struct conntab_node *n, void *arg)
{
	struct conn *c = conntab_entry(n, struct conn, node);

	c->visits++;
	(*(size_t *)arg)++;
	return 0;
}

static int stop_fn(struct conntab_node *n, void *arg)
{
	return ++*(int *)arg == 10 ? 42 : 0;
}

/* Expiry sweep: remove every node the walk gives us. */
static int expire_fn(struct conntab_node *n, void *arg)
{
	struct conntab *t = arg;

	return conntab_remove(t, n);
}

static size_t released;

static void release_fn(struct conntab_node *n)
{
	released++;
}

static size_t walk_count(struct conntab *t, int state)
{
	size_t cnt = 0;
	int r;

	rcu_read_lock();
	if (state < 0)
		r = conntab_walk(t, count_fn, &cnt);
	else
		r = conntab_walk_state(t, (enum conntab_state)state, count_fn,
				       &cnt);
	rcu_read_unlock();
	CHECK(r == 0);
	return cnt;
}

static void reset_visits(void)
{
	int i;

	for (i = 0; i < N; i++)
		conns[i].visits = tws[i].visits = fresh[i].visits = 0;
}

static void test_backend(enum conntab_backend be)
{
	struct conntab_config cfg = { .backend = be };
	struct conntab_node *out[64], *rec;
	struct conntab_key k, keys[64];
	struct conntab_stats st;
	struct conntab *t;
	size_t ntw = 0, i, found;
	int stop = 0;

	cur_backend = conntab_backend_name(be);
	memset(conns, 0, sizeof(conns));
	memset(tws, 0, sizeof(tws));
	memset(fresh, 0, sizeof(fresh));

	t = conntab_create(&cfg);
	CHECK(t != NULL);
	if (!t)
		return;
	conntab_stats(t, &st);
	/* A line of slots a bucket, 4 nodes a line at the hint. */
	CHECK(st.entries == 0 && st.memory > 0 && st.buckets == 16u);

	for (i = 0; i < N; i++) {
		conntab_node_init(&conns[i].node);
		conns[i].id = (int)i;
		mkkey(&k, (int)i);
		CHECK(conntab_insert(t, &conns[i].node, &k) == 0);
	}
	mkkey(&k, 1);
	CHECK(conntab_insert(t, &fresh[1].node, &k) == -EEXIST);
	CHECK(conntab_insert(t, &conns[2].node, &k) == -EBUSY);

	rcu_read_lock();
	for (i = 0; i < N; i++) {
		mkkey(&k, (int)i);
		CHECK(conntab_lookup(t, &k) == &conns[i].node);
	}
	mkkey(&k, N + 1);
	CHECK(conntab_lookup(t, &k) == NULL);
	rcu_read_unlock();

	/* Time-wait: in place for even ids, via a tw node for i % 4 == 1. */
	for (i = 0; i < N; i++) {
		if (i % 2 == 0) {
			CHECK(conntab_timewait(t, &conns[i].node,
					       &conns[i].node) == 0);
			ntw++;
		} else if (i % 4 == 1) {
			conntab_node_init(&tws[i].node);
			tws[i].id = (int)i;
			CHECK(conntab_timewait(t, &conns[i].node,
					       &tws[i].node) == 0);
			ntw++;
		}
	}
	CHECK(conntab_timewait(t, &conns[0].node, &conns[0].node) == -EINVAL);
	CHECK(conntab_timewait(t, &conns[1].node, &conns[1].node) == -ENOENT);
	CHECK(conntab_timewait(t, &conns[3].node, &conns[7].node) == -EBUSY);
	CHECK(conntab_timewait(t, &fresh[0].node, &fresh[0].node) == -ENOENT);

	rcu_read_lock();
	for (i = 0; i < N; i++) {
		struct conntab_node *n;

		mkkey(&k, (int)i);
		n = conntab_lookup(t, &k);
		if (i % 2 == 0)
			CHECK(n == &conns[i].node);
		else if (i % 4 == 1)
			CHECK(n == &tws[i].node);
		else
			CHECK(n == &conns[i].node);
		CHECK(n && conntab_node_state(n) ==
		      (i % 4 == 3 ? CONNTAB_ESTABLISHED : CONNTAB_TIMEWAIT));
		CHECK(n && !memcmp(conntab_node_key(n), &k, sizeof(k)));
	}
	rcu_read_unlock();

	conntab_stats(t, &st);
	CHECK(st.entries == N && st.timewait == ntw);
	CHECK(st.max_depth >= N / 2 / 64);

	/* Every node once; per state only that state's. */
	reset_visits();
	CHECK(walk_count(t, -1) == N);
	for (i = 0; i < N; i++)
		CHECK(conns[i].visits + tws[i].visits == 1);
	CHECK(walk_count(t, CONNTAB_TIMEWAIT) == ntw);
	CHECK(walk_count(t, CONNTAB_ESTABLISHED) == N - ntw);
	rcu_read_lock();
	CHECK(conntab_walk(t, stop_fn, &stop) == 42 && stop == 10);
	CHECK(conntab_walk_state(t, (enum conntab_state)7, count_fn, &i) ==
	      -EINVAL);
	rcu_read_unlock();

	/* Recycle: TW key -> new node; EST key -> -EEXIST; absent -> plain. */
	conntab_node_init(&fresh[0].node);
	mkkey(&k, 0);
	CHECK(conntab_insert(t, &fresh[0].node, &k) == -EEXIST);
	CHECK(conntab_insert_recycle(t, &fresh[0].node, &k, &rec) == 0);
	CHECK(rec == &conns[0].node);
	mkkey(&k, 1);
	CHECK(conntab_insert_recycle(t, &fresh[1].node, &k, &rec) == 0);
	CHECK(rec == &tws[1].node);
	mkkey(&k, 3);
	CHECK(conntab_insert_recycle(t, &fresh[3].node, &k, &rec) == -EEXIST);
	CHECK(rec == NULL);
	mkkey(&k, N);
	CHECK(conntab_insert_recycle(t, &fresh[3].node, &k, &rec) == 0);
	CHECK(rec == NULL);
	CHECK(conntab_insert_recycle(t, &fresh[4].node, &k, NULL) == -EINVAL);
	rcu_read_lock();
	mkkey(&k, 0);
	CHECK(conntab_lookup(t, &k) == &fresh[0].node);
	CHECK(conntab_node_state(&fresh[0].node) == CONNTAB_ESTABLISHED);
	mkkey(&k, 1);
	CHECK(conntab_lookup(t, &k) == &fresh[1].node);
	rcu_read_unlock();
	ntw -= 2;
	conntab_stats(t, &st);
	CHECK(st.entries == N + 1 && st.timewait == ntw);
	CHECK(conntab_remove(t, &conns[0].node) == -ENOENT);

	/* Batch: present and absent keys mixed. */
	for (i = 0; i < 64; i++)
		mkkey(&keys[i], (int)(i % 2 ? i + 100 : N + 10 + i));
	rcu_read_lock();
	found = conntab_lookup_batch(t, keys, out, 64);
	for (i = 0; i < 64; i++)
		CHECK(i % 2 ? out[i] == conntab_lookup(t, &keys[i]) &&
			      out[i] != NULL : out[i] == NULL);
	rcu_read_unlock();
	CHECK(found == 32);

	/* Expiry sweep over the time-wait entries only. */
	rcu_read_lock();
	CHECK(conntab_walk_state(t, CONNTAB_TIMEWAIT, expire_fn, t) == 0);
	rcu_read_unlock();
	conntab_stats(t, &st);
	CHECK(st.timewait == 0 && st.entries == N + 1 - ntw);
	CHECK(walk_count(t, CONNTAB_TIMEWAIT) == 0);
	CHECK(walk_count(t, -1) == N + 1 - ntw);

	/* Remove. */
	CHECK(conntab_remove(t, &conns[3].node) == 0);
	CHECK(conntab_remove(t, &conns[3].node) == -ENOENT);
	rcu_read_lock();
	mkkey(&k, 3);
	CHECK(conntab_lookup(t, &k) == NULL);
	rcu_read_unlock();

	/* Bad arguments. */
	CHECK(conntab_insert(NULL, &fresh[5].node, &k) == -EINVAL);
	CHECK(conntab_insert(t, NULL, &k) == -EINVAL);
	CHECK(conntab_insert(t, &fresh[5].node, NULL) == -EINVAL);
	CHECK(conntab_timewait(t, NULL, &fresh[5].node) == -EINVAL);
	CHECK(conntab_remove(NULL, &fresh[5].node) == -EINVAL);
	CHECK(conntab_walk(t, NULL, NULL) == -EINVAL);

	released = 0;
	conntab_stats(t, &st);
	conntab_destroy(t, release_fn);
	CHECK(released == st.entries);

	/* The max_entries cap; recycling at the cap replaces, no growth. */
	cfg.max_entries = 10;
	cfg.expected = 1000;
	t = conntab_create(&cfg);
	CHECK(t != NULL);
	if (!t)
		return;
	memset(conns, 0, sizeof(conns));
	memset(fresh, 0, sizeof(fresh));
	for (i = 0; i < 10; i++) {
		mkkey(&k, (int)i);
		CHECK(conntab_insert(t, &conns[i].node, &k) == 0);
	}
	mkkey(&k, 10);
	CHECK(conntab_insert(t, &conns[10].node, &k) == -ENOSPC);
	CHECK(conntab_timewait(t, &conns[0].node, &conns[0].node) == 0);
	mkkey(&k, 0);
	CHECK(conntab_insert_recycle(t, &fresh[0].node, &k, &rec) == 0);
	CHECK(rec == &conns[0].node);
	CHECK(conntab_remove(t, &conns[1].node) == 0);
	mkkey(&k, 10);
	CHECK(conntab_insert(t, &conns[10].node, &k) == 0);
	conntab_stats(t, &st);
	/* 1000 expected: 256 lines of slots (4 a line). */
	CHECK(st.entries == 10 && st.buckets == 256u);
	released = 0;
	conntab_destroy(t, release_fn);
	CHECK(released == 10);
}

int main(void)
{
	enum conntab_backend be[] = { CONNTAB_CHAINED, CONNTAB_SPLIT };
	unsigned int i, ran = 0;

	rcu_register_thread();
	for (i = 0; i < sizeof(be) / sizeof(be[0]); i++) {
		if (!conntab_backend_available(be[i]))
			continue;
		test_backend(be[i]);
		ran++;
	}
	rcu_unregister_thread();
	if (!conntab_backend_available(CONNTAB_SPLIT)) {
		fprintf(stderr, "split backend not available\n");
		failures++;
	}
	printf("%u backends, %d failures\n", ran, failures);
	return failures ? 1 : 0;
}
