/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Contract of conntab_insert_evict(), every backend and hash: an insert
 * below the cap or without one; at the cap the best-ranked node of a
 * sample of at least 8 makes room (the count never above the cap, the
 * victim unlinked, the newcomer found); assured nodes (negative rank)
 * never go, and when every sampled node is assured: -ENOSPC with nothing
 * changed; a present key is -EEXIST with nothing evicted; with random
 * ranks the victims come from the top of the distribution; readers
 * of assured keys never miss while another thread evicts; and evictions
 * racing each other and removes keep the contract (no error with a
 * victim, one owner per victim, no node back after its remove said
 * -ENOENT, the cap).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

#define B		((enum conntab_backend)_i)

struct rank_ctx {
	unsigned long calls;	/* rank calls in the last insert_evict */
	unsigned long willing;	/* of which ranked >= 0 */
	long top;		/* the largest rank offered */
};

/* The rank is the node's own field; negative: assured. */
static long rank_fn(struct conntab_node *n, void *arg)
{
	struct rank_ctx *r = arg;
	struct tconn *c = t_conn_of(n);

	ck_assert_uint_eq(c->magic, T_MAGIC_LIVE);
	r->calls++;
	r->willing += c->rank >= 0;
	if (c->rank > r->top)
		r->top = c->rank;
	return c->rank;
}

static int evict(struct conntab *t, struct tconn *c, uint32_t key,
		 struct rank_ctx *r, struct conntab_node **ev)
{
	struct conntab_key k;

	t_key(&k, key);
	r->calls = 0;
	r->willing = 0;
	r->top = -1;
	*ev = (struct conntab_node *)1;	/* must be overwritten */
	return conntab_insert_evict(t, &c->node, &k, rank_fn, r, ev);
}

START_TEST(evict_no_cap)
{
	static struct tconn c[100];
	struct conntab_node *ev;
	struct rank_ctx r;
	struct conntab *t;
	uint32_t i;

	t_conns_init(c, 100);
	/* max_entries 0: inserts, the rank never asked. */
	t = t_table(B, 0, 0);
	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(evict(t, &c[i], i, &r, &ev), 0);
		ck_assert_ptr_null(ev);
		ck_assert_uint_eq(r.calls, 0);
	}
	t_expect_counts(t, 100, 0);
	/* Bad arguments. */
	ck_assert_int_eq(conntab_insert_evict(t, &c[0].node, NULL, rank_fn,
					      &r, &ev), -EINVAL);
	ck_assert_int_eq(conntab_insert_evict(t, &c[0].node,
					      conntab_node_key(&c[1].node),
					      NULL, &r, &ev), -EINVAL);
	ck_assert_int_eq(conntab_insert_evict(t, &c[0].node,
					      conntab_node_key(&c[1].node),
					      rank_fn, &r, NULL), -EINVAL);
	ck_assert_int_eq(conntab_insert_evict(NULL, &c[0].node,
					      conntab_node_key(&c[1].node),
					      rank_fn, &r, &ev), -EINVAL);
	ck_assert_ptr_null(ev);
	/* In a table: -EBUSY. */
	ck_assert_int_eq(evict(t, &c[0], 5000, &r, &ev), -EBUSY);
	conntab_destroy(t, NULL);

	/* Below the cap: inserts. */
	t_conns_init(c, 100);
	t = t_table(B, 0, 50);
	for (i = 0; i < 49; i++) {
		ck_assert_int_eq(evict(t, &c[i], i, &r, &ev), 0);
		ck_assert_ptr_null(ev);
		ck_assert_uint_eq(r.calls, 0);
	}
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * At the cap: every insert evicts one, the count stays at the cap. Some
 * nodes are in TIME_WAIT (every seventh, in place), so the victims come
 * from both states (and both chains of the split backend).
 */
