/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the memb-flavor test programs; see helpers.h.
 */
#include <errno.h>
#include <string.h>

#include "helpers.h"

static void t_conn_free_cb(struct rcu_head *rh)
{
	t_conn_free_now(caa_container_of(rh, struct tconn, rh));
}

void t_conn_free_rcu(struct tconn *c)
{
	call_rcu(&c->rh, t_conn_free_cb);
}

struct conntab *t_table(enum conntab_backend b, size_t expected,
			size_t max_entries)
{
	struct conntab_config cfg = {
		.backend = b,
		.expected = expected,
		.max_entries = max_entries,
		.hash = t_hash,
	};
	struct conntab *t = conntab_create(&cfg);

	ck_assert_msg(t != NULL, "%s: create(expected %zu, max %zu): %s",
		      conntab_backend_name(b), expected, max_entries,
		      strerror(errno));
	return t;
}

void t_conns_init(struct tconn *c, size_t n)
{
	size_t i;

	memset(c, 0, n * sizeof(*c));
	for (i = 0; i < n; i++) {
		conntab_node_init(&c[i].node);
		c[i].magic = T_MAGIC_LIVE;
		c[i].id = (uint32_t)i;
	}
}

struct conntab_node *t_lookup(struct conntab *t, const struct conntab_key *k)
{
	struct conntab_node *n;

	rcu_read_lock();
	n = conntab_lookup(t, k);
	rcu_read_unlock();
	return n;
}

void t_expect_found(struct conntab *t, const struct conntab_key *k,
		    struct conntab_node *n, enum conntab_state state)
{
	struct conntab_node *got = t_lookup(t, k);

	ck_assert_ptr_eq(got, n);
	ck_assert(t_key_same(conntab_node_key(got), k));
	ck_assert_int_eq(conntab_node_state(got), state);
}

void t_expect_counts(struct conntab *t, size_t entries, size_t tw)
{
	struct conntab_stats st;

	conntab_stats(t, &st);
	ck_assert_uint_eq(st.entries, entries);
	ck_assert_uint_eq(st.timewait, tw);
}
