/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One libconntab.so serves every liburcu flavor: this program is built
 * twice, against <urcu-qsbr.h> (T_FLAVOR_QSBR) and <urcu-bp.h>
 * (T_FLAVOR_BP), and links that flavor's library only. It checks that the
 * conntab_create() macro hands the library the included flavor, that
 * readers of that flavor (with quiescent states for QSBR) see consistent
 * nodes while the main thread changes the table and frees nodes through
 * the flavor's call_rcu, that an explicit cfg.flavor is the one the
 * library calls, and which threads may write: every backend's writers
 * from threads the flavor does not count (unregistered; registered but
 * offline, under QSBR).
 */
#if defined(T_FLAVOR_QSBR)
# include <urcu-qsbr.h>
# define FLAVOR			"qsbr"
# define t_quiescent()		rcu_quiescent_state()
# define t_offline()		rcu_thread_offline()
# define t_online()		rcu_thread_online()
#elif defined(T_FLAVOR_BP)
# include <urcu-bp.h>
# define FLAVOR			"bp"
# define t_quiescent()		do { } while (0)
# define t_offline()		do { } while (0)
# define t_online()		do { } while (0)
#else
# error "build with -DT_FLAVOR_QSBR or -DT_FLAVOR_BP"
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#ifndef conntab_create
# error "conntab_create() must be the flavor macro after a urcu header"
#endif

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

#define NSTABLE		256	/* even ids: always present */
#define NOPS		30000

static struct conntab *table;
static int stop;
static unsigned long reader_errors, reader_lookups;

/* Freed nodes: poisoned, kept until the end (so poison stays visible). */
static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tconn **dead;
static size_t ndead, dead_cap;
static unsigned long retired;

static void poison_cb(struct rcu_head *rh)
{
	struct tconn *c = caa_container_of(rh, struct tconn, rh);

	c->magic = T_MAGIC_DEAD;
	memset(&c->node.ct_key, 0xa5, sizeof(c->node.ct_key));
	pthread_mutex_lock(&dead_lock);
	if (ndead == dead_cap) {
		dead_cap = dead_cap ? 2 * dead_cap : 1024;
		dead = realloc(dead, dead_cap * sizeof(*dead));
		if (!dead)
			abort();
	}
	dead[ndead++] = c;
	pthread_mutex_unlock(&dead_lock);
}

static void retire(struct tconn *c)
{
	retired++;
	call_rcu(&c->rh, poison_cb);	/* the flavor's own call_rcu */
}

static void dead_flush(void)
{
	while (ndead)
		free(dead[--ndead]);
}

static void *reader_main(void *arg)
{
	uint64_t rng = 88172645463325252ull;
	struct conntab_node *n;
	struct conntab_key k;
	uint32_t id;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		id = (uint32_t)(rng % (2 * NSTABLE));
		t_key(&k, id);
		rcu_read_lock();
		n = conntab_lookup(table, &k);
		if (n) {
			const struct tconn *c = t_conn_of(n);

			if (c->magic != T_MAGIC_LIVE ||
			    !t_key_same(conntab_node_key(n), &k))
				reader_errors++;
		} else if (id % 2 == 0) {
			reader_errors++;	/* a stable key missed */
		}
		rcu_read_unlock();
		__atomic_store_n(&reader_lookups, reader_lookups + 1,
				 __ATOMIC_RELAXED);
		t_quiescent();
	}
	rcu_unregister_thread();
	return NULL;
}

