/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp-conntrack: an epoll HTTP server that tracks its TCP connections.
 *
 * Every accepted connection is registered in one table shared by all
 * threads, keyed by its 4-tuple (getsockname/getpeername). Each thread
 * runs its own epoll loop; all wait on the server's listening socket
 * (EPOLLEXCLUSIVE: a new connection wakes one of them). A closed
 * connection leaves a small TIME_WAIT entry behind, which a reaper thread
 * removes once --time-wait has passed, scanning a slice of the table at a
 * time (conntab_scan()). At --max-conns a new connection evicts one
 * (conntab_insert_evict()): a TIME_WAIT entry first, else the established
 * connection idle the longest, which its own loop then closes. Three
 * endpoints:
 *
 *   GET /       a line naming the connection's own key
 *   GET /conns  the tracked connections as JSON (4-tuple, state, age, bytes)
 *   GET /stats  the table's stats and the server's counters as JSON
 *
 *   tcp-conntrack --port N [--backend NAME] [--threads N] [--bind ADDR]
 *                 [--reuseport] [--time-wait MS] [--max-conns N]
 *                 [--scan-budget N]
 *   tcp-conntrack --list-backends
 *   tcp-conntrack --help
 *
 * Defaults: --time-wait 60000, no --max-conns, --scan-budget 1024 entries
 * per reaper call. --port 0 picks a free port; the first line on stdout
 * names it. SIGINT or SIGTERM stops the server, which then prints its
 * totals. A bad option is a one-line error and exit status 2 (args.h).
 *
 * The port is the server's own: a second server on it fails to start.
 * --reuseport gives each loop a listener of its own with SO_REUSEPORT
 * instead, which the kernel spreads new connections over, and lets other
 * servers started with --reuseport share the port, each with its own
 * table and its own /conns.
 *
 * Build against an installed library, beside args.h:
 *   cc tcp-conntrack.c $(pkg-config --cflags --libs conntab liburcu) \
 *      -o tcp-conntrack
 */
#define _GNU_SOURCE		/* accept4, open_memstream, strcasestr */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define ARGS_PROG "tcp-conntrack"
#include "args.h"

#define MS		((uint64_t)1000000)	/* a millisecond in ns */
/* Eviction ranks: any TIME_WAIT entry before any established one. */
#define RANK_TIMEWAIT	(1L << 62)

struct loop;

/*
 * Who may close a connection: the first to move its fate off CONN_OPEN,
 * with a compare-and-swap. Its own loop moves it to CONN_CLOSING when the
 * peer is done; a thread whose insert_evict unlinked its node moves it to
 * CONN_EVICTED and hands it to the loop (struct loop).
 */
enum { CONN_OPEN, CONN_CLOSING, CONN_EVICTED };

/*
 * A node's state tells which object holds it: an ESTABLISHED node is in
 * a struct conn, a TIMEWAIT node in a struct tw. A closing connection
 * swaps a tw in (conntab_timewait) rather than flipping its own state, so
 * the 4 KiB buffer and the descriptor go at once and only ~110 bytes stay
 * for the time-wait period. (udp-flowd shows the in-place flip.)
 *
 * A conn belongs to the loop that accepted it: only that loop touches its
 * descriptor and buffers, and only that loop frees it (call_rcu). Other
 * threads reach it through the table, under the RCU read lock: /conns
 * walks and eviction ranks read its counters, an evictor its fate.
 */
struct conn {
	struct conntab_node node;
	struct rcu_head rcu;
	struct loop *loop;	/* the owner, fixed before the insert */
	struct conn *next_evicted;	/* on loop->evicted */
	int fate;		/* CONN_*: compare-and-swap */
	uint64_t born_ns;
	/*
	 * Written by the owning loop; read by /conns walks (bytes) and by
	 * eviction ranks (last_ns, the last read or write): atomics.
	 */
	uint64_t bytes_in, bytes_out, last_ns;
	/* The owning loop's only. */
	struct tw *tw;		/* its TIME_WAIT entry, made at accept */
	int fd;
	int close_after;	/* Connection: close, or an error answered */
	char *out;		/* responses not yet written */
	size_t out_len, out_off, in_len;
	char in[4096];		/* request bytes not yet parsed */
};

