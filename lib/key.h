/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Key validation and comparison, shared by every backend.
 */
#ifndef CT_KEY_H
#define CT_KEY_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "conntab/conntab.h"
#include "hash/hash.h"

/*
 * Equal keys. Word 0 (zone, proto, family, ports) first: it differs for
 * most non-matching keys. An IPv4 key then needs two 32-bit compares: the
 * unused address bytes are zero in every key the table holds (validated at
 * insert), so they need no compare.
 */
static inline bool ct_key_eq(const struct conntab_key *a,
			     const struct conntab_key *b)
{
	if (ct_key_word0(a) != ct_key_word0(b))
		return false;
	if (__builtin_expect(a->family == AF_INET, 1))
		return a->laddr.v4.s_addr == b->laddr.v4.s_addr &&
		       a->raddr.v4.s_addr == b->raddr.v4.s_addr;
	return ct_load64(&a->laddr.bytes[0]) == ct_load64(&b->laddr.bytes[0]) &&
	       ct_load64(&a->laddr.bytes[8]) == ct_load64(&b->laddr.bytes[8]) &&
	       ct_load64(&a->raddr.bytes[0]) == ct_load64(&b->raddr.bytes[0]) &&
	       ct_load64(&a->raddr.bytes[8]) == ct_load64(&b->raddr.bytes[8]);
}

/*
 * ct_key_eq() without a branch on @a, a node's key that may still be on
 * its way from memory (batch.h): the words are compared with bitwise
 * operations. The one branch is on @b's family, the key looked up, known
 * early and the same for most keys of a batch.
 */
static inline bool ct_key_eq_nb(const struct conntab_key *a,
				const struct conntab_key *b)
{
	uint64_t d = ct_key_word0(a) ^ ct_key_word0(b);

	if (__builtin_expect(b->family == AF_INET, 1))
		return (d | (uint32_t)(a->laddr.v4.s_addr ^ b->laddr.v4.s_addr) |
			(uint32_t)(a->raddr.v4.s_addr ^ b->raddr.v4.s_addr)) == 0;
	d |= ct_load64(&a->laddr.bytes[0]) ^ ct_load64(&b->laddr.bytes[0]);
	d |= ct_load64(&a->laddr.bytes[8]) ^ ct_load64(&b->laddr.bytes[8]);
	d |= ct_load64(&a->raddr.bytes[0]) ^ ct_load64(&b->raddr.bytes[0]);
	d |= ct_load64(&a->raddr.bytes[8]) ^ ct_load64(&b->raddr.bytes[8]);
	return d == 0;
}

/*
 * Is @k a key the table takes? AF_INET with the 12 address bytes beyond
 * each v4 zero (so that ct_key_eq() may skip them), or AF_INET6. Inline,
 * in three loads a side: as a call to memcmp() it was 20 instructions
 * of every insert's.
 */
static inline bool ct_key_valid(const struct conntab_key *k)
{
	uint32_t l3, r3;

	if (__builtin_expect(k->family == AF_INET, 1)) {
		memcpy(&l3, &k->laddr.bytes[12], 4);
		memcpy(&r3, &k->raddr.bytes[12], 4);
		return !(ct_load64(&k->laddr.bytes[4]) |
			 ct_load64(&k->raddr.bytes[4]) | l3 | r3);
	}
	return k->family == AF_INET6;
}

/*
 * The canonical key string: the key as one big-endian byte string in the
 * order zone (2), proto (1), family (1), local address (4 or 16), local
 * port (2), remote address (4 or 16), remote port (2): 16 bytes for IPv4,
 * 40 for IPv6. Ports and addresses are already in network byte order; the
 * zone is a host-order number and is written big-endian.
 *
 * Why this order: comparing strings byte by byte then sorts connections
 * by zone, protocol, family and local endpoint, so every connection of one
 * local endpoint (or one zone) shares a prefix. The family precedes the
 * part whose length depends on it, so no string is a prefix of another.
 * conntab_walk_prefix() counts its prefix bits over this string, and the
 * trie backend branches on it.
 */
#define CT_KEY_STR_MAX	40
/*
 * Buffers for the string are this long and zero past its end, so that a
 * reader may extract a chunk that straddles or passes the end (a 16-byte
 * IPv4 string being compared on a path built from 40-byte IPv6 strings).
 */
#define CT_KEY_STR_BUF	48

