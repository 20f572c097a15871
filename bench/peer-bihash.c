/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peer: VPP's bounded-index extensible hash, clib_bihash_16_8, the table
 * behind VPP's NAT44-ED sessions, as VPP uses it; built only with
 * --with-vppinfra=DIR (doc/performance.md, "bihash as a peer").
 *
 *   keys     IPv4 runs: 16 bytes, as NAT44-ED packs its flow key: the
 *            key's first word (zone, protocol, family, ports) and the two
 *            addresses. Runs with IPv6 keys (--v6, --keys, --pcap):
 *            clib_bihash_40_8, the 40-byte key of the same words with
 *            16-byte addresses (a family's unused bytes zero).
 *   value    the object's address; the object keeps its key for remove.
 *   hash     bihash's own: CRC32C of the key (the SSE4.2 instruction)
 *            where the peer is built for x86-64-v2 or v3, else its xxhash
 *            fold. Unkeyed, unlike every other table of the run's.
 *   buckets  N / 2, a power of two: 2^19 for 1M, as NAT44-ED sizes its
 *            flow table (nat_calc_bihash_buckets(), two flows a session).
 *   build    the template compiled into this file, as VPP's plugins
 *            instantiate it, with -O3 and the -march of VPP's multiarch
 *            variant for this CPU (BIHASH_CFLAGS, configure.ac). VPP
 *            compiles its non-inline half (add_del) in libvnet at its
 *            default x86-64-v2; here both halves share the flags.
 *   memory   bihash allocates from vppinfra's heap (clib_mem_init(),
 *            once, before the first table; transparent huge pages); a
 *            table's bytes are its allocation chunks, the bucket array
 *            among them.
 *
 * Readers take no lock: bihash's readers retry when the bucket word they
 * read changed under them (a writer holds its lock bit or moved its
 * pages), and freed pages stay in the table's heap chunks, so a stale
 * reader reads memory that is still mapped. Writers lock the bucket bit
 * and the table's allocation lock: several writers are safe (BI_MT), as
 * VPP's workers share one flow table.
 *
 * An insert adds with is_add = 2, which fails on a present key without
 * overwriting it (-EEXIST, as every other table here); the add walks the
 * same page for the key either way, so it costs what VPP's overwriting
 * add costs.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * The project's headers before VPP's: vppinfra defines always_inline as
 * a macro, which would break their __attribute__((always_inline)).
 */
#include "impl.h"

#include <vppinfra/mem.h>

#include <vppinfra/bihash_16_8.h>
#include <vppinfra/bihash_template.c>

#include <vppinfra/bihash_40_8.h>
#include <vppinfra/bihash_template.c>

/* Keys of a burst hashed and prefetched before the first search. */
#define BH_BURST	64

/*
 * The user's word first, in the line the value leads to, as rte_hash's
 * (peer-rte.c): the key copy, for remove, after it.
 */
struct bh_obj {
	uintptr_t user;		/* the user's word (impl.h) */
	struct conntab_key key;	/* the user's copy, for remove */
	uint8_t state;		/* enum conntab_state */
};

struct bh_tab {
	bool wide;		/* 40_8: a run with IPv6 keys */
	clib_bihash_16_8_t h16;
	clib_bihash_40_8_t h40;
};

static pthread_once_t bh_once = PTHREAD_ONCE_INIT;
static bool bh_heap;

/*
 * vppinfra's heap, which every bihash of the process allocates from: a
 * reservation of address space that pages in as the tables grow, sized
 * for the largest N of the run with room for the tables of a size that
 * live at once (pair: two of 2N) and for fragmentation.
 */
static void bh_heap_init(void)
{
	size_t i, n = 1u << 20;
	void *heap;
	uword sz;

	for (i = 0; i < b_opts.nn; i++)
		if (n < b_opts.n[i])
			n = b_opts.n[i];
	sz = (uword)n * 2048;
	if (sz < (1ull << 30))
		sz = 1ull << 30;
	heap = clib_mem_init(0, sz);
	bh_heap = heap != NULL;
	/*
	 * In production VPP's heap is on hugepages; here, as conntab's large
	 * arrays (lib/mem.c) and rte_hash's heap (peer-rte.c), it is asked
	 * for transparent ones, so that no table pays TLB misses the others
	 * do not.
	 */
	if (heap)
		(void)madvise(clib_mem_get_heap_base(heap),
			      clib_mem_get_heap_size(heap), MADV_HUGEPAGE);
}

/* The NAT44-ED-style key of an IPv4 4-tuple. */
static inline __attribute__((__always_inline__)) void
bh_kv16(clib_bihash_kv_16_8_t *kv, const struct conntab_key *k)
{
	kv->key[0] = ct_key_word0(k);
	kv->key[1] = (u64)k->raddr.v4.s_addr << 32 | k->laddr.v4.s_addr;
}

