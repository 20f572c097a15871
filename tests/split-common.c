/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The run of split's move stress tests (split-common.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu.h>

#include "split-common.h"

static const struct sp_test *sp;	/* the test being run */

static bool stop;
static unsigned long long lookups[SP_READERS];
unsigned long long sp_misses[SP_READERS], sp_bad[SP_READERS];
static unsigned long long moves[SP_WRITERS + 1], in_place[SP_WRITERS + 1];
static unsigned long long errs[SP_WRITERS + 1];
static unsigned long long walks, walk_errs;

static bool stopping(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		perror("calloc");
		exit(2);
	}
	return p;
}

struct sp_obj *sp_obj_new(void)
{
	struct sp_obj *o = xcalloc(1, sizeof(*o));

	conntab_node_init(&o->node);
	o->magic = SP_MAGIC_LIVE;
	return o;
}

static void obj_free_rcu(struct rcu_head *head)
{
	struct sp_obj *o = caa_container_of(head, struct sp_obj, rcu);

	memset(o, 0x6b, sizeof(*o));	/* poison: magic becomes 0x6b6b6b6b */
	free(o);
}

/* A found node must be live and hold the key it was found under. */
static bool node_ok(const struct conntab_node *n, const struct conntab_key *k)
{
	const struct sp_obj *o = conntab_entry(n, const struct sp_obj, node);

	return o->magic == SP_MAGIC_LIVE &&
	       !memcmp(conntab_node_key(n), k, sizeof(*k));
}

void sp_found(int r, const struct conntab_node *n,
	      const struct conntab_key *k)
{
	if (!n)
		sp_misses[r]++;
	else if (!node_ok(n, k))
		sp_bad[r]++;
}

static void *cycle_writer(void *arg)
{
	int w = (int)(intptr_t)arg;
	struct sp_obj **tw = xcalloc((size_t)sp->nmovers, sizeof(*tw));
	struct conntab_node *rec;
	unsigned long long cycle = 0;
	int i;

	rcu_register_thread();
	while (!stopping() || !moves[w]) {
		/* est -> tw: the node itself, or a separate one. */
		for (i = w; i < sp->nmovers; i += SP_WRITERS) {
			struct sp_obj *est = sp->holder[i];

			if ((cycle + (unsigned int)i) & 1) {
				tw[i] = est;
				in_place[w]++;
			} else {
				tw[i] = sp_obj_new();
			}
			if (conntab_timewait(sp->tab, &est->node,
					     &tw[i]->node)) {
				errs[w]++;
				goto out;
			}
			if (tw[i] != est)
				call_rcu(&est->rcu, obj_free_rcu);
			moves[w]++;
		}
		/* tw -> a new established node, in one step. */
		for (i = w; i < sp->nmovers; i += SP_WRITERS) {
			struct sp_obj *next = sp_obj_new();

			if (conntab_insert_recycle(sp->tab, &next->node,
						   &sp->mkeys[i], &rec) ||
			    rec != &tw[i]->node) {
				errs[w]++;
				goto out;
			}
			call_rcu(&tw[i]->rcu, obj_free_rcu);
			sp->holder[i] = next;
			moves[w]++;
		}
		cycle++;
	}
out:
	rcu_unregister_thread();
	free(tw);
	return NULL;
}

static void *churn_writer(void *arg)
{
	struct sp_obj **c = xcalloc((size_t)sp->nchurn, sizeof(*c));
	int w = SP_WRITERS, i;

	rcu_register_thread();
	while (!stopping() || !moves[w]) {
		for (i = 0; i < sp->nchurn; i++) {
			c[i] = sp_obj_new();
			if (conntab_insert(sp->tab, &c[i]->node, &sp->ckeys[i]))
				goto fail;
		}
		for (i = 0; i < sp->nchurn; i++) {
			if (conntab_timewait(sp->tab, &c[i]->node, &c[i]->node))
				goto fail;
			in_place[w]++;
			moves[w]++;
		}
		for (i = 0; i < sp->nchurn; i++) {
			if (conntab_remove(sp->tab, &c[i]->node))
				goto fail;
			call_rcu(&c[i]->rcu, obj_free_rcu);
		}
	}
	goto out;
fail:
	errs[w]++;
out:
	rcu_unregister_thread();
	free(c);
	return NULL;
}

static void *reader(void *arg)
{
	int r = (int)(intptr_t)arg;
	unsigned long long round = 0;
	unsigned int n;

	rcu_register_thread();
	while (!stopping() || lookups[r] < 100000) {
		rcu_read_lock();
		n = sp->read_round(r, round);
		rcu_read_unlock();
		lookups[r] += n;
		round++;
	}
	rcu_unregister_thread();
	return NULL;
}

