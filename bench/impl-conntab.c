/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conntab's own backends, through the public API only: the object is the
 * struct conntab_node itself (72 bytes: the line a lookup reads, then the
 * pair link).
 */
#include "config.h"

#include <errno.h>

#include "impl.h"
#include "pad.h"

static void *ct_create(const struct bench_impl *im, size_t expected,
		       const uint8_t *secret)
{
	struct conntab_config cfg = {
		.backend = (enum conntab_backend)im->backend,
		.expected = expected,
		.secret = secret,
		.hash = b_opts.hash,
	};

	return conntab_create(&cfg);
}

static void ct_destroy(void *t)
{
	conntab_destroy(t, NULL);
}

static int ct_insert(void *t, void *obj, const struct conntab_key *k)
{
	return conntab_insert(t, obj, k);
}

static void *ct_lookup(void *t, const struct conntab_key *k)
{
	return conntab_lookup(t, k);
}

static size_t ct_batch(void *t, const struct conntab_key *k, void **out,
		       size_t n)
{
	return conntab_lookup_batch(t, k, (struct conntab_node **)out, n);
}

static int ct_remove(void *t, void *obj)
{
	return conntab_remove(t, obj);
}

static int ct_timewait(void *t, void *est, void *tw)
{
	return conntab_timewait(t, est, tw);
}

static int ct_recycle(void *t, void *nw, const struct conntab_key *k,
		      void **old)
{
	struct conntab_node *o = NULL;
	int err = conntab_insert_recycle(t, nw, k, &o);

	*old = o;
	return err;
}

static int ct_insert_pair(void *t, void *a, const struct conntab_key *ka,
			  void *b, const struct conntab_key *kb)
{
	return conntab_insert_pair(t, a, ka, b, kb);
}

static long ct_memory(void *t)
{
	struct conntab_stats st;

	conntab_stats(t, &st);
	return (long)st.memory;
}

#define CT_IMPL(b, nm, fl) {						\
	.name = nm, .flags = BI_MT | BI_CONNTAB | (fl),			\
	.obj_size = sizeof(struct conntab_node),			\
	.user_off = sizeof(struct conntab_node),			\
	.backend = CONNTAB_##b,						\
	.create = ct_create, .destroy = ct_destroy,			\
	.insert = ct_insert, .lookup = ct_lookup, .batch = ct_batch,	\
	.remove = ct_remove, .timewait = ct_timewait,			\
	.recycle = ct_recycle, .memory = ct_memory,			\
	.insert_pair = ct_insert_pair,					\
}

/*
 * --pad: the same calls, each followed by b_opts.pad instructions of
 * straight-line work (bench/pad.h); a batch's, that many a key.
 */
static int ct_insert_pad(void *t, void *obj, const struct conntab_key *k)
{
	int err = conntab_insert(t, obj, k);

	b_pad();
	return err;
}

static void *ct_lookup_pad(void *t, const struct conntab_key *k)
{
	void *p = conntab_lookup(t, k);

	b_pad();
	return p;
}

static size_t ct_batch_pad(void *t, const struct conntab_key *k, void **out,
			   size_t n)
{
	size_t hit = conntab_lookup_batch(t, k, (struct conntab_node **)out,
					  n), i;

	for (i = 0; i < n; i++)
		b_pad();
	return hit;
}

static int ct_remove_pad(void *t, void *obj)
{
	int err = conntab_remove(t, obj);

	b_pad();
	return err;
}

void b_impl_pad(struct bench_impl *im)
{
	im->insert = ct_insert_pad;
	im->lookup = ct_lookup_pad;
	im->batch = ct_batch_pad;
	im->remove = ct_remove_pad;
}

/* Names as conntab_backend_name() prints them. */
const struct bench_impl b_impl_conntab[4] = {
	CT_IMPL(CHAINED, "chained", BI_CT_HASH),
	CT_IMPL(SPLIT, "split", BI_CT_HASH),
	CT_IMPL(EXTHASH, "exthash", BI_CT_HASH | BI_GROWS),
	CT_IMPL(TRIE, "trie", BI_GROWS),
};
