/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Long stress run (memb flavor). Built by `make check`, not one of its
 * tests: CI runs it for a few seconds per backend, and by hand it runs
 * for hours.
 *
 *   tests/stress [--seconds N] [--backend NAME] [--hash NAME]
 *                [--threads N] [--seed S] [--keys N]
 *
 * For every backend the library accepts (or the one named), under every
 * hash the machine runs (SipHash, and AES where the CPU has it; or the
 * one named; the trie, which does not hash, once), N seconds each
 * (default 5): --threads readers (single and batched lookups) and as
 * many writers, a walker and a grower share one table created small
 * (expected = 0). The keys are IPv4 and IPv6 (t_key()):
 *
 *  - fixed keys (id % 4 == 0) are inserted first and never touched;
 *  - flipping keys (id % 4 == 2) are always present while their node is
 *    replaced all the time (th_flip(): time-wait to a new node or in
 *    place, recycle);
 *  - churn keys (odd ids) come and go through every writer call
 *    (th_churn());
 *  - growth keys (ids from --keys on): the grower inserts a few thousand,
 *    time-waits some (in place and to new nodes) and removes them all,
 *    again and again, so a growing backend resizes both ways.
 *
 * Checked while it runs: no lookup of a fixed or flipping key misses;
 * every node a reader or the walker gets is alive (not past its grace
 * period: retired nodes are poisoned in their call_rcu callback, and
 * ASan-poisoned in a sanitizer build) and carries the key looked up; no
 * walk visits a node twice, and every walk visits each fixed key exactly
 * once. After joining: stats.entries and stats.timewait equal the model's
 * counts, every key's lookup gives the model's node, and destroy releases
 * exactly the model's nodes. The volume is printed per backend; the exit
 * status is nonzero on any error.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "threads.h"

#define MAX_THREADS	64
#define BATCH		16
#define NGROW		16384

#define IS_FIXED(id)	((id) % 4 == 0)
#define IS_CHURN(id)	((id) % 2 == 1)

static struct {
	unsigned long seconds;
	unsigned int threads;
	uint64_t seed;
	uint32_t nkeys;
	const char *backend;
} opt = { 5, 2, 0, 4096, NULL };

static struct conntab *table;
static int stop;
static struct th_model model;

static size_t pow2_above(size_t x)
{
	size_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* --- readers -------------------------------------------------------- */

struct reader {
	pthread_t tid;
	uint64_t rng;
	unsigned long lookups;		/* every lookup checked */
	unsigned long present;		/* of keys present throughout */
	unsigned long misses;		/* of those, not found: stays 0 */
	unsigned long progress;
};

/* A key present throughout: found, alive, with that key. */
static void check_present(struct reader *r, const struct conntab_node *n,
			  const struct conntab_key *k, uint32_t id)
{
	r->present++;
	if (!n) {
		r->misses++;
		th_report("reader: key %u (%s) missed", id,
			  IS_FIXED(id) ? "fixed" : "flipping");
		return;
	}
	th_check_node(n, k, id, "reader");
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct conntab_key keys[BATCH];
	struct conntab_node *out[BATCH], *n;
	uint32_t ids[BATCH], id;
	size_t i, found;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		rcu_read_lock();
		if (th_rnd(&r->rng) % 4 == 0) {
			for (i = 0; i < BATCH; i++) {
				ids[i] = (uint32_t)(th_rnd(&r->rng) %
						    opt.nkeys);
				t_key(&keys[i], ids[i]);
			}
			found = conntab_lookup_batch(table, keys, out, BATCH);
			for (i = 0; i < BATCH; i++) {
				r->lookups++;
				found -= out[i] != NULL;
				if (!IS_CHURN(ids[i]))
					check_present(r, out[i], &keys[i],
						      ids[i]);
				else if (out[i])
					th_check_node(out[i], &keys[i], ids[i],
						      "batch");
			}
			if (found)
				th_report("batch: count off by %zu", found);
		} else {
			id = (uint32_t)(th_rnd(&r->rng) % opt.nkeys);
			t_key(&keys[0], id);
			n = conntab_lookup(table, &keys[0]);
			r->lookups++;
			if (!IS_CHURN(id))
				check_present(r, n, &keys[0], id);
			else if (n)
				th_check_node(n, &keys[0], id, "lookup");
		}
		rcu_read_unlock();
		th_tick(&r->progress);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- walker --------------------------------------------------------- */

struct walker {
	pthread_t tid;
	unsigned long walks, visits;
	unsigned int *seen;		/* [nkeys] visits of each key */
	const void **set;		/* nodes seen in this walk */
	size_t set_size;		/* power of two, > 2 * nodes */
};

/*
 * A node seen twice in one walk? Its memory cannot be reused while the
 * walk holds the read lock, so its address identifies it.
 */
static int seen_before(struct walker *w, const void *p)
{
	size_t i = ((uintptr_t)p >> 6) * 0x9e3779b97f4a7c15ull;

	for (i &= w->set_size - 1; w->set[i]; i = (i + 1) & (w->set_size - 1))
		if (w->set[i] == p)
			return 1;
	w->set[i] = p;
	return 0;
}

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walker *w = arg;
	struct tconn *c = conntab_entry(n, struct tconn, node);
	uint32_t id = __atomic_load_n(&c->id, __ATOMIC_RELAXED);
	struct conntab_key k;

	w->visits++;
	if (id >= opt.nkeys + NGROW) {
		th_report("walk: node %p has id %u (freed?)", (void *)n, id);
		return 0;
	}
	t_key(&k, id);
	th_check_node(n, &k, id, "walk");
	if (seen_before(w, n))
		th_report("walk %lu: node %p (key %u) visited twice",
			  w->walks, (void *)n, id);
	if (id < opt.nkeys)
		w->seen[id]++;
	return 0;
}

static void *walker_main(void *arg)
{
	struct walker *w = arg;
	uint32_t id;
	int ret, state;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		memset(w->seen, 0, opt.nkeys * sizeof(*w->seen));
		memset(w->set, 0, w->set_size * sizeof(*w->set));
		/* Fixed keys are ESTABLISHED: the filtered walk has them. */
		state = w->walks % 2 ? CONNTAB_ESTABLISHED : -1;
		rcu_read_lock();
		if (state < 0)
			ret = conntab_walk(table, walk_fn, w);
		else
			ret = conntab_walk_state(table, state, walk_fn, w);
		rcu_read_unlock();
		if (ret)
			th_report("walk returned %d", ret);
		for (id = 0; id < opt.nkeys; id += 4)
			if (w->seen[id] != 1)
				th_report("walk %lu (state %d): fixed key %u "
					  "visited %u times", w->walks, state,
					  id, w->seen[id]);
		th_tick(&w->walks);
	}
	rcu_unregister_thread();
	return NULL;
}