/* Length in bits of the canonical string of a valid key. */
static inline unsigned int ct_key_str_bits(const struct conntab_key *k)
{
	return k->family == AF_INET ? 16 * 8 : CT_KEY_STR_MAX * 8;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * The canonical string of IPv4 key @k (16 bytes) as two words in memory
 * order: *lo its bytes 0-7, *hi its bytes 8-15 (little-endian loads of
 * them). Built from word 0 (zone, proto, family, lport, rport in memory
 * order) and the addresses, instead of six byte-wise copies: this runs
 * once per lookup. Only the zone changes byte order (tests/test-keys
 * checks ct_key_str() against the byte-wise definition).
 */
static inline void ct_key_words4(const struct conntab_key *k, uint64_t *lo,
				 uint64_t *hi)
{
	uint64_t w = ct_key_word0(k);

	*lo = (w & 0xffff0000u) | __builtin_bswap16((uint16_t)w) |
	      (uint64_t)k->laddr.v4.s_addr << 32;
	*hi = ((w >> 32) & 0xffff) | (uint64_t)k->raddr.v4.s_addr << 16 |
	      (w & 0xffff000000000000u);
}
#endif

/*
 * Write the canonical string of @k into @s (CT_KEY_STR_BUF bytes, zeroed
 * past the string); returns its length in bytes. Fixed-size copies per
 * family: lookups of the trie build one per call.
 */
static inline unsigned int ct_key_str(const struct conntab_key *k, uint8_t *s)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (__builtin_expect(k->family == AF_INET, 1)) {
		/* Two 8-byte stores (ct_key_words4()). */
		uint64_t lo, hi;

		ct_key_words4(k, &lo, &hi);
		memcpy(s, &lo, 8);
		memcpy(s + 8, &hi, 8);
		memset(s + 16, 0, CT_KEY_STR_BUF - 16);
		return 16;
	}
#endif
	s[0] = (uint8_t)(k->zone >> 8);
	s[1] = (uint8_t)k->zone;
	s[2] = k->proto;
	s[3] = k->family;
	if (k->family == AF_INET) {
		memcpy(s + 4, &k->laddr, 4);
		memcpy(s + 8, &k->lport, 2);
		memcpy(s + 10, &k->raddr, 4);
		memcpy(s + 14, &k->rport, 2);
		memset(s + 16, 0, CT_KEY_STR_BUF - 16);
		return 16;
	}
	memcpy(s + 4, &k->laddr, 16);
	memcpy(s + 20, &k->lport, 2);
	memcpy(s + 22, &k->raddr, 16);
	memcpy(s + 38, &k->rport, 2);
	memset(s + CT_KEY_STR_MAX, 0, CT_KEY_STR_BUF - CT_KEY_STR_MAX);
	return CT_KEY_STR_MAX;
}

/* Big-endian 64-bit load (string bytes in order as one number). */
static inline uint64_t ct_load_be64(const uint8_t *p)
{
	return __builtin_bswap64(ct_load64(p));
}

/*
 * Index of the first bit (0 = most significant bit of byte 0) where the
 * strings @a and @b differ within their first @len bytes, or @len * 8 if
 * they are equal there.
 */
static inline unsigned int ct_str_diff(const uint8_t *a, const uint8_t *b,
				       unsigned int len)
{
	unsigned int i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t x = ct_load_be64(a + i) ^ ct_load_be64(b + i);

		if (x)
			return i * 8 + (unsigned int)__builtin_clzll(x);
	}
	for (; i < len; i++) {
		unsigned int x = a[i] ^ b[i];

		if (x)
			return i * 8 + (unsigned int)__builtin_clz(x) - 24;
	}
	return len * 8;
}

/*
 * Do the first @bits bits of the strings @a and @b agree? Whole 8-byte
 * words, then the word with the last bits, masked: both strings must
 * hold (bits + 63) / 64 words (CT_KEY_STR_MAX is five, for bits up to
 * CT_KEY_STR_MAX * 8).
 */
static inline bool ct_str_prefix_eq(const uint8_t *a, const uint8_t *b,
				    unsigned int bits)
{
	unsigned int i;

	for (i = 0; i + 64 <= bits; i += 64)
		if (ct_load64(a + i / 8) != ct_load64(b + i / 8))
			return false;
	return i == bits || !((ct_load_be64(a + i / 8) ^
			       ct_load_be64(b + i / 8)) >> (64 - (bits - i)));
}

/*
 * Does the key of @n agree with the canonical string @s in its first
 * @bits bits? (the conntab_walk_prefix() match)
 */
static inline bool ct_node_prefix_eq(const struct conntab_node *n,
				     const uint8_t *s, unsigned int bits)
{
	uint8_t ns[CT_KEY_STR_BUF];

	ct_key_str(&n->ct_key, ns);
	return ct_str_prefix_eq(ns, s, bits);
}

#endif /* CT_KEY_H */
