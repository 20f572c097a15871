/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udp-lb: a UDP load balancer, the shape of QUIC and DNS front ends, on a
 * NAT made of conntab pairs.
 *
 * Clients send to a virtual address and port (--listen, --port). The
 * first datagram of a client's 4-tuple picks a target (a backend server)
 * by Maglev consistent hashing (maglev.h) and a local port from a pool;
 * the datagram goes on to the target from that port. The flow is one
 * object with two table nodes, inserted as ONE pair in ONE table
 * (conntab_insert_pair()):
 *
 *   fwd  udp VIP:vport     <- client:cport     what clients send
 *   rev  udp source:pport  <- target:tport     what the target answers
 *
 * A target's reply is looked up by its own tuple, and conntab_pair_peer()
 * of the node found is the client's half, whose key says where the reply
 * goes: sent back from the virtual address, as the client expects. Both
 * directions are received in bursts (recvmmsg) and looked up with one
 * conntab_lookup_batch() per burst.
 *
 * Flows end three ways, each taking both halves at once:
 *  - idle for --idle ms: a conntab_scan() call of --scan-budget flows per
 *    tick finds them (no tick ever holds the read lock for longer);
 *  - evicted: at the cap a new flow evicts the idlest of a sample of
 *    flows, never an assured one (conntab_insert_pair_evict()): the cap
 *    is --max-flows, and never more than the pool has ports to give;
 *  - their target is removed ("del"): its flows are dropped.
 * Existing flows keep their target when targets come and go: that is
 * what the table is for; Maglev sends only new flows to the new table.
 *
 * A flow is *assured*, as in the kernel's conntrack for UDP, once it is a
 * stream: the target has answered and the client has sent again since,
 * and it stays assured while both directions have had traffic within the
 * last --busy ms. A flood of one-datagram sources cannot push it out.
 *
 * Control: text datagrams to --control (127.0.0.1, a free port by
 * default; anyone who can send there runs the balancer), one command
 * each, answered on the same socket:
 *   add HOST:PORT    a target (IPv6 as [ADDR]:PORT), for new flows
 *   del HOST:PORT    remove it, dropping its flows
 *   stats            flows, pairs, evictions, expiries, per target
 *
 *   udp-lb --port N --target HOST:PORT... [--listen ADDR] [--source ADDR]
 *          [--control HOST:PORT] [--backend NAME] [--ports N]
 *          [--max-flows N] [--idle MS] [--busy MS] [--scan-budget N]
 *          [--maglev-size PRIME]
 *   udp-lb --list-backends
 *   udp-lb --help
 *
 * The first line on stdout names the ports. SIGINT or SIGTERM stops it
 * with its totals. A bad option is a one-line error, exit status 2.
 *
 * One thread. A balancer's work per datagram is a lookup and a sendto();
 * one loop keeps the example about the table, and conntab's contract is
 * the same with more: each thread registered, readers under
 * rcu_read_lock(), frees through call_rcu(). The flavor is <urcu.h>'s
 * (memb): no quiescent states to announce, the read lock is cheap.
 *
 * The port pool (--ports, 1000 by default: with the few other descriptors
 * it fits the common limit of 1024 open files, which udp-lb raises to the
 * hard limit for larger pools): one UDP socket per local port, bound at
 * start (port 0: the kernel picks distinct free ports) and polled with
 * epoll. A socket per port is the simplest correct NAT without raw
 * sockets or privileges:
 * the kernel delivers a target's reply to the socket of the port it was
 * sent to, which names the flow's reply tuple exactly, and nobody else can
 * hold that port meanwhile. A flow holds one port for its life (so two
 * clients of one target get distinct reply tuples); freed ports queue up
 * and are reused last, to let a late reply of an old flow die out before
 * its port serves a new one.
 *
 * Build against an installed library, beside args.h and maglev.h:
 *   cc udp-lb.c $(pkg-config --cflags --libs conntab liburcu) -o udp-lb
 */
#define _GNU_SOURCE		/* recvmmsg */
#include <urcu.h>
#include <conntab/conntab.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define ARGS_PROG "udp-lb"
#include "args.h"
#include "maglev.h"

#define MS		((uint64_t)1000000)	/* a millisecond in ns */
#define BATCH		32	/* datagrams per recvmmsg and lookup batch */
#define MAX_PAYLOAD	65536	/* a whole UDP datagram */
#define MAX_TARGETS	256
#define CTL_MAX		8192	/* a control command or its answer */

