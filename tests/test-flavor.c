/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One libconntab.so serves every liburcu flavor: this program is built
 * once per flavor, against <urcu.h> (T_FLAVOR_MEMB, the default flavor;
 * with RCU_MB, T_FLAVOR_MB; with RCU_SIGNAL, T_FLAVOR_SIGNAL),
 * <urcu-qsbr.h> (T_FLAVOR_QSBR) and <urcu-bp.h> (T_FLAVOR_BP), and links
 * that flavor's library only. It checks that the conntab_create() macro
 * hands the library the included flavor, that readers of that flavor
 * (with quiescent states for QSBR) see consistent nodes while the main
 * thread changes the table and frees nodes through the flavor's
 * call_rcu, that an explicit cfg.flavor is the one the library calls,
 * and which threads may write: every backend's writers from threads the
 * flavor does not count (unregistered; registered but offline, under
 * QSBR), also while a registered thread makes the table retire memory
 * (run under ASan by the sanitizer build), and, in a build with the
 * library's debug checks, that a writer inside a read-side critical
 * section of an unregistered thread stops with a message, as does, under
 * QSBR, one on an offline thread with a flavor the library cannot
 * identify. And the exthash and trie writers' inline read lock
 * (lib/rcu-reg.h): that it replaces the flavor's calls where configure
 * built it, that a grace period sleeps waiting for a writer inside it
 * and is woken by its unlock, and that it nests inside the
 * application's read-side critical section without ending it.
 */
#if defined(T_FLAVOR_MEMB)
# include <urcu.h>
# define FLAVOR			"memb"
#elif defined(T_FLAVOR_MB)
# define RCU_MB			/* <urcu.h>'s way to choose mb */
# include <urcu.h>
# define FLAVOR			"mb"
#elif defined(T_FLAVOR_SIGNAL)
# define RCU_SIGNAL
# include <urcu.h>
# define FLAVOR			"signal"
#elif defined(T_FLAVOR_QSBR)
# include <urcu-qsbr.h>
# define FLAVOR			"qsbr"
# define t_quiescent()		rcu_quiescent_state()
# define t_offline()		rcu_thread_offline()
# define t_online()		rcu_thread_online()
#elif defined(T_FLAVOR_BP)
# include <urcu-bp.h>
# define FLAVOR			"bp"
#else
# error "build with -DT_FLAVOR_MEMB, _MB, _SIGNAL, _QSBR or _BP"
#endif
#ifndef t_quiescent
# define t_quiescent()		do { } while (0)
# define t_offline()		do { } while (0)
# define t_online()		do { } while (0)
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
#include <time.h>

#include "common.h"

#ifdef HAVE_CONFIG_H
# include "config.h"	/* CT_URCU_INLINE_READ_LOCK */
#endif
#ifndef T_FLAVOR_BP
/* The flavor's grace-period state: its futex tells a sleeping one. */
# include <urcu/static/urcu-common.h>
extern struct urcu_gp rcu_gp;	/* urcu_<flavor>_gp, by urcu/map */
#endif

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

/*
 * Writers on threads the flavor does not count, on a table that a
 * registered thread churns: it grows from nothing to up to CH_KEYS and
 * back, for CH_MS milliseconds and at least CH_ROUNDS times (the time
 * bound keeps ASan's slower build from taking minutes, the round bound
 * keeps a busy machine from testing nothing). Exthash splits and merges
 * segments and swaps directories, the trie copies and retires nodes, all
 * through call_rcu, while the other writers descend the table under a
 * read lock that protects them only because the library counts them for
 * each call. Under ASan (the sanitizer build) a writer that stood on
 * freed memory fails the run; every call must also return what it
 * returns on a registered thread.
 */
#define CH_KEYS		8000	/* the churning thread's keys: 0.. */
#define CH_ROUNDS	2
#define CH_MS		400
#define UW_KEYS		1024	/* each other writer's, after those */
#define UW_WRITERS	2

struct uw {
	struct conntab *t;
	uint32_t base;
	int offline;	/* QSBR: registered, offline (else unregistered) */
	unsigned long rounds, bad;
};

static int churn_done;

static long never_rank(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	return -1;
}

/*
 * Every writer call once per key of base..base+UW_KEYS-1: insert (or
 * insert_evict, which is an insert without a cap), time-wait in place
 * or into a second node, recycle, stats, remove. Returns the failures.
 */
static unsigned long uw_round(struct conntab *t, struct tconn *a,
			      struct tconn *b, uint32_t base)
{
	struct conntab_node *rec, *ev;
	struct conntab_stats st;
	struct conntab_key k;
	unsigned long bad = 0;
	uint32_t i;

