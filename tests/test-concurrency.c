/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Readers and writers together (memb flavor), for every backend, for a
 * bounded time each:
 *
 *  - "fixed" keys are inserted first and never touched: every lookup finds
 *    them, and every walk visits each exactly once;
 *  - "flipping" keys are always present but their node is replaced all
 *    the time (timewait to a new node, insert_recycle over the TIME_WAIT
 *    node, timewait in place), which the contract makes atomic for
 *    readers: every lookup still finds a node with that key;
 *  - "churn" keys, the odd neighbours of the others (same chains in a
 *    small table, adjacent key bits), come and go through every writer
 *    operation.
 *
 * A second test fills and empties the table over and over (a growing
 * backend resizes both ways) under readers and a walker of the fixed keys.
 *
 * Freed nodes are poisoned (magic DEAD, key scribbled) in their call_rcu
 * callback and kept in a quarantine for a while before free(), so a reader
 * that holds a node past its grace period sees the poison. Threads report
 * to counters; the main thread asserts once they have joined (Check's
 * assertions are not for other threads).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "threads.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

#define NKEYS		800	/* ids: 4k fixed, 4k+2 flipping, odd churn */
#define NREADERS	2
#define NWRITERS	2
#define RUN_MS		1500
#define GROW_MS		1000
#define BATCH		16
#define NGROW		6000	/* ids NKEYS.. of the grow/shrink test */

#define IS_FIXED(id)	((id) % 4 == 0)
#define IS_FLIP(id)	((id) % 4 == 2)
#define IS_CHURN(id)	((id) % 2 == 1)
#define OWNER(id)	(((id) / 2) % NWRITERS)

static struct conntab *table;
static int stop;
/* --- readers -------------------------------------------------------- */

struct reader {
	pthread_t tid;
	uint64_t rng;
	unsigned long lookups, stable_lookups, churn_hits;
	unsigned long progress;		/* loops done */
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct conntab_key keys[BATCH];
	struct conntab_node *out[BATCH];
	uint32_t ids[BATCH], id;
	struct conntab_key k;
	struct conntab_node *n;
	size_t i, found;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		rcu_read_lock();
		if (th_rnd(&r->rng) % 8 == 0) {
			/* A batch mixing stable and churn keys. */
			for (i = 0; i < BATCH; i++) {
				ids[i] = (uint32_t)(th_rnd(&r->rng) % NKEYS);
				t_key(&keys[i], ids[i]);
			}
			found = conntab_lookup_batch(table, keys, out, BATCH);
			for (i = 0; i < BATCH; i++) {
				r->lookups++;
				if (!out[i]) {
					if (!IS_CHURN(ids[i]))
						th_report("batch: stable key %u "
						       "missed", ids[i]);
					continue;
				}
				found--;
				th_check_node(out[i], &keys[i], ids[i], "batch");
				r->stable_lookups += !IS_CHURN(ids[i]);
			}
			if (found)
				th_report("batch: count off by %zu", found);
		} else {
			/* A stable key, then a churn neighbour. */
			id = (uint32_t)(th_rnd(&r->rng) % (NKEYS / 2)) * 2;
			t_key(&k, id);
			n = conntab_lookup(table, &k);
			r->lookups++;
			r->stable_lookups++;
			if (!n)
				th_report("lookup: stable key %u (%s) missed", id,
				       IS_FIXED(id) ? "fixed" : "flipping");
			else
				th_check_node(n, &k, id, "lookup");
			t_key(&k, id + 1);
			n = conntab_lookup(table, &k);
			r->lookups++;
			if (n) {
				r->churn_hits++;
				th_check_node(n, &k, id + 1, "lookup");
			}
		}
		rcu_read_unlock();
		th_tick(&r->progress);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- walker --------------------------------------------------------- */

struct walker {
	pthread_t tid;
	unsigned long walks;
	unsigned int seen[NKEYS];
};

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walker *w = arg;
	struct tconn *c = conntab_entry(n, struct tconn, node);
	struct conntab_key k;
	uint32_t id = __atomic_load_n(&c->id, __ATOMIC_RELAXED);

	if (id >= NKEYS + NGROW) {
		th_report("walk: node %p id %u (freed?)", (void *)n, id);
		return 0;
	}
	t_key(&k, id);
	th_check_node(n, &k, id, "walk");
	if (id < NKEYS)
		w->seen[id]++;
	return 0;
}

