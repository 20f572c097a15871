/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The writers of tests/stress: the owners of the flipping and churn keys
 * (th_flip(), th_churn()), the grower, and the evictors of the capped
 * table. Each parks between two of its operations when a checkpoint asks
 * (st_park()), its model then exact.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "stress.h"

void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t id;

	rcu_register_thread();
	while (!st_stopping()) {
		st_park();
		id = (uint32_t)(th_rnd(&w->rng) % opt.nkeys);
		if (IS_FIXED(id) || (id / 2) % opt.threads != w->idx)
			continue;
		st_hot(w->idx, id);
		if (IS_CHURN(id))
			w->writes += th_churn(&run.model, id, &w->rng);
		else
			w->writes += th_flip(&run.model, id, &w->rng);
		th_self_check(&run.model, id);
		th_tick(&w->progress);
	}
	rcu_unregister_thread();
	return NULL;
}

/*
 * Fill with NGROW more keys, time-wait every fourth (in place or to a new
 * node), remove them all, again and again. Each key's generation is odd
 * from just before its insert to just after its remove. The grower stops
 * between any two operations, its model exact (the keys it holds then
 * are the final checks' and destroy's).
 */
static void grow_insert(struct grower *g, uint32_t i)
{
	struct conntab_key k;
	int err;

	sk_key(&k, opt.grow0 + i);
	st_hot(opt.threads, opt.grow0 + i);
	g->c[i] = t_conn_new(opt.grow0 + i);
	th_gen_step(&g->gen[i]);
	err = conntab_insert(run.t, &g->c[i]->node, &k);
	if (err)
		th_report("grow: insert %u: %d", i, err);
	g->state[i] = CONNTAB_ESTABLISHED;
	g->linked++;
	g->writes++;
}

static void grow_timewait(struct grower *g, uint32_t i)
{
	struct tconn *tw = g->c[i];
	int err;

	st_hot(opt.threads, opt.grow0 + i);
	if (th_rnd(&g->rng) & 1)
		tw = t_conn_new(opt.grow0 + i);
	err = conntab_timewait(run.t, &g->c[i]->node, &tw->node);
	if (err)
		th_report("grow: timewait %u: %d", i, err);
	if (tw != g->c[i]) {
		th_retire(g->c[i]);
		g->c[i] = tw;
	}
	g->state[i] = CONNTAB_TIMEWAIT;
	g->tw++;
	g->writes++;
}

static void grow_remove(struct grower *g, uint32_t i)
{
	int err;

	st_hot(opt.threads, opt.grow0 + i);
	err = conntab_remove(run.t, &g->c[i]->node);

	if (err)
		th_report("shrink: remove %u: %d", i, err);
	th_gen_step(&g->gen[i]);
	th_retire(g->c[i]);
	g->c[i] = NULL;
	g->linked--;
	g->tw -= g->state[i] == CONNTAB_TIMEWAIT;
	g->writes++;
}

/* Between two of the grower's operations: go on? */
static bool grow_on(struct grower *g)
{
	th_tick(&g->progress);
	st_park();
	return !st_stopping();
}

void *grower_main(void *arg)
{
	struct grower *g = arg;
	uint32_t i;

	rcu_register_thread();
	for (;;) {
		for (i = 0; i < NGROW; i++) {
			if (!grow_on(g))
				goto out;
			grow_insert(g, i);
		}
		for (i = 0; i < NGROW; i += 4) {
			if (!grow_on(g))
				goto out;
			grow_timewait(g, i);
		}
		for (i = 0; i < NGROW; i++) {
			if (!grow_on(g))
				goto out;
			grow_remove(g, i);
		}
		th_tick(&g->cycles);
	}
out:
	rcu_unregister_thread();
	return NULL;
}

/* --- the evictors --------------------------------------------------- */

/*
 * Fixed keys rank negative, so they are never evicted; an evictor's key
 * ranks by a number drawn at its insert. Runs under the read lock: the
 * node offered must be alive.
 */
static long ev_rank(struct conntab_node *v, void *arg)
{
	struct tconn *c = t_conn_of(v);
	uint32_t id = __atomic_load_n(&c->id, __ATOMIC_RELAXED);

	if (__atomic_load_n(&c->magic, __ATOMIC_RELAXED) != T_MAGIC_LIVE) {
		th_report("rank: node %p offered after it was freed",
			  (void *)v);
		return -1;
	}
	if (id < opt.nkeys)
		return -1;
	if (id < opt.ev0 || id >= opt.nids) {
		th_report("rank: node %p of id %u is not the capped table's",
			  (void *)v, id);
		return -1;
	}
	return c->rank;
}

