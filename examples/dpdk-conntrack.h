/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dpdk-conntrack: connection tracking on DPDK lcores with one conntab
 * table shared by every worker. The parts:
 *
 *   dpdk-conntrack.c  command line, EAL and port set-up, the RX lcore,
 *                     start and stop
 *   dpdk-parse.c      a frame's 4-tuple, as the table's key
 *   dpdk-worker.c     the worker loop: lookups, TCP states, expiry
 *   dpdk-stats.c      the counts at the end, as text or JSON
 *
 * Threads: the main lcore receives (or, with RSS, only waits), each other
 * lcore is a worker. A flow's packets all go to one worker (a symmetric
 * hash, or symmetric RSS), and only that worker writes its connection
 * objects: a connection's state needs no lock and no atomic read-modify-
 * write. Other workers read last_ns and state (ranking eviction victims)
 * with relaxed atomic loads; the owner stores them with relaxed stores.
 *
 * The RCU flavor is QSBR: <urcu-qsbr.h> comes before <conntab/conntab.h>
 * so that conntab_create() takes that flavor.
 */
#ifndef EXAMPLES_DPDK_CONNTRACK_H
#define EXAMPLES_DPDK_CONNTRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <urcu-qsbr.h>
#include <conntab/conntab.h>

#include <rte_mbuf.h>

#define ARGS_PROG	"dpdk-conntrack"

/* Packets per receive, dequeue and table lookup: DPDK's usual burst. */
#define CT_BURST	32
/* Workers: the bitmap of dispatch and the report's columns. */
#define CT_MAX_WORKERS	64

/* What became of a frame: tracked (CT_OK), or why it was not. */
enum ct_verdict {
	CT_OK,
	CT_NOT_IP,		/* ARP, LLDP, ...: no IPv4 or IPv6 inside */
	CT_TRUNCATED,		/* too short for its headers */
	CT_MALFORMED,		/* headers that contradict themselves */
	CT_FRAGMENT,		/* a non-first fragment: no ports */
	CT_NOT_TCP_UDP,		/* ICMP, ESP, ...: no ports */
	CT_VERDICTS
};

extern const char *const ct_verdict_names[CT_VERDICTS];

#define CT_TCP_FIN	0x01
#define CT_TCP_SYN	0x02
#define CT_TCP_RST	0x04
#define CT_TCP_ACK	0x10

/*
 * A parsed frame, in the mbuf's private area: written where the frame is
 * parsed (the RX lcore, or the worker with RSS), read by its worker.
 *
 * The key is the flow's, not the packet's: its "local" endpoint is the
 * lower of the two (port, then address), so both directions make the
 * same key and one lookup finds the connection. from_local says which
 * way this packet went.
 */
struct ct_meta {
	struct conntab_key key;
	uint64_t ts_ns;		/* capture time (--clock capture), else 0 */
	uint32_t hash;		/* symmetric: both directions agree */
	uint8_t verdict;	/* enum ct_verdict */
	uint8_t tcp_flags;	/* CT_TCP_*, TCP only */
	uint8_t from_local;	/* source is key.laddr:key.lport */
};

static inline struct ct_meta *ct_meta(struct rte_mbuf *m)
{
	return (struct ct_meta *)rte_mbuf_to_priv(m);
}

/* Parse @m into @pm; returns pm->verdict. @seed keys the flow hash. */
enum ct_verdict ct_parse(const struct rte_mbuf *m, struct ct_meta *pm,
			 uint32_t seed);

/*
 * One lcore's counters. Written by that lcore only, read by the main
 * lcore after it has joined them (rte_eal_mp_wait_lcore() orders that):
 * plain fields. Cache-aligned so that neighbours do not share a line.
 */
