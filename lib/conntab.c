/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Front end: configuration, argument checks, node claims and dispatch to
 * the backend's ops table.
 *
 * Node ownership: n->ct_owner is the table a node is linked in, or NULL.
 * An insert claims the node by compare-and-swap NULL -> t before it touches
 * anything else, so two inserts of one node cannot both link it (-EBUSY);
 * the backend clears the claim under its chain lock when it unlinks the
 * node. A claimed node whose insert fails is released here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "conntab-int.h"
#include "key.h"

static const struct conntab_ops *const ct_backends[] = {
	[CONNTAB_CHAINED] = &ct_chained_ops,
	[CONNTAB_SPLIT] = &ct_split_ops,
	[CONNTAB_EXTHASH] = &ct_exthash_ops,
	[CONNTAB_TRIE] = &ct_trie_ops,
};

static const char *const ct_backend_names[] = {
	[CONNTAB_CHAINED] = "chained",
	[CONNTAB_SPLIT] = "split",
	[CONNTAB_EXTHASH] = "exthash",
	[CONNTAB_TRIE] = "trie",
};

#define CT_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const struct conntab_ops *ct_ops_of(enum conntab_backend b)
{
	if ((unsigned int)b >= CT_ARRAY_SIZE(ct_backends))
		return NULL;
	return ct_backends[b];
}

CONNTAB_API const char *conntab_backend_name(enum conntab_backend b)
{
	if ((unsigned int)b >= CT_ARRAY_SIZE(ct_backend_names) ||
	    !ct_backend_names[b])
		return "unknown";
	return ct_backend_names[b];
}

CONNTAB_API int conntab_backend_from_name(const char *name)
{
	unsigned int i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < CT_ARRAY_SIZE(ct_backend_names); i++)
		if (ct_backend_names[i] && !strcmp(name, ct_backend_names[i]))
			return (int)i;
	return -EINVAL;
}

CONNTAB_API int conntab_backend_available(enum conntab_backend b)
{
	return ct_ops_of(b) != NULL;
}