/* The 40-byte key: the first word and the addresses, v4's zero-padded. */
static inline __attribute__((__always_inline__)) void
bh_kv40(clib_bihash_kv_40_8_t *kv, const struct conntab_key *k)
{
	kv->key[0] = ct_key_word0(k);
	if (k->family == AF_INET) {
		kv->key[1] = k->laddr.v4.s_addr;
		kv->key[2] = 0;
		kv->key[3] = k->raddr.v4.s_addr;
		kv->key[4] = 0;
		return;
	}
	memcpy(&kv->key[1], k->laddr.bytes, 16);
	memcpy(&kv->key[3], k->raddr.bytes, 16);
}

static void *bh_create(const struct bench_impl *im, size_t expected,
		       const uint8_t *secret)
{
	struct bh_tab *t;
	u32 nb = 1;

	pthread_once(&bh_once, bh_heap_init);
	if (!bh_heap)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->wide = b_opts.v6 || b_opts.pcap;
	/* Unsized (grow): bihash cannot grow its bucket array; 1K. */
	while (nb < (expected ? expected / 2 : 1024))
		nb <<= 1;
	if (t->wide)
		clib_bihash_init_40_8(&t->h40, "conntab-bench", nb, 0);
	else
		clib_bihash_init_16_8(&t->h16, "conntab-bench", nb, 0);
	return t;
}

static void bh_destroy(void *tp)
{
	struct bh_tab *t = tp;

	if (t->wide)
		clib_bihash_free_40_8(&t->h40);
	else
		clib_bihash_free_16_8(&t->h16);
	free(t);
}

static int bh_insert(void *tp, void *obj, const struct conntab_key *k)
{
	struct bh_tab *t = tp;
	struct bh_obj *o = obj;
	int rv;

	o->key = *k;
	o->state = CONNTAB_ESTABLISHED;
	if (!t->wide) {
		clib_bihash_kv_16_8_t kv;

		bh_kv16(&kv, k);
		kv.value = (u64)(uintptr_t)o;
		rv = clib_bihash_add_del_16_8(&t->h16, &kv, 2);
	} else {
		clib_bihash_kv_40_8_t kv;

		bh_kv40(&kv, k);
		kv.value = (u64)(uintptr_t)o;
		rv = clib_bihash_add_del_40_8(&t->h40, &kv, 2);
	}
	/* -2: present; -1: no memory for a page. */
	return rv == 0 ? 0 : rv == -2 ? -EEXIST : -ENOMEM;
}

static void *bh_lookup(void *tp, const struct conntab_key *k)
{
	struct bh_tab *t = tp;

	if (__builtin_expect(!t->wide, 1)) {
		clib_bihash_kv_16_8_t kv;

		bh_kv16(&kv, k);
		if (clib_bihash_search_inline_16_8(&t->h16, &kv))
			return NULL;
		return (void *)(uintptr_t)kv.value;
	} else {
		clib_bihash_kv_40_8_t kv;

		bh_kv40(&kv, k);
		if (clib_bihash_search_inline_40_8(&t->h40, &kv))
			return NULL;
		return (void *)(uintptr_t)kv.value;
	}
}

/*
 * A burst as a VPP graph node looks up its frame: every key's hash first,
 * with a prefetch of its bucket (the 16_8 bucket holds its first page of
 * keys: two lines), then the searches with the hashes; 40_8's pages are
 * apart from the bucket, so a second pass prefetches them once the
 * buckets are in.
 */
static size_t bh_batch16(struct bh_tab *t, const struct conntab_key *k,
			 void **out, size_t n)
{
	clib_bihash_kv_16_8_t kv[BH_BURST];
	u64 hash[BH_BURST];
	size_t i, found = 0;

	for (i = 0; i < n; i++) {
		bh_kv16(&kv[i], &k[i]);
		hash[i] = clib_bihash_hash_16_8(&kv[i]);
		clib_bihash_prefetch_bucket_16_8(&t->h16, hash[i]);
	}
	for (i = 0; i < n; i++) {
		if (clib_bihash_search_inline_with_hash_16_8(&t->h16, hash[i],
							      &kv[i])) {
			out[i] = NULL;
			continue;
		}
		out[i] = (void *)(uintptr_t)kv[i].value;
		found++;
	}
	return found;
}

