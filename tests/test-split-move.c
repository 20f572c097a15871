/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stress test of CONNTAB_SPLIT's moves between a bucket's two chains.
 *
 * Cycle writers move each of their keys without pause, in phases:
 *
 *   est --timewait, in place or to a separate tw node--> tw
 *       --insert_recycle--> a new est node --> ...
 *
 * so every such key is in the table at every instant, held by one node or
 * another, and keeps moving est -> tw (in the readers' scan order) and
 * tw -> est (against it, which the stripe sequence covers). All cycle keys
 * share one bucket (found through the stats of a table with the same
 * secret), so their moves interleave with lookups of each other.
 *
 * A churn writer runs nodes through a second bucket: insert at the head of
 * the est chain, flip in place to tw, remove. Readers of the stable keys
 * behind them on that chain stand on nodes as they move to the tw chain;
 * they must notice (the nulls restart) instead of missing the rest of the
 * est chain. No recycle runs on that bucket's stripe, so its sequence does
 * not mask a missing restart.
 *
 * Readers look up the cycle keys and the stable keys (one at a time and in
 * batches) and must never miss. A walker checks meanwhile that every stable
 * node is visited exactly once per walk, even while nodes next to it move
 * between chains, that no node is visited twice, and that a time-wait walk
 * sees no established stable node.
 *
 * Replaced nodes are freed through call_rcu after being poisoned, so a
 * reader that kept one past its grace period would see the poison (and
 * ASan would report it in a sanitizer build).
 *
 * The run lasts SPLIT_MOVE_SECONDS (default 2) and at least until every
 * thread made some progress; it prints the volume it checked. No timing is
 * asserted.
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

#define FILLER		512	/* stable entries spread over the table */
#define HOTB		16	/* stable entries in the churn bucket */
#define STABLE		(FILLER + HOTB)	/* odd ones are TIME_WAIT */
#define KEYS		16	/* cycle keys, all in one bucket */
#define CHURN		8	/* churn nodes, in another bucket */
#define WRITERS		2	/* cycle writers; each owns KEYS / WRITERS */
#define READERS		2
#define BATCH		16

#define MAGIC_LIVE	0x4c495645u
#define MAGIC_DEAD	0x6b6b6b6bu

struct obj {
	struct conntab_node node;
	uint32_t magic;
	int key;		/* index into the key arrays */
	struct rcu_head rcu;
};

static struct conntab *tab;
static struct conntab_key fkeys[STABLE], mkeys[KEYS], ckeys[CHURN];
static struct obj filler[STABLE];
static struct obj *holder[KEYS];	/* writer-private: who holds key i */
static struct obj *churn[CHURN];	/* churn writer's nodes */

static bool stop;
static unsigned long long lookups[READERS], misses[READERS], bad[READERS];
static unsigned long long moves[WRITERS + 1], in_place[WRITERS + 1];
static unsigned long long errs[WRITERS + 1];
static unsigned long long walks, walk_errs;

static void mkkey(struct conntab_key *k, uint32_t i, uint16_t lport)
{
	conntab_key_v4(k, IPPROTO_TCP, htonl(0x0a000001), htons(lport),
		       htonl(0xc6330000 + i), htons((uint16_t)(1024 + i)));
}

static bool stopping(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static struct obj *obj_new(int key)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (!o) {
		perror("calloc");
		exit(2);
	}
	conntab_node_init(&o->node);
	o->magic = MAGIC_LIVE;
	o->key = key;
	return o;
}

static void obj_free_rcu(struct rcu_head *head)
{
	struct obj *o = caa_container_of(head, struct obj, rcu);

	memset(o, 0x6b, sizeof(*o));	/* poison: magic becomes MAGIC_DEAD */
	free(o);
}

/* A found node must be live and hold the key it was found under. */
static bool node_ok(const struct conntab_node *n, const struct conntab_key *k)
{
	const struct obj *o = conntab_entry(n, const struct obj, node);

	return o->magic == MAGIC_LIVE &&
	       !memcmp(conntab_node_key(n), k, sizeof(*k));
}

static void *cycle_writer(void *arg)
{
	int w = (int)(intptr_t)arg;
	struct obj *tw[KEYS];
	struct conntab_node *rec;
	unsigned long long cycle = 0;
	int i;

	rcu_register_thread();
	while (!stopping() || !moves[w]) {
		/* est -> tw: the node itself, or a separate one. */
		for (i = w; i < KEYS; i += WRITERS) {
			struct obj *est = holder[i];

			if ((cycle + (unsigned int)i) & 1) {
				tw[i] = est;
				in_place[w]++;
			} else {
				tw[i] = obj_new(i);
			}
			if (conntab_timewait(tab, &est->node, &tw[i]->node)) {
				errs[w]++;
				goto out;
			}
			if (tw[i] != est)
				call_rcu(&est->rcu, obj_free_rcu);
			moves[w]++;
		}
		/* tw -> a new established node, in one step. */
		for (i = w; i < KEYS; i += WRITERS) {
			struct obj *next = obj_new(i);

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
	int w = WRITERS, i;

	rcu_register_thread();
	while (!stopping() || !moves[w]) {
		for (i = 0; i < CHURN; i++) {
			churn[i] = obj_new(i);
			if (conntab_insert(tab, &churn[i]->node, &ckeys[i]))
				goto fail;
		}
		for (i = 0; i < CHURN; i++) {
			if (conntab_timewait(tab, &churn[i]->node,
					     &churn[i]->node))
				goto fail;
			in_place[w]++;
			moves[w]++;
		}
		for (i = 0; i < CHURN; i++) {
			if (conntab_remove(tab, &churn[i]->node))
				goto fail;
			call_rcu(&churn[i]->rcu, obj_free_rcu);
		}
	}
	rcu_unregister_thread();
	return NULL;
fail:
	errs[w]++;
	rcu_unregister_thread();
	return NULL;
}

/*
 * What readers look up: the cycle keys, the stable keys of the churn
 * bucket, and a few stable keys elsewhere; each is present at every instant.
 */
#define WANT	(KEYS + HOTB + 32)
static struct conntab_key want[WANT];

static void *reader(void *arg)
{
	int r = (int)(intptr_t)arg;
	struct conntab_node *out[BATCH];
	unsigned long long round = 0;
	int i, j;

	rcu_register_thread();
	while (!stopping() || lookups[r] < 100000) {
		rcu_read_lock();
		if (r == 1 && (round & 1)) {
			for (i = 0; i < WANT; i += BATCH) {
				conntab_lookup_batch(tab, &want[i], out, BATCH);
				for (j = 0; j < BATCH; j++) {
					if (!out[j])
						misses[r]++;
					else if (!node_ok(out[j], &want[i + j]))
						bad[r]++;
				}
			}
		} else {
			for (i = 0; i < WANT; i++) {
				struct conntab_node *n;

				n = conntab_lookup(tab, &want[i]);
				if (!n)
					misses[r]++;
				else if (!node_ok(n, &want[i]))
					bad[r]++;
			}
		}
		rcu_read_unlock();
		lookups[r] += WANT;
		round++;
	}
	rcu_unregister_thread();
	return NULL;
}

/* Per walk: visits of each stable node, and every node seen (dup check). */
struct walk_state {
	unsigned int fvisits[STABLE];
	const struct conntab_node *seen[STABLE + 4 * (KEYS + CHURN)];
	size_t nseen;
	bool dup, overflow;
};

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk_state *ws = arg;
	const struct obj *o = conntab_entry(n, const struct obj, node);
	size_t i;

	for (i = 0; i < ws->nseen; i++)
		if (ws->seen[i] == n)
			ws->dup = true;
	if (ws->nseen < sizeof(ws->seen) / sizeof(ws->seen[0]))
		ws->seen[ws->nseen++] = n;
	else
		ws->overflow = true;
	if (o >= filler && o < filler + STABLE)
		ws->fvisits[o - filler]++;
	return 0;
}

static void *walker(void *arg)
{
	static struct walk_state ws;
	int i, tw_only;

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
		if (ws.dup || ws.overflow)
			walk_errs++;
		for (i = 0; i < STABLE; i++) {
			/* Odd stable nodes are TIME_WAIT (see main). */
			unsigned int expect = !tw_only || (i & 1);

			if (ws.fvisits[i] != expect)
				walk_errs++;
		}
		walks++;
	}
	rcu_unregister_thread();
	return NULL;
}

static void release_fn(struct conntab_node *n)
{
	struct obj *o = conntab_entry(n, struct obj, node);

	if (o < filler || o >= filler + STABLE)
		free(o);
}

/*
 * Fill @out with @n keys (local port @lport, counting from *@next) that
 * share a bucket with @ref in a table made from @cfg (same secret, same
 * size, so the same bucket in the real table). In a scratch table a
 * candidate is on @ref's chain iff it makes the longest chain one longer;
 * candidates that do not are removed again, so no other chain grows.
 */
static void find_colliding(const struct conntab_config *cfg,
			   const struct conntab_key *ref,
			   struct conntab_key *out, int n, uint16_t lport,
			   uint32_t *next)
{
	struct conntab *t = conntab_create(cfg);
	struct conntab_node rn, *cand = calloc((size_t)n, sizeof(*cand));
	struct conntab_stats st;
	int found = 0;

	if (!t || !cand) {
		perror("find_colliding");
		exit(2);
	}
	conntab_node_init(&rn);
	conntab_insert(t, &rn, ref);
	while (found < n) {
		mkkey(&out[found], (*next)++, lport);
		conntab_node_init(&cand[found]);
		if (conntab_insert(t, &cand[found], &out[found]))
			continue;
		conntab_stats(t, &st);
		if (st.max_depth == (size_t)found + 2)
			found++;
		else
			conntab_remove(t, &cand[found]);
	}
	conntab_destroy(t, NULL);
	free(cand);
}

/* Do @a and @b share a bucket in a table made from @cfg? */
static bool same_bucket(const struct conntab_config *cfg,
			const struct conntab_key *a,
			const struct conntab_key *b)
{
	struct conntab *t = conntab_create(cfg);
	struct conntab_node na, nb;
	struct conntab_stats st;

	if (!t) {
		perror("same_bucket");
		exit(2);
	}
	conntab_node_init(&na);
	conntab_node_init(&nb);
	conntab_insert(t, &na, a);
	conntab_insert(t, &nb, b);
	conntab_stats(t, &st);
	conntab_destroy(t, NULL);
	return st.max_depth == 2;
}

int main(void)
{
	static const uint8_t secret[16] = "split-move-test";
	struct conntab_config cfg = {
		.backend = CONNTAB_SPLIT, .expected = 64, .secret = secret,
	};
	pthread_t wt[WRITERS + 1], rt[READERS], kt;
	unsigned long long total = 0, miss = 0, nbad = 0, nmoves = 0;
	unsigned long long nin = 0, nerr = 0;
	struct conntab_stats st;
	const char *env = getenv("SPLIT_MOVE_SECONDS");
	double secs = env ? atof(env) : 2.0;
	struct timespec ts;
	uint32_t next;
	int i, fail = 0;

	rcu_register_thread();

	/* Cycle keys in one bucket; the churn bucket is another one. */
	mkkey(&mkeys[0], 0, 443);
	next = 1;
	find_colliding(&cfg, &mkeys[0], &mkeys[1], KEYS - 1, 443, &next);
	next = 0;
	do
		mkkey(&fkeys[FILLER], next++, 8080);
	while (same_bucket(&cfg, &fkeys[FILLER], &mkeys[0]));
	find_colliding(&cfg, &fkeys[FILLER], &fkeys[FILLER + 1], HOTB - 1,
		       8080, &next);
	find_colliding(&cfg, &fkeys[FILLER], ckeys, CHURN, 8080, &next);
	for (i = 0; i < FILLER; i++)
		mkkey(&fkeys[i], (uint32_t)i, 80);

	tab = conntab_create(&cfg);
	if (!tab) {
		perror("conntab_create");
		return 1;
	}
	for (i = 0; i < STABLE; i++) {
		conntab_node_init(&filler[i].node);
		filler[i].magic = MAGIC_LIVE;
		if (conntab_insert(tab, &filler[i].node, &fkeys[i]) ||
		    ((i & 1) && conntab_timewait(tab, &filler[i].node,
						 &filler[i].node))) {
			fprintf(stderr, "stable key %d failed\n", i);
			return 1;
		}
	}
	for (i = 0; i < KEYS; i++) {
		holder[i] = obj_new(i);
		if (conntab_insert(tab, &holder[i]->node, &mkeys[i])) {
			fprintf(stderr, "cycle key %d failed\n", i);
			return 1;
		}
	}
	for (i = 0; i < KEYS; i++)
		want[i] = mkeys[i];
	for (i = 0; i < HOTB; i++)
		want[KEYS + i] = fkeys[FILLER + i];
	for (i = KEYS + HOTB; i < WANT; i++)
		want[i] = fkeys[(i * 13) % FILLER];

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
		nin += in_place[i];
		nerr += errs[i];
	}
	printf("lookups %llu misses %llu bad %llu | moves %llu (in place %llu, "
	       "churn %llu) writer errors %llu | walks %llu walk errors %llu\n",
	       total, miss, nbad, nmoves, nin, moves[WRITERS], nerr, walks,
	       walk_errs);

	/* Every cycle key once, established; stable nodes untouched. */
	rcu_read_lock();
	for (i = 0; i < KEYS; i++) {
		struct conntab_node *n = conntab_lookup(tab, &mkeys[i]);

		if (n != &holder[i]->node ||
		    conntab_node_state(n) != CONNTAB_ESTABLISHED)
			fail = 1;
	}
	for (i = 0; i < STABLE; i++)
		if (conntab_lookup(tab, &fkeys[i]) != &filler[i].node)
			fail = 1;
	rcu_read_unlock();
	conntab_stats(tab, &st);
	if (st.entries != STABLE + KEYS || st.timewait != STABLE / 2)
		fail = 1;

	if (miss || nbad || nerr || walk_errs || !total || !nmoves || !nin ||
	    fail) {
		fprintf(stderr, "FAIL (final state %s)\n", fail ? "bad" : "ok");
		fail = 1;
	}
	rcu_barrier();
	conntab_destroy(tab, release_fn);
	rcu_unregister_thread();
	return fail;
}
