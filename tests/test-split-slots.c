/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stress test of CONNTAB_SPLIT's bucket of slots (lib/hashtab/split.c): the race
 * windows of a line of five established slots, an overflow chain and a
 * time-wait chain.
 *
 * Every key lives in one bucket, chosen through conntab_hash() (bucket =
 * hash & (buckets - 1), tag = the hash's top byte), so that:
 *
 *  - STABLE_EST established keys are inserted first and sit in slots for
 *    the whole run, while the slots around them are emptied and refilled
 *    and the tag word is rewritten under them;
 *  - TWINS of the moving keys share a tag with a stable key, so a lookup
 *    of either meets a slot of the other's tag, and a slot whose tag it
 *    read may hold another key by the time it reads the slot;
 *  - STABLE_EST + MOVERS > 5: the established side always overflows to
 *    its chain (checked through the stats before the run), so keys move
 *    from slots and from the chain to time-wait;
 *  - a stable TIME_WAIT key sits on the tw chain behind the moves.
 *
 * Cycle writers move each mover est -> tw (in place, or to a separate tw
 * node) and back (insert_recycle into whichever slot is free, or the
 * chain); a churn writer inserts, flips in place and removes nodes in the
 * same bucket. Readers look up every present key, one at a time and in
 * batches (whose probes stand on slotted nodes while they move), and must
 * never miss one, nor find a node that is dead or of another key; a key
 * never inserted must miss. A walker checks that every stable node is
 * visited exactly once per walk, and by a time-wait walk only the
 * time-wait one.
 *
 * The run lasts SPLIT_SLOTS_SECONDS (default 2) and at least until every
 * thread made some progress; it prints the volume it checked. No timing is
 * asserted. Under the delay-injection build (CONNTAB_DELAY, lib/delay.h)
 * the writers pause between the stores of each move.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu.h>
#include <conntab/conntab.h>

#define STABLE_EST	3	/* in slots for the whole run */
#define STABLE		(STABLE_EST + 1)	/* the last one TIME_WAIT */
#define MOVERS		10	/* cycle keys */
#define TWINS		2	/* movers with stable key 0's tag */
#define CHURN		4
#define WRITERS		2
#define READERS		2
#define BATCH		16

#define MAGIC_LIVE	0x4c495645u

struct obj {
	struct conntab_node node;
	uint32_t magic;
	struct rcu_head rcu;
};

static struct conntab *tab;
static struct conntab_key skeys[STABLE], mkeys[MOVERS], ckeys[CHURN];
static struct conntab_key absent;
static struct obj stable[STABLE];
static struct obj *holder[MOVERS];	/* writer-private */

static bool stop;
static unsigned long long lookups[READERS], misses[READERS], bad[READERS];
static unsigned long long moves[WRITERS + 1], errs[WRITERS + 1];
static unsigned long long walks, walk_errs;

static void mkkey(struct conntab_key *k, uint32_t i)
{
	conntab_key_v4(k, IPPROTO_TCP, htonl(0x0a000002), htons(443),
		       htonl(0xc6340000 + i), htons((uint16_t)(1024 + i)));
}

static bool stopping(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static struct obj *obj_new(void)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (!o) {
		perror("calloc");
		exit(2);
	}
	conntab_node_init(&o->node);
	o->magic = MAGIC_LIVE;
	return o;
}

static void obj_free_rcu(struct rcu_head *head)
{
	struct obj *o = caa_container_of(head, struct obj, rcu);

	memset(o, 0x6b, sizeof(*o));	/* poison */
	free(o);
}

static bool node_ok(const struct conntab_node *n, const struct conntab_key *k)
{
	const struct obj *o = conntab_entry(n, const struct obj, node);

	return o->magic == MAGIC_LIVE &&
	       !memcmp(conntab_node_key(n), k, sizeof(*k));
}

static void *cycle_writer(void *arg)
{
	int w = (int)(intptr_t)arg;
	struct obj *tw[MOVERS];
	struct conntab_node *rec;
	unsigned long long cycle = 0;
	int i;

	rcu_register_thread();
	while (!stopping() || !moves[w]) {
		for (i = w; i < MOVERS; i += WRITERS) {
			struct obj *est = holder[i];

			tw[i] = (cycle + (unsigned int)i) & 1 ? est : obj_new();
			if (conntab_timewait(tab, &est->node, &tw[i]->node)) {
				errs[w]++;
				goto out;
			}
			if (tw[i] != est)
				call_rcu(&est->rcu, obj_free_rcu);
			moves[w]++;
		}
		for (i = w; i < MOVERS; i += WRITERS) {
			struct obj *next = obj_new();

			if (conntab_insert_recycle(tab, &next->node, &mkeys[i],
						   &rec) ||
			    rec != &tw[i]->node) {
				errs[w]++;
				goto out;
			}
			call_rcu(&tw[i]->rcu, obj_free_rcu);
			holder[i] = next;
			moves[w]++;
		}
		cycle++;
	}
out:
	rcu_unregister_thread();
	return NULL;
}

static void *churn_writer(void *arg)
{
	struct obj *c[CHURN];
	int w = WRITERS, i;

	(void)arg;
	rcu_register_thread();
	while (!stopping() || !moves[w]) {
		for (i = 0; i < CHURN; i++) {
			c[i] = obj_new();
			if (conntab_insert(tab, &c[i]->node, &ckeys[i]))
				goto fail;
		}
		for (i = 0; i < CHURN; i++) {
			if (conntab_timewait(tab, &c[i]->node, &c[i]->node))
				goto fail;
			moves[w]++;
		}
		for (i = 0; i < CHURN; i++) {
			if (conntab_remove(tab, &c[i]->node))
				goto fail;
			call_rcu(&c[i]->rcu, obj_free_rcu);
		}
	}
	rcu_unregister_thread();
	return NULL;
fail:
	errs[w]++;
	rcu_unregister_thread();
	return NULL;
}

/* Looked up: the stable keys, the movers, and (last) the absent key. */
#define WANT	(STABLE + MOVERS)
static struct conntab_key want[2 * BATCH];

static void *reader(void *arg)
{
	int r = (int)(intptr_t)arg;
	struct conntab_node *out[2 * BATCH];
	unsigned long long round = 0;
	int i;

	rcu_register_thread();
	while (!stopping() || lookups[r] < 100000) {
		rcu_read_lock();
		if (round & 1) {
			conntab_lookup_batch(tab, want, out, WANT + 1);
		} else {
			for (i = 0; i <= WANT; i++)
				out[i] = conntab_lookup(tab, &want[i]);
		}
		for (i = 0; i < WANT; i++) {
			if (!out[i])
				misses[r]++;
			else if (!node_ok(out[i], &want[i]))
				bad[r]++;
		}
		if (out[WANT])
			bad[r]++;
		rcu_read_unlock();
		lookups[r] += WANT + 1;
		round++;
	}
	rcu_unregister_thread();
	return NULL;
}

struct walk_state {
	unsigned int visits[STABLE];
};

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk_state *ws = arg;
	const struct obj *o = conntab_entry(n, const struct obj, node);

	if (o >= stable && o < stable + STABLE)
		ws->visits[o - stable]++;
	return 0;
}

