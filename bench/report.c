/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Output: one line per result (tab-separated, or JSON lines), the ratios
 * against the machine's floor and against lfht, conntab against each
 * peer in one line each (for users), with --targets the developers'
 * performance targets (met / missed: thresholds live here, in benchmark
 * output, never in tests), and an optional gnuplot plot of ns/lookup
 * against N.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "impl.h"

static struct bench_result *res;
static size_t nres, cap, printed;

void b_record(const struct bench_result *r)
{
	if (nres == cap) {
		cap = cap ? 2 * cap : 256;
		res = realloc(res, cap * sizeof(*res));
		if (!res) {
			perror("conntab-bench");
			exit(1);
		}
	}
	res[nres++] = *r;
}

static const struct bench_result *find(const char *wl, const char *impl,
				       size_t n, unsigned int threads)
{
	size_t i;

	for (i = 0; i < nres; i++)
		if (!strcmp(res[i].workload, wl) &&
		    !strcmp(res[i].impl, impl) && res[i].n == n &&
		    res[i].threads == threads)
			return &res[i];
	return NULL;
}

static double value_of(const char *wl, const char *impl, size_t n,
		       unsigned int threads)
{
	const struct bench_result *r = find(wl, impl, n, threads);

	return r ? r->value : NAN;
}

static double ratio_floor(const struct bench_result *r)
{
	const char *f = r->ratio_kind == R_DEP ? "dependent" :
			r->ratio_kind == R_INDEP ? "16-streams" : NULL;

	return f ? r->value / value_of("floor", f, r->n, 1) : NAN;
}

static double ratio_lfht(const struct bench_result *r)
{
	if (!strcmp(r->impl, "lfht") || !strcmp(r->workload, "floor"))
		return NAN;
	return r->value / value_of(r->workload, "lfht", r->n, r->threads);
}

static void fmt(char *buf, size_t len, double v)
{
	if (isnan(v) || isinf(v))
		snprintf(buf, len, b_opts.json ? "null" : "-");
	else if (fabs(v) >= 10000)
		snprintf(buf, len, "%.0f", v);
	else if (fabs(v) >= 100)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.3g", v);
}

/* The default output: no row of its own, the short table at the end. */
static bool short_output(void)
{
	return !b_opts.json && !b_opts.table && !b_opts.tsv;
}

void b_report_header(void)
{
	if (b_opts.tsv)
		printf("workload\timpl\tn\tthreads\tvalue\tunit\t"
		       "ratio_to_floor\tratio_to_lfht\tmin\tmax\n");
}

/*
 * --table: results [from, nres) as one row per workload and one column per
 * implementation, "value (ratio to lfht)", for people rather than scripts.
 */
static void print_table(size_t from)
{
	const char *impls[16], *wl[64];
	unsigned int thr[64];
	size_t wn[64];		/* flood rows have their own table size */
	const char *unit[64];
	size_t ni = 0, nw = 0, i, j, x;
	char cell[48], a[32], b[32], c[32];

	for (i = from; i < nres; i++) {
		const struct bench_result *r = &res[i];

		if (!strcmp(r->workload, "floor"))
			continue;
		for (j = 0; j < ni && strcmp(impls[j], r->impl); j++)
			;
		if (j == ni && ni < 16)
			impls[ni++] = r->impl;
		for (j = 0; j < nw; j++)
			if (!strcmp(wl[j], r->workload) && thr[j] == r->threads)
				break;
		if (j == nw && nw < 64) {
			wl[nw] = r->workload;
			thr[nw] = r->threads;
			wn[nw] = r->n;
			unit[nw++] = r->unit;
		}
	}
	if (from == nres)
		return;
	fmt(a, sizeof(a), value_of("floor", "dependent", res[from].n, 1));
	fmt(b, sizeof(b), value_of("floor", "16-streams", res[from].n, 1));
	fmt(c, sizeof(c), value_of("floor", "16-key-calls", res[from].n, 1));
	printf("\nn = %zu; floor: dependent load %s ns, 16 streams %s ns/load, "
	       "16-key calls %s ns/key; cells: value (ratio to lfht)\n",
	       res[from].n, a, b, c);
	printf("%-18s %-2s %-9s", "workload", "t", "unit");
	for (j = 0; j < ni; j++)
		printf(" %16s", impls[j]);
	printf("\n");
	for (i = 0; i < nw; i++) {
		printf("%-18s %-2u %-9s", wl[i], thr[i], unit[i]);
		for (j = 0; j < ni; j++) {
			const struct bench_result *r =
				find(wl[i], impls[j], wn[i], thr[i]);

			cell[0] = 0;
			if (r && r->stopped) {
				snprintf(cell, sizeof(cell), "stopped");
			} else if (r) {
				double q = ratio_lfht(r);

				if (r->value >= 1e6)
					snprintf(a, sizeof(a), "%.2fM",
						 r->value / 1e6);
				else
					fmt(a, sizeof(a), r->value);
				fmt(b, sizeof(b), q);
				x = (size_t)snprintf(cell, sizeof(cell),
						     "%s", a);
				if (!isnan(q) && x < sizeof(cell))
					snprintf(cell + x, sizeof(cell) - x,
						 " (%s)", b);
			}
			printf(" %16s", r ? cell : "-");
		}
		printf("\n");
	}
}