/* epoll tags: a pool port is its index, the others are above them. */
#define TAG_VIP		((uint64_t)1 << 32)
#define TAG_CTL		(TAG_VIP + 1)
#define TAG_TIMER	(TAG_VIP + 2)
#define TAG_SIG		(TAG_VIP + 3)

/* A backend server: a slot of targets[], its number in the Maglev table. */
struct target {
	char name[INET6_ADDRSTRLEN + 8];	/* "ADDR:PORT", "[ADDR]:PORT" */
	struct sockaddr_storage addr;
	socklen_t len;
	uint64_t flows;		/* flows it has now */
	int live;
};

/*
 * One flow, both directions: fwd is the pair's a (walks, scans and
 * evictions offer a pair through it), rev its b. Freed once, a grace
 * period after whoever unlinked it (the evicting insert, the expiry scan
 * or "del"). dead marks it unlinked for the rest of the read-side section
 * that found it: its port may already serve another flow.
 */
struct flow {
	struct conntab_node fwd;
	struct conntab_node rev;
	struct rcu_head rcu;
	unsigned int target;	/* slot in targets[] */
	unsigned int port;	/* index in the pool */
	uint64_t last_fwd, last_rev;	/* monotonic ns of the last datagram */
	uint64_t fwd_pkts, rev_pkts;
	int stream;		/* the client sent again after a reply */
	int dead;
};

/* The pool of local ports: a socket each, the free ones in a FIFO. */
struct port {
	int fd;
	struct sockaddr_storage local;
};

static struct {
	const char *listen, *source, *control;
	int port;
	enum conntab_backend backend;
	unsigned int ports;
	size_t max_flows;
	uint64_t idle_ns, busy_ns;
	size_t scan_budget;
	uint32_t maglev_size;
} opt = { "127.0.0.1", NULL, "127.0.0.1:0", -1, CONNTAB_CHAINED, 1000, 0,
	  30000 * MS, 1000 * MS, 256, 65537 };

static struct conntab *table;
static struct maglev maglev;
static struct target targets[MAX_TARGETS];
static unsigned int ntargets;	/* slots used so far, live or not */
static struct port *pool;
static unsigned int *freeq, freeq_head, freeq_len;	/* FIFO of indices */
static int vip_fd, ctl_fd, timer_fd, ep;
static struct sockaddr_storage vip;
static size_t cap;		/* the table's max_entries */
static struct conntab_cursor cursor;	/* the expiry pass */

/* What happened, for "stats" and the totals. */
static struct {
	uint64_t flows;		/* in the table now */
	uint64_t created, evicted, expired, dropped;	/* dropped: "del" */
	uint64_t refused;	/* no room: every sampled flow assured */
	uint64_t no_target;	/* new flows while no target is live */
	uint64_t unknown;	/* replies that match no flow */
	uint64_t fwd, rev;	/* datagrams forwarded each way */
	uint64_t scan_calls, scan_passes;
} st;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void flow_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct flow, rcu));
}

/* The port of a flow that has ended goes to the back of the queue. */
static void port_put(unsigned int i)
{
	freeq[(freeq_head + freeq_len++) % opt.ports] = i;
}

static int port_get(unsigned int *i)
{
	if (!freeq_len)
		return -1;
	*i = freeq[freeq_head];
	freeq_head = (freeq_head + 1) % opt.ports;
	freeq_len--;
	return 0;
}

/*
 * A flow has left the table, unlinked by us (both halves, in one writer
 * step): count it off, give back its port, free it after a grace period.
 */
static void flow_gone(struct flow *f, uint64_t *why)
{
	f->dead = 1;
	targets[f->target].flows--;
	st.flows--;
	(*why)++;
	port_put(f->port);
	call_rcu(&f->rcu, flow_free);
}

static uint64_t last_seen(const struct flow *f)
{
	return f->last_fwd > f->last_rev ? f->last_fwd : f->last_rev;
}

static int assured(const struct flow *f, uint64_t now)
{
	return f->stream && now - f->last_fwd < opt.busy_ns &&
	       now - f->last_rev < opt.busy_ns;
}

