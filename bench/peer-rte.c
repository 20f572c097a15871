/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peers: DPDK's rte_hash, the table packet pipelines already ship
 * (cuckoo hashing, 16-bit signatures in 64-byte buckets of 8, keys in a
 * separate key store, bulk lookup of up to 64 keys), as a DPDK user sets
 * it up for a connection table read by other cores:
 *
 *   rte_hash     RW_CONCURRENCY_LF | EXT_TABLE, one writer: the per-core
 *                table of a run-to-completion loop. No lock of ours, so
 *                it is not BI_MT: the workloads with several writers skip
 *                it.
 *   rte_hash-mw  the same with MULTI_WRITER_ADD, the fair match for
 *                conntab's multi-writer tables (BI_MT: churn, writers).
 *
 * Keys: in a run of IPv4 keys the 16-byte packed 5-tuple a DPDK user
 * builds from the headers (addresses, ports, zone, protocol); in a run
 * with IPv6 keys (--v6, --keys, --pcap) the struct conntab_key itself,
 * 40 bytes, since key_len is fixed per table. Building the packed key
 * from the conntab_key is charged to rte_hash, as it is to its users.
 * Data: a pointer to the user's object, which keeps its key for remove.
 * Hash: CRC32-C (rte_hash_crc, the SSE4.2 instruction), seeded with the
 * run's secret; not a keyed PRF, unlike conntab's (the point).
 *
 * In LF mode rte_hash does not free a deleted key's slot: the user does,
 * with rte_hash_free_key_with_position(), once no reader can still see
 * it. Removes collect positions per thread and hand every B_RTE_DEFER of
 * them to call_rcu() of the run's flavor, whose read-side sections every
 * reader here holds; an insert that finds the store full reclaims first,
 * as rte_hash's own RCU mode does.
 *
 * A MULTI_WRITER_ADD table keeps free slots per lcore, indexed by
 * rte_lcore_id(): every thread that inserts or frees into one is
 * registered as an lcore on its first write (rte_thread_register) and
 * unregistered when it exits. Readers need no registration in LF mode.
 *
 * The EAL is initialised once, before the first table, only when an rte
 * peer is selected: no hugepages, no PCI, no telemetry, one lcore, a
 * runtime directory of its own per process (parallel runs of make check
 * do not collide) and a heap fitted to the run's largest N.
 */
#define _GNU_SOURCE	/* sched_getaffinity: the EAL pins the caller */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_jhash.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include "impl.h"

/*
 * Entries beyond the N asked for: the churn writer's keys in flight and
 * the slots of its removes still waiting for a grace period. rte_hash
 * rounds its buckets up to a power of two of entries anyway.
 */
#define B_RTE_SLACK	16384
#define B_RTE_DEFER	64	/* removed positions per call_rcu() */

/* The 16-byte key of an IPv4 run. */
struct rte_key4 {
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	uint16_t zone;
	uint8_t proto, pad;
};

/*
 * The user's word comes first, in the line rte_hash's data pointer leads
 * to, as the others' follows their node: the key copy, whose port bits a
 * lookup-dep chain would read as a result, comes after it.
 */
struct rte_obj {
	uintptr_t user;		/* the user's word (impl.h) */
	struct conntab_key key;	/* the user's copy, for remove */
	uint8_t state;		/* enum conntab_state */
};

struct rte_tab {
	struct rte_hash *h;
	uint32_t key_len;	/* 16, or 40: the conntab_key itself */
	long bytes;		/* rte_malloc heap the table holds */
};

/* Positions a thread removed from one table, not yet freed. */
struct rte_defer {
	struct rcu_head rcu;
	struct rte_tab *t;
	unsigned int n;
	int32_t pos[B_RTE_DEFER];
};

static void *rte_create(const struct bench_impl *im, size_t expected,
			const uint8_t *secret);

static bool rte_up;
static char rte_rundir[256];
static pthread_key_t rte_exit_key;
static __thread struct rte_defer *rte_pending;
static __thread bool rte_registered;

