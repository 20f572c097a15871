/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pairs (design/API.md, "Additions: pairs"): conntab_insert_pair(),
 * conntab_insert_pair_evict(), conntab_pair_peer(), and what the rest of
 * the API does with a pair (remove through either half and by key,
 * timewait refused, walks and scans once per pair, destroy once, one
 * entry against the cap and in the stats, eviction of whole pairs), then
 * writers racing: single inserts of either key against pair inserts, and
 * evicting inserters at the cap. Every backend and hash (one TCase each).
 *
 * A pair object embeds two nodes; objects are never reused within a test
 * without a grace period (synchronize_rcu()), and the threaded tests never
 * reuse one at all: an evicted or failed pair's object stays allocated to
 * the end, so that any reader or assertion that meets it reads real memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define B		((enum conntab_backend)_i)

struct tpair {
	struct conntab_node a, b;
	uint32_t id;
	long rank;		/* what rank() answers for it */
	unsigned int released;	/* destroy's release calls */
	unsigned int visits;	/* a walk's or a scan's calls */
};

/* A connection that is one node: its own counters, for mixed tables. */
struct tsingle {
	struct conntab_node n;
	long rank;
	unsigned int visits, released;
};

/* Keys of pair @i: two directions, distinct from every other pair's. */
static void tp_keys(uint32_t i, struct conntab_key *ka, struct conntab_key *kb)
{
	t_key(ka, 2 * i);
	t_key(kb, 2 * i + 1);
}

/* Keys of single @i: never a pair's (above 2^23). */
static void ts_key(uint32_t i, struct conntab_key *k)
{
	t_key(k, (1u << 23) + i);
}

static void tp_init(struct tpair *p, size_t n)
{
	size_t i;

	memset(p, 0, n * sizeof(*p));
	for (i = 0; i < n; i++) {
		conntab_node_init(&p[i].a);
		conntab_node_init(&p[i].b);
		p[i].id = (uint32_t)i;
	}
}

static void ts_init(struct tsingle *s, size_t n)
{
	size_t i;

	memset(s, 0, n * sizeof(*s));
	for (i = 0; i < n; i++)
		conntab_node_init(&s[i].n);
}

static int tp_insert(struct conntab *t, struct tpair *p)
{
	struct conntab_key ka, kb;

	tp_keys(p->id, &ka, &kb);
	return conntab_insert_pair(t, &p->a, &ka, &p->b, &kb);
}

/* Is @n a half of one of the @np pairs at @p? */
static struct tpair *tp_of(struct conntab_node *n, struct tpair *p, size_t np)
{
	uintptr_t x = (uintptr_t)n, lo = (uintptr_t)p,
		  hi = (uintptr_t)(p + np);

	if (x < lo || x >= hi)
		return NULL;
	return &p[(x - lo) / sizeof(*p)];
}

/* Both keys of pair @p find its halves (@in), or neither finds anything. */
static void tp_expect(struct conntab *t, const struct tpair *p, int in)
{
	struct conntab_key ka, kb;
	struct conntab_node *na, *nb;

	tp_keys(p->id, &ka, &kb);
	rcu_read_lock();
	na = conntab_lookup(t, &ka);
	nb = conntab_lookup(t, &kb);
	if (in) {
		ck_assert_ptr_eq(na, &p->a);
		ck_assert_ptr_eq(nb, &p->b);
		ck_assert_ptr_eq(conntab_pair_peer(na), &p->b);
		ck_assert_ptr_eq(conntab_pair_peer(nb), &p->a);
		ck_assert_int_eq(conntab_node_state(na), CONNTAB_ESTABLISHED);
		ck_assert_int_eq(conntab_node_state(nb), CONNTAB_ESTABLISHED);
	} else {
		ck_assert_ptr_null(na);
		ck_assert_ptr_null(nb);
	}
	rcu_read_unlock();
}

static uint64_t tp_pairs(struct conntab *t)
{
	struct conntab_counters c = { .size = sizeof(c) };

	ck_assert_int_eq(conntab_counters(t, &c), 0);
	return c.pairs;
}

