/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udp-flowd: sessions over UDP, the way QUIC, DTLS and game servers split
 * one port into connections.
 *
 * Worker threads receive on the server's UDP socket. Each datagram's
 * 4-tuple is looked up, lock-free under RCU, in one table that all
 * workers share; an unknown tuple starts a session. A session counts
 * its datagrams and echoes each payload back behind its own sequence
 * number: "<seq> <payload>". A reaper thread moves idle sessions to
 * TIME_WAIT and removes them when that has run out, a slice of the table
 * at a time (conntab_scan()). When the table is full (--max-sessions), a
 * new tuple evicts a sampled session (conntab_insert_evict()): one in
 * TIME_WAIT first, else the idlest, never an assured one (a session that
 * has had --assure datagrams), as the kernel's conntrack drops early.
 *
 *   udp-flowd --port N [--backend NAME] [--threads N] [--bind ADDR]
 *             [--reuseport] [--idle MS] [--time-wait MS]
 *             [--max-sessions N] [--assure N] [--scan-budget N]
 *   udp-flowd --list-backends
 *   udp-flowd --help
 *
 * Defaults: --idle 30000, --time-wait 5000, no --max-sessions, --assure 8
 * (0: no session is ever assured), --scan-budget 1024 sessions per reaper
 * call. --port 0 picks a free port; the first line on stdout names it.
 * SIGUSR1 prints the table's stats; SIGINT or SIGTERM stops the server,
 * which then prints its totals. A bad option is a one-line error and exit
 * status 2 (args.h).
 *
 * The port is the server's own: all workers wait on one socket (epoll,
 * EPOLLEXCLUSIVE: a datagram wakes one of them), and a port another
 * program holds is an error. --reuseport gives each worker a socket of
 * its own with SO_REUSEPORT instead, which the kernel spreads the tuples
 * over, and lets other servers started with --reuseport share the port;
 * each process then has its own table, and a session's datagrams may
 * reach another process's table (that is what asking for it means).
 *
 * Build against an installed library, beside args.h:
 *   cc udp-flowd.c $(pkg-config --cflags --libs conntab liburcu) -o udp-flowd
 */
#define _GNU_SOURCE		/* recvmmsg, sendmmsg */
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

#define ARGS_PROG "udp-flowd"
#include "args.h"

#define MS		((uint64_t)1000000)	/* a millisecond in ns */
#define BATCH		32	/* datagrams per recvmmsg and lookup batch */
#define MAX_PAYLOAD	1472	/* what fits an Ethernet frame over IPv4 */
#define MAX_REPLY	(MAX_PAYLOAD + 24)
/* Eviction ranks: any TIME_WAIT session before any established one. */
#define RANK_TIMEWAIT	(1L << 62)

/*
 * A session. Any worker may receive for any tuple (they share one socket;
 * with --reuseport the kernel's hash usually keeps a tuple on one, but not
 * while sockets come and go), so the counters are updated with atomics:
 * seq hands every datagram its own number even when two workers serve one
 * session at once. A worker's eviction ranks sessions under the table's
 * writer lock while others count on them: it reads seq, last_ns and
 * closed_ns with atomics too.
 */
struct session {
	struct conntab_node node;
	struct rcu_head rcu;	/* freed a grace period after unlinking */
	uint64_t seq;		/* datagrams so far: the reply's number */
	uint64_t bytes;		/* payload bytes received */
	uint64_t last_ns;	/* monotonic time of the last datagram */
	uint64_t closed_ns;	/* when it went to TIME_WAIT (the reaper's) */
};

struct worker {
	pthread_t tid;
	int fd;
	struct sockaddr_storage local;
	char in[BATCH][MAX_PAYLOAD];
	char out[BATCH][MAX_REPLY];
	/* Owned by this worker; summed by main after it has stopped. */
	uint64_t datagrams, bytes, created, races, recycled, refused;
};

/*
 * The reaper's pass over the table, one conntab_scan() call per tick. The
 * figures of the last complete pass are read by main for SIGUSR1: atomics.
 */
