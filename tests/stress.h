/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the parts of tests/stress share (stress.c says what it checks):
 * the options, the key sets, the two tables of a run and their models,
 * the threads' structs, and the pause of the writers at checkpoints.
 */
#ifndef T_STRESS_H
#define T_STRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "threads.h"

#define MAX_THREADS	64
#define BATCH		16
#define NGROW		16384

/*
 * Key ids. [0, nkeys): fixed (id % 4 == 0), flipping (id % 4 == 2) and
 * churn (odd) keys of the main table. [grow0, grow0 + NGROW): the
 * grower's. [ev0, ev0 + nkeys): the evictors' keys of the capped table,
 * which also holds its own node of every fixed key.
 */
#define IS_FIXED(id)	((id) < opt.nkeys && (id) % 4 == 0)
#define IS_CHURN(id)	((id) % 2 == 1)

struct stress_opt {
	unsigned long seconds;
	unsigned int threads;
	unsigned int evictors;
	unsigned long checkpoint_ms;
	uint64_t seed;
	uint32_t nkeys;
	uint32_t grow0, ev0, nids;	/* derived from nkeys */
};

extern struct stress_opt opt;

/* --- key sets (stress-keys.c) --------------------------------------- */

/* Number of key sets, and the name and description of set @i. */
unsigned int sk_count(void);
const char *sk_name(unsigned int i);
const char *sk_what(unsigned int i);
/* Index of the set named @name, or -1. */
int sk_find(const char *name);

/*
 * Make the keys of set @i for a run under hash @h (CONNTAB_HASH_AUTO for
 * the trie) and the secret sk_secret: opt.nids distinct keys, and their
 * canonical strings (the order conntab_walk_prefix() documents).
 */
void sk_build(unsigned int i, enum conntab_hash h);
void sk_free(void);
/* The key of id @id (< opt.nids) of the set built last. */
void sk_key(struct conntab_key *k, uint32_t id);
/* Its canonical string (48 bytes, zero past its end) and bit length. */
const uint8_t *sk_str(uint32_t id);
unsigned int sk_bits(uint32_t id);
/* Do the keys of @a and @b agree in their first @bits bits? */
bool sk_prefix_eq(uint32_t a, uint32_t b, unsigned int bits);

/* The tables' secret: known, so that a key set can skew its hashes. */
extern const uint8_t sk_secret[16];

/* --- a run ---------------------------------------------------------- */

/* The grower's keys: linked now, and how many of them in TIME_WAIT. */
struct grower {
	pthread_t tid;
	uint64_t rng;
	unsigned long writes, cycles, progress;
	size_t linked, tw;
	struct tconn *c[NGROW];	/* NULL: not linked */
	enum conntab_state state[NGROW];
	uint32_t gen[NGROW];	/* as th_model's (threads.h) */
};

/* The evictors' keys, each owned by one evictor (ev id % evictors). */
struct evict_model {
	struct conntab *t;		/* capped: opt.nkeys / 4 + room */
	size_t cap, m0;			/* m0: stats.memory when empty */
	struct tconn **fixed;		/* [nkeys / 4]: its fixed keys */
	struct tconn **holder;		/* [nkeys]: NULL, or the node */
	unsigned long evicted;		/* victims taken, by all */
};

/*
 * A victim's owner learns of its eviction from this mark, which the
 * evictor that took it stores while it still holds the read lock (so
 * before any grace period that could free the node ends).
 */
#define EV_MARK_EVICTED	1u

static inline bool ev_evicted(const struct tconn *c)
{
	return __atomic_load_n(&c->mark, __ATOMIC_ACQUIRE) & EV_MARK_EVICTED;
}

struct stress_run {
	struct conntab *t;		/* main table */
	size_t m0;			/* its stats.memory when empty */
	struct th_model model;		/* its fixed, flipping, churn keys */
	struct evict_model ev;
	struct grower gr;
	bool trie;
	size_t bound_worst;		/* trie: most bytes per entry seen */
	uint8_t *seen;			/* [nids]: the checks' walks */
	int stop;
	/*
	 * The key each writer of the main table (and the grower, last) is
	 * changing now, for the readers that look where races are.
	 */
	uint32_t hot[MAX_THREADS + 1];
	/* Checkpoints: writers park while pause is set (st_park()). */
	int pause;
	unsigned int parked, writers;
	unsigned long checkpoints;
};

extern struct stress_run run;

/* A writer of the main table (@slot: its index in run.hot) is at @id. */
static inline void st_hot(unsigned int slot, uint32_t id)
{
	__atomic_store_n(&run.hot[slot], id, __ATOMIC_RELAXED);
}

static inline bool st_stopping(void)
{
	return __atomic_load_n(&run.stop, __ATOMIC_RELAXED);
}

/* A writer between two operations: park if a checkpoint asks. */
void st_park(void);

/*
 * Main thread: park the writers, check both tables against their models
 * (stats, the cap, every key, a walk; a trie's memory bound), go on.
 * st_check_tables() alone once the writers are joined.
 */
void st_checkpoint(void);
void st_check_tables(void);

/* The node of a key id in a walk or scan: alive, with that key. */
int st_check_node(const struct conntab_node *n, uint32_t id,
		  const char *who);

/* --- readers (stress-read.c) and writers (stress-write.c) ----------- */

struct reader {
	pthread_t tid;
	uint64_t rng;
	unsigned long lookups;		/* every lookup checked */
	unsigned long present;		/* of keys present throughout */
	unsigned long misses;		/* of those, not found: stays 0 */
	unsigned long absent;		/* of keys out throughout */
	unsigned long progress;
};

/* A set of (node, id) pairs: what a pass has visited. */
struct visited {
	void *slot;			/* (node, id) pairs, open hashing */
	size_t size, used;		/* size a power of two */
	unsigned long overflow;		/* passes too long to keep */
	unsigned int *fixed;		/* [nkeys / 4] visits of fixed keys */
};

struct walker {
	pthread_t tid;
	uint64_t rng;
	unsigned long walks, visits, calls;	/* walks: passes */
	struct visited vs;
	struct conntab *t;		/* the table of the current pass */
	const char *what;
	uint32_t prefix_id;		/* prefix walks: the key and bits */
	unsigned int bits;
	unsigned long expected;		/* fixed keys the prefix matches */
};

struct writer {
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	unsigned long writes, progress;
};

struct evictor {
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	unsigned long inserts, removes, victims, enospc, progress;
};

void *reader_main(void *arg);
void *walker_main(void *arg);		/* walk and walk_state */
void *scanner_main(void *arg);		/* conntab_scan, both tables */
void *prefixer_main(void *arg);		/* conntab_walk_prefix */
int visited_init(struct visited *vs, size_t nodes);
void visited_free(struct visited *vs);

void *writer_main(void *arg);
void *grower_main(void *arg);
void *evictor_main(void *arg);
/* Release the evictors' nodes still held (after destroy: not linked). */
void evict_model_clear(struct evict_model *ev);
/* Entries of the capped table by its model (writers parked). */
size_t evict_model_entries(const struct evict_model *ev);

#endif /* T_STRESS_H */
