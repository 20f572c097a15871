/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE against CONNTAB_CHAINED, same keys, same run: lookup and
 * batch lookup ns at 1M and 4M random IPv4 and 1M random IPv6
 * connections, insert ns, memory per entry, depth; insert+remove
 * throughput with one and two writer threads; and the trie's worst key
 * sets for memory (a binary tree of deep IPv6 branch points) and depth
 * (a comb); conntab_walk_prefix for one local endpoint. Absolute times
 * depend on the machine; compare the ratios.
 *
 * Usage: trie-vs-chained [--quick] [--reps R]
 *   --quick  N = 64K and 256K instead of 1M and 4M (seconds, not minutes)
 *
 * Output: tab-separated "workload impl n threads value unit", header first.
 * Times are CPU time of the measuring thread (see cpu_ns), minimum of R
 * repetitions (default 3); writers also report wall-clock writes/s.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int reps = 3;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * The calling thread's CPU time. Every figure below is per CPU time, not
 * wall time: on a shared, oversubscribed machine the wall clock also
 * counts the slices other processes run in, which swamps the difference
 * between two tables. Cache interference from neighbours still shows;
 * the minimum over the repetitions is reported, the least disturbed run.
 */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);

	if (!p) {
		perror("calloc");
		exit(1);
	}
	return p;
}

static void out(const char *w, const char *impl, size_t n, int thr, double v,
		const char *unit)
{
	printf("%s\t%s\t%zu\t%d\t%.1f\t%s\n", w, impl, n, thr, v, unit);
	fflush(stdout);
}

/* Random keys, no duplicates (probability ~0 at these sizes; checked). */
static void gen_random(struct conntab_key *k, size_t n, int v6, uint64_t seed)
{
	uint64_t s = seed;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t a = rnd(&s), b = rnd(&s);

		if (v6) {
			struct in6_addr l, r;
			uint64_t c = rnd(&s), d = rnd(&s);

			memcpy(&l, &a, 8);
			memcpy((char *)&l + 8, &b, 8);
			memcpy(&r, &c, 8);
			memcpy((char *)&r + 8, &d, 8);
			conntab_key_v6(&k[i], IPPROTO_TCP, &l,
				       (uint16_t)(c >> 7), &r,
				       (uint16_t)(d >> 9));
		} else {
			conntab_key_v4(&k[i], IPPROTO_TCP, (uint32_t)a,
				       (uint16_t)(a >> 32), (uint32_t)b,
				       (uint16_t)(b >> 32));
		}
	}
}

