/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE: node allocation, the table's counters, and retirement of
 * unlinked nodes (call_rcu, in batches).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "trie.h"

static void ct_t_account(struct ct_trie *tr, long nodes, long bytes)
{
	struct ct_trie_count *c = ct_t_cnt(tr);

	__atomic_add_fetch(&c->nodes, nodes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->memory, bytes, __ATOMIC_RELAXED);
}

/*
 * Sparse capacities: the 8-byte head plus 2 bytes a value round up to 8,
 * so these classes (2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32)
 * waste at most one value slot; a node grows by about half
 * (ct_k_grow(), lib/trie/trie-write.c) and shrinks to its class. As a
 * table by live count, the least class that holds it: a growing
 * insert's search of the classes took ~40 instructions (a 1M fill,
 * callgrind: 9.6M in ct_k_capfor(), 238K grows).
 */
#define CT_K_CAPFOR {							\
	2, 2, 2, 3, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14, 16, 16,	\
	20, 20, 20, 20, 24, 24, 24, 24, 28, 28, 28, 28, 32, 32, 32, 32,	\
}
/* An entry for every count: a larger CT_T_KMAX would read zeros. */
_Static_assert(sizeof((const uint8_t[])CT_K_CAPFOR) == CT_T_KMAX + 1,
	       "ct_k_capfor_tab: one class for each live count 0..CT_T_KMAX");
const uint8_t ct_k_capfor_tab[CT_T_KMAX + 1] = CT_K_CAPFOR;

static size_t ct_t_size(const struct ct_tnode *x)
{
	return ct_t_isk(x) ? ct_k_size(x->cap) : ct_d_size(x->w);
}

struct ct_tnode *ct_k_alloc(struct ct_trie *tr, unsigned int cap,
			    unsigned int pos, unsigned int w)
{
	size_t sz = ct_k_size(cap);
	uint8_t *base = malloc(sz);
	struct ct_tnode *x;

	if (!base)
		return NULL;
	x = (struct ct_tnode *)(void *)(base + CT_T_HEAD);
	memset(x, 0, sz - CT_T_HEAD);
	x->kind = CT_T_K;
	x->cap = (uint8_t)cap;
	x->pos = (uint16_t)pos;
	x->w = (uint8_t)w;
	ct_t_account(tr, 1, (long)sz);
	return x;
}

struct ct_tnode *ct_d_alloc(struct ct_trie *tr, unsigned int pos,
			    unsigned int w, bool is_short)
{
	size_t sz = ct_d_size(w);
	uint8_t *base = ct_array_alloc(sz);	/* zeroed: every slot empty */
	struct ct_tnode *x;

	if (!base)
		return NULL;
	x = (struct ct_tnode *)(void *)(base + CT_T_HEAD);
	x->kind = CT_T_D | (is_short ? CT_T_SHORT : 0);
	x->pos = (uint16_t)pos;
	x->w = (uint8_t)w;
	ct_t_account(tr, 1, (long)sz);
	return x;
}

/* Free the memory of @x; its accounting was already taken off. */
static void ct_t_release(struct ct_tnode *x)
{
	if (ct_t_isk(x))
		free(ct_t_head(x));
	else
		ct_array_free(ct_t_head(x), ct_d_size(x->w));
}

/* Free a node no reader can reach (never published, or at destroy). */
void ct_t_free(struct ct_trie *tr, struct ct_tnode *x)
{
	ct_t_account(tr, -1, -(long)ct_t_size(x));
	ct_t_release(x);
}

/*
 * The call_rcu callback. It reads only the node's head (kind and width,
 * which no one changes after the node died), so it may run after the
 * table is destroyed.
 */
static void ct_t_free_rcu(struct rcu_head *rh)
{
	ct_t_release((struct ct_tnode *)(void *)((char *)rh + CT_T_HEAD));
}

/*
 * Retired nodes go to call_rcu in batches of CT_T_BATCH, through one
 * rcu_head allocated per batch: each call_rcu keeps liburcu's worker
 * running grace periods (each one a membarrier that interrupts every
 * running thread of the process), so one per copied node would cost
 * more than the copy. A node of CT_T_BIG bytes or more does not wait for
 * a batch. Without memory for a batch, each node goes on its own.
 */
#define CT_T_BATCH	64
#define CT_T_BIG	4096

struct ct_tbatch {
	struct rcu_head rh;
	struct rcu_head *list;
};

static void ct_t_free_list(struct rcu_head *rh)
{
	struct rcu_head *next;

	for (; rh; rh = next) {
		next = (struct rcu_head *)(void *)rh->next.next;
		ct_t_release((struct ct_tnode *)(void *)((char *)rh +
							  CT_T_HEAD));
	}
}

