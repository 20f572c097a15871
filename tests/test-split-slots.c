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
 * the writers pause between the stores of each move. The writers and the
 * run are tests/split-common.c's, shared with test-split-move.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <urcu.h>
#include <conntab/conntab.h>

#include "split-common.h"

#define STABLE_EST	3	/* in slots for the whole run */
#define STABLE		(STABLE_EST + 1)	/* the last one TIME_WAIT */
#define MOVERS		10	/* cycle keys */
#define TWINS		2	/* movers with stable key 0's tag */
#define CHURN		4
#define BATCH		16

static struct conntab *tab;
static struct conntab_key skeys[STABLE], mkeys[MOVERS], ckeys[CHURN];
static struct conntab_key absent;
static struct sp_obj stable[STABLE];
static struct sp_obj *holder[MOVERS];	/* writer-private */

static void mkkey(struct conntab_key *k, uint32_t i)
{
	conntab_key_v4(k, IPPROTO_TCP, htonl(0x0a000002), htons(443),
		       htonl(0xc6340000 + i), htons((uint16_t)(1024 + i)));
}

/* Looked up: the stable keys, the movers, and (last) the absent key. */
#define WANT	(STABLE + MOVERS)
static struct conntab_key want[2 * BATCH];

/* Every other round in one batch, the others one by one. */
static unsigned int read_round(int r, unsigned long long round)
{
	struct conntab_node *out[2 * BATCH];
	int i;

	if (round & 1) {
		conntab_lookup_batch(tab, want, out, WANT + 1);
	} else {
		for (i = 0; i <= WANT; i++)
			out[i] = conntab_lookup(tab, &want[i]);
	}
	for (i = 0; i < WANT; i++)
		sp_found(r, out[i], &want[i]);
	if (out[WANT])
		sp_bad[r]++;
	return WANT + 1;
}

static struct walk_state {
	unsigned int visits[STABLE];
} ws;

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk_state *w = arg;
	const struct sp_obj *o = conntab_entry(n, const struct sp_obj, node);

	if (o >= stable && o < stable + STABLE)
		w->visits[o - stable]++;
	return 0;
}

static unsigned int walk_check(int tw_only)
{
	unsigned int errors = 0;
	int i;

	for (i = 0; i < STABLE; i++)
		if (ws.visits[i] != (!tw_only || i == STABLE - 1))
			errors++;
	return errors;
}

static bool stable_tw(int i)
{
	return i == STABLE - 1;
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
	struct sp_test t = {
		.stable = stable, .skeys = skeys, .nstable = STABLE,
		.holder = holder, .mkeys = mkeys, .nmovers = MOVERS,
		.mover_name = "mover",
		.ckeys = ckeys, .nchurn = CHURN,
		.read_round = read_round,
		.walk_fn = walk_fn, .walk_state = &ws, .walk_size = sizeof(ws),
		.walk_check = walk_check,
		.seconds_env = "SPLIT_SLOTS_SECONDS",
	};
	struct sp_totals tot;
	struct conntab_stats st;
	uint32_t next = 0, b;
	int i, fail;

	rcu_register_thread();
	tab = conntab_create(&cfg);
	if (!tab) {
		perror("conntab_create");
		return 1;
	}
	t.tab = tab;
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
	if (sp_insert(&t, stable_tw))
		return 1;
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

	sp_run(&t, &tot);
	printf("lookups %llu misses %llu bad %llu | moves %llu writer errors "
	       "%llu | walks %llu walk errors %llu\n", tot.lookups, tot.misses,
	       tot.bad, tot.moves, tot.errs, tot.walks, tot.walk_errs);

	fail = sp_verdict(&tot, false, sp_final_ok(&t, 1));
	sp_teardown(&t);
	return fail;
}
