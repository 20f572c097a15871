/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The machine's memory floor at a table's footprint: a pointer chase over a
 * buffer as large as a chained table of N entries (one 64-byte node line
 * and one 8-byte bucket pointer per entry), allocated like the tables are.
 *
 *  - dependent: one chase, each load's address comes from the previous
 *    load: DRAM (plus TLB) latency, what a lookup that misses twice in a
 *    row cannot beat;
 *  - 16 streams: 16 independent chases interleaved, so their misses
 *    overlap: the memory-level-parallelism floor a batched lookup aims at;
 *  - 16-key calls: the same 16 chases in calls of two dependent loads
 *    each (bucket, node), a call starting only when the previous one has
 *    all of its answers. That is the floor of a lookup_batch() of 16 keys
 *    when the calls do not overlap: within a call the second load waits
 *    for the first, and the next call's first loads are not issued until
 *    this call's last answer is in: a call of several hundred
 *    instructions does not fit in the core's reorder window beside the
 *    next one's start. Its ratio to 16 streams is what a 16-key call pays
 *    for draining twice.
 *
 * Then the floors of the shapes of table, chained's, the trie's and
 * exthash's, for a lookup, an insert and a remove (bench/shape.c).
 */
#include "config.h"

#include <stdlib.h>

#include "bench.h"

#define FLOOR_STREAMS	16
#define FLOOR_MAX_LOADS	(4u << 20)

static volatile uintptr_t floor_sink;

struct floor_line {
	struct floor_line *next;
	char pad[B_LINE - sizeof(void *)];
};

static double floor_dep(struct floor_line *start, size_t loads)
{
	struct floor_line *p = start;
	uint64_t t0 = b_now_ns();
	size_t i;

	for (i = 0; i < loads; i++)
		p = p->next;
	floor_sink += (uintptr_t)p;
	return (double)(b_now_ns() - t0) / (double)loads;
}

static double floor_indep(struct floor_line **start, size_t loads)
{
	struct floor_line *p[FLOOR_STREAMS];
	size_t i, steps = loads / FLOOR_STREAMS;
	uintptr_t acc = 0;
	uint64_t t0;
	int s;

	for (s = 0; s < FLOOR_STREAMS; s++)
		p[s] = start[s];
	t0 = b_now_ns();
	for (i = 0; i < steps; i++)
		for (s = 0; s < FLOOR_STREAMS; s++)
			p[s] = p[s]->next;
	t0 = b_now_ns() - t0;
	for (s = 0; s < FLOOR_STREAMS; s++)
		acc += (uintptr_t)p[s];
	floor_sink += acc;
	return (double)t0 / (double)(steps * FLOOR_STREAMS);
}

static double floor_calls(struct floor_line **start, size_t loads)
{
	struct floor_line *p[FLOOR_STREAMS];
	size_t i, calls = loads / (2 * FLOOR_STREAMS);
	uintptr_t all = 0;
	uint64_t t0;
	int s;

	for (s = 0; s < FLOOR_STREAMS; s++)
		p[s] = start[s];
	t0 = b_now_ns();
	for (i = 0; i < calls; i++) {
		/*
		 * A call's chases start from the previous call's answers, all
		 * of them: @all (zero, as user addresses are below 2^63, but
		 * not known to be) makes each start depend on every answer.
		 */
		uintptr_t dep = all >> 63;

		all = 0;
		for (s = 0; s < FLOOR_STREAMS; s++) {
			p[s] = (struct floor_line *)((uintptr_t)p[s] + dep);
			__builtin_prefetch(p[s]);
		}
		for (s = 0; s < FLOOR_STREAMS; s++) {
			p[s] = p[s]->next;
			__builtin_prefetch(p[s]);
		}
		for (s = 0; s < FLOOR_STREAMS; s++) {
			p[s] = p[s]->next;
			all |= (uintptr_t)p[s];
		}
	}
	t0 = b_now_ns() - t0;
	floor_sink += all;
	/* Per key: a key is two loads. */
	return (double)t0 / (double)(calls * FLOOR_STREAMS);
}

void b_floor_record(const char *what, const char *unit, size_t n, double *v)
{
	struct bench_result r = {
		.workload = "floor", .impl = what, .n = n, .threads = 1,
		.unit = unit, .ratio_kind = R_NONE,
	};

	r.value = b_median(v, b_opts.reps, &r.min, &r.max);
	b_record(&r);
}

void b_floor(size_t n)
{
	size_t lines = n * (B_LINE + sizeof(void *)) / B_LINE, i;
	size_t loads = lines < FLOOR_MAX_LOADS ? lines : FLOOR_MAX_LOADS;
	struct floor_line *buf, *start[FLOOR_STREAMS];
	double dep[64], indep[64], calls[64];
	uint64_t rng = b_opts.seed ^ 0xf100f100ull;
	uint32_t *perm;
	unsigned int rep;
	int s;

	if (lines < 2 * FLOOR_STREAMS)
		lines = 2 * FLOOR_STREAMS;
	b_progress("n=%zu floor", n);
	buf = b_alloc(lines * sizeof(*buf));
	perm = b_alloc(lines * sizeof(*perm));
	for (i = 0; i < lines; i++)
		perm[i] = (uint32_t)i;
	b_shuffle32(perm, lines, &rng);
	/* One random cycle through every line. */
	for (i = 0; i < lines; i++)
		buf[perm[i]].next = &buf[perm[(i + 1) % lines]];
	for (s = 0; s < FLOOR_STREAMS; s++)
		start[s] = &buf[perm[lines / FLOOR_STREAMS * (size_t)s]];
	free(perm);
	floor_dep(start[0], loads / 4);		/* fault in, warm the TLB */
	for (rep = 0; rep < b_opts.reps; rep++) {
		dep[rep] = floor_dep(start[rep % FLOOR_STREAMS], loads);
		indep[rep] = floor_indep(start, loads);
		calls[rep] = floor_calls(start, loads);
	}
	free(buf);
	b_floor_record("dependent", "ns/load", n, dep);
	b_floor_record("16-streams", "ns/load", n, indep);
	b_floor_record("16-key-calls", "ns/key", n, calls);
	b_floor_shapes(n);
}
