/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the threaded tests (memb flavor): error reports from threads
 * (Check's assertions are for the main thread only), retiring nodes
 * through call_rcu into a poisoned quarantine, and the check every reader
 * makes on a node it found.
 */
#ifndef T_THREADS_H
#define T_THREADS_H

#include <stdint.h>

#include "helpers.h"

/* Count an error; the first one's text is kept. Any thread. */
void th_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Errors so far, and the first one's text. */
unsigned long th_errors(void);
const char *th_first_error(void);
void th_reset(void);

/*
 * Free @c after a grace period: the call_rcu callback poisons it (magic
 * DEAD, key scribbled) and keeps it in a quarantine of the most recent
 * few thousand before free(), so a reader that still holds it sees the
 * poison instead of reused memory; under AddressSanitizer the quarantined
 * node is also poisoned for ASan, so such a read stops the program with a
 * report. Caller is a registered thread.
 */
void th_retire(struct tconn *c);
/* Free the quarantine (after rcu_barrier()). */
void th_quarantine_flush(void);

/*
 * A node a reader found for key @k (number @id): alive, that key, a valid
 * state. Reports and returns -1 otherwise.
 */
int th_check_node(const struct conntab_node *n, const struct conntab_key *k,
		  uint32_t id, const char *who);

/*
 * What the writers know: the node holding each key (NULL: absent) and its
 * state. Every key has one owner thread, the only one that changes it, so
 * the owner's model is exact and its own lookups must agree with it.
 *
 * Optional (NULL: left out):
 *  - key: the key of each id, instead of t_key();
 *  - gen [nkeys]: a generation per key that th_churn() keeps for readers
 *    (th_gen_begin()): even while the key is out of the table and no
 *    insert of it has begun, odd from just before an insert until the
 *    remove that takes it out has returned.
 */
struct th_model {
	struct conntab *t;
	struct tconn **holder;		/* [nkeys] */
	enum conntab_state *state;	/* [nkeys] */
	uint32_t nkeys;
	void (*key)(struct conntab_key *k, uint32_t id);
	uint32_t *gen;			/* [nkeys] */
};

/*
 * Reader, before a lookup of key @id: its generation. After the lookup,
 * th_gen_absent() tells whether the key was out of the table for the
 * whole lookup (a hit is then an error: found after its removal). The
 * writer's odd store comes before the release store that publishes the
 * node (program order), and the acquire fence after the lookup's load of
 * that pointer makes a reader that found the node see it: a key that
 * came back meanwhile shows as a changed generation, never as an error.
 * An even generation was stored (release) after the remove returned, so
 * the lookup that follows its acquire load sees the key unlinked.
 */
static inline uint32_t th_gen_begin(const uint32_t *gen)
{
	return __atomic_load_n(gen, __ATOMIC_ACQUIRE);
}

static inline int th_gen_absent(const uint32_t *gen, uint32_t g)
{
	/*
	 * ThreadSanitizer knows no fences, and needs none here: under it
	 * the library's loads of published pointers are acquire loads
	 * (lib/rcu.h), which order the load below after them.
	 */
#if !defined(__SANITIZE_THREAD__)
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
	return !(g & 1) && __atomic_load_n(gen, __ATOMIC_RELAXED) == g;
}

/* Writer (the key's owner): the next generation (see struct th_model). */
static inline void th_gen_step(uint32_t *gen)
{
	__atomic_store_n(gen, *gen + 1, __ATOMIC_RELEASE);
}

/*
 * Key @id stays present: time-wait its node (in place or to a new node),
 * or recycle its TIME_WAIT node by a new one, which the contract makes
 * atomic for readers. Owner only; checks every result (th_report), retires
 * replaced nodes; returns the number of writer calls made.
 */
unsigned int th_flip(struct th_model *m, uint32_t id, uint64_t *rng);

/*
 * Key @id comes and goes through every writer operation (insert,
 * insert_recycle of an absent key, remove and a second remove, timewait
 * in place and to a new node, recycle). As th_flip().
 */
unsigned int th_churn(struct th_model *m, uint32_t id, uint64_t *rng);

/* The owner's lookup of @id gives the model's node, in its state. */
void th_self_check(struct th_model *m, uint32_t id);

/* One more step of a thread's progress counter (read by the main thread). */
static inline void th_tick(unsigned long *c)
{
	__atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

/*
 * Sleep @ms milliseconds, then on until each of the @n counters reached
 * @min: the run is bounded in time, yet every thread has done its part
 * however loaded the machine is (no outcome depends on timing).
 */
void th_run_for(unsigned int ms, unsigned long *const *ctrs, size_t n,
		unsigned long min);

/* xorshift64*: a per-thread random stream (seed nonzero). */
static inline uint64_t th_rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

#endif /* T_THREADS_H */
