/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Large library arrays: huge-page backed mappings above 2 MiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lock.h"
#include "mem.h"

#define CT_HUGE		((size_t)2 << 20)

static size_t ct_map_len(size_t bytes)
{
	return (bytes + CT_HUGE - 1) & ~(CT_HUGE - 1);
}

void *ct_array_alloc(size_t bytes)
{
	size_t len, extra;
	uint8_t *p, *aligned;
	void *q;

	if (bytes < CT_HUGE) {
		q = aligned_alloc(CT_CACHELINE,
				  (bytes + CT_CACHELINE - 1) & ~(size_t)(CT_CACHELINE - 1));
		if (q)
			memset(q, 0, bytes);
		return q;
	}
	if (bytes > SIZE_MAX - 2 * CT_HUGE)
		return NULL;
	/* Map one huge page more, then trim to a 2 MiB aligned range. */
	len = ct_map_len(bytes);
	p = mmap(NULL, len + CT_HUGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (uint8_t *)(((uintptr_t)p + CT_HUGE - 1) & ~(CT_HUGE - 1));
	extra = (size_t)(aligned - p);
	if (extra)
		munmap(p, extra);
	if (CT_HUGE - extra)
		munmap(aligned + len, CT_HUGE - extra);
	/* Advice only: without THP the mapping works with small pages. */
	(void)madvise(aligned, len, MADV_HUGEPAGE);
	return aligned;		/* anonymous mappings are zeroed */
}

void ct_array_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < CT_HUGE)
		free(p);
	else
		munmap(p, ct_map_len(bytes));
}