struct reaper {
	pthread_t tid;
	struct conntab_cursor cur;	/* where the pass stands */
	uint64_t now;
	uint64_t idled, expired;	/* owned by the reaper thread */
	uint64_t visits, calls;		/* of the pass in progress */
	uint64_t passes, last_visits, last_calls;	/* atomics */
};

static struct {
	const char *bind;
	int port;
	int threads;
	int reuseport;		/* a socket per worker, the port shared */
	enum conntab_backend backend;
	uint64_t idle_ns, tw_ns;
	size_t max_sessions;
	uint64_t assure;	/* datagrams that make a session assured */
	size_t scan_budget;	/* sessions per conntab_scan() call */
} opt = { "127.0.0.1", -1, 2, 0, CONNTAB_CHAINED,
	  30000 * MS, 5000 * MS, 0, 8, 1024 };

static struct conntab *table;
static int stop_fd;		/* eventfd: readable once we are stopping */
static uint64_t evicted;	/* sessions evicted (atomic: SIGUSR1) */
static int failed;		/* the reaper could not scan: exit 1 */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void session_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct session, rcu));
}

/* Nanoseconds from @since to @now, 0 if another thread's clock was ahead. */
static long age(uint64_t now, uint64_t since)
{
	uint64_t d = now > since ? now - since : 0;

	return d < (uint64_t)RANK_TIMEWAIT ? (long)d : RANK_TIMEWAIT - 1;
}

/*
 * conntab_insert_evict()'s rank, under the table's writer lock (short, no
 * blocking, no conntab calls): how willing we are to lose @n for a new
 * tuple. TIME_WAIT sessions are over already: first, the longest closed
 * first. An assured session never goes (-1): it has proven itself, so a
 * flood of one-datagram sources cannot push it out. Others by idle time.
 */
static long session_rank(struct conntab_node *n, void *arg)
{
	struct session *s = conntab_entry(n, struct session, node);
	uint64_t now = *(const uint64_t *)arg;

	if (conntab_node_state(n) == CONNTAB_TIMEWAIT)
		return RANK_TIMEWAIT + age(now, __atomic_load_n(&s->closed_ns,
							 __ATOMIC_RELAXED));
	if (opt.assure &&
	    __atomic_load_n(&s->seq, __ATOMIC_RELAXED) >= opt.assure)
		return -1;
	return age(now, __atomic_load_n(&s->last_ns, __ATOMIC_RELAXED));
}

/*
 * The established session of @key: @n if that is one (the batch lookup's
 * answer), else a new one. Caller holds the RCU read lock. NULL when the
 * table is full of assured sessions or memory ran out: the datagram is
 * dropped.
 *
 * Who frees a session: whoever unlinks it, through call_rcu(), since
 * readers may hold it. The library unlinks a node once, for one caller:
 * a worker that gets it back from insert_recycle (recycled) or from
 * insert_evict (evicted), or the reaper whose conntab_remove() succeeds.
 * Everyone else's call on it fails with -ENOENT (the reaper's remove or
 * timewait of a session a worker has just evicted) and leaves it alone.
 */
