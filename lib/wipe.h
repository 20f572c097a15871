/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Clearing key material. A table's secret, and what is derived from it
 * (the AES round keys, the cursor key), must not outlive its use in a
 * stack frame or in freed memory, where a later bug elsewhere in the
 * process (a read of uninitialised memory, a heap disclosure, a core
 * dump) could show it to whoever the secret is kept from. A memset of
 * memory that is never read again is a dead store the compiler may drop;
 * explicit_bzero() is not. Without it in the C library, an empty asm
 * that takes the pointer and clobbers memory keeps the memset (what
 * glibc's own explicit_bzero does). A unit compiled without config.h
 * (the fuzz harness compiles the library sources straight, and tests
 * and the benchmark include lib/hash/aes.h)
 * gets that fallback.
 */
#ifndef CT_WIPE_H
#define CT_WIPE_H

#include <stddef.h>
#include <string.h>

#ifdef HAVE_CONFIG_H
# include "config.h"	/* HAVE_EXPLICIT_BZERO */
#endif

static inline void ct_wipe(void *p, size_t n)
{
#ifdef HAVE_EXPLICIT_BZERO
	explicit_bzero(p, n);
#else
	memset(p, 0, n);
	__asm__ __volatile__("" : : "r"(p) : "memory");
#endif
}

#endif /* CT_WIPE_H */
