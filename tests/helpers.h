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

#endif /* T_HELPERS_H */
