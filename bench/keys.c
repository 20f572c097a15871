/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The keys of one run: uniform random TCP 4-tuples (or with --keys one of
 * the trie's worst-case sets), made once and used by every
 * implementation. keys[i] lives in object slot[i] (objects placed at
 * random, as connection objects are in a real heap); lookups go through
 * order[], the same keys shuffled, so the key stream is read sequentially
 * while the table accesses are random.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void b_key_random(struct conntab_key *k, bool v6, uint64_t *rng)
{
	uint64_t r = b_rand(rng);

	if (!v6) {
		uint64_t a = b_rand(rng);

		conntab_key_v4(k, IPPROTO_TCP, (uint32_t)a, (uint16_t)r,
			       (uint32_t)(a >> 32), (uint16_t)(r >> 16));
	} else {
		struct in6_addr l, rem;
		uint64_t w[4] = { b_rand(rng), b_rand(rng), b_rand(rng),
				  b_rand(rng) };

		memcpy(&l, &w[0], 16);
		memcpy(&rem, &w[2], 16);
		conntab_key_v6(k, IPPROTO_TCP, &l, (uint16_t)r, &rem,
			       (uint16_t)(r >> 16));
	}
}

/* Fisher-Yates on keys: a uniform permutation of k[0..n). */
void b_shuffle_keys(struct conntab_key *k, size_t n, uint64_t *rng)
{
	struct conntab_key x;
	size_t i, j;

	for (i = n; i > 1; i--) {
		j = (size_t)(b_rand(rng) % i);
		x = k[i - 1];
		k[i - 1] = k[j];
		k[j] = x;
	}
}

/*
 * Object placement, lookup order and the run's secret for keys[0..n):
 * what every workload needs beside the keys themselves.
 */
static void keys_place(struct bench_keys *k, uint64_t *rng, bool zero_secret)
{
	size_t i, n = k->n;
	uint32_t *perm;

	k->order = b_alloc(n * sizeof(*k->order));
	k->slot = b_alloc(n * sizeof(*k->slot));
	perm = b_alloc(n * sizeof(*perm));
	for (i = 0; i < n; i++)
		k->slot[i] = perm[i] = (uint32_t)i;
	b_shuffle32(k->slot, n, rng);
	b_shuffle32(perm, n, rng);
	for (i = 0; i < n; i++)
		k->order[i] = k->keys[perm[i]];
	free(perm);
	/* One secret per run, the same for every size and implementation. */
	*rng = b_opts.seed ^ 0x5ec2e75ec2e7ull;
	for (i = 0; i < 16; i += 8) {
		uint64_t r = zero_secret ? 0 : b_rand(rng);

		memcpy(&k->secret[i], &r, 8);
	}
}

/* Set bit @bit (0 = the top bit) of a 40-byte canonical key string. */
static void set_bit(uint8_t *s, unsigned int bit)
{
	s[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
}

/* The key whose canonical string (lib/key.h) is @s. */
static void key_of_string(struct conntab_key *k, const uint8_t *s)
{
	struct in6_addr l, r;

	memcpy(&l, s + 4, 16);
	memcpy(&r, s + 22, 16);
	conntab_key_v6(k, IPPROTO_TCP, &l, 0, &r, 0);
	memcpy(&k->lport, s + 20, 2);
	memcpy(&k->rport, s + 38, 2);
}

/*
 * worst-mem: toward [2001:db8::1]:443 from port 1000 or 1001 (key i's
 * low bit), remote addresses whose bits 224, 228, ... 300 of the key
 * string spell i / 2: every 4th bit a branch point, so the trie has a
 * node for nearly every pair of keys.
 */
static void keys_worst_mem(struct conntab_key *k, size_t n)
{
	unsigned int j;
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t s[40] = { 0 };

		for (j = 0; j < 20; j++)
			if ((i / 2) >> j & 1)
				set_bit(s, (56 + j) * 4);
		inet_pton(AF_INET6, "2001:db8::1", s + 4);
		s[20] = 443 >> 8;
		s[21] = 443 & 255;
		s[38] = 1000 >> 8;
		s[39] = (1000 & 255) | (i & 1);
		key_of_string(&k[i], s);
	}
}

/* worst-depth: key j differs from the all-zero key in bit 32 + j only. */
static void keys_comb(struct conntab_key *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t s[40] = { 0 };

		set_bit(s, 32 + (unsigned int)i);
		key_of_string(&k[i], s);
	}
}

void b_keys_make(struct bench_keys *k, size_t n, bool v6, uint64_t seed,
		 bool zero_secret)
{
	uint64_t rng = seed;
	size_t i, na = n / 2 > 8192 ? n / 2 : 8192;

	k->n = n;
	k->nabsent = na;
	k->keys = b_alloc(n * sizeof(*k->keys));
	k->absent = b_alloc(na * sizeof(*k->absent));
	/*
	 * 96 random bits per IPv4 key: a repeat among 16M keys has odds
	 * near 2^-50, and a repeat would show as a failed insert. The
	 * made sets have no repeat by construction; their absent keys are
	 * random IPv6 ones (v6 is set for them).
	 */
	if (b_opts.keyset == KS_WORST_MEM)
		keys_worst_mem(k->keys, n);
	else if (b_opts.keyset == KS_WORST_DEPTH)
		keys_comb(k->keys, n);
	else
		for (i = 0; i < n; i++)
			b_key_random(&k->keys[i], v6, &rng);
	for (i = 0; i < na; i++)
		b_key_random(&k->absent[i], v6, &rng);
	keys_place(k, &rng, zero_secret);
}

void b_keys_adopt(struct bench_keys *k, struct conntab_key *keys, size_t n,
		  uint64_t seed)
{
	uint64_t rng = seed;

	memset(k, 0, sizeof(*k));
	k->n = n;
	k->keys = keys;
	keys_place(k, &rng, b_opts.zero_secret);
}

void b_keys_free(struct bench_keys *k)
{
	free(k->keys);
	free(k->order);
	free(k->absent);
	free(k->slot);
	memset(k, 0, sizeof(*k));
}
