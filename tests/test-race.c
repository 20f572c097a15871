/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writers racing on the same keys: at most one node per key, ever.
 *
 * Three writers insert, time-wait (in place) and remove nodes of a small
 * key space (64 keys that differ in one field only) in a small table, all
 * trying the same keys, while a reader looks them up. Each writer removes
 * only nodes it inserted itself. A per-key counter goes up right after a
 * successful insert and down right before the owner's remove, so a node
 * counted is in the table for as long as it is counted: an insert that
 * brings the count above one has put a second node of the key in the
 * table. After the run the table must hold exactly the counted nodes.
 *
 * conntab_remove_key() against writers that replace the key's node all
 * the time (remove_key_vs_flips): a flipper keeps every key present,
 * moving its node to TIME_WAIT (a new node) and recycling it by a new
 * established one, while a remover takes keys out by key alone and puts
 * them back. Since only the remover removes, every remove_key() finds
 * its key: it must return a node of that key, never NULL, whatever node
 * held the key when the call began; and each node is unlinked once (the
 * remover retires what remove_key() returned, the flipper what its own
 * calls replaced; a double unlink would double-free under ASan).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

#define NK		T_SMALL_KEYS
#define NWRITERS	3
#define RUN_MS		1000

static struct conntab *table;
static int stop;
static long count[NK];		/* nodes of key i counted as in the table */

struct writer {
	pthread_t tid;
	uint64_t rng;
	struct tconn *mine[NK];	/* my node of key i in the table, if any */
	unsigned long inserts, eexist, removes, timewaits;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct conntab_key k;
	struct tconn *c;
	uint32_t i;
	long n;
	int err;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = th_rnd(&w->rng);

		i = (uint32_t)(r % NK);
		c = w->mine[i];
		if (!c) {
			c = t_conn_new(i);
			t_key_small(&k, i);
			err = conntab_insert(table, &c->node, &k);
			if (err == -EEXIST) {
				t_conn_free_now(c);	/* never linked */
				w->eexist++;
				continue;
			}
			if (err) {
				th_report("insert key %u: %d", i, err);
				t_conn_free_now(c);
				continue;
			}
			n = __atomic_add_fetch(&count[i], 1, __ATOMIC_SEQ_CST);
			if (n > 1)
				th_report("key %u: %ld nodes in the table", i,
					  n);
			w->mine[i] = c;
			th_tick(&w->inserts);
		} else if ((r >> 32) % 3 == 0 &&
			   conntab_node_state(&c->node) ==
			   CONNTAB_ESTABLISHED) {
			err = conntab_timewait(table, &c->node, &c->node);
			if (err)
				th_report("timewait key %u: %d", i, err);
			w->timewaits++;
		} else {
			__atomic_sub_fetch(&count[i], 1, __ATOMIC_SEQ_CST);
			err = conntab_remove(table, &c->node);
			if (err)
				th_report("remove key %u: %d", i, err);
			w->mine[i] = NULL;
			th_retire(c);
			w->removes++;
		}
	}
	rcu_unregister_thread();
	return NULL;
}

struct reader {
	pthread_t tid;
	unsigned long lookups, hits;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct conntab_node *out[NK];
	struct conntab_key keys[NK];
	uint32_t i;

	for (i = 0; i < NK; i++)
		t_key_small(&keys[i], i);
	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		rcu_read_lock();
		rd->hits += conntab_lookup_batch(table, keys, out, NK);
		for (i = 0; i < NK; i++)
			if (out[i])
				th_check_node(out[i], &keys[i], i, "batch");
		rcu_read_unlock();
		__atomic_store_n(&rd->lookups, rd->lookups + NK,
				 __ATOMIC_RELAXED);
	}
	rcu_unregister_thread();
	return NULL;
}

static unsigned int walk_seen[NK];

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct tconn *c = t_conn_of(n);

	if (c->id < NK)
		walk_seen[c->id]++;
	return 0;
}

