/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: adversarial key sets (depth and memory bounded), key
 * order of walks, conntab_walk_prefix() against a reference model for
 * every available backend, and readers that never miss a present key
 * while writers reshape the trie.
 */
#include <urcu.h>		/* memb flavor: conntab_create picks it up */
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/trie/trie.h"

/* lib/trie/trie.c: at most L / 4 internal nodes on a path of an L-bit string. */
#define V4_BITS		128
#define V6_BITS		320
#define MAX_DEPTH_V4	(V4_BITS / 4 + 1)
#define MAX_DEPTH_V6	(V6_BITS / 4 + 1)
/*
 * lib/trie/trie.c: at most 208 bytes per entry present over an empty table's
 * memory, and fewer internal nodes than entries.
 */
#define BOUND_PER_ENTRY	208

/*
 * Check's ck_assert writes a checkpoint to its log pipe on every call;
 * hot loops use this instead, which calls Check only on failure.
 */
#define REQUIRE(c) do {							\
	if (!(c))							\
		ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);	\
} while (0)

/*
 * Allocation failure injection: the library's malloc and calloc calls
 * resolve to these, which fail the n-th call once malloc_fail_in is set.
 * Not under ASan or ThreadSanitizer, which own malloc (and call it
 * before the program could, make check-tsan).
 */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
# define HAVE_MALLOC_FAIL 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t sz);
/*
 * Not static, set with atomics: the compiler must not assume that the
 * library's calls cannot reach malloc() here.
 */
int malloc_fail_in;

static void fail_next_malloc(void)
{
	__atomic_store_n(&malloc_fail_in, 1, __ATOMIC_SEQ_CST);
}