START_TEST(evict_at_cap)
{
	enum { CAP = 200, MORE = 1500 };
	static struct tconn c[CAP + MORE + 1];
	struct conntab_node *ev;
	struct conntab_key k;
	struct rank_ctx r;
	struct conntab *t;
	size_t tw = 0, evicted_tw = 0;
	uint64_t rng = 42;
	uint32_t i;

	t_conns_init(c, CAP + MORE + 1);
	t = t_table(B, CAP, CAP);
	for (i = 0; i < CAP; i++) {
		c[i].rank = (long)(th_rnd(&rng) % 1000);
		ck_assert_int_eq(evict(t, &c[i], i, &r, &ev), 0);
		ck_assert_ptr_null(ev);
	}
	/* A present key: -EEXIST, nothing evicted, the rank not asked. */
	ck_assert_int_eq(evict(t, &c[CAP + MORE], 7, &r, &ev), -EEXIST);
	ck_assert_ptr_null(ev);
	t_expect_counts(t, CAP, 0);
	for (i = CAP; i < CAP + MORE; i++) {
		c[i].rank = (long)(th_rnd(&rng) % 1000);
		ck_assert_int_eq(evict(t, &c[i], i, &r, &ev), 0);
		ck_assert_ptr_nonnull(ev);
		/* At least 8 nodes offered, the victim their top. */
		ck_assert_uint_ge(r.calls, 8);
		ck_assert_int_eq(t_conn_of(ev)->rank, r.top);
		/* The victim is out, the newcomer in, the count at the cap. */
		ck_assert_ptr_null(t_lookup(t, conntab_node_key(ev)));
		ck_assert_int_eq(conntab_remove(t, ev), -ENOENT);
		if (conntab_node_state(ev) == CONNTAB_TIMEWAIT) {
			evicted_tw++;
			tw--;
		}
		t_key(&k, i);
		t_expect_found(t, &k, &c[i].node, CONNTAB_ESTABLISHED);
		if (i % 7 == 0) {
			ck_assert_int_eq(conntab_timewait(t, &c[i].node,
							  &c[i].node), 0);
			tw++;
		}
		t_expect_counts(t, CAP, tw);
	}
	ck_assert_uint_gt(evicted_tw, 0);
	conntab_destroy(t, NULL);
}
END_TEST

/*
 * Ranks uniform in [0, 1000), a quarter of the nodes assured (-1). Each
 * victim must be the top rank of its sample, never an assured node. From
 * the full table, EVICT newcomers of rank 0 (so that they are never
 * chosen over the old) evict the tops of samples of at least 8 (~6
 * willing): their mean rank is about 1000 * 6/7, where a choice blind to
 * the ranks would average 500. Then a table of assured nodes only: every
 * insert is -ENOSPC, *evicted NULL, the newcomer unclaimed, nothing
 * changed.
 */
START_TEST(evict_ranks)
{
	enum { CAP = 2048, EVICT = 256 };
	static struct tconn c[CAP + EVICT];
	struct conntab_node *ev;
	struct conntab_key k;
	struct rank_ctx r;
	struct conntab *t;
	uint64_t rng = 7, sum = 0, n = 0;
	uint32_t i;
	int err;

	t_conns_init(c, CAP + EVICT);
	t = t_table(B, CAP, CAP);
	for (i = 0; i < CAP + EVICT; i++) {
		c[i].rank = i >= CAP ? 0 : i % 4 == 0 ? -1 :
			    (long)(th_rnd(&rng) % 1000);
		err = evict(t, &c[i], i, &r, &ev);
		if (err == -ENOSPC) {
			/* Only if no sampled node was willing to go. */
			ck_assert_uint_eq(r.willing, 0);
			ck_assert_ptr_null(ev);
			continue;
		}
		ck_assert_int_eq(err, 0);
		if (i < CAP) {
			ck_assert_ptr_null(ev);
			continue;
		}
		ck_assert_ptr_nonnull(ev);
		/* The top of its sample, which had at least 8. */
		ck_assert_uint_ge(r.calls, 8);
		ck_assert_int_eq(t_conn_of(ev)->rank, r.top);
		sum += (uint64_t)t_conn_of(ev)->rank;
		n++;
	}
	ck_assert_uint_gt(n, EVICT / 2);
	ck_assert_uint_gt(sum / n, 700);
	/* Every assured node is still there. */
	for (i = 0; i < CAP; i += 4) {
		t_key(&k, i);
		t_expect_found(t, &k, &c[i].node, CONNTAB_ESTABLISHED);
	}
	t_expect_counts(t, CAP, 0);
	conntab_destroy(t, NULL);

	/* Nothing to evict: -ENOSPC, nothing changes. */
	t_conns_init(c, CAP + 1);
	t = t_table(B, CAP, CAP);
	for (i = 0; i < CAP; i++) {
		c[i].rank = -1;
		ck_assert_int_eq(evict(t, &c[i], i, &r, &ev), 0);
	}
	c[CAP].rank = 5;
	ck_assert_int_eq(evict(t, &c[CAP], CAP, &r, &ev), -ENOSPC);
	ck_assert_ptr_null(ev);
	ck_assert_uint_ge(r.calls, 8);
	t_key(&k, CAP);
	ck_assert_ptr_null(t_lookup(t, &k));
	t_expect_counts(t, CAP, 0);
	/* The newcomer was released: it can go into another table. */
	conntab_destroy(t, NULL);
	t = t_table(B, 0, 0);
	ck_assert_int_eq(conntab_insert(t, &c[CAP].node, &k), 0);
	conntab_destroy(t, NULL);
}
END_TEST

