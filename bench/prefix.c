/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prefix: conntab_walk_prefix() over the connections of one local
 * endpoint, 10.0.0.1:443 (2001:db8::1 port 443 with IPv6 keys), which
 * every 64th of the N keys is turned into: the trie descends to the
 * endpoint's subtree, a hash backend walks the whole table and filters.
 * Rows: prefix (microseconds per walk) and prefix-match (ns per
 * connection found). conntab's backends only (the peers have no such
 * walk), random keys only (a made key set could collide once changed).
 * Every walk must find exactly the endpoint's connections.
 */
#include "config.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "impl.h"
#include "objs.h"

#define B_PREFIX_SHARE	64

static int count_fn(struct conntab_node *n, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

/* The run's keys with every 64th on the endpoint; how many are on it. */
static struct conntab_key *endpoint_keys(const struct bench_keys *k,
					 struct conntab_key *ep, size_t *on)
{
	struct conntab_key *keys = b_alloc(k->n * sizeof(*keys));
	struct in6_addr a6;
	size_t i;

	inet_pton(AF_INET6, "2001:db8::1", &a6);
	*on = 0;
	for (i = 0; i < k->n; i++) {
		keys[i] = k->keys[i];
		if (!(i % B_PREFIX_SHARE)) {
			if (keys[i].family == AF_INET)
				keys[i].laddr.v4.s_addr = htonl(0x0a000001);
			else
				keys[i].laddr.v6 = a6;
			keys[i].lport = htons(443);
			*ep = keys[i];
		}
	}
	/* Counted, not assumed: a key set may hold the endpoint already. */
	for (i = 0; i < k->n; i++)
		*on += keys[i].family == ep->family &&
		       keys[i].lport == ep->lport &&
		       !memcmp(&keys[i].laddr, &ep->laddr, sizeof(ep->laddr));
	return keys;
}

void b_run_prefix(const struct bench_impl **all, size_t nall,
		  const struct bench_keys *k)
{
	static double us[B_MAX_IMPLS][B_MAX_REPS], per[B_MAX_IMPLS][B_MAX_REPS];
	const struct bench_impl *im[B_MAX_IMPLS];
	struct bench_table tb[B_MAX_IMPLS];
	struct bench_keys pk = *k;
	struct conntab_key ep;
	size_t ni, i, on, seen;
	unsigned int rep, bits;
	uint64_t t0;

	if (!b_want(W_PREFIX) || b_opts.keyset != KS_RANDOM)
		return;
	ni = b_pick(all, nall, BI_CONNTAB, im);
	if (!ni)
		return;
	pk.keys = endpoint_keys(k, &ep, &on);
	/* zone, proto and family (32 bits), local address and port. */
	bits = 32 + (ep.family == AF_INET ? 32 : 128) + 16;
	for (i = 0; i < ni; i++) {
		b_progress("n=%zu %s: prefix build", k->n, im[i]->name);
		b_objs_init(&tb[i].o, im[i], k->n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		if (!b_budget_enter(B_W(W_PREFIX), im[i], k->n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], &pk, &tb[i].o, k->n);
		b_budget_leave();
	}
	for (rep = 0; rep < b_opts.reps; rep++) {
		b_progress("n=%zu prefix %u/%u", k->n, rep + 1, b_opts.reps);
		for (i = 0; i < ni; i++) {
			us[i][rep] = per[i][rep] = NAN;
			/* A walk is not cut short: the budget ends the next. */
			if (!b_budget_enter(B_W(W_PREFIX), im[i], k->n,
					    "prefix"))
				continue;
			seen = 0;
			t0 = b_time_ns();
			rcu_read_lock();
			conntab_walk_prefix(tb[i].t, &ep, bits, count_fn,
					    &seen);
			rcu_read_unlock();
			t0 = b_time_ns() - t0;
			b_check_found(im[i], "prefix", seen, on);
			us[i][rep] = (double)t0 / 1e3;
			per[i][rep] = (double)t0 / (double)(on ? on : 1);
			if (!b_budget_leave())
				us[i][rep] = per[i][rep] = NAN;
		}
	}
	for (i = 0; i < ni; i++) {
		b_result(im[i], "prefix", k->n, 1, us[i], "us", R_NONE, false);
		b_result(im[i], "prefix-match", k->n, 1, per[i], "ns/op",
			 R_NONE, false);
		b_table_drop(&tb[i], B_W(W_PREFIX), k->n);
	}
	free(pk.keys);
}