/* The packed key of @k; false when it does not fit (an IPv6 key). */
static inline __attribute__((always_inline)) const void *
rte_key(const struct rte_tab *t, const struct conntab_key *k,
	struct rte_key4 *buf)
{
	if (t->key_len != sizeof(*buf))
		return k;
	buf->laddr = k->laddr.v4.s_addr;
	buf->raddr = k->raddr.v4.s_addr;
	buf->lport = k->lport;
	buf->rport = k->rport;
	buf->zone = k->zone;
	buf->proto = k->proto;
	buf->pad = 0;
	return buf;
}

static void rte_defer_free(struct rcu_head *head)
{
	struct rte_defer *d = caa_container_of(head, struct rte_defer, rcu);
	unsigned int i;

	b_rte_thread_register();
	for (i = 0; i < d->n; i++)
		rte_hash_free_key_with_position(d->t->h, d->pos[i]);
	free(d);
}

/* Hand this thread's removed positions to a grace period. */
static void rte_flush(void)
{
	struct rte_defer *d = rte_pending;

	if (!d)
		return;
	rte_pending = NULL;
	call_rcu(&d->rcu, rte_defer_free);
}

static void rte_thread_exit(void *arg)
{
	rte_flush();
	if (rte_registered) {
		rte_thread_unregister();
		rte_registered = false;
	}
}

void b_rte_thread_register(void)
{
	if (rte_lcore_id() != LCORE_ID_ANY)
		return;
	if (rte_thread_register()) {
		fprintf(stderr, "conntab-bench: rte_thread_register: %s\n",
			rte_strerror(rte_errno));
		exit(1);
	}
	rte_registered = true;
	/* Any non-NULL value: the destructor then runs at thread exit. */
	pthread_setspecific(rte_exit_key, &rte_registered);
}

/* Bytes of one table of @n entries with @key_len keys, with margin. */
static size_t rte_table_bytes(size_t n, size_t key_len)
{
	size_t e = n + B_RTE_SLACK, p2 = 1;

	while (p2 < e)
		p2 <<= 1;
	/* Buckets and extendable buckets: 2 x 64 B per 8 entries; rings. */
	return p2 * 32 + e * (key_len + 8 + 16 + 16);
}

/*
 * rte_hash runs on hugepages in production; without them here, the
 * EAL's heap is asked for transparent ones, as conntab's large arrays
 * are (lib/mem.c), so that neither pays TLB misses the other does not.
 */
static int rte_thp(const struct rte_memseg_list *msl, void *arg)
{
	if (msl->base_va && msl->len)
		(void)madvise(msl->base_va, msl->len, MADV_HUGEPAGE);
	return 0;
}

int b_rte_init(const struct bench_impl **im, size_t ni)
{
	char mem[32], prefix[64];
	char *argv[16];
	int argc = 0;
	cpu_set_t cpus;
	size_t i, s, need = 0, tables = 0;

	for (i = 0; i < ni; i++)
		tables += im[i]->create == rte_create;
	if (!tables || rte_up)
		return 0;
	/* The rte peers' tables of a size live at once, each of the max N. */
	for (s = 0; s < b_opts.nn; s++)
		if (need < b_opts.n[s])
			need = b_opts.n[s];
	need = tables * rte_table_bytes(need ? need : 65536,
					sizeof(struct conntab_key));
	snprintf(mem, sizeof(mem), "%zu", (need >> 20) + 64);
	snprintf(prefix, sizeof(prefix), "--file-prefix=conntab-bench-%ld",
		 (long)getpid());
	argv[argc++] = "conntab-bench";
	argv[argc++] = "--no-huge";
	argv[argc++] = "--no-pci";
	argv[argc++] = "--no-shconf";
	argv[argc++] = "--no-telemetry";
	argv[argc++] = prefix;
	argv[argc++] = "-l";
	argv[argc++] = "0";
	argv[argc++] = "-m";
	argv[argc++] = mem;
	argv[argc++] = "--log-level=error";
	argv[argc] = NULL;
	/* The EAL pins the calling thread to lcore 0's CPU: undo that. */
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		CPU_ZERO(&cpus);
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "conntab-bench: rte_eal_init: %s\n",
			rte_strerror(rte_errno));
		return -1;
	}
	if (CPU_COUNT(&cpus))
		sched_setaffinity(0, sizeof(cpus), &cpus);
	rte_memseg_list_walk(rte_thp, NULL);
	snprintf(rte_rundir, sizeof(rte_rundir), "%s",
		 rte_eal_get_runtime_dir());
	pthread_key_create(&rte_exit_key, rte_thread_exit);
	rte_up = true;
	return 0;
}