	for (i = 0; i < UW_KEYS; i++) {
		conntab_node_init(&a[i].node);
		conntab_node_init(&b[i].node);
		t_key(&k, base + i);
		if (i % 8 == 0)
			bad += conntab_insert_evict(t, &a[i].node, &k,
						    never_rank, NULL, &ev) ||
			       ev;
		else
			bad += conntab_insert(t, &a[i].node, &k) != 0;
		switch (i % 4) {
		case 1:
			bad += conntab_timewait(t, &a[i].node,
						&a[i].node) != 0;
			break;
		case 2:
			bad += conntab_timewait(t, &a[i].node,
						&b[i].node) != 0;
			break;
		case 3:
			bad += conntab_timewait(t, &a[i].node,
						&a[i].node) != 0;
			bad += conntab_insert_recycle(t, &b[i].node, &k,
						      &rec) != 0 ||
			       rec != &a[i].node;
			break;
		}
	}
	conntab_stats(t, &st);
	for (i = 0; i < UW_KEYS; i++)
		bad += conntab_remove(t, i % 4 >= 2 ? &b[i].node :
						      &a[i].node) != 0;
	return bad;
}

static void *uw_main(void *arg)
{
	struct uw *w = arg;
	struct tconn *a = calloc(UW_KEYS, sizeof(*a));
	struct tconn *b = calloc(UW_KEYS, sizeof(*b));

	if (!a || !b)
		abort();
#ifdef T_FLAVOR_QSBR
	if (w->offline) {
		rcu_register_thread();
		rcu_thread_offline();
	}
#endif
	do {
		w->bad += uw_round(w->t, a, b, w->base);
#ifdef T_FLAVOR_QSBR
		if (w->offline && rcu_read_ongoing())
			w->bad++;	/* the library left it online */
#endif
		/*
		 * Other writers' descents may still stand on the nodes (the
		 * trie's are lock-free): a grace period before reuse.
		 */
		synchronize_rcu();
		w->rounds++;
		/* Leave the churning thread a core: it sets the pace. */
		usleep(1000);
	} while (!__atomic_load_n(&churn_done, __ATOMIC_ACQUIRE) ||
		 w->rounds < 2);
	if (w->offline) {
		t_online();
		rcu_unregister_thread();
	} else {
		t_check_unregistered();
	}
	free(a);
	free(b);
	return NULL;
}

static long t_ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 +
	       (now.tv_nsec - t0->tv_nsec) / 1000000;
}

static void free_cb(struct rcu_head *rh)
{
	t_conn_free_now(caa_container_of(rh, struct tconn, rh));
}

START_TEST(unregistered_churn)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct tconn **c = calloc(CH_KEYS, sizeof(*c));
	struct uw w[UW_WRITERS];
	pthread_t th[UW_WRITERS];
	struct conntab_resize_stats rs;
	struct conntab_key k;
	struct timespec t0;
	uint64_t rng = 0x2545f4914f6cdd1dull;
	uint32_t i, n, r, j;

	ck_assert_ptr_nonnull(c);
	memset(w, 0, sizeof(w));
	table = conntab_create(&cfg);
	ck_assert_ptr_nonnull(table);
	__atomic_store_n(&churn_done, 0, __ATOMIC_RELAXED);
	for (j = 0; j < UW_WRITERS; j++) {
		w[j].t = table;
		w[j].base = CH_KEYS + j * UW_KEYS;
#ifdef T_FLAVOR_QSBR
		w[j].offline = j == 1;
#endif
		ck_assert_int_eq(pthread_create(&th[j], NULL, uw_main, &w[j]),
				 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < CH_ROUNDS || t_ms_since(&t0) < CH_MS; r++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		n = CH_KEYS / 2 + (uint32_t)(rng % (CH_KEYS / 2));
		for (i = 0; i < n; i++) {
			c[i] = t_conn_new(i);
			t_key(&k, i);
			ck_assert_int_eq(conntab_insert(table, &c[i]->node,
							&k), 0);
			if (i % 256 == 0)
				t_quiescent();
		}
		for (i = 0; i < n; i++) {
			ck_assert_int_eq(conntab_remove(table, &c[i]->node),
					 0);
			call_rcu(&c[i]->rh, free_cb);
			if (i % 256 == 0)
				t_quiescent();
		}
	}
	__atomic_store_n(&churn_done, 1, __ATOMIC_RELEASE);
	/* Their grace periods wait for no one here. */
	t_offline();
	for (j = 0; j < UW_WRITERS; j++)
		pthread_join(th[j], NULL);
	t_online();
	conntab_resize_stats(table, &rs);
	printf("%s/%s: %lu + %lu rounds of writers on uncounted threads "
	       "beside %u rounds of churn (%zu splits, %zu merges)\n",
	       FLAVOR, BN, w[0].rounds, w[1].rounds, r, rs.splits,
	       rs.merges);
	for (j = 0; j < UW_WRITERS; j++)
		ck_assert_uint_eq(w[j].bad, 0);
	conntab_destroy(table, NULL);
	t_offline();
	rcu_barrier();
	t_online();
	free(c);
}
END_TEST

