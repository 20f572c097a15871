/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conntab-bench: what the driver, the workloads and the reports share.
 *
 * One run generates its keys once and measures every implementation on
 * them, one after another, so that ratios between implementations (and
 * against the machine's own memory floor) hold on a noisy machine even when
 * absolute times do not.
 */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <urcu.h>	/* memb flavor: every peer runs on the same one */
#include <conntab/conntab.h>

#include "capture.h"

#define B_LINE		64
/*
 * Bytes per user object, at a line boundary: the implementation's node
 * and the user's own data after it, which every lookup reads a word of
 * (impl.h, b_user_word()). conntab's node is 72 bytes since 0.4 (the
 * pair link follows the line a lookup reads), so its user word is on
 * the second line, as a user's object would have it.
 */
#define B_OBJ		(2 * B_LINE)
#define B_MAX_N		8
#define B_MAX_THREADS	64
#define B_MAX_REPS	64
#define B_MAX_IMPLS	24	/* every implementation and its twins */
#define B_MAX_ZIPF	8
#define B_MAX_BATCH	64	/* the largest batch a workload asks for */
#define B_MAX_GRID	8	/* --grid: reader and writer counts each */
/* --quick's time budget per workload and implementation (budget.c). */
#define B_QUICK_BUDGET_NS	2000000000ull
#define B_STREAM_BATCH	16	/* batch (receive burst) of traffic streams */
#define B_READ_CHUNK	64	/* lookups per read-side critical section */

struct bench_impl;

/* Command line, after parsing. */
struct bench_opts {
	size_t n[B_MAX_N];	/* table sizes, in order */
	unsigned int nn;
	unsigned long workloads;	/* bit per enum b_workload */
	const char *impls;	/* comma list, NULL = all */
	unsigned int threads;	/* reader threads for churn / grow / timewait */
	unsigned int reps;	/* repetitions, median reported */
	bool pin, v6, json, table, quick, zero_secret;
	bool tsv;		/* --tsv: every result, one line each */
	bool cpu_clock;		/* time with the thread's CPU clock */
	bool grown;		/* also every resizing impl grown from empty */
	double tw_share;	/* lookup tables: share of time-wait entries */
	int keyset;		/* KS_*: the keys every workload uses */
	enum conntab_hash hash;	/* --hash: what conntab's tables ask for */
	enum conntab_hash hash_used;	/* what they got; the peers' hash */
	double zipf[B_MAX_ZIPF];	/* Zipf exponents of zipf and trains */
	unsigned int nzipf;
	double train_mean;	/* mean packets per train */
	const char *pcap;	/* capture to replay, or NULL */
	bool pairs;		/* --pairs: also the capture through a NAT */
	bool huge_objs;		/* --objects huge: objects on huge pages */
	struct b_prefix local;	/* --local: the capture's local side */
	uint64_t seed;
	unsigned long write_rate;	/* churn writer ops/s per writer */
	unsigned int writers;	/* churn: writer threads beside the readers */
	const char *plot;	/* SVG or PNG file for gnuplot, or NULL */
	uint64_t budget_ns;	/* per workload, impl and size; 0: none */
	bool budget_set;	/* --budget given (else --quick's, or none) */
	bool targets;		/* --targets: the developers' targets */
	/* --grid: the reader and writer counts of the scale workload */
	unsigned int grid_r[B_MAX_GRID], grid_nr;
	unsigned int grid_w[B_MAX_GRID], grid_nw;
	unsigned int pad;	/* --pad: instructions after each call */
};

enum b_workload {
	W_FLOOR,
	W_LOOKUP,
	W_LOOKUP_DEP,
	W_LOOKUP_MISS,
	W_LOOKUP_COLD,
	W_BATCH,
	W_INSERT,
	W_REMOVE,
	W_CHURN,
	W_GROW,
	W_TIMEWAIT,
	W_MEMORY,
	W_FLOOD,
	W_ZIPF,
	W_TRAINS,
	W_PCAP,
	W_WRITERS,
	W_PREFIX,
	W_SCAN,
	W_EVICT,
	W_PAIR,
	W_SCALE,
	W_COUNT
};

extern const char *const b_workload_names[W_COUNT];

/*
 * --keys: uniform random tuples, or the trie's worst cases: worst-mem, a
 * binary tree of deep IPv6 branch points (one local endpoint, remote
 * addresses differing in every 4th bit of the low 80: its memory bound),
 * and worst-depth, a comb of 288 IPv6 keys each differing from the
 * all-zero key in one bit (its depth bound).
 */
enum { KS_RANDOM, KS_WORST_MEM, KS_WORST_DEPTH };
#define B_WORST_MEM_MAX	(2u << 20)	/* 2^20 branch pairs */
#define B_COMB_KEYS	288		/* one per bit from 32 to 319 */

/* Keys of one run: present ones, in insert order, and a random order. */
struct bench_keys {
	size_t n;
	struct conntab_key *keys;	/* keys[i] goes into object slot[i] */
	struct conntab_key *order;	/* the same keys shuffled: lookups */
	struct conntab_key *absent;	/* nabsent keys never inserted */
	size_t nabsent;
	uint32_t *slot;		/* random object placement of keys[i] */
	uint8_t secret[16];	/* the hash secret every impl uses */
};

/* One measured figure; the report adds the ratios. */
struct bench_result {
	char workload[24];
	const char *impl;
	size_t n;
	unsigned int threads;
	double value, min, max;
	const char *unit;	/* "ns/op", "ops/s", "B/entry", "x", ... */
	int ratio_kind;		/* R_* below: what ratio_to_floor divides by */
	bool higher_better;
	bool stopped;		/* out of its time budget: no value */
};

enum { R_NONE, R_DEP, R_INDEP };

/* bench/main.c */
extern struct bench_opts b_opts;
void b_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void b_record(const struct bench_result *r);
/* A wrong answer (missed key, failed operation): reported, exit status 1. */
void b_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Timing and small helpers (bench/util.c). */
static inline uint64_t b_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall-clock time: for paces, deadlines and throughput. */
static inline uint64_t b_now_ns(void)
{
	return b_clock_ns(CLOCK_MONOTONIC);
}

/*
 * The clock the timed sections of one thread read: wall time, or with
 * --clock cpu the thread's CPU time, which leaves out the slices other
 * processes ran in on a shared machine (cache interference still shows).
 */
static inline uint64_t b_time_ns(void)
{
	return b_clock_ns(b_opts.cpu_clock ? CLOCK_THREAD_CPUTIME_ID
					   : CLOCK_MONOTONIC);
}

uint64_t b_rand(uint64_t *state);
void b_shuffle32(uint32_t *a, size_t n, uint64_t *rng);
void *b_alloc(size_t bytes);	/* line aligned, zeroed; exits on failure */
size_t b_heap_bytes(void);	/* bytes malloc has handed out (mallinfo2) */
double b_median(double *v, unsigned int k, double *min, double *max);
void b_pin_self(unsigned int cpu);
unsigned int b_cpu_other(unsigned int i);
void b_thread_start(unsigned int cpu, int *ready, volatile int *go);
size_t b_l3_bytes(void);

/* Zipf ranks and geometric lengths (bench/zipf.c). */
struct b_zipf {
	double s, n, h_x1, h_n, squeeze;
};

void b_zipf_init(struct b_zipf *z, size_t n, double s);
size_t b_zipf_draw(const struct b_zipf *z, uint64_t *rng);	/* 0..n-1 */
double b_zipf_p1(size_t n, double s);
size_t b_geometric(double mean, uint64_t *rng);
double b_uniform(uint64_t *rng);

/* Keys (bench/keys.c). */
void b_keys_make(struct bench_keys *k, size_t n, bool v6, uint64_t seed,
		 bool zero_secret);
/* Keys made elsewhere (a capture's flows): placed and ordered; k owns them. */
void b_keys_adopt(struct bench_keys *k, struct conntab_key *keys, size_t n,
		  uint64_t seed);
void b_keys_free(struct bench_keys *k);
void b_shuffle_keys(struct conntab_key *k, size_t n, uint64_t *rng);

/* Workloads (bench/floor.c, bench/workloads.c, bench/workloads-mt.c). */
void b_floor(size_t n);
void b_floor_record(const char *what, const char *unit, size_t n, double *v);
/* bench/shape.c */
void b_floor_shapes(size_t n);
void b_run_single(const struct bench_impl **im, size_t ni,
		  const struct bench_keys *k);
void b_run_update(const struct bench_impl **im, size_t ni,
		  const struct bench_keys *k);
void b_run_mt(const struct bench_impl **im, size_t ni,
	      const struct bench_keys *k);
/* bench/writers.c, bench/prefix.c */
void b_run_writers(const struct bench_impl **im, size_t ni,
		   const struct bench_keys *k);
void b_run_prefix(const struct bench_impl **im, size_t ni,
		  const struct bench_keys *k);
/* bench/scan.c, bench/evict.c: conntab's backends only */
void b_run_scan(const struct bench_impl **im, size_t ni,
		const struct bench_keys *k);
void b_run_evict(const struct bench_impl **im, size_t ni,
		 const struct bench_keys *k);
/* bench/pair.c: every implementation, pairs as its users make them. */
void b_run_pair(const struct bench_impl **im, size_t ni,
		const struct bench_keys *k);
/* bench/scale.c: readers x writers (--grid); only when named. */
void b_run_scale(const struct bench_impl **im, size_t ni,
		 const struct bench_keys *k);
/* bench/flood.c: its own small tables, whatever k->n (once per run). */
void b_run_flood(const struct bench_impl **im, size_t ni,
		 const struct bench_keys *k);

/* bench/replay.c: the capture, read before the sizes run; its workload. */
int b_pcap_load(void);
void b_run_pcap(const struct bench_impl **im, size_t ni);

/* Reporting (bench/report.c). */
void b_report_header(void);
void b_report_flush(void);
void b_report_targets(void);
void b_report_summary(void);
/* The default output: the backends against each other and the peers. */
void b_report_choose(void);
int b_report_plot(const char *file);

/*
 * The time budget (bench/budget.c). A section times one implementation
 * on the workloads of @wmask (a bit per enum b_workload: a table several
 * workloads share is charged to each) at size @n; @what says what it
 * does, for the note if it runs out (copied: it need only last until
 * b_budget_leave()). b_budget_enter() is false when the
 * implementation was stopped on all of them (skip it), b_budget_leave()
 * when the budget ran out during the section (its figures are partial).
 * Long loops poll b_over() and end early.
 */
extern volatile int b_budget_over;
void b_budget_init(void);
bool b_budget_enter(unsigned long wmask, const struct bench_impl *im,
		    size_t n, const char *what);
bool b_budget_leave(void);
/* Was @im stopped on any workload of @wmask at size @n? */
bool b_budget_stopped(unsigned long wmask, const struct bench_impl *im,
		      size_t n);
void b_budget_notes(void);

static inline bool b_over(void)
{
	return __atomic_load_n(&b_budget_over, __ATOMIC_RELAXED);
}

#define B_W(w)	(1ul << (w))

static inline bool b_want(enum b_workload w)
{
	return b_opts.workloads & (1ul << w);
}

#endif /* BENCH_BENCH_H */
