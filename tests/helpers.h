/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the test programs built against the memb flavor (<urcu.h>).
 */
#ifndef T_HELPERS_H
#define T_HELPERS_H

#include <urcu.h>

#include "common.h"

/* Poison and free after a grace period (caller is a registered thread). */
void t_conn_free_rcu(struct tconn *c);

/* A table with the memb flavor; fails the running test on error. */
struct conntab *t_table(enum conntab_backend b, size_t expected,
			size_t max_entries);

/* Initialise @n connections (ids 0..n-1) in an array. */
void t_conns_init(struct tconn *c, size_t n);

/* conntab_lookup() inside a read-side critical section. */
struct conntab_node *t_lookup(struct conntab *t, const struct conntab_key *k);

/* A lookup of @k finds @n (NULL: nothing), in @state, with key @k. */
void t_expect_found(struct conntab *t, const struct conntab_key *k,
		    struct conntab_node *n, enum conntab_state state);

/* stats.entries and stats.timewait are @entries and @tw. */
void t_expect_counts(struct conntab *t, size_t entries, size_t tw);

#endif /* T_HELPERS_H */
