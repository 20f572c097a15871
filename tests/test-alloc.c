/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure is an error, not a crash: with failalloc.c in this
 * program, make each allocation of conntab_create() fail in turn, then
 * make inserts meet failing allocations, and check the contract's answer
 * (NULL/ENOMEM, -ENOMEM with the table unchanged) and that the tables
 * keep working; pairs too (both halves or neither, removal without
 * memory, no victim beside an error: only the trie's pair inserts meet
 * -ENOMEM, the hash backends allocate nothing per insert, or only where
 * a failure defers a split). CONNTAB_TRIE (case trie-nomem): each writer
 * path that reshapes, built on purpose, with each of its allocations
 * failing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
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
 * Retired nodes go to call_rcu in batches (lib/trie/trie-mem.c): churn
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

/*
 * The writers' reshaping, each allocation failing in turn. A scenario is
 * a deterministic script of operations on a table it creates; its
 * trigger, ops [first, last), reshapes: an inflation cutting short
 * children in halves and sparse ones in pieces (ct_d_inflate(),
 * ct_d_half(), ct_k_piece()), the burst of a root to the sizing hint, a
 * halving that must rebuild a slot pair (ct_d_merge_items(),
 * ct_build()), short dense nodes turning sparse (ct_d_to_k()), an
 * insert into a full sparse node shared by 2^7 slots (ct_k_unshare()),
 * and an eviction whose newcomer and victim need memory. The ops before
 * the trigger run with every allocation working, the trigger with
 * allocation n failing (alone, then with all later ones) for n = 1, 2,
 * ... until it makes fewer: an insert or eviction answers 0 or -ENOMEM
 * (then nothing changed: the victim stays, the newcomer is out), a
 * remove 0; then every key is looked up, what failed is inserted again,
 * and the table destroyed.
 */
enum top_kind { OP_INS, OP_DEL, OP_EVICT };

struct top {
	enum top_kind kind;
	struct conntab_key k;	/* OP_INS, OP_EVICT: the new key */
	size_t ref;		/* OP_DEL, OP_EVICT: the op that inserted
				   the node to remove or evict */
};

struct tscript {
	struct top *op;
	size_t n, cap;
	size_t expected, max_entries;	/* the table's config */
	size_t first, last;		/* the trigger */
};

static size_t ts_push(struct tscript *sc, enum top_kind kind,
		      const struct conntab_key *k, size_t ref)
{
	if (sc->n == sc->cap) {
		sc->cap = sc->cap ? 2 * sc->cap : 256;
		sc->op = realloc(sc->op, sc->cap * sizeof(*sc->op));
		ck_assert_ptr_nonnull(sc->op);
	}
	sc->op[sc->n].kind = kind;
	if (k)
		sc->op[sc->n].k = *k;
	sc->op[sc->n].ref = ref;
	return sc->n++;
}

static size_t ts_ins(struct tscript *sc, uint32_t raddr, uint16_t rport)
{
	struct conntab_key k;

	tk(&k, raddr, rport);
	return ts_push(sc, OP_INS, &k, 0);
}

/* A run of a script: the node each insert made (NULL: none, or out). */
struct trun {
	struct conntab *t;
	struct tconn **node;
	int *err;
	struct conntab_node **ev;
};

static long rank_ref(struct conntab_node *n, void *arg)
{
	return n == arg ? 1 : -1;
}

/* Op @i; no Check call (it allocates). */
static int trun_op(struct trun *r, const struct tscript *sc, size_t i)
{
	const struct top *o = &sc->op[i];
	struct tconn *c;
	int err;

	r->ev[i] = NULL;
	switch (o->kind) {
	case OP_INS:
	case OP_EVICT:
		c = r->node[i];
		conntab_node_init(&c->node);
		if (o->kind == OP_INS)
			err = conntab_insert(r->t, &c->node, &o->k);
		else
			do
				err = conntab_insert_evict(r->t, &c->node,
					&o->k, rank_ref,
					&r->node[o->ref]->node, &r->ev[i]);
			while (err == -ENOSPC);
		if (!err)
			c->mark = 1;		/* in */
		if (r->ev[i])
			t_conn_of(r->ev[i])->mark = 0;
		return err;
	case OP_DEL:
		err = conntab_remove(r->t, &r->node[o->ref]->node);
		if (!err)
			r->node[o->ref]->mark = 0;
		return err;
	}
	return -EINVAL;
}