/*
 * Counted for the whole call: inside an eviction's rank callback, which
 * the exthash and trie backends call under the flavor's read lock, a
 * grace period that another thread starts must wait for the calling
 * thread, even though the application never registered it. The first
 * rank call starts one and looks 50 ms later (a grace period with no
 * reader takes microseconds). The thread also creates and destroys its
 * table (the trie's destroy hands its last nodes to call_rcu).
 */
#define EV_CAP		64

struct probe {
	enum conntab_backend b;
	int armed, started, gp_done, gp_blocked;
	pthread_t th;
	unsigned long bad, evicted;
};

static void *gp_main(void *arg)
{
	struct probe *p = arg;

	synchronize_rcu();
	__atomic_store_n(&p->gp_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static long probe_rank(struct conntab_node *n, void *arg)
{
	struct probe *p = arg;

	if (p->armed) {
		p->armed = 0;
		if (pthread_create(&p->th, NULL, gp_main, p))
			abort();
		p->started = 1;
		usleep(50000);
		p->gp_blocked = !__atomic_load_n(&p->gp_done,
						 __ATOMIC_ACQUIRE);
	}
	return t_conn_of(n)->rank;
}

static void *evict_main(void *arg)
{
	struct probe *p = arg;
	struct conntab_config cfg = { .backend = p->b, .hash = t_hash,
				       .max_entries = EV_CAP };
	struct tconn *c = calloc(2 * EV_CAP, sizeof(*c));
	struct conntab_node *ev;
	struct conntab_stats st;
	struct conntab_key k;
	struct conntab *t;
	uint32_t i;

	t = conntab_create(&cfg);
	if (!c || !t)
		abort();
	for (i = 0; i < 2 * EV_CAP; i++) {
		conntab_node_init(&c[i].node);
		c[i].rank = i;
		t_key(&k, i);
		p->armed = i == EV_CAP;		/* the first eviction */
		p->bad += conntab_insert_evict(t, &c[i].node, &k, probe_rank,
					       p, &ev) != 0;
		p->bad += (i < EV_CAP) != !ev;
		p->evicted += ev != NULL;
		if (p->started) {
			pthread_join(p->th, NULL);
			p->started = 0;
		}
	}
	conntab_stats(t, &st);
	p->bad += st.entries != EV_CAP;
	conntab_destroy(t, NULL);
	synchronize_rcu();	/* readers: none; the rule all the same */
	free(c);
	t_check_unregistered();
	return NULL;
}

START_TEST(unregistered_evict)
{
	struct probe p = { .b = B };
	pthread_t th;

	t_offline();
	ck_assert_int_eq(pthread_create(&th, NULL, evict_main, &p), 0);
	pthread_join(th, NULL);
	t_online();
	ck_assert_uint_eq(p.bad, 0);
	ck_assert_uint_eq(p.evicted, EV_CAP);
	/* Chained and split take no read lock: nothing to count. */
	if (B == CONNTAB_EXTHASH || B == CONNTAB_TRIE)
		ck_assert_msg(p.gp_blocked, "%s: a grace period ended while "
			      "an eviction of an unregistered thread ranked "
			      "under the read lock", BN);
}
END_TEST

/*
 * The exthash and trie writers take the read lock inline where configure
 * enabled it (lib/rcu-reg.h): a table whose flavor is rcu_flavor with
 * read_lock and read_unlock wrapped (still identified: register_thread
 * is liburcu's) sees no call of them from those writers on this
 * registered thread, except under bp, which they call as before; where
 * the inline lock is not built, they call it for every insert and
 * remove. Calls and returns pair up on every backend.
 */
static unsigned long wl_locks, wl_unlocks;
static void (*wl_read_lock)(void), (*wl_read_unlock)(void);

static void wl_count_lock(void)
{
	wl_locks++;
	wl_read_lock();
}

static void wl_count_unlock(void)
{
	wl_unlocks++;
	wl_read_unlock();
}

START_TEST(writer_lock_inline)
{
	enum { N = 256 };
	struct rcu_flavor_struct fl = rcu_flavor;
	struct conntab_config cfg = { .backend = B, .flavor = &fl,
				       .hash = t_hash };
	struct tconn *c = calloc(N, sizeof(*c));
	bool locking = B == CONNTAB_EXTHASH || B == CONNTAB_TRIE;
	struct conntab_key k;
	struct conntab *t;
	uint32_t i;

	ck_assert_ptr_nonnull(c);
	wl_read_lock = fl.read_lock;
	wl_read_unlock = fl.read_unlock;
	fl.read_lock = wl_count_lock;
	fl.read_unlock = wl_count_unlock;
	wl_locks = wl_unlocks = 0;
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < N; i++) {
		conntab_node_init(&c[i].node);
		t_key(&k, i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	for (i = 0; i < N; i++)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	ck_assert_uint_eq(wl_locks, wl_unlocks);
#if defined(CT_URCU_INLINE_READ_LOCK) && !defined(T_FLAVOR_BP)
	ck_assert_msg(!locking || !wl_locks, "%s: %lu read_lock calls from "
		      "%d inserts and removes with the inline read lock", BN,
		      wl_locks, 2 * N);
#else
	ck_assert_msg(!locking || wl_locks >= 2 * N, "%s: %lu read_lock "
		      "calls from %d inserts and removes", BN, wl_locks,
		      2 * N);
#endif
	printf("%s/%s: writers called read_lock %lu times for %d writes\n",
	       FLAVOR, BN, wl_locks, 2 * N);
	t_offline();
	conntab_destroy(t, NULL);
	rcu_barrier();
	t_online();
	free(c);
}
END_TEST

#ifndef T_FLAVOR_BP
/*
 * A grace period waits for a writer inside its read lock, inline or not,
 * on a thread the application registered, and the writer's unlock wakes
 * it. The eviction's rank callback runs under the exthash and trie
 * writers' read lock: the first one starts synchronize_rcu() on another
 * thread and returns only once that grace period has gone to sleep on
 * its futex waiting for this thread (-1), or has ended, which fails.
 * Then the writer's unlock must wake it (memb, mb, signal: the join
 * would hang), or, under QSBR, whose read lock is nothing, this thread's
 * next quiescent state.
 */
static struct probe gw_probe;

static int t_gp_sleeping(const struct probe *p)
{
	while (!__atomic_load_n(&p->gp_done, __ATOMIC_ACQUIRE)) {
		if (uatomic_read(&rcu_gp.futex) == -1)
			return 1;
		usleep(1000);
	}
	return 0;
}

static long gw_rank(struct conntab_node *n, void *arg)
{
	struct probe *p = arg;

	if (p->armed) {
		p->armed = 0;
		if (pthread_create(&p->th, NULL, gp_main, p))
			abort();
		p->started = 1;
		p->gp_blocked = t_gp_sleeping(p);
	}
	return t_conn_of(n)->rank;
}
#endif

START_TEST(writer_lock_gp_waits)
{
#ifndef T_FLAVOR_BP
	struct conntab_config cfg = { .backend = B, .hash = t_hash,
				       .max_entries = EV_CAP };
	struct probe *p = &gw_probe;
	struct conntab_node *ev;
	struct conntab_key k;
	struct conntab *t;
	struct tconn *c;
	uint32_t i;

	if (B != CONNTAB_EXTHASH && B != CONNTAB_TRIE)
		return;		/* their writers take no read lock */
	c = calloc(EV_CAP + 1, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	memset(p, 0, sizeof(*p));
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i <= EV_CAP; i++) {
		conntab_node_init(&c[i].node);
		c[i].rank = i;
		t_key(&k, i);
		p->armed = i == EV_CAP;		/* the first eviction */
		ck_assert_int_eq(conntab_insert_evict(t, &c[i].node, &k,
						      gw_rank, p, &ev), 0);
		ck_assert(!ev == (i < EV_CAP));
	}
	ck_assert(p->started);
	t_quiescent();		/* QSBR: what lets the grace period end */
	pthread_join(p->th, NULL);
	ck_assert_msg(p->gp_blocked, "%s: a grace period ended while a "
		      "writer ranked a sample under its read lock", BN);
	ck_assert(p->gp_done);
	t_offline();
	conntab_destroy(t, NULL);
	rcu_barrier();
	t_online();
	free(c);
#endif
}
END_TEST

/*
 * The writers' read lock nests inside the application's (memb, mb,
 * signal; QSBR has no read-side section to nest in): a grace period that
 * found this thread in its own section sleeps, a write in between takes
 * and drops the read lock inline without leaving the outer section (the
 * grace period still sleeps, its futex untouched), and the application's
 * unlock, liburcu's code, wakes it.
 */
START_TEST(writer_lock_nested)
{
#if !defined(T_FLAVOR_BP) && !defined(T_FLAVOR_QSBR)
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct probe *p = &gw_probe;
	struct conntab_key k;
	struct conntab *t;
	struct tconn *c;
	uint32_t i;

	if (B != CONNTAB_EXTHASH && B != CONNTAB_TRIE)
		return;		/* their writers take no read lock */
	c = calloc(64, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	memset(p, 0, sizeof(*p));
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	rcu_read_lock();
	ck_assert_int_eq(pthread_create(&p->th, NULL, gp_main, p), 0);
	ck_assert_msg(t_gp_sleeping(p), "%s: a grace period ended inside "
		      "a read-side critical section", BN);
	for (i = 0; i < 64; i++) {
		conntab_node_init(&c[i].node);
		t_key(&k, i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	for (i = 0; i < 64; i += 2)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	ck_assert(rcu_read_ongoing());
	ck_assert_msg(uatomic_read(&rcu_gp.futex) == -1 &&
		      !__atomic_load_n(&p->gp_done, __ATOMIC_ACQUIRE),
		      "%s: a write inside a read-side critical section woke "
		      "the grace period waiting for it", BN);
	rcu_read_unlock();
	pthread_join(p->th, NULL);
	ck_assert(p->gp_done);
	for (i = 1; i < 64; i += 2)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
#endif
}
END_TEST

/*
 * The exthash and trie writers' own unlock (ct_writer_unlock(), after
 * ct_writer_lock(): conntab_insert() and conntab_remove() of a single
 * node) wakes a grace period that went to sleep waiting for the writer
 * inside: writer_lock_gp_waits sees the unlock of an eviction's sample
 * wake one, which is another. A registered thread inserts and removes
 * one key over and over (a table of one node: its segment never splits,
 * so no slow path takes over the unlock); SIGUSR2 lands in it until its
 * handler finds the thread inside the read-side critical section of the
 * call wanted (rcu_read_ongoing(): no other writer's section is there
 * to be in), and holds it there while a grace period started from
 * another thread goes to sleep on its futex waiting for it. Then the
 * handler returns, the call ends, the thread stops, and nothing else
 * takes or drops a read lock: only that call's unlock can wake the grace
 * period. One that is still asleep after WU_WAIT_MS (a grace period takes
 * microseconds; this is "never") fails the test; the main thread's own
 * read unlock, liburcu's, wakes it first. memb, mb and signal: QSBR's
 * writers take no read lock, bp's grace period does not sleep on a futex.
 */
#if !defined(T_FLAVOR_BP) && !defined(T_FLAVOR_QSBR)
#define WU_WAIT_MS	10000
#define WU_TRIES	100000

enum { WU_NONE, WU_INSERT, WU_REMOVE };

struct wu {
	struct conntab *t;
	struct tconn c;
	int want;		/* the call to catch */
	int op;			/* the call the writer is in, or WU_NONE */
	int ready, stop, done, bye;
	int answer;		/* the handler's: 1 caught, -1 missed */
	int release;		/* the handler may return */
	unsigned long ops, bad;
};

static struct wu wu;

static void wu_handler(int sig)
{
	const struct timespec ts = { 0, 100000 };

	(void)sig;
	if (__atomic_load_n(&wu.op, __ATOMIC_RELAXED) != wu.want ||
	    !rcu_read_ongoing()) {
		__atomic_store_n(&wu.answer, -1, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&wu.answer, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&wu.release, __ATOMIC_ACQUIRE))
		nanosleep(&ts, NULL);
}

/* One insert and one remove of key 1, each announced in wu.op. */
static int wu_step(struct wu *w, const struct conntab_key *k)
{
	conntab_node_init(&w->c.node);
	__atomic_store_n(&w->op, WU_INSERT, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w->bad += conntab_insert(w->t, &w->c.node, k) != 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&w->op, WU_NONE, __ATOMIC_RELAXED);
	if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
		return 0;
	__atomic_store_n(&w->op, WU_REMOVE, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w->bad += conntab_remove(w->t, &w->c.node) != 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&w->op, WU_NONE, __ATOMIC_RELAXED);
	w->ops++;
	return !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
}

static void *wu_main(void *arg)
{
	struct wu *w = arg;
	struct conntab_key k;

	rcu_register_thread();
	t_key(&k, 1);
	/*
	 * The thread's first write goes the front end's way (its reader
	 * state is not cached yet), whose unlock is another: not caught.
	 */
	wu_step(w, &k);
	__atomic_store_n(&w->ready, 1, __ATOMIC_RELEASE);
	while (wu_step(w, &k))
		;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w->bye, __ATOMIC_ACQUIRE))
		usleep(1000);
	rcu_unregister_thread();
	return NULL;
}

/*
 * Catch the writer inside @want's read lock, then see what its unlock
 * does: true where it woke the grace period.
 */
static bool wu_catch(int want, const char *bn)
{
	struct probe *p = &gw_probe;
	struct wu *w = &wu;
	int sleeping, woke, ms;
	unsigned long tries;
	pthread_t th;

	w->want = want;
	w->op = WU_NONE;
	w->ready = w->stop = w->done = w->bye = w->release = 0;
	w->ops = w->bad = 0;
	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(pthread_create(&th, NULL, wu_main, w), 0);
	while (!__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE))
		usleep(100);
	for (tries = 1;; tries++) {
		__atomic_store_n(&w->answer, 0, __ATOMIC_RELAXED);
		ck_assert_int_eq(pthread_kill(th, SIGUSR2), 0);
		while (!__atomic_load_n(&w->answer, __ATOMIC_ACQUIRE))
			sched_yield();
		if (__atomic_load_n(&w->answer, __ATOMIC_ACQUIRE) > 0)
			break;
		ck_assert_msg(tries < WU_TRIES, "%s: %lu signals, none landed "
			      "inside a writer's read lock", bn, tries);
	}
	/* The writer sits inside its read lock, in the handler. */
	ck_assert_int_eq(pthread_create(&p->th, NULL, gp_main, p), 0);
	sleeping = t_gp_sleeping(p);
	__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&w->release, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
		usleep(100);
	for (ms = 0; ms < WU_WAIT_MS &&
	     !__atomic_load_n(&p->gp_done, __ATOMIC_ACQUIRE); ms++)
		usleep(1000);
	woke = __atomic_load_n(&p->gp_done, __ATOMIC_ACQUIRE);
	if (!woke) {
		rcu_read_lock();
		rcu_read_unlock();	/* liburcu's: it wakes the sleeper */
	}
	pthread_join(p->th, NULL);
	__atomic_store_n(&w->bye, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("%s/%s: %s caught inside its read lock after %lu signals, "
	       "%lu writes\n", FLAVOR, bn, want == WU_INSERT ? "insert" :
	       "remove", tries, w->ops);
	ck_assert_uint_eq(w->bad, 0);
	ck_assert_msg(sleeping, "%s: a grace period ended while a writer "
		      "was inside its read lock", bn);
	if (!woke)
		printf("%s/%s: a grace period that waited for a writer's %s "
		       "slept on after its unlock\n", FLAVOR, bn,
		       want == WU_INSERT ? "insert" : "remove");
	/* Stopped after an insert: the node is in. */
	if (want == WU_INSERT)
		ck_assert_int_eq(conntab_remove(w->t, &w->c.node), 0);
	return woke;
}
#endif

START_TEST(writer_unlock_wakes)
{
#if !defined(T_FLAVOR_BP) && !defined(T_FLAVOR_QSBR)
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct sigaction sa, old;
	bool woke_insert, woke_remove;

	if (B != CONNTAB_EXTHASH && B != CONNTAB_TRIE)
		return;		/* their writers take no read lock */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wu_handler;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, &old), 0);
	memset(&wu, 0, sizeof(wu));
	wu.t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(wu.t);
	woke_insert = wu_catch(WU_INSERT, BN);
	woke_remove = wu_catch(WU_REMOVE, BN);
	ck_assert_msg(woke_insert && woke_remove, "%s: a grace period that "
		      "waited for a writer slept on after its unlock: insert "
		      "%s, remove %s", BN, woke_insert ? "woke it" : "did not",
		      woke_remove ? "woke it" : "did not");
	conntab_destroy(wu.t, NULL);
	rcu_barrier();
	ck_assert_int_eq(sigaction(SIGUSR2, &old, NULL), 0);
#endif
}
END_TEST

/*
 * A write that fails leaves the thread's read-side state as it found it:
 * the exthash and trie writers take their read lock before the node's
 * claim, so an insert of a node already in a table (-EBUSY, whatever the
 * key), of a key already there (-EEXIST) and a remove of a node not
 * there (-ENOENT) each drop it again. Outside a read-side critical
 * section, rcu_read_ongoing() stays false after each (QSBR: true, the
 * thread online). A lock left held is dropped before the test fails, so
 * that the tests after it (one process) do not hang on it.
 */
static void wl_balanced(int err, int want, const char *bn, const char *what)
{
#ifdef T_FLAVOR_QSBR
	ck_assert_msg(rcu_read_ongoing(), "%s: %s left the thread offline",
		      bn, what);
#else
	int left = 0;

	while (rcu_read_ongoing()) {
		rcu_read_unlock();
		left++;
	}
	ck_assert_msg(!left, "%s: %s (%d) left %d read lock(s) held", bn,
		      what, err, left);
#endif
	ck_assert_msg(err == want, "%s: %s: %d, not %d", bn, what, err, want);
}

START_TEST(writer_lock_errors)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct tconn c[3];
	struct conntab_key k1, k2;
	struct conntab *t, *u;
	int i;

	memset(c, 0, sizeof(c));
	for (i = 0; i < 3; i++)
		conntab_node_init(&c[i].node);
	t_key(&k1, 1);
	t_key(&k2, 2);
	t = conntab_create(&cfg);
	u = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(u);
	wl_balanced(conntab_insert(t, &c[0].node, &k1), 0, BN, "insert");
	for (i = 0; i < 2; i++) {
		wl_balanced(conntab_insert(t, &c[0].node, &k1), -EBUSY, BN,
			    "insert of a linked node");
		wl_balanced(conntab_insert(t, &c[0].node, &k2), -EBUSY, BN,
			    "insert of a linked node, another key");
		wl_balanced(conntab_insert(u, &c[0].node, &k2), -EBUSY, BN,
			    "insert of another table's node");
		wl_balanced(conntab_insert(t, &c[1].node, &k1), -EEXIST, BN,
			    "insert of a key that is in");
		wl_balanced(conntab_remove(t, &c[2].node), -ENOENT, BN,
			    "remove of a node not in");
		wl_balanced(conntab_remove(u, &c[0].node), -ENOENT, BN,
			    "remove of another table's node");
	}
	wl_balanced(conntab_remove(t, &c[0].node), 0, BN, "remove");
	conntab_destroy(t, NULL);
	conntab_destroy(u, NULL);
	t_offline();
	rcu_barrier();
	t_online();
}
END_TEST

/*
 * conntab_remove_key() looks its key up under the flavor's read lock on
 * every backend, chained and split too, whose other writers take none:
 * the calling thread must be counted for that lookup, or a node it
 * stands on can be freed under it (a grace period would not wait). The
 * table's flavor is rcu_flavor with its read_lock wrapped (still
 * identified: register_thread is liburcu's); the wrapper, armed for the
 * remover's call, starts a grace period from another thread and looks
 * 50 ms later whether it ended, as unregistered_evict's rank does.
 */
static struct probe rk_probe;
static void (*rk_read_lock)(void);
static __thread int rk_armed;

static void rk_probe_lock(void)
{
	struct probe *p = &rk_probe;

	rk_read_lock();
	if (!rk_armed)
		return;
	rk_armed = 0;
	if (pthread_create(&p->th, NULL, gp_main, p))
		abort();
	p->started = 1;
	usleep(50000);
	p->gp_blocked = !__atomic_load_n(&p->gp_done, __ATOMIC_ACQUIRE);
}

struct rk_arg {
	struct conntab *t;
	struct conntab_node *want;
	struct conntab_node *got;
	int err;
};

static void *rk_main(void *arg)
{
	struct rk_arg *a = arg;
	struct conntab_key k;

	t_key(&k, 7);
	rk_armed = 1;
	a->got = conntab_remove_key(a->t, &k);
	a->err = a->got ? 0 : errno;
	if (rk_probe.started)
		pthread_join(rk_probe.th, NULL);
	t_check_unregistered();
	return NULL;
}

START_TEST(remove_key_unregistered)
{
	struct rcu_flavor_struct fl = rcu_flavor;
	struct conntab_config cfg = { .backend = B, .flavor = &fl,
				       .hash = t_hash };
	struct tconn *c = calloc(16, sizeof(*c));
	struct rk_arg a = { 0 };
	struct conntab_key k;
	pthread_t th;
	uint32_t i;

	ck_assert_ptr_nonnull(c);
	memset(&rk_probe, 0, sizeof(rk_probe));
	rk_read_lock = fl.read_lock;
	fl.read_lock = rk_probe_lock;
	a.t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(a.t);
	for (i = 0; i < 16; i++) {
		conntab_node_init(&c[i].node);
		t_key(&k, i);
		ck_assert_int_eq(conntab_insert(a.t, &c[i].node, &k), 0);
	}
	a.want = &c[7].node;
	t_offline();
	ck_assert_int_eq(pthread_create(&th, NULL, rk_main, &a), 0);
	pthread_join(th, NULL);
	t_online();
	ck_assert_msg(a.got == a.want, "%s: remove_key -> %p (errno %d)", BN,
		      (void *)a.got, a.err);
	ck_assert_msg(rk_probe.started && rk_probe.gp_blocked,
		      "%s: a grace period ended while conntab_remove_key() "
		      "of an unregistered thread looked its key up under the "
		      "read lock", BN);
	t_key(&k, 7);
	rcu_read_lock();
	ck_assert_ptr_null(conntab_lookup(a.t, &k));
	rcu_read_unlock();
	conntab_destroy(a.t, NULL);
	t_offline();
	rcu_barrier();
	t_online();
	free(c);
}
END_TEST

#ifdef CT_DEBUG
/* A reader that breaks the rule: no read lock, or an unregistered thread. */
static void *rogue_reader(void *arg)
{
	struct conntab_key k;

	t_key(&k, 1);
#if !defined(T_FLAVOR_QSBR) && !defined(T_FLAVOR_BP)
	rcu_read_lock();	/* unregistered: nothing waits for it */
#endif
	conntab_lookup(arg, &k);
	return NULL;
}

/* Run @fn(@t) on a thread of a child process; its stderr in @msg. */
static int t_child_thread(void *(*fn)(void *), struct conntab *t,
			  char *msg, size_t size)
{
	size_t len = 0;
	ssize_t got;
	pthread_t th;
	int fd[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(fd), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		dup2(fd[1], 2);
		if (!pthread_create(&th, NULL, fn, t))
			pthread_join(th, NULL);
		_exit(0);
	}
	close(fd[1]);
	while (len < size - 1 &&
	       (got = read(fd[0], msg + len, size - 1 - len)) > 0)
		len += (size_t)got;
	msg[len] = 0;
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}
#endif

#if defined(CT_DEBUG) && !defined(T_FLAVOR_QSBR) && !defined(T_FLAVOR_BP)
static void *locked_writer(void *arg)
{
	struct tconn c;
	struct conntab_key k;

	memset(&c, 0, sizeof(c));
	conntab_node_init(&c.node);
	t_key(&k, 1);
	rcu_read_lock();	/* unregistered: the readers' rule broken */
	conntab_insert(arg, &c.node, &k);
	rcu_read_unlock();
	return NULL;
}
#endif

/*
 * The one case the library cannot make safe: a writer inside a read-side
 * critical section of a thread that never registered (liburcu refuses to
 * register a thread there, and that thread's reads were never protected).
 * A debug build stops it with a message: a child process tries, and must
 * die of SIGABRT. QSBR's read lock is a no-op (the thread is registered
 * for the call) and bp's registers the thread: nothing to stop there.
 */
START_TEST(reader_rule_abort)
{
#if defined(CT_DEBUG) && !defined(T_FLAVOR_QSBR) && !defined(T_FLAVOR_BP)
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct conntab *t;
	char msg[512];
	int status;

	if (B != CONNTAB_EXTHASH && B != CONNTAB_TRIE)
		return;
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	status = t_child_thread(locked_writer, t, msg, sizeof(msg));
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "%s writer in a read-side section of an unregistered "
		      "thread: status %#x", BN, status);
	/* The message names the rule. */
	ck_assert_msg(strstr(msg, "must be registered"), "%s: message \"%s\"",
		      BN, msg);
	conntab_destroy(t, NULL);
#endif
}
END_TEST


