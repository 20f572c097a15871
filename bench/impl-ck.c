/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peer: Concurrency Kit's ck_ht (open addressing, single writer, many
 * lock-free readers), in CK_HT_MODE_BYTESTRING on the same 40-byte keys.
 *
 * ck_ht keeps a pointer to the key (here: the copy in the object), the key
 * length and a 64-bit hash in each 32-byte slot; a probe compares the hash
 * first and dereferences the key only on a hash match, as conntab compares
 * its stored hash before the key. The hash is the run's (SipHash-1-3 or
 * AES, peer-hash.h) with the same secret, unfolded to 64 bits.
 *
 * ck_ht allows one writer at a time: writers here take one mutex, which is
 * how an application would use it. ck_ht keeps its load at most 1/2, so a
 * table sized for N connections is created with capacity 2N. Maps it
 * retires while readers may still probe them (defer = true) are parked
 * and freed when the table is destroyed, when no reader is left.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <ck_ht.h>

#include "impl.h"

struct ck_obj {
	struct conntab_key key;
	uint64_t hash;
	uint8_t state;			/* enum conntab_state */
};

struct ck_table {
	ck_ht_t ht;
	struct b_hash h;
	pthread_mutex_t wlock;
};

/* Retired maps; one ck table exists at a time in this program. */
struct ck_parked {
	struct ck_parked *next;
	void *p;
};
static struct ck_parked *ck_parked;
static pthread_mutex_t ck_park_lock = PTHREAD_MUTEX_INITIALIZER;
static struct b_hash ck_hash;

static void *ck_m_alloc(size_t sz)
{
	return malloc(sz);
}

static void *ck_m_realloc(void *p, size_t old, size_t sz, bool defer)
{
	return realloc(p, sz);
}

static void ck_m_free(void *p, size_t sz, bool defer)
{
	struct ck_parked *k;

	if (!defer || !p) {
		free(p);
		return;
	}
	k = malloc(sizeof(*k));
	if (!k)
		abort();	/* cannot free it safely, cannot keep it */
	k->p = p;
	pthread_mutex_lock(&ck_park_lock);
	k->next = ck_parked;
	ck_parked = k;
	pthread_mutex_unlock(&ck_park_lock);
}

static struct ck_malloc ck_alloc = {
	.malloc = ck_m_alloc, .realloc = ck_m_realloc, .free = ck_m_free,
};

/* Only reached through ck_ht_hash(); slots keep their hash for growth. */
static void ck_hash_cb(ck_ht_hash_t *h, const void *key, size_t len,
		       uint64_t seed)
{
	h->value = b_hash64(&ck_hash, key);
}

static void *ck_create(const struct bench_impl *im, size_t expected,
		       const uint8_t *secret)
{
	struct ck_table *t = calloc(1, sizeof(*t));
	size_t cap = expected ? 2 * expected : 64;

	if (!t)
		return NULL;
	b_hash_init(&t->h, secret, b_opts.hash_used == CONNTAB_HASH_AES);
	ck_hash = t->h;
	pthread_mutex_init(&t->wlock, NULL);
	if (!ck_ht_init(&t->ht, CK_HT_MODE_BYTESTRING | CK_HT_WORKLOAD_DELETE,
			ck_hash_cb, &ck_alloc, cap, 1)) {
		free(t);
		return NULL;
	}
	return t;
}

static void ck_destroy(void *tp)
{
	struct ck_table *t = tp;
	struct ck_parked *k;

	ck_ht_destroy(&t->ht);
	pthread_mutex_lock(&ck_park_lock);
	while ((k = ck_parked)) {
		ck_parked = k->next;
		free(k->p);
		free(k);
	}
	pthread_mutex_unlock(&ck_park_lock);
	pthread_mutex_destroy(&t->wlock);
	free(t);
}

static int ck_insert(void *tp, void *obj, const struct conntab_key *k)
{
	struct ck_table *t = tp;
	struct ck_obj *o = obj;
	ck_ht_hash_t h;
	ck_ht_entry_t e;
	bool ok;

	o->key = *k;
	o->hash = b_hash64(&t->h, k);
	o->state = CONNTAB_ESTABLISHED;
	h.value = o->hash;
	ck_ht_entry_set(&e, h, &o->key, sizeof(o->key), o);
	pthread_mutex_lock(&t->wlock);
	ok = ck_ht_put_spmc(&t->ht, h, &e);
	pthread_mutex_unlock(&t->wlock);
	return ok ? 0 : -EEXIST;
}

