/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp-conntrack: an epoll HTTP server that tracks its TCP connections.
 *
 * Every accepted connection is registered in one table shared by all
 * threads, keyed by its 4-tuple (getsockname/getpeername). Each thread
 * runs its own epoll loop on its own SO_REUSEPORT listener. A closed
 * connection leaves a small TIME_WAIT entry behind, which a reaper thread
 * removes once --time-wait has passed. Three endpoints:
 *
 *   GET /       a line naming the connection's own key
 *   GET /conns  the tracked connections as JSON (4-tuple, state, age, bytes)
 *   GET /stats  the table's stats and the server's counters as JSON
 *
 *   tcp-conntrack --port N [--backend NAME] [--threads N] [--bind ADDR]
 *                 [--time-wait MS] [--max-conns N]
 *   tcp-conntrack --list-backends
 *
 * --port 0 picks a free port; the first line on stdout names it. SIGINT
 * or SIGTERM stops the server, which then prints its totals.
 *
 * Build against an installed library:
 *   cc tcp-conntrack.c $(pkg-config --cflags --libs conntab liburcu) \
 *      -o tcp-conntrack
 */
#define _GNU_SOURCE		/* accept4, open_memstream, strcasestr */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
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

#define MS		((uint64_t)1000000)	/* a millisecond in ns */

/*
 * A node's state tells which object holds it: an ESTABLISHED node is in
 * a struct conn, a TIMEWAIT node in a struct tw. A closing connection
 * swaps a tw in (conntab_timewait) rather than flipping its own state, so
 * the 4 KiB buffer and the descriptor go at once and only ~110 bytes stay
 * for the time-wait period. (udp-flowd shows the in-place flip.)
 */
struct conn {
	struct conntab_node node;
	struct rcu_head rcu;
	uint64_t born_ns;
	/* Written by the owning loop, read by any /conns walk: atomics. */
	uint64_t bytes_in, bytes_out;
	/* The owning loop's only. */
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

/* Server counters, bumped by every thread (relaxed: only ever summed). */
static struct {
	uint64_t accepted, requests, closed, expired, recycled, refused;
} cnt;
#define COUNT(f, n)	__atomic_add_fetch(&cnt.f, (n), __ATOMIC_RELAXED)
#define COUNTER(f)	__atomic_load_n(&cnt.f, __ATOMIC_RELAXED)

static struct {
	const char *bind;
	int port;
	int threads;
	enum conntab_backend backend;
	uint64_t tw_ns;
	size_t max_conns;
} opt = { "127.0.0.1", -1, 2, CONNTAB_CHAINED, 60000 * MS, 0 };

static struct conntab *table;
static int stop_fd;		/* eventfd: readable once we are stopping */
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

/* Register an accepted socket; closes it if the table refuses. */
static void conn_open(int ep, int fd)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET };
	struct conntab_node *old;
	struct conntab_key key;
	struct conn *c = NULL;

	if (getsockname(fd, (struct sockaddr *)&local, &llen) ||
	    getpeername(fd, (struct sockaddr *)&remote, &rlen) ||
	    conntab_key_from_sockaddr(&key, IPPROTO_TCP,
				      (struct sockaddr *)&local,
				      (struct sockaddr *)&remote))
		goto refuse;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto refuse;
	conntab_node_init(&c->node);
	c->fd = fd;
	c->born_ns = now_ns();
	/*
	 * A new connection may reuse the 4-tuple of one still in TIME_WAIT
	 * (the peer reused its port): recycle swaps it out in one step and
	 * hands it to us to free. Should the reaper's conntab_remove() of
	 * that entry race with us, exactly one of the two succeeds.
	 *
	 * -ENOSPC: --max-conns reached. -EEXIST: the tuple's previous
	 * connection is closed in the kernel, but the loop that owns it has
	 * not seen that yet; the client will retry.
	 */
	if (conntab_insert_recycle(table, &c->node, &key, &old))
		goto refuse;
	if (old) {
		call_rcu(&conntab_entry(old, struct tw, node)->rcu, tw_free);
		COUNT(recycled, 1);
	}
	COUNT(accepted, 1);
	ev.data.ptr = c;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	return;
