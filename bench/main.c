/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conntab-bench: options, the list of implementations, and the driver.
 *
 * For every size N: make the keys, measure the machine's floor, then run
 * every selected workload on every implementation, one table at a time,
 * and print that size's results (the ratios need all peers of the size).
 * See doc/performance.md and the design's benchmark protocol.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "impl.h"
#include "pad.h"

struct bench_opts b_opts;

const char *const b_workload_names[W_COUNT] = {
	[W_FLOOR] = "floor",
	[W_LOOKUP] = "lookup",
	[W_LOOKUP_DEP] = "lookup-dep",
	[W_LOOKUP_MISS] = "lookup-miss",
	[W_LOOKUP_COLD] = "lookup-cold",
	[W_BATCH] = "batch",
	[W_INSERT] = "insert",
	[W_REMOVE] = "remove",
	[W_CHURN] = "churn",
	[W_GROW] = "grow",
	[W_TIMEWAIT] = "timewait",
	[W_MEMORY] = "memory",
	[W_FLOOD] = "flood",
	[W_ZIPF] = "zipf",
	[W_TRAINS] = "trains",
	[W_PCAP] = "pcap",
	[W_WRITERS] = "writers",
	[W_PREFIX] = "prefix",
	[W_SCAN] = "scan",
	[W_EVICT] = "evict",
	[W_PAIR] = "pair",
	[W_SCALE] = "scale",
};