/* Print what was recorded since the last flush (ratios need the peers). */
void b_report_flush(void)
{
	char v[32], f[32], l[32], mn[32], mx[32];

	/* Who ran out of time, before the rows that say "stopped". */
	b_budget_notes();
	if (short_output()) {
		printed = nres;
		fflush(stdout);
		return;
	}
	if (b_opts.table) {
		print_table(printed);
		printed = nres;
		fflush(stdout);
		return;
	}
	for (; printed < nres; printed++) {
		const struct bench_result *r = &res[printed];

		fmt(v, sizeof(v), r->value);
		fmt(f, sizeof(f), ratio_floor(r));
		fmt(l, sizeof(l), ratio_lfht(r));
		fmt(mn, sizeof(mn), r->min);
		fmt(mx, sizeof(mx), r->max);
		if (r->stopped && !b_opts.json)
			snprintf(v, sizeof(v), "stopped");
		if (b_opts.json)
			printf("{\"workload\":\"%s\",\"impl\":\"%s\",\"n\":%zu,"
			       "\"threads\":%u,\"value\":%s,\"unit\":\"%s\","
			       "\"ratio_to_floor\":%s,\"ratio_to_lfht\":%s,"
			       "\"min\":%s,\"max\":%s%s}\n",
			       r->workload, r->impl, r->n, r->threads, v,
			       r->unit, f, l, mn, mx,
			       r->stopped ? ",\"stopped\":true" : "");
		else
			printf("%s\t%s\t%zu\t%u\t%s\t%s\t%s\t%s\t%s\t%s\n",
			       r->workload, r->impl, r->n, r->threads, v,
			       r->unit, f, l, mn, mx);
	}
	fflush(stdout);
}

/* How a target compares the measured value with its threshold. */
enum { T_LE, T_LT, T_GE };

static void target(const char *name, const char *impl, double measured,
		   double threshold, int cmp, const char *note)
{
	static const char *const op[] = { "<=", "<", ">=" };
	const char *verdict;
	bool ok;
	char m[32], t[32];

	ok = cmp == T_LE ? measured <= threshold :
	     cmp == T_LT ? measured < threshold : measured >= threshold;
	if (isnan(measured))
		verdict = "n/a";
	else
		verdict = ok ? "met" : "missed";
	fmt(m, sizeof(m), measured);
	fmt(t, sizeof(t), threshold);
	if (b_opts.json)
		printf("{\"target\":\"%s\",\"impl\":\"%s\",\"measured\":%s,"
		       "\"threshold\":\"%s %s\",\"verdict\":\"%s\"}\n",
		       name, impl, m, op[cmp], t, verdict);
	else
		printf("# %-24s %-8s %8s  %-2s %-5s %-6s %s\n", name, impl, m,
		       op[cmp], t, verdict, note);
}

/* The size the targets are stated at: 1M if it ran, else the smallest. */
static size_t target_n(void)
{
	size_t i, best = 0;

	for (i = 0; i < b_opts.nn; i++)
		if (b_opts.n[i] == (1u << 20))
			return b_opts.n[i];
	for (i = 0; i < b_opts.nn; i++)
		if (!best || b_opts.n[i] < best)
			best = b_opts.n[i];
	return best;
}

/* The smallest value of @wl among conntab's backends (*@best: which). */
static double best_backend(const struct bench_impl **im, size_t ni,
			   const char *wl, size_t n, const char **best)
{
	double v = NAN, x;
	size_t i;

	*best = "-";
	for (i = 0; i < ni; i++) {
		if (!(im[i]->flags & BI_CONNTAB) || (im[i]->flags & BI_TWIN))
			continue;
		x = value_of(wl, im[i]->name, n, 1);
		if (!isnan(x) && (isnan(v) || x < v)) {
			v = x;
			*best = im[i]->name;
		}
	}
	return v;
}

/*
 * Real traffic (Dumazet, 2007: "search time under 100 ns, for real
 * traffic"), at Zipf 1.0 and one thread: the best backend under 100 ns
 * one at a time and 50 ns in batches of 16, and every backend ahead of
 * both peers (its time under the faster peer's) on zipf and trains.
 */