/* Tables that hold fewer than 8 at their cap: all of them are offered. */
START_TEST(evict_small)
{
	static struct tconn c[64];
	struct conntab_node *ev;
	struct rank_ctx r;
	struct conntab *t;
	uint32_t cap, i;

	for (cap = 1; cap <= 9; cap++) {
		t_conns_init(c, 64);
		t = t_table(B, 0, cap);
		for (i = 0; i < 64; i++) {
			c[i].rank = (long)i;
			ck_assert_int_eq(evict(t, &c[i], i, &r, &ev), 0);
			if (i < cap)
				continue;
			/* The newest before this one has the top rank. */
			ck_assert_uint_ge(r.calls, cap < 8 ? cap : 8);
			ck_assert_ptr_nonnull(ev);
			if (cap <= 8)
				ck_assert_ptr_eq(ev, &c[i - 1].node);
		}
		t_expect_counts(t, cap, 0);
		conntab_destroy(t, NULL);
	}
}
END_TEST

/*
 * Readers look up the assured keys all the time while a writer keeps a
 * full table evicting: an assured key never misses, and the count never
 * goes above the cap (the writer checks stats after every insert).
 */
enum { C_CAP = 4096, C_ASSURED = 1024 };

struct evictor {
	struct conntab *t;
	int stop;			/* atomic: set by the main thread */
	unsigned long evictions;
	unsigned long lookups, misses;
	unsigned long stats, over;	/* stats read, and above the cap */
};

static void *evict_reader(void *arg)
{
	struct evictor *e = arg;
	struct conntab_node *n;
	struct conntab_key k;
	unsigned long nlook = 0;
	uint64_t rng = 99;
	uint32_t id;

	rcu_register_thread();
	while (!__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
		id = (uint32_t)(th_rnd(&rng) % C_ASSURED);
		t_key(&k, id);
		rcu_read_lock();
		n = conntab_lookup(e->t, &k);
		if (!n)
			__atomic_fetch_add(&e->misses, 1, __ATOMIC_RELAXED);
		else
			th_check_node(n, &k, id, "evict reader");
		rcu_read_unlock();
		__atomic_fetch_add(&e->lookups, 1, __ATOMIC_RELAXED);
		/*
		 * The counts while evictions move nodes between stripes
		 * and segments: never above the cap, as no instant is.
		 */
		if (++nlook % 16 == 0) {
			struct conntab_stats st;

			conntab_stats(e->t, &st);
			if (st.entries > C_CAP || st.timewait > st.entries)
				__atomic_fetch_add(&e->over, 1,
						   __ATOMIC_RELAXED);
			__atomic_fetch_add(&e->stats, 1, __ATOMIC_RELAXED);
		}
	}
	rcu_unregister_thread();
	return NULL;
}

/* destroy's release: no reader is left. */
static void release_free(struct conntab_node *n)
{
	t_conn_free_now(t_conn_of(n));
}