struct tw {
	struct conntab_node node;
	struct rcu_head rcu;
	uint64_t born_ns, closed_ns;
	uint64_t bytes_in, bytes_out;
};

/*
 * An epoll loop. Its connections are its own; a thread that evicts one
 * hands it over on the loop's stack (any thread pushes, the loop takes the
 * whole stack at once, so no ABA) and rings the loop's eventfd.
 */
struct loop {
	pthread_t tid;
	int lfd;		/* the listener (a dup), or its own */
	int wake_fd;		/* eventfd: connections were evicted */
	struct conn *evicted;	/* stack of them, linked by next_evicted */
};

/*
 * Server counters, bumped by every thread (relaxed: only ever summed).
 * Every accepted connection's node leaves the table once: closed (its
 * loop swapped its tw in), evicted, or still there at exit; so does every
 * tw: expired, recycled, evicted, or still there at exit.
 */
static struct {
	uint64_t accepted, requests, closed, expired, recycled, refused;
	uint64_t evicted, evicted_est;	/* all victims; of which conns */
} cnt;
#define COUNT(f, n)	__atomic_add_fetch(&cnt.f, (n), __ATOMIC_RELAXED)
#define COUNTER(f)	__atomic_load_n(&cnt.f, __ATOMIC_RELAXED)

static struct {
	const char *bind;
	int port;
	int threads;
	int reuseport;		/* a listener per loop, the port shared */
	enum conntab_backend backend;
	uint64_t tw_ns;
	size_t max_conns;
	size_t scan_budget;	/* entries per conntab_scan() call */
} opt = { "127.0.0.1", -1, 2, 0, CONNTAB_CHAINED, 60000 * MS, 0, 1024 };

static struct conntab *table;
static int stop_fd;		/* eventfd: readable once we are stopping */
static int failed;		/* the reaper could not scan: exit 1 */
static char listen_tag;		/* epoll data of the listener */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void conn_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct conn, rcu));
}

static void tw_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct tw, rcu));
}

/* Nanoseconds from @since to @now, 0 if another thread's clock was ahead. */
static long age(uint64_t now, uint64_t since)
{
	uint64_t d = now > since ? now - since : 0;

	return d < (uint64_t)RANK_TIMEWAIT ? (long)d : RANK_TIMEWAIT - 1;
}

/* Traffic on @c: what makes it less idle for eviction. */
static void conn_touch(struct conn *c)
{
	__atomic_store_n(&c->last_ns, now_ns(), __ATOMIC_RELAXED);
}

/*
 * conntab_insert_evict()'s rank, under the table's writer lock (short, no
 * blocking, no conntab calls). A TIME_WAIT entry is only the memory of a
 * closed connection: it goes first, the longest closed first. Then the
 * established connection idle the longest.
 */
static long conn_rank(struct conntab_node *n, void *arg)
{
	uint64_t now = *(const uint64_t *)arg;
	struct conn *c;

	/* A tw's closed_ns is written before it is published, never after. */
	if (conntab_node_state(n) == CONNTAB_TIMEWAIT)
		return RANK_TIMEWAIT +
		       age(now, conntab_entry(n, struct tw, node)->closed_ns);
	c = conntab_entry(n, struct conn, node);
	return age(now, __atomic_load_n(&c->last_ns, __ATOMIC_RELAXED));
}

/* The last of a connection, in its own loop: @c is gone after this. */
static void conn_drop(struct conn *c)
{
	close(c->fd);
	free(c->out);	/* the owner's alone: walkers never read it */
	free(c->tw);	/* NULL once in the table */
	/* A /conns walk in another thread may still be reading @c. */
	call_rcu(&c->rcu, conn_free);
}

/*
 * An eviction's victim, unlinked by our insert_evict; the caller holds
 * the RCU read lock since before that call.
 *
 * A tw belongs to the table alone: we unlinked it, we free it.
 *
 * A conn belongs to its loop: we must not close its descriptor (the loop
 * may be using it, and a closed number is soon another accept's) nor free
 * it. We claim it (OPEN -> EVICTED) and push it on the loop's stack; the
 * loop closes and frees it when it pops it, never before, so the push is
 * safe. Should the loop have claimed it first (CLOSING: its peer is gone
 * and its timewait found the node unlinked), the loop frees it through
 * call_rcu(), after our read lock: our failed claim is safe too.
 */
