/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sealed scan cursors.
 *
 * Why. A backend's position is the bucket or hash range of the pass, the
 * keyed hash and the address of the last node visited (the hash
 * backends), or that node's key (the trie). Applications hand cursors
 * out as pagination tokens, as Redis's SCAN does, and a token must not
 * tell whoever holds it heap addresses, keyed-hash values (from which,
 * with enough of them, the layout an attacker floods) or the keys of
 * other connections; the front end's old tag was an invertible function
 * of the table's address. And a cursor that comes back must be the one
 * the table gave out: the backends trust a position they wrote.
 *
 * How: SIV, deterministic authenticated encryption (Rogaway and
 * Shrimpton), from SipHash-2-4 as the PRF F under a key of the table's
 * own, drawn from getrandom() at create (t->cursor_key), independent of
 * the hash secret, so that a known hash secret (a configured one) unseals
 * nothing and two tables never accept each other's cursors:
 *
 *	tag	= F(0, p[0..4]) | 1			cur[0]
 *	cur[1 + i] = p[i] ^ F(1, tag, i)		i = 0..4
 *
 * Opening recomputes the keystream from the tag, then the tag from the
 * position, and refuses a mismatch: a cursor changed in any bit, made by
 * another table or made up passes with probability 2^-63. What a sealed
 * cursor shows: whether two cursors of one table stand at the same
 * position (sealing is deterministic), nothing else. Bit 0 of the tag is
 * forced to 1 so that a cursor under way is never all zero
 * (conntab_cursor_done()). SipHash-2-4, the full-strength variant, and
 * not the 1-3 of the table's hash: a cursor is a few words per call, not
 * a key per lookup, and it may live outside the process.
 *
 * Cost: twelve SipHash-2-4 of 3 to 6 words per conntab_scan() call (an
 * open and a seal), 0.3-0.7 us a call against the unsealed cursor on the
 * shared 2-core development VM (budget 1, 100K entries: chained 139 ->
 * 627 ns a call, exthash 825 -> 1504, trie 603 -> 898); a call at budget
 * 64 takes 4-18 us there.
 */
#include <string.h>

#include "cursor.h"
#include "hash/hash.h"

/* Domains of F: the tag, the keystream. */
#define CT_CURSOR_TAG	0
#define CT_CURSOR_PAD	1

/* SipHash-2-4 of the @n words @m (8 * @n bytes) under @k. */
static uint64_t ct_cursor_prf(const struct ct_secret *k, const uint64_t *m,
			      unsigned int n)
{
	struct ct_sip s;
	uint64_t b;
	unsigned int i;

	ct_sip_init(&s, k);
	for (i = 0; i <= n; i++) {
		b = i < n ? m[i] : (uint64_t)(8 * n) << 56;
		s.v3 ^= b;
		CT_SIPROUND(s.v0, s.v1, s.v2, s.v3);
		CT_SIPROUND(s.v0, s.v1, s.v2, s.v3);
		s.v0 ^= b;
	}
	s.v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		CT_SIPROUND(s.v0, s.v1, s.v2, s.v3);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

static uint64_t ct_cursor_tag(const struct conntab *t,
			      const uint64_t pos[CT_SCAN_POS_WORDS])
{
	uint64_t m[1 + CT_SCAN_POS_WORDS];

	m[0] = CT_CURSOR_TAG;
	memcpy(&m[1], pos, CT_SCAN_POS_WORDS * sizeof(m[0]));
	return ct_cursor_prf(&t->cursor_key, m, 1 + CT_SCAN_POS_WORDS) | 1;
}

/* Word @i of the keystream of @tag. */
static uint64_t ct_cursor_pad(const struct conntab *t, uint64_t tag,
			      unsigned int i)
{
	const uint64_t m[3] = { CT_CURSOR_PAD, tag, i };

	return ct_cursor_prf(&t->cursor_key, m, 3);
}

void ct_cursor_seal(const struct conntab *t,
		    const uint64_t pos[CT_SCAN_POS_WORDS],
		    uint64_t cur[CT_CURSOR_WORDS])
{
	uint64_t tag = ct_cursor_tag(t, pos);
	unsigned int i;

	cur[0] = tag;
	for (i = 0; i < CT_SCAN_POS_WORDS; i++)
		cur[1 + i] = pos[i] ^ ct_cursor_pad(t, tag, i);
}

bool ct_cursor_open(const struct conntab *t,
		    const uint64_t cur[CT_CURSOR_WORDS],
		    uint64_t pos[CT_SCAN_POS_WORDS])
{
	unsigned int i;

	if (!(cur[0] & 1))
		return false;	/* no seal writes an even tag */
	for (i = 0; i < CT_SCAN_POS_WORDS; i++)
		pos[i] = cur[1 + i] ^ ct_cursor_pad(t, cur[0], i);
	return ct_cursor_tag(t, pos) == cur[0];
}
