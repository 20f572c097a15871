/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The worker lcore: a run-to-completion loop.
 *
 *   for (;;) {
 *           burst = dequeue (or receive) up to 32 packets
 *           hash every key once: conntab_hash(); prefetch its bucket:
 *           conntab_prefetch()
 *           per packet: conntab_lookup_hashed(); create (inserting with
 *           the same hash: conntab_insert_hashed()), follow TCP,
 *           time-wait on close
 *           conntab_scan() a few nodes: expire the idle ones
 *           rcu_quiescent_state()
 *   }
 *
 * With QSBR the read-side lock costs nothing; what holds a grace period
 * back is a registered, online thread that has not yet passed a
 * quiescent state, and the loop passes one per iteration, holding no
 * node across it. A node this loop unlinks (expired, evicted, replaced)
 * goes to call_rcu(), which frees it once every worker has looped past.
 * The loop never waits for a grace period itself: synchronize_rcu() from
 * an online QSBR thread would wait for that thread, forever.
 *
 * Ownership: every packet of a flow comes to the same worker, and only
 * that worker inserts the flow's key and writes its object. Two
 * exceptions touch others' objects, both safe by RCU: eviction unlinks
 * another worker's node (its owner may still hold it for the rest of its
 * burst; it is freed after a grace period, and the owner's conntab_timewait
 * on it fails with -ENOENT, which is ignored), and the eviction rank reads
 * another's last_ns and state (relaxed atomics on both sides).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "dpdk-conntrack.h"

/* Connection states; TIME_WAIT is the table's (conntab_node_state()). */
enum conn_state {
	CS_SYN_SENT,		/* the client's SYN */
	CS_SYN_RECV,		/* the server's SYN-ACK */
	CS_ESTABLISHED,		/* the client's ACK of it, or picked up */
	CS_CLOSING,		/* one FIN seen */
	CS_CLOSED,		/* both FINs, or an RST: in TIME_WAIT */
	CS_UDP,			/* a UDP flow */
};

struct conn {
	struct conntab_node node;	/* first: 64 bytes, one line */
	uint64_t last_ns;	/* last packet (close, in TIME_WAIT) */
	uint8_t state;		/* enum conn_state */
	uint8_t client_local;	/* the client is the key's local side */
	uint8_t fins;		/* 1: the client's FIN seen, 2: the server's */
	uint8_t owner;		/* worker id: the only writer */
	struct rcu_head rcu;
};

/* A worker's loop state; also the scan and rank callbacks' argument. */
struct wctx {
	struct ct_worker *w;
	struct ct_stats *st;
	struct conntab *t;
	const struct ct_config *cfg;
	uint64_t now;		/* ns, the clock of --clock */
	double ns_per_cycle;
	struct conntab_cursor cur;
};

static inline struct conn *conn_of(struct conntab_node *n)
{
	return conntab_entry(n, struct conn, node);
}

/* The owner's stores; rank() on other lcores loads them. */
static inline void conn_touch(struct conn *c, uint64_t now)
{
	__atomic_store_n(&c->last_ns, now, __ATOMIC_RELAXED);
}

static inline void conn_set(struct conn *c, enum conn_state s)
{
	__atomic_store_n(&c->state, (uint8_t)s, __ATOMIC_RELAXED);
}

static void conn_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct conn, rcu));
}

void ct_conn_release(struct conntab_node *n)
{
	free(conn_of(n));
}

/* Unlinked by us: free once no worker can still hold it. */
static void conn_retire(struct conntab_node *n)
{
	call_rcu(&conn_of(n)->rcu, conn_free);
}

/*
 * conntab_insert_evict()'s rank: TIME_WAIT first, then unanswered
 * handshakes (the kernel's early drop), then the longest idle. Never
 * negative: at the cap a new flow always gets in. Runs under the
 * library's lock: loads and arithmetic only.
 */
static long evict_rank(struct conntab_node *n, void *arg)
{
	const struct wctx *x = arg;
	struct conn *c = conn_of(n);
	uint64_t last = __atomic_load_n(&c->last_ns, __ATOMIC_RELAXED);
	uint8_t s = __atomic_load_n(&c->state, __ATOMIC_RELAXED);
	/* Another worker's clock may be ahead of ours: idle 0 then. */
	uint64_t idle = x->now > last ? (x->now - last) >> 10 : 0;

	if (idle > LONG_MAX / 4)
		idle = LONG_MAX / 4;
	if (conntab_node_state(n) == CONNTAB_TIMEWAIT)
		return LONG_MAX / 2 + (long)idle;
	if (s == CS_SYN_SENT || s == CS_SYN_RECV)
		return LONG_MAX / 4 + (long)idle;
	return (long)idle;
}

