/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pcap: a real capture replayed (--pcap FILE, read by capture.c before the
 * first size runs, so that a bad file fails at once). Every implementation
 * gets a table of the capture's flows (expected = flows); then every
 * packet's lookup in capture order, one at a time, and in batches of 16
 * consecutive packets: what a receive queue hands the stack in one burst.
 * Every packet's flow is in the table, so every lookup must hit.
 *
 * Rows at n = flows: pcap and pcap-b16 (ns per packet), the floor at that
 * size, and the capture's counts (impl "capture"): pcap-flows,
 * pcap-packets (looked up), pcap-skipped and one row per reason,
 * pcap-endpoints (distinct local address and port: how the --local and
 * SYN rules oriented the flows), pcap-from-local (packets that left the
 * local side).
 *
 * --pairs: the capture again, through a NAT that gives each flow's local
 * endpoint an outside address and port of its own (198.18.0.0/15, RFC
 * 2544's benchmarking range, or 2001:2::/48, RFC 5180's; ports 1024 to
 * 65535). Each flow is one connection of two halves in adjacent object
 * slots: its tuple as the local side sees it, and the outside tuple its
 * replies arrive on (conntab: conntab_insert_pair(); the peers: two
 * entries linked, bench/pair.h). A packet that left the local side is
 * looked up by the first, one from the other side by the second, and the
 * user's word of the half found is read, as for every lookup (the NAT's
 * rewrite, the other half, is not: it is one more line, the same for
 * every implementation). Rows:
 * pcap-nat-insert (ns per flow, the table built), pcap-nat and
 * pcap-nat-b16 (ns per packet). A capture whose local side is already in
 * those ranges may collide with them: the inserts then fail, loudly.
 */
#include "config.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "capture.h"
#include "impl.h"
#include "objs.h"
#include "pair.h"

#define NAT_PORTS	64512u	/* 1024 to 65535 on each outside address */

static struct b_capture cap;

int b_pcap_load(void)
{
	return b_capture_read(&cap, b_opts.pcap, &b_opts.local);
}

static void count_row(const char *wl, double v, const char *unit)
{
	struct bench_result r = {
		.impl = "capture", .n = cap.nflows, .threads = 1,
		.value = v, .min = v, .max = v, .unit = unit,
		.ratio_kind = R_NONE,
	};

	snprintf(r.workload, sizeof(r.workload), "%s", wl);
	b_record(&r);
}

/* The outside tuple the NAT gives flow @i of key @a. */
static void nat_key(struct conntab_key *b, const struct conntab_key *a,
		    size_t i)
{
	uint32_t host = (uint32_t)(i / NAT_PORTS);

	*b = *a;
	memset(&b->laddr, 0, sizeof(b->laddr));
	if (a->family == AF_INET) {
		b->laddr.v4.s_addr = htonl(0xc6120000u + host);
	} else {
		b->laddr.bytes[0] = 0x20;
		b->laddr.bytes[1] = 0x01;
		b->laddr.bytes[3] = 0x02;
		host = htonl(host);
		memcpy(&b->laddr.bytes[12], &host, sizeof(host));
	}
	b->lport = htons((uint16_t)(1024 + i % NAT_PORTS));
}

/* Half @h of flow @i's connection: two adjacent slots, placed at random. */
static inline void *nat_half(const struct bench_objs *o,
			     const struct bench_keys *k, size_t i,
			     unsigned int h)
{
	return o->base + ((size_t)k->slot[i] * 2 + h) * B_OBJ;
}

/*
 * The NAT replay (--pairs): flows of @k (as the local side sees them)
 * and their outside tuples @out, packets of @stream. Tables are built
 * once per implementation, timed (pcap-nat-insert); then the replay.
 */
