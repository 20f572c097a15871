/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Long stress run (memb flavor). Built by `make check`, not one of its
 * tests: CI runs it for a few seconds per backend, and by hand it runs
 * for hours.
 *
 *   tests/stress [--seconds N] [--backend NAME] [--hash NAME]
 *                [--threads N] [--evictors N] [--seed S] [--keys N]
 *                [--keyset LIST|all] [--checkpoint-ms N] [--delay SPEC]
 *   tests/stress --list-points | --list-keysets
 *
 * For every backend the library accepts (or the one named), under every
 * hash the machine runs (SipHash, and AES where the CPU has it; or the
 * one named; the trie, which does not hash, once), and for every key set
 * asked for (stress-keys.c; default mixed), N seconds each (default 5):
 * readers, writers, walkers and evictors share two tables created small
 * (expected = 0), the main one and one capped at max_entries.
 *
 * The main table's keys (stress.h has the ids):
 *  - fixed keys (id % 4 == 0) are inserted first and never touched;
 *  - flipping keys (id % 4 == 2) are always present while their node is
 *    replaced all the time (th_flip(): time-wait to a new node or in
 *    place, recycle);
 *  - churn keys (odd ids) come and go through every writer call
 *    (th_churn(): insert, recycle, remove, timewait);
 *  - growth keys: the grower inserts NGROW, time-waits a quarter (in
 *    place and to new nodes) and removes them all, again and again, so
 *    a growing backend resizes both ways.
 * The capped table holds a node of every fixed key (ranked negative, so
 * never evicted) and the evictors' keys, which they insert with
 * conntab_insert_evict() past the cap and remove, each evictor owning
 * some; a victim's owner learns of its eviction from a mark on it.
 *
 * The threads (--threads T, default 2; --evictors E, default 1): T
 * readers (single and batched lookups of both tables), T writers, the
 * grower, E evictors, a walker (conntab_walk and walk_state), a scanner
 * (conntab_scan passes in calls of 1 to 8 nodes, the read lock dropped
 * between calls, over both tables) and a prefix walker
 * (conntab_walk_prefix with prefixes of fixed keys: 32 bits, the local
 * endpoint, the whole key, or any length).
 *
 * Checked while it runs: no lookup of a fixed or flipping key misses, in
 * either table; no lookup of a churn or growth key that starts after its
 * remove returned finds it (found after its removal: a generation per
 * key, stress-read.c); every node a reader, walk, scan or rank function
 * gets is alive (retired nodes are poisoned in their call_rcu callback,
 * and ASan-poisoned in a sanitizer build) and carries its key; no walk,
 * scan pass or prefix walk visits a node twice, and each visits every
 * fixed key it covers exactly once and nothing outside its prefix; no
 * eviction takes a fixed key. Every --checkpoint-ms (default 500) the
 * writers park between two operations and each table must hold exactly
 * its model (stress-check.c): stats.entries and stats.timewait, the
 * cap, every key's lookup, a walk; for the trie also lib/trie/trie.c's bound
 * (internal nodes <= N - 1, memory <= empty + 208 N), strictly. The
 * same once the threads are joined, then destroy must release exactly
 * the models' nodes. The volume is printed per run; the exit status is
 * nonzero on any error.
 *
 * Delays. Built with configure --enable-delay-injection, the library has
 * named points at every publication, unlink, retire and lock-validate
 * step (lib/delay.h, --list-points); CONNTAB_DELAY (or --delay, the same
 * syntax) makes them sleep or spin with a given probability, and each
 * backend's run prints how often every point was passed and delayed.
 * CI runs every backend and key set for a short while under ASan with
 * delays on (.ci/run); the long run is
 *
 *   CONNTAB_DELAY='all:0.005:sleep=50us,*_read_*:0.001:spin=1000' \
 *	tests/stress --seconds 600 --keyset all
 *
 * in a build configured with --enable-delay-injection (and, for ASan's
 * checks too, --enable-sanitizers). Why that setting: a writer's step
 * that sleeps opens a window of 50 us or more, longer than a reader's
 * pass over a chain, so a reader can fall in it whole (a spin of a few
 * microseconds rarely lets one: CONNTAB_DELAY=all:0.01:spin=1000 caught
 * neither of two ordering bugs planted in split and exthash in 2 s,
 * this setting both, in 0.4 to 1.7 s); a reader's points are passed
 * once per node it steps on, so they delay rarely and briefly, or the
 * readers would hardly run. A quarter of the lookups go to the keys the
 * writers are changing at that moment (stress-read.c), where the races
 * are.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stress.h"