START_TEST(create_macro)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct conntab *t;

	/* The macro passed this program's flavor. */
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	conntab_destroy(t, NULL);
	/* The function alone has none. */
	errno = 0;
	ck_assert_ptr_null((conntab_create)(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.flavor = &rcu_flavor;
	t = (conntab_create)(&cfg);
	ck_assert_ptr_nonnull(t);
	conntab_destroy(t, NULL);
}
END_TEST

START_TEST(readers_and_call_rcu)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct tconn *hold[2 * NSTABLE] = { NULL }, *c, *n;
	struct conntab_node *rec;
	struct conntab_stats st;
	struct conntab_key k;
	pthread_t tid;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	uint32_t id, i;
	size_t present = 0;

	table = conntab_create(&cfg);
	ck_assert_ptr_nonnull(table);
	for (id = 0; id < 2 * NSTABLE; id += 2) {
		hold[id] = t_conn_new(id);
		t_key(&k, id);
		ck_assert_int_eq(conntab_insert(table, &hold[id]->node, &k),
				 0);
	}
	stop = 0;
	reader_errors = reader_lookups = 0;
	retired = 0;
	ck_assert_int_eq(pthread_create(&tid, NULL, reader_main, NULL), 0);
	for (i = 0; i < NOPS; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		id = (uint32_t)(rng % NSTABLE) * 2 + 1;	/* a churn key */
		t_key(&k, id);
		c = hold[id];
		if (!c) {
			hold[id] = t_conn_new(id);
			ck_assert_int_eq(conntab_insert(table, &hold[id]->node,
							&k), 0);
		} else if (conntab_node_state(&c->node) == CONNTAB_TIMEWAIT) {
			n = t_conn_new(id);
			ck_assert_int_eq(conntab_insert_recycle(table,
					 &n->node, &k, &rec), 0);
			ck_assert_ptr_eq(rec, &c->node);
			hold[id] = n;
			retire(c);
		} else if (rng & 0x100) {
			ck_assert_int_eq(conntab_remove(table, &c->node), 0);
			hold[id] = NULL;
			retire(c);
		} else if (rng & 0x200) {
			ck_assert_int_eq(conntab_timewait(table, &c->node,
							  &c->node), 0);
		} else {
			n = t_conn_new(id);
			ck_assert_int_eq(conntab_timewait(table, &c->node,
							  &n->node), 0);
			hold[id] = n;
			retire(c);
		}
		/* The main thread reads too, between quiescent states. */
		rcu_read_lock();
		ck_assert_ptr_eq(conntab_lookup(table, &k),
				 hold[id] ? &hold[id]->node : NULL);
		rcu_read_unlock();
		t_quiescent();
	}
	/* However loaded the machine, the reader ran alongside. */
	while (!__atomic_load_n(&reader_lookups, __ATOMIC_RELAXED)) {
		t_quiescent();
		sched_yield();
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(tid, NULL);
	printf("%s/%s: %lu reader lookups, %lu nodes retired through "
	       "call_rcu\n", FLAVOR, BN, reader_lookups, retired);
	ck_assert_uint_eq(reader_errors, 0);
	ck_assert_uint_gt(reader_lookups, 0);
	for (id = 0; id < 2 * NSTABLE; id++)
		present += hold[id] != NULL;
	conntab_stats(table, &st);
	ck_assert_uint_eq(st.entries, present);
	/* Every callback ran: grace periods end with this flavor. */
	t_offline();
	rcu_barrier();
	t_online();
	ck_assert_uint_eq(ndead, retired);
	conntab_destroy(table, NULL);
	for (id = 0; id < 2 * NSTABLE; id++)
		if (hold[id])
			t_conn_free_now(hold[id]);
	dead_flush();
}
END_TEST

/* A copy of the flavor whose update calls are counted. */
static unsigned long n_call_rcu, n_sync, n_barrier;

static void count_call_rcu(struct rcu_head *h, void (*fn)(struct rcu_head *))
{
	__atomic_add_fetch(&n_call_rcu, 1, __ATOMIC_RELAXED);
	call_rcu(h, fn);
}

static void count_sync(void)
{
	__atomic_add_fetch(&n_sync, 1, __ATOMIC_RELAXED);
	synchronize_rcu();
}

static void count_barrier(void)
{
	__atomic_add_fetch(&n_barrier, 1, __ATOMIC_RELAXED);
	rcu_barrier();
}

START_TEST(explicit_flavor)
{
	enum { N = 20000 };
	struct rcu_flavor_struct fl = rcu_flavor;
	struct conntab_config cfg = { .backend = B, .flavor = &fl,
				       .hash = t_hash };
	struct tconn *c = calloc(N, sizeof(*c));
	struct conntab_stats st;
	struct conntab_key k;
	size_t i;

	ck_assert_ptr_nonnull(c);
	fl.update_call_rcu = count_call_rcu;
	fl.update_synchronize_rcu = count_sync;
	fl.barrier = count_barrier;
	n_call_rcu = n_sync = n_barrier = 0;
	/* Small start, many entries: a growing backend resizes. */
	table = conntab_create(&cfg);
	ck_assert_ptr_nonnull(table);
	for (i = 0; i < N; i++) {
		conntab_node_init(&c[i].node);
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(table, &c[i].node, &k), 0);
		t_quiescent();
	}
	rcu_read_lock();
	for (i = 0; i < N; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_ptr_eq(conntab_lookup(table, &k), &c[i].node);
	}
	rcu_read_unlock();
	conntab_stats(table, &st);
	ck_assert_uint_eq(st.entries, N);
	for (i = 0; i < N; i++) {
		ck_assert_int_eq(conntab_remove(table, &c[i].node), 0);
		t_quiescent();
	}
	t_offline();
	conntab_destroy(table, NULL);
	rcu_barrier();
	t_online();
	printf("%s/%s: library called the configured flavor: call_rcu %lu, "
	       "synchronize_rcu %lu, barrier %lu (%zu resizes)\n", FLAVOR, BN,
	       n_call_rcu, n_sync, n_barrier, st.resizes);
	free(c);
}
END_TEST