static bool impl_selected(const char *name)
{
	const char *p = b_opts.impls;
	size_t len = strlen(name);

	if (!p)
		return true;
	while (*p) {
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return false;
}

/*
 * Twins of the selected implementations: --grown's unsized ones,
 * NAME-grown; --pad's conntab backends with padded calls, NAME-pad.
 */
enum { TWIN_GROWN, TWIN_PAD, TWIN_KINDS };
static const struct {
	const char *suffix;
	unsigned int of;	/* twins of the implementations with these */
	unsigned int adds;	/* and the flags a twin has besides */
} twin_kinds[TWIN_KINDS] = {
	[TWIN_GROWN] = { "grown", BI_GROWS, BI_UNSIZED },
	[TWIN_PAD] = { "pad", BI_CONNTAB, BI_PADDED },
};
static struct bench_impl twins[TWIN_KINDS][B_MAX_IMPLS];
static char twin_names[TWIN_KINDS][B_MAX_IMPLS][32];
/* check_impls(): every implementation of the build, BI_ASKED ones too. */
static bool impls_all;
/* Twins b_impls() had no room for (B_MAX_IMPLS), which main() says. */
static size_t twins_left;

static bool twin_wanted(unsigned int kind)
{
	return kind == TWIN_GROWN ? b_opts.grown : b_opts.pad != 0;
}

/* Twin @kind of selected implementation @i, @im: NAME-suffix. */
static struct bench_impl *twin(unsigned int kind, size_t i,
			       const struct bench_impl *im)
{
	struct bench_impl *t = &twins[kind][i];

	*t = *im;
	snprintf(twin_names[kind][i], sizeof(twin_names[kind][i]), "%s-%s",
		 im->name, twin_kinds[kind].suffix);
	t->name = twin_names[kind][i];
	t->flags |= BI_TWIN | twin_kinds[kind].adds;
	if (kind == TWIN_PAD)
		b_impl_pad(t);
	return t;
}

size_t b_impls(const struct bench_impl **out, size_t max)
{
	const struct bench_impl *all[B_MAX_IMPLS];
	size_t na = 0, n = 0, i, sel;
	unsigned int k;

	for (i = 0; i < 4; i++)
		if (conntab_backend_available(b_impl_conntab[i].backend))
			all[na++] = &b_impl_conntab[i];
	all[na++] = &b_impl_lfht;
	all[na++] = &b_impl_lfht_jhash;
#ifdef HAVE_CK
	all[na++] = &b_impl_ck;
#endif
	all[na++] = &b_impl_plain;
#ifdef HAVE_DPDK
	all[na++] = &b_impl_rte;
	all[na++] = &b_impl_rte_mw;
	all[na++] = &b_impl_rte_mw_jhash;
#endif
#ifdef HAVE_VPPINFRA
	if (b_bihash_runs())
		all[na++] = &b_impl_bihash;
#endif
	for (i = 0; i < na && n < max; i++)
		if (impls_all || (impl_selected(all[i]->name) &&
				  (b_opts.impls || !(all[i]->flags & BI_ASKED))))
			out[n++] = all[i];
	sel = n;
	twins_left = 0;
	for (k = 0; k < TWIN_KINDS; k++)
		for (i = 0; twin_wanted(k) && i < sel; i++) {
			if (!(out[i]->flags & twin_kinds[k].of))
				continue;
			if (n == max)
				twins_left++;
			else
				out[n++] = twin(k, i, out[i]);
		}
	return n;
}

static uint64_t progress_last;
static unsigned long failures;

void b_failed(const char *fmt, ...)
{
	va_list ap;

	failures++;
	fputs("conntab-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void b_progress(const char *fmt, ...)
{
	static int tty = -1;
	uint64_t now = b_now_ns();
	char buf[120];
	va_list ap;

	if (tty < 0)
		tty = isatty(2);
	/* On a terminal: one line, rewritten; elsewhere: every 5 s. */
	if (!tty && now - progress_last < 5000000000ull)
		return;
	progress_last = now;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, tty ? "\r\033[K%s" : "%s\n", buf);
}

static void progress_done(void)
{
	if (isatty(2))
		fprintf(stderr, "\r\033[K");
}

/*
 * A mistake on the command line: one line that names the option and
 * says what is wrong with its value, and exit status 2. The whole usage
 * would bury the one line that matters; --help prints it.
 */
static void __attribute__((noreturn, format(printf, 2, 3)))
bad_opt(const char *opt, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "conntab-bench: %s%s", opt, *opt ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* A whole decimal number of @opt in [@lo, @hi]; @what names its kind. */
static unsigned long long opt_uint(const char *opt, const char *arg,
				   unsigned long long lo,
				   unsigned long long hi, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (end == arg || *end)
		bad_opt(opt, "'%s' is not a number", arg);
	/* strtoull() takes "-1" for 2^64 - 1. */
	if (errno || *arg == '-' || v < lo || v > hi)
		bad_opt(opt, "%s is not %s (%llu to %llu)", arg, what, lo, hi);
	return v;
}

/* A decimal fraction of @opt in [@lo, @hi]. */
static double opt_double(const char *opt, const char *arg, double lo,
			 double hi, const char *what)
{
	char *end;
	double v;

	v = strtod(arg, &end);
	if (end == arg || *end)
		bad_opt(opt, "'%s' is not a number", arg);
	if (!(v >= lo && v <= hi))
		bad_opt(opt, "%s is not %s (%.10g to %.10g)", arg, what, lo,
			hi);
	return v;
}

/*
 * Table sizes: "1M" = 2^20, "64K" = 2^16, "1000" = 1000. At least 64
 * keys (the flood tables and the churn writer's lag take a share of N),
 * at most 2^31 (the objects alone are then 128 GiB).
 */
#define B_N_MIN		64ull
#define B_N_MAX		(1ull << 31)

static size_t parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s)
		bad_opt("--n", "'%s' is not a table size (a number, suffix K, "
			"M or G)", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		bad_opt("--n", "'%s' is not a table size (a number, suffix K, "
			"M or G)", s);
	if (errno || *s == '-' || v < B_N_MIN || v > B_N_MAX)
		bad_opt("--n", "%s is not a table size (64 to 2G)", s);
	return (size_t)v;
}

/*
 * A copy of the comma list @arg of @opt for strtok_r(); empty items are
 * refused (a stray comma is a typo, not a wish for a default).
 */
static char *list_dup(const char *opt, const char *arg)
{
	char *copy;

	if (!*arg || *arg == ',' || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,"))
		bad_opt(opt, "'%s' has an empty item", arg);
	copy = strdup(arg);
	if (!copy) {
		perror("conntab-bench");
		exit(1);
	}
	return copy;
}

static void parse_sizes(const char *arg)
{
	char *copy, *tok, *save;

	b_opts.nn = 0;
	copy = list_dup("--n", arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (b_opts.nn == B_MAX_N)
			bad_opt("--n", "more than %d sizes", B_MAX_N);
		b_opts.n[b_opts.nn++] = parse_size(tok);
	}
	free(copy);
}

/* "0.8,1.0,1.2": Zipf exponents in [0, 10]. */
static void parse_zipf(const char *arg)
{
	char *copy, *tok, *save;

	b_opts.nzipf = 0;
	copy = list_dup("--zipf", arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (b_opts.nzipf == B_MAX_ZIPF)
			bad_opt("--zipf", "more than %d exponents",
				B_MAX_ZIPF);
		b_opts.zipf[b_opts.nzipf++] =
			opt_double("--zipf", tok, 0, 10, "a Zipf exponent");
	}
	free(copy);
}

/*
 * --grid R[,R...]xW[,W...]: the scale workload's reader counts (0 to
 * 64) by writer counts (0 to 32), at most B_MAX_GRID each, not both 0.
 */
static void grid_list(const char *arg, unsigned int *v, unsigned int *nv,
		      unsigned long long hi, const char *what)
{
	char *copy, *tok, *save;

	*nv = 0;
	copy = list_dup("--grid", arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*nv == B_MAX_GRID)
			bad_opt("--grid", "more than %d %s counts", B_MAX_GRID,
				what);
		v[(*nv)++] = (unsigned int)opt_uint("--grid", tok, 0, hi,
						    "a thread count");
	}
	free(copy);
}

static void parse_grid(const char *arg)
{
	const char *x = strchr(arg, 'x');
	char rd[128];
	unsigned int a, b;

	if (!x || strchr(x + 1, 'x') || (size_t)(x - arg) >= sizeof(rd))
		bad_opt("--grid", "'%s' is not READERSxWRITERS (e.g. "
			"0,8x1,2,4,8)", arg);
	memcpy(rd, arg, (size_t)(x - arg));
	rd[x - arg] = 0;
	grid_list(rd, b_opts.grid_r, &b_opts.grid_nr, B_MAX_THREADS,
		  "reader");
	grid_list(x + 1, b_opts.grid_w, &b_opts.grid_nw, B_MAX_THREADS / 2,
		  "writer");
	for (a = 0; a < b_opts.grid_nr; a++)
		for (b = 0; b < b_opts.grid_nw; b++)
			if (!b_opts.grid_r[a] && !b_opts.grid_w[b])
				bad_opt("--grid", "a cell of 0 readers and 0 "
					"writers");
}

/* pcap named in --workload (not through all): it needs --pcap. */
static bool pcap_named;

static void parse_workloads(const char *arg)
{
	char *copy, *tok, *save, known[256];
	size_t o = 0;
	int i;

	b_opts.workloads = 0;
	copy = list_dup("--workload", arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			b_opts.workloads = (1ul << W_COUNT) - 1;
			continue;
		}
		for (i = 0; i < W_COUNT; i++)
			if (!strcmp(tok, b_workload_names[i]))
				break;
		if (i < W_COUNT) {
			b_opts.workloads |= 1ul << i;
			pcap_named |= i == W_PCAP;
			continue;
		}
		for (i = 0; i < W_COUNT && o < sizeof(known); i++)
			o += (size_t)snprintf(known + o, sizeof(known) - o,
					      "%s ", b_workload_names[i]);
		bad_opt("--workload", "unknown workload '%s' (known: %sall)",
			tok, known);
	}
	free(copy);
}

/*
 * Every implementation name this program knows, whether or not this
 * build or library has it: the four backends, then the peers.
 */
static const char *const impl_names[] = {
	"chained", "split", "exthash", "trie",
	"lfht", "lfht-jhash", "ck_ht", "plain",
	"rte_hash", "rte_hash-mw", "rte_hash-mw-jhash", "bihash",
};

/*
 * --impl: every name must be one this build runs; an unknown one is an
 * error listing those, not a name silently matched by nothing.
 */
static void check_impls(const char *arg)
{
	const struct bench_impl *all[B_MAX_IMPLS];
	char *copy, *tok, *save, known[160];
	size_t na, i, o = 0;
	bool was_grown = b_opts.grown;
	unsigned int was_pad = b_opts.pad;

	b_opts.impls = NULL;
	b_opts.grown = false;
	b_opts.pad = 0;
	impls_all = true;
	na = b_impls(all, B_MAX_IMPLS);
	impls_all = false;
	b_opts.grown = was_grown;
	b_opts.pad = was_pad;
	for (i = 0; i < na && o < sizeof(known); i++)
		o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s",
				      i ? " " : "", all[i]->name);
	copy = list_dup("--impl", arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < na && strcmp(tok, all[i]->name); i++)
			;
		if (i < na)
			continue;
		for (i = 0; i < sizeof(impl_names) / sizeof(impl_names[0]);
		     i++)
			if (!strcmp(tok, impl_names[i]))
				bad_opt("--impl", "%s is not in this build "
					"or library (here: %s)", tok, known);
		bad_opt("--impl", "unknown implementation '%s' (known: %s)",
			tok, known);
	}
	free(copy);
	b_opts.impls = arg;
}