static void conn_evicted(struct conntab_node *n)
{
	int open = CONN_OPEN;
	struct conn *c;
	struct loop *l;

	COUNT(evicted, 1);
	if (conntab_node_state(n) == CONNTAB_TIMEWAIT) {
		call_rcu(&conntab_entry(n, struct tw, node)->rcu, tw_free);
		return;
	}
	COUNT(evicted_est, 1);
	c = conntab_entry(n, struct conn, node);
	if (!__atomic_compare_exchange_n(&c->fate, &open, CONN_EVICTED, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	l = c->loop;
	/* Release: the loop's acquiring pop sees next_evicted. */
	c->next_evicted = __atomic_load_n(&l->evicted, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&l->evicted, &c->next_evicted, c,
					    true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	/* After the push: a loop that reads the eventfd then finds it. */
	eventfd_write(l->wake_fd, 1);
}

/* Close the connections other threads evicted from loop @l. */
static void loop_drain(struct loop *l)
{
	struct conn *c, *next;

	if (!__atomic_load_n(&l->evicted, __ATOMIC_RELAXED))
		return;
	c = __atomic_exchange_n(&l->evicted, NULL, __ATOMIC_ACQUIRE);
	for (; c; c = next) {
		next = c->next_evicted;
		conn_drop(c);
	}
}

/* Register a socket loop @l accepted; closes it if the table refuses. */
static void conn_open(struct loop *l, int ep, int fd)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET };
	struct conntab_node *old;
	struct conntab_key key;
	struct conn *c = NULL;
	uint64_t now = now_ns();
	int err;

	if (getsockname(fd, (struct sockaddr *)&local, &llen) ||
	    getpeername(fd, (struct sockaddr *)&remote, &rlen) ||
	    conntab_key_from_sockaddr(&key, IPPROTO_TCP,
				      (struct sockaddr *)&local,
				      (struct sockaddr *)&remote))
		goto refuse;
	c = calloc(1, sizeof(*c));
	/* Its TIME_WAIT entry now, so that closing never needs memory. */
	if (!c || !(c->tw = calloc(1, sizeof(*c->tw))))
		goto refuse;
	conntab_node_init(&c->node);
	conntab_node_init(&c->tw->node);
	c->loop = l;
	c->fd = fd;
	c->born_ns = c->last_ns = now;
	/*
	 * A victim we evict may be one its loop is closing and freeing:
	 * read-lock from before the insert that unlinks it until
	 * conn_evicted() is done with it.
	 */
	rcu_read_lock();
	/*
	 * A new connection may reuse the 4-tuple of one still in TIME_WAIT
	 * (the peer reused its port): recycle swaps it out in one step and
	 * hands it to us to free. Should the reaper's conntab_remove() of
	 * that entry race with us, exactly one of the two succeeds.
	 */
	err = conntab_insert_recycle(table, &c->node, &key, &old);
	if (!err && old) {
		call_rcu(&conntab_entry(old, struct tw, node)->rcu, tw_free);
		COUNT(recycled, 1);
	}
	/*
	 * At --max-conns: evict for it. insert_evict does not recycle, so
	 * it comes second, for a tuple that was absent (the kernel holds our
	 * socket's tuple: nobody can insert it meanwhile).
	 */
	if (err == -ENOSPC) {
		err = conntab_insert_evict(table, &c->node, &key, conn_rank,
					   &now, &old);
		if (!err && old)
			conn_evicted(old);
	}
	rcu_read_unlock();
	/*
	 * -ENOSPC: the sample offered no entry (insert_evict skips the
	 * locks it finds busy). -EEXIST: the tuple's previous connection is
	 * closed in the kernel, but the loop that owns it has not seen that
	 * yet; the client will retry.
	 */
	if (err)
		goto refuse;
	COUNT(accepted, 1);
	/* Evicted already? Its loop (we) closes it after this batch. */
	ev.data.ptr = c;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	return;
refuse:
	COUNT(refused, 1);
	if (c)
		free(c->tw);
	free(c);	/* never published */
	close(fd);
}

/* The peer is done: leave a TIME_WAIT entry, drop the connection. */
static void conn_close(struct conn *c)
{
	int open = CONN_OPEN;

	/* Evicted meanwhile: loop_drain() closes it. */
	if (!__atomic_compare_exchange_n(&c->fate, &open, CONN_CLOSING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	c->tw->born_ns = c->born_ns;
	c->tw->closed_ns = now_ns();
	c->tw->bytes_in = c->bytes_in;
	c->tw->bytes_out = c->bytes_out;
	/* -ENOENT: an evictor unlinked it (and counted it) just now. */
	if (!conntab_timewait(table, &c->node, &c->tw->node)) {
		c->tw = NULL;	/* the table's now */
		COUNT(closed, 1);
	}
	conn_drop(c);
}

/* "127.0.0.1:80" or "[::1]:80" */
static void fmt_addr(char *buf, size_t len, const struct conntab_key *k,
		     const union conntab_addr *a, uint16_t port)
{
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(k->family, a, ip, sizeof(ip));
	snprintf(buf, len, k->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip,
		 ntohs(port));
}

struct walk_ctx {
	FILE *f;
	uint64_t now;
	int n;
};

/* conntab_walk callback for /conns, under the RCU read lock. */
static int conn_json(struct conntab_node *n, void *arg)
{
	const struct conntab_key *k = conntab_node_key(n);
	int est = conntab_node_state(n) == CONNTAB_ESTABLISHED;
	struct walk_ctx *w = arg;
	uint64_t born, in, out;
	char l[64], r[64];

	if (est) {
		struct conn *c = conntab_entry(n, struct conn, node);

		born = c->born_ns;
		in = __atomic_load_n(&c->bytes_in, __ATOMIC_RELAXED);
		out = __atomic_load_n(&c->bytes_out, __ATOMIC_RELAXED);
	} else {
		struct tw *tw = conntab_entry(n, struct tw, node);

		born = tw->born_ns;
		in = tw->bytes_in;
		out = tw->bytes_out;
	}
	fmt_addr(l, sizeof(l), k, &k->laddr, k->lport);
	fmt_addr(r, sizeof(r), k, &k->raddr, k->rport);
	fprintf(w->f, "%s\n  {\"local\": \"%s\", \"remote\": \"%s\", "
		"\"state\": \"%s\", \"age_ms\": %" PRIu64 ", "
		"\"bytes_in\": %" PRIu64 ", \"bytes_out\": %" PRIu64 "}",
		w->n++ ? "," : "", l, r, est ? "ESTABLISHED" : "TIME_WAIT",
		/* Accepted by another loop since we read the clock: 0. */
		w->now > born ? (w->now - born) / MS : 0, in, out);
	return 0;
}

static void stats_json(FILE *f)
{
	struct conntab_stats st;

	conntab_stats(table, &st);
	fprintf(f, "{\"backend\": \"%s\", \"max_conns\": %zu, "
		"\"entries\": %zu, \"established\": %zu, \"timewait\": %zu, "
		"\"buckets\": %zu, \"memory\": %zu, \"max_depth\": %zu, "
		"\"resizes\": %zu,\n \"accepted\": %" PRIu64 ", "
		"\"requests\": %" PRIu64 ", \"closed\": %" PRIu64 ", "
		"\"expired\": %" PRIu64 ", \"recycled\": %" PRIu64 ", "
		"\"refused\": %" PRIu64 ", \"evicted\": %" PRIu64 ", "
		"\"evicted_established\": %" PRIu64 "}\n",
		conntab_backend_name(opt.backend), opt.max_conns, st.entries,
		st.entries - st.timewait, st.timewait, st.buckets, st.memory,
		st.max_depth, st.resizes, COUNTER(accepted), COUNTER(requests),
		COUNTER(closed), COUNTER(expired), COUNTER(recycled),
		COUNTER(refused), COUNTER(evicted), COUNTER(evicted_est));
}

/* Queue one response on @c. */
static int respond(struct conn *c, const char *status, const char *type,
		   const char *body, size_t len)
{
	char head[256];
	int hl;
	char *p;

	hl = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\n"
		      "Content-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
		      status, type, len,
		      c->close_after ? "Connection: close\r\n" : "");
	p = realloc(c->out, c->out_len + (size_t)hl + len);
	if (!p)
		return -1;
	memcpy(p + c->out_len, head, (size_t)hl);
	memcpy(p + c->out_len + hl, body, len);
	c->out = p;
	c->out_len += (size_t)hl + len;
	return 0;
}

/* Answer one request whose header ends at @end (exclusive). */
static int serve(struct conn *c, char *end)
{
	const char *status = "200 OK", *type = "application/json";
	struct walk_ctx w = { NULL, now_ns(), 0 };
	char path[64], ver[16], *body = NULL;
	size_t len = 0;
	int err;

	*end = '\0';
	if (strcasestr(c->in, "\r\nConnection: close"))
		c->close_after = 1;
	COUNT(requests, 1);
	if (strncmp(c->in, "GET ", 4)) {
		c->close_after = 1;
		return respond(c, "405 Method Not Allowed", "text/plain",
			       "GET only\n", 9);
	}
	if (sscanf(c->in, "GET %63s HTTP/1.%15s", path, ver) != 2) {
		c->close_after = 1;
		return respond(c, "400 Bad Request", "text/plain", "", 0);
	}
	w.f = open_memstream(&body, &len);
	if (!w.f)
		return -1;
	if (!strcmp(path, "/conns")) {
		fputs("[", w.f);
		/* Other threads' connections: valid until the unlock. */
		rcu_read_lock();
		conntab_walk(table, conn_json, &w);
		rcu_read_unlock();
		fputs("\n]\n", w.f);
	} else if (!strcmp(path, "/stats")) {
		stats_json(w.f);
	} else if (!strcmp(path, "/")) {
		char key[128];

		conntab_key_format(conntab_node_key(&c->node), key,
				   sizeof(key));
		fprintf(w.f, "tcp-conntrack (%s): you are %s\n",
			conntab_backend_name(opt.backend), key);
		type = "text/plain";
	} else {
		fputs("not found\n", w.f);
		status = "404 Not Found";
		type = "text/plain";
	}
	fclose(w.f);
	err = respond(c, status, type, body, len);
	free(body);
	return err;
}

/* Write what is queued; 1 when the connection is done with. */
static int flush(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0)
			return errno != EAGAIN;	/* EPOLLOUT calls again */
		c->out_off += (size_t)n;
		__atomic_add_fetch(&c->bytes_out, n, __ATOMIC_RELAXED);
		conn_touch(c);
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return c->close_after;
}

/*
 * Edge-triggered: read until EAGAIN, answering each complete request.
 * 1 when the connection is done with (peer closed, error, or answered
 * with Connection: close).
 */
static int conn_input(struct conn *c)
{
	char *end;
	ssize_t n;

	if (c->close_after)	/* answered for the last time: drain only */
		return flush(c);
	for (;;) {
		n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
		if (n < 0 && errno == EAGAIN)
			return flush(c);
		if (n <= 0)
			return 1;
		__atomic_add_fetch(&c->bytes_in, n, __ATOMIC_RELAXED);
		conn_touch(c);
		c->in_len += (size_t)n;
		while (!c->close_after &&
		       (end = memmem(c->in, c->in_len, "\r\n\r\n", 4))) {
			size_t used = (size_t)(end + 4 - c->in);

			if (serve(c, end))
				return 1;
			memmove(c->in, c->in + used, c->in_len - used);
			c->in_len -= used;
		}
		if (c->in_len == sizeof(c->in)) {	/* header too long */
			c->close_after = 1;
			respond(c, "431 Request Header Fields Too Large",
				"text/plain", "", 0);
		}
		if (c->close_after)
			return flush(c);
	}
}

static void *loop_run(void *arg)
{
	struct epoll_event ev[64], e = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	struct loop *l = arg;
	int ep, i, n, fd;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return NULL;
	/* A connection on the listener the loops share wakes one loop. */
	e.data.ptr = &listen_tag;
	epoll_ctl(ep, EPOLL_CTL_ADD, l->lfd, &e);
	e.events = EPOLLIN;
	e.data.ptr = &l->wake_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, l->wake_fd, &e);
	e.data.ptr = NULL;	/* stop_fd */
	epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &e);
	/*
	 * Registered: /conns walks read other threads' connections, and
	 * evictions (conn_open) hold the read lock.
	 */
	rcu_register_thread();
	for (;;) {
		n = epoll_wait(ep, ev, 64, -1);
		for (i = 0; i < n; i++) {
			struct conn *c = ev[i].data.ptr;

			if (!c)
				goto out;
			if (c == (void *)&listen_tag) {
				while ((fd = accept4(l->lfd, NULL, NULL,
						     SOCK_NONBLOCK |
						     SOCK_CLOEXEC)) >= 0)
					conn_open(l, ep, fd);
				continue;
			}
			if (c == (void *)&l->wake_fd) {
				eventfd_read(l->wake_fd, &(eventfd_t){ 0 });
				continue;	/* loop_drain() below */
			}
			/* Evicted: left as it is for loop_drain(). */
			if (__atomic_load_n(&c->fate, __ATOMIC_RELAXED) !=
			    CONN_OPEN)
				continue;
			if ((ev[i].events & (EPOLLERR | EPOLLHUP)) ||
			    ((ev[i].events & EPOLLIN) ? conn_input(c) :
			     flush(c)))
				conn_close(c);
		}
		/*
		 * Only between batches: an evicted conn may still have an
		 * event in this one, which must not meet a closed conn.
		 */
		loop_drain(l);
	}
