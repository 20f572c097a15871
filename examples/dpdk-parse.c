/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A frame's flow: Ethernet with up to two VLAN tags, IPv4 or IPv6 with
 * its extension headers, TCP or UDP ports. The verdicts are those of
 * conntab-bench's pcap replay (bench/packet.c), so that the two count the
 * same capture alike and the test can hold one against the other.
 *
 * Every header is read with rte_pktmbuf_read(), which checks it against
 * the packet's length and copies it only when it spans segments: a frame
 * from the wire is input from anywhere, and a short or lying one is
 * counted and skipped, never read past. Checksums are not checked (the
 * table does not depend on them, and captures on the sending host carry
 * offloaded ones).
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_jhash.h>
#include <rte_mbuf_dyn.h>

#include "dpdk-conntrack.h"

const char *const ct_verdict_names[CT_VERDICTS] = {
	[CT_OK] = "tracked",
	[CT_NOT_IP] = "not-ip",
	[CT_TRUNCATED] = "truncated",
	[CT_MALFORMED] = "malformed",
	[CT_FRAGMENT] = "fragment",
	[CT_NOT_TCP_UDP] = "not-tcp-udp",
};

#define ETH_IPV4	0x0800
#define ETH_IPV6	0x86dd
#define ETH_VLAN	0x8100
#define ETH_QINQ	0x88a8
/* IPv6 extension headers followed before the packet counts as malformed. */
#define IP6_MAX_EXT	8

static inline unsigned int be16(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* @len bytes at @off, or NULL when the packet ends first. */
static inline const uint8_t *hdr(const struct rte_mbuf *m, uint32_t off,
				 uint32_t len, void *buf)
{
	return rte_pktmbuf_read(m, off, len, buf);
}

/*
 * Orient the key: the lower endpoint (port, then address) is "local".
 * @src and @dst are the packet's addresses, @alen bytes each.
 */
static void make_key(struct ct_meta *pm, uint8_t family, uint8_t proto,
		     const uint8_t *src, uint16_t sport, const uint8_t *dst,
		     uint16_t dport, size_t alen, uint32_t seed)
{
	struct conntab_key *k = &pm->key;
	uint16_t hs = rte_be_to_cpu_16(sport), hd = rte_be_to_cpu_16(dport);
	bool src_low = hs < hd || (hs == hd && memcmp(src, dst, alen) <= 0);

	memset(k, 0, sizeof(*k));
	k->proto = proto;
	k->family = family;
	k->lport = src_low ? sport : dport;
	k->rport = src_low ? dport : sport;
	memcpy(k->laddr.bytes, src_low ? src : dst, alen);
	memcpy(k->raddr.bytes, src_low ? dst : src, alen);
	pm->from_local = src_low;
	/* The key is the same both ways, so its hash is symmetric. */
	pm->hash = rte_jhash(k, sizeof(*k), seed);
}

/*
 * The transport header at @l4 of a datagram that ends at @end (0:
 * unknown); @src, @dst and @alen as make_key().
 */
static enum ct_verdict ports(const struct rte_mbuf *m, struct ct_meta *pm,
			     uint8_t family, uint8_t proto, uint32_t l4,
			     uint32_t end, const uint8_t *src,
			     const uint8_t *dst, size_t alen, uint32_t seed)
{
	uint32_t need = proto == IPPROTO_TCP ? 20 : 8;
	uint8_t buf[20];
	const uint8_t *h;
	uint16_t sport, dport;

	if (end && end < l4 + need)
		return CT_MALFORMED;
	h = hdr(m, l4, need, buf);
	if (!h)
		return CT_TRUNCATED;
	memcpy(&sport, h, 2);
	memcpy(&dport, h + 2, 2);
	if (proto == IPPROTO_TCP) {
		if (h[12] >> 4 < 5)	/* data offset below 20 bytes */
			return CT_MALFORMED;
		pm->tcp_flags = h[13] & (CT_TCP_FIN | CT_TCP_SYN |
					 CT_TCP_RST | CT_TCP_ACK);
	}
	make_key(pm, family, proto, src, sport, dst, dport, alen, seed);
	return CT_OK;
}

static enum ct_verdict ipv4(const struct rte_mbuf *m, uint32_t off,
			    struct ct_meta *pm, uint32_t seed)
{
	uint8_t buf[60], addr[8];
	const uint8_t *ip;
	uint32_t ihl, tot;

	ip = hdr(m, off, 20, buf);
	if (!ip)
		return CT_TRUNCATED;
	ihl = (uint32_t)(ip[0] & 15) * 4;
	tot = be16(ip + 2);
	/*
	 * A total length of 0 is what a capture on the sending host shows
	 * for a segment the NIC will cut (TSO): unknown, not wrong.
	 */
	if (ip[0] >> 4 != 4 || ihl < 20 || (tot && tot < ihl))
		return CT_MALFORMED;
	if (off + ihl > rte_pktmbuf_pkt_len(m))
		return CT_TRUNCATED;
	if (be16(ip + 6) & 0x1fff)
		return CT_FRAGMENT;
	if (ip[9] != IPPROTO_TCP && ip[9] != IPPROTO_UDP)
		return CT_NOT_TCP_UDP;
	/* ip may point into buf, which ports() does not touch: copy anyway. */
	memcpy(addr, ip + 12, 8);
	return ports(m, pm, AF_INET, ip[9], off + ihl, tot ? off + tot : 0,
		     addr, addr + 4, 4, seed);
}

/* The IPv6 extension headers a transport header may follow. */
static bool ip6_ext(unsigned int nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING ||
	       nh == IPPROTO_DSTOPTS || nh == IPPROTO_AH ||
	       nh == IPPROTO_FRAGMENT;
}

static enum ct_verdict ipv6(const struct rte_mbuf *m, uint32_t off,
			    struct ct_meta *pm, uint32_t seed)
{
	uint8_t buf[40], addr[32], ebuf[8];
	const uint8_t *ip, *h;
	uint32_t plen, l4 = off + 40, hlen;
	unsigned int nh, i;

	ip = hdr(m, off, 40, buf);
	if (!ip)
		return CT_TRUNCATED;
	if (ip[0] >> 4 != 6)
		return CT_MALFORMED;
	plen = be16(ip + 4);
	nh = ip[6];
	memcpy(addr, ip + 8, 32);
	for (i = 0; nh != IPPROTO_TCP && nh != IPPROTO_UDP; i++) {
		if (i == IP6_MAX_EXT)
			return CT_MALFORMED;
		if (!ip6_ext(nh))	/* ICMPv6, ESP, no next header, ... */
			return CT_NOT_TCP_UDP;
		h = hdr(m, l4, 8, ebuf);	/* every one has 8 bytes */
		if (!h)
			return CT_TRUNCATED;
		switch (nh) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			hlen = ((uint32_t)h[1] + 1) * 8;
			break;
		case IPPROTO_AH:
			hlen = ((uint32_t)h[1] + 2) * 4;
			break;
		default:	/* IPPROTO_FRAGMENT */
			if (be16(h + 2) & 0xfff8)
				return CT_FRAGMENT;
			hlen = 8;
			break;
		}
		nh = h[0];
		l4 += hlen;
	}
	/* A payload length of 0 is a jumbogram's: the end is unknown. */
	return ports(m, pm, AF_INET6, (uint8_t)nh, l4,
		     plen ? off + 40 + plen : 0, addr, addr + 16, 16, seed);
}