/*
 * conntab_insert_pair_evict()'s rank, under the table's writer lock
 * (short, no blocking, no conntab calls). Every entry is a pair, offered
 * through its a, the fwd node. Assured flows never go; others by idle
 * time, the idlest first.
 */
static long flow_rank(struct conntab_node *n, void *arg)
{
	struct flow *f = conntab_entry(n, struct flow, fwd);
	uint64_t now = *(const uint64_t *)arg, seen = last_seen(f);

	if (assured(f, now))
		return -1;
	return now > seen ? (long)((now - seen) >> 1) : 0;
}

/* sockaddr of a key's remote end (address and port). */
static socklen_t key_remote(const struct conntab_key *k,
			    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (k->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_addr = k->raddr.v4;
		s->sin_port = k->rport;
		return sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = k->raddr.v6;
		s->sin6_port = k->rport;
		return sizeof(*s);
	}
}

/*
 * A new flow for the client tuple @key, or NULL (the datagram is
 * dropped). Caller holds the RCU read lock. The pool always has a port:
 * the cap leaves one spare (main()), and the victim of an evicting insert
 * gives its port back before the next new flow needs one.
 */
static struct flow *flow_new(const struct conntab_key *key, uint64_t now)
{
	struct conntab_node *victim = NULL;
	struct conntab_key rkey;
	struct target *t;
	unsigned int slot, port;
	struct flow *f;
	int err;

	slot = maglev_lookup(&maglev, maglev_hash(key, sizeof(*key), 0));
	/* Not live: a rebuild after "del" ran out of memory (and said so). */
	if (slot == MAGLEV_NONE || !targets[slot].live) {
		st.no_target++;
		return NULL;
	}
	t = &targets[slot];
	f = calloc(1, sizeof(*f));
	if (!f || port_get(&port)) {
		free(f);
		st.refused++;
		return NULL;
	}
	conntab_node_init(&f->fwd);
	conntab_node_init(&f->rev);
	f->target = slot;
	f->port = port;
	f->last_fwd = f->last_rev = now;
	/* The target's reply arrives at our pool port: target -> remote. */
	conntab_key_from_sockaddr(&rkey, IPPROTO_UDP,
				  (struct sockaddr *)&pool[port].local,
				  (struct sockaddr *)&t->addr);
	err = conntab_insert_pair_evict(table, &f->fwd, key, &f->rev, &rkey,
					flow_rank, &now, &victim);
	if (err) {
		/*
		 * -ENOSPC: every sampled flow is assured. The table is as it
		 * was, but readers (none in this thread now, but the rule is
		 * the library's) may have seen a half of a failed pair
		 * insert: free it after a grace period, as a removed one.
		 */
		port_put(port);
		st.refused++;
		call_rcu(&f->rcu, flow_free);
		return NULL;
	}
	if (victim)
		flow_gone(conntab_entry(victim, struct flow, fwd), &st.evicted);
	t->flows++;
	st.flows++;
	st.created++;
	return f;
}

/*
 * A burst on the virtual address: client -> target. Each datagram's tuple
 * is looked up in one batch; a flow found dead was evicted by a new flow
 * earlier in this burst, and a tuple found absent may have been inserted
 * by one (the same client twice in a burst): both look again.
 */
static void from_clients(struct mmsghdr *msg, struct sockaddr_storage *peer,
			 int n)
{
	struct conntab_node *found[BATCH];
	struct conntab_key keys[BATCH];
	uint64_t now = now_ns();
	int i;

	/* A datagram arriving here: source -> remote, us -> local. */
	for (i = 0; i < n; i++)
		conntab_key_from_sockaddr(&keys[i], IPPROTO_UDP,
					  (struct sockaddr *)&vip,
					  (struct sockaddr *)&peer[i]);
	rcu_read_lock();
	conntab_lookup_batch(table, keys, found, (size_t)n);
	for (i = 0; i < n; i++) {
		struct flow *f = found[i] ?
			conntab_entry(found[i], struct flow, fwd) : NULL;
		struct target *t;

		if (!f || f->dead) {
			struct conntab_node *again =
				conntab_lookup(table, &keys[i]);

			f = again ? conntab_entry(again, struct flow, fwd) :
				flow_new(&keys[i], now);
			if (!f)
				continue;
		}
		if (f->rev_pkts)
			f->stream = 1;
		f->fwd_pkts++;
		f->last_fwd = now;
		t = &targets[f->target];
		/* Best effort, as UDP is: a full buffer drops. */
		if (sendto(pool[f->port].fd, msg[i].msg_hdr.msg_iov->iov_base,
			   msg[i].msg_len, MSG_DONTWAIT,
			   (struct sockaddr *)&t->addr, t->len) >= 0)
			st.fwd++;
	}
	rcu_read_unlock();
}

