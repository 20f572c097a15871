/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The smallest complete use of conntab: one thread, one connection, its
 * whole life from insert through TIME_WAIT to removal.
 *
 *   minimal [--backend NAME]
 *   minimal --list-backends
 *
 * Build against an installed library, beside args.h (the examples'
 * option parsing):
 *   cc minimal.c $(pkg-config --cflags --libs conntab liburcu) -o minimal
 *
 * conntab_create() hands the library the flavor of the urcu header
 * included before the call (libconntab itself links no flavor); without
 * one, the call does not compile.
 */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define ARGS_PROG "minimal"
#include "args.h"

/* An application's connection object: conntab links it through @node. */
struct conn {
	struct conntab_node node;
	struct rcu_head rcu;	/* to free it a grace period after unlinking */
	unsigned long bytes;	/* ... whatever the application keeps */
};

/* A TIME_WAIT remnant: smaller than a live connection. */
struct tw {
	struct conntab_node node;
	struct rcu_head rcu;
};

static void conn_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct conn, rcu));
}

static void tw_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct tw, rcu));
}

/*
 * What a packet path does: find the connection of a key. True if found,
 * with its state in *@state.
 */
static bool lookup_state(struct conntab *t, const struct conntab_key *key,
			 enum conntab_state *state)
{
	struct conntab_node *n;

	/*
	 * Readers take no lock: the node found stays valid until
	 * rcu_read_unlock(), even if a writer removes it meanwhile. A real
	 * reader would use conntab_entry(n, struct conn, node) here.
	 */
	rcu_read_lock();
	n = conntab_lookup(t, key);
	if (n)
		*state = conntab_node_state(n);
	rcu_read_unlock();
	return n != NULL;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "minimal: %s failed (%d)\n", what, err);
	return 1;
}

static const char usage[] =
	"usage: minimal [--backend NAME]\n"
	"       minimal --list-backends\n"
	"One connection's whole life in a conntab table: insert, lookup,\n"
	"TIME_WAIT, remove.\n"
	"  --backend NAME    the table's backend (default chained)\n"
	"  --list-backends   the backends of this library, one a line\n"
	"  --help            this text\n";

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "list-backends", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct conntab_config cfg = {
		.backend = CONNTAB_CHAINED,
		.expected = 1024,	/* sizing hint, not a limit */
	};
	struct conntab_key key;
	enum conntab_state state;
	struct conntab *t;
	struct conn *c;
	struct tw *tw;
	char text[80];
	int err, o;

	while ((o = args_next(argc, argv, lopts)) != -1) {
		switch (o) {
		case 'b':
			cfg.backend = args_backend("--backend", optarg);
			break;
		case 'l':
			args_list_backends();
		case 'h':
			args_help(usage);
		}
	}
	args_end(argc, argv);

	/* Every thread that reads under RCU registers with its flavor. */
	rcu_register_thread();

	t = conntab_create(&cfg);
	if (!t)
		return fail("conntab_create", -1);

	/* 192.0.2.1:80 (this host) <- 198.51.100.7:40000 (the peer). */
	conntab_key_v4(&key, IPPROTO_TCP,
		       htonl(0xc0000201), htons(80),
		       htonl(0xc6336407), htons(40000));
	conntab_key_format(&key, text, sizeof(text));

	/* Insert: the library copies the key into the node. */
	c = calloc(1, sizeof(*c));
	tw = calloc(1, sizeof(*tw));
	if (!c || !tw)
		return fail("calloc", -1);
	conntab_node_init(&c->node);
	err = conntab_insert(t, &c->node, &key);
	if (err)
		return fail("conntab_insert", err);
	if (!lookup_state(t, &key, &state) || state != CONNTAB_ESTABLISHED)
		return fail("lookup of the established connection", 0);
	printf("established: %s\n", text);

	/*
	 * Close: swap in the small TIME_WAIT object in one step (a
	 * concurrent lookup sees one or the other), then free the big one
	 * once every reader that might still hold it has left.
	 */
	conntab_node_init(&tw->node);
	err = conntab_timewait(t, &c->node, &tw->node);
	if (err)
		return fail("conntab_timewait", err);
	call_rcu(&c->rcu, conn_free);
	if (!lookup_state(t, &key, &state) || state != CONNTAB_TIMEWAIT)
		return fail("lookup of the time-wait entry", 0);
	printf("time-wait:   %s\n", text);

	/* Expire: unlink, and again free only after a grace period. */
	err = conntab_remove(t, &tw->node);
	if (err)
		return fail("conntab_remove", err);
	call_rcu(&tw->rcu, tw_free);
	if (lookup_state(t, &key, &state))
		return fail("lookup after remove (still found)", 0);
	printf("removed:     %s\n", text);

	/*
	 * No users left: destroy (it would call the release function for
	 * nodes still in the table; there are none). rcu_barrier() waits
	 * for the call_rcu callbacks above and the library's own.
	 */
	conntab_destroy(t, NULL);
	rcu_barrier();
	rcu_unregister_thread();
	return 0;
}