void *malloc(size_t n)
{
	if (__atomic_load_n(&malloc_fail_in, __ATOMIC_RELAXED) &&
	    __atomic_sub_fetch(&malloc_fail_in, 1, __ATOMIC_RELAXED) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

/* GCC turns the library's malloc + memset into calloc. */
void *calloc(size_t n, size_t sz)
{
	if (__atomic_load_n(&malloc_fail_in, __ATOMIC_RELAXED) &&
	    __atomic_sub_fetch(&malloc_fail_in, 1, __ATOMIC_RELAXED) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, sz);
}
#endif

struct conn {
	struct conntab_node node;
	uint32_t id;
	int seen;
};

static struct conntab *mk(enum conntab_backend b, size_t expected)
{
	struct conntab_config cfg = { .backend = b, .expected = expected };
	struct conntab *t = conntab_create(&cfg);

	ck_assert_ptr_nonnull(t);
	return t;
}

static struct conn *conns_alloc(size_t n)
{
	struct conn *c = calloc(n, sizeof(*c));
	size_t i;

	ck_assert_ptr_nonnull(c);
	for (i = 0; i < n; i++) {
		conntab_node_init(&c[i].node);
		c[i].id = (uint32_t)i;
	}
	return c;
}

/* xorshift64*: deterministic keys without libc's shared state. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/*
 * Reference model of the canonical string, written independently of
 * lib/key.h from the order documented for conntab_walk_prefix().
 */
static unsigned int ref_str(const struct conntab_key *k, uint8_t *s)
{
	unsigned int a = k->family == AF_INET ? 4 : 16, o = 0;

	memset(s, 0, 48);
	s[o++] = (uint8_t)(k->zone >> 8);
	s[o++] = (uint8_t)(k->zone & 0xff);
	s[o++] = k->proto;
	s[o++] = k->family;
	memcpy(s + o, k->laddr.bytes, a);
	o += a;
	memcpy(s + o, &k->lport, 2);
	o += 2;
	memcpy(s + o, k->raddr.bytes, a);
	o += a;
	memcpy(s + o, &k->rport, 2);
	o += 2;
	return o;
}

static int ref_bit(const uint8_t *s, unsigned int i)
{
	return (s[i / 8] >> (7 - i % 8)) & 1;
}

static bool ref_match(const struct conntab_key *a, const struct conntab_key *b,
		      unsigned int bits)
{
	uint8_t sa[48], sb[48];
	unsigned int i;

	ref_str(a, sa);
	ref_str(b, sb);
	for (i = 0; i < bits; i++)
		if (ref_bit(sa, i) != ref_bit(sb, i))
			return false;
	return true;
}

static int ref_cmp(const struct conntab_key *a, const struct conntab_key *b)
{
	uint8_t sa[48], sb[48];

	ref_str(a, sa);
	ref_str(b, sb);
	return memcmp(sa, sb, 48);
}

static void insert_all(struct conntab *t, struct conn *c,
		       const struct conntab_key *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		REQUIRE(conntab_insert(t, &c[i].node, &k[i]) == 0);
}

static void lookup_all(struct conntab *t, struct conn *c,
		       const struct conntab_key *k, size_t n)
{
	size_t i;

	rcu_read_lock();
	for (i = 0; i < n; i++)
		REQUIRE(conntab_lookup(t, &k[i]) == &c[i].node);
	rcu_read_unlock();
}

/* Insert @k, check lookups, depth and memory bounds, then remove all. */
static void check_set(const char *what, struct conntab_key *k, size_t n,
		      size_t depth_bound)
{
	struct conntab *t = mk(CONNTAB_TRIE, 0);
	struct conn *c = conns_alloc(n);
	struct conntab_stats st, empty;
	size_t i, mem_bound;

	conntab_stats(t, &empty);
	insert_all(t, c, k, n);
	lookup_all(t, c, k, n);
	conntab_stats(t, &st);
	mem_bound = empty.memory + BOUND_PER_ENTRY * n;
	ck_assert_uint_eq(st.entries, n);
	ck_assert_msg(st.max_depth <= depth_bound,
		      "%s: depth %zu > %zu", what, st.max_depth, depth_bound);
	ck_assert_msg(st.memory <= mem_bound, "%s: memory %zu > %zu",
		      what, st.memory, mem_bound);
	ck_assert_msg(st.buckets < n, "%s: %zu internal nodes for %zu keys",
		      what, st.buckets, n);
	for (i = 0; i < n; i += 2)
		REQUIRE(conntab_remove(t, &c[i].node) == 0);
	rcu_read_lock();
	for (i = 0; i < n; i++)
		REQUIRE(conntab_lookup(t, &k[i]) ==
			(i & 1 ? &c[i].node : NULL));
	rcu_read_unlock();
	for (i = 1; i < n; i += 2)
		REQUIRE(conntab_remove(t, &c[i].node) == 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 0);
	/* Nodes that empty or fall to one child go: nothing is left. */
	ck_assert_msg(st.buckets == 0 && st.memory == empty.memory,
		      "%s: %zu nodes, %zu bytes left (empty table: %zu)", what,
		      st.buckets, st.memory, empty.memory);
	ck_assert_uint_le(st.max_depth, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();	/* the retired nodes are freed before c */
	free(c);
}

#define NKEYS	(64 * 1024)

static uint32_t ip4(unsigned int a, unsigned int b, unsigned int c,
		    unsigned int d)
{
	return htonl(a << 24 | b << 16 | c << 8 | d);
}

/* Sequential remote addresses to one local endpoint. */
START_TEST(adv_sequential)
{
	struct conntab_key *k = calloc(NKEYS, sizeof(*k));
	size_t i;

	for (i = 0; i < NKEYS; i++)
		conntab_key_v4(&k[i], IPPROTO_TCP, ip4(10, 0, 0, 1), htons(443),
			       htonl(0xc0a80000u + (uint32_t)i), htons(40000));
	/* 16 varying bits: at most 5 chunks of >= 4 bits, plus the leaf. */
	check_set("sequential", k, NKEYS, 16 / 4 + 2);
	free(k);
}
END_TEST

/* One local endpoint, remote ports 0..65535 of a few addresses. */
START_TEST(adv_one_endpoint_ports)
{
	size_t n = 4 * 65536, i;
	struct conntab_key *k = calloc(n, sizeof(*k));

	for (i = 0; i < n; i++)
		conntab_key_v4(&k[i], IPPROTO_TCP, ip4(10, 0, 0, 1), htons(443),
			       ip4(192, 0, 2, (unsigned int)(i >> 16)),
			       htons((uint16_t)i));
	/* raddr byte 3 (2 bits used) and rport: 48 bits span. */
	check_set("one endpoint", k, n, 48 / 4 + 2);
	free(k);
}
END_TEST

/* Pairs differing only in the very last bit, pairs spread at random. */
START_TEST(adv_last_bit)
{
	struct conntab_key *k = calloc(NKEYS, sizeof(*k));
	uint64_t s = 42;
	size_t i;

	for (i = 0; i < NKEYS; i += 2) {
		uint64_t r = rnd(&s);

		conntab_key_v4(&k[i], IPPROTO_UDP, ip4(10, 0, 0, 1), htons(53),
			       (uint32_t)r, (uint16_t)((r >> 32) & 0xfeff));
		k[i + 1] = k[i];
		/* rport is big-endian: the last bit is in its second byte. */
		k[i + 1].rport |= htons(1);
	}
	check_set("last bit", k, NKEYS, MAX_DEPTH_V4);
	free(k);
}
END_TEST

/*
 * The memory worst case: IPv6 keys whose tree is binary everywhere and
 * whose branch points are as deep as possible (long prefixes make the
 * stored prefixes long). Pair index bit j sits in the top bit of chunk
 * 58 + j of the string (in the remote address); the two keys of a pair
 * differ in the last bit. Also the depth worst case for its size.
 */
START_TEST(adv_v6_binary_deep)
{
	size_t n = 2 * 32768, i, j;
	struct conntab_key *k = calloc(n, sizeof(*k));
	struct in6_addr l, r;

	inet_pton(AF_INET6, "2001:db8::1", &l);
	for (i = 0; i < n; i += 2) {
		uint8_t s[48] = { 0 };

		/* remote address starts at string byte 22 (bit 176). */
		for (j = 0; j < 15; j++) {
			unsigned int bit = (58 + (unsigned int)j) * 4;

			if ((i / 2) >> j & 1)
				s[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		}
		memcpy(&r, s + 22, 16);
		conntab_key_v6(&k[i], IPPROTO_TCP, &l, htons(443), &r,
			       htons(1000));
		k[i + 1] = k[i];
		k[i + 1].rport |= htons(1);
	}
	check_set("v6 binary deep", k, n, MAX_DEPTH_V6);
	free(k);
}
END_TEST

/* A comb: key j parts from key 0 at bit j; one node per chunk. */
START_TEST(adv_comb_depth)
{
	struct conntab_key k[V6_BITS - 32 + V4_BITS - 32];
	uint8_t s[48];
	size_t n = 0;
	unsigned int bit;
	struct in6_addr a;

	memset(&a, 0, sizeof(a));
	for (bit = 32; bit < V6_BITS; bit++, n++) {
		conntab_key_v6(&k[n], IPPROTO_TCP, &a, 0, &a, 0);
		ref_str(&k[n], s);
		s[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		memcpy(&k[n].laddr, s + 4, 16);
		memcpy(&k[n].lport, s + 20, 2);
		memcpy(&k[n].raddr, s + 22, 16);
		memcpy(&k[n].rport, s + 38, 2);
	}
	for (bit = 32; bit < V4_BITS; bit++, n++) {
		conntab_key_v4(&k[n], IPPROTO_TCP, 0, 0, 0, 0);
		ref_str(&k[n], s);
		s[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		memcpy(&k[n].laddr, s + 4, 4);
		memcpy(&k[n].lport, s + 8, 2);
		memcpy(&k[n].raddr, s + 10, 4);
		memcpy(&k[n].rport, s + 14, 2);
	}
	check_set("comb", k, n, MAX_DEPTH_V6);
}
END_TEST

/* IPv4 and IPv6 mixed over several zones and protocols, random. */
START_TEST(adv_mixed)
{
	struct conntab_key *k = calloc(NKEYS, sizeof(*k));
	uint64_t s = 7;
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		uint64_t r = rnd(&s), q = rnd(&s);

		if (r & 1) {
			struct in6_addr l, rr;

			memcpy(&l, &q, 8);
			memcpy((uint8_t *)&l + 8, &r, 8);
			memcpy(&rr, &r, 8);
			memcpy((uint8_t *)&rr + 8, &q, 8);
			conntab_key_v6(&k[i], r & 2 ? IPPROTO_TCP : IPPROTO_UDP,
				       &l, (uint16_t)(r >> 16), &rr,
				       (uint16_t)(q >> 16));
		} else {
			conntab_key_v4(&k[i], r & 2 ? IPPROTO_TCP : IPPROTO_UDP,
				       (uint32_t)q, (uint16_t)(r >> 16),
				       (uint32_t)(q >> 32),
				       (uint16_t)(r >> 32));
		}
		k[i].zone = (uint16_t)(r >> 60);
	}
	check_set("mixed", k, NKEYS, MAX_DEPTH_V6);
	free(k);
}
END_TEST

/* A structured random key set: few zones, locals; both families. */
static void gen_structured(struct conntab_key *k, size_t n, uint64_t seed)
{
	uint64_t s = seed;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t r = rnd(&s), q = rnd(&s);
		uint16_t lport = htons((uint16_t)(r & 1 ? 443 :
						  80 + (r >> 8 & 3)));

		if (r >> 3 & 1) {
			struct in6_addr l, rr;

			memset(&l, 0, sizeof(l));
			l.s6_addr[0] = 0x20;
			l.s6_addr[15] = (uint8_t)(r >> 4 & 3);
			memcpy(&rr, &q, 8);
			memcpy((uint8_t *)&rr + 8, &r, 8);
			conntab_key_v6(&k[i], IPPROTO_TCP, &l, lport, &rr,
				       (uint16_t)(q >> 40));
		} else {
			conntab_key_v4(&k[i], r >> 6 & 1 ? IPPROTO_TCP :
				       IPPROTO_UDP, ip4(10, 0, 0, (r >> 4 & 3)),
				       lport, (uint32_t)q, (uint16_t)(q >> 40));
		}
		k[i].zone = (uint16_t)(r >> 12 & 3);
	}
}

struct visit {
	struct conn *c;
	size_t n, seen;
	const struct conntab_key *prev;
	bool ordered;
	size_t stop_after;
};

static int visit_fn(struct conntab_node *nd, void *arg)
{
	struct visit *v = arg;
	struct conn *c = conntab_entry(nd, struct conn, node);

	REQUIRE(c >= v->c && c < v->c + v->n);
	c->seen++;
	if (v->prev && ref_cmp(v->prev, conntab_node_key(nd)) >= 0)
		v->ordered = false;
	v->prev = conntab_node_key(nd);
	v->seen++;
	return v->stop_after && v->seen == v->stop_after ? 77 : 0;
}

#define NPROBE	2000

static void check_prefix(enum conntab_backend b)
{
	size_t n = 4000, i, p, want;
	struct conntab_key *k = calloc(n, sizeof(*k)), probe;
	struct conn *c = conns_alloc(n);
	struct conntab *t = mk(b, n);
	static const unsigned int fixed[] = { 0, 16, 24, 32, 64, 80, 128,
					      176, 320 };
	uint64_t s = 99;

	gen_structured(k, n, 1234);
	/* Drop duplicates so every key is in the table once. */
	for (i = 0; i < n; i++) {
		int err = conntab_insert(t, &c[i].node, &k[i]);

		REQUIRE(err == 0 || err == -EEXIST);
		if (err)
			k[i].family = 0;
	}
	for (p = 0; p < NPROBE; p++) {
		struct visit v = { .c = c, .n = n, .ordered = true };
		unsigned int maxb, bits;

		probe = k[rnd(&s) % n];
		if (!probe.family)
			continue;
		maxb = probe.family == AF_INET ? V4_BITS : V6_BITS;
		bits = p < 2 * (sizeof(fixed) / sizeof(fixed[0])) ?
		       fixed[p / 2] : (unsigned int)(rnd(&s) % (maxb + 1));
		if (bits > maxb)
			bits = maxb;
		if (p & 1)	/* a key not in the table, same prefix */
			probe.rport ^= 0x5a5a;
		for (i = 0; i < n; i++)
			c[i].seen = 0;
		rcu_read_lock();
		ck_assert_int_eq(conntab_walk_prefix(t, &probe, bits, visit_fn,
						     &v), 0);
		rcu_read_unlock();
		for (want = 0, i = 0; i < n; i++) {
			bool m = k[i].family && ref_match(&k[i], &probe, bits);

			REQUIRE(c[i].seen == (m ? 1 : 0));
			want += m;
		}
		ck_assert_uint_eq(v.seen, want);
		if (b == CONNTAB_TRIE)
			ck_assert_msg(v.ordered, "prefix walk out of order");
	}
	/* A nonzero return stops the walk and is returned. */
	{
		struct visit v = { .c = c, .n = n, .stop_after = 3 };

		conntab_key_v4(&probe, 0, 0, 0, 0, 0);
		rcu_read_lock();
		ck_assert_int_eq(conntab_walk_prefix(t, &probe, 0, visit_fn,
						     &v), 77);
		rcu_read_unlock();
		ck_assert_uint_eq(v.seen, 3);
	}
	/* Bad arguments. */
	conntab_key_v4(&probe, IPPROTO_TCP, 1, 2, 3, 4);
	ck_assert_int_eq(conntab_walk_prefix(t, &probe, V4_BITS + 1, visit_fn,
					     NULL), -EINVAL);
	ck_assert_int_eq(conntab_walk_prefix(NULL, &probe, 0, visit_fn, NULL),
			 -EINVAL);
	ck_assert_int_eq(conntab_walk_prefix(t, NULL, 0, visit_fn, NULL),
			 -EINVAL);
	ck_assert_int_eq(conntab_walk_prefix(t, &probe, 0, NULL, NULL),
			 -EINVAL);
	probe.family = 99;
	ck_assert_int_eq(conntab_walk_prefix(t, &probe, 0, visit_fn, NULL),
			 -EINVAL);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
	free(k);
}

START_TEST(prefix_every_backend)
{
	int b, tested = 0;

	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE; b++) {
		if (!conntab_backend_available((enum conntab_backend)b))
			continue;
		check_prefix((enum conntab_backend)b);
		tested++;
	}
	ck_assert_int_ge(tested, 2);	/* chained and trie at least */
}
END_TEST

/* conntab_walk on the trie: every node once, in key order. */
START_TEST(walk_in_key_order)
{
	size_t n = 20000, i;
	struct conntab_key *k = calloc(n, sizeof(*k));
	struct conn *c = conns_alloc(n);
	struct conntab *t = mk(CONNTAB_TRIE, 0);
	struct visit v = { .c = c, .n = n, .ordered = true };
	size_t present = 0;

	gen_structured(k, n, 555);
	for (i = 0; i < n; i++)
		present += conntab_insert(t, &c[i].node, &k[i]) == 0;
	rcu_read_lock();
	ck_assert_int_eq(conntab_walk(t, visit_fn, &v), 0);
	rcu_read_unlock();
	ck_assert(v.ordered);
	ck_assert_uint_eq(v.seen, present);
	for (i = 0; i < n; i++)
		REQUIRE(c[i].seen <= 1);
	conntab_destroy(t, NULL);
	free(c);
	free(k);
}
END_TEST

/*
 * A key outside the bits a dense node skips. A table of TCP keys only
 * has a root that skips the zone, protocol and family bytes every key
 * shares (it branches on the addresses). A UDP key's descent by its
 * address bits may reach a sparse node under that root where it has no
 * entry: the insert's fast path would add it there if it did not check
 * the skipped bits against the root's prefix, and it must go above the
 * root instead. Only the first such key meets that root (the node built
 * above it then parts the protocols), so each round is a fresh table.
 * Lookups alone do not tell (they descend by the same bits); a walk in
 * key order and a prefix walk of the protocol do.
 */
#define SKIP_ROUNDS	32
#define SKIP_KEYS	1024

START_TEST(insert_outside_skipped_bits)
{
	size_t n = SKIP_KEYS + 1, i, round;
	struct conntab_key *k = calloc(n, sizeof(*k));
	struct conn *c = conns_alloc(n);
	uint64_t s = 4242, r;

	ck_assert_ptr_nonnull(k);
	for (round = 0; round < SKIP_ROUNDS; round++) {
		struct conntab *t = mk(CONNTAB_TRIE, 0);
		struct visit v = { .c = c, .n = n, .ordered = true };

		for (i = 0; i < n; i++) {
			r = rnd(&s);
			conntab_key_v4(&k[i], i < SKIP_KEYS ? IPPROTO_TCP :
						      IPPROTO_UDP,
				       (uint32_t)r, (uint16_t)(r >> 32),
				       (uint32_t)(r >> 16) ^ 0x5a5a5a5a,
				       (uint16_t)(r >> 48) | 1);
			c[i].seen = 0;
		}
		insert_all(t, c, k, n);
		lookup_all(t, c, k, n);
		rcu_read_lock();
		ck_assert_int_eq(conntab_walk(t, visit_fn, &v), 0);
		rcu_read_unlock();
		ck_assert_msg(v.ordered, "round %zu: walk out of key order",
			      round);
		ck_assert_uint_eq(v.seen, n);
		/* Zone and protocol: the first 24 bits of the key string. */
		for (i = 0; i < n; i++)
			c[i].seen = 0;
		v = (struct visit){ .c = c, .n = n, .ordered = true };
		rcu_read_lock();
		ck_assert_int_eq(conntab_walk_prefix(t, &k[SKIP_KEYS], 24,
						     visit_fn, &v), 0);
		rcu_read_unlock();
		ck_assert_uint_eq(v.seen, 1);
		REQUIRE(c[SKIP_KEYS].seen == 1);
		conntab_destroy(t, NULL);
		rcu_barrier();	/* the retired nodes are freed before c */
	}
	free(c);
	free(k);
}
END_TEST

/*
 * Concurrency: readers look up a stable key set while writers insert,
 * time-wait, recycle and remove churn keys interleaved with it (same
 * subtrees, so nodes are split, copied and collapsed under the readers).
 * Churn nodes are poisoned before they are freed after a grace period.
 */
#define STABLE	8192
#define CHURN	8192
#define ROUNDS	6

struct churn_obj {
	struct conntab_node node;
	struct rcu_head rcu;
};

static struct conntab *ct_conc;
static struct conntab_key conc_keys[STABLE + 2 * CHURN];
static struct conn conc_stable[STABLE];
static volatile int conc_stop;
static long conc_misses;

static void churn_free(struct rcu_head *h)
{
	struct churn_obj *o = caa_container_of(h, struct churn_obj, rcu);

	memset(o, 0xa5, sizeof(*o));
	free(o);
}

static void *reader(void *arg)
{
	long misses = 0;
	size_t i = 0;

	rcu_register_thread();
	while (!__atomic_load_n(&conc_stop, __ATOMIC_RELAXED)) {
		struct conntab_node *n;

		rcu_read_lock();
		n = conntab_lookup(ct_conc, &conc_keys[i]);
		if (n != &conc_stable[i].node)
			misses++;
		rcu_read_unlock();
		i = (i + 7) % STABLE;
	}
	rcu_unregister_thread();
	__atomic_add_fetch(&conc_misses, misses, __ATOMIC_RELAXED);
	return NULL;
}

static void *writer(void *arg)
{
	size_t base = STABLE + (size_t)(uintptr_t)arg * CHURN, i, r;
	struct churn_obj **o = calloc(CHURN, sizeof(*o));

	rcu_register_thread();
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < CHURN; i++) {
			o[i] = malloc(sizeof(*o[i]));
			conntab_node_init(&o[i]->node);
			REQUIRE(conntab_insert(ct_conc, &o[i]->node,
					       &conc_keys[base + i]) == 0);
		}
		for (i = 0; i < CHURN; i++) {
			struct churn_obj *tw;
			struct conntab_node *old;

			if (i % 3)
				continue;
			tw = malloc(sizeof(*tw));
			conntab_node_init(&tw->node);
			REQUIRE(conntab_timewait(ct_conc, &o[i]->node,
						 &tw->node) == 0);
			rcu_read_lock();
			REQUIRE(conntab_lookup(ct_conc, &conc_keys[base + i]) ==
				&tw->node);
			rcu_read_unlock();
			call_rcu(&o[i]->rcu, churn_free);
			o[i] = malloc(sizeof(*o[i]));
			conntab_node_init(&o[i]->node);
			REQUIRE(conntab_insert_recycle(ct_conc, &o[i]->node,
						       &conc_keys[base + i],
						       &old) == 0);
			REQUIRE(old == &tw->node);
			call_rcu(&tw->rcu, churn_free);
		}
		for (i = 0; i < CHURN; i++) {
			REQUIRE(conntab_remove(ct_conc, &o[i]->node) == 0);
			call_rcu(&o[i]->rcu, churn_free);
		}
	}
	rcu_unregister_thread();
	free(o);
	return NULL;
}

START_TEST(concurrent_no_miss)
{
	pthread_t rd[2], wr[2];
	struct conntab_resize_stats rs;
	struct conntab_stats st;
	uint64_t s = 3;
	size_t i;

	/*
	 * Stable and churn keys interleave in the same few subtrees; for
	 * the sizing hint, over 256 values of the third address byte, where
	 * the root then bursts.
	 */
	for (i = 0; i < STABLE + 2 * CHURN; i++) {
		uint64_t r = rnd(&s);

		conntab_key_v4(&conc_keys[i], IPPROTO_TCP, ip4(10, 0, 0, 1),
			       htons(443),
			       ip4(198, 51, (r >> 8) & (_i ? 0xff : 0x3),
				   r & 0xff),
			       htons((uint16_t)(i * 2 + (i >= STABLE))));
	}
	/*
	 * _i = 1: the root bursts into a node built to the sizing hint
	 * (lib/trie/trie.c), which the writers then change under the readers.
	 */
	ct_conc = mk(CONNTAB_TRIE, _i ? (size_t)1 << 14 : 0);
	for (i = 0; i < STABLE; i++) {
		conntab_node_init(&conc_stable[i].node);
		REQUIRE(conntab_insert(ct_conc, &conc_stable[i].node,
				       &conc_keys[i]) == 0);
	}
	if (_i) {
		/* Its width, log2(2^14) - 4 bits: not what the load made. */
		conntab_resize_stats(ct_conc, &rs);
		ck_assert_uint_eq(rs.dir_slots, (size_t)1 << 10);
		ck_assert_uint_eq(rs.splits + rs.merges, 0);
	}
	conc_stop = 0;
	conc_misses = 0;
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&rd[i], NULL, reader, NULL), 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&wr[i], NULL, writer,
						(void *)(uintptr_t)i), 0);
	for (i = 0; i < 2; i++)
		pthread_join(wr[i], NULL);
	__atomic_store_n(&conc_stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2; i++)
		pthread_join(rd[i], NULL);
	ck_assert_int_eq(conc_misses, 0);
	conntab_resize_stats(ct_conc, &rs);
	printf("trie: readers beside writers%s: %zu inflations, %zu "
	       "halvings, no miss\n", _i ? " (sizing hint)" : "", rs.splits,
	       rs.merges);
	conntab_stats(ct_conc, &st);
	ck_assert_uint_eq(st.entries, STABLE);
	ck_assert_uint_eq(st.timewait, 0);
	lookup_all(ct_conc, conc_stable, conc_keys, STABLE);
	conntab_destroy(ct_conc, NULL);
	rcu_barrier();
}
END_TEST

