/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A captured frame's TCP or UDP 5-tuple: link header (Ethernet with up to
 * two VLAN tags, Linux cooked v1 and v2, BSD loopback, raw IP), then IPv4
 * or IPv6 with its extension headers, then the ports.
 *
 * Every length is checked against the captured bytes before it is read:
 * a capture is input from anywhere, and a short or lying packet is counted
 * and skipped, never read past. Checksums are not checked (offloads leave
 * them wrong in captures of the sending host, and a table lookup does not
 * depend on them).
 */
#include "config.h"

#include <netinet/in.h>
#include <string.h>

#include <pcap/pcap.h>

#include "capture.h"

const char *const b_pkt_verdict_names[PKT_VERDICTS] = {
	[PKT_OK] = "used",
	[PKT_NOT_IP] = "not-ip",
	[PKT_TRUNCATED] = "truncated",
	[PKT_MALFORMED] = "malformed",
	[PKT_FRAGMENT] = "fragment",
	[PKT_NOT_TCP_UDP] = "not-tcp-udp",
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

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

bool b_pkt_link_ok(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
#endif
	case DLT_NULL:
	case DLT_LOOP:
	case DLT_RAW:
#ifdef DLT_IPV4
	case DLT_IPV4:
	case DLT_IPV6:
#endif
		return true;
	}
	return false;
}

/* BSD loopback: the address family, host order (NULL) or network (LOOP). */
static unsigned int loop_ethertype(uint32_t af)
{
	if (af == 2)
		return ETH_IPV4;
	/* AF_INET6 is 24 (NetBSD, OpenBSD), 28 (FreeBSD), 30 (Darwin). */
	if (af == 24 || af == 28 || af == 30)
		return ETH_IPV6;
	return 0;
}

/*
 * The link header's length at *@off and the network protocol as an
 * ethertype (0: not IP; the version nibble decides for raw IP).
 */
static enum b_pkt_verdict link_header(int dlt, const uint8_t *p, size_t len,
				      size_t *off, unsigned int *type)
{
	unsigned int tags = 0;

	switch (dlt) {
	case DLT_EN10MB:
		if (len < 14)
			return PKT_TRUNCATED;
		*type = be16(p + 12);
		*off = 14;
		while (*type == ETH_VLAN || *type == ETH_QINQ) {
			if (++tags > 2)
				return PKT_MALFORMED;
			if (len < *off + 4)
				return PKT_TRUNCATED;
			*type = be16(p + *off + 2);
			*off += 4;
		}
		return PKT_OK;
	case DLT_LINUX_SLL:
		if (len < 16)
			return PKT_TRUNCATED;
		*type = be16(p + 14);
		*off = 16;
		return PKT_OK;
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
		if (len < 20)
			return PKT_TRUNCATED;
		*type = be16(p);
		*off = 20;
		return PKT_OK;
#endif
	case DLT_NULL:
	case DLT_LOOP:
		if (len < 4)
			return PKT_TRUNCATED;
		/* DLT_NULL's word is in the capturing host's order. */
		*type = loop_ethertype(le32(p));
		if (!*type)
			*type = loop_ethertype(__builtin_bswap32(le32(p)));
		*off = 4;
		return PKT_OK;
	default:		/* raw IP */
		if (len < 1)
			return PKT_TRUNCATED;
		*type = p[0] >> 4 == 4 ? ETH_IPV4 :
			p[0] >> 4 == 6 ? ETH_IPV6 : 0;
		*off = 0;
		return *type ? PKT_OK : PKT_MALFORMED;
	}
}

/*
 * The transport header at @l4 of a packet whose network layer says the
 * datagram ends at @end (0: unknown), @len bytes captured.
 */
static enum b_pkt_verdict ports(const uint8_t *p, size_t len, size_t l4,
				size_t end, struct b_pkt *out)
{
	size_t need = out->proto == IPPROTO_TCP ? 20 : 8;

	if (end && end < l4 + need)
		return PKT_MALFORMED;
	if (len < l4 + need)
		return PKT_TRUNCATED;
	memcpy(&out->sport, p + l4, 2);
	memcpy(&out->dport, p + l4 + 2, 2);
	if (out->proto == IPPROTO_TCP) {
		if (p[l4 + 12] >> 4 < 5)	/* data offset below 20 bytes */
			return PKT_MALFORMED;
		/* SYN without ACK: the first packet of a connection. */
		out->syn = (p[l4 + 13] & 0x12) == 0x02;
	}
	return PKT_OK;
}