static void *walker(void *arg)
{
	struct walk_state ws;
	int i, tw_only;

	(void)arg;
	rcu_register_thread();
	while (!stopping() || walks < 20) {
		tw_only = (int)(walks & 1);
		memset(&ws, 0, sizeof(ws));
		rcu_read_lock();
		if (tw_only)
			conntab_walk_state(tab, CONNTAB_TIMEWAIT, walk_fn, &ws);
		else
			conntab_walk(tab, walk_fn, &ws);
		rcu_read_unlock();
		for (i = 0; i < STABLE; i++)
			if (ws.visits[i] != (!tw_only || i == STABLE - 1))
				walk_errs++;
		walks++;
	}
	rcu_unregister_thread();
	return NULL;
}

static void release_fn(struct conntab_node *n)
{
	struct obj *o = conntab_entry(n, struct obj, node);

	if (o < stable || o >= stable + STABLE)
		free(o);
}

/* The bucket and the tag of @k in @t, whose buckets are @nb. */
static uint32_t bucket_of(const struct conntab_key *k, size_t nb)
{
	return (uint32_t)conntab_hash(tab, k) & (uint32_t)(nb - 1);
}

static uint32_t tag_of(const struct conntab_key *k)
{
	uint32_t tag = (uint32_t)conntab_hash(tab, k) >> 24;

	return tag ? tag : 1;
}

/*
 * Keys of bucket @b from *@next on into @out[0..@n); with @tag nonzero,
 * only keys of that tag.
 */
static void find_keys(struct conntab_key *out, int n, uint32_t b,
		      uint32_t tag, size_t nb, uint32_t *next)
{
	int found = 0;

	while (found < n) {
		mkkey(&out[found], (*next)++);
		if (bucket_of(&out[found], nb) == b &&
		    (!tag || tag_of(&out[found]) == tag))
			found++;
	}
}

