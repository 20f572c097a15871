/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reference-model test: seeded random sequences of every table operation
 * over a small key space (IPv4 and IPv6 keys that differ in one field
 * only), each result compared with a plain array of slots that says which
 * node holds each key and in which state.
 *
 * The seed is printed at start and in every failure; set CONNTAB_TEST_SEED
 * to replay one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define NOPS		6000
#define MAXBATCH	40
#define NK		T_SMALL_KEYS

/* Table configurations each backend runs through. */
static const struct {
	size_t expected, max_entries;
} configs[] = {
	{ 0, 0 },
	{ 1 << 16, 0 },		/* sparse: most buckets empty */
	{ 0, 40 },		/* capped below the key space */
	{ 4, 0 },
};
#define NCONFIGS	(sizeof(configs) / sizeof(configs[0]))

static uint64_t base_seed;

struct model {
	struct conntab *t;
	enum conntab_backend b;
	size_t max_entries;
	size_t cfgi;			/* index in configs[] */
	uint64_t rng;
	size_t op;			/* number of the current operation */
	struct tconn *slot[NK];		/* node holding key i, or NULL */
	enum conntab_state state[NK];	/* its state */
	size_t entries, timewait;
	uint32_t next_id;
};

static char m_msg[256];

static const char *m_fmt(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static const char *m_fmt(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m_msg, sizeof(m_msg), fmt, ap);
	va_end(ap);
	return m_msg;
}

/* Every failure names backend, seed and operation number. */
#define M_ASSERT(m, cond, ...) \
	ck_assert_msg(cond, "%s config %zu op %zu " \
		      "(CONNTAB_TEST_SEED=%" PRIu64 "): %s", \
		      conntab_backend_name((m)->b), (m)->cfgi, (m)->op, \
		      base_seed, m_fmt(__VA_ARGS__))

