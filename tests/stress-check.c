/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Checkpoints of tests/stress: the writers park between two operations,
 * so that their models are exact, while the readers go on; then both
 * tables must hold exactly their models, by stats (entries, time-wait,
 * the cap) and by a lookup of every key and a walk, and a trie must keep
 * the memory bound lib/trie/trie.c states. The same checks end a run.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "stress.h"
#include "stress-delay.h"

/* lib/trie/trie.c: bytes per entry present, over the empty table's memory. */
#define TRIE_BOUND_PER_ENTRY	208

void st_park(void)
{
	struct timespec tick = { 0, 200 * 1000 };

	if (!__atomic_load_n(&run.pause, __ATOMIC_ACQUIRE))
		return;
	/* Our model's stores happen before the checker's load of parked. */
	__atomic_add_fetch(&run.parked, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&run.pause, __ATOMIC_ACQUIRE))
		nanosleep(&tick, NULL);
	__atomic_sub_fetch(&run.parked, 1, __ATOMIC_SEQ_CST);
}

int st_check_node(const struct conntab_node *n, uint32_t id, const char *who)
{
	struct conntab_key k;

	sk_key(&k, id);
	return th_check_node(n, &k, id, who);
}

/* Main thread, writers running: park them all. */
static void pause_writers(void)
{
	struct timespec tick = { 0, 100 * 1000 };

	__atomic_store_n(&run.pause, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&run.parked, __ATOMIC_SEQ_CST) != run.writers)
		nanosleep(&tick, NULL);
}

static void resume_writers(void)
{
	__atomic_store_n(&run.pause, 0, __ATOMIC_RELEASE);
}

/* --- what each table must hold ------------------------------------- */

static struct tconn *want_main(uint32_t id, enum conntab_state *state)
{
	if (id < opt.nkeys) {
		*state = run.model.state[id];
		return run.model.holder[id];
	}
	if (id < opt.ev0) {
		*state = run.gr.state[id - opt.grow0];
		return run.gr.c[id - opt.grow0];
	}
	return NULL;
}

static struct tconn *want_capped(uint32_t id, enum conntab_state *state)
{
	struct tconn *c = NULL;

	*state = CONNTAB_ESTABLISHED;
	if (IS_FIXED(id))
		c = run.ev.fixed[id / 4];
	else if (id >= opt.ev0)
		c = run.ev.holder[id - opt.ev0];
	return c && !ev_evicted(c) ? c : NULL;
}

struct table_check {
	const char *what;
	struct conntab *t;
	struct tconn *(*want)(uint32_t id, enum conntab_state *state);
	size_t entries, timewait;	/* by the model */
	size_t walked;
	uint8_t *seen;			/* [nids] */
};

static int check_walk_fn(struct conntab_node *n, void *arg)
{
	struct table_check *tc = arg;
	struct tconn *c = conntab_entry(n, struct tconn, node);
	enum conntab_state state;
	uint32_t id = c->id;

	tc->walked++;
	if (id >= opt.nids || tc->want(id, &state) != c)
		th_report("%s: walk found node %p (id %u) the model has not",
			  tc->what, (void *)n, id);
	else if (tc->seen[id]++)
		th_report("%s: walk visited key %u twice, writers parked",
			  tc->what, id);
	return 0;
}

/* The table holds exactly its model: every key's lookup, and a walk. */
static void check_contents(struct table_check *tc)
{
	struct conntab_node *n;
	struct conntab_key k;
	enum conntab_state state;
	struct tconn *c;
	uint32_t id;
	int ret;

	tc->entries = tc->timewait = tc->walked = 0;
	memset(tc->seen, 0, opt.nids);
	rcu_read_lock();
	for (id = 0; id < opt.nids; id++) {
		c = tc->want(id, &state);
		tc->entries += c != NULL;
		tc->timewait += c && state == CONNTAB_TIMEWAIT;
		sk_key(&k, id);
		n = conntab_lookup(tc->t, &k);
		if (n != (c ? &c->node : NULL))
			th_report("%s: lookup of key %u: %p, model %p",
				  tc->what, id, (void *)n,
				  c ? (void *)&c->node : NULL);
		else if (n && conntab_node_state(n) != state)
			th_report("%s: key %u in state %d, model %d",
				  tc->what, id, conntab_node_state(n), state);
	}
	ret = conntab_walk(tc->t, check_walk_fn, tc);
	rcu_read_unlock();
	if (ret || tc->walked != tc->entries)
		th_report("%s: walk returned %d after %zu nodes; model %zu",
			  tc->what, ret, tc->walked, tc->entries);
}

/*
 * lib/trie/trie.c's bound for the N entries present: internal nodes <= N - 1
 * (0 when N <= 1), memory <= the empty table's + 208 N. Strict: a
 * violation fails the run, with the numbers to report.
 */
static void check_trie_bound(const char *what, const struct conntab_stats *st,
			     size_t m0)
{
	size_t n = st->entries, per;

	if (st->buckets > (n ? n - 1 : 0) ||
	    st->memory > m0 + TRIE_BOUND_PER_ENTRY * n)
		th_report("%s: trie bound broken at checkpoint %lu: %zu "
			  "entries, %zu internal nodes (bound %zu), %zu bytes "
			  "(bound %zu)", what, run.checkpoints, n, st->buckets,
			  n ? n - 1 : 0, st->memory,
			  m0 + TRIE_BOUND_PER_ENTRY * n);
	per = n ? (st->memory > m0 ? st->memory - m0 : 0) / n : 0;
	if (per > run.bound_worst)
		run.bound_worst = per;
}

static void check_table(struct table_check *tc, size_t m0, size_t cap)
{
	struct conntab_stats st;

	check_contents(tc);
	if (cap && tc->entries > cap)
		th_report("%s: %zu entries by the model, over the cap %zu",
			  tc->what, tc->entries, cap);
	conntab_stats(tc->t, &st);
	if (st.entries != tc->entries || st.timewait != tc->timewait)
		th_report("%s: stats %zu entries, %zu timewait; model %zu, %zu",
			  tc->what, st.entries, st.timewait, tc->entries,
			  tc->timewait);
	if (run.trie)
		check_trie_bound(tc->what, &st, m0);
}

/*
 * The checks of a checkpoint, writers parked or joined. Our own delay
 * points stay quiet: with every writer stopped, our reads race with
 * nothing that delays could bring out.
 */
void st_check_tables(void)
{
	struct table_check tc = { .what = "main table", .t = run.t,
				  .want = want_main, .seen = run.seen };

	sd_mute(1);
	run.checkpoints++;
	check_table(&tc, run.m0, 0);
	if (run.ev.t) {
		tc.what = "capped table";
		tc.t = run.ev.t;
		tc.want = want_capped;
		check_table(&tc, run.ev.m0, run.ev.cap);
	}
	sd_mute(0);
}

void st_checkpoint(void)
{
	pause_writers();
	st_check_tables();
	resume_writers();
}