/* Insert, time-wait and remove keys 0..n-1 of @t; 0 or an error count. */
static int write_all(struct conntab *t, struct tconn *c, uint32_t n)
{
	struct conntab_key k;
	uint32_t i;
	int bad = 0;

	for (i = 0; i < n; i++) {
		t_key(&k, i);
		bad += conntab_insert(t, &c[i].node, &k) != 0;
		if (i % 3 == 0)
			bad += conntab_timewait(t, &c[i].node, &c[i].node) != 0;
	}
	for (i = 0; i < n; i += 2)
		bad += conntab_remove(t, &c[i].node) != 0;
	return bad;
}

/*
 * The library leaves a thread it registered for a call as it found it:
 * registering it again here would trip liburcu's assertion against a
 * double registration (or corrupt its registry) if it did not.
 */
static void t_check_unregistered(void)
{
	rcu_register_thread();
	rcu_unregister_thread();
}

struct offline_writer {
	struct conntab *t;
	struct tconn *c;
	int bad;
};

/* A thread that is not registered at all (offline, for QSBR's sake). */
static void *unregistered_writer(void *arg)
{
	struct offline_writer *w = arg;

	w->bad = write_all(w->t, w->c, 500);
	t_check_unregistered();
	return NULL;
}

/* Keys 0..499 of @t as write_all() leaves them. */
static void check_written(struct conntab *t, struct tconn *c)
{
	struct conntab_key k;
	uint32_t i;

	rcu_read_lock();
	for (i = 0; i < 500; i++) {
		t_key(&k, i);
		ck_assert_ptr_eq(conntab_lookup(t, &k),
				 i % 2 ? &c[i].node : NULL);
	}
	rcu_read_unlock();
}

/*
 * Every backend's writers work from a thread the flavor does not count
 * (conntab.h, "Threads"): one that never registered writes while this
 * (registered) one waits, then checks the result. Under QSBR, this
 * thread does it again offline, and is offline still after each call.
 */
START_TEST(writer_threads)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct offline_writer w = { 0 };
	pthread_t th;
	uint32_t i;

	w.c = calloc(500, sizeof(*w.c));
	ck_assert_ptr_nonnull(w.c);
	for (i = 0; i < 500; i++)
		conntab_node_init(&w.c[i].node);
	w.t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(w.t);
	t_offline();
	ck_assert_int_eq(pthread_create(&th, NULL, unregistered_writer, &w),
			 0);
	pthread_join(th, NULL);
	t_online();
	ck_assert_int_eq(w.bad, 0);
	check_written(w.t, w.c);
	conntab_destroy(w.t, NULL);
#ifdef T_FLAVOR_QSBR
	for (i = 0; i < 500; i++)
		conntab_node_init(&w.c[i].node);
	w.t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(w.t);
	rcu_thread_offline();
	w.bad = write_all(w.t, w.c, 500);
	ck_assert_int_eq(rcu_read_ongoing(), 0);	/* still offline */
	rcu_thread_online();
	ck_assert_int_eq(w.bad, 0);
	check_written(w.t, w.c);
	conntab_destroy(w.t, NULL);
#endif
	free(w.c);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		create_macro, readers_and_call_rcu, explicit_flavor,
		writer_threads,
	};
	Suite *s = suite_create("flavor-" FLAVOR);
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend, 4, 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