/*
 * A burst on pool port @p: target -> client. The node found is the rev
 * half; its peer, the fwd half, holds the client's tuple, which is where
 * the reply goes, from the virtual address.
 */
static void from_targets(unsigned int p, struct mmsghdr *msg,
			 struct sockaddr_storage *peer, int n)
{
	struct conntab_node *found[BATCH];
	struct conntab_key keys[BATCH];
	uint64_t now = now_ns();
	int i;

	for (i = 0; i < n; i++)
		conntab_key_from_sockaddr(&keys[i], IPPROTO_UDP,
					  (struct sockaddr *)&pool[p].local,
					  (struct sockaddr *)&peer[i]);
	rcu_read_lock();
	conntab_lookup_batch(table, keys, found, (size_t)n);
	for (i = 0; i < n; i++) {
		const struct conntab_node *client = conntab_pair_peer(found[i]);
		struct sockaddr_storage to;
		socklen_t len;
		struct flow *f;

		/* Not ours, or the flow has just ended: drop it. */
		if (!client) {
			st.unknown++;
			continue;
		}
		f = conntab_entry(found[i], struct flow, rev);
		if (f->dead) {
			st.unknown++;
			continue;
		}
		f->rev_pkts++;
		f->last_rev = now;
		len = key_remote(conntab_node_key(client), &to);
		if (sendto(vip_fd, msg[i].msg_hdr.msg_iov->iov_base,
			   msg[i].msg_len, MSG_DONTWAIT,
			   (struct sockaddr *)&to, len) >= 0)
			st.rev++;
	}
	rcu_read_unlock();
}

/* Receive a burst from @fd and forward it. */
static void receive(int fd, uint64_t tag)
{
	static char buf[BATCH][MAX_PAYLOAD];
	struct sockaddr_storage peer[BATCH];
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	int i, n;

	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], MAX_PAYLOAD };
		msg[i].msg_hdr = (struct msghdr){
			.msg_name = &peer[i], .msg_namelen = sizeof(peer[i]),
			.msg_iov = &iov[i], .msg_iovlen = 1,
		};
	}
	n = recvmmsg(fd, msg, BATCH, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return;
	if (tag == TAG_VIP)
		from_clients(msg, peer, n);
	else
		from_targets((unsigned int)tag, msg, peer, n);
}

/* Scan callback under the read lock: a pair, through its fwd half. */
static int expire_one(struct conntab_node *n, void *arg)
{
	struct flow *f = conntab_entry(n, struct flow, fwd);
	uint64_t now = *(const uint64_t *)arg, seen = last_seen(f);

	if (now > seen && now - seen >= opt.idle_ns &&
	    !conntab_remove(table, n))
		flow_gone(f, &st.expired);
	return 0;
}

/*
 * One tick of expiry: one conntab_scan() call of --scan-budget flows, in
 * a read-side section of its own, the cursor carried to the next tick. A
 * flow expires at most one pass after its time.
 */
static void expire_tick(void)
{
	uint64_t now = now_ns();
	int ret;

	rcu_read_lock();
	ret = conntab_scan(table, &cursor, opt.scan_budget, expire_one, &now);
	rcu_read_unlock();
	st.scan_calls++;
	if (ret < 0) {
		fprintf(stderr, "udp-lb: conntab_scan: %s\n", strerror(-ret));
		exit(1);
	}
	st.scan_passes += ret == 1;
}

/* "del": drop the flows of one target, both halves of each. */
static int drop_one(struct conntab_node *n, void *arg)
{
	struct flow *f = conntab_entry(n, struct flow, fwd);

	if (f->target == *(unsigned int *)arg && !conntab_remove(table, n))
		flow_gone(f, &st.dropped);
	return 0;
}

/* Count the nodes: both halves of every pair (conntab_walk_prefix, 0). */
static int count_node(struct conntab_node *n, void *arg)
{
	(void)n;
	(*(size_t *)arg)++;
	return 0;
}

