/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lookup cost of CONNTAB_SPLIT against CONNTAB_CHAINED holding the same
 * entries: N established plus W time-wait connections (default 1M + 1M),
 * both tables sized with expected = N + W and alive at once, measured in
 * alternation so that the ratio holds on a noisy machine.
 *
 * Workloads, each a random sequence of successful lookups, single thread:
 *   est    keys of established entries only
 *   tw     keys of time-wait entries only
 *   mixed  any entry, est and tw in their proportion
 *   batch  as mixed, through conntab_lookup_batch in groups of 16
 *   miss   keys that are absent (split's miss path checks the stripe's
 *          sequence and scans twice)
 *
 * Usage: split-vs-chained [-n N] [-w W] [-l LOOKUPS] [-r REPS]
 * Prints one line per backend and workload: the median ns/lookup (thread
 * CPU time) over the repetitions and the spread (min..max), then the
 * tables' stats.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urcu.h>
#include <conntab/conntab.h>

#define MAX_REPS	15
#define CHUNK		1024	/* lookups per read-side critical section */

enum { W_EST, W_TW, W_MIXED, W_BATCH, W_MISS, W_COUNT };
static const char *const wname[W_COUNT] = {
	"est", "tw", "mixed", "batch", "miss",
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/*
 * The thread's CPU time, not wall time: on a machine shared with other
 * work, time spent descheduled would swamp a 100 ns operation.
 */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct table {
	enum conntab_backend be;
	struct conntab *t;
	struct conntab_node *nodes;
	double ns[W_COUNT][MAX_REPS];
};

static size_t n_est = 1 << 20, n_tw = 1 << 20;

/*
 * Key i of the n_est + n_tw in the tables is a time-wait one? Spread
 * evenly (Bresenham), so the states interleave in insertion order and
 * neither sits nearer the head of chained's chains (which push at the
 * head).
 */
static int key_is_tw(size_t i)
{
	size_t total = n_est + n_tw;

	return (i + 1) * n_est / total == i * n_est / total;
}

/* Insert all keys, then flip the time-wait ones in place. */
static int fill(struct table *tb, const struct conntab_key *keys)
{
	size_t i, total = n_est + n_tw;
	struct conntab_config cfg = { .backend = tb->be, .expected = total };

	tb->t = conntab_create(&cfg);
	tb->nodes = calloc(total, sizeof(*tb->nodes));
	if (!tb->t || !tb->nodes)
		return -ENOMEM;
	for (i = 0; i < total; i++)
		if (conntab_insert(tb->t, &tb->nodes[i], &keys[i]))
			return -EEXIST;
	for (i = 0; i < total; i++)
		if (key_is_tw(i) &&
		    conntab_timewait(tb->t, &tb->nodes[i], &tb->nodes[i]))
			return -EINVAL;
	return 0;
}

/* ns per lookup of keys[idx[0..l)]; every key must be found, or none. */
static double run(struct table *tb, const struct conntab_key *keys,
		  const uint32_t *idx, size_t l, int batch, int absent)
{
	struct conntab_key bk[16];
	struct conntab_node *out[16];
	size_t i, j, found = 0;
	double t0, t1;

	t0 = now_ns();
	for (i = 0; i < l; i += CHUNK) {
		size_t end = i + CHUNK < l ? i + CHUNK : l;

		rcu_read_lock();
		if (batch) {
			for (j = i; j + 16 <= end; j += 16) {
				size_t k;

				for (k = 0; k < 16; k++)
					bk[k] = keys[idx[j + k]];
				found += conntab_lookup_batch(tb->t, bk, out,
							      16);
			}
		} else {
			for (j = i; j < end; j++)
				found += conntab_lookup(tb->t,
							&keys[idx[j]]) != NULL;
		}
		rcu_read_unlock();
	}
	t1 = now_ns();
	if (found != (absent ? 0 : batch ? l / 16 * 16 : l)) {
		fprintf(stderr, "%s: %zu of %zu found\n",
			conntab_backend_name(tb->be), found, l);
		exit(1);
	}
	return (t1 - t0) / (double)(batch ? l / 16 * 16 : l);
}

int main(int argc, char **argv)
{
	size_t l = 4 << 20, total, ne = 0, nt = 0, i;
	struct table tabs[2] = { { .be = CONNTAB_CHAINED },
				 { .be = CONNTAB_SPLIT } };
	struct conntab_key *keys;
	uint32_t *idx[W_COUNT], *est_keys, *tw_keys;
	int reps = 5, r, w, b, opt;

	while ((opt = getopt(argc, argv, "n:w:l:r:")) != -1) {
		switch (opt) {
		case 'n':
			n_est = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			n_tw = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			l = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-w W] "
				"[-l LOOKUPS] [-r REPS]\n", argv[0]);
			return 2;
		}
	}
	total = n_est + n_tw;
	if (!n_est || !n_tw || !l || reps < 1 || reps > MAX_REPS ||
	    total + n_est > UINT32_MAX) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}

	rcu_register_thread();
	/* Random IPv4 TCP tuples: local and remote address and port. */
	/* The keys in the tables, then n_est more that are absent. */
	keys = calloc(total + n_est, sizeof(*keys));
	est_keys = malloc(n_est * sizeof(*est_keys));
	tw_keys = malloc(n_tw * sizeof(*tw_keys));
	if (!keys || !est_keys || !tw_keys) {
		perror("malloc");
		return 1;
	}
	for (w = 0; w < W_COUNT; w++) {
		idx[w] = malloc(l * sizeof(*idx[w]));
		if (!idx[w]) {
			perror("malloc");
			return 1;
		}
	}
	for (i = 0; i < total + n_est; i++) {
		uint64_t a = rng(), p = rng();

		conntab_key_v4(&keys[i], IPPROTO_TCP, (uint32_t)a,
			       (uint16_t)p, (uint32_t)(a >> 32),
			       (uint16_t)(p >> 16));
	}
	for (i = 0; i < total; i++) {
		if (key_is_tw(i))
			tw_keys[nt++] = (uint32_t)i;
		else
			est_keys[ne++] = (uint32_t)i;
	}
	if (ne != n_est || nt != n_tw) {
		fprintf(stderr, "state split %zu + %zu\n", ne, nt);
		return 1;
	}
	for (i = 0; i < l; i++) {
		idx[W_EST][i] = est_keys[rng() % n_est];
		idx[W_TW][i] = tw_keys[rng() % n_tw];
		idx[W_MIXED][i] = (uint32_t)(rng() % total);
		idx[W_BATCH][i] = idx[W_MIXED][i];
		idx[W_MISS][i] = (uint32_t)(total + rng() % n_est);
	}
	for (b = 0; b < 2; b++) {
		int err = fill(&tabs[b], keys);

		if (err) {
			/* A duplicate random tuple is possible but rare. */
			fprintf(stderr, "%s: fill: %s\n",
				conntab_backend_name(tabs[b].be),
				strerror(-err));
			return 1;
		}
	}

	for (r = 0; r < reps; r++)
		for (w = 0; w < W_COUNT; w++)
			for (b = 0; b < 2; b++)
				tabs[b].ns[w][r] = run(&tabs[b], keys, idx[w],
						       l, w == W_BATCH,
						       w == W_MISS);

	printf("# %zu established + %zu time-wait entries, "
	       "%zu lookups x %d reps\n", n_est, n_tw, l, reps);
	printf("%-8s %-6s %8s %18s\n", "backend", "load", "ns/op", "spread");
	for (w = 0; w < W_COUNT; w++) {
		for (b = 0; b < 2; b++) {
			double *v = tabs[b].ns[w];

			qsort(v, (size_t)reps, sizeof(*v), cmp_double);
			printf("%-8s %-6s %8.1f %8.1f..%-8.1f\n",
			       conntab_backend_name(tabs[b].be), wname[w],
			       v[reps / 2], v[0], v[reps - 1]);
		}
	}
	for (b = 0; b < 2; b++) {
		struct conntab_stats st;

		conntab_stats(tabs[b].t, &st);
		printf("# %s: entries %zu timewait %zu buckets %zu "
		       "max_depth %zu memory %zu B\n",
		       conntab_backend_name(tabs[b].be),
		       st.entries, st.timewait, st.buckets, st.max_depth,
		       st.memory);
		conntab_destroy(tabs[b].t, NULL);
		free(tabs[b].nodes);
	}
	rcu_unregister_thread();
	free(keys);
	free(est_keys);
	free(tw_keys);
	for (w = 0; w < W_COUNT; w++)
		free(idx[w]);
	return 0;
}