static struct session *session_get(struct worker *w, struct conntab_node *n,
				   const struct conntab_key *key, uint64_t now)
{
	struct conntab_node *old;
	struct session *s;
	int err;

	for (;;) {
		if (n && conntab_node_state(n) == CONNTAB_ESTABLISHED)
			return conntab_entry(n, struct session, node);
		s = calloc(1, sizeof(*s));
		if (!s) {
			w->refused++;
			return NULL;
		}
		conntab_node_init(&s->node);
		s->last_ns = now;
		/*
		 * A tuple in TIME_WAIT starts over as a new session (a QUIC
		 * server would answer with a stateless reset instead):
		 * insert_recycle swaps the new one in, so a concurrent lookup
		 * never misses the tuple, and hands back the old one.
		 */
		err = conntab_insert_recycle(table, &s->node, key, &old);
		if (!err && old)
			w->recycled++;
		/*
		 * At --max-sessions: evict a sampled session for the new
		 * one. insert_evict does not recycle, so it comes second,
		 * for a tuple that was absent; one inserted meanwhile makes
		 * it fail with -EEXIST, and we look again.
		 */
		if (err == -ENOSPC) {
			err = conntab_insert_evict(table, &s->node, key,
						   session_rank, &now, &old);
			if (!err && old)
				__atomic_add_fetch(&evicted, 1,
						   __ATOMIC_RELAXED);
		}
		if (!err) {
			w->created++;
			if (old)
				call_rcu(&conntab_entry(old, struct session,
							node)->rcu,
					 session_free);
			return s;
		}
		free(s);	/* never published: no grace period needed */
		if (err != -EEXIST) {
			/* -ENOSPC: every sampled session is assured. */
			w->refused++;
			return NULL;
		}
		/* Another worker started this session first: join it. */
		w->races++;
		n = conntab_lookup(table, key);
	}
}

/* Count one datagram on its session; the reply's number, 0 to drop it. */
static uint64_t session_account(struct worker *w, struct conntab_node *n,
				const struct conntab_key *key, size_t len,
				uint64_t now)
{
	struct session *s = session_get(w, n, key, now);

	if (!s)
		return 0;
	/*
	 * If the reaper has just moved the session to TIME_WAIT, or a
	 * worker has just evicted it, this datagram still counts on the old
	 * session: it arrived before that happened, and the read lock keeps
	 * the session alive. The next one finds the tuple in TIME_WAIT or
	 * absent and starts over.
	 */
	__atomic_add_fetch(&s->bytes, len, __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_ns, now, __ATOMIC_RELAXED);
	return __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELAXED);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct sockaddr_storage peer[BATCH];
	struct conntab_node *found[BATCH];
	struct conntab_key keys[BATCH];
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	uint64_t seq[BATCH], now;
	/*
	 * EPOLLEXCLUSIVE: a datagram on the socket the workers share wakes
	 * one of them, not all. stop_fd wakes every worker.
	 */
	struct epoll_event ev[2], in = {
		.events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = w->fd,
	}, stop = { .events = EPOLLIN, .data.fd = stop_fd };
	int i, n, m, ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &in) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &stop)) {
		perror("udp-flowd: epoll");
		exit(1);
	}
	rcu_register_thread();
	for (;;) {
		n = epoll_wait(ep, ev, 2, -1);
		if (n > 0 && (ev[0].data.fd == stop_fd ||
			      (n > 1 && ev[1].data.fd == stop_fd)))
			break;
		for (i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ w->in[i], MAX_PAYLOAD };
			msg[i].msg_hdr = (struct msghdr){
				.msg_name = &peer[i],
				.msg_namelen = sizeof(peer[i]),
				.msg_iov = &iov[i], .msg_iovlen = 1,
			};
		}
		n = recvmmsg(w->fd, msg, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			continue;
		/* A datagram arriving here: source -> remote, us -> local. */
		for (i = 0; i < n; i++)
			conntab_key_from_sockaddr(&keys[i], IPPROTO_UDP,
				(struct sockaddr *)&w->local,
				(struct sockaddr *)&peer[i]);

		/*
		 * One batch lookup for the whole burst overlaps the cache
		 * misses of its keys. The sessions found stay valid until
		 * rcu_read_unlock(), even if the reaper unlinks them.
		 */
		now = now_ns();
		rcu_read_lock();
		conntab_lookup_batch(table, keys, found, (size_t)n);
		for (i = 0; i < n; i++)
			seq[i] = session_account(w, found[i], &keys[i],
						 msg[i].msg_len, now);
		rcu_read_unlock();

		/* Replies reuse msg[] and iov[] in place: m <= i. */
		for (i = m = 0; i < n; i++) {
			int hl;

			w->datagrams++;
			w->bytes += msg[i].msg_len;
			if (!seq[i])
				continue;
			hl = snprintf(w->out[m], MAX_REPLY, "%" PRIu64 " ",
				      seq[i]);
			memcpy(w->out[m] + hl, w->in[i], msg[i].msg_len);
			iov[m] = (struct iovec){ w->out[m],
						 hl + msg[i].msg_len };
			msg[m].msg_hdr = (struct msghdr){
				.msg_name = &peer[i],
				.msg_namelen = msg[i].msg_hdr.msg_namelen,
				.msg_iov = &iov[m], .msg_iovlen = 1,
			};
			m++;
		}
		/* Replies are best effort, as UDP is: a full buffer drops. */
		if (m)
			sendmmsg(w->fd, msg, (unsigned int)m, MSG_DONTWAIT);
	}
	rcu_unregister_thread();
	close(ep);
	return NULL;
}