#include "stress-delay.h"

struct stress_opt opt = {
	.seconds = 5, .threads = 2, .evictors = 1, .checkpoint_ms = 500,
	.nkeys = 4096,
};
struct stress_run run;

static struct reader rd[MAX_THREADS];
static struct writer wr[MAX_THREADS];
static struct evictor evs[MAX_THREADS];
static struct walker wk, sc, px;

/* --- one run: a backend, a hash, a key set -------------------------- */

static struct conntab *make_table(const struct conntab_config *cfg,
				  size_t *m0)
{
	struct conntab_stats st;
	struct conntab *t = conntab_create(cfg);

	if (!t) {
		perror("stress: conntab_create");
		exit(2);
	}
	conntab_stats(t, &st);
	*m0 = st.memory;
	return t;
}

static void release_main(struct conntab_node *n)
{
	struct tconn *c = conntab_entry(n, struct tconn, node);
	struct tconn **slot = NULL;

	if (c->id < opt.nkeys)
		slot = &run.model.holder[c->id];
	else if (c->id < opt.ev0)
		slot = &run.gr.c[c->id - opt.grow0];
	if (!slot || *slot != c) {
		th_report("destroy released node %p (id %u) not in the model",
			  (void *)n, c->id);
		return;
	}
	*slot = NULL;
	t_conn_free_now(c);
}

static void release_capped(struct conntab_node *n)
{
	struct tconn *c = conntab_entry(n, struct tconn, node);
	struct tconn **slot = NULL;

	if (IS_FIXED(c->id))
		slot = &run.ev.fixed[c->id / 4];
	else if (c->id >= opt.ev0 && c->id < opt.nids)
		slot = &run.ev.holder[c->id - opt.ev0];
	if (!slot || *slot != c || ev_evicted(c)) {
		th_report("destroy released capped node %p (id %u) not in the "
			  "model", (void *)n, c->id);
		return;
	}
	*slot = NULL;
	t_conn_free_now(c);
}

/* Both tables, their fixed and flipping keys in. */
static void setup_tables(enum conntab_backend b, enum conntab_hash h)
{
	struct conntab_config cfg = { .backend = b, .hash = h,
				      .secret = sk_secret };	/* grows */
	struct conntab_key k;
	uint32_t id;

	memset(&run, 0, sizeof(run));
	run.trie = b == CONNTAB_TRIE;
	run.t = make_table(&cfg, &run.m0);
	if (opt.evictors) {
		/*
		 * Room for a quarter of the evictors' keys. A hash table
		 * sized for 16 times the cap is sparse, so that a sample
		 * goes past the newcomer's stripe or segment and try-locks
		 * others (lib/evict.h); the trie takes expected as its
		 * sizing hint, which the bound checked here leaves out.
		 */
		run.ev.cap = opt.nkeys / 4 + opt.nkeys / 4;
		cfg.max_entries = run.ev.cap;
		cfg.expected = run.trie ? 0 : 16 * run.ev.cap;
		run.ev.t = make_table(&cfg, &run.ev.m0);
	}
	run.model.t = run.t;
	run.model.nkeys = opt.nkeys;
	run.model.key = sk_key;
	run.model.holder = calloc(opt.nkeys, sizeof(*run.model.holder));
	run.model.state = calloc(opt.nkeys, sizeof(*run.model.state));
	run.model.gen = calloc(opt.nkeys, sizeof(*run.model.gen));
	run.ev.fixed = calloc(opt.nkeys / 4, sizeof(*run.ev.fixed));
	run.ev.holder = calloc(opt.nkeys, sizeof(*run.ev.holder));
	run.seen = calloc(opt.nids, 1);
	if (!run.model.holder || !run.model.state || !run.model.gen ||
	    !run.ev.fixed || !run.ev.holder || !run.seen) {
		perror("stress");
		exit(2);
	}
	for (id = 0; id < opt.nkeys; id++) {
		if (IS_CHURN(id))
			continue;
		sk_key(&k, id);
		run.model.holder[id] = t_conn_new(id);
		run.model.state[id] = CONNTAB_ESTABLISHED;
		if (conntab_insert(run.t, &run.model.holder[id]->node, &k))
			th_report("initial insert of key %u failed", id);
		if (!IS_FIXED(id) || !run.ev.t)
			continue;
		run.ev.fixed[id / 4] = t_conn_new(id);
		if (conntab_insert(run.ev.t, &run.ev.fixed[id / 4]->node, &k))
			th_report("initial capped insert of key %u failed", id);
	}
}