static void targets_traffic(const struct bench_impl **im, size_t ni,
			    size_t n)
{
	static const char *const wl[] = { "zipf-s1.00", "trains-s1.00" };
	const char *best, *note = "(needs --zipf 1.0)";
	char name[32];
	double v, peer;
	size_t i, w;

	for (i = 0; i < nres; i++)
		if (!strncmp(res[i].workload, "zipf-", 5) ||
		    !strncmp(res[i].workload, "trains-", 7))
			break;
	if (i == nres)
		return;
	for (i = 0; i < b_opts.nzipf; i++)
		if (b_opts.zipf[i] == 1.0)
			note = "";
	v = best_backend(im, ni, "zipf-s1.00", n, &best);
	target("zipf-s1.00 ns/lookup", best, v, 100, T_LT,
	       *note ? note : "(best backend, one at a time)");
	v = best_backend(im, ni, "zipf-s1.00-b16", n, &best);
	target("zipf-s1.00-b16 ns/lookup", best, v, 50, T_LT,
	       *note ? note : "(best backend, batches of 16)");
	for (w = 0; w < 2; w++) {
		peer = fmin(value_of(wl[w], "lfht", n, 1),
			    value_of(wl[w], "ck_ht", n, 1));
		snprintf(name, sizeof(name), "%s/peers", wl[w]);
		for (i = 0; i < ni; i++)
			if ((im[i]->flags & (BI_CONNTAB | BI_TWIN)) ==
			    BI_CONNTAB)
				target(name, im[i]->name,
				       value_of(wl[w], im[i]->name, n, 1) /
				       peer, 1, T_LT,
				       *note ? note : "(vs the faster of "
				       "lfht, ck_ht)");
	}
}

/*
 * Scans, eviction and pairs, per conntab backend: a scan pass costs at
 * most 1.5 full walks (both budgets), one budget-1000 call under 50 us
 * (stated at 1M), an evicting insert at most 3 plain inserts; a pair
 * insert or removal at most the two single operations it replaces (issue
 * 29: one writer step should not cost more than two).
 */
static void targets_scan_evict(const struct bench_impl **im, size_t ni,
			       size_t n)
{
	static const struct {
		const char *wl, *name;
		double threshold;
		int cmp;
		const char *note;
	} t[] = {
		{ "scan-64/walk", "scan-64 pass/walk", 1.5, T_LE, "" },
		{ "scan-1000/walk", "scan-1000 pass/walk", 1.5, T_LE, "" },
		{ "scan-1000-max", "scan-1000 call ns", 50000, T_LT, "" },
		{ "evict/insert", "evict/insert", 3, T_LE, "" },
		{ "pair-insert/2", "pair-insert/2 inserts", 1, T_LE,
		  "(issue 29)" },
		{ "pair-remove/2", "pair-remove/2 removes", 1, T_LE,
		  "(issue 29)" },
	};
	size_t i, j;

	for (i = 0; i < ni; i++) {
		if (!(im[i]->flags & BI_CONNTAB) || (im[i]->flags & BI_TWIN))
			continue;
		for (j = 0; j < sizeof(t) / sizeof(t[0]); j++)
			if (find(t[j].wl, im[i]->name, n, 1))
				target(t[j].name, im[i]->name,
				       value_of(t[j].wl, im[i]->name, n, 1),
				       t[j].threshold, t[j].cmp, t[j].note);
	}
}

/*
 * The trie's depth, and its lookup against chained's at its first target
 * (1.2x; issue 38 asks 2x, targets_backends()). The note gives the floors
 * of the two shapes (bench/shape.c): what a trie of root -> node -> leaf
 * pays over chained on this machine when its code costs nothing.
 */
static void targets_trie(size_t n)
{
	char note[80];

	if (!find("lookup", "trie", n, 1) && !find("depth", "trie", n, 1))
		return;
	snprintf(note, sizeof(note), "(shape floors: %.2f, dependent %.2f)",
		 value_of("floor", "trie-indep", n, 1) /
		 value_of("floor", "chain-indep", n, 1),
		 value_of("floor", "trie-dep", n, 1) /
		 value_of("floor", "chain-dep", n, 1));
	if (find("lookup", "trie", n, 1))
		target("lookup trie/chained", "trie",
		       value_of("lookup", "trie", n, 1) /
		       value_of("lookup", "chained", n, 1), 1.2, T_LE, note);
	if (find("depth", "trie", n, 1))
		target("depth nodes", "trie", value_of("depth", "trie", n, 1),
		       4, T_LE, "");
}

/* "(shape floor R)": floor @shape-@row over chain-@row (bench/shape.c). */
static void shape_note(char *note, size_t size, const char *shape,
		       const char *row, size_t n)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "%s-%s", shape, row);
	snprintf(b, sizeof(b), "chain-%s", row);
	snprintf(note, size, "(shape floor %.2f)",
		 value_of("floor", a, n, 1) / value_of("floor", b, n, 1));
}

/*
 * Issue 38: each backend's time over chained's on the same keys. split
 * and exthash: lookup and burst of 16 at most 1.2x, insert and remove
 * 1.3x, and exthash's memory at most 12 B/entry; the trie: lookup,
 * insert and remove 2x, burst of 16 1.4x. The lookup's, insert's and
 * remove's notes give the floor of the backend's shape over chained's
 * (bench/shape.c: exthash's chains from heads, the trie's root -> node
 * -> leaf), what the shape alone costs when the code costs nothing.
 */
