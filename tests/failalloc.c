/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure injection for one test program: this file defines
 * malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign and
 * free, so that every allocation of the program and of the libraries it
 * loads (libconntab among them) comes here first and is forwarded to the
 * next definition (the C library's, or the sanitizer's) unless a failure
 * is armed. Link it into its own program only: it affects everything in
 * the process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "failalloc.h"

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void (*real_free)(void *);

/*
 * dlsym() may allocate while it looks the real functions up; those
 * allocations come from this static arena and are never freed.
 */
static _Alignas(64) unsigned char arena[16384];
static size_t arena_used;
static __thread int resolving;

static void *arena_alloc(size_t size, size_t align)
{
	size_t off = (arena_used + align - 1) & ~(align - 1);

	if (off + size > sizeof(arena))
		return NULL;
	arena_used = off + size;
	return arena + off;
}

static int in_arena(const void *p)
{
	return (const unsigned char *)p >= arena &&
	       (const unsigned char *)p < arena + sizeof(arena);
}

static void resolve(void)
{
	resolving = 1;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	real_free = dlsym(RTLD_NEXT, "free");
	resolving = 0;
}

/* Armed state: written by the test thread between operations. */
static long fail_nth;		/* 0 = off; else fail allocation number n */
static int fail_sticky;		/* fail allocation n and all later ones */
static long fail_count;		/* allocations counted since arming */
static __thread int counting;	/* count only the arming thread... */
static int count_all_threads;	/* ...unless this is set */
static long failed_total;

void fa_arm(long nth, int sticky, int all_threads)
{
	__atomic_store_n(&fail_count, 0, __ATOMIC_SEQ_CST);
	fail_sticky = sticky;
	count_all_threads = all_threads;
	counting = 1;
	__atomic_store_n(&fail_nth, nth, __ATOMIC_SEQ_CST);
}

long fa_disarm(void)
{
	__atomic_store_n(&fail_nth, 0, __ATOMIC_SEQ_CST);
	counting = 0;
	return __atomic_load_n(&fail_count, __ATOMIC_SEQ_CST);
}

long fa_failed_total(void)
{
	return __atomic_load_n(&failed_total, __ATOMIC_SEQ_CST);
}

/* Does this allocation fail? */
static int fa_fail(void)
{
	long nth = __atomic_load_n(&fail_nth, __ATOMIC_SEQ_CST), c;

	if (!nth || resolving ||
	    (!counting && !__atomic_load_n(&count_all_threads,
					   __ATOMIC_RELAXED)))
		return 0;
	c = __atomic_add_fetch(&fail_count, 1, __ATOMIC_SEQ_CST);
	if (c == nth || (fail_sticky && c > nth)) {
		__atomic_add_fetch(&failed_total, 1, __ATOMIC_SEQ_CST);
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t size)
{
	if (!real_malloc) {
		if (resolving)
			return arena_alloc(size, 16);
		resolve();
	}
	return fa_fail() ? NULL : real_malloc(size);
}

void *calloc(size_t nmemb, size_t size)
{
	if (!real_calloc) {
		if (resolving) {
			if (size && nmemb > SIZE_MAX / size)
				return NULL;
			return arena_alloc(nmemb * size, 16); /* zeroed */
		}
		resolve();
	}
	return fa_fail() ? NULL : real_calloc(nmemb, size);
}

void *realloc(void *p, size_t size)
{
	void *q;

	if (!real_realloc)
		resolve();
	if (in_arena(p)) {
		/* Rare: move out of the arena, copying what may be there. */
		q = malloc(size);
		if (q) {
			size_t left = (size_t)(arena + sizeof(arena) -
					       (unsigned char *)p);

			memcpy(q, p, size < left ? size : left);
		}
		return q;
	}
	return fa_fail() ? NULL : real_realloc(p, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	if (!real_aligned_alloc)
		resolve();
	return fa_fail() ? NULL : real_aligned_alloc(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	if (!real_posix_memalign)
		resolve();
	return fa_fail() ? ENOMEM : real_posix_memalign(out, align, size);
}

void *memalign(size_t align, size_t size)
{
	if (!real_memalign)
		resolve();
	return fa_fail() ? NULL : real_memalign(align, size);
}

void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (!real_free)
		resolve();
	real_free(p);
}
