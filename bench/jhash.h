/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bob Jenkins' lookup3 hash (2006, placed in the public domain), in its
 * hashword() form: 32-bit words and a 32-bit seed, three words mixed per
 * round, a final avalanche over the last one to three. This is the hash
 * users of cds_lfht usually write and the one the kernel's jhash is (its
 * established-socket hash, inet_ehashfn, seeds it with a boot secret), so
 * the lfht-jhash peer is lfht as its users run it. Written here from the
 * published description of the algorithm; bench/test-jhash checks it
 * against the published test vectors.
 */
#ifndef BENCH_JHASH_H
#define BENCH_JHASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <conntab/conntab.h>

static inline uint32_t b_rol32(uint32_t x, unsigned int k)
{
	return x << k | x >> (32 - k);
}

/* Reversible mixing of three words: every input bit affects the rest. */
static inline void b_jmix(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*a -= *c; *a ^= b_rol32(*c, 4); *c += *b;
	*b -= *a; *b ^= b_rol32(*a, 6); *a += *c;
	*c -= *b; *c ^= b_rol32(*b, 8); *b += *a;
	*a -= *c; *a ^= b_rol32(*c, 16); *c += *b;
	*b -= *a; *b ^= b_rol32(*a, 19); *a += *c;
	*c -= *b; *c ^= b_rol32(*b, 4); *b += *a;
}

/* Final avalanche of three words into c. */
static inline void b_jfinal(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*c ^= *b; *c -= b_rol32(*b, 14);
	*a ^= *c; *a -= b_rol32(*c, 11);
	*b ^= *a; *b -= b_rol32(*a, 25);
	*c ^= *b; *c -= b_rol32(*b, 16);
	*a ^= *c; *a -= b_rol32(*c, 4);
	*b ^= *a; *b -= b_rol32(*a, 14);
	*c ^= *b; *c -= b_rol32(*b, 24);
}

/* lookup3's hashword(): @n words at @k, seed @seed. */
static inline uint32_t b_jhash_words(const uint32_t *k, size_t n,
				     uint32_t seed)
{
	uint32_t a, b, c;

	a = b = c = 0xdeadbeef + ((uint32_t)n << 2) + seed;
	for (; n > 3; n -= 3, k += 3) {
		a += k[0];
		b += k[1];
		c += k[2];
		b_jmix(&a, &b, &c);
	}
	switch (n) {
	case 3:
		c += k[2];
		/* fall through */
	case 2:
		b += k[1];
		/* fall through */
	case 1:
		a += k[0];
		b_jfinal(&a, &b, &c);
		break;
	}
	return c;
}

/*
 * A connection key as the words an lfht user would hash: zone, protocol
 * and family; both ports; the addresses (4 words for IPv4, 10 for IPv6).
 */
static inline uint32_t b_jhash_key(const struct conntab_key *k, uint32_t seed)
{
	uint32_t w[10];

	memcpy(&w[0], k, 8);	/* zone, proto, family; lport, rport */
	if (k->family == AF_INET) {
		w[2] = k->laddr.v4.s_addr;
		w[3] = k->raddr.v4.s_addr;
		return b_jhash_words(w, 4, seed);
	}
	memcpy(&w[2], &k->laddr, 16);
	memcpy(&w[6], &k->raddr, 16);
	return b_jhash_words(w, 10, seed);
}

#endif /* BENCH_JHASH_H */
