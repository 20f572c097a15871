/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pcap workload's parts: a packet's TCP or UDP 5-tuple (packet.c),
 * and a capture read into flows and a packet stream (capture.c).
 */
#ifndef BENCH_CAPTURE_H
#define BENCH_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <conntab/conntab.h>

/* What became of a captured packet: used, or why it was skipped. */
enum b_pkt_verdict {
	PKT_OK,
	PKT_NOT_IP,		/* ARP, LLDP, ...: no IPv4 or IPv6 inside */
	PKT_TRUNCATED,		/* captured too short for its headers */
	PKT_MALFORMED,		/* headers that contradict themselves */
	PKT_FRAGMENT,		/* a non-first fragment: no ports */
	PKT_NOT_TCP_UDP,	/* ICMP, ESP, ...: no ports */
	PKT_VERDICTS
};

extern const char *const b_pkt_verdict_names[PKT_VERDICTS];

/* A packet's 5-tuple as it travelled: source and destination. */
struct b_pkt {
	uint8_t family;			/* AF_INET or AF_INET6 */
	uint8_t proto;			/* IPPROTO_TCP or IPPROTO_UDP */
	bool syn;			/* TCP SYN without ACK: opens */
	uint16_t sport, dport;		/* network byte order */
	union conntab_addr src, dst;
};

/* Does the parser know this libpcap link type (DLT_*)? */
bool b_pkt_link_ok(int dlt);
/* The tuple of @len captured bytes of a @dlt frame, or why not. */
enum b_pkt_verdict b_pkt_parse(int dlt, const uint8_t *p, size_t len,
			       struct b_pkt *out);

/* A capture read into flows (table keys) and packets (flow indexes). */
struct b_capture {
	struct conntab_key *flows;	/* keys as the local side sees them */
	size_t nflows;
	uint32_t *pkt_flow;		/* packet i: flows[pkt_flow[i]] */
	uint8_t *pkt_out;		/* packet i left the local side */
	size_t npkts;
	size_t skipped[PKT_VERDICTS];	/* [PKT_OK] unused */
	size_t nskipped;
	size_t endpoints;		/* distinct local (address, port) */
	int dlt;
};

/* The local side: addresses in one prefix; family 0 = not given. */
struct b_prefix {
	uint8_t family;
	unsigned int len;		/* prefix length in bits */
	uint8_t addr[16];
};

/* "ADDR" or "ADDR/LEN", IPv4 or IPv6. 0, or -1 if malformed. */
int b_prefix_parse(struct b_prefix *pf, const char *s);
/*
 * Read @file: 0, or -1 after printing why to stderr (not a capture, a
 * link type the parser does not know, no TCP or UDP packet in it).
 */
int b_capture_read(struct b_capture *c, const char *file,
		   const struct b_prefix *local);
void b_capture_free(struct b_capture *c);

#endif /* BENCH_CAPTURE_H */
