/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peer: the 2007 baseline. A single-threaded chained hash: 2^k bucket
 * pointers >= N, NULL-terminated chains, no locks, no RCU, no atomics. It
 * shows what the concurrency machinery of the others costs on one thread.
 * It keeps the same node layout as conntab (link, hash, key in one line)
 * and rejects duplicates the same way. Never used with concurrent threads.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "impl.h"

struct pl_obj {
	struct pl_obj *next;
	uint32_t hash;
	uint8_t state;			/* enum conntab_state */
	struct conntab_key key;
};

struct pl_table {
	struct pl_obj **b;
	uint32_t mask;
	struct b_hash h;
};

#define PL_MIN_BUCKETS	64

static void *pl_create(const struct bench_impl *im, size_t expected,
		       const uint8_t *secret)
{
	struct pl_table *t = calloc(1, sizeof(*t));
	size_t nb = PL_MIN_BUCKETS;

	if (!t)
		return NULL;
	while (nb < expected)
		nb <<= 1;
	t->b = calloc(nb, sizeof(*t->b));
	if (!t->b) {
		free(t);
		return NULL;
	}
	t->mask = (uint32_t)(nb - 1);
	b_hash_init(&t->h, secret, b_opts.hash_used == CONNTAB_HASH_AES);
	return t;
}

static void pl_destroy(void *tp)
{
	struct pl_table *t = tp;

	free(t->b);
	free(t);
}

/* The link pointing to the object holding @k (hash @h); *link NULL if none. */
static inline __attribute__((always_inline)) struct pl_obj **
pl_find(struct pl_table *t, uint32_t h, const struct conntab_key *k)
{
	struct pl_obj **pp, *o;

	for (pp = &t->b[h & t->mask]; (o = *pp); pp = &o->next)
		if (o->hash == h && ct_key_eq(&o->key, k))
			break;
	return pp;
}

static int pl_insert(void *tp, void *obj, const struct conntab_key *k)
{
	struct pl_table *t = tp;
	struct pl_obj *o = obj, **head;
	uint32_t h = b_hash32(&t->h, k);

	if (*pl_find(t, h, k))
		return -EEXIST;
	o->key = *k;
	o->hash = h;
	o->state = CONNTAB_ESTABLISHED;
	head = &t->b[h & t->mask];
	o->next = *head;
	*head = o;
	return 0;
}

static inline __attribute__((always_inline)) void *
pl_find_obj(struct pl_table *t, uint32_t h, const struct conntab_key *k)
{
	return *pl_find(t, h, k);
}

B_PEER_LOOKUP(pl_lookup, struct pl_table, pl_find_obj,
	      ct_hash_sip(&t->h.sec, k), ct_hash_aes(&t->h.ak, k))

/* No prefetching: one lookup after another, as in 2007. */
static size_t pl_batch(void *tp, const struct conntab_key *k, void **out,
		       size_t n)
{
	size_t i, found = 0;

	for (i = 0; i < n; i++) {
		out[i] = pl_lookup(tp, &k[i]);
		found += out[i] != NULL;
	}
	return found;
}

static int pl_remove(void *tp, void *obj)
{
	struct pl_table *t = tp;
	struct pl_obj *o = obj, **pp;

	for (pp = &t->b[o->hash & t->mask]; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			return 0;
		}
	}
	return -ENOENT;
}

static int pl_timewait(void *tp, void *est, void *tw)
{
	struct pl_table *t = tp;
	struct pl_obj *e = est, *w = tw, **pp;

	for (pp = &t->b[e->hash & t->mask]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			w->key = e->key;
			w->hash = e->hash;
			w->state = CONNTAB_TIMEWAIT;
			w->next = e->next;
			*pp = w;
			return 0;
		}
	}
	return -ENOENT;
}

static int pl_recycle(void *tp, void *nw, const struct conntab_key *k,
		      void **old)
{
	struct pl_table *t = tp;
	struct pl_obj *n = nw, **pp, *o;
	uint32_t h = b_hash32(&t->h, k);

	*old = NULL;
	pp = pl_find(t, h, k);
	o = *pp;
	if (!o || o->state != CONNTAB_TIMEWAIT)
		return -EEXIST;
	n->key = *k;
	n->hash = h;
	n->state = CONNTAB_ESTABLISHED;
	n->next = o->next;
	*pp = n;
	*old = o;
	return 0;
}

static long pl_memory(void *tp)
{
	struct pl_table *t = tp;

	return (long)(((size_t)t->mask + 1) * sizeof(*t->b));
}

const struct bench_impl b_impl_plain = {
	.name = "plain",
	.flags = 0,
	.obj_size = sizeof(struct pl_obj),
	.user_off = B_USER_AFTER(sizeof(struct pl_obj)),
	.create = pl_create, .destroy = pl_destroy,
	.insert = pl_insert, .lookup = pl_lookup, .batch = pl_batch,
	.remove = pl_remove, .timewait = pl_timewait,
	.recycle = pl_recycle, .memory = pl_memory,
};