static void trun_start(struct trun *r, const struct tscript *sc)
{
	struct conntab_config cfg = { .backend = CONNTAB_TRIE,
				      .expected = sc->expected,
				      .max_entries = sc->max_entries };
	size_t i;

	r->t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(r->t);
	r->node = calloc(sc->n, sizeof(*r->node));
	r->err = calloc(sc->n, sizeof(*r->err));
	r->ev = calloc(sc->n, sizeof(*r->ev));
	ck_assert(r->node && r->err && r->ev);
	for (i = 0; i < sc->n; i++)
		if (sc->op[i].kind != OP_DEL)
			r->node[i] = t_conn_new((uint32_t)i);
}

/* Every node in is found, every key out is not, the counts agree. */
static void trun_check(struct trun *r, const struct tscript *sc,
		       const char *what, long n)
{
	struct conntab_stats st;
	struct conntab_node *f;
	size_t i, in = 0;

	rcu_read_lock();
	for (i = 0; i < sc->n; i++) {
		if (sc->op[i].kind == OP_DEL)
			continue;
		f = conntab_lookup(r->t, &sc->op[i].k);
		if (r->node[i]->mark) {
			in++;
			ck_assert_msg(f == &r->node[i]->node, "%s, allocation "
				      "%ld failing: op %zu's key: lookup %p, "
				      "not %p", what, n, i, (void *)f,
				      (void *)&r->node[i]->node);
		} else if (f == &r->node[i]->node) {
			ck_abort_msg("%s, allocation %ld failing: op %zu's "
				     "node found, not in", what, n, i);
		}
	}
	rcu_read_unlock();
	conntab_stats(r->t, &st);
	ck_assert_msg(st.entries == in, "%s, allocation %ld failing: %zu "
		      "entries, %zu in", what, n, st.entries, in);
}

static void trun_end(struct trun *r, const struct tscript *sc)
{
	size_t i;

	conntab_destroy(r->t, NULL);
	rcu_barrier();
	for (i = 0; i < sc->n; i++)
		if (r->node[i])
			t_conn_free_now(r->node[i]);
	free(r->node);
	free(r->err);
	free(r->ev);
}

/* Ops [0, upto) with nothing failing. */
static void trun_plain(struct trun *r, const struct tscript *sc, size_t upto)
{
	size_t i;
	int err;

	for (i = 0; i < upto; i++) {
		err = trun_op(r, sc, i);
		ck_assert_msg(err == 0, "op %zu: %d", i, err);
	}
}

/*
 * The first op after which @probe's value changes, running the script
 * with nothing failing: the trigger.
 */
static size_t ts_find(const struct tscript *sc,
		      size_t (*probe)(struct conntab *t))
{
	struct trun r;
	size_t i, v;

	trun_start(&r, sc);
	v = probe(r.t);
	for (i = 0; i < sc->n; i++) {
		ck_assert_int_eq(trun_op(&r, sc, i), 0);
		if (probe(r.t) != v)
			break;
	}
	trun_end(&r, sc);
	ck_assert_msg(i < sc->n, "the trigger never happened");
	return i;
}

static size_t probe_splits(struct conntab *t)
{
	struct conntab_resize_stats rs;

	conntab_resize_stats(t, &rs);
	return rs.splits;
}

static size_t probe_merges(struct conntab *t)
{
	struct conntab_resize_stats rs;

	conntab_resize_stats(t, &rs);
	return rs.merges;
}

static size_t probe_root(struct conntab *t)
{
	struct conntab_resize_stats rs;

	conntab_resize_stats(t, &rs);
	return rs.dir_slots;
}

