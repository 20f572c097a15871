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
 * asserted. The writers and the run are tests/split-common.c's, shared
 * with test-split-slots.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <urcu.h>
#include <conntab/conntab.h>

#include "split-common.h"

#define FILLER		512	/* stable entries spread over the table */
#define HOTB		16	/* stable entries in the churn bucket */
#define STABLE		(FILLER + HOTB)	/* odd ones are TIME_WAIT */
#define KEYS		16	/* cycle keys, all in one bucket */
#define CHURN		8	/* churn nodes, in another bucket */
#define BATCH		16

static struct conntab *tab;
static struct conntab_key fkeys[STABLE], mkeys[KEYS], ckeys[CHURN];
static struct sp_obj filler[STABLE];
static struct sp_obj *holder[KEYS];	/* writer-private: who holds key i */

static void mkkey(struct conntab_key *k, uint32_t i, uint16_t lport)
{
	conntab_key_v4(k, IPPROTO_TCP, htonl(0x0a000001), htons(lport),
		       htonl(0xc6330000 + i), htons((uint16_t)(1024 + i)));
}

/*
 * What readers look up: the cycle keys, the stable keys of the churn
 * bucket, and a few stable keys elsewhere; each is present at every instant.
 */
#define WANT	(KEYS + HOTB + 32)
static struct conntab_key want[WANT];

/* Reader 1 looks up in batches every other round, the rest one by one. */
static unsigned int read_round(int r, unsigned long long round)
{
	struct conntab_node *out[BATCH];
	int i, j;

	if (r == 1 && (round & 1)) {
		for (i = 0; i < WANT; i += BATCH) {
			conntab_lookup_batch(tab, &want[i], out, BATCH);
			for (j = 0; j < BATCH; j++)
				sp_found(r, out[j], &want[i + j]);
		}
	} else {
		for (i = 0; i < WANT; i++)
			sp_found(r, conntab_lookup(tab, &want[i]), &want[i]);
	}
	return WANT;
}

/* Per walk: visits of each stable node, and every node seen (dup check). */
static struct walk_state {
	unsigned int fvisits[STABLE];
	const struct conntab_node *seen[STABLE + 4 * (KEYS + CHURN)];
	size_t nseen;
	bool dup, overflow;
} ws;

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk_state *w = arg;
	const struct sp_obj *o = conntab_entry(n, const struct sp_obj, node);
	size_t i;

	for (i = 0; i < w->nseen; i++)
		if (w->seen[i] == n)
			w->dup = true;
	if (w->nseen < sizeof(w->seen) / sizeof(w->seen[0]))
		w->seen[w->nseen++] = n;
	else
		w->overflow = true;
	if (o >= filler && o < filler + STABLE)
		w->fvisits[o - filler]++;
	return 0;
}

static unsigned int walk_check(int tw_only)
{
	unsigned int errors = 0;
	int i;

	if (ws.dup || ws.overflow)
		errors++;
	for (i = 0; i < STABLE; i++) {
		/* Odd stable nodes are TIME_WAIT (see main). */
		unsigned int expect = !tw_only || (i & 1);

		if (ws.fvisits[i] != expect)
			errors++;
	}
	return errors;
}

static bool stable_tw(int i)
{
	return i & 1;
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
	struct sp_test t = {
		.stable = filler, .skeys = fkeys, .nstable = STABLE,
		.holder = holder, .mkeys = mkeys, .nmovers = KEYS,
		.mover_name = "cycle key",
		.ckeys = ckeys, .nchurn = CHURN,
		.read_round = read_round,
		.walk_fn = walk_fn, .walk_state = &ws, .walk_size = sizeof(ws),
		.walk_check = walk_check,
		.seconds_env = "SPLIT_MOVE_SECONDS",
	};
	struct sp_totals tot;
	uint32_t next;
	int i, fail;

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
	t.tab = tab;
	if (sp_insert(&t, stable_tw))
		return 1;
	for (i = 0; i < KEYS; i++)
		want[i] = mkeys[i];
	for (i = 0; i < HOTB; i++)
		want[KEYS + i] = fkeys[FILLER + i];
	for (i = KEYS + HOTB; i < WANT; i++)
		want[i] = fkeys[(i * 13) % FILLER];

	sp_run(&t, &tot);
	printf("lookups %llu misses %llu bad %llu | moves %llu (in place %llu, "
	       "churn %llu) writer errors %llu | walks %llu walk errors %llu\n",
	       tot.lookups, tot.misses, tot.bad, tot.moves, tot.in_place,
	       tot.churn, tot.errs, tot.walks, tot.walk_errs);

	/* Every cycle key once, established; stable nodes untouched. */
	fail = sp_verdict(&tot, !tot.in_place, sp_final_ok(&t, STABLE / 2));
	sp_teardown(&t);
	return fail;
}
