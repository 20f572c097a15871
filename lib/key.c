/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Key helpers: construction, validation, formatting.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conntab-int.h"
#include "key.h"

CONNTAB_API void conntab_key_v4(struct conntab_key *k, uint8_t proto,
				uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport)
{
	if (!k)
		return;
	memset(k, 0, sizeof(*k));
	k->proto = proto;
	k->family = AF_INET;
	k->lport = lport;
	k->rport = rport;
	k->laddr.v4.s_addr = laddr;
	k->raddr.v4.s_addr = raddr;
}

CONNTAB_API void conntab_key_v6(struct conntab_key *k, uint8_t proto,
				const struct in6_addr *laddr, uint16_t lport,
				const struct in6_addr *raddr, uint16_t rport)
{
	if (!k)
		return;
	memset(k, 0, sizeof(*k));
	k->proto = proto;
	k->family = AF_INET6;
	k->lport = lport;
	k->rport = rport;
	if (laddr)
		k->laddr.v6 = *laddr;
	if (raddr)
		k->raddr.v6 = *raddr;
}

CONNTAB_API int conntab_key_from_sockaddr(struct conntab_key *k, uint8_t proto,
					  const struct sockaddr *local,
					  const struct sockaddr *remote)
{
	if (!k || !local || !remote || local->sa_family != remote->sa_family)
		return -EINVAL;

	if (local->sa_family == AF_INET) {
		struct sockaddr_in l, r;

		/* Copies: the caller's sockaddr may be a misaligned buffer. */
		memcpy(&l, local, sizeof(l));
		memcpy(&r, remote, sizeof(r));
		conntab_key_v4(k, proto, l.sin_addr.s_addr, l.sin_port,
			       r.sin_addr.s_addr, r.sin_port);
		return 0;
	}
	if (local->sa_family == AF_INET6) {
		struct sockaddr_in6 l, r;

		memcpy(&l, local, sizeof(l));
		memcpy(&r, remote, sizeof(r));
		conntab_key_v6(k, proto, &l.sin6_addr, l.sin6_port,
			       &r.sin6_addr, r.sin6_port);
		return 0;
	}
	return -EINVAL;
}

/* "192.0.2.1:80" or "[2001:db8::1]:443" */
static void ct_fmt_endpoint(char *out, size_t len, int family,
			    const union conntab_addr *a, uint16_t port)
{
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(family, a, ip, sizeof(ip));
	snprintf(out, len, family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip,
		 (unsigned int)ntohs(port));
}

CONNTAB_API int conntab_key_format(const struct conntab_key *k, char *buf,
				   size_t len)
{
	char l[INET6_ADDRSTRLEN + 8], r[INET6_ADDRSTRLEN + 8], proto[16];
	char zone[16] = "";

	if (!k || (!buf && len) ||
	    (k->family != AF_INET && k->family != AF_INET6))
		return -EINVAL;

	switch (k->proto) {
	case IPPROTO_TCP:
		strcpy(proto, "tcp");
		break;
	case IPPROTO_UDP:
		strcpy(proto, "udp");
		break;
	case IPPROTO_SCTP:
		strcpy(proto, "sctp");
		break;
	default:
		/* No getprotobynumber(): it is not thread-safe. */
		snprintf(proto, sizeof(proto), "proto%u", (unsigned int)k->proto);
		break;
	}
	ct_fmt_endpoint(l, sizeof(l), k->family, &k->laddr, k->lport);
	ct_fmt_endpoint(r, sizeof(r), k->family, &k->raddr, k->rport);
	if (k->zone)
		snprintf(zone, sizeof(zone), " zone %u", (unsigned int)k->zone);
	return snprintf(buf, len, "%s %s <- %s%s", proto, l, r, zone);
}
