/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-thread shards: the thread's draw (shard.h).
 */
#include "shard.h"

/* 0: not drawn yet; draws start at 1 (the shard is draw & (n - 1)). */
CT_TLS unsigned int ct_thread_draw_mine;
static unsigned int ct_thread_draws;

unsigned int ct_thread_draw_slow(void)
{
	unsigned int d;

	do
		d = __atomic_add_fetch(&ct_thread_draws, 1, __ATOMIC_RELAXED);
	while (d == 0);		/* after 2^32 threads: 0 means "not drawn" */
	ct_thread_draw_mine = d;
	return d;
}
