/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations every measured table offers the workloads.
 *
 * An implementation stores user objects that the workload allocates
 * (B_OBJ bytes each: a node part of obj_size bytes, then the user's
 * data, at user_off; placed at random) and passes
 * in; like conntab's nodes, every peer's node is embedded in the object and
 * holds or points to the key, so that no peer pays for an extra
 * allocation. Every peer hashes keys with the same keyed hash and the same
 * secret as conntab's tables (--hash: SipHash-1-3 or AES, peer-hash.h), so
 * bucket distributions match; lfht-jhash alone hashes as lfht's users do
 * (jhash.h).
 *
 * Readers (lookup, batch) run inside the memb flavor's read-side critical
 * section taken by the workload. Writers take whatever the implementation
 * itself needs (lfht: the read lock; ck_ht: one writer lock).
 */
#ifndef BENCH_IMPL_H
#define BENCH_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bench.h"
#include "key.h"	/* lib/key.h: the one key compare, for every peer */
#include "peer-hash.h"	/* the run's keyed hash, for every peer */

/* Safe with concurrent readers and several writers. */
#define BI_MT		0x1u
/* Resizes online: measured in the grow workload. */
#define BI_GROWS	0x2u
/* A conntab hash backend (candidates for "best hash backend"). */
#define BI_CT_HASH	0x4u
/* One of conntab's own backends. */
#define BI_CONNTAB	0x8u
/*
 * --grown: a BI_GROWS implementation under the name NAME-grown whose
 * tables are created without a sizing hint, so that the single-threaded
 * workloads measure it as grown from empty beside the sized one.
 */
#define BI_UNSIZED	0x10u
/* Hashes with lookup3 (jhash.h) instead of conntab's keyed hash. */
#define BI_JHASH	0x20u
/* Runs only when --impl names it. */
#define BI_ASKED	0x40u
/*
 * A twin of a selected implementation (--grown's NAME-grown, --pad's
 * NAME-pad): the workloads that compare implementations with each other
 * or with their targets leave twins out, as do the many-thread ones.
 */
#define BI_TWIN		0x80u
/*
 * --pad's NAME-pad: only its lookups, bursts, inserts and removes are
 * padded, so it runs in those workloads alone (and zipf and trains,
 * which are lookups).
 */
#define BI_PADDED	0x100u

struct bench_impl {
	const char *name;
	unsigned int flags;
	size_t obj_size;	/* bytes of the node part */
	size_t user_off;	/* the user's word a lookup then reads */
	int backend;		/* conntab backend, for BI_CONNTAB */
	/* expected = 0: no sizing hint. NULL on failure. */
	void *(*create)(const struct bench_impl *im, size_t expected,
			const uint8_t *secret);
	/* Unlink everything and free the table; the objects stay. */
	void (*destroy)(void *t);
	/* 0, or a negative errno; the key is copied into the object. */
	int (*insert)(void *t, void *obj, const struct conntab_key *k);
	/* The object holding @k, or NULL. Caller holds the read lock. */
	void *(*lookup)(void *t, const struct conntab_key *k);
	/* Look up @n keys; returns how many were found. */
	size_t (*batch)(void *t, const struct conntab_key *k, void **out,
			size_t n);
	int (*remove)(void *t, void *obj);
	/* Replace established @est by @tw, same key, atomically for readers. */
	int (*timewait)(void *t, void *est, void *tw);
	/* Insert @nw for @k in the place of a time-wait object, set *@old. */
	int (*recycle)(void *t, void *nw, const struct conntab_key *k,
		       void **old);
	/* Library bytes held by the table, or -1: measure the heap instead. */
	long (*memory)(void *t);
	/*
	 * Insert @a and @b as one connection found by either key, and let
	 * remove() of either half take both (conntab_insert_pair()); NULL:
	 * the workloads insert two entries and link them (bench/pair.h).
	 */
	int (*insert_pair)(void *t, void *a, const struct conntab_key *ka,
			   void *b, const struct conntab_key *kb);
};

/* The user's data starts after a node of @sz bytes, word aligned. */
#define B_USER_AFTER(sz)	(((sz) + 7) & ~(size_t)7)

/*
 * The word of a found object its user reads next (the connection's own
 * state), so that no implementation is timed without the miss its users
 * pay: for conntab the line after the node, for the peers that embed
 * their node the word after it, for rte_hash (whose keys live in its
 * own key store) the object itself.
 */
static inline uintptr_t b_user_word(const struct bench_impl *im,
				    const void *p)
{
	return p ? *(const uintptr_t *)((const char *)p + im->user_off) : 0;
}

/* Every implementation this build knows, in report order. */
size_t b_impls(const struct bench_impl **out, size_t max);

extern const struct bench_impl b_impl_conntab[4];
void b_impl_pad(struct bench_impl *im);
extern const struct bench_impl b_impl_lfht;
extern const struct bench_impl b_impl_lfht_jhash;
/* lfht's resize worker, started unpinned for the run (impl-lfht.c). */
void b_lfht_worker_start(void);
void b_lfht_worker_stop(void);
extern const struct bench_impl b_impl_plain;
#ifdef HAVE_CK
extern const struct bench_impl b_impl_ck;
#endif
#ifdef HAVE_DPDK
/* bench/peer-rte.c: DPDK's rte_hash, single- and multi-writer. */
extern const struct bench_impl b_impl_rte;
extern const struct bench_impl b_impl_rte_mw;
extern const struct bench_impl b_impl_rte_mw_jhash;
/* The EAL, when one of @im is an rte peer; 0, or -1 if it failed. */
int b_rte_init(const struct bench_impl **im, size_t ni);
void b_rte_fini(void);
/* Give the calling thread an lcore id (multi-writer tables need one). */
void b_rte_thread_register(void);
#endif
#ifdef HAVE_VPPINFRA
/* bench/peer-bihash.c: VPP's clib_bihash_16_8 (40_8 for IPv6 runs). */
extern const struct bench_impl b_impl_bihash;

/*
 * Whether this CPU runs the peer's code, built for x86-64 level
 * BIHASH_LEVEL (configure.ac): checked here, in code built for any x86-64,
 * before the first instruction of the peer's own runs.
 */
static inline bool b_bihash_runs(void)
{
# if BIHASH_LEVEL >= 3
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
	       __builtin_cpu_supports("fma") && __builtin_cpu_supports("sse4.2");
# elif BIHASH_LEVEL == 2
	return __builtin_cpu_supports("sse4.2") &&
	       __builtin_cpu_supports("popcnt");
# else
	return true;
# endif
}
#endif

#endif /* BENCH_IMPL_H */