static void *walker_main(void *arg)
{
	struct walker *w = arg;
	uint32_t id;
	int ret, state;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		memset(w->seen, 0, sizeof(w->seen));
		/* Fixed keys are ESTABLISHED: the filtered walk sees them. */
		state = w->walks % 2 ? CONNTAB_ESTABLISHED : -1;
		rcu_read_lock();
		if (state < 0)
			ret = conntab_walk(table, walk_fn, w);
		else
			ret = conntab_walk_state(table, state, walk_fn, w);
		rcu_read_unlock();
		if (ret)
			th_report("walk returned %d", ret);
		for (id = 0; id < NKEYS; id += 4)
			if (w->seen[id] != 1)
				th_report("walk %lu (state %d): fixed key %u "
				       "visited %u times", w->walks, state, id,
				       w->seen[id]);
		th_tick(&w->walks);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- writers -------------------------------------------------------- */

struct writer {
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	unsigned long ops, self_checks;
};

/* What the writers know: the node holding each key (owner only). */
static struct tconn *holder[NKEYS];
static enum conntab_state hstate[NKEYS];
static struct th_model model = {
	.holder = holder, .state = hstate, .nkeys = NKEYS,
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t id;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		id = (uint32_t)(th_rnd(&w->rng) % NKEYS);
		if (IS_FIXED(id) || OWNER(id) != w->idx)
			continue;
		if (IS_FLIP(id))
			th_flip(&model, id, &w->rng);
		else
			th_churn(&model, id, &w->rng);
		th_self_check(&model, id);
		w->self_checks++;
		th_tick(&w->ops);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- the test ------------------------------------------------------- */

static void release_fn(struct conntab_node *n)
{
	struct tconn *c = conntab_entry(n, struct tconn, node);

	if (c->id >= NKEYS || holder[c->id] != c)
		th_report("destroy released a node the writers do not hold");
	else
		holder[c->id] = NULL;
	t_conn_free_now(c);
}

START_TEST(readers_writers)
{
	static struct reader rd[NREADERS];
	static struct writer wr[NWRITERS];
	static struct walker wk;
	unsigned long *progress[NREADERS + NWRITERS + 1];
	struct conntab_stats st;
	unsigned long lookups = 0, stable = 0, hits = 0, ops = 0, self = 0;
	struct conntab_key k;
	size_t i, present = 0, tw = 0;
	uint32_t id;

	table = t_table(B, 0, 0);	/* small: long chains */
	model.t = table;
	stop = 0;
	th_reset();
	memset(holder, 0, sizeof(holder));
	for (id = 0; id < NKEYS; id += 2) {
		holder[id] = t_conn_new(id);
		hstate[id] = CONNTAB_ESTABLISHED;
		t_key(&k, id);
		ck_assert_int_eq(conntab_insert(table, &holder[id]->node, &k),
				 0);
	}
	memset(rd, 0, sizeof(rd));
	memset(wr, 0, sizeof(wr));
	memset(&wk, 0, sizeof(wk));
	for (i = 0; i < NREADERS; i++) {
		rd[i].rng = 0x1234567ull * (i + 1) + (uint64_t)time(NULL);
		ck_assert_int_eq(pthread_create(&rd[i].tid, NULL, reader_main,
						&rd[i]), 0);
	}
	for (i = 0; i < NWRITERS; i++) {
		wr[i].idx = (unsigned int)i;
		wr[i].rng = 0x7654321ull * (i + 1) + (uint64_t)time(NULL);
		ck_assert_int_eq(pthread_create(&wr[i].tid, NULL, writer_main,
						&wr[i]), 0);
	}
	ck_assert_int_eq(pthread_create(&wk.tid, NULL, walker_main, &wk), 0);
	for (i = 0; i < NREADERS; i++)
		progress[i] = &rd[i].progress;
	for (i = 0; i < NWRITERS; i++)
		progress[NREADERS + i] = &wr[i].ops;
	progress[NREADERS + NWRITERS] = &wk.walks;
	th_run_for(RUN_MS, progress, NREADERS + NWRITERS + 1, 1);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NREADERS; i++) {
		pthread_join(rd[i].tid, NULL);
		lookups += rd[i].lookups;
		stable += rd[i].stable_lookups;
		hits += rd[i].churn_hits;
	}
	for (i = 0; i < NWRITERS; i++) {
		pthread_join(wr[i].tid, NULL);
		ops += wr[i].ops;
		self += wr[i].self_checks;
	}
	pthread_join(wk.tid, NULL);
	printf("%s: %lu reader lookups checked (%lu of always-present keys, "
	       "%lu churn hits), %lu writer ops, %lu writer self-checks, "
	       "%lu full walks, %lu errors\n", BN, lookups, stable, hits, ops,
	       self, wk.walks, th_errors());
	fflush(stdout);
	ck_assert_msg(th_errors() == 0, "%s: %lu errors, first: %s", BN,
		      th_errors(), th_first_error());
	/* Something happened on every side. */
	ck_assert_uint_gt(stable, 0);
	ck_assert_uint_gt(ops, 0);
	ck_assert_uint_gt(wk.walks, 0);

	/* The table holds exactly what the writers think. */
	for (id = 0; id < NKEYS; id++) {
		present += holder[id] != NULL;
		tw += holder[id] && hstate[id] == CONNTAB_TIMEWAIT;
	}
	conntab_stats(table, &st);
	ck_assert_uint_eq(st.entries, present);
	ck_assert_uint_eq(st.timewait, tw);
	rcu_read_lock();
	for (id = 0; id < NKEYS; id++) {
		t_key(&k, id);
		ck_assert_ptr_eq(conntab_lookup(table, &k),
				 holder[id] ? &holder[id]->node : NULL);
	}
	rcu_read_unlock();
	/* Retired nodes first, then the table and what it holds. */
	rcu_barrier();
	conntab_destroy(table, release_fn);
	ck_assert_msg(th_errors() == 0, "%s: %s", BN, th_first_error());
	for (id = 0; id < NKEYS; id++)
		ck_assert_ptr_null(holder[id]);
	th_quarantine_flush();
}
END_TEST

/* --- grow and shrink under readers --------------------------------- */

struct grower {
	pthread_t tid;
	unsigned long cycles;
	struct tconn *c[NGROW];
};

/*
 * Fill the table with NGROW more keys, empty it again, and again: a
 * growing backend resizes up and down all the time, under the readers
 * and the walker, which must still find every fixed key (once per walk).
 */
static void *grower_main(void *arg)
{
	struct grower *g = arg;
	struct conntab_key k;
	uint32_t i;
	int err;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < NGROW; i++) {
			g->c[i] = t_conn_new(NKEYS + i);
			t_key(&k, NKEYS + i);
			err = conntab_insert(table, &g->c[i]->node, &k);
			if (err)
				th_report("grow: insert %u: %d", i, err);
		}
		for (i = 0; i < NGROW; i++) {
			err = conntab_remove(table, &g->c[i]->node);
			if (err)
				th_report("shrink: remove %u: %d", i, err);
			th_retire(g->c[i]);
		}
		th_tick(&g->cycles);
	}
	rcu_unregister_thread();
	return NULL;
}

