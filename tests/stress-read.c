/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The readers of tests/stress: lookups (one key, or a batch), walks,
 * scans and prefix walks, each checking what it gets against what the
 * writers guarantee (stress.c lists the checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

/* --- lookups -------------------------------------------------------- */

/* A key present throughout: found, alive, with that key. */
static void check_present(struct reader *r, const struct conntab_node *n,
			  uint32_t id, const char *who)
{
	r->present++;
	if (!n) {
		r->misses++;
		th_report("%s: key %u (%s) missed", who, id,
			  IS_FIXED(id) ? "fixed" : "flipping");
		return;
	}
	st_check_node(n, id, who);
}

/* The generation of a key that comes and goes, or NULL for the others. */
static uint32_t *gen_of(uint32_t id)
{
	if (id >= opt.grow0)
		return &run.gr.gen[id - opt.grow0];
	return IS_CHURN(id) ? &run.model.gen[id] : NULL;
}

/*
 * A main-table key: one in four a key a writer is changing right now
 * (a race is there, and a uniform pick would rarely meet it), one in
 * eight a growth key (the grower's cycles hold them part of the time),
 * else any of [0, nkeys).
 */
static uint32_t pick_main(struct reader *r)
{
	uint64_t x = th_rnd(&r->rng);

	switch (x % 8) {
	case 0:
		return opt.grow0 + (uint32_t)((x >> 8) % NGROW);
	case 1:
	case 2:
		return __atomic_load_n(&run.hot[(x >> 8) % (opt.threads + 1)],
				       __ATOMIC_RELAXED);
	default:
		return (uint32_t)((x >> 8) % opt.nkeys);
	}
}

/*
 * What a lookup of @id in the main table found (@g its generation at the
 * start, when it has one).
 */
static void check_main(struct reader *r, const struct conntab_node *n,
		       uint32_t id, const uint32_t *gen, uint32_t g,
		       const char *who)
{
	r->lookups++;
	if (!gen) {
		check_present(r, n, id, who);
		return;
	}
	if (th_gen_absent(gen, g)) {
		r->absent++;
		if (n)
			th_report("%s: key %u found after its removal "
				  "(generation %u)", who, id, g);
	}
	if (n)
		st_check_node(n, id, who);
}

static void lookup_main(struct reader *r)
{
	struct conntab_key k;
	struct conntab_node *n;
	uint32_t id = pick_main(r), *gen = gen_of(id), g = 0;

	sk_key(&k, id);
	if (gen)
		g = th_gen_begin(gen);
	n = conntab_lookup(run.t, &k);
	check_main(r, n, id, gen, g, "lookup");
}

static void batch_main(struct reader *r)
{
	struct conntab_key keys[BATCH];
	struct conntab_node *out[BATCH];
	uint32_t ids[BATCH], g[BATCH], *gen[BATCH];
	size_t i, found;

	for (i = 0; i < BATCH; i++) {
		ids[i] = pick_main(r);
		gen[i] = gen_of(ids[i]);
		g[i] = gen[i] ? th_gen_begin(gen[i]) : 0;
		sk_key(&keys[i], ids[i]);
	}
	found = conntab_lookup_batch(run.t, keys, out, BATCH);
	for (i = 0; i < BATCH; i++) {
		found -= out[i] != NULL;
		check_main(r, out[i], ids[i], gen[i], g[i], "batch");
	}
	if (found)
		th_report("batch: count off by %zu", found);
}

/*
 * The capped table: its fixed keys are never evicted, so always found;
 * an evictor's key may be there or not.
 */
static void lookup_evict(struct reader *r)
{
	struct conntab_key keys[BATCH];
	struct conntab_node *out[BATCH];
	uint32_t ids[BATCH];
	size_t i, m = th_rnd(&r->rng) % 2 ? BATCH : 1;

	for (i = 0; i < m; i++) {
		uint64_t x = th_rnd(&r->rng);

		ids[i] = x % 2 ? (uint32_t)(4 * ((x >> 8) % (opt.nkeys / 4))) :
				 opt.ev0 + (uint32_t)((x >> 8) % opt.nkeys);
		sk_key(&keys[i], ids[i]);
	}
	if (m == 1)
		out[0] = conntab_lookup(run.ev.t, &keys[0]);
	else
		conntab_lookup_batch(run.ev.t, keys, out, m);
	for (i = 0; i < m; i++) {
		r->lookups++;
		if (ids[i] < opt.nkeys)
			check_present(r, out[i], ids[i], "capped lookup");
		else if (out[i])
			st_check_node(out[i], ids[i], "capped lookup");
	}
}

void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t x;

	rcu_register_thread();
	while (!st_stopping()) {
		x = th_rnd(&r->rng) % 8;
		rcu_read_lock();
		if (x < 2)
			batch_main(r);
		else if (x == 2 && run.ev.t)
			lookup_evict(r);
		else
			lookup_main(r);
		rcu_read_unlock();
		th_tick(&r->progress);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- what a pass visited -------------------------------------------- */

struct vslot {
	uintptr_t node;
	uint32_t id;
};

static size_t pow2_above(size_t x)
{
	size_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

int visited_init(struct visited *vs, size_t nodes)
{
	vs->size = pow2_above(4 * nodes);
	vs->slot = calloc(vs->size, sizeof(struct vslot));
	vs->fixed = calloc(opt.nkeys / 4, sizeof(*vs->fixed));
	vs->used = 0;
	vs->overflow = 0;
	return vs->slot && vs->fixed ? 0 : -1;
}

void visited_free(struct visited *vs)
{
	free(vs->slot);
	free(vs->fixed);
	vs->slot = NULL;
	vs->fixed = NULL;
}

static void visited_reset(struct visited *vs)
{
	memset(vs->slot, 0, vs->size * sizeof(struct vslot));
	memset(vs->fixed, 0, opt.nkeys / 4 * sizeof(*vs->fixed));
	vs->used = 0;
}

/*
 * Was node @n of key @id visited before in this pass? Keyed by both:
 * between the calls of a scan the read lock is dropped, so a node's
 * memory may come back as a node of another key, a different node in a
 * different place of the pass's order. The same key at the same address
 * has the same place, which a pass passes once: a repeat is an error.
 * A pass longer than the set (never seen) is counted, not checked.
 */
static bool visited_add(struct visited *vs, const struct conntab_node *n,
			uint32_t id)
{
	struct vslot *s = (struct vslot *)(void *)vs->slot;
	size_t i = (((uintptr_t)n >> 4) ^ id * 0x9e3779b9u) *
		   0x9e3779b97f4a7c15ull;

	if (4 * (vs->used + 1) > 3 * vs->size) {
		vs->overflow++;
		return false;
	}
	for (i &= vs->size - 1; s[i].node; i = (i + 1) & (vs->size - 1))
		if (s[i].node == (uintptr_t)n && s[i].id == id)
			return true;
	s[i].node = (uintptr_t)n;
	s[i].id = id;
	vs->used++;
	return false;
}

/*
 * A node a pass over @w->t gave: a key of that table, alive, with its
 * key, not visited before in the pass; fixed keys counted.
 */
static void visit(struct walker *w, struct conntab_node *n)
{
	struct tconn *c = conntab_entry(n, struct tconn, node);
	uint32_t id = __atomic_load_n(&c->id, __ATOMIC_RELAXED);
	bool capped = w->t == run.ev.t;

	w->visits++;
	if (id >= opt.nids ||
	    (capped ? !IS_FIXED(id) && id < opt.ev0 : id >= opt.ev0)) {
		th_report("%s: node %p has id %u (freed, or another table's)",
			  w->what, (void *)n, id);
		return;
	}
	st_check_node(n, id, w->what);
	if (visited_add(&w->vs, n, id))
		th_report("%s %lu: node %p (key %u) visited twice", w->what,
			  w->walks, (void *)n, id);
	if (IS_FIXED(id))
		w->vs.fixed[id / 4]++;
}

/* After a whole pass: every fixed key once (@match: those it covers). */
static void check_fixed(struct walker *w, bool (*match)(struct walker *w,
							 uint32_t id))
{
	uint32_t id;
	unsigned int want;

	for (id = 0; id < opt.nkeys; id += 4) {
		want = !match || match(w, id);
		if (w->vs.fixed[id / 4] != want)
			th_report("%s %lu: fixed key %u visited %u times, not "
				  "%u", w->what, w->walks, id,
				  w->vs.fixed[id / 4], want);
	}
}

/* --- walks ---------------------------------------------------------- */

static int walk_fn(struct conntab_node *n, void *arg)
{
	visit(arg, n);
	return 0;
}

void *walker_main(void *arg)
{
	struct walker *w = arg;
	int ret, state;

	rcu_register_thread();
	w->t = run.t;
	while (!st_stopping()) {
		visited_reset(&w->vs);
		/* Fixed keys are ESTABLISHED: the filtered walk has them. */
		state = w->walks % 2 ? CONNTAB_ESTABLISHED : -1;
		w->what = state < 0 ? "walk" : "walk_state";
		rcu_read_lock();
		if (state < 0)
			ret = conntab_walk(run.t, walk_fn, w);
		else
			ret = conntab_walk_state(run.t, state, walk_fn, w);
		rcu_read_unlock();
		if (ret)
			th_report("walk returned %d", ret);
		check_fixed(w, NULL);
		th_tick(&w->walks);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- scans ---------------------------------------------------------- */

/*
 * Passes of conntab_scan() in calls of 1 to 8 nodes, the read lock
 * dropped between calls (a timer's expiry sweep), over the main table
 * and now and then the capped one: every fixed key once per pass, no
 * node twice.
 */
void *scanner_main(void *arg)
{
	struct walker *w = arg;
	struct conntab_cursor cur;
	int ret;

	rcu_register_thread();
	while (!st_stopping()) {
		w->t = run.ev.t && th_rnd(&w->rng) % 4 == 0 ? run.ev.t : run.t;
		w->what = w->t == run.t ? "scan" : "capped scan";
		visited_reset(&w->vs);
		memset(&cur, 0, sizeof(cur));
		do {
			rcu_read_lock();
			ret = conntab_scan(w->t, &cur,
					   1 + th_rnd(&w->rng) % 8, walk_fn, w);
			rcu_read_unlock();
			w->calls++;
		} while (ret == 0 && !st_stopping());
		if (ret == 0)
			break;		/* stopped in the middle of a pass */
		if (ret != 1)
			th_report("%s returned %d", w->what, ret);
		check_fixed(w, NULL);
		th_tick(&w->walks);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- prefix walks --------------------------------------------------- */

static bool prefix_match(struct walker *w, uint32_t id)
{
	return sk_prefix_eq(id, w->prefix_id, w->bits);
}

static int prefix_fn(struct conntab_node *n, void *arg)
{
	struct walker *w = arg;
	struct tconn *c = conntab_entry(n, struct tconn, node);
	uint32_t id = __atomic_load_n(&c->id, __ATOMIC_RELAXED);

	visit(w, n);
	if (id < opt.nids && !prefix_match(w, id))
		th_report("prefix walk (key %u, %u bits): key %u is outside",
			  w->prefix_id, w->bits, id);
	return 0;
}

/*
 * The prefix of a fixed key, its bits chosen among: any length, the
 * zone, protocol and family (32), the local endpoint, the whole key.
 */
static unsigned int pick_bits(struct walker *w, uint32_t id)
{
	unsigned int len = sk_bits(id), local = len == 128 ? 80 : 176;
	uint64_t x = th_rnd(&w->rng);

	switch (x % 5) {
	case 0:
		return 32;
	case 1:
		return local;
	case 2:
		return len;
	case 3:
		return local + (unsigned int)((x >> 8) % (len - local + 1));
	default:
		return (unsigned int)((x >> 8) % (len + 1));
	}
}

void *prefixer_main(void *arg)
{
	struct walker *w = arg;
	struct conntab_key k;
	int ret;

	rcu_register_thread();
	w->t = run.t;
	w->what = "prefix walk";
	while (!st_stopping()) {
		w->prefix_id = 4 * (uint32_t)(th_rnd(&w->rng) %
					      (opt.nkeys / 4));
		w->bits = pick_bits(w, w->prefix_id);
		sk_key(&k, w->prefix_id);
		visited_reset(&w->vs);
		rcu_read_lock();
		ret = conntab_walk_prefix(run.t, &k, w->bits, prefix_fn, w);
		rcu_read_unlock();
		if (ret)
			th_report("prefix walk returned %d", ret);
		check_fixed(w, prefix_match);
		th_tick(&w->walks);
	}
	rcu_unregister_thread();
	return NULL;
}
