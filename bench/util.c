/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers: random numbers, aligned allocation, heap accounting,
 * medians, CPU pinning.
 */
#define _GNU_SOURCE
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* splitmix64: fast, and good enough for uniform keys and shuffles. */
uint64_t b_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fisher-Yates: a uniform permutation of a[0..n). */
void b_shuffle32(uint32_t *a, size_t n, uint64_t *rng)
{
	size_t i, j;
	uint32_t x;

	for (i = n; i > 1; i--) {
		j = (size_t)(b_rand(rng) % i);
		x = a[i - 1];
		a[i - 1] = a[j];
		a[j] = x;
	}
}

void *b_alloc(size_t bytes)
{
	size_t sz = (bytes + B_LINE - 1) / B_LINE * B_LINE;
	void *p = aligned_alloc(B_LINE, sz ? sz : B_LINE);

	if (!p) {
		fprintf(stderr, "conntab-bench: out of memory (%zu bytes)\n",
			bytes);
		exit(1);
	}
	memset(p, 0, sz);
	return p;
}

/* Bytes handed out by malloc, in the arenas and as separate mappings. */
size_t b_heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static int b_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..k) (sorts v); min and max go to *min and *max. */
double b_median(double *v, unsigned int k, double *min, double *max)
{
	qsort(v, k, sizeof(*v), b_cmp_double);
	*min = v[0];
	*max = v[k - 1];
	return k & 1 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

void b_pin_self(unsigned int cpu)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (ncpu < 1)
		ncpu = 1;
	CPU_ZERO(&set);
	CPU_SET(cpu % (unsigned long)ncpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * A measuring thread's start: registered with the flavor, pinned with
 * --pin, counted in *@ready (release: its setup is seen by whoever waits
 * for the count), then held until *@go is set, if @go is given.
 */
void b_thread_start(unsigned int cpu, int *ready, volatile int *go)
{
	rcu_register_thread();
	if (b_opts.pin)
		b_pin_self(cpu);
	if (ready)
		__atomic_add_fetch(ready, 1, __ATOMIC_RELEASE);
	while (go && !*go)
		sched_yield();
}

/* The CPU of helper thread @i that leaves CPU 0 to the main thread. */
unsigned int b_cpu_other(unsigned int i)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	return ncpu > 1 ? 1 + i % (unsigned int)(ncpu - 1) : 0;
}

size_t b_l3_bytes(void)
{
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);

	return l3 > 0 ? (size_t)l3 : (size_t)32 << 20;
}