static size_t bh_batch40(struct bh_tab *t, const struct conntab_key *k,
			 void **out, size_t n)
{
	clib_bihash_kv_40_8_t kv[BH_BURST];
	u64 hash[BH_BURST];
	size_t i, found = 0;

	for (i = 0; i < n; i++) {
		bh_kv40(&kv[i], &k[i]);
		hash[i] = clib_bihash_hash_40_8(&kv[i]);
		clib_bihash_prefetch_bucket_40_8(&t->h40, hash[i]);
	}
	for (i = 0; i < n; i++)
		clib_bihash_prefetch_data_40_8(&t->h40, hash[i]);
	for (i = 0; i < n; i++) {
		if (clib_bihash_search_inline_with_hash_40_8(&t->h40, hash[i],
							      &kv[i])) {
			out[i] = NULL;
			continue;
		}
		out[i] = (void *)(uintptr_t)kv[i].value;
		found++;
	}
	return found;
}

static size_t bh_batch(void *tp, const struct conntab_key *k, void **out,
		       size_t n)
{
	struct bh_tab *t = tp;
	size_t done, cnt, found = 0;

	for (done = 0; done < n; done += cnt) {
		cnt = n - done < BH_BURST ? n - done : BH_BURST;
		found += t->wide ? bh_batch40(t, k + done, out + done, cnt) :
				   bh_batch16(t, k + done, out + done, cnt);
	}
	return found;
}

static int bh_remove(void *tp, void *obj)
{
	struct bh_tab *t = tp;
	struct bh_obj *o = obj;
	int rv;

	if (!t->wide) {
		clib_bihash_kv_16_8_t kv;

		bh_kv16(&kv, &o->key);
		rv = clib_bihash_add_del_16_8(&t->h16, &kv, 0);
	} else {
		clib_bihash_kv_40_8_t kv;

		bh_kv40(&kv, &o->key);
		rv = clib_bihash_add_del_40_8(&t->h40, &kv, 0);
	}
	return rv ? -ENOENT : 0;
}

/*
 * Point @nw's key at @nw when it maps to @want (or to any TIME_WAIT
 * object for NULL): an add on a present key stores the new value in one
 * 8-byte write under the bucket lock, which readers see whole. Returns
 * the replaced object. The check and the store are two steps: the
 * timewait workload, whose one writer is the only caller, needs no more.
 */
static struct bh_obj *bh_swap(struct bh_tab *t, struct bh_obj *want,
			      struct bh_obj *nw)
{
	struct bh_obj *old;
	int rv;

	old = bh_lookup(t, &nw->key);
	if (!old || (want && old != want) ||
	    (!want && old->state != CONNTAB_TIMEWAIT))
		return NULL;
	if (!t->wide) {
		clib_bihash_kv_16_8_t kv;

		bh_kv16(&kv, &nw->key);
		kv.value = (u64)(uintptr_t)nw;
		rv = clib_bihash_add_del_16_8(&t->h16, &kv, 1);
	} else {
		clib_bihash_kv_40_8_t kv;

		bh_kv40(&kv, &nw->key);
		kv.value = (u64)(uintptr_t)nw;
		rv = clib_bihash_add_del_40_8(&t->h40, &kv, 1);
	}
	return rv ? NULL : old;
}

static int bh_timewait(void *tp, void *est, void *tw)
{
	struct bh_obj *e = est, *w = tw;

	w->key = e->key;
	w->state = CONNTAB_TIMEWAIT;
	return bh_swap(tp, e, w) ? 0 : -ENOENT;
}

static int bh_recycle(void *tp, void *nw, const struct conntab_key *k,
		      void **old)
{
	struct bh_obj *n = nw;

	n->key = *k;
	n->state = CONNTAB_ESTABLISHED;
	*old = bh_swap(tp, NULL, n);
	return *old ? 0 : -EEXIST;
}

/* The heap chunks the table allocated: buckets, pages, their headers. */
static long bh_memory(void *tp)
{
	struct bh_tab *t = tp;
	long bytes = 0;

	if (!t->wide) {
		clib_bihash_alloc_chunk_16_8_t *c;

		for (c = t->h16.chunks; c; c = c->next)
			bytes += (long)(c->size + sizeof(*c));
	} else {
		clib_bihash_alloc_chunk_40_8_t *c;

		for (c = t->h40.chunks; c; c = c->next)
			bytes += (long)(c->size + sizeof(*c));
	}
	return bytes;
}

const struct bench_impl b_impl_bihash = {
	.name = "bihash",
	.flags = BI_MT,
	.obj_size = sizeof(struct bh_obj),
	.user_off = offsetof(struct bh_obj, user),
	.create = bh_create, .destroy = bh_destroy,
	.insert = bh_insert, .lookup = bh_lookup, .batch = bh_batch,
	.remove = bh_remove, .timewait = bh_timewait,
	.recycle = bh_recycle, .memory = bh_memory,
};