out:
	/*
	 * Connections still open stay in the table for destroy; evicted
	 * ones pushed on us from now on are main's to close.
	 */
	rcu_unregister_thread();
	close(ep);
	return NULL;
}

/*
 * Scan callback of the reaper: expire TIME_WAIT entries, pass the others.
 *
 * Why a scan (conntab_scan()) and not a walk of the TIME_WAIT entries
 * (conntab_walk_state()): a walk is one read-side section over the whole
 * table, and while it lasts no grace period ends, so no call_rcu() free
 * runs: not the 4 KiB conns closed meanwhile, nor the victims of
 * evictions, which come fastest exactly when the table is full. A scan
 * call holds the read lock for --scan-budget entries at most. The price:
 * CONNTAB_SPLIT keeps TIME_WAIT chains apart, so its walk_state would not
 * visit established entries at all; the scan visits them, one state load
 * each, on the line it reads anyway.
 */
static int expire_one(struct conntab_node *n, void *arg)
{
	struct tw *tw = conntab_entry(n, struct tw, node);
	uint64_t now = *(uint64_t *)arg;

	if (conntab_node_state(n) != CONNTAB_TIMEWAIT)
		return 0;
	/*
	 * age(): a loop may have closed it after our clock was read. Then
	 * -ENOENT: a new connection recycled or evicted it, and frees it.
	 */
	if ((uint64_t)age(now, tw->closed_ns) >= opt.tw_ns &&
	    !conntab_remove(table, n)) {
		call_rcu(&tw->rcu, tw_free);
		COUNT(expired, 1);
	}
	return 0;
}