/*
 * Two writers add the same value to one sparse node at once: writer w
 * inserts twin[i][w], the twins differing only in the remote port's
 * last bit, so both are one entry of the node above them (then a pair
 * below it), and the writers, in step, race for that entry. The insert's
 * fast path finds the value's entry without a lock and does not look
 * again under the lock unless the node's count moved meanwhile
 * (ct_t_insert_fast()): had it kept a miss it no longer had, the second
 * twin would be a second entry of the value, which lookups never reach.
 * Every twin is found, the counts are exact, and all leave again,
 * round after round (with delay injection, the race's window is wide).
 */
#define TWINS	4096
#define TWIN_ROUNDS 32

static struct conntab *ct_twin;
static struct conntab_key twin_keys[TWINS][2];
static struct conn twin_conns[TWINS][2];
static pthread_barrier_t twin_bar;

static void *twin_writer(void *arg)
{
	size_t w = (size_t)(uintptr_t)arg, i, r;

	rcu_register_thread();
	for (r = 0; r < TWIN_ROUNDS; r++) {
		pthread_barrier_wait(&twin_bar);
		for (i = 0; i < TWINS; i++)
			REQUIRE(conntab_insert(ct_twin, &twin_conns[i][w].node,
					       &twin_keys[i][w]) == 0);
		pthread_barrier_wait(&twin_bar);	/* main checks */
		pthread_barrier_wait(&twin_bar);
		for (i = 0; i < TWINS; i++)
			REQUIRE(conntab_remove(ct_twin,
					       &twin_conns[i][w].node) == 0);
	}
	rcu_unregister_thread();
	return NULL;
}

