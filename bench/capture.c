/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A capture read into what the pcap workload replays: its flows, each as
 * the one connection key a server holds for both directions, and its
 * packets in capture order, each the index of its flow.
 *
 * A flow is the unordered pair of endpoints (address and port) with the
 * protocol; which endpoint is local, in this order:
 *  1. --local ADDR[/LEN]: the one inside the prefix, when only one is;
 *  2. the destination of the flow's first TCP SYN without ACK (the server
 *     accepts the connection; also settles a capture on loopback, where
 *     both ends are local);
 *  3. the lower port (a service's port is below the ephemeral range),
 *     for equal ports the lower address.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "bench.h"
#include "capture.h"
#include "hash/hash.h"	/* lib/hash/hash.h: a flow map needs a hash, not a new one */
#include "key.h"

#define KMAP_EMPTY	UINT32_MAX

/* Distinct keys, in the order first seen; an open-addressed index. */
struct kmap {
	struct conntab_key *keys;
	size_t n, cap;
	uint32_t *slot;		/* index into keys, or KMAP_EMPTY */
	size_t mask;
};

/* Any fixed secret: the map only needs a spread, not flood resistance. */
static const struct ct_secret kmap_secret = { 0x6361707475726531ull,
					      0x666c6f77736d6170ull };

static void *grow_array(void *p, size_t *cap, size_t elem)
{
	size_t nc = *cap ? 2 * *cap : 1024;

	p = realloc(p, nc * elem);
	if (!p) {
		fprintf(stderr, "conntab-bench: out of memory reading the "
			"capture\n");
		exit(1);
	}
	*cap = nc;
	return p;
}

static void kmap_rehash(struct kmap *m, size_t slots)
{
	size_t i, j;

	free(m->slot);
	m->slot = malloc(slots * sizeof(*m->slot));
	if (!m->slot) {
		fprintf(stderr, "conntab-bench: out of memory reading the "
			"capture\n");
		exit(1);
	}
	memset(m->slot, 0xff, slots * sizeof(*m->slot));
	m->mask = slots - 1;
	for (i = 0; i < m->n; i++) {
		j = ct_hash_sip(&kmap_secret, &m->keys[i]) & m->mask;
		while (m->slot[j] != KMAP_EMPTY)
			j = (j + 1) & m->mask;
		m->slot[j] = (uint32_t)i;
	}
}

/* The index of @k, added if new (*@added says so). */
static uint32_t kmap_add(struct kmap *m, const struct conntab_key *k,
			 bool *added)
{
	size_t j;

	/* At most half full: probes stay short. */
	if (2 * (m->n + 1) > m->mask + 1)
		kmap_rehash(m, m->mask ? 2 * (m->mask + 1) : 2048);
	j = ct_hash_sip(&kmap_secret, k) & m->mask;
	for (; m->slot[j] != KMAP_EMPTY; j = (j + 1) & m->mask) {
		if (ct_key_eq(&m->keys[m->slot[j]], k)) {
			*added = false;
			return m->slot[j];
		}
	}
	if (m->n == m->cap)
		m->keys = grow_array(m->keys, &m->cap, sizeof(*m->keys));
	m->keys[m->n] = *k;
	m->slot[j] = (uint32_t)m->n;
	*added = true;
	return (uint32_t)m->n++;
}

int b_prefix_parse(struct b_prefix *pf, const char *s)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long len;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(pf, 0, sizeof(*pf));
	if (inet_pton(AF_INET, buf, pf->addr) == 1)
		pf->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, pf->addr) == 1)
		pf->family = AF_INET6;
	else
		return -1;
	pf->len = pf->family == AF_INET ? 32 : 128;
	if (slash) {
		len = strtoul(slash + 1, &end, 10);
		if (end == slash + 1 || *end || len > pf->len)
			return -1;
		pf->len = (unsigned int)len;
	}
	return 0;
}

static bool in_prefix(const struct b_prefix *pf, uint8_t family,
		      const union conntab_addr *a)
{
	unsigned int full = pf->len / 8, rest = pf->len % 8;

	if (pf->family != family || memcmp(a->bytes, pf->addr, full))
		return false;
	return !rest ||
	       !((a->bytes[full] ^ pf->addr[full]) & (0xff00u >> rest));
}

/* The unordered flow of @p: the lower endpoint first (as laddr). */
static void flow_key(struct conntab_key *k, const struct b_pkt *p,
		     bool *dst_first)
{
	int c = memcmp(&p->src, &p->dst, sizeof(p->src));

	if (!c)
		c = memcmp(&p->sport, &p->dport, sizeof(p->sport));
	*dst_first = c > 0;
	memset(k, 0, sizeof(*k));
	k->proto = p->proto;
	k->family = p->family;
	k->laddr = *dst_first ? p->dst : p->src;
	k->lport = *dst_first ? p->dport : p->sport;
	k->raddr = *dst_first ? p->src : p->dst;
	k->rport = *dst_first ? p->sport : p->dport;
}