START_TEST(pair_basic)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key ka, kb, k, junk;
	struct tpair p[3];
	struct tsingle s[2];

	tp_init(p, 3);
	ts_init(s, 2);
	ck_assert_int_eq(tp_insert(t, &p[0]), 0);
	tp_expect(t, &p[0], 1);
	t_expect_counts(t, 1, 0);
	ck_assert_uint_eq(tp_pairs(t), 1);

	/* Either key taken: -EEXIST for a single insert of it. */
	tp_keys(0, &ka, &kb);
	ck_assert_int_eq(conntab_insert(t, &s[0].n, &ka), -EEXIST);
	ck_assert_int_eq(conntab_insert(t, &s[0].n, &kb), -EEXIST);
	/* ... and for a pair that holds it, which inserts nothing. */
	tp_keys(1, &ka, &kb);
	tp_keys(0, &k, &junk);		/* pair 0's a key, with pair 1's */
	ck_assert_int_eq(conntab_insert_pair(t, &p[1].a, &ka, &p[1].b, &k),
			 -EEXIST);
	ck_assert_int_eq(conntab_insert_pair(t, &p[1].a, &junk, &p[1].b, &kb),
			 -EEXIST);
	tp_keys(1, &ka, &kb);
	rcu_read_lock();
	ck_assert_ptr_null(conntab_lookup(t, &ka));
	ck_assert_ptr_null(conntab_lookup(t, &kb));
	rcu_read_unlock();
	t_expect_counts(t, 1, 0);
	/* Counted when it starts, a failed pair is uncounted again. */
	ck_assert_uint_eq(tp_pairs(t), 1);

	/* A failed pair's halves are free again (after a grace period). */
	synchronize_rcu();
	ck_assert_int_eq(tp_insert(t, &p[1]), 0);
	tp_expect(t, &p[1], 1);
	ck_assert_uint_eq(tp_pairs(t), 2);

	/* Unpaired nodes have no peer; NULL is allowed. */
	ts_key(0, &k);
	ck_assert_int_eq(conntab_insert(t, &s[1].n, &k), 0);
	ck_assert_ptr_null(conntab_pair_peer(&s[1].n));
	ck_assert_ptr_null(conntab_pair_peer(NULL));
	t_expect_counts(t, 3, 0);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(pair_inval)
{
	struct conntab *t = t_table(B, 0, 0), *u = t_table(B, 0, 0);
	struct conntab_key ka, kb, bad;
	struct tpair p[3];
	struct tsingle s[1];

	tp_init(p, 3);
	ts_init(s, 1);
	tp_keys(0, &ka, &kb);
	ck_assert_int_eq(conntab_insert_pair(NULL, &p[0].a, &ka, &p[0].b, &kb),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, NULL, &ka, &p[0].b, &kb),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, NULL, &p[0].b, &kb),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, NULL, &kb),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[0].b, NULL),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[0].a, &kb),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[0].b, &ka),
			 -EINVAL);
	bad = ka;
	bad.family = 99;
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &bad, &p[0].b, &kb),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[0].b, &bad),
			 -EINVAL);
	t_expect_counts(t, 0, 0);

	/* -EBUSY: a half in a table (this one or another). */
	ck_assert_int_eq(tp_insert(u, &p[1]), 0);
	ck_assert_int_eq(conntab_insert_pair(t, &p[1].a, &ka, &p[0].b, &kb),
			 -EBUSY);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[1].b, &kb),
			 -EBUSY);
	/* -EINVAL before -EBUSY, -EBUSY before -EEXIST. */
	ck_assert_int_eq(conntab_insert_pair(t, &p[1].a, &ka, &p[0].b, &ka),
			 -EINVAL);
	ck_assert_int_eq(conntab_insert(t, &s[0].n, &ka), 0);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[1].b, &kb),
			 -EBUSY);
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].a, &ka, &p[0].b, &kb),
			 -EEXIST);
	/* The evicting call: its own NULLs. */
	ck_assert_int_eq(conntab_insert_pair_evict(t, &p[2].a, &ka, &p[2].b,
						   &kb, NULL, NULL, NULL),
			 -EINVAL);
	t_expect_counts(t, 1, 0);
	tp_expect(u, &p[1], 1);
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

