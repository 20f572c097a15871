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
 *
 * Pairs (conntab_insert_pair()) are made here, on top of every backend's
 * plain insert and remove, with the claim of conntab-int.h (rules P1-P3
 * there): a pair's halves are linked, unlinked and evicted only by the
 * writer step that holds both their claims.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "conntab-int.h"
#include "cursor.h"
#include "key.h"
#include "probes.h"
#include "rcu-reg.h"
#include "wipe.h"

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

static const char *const ct_hash_names[] = {
	[CONNTAB_HASH_AUTO] = "auto",
	[CONNTAB_HASH_SIPHASH] = "siphash",
	[CONNTAB_HASH_AES] = "aes",
};

#define CT_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Index of @name in a table of names, or -EINVAL. */
static int ct_name_index(const char *const *names, size_t n, const char *name)
{
	size_t i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (names[i] && !strcmp(name, names[i]))
			return (int)i;
	return -EINVAL;
}

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
	return ct_name_index(ct_backend_names, CT_ARRAY_SIZE(ct_backend_names),
			     name);
}

CONNTAB_API int conntab_backend_available(enum conntab_backend b)
{
	return ct_ops_of(b) != NULL;
}

CONNTAB_API const char *conntab_hash_name(enum conntab_hash h)
{
	if ((unsigned int)h >= CT_ARRAY_SIZE(ct_hash_names))
		return "unknown";
	return ct_hash_names[h];
}

CONNTAB_API int conntab_hash_from_name(const char *name)
{
	return ct_name_index(ct_hash_names, CT_ARRAY_SIZE(ct_hash_names),
			     name);
}

CONNTAB_API enum conntab_hash conntab_hash_of(const struct conntab *t)
{
	return t ? t->hash : CONNTAB_HASH_AUTO;
}

/*
 * The hash a table gets for @want: AUTO is AES where the CPU runs it (and
 * this build has it), else SipHash. -EINVAL for AES without the CPU, or
 * an unknown value.
 */
static int ct_hash_resolve(const struct conntab_ops *ops,
			   enum conntab_hash want)
{
	bool aes = ops->read[CONNTAB_HASH_AES].lookup && ct_aes_cpu();

	switch (want) {
	case CONNTAB_HASH_AUTO:
		return aes ? CONNTAB_HASH_AES : CONNTAB_HASH_SIPHASH;
	case CONNTAB_HASH_SIPHASH:
		return CONNTAB_HASH_SIPHASH;
	case CONNTAB_HASH_AES:
		return aes ? CONNTAB_HASH_AES : -EINVAL;
	}
	return -EINVAL;
}