START_TEST(concurrent_same_value)
{
	struct conntab_stats st;
	pthread_t wr[2];
	uint64_t s = 11;
	size_t i, r, w;

	for (i = 0; i < TWINS; i++) {
		uint64_t x = rnd(&s);

		for (w = 0; w < 2; w++) {
			conntab_key_v4(&twin_keys[i][w], IPPROTO_TCP,
				       ip4(10, 0, 0, 1), htons(443),
				       ip4(198, 51, (x >> 8) & 0xff, x & 0xff),
				       htons((uint16_t)(((x >> 16) & 0x7ffe) |
							w)));
			conntab_node_init(&twin_conns[i][w].node);
		}
	}
	/* A dense root at once (the sizing hint), sparse nodes below. */
	ct_twin = mk(CONNTAB_TRIE, (size_t)1 << 14);
	ck_assert_int_eq(pthread_barrier_init(&twin_bar, NULL, 3), 0);
	for (w = 0; w < 2; w++)
		ck_assert_int_eq(pthread_create(&wr[w], NULL, twin_writer,
						(void *)(uintptr_t)w), 0);
	for (r = 0; r < TWIN_ROUNDS; r++) {
		pthread_barrier_wait(&twin_bar);
		pthread_barrier_wait(&twin_bar);
		rcu_read_lock();
		for (i = 0; i < TWINS; i++)
			for (w = 0; w < 2; w++)
				REQUIRE(conntab_lookup(ct_twin,
						       &twin_keys[i][w]) ==
					&twin_conns[i][w].node);
		rcu_read_unlock();
		conntab_stats(ct_twin, &st);
		ck_assert_uint_eq(st.entries, 2 * TWINS);
		pthread_barrier_wait(&twin_bar);
	}
	for (w = 0; w < 2; w++)
		pthread_join(wr[w], NULL);
	conntab_stats(ct_twin, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.buckets, 0);
	pthread_barrier_destroy(&twin_bar);
	conntab_destroy(ct_twin, NULL);
	rcu_barrier();
}
END_TEST

