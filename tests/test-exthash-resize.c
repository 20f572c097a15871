/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH under resizing: the guarantees that only a growing and
 * shrinking table can break.
 *
 *  smoke    the contract on a table created with expected = 0;
 *  grow     empty -> N entries (default 500k, --n) while two reader threads
 *           look up keys inserted before their lookup began: zero misses;
 *           then remove all but 1/64 of them while the readers go on, and
 *           check that the table merged back (buckets, resizes);
 *  walk     walks run while another thread grows and empties the table
 *           again and again: each stable node is visited exactly once per
 *           walk, no node twice; then an expiry sweep (fn removes every
 *           node, which merges buckets under the walk) visits all once;
 *  nomem    every k-th allocation fails while the table grows and
 *           shrinks: no insert fails (a failed split leaves an overfull
 *           bucket), the table stays consistent and grows once memory
 *           comes back.
 *
 * Usage: test-exthash-resize [--n N] [--seconds S]
 *
 * Built a second time as test-exthash-copystep (T_COPY_STEP), against the
 * library built to copy one directory slot every 64 writer calls: a resize
 * then stays pending over thousands of writer calls, and the splits and merges meanwhile must
 * also publish their segments into the filled part of the pending
 * directory, or the directory published at the end points at dead
 * segments and a writer that meets one loops forever (the watchdog below
 * fails the test). It checks that this path ran thousands of times.
 */
#define _GNU_SOURCE
#include <urcu.h>
#include <conntab/conntab.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "%s:%d: %s: check failed: %s\n",	\
			__FILE__, __LINE__, __func__, #c);		\
		exit(1);						\
	}								\
} while (0)

#ifdef T_COPY_STEP
/* lib/hashtab/exthash.c in a CT_XH_COPY_STEP build: updates of a filled part. */
extern unsigned long ct_xh_fill_updates;
#endif

struct conn {
	struct conntab_node node;
	unsigned int id;
	unsigned int walk_gen;
};

/*
 * Allocation failure injection, per thread (the call_rcu worker is left
 * alone). The library allocates buckets with malloc and directories with
 * aligned_alloc (large ones with mmap): both are interposed here and fail
 * every fail_every-th call of this thread while injection is on. The real
 * allocator is glibc's, or the sanitizer's in a sanitizer build.
 */
static __thread unsigned int fail_every, fail_count;
static unsigned long failed_allocs;

#ifdef __SANITIZE_ADDRESS__
void *__interceptor_malloc(size_t size);
void *__interceptor_aligned_alloc(size_t align, size_t size);
# define real_malloc(s)		__interceptor_malloc(s)
# define real_aligned_alloc(a, s)	__interceptor_aligned_alloc(a, s)
#else
void *__libc_malloc(size_t size);
void *__libc_memalign(size_t align, size_t size);
# define real_malloc(s)		__libc_malloc(s)
# define real_aligned_alloc(a, s)	__libc_memalign(a, s)
#endif

static bool inject(void)
{
	if (fail_every && ++fail_count % fail_every == 0) {
		__atomic_add_fetch(&failed_allocs, 1, __ATOMIC_RELAXED);
		errno = ENOMEM;
		return true;
	}
	return false;
}

void *malloc(size_t size)
{
	return inject() ? NULL : real_malloc(size);
}

void *aligned_alloc(size_t align, size_t size)
{
	return inject() ? NULL : real_aligned_alloc(align, size);
}

static void key_of(struct conntab_key *k, unsigned int i)
{
	conntab_key_v4(k, IPPROTO_TCP, htonl(0x0a000000 | (i >> 16)),
		       htons(443), htonl(0xc0a80000 | (i & 0xffff)),
		       htons((uint16_t)(1024 + (i % 50000))));
}

static struct conntab *new_table(size_t expected)
{
	struct conntab_config cfg = {
		.backend = CONNTAB_EXTHASH, .expected = expected,
	};
	struct conntab *t = conntab_create(&cfg);