START_TEST(evict_concurrent)
{
	struct evictor e = { 0 };
	struct conntab_node *ev;
	struct conntab_stats st;
	struct conntab_key k;
	struct rank_ctx r;
	struct tconn *c;
	pthread_t th;
	uint64_t rng = 3;
	uint32_t i;
	int err;

	th_reset();
	e.t = t_table(B, 0, C_CAP);	/* exthash grows, then evicts */
	for (i = 0; i < C_CAP; i++) {
		c = t_conn_new(i);
		c->rank = i < C_ASSURED ? -1 : (long)(th_rnd(&rng) % 1000);
		t_key(&k, i);
		ck_assert_int_eq(conntab_insert(e.t, &c->node, &k), 0);
	}
	ck_assert_int_eq(pthread_create(&th, NULL, evict_reader, &e), 0);
	/* Bounded by work: enough evictions, and readers that ran. */
	for (i = C_CAP; i < C_CAP + 200000 &&
	     (i < C_CAP + 5000 ||
	      __atomic_load_n(&e.lookups, __ATOMIC_RELAXED) < 20000); i++) {
		c = t_conn_new(i);
		c->rank = (long)(th_rnd(&rng) % 1000);
		t_key(&k, i);
		r.calls = r.willing = 0;
		err = conntab_insert_evict(e.t, &c->node, &k, rank_fn, &r,
					   &ev);
		if (err == -ENOSPC) {
			/* A sample of assured nodes only (p ~ 4^-8). */
			ck_assert_uint_eq(r.willing, 0);
			ck_assert_ptr_null(ev);
			free(c);
			continue;
		}
		ck_assert_int_eq(err, 0);
		ck_assert_ptr_nonnull(ev);
		ck_assert_uint_ge(t_conn_of(ev)->id, C_ASSURED);
		th_retire(t_conn_of(ev));
		if (i % 64 == 0) {
			conntab_stats(e.t, &st);
			ck_assert_uint_le(st.entries, C_CAP);
		}
		e.evictions++;
	}
	__atomic_store_n(&e.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	ck_assert_uint_eq(e.misses, 0);
	ck_assert_uint_eq(th_errors(), 0);
	ck_assert_uint_gt(e.lookups, 0);
	ck_assert_uint_gt(e.stats, 0);
	ck_assert_uint_eq(e.over, 0);
	t_expect_counts(e.t, C_CAP, 0);
	rcu_barrier();
	conntab_destroy(e.t, release_free);
	th_quarantine_flush();
}
END_TEST

/*
 * The contract of an eviction under races, every backend: an error
 * never comes with a victim (-EEXIST: nothing evicted), a victim is
 * owned by exactly one caller, and a conntab_remove() racing the
 * eviction of its node answers 0 (the node was still in the table: the
 * eviction took another victim, or failed and left it there) or -ENOENT
 * (evicted), after which the node is never found again; the count never
 * passes the cap. CL_EVICTORS threads insert_evict newcomers drawn from
 * twice the cap's keys, so that two of them often want the same key (one
 * fails with -EEXIST after it found the table full) or the key of
 * another's victim; a sampler reads the counts.
 *
 * First at caps of 1, 2 and 3, evictions only: once full the table
 * stays full, and with every rank non-negative -ENOSPC is a breach on
 * every backend (evict_tiny_cap: a sample that met another writer's
 * lock or claim tries again, as the trie always did). Then at a cap of 4
 * with a remover that takes out nodes it finds: -ENOSPC is a breach
 * there too, as an insert whose sample found nothing because a remove
 * emptied the table tries again on the room the remove made.
 *
 * (At ccd6cc6 the hash backends answered -ENOSPC there: an evicting
 * insert into a table at cap 2 whose other node's stripe another
 * evictor held for the whole spin, or that a remove had emptied, as
 * examples/test-dpdk-conntrack.sh once saw.)
 *
 * (CONNTAB_TRIE at e8b2d6f unlinked its victim before linking the
 * newcomer, and put it back if that failed: a remove of the victim in
 * between said -ENOENT and the victim came back, a victim whose key had
 * been taken meanwhile was returned beside -EEXIST, and with victims out
 * but still counted a full table offered nothing: -ENOSPC.)
 */
enum { CL_EVICTORS = 4 };

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define CL_SLOW	4
#else
# define CL_SLOW	1
#endif

struct claim_run {
	struct conntab *t;
	enum conntab_backend b;
	uint32_t cap, keys;
	bool remover;			/* a remover runs beside the evictors */
	int stop;			/* atomic: the evictors are done */
	unsigned long calls;		/* per evictor */
	unsigned long eexist, evicted, removed, enoent, samples, over;
	/* Breaches, by kind (each also th_report()ed). */
	unsigned long err_victim, bad_nospc, back;
};

/* Any thread: rank a node that must be alive (a grace period holds it). */
static long claim_rank(struct conntab_node *n, void *arg)
{
	struct tconn *c = t_conn_of(n);

	(void)arg;
	if (__atomic_load_n(&c->magic, __ATOMIC_RELAXED) != T_MAGIC_LIVE)
		th_report("rank: node %p freed", (void *)n);
	return c->rank;
}

/* @c left the table to this caller: it must be the only one. */
static void claim_take(struct tconn *c, const char *how)
{
	if (__atomic_exchange_n(&c->mark, 1, __ATOMIC_SEQ_CST))
		th_report("node %u (%p) taken twice, the second time %s",
			  c->id, (void *)&c->node, how);
	th_retire(c);
}

static void *claim_evictor(void *arg)
{
	struct claim_run *cr = arg;
	const char *bn = conntab_backend_name(cr->b);
	struct conntab_node *ev;
	struct conntab_key k;
	struct tconn *c;
	uint64_t rng = (uint64_t)(uintptr_t)&ev | 1;
	unsigned long i;
	uint32_t id;
	int err;

	rcu_register_thread();
	for (i = 0; i < cr->calls; i++) {
		id = (uint32_t)(th_rnd(&rng) % cr->keys);
		c = t_conn_new(id);
		c->rank = (long)(th_rnd(&rng) % 4);
		t_key(&k, id);
		ev = (struct conntab_node *)1;
		err = conntab_insert_evict(cr->t, &c->node, &k, claim_rank,
					   NULL, &ev);
		if (ev == (struct conntab_node *)1) {
			th_report("%s: insert_evict left *evicted", bn);
			ev = NULL;
		}
		if (err && ev) {
			__atomic_fetch_add(&cr->err_victim, 1,
					   __ATOMIC_RELAXED);
			th_report("%s: insert_evict of key %u: %d with victim "
				  "%p", bn, id, err, (void *)ev);
		}
		if (ev) {
			claim_take(t_conn_of(ev), "evicted");
			__atomic_fetch_add(&cr->evicted, 1, __ATOMIC_RELAXED);
		}
		if (err == -EEXIST) {
			__atomic_fetch_add(&cr->eexist, 1, __ATOMIC_RELAXED);
		} else if (err) {
			if (err == -ENOSPC)
				__atomic_fetch_add(&cr->bad_nospc, 1,
						   __ATOMIC_RELAXED);
			th_report("%s: cap %u: insert_evict of key %u: %d", bn,
				  cr->cap, id, err);
		}
		if (err)
			t_conn_free_now(c);	/* never linked */
	}
	rcu_unregister_thread();
	return NULL;
}

/* Remove what it finds; after -ENOENT the node must stay away. */
static void *claim_remover(void *arg)
{
	struct claim_run *cr = arg;
	struct conntab_node *n;
	struct conntab_key k;
	uint64_t rng = 5;
	uint32_t id;
	int err, j;

	rcu_register_thread();
	while (!__atomic_load_n(&cr->stop, __ATOMIC_RELAXED)) {
		id = (uint32_t)(th_rnd(&rng) % cr->keys);
		t_key(&k, id);
		/* The read lock keeps n's memory while we look at it. */
		rcu_read_lock();
		n = conntab_lookup(cr->t, &k);
		err = n ? conntab_remove(cr->t, n) : 1;
		if (err == -ENOENT) {
			__atomic_fetch_add(&cr->enoent, 1, __ATOMIC_RELAXED);
			for (j = 0; j < 64; j++) {
				if (conntab_lookup(cr->t, &k) != n)
					continue;
				__atomic_fetch_add(&cr->back, 1,
						   __ATOMIC_RELAXED);
				th_report("%s: key %u: node %p found after "
					  "its remove said -ENOENT",
					  conntab_backend_name(cr->b), id,
					  (void *)n);
				break;
			}
		} else if (err && err != 1) {
			th_report("%s: remove of key %u: %d",
				  conntab_backend_name(cr->b), id, err);
		}
		rcu_read_unlock();
		if (!err) {
			claim_take(t_conn_of(n), "removed");
			__atomic_fetch_add(&cr->removed, 1, __ATOMIC_RELAXED);
		}
	}
	rcu_unregister_thread();
	return NULL;
}

static void *claim_sampler(void *arg)
{
	struct claim_run *cr = arg;
	struct conntab_stats st;

	rcu_register_thread();
	while (!__atomic_load_n(&cr->stop, __ATOMIC_RELAXED)) {
		conntab_stats(cr->t, &st);
		if (st.entries > cr->cap)
			__atomic_fetch_add(&cr->over, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&cr->samples, 1, __ATOMIC_RELAXED);
	}
	rcu_unregister_thread();
	return NULL;
}

START_TEST(evict_claim_contract)
{
	static const struct { uint32_t cap; bool remover; } phase[] = {
		{ 1, false }, { 2, false }, { 3, false }, { 4, true },
	};
	pthread_t ev[CL_EVICTORS], rm, sm;
	struct claim_run cr;
	struct conntab_stats st;
	struct conntab_node *n;
	struct conntab_key k;
	size_t found, p;
	uint32_t id;
	int i;

	th_reset();
	for (p = 0; p < sizeof(phase) / sizeof(phase[0]); p++) {
		memset(&cr, 0, sizeof(cr));
		cr.b = B;
		cr.cap = phase[p].cap;
		cr.keys = 2 * cr.cap;
		cr.remover = phase[p].remover;
		cr.t = t_table(B, 0, cr.cap);
		/*
		 * The trie's windows for these races were one insert long:
		 * more calls there (the hash backends evict under one lock
		 * hold).
		 */
		cr.calls = (B == CONNTAB_TRIE ? 60000 : 5000) / CL_SLOW;
		if (cr.remover)
			ck_assert_int_eq(pthread_create(&rm, NULL,
							claim_remover, &cr),
					 0);
		ck_assert_int_eq(pthread_create(&sm, NULL, claim_sampler,
						&cr), 0);
		for (i = 0; i < CL_EVICTORS; i++)
			ck_assert_int_eq(pthread_create(&ev[i], NULL,
							claim_evictor, &cr),
					 0);
		for (i = 0; i < CL_EVICTORS; i++)
			pthread_join(ev[i], NULL);
		__atomic_store_n(&cr.stop, 1, __ATOMIC_RELAXED);
		if (cr.remover)
			pthread_join(rm, NULL);
		pthread_join(sm, NULL);
		printf("%s: cap %u, %d evictors x %lu calls: %lu evictions, "
		       "%lu -EEXIST; remover: %lu removed, %lu "
		       "-ENOENT; %lu samples of the counts; breaches: %lu "
		       "errors with a victim, %lu -ENOSPC, %lu nodes back "
		       "after -ENOENT\n", conntab_backend_name(B), cr.cap,
		       CL_EVICTORS, cr.calls, cr.evicted, cr.eexist,
		       cr.removed, cr.enoent, cr.samples, cr.err_victim,
		       cr.bad_nospc, cr.back);
		ck_assert_uint_eq(cr.over, 0);
		ck_assert_uint_gt(cr.evicted, 0);
		/* What is left: nodes nobody took, as many as counted. */
		found = 0;
		for (id = 0; id < cr.keys; id++) {
			t_key(&k, id);
			n = t_lookup(cr.t, &k);
			if (!n)
				continue;
			found++;
			ck_assert_uint_eq(t_conn_of(n)->magic, T_MAGIC_LIVE);
			ck_assert_uint_eq(t_conn_of(n)->mark, 0);
		}
		conntab_stats(cr.t, &st);
		ck_assert_uint_eq(st.entries, found);
		ck_assert_uint_le(found, cr.cap);
		/* Every thread that could see them is gone. */
		conntab_destroy(cr.t, release_free);
	}
	rcu_barrier();
	th_quarantine_flush();
	ck_assert_msg(th_errors() == 0, "%lu errors, first: %s", th_errors(),
		      th_first_error());
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		evict_no_cap, evict_at_cap, evict_ranks, evict_small,
		evict_concurrent, evict_claim_contract,
	};
	Suite *s = suite_create("evict");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 120);
	ret = t_run(s, 900);
	rcu_unregister_thread();
	return ret;
}
