/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peer: liburcu's lock-free resizable hash table (cds_lfht), memb flavor.
 *
 * The node is embedded in the object next to the key, as conntab's is, and
 * the hash is the same keyed SipHash-1-3 with the same secret. The table is
 * created with CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING: without node
 * accounting, auto-resize grows on every chain of length >= 3 it meets,
 * which at load factor 1 is a few % of all buckets; 1M random inserts into
 * a table sized for 1M then end with 64M buckets (1024 B/entry instead of
 * 16), and the comparison would be against a table that uses 64 times the
 * memory the sizing hint asks for. When sized
 * (expected = N) the bucket count is also its minimum, so that removes do
 * not shrink it (conntab's chained table does not shrink either).
 *
 * Writers call into lfht inside a read-side critical section, as its API
 * requires; that cost is part of the measurement.
 *
 * lfht-jhash is the same table hashing with lookup3 (jhash.h) seeded from
 * the run's secret, as lfht's users and the kernel's ehash write it;
 * lfht shares conntab's hash, so that the two show what the hash costs.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>		/* the flavor first: cds_lfht_new() uses it */
#include <urcu/rculfhash.h>

#include "impl.h"
#include "jhash.h"

struct lf_obj {
	struct cds_lfht_node node;
	struct conntab_key key;
	uint8_t state;			/* enum conntab_state */
};

struct lf_table {
	struct cds_lfht *ht;
	struct b_hash h;
	bool jhash;		/* lfht-jhash */
	uint32_t seed;
};

/* Writers' hash; lookups inline theirs (lf_lookup). */
static inline unsigned long lf_hash(const struct lf_table *t,
				    const struct conntab_key *k)
{
	return t->jhash ? b_jhash_key(k, t->seed) : b_hash32(&t->h, k);
}

static inline struct lf_obj *lf_obj(struct cds_lfht_node *n)
{
	return caa_container_of(n, struct lf_obj, node);
}

static int lf_match(struct cds_lfht_node *n, const void *key)
{
	return ct_key_eq(&lf_obj(n)->key, key);
}

static void *lf_create(const struct bench_impl *im, size_t expected,
		       const uint8_t *secret)
{
	struct lf_table *t = calloc(1, sizeof(*t));
	unsigned long size = 1;

	if (!t)
		return NULL;
	while (size < expected)
		size <<= 1;
	t->jhash = im->flags & BI_JHASH;
	b_hash_init(&t->h, secret,
		    !t->jhash && b_opts.hash_used == CONNTAB_HASH_AES);
	memcpy(&t->seed, secret, sizeof(t->seed));
	t->ht = cds_lfht_new(size, size, 0,
			     CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!t->ht) {
		free(t);
		return NULL;
	}
	return t;
}

static void lf_destroy(void *tp)
{
	struct lf_table *t = tp;
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	/* cds_lfht_destroy() refuses a table that still holds nodes. */
	rcu_read_lock();
	cds_lfht_for_each(t->ht, &it, n)
		cds_lfht_del(t->ht, n);
	rcu_read_unlock();
	if (cds_lfht_destroy(t->ht, NULL))
		abort();
	free(t);
}

static int lf_insert(void *tp, void *obj, const struct conntab_key *k)
{
	struct lf_table *t = tp;
	struct lf_obj *o = obj;
	struct cds_lfht_node *got;

	o->key = *k;
	o->state = CONNTAB_ESTABLISHED;
	cds_lfht_node_init(&o->node);
	rcu_read_lock();
	got = cds_lfht_add_unique(t->ht, lf_hash(t, k), lf_match,
				  &o->key, &o->node);
	rcu_read_unlock();
	return got == &o->node ? 0 : -EEXIST;
}

static inline __attribute__((always_inline)) void *
lf_find(struct lf_table *t, unsigned long h, const struct conntab_key *k)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	cds_lfht_lookup(t->ht, h, lf_match, k, &it);
	n = cds_lfht_iter_get_node(&it);
	return n ? lf_obj(n) : NULL;
}