static uint64_t rnd(struct model *m)
{
	/* xorshift64* */
	m->rng ^= m->rng >> 12;
	m->rng ^= m->rng << 25;
	m->rng ^= m->rng >> 27;
	return m->rng * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd_below(struct model *m, uint32_t n)
{
	return (uint32_t)((rnd(m) >> 32) % n);
}

static int full(const struct model *m)
{
	return m->max_entries && m->entries >= m->max_entries;
}

static void set_slot(struct model *m, uint32_t i, struct tconn *c,
		     enum conntab_state st)
{
	if (m->slot[i]) {
		m->entries--;
		m->timewait -= m->state[i] == CONNTAB_TIMEWAIT;
	}
	m->slot[i] = c;
	m->state[i] = st;
	if (c) {
		m->entries++;
		m->timewait += st == CONNTAB_TIMEWAIT;
	}
}

/* Node @n is what the model holds for key @i (caller in read lock). */
static void expect_node(struct model *m, uint32_t i, struct conntab_node *n,
			const char *what)
{
	struct tconn *want = m->slot[i];
	struct conntab_key k;

	M_ASSERT(m, n == (want ? &want->node : NULL),
		 "%s key %u: got %p want %p", what, i, (void *)n,
		 want ? (void *)&want->node : NULL);
	if (!n)
		return;
	t_key_small(&k, i);
	M_ASSERT(m, t_conn_of(n)->magic == T_MAGIC_LIVE, "%s: dead node",
		 what);
	M_ASSERT(m, t_key_same(conntab_node_key(n), &k), "%s key %u: key",
		 what, i);
	M_ASSERT(m, conntab_node_state(n) == m->state[i],
		 "%s key %u: state %d want %d", what, i,
		 conntab_node_state(n), m->state[i]);
}

static void op_lookup(struct model *m, uint32_t i)
{
	struct conntab_key k;

	t_key_small(&k, i);
	rcu_read_lock();
	expect_node(m, i, conntab_lookup(m->t, &k), "lookup");
	rcu_read_unlock();
}

static void op_batch(struct model *m)
{
	struct conntab_node *out[MAXBATCH];
	struct conntab_key keys[MAXBATCH];
	uint32_t id[MAXBATCH];
	size_t n = rnd_below(m, MAXBATCH + 1), i, want = 0, got;

	for (i = 0; i < n; i++) {
		id[i] = rnd_below(m, NK);
		t_key_small(&keys[i], id[i]);
		want += m->slot[id[i]] != NULL;
	}
	rcu_read_lock();
	got = conntab_lookup_batch(m->t, keys, out, n);
	for (i = 0; i < n; i++)
		expect_node(m, id[i], out[i], "batch");
	rcu_read_unlock();
	M_ASSERT(m, got == want, "batch of %zu found %zu want %zu", n, got,
		 want);
}

static void op_insert(struct model *m, uint32_t i)
{
	struct tconn *c = t_conn_new(m->next_id++);
	struct conntab_key k;
	int want, err;

	t_key_small(&k, i);
	want = m->slot[i] ? -EEXIST : full(m) ? -ENOSPC : 0;
	err = conntab_insert(m->t, &c->node, &k);
	M_ASSERT(m, err == want, "insert key %u: %d want %d", i, err, want);
	if (err)
		t_conn_free_now(c);	/* never linked: no reader saw it */
	else
		set_slot(m, i, c, CONNTAB_ESTABLISHED);
}

/* Insert a node that is in the table already, under another key. */
static void op_insert_busy(struct model *m, uint32_t i)
{
	uint32_t j = rnd_below(m, NK);
	struct conntab_node *rec;
	struct conntab_key k;
	int err;

	if (!m->slot[j])
		return;
	t_key_small(&k, i);
	err = conntab_insert(m->t, &m->slot[j]->node, &k);
	M_ASSERT(m, err == -EBUSY, "insert of linked node: %d", err);
	err = conntab_insert_recycle(m->t, &m->slot[j]->node, &k, &rec);
	M_ASSERT(m, err == -EBUSY, "recycle of linked node: %d", err);
}

static void op_recycle(struct model *m, uint32_t i)
{
	struct tconn *c = t_conn_new(m->next_id++), *old = m->slot[i];
	struct conntab_node *rec = &c->node;	/* must be overwritten */
	struct conntab_key k;
	int want, err;

	t_key_small(&k, i);
	if (old)
		want = m->state[i] == CONNTAB_TIMEWAIT ? 0 : -EEXIST;
	else
		want = full(m) ? -ENOSPC : 0;
	err = conntab_insert_recycle(m->t, &c->node, &k, &rec);
	M_ASSERT(m, err == want, "recycle key %u: %d want %d", i, err, want);
	if (!err && old) {
		M_ASSERT(m, rec == &old->node, "recycled %p want %p",
			 (void *)rec, (void *)&old->node);
		t_conn_free_rcu(old);
	} else {
		M_ASSERT(m, rec == NULL, "recycled %p want NULL", (void *)rec);
	}
	if (err)
		t_conn_free_now(c);
	else
		set_slot(m, i, c, CONNTAB_ESTABLISHED);
}

static void op_remove(struct model *m, uint32_t i)
{
	struct tconn *c = m->slot[i];
	int err;

	if (!c) {
		/* A node that is in no table. */
		c = t_conn_new(m->next_id++);
		err = conntab_remove(m->t, &c->node);
		M_ASSERT(m, err == -ENOENT, "remove of stray node: %d", err);
		t_conn_free_now(c);
		return;
	}
	err = conntab_remove(m->t, &c->node);
	M_ASSERT(m, err == 0, "remove key %u: %d", i, err);
	set_slot(m, i, NULL, 0);
	/* A second remove before the grace period: gone already. */
	err = conntab_remove(m->t, &c->node);
	M_ASSERT(m, err == -ENOENT, "second remove key %u: %d", i, err);
	t_conn_free_rcu(c);
}

static void op_timewait(struct model *m, uint32_t i)
{
	struct tconn *est = m->slot[i], *tw = NULL;
	int in_place = rnd_below(m, 2), want, err;

	if (!est) {
		est = t_conn_new(m->next_id++);
		tw = in_place ? est : t_conn_new(m->next_id++);
		err = conntab_timewait(m->t, &est->node, &tw->node);
		M_ASSERT(m, err == -ENOENT, "timewait of stray node: %d", err);
		if (tw != est)
			t_conn_free_now(tw);
		t_conn_free_now(est);
		return;
	}
	tw = in_place ? est : t_conn_new(m->next_id++);
	want = m->state[i] == CONNTAB_TIMEWAIT ? -EINVAL : 0;
	err = conntab_timewait(m->t, &est->node, &tw->node);
	M_ASSERT(m, err == want, "timewait key %u (%s): %d want %d", i,
		 in_place ? "in place" : "new node", err, want);
	if (err) {
		if (tw != est)
			t_conn_free_now(tw);	/* refused, never linked */
		return;
	}
	set_slot(m, i, tw, CONNTAB_TIMEWAIT);
	if (tw != est)
		t_conn_free_rcu(est);
}

struct walk_arg {
	struct model *m;
	unsigned int seen[NK];
	int sweep;		/* remove every node visited */
};

static uint32_t key_index(struct model *m, const struct conntab_key *k)
{
	struct conntab_key x;
	uint32_t i;

	for (i = 0; i < NK; i++) {
		t_key_small(&x, i);
		if (t_key_same(&x, k))
			return i;
	}
	M_ASSERT(m, 0, "walk met a key outside the key space");
	return 0;
}

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk_arg *w = arg;
	struct model *m = w->m;
	uint32_t i = key_index(m, conntab_node_key(n));
	int err;

	expect_node(m, i, n, "walk");
	w->seen[i]++;
	if (w->sweep) {
		err = conntab_remove(m->t, n);
		M_ASSERT(m, err == 0, "remove in walk: %d", err);
		set_slot(m, i, NULL, 0);
		t_conn_free_rcu(t_conn_of(n));
	}
	return 0;
}

