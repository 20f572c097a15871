/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keyed hash of a connection key with the CPU's AES instructions
 * (CONNTAB_HASH_AES): AES-128 under the table's 128-bit secret.
 *
 * Why AES: SipHash-1-3 is three quarters of a lookup's instructions
 * (doc/performance.md), and a lookup one at a time is bounded by how many
 * of them the core's out-of-order window holds. Ten AES rounds are ten
 * instructions on x86-64 (AES-NI) and twenty on arm64 (AESE + AESMC), and
 * a block cipher keyed with a secret is a pseudo-random function of its
 * input block, which is what a hash-flooding defence needs.
 *
 * The messages (the key's bytes as laid out in struct conntab_key):
 *
 *  - IPv4: one block, bytes 0-7 of the key (zone, proto, family, lport,
 *    rport), then laddr.v4, then raddr.v4. Distinct IPv4 keys are distinct
 *    blocks, so their hashes are the outputs of a pseudo-random permutation
 *    on distinct inputs: a PRF (PRP/PRF switching), truncated to 32 bits.
 *  - IPv6: CBC-MAC over three blocks, the 40 key bytes in memory order and
 *    eight zero bytes: E(E(E(B1) ^ B2) ^ B3). CBC-MAC is a PRF on any
 *    prefix-free set of messages (Bellare, Kilian and Rogaway; Petrank and
 *    Rackoff). Every IPv6 message has three blocks, and no IPv4 message is
 *    a prefix of one: its only block carries AF_INET in byte 3, every
 *    IPv6 first block AF_INET6. So one key serves both families.
 *
 * doc/design.md ("The keyed hash") compares this with SipHash and with
 * what the kernel does. Nothing here depends on the AES key staying in
 * registers between calls; the round keys are read from the table head,
 * which stays in L1 under a stream of lookups.
 *
 * The library is built for the baseline ISA: only the functions marked
 * CT_AES_TARGET use AES instructions, and the front end calls them only
 * on tables whose create found the CPU able to run them (ct_aes_cpu()).
 * A hash backend compiles its lookup paths once per hash (hash-ops.h), so
 * the AES variant inlines its hash like the SipHash one.
 */
#ifndef CT_AES_H
#define CT_AES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conntab/conntab.h"
#include "../wipe.h"

/* AES-128: the key and ten round keys, FIPS-197 byte order. */
struct ct_aes_key {
	uint8_t rk[11][16];
} __attribute__((aligned(16)));

/* The AES S-box (FIPS-197, 5.1.1): for the key expansion only. */
static const uint8_t ct_aes_sbox[256] = {
	0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b, 0xfe, 0xd7, 0xab, 0x76,
	0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0, 0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0,
	0xb7, 0xfd, 0x93, 0x26, 0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
	0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2, 0xeb, 0x27, 0xb2, 0x75,
	0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0, 0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84,
	0x53, 0xd1, 0x00, 0xed, 0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
	0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f, 0x50, 0x3c, 0x9f, 0xa8,
	0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5, 0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2,
	0xcd, 0x0c, 0x13, 0xec, 0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
	0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14, 0xde, 0x5e, 0x0b, 0xdb,
	0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c, 0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79,
	0xe7, 0xc8, 0x37, 0x6d, 0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
	0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f, 0x4b, 0xbd, 0x8b, 0x8a,
	0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e, 0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e,
	0xe1, 0xf8, 0x98, 0x11, 0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
	0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f, 0xb0, 0x54, 0xbb, 0x16,
};

/*
 * Expand a 16-byte key (FIPS-197, 5.2), once per table. Portable code:
 * the same round keys on every architecture, and tests and the benchmark
 * can expand a known secret as the library does.
 */
static inline void ct_aes_expand(struct ct_aes_key *ak, const uint8_t key[16])
{
	uint8_t *w = &ak->rk[0][0], t[4], rcon = 1;
	unsigned int i;

	__builtin_memcpy(w, key, 16);
	for (i = 16; i < sizeof(ak->rk); i += 4) {
		__builtin_memcpy(t, w + i - 4, 4);
		if (i % 16 == 0) {
			/* RotWord, SubWord, Rcon */
			uint8_t t0 = t[0];

			t[0] = (uint8_t)(ct_aes_sbox[t[1]] ^ rcon);
			t[1] = ct_aes_sbox[t[2]];
			t[2] = ct_aes_sbox[t[3]];
			t[3] = ct_aes_sbox[t0];
			rcon = (uint8_t)((rcon << 1) ^ ((rcon >> 7) * 0x1b));
		}
		w[i + 0] = w[i - 16 + 0] ^ t[0];
		w[i + 1] = w[i - 16 + 1] ^ t[1];
		w[i + 2] = w[i - 16 + 2] ^ t[2];
		w[i + 3] = w[i - 16 + 3] ^ t[3];
	}
	/* t holds round-key bytes: clear it like every other key copy. */
	ct_wipe(t, sizeof(t));
}

/* Does this CPU run the AES paths? (detected once, then cached) */
bool ct_aes_cpu(void);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
# define CT_HAVE_AES	1
# include <immintrin.h>
# define CT_AES_TARGET	__attribute__((target("aes,sse4.1")))

typedef __m128i ct_aes_block;

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_encrypt(const struct ct_aes_key *ak, ct_aes_block b)
{
	const __m128i *rk = (const __m128i *)ak->rk;

	b = _mm_xor_si128(b, rk[0]);
	b = _mm_aesenc_si128(b, rk[1]);
	b = _mm_aesenc_si128(b, rk[2]);
	b = _mm_aesenc_si128(b, rk[3]);
	b = _mm_aesenc_si128(b, rk[4]);
	b = _mm_aesenc_si128(b, rk[5]);
	b = _mm_aesenc_si128(b, rk[6]);
	b = _mm_aesenc_si128(b, rk[7]);
	b = _mm_aesenc_si128(b, rk[8]);
	b = _mm_aesenc_si128(b, rk[9]);
	return _mm_aesenclast_si128(b, rk[10]);
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_load(const void *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* The low 8 bytes at @p, the high 8 zero. */
static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_load_half(const void *p)
{
	return _mm_loadl_epi64((const __m128i *)p);
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_make(uint64_t lo, uint64_t hi)
{
	return _mm_set_epi64x((long long)hi, (long long)lo);
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_xor(ct_aes_block a, ct_aes_block b)
{
	return _mm_xor_si128(a, b);
}

/*
 * The IPv4 message block of key @k (top of this file): bytes 0-7 of the
 * key, then laddr.v4 and raddr.v4, as ct_aes_make(word 0, laddr | raddr
 * << 32) builds it, in three instructions (a load and two inserts from
 * memory) instead of six.
 */
static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_load_v4(const struct conntab_key *k)
{
	ct_aes_block b = _mm_loadl_epi64((const __m128i *)(const void *)k);

	b = _mm_insert_epi32(b, (int)k->laddr.v4.s_addr, 2);
	return _mm_insert_epi32(b, (int)k->raddr.v4.s_addr, 3);
}

static inline CT_AES_TARGET __attribute__((always_inline)) uint32_t
ct_aes_low32(ct_aes_block b)
{
	return (uint32_t)_mm_cvtsi128_si32(b);
}

#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
# define CT_HAVE_AES	1
# include <arm_neon.h>
# define CT_AES_TARGET	__attribute__((target("+crypto")))

typedef uint8x16_t ct_aes_block;

/*
 * AESE is AddRoundKey, SubBytes and ShiftRows; AESMC is MixColumns: the
 * same cipher as x86's AESENC sequence, with the round keys one step
 * earlier (the first AESE adds rk[0], the last XOR adds rk[10]).
 */
static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_encrypt(const struct ct_aes_key *ak, ct_aes_block b)
{
	unsigned int r;

	for (r = 0; r < 9; r++)
		b = vaesmcq_u8(vaeseq_u8(b, vld1q_u8(ak->rk[r])));
	b = vaeseq_u8(b, vld1q_u8(ak->rk[9]));
	return veorq_u8(b, vld1q_u8(ak->rk[10]));
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_load(const void *p)
{
	return vld1q_u8((const uint8_t *)p);
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_load_half(const void *p)
{
	return vcombine_u8(vld1_u8((const uint8_t *)p), vdup_n_u8(0));
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_make(uint64_t lo, uint64_t hi)
{
	return vreinterpretq_u8_u64(vcombine_u64(vcreate_u64(lo),
						 vcreate_u64(hi)));
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_xor(ct_aes_block a, ct_aes_block b)
{
	return veorq_u8(a, b);
}

/* The IPv4 message block of key @k (as the x86-64 version). */
static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_aes_load_v4(const struct conntab_key *k)
{
	uint64_t w0;

	__builtin_memcpy(&w0, k, 8);
	return ct_aes_make(w0, (uint64_t)k->laddr.v4.s_addr |
			       (uint64_t)k->raddr.v4.s_addr << 32);
}

static inline CT_AES_TARGET __attribute__((always_inline)) uint32_t
ct_aes_low32(ct_aes_block b)
{
	return vgetq_lane_u32(vreinterpretq_u32_u8(b), 0);
}
#endif

#ifdef CT_HAVE_AES
/*
 * The last cipher block of a valid key @k's message (see the top of this
 * file): the hash before truncation, for a table that keeps more than 32
 * bits of it (the benchmark's ck_ht peer). Only callable from a
 * CT_AES_TARGET function on a CPU with ct_aes_cpu().
 */
/*
 * The IPv6 message's last block, out of line: inlined, its three
 * encryptions made the compiler load the eleven round keys into
 * registers ahead of the family's branch, eleven instructions that the
 * IPv4 path then paid for nothing (its single encryption reads each
 * round key once, as an operand of its AES instruction).
 */
static CT_AES_TARGET __attribute__((noinline, unused)) ct_aes_block
ct_hash_aes_block_v6(const struct ct_aes_key *ak, const struct conntab_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	ct_aes_block b;

	b = ct_aes_encrypt(ak, ct_aes_load(p));
	b = ct_aes_encrypt(ak, ct_aes_xor(b, ct_aes_load(p + 16)));
	return ct_aes_encrypt(ak, ct_aes_xor(b, ct_aes_load_half(p + 32)));
}

static inline CT_AES_TARGET __attribute__((always_inline)) ct_aes_block
ct_hash_aes_block(const struct ct_aes_key *ak, const struct conntab_key *k)
{
	if (__builtin_expect(k->family == AF_INET, 1))
		return ct_aes_encrypt(ak, ct_aes_load_v4(k));
	return ct_hash_aes_block_v6(ak, k);
}

/* The 32-bit AES hash of a valid key @k; the same precondition. */
static inline CT_AES_TARGET __attribute__((always_inline)) uint32_t
ct_hash_aes(const struct ct_aes_key *ak, const struct conntab_key *k)
{
	return ct_aes_low32(ct_hash_aes_block(ak, k));
}
#endif

/*
 * The same hash from code built for the baseline ISA (writers, tests):
 * one direct call. Only on a CPU with ct_aes_cpu().
 */
uint32_t ct_hash_aes_call(const struct ct_aes_key *ak,
			  const struct conntab_key *k);

/* Encrypt one block (tests: the FIPS-197 vectors). Same precondition. */
void ct_aes_encrypt_block(const struct ct_aes_key *ak, const uint8_t in[16],
			  uint8_t out[16]);

#endif /* CT_AES_H */
