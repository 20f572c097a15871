/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Striped writer locks: allocation and counter sums.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conntab-int.h"
#include "lock.h"

/* Stripes: as many as buckets up to 1024 (64 KiB of lines, ~1/cpu^2 contention). */
#define CT_MAX_STRIPES	1024

/*
 * Test before test-and-set, for a lock word of any width: one body for
 * ct_spin_lock()'s word and ct_spin_lock8()'s byte.
 */
#define CT_SPIN_LOCK_WAIT(l)						\
	do {								\
		unsigned int spins = 0;					\
									\
		for (;;) {						\
			while (__atomic_load_n(l, __ATOMIC_RELAXED))	\
				ct_spin_pause(&spins);			\
			if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) \
				return;					\
		}							\
	} while (0)

void ct_spin_lock_wait(uint32_t *l)
{
	CT_SPIN_LOCK_WAIT(l);
}

void ct_spin_lock8_wait(uint8_t *l)
{
	CT_SPIN_LOCK_WAIT(l);
}

int ct_locks_init(struct ct_locks *lk, size_t want)
{
	size_t n = ct_roundup_pow2(want ? want : 1);

	if (n > CT_MAX_STRIPES)
		n = CT_MAX_STRIPES;
	lk->stripe = aligned_alloc(CT_CACHELINE, n * sizeof(*lk->stripe));
	if (!lk->stripe)
		return -ENOMEM;
	memset(lk->stripe, 0, n * sizeof(*lk->stripe));
	lk->mask = (uint32_t)(n - 1);
	return 0;
}

void ct_locks_fini(struct ct_locks *lk)
{
	free(lk->stripe);
	lk->stripe = NULL;
}

size_t ct_locks_memory(const struct ct_locks *lk)
{
	return ((size_t)lk->mask + 1) * sizeof(*lk->stripe);
}

/*
 * Sum the per-stripe counters. Each is read atomically but the sum is not a
 * snapshot: writers on other stripes may move meanwhile.
 */
void ct_locks_count(const struct ct_locks *lk, size_t *entries,
		    size_t *timewait)
{
	long e = 0, tw = 0;
	uint32_t i;

	for (i = 0; i <= lk->mask; i++) {
		e += __atomic_load_n(&lk->stripe[i].entries, __ATOMIC_RELAXED);
		tw += __atomic_load_n(&lk->stripe[i].timewait, __ATOMIC_RELAXED);
	}
	*entries = e > 0 ? (size_t)e : 0;
	*timewait = tw > 0 ? (size_t)tw : 0;
}