static double minimum(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

struct set {
	const char *name;
	struct conntab_key *keys;	/* insert order */
	struct conntab_key *probe;	/* the same keys, shuffled */
	size_t n;
};

static void shuffle_probe(struct set *s)
{
	uint64_t r = 12345;
	size_t i;

	s->probe = xcalloc(s->n, sizeof(*s->probe));
	memcpy(s->probe, s->keys, s->n * sizeof(*s->probe));
	for (i = s->n - 1; i > 0; i--) {
		size_t j = rnd(&r) % (i + 1);
		struct conntab_key t = s->probe[i];

		s->probe[i] = s->probe[j];
		s->probe[j] = t;
	}
}

/* Lookups of all keys in random order, one at a time; ns per lookup. */
static double time_lookup(struct conntab *t, const struct set *s, size_t *hit)
{
	size_t i, found = 0;
	double t0 = cpu_ns();

	rcu_read_lock();
	for (i = 0; i < s->n; i++)
		found += conntab_lookup(t, &s->probe[i]) != NULL;
	rcu_read_unlock();
	*hit = found;
	return (cpu_ns() - t0) / s->n;
}

static double time_batch(struct conntab *t, const struct set *s, size_t *hit)
{
	struct conntab_node *o[16];
	size_t i, found = 0;
	double t0 = cpu_ns();

	rcu_read_lock();
	for (i = 0; i + 16 <= s->n; i += 16)
		found += conntab_lookup_batch(t, &s->probe[i], o, 16);
	rcu_read_unlock();
	*hit = found;
	return (cpu_ns() - t0) / (double)(s->n - s->n % 16);
}

static void run_set(enum conntab_backend b, const struct set *s)
{
	const char *impl = conntab_backend_name(b);
	struct conntab_config cfg = { .backend = b, .expected = s->n };
	struct conntab_node *nodes = xcalloc(s->n, sizeof(*nodes));
	struct conntab_stats st;
	struct conntab *t = conntab_create(&cfg);
	double v[16] = { 0 }, t0;
	size_t i, hit;
	int r;

	if (!t) {
		perror("conntab_create");
		exit(1);
	}
	t0 = cpu_ns();
	for (i = 0; i < s->n; i++) {
		if (conntab_insert(t, &nodes[i], &s->keys[i])) {
			fprintf(stderr, "%s: insert %zu failed\n", impl, i);
			exit(1);
		}
	}
	out(s->name, impl, s->n, 1, (cpu_ns() - t0) / s->n, "ns/insert");
	for (r = 0; r < reps; r++) {
		v[r] = time_lookup(t, s, &hit);
		if (hit != s->n) {
			fprintf(stderr, "%s: %zu of %zu found\n", impl, hit,
				s->n);
			exit(1);
		}
	}
	out(s->name, impl, s->n, 1, minimum(v, reps), "ns/lookup");
	for (r = 0; r < reps; r++)
		v[r] = time_batch(t, s, &hit);
	out(s->name, impl, s->n, 1, minimum(v, reps), "ns/lookup(batch16)");
	conntab_stats(t, &st);
	out(s->name, impl, s->n, 1, (double)st.memory / s->n, "B/entry");
	out(s->name, impl, s->n, 1, (double)st.max_depth, "max_depth");
	out(s->name, impl, s->n, 1, (double)st.buckets, "buckets/nodes");
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(nodes);
}

/* Writers: each inserts then removes its own slice, @rounds times. */
struct wr_arg {
	struct conntab *t;
	const struct conntab_key *keys;
	struct conntab_node *nodes;
	size_t n;
	int rounds;
	double cpu_ns;		/* the thread's CPU time */
};


static void *writer(void *p)
{
	struct wr_arg *a = p;
	double c0 = cpu_ns();
	size_t i;
	int r;

	rcu_register_thread();
	for (r = 0; r < a->rounds; r++) {
		for (i = 0; i < a->n; i++)
			if (conntab_insert(a->t, &a->nodes[i], &a->keys[i]))
				abort();
		for (i = 0; i < a->n; i++)
			if (conntab_remove(a->t, &a->nodes[i]))
				abort();
		/*
		 * A removed node may be reinserted at once here: nothing
		 * frees it, and a reader that still sees it finds the same
		 * key. The trie's retired inner nodes go to call_rcu.
		 */
		for (i = 0; i < a->n; i++)
			conntab_node_init(&a->nodes[i]);
	}
	rcu_unregister_thread();
	a->cpu_ns = cpu_ns() - c0;
	return NULL;
}

/*
 * Writes per second with 1 and 2 writer threads on disjoint keys of one
 * table that holds @s (so writers work at the depth of a full table).
 */
static void run_writers(enum conntab_backend b, const struct set *s,
			const struct set *w)
{
	const char *impl = conntab_backend_name(b);
	struct conntab_config cfg = { .backend = b,
				      .expected = s->n + w->n };
	struct conntab_node *nodes = xcalloc(s->n + w->n, sizeof(*nodes));
	struct conntab *t = conntab_create(&cfg);
	int thr, i;
	size_t j;

	for (j = 0; j < s->n; j++)
		conntab_insert(t, &nodes[j], &s->keys[j]);
	for (thr = 1; thr <= 2; thr++) {
		pthread_t tid[2];
		struct wr_arg a[2];
		double t0 = now_ns(), el, cpu = 0, writes;

		for (i = 0; i < thr; i++) {
			a[i].t = t;
			a[i].n = w->n / 2;
			a[i].keys = w->keys + i * a[i].n;
			a[i].nodes = nodes + s->n + i * a[i].n;
			a[i].rounds = 2;
			pthread_create(&tid[i], NULL, writer, &a[i]);
		}
		for (i = 0; i < thr; i++) {
			pthread_join(tid[i], NULL);
			cpu += a[i].cpu_ns;
		}
		el = now_ns() - t0;
		writes = thr * 2.0 * a[0].rounds * a[0].n;
		out("writers", impl, s->n, thr, writes / (el / 1e9) / 1e6,
		    "Mwrites/s");
		/*
		 * On a shared machine threads may not get a core each; CPU
		 * time per write shows lock contention (spinning) directly.
		 */
		out("writers", impl, s->n, thr, cpu / writes, "cpu-ns/write");
	}
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(nodes);
}

static int count_fn(struct conntab_node *n, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

/*
 * conntab_walk_prefix for one local endpoint (bits = 80: zone, proto,
 * family, local address and port) in a table of @n random keys of which
 * n / 64 belong to 10.0.0.1:443: the trie descends to the endpoint's
 * subtree, a hash backend walks the whole table and filters.
 */
static void run_prefix(enum conntab_backend b, size_t n)
{
	const char *impl = conntab_backend_name(b);
	struct conntab_config cfg = { .backend = b, .expected = n };
	struct conntab_node *nodes = xcalloc(n, sizeof(*nodes));
	struct conntab_key *k = xcalloc(n, sizeof(*k)), probe;
	struct conntab *t = conntab_create(&cfg);
	size_t i, seen = 0;
	double v[16] = { 0 }, t0;
	int r;

	gen_random(k, n, 0, 4242);
	for (i = 0; i < n; i += 64) {
		k[i].laddr.v4.s_addr = htonl(0x0a000001);
		k[i].lport = htons(443);
	}
	for (i = 0; i < n; i++)
		if (conntab_insert(t, &nodes[i], &k[i]))
			abort();
	probe = k[0];
	for (r = 0; r < reps; r++) {
		seen = 0;
		t0 = cpu_ns();
		rcu_read_lock();
		conntab_walk_prefix(t, &probe, 80, count_fn, &seen);
		rcu_read_unlock();
		v[r] = cpu_ns() - t0;
	}
	if (seen != (n + 63) / 64) {
		fprintf(stderr, "%s: prefix walk saw %zu\n", impl, seen);
		exit(1);
	}
	out("prefix-endpoint", impl, n, 1, minimum(v, reps) / 1e3,
	    "us/walk");
	out("prefix-endpoint", impl, n, 1, minimum(v, reps) / seen,
	    "ns/match");
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(nodes);
	free(k);
}

/* Deep binary IPv6 tree (memory worst case), pairs in the last bit. */
static void gen_v6_binary(struct conntab_key *k, size_t n)
{
	struct in6_addr l, r;
	size_t i, j;

	inet_pton(AF_INET6, "2001:db8::1", &l);
	for (i = 0; i + 1 < n; i += 2) {
		uint8_t s[48] = { 0 };

		for (j = 0; j < 20; j++) {
			unsigned int bit = (56 + (unsigned int)j) * 4;

			if ((i / 2) >> j & 1)
				s[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		}
		memcpy(&r, s + 22, 16);
		conntab_key_v6(&k[i], IPPROTO_TCP, &l, htons(443), &r,
			       htons(1000));
		k[i + 1] = k[i];
		k[i + 1].rport |= htons(1);
	}
}

/* Comb: key j differs from the all-zero key in bit 32 + j only. */
static size_t gen_comb(struct conntab_key *k)
{
	struct in6_addr z;
	unsigned int bit;
	size_t n = 0;

	memset(&z, 0, sizeof(z));
	for (bit = 32; bit < 320; bit++, n++) {
		uint8_t s[40] = { 0 };

		s[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		conntab_key_v6(&k[n], IPPROTO_TCP, &z, 0, &z, 0);
		memcpy(&k[n].laddr, s + 4, 16);
		memcpy(&k[n].lport, s + 20, 2);
		memcpy(&k[n].raddr, s + 22, 16);
		memcpy(&k[n].rport, s + 38, 2);
	}
	return n;
}

static void run_random(const char *name, size_t n, int v6)
{
	struct set s = { .name = name, .n = n };

	s.keys = xcalloc(n, sizeof(*s.keys));
	gen_random(s.keys, n, v6, n * 2 + (size_t)v6);
	shuffle_probe(&s);
	run_set(CONNTAB_CHAINED, &s);
	run_set(CONNTAB_TRIE, &s);
	free(s.keys);
	free(s.probe);
}

int main(int argc, char **argv)
{
	size_t n1 = 1 << 20, n4 = 4 << 20, nw = 256 << 10;
	struct set s, w;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			n1 = 64 << 10;
			n4 = 256 << 10;
			nw = 64 << 10;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
			if (reps < 1 || reps > 16)
				reps = 3;
		} else {
			fprintf(stderr, "usage: %s [--quick] [--reps R]\n",
				argv[0]);
			return 2;
		}
	}
	rcu_register_thread();
	printf("workload\timpl\tn\tthreads\tvalue\tunit\n");
	run_random("random-v4", n1, 0);
	run_random("random-v4", n4, 0);
	run_random("random-v6", n1, 1);

	/* Writers on a table of n1 random IPv4 keys, nw churn keys. */
	s.n = n1;
	s.keys = xcalloc(n1, sizeof(*s.keys));
	gen_random(s.keys, n1, 0, 77);
	w.n = nw;
	w.keys = xcalloc(nw, sizeof(*w.keys));
	gen_random(w.keys, nw, 0, 78);
	run_writers(CONNTAB_CHAINED, &s, &w);
	run_writers(CONNTAB_TRIE, &s, &w);
	run_prefix(CONNTAB_CHAINED, n1);
	run_prefix(CONNTAB_TRIE, n1);
	free(s.keys);
	free(w.keys);

	/* Worst cases for the trie's memory and depth. */
	s.name = "worst-mem-v6";
	s.n = n1;
	s.keys = xcalloc(n1, sizeof(*s.keys));
	gen_v6_binary(s.keys, n1);
	shuffle_probe(&s);
	run_set(CONNTAB_CHAINED, &s);
	run_set(CONNTAB_TRIE, &s);
	free(s.keys);
	free(s.probe);

	s.name = "worst-depth-comb";
	s.keys = xcalloc(320, sizeof(*s.keys));
	s.n = gen_comb(s.keys);
	shuffle_probe(&s);
	run_set(CONNTAB_CHAINED, &s);
	run_set(CONNTAB_TRIE, &s);
	free(s.keys);
	free(s.probe);
	rcu_unregister_thread();
	return 0;
}
