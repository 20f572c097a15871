/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory follows the table, not its history: fill a hash backend to
 * T_MEM_N entries, churn a quarter of them twice with new keys, empty it
 * to 1%, and compare what it then holds with a fresh table of the same
 * configuration holding only that 1%:
 *
 *  - exthash (created with expected = 0, so it grows all the way): its
 *    stats.memory and the heap it still holds after rcu_barrier() (the
 *    segments and directories it retired through call_rcu are freed by
 *    then: a retire batch left waiting would show here) are at most
 *    XH_FACTOR times the fresh table's. Merges of light buddies and
 *    directory halving bring it back, with hysteresis: buddies merge only
 *    once they hold XH_MERGE = 32 nodes together (16 per segment), where
 *    a growing table averages ~72 per segment, so an emptied table of
 *    random keys holds up to ~4.4x the segments of a fresh one
 *    (doc/exthash.md, "Memory after shrinking"; 3.5-3.9x measured);
 *  - chained and split are sized once from conntab_config::expected and
 *    never resize: their stats.memory is the same number from create to
 *    the end, and the heap they hold is that array, whatever the churn.
 *
 * The heap is glibc's in-use bytes (mallinfo2(): arenas plus mmapped
 * chunks) less what it was before the table; the test's own nodes are
 * allocated before that. Under AddressSanitizer, whose allocator glibc
 * does not see, only stats.memory is checked.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#if defined(__SANITIZE_ADDRESS__)
# define T_MEM_N	200000
# define T_MEM_HEAP	0
#else
# define T_MEM_N	1000000
# define T_MEM_HEAP	1
#endif
#define T_MEM_KEEP	100		/* one key in T_MEM_KEEP stays */
#define XH_FACTOR	5		/* exthash: at most 5x the fresh table */
#define FIXED_SLACK	(64 * 1024)	/* the table head, locks, Check's own */

struct conn {
	struct conntab_node node;
};

static size_t heap_in_use(void)
{
#if T_MEM_HEAP
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

static size_t table_memory(struct conntab *t)
{
	struct conntab_stats st;

	conntab_stats(t, &st);
	return st.memory;
}

/* Key of the @i-th connection ever made (ids beyond T_MEM_N: churn). */
static void mem_key(struct conntab_key *k, uint32_t i)
{
	t_key(k, i);
}

static struct conntab *mem_create(enum conntab_backend b)
{
	struct conntab_config cfg = {
		.backend = b,
		/* exthash grows from nothing; the others need their size. */
		.expected = b == CONNTAB_EXTHASH ? 0 : T_MEM_N,
	};
	struct conntab *t = conntab_create(&cfg);

	ck_assert_ptr_nonnull(t);
	return t;
}

START_TEST(memory_follows)
{
	enum conntab_backend b = (enum conntab_backend)_i;
	size_t n = T_MEM_N, i, r, kept = 0, base, mem0, mem_full, mem_end;
	size_t heap_end, heap_ref, mem_ref, ref_base;
	struct conn *c = calloc(n, sizeof(*c));
	struct conn *ref = calloc(n / T_MEM_KEEP + 1, sizeof(*ref));
	uint32_t *id = calloc(n, sizeof(*id));
	struct conntab *t, *t2;
	struct conntab_key k;

	ck_assert(c && ref && id);
	rcu_barrier();
	base = heap_in_use();
	t = mem_create(b);
	mem0 = table_memory(t);

	for (i = 0; i < n; i++) {
		id[i] = (uint32_t)i;
		mem_key(&k, id[i]);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	mem_full = table_memory(t);
	/* Churn: a quarter replaced by new connections, twice. */
	for (r = 0; r < 2; r++) {
		for (i = r; i < n; i += 4)
			ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		synchronize_rcu();	/* the nodes are reused below */
		for (i = r; i < n; i += 4) {
			id[i] += (uint32_t)n;
			conntab_node_init(&c[i].node);
			mem_key(&k, id[i]);
			ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
		}
	}
	/* Down to one in T_MEM_KEEP. */
	for (i = 0; i < n; i++) {
		if (i % T_MEM_KEEP == 0) {
			kept++;
			continue;
		}
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	}
	rcu_barrier();
	mem_end = table_memory(t);
	heap_end = heap_in_use() - base;

	/* The same connections alone, in a fresh table. */
	ref_base = heap_in_use();
	t2 = mem_create(b);
	for (i = 0; i < n; i += T_MEM_KEEP) {
		mem_key(&k, id[i]);
		ck_assert_int_eq(conntab_insert(t2, &ref[i / T_MEM_KEEP].node,
						&k), 0);
	}
	rcu_barrier();
	mem_ref = table_memory(t2);
	heap_ref = heap_in_use() - ref_base;

	printf("%s: %zu entries: memory at create %zu, full %zu, after churn "
	       "and down to %zu entries %zu (heap %zu); a fresh table of "
	       "those %zu: memory %zu (heap %zu)\n",
	       conntab_backend_name(b), n, mem0, mem_full, kept, mem_end,
	       heap_end, kept, mem_ref, heap_ref);
	fflush(stdout);

	/* Still the same table: every kept key found, nothing else. */
	rcu_read_lock();
	for (i = 0; i < n; i++) {
		mem_key(&k, id[i]);
		ck_assert_ptr_eq(conntab_lookup(t, &k),
				 i % T_MEM_KEEP ? NULL : &c[i].node);
	}
	rcu_read_unlock();

	if (b == CONNTAB_EXTHASH) {
		ck_assert_uint_gt(mem_full, 10 * mem_end);	/* it grew */
		ck_assert_uint_le(mem_end, XH_FACTOR * mem_ref);
		if (T_MEM_HEAP)
			ck_assert_uint_le(heap_end, XH_FACTOR * heap_ref +
					  FIXED_SLACK);
	} else {
		ck_assert_uint_eq(mem_full, mem0);
		ck_assert_uint_eq(mem_end, mem0);
		ck_assert_uint_eq(mem_ref, mem0);
		if (T_MEM_HEAP)
			ck_assert_uint_le(heap_end, mem0 + FIXED_SLACK);
	}

	conntab_destroy(t2, NULL);
	conntab_destroy(t, NULL);
	rcu_barrier();
	free(id);
	free(ref);
	free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("memory");
	int ret;

	rcu_register_thread();
	tcase_set_timeout(tc, 600);
	/* The hash backends; the trie's bound is tests/test-trie's. */
	tcase_add_loop_test(tc, memory_follows, CONNTAB_CHAINED, CONNTAB_TRIE);
	suite_add_tcase(s, tc);
	ret = t_run(s, 900);
	rcu_unregister_thread();
	return ret;
}