/*
 * A pass is conntab_scan() calls a millisecond apart, each in a read-side
 * section of its own, the cursor carried across them; the next pass
 * starts a quarter of --time-wait (10 ms to 1 s) after one ends.
 */
static void *reaper_run(void *arg)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	int ms = (int)(opt.tw_ns / 4 / MS), wait = 0, ret;
	struct conntab_cursor cur = { { 0 } };
	uint64_t now;

	ms = ms < 10 ? 10 : ms > 1000 ? 1000 : ms;
	rcu_register_thread();
	while (poll(&pfd, 1, wait) <= 0) {
		now = now_ns();
		rcu_read_lock();
		ret = conntab_scan(table, &cur, opt.scan_budget, expire_one,
				   &now);
		rcu_read_unlock();
		if (ret < 0) {
			/* No expiry, no server: stop with an error. */
			fprintf(stderr, "tcp-conntrack: conntab_scan: %s\n",
				strerror(-ret));
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			kill(getpid(), SIGTERM);
			break;
		}
		wait = ret ? ms : 1;
	}
	rcu_unregister_thread();
	return NULL;
}

static size_t left_open, left_tw;

/* conntab_destroy() hands back what is still in the table: no readers. */
static void release(struct conntab_node *n)
{
	if (conntab_node_state(n) == CONNTAB_ESTABLISHED) {
		struct conn *c = conntab_entry(n, struct conn, node);

		close(c->fd);
		free(c->out);
		free(c->tw);
		free(c);
		left_open++;
	} else {
		free(conntab_entry(n, struct tw, node));
		left_tw++;
	}
}

