/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connections of two halves (bench/pair.c): conntab's pairs, or for every
 * other implementation two entries linked through their user words.
 */
#ifndef BENCH_PAIR_H
#define BENCH_PAIR_H

#include "impl.h"

/* Both of @a (key @ka) and @b (key @kb), or neither: 0 or negative errno. */
int b_pair_insert(const struct bench_impl *im, void *t, void *a,
		  const struct conntab_key *ka, void *b,
		  const struct conntab_key *kb);
/* Remove the connection @obj is half of. */
int b_pair_remove(const struct bench_impl *im, void *t, void *obj);
/* The other half of @obj (a reader's translation step in a NAT). */
void *b_pair_peer(const struct bench_impl *im, void *obj);

#endif /* BENCH_PAIR_H */