/* Duplicate keys, recycle, time-wait in place, max_entries on the trie. */
/*
 * ct_k_find() (lib/trie/trie.h) on nodes of every capacity and count, each
 * allocated to its exact size (ASan: no load leaves the node): every
 * value in val[0, n) is found at its index, and a value that fills
 * everything past n (the slots a writer may be filling, the kid array,
 * the padding) is not, nor is one absent altogether.
 */
START_TEST(sparse_find)
{
	unsigned int cap, n, i, j;
	const uint16_t ghost = 0x5a5a, absent = 0x7777;

	for (cap = 1; cap <= CT_T_KMAX; cap++) {
		size_t sz = ct_k_kidoff(cap) + cap * sizeof(uintptr_t);

		for (n = 0; n <= cap; n++) {
			struct ct_tnode *x = malloc(sz);
			uint16_t *val;

			ck_assert_ptr_nonnull(x);
			for (i = 0; i < sz / 2; i++)
				((uint16_t *)(void *)x)[i] = ghost;
			memset(x, 0, sizeof(*x));
			x->kind = CT_T_K;
			x->cap = (uint8_t)cap;
			x->n = (uint8_t)n;
			val = ct_k_val(x);
			for (i = 0; i < n; i++)
				val[i] = (uint16_t)(1000 + 37 * ((i + cap) % n));
			for (i = 0; i < n; i++)
				ck_assert_int_eq(ct_k_find(x, val[i]), (int)i);
			ck_assert_int_eq(ct_k_find(x, ghost), -1);
			ck_assert_int_eq(ct_k_find(x, absent), -1);
			for (j = 0; j < n; j++) {	/* a ghost inside n is found */
				uint16_t keep = val[j];

				val[j] = ghost;
				ck_assert_int_eq(ct_k_find(x, ghost), (int)j);
				val[j] = keep;
			}
			free(x);
		}
	}
}
END_TEST