START_TEST(pair_nospc)
{
	struct conntab *t = t_table(B, 0, 2);
	struct conntab_key ka, kb, k, junk;
	struct tpair p[3];
	struct tsingle s[2];

	tp_init(p, 3);
	ts_init(s, 2);
	ts_key(0, &k);
	ck_assert_int_eq(conntab_insert(t, &s[0].n, &k), 0);
	/* A pair takes one connection's room: it fits in the last one. */
	ck_assert_int_eq(tp_insert(t, &p[0]), 0);
	t_expect_counts(t, 2, 0);
	ck_assert_int_eq(tp_insert(t, &p[1]), -ENOSPC);
	tp_expect(t, &p[1], 0);
	ck_assert_uint_eq(tp_pairs(t), 1);
	ts_key(1, &k);
	ck_assert_int_eq(conntab_insert(t, &s[1].n, &k), -ENOSPC);
	/* -EEXIST before -ENOSPC, for either key. */
	tp_keys(0, &ka, &kb);
	tp_keys(2, &k, &junk);
	ck_assert_int_eq(conntab_insert_pair(t, &p[2].a, &k, &p[2].b, &kb),
			 -EEXIST);
	ck_assert_int_eq(conntab_insert_pair(t, &p[2].a, &ka, &p[2].b, &junk),
			 -EEXIST);
	/* Its removal makes room for one connection: a pair. */
	ck_assert_int_eq(conntab_remove(t, &p[0].b), 0);
	t_expect_counts(t, 1, 0);
	ck_assert_int_eq(tp_insert(t, &p[1]), 0);
	t_expect_counts(t, 2, 0);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(pair_remove)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key ka, kb, k;
	struct tpair p[4];
	struct conntab_node *n;

	tp_init(p, 4);
	for (uint32_t i = 0; i < 4; i++)
		ck_assert_int_eq(tp_insert(t, &p[i]), 0);
	t_expect_counts(t, 4, 0);
	/* Through a, through b: both halves go. */
	ck_assert_int_eq(conntab_remove(t, &p[0].a), 0);
	tp_expect(t, &p[0], 0);
	ck_assert_int_eq(conntab_remove(t, &p[1].b), 0);
	tp_expect(t, &p[1], 0);
	ck_assert_int_eq(conntab_remove(t, &p[0].a), -ENOENT);
	ck_assert_int_eq(conntab_remove(t, &p[0].b), -ENOENT);
	ck_assert_int_eq(conntab_remove(t, &p[1].a), -ENOENT);
	/* By key: the node of that key is returned, both go. */
	tp_keys(2, &ka, &kb);
	ck_assert_ptr_eq(conntab_remove_key(t, &ka), &p[2].a);
	tp_expect(t, &p[2], 0);
	tp_keys(3, &ka, &kb);
	ck_assert_ptr_eq(conntab_remove_key(t, &kb), &p[3].b);
	tp_expect(t, &p[3], 0);
	errno = 0;
	ck_assert_ptr_null(conntab_remove_key(t, &ka));
	ck_assert_int_eq(errno, ENOENT);
	t_expect_counts(t, 0, 0);
	ck_assert_uint_eq(tp_pairs(t), 0);

	/* After a grace period the halves are plain nodes again... */
	synchronize_rcu();
	tp_keys(0, &ka, &kb);
	ck_assert_int_eq(conntab_insert(t, &p[0].a, &ka), 0);
	ck_assert_ptr_null(conntab_pair_peer(&p[0].a));
	ck_assert_int_eq(conntab_remove(t, &p[0].a), 0);
	tp_expect(t, &p[0], 0);
	/* ... or a pair again, the halves swapped. */
	synchronize_rcu();
	ck_assert_int_eq(conntab_insert_pair(t, &p[0].b, &ka, &p[0].a, &kb),
			 0);
	rcu_read_lock();
	n = conntab_lookup(t, &ka);
	ck_assert_ptr_eq(n, &p[0].b);
	ck_assert_ptr_eq(conntab_pair_peer(n), &p[0].a);
	rcu_read_unlock();
	ts_key(0, &k);
	t_expect_counts(t, 1, 0);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(pair_timewait)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_key k;
	struct tpair p[1];
	struct tsingle tw[1];

	tp_init(p, 1);
	ts_init(tw, 1);
	ck_assert_int_eq(tp_insert(t, &p[0]), 0);
	ck_assert_int_eq(conntab_timewait(t, &p[0].a, &p[0].a), -EINVAL);
	ck_assert_int_eq(conntab_timewait(t, &p[0].b, &p[0].b), -EINVAL);
	ck_assert_int_eq(conntab_timewait(t, &p[0].a, &tw[0].n), -EINVAL);
	ck_assert_int_eq(conntab_timewait(t, &p[0].b, &tw[0].n), -EINVAL);
	tp_expect(t, &p[0], 1);
	t_expect_counts(t, 1, 0);
	/* tw was not taken. */
	ts_key(0, &k);
	ck_assert_int_eq(conntab_insert(t, &tw[0].n, &k), 0);
	conntab_destroy(t, NULL);
}
END_TEST

/* Walks: count visits, on the pair object or the single. */
struct tvisit {
	struct tpair *p;
	size_t np;
	struct tsingle *s;
	size_t ns;
	size_t calls, bad;
	int remove;		/* remove what is visited */
	struct conntab *t;
};

static int tv_fn(struct conntab_node *n, void *arg)
{
	struct tvisit *v = arg;
	struct tpair *p = tp_of(n, v->p, v->np);

	v->calls++;
	if (p) {
		if (n != &p->a)
			v->bad++;	/* a pair is visited through a */
		p->visits++;
	} else if (v->s && (struct tsingle *)n >= v->s &&
		   (struct tsingle *)n < v->s + v->ns) {
		((struct tsingle *)n)->visits++;
	} else {
		v->bad++;
	}
	if (v->remove && conntab_remove(v->t, n))
		v->bad++;
	return 0;
}

static void tv_reset(struct tvisit *v)
{
	size_t i;

	for (i = 0; i < v->np; i++)
		v->p[i].visits = 0;
	for (i = 0; i < v->ns; i++)
		v->s[i].visits = 0;
	v->calls = v->bad = 0;
}

static void tv_expect_once(const struct tvisit *v)
{
	size_t i;

	ck_assert_uint_eq(v->bad, 0);
	ck_assert_uint_eq(v->calls, v->np + v->ns);
	for (i = 0; i < v->np; i++)
		ck_assert_uint_eq(v->p[i].visits, 1);
	for (i = 0; i < v->ns; i++)
		ck_assert_uint_eq(v->s[i].visits, 1);
}

#define NP	300
#define NS	200