/*
 * What --hash gives conntab's tables on this CPU (the peers then hash
 * alike), and a line for the header: the hash each implementation's
 * tables use. Exits if the hash asked for cannot run here.
 */
static void resolve_hash(const struct bench_impl **im, size_t ni,
			 char *line, size_t len)
{
	struct conntab_config cfg = { .backend = CONNTAB_CHAINED,
				      .hash = b_opts.hash };
	struct conntab *t = conntab_create(&cfg);
	size_t i, o = 0, col = 0;
	const char *h;

	if (!t)
		bad_opt("--hash", "%s is not on this CPU or in this build",
			conntab_hash_name(b_opts.hash));
	b_opts.hash_used = conntab_hash_of(t);
	conntab_destroy(t, NULL);
	for (i = 0; i < ni && o < len; i++) {
		h = conntab_hash_name(b_opts.hash_used);
		if (im[i]->flags & BI_JHASH)
			h = "jhash";
#ifdef HAVE_DPDK
		else if (im[i]->create == b_impl_rte.create)
			h = "crc32";
#endif
#ifdef HAVE_VPPINFRA
		else if (im[i] == &b_impl_bihash)
			h = BIHASH_LEVEL ? "crc32c" : "xxhash";
#endif
		else if (im[i]->flags & BI_CONNTAB) {
			cfg.backend = (enum conntab_backend)im[i]->backend;
			t = conntab_create(&cfg);
			/* The trie reports the choice, and hashes nothing. */
			h = !t ? "?" : cfg.backend == CONNTAB_TRIE ? "none" :
			    conntab_hash_name(conntab_hash_of(t));
			conntab_destroy(t, NULL);
		}
		/* Lines of at most 150 columns, after the 30 of "# hash". */
		if (i && col + strlen(im[i]->name) + strlen(h) + 3 > 120) {
			o += (size_t)snprintf(line + o, len - o, ",\n#  ");
			col = 3;
		}
		col += (size_t)snprintf(line + o, len - o, "%s%s %s",
					!i ? "" : col == 3 ? " " : ", ",
					im[i]->name, h);
		o += strlen(line + o);
	}
}