/*
 * A debug build names a reader that breaks the readers' rule, on every
 * flavor and backend: a lookup on a thread that never registered (memb,
 * mb, signal: inside a read lock no grace period sees; QSBR: offline by
 * definition; bp: outside the read lock, the one thing bp can get wrong)
 * stops the process with a message that names the call and the thread.
 */
START_TEST(reader_check_abort)
{
#ifdef CT_DEBUG
	struct conntab_config cfg = { .backend = B, .hash = t_hash };
	struct conntab *t;
	char msg[512];
	int status;

	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	status = t_child_thread(rogue_reader, t, msg, sizeof(msg));
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "%s: rogue reader: status %#x", BN, status);
	ck_assert_msg(strstr(msg, "conntab_lookup()") &&
		      strstr(msg, "thread "), "%s: message \"%s\"", BN, msg);
	conntab_destroy(t, NULL);
#endif
}
END_TEST

/* The flavor's own registration, behind a function of this program's. */
static void wrapped_register(void)
{
	rcu_register_thread();
}

/*
 * A flavor the library cannot identify (here: a copy of rcu_flavor whose
 * register_thread is this program's) keeps the old contract: writers on
 * registered threads work as ever; under QSBR a debug build stops an
 * exthash or trie writer on an offline thread (a child process tries,
 * and must die of SIGABRT), the one thing read_ongoing() can tell.
 */