static void targets_backends(size_t n)
{
	static const struct {
		const char *impl, *shape;
		double read, batch, write;
	} b[] = {
		{ "split", NULL, 1.2, 1.2, 1.3 },
		{ "exthash", "xchain", 1.2, 1.2, 1.3 },
		{ "trie", "trie", 2.0, 1.4, 2.0 },
	};
	static const char *const wl[] = { "lookup", "batch16", "insert",
					  "remove" };
	char name[32], note[80];
	size_t i, j;

	for (i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		/* Any of the four run: its lines (n/a for the others). */
		for (j = 0; j < sizeof(wl) / sizeof(wl[0]); j++)
			if (find(wl[j], b[i].impl, n, 1))
				break;
		if (j == sizeof(wl) / sizeof(wl[0]))
			continue;
		for (j = 0; j < sizeof(wl) / sizeof(wl[0]); j++) {
			note[0] = 0;
			if (b[i].shape && j != 1)
				shape_note(note, sizeof(note), b[i].shape,
					   j == 0 ? "indep" : wl[j], n);
			snprintf(name, sizeof(name), "%s %s/chained", wl[j],
				 b[i].impl);
			target(name, b[i].impl,
			       value_of(wl[j], b[i].impl, n, 1) /
			       value_of(wl[j], "chained", n, 1),
			       j == 0 ? b[i].read : j == 1 ? b[i].batch :
			       b[i].write, T_LE, note);
		}
	}
	if (find("memory", "exthash", n, 1))
		target("memory B/entry", "exthash",
		       value_of("memory", "exthash", n, 1), 12, T_LE,
		       "(issue 38)");
}

/*
 * Issue 28: ahead of DPDK's rte_hash-mw (the multi-writer match) in the
 * same run, per conntab hash backend: bursts of 16 and 32 at most 0.80x
 * its bulk lookup, single lookups 0.90x, inserts and removes 1.0x,
 * memory per entry at most its own; and lookup-dep at most 1.3
 * dependent loads (the floor's). Printed only when rte_hash-mw ran.
 */
static void targets_rte(const struct bench_impl **im, size_t ni, size_t n)
{
	static const struct {
		const char *wl, *name;
		double threshold;
	} t[] = {
		{ "batch16", "batch16/rte_hash-mw", 0.80 },
		{ "batch32", "batch32/rte_hash-mw", 0.80 },
		{ "lookup", "lookup/rte_hash-mw", 0.90 },
		{ "insert", "insert/rte_hash-mw", 1.0 },
		{ "remove", "remove/rte_hash-mw", 1.0 },
		{ "memory", "memory/rte_hash-mw", 1.0 },
	};
	const char *peer = "rte_hash-mw";
	size_t i, j;

	if (!find("lookup", peer, n, 1) && !find("insert", peer, n, 1) &&
	    !find("memory", peer, n, 1))
		return;
	for (i = 0; i < ni; i++) {
		const char *nm = im[i]->name;

		if (!(im[i]->flags & BI_CT_HASH) || (im[i]->flags & BI_TWIN))
			continue;
		for (j = 0; j < sizeof(t) / sizeof(t[0]); j++)
			if (find(t[j].wl, nm, n, 1) && find(t[j].wl, peer, n, 1))
				target(t[j].name, nm,
				       value_of(t[j].wl, nm, n, 1) /
				       value_of(t[j].wl, peer, n, 1),
				       t[j].threshold, T_LE, "(issue 28)");
		if (find("lookup-dep", nm, n, 1))
			target("lookup-dep loads", nm,
			       value_of("lookup-dep", nm, n, 1) /
			       value_of("floor", "dependent", n, 1), 1.3,
			       T_LE, "(issue 28: dependent loads)");
	}
}