/*
 * The loops' listeners on one port (the first picks it for --port 0). By
 * default one socket, without SO_REUSEPORT, that every loop shares (a dup
 * each, for its own close): the kernel then refuses the port if another
 * server listens on it, and the port to anyone else while we do.
 * SO_REUSEADDR only lets a restart bind over the TIME_WAIT connections
 * of the last run. With --reuseport, a listener per loop, each with
 * SO_REUSEPORT.
 */
static int open_listeners(struct loop *l, struct sockaddr_storage *addr)
{
	socklen_t len = addr->ss_family == AF_INET ?
		sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int i, one = 1;

	for (i = 0; i < opt.threads; i++) {
		if (i && !opt.reuseport) {
			l[i].lfd = fcntl(l[0].lfd, F_DUPFD_CLOEXEC, 0);
			if (l[i].lfd < 0)
				return -1;
			continue;
		}
		l[i].lfd = socket(addr->ss_family,
				  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				  0);
		if (l[i].lfd < 0 ||
		    setsockopt(l[i].lfd, SOL_SOCKET, SO_REUSEADDR, &one,
			       sizeof(one)) ||
		    (opt.reuseport &&
		     setsockopt(l[i].lfd, SOL_SOCKET, SO_REUSEPORT, &one,
				sizeof(one))) ||
		    bind(l[i].lfd, (struct sockaddr *)addr, len) ||
		    getsockname(l[i].lfd, (struct sockaddr *)addr, &len) ||
		    listen(l[i].lfd, 1024))
			return -1;
	}
	return 0;
}

