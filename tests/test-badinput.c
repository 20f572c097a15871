/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bad input the other programs leave out (test-contract.c has the NULL
 * arguments, bad families and dirty padding of insert, EBUSY/ENOENT of
 * nodes in another table, bad creates; test-walk.c and test-keys.c those
 * of walk, stats, destroy, names and key helpers): lookups of malformed
 * keys, alone and in batches; the same node inserted twice, also by
 * insert_recycle over a TIME_WAIT node; nodes of another table passed to
 * insert_recycle and timewait; the key builders with NULL. Every bad call
 * gives a clear negative errno (or NULL / nothing found) and leaves the
 * table as it was: after each one, every key is found as before and the
 * counts are unchanged. And the defaults: a zero-initialised config (the
 * default backend), the header's inline helpers given NULL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "helpers.h"

#define B		((enum conntab_backend)_i)
#define BN		conntab_backend_name(B)

#define NK		32

/* A table of NK keys (IPv4 and IPv6), every fourth TIME_WAIT. */
struct fixture {
	struct conntab *t;
	struct tconn c[NK + 8];
	struct conntab_key k[NK];
	size_t tw;
};

static void setup(struct fixture *f, enum conntab_backend b)
{
	size_t i;

	f->t = t_table(b, 0, 0);
	f->tw = 0;
	t_conns_init(f->c, NK + 8);
	for (i = 0; i < NK; i++) {
		t_key(&f->k[i], (uint32_t)i);
		ck_assert_int_eq(conntab_insert(f->t, &f->c[i].node, &f->k[i]),
				 0);
		if (i % 4 == 1) {
			ck_assert_int_eq(conntab_timewait(f->t, &f->c[i].node,
							  &f->c[i].node), 0);
			f->tw++;
		}
	}
}

/* The table is as setup() left it. */
static void intact(struct fixture *f)
{
	size_t i;

	for (i = 0; i < NK; i++)
		t_expect_found(f->t, &f->k[i], &f->c[i].node,
			       i % 4 == 1 ? CONNTAB_TIMEWAIT :
			       CONNTAB_ESTABLISHED);
	t_expect_counts(f->t, NK, f->tw);
}

/*
 * Malformed keys are in no table. An IPv4 key with nonzero padding is
 * not one the table can hold; a lookup of it finds nothing or, since the
 * hash backends compare the four address bytes only, the node of the
 * clean key. Nothing else.
 */
static void expect_malformed(struct fixture *f, struct conntab_node *got,
			     const struct conntab_key *bad, size_t clean)
{
	struct conntab_key k = *bad;

	if (!got)
		return;
	memset(&k.laddr.bytes[4], 0, 12);
	memset(&k.raddr.bytes[4], 0, 12);
	ck_assert_msg(bad->family == AF_INET && got == &f->c[clean].node &&
		      t_key_same(&k, &f->k[clean]),
		      "malformed key (family %u) found %p", bad->family,
		      (void *)got);
}

START_TEST(lookup_malformed)
{
	static const uint8_t families[] = { 0, AF_UNIX, 99, 255 };
	struct conntab_key bad[NK], mix[2 * NK];
	struct conntab_node *out[2 * NK];
	struct fixture f;
	size_t i, j, found;

	setup(&f, B);
	for (i = 0; i < NK; i++) {
		bad[i] = f.k[i];
		if (i % 3 == 0) {
			bad[i].family = families[i % 4];
		} else if (f.k[i].family == AF_INET) {
			bad[i].laddr.bytes[4 + i % 12] = 0x40;
		} else {
			bad[i].family = AF_INET; /* v6 bytes as padding */
		}
	}
	rcu_read_lock();
	for (i = 0; i < NK; i++)
		expect_malformed(&f, conntab_lookup(f.t, &bad[i]), &bad[i], i);
	/* Batches mixing good and malformed keys, every size. */
	for (i = 0; i < NK; i++) {
		mix[2 * i] = f.k[i];
		mix[2 * i + 1] = bad[i];
	}
	for (j = 1; j <= 2 * NK; j += 7) {
		size_t good = 0, extra = 0;

		found = conntab_lookup_batch(f.t, mix, out, j);
		for (i = 0; i < j; i++) {
			if (i % 2 == 0) {
				ck_assert_ptr_eq(out[i], &f.c[i / 2].node);
				good++;
			} else {
				expect_malformed(&f, out[i], &mix[i], i / 2);
				extra += out[i] != NULL;
			}
		}
		ck_assert_uint_eq(found, good + extra);
	}
	rcu_read_unlock();
	intact(&f);
	conntab_destroy(f.t, NULL);
}
END_TEST

