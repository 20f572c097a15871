/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --pad N: N instructions of straight-line work after each call of a
 * table (NAME-pad, bench/impl-conntab.c), to see what a call's length
 * costs when its misses are the same.
 *
 * The question (issue 38): in a loop of removes, chained's calls are ~90
 * instructions and the trie's ~340 (bench/ct-icount). The core can start
 * the next call's misses while this call's are still out only when both
 * fit its out-of-order window; a longer call keeps them apart. Pad
 * chained's calls to another backend's length and the difference left is
 * what that backend's shape and misses cost.
 *
 * The work is N adds over four registers, not a loop: a loop's counter
 * would make them one dependent chain, and its exit branch, mispredicted
 * once a trip count is too long to learn, would flush the next call's
 * early loads, which is the very overlap measured. One indirect jump,
 * always to the same place for a run, enters a block of B_PAD_MAX adds
 * (4 bytes each) N from its end. Elsewhere than x86-64: a loop of N
 * empty steps, its branch and all (doc/performance.md measured x86-64).
 */
#ifndef BENCH_PAD_H
#define BENCH_PAD_H

#include "bench.h"

#define B_PAD_MAX	1024u

static inline void b_pad(void)
{
	unsigned long bytes = 4ul * b_opts.pad;

#if defined(__x86_64__)
	__asm__ volatile("lea 1f(%%rip), %%rax\n\t"
			 "sub %0, %%rax\n\t"
			 "jmp *%%rax\n\t"
			 ".rept 256\n\t"
			 "add $1, %%r8\n\t"
			 "add $1, %%r9\n\t"
			 "add $1, %%r10\n\t"
			 "add $1, %%r11\n\t"
			 ".endr\n"
			 "1:\n\t"
			 : : "r"(bytes)
			 : "rax", "r8", "r9", "r10", "r11", "cc");
#else
	for (unsigned long i = 0; i < bytes / 4; i++)
		__asm__ volatile("" : : "r"(i));
#endif
}

#endif