/*
 * Scan callback of the reaper, under the RCU read lock. TIME_WAIT is kept
 * in place here: a session is small and holds no resources, so flipping
 * its state (conntab_timewait(t, n, n)) costs nothing and keeps its
 * counters for a late datagram. (tcp-conntrack shows the other way: a
 * smaller object swapped in for a big connection.)
 */
static int reap_one(struct conntab_node *n, void *arg)
{
	struct session *s = conntab_entry(n, struct session, node);
	struct reaper *r = arg;

	r->visits++;
	if (conntab_node_state(n) == CONNTAB_ESTABLISHED) {
		/* age(): a worker may have stamped it after our clock. */
		if ((uint64_t)age(r->now, __atomic_load_n(&s->last_ns,
							 __ATOMIC_RELAXED)) <
		    opt.idle_ns)
			return 0;
		/* Before the flip: a rank that sees TIME_WAIT reads it. */
		__atomic_store_n(&s->closed_ns, r->now, __ATOMIC_RELAXED);
		/* -ENOENT: a worker evicted it, and frees it. */
		if (!conntab_timewait(table, n, n))
			r->idled++;
	} else if (r->now - s->closed_ns >= opt.tw_ns) {
		/* -ENOENT: a worker recycled or evicted it, and frees it. */
		if (!conntab_remove(table, n)) {
			call_rcu(&s->rcu, session_free);
			r->expired++;
		}
	}
	return 0;
}

/*
 * Expiry in slices: each tick is one conntab_scan() call of at most
 * --scan-budget sessions, in a read-side section of its own, so no grace
 * period (and no call_rcu free) ever waits for more than that, however
 * large the table. The cursor carries the pass from tick to tick. Ticks
 * follow each other a millisecond apart until the pass ends (as the
 * kernel's conntrack collector reschedules itself at once while its scan
 * is unfinished), then the next pass starts after a quarter of the
 * shorter timeout (10 ms to 1 s): a session expires at most that plus one
 * pass after its time.
 */
static void *reaper_run(void *arg)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	uint64_t tick = (opt.idle_ns < opt.tw_ns ? opt.idle_ns : opt.tw_ns) / 4;
	struct reaper *r = arg;
	int ms = (int)(tick / MS), wait = 0, ret;

	ms = ms < 10 ? 10 : ms > 1000 ? 1000 : ms;
	rcu_register_thread();
	while (poll(&pfd, 1, wait) <= 0) {
		r->now = now_ns();
		rcu_read_lock();
		ret = conntab_scan(table, &r->cur, opt.scan_budget, reap_one,
				   r);
		rcu_read_unlock();
		r->calls++;
		if (ret < 0) {
			/* No expiry, no server: stop with an error. */
			fprintf(stderr, "udp-flowd: conntab_scan: %s\n",
				strerror(-ret));
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			kill(getpid(), SIGTERM);
			break;
		}
		if (!ret) {		/* the pass goes on */
			wait = 1;
			continue;
		}
		__atomic_store_n(&r->last_visits, r->visits, __ATOMIC_RELAXED);
		__atomic_store_n(&r->last_calls, r->calls, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->passes, 1, __ATOMIC_RELAXED);
		r->visits = r->calls = 0;
		wait = ms;
	}
	rcu_unregister_thread();
	return NULL;
}