/* Which endpoint of flow @k (lower first) is local; see the top. */
static bool first_is_local(const struct conntab_key *k, uint8_t syn_to,
			   const struct b_prefix *local)
{
	bool l1, l2;

	if (local->family) {
		l1 = in_prefix(local, k->family, &k->laddr);
		l2 = in_prefix(local, k->family, &k->raddr);
		if (l1 != l2)
			return l1;
	}
	if (syn_to)
		return syn_to == 1;
	return ntohs(k->lport) <= ntohs(k->rport);
}

/*
 * Orient every flow, and count the local endpoints among them; then say
 * for every packet whether it left the local side (it left the lower
 * endpoint, pkt_out[] so far, unless its flow was turned round).
 */
static void orient(struct b_capture *c, const uint8_t *syn_to,
		   const struct b_prefix *local)
{
	uint8_t *turned = calloc(c->nflows, 1);
	struct kmap ep = { 0 };
	struct conntab_key *k, e;
	union conntab_addr a;
	bool added;
	uint16_t p;
	size_t i;

	for (i = 0; i < c->nflows; i++) {
		k = &c->flows[i];
		if (!first_is_local(k, syn_to[i], local)) {
			if (turned)
				turned[i] = 1;
			a = k->laddr;
			k->laddr = k->raddr;
			k->raddr = a;
			p = k->lport;
			k->lport = k->rport;
			k->rport = p;
		}
		e = *k;
		memset(&e.raddr, 0, sizeof(e.raddr));
		e.rport = 0;
		kmap_add(&ep, &e, &added);
	}
	c->endpoints = ep.n;
	free(ep.keys);
	free(ep.slot);
	if (!turned) {
		fprintf(stderr, "conntab-bench: out of memory reading the "
			"capture\n");
		exit(1);
	}
	for (i = 0; i < c->npkts; i++)
		c->pkt_out[i] ^= turned[c->pkt_flow[i]];
	free(turned);
}

int b_capture_read(struct b_capture *c, const char *file,
		   const struct b_prefix *local)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	struct kmap flows = { 0 };
	uint8_t *syn_to = NULL;
	size_t syn_cap = 0, pkt_cap = 0, out_cap = 0;
	struct conntab_key k;
	struct b_pkt pkt;
	enum b_pkt_verdict v;
	bool dst_first, added;
	uint32_t f;
	pcap_t *pc;
	int rc;

	memset(c, 0, sizeof(*c));
	pc = pcap_open_offline(file, err);
	if (!pc) {
		fprintf(stderr, "conntab-bench: %s: not a capture libpcap can "
			"read (%s)\n", file, err);
		return -1;
	}
	c->dlt = pcap_datalink(pc);
	if (!b_pkt_link_ok(c->dlt)) {
		fprintf(stderr, "conntab-bench: %s: link type %s (%d) is not "
			"one the pcap workload parses (Ethernet, Linux cooked, "
			"loopback, raw IP)\n", file,
			pcap_datalink_val_to_name(c->dlt) ?: "?", c->dlt);
		pcap_close(pc);
		return -1;
	}
	while ((rc = pcap_next_ex(pc, &h, &data)) != PCAP_ERROR_BREAK) {
		if (rc != 1) {
			/* A record cut short at the end of the file. */
			fprintf(stderr, "conntab-bench: %s: %s; stopped "
				"there\n", file, pcap_geterr(pc));
			c->skipped[PKT_TRUNCATED]++;
			c->nskipped++;
			break;
		}
		v = b_pkt_parse(c->dlt, data, h->caplen, &pkt);
		if (v != PKT_OK) {
			c->skipped[v]++;
			c->nskipped++;
			continue;
		}
		flow_key(&k, &pkt, &dst_first);
		f = kmap_add(&flows, &k, &added);
		if (added) {
			if (f == syn_cap)
				syn_to = grow_array(syn_to, &syn_cap, 1);
			syn_to[f] = 0;
		}
		if (pkt.syn && !syn_to[f])
			syn_to[f] = dst_first ? 1 : 2;
		if (c->npkts == pkt_cap)
			c->pkt_flow = grow_array(c->pkt_flow, &pkt_cap,
						 sizeof(*c->pkt_flow));
		if (c->npkts == out_cap)
			c->pkt_out = grow_array(c->pkt_out, &out_cap, 1);
		/* From the lower endpoint; orient() turns it round. */
		c->pkt_out[c->npkts] = !dst_first;
		c->pkt_flow[c->npkts++] = f;
	}
	pcap_close(pc);
	c->flows = flows.keys;
	c->nflows = flows.n;
	free(flows.slot);
	if (!c->nflows) {
		fprintf(stderr, "conntab-bench: %s: no TCP or UDP packet "
			"(%zu skipped)\n", file, c->nskipped);
		free(syn_to);
		b_capture_free(c);
		return -1;
	}
	orient(c, syn_to, local);
	free(syn_to);
	return 0;
}

void b_capture_free(struct b_capture *c)
{
	free(c->flows);
	free(c->pkt_flow);
	free(c->pkt_out);
	memset(c, 0, sizeof(*c));
}
