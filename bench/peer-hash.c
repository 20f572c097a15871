/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The peers' hash off the lookup path (see peer-hash.h): the AES forms
 * are functions of their own, the only code here built with the AES
 * target, called only when the run's tables hash with AES, which
 * conntab_create() allows only on a CPU that runs it.
 */
#include "config.h"

#include "peer-hash.h"

void b_hash_init(struct b_hash *h, const uint8_t *secret, bool aes)
{
	memset(h, 0, sizeof(*h));
	memcpy(&h->sec.k0, secret, 8);
	memcpy(&h->sec.k1, secret + 8, 8);
#ifdef CT_HAVE_AES
	/* The library keys either hash with the same 16 bytes. */
	h->aes = aes;
	if (aes)
		ct_aes_expand(&h->ak, secret);
#endif
}

#ifdef CT_HAVE_AES
static CT_AES_TARGET uint32_t hash_aes32(const struct ct_aes_key *ak,
					 const struct conntab_key *k)
{
	return ct_hash_aes(ak, k);
}

static CT_AES_TARGET uint64_t hash_aes64(const struct ct_aes_key *ak,
					 const struct conntab_key *k)
{
	return b_aes_low64(ct_hash_aes_block(ak, k));
}
#endif

uint32_t b_hash32(const struct b_hash *h, const struct conntab_key *k)
{
#ifdef CT_HAVE_AES
	if (h->aes)
		return hash_aes32(&h->ak, k);
#endif
	return ct_hash_sip(&h->sec, k);
}

uint64_t b_hash64(const struct b_hash *h, const struct conntab_key *k)
{
#ifdef CT_HAVE_AES
	if (h->aes)
		return hash_aes64(&h->ak, k);
#endif
	return ct_hash_sip64(&h->sec, k);
}