void b_rte_fini(void)
{
	if (!rte_up)
		return;
	rte_flush();
	rcu_barrier();
	rte_eal_cleanup();
	/* The EAL leaves its (empty) runtime directory behind. */
	if (rte_rundir[0])
		rmdir(rte_rundir);
	rte_up = false;
}

static uint32_t rte_jhash_cb(const void *key, uint32_t len, uint32_t seed)
{
	return rte_jhash(key, len, seed);
}

static void *rte_create(const struct bench_impl *im, size_t expected,
			const uint8_t *secret)
{
	static unsigned int serial;
	struct rte_hash_parameters p = { 0 };
	struct rte_malloc_socket_stats s0, s1;
	struct rte_tab *t = calloc(1, sizeof(*t));
	char name[RTE_HASH_NAMESIZE];
	uint32_t seed;

	if (!t || !rte_up) {
		free(t);
		return NULL;
	}
	t->key_len = b_opts.v6 || b_opts.pcap ? sizeof(struct conntab_key)
					      : sizeof(struct rte_key4);
	memcpy(&seed, secret, sizeof(seed));
	snprintf(name, sizeof(name), "ctb%u", serial++);
	p.name = name;
	p.entries = (uint32_t)(expected + B_RTE_SLACK);
	p.key_len = t->key_len;
	p.hash_func = im->backend ? rte_jhash_cb : rte_hash_crc;
	p.hash_func_init_val = seed;
	p.socket_id = 0;
	p.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
		       RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
	if (im->flags & BI_MT)
		p.extra_flag |= RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD;
	rte_malloc_get_socket_stats(0, &s0);
	t->h = rte_hash_create(&p);
	if (!t->h) {
		fprintf(stderr, "conntab-bench: rte_hash_create: %s\n",
			rte_strerror(rte_errno));
		free(t);
		return NULL;
	}
	/* Everything is allocated here: EXT_TABLE preallocates too. */
	rte_malloc_get_socket_stats(0, &s1);
	t->bytes = (long)(s1.heap_allocsz_bytes - s0.heap_allocsz_bytes);
	return t;
}

static void rte_destroy(void *tp)
{
	struct rte_tab *t = tp;

	/* No deferred free may reach the table after it is gone. */
	if (rte_pending && rte_pending->t == t)
		rte_flush();
	rcu_barrier();
	rte_hash_free(t->h);
	free(t);
}

static int rte_insert(void *tp, void *obj, const struct conntab_key *k)
{
	struct rte_tab *t = tp;
	struct rte_obj *o = obj;
	struct rte_key4 buf;
	const void *key;
	int err;

	b_rte_thread_register();
	o->key = *k;
	o->state = CONNTAB_ESTABLISHED;
	/*
	 * A present key would get @o as its data (rte_hash's semantics, no
	 * -EEXIST); the runs never insert one, and a lookup first would
	 * charge rte_hash a second search that its users do not pay.
	 */
	key = rte_key(t, k, &buf);
	err = rte_hash_add_key_data(t->h, key, o);
	if (err == -ENOSPC) {
		/* Slots still waiting for a grace period: wait for them. */
		rte_flush();
		rcu_barrier();
		err = rte_hash_add_key_data(t->h, key, o);
	}
	return err;
}

static inline __attribute__((always_inline)) void *
rte_find(struct rte_tab *t, const struct conntab_key *k)
{
	struct rte_key4 buf;
	void *data;

	if (rte_hash_lookup_data(t->h, rte_key(t, k, &buf), &data) < 0)
		return NULL;
	return data;
}

static void *rte_lookup(void *tp, const struct conntab_key *k)
{
	return rte_find(tp, k);
}