START_TEST(trie_basics)
{
	struct conntab_config cfg = { .backend = CONNTAB_TRIE,
				      .max_entries = 3 };
	struct conntab *t = conntab_create(&cfg);
	struct conn *c = conns_alloc(6);
	struct conntab_node *old;
	struct conntab_key k[4];
	struct conntab_stats st;

	ck_assert_ptr_nonnull(t);
	conntab_key_v4(&k[0], IPPROTO_TCP, 1, 2, 3, 4);
	conntab_key_v4(&k[1], IPPROTO_TCP, 1, 2, 3, 5);
	conntab_key_v4(&k[2], IPPROTO_TCP, 1, 2, 0x80000003u, 4);
	conntab_key_v4(&k[3], IPPROTO_UDP, 1, 2, 3, 4);
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k[0]), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k[0]), -EEXIST);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k[1]), 0);
	ck_assert_int_eq(conntab_insert(t, &c[2].node, &k[2]), 0);
	ck_assert_int_eq(conntab_insert(t, &c[3].node, &k[3]), -ENOSPC);
	ck_assert_int_eq(conntab_timewait(t, &c[1].node, &c[1].node), 0);
	ck_assert_int_eq(conntab_timewait(t, &c[1].node, &c[1].node), -EINVAL);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[4].node, &k[0], &old),
			 -EEXIST);
	ck_assert_int_eq(conntab_insert_recycle(t, &c[4].node, &k[1], &old), 0);
	ck_assert_ptr_eq(old, &c[1].node);
	rcu_read_lock();
	ck_assert_ptr_eq(conntab_lookup(t, &k[1]), &c[4].node);
	ck_assert_ptr_null(conntab_lookup(t, &k[3]));
	rcu_read_unlock();
	ck_assert_int_eq(conntab_remove(t, &c[1].node), -ENOENT);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 3);
	ck_assert_uint_eq(st.timewait, 0);
	ck_assert_uint_eq(st.buckets, 2);
	ck_assert_int_eq(conntab_remove(t, &c[0].node), 0);
	ck_assert_int_eq(conntab_remove(t, &c[4].node), 0);
	ck_assert_int_eq(conntab_remove(t, &c[2].node), 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.buckets, 0);
	ck_assert_uint_eq(st.max_depth, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
}
END_TEST