/* A fresh 128-bit secret from the kernel's CSPRNG. */
static int ct_random_secret(struct ct_secret *sec)
{
	uint8_t buf[16];
	size_t got = 0;

	while (got < sizeof(buf)) {
		ssize_t r = getrandom(buf + got, sizeof(buf) - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	memcpy(&sec->k0, buf, 8);
	memcpy(&sec->k1, buf + 8, 8);
	return 0;
}

CONNTAB_API struct conntab *
conntab_create_flavor(const struct conntab_config *cfg,
		      const struct rcu_flavor_struct *flavor)
{
	struct conntab tmpl = { 0 };
	const struct conntab_ops *ops;
	int err;

	if (!cfg) {
		errno = EINVAL;
		return NULL;
	}
	ops = ct_ops_of(cfg->backend);
	tmpl.flavor = cfg->flavor ? cfg->flavor : flavor;
	if (!ops || !tmpl.flavor) {
		errno = EINVAL;
		return NULL;
	}
	if (cfg->secret) {
		memcpy(&tmpl.secret.k0, cfg->secret, 8);
		memcpy(&tmpl.secret.k1, cfg->secret + 8, 8);
	} else {
		err = ct_random_secret(&tmpl.secret);
		if (err) {
			errno = -err;
			return NULL;
		}
	}
	tmpl.ops = ops;
	tmpl.backend = cfg->backend;
	tmpl.max_entries = cfg->max_entries;
	return ops->create(&tmpl, cfg);
}

/* Reached without the header's macro: the flavor must come in @cfg. */
#undef conntab_create
CONNTAB_API struct conntab *conntab_create(const struct conntab_config *cfg)
{
	return conntab_create_flavor(cfg, NULL);
}

CONNTAB_API void conntab_destroy(struct conntab *t,
				 void (*release)(struct conntab_node *n))
{
	if (t)
		t->ops->destroy(t, release);
}

/* Claim @n for @t; false if it is linked (or being linked) somewhere. */
static bool ct_node_claim(struct conntab_node *n, struct conntab *t)
{
	void *expected = NULL;

	return __atomic_compare_exchange_n(&n->ct_owner, &expected, t, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static int ct_insert(struct conntab *t, struct conntab_node *n,
		     const struct conntab_key *key,
		     struct conntab_node **recycled)
{
	uint32_t h = 0;
	int err;

	if (!t || !n || !key || !ct_key_valid(key))
		return -EINVAL;
	/*
	 * Start the misses of the bucket and of the node before the claim:
	 * the claim's compare-and-swap on the node's (cold) line would
	 * otherwise hold the bucket's miss back until its own is done.
	 */
	if (!t->ops->unhashed) {
		h = ct_hash_key(&t->secret, key);
		if (t->ops->prefetch)
			t->ops->prefetch(t, h);
	} else if (t->ops->prefetch_key) {
		t->ops->prefetch_key(t, key);
	}
	__builtin_prefetch(n, 1);
	if (!ct_node_claim(n, t))
		return -EBUSY;
	/* Claimed and not yet published: plain stores are private. */
	n->ct_key = *key;
	n->ct_hash = h;
	n->ct_state = CONNTAB_ESTABLISHED;
	err = t->ops->insert(t, n, recycled);
	if (err)
		ct_node_release(n);
	return err;
}

CONNTAB_API int conntab_insert(struct conntab *t, struct conntab_node *n,
			       const struct conntab_key *key)
{
	return ct_insert(t, n, key, NULL);
}

CONNTAB_API int conntab_insert_recycle(struct conntab *t,
				       struct conntab_node *n,
				       const struct conntab_key *key,
				       struct conntab_node **recycled)
{
	if (!recycled)
		return -EINVAL;
	*recycled = NULL;
	return ct_insert(t, n, key, recycled);
}

CONNTAB_API struct conntab_node *conntab_lookup(struct conntab *t,
						const struct conntab_key *key)
{
	if (__builtin_expect(!t || !key, 0))
		return NULL;
	return t->ops->lookup(t, key);
}

CONNTAB_API size_t conntab_lookup_batch(struct conntab *t,
					const struct conntab_key *keys,
					struct conntab_node **out, size_t n)
{
	if (!t || !keys || !out || !n)
		return 0;
	return t->ops->lookup_batch(t, keys, out, n);
}

CONNTAB_API int conntab_remove(struct conntab *t, struct conntab_node *n)
{
	if (!t || !n)
		return -EINVAL;
	if (!ct_node_owned(n, t))
		return -ENOENT;
	return t->ops->remove(t, n);
}

CONNTAB_API int conntab_timewait(struct conntab *t, struct conntab_node *est,
				 struct conntab_node *tw)
{
	int err;

	if (!t || !est || !tw)
		return -EINVAL;
	if (!ct_node_owned(est, t))
		return -ENOENT;
	if (tw != est) {
		if (!ct_node_claim(tw, t))
			return -EBUSY;
		/*
		 * est's key and hash do not change while it is linked; if it
		 * is unlinked meanwhile the backend finds it gone (-ENOENT).
		 */
		tw->ct_key = est->ct_key;
		tw->ct_hash = est->ct_hash;
		tw->ct_state = CONNTAB_TIMEWAIT;
	}
	err = t->ops->timewait(t, est, tw);
	if (err && tw != est)
		ct_node_release(tw);
	return err;
}

CONNTAB_API int conntab_walk(struct conntab *t,
			     int (*fn)(struct conntab_node *n, void *arg),
			     void *arg)
{
	if (!t || !fn)
		return -EINVAL;
	return t->ops->walk(t, CT_WALK_ALL, fn, arg);
}

CONNTAB_API int conntab_walk_state(struct conntab *t, enum conntab_state state,
				   int (*fn)(struct conntab_node *n, void *arg),
				   void *arg)
{
	if (!t || !fn ||
	    (state != CONNTAB_ESTABLISHED && state != CONNTAB_TIMEWAIT))
		return -EINVAL;
	return t->ops->walk(t, (int)state, fn, arg);
}

CONNTAB_API void conntab_stats(struct conntab *t, struct conntab_stats *st)
{
	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (t)
		t->ops->stats(t, st);
}

CONNTAB_API int conntab_resize_stats(struct conntab *t,
				     struct conntab_resize_stats *rs)
{
	if (!t || !rs)
		return -EINVAL;
	memset(rs, 0, sizeof(*rs));
	if (t->ops->resize_stats)
		t->ops->resize_stats(t, rs);
	return 0;
}

/* conntab_walk_prefix() over a backend without ops->walk_prefix. */
struct ct_prefix_filter {
	uint8_t s[CT_KEY_STR_BUF];
	unsigned int bits;
	ct_walk_fn fn;
	void *arg;
};

static int ct_prefix_filter_fn(struct conntab_node *n, void *arg)
{
	struct ct_prefix_filter *f = arg;

	if (!ct_node_prefix_eq(n, f->s, f->bits))
		return 0;
	return f->fn(n, f->arg);
}

CONNTAB_API int conntab_walk_prefix(struct conntab *t,
				    const struct conntab_key *key,
				    unsigned int bits,
				    int (*fn)(struct conntab_node *n, void *arg),
				    void *arg)
{
	struct ct_prefix_filter f;

	if (!t || !key || !fn || !ct_key_valid(key) ||
	    bits > ct_key_str_bits(key))
		return -EINVAL;
	ct_key_str(key, f.s);
	if (t->ops->walk_prefix)
		return t->ops->walk_prefix(t, f.s, bits, fn, arg);
	f.bits = bits;
	f.fn = fn;
	f.arg = arg;
	return t->ops->walk(t, CT_WALK_ALL, ct_prefix_filter_fn, &f);
}