START_TEST(pair_walks)
{
	struct conntab *t = t_table(B, 0, 0);
	struct tpair *p = malloc(NP * sizeof(*p));
	struct tsingle *s = malloc(NS * sizeof(*s));
	struct tvisit v = { p, NP, s, NS, 0, 0, 0, t };
	struct conntab_cursor cur;
	struct conntab_counters c = { .size = sizeof(c) };
	struct conntab_stats st;
	struct conntab_key k;
	size_t i, calls = 0, shorts = 0;
	int ret;

	tp_init(p, NP);
	ts_init(s, NS);
	for (i = 0; i < NP; i++)
		ck_assert_int_eq(tp_insert(t, &p[i]), 0);
	for (i = 0; i < NS; i++) {
		ts_key((uint32_t)i, &k);
		ck_assert_int_eq(conntab_insert(t, &s[i].n, &k), 0);
	}
	t_expect_counts(t, NP + NS, 0);

	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(t, tv_fn, &v), 0);
	rcu_read_unlock();
	tv_expect_once(&v);

	tv_reset(&v);
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk_state(t, CONNTAB_ESTABLISHED, tv_fn, &v),
			 0);
	rcu_read_unlock();
	tv_expect_once(&v);

	/*
	 * A scan pass, a few nodes per call: each pair once. The b halves
	 * it does not show cost no budget: a call that ends short of its 7
	 * must have passed its bound of empty slots (7 x 16, conntab-int.h)
	 * or ended the pass, so short calls are few. (They cost budget
	 * before: a table of pairs took twice the calls.)
	 */
	tv_reset(&v);
	memset(&cur, 0, sizeof(cur));
	conntab_stats(t, &st);
	do {
		size_t before = v.calls;

		rcu_read_lock();
		ret = conntab_scan(t, &cur, 7, tv_fn, &v);
		rcu_read_unlock();
		ck_assert_int_ge(ret, 0);
		ck_assert_uint_lt(++calls, 100000);
		shorts += v.calls - before < 7 && !conntab_cursor_done(&cur);
	} while (!conntab_cursor_done(&cur));
	tv_expect_once(&v);
	if (B != CONNTAB_TRIE)
		ck_assert_uint_le(shorts, st.buckets / (7 * 16) + 1);
	ck_assert_uint_le(calls, (NP + NS) / 7 + shorts + 2);
	ck_assert_int_eq(conntab_counters(t, &c), 0);
	ck_assert_uint_eq(c.scan_passes, 1);
	ck_assert_uint_eq(c.pairs, NP);

	/* A prefix walk visits every node whose own key matches: both. */
	tv_reset(&v);
	t_key(&k, 0);
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk_prefix(t, &k, 0, tv_fn, &v), 0);
	rcu_read_unlock();
	ck_assert_uint_eq(v.calls, 2 * NP + NS);

	/* A walk whose callback removes what it is given: all gone. */
	tv_reset(&v);
	v.remove = 1;
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(t, tv_fn, &v), 0);
	rcu_read_unlock();
	tv_expect_once(&v);
	t_expect_counts(t, 0, 0);
	for (i = 0; i < NP; i++)
		tp_expect(t, &p[i], 0);
	ck_assert_uint_eq(tp_pairs(t), 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(p);
	free(s);
}
END_TEST

/*
 * A scan pass while pairs come and go in waves, which on CONNTAB_EXTHASH
 * split and merge its segments (and reshape the trie): every pair present
 * for the whole pass is visited exactly once, through a.
 */
