/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hash the peers share with conntab's tables (--hash): SipHash-1-3,
 * or AES-128 where the run's tables use it, under the run's secret, from
 * the library's own headers (lib/hash/hash.h, lib/hash/aes.h), so that every table
 * of a run spreads its keys alike.
 *
 * As in the library (lib/hashtab/hash-ops.h), a lookup inlines its hash: a peer's
 * lookup is written once as find(t, hash, key) and B_PEER_LOOKUP compiles
 * it per hash, the AES one with the AES target, and picks the table's.
 * Writers take b_hash32() / b_hash64(): SipHash inline, AES one call, as
 * the library's writers do.
 */
#ifndef BENCH_PEER_HASH_H
#define BENCH_PEER_HASH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hash/aes.h"	/* lib/hash/aes.h */
#include "hash/hash.h"	/* lib/hash/hash.h */

struct b_hash {
	struct ct_secret sec;
	bool aes;		/* AES-128, else SipHash-1-3 */
#ifdef CT_HAVE_AES
	struct ct_aes_key ak;
#endif
};

/* @secret: 16 bytes; @aes only where the run's tables hash with AES. */
void b_hash_init(struct b_hash *h, const uint8_t *secret, bool aes);
uint32_t b_hash32(const struct b_hash *h, const struct conntab_key *k);
/* The same hash before the fold to 32 bits, for ck_ht's 64-bit slots. */
uint64_t b_hash64(const struct b_hash *h, const struct conntab_key *k);

#ifdef CT_HAVE_AES
static inline CT_AES_TARGET __attribute__((always_inline)) uint64_t
b_aes_low64(ct_aes_block b)
{
	uint64_t v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

# define B_PEER_LOOKUP_AES(name, tab_t, find, aes)			\
static CT_AES_TARGET void *name##_aes(tab_t *t,				\
				      const struct conntab_key *k)	\
{									\
	return find(t, aes, k);						\
}
# define B_PEER_CALL_AES(name, t, k)					\
	if ((t)->h.aes)							\
		return name##_aes(t, k);
#else
# define B_PEER_LOOKUP_AES(name, tab_t, find, aes)
# define B_PEER_CALL_AES(name, t, k)
#endif

/*
 * void *name(void *t, const struct conntab_key *k): @find(t, hash, k)
 * (static inline, always_inline) with the hash expression @sip or @aes
 * (of t and k) for a table of type @tab_t with its struct b_hash in h.
 */
#define B_PEER_LOOKUP(name, tab_t, find, sip, aes)			\
B_PEER_LOOKUP_AES(name, tab_t, find, aes)				\
static void *name(void *tp, const struct conntab_key *k)		\
{									\
	tab_t *t = tp;							\
									\
	B_PEER_CALL_AES(name, t, k)					\
	return find(t, sip, k);						\
}

#endif /* BENCH_PEER_HASH_H */