/* The table, the evictions, and the reaper's last complete pass. */
static void print_stats(struct reaper *r)
{
	struct conntab_stats st;

	conntab_stats(table, &st);
	printf("udp-flowd: stats: entries %zu timewait %zu buckets %zu "
	       "memory %zu max_depth %zu resizes %zu evicted %" PRIu64
	       " passes %" PRIu64 " (last: %" PRIu64 " sessions in %" PRIu64
	       " calls)\n", st.entries, st.timewait, st.buckets, st.memory,
	       st.max_depth, st.resizes,
	       __atomic_load_n(&evicted, __ATOMIC_RELAXED),
	       __atomic_load_n(&r->passes, __ATOMIC_RELAXED),
	       __atomic_load_n(&r->last_visits, __ATOMIC_RELAXED),
	       __atomic_load_n(&r->last_calls, __ATOMIC_RELAXED));
	fflush(stdout);
}

static size_t left;

/* conntab_destroy() hands back what is still in the table: no readers. */
static void session_release(struct conntab_node *n)
{
	left++;
	free(conntab_entry(n, struct session, node));
}

/*
 * The workers' sockets on one port (the first picks it for --port 0). By
 * default one socket, bound without SO_REUSEPORT, which every worker
 * shares (a dup each, for its own close): the kernel then refuses the
 * port if anyone has it, and anyone else the port while we have it. With
 * --reuseport, a socket per worker, each with SO_REUSEPORT.
 */