	CHECK(t);
	return t;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- smoke ---------------------------------------------------------- */

static int count_fn(struct conntab_node *n, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

/* Chain heads of an empty table: one segment, what a shrink returns to. */
static size_t empty_buckets(void)
{
	struct conntab *t = new_table(0);
	struct conntab_stats st;

	conntab_stats(t, &st);
	conntab_destroy(t, NULL);
	return st.buckets;
}

static void test_smoke(void)
{
	struct conntab *t = new_table(0);
	struct conn c[300], tw;
	struct conntab_node *rec;
	struct conntab_stats st;
	struct conntab_key k;
	size_t i, seen = 0;

	rcu_read_lock();
	conntab_node_init(&tw.node);
	for (i = 0; i < 300; i++) {
		conntab_node_init(&c[i].node);
		key_of(&k, (unsigned int)i);
		CHECK(conntab_insert(t, &c[i].node, &k) == 0);
	}
	key_of(&k, 7);
	CHECK(conntab_insert(t, &tw.node, &k) == -EEXIST);
	CHECK(conntab_insert(t, &c[7].node, &k) == -EBUSY);
	for (i = 0; i < 300; i++) {
		key_of(&k, (unsigned int)i);
		CHECK(conntab_lookup(t, &k) == &c[i].node);
	}
	key_of(&k, 1000);
	CHECK(!conntab_lookup(t, &k));
	CHECK(conntab_walk(t, count_fn, &seen) == 0 && seen == 300);
	conntab_stats(t, &st);
	CHECK(st.entries == 300 && st.buckets > empty_buckets() &&
	      st.resizes > 0);

	/* time-wait replace and recycle */
	conntab_node_init(&tw.node);
	CHECK(conntab_timewait(t, &c[5].node, &tw.node) == 0);
	key_of(&k, 5);
	CHECK(conntab_lookup(t, &k) == &tw.node);
	CHECK(conntab_node_state(&tw.node) == CONNTAB_TIMEWAIT);
	CHECK(conntab_remove(t, &c[5].node) == -ENOENT);
	conntab_node_init(&c[5].node);
	CHECK(conntab_insert_recycle(t, &c[5].node, &k, &rec) == 0);
	CHECK(rec == &tw.node && conntab_lookup(t, &k) == &c[5].node);
	CHECK(conntab_timewait(t, &c[6].node, &c[6].node) == 0);
	CHECK(conntab_timewait(t, &c[6].node, &c[6].node) == -EINVAL);
	seen = 0;
	CHECK(conntab_walk_state(t, CONNTAB_TIMEWAIT, count_fn, &seen) == 0);
	CHECK(seen == 1);
	conntab_stats(t, &st);
	CHECK(st.entries == 300 && st.timewait == 1);
	rcu_read_unlock();

	for (i = 0; i < 300; i++)
		CHECK(conntab_remove(t, &c[i].node) == 0);
	CHECK(conntab_remove(t, &c[0].node) == -ENOENT);
	conntab_stats(t, &st);
	CHECK(st.entries == 0 && st.timewait == 0 &&
	      st.buckets == empty_buckets());
	conntab_destroy(t, NULL);
	rcu_barrier();	/* tw and c[] are on the stack: no grace owed after */
}

/* ---- grow and shrink under readers ---------------------------------- */

static struct conntab *gt;
static struct conn *gconns;
static struct conntab_key *gkeys;
static unsigned long g_lo, g_hi;	/* keys [lo, hi) are in the table */
static int g_stop;

struct reader_stats {
	unsigned long lookups, misses, batch_lookups;
};

/* A batched lookup of a key chosen from [lo, hi) found it (or lo moved). */
static void batch_check(struct reader_stats *rs, const struct conntab_key *k,
			struct conntab_node *found, unsigned long lo)
{
	unsigned long id = found ?
		conntab_entry(found, struct conn, node)->id : 0;

	rs->batch_lookups++;
	if ((!found || memcmp(&gkeys[id], k, sizeof(*k))) &&
	    __atomic_load_n(&g_lo, __ATOMIC_ACQUIRE) <= lo)
		rs->misses++;
}

static void *reader(void *arg)
{
	struct reader_stats *rs = arg;
	struct conntab_node *out[8];
	struct conntab_key keys[8];
	uint64_t seed = (uintptr_t)arg | 1;
	unsigned long lo, hi, i, j;

	rcu_register_thread();
	while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
		rcu_read_lock();
		lo = __atomic_load_n(&g_lo, __ATOMIC_ACQUIRE);
		hi = __atomic_load_n(&g_hi, __ATOMIC_ACQUIRE);
		if (hi <= lo) {
			rcu_read_unlock();
			continue;
		}
		i = lo + xorshift(&seed) % (hi - lo);
		rs->lookups++;
		if (conntab_lookup(gt, &gkeys[i]) != &gconns[i].node &&
		    /* removed while we looked? (writer moves lo first) */
		    i >= __atomic_load_n(&g_lo, __ATOMIC_ACQUIRE)) {
			fprintf(stderr, "miss: key %lu in [%lu, %lu)\n", i, lo,
				hi);
			rs->misses++;
		}
		if ((rs->lookups & 15) == 0) {
			for (j = 0; j < 8; j++)
				keys[j] = gkeys[lo + xorshift(&seed) %
						     (hi - lo)];
			conntab_lookup_batch(gt, keys, out, 8);
			for (j = 0; j < 8; j++)
				batch_check(rs, &keys[j], out[j], lo);
		}
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return NULL;
}

static void test_grow_shrink(unsigned long n)
{
	struct reader_stats rs[2] = { { 0 } };
	struct conntab_stats st, peak;
	struct conntab_resize_stats rpeak, rs2;
	pthread_t th[2];
	unsigned long i, keep = n / 64;
	double t0, t1, t2;
	int k;

	gt = new_table(0);
	gconns = calloc(n, sizeof(*gconns));
	gkeys = calloc(n, sizeof(*gkeys));
	CHECK(gconns && gkeys);
	for (i = 0; i < n; i++) {
		key_of(&gkeys[i], (unsigned int)i);
		conntab_node_init(&gconns[i].node);
		gconns[i].id = (unsigned int)i;
	}
	for (k = 0; k < 2; k++)
		CHECK(!pthread_create(&th[k], NULL, reader, &rs[k]));

	t0 = now();
	for (i = 0; i < n; i++) {
		CHECK(conntab_insert(gt, &gconns[i].node, &gkeys[i]) == 0);
		/* Published only once present: readers look up [lo, hi). */
		__atomic_store_n(&g_hi, i + 1, __ATOMIC_RELEASE);
	}
	t1 = now();
	conntab_stats(gt, &peak);
	CHECK(peak.entries == n);
	/* The breakdown: splits only so far, a directory that doubled. */
	CHECK(conntab_resize_stats(gt, &rpeak) == 0);
	CHECK(rpeak.splits > 0 && rpeak.splits + rpeak.merges == peak.resizes);
	CHECK(rpeak.dir_slots > 1 && rpeak.dir_resizes > 0);

	/* Shrink: remove all but the last 1/64, lowest first. */
	for (i = 0; i < n - keep; i++) {
		/* Readers stop choosing key i before it goes. */
		__atomic_store_n(&g_lo, i + 1, __ATOMIC_RELEASE);
		CHECK(conntab_remove(gt, &gconns[i].node) == 0);
	}
	t2 = now();
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	conntab_stats(gt, &st);

	printf("grow/shrink: n=%lu grow %.2fs shrink %.2fs; peak buckets %zu "
	       "max_depth %zu memory %zu; after shrink entries %zu buckets "
	       "%zu resizes %zu (peak %zu); lookups %lu+%lu batched, "
	       "misses %lu\n", n, t1 - t0, t2 - t1, peak.buckets,
	       peak.max_depth, peak.memory, st.entries, st.buckets,
	       st.resizes, peak.resizes, rs[0].lookups + rs[1].lookups,
	       rs[0].batch_lookups + rs[1].batch_lookups,
	       rs[0].misses + rs[1].misses);
	CHECK(rs[0].misses + rs[1].misses == 0);
	CHECK(st.entries == keep);
	/*
	 * It merged: resizes went on, and far fewer buckets remain (by a
	 * margin that a directory copied one slot in 64 calls, which holds
	 * back splits at the top, does not reach).
	 */
	CHECK(st.resizes > peak.resizes);
#ifndef T_COPY_STEP
	CHECK(st.buckets * 16 < peak.buckets);
#else
	CHECK(st.buckets * 4 < peak.buckets);
#endif
	/* Merges, and a directory that halved back (hysteresis aside). */
	CHECK(conntab_resize_stats(gt, &rs2) == 0);
	printf("resize stats: peak splits %zu merges %zu dir %zu slots (%zu "
	       "resizes); after shrink splits %zu merges %zu dir %zu slots "
	       "(%zu resizes), %zu splitting\n", rpeak.splits, rpeak.merges,
	       rpeak.dir_slots, rpeak.dir_resizes, rs2.splits, rs2.merges,
	       rs2.dir_slots, rs2.dir_resizes, rs2.in_progress);
	CHECK(rs2.splits >= rpeak.splits && rs2.merges > rpeak.merges);
	CHECK(rs2.splits + rs2.merges == st.resizes);
	CHECK(rs2.dir_resizes > rpeak.dir_resizes);
#ifndef T_COPY_STEP	/* a slow doubling can still finish meanwhile */
	CHECK(rs2.dir_slots < rpeak.dir_slots);
#endif

	rcu_read_lock();
	for (i = n - keep; i < n; i++)
		CHECK(conntab_lookup(gt, &gkeys[i]) == &gconns[i].node);
	rcu_read_unlock();
	conntab_destroy(gt, NULL);
	rcu_barrier();
	free(gconns);
	free(gkeys);
}

/* ---- exactly-once walks under churn ---------------------------------- */

#define WALK_STABLE	20000
#define WALK_CHURN	200000

static struct conn *wconns;
static unsigned int wgen;
static unsigned long w_dups, w_stable_seen;

static int visit_fn(struct conntab_node *n, void *arg)
{
	struct conn *c = conntab_entry(n, struct conn, node);

	if (c->walk_gen == wgen)
		w_dups++;
	c->walk_gen = wgen;
	if (c->id < WALK_STABLE)
		w_stable_seen++;
	return 0;
}

static void *churn(void *arg)
{
	struct conntab_key k;
	unsigned long *waves = arg, i;

	rcu_register_thread();
	while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
		for (i = WALK_STABLE; i < WALK_STABLE + WALK_CHURN; i++) {
			key_of(&k, (unsigned int)i);
			CHECK(conntab_insert(gt, &wconns[i].node, &k) == 0);
		}
		for (i = WALK_STABLE; i < WALK_STABLE + WALK_CHURN; i++)
			CHECK(conntab_remove(gt, &wconns[i].node) == 0);
		/* Nodes are reused: wait out the walks that may see them. */
		synchronize_rcu();
		for (i = WALK_STABLE; i < WALK_STABLE + WALK_CHURN; i++)
			conntab_node_init(&wconns[i].node);
		(*waves)++;
	}
	rcu_unregister_thread();
	return NULL;
}

static int expire_fn(struct conntab_node *n, void *arg)
{
	visit_fn(n, arg);
	CHECK(conntab_remove(gt, n) == 0);
	return 0;
}

static void test_walk(double seconds)
{
	struct conntab_stats st;
	struct conntab_key k;
	unsigned long waves = 0, walks = 0;
	pthread_t th;
	size_t total = WALK_STABLE + WALK_CHURN, i;
	double end;

	gt = new_table(0);
	wconns = calloc(total, sizeof(*wconns));
	CHECK(wconns);
	for (i = 0; i < total; i++) {
		conntab_node_init(&wconns[i].node);
		wconns[i].id = (unsigned int)i;
	}
	for (i = 0; i < WALK_STABLE; i++) {
		key_of(&k, (unsigned int)i);
		CHECK(conntab_insert(gt, &wconns[i].node, &k) == 0);
	}
	g_stop = 0;
	CHECK(!pthread_create(&th, NULL, churn, &waves));
	end = now() + seconds;
	while (now() < end || waves < 2) {
		wgen++;
		w_stable_seen = 0;
		rcu_read_lock();
		CHECK(conntab_walk(gt, visit_fn, NULL) == 0);
		rcu_read_unlock();
		if (w_stable_seen != WALK_STABLE)
			fprintf(stderr, "walk %lu: stable seen %lu, dups %lu\n",
				walks, w_stable_seen, w_dups);
		CHECK(w_stable_seen == WALK_STABLE);
		CHECK(w_dups == 0);
		walks++;
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	conntab_stats(gt, &st);
	printf("walk: %lu walks over %lu grow/empty waves of %d, stable %d "
	       "each seen once, resizes %zu\n", walks, waves, WALK_CHURN,
	       WALK_STABLE, st.resizes);

	/* Expiry sweep: fn removes each node; buckets merge under the walk. */
	for (i = WALK_STABLE; i < total; i++) {
		key_of(&k, (unsigned int)i);
		CHECK(conntab_insert(gt, &wconns[i].node, &k) == 0);
	}
	wgen++;
	w_stable_seen = 0;
	rcu_read_lock();
	CHECK(conntab_walk(gt, expire_fn, NULL) == 0);
	rcu_read_unlock();
	CHECK(w_stable_seen == WALK_STABLE && w_dups == 0);
	for (i = 0; i < total; i++)
		CHECK(wconns[i].walk_gen == wgen);
	conntab_stats(gt, &st);
	CHECK(st.entries == 0 && st.buckets == empty_buckets());
	conntab_destroy(gt, NULL);
	rcu_barrier();
	free(wconns);
}

/* ---- allocation failure ---------------------------------------------- */

static void test_nomem(unsigned long n)
{
	struct conntab_stats st, st2;
	struct conn *c = calloc(n, sizeof(*c));
	struct conntab_key k;
	unsigned long i;
	size_t seen = 0;
	unsigned int every[] = { 3, 5, 7 };
	unsigned int e;

	CHECK(c);
	for (e = 0; e < sizeof(every) / sizeof(every[0]); e++) {
		gt = new_table(0);
		for (i = 0; i < n; i++)
			conntab_node_init(&c[i].node);
		fail_every = every[e];
		fail_count = 0;
		for (i = 0; i < n; i++) {
			key_of(&k, (unsigned int)i);
			CHECK(conntab_insert(gt, &c[i].node, &k) == 0);
		}
		fail_every = 0;
		rcu_read_lock();
		for (i = 0; i < n; i++) {
			key_of(&k, (unsigned int)i);
			CHECK(conntab_lookup(gt, &k) == &c[i].node);
		}
		seen = 0;
		CHECK(conntab_walk(gt, count_fn, &seen) == 0 && seen == n);
		rcu_read_unlock();
		conntab_stats(gt, &st);
		CHECK(st.entries == n);

		/* Memory is back: the next inserts split what was overfull. */
		for (i = 0; i < n / 2; i++)
			CHECK(conntab_remove(gt, &c[i].node) == 0);
		for (i = 0; i < n / 2; i++) {
			conntab_node_init(&c[i].node);
			key_of(&k, (unsigned int)i);
			CHECK(conntab_insert(gt, &c[i].node, &k) == 0);
		}
		conntab_stats(gt, &st2);
		CHECK(st2.entries == n && st2.resizes > st.resizes);

		/* Shrink with failures: merges fail, removes do not. */
		fail_every = every[e];
		for (i = 0; i < n; i++)
			CHECK(conntab_remove(gt, &c[i].node) == 0);
		fail_every = 0;
		conntab_stats(gt, &st);
		CHECK(st.entries == 0);
		conntab_destroy(gt, NULL);
		rcu_barrier();
	}
	printf("nomem: %lu inserts with every 3rd/5th/7th allocation "
	       "failing (%lu failed), all succeeded\n", n, failed_allocs);
	CHECK(failed_allocs > 0);
	free(c);
}

#ifdef T_COPY_STEP
/*
 * Resizes pending for thousands of writer calls: a table of n keys whose
 * non-stable 31/32 are removed and inserted again, cycle after cycle, so
 * that its segments merge and split over and over and the directory
 * (copied one slot per writer call) halves and doubles under them; a
 * reader looks up the stable 1/32 all along and must never miss.
 */
static unsigned long pend_n;

static void *pending_reader(void *arg)
{
	struct reader_stats *rs = arg;
	uint64_t seed = 0x1234567;
	unsigned long i;

	rcu_register_thread();
	while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
		i = (xorshift(&seed) % (pend_n / 32)) * 32;
		rcu_read_lock();
		if (conntab_lookup(gt, &gkeys[i]) != &gconns[i].node) {
			fprintf(stderr, "miss: stable key %lu\n", i);
			rs->misses++;
		}
		rcu_read_unlock();
		rs->lookups++;
	}
	rcu_unregister_thread();
	return NULL;
}

static void test_pending(unsigned long n, unsigned int cycles)
{
	struct reader_stats rs = { 0 };
	unsigned long before = ct_xh_fill_updates, i;
	struct conntab_stats st;
	unsigned int c;
	pthread_t th;

	pend_n = n;
	gt = new_table(0);
	gconns = calloc(n, sizeof(*gconns));
	gkeys = calloc(n, sizeof(*gkeys));
	CHECK(gconns && gkeys);
	for (i = 0; i < n; i++) {
		key_of(&gkeys[i], (unsigned int)i);
		conntab_node_init(&gconns[i].node);
		CHECK(conntab_insert(gt, &gconns[i].node, &gkeys[i]) == 0);
	}
	__atomic_store_n(&g_stop, 0, __ATOMIC_RELEASE);
	CHECK(!pthread_create(&th, NULL, pending_reader, &rs));
	for (c = 0; c < cycles; c++) {
		for (i = 0; i < n; i++)
			if (i % 32)
				CHECK(conntab_remove(gt, &gconns[i].node) == 0);
		synchronize_rcu();	/* the removed nodes are ours again */
		for (i = 0; i < n; i++) {
			if (!(i % 32))
				continue;
			conntab_node_init(&gconns[i].node);
			CHECK(conntab_insert(gt, &gconns[i].node,
					     &gkeys[i]) == 0);
		}
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	conntab_stats(gt, &st);
	CHECK(st.entries == n);
	rcu_read_lock();
	for (i = 0; i < n; i++)
		CHECK(conntab_lookup(gt, &gkeys[i]) == &gconns[i].node);
	rcu_read_unlock();
	printf("pending: %u cycles of n=%lu, %lu lookups of stable keys, "
	       "misses %lu, %lu updates of a pending directory's filled "
	       "part\n", cycles, n, rs.lookups, rs.misses,
	       ct_xh_fill_updates - before);
	CHECK(rs.misses == 0);
	conntab_destroy(gt, NULL);
	rcu_barrier();
	free(gconns);
	free(gkeys);
}
#endif

int main(int argc, char **argv)
{
	unsigned long n = 500000;
	double seconds = 1.0;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtod(argv[++i], NULL);
		else {
			fprintf(stderr, "usage: %s [--n N] [--seconds S]\n",
				argv[0]);
			return 2;
		}
	}
	CHECK(n >= 1024);
	/* A writer that loops on a dead segment: a failure, not a hang. */
	alarm(300);
	setvbuf(stdout, NULL, _IOLBF, 0);
	rcu_register_thread();
	test_smoke();
	test_grow_shrink(n);
	test_walk(seconds);
	test_nomem(100000);
#ifdef T_COPY_STEP
	test_pending(60000, 12);
#endif
	rcu_unregister_thread();
#ifdef T_COPY_STEP
	printf("copy step 1 slot / 64 calls: %lu updates of a pending "
	       "directory's filled part\n", ct_xh_fill_updates);
	CHECK(ct_xh_fill_updates >= 1000);
#endif
	printf("ok\n");
	return 0;
}