static void run_nat(const struct bench_impl **im, size_t ni,
		    const struct bench_keys *k, const struct conntab_key *out)
{
	struct bench_table tb[B_MAX_IMPLS];
	struct conntab_key *stream;
	size_t i, j, n = k->n, fail;
	double v[B_MAX_IMPLS];
	uint64_t t0;
	void *a;

	stream = b_alloc(cap.npkts * sizeof(*stream));
	for (i = 0; i < cap.npkts; i++)
		stream[i] = cap.pkt_out[i] ? k->keys[cap.pkt_flow[i]]
					   : out[cap.pkt_flow[i]];
	for (j = 0; j < ni; j++) {
		b_progress("pcap-nat %s: build", im[j]->name);
		b_objs_init(&tb[j].o, im[j], 2 * n);
		tb[j].im = im[j];
		tb[j].t = NULL;
		v[j] = NAN;
		if (!b_budget_enter(B_W(W_PCAP), im[j], n,
				    "building its NAT table"))
			continue;
		tb[j].t = b_create(im[j], 2 * n, k->secret);
		fail = 0;
		t0 = b_time_ns();
		for (i = 0; i < n && !(i % 64 == 0 && b_over()); i++)
			fail += b_pair_insert(im[j], tb[j].t,
					      nat_half(&tb[j].o, k, i, 0),
					      &k->keys[i],
					      nat_half(&tb[j].o, k, i, 1),
					      &out[i]) != 0;
		v[j] = (double)(b_time_ns() - t0) / (double)n;
		/* Untimed: both tuples find their half, which knows the other. */
		rcu_read_lock();
		for (i = 0; !fail && i < n && !b_over(); i++) {
			a = im[j]->lookup(tb[j].t, &out[i]);
			fail += a != nat_half(&tb[j].o, k, i, 1) ||
				b_pair_peer(im[j], a) !=
				nat_half(&tb[j].o, k, i, 0) ||
				im[j]->lookup(tb[j].t, &k->keys[i]) !=
				nat_half(&tb[j].o, k, i, 0);
		}
		rcu_read_unlock();
		if (fail)
			b_failed("%s pcap-nat: %zu flows not in as a pair",
				 im[j]->name, fail);
		if (!b_budget_leave())
			v[j] = NAN;
	}
	/* Built once: one figure, no median. */
	for (j = 0; j < ni; j++)
		b_once_row(im[j], "pcap-nat-insert", n, v[j], "ns/flow");
	b_stream_measure(tb, ni, W_PCAP, "pcap-nat", stream, cap.npkts, n);
	for (j = 0; j < ni; j++)
		b_table_drop(&tb[j], B_W(W_PCAP), n);
	free(stream);
}

void b_run_pcap(const struct bench_impl **im, size_t ni)
{
	struct bench_table tb[B_MAX_IMPLS];
	struct conntab_key *stream;
	struct bench_keys k;
	char name[24];
	size_t i, n = cap.nflows, from_local = 0;
	int v;

	if (!cap.nflows)
		return;
	count_row("pcap-flows", (double)n, "flows");
	count_row("pcap-packets", (double)cap.npkts, "packets");
	count_row("pcap-skipped", (double)cap.nskipped, "packets");
	for (v = PKT_OK + 1; v < PKT_VERDICTS; v++) {
		snprintf(name, sizeof(name), "pcap-%s",
			 b_pkt_verdict_names[v]);
		count_row(name, (double)cap.skipped[v], "packets");
	}
	count_row("pcap-endpoints", (double)cap.endpoints, "endpoints");
	for (i = 0; i < cap.npkts; i++)
		from_local += cap.pkt_out[i];
	count_row("pcap-from-local", (double)from_local, "packets");
	b_floor(n);
	b_keys_adopt(&k, cap.flows, n, b_opts.seed);
	cap.flows = NULL;	/* k owns them now */
	stream = b_alloc(cap.npkts * sizeof(*stream));
	for (i = 0; i < cap.npkts; i++)
		stream[i] = k.keys[cap.pkt_flow[i]];
	for (i = 0; i < ni; i++) {
		b_progress("pcap %s: build", im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		if (!b_budget_enter(B_W(W_PCAP), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], &k, &tb[i].o, n);
		b_budget_leave();
	}
	b_stream_measure(tb, ni, W_PCAP, "pcap", stream, cap.npkts, n);
	for (i = 0; i < ni; i++)
		b_table_drop(&tb[i], B_W(W_PCAP), n);
	free(stream);
	if (b_opts.pairs) {
		struct conntab_key *out = b_alloc(n * sizeof(*out));

		for (i = 0; i < n; i++)
			nat_key(&out[i], &k.keys[i], i);
		run_nat(im, ni, &k, out);
		free(out);
	}
	b_keys_free(&k);
	b_capture_free(&cap);
}