START_TEST(same_node_twice)
{
	struct conntab_node *rec;
	struct conntab_key other;
	struct fixture f;
	size_t i;

	setup(&f, B);
	for (i = 0; i < NK; i++) {
		/* In the table: -EBUSY, whatever the key. */
		ck_assert_int_eq(conntab_insert(f.t, &f.c[i].node, &f.k[i]),
				 -EBUSY);
		t_key(&other, NK + 100 + (uint32_t)i);
		ck_assert_int_eq(conntab_insert(f.t, &f.c[i].node, &other),
				 -EBUSY);
		/* Recycling its own TIME_WAIT key with itself. */
		rec = &f.c[NK].node;
		ck_assert_int_eq(conntab_insert_recycle(f.t, &f.c[i].node,
							&f.k[i], &rec), -EBUSY);
		ck_assert_ptr_null(rec);
		/* A TIME_WAIT node is time-waited again: -EINVAL. */
		if (i % 4 == 1)
			ck_assert_int_eq(conntab_timewait(f.t, &f.c[i].node,
							  &f.c[i].node),
					 -EINVAL);
		/* Another linked node as tw: -EBUSY. */
		ck_assert_int_eq(conntab_timewait(f.t, &f.c[i].node,
						  &f.c[(i + 1) % NK].node),
				 -EBUSY);
		ck_assert_ptr_null(t_lookup(f.t, &other));
	}
	intact(&f);
	/* Remove twice; the second is -ENOENT and changes nothing. */
	ck_assert_int_eq(conntab_remove(f.t, &f.c[0].node), 0);
	ck_assert_int_eq(conntab_remove(f.t, &f.c[0].node), -ENOENT);
	ck_assert_int_eq(conntab_timewait(f.t, &f.c[0].node, &f.c[0].node),
			 -ENOENT);
	ck_assert_ptr_null(t_lookup(f.t, &f.k[0]));
	t_expect_counts(f.t, NK - 1, f.tw);
	for (i = 1; i < NK; i++)
		t_expect_found(f.t, &f.k[i], &f.c[i].node,
			       i % 4 == 1 ? CONNTAB_TIMEWAIT :
			       CONNTAB_ESTABLISHED);
	conntab_destroy(f.t, NULL);
}
END_TEST

START_TEST(foreign_nodes)
{
	struct conntab *u = t_table(B, 0, 0);
	struct conntab_node *rec;
	struct conntab_key ku;
	struct tconn cu[2];
	struct fixture f;
	size_t i;

	setup(&f, B);
	t_conns_init(cu, 2);
	t_key(&ku, 1000);
	ck_assert_int_eq(conntab_insert(u, &cu[0].node, &ku), 0);
	for (i = 0; i < NK; i++) {
		/* u's node recycling a TIME_WAIT key of t: -EBUSY. */
		rec = &f.c[NK].node;
		ck_assert_int_eq(conntab_insert_recycle(f.t, &cu[0].node,
							&f.k[i], &rec), -EBUSY);
		ck_assert_ptr_null(rec);
		/* t's node as est or tw in u. */
		ck_assert_int_eq(conntab_timewait(u, &f.c[i].node,
						  &cu[1].node), -ENOENT);
		ck_assert_int_eq(conntab_timewait(u, &cu[0].node,
						  &f.c[i].node), -EBUSY);
		ck_assert_int_eq(conntab_remove(u, &f.c[i].node), -ENOENT);
		/* u's node as est in t. */
		ck_assert_int_eq(conntab_timewait(f.t, &cu[0].node,
						  &f.c[NK].node), -ENOENT);
		ck_assert_ptr_null(t_lookup(u, &f.k[i]));
	}
	intact(&f);
	t_expect_found(u, &ku, &cu[0].node, CONNTAB_ESTABLISHED);
	t_expect_counts(u, 1, 0);
	ck_assert_ptr_null(t_lookup(f.t, &ku));
	/* The refused nodes were released: they work elsewhere. */
	ck_assert_int_eq(conntab_timewait(u, &cu[0].node, &cu[1].node), 0);
	ck_assert_int_eq(conntab_timewait(f.t, &f.c[0].node, &f.c[NK].node),
			 0);
	t_expect_found(f.t, &f.k[0], &f.c[NK].node, CONNTAB_TIMEWAIT);
	t_expect_found(u, &ku, &cu[1].node, CONNTAB_TIMEWAIT);
	conntab_destroy(f.t, NULL);
	conntab_destroy(u, NULL);
}
END_TEST

