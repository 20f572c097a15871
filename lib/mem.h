/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Large library arrays (bucket arrays, directories).
 *
 * A lookup's first miss is the bucket slot; in a multi-megabyte array
 * spread over 4 KiB pages it usually costs a TLB miss and a page walk as
 * well. Arrays of 2 MiB and more are therefore mapped on their own,
 * 2 MiB aligned, with MADV_HUGEPAGE, so the kernel backs them with huge
 * pages where transparent huge pages are enabled (the kernel's own
 * connection hash lives in huge-page mapped memory for the same reason).
 * Smaller arrays come from the heap, cache-line aligned.
 */
#ifndef CT_MEM_H
#define CT_MEM_H

#include <stddef.h>

/* Zeroed, cache-line aligned @bytes, or NULL. Free with ct_array_free(). */
void *ct_array_alloc(size_t bytes);
void ct_array_free(void *p, size_t bytes);

#endif /* CT_MEM_H */