static void nop_rcu(struct rcu_head *h)
{
}

/*
 * The library helpers' threads (liburcu's call_rcu worker, lfht's resize
 * worker) take the CPU affinity of the thread that starts them: started
 * before main() pins itself with --pin, they are free to run on any CPU
 * instead of sharing the measuring thread's.
 */
static void helpers_start(void)
{
	static struct rcu_head h;

	call_rcu(&h, nop_rcu);
	rcu_barrier();
	b_lfht_worker_start();
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: conntab-bench [options]\n"
"  --quick            every workload, one size (64K), fewer lookups per\n"
"                     repetition, shorter churn, and a 2 s time budget\n"
"                     per workload and implementation (--budget): about\n"
"                     20 s of CPU time, under a minute on an idle 2-core\n"
"                     machine\n"
"  --budget S         stop an implementation that spends more than S\n"
"                     seconds on one workload at one size (0 to 86400;\n"
"                     0, the default without --quick: no budget); its\n"
"                     rows say \"stopped\" and a note line names it\n"
"  --n N[,N...]       table sizes, 64 to 2G, at most 8 (suffix K, M, G =\n"
"                     2^10, 2^20, 2^30); default 1M,4M\n"
"  --workload W[,W]   floor lookup lookup-dep lookup-miss lookup-cold batch\n"
"                     insert remove churn grow timewait memory flood zipf\n"
"                     trains pcap writers prefix scan evict pair scale\n"
"                     (default all but scale; with --pcap: pcap)\n"
"  --impl I[,I]       chained split exthash trie lfht lfht-jhash ck_ht\n"
"                     plain rte_hash rte_hash-mw rte_hash-mw-jhash\n"
"                     bihash (default: every backend this library has, and\n"
"                     every peer built but rte_hash-mw-jhash)\n"
"  --threads N        readers in churn, threads in grow and timewait (one\n"
"                     inserts, N - 1 read), readers of zipf/trains/pcap\n"
"                     besides one thread; 1 to 64 (default 2)\n"
"  --zipf S[,S...]    Zipf exponents of zipf and trains, 0 to 10, at most\n"
"                     8 (default 1.0)\n"
"  --train MEAN       mean packets per train in trains, 1 to 1e6\n"
"                     (default 4)\n"
"  --pcap FILE        replay the TCP/UDP packets of a capture (pcap)\n"
"  --local ADDR[/LEN] the capture's local side (default: who got the\n"
"                     SYN, else the lower port)\n"
"  --pairs            pcap: also replay the capture through a NAT, each\n"
"                     flow one pair (its tuple and the NAT's outside\n"
"                     one); rows pcap-nat, pcap-nat-b16, pcap-nat-insert\n"
"  --tw-share F       lookup workloads: a share F (0 to 1) of the entries\n"
"                     in TIME_WAIT, spread evenly; adds lookup-est,\n"
"                     lookup-tw\n"
"  --grown            also every resizing implementation grown from empty\n"
"                     (no sizing hint), as NAME-grown\n"
"  --pad N            also each conntab backend as NAME-pad, whose lookups,\n"
"                     inserts and removes are each followed by N (0 to\n"
"                     1024) instructions of straight-line work (a\n"
"                     burst's: N a key, after it), in the lookup, batch,\n"
"                     zipf, trains, insert and remove workloads: what a\n"
"                     call's length costs with the same misses\n"
"                     (bench/pad.h)\n"
"  --clock wall|cpu   time with the wall clock (default) or each thread's\n"
"                     CPU time\n"
"  --rate R           churn: insert+remove pairs/s per writer, 1 to 1e8\n"
"                     (default 50000)\n"
"  --writers W        churn: writer threads beside the readers (1)\n"
"  --grid RxW         scale: reader counts by writer counts, comma lists\n"
"                     of at most 8 (readers 0 to 64, writers 0 to 32),\n"
"                     e.g. 0,8x1,2,4,8 (default 0,1x1,2)\n"
"  --reps K           repetitions, 1 to 64, the median is reported\n"
"                     (default 5)\n"
"  --pin              pin threads to CPUs\n"
"  --objects M        the user objects' memory: heap (default, 4 KiB\n"
"                     pages) or huge (2 MiB pages where the kernel has\n"
"                     them, as a DPDK mempool's)\n"
"  --v6               IPv6 keys instead of IPv4\n"
"  --keys SET         random (default), or the trie's worst cases:\n"
"                     worst-mem (IPv6, at most 2M), worst-depth (IPv6,\n"
"                     288 keys whatever --n says)\n"
"  --hash H           auto (default), siphash or aes: the keyed hash of\n"
"                     conntab's tables, which the peers share\n"
"  --secret zero      all-zero hash secret (default: random, one per run)\n"
"  --seed S           key generator seed (default: from the clock)\n"
"  --tsv              every result, one tab-separated line each (the\n"
"                     default prints one short table: the backends\n"
"                     against each other and the peers)\n"
"  --json             every result, JSON lines\n"
"  --table            every result, one table per size: workloads x\n"
"                     implementations\n"
"  --targets          also the developers' performance targets, met or\n"
"                     missed, after the results\n"
"  --plot FILE        draw ns/lookup against N, and zipf and trains\n"
"                     against the Zipf exponent (gnuplot); FILE ends in\n"
"                     .svg or .png\n"
"The last lines compare conntab with each peer, one line each.\n");
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "budget", required_argument, NULL, 'B' },
		{ "n", required_argument, NULL, 'n' },
		{ "workload", required_argument, NULL, 'w' },
		{ "impl", required_argument, NULL, 'i' },
		{ "threads", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'R' },
		{ "writers", required_argument, NULL, 'V' },
		{ "grid", required_argument, NULL, 'G' },
		{ "reps", required_argument, NULL, 'r' },
		{ "pin", no_argument, NULL, 'p' },
		{ "v6", no_argument, NULL, '6' },
		{ "secret", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "table", no_argument, NULL, 'T' },
		{ "tsv", no_argument, NULL, 'Y' },
		{ "targets", no_argument, NULL, 'X' },
		{ "plot", required_argument, NULL, 'P' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "train", required_argument, NULL, 'L' },
		{ "clock", required_argument, NULL, 'c' },
		{ "pcap", required_argument, NULL, 'C' },
		{ "grown", no_argument, NULL, 'g' },
		{ "pad", required_argument, NULL, 'D' },
		{ "tw-share", required_argument, NULL, 'W' },
		{ "keys", required_argument, NULL, 'K' },
		{ "hash", required_argument, NULL, 'H' },
		{ "local", required_argument, NULL, 'l' },
		{ "pairs", no_argument, NULL, 'A' },
		{ "objects", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool n_set = false, w_set = false;
	const char *impls = NULL, *opt;
	char name[32] = "";
	size_t len;
	int c, idx;

	b_opts.workloads = (1ul << W_COUNT) - 1;
	b_opts.threads = 2;
	b_opts.reps = 5;
	b_opts.write_rate = 50000;
	b_opts.writers = 1;
	b_opts.seed = b_now_ns();
	b_opts.zipf[0] = 1.0;
	b_opts.nzipf = 1;
	b_opts.train_mean = 4;
	b_opts.grid_r[0] = 0;
	b_opts.grid_r[1] = 1;
	b_opts.grid_nr = 2;
	b_opts.grid_w[0] = 1;
	b_opts.grid_w[1] = 2;
	b_opts.grid_nw = 2;
	/* Our own messages: getopt's would not say which value is wrong. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, &idx)) != -1) {
		/* "--NAME" of the option just read, for the messages. */
		if (c != '?' && c != ':' && c != 'h')
			snprintf(name, sizeof(name), "--%s", lo[idx].name);
		opt = name;
		switch (c) {
		case 'q': b_opts.quick = true; break;
		case 'B':
			b_opts.budget_ns = (uint64_t)(opt_double(opt, optarg,
				0, 86400, "a time in seconds") * 1e9);
			b_opts.budget_set = true;
			break;
		case 'n':
			parse_sizes(optarg);
			n_set = true;
			break;
		case 'w':
			parse_workloads(optarg);
			w_set = true;
			break;
		/* Checked once every option is in: --grown changes names. */
		case 'i': impls = optarg; break;
		case 't':
			b_opts.threads = (unsigned int)opt_uint(opt, optarg, 1,
				B_MAX_THREADS, "a thread count");
			break;
		case 'V':
			b_opts.writers = (unsigned int)opt_uint(opt, optarg, 1,
				B_MAX_THREADS / 2, "a thread count");
			break;
		case 'G':
			parse_grid(optarg);
			break;
		case 'R':
			b_opts.write_rate = (unsigned long)opt_uint(opt,
				optarg, 1, 100000000, "a rate in pairs/s");
			break;
		case 'r':
			b_opts.reps = (unsigned int)opt_uint(opt, optarg, 1,
				B_MAX_REPS, "a repetition count");
			break;
		case 'p': b_opts.pin = true; break;
		case '6': b_opts.v6 = true; break;
		case 's':
			if (!strcmp(optarg, "zero"))
				b_opts.zero_secret = true;
			else if (strcmp(optarg, "random"))
				bad_opt(opt, "'%s' is not a secret (zero or "
					"random)", optarg);
			break;
		case 'S':
			b_opts.seed = opt_uint(opt, optarg, 0, UINT64_MAX,
					       "a seed");
			break;
		case 'O':
			if (!strcmp(optarg, "huge"))
				b_opts.huge_objs = true;
			else if (strcmp(optarg, "heap"))
				bad_opt(opt, "unknown object memory '%s' (heap "
					"or huge)", optarg);
			break;
		case 'j': b_opts.json = true; break;
		case 'g': b_opts.grown = true; break;
		case 'D':
			b_opts.pad = (unsigned int)opt_uint(opt, optarg, 0,
							     B_PAD_MAX,
							     "an instruction count");
			break;
		case 'X': b_opts.targets = true; break;
		case 'H':
			c = conntab_hash_from_name(optarg);
			if (c < 0)
				bad_opt(opt, "unknown hash '%s' (auto, siphash "
					"or aes)", optarg);
			b_opts.hash = (enum conntab_hash)c;
			break;
		case 'K':
			if (!strcmp(optarg, "worst-mem"))
				b_opts.keyset = KS_WORST_MEM;
			else if (!strcmp(optarg, "worst-depth"))
				b_opts.keyset = KS_WORST_DEPTH;
			else if (strcmp(optarg, "random"))
				bad_opt(opt, "unknown key set '%s' (random, "
					"worst-mem or worst-depth)", optarg);
			break;
		case 'W':
			b_opts.tw_share = opt_double(opt, optarg, 0, 1,
						     "a share");
			break;
		case 'T': b_opts.table = true; break;
		case 'Y': b_opts.tsv = true; break;
		case 'P':
			/* gnuplot's terminal follows the name (report.c). */
			len = strlen(optarg);
			if (len <= 4 || (strcmp(optarg + len - 4, ".svg") &&
					 strcmp(optarg + len - 4, ".png")))
				bad_opt(opt, "%s: the file name must end in "
					".svg or .png", optarg);
			b_opts.plot = optarg;
			break;
		case 'z':
			parse_zipf(optarg);
			break;
		case 'L':
			b_opts.train_mean = opt_double(opt, optarg, 1, 1e6,
						       "a mean train length");
			break;
		case 'A':
		case 'C':
		case 'l':
#ifdef HAVE_PCAP
			if (c == 'A')
				b_opts.pairs = true;
			else if (c == 'C')
				b_opts.pcap = optarg;
			else if (b_prefix_parse(&b_opts.local, optarg))
				bad_opt(opt, "'%s' is not an address or "
					"prefix (ADDR or ADDR/LEN, IPv4 or "
					"IPv6)", optarg);
			break;
#else
			bad_opt(opt, "built without libpcap: no pcap "
				"workload");
#endif
		case 'c':
			if (!strcmp(optarg, "cpu"))
				b_opts.cpu_clock = true;
			else if (strcmp(optarg, "wall"))
				bad_opt(opt, "unknown clock '%s' (wall or cpu)",
					optarg);
			break;
		case 'h': usage(stdout); exit(0);
		case ':':
			bad_opt(argv[optind - 1], "needs a value");
		default:
			bad_opt(argv[optind - 1], "unknown option (see "
				"--help)");
		}
	}
	if (optind != argc)
		bad_opt("", "stray argument '%s' (options start with --; see "
			"--help)", argv[optind]);
	if (impls)
		check_impls(impls);
	/*
	 * scale runs only when named (or through all): a grid of threads
	 * says little on a machine of few cores, and costs every default
	 * run its cells.
	 */
	if (!w_set)
		b_opts.workloads &= ~(1ul << W_SCALE);
	if (b_opts.tsv && (b_opts.json || b_opts.table))
		bad_opt("--tsv", "not with --json or --table (one format "
			"at a time)");
	if (b_opts.json && b_opts.table)
		bad_opt("--table", "not with --json (a table is for people, "
			"JSON lines for scripts)");
	/* A capture alone is replayed alone; pcap needs one. */
	if (b_opts.pcap && !w_set)
		b_opts.workloads = 1ul << W_PCAP;
	if (!b_opts.pcap && b_want(W_PCAP)) {
		if (pcap_named)
			bad_opt("--workload", "pcap needs --pcap FILE");
		b_opts.workloads &= ~(1ul << W_PCAP);
	}
	if (b_opts.pairs && !b_opts.pcap)
		bad_opt("--pairs", "needs --pcap FILE (it replays a capture "
			"through a NAT)");
	if (!n_set) {
		b_opts.nn = b_opts.quick ? 1 : 2;
		b_opts.n[0] = b_opts.quick ? 64u << 10 : 1u << 20;
		b_opts.n[1] = 4u << 20;
	}
	/* --quick's budget, unless --budget says otherwise (0: none). */
	if (b_opts.quick && !b_opts.budget_set)
		b_opts.budget_ns = B_QUICK_BUDGET_NS;
	if (b_opts.keyset != KS_RANDOM)
		b_opts.v6 = true;
	if (b_opts.keyset == KS_WORST_DEPTH) {
		b_opts.nn = 1;
		b_opts.n[0] = B_COMB_KEYS;
	}
	for (c = 0; b_opts.keyset == KS_WORST_MEM && c < (int)b_opts.nn; c++)
		if (b_opts.n[c] > B_WORST_MEM_MAX)
			bad_opt("--n", "%zu is more than worst-mem's %u keys "
				"(--keys)", b_opts.n[c], B_WORST_MEM_MAX);
}