static struct walker wk;

/* --- writers -------------------------------------------------------- */

struct writer {
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	unsigned long writes, progress;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t id;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		id = (uint32_t)(th_rnd(&w->rng) % opt.nkeys);
		if (IS_FIXED(id) || (id / 2) % opt.threads != w->idx)
			continue;
		if (IS_CHURN(id))
			w->writes += th_churn(&model, id, &w->rng);
		else
			w->writes += th_flip(&model, id, &w->rng);
		th_self_check(&model, id);
		th_tick(&w->progress);
	}
	rcu_unregister_thread();
	return NULL;
}

/*
 * Fill with NGROW more keys, time-wait every fourth (in place or to a new
 * node), remove them all; a cycle always completes, so the table holds
 * none of them once the grower has stopped.
 */
struct grower {
	pthread_t tid;
	uint64_t rng;
	unsigned long writes, cycles;
	struct tconn *c[NGROW];
};

static void *grower_main(void *arg)
{
	struct grower *g = arg;
	struct conntab_key k;
	struct tconn *tw;
	uint32_t i;
	int err;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < NGROW; i++) {
			g->c[i] = t_conn_new(opt.nkeys + i);
			t_key(&k, opt.nkeys + i);
			err = conntab_insert(table, &g->c[i]->node, &k);
			if (err)
				th_report("grow: insert %u: %d", i, err);
		}
		for (i = 0; i < NGROW; i += 4) {
			if (th_rnd(&g->rng) & 1) {
				tw = g->c[i];
			} else {
				tw = t_conn_new(opt.nkeys + i);
			}
			err = conntab_timewait(table, &g->c[i]->node,
					       &tw->node);
			if (err)
				th_report("grow: timewait %u: %d", i, err);
			if (tw != g->c[i]) {
				th_retire(g->c[i]);
				g->c[i] = tw;
			}
		}
		for (i = 0; i < NGROW; i++) {
			err = conntab_remove(table, &g->c[i]->node);
			if (err)
				th_report("shrink: remove %u: %d", i, err);
			th_retire(g->c[i]);
		}
		g->writes += 2 * NGROW + NGROW / 4;
		th_tick(&g->cycles);
	}
	rcu_unregister_thread();
	return NULL;
}

/* --- one backend ---------------------------------------------------- */

static void release_fn(struct conntab_node *n)
{
	struct tconn *c = conntab_entry(n, struct tconn, node);

	if (c->id >= opt.nkeys || model.holder[c->id] != c)
		th_report("destroy released node %p (id %u) not in the model",
			  (void *)n, c->id);
	else
		model.holder[c->id] = NULL;
	t_conn_free_now(c);
}