/* The trigger, each allocation failing in turn; returns its count. */
static long ts_run(const struct tscript *sc, const char *what)
{
	struct trun r;
	size_t i;
	long n, used, clean, runs = 0;
	int sticky, err;

	/* What the trigger allocates when nothing fails. */
	trun_start(&r, sc);
	trun_plain(&r, sc, sc->first);
	fa_arm(LONG_MAX, 0, 0);
	for (i = sc->first; i < sc->last; i++)
		r.err[i] = trun_op(&r, sc, i);
	clean = fa_disarm();
	for (i = sc->first; i < sc->last; i++)
		ck_assert_int_eq(r.err[i], 0);
	trun_end(&r, sc);
	ck_assert_msg(clean > 0, "%s: the trigger allocates nothing", what);
	/* Failures make more: the writers try again where they can. */
	for (sticky = 0; sticky < 2; sticky++)
	for (n = 1;; n++) {
		trun_start(&r, sc);
		trun_plain(&r, sc, sc->first);
		fa_arm(n, sticky, 0);
		for (i = sc->first; i < sc->last; i++)
			r.err[i] = trun_op(&r, sc, i);
		used = fa_disarm();
		for (i = sc->first; i < sc->last; i++) {
			err = r.err[i];
			ck_assert_msg(err == 0 || (err == -ENOMEM &&
						   sc->op[i].kind != OP_DEL),
				      "%s: op %zu with allocation %ld failing"
				      "%s: %d", what, i, n,
				      sticky ? " on" : "", err);
			if (sc->op[i].kind == OP_EVICT)
				ck_assert_msg(err ? !r.ev[i] :
					      r.ev[i] == &r.node[sc->op[i].ref]
							  ->node,
					      "%s: eviction %d with victim %p",
					      what, err, (void *)r.ev[i]);
		}
		trun_check(&r, sc, what, n);
		/* What failed goes in now. */
		for (i = sc->first; i < sc->last; i++)
			if (r.err[i])
				ck_assert_int_eq(trun_op(&r, sc, i), 0);
		trun_check(&r, sc, what, n);
		trun_end(&r, sc);
		runs++;
		if (used < n)
			break;
	}
	printf("trie: %s: %ld allocations; %ld runs, each with one failing "
	       "(or it and all later ones)\n", what, clean, runs);
	return clean;
}

/*
 * A root of 4 slots over the remote address's top 2 bits: slots 0 and 1
 * get 33 keys each in bits [82, 88), 31 of them below 32 (a short dense
 * child of 64 slots, heavy), slots 2 and 3 sparse children of 8; the
 * second short child makes half the slots heavy and the root inflates:
 * each short child is cut in a half of 31 children and one of 2, each
 * sparse one in pieces.
 */
static void sc_shorts(struct tscript *sc)
{
	uint32_t s, j, v;

	for (s = 2; s < 4; s++)
		for (j = 0; j < 8; j++)
			ts_ins(sc, s << 30 | (j * 8) << 24, 1);
	for (s = 0; s < 2; s++)
		for (j = 0; j < 33; j++) {
			v = j < 31 ? j : 32 + 16 * (j - 31);
			ts_ins(sc, s << 30 | v << 24, 1);
		}
}

START_TEST(trie_inflate_nomem)
{
	struct tscript sc = { 0 };

	sc_shorts(&sc);
	sc.first = ts_find(&sc, probe_splits);
	sc.last = sc.first + 1;
	ts_run(&sc, "inflation cutting short and sparse children");
	free(sc.op);
}
END_TEST

/* The 33rd key bursts the root into a node of 2^9 slots (expected 2^13). */
START_TEST(trie_hint_nomem)
{
	struct tscript sc = { .expected = (size_t)1 << 13 };
	uint32_t i;

	for (i = 0; i < 33; i++)
		ts_ins(&sc, (i * 15u) << 23, 1);
	sc.first = ts_find(&sc, probe_root);
	ck_assert_uint_eq(sc.first, 32);
	sc.last = sc.first + 1;
	ts_run(&sc, "root burst to the sizing hint");
	free(sc.op);
}
END_TEST

static size_t probe_root128(struct conntab *t)
{
	return probe_root(t) >= 128;
}

/*
 * Random keys until the root inflates from 64 slots to 128: its sparse
 * children that end within 4 bits of its old end are cut in pieces.
 */
START_TEST(trie_inflate_pieces_nomem)
{
	struct tscript sc = { 0 };
	uint64_t r, s = 7777;
	size_t i;

	for (i = 0; i < 3000; i++) {
		s ^= s >> 12;
		s ^= s << 25;
		s ^= s >> 27;
		r = s * 0x2545f4914f6cdd1dull;
		ts_ins(&sc, (uint32_t)r, (uint16_t)(r >> 32));
	}
	sc.first = ts_find(&sc, probe_root128);
	sc.last = sc.first + 1;
	sc.n = sc.last;
	ts_run(&sc, "inflation to 128 slots cutting sparse children");
	free(sc.op);
}
END_TEST

