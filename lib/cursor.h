/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sealed scan cursors: what struct conntab_cursor carries between
 * conntab_scan() calls, encrypted and authenticated under a key of the
 * table's own (lib/cursor.c has the construction and why).
 */
#ifndef CT_CURSOR_H
#define CT_CURSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "conntab-int.h"

/* Words of a cursor: the tag, then the sealed position. */
#define CT_CURSOR_WORDS	(1 + CT_SCAN_POS_WORDS)

/*
 * Seal the position @pos of a pass over @t into @cur. The tag, cur[0], is
 * never 0, so a sealed cursor is never a zeroed one.
 */
void ct_cursor_seal(const struct conntab *t,
		    const uint64_t pos[CT_SCAN_POS_WORDS],
		    uint64_t cur[CT_CURSOR_WORDS]);

/*
 * Open a cursor @cur that ct_cursor_seal() wrote for @t into @pos; false
 * (and @pos undefined) for any other: a cursor of another table, a
 * changed one, random bytes.
 */
bool ct_cursor_open(const struct conntab *t,
		    const uint64_t cur[CT_CURSOR_WORDS],
		    uint64_t pos[CT_SCAN_POS_WORDS]);

#endif /* CT_CURSOR_H */