#ifdef HAVE_MALLOC_FAIL
static int count_fn(struct conntab_node *n, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

/* -ENOMEM leaves the table as it was; a remove without memory still works. */
START_TEST(trie_nomem)
{
	struct conntab *t = mk(CONNTAB_TRIE, 0);
	struct conn *c = conns_alloc(4);
	struct conntab_key k[4];
	struct conntab_stats st;
	size_t i, seen = 0;

	for (i = 0; i < 4; i++)
		conntab_key_v4(&k[i], IPPROTO_TCP, ip4(10, 0, 0, 1), htons(80),
			       ip4(192, 0, 2, (unsigned int)i), htons(1000));
	ck_assert_int_eq(conntab_insert(t, &c[0].node, &k[0]), 0);
	/* A split needs a node. */
	fail_next_malloc();
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k[1]), -ENOMEM);
	ck_assert_int_eq(__atomic_load_n(&malloc_fail_in, __ATOMIC_SEQ_CST), 0);
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k[1]), 0);
	/* So does growing a node (copy-on-write). */
	fail_next_malloc();
	ck_assert_int_eq(conntab_insert(t, &c[2].node, &k[2]), -ENOMEM);
	rcu_read_lock();
	ck_assert_ptr_eq(conntab_lookup(t, &k[0]), &c[0].node);
	ck_assert_ptr_eq(conntab_lookup(t, &k[1]), &c[1].node);
	ck_assert_ptr_null(conntab_lookup(t, &k[2]));
	rcu_read_unlock();
	ck_assert_int_eq(conntab_insert(t, &c[2].node, &k[2]), 0);
	ck_assert_int_eq(conntab_insert(t, &c[3].node, &k[3]), 0);
	/* Shrinking a 4-child node without memory leaves a hole. */
	fail_next_malloc();
	ck_assert_int_eq(conntab_remove(t, &c[1].node), 0);
	ck_assert_int_eq(__atomic_load_n(&malloc_fail_in, __ATOMIC_SEQ_CST), 0);
	rcu_read_lock();
	ck_assert_ptr_null(conntab_lookup(t, &k[1]));
	for (i = 0; i < 4; i += 2)
		ck_assert_ptr_eq(conntab_lookup(t, &k[i]), &c[i].node);
	ck_assert_int_eq(conntab_walk(t, count_fn, &seen), 0);
	rcu_read_unlock();
	ck_assert_uint_eq(seen, 3);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 3);
	ck_assert_uint_eq(st.max_depth, 2);
	/* The hole is reused. */
	ck_assert_int_eq(conntab_insert(t, &c[1].node, &k[1]), 0);
	rcu_read_lock();
	for (i = 0; i < 4; i++)
		ck_assert_ptr_eq(conntab_lookup(t, &k[i]), &c[i].node);
	rcu_read_unlock();
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.buckets, 0);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
}
END_TEST

static int own_fn(struct conntab_node *n, void *arg)
{
	const struct conn *c = arg;

	/* Only the test's own nodes: never memory of the table. */
	REQUIRE(n >= &c[0].node && n <= &c[63].node);
	return 0;
}

/*
 * Keys the trie can never hold (zero-initialised, family 0, unknown
 * families) find nothing, also after removals whose reshaping found no
 * memory.
 */
START_TEST(trie_malformed_after_nomem)
{
	struct conntab *t = mk(CONNTAB_TRIE, 0);
	struct conn *c = conns_alloc(64);
	struct conntab_key k[64], bad[4];
	struct conntab_node *out[4];
	struct conntab_cursor cur = { { 0 } };
	size_t i, seen = 0;

	for (i = 0; i < 64; i++) {
		conntab_key_v4(&k[i], IPPROTO_TCP, ip4(10, 0, 0, 1), htons(80),
			       ip4(192, 0, 2, (unsigned int)i * 4),
			       htons((uint16_t)i));
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k[i]), 0);
	}
	/* Every removal's reshaping (collapse, compaction) without memory. */
	for (i = 0; i < 64; i++) {
		if (i % 8 == 3)
			continue;
		fail_next_malloc();
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		__atomic_store_n(&malloc_fail_in, 0, __ATOMIC_SEQ_CST);
	}
	memset(bad, 0, sizeof(bad));			/* all zero */
	bad[1] = k[3];
	bad[1].family = 0;				/* family 0 */
	bad[2] = k[3];
	bad[2].family = 99;				/* unknown */
	bad[3] = k[3];
	bad[3].family = AF_INET6 + AF_INET;		/* unknown */
	rcu_read_lock();
	for (i = 0; i < 4; i++)
		ck_assert_ptr_null(conntab_lookup(t, &bad[i]));
	ck_assert_uint_eq(conntab_lookup_batch(t, bad, out, 4), 0);
	for (i = 0; i < 4; i++)
		ck_assert_ptr_null(out[i]);
	for (i = 3; i < 64; i += 8)
		ck_assert_ptr_eq(conntab_lookup(t, &k[i]), &c[i].node);
	ck_assert_int_eq(conntab_walk(t, own_fn, c), 0);
	ck_assert_int_eq(conntab_walk(t, count_fn, &seen), 0);
	ck_assert_uint_eq(seen, 8);
	seen = 0;
	ck_assert_int_eq(conntab_scan(t, &cur, 64, count_fn, &seen), 1);
	ck_assert_uint_eq(seen, 8);
	rcu_read_unlock();
	for (i = 3; i < 64; i += 8)
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	rcu_read_lock();
	ck_assert_ptr_null(conntab_lookup(t, &bad[0]));
	rcu_read_unlock();
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(c);
}
END_TEST
#endif

