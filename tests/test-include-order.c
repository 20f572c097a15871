/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The include order does not matter: this program includes conntab.h
 * before <urcu.h>, the order that once compiled cleanly and then failed
 * with EINVAL, and checks that conntab_create() got the flavor: a table
 * of every backend is created, a key goes in, is found under the read
 * lock and goes out through call_rcu(). tests/test-include-order.sh
 * checks what does not compile.
 */
#include <conntab/conntab.h>
#include <urcu.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct conn {
	struct conntab_node node;
	struct rcu_head rcu;
};

static void conn_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct conn, rcu));
}

static int try_backend(enum conntab_backend b)
{
	struct conntab_config cfg = { .backend = b };
	const char *name = conntab_backend_name(b);
	struct conntab_key key;
	struct conntab *t;
	struct conn *c;
	int found;

	t = conntab_create(&cfg);
	if (!t) {
		printf("FAIL: %s: conntab_create: %s\n", name, strerror(errno));
		return 1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	conntab_node_init(&c->node);
	conntab_key_v4(&key, IPPROTO_TCP, htonl(0xc0000201), htons(80),
		       htonl(0xc6336407), htons(40000));
	if (conntab_insert(t, &c->node, &key)) {
		printf("FAIL: %s: conntab_insert\n", name);
		return 1;
	}
	rcu_read_lock();
	found = conntab_lookup(t, &key) == &c->node;
	rcu_read_unlock();
	/* Removes and frees through the flavor the macro passed. */
	if (!found || conntab_remove(t, &c->node)) {
		printf("FAIL: %s: lookup or remove\n", name);
		return 1;
	}
	call_rcu(&c->rcu, conn_free);
	conntab_destroy(t, NULL);
	printf("ok: %s: conntab.h before urcu.h\n", name);
	return 0;
}

int main(void)
{
	int b, failed = 0;

	rcu_register_thread();
	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE; b++)
		if (conntab_backend_available((enum conntab_backend)b))
			failed |= try_backend((enum conntab_backend)b);
	rcu_barrier();
	rcu_unregister_thread();
	return failed;
}