void b_report_targets(void)
{
	const struct bench_impl *im[B_MAX_IMPLS];
	size_t ni = b_impls(im, B_MAX_IMPLS), i, n = target_n();
	size_t big = 16u << 20;
	const char *best = NULL;
	double bestv = NAN, x;
	char call_floor[48];

	/* Nothing ran at that size (a capture replayed alone). */
	for (i = 0; i < nres; i++)
		if (res[i].n == n && strcmp(res[i].workload, "floor"))
			break;
	if (i == nres)
		return;
	/* What a 16-key call of two loads per key costs at best. */
	snprintf(call_floor, sizeof(call_floor), "(16-key calls alone: %.2f)",
		 value_of("floor", "16-key-calls", n, 1) /
		 value_of("floor", "16-streams", n, 1));
	if (!b_opts.json)
		printf("\n# targets at n=%zu, one thread, %s (ratios within "
		       "this run)\n", n, b_opts.v6 ? "IPv6" : "IPv4");
	/* The targets are the implementations', not their twins'. */
	for (i = 0; i < ni; i++) {
		if (!(im[i]->flags & BI_CT_HASH) || (im[i]->flags & BI_TWIN))
			continue;
		x = value_of("lookup", im[i]->name, n, 1);
		if (!isnan(x) && (!best || x < bestv)) {
			best = im[i]->name;
			bestv = x;
		}
	}
	if (best)
		target("lookup/lfht", best,
		       bestv / value_of("lookup", "lfht", n, 1), 0.40, T_LE,
		       "(best hash backend)");
	for (i = 0; i < ni; i++) {
		const char *nm = im[i]->name;

		if (!(im[i]->flags & BI_CONNTAB) || (im[i]->flags & BI_TWIN) ||
		    !find("lookup", nm, n, 1))
			continue;
		target("lookup/lfht", nm, value_of("lookup", nm, n, 1) /
		       value_of("lookup", "lfht", n, 1), 0.40, T_LE, "");
		target("lookup-dep/floor-dep", nm,
		       value_of("lookup-dep", nm, n, 1) /
		       value_of("floor", "dependent", n, 1), 2.0, T_LE, "");
		target("batch16/floor-16streams", nm,
		       value_of("batch16", nm, n, 1) /
		       value_of("floor", "16-streams", n, 1), 2.5, T_LE,
		       call_floor);
		target("insert/lfht", nm, value_of("insert", nm, n, 1) /
		       value_of("insert", "lfht", n, 1), 0.35, T_LE, "");
		target("remove/lfht", nm, value_of("remove", nm, n, 1) /
		       value_of("remove", "lfht", n, 1), 0.35, T_LE, "");
		target("churn 2r/1r lookups/s", nm,
		       value_of("churn-scale", nm, n, 2), 1.9, T_GE, "");
		target("memory B/entry", nm, value_of("memory", nm, n, 1),
		       16, T_LE, "");
		target("lookup 16M/1M", nm, value_of("lookup", nm, big, 1) /
		       value_of("lookup", nm, 1u << 20, 1), 1.5, T_LE,
		       find("lookup", nm, big, 1) ? "" : "(needs --n 1M,16M)");
	}
	targets_trie(n);
	targets_backends(n);
	targets_rte(im, ni, n);
	targets_traffic(im, ni, n);
	targets_scan_evict(im, ni, n);
	fflush(stdout);
}

/*
 * What a user wants to know from a run, printed last: conntab against
 * each peer, one line each, a few figures from this run's own rows at the
 * targets' N, one thread. conntab is its first backend in the run
 * (chained, the default, unless --impl leaves it out); each figure is its
 * time (or memory) over the peer's, so below 1 conntab is faster (or
 * smaller). A figure either side lacks is left out; a peer stopped by the
 * time budget says so.
 */
/*
 * @wl's result of @impl at @n: one thread's, else the first. The flood
 * rows are at the flood's own table size (bench/flood.c): any n.
 */
static const struct bench_result *find_any(const char *wl, const char *impl,
					   size_t n)
{
	const struct bench_result *r = find(wl, impl, n, 1);
	bool any_n = !strncmp(wl, "flood", 5);
	size_t i;

	for (i = 0; !r && i < nres; i++)
		if (!strcmp(res[i].workload, wl) &&
		    !strcmp(res[i].impl, impl) && (any_n || res[i].n == n))
			r = &res[i];
	return r && !r->stopped && r->value > 0 ? r : NULL;
}

/* @a's @wl over @b's, or NAN. */
static double ratio_of(const char *wl, const char *a, const char *b,
		       size_t n)
{
	const struct bench_result *x = find_any(wl, a, n);
	const struct bench_result *y = find_any(wl, b, n);

	return x && y ? x->value / y->value : NAN;
}

/*
 * A flood's lookups over lookups of random keys in the same table, of one
 * @impl (bench/flood.c's flood-protection row).
 */
static double flood(const char *impl, size_t n)
{
	const struct bench_result *f = find_any("flood-protection", impl, n);

	return f ? f->value : NAN;
}

/*
 * The concurrent peer (plain aside) with the smallest @wl at @n that has
 * a figure, or NULL.
 */
static const char *best_peer(const struct bench_impl **im, size_t ni,
			     const char *wl, size_t n)
{
	const struct bench_result *r, *best = NULL;
	size_t i;

	for (i = 0; i < ni; i++) {
		if (im[i]->flags & (BI_CONNTAB | BI_TWIN) ||
		    !strcmp(im[i]->name, "plain"))
			continue;
		r = find_any(wl, im[i]->name, n);
		if (r && (!best || r->value < best->value))
			best = r;
	}
	return best ? best->impl : NULL;
}

/* "0.52x", or "-" where either side has no figure. */
static const char *times(char *buf, size_t len, double q)
{
	if (isnan(q) || isinf(q))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2fx", q);
	return buf;
}

/*
 * The default output: at one size (1M when run, else the smallest), one
 * row per implementation with the figures that tell the backends apart,
 * then one line per backend saying what it buys, as ratios of this run's
 * figures. Every figure is also a row of --tsv, --table and --json.
 */