START_TEST(grow_shrink)
{
	static struct reader rd[NREADERS];
	static struct grower gr;
	static struct walker wk;
	unsigned long *progress[NREADERS + 2];
	unsigned long lookups = 0, stable = 0;
	struct conntab_stats st;
	struct conntab_key k;
	size_t i;
	uint32_t id;

	table = t_table(B, 0, 0);
	stop = 0;
	th_reset();
	memset(holder, 0, sizeof(holder));
	for (id = 0; id < NKEYS; id += 2) {
		holder[id] = t_conn_new(id);
		t_key(&k, id);
		ck_assert_int_eq(conntab_insert(table, &holder[id]->node, &k),
				 0);
	}
	memset(rd, 0, sizeof(rd));
	memset(&gr, 0, sizeof(gr));
	memset(&wk, 0, sizeof(wk));
	for (i = 0; i < NREADERS; i++) {
		rd[i].rng = 0xabcdefull * (i + 1) + (uint64_t)time(NULL);
		ck_assert_int_eq(pthread_create(&rd[i].tid, NULL, reader_main,
						&rd[i]), 0);
		progress[i] = &rd[i].progress;
	}
	ck_assert_int_eq(pthread_create(&gr.tid, NULL, grower_main, &gr), 0);
	ck_assert_int_eq(pthread_create(&wk.tid, NULL, walker_main, &wk), 0);
	progress[NREADERS] = &gr.cycles;
	progress[NREADERS + 1] = &wk.walks;
	th_run_for(GROW_MS, progress, NREADERS + 2, 2);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NREADERS; i++) {
		pthread_join(rd[i].tid, NULL);
		lookups += rd[i].lookups;
		stable += rd[i].stable_lookups;
	}
	pthread_join(gr.tid, NULL);
	pthread_join(wk.tid, NULL);
	conntab_stats(table, &st);
	printf("%s: grow/shrink: %lu reader lookups checked (%lu of always-"
	       "present keys), %lu cycles of %d inserts and removes, %zu "
	       "resizes, %lu full walks, %lu errors\n", BN, lookups, stable,
	       gr.cycles, NGROW, st.resizes, wk.walks, th_errors());
	fflush(stdout);
	ck_assert_msg(th_errors() == 0, "%s: %lu errors, first: %s", BN,
		      th_errors(), th_first_error());
	ck_assert_uint_eq(st.entries, NKEYS / 2);
	ck_assert_uint_eq(st.timewait, 0);
	rcu_barrier();
	conntab_destroy(table, release_fn);
	ck_assert_msg(th_errors() == 0, "%s: %s", BN, th_first_error());
	for (id = 0; id < NKEYS; id++)
		ck_assert_ptr_null(holder[id]);
	th_quarantine_flush();
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = { readers_writers, grow_shrink };
	Suite *s = suite_create("concurrency");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend, 2, 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