B_PEER_LOOKUP(lf_lookup, struct lf_table, lf_find,
	      t->jhash ? b_jhash_key(k, t->seed) : ct_hash_sip(&t->h.sec, k),
	      ct_hash_aes(&t->h.ak, k))

/* lfht has no batch interface: one lookup after another. */
static size_t lf_batch(void *tp, const struct conntab_key *k, void **out,
		       size_t n)
{
	size_t i, found = 0;

	for (i = 0; i < n; i++) {
		out[i] = lf_lookup(tp, &k[i]);
		found += out[i] != NULL;
	}
	return found;
}

static int lf_remove(void *tp, void *obj)
{
	struct lf_table *t = tp;
	struct lf_obj *o = obj;
	int err;

	rcu_read_lock();
	err = cds_lfht_del(t->ht, &o->node);
	rcu_read_unlock();
	return err ? -ENOENT : 0;
}

/*
 * Put @nw (key set) in the place of the node holding its key: @old, or,
 * for @old NULL, any TIME_WAIT node. lfht replaces through an iterator, so
 * this is a lookup and a replace. Returns the node replaced, or NULL.
 */
static struct lf_obj *lf_swap(struct lf_table *t, struct lf_obj *old,
			      struct lf_obj *nw)
{
	unsigned long h = lf_hash(t, &nw->key);
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	cds_lfht_node_init(&nw->node);
	cds_lfht_lookup(t->ht, h, lf_match, &nw->key, &it);
	n = cds_lfht_iter_get_node(&it);
	if (!n || (old && n != &old->node) ||
	    (!old && lf_obj(n)->state != CONNTAB_TIMEWAIT))
		return NULL;
	if (cds_lfht_replace(t->ht, &it, h, lf_match, &nw->key, &nw->node))
		return NULL;
	return lf_obj(n);
}

static int lf_timewait(void *tp, void *est, void *tw)
{
	struct lf_obj *e = est, *w = tw, *got;

	w->key = e->key;
	w->state = CONNTAB_TIMEWAIT;
	rcu_read_lock();
	got = lf_swap(tp, e, w);
	rcu_read_unlock();
	return got ? 0 : -ENOENT;
}

static int lf_recycle(void *tp, void *nw, const struct conntab_key *k,
		      void **old)
{
	struct lf_obj *n = nw, *got;

	n->key = *k;
	n->state = CONNTAB_ESTABLISHED;
	rcu_read_lock();
	got = lf_swap(tp, NULL, n);
	rcu_read_unlock();
	*old = got;
	return got ? 0 : -EEXIST;
}

/* lfht does not report its memory: the workload measures the heap. */
static long lf_memory(void *tp)
{
	return -1;
}

/*
 * liburcu 0.13 starts lfht's resize worker with the first auto-resizing
 * table and ends it with the last; a thread inherits the CPU affinity of
 * the thread that starts it. So that --pin does not put the worker on the
 * measuring thread's CPU, main() starts it first and one empty table keeps
 * it for the run.
 */
static struct cds_lfht *lf_keeper;

void b_lfht_worker_start(void)
{
	lf_keeper = cds_lfht_new(1, 1, 0, CDS_LFHT_AUTO_RESIZE, NULL);
}

void b_lfht_worker_stop(void)
{
	if (lf_keeper && cds_lfht_destroy(lf_keeper, NULL))
		abort();
	lf_keeper = NULL;
}

#define LF_IMPL(nm, fl) {						\
	.name = nm, .flags = BI_MT | BI_GROWS | (fl),			\
	.obj_size = sizeof(struct lf_obj),				\
	.user_off = B_USER_AFTER(sizeof(struct lf_obj)),		\
	.create = lf_create, .destroy = lf_destroy,			\
	.insert = lf_insert, .lookup = lf_lookup, .batch = lf_batch,	\
	.remove = lf_remove, .timewait = lf_timewait,			\
	.recycle = lf_recycle, .memory = lf_memory,			\
}

const struct bench_impl b_impl_lfht = LF_IMPL("lfht", 0);
const struct bench_impl b_impl_lfht_jhash = LF_IMPL("lfht-jhash", BI_JHASH);