START_TEST(pair_scan_resize)
{
	enum { STABLE = 500, WAVE = 3000 };
	struct conntab *t = t_table(B, 0, 0);
	struct tpair *p = malloc((STABLE + 2 * WAVE) * sizeof(*p));
	struct tvisit v = { p, STABLE + 2 * WAVE, NULL, 0, 0, 0, 0, t };
	struct conntab_resize_stats rs;
	struct conntab_cursor cur;
	size_t i, step = 0, w = 0, calls = 0;
	int ret;

	tp_init(p, STABLE + 2 * WAVE);
	for (i = 0; i < STABLE; i++)
		ck_assert_int_eq(tp_insert(t, &p[i]), 0);
	memset(&cur, 0, sizeof(cur));
	do {
		rcu_read_lock();
		ret = conntab_scan(t, &cur, 5, tv_fn, &v);
		rcu_read_unlock();
		ck_assert_int_ge(ret, 0);
		/* Between calls: a wave in (of fresh objects), or out. */
		if (++step % 10 == 0 && w < 2) {
			struct tpair *q = p + STABLE + w * WAVE;

			for (i = 0; i < WAVE; i++)
				ck_assert_int_eq(tp_insert(t, &q[i]), 0);
			for (i = 0; i < WAVE; i++)
				ck_assert_int_eq(conntab_remove(t, i % 2 ?
							&q[i].a : &q[i].b), 0);
			w++;
		}
		ck_assert_uint_lt(++calls, 1000000);
	} while (!conntab_cursor_done(&cur));
	ck_assert_uint_eq(v.bad, 0);
	for (i = 0; i < STABLE; i++)
		ck_assert_uint_eq(p[i].visits, 1);
	for (i = STABLE; i < STABLE + 2 * WAVE; i++)
		ck_assert_uint_le(p[i].visits, 1);
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	if (B == CONNTAB_EXTHASH)
		ck_assert_uint_gt(rs.splits, 0);
	t_expect_counts(t, STABLE, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(p);
}
END_TEST

static struct tpair *tr_pairs;
static size_t tr_npairs;
static size_t tr_other;

static void tr_release(struct conntab_node *n)
{
	struct tpair *p = tp_of(n, tr_pairs, tr_npairs);

	if (p && n == &p->a)
		p->released++;
	else
		tr_other++;
}

START_TEST(pair_destroy)
{
	struct conntab *t = t_table(B, 0, 0);
	struct tpair p[50];
	struct tsingle s[10];
	struct conntab_key k;
	uint32_t i;

	tp_init(p, 50);
	ts_init(s, 10);
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(tp_insert(t, &p[i]), 0);
	for (i = 0; i < 10; i++) {
		ts_key(i, &k);
		ck_assert_int_eq(conntab_insert(t, &s[i].n, &k), 0);
	}
	tr_pairs = p;
	tr_npairs = 50;
	tr_other = 0;
	conntab_destroy(t, tr_release);
	for (i = 0; i < 50; i++)
		ck_assert_uint_eq(p[i].released, 1);
	ck_assert_uint_eq(tr_other, 10);	/* the singles; never a b */
}
END_TEST

/*
 * The release callback ends the object's life: it holds both halves, so
 * the library must be done with both when it calls (it read and wrote
 * the second half afterwards once: a use-after-free in every user's
 * destroy). Here the callback scribbles over the object, and ASan builds
 * free it: nothing of it may change afterwards.
 */
static unsigned int tf_released;

static void tf_release(struct conntab_node *n)
{
	struct tpair *p = conntab_entry(n, struct tpair, a);

	memset(p, 0xa5, sizeof(*p));
	tf_released++;
#if defined(__SANITIZE_ADDRESS__)
	free(p);
#endif
}

START_TEST(pair_destroy_frees)
{
	struct conntab *t = t_table(B, 0, 0);
	struct tpair *p[64], *all = calloc(64, sizeof(*all));
	unsigned char ff[sizeof(struct tpair)];
	uint32_t i, j;

	ck_assert_ptr_nonnull(all);
	tp_init(all, 64);
	for (i = 0; i < 64; i++) {
		p[i] = malloc(sizeof(*p[i]));
		ck_assert_ptr_nonnull(p[i]);
		*p[i] = all[i];
		conntab_node_init(&p[i]->a);
		conntab_node_init(&p[i]->b);
		ck_assert_int_eq(tp_insert(t, p[i]), 0);
	}
	tf_released = 0;
	conntab_destroy(t, tf_release);
	ck_assert_uint_eq(tf_released, 64);
#if !defined(__SANITIZE_ADDRESS__)
	memset(ff, 0xa5, sizeof(ff));
	for (i = 0; i < 64; i++) {
		for (j = 0; j < sizeof(ff); j++)
			ck_assert_uint_eq(((unsigned char *)p[i])[j], 0xa5);
		free(p[i]);
	}
#else
	(void)ff;
	(void)j;
#endif
	free(all);
}
END_TEST

/* rank(): the object's own value. */
static long tk_rank(struct conntab_node *n, void *arg)
{
	struct tvisit *v = arg;
	struct tpair *p = tp_of(n, v->p, v->np);

	if (p) {
		if (n != &p->a)
			v->bad++;	/* a pair is offered through a */
		return p->rank;
	}
	return ((struct tsingle *)n)->rank;
}

START_TEST(pair_evict)
{
	struct conntab *t = t_table(B, 0, 4);
	struct tpair p[6];
	struct tsingle s[4];
	struct tvisit v = { p, 6, s, 4, 0, 0, 0, t };
	struct conntab_counters c = { .size = sizeof(c) };
	struct conntab_node *ev;
	struct conntab_key k, ka, kb, junk;
	uint32_t i;

	tp_init(p, 6);
	ts_init(s, 4);
	/* Full: two pairs, two singles, all assured. */
	for (i = 0; i < 2; i++) {
		p[i].rank = -1;
		ck_assert_int_eq(tp_insert(t, &p[i]), 0);
		s[i].rank = -1;
		ts_key(i, &k);
		ck_assert_int_eq(conntab_insert(t, &s[i].n, &k), 0);
	}
	t_expect_counts(t, 4, 0);
	tp_keys(2, &ka, &kb);
	ck_assert_int_eq(conntab_insert_pair_evict(t, &p[2].a, &ka, &p[2].b,
						   &kb, tk_rank, &v, &ev),
			 -ENOSPC);
	ck_assert_ptr_null(ev);
	tp_expect(t, &p[2], 0);
	ts_key(2, &k);
	ck_assert_int_eq(conntab_insert_evict(t, &s[2].n, &k, tk_rank, &v,
					      &ev), -ENOSPC);
	/* -EEXIST at the cap evicts nothing. */
	p[1].rank = 5;
	tp_keys(0, &ka, &junk);
	tp_keys(3, &junk, &kb);
	ck_assert_int_eq(conntab_insert_pair_evict(t, &p[3].a, &ka, &p[3].b,
						   &kb, tk_rank, &v, &ev),
			 -EEXIST);
	ck_assert_ptr_null(ev);
	tp_expect(t, &p[1], 1);

	/* A single newcomer evicts the rankable pair, whole. */
	ts_key(2, &k);
	ck_assert_int_eq(conntab_insert_evict(t, &s[2].n, &k, tk_rank, &v,
					      &ev), 0);
	ck_assert_ptr_eq(ev, &p[1].a);
	tp_expect(t, &p[1], 0);
	t_expect_counts(t, 4, 0);
	/* A pair newcomer evicts a single, and takes its one room. */
	s[0].rank = 1;
	tp_keys(2, &ka, &kb);
	ck_assert_int_eq(conntab_insert_pair_evict(t, &p[2].a, &ka, &p[2].b,
						   &kb, tk_rank, &v, &ev), 0);
	ck_assert_ptr_eq(ev, &s[0].n);
	tp_expect(t, &p[2], 1);
	t_expect_counts(t, 4, 0);
	/* And a pair newcomer evicting a pair. */
	p[2].rank = 3;
	tp_keys(4, &ka, &kb);
	ck_assert_int_eq(conntab_insert_pair_evict(t, &p[4].a, &ka, &p[4].b,
						   &kb, tk_rank, &v, &ev), 0);
	ck_assert_ptr_eq(ev, &p[2].a);
	tp_expect(t, &p[2], 0);
	tp_expect(t, &p[4], 1);
	t_expect_counts(t, 4, 0);
	ck_assert_uint_eq(v.bad, 0);
	ck_assert_int_eq(conntab_counters(t, &c), 0);
	ck_assert_uint_eq(c.evictions, 3);
	ck_assert_uint_eq(c.evict_refused, 2);
	ck_assert_uint_eq(c.pairs, 2);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(counters_api)
{
	struct conntab *t = t_table(B, 0, 0);
	struct conntab_counters c;

	memset(&c, 0xff, sizeof(c));
	c.size = sizeof(c);
	ck_assert_int_eq(conntab_counters(t, &c), 0);
	ck_assert_uint_eq(c.size, sizeof(c));
	ck_assert_uint_eq(c.evictions, 0);
	ck_assert_uint_eq(c.evict_refused, 0);
	ck_assert_uint_eq(c.scan_passes, 0);
	ck_assert_uint_eq(c.pairs, 0);
	ck_assert_int_eq(conntab_counters(NULL, &c), -EINVAL);
	ck_assert_int_eq(conntab_counters(t, NULL), -EINVAL);
	c.size = sizeof(size_t);
	ck_assert_int_eq(conntab_counters(t, &c), -EINVAL);
	conntab_destroy(t, NULL);
}
END_TEST

/* --- writers racing ------------------------------------------------- */

#define RACE_KEYS	64
#define RACE_ROUNDS	200

struct trace {
	struct conntab *t;
	struct tpair *p;		/* [RACE_KEYS] per round */
	struct tsingle *s;		/* [2 * RACE_KEYS] per round */
	pthread_barrier_t *bar;
	int role;			/* 0: pairs, 1: singles of a, 2: of b */
	unsigned long errors;
};

/*
 * A single inserter that met -EEXIST: whatever holds its key, if it is a
 * pair's half, the pair is whole (the pair insert that held the key to
 * the end ended with both halves in; no remover runs here).
 */
static void tr_check_exists(struct trace *r, const struct conntab_key *k)
{
	struct conntab_node *n, *peer, *back;

	rcu_read_lock();
	n = conntab_lookup(r->t, k);
	peer = n ? conntab_pair_peer(n) : NULL;
	if (!n) {
		r->errors++;		/* -EEXIST and nothing there */
	} else if (peer) {
		back = conntab_lookup(r->t, conntab_node_key(peer));
		if (back != peer || conntab_pair_peer(peer) != n)
			r->errors++;	/* half a pair */
	}
	rcu_read_unlock();
}

static void *tr_thread(void *arg)
{
	struct trace *r = arg;
	struct conntab_key ka, kb;
	uint32_t i, round;
	int err;

	rcu_register_thread();
	for (round = 0; round < RACE_ROUNDS; round++) {
		pthread_barrier_wait(r->bar);
		for (i = 0; i < RACE_KEYS; i++) {
			uint32_t id = round * RACE_KEYS + i;

			tp_keys(id, &ka, &kb);
			if (r->role == 0) {
				struct tpair *p = &r->p[id];

				p->id = id;
				err = conntab_insert_pair(r->t, &p->a, &ka,
							  &p->b, &kb);
				if (err && err != -EEXIST)
					r->errors++;
				continue;
			}
			struct tsingle *s = &r->s[2 * id + (r->role - 1)];
			const struct conntab_key *k = r->role == 1 ? &ka : &kb;

			/* Every other key: race on it, else on the other. */
			err = conntab_insert(r->t, &s->n, k);
			if (err == -EEXIST)
				tr_check_exists(r, k);
			else if (err)
				r->errors++;
		}
	}
	rcu_unregister_thread();
	return NULL;
}

/*
 * Pair inserts of (ka, kb) against single inserts of ka and of kb, each
 * key raced once per round: afterwards every pair is whole or absent, a
 * key is held by exactly one of its contenders, and the entry count is
 * what the winners make.
 */
START_TEST(race_pair_vs_single)
{
	const size_t n = (size_t)RACE_ROUNDS * RACE_KEYS;
	struct conntab *t = t_table(B, 0, 0);
	struct tpair *p = malloc(n * sizeof(*p));
	struct tsingle *s = malloc(2 * n * sizeof(*s));
	struct trace r[3];
	pthread_barrier_t bar;
	pthread_t th[3];
	size_t i, pairs = 0, singles = 0;
	struct conntab_key ka, kb;
	struct conntab_node *na, *nb;

	tp_init(p, n);
	ts_init(s, 2 * n);
	pthread_barrier_init(&bar, NULL, 3);
	for (i = 0; i < 3; i++) {
		r[i] = (struct trace){ t, p, s, &bar, (int)i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, tr_thread,
						&r[i]), 0);
	}
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(r[i].errors, 0);
	}
	pthread_barrier_destroy(&bar);
	rcu_read_lock();
	for (i = 0; i < n; i++) {
		tp_keys((uint32_t)i, &ka, &kb);
		na = conntab_lookup(t, &ka);
		nb = conntab_lookup(t, &kb);
		ck_assert_ptr_nonnull(na);
		ck_assert_ptr_nonnull(nb);
		if (na == &p[i].a || nb == &p[i].b) {
			/* The pair won: whole. */
			ck_assert_ptr_eq(na, &p[i].a);
			ck_assert_ptr_eq(nb, &p[i].b);
			pairs++;
		} else {
			ck_assert_ptr_eq(na, &s[2 * i].n);
			ck_assert_ptr_eq(nb, &s[2 * i + 1].n);
			ck_assert_ptr_null(conntab_pair_peer(na));
			singles++;
		}
	}
	rcu_read_unlock();
	t_expect_counts(t, pairs + 2 * singles, 0);
	ck_assert_uint_eq(tp_pairs(t), pairs);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(p);
	free(s);
}
END_TEST

