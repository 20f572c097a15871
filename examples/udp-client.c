/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udp-client: many UDP sessions against udp-flowd, each checked.
 *
 * Opens --sessions sockets at once (so each has its own ephemeral source
 * port: its own 4-tuple, its own session on the server), sends --count
 * datagrams on each and checks that every reply echoes the payload behind
 * the session's own sequence number: 1, 2, ... --count, in order. At most
 * --window datagrams are in flight, so that the server's socket buffers
 * do not overflow; one lost (nothing for three seconds) is sent again.
 *
 *   udp-client --port N [--host ADDR] [--sessions N] [--count N]
 *              [--window N] [--timeout S]
 *   udp-client --help
 *
 * Prints one summary line; exits 0 if every reply was right, 1 if not, 2
 * for a bad option (args.h: one line naming it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The examples' option parsing; no conntab here: plain sockets. */
#define ARGS_PROG "udp-client"
#include "args.h"

struct sess {
	int fd;
	int sent;		/* datagrams sent; awaiting reply number sent */
	int waiting;		/* a datagram is in flight */
	unsigned short port;	/* our source port */
};

static struct sess *sess;
static int nsess = 2000, count = 5;
static unsigned long bad, resent;

static void send_next(struct sess *s, int again)
{
	char buf[64];
	int len;

	if (!again)
		s->sent++;
	len = snprintf(buf, sizeof(buf), "s%ld d%d",
		       (long)(s - sess), s->sent);
	if (send(s->fd, buf, (size_t)len, 0) != len) {
		perror("udp-client: send");
		exit(1);
	}
	s->waiting = 1;
}

/* A reply must read "<sent> s<index> d<sent>": our session, in order. */
static int check_reply(struct sess *s, const char *buf, ssize_t len)
{
	char want[80];
	int n;

	n = snprintf(want, sizeof(want), "%d s%ld d%d",
		     s->sent, (long)(s - sess), s->sent);
	if (len == n && !memcmp(buf, want, (size_t)n))
		return 0;
	fprintf(stderr, "udp-client: port %u: got \"%.*s\", want \"%s\"\n",
		s->port, (int)len, buf, want);
	return -1;
}

static int cmp_port(const void *a, const void *b)
{
	return (int)*(const unsigned short *)a - *(const unsigned short *)b;
}

/* Count distinct source ports: the server sees that many tuples. */
static int distinct_ports(void)
{
	unsigned short *p = calloc((size_t)nsess, sizeof(*p));
	int i, d = 0;

	if (!p)
		return 0;
	for (i = 0; i < nsess; i++)
		p[i] = sess[i].port;
	qsort(p, (size_t)nsess, sizeof(*p), cmp_port);
	for (i = 0; i < nsess; i++)
		d += !i || p[i] != p[i - 1];
	free(p);
	return d;
}

static const char usage[] =
	"usage: udp-client --port N [options]\n"
	"Many UDP sessions against udp-flowd, each reply checked.\n"
	"  --port N          the server's port, 1-65535\n"
	"  --host ADDR       its numeric IPv4 or IPv6 address (127.0.0.1)\n"
	"  --sessions N      sockets, each its own session, 1-60000 (2000)\n"
	"  --count N         datagrams per session, 1-1000000 (5)\n"
	"  --window N        datagrams in flight, 1-65536 (64)\n"
	"  --timeout S       give up after, in seconds, 1-3600 (20)\n"
	"  --help            this text\n";

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "sessions", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *host = "127.0.0.1";
	int port = -1, window = 64, timeout = 20;
	struct sockaddr_storage srv = { 0 };
	struct epoll_event ev[64];
	struct rlimit rl;
	socklen_t slen;
	int c, i, ep, head, ready, ports, inflight = 0, done = 0;
	int *ring;
	unsigned long replies = 0;
	time_t deadline;

	while ((c = args_next(argc, argv, lopts)) != -1) {
		switch (c) {
		case 'H': host = optarg; break;
		case 'p':
			port = (int)args_num("--port", optarg, 1, 65535,
					     "a port");
			break;
		case 's':
			nsess = (int)args_num("--sessions", optarg, 1, 60000,
					      "a session count");
			break;
		case 'c':
			count = (int)args_num("--count", optarg, 1, 1000000,
					      "a datagram count");
			break;
		case 'w':
			window = (int)args_num("--window", optarg, 1, 65536,
					       "a datagram count");
			break;
		case 't':
			timeout = (int)args_num("--timeout", optarg, 1, 3600,
						"a time in seconds");
			break;
		case 'h':
			args_help(usage);
		}
	}
	args_end(argc, argv);
	if (port < 0)
		args_fail("--port", "missing");
	slen = args_addr("--host", host, (unsigned short)port, &srv);

	/* One descriptor per session: lift the soft limit to the hard one. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sess = calloc((size_t)nsess, sizeof(*sess));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!sess || ep < 0) {
		perror("udp-client");
		return 1;
	}
	for (i = 0; i < nsess; i++) {
		struct sockaddr_storage me;
		socklen_t mlen = sizeof(me);
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };
		int fd = socket(srv.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		/* connect() picks the source port and filters replies. */
		if (fd < 0 || connect(fd, (struct sockaddr *)&srv, slen) ||
		    getsockname(fd, (struct sockaddr *)&me, &mlen) ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e)) {
			fprintf(stderr, "udp-client: socket %d: %s\n", i,
				strerror(errno));
			return 1;
		}
		sess[i].fd = fd;
		sess[i].port = ntohs(((struct sockaddr_in *)&me)->sin_port);
	}

	/*
	 * Sessions ready to send wait in a ring, oldest first: the sessions
	 * interleave, as independent clients would.
	 */
	ring = calloc((size_t)nsess, sizeof(*ring));
	if (!ring)
		return 1;
	for (i = 0; i < nsess; i++)
		ring[i] = i;
	head = 0;
	ready = nsess;
	deadline = time(NULL) + timeout;
	while (done < nsess && time(NULL) < deadline) {
		int n;

		for (; inflight < window && ready; ready--, inflight++) {
			send_next(&sess[ring[head]], 0);
			head = (head + 1) % nsess;
		}
		n = epoll_wait(ep, ev, 64, 3000);
		if (n == 0) {
			/* Three quiet seconds: a datagram was lost, resend. */
			for (i = 0; i < nsess; i++)
				if (sess[i].waiting) {
					send_next(&sess[i], 1);
					resent++;
				}
			continue;
		}
		for (i = 0; i < n; i++) {
			int idx = (int)ev[i].data.u32;
			struct sess *s = &sess[idx];
			char buf[256];
			ssize_t len = recv(s->fd, buf, sizeof(buf), 0);

			if (len < 0 || !s->waiting)
				continue;
			replies++;
			if (check_reply(s, buf, len))
				bad++;
			s->waiting = 0;
			inflight--;
			if (s->sent < count)
				ring[(head + ready++) % nsess] = idx;
			else
				done++;
		}
	}
	ports = distinct_ports();
	printf("udp-client: %d sessions (%d distinct source ports) x %d "
	       "datagrams: %lu replies, %lu out of sequence, %lu resent, "
	       "%d sessions complete\n", nsess, ports, count,
	       replies, bad, resent, done);
	for (i = 0; i < nsess; i++)
		close(sess[i].fd);
	close(ep);
	free(ring);
	free(sess);
	return bad || done < nsess || ports != nsess;
}
