/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sampled eviction: the sample's random start.
 */
#include <stdint.h>
#include <time.h>

#include "evict.h"

/*
 * splitmix64 per thread, seeded from the clock and the thread's own
 * address. The start of a sample needs no secrecy: which nodes sit where
 * is already hidden by the keyed hash; it only must not follow the keys.
 */
uint64_t ct_evict_random(void)
{
	static CT_TLS uint64_t state;
	uint64_t z;

	if (!state) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		state = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^
			(uint64_t)(uintptr_t)&state;
	}
	z = (state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