refuse:
	COUNT(refused, 1);
	free(c);	/* never published */
	close(fd);
}

/* Leave a TIME_WAIT entry, drop the connection; @c is gone after this. */
static void conn_close(struct conn *c)
{
	struct tw *tw = calloc(1, sizeof(*tw));

	if (tw) {
		conntab_node_init(&tw->node);
		tw->born_ns = c->born_ns;
		tw->closed_ns = now_ns();
		tw->bytes_in = c->bytes_in;
		tw->bytes_out = c->bytes_out;
	}
	/* Without memory for a tw, forget the connection outright. */
	if (!tw || conntab_timewait(table, &c->node, &tw->node)) {
		free(tw);
		conntab_remove(table, &c->node);
	}
	COUNT(closed, 1);
	close(c->fd);
	free(c->out);	/* the owner's alone: walkers never read it */
	/* A /conns walk in another thread may still be reading @c. */
	call_rcu(&c->rcu, conn_free);
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
	fprintf(f, "{\"backend\": \"%s\", \"entries\": %zu, "
		"\"established\": %zu, \"timewait\": %zu, \"buckets\": %zu, "
		"\"memory\": %zu, \"max_depth\": %zu, \"resizes\": %zu,\n "
		"\"accepted\": %" PRIu64 ", \"requests\": %" PRIu64 ", "
		"\"closed\": %" PRIu64 ", \"expired\": %" PRIu64 ", "
		"\"recycled\": %" PRIu64 ", \"refused\": %" PRIu64 "}\n",
		conntab_backend_name(opt.backend), st.entries,
		st.entries - st.timewait, st.timewait, st.buckets, st.memory,
		st.max_depth, st.resizes, COUNTER(accepted), COUNTER(requests),
		COUNTER(closed), COUNTER(expired), COUNTER(recycled),
		COUNTER(refused));
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

struct loop {
	pthread_t tid;
	int lfd;		/* this loop's SO_REUSEPORT listener */
};

static void *loop_run(void *arg)
{
	struct epoll_event ev[64], e = { .events = EPOLLIN };
	struct loop *l = arg;
	int ep, i, n, fd;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return NULL;
	e.data.ptr = &listen_tag;
	epoll_ctl(ep, EPOLL_CTL_ADD, l->lfd, &e);
	e.data.ptr = NULL;	/* stop_fd */
	epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &e);
	/* Registered: /conns walks read other threads' connections. */
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
					conn_open(ep, fd);
				continue;
			}
			if ((ev[i].events & (EPOLLERR | EPOLLHUP)) ||
			    ((ev[i].events & EPOLLIN) ? conn_input(c) :
			     flush(c)))
				conn_close(c);
		}
	}
out:
	/* Connections still open stay in the table for destroy. */
	rcu_unregister_thread();
	close(ep);
	return NULL;
}

/* conntab_walk_state callback of the reaper: TIME_WAIT entries only. */
static int expire_one(struct conntab_node *n, void *arg)
{
	struct tw *tw = conntab_entry(n, struct tw, node);
	uint64_t now = *(uint64_t *)arg;

	/* -ENOENT: a new connection recycled it, and frees it. */
	if (now - tw->closed_ns >= opt.tw_ns && !conntab_remove(table, n)) {
		call_rcu(&tw->rcu, tw_free);
		COUNT(expired, 1);
	}
	return 0;
}

static void *reaper_run(void *arg)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	int ms = (int)(opt.tw_ns / 4 / MS);
	uint64_t now;

	ms = ms < 10 ? 10 : ms > 1000 ? 1000 : ms;
	rcu_register_thread();
	while (poll(&pfd, 1, ms) <= 0) {
		now = now_ns();
		/* Backends that keep TIME_WAIT apart skip the live ones. */
		rcu_read_lock();
		conntab_walk_state(table, CONNTAB_TIMEWAIT, expire_one, &now);
		rcu_read_unlock();
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
		free(c);
		left_open++;
	} else {
		free(conntab_entry(n, struct tw, node));
		left_tw++;
	}
}

