/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_EXTHASH's merges carry their segments' counts: a table grown to
 * 8192 entries, a sixteenth of them put in TIME_WAIT, the rest removed,
 * so that most segments merge (down to ~8 of its ~128, buddies holding
 * at most XH_MERGE = 32 together) while they hold TIME_WAIT nodes; then
 * the TIME_WAIT nodes removed too. After each phase stats.entries and
 * stats.timewait must be what the table holds: they are the sums of the
 * segments' counts, which a merge moves into the merged segment (whole,
 * for halves that index alike: lib/hashtab/exthash.c, xh_splice_chains).
 * A merge that dropped a half's TIME_WAIT count showed in none of the
 * other tests: their tables merged without TIME_WAIT nodes, or counted
 * nothing after. Every node left must still be found, in its state.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <check.h>
#include <stdlib.h>

#include "helpers.h"

#define NKEYS	8192
#define TW_EVERY 16

START_TEST(merge_counts)
{
	struct conntab *t = t_table(CONNTAB_EXTHASH, 0, 0);
	struct conntab_resize_stats rs0, rs;
	struct conntab_key k;
	struct tconn *c;
	size_t i, ntw = NKEYS / TW_EVERY;

	c = calloc(NKEYS, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	t_conns_init(c, NKEYS);
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(t, &c[i].node, &k), 0);
	}
	for (i = 0; i < NKEYS; i += TW_EVERY)
		ck_assert_int_eq(conntab_timewait(t, &c[i].node, &c[i].node),
				 0);
	t_expect_counts(t, NKEYS, ntw);
	ck_assert_int_eq(conntab_resize_stats(t, &rs0), 0);

	/* The established ones go: the segments merge around the rest. */
	for (i = 0; i < NKEYS; i++)
		if (i % TW_EVERY)
			ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
	ck_assert_int_eq(conntab_resize_stats(t, &rs), 0);
	ck_assert_msg(rs.merges >= rs0.merges + 64,
		      "%zu merges, %zu before", rs.merges, rs0.merges);
	t_expect_counts(t, ntw, ntw);
	for (i = 0; i < NKEYS; i++) {
		t_key(&k, (uint32_t)i);
		if (i % TW_EVERY)
			ck_assert_ptr_null(t_lookup(t, &k));
		else
			t_expect_found(t, &k, &c[i].node, CONNTAB_TIMEWAIT);
	}

	/* And the TIME_WAIT ones, out of merged segments. */
	for (i = 0; i < NKEYS; i += TW_EVERY) {
		ck_assert_int_eq(conntab_remove(t, &c[i].node), 0);
		t_expect_counts(t, ntw - i / TW_EVERY - 1,
				ntw - i / TW_EVERY - 1);
	}
	conntab_destroy(t, NULL);
	free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exthash-merge");
	TCase *tc = tcase_create("merge");
	int ret;

	rcu_register_thread();
	tcase_add_test(tc, merge_counts);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	ret = t_run(s, 120);
	rcu_unregister_thread();
	return ret;
}