START_TEST(racing_writers)
{
	static struct writer wr[NWRITERS];
	static struct reader rd;
	unsigned long *progress[NWRITERS + 1];
	unsigned long ins = 0, eex = 0, rem = 0, tws = 0;
	struct conntab_stats st;
	struct conntab_node *n;
	struct conntab_key k;
	struct tconn *owner;
	size_t i, j, present = 0;

	table = t_table(B, 0, 0);
	stop = 0;
	th_reset();
	memset(count, 0, sizeof(count));
	memset(wr, 0, sizeof(wr));
	memset(&rd, 0, sizeof(rd));
	for (i = 0; i < NWRITERS; i++) {
		wr[i].rng = 0x51ed27ull * (i + 1) + (uint64_t)time(NULL);
		ck_assert_int_eq(pthread_create(&wr[i].tid, NULL, writer_main,
						&wr[i]), 0);
	}
	ck_assert_int_eq(pthread_create(&rd.tid, NULL, reader_main, &rd), 0);
	for (i = 0; i < NWRITERS; i++)
		progress[i] = &wr[i].inserts;
	progress[NWRITERS] = &rd.lookups;
	/* Enough inserts by each writer that they surely met. */
	th_run_for(RUN_MS, progress, NWRITERS + 1, 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NWRITERS; i++) {
		pthread_join(wr[i].tid, NULL);
		ins += wr[i].inserts;
		eex += wr[i].eexist;
		rem += wr[i].removes;
		tws += wr[i].timewaits;
	}
	pthread_join(rd.tid, NULL);
	printf("%s: %lu inserts, %lu -EEXIST, %lu removes, %lu timewaits by "
	       "%d racing writers; %lu reader lookups, %lu hits; %lu errors\n",
	       BN, ins, eex, rem, tws, NWRITERS, rd.lookups, rd.hits,
	       th_errors());
	ck_assert_msg(th_errors() == 0, "%s: %lu errors, first: %s", BN,
		      th_errors(), th_first_error());
	ck_assert_uint_gt(ins, 0);
	ck_assert_uint_gt(eex, 0);	/* the writers did meet */

	/* The table holds exactly the writers' nodes, one per key. */
	memset(walk_seen, 0, sizeof(walk_seen));
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(table, walk_fn, NULL), 0);
	for (i = 0; i < NK; i++) {
		owner = NULL;
		for (j = 0; j < NWRITERS; j++) {
			if (!wr[j].mine[i])
				continue;
			ck_assert_msg(!owner, "%s: key %zu held twice", BN, i);
			owner = wr[j].mine[i];
		}
		ck_assert_int_eq(count[i], owner != NULL);
		ck_assert_uint_eq(walk_seen[i], owner != NULL);
		t_key_small(&k, (uint32_t)i);
		n = conntab_lookup(table, &k);
		ck_assert_ptr_eq(n, owner ? &owner->node : NULL);
		present += owner != NULL;
	}
	rcu_read_unlock();
	conntab_stats(table, &st);
	ck_assert_uint_eq(st.entries, present);
	rcu_barrier();
	for (i = 0; i < NWRITERS; i++)
		for (j = 0; j < NK; j++)
			if (wr[i].mine[j])
				ck_assert_int_eq(conntab_remove(table,
						 &wr[i].mine[j]->node), 0);
	conntab_destroy(table, NULL);
	for (i = 0; i < NWRITERS; i++)
		for (j = 0; j < NK; j++)
			free(wr[i].mine[j]);	/* no reader is left */
	th_quarantine_flush();
}
END_TEST

struct flipper {
	pthread_t tid;
	uint64_t rng;
	unsigned long flips;
};

/* Keep every key present, its node replaced again and again. */
static void *flipper_main(void *arg)
{
	struct flipper *f = arg;
	struct conntab_node *n, *old;
	struct conntab_key k;
	struct tconn *c;
	uint32_t id;
	int err;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		id = (uint32_t)(th_rnd(&f->rng) % NK);
		t_key_small(&k, id);
		c = t_conn_new(id);
		rcu_read_lock();
		n = conntab_lookup(table, &k);
		if (n && conntab_node_state(n) == CONNTAB_ESTABLISHED) {
			err = conntab_timewait(table, n, &c->node);
			if (!err)
				th_retire(t_conn_of(n));
		} else {
			/* TIME_WAIT, or absent while the remover has it. */
			old = NULL;
			err = conntab_insert_recycle(table, &c->node, &k, &old);
			if (!err && old)
				th_retire(t_conn_of(old));
		}
		rcu_read_unlock();
		if (err)	/* the remover, or the other path, came first */
			t_conn_free_now(c);	/* never linked */
		else
			th_tick(&f->flips);
	}
	rcu_unregister_thread();
	return NULL;
}

START_TEST(remove_key_vs_flips)
{
	static struct flipper fl;
	unsigned long removes = 0, back = 0;
	struct conntab_node *n;
	struct conntab_key k;
	struct tconn *c;
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
	uint32_t i, id;

	table = t_table(B, 0, 0);
	stop = 0;
	th_reset();
	for (i = 0; i < NK; i++) {
		t_key_small(&k, i);
		c = t_conn_new(i);
		ck_assert_int_eq(conntab_insert(table, &c->node, &k), 0);
	}
	memset(&fl, 0, sizeof(fl));
	fl.rng = rng * 3 + 1;
	ck_assert_int_eq(pthread_create(&fl.tid, NULL, flipper_main, &fl), 0);
	/* The remover is this thread: it runs until both have done enough. */
	for (;;) {
		id = (uint32_t)(th_rnd(&rng) % NK);
		t_key_small(&k, id);
		n = conntab_remove_key(table, &k);
		if (!n)
			th_report("%s: remove_key(%u): NULL, errno %d", BN, id,
				  errno);
		else if (th_check_node(n, &k, id, "remove_key") == 0)
			th_retire(t_conn_of(n));
		th_tick(&removes);
		c = t_conn_new(id);
		if (conntab_insert(table, &c->node, &k) == 0)
			back++;
		else		/* the flipper's recycle put it back first */
			t_conn_free_now(c);
		if (removes >= 20000 &&
		    __atomic_load_n(&fl.flips, __ATOMIC_RELAXED) >= 20000)
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(fl.tid, NULL);
	printf("%s: %lu remove_key calls, %lu put back by the remover, %lu "
	       "flips; %lu errors\n", BN, removes, back, fl.flips,
	       th_errors());
	ck_assert_msg(th_errors() == 0, "%s: %lu errors, first: %s", BN,
		      th_errors(), th_first_error());
	/* Every key is present, once; empty the table by key. */
	for (i = 0; i < NK; i++) {
		t_key_small(&k, i);
		n = conntab_remove_key(table, &k);
		ck_assert_ptr_nonnull(n);
		th_retire(t_conn_of(n));
		errno = 0;
		ck_assert_ptr_null(conntab_remove_key(table, &k));
		ck_assert_int_eq(errno, ENOENT);
	}
	conntab_destroy(table, NULL);
	rcu_barrier();
	th_quarantine_flush();
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = { racing_writers,
					     remove_key_vs_flips };
	Suite *s = suite_create("race");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