static struct conn *conn_new(struct wctx *x, enum conn_state s,
			     bool client_local)
{
	struct conn *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	conntab_node_init(&c->node);
	c->last_ns = x->now;
	c->state = (uint8_t)s;
	c->client_local = client_local;
	c->owner = (uint8_t)x->w->id;
	return c;
}

/*
 * Link @c under @k (hash @h), replacing the TIME_WAIT node @tw if there
 * is one. Returns the node that holds @k now (c's, or NULL when @c could
 * not go in: counted, @c freed; it was never visible).
 */
static struct conntab_node *conn_link(struct wctx *x, struct conn *c,
				      const struct conntab_key *k, uint64_t h,
				      struct conntab_node *tw)
{
	struct conntab_node *old = NULL;
	int ret;

	if (tw)
		ret = conntab_insert_recycle(x->t, &c->node, k, &old);
	else if (x->cfg->max_conns)
		ret = conntab_insert_evict(x->t, &c->node, k, evict_rank, x,
					   &old);
	else
		/*
		 * The burst's hash, not a second one. Were a flow's packets
		 * spread over workers, two could create it at once: the
		 * loser gets the winner's node here (old) and goes on with
		 * it, in the read-side critical section of its burst.
		 */
		ret = conntab_insert_hashed(x->t, &c->node, k, h, &old);
	if (ret) {
		free(c);
		if (ret == -EEXIST) {	/* only we insert k: not expected */
			x->st->hits++;
			return old ? old : conntab_lookup(x->t, k);
		}
		x->st->insert_fail++;
		return NULL;
	}
	if (old) {
		/* Replaced (TIME_WAIT gone meanwhile: none), or evicted. */
		if (tw)
			x->st->tcp_reuse++;
		else
			x->st->evicted++;
		conn_retire(old);
	}
	return &c->node;
}

/* Both FINs, or an RST: to TIME_WAIT, in place. */
static void tcp_close(struct wctx *x, struct conn *c)
{
	if (c->state == CS_CLOSED)
		return;
	conn_set(c, CS_CLOSED);
	conn_touch(c, x->now);
	/* -ENOENT: evicted meanwhile, nothing to move. */
	if (!conntab_timewait(x->t, &c->node, &c->node))
		x->st->timewait++;
}