/*
 * A short dense root (33 keys differing in bits [82, 88) of the key
 * string only), and a key leaving its prefix at bit 81, in the byte its
 * window starts in: the root is opened, its children and the key built
 * into a new node.
 */
START_TEST(trie_split_above_nomem)
{
	struct tscript sc = { 0 };
	uint32_t v;

	for (v = 0; v < 33; v++)
		ts_ins(&sc, v << 24, 1);
	sc.first = sc.n;
	ts_ins(&sc, 0x40000000u, 1);
	sc.last = sc.n;
	ts_run(&sc, "insert above a short dense node");
	free(sc.op);
}
END_TEST

/*
 * After the inflation above: slots 2 and 3's keys and slot 1's low ones
 * go, leaving a root of 8 slots mostly empty or light; when it halves,
 * slot 0's pair holds a short dense half of 31 and a sparse one of 2,
 * 33 items, too many for one sparse node: the builder. Then slot 0's low
 * keys go: the short node turns sparse.
 */
START_TEST(trie_halve_nomem)
{
	struct tscript sc = { 0 };
	size_t i, ins, halve;

	sc_shorts(&sc);
	ins = sc.n;
	for (i = 0; i < 16; i++)			/* slots 2, 3 */
		ts_push(&sc, OP_DEL, NULL, i);
	for (i = 16 + 33; i < 16 + 33 + 31; i++)	/* slot 1, low */
		ts_push(&sc, OP_DEL, NULL, i);
	halve = sc.n;
	for (i = 16; i < 16 + 31; i++)			/* slot 0, low */
		ts_push(&sc, OP_DEL, NULL, i);
	sc.first = ts_find(&sc, probe_merges);
	ck_assert_uint_ge(sc.first, ins);
	ck_assert_uint_lt(sc.first, halve);
	sc.last = sc.first + 1;
	ts_run(&sc, "halving that rebuilds a slot pair");
	/* Slot 0's low keys: the short dense half turns sparse. */
	sc.first = halve;
	sc.last = sc.n;
	ts_run(&sc, "short dense node emptied to sparse");
	free(sc.op);
}
END_TEST

/*
 * An insert into a full sparse node x = {K1, K2, K1', K2'} that 2^7
 * slots of the root share (the shape of trie_unshare_nomem): x is cut
 * into its pieces first (over 64 slots: an array from calloc()). A pair
 * node is built with room for 4 (ct_build_pair()): K1' and K2', K1 and
 * K2 with a bit set three before x's end (past the root's), fill it.
 */
START_TEST(trie_unshare_insert_nomem)
{
	struct tscript sc = { 0 };
	struct tset ts = { .rng = 88172645463325252ull };
	struct conntab *t = t_table(CONNTAB_TRIE, 0, 0);
	unsigned int w0, w, xend;
	size_t i, a;

	/* The bulk keys that grow the root before and after K1, K2. */
	while (root_w(t) < 2)
		tset_bulk(&ts, t, 16);
	a = ts.n;
	w0 = root_w(t);
	xend = (80 + w0 + 16) & ~7u;
	while ((w = root_w(t)) < w0 + 7) {
		ck_assert_uint_lt(80 + w + 4, xend);
		tset_bulk(&ts, t, 512);
	}
	for (i = 0; i < ts.n; i++) {
		if (i == a) {
			/* K1, K2 part at x's last bit. */
			ts_ins(&sc, 0xc0000000u, 7);
			ts_ins(&sc, 0xc0000000u |
				    1u << (31 - (xend - 1 - 80)), 7);
			ts_ins(&sc, 0xc0000000u |
				    1u << (31 - (xend - 3 - 80)), 7);
			ts_ins(&sc, 0xc0000000u |
				    1u << (31 - (xend - 1 - 80)) |
				    1u << (31 - (xend - 3 - 80)), 7);
		}
		if (ts.c[i])
			ts_push(&sc, OP_INS, conntab_node_key(&ts.c[i]->node),
				0);
	}
	tset_destroy(&ts, t);
	/* K3 parts from them at the bit before the last: x, full, must grow. */
	sc.first = sc.n;
	ts_ins(&sc, 0xc0000000u | 1u << (31 - (xend - 2 - 80)), 7);
	sc.last = sc.n;
	ts_run(&sc, "insert into a full sparse node shared by 2^7 slots");
	free(sc.op);
}
END_TEST

