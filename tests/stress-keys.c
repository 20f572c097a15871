/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The key sets of tests/stress: the shapes the other tests use, each
 * made for opt.nids ids, distinct by construction (some part of every
 * key is a bijection of its id).
 *
 *   mixed       t_key(): one local endpoint, about one in four keys IPv6
 *               (the other threaded tests' keys)
 *   remote      one local endpoint, random-looking remote IPv4 endpoints
 *               (a server's table; test-trie-bound's churn)
 *   structured  a few zones, protocols and local endpoints of both
 *               families, random remotes (test-trie's structured set)
 *   prefix      IPv6 keys sharing all but their last 32 bits, in id
 *               order: long common prefixes, dense runs (test-trie's
 *               adversarial sets)
 *   fields      keys that differ in one field only: family (IPv6 keys
 *               carry the IPv4 keys' leading bytes), protocol, zone,
 *               then the ports and address (t_key_small(), scaled)
 *   skewed      one local endpoint, remote endpoints chosen so that
 *               their hashes under the known secret and the run's hash
 *               share their top SKEW_BITS bits: one corner of exthash's
 *               directory, long chains elsewhere (test-exthash-skew)
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/hash/aes.h"
#include "../lib/hash/hash.h"
#include "stress.h"

#define SKEW_BITS	5

const uint8_t sk_secret[16] = "stress-secret-16";

static struct conntab_key *sk_keys;
static uint8_t (*sk_strs)[48];
static uint8_t *sk_len;		/* string bytes: 16 or 40 */

/* A bijection of 32-bit numbers (odd multiplies and xor-shifts). */
static uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

static void key_mixed(struct conntab_key *k, uint32_t id)
{
	t_key(k, id);
}

static void key_remote(struct conntab_key *k, uint32_t id)
{
	uint32_t r = mix32(id);

	conntab_key_v4(k, IPPROTO_TCP, htonl(0xc0000201), htons(443),
		       htonl(r), htons((uint16_t)(1024 + mix32(~id) % 60000)));
}

static void key_structured(struct conntab_key *k, uint32_t id)
{
	uint32_t r = mix32(id ^ 0x5bd1e995u), q = mix32(id);
	uint16_t lport = htons((uint16_t)(r & 1 ? 443 : 80 + (r >> 8 & 3)));

	if (r >> 3 & 1) {
		struct in6_addr l = { { { 0x20 } } }, rr = { { { 0x20, 1 } } };

		l.s6_addr[15] = (uint8_t)(r >> 4 & 3);
		memcpy(&rr.s6_addr[8], &r, 4);
		memcpy(&rr.s6_addr[12], &q, 4);
		conntab_key_v6(k, IPPROTO_TCP, &l, lport, &rr,
			       (uint16_t)(r >> 16));
	} else {
		conntab_key_v4(k, r >> 6 & 1 ? IPPROTO_TCP : IPPROTO_UDP,
			       htonl(0x0a000000u | (r >> 4 & 3)), lport, q,
			       (uint16_t)(r >> 16));
	}
	k->zone = (uint16_t)(r >> 12 & 3);
}

static void key_prefix(struct conntab_key *k, uint32_t id)
{
	struct in6_addr l = { { { 0x20, 0x01, 0x0d, 0xb8 } } };
	struct in6_addr r = { { { 0x20, 0x01, 0x0d, 0xb8, 0xff } } };
	uint32_t be = htonl(id);

	l.s6_addr[15] = 1;
	memcpy(&r.s6_addr[12], &be, 4);
	conntab_key_v6(k, IPPROTO_TCP, &l, htons(443), &r, htons(50000));
}

static void key_fields(struct conntab_key *k, uint32_t id)
{
	uint32_t laddr = htonl(0xc0000201);
	uint32_t raddr = htonl(0xc6336400u ^ (id >> 20));
	uint16_t rport = htons((uint16_t)(id >> 4));
	uint8_t proto = id & 2 ? IPPROTO_UDP : IPPROTO_TCP;

	if (id & 1) {
		struct in6_addr l = { 0 }, r = { 0 };

		/* Same leading bytes as the IPv4 key: only family differs. */
		memcpy(&l, &laddr, 4);
		memcpy(&r, &raddr, 4);
		conntab_key_v6(k, proto, &l, htons(80), &r, rport);
	} else {
		conntab_key_v4(k, proto, laddr, htons(80), raddr, rport);
	}
	k->zone = (uint16_t)(id >> 2 & 3);
}

#ifdef CT_HAVE_AES
/* The library's AES hash, inlined here (its own entry point is hidden). */
static CT_AES_TARGET uint32_t aes_hash(const struct ct_aes_key *ak,
				       const struct conntab_key *k)
{
	return ct_hash_aes(ak, k);
}
#endif

/* Fills every id at once: each key is the next candidate that passes. */
static void keys_skewed(enum conntab_hash h)
{
	struct ct_secret sec;
	struct conntab_key key;
	uint32_t id = 0, x = 0, hv;
#ifdef CT_HAVE_AES
	struct ct_aes_key ak;

	ct_aes_expand(&ak, sk_secret);
#endif
	memcpy(&sec.k0, sk_secret, 8);
	memcpy(&sec.k1, sk_secret + 8, 8);
	while (id < opt.nids) {
		key_remote(&key, x++);
#ifdef CT_HAVE_AES
		if (h == CONNTAB_HASH_AES)
			hv = aes_hash(&ak, &key);
		else
#endif
			hv = ct_hash_sip(&sec, &key);
		if (hv >> (32 - SKEW_BITS) == 0)
			sk_keys[id++] = key;
	}
}

static const struct {
	const char *name, *what;
	void (*key)(struct conntab_key *k, uint32_t id);
} sets[] = {
	{ "mixed", "t_key(): one local endpoint, one in four IPv6",
	  key_mixed },
	{ "remote", "one local endpoint, random remote IPv4 endpoints",
	  key_remote },
	{ "structured", "few zones, protocols, local endpoints; both "
	  "families", key_structured },
	{ "prefix", "IPv6 sharing all but the last 32 bits, in order",
	  key_prefix },
	{ "fields", "keys differing in one field: family, protocol, zone, "
	  "port", key_fields },
	{ "skewed", "hashes sharing their top 5 bits (known secret)", NULL },
};

#define NSETS	(sizeof(sets) / sizeof(sets[0]))

unsigned int sk_count(void)
{
	return NSETS;
}

const char *sk_name(unsigned int i)
{
	return sets[i].name;
}

const char *sk_what(unsigned int i)
{
	return sets[i].what;
}

int sk_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < NSETS; i++)
		if (!strcmp(name, sets[i].name))
			return (int)i;
	return -1;
}

/*
 * The canonical string, written from conntab_walk_prefix()'s
 * documentation (zone, proto, family, local address and port, remote
 * address and port, big-endian), not from lib/key.h.
 */
static unsigned int ref_str(const struct conntab_key *k, uint8_t *s)
{
	unsigned int a = k->family == AF_INET ? 4 : 16, o = 0;

	memset(s, 0, 48);
	s[o++] = (uint8_t)(k->zone >> 8);
	s[o++] = (uint8_t)(k->zone & 0xff);
	s[o++] = k->proto;
	s[o++] = k->family;
	memcpy(s + o, k->laddr.bytes, a);
	o += a;
	memcpy(s + o, &k->lport, 2);
	o += 2;
	memcpy(s + o, k->raddr.bytes, a);
	o += a;
	memcpy(s + o, &k->rport, 2);
	o += 2;
	return o;
}

void sk_build(unsigned int i, enum conntab_hash h)
{
	uint32_t id;

	sk_free();
	sk_keys = calloc(opt.nids, sizeof(*sk_keys));
	sk_strs = calloc(opt.nids, sizeof(*sk_strs));
	sk_len = calloc(opt.nids, 1);
	if (!sk_keys || !sk_strs || !sk_len) {
		perror("stress: keys");
		exit(2);
	}
	if (sets[i].key) {
		for (id = 0; id < opt.nids; id++)
			sets[i].key(&sk_keys[id], id);
	} else {
		keys_skewed(h == CONNTAB_HASH_AUTO ? CONNTAB_HASH_SIPHASH : h);
	}
	for (id = 0; id < opt.nids; id++)
		sk_len[id] = (uint8_t)ref_str(&sk_keys[id], sk_strs[id]);
}

void sk_free(void)
{
	free(sk_keys);
	free(sk_strs);
	free(sk_len);
	sk_keys = NULL;
	sk_strs = NULL;
	sk_len = NULL;
}

void sk_key(struct conntab_key *k, uint32_t id)
{
	*k = sk_keys[id];
}

const uint8_t *sk_str(uint32_t id)
{
	return sk_strs[id];
}

unsigned int sk_bits(uint32_t id)
{
	return 8u * sk_len[id];
}

bool sk_prefix_eq(uint32_t a, uint32_t b, unsigned int bits)
{
	const uint8_t *sa = sk_strs[a], *sb = sk_strs[b];
	unsigned int n = bits / 8, r = bits % 8;

	if (memcmp(sa, sb, n))
		return false;
	return !r || !((sa[n] ^ sb[n]) >> (8 - r));
}