/* A fresh 128-bit secret from the kernel's CSPRNG. */
static int ct_random_secret(uint8_t buf[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t r = getrandom(buf + got, 16 - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

/*
 * The secret, the AES round keys and the cursor key pass through this
 * frame (key, tmpl) on their way into the table, and are cleared on every
 * way out of it (lib/wipe.h): the table's own copy is the only one left.
 */
CONNTAB_API struct conntab *
conntab_create_flavor(const struct conntab_config *cfg,
		      const struct rcu_flavor_struct *flavor)
{
	uint8_t key[16];
	struct conntab tmpl, *t;
	const struct conntab_ops *ops;
	enum conntab_backend backend;
	int err, hash;

	if (!cfg) {
		errno = EINVAL;
		return NULL;
	}
	/* 0, a zeroed config's backend, is the documented default. */
	backend = cfg->backend ? cfg->backend : CONNTAB_CHAINED;
	memset(&tmpl, 0, sizeof(tmpl));
	ops = ct_ops_of(backend);
	tmpl.flavor = cfg->flavor ? cfg->flavor : flavor;
	hash = ops ? ct_hash_resolve(ops, cfg->hash) : -EINVAL;
	if (!ops || !tmpl.flavor || hash < 0 ||
	    cfg->expected > CONNTAB_MAX_EXPECTED) {
		errno = EINVAL;
		return NULL;
	}
	/* Random for every table: a known hash secret opens no cursor. */
	err = ct_random_secret(key);
	if (!err) {
		memcpy(&tmpl.cursor_key.k0, key, 8);
		memcpy(&tmpl.cursor_key.k1, key + 8, 8);
		if (cfg->secret)
			memcpy(key, cfg->secret, sizeof(key));
		else
			err = ct_random_secret(key);
	}
	if (err) {
		/* A part may be in. */
		ct_wipe(key, sizeof(key));
		ct_wipe(&tmpl, sizeof(tmpl));
		errno = -err;
		return NULL;
	}
	/* One secret keys either hash: the table uses only one of them. */
	memcpy(&tmpl.secret.k0, key, 8);
	memcpy(&tmpl.secret.k1, key + 8, 8);
	tmpl.hash = (enum conntab_hash)hash;
	if (tmpl.hash == CONNTAB_HASH_AES)
		ct_aes_expand(&tmpl.aes, key);
	ct_wipe(key, sizeof(key));
	tmpl.lookup = ops->read[hash].lookup;
	tmpl.lookup_batch = ops->read[hash].lookup_batch;
	tmpl.insert = ops->insert_key[hash];
	if (!tmpl.insert)
		tmpl.insert = ct_insert_generic;
	tmpl.ops = ops;
	tmpl.backend = backend;
	tmpl.max_entries = cfg->max_entries;
	/*
	 * Every backend: conntab_remove_key() reads under the read lock on
	 * the caller's behalf, whatever the backend's writers need.
	 */
	tmpl.reg = ct_reg_identify(tmpl.flavor);
	if (ops->registered_writers)
		tmpl.wreg = tmpl.reg;
	t = ops->create(&tmpl, cfg);
	err = errno;	/* create's, for a NULL t */
	ct_wipe(&tmpl, sizeof(tmpl));
	errno = err;
	return t;
}

/* Reached without the header's macro: the flavor must come in @cfg. */
#undef conntab_create
CONNTAB_API struct conntab *conntab_create(const struct conntab_config *cfg)
{
	return conntab_create_flavor(cfg, NULL);
}

/*
 * The application's release callback during conntab_destroy() on this
 * thread: the backends call ct_destroy_release() for every node, which
 * passes a pair on once, through its a. Thread-local: two tables may be
 * destroyed at once.
 *
 * A pair goes to the application when the backend meets its second half,
 * whichever that is, not with a: the callback usually frees the object
 * that embeds both, and the backend still reads the other half when it
 * comes to it (its chain link, its owner). Every backend releases a node
 * (ct_node_release(), owner NULL) before it calls us, and never touches
 * it after: a half whose peer has no owner any more is the second.
 */
static CT_TLS void (*ct_destroy_user)(struct conntab_node *n);

static void ct_destroy_release(struct conntab_node *n)
{
	struct conntab_node *peer = n->ct_peer;

	if (!peer) {
		ct_destroy_user(n);
		return;
	}
	if (__atomic_load_n(&peer->ct_owner, __ATOMIC_RELAXED))
		return;		/* the first half: its peer is still linked */
	ct_destroy_user(ct_node_pair_b(n) ? peer : n);
}

CONNTAB_API void conntab_destroy(struct conntab *t,
				 void (*release)(struct conntab_node *n))
{
	const struct rcu_flavor_struct *f;
	int held;

	if (!t)
		return;
	ct_destroy_user = release;
	if (release)
		release = ct_destroy_release;
	/*
	 * No user is left (nothing hashes any more, destroy included):
	 * clear the keys before the backend hands the memory back.
	 */
	ct_wipe(&t->secret, sizeof(t->secret));
	ct_wipe(&t->aes, sizeof(t->aes));
	ct_wipe(&t->cursor_key, sizeof(t->cursor_key));
	/* The trie hands its last retired nodes to call_rcu here. */
	f = t->flavor;
	held = ct_writer_enter(t, "conntab_destroy()");
	t->ops->destroy(t, release);
	ct_writer_exit(f, held);
}

/*
 * A lookup reads the first line of a node only: the pair link, which did
 * not fit there, comes after it (the node grew to 72 bytes in 0.4).
 */
_Static_assert(sizeof(void *) != 8 ||
	       offsetof(struct conntab_node, ct_peer) == 64,
	       "the chain link, hash, key and owner fill the first line");

/*
 * Claim @n for @t, as @owner (@t, or its claim mark for a pair's half);
 * false if it is linked (or being linked) somewhere.
 */
static bool ct_node_claim_as(struct conntab_node *n, void *owner)
{
	void *expected = NULL;

	return __atomic_compare_exchange_n(&n->ct_owner, &expected, owner,
					   false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static bool ct_node_claim(struct conntab_node *n, struct conntab *t)
{
	return ct_node_claim_as(n, t);
}

/*
 * A claimed node (not yet linked) starts a life of its own: whatever pair
 * it was half of before is forgotten. Plain stores: nobody finds it yet,
 * and readers of its last life are gone (a grace period before reuse).
 */
static inline void ct_node_unpair(struct conntab_node *n)
{
	n->ct_peer = NULL;
	n->ct_flags = 0;
}

/*
 * A victim of an eviction is out: count it, and if it is a pair's a,
 * unlink its b too. The backend claimed both halves before it chose the
 * pair (P1) and unlinked a with the newcomer linked in its place; b,
 * still claimed, leaves here with no lock held. Its entry goes but not a
 * reservation: the pair's one reservation passed to the newcomer (b is
 * made a rider for that, whichever half held it).
 */
static void ct_evicted(struct conntab *t, struct conntab_node *v)
{
	struct conntab_node *b = v->ct_peer;
	int err;

	__atomic_add_fetch(&t->evictions, 1, __ATOMIC_RELAXED);
	if (!b)
		return;
	__atomic_fetch_or(&b->ct_flags, CT_NF_RIDER, __ATOMIC_RELAXED);
	/* a is out: uncounted before b leaves too (conntab_stats()). */
	__atomic_sub_fetch(&t->pairs, 1, __ATOMIC_RELAXED);
	err = t->ops->remove(t, b, true);
#ifdef CT_DEBUG
	if (err) {
		fprintf(stderr, "conntab: evicted pair lost its b (%d)\n", err);
		abort();
	}
#else
	(void)err;
#endif
}

/*
 * The backend's insert (or insert_evict, with @rank) of the claimed @n,
 * retried while it meets a node that another writer step holds (P2): the
 * backend changed nothing and holds no lock, and neither do we, or only
 * claims of keys below @n's (a pair insert's lower half: P3).
 */
static inline int ct_insert_op(struct conntab *t, struct conntab_node *n,
			       struct conntab_node **recycled, ct_rank_fn rank,
			       void *rank_arg, struct conntab_node **evicted)
{
	unsigned int spins = 0;
	int err;

	for (;;) {
		if (rank)
			err = t->ops->insert_evict(t, n, rank, rank_arg,
						   evicted);
		else
			err = t->ops->insert(t, n, recycled);
		if (__builtin_expect(err != CT_ECLAIMED, 1))
			break;
		ct_spin_pause(&spins);
	}
	if (rank) {
		if (!err && *evicted)
			ct_evicted(t, *evicted);
		else if (err == -ENOSPC)
			__atomic_add_fetch(&t->evict_refused, 1,
					   __ATOMIC_RELAXED);
	}
	return err;
}

/*
 * The insert calls, on a thread the flavor counts: hash, claim @n, copy
 * the key, then the backend's @op (insert, or insert_evict with @rank).
 * Inlined into the fast path and the cold one alike: as a call of its
 * own it cost the fast path more than the check that chooses.
 *
 * @hashed: conntab_insert_hashed()'s hash, NULL for the other calls. It
 * is checked against the hash computed here anyway, before the claim, so
 * a wrong one leaves @n and the table as they were: a node linked under
 * a wrong hash would sit where no lookup of its key looks, and a second
 * node of the key could then be linked beside it.
 */
static inline __attribute__((always_inline)) int
ct_insert_counted(struct conntab *t, struct conntab_node *n,
		  const struct conntab_key *key,
		  struct conntab_node **recycled, ct_rank_fn rank,
		  void *rank_arg, struct conntab_node **evicted,
		  const uint64_t *hashed)
{
	uint32_t h = 0;
	int err;

	/*
	 * Start the misses of the bucket (the trie: its root slot) and of
	 * the node before the claim: the claim's compare-and-swap on the
	 * node's (cold) line would otherwise hold them back until its own
	 * is done.
	 */
	if (!t->ops->unhashed) {
		h = ct_hash_key(t, key);
		if (hashed && *hashed != h)
			return -EINVAL;
	}
	if (t->ops->prefetch)
		t->ops->prefetch(t, key, h);
	if (!ct_node_claim_key(n, t, key, h))
		return -EBUSY;
	if (rank && !t->ops->insert_evict)
		err = -EOPNOTSUPP;
	else
		err = ct_insert_op(t, n, recycled, rank, rank_arg, evicted);
	if (err)
		ct_node_release(n);
	return err;
}

/*
 * The calls below on a thread that ct_writer_counted() could not clear:
 * counted for the call's duration (rcu-reg.h). Out of line, so that the
 * fast path keeps its tail calls.
 */
static __attribute__((noinline, cold)) int
ct_insert_uncounted(struct conntab *t, struct conntab_node *n,
		    const struct conntab_key *key,
		    struct conntab_node **recycled, ct_rank_fn rank,
		    void *rank_arg, struct conntab_node **evicted)
{
	int held, err;

	held = ct_writer_enter(t, "an insert");
	err = ct_insert_counted(t, n, key, recycled, rank, rank_arg, evicted,
				NULL);
	ct_writer_exit(t->flavor, held);
	return err;
}

/*
 * The insert calls: check, then the above on a counted thread. Inlined
 * into each call, whose constant arguments (no rank, no recycle) then
 * take their branches out of conntab_insert().
 */
static inline __attribute__((always_inline)) int ct_insert(struct conntab *t, struct conntab_node *n,
		     const struct conntab_key *key,
		     struct conntab_node **recycled, ct_rank_fn rank,
		     void *rank_arg, struct conntab_node **evicted)
{
	if (!t || !n || !key || !ct_key_valid(key))
		return -EINVAL;
	if (__builtin_expect(ct_writer_counted(t), 1))
		return ct_insert_counted(t, n, key, recycled, rank, rank_arg,
					 evicted, NULL);
	return ct_insert_uncounted(t, n, key, recycled, rank, rank_arg,
				   evicted);
}

/*
 * conntab_insert() of the backends with no insert_key of their own for
 * the table's hash (t->insert), arguments checked; their own paths come
 * here for a thread that is not counted.
 */
int ct_insert_generic(struct conntab *t, struct conntab_node *n,
		      const struct conntab_key *key)
{
	if (__builtin_expect(ct_writer_counted(t), 1))
		return ct_insert_counted(t, n, key, NULL, NULL, NULL, NULL,
					 NULL);
	return ct_insert_uncounted(t, n, key, NULL, NULL, NULL, NULL);
}

CONNTAB_API int conntab_insert(struct conntab *t, struct conntab_node *n,
			       const struct conntab_key *key)
{
	if (__builtin_expect(!t || !n || !key || !ct_key_valid(key), 0))
		return -EINVAL;
	return t->insert(t, n, key);	/* ops->insert_key[], or generic */
}

CONNTAB_API int conntab_insert_recycle(struct conntab *t,
				       struct conntab_node *n,
				       const struct conntab_key *key,
				       struct conntab_node **recycled)
{
	if (!recycled)
		return -EINVAL;
	*recycled = NULL;
	return ct_insert(t, n, key, recycled, NULL, NULL, NULL);
}

CONNTAB_API int conntab_insert_evict(struct conntab *t, struct conntab_node *n,
				     const struct conntab_key *key,
				     long (*rank)(struct conntab_node *victim,
						  void *arg),
				     void *arg, struct conntab_node **evicted)
{
	int err;

	if (!evicted || !rank)
		return -EINVAL;
	*evicted = NULL;
	/* No cap, nothing to evict: a plain insert. */
	if (t && !t->max_entries)
		rank = NULL;
	err = ct_insert(t, n, key, NULL, rank, arg, evicted);
	if (*evicted)
		CT_PROBE(evict, t, *evicted, n);
	return err;
}

/* The total order of keys that rule P3 (conntab-int.h) is stated in. */
static inline int ct_key_cmp(const struct conntab_key *a,
			     const struct conntab_key *b)
{
	/* Valid keys have no padding and zeroed unused bytes (key.h). */
	return memcmp(a, b, sizeof(*a));
}

/*
 * conntab_insert_pair() on a counted thread, arguments checked. Both
 * halves are claimed as the mark before anything else (P1), and paired
 * before either is findable, so a reader's conntab_pair_peer() of either
 * is its other half from the first instant. The lower key is linked first
 * as a rider (no reservation: it cannot fail -ENOSPC, and the pair counts
 * once), the higher one then, as a plain or an evicting insert, on the
 * pair's one reservation: so both keys are checked before -ENOSPC, and
 * an eviction happens only in the last step, which either succeeds or
 * changes nothing. Meanwhile we hold the lower half linked and claimed
 * and wait only for claims of the higher key (P3). A failure unlinks the
 * lower half again: we hold its claim, and nobody else can.
 */
static int ct_insert_pair_counted(struct conntab *t, struct conntab_node *a,
				  const struct conntab_key *ka,
				  struct conntab_node *b,
				  const struct conntab_key *kb, ct_rank_fn rank,
				  void *rank_arg, struct conntab_node **evicted)
{
	void *mark = ct_evict_mark(t);
	struct conntab_node *lo, *hi;
	uint32_t ha = 0, hb = 0;
	int err;

	/*
	 * Every line the step will touch, both nodes' and both buckets'
	 * (the trie: its root slots), is fetched before the first claim:
	 * a locked compare-and-swap holds back the loads behind it, so
	 * misses started after it would be paid one after another. (At 1M
	 * this brings a pair insert to parity with two inserts; where
	 * nothing misses it stays dearer: doc/performance.md.)
	 */
	if (!t->ops->unhashed) {
		ha = ct_hash_key(t, ka);
		hb = ct_hash_key(t, kb);
	}
	if (t->ops->prefetch) {
		t->ops->prefetch(t, ka, ha);
		t->ops->prefetch(t, kb, hb);
	}
	__builtin_prefetch(a, 1);
	__builtin_prefetch(b, 1);
	if (!ct_node_claim_as(a, mark))
		return -EBUSY;
	if (!ct_node_claim_as(b, mark)) {
		ct_node_release(a);
		return -EBUSY;
	}
	/* Claimed and not yet published: plain stores are private. */
	a->ct_key = *ka;
	b->ct_key = *kb;
	a->ct_hash = ha;
	b->ct_hash = hb;
	a->ct_state = b->ct_state = CONNTAB_ESTABLISHED;
	a->ct_peer = b;
	b->ct_peer = a;
	a->ct_flags = CT_NF_PAIR_A;
	b->ct_flags = 0;
	if (ct_key_cmp(ka, kb) < 0) {
		lo = a;
		hi = b;
	} else {
		lo = b;
		hi = a;
	}
	lo->ct_flags |= CT_NF_RIDER;
	ct_delay(CT_DP_FE_PUB_CLAIM);
	err = ct_insert_op(t, lo, NULL, NULL, NULL, NULL);
	if (!err) {
		err = ct_insert_op(t, hi, NULL, rank, rank_arg, evicted);
		if (err)
			t->ops->remove(t, lo, true);
	}
	if (err) {
		ct_node_release(a);
		ct_node_release(b);
		return err;
	}
	/*
	 * Counted once both halves are in, never before: the counter is
	 * the pairs in the table (conntab_counters(3)), which a pair still
	 * being linked, or about to fail, is not.
	 */
	__atomic_add_fetch(&t->pairs, 1, __ATOMIC_RELAXED);
	/* Both in: the step ends, writers waiting for it go on. */
	ct_node_unclaim(hi, t);
	ct_node_unclaim(lo, t);
	return 0;
}

static int ct_insert_pair(struct conntab *t, struct conntab_node *a,
			  const struct conntab_key *ka, struct conntab_node *b,
			  const struct conntab_key *kb, ct_rank_fn rank,
			  void *rank_arg, struct conntab_node **evicted)
{
	int held, err;

	if (!t || !a || !b || !ka || !kb || a == b || !ct_key_valid(ka) ||
	    !ct_key_valid(kb) || ct_key_eq(ka, kb))
		return -EINVAL;
	if (__builtin_expect(ct_writer_counted(t), 1))
		return ct_insert_pair_counted(t, a, ka, b, kb, rank, rank_arg,
					      evicted);
	held = ct_writer_enter(t, "conntab_insert_pair()");
	err = ct_insert_pair_counted(t, a, ka, b, kb, rank, rank_arg, evicted);
	ct_writer_exit(t->flavor, held);
	return err;
}

CONNTAB_API int conntab_insert_pair(struct conntab *t,
				    struct conntab_node *a,
				    const struct conntab_key *ka,
				    struct conntab_node *b,
				    const struct conntab_key *kb)
{
	return ct_insert_pair(t, a, ka, b, kb, NULL, NULL, NULL);
}

CONNTAB_API int conntab_insert_pair_evict(struct conntab *t,
					  struct conntab_node *a,
					  const struct conntab_key *ka,
					  struct conntab_node *b,
					  const struct conntab_key *kb,
					  long (*rank)(struct conntab_node *victim,
						       void *arg),
					  void *arg,
					  struct conntab_node **evicted)
{
	int err;

	if (!evicted || !rank)
		return -EINVAL;
	*evicted = NULL;
	/* No cap, nothing to evict: a plain pair insert. */
	if (t && !t->max_entries)
		rank = NULL;
	err = ct_insert_pair(t, a, ka, b, kb, rank, arg, evicted);
	if (*evicted)
		CT_PROBE(evict, t, *evicted, a);
	return err;
}

CONNTAB_API struct conntab_node *conntab_pair_peer(const struct conntab_node *n)
{
	/* Written before the node was first findable (ct_insert_pair_counted). */
	return n ? n->ct_peer : NULL;
}

CONNTAB_API struct conntab_node *conntab_lookup(struct conntab *t,
						const struct conntab_key *key)
{
	if (__builtin_expect(!t || !key, 0))
		return NULL;
	CT_READER_CHECK(t, "conntab_lookup()");
	return t->lookup(t, key);
}

CONNTAB_API size_t conntab_lookup_batch(struct conntab *t,
					const struct conntab_key *keys,
					struct conntab_node **out, size_t n)
{
	if (!t || !keys || !out || !n)
		return 0;
	CT_READER_CHECK(t, "conntab_lookup_batch()");
	return t->lookup_batch(t, keys, out, n);
}

/*
 * The hashed operations (conntab_lookup_hashed(3)): a pipeline hashes a
 * packet's key once, prefetches, looks up and inserts on a miss with that
 * one hash. The hash is the one stored in n->ct_hash: the table's keyed
 * hash, 0 for the trie, which indexes by the key and ignores it.
 */
CONNTAB_API uint64_t conntab_hash(const struct conntab *t,
				  const struct conntab_key *key)
{
	if (!t || !key || !ct_key_valid(key)) {
		errno = EINVAL;
		return 0;
	}
	if (t->ops->unhashed)
		return 0;
	return ct_hash_key(t, key);
}

CONNTAB_API void conntab_prefetch(const struct conntab *t, uint64_t hash)
{
	if (!t || !t->ops->prefetch_hashed)
		return;
	CT_READER_CHECK(t, "conntab_prefetch()");
	/* Reads the table (exthash: its directory), writes nothing. */
	t->ops->prefetch_hashed((struct conntab *)t, (uint32_t)hash);
}

/*
 * Any hash is safe: the backend returns a node only if its stored hash
 * and its key are those asked for (conntab-int.h). Bits above the 32 of
 * the stored hash are ignored.
 */
CONNTAB_API struct conntab_node *
conntab_lookup_hashed(struct conntab *t, const struct conntab_key *key,
		      uint64_t hash)
{
	if (__builtin_expect(!t || !key, 0))
		return NULL;
	CT_READER_CHECK(t, "conntab_lookup_hashed()");
	return t->ops->lookup_hashed(t, (uint32_t)hash, key);
}

/*
 * conntab_insert_hashed() on a thread the flavor counts (as a reader
 * where @existing is wanted). On -EEXIST the node that holds the key is
 * looked up under the read lock: the backend's insert saw a node but
 * returns none (its lock is gone by then, and so may the node be). If
 * the lookup finds none, another writer removed the key in between, and
 * the insert is tried again; each retry follows another writer's
 * success, so the loop ends. The answer is then what the table held at
 * the lookup: -EEXIST with the node found there. That node stays valid
 * after our read_unlock() only inside the caller's own read-side
 * critical section (the read lock nests; QSBR: the caller is online and
 * passes no quiescent state), as the result of any lookup.
 */
static int ct_insert_hashed_counted(struct conntab *t, struct conntab_node *n,
				    const struct conntab_key *key,
				    uint64_t hash,
				    struct conntab_node **existing)
{
	struct conntab_node *x;
	int err;

	for (;;) {
		err = ct_insert_counted(t, n, key, NULL, NULL, NULL, NULL,
					&hash);
		if (err != -EEXIST || !existing)
			return err;
		/* The hash is right: the insert checked it. */
		t->flavor->read_lock();
		x = t->ops->lookup_hashed(t, (uint32_t)hash, key);
		t->flavor->read_unlock();
		if (x) {
			*existing = x;
			return -EEXIST;
		}
	}
}

CONNTAB_API int conntab_insert_hashed(struct conntab *t,
				      struct conntab_node *n,
				      const struct conntab_key *key,
				      uint64_t hash,
				      struct conntab_node **existing)
{
	int held, err;

	if (existing)
		*existing = NULL;
	if (!t || !n || !key || !ct_key_valid(key))
		return -EINVAL;
	/*
	 * With @existing the call also reads under the read lock: counted
	 * as a reader on every backend, as conntab_remove_key().
	 */
	if (__builtin_expect(existing ? ct_reader_counted(t) :
					ct_writer_counted(t), 1))
		return ct_insert_hashed_counted(t, n, key, hash, existing);
	held = ct_thread_enter(t, "conntab_insert_hashed()", existing != NULL);
	err = ct_insert_hashed_counted(t, n, key, hash, existing);
	ct_writer_exit(t->flavor, held);
	return err;
}

/*
 * Claim the linked @n of @t, waiting while another writer step holds it
 * (the caller holds no lock, and claims only of keys below @n's: P3).
 * False: @n is not in @t (any more).
 */
static bool ct_claim_wait(struct conntab *t, struct conntab_node *n)
{
	unsigned int spins = 0;

	while (!ct_node_claim_linked(n, t)) {
		if (__atomic_load_n(&n->ct_owner, __ATOMIC_ACQUIRE) !=
		    ct_evict_mark(t))
			return false;
		ct_spin_pause(&spins);
	}
	return true;
}

/*
 * Remove the pair @n is half of, as one writer step: claim the lower key's
 * half, then the higher's (P3: two removals of one pair, through either
 * half, meet on the lower one and never hold one each), then unlink both,
 * which nobody else can do now (P1).
 */
static int ct_remove_pair(struct conntab *t, struct conntab_node *n)
{
	struct conntab_node *p = n->ct_peer, *lo = n, *hi = p;

	/* Both buckets before the first claim, as ct_insert_pair_counted(). */
	if (t->ops->prefetch) {
		t->ops->prefetch(t, &n->ct_key, n->ct_hash);
		t->ops->prefetch(t, &p->ct_key, p->ct_hash);
	}
	if (ct_key_cmp(&n->ct_key, &p->ct_key) > 0) {
		lo = p;
		hi = n;
	}
	if (!ct_claim_wait(t, lo))
		return -ENOENT;
	if (!ct_claim_wait(t, hi)) {
		ct_node_unclaim(lo, t);
		return -ENOENT;
	}
	/*
	 * Uncounted once its first half is out (it is no longer a pair in
	 * the table), so the count never leads the nodes: conntab_stats()
	 * sees the connection 1, 0, 1, then 0 times as the halves leave,
	 * never twice. The step then ends with the backend's unlock, not a
	 * locked instruction; that bought no speed measurable here.
	 */
	t->ops->remove(t, hi, true);
	__atomic_sub_fetch(&t->pairs, 1, __ATOMIC_RELAXED);
	t->ops->remove(t, lo, true);
	return 0;
}

__attribute__((noinline)) int ct_insert_wait(struct conntab *t,
					     struct conntab_node *n)
{
	unsigned int spins = 0;
	int err;

	do {
		ct_spin_pause(&spins);
		err = t->ops->insert(t, n, NULL);
	} while (err == CT_ECLAIMED);
	return err;
}

__attribute__((noinline)) int ct_remove_wait(struct conntab *t,
					     struct conntab_node *n)
{
	unsigned int spins = 0;
	int err;

	do {
		ct_spin_pause(&spins);
		err = t->ops->remove(t, n, false);
	} while (err == CT_ECLAIMED);
	return err;
}

/*
 * Remove @n, on a counted thread: a pair whole, a single node by the
 * backend, retried while another writer step holds it (P2).
 */
static inline __attribute__((always_inline)) int
ct_remove_node(struct conntab *t, struct conntab_node *n)
{
	int err;

	/* Stable while n is in t: set before it was linked. */
	if (n->ct_peer)
		return ct_remove_pair(t, n);
	err = t->ops->remove(t, n, false);
	return err == CT_ECLAIMED ? ct_remove_wait(t, n) : err;
}

__attribute__((noinline, cold)) int
ct_remove_uncounted(struct conntab *t, struct conntab_node *n)
{
	int held, err;

	held = ct_writer_enter(t, "conntab_remove()");
	err = ct_remove_node(t, n);
	ct_writer_exit(t->flavor, held);
	return err;
}

/* conntab_remove() but its fast path, arguments checked. */
static __attribute__((noinline)) int
ct_remove_generic(struct conntab *t, struct conntab_node *n)
{
	if (!ct_node_owned(n, t))
		return -ENOENT;
	ct_delay(CT_DP_FE_LOCK_OWNER);
	if (t->ops->remove_single && !n->ct_peer)
		return t->ops->remove_single(t, n);
	if (__builtin_expect(ct_writer_counted(t), 1))
		return ct_remove_node(t, n);
	return ct_remove_uncounted(t, n);
}

CONNTAB_API int conntab_remove(struct conntab *t, struct conntab_node *n)
{
	if (!t || !n)
		return -EINVAL;
	/*
	 * The backend's own path for a single node that @t owns and no
	 * eviction holds (else ct_remove_generic() waits, as
	 * ct_node_owned() does). ct_peer is stable while n is in t (set
	 * before it was linked), and read only once we saw it there
	 * (acquire).
	 */
	if (__builtin_expect(__atomic_load_n(&n->ct_owner, __ATOMIC_ACQUIRE) ==
			     (void *)t && !n->ct_peer &&
			     t->ops->remove_single, 1)) {
		ct_delay(CT_DP_FE_LOCK_OWNER);
		return t->ops->remove_single(t, n);
	}
	return ct_remove_generic(t, n);
}

/*
 * Look the key up and remove what was found, under the RCU read lock so
 * that the node found cannot be freed before the remove has looked at
 * it. -ENOENT from the remove means another writer unlinked or replaced
 * that node in between (a remove, a timewait to a new node, a recycle):
 * look again, and whatever holds the key now is the one to remove. Each
 * retry follows another writer's success, so the loop ends.
 */
static struct conntab_node *ct_remove_key_counted(struct conntab *t,
						  const struct conntab_key *key)
{
	struct conntab_node *n;
	int err;

	t->flavor->read_lock();
	do {
		n = t->lookup(t, key);
		err = n ? ct_remove_node(t, n) : -ENOENT;
	} while (n && err == -ENOENT);
	t->flavor->read_unlock();
	if (err) {
		errno = -err;
		return NULL;
	}
	return n;
}

CONNTAB_API struct conntab_node *conntab_remove_key(struct conntab *t,
						   const struct conntab_key *key)
{
	struct conntab_node *n;
	int held, err;

	if (!t || !key || !ct_key_valid(key)) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * Its lookup stands on nodes under the read lock on every backend:
	 * counted as a reader, not only where the backend's writers need it.
	 */
	if (__builtin_expect(ct_reader_counted(t), 1))
		return ct_remove_key_counted(t, key);
	held = ct_thread_enter(t, "conntab_remove_key()", true);
	n = ct_remove_key_counted(t, key);
	err = errno;
	ct_writer_exit(t->flavor, held);
	errno = err;
	return n;
}

/* conntab_timewait() on a thread the flavor counts. */
static inline __attribute__((always_inline)) int
ct_timewait_counted(struct conntab *t, struct conntab_node *est,
		    struct conntab_node *tw)
{
	unsigned int spins = 0;
	int err;

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
		ct_node_unpair(tw);
		ct_delay(CT_DP_FE_PUB_TW_CLAIM);
	}
	while ((err = t->ops->timewait(t, est, tw)) == CT_ECLAIMED)
		ct_spin_pause(&spins);
	if (err && tw != est)
		ct_node_release(tw);
	return err;
}

static __attribute__((noinline, cold)) int
ct_timewait_uncounted(struct conntab *t, struct conntab_node *est,
		      struct conntab_node *tw)
{
	int held, err;

	held = ct_writer_enter(t, "conntab_timewait()");
	err = ct_timewait_counted(t, est, tw);
	ct_writer_exit(t->flavor, held);
	return err;
}

CONNTAB_API int conntab_timewait(struct conntab *t, struct conntab_node *est,
				 struct conntab_node *tw)
{
	if (!t || !est || !tw)
		return -EINVAL;
	if (!ct_node_owned(est, t))
		return -ENOENT;
	/* A pair keeps its object for its life (the contract). */
	if (est->ct_peer)
		return -EINVAL;
	if (__builtin_expect(ct_writer_counted(t), 1))
		return ct_timewait_counted(t, est, tw);
	return ct_timewait_uncounted(t, est, tw);
}

/*
 * Walks and scans visit a pair once, through its a: the backends visit
 * every node, and this filter passes on all but the b halves. A pair's
 * halves are paired before either is linked, so the filter never takes a
 * half of a pair for a single node.
 */
struct ct_pair_filter {
	ct_walk_fn fn;
	void *arg;
};

static int ct_pair_filter_fn(struct conntab_node *n, void *arg)
{
	struct ct_pair_filter *f = arg;

	if (ct_node_pair_b(n))
		return 0;
	return f->fn(n, f->arg);
}

CONNTAB_API int conntab_walk(struct conntab *t,
			     int (*fn)(struct conntab_node *n, void *arg),
			     void *arg)
{
	struct ct_pair_filter f = { fn, arg };

	if (!t || !fn)
		return -EINVAL;
	CT_READER_CHECK(t, "conntab_walk()");
	return t->ops->walk(t, CT_WALK_ALL, ct_pair_filter_fn, &f);
}

CONNTAB_API int conntab_walk_state(struct conntab *t, enum conntab_state state,
				   int (*fn)(struct conntab_node *n, void *arg),
				   void *arg)
{
	if (!t || !fn ||
	    (state != CONNTAB_ESTABLISHED && state != CONNTAB_TIMEWAIT))
		return -EINVAL;
	CT_READER_CHECK(t, "conntab_walk_state()");
	return t->ops->walk(t, (int)state, ct_pair_filter_fn,
			    &(struct ct_pair_filter){ fn, arg });
}

/*
 * A cursor is zeroed before a pass, else the backend's position sealed
 * under the table's cursor key (lib/cursor.c): what it carries shows
 * nothing of the table, and one of another table, a changed one or
 * random bytes is refused instead of being trusted as a position.
 */
_Static_assert(sizeof(struct conntab_cursor) ==
	       sizeof(uint64_t) * CT_CURSOR_WORDS, "cursor words");

CONNTAB_API int conntab_scan(struct conntab *t, struct conntab_cursor *cur,
			     size_t budget,
			     int (*fn)(struct conntab_node *n, void *arg),
			     void *arg)
{
	uint64_t pos[CT_SCAN_POS_WORDS] = { 0 };
	enum ct_scan_end end;
	int ret = 0;
	bool fresh;

	if (!t || !cur || !fn || !budget)
		return -EINVAL;
	fresh = conntab_cursor_done(cur);
	if (!fresh && !ct_cursor_open(t, cur->opaque, pos))
		return -EINVAL;
	if (!t->ops->scan)
		return -EOPNOTSUPP;
	/* Checked where the call starts reading the table, as the others. */
	CT_READER_CHECK(t, "conntab_scan()");
	end = t->ops->scan(t, pos, fresh, budget, ct_pair_filter_fn,
			   &(struct ct_pair_filter){ fn, arg }, &ret);
	switch (end) {
	case CT_SCAN_BADPOS:
		return -EINVAL;
	case CT_SCAN_PASS:
		/* The only way a cursor is zeroed: conntab_cursor_done(). */
		memset(cur, 0, sizeof(*cur));
		__atomic_add_fetch(&t->scan_passes, 1, __ATOMIC_RELAXED);
		CT_PROBE(scan_pass, t, cur);
		return 1;
	case CT_SCAN_BUDGET:
		ret = 0;
		break;
	case CT_SCAN_STOPPED:
		/*
		 * fn's value, whatever it is (1 too): the pass goes on, also
		 * after a stop on its last node, whose next call finds
		 * nothing left and ends it.
		 */
		break;
	}
	ct_cursor_seal(t, pos, cur->opaque);	/* never zeroed: under way */
	return ret;
}

CONNTAB_API void conntab_stats(struct conntab *t, struct conntab_stats *st)
{
	size_t pairs;
	int held;

	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (!t)
		return;
	held = ct_writer_enter(t, "conntab_stats()");
	t->ops->stats(t, st);
	ct_writer_exit(t->flavor, held);
	/*
	 * The backends sum counters kept per part (stripe, segment) with no
	 * common snapshot, so a node that moves between parts while they
	 * are summed, as an eviction's victim and newcomer do, can be
	 * counted on both sides: one more than any instant held. No
	 * instant holds more than max_entries (the reservation passes from
	 * victim to newcomer), so neither does the sum.
	 */
	/*
	 * Entries are connections: a pair's two nodes count once. The pair
	 * count goes up once both halves are in and down once the first is
	 * out, so it never leads the nodes summed: the difference stays
	 * >= 0 but for a pair removed between the sum and this load. A pair
	 * insert between its two links counts its connection twice for an
	 * instant, as a sum over parts may: within max_entries, clamped.
	 */
	pairs = __atomic_load_n(&t->pairs, __ATOMIC_RELAXED);
	st->entries = st->entries > pairs ? st->entries - pairs : 0;
	if (t->max_entries && st->entries > t->max_entries)
		st->entries = t->max_entries;
	if (st->timewait > st->entries)
		st->timewait = st->entries;
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

/* The struct of 0.4.0, the first with conntab_counters(). */
#define CT_COUNTERS_SIZE_0_4	(offsetof(struct conntab_counters, pairs) + \
				 sizeof(uint64_t))

CONNTAB_API int conntab_counters(struct conntab *t, struct conntab_counters *c)
{
	struct conntab_counters v;
	size_t size;

	if (!t || !c || c->size < CT_COUNTERS_SIZE_0_4)
		return -EINVAL;
	size = c->size < sizeof(v) ? c->size : sizeof(v);
	/* Relaxed loads: each counter exact, no common instant (the man page). */
	v.size = size;
	v.evictions = __atomic_load_n(&t->evictions, __ATOMIC_RELAXED);
	v.evict_refused = __atomic_load_n(&t->evict_refused, __ATOMIC_RELAXED);
	v.scan_passes = __atomic_load_n(&t->scan_passes, __ATOMIC_RELAXED);
	v.pairs = __atomic_load_n(&t->pairs, __ATOMIC_RELAXED);
	memcpy(c, &v, size);
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
	CT_READER_CHECK(t, "conntab_walk_prefix()");
	ct_key_str(key, f.s);
	if (t->ops->walk_prefix)
		return t->ops->walk_prefix(t, f.s, bits, fn, arg);
	f.bits = bits;
	f.fn = fn;
	f.arg = arg;
	return t->ops->walk(t, CT_WALK_ALL, ct_prefix_filter_fn, &f);
}