static void *walker(void *arg)
{
	int tw_only;

	rcu_register_thread();
	while (!stopping() || walks < 20) {
		tw_only = (int)(walks & 1);
		memset(sp->walk_state, 0, sp->walk_size);
		rcu_read_lock();
		if (tw_only)
			conntab_walk_state(sp->tab, CONNTAB_TIMEWAIT,
					   sp->walk_fn, sp->walk_state);
		else
			conntab_walk(sp->tab, sp->walk_fn, sp->walk_state);
		rcu_read_unlock();
		walk_errs += sp->walk_check(tw_only);
		walks++;
	}
	rcu_unregister_thread();
	return NULL;
}

int sp_insert(const struct sp_test *t, bool (*stable_tw)(int i))
{
	int i;

	for (i = 0; i < t->nstable; i++) {
		struct sp_obj *o = &t->stable[i];

		conntab_node_init(&o->node);
		o->magic = SP_MAGIC_LIVE;
		if (conntab_insert(t->tab, &o->node, &t->skeys[i]) ||
		    (stable_tw(i) &&
		     conntab_timewait(t->tab, &o->node, &o->node))) {
			fprintf(stderr, "stable key %d failed\n", i);
			return -1;
		}
	}
	for (i = 0; i < t->nmovers; i++) {
		t->holder[i] = sp_obj_new();
		if (conntab_insert(t->tab, &t->holder[i]->node, &t->mkeys[i])) {
			fprintf(stderr, "%s %d failed\n", t->mover_name, i);
			return -1;
		}
	}
	return 0;
}

void sp_run(const struct sp_test *t, struct sp_totals *tot)
{
	pthread_t wt[SP_WRITERS + 1], rt[SP_READERS], kt;
	const char *env = getenv(t->seconds_env);
	double secs = env ? atof(env) : 2.0;
	struct timespec ts;
	int i;

	sp = t;
	for (i = 0; i < SP_READERS; i++)
		pthread_create(&rt[i], NULL, reader, (void *)(intptr_t)i);
	for (i = 0; i < SP_WRITERS; i++)
		pthread_create(&wt[i], NULL, cycle_writer, (void *)(intptr_t)i);
	pthread_create(&wt[SP_WRITERS], NULL, churn_writer, NULL);
	pthread_create(&kt, NULL, walker, NULL);

	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);

	for (i = 0; i < SP_READERS; i++)
		pthread_join(rt[i], NULL);
	for (i = 0; i <= SP_WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_join(kt, NULL);

	memset(tot, 0, sizeof(*tot));
	for (i = 0; i < SP_READERS; i++) {
		tot->lookups += lookups[i];
		tot->misses += sp_misses[i];
		tot->bad += sp_bad[i];
	}
	for (i = 0; i <= SP_WRITERS; i++) {
		tot->moves += moves[i];
		tot->in_place += in_place[i];
		tot->errs += errs[i];
	}
	tot->churn = moves[SP_WRITERS];
	tot->walks = walks;
	tot->walk_errs = walk_errs;
}

bool sp_final_ok(const struct sp_test *t, size_t timewait)
{
	struct conntab_stats st;
	bool ok = true;
	int i;

	rcu_read_lock();
	for (i = 0; i < t->nmovers; i++) {
		struct conntab_node *n = conntab_lookup(t->tab, &t->mkeys[i]);

		if (n != &t->holder[i]->node ||
		    conntab_node_state(n) != CONNTAB_ESTABLISHED)
			ok = false;
	}
	for (i = 0; i < t->nstable; i++)
		if (conntab_lookup(t->tab, &t->skeys[i]) != &t->stable[i].node)
			ok = false;
	rcu_read_unlock();
	conntab_stats(t->tab, &st);
	if (st.entries != (size_t)(t->nstable + t->nmovers) ||
	    st.timewait != timewait)
		ok = false;
	return ok;
}

int sp_verdict(const struct sp_totals *tot, bool extra_bad, bool final_ok)
{
	if (tot->misses || tot->bad || tot->errs || tot->walk_errs ||
	    !tot->lookups || !tot->moves || extra_bad || !final_ok) {
		fprintf(stderr, "FAIL (final state %s)\n",
			final_ok ? "ok" : "bad");
		return 1;
	}
	return 0;
}

static void release_fn(struct conntab_node *n)
{
	struct sp_obj *o = conntab_entry(n, struct sp_obj, node);

	if (o < sp->stable || o >= sp->stable + sp->nstable)
		free(o);
}

void sp_teardown(const struct sp_test *t)
{
	sp = t;
	rcu_barrier();
	conntab_destroy(t->tab, release_fn);
	rcu_unregister_thread();
}