static void start(pthread_t *tid, void *(*fn)(void *), void *arg)
{
	if (pthread_create(tid, NULL, fn, arg)) {
		perror("pthread_create");
		exit(2);
	}
}

/* Start every thread; their progress counters go into @progress. */
static size_t start_threads(unsigned long **progress)
{
	size_t i, np = 0;

	memset(rd, 0, sizeof(rd));
	memset(wr, 0, sizeof(wr));
	memset(evs, 0, sizeof(evs));
	wk.walks = wk.visits = wk.calls = 0;
	sc.walks = sc.visits = sc.calls = 0;
	px.walks = px.visits = px.calls = 0;
	wk.rng = opt.seed * 0x2545f491ull + 5;
	sc.rng = opt.seed * 0x9e3779b1ull + 7;
	px.rng = opt.seed * 0x85ebca6bull + 9;
	run.gr.rng = opt.seed * 31 + 17;
	run.writers = opt.threads + 1 + opt.evictors;
	for (i = 0; i < opt.threads; i++) {
		rd[i].rng = opt.seed * 0x9e3779b9ull + 2 * i + 1;
		wr[i].rng = opt.seed * 0x7f4a7c15ull + 2 * i + 1;
		wr[i].idx = (unsigned int)i;
		start(&rd[i].tid, reader_main, &rd[i]);
		start(&wr[i].tid, writer_main, &wr[i]);
		progress[np++] = &rd[i].progress;
		progress[np++] = &wr[i].progress;
	}
	for (i = 0; i < opt.evictors; i++) {
		evs[i].rng = opt.seed * 0xc2b2ae35ull + 2 * i + 1;
		evs[i].idx = (unsigned int)i;
		start(&evs[i].tid, evictor_main, &evs[i]);
		progress[np++] = &evs[i].progress;
	}
	start(&wk.tid, walker_main, &wk);
	start(&sc.tid, scanner_main, &sc);
	start(&px.tid, prefixer_main, &px);
	start(&run.gr.tid, grower_main, &run.gr);
	progress[np++] = &wk.walks;
	progress[np++] = &sc.walks;
	progress[np++] = &px.walks;
	progress[np++] = &run.gr.progress;
	return np;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The run time, with a checkpoint every checkpoint_ms, stopping early on
 * an error; a beat now and then; then on until every thread has done
 * some work, however loaded the machine. A checkpoint stops the writers
 * for as long as it takes (long chains, delays in its own lookups): the
 * next one waits at least four times that, so that the writers run at
 * least 80% of the time.
 */
static void run_for(const char *name, unsigned long *const *ctrs, size_t n)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	double t0 = now_s(), cp = opt.checkpoint_ms / 1000.0, next = t0 + cp;
	double beat = t0 + 60, c0;

	while (now_s() < t0 + opt.seconds && !th_errors()) {
		nanosleep(&tick, NULL);
		if (opt.checkpoint_ms && now_s() >= next) {
			c0 = now_s();
			st_checkpoint();
			next = now_s() + (4 * (now_s() - c0) > cp ?
					  4 * (now_s() - c0) : cp);
		}
		if (now_s() >= beat) {
			printf("  %s: %.0f s\n", name, now_s() - t0);
			fflush(stdout);
			beat += 60;
		}
	}
	th_run_for(0, ctrs, n, 1);
}

/* Retired nodes first, then the tables and what they hold. */
static void teardown(void)
{
	uint32_t id;

	rcu_barrier();
	conntab_destroy(run.t, release_main);
	for (id = 0; id < opt.ev0; id++)
		if (id < opt.nkeys ? run.model.holder[id] != NULL :
		    run.gr.c[id - opt.grow0] != NULL)
			th_report("destroy did not release key %u", id);
	if (run.ev.t) {
		conntab_destroy(run.ev.t, release_capped);
		for (id = 0; id < opt.nkeys / 4; id++)
			if (run.ev.fixed[id])
				th_report("destroy did not release capped "
					  "key %u", 4 * id);
		evict_model_clear(&run.ev);
	}
	th_quarantine_flush();
	free(run.model.holder);
	free(run.model.state);
	free(run.model.gen);
	free(run.ev.fixed);
	free(run.ev.holder);
	free(run.seen);
}