/*
 * The room of a pair node, counted in allocations. Ports 0 and 2 part
 * at the port's bit before the last: a sparse node over the key's last
 * two bits, built with room for four (ct_build_pair()), so ports 1 and
 * 3 go in place. Then port 1 comes and goes, 64 times, over two live
 * entries in capacity 4, which ct_k_shrink() must leave as it is
 * (compaction only above capacity 4, at a quarter of it): a node copied
 * down at each remove and grown again at each insert would take two
 * allocations a round. Each round's node is used once: a removed node
 * is not reused within a grace period.
 */
#define PAIR_ROUNDS	64

START_TEST(trie_pair_room)
{
	struct conntab_node *c = calloc(4 + PAIR_ROUNDS, sizeof(*c));
	struct conntab *t = t_table(CONNTAB_TRIE, 0, 0);
	struct conntab_stats st;
	struct conntab_key k;
	size_t mem;
	long used;
	int i;

	ck_assert_ptr_nonnull(c);
	for (i = 0; i < 4 + PAIR_ROUNDS; i++)
		conntab_node_init(&c[i]);
	for (i = 0; i < 2; i++) {
		tk(&k, 0xc6336407u, (uint16_t)(2 * i));
		ck_assert_int_eq(conntab_insert(t, &c[i], &k), 0);
	}
	/* Check allocates: nothing of it while armed. */
	fa_arm(LONG_MAX, 0, 0);
	for (i = 2; i < 4; i++) {
		tk(&k, 0xc6336407u, (uint16_t)(2 * i - 3));
		if (conntab_insert(t, &c[i], &k) != 0)
			break;
	}
	used = fa_disarm();
	ck_assert_int_eq(i, 4);
	ck_assert_msg(used == 0, "a pair node's third and fourth keys: "
		      "%ld allocations", used);
	ck_assert_int_eq(conntab_remove(t, &c[3]), 0);
	ck_assert_int_eq(conntab_remove(t, &c[2]), 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 2);
	mem = st.memory;
	tk(&k, 0xc6336407u, 1);
	fa_arm(LONG_MAX, 0, 0);
	for (i = 4; i < 4 + PAIR_ROUNDS; i++) {
		if (conntab_insert(t, &c[i], &k) != 0 ||
		    conntab_remove(t, &c[i]) != 0)
			break;
	}
	used = fa_disarm();
	ck_assert_int_eq(i, 4 + PAIR_ROUNDS);
	ck_assert_msg(used == 0, "a third key in and out of a pair node, "
		      "%d rounds: %ld allocations", PAIR_ROUNDS, used);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(st.memory, mem);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
}
END_TEST

/*
 * At the cap, a newcomer that splits a leaf (a new node) evicts a victim
 * from a sparse node grown to 8 entries and emptied to 3: the victim's
 * removal compacts it. A table of 8 (all of it offered to the rank),
 * the victim chosen by its rank.
 */
START_TEST(trie_evict_nomem)
{
	struct tscript sc = { .max_entries = 8 };
	size_t i;

	/* One remote address, ports 1..8: a sparse node grown to 8. */
	for (i = 1; i <= 8; i++)
		ts_ins(&sc, 0xc6336407u, (uint16_t)i);
	for (i = 3; i < 8; i++)			/* ports 4..8 go: 3 left */
		ts_push(&sc, OP_DEL, NULL, i);
	for (i = 1; i <= 5; i++)		/* other addresses: full */
		ts_ins(&sc, 0x0b000000u + (uint32_t)i * 0x10000u, 1);
	sc.first = sc.n;
	/* Port 1 goes for a key next to a leaf alone. */
	ts_push(&sc, OP_EVICT, NULL, 0);
	tk(&sc.op[sc.n - 1].k, 0x0b010000u, 2);
	sc.last = sc.n;
	ts_run(&sc, "eviction at the cap");
	free(sc.op);
}
END_TEST

/*
 * Pairs meeting allocation failures: every pair insert of a growing table
 * with every 1st to 4th allocation of the library failing is 0 or -ENOMEM,
 * and -ENOMEM leaves neither key (whichever half's insert failed, the
 * other is out again) and both nodes free for a retry after a grace
 * period; evicting pair inserts under failures never return an error with
 * a victim; pair removal needs no memory.
 */