/* rte_hash_lookup_bulk_data, at most RTE_HASH_LOOKUP_BULK_MAX a call. */
static size_t rte_batch(void *tp, const struct conntab_key *k, void **out,
			size_t n)
{
	struct rte_tab *t = tp;
	struct rte_key4 buf[RTE_HASH_LOOKUP_BULK_MAX];
	const void *keys[RTE_HASH_LOOKUP_BULK_MAX];
	size_t done, i, cnt, found = 0;
	uint64_t hits;

	for (done = 0; done < n; done += cnt) {
		cnt = n - done < RTE_HASH_LOOKUP_BULK_MAX ?
		      n - done : RTE_HASH_LOOKUP_BULK_MAX;
		for (i = 0; i < cnt; i++)
			keys[i] = rte_key(t, &k[done + i], &buf[i]);
		found += (size_t)rte_hash_lookup_bulk_data(t->h, keys,
				(uint32_t)cnt, &hits, out + done);
		/* Misses leave their slot as it was: NULL, as conntab's. */
		for (i = 0; i < cnt; i++)
			if (!(hits >> i & 1))
				out[done + i] = NULL;
	}
	return found;
}

static int rte_remove(void *tp, void *obj)
{
	struct rte_tab *t = tp;
	struct rte_obj *o = obj;
	struct rte_key4 buf;
	struct rte_defer *d;
	int32_t pos;

	pos = rte_hash_del_key(t->h, rte_key(t, &o->key, &buf));
	if (pos < 0)
		return pos;
	d = rte_pending;
	if (d && d->t != t) {
		rte_flush();
		d = NULL;
	}
	if (!d) {
		d = malloc(sizeof(*d));
		if (!d)
			abort();	/* cannot free it safely, cannot keep it */
		d->t = t;
		d->n = 0;
		rte_pending = d;
		/* Flushed at this thread's exit, if it never inserted. */
		pthread_setspecific(rte_exit_key, &rte_registered);
	}
	d->pos[d->n++] = pos;
	if (d->n == B_RTE_DEFER)
		rte_flush();
	return 0;
}

/*
 * Point @nw's key at @nw when it holds @want (or any TIME_WAIT object
 * for NULL): rte_hash_add_key_data on a present key swaps its data in
 * one store that LF readers see whole. Returns the replaced object.
 */
static struct rte_obj *rte_swap(struct rte_tab *t, struct rte_obj *want,
				struct rte_obj *nw)
{
	struct rte_key4 buf;
	const void *key = rte_key(t, &nw->key, &buf);
	void *data;
	struct rte_obj *old;

	if (rte_hash_lookup_data(t->h, key, &data) < 0)
		return NULL;
	old = data;
	if ((want && old != want) ||
	    (!want && old->state != CONNTAB_TIMEWAIT))
		return NULL;
	return rte_hash_add_key_data(t->h, key, nw) ? NULL : old;
}

static int rte_timewait(void *tp, void *est, void *tw)
{
	struct rte_obj *e = est, *w = tw;

	b_rte_thread_register();
	w->key = e->key;
	w->state = CONNTAB_TIMEWAIT;
	return rte_swap(tp, e, w) ? 0 : -ENOENT;
}

static int rte_recycle(void *tp, void *nw, const struct conntab_key *k,
		       void **old)
{
	struct rte_obj *n = nw;

	b_rte_thread_register();
	n->key = *k;
	n->state = CONNTAB_ESTABLISHED;
	*old = rte_swap(tp, NULL, n);
	return *old ? 0 : -EEXIST;
}

static long rte_memory(void *tp)
{
	return ((struct rte_tab *)tp)->bytes;
}

/* backend: 0 CRC32, 1 jhash (rte_jhash, lookup3 as DPDK ships it). */
#define RTE_IMPL(nm, fl, jh) {						\
	.name = nm, .flags = (fl),					\
	.obj_size = sizeof(struct rte_obj), .backend = (jh),		\
	.user_off = offsetof(struct rte_obj, user),			\
	.create = rte_create, .destroy = rte_destroy,			\
	.insert = rte_insert, .lookup = rte_lookup, .batch = rte_batch,	\
	.remove = rte_remove, .timewait = rte_timewait,			\
	.recycle = rte_recycle, .memory = rte_memory,			\
}

const struct bench_impl b_impl_rte = RTE_IMPL("rte_hash", 0, 0);
const struct bench_impl b_impl_rte_mw = RTE_IMPL("rte_hash-mw", BI_MT, 0);
/* Only when --impl names it: a choice, not a default column. */
const struct bench_impl b_impl_rte_mw_jhash =
	RTE_IMPL("rte_hash-mw-jhash", BI_MT | BI_JHASH | BI_ASKED, 1);