struct ct_stats {
	uint64_t packets;	/* received (rx) or handed to the table */
	uint64_t bursts;	/* non-empty receives or dequeues */
	uint64_t busy_cycles;	/* TSC cycles spent on bursts, not waiting */
	uint64_t unparsed[CT_VERDICTS];	/* [CT_OK]: unused */
	uint64_t ring_full;	/* rx: enqueues retried on a full ring */
	uint64_t lookups;	/* keys looked up (one per tracked packet) */
	uint64_t hits;		/* found a connection */
	uint64_t tcp_new;	/* TCP connections created */
	uint64_t tcp_pickup;	/*   of which found mid-stream (no SYN) */
	uint64_t tcp_reuse;	/*   of which a SYN replacing TIME_WAIT */
	uint64_t syn, synack, established;	/* TCP states reached */
	uint64_t fin_client, fin_server;	/* first FIN of each side */
	uint64_t rst;		/* closed by a reset */
	uint64_t timewait;	/* moved to TIME_WAIT (both FINs, or RST) */
	uint64_t tcp_stray;	/* an RST of no known connection */
	uint64_t udp_new;	/* UDP flows created */
	uint64_t expired_tcp, expired_udp, expired_tw;
	uint64_t evicted;	/* victims of conntab_insert_evict() */
	uint64_t insert_fail;	/* -ENOSPC, -ENOMEM: packet not tracked */
} __rte_cache_aligned;

/* Clocks for idle expiry. */
enum ct_clock {
	CT_CLOCK_TSC,		/* the TSC: live traffic */
	CT_CLOCK_CAPTURE,	/* net_pcap's RX timestamps: capture time */
};

/* How the packets reach the workers. */
enum ct_dispatch {
	CT_DISPATCH_AUTO,	/* RSS where the port has the queues */
	CT_DISPATCH_RING,	/* main lcore receives, rte_rings */
	CT_DISPATCH_RSS,	/* one RX queue per worker */
};

/* The options and the shared run state, set up before the lcores start. */
struct ct_config {
	enum conntab_backend backend;
	enum ct_clock clock;
	enum ct_dispatch dispatch;
	uint16_t port;
	unsigned int workers;
	uint64_t max_conns;	/* 0: no cap */
	uint64_t expected;	/* sizing hint */
	uint64_t udp_ns, tcp_ns, tw_ns, syn_ns;	/* idle timeouts */
	unsigned int scan_budget;	/* nodes per conntab_scan() call */
	bool exit_on_eof;
	bool json;
	int ts_offset;		/* the RX timestamp dynfield, or -1 */
	uint64_t ts_flag;	/* its ol_flags bit */
	uint32_t seed;		/* keys the dispatch hash */
	struct conntab *table;
};

/*
 * Parse @m into its ct_meta, with its RX timestamp under --clock capture;
 * returns the verdict.
 */
enum ct_verdict ct_prepare(const struct ct_config *cfg, struct rte_mbuf *m);

/*
 * --exit-on-eof: this many empty receives in a row end the run. net_pcap
 * reads its file as it is polled, so its first empty receive is the end
 * of the file already; the margin is for devices that fill from elsewhere.
 */
#define CT_EOF_POLLS	65536

/* What one worker lcore is given. */
struct ct_worker {
	unsigned int id;
	unsigned int lcore;
	struct rte_ring *ring;	/* NULL with RSS: poll queue id */
	const struct ct_config *cfg;
	struct ct_stats st;
};

/*
 * Flags set once and polled by every lcore, through __atomic: ct_stop by
 * SIGINT or SIGTERM, ct_rx_done (release) by the RX lcore after its last
 * enqueue, so that a worker that reads it set (acquire) and then finds
 * its ring empty has seen every packet.
 */
extern bool ct_stop;
extern bool ct_rx_done;

int ct_worker_main(void *arg);
/* conntab_destroy()'s release: frees a connection at once. */
void ct_conn_release(struct conntab_node *n);

struct ct_report {
	const struct ct_config *cfg;
	const char *port_name;
	const struct ct_stats *rx;	/* NULL with RSS */
	const struct ct_worker *w;
	uint64_t tsc_hz;
	struct conntab_stats table;
	uint64_t port_ipackets, port_imissed, port_nombuf;
};

void ct_report_print(FILE *f, const struct ct_report *r);

#endif /* EXAMPLES_DPDK_CONNTRACK_H */