START_TEST(key_builders_null)
{
	struct conntab_key k, want;

	/* A NULL key is ignored, not written through. */
	conntab_key_v4(NULL, IPPROTO_TCP, 1, 2, 3, 4);
	conntab_key_v6(NULL, IPPROTO_TCP, NULL, 1, NULL, 2);
	/* NULL addresses are the unspecified address (::). */
	memset(&k, 0xee, sizeof(k));
	conntab_key_v6(&k, IPPROTO_UDP, NULL, htons(53), NULL, htons(5353));
	memset(&want, 0, sizeof(want));
	want.family = AF_INET6;
	want.proto = IPPROTO_UDP;
	want.lport = htons(53);
	want.rport = htons(5353);
	ck_assert(t_key_same(&k, &want));
}
END_TEST

/*
 * A zero-initialised config, as the header advises before setting what one
 * wants: backend 0 is CONNTAB_CHAINED, the documented default, not EINVAL.
 * The table is chained's: the same buckets and memory as an explicit
 * chained table of the same keys, and every key found.
 */
START_TEST(zeroed_config)
{
	struct conntab_config zero, chained;
	struct conntab_stats sz, sc;
	struct conntab *tz, *tc;
	struct tconn c[2][NK];
	struct conntab_key k;
	size_t i;

	memset(&zero, 0, sizeof(zero));
	memset(&chained, 0, sizeof(chained));
	chained.backend = CONNTAB_CHAINED;
	errno = 0;
	tz = conntab_create(&zero);
	ck_assert_msg(tz, "zeroed config: errno %d", errno);
	tc = conntab_create(&chained);
	ck_assert_ptr_nonnull(tc);
	t_conns_init(c[0], NK);
	t_conns_init(c[1], NK);
	for (i = 0; i < NK; i++) {
		t_key(&k, (uint32_t)i);
		ck_assert_int_eq(conntab_insert(tz, &c[0][i].node, &k), 0);
		ck_assert_int_eq(conntab_insert(tc, &c[1][i].node, &k), 0);
	}
	for (i = 0; i < NK; i++) {
		t_key(&k, (uint32_t)i);
		t_expect_found(tz, &k, &c[0][i].node, CONNTAB_ESTABLISHED);
	}
	conntab_stats(tz, &sz);
	conntab_stats(tc, &sc);
	ck_assert_uint_eq(sz.entries, NK);
	ck_assert_uint_eq(sz.buckets, sc.buckets);
	ck_assert_uint_eq(sz.memory, sc.memory);
	for (i = 0; i < NK; i++) {
		ck_assert_int_eq(conntab_remove(tz, &c[0][i].node), 0);
		ck_assert_int_eq(conntab_remove(tc, &c[1][i].node), 0);
	}
	conntab_destroy(tz, NULL);
	conntab_destroy(tc, NULL);
	rcu_barrier();
	/* 0 stays no backend of its own: nothing names or offers it. */
	ck_assert_int_eq(conntab_backend_available(0), 0);
}
END_TEST

/*
 * The header's inline helpers given NULL: no crash, as conntab(7) says of
 * every function; a NULL cursor is no pass under way (a loop on it ends).
 */
START_TEST(inline_helpers_null)
{
	struct conntab_cursor cur;

	conntab_node_init(NULL);
	ck_assert_int_eq(conntab_cursor_done(NULL), 1);
	memset(&cur, 0, sizeof(cur));
	ck_assert_int_eq(conntab_cursor_done(&cur), 1);
	cur.opaque[5] = 1;
	ck_assert_int_eq(conntab_cursor_done(&cur), 0);
}
END_TEST

int main(void)
{
	const TTest *const per_backend[] = {
		lookup_malformed, same_node_twice, foreign_nodes,
	};
	Suite *s = suite_create("badinput");
	TCase *tc = tcase_create("common");
	int ret;

	rcu_register_thread();
	tcase_add_test(tc, key_builders_null);
	tcase_add_test(tc, zeroed_config);
	tcase_add_test(tc, inline_helpers_null);
	suite_add_tcase(s, tc);
	t_add_backend_cases(s, per_backend,
			    sizeof(per_backend) / sizeof(per_backend[0]), 60);
	ret = t_run(s, 300);
	rcu_unregister_thread();
	return ret;
}
