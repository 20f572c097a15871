/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure injection (failalloc.c): link into one test program
 * only, it replaces the allocator of the whole process.
 */
#ifndef T_FAILALLOC_H
#define T_FAILALLOC_H

/*
 * Make allocation number @nth (1-based, counted from now) fail, and with
 * @sticky every later one too. Only the calling thread's allocations are
 * counted unless @all_threads.
 */
void fa_arm(long nth, int sticky, int all_threads);

/* Stop failing; returns the number of allocations counted while armed. */
long fa_disarm(void);

/* Allocations failed on purpose so far. */
long fa_failed_total(void);

#endif /* T_FAILALLOC_H */