static int stress_run(enum conntab_backend b, enum conntab_hash h,
		      unsigned int set)
{
	unsigned long *progress[2 * MAX_THREADS + MAX_THREADS + 4];
	unsigned long lookups = 0, present = 0, misses = 0, absent = 0;
	unsigned long writes = 0, victims = 0, enospc = 0;
	char name[64];
	double t0 = now_s();
	size_t i, np;
	int bad = 0;

	if (b == CONNTAB_TRIE)
		snprintf(name, sizeof(name), "%s %s", conntab_backend_name(b),
			 sk_name(set));
	else
		snprintf(name, sizeof(name), "%s/%s %s",
			 conntab_backend_name(b), conntab_hash_name(h),
			 sk_name(set));
	th_reset();
	sk_build(set, h);
	setup_tables(b, h);
	np = start_threads(progress);
	alarm((unsigned int)opt.seconds + 600);	/* a hang is a failure */
	run_for(name, progress, np);
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < opt.threads; i++) {
		pthread_join(rd[i].tid, NULL);
		pthread_join(wr[i].tid, NULL);
		lookups += rd[i].lookups;
		present += rd[i].present;
		misses += rd[i].misses;
		absent += rd[i].absent;
		writes += wr[i].writes;
	}
	for (i = 0; i < opt.evictors; i++) {
		pthread_join(evs[i].tid, NULL);
		writes += evs[i].inserts + evs[i].removes;
		victims += evs[i].victims;
		enospc += evs[i].enospc;
	}
	pthread_join(wk.tid, NULL);
	pthread_join(sc.tid, NULL);
	pthread_join(px.tid, NULL);
	pthread_join(run.gr.tid, NULL);
	alarm(0);
	writes += run.gr.writes;
	st_check_tables();
	teardown();

	printf("stress %s: %.1fs, %u readers, %u writers, %u evictors: "
	       "lookups %lu (of keys present throughout %lu, misses %lu; "
	       "of keys out throughout %lu), writes %lu, evictions %lu "
	       "(no room %lu), walks %lu, scan passes %lu (%lu calls), "
	       "prefix walks %lu, grow cycles %lu, checkpoints %lu",
	       name, now_s() - t0, opt.threads, opt.threads, opt.evictors,
	       lookups, present, misses, absent, writes, victims, enospc,
	       wk.walks, sc.walks, sc.calls, px.walks, run.gr.cycles,
	       run.checkpoints);
	if (run.trie)
		printf(", trie memory at most %zu B/entry over empty "
		       "(bound 208)", run.bound_worst);
	printf(", errors %lu\n", th_errors());
	if (th_errors()) {
		printf("stress %s: FAILED, first error: %s\n", name,
		       th_first_error());
		bad = 1;
	}
	fflush(stdout);
	return bad;
}