/* Sleep the run time, stopping early on an error; beat now and then. */
static void run_for(const char *name, unsigned long *const *ctrs, size_t n)
{
	unsigned long s;

	for (s = 0; s < opt.seconds && !th_errors(); s++) {
		sleep(1);
		if (s && s % 60 == 0) {
			printf("  %s: %lu s\n", name, s);
			fflush(stdout);
		}
	}
	/* Every thread has done some work, however loaded the machine. */
	th_run_for(0, ctrs, n, 1);
}

static int stress_backend(enum conntab_backend b, enum conntab_hash h)
{
	struct conntab_config cfg = { .backend = b, .hash = h }; /* grows */
	char name[48];
	static struct reader rd[MAX_THREADS];
	static struct writer wr[MAX_THREADS];
	static struct grower gr;
	unsigned long *progress[2 * MAX_THREADS + 2];
	unsigned long lookups = 0, present = 0, misses = 0, writes = 0;
	size_t i, np = 0, in = 0, tw = 0;
	struct conntab_stats st;
	struct conntab_key k;
	struct conntab_node *n;
	uint32_t id;
	time_t t0 = time(NULL);
	int bad = 0;

	snprintf(name, sizeof(name), "%s/%s", conntab_backend_name(b),
		 conntab_hash_name(h));
	if (b == CONNTAB_TRIE)
		snprintf(name, sizeof(name), "%s", conntab_backend_name(b));
	table = conntab_create(&cfg);
	if (!table) {
		perror("stress: conntab_create");
		return 1;
	}
	model.t = table;
	stop = 0;
	th_reset();
	for (id = 0; id < opt.nkeys; id++) {
		model.holder[id] = NULL;
		if (IS_CHURN(id))
			continue;
		model.holder[id] = t_conn_new(id);
		model.state[id] = CONNTAB_ESTABLISHED;
		t_key(&k, id);
		if (conntab_insert(table, &model.holder[id]->node, &k)) {
			fprintf(stderr, "%s: initial insert %u failed\n", name,
				id);
			return 1;
		}
	}
	memset(rd, 0, sizeof(rd));
	memset(wr, 0, sizeof(wr));
	memset(&gr, 0, sizeof(gr));
	wk.walks = wk.visits = 0;
	gr.rng = opt.seed * 31 + 17;
	for (i = 0; i < opt.threads; i++) {
		rd[i].rng = opt.seed * 0x9e3779b9ull + 2 * i + 1;
		wr[i].rng = opt.seed * 0x7f4a7c15ull + 2 * i + 1;
		wr[i].idx = (unsigned int)i;
		if (pthread_create(&rd[i].tid, NULL, reader_main, &rd[i]) ||
		    pthread_create(&wr[i].tid, NULL, writer_main, &wr[i])) {
			perror("pthread_create");
			exit(2);
		}
		progress[np++] = &rd[i].progress;
		progress[np++] = &wr[i].progress;
	}
	if (pthread_create(&wk.tid, NULL, walker_main, &wk) ||
	    pthread_create(&gr.tid, NULL, grower_main, &gr)) {
		perror("pthread_create");
		exit(2);
	}
	progress[np++] = &wk.walks;
	progress[np++] = &gr.cycles;
	alarm((unsigned int)opt.seconds + 600);	/* a hang is a failure */
	run_for(name, progress, np);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < opt.threads; i++) {
		pthread_join(rd[i].tid, NULL);
		pthread_join(wr[i].tid, NULL);
		lookups += rd[i].lookups;
		present += rd[i].present;
		misses += rd[i].misses;
		writes += wr[i].writes;
	}
	pthread_join(wk.tid, NULL);
	pthread_join(gr.tid, NULL);
	alarm(0);
	writes += gr.writes;

	/* The table holds exactly the model. */
	for (id = 0; id < opt.nkeys; id++) {
		in += model.holder[id] != NULL;
		tw += model.holder[id] &&
		      model.state[id] == CONNTAB_TIMEWAIT;
	}
	conntab_stats(table, &st);
	if (st.entries != in || st.timewait != tw) {
		th_report("stats: %zu entries, %zu timewait; model %zu, %zu",
			  st.entries, st.timewait, in, tw);
	}
	rcu_read_lock();
	for (id = 0; id < opt.nkeys + NGROW; id++) {
		struct conntab_node *want = id < opt.nkeys && model.holder[id] ?
					    &model.holder[id]->node : NULL;

		t_key(&k, id);
		n = conntab_lookup(table, &k);
		if (n != want)
			th_report("final lookup of key %u: %p, model %p", id,
				  (void *)n, (void *)want);
		else if (n && conntab_node_state(n) != model.state[id])
			th_report("final state of key %u: %d, model %d", id,
				  conntab_node_state(n), model.state[id]);
	}
	rcu_read_unlock();
	/* Retired nodes first, then the table and what it holds. */
	rcu_barrier();
	conntab_destroy(table, release_fn);
	for (id = 0; id < opt.nkeys; id++)
		if (model.holder[id])
			th_report("destroy did not release key %u", id);
	th_quarantine_flush();

	printf("stress %s: %lds, %u readers, %u writers: lookups checked %lu "
	       "(of keys present throughout %lu), misses %lu, writes %lu, "
	       "walks %lu (%lu nodes visited), grow cycles %lu, resizes %zu, "
	       "final entries %zu timewait %zu, errors %lu\n", name,
	       (long)(time(NULL) - t0), opt.threads, opt.threads, lookups,
	       present, misses, writes, wk.walks, wk.visits, gr.cycles,
	       st.resizes, st.entries, st.timewait, th_errors());
	if (th_errors()) {
		printf("stress %s: FAILED, first error: %s\n", name,
		       th_first_error());
		bad = 1;
	}
	fflush(stdout);
	return bad;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: stress [--seconds N] [--backend NAME] [--hash NAME] "
		"[--threads N] [--seed S] [--keys N]\n"
		"  --seconds N  run time per backend and hash (default 5)\n"
		"  --backend B  only this backend (default: every available)\n"
		"  --hash H     only this hash: siphash, aes (default: each "
		"the CPU runs)\n"
		"  --threads N  readers, and as many writers (default 2)\n"
		"  --seed S     random seed (default: from the clock)\n"
		"  --keys N     fixed, flipping and churn keys (default 4096)\n");
}