int main(int argc, char **argv)
{
	const struct bench_impl *im[B_MAX_IMPLS], *up[B_MAX_IMPLS];
	uint64_t start = b_now_ns();
	struct bench_keys keys;
	char hashes[512], wr[32] = "";
	unsigned int s;
	size_t ni, nu = 0, i;

	parse(argc, argv);
	ni = b_impls(im, B_MAX_IMPLS);
	if (!ni) {
		fprintf(stderr, "conntab-bench: no implementation selected\n");
		return 2;
	}
	/* Padded twins run in the lookup and insert/remove workloads only. */
	for (i = 0; i < ni; i++)
		if (!(im[i]->flags & BI_PADDED))
			up[nu++] = im[i];
#ifdef HAVE_PCAP
	/* A bad capture fails before anything runs or prints. */
	if (b_opts.pcap && b_pcap_load())
		return 1;
#endif
#ifdef HAVE_DPDK
	/* Before any thread of ours: the EAL's own inherit no pinning. */
	if (b_rte_init(im, ni))
		return 1;
#endif
	rcu_register_thread();
	resolve_hash(im, ni, hashes, sizeof(hashes));
	helpers_start();
	b_budget_init();
	if (b_opts.pin)
		b_pin_self(0);
	if (b_opts.writers > 1)
		snprintf(wr, sizeof(wr), ", churn writers %u", b_opts.writers);
	if (!b_opts.json) {
		printf("# conntab-bench %s%s keys, secret %s, seed %llu, "
		       "median of %u, threads %u%s%s, %s clock\n",
		       b_opts.v6 ? "IPv6" : "IPv4",
		       b_opts.keyset == KS_WORST_MEM ? " worst-mem" :
		       b_opts.keyset == KS_WORST_DEPTH ? " worst-depth" : "",
		       b_opts.zero_secret ? "zero" : "random",
		       (unsigned long long)b_opts.seed, b_opts.reps,
		       b_opts.threads,
		       wr,
		       b_opts.pin ? ", pinned" : "",
		       b_opts.cpu_clock ? "cpu" : "wall");
		printf("# hash %s (--hash %s): %s\n",
		       conntab_hash_name(b_opts.hash_used),
		       conntab_hash_name(b_opts.hash), hashes);
		if (b_opts.pad)
			printf("# NAME-pad: each lookup, insert and remove "
			       "followed by %u instructions (--pad)\n",
			       b_opts.pad);
		if (twins_left)
			printf("# %zu twins (--grown, --pad) left out: at most "
			       "%d implementations a run (--impl)\n",
			       twins_left, B_MAX_IMPLS);
		if (b_opts.budget_ns)
			printf("# time budget %.3g s per workload and "
			       "implementation at each size (%s)\n",
			       (double)b_opts.budget_ns / 1e9,
			       b_opts.budget_set ? "--budget" : "--quick");
	}
	b_report_header();
	/* Every workload but pcap runs per size. */
	for (s = 0; b_opts.workloads & ~(1ul << W_PCAP) && s < b_opts.nn;
	     s++) {
		size_t n = b_opts.n[s];

		b_progress("n=%zu: keys", n);
		b_keys_make(&keys, n, b_opts.v6, b_opts.seed + s,
			    b_opts.zero_secret);
		/* The floor is needed for every ratio_to_floor. */
		b_floor(n);
		b_run_single(im, ni, &keys);
		b_run_update(im, ni, &keys);
		b_run_writers(up, nu, &keys);
		b_run_prefix(up, nu, &keys);
		b_run_scan(up, nu, &keys);
		b_run_evict(up, nu, &keys);
		b_run_pair(up, nu, &keys);
		b_run_mt(up, nu, &keys);
		b_run_scale(up, nu, &keys);
		/* Fixed-size tables of its own: once, with the first size. */
		if (!s)
			b_run_flood(up, nu, &keys);
		b_keys_free(&keys);
		progress_done();
		b_report_flush();
	}
#ifdef HAVE_PCAP
	if (b_want(W_PCAP)) {
		b_run_pcap(up, nu);
		progress_done();
		b_report_flush();
	}
#endif
	if (b_opts.targets)
		b_report_targets();
	if (b_opts.plot && b_report_plot(b_opts.plot))
		fprintf(stderr, "conntab-bench: no plot (is gnuplot "
			"installed?)\n");
	/* The run's length, in the output: tests never hold it to a bound. */
	if (b_opts.json)
		printf("{\"elapsed_s\":%.1f}\n",
		       (double)(b_now_ns() - start) / 1e9);
	else
		printf("\n# elapsed %.1f s\n",
		       (double)(b_now_ns() - start) / 1e9);
	b_report_choose();
	b_report_summary();
#ifdef HAVE_DPDK
	b_rte_fini();
#endif
	b_lfht_worker_stop();
	rcu_unregister_thread();
	if (failures)
		fprintf(stderr, "conntab-bench: %lu wrong results\n", failures);
	return failures ? 1 : 0;
}