/* --- options -------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: stress [OPTION]...\n"
		"  --seconds N        run time per backend, hash and key set "
		"(default 5)\n"
		"  --backend B        only this backend (default: every "
		"available)\n"
		"  --hash H           only this hash: siphash, aes (default: "
		"each the CPU runs)\n"
		"  --threads N        readers, and as many writers (default 2)\n"
		"  --evictors N       evictors of the capped table (default 1; "
		"0: no capped table)\n"
		"  --seed S           random seed (default: from the clock)\n"
		"  --keys N           fixed, flipping and churn keys, a "
		"multiple of 4 (default 4096)\n"
		"  --keyset LIST      key sets, comma-separated, or all "
		"(default mixed; --list-keysets)\n"
		"  --checkpoint-ms N  writers parked and tables checked every "
		"N ms (default 500; 0: at the end only)\n"
		"  --delay SPEC       delays, as CONNTAB_DELAY (builds with "
		"--enable-delay-injection)\n"
		"  --list-points      the delay points, and what each delays\n"
		"  --list-keysets     the key sets\n"
		"\n"
		"CONNTAB_DELAY=RULE[,RULE...], RULE = PATTERN:PROB[:ACTION]\n"
		"  PATTERN  a point name, a glob over them (xh_*, *_unlink*), "
		"or all\n"
		"  PROB     probability of a delay at each pass, 0 to 1\n"
		"  ACTION   spin=N (up to N pauses; default spin=1000), "
		"sleep=N[ns|us|ms] (up to N; us),\n"
		"           or yield; a later rule overrides an earlier one "
		"for the points it names\n"
		"  e.g. CONNTAB_DELAY='all:0.005:sleep=50us,*_read_*:0.001:"
		"spin=1000' \\\n"
		"       tests/stress --seconds 600 --keyset all\n");
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

/* --keyset: a mask of sets. */
static unsigned int keyset_arg(const char *s)
{
	char buf[256], *tok, *save = NULL;
	unsigned int mask = 0;
	int i;

	if (!strcmp(s, "all"))
		return (1u << sk_count()) - 1;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		i = sk_find(tok);
		if (i < 0) {
			fprintf(stderr, "stress: no key set %s "
				"(--list-keysets)\n", tok);
			exit(2);
		}
		mask |= 1u << i;
	}
	return mask;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "backend", required_argument, NULL, 'b' },
		{ "hash", required_argument, NULL, 'H' },
		{ "threads", required_argument, NULL, 't' },
		{ "evictors", required_argument, NULL, 'e' },
		{ "seed", required_argument, NULL, 'r' },
		{ "keys", required_argument, NULL, 'k' },
		{ "keyset", required_argument, NULL, 'K' },
		{ "checkpoint-ms", required_argument, NULL, 'c' },
		{ "delay", required_argument, NULL, 'd' },
		{ "list-points", no_argument, NULL, 'P' },
		{ "list-keysets", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum conntab_backend bs[8];
	enum conntab_hash hs[4];
	const char *delay = NULL;
	unsigned int sets = 1, set;
	size_t nb, nh, i, j;
	int c, b = -1, h = -1, failed = 0;

	opt.seed = (uint64_t)time(NULL);
	while ((c = getopt_long(argc, argv, "s:b:H:t:e:r:k:K:c:d:h", lopts,
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
		case 'e':
			opt.evictors = (unsigned int)num_arg(optarg,
							     "evictors");
			break;
		case 'r':
			opt.seed = num_arg(optarg, "seed");
			break;
		case 'k':
			opt.nkeys = (uint32_t)num_arg(optarg, "keys");
			break;
		case 'K':
			sets = keyset_arg(optarg);
			break;
		case 'c':
			opt.checkpoint_ms = num_arg(optarg, "checkpoint-ms");
			break;
		case 'd':
			delay = optarg;
			break;
		case 'P':
			sd_list_points(stdout);
			return 0;
		case 'L':
			for (set = 0; set < sk_count(); set++)
				printf("%-11s %s\n", sk_name(set),
				       sk_what(set));
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || opt.threads < 1 || opt.threads > MAX_THREADS ||
	    opt.evictors > MAX_THREADS || opt.nkeys < 4 ||
	    opt.nkeys > (1u << 22) || opt.nkeys % 4) {
		usage(stderr);
		return 2;
	}
	if (sd_setup(delay))
		return 2;
	opt.grow0 = opt.nkeys;
	opt.ev0 = opt.grow0 + NGROW;
	opt.nids = opt.ev0 + opt.nkeys;
	if (visited_init(&wk.vs, opt.nids) || visited_init(&sc.vs, opt.nids) ||
	    visited_init(&px.vs, opt.nids)) {
		perror("stress");
		return 2;
	}
	printf("stress: %lu s per backend, hash and key set, seed %llu, %u "
	       "keys + %u growth keys + %u capped keys\n", opt.seconds,
	       (unsigned long long)opt.seed, opt.nkeys, NGROW,
	       opt.evictors ? opt.nkeys : 0);
	if (sd_setting())
		printf("stress: delays: %s\n", sd_setting());
	rcu_register_thread();
	nb = t_backends(bs, 8);
	nh = t_hashes(hs, 4);
	for (i = 0; i < nb; i++) {
		if (b >= 0 && (int)bs[i] != b)
			continue;
		for (j = 0; j < nh; j++) {
			enum conntab_hash hj = hs[j];
			char what[40];

			if (bs[i] == CONNTAB_TRIE) {
				if (j)
					break;
				hj = CONNTAB_HASH_AUTO;
			} else if (h >= 0 && (int)hj != h) {
				continue;
			}
			sd_reset();
			for (set = 0; set < sk_count(); set++)
				if (sets & 1u << set)
					failed |= stress_run(bs[i], hj, set);
			snprintf(what, sizeof(what), "%s%s%s",
				 conntab_backend_name(bs[i]),
				 hj == CONNTAB_HASH_AUTO ? "" : "/",
				 hj == CONNTAB_HASH_AUTO ? "" :
				 conntab_hash_name(hj));
			sd_report(what);
		}
	}
	sd_report_total();
	rcu_unregister_thread();
	sk_free();
	visited_free(&wk.vs);
	visited_free(&sc.vs);
	visited_free(&px.vs);
	return failed;
}