#define EV_CAP		64
#define EV_THREADS	3
#define EV_PER		3000

struct tevict {
	struct conntab *t;
	struct tpair *p;	/* [EV_PER], this thread's own */
	struct tsingle *s;	/* [EV_PER] */
	uint32_t base;
	unsigned long errors, evicted_pairs, refused;
};

static long tev_rank(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	return 1;
}

/*
 * An evicted node's object belongs to the thread that inserted it, which
 * does not insert it again: once the call returned, none of its keys is
 * found.
 */
static void tev_check_gone(struct tevict *e, struct conntab_node *v)
{
	struct conntab_node *peer = conntab_pair_peer(v);

	rcu_read_lock();
	if (conntab_lookup(e->t, conntab_node_key(v)) == v)
		e->errors++;
	if (peer && conntab_lookup(e->t, conntab_node_key(peer)) == peer)
		e->errors++;	/* half a pair left */
	rcu_read_unlock();
}

static void *tev_thread(void *arg)
{
	struct tevict *e = arg;
	struct conntab_node *ev;
	struct conntab_key ka, kb;
	uint32_t i, id;
	int err;

	rcu_register_thread();
	for (i = 0; i < EV_PER; i++) {
		id = e->base + i;
		if (i % 3) {
			e->p[i].id = id;
			tp_keys(id, &ka, &kb);
			err = conntab_insert_pair_evict(e->t, &e->p[i].a, &ka,
							&e->p[i].b, &kb,
							tev_rank, NULL, &ev);
		} else {
			ts_key(id, &ka);
			err = conntab_insert_evict(e->t, &e->s[i].n, &ka,
						   tev_rank, NULL, &ev);
		}
		/*
		 * -ENOSPC is allowed: a sample leaves out what other writers
		 * hold (their locks, their claimed pairs) rather than wait.
		 */
		if (err == -ENOSPC) {
			e->refused++;
			if (ev)
				e->errors++;
			continue;
		}
		if (err) {
			e->errors++;
			continue;
		}
		if (ev) {
			tev_check_gone(e, ev);
			if (conntab_pair_peer(ev))
				e->evicted_pairs++;
		}
	}
	rcu_unregister_thread();
	return NULL;
}

