/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-thread shards of a table's counters.
 *
 * A counter that every writer updates, on one line, is the line every
 * write of every writer takes in turn: it held exthash's and the trie's
 * writers to a fraction of chained's scaling (doc/performance.md, "Many
 * cores"). Their counters are arrays of shards, a line each, and a thread
 * updates the shard of its draw: a number fixed for the thread's life,
 * drawn round robin at its first write, so that up to N concurrent
 * writers of an N-shard array each have a line of their own. Threads
 * beyond N share shards, so updates stay atomic (relaxed: a shard's value
 * means nothing alone, only the sum over the shards does).
 */
#ifndef CT_SHARD_H
#define CT_SHARD_H

#include "conntab-int.h"

extern CT_TLS unsigned int ct_thread_draw_mine;
unsigned int ct_thread_draw_slow(void);

/* The calling thread's shard of @n (a power of two). */
static inline unsigned int ct_thread_shard(unsigned int n)
{
	unsigned int d = ct_thread_draw_mine;

	if (__builtin_expect(d == 0, 0))
		d = ct_thread_draw_slow();
	return d & (n - 1);
}

#endif /* CT_SHARD_H */