/* A packet of a tracked TCP connection that is not in TIME_WAIT. */
static void tcp_update(struct wctx *x, struct conn *c,
		       const struct ct_meta *pm)
{
	bool from_client = pm->from_local == c->client_local;
	uint8_t f = pm->tcp_flags, bit;

	if (f & CT_TCP_RST) {
		x->st->rst++;
		tcp_close(x, c);
		return;
	}
	if (c->state == CS_SYN_SENT && !from_client &&
	    (f & (CT_TCP_SYN | CT_TCP_ACK)) == (CT_TCP_SYN | CT_TCP_ACK)) {
		conn_set(c, CS_SYN_RECV);
		x->st->synack++;
	} else if (c->state == CS_SYN_RECV && from_client &&
		   (f & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_ACK) {
		conn_set(c, CS_ESTABLISHED);
		x->st->established++;
	}
	if (!(f & CT_TCP_FIN))
		return;
	bit = from_client ? 1 : 2;
	if (!(c->fins & bit)) {
		c->fins |= bit;
		if (from_client)
			x->st->fin_client++;
		else
			x->st->fin_server++;
	}
	if (c->fins == 3)
		tcp_close(x, c);
	else if (c->state != CS_CLOSING)
		conn_set(c, CS_CLOSING);
}

/*
 * One packet, whose key @k (hash @h) the lookup found at @n (NULL:
 * absent). Returns the node that holds @k afterwards, for the rest of
 * the burst.
 */
static struct conntab_node *track(struct wctx *x, const struct conntab_key *k,
				  uint64_t h, const struct ct_meta *pm,
				  struct conntab_node *n)
{
	uint8_t f = pm->tcp_flags;
	bool syn = (f & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_SYN;
	struct conn *c;

	/*
	 * Each lookup counts once: hits, tcp_new, udp_new, tcp_stray or
	 * insert_fail (dpdk-stats.c states the sums).
	 */
	x->st->lookups++;
	if (n && conntab_node_state(n) == CONNTAB_TIMEWAIT &&
	    k->proto == IPPROTO_TCP && syn) {
		/* A new SYN on a closed connection's ports: a new one. */
		c = conn_new(x, CS_SYN_SENT, pm->from_local);
		if (!c) {
			x->st->insert_fail++;
			return n;
		}
		n = conn_link(x, c, k, h, n);
		if (n == &c->node) {
			x->st->tcp_new++;
			x->st->syn++;
		}
		return n;
	}
	if (n) {
		x->st->hits++;
		/* The last ACK and such: TIME_WAIT runs on. */
		if (conntab_node_state(n) == CONNTAB_TIMEWAIT)
			return n;
		c = conn_of(n);
		conn_touch(c, x->now);
		if (k->proto == IPPROTO_TCP)
			tcp_update(x, c, pm);
		return n;
	}
	if (k->proto == IPPROTO_UDP) {
		/* Which side is the client says nothing for UDP. */
		c = conn_new(x, CS_UDP, pm->from_local);
		if (!c) {
			x->st->insert_fail++;
			return NULL;
		}
		n = conn_link(x, c, k, h, NULL);
		if (n == &c->node)
			x->st->udp_new++;
		return n;
	}
	if (f & CT_TCP_RST) {
		/* Nothing to reset: do not create a connection for it. */
		x->st->tcp_stray++;
		return NULL;
	}
	/*
	 * A SYN opens; anything else was opened before we looked (a
	 * restart, a capture begun mid-stream): picked up as established,
	 * the higher port taken for the client's (the key's remote side).
	 */
	c = conn_new(x, syn ? CS_SYN_SENT : CS_ESTABLISHED,
		     syn ? pm->from_local : false);
	if (!c) {
		x->st->insert_fail++;
		return NULL;
	}
	n = conn_link(x, c, k, h, NULL);
	if (n != &c->node)
		return n;
	x->st->tcp_new++;
	if (syn) {
		x->st->syn++;
	} else {
		x->st->tcp_pickup++;
		tcp_update(x, c, pm);	/* its FIN or RST */
	}
	return n;
}

/* The timeout of a node in state @s. */
static uint64_t timeout_of(const struct ct_config *cfg,
			   struct conntab_node *n, uint8_t s)
{
	if (conntab_node_state(n) == CONNTAB_TIMEWAIT)
		return cfg->tw_ns;
	if (s == CS_UDP)
		return cfg->udp_ns;
	if (s == CS_SYN_SENT || s == CS_SYN_RECV)
		return cfg->syn_ns;
	return cfg->tcp_ns;
}

/* conntab_scan() callback: remove our idle nodes. */
static int expire_one(struct conntab_node *n, void *arg)
{
	struct wctx *x = arg;
	struct conn *c = conn_of(n);
	bool tw = conntab_node_state(n) == CONNTAB_TIMEWAIT;
	uint8_t s = c->state;

	/* Each worker expires only its own: their clocks differ. */
	if (c->owner != x->w->id)
		return 0;
	if (x->now < c->last_ns ||
	    x->now - c->last_ns < timeout_of(x->cfg, n, s))
		return 0;
	if (conntab_remove(x->t, n))
		return 0;	/* evicted meanwhile */
	if (tw)
		x->st->expired_tw++;
	else if (s == CS_UDP)
		x->st->expired_udp++;
	else
		x->st->expired_tcp++;
	conn_retire(n);
	return 0;
}

static void track_burst(struct wctx *x, struct rte_mbuf **pkts,
			unsigned int n)
{
	struct conntab_key keys[CT_BURST];
	struct conntab_node *out[CT_BURST];
	struct ct_meta *pm[CT_BURST];
	uint64_t hash[CT_BURST];
	struct conntab_node *now;
	unsigned int i, j;

	/* Each key hashed once, for its lookup and its insert. */
	for (i = 0; i < n; i++) {
		pm[i] = ct_meta(pkts[i]);
		keys[i] = pm[i]->key;
		hash[i] = conntab_hash(x->t, &keys[i]);
		if (pm[i]->ts_ns > x->now)
			x->now = pm[i]->ts_ns;
	}
	rcu_read_lock();
	/*
	 * Every bucket of the burst asked for before the first lookup
	 * waits on one, so that their misses overlap, as in
	 * conntab_lookup_batch(); unlike the batch, each key's hash stays
	 * for its insert on a miss.
	 */
	for (i = 0; i < n; i++)
		conntab_prefetch(x->t, hash[i]);
	for (i = 0; i < n; i++)
		out[i] = conntab_lookup_hashed(x->t, &keys[i], hash[i]);
	for (i = 0; i < n; i++) {
		now = track(x, &keys[i], hash[i], pm[i], out[i]);
		if (now == out[i])
			continue;
		/*
		 * We created or replaced keys[i]'s node: later packets of
		 * the burst with that key were looked up before it, and
		 * must see it. (Only this worker writes its keys.)
		 */
		for (j = i + 1; j < n; j++)
			if (!memcmp(&keys[j], &keys[i], sizeof(keys[i])))
				out[j] = now;
	}
	rcu_read_unlock();
	rte_pktmbuf_free_bulk(pkts, n);
}

static void clock_tick(struct wctx *x)
{
	if (x->cfg->clock == CT_CLOCK_TSC)
		x->now = (uint64_t)((double)rte_rdtsc() * x->ns_per_cycle);
}

/* Up to scan_budget nodes of the pass, under the (free) read lock. */
static int expire_step(struct wctx *x)
{
	int ret;

	rcu_read_lock();
	ret = conntab_scan(x->t, &x->cur, x->cfg->scan_budget, expire_one, x);
	rcu_read_unlock();
	return ret;
}

/*
 * With RSS the worker receives and parses for itself: the packets to
 * track in @pkts, their number returned, *@got received in all.
 */
static unsigned int rss_receive(struct wctx *x, struct rte_mbuf **pkts,
				unsigned int *got)
{
	struct rte_mbuf *all[CT_BURST];
	unsigned int i, k = 0, n;
	enum ct_verdict v;

	n = rte_eth_rx_burst(x->cfg->port, (uint16_t)x->w->id, all, CT_BURST);
	for (i = 0; i < n; i++) {
		v = ct_prepare(x->cfg, all[i]);
		if (v == CT_OK) {
			pkts[k++] = all[i];
			continue;
		}
		x->st->unparsed[v]++;
		rte_pktmbuf_free(all[i]);
	}
	x->st->packets += n;
	if (n)
		x->st->bursts++;
	*got = n;
	return k;
}

int ct_worker_main(void *arg)
{
	struct ct_worker *w = arg;
	struct wctx x = {
		.w = w, .st = &w->st, .t = w->cfg->table, .cfg = w->cfg,
		.ns_per_cycle = 1e9 / (double)rte_get_tsc_hz(),
	};
	struct rte_mbuf *pkts[CT_BURST];
	unsigned int n, got = 0;
	uint64_t t0, idle = 0;
	bool done;

	rcu_register_thread();
	for (;;) {
		clock_tick(&x);
		t0 = rte_rdtsc();
		if (w->ring) {
			/* Done first: an empty ring after it is final. */
			done = __atomic_load_n(&ct_rx_done, __ATOMIC_ACQUIRE);
			n = rte_ring_dequeue_burst(w->ring, (void **)pkts,
						   CT_BURST, NULL);
			if (n) {
				w->st.packets += n;
				w->st.bursts++;
			}
		} else {
			done = __atomic_load_n(&ct_stop, __ATOMIC_RELAXED) ||
			       (w->cfg->exit_on_eof && idle >= CT_EOF_POLLS);
			n = got = 0;
			if (!done)
				n = rss_receive(&x, pkts, &got);
			idle = got ? 0 : idle + 1;
		}
		if (n) {
			track_burst(&x, pkts, n);
			w->st.busy_cycles += rte_rdtsc() - t0;
		} else if (done && !got) {
			break;
		} else {
			rte_pause();
		}
		expire_step(&x);
		/* Nothing held past here: let grace periods end. */
		rcu_quiescent_state();
	}
	/*
	 * One whole pass at the final clock, from the start (a zeroed
	 * cursor): what is due at the end of the capture goes, the rest
	 * stays for the report's table counts.
	 */
	memset(&x.cur, 0, sizeof(x.cur));
	clock_tick(&x);
	while (expire_step(&x) >= 0 && !conntab_cursor_done(&x.cur))
		rcu_quiescent_state();
	rcu_unregister_thread();
	return 0;
}