/*
 * Check what a walk says: each pair is visited once, through its fwd
 * half (a local key on the virtual address), whose peer is its rev half
 * and points back. @arg counts what is not so: half pairs.
 */
static int check_pair(struct conntab_node *n, void *arg)
{
	struct flow *f = conntab_entry(n, struct flow, fwd);
	const struct conntab_node *peer = conntab_pair_peer(n);

	if (peer != &f->rev || conntab_pair_peer(peer) != n ||
	    conntab_node_key(n)->lport != ((struct sockaddr_in *)&vip)->sin_port)
		(*(size_t *)arg)++;
	return 0;
}

static void maglev_rebuild(void)
{
	const char *names[MAX_TARGETS];
	unsigned int i;

	for (i = 0; i < ntargets; i++)
		names[i] = targets[i].live ? targets[i].name : NULL;
	if (maglev_build(&maglev, names, ntargets)) {
		/*
		 * No memory: the old table stays. It may name a removed
		 * target, whose share of new flows flow_new() then drops.
		 */
		fprintf(stderr, "udp-lb: maglev: out of memory\n");
	}
}

/*
 * "HOST:PORT" or "[HOST]:PORT", numeric, the port at least @min_port: a
 * target's address in *@t, its canonical name too. 0, or -1 with a reason
 * in @why.
 */
static int parse_target(const char *s, unsigned long min_port,
			struct target *t, const char **why)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
		.ai_socktype = SOCK_DGRAM,
	}, *ai;
	char host[INET6_ADDRSTRLEN + 2], serv[8];
	const char *colon = strrchr(s, ':');
	size_t hl;
	char *end;
	unsigned long port;

	*why = "not HOST:PORT ([ADDR]:PORT for IPv6)";
	if (!colon || colon == s)
		return -1;
	hl = (size_t)(colon - s);
	if (s[0] == '[') {
		if (s[hl - 1] != ']')
			return -1;
		s++;
		hl -= 2;
	}
	if (!hl || hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || errno || port < min_port ||
	    port > 65535)
		return -1;
	snprintf(serv, sizeof(serv), "%lu", port);
	*why = "not a numeric IPv4 or IPv6 address";
	if (getaddrinfo(host, serv, &hints, &ai))
		return -1;
	memset(t, 0, sizeof(*t));
	memcpy(&t->addr, ai->ai_addr, ai->ai_addrlen);
	t->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	/* The canonical name: the same target always hashes the same. */
	if (getnameinfo((struct sockaddr *)&t->addr, t->len, host,
			sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV))
		return -1;
	snprintf(t->name, sizeof(t->name),
		 t->addr.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host,
		 serv);
	return 0;
}

static int find_target(const char *name)
{
	unsigned int i;

	for (i = 0; i < ntargets; i++)
		if (targets[i].live && !strcmp(targets[i].name, name))
			return (int)i;
	return -1;
}

/*
 * Add a target: new flows may go to it at once. Its slot is the first
 * free one; a target added again gets back the Maglev permutation of its
 * name, so its entries are mostly the ones it had. NULL, or an error.
 */
static const char *target_add(const char *s)
{
	struct target t;
	const char *why;
	unsigned int i;

	if (parse_target(s, 1, &t, &why))
		return why;
	if (t.addr.ss_family != pool[0].local.ss_family)
		return "not of the family of the pool's ports (--source)";
	if (find_target(t.name) >= 0)
		return "already a target";
	for (i = 0; i < ntargets && targets[i].live; i++)
		;
	if (i == MAX_TARGETS)
		return "too many targets";
	if (i == ntargets)
		ntargets++;
	t.live = 1;
	targets[i] = t;
	maglev_rebuild();
	return NULL;
}

/*
 * Remove a target: first from the Maglev table, so that no new flow goes
 * to it, then its flows from the conntab table (a walk under the read
 * lock; each removal takes both halves and gives back the port).
 */
static const char *target_del(const char *s)
{
	struct target t;
	const char *why;
	int i;

	if (parse_target(s, 1, &t, &why))
		return why;
	i = find_target(t.name);
	if (i < 0)
		return "not a target";
	targets[i].live = 0;
	maglev_rebuild();
	rcu_read_lock();
	conntab_walk(table, drop_one, &i);
	rcu_read_unlock();
	return NULL;
}

