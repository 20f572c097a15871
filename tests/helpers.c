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
	};
	struct conntab *t = conntab_create(&cfg);

	ck_assert_msg(t != NULL, "%s: create(expected %zu, max %zu): %s",
		      conntab_backend_name(b), expected, max_entries,
		      strerror(errno));
	return t;
}