void b_report_choose(void)
{
	static const struct {
		const char *wl, *head;
		double scale;	/* shown: value / scale */
		enum b_workload w;	/* the workload that makes it */
	} col[] = {
		{ "lookup", "lookup", 1, W_LOOKUP },
		{ "batch16", "batch16", 1, W_BATCH },
		{ "insert", "insert", 1, W_INSERT },
		{ "remove", "remove", 1, W_REMOVE },
		{ "memory", "B/entry", 1, W_MEMORY },
		{ "grow", "grow", 1, W_GROW },
		{ "timewait", "tw Mop/s", 1e6, W_TIMEWAIT },
		{ "prefix", "prefix us", 1, W_PREFIX },
		{ "flood-known", "flood", 1, W_FLOOD },
	};
	const struct bench_impl *im[B_MAX_IMPLS];
	size_t ni = b_impls(im, B_MAX_IMPLS), n = target_n(), i, j;
	const char *peer;
	char v[32], a[16], b[16], c[16];
	bool any = false;

	if (!short_output())
		return;
	for (i = 0; i < ni && !any; i++)
		for (j = 0; j < sizeof(col) / sizeof(col[0]); j++)
			any = any || find_any(col[j].wl, im[i]->name, n) ||
			      b_budget_stopped(B_W(col[j].w), im[i], n);
	if (!any)
		return;
	printf("\n# backends and peers at n=%zu: ns per lookup, per key in "
	       "batches of 16, per insert, remove,\n# insert from empty "
	       "(grow), lookup among keys that collide under a known secret\n"
	       "# (flood, in a table of its own size); bytes per entry; "
	       "million TIME_WAIT\n# transitions a second; us per prefix "
	       "walk. --table or --tsv: every result\n", n);
	printf("%-12s", "impl");
	for (j = 0; j < sizeof(col) / sizeof(col[0]); j++)
		printf(" %9s", col[j].head);
	printf("\n");
	for (i = 0; i < ni; i++) {
		if (im[i]->flags & BI_TWIN)
			continue;
		printf("%-12s", im[i]->name);
		for (j = 0; j < sizeof(col) / sizeof(col[0]); j++) {
			const struct bench_result *r =
				find_any(col[j].wl, im[i]->name, n);

			if (r)
				fmt(v, sizeof(v), r->value / col[j].scale);
			else if (b_budget_stopped(B_W(col[j].w), im[i], n))
				snprintf(v, sizeof(v), "stopped");
			else
				snprintf(v, sizeof(v), "-");
			printf(" %9s", v);
		}
		printf("\n");
	}
	printf("# what each backend buys, this run's ratios (below 1: "
	       "less time or memory):\n");
	for (i = 0; i < ni; i++) {
		const char *name = im[i]->name;

		if (!(im[i]->flags & BI_CONNTAB) || (im[i]->flags & BI_TWIN))
			continue;
		if (!strcmp(name, "chained") &&
		    (peer = best_peer(im, ni, "lookup", n)))
			printf("# chained: speed: lookup %s, insert %s the "
			       "fastest concurrent peer's (%s);\n#   lookup "
			       "%s plain's (no locks, no RCU)\n",
			       times(a, sizeof(a),
				     ratio_of("lookup", name, peer, n)),
			       times(b, sizeof(b),
				     ratio_of("insert", name, peer, n)), peer,
			       times(c, sizeof(c),
				     ratio_of("lookup", name, "plain", n)));
		else if (!strcmp(name, "split"))
			printf("# split: TIME_WAIT in chains of its own: "
			       "established lookups among TIME_WAIT entries "
			       "%s chained's,\n#   TIME_WAIT transitions %s "
			       "as many a second as chained's\n",
			       times(a, sizeof(a),
				     ratio_of("lookup-est", name, "chained",
					      n)),
			       times(b, sizeof(b),
				     ratio_of("timewait", name, "chained",
					      n)));
		else if (!strcmp(name, "exthash")) {
			peer = best_peer(im, ni, "grow", n);
			printf("# exthash: grows online, no sizing hint: "
			       "inserts from empty %s the fastest\n#   "
			       "resizing peer's (%s), memory %s chained's\n",
			       times(a, sizeof(a), peer ?
				     ratio_of("grow", name, peer, n) : NAN),
			       peer ? peer : "none",
			       times(b, sizeof(b),
				     ratio_of("memory", name, "chained", n)));
		}
		else if (!strcmp(name, "trie"))
			printf("# trie: prefix walks %s chained's; no secret, "
			       "nothing to flood (chained's lookups\n#   "
			       "among keys made for its secret, known: %s "
			       "its lookups of random keys)\n",
			       times(a, sizeof(a),
				     ratio_of("prefix", name, "chained", n)),
			       times(b, sizeof(b), flood("chained", n)));
	}
	fflush(stdout);
}