/* Walk all or one state, optionally removing; compare with the model. */
static void op_walk(struct model *m, int state, int sweep)
{
	struct walk_arg w = { .m = m, .sweep = sweep };
	int present[NK], err;
	uint32_t i;

	for (i = 0; i < NK; i++)
		present[i] = m->slot[i] &&
			     (state < 0 || (int)m->state[i] == state);
	rcu_read_lock();
	if (state < 0)
		err = conntab_walk(m->t, walk_fn, &w);
	else
		err = conntab_walk_state(m->t, state, walk_fn, &w);
	rcu_read_unlock();
	M_ASSERT(m, err == 0, "walk: %d", err);
	for (i = 0; i < NK; i++)
		M_ASSERT(m, w.seen[i] == (unsigned int)present[i],
			 "walk(state %d%s) visited key %u %u times, want %d",
			 state, sweep ? ", sweep" : "", i, w.seen[i],
			 present[i]);
}

static void op_stats(struct model *m)
{
	struct conntab_stats st;

	conntab_stats(m->t, &st);
	M_ASSERT(m, st.entries == m->entries, "stats.entries %zu want %zu",
		 st.entries, m->entries);
	M_ASSERT(m, st.timewait == m->timewait, "stats.timewait %zu want %zu",
		 st.timewait, m->timewait);
	M_ASSERT(m, st.buckets >= t_min_buckets(m->b, m->entries),
		 "stats.buckets %zu with %zu entries", st.buckets, m->entries);
	M_ASSERT(m, st.memory > 0, "stats.memory 0");
	M_ASSERT(m, m->entries == 0 || st.max_depth >= 1,
		 "max_depth 0 with %zu entries", m->entries);
}

static unsigned int released[NK];
static struct model *releasing;

static void release_fn(struct conntab_node *n)
{
	uint32_t i = key_index(releasing, conntab_node_key(n));

	M_ASSERT(releasing, releasing->slot[i] == t_conn_of(n),
		 "release of node not in the model");
	released[i]++;
	t_conn_free_now(t_conn_of(n));	/* no reader is left */
}

static void run_model(enum conntab_backend b, size_t cfgi)
{
	struct conntab_config cfg = {
		.backend = b,
		.expected = configs[cfgi].expected,
		.max_entries = configs[cfgi].max_entries,
		.hash = t_hash,
	};
	static struct model mm;
	struct model *m = &mm;
	uint32_t i, r;

	memset(m, 0, sizeof(*m));
	m->b = b;
	m->max_entries = cfg.max_entries;
	m->cfgi = cfgi;
	m->rng = (base_seed + b * 1000 + cfgi) * 0x9e3779b97f4a7c15ull | 1;
	m->t = conntab_create(&cfg);
	M_ASSERT(m, m->t != NULL, "create");
	for (m->op = 0; m->op < NOPS; m->op++) {
		i = rnd_below(m, NK);
		r = rnd_below(m, 100);
		if (r < 25)
			op_insert(m, i);
		else if (r < 28)
			op_insert_busy(m, i);
		else if (r < 38)
			op_recycle(m, i);
		else if (r < 50)
			op_remove(m, i);
		else if (r < 64)
			op_timewait(m, i);
		else if (r < 80)
			op_lookup(m, i);
		else if (r < 88)
			op_batch(m);
		else if (r < 92)
			op_walk(m, (int)rnd_below(m, 3) - 1, 0);
		else if (r < 93)
			op_walk(m, rnd_below(m, 4) ? CONNTAB_TIMEWAIT : -1, 1);
		else
			op_stats(m);
		if (m->op % 512 == 0)
			for (i = 0; i < NK; i++)
				op_lookup(m, i);
	}
	for (i = 0; i < NK; i++)
		op_lookup(m, i);
	op_stats(m);
	memset(released, 0, sizeof(released));
	releasing = m;
	conntab_destroy(m->t, release_fn);
	for (i = 0; i < NK; i++)
		M_ASSERT(m, released[i] == (m->slot[i] != NULL),
			 "destroy released key %u %u times", i, released[i]);
	rcu_barrier();		/* the nodes freed through call_rcu */
}

START_TEST(model)
{
	size_t c;

	for (c = 0; c < NCONFIGS; c++)
		run_model((enum conntab_backend)_i, c);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = { model };
	const char *env = getenv("CONNTAB_TEST_SEED");
	Suite *s = suite_create("model");
	int ret;

	base_seed = env ? strtoull(env, NULL, 0) :
		    (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	printf("model: CONNTAB_TEST_SEED=%" PRIu64 " (%d ops per run)\n",
	       base_seed, NOPS);
	rcu_register_thread();
	t_add_backend_cases(s, per_backend, 1, 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