/* "stats": one line of counters, then one line per live target. */
static size_t stats_text(char *buf, size_t size)
{
	struct conntab_counters c = { .size = sizeof(c) };
	struct conntab_stats ts;
	size_t nodes = 0, half = 0, len;
	unsigned int i;

	conntab_counters(table, &c);
	conntab_stats(table, &ts);
	rcu_read_lock();
	conntab_walk(table, check_pair, &half);
	{
		struct conntab_key any;

		conntab_key_v4(&any, 0, 0, 0, 0, 0);
		conntab_walk_prefix(table, &any, 0, count_node, &nodes);
	}
	rcu_read_unlock();
	len = (size_t)snprintf(buf, size,
		"flows %" PRIu64 " pairs %" PRIu64 " entries %zu nodes %zu "
		"half_pairs %zu cap %zu ports %u ports_free %u created %" PRIu64
		" evicted %" PRIu64 " expired %" PRIu64 " dropped %" PRIu64
		" refused %" PRIu64 " no_target %" PRIu64 " unknown %" PRIu64
		" forwarded %" PRIu64 " replied %" PRIu64
		" table_evictions %" PRIu64 " table_evict_refused %" PRIu64
		" scan_passes %" PRIu64 "\n",
		st.flows, c.pairs, ts.entries, nodes, half, cap, opt.ports,
		freeq_len,
		st.created, st.evicted, st.expired, st.dropped, st.refused,
		st.no_target, st.unknown, st.fwd, st.rev, c.evictions,
		c.evict_refused, c.scan_passes);
	for (i = 0; i < ntargets && len < size; i++)
		if (targets[i].live)
			len += (size_t)snprintf(buf + len, size - len,
				"target %s flows %" PRIu64 "\n",
				targets[i].name, targets[i].flows);
	return len < size ? len : size - 1;
}

/* One control datagram: a command, answered to its sender. */
static void control(void)
{
	char cmd[CTL_MAX], out[CTL_MAX];
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	const char *err;
	ssize_t n;
	size_t len;

	n = recvfrom(ctl_fd, cmd, sizeof(cmd) - 1, MSG_DONTWAIT,
		     (struct sockaddr *)&from, &flen);
	if (n < 0)
		return;
	while (n && (cmd[n - 1] == '\n' || cmd[n - 1] == '\r'))
		n--;
	cmd[n] = 0;
	if (!strcmp(cmd, "stats")) {
		len = stats_text(out, sizeof(out));
	} else {
		if (!strncmp(cmd, "add ", 4))
			err = target_add(cmd + 4);
		else if (!strncmp(cmd, "del ", 4))
			err = target_del(cmd + 4);
		else
			err = "unknown command (add HOST:PORT, del HOST:PORT, "
			      "stats)";
		len = (size_t)snprintf(out, sizeof(out), "%s%s\n",
				       err ? "error: " : "ok", err ? err : "");
	}
	sendto(ctl_fd, out, len, MSG_DONTWAIT, (struct sockaddr *)&from, flen);
}

/* A UDP socket bound to @addr, in the epoll set under @tag. -1 on error. */
static int bound_socket(struct sockaddr_storage *addr, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };
	socklen_t len = addr->ss_family == AF_INET ?
		sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(addr->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)addr, len) ||
	    getsockname(fd, (struct sockaddr *)addr, &len) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t left;

/* conntab_destroy() hands back each pair once, through its fwd half. */
static void flow_release(struct conntab_node *n)
{
	left++;
	free(conntab_entry(n, struct flow, fwd));
}

static const char usage[] =
	"usage: udp-lb --port N --target HOST:PORT... [options]\n"
	"       udp-lb --list-backends\n"
	"A UDP load balancer: Maglev picks a target for each new flow, a\n"
	"conntab pair per flow NATs it both ways.\n"
	"  --port N            the virtual port, 0-65535 (0: a free one)\n"
	"  --listen ADDR       the virtual address, numeric (127.0.0.1)\n"
	"  --target HOST:PORT  a target ([ADDR]:PORT for IPv6); repeat it\n"
	"  --source ADDR       the pool's address, towards the targets\n"
	"                      (--listen's)\n"
	"  --control HOST:PORT text commands: add, del, stats\n"
	"                      (127.0.0.1:0, a free port)\n"
	"  --backend NAME      the table's backend (chained)\n"
	"  --ports N           local ports in the pool, 2-60000 (1000)\n"
	"  --max-flows N       flows at most, 0-16777216 (0: one port less\n"
	"                      than the pool); the idlest make room\n"
	"  --idle MS           idle time to expiry, 1-604800000 (30000)\n"
	"  --busy MS           traffic both ways within this keeps a stream\n"
	"                      assured, 1-604800000 (1000)\n"
	"  --scan-budget N     flows per expiry tick, 1-1048576 (256)\n"
	"  --maglev-size P     Maglev table entries, a prime, 3-1000003\n"
	"                      (65537)\n"
	"  --list-backends     the backends of this library, one a line\n"
	"  --help              this text\n"
	"SIGINT or SIGTERM stops it with its totals.\n";