struct fa_pair {
	struct conntab_node a, b;
};

static long fa_rank_any(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	return 1;
}

START_TEST(pair_nomem)
{
	enum { N = 1500 };
	struct conntab *t = t_table(B, 0, 0), *u;
	struct fa_pair *p = calloc(N, sizeof(*p));
	struct conntab_node *ev, *na, *nb;
	struct conntab_stats st;
	struct conntab_key ka, kb;
	size_t i, nomem = 0;
	int err;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < N; i++) {
		conntab_node_init(&p[i].a);
		conntab_node_init(&p[i].b);
	}
	for (i = 0; i < N; i++) {
		t_key(&ka, (uint32_t)(2 * i));
		t_key(&kb, (uint32_t)(2 * i + 1));
		fa_arm(1 + (int)(i % 4), 0, 1);
		err = conntab_insert_pair(t, &p[i].a, &ka, &p[i].b, &kb);
		fa_disarm();
		ck_assert_msg(err == 0 || err == -ENOMEM, "%s: pair %zu: %d",
			      BN, i, err);
		if (!err)
			continue;
		nomem++;
		rcu_read_lock();
		na = conntab_lookup(t, &ka);
		nb = conntab_lookup(t, &kb);
		rcu_read_unlock();
		ck_assert_ptr_null(na);
		ck_assert_ptr_null(nb);
		synchronize_rcu();
		ck_assert_int_eq(conntab_insert_pair(t, &p[i].a, &ka, &p[i].b,
						     &kb), 0);
	}
	printf("%s: %d pair inserts, %zu got -ENOMEM and were retried\n",
	       BN, N, nomem);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, N);
	/* Removal through either half needs no memory. */
	fa_arm(1, 1, 1);
	for (i = 0; i < N; i += 2) {
		err = conntab_remove(t, i % 4 ? &p[i].a : &p[i].b);
		if (err)
			break;
	}
	fa_disarm();
	ck_assert_msg(err == 0, "%s: pair remove %zu under ENOMEM: %d", BN, i,
		      err);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, N / 2);
	conntab_destroy(t, NULL);

	/* At a cap: evicting pair inserts, every allocation failing. */
	synchronize_rcu();
	u = t_table(B, 0, 8);
	for (i = 0; i < N; i++) {
		conntab_node_init(&p[i].a);
		conntab_node_init(&p[i].b);
		t_key(&ka, (uint32_t)(2 * i));
		t_key(&kb, (uint32_t)(2 * i + 1));
		fa_arm(1 + (int)(i % 3), 0, 1);
		err = conntab_insert_pair_evict(u, &p[i].a, &ka, &p[i].b, &kb,
						fa_rank_any, NULL, &ev);
		fa_disarm();
		ck_assert_msg(err == 0 || err == -ENOMEM,
			      "%s: pair_evict %zu: %d", BN, i, err);
		if (err)
			ck_assert_ptr_null(ev);
		if (i > 200)
			break;
	}
	conntab_stats(u, &st);
	ck_assert_uint_le(st.entries, 8);
	conntab_destroy(u, NULL);
	rcu_barrier();
	free(p);
}
END_TEST

static void warm_up_cb(struct rcu_head *rh)
{
}

int main(void)
{
	const TTest *const per_backend[] = {
		create_nomem, insert_nomem, pair_nomem,
	};
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
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 60);
	if (conntab_backend_available(CONNTAB_TRIE)) {
		TCase *tc = tcase_create("trie-nomem");

		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, trie_unshare_nomem);
		tcase_add_test(tc, trie_unshare_insert_nomem);
		tcase_add_test(tc, trie_inflate_nomem);
		tcase_add_test(tc, trie_inflate_pieces_nomem);
		tcase_add_test(tc, trie_hint_nomem);
		tcase_add_test(tc, trie_split_above_nomem);
		tcase_add_test(tc, trie_halve_nomem);
		tcase_add_test(tc, trie_evict_nomem);
		tcase_add_test(tc, trie_pair_room);
		suite_add_tcase(s, tc);
	}
	ret = t_run(s, 300);
	printf("allocations failed on purpose: %ld\n", fa_failed_total());
	rcu_unregister_thread();
	return ret;
}