static unsigned long num_arg(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || !*s || *end) {
		fprintf(stderr, "stress: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "backend", required_argument, NULL, 'b' },
		{ "hash", required_argument, NULL, 'H' },
		{ "threads", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 'r' },
		{ "keys", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum conntab_backend bs[8];
	enum conntab_hash hs[4];
	size_t nb, nh, i, j;
	int c, b = -1, h = -1, failed = 0;

	opt.seed = (uint64_t)time(NULL);
	while ((c = getopt_long(argc, argv, "s:b:H:t:r:k:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			opt.seconds = num_arg(optarg, "seconds");
			break;
		case 'b':
			b = conntab_backend_from_name(optarg);
			if (b < 0 || !conntab_backend_available(b)) {
				fprintf(stderr, "stress: backend %s not "
					"available\n", optarg);
				return 2;
			}
			opt.backend = optarg;
			break;
		case 'H':
			h = conntab_hash_from_name(optarg);
			if (h != CONNTAB_HASH_SIPHASH &&
			    (h != CONNTAB_HASH_AES || !t_cpu_has_aes())) {
				fprintf(stderr, "stress: hash %s not "
					"available\n", optarg);
				return 2;
			}
			break;
		case 't':
			opt.threads = (unsigned int)num_arg(optarg, "threads");
			break;
		case 'r':
			opt.seed = num_arg(optarg, "seed");
			break;
		case 'k':
			opt.nkeys = (uint32_t)num_arg(optarg, "keys");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || opt.threads < 1 || opt.threads > MAX_THREADS ||
	    opt.nkeys < 4 || opt.nkeys > (1u << 22) || opt.nkeys % 4) {
		usage(stderr);
		return 2;
	}
	model.nkeys = opt.nkeys;
	model.holder = calloc(opt.nkeys, sizeof(*model.holder));
	model.state = calloc(opt.nkeys + NGROW, sizeof(*model.state));
	wk.seen = calloc(opt.nkeys, sizeof(*wk.seen));
	wk.set_size = pow2_above(4 * ((size_t)opt.nkeys + 2 * NGROW));
	wk.set = calloc(wk.set_size, sizeof(*wk.set));
	if (!model.holder || !model.state || !wk.seen || !wk.set) {
		perror("stress");
		return 2;
	}
	printf("stress: %lu s per backend, seed %llu, %u keys + %u growth "
	       "keys\n", opt.seconds, (unsigned long long)opt.seed,
	       opt.nkeys, NGROW);
	rcu_register_thread();
	nb = t_backends(bs, 8);
	nh = t_hashes(hs, 4);
	for (i = 0; i < nb; i++) {
		if (b >= 0 && (int)bs[i] != b)
			continue;
		if (bs[i] == CONNTAB_TRIE) {
			failed |= stress_backend(bs[i], CONNTAB_HASH_AUTO);
			continue;
		}
		for (j = 0; j < nh; j++)
			if (h < 0 || (int)hs[j] == h)
				failed |= stress_backend(bs[i], hs[j]);
	}
	rcu_unregister_thread();
	free(wk.set);
	free(wk.seen);
	free(model.state);
	free(model.holder);
	return failed;
}