enum ct_verdict ct_parse(const struct rte_mbuf *m, struct ct_meta *pm,
			 uint32_t seed)
{
	unsigned int type, tags = 0;
	uint8_t buf[14];
	const uint8_t *h;
	uint32_t off = 14;
	enum ct_verdict v;

	pm->tcp_flags = 0;
	h = hdr(m, 0, 14, buf);
	if (!h) {
		v = CT_TRUNCATED;
		goto out;
	}
	type = be16(h + 12);
	while (type == ETH_VLAN || type == ETH_QINQ) {
		if (++tags > 2) {
			v = CT_MALFORMED;
			goto out;
		}
		h = hdr(m, off, 4, buf);
		if (!h) {
			v = CT_TRUNCATED;
			goto out;
		}
		type = be16(h + 2);
		off += 4;
	}
	if (type == ETH_IPV4)
		v = ipv4(m, off, pm, seed);
	else if (type == ETH_IPV6)
		v = ipv6(m, off, pm, seed);
	else
		v = CT_NOT_IP;
out:
	pm->verdict = (uint8_t)v;
	return v;
}

enum ct_verdict ct_prepare(const struct ct_config *cfg, struct rte_mbuf *m)
{
	struct ct_meta *pm = ct_meta(m);

	/* net_pcap's stamps are microseconds (dpdk-conntrack.c). */
	pm->ts_ns = 0;
	if (cfg->ts_offset >= 0 && (m->ol_flags & cfg->ts_flag))
		pm->ts_ns = 1000 * *RTE_MBUF_DYNFIELD(m, cfg->ts_offset,
						      rte_mbuf_timestamp_t *);
	return ct_parse(m, pm, cfg->seed);
}