static int tev_count(struct conntab_node *n, void *arg)
{
	size_t *count = arg;

	(void)n;
	(*count)++;
	return 0;
}

/*
 * Evicting inserters of pairs and singles at the cap, every thread
 * evicting the others' (and its own) connections: no call fails, an
 * evicted pair is gone whole, and at the end the table holds exactly the
 * cap, every pair in it whole.
 */
START_TEST(race_evict_pairs)
{
	struct conntab *t = t_table(B, 0, EV_CAP);
	struct tpair *p = malloc(EV_THREADS * EV_PER * sizeof(*p));
	struct tsingle *s = malloc(EV_THREADS * EV_PER * sizeof(*s));
	struct tevict e[EV_THREADS];
	pthread_t th[EV_THREADS];
	struct conntab_counters c = { .size = sizeof(c) };
	struct conntab_stats st;
	struct conntab_node *na, *nb;
	struct conntab_key ka, kb;
	size_t i, count = 0, whole = 0;
	unsigned long evicted_pairs = 0, refused = 0;

	tp_init(p, EV_THREADS * EV_PER);
	ts_init(s, EV_THREADS * EV_PER);
	for (i = 0; i < EV_THREADS; i++) {
		e[i] = (struct tevict){ t, p + i * EV_PER, s + i * EV_PER,
					(uint32_t)(i * EV_PER), 0, 0, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, tev_thread,
						&e[i]), 0);
	}
	for (i = 0; i < EV_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(e[i].errors, 0);
		evicted_pairs += e[i].evicted_pairs;
		refused += e[i].refused;
	}
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(t, tev_count, &count), 0);
	for (i = 0; i < EV_THREADS * EV_PER; i++) {
		tp_keys(p[i].id, &ka, &kb);
		if (i % EV_PER % 3 == 0)
			continue;	/* a single's slot */
		na = conntab_lookup(t, &ka);
		nb = conntab_lookup(t, &kb);
		ck_assert((na == &p[i].a) == (nb == &p[i].b));
		whole += na == &p[i].a;
	}
	rcu_read_unlock();
	/*
	 * Never above the cap; and every insert accounted for: it added a
	 * connection that is still here, or one that an eviction took
	 * since, or was refused.
	 */
	ck_assert_uint_le(count, EV_CAP);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, count);
	ck_assert_int_eq(conntab_counters(t, &c), 0);
	ck_assert_uint_eq(c.pairs, whole);
	ck_assert_uint_eq(c.evict_refused, refused);
	ck_assert_uint_eq(count + c.evictions + refused,
			  EV_THREADS * EV_PER);
	ck_assert_uint_gt(evicted_pairs, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(p);
	free(s);
}
END_TEST

