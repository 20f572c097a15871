/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read paths of a hash backend, compiled once per hash.
 *
 * A lookup is a hash and two cache misses, and the hash is most of its
 * instructions, so it must be inlined: a call through a pointer per key
 * would cost what the AES hash saves. So each backend writes its lookup
 * once, as find(t, hash, key) plus the batch steps (batch.h), and
 * CT_READ_OPS_DEFINE() wraps it in a lookup and a lookup_batch per hash:
 * the SipHash pair built for the baseline ISA, the AES pair with
 * CT_AES_TARGET (only those functions use AES instructions; the library
 * stays one object for the baseline ISA). conntab_create() puts the pair
 * of the table's hash in the table head (struct conntab), so a lookup is
 * one call through the head and the backend's code with its hash inline.
 */
#ifndef CT_HASH_OPS_H
#define CT_HASH_OPS_H

#include "../hash/aes.h"
#include "batch.h"
#include "../conntab-int.h"

static inline __attribute__((always_inline)) uint32_t
ct_hstep_siphash(const struct conntab *t, const struct conntab_key *k)
{
	return ct_hash_sip(&t->secret, k);
}

/* One lookup and one batch for hash @H (siphash, aes) of backend @name. */
#define CT_READ_PAIR(name, H, attr, find_fn, bucket_fn, first_fn)		\
static attr struct conntab_node *					\
name##_lookup_##H(struct conntab *t, const struct conntab_key *k)	\
{									\
	return find_fn(t, ct_hstep_##H(t, k), k);				\
}									\
static attr size_t							\
name##_batch_##H(struct conntab *t, const struct conntab_key *keys,	\
		 struct conntab_node **out, size_t n)			\
{									\
	return ct_batch_lookup(t, keys, out, n, (struct ct_batch_steps){ \
		.hash	= ct_hstep_##H,					\
		.bucket	= bucket_fn,					\
		.first	= first_fn,					\
		.find	= find_fn,						\
	});								\
}

#ifdef CT_HAVE_AES
static inline CT_AES_TARGET __attribute__((always_inline)) uint32_t
ct_hstep_aes(const struct conntab *t, const struct conntab_key *k)
{
	return ct_hash_aes(&t->aes, k);
}

# define CT_READ_PAIR_AES(name, find_fn, bucket_fn, first_fn)		\
	CT_READ_PAIR(name, aes, CT_AES_TARGET, find_fn, bucket_fn, first_fn)
# define CT_READ_ENTRY_AES(name)					\
	[CONNTAB_HASH_AES] = { name##_lookup_aes, name##_batch_aes },
#else
# define CT_READ_PAIR_AES(name, find_fn, bucket_fn, first_fn)
# define CT_READ_ENTRY_AES(name)
#endif

/*
 * Define name_lookup_H and name_batch_H for every hash H built in, from
 * the backend's find(t, h, k) and batch steps bucket(t, h), first(t, h).
 */
#define CT_READ_OPS_DEFINE(name, find_fn, bucket_fn, first_fn)		\
	CT_READ_PAIR(name, siphash, , find_fn, bucket_fn, first_fn)	\
	CT_READ_PAIR_AES(name, find_fn, bucket_fn, first_fn)

/*
 * CT_READ_OPS_DEFINE() where the AES pair has a find and a first step of
 * its own (@find_aes, @first_aes: CT_AES_TARGET code, which may use the
 * vector instructions that target brings: lib/hashtab/slots.h's tag match).
 */
#define CT_READ_OPS_DEFINE2(name, find_fn, bucket_fn, first_fn, find_aes, \
			    first_aes)					\
	CT_READ_PAIR(name, siphash, , find_fn, bucket_fn, first_fn)	\
	CT_READ_PAIR_AES(name, find_aes, bucket_fn, first_aes)

/* The initialiser of conntab_ops.read for the functions defined above. */
#define CT_READ_OPS(name) {						\
	[CONNTAB_HASH_SIPHASH] = { name##_lookup_siphash,		\
				   name##_batch_siphash },		\
	CT_READ_ENTRY_AES(name)						\
}

#endif /* CT_HASH_OPS_H */
