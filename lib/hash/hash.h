/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keyed hash of a connection key: SipHash-1-3 with the table's 128-bit
 * secret (CONNTAB_HASH_SIPHASH, and the choice of CONNTAB_HASH_AUTO on a
 * CPU without AES instructions; aes.h has the other).
 *
 * Why SipHash: the remote address and port are chosen by whoever sends us
 * packets. With a keyed PRF and a secret drawn per table, an attacker who
 * does not know the secret cannot compute which keys share a bucket, so
 * chains stay short whatever the key set (hash flooding). One to three
 * rounds per word is what the kernel uses for its own connection hashes
 * (siphash_3u32 and friends); the cost is a few ns, small beside the DRAM
 * miss on the bucket.
 *
 * The input is the key in 64-bit words: word 0 is zone, proto, family and
 * both ports; an IPv4 key adds one word (both addresses), an IPv6 key four.
 * The family sits in word 0, so IPv4 and IPv6 keys never hash alike by
 * construction of the message.
 */
#ifndef CT_HASH_H
#define CT_HASH_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "conntab/conntab.h"

struct ct_secret {
	uint64_t k0, k1;
};

static inline uint64_t ct_rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

/*
 * MurmurHash3's 32-bit finaliser: a fixed bijection whose every output
 * bit depends on every input bit. Unkeyed: it spreads structured hashes
 * (exthash's rehashed index, lib/hashtab/exthash.c), it hides nothing.
 */
static inline uint32_t ct_mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	return h ^ (h >> 16);
}

#define CT_SIPROUND(v0, v1, v2, v3) do {				\
	v0 += v1; v1 = ct_rotl64(v1, 13); v1 ^= v0; v0 = ct_rotl64(v0, 32); \
	v2 += v3; v3 = ct_rotl64(v3, 16); v3 ^= v2;			\
	v0 += v3; v3 = ct_rotl64(v3, 21); v3 ^= v0;			\
	v2 += v1; v1 = ct_rotl64(v1, 17); v1 ^= v2; v2 = ct_rotl64(v2, 32); \
} while (0)

struct ct_sip {
	uint64_t v0, v1, v2, v3;
};

static inline void ct_sip_init(struct ct_sip *s, const struct ct_secret *k)
{
	s->v0 = k->k0 ^ 0x736f6d6570736575ULL;
	s->v1 = k->k1 ^ 0x646f72616e646f6dULL;
	s->v2 = k->k0 ^ 0x6c7967656e657261ULL;
	s->v3 = k->k1 ^ 0x7465646279746573ULL;
}

static inline void ct_sip_word(struct ct_sip *s, uint64_t m)
{
	s->v3 ^= m;
	CT_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	s->v0 ^= m;
}

/* Last block: the message length in bytes in the top byte (whole words). */
static inline uint64_t ct_sip_final(struct ct_sip *s, unsigned int bytes)
{
	ct_sip_word(s, (uint64_t)bytes << 56);
	s->v2 ^= 0xff;
	CT_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	CT_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	CT_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

static inline uint64_t ct_load64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Word 0 of a key: zone, proto, family, lport, rport. */
static inline uint64_t ct_key_word0(const struct conntab_key *k)
{
	return ct_load64(k);
}

/*
 * The full 64-bit SipHash of a key: what ct_hash_sip() folds, and what a
 * table that keeps a 64-bit hash (the benchmark's ck_ht peer) stores.
 */
static inline uint64_t ct_hash_sip64(const struct ct_secret *sec,
				     const struct conntab_key *k)
{
	struct ct_sip s;

	ct_sip_init(&s, sec);
	ct_sip_word(&s, ct_key_word0(k));
	if (__builtin_expect(k->family == AF_INET, 1)) {
		ct_sip_word(&s, (uint64_t)k->laddr.v4.s_addr |
				(uint64_t)k->raddr.v4.s_addr << 32);
		return ct_sip_final(&s, 16);
	}
	ct_sip_word(&s, ct_load64(&k->laddr.bytes[0]));
	ct_sip_word(&s, ct_load64(&k->laddr.bytes[8]));
	ct_sip_word(&s, ct_load64(&k->raddr.bytes[0]));
	ct_sip_word(&s, ct_load64(&k->raddr.bytes[8]));
	return ct_sip_final(&s, 40);
}

/* The 32-bit SipHash of a key (CONNTAB_HASH_SIPHASH). */
static inline uint32_t ct_hash_sip(const struct ct_secret *sec,
				   const struct conntab_key *k)
{
	uint64_t h = ct_hash_sip64(sec, k);

	return (uint32_t)(h ^ (h >> 32));
}

#endif /* CT_HASH_H */