/* A week, in ms: any longer is surely a typo. */
#define MAX_MS		604800000ull

static const char *opt_targets[MAX_TARGETS];
static unsigned int nopt_targets;

static void parse_options(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'L' },
		{ "target", required_argument, NULL, 'T' },
		{ "source", required_argument, NULL, 'S' },
		{ "control", required_argument, NULL, 'C' },
		{ "backend", required_argument, NULL, 'b' },
		{ "ports", required_argument, NULL, 'P' },
		{ "max-flows", required_argument, NULL, 'm' },
		{ "idle", required_argument, NULL, 'i' },
		{ "busy", required_argument, NULL, 'B' },
		{ "scan-budget", required_argument, NULL, 's' },
		{ "maglev-size", required_argument, NULL, 'M' },
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
		case 'L': opt.listen = optarg; break;
		case 'S': opt.source = optarg; break;
		case 'C': opt.control = optarg; break;
		case 'T':
			if (nopt_targets == MAX_TARGETS)
				args_fail("--target", "more than %d",
					  MAX_TARGETS);
			opt_targets[nopt_targets++] = optarg;
			break;
		case 'b':
			opt.backend = args_backend("--backend", optarg);
			break;
		case 'P':
			opt.ports = (unsigned int)args_num("--ports", optarg,
							   2, 60000,
							   "a port count");
			break;
		case 'm':
			opt.max_flows = args_num("--max-flows", optarg, 0,
						 1 << 24, "a flow count");
			break;
		case 'i':
			opt.idle_ns = args_num("--idle", optarg, 1, MAX_MS,
					       "a time in ms") * MS;
			break;
		case 'B':
			opt.busy_ns = args_num("--busy", optarg, 1, MAX_MS,
					       "a time in ms") * MS;
			break;
		case 's':
			opt.scan_budget = args_num("--scan-budget", optarg, 1,
						   1 << 20, "a flow count");
			break;
		case 'M':
			opt.maglev_size = (uint32_t)args_num("--maglev-size",
							     optarg, 3,
							     1000003,
							     "a size");
			if (!maglev_is_prime(opt.maglev_size))
				args_fail("--maglev-size", "'%s' is not a "
					  "prime", optarg);
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
	if (!opt.source)
		opt.source = opt.listen;
}