static int open_sockets(struct worker *w, struct sockaddr_storage *addr)
{
	socklen_t len = addr->ss_family == AF_INET ?
		sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int i, one = 1;

	for (i = 0; i < opt.threads; i++) {
		if (i && !opt.reuseport) {
			w[i].fd = fcntl(w[0].fd, F_DUPFD_CLOEXEC, 0);
			w[i].local = w[0].local;
			if (w[i].fd < 0)
				return -1;
			continue;
		}
		w[i].fd = socket(addr->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (w[i].fd < 0 ||
		    (opt.reuseport &&
		     setsockopt(w[i].fd, SOL_SOCKET, SO_REUSEPORT, &one,
				sizeof(one))) ||
		    bind(w[i].fd, (struct sockaddr *)addr, len) ||
		    getsockname(w[i].fd, (struct sockaddr *)&w[i].local, &len))
			return -1;
		memcpy(addr, &w[i].local, len);	/* the port the rest bind to */
	}
	return 0;
}

static const char usage[] =
	"usage: udp-flowd --port N [options]\n"
	"       udp-flowd --list-backends\n"
	"Sessions over UDP, tracked in a conntab table: each datagram is\n"
	"echoed behind its session's sequence number.\n"
	"  --port N            UDP port, 0-65535 (0: a free one, printed)\n"
	"  --bind ADDR         numeric IPv4 or IPv6 address (127.0.0.1)\n"
	"  --backend NAME      the table's backend (chained)\n"
	"  --threads N         worker threads, 1-256 (2)\n"
	"  --reuseport         a socket per worker (SO_REUSEPORT); other\n"
	"                      servers with --reuseport may share the port\n"
	"  --idle MS           idle time to TIME_WAIT, 1-604800000 (30000)\n"
	"  --time-wait MS      TIME_WAIT to removal, 1-604800000 (5000)\n"
	"  --max-sessions N    table cap, 0-16777216 (0: none); evicts\n"
	"  --assure N          datagrams that protect a session from\n"
	"                      eviction, 0-1000000 (8; 0: none do)\n"
	"  --scan-budget N     sessions per reaper call, 1-1048576 (1024)\n"
	"  --list-backends     the backends of this library, one a line\n"
	"  --help              this text\n"
	"SIGUSR1 prints the table's stats; SIGINT or SIGTERM stops.\n";

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
		{ "idle", required_argument, NULL, 'i' },
		{ "time-wait", required_argument, NULL, 'w' },
		{ "max-sessions", required_argument, NULL, 'm' },
		{ "assure", required_argument, NULL, 'A' },
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
		case 'i':
			opt.idle_ns = args_num("--idle", optarg, 1, MAX_MS,
					       "a time in ms") * MS;
			break;
		case 'w':
			opt.tw_ns = args_num("--time-wait", optarg, 1, MAX_MS,
					     "a time in ms") * MS;
			break;
		case 'm':
			opt.max_sessions = args_num("--max-sessions", optarg,
						    0, 1 << 24,
						    "a session count");
			break;
		case 'A':
			opt.assure = args_num("--assure", optarg, 0, 1000000,
					      "a datagram count");
			break;
		case 's':
			opt.scan_budget = args_num("--scan-budget", optarg, 1,
						   1 << 20, "a session count");
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
	struct reaper reaper = { 0 };
	struct signalfd_siginfo si;
	struct worker *w, sum = { 0 };
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
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sfd < 0 || stop_fd < 0) {
		perror("udp-flowd: signalfd/eventfd");
		return 1;
	}

	/* The port first: no table for a server that cannot have it. */
	w = calloc((size_t)opt.threads, sizeof(*w));
	if (!w) {
		perror("udp-flowd: calloc");
		return 1;
	}
	if (open_sockets(w, &addr)) {
		/* Not a usage error: the port is taken, or not ours to take. */
		fprintf(stderr, "udp-flowd: port %d on %s: %s%s\n", opt.port,
			opt.bind, strerror(errno), errno != EADDRINUSE ? "" :
			opt.reuseport ? " (and not shared: the server that "
			"has it did not ask for --reuseport)" :
			" (another server has it; --reuseport shares a port "
			"between servers that all ask for it)");
		free(w);
		return 1;
	}

	rcu_register_thread();
	cfg.backend = opt.backend;
	cfg.expected = opt.max_sessions ? opt.max_sessions : 4096;
	cfg.max_entries = opt.max_sessions;
	table = conntab_create(&cfg);
	if (!table) {
		perror("udp-flowd: conntab_create");
		free(w);
		return 1;
	}
	/* sin_port and sin6_port sit at the same offset. */
	printf("udp-flowd: listening on %s port %d, backend %s, "
	       "%d threads%s\n",
	       opt.bind, ntohs(((struct sockaddr_in *)&addr)->sin_port),
	       conntab_backend_name(opt.backend), opt.threads,
	       opt.reuseport ? ", SO_REUSEPORT" : "");
	fflush(stdout);

	for (i = 0; i < opt.threads; i++)
		pthread_create(&w[i].tid, NULL, worker_run, &w[i]);
	pthread_create(&reaper.tid, NULL, reaper_run, &reaper);

	while (read(sfd, &si, sizeof(si)) == sizeof(si) &&
	       si.ssi_signo == SIGUSR1)
		print_stats(&reaper);

	/* Stop: every thread polls stop_fd, which now stays readable. */
	eventfd_write(stop_fd, 1);
	for (i = 0; i < opt.threads; i++) {
		pthread_join(w[i].tid, NULL);
		close(w[i].fd);
		sum.datagrams += w[i].datagrams;
		sum.bytes += w[i].bytes;
		sum.created += w[i].created;
		sum.races += w[i].races;
		sum.recycled += w[i].recycled;
		sum.refused += w[i].refused;
	}
	pthread_join(reaper.tid, NULL);
	print_stats(&reaper);

	/* No thread uses the table now; then let pending call_rcu run. */
	conntab_destroy(table, session_release);
	rcu_barrier();
	rcu_unregister_thread();
	printf("udp-flowd: totals: datagrams %" PRIu64 " bytes %" PRIu64
	       " sessions %" PRIu64 " races %" PRIu64 " recycled %" PRIu64
	       " refused %" PRIu64 " evicted %" PRIu64 " idled %" PRIu64
	       " expired %" PRIu64 " left %zu\n", sum.datagrams, sum.bytes,
	       sum.created, sum.races, sum.recycled, sum.refused, evicted,
	       reaper.idled, reaper.expired, left);
	free(w);
	return failed;
}