/*
 * IPv6 keys under a dense node over zones: the node starts before the
 * family byte, so the keys below it may run to 320 bits. Zones g << 13 |
 * j (8 groups of 5, on both sides of a byte's top bits) make the root a
 * dense node over the zone bytes; each zone holds two IPv6 keys of one
 * local and one remote address that differ only in the remote address's
 * fourth byte, past bit 128. Emptying zones makes that node halve, and
 * a halving that took the keys for 128 bits long met two keys "equal"
 * to the end and built a window of negative width (endless recursion,
 * or a node with a wild window). Every key must stay found, and the
 * emptied table hold no node.
 */
static void v6_zone_key(struct conntab_key *k, unsigned int g, unsigned int j,
			unsigned int h)
{
	struct in6_addr la, ra;

	memset(&la, 0, sizeof(la));
	memset(&ra, 0, sizeof(ra));
	la.s6_addr[0] = ra.s6_addr[0] = 0x20;
	la.s6_addr[1] = ra.s6_addr[1] = 0x01;
	la.s6_addr[15] = 1;
	ra.s6_addr[15] = 9;
	ra.s6_addr[3] = h ? 0x80 : 0;
	conntab_key_v6(k, IPPROTO_TCP, &la, htons(443), &ra, htons(5555));
	k->zone = (uint16_t)(g << 13 | j);
}

START_TEST(v6_under_zone_node)
{
	static struct conntab_node nd[8][5][2];
	struct conntab_config cfg = { .backend = CONNTAB_TRIE };
	struct conntab *t = conntab_create(&cfg);
	bool present[8][5];
	struct conntab_stats st;
	struct conntab_key k;
	unsigned int g, j, h;

	ck_assert_ptr_nonnull(t);
	for (g = 0; g < 8; g++)
		for (j = 0; j < 5; j++) {
			for (h = 0; h < 2; h++) {
				v6_zone_key(&k, g, j, h);
				conntab_node_init(&nd[g][j][h]);
				ck_assert_int_eq(conntab_insert(t, &nd[g][j][h],
								&k), 0);
			}
			present[g][j] = true;
		}
	for (j = 1; j < 5; j++) {	/* group 0 down to one zone */
		for (h = 0; h < 2; h++)
			ck_assert_int_eq(conntab_remove(t, &nd[0][j][h]), 0);
		present[0][j] = false;
	}
	for (g = 1; g < 8; g++) {	/* then one zone of each group */
		for (h = 0; h < 2; h++)
			ck_assert_int_eq(conntab_remove(t, &nd[g][4][h]), 0);
		present[g][4] = false;
	}
	rcu_read_lock();
	for (g = 0; g < 8; g++)
		for (j = 0; j < 5; j++)
			for (h = 0; h < 2; h++) {
				v6_zone_key(&k, g, j, h);
				ck_assert_ptr_eq(conntab_lookup(t, &k),
						 present[g][j] ?
						 &nd[g][j][h] : NULL);
			}
	rcu_read_unlock();
	conntab_stats(t, &st);
	ck_assert_uint_le(st.buckets, st.entries - 1);
	for (g = 0; g < 8; g++)
		for (j = 0; j < 5; j++)
			for (h = 0; present[g][j] && h < 2; h++)
				ck_assert_int_eq(conntab_remove(t, &nd[g][j][h]),
						 0);
	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.buckets, 0);
	conntab_destroy(t, NULL);
}
END_TEST

static Suite *trie_suite(void)
{
	Suite *s = suite_create("trie");
	TCase *tc = tcase_create("trie");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, trie_basics);
	tcase_add_test(tc, sparse_find);
#ifdef HAVE_MALLOC_FAIL
	tcase_add_test(tc, trie_nomem);
	tcase_add_test(tc, trie_malformed_after_nomem);
#endif
	tcase_add_test(tc, adv_sequential);
	tcase_add_test(tc, adv_one_endpoint_ports);
	tcase_add_test(tc, adv_last_bit);
	tcase_add_test(tc, adv_v6_binary_deep);
	tcase_add_test(tc, adv_comb_depth);
	tcase_add_test(tc, adv_mixed);
	tcase_add_test(tc, v6_under_zone_node);
	tcase_add_test(tc, walk_in_key_order);
	tcase_add_test(tc, insert_outside_skipped_bits);
	tcase_add_test(tc, prefix_every_backend);
	suite_add_tcase(s, tc);
	/* Threads: CK_RUN_CASE=trie-concurrent (make check-tsan). */
	tc = tcase_create("trie-concurrent");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, concurrent_no_miss, 0, 2);
	tcase_add_test(tc, concurrent_same_value);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(trie_suite());
	int failed;

	rcu_register_thread();
	/* No fork: the readers' registration and call_rcu state stay ours. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rcu_unregister_thread();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