static void ct_t_free_batch(struct rcu_head *rh)
{
	struct ct_tbatch *b = caa_container_of(rh, struct ct_tbatch, rh);

	ct_t_free_list(b->list);
	free(b);
}

/*
 * Hand shard @c's retired nodes to call_rcu (on a thread the flavor
 * counts).
 */
static void ct_t_flush(struct ct_trie *tr, struct ct_trie_count *c)
{
	struct rcu_head *rh, *next;
	struct ct_tbatch *b;

	__atomic_store_n(&c->nretired, 0, __ATOMIC_RELAXED);
	rh = __atomic_exchange_n(&c->retired, NULL, __ATOMIC_SEQ_CST);
	if (!rh)
		return;
	b = malloc(sizeof(*b));
	if (b) {
		b->list = rh;
		ct_delay(CT_DP_TR_RETIRE_FLUSH);
		tr->base.flavor->update_call_rcu(&b->rh, ct_t_free_batch);
		return;
	}
	for (; rh; rh = next) {
		next = (struct rcu_head *)(void *)rh->next.next;
		tr->base.flavor->update_call_rcu(rh, ct_t_free_rcu);
	}
}

/*
 * Retire @x, which a writer has just unlinked (every slot that held it
 * now holds something else, under the locks that own those slots): no
 * writer reaches it any more, readers may still stand on it, so it is
 * freed after a grace period. Every thread that can reach a node holds
 * the RCU read lock (readers, writers, conntab_stats()), so the grace
 * period that follows the call_rcu of its batch covers them all: the
 * batch is handed over after the unlink, and the grace period starts
 * after that. It waits in the writer's shard of the counters (struct
 * ct_trie_count): writers in different shards share no line here.
 * Nothing holds a batch back: the writer whose retirement makes its
 * shard's list CT_T_BATCH nodes (or brings a node of CT_T_BIG bytes)
 * hands it over, so what waits in a shard is under CT_T_BATCH nodes of
 * under CT_T_BIG bytes each, plus one node per writer racing the
 * hand-over, whatever conntab_stats() callers do; in all, that times
 * the shards that writers use, CT_TRIE_SHARDS at most (one a writer
 * thread up to that; tests/test-trie-bound.c, stats_bounded_retirement,
 * holds two writers to it).
 *
 * The batch callback frees the nodes on liburcu's call_rcu thread, so
 * the writers' next allocations miss malloc's per-thread cache (at 1M
 * keys, ~110 instructions a malloc() in a fill). Handing them back to
 * their shard instead, for its writers to reuse, was tried: that
 * thread runs its callbacks in rounds 10 ms apart (its poll(NULL, 0,
 * 10) between them), and a writer filling a table retires some 10K
 * nodes a round. A pool of 32 nodes a class and shard, filled by the
 * callback, served 1,221 of the first 262,144 allocations of a 1M fill;
 * the instructions moved by what malloc's count moves from run to run
 * (561 -> 546 an insert, 521 -> 523 a remove, callgrind over the
 * benchmark's phases), the time not at all in three timed rounds. One
 * that served them all would hold a round's retirements, megabytes,
 * outside the table's bound.
 */
void ct_t_retire(struct ct_trie *tr, struct ct_tnode *x)
{
	struct ct_trie_count *c = ct_t_cnt(tr);
	struct rcu_head *rh = ct_t_head(x), *old;
	size_t sz = ct_t_size(x);
	unsigned long n;

	ct_delay(CT_DP_TR_RETIRE);
	ct_t_account(tr, -1, -(long)sz);
	/* Threads may share a shard: a lock-free push all the same. */
	old = __atomic_load_n(&c->retired, __ATOMIC_RELAXED);
	do {
		rh->next.next = (struct cds_wfcq_node *)(void *)old;
	} while (!__atomic_compare_exchange_n(&c->retired, &old, rh, true,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	n = __atomic_add_fetch(&c->nretired, 1, __ATOMIC_RELAXED);
	if (n >= CT_T_BATCH || sz >= CT_T_BIG)
		ct_t_flush(tr, c);
}

/*
 * At destroy: the nodes still waiting for a batch go to call_rcu (a
 * reader that saw them before the table's last users stopped may be in
 * its read-side section yet).
 */
void ct_t_drain(struct ct_trie *tr)
{
	unsigned int i;

	for (i = 0; i < CT_TRIE_SHARDS; i++)
		ct_t_flush(tr, &tr->cnt[i]);
}
