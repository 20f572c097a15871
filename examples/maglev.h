/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * maglev.h: Maglev consistent hashing (Eisenbud et al., "Maglev: A Fast
 * and Reliable Software Network Load Balancer", NSDI 2016, section 3.4),
 * for udp-lb.
 *
 * A lookup table of M entries, M prime, each naming a target. Every target
 * has its own permutation of 0..M-1, (offset + j * skip) mod M, offset and
 * skip hashed from its name; the targets take turns claiming the next
 * entry of their permutation that is still free, until all M are taken.
 * A flow's target is entry[hash(flow) mod M]: O(1), and the entries are
 * spread within a few percent of M / N for M much larger than N (the
 * paper's choice is M >= 100 N). When a target comes or goes, most entries
 * keep their target; the flows whose entries changed are the ones a
 * connection table has to keep where they were, which is udp-lb's job.
 *
 * The hashes are unkeyed on purpose: every balancer in front of the same
 * targets must compute the same table, and the same flow hash, so that a
 * flow lands on the same target whichever balancer the network sends it
 * to. (Who chooses which target gets a flood is no secret in Maglev; the
 * connection table behind it is keyed: conntab's own secret.)
 *
 * A header of static functions, installed beside udp-lb.c like args.h.
 */
#ifndef EXAMPLES_MAGLEV_H
#define EXAMPLES_MAGLEV_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* A table slot that no target holds: a table built with no target. */
#define MAGLEV_NONE	0xffffu

struct maglev {
	uint32_t size;		/* M, a prime */
	uint16_t *entry;	/* M target numbers, or MAGLEV_NONE */
};

/* FNV-1a over @len bytes, then a 64-bit finalizer (splitmix64's). */
static inline uint64_t maglev_hash(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static inline int maglev_is_prime(uint32_t n)
{
	uint32_t d;

	if (n < 2)
		return 0;
	for (d = 2; (uint64_t)d * d <= n; d++)
		if (!(n % d))
			return 0;
	return 1;
}

/* A table of @size entries (a prime), none taken. 0, or -1 (no memory). */
static inline int maglev_init(struct maglev *m, uint32_t size)
{
	uint32_t i;

	m->size = size;
	m->entry = malloc(size * sizeof(*m->entry));
	if (!m->entry)
		return -1;
	for (i = 0; i < size; i++)
		m->entry[i] = MAGLEV_NONE;
	return 0;
}

static inline void maglev_free(struct maglev *m)
{
	free(m->entry);
	m->entry = NULL;
}

/*
 * Fill the table for the targets @name[0..n-1]; NULL names are slots no
 * target holds (removed ones), which keeps every other target's number.
 * The paper's Populate: each target's permutation is computed as it goes
 * (offset + next * skip, no M-entry array per target), skip in [1, M-1]
 * so that M prime makes it a whole cycle. 0, or -1 (no memory: the table
 * is as it was).
 */
static inline int maglev_build(struct maglev *m, const char *const *name,
			       unsigned int n)
{
	uint32_t M = m->size, filled = 0, *offset, *skip, *next;
	unsigned int i, live = 0;

	for (i = 0; i < n; i++)
		live += name[i] != NULL;
	if (!live) {
		for (filled = 0; filled < M; filled++)
			m->entry[filled] = MAGLEV_NONE;
		return 0;
	}
	offset = calloc(n, sizeof(*offset));
	skip = calloc(n, sizeof(*skip));
	next = calloc(n, sizeof(*next));
	if (!offset || !skip || !next) {
		free(offset);
		free(skip);
		free(next);
		return -1;
	}
	for (i = 0; i < n; i++) {
		size_t len;

		if (!name[i])
			continue;
		for (len = 0; name[i][len]; len++)
			;
		offset[i] = (uint32_t)(maglev_hash(name[i], len, 0xd1) % M);
		skip[i] = (uint32_t)(maglev_hash(name[i], len, 0x5e) %
				     (M - 1)) + 1;
	}
	for (i = 0; i < M; i++)
		m->entry[i] = MAGLEV_NONE;
	for (;;) {
		for (i = 0; i < n; i++) {
			uint32_t c;

			if (!name[i])
				continue;
			/* A whole cycle: some j finds a free entry. */
			do {
				c = (uint32_t)((offset[i] +
						(uint64_t)next[i] * skip[i]) %
					       M);
				next[i]++;
			} while (m->entry[c] != MAGLEV_NONE);
			m->entry[c] = (uint16_t)i;
			if (++filled == M)
				goto out;
		}
	}
out:
	free(offset);
	free(skip);
	free(next);
	return 0;
}

/* The target of a flow hash: a number maglev_build() was given. */
static inline unsigned int maglev_lookup(const struct maglev *m, uint64_t h)
{
	return m->entry[h % m->size];
}

#endif /* EXAMPLES_MAGLEV_H */
