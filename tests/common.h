/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test helpers that do not depend on an RCU flavor: the test connection
 * object, key generators, the list of backends this build accepts, and a
 * Check runner that never forks (a forked child would lose the RCU state
 * of its parent: registered threads, the call_rcu worker).
 *
 * Include the flavor's urcu header first, as an application does.
 */
#ifndef T_COMMON_H
#define T_COMMON_H

#include <stdint.h>
#include <stddef.h>

#include <check.h>
#include <urcu/call-rcu.h>
#include <conntab/conntab.h>

/* Set in a live test connection; a freed one carries T_MAGIC_DEAD. */
#define T_MAGIC_LIVE	0x11feed11u
#define T_MAGIC_DEAD	0xdeadbeefu

/* The user object of the tests: a node embedded in a bigger struct. */
struct tconn {
	uint64_t pad;			/* the node is not at offset 0 */
	struct conntab_node node;
	struct rcu_head rh;
	uint32_t magic;
	uint32_t id;
	uint32_t mark, count;		/* a test's own bookkeeping */
	long rank;
};

static inline struct tconn *t_conn_of(struct conntab_node *n)
{
	return conntab_entry(n, struct tconn, node);
}

/* A zeroed connection with an initialised node; aborts on ENOMEM. */
struct tconn *t_conn_new(uint32_t id);
/* Poison and free now: only for nodes no reader can still see. */
void t_conn_free_now(struct tconn *c);

/* The backends of enum conntab_backend this build accepts; returns count. */
size_t t_backends(enum conntab_backend *out, size_t max);

/*
 * The hash of the tables the running test creates (t_table(), and every
 * test that fills a struct conntab_config by hand): set per TCase by
 * t_add_backend_cases(), CONNTAB_HASH_AUTO elsewhere.
 */
extern enum conntab_hash t_hash;

/*
 * Does this CPU have AES instructions? Asked of the CPU directly, not of
 * the library, so that tests can check what CONNTAB_HASH_AUTO chose.
 */
int t_cpu_has_aes(void);

/*
 * The hashes a hash backend runs on this machine: SipHash, and AES where
 * the CPU has it; CONNTAB_TEST_HASH=siphash (or aes) in the environment
 * keeps one (make check-tsan: races do not depend on the hash). Returns
 * the count.
 */
size_t t_hashes(enum conntab_hash *out, size_t max);

/*
 * Key number @i of a family of distinct valid keys, about one in four of
 * them IPv6, otherwise IPv4 (any @i up to 2^24).
 */
void t_key(struct conntab_key *k, uint32_t i);

/*
 * Key number @i (0 <= i < T_SMALL_KEYS) of a small key space whose keys
 * differ pairwise in one field only: family (IPv6 keys carry the same
 * leading bytes as the IPv4 ones, so only the family tells them apart),
 * protocol, zone, an address byte, or a port.
 */
#define T_SMALL_KEYS	64
void t_key_small(struct conntab_key *k, uint32_t i);

/*
 * Least stats.buckets of a table with @entries entries. The API counts
 * slots for the hash backends (at least one, also when empty) but internal
 * nodes for CONNTAB_TRIE, which an empty or one-entry trie need not have;
 * two keys need at least one node to branch.
 */
static inline size_t t_min_buckets(enum conntab_backend b, size_t entries)
{
	if (b == CONNTAB_TRIE)
		return entries >= 2;
	return 1;
}

/* Same bytes? */
int t_key_same(const struct conntab_key *a, const struct conntab_key *b);

/*
 * Run @s without forking, print the results, and return the exit status
 * for the test driver. Also arms a watchdog: Check cannot time out tests
 * that run in its own process, so a hung test kills the program instead.
 */
int t_run(Suite *s, unsigned int watchdog_s);

/*
 * Add one TCase per available backend and hash ("chained/siphash",
 * "chained/aes", ...; the trie, which computes no hash, once), each
 * running the tests in @fns once with the backend as the loop index _i
 * and t_hash set to the TCase's hash.
 */
void t_add_backend_cases(Suite *s, const TTest *const *fns, size_t nfns,
			 double timeout);

#endif /* T_COMMON_H */
