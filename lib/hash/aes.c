/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AES hash: CPU detection and the out-of-line entries for code built for
 * the baseline ISA (see aes.h).
 */
#include <stdbool.h>
#include <string.h>
#if defined(__aarch64__)
# include <sys/auxv.h>
#endif

#include "aes.h"

/* 0 unknown, 1 no, 2 yes: racing first calls compute the same answer. */
static int ct_aes_state;

static bool ct_aes_detect(void)
{
#if defined(__x86_64__) && defined(CT_HAVE_AES)
	__builtin_cpu_init();
	return __builtin_cpu_supports("aes") &&
	       __builtin_cpu_supports("sse4.1");
#elif defined(__aarch64__) && defined(CT_HAVE_AES)
# ifndef HWCAP_AES
#  define HWCAP_AES	(1 << 3)
# endif
	return (getauxval(AT_HWCAP) & HWCAP_AES) != 0;
#else
	return false;
#endif
}

bool ct_aes_cpu(void)
{
	int s = __atomic_load_n(&ct_aes_state, __ATOMIC_RELAXED);

	if (!s) {
		s = ct_aes_detect() ? 2 : 1;
		__atomic_store_n(&ct_aes_state, s, __ATOMIC_RELAXED);
	}
	return s == 2;
}

#ifdef CT_HAVE_AES
CT_AES_TARGET uint32_t ct_hash_aes_call(const struct ct_aes_key *ak,
					const struct conntab_key *k)
{
	return ct_hash_aes(ak, k);
}

CT_AES_TARGET void ct_aes_encrypt_block(const struct ct_aes_key *ak,
					const uint8_t in[16], uint8_t out[16])
{
	ct_aes_block b = ct_aes_encrypt(ak, ct_aes_load(in));

	memcpy(out, &b, 16);
}
#endif