/* Every event of the loop, until SIGINT or SIGTERM. */
static void run(int sfd)
{
	struct epoll_event ev[64];
	struct signalfd_siginfo si;
	uint64_t ticks;
	int i, n;

	for (;;) {
		n = epoll_wait(ep, ev, 64, -1);
		for (i = 0; i < n; i++) {
			uint64_t tag = ev[i].data.u64;

			if (tag == TAG_SIG) {
				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					return;
			} else if (tag == TAG_TIMER) {
				if (read(timer_fd, &ticks, sizeof(ticks)) > 0)
					expire_tick();
			} else if (tag == TAG_CTL) {
				control();
			} else {
				receive(tag == TAG_VIP ? vip_fd :
					pool[tag].fd, tag);
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct epoll_event tev = { .events = EPOLLIN, .data.u64 = TAG_TIMER };
	struct epoll_event sev = { .events = EPOLLIN, .data.u64 = TAG_SIG };
	struct conntab_config cfg = { 0 };
	struct sockaddr_storage ctl, src;
	struct itimerspec its = { 0 };
	struct target ct;
	const char *why;
	struct rlimit rl;
	uint64_t tick;
	unsigned int i;
	sigset_t sigs;
	int sfd;

	parse_options(argc, argv);
	args_addr("--listen", opt.listen, (unsigned short)opt.port, &vip);
	args_addr("--source", opt.source, 0, &src);
	/* --control is written as a target is, and may ask for port 0. */
	if (parse_target(opt.control, 0, &ct, &why))
		args_fail("--control", "'%s' is %s", opt.control, why);
	ctl = ct.addr;
	cap = opt.ports - 1;
	if (opt.max_flows && opt.max_flows < cap)
		cap = opt.max_flows;

	/* Signals on a signalfd, read by the loop: block them first. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	/* A descriptor per pool port: lift the soft limit to the hard one. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	pool = calloc(opt.ports, sizeof(*pool));
	freeq = calloc(opt.ports, sizeof(*freeq));
	if (ep < 0 || sfd < 0 || timer_fd < 0 || !pool || !freeq ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &sev) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, timer_fd, &tev) ||
	    maglev_init(&maglev, opt.maglev_size)) {
		perror("udp-lb: setup");
		return 1;
	}
	vip_fd = bound_socket(&vip, TAG_VIP);
	if (vip_fd < 0) {
		fprintf(stderr, "udp-lb: port %d on %s: %s\n", opt.port,
			opt.listen, strerror(errno));
		return 1;
	}
	ctl_fd = bound_socket(&ctl, TAG_CTL);
	if (ctl_fd < 0) {
		fprintf(stderr, "udp-lb: --control %s: %s\n", opt.control,
			strerror(errno));
		return 1;
	}
	for (i = 0; i < opt.ports; i++) {
		pool[i].local = src;
		pool[i].fd = bound_socket(&pool[i].local, i);
		if (pool[i].fd < 0) {
			fprintf(stderr, "udp-lb: pool port %u on %s: %s\n",
				i, opt.source, strerror(errno));
			return 1;
		}
		port_put(i);
	}
	for (i = 0; i < nopt_targets; i++) {
		why = target_add(opt_targets[i]);
		if (why)
			args_fail("--target", "'%s': %s", opt_targets[i], why);
	}

	rcu_register_thread();
	cfg.backend = opt.backend;
	cfg.expected = cap;
	cfg.max_entries = cap;
	table = conntab_create(&cfg);
	if (!table) {
		perror("udp-lb: conntab_create");
		return 1;
	}
	/*
	 * Expiry ticks: an eighth of --idle (1 ms to 100 ms), so that a
	 * pass of --scan-budget flows a tick keeps up with a table of
	 * budget x 8 flows per idle time, and a quiet balancer wakes at
	 * most ten times a second.
	 */
	tick = opt.idle_ns / 8;
	tick = tick < MS ? MS : tick > 100 * MS ? 100 * MS : tick;
	its.it_interval.tv_sec = (time_t)(tick / 1000000000u);
	its.it_interval.tv_nsec = (long)(tick % 1000000000u);
	its.it_value = its.it_interval;
	timerfd_settime(timer_fd, 0, &its, NULL);

	/* sin_port and sin6_port sit at the same offset. */
	printf("udp-lb: listening on %s port %d, control port %d, "
	       "backend %s, %u pool ports, at most %zu flows\n",
	       opt.listen, ntohs(((struct sockaddr_in *)&vip)->sin_port),
	       ntohs(((struct sockaddr_in *)&ctl)->sin_port),
	       conntab_backend_name(opt.backend), opt.ports, cap);
	fflush(stdout);

	run(sfd);

	{
		char out[CTL_MAX];

		stats_text(out, sizeof(out));
		fputs(out, stdout);
	}
	conntab_destroy(table, flow_release);
	rcu_barrier();		/* the call_rcu() frees, before we exit */
	rcu_unregister_thread();
	printf("udp-lb: totals: created %" PRIu64 " evicted %" PRIu64
	       " expired %" PRIu64 " dropped %" PRIu64 " left %" PRIu64
	       " refused %" PRIu64 " forwarded %" PRIu64 " replied %" PRIu64
	       "\n", st.created, st.evicted, st.expired, st.dropped, left,
	       st.refused, st.fwd, st.rev);
	for (i = 0; i < opt.ports; i++)
		close(pool[i].fd);
	close(vip_fd);
	close(ctl_fd);
	close(timer_fd);
	close(sfd);
	close(ep);
	free(pool);
	free(freeq);
	maglev_free(&maglev);
	return st.created != st.evicted + st.expired + st.dropped + left;
}