static inline __attribute__((always_inline)) void *
ck_find(struct ck_table *t, uint64_t hash, const struct conntab_key *k)
{
	ck_ht_hash_t h = { hash };
	ck_ht_entry_t e;

	ck_ht_entry_key_set(&e, k, sizeof(*k));
	if (!ck_ht_get_spmc(&t->ht, h, &e))
		return NULL;
	return ck_ht_entry_value(&e);
}

B_PEER_LOOKUP(ck_lookup, struct ck_table, ck_find,
	      ct_hash_sip64(&t->h.sec, k),
	      b_aes_low64(ct_hash_aes_block(&t->h.ak, k)))

/* ck_ht has no batch interface: one lookup after another. */
static size_t ck_batch(void *tp, const struct conntab_key *k, void **out,
		       size_t n)
{
	size_t i, found = 0;

	for (i = 0; i < n; i++) {
		out[i] = ck_lookup(tp, &k[i]);
		found += out[i] != NULL;
	}
	return found;
}

static int ck_remove(void *tp, void *obj)
{
	struct ck_table *t = tp;
	struct ck_obj *o = obj;
	ck_ht_hash_t h = { o->hash };
	ck_ht_entry_t e;
	bool ok;

	ck_ht_entry_key_set(&e, &o->key, sizeof(o->key));
	pthread_mutex_lock(&t->wlock);
	ok = ck_ht_remove_spmc(&t->ht, h, &e);
	if (ok && ck_ht_entry_value(&e) != o) {
		/* Another object held the key: put it back (never in runs). */
		ck_ht_put_spmc(&t->ht, h, &e);
		ok = false;
	}
	pthread_mutex_unlock(&t->wlock);
	return ok ? 0 : -ENOENT;
}

/*
 * Replace the object holding @nw's key by @nw (ck_ht_set_spmc swaps key
 * pointer and value of the slot); @want the old one, or NULL for any
 * TIME_WAIT object. Returns the replaced object, or NULL.
 */
static struct ck_obj *ck_swap(struct ck_table *t, struct ck_obj *want,
			      struct ck_obj *nw)
{
	ck_ht_hash_t h = { nw->hash };
	struct ck_obj *old = NULL;
	ck_ht_entry_t e;

	ck_ht_entry_key_set(&e, &nw->key, sizeof(nw->key));
	pthread_mutex_lock(&t->wlock);
	if (ck_ht_get_spmc(&t->ht, h, &e)) {
		old = ck_ht_entry_value(&e);
		if ((want && old != want) ||
		    (!want && old->state != CONNTAB_TIMEWAIT)) {
			old = NULL;
		} else {
			ck_ht_entry_set(&e, h, &nw->key, sizeof(nw->key), nw);
			if (!ck_ht_set_spmc(&t->ht, h, &e))
				old = NULL;
		}
	}
	pthread_mutex_unlock(&t->wlock);
	return old;
}

static int ck_timewait(void *tp, void *est, void *tw)
{
	struct ck_obj *e = est, *w = tw;

	w->key = e->key;
	w->hash = e->hash;
	w->state = CONNTAB_TIMEWAIT;
	return ck_swap(tp, e, w) ? 0 : -ENOENT;
}

static int ck_recycle(void *tp, void *nw, const struct conntab_key *k,
		      void **old)
{
	struct ck_table *t = tp;
	struct ck_obj *n = nw;

	n->key = *k;
	n->hash = b_hash64(&t->h, k);
	n->state = CONNTAB_ESTABLISHED;
	*old = ck_swap(t, NULL, n);
	return *old ? 0 : -EEXIST;
}

static long ck_memory(void *tp)
{
	return -1;
}

const struct bench_impl b_impl_ck = {
	.name = "ck_ht",
	.flags = BI_MT | BI_GROWS,
	.obj_size = sizeof(struct ck_obj),
	.user_off = B_USER_AFTER(sizeof(struct ck_obj)),
	.create = ck_create, .destroy = ck_destroy,
	.insert = ck_insert, .lookup = ck_lookup, .batch = ck_batch,
	.remove = ck_remove, .timewait = ck_timewait,
	.recycle = ck_recycle, .memory = ck_memory,
};