START_TEST(unidentified_flavor)
{
	struct rcu_flavor_struct fl = rcu_flavor;
	struct conntab_config cfg = { .backend = B, .flavor = &fl,
				       .hash = t_hash };
	struct tconn *c = calloc(500, sizeof(*c));
	struct conntab *t;
	uint32_t i;
#if defined(CT_DEBUG) && defined(T_FLAVOR_QSBR)
	int status;
	pid_t pid;
#endif

	ck_assert_ptr_nonnull(c);
	fl.register_thread = wrapped_register;
	for (i = 0; i < 500; i++)
		conntab_node_init(&c[i].node);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(write_all(t, c, 500), 0);
	check_written(t, c);
#if defined(CT_DEBUG) && defined(T_FLAVOR_QSBR)
	if (B == CONNTAB_EXTHASH || B == CONNTAB_TRIE) {
		fflush(NULL);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (!pid) {
			close(2);	/* the message: expected */
			rcu_thread_offline();
			conntab_remove(t, &c[1].node);
			_exit(0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) &&
			      WTERMSIG(status) == SIGABRT,
			      "%s writer on an offline thread, unidentified "
			      "flavor: status %#x", BN, status);
	}
#endif
	conntab_destroy(t, NULL);
	t_offline();
	rcu_barrier();
	t_online();
	free(c);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		create_macro, readers_and_call_rcu, explicit_flavor,
		writer_threads, unregistered_churn, unregistered_evict,
		reader_rule_abort, unidentified_flavor,
		remove_key_unregistered, reader_check_abort,
		writer_lock_inline, writer_lock_gp_waits, writer_lock_nested,
		writer_unlock_wakes, writer_lock_errors,
	};
	Suite *s = suite_create("flavor-" FLAVOR);
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend, 15, 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