/*
 * Counters while pair inserts fail: a table full of CF_CAP pairs, threads
 * trying pair inserts that must fail (-ENOSPC, or -EEXIST on a key
 * present), a monitor reading conntab_counters() and conntab_stats()
 * meanwhile. A failing insert links its lower half for a moment; it must
 * never show as a pair (pairs are counted once both halves are in), nor
 * take a connection out of the entries.
 */
#define CF_CAP		16
#define CF_THREADS	2
#define CF_TRIES	3000

struct tcount {
	struct conntab *t;
	struct tpair *p;	/* CF_TRIES fresh pairs: none is reused */
	uint32_t id;		/* keys of this thread's would-be pair */
	unsigned int errors;
};

static unsigned int cf_go;	/* the monitor is sampling */
static unsigned int cf_done;	/* writers finished */

static void *tcf_insert(void *arg)
{
	struct tcount *c = arg;
	struct conntab_key ka, kb, present;
	struct tpair *p;
	unsigned int i;
	int err;

	/*
	 * Fresh halves each try: a failed pair's halves may still be read
	 * by another writer's descent, and reusing them after a grace
	 * period is right but invisible to ThreadSanitizer (tsan.supp).
	 */
	rcu_register_thread();
	tp_keys(0, &present, &kb);	/* pair 0's a key: -EEXIST */
	while (!__atomic_load_n(&cf_go, __ATOMIC_ACQUIRE))
		caa_cpu_relax();
	for (i = 0; i < CF_TRIES; i++) {
		p = &c->p[i];
		tp_keys(c->id, &ka, &kb);
		if (i & 1) {
			err = conntab_insert_pair(c->t, &p->a, &ka, &p->b,
						  &present);
			c->errors += err != -EEXIST;
		} else {
			err = conntab_insert_pair(c->t, &p->a, &ka, &p->b,
						  &kb);
			c->errors += err != -ENOSPC;
		}
	}
	rcu_unregister_thread();
	__atomic_add_fetch(&cf_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(race_counts_in_flux)
{
	struct conntab *t = t_table(B, 0, CF_CAP);
	struct conntab_counters c = { .size = sizeof(c) };
	struct tpair p[CF_CAP];
	struct tcount w[CF_THREADS];
	pthread_t th[CF_THREADS];
	struct conntab_stats st;
	unsigned long samples = 0, bad_pairs = 0, bad_entries = 0;
	size_t i;

	tp_init(p, CF_CAP);
	for (i = 0; i < CF_CAP; i++)
		ck_assert_int_eq(tp_insert(t, &p[i]), 0);
	cf_go = cf_done = 0;
	for (i = 0; i < CF_THREADS; i++) {
		w[i] = (struct tcount){ t, malloc(CF_TRIES * sizeof(*p)),
					(uint32_t)(CF_CAP + i), 0 };
		ck_assert_ptr_nonnull(w[i].p);
		tp_init(w[i].p, CF_TRIES);
		ck_assert_int_eq(pthread_create(&th[i], NULL, tcf_insert,
						&w[i]), 0);
	}
	/*
	 * Counted, not asserted, while the writers use this stack; they
	 * start when the sampling does, so the two overlap.
	 */
	__atomic_store_n(&cf_go, 1, __ATOMIC_RELEASE);
	do {
		bad_pairs += conntab_counters(t, &c) || c.pairs != CF_CAP;
		conntab_stats(t, &st);
		bad_entries += st.entries != CF_CAP;
		samples++;
	} while (__atomic_load_n(&cf_done, __ATOMIC_ACQUIRE) < CF_THREADS);
	for (i = 0; i < CF_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(w[i].errors, 0);
	}
	ck_assert_uint_gt(samples, 0);
	ck_assert_uint_eq(bad_pairs, 0);
	ck_assert_uint_eq(bad_entries, 0);
	for (i = 0; i < CF_CAP; i++)
		tp_expect(t, &p[i], 1);
	conntab_destroy(t, NULL);
	rcu_barrier();
	for (i = 0; i < CF_THREADS; i++)
		free(w[i].p);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		pair_basic, pair_inval, pair_nospc, pair_remove, pair_timewait,
		pair_walks, pair_scan_resize, pair_destroy,
		pair_destroy_frees, pair_evict,
		counters_api,
	};
	const TTest *const races[] = {
		race_pair_vs_single, race_evict_pairs, race_counts_in_flux,
	};
	const char *only = getenv("T_PAIR_ONLY_RACES");
	Suite *s = suite_create("pair");
	int ret;

	rcu_register_thread();
	if (!only)
		t_add_backend_cases(s, per_backend,
				    sizeof(per_backend) / sizeof(per_backend[0]),
				    120);
	t_add_backend_cases(s, races, sizeof(races) / sizeof(races[0]), 300);
	ret = t_run(s, 1200);
	rcu_unregister_thread();
	return ret;
}