void b_report_summary(void)
{
	const struct bench_impl *im[B_MAX_IMPLS];
	size_t ni = b_impls(im, B_MAX_IMPLS), n = target_n(), i, j, o;
	const char *ct = NULL;
	char zipf[24], line[400];
	const char *const fig[][2] = {
		{ "lookup", "lookup" }, { "batch16", "batch16" },
		{ "batch32", "batch32" }, { "insert", "insert" }, { "remove", "remove" },
		{ "memory", "memory" }, { zipf, "zipf" },
	};
	bool head = false;

	snprintf(zipf, sizeof(zipf), "zipf-s%.2f", b_opts.zipf[0]);
	for (i = 0; i < ni && !ct; i++)
		if ((im[i]->flags & BI_CONNTAB) && !(im[i]->flags & BI_TWIN))
			ct = im[i]->name;
	if (!ct)
		return;
	for (i = 0; i < ni; i++) {
		const char *peer = im[i]->name;

		if (im[i]->flags & (BI_CONNTAB | BI_TWIN))
			continue;
		o = 0;
		line[0] = 0;
		for (j = 0; j < sizeof(fig) / sizeof(fig[0]); j++) {
			const struct bench_result *a, *b;
			bool stopped;
			char v[32];

			a = find(fig[j][0], ct, n, 1);
			b = find(fig[j][0], peer, n, 1);
			/* The heap's growth can read <= 0 at small N. */
			if (!a || !b || o >= sizeof(line) ||
			    (!a->stopped && a->value <= 0) ||
			    (!b->stopped && b->value <= 0))
				continue;
			stopped = a->stopped || b->stopped;
			if (stopped)
				snprintf(v, sizeof(v), "%s",
					 b_opts.json ? "null" : "stopped");
			else
				snprintf(v, sizeof(v),
					 b_opts.json ? "%.3g" : "%.2fx",
					 a->value / b->value);
			o += (size_t)snprintf(line + o, sizeof(line) - o,
					      b_opts.json ? ",\"%s\":%s" :
					      o ? ", %s %s" : "%s %s",
					      fig[j][1], v);
		}
		if (!o)
			continue;
		if (b_opts.json) {
			printf("{\"summary\":\"%s vs %s\",\"n\":%zu%s}\n",
			       ct, peer, n, line);
			continue;
		}
		if (!head)
			printf("\n# conntab against each peer at n=%zu, one "
			       "thread: %s's time (memory) over the peer's, "
			       "below 1 is faster (smaller)\n", n, ct);
		head = true;
		printf("# %s vs %-10s %s\n", ct, peer, line);
	}
	fflush(stdout);
}

/*
 * --plot: up to three panels through gnuplot, each drawn when its results
 * exist: ns per uniform random lookup against N (with the dependent-load
 * floor), and ns per lookup of zipf and of trains against the Zipf
 * exponent at the targets' N, one thread, one at a time (solid) and in
 * batches of 16 (dashed). An implementation has the same colour in all.
 */
enum { PL_LOOKUP, PL_ZIPF, PL_TRAINS, PL_PANELS };

static const char *const pl_prefix[PL_PANELS] = { NULL, "zipf", "trains" };

/* Is @r a point of @panel's curve for @impl (@batched), and where? */
static bool plot_point(const struct bench_result *r, int panel,
		       const char *impl, bool batched, size_t n, double *x)
{
	const char *w = r->workload, *rest;
	size_t len;
	char *end;

	if (strcmp(r->impl, impl) || r->threads != 1)
		return false;
	if (panel == PL_LOOKUP) {
		*x = (double)r->n;
		return !batched && !strcmp(w, "lookup");
	}
	len = strlen(pl_prefix[panel]);
	if (r->n != n || strncmp(w, pl_prefix[panel], len) ||
	    strncmp(w + len, "-s", 2))
		return false;
	*x = strtod(w + len + 2, &end);
	rest = end;
	return batched ? !strcmp(rest, "-b16") : !*rest;
}

/* Points of one curve; writes them as datablock $c@id if @g. */
static size_t plot_block(FILE *g, unsigned int id, int panel,
			 const char *impl, bool batched, size_t n)
{
	size_t j, pts = 0;
	double x;

	for (j = 0; j < nres; j++) {
		if (!plot_point(&res[j], panel, impl, batched, n, &x))
			continue;
		if (g && !pts++)
			fprintf(g, "$c%u << EOD\n", id);
		else if (!g)
			pts++;
		if (g)
			fprintf(g, "%g %g %g %g\n", x, res[j].value,
				res[j].min, res[j].max);
	}
	if (g && pts)
		fprintf(g, "EOD\n");
	return pts;
}

static void plot_xtics_n(FILE *g)
{
	unsigned int i;

	fprintf(g, "set logscale x 2\nset xtics (");
	for (i = 0; i < b_opts.nn; i++) {
		size_t n = b_opts.n[i];
		bool mega = n % (1u << 20) == 0, kilo = n % 1024 == 0;

		fprintf(g, "%s\"%zu%s\" %zu", i ? ", " : "",
			mega ? n >> 20 : kilo ? n >> 10 : n,
			mega ? "M" : kilo ? "K" : "", n);
	}
	fprintf(g, ")\n");
}

/*
 * The x range of @panel. Where all its points share one x (one N, one
 * exponent), autoscaling leaves gnuplot an empty range, which it widens
 * itself with a warning on stderr ("empty x range"): give that x a range
 * around it instead (a factor of 2 either side on the log N axis).
 */