int main(void)
{
	static const uint8_t secret[16] = "split-slot-test";
	struct conntab_config cfg = {
		.backend = CONNTAB_SPLIT, .expected = 64, .secret = secret,
	};
	pthread_t wt[WRITERS + 1], rt[READERS], kt;
	unsigned long long total = 0, miss = 0, nbad = 0, nmoves = 0;
	unsigned long long nerr = 0;
	struct conntab_stats st;
	const char *env = getenv("SPLIT_SLOTS_SECONDS");
	double secs = env ? atof(env) : 2.0;
	struct timespec ts;
	uint32_t next = 0, b;
	int i, fail = 0;

	rcu_register_thread();
	tab = conntab_create(&cfg);
	if (!tab) {
		perror("conntab_create");
		return 1;
	}
	conntab_stats(tab, &st);

	/* One bucket for all; twins of stable key 0's tag (2^-8 a key). */
	mkkey(&skeys[0], next++);
	b = bucket_of(&skeys[0], st.buckets);
	find_keys(&skeys[1], STABLE - 1, b, 0, st.buckets, &next);
	find_keys(mkeys, TWINS, b, tag_of(&skeys[0]), st.buckets, &next);
	find_keys(&mkeys[TWINS], MOVERS - TWINS, b, 0, st.buckets, &next);
	find_keys(ckeys, CHURN, b, 0, st.buckets, &next);
	find_keys(&absent, 1, b, 0, st.buckets, &next);

	/* Stable first: they take slots 0.. and keep them. */
	for (i = 0; i < STABLE; i++) {
		conntab_node_init(&stable[i].node);
		stable[i].magic = MAGIC_LIVE;
		if (conntab_insert(tab, &stable[i].node, &skeys[i]) ||
		    (i == STABLE - 1 &&
		     conntab_timewait(tab, &stable[i].node, &stable[i].node))) {
			fprintf(stderr, "stable key %d failed\n", i);
			return 1;
		}
	}
	for (i = 0; i < MOVERS; i++) {
		holder[i] = obj_new();
		if (conntab_insert(tab, &holder[i]->node, &mkeys[i])) {
			fprintf(stderr, "mover %d failed\n", i);
			return 1;
		}
	}
	/* The established side holds more than its five slots. */
	conntab_stats(tab, &st);
	if (st.max_depth != STABLE_EST + MOVERS) {
		fprintf(stderr, "bucket holds %zu, not %d\n", st.max_depth,
			STABLE_EST + MOVERS);
		return 1;
	}
	for (i = 0; i < STABLE; i++)
		want[i] = skeys[i];
	for (i = 0; i < MOVERS; i++)
		want[STABLE + i] = mkeys[i];
	want[WANT] = absent;

	for (i = 0; i < READERS; i++)
		pthread_create(&rt[i], NULL, reader, (void *)(intptr_t)i);
	for (i = 0; i < WRITERS; i++)
		pthread_create(&wt[i], NULL, cycle_writer, (void *)(intptr_t)i);
	pthread_create(&wt[WRITERS], NULL, churn_writer, NULL);
	pthread_create(&kt, NULL, walker, NULL);

	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);

	for (i = 0; i < READERS; i++)
		pthread_join(rt[i], NULL);
	for (i = 0; i <= WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_join(kt, NULL);

	for (i = 0; i < READERS; i++) {
		total += lookups[i];
		miss += misses[i];
		nbad += bad[i];
	}
	for (i = 0; i <= WRITERS; i++) {
		nmoves += moves[i];
		nerr += errs[i];
	}
	printf("lookups %llu misses %llu bad %llu | moves %llu writer errors "
	       "%llu | walks %llu walk errors %llu\n", total, miss, nbad,
	       nmoves, nerr, walks, walk_errs);

	rcu_read_lock();
	for (i = 0; i < MOVERS; i++) {
		struct conntab_node *n = conntab_lookup(tab, &mkeys[i]);

		if (n != &holder[i]->node ||
		    conntab_node_state(n) != CONNTAB_ESTABLISHED)
			fail = 1;
	}
	for (i = 0; i < STABLE; i++)
		if (conntab_lookup(tab, &skeys[i]) != &stable[i].node)
			fail = 1;
	rcu_read_unlock();
	conntab_stats(tab, &st);
	if (st.entries != STABLE + MOVERS || st.timewait != 1)
		fail = 1;

	if (miss || nbad || nerr || walk_errs || !total || !nmoves || fail) {
		fprintf(stderr, "FAIL (final state %s)\n", fail ? "bad" : "ok");
		fail = 1;
	}
	rcu_barrier();
	conntab_destroy(tab, release_fn);
	rcu_unregister_thread();
	return fail;
}
