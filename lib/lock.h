/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Striped writer locks.
 *
 * Writers of a hash backend serialise per bucket through an array of
 * spinlocks indexed by the low bits of the key's hash (the bucket index
 * modulo the stripe count, so one stripe covers whole buckets). Each stripe
 * owns a cache line and also carries the entry counters of its buckets, so
 * an insert touches the line it already holds exclusively instead of a
 * table-wide counter that every writer would bounce.
 *
 * Readers never take these locks.
 */
#ifndef CT_LOCK_H
#define CT_LOCK_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CT_CACHELINE	64

struct ct_stripe {
	uint32_t lock;		/* 0 free, 1 held */
	uint32_t seq;		/* odd while a writer moves a key against the
				   readers' scan order (split.c); readers
				   check it on their miss path only */
	long entries;		/* nodes in this stripe's buckets */
	long timewait;		/* of which TIME_WAIT */
} __attribute__((aligned(CT_CACHELINE)));

/*
 * Change a stripe's counters (stripe locked). Only lock holders write
 * them, but conntab_stats() reads them without the lock
 * (ct_locks_count()): the stores are atomic (relaxed), so that reading
 * them is not a data race in C's memory model. The lock orders writers.
 */
static inline __attribute__((always_inline)) void
ct_stripe_add(struct ct_stripe *s, long entries, long timewait)
{
	/*
	 * A delta known to be 0 where this is inlined (a plain insert's
	 * TIME_WAIT count) stores nothing: the store of an unchanged value
	 * is two instructions of every such writer step.
	 */
	if (!__builtin_constant_p(entries) || entries)
		__atomic_store_n(&s->entries, s->entries + entries,
				 __ATOMIC_RELAXED);
	if (!__builtin_constant_p(timewait) || timewait)
		__atomic_store_n(&s->timewait, s->timewait + timewait,
				 __ATOMIC_RELAXED);
}

struct ct_locks {
	struct ct_stripe *stripe;
	uint32_t mask;		/* stripes - 1, a power of two minus one */
};

#if defined(__x86_64__) || defined(__i386__)
# define ct_cpu_relax()	__builtin_ia32_pause()
#elif defined(__aarch64__)
# define ct_cpu_relax()	__asm__ __volatile__("yield" ::: "memory")
#else
# define ct_cpu_relax()	__asm__ __volatile__("" ::: "memory")
#endif

/* One step of a spin wait: pause, and yield if the holder is preempted. */
static inline void ct_spin_pause(unsigned int *spins)
{
	if (++*spins & 1023)
		ct_cpu_relax();
	else
		sched_yield();
}

/* The lock was taken: wait for it, out of the writers' inlined paths. */
void ct_spin_lock_wait(uint32_t *l);

static inline void ct_spin_lock(uint32_t *l)
{
	/*
	 * One exchange inline; the wait (a counter, a pause, a yield) is a
	 * call, so that it holds no registers of the writer step around it.
	 */
	if (__builtin_expect(__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE), 0))
		ct_spin_lock_wait(l);
}

static inline void ct_spin_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/*
 * The same lock in a byte, for locks that live in a structure's spare
 * byte (a trie's sparse node): wait out of line, as above.
 */
void ct_spin_lock8_wait(uint8_t *l);

static inline void ct_spin_lock8(uint8_t *l)
{
	if (__builtin_expect(__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE), 0))
		ct_spin_lock8_wait(l);
}

static inline void ct_spin_unlock8(uint8_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* One attempt; true if the lock is now held (deadlock-free in any order). */
static inline bool ct_spin_trylock(uint32_t *l)
{
	return !__atomic_load_n(l, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static inline struct ct_stripe *ct_stripe_of(const struct ct_locks *lk,
					      uint32_t hash)
{
	return &lk->stripe[hash & lk->mask];
}

static inline struct ct_stripe *ct_lock_hash(const struct ct_locks *lk,
					     uint32_t hash)
{
	struct ct_stripe *s = ct_stripe_of(lk, hash);

	ct_spin_lock(&s->lock);
	return s;
}

static inline void ct_unlock_stripe(struct ct_stripe *s)
{
	ct_spin_unlock(&s->lock);
}

int ct_locks_init(struct ct_locks *lk, size_t want);
void ct_locks_fini(struct ct_locks *lk);
size_t ct_locks_memory(const struct ct_locks *lk);
void ct_locks_count(const struct ct_locks *lk, size_t *entries,
		    size_t *timewait);

#endif /* CT_LOCK_H */