static void plot_xrange(FILE *g, int panel, const struct bench_impl **im,
			size_t ni, size_t n)
{
	double x, lo = 0, hi = 0;
	bool any = false;
	size_t i, j;
	int b;

	for (j = 0; j < nres; j++) {
		for (i = 0; i < ni; i++)
			for (b = 0; b < 2; b++) {
				if (!plot_point(&res[j], panel, im[i]->name,
						b, n, &x))
					continue;
				lo = any && lo < x ? lo : x;
				hi = any && hi > x ? hi : x;
				any = true;
			}
		/* The lookup panel also draws the floor, at its own N. */
		if (panel == PL_LOOKUP && !strcmp(res[j].workload, "floor") &&
		    !strcmp(res[j].impl, "dependent")) {
			x = (double)res[j].n;
			lo = any && lo < x ? lo : x;
			hi = any && hi > x ? hi : x;
			any = true;
		}
	}
	if (!any || lo < hi)
		fprintf(g, "set autoscale x\n");
	else if (panel == PL_LOOKUP)
		fprintf(g, "set xrange [%g:%g]\n", lo / 2, hi * 2);
	else
		fprintf(g, "set xrange [%g:%g]\n", lo - 0.5, hi + 0.5);
}

int b_report_plot(const char *file)
{
	const struct bench_impl *im[B_MAX_IMPLS];
	size_t ni = b_impls(im, B_MAX_IMPLS), i, n = target_n(), len;
	size_t pts[PL_PANELS][B_MAX_IMPLS][2], total[PL_PANELS] = { 0 };
	int p, b, panels = 0;
	bool first;
	FILE *g;

	for (p = 0; p < PL_PANELS; p++)
		for (i = 0; i < ni; i++)
			for (b = 0; b < 2; b++) {
				pts[p][i][b] = plot_block(NULL, 0, p,
							  im[i]->name, b, n);
				total[p] += pts[p][i][b];
			}
	for (p = 0; p < PL_PANELS; p++)
		panels += total[p] > 0;
	g = panels ? popen("gnuplot", "w") : NULL;
	if (!g)
		return -1;
	/* The data inline, one datablock per curve: $c<panel><impl><b>. */
	for (p = 0; p < PL_PANELS; p++)
		for (i = 0; i < ni; i++)
			for (b = 0; b < 2; b++)
				plot_block(g, (unsigned int)(p * 100 +
							     i * 2 + b),
					   p, im[i]->name, b, n);
	fprintf(g, "$floor << EOD\n");
	for (i = 0; i < nres; i++)
		if (!strcmp(res[i].workload, "floor") &&
		    !strcmp(res[i].impl, "dependent"))
			fprintf(g, "%zu %g\n", res[i].n, res[i].value);
	fprintf(g, "EOD\n");
	len = strlen(file);
	/* FILE.png: a bitmap (pngcairo), anything else SVG. */
	fprintf(g, "set terminal %s size %d,440 font 'sans,11'\n"
		   "set output '%s'\nset multiplot layout 1,%d\n"
		   "set ylabel 'ns/lookup'\nset key top right noenhanced\n"
		   "set grid\nset yrange [0:*]\n"
		   "set offsets graph 0.05, graph 0.05\n",
		   len > 4 && !strcmp(file + len - 4, ".png") ? "pngcairo"
							    : "svg dynamic",
		   panels > 1 ? 560 * panels : 720, file, panels);
	for (p = 0; p < PL_PANELS; p++) {
		if (!total[p])
			continue;
		if (p == PL_LOOKUP) {
			fprintf(g, "set title 'uniform random lookups, one "
				   "thread'\nset xlabel 'connections (N)'\n");
			plot_xtics_n(g);
		} else {
			fprintf(g, "unset logscale x\nset xtics auto\n"
				   "set title '%s at N = %zu, one thread "
				   "(dashed: batches of 16)'\n"
				   "set xlabel 'Zipf exponent s'\n",
				   pl_prefix[p], n);
		}
		plot_xrange(g, p, im, ni, n);
		fprintf(g, "plot ");
		first = true;
		for (i = 0; i < ni; i++)
			for (b = 0; b < 2; b++) {
				if (!pts[p][i][b])
					continue;
				fprintf(g, "%s$c%zu using 1:2:3:4 with "
					   "yerrorlines linecolor %zu dashtype "
					   "%d title '%s'", first ? "" : ", ",
					(size_t)p * 100 + i * 2 + (size_t)b,
					i + 1, b ? 2 : 1,
					b ? "" : im[i]->name);
				first = false;
			}
		if (p == PL_LOOKUP)
			fprintf(g, ", $floor using 1:2 with linespoints "
				   "linecolor 'gray40' linewidth 2 "
				   "title 'floor (dependent load)'");
		fprintf(g, "\n");
	}
	fprintf(g, "unset multiplot\n");
	return pclose(g) ? -1 : 0;
}