static enum b_pkt_verdict ipv4(const uint8_t *p, size_t len, size_t off,
			       struct b_pkt *out)
{
	const uint8_t *ip = p + off;
	size_t ihl, tot;

	if (len < off + 20)
		return PKT_TRUNCATED;
	ihl = (size_t)(ip[0] & 15) * 4;
	tot = be16(ip + 2);
	/*
	 * A total length of 0 is what a capture on the sending host shows
	 * for a segment the NIC will cut (TSO): unknown, not wrong.
	 */
	if (ip[0] >> 4 != 4 || ihl < 20 || (tot && tot < ihl))
		return PKT_MALFORMED;
	if (len < off + ihl)
		return PKT_TRUNCATED;
	if (be16(ip + 6) & 0x1fff)
		return PKT_FRAGMENT;
	if (ip[9] != IPPROTO_TCP && ip[9] != IPPROTO_UDP)
		return PKT_NOT_TCP_UDP;
	out->family = AF_INET;
	out->proto = ip[9];
	memcpy(&out->src, ip + 12, 4);
	memcpy(&out->dst, ip + 16, 4);
	return ports(p, len, off + ihl, tot ? off + tot : 0, out);
}

/* The IPv6 extension headers a transport header may follow. */
static bool ip6_ext(unsigned int nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING ||
	       nh == IPPROTO_DSTOPTS || nh == IPPROTO_AH ||
	       nh == IPPROTO_FRAGMENT;
}

static enum b_pkt_verdict ipv6(const uint8_t *p, size_t len, size_t off,
			       struct b_pkt *out)
{
	const uint8_t *ip = p + off, *h;
	size_t plen, l4 = off + 40, hlen;
	unsigned int nh, i;

	if (len < off + 40)
		return PKT_TRUNCATED;
	if (ip[0] >> 4 != 6)
		return PKT_MALFORMED;
	plen = be16(ip + 4);
	nh = ip[6];
	for (i = 0; nh != IPPROTO_TCP && nh != IPPROTO_UDP; i++) {
		if (i == IP6_MAX_EXT)
			return PKT_MALFORMED;
		if (!ip6_ext(nh))	/* ICMPv6, ESP, no next header, ... */
			return PKT_NOT_TCP_UDP;
		if (len < l4 + 8)	/* every extension header has 8 */
			return PKT_TRUNCATED;
		h = p + l4;
		switch (nh) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			hlen = ((size_t)h[1] + 1) * 8;
			break;
		case IPPROTO_AH:
			hlen = ((size_t)h[1] + 2) * 4;
			break;
		default:	/* IPPROTO_FRAGMENT */
			if (be16(h + 2) & 0xfff8)
				return PKT_FRAGMENT;
			hlen = 8;
			break;
		}
		nh = h[0];
		l4 += hlen;
	}
	out->family = AF_INET6;
	out->proto = (uint8_t)nh;
	memcpy(&out->src, ip + 8, 16);
	memcpy(&out->dst, ip + 24, 16);
	/* A payload length of 0 is a jumbogram's: the end is unknown. */
	return ports(p, len, l4, plen ? off + 40 + plen : 0, out);
}

enum b_pkt_verdict b_pkt_parse(int dlt, const uint8_t *p, size_t len,
			       struct b_pkt *out)
{
	enum b_pkt_verdict v;
	unsigned int type;
	size_t off;

	memset(out, 0, sizeof(*out));
	v = link_header(dlt, p, len, &off, &type);
	if (v != PKT_OK)
		return v;
	if (type == ETH_IPV4)
		return ipv4(p, len, off, out);
	if (type == ETH_IPV6)
		return ipv6(p, len, off, out);
	return PKT_NOT_IP;
}