/* Listeners share one port; the first picks it if --port 0. */
static int open_listener(struct loop *l, struct sockaddr_storage *addr)
{
	socklen_t len = addr->ss_family == AF_INET ?
		sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int one = 1;

	l->lfd = socket(addr->ss_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->lfd < 0 ||
	    setsockopt(l->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(l->lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(l->lfd, (struct sockaddr *)addr, len) ||
	    getsockname(l->lfd, (struct sockaddr *)addr, &len) ||
	    listen(l->lfd, 1024))
		return -1;
	return 0;
}

/* --bind and --port as a socket address; numeric only, no DNS. */
static int parse_addr(struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
	}, *ai;
	char port[8];

	snprintf(port, sizeof(port), "%d", opt.port);
	if (getaddrinfo(opt.bind, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcp-conntrack --port N [--backend NAME] "
		"[--threads N] [--bind ADDR]\n"
		"                     [--time-wait MS] [--max-conns N]\n"
		"       tcp-conntrack --list-backends\n");
	exit(2);
}

static void parse_options(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "backend", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 't' },
		{ "bind", required_argument, NULL, 'a' },
		{ "time-wait", required_argument, NULL, 'w' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "list-backends", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int c, b;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'p': opt.port = atoi(optarg); break;
		case 't': opt.threads = atoi(optarg); break;
		case 'a': opt.bind = optarg; break;
		case 'w': opt.tw_ns = strtoull(optarg, NULL, 10) * MS; break;
		case 'm': opt.max_conns = strtoull(optarg, NULL, 10); break;
		case 'b':
			b = conntab_backend_from_name(optarg);
			if (b < 0 || !conntab_backend_available(b)) {
				fprintf(stderr,
					"tcp-conntrack: no backend %s\n",
					optarg);
				exit(2);
			}
			opt.backend = (enum conntab_backend)b;
			break;
		case 'l':
			/* What this build of the library has, one a line. */
			for (b = CONNTAB_CHAINED;
			     strcmp(conntab_backend_name(b), "unknown"); b++)
				if (conntab_backend_available(b))
					puts(conntab_backend_name(b));
			exit(0);
		default:
			usage();
		}
	}
	if (optind < argc || opt.port < 0 || opt.port > 65535 ||
	    opt.threads < 1 || opt.threads > 256 || !opt.tw_ns)
		usage();
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
	if (parse_addr(&addr)) {
		fprintf(stderr, "tcp-conntrack: bad address %s\n", opt.bind);
		return 2;
	}

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

	rcu_register_thread();
	cfg.backend = opt.backend;
	cfg.expected = opt.max_conns ? opt.max_conns : 4096;
	cfg.max_entries = opt.max_conns;
	table = conntab_create(&cfg);
	l = calloc((size_t)opt.threads, sizeof(*l));
	if (!table || !l) {
		perror("tcp-conntrack: conntab_create");
		return 1;
	}
	for (i = 0; i < opt.threads; i++) {
		if (open_listener(&l[i], &addr)) {
			perror("tcp-conntrack: listen");
			return 1;
		}
	}
	/* sin_port and sin6_port sit at the same offset. */
	printf("tcp-conntrack: listening on %s port %d, backend %s, "
	       "%d threads\n",
	       opt.bind, ntohs(((struct sockaddr_in *)&addr)->sin_port),
	       conntab_backend_name(opt.backend), opt.threads);
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

	/* No thread uses the table now; then let pending call_rcu run. */
	conntab_destroy(table, release);
	rcu_barrier();
	rcu_unregister_thread();
	printf("tcp-conntrack: totals: accepted %" PRIu64 " requests %" PRIu64
	       " closed %" PRIu64 " expired %" PRIu64 " recycled %" PRIu64
	       " refused %" PRIu64 " open %zu timewait %zu\n",
	       cnt.accepted, cnt.requests, cnt.closed, cnt.expired,
	       cnt.recycled, cnt.refused, left_open, left_tw);
	free(l);
	close(sfd);
	close(stop_fd);
	return 0;
}