static const char usage[] =
	"usage: tcp-conntrack --port N [options]\n"
	"       tcp-conntrack --list-backends\n"
	"An epoll HTTP server that tracks its TCP connections in a conntab\n"
	"table: GET / (your key), /conns (JSON), /stats (JSON).\n"
	"  --port N            TCP port, 0-65535 (0: a free one, printed)\n"
	"  --bind ADDR         numeric IPv4 or IPv6 address (127.0.0.1)\n"
	"  --backend NAME      the table's backend (chained)\n"
	"  --threads N         epoll loops, 1-256 (2)\n"
	"  --reuseport         a listener per loop (SO_REUSEPORT); other\n"
	"                      servers with --reuseport may share the port\n"
	"  --time-wait MS      TIME_WAIT to removal, 1-604800000 (60000)\n"
	"  --max-conns N       table cap, 0-16777216 (0: none); evicts\n"
	"  --scan-budget N     entries per reaper call, 1-1048576 (1024)\n"
	"  --list-backends     the backends of this library, one a line\n"
	"  --help              this text\n"
	"SIGINT or SIGTERM stops.\n";

/* A week, in ms: any longer is surely a typo. */
#define MAX_MS		604800000ull

static void parse_options(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "backend", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 't' },
		{ "bind", required_argument, NULL, 'a' },
		{ "reuseport", no_argument, NULL, 'r' },
		{ "time-wait", required_argument, NULL, 'w' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "scan-budget", required_argument, NULL, 's' },
		{ "list-backends", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = args_next(argc, argv, lopts)) != -1) {
		switch (c) {
		case 'p':
			opt.port = (int)args_num("--port", optarg, 0, 65535,
						 "a port");
			break;
		case 't':
			opt.threads = (int)args_num("--threads", optarg, 1,
						    256, "a thread count");
			break;
		case 'a': opt.bind = optarg; break;
		case 'r': opt.reuseport = 1; break;
		case 'w':
			opt.tw_ns = args_num("--time-wait", optarg, 1, MAX_MS,
					     "a time in ms") * MS;
			break;
		case 'm':
			opt.max_conns = args_num("--max-conns", optarg, 0,
						 1 << 24,
						 "a connection count");
			break;
		case 's':
			opt.scan_budget = args_num("--scan-budget", optarg, 1,
						   1 << 20, "an entry count");
			break;
		case 'b':
			opt.backend = args_backend("--backend", optarg);
			break;
		case 'l':
			args_list_backends();
		case 'h':
			args_help(usage);
		}
	}
	args_end(argc, argv);
	if (opt.port < 0)
		args_fail("--port", "missing (0 picks a free port)");
}

