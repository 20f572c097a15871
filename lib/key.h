/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Key validation and comparison, shared by every backend.
 */
#ifndef CT_KEY_H
#define CT_KEY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conntab/conntab.h"
#include "hash.h"

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

bool ct_key_valid(const struct conntab_key *k);

#endif /* CT_KEY_H */