/*
 * A victim this evictor took (whatever insert_evict returned: the trie
 * may give one beside an error, and it is out of the table either way).
 * Its owner retires it once it sees the mark; it cannot be freed before
 * the mark is stored, since we hold the read lock it was unlinked under.
 */
static void ev_take(struct evictor *e, struct conntab_node *v)
{
	struct tconn *c = t_conn_of(v);
	uint32_t id = __atomic_load_n(&c->id, __ATOMIC_RELAXED);

	if (id < opt.ev0 || id >= opt.nids)
		th_report("insert_evict evicted key %u, which ranks negative",
			  id);
	__atomic_store_n(&c->mark, EV_MARK_EVICTED, __ATOMIC_RELEASE);
	__atomic_add_fetch(&run.ev.evicted, 1, __ATOMIC_RELAXED);
	e->victims++;
}

static void ev_insert(struct evictor *e, uint32_t j)
{
	struct tconn *c = t_conn_new(opt.ev0 + j);
	struct conntab_node *v = NULL;
	struct conntab_key k;
	int err;

	c->rank = (long)(th_rnd(&e->rng) % 65536);
	sk_key(&k, opt.ev0 + j);
	rcu_read_lock();
	err = conntab_insert_evict(run.ev.t, &c->node, &k, ev_rank, NULL, &v);
	if (v)
		ev_take(e, v);
	rcu_read_unlock();
	if (!err) {
		run.ev.holder[j] = c;
		e->inserts++;
		return;
	}
	/* Only a full sample of fixed keys leaves no room. */
	if (err == -ENOSPC)
		e->enospc++;
	else
		th_report("insert_evict of absent key %u: %d", opt.ev0 + j,
			  err);
	th_retire(c);		/* never linked; retired all the same */
}

/*
 * Remove the key, or look it up: its node or nothing (an eviction may
 * have taken it and not marked it yet). A remove that finds it gone (-ENOENT) was
 * beaten by an eviction: the node is out either way, and ours to retire.
 */
static void ev_touch(struct evictor *e, uint32_t j, struct tconn *c)
{
	struct conntab_node *n;
	struct conntab_key k;
	int err;

	if (th_rnd(&e->rng) % 4 == 0) {
		err = conntab_remove(run.ev.t, &c->node);
		if (err && err != -ENOENT)
			th_report("capped remove of key %u: %d", opt.ev0 + j,
				  err);
		run.ev.holder[j] = NULL;
		th_retire(c);
		e->removes++;
		return;
	}
	sk_key(&k, opt.ev0 + j);
	rcu_read_lock();
	n = conntab_lookup(run.ev.t, &k);
	if (n && n != &c->node)
		th_report("capped lookup of own key %u: %p, model %p",
			  opt.ev0 + j, (void *)n, (void *)&c->node);
	rcu_read_unlock();
}

void *evictor_main(void *arg)
{
	struct evictor *e = arg;
	struct tconn *c;
	uint32_t j;

	rcu_register_thread();
	while (!st_stopping()) {
		st_park();
		j = (uint32_t)(th_rnd(&e->rng) % opt.nkeys);
		if (j % opt.evictors != e->idx)
			continue;
		c = run.ev.holder[j];
		if (c && ev_evicted(c)) {
			run.ev.holder[j] = NULL;	/* evicted: ours */
			th_retire(c);
			c = NULL;
		}
		if (c)
			ev_touch(e, j, c);
		else
			ev_insert(e, j);
		th_tick(&e->progress);
	}
	rcu_unregister_thread();
	return NULL;
}

size_t evict_model_entries(const struct evict_model *ev)
{
	size_t j, n = opt.nkeys / 4;

	for (j = 0; j < opt.nkeys; j++)
		n += ev->holder[j] && !ev_evicted(ev->holder[j]);
	return n;
}

void evict_model_clear(struct evict_model *ev)
{
	uint32_t j;

	for (j = 0; j < opt.nkeys; j++) {
		if (!ev->holder[j])
			continue;
		if (!ev_evicted(ev->holder[j]))
			th_report("destroy did not release capped key %u",
				  opt.ev0 + j);
		t_conn_free_now(ev->holder[j]);
		ev->holder[j] = NULL;
	}
}