int main(int argc, char **argv)
{
	struct conntab_config cfg = { 0 };
	struct sockaddr_storage addr;
	struct signalfd_siginfo si;
	pthread_t reaper;
	struct loop *l;
	sigset_t sigs;
	int i, sfd;

	parse_options(argc, argv);
	args_addr("--bind", opt.bind, (unsigned short)opt.port, &addr);

	/*
	 * Signals arrive on a signalfd read by main, never in a handler:
	 * block them before any thread starts so that all inherit the mask.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sfd < 0 || stop_fd < 0) {
		perror("tcp-conntrack: signalfd/eventfd");
		return 1;
	}

	/* The port first: no table for a server that cannot have it. */
	l = calloc((size_t)opt.threads, sizeof(*l));
	if (!l) {
		perror("tcp-conntrack: calloc");
		return 1;
	}
	if (open_listeners(l, &addr)) {
		/* Not a usage error: the port is taken, or not ours to take. */
		fprintf(stderr, "tcp-conntrack: port %d on %s: %s%s\n",
			opt.port, opt.bind, strerror(errno),
			errno != EADDRINUSE ? "" : opt.reuseport ?
			" (and not shared: the server that has it did not "
			"ask for --reuseport)" :
			" (another server has it; --reuseport shares a port "
			"between servers that all ask for it)");
		free(l);
		return 1;
	}
	for (i = 0; i < opt.threads; i++) {
		l[i].wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (l[i].wake_fd < 0) {
			perror("tcp-conntrack: eventfd");
			free(l);
			return 1;
		}
	}

	rcu_register_thread();
	cfg.backend = opt.backend;
	cfg.expected = opt.max_conns ? opt.max_conns : 4096;
	cfg.max_entries = opt.max_conns;
	table = conntab_create(&cfg);
	if (!table) {
		perror("tcp-conntrack: conntab_create");
		free(l);
		return 1;
	}
	/* sin_port and sin6_port sit at the same offset. */
	printf("tcp-conntrack: listening on %s port %d, backend %s, "
	       "%d threads%s\n",
	       opt.bind, ntohs(((struct sockaddr_in *)&addr)->sin_port),
	       conntab_backend_name(opt.backend), opt.threads,
	       opt.reuseport ? ", SO_REUSEPORT" : "");
	fflush(stdout);

	for (i = 0; i < opt.threads; i++)
		pthread_create(&l[i].tid, NULL, loop_run, &l[i]);
	pthread_create(&reaper, NULL, reaper_run, NULL);

	/* Sleep until SIGINT or SIGTERM. */
	while (read(sfd, &si, sizeof(si)) < 0 && errno == EINTR)
		;

	/* Stop: every thread polls stop_fd, which now stays readable. */
	eventfd_write(stop_fd, 1);
	for (i = 0; i < opt.threads; i++) {
		pthread_join(l[i].tid, NULL);
		close(l[i].lfd);
	}
	pthread_join(reaper, NULL);
	/* No evictor runs any more: close what the loops left evicted. */
	for (i = 0; i < opt.threads; i++) {
		loop_drain(&l[i]);
		close(l[i].wake_fd);
	}

	/* No thread uses the table now; then let pending call_rcu run. */
	conntab_destroy(table, release);
	rcu_barrier();
	rcu_unregister_thread();
	printf("tcp-conntrack: totals: accepted %" PRIu64 " requests %" PRIu64
	       " closed %" PRIu64 " expired %" PRIu64 " recycled %" PRIu64
	       " refused %" PRIu64 " evicted %" PRIu64 " evicted_established %"
	       PRIu64 " open %zu timewait %zu\n",
	       cnt.accepted, cnt.requests, cnt.closed, cnt.expired,
	       cnt.recycled, cnt.refused, cnt.evicted, cnt.evicted_est,
	       left_open, left_tw);
	free(l);
	close(sfd);
	close(stop_fd);
	return failed;
}
